//! `silo bench`: load against any RocketMQ-compatible broker (Silo, Apache RocketMQ,
//! rocketmq-rust), through the name server, with Silo's own client.
//!
//! - `produce`: K producers (each its own connections), sync (one send in flight per
//!   producer) or pipelined (`--inflight` sends in flight per producer), single messages or
//!   batches, for a count or a duration.
//! - `consume`: catch-up over the backlog of a topic, every queue pulled at once.
//! - `e2e`: produce and consume at once; latency is born-to-consume, measured with a clock
//!   stamp in the body (same process, monotonic).
//!
//! Reported: msgs/s, MB/s, latency percentiles from an HDR histogram, errors, and for a local
//! broker (`--broker-pid`) its CPU seconds and RSS, and for a broker built with allocation
//! counting, allocations and bytes allocated per message. A live progress line while it runs;
//! a JSON report (`--report`) with the machine and every parameter at the end.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, Subcommand, ValueEnum};
use hdrhistogram::Histogram;
use serde::Serialize;
use silo_client::{
    Admin, Client, ClientConfig, Message, MessageQueue, Producer, ProducerConfig, PullConsumer, PullStatus,
    Subscription, TopicSpec,
};

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand, Debug)]
enum Workload {
    /// Send messages as fast as the broker takes them.
    Produce(ProduceArgs),
    /// Consume the backlog of a topic from its first offset (catch-up).
    Consume(ConsumeArgs),
    /// Produce and consume at once; latency from send to receipt.
    E2e(E2eArgs),
}

#[derive(Args, Debug, Clone, Serialize)]
struct Common {
    /// Name server address(es), `host:port;host:port` (default: $NAMESRV_ADDR, else 127.0.0.1:9876).
    #[arg(short = 'n', long, env = "NAMESRV_ADDR", default_value = "127.0.0.1:9876")]
    namesrv: String,
    #[arg(short = 't', long, default_value = "SiloBench")]
    topic: String,
    /// Write the JSON report here.
    #[arg(long)]
    #[serde(skip)]
    report: Option<PathBuf>,
    /// Process id of a local broker (repeat for its name server): report its CPU time and RSS.
    #[arg(long = "broker-pid")]
    broker_pids: Vec<u32>,
    /// Request timeout, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, ValueEnum, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    /// One send in flight per producer: each waits for its answer.
    Sync,
    /// `--inflight` sends in flight per producer.
    Pipelined,
}

#[derive(Args, Debug, Clone, Serialize)]
struct ProduceArgs {
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    /// Body size in bytes.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Stop after this many messages.
    #[arg(long)]
    count: Option<u64>,
    /// Stop after this many seconds (default 10 when --count is not given).
    #[arg(long)]
    duration: Option<f64>,
    /// Producers, each with its own connections.
    #[arg(long, default_value_t = 1)]
    producers: usize,
    #[arg(long, value_enum, default_value_t = Mode::Pipelined)]
    mode: Mode,
    /// Requests in flight per producer (pipelined mode).
    #[arg(long, default_value_t = 64)]
    inflight: usize,
    /// Messages per request (SEND_BATCH_MESSAGE when more than 1).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Create the topic with this many queues on every broker first (0: leave it as it is).
    #[arg(long, default_value_t = 8)]
    queues: i32,
}

#[derive(Args, Debug, Clone, Serialize)]
struct ConsumeArgs {
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    /// Consumer group.
    #[arg(short = 'g', long, default_value = "silo-bench-consumer")]
    group: String,
    /// Stop after this many messages (default: the whole backlog present at the start).
    #[arg(long)]
    count: Option<u64>,
    /// Messages per pull request.
    #[arg(long, default_value_t = 32)]
    pull_batch: i32,
}

#[derive(Args, Debug, Clone, Serialize)]
struct E2eArgs {
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Seconds to produce for.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Requests in flight per producer.
    #[arg(long, default_value_t = 16)]
    inflight: usize,
    #[arg(long, default_value_t = 8)]
    queues: i32,
    #[arg(short = 'g', long, default_value = "silo-bench-e2e")]
    group: String,
}

/// The machine a run was made on.
#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
}

impl Machine {
    pub fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
            .map_or_else(|| "unknown".into(), |m| m.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        Self {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            memory_bytes,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned(),
        }
    }
}

