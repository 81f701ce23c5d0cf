package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.body.AclInfo;
import org.apache.rocketmq.remoting.protocol.body.UserInfo;
import org.apache.rocketmq.remoting.protocol.header.GetMaxOffsetRequestHeader;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Access control (RocketMQ 5.3's ACL 2.0) on a broker started with authenticationEnabled and
 * authorizationEnabled and a super user (--admin-user, --admin-password). As the super user,
 * DefaultMQAdminExt creates two topics, a normal user and its ACL (Pub and Sub on the topic, Sub on
 * the group, Pub allowed on every topic of the run's prefix but denied on the second topic), then
 * reads them back (getUser, listUser, getAcl, listAcl). The normal user's producer sends N
 * messages, every one SEND_OK, and its push consumer receives exactly those N; its send to the
 * denied topic is refused with NO_PERMISSION and the words "the decision is deny". Raw requests
 * (GET_MAX_OFFSET) to the broker then check each refusal's code and remark: unsigned, signed with a
 * wrong secret, by an unknown user, a signed request whose field was changed after signing, a
 * signed request for a resource the user has no policy for, and one by a disabled user; the same
 * request signed by the super user succeeds. Finally the normal user is deleted, and its requests
 * are refused as by an unknown user.
 */
final class Acl implements Scenario {

    private static final int GET_MAX_OFFSET = 30;

    @Override
    public String run(Ctx ctx) throws Exception {
        String adminUser = ctx.options.getOrDefault("admin-user", "rocketmq");
        String adminPassword = ctx.options.getOrDefault("admin-password", "12345678");
        RPCHook superHook = signed(ctx, adminUser, adminPassword);

        DefaultMQAdminExt admin = AdminClients.start(ctx, superHook);
        String brokerAddr = AdminClients.masterAddr(admin.examineBrokerClusterInfo());
        if (brokerAddr == null) {
            ctx.fail.add("examineBrokerClusterInfo (as the super user) lists no master");
            return "";
        }

        String topic = ctx.topic();
        String denied = ctx.name("denied");
        String group = ctx.group("cg");
        String prefix = "silo_" + ctx.scenario.replace('-', '_') + "_";
        int perm = PermName.PERM_READ | PermName.PERM_WRITE;
        admin.createAndUpdateTopicConfig(brokerAddr, new TopicConfig(topic, 4, 4, perm));
        admin.createAndUpdateTopicConfig(brokerAddr, new TopicConfig(denied, 1, 1, perm));

        String user = ctx.name("user");
        String password = "pw-" + ctx.suffix;
        admin.createUser(brokerAddr, user, password, "Normal");
        String subject = "User:" + user;
        admin.createAcl(brokerAddr, subject, List.of("Topic:" + topic), List.of("Pub", "Sub"), null, "Allow");
        admin.createAcl(brokerAddr, subject, List.of("Group:" + group), List.of("Sub"), null, "Allow");
        admin.createAcl(brokerAddr, subject, List.of("Topic:" + prefix + "*"), List.of("Pub"), null, "Allow");
        admin.createAcl(brokerAddr, subject, List.of("Topic:" + denied), List.of("Pub"), null, "Deny");

        UserInfo got = admin.getUser(brokerAddr, user);
        if (got == null || !user.equals(got.getUsername()) || !"Normal".equals(got.getUserType())
            || !"enable".equals(got.getUserStatus())) {
            ctx.fail.add("getUser: want " + user + " Normal enable, got " + describe(got));
        }
        List<UserInfo> listed = admin.listUser(brokerAddr, user);
        if (listed == null || listed.size() != 1 || !user.equals(listed.get(0).getUsername())) {
            ctx.fail.add("listUser(filter " + user + "): want just " + user + ", got " + describeUsers(listed));
        }
        AclInfo acl = admin.getAcl(brokerAddr, subject);
        Set<String> entries = entries(acl);
        Set<String> wantEntries = Set.of("Topic:" + topic + " [Pub, Sub] Allow", "Group:" + group + " [Sub] Allow",
            "Topic:" + prefix + "* [Pub] Allow", "Topic:" + denied + " [Pub] Deny");
        if (!entries.equals(wantEntries)) {
            ctx.fail.add("getAcl(" + subject + "): want " + wantEntries + ", got " + entries);
        }
        List<AclInfo> acls = admin.listAcl(brokerAddr, subject, denied);
        Set<String> filtered = new java.util.TreeSet<>();
        if (acls != null) {
            acls.forEach(a -> filtered.addAll(entries(a)));
        }
        if (!filtered.equals(Set.of("Topic:" + denied + " [Pub] Deny"))) {
            ctx.fail.add("listAcl(" + subject + ", " + denied + "): want the one entry on " + denied + ", got " + filtered);
        }

        // The normal user produces and consumes.
        RPCHook userHook = signed(ctx, user, password);
        DefaultMQProducer producer = new DefaultMQProducer(ctx.name("pg"), userHook);
        producer.setNamesrvAddr(ctx.namesrv);
        producer.setInstanceName("silo-" + ctx.suffix + "-p");
        producer.start();
        ctx.closeLater(producer::shutdown);
        int n = ctx.count(100);
        for (int i = 0; i < n; i++) {
            String key = "k" + i;
            SendResult r = producer.send(Ctx.message(topic, "TagA", key, "acl-" + i));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                ctx.fail.add("send " + key + ": " + r.getSendStatus());
            }
        }
        try {
            SendResult r = producer.send(Ctx.message(denied, "TagA", "denied", "denied"));
            ctx.fail.add("send to the denied topic " + denied + " succeeded: " + r);
        } catch (MQClientException e) {
            // The producer retries, then reports the broker's refusal as the cause.
            if (e.getCause() instanceof MQBrokerException) {
                MQBrokerException b = (MQBrokerException) e.getCause();
                expectRefusal(ctx, "send to the denied topic", b.getResponseCode(), b.getErrorMessage(),
                    subject + " has no permission to access Topic:" + denied + " from ", ", the decision is deny.");
            } else {
                ctx.fail.add("send to the denied topic: want the broker's refusal, got " + e);
            }
        }

        Map<String, Integer> received = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group, userHook,
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        consumer.setNamesrvAddr(ctx.namesrv);
        consumer.setInstanceName("silo-" + ctx.suffix + "-c");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                received.merge(m.getKeys(), 1, Integer::sum);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.closeLater(consumer::shutdown);
        ctx.await(n + " messages consumed by the normal user", () -> received.size() >= n,
            () -> received.size() + " received");
        ctx.settle();
        for (int i = 0; i < n; i++) {
            Integer times = received.get("k" + i);
            if (times == null || times != 1) {
                ctx.fail.add("k" + i + " received " + (times == null ? 0 : times) + " times, want once");
            }
        }
        if (received.size() != n) {
            ctx.fail.add("received " + received.size() + " distinct keys, want " + n);
        }

        // Raw requests: each refusal's code and words.
        NettyRemotingClient raw = new NettyRemotingClient(new NettyClientConfig());
        raw.start();
        ctx.closeLater(raw::shutdown);
        RemotingCommand ok = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(adminUser, adminPassword)), null);
        if (ok.getCode() != ResponseCode.SUCCESS) {
            ctx.fail.add("GET_MAX_OFFSET signed by the super user: code " + ok.getCode() + " " + ok.getRemark());
        }
        RemotingCommand r = probe(raw, brokerAddr, topic, null, null);
        expectRefusal(ctx, "unsigned request", r.getCode(), r.getRemark(), "username cannot be null.", "");
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(user, "wrong")), null);
        expectRefusal(ctx, "wrong secret", r.getCode(), r.getRemark(), "check signature failed.", "");
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials("nobody_" + ctx.suffix, "x")), null);
        expectRefusal(ctx, "unknown user", r.getCode(), r.getRemark(), "User:nobody_" + ctx.suffix + " is not found.", "");
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(user, password)), "tampered");
        expectRefusal(ctx, "a field changed after signing", r.getCode(), r.getRemark(), "check signature failed.", "");
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(user, password)), null);
        expectRefusal(ctx, "Get on a topic with only Pub and Sub", r.getCode(), r.getRemark(),
            subject + " has no permission to access Topic:" + topic + " from ", ", no matched policies.");

        admin.updateUser(brokerAddr, user, null, null, "disable");
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(user, password)), null);
        expectRefusal(ctx, "disabled user", r.getCode(), r.getRemark(), "User:" + user + " is disabled.", "");

        admin.deleteUser(brokerAddr, user);
        if (admin.getUser(brokerAddr, user) != null) {
            ctx.fail.add("getUser after deleteUser still finds " + user);
        }
        r = probe(raw, brokerAddr, topic, new AclClientRPCHook(new SessionCredentials(user, password)), null);
        expectRefusal(ctx, "deleted user", r.getCode(), r.getRemark(), "User:" + user + " is not found.", "");
        return "sent=" + n + " received=" + received.size() + " refusals=8";
    }

    /** GET_MAX_OFFSET of TOPIC queue 0, signed by HOOK (unsigned if null); CHANGE: a field altered after signing. */
    private static RemotingCommand probe(NettyRemotingClient raw, String addr, String topic, RPCHook hook, String change)
        throws Exception {
        GetMaxOffsetRequestHeader h = new GetMaxOffsetRequestHeader();
        h.setTopic(topic);
        h.setQueueId(0);
        RemotingCommand request = RemotingCommand.createRequestCommand(GET_MAX_OFFSET, h);
        request.makeCustomHeaderToNet();
        if (hook != null) {
            hook.doBeforeRequest(addr, request);
        }
        if (change != null) {
            request.getExtFields().put(change, "1");
        }
        return raw.invokeSync(addr, request, 5_000);
    }

    private static void expectRefusal(Ctx ctx, String what, int code, String remark, String head, String tail) {
        if (code != ResponseCode.NO_PERMISSION || remark == null || !remark.startsWith(head) || !remark.endsWith(tail)) {
            ctx.fail.add(what + ": want NO_PERMISSION (16) \"" + head + "..." + tail + "\", got " + code + " \"" + remark + "\"");
        }
    }

    /** The recording hook, then signing as USER (the signature covers what the recorder saw). */
    private static RPCHook signed(Ctx ctx, String user, String password) {
        AclClientRPCHook acl = new AclClientRPCHook(new SessionCredentials(user, password));
        return new RPCHook() {
            @Override
            public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
                ctx.hook.doBeforeRequest(remoteAddr, request);
                acl.doBeforeRequest(remoteAddr, request);
            }

            @Override
            public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
                ctx.hook.doAfterResponse(remoteAddr, request, response);
            }
        };
    }


    private static Set<String> entries(AclInfo acl) {
        Set<String> out = new java.util.TreeSet<>();
        if (acl == null || acl.getPolicies() == null) {
            return out;
        }
        for (AclInfo.PolicyInfo p : acl.getPolicies()) {
            if (p.getEntries() == null) {
                continue;
            }
            for (AclInfo.PolicyEntryInfo e : p.getEntries()) {
                out.add(e.getResource() + " " + e.getActions() + " " + e.getDecision());
            }
        }
        return out;
    }

    private static String describe(UserInfo u) {
        return u == null ? "null" : u.getUsername() + " " + u.getUserType() + " " + u.getUserStatus();
    }

    private static String describeUsers(List<UserInfo> users) {
        if (users == null) {
            return "null";
        }
        List<String> out = new ArrayList<>();
        users.forEach(u -> out.add(describe(u)));
        return out.toString();
    }
}
