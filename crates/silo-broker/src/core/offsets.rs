//! Offsets (docs/protocol.md §2.4): a group's committed offset per queue, and a queue's ends,
//! by offset or by time.

use super::BrokerError;
use crate::broker::Broker;

impl Broker {
    /// The offset `group` committed for the queue. Without one, a young queue whose first
    /// message (offset 0) is still stored is read from 0 when `zero_if_none` (Java's behaviour,
    /// which is why CONSUME_FROM_LAST_OFFSET starts at 0 on a new topic); an empty queue has
    /// no offset, as in Java.
    pub fn committed_offset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        zero_if_none: bool,
    ) -> Result<i64, BrokerError> {
        if let Some(offset) = self.offsets.query(group, topic, queue_id) {
            return Ok(offset);
        }
        if zero_if_none
            && self.store.min_offset_in_queue(topic, queue_id) <= 0
            && self.store.max_offset_in_queue(topic, queue_id) > 0
        {
            return Ok(0);
        }
        Err(BrokerError::NoCommittedOffset)
    }

    pub fn commit_offset(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.offsets.commit(group, topic, queue_id, offset);
    }

    /// The offset after the queue's last message (what a consumer reads up to).
    pub fn queue_end(&self, topic: &str, queue_id: i32) -> i64 {
        self.store.max_offset_in_queue(topic, queue_id)
    }

    /// The queue's first offset still stored.
    pub fn queue_start(&self, topic: &str, queue_id: i32) -> i64 {
        self.store.min_offset_in_queue(topic, queue_id)
    }

    /// The first (or, `upper`, the last) offset stored at or after `timestamp`.
    pub fn offset_at(&self, topic: &str, queue_id: i32, timestamp: i64, upper: bool) -> i64 {
        self.store.search_offset_by_timestamp(topic, queue_id, timestamp, upper)
    }

    /// When the queue's first stored message was stored (0 if none).
    pub fn earliest_store_time(&self, topic: &str, queue_id: i32) -> i64 {
        let min = self.store.min_offset_in_queue(topic, queue_id);
        self.store.message_store_time(topic, queue_id, min).unwrap_or(0)
    }
}
