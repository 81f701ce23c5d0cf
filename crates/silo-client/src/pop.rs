//! The POP consumer (docs/protocol.md §2.16): the broker hands out messages for an invisible
//! time and keeps the group's offsets; the client acknowledges each message with the receipt
//! handle it builds from the pop answer, or renews it.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use silo_wire::RemotingHeader;
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader, CustomHeader,
    PopMessageRequestHeader, PopMessageResponseHeader,
};
use silo_wire::pop::{ReceiptHandle, TopicMark};

use crate::client::{Client, expect_success};
use crate::consumer::Subscription;
use crate::error::ClientError;
use crate::message::ReceivedMessage;

/// A popped message and what acknowledges it.
#[derive(Debug, Clone)]
pub struct PoppedMessage {
    pub message: ReceivedMessage,
    /// The receipt handle (`extraInfo`).
    pub handle: String,
    /// The topic it was read from: the retry topic for a retried message.
    pub read_from: String,
    /// The broker that handed it out.
    pub broker_addr: String,
}

/// What a pop brought back.
#[derive(Debug, Clone, Default)]
pub struct PopResult {
    pub messages: Vec<PoppedMessage>,
    /// Messages left behind in the queues read.
    pub rest_num: i64,
}

#[derive(Debug, Clone)]
pub struct PopConsumer {
    client: Client,
    group: String,
}

fn info_map(info: Option<&str>) -> HashMap<String, String> {
    info.unwrap_or("")
        .split(';')
        .filter_map(|entry| {
            let mut parts = entry.split(' ');
            let (mark, queue, value) = (parts.next()?, parts.next()?, parts.next()?);
            Some((format!("{mark}@{queue}"), value.to_owned()))
        })
        .collect()
}

impl PopConsumer {
    #[must_use]
    pub fn new(client: Client, group: impl Into<String>) -> Self {
        Self { client, group: group.into() }
    }

    /// Pops up to `max` (at most 32) messages of `topic` from every queue of broker
    /// `broker_name` at `addr`, invisible for `invisible`; with `poll`, an empty pop waits that
    /// long at the broker.
    #[allow(clippy::too_many_arguments)]
    pub async fn pop(
        &self,
        broker_name: &str,
        addr: &str,
        topic: &str,
        max: i32,
        invisible: Duration,
        poll: Option<Duration>,
        subscription: &Subscription,
    ) -> Result<PopResult, ClientError> {
        let poll = poll.unwrap_or_default();
        let mut header = RemotingHeader::request(rq::POP_MESSAGE, 0);
        PopMessageRequestHeader {
            consumer_group: self.group.as_str().into(),
            topic: topic.into(),
            queue_id: -1,
            max_msg_nums: max,
            invisible_time: i64::try_from(invisible.as_millis()).unwrap_or(i64::MAX),
            poll_time: i64::try_from(poll.as_millis()).unwrap_or(i64::MAX),
            born_time: Some(crate::message::now_millis()),
            init_mode: 0,
            exp_type: Some(subscription.expression_type().as_str().into()),
            exp: Some(subscription.expression().into()),
            order: Some(false),
            attempt_id: None,
        }
        .write_ext_fields(&mut header.ext_fields);
        let conn = self.client.connection(addr).await?;
        let frame = conn.request(header, Bytes::new(), poll + self.client.config().timeout).await?;
        let code = frame.header.code;
        if code != rs::SUCCESS && code != rs::POLLING_TIMEOUT && code != rs::POLLING_FULL && code != rs::PULL_NOT_FOUND
        {
            return Err(expect_success(addr, rq::POP_MESSAGE, frame).err().unwrap_or_else(|| {
                ClientError::BadResponse {
                    addr: addr.to_owned(),
                    what: "pop answered neither found nor not found".into(),
                }
            }));
        }
        let h = PopMessageResponseHeader::read_ext_fields(&frame.header.ext_fields)
            .map_err(|e| ClientError::BadResponse { addr: addr.to_owned(), what: e.to_string() })?;
        if code != rs::SUCCESS {
            return Ok(PopResult { messages: Vec::new(), rest_num: h.rest_num });
        }
        let starts = info_map(h.start_offset_info.as_deref());
        let mut messages = Vec::new();
        for message in ReceivedMessage::decode_all(&frame.body)? {
            let read_from = message.topic().to_owned();
            let mark = TopicMark::of_topic(&read_from);
            let key = format!("{}@{}", mark.as_str(), message.queue_id());
            let start = starts.get(&key).and_then(|s| s.parse().ok()).ok_or_else(|| ClientError::BadResponse {
                addr: addr.to_owned(),
                what: format!("no start offset for {key}"),
            })?;
            let handle = ReceiptHandle {
                start_offset: start,
                pop_time: h.pop_time,
                invisible_time: h.invisible_time,
                revive_qid: h.revive_qid,
                mark,
                broker_name,
                queue_id: message.queue_id(),
                queue_offset: Some(message.queue_offset()),
                commit_log_offset: None,
            }
            .to_string();
            messages.push(PoppedMessage { message, handle, read_from, broker_addr: addr.to_owned() });
        }
        Ok(PopResult { messages, rest_num: h.rest_num })
    }

