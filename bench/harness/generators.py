"""Load generators: Silo's `silo bench` and Apache RocketMQ's own benchmark tools.

Each generator's run() drives one workload against a started broker and returns a dict in the
`silo bench` report shape (workload, params, msgs, errors, elapsed_secs, msgs_per_sec, mb_per_sec,
latency_us) plus "window": the (start, end) monotonic times the figures cover, so the harness
can attribute broker CPU time to exactly that interval, and "notes".

A run with an offered rate (bench/compare --rates) is open loop: sends fall due at fixed intervals
and are timed from then. Only `silo bench` has that (`--rate`); Apache's benchmark Producer and
BatchProducer have no rate option (their threads send as fast as the broker answers), so rated
rows use `silo bench` against every broker.
"""

import json
import os
import re
import subprocess
import time

from . import procs, remoting
from .procs import log
from .workloads import FILTER_CLASSES, FILTER_EXPRESSIONS

JAVA = "java"
SILO = "silo"

NO_LATENCY = {"p50": None, "p90": None, "p99": None, "p999": None, "max": None}


def fill_timeout(n):
    """Seconds allowed for sending an n-message backlog: generous, some brokers store only about
    1,000 synchronous sends a second here."""
    return 300 + n / 500


def mb_per_sec(msgs_per_sec, size):
    return round(msgs_per_sec * size / 1e6, 3) if msgs_per_sec is not None else None


def offsets_sum(broker, topic, queues):
    return sum(remoting.max_offsets(broker.broker, topic, queues))


class Generator:
    name = None
    supports_rate = False  # can run a workload at a fixed offered rate

    def __init__(self, ctx):
        self.ctx = ctx

    def supports(self, wl):
        return True


def broker_pids(broker):
    """--broker-pid for every process of the broker (name server included), as the harness sums them."""
    out = []
    for pid in broker.pids.values():
        out += ["--broker-pid", str(pid)]
    return out


# --- silo bench ----------------------------------------------------------------------------------

