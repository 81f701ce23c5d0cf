//! Open-loop load at a fixed offered rate (`--rate`), as the OpenMessaging Benchmark drives it:
//! sends fall due at fixed intervals whatever the broker does, and each is measured from the
//! moment it was due, not from when it went out, so that a broker that falls behind is charged
//! for the wait (no coordinated omission).
//!
//! One scheduler thread issues the tickets (intended send times) at the offered rate, round
//! robin over the producers: each producer's sends are evenly spaced and the producers
//! interleave. The thread sleeps on the OS clock with its timer slack cut to a microsecond, so
//! it wakes within a few microseconds of a send's time (by default Linux lets a sleep run 50 µs
//! late, and tokio's timer rounds every wait up to the next millisecond). Each producer's
//! workers take its tickets in order; their number bounds its sends in flight. A ticket that
//! finds every worker busy waits, and the wait counts in its latency; how late each send went
//! out is reported as the schedule lag.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use silo_client::{ClientError, Producer};
use tokio::sync::{Mutex, mpsc};

use super::{Counters, histogram};

/// Once the schedule has ended, tickets still waiting for a worker are sent for this long; the
/// rest are counted as unsent.
const DRAIN: Duration = Duration::from_secs(5);
/// Tickets a producer may have waiting for a worker; beyond that the scheduler waits too (the
/// tickets keep their intended times, so the delay is still charged).
const QUEUE: usize = 1 << 16;

/// An open-loop run: how much to send, how fast, by how many producers.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// Offered messages per second, all producers together.
    pub(super) rate: f64,
    /// Messages per send (a batch counts as many).
    pub(super) msgs_per_send: u64,
    pub(super) bytes_per_send: u64,
    pub(super) producers: usize,
    /// Workers per producer: the most sends it has in flight.
    pub(super) inflight: usize,
    /// Stop after this many messages are scheduled.
    pub(super) count: Option<u64>,
    /// Stop scheduling after this long.
    pub(super) duration: Option<Duration>,
    /// Stop scheduling when this is set.
    pub(super) cancel: Option<Arc<AtomicBool>>,
    /// Sends due in this first stretch of the schedule are made but not recorded (the
    /// duration and count include it).
    pub(super) warmup: Duration,
}

/// What an open-loop run measured.
#[derive(Debug)]
pub(super) struct OpenLoop {
    /// From each send's intended time to its acknowledgement, µs.
    pub(super) latency: Histogram<u64>,
    /// From each send's intended time to the moment it went out, µs.
    pub(super) lag: Histogram<u64>,
    /// Messages the schedule called for.
    pub(super) scheduled_msgs: u64,
    /// Scheduled messages never sent: still waiting for a worker when the drain time ran out.
    pub(super) unsent_msgs: u64,
    /// From the first intended send time until the last worker finished.
    pub(super) elapsed: Duration,
}

