//! What a run reports: the machine, latency percentiles, and the report printed and written
//! as JSON at the end of every workload.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use serde::Serialize;

use super::Counters;
use super::sampler::{BrokerCost, own_allocs};

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

/// What a run measured.
pub(super) struct Outcome<'a> {
    pub(super) counters: &'a Counters,
    /// `own_allocs()` when the measured work began.
    pub(super) allocs_start: Option<(u64, u64)>,
    pub(super) elapsed: Duration,
    pub(super) latency: &'a Histogram<u64>,
    pub(super) produce_latency: Option<&'a Histogram<u64>>,
    pub(super) broker: Option<BrokerCost>,
}

pub(super) fn finish_report<P: Serialize>(
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