class SiloBench(Generator):
    """`silo bench produce|consume|e2e`, which measures and reports by itself."""

    name = SILO
    supports_rate = True

    def _run(self, argv, out_dir, tag, timeout):
        report = out_dir / f"silo-bench-{tag}.json"
        report.unlink(missing_ok=True)
        argv = [str(self.ctx.silo_bin), "bench"] + argv + ["--report", str(report)]
        with open(out_dir / "generator.log", "a") as f:
            f.write("$ " + " ".join(argv) + "\n")
            f.flush()
            start = time.monotonic()
            r = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                               preexec_fn=procs.placed("generator"))
            end = time.monotonic()
        if r.returncode != 0 or not report.exists():
            raise RuntimeError(f"silo bench {argv[2]} failed (exit {r.returncode}); see {out_dir / 'generator.log'}")
        rep = json.loads(report.read_text())
        # The report's figures cover its last elapsed_secs (or window_secs, when it says which
        # stretch it measured); the tool exits right after measuring.
        elapsed = rep.get("window_secs") or rep.get("elapsed_secs") or (end - start)
        rep["window"] = (max(start, end - elapsed), end)
        rep["generator_report"] = str(report)
        # With --broker-pid the tool reports the broker's cost as "broker"; the result keeps the
        # broker's key under that name, so the tool's own figures move to "bench_broker".
        if "broker" in rep:
            rep["bench_broker"] = rep.pop("broker")
        return rep

    def run(self, wl, broker, topic, out_dir, rate=None):
        c = self.ctx
        common = ["--namesrv", broker.namesrv, "--topic", topic]
        # Open loop at a fixed offered rate; for e2e also the producers and sends in flight that
        # bound it (closed-loop e2e keeps silo bench's defaults, as before).
        # Rated runs warm up at the offered rate for --warmup seconds first (left out of the
        # latencies), so that a JVM broker is measured warm, as the java generator's runs are.
        rated = [] if rate is None else ["--rate", str(rate), "--warmup", str(c.warmup)]
        duration = c.duration if rate is None else c.duration + c.warmup
        if wl.kind == "produce":
            argv = ["produce"] + common + [
                "--size", str(wl.size), "--duration", str(duration), "--producers", str(wl.producers),
                "--mode", wl.mode, "--inflight", str(c.inflight), "--batch", str(wl.batch),
                "--queues", str(wl.queue_count(c))] + rated
            rep = self._run(argv, out_dir, "produce", c.duration + 300)
        elif wl.kind == "e2e":
            argv = ["e2e"] + common + ["--size", str(wl.size), "--duration", str(duration)]
            if rate is not None:
                argv += ["--producers", str(wl.producers), "--inflight", str(c.inflight)] + rated
            rep = self._run(argv, out_dir, "e2e", c.duration + 300)
        elif wl.kind in ("consume", "pop"):
            fill = ["produce"] + common + [
                "--size", str(wl.size), "--count", str(c.backlog), "--producers", "4", "--mode", "pipelined",
                "--inflight", str(c.inflight), "--batch", "1", "--queues", str(wl.queue_count(c))]
            if wl.filter:
                fill += ["--classes", str(FILTER_CLASSES)]
            log(f"  filling a backlog of {c.backlog} messages")
            filled = self._run(fill, out_dir, "fill", fill_timeout(c.backlog))
            stored = offsets_sum(broker, topic, wl.queue_count(c))
            if stored == 0:
                raise RuntimeError("the backlog fill stored no message")
            if wl.kind == "pop":
                argv = ["pop"] + common + ["--group", f"{topic}-g", "--count", str(stored)] + broker_pids(broker)
                rep = self._run(argv, out_dir, "pop", 300 + stored / 500)
                rep.setdefault("params", {})["backlog"] = stored
                rep["fill_msgs_per_sec"] = filled.get("msgs_per_sec")
                rep.setdefault("notes", [])
                return rep
            argv = ["consume"] + common + ["--group", f"{topic}-g"]
            if wl.filter:
                # The whole backlog is scanned; how many match is what the run finds out.
                argv += list(FILTER_EXPRESSIONS[wl.filter]) + broker_pids(broker)
            else:
                argv += ["--count", str(stored)]
            rep = self._run(argv, out_dir, "consume", 120 + stored / 1000)
            rep.setdefault("params", {})["backlog"] = stored
            rep["fill_msgs_per_sec"] = filled.get("msgs_per_sec")
        elif wl.kind == "timers":
            argv = ["timers"] + common + [
                "--count", str(c.timers), "--spread", str(c.timer_spread), "--size", str(wl.size),
                "--producers", str(wl.producers), "--inflight", str(c.inflight), "--queues", str(wl.queue_count(c)),
                "--group", f"{topic}-g"] + broker_pids(broker)
            log(f"  {c.timers} timers due over {c.timer_spread:g} s")
            rep = self._run(argv, out_dir, "timers", fill_timeout(c.timers) + c.timer_spread + 120)
        elif wl.kind == "timers-pending":
            argv = ["timers", "--pending"] + common + [
                "--count", str(c.pending_timers), "--idle", str(c.idle_window), "--baseline", str(c.idle_window),
                "--size", str(wl.size),
                "--producers", str(wl.producers), "--inflight", str(c.inflight), "--queues", str(wl.queue_count(c))
            ] + broker_pids(broker)
            log(f"  {c.idle_window:g} s idle, {c.pending_timers} timers due in an hour, {c.idle_window:g} s idle")
            rep = self._run(argv, out_dir, "timers-pending", fill_timeout(c.pending_timers) + 2 * c.idle_window + 120)
        else:
            raise ValueError(wl.kind)
        rep.setdefault("notes", [])
        return rep


# --- Apache RocketMQ's benchmark tools -------------------------------------------------------------

PRODUCER = "org.apache.rocketmq.example.benchmark.Producer"
BATCH_PRODUCER = "org.apache.rocketmq.example.benchmark.BatchProducer"
CONSUMER = "org.apache.rocketmq.example.benchmark.Consumer"

# Their periodic report lines (printed every -ri ms once 10 one-second snapshots exist; each
# figure covers the last 9 s, RT in whole milliseconds).
_NUM = r"(\d+(?:\.\d+)?|NaN|Infinity)"
RE_PRODUCER = re.compile(r"Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*" + _NUM
                         + r" \| Send Failed: (\d+) \| Response Failed: (\d+)")
