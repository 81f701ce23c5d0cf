//! The RocketMQ 5.x gRPC SDKs work against Silo, each with the suite of `interop/sdk5/<language>/`
//! that was first run against Apache's own broker behind Apache's proxy 5.3.3: normal, FIFO, delay
//! and transaction messages (an orphaned transaction recovered through the check-back),
//! SimpleConsumer receive, ack, change of invisible duration and redelivery, PushConsumer retries
//! and the dead-letter queue. Twice: against `silo serve`'s own gRPC endpoint, with no proxy (the
//! Java and Go SDKs over TLS, their default, the others in plaintext, on the same port), and
//! through Apache's unmodified proxy in front of `silo serve` (cluster mode, remoting to the
//! broker). Loopback only; one broker serves every language, one after the other.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::SiloServer;

/// The languages, in the order they run (each suite skips what its SDK does not offer).
const LANGUAGES: [&str; 5] = ["java", "go", "python", "node", "rust"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Apache's proxy, started by `interop/proxy/proxy.sh` and stopped when dropped.
struct Proxy {
    dir: PathBuf,
    grpc: SocketAddr,
    remoting: SocketAddr,
}

impl Proxy {
    fn start(dir: &Path, namesrv: SocketAddr) -> Self {
        let grpc = SocketAddr::from(([127, 0, 0, 1], common::free_server_port()));
        let remoting = SocketAddr::from(([127, 0, 0, 1], common::free_server_port()));
        let out = Command::new("bash")
            .arg(repo().join("interop/proxy/proxy.sh"))
            .args(["start", dir.to_str().unwrap(), "--namesrv", &namesrv.to_string()])
            .args(["--grpc-port", &grpc.port().to_string(), "--remoting-port", &remoting.port().to_string()])
            .output()
            .expect("run interop/proxy/proxy.sh (needs Java and Maven)");
        assert!(
            out.status.success(),
            "the proxy did not start\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Self { dir: dir.to_owned(), grpc, remoting }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo().join("interop/proxy/proxy.sh"))
            .args(["stop", self.dir.to_str().unwrap()])
            .output();
    }
}

/// Every listener on `ports`, as `ss -ltn` shows them: (local address, port).
fn listeners(ports: &[u16]) -> Vec<(String, u16)> {
    let out = Command::new("ss").arg("-Hltn").output().expect("run ss");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let local = line.split_whitespace().nth(3)?;
            let (addr, port) = local.rsplit_once(':')?;
            let port: u16 = port.parse().ok()?;
            ports.contains(&port).then(|| (addr.to_owned(), port))
        })
        .collect()
}

