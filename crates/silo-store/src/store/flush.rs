//! Flushing: group commit (one fsync serves every waiter that arrived meanwhile), the wait
//! for a flush, and the flusher thread in both flush modes.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use super::inner::Inner;
use crate::config::FlushMode;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};

impl Inner {
    pub(crate) fn request_flush(&self, end_offset: i64) {
        let mut req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        if end_offset > req.requested {
            req.requested = end_offset;
        }
        drop(req);
        self.wake_flusher();
    }

    pub(super) fn wait_flushed(&self, end_offset: i64, timeout: Duration) -> Result<()> {
        if self.writer.commit_log.flushed_offset() >= end_offset {
            return Ok(());
        }
        if !self.config.background {
            // No flusher: this thread flushes (group commit degenerates to one waiter).
            self.flush_commit_log(true)?;
            return match self.writer.commit_log.flushed_offset() >= end_offset {
                true => Ok(()),
                false => Err(StoreError::FlushTimeout(timeout)),
            };
        }
        let deadline = Instant::now() + timeout;
        let mut req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        if end_offset > req.requested {
            req.requested = end_offset;
        }
        self.flush_requested.notify_one();
        if !self.config.flush.is_sync()
            && let Some(t) = self.workers.flusher.get()
        {
            t.unpark();
        }
        while self.writer.commit_log.flushed_offset() < end_offset {
            if let Some(why) = self.writer.gate.stopped() {
                return Err(StoreError::WritesStopped(why.to_owned()));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::FlushTimeout(timeout));
            }
            req = self.flush_done.wait_timeout(req, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        Ok(())
    }

    /// Flushes the commit log: all of it when `whole` (synchronous flush, the thorough
    /// rounds, shutdown), else up to the page the writer is filling. Only a whole flush moves
    /// the checkpoint's timestamp, which must belong to a record below the flushed end.
    pub(super) fn flush_commit_log(&self, whole: bool) -> Result<i64> {
        // Read the timestamp first: it then belongs to a record at or before the flushed end.
        let ts = self.writer.state.lock().unwrap_or_else(|e| e.into_inner()).last_store_timestamp;
        self.refuse_if_stopped()?;
        let flushed = self.writer.commit_log.flush(whole).map_err(|e| self.sync_failed(e))?;
        self.flush_rounds.fetch_add(1, Ordering::Relaxed);
        if whole {
            let mut cp = self.checkpoint.lock().unwrap_or_else(|e| e.into_inner());
            cp.1.physic_msg_timestamp = cp.1.physic_msg_timestamp.max(ts);
        }
        let _guard = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_done.notify_all();
        self.flushed_watch.send_replace(flushed);
        Ok(flushed)
    }

    /// Flushes the consume queues (all of them when `whole`, else up to the pages the
    /// dispatcher is filling); a whole flush also flushes the index and moves the checkpoint.
    pub(super) fn flush_queues_and_checkpoint(&self, whole: bool) -> Result<()> {
        self.refuse_if_stopped()?;
        let ts = self.last_dispatched_timestamp.load(Ordering::Acquire);
        let dirty: Vec<Arc<ConsumeQueue>> = self.all_queues().into_iter().filter(|q| q.needs_flush()).collect();
        flush_queues(&dirty, whole).map_err(|e| self.sync_failed(e))?;
        if !whole {
            return Ok(());
        }
        self.flush_index_and_checkpoint(ts).map_err(|e| self.sync_failed(e))
    }

    fn refuse_if_stopped(&self) -> Result<()> {
        match self.writer.gate.stopped() {
            Some(why) => Err(StoreError::WritesStopped(why.to_owned())),
            None => Ok(()),
        }
    }

    /// A sync failed (docs/store-format.md §8): nothing it covered may count as durable, now
    /// or after a retry, so writes stop for good and every durability waiter is told.
    fn sync_failed(&self, error: StoreError) -> StoreError {
        self.writer.gate.stop(error.to_string());
        let _guard = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_done.notify_all();
        self.flushed_watch.send_modify(|_| {});
        StoreError::WritesStopped(error.to_string())
    }

    /// Flushes the index and stores the checkpoint (the consume queues are flushed whole up
    /// to `ts`'s record).
    fn flush_index_and_checkpoint(&self, ts: i64) -> Result<()> {
        let index_ts = match &self.index {
            Some(index) => {
                let index = index.lock().unwrap_or_else(|e| e.into_inner());
                index.flush()?;
                index.last_timestamp()
            }
            None => 0,
        };
        let mut cp = self.checkpoint.lock().unwrap_or_else(|e| e.into_inner());
        cp.1.logics_msg_timestamp = cp.1.logics_msg_timestamp.max(ts);
        cp.1.index_msg_timestamp = cp.1.index_msg_timestamp.max(index_ts);
        let values = cp.1;
        cp.0.store(&values)
    }

    pub(super) fn flush_all(&self) -> Result<()> {
        self.flush_commit_log(true)?;
        self.flush_queues_and_checkpoint(true)
    }

    /// The consume queues' flusher, on a thread of its own: with many queues a round can take
    /// seconds (one write per dirty queue), and the commit log's group commit must not wait
    /// behind it.
    pub(super) fn run_queue_flusher(self: &Arc<Self>) {
        let mut last_whole_queue_flush = Instant::now();
        let mut dispatched_before = self.dispatched.load(Ordering::Acquire);
        loop {
            if !self.is_shut_down() {
                std::thread::park_timeout(self.config.consume_queue_flush_interval);
            }
            if self.is_shut_down() {
                // `Store::shutdown` does the final flush once every thread has stopped.
                return;
            }
            // The index and the checkpoint go with the whole flushes, every thorough
            // interval (10 s by default; every round in synchronous mode's 1 s).
            let dispatched = self.dispatched.load(Ordering::Acquire);
            let dispatching = dispatched != dispatched_before;
            dispatched_before = dispatched;
            let thorough = match self.config.flush {
                FlushMode::Async { thorough_interval, .. } => {
                    !dispatching || last_whole_queue_flush.elapsed() >= thorough_interval.saturating_mul(6)
                }
                FlushMode::Sync { .. } => true,
            };
            // A failure is logged once by the write gate.
            let _ = self.flush_queues_and_checkpoint(thorough);
            if thorough {
                last_whole_queue_flush = Instant::now();
            }
        }
    }

    pub(super) fn run_flusher(self: &Arc<Self>) {
        let mut last_whole_log_flush = Instant::now();
        // Where the log and dispatch were at the previous round: a whole flush waits until
        // they stop moving, so that it never starts writeback under a writer.
        let mut log_end_before = self.writer.commit_log.max_offset();
        let mut last_thorough = Instant::now();
        let mut last_clean = Instant::now();
        let mut last_disk_check = Instant::now();
        loop {
            let shutting_down = self.is_shut_down();
            match self.config.flush {
                FlushMode::Sync { .. } => {
                    let req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
                    let pending = req.requested > self.writer.commit_log.flushed_offset();
                    if !pending && !shutting_down {
                        let _ = self.flush_requested.wait_timeout(req, Duration::from_millis(10));
                    } else {
                        drop(req);
                    }
                    // Everything appended so far is flushed by this one sync: group commit.
                    if self.writer.commit_log.dirty_bytes() > 0 && self.flush_commit_log(true).is_err() {
                        // Logged once by the write gate; waiters were told.
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                FlushMode::Async { interval, least_pages, thorough_interval } => {
                    if !self.is_shut_down() {
                        std::thread::park_timeout(interval);
                    }
                    let thorough = last_thorough.elapsed() >= thorough_interval;
                    let dirty = self.writer.commit_log.dirty_bytes();
                    let requested = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner()).requested
                        > self.writer.commit_log.flushed_offset();
                    let log_end = self.writer.commit_log.max_offset();
                    let writing = log_end != log_end_before;
                    log_end_before = log_end;
                    if dirty > 0 && (thorough || requested || dirty as usize >= least_pages * 4096) {
                        // Under load a whole flush still comes every six thorough intervals,
                        // so that the checkpoint (which only a whole flush moves) stays recent.
                        let overdue = last_whole_log_flush.elapsed() >= thorough_interval.saturating_mul(6);
                        let whole = requested || !writing || overdue;
                        // A failure is logged once by the write gate.
                        let _ = self.flush_commit_log(whole);
                        if thorough {
                            last_thorough = Instant::now();
                        }
                        if whole {
                            last_whole_log_flush = Instant::now();
                        }
                    }
                }
            }
            if last_disk_check.elapsed() >= self.config.disk.check_interval {
                if let Err(e) = self.check_disk_space(SystemTime::now()) {
                    tracing::error!(error = %e, "disk-space policy failed");
                }
                last_disk_check = Instant::now();
            }
            if last_clean.elapsed() >= self.config.clean_interval {
                if let Err(e) = self.delete_expired_files(SystemTime::now()) {
                    tracing::error!(error = %e, "retention failed");
                }
                last_clean = Instant::now();
            }
            if shutting_down || self.is_shut_down() {
                // `Store::shutdown` does the final flush once every thread has stopped.
                return;
            }
        }
    }
}

/// Dirty queues one thread flushes before another helps. Each queue's flush waits for the write
/// of its own page (and, for a new file, of its directories), so one thread spent 15 s on the
/// 100,000 queues of a broker after one message to each; the disk takes many writes at once.
const QUEUES_PER_FLUSH_THREAD: usize = 256;
const MAX_FLUSH_THREADS: usize = 8;

/// Flushes `queues`, on up to [`MAX_FLUSH_THREADS`] threads when there are many. The first
/// error wins; every queue is still tried.
fn flush_queues(queues: &[Arc<ConsumeQueue>], whole: bool) -> Result<()> {
    let threads = queues.len().div_ceil(QUEUES_PER_FLUSH_THREAD).clamp(1, MAX_FLUSH_THREADS);
    let flush_all = |part: &[Arc<ConsumeQueue>]| {
        let mut first = Ok(());
        for q in part {
            if let Err(e) = q.flush(whole)
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    };
    if threads == 1 {
        return flush_all(queues);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> =
            queues.chunks(queues.len().div_ceil(threads)).map(|part| s.spawn(move || flush_all(part))).collect();
        let mut first = Ok(());
        for h in handles {
            let r = h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if first.is_ok() {
                first = r;
            }
        }
        first
    })
}
