//! The remoting adapter for PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), docs/protocol.md
//! §2.3. The policy (filters, what a read returns, when an empty pull waits) is in
//! [`crate::core::pull`]; found records go out as [`Body::Records`], handles on the mapped
//! commit log written to the socket without an intermediate copy.

use std::sync::Arc;
use std::time::Duration;

use silo_store::GetStatus;
use silo_wire::codes::response as rs;
use silo_wire::custom::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
use silo_wire::{ExtFields, ExtStr, Frame};

use super::error_response;
use crate::broker::Broker;
use crate::connection::{Body, Channel, Outgoing};
use crate::core::pull::{PullRequest, PullStatus, Pulled, Subscription};
use crate::response;

/// The header with its texts copied out of the request frame, so that a parked pull does not
/// keep the connection's read buffer alive.
fn detached(h: PullMessageRequestHeader) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: h.consumer_group.detached(),
        topic: h.topic.detached(),
        subscription: h.subscription.as_ref().map(ExtStr::detached),
        expression_type: h.expression_type.as_ref().map(ExtStr::detached),
        broker_name: h.broker_name.as_ref().map(ExtStr::detached),
        ..h
    }
}

fn request_of(h: &PullMessageRequestHeader) -> PullRequest<'_> {
    let subscription = if h.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 {
        Subscription::Given {
            expression: h.subscription.as_deref().unwrap_or("*"),
            expression_type: h.expression_type.as_deref(),
        }
    } else {
        Subscription::Registered { sub_version: h.sub_version }
    };
    let hold = (h.sys_flag & pull_sys_flag::SUSPEND != 0)
        .then(|| Duration::from_millis(u64::try_from(h.suspend_timeout_millis).unwrap_or(15_000)));
    PullRequest {
        group: &h.consumer_group,
        topic: &h.topic,
        queue_id: h.queue_id,
        queue_offset: h.queue_offset,
        max_messages: h.max_msg_nums,
        max_bytes: h.max_msg_bytes,
        subscription,
        hold,
    }
}

/// Java's name of the store's read status, which it puts in the remark.
fn status_name(s: GetStatus) -> &'static str {
    match s {
        GetStatus::Found => "FOUND",
        GetStatus::NoMatchedMessage => "NO_MATCHED_MESSAGE",
        GetStatus::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
        GetStatus::OffsetFoundNull => "OFFSET_FOUND_NULL",
        GetStatus::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        GetStatus::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        GetStatus::OffsetTooSmall => "OFFSET_TOO_SMALL",
        GetStatus::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
        GetStatus::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
    }
}

/// The pull response; its fields go into `ext` (the request's own field vector when it is
/// answered at once).
fn encode(opaque: i32, pulled: Pulled, ext: ExtFields) -> Outgoing {
    let code = match pulled.status {
        PullStatus::Found => rs::SUCCESS,
        PullStatus::NoNewMessage => rs::PULL_NOT_FOUND,
        PullStatus::RetryImmediately => rs::PULL_RETRY_IMMEDIATELY,
        PullStatus::OffsetMoved => rs::PULL_OFFSET_MOVED,
    };
    let header = PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: pulled.next_begin_offset,
        min_offset: pulled.min_offset,
        max_offset: pulled.max_offset,
        ..Default::default()
    };
    let mut out = response::with_header_in(opaque, code, &header, ext);
    out.header.remark = Some(status_name(pulled.store_status).to_owned());
    if code == rs::SUCCESS {
        out.body = Body::Records(pulled.messages);
    }
    out
}

impl Broker {
    pub(crate) fn pull_message(self: &Arc<Self>, channel: &Channel, frame: Frame) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: PullMessageRequestHeader = match super::header(&frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        // (A slave without `slaveReadEnable` refused the pull before it got here.)
        let slave = !self.config.ha.role.is_master();
        let req = request_of(&h);
        let filter = match self.pull_filter(&req) {
            Ok(c) => c,
            Err(e) => return Some(error_response(opaque, &e)),
        };
        // A slave keeps the offsets its master sends it; a pull's piggybacked commit is
        // the master's to take (explicit UPDATE_CONSUMER_OFFSET requests are kept).
        if !slave && h.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 && h.commit_offset >= 0 {
            self.offsets.commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        }
        let mut pulled = self.read_queue(&req, &filter);
        if slave && pulled.status != PullStatus::Found && self.ha_links.master_connected() {
            // The master is there: send the consumer back to it rather than wait here.
            pulled.status = PullStatus::RetryImmediately;
            return Some(encode(opaque, pulled, frame.header.ext_fields));
        }
        let Some(wait) = self.empty_pull_waits(&req, &pulled) else {
            return Some(encode(opaque, pulled, frame.header.ext_fields));
        };
        let h = detached(h);
        let broker = Arc::clone(self);
        let channel = channel.clone();
        tokio::spawn(async move {
            let pulled = broker.pull_after(&request_of(&h), &filter, wait).await;
            channel.send(encode(opaque, pulled, ExtFields::new()));
        });
        None
    }
}
