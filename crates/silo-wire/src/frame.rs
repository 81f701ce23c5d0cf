//! Remoting frames (docs/protocol.md §1.2): `i32 frameLength | i32 headerWord | header | body`.
//!
//! [`peek_frame`] is the sans-I/O core: given the bytes read so far it says "need more" or where
//! the header and body of the first frame lie, after checking the declared length against the
//! limit, before anything is allocated. [`FrameDecoder`] applies it to a `BytesMut` read buffer
//! and hands out the body as a `Bytes` slice of that buffer: the body is never copied.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::header::{RemotingHeader, SerializeType};

/// Java's default frame limit (`com.rocketmq.remoting.frameMaxLength`).
pub const DEFAULT_MAX_FRAME_LEN: usize = 16 * 1024 * 1024;
/// The length prefix and the header word.
pub const FRAME_PREFIX_LEN: usize = 8;

/// Where the parts of a complete frame lie in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameLayout {
    pub serialize: SerializeType,
    /// Bytes the frame occupies, including its length prefix.
    pub total_len: usize,
    pub header: Range<usize>,
    pub body: Range<usize>,
}

/// Result of looking at the start of a read buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// At least this many bytes in total are needed before the frame can be decoded.
    NeedMore(usize),
    Complete(FrameLayout),
}

/// Inspects the first frame in `buf` without copying or allocating.
pub fn peek_frame(buf: &[u8], max_frame_len: usize) -> Result<Peek, DecodeError> {
    let Some(prefix) = buf.first_chunk::<FRAME_PREFIX_LEN>() else {
        return Ok(Peek::NeedMore(FRAME_PREFIX_LEN));
    };
    let (len_bytes, word_bytes) = prefix.split_at(4);
    let declared = i32::from_be_bytes(len_bytes.try_into().unwrap_or_default());
    let frame_len = usize::try_from(declared)
        .ok()
        .filter(|n| *n >= 4)
        .ok_or(DecodeError::new(0, DecodeErrorKind::BadLength { field: "frameLength", value: i64::from(declared) }))?;
    if frame_len > max_frame_len {
        return Err(DecodeError::new(0, DecodeErrorKind::FrameTooLarge { length: frame_len, max: max_frame_len }));
    }
    let word = u32::from_be_bytes(word_bytes.try_into().unwrap_or_default());
    let serialize_code = u8::try_from(word >> 24).unwrap_or(u8::MAX);
    let serialize = SerializeType::from_code(serialize_code)
        .ok_or(DecodeError::new(4, DecodeErrorKind::UnknownSerializeType(serialize_code)))?;
    let header_len = usize::try_from(word & 0x00FF_FFFF).unwrap_or(usize::MAX);
    // frame_len >= 4 was checked above.
    let after_word = frame_len.saturating_sub(4);
    if header_len > after_word {
        return Err(DecodeError::new(
            4,
            DecodeErrorKind::BadLength { field: "headerLength", value: header_len as i64 },
        ));
    }
    let total_len = frame_len.saturating_add(4);
    if buf.len() < total_len {
        return Ok(Peek::NeedMore(total_len));
    }
    let header_end = FRAME_PREFIX_LEN.saturating_add(header_len);
    Ok(Peek::Complete(FrameLayout {
        serialize,
        total_len,
        header: FRAME_PREFIX_LEN..header_end,
        body: header_end..total_len,
    }))
}

/// A decoded frame whose body shares the read buffer's memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub serialize: SerializeType,
    pub header: RemotingHeader,
    pub body: Bytes,
}

/// A decoded frame borrowing its body from a byte slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef<'a> {
    pub serialize: SerializeType,
    pub header: RemotingHeader,
    pub body: &'a [u8],
    /// Bytes consumed from the input.
    pub total_len: usize,
}

/// Decodes the first frame of `buf`, if complete.
pub fn decode_frame(buf: &[u8], max_frame_len: usize) -> Result<Option<FrameRef<'_>>, DecodeError> {
    let layout = match peek_frame(buf, max_frame_len)? {
        Peek::NeedMore(_) => return Ok(None),
        Peek::Complete(layout) => layout,
    };
    let header_bytes = buf.get(layout.header.clone()).unwrap_or_default();
    let header = RemotingHeader::decode(layout.serialize, header_bytes).map_err(|e| e.rebased(layout.header.start))?;
    let body = buf.get(layout.body.clone()).unwrap_or_default();
    Ok(Some(FrameRef { serialize: layout.serialize, header, body, total_len: layout.total_len }))
}

/// Incremental decoder over a read buffer.
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame_len: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self { max_frame_len: DEFAULT_MAX_FRAME_LEN }
    }
}

impl FrameDecoder {
    #[must_use]
    pub fn new(max_frame_len: usize) -> Self {
        Self { max_frame_len }
    }

    /// Takes the first complete frame off `buf`. `Ok(None)` means more bytes are needed and
    /// `buf` is untouched. On error the stream cannot be resynchronised: close the connection.
    ///
    /// Neither the body nor the header's long texts are copied: they share `buf`'s memory.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Frame>, DecodeError> {
        let layout = match peek_frame(buf, self.max_frame_len)? {
            Peek::NeedMore(_) => return Ok(None),
            Peek::Complete(layout) => layout,
        };
        // The frame leaves the buffer first, so that the header's long texts can share it.
        let frame = buf.split_to(layout.total_len).freeze();
        let header = RemotingHeader::decode_shared(layout.serialize, &frame.slice(layout.header.clone()))
            .map_err(|e| e.rebased(layout.header.start))?;
        Ok(Some(Frame { serialize: layout.serialize, header, body: frame.slice(layout.body) }))
    }
}

