//! SendMessage: each protobuf message becomes a stored record with the properties Apache's
//! proxy gives it, so that a remoting consumer, the proxy and Silo's own gRPC consumers read the
//! same thing. The body is stored straight from the request buffer (the decoder slices it, it
//! is copied once, into the commit log).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use silo_broker::core::BrokerError;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_wire::msgid::offset_msg_id;
use silo_wire::properties::keys;
use silo_wire::record::sys_flag;
use tonic::{Request, Response};

use crate::frontend::{Frontend, error_status, ok, status};
use crate::proto::{
    Code, Encoding, Message, MessageType, SendMessageRequest, SendMessageResponse, SendResultEntry, Status,
};
use crate::route::accepted_types;

/// Longest message group accepted (Apache's proxy's `maxMessageGroupSize`).
pub const MAX_MESSAGE_GROUP_SIZE: usize = 64;

fn millis(t: &prost_types::Timestamp) -> i64 {
    t.seconds.saturating_mul(1000).saturating_add(i64::from(t.nanos / 1_000_000))
}

fn push(props: &mut String, key: &str, value: &str) {
    let _ = write!(props, "{key}\u{1}{value}\u{2}");
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// The type a message's properties make it (what the topic's `message.type` is checked against).
fn type_of(m: &Message) -> MessageType {
    let sp = m.system_properties.as_ref();
    match sp.map(|s| s.message_type()) {
        Some(MessageType::Fifo) => MessageType::Fifo,
        Some(MessageType::Delay) => MessageType::Delay,
        Some(MessageType::Transaction) => MessageType::Transaction,
        _ if sp.is_some_and(|s| s.message_group.is_some()) => MessageType::Fifo,
        _ if sp.is_some_and(|s| s.delivery_timestamp.is_some()) => MessageType::Delay,
        _ => MessageType::Normal,
    }
}

fn type_name(t: MessageType) -> &'static str {
    match t {
        MessageType::Fifo => "FIFO",
        MessageType::Delay => "DELAY",
        MessageType::Transaction => "TRANSACTION",
        _ => "NORMAL",
    }
}

/// Java's `String.hashCode`, for picking a message group's queue the way the proxy does.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// What one message of a send becomes before it is stored.
struct Prepared {
    properties: String,
    sys_flag: i32,
    queue_id: i32,
    born_timestamp: i64,
    message_type: MessageType,
}

impl Frontend {
    /// Checks a message and builds its properties; the error is the entry's status.
    fn prepare(&self, m: &Message, remote: SocketAddr) -> Result<Prepared, Status> {
        let topic = m.topic.as_ref().map(|t| t.name.as_str()).unwrap_or("");
        if let Err(e) = silo_broker::core::send::check_topic(topic) {
            return Err(status(Code::IllegalTopic, e.to_string()));
        }
        let Some(sp) = m.system_properties.as_ref() else {
            return Err(status(Code::BadRequest, "system properties are required"));
        };
        if sp.message_id.is_empty() {
            return Err(status(Code::IllegalMessageId, "message id cannot be empty"));
        }
        if m.body.len() > self.broker.config.max_message_size {
            return Err(status(
                Code::MessageBodyTooLarge,
                format!("message body cannot exceed the max {}", self.broker.config.max_message_size),
            ));
        }
        if let Some(tag) = &sp.tag
            && (tag.trim().is_empty() || tag.contains('|') || has_control(tag))
        {
            return Err(status(Code::IllegalMessageTag, format!("illegal tag: {tag:?}")));
        }
        for key in &sp.keys {
            if key.trim().is_empty() || has_control(key) {
                return Err(status(Code::IllegalMessageKey, format!("illegal key: {key:?}")));
            }
        }
        let message_type = type_of(m);
        if let Some(tc) = self.broker.topics.get(topic) {
            let accepted = accepted_types(&tc);
            if !accepted.contains(&(message_type as i32)) {
                let topic_type = accepted.first().and_then(|&t| MessageType::try_from(t).ok());
                let topic_type =
                    if accepted.len() > 1 { "MIXED" } else { type_name(topic_type.unwrap_or(MessageType::Normal)) };
                return Err(status(
                    Code::MessagePropertyConflictWithType,
                    format!(
                        "current message type not match with topic accept message types, topic message type: {topic_type}, message type: {}",
                        type_name(message_type)
                    ),
                ));
            }
        }
        let mut props = String::with_capacity(128);
        for (k, v) in &m.user_properties {
            if k.is_empty() || has_control(k) || has_control(v) {
                return Err(status(Code::IllegalMessagePropertyKey, format!("illegal property key: {k:?}")));
            }
            push(&mut props, k, v);
        }
        if let Some(tag) = &sp.tag {
            push(&mut props, keys::TAGS, tag);
        }
        if !sp.keys.is_empty() {
            push(&mut props, keys::KEYS, &sp.keys.join(" "));
        }
        push(&mut props, keys::UNIQ_KEY, &sp.message_id);
        let mut flag = 0;
        if sp.body_encoding() == Encoding::Gzip {
            flag |= sys_flag::COMPRESSED;
        }
        if message_type == MessageType::Transaction {
            flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
            push(&mut props, keys::TRAN_MSG, "true");
            if let Some(d) = &sp.orphaned_transaction_recovery_duration {
                push(&mut props, keys::CHECK_IMMUNITY_TIME_IN_SECONDS, &d.seconds.max(0).to_string());
            }
        }
        if let Some(at) = &sp.delivery_timestamp {
            push(&mut props, keys::TIMER_DELIVER_MS, &millis(at).to_string());
        }
        // The topic stands for the producer group: transaction checks go to whoever publishes
        // the topic (as Apache's proxy does it).
        push(&mut props, keys::PGROUP, topic);
        let mut queue_id = -1;
        if let Some(group) = &sp.message_group {
            if group.trim().is_empty() || group.len() >= MAX_MESSAGE_GROUP_SIZE || has_control(group) {
                return Err(status(Code::IllegalMessageGroup, format!("illegal message group: {group:?}")));
            }
            push(&mut props, keys::SHARDING_KEY, group);
            let queues = self.broker.topics.queues(topic).map_or(0, |q| q.write_queue_nums);
            if queues > 0 {
                queue_id = java_hash(group).rem_euclid(queues);
            }
        }
        if let Some(trace) = &sp.trace_context {
            push(&mut props, keys::TRACE_CONTEXT, trace);
        }
        let born_timestamp = sp.born_timestamp.as_ref().map_or_else(|| self.broker.config.clock.now_ms(), millis);
        let born_host = if sp.born_host.is_empty() { remote.ip().to_string() } else { sp.born_host.clone() };
        push(&mut props, keys::BORN_HOST, &born_host);
        push(&mut props, keys::BORN_TIMESTAMP, &born_timestamp.to_string());
        Ok(Prepared { properties: props, sys_flag: flag, queue_id, born_timestamp, message_type })
    }

