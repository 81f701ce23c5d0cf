package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * DefaultLitePullConsumer, both ways. Subscribe mode: subscribe "*" and poll until all N messages
 * arrived, exactly once, with all fields, in queue order; after commitSync and shutdown the broker
 * must hold the group's committed offsets = end of each queue. Assign mode (another group): assign
 * every queue from fetchMessageQueues and poll all N (the new group starts at the first offset);
 * once every queue's pull waits at the end, check offsetForTimestamp(before the first send) = 0 per
 * queue, seekToBegin, and poll all N again.
 */
final class LitePull implements Scenario {

    @Override
    @SuppressWarnings("deprecation") // commitSync(): deprecated in 5.x, the only way in 4.x
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        long before = System.currentTimeMillis() - 1000;
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "lite",
            i -> i % 2 == 0 ? "TagA" : "TagB");
        String brokerName = brokerName(producer, topic);

        // Subscribe mode.
        String group = ctx.group("cg");
        DefaultLitePullConsumer sub = ctx.litePullConsumer(group);
        sub.subscribe(topic, "*");
        sub.start();
        Received got = new Received();
        poll(ctx, sub, "l1", got, sent.size());
        sub.commitSync();
        sub.shutdown();
        Verify.Stats subStats = Verify.exactlyOnce(ctx.fail, "subscribe", sent, got.list(), true);
        String committed = GroupOffsets.awaitCommitted(ctx, group, GroupOffsets.endOffsets(brokerName, sent));

        // Assign mode.
        String group2 = ctx.group("cg2");
        DefaultLitePullConsumer asg = ctx.litePullConsumer(group2);
        asg.setAutoCommit(false);
        asg.start();
        Collection<MessageQueue> mqs = asg.fetchMessageQueues(topic);
        ctx.fail.check("fetchMessageQueues count", 4, mqs.size());
        asg.assign(mqs);
        Received first = new Received();
        poll(ctx, asg, "l2", first, sent.size());
        Verify.Stats asgStats = Verify.exactlyOnce(ctx.fail, "assign", sent, first.list(), true);

        // Seek only while every queue's pull is held by the broker. The client's javadoc warns that
        // seeking in the middle of consumption may lose data, and it does: seek interrupts the thread
        // the queue's pull task last ran on, which between two pulls may be running another queue's
        // pull, and a thread interrupted just before sending makes the 5.x client close the broker
        // connection, failing the pulls in flight on it, among them other queues' first pulls after
        // their seek: those queues then go on from their old offsets (messages skipped). A batch
        // whose pull was in flight is also still delivered after the seek (duplicates). Interrupting
        // a held pull just ends it.
        Map<Integer, Long> end = new TreeMap<>();
        for (Sent s : sent) {
            end.merge(s.queueId, s.queueOffset + 1, Math::max);
        }
        ctx.await("a pull held at the end of every queue before seeking",
            () -> mqs.stream().allMatch(mq -> ctx.hook.pullUnanswered(group2, topic, mq.getQueueId(),
                end.getOrDefault(mq.getQueueId(), 0L))),
            () -> "ends " + end + ", unanswered pulls " + ctx.hook.pullsUnanswered(group2));
        Map<Integer, Long> atTime = new TreeMap<>();
        for (MessageQueue mq : mqs) {
            atTime.put(mq.getQueueId(), asg.offsetForTimestamp(mq, before));
            asg.seekToBegin(mq);
        }
        for (Map.Entry<Integer, Long> e : atTime.entrySet()) {
            ctx.fail.check("offsetForTimestamp(before first send) queue " + e.getKey(), 0L, e.getValue());
        }
        Received again = new Received();
        poll(ctx, asg, "l3", again, sent.size());
        Verify.Stats seekStats = Verify.exactlyOnce(ctx.fail, "seekToBegin", sent, again.list(), true);
        return "sent=" + sent.size() + " subscribe: " + subStats + " " + committed + " assign: " + asgStats
            + " seekToBegin: " + seekStats;
    }

    private static void poll(Ctx ctx, DefaultLitePullConsumer c, String name, Received got, int want)
        throws InterruptedException {
        long deadline = System.nanoTime() + ctx.timeoutMillis * 1_000_000L;
        while (got.distinct() < want && System.nanoTime() < deadline) {
            for (MessageExt m : c.poll(200)) {
                got.add(name, m);
            }
        }
        if (got.distinct() < want) {
            ctx.fail.add(name + ": timed out after " + ctx.timeoutMillis / 1000 + " s with " + got.distinct() + " of "
                + want + " messages");
            return;
        }
        // Anything more (a duplicate) would be in the next poll.
        long settle = System.nanoTime() + ctx.settleMillis * 1_000_000L;
        while (System.nanoTime() < settle) {
            for (MessageExt m : c.poll(100)) {
                got.add(name, m);
            }
        }
    }

    static String brokerName(DefaultMQProducer producer, String topic) throws Exception {
        List<MessageQueue> mqs = new ArrayList<>(producer.fetchPublishMessageQueues(topic));
        return mqs.isEmpty() ? null : mqs.get(0).getBrokerName();
    }

}