    /// Acknowledges a popped message.
    pub async fn ack(&self, m: &PoppedMessage) -> Result<(), ClientError> {
        let mut header = RemotingHeader::request(rq::ACK_MESSAGE, 0);
        AckMessageRequestHeader {
            consumer_group: self.group.as_str().into(),
            topic: m.read_from.as_str().into(),
            queue_id: m.message.queue_id(),
            extra_info: m.handle.as_str().into(),
            offset: m.message.queue_offset(),
        }
        .write_ext_fields(&mut header.ext_fields);
        let conn = self.client.connection(&m.broker_addr).await?;
        let frame = conn.request(header, Bytes::new(), self.client.config().timeout).await?;
        expect_success(&m.broker_addr, rq::ACK_MESSAGE, frame).map(drop)
    }

    /// Makes a popped message invisible for `invisible` from now; its handle is renewed.
    pub async fn change_invisible(&self, m: &mut PoppedMessage, invisible: Duration) -> Result<(), ClientError> {
        let mut header = RemotingHeader::request(rq::CHANGE_MESSAGE_INVISIBLETIME, 0);
        ChangeInvisibleTimeRequestHeader {
            consumer_group: self.group.as_str().into(),
            topic: m.read_from.as_str().into(),
            queue_id: m.message.queue_id(),
            extra_info: m.handle.as_str().into(),
            offset: m.message.queue_offset(),
            invisible_time: i64::try_from(invisible.as_millis()).unwrap_or(i64::MAX),
        }
        .write_ext_fields(&mut header.ext_fields);
        let conn = self.client.connection(&m.broker_addr).await?;
        let frame = conn.request(header, Bytes::new(), self.client.config().timeout).await?;
        let frame = expect_success(&m.broker_addr, rq::CHANGE_MESSAGE_INVISIBLETIME, frame)?;
        let h = ChangeInvisibleTimeResponseHeader::read_ext_fields(&frame.header.ext_fields)
            .map_err(|e| ClientError::BadResponse { addr: m.broker_addr.clone(), what: e.to_string() })?;
        let old = ReceiptHandle::parse(&m.handle)
            .map_err(|e| ClientError::BadResponse { addr: m.broker_addr.clone(), what: e.to_string() })?;
        let offset = m.message.queue_offset();
        let renewed = ReceiptHandle {
            start_offset: offset,
            pop_time: h.pop_time,
            invisible_time: h.invisible_time,
            revive_qid: h.revive_qid,
            queue_offset: Some(offset),
            commit_log_offset: None,
            ..old
        }
        .to_string();
        m.handle = renewed;
        Ok(())
    }
}
