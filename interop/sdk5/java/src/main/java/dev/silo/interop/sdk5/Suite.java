package dev.silo.interop.sdk5;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;

/**
 * The 5.x SDK interop suite for the Java SDK (see interop/sdk5/README.md).
 *
 * <pre>
 * Suite --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT] [--only "SCENARIO ..."] [--timeout SECONDS] [--serial]
 * </pre>
 *
 * stdout: per scenario {@code PASS java <scenario> <details>} or {@code FAIL java <scenario>: <what
 * differed>}, in scenario order; exit 0 iff none failed, 1 otherwise, 2 on a usage error. Every
 * difference is also listed on stderr. The scenarios use disjoint topics and groups, so they run at
 * the same time unless --serial is given: against Apache's broker and proxy, push alone takes about
 * 65 s (each redelivery waits for the proxy's 20 s long poll) and redeliver about 40 s.
 */
public final class Suite {

    static final Map<String, Supplier<Scenario>> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("normal", Normal::new);
        SCENARIOS.put("fifo", Fifo::new);
        SCENARIOS.put("delay", Delay::new);
        SCENARIOS.put("transaction", Transaction::new);
        SCENARIOS.put("redeliver", Redeliver::new);
        SCENARIOS.put("push", Push::new);
    }

    /** At most this many differences go on the FAIL line (all of them go to stderr). */
    private static final int SHOWN = 5;

    private Suite() {
    }

    private static void usage(String why) {
        System.err.println("error: " + why);
        System.err.println("usage: Suite --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT] [--only \"SCENARIO ...\"]"
            + " [--timeout SECONDS] [--serial]");
        System.err.println("scenarios: " + String.join(" ", SCENARIOS.keySet()));
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        boolean serial = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--serial")) {
                serial = true;
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                opts.put(args[i].substring(2), args[++i]);
            } else {
                usage("bad argument " + args[i]);
            }
        }
        for (String k : opts.keySet()) {
            if (!List.of("endpoint", "suffix", "namesrv", "only", "timeout").contains(k)) {
                usage("unknown option --" + k);
            }
        }
        String endpoint = opts.get("endpoint");
        String suffix = opts.get("suffix");
        if (endpoint == null || suffix == null) {
            usage("--endpoint and --suffix are required");
        }
        long timeoutMillis;
        try {
            timeoutMillis = Long.parseLong(opts.getOrDefault("timeout", "60")) * 1000;
        } catch (NumberFormatException e) {
            usage("--timeout needs a number of seconds");
            return;
        }
        List<String> selected = new ArrayList<>();
        if (opts.containsKey("only")) {
            for (String s : opts.get("only").trim().split("[\\s,]+")) {
                if (!SCENARIOS.containsKey(s)) {
                    usage("unknown scenario " + s);
                }
                if (!selected.contains(s)) {
                    selected.add(s);
                }
            }
        } else {
            selected.addAll(SCENARIOS.keySet());
        }

        // A client call that blocks where no wait bound applies must not hang the run: a scenario
        // has at most three waits of --timeout in a row, so four are the whole run's bound
        // (scenarios run at the same time; with --serial, every scenario gets that much).
        long overallMillis = (serial ? selected.size() : 1) * 4 * timeoutMillis;
        Map<String, String> results = new ConcurrentHashMap<>();
        Map<String, Boolean> passed = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(selected.size());
        List<Thread> threads = new ArrayList<>();
        for (String name : selected) {
            Thread t = new Thread(() -> {
                try {
                    runOne(name, endpoint, suffix, timeoutMillis, results, passed);
                } finally {
                    done.countDown();
                }
            }, "scenario-" + name);
            t.setDaemon(true);
            threads.add(t);
        }
        long deadline = System.nanoTime() + overallMillis * 1_000_000L;
        if (serial) {
            for (Thread t : threads) {
                t.start();
                t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
                if (t.isAlive()) {
                    break;
                }
            }
        } else {
            threads.forEach(Thread::start);
            done.await(overallMillis, java.util.concurrent.TimeUnit.MILLISECONDS);
        }

        int failed = 0;
        for (String name : selected) {
            String line = results.get(name);
            if (line == null) {
                line = "FAIL " + Ctx.LANG + " " + name + ": did not finish within the run's bound of "
                    + overallMillis / 1000 + " s";
                passed.put(name, false);
            }
            System.out.println(line);
            if (!passed.getOrDefault(name, false)) {
                failed++;
            }
        }
        System.out.flush();
        // Clients left behind by an unfinished scenario must not keep the JVM alive.
        Runtime.getRuntime().halt(failed == 0 ? 0 : 1);
    }

    private static void runOne(String name, String endpoint, String suffix, long timeoutMillis,
        Map<String, String> results, Map<String, Boolean> passed) {
        Ctx ctx = new Ctx(name, endpoint, suffix, timeoutMillis);
        String details = null;
        try {
            details = SCENARIOS.get(name).get().run(ctx);
        } catch (Throwable e) {
            StringWriter sw = new StringWriter();
            e.printStackTrace(new PrintWriter(sw));
            System.err.println(name + ": " + sw);
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            // The SDK wraps start-up failures; the root cause says what the server answered.
            ctx.fail("exception: " + e + (root == e ? "" : ", caused by " + root));
        } finally {
            try {
                ctx.closeAll();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        double seconds = ctx.elapsedMillis() / 1000.0;
        List<String> diffs = ctx.failures();
        if (diffs.isEmpty()) {
            results.put(name, String.format("PASS %s %s %s time=%.1fs", Ctx.LANG, name, details, seconds));
            passed.put(name, true);
            return;
        }
        for (String d : diffs) {
            System.err.println("FAIL " + Ctx.LANG + " " + name + ": " + d);
        }
        String shown = String.join("; ", diffs.subList(0, Math.min(SHOWN, diffs.size())));
        String more = diffs.size() > SHOWN ? "; ... " + (diffs.size() - SHOWN) + " more on stderr" : "";
        results.put(name, String.format("FAIL %s %s: %s%s (%d difference(s), %.1fs, suffix %s)", Ctx.LANG, name,
            shown.replace('\n', ' '), more, diffs.size(), seconds, suffix));
        passed.put(name, false);
    }
}
