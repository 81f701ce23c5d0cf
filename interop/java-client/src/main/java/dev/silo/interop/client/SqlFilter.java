package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * SQL92 property filtering on the broker (needs {@code enablePropertyFilter=true}).
 *
 * <p>Sends N messages with user properties {@code seq} (the index), {@code a} (index mod 10),
 * {@code code} (index mod 20, zero-padded to three digits: "007"), {@code region} (eu, us, apac,
 * latam, in blocks of ten), {@code vip} ('true' every third, else 'false'), {@code b} ("x0".."x2",
 * missing on every fifth) and tags TagA/TagB in turn. Then one push consumer per expression (each a
 * new group, from the first offset) subscribed with {@code MessageSelector.bySql}: each must get
 * exactly the messages the expression selects, once each (the expected sets are computed here, one
 * explicit predicate per expression). The client does not evaluate SQL itself, so whatever a
 * listener gets is what the broker returned. A {@code DefaultLitePullConsumer} subscribed the same
 * way (its pulls carry the expression) must poll exactly its set too, and so must a
 * DefaultMQPullConsumer pulling with the selector (the expression only in the pull header).
 *
 * <p>Then invalid expressions: starting a consumer with one must fail in the client's
 * CHECK_CLIENT_CONFIG with SUBSCRIPTION_PARSE_FAILED (23). Two expressions with text after a
 * complete expression, which Apache ignores, may be either refused or obeyed as their prefix. An
 * invalid expression in a pull header alone may be refused or (Apache) let every message through;
 * the latter is a difference with --strict. With {@code --property-filter off} (a broker without
 * enablePropertyFilter) only the refusals are checked: every SQL subscription, valid or not, and
 * the pull must fail with SYSTEM_ERROR (1) "The broker does not support consumer to filter message
 * by SQL92".
 */
final class SqlFilter implements Scenario {

    private static final String[] REGIONS = {"eu", "us", "apac", "latam"};
    private static final int SUBSCRIPTION_PARSE_FAILED = 23;
    private static final int SYSTEM_ERROR = 1;
    private static final String DISABLED_REMARK = "The broker does not support consumer to filter message by SQL92";

    /** One subscription and the messages it must select, decided from the properties sent. */
    private static final class Case {
        final String name;
        final String sql;
        final Predicate<Map<String, String>> wants;
        /**
         * Whether a broker may instead refuse the expression (with SUBSCRIPTION_PARSE_FAILED): text
         * after a complete expression, which Apache 5.3.3 ignores.
         */
        final boolean lenient;

        Case(String name, String sql, Predicate<Map<String, String>> wants) {
            this(name, sql, wants, false);
        }

        Case(String name, String sql, Predicate<Map<String, String>> wants, boolean lenient) {
            this.name = name;
            this.sql = sql;
            this.wants = wants;
            this.lenient = lenient;
        }
    }

    private static int a(Map<String, String> p) {
        return Integer.parseInt(p.get("a"));
    }

    private static int code(Map<String, String> p) {
        return Integer.parseInt(p.get("code"));
    }

    private static String region(Map<String, String> p) {
        return p.get("region");
    }

    private static boolean vip(Map<String, String> p) {
        return "true".equals(p.get("vip"));
    }

    private static boolean tagA(Map<String, String> p) {
        return "TagA".equals(p.get("TAGS"));
    }

    private static int seq(Map<String, String> p) {
        return Integer.parseInt(p.get("seq"));
    }

