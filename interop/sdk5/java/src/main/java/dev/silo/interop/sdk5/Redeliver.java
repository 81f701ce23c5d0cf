package dev.silo.interop.sdk5;

import java.time.Duration;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.java.message.MessageViewImpl;

/**
 * One message, received with invisible duration 10 s (the proxy's minimum) and not acked: it must
 * come back with delivery attempt 2, not before 8 s. Then change-invisible-duration (10 s) on the new
 * handle and an ack with the handle that call returned (the SDK keeps it in the message view): both
 * succeed, and the message must not come back (receiving for 12 s, or longer if the redelivery took
 * longer than 10 s: as long as it took plus 2 s).
 */
final class Redeliver implements Scenario {

    private static final Duration INVISIBLE = Duration.ofSeconds(10);
    private static final long NOT_BEFORE_MILLIS = 8_000;
    private static final long WATCH_MILLIS = 12_000;

    @Override
    public String run(Ctx ctx) throws Exception {
        String topic = ctx.name("redeliver");
        SimpleConsumer consumer = ctx.simpleConsumer(ctx.name("redeliver"), topic, Duration.ofSeconds(5));
        Producer producer = ctx.producer(null, topic);
        String body = "redeliver-" + ctx.suffix;
        String id = producer.send(ctx.provider.newMessageBuilder()
            .setTopic(topic)
            .setTag("redeliver")
            .setKeys("r-0")
            .setBody(Ctx.bytes(body))
            .build()).getMessageId().toString();

        MessageView[] first = {null};
        long[] firstAt = {0};
        ctx.receiveUntil(consumer, 1, INVISIBLE, () -> first[0] != null, ctx.timeoutMillis, v -> {
            if (first[0] == null && body.equals(Ctx.body(v))) {
                first[0] = v;
                firstAt[0] = System.nanoTime();
            } else {
                ctx.fail("unexpected message before the first delivery: " + Ctx.body(v));
            }
        });
        if (first[0] == null) {
            ctx.fail("the message was not received within " + ctx.timeoutMillis / 1000 + " s");
            return "";
        }
        ctx.check("first delivery attempt", 1, first[0].getDeliveryAttempt());
        ctx.check("first delivery message id", id, first[0].getMessageId().toString());

        // Not acked: it must come back once the invisible duration is over.
        MessageView[] second = {null};
        long[] secondAt = {0};
        ctx.receiveUntil(consumer, 1, INVISIBLE, () -> second[0] != null, ctx.timeoutMillis, v -> {
            if (body.equals(Ctx.body(v))) {
                second[0] = v;
                secondAt[0] = System.nanoTime();
            } else {
                ctx.fail("unexpected message: " + Ctx.body(v));
            }
        });
        if (second[0] == null) {
            ctx.fail("the unacked message did not come back within " + ctx.timeoutMillis / 1000 + " s");
            return "";
        }
        long gapMillis = (secondAt[0] - firstAt[0]) / 1_000_000;
        if (gapMillis < NOT_BEFORE_MILLIS) {
            ctx.fail("redelivered after " + gapMillis + " ms, before " + NOT_BEFORE_MILLIS + " ms (invisible "
                + INVISIBLE.toMillis() + " ms)");
        }
        ctx.check("second delivery attempt", 2, second[0].getDeliveryAttempt());
        ctx.check("second delivery message id", id, second[0].getMessageId().toString());

        String handleBefore = handle(second[0]);
        consumer.changeInvisibleDuration(second[0], INVISIBLE);
        String handleAfter = handle(second[0]);
        if (handleBefore != null && handleBefore.equals(handleAfter)) {
            ctx.fail("change-invisible-duration returned the same receipt handle");
        }
        consumer.ack(second[0]);
        long ackedAt = System.nanoTime();

        long watch = Math.max(WATCH_MILLIS, gapMillis + 2_000);
        int[] back = {0};
        ctx.receiveUntil(consumer, 16, INVISIBLE, () -> false, watch, v -> {
            back[0]++;
            ctx.fail("received after the ack, " + (System.nanoTime() - ackedAt) / 1_000_000 + " ms later: "
                + Ctx.body(v) + " (delivery attempt " + v.getDeliveryAttempt() + ")");
            consumer.ack(v);
        });
        return "redelivered after " + gapMillis + "ms with attempt " + second[0].getDeliveryAttempt()
            + ", changeInvisible gave a new handle=" + (handleBefore != null && !handleBefore.equals(handleAfter))
            + ", acked, not back within " + watch + "ms" + ctx.receiveErrorNote();
    }

    /** The receipt handle the SDK holds for V (it replaces it after change-invisible-duration). */
    private static String handle(MessageView v) {
        return v instanceof MessageViewImpl ? ((MessageViewImpl) v).getReceiptHandle() : null;
    }
}
