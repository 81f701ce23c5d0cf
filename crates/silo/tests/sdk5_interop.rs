//! The RocketMQ 5.x gRPC SDKs work against Silo through Apache's unmodified proxy 5.3.3 (cluster
//! mode, loopback only), each with the suite of `interop/sdk5/<language>/` that was first run
//! against Apache's own broker behind the same proxy: normal, FIFO, delay and transaction
//! messages (an orphaned transaction recovered through the check-back), SimpleConsumer receive,
//! ack, change of invisible duration and redelivery, PushConsumer retries and the dead-letter
//! queue. One Silo and one proxy serve every language, one after the other.
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

#[test]
fn every_5x_sdk_works_through_apaches_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let silo = SiloServer::start(
        &dir.path().join("store"),
        // Transaction checks every 2 s after 2 s, as in client_interop.rs: the orphaned
        // transaction of each suite is recovered within seconds.
        &[
            "--set",
            "transactionCheckInterval=2000",
            "--set",
            "transactionTimeOut=2000",
            "--set",
            "transactionCheckMax=60",
        ],
    );
    let proxy = Proxy::start(&dir.path().join("proxy"), silo.namesrv);

    let ports = [silo.namesrv.port(), silo.broker.port(), proxy.grpc.port(), proxy.remoting.port()];
    let found = listeners(&ports);
    for port in [proxy.grpc.port(), proxy.remoting.port()] {
        assert!(found.iter().any(|(_, p)| *p == port), "nothing listens on {port}: {found:?}");
    }
    let elsewhere: Vec<&(String, u16)> =
        found.iter().filter(|(addr, _)| addr != "127.0.0.1" && addr != "[::ffff:127.0.0.1]").collect();
    assert!(elsewhere.is_empty(), "listening beyond loopback: {elsewhere:?}");

    let namesrv = silo.namesrv.to_string();
    let suffix = format!("s{}", std::process::id());
    let mut args = vec!["--namesrv", namesrv.as_str(), "--suffix", suffix.as_str()];
    args.extend(LANGUAGES);
    let (ok, stdout, stderr) = run("interop/sdk5/resources.sh", &args);
    assert!(ok, "resources.sh failed\nstdout:\n{stdout}\nstderr:\n{stderr}");

    let endpoint = proxy.grpc.to_string();
    let mut failed = Vec::new();
    let mut report = String::new();
    for lang in LANGUAGES {
        let script = format!("interop/sdk5/{lang}/run.sh");
        let (ok, stdout, stderr) = run(&script, &["--endpoint", &endpoint, "--namesrv", &namesrv, "--suffix", &suffix]);
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
    eprintln!("{report}");
    assert!(failed.is_empty(), "suites failed:\n{}\nbroker log:\n{}", failed.join("\n"), silo.log_tail());
}
