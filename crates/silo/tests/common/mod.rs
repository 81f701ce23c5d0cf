//! Helpers shared by the `silo` binary's integration tests: free loopback ports, child processes
//! that are killed when the test ends, and one raw request to a name server or broker.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use bytes::BytesMut;
use silo_wire::frame::{FrameDecoder, encode_frame};
use silo_wire::{Frame, RemotingHeader, SerializeType};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub struct Killed(pub Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn call(addr: SocketAddr, code: i32, ext: &[(&str, &str)]) -> Frame {
    call_within(addr, code, ext, Duration::from_secs(10))
}

/// [`call`], waiting up to `timeout` for the answer.
pub fn call_within(addr: SocketAddr, code: i32, ext: &[(&str, &str)], timeout: Duration) -> Frame {
    call_as(addr, code, ext, &[], timeout, None)
}

/// [`call`], signed by `user` (access key, secret key) as the stock clients sign.
pub fn call_signed(addr: SocketAddr, code: i32, ext: &[(&str, &str)], user: (&str, &str)) -> Frame {
    call_as(addr, code, ext, &[], Duration::from_secs(10), Some(user))
}

/// [`call_signed`] with a body.
pub fn call_signed_with_body(
    addr: SocketAddr,
    code: i32,
    ext: &[(&str, &str)],
    body: &[u8],
    user: (&str, &str),
) -> Frame {
    call_as(addr, code, ext, body, Duration::from_secs(10), Some(user))
}

fn call_as(
    addr: SocketAddr,
    code: i32,
    ext: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
    user: Option<(&str, &str)>,
) -> Frame {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let mut h = RemotingHeader::request(code, 1);
    for (k, v) in ext {
        h.ext_fields.insert(*k, *v);
    }
    if let Some((access_key, secret_key)) = user {
        let c = silo_wire::signature::Credentials { access_key: access_key.into(), secret_key: secret_key.into() };
        silo_wire::signature::sign(&mut h.ext_fields, body, &c, None);
    }
    let mut out = Vec::new();
    encode_frame(&h, SerializeType::Json, body, &mut out).unwrap();
    s.write_all(&out).unwrap();
    read_frame(&mut s)
}

/// The next frame from `s` (its read timeout bounds the wait).
pub fn read_frame(s: &mut TcpStream) -> Frame {
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 65536];
    loop {
        if let Some(f) = FrameDecoder::default().decode(&mut buf).unwrap() {
            return f;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "connection closed");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A port for Apache's broker, which also listens on the port two below it (its "fast" port) and
/// the one above (HA): all of them free, and below the ephemeral range, so that no client
/// connection (a test that opened thousands, say) holds one of them.
pub fn free_broker_port() -> u16 {
    free_port_below_ephemeral(|p| (p - 2..=p + 1).all(|q| TcpListener::bind(("127.0.0.1", q)).is_ok()))
}

/// A free port for a server that may be restarted on it (`silo serve`): below the ephemeral
/// range, so that a client's outgoing connection cannot take it while the server is down.
pub fn free_server_port() -> u16 {
    free_port_below_ephemeral(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
}

fn free_port_below_ephemeral(free: impl Fn(u16) -> bool) -> u16 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    for _ in 0..2000u64 {
        let i = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = 20_000 + ((seed.wrapping_mul(6364136223846793005).wrapping_add(i * 7919)) % 12_000) as u16;
        if free(p) {
            return p;
        }
    }
    panic!("no free port below the ephemeral range");
}

/// `interop/java-client/rocketmq-server.sh`: Apache RocketMQ 5.3.3's own name server and broker.
pub fn apache_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/java-client/rocketmq-server.sh")
}

/// Apache RocketMQ's name server and broker, running from a directory; stopped however the test
/// ends.
pub struct ApacheServers {
    pub dir: PathBuf,
    pub namesrv_port: u16,
    pub broker_port: u16,
}

impl ApacheServers {
    /// What the broker's log says about its store refusing work: a disk it marked full (it
    /// refuses writes past `diskMaxUsedSpaceRatio`, 90% at most, of the whole partition, so a
    /// crowded machine fails a test that has nothing to do with disks) and messages its timer
    /// service gave up on. For a failing test's message.
    pub fn store_complaints(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("logs/broker.log")).unwrap_or_default();
        let found: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("disk maybe full") || l.contains("mark disk full") || l.contains("retries"))
            .take(20)
            .collect();
        if found.is_empty() { "(nothing about a full disk or given-up timers)".into() } else { found.join("\n") }
    }

    /// Starts both on free loopback ports, with every file they write under `dir`, and waits
    /// until the broker is registered and answering.
    pub fn start(dir: &Path) -> Self {
        Self::start_with(dir, None, &[])
    }

    /// As [`start`](Self::start), with the broker's store in `store` (another broker's, say)
    /// and `conf` lines added to its `broker.conf`.
    pub fn start_with(dir: &Path, store: Option<&Path>, conf: &[&str]) -> Self {
        let (namesrv_port, broker_port) = (free_port(), free_broker_port());
        let mut command = Command::new("bash");
        command
            .arg(apache_script())
            .args(["start", dir.to_str().unwrap(), "--namesrv-port", &namesrv_port.to_string()])
            .args(["--broker-port", &broker_port.to_string()]);
        if let Some(store) = store {
            command.args(["--store-dir", store.to_str().unwrap()]);
        }
        if !conf.is_empty() {
            std::fs::create_dir_all(dir).unwrap();
            let extra = dir.with_extension("broker-extra.conf");
            std::fs::write(&extra, conf.join("\n") + "\n").unwrap();
            command.args(["--broker-conf-extra", extra.to_str().unwrap()]);
        }
        let status = command.status().expect("start Apache RocketMQ (needs Java and Maven)");
        let servers = Self { dir: dir.to_owned(), namesrv_port, broker_port };
        assert!(status.success(), "Apache RocketMQ did not start");
        servers
    }

    /// Apache RocketMQ's broker alone, registering with the name server at `namesrv` (Silo's,
    /// say), with `conf` lines added to its `broker.conf` (`brokerId=1` and `brokerRole=SLAVE`
    /// make it a slave of that group's master).
    pub fn start_broker(dir: &Path, namesrv: SocketAddr, conf: &[&str]) -> Self {
        let broker_port = free_broker_port();
        std::fs::create_dir_all(dir).unwrap();
        let extra = dir.with_extension("broker-extra.conf");
        std::fs::write(&extra, conf.join("\n") + "\n").unwrap();
        let status = Command::new("bash")
            .arg(apache_script())
            .args(["start", dir.to_str().unwrap(), "--namesrv-addr", &namesrv.to_string()])
            .args(["--broker-port", &broker_port.to_string(), "--broker-conf-extra", extra.to_str().unwrap()])
            .status()
            .expect("start Apache RocketMQ (needs Java and Maven)");
        let servers = Self { dir: dir.to_owned(), namesrv_port: namesrv.port(), broker_port };
        assert!(status.success(), "Apache RocketMQ's broker did not start");
        servers
    }

    /// The broker's store directory (`store/` under its directory).
    pub fn store(&self) -> PathBuf {
        self.dir.join("store")
    }
}

