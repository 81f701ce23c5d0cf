package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.exception.RequestTimeoutException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.RequestFutureHolder;
import org.apache.rocketmq.client.producer.RequestResponseFuture;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.utils.CorrelationIdUtil;

/**
 * Request-reply: {@code DefaultMQProducer.request}, answered by a responder that replies with
 * {@code MessageUtil.createReplyMessage}.
 *
 * <p>A responder (a push consumer of a new group on the request topic, plus a second producer)
 * answers every request it gets with a reply built by {@code MessageUtil.createReplyMessage(request,
 * "reply to " + request body)}: topic {@code <CLUSTER>_REPLY_TOPIC} (CLUSTER as the broker stamped it
 * on the request), properties MSG_TYPE=reply, CORRELATION_ID, REPLY_TO_CLIENT and TTL copied from the
 * request. The broker pushes the reply to the requesting client (PUSH_REPLY_MESSAGE_TO_CLIENT), whose
 * reply-future registry ({@code RequestFutureHolder}) completes the request by CORRELATION_ID.
 *
 * <p>N requests (default 100): the first half one after another with {@code request(msg, timeout)}
 * (after one more, the probe below), the rest all at once with {@code request(msg, callback,
 * timeout)}; the timeout is --timeout. Each
 * must get exactly its own reply (body "reply to " + its body, its CORRELATION_ID, MSG_TYPE reply,
 * topic {@code <CLUSTER>_REPLY_TOPIC}) within the timeout; each request must reach the responder
 * once with CORRELATION_ID, REPLY_TO_CLIENT (the requester's client id) and TTL, and every reply
 * send must be SEND_OK. Reported: round trips (min/p50/max ms, each mode), how many replies the
 * broker stored in the reply topic (its max offsets before and after).
 *
 * <p>The requester gone: a third producer sends a request the same way, then shuts down; only then
 * does the responder send that request's reply. The reply send must fail with response code 1
 * (SYSTEM_ERROR); the remark goes to stderr (Apache 5.3.3: {@code push reply message fail, channel
 * of <clientId> not found.}, and the client retries it like any SYSTEM_ERROR, three sends).
 *
 * <p>Client behaviour this works around. The 5.3.3 client's {@code request(msg, timeout)} gives up
 * as soon as the request is stored: its send callback counts the reply latch down on send success
 * ({@code RequestResponseFuture.acquireCountDownLatch} from the {@code onSuccess} of the send in
 * {@code DefaultMQProducerImpl.request}), so the wait returns with no reply and it throws
 * RequestTimeoutException (10006, "send request message to &lt;topic&gt; OK, but wait reply message
 * timeout") at once, against any broker (apache/rocketmq#9319); the reply then arrives matched to
 * nothing. The scenario tries the stock call first; if it throws that well within the timeout, the
 * synchronous requests drive the same protocol themselves: the properties the client sets
 * (CORRELATION_ID from {@code CorrelationIdUtil}, REPLY_TO_CLIENT = the client id, TTL = the
 * timeout), the route look-up and heartbeat it does for a topic it has no route for (the broker
 * finds the requester's connection by client id among its producers' heartbeats), a
 * {@code RequestResponseFuture} registered in {@code RequestFutureHolder} under the correlation id,
 * a plain send, and a wait on that future, which only the pushed reply completes (the 4.9.8
 * client's stock call works and is used). The asynchronous {@code request} of both clients calls
 * {@code onSuccess(null)} once the request is stored (its send callback runs
 * {@code executeRequestCallback} with no reply yet) and {@code onSuccess(reply)} when the reply
 * comes; the scenario counts the first kind ("asyncEarlyNullCallbacks") and waits for the second.
 */
final class RequestReply implements Scenario {

    static final String REPLY_PREFIX = "reply to ";
    private static final int SYSTEM_ERROR = 1;

    /** One request and what came of it. */
    static final class Req {
        final String mode;
        final String key;
        final String body;
        volatile String correlationId;
        volatile long startNanos;
        volatile long rttMillis = -1;
        final List<Message> replies = new ArrayList<>();
        volatile Throwable error;

        Req(String mode, String key, String body) {
            this.mode = mode;
            this.key = key;
            this.body = body;
        }

        synchronized void reply(Message m) {
            if (replies.isEmpty()) {
                rttMillis = (System.nanoTime() - startNanos) / 1_000_000L;
            }
            replies.add(m);
        }

