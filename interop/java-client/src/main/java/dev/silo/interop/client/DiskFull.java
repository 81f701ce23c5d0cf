package dev.silo.interop.client;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A broker whose disk fills up must refuse sends, keep serving reads, and accept sends again by
 * itself once space is freed, without losing or duplicating an acknowledged message.
 *
 * <p>{@code --phase fill --state FILE}: one producer sync-sends messages with bodies of --body-size
 * bytes (default 16384; deterministic printable bytes derived from the run's suffix and the message
 * index, producer compression off so each stores its full size) and a unique key each to a new
 * topic, until a send is refused. Every acknowledged message (index, msgId, key, queue, offset) is
 * appended to FILE, and flushed, as soon as it is acknowledged. The refusal must carry response
 * code 14 (SERVICE_NOT_AVAILABLE) and a remark that says the disk is full (printed to stderr); a
 * second send right after must be refused the same way. No refusal after --count acknowledged
 * messages (default 100000) or --timeout is a failure, as is any other send failure. Then, still on
 * the full disk: the route (fetchPublishMessageQueues) and GET_BROKER_RUNTIME_INFO must answer, and
 * a lite pull consumer of a new group, assigned every queue, must read back every acknowledged
 * message exactly once from the first offset (body byte for byte, key, msgId, queue, offset, body
 * CRC), no refused message, and per queue offsets without holes.
 *
 * <p>{@code --phase resume --state FILE}, after space was freed: sends new messages until one is
 * acknowledged, retrying refusals with code 14 (each attempt a new message, recorded as refused)
 * for up to --timeout, without restarting anything; then --resume-count (default 50) more, each of
 * which must be acknowledged. A lite pull consumer of another new group then reads the whole topic
 * from the first offset: every acknowledged message of both phases exactly once with the recorded
 * ids, queue and offset and an intact body and key, no refused message, offsets without holes.
 *
 * <p>The stock client retries a refused sync send (code 14 is one of its retry codes,
 * retryTimesWhenSendFailed 2: three SEND_MESSAGE_V2 requests per send) and then throws an
 * MQClientException with response code 14 whose cause is the last attempt's MQBrokerException; the
 * scenario accepts either exception and reads the code and remark from the MQBrokerException.
 */
final class DiskFull implements Scenario {

    private static final int SERVICE_NOT_AVAILABLE = 14;
    private static final int DEFAULT_MAX_MESSAGES = 100000;
    private static final int DEFAULT_BODY_SIZE = 16384;
    private static final int DEFAULT_RESUME_COUNT = 50;
    private static final long RETRY_PAUSE_MILLIS = 200;
    private static final long SAMPLE_MILLIS = 500;
    private static final Pattern DISK_FULL = Pattern.compile("(?is).*\\bdisk\\b.*\\bfull\\b.*");
    private static final byte[] ALPHABET =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".getBytes(StandardCharsets.US_ASCII);

    /** An acknowledged message as recorded in the state file. */
    static final class Ack {
        final String phase;
        final int index;
        final String msgId;
        final String key;
        final int queueId;
        final long queueOffset;

        Ack(String phase, int index, String msgId, String key, int queueId, long queueOffset) {
            this.phase = phase;
            this.index = index;
            this.msgId = msgId;
            this.key = key;
            this.queueId = queueId;
            this.queueOffset = queueOffset;
        }

        @Override
        public String toString() {
            return "{" + phase + " #" + index + " key=" + key + " msgId=" + msgId + " queue=" + queueId + "@"
                + queueOffset + "}";
        }
    }

    /** Everything the state file says. */
    static final class State {
        String topic;
        String suffix;
        int bodySize = -1;
        final List<Ack> acked = new ArrayList<>();
        /** key -> phase of messages the broker refused (must never be read). */
        final Map<String, String> refused = new LinkedHashMap<>();
        /** key -> phase of sends that failed otherwise (stored or not: read at most once). */
        final Map<String, String> unknown = new LinkedHashMap<>();
        int nextIndex;
    }

