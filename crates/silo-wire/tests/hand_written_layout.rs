//! The stored-record and batch layouts checked field by field against bytes written out by hand
//! from the spec, so that the encoder is not its own oracle.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use silo_wire::batch::{OutgoingMessage, OutgoingProperties, decode_batch, encode_batch};
use silo_wire::record::{Decoded, RecordMeta, decode_record, encode_record};

/// One v1 record, IPv4 hosts, topic "T", body "hello", properties "TAGS\x01A\x02".
#[rustfmt::skip]
const RECORD: &[u8] = &[
    0x00, 0x00, 0x00, 0x68,             // TOTALSIZE = 104 = 91 fixed + 5 body + 1 topic + 7 properties
    0xDA, 0xA3, 0x20, 0xA7,             // MAGICCODE v1
    0x36, 0x10, 0xA6, 0x86,             // BODYCRC = crc32("hello") & 0x7fffffff = 907060870
    0x00, 0x00, 0x00, 0x02,             // QUEUEID 2
    0xFF, 0xFF, 0xFF, 0xFF,             // FLAG -1
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, // QUEUEOFFSET 42
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, // PHYSICALOFFSET 4096
    0x00, 0x00, 0x00, 0x00,             // SYSFLAG 0
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00, // BORNTIMESTAMP 1700000000000
    0x0A, 0x00, 0x00, 0x05, 0x00, 0x00, 0xC3, 0x50, // BORNHOST 10.0.0.5:50000
    0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x01, // STORETIMESTAMP 1700000000001
    0x0A, 0x00, 0x00, 0x07, 0x00, 0x00, 0x2A, 0x9F, // STOREHOST 10.0.0.7:10911
    0x00, 0x00, 0x00, 0x03,             // RECONSUMETIMES 3
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // PREPARED_TX_OFFSET 0
    0x00, 0x00, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o', // BODYLEN + BODY
    0x01, b'T',                         // TOPICLEN (1 byte, v1) + TOPIC
    0x00, 0x07, b'T', b'A', b'G', b'S', 0x01, b'A', 0x02, // PROPLEN + PROPERTIES
];

#[test]
fn record_layout_matches_the_hand_written_bytes() {
    // 91 bytes of fixed overhead + 5 body + 1 topic + 7 properties = 104.
    assert_eq!(RECORD.len(), 104);
    let fixed = RECORD;
    let meta = RecordMeta {
        body_crc: 907_060_870,
        queue_id: 2,
        flag: -1,
        queue_offset: 42,
        physical_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.5:50000".parse().unwrap(),
        store_timestamp: 1_700_000_000_001,
        store_host: "10.0.0.7:10911".parse().unwrap(),
        reconsume_times: 3,
        prepared_tx_offset: 0,
    };
    let mut out = Vec::new();
    encode_record(&meta, "T", b"hello", OutgoingProperties::Pairs(&[("TAGS", "A")]), &mut out).unwrap();
    assert_eq!(out, fixed);
    let Decoded::Record(rec) = decode_record(fixed, 0).unwrap() else { panic!("blank") };
    assert_eq!(rec.meta, meta);
    assert_eq!((rec.topic, rec.body, rec.properties.get("TAGS")), ("T", &b"hello"[..], Some("A")));
    // A declared size that disagrees with the parts is corruption, not a record.
    let mut lying = RECORD.to_vec();
    lying[..4].copy_from_slice(&106i32.to_be_bytes());
    lying.extend_from_slice(&[0, 0]);
    assert!(decode_record(&lying, 0).is_err());
}

#[test]
fn batch_layout_matches_the_hand_written_bytes() {
    #[rustfmt::skip]
    let expected: &[u8] = &[
        0x00, 0x00, 0x00, 0x1F, // totalSize = 22 + 2 + 7 = 31
        0x00, 0x00, 0x00, 0x00, // magic (unused)
        0x00, 0x00, 0x00, 0x00, // bodyCRC (unused)
        0x80, 0x00, 0x00, 0x00, // flag Integer.MIN_VALUE
        0x00, 0x00, 0x00, 0x02, b'h', b'i', // bodyLen + body
        0x00, 0x07, b'K', b'E', b'Y', b'S', 0x01, b'k', 0x02, // propLen + properties
        0x00, 0x00, 0x00, 0x16, // second entry: totalSize 22, empty body, no properties
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00,
    ];
    let messages = [
        OutgoingMessage { flag: i32::MIN, body: b"hi", properties: OutgoingProperties::Pairs(&[("KEYS", "k")]) },
        OutgoingMessage { flag: 0, body: b"", properties: OutgoingProperties::Pairs(&[]) },
    ];
    assert_eq!(&encode_batch(&messages).unwrap()[..], expected);
    let entries: Vec<_> = decode_batch(expected).collect::<Result<_, _>>().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0].flag, entries[0].body, entries[0].properties.get("KEYS")),
        (i32::MIN, &b"hi"[..], Some("k"))
    );
}
