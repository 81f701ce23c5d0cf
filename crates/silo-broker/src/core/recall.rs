//! Recalling a timer message (docs/protocol.md §4.13): RECALL_MESSAGE over remoting,
//! `RecallMessage` over gRPC.
//!
//! A timer message's send answers with a recall handle naming the topic, this broker, the
//! timer's slot time and the message's unique key. A recall stores a delete marker through
//! the ordinary send path: a one-byte message to the same topic whose `TIMER_DEL_UNIQKEY` is
//! `topic+key` and whose delivery time is the handle's, so that the timer wheel files it in the
//! same slot. When the slot comes due the wheel reads the slot's markers first and does not
//! deliver the messages they name (`crate::timer`). Nothing is removed from the commit log; a
//! recall after the slot has fired is refused, since its time has passed.

use std::fmt::Write as _;
use std::net::SocketAddr;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};
use silo_wire::properties::keys;

use super::BrokerError;
use super::send::{Messages, Payload, SendRequest};
use crate::broker::{Broker, ConnState};

/// The tag of a delete marker (Java's).
pub const RECALL_TAG: &str = "_RECALL_TAG_";

/// The only handle version there is.
const VERSION_1: &str = "v1";

/// URL-safe base64 that, like Java's URL decoder, takes a handle with or without its padding.
const URL_SAFE_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A decoded recall handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    pub topic: String,
    pub broker_name: String,
    /// The timer's slot time plus one, in milliseconds, as text (Java keeps it as text and
    /// refuses the recall, not the handle, when it is not a number).
    pub timestamp: String,
    /// The message's unique key (`UNIQ_KEY`).
    pub message_id: String,
}

/// The handle of the timer message `message_id` of `topic`, due in the slot before
/// `timestamp_ms` on `broker_name`: `v1 topic broker timestamp key`, URL-safe base64 with
/// padding (Java's `RecallMessageHandle.HandleV1`).
pub fn encode_handle(topic: &str, broker_name: &str, timestamp_ms: i64, message_id: &str) -> String {
    let mut raw = String::with_capacity(topic.len() + broker_name.len() + message_id.len() + 24);
    let _ = write!(raw, "{VERSION_1} {topic} {broker_name} {timestamp_ms} {message_id}");
    general_purpose::URL_SAFE.encode(raw)
}

/// Decodes a handle; the error is Java's words for every malformed one.
pub fn decode_handle(handle: &str) -> Result<RecallHandle, BrokerError> {
    let invalid = || BrokerError::RecallIllegal("recall handle is invalid".into());
    if handle.is_empty() {
        return Err(invalid());
    }
    let raw = URL_SAFE_ANY_PADDING.decode(handle).map_err(|_| invalid())?;
    let raw = String::from_utf8_lossy(&raw);
    // Java splits on single spaces and drops trailing empty items; fields past the fifth are
    // ignored.
    let mut items = raw.trim_end_matches(' ').split(' ');
    let (Some(VERSION_1), Some(topic), Some(broker_name), Some(timestamp), Some(message_id)) =
        (items.next(), items.next(), items.next(), items.next(), items.next())
    else {
        return Err(invalid());
    };
    Ok(RecallHandle {
        topic: topic.to_owned(),
        broker_name: broker_name.to_owned(),
        timestamp: timestamp.to_owned(),
        message_id: message_id.to_owned(),
    })
}

/// A request to recall a timer message.
#[derive(Debug, Clone, Copy)]
pub struct RecallRequest<'a> {
    pub topic: &'a str,
    pub handle: &'a str,
    /// Recorded on the marker (`PGROUP`) when the client names it.
    pub producer_group: Option<&'a str>,
    pub born_host: SocketAddr,
}

/// A stored recall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    /// The recalled message's unique key (the answer's `msgId`).
    pub message_id: String,
    /// The commit-log end offset the answer waits for (synchronous flush).
    pub durable_end: Option<i64>,
}

