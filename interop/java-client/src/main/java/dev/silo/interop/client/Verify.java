package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Comparisons shared by the scenarios. */
final class Verify {

    private Verify() {
    }

    /** What a comparison counted besides the differences. */
    static final class Stats {
        int delivered;
        int redelivered;
        final Map<String, Integer> perConsumer = new TreeMap<>();
        final Map<Integer, Integer> perQueue = new TreeMap<>();

        @Override
        public String toString() {
            return "delivered=" + delivered + " redelivered=" + redelivered + " perQueue=" + perQueue
                + (perConsumer.size() > 1 ? " perConsumer=" + perConsumer : "");
        }
    }

    /**
     * GOT must hold every EXPECTED message exactly once by body (a repeat is tolerated, and counted,
     * only if it says reconsumeTimes &gt; 0) and nothing else; each first delivery must carry the
     * sent topic, keys, tags, user property, client message id, and where the broker reported them
     * the broker message id, queue id and queue offset, plus a body CRC that matches the body. With
     * CHECK_ORDER, each consumer must have seen each queue's messages in increasing queue-offset
     * order.
     */
    static Stats exactlyOnce(Failures fail, String label, Collection<Sent> expected, List<Received.Got> got,
        boolean checkOrder) {
        Stats stats = new Stats();
        Map<String, Sent> byBody = new HashMap<>();
        for (Sent s : expected) {
            byBody.put(s.body, s);
        }
        Map<String, List<Received.Got>> deliveries = new LinkedHashMap<>();
        for (Received.Got g : got) {
            if (!byBody.containsKey(g.body)) {
                fail.add(label + ": unexpected message " + g);
                continue;
            }
            deliveries.computeIfAbsent(g.body, k -> new ArrayList<>()).add(g);
        }
        for (Sent s : expected) {
            List<Received.Got> d = deliveries.get(s.body);
            if (d == null) {
                fail.add(label + ": missing message " + s);
                continue;
            }
            stats.delivered++;
            Received.Got first = d.get(0);
            stats.perConsumer.merge(first.consumer, 1, Integer::sum);
            stats.perQueue.merge(first.queueId, 1, Integer::sum);
            for (Received.Got again : d.subList(1, d.size())) {
                if (again.reconsumeTimes > 0) {
                    stats.redelivered++;
                } else {
                    fail.add(label + ": delivered again with reconsumeTimes=0: " + again + " (first " + first + ")");
                }
            }
            String what = label + " " + s.body;
            fail.check(what + " topic", s.topic, first.topic);
            fail.check(what + " keys", s.key, first.keys);
            fail.check(what + " tags", s.tag, first.tags);
            fail.check(what + " user property " + Ctx.PROP, s.prop, first.prop);
            if (s.batch < 0) {
                // Batch elements: see AsyncOnewayBatch (Apache 5.3.3 gives them the batch's id).
                fail.check(what + " msgId (UNIQ_KEY)", s.msgId, first.msgId);
            }
            fail.check(what + " reconsumeTimes", 0, first.reconsumeTimes);
            if (s.offsetMsgId != null) {
                fail.check(what + " offsetMsgId", s.offsetMsgId, first.offsetMsgId);
            }
            if (s.queueId >= 0) {
                fail.check(what + " queue@offset", s.queueId + "@" + s.queueOffset,
                    first.queueId + "@" + first.queueOffset);
            }
            if (!first.crcOk) {
                fail.add(what + ": bodyCRC does not match the body");
            }
        }
        if (checkOrder) {
            checkQueueOrder(fail, label, got);
        }
        return stats;
    }

    /** Within each consumer and queue, first deliveries must come in increasing queue-offset order. */
    static void checkQueueOrder(Failures fail, String label, List<Received.Got> got) {
        Map<String, Received.Got> last = new HashMap<>();
        for (Received.Got g : got) {
            if (g.reconsumeTimes > 0) {
                continue;
            }
            String q = g.consumer + "/" + g.topic + "/" + g.queueId;
            Received.Got prev = last.put(q, g);
            if (prev != null && g.queueOffset <= prev.queueOffset) {
                fail.add(label + ": out of queue order on " + q + ": offset " + g.queueOffset + " after "
                    + prev.queueOffset);
            }
        }
    }

    /** Per queue, SENT's queue offsets must be consecutive (in send order); returns queue -&gt; count. */
    static Map<Integer, Integer> consecutiveOffsets(Failures fail, String label, Collection<Sent> sent) {
        Map<Integer, Long> next = new TreeMap<>();
        Map<Integer, Integer> n = new TreeMap<>();
        for (Sent s : sent) {
            if (s.queueId < 0) {
                continue;
            }
            Long want = next.get(s.queueId);
            if (want != null && want != s.queueOffset) {
                fail.add(label + ": queue " + s.queueId + " offsets not consecutive: expected " + want + ", actual "
                    + s.queueOffset + " for " + s.body);
            }
            next.put(s.queueId, s.queueOffset + 1);
            n.merge(s.queueId, 1, Integer::sum);
        }
        return n;
    }
}
