//! The Prometheus endpoint (`metricsExporterType=PROM`), scraped by a real Prometheus server
//! (Debian's package, `interop/prometheus/prometheus.sh`) on loopback during a produce and
//! consume run: the server's HTTP API must show what was sent and delivered, under Apache
//! RocketMQ 5.x's metric names and labels. A client that sends half a request and stalls is
//! closed while scrapes go on.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::SiloServer;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// `GET path` over HTTP/1.1: the status line's code and the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    // Chunked or not: the API's JSON and the metrics text are read as they are.
    Ok((code, body.to_owned()))
}

/// A URL query component.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of PromQL `query` at Prometheus on `api`, once it has one.
fn query(api: SocketAddr, q: &str) -> Option<f64> {
    let (code, body) = get(api, &format!("/api/v1/query?query={}", encode(q))).ok()?;
    if code != 200 {
        return None;
    }
    let start = body.find('{')?;
    let end = body.rfind('}')?;
    let v: serde_json::Value = serde_json::from_str(body.get(start..=end)?).ok()?;
    v["data"]["result"].get(0)?["value"].get(1)?.as_str()?.parse().ok()
}

/// Waits (bounded) until `q` evaluates to `want` at Prometheus; the last value seen.
fn await_value(api: SocketAddr, q: &str, want: f64) -> Option<f64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while Instant::now() < deadline {
        last = query(api, q);
        if last == Some(want) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    last
}

struct Prometheus(std::process::Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn silo(namesrv: SocketAddr, args: &[&str], stdin: Option<&str>) -> String {
    common::silo_cli(&namesrv.to_string(), args, stdin.unwrap_or(""))
}

#[test]
fn a_prometheus_server_scraping_silo_sees_what_was_sent_and_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let metrics = common::free_addr();
    let silo_server = SiloServer::start(
        &dir.path().join("store"),
        &["--set", "metricsExporterType=PROM", "--set", &format!("metricsPromExporterPort={}", metrics.port())],
    );
    let namesrv = silo_server.namesrv;

    let binary = Command::new("bash").arg(repo().join("interop/prometheus/prometheus.sh")).output().unwrap();
    assert!(binary.status.success(), "no Prometheus: {}", String::from_utf8_lossy(&binary.stderr));
    let binary = String::from_utf8_lossy(&binary.stdout).trim().to_owned();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: silo\n    static_configs:\n      - targets: ['{metrics}']\n"),
    )
    .unwrap();
    let api = common::free_addr();
    let _prometheus = Prometheus(
        Command::new(&binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("tsdb").display()))
            .arg(format!("--web.listen-address={api}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .unwrap(),
    );

    // A client that starts a request and stalls: closed once the header time is up, while
    // scrapes go on meanwhile.
    let mut stalled = TcpStream::connect(metrics).unwrap();
    stalled.write_all(b"GET /metr").unwrap();
    let stalled_at = Instant::now();
    let closed = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        stalled.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let n = stalled.read(&mut buf).unwrap_or(0);
        (stalled_at.elapsed(), String::from_utf8_lossy(&buf[..n]).into_owned())
    });

    let bodies: Vec<String> = (0..120).map(|i| format!("metric-body-{i:04}")).collect();
    let bytes: usize = bodies.iter().map(String::len).sum();
    silo(namesrv, &["produce", "-t", "PromTopic", "-f", "-"], Some(&(bodies.join("\n") + "\n")));
    let consumed =
        silo(namesrv, &["consume", "-t", "PromTopic", "-g", "PromGroup", "--from", "first", "--count", "120"], None);
    assert_eq!(consumed.lines().filter(|l| l.contains(" offset ")).count(), 120, "{consumed}");

    let sent = r#"sum(rocketmq_messages_in_total{topic="PromTopic",message_type="normal",cluster="DefaultCluster",node_type="broker"})"#;
    assert_eq!(await_value(api, sent, 120.0), Some(120.0), "{}", get(metrics, "/metrics").unwrap().1);
    let sent_bytes = r#"sum(rocketmq_throughput_in_total{topic="PromTopic"})"#;
    assert_eq!(await_value(api, sent_bytes, bytes as f64), Some(bytes as f64));
    let delivered = r#"sum(rocketmq_messages_out_total{topic="PromTopic",consumer_group="PromGroup"})"#;
    assert_eq!(await_value(api, delivered, 120.0), Some(120.0));
    let delivered_bytes = r#"sum(rocketmq_throughput_out_total{topic="PromTopic",consumer_group="PromGroup"})"#;
    assert_eq!(await_value(api, delivered_bytes, bytes as f64), Some(bytes as f64));
    let sizes = r#"sum(rocketmq_message_size_bucket{topic="PromTopic",le="1024.0"})"#;
    assert_eq!(await_value(api, sizes, 120.0), Some(120.0));
    let lag = r#"sum(rocketmq_consumer_lag_messages{topic="PromTopic",consumer_group="PromGroup"})"#;
    assert_eq!(await_value(api, lag, 0.0), Some(0.0));
    // A group that read 20 of the 120 lags by 100, and its oldest unread message has waited
    // since it was stored.
    let stored_by = Instant::now();
    silo(namesrv, &["consume", "-t", "PromTopic", "-g", "PromLagging", "--from", "first", "--count", "20"], None);
    let lagging = r#"sum(rocketmq_consumer_lag_messages{topic="PromTopic",consumer_group="PromLagging"})"#;
    assert_eq!(await_value(api, lagging, 100.0), Some(100.0), "{}", get(metrics, "/metrics").unwrap().1);
    let waited = r#"max(rocketmq_consumer_lag_latency_milliseconds{topic="PromTopic",consumer_group="PromLagging"})"#;
    let waited = query(api, waited).unwrap_or(0.0);
    let bound = stored_by.elapsed().as_millis() as f64 + 60_000.0;
    assert!(waited > 0.0 && waited < bound, "lag latency {waited} ms");
    let kept = query(api, "rocketmq_storage_message_reserve_time_milliseconds").unwrap_or(0.0);
    assert!(kept > 0.0 && kept < bound, "reserve time {kept} ms");
    let topics = query(api, "rocketmq_topic_number").unwrap_or(0.0);
    assert!(topics >= 1.0, "rocketmq_topic_number {topics}");
    let answered = r#"sum(rocketmq_rpc_latency_milliseconds_count{protocol_type="remoting",request_code="send_message_v2",result="success"})"#;
    let answered = query(api, answered).unwrap_or(0.0);
    assert!(answered >= 1.0, "send_message_v2 answered {answered} times");
    let up = r#"up{job="silo"}"#;
    assert_eq!(query(api, up), Some(1.0));

    let (after, answer) = closed.join().unwrap();
    assert!(
        after >= Duration::from_secs(5) && after < Duration::from_secs(20),
        "stalled client closed after {after:?}"
    );
    // Closed, or told 408, once the header time is up; never answered as a scrape.
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    let (code, text) = get(metrics, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(text.contains("# TYPE rocketmq_messages_in_total counter"), "{text}");
    assert_eq!(get(metrics, "/nothing").unwrap().0, 404);
}