RE_BATCH = re.compile(r"Send TPS: (\d+) \| Send MPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*" + _NUM
                      + r" \| Average Message RT\(ms\):\s*" + _NUM
                      + r" \| Send Failed: (\d+) \| Send Message Failed: (\d+)")
RE_CONSUMER = re.compile(r"Consume TPS: (\d+) \| AVG\(B2C\) RT\(ms\):\s*" + _NUM + r" \| AVG\(S2C\) RT\(ms\):\s*"
                         + _NUM + r" \| MAX\(B2C\) RT\(ms\): (\d+) \| MAX\(S2C\) RT\(ms\): (\d+)"
                         + r" \| Consume Fail: (\d+)")
WINDOW = 9.0  # seconds covered by one report line


def _f(x):
    try:
        v = float(x)
    except ValueError:
        return None
    return v if v == v and v != float("inf") else None


def parse_producer(line):
    m = RE_PRODUCER.search(line)
    if m:
        return {"tps": int(m[1]), "max_ms": int(m[2]), "avg_ms": _f(m[3]), "errors": int(m[4]) + int(m[5])}
    m = RE_BATCH.search(line)
    if m:
        return {"tps": int(m[2]), "requests_per_sec": int(m[1]), "max_ms": int(m[3]), "avg_ms": _f(m[4]),
                "errors": int(m[7])}
    return None


def parse_consumer(line):
    m = RE_CONSUMER.search(line)
    if m:
        return {"tps": int(m[1]), "fail": int(m[6])}
    return None