    /// Stores one message; the entry that answers it and the end offset to wait for.
    fn send_one(&self, m: &Message, remote: SocketAddr) -> (SendResultEntry, Option<i64>) {
        let message_id = m.system_properties.as_ref().map(|s| s.message_id.clone()).unwrap_or_default();
        let failed =
            |s: Status| SendResultEntry { status: Some(s), message_id: message_id.clone(), ..Default::default() };
        let p = match self.prepare(m, remote) {
            Ok(p) => p,
            Err(s) => return (failed(s), None),
        };
        let topic = m.topic.as_ref().map(|t| t.name.as_str()).unwrap_or("");
        let mut req = SendRequest {
            topic,
            default_topic: "TBW102",
            default_topic_queue_nums: self.broker.config.default_topic_queue_nums,
            queue_id: p.queue_id,
            sys_flag: p.sys_flag,
            born_timestamp: p.born_timestamp,
            born_host: remote,
            reconsume_times: 0,
            max_reconsume_times: None,
            properties: &p.properties,
            messages: Messages::One(Payload { flag: 0, body: &m.body, properties: &p.properties }),
        };
        let sent = self.broker.plan_send(&req).and_then(|plan| {
            let sent = self.with_conn(|conn| self.broker.send(conn, &mut req, &plan))?;
            self.broker.register_routes_if_changed();
            Ok::<_, BrokerError>((plan, sent))
        });
        match sent {
            Ok((plan, sent)) => {
                let transaction_id = if p.message_type == MessageType::Transaction {
                    offset_msg_id(self.broker.config.broker_addr(), sent.append.physical_offset).to_string()
                } else {
                    String::new()
                };
                let entry = SendResultEntry {
                    status: Some(ok()),
                    message_id,
                    transaction_id,
                    offset: sent.append.queue_offset,
                    recall_handle: String::new(),
                };
                (entry, plan.wait_durable.then_some(sent.append.end_offset))
            }
            Err(e) => (failed(error_status(&e)), None),
        }
    }

    pub(crate) async fn send_message(
        self: &Arc<Self>,
        req: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, tonic::Status> {
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return Ok(Response::new(SendMessageResponse { status: Some(s), entries: vec![] })),
        };
        let r = req.into_inner();
        if r.messages.is_empty() {
            let s = status(Code::BadRequest, "no message to send");
            return Ok(Response::new(SendMessageResponse { status: Some(s), entries: vec![] }));
        }
        let first_topic = r.messages.first().and_then(|m| m.topic.as_ref()).map(|t| t.name.clone());
        if r.messages.iter().any(|m| m.topic.as_ref().map(|t| &t.name) != first_topic.as_ref()) {
            let s = status(Code::BadRequest, "messages in one request must share a topic");
            return Ok(Response::new(SendMessageResponse { status: Some(s), entries: vec![] }));
        }
        let mut entries = Vec::with_capacity(r.messages.len());
        let mut wait = None;
        for m in &r.messages {
            let (entry, end) = self.send_one(m, caller.remote);
            entries.push(entry);
            wait = wait.max(end);
        }
        if let Some(end) = wait
            && let Err(e) = self.broker.store.durable(end).await
        {
            tracing::warn!(error = %e, "stored but not known to be durable");
            for entry in &mut entries {
                if entry.status.as_ref().is_some_and(|s| s.code == Code::Ok as i32) {
                    entry.status = Some(status(Code::MasterPersistenceTimeout, "flush disk timeout"));
                }
            }
        }
        // The response's own status is the first entry's (what the SDKs read for one message).
        let overall = entries.first().and_then(|e| e.status.clone()).unwrap_or_else(ok);
        Ok(Response::new(SendMessageResponse { status: Some(overall), entries }))
    }
}