/// Runs `plan`: `send(producer, intended)` performs one send of producer `producer` that fell due
/// at `intended`. Acknowledged messages and bytes, and failures, go to `counters`.
pub(super) async fn run<F, Fut>(plan: Plan, counters: Arc<Counters>, send: F) -> anyhow::Result<OpenLoop>
where
    F: Fn(usize, Instant) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ClientError>> + Send + 'static,
{
    if !(plan.rate.is_finite() && plan.rate > 0.0) {
        anyhow::bail!("--rate must be a positive number of messages per second");
    }
    if plan.count.is_none() && plan.duration.is_none() && plan.cancel.is_none() {
        anyhow::bail!("an open-loop run needs a count, a duration or a way to stop");
    }
    let send = Arc::new(send);
    let ended: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let start = Instant::now();
    let warmed_up = start + plan.warmup;
    let mut senders = Vec::with_capacity(plan.producers);
    let mut workers = tokio::task::JoinSet::new();
    for p in 0..plan.producers {
        let (tx, rx) = mpsc::channel::<Instant>(QUEUE);
        senders.push(tx);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..plan.inflight.max(1) {
            let (rx, send, counters, ended) = (rx.clone(), send.clone(), counters.clone(), ended.clone());
            let (n, bytes) = (plan.msgs_per_send, plan.bytes_per_send);
            workers.spawn(async move {
                let (mut latency, mut lag, mut unsent) = (histogram(), histogram(), 0u64);
                loop {
                    let Some(intended) = rx.lock().await.recv().await else { break };
                    let now = Instant::now();
                    if ended.get().is_some_and(|e| now >= *e + DRAIN) {
                        unsent += n;
                        continue;
                    }
                    let measured = intended >= warmed_up;
                    if measured {
                        let _ = lag.record(now.saturating_duration_since(intended).as_micros() as u64);
                    }
                    match send(p, intended).await {
                        Ok(()) => {
                            if measured {
                                let _ = latency.record(intended.elapsed().as_micros().max(1) as u64);
                            }
                            counters.msgs.fetch_add(n, Ordering::Relaxed);
                            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Err(e) => counters.error(n, &e),
                    }
                }
                (latency, lag, unsent)
            });
        }
    }
    let scheduler = {
        let (plan, ended) = (plan.clone(), ended.clone());
        std::thread::Builder::new().name("bench-schedule".into()).spawn(move || {
            precise_sleeps();
            let tickets = schedule(&plan, start, &senders);
            let _ = ended.set(Instant::now());
            tickets
        })?
    };
    let (mut latency, mut lag, mut unsent_msgs) = (histogram(), histogram(), 0);
    while let Some(done) = workers.join_next().await {
        let (l, g, u) = done?;
        latency.add(l)?;
        lag.add(g)?;
        unsent_msgs += u;
    }
    let elapsed = start.elapsed();
    let tickets = scheduler.join().map_err(|_| anyhow::anyhow!("the send scheduler panicked"))?;
    Ok(OpenLoop { latency, lag, scheduled_msgs: tickets * plan.msgs_per_send, unsent_msgs, elapsed })
}

/// Issues the tickets of `plan` from `start` on, ticket `n` due at `start + n / ticket rate` for
/// producer `n % producers`; returns how many it issued. Dropping `senders` at the end tells
/// the workers that nothing more is coming.
fn schedule(plan: &Plan, start: Instant, senders: &[mpsc::Sender<Instant>]) -> u64 {
    let per_second = plan.rate / plan.msgs_per_send.max(1) as f64;
    let max_tickets = plan.count.map(|c| c / plan.msgs_per_send.max(1));
    let end = plan.duration.map(|d| start + d);
    let mut n: u64 = 0;
    loop {
        if max_tickets.is_some_and(|m| n >= m) || plan.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            break;
        }
        let due = start + Duration::from_secs_f64(n as f64 / per_second);
        if end.is_some_and(|e| due >= e) {
            break;
        }
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let Some(tx) = senders.get((n % senders.len().max(1) as u64) as usize) else { break };
        if tx.blocking_send(due).is_err() {
            break; // the workers are gone
        }
        n += 1;
    }
    n
}

/// Cuts this thread's timer slack to 1 ns, so that its sleeps end when asked rather than up to
/// 50 µs later (Linux's default for a normal thread); elsewhere a no-op. A failure leaves the
/// default slack, which is still correct, only coarser.
#[cfg(target_os = "linux")]
fn precise_sleeps() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

#[cfg(not(target_os = "linux"))]
fn precise_sleeps() {}

/// Looks up `topic`'s route and connects to its brokers, so that the first scheduled sends do
/// not wait for that. Failures are left for the sends to report.
pub(super) async fn warm_up(producer: &Producer, topic: &str) {
    if let Ok(queues) = producer.queues(topic).await {
        for (_, addr) in queues.route().brokers() {
            let _ = producer.client().connection(addr).await;
        }
    }
}
