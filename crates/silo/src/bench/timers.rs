//! `silo bench timers`: 5.x timer messages (docs/protocol.md §4.13), against any broker.
//!
//! **Lateness** (the default). `--count` messages carry an absolute due time
//! (`TIMER_DELIVER_MS`, milliseconds since the epoch): message i is due at
//! `S + lead + i × spread / count`, where S is the wall-clock time the send phase begins, so the
//! due times cover `--spread` seconds evenly, the first `--lead` seconds after the first send.
//! `--producers` × `--inflight` senders take the messages in index order, so as long as they
//! send faster than `count / spread` messages a second every message reaches the broker before
//! it is due (those acknowledged only after their due time are counted: the broker stores them
//! as ordinary messages at once). Each body begins with the due time and the index (8 bytes
//! each, big-endian).
//!
//! A pull consumer reads every queue of the topic from where it ended when the run began, long
//! polling, and for each message records its lateness: the wall-clock time its pull returned
//! minus its due time, in µs (the broker and this process read the same clock). A negative
//! lateness is an early delivery. When everything sent has arrived, or `--grace` seconds after
//! the last due time, the rest is counted missing. Reported: the lateness percentiles over the
//! first receipt of each message (exact, from all samples), the early, missing and duplicate
//! counts, and the send phase.
//!
//! **Pending** (`--pending`). `--count` timers due `--pending-delay` seconds ahead (spread over
//! `--spread`) are sent, nothing consumes, and then for `--idle` seconds, with nothing else
//! happening, the broker processes (`--broker-pid`) are sampled: their CPU time and RSS, total
//! and anonymous, at the start, peak and end of that window. Reported with the send rate and
//! the send phase's own broker cost, and with `--baseline` the same figures over a window of
//! that length before anything was sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use bytes::Bytes;
use serde::Serialize;
use silo_client::{Admin, Message, MessageQueue, Producer, ProducerConfig, PullConsumer, Subscription};
use silo_wire::properties::keys;

use super::progress::progress;
use super::report::{Latency, Machine};
use super::sampler::{BrokerCost, BrokerSampler};
use super::{Counters, TimersArgs, body_of, client, ensure_topic, histogram};

/// Bytes of a body taken by the due time and the index.
const STAMP: usize = 16;
/// The furthest ahead a timer may be due (Apache's default `timerMaxDelaySec`, 3 days).
const MAX_DELAY_SECS: f64 = 3.0 * 86_400.0;
/// How long a pull may wait at the broker for a message.
const LONG_POLL: Duration = Duration::from_millis(1000);

pub(super) async fn timers(args: TimersArgs) -> anyhow::Result<()> {
    if args.count == 0 || args.producers == 0 || args.inflight == 0 {
        bail!("--count, --producers and --inflight must be at least 1");
    }
    if args.size < STAMP {
        bail!("--size must be at least {STAMP}: the body carries the due time and the index");
    }
    let ahead = if args.pending { args.pending_delay } else { args.lead };
    if !(args.spread >= 0.0 && ahead >= 0.0 && ahead + args.spread <= MAX_DELAY_SECS) {
        bail!("the timers must be due between now and 3 days ahead (--lead / --pending-delay plus --spread)");
    }
    ensure_topic(&args.common, args.queues).await?;
    if args.pending { pending(args).await } else { lateness(args).await }
}

/// Microseconds since the epoch.
fn now_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// When each message is due: `first_ms + i × spread / count`, milliseconds since the epoch.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    first_ms: i64,
    spread_ms: f64,
    count: u64,
}

impl Schedule {
    fn due_ms(&self, i: u64) -> i64 {
        self.first_ms + (i as f64 * self.spread_ms / self.count as f64) as i64
    }

    fn last_ms(&self) -> i64 {
        self.due_ms(self.count.saturating_sub(1))
    }
}

/// The body of message `i`: its due time and index, then filler.
fn timer_body(template: &Bytes, due_ms: i64, i: u64) -> Bytes {
    let mut body = template.to_vec();
    if let Some(due) = body.get_mut(..8) {
        due.copy_from_slice(&due_ms.to_be_bytes());
    }
    if let Some(index) = body.get_mut(8..STAMP) {
        index.copy_from_slice(&i.to_be_bytes());
    }
    Bytes::from(body)
}

