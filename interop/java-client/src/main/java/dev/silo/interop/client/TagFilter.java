package dev.silo.interop.client;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sends N messages tagged TagA, TagB, TagC in turn; a consumer subscribed "TagA || TagC" must receive
 * exactly the TagA and TagC ones, once each. The stock client also filters by tag itself, so the
 * scenario additionally decodes every pull response for the topic: the broker must not have returned
 * any TagB message (server-side tag filtering). 4.x clients call no RPC hook after a pull, so with
 * them this part is skipped.
 */
final class TagFilter implements Scenario {

    private static final String[] TAGS = {"TagA", "TagB", "TagC"};

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "tag", i -> TAGS[i % 3]);
        List<Sent> wanted = sent.stream().filter(s -> !"TagB".equals(s.tag)).collect(Collectors.toList());

        Map<String, Integer> pulled = new ConcurrentHashMap<>();
        ctx.hook.onPulled(m -> {
            if (topic.equals(m.getTopic())) {
                pulled.merge(String.valueOf(m.getTags()), 1, Integer::sum);
            }
        });
        Received got = new Received();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(ctx.group("cg"));
        consumer.subscribe(topic, "TagA || TagC");
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            for (MessageExt m : msgs) {
                got.add("c1", m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.await("all " + wanted.size() + " TagA/TagC messages", () -> got.distinct() >= wanted.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        Verify.Stats stats = Verify.exactlyOnce(ctx.fail, "consume", wanted, got.list(), true);
        Map<String, Integer> pulledSorted = new TreeMap<>(pulled);
        String pulledText = pulledSorted.toString();
        if (pulled.isEmpty()) {
            // 4.x clients run no RPC hook after asynchronous requests such as pulls.
            if (MQVersion.CURRENT_VERSION >= MQVersion.Version.V5_0_0.ordinal()) {
                ctx.fail.add("broker-side filter: no pull response was seen");
            }
            pulledText = "(pull responses not visible to this client's RPC hook)";
        }
        if (pulled.getOrDefault("TagB", 0) > 0) {
            ctx.fail.add("broker-side filter: pull responses carried " + pulled.get("TagB")
                + " TagB message(s); pulled by tag " + pulledSorted);
        }
        return "sent=" + sent.size() + " wanted=" + wanted.size() + " pulledByTag=" + pulledText + " " + stats;
    }
}
