package dev.silo.interop.sdk5;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The two halves of a consumer crash, for a test that kills the first with SIGKILL:
 *
 * <pre>
 * Crash --endpoint HOST:PORT --suffix S --role hold|take --kind simple|push [--count N]
 *       [--invisible-seconds D] [--seconds T]
 * </pre>
 *
 * On the normal topic and group of suffix S (resources.sh). {@code hold} sends N messages (default
 * 10), prints {@code SENT <message id>} for each, then takes all N and never acknowledges them: a
 * SimpleConsumer receives them with invisible duration D (default 10 s); a PushConsumer's listener
 * blocks on each (the broker renews what it holds while it lives). It prints {@code HELD <message
 * id> <attempt>} for each and {@code HOLDING} once it holds N, then waits to be killed. {@code take}
 * receives and acknowledges everything that comes (a SimpleConsumer, invisible 30 s) and prints
 * {@code GOT <message id> <attempt> <millis since it started>} for each. Both stop after T seconds
 * (default 300).
 */
public final class Crash {

    private Crash() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new java.util.HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        if (!o.containsKey("endpoint") || !o.containsKey("suffix") || !o.containsKey("role")) {
            System.err.println("usage: Crash --endpoint HOST:PORT --suffix S --role hold|take --kind simple|push"
                + " [--count N] [--invisible-seconds D] [--seconds T]");
            System.exit(2);
        }
        int count = Integer.parseInt(o.getOrDefault("count", "10"));
        Duration invisible = Duration.ofSeconds(Long.parseLong(o.getOrDefault("invisible-seconds", "10")));
        long seconds = Long.parseLong(o.getOrDefault("seconds", "300"));
        Ctx ctx = new Ctx("crash", o.get("endpoint"), o.get("suffix"), seconds * 1000);
        String topic = ctx.name("normal");
        String group = ctx.name("normal");
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        if (o.get("role").equals("take")) {
            take(ctx, topic, group, deadline);
        } else if (o.getOrDefault("kind", "simple").equals("push")) {
            holdPushed(ctx, topic, group, count, deadline);
        } else {
            holdReceived(ctx, topic, group, count, invisible, deadline);
        }
        Runtime.getRuntime().halt(0);
    }

    private static void say(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    private static void send(Ctx ctx, String topic, int count) throws ClientException {
        Producer producer = ctx.producer(null, topic);
        for (int i = 0; i < count; i++) {
            say("SENT " + producer.send(ctx.provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("crash")
                .setBody(Ctx.bytes("crash-" + i + "-" + ctx.suffix))
                .build()).getMessageId());
        }
    }

    private static void waitUntil(long deadline) throws InterruptedException {
        while (System.nanoTime() < deadline) {
            Thread.sleep(200);
        }
    }

    private static void holdReceived(Ctx ctx, String topic, String group, int count, Duration invisible,
        long deadline) throws Exception {
        SimpleConsumer consumer = ctx.simpleConsumer(group, topic, Duration.ofSeconds(5));
        send(ctx, topic, count);
        Set<String> held = new HashSet<>();
        while (held.size() < count && System.nanoTime() < deadline) {
            List<MessageView> views;
            try {
                views = consumer.receive(count, invisible);
            } catch (ClientException e) {
                continue;
            }
            for (MessageView v : views) {
                if (held.add(v.getMessageId().toString())) {
                    say("HELD " + v.getMessageId() + " " + v.getDeliveryAttempt());
                }
            }
        }
        say("HOLDING");
        waitUntil(deadline);
    }

    private static void holdPushed(Ctx ctx, String topic, String group, int count, long deadline) throws Exception {
        Set<String> held = java.util.concurrent.ConcurrentHashMap.newKeySet();
        CountDownLatch never = new CountDownLatch(1);
        ctx.pushConsumer(group, topic, count, v -> {
            synchronized (held) {
                // One at a time, so that HOLDING follows the last HELD line.
                if (held.add(v.getMessageId().toString())) {
                    say("HELD " + v.getMessageId() + " " + v.getDeliveryAttempt());
                    if (held.size() == count) {
                        say("HOLDING");
                    }
                }
            }
            try {
                never.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ConsumeResult.FAILURE;
        });
        send(ctx, topic, count);
        waitUntil(deadline);
    }

    private static void take(Ctx ctx, String topic, String group, long deadline) throws Exception {
        SimpleConsumer consumer = ctx.simpleConsumer(group, topic, Duration.ofSeconds(5));
        long start = System.nanoTime();
        say("TAKING");
        while (System.nanoTime() < deadline) {
            List<MessageView> views;
            try {
                views = consumer.receive(16, Duration.ofSeconds(30));
            } catch (ClientException e) {
                continue;
            }
            for (MessageView v : views) {
                consumer.ack(v);
                say("GOT " + v.getMessageId() + " " + v.getDeliveryAttempt() + " "
                    + (System.nanoTime() - start) / 1_000_000);
            }
        }
    }
}