        synchronized int replyCount() {
            return replies.size();
        }

        @Override
        public String toString() {
            return "{" + mode + " " + body + ", correlationId=" + correlationId + "}";
        }
    }

    /** What the responder saw and did for one request (by body). */
    static final class Answered {
        final AtomicInteger seen = new AtomicInteger();
        volatile Map<String, String> properties;
        volatile String cluster;
        volatile SendResult result;
        volatile Throwable error;
        volatile int brokerCode = -1;
        volatile String remark;
        volatile boolean done;
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        long timeout = ctx.timeoutMillis;
        int n = ctx.count(100);
        int syncCount = (n + 1) / 2;
        int asyncCount = n - syncCount;

        WireLog requesterWire = new WireLog(ctx.hook, 326);
        WireLog responderWire = new WireLog(ctx.hook, 324, 325);
        DefaultMQProducer requester = producer(ctx, ctx.name("pg"), requesterWire, "req");
        DefaultMQProducer responder = producer(ctx, ctx.name("rpg"), responderWire, "rsp");

        // The request topic exists (4 queues) before the responder subscribes.
        Message plain = Ctx.message(topic, "TagW", ProduceConsume.key(ctx, "plain", 0), ProduceConsume.body(ctx, "plain", 0));
        ProduceConsume.checkResult(ctx, "plain message", plain, responder.send(plain));

