package dev.silo.interop.client;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Client-interop scenarios: the stock Apache RocketMQ Java client against a name server and broker.
 *
 * <pre>
 * Scenarios SCENARIO --namesrv HOST:PORT [--topic T] [--group G] [--count N] [--suffix S]
 *           [--timeout SECONDS] [--settle-ms MS] [--phase send|consume|fill|resume --state FILE] [--codes-file F]
 *           [--strict true] [--body-size BYTES] [--resume-count N]
 * </pre>
 *
 * Prints {@code PASS <scenario> <details>} and exits 0, or {@code FAIL <scenario> ...} with the first
 * differences (expected vs actual) and exits 1; exit 2 is a usage error. The request codes the
 * client sent and received, with the response codes, go to stderr (and are appended to
 * --codes-file). Client logging: warnings only, to stderr.
 */
public final class Scenarios {

    static final Map<String, String> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("produce-consume", "ProduceConsume");
        SCENARIOS.put("async-oneway-batch", "AsyncOnewayBatch");
        SCENARIOS.put("tag-filter", "TagFilter");
        SCENARIOS.put("retry", "Retry");
        SCENARIOS.put("rebalance", "Rebalance");
        SCENARIOS.put("orderly", "Orderly");
        SCENARIOS.put("broadcast", "Broadcast");
        SCENARIOS.put("lite-pull", "LitePull");
        SCENARIOS.put("dlq-lite-pull", "DlqLitePull");
        SCENARIOS.put("restart-check", "RestartCheck");
        SCENARIOS.put("admin", "Admin");
        SCENARIOS.put("disk-full", "DiskFull");
        SCENARIOS.put("transactions", "Transactions");
        SCENARIOS.put("request-reply", "RequestReply");
        SCENARIOS.put("sql-filter", "SqlFilter");
        SCENARIOS.put("timers", "Timers");
        SCENARIOS.put("pop-consume", "PopConsume");
        SCENARIOS.put("failover", "Failover");
        SCENARIOS.put("acl", "Acl");
    }

    private Scenarios() {
    }

    private static void usage(String why) {
        System.err.println("error: " + why);
        System.err.println("usage: Scenarios SCENARIO --namesrv HOST:PORT [--topic T] [--group G] [--count N]"
            + " [--suffix S] [--timeout SECONDS] [--settle-ms MS] [--phase send|consume|fill|resume --state FILE]"
            + " [--codes-file FILE] [--strict true] [--body-size BYTES] [--resume-count N] [--tls true]");
        System.err.println("scenarios: " + String.join(" ", SCENARIOS.keySet()));
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("no scenario");
        }
        String name = args[0];
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("bad argument " + args[i]);
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        if (!SCENARIOS.containsKey(name)) {
            usage("unknown scenario " + name);
        }
        // --tls true: every client connects over TLS, as `-Dtls.enable=true` makes the stock
        // clients do (read once, when the client's TLS settings class loads: so before any).
        if ("true".equals(opts.get("tls"))) {
            System.setProperty("tls.enable", "true");
        }
        if (opts.get("namesrv") == null) {
            usage("--namesrv is required");
        }
        Scenario scenario;
        try {
            scenario = (Scenario) Class.forName("dev.silo.interop.client." + SCENARIOS.get(name))
                .getDeclaredConstructor().newInstance();
        } catch (ClassNotFoundException e) {
            System.out.println("FAIL " + name + ": not available with this client version");
            System.exit(1);
            return;
        }

        // Logging, before any client class loads. 5.x clients: the shaded logback reads this file;
        // 4.x clients: route their logging to slf4j-simple (warnings, stderr).
        if (System.getProperty("rmq.logback.configurationFile") == null) {
            System.setProperty("rmq.logback.configurationFile", "client-logback.xml");
        }
        System.setProperty("rocketmq.client.logUseSlf4j", "true");
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        // Broadcasting consumers keep their offsets in local files: keep them out of the home directory.
        Path offsets = Files.createTempDirectory("silo-client-offsets");
        System.setProperty("rocketmq.client.localOffsetStoreDir", offsets.toString());

        Ctx ctx = new Ctx(name, opts);
        startWatchdog(name, 10 * ctx.timeoutMillis);
        String details = null;
        long start = System.nanoTime();
        try {
            details = scenario.run(ctx);
        } catch (Throwable e) {
            StringWriter sw = new StringWriter();
            e.printStackTrace(new PrintWriter(sw));
            String[] lines = sw.toString().trim().split("\n");
            StringBuilder text = new StringBuilder("exception: ");
            for (int i = 0; i < Math.min(lines.length, 12); i++) {
                text.append(i == 0 ? "" : "\n    ").append(lines[i]);
            }
            ctx.fail.add(text.toString());
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        ctx.closeAll();
        deleteTree(offsets);

        String codes = "codes " + name + (ctx.phase != null ? " phase=" + ctx.phase : "") + ":\n" + ctx.hook.summary();
        System.err.print(codes);
        if (opts.containsKey("codes-file")) {
            Files.writeString(Path.of(opts.get("codes-file")), codes, StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
        String label = name + (ctx.phase != null ? " phase=" + ctx.phase : "");
        if (ctx.fail.isEmpty()) {
            System.out.printf("PASS %s %s time=%.1fs%n", label, details, seconds);
            System.out.flush();
            System.exit(0);
        }
        System.out.printf("FAIL %s: %d difference(s) after %.1fs (suffix %s)%n", label, ctx.fail.size(), seconds,
            ctx.suffix);
        for (String f : ctx.fail.first(Failures.SHOWN)) {
            System.out.println("  " + f);
        }
        if (ctx.fail.size() > Failures.SHOWN) {
            System.out.println("  ... and " + (ctx.fail.size() - Failures.SHOWN) + " more");
        }
        System.out.flush();
        System.exit(1);
    }

    /**
     * Every wait in a scenario is bounded; this bounds the whole run as well (ten waits' worth), in
     * case a client call blocks where no bound applies.
     */
    private static void startWatchdog(String name, long millis) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                return;
            }
            System.out.printf("FAIL %s: still running after %d s (the run's overall bound); giving up%n", name,
                millis / 1000);
            System.out.flush();
            Runtime.getRuntime().halt(1);
        }, "silo-watchdog");
        t.setDaemon(true);
        t.start();
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
