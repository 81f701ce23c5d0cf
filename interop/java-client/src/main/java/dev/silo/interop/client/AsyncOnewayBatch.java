package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * N async sends (all callbacks must report SEND_OK within the timeout), N one-way sends, and N
 * messages as sync batches of 32 via send(Collection): each batch result must be SEND_OK and list one
 * client id per message, in order. Then one push consumer must receive all 3N exactly once with the
 * sent fields; batch elements must sit in the batch's queue at consecutive offsets from the offset
 * the batch result reported.
 *
 * <p>Message ids of batch elements: the client gives each element its own UNIQ_KEY (and reports
 * them, comma-joined, as the batch's msgId) and also stamps one on the batch itself. Apache brokers up
 * to 5.3.3 append the batch-level properties to every element, so consumers see the batch's id on
 * all elements (apache/rocketmq issue #9416). By default either is accepted as long as it is
 * consistent within a batch (each element its own sent id, or all elements one id that is none of
 * them), and the details say which was seen; {@code --strict true} demands the former.
 */
final class AsyncOnewayBatch implements Scenario {

    static final int BATCH = 32;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        int n = ctx.count;
        List<Sent> sent = new ArrayList<>();

        // A first sync send creates the topic, so that the async burst does not race the
        // auto-creation (which is per send, not per topic, in the broker).
        sent.addAll(ProduceConsume.sendSync(ctx, producer, topic, 1, "first", i -> "TagA"));

        // Async.
        CountDownLatch done = new CountDownLatch(n);
        ConcurrentHashMap<Integer, Object> outcome = new ConcurrentHashMap<>();
        Message[] asyncMsgs = new Message[n];
        for (int i = 0; i < n; i++) {
            final int idx = i;
            Message m = Ctx.message(topic, "TagA", ProduceConsume.key(ctx, "async", i),
                ProduceConsume.body(ctx, "async", i));
            asyncMsgs[i] = m;
            producer.send(m, new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    outcome.put(idx, r);
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    outcome.put(idx, e);
                    done.countDown();
                }
            });
        }
        if (!done.await(ctx.timeoutMillis, TimeUnit.MILLISECONDS)) {
            ctx.fail.add("async: only " + (n - done.getCount()) + " of " + n + " callbacks within the timeout");
        }
        for (int i = 0; i < n; i++) {
            Object o = outcome.get(i);
            if (o instanceof SendResult) {
                ProduceConsume.checkResult(ctx, "async #" + i, asyncMsgs[i], (SendResult) o);
                sent.add(Sent.of(asyncMsgs[i], (SendResult) o));
            } else {
                ctx.fail.add("async #" + i + ": " + (o == null ? "no callback" : "failed: " + o));
            }
        }

        // One-way: no result; the consumer is the only check.
        for (int i = 0; i < n; i++) {
            Message m = Ctx.message(topic, "TagB", ProduceConsume.key(ctx, "oneway", i),
                ProduceConsume.body(ctx, "oneway", i));
            producer.sendOneway(m);
            sent.add(Sent.of(m, null));
        }

        // Batches.
        int batches = 0;
        for (int start = 0; start < n; start += BATCH) {
            List<Message> batch = new ArrayList<>();
            for (int i = start; i < Math.min(n, start + BATCH); i++) {
                batch.add(Ctx.message(topic, "TagC", ProduceConsume.key(ctx, "batch", i),
                    ProduceConsume.body(ctx, "batch", i)));
            }
            SendResult r = producer.send(batch);
            batches++;
            String what = "batch " + batches;
            ctx.fail.check(what + " send status", SendStatus.SEND_OK, r.getSendStatus());
            String[] ids = r.getMsgId() == null ? new String[0] : r.getMsgId().split(",");
            String[] offsetIds = r.getOffsetMsgId() == null ? new String[0] : r.getOffsetMsgId().split(",");
            ctx.fail.check(what + " msgIds in result", batch.size(), ids.length);
            ctx.fail.check(what + " offsetMsgIds in result", batch.size(), offsetIds.length);
            for (int j = 0; j < batch.size(); j++) {
                Sent s = Sent.ofBatch(batch.get(j), r, j);
                s.batch = batches;
                if (j < ids.length) {
                    ctx.fail.check(what + " element " + j + " msgId", s.msgId, ids[j]);
                }
                sent.add(s);
            }
        }

        Received got = new Received();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "*");
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                got.add("c1", m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.await("all " + sent.size() + " messages", () -> got.distinct() >= sent.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        List<Received.Got> list = got.list();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", sent, list, true);
        String ids = batchIds(ctx, sent, list);
        return "async=" + n + " oneway=" + n + " batched=" + n + " in " + batches + " batches (+1 sync) batchMsgIds="
            + ids + " " + stats;
    }

    /** Checks the consumed msgIds of batch elements (see the class comment); returns the mode seen. */
    private static String batchIds(Ctx ctx, List<Sent> sent, List<Received.Got> got) {
        boolean innerOnly = ctx.strict;
        Map<String, String> consumedId = new HashMap<>();
        for (Received.Got g : got) {
            consumedId.putIfAbsent(g.body, g.msgId);
        }
        Map<Integer, List<Sent>> byBatch = new TreeMap<>();
        for (Sent s : sent) {
            if (s.batch >= 0) {
                byBatch.computeIfAbsent(s.batch, k -> new ArrayList<>()).add(s);
            }
        }
        int inner = 0;
        int batchLevel = 0;
        for (Map.Entry<Integer, List<Sent>> e : byBatch.entrySet()) {
            List<Sent> elems = e.getValue();
            boolean allInner = true;
            Set<String> seen = new HashSet<>();
            Set<String> sentIds = new HashSet<>();
            for (Sent s : elems) {
                String id = consumedId.get(s.body);
                allInner &= s.msgId.equals(id);
                seen.add(id);
                sentIds.add(s.msgId);
            }
            if (allInner) {
                inner++;
            } else if (!innerOnly && seen.size() == 1 && !seen.contains(null) && !sentIds.containsAll(seen)) {
                batchLevel++;
            } else {
                for (Sent s : elems) {
                    ctx.fail.check("batch " + e.getKey() + " " + s.body + " msgId (UNIQ_KEY)", s.msgId,
                        consumedId.get(s.body));
                }
            }
        }
        if (batchLevel == 0) {
            return "inner";
        }
        return inner == 0 ? "batch-level(#9416)" : "mixed(inner=" + inner + ",batch-level=" + batchLevel + ")";
    }
}