/// The due time and index a body begins with.
fn stamp_of(body: &[u8]) -> Option<(i64, u64)> {
    let due = i64::from_be_bytes(body.get(..8)?.try_into().ok()?);
    let i = u64::from_be_bytes(body.get(8..STAMP)?.try_into().ok()?);
    Some((due, i))
}

/// What the send phase did.
#[derive(Debug, Serialize)]
struct SendPhase {
    msgs: u64,
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    elapsed_secs: f64,
    msgs_per_sec: f64,
    /// Acknowledged only at or after their due time: the broker may have stored them as
    /// ordinary messages at once (lateness runs).
    acked_after_due: u64,
    /// Send latency, µs.
    latency_us: Latency,
    #[serde(skip_serializing_if = "Option::is_none")]
    broker: Option<BrokerCost>,
}

/// Sends the `count` timers of `schedule`, in index order over all senders.
async fn send_all(args: &TimersArgs, schedule: Schedule, counters: &Arc<Counters>) -> anyhow::Result<SendPhase> {
    let template = body_of(args.size);
    let next = Arc::new(AtomicU64::new(0));
    let after_due = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.producers {
        let producer = Arc::new(Producer::new(client(&args.common), ProducerConfig::default()));
        for _ in 0..args.inflight {
            let (producer, counters, next, after_due) =
                (producer.clone(), counters.clone(), next.clone(), after_due.clone());
            let (topic, template, count) = (args.common.topic.clone(), template.clone(), args.count);
            workers.spawn(async move {
                let mut h = histogram();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let due = schedule.due_ms(i);
                    let body = timer_body(&template, due, i);
                    let len = body.len() as u64;
                    let msg = Message::new(body).with_property(keys::TIMER_DELIVER_MS, due.to_string());
                    let t = Instant::now();
                    match producer.send(&topic, &msg).await {
                        Ok(_) => {
                            let _ = h.record(t.elapsed().as_micros().max(1) as u64);
                            if now_micros() >= due.saturating_mul(1000) {
                                after_due.fetch_add(1, Ordering::Relaxed);
                            }
                            counters.msgs.fetch_add(1, Ordering::Relaxed);
                            counters.bytes.fetch_add(len, Ordering::Relaxed);
                        }
                        Err(e) => counters.error(1, &e),
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
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let msgs = counters.msgs.load(Ordering::Relaxed);
    Ok(SendPhase {
        msgs,
        errors: counters.errors.load(Ordering::Relaxed),
        first_error: counters.first_error.lock().ok().and_then(|e| e.clone()),
        elapsed_secs: secs,
        msgs_per_sec: msgs as f64 / secs,
        acked_after_due: after_due.load(Ordering::Relaxed),
        latency_us: Latency::of(&latency),
        broker: None,
    })
}

/// Signed percentiles of the lateness, µs (exact: every sample is kept).
#[derive(Debug, Serialize)]
struct SignedLatency {
    samples: u64,
    min: i64,
    p50: i64,
    p90: i64,
    p99: i64,
    p999: i64,
    max: i64,
    mean: f64,
}

impl SignedLatency {
    /// From samples sorted in ascending order.
    fn of(sorted: &[i64]) -> Self {
        let at = |q: f64| {
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
            sorted.get(rank - 1).copied().unwrap_or(0)
        };
        let sum: i128 = sorted.iter().map(|v| i128::from(*v)).sum();
        Self {
            samples: sorted.len() as u64,
            min: sorted.first().copied().unwrap_or(0),
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
            max: sorted.last().copied().unwrap_or(0),
            mean: if sorted.is_empty() { 0.0 } else { sum as f64 / sorted.len() as f64 },
        }
    }
}

#[derive(Debug, Serialize)]
struct LatenessReport<'a> {
    workload: &'static str,
    params: &'a TimersArgs,
    machine: Machine,
    /// Distinct timers received.
    msgs: u64,
    bytes: u64,
    /// Failed sends and pulls.
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    /// From the first send until the consumer stopped.
    elapsed_secs: f64,
    msgs_per_sec: f64,
    mb_per_sec: f64,
    /// Receipt minus due time over the first receipt of each timer, µs; negative is early.
    lateness_us: SignedLatency,
    /// Timers received before their due time.
    early_msgs: u64,
    /// Timers received more than one second (Apache's and Silo's timer precision) late.
    late_over_1s_msgs: u64,
    /// Acknowledged timers that had not arrived `grace_secs` after the last due time.
    missing_msgs: u64,
    /// Receipts of a timer already received.
    duplicate_msgs: u64,
    pull_errors: u64,
    /// Wall-clock times, ms since the epoch: the first and last due time, the last receipt.
    first_due_ms: i64,
    last_due_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_receipt_ms: Option<i64>,
    send: SendPhase,
    #[serde(skip_serializing_if = "Option::is_none")]
    broker: Option<BrokerCost>,
}

async fn lateness(args: TimersArgs) -> anyhow::Result<()> {
    let consumer = PullConsumer::new(client(&args.common), &args.group);
    let mut tails: Vec<(MessageQueue, i64)> = Vec::new();
    for q in consumer.queues(&args.common.topic).await? {
        let end = consumer.max_offset(&q).await?;
        tails.push((q, end));
    }
    let received = Arc::new(Counters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let last_receipt = Arc::new(AtomicU64::new(0));
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let start = Instant::now();
    let schedule = Schedule {
        first_ms: now_micros() / 1000 + (args.lead * 1000.0) as i64,
        spread_ms: args.spread * 1000.0,
        count: args.count,
    };
    let mut consumers = tokio::task::JoinSet::new();
    let sub = Arc::new(Subscription::parse("*"));
    for (mq, from) in tails {
        let (consumer, received, stop, sub, last_receipt) =
            (consumer.clone(), received.clone(), stop.clone(), sub.clone(), last_receipt.clone());
        consumers.spawn(async move {
            // (index, lateness µs) of every receipt, and the pulls that failed.
            let mut got: Vec<(u64, i64)> = Vec::new();
            let mut pull_errors = 0u64;
            let mut offset = from;
            while !stop.load(Ordering::Relaxed) {
                match consumer.pull(&mq, offset, 32, &sub, Some(LONG_POLL)).await {
                    Ok(r) => {
                        let now = now_micros();
                        for m in &r.messages {
                            let Some((due, i)) = stamp_of(m.raw_body()) else { continue };
                            got.push((i, now - due.saturating_mul(1000)));
                            received.bytes.fetch_add(m.raw_body().len() as u64, Ordering::Relaxed);
                        }
                        if !r.messages.is_empty() {
                            received.msgs.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
                            last_receipt.fetch_max(u64::try_from(now / 1000).unwrap_or(0), Ordering::Relaxed);
                        }
                        offset = r.next_begin_offset.max(offset);
                    }
                    Err(e) => {
                        pull_errors += 1;
                        received.error(1, &e);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
            (got, pull_errors)
        });
    }
    let sent = Arc::new(Counters::default());
    eprintln!("timers: sending {} timers due over {:.0} s from {:.1} s from now", args.count, args.spread, args.lead);
    let end_progress = progress(sent.clone(), "send", Some(args.count), None);
    let send = send_all(&args, schedule, &sent).await?;
    end_progress();
    eprintln!(
        "timers: {} sent in {:.1} s ({:.0} msgs/s, {} errors); receiving until {:.0} s after the last due time",
        send.msgs, send.elapsed_secs, send.msgs_per_sec, send.errors, args.grace
    );
    let end_progress = progress(received.clone(), "receive", Some(send.msgs), None);
    let give_up_ms = schedule.last_ms() + (args.grace * 1000.0) as i64;
    while received.msgs.load(Ordering::Relaxed) < send.msgs && now_micros() / 1000 < give_up_ms {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut all: Vec<(u64, i64)> = Vec::with_capacity(usize::try_from(send.msgs).unwrap_or(0));
    let mut pull_errors = 0;
    while let Some(done) = consumers.join_next().await {
        let (got, errors) = done?;
        all.extend(got);
        pull_errors += errors;
    }
    let elapsed = start.elapsed();
    end_progress();
    let broker = sampler.finish(send.msgs).await;

    // The first receipt of each timer counts; later ones are duplicates.
    all.sort_unstable();
    let before = all.len();
    all.dedup_by_key(|(i, _)| *i);
    let duplicates = (before - all.len()) as u64;
    let mut late: Vec<i64> = all.iter().map(|(_, l)| *l).collect();
    late.sort_unstable();
    let distinct = late.len() as u64;
    let early = late.iter().filter(|l| **l < 0).count() as u64;
    let over_1s = late.iter().filter(|l| **l > 1_000_000).count() as u64;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let bytes = received.bytes.load(Ordering::Relaxed);
    let last = last_receipt.load(Ordering::Relaxed);
    let report = LatenessReport {
        workload: "timers",
        params: &args,
        machine: Machine::read(),
        msgs: distinct,
        bytes,
        errors: send.errors + pull_errors,
        first_error: send.first_error.clone().or_else(|| received.first_error.lock().ok().and_then(|e| e.clone())),
        elapsed_secs: secs,
        msgs_per_sec: distinct as f64 / secs,
        mb_per_sec: bytes as f64 / secs / 1e6,
        lateness_us: SignedLatency::of(&late),
        early_msgs: early,
        late_over_1s_msgs: over_1s,
        missing_msgs: send.msgs.saturating_sub(distinct),
        duplicate_msgs: duplicates,
        pull_errors,
        first_due_ms: schedule.first_ms,
        last_due_ms: schedule.last_ms(),
        last_receipt_ms: (last > 0).then(|| i64::try_from(last).unwrap_or(i64::MAX)),
        send,
        broker,
    };
    let l = &report.lateness_us;
    let ms = |us: i64| us as f64 / 1000.0;
    println!(
        "timers: {} of {} sent timers received ({} missing, {} duplicates, {} early, {} over 1 s late); {} errors",
        report.msgs, report.send.msgs, report.missing_msgs, report.duplicate_msgs, early, over_1s, report.errors
    );
    println!(
        "lateness (ms): min {:.1} p50 {:.1} p90 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} mean {:.1}",
        ms(l.min),
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.p999),
        ms(l.max),
        l.mean / 1000.0
    );
    println!(
        "send: {} msgs in {:.2} s: {:.0} msgs/s, {} acknowledged after their due time",
        report.send.msgs, report.send.elapsed_secs, report.send.msgs_per_sec, report.send.acked_after_due
    );
    if let Some(e) = &report.first_error {
        println!("first error: {e}");
    }
    print_broker("broker over the run", report.broker.as_ref(), None);
    write_report(&args, &report)
}

/// The broker over the idle window of a pending run.
#[derive(Debug, Serialize)]
struct IdleWindow {
    secs: f64,
    cpu_percent: f64,
    broker: Option<BrokerCost>,
}

#[derive(Debug, Serialize)]
struct PendingReport<'a> {
    workload: &'static str,
    params: &'a TimersArgs,
    machine: Machine,
    /// Timers the broker acknowledged (all pending at the end).
    msgs: u64,
    bytes: u64,
    errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_error: Option<String>,
    /// The send phase.
    elapsed_secs: f64,
    msgs_per_sec: f64,
    mb_per_sec: f64,
    /// The measured window, the last this many seconds before the tool exits: the idle one.
    window_secs: f64,
    first_due_ms: i64,
    last_due_ms: i64,
    /// The broker before anything was sent (`--baseline`).
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<IdleWindow>,
    send: SendPhase,
    idle: IdleWindow,
    /// The broker over the idle window (as `idle.broker`).
    #[serde(skip_serializing_if = "Option::is_none")]
    broker: Option<BrokerCost>,
}

/// The broker processes over `secs` seconds of doing nothing.
async fn idle_window(args: &TimersArgs, secs: f64, msgs: u64) -> IdleWindow {
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(secs.max(0.0))).await;
    let secs = start.elapsed().as_secs_f64();
    let broker = sampler.finish(msgs).await;
    let cpu_percent = broker.as_ref().map_or(0.0, |b| 100.0 * b.cpu_seconds / secs.max(1e-9));
    IdleWindow { secs, cpu_percent, broker }
}

async fn pending(args: TimersArgs) -> anyhow::Result<()> {
    let baseline = if args.baseline > 0.0 {
        eprintln!("timers: measuring the broker for {:.0} s before sending", args.baseline);
        Some(idle_window(&args, args.baseline, 0).await)
    } else {
        None
    };
    let schedule = Schedule {
        first_ms: now_micros() / 1000 + (args.pending_delay * 1000.0) as i64,
        spread_ms: args.spread * 1000.0,
        count: args.count,
    };
    eprintln!(
        "timers: sending {} timers due {:.0} s from now (over {:.0} s), then {:.0} s idle",
        args.count, args.pending_delay, args.spread, args.idle
    );
    let sent = Arc::new(Counters::default());
    let sampler = BrokerSampler::start(&args.common.broker_pids, Admin::new(client(&args.common))).await;
    let end_progress = progress(sent.clone(), "send", Some(args.count), None);
    let mut send = send_all(&args, schedule, &sent).await?;
    end_progress();
    send.broker = sampler.finish(send.msgs).await;
    eprintln!(
        "timers: {} sent in {:.1} s ({:.0} msgs/s, {} errors); idle for {:.0} s",
        send.msgs, send.elapsed_secs, send.msgs_per_sec, send.errors, args.idle
    );
    let idle = idle_window(&args, args.idle, send.msgs).await;
    let bytes = sent.bytes.load(Ordering::Relaxed);
    let report = PendingReport {
        workload: "timers-pending",
        params: &args,
        machine: Machine::read(),
        msgs: send.msgs,
        bytes,
        errors: send.errors,
        first_error: send.first_error.clone(),
        elapsed_secs: send.elapsed_secs,
        msgs_per_sec: send.msgs_per_sec,
        mb_per_sec: bytes as f64 / send.elapsed_secs.max(1e-9) / 1e6,
        window_secs: idle.secs,
        first_due_ms: schedule.first_ms,
        last_due_ms: schedule.last_ms(),
        broker: idle.broker.clone(),
        baseline,
        idle,
        send,
    };
    println!(
        "timers-pending: {} timers sent in {:.2} s: {:.0} msgs/s, {} errors; send latency p50 {} µs p99 {} µs",
        report.msgs,
        report.send.elapsed_secs,
        report.msgs_per_sec,
        report.errors,
        report.send.latency_us.p50,
        report.send.latency_us.p99
    );
    if let Some(e) = &report.first_error {
        println!("first error: {e}");
    }
    if let Some(b) = &report.baseline {
        print_broker(&format!("broker before sending, {:.1} s", b.secs), b.broker.as_ref(), Some(b.cpu_percent));
    }
    print_broker("broker while sending", report.send.broker.as_ref(), None);
    let idle = &report.idle;
    print_broker(&format!("broker idle for {:.1} s", idle.secs), idle.broker.as_ref(), Some(idle.cpu_percent));
    write_report(&args, &report)
}

fn print_broker(what: &str, b: Option<&BrokerCost>, cpu_percent: Option<f64>) {
    let Some(b) = b else { return };
    let mib = |v: u64| v >> 20;
    println!(
        "{what}: {:.2} CPU s{}, RSS {} MiB at start, {} MiB peak, {} MiB at end (anonymous {} / {} / {} MiB)",
        b.cpu_seconds,
        cpu_percent.map_or_else(String::new, |p| format!(" ({p:.1} % of a core)")),
        mib(b.rss_start_bytes),
        mib(b.rss_peak_bytes),
        mib(b.rss_end_bytes),
        mib(b.anon_start_bytes),
        mib(b.anon_peak_bytes),
        mib(b.anon_end_bytes)
    );
}

fn write_report<R: Serialize>(args: &TimersArgs, report: &R) -> anyhow::Result<()> {
    if let Some(path) = &args.common.report {
        use anyhow::Context as _;
        std::fs::write(path, serde_json::to_vec_pretty(report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_cover_the_spread_evenly() {
        let s = Schedule { first_ms: 10_000, spread_ms: 60_000.0, count: 100_000 };
        assert_eq!(s.due_ms(0), 10_000);
        assert_eq!(s.due_ms(50_000), 40_000);
        assert_eq!(s.last_ms(), 69_999);
        let one = Schedule { first_ms: 5, spread_ms: 1000.0, count: 1 };
        assert_eq!((one.due_ms(0), one.last_ms()), (5, 5));
    }

    #[test]
    fn bodies_carry_the_due_time_and_index() {
        let body = timer_body(&body_of(32), 1_700_000_000_123, 42);
        assert_eq!(body.len(), 32);
        assert_eq!(stamp_of(&body), Some((1_700_000_000_123, 42)));
        assert_eq!(stamp_of(b"short"), None);
    }

    #[test]
    fn signed_percentiles_keep_early_samples() {
        let mut v: Vec<i64> = (-10..90).collect();
        v.sort_unstable();
        let l = SignedLatency::of(&v);
        assert_eq!((l.samples, l.min, l.max), (100, -10, 89));
        assert_eq!((l.p50, l.p99), (39, 88));
        assert!((l.mean - 39.5).abs() < 1e-9);
        assert_eq!(SignedLatency::of(&[]).samples, 0);
    }
}
