//! Property tests: whatever the encoders write, the decoders read back unchanged, and every
//! truncation of a valid input is reported as an error with an offset inside the input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::net::SocketAddr;

use proptest::prelude::*;
use silo_wire::batch::{OutgoingMessage, OutgoingProperties, decode_batch, encode_batch};
use silo_wire::frame::{decode_frame, encode_frame};
use silo_wire::record::{Decoded, RecordMeta, decode_record, encode_record};
use silo_wire::{ExtFields, LanguageCode, RemotingHeader, SerializeType};

fn key() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.#-]{0,15}"
}

fn value() -> impl Strategy<Value = String> {
    // Any text without the pair separator; may hold \u{1} and non-ASCII.
    "[^\u{2}]{1,40}"
}

fn props() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((key(), value()), 0..6)
}

fn host() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port))),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port))),
    ]
}

proptest! {
    #[test]
    fn batches_round_trip(msgs in prop::collection::vec((any::<i32>(), prop::collection::vec(any::<u8>(), 0..300), props()), 0..12)) {
        let pairs: Vec<Vec<(&str, &str)>> = msgs.iter().map(|(_, _, p)| p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()).collect();
        let outgoing: Vec<_> = msgs.iter().zip(&pairs).map(|((flag, body, _), p)| OutgoingMessage {
            flag: *flag, body, properties: OutgoingProperties::Pairs(p),
        }).collect();
        let bytes = encode_batch(&outgoing).unwrap();
        let decoded: Vec<_> = decode_batch(&bytes).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(decoded.len(), msgs.len());
        for (d, ((flag, body, p), _)) in decoded.iter().zip(msgs.iter().zip(&pairs)) {
            prop_assert_eq!(d.flag, *flag);
            prop_assert_eq!(d.body, &body[..]);
            let got: Vec<_> = d.properties.iter().collect();
            let want: Vec<_> = p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(got, want);
        }
        for cut in 0..bytes.len() {
            if let Some(Err(e)) = decode_batch(&bytes[..cut]).find(Result::is_err) {
                prop_assert!(e.offset <= cut);
            }
        }
    }

    #[test]
    fn records_round_trip(
        topic in "[A-Za-z0-9_%|-]{1,200}",
        body in prop::collection::vec(any::<u8>(), 0..600),
        p in props(),
        born in host(), store in host(),
        nums in any::<(i32, i32, i64, i64, i64, i64, i32, i64)>(),
        sys_flag in 0i32..0x800,
    ) {
        let meta = RecordMeta {
            body_crc: silo_wire::checksum::body_crc(&body),
            queue_id: nums.0, flag: nums.1, queue_offset: nums.2, physical_offset: nums.3,
            sys_flag: sys_flag & !0x30 | if born.is_ipv6() { 0x10 } else { 0 } | if store.is_ipv6() { 0x20 } else { 0 },
            born_timestamp: nums.4, born_host: born, store_timestamp: nums.5, store_host: store,
            reconsume_times: nums.6, prepared_tx_offset: nums.7,
        };
        let pairs: Vec<(&str, &str)> = p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut out = Vec::new();
        encode_record(&meta, &topic, &body, OutgoingProperties::Pairs(&pairs), &mut out).unwrap();
        let Decoded::Record(rec) = decode_record(&out, 0).unwrap() else { panic!("blank") };
        prop_assert_eq!(rec.meta, meta);
        prop_assert_eq!(rec.topic, topic.as_str());
        prop_assert_eq!(rec.body, &body[..]);
        prop_assert!(rec.body_crc_matches());
        for cut in 0..out.len() {
            let e = decode_record(&out[..cut], 0).unwrap_err();
            prop_assert!(e.offset <= cut);
        }
    }

    #[test]
    fn headers_round_trip_in_both_serializations(
        code in -32768i32..32768, opaque in any::<i32>(), flag in any::<i32>(), version in -32768i32..32768,
        language in 0u8..14, remark in proptest::option::of("\\PC{1,40}"),
        ext in prop::collection::vec((key(), "\\PC{1,40}"), 0..10),
        body in prop::collection::vec(any::<u8>(), 0..100),
    ) {
        let mut ext_fields = ExtFields::new();
        for (k, v) in &ext {
            ext_fields.insert(k.as_str(), v.as_str());
        }
        let header = RemotingHeader { code, language: LanguageCode(language), version, opaque, flag, remark, ext_fields };
        for serialize in [SerializeType::Json, SerializeType::RocketMq] {
            let mut out = Vec::new();
            encode_frame(&header, serialize, &body, &mut out).unwrap();
            let frame = decode_frame(&out, 1 << 20).unwrap().unwrap();
            prop_assert_eq!(&frame.header, &header);
            prop_assert_eq!(frame.body, &body[..]);
            prop_assert_eq!(frame.total_len, out.len());
            for cut in 0..out.len() {
                prop_assert!(decode_frame(&out[..cut], 1 << 20).unwrap().is_none());
            }
        }
    }
}
