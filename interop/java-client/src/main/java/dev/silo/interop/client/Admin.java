package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.admin.ConsumeStats;
import org.apache.rocketmq.remoting.protocol.body.CMResult;
import org.apache.rocketmq.remoting.protocol.body.Connection;
import org.apache.rocketmq.remoting.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.remoting.protocol.body.ConsumerConnection;
import org.apache.rocketmq.remoting.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.remoting.protocol.admin.OffsetWrapper;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.QueueData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * DefaultMQAdminExt (rocketmq-tools) against the name server and broker:
 * examineBrokerClusterInfo must list a cluster with a master; createAndUpdateTopicConfig on that
 * master creates a topic with 4/4 queues, perm RW, which fetchAllTopicList must then list and
 * examineTopicRouteInfo must route (queue counts, perm, the master's address). N messages are sent
 * and consumed by a push consumer (exactly once); examineConsumeStats for the group must then show,
 * per queue, broker offset = end of queue and consumer offset = broker offset. viewMessage by broker
 * message id (VIEW_MESSAGE_BY_ID), queryMessage by key and queryMessageByUniqKey by client id (both
 * QUERY_MESSAGE, served from the index) must return the sent message, for a sample of 10.
 */
final class Admin implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(ctx.hook, 10_000);
        admin.setNamesrvAddr(ctx.namesrv);
        admin.setInstanceName("silo-" + ctx.suffix + "-admin");
        admin.start();
        ctx.closeLater(admin::shutdown);

        // Cluster list.
        ClusterInfo cluster = admin.examineBrokerClusterInfo();
        String clusterName = null;
        String brokerName = null;
        String brokerAddr = null;
        if (cluster.getClusterAddrTable() != null) {
            for (Map.Entry<String, Set<String>> c : cluster.getClusterAddrTable().entrySet()) {
                for (String b : c.getValue()) {
                    BrokerData bd = cluster.getBrokerAddrTable() == null ? null : cluster.getBrokerAddrTable().get(b);
                    if (bd == null) {
                        ctx.fail.add("cluster " + c.getKey() + " lists broker " + b + " without an address entry");
                    } else if (bd.getBrokerAddrs() != null && bd.getBrokerAddrs().get(MixAll.MASTER_ID) != null
                        && brokerAddr == null) {
                        clusterName = c.getKey();
                        brokerName = b;
                        brokerAddr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
                    }
                }
            }
        }
        if (brokerAddr == null) {
            ctx.fail.add("examineBrokerClusterInfo: no cluster with a master broker: " + cluster.toJson());
            return "";
        }

        // Create a topic and find it.
        String topic = ctx.topic();
        int perm = PermName.PERM_READ | PermName.PERM_WRITE;
        admin.createAndUpdateTopicConfig(brokerAddr, new TopicConfig(topic, 4, 4, perm));
        ctx.awaitRemote("fetchAllTopicList to list " + topic, () -> {
            try {
                return admin.fetchAllTopicList().getTopicList().contains(topic);
            } catch (Exception e) {
                return false;
            }
        }, () -> "not listed");
        TopicRouteData route = admin.examineTopicRouteInfo(topic);
        List<QueueData> qds = route.getQueueDatas();
        if (qds == null || qds.size() != 1) {
            ctx.fail.add("route of " + topic + ": expected 1 queue data, actual " + qds);
        } else {
            QueueData qd = qds.get(0);
            ctx.fail.check("route brokerName", brokerName, qd.getBrokerName());
            ctx.fail.check("route readQueueNums", 4, qd.getReadQueueNums());
            ctx.fail.check("route writeQueueNums", 4, qd.getWriteQueueNums());
            ctx.fail.check("route perm", perm, qd.getPerm());
        }
        String routedAddr = null;
        for (BrokerData bd : route.getBrokerDatas()) {
            if (brokerName.equals(bd.getBrokerName()) && bd.getBrokerAddrs() != null) {
                routedAddr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
            }
        }
        ctx.fail.check("route master address of " + brokerName, brokerAddr, routedAddr);

        // Produce and consume.
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "admin",
            i -> i % 2 == 0 ? "TagA" : "TagB");
        String group = ctx.group("cg");
        Received got = new Received();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                got.add("c1", m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.await("all " + sent.size() + " messages", () -> got.distinct() >= sent.size(),
            () -> got.distinct() + " distinct received");
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", sent, got.list(), false);
        String reached = reachConsumer(ctx, admin, group, topic, sent.get(0), got);

        // Consumer progress (the consumer commits every 5 s).
        Map<MessageQueue, Long> end = GroupOffsets.endOffsets(brokerName, sent);
        Map<Integer, String> progress = new TreeMap<>();
        Map<Integer, String> wantProgress = new TreeMap<>();
        for (Map.Entry<MessageQueue, Long> e : end.entrySet()) {
            wantProgress.put(e.getKey().getQueueId(), e.getValue() + "/" + e.getValue());
        }
        for (int q = 0; q < 4; q++) {
            wantProgress.putIfAbsent(q, "0/0");
        }
        ctx.awaitRemote("examineConsumeStats: consumer offset = broker offset on every queue", () -> {
            try {
                ConsumeStats cs = admin.examineConsumeStats(group);
                progress.clear();
                for (Map.Entry<MessageQueue, OffsetWrapper> e : cs.getOffsetTable().entrySet()) {
                    if (topic.equals(e.getKey().getTopic())) {
                        progress.put(e.getKey().getQueueId(),
                            e.getValue().getBrokerOffset() + "/" + e.getValue().getConsumerOffset());
                    }
                }
                return progress.equals(wantProgress);
            } catch (Exception e) {
                progress.put(-1, e.getClass().getSimpleName());
                return false;
            }
        }, () -> "broker/consumer offsets " + progress + ", expected " + wantProgress);

        // Look messages up: a sample of 10 across the run.
        List<Sent> sample = new ArrayList<>();
        for (int i = 0; i < sent.size(); i += Math.max(1, sent.size() / 10)) {
            sample.add(sent.get(i));
        }
        long endTime = System.currentTimeMillis() + 3_600_000L;
        for (Sent s : sample) {
            MessageExt m = admin.viewMessage(topic, s.offsetMsgId);
            checkFound(ctx, "viewMessage(" + s.offsetMsgId + ")", s, m);
        }
        for (Sent s : sample) {
            List<MessageExt> found = new ArrayList<>();
            ctx.awaitRemote("queryMessage by key " + s.key, () -> {
                try {
                    found.clear();
                    QueryResult r = admin.queryMessage(topic, s.key, 32, 0, endTime);
                    found.addAll(r.getMessageList());
                    return !found.isEmpty();
                } catch (Exception e) {
                    return false;
                }
            }, () -> "nothing found");
            ctx.fail.check("queryMessage(" + s.key + ") count", 1, found.size());
            if (!found.isEmpty()) {
                checkFound(ctx, "queryMessage(" + s.key + ")", s, found.get(0));
            }
            found.clear();
            QueryResult r = admin.queryMessageByUniqKey(clusterName, topic, s.msgId, 32, 0, endTime);
            found.addAll(r.getMessageList());
            ctx.fail.check("queryMessageByUniqKey(" + s.msgId + ") count", 1, found.size());
            if (!found.isEmpty()) {
                checkFound(ctx, "queryMessageByUniqKey(" + s.msgId + ")", s, found.get(0));
            }
        }
        return "cluster=" + clusterName + " broker=" + brokerName + "@" + brokerAddr + " topic queues=4/4 perm=RW"
            + " sent=" + sent.size() + " " + stats + " progress=" + progress + " lookedUp=" + sample.size() + "x3"
            + " " + reached;
    }

    /**
     * The admin reaches the online push consumer through the broker, as {@code mqadmin
     * consumerConnection}, {@code consumerStatus -s} and {@code queryMsgById -g -d} do: the group's
     * connection list names it; its running info (GET_CONSUMER_RUNNING_INFO, relayed by the broker)
     * holds its thread stack, which shows this very call; consumeMessageDirectly
     * (CONSUME_MESSAGE_DIRECTLY) of a sent message is CR_SUCCESS and hands it to the listener once
     * more; a client id that is not online is refused with SYSTEM_ERROR and Java's remark.
     */
    private static String reachConsumer(Ctx ctx, DefaultMQAdminExt admin, String group, String topic, Sent s,
        Received got) throws Exception {
        ConsumerConnection cc = admin.examineConsumerConnectionInfo(group);
        ctx.fail.check("consumer connections", 1, cc.getConnectionSet().size());
        if (cc.getConnectionSet().isEmpty()) {
            return "reached=none";
        }
        Connection conn = cc.getConnectionSet().iterator().next();
        ctx.fail.check("consumer connection language", "JAVA", String.valueOf(conn.getLanguage()));
        ConsumerRunningInfo info = admin.getConsumerRunningInfo(group, conn.getClientId(), true);
        String jstack = info == null ? null : info.getJstack();
        if (jstack == null || !jstack.contains(Admin.class.getName() + ".reachConsumer")) {
            ctx.fail.add("getConsumerRunningInfo(jstack): the stack does not show this call: "
                + (jstack == null ? null : jstack.substring(0, Math.min(200, jstack.length()))));
        }
        int before = got.count(s.body);
        ConsumeMessageDirectlyResult r = admin.consumeMessageDirectly(group, conn.getClientId(), topic, s.offsetMsgId);
        ctx.fail.check("consumeMessageDirectly result", CMResult.CR_SUCCESS, r.getConsumeResult());
        ctx.await("the message handed to the listener again", () -> got.count(s.body) > before,
            () -> got.count(s.body) + " deliveries of " + s.body);
        try {
            admin.getConsumerRunningInfo(group, "nobody@1", true);
            ctx.fail.add("getConsumerRunningInfo of a client that is not online succeeded");
        } catch (MQClientException e) {
            ctx.fail.check("not online: code", 1, e.getResponseCode());
            ctx.fail.check("not online: remark", "The Consumer <" + group + "> <nobody@1> not online",
                e.getErrorMessage());
        }
        return "reached=" + r.getConsumeResult();
    }

    private static void checkFound(Ctx ctx, String what, Sent s, MessageExt m) {
        if (m == null) {
            ctx.fail.add(what + ": nothing found");
            return;
        }
        Received.Got g = new Received().add("admin", m);
        ctx.fail.check(what + " body", s.body, g.body);
        ctx.fail.check(what + " topic", s.topic, g.topic);
        ctx.fail.check(what + " keys", s.key, g.keys);
        ctx.fail.check(what + " tags", s.tag, g.tags);
        ctx.fail.check(what + " user property", s.prop, g.prop);
        ctx.fail.check(what + " msgId", s.msgId, g.msgId);
        ctx.fail.check(what + " queue@offset", s.queueId + "@" + s.queueOffset, g.queueId + "@" + g.queueOffset);
        if (!g.crcOk) {
            ctx.fail.add(what + ": bodyCRC does not match the body");
        }
    }
}
