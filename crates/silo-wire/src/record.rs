//! The stored message record (docs/protocol.md §3.2): the unit of the commit log, of pull response bodies
//! and of `VIEW_MESSAGE_BY_ID` bodies. Decoding borrows everything variable-length from the
//! input (a mapped segment, a socket buffer); encoding writes straight into a `BufMut`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::BufMut;

use crate::batch::OutgoingProperties;
use crate::checksum::body_crc;
use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::properties::PropertiesView;
use crate::reader::Reader;

/// Magic code of the v1 record (1-byte topic length).
pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic code of the v2 record (2-byte topic length), used only for topics over 127 bytes.
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
/// Magic code of the blank record that pads the end of a commit-log segment.
pub const MAGIC_BLANK: i32 = 0xCBD4_3194_u32 as i32;
/// Size of the blank marker: `i32 remaining bytes, i32 MAGIC_BLANK`.
pub const BLANK_LEN: usize = 8;
/// Longest topic that the v1 record (a signed 1-byte length) carries.
pub const MAX_V1_TOPIC_LEN: usize = i8::MAX as usize;

/// sysFlag bits (docs/protocol.md §3.3).
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_MASK: i32 = 0xC;
    pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
    pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
    pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
    pub const BORNHOST_V6: i32 = 0x10;
    pub const STOREHOST_V6: i32 = 0x20;
    pub const NEED_UNWRAP: i32 = 0x40;
    pub const INNER_BATCH: i32 = 0x80;
    pub const COMPRESSION_TYPE_MASK: i32 = 0x700;
}

/// Fixed offsets of the fields that the store patches into an encoded record inside its
/// critical section.
pub mod offsets {
    pub const TOTAL_SIZE: usize = 0;
    pub const MAGIC: usize = 4;
    pub const BODY_CRC: usize = 8;
    pub const QUEUE_ID: usize = 12;
    pub const FLAG: usize = 16;
    pub const QUEUE_OFFSET: usize = 20;
    pub const PHYSICAL_OFFSET: usize = 28;
    pub const SYS_FLAG: usize = 36;
    pub const BORN_TIMESTAMP: usize = 40;
    pub const BORN_HOST: usize = 48;
}

/// Offset of the store timestamp, which follows the born host (8 or 20 bytes).
#[must_use]
#[allow(clippy::arithmetic_side_effects)] // constant operands
pub const fn store_timestamp_offset(sys_flag: i32) -> usize {
    if sys_flag & sys_flag::BORNHOST_V6 != 0 { offsets::BORN_HOST + 20 } else { offsets::BORN_HOST + 8 }
}

/// The body length of an encoded record (`None` if `record` is too short to hold it): what
/// delivery counters add up, read without decoding the record.
#[must_use]
pub fn body_len(record: &[u8]) -> Option<usize> {
    let be_i32 = |at: usize| -> Option<i32> {
        let b = record.get(at..at.checked_add(4)?)?;
        Some(i32::from_be_bytes([*b.first()?, *b.get(1)?, *b.get(2)?, *b.get(3)?]))
    };
    let sys_flag = be_i32(offsets::SYS_FLAG)?;
    let store_host = store_timestamp_offset(sys_flag).checked_add(8)?;
    let at = store_host.checked_add(host_len(sys_flag & sys_flag::STOREHOST_V6 != 0))?.checked_add(4 + 8)?;
    usize::try_from(be_i32(at)?).ok()
}

const fn host_len(v6: bool) -> usize {
    if v6 { 20 } else { 8 }
}

/// Which record version a magic code denotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageVersion {
    V1,
    V2,
}

impl MessageVersion {
    /// The version Java (5.1+, `autoMessageVersionOnTopicLen`) writes for a topic of this length.
    #[must_use]
    pub fn for_topic_len(len: usize) -> Self {
        if len > MAX_V1_TOPIC_LEN { Self::V2 } else { Self::V1 }
    }

    #[must_use]
    pub fn magic(self) -> i32 {
        match self {
            Self::V1 => MAGIC_V1,
            Self::V2 => MAGIC_V2,
        }
    }

    fn topic_len_field(self) -> usize {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}

/// The fixed-size fields of a stored record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta {
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_tx_offset: i64,
}

/// A decoded record, borrowing body, topic and properties from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredRecord<'a> {
    pub version: MessageVersion,
    /// The record's total size (its first field).
    pub total_size: usize,
    pub meta: RecordMeta,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: PropertiesView<'a>,
}