/// Writes the length prefix, header word and header of a frame whose body of `body_len` bytes
/// the caller writes next (or sends from elsewhere with a vectored write).
pub fn encode_frame_head<B: BufMut + ?Sized>(
    header: &RemotingHeader,
    serialize: SerializeType,
    body_len: usize,
    out: &mut B,
) -> Result<usize, EncodeError> {
    let header_len = header.encoded_len(serialize)?;
    if header_len > 0x00FF_FFFF {
        return Err(EncodeError::TooLarge { what: "header", len: header_len });
    }
    let frame_len = header_len
        .checked_add(4)
        .and_then(|n| n.checked_add(body_len))
        .and_then(|n| i32::try_from(n).ok())
        .ok_or(EncodeError::TooLarge { what: "frame", len: body_len })?;
    out.put_i32(frame_len);
    out.put_u32((u32::from(serialize.code()) << 24) | u32::try_from(header_len).unwrap_or(0));
    header.encode(serialize, out)?;
    Ok(FRAME_PREFIX_LEN.saturating_add(header_len))
}

/// [`encode_frame_head`] into a growable buffer in one pass: the header is written after room
/// for the prefix, which is filled in once its length is known, instead of encoding it twice
/// (once to measure it). What the connection writers use for every answer.
pub fn append_frame_head(
    header: &RemotingHeader,
    serialize: SerializeType,
    body_len: usize,
    out: &mut bytes::BytesMut,
) -> Result<usize, EncodeError> {
    let start = out.len();
    out.put_bytes(0, FRAME_PREFIX_LEN);
    if let Err(e) = header.encode(serialize, out) {
        out.truncate(start);
        return Err(e);
    }
    let header_len = out.len().saturating_sub(start).saturating_sub(FRAME_PREFIX_LEN);
    let lengths = (header_len <= 0x00FF_FFFF)
        .then(|| header_len.checked_add(4).and_then(|n| n.checked_add(body_len)).and_then(|n| i32::try_from(n).ok()))
        .flatten();
    let Some(frame_len) = lengths else {
        out.truncate(start);
        return Err(if header_len > 0x00FF_FFFF {
            EncodeError::TooLarge { what: "header", len: header_len }
        } else {
            EncodeError::TooLarge { what: "frame", len: body_len }
        });
    };
    let word = (u32::from(serialize.code()) << 24) | u32::try_from(header_len).unwrap_or(0);
    if let Some(prefix) = out.get_mut(start..start.saturating_add(FRAME_PREFIX_LEN)) {
        let (len_bytes, word_bytes) = prefix.split_at_mut(4);
        len_bytes.copy_from_slice(&frame_len.to_be_bytes());
        word_bytes.copy_from_slice(&word.to_be_bytes());
    }
    Ok(FRAME_PREFIX_LEN.saturating_add(header_len))
}

/// Writes a whole frame.
pub fn encode_frame<B: BufMut + ?Sized>(
    header: &RemotingHeader,
    serialize: SerializeType,
    body: &[u8],
    out: &mut B,
) -> Result<usize, EncodeError> {
    let head = encode_frame_head(header, serialize, body.len(), out)?;
    out.put_slice(body);
    Ok(head.saturating_add(body.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_appended_in_one_pass_is_the_head_encoded_in_two() {
        let mut h = RemotingHeader::request(310, 9);
        h.ext_fields.insert("b", "TopicTest");
        h.remark = Some("caf\u{e9} \"quoted\"".into());
        for serialize in [SerializeType::Json, SerializeType::RocketMq] {
            let mut two_pass = Vec::new();
            let n = encode_frame_head(&h, serialize, 1234, &mut two_pass).expect("encodes");
            let mut one_pass = bytes::BytesMut::from(&b"before"[..]);
            let m = append_frame_head(&h, serialize, 1234, &mut one_pass).expect("encodes");
            assert_eq!((n, &one_pass[6..]), (m, &two_pass[..]));
        }
    }

    fn sample() -> Vec<u8> {
        let mut h = RemotingHeader::request(310, 9);
        h.ext_fields.insert("b", "TopicTest");
        let mut out = Vec::new();
        encode_frame(&h, SerializeType::RocketMq, b"body!", &mut out).unwrap();
        out
    }

    #[test]
    fn partial_input_needs_more_and_is_untouched() {
        let bytes = sample();
        let decoder = FrameDecoder::default();
        for cut in 0..bytes.len() {
            let mut buf = BytesMut::from(&bytes[..cut]);
            assert_eq!(decoder.decode(&mut buf).unwrap(), None);
            assert_eq!(buf.len(), cut);
        }
        let mut buf = BytesMut::from(&bytes[..]);
        buf.extend_from_slice(&bytes);
        let frame = decoder.decode(&mut buf).unwrap().unwrap();
        assert_eq!(&frame.body[..], b"body!");
        assert_eq!(frame.header.ext_fields.get("b"), Some("TopicTest"));
        assert_eq!(buf.len(), bytes.len());
    }

    #[test]
    fn body_shares_the_read_buffer() {
        let bytes = sample();
        let mut buf = BytesMut::from(&bytes[..]);
        let base = buf.as_ptr() as usize;
        let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(frame.body.as_ptr() as usize, base + bytes.len() - 5);
    }

    #[test]
    fn declared_length_is_checked_before_waiting_for_it() {
        let mut buf = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0][..]);
        let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
        assert!(matches!(err.kind, DecodeErrorKind::FrameTooLarge { .. }));
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0][..]);
        assert!(FrameDecoder::default().decode(&mut buf).is_err());
        // Header longer than the frame.
        let mut buf = BytesMut::from(&[0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0, 0][..]);
        assert_eq!(FrameDecoder::default().decode(&mut buf).unwrap_err().offset, 4);
    }
}
