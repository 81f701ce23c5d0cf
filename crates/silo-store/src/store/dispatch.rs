//! The dispatcher (docs/store-format.md §7.3): follows the commit log and writes consume-queue units, LMQ
//! units and index entries for every record, parsing records in place in the mapped segment.
//! It wakes the waiters of every queue that got units, once per round, not once per message.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use silo_wire::properties::keys;
use silo_wire::record::{Decoded, StoredRecord, decode_record, sys_flag};

use super::inner::Inner;
use crate::consume_queue::{ConsumeQueue, Unit};
use crate::names::{SCHEDULE_TOPIC, delay_for_level, is_lmq, is_valid_topic, topic_allows_lmq};

impl Inner {
    pub(crate) fn run_dispatcher(self: &Arc<Self>) {
        // Reused across rounds, so that a round allocates nothing.
        let mut touched = Vec::new();
        let mut idle_rounds = 0u32;
        loop {
            let target = self.writer.commit_log.max_offset();
            if self.dispatched_offset() < target {
                self.dispatch_with(target, &mut touched);
                idle_rounds = 0;
                if self.dispatch_stalled.load(Ordering::Acquire) {
                    // A queue file could not be written (a full disk). Shutting down, leave the
                    // rest to recovery's re-dispatch; otherwise retry soon, not in a busy loop.
                    // Nothing past the stalled record is dispatched meanwhile.
                    if self.is_shut_down() {
                        return;
                    }
                    std::thread::park_timeout(Duration::from_millis(50));
                }
                continue;
            }
            if self.is_shut_down() {
                return;
            }
            idle_rounds = idle_rounds.saturating_add(1);
            if idle_rounds < 100 {
                // Recently busy: poll, so that appends need not wake this thread one by one.
                std::thread::park_timeout(Duration::from_millis(1));
                continue;
            }
            // Idle for ~100 ms: sleep until an append wakes us. The flag is set before the last
            // look for work, and appenders publish before they read it, so none is missed.
            self.workers.dispatcher_sleeping.store(true, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            if self.writer.commit_log.max_offset() == self.dispatched_offset() && !self.is_shut_down() {
                std::thread::park_timeout(Duration::from_millis(500));
            }
            self.workers.dispatcher_sleeping.store(false, Ordering::SeqCst);
            idle_rounds = 0;
        }
    }

    pub(crate) fn dispatched_offset(&self) -> i64 {
        self.dispatched.load(Ordering::Acquire)
    }

    /// Dispatches every record from the dispatched offset up to `target`. Returns the number
    /// of records that got a unit they did not have (all of them, except during recovery).
    pub(crate) fn dispatch_available(&self, target: i64) -> u64 {
        self.dispatch_with(target, &mut Vec::new())
    }

    fn dispatch_with(&self, target: i64, touched: &mut Vec<Arc<ConsumeQueue>>) -> u64 {
        let _round = self.dispatch_round.lock().unwrap_or_else(|e| e.into_inner());
        let mut records = 0u64;
        let mut at = self.dispatched_offset();
        let mut index = self.index.as_ref().map(|i| i.lock().unwrap_or_else(|e| e.into_inner()));
        let mut last_ts = None;
        let mut stalled = false;
        while at < target {
            let Some(segment) = self.writer.commit_log.segment_for(at) else {
                // The segment holding `at` was deleted by retention: skip to the oldest one.
                let min = self.writer.commit_log.min_offset();
                if min > at {
                    at = min;
                    continue;
                }
                break;
            };
            let pos = (at as u64 - segment.start()) as usize;
            let Some(bytes) = segment.readable_from(pos) else { break };
            if bytes.is_empty() {
                if segment.is_full() {
                    at = segment.end() as i64;
                    continue;
                }
                break;
            }
            let mut off = 0usize;
            while off < bytes.len() {
                match decode_record(bytes.get(off..).unwrap_or_default(), 0) {
                    Ok(Decoded::Record(rec)) => {
                        let phys = at + off as i64;
                        match self.dispatch_record(&rec, phys, touched, index.as_deref_mut(), None) {
                            Ok(added) => records += u64::from(added),
                            Err(e) => {
                                // Stop before this record; it is dispatched again (units already
                                // written are recognised) once its queue can be written.
                                if !self.dispatch_stalled.swap(true, Ordering::AcqRel) {
                                    tracing::error!(offset = phys, error = %e,
                                        "dispatch stalled: a consume queue cannot be written; new messages are not visible until it can");
                                }
                                stalled = true;
                                break;
                            }
                        }
                        last_ts = Some(rec.meta.store_timestamp);
                        off += rec.total_size;
                    }
                    Ok(Decoded::Blank { .. }) => {
                        off = segment.end() as usize - segment.start() as usize - pos;
                        break;
                    }
                    Err(e) => {
                        tracing::error!(offset = at + off as i64, error = %e, "undecodable record in the published log");
                        off = bytes.len();
                        break;
                    }
                }
            }
            at += off as i64;
            self.dispatched.store(at, Ordering::Release);
            if stalled {
                break;
            }
        }
        if !stalled && self.dispatch_stalled.swap(false, Ordering::AcqRel) {
            tracing::warn!("dispatch resumed");
        }
        drop(index);
        if let Some(ts) = last_ts {
            self.last_dispatched_timestamp.fetch_max(ts, Ordering::AcqRel);
        }
        for q in touched.drain(..) {
            q.wake();
        }
        self.dispatch_progress.notify_waiters();
        records
    }

    /// Rebuilds `queues` (already reset) by walking the whole log up to `end`, with the same
    /// rules as normal dispatch but writing only into those queues.
    pub(crate) fn rebuild_queues(&self, queues: &[Arc<ConsumeQueue>], end: i64) -> u64 {
        let mut touched = Vec::new();
        let mut records = 0u64;
        for segment in self.writer.commit_log.segments() {
            let bytes = segment.all_bytes();
            let mut pos = 0usize;
            while (segment.start() as i64 + pos as i64) < end {
                match decode_record(bytes.get(pos..).unwrap_or_default(), 0) {
                    Ok(Decoded::Record(rec)) => {
                        let phys = segment.start() as i64 + pos as i64;
                        match self.dispatch_record(&rec, phys, &mut touched, None, Some(queues)) {
                            Ok(added) => records += u64::from(added),
                            Err(e) => {
                                tracing::error!(offset = phys, error = %e, "rebuilding a consume queue failed");
                                return records;
                            }
                        }
                        pos += rec.total_size;
                    }
                    _ => break,
                }
            }
        }
        records
    }

    fn dispatch_record(
        &self,
        rec: &StoredRecord<'_>,
        phys: i64,
        touched: &mut Vec<Arc<ConsumeQueue>>,
        index: Option<&mut crate::index::IndexService>,
        only: Option<&[Arc<ConsumeQueue>]>,
    ) -> crate::error::Result<bool> {
        let mut added = false;
        let tx = rec.meta.sys_flag & sys_flag::TRANSACTION_MASK;
        let size = rec.total_size as i32;
        let props = DispatchProps::parse(rec);
        let tags_code = silo_wire::checksum::tags_code(props.tags);
        if tx == sys_flag::TRANSACTION_NOT_TYPE || tx == sys_flag::TRANSACTION_COMMIT_TYPE {
            let queue_tags_code = match props.delay.and_then(|d| d.parse::<i64>().ok()) {
                Some(level) if rec.topic == SCHEDULE_TOPIC && level > 0 => {
                    rec.meta.store_timestamp + delay_for_level(level)
                }
                _ => tags_code,
            };
            let unit = Unit { commit_log_offset: phys, size, tags_code: queue_tags_code };
            added = self.put_unit(rec.topic, rec.meta.queue_id, rec.meta.queue_offset, unit, touched, only)?;
            if self.config.enable_multi_dispatch && self.config.enable_lmq && topic_allows_lmq(rec.topic) {
                added |= self.dispatch_lmq(&props, Unit { tags_code, ..unit }, touched, only)?;
            }
        }
        if let Some(index) = index
            && tx != sys_flag::TRANSACTION_ROLLBACK_TYPE
            && phys >= self.index_covered.load(Ordering::Acquire)
        {
            let ts = rec.meta.store_timestamp;
            let failing = &self.index_failing;
            let mut put = |key: &str| {
                if key.is_empty() {
                    return;
                }
                // The index only finds messages by key; a failure to write it (a full disk) is
                // logged once and does not hold up consumption.
                match index.put(rec.topic, key, phys, ts) {
                    Ok(()) => {
                        if failing.load(Ordering::Relaxed) && failing.swap(false, Ordering::AcqRel) {
                            tracing::warn!("index writes resumed");
                        }
                    }
                    Err(e) => {
                        if !failing.swap(true, Ordering::AcqRel) {
                            tracing::error!(error = %e, "index write failed; messages are not found by key until it can be written");
                        }
                    }
                }
            };
            if let Some(uniq) = props.uniq_key {
                put(uniq);
            }
            if let Some(keys) = props.keys {
                keys.split(' ').for_each(&mut put);
            }
        }
        Ok(added)
    }

    /// LMQ units (docs/store-format.md §7.3). Both lists are split keeping empty elements, so mixed lists
    /// (`"%LMQ%a,plain,%LMQ%b"` with offsets `"3,,9"`) dispatch correctly, where Java's split
    /// drops trailing empties and fails on middle ones.
    fn dispatch_lmq(
        &self,
        props: &DispatchProps<'_>,
        unit: Unit,
        touched: &mut Vec<Arc<ConsumeQueue>>,
        only: Option<&[Arc<ConsumeQueue>]>,
    ) -> crate::error::Result<bool> {
        let (Some(names), Some(offsets)) = (props.multi_dispatch, props.multi_queue_offset) else {
            return Ok(false);
        };
        if names.split(',').count() != offsets.split(',').count() {
            tracing::error!(names, offsets, "LMQ lists of different lengths; not dispatched");
            return Ok(false);
        }
        let mut added = false;
        for (name, offset) in names.split(',').zip(offsets.split(',')) {
            let Ok(offset) = offset.parse::<i64>() else { continue };
            if is_lmq(name) && is_valid_topic(name) {
                added |= self.put_unit(name, 0, offset, unit, touched, only)?;
            }
        }
        Ok(added)
    }

    /// Writes one unit. `Err` only when the queue's file cannot be written (the dispatcher
    /// stalls on it rather than skip the unit).
    fn put_unit(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        unit: Unit,
        touched: &mut Vec<Arc<ConsumeQueue>>,
        only: Option<&[Arc<ConsumeQueue>]>,
    ) -> crate::error::Result<bool> {
        // A rebuild writes only into the queues it rebuilds.
        if let Some(only) = only
            && !only.iter().any(|q| q.topic() == topic && q.queue_id() == queue_id)
        {
            return Ok(false);
        }
        let Some(cq) = self.queue(topic, queue_id) else {
            tracing::error!(topic, queue_id, "record for an invalid queue; not dispatched");
            return Ok(false);
        };
        let added = cq.put(offset, unit)?;
        if added && cq.mark_touched() {
            touched.push(cq);
        }
        Ok(added)
    }
}

/// The properties the dispatcher needs, found in one pass over the record's properties
/// (instead of one scan per key). Later duplicates win, as in every properties reader.
#[derive(Debug, Default)]
struct DispatchProps<'a> {
    tags: Option<&'a str>,
    keys: Option<&'a str>,
    uniq_key: Option<&'a str>,
    delay: Option<&'a str>,
    multi_dispatch: Option<&'a str>,
    multi_queue_offset: Option<&'a str>,
}

impl<'a> DispatchProps<'a> {
    fn parse(rec: &StoredRecord<'a>) -> Self {
        let mut p = Self::default();
        for (k, v) in rec.properties.iter() {
            match k {
                keys::TAGS => p.tags = Some(v),
                keys::KEYS => p.keys = Some(v),
                keys::UNIQ_KEY => p.uniq_key = Some(v),
                keys::DELAY => p.delay = Some(v),
                keys::INNER_MULTI_DISPATCH => p.multi_dispatch = Some(v),
                keys::INNER_MULTI_QUEUE_OFFSET => p.multi_queue_offset = Some(v),
                _ => {}
            }
        }
        p
    }
}