    /**
     * The subscriptions. Values of properties are strings on the broker; a number literal on the
     * other side converts the property to that number type (so "007" = 7), a string literal compares
     * as a string; a missing property makes a comparison unknown, which never matches, not even
     * negated (NOT, &lt;&gt;, NOT IN); NOT CONTAINS / NOT STARTSWITH / NOT ENDSWITH are false for a
     * missing property.
     */
    private static List<Case> cases() {
        List<Case> c = new ArrayList<>();
        c.add(new Case("gt", "a > 5", p -> a(p) > 5));
        // Keywords are case-insensitive.
        c.add(new Case("between", "a between 2 and 4", p -> a(p) >= 2 && a(p) <= 4));
        c.add(new Case("not-between", "a NOT BETWEEN 2 AND 7", p -> a(p) < 2 || a(p) > 7));
        c.add(new Case("float-literals", "a < 2.5 OR a >= 8.5", p -> a(p) <= 2 || a(p) == 9));
        // A string literal: string equality ('5' = "5").
        c.add(new Case("string-eq-number", "a = '5'", p -> a(p) == 5));
        // A number literal: the property is read as a number ("007" = 7).
        c.add(new Case("padded-eq-int", "code = 7", p -> code(p) == 7));
        // As strings, "012" is not "7" or "12", but is "012".
        c.add(new Case("padded-as-strings", "code = '012' OR code = '7' OR code = '12'", p -> code(p) == 12));
        c.add(new Case("padded-gt-int", "code > 15", p -> code(p) > 15));
        c.add(new Case("eq", "region = 'eu'", p -> region(p).equals("eu")));
        c.add(new Case("ne", "region <> 'eu'", p -> !region(p).equals("eu")));
        c.add(new Case("in", "region IN ('eu', 'us')", p -> region(p).equals("eu") || region(p).equals("us")));
        c.add(new Case("not-in", "region NOT IN ('eu', 'us')",
            p -> !region(p).equals("eu") && !region(p).equals("us")));
        c.add(new Case("is-null", "b IS NULL", p -> p.get("b") == null));
        c.add(new Case("is-not-null", "b IS NOT NULL", p -> p.get("b") != null));
        // Missing b: unknown, not true.
        c.add(new Case("ne-missing", "b <> 'x1'", p -> p.get("b") != null && !p.get("b").equals("x1")));
        c.add(new Case("and-or-not", "(a > 7 OR region = 'apac') AND NOT (vip = 'true')",
            p -> (a(p) > 7 || region(p).equals("apac")) && !vip(p)));
        c.add(new Case("nested-not", "NOT ((a < 3 OR a > 6) AND region IN ('eu', 'latam')) AND TAGS = 'TagA'",
            p -> !((a(p) < 3 || a(p) > 6) && (region(p).equals("eu") || region(p).equals("latam"))) && tagA(p)));
        // A boolean literal against a string property: the property is read as a boolean.
        c.add(new Case("eq-true-literal", "vip = TRUE AND TAGS <> 'TagA'", p -> vip(p) && !tagA(p)));
        c.add(new Case("true", "TRUE", p -> true));
        c.add(new Case("false-or", "FALSE OR seq = 7", p -> seq(p) == 7));
        c.add(new Case("tags", "TAGS = 'TagA'", p -> tagA(p)));
        // Keywords are case-insensitive, property names are not: "tags" is a missing property.
        c.add(new Case("name-case", "seq = 6 OR tags = 'TagA'", p -> seq(p) == 6));
        c.add(new Case("startswith", "region STARTSWITH 'a'", p -> region(p).startsWith("a")));
        c.add(new Case("endswith-contains", "region ENDSWITH 'am' OR region CONTAINS 'u'",
            p -> region(p).endsWith("am") || region(p).contains("u")));
        c.add(new Case("not-contains-missing", "b NOT CONTAINS '1'",
            p -> p.get("b") != null && !p.get("b").contains("1")));
        c.add(new Case("not-startswith-endswith", "region NOT STARTSWITH 'e' AND region NOT ENDSWITH 's'",
            p -> !region(p).startsWith("e") && !region(p).endsWith("s")));
        // "eu" > 5 cannot be evaluated (not a number): an error in evaluation means no match, unless
        // the OR was already decided by its left side.
        c.add(new Case("eval-error", "seq = 3 OR region > 5", p -> seq(p) == 3));
        // A bare property in a boolean position is never true: values are strings, not booleans.
        c.add(new Case("bare-property", "vip OR seq = 4", p -> seq(p) == 4));
        // Apache's parser stops after the first complete expression and ignores the rest (its
        // grammar does not require the end of the input): "a > 1)" is "a > 1", and
        // "seq = 5 OR a LIKE 'x%'" is "seq = 5 OR a" (there is no LIKE). Refusing them with
        // SUBSCRIPTION_PARSE_FAILED is accepted too; the PASS line says which happened.
        c.add(new Case("trailing-paren", "a > 1)", p -> a(p) > 1, true));
        c.add(new Case("trailing-like", "seq = 5 OR a LIKE 'x%'", p -> seq(p) == 5, true));
        return c;
    }

