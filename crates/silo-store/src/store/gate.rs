//! Whether the store accepts writes. Two things close it: a full disk, which opens again by
//! itself once space returns, and a failed sync, which closes it for good (until the store is
//! reopened). Each change is logged once, never per refused message. Reads never look here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{Result, StoreError};

#[derive(Debug, Default)]
pub(crate) struct WriteGate {
    /// The used ratio of the disk is above `diskSpaceWarningLevelRatio`.
    over_warning_ratio: AtomicBool,
    /// A file could not be created or reserved for lack of space (cleared by the next one that
    /// could).
    met_full_disk: AtomicBool,
    /// Why the disk counts as full, for the refusal's message.
    full_reason: Mutex<String>,
    /// Set for good when a sync failed: what failed.
    stopped: OnceLock<String>,
}

impl WriteGate {
    /// `Ok` if an append may go ahead: one or two relaxed loads on the hot path.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(why) = self.stopped.get() {
            return Err(StoreError::WritesStopped(why.clone()));
        }
        if self.over_warning_ratio.load(Ordering::Relaxed) {
            return Err(StoreError::DiskFull(self.full_reason.lock().unwrap_or_else(|e| e.into_inner()).clone()));
        }
        Ok(())
    }

    pub(crate) fn is_disk_full(&self) -> bool {
        self.over_warning_ratio.load(Ordering::Relaxed) || self.met_full_disk.load(Ordering::Relaxed)
    }

    pub(crate) fn stopped(&self) -> Option<&str> {
        self.stopped.get().map(String::as_str)
    }

    /// The disk's used ratio is above the warning level (`Some(true)`), back at or below the
    /// level at which it counts as healthy again (`Some(false)`), or in between (`None`: no
    /// change, so that a ratio hovering at the warning level does not flap).
    pub(crate) fn set_over_warning_ratio(&self, over: Option<bool>, reason: impl FnOnce() -> String) {
        match over {
            Some(true) => {
                let reason = reason();
                *self.full_reason.lock().unwrap_or_else(|e| e.into_inner()) = reason.clone();
                if !self.over_warning_ratio.swap(true, Ordering::AcqRel) {
                    tracing::error!(reason, "the disk is full: refusing new messages; reads go on");
                }
            }
            Some(false) if self.over_warning_ratio.swap(false, Ordering::AcqRel) => {
                tracing::warn!("disk space is back: accepting new messages again");
            }
            Some(false) | None => {}
        }
    }

    /// An append met a full disk (a file could not be created or reserved).
    pub(crate) fn met_full_disk(&self, error: &StoreError) {
        if !self.met_full_disk.swap(true, Ordering::AcqRel) {
            tracing::error!(%error, "the disk is full: refusing new messages; reads go on");
        }
    }

    /// A file could be created or reserved again.
    pub(crate) fn found_space(&self) {
        if self.met_full_disk.load(Ordering::Relaxed) && self.met_full_disk.swap(false, Ordering::AcqRel) {
            tracing::warn!("disk space returned: accepting new messages again");
        }
    }

    /// A sync failed: what it covered may not be on disk, and a later sync cannot prove it is
    /// (after an fsync error the kernel may have dropped the pages). Closes the store for
    /// writes for good. Returns whether this call closed it.
    pub(crate) fn stop(&self, why: String) -> bool {
        let first = self.stopped.set(why).is_ok();
        if first {
            tracing::error!(
                reason = self.stopped.get().map(String::as_str).unwrap_or_default(),
                "a sync failed: the store accepts no more writes; unacknowledged messages are refused; restart the broker once the disk is healthy"
            );
        }
        first
    }
}
