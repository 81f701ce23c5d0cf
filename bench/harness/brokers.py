"""The three brokers under test: how to install, start, recognise as ready, and stop each one.

Every start gets a fresh directory DIR (logs, config) whose data/ subdirectory is the store
(storePathRootDir), free loopback ports, and one flush mode. Everything listens on 127.0.0.1 only.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

from . import procs, remoting
from .procs import log

SILO = "silo"
APACHE = "apache"
RUST = "rocketmq-rust"
ALL = [SILO, APACHE, RUST]
# The ceiling: `silo bench null-broker`, which acknowledges every send and stores nothing.
NULL = "null"
# Master/slave pairs (docs/replication.md): not in the default list.
SILO_ASYNC_PAIR = "silo-async-pair"
SILO_SYNC_PAIR = "silo-sync-pair"
APACHE_ASYNC_PAIR = "apache-async-pair"
APACHE_SYNC_PAIR = "apache-sync-pair"
PAIRS = [SILO_ASYNC_PAIR, SILO_SYNC_PAIR, APACHE_ASYNC_PAIR, APACHE_SYNC_PAIR]

LABELS = {SILO: "Silo", APACHE: "Apache RocketMQ 5.3.3", RUST: "rocketmq-rust 1.0.0",
          NULL: "null broker (ceiling)",
          SILO_ASYNC_PAIR: "Silo ASYNC_MASTER + slave", SILO_SYNC_PAIR: "Silo SYNC_MASTER + slave",
          APACHE_ASYNC_PAIR: "Apache 5.3.3 ASYNC_MASTER + slave",
          APACHE_SYNC_PAIR: "Apache 5.3.3 SYNC_MASTER (inSyncReplicas=2) + slave"}

RUST_VERSION = "1.0.0"
RUST_CRATES = {"rocketmq-namesrv": "rocketmq-namesrv-rust", "rocketmq-broker": "rocketmq-broker-rust"}

# Apache RocketMQ's JVM heaps. Its stock start scripts ask for an 8 GiB broker heap and 4 GiB for
# the name server, sized for dedicated servers; on this 2-core / 24 GiB machine that would only
# add GC and page-table work without helping a single-broker benchmark. 2 GiB keeps the broker's
# heap comfortably above its working set (the store itself lives in mmapped files, outside the
# heap) and the name server, which only serves routes here, needs little: 512 MiB.
APACHE_BROKER_HEAP = "2g"
APACHE_NAMESRV_HEAP = "512m"

# Settings added to Apache RocketMQ's broker.conf, in every run: enablePropertyFilter lets
# consumers subscribe with SQL92 selectors (off by default in Java, on in Silo). It only decides
# whether such a subscription is accepted; TAG subscriptions and sends are unaffected (the
# filter bitmap, which would add work to every dispatch, stays off: enableCalcFilterBitMap).
APACHE_BROKER_CONF_EXTRA = "enablePropertyFilter=true\n"


class Broker:
    """One running name server + broker pair (for Silo: one process with an embedded name server)."""

    key = None

    def __init__(self, ctx, directory, flush):
        self.ctx = ctx
        self.dir = Path(directory)
        self.data = self.dir / "data"
        self.flush = flush
        self.namesrv = None  # "127.0.0.1:port"
        self.broker = None
        self.pids = {}  # process name -> pid, for measurements

    @property
    def label(self):
        return LABELS[self.key]

    def start(self):
        raise NotImplementedError

    def stop(self):
        raise NotImplementedError

    def version(self):
        return None

    def wait_ready(self, topic, queues, deadline):
        """Creates topic with `queues` queues on the broker (retrying while the broker is still
        starting), then waits until the name server routes it to this broker."""
        last = None
        while time.monotonic() < deadline:
            try:
                remoting.create_topic(self.broker, topic, queues)
                break
            except (OSError, remoting.RemotingError) as e:
                last = e
                time.sleep(0.5)
        else:
            raise RuntimeError(f"{self.label}: could not create topic {topic}: {last}")
        while time.monotonic() < deadline:
            try:
                r = remoting.route(self.namesrv, topic)
            except (OSError, remoting.RemotingError) as e:
                last, r = e, None
            if r:
                addrs = [bd.get("brokerAddrs", {}).get("0") for bd in r.get("brokerDatas", [])]
                writable = [q for q in r.get("queueDatas", []) if q.get("writeQueueNums", 0) >= queues]
                if self.broker in addrs and writable:
                    return
            time.sleep(0.3)
        raise RuntimeError(f"{self.label}: the name server never routed {topic} to {self.broker} ({last})")


class Silo(Broker):
    key = SILO

    def start(self):
        self.data.mkdir(parents=True, exist_ok=True)
        n, b = procs.pick_ports()
        self.namesrv, self.broker = f"127.0.0.1:{n}", f"127.0.0.1:{b}"
        argv = [str(self.ctx.silo_bin), "serve", "--data-dir", str(self.data), "--listen-port", str(b),
                "--broker-ip", "127.0.0.1", "--namesrv-listen", self.namesrv, "--grpc-port", "0"]
        if self.flush == "sync":
            argv += ["--flush-disk-type", "SYNC_FLUSH"]
        env = dict(os.environ, HOME=str(self.dir))
        self.proc = procs.spawn(argv, self.dir / "silo.log", env=env)
        self.pids = {"silo": self.proc.pid}
        deadline = time.monotonic() + self.ctx.start_timeout
        if not (procs.wait_port(n, deadline, self.proc) and procs.wait_port(b, deadline, self.proc)):
            raise RuntimeError(f"silo serve did not come up; see {self.dir / 'silo.log'}")

    def stop(self):
        procs.stop(getattr(self, "proc", None))

    def version(self):
        return procs._cmd([str(self.ctx.silo_bin), "--version"])


class NullBroker(Broker):
    """`silo bench null-broker`: name server and broker on one port, every send answered SEND_OK
    at once and nothing stored. What a generator reaches with no broker work at all: the row
    each table compares the brokers with."""

    key = NULL

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        n, _ = procs.pick_ports()
        self.namesrv = self.broker = f"127.0.0.1:{n}"
        argv = [str(self.ctx.silo_bin), "bench", "null-broker", "--listen", self.namesrv,
                "--queues", str(self.ctx.queues)]
        self.proc = procs.spawn(argv, self.dir / "null-broker.log")
        self.pids = {"null-broker": self.proc.pid}
        if not procs.wait_port(n, time.monotonic() + self.ctx.start_timeout, self.proc):
            raise RuntimeError(f"silo bench null-broker did not come up; see {self.dir / 'null-broker.log'}")

    def stop(self):
        procs.stop(getattr(self, "proc", None))

    def version(self):
        return procs._cmd([str(self.ctx.silo_bin), "--version"])


class Apache(Broker):
    """Apache RocketMQ 5.3.3 through interop/java-client/rocketmq-server.sh (unmodified Maven
    Central jars; that script also keeps the HA port on loopback)."""

    key = APACHE

    def script(self):
        return self.ctx.repo / "interop" / "java-client" / "rocketmq-server.sh"

    def start(self):
        n, b = procs.pick_ports()
        self.namesrv, self.broker = f"127.0.0.1:{n}", f"127.0.0.1:{b}"
        self.dir.mkdir(parents=True, exist_ok=True)
        extra = self.dir / "broker-extra.conf"
        extra.write_text(self.conf_extra())
        argv = ["bash", str(self.script()), "start", str(self.dir), "--namesrv-port", str(n),
                "--broker-port", str(b), "--broker-heap", self.ctx.apache_broker_heap,
                "--namesrv-heap", self.ctx.apache_namesrv_heap, "--flush", self.flush,
                "--store-dir", str(self.data), "--timeout", str(int(self.ctx.start_timeout)),
                "--broker-conf-extra", str(extra)]
        with open(self.dir / "start.log", "ab") as out:
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=self.ctx.start_timeout * 3,
                               preexec_fn=procs.placed("broker"))
        self.started = True
        if r.returncode != 0:
            raise RuntimeError(f"rocketmq-server.sh start failed; see {self.dir / 'start.log'}")
        self.pids = {name: int((self.dir / f"{name}.pid").read_text()) for name in ("namesrv", "broker")}

    def conf_extra(self):
        """The lines added to the broker's broker.conf."""
        return APACHE_BROKER_CONF_EXTRA

    def stop(self):
        if getattr(self, "started", False):
            subprocess.run(["bash", str(self.script()), "stop", str(self.dir)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=180)

    def version(self):
        return "5.3.3"


class RocketmqRust(Broker):
    """rocketmq-rust 1.0.0's rocketmq-namesrv-rust and rocketmq-broker-rust (crates.io)."""

    key = RUST

    def start(self):
        n, b = procs.pick_ports()
        self.namesrv, self.broker = f"127.0.0.1:{n}", f"127.0.0.1:{b}"
        self.data.mkdir(parents=True, exist_ok=True)
        (self.dir / "namesrv").mkdir(exist_ok=True)
        flush = "SYNC_FLUSH" if self.flush == "sync" else "ASYNC_FLUSH"
        conf = self.dir / "broker.toml"
        # Canonical TOML layout of the 1.0 broker (its README); every listener on loopback: the
        # remoting port, its "fast" port (listenPort - 2) and the HA port.
        conf.write_text(f"""# Generated by bench/compare
[broker]
namesrvAddr = "{self.namesrv}"
brokerIp1 = "127.0.0.1"
listenPort = {b}
storePathRootDir = "{self.data}"

[broker.brokerServerConfig]
bindAddress = "127.0.0.1"

[broker.brokerIdentity]
brokerName = "broker-a"
brokerClusterName = "DefaultCluster"
brokerId = 0

[store]
storeType = "LocalFile"
brokerRole = "ASYNC_MASTER"
flushDiskType = "{flush}"
storePathRootDir = "{self.data}"
haListenAddress = "127.0.0.1"
haListenPort = {b + 1}
""")
        # HOME and ROCKETMQ_HOME point into DIR so that logs stay there; the development security
        # profile makes both servers refuse to start if any listener is not on loopback.
        env = dict(os.environ, HOME=str(self.dir), ROCKETMQ_HOME=str(self.dir),
                   ROCKETMQ_SECURITY_PROFILE="development-insecure-loopback")
        env.pop("NAMESRV_ADDR", None)
        bindir = self.ctx.rust_root / "bin"
        self.nproc = procs.spawn([str(bindir / RUST_CRATES["rocketmq-namesrv"]), "--rocketmqHome", str(self.dir),
                                  "--listenPort", str(n), "--bindAddress", "127.0.0.1",
                                  "--kvConfigPath", str(self.dir / "namesrv" / "kvConfig.json")],
                                 self.dir / "namesrv.log", env=env, cwd=self.dir)
        deadline = time.monotonic() + self.ctx.start_timeout
        if not procs.wait_port(n, deadline, self.nproc):
            raise RuntimeError(f"rocketmq-namesrv-rust did not come up; see {self.dir / 'namesrv.log'}")
        self.bproc = procs.spawn([str(bindir / RUST_CRATES["rocketmq-broker"]), "-c", str(conf),
                                  "-n", self.namesrv], self.dir / "broker.log", env=env, cwd=self.dir)
        self.pids = {"namesrv": self.nproc.pid, "broker": self.bproc.pid}
        if not procs.wait_port(b, deadline, self.bproc):
            raise RuntimeError(f"rocketmq-broker-rust did not come up; see {self.dir / 'broker.log'}")

    def stop(self):
        procs.stop(getattr(self, "bproc", None))
        procs.stop(getattr(self, "nproc", None))

    def version(self):
        return RUST_VERSION


class SiloPair(Broker):
    """`silo serve` as the master (its embedded name server) and `silo broker` as its slave."""

    role = None

    def start(self):
        (self.dir / "slave").mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        n, b = procs.pick_ports()
        _, ha = procs.pick_ports()
        _, s = procs.pick_ports()
        self.namesrv, self.broker = f"127.0.0.1:{n}", f"127.0.0.1:{b}"
        common = ["--broker-ip", "127.0.0.1", "--grpc-port", "0"]
        if self.flush == "sync":
            common += ["--flush-disk-type", "SYNC_FLUSH"]
        master = [str(self.ctx.silo_bin), "serve", "--data-dir", str(self.data), "--listen-port", str(b),
                  "--namesrv-listen", self.namesrv, "--set", f"brokerRole={self.role}",
                  "--set", f"haListenPort={ha}"] + common
        env = dict(os.environ, HOME=str(self.dir))
        self.proc = procs.spawn(master, self.dir / "silo.log", env=env)
        deadline = time.monotonic() + self.ctx.start_timeout
        if not (procs.wait_port(n, deadline, self.proc) and procs.wait_port(b, deadline, self.proc)):
            raise RuntimeError(f"silo serve did not come up; see {self.dir / 'silo.log'}")
        slave = [str(self.ctx.silo_bin), "broker", "--data-dir", str(self.dir / "slave" / "data"),
                 "--listen-port", str(s), "--namesrv-addr", self.namesrv, "--set", "brokerRole=SLAVE",
                 "--set", "brokerId=1"] + common
        self.slave = procs.spawn(slave, self.dir / "silo-slave.log", env=env)
        if not procs.wait_port(s, deadline, self.slave):
            raise RuntimeError(f"the silo slave did not come up; see {self.dir / 'silo-slave.log'}")
        self.pids = {"silo": self.proc.pid, "silo-slave": self.slave.pid}
        wait_slave_linked(self, deadline)

    def stop(self):
        procs.stop(getattr(self, "slave", None))
        procs.stop(getattr(self, "proc", None))

    def version(self):
        return procs._cmd([str(self.ctx.silo_bin), "--version"])


class SiloAsyncPair(SiloPair):
    key = SILO_ASYNC_PAIR
    role = "ASYNC_MASTER"


class SiloSyncPair(SiloPair):
    key = SILO_SYNC_PAIR
    role = "SYNC_MASTER"


class ApachePair(Apache):
    """Apache's master and name server, then its slave registering with that name server. The
    synchronous master gets inSyncReplicas=2: with 5.3.3's default of 1 it would not wait for
    its slave at all (docs/replication.md)."""

    conf = None

    def conf_extra(self):
        return APACHE_BROKER_CONF_EXTRA + self.conf

    def start(self):
        self.slave_dir = self.dir / "slave"
        self.slave_dir.mkdir(parents=True, exist_ok=True)
        super().start()
        _, s = procs.pick_ports()
        extra = self.slave_dir / "broker-extra.conf"
        extra.write_text(APACHE_BROKER_CONF_EXTRA + "brokerId=1\nbrokerRole=SLAVE\n")
        argv = ["bash", str(self.script()), "start", str(self.slave_dir), "--namesrv-addr", self.namesrv,
                "--broker-port", str(s), "--broker-heap", self.ctx.apache_broker_heap, "--flush", self.flush,
                "--timeout", str(int(self.ctx.start_timeout)), "--broker-conf-extra", str(extra)]
        with open(self.slave_dir / "start.log", "ab") as out:
            r = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=self.ctx.start_timeout * 3,
                               preexec_fn=procs.placed("broker"))
        self.slave_started = True
        if r.returncode != 0:
            raise RuntimeError(f"the Apache slave did not start; see {self.slave_dir / 'start.log'}")
        self.pids["broker-slave"] = int((self.slave_dir / "broker.pid").read_text())
        wait_slave_linked(self, time.monotonic() + self.ctx.start_timeout)

    def stop(self):
        if getattr(self, "slave_started", False):
            subprocess.run(["bash", str(self.script()), "stop", str(self.slave_dir)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=180)
        super().stop()


class ApacheAsyncPair(ApachePair):
    key = APACHE_ASYNC_PAIR
    conf = "brokerRole=ASYNC_MASTER\n"


class ApacheSyncPair(ApachePair):
    key = APACHE_SYNC_PAIR
    conf = "brokerRole=SYNC_MASTER\ninSyncReplicas=2\n"


def wait_slave_linked(pair, deadline):
    """Waits until the master lists one connected slave (GET_BROKER_HA_STATUS)."""
    last = None
    while time.monotonic() < deadline:
        try:
            if remoting.ha_status(pair.broker).get("haConnectionInfo"):
                return
        except (OSError, remoting.RemotingError, ValueError) as e:
            last = e
        time.sleep(0.3)
    raise RuntimeError(f"{pair.label}: the slave never linked to its master ({last})")


class LagSampler:
    """Samples a master's HA status every `interval` s in a thread: how many bytes the slave
    had not confirmed, and for how long (the time since the master's log first reached the
    offset the slave has confirmed now). The same probe for every broker."""

    def __init__(self, broker, interval=0.1):
        import threading
        self.broker, self.interval = broker, interval
        self.history = []  # (t, master max offset)
        self.samples = []  # (t, bytes behind, seconds behind)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                st = remoting.ha_status(self.broker)
            except (OSError, remoting.RemotingError, ValueError):
                continue
            t = time.monotonic()
            top = int(st.get("masterCommitLogMaxOffset", 0))
            self.history.append((t, top))
            for c in st.get("haConnectionInfo", [])[:1]:
                ack = int(c.get("slaveAckOffset", 0))
                self.samples.append((t, max(0, top - ack), max(0.0, t - self._reached(ack, t))))

    def _reached(self, offset, now):
        """When the master's log first reached `offset`, interpolated between samples."""
        prev = None
        for ht, off in self.history:
            if off >= offset:
                if prev is None or off == prev[1]:
                    return ht
                return prev[0] + (ht - prev[0]) * (offset - prev[1]) / (off - prev[1])
            prev = (ht, off)
        return now

    def close(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def between(self, t0, t1):
        got = sorted(s for s in self.samples if t0 <= s[0] <= t1)
        if not got:
            return None
        by_bytes = sorted(b for _, b, _ in got)
        by_time = sorted(x for _, _, x in got)
        q = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
        return {"samples": len(got), "bytes_p50": q(by_bytes, 0.5), "bytes_p99": q(by_bytes, 0.99),
                "bytes_max": by_bytes[-1], "ms_p50": round(1000 * q(by_time, 0.5), 1),
                "ms_p99": round(1000 * q(by_time, 0.99), 1), "ms_max": round(1000 * by_time[-1], 1)}


CLASSES = {SILO: Silo, NULL: NullBroker, APACHE: Apache, RUST: RocketmqRust, SILO_ASYNC_PAIR: SiloAsyncPair,
           SILO_SYNC_PAIR: SiloSyncPair, APACHE_ASYNC_PAIR: ApacheAsyncPair, APACHE_SYNC_PAIR: ApacheSyncPair}


# --- installation ------------------------------------------------------------------------------

def prepare_silo(ctx):
    """Builds target/release/silo (cargo build --release -p silo) unless --silo-bin or --no-build."""
    if ctx.silo_bin_given:
        return
    if not ctx.no_build:
        log("building silo (cargo build --release -p silo)")
        subprocess.run(["cargo", "build", "--release", "-p", "silo"], cwd=ctx.repo, check=True)
    if not ctx.silo_bin.exists():
        raise SystemExit(f"compare: {ctx.silo_bin} does not exist (build it or pass --silo-bin)")


def silo_has_bench(ctx):
    try:
        r = subprocess.run([str(ctx.silo_bin), "bench", "--help"], capture_output=True, timeout=30)
        return r.returncode == 0
    except OSError:
        return False


def prepare_rust(ctx):
    """Installs rocketmq-rust's two server binaries under --rust-root if they are not there yet."""
    bindir = ctx.rust_root / "bin"
    for crate, binary in RUST_CRATES.items():
        if (bindir / binary).exists():
            continue
        log(f"installing {crate} {RUST_VERSION} into {ctx.rust_root} (a long compile)")
        env = dict(os.environ, CARGO_TARGET_DIR=str(ctx.rust_root / "target"))
        subprocess.run(["cargo", "install", "--locked", "--version", RUST_VERSION, "--root", str(ctx.rust_root),
                        crate], env=env, check=True)
    return bindir


def remove_data(broker):
    shutil.rmtree(broker.data, ignore_errors=True)
