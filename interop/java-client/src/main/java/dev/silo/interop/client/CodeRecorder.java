package dev.silo.interop.client;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * RPC hook shared by every client of a run: records which request codes the stock client sent (to
 * the name server or to a broker) or received (broker to client), with the response codes it got,
 * and lets scenarios look inside pull responses.
 */
final class CodeRecorder implements RPCHook {

    /** Codes the broker sends to a client (handled by the client's ClientRemotingProcessor). */
    private static final Set<Integer> BROKER_TO_CLIENT = Set.of(39, 40, 220, 300, 307, 309, 326);
    private static final int PULL_MESSAGE = 11;
    private static final int LITE_PULL_MESSAGE = 361;

    private static final Map<Integer, String> NAMES = requestCodeNames();

    private final String namesrv;
    /** "target code" -> response codes seen ("-" for none: one-way). */
    private final Map<String, Set<String>> seen = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    private final Set<String> requestShapes = ConcurrentHashMap.newKeySet();
    private final List<Consumer<MessageExt>> pulledListeners = new CopyOnWriteArrayList<>();
    private final List<BiConsumer<RemotingCommand, RemotingCommand>> pullResponseListeners = new CopyOnWriteArrayList<>();
    /** Pulls sent and not answered yet (held by the broker, or given up): "group topic queueId offset" -> count. */
    private final Map<String, AtomicInteger> pullsUnanswered = new ConcurrentHashMap<>();

