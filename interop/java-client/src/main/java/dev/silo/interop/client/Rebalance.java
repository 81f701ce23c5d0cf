package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Two push consumers in one group on a topic with 4 queues. A few "Warmup" messages create the
 * topic; the consumers subscribe to tag "Work" only (so the warm-up is filtered out and nothing is
 * consumed while queues change hands), both start, and the scenario waits until their allocations
 * are settled: 2 queues each, disjoint, covering all 4. Then N "Work" messages are sent: together the
 * consumers must receive every one exactly once, each consumer some of them, each message from a
 * queue allocated to the consumer that got it, in queue-offset order per queue, and the allocation
 * must not change meanwhile.
 */
final class Rebalance implements Scenario {

    /** AllocateMessageQueueAveragely, remembering its latest answer per topic. */
    static final class Recording implements AllocateMessageQueueStrategy {
        private final AllocateMessageQueueAveragely inner = new AllocateMessageQueueAveragely();
        final Map<String, Set<Integer>> latest = new ConcurrentHashMap<>();
        /** Changes per topic. Only the work topic's count is checked: the %RETRY% topic's queue
         *  is first allocated whenever the client's route poll first finds that topic, which is
         *  client timing, not broker behaviour. */
        final Map<String, AtomicInteger> changes = new ConcurrentHashMap<>();

        @Override
        public List<MessageQueue> allocate(String group, String currentCID, List<MessageQueue> mqAll,
            List<String> cidAll) {
            List<MessageQueue> r = inner.allocate(group, currentCID, mqAll, cidAll);
            Set<Integer> ids = new TreeSet<>();
            for (MessageQueue mq : r) {
                ids.add(mq.getQueueId());
            }
            String t = mqAll.isEmpty() ? "" : mqAll.get(0).getTopic();
            if (!ids.equals(latest.put(t, ids))) {
                changes.computeIfAbsent(t, k -> new AtomicInteger()).incrementAndGet();
            }
            return r;
        }

        @Override
        public String getName() {
            return inner.getName();
        }

        int changesOf(String topic) {
            AtomicInteger n = changes.get(topic);
            return n == null ? 0 : n.get();
        }

        Set<Integer> of(String topic) {
            return latest.getOrDefault(topic, Set.of());
        }
    }

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        String group = ctx.group("cg");
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        ProduceConsume.sendSync(ctx, producer, topic, 8, "warmup", i -> "Warmup");
        int queues = producer.fetchPublishMessageQueues(topic).size();
        ctx.fail.check("write queues of the auto-created topic", 4, queues);

        Received got = new Received();
        String[] names = {"c1", "c2"};
        Recording[] alloc = {new Recording(), new Recording()};
        for (int k = 0; k < 2; k++) {
            final String name = names[k];
            DefaultMQPushConsumer c = ctx.pushConsumer(group);
            c.setAllocateMessageQueueStrategy(alloc[k]);
            c.subscribe(topic, "Work");
            c.setConsumeThreadMin(1);
            c.setConsumeThreadMax(1);
            c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
                for (MessageExt m : msgs) {
                    got.add(name, m);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
        }
        ctx.await("allocations of 2 + 2 disjoint queues", () -> {
            Set<Integer> a = alloc[0].of(topic);
            Set<Integer> b = alloc[1].of(topic);
            Set<Integer> union = new HashSet<>(a);
            union.addAll(b);
            return a.size() == 2 && b.size() == 2 && union.size() == 4;
        }, () -> "c1=" + alloc[0].of(topic) + " c2=" + alloc[1].of(topic));
        Set<Integer> a1 = new TreeSet<>(alloc[0].of(topic));
        Set<Integer> a2 = new TreeSet<>(alloc[1].of(topic));
        int changesBefore = alloc[0].changesOf(topic) + alloc[1].changesOf(topic);

        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "work", i -> "Work");
        ctx.await("all " + sent.size() + " messages", () -> got.distinct() >= sent.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        List<Received.Got> list = got.list();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", sent, list, true);
        for (String n : names) {
            if (stats.perConsumer.getOrDefault(n, 0) == 0) {
                ctx.fail.add(n + " received no message (perConsumer " + stats.perConsumer + ")");
            }
        }
        List<String> wrongQueue = new ArrayList<>();
        for (Received.Got g : list) {
            Set<Integer> owned = "c1".equals(g.consumer) ? a1 : a2;
            if (!owned.contains(g.queueId)) {
                wrongQueue.add(g.toString());
            }
        }
        if (!wrongQueue.isEmpty()) {
            ctx.fail.add(wrongQueue.size() + " message(s) from queues not allocated to their consumer (c1=" + a1
                + " c2=" + a2 + "), e.g. " + wrongQueue.get(0));
        }
        ctx.fail.check("allocation changes while the work was consumed", changesBefore,
            alloc[0].changesOf(topic) + alloc[1].changesOf(topic));
        return "sent=" + sent.size() + " allocation c1=" + a1 + " c2=" + a2 + " " + stats;
    }
}
