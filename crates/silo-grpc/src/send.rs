//! SendMessage: each protobuf message becomes a stored record with the properties Apache's
//! proxy gives it, so that a remoting consumer, the proxy and Silo's own gRPC consumers read the
//! same thing. The body is stored straight from the request buffer (the decoder slices it, it
//! is copied once, into the commit log).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use silo_broker::core::BrokerError;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_store::StoreError;
use silo_wire::msgid::offset_msg_id;
use silo_wire::properties::keys;
use silo_wire::record::sys_flag;
use tonic::{Request, Response};

use crate::frontend::{Frontend, error_status, ok, overall, status};
use crate::proto::{
    Code, Encoding, Message, MessageType, SendMessageRequest, SendMessageResponse, SendResultEntry, Status,
};
use crate::route::accepted_types;
use crate::validate;

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

/// Most user properties per message, and most bytes of properties, tag and keys together
/// (Apache's proxy's `userPropertyMaxNum` and `maxUserPropertySize`).
pub const MAX_USER_PROPERTIES: usize = 128;
pub const MAX_PROPERTIES_SIZE: usize = 16 * 1024;
/// The furthest a delivery time may be, and the longest a transaction may stay unresolved
/// before its first check (the proxy's `maxDelayTimeMills`, `maxTransactionRecoverySecond`).
pub const MAX_DELAY_MS: i64 = 24 * 3600 * 1000;
pub const MAX_TRANSACTION_RECOVERY_S: i64 = 3600;

/// The type a message's properties make it, as Apache's proxy infers it to check it against
/// the topic's: the declared type counts only as far as it made the message transactional.
fn type_of(props: &str) -> MessageType {
    let p = silo_wire::properties::PropertiesView::from_valid(props);
    if p.get(keys::TRAN_MSG) == Some("true") {
        MessageType::Transaction
    } else if [keys::DELAY, keys::TIMER_DELIVER_MS, keys::TIMER_DELAY_SEC, keys::TIMER_DELAY_MS]
        .iter()
        .any(|k| p.get(k).is_some())
    {
        MessageType::Delay
    } else if p.get(keys::SHARDING_KEY).is_some() {
        MessageType::Fifo
    } else {
        MessageType::Normal
    }
}

pub(crate) fn type_name(t: MessageType) -> &'static str {
    match t {
        MessageType::Fifo => "FIFO",
        MessageType::Delay => "DELAY",
        MessageType::Transaction => "TRANSACTION",
        MessageType::Normal => "NORMAL",
        _ => "UNSPECIFIED",
    }
}

/// The topic's `message.type`, as the check names it.
pub(crate) fn topic_type_name(accepted: &[i32]) -> &'static str {
    match accepted {
        [one] => type_name(MessageType::try_from(*one).unwrap_or(MessageType::Unspecified)),
        [] => "UNSPECIFIED",
        _ => "MIXED",
    }
}