impl StoredRecord<'_> {
    /// Whether the stored body CRC matches the body.
    #[must_use]
    pub fn body_crc_matches(&self) -> bool {
        body_crc(self.body) == self.meta.body_crc
    }

    /// The tags code for the consume queue.
    #[must_use]
    pub fn tags_code(&self) -> i64 {
        crate::checksum::tags_code(self.properties.get(crate::properties::keys::TAGS))
    }
}

/// What a decode found at the start of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    Record(StoredRecord<'a>),
    /// The blank marker that ends a segment; `remaining` is the number of bytes it pads,
    /// including itself.
    Blank {
        remaining: usize,
    },
}

fn sys_flag_for_hosts(meta: &RecordMeta) -> i32 {
    let mut flag = meta.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
    if meta.born_host.is_ipv6() {
        flag |= sys_flag::BORNHOST_V6;
    }
    if meta.store_host.is_ipv6() {
        flag |= sys_flag::STOREHOST_V6;
    }
    flag
}

/// Sizes of a record to be encoded; computed once, then used to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLayout {
    pub total: usize,
    pub version: MessageVersion,
    pub props_len: usize,
}

/// Validates and sizes a record. `props_len` comes from [`OutgoingProperties::encoded_len`].
pub fn record_layout(
    born_v6: bool,
    store_v6: bool,
    topic_len: usize,
    body_len: usize,
    props_len: usize,
) -> Result<RecordLayout, EncodeError> {
    if topic_len > i16::MAX as usize {
        return Err(EncodeError::TopicTooLong(topic_len));
    }
    let version = MessageVersion::for_topic_len(topic_len);
    let fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 4 + 8 + 4 + 2;
    let total = [host_len(born_v6), host_len(store_v6), body_len, version.topic_len_field(), topic_len, props_len]
        .into_iter()
        .try_fold(fixed, usize::checked_add)
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or(EncodeError::TooLarge { what: "record", len: body_len })?;
    Ok(RecordLayout { total, version, props_len })
}

fn put_host<B: BufMut + ?Sized>(out: &mut B, host: SocketAddr) {
    match host.ip() {
        IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(host.port()));
}

/// Encodes one record into `out`, returning its size. The v6 host bits of `sys_flag` are set
/// from the address families; the version is chosen from the topic length as Java does.
pub fn encode_record<B: BufMut + ?Sized>(
    meta: &RecordMeta,
    topic: &str,
    body: &[u8],
    properties: OutgoingProperties<'_>,
    out: &mut B,
) -> Result<usize, EncodeError> {
    let props_len = properties.encoded_len()?;
    let layout =
        record_layout(meta.born_host.is_ipv6(), meta.store_host.is_ipv6(), topic.len(), body.len(), props_len)?;
    write_record(meta, topic, body, properties, &layout, out);
    Ok(layout.total)
}

/// Writes a record whose layout was computed by [`record_layout`] for these same inputs.
pub fn write_record<B: BufMut + ?Sized>(
    meta: &RecordMeta,
    topic: &str,
    body: &[u8],
    properties: OutgoingProperties<'_>,
    layout: &RecordLayout,
    out: &mut B,
) {
    // Every length below was checked by `record_layout` to fit its field.
    out.put_i32(i32::try_from(layout.total).unwrap_or(i32::MAX));
    out.put_i32(layout.version.magic());
    out.put_i32(meta.body_crc);
    out.put_i32(meta.queue_id);
    out.put_i32(meta.flag);
    out.put_i64(meta.queue_offset);
    out.put_i64(meta.physical_offset);
    out.put_i32(sys_flag_for_hosts(meta));
    out.put_i64(meta.born_timestamp);
    put_host(out, meta.born_host);
    out.put_i64(meta.store_timestamp);
    put_host(out, meta.store_host);
    out.put_i32(meta.reconsume_times);
    out.put_i64(meta.prepared_tx_offset);
    out.put_i32(i32::try_from(body.len()).unwrap_or(i32::MAX));
    out.put_slice(body);
    match layout.version {
        MessageVersion::V1 => out.put_u8(u8::try_from(topic.len()).unwrap_or(u8::MAX)),
        MessageVersion::V2 => out.put_i16(i16::try_from(topic.len()).unwrap_or(i16::MAX)),
    }
    out.put_slice(topic.as_bytes());
    out.put_i16(i16::try_from(layout.props_len).unwrap_or(i16::MAX));
    properties.write(out);
}

