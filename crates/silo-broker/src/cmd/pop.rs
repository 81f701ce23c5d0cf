//! The remoting adapter for POP consumption (docs/protocol.md §2.16): POP_MESSAGE (200050),
//! ACK_MESSAGE (200051), PEEK_MESSAGE (200052), CHANGE_MESSAGE_INVISIBLETIME (200053),
//! NOTIFICATION (200054), POLLING_INFO (200055) and BATCH_ACK_MESSAGE (200151). The policy is
//! in [`crate::core::pop`]; popped records go out as [`Body::Records`], straight from the
//! mapped commit log, like a pull's.

use std::sync::Arc;
use std::time::Duration;

use silo_wire::codes::response as rs;
use silo_wire::custom::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader, NotificationResponseHeader, PeekMessageRequestHeader, PollingInfoRequestHeader,
    PollingInfoResponseHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use silo_wire::{ExtStr, Frame};

use super::error_response;
use crate::broker::{Broker, ConnState};
use crate::connection::{Body, Channel, Outgoing};
use crate::core::BrokerError;
use crate::core::pop::{HandleRequest, PopRequest, Popped};
use crate::response;
use crate::try_reply;

/// A pop that arrives this much later than its own poll allows is refused (Java's rule).
const LATE_BY_MS: i64 = 500;

fn request_of(h: &PopMessageRequestHeader) -> PopRequest<'_> {
    PopRequest {
        group: &h.consumer_group,
        topic: &h.topic,
        queue_id: h.queue_id.max(-1),
        max_messages: h.max_msg_nums,
        invisible_time: h.invisible_time,
        init_mode: h.init_mode,
        expression: h.exp.as_deref(),
        expression_type: h.exp_type.as_deref(),
        order: h.order.unwrap_or(false),
        attempt_id: h.attempt_id.as_deref(),
        owner: None,
    }
}

/// What a NOTIFICATION asks about, as the pop it stands for (a pop from the end, as the
/// proxy's).
fn notification_request(h: &NotificationRequestHeader) -> PopRequest<'_> {
    PopRequest {
        group: &h.consumer_group,
        topic: &h.topic,
        queue_id: h.queue_id.max(-1),
        max_messages: 1,
        invisible_time: 0,
        init_mode: 1,
        expression: None,
        expression_type: None,
        order: h.order.unwrap_or(false),
        attempt_id: h.attempt_id.as_deref(),
        owner: None,
    }
}

/// The header with its texts copied out of the request frame (for a parked pop).
fn detached(h: PopMessageRequestHeader) -> PopMessageRequestHeader {
    PopMessageRequestHeader {
        consumer_group: h.consumer_group.detached(),
        topic: h.topic.detached(),
        exp_type: h.exp_type.as_ref().map(ExtStr::detached),
        exp: h.exp.as_ref().map(ExtStr::detached),
        attempt_id: h.attempt_id.as_ref().map(ExtStr::detached),
        ..h
    }
}

/// The pop answer: FOUND with the records, or POLLING_TIMEOUT / POLLING_FULL with the same
/// header (Java never answers a pop with PULL_NOT_FOUND).
fn encode(opaque: i32, code: i32, popped: Popped) -> Outgoing {
    let header = PopMessageResponseHeader {
        pop_time: popped.pop_time,
        invisible_time: popped.invisible_time,
        revive_qid: popped.revive_qid,
        rest_num: popped.rest_num,
        start_offset_info: Some(ExtStr::from(popped.start_offset_info)),
        msg_offset_info: Some(ExtStr::from(popped.msg_offset_info)),
        order_count_info: (!popped.order_count_info.is_empty()).then(|| ExtStr::from(popped.order_count_info)),
    };
    let mut out = response::with_header(opaque, code, &header);
    if code == rs::SUCCESS {
        out.header.remark = Some("FOUND".to_owned());
        out.body = Body::Records(popped.messages);
    } else {
        out.header.remark = Some("NO_MESSAGE_IN_QUEUE".to_owned());
    }
    out
}