    /** Expressions the broker must refuse to compile. */
    private static final String[] INVALID = {
        "a >",
        "(a > 1",
        "a or",
        "NOT",
        "region = 'eu",
        "region > 'eu'",
        "a IN (1, 2)",
        "a = NULL",
    };

    /** The lite pull consumer's subscription. */
    private static final Case LITE = new Case("lite-pull", "region IN ('eu', 'us') AND a >= 5 AND b IS NOT NULL",
        p -> (region(p).equals("eu") || region(p).equals("us")) && a(p) >= 5 && p.get("b") != null);

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        boolean enabled = !"off".equals(ctx.options.getOrDefault("property-filter", "on"));
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        Map<String, Map<String, String>> props = new HashMap<>();
        List<Sent> sent = send(ctx, producer, topic, enabled ? ctx.count : ctx.count(10), props);
        if (!enabled) {
            return disabled(ctx, topic, sent);
        }

        // What each pull carried (filter fields of the request header) and what it got back, per group.
        Map<String, String> pullHeaders = new ConcurrentHashMap<>();
        Map<String, Map<Integer, Integer>> pullCodes = new ConcurrentHashMap<>();
        ctx.hook.onPullResponse((req, resp) -> {
            String h = pullFilterFields(req);
            String[] gt = groupAndTopic(req);
            if (h != null && gt != null && topic.equals(gt[1])) {
                pullHeaders.putIfAbsent(gt[0], h);
                pullCodes.computeIfAbsent(gt[0], k -> new ConcurrentHashMap<>()).merge(resp.getCode(), 1, Integer::sum);
            }
        });

