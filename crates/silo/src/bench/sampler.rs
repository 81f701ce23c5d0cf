//! The broker's cost over a run: CPU time and RSS of local broker processes read from `/proc`,
//! and allocation counts, the broker's (from GET_BROKER_RUNTIME_INFO, when built with
//! `count-allocs`) and this process's own.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use silo_client::Admin;

/// What the broker processes cost over the run.
#[derive(Debug, Serialize, Default, Clone)]
pub(super) struct BrokerCost {
    pub(super) pids: Vec<u32>,
    pub(super) cpu_seconds: f64,
    pub(super) cpu_us_per_msg: f64,
    pub(super) rss_start_bytes: u64,
    pub(super) rss_peak_bytes: u64,
    /// Anonymous memory only (heap, stacks): RSS without the mapped store files, whose pages
    /// count towards RSS while they are resident but belong to the page cache.
    pub(super) anon_start_bytes: u64,
    pub(super) anon_peak_bytes: u64,
    /// RSS and anonymous memory when the run ended.
    pub(super) rss_end_bytes: u64,
    pub(super) anon_end_bytes: u64,
    /// Allocations per message, from a broker built with allocation counting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) allocs_per_msg: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) alloc_bytes_per_msg: Option<f64>,
}

/// This process's (allocations, bytes allocated), in a `count-allocs` build.
pub(super) fn own_allocs() -> Option<(u64, u64)> {
    #[cfg(feature = "count-allocs")]
    return Some(crate::alloc_count::counts());
    #[cfg(not(feature = "count-allocs"))]
    None
}

/// Samples the broker processes' RSS and CPU time while the run lasts.
pub(super) struct BrokerSampler {
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
    pub(super) async fn start(pids: &[u32], admin: Admin) -> Self {
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

    pub(super) async fn finish(mut self, msgs: u64) -> Option<BrokerCost> {
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
        (cost.rss_end_bytes, cost.anon_end_bytes) = rss_of(&cost.pids);
        cost.rss_peak_bytes = cost.rss_peak_bytes.max(cost.rss_end_bytes);
        cost.anon_peak_bytes = cost.anon_peak_bytes.max(cost.anon_end_bytes);
        Some(cost)
    }
}