impl Drop for ApacheServers {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(apache_script()).arg("stop").arg(&self.dir).status();
    }
}

/// `silo serve` in a child process on free loopback ports, killed when dropped: the one way
/// the binary's tests start a broker with its embedded name server.
pub struct SiloServer {
    pub child: Child,
    pub data: PathBuf,
    pub namesrv: SocketAddr,
    pub broker: SocketAddr,
    /// The gRPC endpoint (kept across restarts, like the other two).
    pub grpc: SocketAddr,
    extra: Vec<String>,
}

impl SiloServer {
    /// Starts it on `data` with `extra` arguments after `silo serve ...`, and waits until both
    /// ports accept. Its log goes to `data` with a `.log` extension.
    pub fn start(data: &Path, extra: &[&str]) -> Self {
        Self::start_on(data, free_addr(), free_addr(), free_addr(), extra.iter().map(|s| s.to_string()).collect(), None)
    }

    /// As [`start`](Self::start), with the command wrapped: `wrapper` is a program and its
    /// arguments, given the `silo serve ...` command line after them (a mount namespace, say).
    pub fn start_wrapped(data: &Path, extra: &[&str], wrapper: &[&str]) -> Self {
        let wrapper = wrapper.iter().map(|s| s.to_string()).collect();
        Self::start_on(
            data,
            free_addr(),
            free_addr(),
            free_addr(),
            extra.iter().map(|s| s.to_string()).collect(),
            Some(wrapper),
        )
    }