class JavaTools(Generator):
    """org.apache.rocketmq.example.benchmark.{Producer,BatchProducer,Consumer}. They run until
    stopped and print only windowed TPS / average and max RT, so the harness measures throughput
    itself, from the broker's queue offsets over a timed window, and takes latency (average and max,
    millisecond resolution; no percentiles) from the tools' report lines."""

    name = JAVA

    def supports(self, wl):
        # Timers and filtered catch-ups have no counterpart among the Java tools here.
        return wl.kind in ("produce", "consume") and not wl.filter

    def _start(self, main, args, out_dir):
        argv = ["java", "-server", "-Xms1g", "-Xmx1g", "-XX:+UseG1GC",
                # The client writes its logs under ~/logs; keep them in the run directory.
                f"-Duser.home={out_dir / 'client'}",
                "-cp", self.ctx.java_classpath(), main] + args + ["-ri", "1000"]
        with open(out_dir / "generator.log", "a") as f:
            f.write("$ java ... " + " ".join([main] + args + ["-ri", "1000"]) + "\n")
        return procs.LineReader(argv, out_dir / "generator.log")

    def produce_args(self, wl, topic, namesrv):
        args = ["-n", namesrv, "-t", topic, "-s", str(wl.size)]
        if wl.batch > 1:
            return BATCH_PRODUCER, args + ["-w", str(wl.producers), "-b", str(wl.batch)]
        if wl.mode == "pipelined":
            if self.ctx.java_async:
                # The tool's async mode: one sending thread and no bound on sends in flight but the
                # client's 10,000-deep queue; a saturated broker then answers after the client's
                # 3 s timeout and every send counts as failed although it was stored.
                return PRODUCER, args + ["-y", "true"]
            # K producers x M sends in flight, as with silo bench: K x M synchronous senders
            # sharing the tool's one client connection.
            return PRODUCER, args + ["-w", str(wl.producers * self.ctx.inflight)]
        return PRODUCER, args + ["-w", str(wl.producers)]

    def run(self, wl, broker, topic, out_dir, rate=None):
        if rate is not None:
            raise ValueError("Apache's benchmark tools have no offered-rate option")
        if wl.kind == "produce":
            return self.run_produce(wl, broker, topic, out_dir)
        return self.run_consume(wl, broker, topic, out_dir)

    def run_produce(self, wl, broker, topic, out_dir):
        c = self.ctx
        main, args = self.produce_args(wl, topic, broker.namesrv)
        base = offsets_sum(broker, topic, wl.queue_count(c))
        tool = self._start(main, args, out_dir)
        notes = []
        try:
            deadline = time.monotonic() + 120
            while offsets_sum(broker, topic, wl.queue_count(c)) <= base:
                if tool.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the Java producer never stored a message; see {out_dir / 'generator.log'}")
                time.sleep(0.2)
            time.sleep(c.warmup)
            t0 = time.monotonic()
            o0 = offsets_sum(broker, topic, wl.queue_count(c))
            time.sleep(c.duration)
            o1 = offsets_sum(broker, topic, wl.queue_count(c))
            t1 = time.monotonic()
            if tool.proc.poll() is not None:
                raise RuntimeError(f"the Java producer exited early; see {out_dir / 'generator.log'}")
            if not any(parse_producer(line) for _, line in tool.snapshot()):
                # Its first report comes 10 s after start; short runs wait for it (latency only).
                tool.wait_for(lambda line: parse_producer(line) is not None, time.monotonic() + 15)
        finally:
            tool.stop()
        reports = [(t, r) for t, r in ((t, parse_producer(line)) for t, line in tool.snapshot()) if r]
        inside = [r for t, r in reports if t0 + WINDOW <= t <= t1 + 0.5]
        if not inside and reports:
            inside = [r for t, r in reports if t <= t1 + 0.5][-1:] or [reports[0][1]]
            notes.append("latency from a report window that includes warm-up (run shorter than 10 s)")
        lat = dict(NO_LATENCY)
        errors = None
        if inside:
            avgs = [r["avg_ms"] for r in inside if r["avg_ms"] is not None]
            lat["avg"] = round(1000 * sum(avgs) / len(avgs), 1) if avgs else None
            lat["max"] = 1000 * inside[-1]["max_ms"]
            errors = inside[-1]["errors"]
            notes.append("latency: average and maximum send RT reported by the tool (ms resolution; its maximum "
                         "counts from the tool's start, warm-up included)")
        if wl.batch > 1:
            notes.append(f"latency is per batch request ({wl.batch} messages)")
        msgs = o1 - o0
        rate = msgs / (t1 - t0)
        return {
            "workload": wl.name,
            "params": {"tool": main.rsplit(".", 1)[1], "args": args + ["-ri", "1000"], "size": wl.size,
                       "duration_secs": c.duration, "warmup_secs": c.warmup, "queues": wl.queue_count(c)},
            "msgs": msgs,
            "errors": errors,
            "elapsed_secs": round(t1 - t0, 3),
            "msgs_per_sec": round(rate, 1),
            "mb_per_sec": mb_per_sec(rate, wl.size),
            "latency_us": lat,
            "tool_msgs_per_sec": round(sum(r["tps"] for r in inside) / len(inside), 1) if inside else None,
            "window": (t0, t1),
            "notes": ["msgs: messages the broker stored during the timed window (sum of its queues' max "
                      "offsets)"] + notes,
        }

    def run_consume(self, wl, broker, topic, out_dir):
        c = self.ctx
        notes = []
        # 1. The backlog, sent synchronously by 8 threads (-q: exactly that many sends).
        log(f"  filling a backlog of {c.backlog} messages")
        args = ["-n", broker.namesrv, "-t", topic, "-s", str(wl.size), "-w", "8", "-q", str(c.backlog)]
        fill = self._start(PRODUCER, args, out_dir)
        fill_start = time.monotonic()
        try:
            deadline = fill_start + fill_timeout(c.backlog)
            while True:
                stored = offsets_sum(broker, topic, wl.queue_count(c))
                if stored >= c.backlog or fill.proc.poll() is not None:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"backlog not filled in time ({stored} of {c.backlog})")
                time.sleep(0.5)
            fill_secs = time.monotonic() - fill_start
        finally:
            fill.stop()
        stored = offsets_sum(broker, topic, wl.queue_count(c))
        if stored < c.backlog:
            notes.append(f"backlog: only {stored} of {c.backlog} sends were stored")
        # 2. A new consumer group reads it from the first offset (all three brokers start a new
        # group at offset 0 on a queue whose first message is still there).
        group = f"{topic}-g"
        tool = self._start(CONSUMER, ["-n", broker.namesrv, "-t", topic, "-g", group], out_dir)
        try:
            started = tool.wait_for(lambda line: "Consumer Started" in line, time.monotonic() + 120)
            if not started:
                raise RuntimeError(f"the Java consumer did not start; see {out_dir / 'generator.log'}")
            t0 = started[0]
            deadline = t0 + 120 + stored / 2000
            done_at = None
            while time.monotonic() < deadline:
                committed = remoting.consumer_offsets(broker.broker, group, topic, wl.queue_count(c))
                if all(x is not None for x in committed) and sum(committed) >= stored:
                    done_at = time.monotonic()
                    break
                if tool.proc.poll() is not None:
                    raise RuntimeError(f"the Java consumer exited; see {out_dir / 'generator.log'}")
                time.sleep(0.5)
            if done_at is None:
                raise RuntimeError(f"the consumer group did not commit the whole backlog in time "
                                   f"({sum(x or 0 for x in committed)} of {stored})")
            # The report that shows the end comes up to 10 s after the last message.
            until = time.monotonic() + WINDOW + 3
            drained = self._drained(tool)
            while drained is None and time.monotonic() < until and tool.proc.poll() is None:
                time.sleep(0.2)
                drained = self._drained(tool)
        finally:
            tool.stop()
        reports = [parse_consumer(line) for _, line in tool.snapshot()]
        reports = [r for r in reports if r]
        if not any(r["tps"] > 0 for r in reports):
            raise RuntimeError("the consumer's reports never showed a message: it did not read the backlog "
                               "(did the broker start the new group at the last offset?)")
        if drained is not None:
            # The first report with TPS 0 after messages: nothing arrived in its 9 s window, so the
            # last message came in the second before that window (±0.5 s).
            t1 = drained - WINDOW - 0.5
            notes.append("end time: from the tool's per-second reports (±0.5 s)")
        else:
            t1 = done_at
            notes.append("end time: when the broker had the whole backlog committed (offsets are committed "
                         "every 5 s, so up to 5 s late)")
        elapsed = t1 - t0
        rate = stored / elapsed
        first = self._first_consumed(tool)
        if first is not None:
            drain = t1 - first
            notes.append(f"the first messages arrived {first - t0:.1f} s after the consumer started; "
                         f"drain_msgs_per_sec counts from then")
        return {
            "workload": wl.name,
            "params": {"tool": "Consumer", "args": ["-n", broker.namesrv, "-t", topic, "-g", group, "-ri", "1000"],
                       "size": wl.size, "backlog": stored, "queues": wl.queue_count(c)},
            "msgs": stored,
            "errors": reports[-1]["fail"],
            "elapsed_secs": round(elapsed, 3),
            "msgs_per_sec": round(rate, 1),
            "mb_per_sec": mb_per_sec(rate, wl.size),
            "latency_us": dict(NO_LATENCY),
            "fill_msgs_per_sec": round(stored / fill_secs, 1),
            "start_delay_secs": round(first - t0, 1) if first is not None else None,
            "drain_msgs_per_sec": round(stored / drain, 1) if first is not None and drain > 0 else None,
            "window": (t0, t1),
            "notes": ["elapsed: from the consumer's start (route lookup and rebalance included) to its last "
                      "message"] + notes,
        }

    @staticmethod
    def _first_consumed(tool):
        """When the first message was consumed (±0.5 s), if a report with TPS 0 precedes the first
        non-zero one; None if the very first report already counted messages."""
        zero_before = False
        for t, line in tool.snapshot():
            r = parse_consumer(line)
            if not r:
                continue
            if r["tps"] > 0:
                return t - 0.5 if zero_before else None
            zero_before = True
        return None

    @staticmethod
    def _drained(tool):
        seen = False
        for t, line in tool.snapshot():
            r = parse_consumer(line)
            if not r:
                continue
            if r["tps"] > 0:
                seen = True
            elif seen:
                return t
        return None


CLASSES = {SILO: SiloBench, JAVA: JavaTools}


def java_classpath(bench_dir):
    """Resolves (once per run) the benchmark tools' classpath with Maven; returns it."""
    pom = bench_dir / "java" / "pom.xml"
    out = bench_dir / "java" / "target" / "classpath.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mvn", "-q", "-B", "-f", str(pom), "dependency:build-classpath",
                    f"-Dmdep.outputFile={out}", "-Dmdep.includeScope=runtime"], check=True,
                   stdout=subprocess.DEVNULL if not os.environ.get("BENCH_VERBOSE") else None)
    return out.read_text().strip()
