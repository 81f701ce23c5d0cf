//! Lying lengths and garbage: typed errors with offsets, never a panic, never an allocation
//! sized by a length field that the input does not back with bytes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use bytes::BytesMut;
use silo_wire::batch::decode_batch;
use silo_wire::body::{TopicRouteData, decode_json_body};
use silo_wire::error::DecodeErrorKind;
use silo_wire::frame::{DEFAULT_MAX_FRAME_LEN, FrameDecoder};
use silo_wire::record::{RecordWalker, WalkStop, decode_record};
use silo_wire::{RemotingHeader, SerializeType};

#[test]
fn a_frame_over_the_limit_is_refused_from_its_first_eight_bytes() {
    let declared = (DEFAULT_MAX_FRAME_LEN + 1) as i32;
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&declared.to_be_bytes());
    buf.extend_from_slice(&[1, 0, 0, 0]);
    let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
    assert_eq!(err.offset, 0);
    assert_eq!(
        err.kind,
        DecodeErrorKind::FrameTooLarge { length: DEFAULT_MAX_FRAME_LEN + 1, max: DEFAULT_MAX_FRAME_LEN }
    );
}

#[test]
fn an_unknown_serialize_type_is_an_error_at_the_header_word() {
    let mut buf = BytesMut::from(&[0, 0, 0, 4, 7, 0, 0, 0][..]);
    let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
    assert_eq!((err.offset, err.kind), (4, DecodeErrorKind::UnknownSerializeType(7)));
}

#[test]
fn binary_header_lengths_cannot_outrun_the_header() {
    // code, language, version, opaque, flag, then a remark claiming 2 GiB.
    let mut h = vec![0, 10, 0, 1, 0xDF, 0, 0, 0, 1, 0, 0, 0, 0];
    h.extend_from_slice(&i32::MAX.to_be_bytes());
    let err = RemotingHeader::decode(SerializeType::RocketMq, &h).unwrap_err();
    assert_eq!(err.offset, 17);
    assert!(matches!(err.kind, DecodeErrorKind::Truncated { field: "remark", .. }));
    // extFields whose entry claims a value longer than the map.
    let mut h = vec![0, 10, 0, 1, 0xDF, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
    let entry = [&[0u8, 1, b'k'][..], &1_000_000i32.to_be_bytes()[..], b"v"].concat();
    h.extend_from_slice(&(entry.len() as i32).to_be_bytes());
    h.extend_from_slice(&entry);
    let err = RemotingHeader::decode(SerializeType::RocketMq, &h).unwrap_err();
    assert!(matches!(err.kind, DecodeErrorKind::Truncated { field: "extFields value", .. }), "{err}");
    assert_eq!(err.offset, 21 + 3 + 4);
    // A negative length.
    let mut h = vec![0, 10, 0, 1, 0xDF, 0, 0, 0, 1, 0, 0, 0, 0];
    h.extend_from_slice(&(-5i32).to_be_bytes());
    let err = RemotingHeader::decode(SerializeType::RocketMq, &h).unwrap_err();
    assert_eq!((err.offset, err.kind), (13, DecodeErrorKind::BadLength { field: "remark length", value: -5 }));
}

#[test]
fn json_headers_that_are_not_json_are_errors() {
    for bad in [&b"{"[..], b"[]", b"{\"code\":\"x\"}", b"{\"code\":99999999999}", b"\xff\xfe"] {
        let err = RemotingHeader::decode(SerializeType::Json, bad).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::InvalidJson(_)), "{bad:?}: {err}");
    }
}

#[test]
fn a_batch_entry_claiming_more_than_the_body_is_an_error() {
    let mut body = Vec::new();
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    body.extend_from_slice(&[0; 30]);
    let err = decode_batch(&body).next().unwrap().unwrap_err();
    assert_eq!(err.offset, 0);
    assert!(matches!(err.kind, DecodeErrorKind::BadLength { field: "batch entry totalSize", .. }));
}

#[test]
fn records_with_impossible_sizes_stop_the_walk_where_they_start() {
    let mut seg = vec![0u8; 200];
    seg[..4].copy_from_slice(&i32::MAX.to_be_bytes());
    seg[4..8].copy_from_slice(&silo_wire::record::MAGIC_V1.to_be_bytes());
    let err = decode_record(&seg, 4096).unwrap_err();
    assert_eq!(err.offset, 4096);
    let mut walker = RecordWalker::new(&seg);
    assert_eq!(walker.by_ref().count(), 0);
    assert!(matches!(walker.stop(), Some(WalkStop::Invalid(e)) if e.offset == 0));
    // A zero-filled tail reads as magic 0: the walk stops cleanly at offset 0 too.
    let zeros = [0u8; 64];
    let err = decode_record(&zeros, 0).unwrap_err();
    assert_eq!((err.offset, err.kind), (4, DecodeErrorKind::BadMagic(0)));
}

#[test]
fn json_bodies_nested_past_the_limit_are_refused() {
    let deep = "{\"a\":".repeat(200) + &"}".repeat(200);
    assert!(decode_json_body::<TopicRouteData>(deep.as_bytes()).is_err());
    assert!(decode_json_body::<TopicRouteData>(b"{0:").is_err());
}

#[test]
fn json_errors_point_at_the_offending_byte() {
    let err = RemotingHeader::decode(SerializeType::Json, b"{\"code\":0,\n \"flag\":x}").unwrap_err();
    assert_eq!(err.offset, 19);
    let err = decode_json_body::<TopicRouteData>(b"{\"brokerDatas\":[1]}").unwrap_err();
    assert_eq!(err.offset, 16); // the `1` where a broker object belongs
}
