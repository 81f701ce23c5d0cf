package dev.silo.interop.client;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** What the 5.x-only scenarios share about rocketmq-tools' admin client (not built for the 4.9.8 client). */
final class AdminClients {

    private AdminClients() {
    }

    /** A started DefaultMQAdminExt whose requests go through HOOK, shut down at the end of the run. */
    static DefaultMQAdminExt start(Ctx ctx, RPCHook hook) throws MQClientException {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(hook, 10_000);
        admin.setNamesrvAddr(ctx.namesrv);
        admin.setInstanceName("silo-" + ctx.suffix + "-admin");
        admin.start();
        ctx.closeLater(admin::shutdown);
        return admin;
    }

    /** The address of the first master broker CLUSTER lists, or null. */
    static String masterAddr(ClusterInfo cluster) {
        if (cluster == null || cluster.getBrokerAddrTable() == null) {
            return null;
        }
        for (BrokerData bd : cluster.getBrokerAddrTable().values()) {
            if (bd.getBrokerAddrs() != null && bd.getBrokerAddrs().get(MixAll.MASTER_ID) != null) {
                return bd.getBrokerAddrs().get(MixAll.MASTER_ID);
            }
        }
        return null;
    }
}