    /** The outcome of one send. */
    static final class Outcome {
        SendResult result;
        Throwable error;
        /** Response code of the broker's refusal (from the MQBrokerException), or -1. */
        int brokerCode = -1;
        String remark;
        String chain;
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        if (ctx.state == null) {
            throw new IllegalArgumentException("disk-full needs --state FILE");
        }
        if ("fill".equals(ctx.phase)) {
            return fill(ctx);
        }
        if ("resume".equals(ctx.phase)) {
            return resume(ctx);
        }
        throw new IllegalArgumentException("disk-full needs --phase fill or --phase resume");
    }

    // ---------------------------------------------------------------- fill

    private String fill(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        int bodySize = ctx.intOption("body-size", DEFAULT_BODY_SIZE);
        int max = ctx.count(DEFAULT_MAX_MESSAGES);
        State st = new State();
        st.topic = topic;
        st.suffix = ctx.suffix;
        st.bodySize = bodySize;
        BufferedWriter w = Files.newBufferedWriter(ctx.state, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
            StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
        ctx.closeLater(() -> closeQuietly(w));
        line(w, "# disk-full state: topic, suffix, body-size, then one line per send:");
        line(w, "# sent<TAB>phase<TAB>index<TAB>msgId<TAB>key<TAB>queueId<TAB>queueOffset | refused<TAB>phase<TAB>"
            + "index<TAB>key<TAB>code | unknown<TAB>phase<TAB>index<TAB>key<TAB>error");
        line(w, "topic\t" + topic);
        line(w, "suffix\t" + st.suffix);
        line(w, "body-size\t" + bodySize);

        DefaultMQProducer producer = producer(ctx);
        Sampler sampler = null;
        long start = System.nanoTime();
        long deadline = start + ctx.timeoutMillis * 1_000_000L;
        Outcome refusal = null;
        long refusedAtMillis = -1;
        int index = 0;
        while (true) {
            if (index >= max) {
                ctx.fail.add("fill: no send refused after " + max + " acknowledged messages of " + bodySize
                    + " bytes (--count)");
                break;
            }
            if (System.nanoTime() > deadline) {
                ctx.fail.add("fill: no send refused within " + ctx.timeoutMillis / 1000 + " s (--timeout), "
                    + st.acked.size() + " messages acknowledged");
                break;
            }
            Outcome o = send(ctx, producer, st, "fill", index);
            if (o.result != null) {
                record(ctx, w, st, "fill", index, o);
                if (sampler == null) {
                    sampler = new Sampler(ctx, producer, topic, start);
                    sampler.start();
                }
            } else if (o.brokerCode == SERVICE_NOT_AVAILABLE) {
                refusedAtMillis = (System.nanoTime() - start) / 1_000_000L;
                refused(w, st, "fill", index, o);
                refusal = o;
                break;
            } else {
                unknown(w, st, "fill", index, o);
                ctx.fail.add("fill: send #" + index + " (after " + st.acked.size() + " acknowledged) failed other than "
                    + "with a refusal code 14: " + o.chain);
                break;
            }
            index++;
        }
        double fillSeconds = (System.nanoTime() - start) / 1e9;
        if (sampler != null) {
            sampler.stop();
        }
        if (refusal == null) {
            return null;
        }
        System.err.println("disk-full: fill: send #" + index + " refused after " + st.acked.size()
            + " acknowledged messages (" + String.format(Locale.ROOT, "%.1f", fillSeconds) + " s): " + refusal.chain);
        System.err.println("disk-full: refusal remark: " + refusal.remark);
        checkRefusal(ctx, "fill: first refusal", refusal);

        // The refusal persists: a second send right after is refused the same way.
        index++;
        Outcome second = send(ctx, producer, st, "fill", index);
        if (second.result != null) {
            record(ctx, w, st, "fill", index, second);
            ctx.fail.add("fill: the send right after the refusal was acknowledged: " + second.result);
        } else if (second.brokerCode == SERVICE_NOT_AVAILABLE) {
            refused(w, st, "fill", index, second);
            System.err.println("disk-full: second refusal remark: " + second.remark);
            checkRefusal(ctx, "fill: second refusal", second);
        } else {
            unknown(w, st, "fill", index, second);
            ctx.fail.add("fill: the send right after the refusal failed other than with code 14: " + second.chain);
        }

        // Still on the full disk: the route, the broker's runtime info and every acknowledged message.
        String admin = adminReads(ctx, producer, topic);
        String read = readBack(ctx, "fill read-back", topic, ctx.group("cg"), st);
        long bytes = (long) st.acked.size() * bodySize;
        String trajectory = sampler == null ? "" : sampler.summary(refusedAtMillis);
        if (!trajectory.isEmpty()) {
            System.err.println("disk-full: commitLogDiskRatio samples (ms since first send=ratio): " + trajectory);
        }
        return "acknowledged=" + st.acked.size() + " bodyBytes=" + bytes + " refusedAfter="
            + String.format(Locale.ROOT, "%.1fs", fillSeconds) + " refusal=" + refusal.brokerCode + " "
            + describe(refusal) + " secondRefusal=" + second.brokerCode + " " + admin + " " + read
            + " state=" + ctx.state;
    }

    /** Code 14 (by construction) and a remark that says the disk is full. */
    private static void checkRefusal(Ctx ctx, String what, Outcome o) {
        ctx.fail.check(what + " response code", SERVICE_NOT_AVAILABLE, o.brokerCode);
        if (o.remark == null || !DISK_FULL.matcher(o.remark).matches()) {
            ctx.fail.add(what + ": the remark does not say the disk is full: " + o.remark);
        }
    }

    /** How the refusal reached the application, e.g. MQClientException(14)<-MQBrokerException(14). */
    private static String describe(Outcome o) {
        return "via=" + o.chain.replaceAll(":.*?(?=<-|$)", "");
    }

    // ---------------------------------------------------------------- resume

    private String resume(Ctx ctx) throws Exception {
        State st = readState(ctx);
        int resumeCount = ctx.intOption("resume-count", DEFAULT_RESUME_COUNT);
        BufferedWriter w = Files.newBufferedWriter(ctx.state, StandardCharsets.UTF_8, StandardOpenOption.APPEND,
            StandardOpenOption.WRITE);
        ctx.closeLater(() -> closeQuietly(w));
        int fillAcked = st.acked.size();
        int fillRefused = st.refused.size();
        DefaultMQProducer producer = producer(ctx);
        long start = System.nanoTime();
        long deadline = start + ctx.timeoutMillis * 1_000_000L;
        int index = st.nextIndex;
        int refusals = 0;
        String firstRemark = null;
        boolean accepted = false;
        while (!accepted) {
            Outcome o = send(ctx, producer, st, "resume", index);
            if (o.result != null) {
                record(ctx, w, st, "resume", index, o);
                accepted = true;
            } else if (o.brokerCode == SERVICE_NOT_AVAILABLE) {
                refused(w, st, "resume", index, o);
                refusals++;
                if (firstRemark == null) {
                    firstRemark = o.remark;
                    System.err.println("disk-full: resume: still refused: " + o.chain);
                }
                if (System.nanoTime() > deadline) {
                    ctx.fail.add("resume: sends still refused with code 14 after " + ctx.timeoutMillis / 1000 + " s ("
                        + refusals + " attempts); last remark: " + o.remark);
                    return null;
                }
                Thread.sleep(RETRY_PAUSE_MILLIS);
            } else {
                unknown(w, st, "resume", index, o);
                ctx.fail.add("resume: send #" + index + " failed other than with a refusal code 14: " + o.chain);
                return null;
            }
            index++;
        }
        double acceptedAfter = (System.nanoTime() - start) / 1e9;
        System.err.println("disk-full: resume: first send acknowledged after " + refusals + " refused attempt(s), "
            + String.format(Locale.ROOT, "%.1f", acceptedAfter) + " s");
        for (int i = 0; i < resumeCount; i++, index++) {
            Outcome o = send(ctx, producer, st, "resume", index);
            if (o.result != null) {
                record(ctx, w, st, "resume", index, o);
            } else {
                if (o.brokerCode == SERVICE_NOT_AVAILABLE) {
                    refused(w, st, "resume", index, o);
                } else {
                    unknown(w, st, "resume", index, o);
                }
                ctx.fail.add("resume: send #" + index + " after the first acknowledged one failed: " + o.chain);
                break;
            }
        }
        String admin = adminReads(ctx, producer, st.topic);
        String read = readBack(ctx, "resume read-back", st.topic, ctx.group("rg"), st);
        return "fillAcknowledged=" + fillAcked + " fillRefused=" + fillRefused + " resumeRefused=" + refusals
            + " acceptedAfter=" + String.format(Locale.ROOT, "%.1fs", acceptedAfter) + " resumeAcknowledged="
            + (st.acked.size() - fillAcked) + " " + admin + " " + read;
    }

    private static State readState(Ctx ctx) throws IOException {
        State st = new State();
        int maxIndex = -1;
        for (String l : Files.readAllLines(ctx.state, StandardCharsets.UTF_8)) {
            if (l.isEmpty() || l.startsWith("#")) {
                continue;
            }
            String[] f = l.split("\t", -1);
            switch (f[0]) {
                case "topic":
                    st.topic = f[1];
                    break;
                case "suffix":
                    st.suffix = f[1];
                    break;
                case "body-size":
                    st.bodySize = Integer.parseInt(f[1]);
                    break;
                case "sent":
                    st.acked.add(new Ack(f[1], Integer.parseInt(f[2]), f[3], f[4], Integer.parseInt(f[5]),
                        Long.parseLong(f[6])));
                    maxIndex = Math.max(maxIndex, Integer.parseInt(f[2]));
                    break;
                case "refused":
                    st.refused.put(f[3], f[1]);
                    maxIndex = Math.max(maxIndex, Integer.parseInt(f[2]));
                    break;
                case "unknown":
                    st.unknown.put(f[3], f[1]);
                    maxIndex = Math.max(maxIndex, Integer.parseInt(f[2]));
                    break;
                default:
                    throw new IllegalStateException("state file " + ctx.state + ": unexpected line " + l);
            }
        }
        if (st.topic == null || st.suffix == null || st.bodySize < 0 || st.acked.isEmpty()) {
            throw new IllegalStateException("state file " + ctx.state + " lacks topic, suffix, body-size or "
                + "acknowledged messages (run --phase fill first)");
        }
        st.nextIndex = maxIndex + 1;
        return st;
    }

    // ---------------------------------------------------------------- sending

    private static DefaultMQProducer producer(Ctx ctx) throws MQClientException {
        DefaultMQProducer p = ctx.producer(ctx.name("pg"));
        // Bodies of 4 KiB and more would be compressed: store them as they are, so that every
        // acknowledged message takes its full size on the broker's disk.
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        return p;
    }

    static String key(State st, int index) {
        return "df-" + st.suffix + "-" + index;
    }

    /**
     * SIZE bytes for message INDEX of the run with SUFFIX: "disk-full SUFFIX #INDEX " and then
     * printable pseudo-random bytes (xorshift, seeded by both), the same in every phase.
     */
    static byte[] body(String suffix, int index, int size) {
        byte[] b = new byte[size];
        byte[] head = ("disk-full " + suffix + " #" + index + " ").getBytes(StandardCharsets.US_ASCII);
        int n = Math.min(head.length, size);
        System.arraycopy(head, 0, b, 0, n);
        long x = suffix.hashCode() * 0x9E3779B97F4A7C15L ^ (index + 1L) * 0xBF58476D1CE4E5B9L;
        if (x == 0) {
            x = 1;
        }
        for (int i = n; i < size; i++) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            b[i] = ALPHABET[(int) (x >>> 58)];
        }
        return b;
    }

