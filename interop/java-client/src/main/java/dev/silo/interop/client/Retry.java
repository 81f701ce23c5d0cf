package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sends N messages; the consumer answers RECONSUME_LATER (with delay level 1 = 1 s) the first time it
 * sees a message whose key ends in an odd digit, CONSUME_SUCCESS otherwise. Even messages must
 * arrive exactly once with reconsumeTimes 0. Odd messages must arrive exactly twice: first from the
 * topic with reconsumeTimes 0, then from %RETRY%group with reconsumeTimes 1, the original topic
 * restored, the same client msgId, body, keys, tags and user property, RETRY_TOPIC = the topic and
 * ORIGIN_MESSAGE_ID = the original broker message id. Nothing may arrive a third time.
 *
 * <p>The broker creates %RETRY%group when the consumer's first heartbeat arrives, after the consumer
 * has already asked the name server for that route (and been told TOPIC_NOT_EXIST); a stock consumer
 * only asks again on its 30 s route poll. The scenario checks that the name server routes the retry
 * topic soon after the consumer starts, and sets the consumer's pollNameServerInterval to 1 s so
 * that the retries are not held up by that poll.
 */
final class Retry implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        String group = ctx.group("cg");
        String retryTopic = MixAll.getRetryTopic(group);
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "retry",
            i -> i % 2 == 0 ? "TagA" : "TagB");
        int odd = 0;
        for (Sent s : sent) {
            odd += isOdd(s.key) ? 1 : 0;
        }
        final int expectedDeliveries = sent.size() + odd;

        Received got = new Received();
        DefaultMQPushConsumer consumer = ctx.pushConsumer(group);
        consumer.subscribe(topic, "*");
        consumer.setPollNameServerInterval(1000);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, c) -> {
            boolean later = false;
            for (MessageExt m : msgs) {
                got.add("c1", c.getMessageQueue().getTopic(), m);
                later |= m.getReconsumeTimes() == 0 && isOdd(m.getKeys());
            }
            if (later) {
                c.setDelayLevelWhenNextConsume(1);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        ctx.awaitRemote("a name-server route for " + retryTopic, () -> {
            try {
                return !consumer.fetchSubscribeMessageQueues(retryTopic).isEmpty();
            } catch (Exception e) {
                return false;
            }
        }, () -> "no route");
        ctx.await(expectedDeliveries + " deliveries (" + odd + " of them retries)",
            () -> got.total() >= expectedDeliveries, () -> got.total() + " deliveries so far");
        ctx.settle();

        Map<String, List<Received.Got>> byBody = new HashMap<>();
        List<Received.Got> all = got.list();
        for (Received.Got g : all) {
            byBody.computeIfAbsent(g.body, k -> new ArrayList<>()).add(g);
        }
        List<Received.Got> firsts = new ArrayList<>();
        for (Received.Got g : all) {
            if (g.reconsumeTimes == 0) {
                firsts.add(g);
            }
        }
        // First deliveries: exactly once each, all fields, queue order is not checked (20 threads).
        Verify.exactlyOnce(ctx.fail, "first delivery", sent, firsts, false);
        int retried = 0;
        for (Sent s : sent) {
            List<Received.Got> d = byBody.getOrDefault(s.body, List.of());
            List<Received.Got> again = new ArrayList<>();
            for (Received.Got g : d) {
                if (g.reconsumeTimes > 0) {
                    again.add(g);
                }
            }
            if (!isOdd(s.key)) {
                if (!again.isEmpty()) {
                    ctx.fail.add("even " + s.body + " redelivered: " + again);
                }
                continue;
            }
            if (again.size() != 1) {
                ctx.fail.add("odd " + s.body + ": expected exactly 1 retry delivery, actual " + again.size() + " " + again);
                continue;
            }
            retried++;
            Received.Got r = again.get(0);
            String what = "retry of " + s.body;
            ctx.fail.check(what + " reconsumeTimes", 1, r.reconsumeTimes);
            ctx.fail.check(what + " pulled from", retryTopic, r.sourceTopic);
            ctx.fail.check(what + " topic (restored)", topic, r.topic);
            ctx.fail.check(what + " msgId", s.msgId, r.msgId);
            ctx.fail.check(what + " keys", s.key, r.keys);
            ctx.fail.check(what + " tags", s.tag, r.tags);
            ctx.fail.check(what + " user property", s.prop, r.prop);
            ctx.fail.check(what + " RETRY_TOPIC", topic, r.properties.get(MessageConst.PROPERTY_RETRY_TOPIC));
            ctx.fail.check(what + " ORIGIN_MESSAGE_ID", s.offsetMsgId,
                r.properties.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID));
            if (!r.crcOk) {
                ctx.fail.add(what + ": bodyCRC does not match the body");
            }
            if (d.size() > 0 && d.get(0).reconsumeTimes != 0) {
                ctx.fail.add(what + ": the retry arrived before the first delivery");
            }
        }
        ctx.fail.check("total deliveries", expectedDeliveries, all.size());
        return "sent=" + sent.size() + " retried=" + retried + " deliveries=" + all.size()
            + " sendBack(36)=" + ctx.hook.count("broker", 36);
    }

    private static boolean isOdd(String key) {
        return key != null && !key.isEmpty() && (key.charAt(key.length() - 1) - '0') % 2 == 1;
    }
}
