//! What a run reports: the machine, latency percentiles, and the report printed and written
//! as JSON at the end of every workload.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use serde::Serialize;

use silo_client::Subscription;

use super::Counters;
use super::rate::OpenLoop;
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

/// Percentiles of a histogram, microseconds.
#[derive(Debug, Serialize)]
pub(super) struct Latency {
    pub(super) p50: u64,
    pub(super) p90: u64,
    pub(super) p99: u64,
    pub(super) p999: u64,
    pub(super) max: u64,
    pub(super) mean: f64,
    pub(super) samples: u64,
}

impl Latency {
    pub(super) fn of(h: &Histogram<u64>) -> Self {
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
    /// An open-loop run (`--rate`): the offered and achieved rates and the schedule lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<RateReport>,
    /// A filtered consume (`--sql`, `--tag`): the backlog scanned for the matched messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<Filtered>,
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
    /// Set for an open-loop run.
    pub(super) rate: Option<RateReport>,
    /// Set for a filtered consume.
    pub(super) filter: Option<Filtered>,
}

/// What a filtered consume read: `msgs` are the messages that matched, these the backlog the
/// broker scanned for them.
#[derive(Debug, Serialize)]
pub(super) struct Filtered {
    /// `TAG` or `SQL92`.
    pub(super) expression_type: &'static str,
    pub(super) expression: String,
    /// Messages in the queues when the run began.
    pub(super) backlog_msgs: u64,
    /// Queue offsets the pulls went past, matched or not.
    pub(super) scanned_msgs: u64,
    pub(super) scanned_msgs_per_sec: f64,
    /// Matched / scanned.
    pub(super) matched_share: f64,
}

impl Filtered {
    pub(super) fn of(sub: &Subscription, backlog: u64, scanned: u64, matched: u64, elapsed: Duration) -> Self {
        Self {
            expression_type: sub.expression_type().as_str(),
            expression: sub.expression().to_owned(),
            backlog_msgs: backlog,
            scanned_msgs: scanned,
            scanned_msgs_per_sec: scanned as f64 / elapsed.as_secs_f64().max(1e-9),
            matched_share: if scanned == 0 { 0.0 } else { matched as f64 / scanned as f64 },
        }
    }
}

/// A run at a fixed offered rate is sustained when it achieved at least this share of it...
const SUSTAINED_SHARE: f64 = 0.99;
/// ...its sends went out at most this late (p99, µs) after their intended time...
const SUSTAINED_LAG_P99_US: u64 = 10_000;
/// ...and every scheduled send went out.
const SUSTAINED_IF: &str = "achieved >= 99% of offered, schedule lag p99 <= 10 ms, no send left unsent";

/// How an open-loop run kept to its offered rate.
#[derive(Debug, Serialize)]
pub(super) struct RateReport {
    pub(super) offered_msgs_per_sec: f64,
    /// Acknowledged messages per second, from the first intended send until the last worker
    /// finished.
    pub(super) achieved_msgs_per_sec: f64,
    pub(super) sustained: bool,
    pub(super) sustained_if: &'static str,
    pub(super) scheduled_msgs: u64,
    pub(super) acknowledged_msgs: u64,
    /// Scheduled, but still waiting for a free sender when the run's drain time was over.
    pub(super) unsent_msgs: u64,
    /// How late the sends went out after their intended times, µs: the generator's own delay
    /// plus the wait for a free sender when all were busy.
    pub(super) schedule_lag_us: Latency,
}

impl RateReport {
    pub(super) fn of(offered: f64, acknowledged: u64, run: &OpenLoop) -> Self {
        let achieved = acknowledged as f64 / run.elapsed.as_secs_f64().max(1e-9);
        let lag = Latency::of(&run.lag);
        let sustained =
            achieved >= SUSTAINED_SHARE * offered && lag.p99 <= SUSTAINED_LAG_P99_US && run.unsent_msgs == 0;
        Self {
            offered_msgs_per_sec: offered,
            achieved_msgs_per_sec: achieved,
            sustained,
            sustained_if: SUSTAINED_IF,
            scheduled_msgs: run.scheduled_msgs,
            acknowledged_msgs: acknowledged,
            unsent_msgs: run.unsent_msgs,
            schedule_lag_us: lag,
        }
    }

    /// One line: offered, achieved, and whether that was sustained.
    pub(super) fn summary(&self) -> String {
        format!(
            "offered {:.0} msgs/s, achieved {:.0} msgs/s: {} ({}){}",
            self.offered_msgs_per_sec,
            self.achieved_msgs_per_sec,
            if self.sustained { "sustained" } else { "NOT sustained" },
            self.sustained_if,
            if self.unsent_msgs > 0 {
                format!(", {} scheduled messages never sent", self.unsent_msgs)
            } else {
                String::new()
            }
        )
    }
}

/// A table with aligned columns (markdown), the first column left-aligned, the others right.
pub(super) fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::from("|");
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if i == 0 {
                out.push_str(&format!(" {cell}{} |", " ".repeat(pad)));
            } else {
                out.push_str(&format!(" {}{cell} |", " ".repeat(pad)));
            }
        }
        out
    };
    println!("{}", line(&mut header.iter().copied()));
    let rule: String =
        widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    format!(" {} |", "-".repeat(*w))
                } else {
                    format!(" {}: |", "-".repeat(w.saturating_sub(1)))
                }
            })
            .collect();
    println!("|{rule}");
    for row in rows {
        println!("{}", line(&mut row.iter().map(String::as_str)));
    }
}

/// The percentile columns of a latency table row.
pub(super) fn latency_cells(l: &Latency) -> Vec<String> {
    vec![
        l.samples.to_string(),
        l.p50.to_string(),
        l.p90.to_string(),
        l.p99.to_string(),
        l.p999.to_string(),
        l.max.to_string(),
        format!("{:.0}", l.mean),
    ]
}

pub(super) const LATENCY_HEADER: [&str; 7] = ["samples", "p50", "p90", "p99", "p99.9", "max", "mean"];

pub(super) fn finish_report<P: Serialize>(
    workload: &'static str,
    params: P,
    outcome: Outcome<'_>,
    report: Option<&PathBuf>,
) -> anyhow::Result<()> {
    let Outcome { counters, allocs_start, elapsed, latency, produce_latency, broker, rate, filter } = outcome;
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
        rate,
        filter,
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
    match &r.rate {
        None => println!(
            "latency (µs): p50 {} p90 {} p99 {} p99.9 {} max {} mean {:.0}",
            l.p50, l.p90, l.p99, l.p999, l.max, l.mean
        ),
        Some(rate) => {
            println!("{}", rate.summary());
            let mut rows = Vec::new();
            let mut row = |label: &str, l: &Latency| rows.push([vec![label.to_owned()], latency_cells(l)].concat());
            if let Some(send) = &r.produce_latency_us {
                row("send, from intended time", send);
                row("end to end, from intended time", l);
            } else {
                row("send, from intended time", l);
            }
            row("schedule lag", &rate.schedule_lag_us);
            let mut header = vec!["latency µs"];
            header.extend(LATENCY_HEADER);
            print_table(&header, &rows);
        }
    }
    if let Some(f) = &r.filter {
        println!(
            "{} filter {:?}: {} of {} backlog messages scanned, {:.0} scanned msgs/s; {:.1} % matched",
            f.expression_type,
            f.expression,
            f.scanned_msgs,
            f.backlog_msgs,
            f.scanned_msgs_per_sec,
            100.0 * f.matched_share
        );
    }
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
