package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * A PushConsumer on the push group (retryMaxTimes 2, so at most 3 deliveries): 10 messages; the
 * listener succeeds except on message 3 for its attempts 1 and 2, and on message 7 always. Every
 * message but 7 must be consumed successfully exactly once, 3 with delivery attempts 1, 2, 3; 7
 * must be delivered exactly 3 times (attempts 1, 2, 3) and then be readable from %DLQ%group with a
 * SimpleConsumer. The times between attempts (the retry back-off) are reported.
 */
final class Push implements Scenario {

    private static final int COUNT = 10;
    private static final int FAIL_TWICE = 3;
    private static final int FAIL_ALWAYS = 7;
    private static final int MAX_ATTEMPTS = 3;
    private static final long STARTED = System.nanoTime();
    /** The default group retry policy's third back-off (1 s, 5 s, 10 s, ...). */
    private static final long THIRD_BACKOFF_MILLIS = 10_000;

    /** One listener call. */
    private static final class Delivery {
        final int attempt;
        final long nanos;
        final boolean success;
        final String messageId;

        Delivery(int attempt, long nanos, boolean success, String messageId) {
            this.attempt = attempt;
            this.nanos = nanos;
            this.success = success;
            this.messageId = messageId;
        }
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("push");
        String group = ctx.name("push");
        Map<Integer, List<Delivery>> deliveries = new ConcurrentHashMap<>();
        List<String> strays = new CopyOnWriteArrayList<>();
        String prefix = "push-";
        String end = "-" + ctx.suffix;
        ctx.pushConsumer(group, topic, 4, v -> {
            String body = Ctx.body(v);
            int i;
            try {
                i = body.startsWith(prefix) && body.endsWith(end)
                    ? Integer.parseInt(body.substring(prefix.length(), body.length() - end.length())) : -1;
            } catch (NumberFormatException e) {
                i = -1;
            }
            if (i < 0 || i >= COUNT) {
                strays.add(body);
                return ConsumeResult.SUCCESS;
            }
            int attempt = v.getDeliveryAttempt();
            boolean ok = i != FAIL_ALWAYS && !(i == FAIL_TWICE && attempt < 3);
            deliveries.computeIfAbsent(i, k -> new CopyOnWriteArrayList<>())
                .add(new Delivery(attempt, System.nanoTime(), ok, v.getMessageId().toString()));
            return ok ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE;
        });

        Producer producer = ctx.producer(null, topic);
        String[] ids = new String[COUNT];
        for (int i = 0; i < COUNT; i++) {
            ids[i] = producer.send(ctx.provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("push")
                .setKeys("p-" + i)
                .addProperty("idx", Integer.toString(i))
                .setBody(Ctx.bytes(prefix + i + end))
                .build()).getMessageId().toString();
        }

        boolean delivered = ctx.await("every message but " + FAIL_ALWAYS + " consumed, and " + FAIL_ALWAYS
            + " delivered " + MAX_ATTEMPTS + " times", () -> {
                for (int i = 0; i < COUNT; i++) {
                    List<Delivery> d = deliveries.getOrDefault(i, List.of());
                    if (i == FAIL_ALWAYS ? d.size() < MAX_ATTEMPTS : d.stream().noneMatch(x -> x.success)) {
                        return false;
                    }
                }
                return true;
            }, () -> summary(deliveries));

        // After message 7's last failed delivery the SDK gives it back (change invisible duration,
        // the policy's third back-off: 10 s); the proxy forwards it to %DLQ%group when it next pops
        // it (delivery attempt > max attempts), and the broker creates that topic only then. The
        // proxy caches a missing route for 20 s, so looking too early costs up to 20 s more: the
        // first look waits for the third back-off or one more receive cycle (as long as the last
        // gap between attempts), whichever is longer, plus 2 s.
        List<Delivery> seven = deliveries.getOrDefault(FAIL_ALWAYS, List.of());
        if (seven.size() >= MAX_ATTEMPTS) {
            long lastGap = (seven.get(MAX_ATTEMPTS - 1).nanos - seven.get(MAX_ATTEMPTS - 2).nanos) / 1_000_000;
            long wait = Math.max(THIRD_BACKOFF_MILLIS, lastGap) + 2_000;
            long since = (System.nanoTime() - seven.get(MAX_ATTEMPTS - 1).nanos) / 1_000_000;
            Thread.sleep(Math.max(0, Math.min(wait, ctx.timeoutMillis) - since));
        }
        String dlqTopic = "%DLQ%" + group;
        long lastFailure = seven.isEmpty() ? System.nanoTime() : seven.get(seven.size() - 1).nanos;
        // Without its three deliveries 7 cannot be in the DLQ yet: no point waiting for it.
        String dlq = delivered ? readDlq(ctx, dlqTopic, prefix + FAIL_ALWAYS + end, ids[FAIL_ALWAYS], lastFailure)
            : "not looked at";
        // A fourth delivery of 7 (or a second success of another) would have come by now: the DLQ
        // copy exists only after the pop that would have delivered it. The consumer is closed with
        // the others at the end; the checks look at a copy taken now.
        Map<Integer, List<Delivery>> snapshot = new TreeMap<>();
        deliveries.forEach((k, v) -> snapshot.put(k, new ArrayList<>(v)));

