//! The client batch encoding (docs/protocol.md §3.1): the body of `SEND_BATCH_MESSAGE`.
//!
//! ```text
//! i32 totalSize (= 22 + bodyLen + propLen) | i32 magic (0) | i32 bodyCRC (0) | i32 flag
//! i32 bodyLen | body | i16 propLen | properties
//! ```
//!
//! [`encode_batch`] is the one-pass encoder of apache/rocketmq PR #10938: a sizing pass that
//! needs no serialization (a property's encoded size is its key and value lengths plus two
//! separators), one allocation of exactly the total size, then every message written straight
//! into it. No per-message buffer, no final concatenation.

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::properties::{MAX_PROPERTIES_LEN, PropertiesView, properties_len, write_properties};
use crate::reader::Reader;

/// Fixed bytes per batch entry besides body and properties.
pub const BATCH_ENTRY_OVERHEAD: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// The properties of an outgoing message: pairs to serialize, or an already serialized string.
#[derive(Debug, Clone, Copy)]
pub enum OutgoingProperties<'a> {
    Pairs(&'a [(&'a str, &'a str)]),
    Raw(&'a [u8]),
}

impl OutgoingProperties<'_> {
    /// Encoded length, validated against the format's limits.
    pub fn encoded_len(&self) -> Result<usize, EncodeError> {
        match self {
            Self::Pairs(pairs) => properties_len(pairs.iter().copied()),
            Self::Raw(raw) if raw.len() > MAX_PROPERTIES_LEN => Err(EncodeError::PropertiesTooLong(raw.len())),
            Self::Raw(raw) => Ok(raw.len()),
        }
    }

    /// The encoded length without validation: only for the writing pass, after
    /// [`encoded_len`](Self::encoded_len) has validated the same properties.
    fn len_prevalidated(&self) -> usize {
        match self {
            Self::Pairs(pairs) => pairs
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .fold(0usize, |n, (k, v)| n.saturating_add(k.len()).saturating_add(v.len()).saturating_add(2)),
            Self::Raw(raw) => raw.len(),
        }
    }

    /// Writes the properties; call [`encoded_len`](Self::encoded_len) first.
    pub fn write<B: BufMut + ?Sized>(&self, out: &mut B) {
        match self {
            Self::Pairs(pairs) => write_properties(pairs.iter().copied(), out),
            Self::Raw(raw) => out.put_slice(raw),
        }
    }
}

/// One message of a batch to send.
#[derive(Debug, Clone, Copy)]
pub struct OutgoingMessage<'a> {
    /// The user flag (`Message.flag`).
    pub flag: i32,
    pub body: &'a [u8],
    pub properties: OutgoingProperties<'a>,
}

/// Size of one entry; validates the entry.
fn entry_len(msg: &OutgoingMessage<'_>) -> Result<usize, EncodeError> {
    let props = msg.properties.encoded_len()?;
    let total = BATCH_ENTRY_OVERHEAD
        .checked_add(msg.body.len())
        .and_then(|n| n.checked_add(props))
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or(EncodeError::TooLarge { what: "batch entry", len: msg.body.len() })?;
    Ok(total)
}

