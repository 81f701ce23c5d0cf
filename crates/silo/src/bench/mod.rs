//! `silo bench`: load against any RocketMQ-compatible broker (Silo, Apache RocketMQ,
//! rocketmq-rust), through the name server, with Silo's own client.
//!
//! - `produce`: K producers (each its own connections), sync (one send in flight per
//!   producer) or pipelined (`--inflight` sends in flight per producer), single messages or
//!   batches, for a count or a duration.
//! - `consume`: catch-up over the backlog of a topic, every queue pulled at once.
//! - `e2e`: produce and consume at once; latency is born-to-consume, measured with a clock
//!   stamp in the body (same process, monotonic).
//! - `visibility`: from a send's acknowledgement until a pull returns the message, for a new
//!   topic, after the broker was idle, and under load.
//! - `pop`: POP consumption of the backlog, each message acknowledged (POP + ACK).
//! - `null-broker`: no load, the ceiling: a responder that acknowledges every send without
//!   storing it, to run a generator against.
//! - `timers`: 5.x timer messages (`TIMER_DELIVER_MS`): how late they arrive against the time
//!   they were due, or (`--pending`) what a broker holding many future timers costs while idle.
//!
//! `produce` and `e2e` run closed loop (each sender sends again as soon as it has its answer)
//! unless `--rate` gives a fixed offered rate: then they run open loop (`rate`), and latency
//! counts from each send's intended time.
//!
//! Reported: msgs/s, MB/s, latency percentiles from an HDR histogram, errors, and for a local
//! broker (`--broker-pid`) its CPU seconds and RSS, and for a broker built with allocation
//! counting, allocations and bytes allocated per message. A live progress line while it runs;
//! a JSON report (`--report`) with the machine and every parameter at the end.

mod consume;
mod e2e;
mod null_broker;
mod pop;
mod produce;
mod progress;
mod rate;
mod report;
mod sampler;
mod timers;
mod visibility;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, Subcommand, ValueEnum};
use hdrhistogram::Histogram;
use serde::Serialize;
use silo_client::{Admin, Client, ClientConfig, TopicSpec};

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
    /// Time from a send's acknowledgement until a pull returns the message: to a new topic,
    /// after the broker was idle, and under load.
    Visibility(VisibilityArgs),
    /// Timer messages: lateness of delivery against the due time, or (`--pending`) the
    /// broker's memory and CPU while it holds many timers due far in the future.
    Timers(TimersArgs),
    /// POP consumption of the backlog: pop, then acknowledge every message (POP + ACK).
    Pop(PopArgs),
    /// Not a load but its ceiling: a responder on loopback, name server and broker on one
    /// port, that answers every send SEND_OK at once and stores nothing.
    NullBroker(null_broker::NullBrokerArgs),
}