        List<Case> cases = cases();
        Map<String, List<Sent>> wanted = new LinkedHashMap<>();
        Map<String, Received> got = new LinkedHashMap<>();
        Map<String, String> groups = new LinkedHashMap<>();
        Map<String, String> trailing = new TreeMap<>();
        for (Case c : cases) {
            List<Sent> w = new ArrayList<>();
            for (Sent s : sent) {
                if (c.wants.test(props.get(s.body))) {
                    w.add(s);
                }
            }
            wanted.put(c.name, w);
            Received r = new Received();
            got.put(c.name, r);
            String group = ctx.group("cg_" + c.name.replace('-', '_'));
            groups.put(c.name, group);
            DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
            consumer.subscribe(topic, MessageSelector.bySql(c.sql));
            consumer.setConsumeThreadMin(1);
            consumer.setConsumeThreadMax(1);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
                for (MessageExt m : msgs) {
                    r.add(c.name, m);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            if (!c.lenient) {
                consumer.start();
                continue;
            }
            Map<String, Integer> refusedCodes = new TreeMap<>();
            int failsBefore = ctx.fail.size();
            try {
                consumer.start();
                trailing.put(c.name, "ignored");
            } catch (MQClientException e) {
                checkRefused(ctx, "push consumer [" + c.sql + "]", () -> {
                    throw e;
                }, SUBSCRIPTION_PARSE_FAILED, null, refusedCodes);
                trailing.put(c.name, ctx.fail.size() == failsBefore ? "refused" : "failed");
                wanted.put(c.name, new ArrayList<>());
            }
        }

        // The lite pull consumer, subscribed with the same kind of selector.
        List<Sent> liteWanted = new ArrayList<>();
        for (Sent s : sent) {
            if (LITE.wants.test(props.get(s.body))) {
                liteWanted.add(s);
            }
        }
        String liteGroup = ctx.group("cg_lite");
        DefaultLitePullConsumer lite = ctx.litePullConsumer(liteGroup);
        lite.subscribe(topic, MessageSelector.bySql(LITE.sql));
        lite.start();
        Received liteGot = new Received();
        long deadline = System.nanoTime() + ctx.timeoutMillis * 1_000_000L;
        while (liteGot.distinct() < liteWanted.size() && System.nanoTime() < deadline) {
            for (MessageExt m : lite.poll(200)) {
                liteGot.add("lite", m);
            }
        }

        ctx.await("every SQL consumer's messages", () -> {
            for (Case c : cases) {
                if (got.get(c.name).distinct() < wanted.get(c.name).size()) {
                    return false;
                }
            }
            return true;
        }, () -> {
            StringBuilder sb = new StringBuilder();
            for (Case c : cases) {
                int have = got.get(c.name).distinct();
                int want = wanted.get(c.name).size();
                if (have < want) {
                    sb.append(sb.length() == 0 ? "" : ", ").append(c.name).append(' ').append(have).append('/')
                        .append(want);
                }
            }
            return "still short: " + sb;
        });
        // Strays and duplicates: the push consumers keep listening, the lite one keeps polling.
        long settle = System.nanoTime() + ctx.settleMillis * 1_000_000L;
        while (System.nanoTime() < settle) {
            for (MessageExt m : lite.poll(100)) {
                liteGot.add("lite", m);
            }
        }
        if (liteGot.distinct() < liteWanted.size()) {
            ctx.fail.add("lite-pull: timed out after " + ctx.timeoutMillis / 1000 + " s with " + liteGot.distinct()
                + " of " + liteWanted.size() + " messages");
        }

        StringBuilder sizes = new StringBuilder();
        for (Case c : cases) {
            Verify.exactlyOnce(ctx.fail, c.name + " [" + c.sql + "]", wanted.get(c.name), got.get(c.name).list(), true);
            sizes.append(sizes.length() == 0 ? "" : ",").append(c.name).append('=').append(wanted.get(c.name).size());
        }
        Verify.exactlyOnce(ctx.fail, "lite-pull [" + LITE.sql + "]", liteWanted, liteGot.list(), true);
        sizes.append(",lite-pull=").append(liteWanted.size());

        String invalid = invalid(ctx, topic, SUBSCRIPTION_PARSE_FAILED, null);

        // DefaultMQPullConsumer: the expression only in the pull header (no CHECK_CLIENT_CONFIG, no
        // heartbeat subscription). A valid one selects the same set as the lite pull consumer.
        Received pulled = new Received();
        Map<String, Integer> statuses = pullAll(ctx, topic, LITE.sql, pulled);
        Verify.exactlyOnce(ctx.fail, "pull consumer [" + LITE.sql + "]", liteWanted, pulled.list(), true);
        // An invalid one: Apache builds no filter for it and then lets every message through.
        String badPull;
        Received pulledBad = new Received();
        try {
            Map<String, Integer> st = pullAll(ctx, topic, INVALID[0], pulledBad);
            badPull = "all" + st.toString().replace(" ", "");
            if (pulledBad.distinct() == sent.size()) {
                badPull = "all(apache)";
                if (ctx.strict) {
                    ctx.fail.add("pull consumer [" + INVALID[0] + "]: an expression that does not compile let all "
                        + sent.size() + " messages through (Apache 5.3.3 fails open here)");
                }
            } else {
                ctx.fail.add("pull consumer [" + INVALID[0] + "]: neither refused nor all messages: "
                    + pulledBad.distinct() + " of " + sent.size() + " " + st);
            }
        } catch (MQBrokerException e) {
            System.err.println("sql-filter: pull consumer [" + INVALID[0] + "] refused: code " + e.getResponseCode()
                + " remark " + e.getErrorMessage());
            badPull = "refused(" + e.getResponseCode() + ")";
        }

        // Pull request fields, for the record (4.x clients run no RPC hook after the push consumer's
        // asynchronous pulls, so only the lite pull consumer's are seen there).
        String pushHeader = pullHeaders.get(groups.get(cases.get(0).name));
        String liteHeader = pullHeaders.get(liteGroup);
        System.err.println("sql-filter: push pull header " + pushHeader + " codes "
            + pullCodes.get(groups.get(cases.get(0).name)));
        System.err.println("sql-filter: lite pull header " + liteHeader + " codes " + pullCodes.get(liteGroup));
        for (Map.Entry<String, String> e : pullHeaders.entrySet()) {
            if (e.getKey().contains("cg_pull_")) {
                System.err.println("sql-filter: pull consumer " + e.getKey() + " header " + e.getValue() + " codes "
                    + pullCodes.get(e.getKey()));
            }
        }
        if (liteHeader == null) {
            ctx.fail.add("lite-pull: no pull response was seen");
        } else {
            // The lite pull consumer sends its subscription with every pull.
            if (!liteHeader.contains("expressionType=SQL92")
                || !liteHeader.contains("subscription=" + LITE.sql + ";")) {
                ctx.fail.add("lite-pull: pull header does not carry the SQL92 subscription: " + liteHeader);
            }
        }
        return "sent=" + sent.size() + " cases=" + cases.size() + " wanted={" + sizes + "} invalid=" + invalid
            + " trailingText=" + trailing.toString().replace(" ", "")
            + " pullConsumer=" + statuses.toString().replace(" ", "")
            + " invalidInPull=" + badPull + " pushPull={" + pushHeader + "} litePull={" + liteHeader + "}";
    }

