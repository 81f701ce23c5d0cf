//! Allocation counts for measurement builds.
//!
//! A binary built with a counting global allocator (`silo` with the `count-allocs` feature)
//! installs a probe here; GET_BROKER_RUNTIME_INFO then reports the process's allocations and
//! bytes allocated so far (`siloAllocCount`, `siloAllocBytes`), and `silo bench` turns their
//! growth over a run into allocations per message through the whole broker.

use std::sync::OnceLock;

/// Returns (allocations, bytes allocated) since the process started.
pub type Probe = fn() -> (u64, u64);

static PROBE: OnceLock<Probe> = OnceLock::new();

/// Installs the probe; only the first call has an effect.
pub fn install(probe: Probe) {
    let _ = PROBE.set(probe);
}

/// The counts, when a probe is installed.
#[must_use]
pub fn read() -> Option<(u64, u64)> {
    PROBE.get().map(|probe| probe())
}
