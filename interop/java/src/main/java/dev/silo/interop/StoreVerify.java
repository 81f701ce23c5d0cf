package dev.silo.interop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;

/**
 * {@code StoreTool verify}: opens a store directory with the real DefaultMessageStore and checks
 * every manifest message through getMessage, lookMessageByOffset and (optionally) the index and
 * the LMQ consume queues.
 *
 * <p>Before the store is opened, the consume-queue units are also read straight from the files:
 * DefaultMessageStore's recovery re-dispatches commit-log records that lie beyond the consume
 * queues' end (normal recovery) or after the checkpoint (abnormal recovery), which would silently
 * repair missing or short consume queues written by another implementation.
 */
final class StoreVerify {
    private static final int MAX_PRINTED = 20;
    private static final String GROUP = "verify";

    private StoreVerify() {
    }

    /** Counts every failure, prints the first few. */
    static final class Failures {
        int count;

        void add(String message) {
            count++;
            if (count <= MAX_PRINTED) {
                System.out.println("FAIL: " + message);
            } else if (count == MAX_PRINTED + 1) {
                System.out.println("FAIL: ... (further failures are counted, not printed)");
            }
        }
    }

    /** A consume-queue unit as found on disk, or absent. */
    static final class RawUnit {
        final long offset;
        final int size;
        final long tagsCode;

        RawUnit(long offset, int size, long tagsCode) {
            this.offset = offset;
            this.size = size;
            this.tagsCode = tagsCode;
        }

        boolean valid() {
            // ConsumeQueue.recover() treats a unit as written iff offset >= 0 && size > 0.
            return offset >= 0 && size > 0;
        }
    }