    private static Outcome send(Ctx ctx, DefaultMQProducer producer, State st, String phase, int index)
        throws InterruptedException {
        String key = key(st, index);
        Message m = new Message(st.topic, phase, key, body(st.suffix, index, st.bodySize));
        m.putUserProperty(Ctx.PROP, "v-" + key);
        Outcome o = new Outcome();
        try {
            o.result = producer.send(m);
            // SEND_OK, both ids, msgId = the UNIQ_KEY the client stamped; a difference otherwise.
            ProduceConsume.checkResult(ctx, phase + " #" + index, m, o.result);
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            o.result = null;
            o.error = e;
            StringBuilder chain = new StringBuilder();
            for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
                String code = "";
                if (t instanceof MQBrokerException) {
                    MQBrokerException b = (MQBrokerException) t;
                    code = "(" + b.getResponseCode() + ")";
                    if (o.brokerCode < 0) {
                        o.brokerCode = b.getResponseCode();
                        o.remark = b.getErrorMessage();
                    }
                } else if (t instanceof MQClientException) {
                    code = "(" + ((MQClientException) t).getResponseCode() + ")";
                }
                chain.append(chain.length() == 0 ? "" : "<-").append(t.getClass().getSimpleName()).append(code);
                if (chain.length() > 0 && t == e) {
                    chain.append(": ").append(firstLine(t.getMessage()));
                }
            }
            o.chain = chain.toString();
        }
        return o;
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "null";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    private static void record(Ctx ctx, BufferedWriter w, State st, String phase, int index, Outcome o)
        throws IOException {
        SendResult r = o.result;
        Ack a = new Ack(phase, index, r.getMsgId(), key(st, index), r.getMessageQueue().getQueueId(),
            r.getQueueOffset());
        st.acked.add(a);
        line(w, String.join("\t", "sent", phase, Integer.toString(index), a.msgId, a.key, Integer.toString(a.queueId),
            Long.toString(a.queueOffset)));
    }

