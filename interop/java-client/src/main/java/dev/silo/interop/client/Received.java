package dev.silo.interop.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/** Every delivery a scenario's listeners saw, in arrival order. */
final class Received {

    /** One delivery, copied out of the MessageExt the listener got. */
    static final class Got {
        final long seq;
        final String consumer;
        final String topic;
        /** Topic of the queue it was pulled from (%RETRY%group for retries), when known. */
        final String sourceTopic;
        final int queueId;
        final long queueOffset;
        final String msgId;
        final String offsetMsgId;
        final String body;
        final String keys;
        final String tags;
        final String prop;
        final int reconsumeTimes;
        final boolean crcOk;
        final Map<String, String> properties;

        Got(long seq, String consumer, String sourceTopic, MessageExt m) {
            this.seq = seq;
            this.consumer = consumer;
            this.topic = m.getTopic();
            this.sourceTopic = sourceTopic;
            this.queueId = m.getQueueId();
            this.queueOffset = m.getQueueOffset();
            this.msgId = m.getMsgId();
            this.offsetMsgId = m instanceof MessageClientExt ? ((MessageClientExt) m).getOffsetMsgId() : m.getMsgId();
            this.body = m.getBody() == null ? null : new String(m.getBody(), StandardCharsets.UTF_8);
            this.keys = m.getKeys();
            this.tags = m.getTags();
            this.prop = m.getUserProperty(Ctx.PROP);
            this.reconsumeTimes = m.getReconsumeTimes();
            this.crcOk = m.getBody() != null && m.getBodyCRC() == UtilAll.crc32(m.getBody());
            this.properties = m.getProperties();
        }

        @Override
        public String toString() {
            return "{consumer=" + consumer + ", topic=" + topic + ", queue=" + queueId + "@" + queueOffset + ", body="
                + body + ", keys=" + keys + ", tags=" + tags + ", reconsumeTimes=" + reconsumeTimes + "}";
        }
    }

    private final AtomicLong seq = new AtomicLong();
    private final ConcurrentLinkedQueue<Got> all = new ConcurrentLinkedQueue<>();
    private final Set<String> bodies = ConcurrentHashMap.newKeySet();

    Got add(String consumer, String sourceTopic, MessageExt m) {
        Got g = new Got(seq.incrementAndGet(), consumer, sourceTopic, m);
        all.add(g);
        if (g.body != null) {
            bodies.add(g.body);
        }
        return g;
    }

    Got add(String consumer, MessageExt m) {
        return add(consumer, null, m);
    }

    /** Number of distinct bodies received so far. */
    int distinct() {
        return bodies.size();
    }

    int total() {
        return all.size();
    }

    boolean has(String body) {
        return bodies.contains(body);
    }

    /** How many times BODY was received. */
    int count(String body) {
        int n = 0;
        for (Got g : all) {
            if (body.equals(g.body)) {
                n++;
            }
        }
        return n;
    }

    List<Got> list() {
        return new ArrayList<>(all);
    }
}
