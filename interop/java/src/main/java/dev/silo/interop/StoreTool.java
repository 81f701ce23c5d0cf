package dev.silo.interop;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.stream.Stream;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.AppendMessageResult;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.MessageArrivingListener;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Drives the real Apache RocketMQ 5.3.3 {@code DefaultMessageStore} (unmodified jar) so the Rust
 * store can be tested against it in both directions:
 *
 * <pre>
 * StoreTool write  STORE_DIR MANIFEST [options]   put deterministic messages, shut down cleanly, write the manifest
 * StoreTool verify STORE_DIR MANIFEST [options]   open STORE_DIR (written by Java or by Silo), read every message back
 * StoreTool dump   STORE_DIR [options]            print queues and commit-log records
 * </pre>
 *
 * <p>See {@link #USAGE} for the options and {@link StoreManifest} for the manifest format. Note that
 * verify and dump open the directory with a real store: recovery may truncate or re-dispatch,
 * {@code lock}, {@code checkpoint} and (while running) {@code abort} are written. Run them on a copy
 * if the directory must stay untouched.
 */
public final class StoreTool {
    static final String USAGE = String.join("\n",
        "usage: store-tool.sh write  STORE_DIR MANIFEST [options]",
        "       store-tool.sh verify STORE_DIR MANIFEST [options]",
        "       store-tool.sh dump   STORE_DIR [options]",
        "options (all subcommands; verify/dump must use the sizes the directory was written with):",
        "  --commitlog-size N  mappedFileSizeCommitLog in bytes (default 65536)",
        "  --cq-units N        consume-queue file size in 20-byte units (default 1000 = 20000 bytes)",
        "  --lmq               enableLmq + enableMultiDispatch; write: every 5th message gets",
        "                      INNER_MULTI_DISPATCH=" + "%LMQ%lmq-a,%LMQ%lmq-b; verify: check the LMQ queues",
        "  --sync              flushDiskType SYNC_FLUSH (default ASYNC_FLUSH)",
        "  --index-default     RocketMQ's default index size (5M slots, 20M entries: 420000040-byte files)",
        "                      instead of maxHashSlotNum=5000, maxIndexNum=20000 (420040-byte files)",
        "  --verbose           RocketMQ log level INFO instead of WARN (logs go to stderr)",
        "write:   --count N    number of messages (default 500)",
        "verify:  --check-index      query every KEYS entry and the UNIQ_KEY through the index",
        "         --expect-abort     say so if the directory has no abort file (informational only)",
        "         --no-raw-check     skip reading the consume-queue files directly before opening",
        "exit status: 0 ok, 1 failure, 2 usage error");

    static final String TOPIC = "InteropTopic";
    static final String OTHER_TOPIC = "InteropOther";
    /** 200 characters: longer than 127, so the commit log holds v2 records (2-byte topic length). */
    static final String LONG_TOPIC = "x".repeat(200);
    static final String LMQ_LIST = "%LMQ%lmq-a,%LMQ%lmq-b";
    /** Born timestamp of message 0 (2024-09-22T10:13:20Z); message i is born at BORN_T0 + i. */
    static final long BORN_T0 = 1_727_000_000_000L;
    static final byte[] LOOPBACK = {127, 0, 0, 1};
    static final int BORN_PORT = 50000;
    static final int STORE_PORT = 10911;
    static final long DISPATCH_TIMEOUT_MS = 30_000;

    private StoreTool() {
    }

    public static void main(String[] args) {
        int code;
        try {
            Options o = Options.parse(args);
            // Must happen before the first RocketMQ class creates a logger.
            System.setProperty("storetool.log.level", o.verbose ? "INFO" : "WARN");
            if (System.getProperty("rmq.logback.configurationFile") == null) {
                System.setProperty("rmq.logback.configurationFile", "store-tool-logback.xml");
            }
            switch (o.command) {
                case "write":
                    code = write(o);
                    break;
                case "verify":
                    code = StoreVerify.verify(o);
                    break;
                case "dump":
                    code = dump(o);
                    break;
                default:
                    throw new UsageException("unknown subcommand " + o.command);
            }
        } catch (UsageException e) {
            System.err.println("store-tool: " + e.getMessage());
            System.err.println(USAGE);
            code = 2;
        } catch (Throwable t) {
            System.out.flush();
            System.err.println("store-tool: FAILED with an exception:");
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.err.flush();
        // RocketMQ leaves non-daemon threads (stats schedulers) behind even after shutdown().
        System.exit(code);
    }

    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    static final class Options {
        String command;
        Path storeDir;
        Path manifest;
        int commitlogSize = 65536;
        int cqUnits = 1000;
        boolean sync;
        boolean lmq;
        int count = 500;
        boolean checkIndex;
        boolean expectAbort;
        boolean indexDefault;
        boolean verbose;
        boolean rawCheck = true;

        static Options parse(String[] args) throws UsageException {
            if (args.length == 0) {
                throw new UsageException("missing subcommand");
            }
            Options o = new Options();
            o.command = args[0];
            List<String> positional = new ArrayList<>();
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--commitlog-size":
                        o.commitlogSize = intArg(args, ++i, a, 4096);
                        break;
                    case "--cq-units":
                        o.cqUnits = intArg(args, ++i, a, 1);
                        break;
                    case "--count":
                        o.count = intArg(args, ++i, a, 0);
                        break;
                    case "--sync":
                        o.sync = true;
                        break;
                    case "--lmq":
                        o.lmq = true;
                        break;
                    case "--check-index":
                        o.checkIndex = true;
                        break;
                    case "--expect-abort":
                        o.expectAbort = true;
                        break;
                    case "--index-default":
                        o.indexDefault = true;
                        break;
                    case "--verbose":
                        o.verbose = true;
                        break;
                    case "--no-raw-check":
                        o.rawCheck = false;
                        break;
                    default:
                        if (a.startsWith("--")) {
                            throw new UsageException("unknown option " + a);
                        }
                        positional.add(a);
                }
            }
            int want = "dump".equals(o.command) ? 1 : 2;
            if (positional.size() != want) {
                throw new UsageException(o.command + " takes " + want + " path argument(s), got " + positional.size());
            }
            if (o.cqUnits > Integer.MAX_VALUE / ConsumeQueue.CQ_STORE_UNIT_SIZE) {
                throw new UsageException("--cq-units too large");
            }
            o.storeDir = Paths.get(positional.get(0)).toAbsolutePath().normalize();
            if (want == 2) {
                o.manifest = Paths.get(positional.get(1)).toAbsolutePath().normalize();
            }
            // MixAll.MULTI_PATH_SPLITTER: RocketMQ would treat the commit-log path as several paths.
            if (o.storeDir.toString().contains(":")) {
                throw new UsageException("the store path must not contain ':' (RocketMQ splits paths on it)");
            }
            return o;
        }

        private static int intArg(String[] args, int i, String name, int min) throws UsageException {
            if (i >= args.length) {
                throw new UsageException(name + " needs a value");
            }
            try {
                int v = Integer.parseInt(args[i]);
                if (v < min) {
                    throw new UsageException(name + " must be at least " + min);
                }
                return v;
            } catch (NumberFormatException e) {
                throw new UsageException(name + ": not an integer: " + args[i]);
            }
        }

        int cqFileSize() {
            return cqUnits * ConsumeQueue.CQ_STORE_UNIT_SIZE;
        }

        int hashSlots() {
            return indexDefault ? new MessageStoreConfig().getMaxHashSlotNum() : 5000;
        }

        int indexEntries() {
            return indexDefault ? new MessageStoreConfig().getMaxIndexNum() : 20000;
        }

        long indexFileSize() {
            return 40L + 4L * hashSlots() + 20L * indexEntries();
        }
    }

    /** An open store plus the stats manager it was given (which has its own threads). */
    static final class Handle {
        final DefaultMessageStore store;
        final BrokerStatsManager stats;

        Handle(DefaultMessageStore store, BrokerStatsManager stats) {
            this.store = store;
            this.stats = stats;
        }

        void shutdown() {
            store.shutdown();
            stats.shutdown();
        }
    }

    static MessageStoreConfig storeConfig(Options o) {
        MessageStoreConfig c = new MessageStoreConfig();
        c.setStorePathRootDir(o.storeDir.toString());
        c.setStorePathCommitLog(o.storeDir.resolve("commitlog").toString());
        c.setMappedFileSizeCommitLog(o.commitlogSize);
        c.setMappedFileSizeConsumeQueue(o.cqFileSize());
        c.setFlushDiskType(o.sync ? FlushDiskType.SYNC_FLUSH : FlushDiskType.ASYNC_FLUSH);
        c.setMessageIndexEnable(true);
        if (!o.indexDefault) {
            c.setMaxHashSlotNum(5000);
            c.setMaxIndexNum(20000);
        }
        c.setEnableLmq(o.lmq);
        c.setEnableMultiDispatch(o.lmq);
        // Never clean or delete anything: no hour matches "99", files are kept for a century, and
        // no forced clean-up when the disk is nearly full (the clean task first runs after 60 s anyway).
        c.setDeleteWhen("99");
        c.setFileReservedTime(24 * 365 * 100);
        c.setCleanFileForciblyEnable(false);
        // start() opens the HA listener; let the OS pick a free port so parallel runs do not collide.
        c.setHaListenPort(0);
        return c;
    }

    static ConcurrentMap<String, TopicConfig> topicTable() {
        ConcurrentMap<String, TopicConfig> t = new ConcurrentHashMap<>();
        t.put(TOPIC, new TopicConfig(TOPIC, 4, 4));
        t.put(OTHER_TOPIC, new TopicConfig(OTHER_TOPIC, 1, 1));
        t.put(LONG_TOPIC, new TopicConfig(LONG_TOPIC, 1, 1));
        return t;
    }

    static Handle newStore(Options o) throws IOException {
        BrokerConfig broker = new BrokerConfig();
        broker.setBrokerName("interop-broker");
        broker.setBrokerClusterName("InteropCluster");
        BrokerStatsManager stats = new BrokerStatsManager(broker.getBrokerClusterName(), false);
        MessageArrivingListener noop = (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, props) -> {
        };
        return new Handle(new DefaultMessageStore(storeConfig(o), stats, noop, broker, topicTable()), stats);
    }

    // ---------------------------------------------------------------------------------------------
    // write

    static String topicOf(int i) {
        if (i % 7 == 3) {
            return OTHER_TOPIC;
        }
        if (i % 100 == 42) {
            return LONG_TOPIC;
        }
        return TOPIC;
    }

    static int queueOf(int i) {
        return TOPIC.equals(topicOf(i)) ? i % 4 : 0;
    }

    static byte[] bodyOf(int i) {
        // 17..~1900 bytes: "interop message <i>" repeated 1..100 times.
        return ("interop message " + i).repeat(1 + (i * 37) % 100).getBytes(StandardCharsets.UTF_8);
    }

    static String tagsOf(int i) {
        return "Tag" + (i % 3);
    }

    static String keysOf(int i) {
        return "key-" + i + " order-" + (i / 10);
    }

    /** Shaped like a client message id (ip, pid, class-loader hash, time, counter), derived from i only. */
    static String uniqKeyOf(int i) {
        return String.format("7F000001%04X%08X%08X%04X", 0x1F90, 0x1B2C3D4E, i * 1000, i & 0xffff);
    }

    static String lmqOf(int i, boolean lmq) {
        return lmq && i % 5 == 0 ? LMQ_LIST : null;
    }

    static MessageExtBrokerInner message(int i, boolean lmq) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(topicOf(i));
        m.setQueueId(queueOf(i));
        m.setBody(bodyOf(i));
        m.setFlag(0);
        m.setSysFlag(0);
        m.setBornTimestamp(BORN_T0 + i);
        m.setBornHost(socket(BORN_PORT));
        m.setStoreHost(socket(STORE_PORT));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_TAGS, tagsOf(i));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_KEYS, keysOf(i));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, uniqKeyOf(i));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        String lmqs = lmqOf(i, lmq);
        if (lmqs != null) {
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_INNER_MULTI_DISPATCH, lmqs);
        }
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tagsOf(i)));
        return m;
    }

    static InetSocketAddress socket(int port) {
        try {
            return new InetSocketAddress(InetAddress.getByAddress(LOOPBACK), port);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    static int write(Options o) throws Exception {
        if (Files.exists(o.storeDir)) {
            try (Stream<Path> s = Files.list(o.storeDir)) {
                if (s.findAny().isPresent()) {
                    throw new UsageException("write needs a new or empty directory: " + o.storeDir);
                }
            }
        }
        long t0 = System.nanoTime();
        Handle h = newStore(o);
        DefaultMessageStore store = h.store;
        if (!store.load()) {
            System.out.println("FAILED: DefaultMessageStore.load() returned false for " + o.storeDir);
            h.shutdown();
            return 1;
        }
        store.start();

        List<StoreManifest.Entry> entries = new ArrayList<>(o.count);
        Map<String, Long> expected = new LinkedHashMap<>();
        for (int i = 0; i < o.count; i++) {
            MessageExtBrokerInner m = message(i, o.lmq);
            PutMessageResult r = store.putMessage(m);
            if (r == null || !r.isOk() || r.getAppendMessageResult() == null) {
                System.out.println("FAILED: putMessage of message " + i + " returned "
                    + (r == null ? "null" : r.getPutMessageStatus()));
                h.shutdown();
                return 1;
            }
            AppendMessageResult a = r.getAppendMessageResult();
            String lmqs = lmqOf(i, o.lmq);
            entries.add(new StoreManifest.Entry(m.getTopic(), m.getQueueId(), a.getLogicsOffset(), a.getWroteOffset(),
                m.getBody(), tagsOf(i), keysOf(i), uniqKeyOf(i), lmqs, i + 1));
            expected.merge(m.getTopic() + "\t" + m.getQueueId(), 1L, Long::sum);
            if (lmqs != null) {
                for (String q : lmqs.split(",")) {
                    expected.merge(q + "\t0", 1L, Long::sum);
                }
            }
        }

        // Consume queues and the index are written by the reput thread; wait until it has caught up.
        long deadline = System.currentTimeMillis() + DISPATCH_TIMEOUT_MS;
        String lagging;
        while ((lagging = dispatchLag(store, expected)) != null) {
            if (System.currentTimeMillis() > deadline) {
                System.out.println("FAILED: dispatch did not catch up within " + DISPATCH_TIMEOUT_MS + " ms: " + lagging);
                h.shutdown();
                return 1;
            }
            Thread.sleep(10);
        }
        long minPhy = store.getMinPhyOffset();
        long maxPhy = store.getMaxPhyOffset();
        h.shutdown();

        if (Files.exists(o.storeDir.resolve("abort"))) {
            System.out.println("FAILED: shutdown() left the abort file behind (unclean shutdown)");
            return 1;
        }
        StoreManifest.write(o.manifest, entries);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("wrote %d messages to %s: commit log %d..%d in %d file(s) of %d bytes, %d queue(s), "
                + "manifest %s (%s, %d ms)%n",
            entries.size(), o.storeDir, minPhy, maxPhy, countFiles(o.storeDir.resolve("commitlog")), o.commitlogSize,
            expected.size(), o.manifest, o.lmq ? "lmq" : "no lmq", ms);
        return 0;
    }

    /** Null when every queue has all its units and the reput thread is at the end of the log. */
    private static String dispatchLag(DefaultMessageStore store, Map<String, Long> expected) throws Exception {
        long behind = store.dispatchBehindBytes();
        if (behind != 0) {
            return behind + " bytes behind";
        }
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            String[] k = e.getKey().split("\t");
            long max = store.getMaxOffsetInQueue(k[0], Integer.parseInt(k[1]));
            if (max != e.getValue()) {
                return StoreManifest.abbreviate(k[0]) + "/" + k[1] + " has " + max + " of " + e.getValue();
            }
        }
        return null;
    }

    static long countFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return 0;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(Files::isRegularFile).count();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // directory inspection (before a store touches it)

    /**
     * Prints what is on disk before the store opens it and returns problems that Java's load()
     * would reject (wrong file sizes, non-numeric file names).
     */
    static List<String> inspect(Options o) throws IOException {
        List<String> problems = new ArrayList<>();
        Path d = o.storeDir;
        if (!Files.isDirectory(d)) {
            problems.add("store directory does not exist: " + d);
            return problems;
        }
        System.out.println("before open: abort " + (Files.exists(d.resolve("abort")) ? "present" : "absent")
            + ", lock " + (Files.exists(d.resolve("lock")) ? "present" : "absent"));
        Path cp = d.resolve("checkpoint");
        if (Files.exists(cp)) {
            byte[] b = Files.readAllBytes(cp);
            ByteBuffer bb = ByteBuffer.wrap(b);
            StringBuilder sb = new StringBuilder("before open: checkpoint " + b.length + " bytes");
            if (b.length >= 40) {
                sb.append(String.format(", physicMsgTimestamp=%d logicsMsgTimestamp=%d indexMsgTimestamp=%d"
                        + " masterFlushedOffset=%d confirmPhyOffset=%d, first 40 bytes %s",
                    bb.getLong(0), bb.getLong(8), bb.getLong(16), bb.getLong(24), bb.getLong(32),
                    StoreManifest.hex(b, 0, 40)));
            }
            System.out.println(sb);
        } else {
            System.out.println("before open: checkpoint absent");
        }
        checkSegments(d.resolve("commitlog"), o.commitlogSize, "commitlog", problems);
        Path cqRoot = d.resolve("consumequeue");
        int queues = 0;
        if (Files.isDirectory(cqRoot)) {
            for (Path topic : sorted(cqRoot)) {
                if (!Files.isDirectory(topic)) {
                    continue;
                }
                for (Path q : sorted(topic)) {
                    if (Files.isDirectory(q) && q.getFileName().toString().matches("\\d+")) {
                        queues++;
                        checkSegments(q, o.cqFileSize(), null, problems);
                    }
                }
            }
        }
        System.out.println("before open: consumequeue " + queues + " queue dir(s)");
        Path idx = d.resolve("index");
        if (Files.isDirectory(idx)) {
            List<String> files = new ArrayList<>();
            for (Path f : sorted(idx)) {
                long len = Files.size(f);
                files.add(f.getFileName() + " (" + len + " bytes)");
                if (len != o.indexFileSize()) {
                    // Java maps the configured size regardless (no check), so slots would be misread.
                    problems.add("index/" + f.getFileName() + " is " + len + " bytes, expected " + o.indexFileSize()
                        + " for " + o.hashSlots() + " slots / " + o.indexEntries() + " entries");
                }
            }
            System.out.println("before open: index " + files);
        } else {
            System.out.println("before open: index absent");
        }
        return problems;
    }

    private static void checkSegments(Path dir, long size, String label, List<String> problems) throws IOException {
        if (!Files.isDirectory(dir)) {
            if (label != null) {
                System.out.println("before open: " + label + " absent");
            }
            return;
        }
        List<Path> files = sorted(dir);
        for (int i = 0; i < files.size(); i++) {
            Path f = files.get(i);
            String name = f.getFileName().toString();
            long len = Files.size(f);
            if (!name.matches("\\d{20}")) {
                problems.add(rel(dir) + "/" + name + ": file name is not a 20-digit offset");
            } else if (Long.parseLong(name) % size != 0) {
                problems.add(rel(dir) + "/" + name + ": start offset is not a multiple of the file size " + size);
            }
            boolean lastEmpty = len == 0 && i == files.size() - 1;
            if (len != size && !lastEmpty) {
                problems.add(rel(dir) + "/" + name + " is " + len + " bytes, expected " + size + " (load() rejects this)");
            }
        }
        if (label != null) {
            System.out.println("before open: " + label + " " + files.size() + " file(s)"
                + (files.isEmpty() ? "" : " " + files.get(0).getFileName() + ".." + files.get(files.size() - 1).getFileName()));
        }
    }

    /** The last path elements, e.g. consumequeue/InteropTopic/0 or .../commitlog, for messages. */
    private static String rel(Path dir) {
        StringBuilder sb = new StringBuilder();
        int from = dir.getFileName().toString().equals("commitlog") ? dir.getNameCount() - 1 : dir.getNameCount() - 3;
        for (int i = Math.max(0, from); i < dir.getNameCount(); i++) {
            if (sb.length() > 0) {
                sb.append(File.separator);
            }
            sb.append(StoreManifest.abbreviate(dir.getName(i).toString()));
        }
        return sb.toString();
    }

    static List<Path> sorted(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> out = new ArrayList<>();
            s.sorted().forEach(out::add);
            return out;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // dump

    static int dump(Options o) throws Exception {
        if (!Files.isDirectory(o.storeDir)) {
            System.out.println("FAILED: store directory does not exist: " + o.storeDir);
            return 1;
        }
        for (String p : inspect(o)) {
            System.out.println("problem: " + p);
        }
        Handle h = newStore(o);
        DefaultMessageStore store = h.store;
        if (!store.load()) {
            System.out.println("FAILED: DefaultMessageStore.load() returned false");
            h.shutdown();
            return 1;
        }
        store.start();
        try {
            System.out.printf("commitlog min=%d max=%d%n", store.getMinPhyOffset(), store.getMaxPhyOffset());
            Map<String, Map<Integer, ConsumeQueueInterface>> queues = new TreeMap<>();
            for (Map.Entry<String, ConcurrentMap<Integer, ConsumeQueueInterface>> e : store.getConsumeQueueTable().entrySet()) {
                queues.put(e.getKey(), new TreeMap<>(e.getValue()));
            }
            for (Map.Entry<String, Map<Integer, ConsumeQueueInterface>> t : queues.entrySet()) {
                for (Integer qid : t.getValue().keySet()) {
                    String topic = t.getKey();
                    long min = store.getMinOffsetInQueue(topic, qid);
                    long max = store.getMaxOffsetInQueue(topic, qid);
                    System.out.printf("queue %s/%d min=%d max=%d%n", StoreManifest.abbreviate(topic), qid, min, max);
                    for (long off = min; off < max; off++) {
                        GetMessageResult r = store.getMessage("dump", topic, qid, off, 1, null);
                        try {
                            if (r.getStatus() != GetMessageStatus.FOUND || r.getMessageBufferList().isEmpty()) {
                                System.out.printf("  %d: %s%n", off, r.getStatus());
                                continue;
                            }
                            ByteBuffer bb = r.getMessageBufferList().get(0);
                            int size = bb.getInt(bb.position());
                            MessageExt m = MessageDecoder.decode(bb, false, false);
                            System.out.printf("  %d: clo=%d size=%d record=%s/%d@%d%n", off,
                                m == null ? -1 : m.getCommitLogOffset(), size,
                                m == null ? "?" : StoreManifest.abbreviate(m.getTopic()), m == null ? -1 : m.getQueueId(),
                                m == null ? -1 : m.getQueueOffset());
                        } finally {
                            r.release();
                        }
                    }
                }
            }
            System.out.println("commitlog records:");
            long off = store.getMinPhyOffset();
            long end = store.getMaxPhyOffset();
            int records = 0;
            while (off < end) {
                SelectMappedBufferResult sbr = store.selectOneMessageByOffset(off);
                if (sbr == null) {
                    System.out.printf("  %d: unreadable%n", off);
                    break;
                }
                try {
                    ByteBuffer bb = sbr.getByteBuffer();
                    int size = bb.getInt(0);
                    int magic = bb.getInt(4);
                    if (size <= 0) {
                        System.out.printf("  %d: size %d, stop%n", off, size);
                        break;
                    }
                    if (magic == MessageDecoder.BLANK_MAGIC_CODE) {
                        System.out.printf("  %d: BLANK size=%d%n", off, size);
                    } else {
                        MessageExt m = MessageDecoder.decode(bb, false, false);
                        records++;
                        System.out.printf("  %d: size=%d magic=%08x %s/%d@%d storeTimestamp=%d%n", off, size, magic,
                            m == null ? "?" : StoreManifest.abbreviate(m.getTopic()), m == null ? -1 : m.getQueueId(),
                            m == null ? -1 : m.getQueueOffset(), m == null ? -1 : m.getStoreTimestamp());
                    }
                    off += size;
                } finally {
                    sbr.release();
                }
            }
            System.out.println("dumped " + records + " commit-log records");
        } finally {
            h.shutdown();
        }
        return 0;
    }
}