    fn start_on(
        data: &Path,
        namesrv: SocketAddr,
        broker: SocketAddr,
        grpc: SocketAddr,
        extra: Vec<String>,
        wrapper: Option<Vec<String>>,
    ) -> Self {
        let log = std::fs::File::create(data.with_extension("log")).unwrap();
        let serve: Vec<String> = [
            env!("CARGO_BIN_EXE_silo").to_owned(),
            "serve".into(),
            "--data-dir".into(),
            data.to_str().unwrap().into(),
            "--listen-port".into(),
            broker.port().to_string(),
            "--namesrv-listen".into(),
            namesrv.to_string(),
            "--grpc-port".into(),
            grpc.port().to_string(),
        ]
        .into_iter()
        .chain(extra.iter().cloned())
        .collect();
        let line: Vec<String> = wrapper.unwrap_or_default().into_iter().chain(serve).collect();
        let child =
            Command::new(&line[0]).args(&line[1..]).stdout(std::process::Stdio::null()).stderr(log).spawn().unwrap();
        let mut server = Self { child, data: data.to_owned(), namesrv, broker, grpc, extra };
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        for addr in [namesrv, broker] {
            while TcpStream::connect(addr).is_err() {
                if let Some(status) = server.child.try_wait().unwrap() {
                    // The log goes with the test's temporary directory: show its end here.
                    panic!("silo serve exited ({status}) before listening; its log ends:\n{}", server.log_tail());
                }
                assert!(std::time::Instant::now() < deadline, "silo serve did not start listening on {addr}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        server
    }

    /// The broker's memory that is not file-backed (`RssAnon`), in bytes.
    pub fn anonymous_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    }

    /// The last lines of its log, for a failure message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.data.with_extension("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as an operator stops it: the broker flushes and persists before it exits.
    pub fn stop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "silo did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, then start again on the same directory and ports (a crash and a restart).
    pub fn kill_and_start(&mut self) {
        self.kill();
        let extra = std::mem::take(&mut self.extra);
        *self = Self::start_on(&self.data.clone(), self.namesrv, self.broker, self.grpc, extra, None);
    }

    /// [`stop`](Self::stop), then start again on the same directory and ports.
    pub fn restart(&mut self) {
        self.stop();
        let extra = std::mem::take(&mut self.extra);
        *self = Self::start_on(&self.data.clone(), self.namesrv, self.broker, self.grpc, extra, None);
    }
}

impl Drop for SiloServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `silo namesrv` or `silo broker` in a child process, killed when dropped, with its log in
/// `log`; returns once `wait_for` accepts connections.
pub fn silo_process(args: &[&str], log: &Path, wait_for: SocketAddr) -> Killed {
    let child = Command::new(env!("CARGO_BIN_EXE_silo"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut process = Killed(child);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(wait_for).is_err() {
        if let Some(status) = process.0.try_wait().unwrap() {
            panic!("silo {args:?} exited ({status}) before listening; see {}", log.display());
        }
        assert!(std::time::Instant::now() < deadline, "silo {args:?} did not listen on {wait_for}");
        std::thread::sleep(Duration::from_millis(20));
    }
    process
}

/// `silo ARGS` against the name server at `namesrv` (by `NAMESRV_ADDR`, so that it reaches every
/// subcommand wherever its flags go), with `stdin` as its input: its stdout. Fails the test with
/// stderr when the command fails.
pub fn silo_cli(namesrv: &str, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_silo"))
        .args(args)
        .env("NAMESRV_ADDR", namesrv)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "silo {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The `silo serve` arguments that turn both access checks on, with `admin` (user, secret) as
/// the initial super user.
pub fn access_control_on(admin: (&str, &str)) -> Vec<String> {
    let user = format!(r#"initAuthenticationUser={{"username":"{}","password":"{}"}}"#, admin.0, admin.1);
    ["--set", "authenticationEnabled=true", "--set", "authorizationEnabled=true", "--set", &user]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

pub fn free_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_server_port()))
}

/// Runs a Java client scenario (`interop/java-client/run.sh`) against the name server at
/// `namesrv` and returns its PASS line; panics with its output if it did not pass.
pub fn java_scenario(namesrv: &str, name: &str, extra: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/java-client/run.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(name)
        .args(["--namesrv", namesrv])
        .args(extra)
        .output()
        .expect("run interop/java-client/run.sh (needs Java and Maven)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains(&format!("PASS {name}")),
        "scenario {name} {extra:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{}", stdout.trim());
    stdout
}
