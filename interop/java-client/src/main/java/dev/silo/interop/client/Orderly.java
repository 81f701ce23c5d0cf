package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Eight orders of N/8 steps each, sent interleaved (step 0 of every order, then step 1, ...) with a
 * MessageQueueSelector that maps order id o to queue o % queues: every SendResult must name the
 * selected queue. A MessageListenerOrderly consumer (which locks its queues on the broker) must see
 * each order's steps exactly once and in sequence, each from its order's queue, and never two
 * listener calls for one queue at the same time.
 */
final class Orderly implements Scenario {

    static final int ORDERS = 8;
    static final String ORDER = "silo-order";
    static final String STEP = "silo-step";

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        int steps = Math.max(1, ctx.count / ORDERS);
        MessageQueueSelector selector = (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size());
        List<Sent> sent = new ArrayList<>();
        Map<Integer, Integer> queueOfOrder = new TreeMap<>();
        for (int s = 0; s < steps; s++) {
            for (int o = 0; o < ORDERS; o++) {
                int i = s * ORDERS + o;
                Message m = Ctx.message(topic, "Order", ProduceConsume.key(ctx, "order", i),
                    ProduceConsume.body(ctx, "order", i));
                m.putUserProperty(ORDER, Integer.toString(o));
                m.putUserProperty(STEP, Integer.toString(s));
                SendResult r = producer.send(m, selector, o);
                ProduceConsume.checkResult(ctx, "order " + o + " step " + s, m, r);
                Integer q = r.getMessageQueue().getQueueId();
                Integer prev = queueOfOrder.putIfAbsent(o, q);
                if (prev != null) {
                    ctx.fail.check("order " + o + " step " + s + " queue", prev, q);
                }
                sent.add(Sent.of(m, r));
            }
        }
        int queues = producer.fetchPublishMessageQueues(topic).size();
        for (Map.Entry<Integer, Integer> e : queueOfOrder.entrySet()) {
            ctx.fail.check("order " + e.getKey() + " queue (selector)", e.getKey() % queues, e.getValue());
        }

        Received got = new Received();
        Map<Integer, AtomicInteger> inFlight = new ConcurrentHashMap<>();
        AtomicInteger overlaps = new AtomicInteger();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, c) -> {
            int q = c.getMessageQueue().getQueueId();
            AtomicInteger busy = inFlight.computeIfAbsent(q, k -> new AtomicInteger());
            if (busy.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            try {
                for (MessageExt m : msgs) {
                    got.add("c1", m);
                }
            } finally {
                busy.decrementAndGet();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        ctx.await("all " + sent.size() + " messages", () -> got.distinct() >= sent.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        List<Received.Got> list = got.list();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", sent, list, true);
        Map<Integer, Integer> nextStep = new TreeMap<>();
        for (Received.Got g : list) {
            int o = Integer.parseInt(g.properties.getOrDefault(ORDER, "-1"));
            int s = Integer.parseInt(g.properties.getOrDefault(STEP, "-1"));
            int want = nextStep.getOrDefault(o, 0);
            if (s != want) {
                ctx.fail.add("order " + o + ": expected step " + want + ", actual step " + s + " " + g);
            }
            nextStep.put(o, s + 1);
            Integer q = queueOfOrder.get(o);
            if (q != null && q != g.queueId) {
                ctx.fail.add("order " + o + " consumed from queue " + g.queueId + ", sent to " + q);
            }
        }
        for (int o = 0; o < ORDERS; o++) {
            ctx.fail.check("order " + o + " steps consumed", steps, nextStep.getOrDefault(o, 0));
        }
        ctx.fail.check("concurrent listener calls on one queue", 0, overlaps.get());
        return "orders=" + ORDERS + " steps=" + steps + " queueOfOrder=" + queueOfOrder + " " + stats
            + " lock(41)=" + ctx.hook.count("broker", 41);
    }
}
