package dev.silo.interop.client;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * A dead-letter queue read back with a lite pull consumer.
 *
 * <p>N messages (default 20; --count changes it) with bodies of 1 byte to 16 KiB (the producer
 * compresses those of 4 KiB and more; odd-numbered bodies are incompressible bytes that need not be
 * valid UTF-8, even-numbered ones repetitive multi-byte text), distinct keys and tags, and user
 * properties with non-ASCII names and values. A push consumer of a fresh group (maxReconsumeTimes 1,
 * retry delay level 1 = 1 s) answers RECONSUME_LATER to every delivery, so each message arrives
 * twice, byte-exact (reconsumeTimes 0 from the topic, 1 from %RETRY%group), and its second failure
 * sends it to %DLQ%group. The scenario waits (bounded) until the DLQ's max offset is N.
 *
 * <p>A DefaultLitePullConsumer of another group then assigns the DLQ's queues, seekToBegin, and polls
 * until it has N distinct messages: each with the sent body (byte for byte), keys, tags, user
 * properties and msgId (UNIQ_KEY), topic %DLQ%group, queue 0, reconsumeTimes 2, RETRY_TOPIC = the
 * topic, ORIGIN_MESSAGE_ID = the original offsetMsgId, an offsetMsgId of its own, and together the
 * queue offsets 0..N-1. Every pull response of the DLQ is also decoded record by record as stored
 * (body not decompressed): every record must decode, its body CRC must match its stored body, and
 * the compression flag must be set exactly on the bodies the producer compressed. The PASS line lists
 * the DLQ pulls as offset:responseCode/records-&gt;nextBeginOffset[minOffset,maxOffset).
 *
 * <p>The broker's send-back path records the count in the record's reconsumeTimes field; the
 * RECONSUME_TIME and MAX_RECONSUME_TIMES properties appear only when the client re-sends a message
 * itself (orderly consumers, or after a failed CONSUMER_SEND_MSG_BACK), so they are not expected here.
 *
 * <p>The seek waits until the queue's pull is held at the end of the DLQ (as in {@code lite-pull}).
 * 5.3.3's seek interrupts the queue's running pull task; if that task is just sending its next pull,
 * the client fails the send and closes the broker connection, which also fails the replacement
 * task's first pull, the one that carried the seek offset. The replacement then goes on from the
 * offset the old task had reached, and the batch the old task had fetched was dropped by the seek:
 * those messages are never read (seen as 10 of 20 with the default pullBatchSize of 10). The first
 * pull of a fresh consumer usually completes within the seek's own GET_MIN_OFFSET/GET_MAX_OFFSET
 * round trips against a broker that answers in well under a millisecond, so seeking right after
 * assign hits this against such a broker in a few percent of runs. Interrupting a held pull just
 * ends it.
 */
final class DlqLitePull implements Scenario {

    private static final int DEFAULT_COUNT = 20;
    private static final int MAX_RECONSUME_TIMES = 1;
    /** Body sizes, cycled: around the 4 KiB compression threshold, and up to 16 KiB. */
    private static final int[] SIZES = {16384, 1, 4096, 4097, 200, 16000, 5000, 1023, 8192, 3000, 12000, 64,
        4200, 9999, 2048, 15000, 6500, 10, 11111, 4095};
    /** The producer's default compressMsgBodyOverHowmuch: bodies this long or longer are compressed. */
    private static final int COMPRESS_FROM = 4096;
    private static final String PROP_UNI = "silo-uni";
    private static final String PROP_UNI_NAME = "ключ-名";
    private static final int LITE_PULL_MESSAGE = 361;

    /** What was sent, by key. */
    private static final class Expected {
        final String key;
        final String tag;
        final byte[] body;
        final Map<String, String> userProps;
        String msgId;
        String offsetMsgId;

        Expected(String key, String tag, byte[] body, Map<String, String> userProps) {
            this.key = key;
            this.tag = tag;
            this.body = body;
            this.userProps = userProps;
        }
    }

    /** One answered pull of the DLQ by the lite pull consumer. */
    private static final class Pull {
        final long offset;
        final int code;
        final int records;
        final String next;

        Pull(long offset, int code, int records, String next) {
            this.offset = offset;
            this.code = code;
            this.records = records;
            this.next = next;
        }

