package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Transactional messages with the stock {@code TransactionMQProducer}: half messages, the local
 * transaction's verdict, and the broker's check-back.
 *
 * <p>Message i of N (default 200) is, by {@code i % 3}: 0 committed by the local-transaction
 * executor (COMMIT_MESSAGE), 1 rolled back by it (ROLLBACK_MESSAGE), 2 left open (UNKNOW). The open
 * ones are settled by the checker ({@code checkLocalTransaction}) when the broker asks
 * (CHECK_TRANSACTION_STATE): COMMIT for every other one ({@code (i / 3)} even), ROLLBACK for the
 * rest. The verdict is carried by the user property {@code silo-tx} (commit, rollback,
 * check-commit, check-rollback), so executor and checker decide from the message alone. Every
 * seventh open message ({@code (i / 3) % 7 == 0}) also carries CHECK_IMMUNITY_TIME_IN_SECONDS = 4.
 *
 * <p>Single phase (no --phase): one plain message first creates the topic; a push consumer (first
 * offset, one thread) gets it before any transactional send, so it is listening throughout. Then:
 * each {@code sendMessageInTransaction} must give SEND_OK with the executor's state, msgId = the
 * UNIQ_KEY and a queue of the topic (a TransactionSendResult carries no offsetMsgId). Once all are
 * settled the scenario waits until no check has come for 2.5 s (a check of a settled message comes
 * within one check interval). The consumer must get exactly the plain message,
 * the executor's commits and the checker's commits, once each, with body, keys, tags, user
 * properties and msgId intact, in queue order, and no rolled-back one. Nothing may be delivered
 * before its commit: a commit no earlier than the executor's return, a check-commit no earlier than
 * the checker's COMMIT answer. Every open message must be checked at least once and each check must
 * carry the message (real topic, body, keys, tags, user properties, transactionId = UNIQ_KEY). A
 * message with the immunity property must not be checked earlier than 4 s after its send (minus
 * 50 ms for the clock's granularity). Reported: the check-back latency (first check after the send),
 * checks per open message, checks of messages the executor had already decided.
 *
 * <p>Two phases around a broker restart: {@code --phase send --state FILE} sends the plain message
 * and the N transactional ones (the checker answers UNKNOW to any check that arrives meanwhile) and
 * shuts the producer down right away, so no check can be answered; FILE gets the topic, the
 * producer group and every message. <i>(restart the broker)</i> {@code --phase check --state FILE}
 * starts a TransactionMQProducer in the same producer group with the checker above (it looks the
 * topic's route up and heartbeats at once: a 5.x producer that has sent nothing knows no broker, so
 * the broker would find no connection for the group to check), and a consumer
 * of a new group from the first offset: it must get exactly the plain message, the executor's
 * commits and the checker's commits, once each, intact, nothing rolled back; every open message
 * checked, no check-commit delivered before its COMMIT answer.
 *
 * <p>Broker settings it expects: the stock check runs every {@code transactionCheckInterval}
 * (30000 ms) and checks a half message once it is {@code transactionTimeOut} (6000 ms) old, so a
 * run would take well over a minute; it is meant for {@code transactionCheckInterval=2000},
 * {@code transactionTimeOut=2000}, {@code transactionOpBatchInterval=100} and
 * {@code transactionCheckMax=60}. The op batch interval matters: the Apache broker writes the
 * record of an answer (its op message) up to that long after the answer, and a check round in
 * between checks the message again and commits it a second time on a second COMMIT (with 1000 ms
 * checks and the default 3000 ms batches, most committed messages were delivered twice; with
 * 1000/500, those whose answers came 435 ms late were). For the two-phase run the broker keeps asking, with no producer to
 * answer, from the send phase until the check phase's producer has registered; it gives a half
 * message up after {@code transactionCheckMax} (15) checks, hence 60. Request codes: the half
 * message is a SEND_MESSAGE_V2 (310) with the prepared sysFlag (4); END_TRANSACTION (37) is
 * one-way; CHECK_TRANSACTION_STATE (39) is the broker's one-way request to the producer. The header
 * fields seen go to stderr ("wire" lines).
 */
final class Transactions implements Scenario {

    /** User property with the message's intended outcome. */
    static final String TX = "silo-tx";
    private static final int IMMUNITY_SECONDS = 4;
    private static final long IMMUNITY_TOLERANCE_MS = 50;
    private static final int SEND_OK_SAMPLES = 3;
    /** Longer than the check interval the scenario expects (2 s). */
    private static final long QUIET_MS = 2500;

    /** What becomes of a message. */
    enum Kind {
        COMMIT("commit"), ROLLBACK("rollback"), CHECK_COMMIT("check-commit"), CHECK_ROLLBACK("check-rollback");

        final String label;

        Kind(String label) {
            this.label = label;
        }

        static Kind of(int i) {
            switch (i % 3) {
                case 0:
                    return COMMIT;
                case 1:
                    return ROLLBACK;
                default:
                    return (i / 3) % 2 == 0 ? CHECK_COMMIT : CHECK_ROLLBACK;
            }
        }

        static Kind parse(String label) {
            for (Kind k : values()) {
                if (k.label.equals(label)) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown transaction kind " + label);
        }

        boolean open() {
            return this == CHECK_COMMIT || this == CHECK_ROLLBACK;
        }

        boolean committed() {
            return this == COMMIT || this == CHECK_COMMIT;
        }

        /** The executor's answer. */
        LocalTransactionState local() {
            return this == COMMIT ? LocalTransactionState.COMMIT_MESSAGE
                : this == ROLLBACK ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.UNKNOW;
        }

        /** The checker's answer. */
        LocalTransactionState checked() {
            return committed() ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
        }
    }

    /** One transactional message and what happened to it (times in ms of a monotonic clock). */
    static final class Tx {
        final int index;
        final Kind kind;
        final String key;
        final String tag;
        final String body;
        final boolean immune;
        volatile String msgId;
        volatile long sentAt;
        volatile long executedAt;
        final AtomicInteger checks = new AtomicInteger();
        volatile long firstCheckAt;
        /** When the checker first gave its COMMIT/ROLLBACK answer (0: not yet). */
        volatile long answeredAt;
        volatile long deliveredAt;

        Tx(int index, Kind kind, String key, String tag, String body, boolean immune) {
            this.index = index;
            this.kind = kind;
            this.key = key;
            this.tag = tag;
            this.body = body;
            this.immune = immune;
        }

        Sent sent(String topic) {
            // Queue and broker id of the committed message are not known in advance (the send
            // result names the half message).
            return new Sent(topic, body, key, tag, "v-" + key, msgId, null, -1, -1);
        }

        @Override
        public String toString() {
            return "{" + kind.label + " " + body + ", key=" + key + ", msgId=" + msgId + "}";
        }
    }

    static long now() {
        return System.nanoTime() / 1_000_000L;
    }

    /** Executor and checker: both decide by the message's {@link #TX} property (via its key). */
    private static final class Listener implements TransactionListener {
        final Ctx ctx;
        final String topic;
        final Map<String, Tx> byKey = new ConcurrentHashMap<>();
        /** Send phase: answer every check UNKNOW (the outcome is left to the check phase). */
        final boolean answerUnknown;
        final AtomicInteger strays = new AtomicInteger();
        final AtomicInteger checksOfDecided = new AtomicInteger();
        /** When the last check arrived (0: none yet). */
        volatile long lastCheckAt;
        final WireLog wire;

        Listener(Ctx ctx, String topic, boolean answerUnknown, WireLog wire) {
            this.ctx = ctx;
            this.topic = topic;
            this.answerUnknown = answerUnknown;
            this.wire = wire;
        }

        @Override
        public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
            Tx t = (Tx) arg;
            LocalTransactionState s = t.kind.local();
            t.executedAt = now();
            return s;
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt msg) {
            long at = now();
            lastCheckAt = at;
            Tx t = byKey.get(String.valueOf(msg.getKeys()));
            if (t == null) {
                strays.incrementAndGet();
                ctx.fail.add("check for a message this run did not send: keys=" + msg.getKeys() + " topic="
                    + msg.getTopic() + " transactionId=" + msg.getTransactionId());
                return LocalTransactionState.UNKNOW;
            }
            if (t.checks.incrementAndGet() == 1) {
                t.firstCheckAt = at;
                checkCheckedMessage(t, msg);
            }
            if (!t.kind.open()) {
                checksOfDecided.incrementAndGet();
            }
            if (answerUnknown) {
                return LocalTransactionState.UNKNOW;
            }
            if (t.answeredAt == 0) {
                t.answeredAt = now();
            }
            return t.kind.checked();
        }

        /** The message a check carries must be the one sent, on its real topic. */
        private void checkCheckedMessage(Tx t, MessageExt m) {
            String what = "check of " + t.body;
            ctx.fail.check(what + " topic", topic, m.getTopic());
            ctx.fail.check(what + " body", t.body, m.getBody() == null ? null : new String(m.getBody(),
                StandardCharsets.UTF_8));
            ctx.fail.check(what + " keys", t.key, m.getKeys());
            ctx.fail.check(what + " tags", t.tag, m.getTags());
            ctx.fail.check(what + " user property " + Ctx.PROP, "v-" + t.key, m.getUserProperty(Ctx.PROP));
            ctx.fail.check(what + " user property " + TX, t.kind.label, m.getUserProperty(TX));
            if (t.msgId != null) {
                ctx.fail.check(what + " UNIQ_KEY", t.msgId, m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
                ctx.fail.check(what + " transactionId", t.msgId, m.getTransactionId());
            }
            wire.sample("check message (as the checker gets it)", "topic=" + m.getTopic() + " queueId=" + m.getQueueId()
                + " queueOffset=" + m.getQueueOffset() + " msgId=" + m.getMsgId() + " transactionId="
                + m.getTransactionId() + " sysFlag=" + m.getSysFlag() + " commitLogOffset=" + m.getCommitLogOffset()
                + " properties=" + new TreeMap<>(m.getProperties()));
        }
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        if (ctx.phase == null) {
            return single(ctx);
        }
        if (ctx.state == null) {
            throw new IllegalArgumentException("transactions --phase needs --state FILE");
        }
        if ("send".equals(ctx.phase)) {
            return sendPhase(ctx);
        }
        if ("check".equals(ctx.phase)) {
            return checkPhase(ctx);
        }
        throw new IllegalArgumentException("transactions: --phase must be send or check (or absent)");
    }

    // ---------------------------------------------------------------- single phase

    private String single(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        Tally tally = new Tally();
        WireLog wire = wire(ctx, tally);
        Listener l = new Listener(ctx, topic, false, wire);
        TransactionMQProducer producer = producer(ctx, ctx.name("pg"), l, wire, 1);
        Sent warmup = warmup(ctx, producer, topic);

        Received got = new Received();
        startConsumer(ctx, ctx.group("cg"), topic, l, got, wire);
        ctx.await("the plain message (consumer ready)", () -> got.has(warmup.body), () -> "not yet");

        List<Tx> txs = sendAll(ctx, producer, topic, l, ctx.count, true);
        List<Sent> expected = expected(topic, warmup, txs);
        ctx.await(expected.size() + " committed messages delivered and every open transaction answered",
            () -> got.distinct() >= expected.size() && allAnswered(txs),
            () -> got.distinct() + " distinct delivered, " + unanswered(txs) + " open ones unanswered");
        awaitQuiet(ctx, l);
        ctx.settle();

        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", expected, got.list(), true);
        checkTiming(ctx, txs, true);
        wire.print(System.err);
        return counts(txs) + " " + stats + " " + checkReport(txs, l) + " " + tally;
    }

    // ---------------------------------------------------------------- two phases

    private String sendPhase(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        String group = ctx.name("pg");
        Tally tally = new Tally();
        WireLog wire = wire(ctx, tally);
        Listener l = new Listener(ctx, topic, true, wire);
        TransactionMQProducer producer = producer(ctx, group, l, wire, 1);
        Sent warmup = warmup(ctx, producer, topic);
        List<Tx> txs = sendAll(ctx, producer, topic, l, ctx.count, false);
        // Right away: no check may be answered by this producer.
        producer.shutdown();

        List<String> lines = new ArrayList<>();
        lines.add("# transactions state: topic, producer group, suffix, the plain message, then"
            + " tx<TAB>kind<TAB>index<TAB>key<TAB>tag<TAB>body<TAB>msgId");
        lines.add("topic\t" + topic);
        lines.add("producerGroup\t" + group);
        lines.add("suffix\t" + ctx.suffix);
        lines.add(String.join("\t", "plain", warmup.key, warmup.tag, warmup.body, warmup.msgId));
        for (Tx t : txs) {
            lines.add(String.join("\t", "tx", t.kind.label, Integer.toString(t.index), t.key, t.tag, t.body, t.msgId));
        }
        Files.write(ctx.state, lines, StandardCharsets.UTF_8);
        wire.print(System.err);
        return counts(txs) + " checksAnsweredUnknown=" + checksSeen(txs) + " " + tally + " state=" + ctx.state;
    }

    private String checkPhase(Ctx ctx) throws Exception {
        String topic = null;
        String group = null;
        Sent warmup = null;
        List<String[]> rows = new ArrayList<>();
        for (String line : Files.readAllLines(ctx.state, StandardCharsets.UTF_8)) {
            if (line.startsWith("#") || line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            switch (f[0]) {
                case "topic":
                    topic = f[1];
                    break;
                case "producerGroup":
                    group = f[1];
                    break;
                case "plain":
                    warmup = new Sent(topic, f[3], f[1], f[2], "v-" + f[1], f[4], null, -1, -1);
                    break;
                case "tx":
                    rows.add(f);
                    break;
                default:
                    break;
            }
        }
        if (topic == null || group == null || warmup == null || rows.isEmpty()) {
            throw new IllegalStateException("state file " + ctx.state + " lacks topic, producer group or messages");
        }
        Tally tally = new Tally();
        WireLog wire = wire(ctx, tally);
        Listener l = new Listener(ctx, topic, false, wire);
        List<Tx> txs = new ArrayList<>();
        long start = now();
        for (String[] f : rows) {
            Tx t = new Tx(Integer.parseInt(f[2]), Kind.parse(f[1]), f[3], f[4], f[5], false);
            t.msgId = f[6];
            t.sentAt = start;
            txs.add(t);
            l.byKey.put(t.key, t);
        }
        TransactionMQProducer producer = producer(ctx, group, l, wire, 1);
        // A 5.x producer starts without any route (4.x ones start with TBW102's), so it knows no
        // broker and heartbeats to none until its first send: the broker's checks would find no
        // channel for the group. Look the topic up and heartbeat, as the client does before its first
        // send (and before a request).
        MQClientInstance factory = RequestReply.factory(producer);
        factory.updateTopicRouteInfoFromNameServer(topic);
        factory.sendHeartbeatToAllBrokerWithLock();
        Received got = new Received();
        startConsumer(ctx, ctx.group("cg"), topic, l, got, wire);
        List<Sent> expected = expected(topic, warmup, txs);
        ctx.await(expected.size() + " committed messages delivered and every open transaction answered",
            () -> got.distinct() >= expected.size() && allAnswered(txs),
            () -> got.distinct() + " distinct delivered, " + unanswered(txs) + " open ones unanswered");
        awaitQuiet(ctx, l);
        ctx.settle();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume after restart", expected, got.list(), true);
        checkTiming(ctx, txs, false);
        wire.print(System.err);
        return counts(txs) + " " + stats + " " + checkReport(txs, l) + " (latency from this phase's start) " + tally;
    }

    // ---------------------------------------------------------------- helpers

    /** Counts of what the wire hook saw: END_TRANSACTION by verdict, checks, half sends. */
    static final class Tally {
        final Map<String, AtomicInteger> endTx = new ConcurrentHashMap<>();
        final AtomicInteger checks = new AtomicInteger();
        final AtomicInteger halfSends = new AtomicInteger();

        @Override
        public String toString() {
            return "endTransaction(37)=" + new TreeMap<>(endTx) + " checkTransactionState(39)=" + checks
                + " halfSends=" + halfSends;
        }
    }

    private static WireLog wire(Ctx ctx, Tally tally) {
        WireLog wire = new WireLog(ctx.hook, 10, 310, 37, 39);
        AtomicInteger okSamples = new AtomicInteger();
        wire.onSeen((code, request, response, f) -> {
            if (code == 37 && response == null) {
                if ("true".equals(f.get("fromTransactionCheck"))) {
                    wire.sample("request 37 (answer to a check)", f.toString());
                }
                tally.endTx.computeIfAbsent("commitOrRollback=" + f.get("commitOrRollback") + "/fromCheck="
                    + f.getOrDefault("fromTransactionCheck", "absent"), k -> new AtomicInteger()).incrementAndGet();
            } else if (code == 39 && response == null) {
                tally.checks.incrementAndGet();
            } else if ((code == 310 || code == 10) && isHalf(request)) {
                if (response == null) {
                    tally.halfSends.incrementAndGet();
                    wire.sample("request " + code + " (half message)", f.toString());
                } else if (response.getCode() == 0 && okSamples.incrementAndGet() <= SEND_OK_SAMPLES) {
                    wire.sample("response " + code + " (half message)", f.toString());
                }
            }
        });
        return wire;
    }

    /** Whether a send request carries TRAN_MSG=true (V2 header field "i" or V1 "properties"). */
    private static boolean isHalf(RemotingCommand request) {
        Map<String, String> f = WireLog.fields(request);
        String props = f.containsKey("i") ? f.get("i") : f.get("properties");
        return props != null && props.contains(MessageConst.PROPERTY_TRANSACTION_PREPARED + (char) 1 + "true");
    }

    private static TransactionMQProducer producer(Ctx ctx, String group, Listener l, WireLog wire, int n)
        throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group, wire);
        p.setNamesrvAddr(ctx.namesrv);
        p.setInstanceName("silo-" + ctx.suffix + "-tx" + n);
        p.setTransactionListener(l);
        p.start();
        ctx.closeLater(p::shutdown);
        return p;
    }

    /** One plain message: creates the topic (4 queues) before the consumer subscribes. */
    private static Sent warmup(Ctx ctx, TransactionMQProducer producer, String topic) throws Exception {
        Message m = Ctx.message(topic, "TagW", ProduceConsume.key(ctx, "plain", 0), ProduceConsume.body(ctx, "plain", 0));
        SendResult r = producer.send(m);
        ProduceConsume.checkResult(ctx, "plain message", m, r);
        return Sent.of(m, r);
    }

    private static void startConsumer(Ctx ctx, String group, String topic, Listener l, Received got, WireLog wire)
        throws Exception {
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.subscribe(topic, "*");
        c.setConsumeThreadMin(1);
        c.setConsumeThreadMax(1);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            for (MessageExt m : msgs) {
                long at = now();
                got.add("c1", m);
                Tx t = l.byKey.get(String.valueOf(m.getKeys()));
                if (t != null && t.deliveredAt == 0) {
                    t.deliveredAt = at;
                    wire.sample("delivered " + t.kind.label, "queueId=" + m.getQueueId() + " queueOffset="
                        + m.getQueueOffset() + " sysFlag=" + m.getSysFlag() + " properties="
                        + new TreeMap<>(m.getProperties()));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
    }

    private static List<Tx> sendAll(Ctx ctx, TransactionMQProducer producer, String topic, Listener l, int n,
        boolean immunity) throws Exception {
        List<Tx> txs = new ArrayList<>();
        Map<Integer, Integer> resultQueues = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            Kind k = Kind.of(i);
            boolean immune = immunity && k.open() && (i / 3) % 7 == 0;
            String key = ProduceConsume.key(ctx, "tx", i);
            Tx t = new Tx(i, k, key, i % 2 == 0 ? "TagA" : "TagB", ProduceConsume.body(ctx, "tx", i), immune);
            l.byKey.put(key, t);
            txs.add(t);
            Message m = Ctx.message(topic, t.tag, key, t.body);
            m.putUserProperty(TX, k.label);
            if (immune) {
                // A system property: putUserProperty would refuse the name.
                MessageAccessor.putProperty(m, MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
                    Integer.toString(IMMUNITY_SECONDS));
            }
            t.sentAt = now();
            TransactionSendResult r = producer.sendMessageInTransaction(m, t);
            t.msgId = MessageClientIDSetter.getUniqID(m);
            String what = k.label + " #" + i;
            if (r == null) {
                ctx.fail.add(what + ": null TransactionSendResult");
                continue;
            }
            ctx.fail.check(what + " send status", SendStatus.SEND_OK, r.getSendStatus());
            ctx.fail.check(what + " local transaction state", k.local(), r.getLocalTransactionState());
            ctx.fail.check(what + " SendResult msgId vs UNIQ_KEY", t.msgId, r.getMsgId());
            // No offsetMsgId check: TransactionSendResult does not copy it from the send's result
            // (the client uses the broker's msgId, the half message's id, for END_TRANSACTION).
            ctx.fail.check(what + " SendResult topic", topic,
                r.getMessageQueue() == null ? null : r.getMessageQueue().getTopic());
            if (r.getMessageQueue() != null) {
                resultQueues.merge(r.getMessageQueue().getQueueId(), 1, Integer::sum);
            }
            if (i < SEND_OK_SAMPLES) {
                l.wire.sample("TransactionSendResult", "msgId=" + r.getMsgId() + " offsetMsgId=" + r.getOffsetMsgId()
                    + " queue=" + (r.getMessageQueue() == null ? null : r.getMessageQueue().getQueueId())
                    + " queueOffset=" + r.getQueueOffset() + " transactionId=" + r.getTransactionId()
                    + " localTransactionState=" + r.getLocalTransactionState());
            }
        }
        l.wire.sample("TransactionSendResult queues", resultQueues.toString());
        return txs;
    }

    /**
     * Waits until no check has arrived for {@link #QUIET_MS}: a check of a message already settled
     * (its outcome not yet recorded by the broker) comes within one check interval, and a COMMIT
     * answer to it may deliver the message again.
     */
    private static void awaitQuiet(Ctx ctx, Listener l) throws InterruptedException {
        ctx.await("no check for " + QUIET_MS + " ms", () -> l.lastCheckAt == 0 || now() - l.lastCheckAt >= QUIET_MS,
            () -> "last check " + (now() - l.lastCheckAt) + " ms ago");
    }

    private static List<Sent> expected(String topic, Sent warmup, List<Tx> txs) {
        List<Sent> expected = new ArrayList<>();
        expected.add(warmup);
        for (Tx t : txs) {
            if (t.kind.committed()) {
                expected.add(t.sent(topic));
            }
        }
        return expected;
    }

    private static boolean allAnswered(List<Tx> txs) {
        return unanswered(txs) == 0;
    }

    private static int unanswered(List<Tx> txs) {
        int n = 0;
        for (Tx t : txs) {
            if (t.kind.open() && t.answeredAt == 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * Visibility: nothing before its commit; every open message checked; immunity respected.
     * WITH_EXECUTOR: the executor ran in this process (single phase), so commits can be timed too.
     */
    private static void checkTiming(Ctx ctx, List<Tx> txs, boolean withExecutor) {
        for (Tx t : txs) {
            if (t.kind.open() && t.checks.get() == 0) {
                ctx.fail.add(t + ": never checked");
            }
            if (t.deliveredAt == 0) {
                continue;
            }
            if (t.kind == Kind.COMMIT && withExecutor && t.deliveredAt < t.executedAt) {
                ctx.fail.add(t + ": delivered " + (t.executedAt - t.deliveredAt)
                    + " ms before the executor returned COMMIT_MESSAGE");
            }
            if (t.kind == Kind.CHECK_COMMIT) {
                if (t.answeredAt == 0) {
                    ctx.fail.add(t + ": delivered before the checker answered (never answered)");
                } else if (t.deliveredAt < t.answeredAt) {
                    ctx.fail.add(t + ": delivered " + (t.answeredAt - t.deliveredAt)
                        + " ms before the checker answered COMMIT_MESSAGE");
                }
            }
        }
        for (Tx t : txs) {
            if (t.immune && t.firstCheckAt != 0) {
                long after = t.firstCheckAt - t.sentAt;
                if (after < IMMUNITY_SECONDS * 1000L - IMMUNITY_TOLERANCE_MS) {
                    ctx.fail.add(t + ": first check " + after + " ms after the send, before its "
                        + MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS + " of " + IMMUNITY_SECONDS + " s");
                }
            }
        }
    }

    private static String counts(List<Tx> txs) {
        Map<String, Integer> n = new TreeMap<>();
        for (Tx t : txs) {
            n.merge(t.kind.label, 1, Integer::sum);
        }
        return "sent=" + txs.size() + " " + n;
    }

    private static int checksSeen(List<Tx> txs) {
        int n = 0;
        for (Tx t : txs) {
            n += t.checks.get();
        }
        return n;
    }

    /** First-check latency (p50/max, plain and immune), checks per open message, other checks. */
    private static String checkReport(List<Tx> txs, Listener l) {
        List<Long> plain = new ArrayList<>();
        List<Long> immune = new ArrayList<>();
        Map<Integer, Integer> perMessage = new TreeMap<>();
        for (Tx t : txs) {
            if (t.kind.open()) {
                perMessage.merge(t.checks.get(), 1, Integer::sum);
            }
            if (t.firstCheckAt != 0 && t.kind.open()) {
                (t.immune ? immune : plain).add(t.firstCheckAt - t.sentAt);
            }
        }
        return "firstCheckMs=" + percentiles(plain) + (immune.isEmpty() ? "" : " immuneFirstCheckMs=" + percentiles(immune))
            + " checksPerOpenMessage=" + perMessage + " checksOfDecided=" + l.checksOfDecided + " strayChecks="
            + l.strays;
    }

    /** "min/p50/max" of VALUES, or "-". */
    static String percentiles(List<Long> values) {
        if (values.isEmpty()) {
            return "-";
        }
        List<Long> v = new ArrayList<>(values);
        Collections.sort(v);
        return v.get(0) + "/" + v.get((v.size() - 1) / 2) + "/" + v.get(v.size() - 1);
    }
}
