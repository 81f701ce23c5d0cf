package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Messages and consumer offsets must survive a broker restart between two runs.
 *
 * <p>{@code --phase send --state FILE}: sends N/2 messages ("before"), consumes them with group G
 * (exactly once, all fields), shuts the consumer down and waits until the broker reports G's
 * committed offsets at the end of every queue; then sends the other N/2 ("after") and writes every
 * message (ids, queue, offset, key, tag, body) to FILE.
 *
 * <p>{@code --phase consume --state FILE} (after the restart): group G must receive exactly the
 * "after" messages (a "before" message again means the committed offsets were lost), and a new
 * group G2 consuming from the first offset must receive all N; both with the ids, queues and offsets
 * recorded before the restart.
 */
final class RestartCheck implements Scenario {

    @Override
    public String run(Ctx ctx) throws Exception {
        if (ctx.state == null) {
            throw new IllegalArgumentException("restart-check needs --state FILE");
        }
        if ("send".equals(ctx.phase)) {
            return send(ctx);
        }
        if ("consume".equals(ctx.phase)) {
            return consume(ctx);
        }
        throw new IllegalArgumentException("restart-check needs --phase send or --phase consume");
    }

    private String send(Ctx ctx) throws Exception {
        String topic = ctx.topic();
        String group = ctx.group("cg");
        DefaultMQProducer producer = ctx.producer(ctx.name("pg"));
        int half = ctx.count / 2;
        List<Sent> before = ProduceConsume.sendSync(ctx, producer, topic, half, "before", i -> "TagA");

        Received got = new Received();
        DefaultMQPushConsumer consumer = startConsumer(ctx, group, topic, "g", got);
        ctx.await("all " + before.size() + " messages before the restart", () -> got.distinct() >= before.size(),
            () -> got.distinct() + " distinct received");
        ctx.settle();
        consumer.shutdown();
        Verify.exactlyOnce(ctx.fail, "before restart", before, got.list(), true);
        String committed = GroupOffsets.awaitCommitted(ctx, group,
            GroupOffsets.endOffsets(LitePull.brokerName(producer, topic), before));

        List<Sent> after = ProduceConsume.sendSync(ctx, producer, topic, ctx.count - half, "after", i -> "TagB");
        List<String> lines = new ArrayList<>();
        lines.add("# restart-check state: topic, group, then phase<TAB>msgId<TAB>offsetMsgId<TAB>queueId<TAB>"
            + "queueOffset<TAB>key<TAB>tag<TAB>body");
        lines.add("topic\t" + topic);
        lines.add("group\t" + group);
        lines.add("suffix\t" + ctx.suffix);
        for (Sent s : before) {
            lines.add(line("before", s));
        }
        for (Sent s : after) {
            lines.add(line("after", s));
        }
        Files.write(ctx.state, lines, StandardCharsets.UTF_8);
        return "sent=" + (before.size() + after.size()) + " consumedBefore=" + before.size() + " " + committed
            + " state=" + ctx.state;
    }

    private static String line(String phase, Sent s) {
        return String.join("\t", phase, s.msgId, s.offsetMsgId, Integer.toString(s.queueId),
            Long.toString(s.queueOffset), s.key, s.tag, s.body);
    }

    private String consume(Ctx ctx) throws Exception {
        String topic = null;
        String group = null;
        List<Sent> all = new ArrayList<>();
        Set<String> beforeBodies = new HashSet<>();
        List<Sent> after = new ArrayList<>();
        for (String l : Files.readAllLines(ctx.state, StandardCharsets.UTF_8)) {
            if (l.startsWith("#") || l.isEmpty()) {
                continue;
            }
            String[] f = l.split("\t", -1);
            switch (f[0]) {
                case "topic":
                    topic = f[1];
                    break;
                case "group":
                    group = f[1];
                    break;
                case "suffix":
                    break;
                default:
                    Sent s = new Sent(topic, f[7], f[5], f[6], "v-" + f[5], f[1], f[2], Integer.parseInt(f[3]),
                        Long.parseLong(f[4]));
                    all.add(s);
                    if ("before".equals(f[0])) {
                        beforeBodies.add(s.body);
                    } else {
                        after.add(s);
                    }
            }
        }
        if (topic == null || group == null || all.isEmpty()) {
            throw new IllegalStateException("state file " + ctx.state + " lacks topic, group or messages");
        }
        Received same = new Received();
        Received fresh = new Received();
        startConsumer(ctx, group, topic, "g", same);
        startConsumer(ctx, group + "_fresh", topic, "g2", fresh);
        final int afterCount = after.size();
        final int allCount = all.size();
        ctx.await(afterCount + " messages in group G and " + allCount + " in a new group",
            () -> same.distinct() >= afterCount && fresh.distinct() >= allCount,
            () -> "G " + same.distinct() + ", new group " + fresh.distinct());
        ctx.settle();
        List<Received.Got> sameList = new ArrayList<>();
        int replayed = 0;
        for (Received.Got g : same.list()) {
            if (beforeBodies.contains(g.body)) {
                replayed++;
            } else {
                sameList.add(g);
            }
        }
        if (replayed > 0) {
            ctx.fail.add("group " + group + " got " + replayed + " message(s) again that it had consumed before the "
                + "restart: committed offsets were lost");
        }
        Verify.Stats s1 = Verify.exactlyOnce(ctx.fail, "group G after restart", after, sameList, true);
        Verify.Stats s2 = Verify.exactlyOnce(ctx.fail, "new group after restart", all, fresh.list(), true);
        return "stateMessages=" + all.size() + " groupG: " + s1 + " newGroup: " + s2;
    }

    private static DefaultMQPushConsumer startConsumer(Ctx ctx, String group, String topic, String name, Received got)
        throws Exception {
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.subscribe(topic, "*");
        c.setConsumeThreadMin(1);
        c.setConsumeThreadMax(1);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, cc) -> {
            for (MessageExt m : msgs) {
                got.add(name, m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        return c;
    }
}
