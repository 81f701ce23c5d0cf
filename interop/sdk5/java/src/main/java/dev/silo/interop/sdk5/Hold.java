package dev.silo.interop.sdk5;

import java.io.IOException;
import java.time.Duration;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * A push consumer that stays online, for admin tools to reach it through the broker:
 *
 * <pre>
 * Hold --endpoint HOST:PORT --suffix S [--seconds N]
 * </pre>
 *
 * On the normal topic and group of suffix S (resources.sh), it starts a push consumer, sends one
 * message and prints {@code SENT <message id> <topic> <group>}, then {@code CONSUMED <message id>
 * <body>} every time its listener is handed a message (a delivery, or an admin's
 * consumeMessageDirectly), and {@code READY} once the sent message was consumed. It stays until
 * its stdin closes or N seconds (default 300) pass. Exit 0 unless it could not start.
 */
public final class Hold {

    private Hold() {
    }

    public static void main(String[] args) throws Exception {
        String endpoint = null;
        String suffix = null;
        long seconds = 300;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--endpoint" -> endpoint = args[i + 1];
                case "--suffix" -> suffix = args[i + 1];
                case "--seconds" -> seconds = Long.parseLong(args[i + 1]);
                default -> {
                    System.err.println("usage: Hold --endpoint HOST:PORT --suffix S [--seconds N]");
                    System.exit(2);
                }
            }
        }
        if (endpoint == null || suffix == null) {
            System.err.println("usage: Hold --endpoint HOST:PORT --suffix S [--seconds N]");
            System.exit(2);
        }
        Ctx ctx = new Ctx("hold", endpoint, suffix, seconds * 1000);
        String topic = ctx.name("normal");
        String group = ctx.name("normal");
        String body = "hold-" + suffix;
        Object consumed = new Object();
        boolean[] got = {false};
        ctx.pushConsumer(group, topic, 1, v -> {
            synchronized (System.out) {
                System.out.println("CONSUMED " + v.getMessageId() + " " + Ctx.body(v));
                System.out.flush();
            }
            synchronized (consumed) {
                got[0] = true;
                consumed.notifyAll();
            }
            return ConsumeResult.SUCCESS;
        });
        Producer producer = ctx.producer(null, topic);
        SendReceipt r = producer.send(ctx.provider.newMessageBuilder()
            .setTopic(topic)
            .setTag("hold")
            .setKeys("hold-key")
            .setBody(Ctx.bytes(body))
            .build());
        synchronized (System.out) {
            System.out.println("SENT " + r.getMessageId() + " " + topic + " " + group);
            System.out.flush();
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(seconds).toNanos();
        synchronized (consumed) {
            while (!got[0] && System.nanoTime() < deadline) {
                consumed.wait(100);
            }
        }
        synchronized (System.out) {
            System.out.println(got[0] ? "READY" : "NOT CONSUMED");
            System.out.flush();
        }
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // Only its end matters.
                }
            } catch (IOException e) {
                // Closed.
            }
        }, "hold-stdin");
        stdin.setDaemon(true);
        stdin.start();
        while (stdin.isAlive() && System.nanoTime() < deadline) {
            stdin.join(200);
        }
        ctx.closeAll();
        Runtime.getRuntime().halt(0);
    }
}