    private static void refused(BufferedWriter w, State st, String phase, int index, Outcome o) throws IOException {
        st.refused.put(key(st, index), phase);
        line(w, String.join("\t", "refused", phase, Integer.toString(index), key(st, index),
            Integer.toString(o.brokerCode)));
    }

    private static void unknown(BufferedWriter w, State st, String phase, int index, Outcome o) throws IOException {
        st.unknown.put(key(st, index), phase);
        line(w, String.join("\t", "unknown", phase, Integer.toString(index), key(st, index),
            o.chain.replace('\t', ' ').replace('\n', ' ')));
    }

    /** Appends one line and flushes it, so that a later phase sees it whatever happens to this run. */
    private static void line(BufferedWriter w, String s) throws IOException {
        w.write(s);
        w.newLine();
        w.flush();
    }

    private static void closeQuietly(BufferedWriter w) {
        try {
            w.close();
        } catch (IOException e) {
            // nothing left to do
        }
    }

    // ---------------------------------------------------------------- admin reads

    /**
     * The route (from the name server) and GET_BROKER_RUNTIME_INFO (from the broker) must answer;
     * returns the broker's disk figures for the PASS line.
     */
    private static String adminReads(Ctx ctx, DefaultMQProducer producer, String topic) {
        List<MessageQueue> mqs;
        try {
            mqs = new ArrayList<>(producer.fetchPublishMessageQueues(topic));
        } catch (MQClientException e) {
            ctx.fail.add("fetchPublishMessageQueues(" + topic + ") failed: " + e);
            return "route=error";
        }
        if (mqs.isEmpty()) {
            ctx.fail.add("fetchPublishMessageQueues(" + topic + ") returned no queue");
            return "route=empty";
        }
        Map<String, String> info;
        try {
            info = runtimeInfo(producer, mqs.get(0).getBrokerName());
        } catch (Exception e) {
            ctx.fail.add("GET_BROKER_RUNTIME_INFO failed: " + e);
            return "queues=" + mqs.size() + " runtimeInfo=error";
        }
        if (!info.containsKey("commitLogDiskRatio")) {
            ctx.fail.add("GET_BROKER_RUNTIME_INFO: no commitLogDiskRatio in " + new TreeSet<>(info.keySet()));
        }
        return "queues=" + mqs.size() + " commitLogDiskRatio=" + info.get("commitLogDiskRatio")
            + " consumeQueueDiskRatio=" + info.get("consumeQueueDiskRatio") + " commitLogMinOffset="
            + info.get("commitLogMinOffset") + " commitLogMaxOffset=" + info.get("commitLogMaxOffset");
    }