impl Broker {
    /// Stores the delete marker for `req.handle`, after Java's checks in Java's order.
    pub fn recall(&self, conn: &mut ConnState, req: &RecallRequest<'_>) -> Result<Recalled, BrokerError> {
        if !self.config.recall_message_enable {
            return Err(BrokerError::RecallForbidden);
        }
        if self.topics.queues(req.topic).is_none() {
            return Err(BrokerError::RecallTopicNotExist(req.topic.to_owned()));
        }
        let handle = decode_handle(req.handle)?;
        if handle.topic != req.topic {
            return Err(BrokerError::RecallIllegal("recall failed, topic not match".into()));
        }
        if handle.broker_name != self.config.broker_name {
            return Err(BrokerError::RecallIllegal("recall failed, broker service not available".into()));
        }
        let now = self.config.clock.now_ms();
        let timestamp = handle.timestamp.parse::<i64>().unwrap_or(-1);
        let left = timestamp.saturating_sub(now);
        if left <= 0 || left >= self.config.timers.max_delay_ms {
            return Err(BrokerError::RecallIllegal("recall failed, timestamp invalid".into()));
        }
        let mut props = String::with_capacity(192);
        let mut put = |k: &str, v: &str| {
            let _ = write!(props, "{k}\u{1}{v}\u{2}");
        };
        put(keys::TAGS, RECALL_TAG);
        put(keys::TIMER_DEL_UNIQKEY, &format!("{}+{}", handle.topic, handle.message_id));
        put(keys::UNIQ_KEY, &handle.message_id);
        put(keys::TIMER_DELIVER_MS, &handle.timestamp);
        if let Some(group) = req.producer_group.filter(|g| !g.is_empty()) {
            put(keys::PGROUP, group);
        }
        let mut send = SendRequest {
            topic: req.topic,
            default_topic: req.topic,
            default_topic_queue_nums: 1,
            queue_id: 0,
            sys_flag: 0,
            born_timestamp: now,
            born_host: req.born_host,
            reconsume_times: 0,
            max_reconsume_times: None,
            properties: &props,
            messages: Messages::One(Payload { flag: 0, body: b"0", properties: &props }),
        };
        let plan = self.plan_send(&send)?;
        let sent = self.send(conn, &mut send, &plan)?;
        Ok(Recalled { message_id: handle.message_id, durable_end: plan.wait_durable.then_some(sent.append.end_offset) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_is_javas_url_safe_base64_of_five_space_separated_fields() {
        let h = encode_handle("Orders", "broker-a", 1_700_000_001_001, "7F00000100002A9F0000000000000001");
        // base64url("v1 Orders broker-a 1700000001001 7F00000100002A9F0000000000000001"), padded.
        assert_eq!(h, "djEgT3JkZXJzIGJyb2tlci1hIDE3MDAwMDAwMDEwMDEgN0YwMDAwMDEwMDAwMkE5RjAwMDAwMDAwMDAwMDAwMDE=");
        let d = decode_handle(&h).unwrap();
        assert_eq!(
            d,
            RecallHandle {
                topic: "Orders".into(),
                broker_name: "broker-a".into(),
                timestamp: "1700000001001".into(),
                message_id: "7F00000100002A9F0000000000000001".into(),
            }
        );
        // Without its padding too, as Java's decoder takes it.
        assert_eq!(decode_handle(h.trim_end_matches('=')).unwrap(), d);
    }

    #[test]
    fn malformed_handles_are_refused_with_javas_words() {
        let b64 = |s: &str| general_purpose::URL_SAFE.encode(s);
        for bad in [
            String::new(),
            "not base64 !".into(),
            b64("v2 Orders broker-a 1 key"),
            b64("v1 Orders broker-a 1"),
            b64("v1"),
            b64(""),
        ] {
            let e = decode_handle(&bad).unwrap_err();
            assert_eq!(e.to_string(), "recall handle is invalid", "{bad:?}");
        }
        // A timestamp that is not a number is the recall's problem, not the handle's.
        assert_eq!(decode_handle(&b64("v1 T b x k extra")).unwrap().timestamp, "x");
    }
}
