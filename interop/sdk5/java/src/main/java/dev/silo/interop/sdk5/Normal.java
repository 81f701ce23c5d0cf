package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * 20 normal messages (tag TagA, odd ones TagB; keys k-i; property idx=i; body normal-i-S), received
 * by a SimpleConsumer (filter *, invisible 20 s): body, tag, keys, property, message id = the send
 * receipt's, delivery attempt 1; each acked. Then one more long-polling receive must return nothing.
 */
final class Normal implements Scenario {

    private static final int COUNT = 20;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("normal");
        // The consumer first, as an application would: the group is subscribed before the sends.
        SimpleConsumer consumer = ctx.simpleConsumer(ctx.name("normal"), topic, Duration.ofSeconds(5));
        Producer producer = ctx.producer(null, topic);
        Map<String, Integer> index = new ConcurrentHashMap<>();
        String[] ids = new String[COUNT];
        for (int i = 0; i < COUNT; i++) {
            String body = "normal-" + i + "-" + ctx.suffix;
            Message m = ctx.provider.newMessageBuilder()
                .setTopic(topic)
                .setTag(i % 2 == 0 ? "TagA" : "TagB")
                .setKeys("k-" + i)
                .addProperty("idx", Integer.toString(i))
                .setBody(Ctx.bytes(body))
                .build();
            ids[i] = producer.send(m).getMessageId().toString();
            index.put(body, i);
        }

        AtomicInteger[] seen = new AtomicInteger[COUNT];
        for (int i = 0; i < COUNT; i++) {
            seen[i] = new AtomicInteger();
        }
        AtomicInteger distinct = new AtomicInteger();
        List<String> strays = new ArrayList<>();
        boolean all = ctx.receiveUntil(consumer, 16, Duration.ofSeconds(20), () -> distinct.get() >= COUNT,
            ctx.timeoutMillis, v -> {
                String body = Ctx.body(v);
                Integer i = index.get(body);
                if (i == null) {
                    strays.add(body);
                    consumer.ack(v);
                    return;
                }
                if (seen[i].incrementAndGet() == 1) {
                    distinct.incrementAndGet();
                } else {
                    ctx.fail("message " + i + " received again (delivery attempt " + v.getDeliveryAttempt() + ")");
                }
                String what = "message " + i;
                ctx.check(what + " topic", topic, v.getTopic());
                ctx.check(what + " tag", i % 2 == 0 ? "TagA" : "TagB", v.getTag().orElse(null));
                ctx.check(what + " keys", List.of("k-" + i), new ArrayList<>(v.getKeys()));
                ctx.check(what + " property idx", Integer.toString(i), v.getProperties().get("idx"));
                ctx.check(what + " message id", ids[i], v.getMessageId().toString());
                ctx.check(what + " delivery attempt", 1, v.getDeliveryAttempt());
                consumer.ack(v);
            });
        if (!all) {
            ctx.fail("received " + distinct.get() + " of " + COUNT + " within " + ctx.timeoutMillis / 1000 + " s");
        }

        // Everything is acked: a further long poll must come back empty (after about the await time).
        long t0 = System.nanoTime();
        int extra = consumer.receive(16, Duration.ofSeconds(20)).size();
        long emptyPollMillis = (System.nanoTime() - t0) / 1_000_000;
        ctx.check("messages returned by a receive after all were acked", 0, extra);
        if (!strays.isEmpty()) {
            ctx.fail("messages that were not sent by this scenario: " + strays);
        }
        return "sent=" + COUNT + " received=" + distinct.get() + " acked, emptyReceive=" + emptyPollMillis + "ms"
            + ctx.receiveErrorNote();
    }
}