    static int verify(StoreTool.Options o) throws Exception {
        long t0 = System.nanoTime();
        List<StoreManifest.Entry> entries = StoreManifest.read(o.manifest);
        Failures f = new Failures();

        if (!Files.isDirectory(o.storeDir)) {
            // DefaultMessageStore would happily create an empty store there.
            f.add("store directory does not exist: " + o.storeDir);
            return finish(f, entries.size(), t0);
        }
        boolean abortBefore = Files.exists(o.storeDir.resolve("abort"));
        for (String p : StoreTool.inspect(o)) {
            f.add("before open: " + p);
        }
        System.out.println("recovery: " + (abortBefore ? "abnormal (abort file present)" : "normal (no abort file)"));
        if (o.expectAbort) {
            System.out.println(abortBefore ? "expect-abort: the abort file was present"
                : "expect-abort: NOTE the directory had no abort file (normal recovery was used)");
        }

        // Queues as the manifest describes them.
        Map<String, List<StoreManifest.Entry>> byQueue = new LinkedHashMap<>();
        Map<String, List<StoreManifest.Entry>> byLmq = new LinkedHashMap<>();
        for (StoreManifest.Entry e : entries) {
            byQueue.computeIfAbsent(e.queueKey(), k -> new ArrayList<>()).add(e);
            for (String lmq : e.lmqs()) {
                byLmq.computeIfAbsent(lmq, k -> new ArrayList<>()).add(e);
            }
        }
        Map<StoreManifest.Entry, Map<String, Long>> lmqOffsetOf = new HashMap<>();
        for (Map.Entry<String, List<StoreManifest.Entry>> l : byLmq.entrySet()) {
            for (int k = 0; k < l.getValue().size(); k++) {
                lmqOffsetOf.computeIfAbsent(l.getValue().get(k), x -> new HashMap<>()).put(l.getKey(), (long) k);
            }
        }
        checkManifest(byQueue, f);
        if (!byLmq.isEmpty() && !o.lmq) {
            System.out.println("note: the manifest has LMQ messages but --lmq was not given; LMQ queues are not checked");
        }

        Map<StoreManifest.Entry, RawUnit> raw = new HashMap<>();
        Map<StoreManifest.Entry, Map<String, RawUnit>> rawLmq = new HashMap<>();
        if (o.rawCheck) {
            readRaw(o, byQueue, byLmq, raw, rawLmq, f);
        }

        StoreTool.Handle h = StoreTool.newStore(o);
        DefaultMessageStore store = h.store;
        if (!store.load()) {
            f.add("DefaultMessageStore.load() returned false (run with --verbose for RocketMQ's reason)");
            h.shutdown();
            return finish(f, entries.size(), t0);
        }
        store.start();
        try {
            System.out.printf("opened: commit log %d..%d%n", store.getMinPhyOffset(), store.getMaxPhyOffset());
            for (StoreManifest.Entry e : entries) {
                GetMessageResult r = store.getMessage(GROUP, e.topic, e.queueId, e.queueOffset, 1, null);
                MessageExt viaQueue = null;
                try {
                    viaQueue = single(r, e.where() + " getMessage", f);
                } finally {
                    r.release();
                }
                if (viaQueue != null) {
                    compare(e, viaQueue, "getMessage", lmqOffsetOf.get(e), f);
                    RawUnit u = raw.get(e);
                    if (u != null && u.size != viaQueue.getStoreSize()) {
                        f.add(e.where() + ": consume-queue unit size " + u.size + " != record size "
                            + viaQueue.getStoreSize());
                    }
                }
                MessageExt viaOffset = store.lookMessageByOffset(e.commitLogOffset);
                if (viaOffset == null) {
                    f.add(e.where() + ": lookMessageByOffset returned null");
                } else {
                    compare(e, viaOffset, "lookMessageByOffset", lmqOffsetOf.get(e), f);
                }
            }

            Set<String> expectedQueues = new HashSet<>();
            for (Map.Entry<String, List<StoreManifest.Entry>> q : byQueue.entrySet()) {
                StoreManifest.Entry first = q.getValue().get(0);
                expectedQueues.add(first.topic + "\t" + first.queueId);
                checkBounds(store, first.topic, first.queueId, q.getValue().size(), f);
            }
            if (o.lmq) {
                for (Map.Entry<String, List<StoreManifest.Entry>> l : byLmq.entrySet()) {
                    expectedQueues.add(l.getKey() + "\t0");
                    checkLmq(store, l.getKey(), l.getValue(), lmqOffsetOf, rawLmq, f);
                }
            }
            for (Map.Entry<String, ConcurrentMap<Integer, ConsumeQueueInterface>> t : store.getConsumeQueueTable().entrySet()) {
                for (Integer qid : t.getValue().keySet()) {
                    if (!expectedQueues.contains(t.getKey() + "\t" + qid)) {
                        long max = store.getMaxOffsetInQueue(t.getKey(), qid);
                        boolean lmqSkipped = !o.lmq && byLmq.containsKey(t.getKey());
                        if (max > 0 && !lmqSkipped) {
                            f.add("queue " + StoreManifest.abbreviate(t.getKey()) + "/" + qid + " is not in the manifest but holds "
                                + max + " unit(s)");
                        }
                    }
                }
            }

            if (o.checkIndex) {
                int queries = 0;
                for (StoreManifest.Entry e : entries) {
                    List<String> keys = new ArrayList<>(e.keyList());
                    if (!e.uniqKey.isEmpty()) {
                        keys.add(e.uniqKey);
                    }
                    for (String key : keys) {
                        queries++;
                        Set<Long> found = query(store, e.topic, key);
                        if (!found.contains(e.commitLogOffset)) {
                            f.add(e.where() + ": queryMessage(topic, \"" + key + "\") returned " + found.size()
                                + " message(s), not this one");
                        }
                    }
                }
                System.out.println("index: " + queries + " key queries");
            }
        } finally {
            h.shutdown();
        }
        if (Files.exists(o.storeDir.resolve("abort"))) {
            f.add("the abort file is still there after shutdown() (unclean shutdown)");
        }
        return finish(f, entries.size(), t0);
    }

    private static int finish(Failures f, int n, long t0) {
        long ms = (System.nanoTime() - t0) / 1_000_000;
        if (f.count == 0) {
            System.out.println("verified " + n + " messages (" + ms + " ms)");
            return 0;
        }
        System.out.println("FAILED: " + f.count + " problem(s), " + n + " messages in the manifest (" + ms + " ms)");
        return 1;
    }

    /** Queue offsets of each manifest queue must be exactly 0..n-1. */
    private static void checkManifest(Map<String, List<StoreManifest.Entry>> byQueue, Failures f) {
        for (List<StoreManifest.Entry> q : byQueue.values()) {
            boolean[] seen = new boolean[q.size()];
            for (StoreManifest.Entry e : q) {
                if (e.queueOffset < 0 || e.queueOffset >= q.size() || seen[(int) e.queueOffset]) {
                    f.add("manifest " + e.where() + ": queue offsets of this queue are not exactly 0.." + (q.size() - 1));
                    break;
                }
                seen[(int) e.queueOffset] = true;
            }
        }
    }