        for (int i = 0; i < COUNT; i++) {
            List<Delivery> d = snapshot.getOrDefault(i, List.of());
            List<Integer> attempts = new ArrayList<>();
            long successes = d.stream().filter(x -> x.success).count();
            for (Delivery x : d) {
                attempts.add(x.attempt);
                ctx.check("message " + i + " message id", ids[i], x.messageId);
            }
            if (i == FAIL_ALWAYS) {
                ctx.check("message " + i + " (always fails) delivery attempts", List.of(1, 2, 3), attempts);
            } else if (i == FAIL_TWICE) {
                ctx.check("message " + i + " (fails twice) delivery attempts", List.of(1, 2, 3), attempts);
                ctx.check("message " + i + " successful consumptions", 1L, successes);
            } else {
                ctx.check("message " + i + " delivery attempts", List.of(1), attempts);
            }
        }
        if (!strays.isEmpty()) {
            ctx.fail("messages that were not sent by this scenario: " + strays);
        }
        return "backoff(#" + FAIL_TWICE + ")=" + gaps(snapshot.get(FAIL_TWICE)) + " backoff(#" + FAIL_ALWAYS + ")="
            + gaps(snapshot.get(FAIL_ALWAYS)) + " dlq: " + dlq;
    }

    /** Receives message BODY (id ID) from the DLQ topic; returns what was seen there. */
    private static String readDlq(Ctx ctx, String dlqTopic, String body, String id, long lastFailure)
        throws Exception {
        long start = System.nanoTime();
        long deadline = start + ctx.timeoutMillis * 1_000_000L;
        SimpleConsumer dlq = null;
        String lastError = null;
        int attempts = 0;
        // The consumer's start-up fails while the topic has no route yet.
        while (dlq == null && System.nanoTime() < deadline) {
            try {
                dlq = ctx.simpleConsumer(ctx.name("dlq"), dlqTopic, Duration.ofSeconds(3));
            } catch (ClientException | RuntimeException e) {
                // ClientException, or IllegalStateException from the SDK's failed start-up.
                lastError = e.toString();
                attempts++;
                Thread.sleep(1_000);
            }
        }
        if (dlq == null) {
            ctx.fail("could not start a SimpleConsumer on " + dlqTopic + ": " + lastError);
            return "not readable";
        }
        SimpleConsumer c = dlq;
        int failedStarts = attempts;
        String[] seen = {null};
        long remaining = Math.max(1, (deadline - System.nanoTime()) / 1_000_000L);
        ctx.receiveUntil(c, 16, Duration.ofSeconds(20), () -> seen[0] != null, remaining, v -> {
            c.ack(v);
            if (!body.equals(Ctx.body(v))) {
                ctx.fail("unexpected message in " + dlqTopic + ": " + Ctx.body(v));
                return;
            }
            ctx.check("dead letter message id", id, v.getMessageId().toString());
            ctx.check("dead letter keys", List.of("p-" + Push.FAIL_ALWAYS), new ArrayList<>(v.getKeys()));
            ctx.check("dead letter tag", "push", v.getTag().orElse(null));
            ctx.check("dead letter property idx", Integer.toString(Push.FAIL_ALWAYS), v.getProperties().get("idx"));
            seen[0] = "topic=" + v.getTopic() + " attempt=" + v.getDeliveryAttempt() + " read "
                + (System.nanoTime() - lastFailure) / 1_000_000 + "ms after the last failed delivery ("
                + failedStarts + " failed consumer start(s))";
        });
        if (seen[0] == null) {
            ctx.fail("message " + FAIL_ALWAYS + " not received from " + dlqTopic + " within " + ctx.timeoutMillis / 1000
                + " s" + ctx.receiveErrorNote());
            return "not received";
        }
        return seen[0];
    }

    /** Milliseconds between consecutive attempts, e.g. "[1012, 5034]". */
    private static String gaps(List<Delivery> d) {
        List<Long> out = new ArrayList<>();
        if (d != null) {
            for (int k = 1; k < d.size(); k++) {
                out.add((d.get(k).nanos - d.get(k - 1).nanos) / 1_000_000);
            }
        }
        return out.toString().replace(" ", "") + "ms";
    }

    private static String summary(Map<Integer, List<Delivery>> deliveries) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < COUNT; i++) {
            List<Delivery> d = deliveries.getOrDefault(i, List.of());
            sb.append(i).append(':');
            for (Delivery x : d) {
                sb.append(x.attempt).append(x.success ? "ok" : "fail").append('@')
                    .append((x.nanos - STARTED) / 1_000_000).append("ms,");
            }
            sb.append(' ');
        }
        return sb.toString().trim();
    }
}
