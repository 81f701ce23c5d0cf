//! Wire types of RocketMQ 5.x's gRPC API, package `apache.rocketmq.v2`.
//!
//! The structs and enums here are written by hand with `prost` derives rather than generated, and
//! mirror the two protocol files of the API: [`definition`] (shared domain types) and [`service`]
//! (the request/response envelopes of `MessagingService` and the telemetry commands). Field
//! numbers follow the published protocol, including the additions made after the 2.0.x releases
//! (lite topics, priority messages, recall handles, client properties, reconnect and lite
//! unsubscribe commands, lite subscription sync); peers that predate those simply never send them.
//!
//! Conventions, matching what generated code would look like:
//! - enum-typed fields are stored as `i32` (unknown values survive a round trip) and read through
//!   the derived getters, e.g. `status.code()` returns a [`Code`];
//! - `optional` proto3 scalars are `Option<_>`; message fields are always `Option<_>`;
//! - oneofs live in a module named after their message, e.g. [`telemetry_command::Command`];
//!   arms holding a large message (a `Message`, `Settings`, ...) are boxed;
//! - `bytes` fields are [`bytes::Bytes`], so decoding from a `Bytes` buffer slices it instead of
//!   copying message bodies.

pub mod definition;
pub mod service;

pub use definition::*;
pub use service::*;

/// Fully qualified name of the gRPC service.
pub const SERVICE: &str = "apache.rocketmq.v2.MessagingService";

/// HTTP/2 paths (`/<service>/<method>`) of the service's RPCs.
pub mod method {
    /// Topic route lookup (unary).
    pub const QUERY_ROUTE: &str = "/apache.rocketmq.v2.MessagingService/QueryRoute";
    /// Client keep-alive (unary).
    pub const HEARTBEAT: &str = "/apache.rocketmq.v2.MessagingService/Heartbeat";
    /// Message publishing (unary).
    pub const SEND_MESSAGE: &str = "/apache.rocketmq.v2.MessagingService/SendMessage";
    /// Queue assignment for a consumer (unary).
    pub const QUERY_ASSIGNMENT: &str = "/apache.rocketmq.v2.MessagingService/QueryAssignment";
    /// Pop-style receive (server streaming).
    pub const RECEIVE_MESSAGE: &str = "/apache.rocketmq.v2.MessagingService/ReceiveMessage";
    /// Acknowledgement of received messages (unary).
    pub const ACK_MESSAGE: &str = "/apache.rocketmq.v2.MessagingService/AckMessage";
    /// Client-side dead-lettering (unary).
    pub const FORWARD_MESSAGE_TO_DEAD_LETTER_QUEUE: &str =
        "/apache.rocketmq.v2.MessagingService/ForwardMessageToDeadLetterQueue";
    /// Offset-based pull (server streaming).
    pub const PULL_MESSAGE: &str = "/apache.rocketmq.v2.MessagingService/PullMessage";
    /// Store consume progress (unary).
    pub const UPDATE_OFFSET: &str = "/apache.rocketmq.v2.MessagingService/UpdateOffset";
    /// Read stored consume progress (unary).
    pub const GET_OFFSET: &str = "/apache.rocketmq.v2.MessagingService/GetOffset";
    /// Look up a queue offset by policy or time (unary).
    pub const QUERY_OFFSET: &str = "/apache.rocketmq.v2.MessagingService/QueryOffset";
    /// Commit or roll back a transaction message (unary).
    pub const END_TRANSACTION: &str = "/apache.rocketmq.v2.MessagingService/EndTransaction";
    /// Settings and command exchange (bidirectional streaming).
    pub const TELEMETRY: &str = "/apache.rocketmq.v2.MessagingService/Telemetry";
    /// Client shutdown notice (unary).
    pub const NOTIFY_CLIENT_TERMINATION: &str = "/apache.rocketmq.v2.MessagingService/NotifyClientTermination";
    /// Change a received message's invisibility (unary).
    pub const CHANGE_INVISIBLE_DURATION: &str = "/apache.rocketmq.v2.MessagingService/ChangeInvisibleDuration";
    /// Withdraw an undelivered delay message (unary).
    pub const RECALL_MESSAGE: &str = "/apache.rocketmq.v2.MessagingService/RecallMessage";
    /// Update a lite push consumer's lite topics (unary).
    pub const SYNC_LITE_SUBSCRIPTION: &str = "/apache.rocketmq.v2.MessagingService/SyncLiteSubscription";

