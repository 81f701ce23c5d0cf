//! The store: opening and recovery, the background threads (dispatcher, flusher, segment
//! allocator), and the public API.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use silo_wire::record::{Decoded, decode_record};

use crate::append::{AppendResult, Appender, MessageToStore, append_batch, append_one};
use crate::checkpoint::{Checkpoint, CheckpointFile};
use crate::commit_log::CommitLog;
use crate::config::{FlushMode, StoreConfig};
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::index::IndexService;
use crate::mapped::MappedFile;
use crate::names::is_valid_topic;

pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Offsets assigned inside the append critical section.
#[derive(Debug, Default)]
pub(crate) struct AppendState {
    pub(crate) current: Option<Arc<MappedFile>>,
    /// topic → queue id → next queue offset (Java's `topicQueueTable`).
    pub(crate) queue_offsets: HashMap<Box<str>, Vec<i64>>,
    /// LMQ name → next offset.
    pub(crate) lmq_offsets: HashMap<Box<str>, i64>,
    pub(crate) last_store_timestamp: i64,
}

/// topic → queue id → consume queue.
type QueueTable = HashMap<Box<str>, Vec<Option<Arc<ConsumeQueue>>>>;

#[derive(Debug, Default)]
struct FlushRequests {
    /// Highest end offset a synchronous appender waits for.
    requested: i64,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: StoreConfig,
    pub(crate) commit_log: CommitLog,
    pub(crate) append_state: Mutex<AppendState>,
    queues: RwLock<QueueTable>,
    /// Commit-log offset up to which records are dispatched into consume queues.
    pub(crate) dispatched: AtomicI64,
    /// Woken after every dispatch round that moved `dispatched`.
    pub(crate) dispatch_progress: tokio::sync::Notify,
    /// Store timestamp of the last dispatched record.
    pub(crate) last_dispatched_timestamp: AtomicI64,
    pub(crate) index: Option<Mutex<IndexService>>,
    /// Records below this commit-log offset are in the index already (recovery re-dispatch).
    pub(crate) index_covered: AtomicI64,
    checkpoint: Mutex<(CheckpointFile, Checkpoint)>,
    flush_requests: Mutex<FlushRequests>,
    flush_requested: Condvar,
    flush_done: Condvar,
    flushed_watch: tokio::sync::watch::Sender<i64>,
    /// msync rounds of the commit log (group commit makes this far smaller than the appends).
    flush_rounds: std::sync::atomic::AtomicU64,
    shutdown: AtomicBool,
    dispatcher: OnceLock<Thread>,
    /// Set while the dispatcher sleeps for long (idle store): only then do appenders wake it.
    pub(crate) dispatcher_sleeping: AtomicBool,
    flusher: OnceLock<Thread>,
    allocator: OnceLock<Thread>,
    allocation_wanted: AtomicBool,
    /// The open `lock` file, held (fcntl lock) for the life of the store.
    _lock: std::fs::File,
    _root_guard: RootGuard,
}

/// fcntl locks are per process: they keep other processes (another Silo, a Java broker) out,
/// but not a second `Store::open` of the same directory in this process. This registry does.
static OPEN_ROOTS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

#[derive(Debug)]
struct RootGuard(std::path::PathBuf);

impl RootGuard {
    fn acquire(root: &std::path::Path) -> Result<Self> {
        let canonical = root.canonicalize().map_err(StoreError::io("resolve", root))?;
        let mut open = OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner());
        if open.contains(&canonical) {
            return Err(StoreError::Locked(root.to_owned()));
        }
        open.push(canonical.clone());
        Ok(Self(canonical))
    }
}

impl Drop for RootGuard {
    fn drop(&mut self) {
        OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != self.0);
    }
}