#[derive(Debug, Serialize)]
struct Latency {
    p50: u64,
    p90: u64,
    p99: u64,
    p999: u64,
    max: u64,
    mean: f64,
    samples: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        Self {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            mean: h.mean(),
            samples: h.len(),
        }
    }
}

/// What the broker processes cost over the run.
#[derive(Debug, Serialize, Default)]
struct BrokerCost {
    pids: Vec<u32>,
    cpu_seconds: f64,
    cpu_us_per_msg: f64,
    rss_start_bytes: u64,
    rss_peak_bytes: u64,
    /// Anonymous memory only (heap, stacks): RSS without the mapped store files, whose pages
    /// count towards RSS while they are resident but belong to the page cache.
    anon_start_bytes: u64,
    anon_peak_bytes: u64,
    /// Allocations per message, from a broker built with allocation counting.
    #[serde(skip_serializing_if = "Option::is_none")]
    allocs_per_msg: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alloc_bytes_per_msg: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Report<P: Serialize> {
    workload: &'static str,
    params: P,
    machine: Machine,
    msgs: u64,
    bytes: u64,
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    elapsed_secs: f64,
    msgs_per_sec: f64,
    mb_per_sec: f64,
    /// Send (produce), pull request (consume) or born-to-consume (e2e) latency, microseconds.
    latency_us: Latency,
    #[serde(skip_serializing_if = "Option::is_none")]
    produce_latency_us: Option<Latency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    broker: Option<BrokerCost>,
    /// This load generator's own allocations per message, when `silo` is built with
    /// `count-allocs`: the client's cost, next to the broker's.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_allocs_per_msg: Option<f64>,
}

/// This process's (allocations, bytes allocated), in a `count-allocs` build.
fn own_allocs() -> Option<(u64, u64)> {
    #[cfg(feature = "count-allocs")]
    return Some(crate::alloc_count::counts());
    #[cfg(not(feature = "count-allocs"))]
    None
}

/// Counters shared by the workers and the progress line.
#[derive(Debug, Default)]
struct Counters {
    msgs: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
}

impl Counters {
    fn error(&self, n: u64, e: &dyn std::fmt::Display) {
        self.errors.fetch_add(n, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if first.is_none() {
            *first = Some(e.to_string());
        }
    }
}

/// When to stop: after a number of messages (tickets) or at a deadline.
#[derive(Debug)]
struct Stop {
    tickets: Option<AtomicU64>,
    deadline: Option<Instant>,
    stopped: AtomicBool,
}

impl Stop {
    fn new(count: Option<u64>, duration: Option<f64>) -> Self {
        Self {
            tickets: count.map(AtomicU64::new),
            deadline: duration.map(|d| Instant::now() + Duration::from_secs_f64(d)),
            stopped: AtomicBool::new(false),
        }
    }

    /// Takes `n` messages' worth of work; `false` once the run is over.
    fn take(&self, n: u64) -> bool {
        if self.stopped.load(Ordering::Relaxed) || self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        match &self.tickets {
            None => true,
            Some(t) => t.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(n)).is_ok(),
        }
    }
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 100 s at 3 significant digits; the bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, 100_000_000, 3).expect("constant histogram bounds are valid")
}

fn client(common: &Common) -> Client {
    let mut config = ClientConfig::new(&common.namesrv);
    config.timeout = Duration::from_millis(common.timeout_ms);
    Client::new(config)
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        match args.workload {
            Workload::Produce(a) => produce(a).await,
            Workload::Consume(a) => consume(a).await,
            Workload::E2e(a) => e2e(a).await,
        }
    })
}

/// Samples the broker processes' RSS and CPU time while the run lasts.
struct BrokerSampler {
    pids: Vec<u32>,
    cpu_start: f64,
    rss_start: (u64, u64),
    peak: Arc<AtomicU64>,
    anon_peak: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    allocs_start: Option<(u64, u64)>,
    admin: Option<Admin>,
}

fn proc_cpu_seconds(pid: u32) -> f64 {
    // utime and stime are fields 14 and 15 of /proc/PID/stat, after the parenthesised name.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 are at 11 and 12 counting from the state (field 3). USER_HZ is 100.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// (VmRSS, RssAnon) of a process, bytes.
fn proc_rss_bytes(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("RssAnon:"))
}

