package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * POP consumption with the stock remoting client, no proxy: the group's consume mode on a new topic
 * is set to POP with DefaultMQAdminExt.setMessageRequestMode (SET_MESSAGE_REQUEST_MODE, as `mqadmin
 * setConsumeMode -m POP` does), then a push consumer with clientRebalance=false asks the broker for
 * its queues (QUERY_ASSIGNMENT), is told POP, and pops (POP_MESSAGE), acks (ACK_MESSAGE) and, for a
 * failed message, changes its invisible time (CHANGE_INVISIBLETIME). N (default 50) messages: each
 * must arrive once with reconsumeTimes 0 and all fields (queue order is not checked: POP hands one
 * queue's messages to several consume threads); the main topic must never be pulled (PULL_MESSAGE).
 * The listener answers RECONSUME_LATER the first time it sees message #7: the client sets its
 * invisible time to the first POP delay level (10 s), after which the broker revives it and it must
 * arrive exactly once more, reconsumeTimes 1, topic restored, same msgId, body, keys, tags and user
 * property, not earlier than 9 s after the first delivery.
 */
final class PopConsume implements Scenario {

    private static final int POP_MESSAGE = 200050;
    private static final int ACK_MESSAGE = 200051;
    private static final int CHANGE_INVISIBLETIME = 200053;
    private static final int QUERY_ASSIGNMENT = 400;
    private static final int SET_MESSAGE_REQUEST_MODE = 401;
    /** The message the listener fails once. */
    private static final int FAILED_INDEX = 7;
    /** Invisible time the client asks for after a first failure: POP delay level 0, 10 s. */
    private static final long MIN_REDELIVERY_MILLIS = 9_000;

    @Override
    public String run(Ctx ctx) throws Exception {
        DefaultMQAdminExt admin = AdminClients.start(ctx, ctx.hook);
        String brokerAddr = AdminClients.masterAddr(admin.examineBrokerClusterInfo());
        if (brokerAddr == null) {
            ctx.fail.add("examineBrokerClusterInfo: no master broker");
            return "";
        }

        String topic = ctx.topic();
        String group = ctx.group("cg");
        admin.createAndUpdateTopicConfig(brokerAddr, new TopicConfig(topic, 4, 4, PermName.PERM_READ | PermName.PERM_WRITE));
        SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
        sg.setGroupName(group);
        admin.createAndUpdateSubscriptionGroupConfig(brokerAddr, sg);
        // popShareQueueNum 0: every consumer of the group pops from every queue.
        admin.setMessageRequestMode(brokerAddr, topic, group, MessageRequestMode.POP, 0, 10_000);

        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        int n = ctx.count(50);
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, n, "pop", i -> i % 2 == 0 ? "TagA" : "TagB");
        String failKey = ProduceConsume.key(ctx, "pop", FAILED_INDEX);

        // The main topic must be popped, never pulled (the group's %RETRY% topic is still pulled).
        Set<String> pulledTopics = ConcurrentHashMap.newKeySet();
        ctx.hook.onPullResponse((req, resp) -> {
            Object h = req.readCustomHeader();
            if (h instanceof PullMessageRequestHeader) {
                pulledTopics.add(((PullMessageRequestHeader) h).getTopic());
            }
        });

        Received got = new Received();
        Map<String, List<Long>> arrivals = new ConcurrentHashMap<>();
        List<String> sourceTopics = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.setClientRebalance(false);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            boolean later = false;
            for (MessageExt m : msgs) {
                got.add("c1", c.getMessageQueue().getTopic(), m);
                sourceTopics.add(c.getMessageQueue().getTopic() + "#" + c.getMessageQueue().getQueueId());
                arrivals.computeIfAbsent(m.getKeys(), k -> new CopyOnWriteArrayList<>()).add(System.nanoTime());
                later |= m.getReconsumeTimes() == 0 && failKey.equals(m.getKeys());
            }
            return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        int expected = sent.size() + 1;
        ctx.await(expected + " deliveries (one of them the redelivery of #" + FAILED_INDEX + ")",
            () -> got.total() >= expected, () -> got.total() + " deliveries so far, " + got.distinct() + " distinct");
        ctx.settle();

        List<Received.Got> all = got.list();
        List<Received.Got> firsts = new ArrayList<>();
        List<Received.Got> again = new ArrayList<>();
        for (Received.Got g : all) {
            (g.reconsumeTimes == 0 ? firsts : again).add(g);
        }
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "first delivery", sent, firsts, false);
        Sent failed = sent.get(FAILED_INDEX);
        long redeliveryMillis = -1;
        for (Received.Got r : again) {
            if (!failed.body.equals(r.body)) {
                ctx.fail.add("redelivered although its listener succeeded: " + r);
            }
        }
        List<Received.Got> redelivered = new ArrayList<>();
        for (Received.Got r : again) {
            if (failed.body.equals(r.body)) {
                redelivered.add(r);
            }
        }
        if (redelivered.size() != 1) {
            ctx.fail.add("#" + FAILED_INDEX + ": expected exactly 1 redelivery, actual " + redelivered.size() + " "
                + redelivered);
        } else {
            Received.Got r = redelivered.get(0);
            String what = "redelivery of " + failed.body;
            ctx.fail.check(what + " reconsumeTimes", 1, r.reconsumeTimes);
            ctx.fail.check(what + " topic (restored)", topic, r.topic);
            ctx.fail.check(what + " msgId", failed.msgId, r.msgId);
            ctx.fail.check(what + " keys", failed.key, r.keys);
            ctx.fail.check(what + " tags", failed.tag, r.tags);
            ctx.fail.check(what + " user property", failed.prop, r.prop);
            if (!r.crcOk) {
                ctx.fail.add(what + ": bodyCRC does not match the body");
            }
            List<Long> t = arrivals.getOrDefault(failed.key, List.of());
            if (t.size() >= 2) {
                redeliveryMillis = (t.get(1) - t.get(0)) / 1_000_000;
                if (redeliveryMillis < MIN_REDELIVERY_MILLIS) {
                    ctx.fail.add(what + ": came back after " + redeliveryMillis + " ms, expected at least "
                        + MIN_REDELIVERY_MILLIS + " ms (invisible time 10 s)");
                }
            }
        }
        ctx.fail.check("total deliveries", expected, all.size());
        // Pulls still held by the broker have no response yet: "topic queueId offset" entries.
        String unanswered = ctx.hook.pullsUnanswered(group);
        if (unanswered.contains("[" + topic + " ") || unanswered.contains(", " + topic + " ")) {
            pulledTopics.add(topic);
        }
        if (pulledTopics.contains(topic)) {
            ctx.fail.add("the main topic was pulled (PULL_MESSAGE) although the group's mode is POP; pulled: "
                + pulledTopics);
        }
        ctx.fail.check("SET_MESSAGE_REQUEST_MODE (401) requests", 1L, ctx.hook.count("broker", SET_MESSAGE_REQUEST_MODE));
        for (int code : new int[] {QUERY_ASSIGNMENT, POP_MESSAGE, ACK_MESSAGE, CHANGE_INVISIBLETIME}) {
            if (ctx.hook.count("broker", code) == 0) {
                ctx.fail.add("the consumer sent no request " + code);
            }
        }
        Set<String> sources = new TreeSet<>(sourceTopics);
        return "sent=" + sent.size() + " " + stats + " redelivered=#" + FAILED_INDEX + " after " + redeliveryMillis
            + " ms, listener queues=" + sources + " pop(200050)=" + ctx.hook.count("broker", POP_MESSAGE)
            + " ack(200051)=" + ctx.hook.count("broker", ACK_MESSAGE)
            + " changeInvisible(200053)=" + ctx.hook.count("broker", CHANGE_INVISIBLETIME)
            + " queryAssignment(400)=" + ctx.hook.count("broker", QUERY_ASSIGNMENT)
            + " pulled=" + new TreeSet<>(pulledTopics);
    }

}
