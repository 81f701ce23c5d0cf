//! A stored record as the SDKs receive it: the protobuf [`Message`] with its system properties
//! filled from the record and its properties, as Apache's proxy fills them. The body is a
//! slice of the mapped commit log (no copy until the encoder writes the frame).

use std::collections::HashMap;

use bytes::Bytes;
use silo_store::MessageRef;
use silo_wire::properties::keys;
use silo_wire::record::{StoredRecord, sys_flag};

use crate::proto::{Digest, DigestType, Encoding, Message, MessageType, Resource, SystemProperties};

/// Properties the broker and the SDKs use themselves: they travel as system properties (or
/// not at all), never as user properties.
const SYSTEM_KEYS: &[&str] = &[
    keys::TAGS,
    keys::KEYS,
    keys::UNIQ_KEY,
    keys::WAIT,
    keys::DELAY,
    keys::TRAN_MSG,
    keys::PGROUP,
    keys::RETRY_TOPIC,
    keys::REAL_TOPIC,
    keys::REAL_QID,
    keys::RECONSUME_TIME,
    keys::MAX_RECONSUME_TIMES,
    keys::ORIGIN_MESSAGE_ID,
    keys::FIRST_POP_TIME,
    keys::MIN_OFFSET,
    keys::MAX_OFFSET,
    keys::CLUSTER,
    keys::MSG_REGION,
    keys::TRACE_ON,
    keys::POP_CK,
    keys::SHARDING_KEY,
    keys::CHECK_IMMUNITY_TIME_IN_SECONDS,
    keys::TRACE_CONTEXT,
    keys::BORN_HOST,
    keys::BORN_TIMESTAMP,
    keys::TIMER_DELIVER_MS,
    keys::TIMER_DELAY_SEC,
    keys::TIMER_DELAY_MS,
    keys::TIMER_OUT_MS,
    keys::TIMER_ENQUEUE_MS,
    keys::TIMER_DEQUEUE_MS,
    keys::TIMER_ROLL_TIMES,
    keys::TIMER_DEL_UNIQKEY,
    keys::INNER_MULTI_DISPATCH,
    keys::INNER_MULTI_QUEUE_OFFSET,
    "CHECK_TIMES",
    "TRANSACTION_CHECK_TIMES",
    "__transactionId__",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
];

/// Whether `key` is one of the properties the broker and the SDKs use themselves (a producer
/// may not set it as a user property).
pub fn is_system_key(key: &str) -> bool {
    SYSTEM_KEYS.contains(&key)
}

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

/// How the body's digest is computed. Every SDK checks it, and they agree only on MD5: a CRC32
/// is formatted differently by each (the Java and Go SDKs compare unpadded upper-case hex,
/// Python zero-pads it, Node.js compares decimal). MD5 costs a few microseconds per KiB, so the
/// clients known to read CRC32 the same way get the cheaper one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestKind {
    Md5,
    Crc32,
}

impl DigestKind {
    /// The digest for a client that names its language so (`x-mq-language`).
    pub fn for_language(language: &str) -> Self {
        if language.eq_ignore_ascii_case("JAVA")
            || language.eq_ignore_ascii_case("GOLANG")
            || language.eq_ignore_ascii_case("GO")
        {
            Self::Crc32
        } else {
            Self::Md5
        }
    }