#[derive(Args, Debug, Clone, Serialize)]
struct PopArgs {
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    /// Consumer group.
    #[arg(short = 'g', long, default_value = "silo-bench-pop")]
    group: String,
    /// Stop after this many messages (default: the group's whole backlog at the start).
    #[arg(long)]
    count: Option<u64>,
    /// Consumers of the group, each with its own connections, popping at once.
    #[arg(long, default_value_t = 4)]
    consumers: usize,
    /// Messages per pop (at most 32).
    #[arg(long, default_value_t = 32)]
    batch: i32,
    /// Invisible time of the popped messages, milliseconds.
    #[arg(long, default_value_t = 60_000)]
    invisible_ms: u64,
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
    #[command(flatten)]
    #[serde(skip)]
    credentials: crate::cli::CredentialArgs,
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
    /// Offered rate, messages per second over all producers: open loop, sends due at fixed
    /// intervals and timed from then (each producer keeps at most --inflight in flight, 1 in
    /// sync mode). Without it, each sender sends again as soon as it has its answer.
    #[arg(long, value_name = "MSGS_PER_SEC")]
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<f64>,
    /// With --rate: seconds at the offered rate before measuring begins (sends of the warm-up
    /// are made but left out of the latencies), so that a broker that has to warm up (a JVM)
    /// is measured in its steady state.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    warmup: f64,
    /// Sort the messages into K classes for filtered consumption: message i (counted over all
    /// producers) gets the tag `T{i % K}` and the user property `a` = `i % K`, so that
    /// `consume --tag T3` or `consume --sql 'a = 3'` selects 1/K of them. 0: no tag, no property.
    #[arg(long, default_value_t = 0, value_name = "K")]
    classes: u64,
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
    /// Subscribe with this SQL92 selector (e.g. `a = 3`), evaluated by the broker; Apache
    /// RocketMQ needs `enablePropertyFilter=true`. The whole backlog is scanned and msgs/s
    /// counts the matched messages, `scanned_msgs_per_sec` the backlog read.
    #[arg(long, value_name = "EXPR", conflicts_with = "tag")]
    #[serde(skip_serializing_if = "Option::is_none")]
    sql: Option<String>,
    /// Subscribe to this tag expression (e.g. `T3`, `T1 || T2`) instead of all messages; as
    /// with --sql, the whole backlog is scanned.
    #[arg(long, value_name = "TAGS")]
    #[serde(skip_serializing_if = "Option::is_none")]
    tag: Option<String>,
}

#[derive(Args, Debug, Clone, Serialize)]
struct TimersArgs {
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    /// Timer messages to send.
    #[arg(long, default_value_t = 100_000)]
    count: u64,
    /// Their due times (TIMER_DELIVER_MS, absolute) are spread evenly over this many seconds...
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    spread: f64,
    /// ...beginning this many seconds after the send phase begins (lateness runs). Messages are
    /// sent in due-time order, so a sender faster than count / spread stays ahead of them.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    lead: f64,
    /// After the last due time, wait this long for stragglers before counting the rest missing.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    grace: f64,
    /// Body size in bytes (at least 16: the due time and the message's index).
    #[arg(long, default_value_t = 128)]
    size: usize,
    /// Producers, each with its own connections.
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Sends in flight per producer.
    #[arg(long, default_value_t = 32)]
    inflight: usize,
    /// Create the topic with this many queues first (0: leave it as it is).
    #[arg(long, default_value_t = 8)]
    queues: i32,
    /// Consumer group of the pulls (lateness runs).
    #[arg(short = 'g', long, default_value = "silo-bench-timers")]
    group: String,
    /// Pending mode: send --count timers due --pending-delay seconds ahead (spread over
    /// --spread), consume nothing, then measure the broker (--broker-pid) for --idle seconds.
    #[arg(long)]
    pending: bool,
    /// Pending mode: how far ahead the first timer is due, seconds (at most 3 days).
    #[arg(long, default_value_t = 3600.0, value_name = "SECONDS")]
    pending_delay: f64,
    /// Pending mode: seconds of the idle window, after the last send was acknowledged.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    idle: f64,
    /// Pending mode: first measure the broker this many seconds before sending anything, for
    /// its idle CPU and memory without timers (0: skip).
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    baseline: f64,
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
    /// Offered rate, messages per second over all producers: open loop, and the end-to-end
    /// latency counts from each message's intended send time (see `produce --rate`).
    #[arg(long, value_name = "MSGS_PER_SEC")]
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<f64>,
    /// With --rate: seconds at the offered rate before measuring begins (sends of the warm-up
    /// are made but left out of the latencies), so that a broker that has to warm up (a JVM)
    /// is measured in its steady state.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    warmup: f64,
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

/// The cases of `bench visibility`.
#[derive(Debug, Clone, Copy, ValueEnum, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Case {
    /// Each sample sends to a topic that did not exist, created by that send.
    NewTopic,
    /// An existing topic, after a pause with nothing to do (--idle-ms).
    AfterIdle,
    /// While background producers send to another topic at --load-rate.
    UnderLoad,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Self::NewTopic => "new-topic",
            Self::AfterIdle => "after-idle",
            Self::UnderLoad => "under-load",
        }
    }
}

