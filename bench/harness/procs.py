"""Processes, ports and resource measurements (all from /proc), and a description of the machine."""

import os
import platform
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[compare {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- ports -------------------------------------------------------------------------------------

def port_free(port):
    """True if nothing listens on 127.0.0.1:port (checked by binding it briefly, loopback only)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def pick_ports():
    """A name server port N and a broker port B such that N, B, B-2 (the Java broker's "fast"
    port) and B+1 (its HA port) are all free on 127.0.0.1."""
    for _ in range(500):
        n = random.randint(20000, 40000)
        b = n + random.randint(10, 500)
        if all(port_free(p) for p in (n, b, b - 2, b + 1)):
            return n, b
    raise RuntimeError("no free loopback ports found")


def wait_port(port, deadline, proc=None):
    """Waits until 127.0.0.1:port accepts connections; False on timeout or if proc exited."""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


# --- processes ---------------------------------------------------------------------------------

# --pin: the CPU the brokers (and everything they start) run on, and the CPU of the load
# generators; None when not pinned. Set once by bench/compare before anything starts.
PINS = {"broker": None, "generator": None}

# --broker-memory: the `cgroup.procs` file of the memory cgroup every broker process joins, or
# None. Set once by bench/compare (memory_cgroup) before anything starts.
BROKER_CGROUP = None


def placed(role):
    """A preexec_fn that binds the child to the CPU of `role` ("broker" or "generator"), as
    `taskset -c CPU` would, and puts a broker into the memory cgroup of --broker-memory; the
    child's own children inherit both (a JVM sizes its thread pools by the CPUs it may use).
    None when neither is on."""
    cpu = PINS.get(role)
    cgroup = BROKER_CGROUP if role == "broker" else None
    if cpu is None and cgroup is None:
        return None

    def place():
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        if cgroup is not None:
            with open(cgroup, "w") as f:
                f.write(str(os.getpid()))
    return place


def memory_cgroup(limit_bytes):
    """Creates a memory cgroup limited to limit_bytes (cgroup v2, else v1's memory controller)
    and returns its `cgroup.procs` path. Page cache is charged to the cgroup of the process that
    first touches a page, so a broker in it keeps at most limit_bytes of its own memory and its
    store's pages in memory together: that is how a backlog is made larger than the page cache
    without filling the machine's memory. Needs root; removed by remove_cgroup()."""
    name = f"silo-bench-{os.getpid()}"
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists():
        d = Path("/sys/fs/cgroup") / name
        d.mkdir()
        (d / "memory.max").write_text(str(limit_bytes))
        (d / "memory.swap.max").write_text("0")
    else:
        d = Path("/sys/fs/cgroup/memory") / name
        d.mkdir()
        (d / "memory.limit_in_bytes").write_text(str(limit_bytes))
    return str(d / "cgroup.procs")


def remove_cgroup(procs_path):
    """Removes the cgroup of memory_cgroup() once its processes are gone (best effort)."""
    d = Path(procs_path).parent
    for _ in range(50):
        try:
            d.rmdir()
            return
        except OSError:
            time.sleep(0.2)


def spawn(argv, log_path, env=None, cwd=None, role="broker"):
    """Starts argv in its own process group with stdout and stderr appended to log_path."""
    out = open(log_path, "ab")
    try:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=True, preexec_fn=placed(role))
    finally:
        out.close()


def stop(proc, grace=30.0):
    """SIGTERM to a process we started (and its group), SIGKILL after `grace` seconds."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)


class LineReader:
    """Runs a command with its stdout (and stderr) piped; keeps (monotonic time, line) pairs and
    copies every line to a log file. For generators whose progress lines we parse as they come."""

    def __init__(self, argv, log_path, env=None, cwd=None, role="generator"):
        self.lines = []
        self.lock = threading.Lock()
        self.log = open(log_path, "a", encoding="utf-8", errors="replace")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True,
                                     text=True, errors="replace", bufsize=1, preexec_fn=placed(role))
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            now = time.monotonic()
            with self.lock:
                self.lines.append((now, line.rstrip("\n")))
            self.log.write(line)
            self.log.flush()

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def wait_for(self, predicate, deadline):
        """Waits for a line satisfying predicate; returns (time, line) or None (timeout or exit)."""
        seen = 0
        while time.monotonic() < deadline:
            lines = self.snapshot()
            for t, line in lines[seen:]:
                if predicate(line):
                    return t, line
            seen = len(lines)
            if self.proc.poll() is not None and not self.thread.is_alive():
                return None
            time.sleep(0.05)
        return None

    def stop(self, grace=15.0):
        stop(self.proc, grace)
        self.thread.join(timeout=5)
        self.log.close()


# --- /proc measurements ------------------------------------------------------------------------

def cpu_secs(pid):
    """utime + stime of pid in seconds, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of proc(5)


def mem_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile of pid in bytes (a dict), or None if it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        return None
    return out


class Sampler:
    """Samples CPU time and memory of a set of processes (name -> pid) every `interval` seconds in
    a background thread, so figures over any time window can be computed afterwards."""

    def __init__(self, pids, interval=0.2):
        self.pids = dict(pids)
        self.interval = interval
        self.samples = []  # (monotonic time, {name: (cpu secs, mem dict)})
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def read(self):
        return {name: (cpu_secs(pid), mem_status(pid)) for name, pid in self.pids.items()}

    def _run(self):
        while not self.done.is_set():
            s = (time.monotonic(), self.read())
            with self.lock:
                self.samples.append(s)
            self.done.wait(self.interval)

    def close(self):
        self.done.set()
        self.thread.join(timeout=5)

    def _at(self, t, before):
        """The last sample at or before t (before=True) or the first at or after t."""
        with self.lock:
            samples = list(self.samples)
        if not samples:
            return None
        if before:
            cands = [s for s in samples if s[0] <= t]
            return cands[-1] if cands else samples[0]
        cands = [s for s in samples if s[0] >= t]
        return cands[0] if cands else samples[-1]

    def cpu_between(self, t0, t1):
        """CPU seconds per process between the samples bracketing [t0, t1] (widened by at most one
        sampling interval on each side), plus "total"."""
        a, b = self._at(t0, True), self._at(t1, False)
        out = {}
        for name in self.pids:
            c0, c1 = a[1][name][0], b[1][name][0]
            out[name] = round(c1 - c0, 3) if c0 is not None and c1 is not None else None
        out["total"] = round(sum(v for v in out.values() if v is not None), 3)
        return out

    def peak_between(self, t0, t1):
        """Largest sampled VmRSS, RssAnon and RssFile per process within [t0, t1], in bytes."""
        with self.lock:
            window = [s for s in self.samples if t0 <= s[0] <= t1]
        out = {}
        for name in self.pids:
            rss = [m[name][1]["VmRSS"] for _, m in window if m[name][1]]
            anon = [m[name][1]["RssAnon"] for _, m in window if m[name][1]]
            file = [m[name][1]["RssFile"] for _, m in window if m[name][1]]
            out[name] = {"rss": max(rss) if rss else None, "anon": max(anon) if anon else None,
                         "file": max(file) if file else None}
        return out


def mem_snapshot(pids):
    """{name: {rss, anon, file, hwm}} now, plus a "total" entry (sums)."""
    out = {}
    for name, pid in pids.items():
        m = mem_status(pid) or {}
        out[name] = {"rss": m.get("VmRSS"), "anon": m.get("RssAnon"), "file": m.get("RssFile"),
                     "hwm": m.get("VmHWM")}
    out["total"] = {k: sum(v[k] or 0 for v in out.values()) for k in ("rss", "anon", "file", "hwm")}
    return out


# --- the machine -------------------------------------------------------------------------------

def _first(path, prefix):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip() if ":" in line else line[len(prefix):].strip()
    except OSError:
        pass
    return None


def _cmd(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine():
    mem = _first("/proc/meminfo", "MemTotal")
    available = _first("/proc/meminfo", "MemAvailable")
    os_name = _first("/etc/os-release", "PRETTY_NAME=")
    return {
        "cpu_model": _first("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "memory_bytes": int(mem.split()[0]) * 1024 if mem else None,
        "mem_available_bytes": int(available.split()[0]) * 1024 if available else None,
        "kernel": platform.release(),
        "os": os_name.strip('"') if os_name else None,
        "java": _cmd(["java", "-version"]),
        "python": platform.python_version(),
    }
