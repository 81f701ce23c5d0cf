package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.QueueData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Creates the topics and consumer groups the 5.x SDK suites (interop/sdk5) use, on every master of
 * the cluster, the way {@code mqadmin updateTopic -a +message.type=T} and {@code mqadmin
 * updateSubGroup} do (UPDATE_AND_CREATE_TOPIC with attributes, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP),
 * then reads every one back (GET_TOPIC_CONFIG; GET_SUBSCRIPTIONGROUP_CONFIG, which the proxy uses,
 * and GET_ALL_SUBSCRIPTIONGROUP_CONFIG, which the admin tools use) and waits until the name server
 * routes every topic (the proxy finds them there).
 *
 * <pre>
 * Sdk5Resources --namesrv HOST:PORT --suffix S [--cluster C] [--timeout SECONDS] LANG...
 * </pre>
 *
 * For each LANG: topics sdk5-LANG-{normal,fifo,delay,txn,redeliver,push}-S (4 read / 4 write queues,
 * message.type NORMAL/FIFO/DELAY/TRANSACTION/NORMAL/NORMAL) and groups
 * sdk5-LANG-{normal,fifo,delay,transaction,redeliver,push,dlq}-S (fifo: consumeMessageOrderly; push:
 * retryMaxTimes 2; dlq: for reading the push group's dead letters). stdout: one line per language and
 * a closing {@code OK} line (exit 0), or {@code FAIL resources: ...} lines (exit 1); exit 2 is a
 * usage error. The request codes sent, with their response codes, go to stderr.
 */
final class Sdk5Resources {

    /** Topic kind -> message.type. */
    static final Map<String, String> TOPICS = new LinkedHashMap<>();
    /** Group kinds: the scenario names, plus dlq. */
    static final List<String> GROUPS = List.of("normal", "fifo", "delay", "transaction", "redeliver", "push", "dlq");

    static {
        TOPICS.put("normal", "NORMAL");
        TOPICS.put("fifo", "FIFO");
        TOPICS.put("delay", "DELAY");
        TOPICS.put("txn", "TRANSACTION");
        TOPICS.put("redeliver", "NORMAL");
        TOPICS.put("push", "NORMAL");
    }

    private static final int QUEUES = 4;
    private static final int PERM = PermName.PERM_READ | PermName.PERM_WRITE;
    /** Push group: two retries, so three deliveries before the dead-letter queue. */
    private static final int PUSH_RETRY_MAX_TIMES = 2;

    private Sdk5Resources() {
    }

    private static void usage(String why) {
        System.err.println("error: " + why);
        System.err.println("usage: Sdk5Resources --namesrv HOST:PORT --suffix S [--cluster C] [--timeout SECONDS]"
            + " [--access-key K --secret-key S] LANG...");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        List<String> langs = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--")) {
                if (i + 1 >= args.length) {
                    usage("option " + args[i] + " needs a value");
                }
                opts.put(args[i].substring(2), args[++i]);
            } else {
                langs.add(args[i]);
            }
        }
        String namesrv = opts.get("namesrv");
        String suffix = opts.get("suffix");
        if (namesrv == null || suffix == null || langs.isEmpty()) {
            usage("--namesrv, --suffix and at least one language are required");
        }
        for (String k : opts.keySet()) {
            if (!Set.of("namesrv", "suffix", "cluster", "timeout", "access-key", "secret-key").contains(k)) {
                usage("unknown option --" + k);
            }
        }
        for (String l : langs) {
            if (!l.matches("[a-z0-9]+")) {
                usage("bad language name " + l);
            }
        }
        if (!suffix.matches("[A-Za-z0-9_-]+")) {
            usage("bad suffix " + suffix + " (letters, digits, '_' and '-' only)");
        }
        if (opts.containsKey("access-key") != opts.containsKey("secret-key")) {
            usage("--access-key and --secret-key go together");
        }
        String cluster = opts.getOrDefault("cluster", "DefaultCluster");
        long timeoutMillis = Long.parseLong(opts.getOrDefault("timeout", "60")) * 1000;

        // Logging before any client class loads: warnings to stderr (see Scenarios).
        if (System.getProperty("rmq.logback.configurationFile") == null) {
            System.setProperty("rmq.logback.configurationFile", "client-logback.xml");
        }

        Failures fail = new Failures();
        CodeRecorder hook = new CodeRecorder(namesrv);
        long start = System.nanoTime();
        RPCHook signed = hook;
        if (opts.containsKey("access-key")) {
            // A broker with authentication on refuses unsigned admin requests, as Java's does.
            signed = both(hook, new AclClientRPCHook(new SessionCredentials(opts.get("access-key"), opts.get("secret-key"))));
        }
        DefaultMQAdminExt admin = new DefaultMQAdminExt(signed, 10_000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("sdk5-resources-" + suffix + "-" + ProcessHandle.current().pid());
        List<String> lines = new ArrayList<>();
        try {
            admin.start();
            run(admin, fail, lines, cluster, suffix, langs, timeoutMillis);
        } catch (Exception e) {
            fail.add("exception: " + e);
        } finally {
            admin.shutdown();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.err.print("codes sdk5-resources:\n" + hook.summary());
        if (fail.isEmpty()) {
            for (String l : lines) {
                System.out.println(l);
            }
            System.out.printf("OK resources suffix=%s langs=%s time=%.1fs%n", suffix, String.join(",", langs), seconds);
            System.out.flush();
            System.exit(0);
        }
        System.out.printf("FAIL resources: %d difference(s) after %.1fs (suffix %s)%n", fail.size(), seconds, suffix);
        for (String f : fail.first(Failures.SHOWN)) {
            System.out.println("  " + f);
        }
        if (fail.size() > Failures.SHOWN) {
            System.out.println("  ... and " + (fail.size() - Failures.SHOWN) + " more");
        }
        System.out.flush();
        System.exit(1);
    }

    /** FIRST, then SECOND, around every request: recording codes and signing, in one hook. */
    private static RPCHook both(RPCHook first, RPCHook second) {
        return new RPCHook() {
            @Override
            public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
                first.doBeforeRequest(remoteAddr, request);
                second.doBeforeRequest(remoteAddr, request);
            }

            @Override
            public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
                first.doAfterResponse(remoteAddr, request, response);
                second.doAfterResponse(remoteAddr, request, response);
            }
        };
    }

    static String topicName(String lang, String kind, String suffix) {
        return "sdk5-" + lang + "-" + kind + "-" + suffix;
    }

    private static void run(DefaultMQAdminExt admin, Failures fail, List<String> lines, String cluster,
        String suffix, List<String> langs, long timeoutMillis) throws Exception {
        // The broker must have registered with the name server before there is anywhere to create.
        Map<String, String> masters = new TreeMap<>();
        String[] lastSeen = {"nothing yet"};
        if (!poll(timeoutMillis, 200, () -> {
            try {
                ClusterInfo info = admin.examineBrokerClusterInfo();
                masters.clear();
                masters.putAll(masters(info, cluster));
                lastSeen[0] = info.toJson();
                return !masters.isEmpty();
            } catch (Exception e) {
                lastSeen[0] = e.toString();
                return false;
            }
        })) {
            fail.add("no master broker of cluster " + cluster + " registered with the name server within "
                + timeoutMillis / 1000 + " s (last cluster info: " + lastSeen[0] + ")");
            return;
        }

        for (String addr : masters.values()) {
            for (String lang : langs) {
                for (Map.Entry<String, String> t : TOPICS.entrySet()) {
                    TopicConfig tc = new TopicConfig(topicName(lang, t.getKey(), suffix), QUEUES, QUEUES, PERM);
                    // "+key=value" adds or changes an attribute, as `mqadmin updateTopic -a` sends it.
                    Map<String, String> attributes = new HashMap<>();
                    attributes.put("+message.type", t.getValue());
                    tc.setAttributes(attributes);
                    admin.createAndUpdateTopicConfig(addr, tc);
                }
                for (String g : GROUPS) {
                    SubscriptionGroupConfig sg = new SubscriptionGroupConfig();
                    sg.setGroupName(topicName(lang, g, suffix));
                    sg.setConsumeMessageOrderly(g.equals("fifo"));
                    if (g.equals("push")) {
                        sg.setRetryMaxTimes(PUSH_RETRY_MAX_TIMES);
                    }
                    admin.createAndUpdateSubscriptionGroupConfig(addr, sg);
                }
            }
        }

        int defaultRetryMaxTimes = new SubscriptionGroupConfig().getRetryMaxTimes();
        for (String addr : masters.values()) {
            for (String lang : langs) {
                for (Map.Entry<String, String> t : TOPICS.entrySet()) {
                    String topic = topicName(lang, t.getKey(), suffix);
                    TopicConfig tc = admin.examineTopicConfig(addr, topic);
                    String what = "GET_TOPIC_CONFIG " + topic + " on " + addr;
                    if (tc == null) {
                        fail.add(what + ": not found");
                        continue;
                    }
                    fail.check(what + " topicName", topic, tc.getTopicName());
                    fail.check(what + " readQueueNums", QUEUES, tc.getReadQueueNums());
                    fail.check(what + " writeQueueNums", QUEUES, tc.getWriteQueueNums());
                    fail.check(what + " perm", PERM, tc.getPerm());
                    fail.check(what + " attributes", Map.of("message.type", t.getValue()),
                        tc.getAttributes() == null ? Map.of() : tc.getAttributes());
                }
                for (String g : GROUPS) {
                    String group = topicName(lang, g, suffix);
                    boolean orderly = g.equals("fifo");
                    int retryMaxTimes = g.equals("push") ? PUSH_RETRY_MAX_TIMES : defaultRetryMaxTimes;
                    SubscriptionGroupConfig one = admin.getDefaultMQAdminExtImpl().getMqClientInstance()
                        .getMQClientAPIImpl().getSubscriptionGroupConfig(addr, group, 10_000);
                    checkGroup(fail, "GET_SUBSCRIPTIONGROUP_CONFIG " + group + " on " + addr, group, orderly,
                        retryMaxTimes, one);
                    // examineSubscriptionGroupConfig reads the whole table (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
                    checkGroup(fail, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG entry " + group + " on " + addr, group, orderly,
                        retryMaxTimes, admin.examineSubscriptionGroupConfig(addr, group));
                }
            }
        }

        // The proxy looks topics up through the name server: wait until it routes each one, with the
        // queues of every master.
        for (String lang : langs) {
            for (String kind : TOPICS.keySet()) {
                String topic = topicName(lang, kind, suffix);
                String[] last = {"no answer"};
                if (!poll(timeoutMillis, 200, () -> {
                    try {
                        TopicRouteData route = admin.examineTopicRouteInfo(topic);
                        Set<String> routed = new TreeSet<>();
                        for (QueueData qd : route.getQueueDatas()) {
                            if (qd.getReadQueueNums() == QUEUES && qd.getWriteQueueNums() == QUEUES
                                && qd.getPerm() == PERM) {
                                routed.add(qd.getBrokerName());
                            }
                        }
                        last[0] = route.getQueueDatas().toString();
                        return routed.equals(masters.keySet());
                    } catch (Exception e) {
                        last[0] = e.toString();
                        return false;
                    }
                })) {
                    fail.add("name-server route of " + topic + ": expected " + QUEUES + "/" + QUEUES + " queues, perm "
                        + PERM + " on " + masters.keySet() + ", actual " + last[0]);
                }
            }
            lines.add("created " + topicName(lang, "*", suffix) + ": topics " + String.join(",", TOPICS.keySet())
                + " groups " + String.join(",", GROUPS) + " on " + masters);
        }
    }

    private static void checkGroup(Failures fail, String what, String group, boolean orderly, int retryMaxTimes,
        SubscriptionGroupConfig sg) {
        if (sg == null) {
            fail.add(what + ": not found");
            return;
        }
        fail.check(what + " groupName", group, sg.getGroupName());
        fail.check(what + " consumeMessageOrderly", orderly, sg.isConsumeMessageOrderly());
        fail.check(what + " retryMaxTimes", retryMaxTimes, sg.getRetryMaxTimes());
        fail.check(what + " consumeEnable", true, sg.isConsumeEnable());
    }

    /** Master brokers of CLUSTER: broker name -> address. */
    private static Map<String, String> masters(ClusterInfo info, String cluster) {
        Map<String, String> out = new TreeMap<>();
        if (info == null || info.getClusterAddrTable() == null || info.getBrokerAddrTable() == null) {
            return out;
        }
        Set<String> names = info.getClusterAddrTable().get(cluster);
        if (names == null) {
            return out;
        }
        for (String name : names) {
            BrokerData bd = info.getBrokerAddrTable().get(name);
            if (bd != null && bd.getBrokerAddrs() != null && bd.getBrokerAddrs().get(MixAll.MASTER_ID) != null) {
                out.put(name, bd.getBrokerAddrs().get(MixAll.MASTER_ID));
            }
        }
        return out;
    }

    interface Cond {
        boolean holds() throws InterruptedException;
    }

    /** Polls COND every PERIOD ms until it holds (true) or TIMEOUT ms pass (false). */
    private static boolean poll(long timeoutMillis, long periodMillis, Cond cond) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!cond.holds()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(periodMillis);
        }
        return true;
    }
}
