package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/** Options of one run plus the helpers every scenario uses. */
final class Ctx {

    /** User property set on every message the scenarios send. */
    static final String PROP = "silo-prop";

    final String scenario;
    final String namesrv;
    final String suffix;
    final String topicOption;
    final String groupOption;
    final int count;
    /** Whether --count was given (scenarios with their own default use {@link #count(int)}). */
    final boolean countGiven;
    final long timeoutMillis;
    final long settleMillis;
    final String phase;
    /**
     * --strict: behaviour of Apache RocketMQ 5.3.3 that the spec calls a bug (batch elements sharing
     * the batch's msgId, #9416; a lost first offset commit, #10700) is a difference, not a note.
     */
    final boolean strict;
    final Path state;
    /** Every --name value option, for scenarios with options of their own (e.g. disk-full's --body-size). */
    final Map<String, String> options;
    final CodeRecorder hook;
    final Failures fail = new Failures();

    private final List<Runnable> closers = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger instances = new AtomicInteger();

    Ctx(String scenario, Map<String, String> opts) {
        this.scenario = scenario;
        this.namesrv = opts.get("namesrv");
        this.suffix = opts.getOrDefault("suffix", Long.toString(System.currentTimeMillis(), 36)
            + Integer.toString((int) (Math.random() * 36 * 36 * 36), 36));
        this.topicOption = opts.get("topic");
        this.groupOption = opts.get("group");
        this.count = Integer.parseInt(opts.getOrDefault("count", "200"));
        this.countGiven = opts.containsKey("count");
        this.timeoutMillis = Long.parseLong(opts.getOrDefault("timeout", "60")) * 1000;
        this.settleMillis = Long.parseLong(opts.getOrDefault("settle-ms", "500"));
        this.phase = opts.get("phase");
        this.strict = Boolean.parseBoolean(opts.getOrDefault("strict", "false"));
        this.state = opts.containsKey("state") ? Path.of(opts.get("state")) : null;
        this.options = Map.copyOf(opts);
        this.hook = new CodeRecorder(namesrv);
    }

    /** --count if given, else DEFAULT_COUNT (for scenarios whose natural size is not 200). */
    int count(int defaultCount) {
        return countGiven ? count : defaultCount;
    }

    /** Integer option --NAME, or DEFAULT_VALUE if it was not given. */
    int intOption(String name, int defaultValue) {
        String v = options.get(name);
        return v == null ? defaultValue : Integer.parseInt(v);
    }

    /** A resource name unique to this run: silo_SCENARIO_KIND_SUFFIX (topic/group charset). */
    String name(String kind) {
        return "silo_" + scenario.replace('-', '_') + "_" + kind + "_" + suffix;
    }

    /** The scenario's topic: --topic, or a fresh name. */
    String topic() {
        return topicOption != null ? topicOption : name("t");
    }

    /** A consumer group: --group (plus KIND unless it is the first), or a fresh name. */
    String group(String kind) {
        if (groupOption == null) {
            return name(kind);
        }
        return "cg".equals(kind) ? groupOption : groupOption + "_" + kind;
    }

    private String instance(String role) {
        return "silo-" + suffix + "-" + role + instances.incrementAndGet();
    }

    /** A started producer in GROUP with the recording hook. */
    DefaultMQProducer producer(String group) throws MQClientException {
        DefaultMQProducer p = new DefaultMQProducer(group, hook);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(instance("p"));
        p.start();
        closers.add(p::shutdown);
        return p;
    }

    /**
     * A push consumer (not started) in GROUP, consuming from the first offset, with its own client
     * instance so several can share a group in one process.
     */
    DefaultMQPushConsumer pushConsumer(String group) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance("c"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        closers.add(c::shutdown);
        return c;
    }

    /** A lite pull consumer (not started) in GROUP, consuming from the first offset. */
    DefaultLitePullConsumer litePullConsumer(String group) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group, hook);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance("l"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        closers.add(c::shutdown);
        return c;
    }

    /** Registers something to shut down at the end (in reverse order). */
    void closeLater(Runnable r) {
        closers.add(r);
    }

    /** Shuts down everything, newest first, bounded by the run's timeout. */
    void closeAll() throws InterruptedException {
        List<Runnable> all;
        synchronized (closers) {
            all = new ArrayList<>(closers);
            closers.clear();
        }
        Collections.reverse(all);
        Thread t = new Thread(() -> {
            for (Runnable r : all) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    System.err.println("shutdown: " + e);
                }
            }
        }, "silo-shutdown");
        t.setDaemon(true);
        t.start();
        t.join(timeoutMillis);
        if (t.isAlive()) {
            fail.add("client shutdown did not finish within " + timeoutMillis / 1000 + " s");
        }
    }

    /**
     * Polls COND every 20 ms until it holds or the run's timeout passes; on timeout records a
     * difference with STATE's description and returns false.
     */
    boolean await(String what, BooleanSupplier cond, Supplier<String> state) throws InterruptedException {
        return await(what, cond, state, 20);
    }

    /** {@link #await(String, BooleanSupplier, Supplier)} for conditions that ask a server: every 200 ms. */
    boolean awaitRemote(String what, BooleanSupplier cond, Supplier<String> state) throws InterruptedException {
        return await(what, cond, state, 200);
    }

    private boolean await(String what, BooleanSupplier cond, Supplier<String> state, long pollMillis)
        throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail.add("timed out after " + timeoutMillis / 1000 + " s waiting for " + what + " (" + state.get() + ")");
                return false;
            }
            Thread.sleep(pollMillis);
        }
        return true;
    }

    /** Lets late duplicates or strays arrive before the final comparison. */
    void settle() throws InterruptedException {
        Thread.sleep(settleMillis);
    }

    /** A message with body, KEYS, TAGS and the user property, all derived from KEY. */
    static Message message(String topic, String tag, String key, String body) {
        Message m = new Message(topic, tag, key, body.getBytes(StandardCharsets.UTF_8));
        m.putUserProperty(PROP, "v-" + key);
        return m;
    }
}