    private static void readRaw(StoreTool.Options o, Map<String, List<StoreManifest.Entry>> byQueue,
        Map<String, List<StoreManifest.Entry>> byLmq, Map<StoreManifest.Entry, RawUnit> raw,
        Map<StoreManifest.Entry, Map<String, RawUnit>> rawLmq, Failures f) throws IOException {
        int units = 0;
        for (List<StoreManifest.Entry> q : byQueue.values()) {
            StoreManifest.Entry first = q.get(0);
            Path dir = cqDir(o, first.topic, first.queueId);
            for (StoreManifest.Entry e : q) {
                RawUnit u = readUnit(dir, e.queueOffset, o.cqFileSize());
                units++;
                if (checkUnit(u, e, e.where() + ": raw consume queue", f)) {
                    raw.put(e, u);
                }
            }
            checkNoExtraUnit(dir, q.size(), o.cqFileSize(), first.topic + "/" + first.queueId, f);
        }
        if (o.lmq) {
            for (Map.Entry<String, List<StoreManifest.Entry>> l : byLmq.entrySet()) {
                Path dir = cqDir(o, l.getKey(), 0);
                List<StoreManifest.Entry> list = l.getValue();
                for (int k = 0; k < list.size(); k++) {
                    RawUnit u = readUnit(dir, k, o.cqFileSize());
                    units++;
                    if (checkUnit(u, list.get(k), l.getKey() + "@" + k + " (" + list.get(k).where() + "): raw consume queue", f)) {
                        rawLmq.computeIfAbsent(list.get(k), x -> new HashMap<>()).put(l.getKey(), u);
                    }
                }
                checkNoExtraUnit(dir, list.size(), o.cqFileSize(), l.getKey() + "/0", f);
            }
        }
        System.out.println("raw consume queues: " + units + " unit(s) read before open");
    }

    private static boolean checkUnit(RawUnit u, StoreManifest.Entry e, String what, Failures f) {
        if (u == null) {
            f.add(what + ": unit missing (file absent or too short)");
            return false;
        }
        if (!u.valid()) {
            f.add(what + ": unit is not valid (offset " + u.offset + ", size " + u.size + ")");
            return false;
        }
        boolean ok = true;
        if (u.offset != e.commitLogOffset) {
            f.add(what + ": unit points at " + u.offset + ", manifest says " + e.commitLogOffset);
            ok = false;
        }
        long tagsCode = MessageExtBrokerInner.tagsString2tagsCode(e.tags);
        if (u.tagsCode != tagsCode) {
            f.add(what + ": tagsCode " + u.tagsCode + ", expected " + tagsCode + " (hash of \"" + e.tags + "\")");
            ok = false;
        }
        return ok;
    }

    private static void checkNoExtraUnit(Path dir, long n, int fileSize, String queue, Failures f) throws IOException {
        RawUnit after = readUnit(dir, n, fileSize);
        if (after != null && after.valid()) {
            f.add("raw consume queue " + StoreManifest.abbreviate(queue) + ": unit " + n
                + " (one past the manifest) looks written: offset " + after.offset + ", size " + after.size);
        }
    }

    static Path cqDir(StoreTool.Options o, String topic, int queueId) {
        return o.storeDir.resolve("consumequeue").resolve(topic).resolve(Integer.toString(queueId));
    }

