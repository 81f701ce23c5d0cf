package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Reads a consumer group's committed offsets from the broker (QUERY_CONSUMER_OFFSET) with the stock
 * client's pull consumer, which asks the broker on every call. Joining the group this way counts as
 * a group member, so use it only while no other consumer of the group runs.
 */
final class GroupOffsets {

    /** How long the one-way commits of a consumer that just shut down may take to be applied. */
    private static final long APPLY_MILLIS = 5000;

    private GroupOffsets() {
    }

    /**
     * Waits until the broker's committed offset of every queue in EXPECTED equals the expected value;
     * records a difference otherwise. Returns a note for the PASS line.
     *
     * <p>Apache RocketMQ 5.3.3 can lose the very first commits of a new topic@group when several
     * arrive at once (check-then-act in ConsumerOffsetManager.commitOffset, apache/rocketmq#10700):
     * a consumer that shuts down right after consuming sends its first commits for all queues at
     * once, and one queue's commit may vanish (it then reads as 0). If, after a bounded wait, exactly
     * such queues are wrong (0 or none where the rest are right), the scenario re-commits them
     * synchronously and says so, unless --strict is given, when it is a difference.
     */
    @SuppressWarnings("deprecation")
    static String awaitCommitted(Ctx ctx, String group, Map<MessageQueue, Long> expected) throws Exception {
        DefaultMQPullConsumer reader = new DefaultMQPullConsumer(group, ctx.hook);
        reader.setNamesrvAddr(ctx.namesrv);
        reader.setInstanceName("silo-" + ctx.suffix + "-offsets-" + System.nanoTime());
        reader.start();
        try {
            Map<String, Long> want = new TreeMap<>();
            for (Map.Entry<MessageQueue, Long> e : expected.entrySet()) {
                want.put(e.getKey().getQueueId() + "", e.getValue());
            }
            Map<String, Long> actual = new TreeMap<>();
            long firstDeadline = System.nanoTime() + Math.min(APPLY_MILLIS, ctx.timeoutMillis) * 1_000_000L;
            while (!read(reader, expected, actual).equals(want) && System.nanoTime() < firstDeadline) {
                Thread.sleep(100);
            }
            if (actual.equals(want)) {
                return "committed=ok";
            }
            List<MessageQueue> lost = new ArrayList<>();
            boolean othersRight = true;
            for (Map.Entry<MessageQueue, Long> e : expected.entrySet()) {
                Long got = actual.get(e.getKey().getQueueId() + "");
                if (got != null && got <= 0 && e.getValue() > 0) {
                    lost.add(e.getKey());
                } else if (got == null || !got.equals(e.getValue())) {
                    othersRight = false;
                }
            }
            String note = "committed=ok";
            if (!lost.isEmpty() && othersRight) {
                List<Integer> ids = new ArrayList<>();
                for (MessageQueue mq : lost) {
                    ids.add(mq.getQueueId());
                }
                if (ctx.strict) {
                    ctx.fail.add("group " + group + ": the broker lost the committed offset of queue(s) " + ids
                        + " (broker has " + actual + ", expected " + want + ")");
                    return note;
                }
                for (MessageQueue mq : lost) {
                    reader.getOffsetStore().updateConsumeOffsetToBroker(mq, expected.get(mq), false);
                }
                note = "committed=recommitted-queues" + ids + "(apache#10700)";
            }
            ctx.awaitRemote("group " + group + " committed offsets " + want,
                () -> read(reader, expected, actual).equals(want), () -> "broker has " + actual);
            return note;
        } finally {
            reader.shutdown();
        }
    }

    @SuppressWarnings("deprecation")
    private static Map<String, Long> read(DefaultMQPullConsumer reader, Map<MessageQueue, Long> expected,
        Map<String, Long> into) {
        try {
            for (MessageQueue mq : expected.keySet()) {
                into.put(mq.getQueueId() + "", reader.fetchConsumeOffset(mq, true));
            }
        } catch (Exception e) {
            into.put("error", -1L);
        }
        return into;
    }

    /** Per queue of SENT: last queue offset + 1 (what a consumer that got everything commits). */
    static Map<MessageQueue, Long> endOffsets(String brokerName, Iterable<Sent> sent) {
        Map<MessageQueue, Long> end = new TreeMap<>();
        for (Sent s : sent) {
            if (s.queueId >= 0) {
                end.merge(new MessageQueue(s.topic, brokerName, s.queueId), s.queueOffset + 1, Math::max);
            }
        }
        return end;
    }
}
