//! The RocketMQ 5.x gRPC SDKs work against Silo, each with the suite of `interop/sdk5/<language>/`
//! that was first run against Apache's own broker behind Apache's proxy 5.3.3: normal, FIFO, delay
//! and transaction messages (an orphaned transaction recovered through the check-back),
//! SimpleConsumer receive, ack, change of invisible duration and redelivery, PushConsumer retries
//! and the dead-letter queue. Twice: against `silo serve`'s own gRPC endpoint, with no proxy (the
//! Java and Go SDKs over TLS, their default, the others in plaintext, on the same port), and
//! through Apache's unmodified proxy in front of `silo serve` (cluster mode, remoting to the
//! broker). Loopback only; one broker serves every language, one after the other. Then, with the
//! Java SDK's long-running clients (interop/sdk5/README.md): the stock `mqadmin` reaching a 5.x
//! consumer through the broker, and a consumer SIGKILLed holding messages.
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

/// Creates the suites' topics and groups of `suffix` for `languages` (interop/sdk5/resources.sh).
fn create_resources(namesrv: &str, suffix: &str, languages: &[&str]) {
    create_resources_as(namesrv, suffix, languages, &[]);
}

/// As [`create_resources`], with `credentials` (`--access-key K --secret-key S`) signing every request.
fn create_resources_as(namesrv: &str, suffix: &str, languages: &[&str], credentials: &[&str]) {
    let args = [&["--namesrv", namesrv, "--suffix", suffix][..], credentials, languages].concat();
    let (ok, stdout, stderr) = run("interop/sdk5/resources.sh", &args);
    assert!(ok, "resources.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
}

/// The two tests take turns: each runs five SDKs' suites, and two at once would share two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the suites of `languages` against `endpoint`; the report, and the failures.
fn run_suites(
    languages: &[&str],
    endpoint: &str,
    namesrv: &str,
    suffix: &str,
    tls_for: &[&str],
) -> (String, Vec<String>) {
    create_resources(namesrv, suffix, languages);
    let mut failed = Vec::new();
    let mut report = String::new();
    for &lang in languages {
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
    runtime_info_as(silo, None)
}

/// [`runtime_info`], signed by `user` (a broker with authentication on refuses unsigned requests).
fn runtime_info_as(silo: &SiloServer, user: Option<(&str, &str)>) -> serde_json::Value {
    let code = silo_wire::codes::request::GET_BROKER_RUNTIME_INFO;
    let info = match user {
        Some(user) => common::call_signed(silo.broker, code, &[], user),
        None => common::call(silo.broker, code, &[]),
    };
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
    let (report, failed) =
        run_suites(&LANGUAGES, &silo.grpc.to_string(), &silo.namesrv.to_string(), &suffix, &["java", "go"]);
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
            "authorizationEnabled=true",
            "--set",
            r#"initAuthenticationUser={"username":"sdk-user","password":"sdk-secret"}"#,
        ],
    );
    let suffix = format!("a{}", std::process::id());
    let admin = ["--access-key", "sdk-user", "--secret-key", "sdk-secret"];
    create_resources_as(&silo.namesrv.to_string(), &suffix, &["java"], &admin);
    let suite = |user: &str, secret: &str| {
        let out = Command::new("bash")
            .arg(repo().join("interop/sdk5/java/run.sh"))
            .args(["--endpoint", &silo.grpc.to_string(), "--suffix", &suffix, "--timeout", "20", "--only", "normal"])
            .env("SDK5_ACCESS_KEY", user)
            .env("SDK5_SECRET_KEY", secret)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let signed = suite("sdk-user", "sdk-secret");
    assert!(signed.starts_with("PASS java normal"), "{signed}\n{}", silo.log_tail());
    let wrong = suite("sdk-user", "not-the-secret");
    assert!(wrong.starts_with("FAIL java normal") && wrong.contains("40100"), "{wrong}");

    // A normal user whose ACL grants Sub but not Pub is refused publishing (UNAUTHORIZED, as
    // Apache's proxy answers an authorization failure), and passes once Pub is granted.
    let super_user = ("sdk-user", "sdk-secret");
    let reader = r#"{"username":"sdk-reader","password":"reader-secret","userType":"Normal"}"#;
    let made =
        common::call_signed_with_body(silo.broker, 3001, &[("username", "sdk-reader")], reader.as_bytes(), super_user);
    assert_eq!(made.header.code, 0, "{:?}", made.header.remark);
    let grant = |actions: &str| {
        let acl = format!(
            r#"{{"subject":"User:sdk-reader","policies":[{{"policyType":"Custom","entries":[{{"resource":"Topic:*","actions":[{actions}],"decision":"Allow"}},{{"resource":"Group:*","actions":["Sub"],"decision":"Allow"}}]}}]}}"#
        );
        let done = common::call_signed_with_body(
            silo.broker,
            3006,
            &[("subject", "User:sdk-reader")],
            acl.as_bytes(),
            super_user,
        );
        assert_eq!(done.header.code, 0, "{:?}", done.header.remark);
    };
    grant(r#""Sub""#);
    let refused = suite("sdk-reader", "reader-secret");
    // The producer's settings name the topic it publishes to: refused, it never starts.
    assert!(refused.starts_with("FAIL java normal"), "{refused}");
    let log = std::fs::read_to_string(silo.data.with_extension("log")).unwrap();
    let refusal = log.lines().find(|l| l.contains("not authorized") && l.contains("sdk-reader"));
    let refusal = refusal.unwrap_or_else(|| panic!("no refusal of sdk-reader logged:\n{}", silo.log_tail()));
    assert!(refusal.contains("has no permission to access Topic:"), "{refusal}");
    grant(r#""Pub","Sub""#);
    let granted = suite("sdk-reader", "reader-secret");
    assert!(granted.starts_with("PASS java normal"), "{granted}\n{}", silo.log_tail());
    assert!(count(&runtime_info_as(&silo, Some(("sdk-user", "sdk-secret"))), "grpcUnauthenticatedRequests") >= 1);
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
    // What this proves of Silo is the proxy's remoting traffic to it, which the proxy makes the
    // same whichever SDK calls it (every language's suite runs the same six scenarios); the
    // SDKs' side of the proxy is Apache's own. So two SDKs go through it here; all five run
    // against Silo's own endpoint.
    let (report, failed) =
        run_suites(&["java", "go"], &proxy.grpc.to_string(), &silo.namesrv.to_string(), &suffix, &[]);
    eprintln!("{report}");
    assert!(failed.is_empty(), "suites failed:\n{}\nbroker log:\n{}", failed.join("\n"), silo.log_tail());
}

/// Runs Apache's `mqadmin` (interop/java-client/mqadmin.sh) against the name server: its stdout
/// and stderr.
fn mqadmin(namesrv: SocketAddr, args: &[&str]) -> (String, String) {
    let (_, stdout, stderr) = run("interop/java-client/mqadmin.sh", &[args, &["-n", &namesrv.to_string()]].concat());
    (stdout, stderr)
}

/// A Java SDK harness process (`interop/sdk5/java/run.sh MODE ...`) whose stdout lines are read
/// as they come, each with the instant it arrived.
struct JavaSdk {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<(std::time::Instant, String)>,
    seen: Vec<(std::time::Instant, String)>,
    stderr: PathBuf,
}

impl JavaSdk {
    fn spawn(mode: &str, args: &[&str], stderr: PathBuf) -> Self {
        use std::io::BufRead as _;
        use std::process::Stdio;
        let mut child = Command::new("bash")
            .arg(repo().join("interop/sdk5/java/run.sh"))
            .arg(mode)
            .args(args)
            .env("SDK5_TLS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send((std::time::Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Self { child, lines, seen: Vec::new(), stderr }
    }

    /// Reads lines until one satisfies `pred`, for at most `within`; panics with what it
    /// printed if none does.
    fn wait_for(
        &mut self,
        what: &str,
        pred: impl Fn(&str) -> bool,
        within: std::time::Duration,
        silo: &SiloServer,
    ) -> (std::time::Instant, String) {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line.1) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no {what} within {within:?}; the client printed {:?}\nits stderr:\n{}\nbroker log:\n{}",
                    self.seen.iter().map(|(_, l)| l).collect::<Vec<_>>(),
                    std::fs::read_to_string(&self.stderr).unwrap_or_default(),
                    silo.log_tail()
                ),
            }
        }
    }

    /// Every line that arrives within `within` from now.
    fn drain(&mut self, within: std::time::Duration) -> Vec<(std::time::Instant, String)> {
        let deadline = std::time::Instant::now() + within;
        let mut got = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            self.seen.push(line.clone());
            got.push(line);
        }
        got
    }

    /// SIGKILL: the JVM gets no chance to say goodbye (run.sh execs it).
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for JavaSdk {
    fn drop(&mut self) {
        self.kill();
    }
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
    use std::time::Duration;

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let silo = start_silo(dir.path());
    let suffix = format!("m{}", std::process::id());
    create_resources(&silo.namesrv.to_string(), &suffix, &["java"]);
    let group = format!("sdk5-java-normal-{suffix}");
    let endpoint = silo.grpc.to_string();
    let mut hold = JavaSdk::spawn(
        "hold",
        &["--endpoint", &endpoint, "--suffix", &suffix, "--seconds", "300"],
        dir.path().join("hold.err"),
    );
    let (_, sent) = hold.wait_for("SENT", |l| l.starts_with("SENT "), Duration::from_secs(120), &silo);
    let message_id = sent.split_whitespace().nth(1).unwrap().to_owned();
    hold.wait_for("READY", |l| l == "READY", Duration::from_secs(60), &silo);

    let (connections, err) = mqadmin(silo.namesrv, &["consumerConnection", "-g", &group]);
    let row = connections.lines().skip_while(|l| !l.starts_with("#ClientId")).nth(1).unwrap_or_else(|| {
        panic!("consumerConnection lists nobody:\n{connections}\n{err}\nbroker log:\n{}", silo.log_tail())
    });
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
    hold.wait_for("the message consumed again", |l| l == again, Duration::from_secs(30), &silo);

    let (_, refused) =
        mqadmin(silo.namesrv, &["queryMsgById", "-t", &group, "-i", &message_id, "-g", &group, "-d", "nobody@1"]);
    assert!(refused.contains(&format!("The Consumer <{group}> <nobody@1> not online")), "{refused}");

    hold.kill();
}