        Map<String, Answered> answered = new ConcurrentHashMap<>();
        CountDownLatch orphanGone = new CountDownLatch(1);
        AtomicInteger plainSeen = new AtomicInteger();
        AtomicReference<String> plainCluster = new AtomicReference<>();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            for (MessageExt m : msgs) {
                respond(ctx, responder, responderWire, m, answered, orphanGone, plainSeen, plainCluster, timeout);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.await("the plain message at the responder (consumer ready)", () -> plainSeen.get() > 0, () -> "not yet");

        // The broker stamps its cluster name on stored messages (CLUSTER); the reply topic is named after it.
        String cluster = plainCluster.get();
        if (cluster == null) {
            ctx.fail.add("the plain message has no " + MessageConst.PROPERTY_CLUSTER
                + " property (createReplyMessage needs it on requests)");
        }
        String replyTopic = MixAll.getReplyTopic(cluster);
        long storedBefore = storedReplies(requester, replyTopic);

        // Synchronous requests: the stock call first.
        String syncApi = "stock";
        Req probe = new Req("probe", ProduceConsume.key(ctx, "probe", 0), ProduceConsume.body(ctx, "probe", 0));
        Message probeMsg = Ctx.message(topic, "TagP", probe.key, probe.body);
        probe.startNanos = System.nanoTime();
        List<Req> sync = new ArrayList<>();
        try {
            Message r = requester.request(probeMsg, timeout);
            probe.correlationId = probeMsg.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
            if (r != null) {
                probe.reply(r);
            }
            sync.add(probe);
        } catch (RequestTimeoutException e) {
            long ms = (System.nanoTime() - probe.startNanos) / 1_000_000L;
            probe.correlationId = probeMsg.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
            if (ms >= timeout / 2) {
                ctx.fail.add("stock request(msg, timeout): no reply within " + ms + " ms: " + e);
                sync.add(probe);
            } else {
                syncApi = "protocol(stock request() gave up after " + ms + " ms: RequestTimeoutException "
                    + e.getResponseCode() + ", apache#9319)";
                System.err.println("request-reply: the stock request(msg, timeout) threw after " + ms + " ms: " + e
                    + "; driving the client's request protocol directly instead");
            }
        }
        final boolean stockSync = "stock".equals(syncApi);
        for (int i = 0; i < syncCount; i++) {
            Req q = new Req("sync", ProduceConsume.key(ctx, "sync", i), ProduceConsume.body(ctx, "sync", i));
            Message m = Ctx.message(topic, "TagS", q.key, q.body);
            q.startNanos = System.nanoTime();
            try {
                Message r = stockSync ? requester.request(m, timeout) : protocolRequest(requester, m, timeout);
                q.correlationId = m.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
                if (r != null) {
                    q.reply(r);
                }
            } catch (Exception e) {
                q.correlationId = m.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
                q.error = e;
            }
            sync.add(q);
        }

        // Asynchronous requests, all at once.
        AtomicInteger nullCallbacks = new AtomicInteger();
        List<Req> async = new ArrayList<>();
        for (int i = 0; i < asyncCount; i++) {
            Req q = new Req("async", ProduceConsume.key(ctx, "async", i), ProduceConsume.body(ctx, "async", i));
            Message m = Ctx.message(topic, "TagA", q.key, q.body);
            async.add(q);
            q.startNanos = System.nanoTime();
            requester.request(m, new RequestCallback() {
                @Override
                public void onSuccess(Message reply) {
                    if (reply == null) {
                        // Both clients: called once the request is stored, before any reply.
                        nullCallbacks.incrementAndGet();
                    } else {
                        q.reply(reply);
                    }
                }

                @Override
                public void onException(Throwable e) {
                    q.error = e;
                }
            }, timeout);
            q.correlationId = m.getProperty(MessageConst.PROPERTY_CORRELATION_ID);
        }
        ctx.await(asyncCount + " asynchronous replies", () -> {
            for (Req q : async) {
                if (q.replyCount() == 0 && q.error == null) {
                    return false;
                }
            }
            return true;
        }, () -> "waiting for " + async.stream().filter(q -> q.replyCount() == 0 && q.error == null).count());

        // The requester gone before its reply is sent.
        DefaultMQProducer orphan = producer(ctx, ctx.name("opg"), requesterWire, "orph");
        String orphanClient = factory(orphan).getClientId();
        String orphanBody = ProduceConsume.body(ctx, "orphan", 0);
        Message om = Ctx.message(topic, "TagO", ProduceConsume.key(ctx, "orphan", 0), orphanBody);
        prepareRequest(orphan, om, timeout);
        SendResult os = orphan.send(om, timeout);
        ctx.fail.check("orphan request send status", SendStatus.SEND_OK, os.getSendStatus());
        orphan.shutdown();
        orphanGone.countDown();
        ctx.await("the responder's attempt to reply to the gone requester", () -> {
            Answered a = answered.get(orphanBody);
            return a != null && a.done;
        }, () -> "not yet");
        ctx.settle();

        // Every request: exactly its reply.
        List<Req> all = new ArrayList<>(sync);
        all.addAll(async);
        String requesterId = factory(requester).getClientId();
        for (Req q : all) {
            checkRequest(ctx, q, answered.get(q.body), requesterId, timeout, replyTopic);
        }
        if (!stockSync) {
            // The stock probe's request reached the responder; its reply found no waiting request.
            Answered a = answered.get(probe.body);
            if (a == null || a.seen.get() != 1 || a.result == null) {
                ctx.fail.add("stock probe request " + probe + ": expected to reach the responder once and be "
                    + "replied to, actual " + (a == null ? "never seen" : a.seen + " time(s), reply " + a.result));
            }
        }
        Answered oa = answered.get(orphanBody);
        String orphanOutcome;
        if (oa == null || oa.seen.get() != 1) {
            ctx.fail.add("orphan request: expected at the responder once, actual " + (oa == null ? 0 : oa.seen));
            orphanOutcome = "?";
        } else if (oa.result != null) {
            ctx.fail.add("reply to a gone requester (" + orphanClient + "): expected a failed send (code "
                + SYSTEM_ERROR + "), actual " + oa.result);
            orphanOutcome = "sent";
        } else {
            ctx.fail.check("reply to a gone requester: response code", SYSTEM_ERROR, oa.brokerCode);
            System.err.println("request-reply: reply to the gone requester " + orphanClient + " refused: code "
                + oa.brokerCode + " remark " + oa.remark + " (" + oa.error + ")");
            orphanOutcome = "code" + oa.brokerCode;
        }
        long storedAfter = storedReplies(requester, replyTopic);
        requesterWire.print(System.err);
        responderWire.print(System.err);
        List<Long> syncRtt = new ArrayList<>();
        List<Long> asyncRtt = new ArrayList<>();
        for (Req q : all) {
            if (q.rttMillis >= 0) {
                ("async".equals(q.mode) ? asyncRtt : syncRtt).add(q.rttMillis);
            }
        }
        return "requests=" + all.size() + " sync=" + sync.size() + " async=" + async.size() + " syncApi=" + syncApi
            + " syncRttMs=" + Transactions.percentiles(syncRtt) + " asyncRttMs=" + Transactions.percentiles(asyncRtt)
            + " asyncEarlyNullCallbacks=" + nullCallbacks + " replyTopic=" + replyTopic + " orphanReply="
            + orphanOutcome + " storedInReplyTopic=" + (storedBefore < 0 || storedAfter < 0 ? "?" : storedAfter
            - storedBefore) + " replySends(324/325)=" + (ctx.hook.count("broker", 324) + ctx.hook.count("broker", 325))
            + " pushReply(326)=" + ctx.hook.count("broker->client", 326);
    }