impl Broker {
    /// `out` now, or (with synchronous flush, after journal records) once they are durable.
    fn answer_when_durable(self: &Arc<Self>, channel: &Channel, out: Outgoing, end: i64) -> Option<Outgoing> {
        if end <= 0 || !self.store.flush_mode().is_sync() {
            return Some(out);
        }
        self.reply_when_durable(channel, Some(out), end);
        None
    }

    pub(crate) fn pop_message(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: PopMessageRequestHeader = match super::header(&frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        let now = self.config.clock.now_ms();
        let born = h.born_time.filter(|&t| t != 0).unwrap_or(now);
        if now.saturating_sub(born).saturating_sub(h.poll_time) > LATE_BY_MS {
            return Some(error_response(opaque, &BrokerError::PopTimeoutTooMuch(self.config.broker_ip.to_string())));
        }
        let req = request_of(&h);
        let filter = match self.pop_filter(&req) {
            Ok(f) => f,
            Err(e) => return Some(error_response(opaque, &e)),
        };
        let popped = match self.pop(conn, &req, &filter) {
            Ok(p) => p,
            Err(e) => return Some(error_response(opaque, &e)),
        };
        if !popped.messages.is_empty() {
            let end = popped.journal_end;
            return self.answer_when_durable(channel, encode(opaque, rs::SUCCESS, popped), end);
        }
        let poll = born.saturating_add(h.poll_time).saturating_sub(now);
        if poll <= 0 || !self.config.long_polling_enable {
            return Some(encode(opaque, rs::POLLING_TIMEOUT, popped));
        }
        let Some(parked) = self.pop.park(req.topic, req.group, req.queue_id, self.config.pop.polling_size) else {
            return Some(encode(opaque, rs::POLLING_FULL, popped));
        };
        let h = detached(h);
        let broker = Arc::clone(self);
        let channel = channel.clone();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(u64::try_from(poll).unwrap_or(0));
        tokio::spawn(async move {
            let _parked = parked;
            let mut conn = ConnState::default();
            let req = request_of(&h);
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if !left.is_zero() {
                    broker.pop_wait(&req, left).await;
                }
                if channel.is_closed() {
                    return;
                }
                // Found: answer; nothing and the poll time is over: POLLING_TIMEOUT with a
                // fresh header; nothing yet: wait again.
                let out = match broker.pop(&mut conn, &req, &filter) {
                    Ok(p) if !p.messages.is_empty() => {
                        let end = p.journal_end;
                        broker.answer_when_durable(&channel, encode(opaque, rs::SUCCESS, p), end)
                    }
                    Ok(p) if left.is_zero() => Some(encode(opaque, rs::POLLING_TIMEOUT, p)),
                    Ok(_) => continue,
                    Err(e) => Some(error_response(opaque, &e)),
                };
                if let Some(out) = out {
                    channel.send(out);
                }
                return;
            }
        });
        None
    }