/// Java's `String.hashCode`.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The bucket a key goes to among `buckets`, by the jump-style consistent hash Apache's proxy
/// picks a message group's queue with (a linear congruential sequence seeded by the key), so
/// that a group lands on the same queue whether it is sent through the proxy or to Silo.
fn consistent_hash(input: i64, buckets: i32) -> i32 {
    let mut state = input as u64;
    let mut candidate: i32 = 0;
    loop {
        state = state.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        let next_double = f64::from(((state >> 33) as i32).wrapping_add(1)) / f64::from(1u32 << 31);
        let next = (f64::from(candidate.saturating_add(1)) / next_double) as i64;
        if next >= 0 && next < i64::from(buckets) {
            candidate = next as i32;
        } else {
            return candidate;
        }
    }
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
    /// Checks a message in Apache's proxy's order and builds its properties; an error is the
    /// whole request's status.
    fn prepare(
        &self,
        m: &Message,
        remote: SocketAddr,
        first_topic: &Option<crate::proto::Resource>,
    ) -> Result<Prepared, Status> {
        let corrupted = |m: &str| status(Code::MessageCorrupted, m.to_owned());
        if &m.topic != first_topic {
            return Err(corrupted("topic in message is not same"));
        }
        let topic = m.topic.as_ref().map(|t| t.name.as_str()).unwrap_or("");
        if m.body.is_empty() {
            return Err(status(Code::MessageBodyEmpty, "message body cannot be empty"));
        }
        let max = self.broker.config.max_message_size;
        if max > 0 && m.body.len() > max {
            return Err(status(Code::MessageBodyTooLarge, format!("message body cannot exceed the max {max}")));
        }
        if m.user_properties.len() > MAX_USER_PROPERTIES {
            return Err(status(
                Code::MessagePropertiesTooLarge,
                format!("too many user properties, max is {MAX_USER_PROPERTIES}"),
            ));
        }
        let bad_key = |m: String| Err(status(Code::IllegalMessagePropertyKey, m));
        let mut size = 0usize;
        for (k, v) in &m.user_properties {
            if crate::convert::is_system_key(k) {
                return bad_key(format!("property is used by system: {k}"));
            }
            if has_control(k) {
                return bad_key("the key of property cannot contain control character".into());
            }
            if has_control(v) {
                return bad_key("the value of property cannot contain control character".into());
            }
            size = size.saturating_add(k.len()).saturating_add(v.len());
        }
        let sp = m.system_properties.clone().unwrap_or_default();
        if let Some(tag) = sp.tag.as_deref().filter(|t| !t.is_empty()) {
            let bad = |m: &str| Err(status(Code::IllegalMessageTag, m.to_owned()));
            if tag.trim().is_empty() {
                return bad("tag cannot be the char sequence of whitespace");
            }
            if tag.contains('|') {
                return bad("tag cannot contain '|'");
            }
            if has_control(tag) {
                return bad("tag cannot contain control character");
            }
            size = size.saturating_add(tag.len());
        }
        for key in &sp.keys {
            if key.trim().is_empty() {
                return Err(status(Code::IllegalMessageKey, "key cannot be the char sequence of whitespace"));
            }
            if has_control(key) {
                return Err(status(Code::IllegalMessageKey, "key cannot contain control character"));
            }
            size = size.saturating_add(key.len());
        }
        if size > MAX_PROPERTIES_SIZE {
            return Err(status(
                Code::MessagePropertiesTooLarge,
                format!("the total size of user property is too large, max is {MAX_PROPERTIES_SIZE}"),
            ));
        }
        if sp.message_id.trim().is_empty() {
            return Err(status(Code::IllegalMessageId, "message id cannot be empty"));
        }
        let transactional = sp.message_type() == MessageType::Transaction;
        if transactional
            && sp
                .orphaned_transaction_recovery_duration
                .as_ref()
                .is_some_and(|d| d.seconds > MAX_TRANSACTION_RECOVERY_S)
        {
            return Err(status(
                Code::BadRequest,
                format!(
                    "the max transaction recovery time of message is too large, max is {MAX_TRANSACTION_RECOVERY_S}"
                ),
            ));
        }
        let now = self.broker.config.clock.now_ms();
        if let Some(at) = &sp.delivery_timestamp
            && millis(at).saturating_sub(now) > MAX_DELAY_MS
        {
            return Err(status(
                Code::IllegalDeliveryTime,
                format!("the max delay time of message is too large, max is {MAX_DELAY_MS}"),
            ));
        }
        if let Some(group) = sp.message_group.as_deref().filter(|g| !g.is_empty()) {
            let bad = |m: String| Err(status(Code::IllegalMessageGroup, m));
            if group.trim().is_empty() {
                return bad("message group cannot be the char sequence of whitespace".into());
            }
            if group.len() >= MAX_MESSAGE_GROUP_SIZE {
                return bad(format!("message group exceed the max size {MAX_MESSAGE_GROUP_SIZE}"));
            }
            if has_control(group) {
                return bad("message group cannot contain control character".into());
            }
        }

        let mut props = String::with_capacity(128 + size);
        for (k, v) in &m.user_properties {
            push(&mut props, k, v);
        }
        if let Some(tag) = sp.tag.as_deref().filter(|t| !t.is_empty()) {
            push(&mut props, keys::TAGS, tag);
        }
        if !sp.keys.is_empty() {
            push(&mut props, keys::KEYS, &sp.keys.join(" "));
        }
        push(&mut props, keys::UNIQ_KEY, &sp.message_id);
        let mut flag = 0;
        if sp.body_encoding() == Encoding::Gzip {
            // Only a GZIP stream is stored as one (its consumers inflate what they get).
            if !m.body.starts_with(&[0x1f, 0x8b]) {
                return Err(status(Code::MessageCorrupted, "the body is marked GZIP but is no GZIP stream"));
            }
            flag |= sys_flag::COMPRESSED;
        }
        if transactional {
            flag |= sys_flag::TRANSACTION_PREPARED_TYPE;
            push(&mut props, keys::TRAN_MSG, "true");
            if let Some(d) = &sp.orphaned_transaction_recovery_duration {
                push(&mut props, keys::CHECK_IMMUNITY_TIME_IN_SECONDS, &d.seconds.max(0).to_string());
            }
        }
        if let Some(at) = &sp.delivery_timestamp {
            push(&mut props, keys::TIMER_DELIVER_MS, &millis(at).to_string());
        }
        if let Some(attempt) = sp.delivery_attempt.filter(|&a| a > 0) {
            push(&mut props, keys::RECONSUME_TIME, &attempt.to_string());
        }
        // The topic stands for the producer group: transaction checks go to whoever publishes
        // the topic (as Apache's proxy does it).
        push(&mut props, keys::PGROUP, topic);
        let group = sp.message_group.as_deref().filter(|g| !g.is_empty());
        if let Some(group) = group {
            push(&mut props, keys::SHARDING_KEY, group);
        }
        if let Some(trace) = &sp.trace_context {
            push(&mut props, keys::TRACE_CONTEXT, trace);
        }
        let born_timestamp = sp.born_timestamp.as_ref().map_or(now, millis);
        let born_host = if sp.born_host.trim().is_empty() { remote.ip().to_string() } else { sp.born_host.clone() };
        push(&mut props, keys::BORN_HOST, &born_host);
        push(&mut props, keys::BORN_TIMESTAMP, &born_timestamp.to_string());

        // The topic's type last, as the proxy checks it (so an unknown topic fails here, as
        // UNSPECIFIED, before its route is looked up).
        let message_type = type_of(&props);
        let retry_or_dlq =
            topic.starts_with(silo_store::names::RETRY_PREFIX) || topic.starts_with(silo_store::names::DLQ_PREFIX);
        let config = self.broker.topics.get(topic);
        if !retry_or_dlq {
            let accepted = config.as_ref().map(accepted_types).unwrap_or_default();
            if !accepted.contains(&(message_type as i32)) {
                return Err(status(
                    Code::MessagePropertyConflictWithType,
                    format!(
                        "TopicMessageType validate failed, the expected type is {}, but actual type is {}",
                        topic_type_name(&accepted),
                        type_name(message_type)
                    ),
                ));
            }
        }
        let Some(config) = config else { return Err(crate::route::no_route(topic)) };
        if config.perm & 2 == 0 || config.write_queue_nums <= 0 {
            return Err(status(Code::Forbidden, "no writable queue"));
        }
        let queue_id = group.map_or(-1, |g| consistent_hash(i64::from(java_hash(g)), config.write_queue_nums));
        Ok(Prepared { properties: props, sys_flag: flag, queue_id, born_timestamp, message_type })
    }

    /// Stores one prepared message; the entry that answers it and the end offset to wait for.
    /// `single`: the request sends this message alone (only then is there a recall handle: the
    /// proxy sends several as one batch, which gets none).
    fn send_one(&self, m: &Message, p: &Prepared, remote: SocketAddr, single: bool) -> (SendResultEntry, Option<i64>) {
        let message_id = m.system_properties.as_ref().map(|s| s.message_id.clone()).unwrap_or_default();
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
                let recall_handle = if single {
                    self.broker.recall_handle(&req, &plan, &sent).unwrap_or_default()
                } else {
                    String::new()
                };
                let entry = SendResultEntry {
                    status: Some(ok()),
                    message_id,
                    transaction_id,
                    offset: sent.append.queue_offset,
                    recall_handle,
                };
                (entry, plan.wait_durable.then_some(sent.append.end_offset))
            }
            Err(e) => (SendResultEntry { status: Some(error_status(&e)), message_id, ..Default::default() }, None),
        }
    }

    pub(crate) async fn send_message(
        self: &Arc<Self>,
        req: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, tonic::Status> {
        let refuse = |s: Status| Ok(Response::new(SendMessageResponse { status: Some(s), entries: vec![] }));
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return refuse(s),
        };
        let r = req.into_inner();
        let Some(first) = r.messages.first() else {
            return refuse(status(Code::MessageCorrupted, "no message to send"));
        };
        if let Err(s) = validate::topic(first.topic.as_ref().map_or("", |t| t.name.as_str())) {
            return refuse(s);
        }
        // Every message is checked before any is stored: a bad one fails the whole request.
        let mut prepared = Vec::with_capacity(r.messages.len());
        for m in &r.messages {
            match self.prepare(m, caller.remote, &first.topic) {
                Ok(p) => prepared.push(p),
                Err(s) => return refuse(s),
            }
        }
        let mut entries = Vec::with_capacity(r.messages.len());
        let mut wait = None;
        for (m, p) in r.messages.iter().zip(&prepared) {
            let (entry, end) = self.send_one(m, p, caller.remote, r.messages.len() == 1);
            entries.push(entry);
            wait = wait.max(end);
        }
        if let Some(end) = wait
            && let Err(e) = self.broker.store.durable(end).await
        {
            tracing::warn!(error = %e, "stored but not known to be durable");
            for entry in &mut entries {
                if entry.status.as_ref().is_some_and(|s| s.code == Code::Ok as i32) {
                    entry.status = Some(match e {
                        StoreError::ReplicaTimeout(_) => {
                            status(Code::SlavePersistenceTimeout, "send message failed, sendStatus=FLUSH_SLAVE_TIMEOUT")
                        }
                        StoreError::ReplicaNotAvailable => {
                            status(Code::HaNotAvailable, "send message failed, sendStatus=SLAVE_NOT_AVAILABLE")
                        }
                        _ => {
                            status(Code::MasterPersistenceTimeout, "send message failed, sendStatus=FLUSH_DISK_TIMEOUT")
                        }
                    });
                }
            }
        }
        let overall = overall(entries.iter().filter_map(|e| e.status.as_ref()), "send status is empty");
        Ok(Response::new(SendMessageResponse { status: Some(overall), entries }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_group_lands_where_apaches_proxy_puts_it() {
        // The hash stays in range and is stable; one bucket takes everything.
        for g in ["order-1", "order-2", "x", ""] {
            let q = consistent_hash(i64::from(java_hash(g)), 8);
            assert!((0..8).contains(&q));
            assert_eq!(q, consistent_hash(i64::from(java_hash(g)), 8));
            assert_eq!(consistent_hash(i64::from(java_hash(g)), 1), 0);
        }
        assert_eq!(java_hash("abc"), 96354);
        // Guava's Hashing.consistentHash(group.hashCode(), n), as the proxy calls it.
        for (g, eight, three) in
            [("order-1", 3, 0), ("order-2", 2, 2), ("x", 4, 1), ("fifo-g0-g1", 5, 1), ("abc", 7, 0)]
        {
            assert_eq!(consistent_hash(i64::from(java_hash(g)), 8), eight, "{g}");
            assert_eq!(consistent_hash(i64::from(java_hash(g)), 3), three, "{g}");
        }
    }
}
