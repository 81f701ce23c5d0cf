//! Replication at the store's level (docs/store-format.md §12): what a master reads to ship
//! to its slaves, what a slave writes of what it receives, and how far the slaves have
//! confirmed, for the acknowledgement of a synchronous master.
//!
//! A slave holds the master's commit log byte for byte, at the master's offsets: the same
//! segment names, the same records, the same blank padding. Bytes arrive in pieces that may
//! cut a record in two, so a replica store keeps two ends: what it *holds* (every byte
//! received, the offset it reports to its master) and what it has *published* (the end of
//! the last whole record, what the dispatcher and readers see). Local appends are refused
//! while the store is a replica.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use silo_wire::record::{BLANK_LEN, Decoded, MAGIC_BLANK, MAGIC_V1, MAGIC_V2, decode_record};

use super::inner::Inner;
use crate::error::{Result, StoreError};
use crate::mapped::MappedFile;

/// A replica store's own state, beside the writer's.
#[derive(Debug, Default)]
pub(crate) struct ReplicaState {
    /// Set while the store follows a master: local appends are refused.
    pub(crate) following: AtomicBool,
    /// Bytes held, including a record not yet whole: where the next piece must start.
    /// Meaningful only while `following` (else it equals the log's end).
    pub(crate) held: AtomicI64,
}

/// What the slaves of a master have confirmed, for [`Store::replicated`](crate::Store::replicated).
#[derive(Debug)]
pub(crate) struct ReplicaAcks {
    /// The highest offset confirmed by any slave (Java's `push2SlaveMaxOffset`).
    pub(crate) confirmed: tokio::sync::watch::Sender<i64>,
    /// Slaves connected now.
    pub(crate) connected: AtomicUsize,
    /// Woken when a synchronous send starts waiting: the master ships at once rather than at
    /// its next look at the log.
    pub(crate) wanted: tokio::sync::Notify,
}

impl Default for ReplicaAcks {
    fn default() -> Self {
        Self {
            confirmed: tokio::sync::watch::channel(0).0,
            connected: AtomicUsize::new(0),
            wanted: tokio::sync::Notify::new(),
        }
    }
}

/// When a synchronous master acknowledges: once a slave confirms the bytes, within `timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReplication {
    /// `slaveTimeout`: how long a send waits for a slave's confirmation (3 s).
    pub timeout: Duration,
    /// `haMaxGapNotInSync`: a slave further behind than this does not count as in sync, and a
    /// send is answered at once that no slave is available (256 MiB).
    pub max_gap: i64,
}