    pub(crate) fn ack_message(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: &Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: AckMessageRequestHeader = match super::header(frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        let req = HandleRequest {
            group: &h.consumer_group,
            topic: &h.topic,
            queue_id: h.queue_id,
            offset: h.offset,
            handle: &h.extra_info,
        };
        match self.ack(conn, &req) {
            Ok(end) => self.answer_when_durable(channel, response::success(opaque), end),
            Err(e) => Some(error_response(opaque, &e)),
        }
    }

    pub(crate) fn batch_ack_message(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: &Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let body: silo_wire::body::BatchAckMessageRequestBody = match super::body(frame) {
            Ok(b) => b,
            Err(out) => return Some(out),
        };
        if body.acks.is_empty() {
            return Some(response::reply(opaque, rs::NO_MESSAGE, None));
        }
        match self.batch_ack(conn, &body.acks) {
            Ok(end) => self.answer_when_durable(channel, response::success(opaque), end),
            Err(e) => Some(error_response(opaque, &e)),
        }
    }

    pub(crate) fn change_invisible_frame(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: &Frame,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: ChangeInvisibleTimeRequestHeader = match super::header(frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        let req = HandleRequest {
            group: &h.consumer_group,
            topic: &h.topic,
            queue_id: h.queue_id,
            offset: h.offset,
            handle: &h.extra_info,
        };
        match self.change_invisible(conn, &req, h.invisible_time) {
            Ok(r) => {
                let header = ChangeInvisibleTimeResponseHeader {
                    pop_time: r.pop_time,
                    invisible_time: r.invisible_time,
                    revive_qid: r.revive_qid,
                };
                self.answer_when_durable(channel, response::with_header(opaque, rs::SUCCESS, &header), r.journal_end)
            }
            Err(BrokerError::ChangeOffsetIllegal) => Some(response::reply(opaque, rs::NO_MESSAGE, None)),
            Err(e) => Some(error_response(opaque, &e)),
        }
    }

    pub(crate) fn peek_message(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: PeekMessageRequestHeader = try_reply!(super::header(frame));
        if h.max_msg_nums > crate::core::pop::MAX_POP_MESSAGES {
            return error_response(opaque, &BrokerError::PopTooMany(self.config.broker_ip.to_string()));
        }
        match self.peek(&h.consumer_group, &h.topic, h.queue_id, h.max_msg_nums) {
            Ok(found) if !found.is_empty() => {
                let header = PopMessageResponseHeader {
                    pop_time: self.config.clock.now_ms(),
                    invisible_time: 0,
                    revive_qid: 0,
                    rest_num: 0,
                    ..Default::default()
                };
                let mut out = response::with_header(opaque, rs::SUCCESS, &header);
                out.header.remark = Some("FOUND".to_owned());
                out.body = Body::Records(found);
                out
            }
            Ok(_) => response::error(opaque, rs::PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE"),
            Err(e) => error_response(opaque, &e),
        }
    }

    pub(crate) fn notification(self: &Arc<Self>, channel: &Channel, frame: &Frame) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: NotificationRequestHeader = match super::header(frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        let req = notification_request(&h);
        // Java's pop checks, without the message count.
        if let Err(e) = self.pop_filter(&req) {
            return Some(error_response(opaque, &e));
        }
        let answer = move |has_msg: bool, polling_full: bool| {
            let header = NotificationResponseHeader { has_msg, polling_full: Some(polling_full) };
            response::with_header(opaque, rs::SUCCESS, &header)
        };
        let has = self.pop_has_message(&req);
        let now = self.config.clock.now_ms();
        let born = h.born_time.filter(|&t| t != 0).unwrap_or(now);
        let poll = born.saturating_add(h.poll_time).saturating_sub(now);
        if has || poll <= 0 || !self.config.long_polling_enable {
            return Some(answer(has, false));
        }
        let Some(parked) = self.pop.park(req.topic, req.group, req.queue_id, self.config.pop.polling_size) else {
            return Some(answer(false, true));
        };
        let h = NotificationRequestHeader {
            consumer_group: h.consumer_group.detached(),
            topic: h.topic.detached(),
            attempt_id: h.attempt_id.as_ref().map(ExtStr::detached),
            ..h
        };
        let broker = Arc::clone(self);
        let channel = channel.clone();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(u64::try_from(poll).unwrap_or(0));
        tokio::spawn(async move {
            let _parked = parked;
            let req = notification_request(&h);
            loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                let has = broker.pop_has_message(&req);
                if has || left.is_zero() || channel.is_closed() {
                    channel.send(answer(has, false));
                    return;
                }
                broker.pop_wait(&req, left).await;
            }
        });
        None
    }

    pub(crate) fn polling_info(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: PollingInfoRequestHeader = try_reply!(super::header(frame));
        let probe = PopRequest {
            group: &h.consumer_group,
            topic: &h.topic,
            queue_id: h.queue_id,
            max_messages: 1,
            invisible_time: 0,
            init_mode: 1,
            expression: None,
            expression_type: None,
            order: false,
            attempt_id: None,
            owner: None,
        };
        if let Err(e) = self.pop_filter(&probe) {
            return error_response(opaque, &e);
        }
        let n = self.pop.polling_num(&h.topic, &h.consumer_group, h.queue_id);
        let header = PollingInfoResponseHeader { polling_num: i32::try_from(n).unwrap_or(i32::MAX) };
        response::with_header(opaque, rs::SUCCESS, &header)
    }
}