/// The message store. Cheap to share behind an `Arc`; all methods take `&self`.
#[derive(Debug)]
pub struct Store {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Status of a read (docs/protocol.md §4.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

/// A record in the commit log, borrowed without copying: it keeps its segment mapped while
/// it lives, even if retention deletes the file meanwhile.
#[derive(Debug, Clone)]
pub struct MessageRef {
    segment: Arc<MappedFile>,
    pos: usize,
    len: usize,
    /// The consume-queue offset this record was read at (for LMQ reads, the LMQ offset).
    pub queue_offset: i64,
    pub tags_code: i64,
}

impl MessageRef {
    pub fn physical_offset(&self) -> i64 {
        self.segment.start() as i64 + self.pos as i64
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for MessageRef {
    fn as_ref(&self) -> &[u8] {
        self.segment.readable(self.pos, self.len).unwrap_or_default()
    }
}

impl std::ops::Deref for MessageRef {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

/// The result of [`Store::get_messages`].
#[derive(Debug)]
pub struct GetResult {
    pub status: GetStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub messages: Vec<MessageRef>,
    pub total_bytes: usize,
}

/// Which tags codes a read returns.
#[derive(Debug, Clone, Copy)]
pub enum TagFilter<'a> {
    All,
    /// Codes of the subscribed tags; messages without a tag (code 0) always match.
    Codes(&'a [i64]),
}

impl TagFilter<'_> {
    fn matches(&self, code: i64) -> bool {
        match self {
            Self::All => true,
            Self::Codes(codes) => code == 0 || codes.contains(&code),
        }
    }
}

/// What recovery found and did, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub abnormal: bool,
    /// Where the recovery walk started.
    pub walk_from: i64,
    /// The end of the valid log.
    pub log_end: i64,
    /// Bytes past the last valid record that were dropped (a torn or garbled tail).
    pub truncated_bytes: u64,
    pub redispatched_records: u64,
    /// Consume queues found damaged (an invalid unit with data after it) and rebuilt.
    pub rebuilt_queues: usize,
    pub elapsed: Duration,
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
        std::fs::create_dir_all(&root).map_err(StoreError::io("create", &root))?;
        let root_guard = RootGuard::acquire(&root)?;
        let lock_path = root.join("lock");
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(StoreError::io("open", &lock_path))?;
        rustix::fs::fcntl_lock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| StoreError::Locked(root.clone()))?;
        let abort_path = root.join("abort");
        let abnormal = abort_path.exists();

        let commit_log = CommitLog::open(&config.commit_log_dir(), config.commit_log_segment_size)?;
        let (checkpoint_file, checkpoint) = CheckpointFile::open(&root.join("checkpoint"))?;
        let index = match &config.index {
            Some(ic) => Some(Mutex::new(IndexService::open(&config.index_dir(), *ic)?)),
            None => None,
        };
        let (flushed_watch, _) = tokio::sync::watch::channel(0i64);
        let inner = Arc::new(Inner {
            commit_log,
            append_state: Mutex::new(AppendState::default()),
            queues: RwLock::new(HashMap::new()),
            dispatched: AtomicI64::new(0),
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
            shutdown: AtomicBool::new(false),
            dispatcher: OnceLock::new(),
            dispatcher_sleeping: AtomicBool::new(false),
            flusher: OnceLock::new(),
            allocator: OnceLock::new(),
            allocation_wanted: AtomicBool::new(false),
            _lock: lock,
            _root_guard: root_guard,
            config,
        });
        let mut report = inner.recover(abnormal, checkpoint)?;

        // Mark the store as running: a crash from here on leaves `abort` behind.
        let mut abort = std::fs::File::create(&abort_path).map_err(StoreError::io("create", &abort_path))?;
        let _ = write!(abort, "{}", std::process::id());
        abort.sync_all().map_err(StoreError::io("fsync", &abort_path))?;

        let store = Store { inner, threads: Mutex::new(Vec::new()) };
        store.start_threads()?;
        report.elapsed = started.elapsed();
        tracing::info!(root = %root.display(), abnormal = report.abnormal, log_end = report.log_end,
            truncated = report.truncated_bytes, redispatched = report.redispatched_records,
            elapsed_ms = report.elapsed.as_millis() as u64, "store opened");
        Ok((store, report))
    }

    fn start_threads(&self) -> Result<()> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new().name(name.into()).spawn(f).map_err(StoreError::io("spawn", name))
        };
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-dispatch", Box::new(move || inner.run_dispatcher()))?;
        let _ = self.inner.dispatcher.set(handle.thread().clone());
        threads.push(handle);
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-flush", Box::new(move || inner.run_flusher()))?;
        let _ = self.inner.flusher.set(handle.thread().clone());
        threads.push(handle);
        let inner = Arc::clone(&self.inner);
        let handle = spawn("silo-allocate", Box::new(move || inner.run_allocator()))?;
        let _ = self.inner.allocator.set(handle.thread().clone());
        threads.push(handle);
        Ok(())
    }

    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Appends one message. Acknowledge it only after [`durable`](Self::durable) (or, from a
    /// thread, [`wait_durable`](Self::wait_durable)) for its end offset.
    pub fn append(&self, appender: &mut Appender, msg: &MessageToStore<'_>) -> Result<AppendResult> {
        append_one(&self.inner, appender, msg)
    }

    /// Appends messages for one queue with consecutive queue offsets, all in one segment.
    /// Their physical offsets are in [`Appender::batch_records`].
    pub fn append_batch(&self, appender: &mut Appender, msgs: &[MessageToStore<'_>]) -> Result<AppendResult> {
        append_batch(&self.inner, appender, msgs)
    }

    /// The durability wait: what an acknowledgement of the record ending at `end_offset` waits
    /// for. With [`FlushMode::Sync`], until an fsync covers it (group commit: one fsync serves
    /// every waiter that arrived meanwhile), within the configured timeout, else
    /// [`StoreError::FlushTimeout`] (the message is stored but not known to be on disk); with
    /// [`FlushMode::Async`], nothing. This is the one place that decides when a message counts
    /// as durable, so it is where "also on a synchronous replica" plugs in.
    pub async fn durable(&self, end_offset: i64) -> Result<()> {
        match self.inner.config.flush {
            FlushMode::Sync { timeout } => tokio::time::timeout(timeout, self.flushed(end_offset))
                .await
                .unwrap_or(Err(StoreError::FlushTimeout(timeout))),
            FlushMode::Async { .. } => Ok(()),
        }
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
        self.inner.commit_log.flushed_offset()
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
            if self.inner.is_shut_down() && self.inner.commit_log.flushed_offset() < end_offset {
                return Err(StoreError::ShutDown);
            }
            rx.changed().await.map_err(|_| StoreError::ShutDown)?;
        }
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

    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.existing_queue(topic, queue_id).map_or(0, |q| q.max_offset())
    }

    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.existing_queue(topic, queue_id).map_or(0, |q| q.min_offset())
    }

    /// The next queue offset the append path will assign (ahead of the consume queue until
    /// dispatch catches up).
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        let state = self.inner.append_state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue_offsets.get(topic).and_then(|q| q.get(queue_id as usize)).copied().unwrap_or(0)
    }

    /// The next offset of an LMQ.
    pub fn next_lmq_offset(&self, name: &str) -> i64 {
        let state = self.inner.append_state.lock().unwrap_or_else(|e| e.into_inner());
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
        (self.inner.commit_log.min_offset(), self.inner.commit_log.max_offset())
    }

    /// Commit-log offset up to which records are visible to reads.
    pub fn dispatched_offset(&self) -> i64 {
        self.inner.dispatched.load(Ordering::Acquire)
    }

    /// Bytes appended but not yet dispatched.
    pub fn dispatch_behind(&self) -> i64 {
        self.inner.commit_log.max_offset() - self.dispatched_offset()
    }

    /// Blocks until every record appended so far is dispatched, or `timeout` passes.
    pub fn wait_dispatched(&self, timeout: Duration) -> bool {
        let target = self.inner.commit_log.max_offset();
        let deadline = Instant::now() + timeout;
        while self.dispatched_offset() < target {
            if Instant::now() >= deadline {
                return false;
            }
            self.inner.wake_dispatcher();
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Waits until every record appended before the call is dispatched (so that a read sees
    /// everything acknowledged before it), or `timeout` passes. Returns at once when dispatch
    /// has caught up; otherwise wakes the dispatcher rather than waiting for its next poll.
    pub async fn caught_up(&self, timeout: Duration) -> bool {
        let target = self.inner.commit_log.max_offset();
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

    /// Flushes everything, writes the checkpoint, stops the threads and removes `abort`.
    pub fn shutdown(&self) -> Result<()> {
        if self.inner.shutdown.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Let the dispatcher finish what is appended (bounded: it only has published records).
        self.inner.force_wake_dispatcher();
        self.inner.wake_flusher();
        if let Some(t) = self.inner.allocator.get() {
            t.unpark();
        }
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        self.inner.flush_all()?;
        let abort = self.inner.config.root.join("abort");
        match std::fs::remove_file(&abort) {
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

impl Inner {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Called after every append: a syscall only when the dispatcher sleeps for long. Under
    /// load it polls every millisecond (as Java's reput service does), so appends never wake
    /// it one by one.
    pub(crate) fn wake_dispatcher(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.dispatcher_sleeping.load(Ordering::SeqCst)
            && let Some(t) = self.dispatcher.get()
        {
            t.unpark();
        }
    }

    pub(crate) fn force_wake_dispatcher(&self) {
        if let Some(t) = self.dispatcher.get() {
            t.unpark();
        }
    }

    /// Wakes the flusher, whether it waits on a sync request or sleeps between async rounds.
    pub(crate) fn wake_flusher(&self) {
        self.flush_requested.notify_all();
        if let Some(t) = self.flusher.get() {
            t.unpark();
        }
    }

    pub(crate) fn request_allocation(&self) {
        self.allocation_wanted.store(true, Ordering::Release);
        if let Some(t) = self.allocator.get() {
            t.unpark();
        }
    }

    pub(crate) fn existing_queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        let queues = self.queues.read().unwrap_or_else(|e| e.into_inner());
        queues.get(topic)?.get(usize::try_from(queue_id).ok()?)?.clone()
    }

    /// The consume queue, created (in memory) if missing. `None` for an invalid name.
    pub(crate) fn queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        if let Some(q) = self.existing_queue(topic, queue_id) {
            return Some(q);
        }
        if !is_valid_topic(topic) {
            return None;
        }
        let index = usize::try_from(queue_id).ok()?;
        let mut queues = self.queues.write().unwrap_or_else(|e| e.into_inner());
        let slots = queues.entry(topic.into()).or_default();
        if slots.len() <= index {
            slots.resize(index + 1, None);
        }
        let slot = slots.get_mut(index)?;
        Some(Arc::clone(slot.get_or_insert_with(|| {
            Arc::new(ConsumeQueue::new(
                &self.config.consume_queue_dir(),
                topic,
                queue_id,
                self.config.consume_queue_units_per_file * crate::consume_queue::UNIT_SIZE,
            ))
        })))
    }

    fn all_queues(&self) -> Vec<Arc<ConsumeQueue>> {
        let queues = self.queues.read().unwrap_or_else(|e| e.into_inner());
        queues.values().flat_map(|qs| qs.iter().flatten().cloned()).collect()
    }

    pub(crate) fn read_at(&self, offset: i64) -> Result<MessageRef> {
        let segment = self.commit_log.segment_for(offset).ok_or(StoreError::NoRecordAt(offset))?;
        let pos = (offset as u64 - segment.start()) as usize;
        let bytes = segment.readable_from(pos).ok_or(StoreError::NoRecordAt(offset))?;
        match decode_record(bytes, 0) {
            Ok(Decoded::Record(rec)) => Ok(MessageRef {
                len: rec.total_size,
                segment: Arc::clone(&segment),
                pos,
                queue_offset: rec.meta.queue_offset,
                tags_code: rec.tags_code(),
            }),
            _ => Err(StoreError::NoRecordAt(offset)),
        }
    }

    fn record_ref(&self, offset: i64, size: i32) -> Option<MessageRef> {
        let segment = self.commit_log.segment_for(offset)?;
        let pos = (offset as u64 - segment.start()) as usize;
        let len = usize::try_from(size).ok()?;
        // A unit that does not point at a record of its size (a damaged unit) reads as missing.
        let head = segment.readable(pos, 8)?;
        let total = i32::from_be_bytes(head.get(..4)?.try_into().ok()?);
        let magic = i32::from_be_bytes(head.get(4..8)?.try_into().ok()?);
        if total != size || !(magic == silo_wire::record::MAGIC_V1 || magic == silo_wire::record::MAGIC_V2) {
            tracing::error!(offset, size, "consume-queue unit does not point at a record");
            return None;
        }
        segment.readable(pos, len)?;
        Some(MessageRef { segment, pos, len, queue_offset: 0, tags_code: 0 })
    }

    pub(crate) fn store_timestamp_at(&self, offset: i64) -> Option<i64> {
        let segment = self.commit_log.segment_for(offset)?;
        let pos = (offset as u64 - segment.start()) as usize;
        let head = segment.readable(pos, 40)?;
        let sys = i32::from_be_bytes(head.get(36..40)?.try_into().ok()?);
        let at = pos + silo_wire::record::store_timestamp_offset(sys);
        Some(i64::from_be_bytes(segment.readable(at, 8)?.try_into().ok()?))
    }

    fn get_messages(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        max_bytes: usize,
        filter: TagFilter<'_>,
    ) -> GetResult {
        let mut result = GetResult {
            status: GetStatus::NoMatchedLogicQueue,
            next_begin_offset: 0,
            min_offset: 0,
            max_offset: 0,
            messages: Vec::new(),
            total_bytes: 0,
        };
        let Some(cq) = self.existing_queue(topic, queue_id) else { return result };
        let (min, max) = (cq.min_offset(), cq.max_offset());
        result.min_offset = min;
        result.max_offset = max;
        if max == 0 {
            result.status = GetStatus::NoMessageInQueue;
            return result;
        }
        if offset < min {
            result.status = GetStatus::OffsetTooSmall;
            result.next_begin_offset = min;
            return result;
        }
        if offset == max {
            result.status = GetStatus::OffsetOverflowOne;
            result.next_begin_offset = offset;
            return result;
        }
        if offset > max {
            result.status = GetStatus::OffsetOverflowBadly;
            result.next_begin_offset = max;
            return result;
        }
        let max_count = max_count.max(1);
        let max_scan = (16_000 / crate::consume_queue::UNIT_SIZE).max(max_count) as i64;
        let mut next = offset;
        let mut status = GetStatus::NoMatchedMessage;
        cq.scan(offset, |at, unit| {
            if at - offset >= max_scan || result.messages.len() >= max_count {
                return false;
            }
            let size = usize::try_from(unit.size).unwrap_or(usize::MAX);
            if !result.messages.is_empty() && result.total_bytes + size > max_bytes {
                return false;
            }
            next = at + 1;
            if unit.is_blank() || !filter.matches(unit.tags_code) {
                return true;
            }
            match self.record_ref(unit.commit_log_offset, unit.size) {
                Some(mut m) => {
                    m.queue_offset = at;
                    m.tags_code = unit.tags_code;
                    result.total_bytes += m.len;
                    result.messages.push(m);
                    status = GetStatus::Found;
                }
                None => {
                    if result.messages.is_empty() {
                        status = GetStatus::MessageWasRemoving;
                    }
                }
            }
            true
        });
        if next == offset {
            // The file holding `offset` is gone or not readable.
            result.status = GetStatus::OffsetFoundNull;
            let per_file = self.config.consume_queue_units_per_file as i64;
            result.next_begin_offset = (offset / per_file + 1) * per_file;
            return result;
        }
        result.status = status;
        result.next_begin_offset = next;
        result
    }

    // ------------------------------------------------------------------------------------
    // Flushing

    pub(crate) fn request_flush(&self, end_offset: i64) {
        let mut req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        if end_offset > req.requested {
            req.requested = end_offset;
        }
        drop(req);
        self.wake_flusher();
    }

    fn wait_flushed(&self, end_offset: i64, timeout: Duration) -> Result<()> {
        if self.commit_log.flushed_offset() >= end_offset {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        let mut req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        if end_offset > req.requested {
            req.requested = end_offset;
        }
        self.flush_requested.notify_one();
        if !self.config.flush.is_sync()
            && let Some(t) = self.flusher.get()
        {
            t.unpark();
        }
        while self.commit_log.flushed_offset() < end_offset {
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::FlushTimeout(timeout));
            }
            req = self.flush_done.wait_timeout(req, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        Ok(())
    }

    fn flush_commit_log(&self) -> Result<i64> {
        // Read the timestamp first: it then belongs to a record at or before the flushed end.
        let ts = self.append_state.lock().unwrap_or_else(|e| e.into_inner()).last_store_timestamp;
        let flushed = self.commit_log.flush()?;
        self.flush_rounds.fetch_add(1, Ordering::Relaxed);
        {
            let mut cp = self.checkpoint.lock().unwrap_or_else(|e| e.into_inner());
            cp.1.physic_msg_timestamp = cp.1.physic_msg_timestamp.max(ts);
        }
        let _guard = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_done.notify_all();
        self.flushed_watch.send_replace(flushed);
        Ok(flushed)
    }

    fn flush_queues_and_checkpoint(&self) -> Result<()> {
        let ts = self.last_dispatched_timestamp.load(Ordering::Acquire);
        for q in self.all_queues() {
            q.flush()?;
        }
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

    fn flush_all(&self) -> Result<()> {
        self.flush_commit_log()?;
        self.flush_queues_and_checkpoint()
    }

    fn run_flusher(self: &Arc<Self>) {
        let mut last_queue_flush = Instant::now();
        let mut last_thorough = Instant::now();
        let mut last_clean = Instant::now();
        loop {
            let shutting_down = self.is_shut_down();
            match self.config.flush {
                FlushMode::Sync { .. } => {
                    let req = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner());
                    let pending = req.requested > self.commit_log.flushed_offset();
                    if !pending && !shutting_down {
                        let _ = self.flush_requested.wait_timeout(req, Duration::from_millis(10));
                    } else {
                        drop(req);
                    }
                    // Everything appended so far is flushed by this one sync: group commit.
                    if self.commit_log.dirty_bytes() > 0
                        && let Err(e) = self.flush_commit_log()
                    {
                        tracing::error!(error = %e, "commit-log flush failed");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                FlushMode::Async { interval, least_pages, thorough_interval } => {
                    if !self.is_shut_down() {
                        std::thread::park_timeout(interval);
                    }
                    let thorough = last_thorough.elapsed() >= thorough_interval;
                    let dirty = self.commit_log.dirty_bytes();
                    let requested = self.flush_requests.lock().unwrap_or_else(|e| e.into_inner()).requested
                        > self.commit_log.flushed_offset();
                    if dirty > 0 && (thorough || requested || dirty as usize >= least_pages * 4096) {
                        if let Err(e) = self.flush_commit_log() {
                            tracing::error!(error = %e, "commit-log flush failed");
                        }
                        if thorough {
                            last_thorough = Instant::now();
                        }
                    }
                }
            }
            if last_queue_flush.elapsed() >= self.config.consume_queue_flush_interval {
                if let Err(e) = self.flush_queues_and_checkpoint() {
                    tracing::error!(error = %e, "consume-queue flush failed");
                }
                last_queue_flush = Instant::now();
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

    /// Prepares the next segment ahead of need and keeps the pages ahead of the writer
    /// faulted in. Polls often while appends flow, rarely when idle.
    fn run_allocator(self: &Arc<Self>) {
        let mut idle = Duration::from_millis(5);
        let mut last_end = self.commit_log.max_offset();
        loop {
            if self.is_shut_down() {
                return;
            }
            if self.allocation_wanted.swap(false, Ordering::AcqRel)
                && let Err(e) = self.commit_log.prepare_next()
            {
                tracing::warn!(error = %e, "could not prepare the next commit-log segment");
            }
            self.commit_log.prefault();
            // Poll often while the log grows, back off while it does not.
            let end = self.commit_log.max_offset();
            idle = if end != last_end { Duration::from_millis(2) } else { (idle * 2).min(Duration::from_millis(200)) };
            last_end = end;
            std::thread::park_timeout(idle);
        }
    }

    // ------------------------------------------------------------------------------------
    // Retention

    fn delete_expired_files(&self, now: SystemTime) -> Result<usize> {
        let reserved = self.config.file_reserved_time;
        let mut deleted = 0usize;
        let min = self.commit_log.delete_oldest_while(|seg| {
            let expired = seg.modified().is_some_and(|m| m + reserved <= now);
            if expired {
                deleted += 1;
            }
            expired
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

    // ------------------------------------------------------------------------------------
    // Recovery

    /// Loads every consume queue; returns those found damaged (to be rebuilt).
    fn load_queues(&self) -> Result<Vec<Arc<ConsumeQueue>>> {
        let mut damaged = Vec::new();
        let root = self.config.consume_queue_dir();
        let topics = match std::fs::read_dir(&root) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(damaged),
            Err(e) => return Err(StoreError::io("list", &root)(e)),
        };
        for topic in topics {
            let topic = topic.map_err(StoreError::io("list", &root))?;
            let Some(name) = topic.file_name().to_str().map(str::to_owned) else { continue };
            if !is_valid_topic(&name) {
                tracing::warn!(path = %topic.path().display(), "ignoring a consume-queue directory with an invalid topic name");
                continue;
            }
            for queue in std::fs::read_dir(topic.path()).map_err(StoreError::io("list", topic.path()))? {
                let queue = queue.map_err(StoreError::io("list", topic.path()))?;
                let Some(id) = queue.file_name().to_str().and_then(|s| s.parse::<i32>().ok()).filter(|id| *id >= 0)
                else {
                    continue;
                };
                if let Some(cq) = self.queue(&name, id)
                    && cq.load()? == crate::consume_queue::LoadOutcome::Damaged
                {
                    damaged.push(cq);
                }
            }
        }
        Ok(damaged)
    }

    /// Recovery (docs/store-format.md §7.5): find the end of the valid log, cut away a
    /// torn tail, make the consume queues agree with it, re-dispatch what they miss, and
    /// restore every queue's next offset.
    fn recover(&self, abnormal: bool, checkpoint: Checkpoint) -> Result<RecoveryReport> {
        let damaged = self.load_queues()?;
        let segments = self.commit_log.segments();
        let mut report = RecoveryReport { abnormal, rebuilt_queues: damaged.len(), ..Default::default() };
        if segments.is_empty() {
            // No log: no queue may name a record.
            for q in &damaged {
                q.reset()?;
            }
            for q in self.all_queues() {
                q.truncate_beyond(0)?;
            }
            let start = 0;
            self.commit_log.truncate_to(start)?;
            self.dispatched.store(start, Ordering::Release);
            self.restore_offsets();
            return Ok(report);
        }
        // Where to start walking. After a clean shutdown the last three segments suffice (as in
        // Java); after a crash, the newest segment whose first record is older than what the
        // checkpoint says was both flushed and dispatched.
        let start_index = if !abnormal {
            segments.len().saturating_sub(3)
        } else {
            let min_ts = checkpoint.min_timestamp();
            segments
                .iter()
                .enumerate()
                .rev()
                .find(|(_, seg)| match decode_record(seg.all_bytes(), 0) {
                    Ok(Decoded::Record(r)) => min_ts > 0 && r.meta.store_timestamp <= min_ts,
                    _ => false,
                })
                .map_or(0, |(i, _)| i)
        };
        let walk_from = segments.get(start_index).map_or(0, |s| s.start() as i64);
        report.walk_from = walk_from;

        // Pass 1: validate records up to the first invalid one.
        let mut end = walk_from;
        let mut last_store_timestamp = 0i64;
        'segments: for seg in segments.iter().skip(start_index) {
            let bytes = seg.all_bytes();
            let mut pos = 0usize;
            while pos < bytes.len() {
                match decode_record(bytes.get(pos..).unwrap_or_default(), pos) {
                    Ok(Decoded::Record(rec)) => {
                        let expected = seg.start() as i64 + pos as i64;
                        if rec.meta.physical_offset != expected
                            || (self.config.check_crc_on_recover && !rec.body_crc_matches())
                        {
                            break 'segments;
                        }
                        pos += rec.total_size;
                        end = seg.start() as i64 + pos as i64;
                        last_store_timestamp = last_store_timestamp.max(rec.meta.store_timestamp);
                    }
                    Ok(Decoded::Blank { .. }) => {
                        end = seg.end() as i64;
                        continue 'segments;
                    }
                    Err(_) => break 'segments,
                }
            }
            end = seg.end() as i64;
        }
        let last = segments.last().map_or(0, |s| s.end() as i64);
        report.log_end = end;
        report.truncated_bytes = segments
            .iter()
            .filter(|s| s.end() as i64 > end)
            .map(|s| {
                let from = (end - s.start() as i64).max(0) as usize;
                s.all_bytes().get(from..).map_or(0, |b| b.iter().rposition(|x| *x != 0).map_or(0, |p| p + 1)) as u64
            })
            .sum();
        let _ = last;
        self.commit_log.truncate_to(end)?;

        // Damaged queues are rebuilt from the whole log; the others must not point past it.
        for q in &damaged {
            q.reset()?;
        }
        if !damaged.is_empty() {
            report.redispatched_records += self.rebuild_queues(&damaged, end);
        }
        for q in self.all_queues() {
            q.truncate_beyond(end)?;
        }
        // Pass 2: re-dispatch. After a clean shutdown everything was dispatched, except what
        // lies past the queues' coverage; after a crash, everything from the walk start
        // (units already present are skipped, so this is idempotent).
        // Re-dispatch from the walk start in both cases: a unit already present is skipped, so
        // this only fills in what the queues miss (after a crash, or a lost queue file).
        let redispatch_from = walk_from;
        if abnormal && let Some(index) = &self.index {
            let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
            index.discard_newer_than(checkpoint.index_msg_timestamp)?;
        }
        self.index_covered.store(self.index_end(), Ordering::Release);
        self.dispatched.store(redispatch_from, Ordering::Release);
        report.redispatched_records += self.dispatch_available(end);
        // Queues must not start before the oldest record still in the log.
        let log_min = self.commit_log.min_offset();
        for q in self.all_queues() {
            q.correct_min_offset(log_min)?;
        }
        self.restore_offsets();
        // Store timestamps never go backwards across a restart either: recovery after a
        // crash relies on them to find where to start.
        let mut state = self.append_state.lock().unwrap_or_else(|e| e.into_inner());
        state.last_store_timestamp = last_store_timestamp;
        drop(state);
        Ok(report)
    }

    fn index_end(&self) -> i64 {
        match &self.index {
            Some(index) => index.lock().unwrap_or_else(|e| e.into_inner()).end_phys_offset(),
            None => 0,
        }
    }

    /// Rebuilds the next queue and LMQ offsets from the consume queues.
    fn restore_offsets(&self) {
        let mut state = self.append_state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue_offsets.clear();
        state.lmq_offsets.clear();
        for q in self.all_queues() {
            if crate::names::is_lmq(q.topic()) {
                state.lmq_offsets.insert(q.topic().into(), q.max_offset());
            } else {
                let slots = state.queue_offsets.entry(q.topic().into()).or_default();
                let i = q.queue_id() as usize;
                if slots.len() <= i {
                    slots.resize(i + 1, 0);
                }
                if let Some(s) = slots.get_mut(i) {
                    *s = q.max_offset();
                }
            }
        }
        state.current = self.commit_log.last_segment();
    }
}