    /// Every path above, in the order the service declares its RPCs.
    pub const ALL: &[&str] = &[
        QUERY_ROUTE,
        HEARTBEAT,
        SEND_MESSAGE,
        QUERY_ASSIGNMENT,
        RECEIVE_MESSAGE,
        ACK_MESSAGE,
        FORWARD_MESSAGE_TO_DEAD_LETTER_QUEUE,
        PULL_MESSAGE,
        UPDATE_OFFSET,
        GET_OFFSET,
        QUERY_OFFSET,
        END_TRANSACTION,
        TELEMETRY,
        NOTIFY_CLIENT_TERMINATION,
        CHANGE_INVISIBLE_DURATION,
        RECALL_MESSAGE,
        SYNC_LITE_SUBSCRIPTION,
    ];
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use bytes::Bytes;
    use prost::Message as _;

    use super::*;

    fn points_into(inner: &Bytes, outer: &Bytes) -> bool {
        let start = outer.as_ptr() as usize;
        let end = start + outer.len();
        let p = inner.as_ptr() as usize;
        !inner.is_empty() && p >= start && p + inner.len() <= end
    }

    #[test]
    fn status_wire_bytes() {
        let status = Status { code: Code::Ok as i32, message: "x".into() };
        // field 1, varint: key 0x08; 20000 = 0b1_0011100_0100000 -> a0 9c 01
        // field 2, length-delimited: key 0x12, len 1, 'x'
        assert_eq!(status.encode_to_vec(), [0x08, 0xa0, 0x9c, 0x01, 0x12, 0x01, b'x']);
        let back = Status::decode(&[0x08, 0xa0, 0x9c, 0x01, 0x12, 0x01, b'x'][..]).unwrap();
        assert_eq!(back.code(), Code::Ok);
        assert_eq!(back.message, "x");
        // A default Status encodes to nothing.
        assert!(Status::default().encode_to_vec().is_empty());
    }

    #[test]
    fn code_numbers_and_unknown_values() {
        assert_eq!(Code::BadRequest as i32, 40000);
        assert_eq!(Code::InvalidClientProperties as i32, 40021);
        assert_eq!(Code::LiteSubscriptionQuotaExceeded as i32, 42902);
        assert_eq!(Code::FailedToConsumeMessage as i32, 60000);
        assert_eq!(Code::try_from(50502), Ok(Code::VerifyFifoMessageUnsupported));
        // An unknown code survives decoding as a raw number; the getter falls back to the default.
        let raw = Status { code: 12345, message: String::new() }.encode_to_vec();
        let back = Status::decode(&raw[..]).unwrap();
        assert_eq!(back.code, 12345);
        assert_eq!(back.code(), Code::Unspecified);
    }

    #[test]
    fn message_body_wire_bytes() {
        let msg = Message { body: Bytes::from_static(b"ab"), ..Default::default() };
        // field 4, length-delimited: key (4 << 3) | 2 = 0x22
        assert_eq!(msg.encode_to_vec(), [0x22, 0x02, b'a', b'b']);
    }

    #[test]
    fn message_body_decodes_zero_copy() {
        let msg = Message {
            topic: Some(Resource { resource_namespace: String::new(), name: "t".into() }),
            user_properties: HashMap::from([("k".to_owned(), "v".to_owned())]),
            system_properties: Some(SystemProperties {
                message_id: "id-1".into(),
                message_type: MessageType::Normal as i32,
                tag: Some("tag".into()),
                ..Default::default()
            }),
            body: Bytes::from_static(b"hello, body"),
        };
        let buf = Bytes::from(msg.encode_to_vec());
        let back = Message::decode(buf.clone()).unwrap();
        assert_eq!(back, msg);
        assert!(points_into(&back.body, &buf), "body was copied instead of sliced");

        // Also when nested inside a request.
        let req = SendMessageRequest { messages: vec![msg.clone(), msg] };
        let buf = Bytes::from(req.encode_to_vec());
        let back = SendMessageRequest::decode(buf.clone()).unwrap();
        assert_eq!(back.messages.len(), 2);
        for m in &back.messages {
            assert!(points_into(&m.body, &buf));
        }

        // And inside a (boxed) oneof arm of a streamed frame.
        let frame = ReceiveMessageResponse {
            content: Some(receive_message_response::Content::Message(Box::new(back.messages[0].clone()))),
        };
        let buf = Bytes::from(frame.encode_to_vec());
        let back = ReceiveMessageResponse::decode(buf.clone()).unwrap();
        let Some(receive_message_response::Content::Message(m)) = back.content else { panic!("lost message") };
        assert_eq!(&m.body[..], b"hello, body");
        assert!(points_into(&m.body, &buf));
    }

