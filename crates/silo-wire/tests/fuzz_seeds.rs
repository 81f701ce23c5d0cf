//! Replays the fuzz seed corpus (and any crash reproducers committed next to it) through every
//! decoder on the stable toolchain, so that CI guards what the fuzzers found without libFuzzer.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::path::Path;

use bytes::BytesMut;
use silo_wire::batch::decode_batch;
use silo_wire::body::{BatchAckMessageRequestBody, HeartbeatData, TopicRouteData, decode_json_body};
use silo_wire::frame::FrameDecoder;
use silo_wire::record::RecordWalker;
use silo_wire::{PropertiesView, RemotingHeader, SerializeType};

fn decode_everything(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(_)) = FrameDecoder::new(1 << 20).decode(&mut buf) {}
    let _ = RemotingHeader::decode(SerializeType::Json, data);
    let _ = RemotingHeader::decode(SerializeType::RocketMq, data);
    let _ = decode_batch(data).count();
    let _ = RecordWalker::new(data).count();
    if let Ok(view) = PropertiesView::parse(data) {
        let _ = view.iter().count();
    }
    let _ = decode_json_body::<TopicRouteData>(data);
    let _ = decode_json_body::<HeartbeatData>(data);
    if let Ok(body) = decode_json_body::<BatchAckMessageRequestBody>(data) {
        for ack in &body.acks {
            assert!(ack.offsets().count() <= ack.bit_set.len() * 8);
        }
    }
    let mut at = 0;
    while let Some(rest) = data.get(at..)
        && let Ok(Some(t)) = silo_wire::ha::decode_transfer(rest, 64 * 1024)
    {
        assert!(at + t.len <= data.len());
        at += t.len;
    }
    if let Ok(Some((offset, consumed))) = silo_wire::ha::last_offset_report(data) {
        assert!(offset >= 0 && consumed <= data.len());
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(handle) = silo_wire::pop::ReceiptHandle::parse(text)
    {
        assert_eq!(silo_wire::pop::ReceiptHandle::parse(&handle.to_string()), Ok(handle.clone()));
    }
}

#[test]
fn every_seed_decodes_without_panicking() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut files = 0;
    for target in std::fs::read_dir(&seeds).unwrap() {
        for file in std::fs::read_dir(target.unwrap().path()).unwrap() {
            let data = std::fs::read(file.unwrap().path()).unwrap();
            decode_everything(&data);
            // And every prefix of it, as a reader sees a stream arrive.
            for cut in 0..data.len() {
                decode_everything(&data[..cut]);
            }
            files += 1;
        }
    }
    assert!(files >= 10, "expected the committed seed corpus, found {files} files");
}
