//! The offset requests (docs/protocol.md §2.4): 14, 15, 29, 30, 31, 32.

use silo_wire::Frame;
use silo_wire::codes::response as rs;
use silo_wire::custom::{
    GetMaxOffsetRequestHeader, OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SearchOffsetRequestHeader, TimestampResponseHeader, UpdateConsumerOffsetRequestHeader,
};

use crate::broker::Broker;
use crate::connection::Outgoing;
use crate::response;
use crate::try_reply;

impl Broker {
    pub(crate) fn query_consumer_offset(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: QueryConsumerOffsetRequestHeader = try_reply!(super::header(frame));
        if let Some(offset) = self.offsets.query(&h.consumer_group, &h.topic, h.queue_id) {
            return response::with_header(opaque, rs::SUCCESS, &OffsetResponseHeader { offset });
        }
        // No committed offset: a young queue that still starts at 0 is read from 0 (Java's
        // behaviour, which is why CONSUME_FROM_LAST_OFFSET starts at 0 on a new topic).
        if h.set_zero_if_not_found != Some(false) && self.store.min_offset_in_queue(&h.topic, h.queue_id) <= 0 {
            return response::with_header(opaque, rs::SUCCESS, &OffsetResponseHeader { offset: 0 });
        }
        response::error(opaque, rs::QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
    }

    pub(crate) fn update_consumer_offset(&self, frame: &Frame) -> Outgoing {
        let h: UpdateConsumerOffsetRequestHeader = try_reply!(super::header(frame));
        self.offsets.commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        response::success(frame.header.opaque)
    }

    pub(crate) fn get_max_offset(&self, frame: &Frame) -> Outgoing {
        let h: GetMaxOffsetRequestHeader = try_reply!(super::header(frame));
        let offset = self.store.max_offset_in_queue(&h.topic, h.queue_id);
        response::with_header(frame.header.opaque, rs::SUCCESS, &OffsetResponseHeader { offset })
    }

    pub(crate) fn get_min_offset(&self, frame: &Frame) -> Outgoing {
        let h: QueueRequestHeader = try_reply!(super::header(frame));
        let offset = self.store.min_offset_in_queue(&h.topic, h.queue_id);
        response::with_header(frame.header.opaque, rs::SUCCESS, &OffsetResponseHeader { offset })
    }

    pub(crate) fn search_offset_by_timestamp(&self, frame: &Frame) -> Outgoing {
        let h: SearchOffsetRequestHeader = try_reply!(super::header(frame));
        let upper = h.boundary_type.as_deref().is_some_and(|b| b.eq_ignore_ascii_case("upper"));
        let offset = self.store.search_offset_by_timestamp(&h.topic, h.queue_id, h.timestamp, upper);
        response::with_header(frame.header.opaque, rs::SUCCESS, &OffsetResponseHeader { offset })
    }

    pub(crate) fn earliest_msg_store_time(&self, frame: &Frame) -> Outgoing {
        let h: QueueRequestHeader = try_reply!(super::header(frame));
        let min = self.store.min_offset_in_queue(&h.topic, h.queue_id);
        let timestamp = self.store.message_store_time(&h.topic, h.queue_id, min).unwrap_or(0);
        response::with_header(frame.header.opaque, rs::SUCCESS, &TimestampResponseHeader { timestamp })
    }
}
