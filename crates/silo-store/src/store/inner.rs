//! The state the store's parts share: the writer, the consume queues and what dispatch has
//! reached, the index, the flush state and checkpoint, and the workers. Each part (read,
//! flush, segments, recovery, dispatch) adds its methods in its own file; the append path
//! sees only the writer, the config and the workers ([`AppendContext`]).

use super::append::{AppendContext, Writer};
use super::workers::Workers;
use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use crate::checkpoint::{Checkpoint, CheckpointFile};
use crate::config::StoreConfig;
use crate::consume_queue::ConsumeQueue;
use crate::index::IndexService;
use crate::names::is_valid_topic;

/// topic → queue id → consume queue.
pub(crate) type QueueTable = HashMap<Box<str>, Vec<Option<Arc<ConsumeQueue>>>>;

#[derive(Debug, Default)]
pub(crate) struct FlushRequests {
    /// Highest end offset a synchronous appender waits for.
    pub(crate) requested: i64,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: StoreConfig,
    /// The commit log and the append path's state (`append.rs`).
    pub(crate) writer: Writer,
    pub(crate) queues: RwLock<QueueTable>,
    /// Commit-log offset up to which records are dispatched into consume queues.
    pub(crate) dispatched: AtomicI64,
    /// Held by a dispatch round, so that a replica's truncation never runs beside one.
    pub(crate) dispatch_round: Mutex<()>,
    /// Set while the dispatcher cannot write a consume queue (and so stops before a record).
    pub(crate) dispatch_stalled: std::sync::atomic::AtomicBool,
    /// Set while index writes fail (logged once).
    pub(crate) index_failing: std::sync::atomic::AtomicBool,
    /// Woken after every dispatch round that moved `dispatched`.
    pub(crate) dispatch_progress: tokio::sync::Notify,
    /// Store timestamp of the last dispatched record.
    pub(crate) last_dispatched_timestamp: AtomicI64,
    pub(crate) index: Option<Mutex<IndexService>>,
    /// Records below this commit-log offset are in the index already (recovery re-dispatch).
    pub(crate) index_covered: AtomicI64,
    pub(crate) checkpoint: Mutex<(CheckpointFile, Checkpoint)>,
    pub(crate) flush_requests: Mutex<FlushRequests>,
    pub(crate) flush_requested: Condvar,
    pub(crate) flush_done: Condvar,
    pub(crate) flushed_watch: tokio::sync::watch::Sender<i64>,
    /// msync rounds of the commit log (group commit makes this far smaller than the appends).
    pub(crate) flush_rounds: std::sync::atomic::AtomicU64,
    /// The used ratio of the disk holding the commit log (f64 bits), as last measured.
    pub(crate) disk_ratio: std::sync::atomic::AtomicU64,
    /// The same for the consume queues' directory.
    pub(crate) consume_queue_disk_ratio: std::sync::atomic::AtomicU64,
    /// The background threads and how to wake them (`workers.rs`).
    pub(crate) workers: Workers,
    /// What the slaves of a master confirmed (`replica.rs`).
    pub(crate) replicas: super::replica::ReplicaAcks,
    /// The store directory, held for this store alone for its life.
    pub(crate) _lock: Box<dyn crate::fs::StoreLock>,
}

impl Inner {
    pub(crate) fn is_shut_down(&self) -> bool {
        self.workers.is_shut_down()
    }

    pub(crate) fn force_wake_dispatcher(&self) {
        self.workers.force_wake_dispatcher();
    }

    /// What the append path reads of the store.
    pub(crate) fn append_context(&self) -> AppendContext<'_> {
        AppendContext { config: &self.config, writer: &self.writer, workers: &self.workers }
    }

    /// Wakes the flusher, whether it waits on a sync request or sleeps between async rounds.
    pub(crate) fn wake_flusher(&self) {
        self.flush_requested.notify_all();
        if let Some(t) = self.workers.flusher.get() {
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
                &self.config.fs,
                &self.config.consume_queue_dir(),
                topic,
                queue_id,
                self.config.consume_queue_units_per_file * crate::consume_queue::UNIT_SIZE,
            ))
        })))
    }

    pub(crate) fn all_queues(&self) -> Vec<Arc<ConsumeQueue>> {
        let queues = self.queues.read().unwrap_or_else(|e| e.into_inner());
        queues.values().flat_map(|qs| qs.iter().flatten().cloned()).collect()
    }
}