    private static DefaultMQProducer producer(Ctx ctx, String group, WireLog wire, String role) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group, wire);
        p.setNamesrvAddr(ctx.namesrv);
        p.setInstanceName("silo-" + ctx.suffix + "-" + role);
        p.start();
        ctx.closeLater(p::shutdown);
        return p;
    }

    /** The producer's client instance (its id, route table, heartbeats). */
    @SuppressWarnings("deprecation") // getDefaultMQProducerImpl(): deprecated in 5.x, the only way in 4.x
    static MQClientInstance factory(DefaultMQProducer p) {
        return p.getDefaultMQProducerImpl().getMqClientFactory();
    }

    /**
     * What the client's request() does before sending: CORRELATION_ID, REPLY_TO_CLIENT = the client
     * id, TTL = the timeout; and, for a topic it has no route for yet, a route look-up and a heartbeat
     * (the broker finds the requester's connection among its producers by client id).
     */
    static String prepareRequest(DefaultMQProducer p, Message m, long timeout) {
        MQClientInstance f = factory(p);
        String correlationId = CorrelationIdUtil.createCorrelationId();
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_CORRELATION_ID, correlationId);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT, f.getClientId());
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_MESSAGE_TTL, String.valueOf(timeout));
        Map<String, ?> routes = f.getTopicRouteTable();
        if (!routes.containsKey(m.getTopic())) {
            f.updateTopicRouteInfoFromNameServer(m.getTopic());
            f.sendHeartbeatToAllBrokerWithLock();
        }
        return correlationId;
    }

    /**
     * A synchronous request over the client's own protocol: the reply future is registered under the
     * correlation id in RequestFutureHolder (where the client's PUSH_REPLY_MESSAGE_TO_CLIENT handler
     * looks), the request is sent, and only the pushed reply completes the wait. Null on timeout.
     */
    static Message protocolRequest(DefaultMQProducer p, Message m, long timeout) throws Exception {
        long start = System.nanoTime();
        String correlationId = prepareRequest(p, m, timeout);
        RequestResponseFuture future = new RequestResponseFuture(correlationId, timeout, null);
        RequestFutureHolder.getInstance().getRequestFutureTable().put(correlationId, future);
        try {
            SendResult r = p.send(m, timeout);
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw new IllegalStateException("request send: " + r);
            }
            long left = timeout - (System.nanoTime() - start) / 1_000_000L;
            return future.waitResponseMessage(Math.max(left, 1));
        } finally {
            RequestFutureHolder.getInstance().getRequestFutureTable().remove(correlationId);
        }
    }

    /** The responder: replies to each request (the orphan's only once its requester is gone). */
    private static void respond(Ctx ctx, DefaultMQProducer responder, WireLog wire, MessageExt m,
        Map<String, Answered> answered, CountDownLatch orphanGone, AtomicInteger plainSeen,
        AtomicReference<String> plainCluster, long timeout) {
        String body = m.getBody() == null ? "" : new String(m.getBody(), StandardCharsets.UTF_8);
        if (m.getProperty(MessageConst.PROPERTY_CORRELATION_ID) == null) {
            plainCluster.compareAndSet(null, m.getProperty(MessageConst.PROPERTY_CLUSTER));
            plainSeen.incrementAndGet();
            return;
        }
        Answered a = answered.computeIfAbsent(body, k -> new Answered());
        if (a.seen.incrementAndGet() > 1) {
            return;
        }
        a.properties = new TreeMap<>(m.getProperties());
        a.cluster = m.getProperty(MessageConst.PROPERTY_CLUSTER);
        wire.sample("request as the responder gets it", "topic=" + m.getTopic() + " properties=" + a.properties);
        try {
            if (body.startsWith(ctx.scenario + " orphan ")) {
                if (!orphanGone.await(timeout, TimeUnit.MILLISECONDS)) {
                    ctx.fail.add("responder: the orphan's requester did not go within the timeout");
                }
            }
            Message reply = MessageUtil.createReplyMessage(m, (REPLY_PREFIX + body).getBytes(StandardCharsets.UTF_8));
            wire.sample("reply as built by createReplyMessage", "topic=" + reply.getTopic() + " properties="
                + new TreeMap<>(reply.getProperties()));
            a.result = responder.send(reply);
            wire.sample("reply SendResult", String.valueOf(a.result));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            a.error = e;
        } catch (Exception e) {
            a.error = e;
            for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
                if (t instanceof MQBrokerException) {
                    a.brokerCode = ((MQBrokerException) t).getResponseCode();
                    a.remark = ((MQBrokerException) t).getErrorMessage();
                    break;
                }
                if (t instanceof MQClientException && ((MQClientException) t).getResponseCode() > 0) {
                    a.brokerCode = ((MQClientException) t).getResponseCode();
                    a.remark = ((MQClientException) t).getErrorMessage();
                }
            }
        } finally {
            a.done = true;
        }
    }

    private static void checkRequest(Ctx ctx, Req q, Answered a, String requesterId, long timeout, String replyTopic) {
        String what = q.mode + " " + q.body;
        if (q.error != null) {
            ctx.fail.add(what + ": request failed: " + q.error);
        }
        if (q.replyCount() != 1) {
            ctx.fail.add(what + ": expected exactly 1 reply, actual " + q.replyCount());
        }
        if (q.replyCount() > 0) {
            Message r = q.replies.get(0);
            wire(ctx, r);
            ctx.fail.check(what + " reply body", REPLY_PREFIX + q.body,
                r.getBody() == null ? null : new String(r.getBody(), StandardCharsets.UTF_8));
            ctx.fail.check(what + " reply CORRELATION_ID", q.correlationId, r.getProperty(MessageConst.PROPERTY_CORRELATION_ID));
            ctx.fail.check(what + " reply MSG_TYPE", MixAll.REPLY_MESSAGE_FLAG, r.getProperty(MessageConst.PROPERTY_MESSAGE_TYPE));
            ctx.fail.check(what + " reply topic", replyTopic, r.getTopic());
            if (q.rttMillis > timeout) {
                ctx.fail.add(what + ": reply after " + q.rttMillis + " ms, beyond the timeout " + timeout);
            }
        }
        if (a == null) {
            ctx.fail.add(what + ": never reached the responder");
            return;
        }
        ctx.fail.check(what + " times at the responder", 1, a.seen.get());
        Map<String, String> p = a.properties;
        if (p != null) {
            ctx.fail.check(what + " request CORRELATION_ID", q.correlationId, p.get(MessageConst.PROPERTY_CORRELATION_ID));
            ctx.fail.check(what + " request REPLY_TO_CLIENT", requesterId, p.get(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT));
            ctx.fail.check(what + " request TTL", String.valueOf(timeout), p.get(MessageConst.PROPERTY_MESSAGE_TTL));
            ctx.fail.check(what + " request keys", q.key, p.get(MessageConst.PROPERTY_KEYS));
            ctx.fail.check(what + " request user property", "v-" + q.key, p.get(Ctx.PROP));
        }
        if (a.result == null) {
            ctx.fail.add(what + ": reply send failed: " + a.error);
        } else {
            ctx.fail.check(what + " reply send status", SendStatus.SEND_OK, a.result.getSendStatus());
        }
    }

    private static final AtomicInteger REPLY_SAMPLES = new AtomicInteger();

    private static void wire(Ctx ctx, Message r) {
        if (REPLY_SAMPLES.incrementAndGet() <= 2) {
            System.err.println("request-reply: reply as the requester gets it: topic=" + r.getTopic() + " properties="
                + new TreeMap<>(r.getProperties()) + (r instanceof MessageExt ? " queueId="
                + ((MessageExt) r).getQueueId() + " bornHost=" + ((MessageExt) r).getBornHostString() : ""));
        }
    }

    /** Sum of the reply topic's max offsets (what the broker stored there), or -1 if unknown. */
    @SuppressWarnings("deprecation") // maxOffset(): deprecated in 5.x, in both clients' API
    private static long storedReplies(DefaultMQProducer p, String replyTopic) {
        try {
            long sum = 0;
            for (MessageQueue q : p.fetchPublishMessageQueues(replyTopic)) {
                sum += p.maxOffset(q);
            }
            return sum;
        } catch (Exception e) {
            System.err.println("request-reply: max offsets of " + replyTopic + ": " + e);
            return -1;
        }
    }
}
