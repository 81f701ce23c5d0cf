//! Errors of the codec. Every decode error carries the byte offset, relative to the start of
//! the buffer handed to the decoder, at which the problem was found, so that an operator
//! looking at a hex dump of a bad frame or a torn commit-log segment can find it.

use std::fmt;

/// Why a decode failed, and at which byte offset of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte offset {offset}")]
pub struct DecodeError {
    /// Byte offset into the decoder's input where the problem was detected.
    pub offset: usize,
    /// What was wrong.
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    pub(crate) fn new(offset: usize, kind: DecodeErrorKind) -> Self {
        Self { offset, kind }
    }

    /// The same error, with its offset moved by `base` (for decoders that work on a slice of a
    /// larger buffer and want to report offsets relative to the whole).
    #[must_use]
    pub fn rebased(self, base: usize) -> Self {
        Self { offset: self.offset.saturating_add(base), kind: self.kind }
    }
}

/// The kinds of malformed input the codec recognises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ends inside `field`: `needed` bytes were required, `available` were left.
    Truncated { field: &'static str, needed: usize, available: usize },
    /// A length or size field holds a value that cannot be right (negative, too small for the
    /// fixed part, or larger than the bytes that enclose it).
    BadLength { field: &'static str, value: i64 },
    /// A frame declares more bytes than the configured frame limit allows.
    FrameTooLarge { length: usize, max: usize },
    /// A serialize type other than JSON (0) or ROCKETMQ (1).
    UnknownSerializeType(u8),
    /// A stored record starts with a magic code that is neither v1, v2 nor BLANK.
    BadMagic(i32),
    /// A text field is not valid UTF-8.
    InvalidUtf8 { field: &'static str },
    /// The JSON header or body could not be parsed.
    InvalidJson(String),
    /// A properties string longer than the 32767 bytes its signed 16-bit length can carry.
    PropertiesTooLong(usize),
    /// An address field with a length that is neither IPv4 nor IPv6.
    BadAddress,
    /// Hex text (a message id) with a character that is not a hex digit or a bad length.
    BadHex,
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { field, needed, available } => {
                write!(f, "input ends inside {field}: needs {needed} bytes, {available} left")
            }
            Self::BadLength { field, value } => write!(f, "impossible {field} {value}"),
            Self::FrameTooLarge { length, max } => {
                write!(f, "frame of {length} bytes exceeds the limit of {max}")
            }
            Self::UnknownSerializeType(t) => write!(f, "unknown serialize type {t}"),
            Self::BadMagic(m) => write!(f, "unknown record magic {m:#010x}"),
            Self::InvalidUtf8 { field } => write!(f, "{field} is not valid UTF-8"),
            Self::InvalidJson(e) => write!(f, "invalid JSON: {e}"),
            Self::PropertiesTooLong(n) => {
                write!(f, "properties of {n} bytes exceed the 32767-byte limit")
            }
            Self::BadAddress => write!(f, "address is neither IPv4 nor IPv6"),
            Self::BadHex => write!(f, "not a hex message id"),
        }
    }
}

/// Errors of the encoders: input that the format cannot represent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// Properties would be longer than the 32767 bytes a signed 16-bit length can carry.
    #[error("properties of {0} bytes exceed the 32767-byte limit")]
    PropertiesTooLong(usize),
    /// A property key or value contains one of the separators `\u{1}` / `\u{2}`, or a key is empty.
    #[error("property key {key:?} or its value contains a separator character, or the key is empty")]
    BadProperty { key: String },
    /// A topic longer than the record format can carry (32767 bytes with magic v2).
    #[error("topic of {0} bytes is too long")]
    TopicTooLong(usize),
    /// A body, header or whole message larger than its 32-bit length field can carry.
    #[error("{what} of {len} bytes is too large for the format")]
    TooLarge { what: &'static str, len: usize },
    /// A request code that the 16-bit binary header cannot carry.
    #[error("code {0} does not fit the 16-bit ROCKETMQ header field")]
    CodeOutOfRange(i32),
}

/// Turns a serde_json error into a [`DecodeError`] at the byte offset it names. serde_json
/// reports a 1-based line and column (in bytes); this maps them back onto `input`.
pub(crate) fn json_error(input: &[u8], e: &serde_json::Error) -> DecodeError {
    let line_start = if e.line() <= 1 {
        0
    } else {
        input
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(e.line().saturating_sub(2))
            .map_or(input.len(), |(i, _)| i.saturating_add(1))
    };
    let offset = line_start.saturating_add(e.column().saturating_sub(1)).min(input.len());
    DecodeError::new(offset, DecodeErrorKind::InvalidJson(e.to_string()))
}
