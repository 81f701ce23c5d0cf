//! The wall clock, as a parameter. Where time decides behaviour (the store timestamp a record
//! gets, and so when a delayed message is due), the store and the broker read a [`Clock`]
//! handed to them in the config, so that tests can move time by hand ([`ManualClock`])
//! instead of sleeping. Production uses [`SystemClock`].

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch, as RocketMQ's timestamps are.
pub trait Clock: Send + Sync + Debug {
    fn now_ms(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(Self(AtomicI64::new(start_ms)))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::AcqRel);
    }

    /// Moves the clock to `ms` (forward or back).
    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::Release);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The clock a config starts with.
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}
