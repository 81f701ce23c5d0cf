package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Timer messages (5.x broker, RIP-43) and the old delay levels.
 *
 * <p>Single run: one plain message creates the topic and proves a push consumer (new group, "*") is
 * receiving; then N (default 60) messages, in turn: {@code Message.setDelayTimeSec(d)},
 * {@code setDelayTimeMs(d × 1000)}, {@code setDeliverTimeMs(now + d × 1000)}, {@code
 * setDeliverTimeMs} on an exact second (the broker's rounding case), {@code setDelayTimeLevel(2)}
 * (5 s), level 2 plus {@code setDelayTimeSec(d)} (the level wins: 5 s), and no delay, with d cycling
 * 1, 2, 3, 5, 10 s. Plus a TIMER_DELIVER_MS in the past and a negative TIMER_DELAY_MS (both
 * accepted and delivered at once), and sends the broker must refuse with MESSAGE_ILLEGAL (13): a
 * delay beyond timerMaxDelaySec (3 days) by seconds and by deliver time, and non-numeric
 * TIMER_DELAY_SEC / TIMER_DELIVER_MS. Each delivered message must arrive exactly once (body, keys,
 * tags, property, msgId) and not before it was due: neither the consumer's receipt time nor the
 * broker's store time of the delivered copy may be earlier than send start + delay (the absolute
 * time for deliver-time messages), on the producer's clock (the clocks must be the same machine's).
 * The PASS line gives lateness (receipt − due) p50/p99/max per kind.
 *
 * <p>{@code --phase send --state F}: a plain message plus N (default 25) timers due 10, 20, 45, 60
 * and 75 s later (by each of the three properties, and delay level 5 = 60 s), recorded in F; an
 * Apache broker restart takes about 30 s, so some fall due while it is down and some after.
 * <i>(restart the broker)</i> {@code --phase consume --state F}: a new group must get all of them,
 * once each, none stored or received before it was due; the PASS line says how many were due
 * before the consumer started and how late the others came.
 *
 * <p>With a 4.x client, which has no setDelayTimeSec / setDelayTimeMs / setDeliverTimeMs, the same
 * properties are set by name (the PASS line says {@code api=property}).
 */
final class Timers implements Scenario {

    private static final String DELAY_SEC = "TIMER_DELAY_SEC";
    private static final String DELAY_MS = "TIMER_DELAY_MS";
    private static final String DELIVER_MS = "TIMER_DELIVER_MS";
    private static final int MESSAGE_ILLEGAL = 13;
    private static final long MAX_DELAY_MS = 3L * 24 * 3600 * 1000;

    private static final String[] KINDS = {"sec", "ms", "deliver", "deliver-exact", "level", "level+sec", "none"};
    private static final long[] DELAYS_S = {1, 2, 3, 5, 10};
    private static final String[] RESTART_KINDS = {"sec", "ms", "deliver", "deliver-exact", "level"};
    private static final long[] RESTART_DELAYS_S = {10, 20, 45, 60, 75};
    /** Delay levels of the default messageDelayLevel "1s 5s 10s 30s 1m ...". */
    private static final int LEVEL = 2;
    private static final long LEVEL_MS = 5000;
    private static final int RESTART_LEVEL = 5;
    private static final long RESTART_LEVEL_MS = 60000;

    /**
     * Default bound on lateness (receipt - due): Apache's 1 s timer precision makes a timer due at
     * D arrive at the next whole second at or after D (measured: up to 1.02 s late, 0.15 s at
     * exact seconds); the rest is headroom for a loaded machine.
     */
    private static final int MAX_LATE_MS = 3000;

    /** How the timer properties were set: by the client's setters, or by name (4.x clients). */
    private String api;

    /** One timed message: what was sent and when it is due, on the producer's clock. */
    private static final class Timed {
        final Sent sent;
        final String kind;
        final long delayMs;
        final long sendStart;
        final long due;

        Timed(Sent sent, String kind, long delayMs, long sendStart, long due) {
            this.sent = sent;
            this.kind = kind;
            this.delayMs = delayMs;
            this.sendStart = sendStart;
            this.due = due;
        }
    }

