//! Interop scenarios for Silo driven by the stock Rust RocketMQ client (`rocketmq-client-rust`).
//!
//! Usage: `silo-interop-rust SCENARIO --namesrv HOST:PORT [--count N] [--timeout SECS]`
//!
//! Scenarios:
//!   produce-consume  N synchronous sends (distinct bodies and keys, tag TagA) to a new topic, each
//!                    checked for SEND_OK; then a clustering push consumer subscribed with "*" from
//!                    the first offset must receive every body within the timeout.
//!
//! Prints `PASS <scenario> <details>` and exits 0, or prints the differences and exits 1
//! (2 for a usage error). Client logs go to stderr; `RUST_LOG` tunes them (default `warn`).

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;

use rocketmq_client_rust::ClientResult;
use rocketmq_client_rust::ClientRuntime;
use rocketmq_client_rust::ClientRuntimeConfig;
use rocketmq_client_rust::ConsumeConcurrentlyContext;
use rocketmq_client_rust::ConsumeConcurrentlyStatus;
use rocketmq_client_rust::DefaultMQProducer;
use rocketmq_client_rust::DefaultMQPushConsumer;
use rocketmq_client_rust::MQPushConsumer;
use rocketmq_client_rust::MessageListenerConcurrently;
use rocketmq_client_rust::SendStatus;
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_observability::TelemetryRuntimeGuard;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::RuntimeOwner;

const TAG: &str = "TagA";
const SEND_TIMEOUT_MS: u64 = 5_000;

struct Config {
    scenario: String,
    namesrv: String,
    count: usize,
    timeout: Duration,
}

fn usage() -> String {
    "usage: silo-interop-rust produce-consume --namesrv HOST:PORT [--count N] [--timeout SECS]".to_string()
}

fn parse_args() -> Result<Config, String> {
    let mut args = std::env::args().skip(1);
    let mut scenario = None;
    let mut namesrv = None;
    let mut count = 50usize;
    let mut timeout = Duration::from_secs(60);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "--namesrv" => namesrv = Some(value("--namesrv")?),
            "--count" => count = value("--count")?.parse().map_err(|e| format!("--count: {e}"))?,
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: u64 = v.trim_end_matches('s').parse().map_err(|e| format!("--timeout: {e}"))?;
                timeout = Duration::from_secs(secs);
            }
            "-h" | "--help" => return Err(usage()),
            s if s.starts_with('-') => return Err(format!("unknown flag {s}\n{}", usage())),
            s if scenario.is_none() => scenario = Some(s.to_string()),
            s => return Err(format!("unexpected argument {s}\n{}", usage())),
        }
    }
    let scenario = scenario.ok_or_else(usage)?;
    if scenario != "produce-consume" && scenario != "all" {
        return Err(format!("unknown scenario {scenario}\n{}", usage()));
    }
    let namesrv = namesrv.ok_or_else(|| format!("--namesrv is required\n{}", usage()))?;
    if count == 0 {
        return Err("--count must be at least 1".to_string());
    }
    Ok(Config { scenario, namesrv, count, timeout })
}

/// One delivery seen by the push consumer.
#[derive(Debug, Clone)]
struct Delivery {
    topic: String,
    tag: Option<String>,
    keys: Option<Vec<String>>,
    queue_id: i32,
    queue_offset: i64,
    msg_id: String,
}

/// Deliveries keyed by body, shared between the listener and the waiting task.
#[derive(Default)]
struct Collector {
    by_body: Mutex<HashMap<String, Vec<Delivery>>>,
}

struct Listener(Arc<Collector>);

