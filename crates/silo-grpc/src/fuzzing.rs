//! What the fuzz target (`fuzz/`) and its seed replay (`tests/fuzz_seeds.rs`) drive: a request
//! body as it arrives, through everything the front end does to it before the broker's core
//! sees it. The first byte picks the method; the rest is the HTTP/2 body (gRPC frames).

use bytes::{Buf, Bytes};
use prost::Message as _;
use silo_wire::pop::ReceiptHandle;

use crate::proto;

/// The methods, in the order the selector byte picks them.
pub const METHODS: [&str; 12] = [
    proto::method::QUERY_ROUTE,
    proto::method::HEARTBEAT,
    proto::method::SEND_MESSAGE,
    proto::method::QUERY_ASSIGNMENT,
    proto::method::RECEIVE_MESSAGE,
    proto::method::ACK_MESSAGE,
    proto::method::FORWARD_MESSAGE_TO_DEAD_LETTER_QUEUE,
    proto::method::END_TRANSACTION,
    proto::method::TELEMETRY,
    proto::method::NOTIFY_CLIENT_TERMINATION,
    proto::method::CHANGE_INVISIBLE_DURATION,
    proto::method::RECALL_MESSAGE,
];

/// The gRPC frames of a body, as the server's decoder takes them: a compression flag, a
/// 4-byte length, the message. Stops at the first frame longer than what is there, or than
/// `max`.
pub fn frames(mut body: Bytes, max: usize) -> Vec<Bytes> {
    let mut out = Vec::new();
    while body.remaining() >= 5 {
        let compressed = body.get_u8();
        let len = body.get_u32() as usize;
        if compressed > 1 || len > max || len > body.remaining() {
            break;
        }
        out.push(body.split_to(len));
    }
    out
}

fn names(r: Option<&proto::Resource>) {
    if let Some(r) = r {
        let _ = crate::validate::topic(&r.name);
        let _ = crate::validate::group(&r.name);
    }
}

fn handle(text: &str) {
    if let Ok(h) = ReceiptHandle::parse(text) {
        assert_eq!(ReceiptHandle::parse(&h.to_string()).as_ref(), Ok(&h));
    }
}

/// Decodes `data` as the request of the method its first byte picks, and runs the front end's
/// own parsing of what it holds (names, receipt handles, durations, message properties).
pub fn decode_request(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else { return };
    let method = usize::from(selector) % METHODS.len();
    for frame in frames(Bytes::copy_from_slice(body), 1 << 20) {
        match method {
            0 => {
                if let Ok(r) = proto::QueryRouteRequest::decode(frame) {
                    names(r.topic.as_ref());
                }
            }
            1 => {
                let _ = proto::HeartbeatRequest::decode(frame);
            }
            2 => {
                if let Ok(r) = proto::SendMessageRequest::decode(frame) {
                    for m in &r.messages {
                        names(m.topic.as_ref());
                        for (k, v) in &m.user_properties {
                            let _ = crate::convert::is_system_key(k);
                            let _ = v.chars().any(char::is_control);
                        }
                    }
                }
            }
            3 => {
                if let Ok(r) = proto::QueryAssignmentRequest::decode(frame) {
                    names(r.topic.as_ref());
                    names(r.group.as_ref());
                }
            }
            4 => {
                if let Ok(r) = proto::ReceiveMessageRequest::decode(frame) {
                    names(r.group.as_ref());
                    if let Some(f) = r.filter_expression {
                        let _ = silo_broker::core::pull::parse_tags(&f.expression);
                    }
                }
            }
            5 => {
                if let Ok(r) = proto::AckMessageRequest::decode(frame) {
                    for e in &r.entries {
                        handle(&e.receipt_handle);
                    }
                }
            }
            6 => {
                if let Ok(r) = proto::ForwardMessageToDeadLetterQueueRequest::decode(frame) {
                    handle(&r.receipt_handle);
                }
            }
            7 => {
                if let Ok(r) = proto::EndTransactionRequest::decode(frame) {
                    let _ = silo_wire::msgid::parse_offset_msg_id(&r.transaction_id);
                }
            }
            8 => {
                let _ = proto::TelemetryCommand::decode(frame);
            }
            9 => {
                let _ = proto::NotifyClientTerminationRequest::decode(frame);
            }
            10 => {
                if let Ok(r) = proto::ChangeInvisibleDurationRequest::decode(frame) {
                    handle(&r.receipt_handle);
                }
            }
            _ => {
                if let Ok(r) = proto::RecallMessageRequest::decode(frame) {
                    names(r.topic.as_ref());
                    if let Ok(h) = silo_broker::core::recall::decode_handle(&r.recall_handle) {
                        let again =
                            silo_broker::core::recall::encode_handle(&h.topic, &h.broker_name, 0, &h.message_id);
                        let back = silo_broker::core::recall::decode_handle(&again);
                        assert!(back.is_ok_and(|b| b.topic == h.topic && b.message_id == h.message_id));
                    }
                }
            }
        }
    }
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = crate::receive::grpc_timeout(text);
    }
}
