package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * 5 messages to the DELAY topic, each with delivery timestamp now + 3 s: each must be received no
 * earlier than its delivery time minus 1 s (the broker's timer precision) and within 15 s of its send,
 * with the delivery timestamp it was sent with.
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

        Set<String> seen = new HashSet<>();
        long[] lateness = {Long.MAX_VALUE, Long.MIN_VALUE};
        boolean all = ctx.receiveUntil(consumer, 16, Duration.ofSeconds(20), () -> seen.size() >= COUNT,
            Math.max(ctx.timeoutMillis, WITHIN_MILLIS + 5_000), v -> {
                long now = System.currentTimeMillis();
                String body = Ctx.body(v);
                consumer.ack(v);
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
        return "sent=" + COUNT + " delay=" + DELAY_MILLIS + "ms received=" + seen.size() + " lateness="
            + (seen.isEmpty() ? "-" : lateness[0] + ".." + lateness[1] + "ms") + ctx.receiveErrorNote();
    }
}