    CodeRecorder(String namesrv) {
        this.namesrv = namesrv;
    }

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        if (request == null) {
            return;
        }
        String key = key(remoteAddr, request);
        counts.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
        seen.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet());
        String pull = pullKey(request);
        if (pull != null) {
            pullsUnanswered.computeIfAbsent(pull, k -> new AtomicInteger()).incrementAndGet();
        }
        if (!BROKER_TO_CLIENT.contains(request.getCode())) {
            requestShapes.add("language=" + request.getLanguage() + " version=" + request.getVersion()
                + " serialize=" + request.getSerializeTypeCurrentRPC());
        }
    }

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        if (request == null || response == null || BROKER_TO_CLIENT.contains(request.getCode())) {
            return;
        }
        seen.computeIfAbsent(key(remoteAddr, request), k -> ConcurrentHashMap.newKeySet())
            .add(Integer.toString(response.getCode()));
        String pull = pullKey(request);
        if (pull != null) {
            pullsUnanswered.computeIfAbsent(pull, k -> new AtomicInteger()).decrementAndGet();
        }
        int code = request.getCode();
        if (pull != null) {
            for (BiConsumer<RemotingCommand, RemotingCommand> l : pullResponseListeners) {
                l.accept(request, response);
            }
        }
        if ((code == PULL_MESSAGE || code == LITE_PULL_MESSAGE) && response.getCode() == 0
            && response.getBody() != null && !pulledListeners.isEmpty()) {
            List<MessageExt> msgs = MessageDecoder.decodes(ByteBuffer.wrap(response.getBody()), true);
            for (MessageExt m : msgs) {
                for (Consumer<MessageExt> l : pulledListeners) {
                    l.accept(m);
                }
            }
        }
    }

    /** Calls the listener for every message in every successful pull response from now on. */
    void onPulled(Consumer<MessageExt> listener) {
        pulledListeners.add(listener);
    }

    /**
     * Calls the listener with every pull request (PULL_MESSAGE or LITE_PULL_MESSAGE) and its response,
     * whatever the response code, from now on. The response body is the broker's, undecoded.
     */
    void onPullResponse(BiConsumer<RemotingCommand, RemotingCommand> listener) {
        pullResponseListeners.add(listener);
    }

    /**
     * Whether a pull (PULL_MESSAGE or LITE_PULL_MESSAGE) by GROUP of TOPIC's queue QUEUE_ID at OFFSET
     * was sent and has had no answer yet: at the end of a queue, one the broker holds (long polling).
     */
    boolean pullUnanswered(String group, String topic, int queueId, long offset) {
        AtomicInteger n = pullsUnanswered.get(group + " " + topic + " " + queueId + " " + offset);
        return n != null && n.get() > 0;
    }

    /** The unanswered pulls of GROUP, for failure messages. */
    String pullsUnanswered(String group) {
        Set<String> out = new TreeSet<>();
        pullsUnanswered.forEach((k, n) -> {
            if (k.startsWith(group + " ") && n.get() > 0) {
                out.add(k.substring(group.length() + 1));
            }
        });
        return out.toString();
    }

    /** "group topic queueId offset" of a pull request, or null for any other request. */
    private static String pullKey(RemotingCommand request) {
        if (request.getCode() != PULL_MESSAGE && request.getCode() != LITE_PULL_MESSAGE) {
            return null;
        }
        Object h = request.readCustomHeader();
        if (h == null) {
            return null;
        }
        try {
            // PullMessageRequestHeader, whose package differs between the 4.x and 5.x clients.
            StringBuilder sb = new StringBuilder();
            for (String getter : new String[] {"getConsumerGroup", "getTopic", "getQueueId", "getQueueOffset"}) {
                sb.append(sb.length() == 0 ? "" : " ").append(h.getClass().getMethod(getter).invoke(h));
            }
            return sb.toString();
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    long count(String target, int code) {
        AtomicLong n = counts.get(target + " " + code);
        return n == null ? 0 : n.get();
    }

    private String key(String remoteAddr, RemotingCommand request) {
        String target;
        if (BROKER_TO_CLIENT.contains(request.getCode())) {
            target = "broker->client";
        } else if (remoteAddr == null || remoteAddr.replace("/", "").equals(namesrv)) {
            // 4.x clients pass a null address for requests to "the" name server.
            target = "namesrv";
        } else {
            target = "broker";
        }
        return target + " " + request.getCode();
    }

    /**
     * One line per target: code NAME[response codes] xCOUNT, e.g.
     * {@code broker: 310 SEND_MESSAGE_V2[0] x200}; "[-]" means no response was seen.
     */
    String summary() {
        Map<String, Map<Integer, String>> byTarget = new TreeMap<>();
        for (Map.Entry<String, Set<String>> e : seen.entrySet()) {
            String[] parts = e.getKey().split(" ");
            int code = Integer.parseInt(parts[1]);
            String name = NAMES.getOrDefault(code, "?");
            // No response seen: a one-way request (the client marks it one-way only after this hook
            // ran), or a request the broker sent to the client.
            String responses = e.getValue().isEmpty() ? "-" : String.join(",", new TreeSet<>(e.getValue()));
            long n = counts.getOrDefault(e.getKey(), new AtomicLong()).get();
            byTarget.computeIfAbsent(parts[0], k -> new TreeMap<>())
                .put(code, code + " " + name + "[" + responses + "] x" + n);
        }
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, Map<Integer, String>> t : byTarget.entrySet()) {
            sb.append("  ").append(t.getKey()).append(": ")
                .append(String.join("; ", t.getValue().values())).append('\n');
        }
        sb.append("  requests: ").append(String.join(" | ", new TreeSet<>(requestShapes))).append('\n');
        return sb.toString();
    }

    /** RequestCode constant names, from whichever package this client version keeps them in. */
    private static Map<Integer, String> requestCodeNames() {
        Map<Integer, String> names = new HashMap<>();
        for (String cls : new String[] {"org.apache.rocketmq.remoting.protocol.RequestCode",
            "org.apache.rocketmq.common.protocol.RequestCode"}) {
            try {
                for (Field f : Class.forName(cls).getFields()) {
                    if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
                        names.putIfAbsent(f.getInt(null), f.getName());
                    }
                }
            } catch (ReflectiveOperationException e) {
                // not in this client version
            }
        }
        return names;
    }
}
