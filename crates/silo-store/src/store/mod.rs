//! The store: the [`Store`] facade, opening (locks, threads), and the state the store's parts
//! share ([`Inner`]). The parts, each in its own file:
//!
//! | file | what |
//! |---|---|
//! | `append.rs` | the append path and its critical section (offsets, timestamps) |
//! | `dispatch.rs` | the dispatcher: consume-queue units, LMQ units and index entries |
//! | `read.rs` | reads: queue reads, records by offset, statuses |
//! | `flush.rs` | group commit, the durability wait, the flusher thread |
//! | `gate.rs` | whether appends are accepted: a full disk, a failed sync |
//! | `space.rs` | the disk-space policy: early and forced cleaning, refusing when full |
//! | `segments.rs` | the segment allocator thread and retention |
//! | `recovery.rs` | loading queues, cutting the log's torn tail, re-dispatch |
//! | `replica.rs` | replication: bytes to ship, bytes received, slaves' confirmations |
//! | `inner.rs` | the state the parts share: writer, queues, index, flush state, workers |
//! | `workers.rs` | the background threads: shutdown, and how to wake each |
//!
//! The append path owns its part (`Writer`: the commit log and the critical section's state)
//! and sees the rest only through `AppendContext`; the other parts add methods to `Inner` in
//! their own files. Nothing below `mod.rs` imports it, so there is no import circle.

mod append;
mod dispatch;
mod flush;
mod gate;
mod inner;
mod read;
mod recovery;
mod replica;
mod segments;
mod space;
mod workers;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

pub use self::append::{AppendResult, Appender, MessageToStore};
use self::append::{AppendState, Writer, append_batch, append_one};
use self::inner::{FlushRequests, Inner};
pub use self::read::{GetResult, GetStatus, MessageRef, TagFilter};
pub use self::recovery::RecoveryReport;
pub use self::replica::{LogSlice, ReplicaError, SyncReplication};
use self::workers::Workers;
use crate::checkpoint::CheckpointFile;
use crate::commit_log::CommitLog;
use crate::config::{FlushMode, StoreConfig};
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::index::IndexService;