#[derive(Args, Debug, Clone, Serialize)]
struct VisibilityArgs {
    /// The topic of the after-idle and under-load samples (the background load goes to
    /// TOPIC-load, the new-topic samples to new topics TOPIC-new-RUN-N).
    #[command(flatten)]
    #[serde(flatten)]
    common: Common,
    /// Samples per case.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Samples of the new-topic case, each creating a topic (default: --samples).
    #[arg(long)]
    new_topic_samples: Option<usize>,
    /// The cases to run, in this order.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Case::NewTopic, Case::AfterIdle, Case::UnderLoad])]
    cases: Vec<Case>,
    /// Pause before each after-idle sample, milliseconds.
    #[arg(long, default_value_t = 300)]
    idle_ms: u64,
    /// Pause before each new-topic and under-load sample, milliseconds.
    #[arg(long, default_value_t = 10)]
    gap_ms: u64,
    /// Offered rate of the under-load case's background producers, messages per second.
    #[arg(long, default_value_t = 20_000.0, value_name = "MSGS_PER_SEC")]
    load_rate: f64,
    /// Background producers of the under-load case.
    #[arg(long, default_value_t = 2)]
    load_producers: usize,
    /// Sends in flight per background producer, at most.
    #[arg(long, default_value_t = 32)]
    load_inflight: usize,
    /// Body size of every message.
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Create the sample and load topics with this many queues first (0: leave them as they are).
    #[arg(long, default_value_t = 8)]
    queues: i32,
    /// A message no pull returned this long after its acknowledgement counts as missed, ms.
    #[arg(long, default_value_t = 5_000)]
    max_wait_ms: u64,
    /// Consumer group of the pulls.
    #[arg(short = 'g', long, default_value = "silo-bench-visibility")]
    group: String,
    /// Keep the new-topic case's topics (by default they are deleted at the end).
    #[arg(long)]
    keep_topics: bool,
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

fn client_config(common: &Common) -> ClientConfig {
    let mut config = ClientConfig::new(&common.namesrv);
    config.timeout = Duration::from_millis(common.timeout_ms);
    common.credentials.apply(&mut config);
    config
}

fn client(common: &Common) -> Client {
    Client::new(client_config(common))
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    // The null broker on one thread: a responder that does nothing per request but read and
    // write should not pay for waking a second worker thread per request either.
    let mut builder = if matches!(args.workload, Workload::NullBroker(_)) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async move {
        match args.workload {
            Workload::Produce(a) => produce::produce(a).await,
            Workload::Consume(a) => consume::consume(a).await,
            Workload::E2e(a) => e2e::e2e(a).await,
            Workload::Visibility(a) => visibility::visibility(a).await,
            Workload::Timers(a) => timers::timers(a).await,
            Workload::Pop(a) => pop::pop(a).await,
            Workload::NullBroker(a) => null_broker::null_broker(a).await,
        }
    })
}

fn body_of(size: usize) -> Bytes {
    // Not all one byte, so that nothing along the way can compress it away.
    Bytes::from((0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)).collect::<Vec<u8>>())
}

async fn ensure_topic(common: &Common, queues: i32) -> anyhow::Result<()> {
    ensure_named_topic(common, &common.topic, queues).await
}

/// Creates `topic` with `queues` queues on every broker and waits until the name server routes it.
async fn ensure_named_topic(common: &Common, topic: &str, queues: i32) -> anyhow::Result<()> {
    if queues <= 0 {
        return Ok(());
    }
    let admin = Admin::new(client(common));
    admin
        .create_topic(None, &TopicSpec::new(topic, queues))
        .await
        .with_context(|| format!("cannot create topic {topic} with {queues} queues"))?;
    // The name server learns of the topic when the broker registers: wait for the route.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(route) = admin.route(topic).await?
            && route.queue_datas.iter().all(|q| q.write_queue_nums == queues)
            && !route.queue_datas.is_empty()
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("topic {topic} has no route with {queues} queues 60 s after it was created");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