fn run(script: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("bash")
        .arg(repo().join(script))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The two tests take turns: each runs five SDKs' suites, and two at once would share two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs every language's suite against `endpoint`; the report, and the failures.
fn run_suites(endpoint: &str, namesrv: &str, suffix: &str, tls_for: &[&str]) -> (String, Vec<String>) {
    let mut args = vec!["--namesrv", namesrv, "--suffix", suffix];
    args.extend(LANGUAGES);
    let (ok, stdout, stderr) = run("interop/sdk5/resources.sh", &args);
    assert!(ok, "resources.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let mut failed = Vec::new();
    let mut report = String::new();
    for lang in LANGUAGES {
        let script = format!("interop/sdk5/{lang}/run.sh");
        let tls = if tls_for.contains(&lang) { "1" } else { "0" };
        let out = Command::new("bash")
            .arg(repo().join(&script))
            .args(["--endpoint", endpoint, "--namesrv", namesrv, "--suffix", suffix])
            .env("SDK5_TLS", tls)
            .output()
            .unwrap_or_else(|e| panic!("run {script}: {e}"));
        let (ok, stdout, stderr) =
            (out.status.success(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        report.push_str(&stdout);
        let fails = stdout.lines().any(|l| l.starts_with("FAIL"));
        if !ok || fails || !stdout.lines().any(|l| l.starts_with("PASS")) {
            let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
            failed.push(format!(
                "{lang}:\n{stdout}\nstderr (last lines):\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    }
    (report, failed)
}

fn runtime_info(silo: &SiloServer) -> serde_json::Value {
    let info = common::call(silo.broker, silo_wire::codes::request::GET_BROKER_RUNTIME_INFO, &[]);
    assert_eq!(info.header.code, 0);
    serde_json::from_slice(&info.body).unwrap()
}

fn count(info: &serde_json::Value, key: &str) -> u64 {
    info["table"][key].as_str().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{key} in {info}"))
}

/// The scenarios' broker: transaction checks every 2 s after 2 s, as in client_interop.rs, so
/// that each suite's orphaned transaction is recovered within seconds; recalls allowed (the Java
/// suite's delay scenario recalls a message).
fn start_silo(dir: &Path) -> SiloServer {
    SiloServer::start(
        &dir.join("store"),
        &[
            "--set",
            "recallMessageEnable=true",
            "--set",
            "transactionCheckInterval=2000",
            "--set",
            "transactionTimeOut=2000",
            "--set",
            "transactionCheckMax=60",
        ],
    )
}

#[test]
fn every_5x_sdk_works_against_silos_own_grpc_endpoint() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let silo = start_silo(dir.path());
    let found = listeners(&[silo.grpc.port()]);
    assert!(found.iter().any(|(_, p)| *p == silo.grpc.port()), "nothing listens on {}: {found:?}", silo.grpc);
    assert!(found.iter().all(|(addr, _)| addr == "127.0.0.1"), "gRPC listening beyond loopback: {found:?}");

    let suffix = format!("d{}", std::process::id());
    let (report, failed) = run_suites(&silo.grpc.to_string(), &silo.namesrv.to_string(), &suffix, &["java", "go"]);
    eprintln!("{report}");
    assert!(failed.is_empty(), "suites failed:\n{}\nbroker log:\n{}", failed.join("\n"), silo.log_tail());
    // Both kinds came in on the one port: the Java and Go SDKs' TLS, the others' plaintext.
    let info = runtime_info(&silo);
    assert!(count(&info, "grpcTlsConnections") >= 2, "{info}");
    assert!(count(&info, "grpcPlaintextConnections") >= 3, "{info}");
}

#[test]
fn the_java_sdk_signs_its_requests_when_silo_requires_credentials() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let silo = SiloServer::start(
        &dir.path().join("store"),
        &[
            "--set",
            "authenticationEnabled=true",
            "--set",
            r#"initAuthenticationUser={"username":"sdk-user","password":"sdk-secret"}"#,
        ],
    );
    let suffix = format!("a{}", std::process::id());
    let (ok, stdout, stderr) =
        run("interop/sdk5/resources.sh", &["--namesrv", &silo.namesrv.to_string(), "--suffix", &suffix, "java"]);
    assert!(ok, "resources.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let suite = |secret: &str| {
        let out = Command::new("bash")
            .arg(repo().join("interop/sdk5/java/run.sh"))
            .args(["--endpoint", &silo.grpc.to_string(), "--suffix", &suffix, "--timeout", "20", "--only", "normal"])
            .env("SDK5_ACCESS_KEY", "sdk-user")
            .env("SDK5_SECRET_KEY", secret)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let signed = suite("sdk-secret");
    assert!(signed.starts_with("PASS java normal"), "{signed}\n{}", silo.log_tail());
    let wrong = suite("not-the-secret");
    assert!(wrong.starts_with("FAIL java normal") && wrong.contains("40100"), "{wrong}");
    assert!(count(&runtime_info(&silo), "grpcUnauthenticatedRequests") >= 1);
}

#[test]
fn every_5x_sdk_works_through_apaches_proxy() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let silo = start_silo(dir.path());
    let proxy = Proxy::start(&dir.path().join("proxy"), silo.namesrv);

    let ports = [silo.namesrv.port(), silo.broker.port(), proxy.grpc.port(), proxy.remoting.port()];
    let found = listeners(&ports);
    for port in [proxy.grpc.port(), proxy.remoting.port()] {
        assert!(found.iter().any(|(_, p)| *p == port), "nothing listens on {port}: {found:?}");
    }
    let elsewhere: Vec<&(String, u16)> =
        found.iter().filter(|(addr, _)| addr != "127.0.0.1" && addr != "[::ffff:127.0.0.1]").collect();
    assert!(elsewhere.is_empty(), "listening beyond loopback: {elsewhere:?}");

    let suffix = format!("s{}", std::process::id());
    let (report, failed) = run_suites(&proxy.grpc.to_string(), &silo.namesrv.to_string(), &suffix, &[]);
    eprintln!("{report}");
    assert!(failed.is_empty(), "suites failed:\n{}\nbroker log:\n{}", failed.join("\n"), silo.log_tail());
}

/// Runs Apache's `mqadmin` (interop/java-client/mqadmin.sh) against the name server: its stdout
/// and stderr.
fn mqadmin(namesrv: SocketAddr, args: &[&str]) -> (String, String) {
    let (_, stdout, stderr) = run("interop/java-client/mqadmin.sh", &[args, &["-n", &namesrv.to_string()]].concat());
    (stdout, stderr)
}

/// Operators reach a 5.x SDK consumer through Silo with the stock `mqadmin`, as they reach a
/// remoting one: `consumerConnection` lists it (Java, CONSUME_PASSIVELY, its subscription);
/// `consumerStatus -s` shows its properties and its thread stack, which the broker asked for down
/// the client's Telemetry stream; `queryMsgById -g -d` has it consume a stored message again
/// (CR_SUCCESS, and its listener gets the message once more); a client id that is not online is
/// refused with Java's words. (Apache's proxy in cluster mode registers no gRPC client with its
/// broker, so there every one of these answers "not online".)
#[test]
fn mqadmin_reaches_a_5x_sdk_consumer_through_the_broker() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let silo = start_silo(dir.path());
    let suffix = format!("m{}", std::process::id());
    let (ok, stdout, stderr) =
        run("interop/sdk5/resources.sh", &["--namesrv", &silo.namesrv.to_string(), "--suffix", &suffix, "java"]);
    assert!(ok, "resources.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let group = format!("sdk5-java-normal-{suffix}");
    let hold_log = dir.path().join("hold.err");
    let mut hold = Command::new("bash")
        .arg(repo().join("interop/sdk5/java/run.sh"))
        .args(["hold", "--endpoint", &silo.grpc.to_string(), "--suffix", &suffix, "--seconds", "300"])
        .env("SDK5_TLS", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&hold_log).unwrap())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let out = hold.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |what: &str, pred: &dyn Fn(&str) -> bool, within: Duration| -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "the held consumer did not print {what}; it printed {seen:?}\nits stderr:\n{}\nbroker log:\n{}",
                    std::fs::read_to_string(&hold_log).unwrap_or_default(),
                    silo.log_tail()
                ),
            }
        }
    };
    let sent = wait_for("SENT", &|l| l.starts_with("SENT "), Duration::from_secs(120));
    let message_id = sent.split_whitespace().nth(1).unwrap().to_owned();
    wait_for("READY", &|l| l == "READY", Duration::from_secs(60));

    let (connections, err) = mqadmin(silo.namesrv, &["consumerConnection", "-g", &group]);
    let row = connections
        .lines()
        .skip_while(|l| !l.starts_with("#ClientId"))
        .nth(1)
        .unwrap_or_else(|| panic!("consumerConnection lists nobody:\n{connections}\n{err}"));
    let client_id = row.split_whitespace().next().unwrap().to_owned();
    assert!(row.contains("JAVA") && row.contains("V5_3_3"), "{connections}");
    assert!(connections.contains("ConsumeType: CONSUME_PASSIVELY"), "{connections}");
    assert!(connections.lines().any(|l| l.starts_with(&group) && l.trim_end().ends_with('*')), "{connections}");

    let (status, err) = mqadmin(silo.namesrv, &["consumerStatus", "-g", &group, "-i", &client_id, "-s"]);
    assert!(status.contains("PROP_CONSUME_TYPE") && status.contains("CONSUME_PASSIVELY"), "{status}\n{err}");
    let stack = status.split("#Consumer jstack#").nth(1).unwrap_or_else(|| panic!("no jstack:\n{status}\n{err}"));
    assert!(stack.contains("dev.silo.interop.sdk5.Hold.main"), "the stack is not the held client's:\n{status}");

    let (pushed, err) =
        mqadmin(silo.namesrv, &["queryMsgById", "-t", &group, "-i", &message_id, "-g", &group, "-d", &client_id]);
    assert!(
        pushed.contains("consumeResult=CR_SUCCESS") && pushed.contains("remark=from gRPC client"),
        "{pushed}\n{err}"
    );
    let again = format!("CONSUMED {message_id} hold-{suffix}");
    wait_for("the message consumed again", &|l| l == again, Duration::from_secs(30));

    let (_, refused) =
        mqadmin(silo.namesrv, &["queryMsgById", "-t", &group, "-i", &message_id, "-g", &group, "-d", "nobody@1"]);
    assert!(refused.contains(&format!("The Consumer <{group}> <nobody@1> not online")), "{refused}");

    drop(hold.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while hold.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = hold.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = hold.wait();
}