    /** Unit n of a consume queue, read straight from its file; null if the file or the bytes are missing. */
    static RawUnit readUnit(Path dir, long n, int fileSize) throws IOException {
        long pos = n * ConsumeQueue.CQ_STORE_UNIT_SIZE;
        long start = pos - pos % fileSize;
        Path file = dir.resolve(String.format("%020d", start));
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(ConsumeQueue.CQ_STORE_UNIT_SIZE);
            long at = pos - start;
            while (b.hasRemaining()) {
                int r = ch.read(b, at + b.position());
                if (r < 0) {
                    return null;
                }
            }
            b.flip();
            return new RawUnit(b.getLong(), b.getInt(), b.getLong());
        }
    }

    /** The one message of a getMessage(…, 1, …) result, decoded with the body CRC checked. */
    private static MessageExt single(GetMessageResult r, String what, Failures f) {
        if (r == null) {
            f.add(what + ": null result");
            return null;
        }
        if (r.getStatus() != GetMessageStatus.FOUND) {
            f.add(what + ": status " + r.getStatus() + " (min " + r.getMinOffset() + ", max " + r.getMaxOffset()
                + ", next " + r.getNextBeginOffset() + ")");
            return null;
        }
        if (r.getMessageBufferList().size() != 1) {
            f.add(what + ": FOUND " + r.getMessageBufferList().size() + " messages, expected 1");
            return null;
        }
        ByteBuffer bb = r.getMessageBufferList().get(0).slice();
        MessageExt m = MessageDecoder.decode(bb, true, false, false, false, true);
        if (m == null) {
            f.add(what + ": the record does not decode (or its body CRC is wrong)");
        }
        return m;
    }

    private static void compare(StoreManifest.Entry e, MessageExt m, String via, Map<String, Long> lmqOffsets, Failures f) {
        String w = e.where() + " via " + via + ": ";
        if (!e.topic.equals(m.getTopic())) {
            f.add(w + "topic " + StoreManifest.abbreviate(m.getTopic()));
        }
        if (e.queueId != m.getQueueId()) {
            f.add(w + "queueId " + m.getQueueId());
        }
        if (e.queueOffset != m.getQueueOffset()) {
            f.add(w + "queueOffset " + m.getQueueOffset());
        }
        if (e.commitLogOffset != m.getCommitLogOffset()) {
            f.add(w + "commitLogOffset " + m.getCommitLogOffset());
        }
        if (!Arrays.equals(e.body, m.getBody())) {
            f.add(w + "body differs (" + (m.getBody() == null ? "none" : m.getBody().length + " bytes") + " vs "
                + e.body.length + " bytes)");
        }
        property(w, "TAGS", e.tags, m.getProperty(MessageConst.PROPERTY_TAGS), f);
        property(w, "KEYS", e.keys, m.getProperty(MessageConst.PROPERTY_KEYS), f);
        property(w, "UNIQ_KEY", e.uniqKey, m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX), f);
        String dispatch = m.getProperty(MessageConst.PROPERTY_INNER_MULTI_DISPATCH);
        if (!Objects.equals(e.lmqList, dispatch)) {
            f.add(w + "INNER_MULTI_DISPATCH is " + dispatch + ", manifest " + e.lmqList);
        }
        if (e.lmqList != null) {
            String offsets = m.getProperty(MessageConst.PROPERTY_INNER_MULTI_QUEUE_OFFSET);
            List<String> names = e.lmqs();
            String[] parts = offsets == null ? new String[0] : offsets.split(",", -1);
            if (parts.length != names.size()) {
                f.add(w + "INNER_MULTI_QUEUE_OFFSET \"" + offsets + "\" does not have " + names.size() + " element(s)");
            } else if (lmqOffsets != null) {
                for (int i = 0; i < names.size(); i++) {
                    Long want = lmqOffsets.get(names.get(i));
                    if (want != null && !want.toString().equals(parts[i])) {
                        f.add(w + "INNER_MULTI_QUEUE_OFFSET element " + i + " (" + names.get(i) + ") is \"" + parts[i]
                            + "\", expected " + want);
                    }
                }
            }
        }
    }

    private static void property(String w, String name, String want, String got, Failures f) {
        if (!want.equals(got == null ? "" : got)) {
            f.add(w + name + " is " + (got == null ? "absent" : "\"" + got + "\"") + ", manifest \"" + want + "\"");
        }
    }

    private static void checkBounds(DefaultMessageStore store, String topic, int queueId, long n, Failures f)
        throws Exception {
        long max = store.getMaxOffsetInQueue(topic, queueId);
        long min = store.getMinOffsetInQueue(topic, queueId);
        if (max != n) {
            f.add("queue " + StoreManifest.abbreviate(topic) + "/" + queueId + ": getMaxOffsetInQueue " + max + ", manifest has " + n);
        }
        if (min != 0) {
            f.add("queue " + StoreManifest.abbreviate(topic) + "/" + queueId + ": getMinOffsetInQueue " + min + ", expected 0");
        }
    }

    private static void checkLmq(DefaultMessageStore store, String lmq, List<StoreManifest.Entry> list,
        Map<StoreManifest.Entry, Map<String, Long>> lmqOffsetOf, Map<StoreManifest.Entry, Map<String, RawUnit>> rawLmq,
        Failures f) throws Exception {
        checkBounds(store, lmq, 0, list.size(), f);
        for (int k = 0; k < list.size(); k++) {
            StoreManifest.Entry e = list.get(k);
            GetMessageResult r = store.getMessage(GROUP, lmq, 0, k, 1, null);
            MessageExt m;
            try {
                m = single(r, lmq + "@" + k + " getMessage", f);
            } finally {
                r.release();
            }
            if (m == null) {
                continue;
            }
            compare(e, m, lmq + "@" + k, lmqOffsetOf.get(e), f);
            RawUnit u = rawLmq.getOrDefault(e, Map.of()).get(lmq);
            if (u != null && u.size != m.getStoreSize()) {
                f.add(lmq + "@" + k + ": consume-queue unit size " + u.size + " != record size " + m.getStoreSize());
            }
        }
    }

    private static Set<Long> query(DefaultMessageStore store, String topic, String key) {
        Set<Long> found = new HashSet<>();
        QueryMessageResult qr = store.queryMessage(topic, key, 32, 0, Long.MAX_VALUE);
        try {
            for (ByteBuffer bb : qr.getMessageBufferList()) {
                MessageExt m = MessageDecoder.decode(bb.slice(), false, false);
                if (m != null) {
                    found.add(m.getCommitLogOffset());
                }
            }
        } finally {
            qr.release();
        }
        return found;
    }
}