    #[test]
    fn telemetry_settings_round_trip() {
        let settings = Settings {
            client_type: Some(ClientType::Producer as i32),
            access_point: Some(Endpoints {
                scheme: AddressScheme::IPv4 as i32,
                addresses: vec![Address { host: "127.0.0.1".into(), port: 8081 }],
            }),
            backoff_policy: Some(RetryPolicy {
                max_attempts: 3,
                strategy: Some(retry_policy::Strategy::ExponentialBackoff(ExponentialBackoff {
                    initial: Some(prost_types::Duration { seconds: 0, nanos: 10_000_000 }),
                    max: Some(prost_types::Duration { seconds: 1, nanos: 0 }),
                    multiplier: 2.0,
                })),
            }),
            request_timeout: Some(prost_types::Duration { seconds: 3, nanos: 0 }),
            pub_sub: Some(settings::PubSub::Publishing(Publishing {
                topics: vec![Resource { resource_namespace: String::new(), name: "orders".into() }],
                max_body_size: 4 << 20,
                validate_message_type: true,
            })),
            user_agent: Some(Ua {
                language: Language::Rust as i32,
                version: "5.0.0".into(),
                platform: "linux".into(),
                hostname: "h".into(),
            }),
            metric: Some(Metric { on: false, endpoints: None }),
            client_properties: HashMap::from([("app".to_owned(), "silo-test".to_owned())]),
        };
        let cmd =
            TelemetryCommand { status: None, command: Some(telemetry_command::Command::Settings(Box::new(settings))) };
        let raw = cmd.encode_to_vec();
        // The oneof's settings arm is field 2, length-delimited.
        assert_eq!(raw[0], 0x12);
        let back = TelemetryCommand::decode(&raw[..]).unwrap();
        assert_eq!(back, cmd);
        let Some(telemetry_command::Command::Settings(s)) = back.command else { panic!("lost settings") };
        assert_eq!(s.client_type(), ClientType::Producer);
        assert_eq!(s.user_agent.unwrap().language(), Language::Rust);
    }

    #[test]
    fn telemetry_server_commands() {
        let cmd = TelemetryCommand {
            status: Some(Status { code: Code::Ok as i32, message: "OK".into() }),
            command: Some(telemetry_command::Command::ReconnectEndpointsCommand(ReconnectEndpointsCommand {
                nonce: "n".into(),
            })),
        };
        let back = TelemetryCommand::decode(&cmd.encode_to_vec()[..]).unwrap();
        assert_eq!(back, cmd);
        // NotifyUnsubscribeLiteCommand is field 9: key (9 << 3) | 2 = 0x4a, then len 3 holding
        // field 1 = "a" (0x0a 0x01 'a').
        let cmd = TelemetryCommand {
            status: None,
            command: Some(telemetry_command::Command::NotifyUnsubscribeLiteCommand(NotifyUnsubscribeLiteCommand {
                lite_topic: "a".into(),
            })),
        };
        assert_eq!(cmd.encode_to_vec(), [0x4a, 0x03, 0x0a, 0x01, b'a']);
    }

    #[test]
    fn oneof_and_optional_presence() {
        // A oneof arm holding the zero value is still written.
        let opt =
            OffsetOption { offset_type: Some(offset_option::OffsetType::Policy(offset_option::Policy::Last as i32)) };
        assert_eq!(opt.encode_to_vec(), [0x08, 0x00]);
        // So is a proto3 `optional` scalar set to zero (field 14, varint: key 0x70).
        let sp = SystemProperties { queue_offset: Some(0), ..Default::default() };
        assert_eq!(sp.encode_to_vec(), [0x70, 0x00]);
        // The newest fields: lite_topic is 21 (key 0xaa 0x01), priority is 22 (key 0xb0 0x01).
        let sp = SystemProperties { lite_topic: Some("l".into()), priority: Some(7), ..Default::default() };
        assert_eq!(sp.encode_to_vec(), [0xaa, 0x01, 0x01, b'l', 0xb0, 0x01, 0x07]);
        // Streaming frames: next_offset is field 3 of the pull response.
        let frame = PullMessageResponse { content: Some(pull_message_response::Content::NextOffset(5)) };
        assert_eq!(frame.encode_to_vec(), [0x18, 0x05]);
    }

    #[test]
    fn method_paths() {
        assert_eq!(method::ALL.len(), 17);
        let prefix = format!("/{SERVICE}/");
        for path in method::ALL {
            let name = path.strip_prefix(&prefix).unwrap_or_else(|| panic!("{path} lacks the service prefix"));
            assert!(!name.is_empty() && !name.contains('/'));
        }
        assert_eq!(method::QUERY_ROUTE, "/apache.rocketmq.v2.MessagingService/QueryRoute");
    }
}