fn rss_of(pids: &[u32]) -> (u64, u64) {
    pids.iter().map(|p| proc_rss_bytes(*p)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

async fn broker_allocs(admin: &Admin) -> Option<(u64, u64)> {
    let masters = admin.masters(None).await.ok()?;
    let mut total = (0u64, 0u64);
    let mut any = false;
    for (_, addr) in masters {
        let Ok(info) = admin.runtime_info(&addr).await else { continue };
        let get = |k: &str| info.table.get(k).and_then(|v| v.parse::<u64>().ok());
        if let (Some(n), Some(b)) = (get("siloAllocCount"), get("siloAllocBytes")) {
            total.0 += n;
            total.1 += b;
            any = true;
        }
    }
    any.then_some(total)
}

impl BrokerSampler {
    async fn start(pids: &[u32], admin: Admin) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let rss_start = rss_of(pids);
        let peak = Arc::new(AtomicU64::new(rss_start.0));
        let anon_peak = Arc::new(AtomicU64::new(rss_start.1));
        if !pids.is_empty() {
            let (pids, peak, anon_peak, done) = (pids.to_vec(), peak.clone(), anon_peak.clone(), done.clone());
            tokio::spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    let (rss, anon) = rss_of(&pids);
                    peak.fetch_max(rss, Ordering::Relaxed);
                    anon_peak.fetch_max(anon, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            });
        }
        let allocs_start = broker_allocs(&admin).await;
        Self {
            pids: pids.to_vec(),
            cpu_start: pids.iter().map(|p| proc_cpu_seconds(*p)).sum(),
            rss_start,
            peak,
            anon_peak,
            done,
            allocs_start,
            admin: Some(admin),
        }
    }

    async fn finish(mut self, msgs: u64) -> Option<BrokerCost> {
        self.done.store(true, Ordering::Relaxed);
        let per = |v: f64| if msgs == 0 { 0.0 } else { v / msgs as f64 };
        let mut cost = BrokerCost::default();
        if let (Some(start), Some(admin)) = (self.allocs_start, self.admin.take())
            && let Some(end) = broker_allocs(&admin).await
        {
            cost.allocs_per_msg = Some(per(end.0.saturating_sub(start.0) as f64));
            cost.alloc_bytes_per_msg = Some(per(end.1.saturating_sub(start.1) as f64));
        }
        if self.pids.is_empty() && cost.allocs_per_msg.is_none() {
            return None;
        }
        let cpu: f64 = self.pids.iter().map(|p| proc_cpu_seconds(*p)).sum::<f64>() - self.cpu_start;
        cost.pids = self.pids;
        cost.cpu_seconds = cpu;
        cost.cpu_us_per_msg = per(cpu * 1e6);
        cost.rss_start_bytes = self.rss_start.0;
        cost.rss_peak_bytes = self.peak.load(Ordering::Relaxed);
        cost.anon_start_bytes = self.rss_start.1;
        cost.anon_peak_bytes = self.anon_peak.load(Ordering::Relaxed);
        Some(cost)
    }
}

