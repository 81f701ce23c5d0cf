package dev.silo.interop.client;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sends N messages, then two BROADCASTING push consumers in one group (offsets kept client-side)
 * must each receive every message exactly once, with all fields, in queue order.
 */
final class Broadcast implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        String group = ctx.group("cg");
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        List<Sent> sent = ProduceConsume.sendSync(ctx, producer, topic, ctx.count, "bc",
            i -> i % 2 == 0 ? "TagA" : "TagB");

        Received[] got = {new Received(), new Received()};
        for (int k = 0; k < 2; k++) {
            final Received mine = got[k];
            final String name = "c" + (k + 1);
            DefaultMQPushConsumer c = ctx.pushConsumer(group);
            setMessageModel(c, "BROADCASTING");
            c.subscribe(topic, "*");
            c.setConsumeThreadMin(1);
            c.setConsumeThreadMax(1);
            c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
                for (MessageExt m : msgs) {
                    mine.add(name, m);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            ctx.fail.check(name + " message model", "BROADCASTING", c.getMessageModel().name());
        }
        ctx.await("all " + sent.size() + " messages at both consumers",
            () -> got[0].distinct() >= sent.size() && got[1].distinct() >= sent.size(),
            () -> "c1 " + got[0].distinct() + ", c2 " + got[1].distinct());
        ctx.settle();
        List<String> out = new ArrayList<>();
        for (int k = 0; k < 2; k++) {
            Verify.Stats s = Verify.exactlyOnce(ctx.fail, "c" + (k + 1), sent, got[k].list(), true);
            out.add("c" + (k + 1) + ": " + s);
        }
        return "sent=" + sent.size() + " " + String.join(" ", out);
    }

    /**
     * setMessageModel by enum constant name: MessageModel moved packages between 4.x and 5.x, and
     * this source compiles against both.
     */
    static void setMessageModel(DefaultMQPushConsumer c, String model) throws ReflectiveOperationException {
        for (Method m : DefaultMQPushConsumer.class.getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1) {
                Class<?> type = m.getParameterTypes()[0];
                for (Object constant : type.getEnumConstants()) {
                    if (((Enum<?>) constant).name().equals(model)) {
                        m.invoke(c, constant);
                        return;
                    }
                }
            }
        }
        throw new IllegalStateException("no setMessageModel(" + model + ")");
    }
}
