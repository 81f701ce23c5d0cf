package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * A transaction producer with a checker. A: the local transaction says COMMIT (committed at once).
 * B: ROLLBACK. C: UNKNOWN (left open); the broker's check-back reaches the checker through the
 * proxy, which answers COMMIT. A consumer must get A and C exactly once and never B (it keeps
 * receiving a few seconds after C).
 */
final class Transaction implements Scenario {

    /** How long to keep receiving after C arrived, for a late B or a second A/C. */
    private static final long AFTER_C_MILLIS = 3_000;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("txn");
        SimpleConsumer consumer = ctx.simpleConsumer(ctx.name("transaction"), topic, Duration.ofSeconds(3));
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        Map<String, Long> checkedAt = new ConcurrentHashMap<>();
        String a = "txn-A-" + ctx.suffix;
        String b = "txn-B-" + ctx.suffix;
        String c = "txn-C-" + ctx.suffix;
        Producer producer = ctx.producer(builder -> builder.setTransactionChecker(view -> {
            String body = Ctx.body(view);
            checks.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
            checkedAt.putIfAbsent(body, System.currentTimeMillis());
            // What the local transaction would say now: only B was rolled back.
            return body.equals(b) ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT;
        }), topic);

        Map<String, String> ids = new ConcurrentHashMap<>();
        Map<String, TransactionResolution> local = Map.of(a, TransactionResolution.COMMIT, b,
            TransactionResolution.ROLLBACK, c, TransactionResolution.UNKNOWN);
        long cSentAt = 0;
        for (String body : new String[] {a, b, c}) {
            org.apache.rocketmq.client.apis.producer.Transaction tx = producer.beginTransaction();
            Message m = ctx.provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("txn")
                .setKeys(body)
                .setBody(Ctx.bytes(body))
                .build();
            SendReceipt r = producer.send(m, tx);
            ids.put(body, r.getMessageId().toString());
            switch (local.get(body)) {
                case COMMIT:
                    tx.commit();
                    break;
                case ROLLBACK:
                    tx.rollback();
                    break;
                default:
                    cSentAt = System.currentTimeMillis();
                    break;
            }
        }

        Map<String, AtomicInteger> got = new ConcurrentHashMap<>();
        long[] cArrived = {0};
        boolean both = ctx.receiveUntil(consumer, 16, Duration.ofSeconds(20),
            () -> got.containsKey(a) && got.containsKey(c), ctx.timeoutMillis, v -> {
                String body = Ctx.body(v);
                got.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
                if (body.equals(c) && cArrived[0] == 0) {
                    cArrived[0] = System.currentTimeMillis();
                }
                if (ids.containsKey(body)) {
                    ctx.check(body + " message id", ids.get(body), v.getMessageId().toString());
                }
                consumer.ack(v);
            });
        if (!both) {
            ctx.fail("within " + ctx.timeoutMillis / 1000 + " s: A received " + count(got, a) + " time(s), C "
                + count(got, c) + " (checker calls for C: " + count(checks, c) + ")");
        }
        // A late B (or a second A or C) would come now.
        ctx.receiveUntil(consumer, 16, Duration.ofSeconds(20), () -> false, AFTER_C_MILLIS, v -> {
            got.computeIfAbsent(Ctx.body(v), k -> new AtomicInteger()).incrementAndGet();
            consumer.ack(v);
        });
        ctx.check("A (committed) deliveries", 1, count(got, a));
        ctx.check("B (rolled back) deliveries", 0, count(got, b));
        ctx.check("C (checked, then committed) deliveries", 1, count(got, c));
        if (count(checks, c) < 1) {
            ctx.fail("the checker was never asked about C");
        }
        for (String body : got.keySet()) {
            if (!local.containsKey(body)) {
                ctx.fail("message not sent by this scenario: " + body);
            }
        }
        long checkDelay = checkedAt.containsKey(c) ? checkedAt.get(c) - cSentAt : -1;
        long cDelay = cArrived[0] == 0 ? -1 : cArrived[0] - cSentAt;
        return "A=" + count(got, a) + " B=" + count(got, b) + " C=" + count(got, c) + " checks(C)=" + count(checks, c)
            + " checks(A,B)=" + count(checks, a) + "," + count(checks, b) + " check-back after " + checkDelay
            + "ms, C delivered after " + cDelay + "ms" + ctx.receiveErrorNote();
    }

    private static int count(Map<String, AtomicInteger> m, String k) {
        AtomicInteger n = m.get(k);
        return n == null ? 0 : n.get();
    }
}
