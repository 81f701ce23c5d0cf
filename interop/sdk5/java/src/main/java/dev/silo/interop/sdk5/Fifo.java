package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * 3 message groups x 10 messages to the FIFO topic, sent interleaved; a SimpleConsumer of the FIFO
 * group (consumeMessageOrderly) acks each message as it comes. Per message group the order must be
 * the send order, and all 30 must arrive exactly once.
 */
final class Fifo implements Scenario {

    private static final int GROUPS = 3;
    private static final int PER_GROUP = 10;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("fifo");
        SimpleConsumer consumer = ctx.simpleConsumer(ctx.name("fifo"), topic, Duration.ofSeconds(5));
        Producer producer = ctx.producer(null, topic);
        Map<String, String> ids = new HashMap<>();
        for (int i = 0; i < PER_GROUP; i++) {
            for (int g = 0; g < GROUPS; g++) {
                String body = "fifo-g" + g + "-" + i + "-" + ctx.suffix;
                Message m = ctx.provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag("fifo")
                    .setKeys("g" + g + "-" + i)
                    .setMessageGroup(group(ctx, g))
                    .setBody(Ctx.bytes(body))
                    .build();
                ids.put(body, producer.send(m).getMessageId().toString());
            }
        }

        Map<String, List<Integer>> order = new TreeMap<>();
        Set<String> seen = new HashSet<>();
        List<String> unexpected = new ArrayList<>();
        int[] batches = {0};
        boolean all = ctx.receiveUntil(consumer, 32, Duration.ofSeconds(20), () -> seen.size() >= GROUPS * PER_GROUP,
            ctx.timeoutMillis, v -> {
                String body = Ctx.body(v);
                String[] parts = body.split("-");
                if (!ids.containsKey(body) || parts.length < 3) {
                    unexpected.add(body);
                    consumer.ack(v);
                    return;
                }
                if (!seen.add(body)) {
                    ctx.fail(body + " received again (delivery attempt " + v.getDeliveryAttempt() + ")");
                }
                int g = Integer.parseInt(parts[1].substring(1));
                ctx.check(body + " message group", group(ctx, g), v.getMessageGroup().orElse(null));
                ctx.check(body + " message id", ids.get(body), v.getMessageId().toString());
                ctx.check(body + " delivery attempt", 1, v.getDeliveryAttempt());
                order.computeIfAbsent(parts[1], k -> new ArrayList<>()).add(Integer.parseInt(parts[2]));
                consumer.ack(v);
            });
        if (!all) {
            ctx.fail("received " + seen.size() + " of " + GROUPS * PER_GROUP + " within " + ctx.timeoutMillis / 1000
                + " s");
        }
        List<Integer> want = new ArrayList<>();
        for (int i = 0; i < PER_GROUP; i++) {
            want.add(i);
        }
        for (int g = 0; g < GROUPS; g++) {
            ctx.check("order within message group g" + g, want, order.getOrDefault("g" + g, List.of()));
        }
        if (!unexpected.isEmpty()) {
            ctx.fail("messages that were not sent by this scenario: " + unexpected);
        }
        return "sent=" + GROUPS + "x" + PER_GROUP + " received=" + seen.size() + " in send order per group"
            + ctx.receiveErrorNote();
    }

    private static String group(Ctx ctx, int g) {
        return "mg" + g + "-" + ctx.suffix;
    }
}