/// A progress line: a bar on a terminal, a plain line every 5 s otherwise.
fn progress(counters: Arc<Counters>, label: &'static str, total: Option<u64>, seconds: Option<f64>) -> impl FnOnce() {
    let done = Arc::new(AtomicBool::new(false));
    let tty = std::io::stderr().is_terminal();
    let bar = if tty {
        let bar = match (total, seconds) {
            (Some(n), _) => indicatif::ProgressBar::new(n),
            (None, Some(s)) => indicatif::ProgressBar::new((s * 1000.0) as u64),
            _ => indicatif::ProgressBar::new_spinner(),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {prefix} [{elapsed_precise}] {wide_bar} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(label);
        Some(bar)
    } else {
        None
    };
    let flag = done.clone();
    let handle = std::thread::spawn(move || {
        let start = Instant::now();
        let mut last = (Instant::now(), 0u64);
        let mut last_print = Instant::now();
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            let msgs = counters.msgs.load(Ordering::Relaxed);
            let now = Instant::now();
            let dt = now.duration_since(last.0).as_secs_f64();
            if dt < 1.0 {
                continue;
            }
            let rate = (msgs - last.1) as f64 / dt;
            last = (now, msgs);
            let errors = counters.errors.load(Ordering::Relaxed);
            let line = format!("{msgs} msgs, {rate:.0} msgs/s, {errors} errors");
            match &bar {
                Some(bar) => {
                    bar.set_position(if total.is_some() { msgs } else { start.elapsed().as_millis() as u64 });
                    bar.set_message(line);
                }
                None if last_print.elapsed() >= Duration::from_secs(5) => {
                    eprintln!("{label}: {:.0} s: {line}", start.elapsed().as_secs_f64());
                    last_print = Instant::now();
                }
                None => {}
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    });
    move || {
        done.store(true, Ordering::Relaxed);
        let _ = handle.join();
    }
}

fn body_of(size: usize) -> Bytes {
    // Not all one byte, so that nothing along the way can compress it away.
    Bytes::from((0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)).collect::<Vec<u8>>())
}

async fn ensure_topic(common: &Common, queues: i32) -> anyhow::Result<()> {
    if queues <= 0 {
        return Ok(());
    }
    let admin = Admin::new(client(common));
    admin
        .create_topic(None, &TopicSpec::new(&common.topic, queues))
        .await
        .with_context(|| format!("cannot create topic {} with {queues} queues", common.topic))?;
    // The name server learns of the topic when the broker registers: wait for the route.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(route) = admin.route(&common.topic).await?
            && route.queue_datas.iter().all(|q| q.write_queue_nums == queues)
            && !route.queue_datas.is_empty()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("topic {} has no route with {queues} queues 60 s after it was created", common.topic);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a run measured.
struct Outcome<'a> {
    counters: &'a Counters,
    /// `own_allocs()` when the measured work began.
    allocs_start: Option<(u64, u64)>,
    elapsed: Duration,
    latency: &'a Histogram<u64>,
    produce_latency: Option<&'a Histogram<u64>>,
    broker: Option<BrokerCost>,
}

fn finish_report<P: Serialize>(
    workload: &'static str,
    params: P,
    outcome: Outcome<'_>,
    report: Option<&PathBuf>,
) -> anyhow::Result<()> {
    let Outcome { counters, allocs_start, elapsed, latency, produce_latency, broker } = outcome;
    let allocs_end = own_allocs();
    let msgs = counters.msgs.load(Ordering::Relaxed);
    let bytes = counters.bytes.load(Ordering::Relaxed);
    let secs = elapsed.as_secs_f64().max(1e-9);
    let r = Report {
        workload,
        params,
        machine: Machine::read(),
        msgs,
        bytes,
        errors: counters.errors.load(Ordering::Relaxed),
        first_error: counters.first_error.lock().ok().and_then(|e| e.clone()),
        elapsed_secs: secs,
        msgs_per_sec: msgs as f64 / secs,
        mb_per_sec: bytes as f64 / secs / 1e6,
        latency_us: Latency::of(latency),
        produce_latency_us: produce_latency.map(Latency::of),
        broker,
        client_allocs_per_msg: allocs_start
            .zip(allocs_end)
            .filter(|_| msgs > 0)
            .map(|(a, b)| b.0.saturating_sub(a.0) as f64 / msgs as f64),
    };
    let l = &r.latency_us;
    println!(
        "{workload}: {msgs} msgs in {secs:.2} s: {:.0} msgs/s, {:.1} MB/s, {} errors",
        r.msgs_per_sec, r.mb_per_sec, r.errors
    );
    println!(
        "latency (µs): p50 {} p90 {} p99 {} p99.9 {} max {} mean {:.0}",
        l.p50, l.p90, l.p99, l.p999, l.max, l.mean
    );
    if let Some(e) = &r.first_error {
        println!("first error: {e}");
    }
    if let Some(b) = &r.broker {
        println!(
            "broker: {:.2} CPU s ({:.1} µs/msg), RSS {} MiB at start, {} MiB peak (anonymous {} MiB, {} MiB)",
            b.cpu_seconds,
            b.cpu_us_per_msg,
            b.rss_start_bytes >> 20,
            b.rss_peak_bytes >> 20,
            b.anon_start_bytes >> 20,
            b.anon_peak_bytes >> 20
        );
        if let (Some(a), Some(bytes)) = (b.allocs_per_msg, b.alloc_bytes_per_msg) {
            println!("broker allocations: {a:.2} per message, {bytes:.0} bytes per message");
        }
    }
    if let Some(a) = r.client_allocs_per_msg {
        println!("client (this process) allocations: {a:.2} per message");
    }
    if let Some(path) = report {
        std::fs::write(path, serde_json::to_vec_pretty(&r)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

async fn produce(args: ProduceArgs) -> anyhow::Result<()> {
    if args.size == 0 || args.batch == 0 || args.producers == 0 || args.inflight == 0 {
        bail!("--size, --batch, --producers and --inflight must be at least 1");
    }
    ensure_topic(&args.common, args.queues).await?;
    let duration = args.duration.or(if args.count.is_none() { Some(10.0) } else { None });
    let stop = Arc::new(Stop::new(args.count, duration));
    let counters = Arc::new(Counters::default());
    let body = body_of(args.size);
    let batch: Arc<Vec<Message>> = Arc::new((0..args.batch).map(|_| Message::new(body.clone())).collect());
    let per_producer = if args.mode == Mode::Sync { 1 } else { args.inflight };
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "produce", args.count, duration);
    let allocs_start = own_allocs();
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.producers {
        let producer = Arc::new(Producer::new(client(&args.common), ProducerConfig::default()));
        for _ in 0..per_producer {
            let (producer, stop, counters, batch) = (producer.clone(), stop.clone(), counters.clone(), batch.clone());
            let topic = args.common.topic.clone();
            workers.spawn(async move {
                let mut h = histogram();
                let n = batch.len() as u64;
                let bytes = n * batch.first().map_or(0, |m| m.body.len() as u64);
                while stop.take(n) {
                    let t = Instant::now();
                    let r = match batch.as_slice() {
                        [one] => producer.send(&topic, one).await,
                        many => producer.send_batch(&topic, many).await,
                    };
                    match r {
                        Ok(_) => {
                            let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                            counters.msgs.fetch_add(n, Ordering::Relaxed);
                            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Err(e) => counters.error(n, &e),
                    }
                }
                h
            });
        }
    }
    let mut latency = histogram();
    while let Some(h) = workers.join_next().await {
        latency.add(h?)?;
    }
    let elapsed = start.elapsed();
    end_progress();
    let msgs = counters.msgs.load(Ordering::Relaxed);
    let broker = sampler.finish(msgs).await;
    let outcome =
        Outcome { counters: &counters, allocs_start, elapsed, latency: &latency, produce_latency: None, broker };
    finish_report("produce", &args, outcome, args.common.report.as_ref())
}

async fn consume(args: ConsumeArgs) -> anyhow::Result<()> {
    let consumer = PullConsumer::new(client(&args.common), &args.group);
    let queues = consumer.queues(&args.common.topic).await?;
    let mut plan: Vec<(MessageQueue, i64, i64)> = Vec::new();
    for q in queues {
        let (min, max) = (consumer.min_offset(&q).await?, consumer.max_offset(&q).await?);
        plan.push((q, min, max));
    }
    let backlog: i64 = plan.iter().map(|(_, min, max)| max - min).sum();
    let target = args.count.unwrap_or(u64::try_from(backlog).unwrap_or(0));
    if target == 0 {
        bail!("topic {} has no backlog to consume (produce some first)", args.common.topic);
    }
    let counters = Arc::new(Counters::default());
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(counters.clone(), "consume", Some(target), None);
    let allocs_start = own_allocs();
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    let sub = Arc::new(Subscription::parse("*"));
    for (mq, min, max) in plan {
        let (consumer, counters, sub) = (consumer.clone(), counters.clone(), sub.clone());
        let pull_batch = args.pull_batch;
        workers.spawn(async move {
            let mut h = histogram();
            let mut offset = min;
            while offset < max && counters.msgs.load(Ordering::Relaxed) < target {
                let t = Instant::now();
                match consumer.pull(&mq, offset, pull_batch, &sub, None).await {
                    Ok(r) => {
                        let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                        let bytes: u64 = r.messages.iter().map(|m| m.raw_body().len() as u64).sum();
                        counters.msgs.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                        counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        if r.status != PullStatus::Found && r.next_begin_offset <= offset {
                            break; // nothing more where the backlog was said to be
                        }
                        offset = r.next_begin_offset;
                    }
                    Err(e) => {
                        counters.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            h
        });
    }
    let mut latency = histogram();
    while let Some(h) = workers.join_next().await {
        latency.add(h?)?;
    }
    let elapsed = start.elapsed();
    end_progress();
    let broker = sampler.finish(counters.msgs.load(Ordering::Relaxed)).await;
    let outcome =
        Outcome { counters: &counters, allocs_start, elapsed, latency: &latency, produce_latency: None, broker };
    finish_report("consume", &args, outcome, args.common.report.as_ref())
}

async fn e2e(args: E2eArgs) -> anyhow::Result<()> {
    if args.size < 8 {
        bail!("--size must be at least 8: the body carries the send time");
    }
    ensure_topic(&args.common, args.queues).await?;
    let consumer = PullConsumer::new(client(&args.common), &args.group);
    let mut tails: BTreeMap<MessageQueue, i64> = BTreeMap::new();
    for q in consumer.queues(&args.common.topic).await? {
        let end = consumer.max_offset(&q).await?;
        tails.insert(q, end);
    }
    let clock = Instant::now();
    let stop = Arc::new(Stop::new(None, Some(args.duration)));
    let sent = Arc::new(Counters::default());
    let received = Arc::new(Counters::default());
    let producing = Arc::new(AtomicBool::new(true));
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(received.clone(), "e2e", None, Some(args.duration));
    let allocs_start = own_allocs();
    // Consumers: one task per queue, long polling.
    let mut consumers = tokio::task::JoinSet::new();
    let sub = Arc::new(Subscription::parse("*"));
    for (mq, start) in tails {
        let (consumer, received, sent, producing, sub) =
            (consumer.clone(), received.clone(), sent.clone(), producing.clone(), sub.clone());
        consumers.spawn(async move {
            let mut h = histogram();
            let mut offset = start;
            let mut drain_deadline = None;
            loop {
                if !producing.load(Ordering::Relaxed) {
                    let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + Duration::from_secs(5));
                    let all_in = received.msgs.load(Ordering::Relaxed) >= sent.msgs.load(Ordering::Relaxed);
                    if all_in || Instant::now() >= deadline {
                        break;
                    }
                }
                match consumer.pull(&mq, offset, 32, &sub, Some(Duration::from_millis(200))).await {
                    Ok(r) => {
                        let now = clock.elapsed().as_micros() as u64;
                        for m in &r.messages {
                            let stamp =
                                m.raw_body().get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_be_bytes);
                            let _ = h.record(now.saturating_sub(stamp).max(1));
                            received.bytes.fetch_add(m.raw_body().len() as u64, Ordering::Relaxed);
                        }
                        received.msgs.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                        offset = r.next_begin_offset.max(offset);
                    }
                    Err(e) => {
                        received.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            h
        });
    }
    let start = Instant::now();
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..args.producers {
        let producer = Arc::new(Producer::new(client(&args.common), ProducerConfig::default()));
        for _ in 0..args.inflight {
            let (producer, stop, sent) = (producer.clone(), stop.clone(), sent.clone());
            let (topic, size) = (args.common.topic.clone(), args.size);
            producers.spawn(async move {
                let mut h = histogram();
                let mut body = vec![0u8; size];
                while stop.take(1) {
                    let t = Instant::now();
                    let stamp = clock.elapsed().as_micros() as u64;
                    if let Some(head) = body.get_mut(..8) {
                        head.copy_from_slice(&stamp.to_be_bytes());
                    }
                    match producer.send(&topic, &Message::new(body.clone())).await {
                        Ok(_) => {
                            let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                            sent.msgs.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => sent.error(1, &e),
                    }
                }
                h
            });
        }
    }
    let mut produce_latency = histogram();
    while let Some(h) = producers.join_next().await {
        produce_latency.add(h?)?;
    }
    producing.store(false, Ordering::Relaxed);
    let mut latency = histogram();
    while let Some(h) = consumers.join_next().await {
        latency.add(h?)?;
    }
    let elapsed = start.elapsed();
    end_progress();
    let broker = sampler.finish(received.msgs.load(Ordering::Relaxed)).await;
    let (s, r) = (sent.msgs.load(Ordering::Relaxed), received.msgs.load(Ordering::Relaxed));
    if r < s {
        received.error(s - r, &format!("{} of {s} sent messages were not received within 5 s", s - r));
    }
    received.errors.fetch_add(sent.errors.load(Ordering::Relaxed), Ordering::Relaxed);
    let outcome = Outcome {
        counters: &received,
        allocs_start,
        elapsed,
        latency: &latency,
        produce_latency: Some(&produce_latency),
        broker,
    };
    finish_report("e2e", &args, outcome, args.common.report.as_ref())
}
