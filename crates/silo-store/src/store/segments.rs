//! The commit log's segments over time: the allocator thread that prepares the next segment
//! and prefaults the pages ahead of the writer, and retention, which deletes expired segments.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::inner::Inner;
use crate::error::Result;

impl Inner {
    /// Prepares the next segment ahead of need and keeps the pages ahead of the writer
    /// faulted in. Polls often while appends flow, rarely when idle.
    pub(super) fn run_allocator(self: &Arc<Self>) {
        let mut idle = Duration::from_millis(5);
        let mut last_end = self.writer.commit_log.max_offset();
        loop {
            if self.is_shut_down() {
                return;
            }
            if self.workers.allocation_wanted.swap(false, Ordering::AcqRel)
                && let Err(e) = self.writer.commit_log.prepare_next()
            {
                tracing::warn!(error = %e, "could not prepare the next commit-log segment");
            }
            self.writer.commit_log.prefault();
            // Poll often while the log grows, back off while it does not.
            let end = self.writer.commit_log.max_offset();
            idle = if end != last_end { Duration::from_millis(2) } else { (idle * 2).min(Duration::from_millis(200)) };
            last_end = end;
            std::thread::park_timeout(idle);
        }
    }

    pub(super) fn delete_expired_files(&self, now: SystemTime) -> Result<usize> {
        let reserved = self.config.file_reserved_time;
        self.delete_oldest_segments(usize::MAX, |seg| seg.modified().is_some_and(|m| m + reserved <= now))
    }

    /// Deletes up to `max` of the oldest segments while `delete` holds for them, never the
    /// last one, and moves every consume queue's min offset and the index past them. Returns
    /// how many were deleted.
    pub(super) fn delete_oldest_segments(
        &self,
        max: usize,
        mut delete: impl FnMut(&crate::mapped::MappedFile) -> bool,
    ) -> Result<usize> {
        let mut deleted = 0usize;
        let min = self.writer.commit_log.delete_oldest_while(|seg| {
            let yes = deleted < max && delete(seg);
            if yes {
                deleted += 1;
            }
            yes
        })?;
        if deleted > 0 {
            for q in self.all_queues() {
                q.correct_min_offset(min)?;
            }
            if let Some(index) = &self.index {
                index.lock().unwrap_or_else(|e| e.into_inner()).delete_before(min)?;
            }
        }
        Ok(deleted)
    }
}