/// Writes the 8-byte blank marker that pads the last `remaining` bytes of a segment.
pub fn encode_blank<B: BufMut + ?Sized>(remaining: usize, out: &mut B) {
    out.put_i32(i32::try_from(remaining).unwrap_or(i32::MAX));
    out.put_i32(MAGIC_BLANK);
}

fn read_host(r: &mut Reader<'_>, v6: bool, field: &'static str) -> Result<SocketAddr, DecodeError> {
    let ip = if v6 {
        IpAddr::V6(Ipv6Addr::from(r.array::<16>(field)?))
    } else {
        IpAddr::V4(Ipv4Addr::from(r.array::<4>(field)?))
    };
    let at = r.offset();
    let port = r.i32(field)?;
    let port = u16::try_from(port)
        .map_err(|_| DecodeError::new(at, DecodeErrorKind::BadLength { field: "port", value: i64::from(port) }))?;
    Ok(SocketAddr::new(ip, port))
}

/// Decodes the record (or blank marker) at the start of `input`. `base` is added to offsets in
/// errors. The record must lie entirely within `input` and its parts must add up to its size.
pub fn decode_record(input: &[u8], base: usize) -> Result<Decoded<'_>, DecodeError> {
    let mut r = Reader::with_base(input, base);
    let size_at = r.offset();
    let total = r.i32("totalSize")?;
    let magic_at = r.offset();
    let magic = r.i32("magic")?;
    let version = match magic {
        MAGIC_V1 => MessageVersion::V1,
        MAGIC_V2 => MessageVersion::V2,
        MAGIC_BLANK => {
            let remaining = usize::try_from(total).ok().filter(|n| *n >= BLANK_LEN).ok_or_else(|| {
                DecodeError::new(size_at, DecodeErrorKind::BadLength { field: "blank size", value: i64::from(total) })
            })?;
            return Ok(Decoded::Blank { remaining });
        }
        other => return Err(DecodeError::new(magic_at, DecodeErrorKind::BadMagic(other))),
    };
    let total = usize::try_from(total).ok().filter(|n| *n <= input.len() && *n >= 91).ok_or_else(|| {
        DecodeError::new(size_at, DecodeErrorKind::BadLength { field: "totalSize", value: i64::from(total) })
    })?;
    // From here on, read only inside the record's own bytes.
    let mut r = Reader::with_base(input.get(..total).unwrap_or_default(), base);
    r.bytes(8, "totalSize and magic")?;
    let body_crc = r.i32("bodyCRC")?;
    let queue_id = r.i32("queueId")?;
    let flag = r.i32("flag")?;
    let queue_offset = r.i64("queueOffset")?;
    let physical_offset = r.i64("physicalOffset")?;
    let sys_flag = r.i32("sysFlag")?;
    let born_timestamp = r.i64("bornTimestamp")?;
    let born_host = read_host(&mut r, sys_flag & sys_flag::BORNHOST_V6 != 0, "bornHost")?;
    let store_timestamp = r.i64("storeTimestamp")?;
    let store_host = read_host(&mut r, sys_flag & sys_flag::STOREHOST_V6 != 0, "storeHost")?;
    let reconsume_times = r.i32("reconsumeTimes")?;
    let prepared_tx_offset = r.i64("preparedTransactionOffset")?;
    let body_len = r.len_i32("bodyLen")?;
    let body = r.bytes(body_len, "body")?;
    let topic_len = match version {
        MessageVersion::V1 => {
            let at = r.offset();
            let len = r.u8("topicLen")?;
            // Java reads this byte as signed; a "negative" length cannot come from a Java writer.
            if len > i8::MAX as u8 {
                return Err(DecodeError::new(
                    at,
                    DecodeErrorKind::BadLength { field: "topicLen", value: i64::from(len) },
                ));
            }
            usize::from(len)
        }
        MessageVersion::V2 => r.len_i16("topicLen")?,
    };
    let topic = r.str(topic_len, "topic")?;
    let props_len = r.len_i16("propertiesLength")?;
    let props_at = r.offset();
    let props = r.bytes(props_len, "properties")?;
    if r.remaining() != 0 {
        return Err(DecodeError::new(
            size_at,
            DecodeErrorKind::BadLength { field: "totalSize (parts add up to less)", value: total as i64 },
        ));
    }
    let properties = PropertiesView::parse(props).map_err(|e| e.rebased(props_at))?;
    Ok(Decoded::Record(StoredRecord {
        version,
        total_size: total,
        meta: RecordMeta {
            body_crc,
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_tx_offset,
        },
        body,
        topic,
        properties,
    }))
}