    /**
     * The broker's GET_BROKER_RUNTIME_INFO table, through the producer's own client instance (the
     * KVTable class is in a different package in the 4.x and 5.x clients; var covers both).
     */
    static Map<String, String> runtimeInfo(DefaultMQProducer producer, String brokerName) throws Exception {
        MQClientInstance factory = producer.getDefaultMQProducerImpl().getMqClientFactory();
        String addr = factory.findBrokerAddressInPublish(brokerName);
        if (addr == null) {
            throw new IllegalStateException("no address for broker " + brokerName);
        }
        var table = factory.getMQClientAPIImpl().getBrokerRuntimeInfo(addr, 3000);
        return new HashMap<>(table.getTable());
    }

    /** Samples commitLogDiskRatio while the fill runs, to show how the refusal lags the disk. */
    private static final class Sampler {
        private final Ctx ctx;
        private final DefaultMQProducer producer;
        private final String topic;
        private final long start;
        private final Map<Long, String> changes = new ConcurrentHashMap<>();
        private volatile boolean running = true;
        private Thread thread;

        Sampler(Ctx ctx, DefaultMQProducer producer, String topic, long start) {
            this.ctx = ctx;
            this.start = start;
            this.producer = producer;
            this.topic = topic;
        }

        void start() {
            thread = new Thread(this::loop, "silo-disk-ratio");
            thread.setDaemon(true);
            thread.start();
        }

