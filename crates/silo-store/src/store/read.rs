//! Reads: a queue's messages from a logical offset (docs/protocol.md §4.11), a record by its
//! commit-log offset, and the status of a read. Records are handed out as [`MessageRef`]s on
//! the mapped segment, never copied.

use std::sync::Arc;

use silo_wire::properties::PropertiesView;
use silo_wire::record::{Decoded, decode_record};

use super::inner::Inner;
use crate::error::{Result, StoreError};
use crate::mapped::MappedFile;

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

/// Which messages a read returns: by the tags code in the consume queue, or by the stored
/// record's properties (an SQL92 subscription).
#[derive(Clone, Copy)]
pub enum TagFilter<'a> {
    All,
    /// Codes of the subscribed tags; messages without a tag (code 0) always match.
    Codes(&'a [i64]),
    /// A test of each record's properties, read from the mapped log without copying.
    Properties(&'a (dyn Fn(PropertiesView<'_>) -> bool + Sync)),
}

impl std::fmt::Debug for TagFilter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::All => f.write_str("All"),
            Self::Codes(c) => f.debug_tuple("Codes").field(c).finish(),
            Self::Properties(_) => f.write_str("Properties(..)"),
        }
    }
}

impl TagFilter<'_> {
    fn matches(&self, code: i64) -> bool {
        match self {
            Self::All | Self::Properties(_) => true,
            Self::Codes(codes) => code == 0 || codes.contains(&code),
        }
    }

    /// The second stage, on the record itself: a record whose properties do not decode
    /// matches no property test.
    fn matches_record(&self, record: &[u8]) -> bool {
        match self {
            Self::All | Self::Codes(_) => true,
            Self::Properties(test) => match decode_record(record, 0) {
                Ok(Decoded::Record(rec)) => test(rec.properties),
                _ => false,
            },
        }
    }
}

impl Inner {
    pub(crate) fn read_at(&self, offset: i64) -> Result<MessageRef> {
        let segment = self.writer.commit_log.segment_for(offset).ok_or(StoreError::NoRecordAt(offset))?;
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

    pub(super) fn record_ref(&self, offset: i64, size: i32) -> Option<MessageRef> {
        let segment = self.writer.commit_log.segment_for(offset)?;
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
        let segment = self.writer.commit_log.segment_for(offset)?;
        let pos = (offset as u64 - segment.start()) as usize;
        let head = segment.readable(pos, 40)?;
        let sys = i32::from_be_bytes(head.get(36..40)?.try_into().ok()?);
        let at = pos + silo_wire::record::store_timestamp_offset(sys);
        Some(i64::from_be_bytes(segment.readable(at, 8)?.try_into().ok()?))
    }

    pub(super) fn get_messages(
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
                Some(m) if !filter.matches_record(&m) => {}
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
}
