package dev.silo.interop.sdk5;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Load from the 5.x Java SDK against a gRPC endpoint, for comparing brokers (bench/sdk5-compare).
 *
 * <pre>
 *   Bench produce ENDPOINT TOPIC SECONDS WARMUP_SECONDS SIZE IN_FLIGHT
 *   Bench consume ENDPOINT TOPIC GROUP COUNT BATCH
 * </pre>
 *
 * produce: one Producer, asynchronous sends of SIZE-byte bodies with at most IN_FLIGHT unanswered,
 * for WARMUP_SECONDS unmeasured then SECONDS measured; each send is timed from its call to its
 * answer. consume: one SimpleConsumer drains COUNT messages, BATCH a receive, acknowledging each
 * (asynchronously, at most 256 in flight); receives and acks are timed. One JSON line on stdout.
 */
public final class Bench {
    private Bench() {
    }

    /** Latencies in microseconds, kept whole (a run is at most a few million). */
    static final class Latencies {
        private long[] values = new long[1 << 16];
        private int n;

        synchronized void add(long micros) {
            if (n == values.length) {
                values = Arrays.copyOf(values, n * 2);
            }
            values[n++] = micros;
        }

        synchronized double percentileMillis(double p) {
            if (n == 0) {
                return -1;
            }
            long[] sorted = Arrays.copyOf(values, n);
            Arrays.sort(sorted);
            int i = (int) Math.min(n - 1, Math.ceil(p / 100.0 * n) - 1);
            return sorted[Math.max(0, i)] / 1000.0;
        }
    }

    static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    public static void main(String[] args) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        switch (args[0]) {
            case "produce" -> produce(provider, args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            case "consume" -> consume(provider, args[1], args[2], args[3], Long.parseLong(args[4]),
                Integer.parseInt(args[5]));
            default -> throw new IllegalArgumentException("produce or consume, not " + args[0]);
        }
        System.exit(0);
    }

    static void produce(ClientServiceProvider provider, String endpoint, String topic, int seconds, int warmup,
        int size, int inFlight) throws Exception {
        byte[] body = "x".repeat(size).getBytes(StandardCharsets.UTF_8);
        Latencies lat = new Latencies();
        AtomicLong ok = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        try (Producer producer = provider.newProducerBuilder().setClientConfiguration(config(endpoint))
            .setTopics(topic).build()) {
            Semaphore window = new Semaphore(inFlight);
            long start = System.nanoTime();
            long measureFrom = start + warmup * 1_000_000_000L;
            long end = measureFrom + seconds * 1_000_000_000L;
            long measuredStart = -1;
            long sentMeasured = 0;
            while (true) {
                long now = System.nanoTime();
                if (now >= end) {
                    break;
                }
                window.acquire();
                boolean measured = now >= measureFrom;
                if (measured && measuredStart < 0) {
                    measuredStart = now;
                }
                Message m = provider.newMessageBuilder().setTopic(topic).setTag("bench").setBody(body).build();
                long t0 = System.nanoTime();
                CompletableFuture<?> f = producer.sendAsync(m);
                f.whenComplete((r, e) -> {
                    window.release();
                    if (!measured) {
                        return;
                    }
                    if (e != null) {
                        errors.incrementAndGet();
                    } else {
                        ok.incrementAndGet();
                        lat.add((System.nanoTime() - t0) / 1000);
                    }
                });
                if (measured) {
                    sentMeasured++;
                }
            }
            window.acquire(inFlight);
            double secs = (System.nanoTime() - measuredStart) / 1e9;
            System.out.printf("{\"mode\":\"produce\",\"msgs\":%d,\"errors\":%d,\"secs\":%.3f,\"msgs_per_sec\":%.0f,"
                    + "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"size\":%d,\"in_flight\":%d}%n",
                ok.get(), errors.get(), secs, ok.get() / secs, lat.percentileMillis(50), lat.percentileMillis(99),
                lat.percentileMillis(99.9), size, inFlight);
        }
    }

    static void consume(ClientServiceProvider provider, String endpoint, String topic, String group, long count,
        int batch) throws Exception {
        Latencies receives = new Latencies();
        Latencies acks = new Latencies();
        AtomicLong acked = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint))
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG))).build()) {
            Semaphore window = new Semaphore(256);
            long received = 0;
            int empty = 0;
            long start = System.nanoTime();
            while (received < count && empty < 3) {
                long t0 = System.nanoTime();
                List<MessageView> got;
                try {
                    got = consumer.receive(batch, Duration.ofSeconds(30));
                } catch (Exception e) {
                    errors.incrementAndGet();
                    continue;
                }
                receives.add((System.nanoTime() - t0) / 1000);
                empty = got.isEmpty() ? empty + 1 : 0;
                for (MessageView v : got) {
                    received++;
                    window.acquire();
                    long a0 = System.nanoTime();
                    consumer.ackAsync(v).whenComplete((r, e) -> {
                        window.release();
                        if (e != null) {
                            errors.incrementAndGet();
                        } else {
                            acked.incrementAndGet();
                            acks.add((System.nanoTime() - a0) / 1000);
                        }
                    });
                }
            }
            window.acquire(256);
            double secs = (System.nanoTime() - start) / 1e9;
            System.out.printf("{\"mode\":\"consume\",\"msgs\":%d,\"errors\":%d,\"secs\":%.3f,\"msgs_per_sec\":%.0f,"
                    + "\"receive_p50_ms\":%.3f,\"receive_p99_ms\":%.3f,\"ack_p50_ms\":%.3f,\"ack_p99_ms\":%.3f,\"batch\":%d}%n",
                acked.get(), errors.get(), secs, acked.get() / secs, receives.percentileMillis(50),
                receives.percentileMillis(99), acks.percentileMillis(50), acks.percentileMillis(99), batch);
        }
    }
}