/// The message store. Cheap to share behind an `Arc`; all methods take `&self`.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Store {
    /// Opens (or creates) the store under `config.root`, recovers it, and starts the
    /// dispatcher, flusher and allocator threads.
    pub fn open(config: StoreConfig) -> Result<Self> {
        Self::open_with_report(config).map(|(store, _)| store)
    }

    pub fn open_with_report(config: StoreConfig) -> Result<(Self, RecoveryReport)> {
        let started = Instant::now();
        let root = config.root.clone();
        let fs = Arc::clone(&config.fs);
        fs.create_dir_all(&root).map_err(StoreError::io("create", &root))?;
        let lock = fs.lock_store(&root).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock => StoreError::Locked(root.clone()),
            _ => StoreError::io("lock", &root)(e),
        })?;
        let abort_path = root.join("abort");
        let abnormal = fs.exists(&abort_path);

        let commit_log = CommitLog::open(&fs, &config.commit_log_dir(), config.commit_log_segment_size)?;
        let (checkpoint_file, checkpoint) = CheckpointFile::open(&fs, &root.join("checkpoint"))?;
        let index = match &config.index {
            Some(ic) => Some(Mutex::new(IndexService::open_on(&fs, &config.index_dir(), *ic)?)),
            None => None,
        };
        let (flushed_watch, _) = tokio::sync::watch::channel(0i64);
        let inner = Arc::new(Inner {
            writer: Writer {
                commit_log,
                state: Mutex::new(AppendState::default()),
                gate: Default::default(),
                replica: Default::default(),
            },
            queues: RwLock::new(HashMap::new()),
            dispatched: AtomicI64::new(0),
            dispatch_round: Mutex::new(()),
            dispatch_stalled: Default::default(),
            index_failing: Default::default(),
            dispatch_progress: tokio::sync::Notify::new(),
            last_dispatched_timestamp: AtomicI64::new(checkpoint.logics_msg_timestamp),
            index,
            index_covered: AtomicI64::new(0),
            checkpoint: Mutex::new((checkpoint_file, checkpoint)),
            flush_requests: Mutex::new(FlushRequests::default()),
            flush_requested: Condvar::new(),
            flush_done: Condvar::new(),
            flushed_watch,
            flush_rounds: std::sync::atomic::AtomicU64::new(0),
            disk_ratio: AtomicU64::new(0),
            consume_queue_disk_ratio: AtomicU64::new(0),
            workers: Workers::default(),
            replicas: Default::default(),
            _lock: lock,
            config,
        });
        let mut report = inner.recover(abnormal, checkpoint)?;

        // Mark the store as running: a crash from here on leaves `abort` behind.
        fs.write_synced(&abort_path, std::process::id().to_string().as_bytes())
            .map_err(StoreError::io("create", &abort_path))?;
        fs.sync_dir(&root).map_err(StoreError::io("fsync", &root))?;

        // Know at once whether the disk is full, before the first append.
        inner.check_disk_space(SystemTime::now())?;
        let store = Store { inner, threads: Mutex::new(Vec::new()) };
        if store.inner.config.background {
            store.start_threads()?;
        }
        report.elapsed = started.elapsed();
        tracing::info!(root = %root.display(), abnormal = report.abnormal, log_end = report.log_end,
            truncated = report.truncated_bytes, redispatched = report.redispatched_records,
            elapsed_ms = report.elapsed.as_millis() as u64, "store opened");
        if let Some((used, limit)) = crate::fs::mappings_in_use()
            && used.saturating_mul(10) > limit.saturating_mul(8)
        {
            tracing::warn!(
                used,
                limit,
                "most of vm.max_map_count is in use at start (each consume-queue file is one mapping): new queues will fail to map once it is reached; raise it, e.g. sysctl vm.max_map_count=655360"
            );
        }
        Ok((store, report))
    }

    fn start_threads(&self) -> Result<()> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(name.into()).spawn(f).map_err(StoreError::io("spawn", name))
        };
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-dispatch", Box::new(move || inner.run_dispatcher()))?;
        let _ = self.inner.workers.dispatcher.set(handle.thread().clone());
        threads.push(handle);
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-flush", Box::new(move || inner.run_flusher()))?;
        let _ = self.inner.workers.flusher.set(handle.thread().clone());
        threads.push(handle);
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-queue-flush", Box::new(move || inner.run_queue_flusher()))?;
        let _ = self.inner.workers.queue_flusher.set(handle.thread().clone());
        threads.push(handle);
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-allocate", Box::new(move || inner.run_allocator()))?;
        let _ = self.inner.workers.allocator.set(handle.thread().clone());
        threads.push(handle);
        Ok(())
    }

    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Appends one message. Acknowledge it only after [`durable`](Self::durable) (or, from a
    /// thread, [`wait_durable`](Self::wait_durable)) for its end offset.
    pub fn append(&self, appender: &mut Appender, msg: &MessageToStore<'_>) -> Result<AppendResult> {
        append_one(self.inner.append_context(), appender, msg)
    }

    /// Appends messages for one queue with consecutive queue offsets, all in one segment.
    /// Their physical offsets are in [`Appender::batch_records`].
    pub fn append_batch(&self, appender: &mut Appender, msgs: &[MessageToStore<'_>]) -> Result<AppendResult> {
        append_batch(self.inner.append_context(), appender, msgs)
    }

    /// The durability wait: what an acknowledgement of the record ending at `end_offset` waits
    /// for. With [`FlushMode::Sync`], until an fsync covers it (group commit: one fsync serves
    /// every waiter that arrived meanwhile), within the configured timeout, else
    /// [`StoreError::FlushTimeout`] (the message is stored but not known to be on disk); with
    /// [`FlushMode::Async`], nothing. On a synchronous master ([`StoreConfig::sync_replication`])
    /// also until a slave confirms it (at the same time, not after the flush), else
    /// [`StoreError::ReplicaNotAvailable`] or [`StoreError::ReplicaTimeout`]. This is the one
    /// place that decides when a message counts as durable.
    pub async fn durable(&self, end_offset: i64) -> Result<()> {
        if !self.inner.config.background {
            return self.wait_durable(end_offset);
        }
        let flushed = async {
            match self.inner.config.flush {
                FlushMode::Sync { timeout } => tokio::time::timeout(timeout, self.flushed(end_offset))
                    .await
                    .unwrap_or(Err(StoreError::FlushTimeout(timeout))),
                FlushMode::Async { .. } => Ok(()),
            }
        };
        match self.inner.config.sync_replication {
            None => flushed.await,
            Some(sync) => {
                // Both waits at once; as in Java, the replica's verdict wins when both fail.
                let (flushed, replicated) = tokio::join!(flushed, self.replicated(end_offset, sync));
                replicated.and(flushed)
            }
        }
    }

    /// A synchronous master's half of the durability wait: a slave holds the log up to
    /// `end_offset`. Answered at once when no slave is connected, or the nearest is further
    /// behind than `max_gap` (it would not catch up in time).
    async fn replicated(&self, end_offset: i64, sync: SyncReplication) -> Result<()> {
        let acks = &self.inner.replicas;
        let mut confirmed = acks.confirmed.subscribe();
        if *confirmed.borrow_and_update() >= end_offset {
            return Ok(());
        }
        if acks.connected.load(Ordering::Acquire) == 0 || end_offset - *confirmed.borrow() >= sync.max_gap {
            return Err(StoreError::ReplicaNotAvailable);
        }
        acks.wanted.notify_waiters();
        let reached = async {
            loop {
                if *confirmed.borrow_and_update() >= end_offset {
                    return Ok(());
                }
                if confirmed.changed().await.is_err() {
                    return Err(StoreError::ShutDown);
                }
            }
        };
        tokio::time::timeout(sync.timeout, reached).await.unwrap_or(Err(StoreError::ReplicaTimeout(sync.timeout)))
    }

    /// Leader: up to `max` published commit-log bytes from `from`, within one segment, as a
    /// slice of the mapping (`None` when nothing is published there).
    pub fn log_slice(&self, from: i64, max: usize) -> Option<LogSlice> {
        self.inner.log_slice(from, max)
    }

    /// Leader: waits until the log holds bytes past `offset` (or a synchronous send waits for
    /// a slave), at most `timeout`. Returns whether it does.
    pub async fn log_beyond(&self, offset: i64, timeout: Duration) -> bool {
        let inner = &self.inner;
        let grew = inner.dispatch_progress.notified();
        let wanted = inner.replicas.wanted.notified();
        tokio::pin!(grew, wanted);
        grew.as_mut().enable();
        wanted.as_mut().enable();
        if inner.writer.commit_log.max_offset() > offset {
            return true;
        }
        let _ = tokio::time::timeout(timeout, async {
            tokio::select! {
                _ = &mut grew => {}
                _ = &mut wanted => {}
            }
        })
        .await;
        inner.writer.commit_log.max_offset() > offset
    }

    /// Follower: the start of the last whole record that ends at or before `offset` (`None`
    /// if the log holds none): where a slave asks its master to start, so that the bytes it
    /// already has prove that the master is the one it followed.
    pub fn last_record_start(&self, offset: i64) -> Option<i64> {
        self.inner.last_record_start(offset)
    }

    /// Leader: a slave confirmed it holds the log up to `offset`.
    pub fn replica_confirmed(&self, offset: i64) {
        self.inner.replica_confirmed(offset);
    }

    /// Leader: a slave connected (`true`) or went away.
    pub fn replica_connected(&self, connected: bool) {
        if connected {
            self.inner.replicas.connected.fetch_add(1, Ordering::AcqRel);
        } else {
            let _ =
                self.inner.replicas.connected.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
    }

    /// Follower: starts (or stops) following a master. While following, local appends are
    /// refused with [`StoreError::Replica`] and [`append_replicated`](Self::append_replicated)
    /// takes the master's bytes.
    pub fn set_following(&self, following: bool) {
        self.inner.set_following(following);
    }

    /// Follower: every byte held, a record still arriving included: where the master's next
    /// bytes must start, and what the slave reports.
    pub fn replica_held(&self) -> i64 {
        self.inner.replica_held()
    }

    /// Follower: writes bytes the master holds at `offset` at the same offset and publishes
    /// the records now whole. An empty log starts at `offset`, which must be a segment
    /// boundary. Returns the new held end.
    pub fn append_replicated(&self, offset: i64, bytes: &[u8]) -> std::result::Result<i64, ReplicaError> {
        self.inner.append_replicated(offset, bytes)
    }

    /// Follower: cuts the log back to `end` (a master that lost a tail it never replicated).
    pub fn truncate_replica(&self, end: i64) -> Result<()> {
        self.inner.truncate_replica(end)
    }

    /// [`durable`](Self::durable) for code that runs on its own thread (same condition, same
    /// timeout), blocking it.
    pub fn wait_durable(&self, end_offset: i64) -> Result<()> {
        match self.inner.config.flush {
            FlushMode::Sync { timeout } => self.inner.wait_flushed(end_offset, timeout),
            FlushMode::Async { .. } => Ok(()),
        }
    }

    /// Commit-log offset up to which data is known to be on disk.
    pub fn flushed_offset(&self) -> i64 {
        self.inner.writer.commit_log.flushed_offset()
    }

    /// How many times the commit log has been flushed since open.
    pub fn flush_rounds(&self) -> u64 {
        self.inner.flush_rounds.load(Ordering::Relaxed)
    }

    /// Waits, without a timeout, until the commit log is on disk up to `end_offset`.
    async fn flushed(&self, end_offset: i64) -> Result<()> {
        let mut rx = self.inner.flushed_watch.subscribe();
        self.inner.request_flush(end_offset);
        loop {
            if *rx.borrow_and_update() >= end_offset {
                return Ok(());
            }
            if let Some(why) = self.inner.writer.gate.stopped() {
                return Err(StoreError::WritesStopped(why.to_owned()));
            }
            if self.inner.is_shut_down() && self.inner.writer.commit_log.flushed_offset() < end_offset {
                return Err(StoreError::ShutDown);
            }
            rx.changed().await.map_err(|_| StoreError::ShutDown)?;
        }
    }

    /// Whether [`durable`](Self::durable) waits for anything: a synchronous flush, or a
    /// synchronous master's slave.
    pub fn acknowledges_after_wait(&self) -> bool {
        self.inner.config.flush.is_sync() || self.inner.config.sync_replication.is_some()
    }

    pub fn flush_mode(&self) -> FlushMode {
        self.inner.config.flush
    }

    /// Reads up to `max_count` messages / `max_bytes` bytes of queue (`topic`, `queue_id`)
    /// from logical offset `offset` (docs/protocol.md §4.11).
    pub fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        max_bytes: usize,
        filter: TagFilter<'_>,
    ) -> GetResult {
        self.inner.get_messages(topic, queue_id, offset, max_count, max_bytes, filter)
    }

    /// The record at commit-log offset `offset` (VIEW_MESSAGE_BY_ID).
    pub fn read_at(&self, offset: i64) -> Result<MessageRef> {
        self.inner.read_at(offset)
    }

    /// Records indexed under `key` (a KEYS entry or the UNIQ_KEY) of `topic`, newest first.
    pub fn query_by_key(&self, topic: &str, key: &str, max: usize, begin: i64, end: i64) -> Vec<MessageRef> {
        let Some(index) = &self.inner.index else { return Vec::new() };
        let offsets = index.lock().unwrap_or_else(|e| e.into_inner()).query(topic, key, max, begin, end);
        offsets.into_iter().filter_map(|o| self.inner.read_at(o).ok()).collect()
    }

    /// The consume queue (`topic`, `queue_id`), created in memory if it does not exist (no
    /// files until its first unit), for waiting on new messages.
    pub fn queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.inner.queue(topic, queue_id)
    }

    /// Waits until queue (`topic`, `queue_id`) holds a message at or past `offset`, or
    /// `timeout` passes. Woken by the dispatcher, no polling.
    pub async fn wait_for_message(&self, topic: &str, queue_id: i32, offset: i64, timeout: Duration) -> bool {
        let Some(cq) = self.inner.queue(topic, queue_id) else { return false };
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = cq.notified();
            if cq.max_offset() > offset {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return cq.max_offset() > offset;
            }
        }
    }

    /// Waits until any of `queues` (topic, queue, offset) holds a message at or past its
    /// offset, or `also` is notified, or `timeout` passes; returns whether a queue has one.
    /// (A pop of any queue of a topic, and of its retry topic, waits on all of them.)
    pub async fn wait_for_any_message(
        &self,
        queues: &[(&str, i32, i64)],
        also: Option<&tokio::sync::Notify>,
        timeout: Duration,
    ) -> bool {
        let watched: Vec<(Arc<ConsumeQueue>, i64)> =
            queues.iter().filter_map(|&(t, q, o)| self.inner.queue(t, q).map(|cq| (cq, o))).collect();
        let any = || watched.iter().any(|(cq, o)| cq.max_offset() > *o);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let mut waits: Vec<_> = watched.iter().map(|(cq, _)| Box::pin(cq.notified())).collect();
            for w in &mut waits {
                w.as_mut().enable();
            }
            let mut extra = also.map(|n| Box::pin(n.notified()));
            if let Some(e) = &mut extra {
                e.as_mut().enable();
            }
            if any() {
                return true;
            }
            let woken = std::future::poll_fn(|cx| {
                if let Some(e) = &mut extra
                    && e.as_mut().poll(cx).is_ready()
                {
                    return std::task::Poll::Ready(true);
                }
                for w in &mut waits {
                    if w.as_mut().poll(cx).is_ready() {
                        return std::task::Poll::Ready(false);
                    }
                }
                std::task::Poll::Pending
            });
            match tokio::time::timeout_at(deadline, woken).await {
                Err(_) => return any(),
                Ok(true) => return any(),
                Ok(false) => {}
            }
        }
    }

    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.existing_queue(topic, queue_id).map_or(0, |q| q.max_offset())
    }

    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.existing_queue(topic, queue_id).map_or(0, |q| q.min_offset())
    }

    /// Deletes topic `topic`'s consume queues (their files and directories) and forgets its
    /// queue offsets, as Java's broker does when a topic is deleted; the records stay in the
    /// commit log until retention removes them. Returns how many queues were removed. Waits
    /// (up to a second) for dispatch first, so that what was appended before does not make a
    /// queue again.
    pub fn delete_topic(&self, topic: &str) -> Result<usize> {
        self.wait_dispatched(Duration::from_secs(1));
        let removed = self.inner.queues.write().unwrap_or_else(|e| e.into_inner()).remove(topic);
        self.inner.writer.state.lock().unwrap_or_else(|e| e.into_inner()).queue_offsets.remove(topic);
        let fs = &self.inner.config.fs;
        let dir = self.inner.config.consume_queue_dir().join(topic);
        let mut count = 0;
        for cq in removed.into_iter().flatten().flatten() {
            cq.reset()?;
            count += 1;
        }
        if let Ok(queues) = fs.list_dir(&dir) {
            for q in queues {
                if fs.is_dir(&q) {
                    let _ = fs.remove_dir(&q);
                }
            }
            let _ = fs.remove_dir(&dir);
            let _ = fs.sync_dir(&self.inner.config.consume_queue_dir());
        }
        Ok(count)
    }

    /// The next queue offset the append path will assign (ahead of the consume queue until
    /// dispatch catches up).
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let state = self.inner.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue_offsets.get(topic).and_then(|q| q.get(queue_id as usize)).copied().unwrap_or(0)
    }

    /// The next offset of an LMQ.
    pub fn next_lmq_offset(&self, name: &str) -> i64 {
        let state = self.inner.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        state.lmq_offsets.get(name).copied().unwrap_or(0)
    }

    /// Store timestamp of the message at logical `offset` of a queue.
    pub fn message_store_time(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let cq = self.inner.existing_queue(topic, queue_id)?;
        let unit = cq.get(offset)?;
        self.inner.store_timestamp_at(unit.commit_log_offset)
    }

    /// SEARCH_OFFSET_BY_TIMESTAMP: with `upper == false` the first offset stored at or after
    /// `timestamp` (max offset if none), else the last offset stored at or before it (0 if none).
    pub fn search_offset_by_timestamp(&self, topic: &str, queue_id: i32, timestamp: i64, upper: bool) -> i64 {
        let Some(cq) = self.inner.existing_queue(topic, queue_id) else { return 0 };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        let time_at = |o: i64| cq.get(o).and_then(|u| self.inner.store_timestamp_at(u.commit_log_offset));
        // First offset whose store time is > timestamp (upper) or >= timestamp (lower).
        let (mut lo, mut hi) = (min, max);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let after = time_at(mid).is_none_or(|t| if upper { t > timestamp } else { t >= timestamp });
            if after {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if upper { (lo - 1).max(0) } else { lo }
    }

    /// Commit-log offsets: (min, max).
    pub fn commit_log_range(&self) -> (i64, i64) {
        (self.inner.writer.commit_log.min_offset(), self.inner.writer.commit_log.max_offset())
    }

    /// Commit-log offset up to which records are visible to reads.
    pub fn dispatched_offset(&self) -> i64 {
        self.inner.dispatched.load(Ordering::Acquire)
    }

    /// Bytes appended but not yet dispatched.
    pub fn dispatch_behind(&self) -> i64 {
        self.inner.writer.commit_log.max_offset() - self.dispatched_offset()
    }

    /// Blocks until every record appended so far is dispatched, or `timeout` passes.
    pub fn wait_dispatched(&self, timeout: Duration) -> bool {
        let target = self.inner.writer.commit_log.max_offset();
        let deadline = Instant::now() + timeout;
        while self.dispatched_offset() < target {
            if Instant::now() >= deadline {
                return false;
            }
            self.inner.workers.wake_dispatcher();
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Waits until every record appended before the call is dispatched (so that a read sees
    /// everything acknowledged before it), or `timeout` passes. Returns at once when dispatch
    /// has caught up; otherwise wakes the dispatcher rather than waiting for its next poll.
    pub async fn caught_up(&self, timeout: Duration) -> bool {
        let target = self.inner.writer.commit_log.max_offset();
        if self.dispatched_offset() >= target {
            return true;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progressed = self.inner.dispatch_progress.notified();
            if self.dispatched_offset() >= target {
                return true;
            }
            self.inner.force_wake_dispatcher();
            if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                return self.dispatched_offset() >= target;
            }
        }
    }

    /// Every (topic, queue id) with a consume queue.
    pub fn queues(&self) -> Vec<(String, i32)> {
        let queues = self.inner.queues.read().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(String, i32)> =
            queues.iter().flat_map(|(t, qs)| qs.iter().flatten().map(move |q| (t.to_string(), q.queue_id()))).collect();
        out.sort();
        out
    }

    /// Deletes commit-log segments older than the reserved time (never the active one) and
    /// moves every consume queue's min offset past the records that went with them.
    pub fn delete_expired_files(&self) -> Result<usize> {
        self.inner.delete_expired_files(SystemTime::now())
    }

    /// As [`delete_expired_files`](Self::delete_expired_files), at a given time (tests).
    pub fn delete_expired_files_at(&self, now: SystemTime) -> Result<usize> {
        self.inner.delete_expired_files(now)
    }

    /// The used ratio (0 to 1) of the disk holding the commit log, as last measured (every
    /// `DiskPolicy::check_interval`): the runtime info's `commitLogDiskRatio`.
    pub fn commit_log_disk_ratio(&self) -> f64 {
        f64::from_bits(self.inner.disk_ratio.load(Ordering::Relaxed))
    }

    /// The same for the consume queues' directory (`consumeQueueDiskRatio`).
    pub fn consume_queue_disk_ratio(&self) -> f64 {
        f64::from_bits(self.inner.consume_queue_disk_ratio.load(Ordering::Relaxed))
    }

    /// Whether new messages are refused because the disk is full.
    pub fn is_disk_full(&self) -> bool {
        self.inner.writer.gate.is_disk_full()
    }

    /// Why writes are stopped for good (a sync failed), if they are.
    pub fn writes_stopped(&self) -> Option<String> {
        self.inner.writer.gate.stopped().map(str::to_owned)
    }

    /// One round of the background work, in the caller's thread, for a store opened without
    /// background threads: dispatch what is appended, prepare the next segment if wanted,
    /// flush the commit log, the consume queues, the index and the checkpoint, and apply the
    /// disk-space policy.
    pub fn run_background_once(&self) -> Result<()> {
        let inner = &self.inner;
        inner.dispatch_available(inner.writer.commit_log.max_offset());
        if inner.workers.allocation_wanted.swap(false, Ordering::AcqRel) {
            inner.writer.commit_log.prepare_next()?;
        }
        if inner.writer.commit_log.dirty_bytes() > 0 {
            inner.flush_commit_log(true)?;
        }
        inner.flush_queues_and_checkpoint(true)?;
        inner.check_disk_space(SystemTime::now())
    }

    /// Runs one round of the disk-space policy now (it also runs every
    /// `DiskPolicy::check_interval`).
    pub fn check_disk_space(&self) -> Result<()> {
        self.inner.check_disk_space(SystemTime::now())
    }

    /// Flushes everything, writes the checkpoint, stops the threads and removes `abort`.
    pub fn shutdown(&self) -> Result<()> {
        if self.inner.workers.shutdown.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Let the dispatcher finish what is appended (bounded: it only has published records).
        self.inner.force_wake_dispatcher();
        self.inner.wake_flusher();
        for t in [self.inner.workers.allocator.get(), self.inner.workers.queue_flusher.get()].into_iter().flatten() {
            t.unpark();
        }
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        self.inner.flush_all()?;
        let abort = self.inner.config.root.join("abort");
        match self.inner.config.fs.remove_file(&abort) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("delete", &abort)(e)),
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(error = %e, "store shutdown failed");
        }
    }
}