    /** Sync-sends COUNT messages with the properties above; PROPS gets each one's, by body, plus TAGS. */
    private static List<Sent> send(Ctx ctx, DefaultMQProducer producer, String topic, int count,
        Map<String, Map<String, String>> props) throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String tag = i % 2 == 0 ? "TagA" : "TagB";
            Message m = Ctx.message(topic, tag, ProduceConsume.key(ctx, "sql", i), ProduceConsume.body(ctx, "sql", i));
            Map<String, String> p = new TreeMap<>();
            p.put("seq", Integer.toString(i));
            p.put("a", Integer.toString(i % 10));
            p.put("code", String.format("%03d", i % 20));
            p.put("region", REGIONS[(i / 10) % REGIONS.length]);
            p.put("vip", i % 3 == 0 ? "true" : "false");
            if (i % 5 != 0) {
                p.put("b", "x" + (i % 3));
            }
            for (Map.Entry<String, String> e : p.entrySet()) {
                m.putUserProperty(e.getKey(), e.getValue());
            }
            p.put("TAGS", tag);
            SendResult r = producer.send(m);
            ProduceConsume.checkResult(ctx, "sql #" + i, m, r);
            Sent s = Sent.of(m, r);
            sent.add(s);
            props.put(s.body, p);
        }
        return sent;
    }

    /**
     * Starts a push consumer per invalid expression (and one lite pull consumer): each start must
     * fail with an MQClientException of response code CODE (and, if given, remark REMARK), from the
     * client's CHECK_CLIENT_CONFIG. Returns a summary for the PASS line; the remarks go to stderr.
     */
    private static String invalid(Ctx ctx, String topic, int code, String remark) throws Exception {
        Map<String, Integer> codes = new TreeMap<>();
        long checksBefore = ctx.hook.count("broker", 46);
        int n = 0;
        for (String sql : INVALID) {
            n++;
            DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("cg_bad" + n));
            c.subscribe(topic, MessageSelector.bySql(sql));
            c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
                ctx.fail.add("invalid [" + sql + "]: a consumer that should not have started got " + msgs.size()
                    + " message(s)");
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            checkRefused(ctx, "push consumer [" + sql + "]", () -> c.start(), code, remark, codes);
            // A 4.x consumer whose start failed this way keeps running (heartbeats, pulls) until shut down.
            c.shutdown();
        }
        DefaultLitePullConsumer l = ctx.litePullConsumer(ctx.group("cg_bad_lite"));
        l.subscribe(topic, MessageSelector.bySql(INVALID[0]));
        checkRefused(ctx, "lite pull consumer [" + INVALID[0] + "]", () -> l.start(), code, remark, codes);
        l.shutdown();
        long checks = ctx.hook.count("broker", 46) - checksBefore;
        ctx.fail.check("CHECK_CLIENT_CONFIG requests for " + (INVALID.length + 1) + " refused consumers",
            (long) INVALID.length + 1, checks);
        return codes.toString().replace(" ", "");
    }

    /** A start that must throw. */
    private interface Start {
        void run() throws Exception;
    }

    private static void checkRefused(Ctx ctx, String what, Start start, int code, String remark,
        Map<String, Integer> codes) {
        Throwable thrown = null;
        try {
            start.run();
        } catch (Exception e) {
            thrown = e;
        }
        if (thrown == null) {
            ctx.fail.add(what + ": started; expected the broker to refuse the subscription with code " + code);
            return;
        }
        MQClientException mqe = null;
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() != -1) {
                mqe = (MQClientException) t;
                break;
            }
        }
        if (mqe == null) {
            ctx.fail.add(what + ": start failed without a broker response code: " + thrown);
            return;
        }
        String text = String.valueOf(mqe.getErrorMessage());
        System.err.println("sql-filter: " + what + " refused: code " + mqe.getResponseCode() + " remark "
            + text.replace('\n', ' '));
        codes.merge(Integer.toString(mqe.getResponseCode()), 1, Integer::sum);
        ctx.fail.check(what + ": response code", code, mqe.getResponseCode());
        if (remark != null && !text.equals(remark)) {
            ctx.fail.add(what + ": remark", remark, text);
        }
        if (remark == null && text.trim().isEmpty()) {
            ctx.fail.add(what + ": empty remark");
        }
    }

    /** --property-filter off: every SQL subscription is refused with SYSTEM_ERROR, valid or not. */
    private static String disabled(Ctx ctx, String topic, List<Sent> sent) throws Exception {
        Map<String, Integer> codes = new TreeMap<>();
        List<Case> cases = cases();
        DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("cg_off"));
        c.subscribe(topic, MessageSelector.bySql(cases.get(0).sql));
        c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            ctx.fail.add("property filter off: a consumer that should not have started got " + msgs.size()
                + " message(s)");
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        checkRefused(ctx, "push consumer [" + cases.get(0).sql + "]", () -> c.start(), SYSTEM_ERROR, DISABLED_REMARK,
            codes);
        c.shutdown();
        DefaultLitePullConsumer l = ctx.litePullConsumer(ctx.group("cg_off_lite"));
        l.subscribe(topic, MessageSelector.bySql(LITE.sql));
        checkRefused(ctx, "lite pull consumer [" + LITE.sql + "]", () -> l.start(), SYSTEM_ERROR, DISABLED_REMARK,
            codes);
        l.shutdown();
        String invalid = invalid(ctx, topic, SYSTEM_ERROR, DISABLED_REMARK);
        // The pull itself (expression in the header only) is refused the same way.
        Received pulled = new Received();
        checkRefused(ctx, "pull consumer [" + LITE.sql + "]", () -> {
            try {
                pullAll(ctx, topic, LITE.sql, pulled);
            } catch (MQBrokerException e) {
                throw new MQClientException(e.getResponseCode(), e.getErrorMessage());
            }
        }, SYSTEM_ERROR, DISABLED_REMARK, codes);
        return "propertyFilter=off sent=" + sent.size() + " valid=" + codes.toString().replace(" ", "")
            + " invalid=" + invalid;
    }

    /**
     * Reads every queue of TOPIC from offset 0 to its end with a DefaultMQPullConsumer (new group),
     * selector SQL, into GOT; returns the pull statuses seen. A refused pull throws
     * MQBrokerException.
     */
    @SuppressWarnings("deprecation") // DefaultMQPullConsumer: deprecated in 5.x
    private static Map<String, Integer> pullAll(Ctx ctx, String topic, String sql, Received got) throws Exception {
        Map<String, Integer> statuses = new TreeMap<>();
        String group = ctx.group("cg_pull_" + Integer.toHexString(sql.hashCode()));
        DefaultMQPullConsumer puller = new DefaultMQPullConsumer(group, ctx.hook);
        puller.setNamesrvAddr(ctx.namesrv);
        puller.setInstanceName("silo-" + ctx.suffix + "-pull-" + System.nanoTime());
        puller.start();
        long deadline = System.nanoTime() + ctx.timeoutMillis * 1_000_000L;
        try {
            for (MessageQueue mq : puller.fetchSubscribeMessageQueues(topic)) {
                long offset = 0;
                boolean end = false;
                while (!end) {
                    if (System.nanoTime() > deadline) {
                        ctx.fail.add("pull consumer [" + sql + "]: timed out reading " + mq);
                        return statuses;
                    }
                    PullResult r;
                    try {
                        r = puller.pull(mq, MessageSelector.bySql(sql), offset, 32);
                    } catch (MQClientException e) {
                        // The client sends SQL92 pulls only to a broker whose version it knows to be
                        // 4.1.0 or later, which it learns from its first HEART_BEAT (1 s after start).
                        if (String.valueOf(e.getMessage()).contains("does not upgrade to support for filter")) {
                            statuses.merge("client-waits-for-broker-version", 1, Integer::sum);
                            Thread.sleep(100);
                            continue;
                        }
                        throw e;
                    }
                    statuses.merge(r.getPullStatus().name(), 1, Integer::sum);
                    switch (r.getPullStatus()) {
                        case FOUND:
                            for (MessageExt m : r.getMsgFoundList()) {
                                got.add("pull", m);
                            }
                            break;
                        case NO_MATCHED_MSG:
                            break;
                        case NO_NEW_MSG:
                            end = true;
                            break;
                        default:
                            ctx.fail.add("pull consumer [" + sql + "]: " + mq + " at " + offset + ": " + r);
                            return statuses;
                    }
                    offset = r.getNextBeginOffset();
                }
            }
        } finally {
            puller.shutdown();
        }
        return statuses;
    }

    /** "expressionType=..;subscription=..;subVersion=..;sysFlag=.." of a pull request, or null. */
    private static String pullFilterFields(RemotingCommand request) {
        Object h = request.readCustomHeader();
        if (h == null) {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        try {
            for (String f : new String[] {"ExpressionType", "Subscription", "SubVersion", "SysFlag"}) {
                Object v = h.getClass().getMethod("get" + f).invoke(h);
                if ("SubVersion".equals(f) && v != null) {
                    // A timestamp (System.currentTimeMillis at subscribe): only its presence matters.
                    v = ((Long) v) > 0 ? "<millis>" : v;
                }
                sb.append(Character.toLowerCase(f.charAt(0))).append(f.substring(1)).append('=').append(v).append(';');
            }
        } catch (ReflectiveOperationException e) {
            return null;
        }
        return sb.toString();
    }

    private static String[] groupAndTopic(RemotingCommand request) {
        Object h = request.readCustomHeader();
        if (h == null) {
            return null;
        }
        try {
            return new String[] {String.valueOf(h.getClass().getMethod("getConsumerGroup").invoke(h)),
                String.valueOf(h.getClass().getMethod("getTopic").invoke(h))};
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }
}
