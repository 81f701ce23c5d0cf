package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

/**
 * A message a scenario sent and what it expects to read back. Fields that were not reported by the
 * broker (one-way sends, or a state file without them) are null / -1 and are not checked.
 */
final class Sent {
    final String topic;
    final String body;
    final String key;
    final String tag;
    final String prop;
    /** Client message id (UNIQ_KEY property). */
    final String msgId;
    /** Broker message id (store host + commit-log offset), or null. */
    final String offsetMsgId;
    final int queueId;
    final long queueOffset;
    /** Number of the batch this message was sent in, or -1. */
    int batch = -1;

    Sent(String topic, String body, String key, String tag, String prop, String msgId, String offsetMsgId,
        int queueId, long queueOffset) {
        this.topic = topic;
        this.body = body;
        this.key = key;
        this.tag = tag;
        this.prop = prop;
        this.msgId = msgId;
        this.offsetMsgId = offsetMsgId;
        this.queueId = queueId;
        this.queueOffset = queueOffset;
    }

    /** A message sent alone; RESULT null for one-way sends. */
    static Sent of(Message m, SendResult result) {
        return ofBatch(m, result, -1);
    }

    /**
     * Element INDEX of a batch whose send gave RESULT (INDEX -1: not a batch). Batch results carry
     * comma-separated ids and the queue offset of the first element.
     */
    static Sent ofBatch(Message m, SendResult result, int index) {
        String offsetMsgId = null;
        int queueId = -1;
        long queueOffset = -1;
        if (result != null) {
            offsetMsgId = result.getOffsetMsgId();
            if (index >= 0 && offsetMsgId != null) {
                String[] ids = offsetMsgId.split(",");
                offsetMsgId = index < ids.length ? ids[index] : null;
            }
            queueId = result.getMessageQueue().getQueueId();
            queueOffset = result.getQueueOffset() + Math.max(index, 0);
        }
        return new Sent(m.getTopic(), new String(m.getBody(), StandardCharsets.UTF_8), m.getKeys(), m.getTags(),
            m.getUserProperty(Ctx.PROP), MessageClientIDSetter.getUniqID(m), offsetMsgId, queueId, queueOffset);
    }

    @Override
    public String toString() {
        return "{body=" + body + ", key=" + key + ", tag=" + tag + ", msgId=" + msgId + ", queue=" + queueId + "@"
            + queueOffset + "}";
    }
}
