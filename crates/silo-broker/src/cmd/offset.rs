//! The remoting adapter for the offset requests (docs/protocol.md §2.4): 14, 15, 29, 30, 31,
//! 32. The policy is in [`crate::core::offsets`].

use silo_wire::Frame;
use silo_wire::codes::response as rs;
use silo_wire::custom::{
    GetMaxOffsetRequestHeader, OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SearchOffsetRequestHeader, TimestampResponseHeader, UpdateConsumerOffsetRequestHeader,
};

use super::error_response;
use crate::broker::Broker;
use crate::connection::Outgoing;
use crate::response;
use crate::try_reply;

fn offset(opaque: i32, offset: i64) -> Outgoing {
    response::with_header(opaque, rs::SUCCESS, &OffsetResponseHeader { offset })
}

impl Broker {
    pub(crate) fn query_consumer_offset(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: QueryConsumerOffsetRequestHeader = try_reply!(super::header(frame));
        let zero_if_none = h.set_zero_if_not_found != Some(false);
        match self.committed_offset(&h.consumer_group, &h.topic, h.queue_id, zero_if_none) {
            Ok(o) => offset(opaque, o),
            Err(e) => error_response(opaque, &e),
        }
    }

    pub(crate) fn update_consumer_offset(&self, frame: &Frame) -> Outgoing {
        let h: UpdateConsumerOffsetRequestHeader = try_reply!(super::header(frame));
        self.commit_offset(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        response::success(frame.header.opaque)
    }

    pub(crate) fn get_max_offset(&self, frame: &Frame) -> Outgoing {
        let h: GetMaxOffsetRequestHeader = try_reply!(super::header(frame));
        offset(frame.header.opaque, self.queue_end(&h.topic, h.queue_id))
    }

    pub(crate) fn get_min_offset(&self, frame: &Frame) -> Outgoing {
        let h: QueueRequestHeader = try_reply!(super::header(frame));
        offset(frame.header.opaque, self.queue_start(&h.topic, h.queue_id))
    }

    pub(crate) fn search_offset_by_timestamp(&self, frame: &Frame) -> Outgoing {
        let h: SearchOffsetRequestHeader = try_reply!(super::header(frame));
        let upper = h.boundary_type.as_deref().is_some_and(|b| b.eq_ignore_ascii_case("upper"));
        offset(frame.header.opaque, self.offset_at(&h.topic, h.queue_id, h.timestamp, upper))
    }

    pub(crate) fn earliest_msg_store_time(&self, frame: &Frame) -> Outgoing {
        let h: QueueRequestHeader = try_reply!(super::header(frame));
        let timestamp = self.earliest_store_time(&h.topic, h.queue_id);
        response::with_header(frame.header.opaque, rs::SUCCESS, &TimestampResponseHeader { timestamp })
    }
}