        private void loop() {
            String last = null;
            String brokerName = null;
            while (running) {
                try {
                    if (brokerName == null) {
                        brokerName = LitePull.brokerName(producer, topic);
                    }
                    String r = runtimeInfo(producer, brokerName).get("commitLogDiskRatio");
                    if (r != null && !r.equals(last)) {
                        changes.put((System.nanoTime() - start) / 1_000_000L, r);
                        last = r;
                    }
                    Thread.sleep(SAMPLE_MILLIS);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // a missed sample; the next one may work
                    try {
                        Thread.sleep(SAMPLE_MILLIS);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }

        void stop() throws InterruptedException {
            running = false;
            thread.interrupt();
            thread.join(ctx.timeoutMillis);
        }

        /** "ms=ratio ..." of every change, with the refusal's time marked. */
        String summary(long refusedAtMillis) {
            StringBuilder sb = new StringBuilder();
            boolean marked = false;
            for (Map.Entry<Long, String> e : new TreeMap<>(changes).entrySet()) {
                if (!marked && e.getKey() > refusedAtMillis) {
                    sb.append(" [refused at ").append(refusedAtMillis).append("]");
                    marked = true;
                }
                sb.append(sb.length() == 0 ? "" : " ").append(e.getKey()).append('=').append(e.getValue());
            }
            if (!marked && sb.length() > 0) {
                sb.append(" [refused at ").append(refusedAtMillis).append("]");
            }
            return sb.toString();
        }
    }

    // ---------------------------------------------------------------- read-back

    /**
     * A lite pull consumer of GROUP, assigned every queue of TOPIC (a new group starts at the first
     * offset), reads until it has every acknowledged message of ST, then keeps polling for the settle
     * time. Each acknowledged message must arrive exactly once with the recorded msgId, key, queue and
     * offset, its body byte for byte and a matching body CRC; no refused message may arrive; a send
     * that failed otherwise may arrive at most once; nothing else may. Per queue the offsets read must
     * have no holes.
     */
    private static String readBack(Ctx ctx, String label, String topic, String group, State st) throws Exception {
        Map<String, Ack> byKey = new HashMap<>();
        for (Ack a : st.acked) {
            byKey.put(a.key, a);
        }
        DefaultLitePullConsumer c = ctx.litePullConsumer(group);
        c.setPullBatchSize(32);
        c.setPullThresholdForQueue(250);
        c.setPullThresholdForAll(1000);
        c.start();
        Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
        c.assign(mqs);
        Map<String, Integer> deliveries = new HashMap<>();
        Map<Integer, TreeSet<Long>> offsets = new TreeMap<>();
        int[] counters = new int[4]; // ok, unknownStored, badFirst, total
        long deadline = System.nanoTime() + ctx.timeoutMillis * 1_000_000L;
        int wanted = byKey.size();
        int[] have = {0};
        while (have[0] < wanted && System.nanoTime() < deadline) {
            for (MessageExt m : c.poll(200)) {
                check(ctx, label, topic, st, byKey, m, deliveries, offsets, counters, have);
            }
        }
        if (have[0] < wanted) {
            // Missing below the first offset still readable in its queue (the head of the queue was
            // deleted), or elsewhere (never stored, or unreadable).
            List<String> head = new ArrayList<>();
            List<String> other = new ArrayList<>();
            for (Ack a : st.acked) {
                if (!deliveries.containsKey(a.key)) {
                    TreeSet<Long> read = offsets.get(a.queueId);
                    (read != null && a.queueOffset < read.first() ? head : other).add(a.toString());
                }
            }
            ctx.fail.add(label + ": timed out after " + ctx.timeoutMillis / 1000 + " s with " + have[0] + " of " + wanted
                + " acknowledged messages; missing " + (head.size() + other.size()) + ": " + head.size()
                + " below the first offset read in their queue (first " + head.subList(0, Math.min(2, head.size()))
                + "), " + other.size() + " others (first " + other.subList(0, Math.min(5, other.size())) + ")");
        }
        long settle = System.nanoTime() + ctx.settleMillis * 1_000_000L;
        while (System.nanoTime() < settle) {
            for (MessageExt m : c.poll(100)) {
                check(ctx, label, topic, st, byKey, m, deliveries, offsets, counters, have);
            }
        }
        c.shutdown();
        int duplicates = 0;
        for (Map.Entry<String, Integer> e : deliveries.entrySet()) {
            if (e.getValue() > 1) {
                duplicates++;
                if (duplicates <= 5) {
                    ctx.fail.add(label + ": " + e.getKey() + " read " + e.getValue() + " times");
                }
            }
        }
        if (duplicates > 5) {
            ctx.fail.add(label + ": " + duplicates + " keys read more than once in all");
        }
        Map<Integer, Integer> perQueue = new TreeMap<>();
        for (Map.Entry<Integer, TreeSet<Long>> e : offsets.entrySet()) {
            TreeSet<Long> set = e.getValue();
            long min = set.first();
            long maxOff = set.last();
            if (ctx.topicOption == null) {
                // A new topic: every queue starts at offset 0.
                ctx.fail.check(label + ": first offset read in queue " + e.getKey(), 0L, min);
            }
            if (maxOff - min + 1 != set.size()) {
                ctx.fail.add(label + ": queue " + e.getKey() + " offsets read have holes: " + set.size()
                    + " distinct offsets in [" + min + ", " + maxOff + "]");
            }
            perQueue.put(e.getKey(), set.size());
        }
        return label.replace(' ', '-') + ": read=" + counters[3] + " acknowledgedRead=" + counters[0]
            + " unknownRead=" + counters[1] + " duplicates=" + duplicates + " perQueue=" + perQueue;
    }

    private static void check(Ctx ctx, String label, String topic, State st, Map<String, Ack> byKey, MessageExt m,
        Map<String, Integer> deliveries, Map<Integer, TreeSet<Long>> offsets, int[] counters, int[] have) {
        counters[3]++;
        String key = m.getKeys();
        int n = deliveries.merge(key == null ? "<no key>" : key, 1, Integer::sum);
        offsets.computeIfAbsent(m.getQueueId(), q -> new TreeSet<>()).add(m.getQueueOffset());
        if (n > 1) {
            return;
        }
        Ack a = key == null ? null : byKey.get(key);
        if (a == null) {
            if (key != null && st.refused.containsKey(key)) {
                ctx.fail.add(label + ": a refused message (" + st.refused.get(key) + ", key " + key + ") was stored, at "
                    + m.getQueueId() + "@" + m.getQueueOffset());
            } else if (key != null && st.unknown.containsKey(key)) {
                counters[1]++;
            } else {
                ctx.fail.add(label + ": unexpected message key=" + key + " at " + m.getQueueId() + "@"
                    + m.getQueueOffset());
            }
            return;
        }
        have[0]++;
        String what = label + " " + a;
        boolean ok = ctx.fail.check(what + " topic", topic, m.getTopic());
        ok &= ctx.fail.check(what + " msgId", a.msgId, m.getMsgId());
        ok &= ctx.fail.check(what + " queue@offset", a.queueId + "@" + a.queueOffset,
            m.getQueueId() + "@" + m.getQueueOffset());
        ok &= ctx.fail.check(what + " tags", a.phase, m.getTags());
        ok &= ctx.fail.check(what + " user property " + Ctx.PROP, "v-" + key, m.getUserProperty(Ctx.PROP));
        byte[] want = body(st.suffix, a.index, st.bodySize);
        byte[] got = m.getBody();
        if (!Arrays.equals(want, got)) {
            ok = false;
            ctx.fail.add(what + ": body differs (" + (got == null ? "null" : got.length + " bytes, first difference at "
                + Arrays.mismatch(want, got)) + "; expected " + want.length + " bytes)");
        } else if (m.getBodyCRC() != UtilAll.crc32(got)) {
            ok = false;
            ctx.fail.add(what + ": bodyCRC does not match the body");
        }
        if (ok) {
            counters[0]++;
        }
    }
}
