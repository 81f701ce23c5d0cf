//! The disk-space policy (Java's keys, docs/store-format.md §8): measured on the file system
//! holding the commit log, every `DiskPolicy::check_interval`, by the flusher thread.
//!
//! - above `diskMaxUsedSpaceRatio`, expired segments are deleted at once rather than at the
//!   next clean interval;
//! - above `diskSpaceCleanForciblyRatio` (while `cleanFileForciblyEnable`), the oldest
//!   segments are deleted even though they have not expired, until the ratio is below it again
//!   (at most [`FORCED_DELETIONS_PER_ROUND`] a round, never the segment being written);
//! - above `diskSpaceWarningLevelRatio`, appends are refused (the write gate) until it is at
//!   or below `diskSpaceCleanForciblyRatio` again (Java's hysteresis: no flapping at the edge).

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use super::inner::Inner;
use crate::error::Result;

/// Segments deleted before their time in one round (Java's `deleteFileBatchMax`, 10).
const FORCED_DELETIONS_PER_ROUND: usize = 10;

impl Inner {
    /// The used ratio of the disk holding `dir`, or `None` if it cannot be measured.
    fn used_ratio(&self, dir: &std::path::Path) -> Option<f64> {
        match self.config.fs.space(dir) {
            Ok(space) => Some(space.used_ratio()),
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "cannot measure disk space");
                None
            }
        }
    }

    /// One round of the policy (module docs).
    pub(super) fn check_disk_space(&self, now: SystemTime) -> Result<()> {
        let dir = self.config.commit_log_dir();
        let Some(mut ratio) = self.used_ratio(&dir) else { return Ok(()) };
        let policy = self.config.disk;
        if ratio > policy.max_used_ratio {
            if self.delete_expired_files(now)? > 0 {
                ratio = self.used_ratio(&dir).unwrap_or(ratio);
            }
            let mut forced = 0;
            while policy.clean_forcibly && ratio > policy.clean_forcibly_ratio && forced < FORCED_DELETIONS_PER_ROUND {
                let used = ratio;
                if self.delete_oldest_segments(1, |seg| {
                    tracing::warn!(path = %seg.path().display(), used_percent = used * 100.0,
                        limit_percent = policy.clean_forcibly_ratio * 100.0,
                        "deleting a commit-log segment before it expired: the disk is nearly full");
                    true
                })? == 0
                {
                    break;
                }
                forced += 1;
                ratio = self.used_ratio(&dir).unwrap_or(ratio);
            }
        }
        self.disk_ratio.store(ratio.to_bits(), Ordering::Relaxed);
        if let Some(cq_ratio) = self.used_ratio(&self.config.consume_queue_dir()) {
            self.consume_queue_disk_ratio.store(cq_ratio.to_bits(), Ordering::Relaxed);
        }
        // As Java: refused above the warning level, accepted again only at or below the forced
        // cleaning level.
        let over = if ratio > policy.warning_ratio {
            Some(true)
        } else if ratio <= policy.clean_forcibly_ratio.min(policy.warning_ratio) {
            Some(false)
        } else {
            None
        };
        self.writer.gate.set_over_warning_ratio(over, || {
            format!(
                "the disk holding the commit log is {:.1} % used, above diskSpaceWarningLevelRatio ({:.0} %)",
                ratio * 100.0,
                policy.warning_ratio * 100.0
            )
        });
        Ok(())
    }
}
