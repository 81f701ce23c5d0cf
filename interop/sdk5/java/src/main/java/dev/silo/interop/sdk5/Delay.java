package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * 5 messages to the DELAY topic, each with delivery timestamp now + 3 s: each must be received no
 * earlier than its delivery time minus 1 s (the broker's timer precision) and within 15 s of its send,
 * with the delivery timestamp it was sent with. A sixth, sent the same way, is recalled with the
 * handle its send receipt carries (the recall answers with its message id) and must never arrive,
 * not even a receive round after the others; a recall with a handle that is not one fails.
 */
final class Delay implements Scenario {

    private static final int COUNT = 5;
    private static final long DELAY_MILLIS = 3_000;
    private static final long EARLY_TOLERANCE_MILLIS = 1_000;
    private static final long WITHIN_MILLIS = 15_000;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("delay");
        SimpleConsumer consumer = ctx.simpleConsumer(ctx.name("delay"), topic, Duration.ofSeconds(5));
        Producer producer = ctx.producer(null, topic);
        Map<String, Long> due = new HashMap<>();
        Map<String, Long> sentAt = new HashMap<>();
        for (int i = 0; i < COUNT; i++) {
            String body = "delay-" + i + "-" + ctx.suffix;
            long now = System.currentTimeMillis();
            Message m = ctx.provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("delay")
                .setKeys("d-" + i)
                .setDeliveryTimestamp(now + DELAY_MILLIS)
                .setBody(Ctx.bytes(body))
                .build();
            producer.send(m);
            due.put(body, now + DELAY_MILLIS);
            sentAt.put(body, now);
        }

        String recalledBody = "delay-recalled-" + ctx.suffix;
        long recallSentAt = System.currentTimeMillis();
        SendReceipt toRecall = producer.send(ctx.provider.newMessageBuilder()
            .setTopic(topic)
            .setTag("delay")
            .setKeys("d-recalled")
            .setDeliveryTimestamp(recallSentAt + DELAY_MILLIS)
            .setBody(Ctx.bytes(recalledBody))
            .build());
        String handle = toRecall.getRecallHandle();
        if (handle == null || handle.isEmpty()) {
            ctx.fail("a delay message's send receipt has no recall handle");
        } else {
            RecallReceipt recalled = producer.recallMessage(topic, handle);
            ctx.check("recalled message id", toRecall.getMessageId().toString(), recalled.getMessageId().toString());
        }
        String badHandle = "not a recall handle";
        try {
            producer.recallMessage(topic, Base64.getUrlEncoder().encodeToString(Ctx.bytes(badHandle)));
            ctx.fail("a recall with the handle \"" + badHandle + "\" succeeded");
        } catch (ClientException e) {
            if (!String.valueOf(e.getMessage()).contains("recall handle is invalid")) {
                ctx.fail("a recall with a bad handle failed with " + e + ", not \"recall handle is invalid\"");
            }
        }

        Set<String> seen = new HashSet<>();
        long[] lateness = {Long.MAX_VALUE, Long.MIN_VALUE};
        boolean all = ctx.receiveUntil(consumer, 16, Duration.ofSeconds(20), () -> seen.size() >= COUNT,
            Math.max(ctx.timeoutMillis, WITHIN_MILLIS + 5_000), v -> {
                long now = System.currentTimeMillis();
                String body = Ctx.body(v);
                consumer.ack(v);
                if (body.equals(recalledBody)) {
                    ctx.fail("the recalled message was delivered");
                    return;
                }
                Long d = due.get(body);
                if (d == null) {
                    ctx.fail("message not sent by this scenario: " + body);
                    return;
                }
                if (!seen.add(body)) {
                    ctx.fail(body + " received again");
                    return;
                }
                long late = now - d;
                lateness[0] = Math.min(lateness[0], late);
                lateness[1] = Math.max(lateness[1], late);
                if (late < -EARLY_TOLERANCE_MILLIS) {
                    ctx.fail(body + " received " + -late + " ms before its delivery time");
                }
                if (now - sentAt.get(body) > WITHIN_MILLIS) {
                    ctx.fail(body + " received " + (now - sentAt.get(body)) + " ms after its send (bound "
                        + WITHIN_MILLIS + " ms)");
                }
                ctx.check(body + " delivery timestamp", d, v.getDeliveryTimestamp().orElse(null));
                ctx.check(body + " delivery attempt", 1, v.getDeliveryAttempt());
            });
        if (!all) {
            ctx.fail("received " + seen.size() + " of " + COUNT);
        }
        // One more receive round (the consumer's 5 s long poll), well past the recalled message's
        // time: it must not come.
        try {
            consumer.receive(16, Duration.ofSeconds(20)).forEach(v -> {
                String body = Ctx.body(v);
                ctx.fail(body.equals(recalledBody) ? "the recalled message was delivered" : body + " received again");
            });
        } catch (ClientException e) {
            // Nothing to receive: what the round is for.
        }
        return "sent=" + (COUNT + 1) + " recalled=1 delay=" + DELAY_MILLIS + "ms received=" + seen.size() + " lateness="
            + (seen.isEmpty() ? "-" : lateness[0] + ".." + lateness[1] + "ms") + ctx.receiveErrorNote();
    }
}