    fn digest(self, body: &[u8]) -> Digest {
        use std::fmt::Write as _;
        match self {
            Self::Crc32 => {
                Digest { r#type: DigestType::Crc32 as i32, checksum: format!("{:X}", crc32fast::hash(body)) }
            }
            Self::Md5 => {
                use md5::Digest as _;
                let sum = md5::Md5::digest(body);
                let mut hex = String::with_capacity(32);
                for b in sum {
                    let _ = write!(hex, "{b:02X}");
                }
                Digest { r#type: DigestType::Md5 as i32, checksum: hex }
            }
        }
    }
}

/// What is known about the delivery besides the record.
#[derive(Debug)]
pub struct Delivery<'a> {
    /// The topic the consumer asked for (a retried message is stored in the retry topic).
    pub topic: &'a Resource,
    pub receipt_handle: Option<String>,
    /// Times delivered before (the record's reconsume count, or a FIFO queue's redeliveries).
    pub reconsumed: i32,
    pub digest: DigestKind,
    /// The most a compressed body is inflated to.
    pub max_inflated: u64,
}

/// A stored message as a command the broker pushes down a Telemetry stream carries it (a
/// transaction check, a message to verify): no receipt handle, an MD5 body digest, delivered
/// `reconsumed` times before, as the proxy builds them.
pub fn pushed_message(
    record: &StoredRecord<'_>,
    body: Bytes,
    topic: &str,
    reconsumed: i32,
    max_inflated: u64,
) -> Message {
    let topic = Resource { resource_namespace: String::new(), name: topic.to_owned() };
    let d = Delivery { topic: &topic, receipt_handle: None, reconsumed, digest: DigestKind::Md5, max_inflated };
    message(record, body, d)
}

/// The body of `record`, read from `message`, as a slice of the same mapping.
pub fn body_of(message: &MessageRef, record: &StoredRecord<'_>) -> Bytes {
    let start = (record.body.as_ptr() as usize).saturating_sub(message.as_ptr() as usize);
    let end = start.saturating_add(record.body.len()).min(message.len());
    Bytes::from_owner(message.clone()).slice(start.min(end)..end)
}

fn message_type(record: &StoredRecord<'_>) -> MessageType {
    let p = &record.properties;
    if p.get(keys::TRAN_MSG) == Some("true") {
        MessageType::Transaction
    } else if p.get(keys::DELAY).is_some()
        || p.get(keys::TIMER_DELIVER_MS).is_some()
        || p.get(keys::TIMER_DELAY_SEC).is_some()
    {
        MessageType::Delay
    } else if p.get(keys::SHARDING_KEY).is_some() {
        MessageType::Fifo
    } else {
        MessageType::Normal
    }
}

/// The GZIP stream's first two bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The body as a gRPC client is to get it, and its encoding. A body a remoting producer stored
/// compressed is zlib (RocketMQ's compression type 0), which the SDKs cannot read: it is
/// inflated, as Apache's proxy inflates it. One a gRPC producer sent GZIP-encoded goes back as it
/// came. A body that does not inflate, or would inflate past `max_inflated` (the broker's
/// `maxMessageSize`: no producer sends a larger one), goes as stored.
pub fn delivered_body(record: &StoredRecord<'_>, body: Bytes, max_inflated: u64) -> (Bytes, Encoding) {
    const ZLIB: i32 = 0;
    if record.meta.sys_flag & sys_flag::COMPRESSED == 0 {
        return (body, Encoding::Identity);
    }
    if body.starts_with(&GZIP_MAGIC) {
        return (body, Encoding::Gzip);
    }
    if (record.meta.sys_flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8 != ZLIB {
        return (body, Encoding::Identity);
    }
    use std::io::Read as _;
    let mut inflated = Vec::new();
    let read = flate2::read::ZlibDecoder::new(&body[..]).take(max_inflated + 1).read_to_end(&mut inflated);
    match read {
        Ok(n) if (n as u64) <= max_inflated => (Bytes::from(inflated), Encoding::Identity),
        _ => {
            tracing::debug!(offset = record.meta.physical_offset, "a compressed body does not inflate; sent as stored");
            (body, Encoding::Identity)
        }
    }
}

/// `record` as the SDKs receive it, with `body` (a slice of wherever the record is).
pub fn message(record: &StoredRecord<'_>, body: Bytes, d: Delivery<'_>) -> Message {
    let (body, encoding) = delivered_body(record, body, d.max_inflated);
    let p = &record.properties;
    let user_properties: HashMap<String, String> = p
        .iter()
        .filter(|(k, _)| !SYSTEM_KEYS.contains(k) && !k.starts_with(keys::TRANSIENT_PREFIX))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let message_id = p.get(keys::UNIQ_KEY).map(str::to_owned).unwrap_or_else(|| {
        silo_wire::msgid::offset_msg_id(record.meta.store_host, record.meta.physical_offset).to_string()
    });
    let born_host = p.get(keys::BORN_HOST).map(str::to_owned).unwrap_or_else(|| record.meta.born_host.to_string());
    let delivery_timestamp = p.get(keys::TIMER_DELIVER_MS).and_then(|v| v.parse::<i64>().ok()).map(timestamp);
    let system = SystemProperties {
        tag: p.get(keys::TAGS).map(str::to_owned),
        keys: p
            .get(keys::KEYS)
            .map(|k| k.split(' ').filter(|s| !s.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default(),
        message_id,
        body_digest: Some(d.digest.digest(&body)),
        body_encoding: encoding as i32,
        message_type: message_type(record) as i32,
        born_timestamp: Some(timestamp(record.meta.born_timestamp)),
        born_host,
        store_timestamp: Some(timestamp(record.meta.store_timestamp)),
        store_host: record.meta.store_host.to_string(),
        delivery_timestamp,
        receipt_handle: d.receipt_handle,
        queue_id: record.meta.queue_id,
        queue_offset: Some(record.meta.queue_offset),
        invisible_duration: None,
        delivery_attempt: Some(d.reconsumed.saturating_add(1)),
        message_group: p.get(keys::SHARDING_KEY).map(str::to_owned),
        trace_context: p.get(keys::TRACE_CONTEXT).map(str::to_owned),
        orphaned_transaction_recovery_duration: None,
        dead_letter_queue: None,
        lite_topic: None,
        priority: None,
    };
    Message { topic: Some(d.topic.clone()), user_properties, system_properties: Some(system), body }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write as _;

    use super::*;

    fn record_with(sys_flag: i32) -> silo_wire::record::RecordMeta {
        silo_wire::record::RecordMeta {
            body_crc: 0,
            queue_id: 0,
            flag: 0,
            queue_offset: 0,
            physical_offset: 0,
            sys_flag,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            store_timestamp: 0,
            store_host: "127.0.0.1:2".parse().unwrap(),
            reconsume_times: 0,
            prepared_tx_offset: 0,
        }
    }

    #[test]
    fn a_zlib_body_is_inflated_and_a_gzip_one_goes_as_it_came() {
        let plain = b"hello hello hello hello".repeat(20);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&plain).unwrap();
        let zlib = Bytes::from(z.finish().unwrap());
        let props = silo_wire::PropertiesView::from_valid("");
        let rec = |meta| StoredRecord {
            version: silo_wire::record::MessageVersion::V1,
            total_size: 0,
            meta,
            body: b"",
            topic: "t",
            properties: props,
        };
        let (body, enc) = delivered_body(&rec(record_with(sys_flag::COMPRESSED)), zlib.clone(), 1 << 20);
        // Past the cap it goes as stored.
        assert_eq!(delivered_body(&rec(record_with(sys_flag::COMPRESSED)), zlib.clone(), 100).0, zlib);
        assert_eq!((&body[..], enc), (&plain[..], Encoding::Identity));
        let gzip = Bytes::from_static(&[0x1f, 0x8b, 8, 0, 0, 0]);
        assert_eq!(delivered_body(&rec(record_with(sys_flag::COMPRESSED)), gzip.clone(), 1 << 20).1, Encoding::Gzip);
        let broken = Bytes::from_static(b"not zlib at all");
        assert_eq!(
            delivered_body(&rec(record_with(sys_flag::COMPRESSED)), broken.clone(), 1 << 20),
            (broken, Encoding::Identity)
        );
        assert_eq!(delivered_body(&rec(record_with(0)), gzip.clone(), 1 << 20), (gzip, Encoding::Identity));
    }
}