/// The exact encoded size of `messages`.
pub fn batch_encoded_len(messages: &[OutgoingMessage<'_>]) -> Result<usize, EncodeError> {
    messages.iter().try_fold(0usize, |acc, msg| {
        let len = entry_len(msg)?;
        acc.checked_add(len).ok_or(EncodeError::TooLarge { what: "batch", len: acc })
    })
}

/// Writes one entry that [`batch_encoded_len`] has validated. Sizing it again costs only
/// additions: the byte scans of validation are not repeated.
fn write_entry<B: BufMut + ?Sized>(msg: &OutgoingMessage<'_>, out: &mut B) {
    let props = msg.properties.len_prevalidated();
    let total = BATCH_ENTRY_OVERHEAD.saturating_add(msg.body.len()).saturating_add(props);
    // Both sizes were checked to fit their fields by `entry_len`.
    out.put_i32(i32::try_from(total).unwrap_or(i32::MAX));
    out.put_i32(0); // magic: ignored by brokers
    out.put_i32(0); // body CRC: the broker computes its own
    out.put_i32(msg.flag);
    out.put_i32(i32::try_from(msg.body.len()).unwrap_or(i32::MAX));
    out.put_slice(msg.body);
    out.put_i16(i16::try_from(props).unwrap_or(i16::MAX));
    msg.properties.write(out);
}

/// Appends the batch encoding of `messages` to `out`, returning the bytes written.
pub fn encode_batch_into<B: BufMut + ?Sized>(
    messages: &[OutgoingMessage<'_>],
    out: &mut B,
) -> Result<usize, EncodeError> {
    // Validate everything before writing anything, so a failure leaves `out` untouched.
    let total = batch_encoded_len(messages)?;
    for msg in messages {
        write_entry(msg, out);
    }
    Ok(total)
}

/// Encodes `messages` into one buffer of exactly the encoded size: one allocation per batch.
pub fn encode_batch(messages: &[OutgoingMessage<'_>]) -> Result<Bytes, EncodeError> {
    let total = batch_encoded_len(messages)?;
    let mut buf = Vec::with_capacity(total);
    for msg in messages {
        write_entry(msg, &mut buf);
    }
    debug_assert_eq!(buf.len(), total);
    Ok(Bytes::from(buf))
}

/// One decoded entry of a batch, borrowing body and properties from the input.
#[derive(Debug, Clone, Copy)]
pub struct BatchEntry<'a> {
    /// Offset of the entry inside the batch body.
    pub offset: usize,
    /// The entry's total size (its `totalSize` field).
    pub len: usize,
    pub flag: i32,
    pub body: &'a [u8],
    pub properties: PropertiesView<'a>,
}

/// Iterates the entries of a batch body. Stops after the first error.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    input: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Decodes a batch body lazily; see [`BatchIter`].
#[must_use]
pub fn decode_batch(input: &[u8]) -> BatchIter<'_> {
    BatchIter { input, pos: 0, failed: false }
}

fn decode_entry(input: &[u8], base: usize) -> Result<BatchEntry<'_>, DecodeError> {
    let mut r = Reader::with_base(input, base);
    let at = r.offset();
    let total = r.len_i32("batch entry totalSize")?;
    if total < BATCH_ENTRY_OVERHEAD || total > input.len() {
        return Err(DecodeError::new(
            at,
            DecodeErrorKind::BadLength { field: "batch entry totalSize", value: total as i64 },
        ));
    }
    let entry = input.get(..total).unwrap_or_default();
    let mut r = Reader::with_base(entry, base);
    r.bytes(12, "batch entry header")?; // totalSize, magic, bodyCRC
    let flag = r.i32("flag")?;
    let body_at = r.offset();
    let body_len = r.len_i32("bodyLen")?;
    let body = r.bytes(body_len, "body")?;
    let props_at = r.offset();
    let props_len = r.len_i16("propLen")?;
    let props = r.bytes(props_len, "properties")?;
    if r.remaining() != 0 {
        return Err(DecodeError::new(
            body_at,
            DecodeErrorKind::BadLength { field: "batch entry totalSize", value: total as i64 },
        ));
    }
    let properties = PropertiesView::parse(props).map_err(|e| e.rebased(props_at.saturating_add(2)))?;
    Ok(BatchEntry { offset: base, len: total, flag, body, properties })
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchEntry<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.input.get(self.pos..).filter(|r| !r.is_empty())?;
        match decode_entry(rest, self.pos) {
            Ok(entry) => {
                self.pos = self.pos.saturating_add(entry.len);
                Some(Ok(entry))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for BatchIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_allocates_exactly() {
        let props = [("UNIQ_KEY", "ABC"), ("TAGS", "t")];
        let msgs = [
            OutgoingMessage { flag: 1, body: b"hello", properties: OutgoingProperties::Pairs(&props) },
            OutgoingMessage { flag: -1, body: b"", properties: OutgoingProperties::Raw(b"") },
        ];
        let bytes = encode_batch(&msgs).unwrap();
        assert_eq!(bytes.len(), batch_encoded_len(&msgs).unwrap());
        let entries: Vec<_> = decode_batch(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].body, b"hello");
        assert_eq!(entries[0].properties.get("TAGS"), Some("t"));
        assert_eq!(entries[1].flag, -1);
        assert_eq!(entries[1].offset, entries[0].len);
    }

    #[test]
    fn a_lying_entry_size_is_an_error_with_offset() {
        let msgs = [OutgoingMessage { flag: 0, body: b"abc", properties: OutgoingProperties::Raw(b"") }];
        let mut bytes = encode_batch(&msgs).unwrap().to_vec();
        let good = bytes.clone();
        bytes.extend_from_slice(&good);
        // Second entry claims a body longer than the entry.
        bytes[good.len() + 16..good.len() + 20].copy_from_slice(&100i32.to_be_bytes());
        let results: Vec<_> = decode_batch(&bytes).collect();
        assert_eq!(results.len(), 2);
        assert!(results[0].is_ok());
        assert_eq!(results[1].as_ref().unwrap_err().offset, good.len() + 20);
    }
}