/// Published commit-log bytes from one segment, borrowed without copying: what a master
/// writes to a slave's socket straight from the mapping. Keeps its segment mapped while it
/// lives.
#[derive(Debug, Clone)]
pub struct LogSlice {
    segment: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl LogSlice {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsRef<[u8]> for LogSlice {
    fn as_ref(&self) -> &[u8] {
        self.segment.readable(self.pos, self.len).unwrap_or_default()
    }
}

impl std::ops::Deref for LogSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

/// Why bytes from a master were refused. The store keeps what it had; the caller drops the
/// connection and reconnects from [`Store::replica_held`](crate::Store::replica_held).
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("bytes offered at offset {offered}, but the replica holds bytes up to {held}")]
    OffsetMismatch { offered: i64, held: i64 },
    #[error("an empty replica must start at a segment boundary (a multiple of {segment_size}), not at {offered}")]
    Unaligned { offered: i64, segment_size: usize },
    #[error("{len} bytes at offset {offered} would cross the end of the segment at {segment_end}")]
    CrossesSegment { offered: i64, len: usize, segment_end: u64 },
    #[error("the bytes at commit-log offset {offset} are not a record: {reason}")]
    NotARecord { offset: i64, reason: String },
    #[error("the store is not following a master")]
    NotFollowing,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Inner {
    /// The leader's side: up to `max` published bytes from `from`, within one segment.
    /// `None` when nothing is published there yet (or `from` is before the oldest segment).
    pub(crate) fn log_slice(&self, from: i64, max: usize) -> Option<LogSlice> {
        let segment = self.writer.commit_log.segment_for(from)?;
        let pos = usize::try_from(from as u64 - segment.start()).ok()?;
        let available = segment.wrote().checked_sub(pos)?;
        let len = available.min(max);
        (len > 0).then_some(LogSlice { segment, pos, len })
    }

    pub(crate) fn replica_held(&self) -> i64 {
        if self.writer.replica.following.load(Ordering::Acquire) {
            self.writer.replica.held.load(Ordering::Acquire)
        } else {
            self.writer.commit_log.max_offset()
        }
    }

    /// Starts or stops following a master. Following starts from what the log holds (whole
    /// records: recovery cut any torn tail).
    pub(crate) fn set_following(&self, following: bool) {
        let _state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        self.writer.replica.held.store(self.writer.commit_log.max_offset(), Ordering::Release);
        self.writer.replica.following.store(following, Ordering::Release);
    }

    /// The follower's side: writes `bytes`, which the master holds at `offered`, at the same
    /// offset, and publishes every record that is now whole. Returns the new held end.
    pub(crate) fn append_replicated(&self, offered: i64, bytes: &[u8]) -> Result<i64, ReplicaError> {
        let mut state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        if !self.writer.replica.following.load(Ordering::Acquire) {
            return Err(ReplicaError::NotFollowing);
        }
        if self.is_shut_down() {
            return Err(StoreError::ShutDown.into());
        }
        self.writer.gate.check()?;
        let log = &self.writer.commit_log;
        let segment_size = log.segment_size();
        let held = self.writer.replica.held.load(Ordering::Acquire);
        let empty = log.last_segment().is_none();
        if empty {
            // A new slave: the master chose where it starts (the start of its last segment).
            if offered % segment_size as i64 != 0 || offered < 0 {
                return Err(ReplicaError::Unaligned { offered, segment_size });
            }
            log.start_at(offered);
        } else if offered != held {
            return Err(ReplicaError::OffsetMismatch { offered, held });
        }
        if bytes.is_empty() {
            return Ok(offered);
        }
        // The segment that takes the bytes: the current one, or the next at its end.
        let segment = match state.current.as_ref().filter(|s| (offered as u64) < s.end()) {
            Some(seg) => Arc::clone(seg),
            None => {
                let next = self.writer.room(log.roll(offered as u64))?;
                self.workers.request_allocation();
                state.current = Some(Arc::clone(&next));
                next
            }
        };
        if !segment.is_reserved() {
            self.writer.room(segment.reserve())?;
        }
        let pos = (offered as u64 - segment.start()) as usize;
        if pos + bytes.len() > segment.size() {
            return Err(ReplicaError::CrossesSegment { offered, len: bytes.len(), segment_end: segment.end() });
        }
        // SAFETY: the state lock makes this the only writer, and `pos` is at the held end,
        // at or past the published position, so no reader looks at these bytes.
        unsafe { segment.write_at(pos, &[bytes]) };
        let held_pos = pos + bytes.len();

        // Publish what is whole: walk the records from the published position.
        let mut at = segment.wrote();
        let mut last_ts = None;
        while at < held_pos {
            // SAFETY: as above; `at..held_pos` was written by this writer.
            let unpublished = unsafe { segment.written(at, held_pos - at) };
            let offset = segment.start() as i64 + at as i64;
            match whole_record(unpublished, offset) {
                Ok(Whole::Record { size, store_timestamp }) => {
                    last_ts = Some(store_timestamp);
                    at += size;
                }
                Ok(Whole::Blank) => {
                    // The padding of the segment's end: whole once every byte of it is here.
                    if held_pos == segment.size() {
                        at = held_pos;
                    }
                    break;
                }
                Ok(Whole::NotYet) => break,
                Err(e) => {
                    // What did not decode is dropped: the replica holds its whole records only.
                    self.writer.replica.held.store(offset, Ordering::Release);
                    return Err(e);
                }
            }
        }
        if at > segment.wrote() {
            segment.publish(at);
            log.set_max_offset(segment.start() as i64 + at as i64);
            if let Some(ts) = last_ts {
                state.last_store_timestamp = state.last_store_timestamp.max(ts);
            }
        }
        let held = segment.start() as i64 + held_pos as i64;
        self.writer.replica.held.store(held, Ordering::Release);
        drop(state);
        self.workers.force_wake_dispatcher();
        Ok(held)
    }

    /// Cuts a replica's log back to `end` (its master's end, after the master lost a tail it
    /// never replicated): the records past it are zeroed and the consume queues and index
    /// forget them.
    pub(crate) fn truncate_replica(&self, end: i64) -> Result<()> {
        let _round = self.dispatch_round.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        if end >= self.writer.commit_log.max_offset() {
            return Ok(());
        }
        self.writer.commit_log.truncate_to(end)?;
        self.writer.replica.held.store(end, Ordering::Release);
        drop(state);
        for q in self.all_queues() {
            q.truncate_beyond(end)?;
        }
        // Index entries past `end` stay until their file expires. Like a hash collision, such
        // an entry may name a record that does not carry its key; the clients' lookups check
        // the keys of what they get, as they do against Java's index.
        self.dispatched.fetch_min(end, Ordering::AcqRel);
        self.restore_offsets();
        Ok(())
    }

    pub(crate) fn last_record_start(&self, offset: i64) -> Option<i64> {
        let log = &self.writer.commit_log;
        // The record ending at `offset` lies in the segment holding `offset - 1`.
        let segment = log.segment_for(offset.checked_sub(1)?)?;
        let end = usize::try_from(offset as u64 - segment.start()).ok()?.min(segment.wrote());
        let bytes = segment.readable(0, end)?;
        let (mut at, mut last) = (0usize, None);
        while at < end {
            match decode_record(bytes.get(at..).unwrap_or_default(), 0) {
                Ok(Decoded::Record(rec)) if at + rec.total_size <= end => {
                    last = Some(at);
                    at += rec.total_size;
                }
                _ => break,
            }
        }
        last.map(|pos| segment.start() as i64 + pos as i64)
    }

    /// A slave's confirmation: it holds the log up to `offset`.
    pub(crate) fn replica_confirmed(&self, offset: i64) {
        self.replicas.confirmed.send_if_modified(|c| {
            if offset > *c {
                *c = offset;
                true
            } else {
                false
            }
        });
    }
}

/// What starts at the published end of a replica's segment.
enum Whole {
    Record {
        size: usize,
        store_timestamp: i64,
    },
    /// The blank marker that pads the segment's end.
    Blank,
    /// A record whose bytes have not all arrived.
    NotYet,
}

/// Looks at the bytes at commit-log offset `offset`: a whole record (decoded, and naming
/// `offset` as its own physical offset, as every record the master wrote does), the blank
/// marker, or the start of a record still arriving. Anything else is refused.
fn whole_record(bytes: &[u8], offset: i64) -> Result<Whole, ReplicaError> {
    let refuse = |reason: String| ReplicaError::NotARecord { offset, reason };
    let (Some(size), Some(magic)) = (bytes.get(0..4), bytes.get(4..8)) else { return Ok(Whole::NotYet) };
    let size = i32::from_be_bytes(size.try_into().unwrap_or_default());
    let magic = i32::from_be_bytes(magic.try_into().unwrap_or_default());
    match magic {
        MAGIC_BLANK => return Ok(Whole::Blank),
        MAGIC_V1 | MAGIC_V2 => {}
        other => return Err(refuse(format!("magic code {other:#x} is neither a record's nor the blank marker's"))),
    }
    let size =
        usize::try_from(size).ok().filter(|s| *s >= BLANK_LEN).ok_or_else(|| refuse(format!("record size {size}")))?;
    let Some(record) = bytes.get(..size) else { return Ok(Whole::NotYet) };
    match decode_record(record, 0) {
        Ok(Decoded::Record(rec)) if rec.meta.physical_offset == offset => {
            Ok(Whole::Record { size, store_timestamp: rec.meta.store_timestamp })
        }
        Ok(Decoded::Record(rec)) => {
            Err(refuse(format!("the record names physical offset {}", rec.meta.physical_offset)))
        }
        Ok(Decoded::Blank { .. }) => Ok(Whole::Blank),
        Err(e) => Err(refuse(e.to_string())),
    }
}
