package dev.silo.interop.server;

import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;

/**
 * Readiness probe used by rocketmq-server.sh: waits (bounded) until the broker at BROKER_ADDR is
 * registered in the name server's cluster list (as a master, or under BROKER_ID), the name server has a route for the
 * auto-create topic TBW102 (needed for sends to new topics), and the broker itself answers
 * GET_ALL_TOPIC_CONFIG, signed as -Dawait.accessKey/-Dawait.secretKey when given. (Not GET_BROKER_RUNTIME_INFO: the Apache broker fails that one with a
 * NoSuchElementException until its statistics have a first sample, about a second after boot.)
 *
 * <pre>AwaitBroker NAMESRV_ADDR BROKER_ADDR TIMEOUT_SECONDS [BROKER_ID]</pre>
 *
 * Exit status 0 when ready, 1 on timeout (the last reason is printed to stderr), 2 on usage error.
 */
public final class AwaitBroker {

    private AwaitBroker() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 4) {
            System.err.println("usage: AwaitBroker NAMESRV_ADDR BROKER_ADDR TIMEOUT_SECONDS [BROKER_ID]");
            System.exit(2);
        }
        if (System.getProperty("rmq.logback.configurationFile") == null) {
            System.setProperty("rmq.logback.configurationFile", "probe-logback.xml");
        }
        String namesrv = args[0];
        String broker = args[1];
        long deadline = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
        long brokerId = args.length == 4 ? Long.parseLong(args[3]) : MixAll.MASTER_ID;
        NettyRemotingClient client = new NettyRemotingClient(new NettyClientConfig());
        // A broker with authentication on answers only signed requests (-Dawait.accessKey/secretKey).
        String accessKey = System.getProperty("await.accessKey", "");
        if (!accessKey.isEmpty()) {
            client.registerRPCHook(new AclClientRPCHook(
                new SessionCredentials(accessKey, System.getProperty("await.secretKey", ""))));
        }
        client.start();
        String reason = "not asked yet";
        try {
            while (System.nanoTime() < deadline) {
                try {
                    reason = check(client, namesrv, broker, brokerId);
                    if (reason == null) {
                        System.exit(0);
                    }
                } catch (Exception e) {
                    reason = e.toString();
                }
                Thread.sleep(200);
            }
        } finally {
            client.shutdown();
        }
        System.err.println("broker " + broker + " not ready via name server " + namesrv + ": " + reason);
        System.exit(1);
    }

    /** Returns null when ready, else why not. */
    private static String check(NettyRemotingClient client, String namesrv, String broker, long brokerId)
        throws Exception {
        RemotingCommand resp = client.invokeSync(namesrv,
            RemotingCommand.createRequestCommand(RequestCode.GET_BROKER_CLUSTER_INFO, null), 3000);
        if (resp.getCode() != ResponseCode.SUCCESS || resp.getBody() == null) {
            return "GET_BROKER_CLUSTER_INFO answered " + resp.getCode() + " " + resp.getRemark();
        }
        ClusterInfo info = ClusterInfo.decode(resp.getBody(), ClusterInfo.class);
        boolean registered = false;
        if (info.getBrokerAddrTable() != null) {
            for (BrokerData data : info.getBrokerAddrTable().values()) {
                Map<Long, String> addrs = data.getBrokerAddrs();
                if (addrs != null && broker.equals(addrs.get(brokerId))) {
                    registered = true;
                }
            }
        }
        if (!registered) {
            return "no broker " + brokerId + " at " + broker + " in the cluster list yet";
        }
        GetRouteInfoRequestHeader header = new GetRouteInfoRequestHeader();
        header.setTopic(TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC);
        resp = client.invokeSync(namesrv,
            RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, header), 3000);
        if (resp.getCode() != ResponseCode.SUCCESS) {
            return "no route for " + TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC + " yet (" + resp.getCode() + ")";
        }
        resp = client.invokeSync(broker,
            RemotingCommand.createRequestCommand(RequestCode.GET_ALL_TOPIC_CONFIG, null), 3000);
        if (resp.getCode() != ResponseCode.SUCCESS) {
            return "GET_ALL_TOPIC_CONFIG answered " + resp.getCode() + " " + resp.getRemark();
        }
        return null;
    }
}
