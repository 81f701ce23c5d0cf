package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sync-sends N messages (distinct bodies, KEYS, TAGS TagA/TagB, a user property) to a new topic:
 * every SendResult must be SEND_OK with both ids, the client id equal to the message's UNIQ_KEY, and
 * per-queue offsets consecutive from 0. Then one clustering push consumer (first offset, "*", one
 * consume thread so arrival order is meaningful) must receive every message exactly once, with the
 * sent keys, tags, property, ids, queue and offset, in queue-offset order within each queue.
 */
final class ProduceConsume implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Sent> sent = sendSync(ctx, producer, topic, ctx.count, "pc", i -> i % 2 == 0 ? "TagA" : "TagB");
        Map<Integer, Integer> perQueue = Verify.consecutiveOffsets(ctx.fail, "send", sent);
        if (ctx.topicOption == null) {
            for (Map.Entry<Integer, Integer> e : perQueue.entrySet()) {
                long first = sent.stream().filter(s -> s.queueId == e.getKey()).findFirst().get().queueOffset;
                ctx.fail.check("send: first offset of new topic's queue " + e.getKey(), 0L, first);
            }
        }

        Received got = new Received();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "*");
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                got.add("c1", m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.fail.check("consumer message model", "CLUSTERING", consumer.getMessageModel().name());
        ctx.await("all " + sent.size() + " messages", () -> got.distinct() >= sent.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", sent, got.list(), true);
        return "sent=" + sent.size() + " queues=" + perQueue + " " + stats;
    }

    /** Tag chooser by message index. */
    interface TagOf {
        String tag(int i);
    }

    /**
     * Sync-sends COUNT messages KIND-i and checks each SendResult (SEND_OK, ids present, client id
     * equal to the UNIQ_KEY the client stamped, queue of TOPIC).
     */
    static List<Sent> sendSync(Ctx ctx, DefaultMQProducer producer, String topic, int count, String kind, TagOf tags)
        throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message m = Ctx.message(topic, tags.tag(i), key(ctx, kind, i), body(ctx, kind, i));
            SendResult r = producer.send(m);
            checkResult(ctx, kind + " #" + i, m, r);
            sent.add(Sent.of(m, r));
        }
        return sent;
    }

    static String key(Ctx ctx, String kind, int i) {
        return kind + "-" + ctx.suffix + "-" + i;
    }

    static String body(Ctx ctx, String kind, int i) {
        return ctx.scenario + " " + kind + " " + ctx.suffix + " #" + i;
    }

    static void checkResult(Ctx ctx, String what, Message m, SendResult r) {
        if (r == null) {
            ctx.fail.add(what + ": null SendResult");
            return;
        }
        ctx.fail.check(what + " send status", SendStatus.SEND_OK, r.getSendStatus());
        if (r.getOffsetMsgId() == null || r.getOffsetMsgId().isEmpty()) {
            ctx.fail.add(what + ": offsetMsgId missing in " + r);
        }
        ctx.fail.check(what + " SendResult msgId vs UNIQ_KEY", MessageClientIDSetter.getUniqID(m), r.getMsgId());
        ctx.fail.check(what + " SendResult topic", m.getTopic(),
            r.getMessageQueue() == null ? null : r.getMessageQueue().getTopic());
    }
}
