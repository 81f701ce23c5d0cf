package dev.silo.interop.client;

import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * RPC hook for scenarios that look at the wire: passes every call on to the run's
 * {@link CodeRecorder} (so the codes summary stays complete) and hands the header fields of the
 * requests and responses of chosen codes to listeners. It also keeps the first few field sets of
 * each, printed to stderr as "wire" lines, so a run documents what the client and the broker put in
 * those headers.
 *
 * <p>Fields of a request are its ext fields (a request from the broker, as decoded) merged with the
 * fields of its custom header object (a request the client is about to send: the header is encoded
 * into ext fields only when written). Fields of a response are its ext fields plus {@code code} and
 * {@code remark}.
 */
final class WireLog implements RPCHook {

    /** One request or response of a watched code. */
    interface Listener {
        /** RESPONSE null: a request (client to broker, or broker to client). */
        void seen(int code, RemotingCommand request, RemotingCommand response, Map<String, String> fields);
    }

    private static final int SAMPLES = 3;

    private final CodeRecorder codes;
    private final Set<Integer> watched;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    /** "request 37" -> the first SAMPLES field sets seen. */
    private final Map<String, List<String>> samples = new ConcurrentHashMap<>();

    WireLog(CodeRecorder codes, Integer... watched) {
        this.codes = codes;
        this.watched = Set.of(watched);
    }

    void onSeen(Listener l) {
        listeners.add(l);
    }

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        codes.doBeforeRequest(remoteAddr, request);
        if (request != null && watched.contains(request.getCode())) {
            publish("request", request.getCode(), request, null, fields(request));
        }
    }

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        codes.doAfterResponse(remoteAddr, request, response);
        if (request != null && response != null && watched.contains(request.getCode())) {
            Map<String, String> f = new TreeMap<>();
            if (response.getExtFields() != null) {
                f.putAll(response.getExtFields());
            }
            f.put("code", Integer.toString(response.getCode()));
            f.put("remark", String.valueOf(response.getRemark()));
            publish("response", request.getCode(), request, response, f);
        }
    }

    private void publish(String kind, int code, RemotingCommand request, RemotingCommand response,
        Map<String, String> f) {
        for (Listener l : listeners) {
            l.seen(code, request, response, f);
        }
        sample(kind + " " + code, f.toString());
    }

    /** Keeps TEXT as one of the first samples under LABEL (for labels of the scenario's own). */
    void sample(String label, String text) {
        List<String> l = samples.computeIfAbsent(label, k -> Collections.synchronizedList(new ArrayList<>()));
        synchronized (l) {
            if (l.size() < SAMPLES) {
                l.add(text);
            }
        }
    }

    /** Prints the kept samples, one "wire LABEL: fields" line each. */
    void print(PrintStream out) {
        for (Map.Entry<String, List<String>> e : new TreeMap<>(samples).entrySet()) {
            synchronized (e.getValue()) {
                for (String s : e.getValue()) {
                    out.println("wire " + e.getKey() + ": " + s);
                }
            }
        }
    }

    /** The ext fields of CMD merged with the non-null fields of its custom header object. */
    static Map<String, String> fields(RemotingCommand cmd) {
        Map<String, String> f = new TreeMap<>();
        if (cmd.getExtFields() != null) {
            f.putAll(cmd.getExtFields());
        }
        Object h = cmd.readCustomHeader();
        for (Class<?> c = h == null ? null : h.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())) {
                    continue;
                }
                try {
                    field.setAccessible(true);
                    Object v = field.get(h);
                    if (v != null) {
                        f.putIfAbsent(field.getName(), String.valueOf(v));
                    }
                } catch (ReflectiveOperationException | RuntimeException e) {
                    // a field this JDK will not open: leave it out
                }
            }
        }
        return f;
    }
}