impl MessageListenerConcurrently for Listener {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        let mut map = self.0.by_body.lock().expect("collector lock");
        for m in msgs {
            let body = m.body().map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
            map.entry(body).or_default().push(Delivery {
                topic: m.topic().to_string(),
                tag: m.get_tags().map(|t| t.to_string()),
                keys: m.message_inner().keys(),
                queue_id: m.queue_id(),
                queue_offset: m.queue_offset(),
                msg_id: m.msg_id().to_string(),
            });
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

struct Expected {
    key: String,
}

fn run_id() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default();
    format!("{}_{}", std::process::id(), nanos % 1_000_000_000_000)
}

/// Runs produce-consume; returns (details, problems).
async fn produce_consume(cfg: &Config, runtime: Arc<ClientRuntime>) -> (String, Vec<String>) {
    let run = run_id();
    let topic = format!("RustInteropPC_{run}");
    let mut details = format!("topic={topic}");
    let mut problems = Vec::new();

    // ---- produce ----
    let mut producer = DefaultMQProducer::builder(runtime.clone())
        .producer_group(format!("RustInteropPG_{run}"))
        .name_server_addr(cfg.namesrv.clone())
        .build();
    if let Err(e) = producer.start().await {
        problems.push(format!("producer start: {e}"));
        return (details, problems);
    }
    let mut expected: BTreeMap<String, Expected> = BTreeMap::new();
    let mut queues: BTreeMap<i32, usize> = BTreeMap::new();
    let send_start = Instant::now();
    for i in 0..cfg.count {
        let body = format!("rust-interop {run} #{i:03}");
        let key = format!("rk-{run}-{i:03}");
        let msg = Message::builder()
            .topic(topic.as_str())
            .tags(TAG)
            .keys(vec![key.clone()])
            .body_slice(body.as_bytes())
            .build_unchecked();
        match producer.send_with_timeout(msg, SEND_TIMEOUT_MS).await {
            Ok(Some(res)) => {
                let mut bad = Vec::new();
                if res.send_status != SendStatus::SendOk {
                    bad.push(format!("status {}", res.send_status));
                }
                match &res.message_queue {
                    Some(mq) => {
                        if mq.topic().as_str() != topic {
                            bad.push(format!("queue topic {:?}", mq.topic().as_str()));
                        }
                        *queues.entry(mq.queue_id()).or_default() += 1;
                    }
                    None => bad.push("no message queue".to_string()),
                }
                if res.msg_id.as_ref().is_none_or(|m| m.is_empty()) {
                    bad.push("empty msgId".to_string());
                }
                if bad.is_empty() {
                    expected.insert(body, Expected { key });
                } else {
                    problems.push(format!("send #{i}: {} (result {res:?})", bad.join(", ")));
                }
            }
            Ok(None) => problems.push(format!("send #{i}: no SendResult returned")),
            Err(e) => problems.push(format!("send #{i}: error: {e}")),
        }
        // Stop early if the broker rejects everything; the first errors tell the story.
        if expected.is_empty() && problems.len() >= 3 {
            problems.push(format!("stopping after {} failed sends", problems.len()));
            break;
        }
    }
    producer.shutdown().await;
    details.push_str(&format!(
        " sent={}/{} sendTime={}ms queues={:?}",
        expected.len(),
        cfg.count,
        send_start.elapsed().as_millis(),
        queues
    ));
    if expected.is_empty() {
        return (details, problems);
    }

    // ---- consume ----
    let collector = Arc::new(Collector::default());
    let mut consumer = DefaultMQPushConsumer::builder(runtime.clone())
        .consumer_group(format!("RustInteropCG_{run}"))
        .name_server_addr(cfg.namesrv.clone())
        .message_model(MessageModel::Clustering)
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
        .build();
    if let Err(e) = consumer.subscribe(topic.as_str(), "*").await {
        problems.push(format!("consumer subscribe({topic}, \"*\"): {e}"));
        return (details, problems);
    }
    consumer.register_message_listener_concurrently(Listener(collector.clone()));
    let consume_start = Instant::now();
    if let Err(e) = consumer.start().await {
        problems.push(format!("consumer start: {e}"));
        consumer.shutdown().await;
        return (details, problems);
    }
    let deadline = consume_start + cfg.timeout;
    let mut all_in = false;
    while Instant::now() < deadline {
        {
            let map = collector.by_body.lock().expect("collector lock");
            if expected.keys().all(|b| map.contains_key(b)) {
                all_in = true;
            }
        }
        if all_in {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let consume_ms = consume_start.elapsed().as_millis();
    if all_in {
        // A short grace period to notice duplicates or stray deliveries.
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }
    consumer.shutdown().await;

    // ---- check ----
    let map = collector.by_body.lock().expect("collector lock").clone();
    let mut received = 0usize;
    let mut duplicates = 0usize;
    let mut missing = Vec::new();
    for (body, exp) in &expected {
        let Some(ds) = map.get(body) else {
            missing.push(body.clone());
            continue;
        };
        received += 1;
        duplicates += ds.len() - 1;
        let d = &ds[0];
        if d.topic != topic {
            problems.push(format!("{body:?}: topic {:?}, want {topic:?}", d.topic));
        }
        if d.tag.as_deref() != Some(TAG) {
            problems.push(format!("{body:?}: tag {:?}, want {TAG:?}", d.tag));
        }
        if d.keys.as_deref() != Some(std::slice::from_ref(&exp.key)) {
            problems.push(format!("{body:?}: keys {:?}, want [{:?}]", d.keys, exp.key));
        }
        if d.msg_id.is_empty() {
            problems.push(format!("{body:?}: empty msgId (queue {} offset {})", d.queue_id, d.queue_offset));
        }
    }
    if !missing.is_empty() {
        problems.push(format!(
            "{} of {} message(s) not received within {}s: {}",
            missing.len(),
            expected.len(),
            cfg.timeout.as_secs(),
            missing.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
                + if missing.len() > 10 { ", ..." } else { "" }
        ));
    }
    for (body, ds) in &map {
        if !expected.contains_key(body) {
            let d = &ds[0];
            problems.push(format!(
                "unexpected delivery {body:?} (topic {}, tag {:?}, queue {} offset {})",
                d.topic, d.tag, d.queue_id, d.queue_offset
            ));
        }
    }
    details.push_str(&format!(
        " received={received}/{} duplicates={duplicates} consumeTime={consume_ms}ms",
        expected.len()
    ));
    (details, problems)
}

fn main() -> ExitCode {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();

    let owner = match RuntimeOwner::new() {
        Ok(o) => o,
        Err(e) => {
            println!("FAIL {}: cannot create runtime: {e}", cfg.scenario);
            return ExitCode::from(1);
        }
    };
    let telemetry = TelemetryRuntimeGuard::noop();
    let client_runtime = match ClientRuntime::try_new(
        owner.root_context().component("interop-client"),
        ClientRuntimeConfig::default(),
        telemetry.handle(),
    ) {
        Ok(r) => r,
        Err(e) => {
            println!("FAIL {}: cannot create client runtime: {e}", cfg.scenario);
            return ExitCode::from(1);
        }
    };

    let name = "produce-consume";
    // Sends (bounded by their own timeouts) plus the consume wait, plus slack for start/shutdown.
    let limit = cfg.timeout + Duration::from_millis(SEND_TIMEOUT_MS * cfg.count as u64 / 4) + Duration::from_secs(60);
    let outcome = owner.block_on(async {
        let res = tokio::time::timeout(limit, produce_consume(&cfg, client_runtime.clone())).await;
        let report = tokio::time::timeout(Duration::from_secs(15), client_runtime.shutdown()).await;
        if let Ok(r) = &report {
            if !r.is_healthy() {
                eprintln!("note: client runtime shutdown not clean: {}", r.to_json());
            }
        }
        res
    });
    let _ = owner.shutdown_runtime_blocking_with_timeout(Duration::from_secs(10));

    match outcome {
        Err(_) => {
            println!("FAIL {name}: no result after {}s (a client call did not return)", limit.as_secs());
            ExitCode::from(1)
        }
        Ok((details, problems)) if problems.is_empty() => {
            println!("PASS {name} {details}");
            ExitCode::SUCCESS
        }
        Ok((details, problems)) => {
            println!("FAIL {name} {details}: {} problem(s)", problems.len());
            for p in &problems {
                println!("  - {p}");
            }
            ExitCode::from(1)
        }
    }
}