        @Override
        public String toString() {
            return offset + ":" + code + "/" + records + "->" + next;
        }
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        int n = ctx.count(DEFAULT_COUNT);
        String topic = ctx.topic();
        String group = ctx.group("cg");
        String dlqTopic = MixAll.getDLQTopic(group);
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));

        Map<String, Expected> byKey = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) {
            String key = ProduceConsume.key(ctx, "dlq", i);
            Map<String, String> props = new LinkedHashMap<>();
            props.put(Ctx.PROP, "v-" + key);
            props.put(PROP_UNI, "ключ-" + i + "-值");
            props.put(PROP_UNI_NAME, "значение " + i + " 値");
            Expected e = new Expected(key, "DlqTag" + i, body(ctx, i), props);
            Message m = new Message(topic, e.tag, key, e.body.clone());
            props.forEach(m::putUserProperty);
            SendResult r = producer.send(m);
            ProduceConsume.checkResult(ctx, "send #" + i, m, r);
            e.msgId = MessageClientIDSetter.getUniqID(m);
            e.offsetMsgId = r == null ? null : r.getOffsetMsgId();
            byKey.put(key, e);
        }
        String brokerName = LitePull.brokerName(producer, topic);

        // Fail every delivery; after MAX_RECONSUME_TIMES retries the broker moves it to the DLQ.
        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        List<String> pushDiffs = new CopyOnWriteArrayList<>();
        AtomicInteger pushTotal = new AtomicInteger();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setMaxReconsumeTimes(MAX_RECONSUME_TIMES);
        // %RETRY%group is routed only after the first heartbeat: do not wait 30 s for the route poll.
        consumer.setPollNameServerInterval(1000);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                pushTotal.incrementAndGet();
                deliveries.computeIfAbsent(String.valueOf(m.getKeys()), k -> new CopyOnWriteArrayList<>())
                    .add(m.getReconsumeTimes());
                Expected e = byKey.get(m.getKeys());
                if (e == null) {
                    pushDiffs.add("push: unexpected message keys=" + m.getKeys());
                } else if (!Arrays.equals(e.body, m.getBody())) {
                    pushDiffs.add("push: body of " + e.key + " (reconsumeTimes " + m.getReconsumeTimes()
                        + ") differs: " + describe(e.body, m.getBody()));
                }
            }
            c.setDelayLevelWhenNextConsume(1);
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        consumer.start();

        final int expectedDeliveries = n * (MAX_RECONSUME_TIMES + 1);
        ctx.await(expectedDeliveries + " push deliveries (" + (MAX_RECONSUME_TIMES + 1) + " per message)",
            () -> pushTotal.get() >= expectedDeliveries, () -> pushTotal.get() + " so far");
        long[] dlqMax = {-1};
        awaitDlqMaxOffset(ctx, new MessageQueue(dlqTopic, brokerName, 0), n, dlqMax);
        ctx.settle();
        consumer.shutdown();
        ctx.fail.check("push deliveries in all", expectedDeliveries, pushTotal.get());
        for (String d : pushDiffs) {
            ctx.fail.add(d);
        }
        List<Integer> wantTimes = new ArrayList<>();
        for (int t = 0; t <= MAX_RECONSUME_TIMES; t++) {
            wantTimes.add(t);
        }
        for (Expected e : byKey.values()) {
            List<Integer> times = new ArrayList<>(deliveries.getOrDefault(e.key, List.of()));
            times.sort(null);
            ctx.fail.check("push: reconsumeTimes of the deliveries of " + e.key, wantTimes, times);
        }

        // Read the DLQ back from the beginning with a lite pull consumer of another group.
        String group2 = ctx.group("cg2");
        List<Pull> pulls = new CopyOnWriteArrayList<>();
        List<String> rawDiffs = new CopyOnWriteArrayList<>();
        ctx.hook.onPullResponse((req, resp) -> {
            if (req.getCode() != LITE_PULL_MESSAGE || !group2.equals(header(req, "getConsumerGroup"))) {
                return;
            }
            Object offset = header(req, "getQueueOffset");
            Map<String, String> ext = resp.getExtFields();
            String next = ext == null ? "?" : ext.get("nextBeginOffset") + "[" + ext.get("minOffset") + ","
                + ext.get("maxOffset") + ")";
            int records = resp.getCode() == 0 && resp.getBody() != null
                ? checkStored(resp.getBody(), byKey, rawDiffs) : 0;
            pulls.add(new Pull(offset instanceof Long ? (Long) offset : -1, resp.getCode(), records, next));
        });
        DefaultLitePullConsumer lite = ctx.litePullConsumer(group2);
        lite.setAutoCommit(false);
        lite.start();
        Collection<MessageQueue> mqs = new ArrayList<>();
        ctx.awaitRemote("a route for " + dlqTopic, () -> {
            try {
                mqs.clear();
                mqs.addAll(lite.fetchMessageQueues(dlqTopic));
                return !mqs.isEmpty();
            } catch (Exception e) {
                return false;
            }
        }, () -> "no route");
        ctx.fail.check("DLQ queue count", 1, mqs.size());
        lite.assign(mqs);
        // Seek only while the pull is held at the end of the DLQ (see the class comment).
        long end = Math.max(dlqMax[0], 0);
        ctx.await("a pull held at the end of " + dlqTopic + " (offset " + end + ") before seeking",
            () -> mqs.stream().allMatch(mq -> ctx.hook.pullUnanswered(group2, dlqTopic, mq.getQueueId(), end)),
            () -> "unanswered pulls " + ctx.hook.pullsUnanswered(group2) + ", pulls " + pulls);
        int pullsBeforeSeek = pulls.size();
        for (MessageQueue mq : mqs) {
            lite.seekToBegin(mq);
        }
        Map<String, MessageExt> got = new LinkedHashMap<>();
        int duplicates = 0;
        long deadline = System.nanoTime() + ctx.timeoutMillis * 1_000_000L;
        while (got.size() < n && System.nanoTime() < deadline) {
            for (MessageExt m : lite.poll(200)) {
                duplicates += got.putIfAbsent(String.valueOf(m.getKeys()), m) != null ? 1 : 0;
            }
        }
        long settle = System.nanoTime() + ctx.settleMillis * 1_000_000L;
        while (System.nanoTime() < settle) {
            for (MessageExt m : lite.poll(100)) {
                duplicates += got.putIfAbsent(String.valueOf(m.getKeys()), m) != null ? 1 : 0;
            }
        }
        List<Pull> afterSeek = new ArrayList<>(pulls).subList(Math.min(pullsBeforeSeek, pulls.size()), pulls.size());
        if (got.size() < n) {
            ctx.fail.add("lite pull of " + dlqTopic + " after seekToBegin: " + got.size() + " of " + n
                + " messages after " + ctx.timeoutMillis / 1000 + " s (DLQ max offset " + dlqMax[0]
                + "; pulls after the seek " + afterSeek + ")");
        }
        for (String d : rawDiffs) {
            ctx.fail.add(d);
        }

        TreeSet<Long> offsets = new TreeSet<>();
        for (Map.Entry<String, MessageExt> g : got.entrySet()) {
            Expected e = byKey.get(g.getKey());
            MessageExt m = g.getValue();
            if (e == null) {
                ctx.fail.add("DLQ: unexpected message keys=" + g.getKey() + " topic=" + m.getTopic());
                continue;
            }
            offsets.add(m.getQueueOffset());
            String what = "DLQ " + e.key;
            if (!Arrays.equals(e.body, m.getBody())) {
                ctx.fail.add(what + ": body differs: " + describe(e.body, m.getBody()));
            }
            ctx.fail.check(what + " topic", dlqTopic, m.getTopic());
            ctx.fail.check(what + " queueId", 0, m.getQueueId());
            ctx.fail.check(what + " keys", e.key, m.getKeys());
            ctx.fail.check(what + " tags", e.tag, m.getTags());
            for (Map.Entry<String, String> p : e.userProps.entrySet()) {
                ctx.fail.check(what + " user property " + p.getKey(), p.getValue(), m.getUserProperty(p.getKey()));
            }
            ctx.fail.check(what + " msgId (UNIQ_KEY)", e.msgId, m.getMsgId());
            ctx.fail.check(what + " reconsumeTimes", MAX_RECONSUME_TIMES + 1, m.getReconsumeTimes());
            ctx.fail.check(what + " RETRY_TOPIC", topic, m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
            ctx.fail.check(what + " ORIGIN_MESSAGE_ID", e.offsetMsgId,
                m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID));
            String offsetMsgId = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : null;
            if (offsetMsgId == null || offsetMsgId.equals(e.offsetMsgId)) {
                ctx.fail.add(what + ": offsetMsgId should be the DLQ copy's own, is " + offsetMsgId);
            }
        }
        if (got.size() == n) {
            TreeSet<Long> want = new TreeSet<>();
            for (long o = 0; o < n; o++) {
                want.add(o);
            }
            ctx.fail.check("DLQ queue offsets read", want, offsets);
        }
        ctx.fail.check("DLQ max offset", (long) n, dlqMax[0]);
        Map<Integer, Integer> codes = new TreeMap<>();
        for (Pull p : pulls) {
            codes.merge(p.code, 1, Integer::sum);
        }
        long compressed = byKey.values().stream().filter(e -> e.body.length >= COMPRESS_FROM).count();
        return "sent=" + n + " compressed=" + compressed + " pushDeliveries=" + pushTotal.get() + " sendBack(36)="
            + ctx.hook.count("broker", 36) + " dlqMax=" + dlqMax[0] + " read=" + got.size() + " duplicates="
            + duplicates + " pullCodes=" + codes + " pullsAfterSeek=" + afterSeek;
    }

    /**
     * Body of message I: a readable head naming it, then filler up to SIZES[i % 20] bytes; even I
     * repetitive multi-byte text (compresses well), odd I pseudo-random bytes (does not).
     */
    private static byte[] body(Ctx ctx, int i) {
        int size = SIZES[i % SIZES.length];
        byte[] head = ("dlq #" + i + " " + ctx.suffix + " ").getBytes(StandardCharsets.UTF_8);
        byte[] text = "тело сообщения 消息体 ".getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[size];
        long x = 0x9E3779B97F4A7C15L * (i + 1);
        for (int j = 0; j < size; j++) {
            if (j < head.length) {
                b[j] = head[j];
            } else if (i % 2 == 0) {
                b[j] = text[j % text.length];
            } else {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                b[j] = (byte) x;
            }
        }
        return b;
    }

    /** Waits (bounded) until the DLQ queue's max offset (GET_MAX_OFFSET) reaches N, into MAX[0]. */
    @SuppressWarnings("deprecation") // DefaultMQPullConsumer: deprecated in 5.x, asks the broker on every call
    private static void awaitDlqMaxOffset(Ctx ctx, MessageQueue mq, int n, long[] max) throws Exception {
        DefaultMQPullConsumer reader = new DefaultMQPullConsumer(ctx.group("dlqmax"), ctx.hook);
        reader.setNamesrvAddr(ctx.namesrv);
        reader.setInstanceName("silo-" + ctx.suffix + "-dlqmax");
        reader.start();
        String[] last = {"nothing yet"};
        try {
            ctx.awaitRemote(n + " messages in " + mq.getTopic(), () -> {
                try {
                    max[0] = reader.maxOffset(mq);
                    last[0] = "max offset " + max[0];
                    return max[0] >= n;
                } catch (Exception e) {
                    last[0] = e.toString();
                    return false;
                }
            }, () -> last[0]);
        } finally {
            reader.shutdown();
        }
    }

    /**
     * Decodes a pull response body record by record, as stored (body not decompressed) and as the
     * client decodes it, and checks each record: it decodes, its body CRC matches its stored body, the
     * compression flag is set exactly when the producer compressed the body, and the decoded body is
     * the one sent. Returns the number of records.
     */
    private static int checkStored(byte[] body, Map<String, Expected> byKey, List<String> diffs) {
        ByteBuffer raw = ByteBuffer.wrap(body);
        ByteBuffer full = ByteBuffer.wrap(body);
        int records = 0;
        while (raw.hasRemaining()) {
            int start = raw.position();
            MessageExt stored = MessageDecoder.decode(raw, true, false);
            full.position(start);
            MessageExt client = MessageDecoder.decode(full, true, true, true);
            if (stored == null || client == null) {
                diffs.add("DLQ pull response: record " + records + " at byte " + start + " of " + body.length
                    + " does not decode (as stored: " + (stored != null) + ", as the client decodes it: "
                    + (client != null) + "; its size field "
                    + (body.length - start >= 4 ? ByteBuffer.wrap(body, start, 4).getInt() : -1) + ")");
                break;
            }
            records++;
            String what = "DLQ record " + client.getKeys() + " @" + client.getQueueOffset();
            if (stored.getBody() != null && stored.getBodyCRC() != UtilAll.crc32(stored.getBody())) {
                diffs.add(what + ": bodyCRC " + stored.getBodyCRC() + " does not match the stored body ("
                    + UtilAll.crc32(stored.getBody()) + ")");
            }
            Expected e = byKey.get(client.getKeys());
            if (e == null) {
                continue;
            }
            boolean compressed = (stored.getSysFlag() & 1) != 0;
            if (compressed != (e.body.length >= COMPRESS_FROM)) {
                diffs.add(what + ": sysFlag " + stored.getSysFlag() + " (compressed " + compressed + ") for a body of "
                    + e.body.length + " bytes");
            }
            if (!Arrays.equals(e.body, client.getBody())) {
                diffs.add(what + ": decoded body differs: " + describe(e.body, client.getBody()));
            }
        }
        return records;
    }

    /** A getter of a request's custom header (PullMessageRequestHeader moved packages in 5.x). */
    private static Object header(RemotingCommand request, String getter) {
        Object h = request.readCustomHeader();
        if (h == null) {
            return null;
        }
        try {
            return h.getClass().getMethod(getter).invoke(h);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static String describe(byte[] want, byte[] got) {
        if (got == null) {
            return "expected " + want.length + " bytes, actual none";
        }
        int i = 0;
        while (i < Math.min(want.length, got.length) && want[i] == got[i]) {
            i++;
        }
        return "expected " + want.length + " bytes, actual " + got.length + ", first difference at byte " + i;
    }
}
