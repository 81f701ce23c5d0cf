package dev.silo.interop.client;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A broker group loses its master while a producer and a consumer work, and gets it back.
 *
 * <p>{@code --state FILE --stop-file STOP [--count N] [--consume-pause-ms MS]}: one producer
 * sync-sends messages with a unique key each (up to N, default 1000000) to a new topic, one at a
 * time, until STOP exists; a failed send is noted and the producer goes on after 50 ms. Each
 * acknowledgement is appended to FILE as soon as it arrives: {@code ack<TAB>index<TAB>status<TAB>
 * queueId<TAB>queueOffset<TAB>epochMillis}. Meanwhile a push consumer of a new group (one thread,
 * pausing MS per message, default 2, so that a backlog builds up) consumes the topic from the first
 * offset and appends {@code recv<TAB>index<TAB>queueId<TAB>queueOffset<TAB>epochMillis} per
 * delivery to FILE. The test kills and restarts the master meanwhile, by the marker files it keeps
 * beside STOP ({@code STOP.down} while the master is down).
 *
 * <p>Once STOP exists: waits (up to --timeout) until every acknowledged message was delivered at
 * least once, then lets stray deliveries arrive (--settle-ms). A message acknowledged SEND_OK and
 * never delivered is a difference. Reported, not failed: duplicates (deliveries beyond the first),
 * messages stored though their send failed, deliveries while the master was down, acknowledgement
 * statuses by kind.
 */
final class Failover implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        if (ctx.state == null || ctx.options.get("stop-file") == null) {
            throw new IllegalArgumentException("failover needs --state FILE and --stop-file FILE");
        }
        Path stop = Paths.get(ctx.options.get("stop-file"));
        Path down = Paths.get(stop + ".down");
        int pauseMillis = ctx.intOption("consume-pause-ms", 2);
        int max = ctx.count(1_000_000);
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        BufferedWriter log = Files.newBufferedWriter(ctx.state, StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);

        Map<Integer, String> acked = new ConcurrentHashMap<>();
        Map<Integer, AtomicInteger> delivered = new ConcurrentHashMap<>();
        AtomicLong deliveredWhileDown = new AtomicLong();
        // Sends that failed: their messages may still have been stored.
        Map<Integer, Boolean> failed = new ConcurrentHashMap<>();

        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "*");
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.setConsumeMessageBatchMaxSize(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            for (MessageExt m : msgs) {
                int index = Integer.parseInt(m.getKeys().substring(m.getKeys().lastIndexOf('-') + 1));
                delivered.computeIfAbsent(index, k -> new AtomicInteger()).incrementAndGet();
                if (Files.exists(down)) {
                    deliveredWhileDown.incrementAndGet();
                }
                write(log, "recv\t" + index + "\t" + m.getQueueId() + "\t" + m.getQueueOffset() + "\t"
                    + System.currentTimeMillis());
            }
            try {
                Thread.sleep(pauseMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        Map<String, Integer> statuses = new TreeMap<>();
        long started = System.nanoTime();
        int sent = 0;
        for (int i = 0; i < max && !Files.exists(stop); i++) {
            Message m = Ctx.message(topic, "TagF", "failover-" + ctx.suffix + "-" + i, "failover #" + i);
            try {
                SendResult r = producer.send(m);
                SendStatus s = r.getSendStatus();
                statuses.merge(s.name(), 1, Integer::sum);
                acked.put(i, s.name());
                write(log, "ack\t" + i + "\t" + s.name() + "\t" + r.getMessageQueue().getQueueId() + "\t"
                    + r.getQueueOffset() + "\t" + System.currentTimeMillis());
            } catch (Exception e) {
                failed.put(i, Boolean.TRUE);
                statuses.merge("failed", 1, Integer::sum);
                Thread.sleep(50);
            }
            sent++;
        }
        long sendMillis = (System.nanoTime() - started) / 1_000_000;

        ctx.await("every acknowledged message to be delivered", () -> acked.keySet().stream()
            .allMatch(delivered::containsKey), () -> acked.size() + " acknowledged, "
            + acked.keySet().stream().filter(delivered::containsKey).count() + " delivered");
        ctx.settle();
        for (Map.Entry<Integer, String> a : acked.entrySet()) {
            if (!delivered.containsKey(a.getKey()) && "SEND_OK".equals(a.getValue())) {
                ctx.fail.add("acknowledged (SEND_OK) but never delivered: #" + a.getKey());
            }
        }
        long duplicates = delivered.values().stream().mapToLong(c -> c.get() - 1).sum();
        long storedThoughFailed = failed.keySet().stream().filter(delivered::containsKey).count();
        log.close();
        return "sent=" + sent + " acked=" + acked.size() + " statuses=" + statuses + " delivered="
            + delivered.size() + " duplicates=" + duplicates + " storedThoughSendFailed=" + storedThoughFailed
            + " deliveredWhileMasterDown=" + deliveredWhileDown.get() + " sendSeconds=" + sendMillis / 1000;
    }

    private static void write(BufferedWriter log, String line) {
        synchronized (log) {
            try {
                log.write(line);
                log.newLine();
                log.flush();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }
}
