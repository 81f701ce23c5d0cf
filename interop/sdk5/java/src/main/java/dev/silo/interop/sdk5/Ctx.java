package dev.silo.interop.sdk5;

import java.io.Closeable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;

/** One scenario's run: the options, its differences, the clients to close, and what scenarios share. */
final class Ctx {

    static final String LANG = "java";
    private static final long CLOSE_WAIT_MILLIS = 1_000;

    final String scenario;
    final String endpoint;
    final String suffix;
    /** Bound on every wait. */
    final long timeoutMillis;
    final ClientServiceProvider provider;
    final ClientConfiguration config;

    private final List<String> fail = Collections.synchronizedList(new ArrayList<>());
    private final List<Closeable> closers = Collections.synchronizedList(new ArrayList<>());
    private final long startNanos = System.nanoTime();
    /** Receive calls that threw, and the last such error (receives are retried). */
    int receiveErrors;
    String lastReceiveError;

    Ctx(String scenario, String endpoint, String suffix, long timeoutMillis) {
        this.scenario = scenario;
        this.endpoint = endpoint;
        this.suffix = suffix;
        this.timeoutMillis = timeoutMillis;
        this.provider = ClientServiceProvider.loadService();
        ClientConfigurationBuilder builder = ClientConfiguration.newBuilder();
        // Credentials when SDK5_ACCESS_KEY and SDK5_SECRET_KEY are set: every request is signed.
        String accessKey = System.getenv("SDK5_ACCESS_KEY");
        String secretKey = System.getenv("SDK5_SECRET_KEY");
        if (accessKey != null && secretKey != null) {
            builder.setCredentialProvider(new StaticSessionCredentialsProvider(accessKey, secretKey));
        }
        this.config = builder
            .setEndpoints(endpoint)
            // TLS (the SDK's own default) when SDK5_TLS=1; it does not check the certificate.
            .enableSsl("1".equals(System.getenv("SDK5_TLS")))
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    /** sdk5-java-KIND-SUFFIX: the topics and groups resources.sh created. */
    String name(String kind) {
        return "sdk5-" + LANG + "-" + kind + "-" + suffix;
    }

    void fail(String what) {
        fail.add(what);
    }

    /** Records a difference unless the two are equal; returns whether they were. */
    boolean check(String what, Object expected, Object actual) {
        boolean same = expected == null ? actual == null : expected.equals(actual);
        if (!same) {
            fail.add(what + ": expected " + expected + ", actual " + actual);
        }
        return same;
    }

    List<String> failures() {
        synchronized (fail) {
            return new ArrayList<>(fail);
        }
    }

    /** Milliseconds since this scenario started. */
    long elapsedMillis() {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    <T extends Closeable> T closeLater(T c) {
        closers.add(c);
        return c;
    }

    /** A started producer for TOPICS (optionally with a transaction checker set by CUSTOMIZE). */
    Producer producer(ProducerCustomizer customize, String... topics) throws ClientException {
        ProducerBuilder b = provider.newProducerBuilder().setClientConfiguration(config).setTopics(topics);
        if (customize != null) {
            customize.apply(b);
        }
        return closeLater(b.build());
    }

    interface ProducerCustomizer {
        void apply(ProducerBuilder b);
    }

    /** A started PushConsumer of GROUP on TOPIC, filter "*", with THREADS consumption threads. */
    PushConsumer pushConsumer(String group, String topic, int threads, MessageListener listener)
        throws ClientException {
        return closeLater(provider.newPushConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setConsumptionThreadCount(threads)
            .setMessageListener(listener)
            .build());
    }

    /** A started SimpleConsumer of GROUP on TOPIC, filter "*", long polling AWAIT. */
    SimpleConsumer simpleConsumer(String group, String topic, Duration await) throws ClientException {
        return closeLater(provider.newSimpleConsumerBuilder()
            .setClientConfiguration(config)
            .setConsumerGroup(group)
            .setAwaitDuration(await)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build());
    }

    /** Called with every message a receive returned. */
    interface OnView {
        void accept(MessageView view) throws Exception;
    }

    /**
     * Receives (MAX messages a call, INVISIBLE) until DONE holds or WITHIN_MILLIS pass, passing every
     * message to ON_VIEW; returns whether DONE held. A receive that throws is counted and retried.
     */
    boolean receiveUntil(SimpleConsumer consumer, int max, Duration invisible, BooleanSupplier done,
        long withinMillis, OnView onView) throws Exception {
        long deadline = System.nanoTime() + withinMillis * 1_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            List<MessageView> views;
            try {
                views = consumer.receive(max, invisible);
            } catch (ClientException e) {
                synchronized (this) {
                    receiveErrors++;
                    lastReceiveError = e.toString();
                }
                Thread.sleep(200);
                continue;
            }
            for (MessageView v : views) {
                onView.accept(v);
            }
        }
        return true;
    }

    /** Polls COND every 20 ms for up to the timeout; records WHAT as a difference if it never held. */
    boolean await(String what, BooleanSupplier cond, java.util.function.Supplier<String> state)
        throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeoutMillis / 1000 + " s waiting for " + what + " (" + state.get() + ")");
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    /** Receive errors for a PASS line, empty if none. */
    String receiveErrorNote() {
        synchronized (this) {
            return receiveErrors == 0 ? "" : " receiveErrors=" + receiveErrors + " (last: " + lastReceiveError + ")";
        }
    }

    /**
     * Closes every client, all at once, and waits up to CLOSE_WAIT_MILLIS for them: a push consumer's
     * close waits for its pending long-polling receive (up to the proxy's 20 s), which tells the
     * scenario nothing. Errors are only reported; the JVM exits at the end of the run regardless.
     */
    void closeAll() throws InterruptedException {
        List<Closeable> all;
        synchronized (closers) {
            all = new ArrayList<>(closers);
            closers.clear();
        }
        List<Thread> threads = new ArrayList<>();
        for (Closeable c : all) {
            Thread t = new Thread(() -> {
                long t0 = System.nanoTime();
                try {
                    c.close();
                } catch (Exception e) {
                    System.err.println(scenario + ": close: " + e);
                }
                System.err.println(scenario + ": closed " + c.getClass().getSimpleName() + " in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms");
            }, scenario + "-close");
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        long deadline = System.nanoTime() + CLOSE_WAIT_MILLIS * 1_000_000L;
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
        }
    }

    static String body(MessageView v) {
        return StandardCharsets.UTF_8.decode(v.getBody().duplicate()).toString();
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