/// A 5.x SDK consumer SIGKILLed while it holds unacknowledged messages: they come back to
/// another consumer of the group once each, as a second delivery attempt, when their invisible
/// time runs out. A SimpleConsumer's after the 10 s it asked for; a PushConsumer's (whose
/// messages the broker renews while the client lives) not while it lives, though it holds them
/// twice their invisible time, and once it is dead, at the deadline of their last renewal.
#[test]
fn a_5x_consumer_killed_holding_messages_gets_them_back_once_after_their_invisible_time() {
    use std::collections::BTreeMap;
    use std::time::Duration;

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Push consumers' messages invisible for 10 s and renewed 3 s before that runs out; a client
    // is gone 3 s after its last stream closed.
    let silo = SiloServer::start(
        &dir.path().join("store"),
        &[
            "--set",
            "defaultInvisibleTimeMills=10000",
            "--set",
            "renewAheadTimeMillis=3000",
            "--set",
            "grpcClientGraceMillis=3000",
        ],
    );
    let endpoint = silo.grpc.to_string();
    const COUNT: usize = 5;
    const INVISIBLE: Duration = Duration::from_secs(10);
    for kind in ["simple", "push"] {
        let suffix = format!("k{kind}{}", std::process::id());
        create_resources(&silo.namesrv.to_string(), &suffix, &["java"]);
        let common = ["--endpoint", endpoint.as_str(), "--suffix", suffix.as_str(), "--seconds", "240"];
        let mut hold = JavaSdk::spawn(
            "crash",
            &[&common[..], &["--role", "hold", "--kind", kind, "--count", "5", "--invisible-seconds", "10"]].concat(),
            dir.path().join(format!("hold-{kind}.err")),
        );
        let (held_at, _) = hold.wait_for("HOLDING", |l| l == "HOLDING", Duration::from_secs(120), &silo);
        let held: Vec<String> = hold
            .seen
            .iter()
            .filter_map(|(_, l)| l.strip_prefix("HELD ").map(|r| r.split_whitespace().next().unwrap().to_owned()))
            .collect();
        assert_eq!(held.len(), COUNT, "{kind}: {:?}", hold.seen);
        let mut take = JavaSdk::spawn(
            "crash",
            &[&common[..], &["--role", "take"]].concat(),
            dir.path().join(format!("take-{kind}.err")),
        );
        take.wait_for("TAKING", |l| l == "TAKING", Duration::from_secs(60), &silo);
        if kind == "push" {
            // Alive, it keeps them: nothing comes back in twice their invisible time.
            let early = take.drain(2 * INVISIBLE);
            assert!(early.is_empty(), "the broker let a live push consumer's messages go: {early:?}");
        }
        hold.kill();
        let mut got: BTreeMap<String, Vec<(Duration, String)>> = BTreeMap::new();
        while got.len() < COUNT {
            let (at, line) =
                take.wait_for("every held message back", |l| l.starts_with("GOT "), Duration::from_secs(90), &silo);
            let mut f = line.split_whitespace().skip(1);
            let (id, attempt) = (f.next().unwrap().to_owned(), f.next().unwrap().to_owned());
            got.entry(id).or_default().push((at.duration_since(held_at), attempt));
        }
        // And none of them again.
        for (_, line) in take.drain(Duration::from_secs(5)) {
            if let Some(id) = line.strip_prefix("GOT ").and_then(|r| r.split_whitespace().next()) {
                got.entry(id.to_owned()).or_default().push((Duration::ZERO, "again".into()));
            }
        }
        let mut ids: Vec<&String> = got.keys().collect();
        ids.sort();
        let mut want: Vec<&String> = held.iter().collect();
        want.sort();
        assert_eq!(ids, want, "{kind}: other messages came back than were held");
        for (id, deliveries) in &got {
            assert_eq!(deliveries.len(), 1, "{kind}: {id} came back {deliveries:?}");
            let (after, attempt) = &deliveries[0];
            assert_eq!(attempt, "2", "{kind}: {id}'s delivery attempt");
            // Not before its invisible time (the hold received it just before HOLDING).
            assert!(*after >= INVISIBLE - Duration::from_secs(2), "{kind}: {id} back {after:?} after it was held");
        }
        take.kill();
    }
}