/// Walks a buffer of concatenated records (a pull body, a region of a segment) and stops
/// cleanly at the end, at a blank marker, or at the first record that does not decode; the
/// reason for an early stop is kept in [`stop`](Self::stop).
#[derive(Debug, Clone)]
pub struct RecordWalker<'a> {
    input: &'a [u8],
    pos: usize,
    stop: Option<WalkStop>,
}

/// Why a [`RecordWalker`] stopped before the end of its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalkStop {
    /// A blank marker at this offset: the rest of the segment is padding.
    Blank { offset: usize },
    /// A record that does not decode.
    Invalid(DecodeError),
}

impl<'a> RecordWalker<'a> {
    #[must_use]
    pub fn new(input: &'a [u8]) -> Self {
        Self { input, pos: 0, stop: None }
    }

    /// Offset just past the last record returned.
    #[must_use]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Why the walk ended early, if it did (`None` after a clean end of input).
    #[must_use]
    pub fn stop(&self) -> Option<&WalkStop> {
        self.stop.as_ref()
    }
}

impl<'a> Iterator for RecordWalker<'a> {
    type Item = StoredRecord<'a>;

    fn next(&mut self) -> Option<StoredRecord<'a>> {
        if self.stop.is_some() {
            return None;
        }
        let rest = self.input.get(self.pos..).filter(|r| !r.is_empty())?;
        match decode_record(rest, self.pos) {
            Ok(Decoded::Record(record)) => {
                self.pos = self.pos.saturating_add(record.total_size);
                Some(record)
            }
            Ok(Decoded::Blank { .. }) => {
                self.stop = Some(WalkStop::Blank { offset: self.pos });
                None
            }
            Err(e) => {
                self.stop = Some(WalkStop::Invalid(e));
                None
            }
        }
    }
}

impl std::iter::FusedIterator for RecordWalker<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> RecordMeta {
        RecordMeta {
            body_crc: body_crc(b"hello"),
            queue_id: 3,
            flag: 7,
            queue_offset: 42,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: "10.0.0.5:50000".parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            store_host: "[2001:db8::7]:10911".parse().unwrap(),
            reconsume_times: 0,
            prepared_tx_offset: 0,
        }
    }

    #[test]
    fn round_trip_with_mixed_hosts() {
        let mut out = Vec::new();
        let props = [("TAGS", "TagA")];
        let n = encode_record(&meta(), "T", b"hello", OutgoingProperties::Pairs(&props), &mut out).unwrap();
        assert_eq!(n, out.len());
        let Decoded::Record(rec) = decode_record(&out, 0).unwrap() else { panic!("blank") };
        assert_eq!(rec.meta.sys_flag, sys_flag::STOREHOST_V6);
        assert_eq!(rec.meta.store_host, meta().store_host);
        assert_eq!(rec.body, b"hello");
        assert_eq!(rec.tags_code(), 2_598_919);
        assert!(rec.body_crc_matches());
        assert_eq!(store_timestamp_offset(rec.meta.sys_flag), 56);
        assert_eq!(body_len(&out), Some(5));
        assert_eq!(body_len(&out[..90]), None);
    }

    #[test]
    fn walker_stops_at_garbage_and_reports_where() {
        let mut out = Vec::new();
        for _ in 0..3 {
            encode_record(&meta(), "T", b"hello", OutgoingProperties::Raw(b""), &mut out).unwrap();
        }
        let one = out.len() / 3;
        out.truncate(out.len() - 1);
        let mut walker = RecordWalker::new(&out);
        assert_eq!(walker.by_ref().count(), 2);
        assert_eq!(walker.position(), 2 * one);
        assert!(matches!(walker.stop(), Some(WalkStop::Invalid(e)) if e.offset == 2 * one));
    }

    #[test]
    fn long_topics_use_v2() {
        let topic = "t".repeat(200);
        let mut out = Vec::new();
        encode_record(&meta(), &topic, b"", OutgoingProperties::Raw(b""), &mut out).unwrap();
        let Decoded::Record(rec) = decode_record(&out, 0).unwrap() else { panic!("blank") };
        assert_eq!(rec.version, MessageVersion::V2);
        assert_eq!(rec.topic, topic);
    }
}
