//! A request must not keep the connection's read buffer alive once it has been handled.
//!
//! Frames are decoded without copying: a frame's body (and whatever else the decoder slices out)
//! shares the allocation of the connection's read buffer. If the broker kept such a slice (a
//! send's body waiting for something, a long-polling pull parked with its request), a small
//! message would pin a read buffer that grew to megabytes for as long as it is kept. These tests
//! hand the broker frames decoded from a large buffer and then ask that buffer for its
//! allocation back: `BytesMut::try_reclaim` succeeds only when no slice of it is alive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::time::Duration;

use bytes::BytesMut;
use silo_broker::broker::ConnState;
use silo_broker::connection::Channel;
use silo_broker::{Broker, BrokerConfig};
use silo_wire::RemotingHeader;
use silo_wire::SerializeType;
use silo_wire::batch::{OutgoingMessage, OutgoingProperties, encode_batch};
use silo_wire::codes::request as rq;
use silo_wire::custom::{CustomHeader, PullMessageRequestHeader, SendMessageRequestHeaderV2, pull_sys_flag};
use silo_wire::frame::{FrameDecoder, encode_frame};

const BUFFER: usize = 4 << 20;
/// Names longer than the decoder keeps inline, so that the decoded header shares the buffer too.
const TOPIC: &str = "PinnedBufferTopic_with_a_name_longer_than_inline_texts";
const GROUP: &str = "PinnedBufferGroup_with_a_name_longer_than_inline_texts";

fn broker(dir: &std::path::Path) -> std::sync::Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 8 << 20,
        ..Default::default()
    };
    Broker::open(config, None).unwrap()
}

fn send_frame(code: i32, topic: &str, body: &[u8], batch: bool) -> Vec<u8> {
    let mut h = RemotingHeader::request(code, 7);
    SendMessageRequestHeaderV2 {
        producer_group: GROUP.into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        born_timestamp: 1,
        properties: Some("WAIT\u{1}true\u{2}".into()),
        batch: Some(batch),
        ..Default::default()
    }
    .write_ext_fields(&mut h.ext_fields);
    let mut out = Vec::new();
    encode_frame(&h, SerializeType::Json, body, &mut out).unwrap();
    out
}

/// Decodes `bytes` out of a read buffer of `BUFFER` bytes, has the broker handle it, then
/// checks that the buffer's allocation is free again (nothing kept a slice of it). Returns
/// whether the broker answered at once (a parked pull does not).
async fn handled_without_pinning(broker: &std::sync::Arc<Broker>, bytes: &[u8], what: &str) -> bool {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let channel = Channel::new("127.0.0.1:1".parse().unwrap(), 1, tx);
    let mut conn = ConnState::default();
    let mut buf = BytesMut::with_capacity(BUFFER);
    buf.extend_from_slice(bytes);
    let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
    assert!(buf.is_empty());
    // The probe works: while the frame lives, its body and header texts hold the allocation.
    assert!(!buf.try_reclaim(BUFFER), "{what}: the decoded frame should share the read buffer");
    let answer = silo_broker::cmd::dispatch::broker_request(broker, &mut conn, &channel, frame);
    let answered = answer.is_some();
    drop(answer);
    // Answers queued for the writer must not hold the buffer either.
    while rx.try_recv().is_ok() {}
    assert!(buf.try_reclaim(BUFFER), "{what}: the handled request still holds the connection's read buffer");
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handled_sends_and_parked_pulls_release_the_read_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());

    let send = send_frame(rq::SEND_MESSAGE_V2, TOPIC, b"small", false);
    assert!(handled_without_pinning(&broker, &send, "a send").await);

    let body = encode_batch(&[
        OutgoingMessage { flag: 0, body: b"one", properties: OutgoingProperties::Raw(b"") },
        OutgoingMessage { flag: 0, body: b"two", properties: OutgoingProperties::Raw(b"") },
    ])
    .unwrap();
    let batch = send_frame(rq::SEND_BATCH_MESSAGE, TOPIC, &body, true);
    assert!(handled_without_pinning(&broker, &batch, "a batch").await);

    // A pull at the end of an empty queue with the suspend flag parks at the broker (long
    // polling) for up to 20 s, keeping its request.
    let mut h = RemotingHeader::request(rq::PULL_MESSAGE, 9);
    PullMessageRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: 1,
        queue_offset: 0,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUSPEND | pull_sys_flag::SUBSCRIPTION,
        suspend_timeout_millis: 20_000,
        subscription: Some("*".into()),
        expression_type: Some("TAG".into()),
        ..Default::default()
    }
    .write_ext_fields(&mut h.ext_fields);
    let mut pull = Vec::new();
    encode_frame(&h, SerializeType::Json, &[], &mut pull).unwrap();
    let parked =
        tokio::time::timeout(Duration::from_secs(10), handled_without_pinning(&broker, &pull, "a parked pull"))
            .await
            .expect("handling a pull does not block");
    assert!(!parked, "the pull should have been parked, not answered");
}