    /** When each body was first received (consumer clock) and stored in its topic (broker clock). */
    private static final class Arrivals {
        final Map<String, Long> receipt = new ConcurrentHashMap<>();
        final Map<String, Long> stored = new ConcurrentHashMap<>();
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        if (ctx.phase == null) {
            return single(ctx);
        }
        if (ctx.state == null) {
            throw new IllegalArgumentException("timers --phase needs --state FILE");
        }
        if ("send".equals(ctx.phase)) {
            return sendPhase(ctx);
        }
        if ("consume".equals(ctx.phase)) {
            return consumePhase(ctx);
        }
        throw new IllegalArgumentException("timers: --phase send or --phase consume");
    }

    private String single(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Timed> all = new ArrayList<>();
        all.add(plain(ctx, producer, topic, "warmup", 0));

        Received got = new Received();
        Arrivals arr = new Arrivals();
        startConsumer(ctx, ctx.group("cg"), topic, got, arr);
        String warm = all.get(0).sent.body;
        ctx.await("the plain first message", () -> got.has(warm), () -> got.distinct() + " received");

        int n = ctx.count(60);
        for (int i = 0; i < n; i++) {
            String kind = KINDS[i % KINDS.length];
            long d = DELAYS_S[(i / KINDS.length) % DELAYS_S.length] * 1000;
            all.add(kind.equals("none") ? plain(ctx, producer, topic, "none", i)
                : timed(ctx, producer, topic, kind, d, i, LEVEL));
        }
        Map<String, String> refused = new TreeMap<>();
        all.addAll(edgeCases(ctx, producer, topic, refused));
        String recall = recalls(ctx, producer, topic, all);

        awaitAll(ctx, all, got);
        ctx.settle();
        List<Sent> expected = new ArrayList<>();
        for (Timed t : all) {
            expected.add(t.sent);
        }
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "timers", expected, got.list(), false);
        String late = checkTimes(ctx, all, arr, Long.MIN_VALUE);
        logProperties(all, got);
        return "api=" + api + " sent=" + all.size() + " " + stats + " recall=" + recall + " refused="
            + refused.toString().replace(" ", "")
            + " lateMs{kind=p50/p99/max}=" + late;
    }

    /**
     * The questionable timer properties: those the broker accepts (a deliver time in the past, a
     * negative delay) are returned, to be delivered at once; those it must refuse are sent and
     * checked here (code and remark into REFUSED).
     */
    private List<Timed> edgeCases(Ctx ctx, DefaultMQProducer producer, String topic, Map<String, String> refused)
        throws Exception {
        List<Timed> out = new ArrayList<>();
        long now = System.currentTimeMillis();
        Message past = message(ctx, topic, "past", 0);
        set(past, "setDeliverTimeMs", DELIVER_MS, now - 60000);
        out.add(sendAccepted(ctx, producer, past, "past", 0));
        Message negative = message(ctx, topic, "negative", 0);
        set(negative, "setDelayTimeMs", DELAY_MS, -5000);
        out.add(sendAccepted(ctx, producer, negative, "negative", 0));

        Message farSec = message(ctx, topic, "too-far-sec", 0);
        set(farSec, "setDelayTimeSec", DELAY_SEC, MAX_DELAY_MS / 1000 + 3600);
        sendRefused(ctx, producer, farSec, "too-far-sec", refused);
        Message farDeliver = message(ctx, topic, "too-far-deliver", 0);
        set(farDeliver, "setDeliverTimeMs", DELIVER_MS, System.currentTimeMillis() + MAX_DELAY_MS + 3600_000);
        sendRefused(ctx, producer, farDeliver, "too-far-deliver", refused);

        // The 5.x client reserves the timer keys (putUserProperty refuses them); 4.x does not know them.
        Message word = message(ctx, topic, "non-numeric-sec", 0);
        try {
            word.putUserProperty(DELAY_SEC, "soon");
            refused.put("putUserProperty", "accepted");
        } catch (RuntimeException e) {
            System.err.println("timers: putUserProperty(" + DELAY_SEC + ") refused by the client: " + e.getMessage());
            refused.put("putUserProperty", "client-refused");
            MessageAccessor.putProperty(word, DELAY_SEC, "soon");
        }
        sendRefused(ctx, producer, word, "non-numeric-sec", refused);
        Message wordDeliver = message(ctx, topic, "non-numeric-deliver", 0);
        MessageAccessor.putProperty(wordDeliver, DELIVER_MS, "tomorrow");
        sendRefused(ctx, producer, wordDeliver, "non-numeric-deliver", refused);
        return out;
    }

    /**
     * Recall (5.3 clients; skipped with 4.x, which has no recallMessage): two deliver-time messages
     * 3 s away, one recalled with the handle its SendResult carries. The kept one is added to ALL
     * (expected once); the recalled one is not, so its arrival fails the exactly-once check. Also a
     * recall whose handle's time has passed: refused with ILLEGAL_OPERATION (604).
     */
    private String recalls(Ctx ctx, DefaultMQProducer producer, String topic, List<Timed> all) throws Exception {
        java.lang.reflect.Method recallMessage;
        java.lang.reflect.Method handleOf;
        try {
            recallMessage = DefaultMQProducer.class.getMethod("recallMessage", String.class, String.class);
            handleOf = SendResult.class.getMethod("getRecallHandle");
        } catch (NoSuchMethodException e) {
            return "unsupported-client";
        }
        long delayMs = 3000;
        Message kept = message(ctx, topic, "recall-kept", 0);
        Message recalled = message(ctx, topic, "recalled", 0);
        long start = System.currentTimeMillis();
        set(kept, "setDeliverTimeMs", DELIVER_MS, start + delayMs);
        set(recalled, "setDeliverTimeMs", DELIVER_MS, start + delayMs);
        SendResult keptResult = producer.send(kept);
        ProduceConsume.checkResult(ctx, "recall-kept", kept, keptResult);
        all.add(new Timed(new Sent(topic, new String(kept.getBody(), StandardCharsets.UTF_8), kept.getKeys(),
            kept.getTags(), kept.getUserProperty(Ctx.PROP), MessageClientIDSetter.getUniqID(kept), null, -1, -1),
            "recall-kept", delayMs, start, start + delayMs));
        SendResult r = producer.send(recalled);
        String handle = (String) handleOf.invoke(r);
        if (handle == null || handle.isEmpty()) {
            ctx.fail.add("recall: a timer message's SendResult has no recall handle: " + r);
            return "no-handle";
        }
        Object id = recallMessage.invoke(producer, topic, handle);
        ctx.fail.check("recall: the recalled message id", MessageClientIDSetter.getUniqID(recalled), id);
        // The kept message's handle with its time moved into the past (the client checks only that
        // a handle decodes; the broker refuses this one).
        String[] f = new String(java.util.Base64.getUrlDecoder().decode((String) handleOf.invoke(keptResult)),
            StandardCharsets.UTF_8).split(" ");
        f[3] = Long.toString(System.currentTimeMillis() - 60_000);
        String bad = java.util.Base64.getUrlEncoder().encodeToString(String.join(" ", f).getBytes(StandardCharsets.UTF_8));
        try {
            recallMessage.invoke(producer, topic, bad);
            ctx.fail.add("recall: a recall with a time in the past succeeded");
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (!(e.getCause() instanceof MQBrokerException)) {
                throw e;
            }
            MQBrokerException b = (MQBrokerException) e.getCause();
            System.err.println("timers: bad recall handle refused: code " + b.getResponseCode() + " remark "
                + b.getErrorMessage());
            ctx.fail.check("recall: a past handle's response code", 604, b.getResponseCode());
            ctx.fail.check("recall: a past handle's remark", "recall failed, timestamp invalid", b.getErrorMessage());
        }
        return "1-recalled";
    }

    private static Timed sendAccepted(Ctx ctx, DefaultMQProducer producer, Message m, String kind, long delayMs)
        throws Exception {
        long start = System.currentTimeMillis();
        SendResult r = producer.send(m);
        ProduceConsume.checkResult(ctx, kind, m, r);
        return new Timed(Sent.of(m, r), kind, delayMs, start, start + delayMs);
    }

    private static void sendRefused(Ctx ctx, DefaultMQProducer producer, Message m, String kind,
        Map<String, String> refused) throws Exception {
        try {
            SendResult r = producer.send(m);
            ctx.fail.add(kind + ": expected the broker to refuse the message with " + MESSAGE_ILLEGAL + ", got " + r);
            refused.put(kind, "accepted");
        } catch (MQBrokerException e) {
            System.err.println("timers: " + kind + " refused: code " + e.getResponseCode() + " remark "
                + e.getErrorMessage());
            refused.put(kind, Integer.toString(e.getResponseCode()));
            ctx.fail.check(kind + ": response code", MESSAGE_ILLEGAL, e.getResponseCode());
            if (e.getErrorMessage() == null || !e.getErrorMessage().contains("timer message illegal")) {
                ctx.fail.add(kind + ": remark", "timer message illegal ...", e.getErrorMessage());
            }
        }
    }

    private String sendPhase(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Timed> all = new ArrayList<>();
        all.add(plain(ctx, producer, topic, "warmup", 0));
        int n = ctx.count(25);
        for (int i = 0; i < n; i++) {
            String kind = RESTART_KINDS[i % RESTART_KINDS.length];
            long d = RESTART_DELAYS_S[(i / RESTART_KINDS.length) % RESTART_DELAYS_S.length] * 1000;
            all.add(timed(ctx, producer, topic, kind, d, i, RESTART_LEVEL));
        }
        List<String> lines = new ArrayList<>();
        lines.add("# timers state: topic, then kind<TAB>delayMs<TAB>sendStart<TAB>due<TAB>msgId<TAB>key<TAB>tag"
            + "<TAB>body");
        lines.add("topic\t" + topic);
        long lastDue = 0;
        for (Timed t : all) {
            lines.add(String.join("\t", t.kind, Long.toString(t.delayMs), Long.toString(t.sendStart),
                Long.toString(t.due), t.sent.msgId, t.sent.key, t.sent.tag, t.sent.body));
            lastDue = Math.max(lastDue, t.due);
        }
        Files.write(ctx.state, lines, StandardCharsets.UTF_8);
        return "api=" + api + " sent=" + all.size() + " lastDueInMs=" + (lastDue - System.currentTimeMillis())
            + " state=" + ctx.state;
    }

    private String consumePhase(Ctx ctx) throws Exception {
        String topic = null;
        List<Timed> all = new ArrayList<>();
        for (String l : Files.readAllLines(ctx.state, StandardCharsets.UTF_8)) {
            if (l.startsWith("#") || l.isEmpty()) {
                continue;
            }
            String[] f = l.split("\t", -1);
            if ("topic".equals(f[0])) {
                topic = f[1];
                continue;
            }
            Sent s = new Sent(topic, f[7], f[5], f[6], "v-" + f[5], f[4], null, -1, -1);
            all.add(new Timed(s, f[0], Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3])));
        }
        if (topic == null || all.isEmpty()) {
            throw new IllegalStateException("state file " + ctx.state + " lacks the topic or messages");
        }
        long start = System.currentTimeMillis();
        Received got = new Received();
        Arrivals arr = new Arrivals();
        startConsumer(ctx, ctx.group("cg"), topic, got, arr);
        ctx.await("the first message after the restart", () -> got.distinct() > 0, () -> "none received");
        long ready = System.currentTimeMillis();
        awaitAll(ctx, all, got);
        ctx.settle();
        List<Sent> expected = new ArrayList<>();
        int overdue = 0;
        for (Timed t : all) {
            expected.add(t.sent);
            if (t.due < start) {
                overdue++;
            }
        }
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "timers after restart", expected, got.list(), false);
        String late = checkTimes(ctx, all, arr, ready);
        return "sent=" + all.size() + " " + stats + " dueBeforeConsumerStart=" + overdue + " consumerReadyAfterMs="
            + (ready - start) + " lateMs(due once the consumer got its first message){kind=p50/p99/max}=" + late;
    }

    /** Waits until every message arrived, bounded by the last due time plus the run's timeout. */
    private static void awaitAll(Ctx ctx, List<Timed> all, Received got) throws InterruptedException {
        long lastDue = 0;
        for (Timed t : all) {
            lastDue = Math.max(lastDue, t.due);
        }
        long deadline = Math.max(lastDue, System.currentTimeMillis()) + ctx.timeoutMillis;
        while (got.distinct() < all.size()) {
            if (System.currentTimeMillis() > deadline) {
                ctx.fail.add("timed out " + ctx.timeoutMillis / 1000 + " s after the last due time waiting for "
                    + all.size()
                    + " messages (" + got.distinct() + " distinct received)");
                return;
            }
            Thread.sleep(20);
        }
    }

    /**
     * Not early: receipt and store time at or after the due time; and, for messages due at or after
     * FROM (all: Long.MIN_VALUE) other than the first plain one, not later than --max-late-ms.
     * Returns their lateness (receipt − due) p50/p99/max per kind.
     */
    private static String checkTimes(Ctx ctx, List<Timed> all, Arrivals arr, long from) {
        int maxLate = ctx.intOption("max-late-ms", MAX_LATE_MS);
        Map<String, List<Long>> late = new TreeMap<>();
        Map<String, Long> earliest = new TreeMap<>();
        for (Timed t : all) {
            Long receipt = arr.receipt.get(t.sent.body);
            Long stored = arr.stored.get(t.sent.body);
            if (receipt == null || stored == null) {
                continue; // missing: reported by the exactly-once check
            }
            if (receipt < t.due) {
                ctx.fail.add(t.kind + " " + t.sent.body + ": received " + (t.due - receipt) + " ms early (delay "
                    + t.delayMs + " ms)");
            }
            if (stored < t.due) {
                ctx.fail.add(t.kind + " " + t.sent.body + ": stored in its topic " + (t.due - stored)
                    + " ms before it was due (delay " + t.delayMs + " ms)");
            }
            earliest.merge(t.kind, receipt - t.due, Math::min);
            if (t.due >= from && !t.kind.equals("warmup") && receipt - t.due > maxLate) {
                ctx.fail.add(t.kind + " " + t.sent.body + ": received " + (receipt - t.due) + " ms after it was due"
                    + " (more than --max-late-ms " + maxLate + "; delay " + t.delayMs + " ms)");
            }
            if (t.due >= from) {
                late.computeIfAbsent(t.kind, k -> new ArrayList<>()).add(receipt - t.due);
            }
        }
        System.err.println("timers: smallest receipt - due per kind (ms): " + earliest);
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, List<Long>> e : late.entrySet()) {
            List<Long> v = e.getValue();
            Collections.sort(v);
            sb.append(sb.length() == 1 ? "" : ",").append(e.getKey()).append('=').append(v.get((v.size() - 1) / 2))
                .append('/').append(v.get((int) Math.ceil(v.size() * 0.99) - 1)).append('/')
                .append(v.get(v.size() - 1));
        }
        return sb.append('}').toString();
    }

    /** The property keys of the first delivery of each kind, for the record (stderr). */
    private static void logProperties(List<Timed> all, Received got) {
        Map<String, String> kindOf = new TreeMap<>();
        for (Timed t : all) {
            kindOf.put(t.sent.body, t.kind);
        }
        Map<String, String> seen = new TreeMap<>();
        for (Received.Got g : got.list()) {
            String kind = kindOf.get(g.body);
            if (kind != null && !seen.containsKey(kind)) {
                Map<String, String> p = new TreeMap<>(g.properties);
                p.keySet().removeAll(List.of("KEYS", "TAGS", "UNIQ_KEY", Ctx.PROP, "CONSUME_START_TIME", "MIN_OFFSET",
                    "MAX_OFFSET", "WAIT"));
                seen.put(kind, p.toString());
            }
        }
        for (Map.Entry<String, String> e : seen.entrySet()) {
            System.err.println("timers: delivered " + e.getKey() + " properties " + e.getValue());
        }
    }

    private static void startConsumer(Ctx ctx, String group, String topic, Received got, Arrivals arr)
        throws Exception {
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.subscribe(topic, "*");
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                Received.Got g = got.add("c1", m);
                if (g.body != null) {
                    arr.receipt.putIfAbsent(g.body, now);
                    arr.stored.putIfAbsent(g.body, m.getStoreTimestamp());
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
    }

    private static Message message(Ctx ctx, String topic, String kind, int i) {
        String k = kind.replace('+', '_');
        return Ctx.message(topic, "T" + k.replace("-", ""), ProduceConsume.key(ctx, k, i),
            ProduceConsume.body(ctx, k, i));
    }

    /** A message without delay (KIND "warmup" or "none"). */
    private static Timed plain(Ctx ctx, DefaultMQProducer producer, String topic, String kind, int i) throws Exception {
        return sendAccepted(ctx, producer, message(ctx, topic, kind, i), kind, 0);
    }

    /**
     * Sends a message of KIND due DELAY_MS from now (kind "level": delay level LEVEL instead);
     * checks the SendResult.
     */
    private Timed timed(Ctx ctx, DefaultMQProducer producer, String topic, String kind, long delayMs, int i,
        int level) throws Exception {
        Message m = message(ctx, topic, kind, i);
        long start = System.currentTimeMillis();
        long due = start + delayMs;
        switch (kind) {
            case "sec":
                set(m, "setDelayTimeSec", DELAY_SEC, delayMs / 1000);
                break;
            case "ms":
                set(m, "setDelayTimeMs", DELAY_MS, delayMs);
                break;
            case "deliver":
                set(m, "setDeliverTimeMs", DELIVER_MS, due);
                break;
            case "deliver-exact":
                // The next whole second at or after now + delay: the broker's exact-multiple case.
                due = (due + 999) / 1000 * 1000;
                set(m, "setDeliverTimeMs", DELIVER_MS, due);
                break;
            case "level":
                delayMs = level == RESTART_LEVEL ? RESTART_LEVEL_MS : LEVEL_MS;
                due = start + delayMs;
                m.setDelayTimeLevel(level);
                break;
            case "level+sec":
                // A delay level and a timer property: the broker drops the timer property.
                m.setDelayTimeLevel(LEVEL);
                set(m, "setDelayTimeSec", DELAY_SEC, delayMs / 1000);
                delayMs = LEVEL_MS;
                due = start + delayMs;
                break;
            default:
                throw new IllegalArgumentException(kind);
        }
        SendResult r = producer.send(m);
        ProduceConsume.checkResult(ctx, kind + " #" + i, m, r);
        // Delivered from the timer or schedule topic: a new commit-log position and queue offset.
        Sent s = new Sent(topic, new String(m.getBody(), StandardCharsets.UTF_8), m.getKeys(), m.getTags(),
            m.getUserProperty(Ctx.PROP), MessageClientIDSetter.getUniqID(m), null, -1, -1);
        return new Timed(s, kind, delayMs, start, due);
    }

    /**
     * Sets a timer property with the client's setter METHOD if it has one (5.x), else by name
     * (4.x); either way the message must then hold KEY = VALUE.
     */
    private void set(Message m, String method, String key, long value) throws Exception {
        try {
            Message.class.getMethod(method, long.class).invoke(m, value);
            api = "setters";
        } catch (NoSuchMethodException e) {
            MessageAccessor.putProperty(m, key, Long.toString(value));
            api = "property";
        }
        if (!Long.toString(value).equals(m.getProperty(key))) {
            throw new IllegalStateException(method + " did not set " + key + "=" + value + ": " + m.getProperties());
        }
    }
}
