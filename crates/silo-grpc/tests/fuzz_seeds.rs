//! Replays the gRPC fuzz target's seed corpus (and any crash reproducers committed next to it)
//! through the request decoding on the stable toolchain, so that CI guards what the fuzzer
//! found without libFuzzer. `write_seeds` (ignored) writes the seeds: one real request of each
//! method, as the SDKs encode them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};

use bytes::{BufMut, BytesMut};
use prost::Message as _;
use silo_grpc::fuzzing::{METHODS, decode_request};
use silo_grpc::proto;

fn seeds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/requests")
}

#[test]
fn every_seed_decodes_without_panicking() {
    let mut files = 0;
    for file in std::fs::read_dir(seeds()).unwrap() {
        let data = std::fs::read(file.unwrap().path()).unwrap();
        decode_request(&data);
        // And every prefix, and every other method's view of the same bytes.
        for cut in 0..data.len() {
            decode_request(&data[..cut]);
        }
        for selector in 0..METHODS.len() as u8 {
            let mut other = data.clone();
            other[0] = selector;
            decode_request(&other);
        }
        files += 1;
    }
    assert!(files >= METHODS.len(), "expected the committed seed corpus, found {files} files");
}

fn resource(name: &str) -> Option<proto::Resource> {
    Some(proto::Resource { resource_namespace: String::new(), name: name.into() })
}

#[test]
#[ignore = "writes the seed corpus"]
fn write_seeds() {
    let handle = "0 1764600000000 60000 3 0 broker-a 1 42 12345".to_owned();
    let message = proto::Message {
        topic: resource("Orders"),
        user_properties: [("k".to_owned(), "v".to_owned())].into(),
        system_properties: Some(proto::SystemProperties {
            tag: Some("TagA".into()),
            keys: vec!["key-1".into()],
            message_id: "0102FC0000000148240B20D8E000000007".into(),
            message_group: Some("g1".into()),
            delivery_timestamp: Some(prost_types::Timestamp { seconds: 1_764_600_000, nanos: 0 }),
            ..Default::default()
        }),
        body: bytes::Bytes::from_static(b"hello"),
    };
    let requests: Vec<Vec<u8>> = vec![
        proto::QueryRouteRequest { topic: resource("Orders"), endpoints: None }.encode_to_vec(),
        proto::HeartbeatRequest { group: resource("g"), client_type: 3 }.encode_to_vec(),
        proto::SendMessageRequest { messages: vec![message] }.encode_to_vec(),
        proto::QueryAssignmentRequest { topic: resource("Orders"), group: resource("g"), endpoints: None }
            .encode_to_vec(),
        proto::ReceiveMessageRequest {
            group: resource("g"),
            message_queue: Some(proto::MessageQueue { topic: resource("Orders"), id: -1, ..Default::default() }),
            filter_expression: Some(proto::FilterExpression { r#type: 1, expression: "TagA || TagB".into() }),
            batch_size: 32,
            invisible_duration: Some(prost_types::Duration { seconds: 30, nanos: 0 }),
            auto_renew: true,
            long_polling_timeout: Some(prost_types::Duration { seconds: 20, nanos: 0 }),
            attempt_id: Some("attempt".into()),
        }
        .encode_to_vec(),
        proto::AckMessageRequest {
            group: resource("g"),
            topic: resource("Orders"),
            entries: vec![proto::AckMessageEntry {
                message_id: "m".into(),
                receipt_handle: handle.clone(),
                lite_topic: None,
            }],
        }
        .encode_to_vec(),
        proto::ForwardMessageToDeadLetterQueueRequest {
            group: resource("g"),
            topic: resource("Orders"),
            receipt_handle: handle.clone(),
            message_id: "m".into(),
            delivery_attempt: 3,
            max_delivery_attempts: 3,
            lite_topic: None,
        }
        .encode_to_vec(),
        proto::EndTransactionRequest {
            topic: resource("Orders"),
            message_id: "m".into(),
            transaction_id: "7F00000100002A9F0000000000000F3C".into(),
            resolution: 1,
            source: 2,
            trace_context: String::new(),
        }
        .encode_to_vec(),
        proto::TelemetryCommand {
            status: None,
            command: Some(proto::telemetry_command::Command::Settings(Box::new(proto::Settings {
                client_type: Some(2),
                pub_sub: Some(proto::settings::PubSub::Subscription(proto::Subscription {
                    group: resource("g"),
                    fifo: Some(true),
                    ..Default::default()
                })),
                ..Default::default()
            }))),
        }
        .encode_to_vec(),
        proto::NotifyClientTerminationRequest { group: resource("g") }.encode_to_vec(),
        proto::ChangeInvisibleDurationRequest {
            group: resource("g"),
            topic: resource("Orders"),
            receipt_handle: handle,
            invisible_duration: Some(prost_types::Duration { seconds: 10, nanos: 0 }),
            message_id: "m".into(),
            lite_topic: None,
            suspend: None,
        }
        .encode_to_vec(),
        proto::RecallMessageRequest {
            topic: resource("Orders"),
            recall_handle: silo_broker::core::recall::encode_handle("Orders", "broker-a", 1_764_600_001_001, "m"),
        }
        .encode_to_vec(),
    ];
    std::fs::create_dir_all(seeds()).unwrap();
    for (i, (method, m)) in METHODS.iter().zip(requests).enumerate() {
        let mut data = BytesMut::new();
        data.put_u8(u8::try_from(i).unwrap());
        data.put_u8(0);
        data.put_u32(u32::try_from(m.len()).unwrap());
        data.put_slice(&m);
        let name = method.rsplit('/').next().unwrap();
        std::fs::write(seeds().join(name), &data).unwrap();
    }
}
