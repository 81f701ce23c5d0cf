//! The remoting command header (docs/protocol.md §1.3-§1.6) in both serializations, JSON and ROCKETMQ binary.

use std::fmt;

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, EncodeError};
use crate::ext_str::ExtStr;
pub use binary::BINARY_FIXED_LEN;

mod binary;
mod fast_json;
mod json_read;
mod json_write;

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 0x1;
/// Flag bit 1: a one-way request, which must not be answered.
pub const FLAG_ONEWAY: i32 = 0x2;

/// The version ordinal Silo puts into its commands: that of Apache RocketMQ 5.3.3, so that Java
/// clients treat Silo as a current broker (docs/protocol.md §1.8).
pub const SILO_VERSION: i32 = 479;

/// How a header is serialized; the high byte of the frame's header word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SerializeType {
    Json,
    RocketMq,
}

impl SerializeType {
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::RocketMq => 1,
        }
    }

    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }
}

/// The sender's language (docs/protocol.md §1.6). JSON headers carry the name, binary headers the code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LanguageCode(pub u8);

const LANGUAGE_NAMES: [&str; 14] = [
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST",
    "NODE_JS",
];

impl LanguageCode {
    pub const JAVA: Self = Self(0);
    pub const OTHER: Self = Self(7);
    pub const GO: Self = Self(9);
    pub const RUST: Self = Self(12);

    /// The enum name; codes past the table render as `OTHER`.
    #[must_use]
    pub fn name(self) -> &'static str {
        LANGUAGE_NAMES.get(usize::from(self.0)).copied().unwrap_or("OTHER")
    }

    /// Unknown names map to `OTHER`, as the spec asks decoders to accept them.
    #[must_use]
    pub fn from_name(name: &str) -> Self {
        LANGUAGE_NAMES.iter().position(|n| *n == name).and_then(|i| u8::try_from(i).ok()).map_or(Self::OTHER, Self)
    }
}

impl fmt::Debug for LanguageCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The custom header as transported: string keys to string values. Lookups let the last
/// occurrence of a key win, as Java's decoding into a map does.
///
/// Keys and values are [`ExtStr`]s: a decoded header's texts are inline copies or slices of the
/// frame, and the keys of typed headers are static, so filling one allocates only its vector.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExtFields(Vec<(ExtStr, ExtStr)>);

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(k, v)| (k, v))).finish()
    }
}

impl ExtFields {
    #[must_use]
    pub fn new() -> Self {
        Self(Vec::new())
    }

    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Makes room for `additional` more fields.
    pub fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.get_ext(key).map(ExtStr::as_str)
    }

    /// The value of `key` as stored, to be cloned without copying.
    #[must_use]
    pub fn get_ext(&self, key: &str) -> Option<&ExtStr> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The value of `key`, to be changed or moved out in place.
    pub fn get_mut_ext(&mut self, key: &str) -> Option<&mut ExtStr> {
        self.0.iter_mut().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Every field, its value open to change or to be moved out: one pass over the header
    /// for a typed header that takes all its fields at once.
    pub fn iter_mut_ext(&mut self) -> impl Iterator<Item = (&ExtStr, &mut ExtStr)> {
        self.0.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Removes every field, keeping the room for reuse.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Sets `key`, replacing an earlier value.
    pub fn insert(&mut self, key: impl Into<ExtStr>, value: impl Into<ExtStr>) {
        let key = key.into();
        let value = value.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Appends without looking for an earlier occurrence (decoders keep wire order).
    pub fn push(&mut self, key: impl Into<ExtStr>, value: impl Into<ExtStr>) {
        self.0.push((key.into(), value.into()));
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &str)> + ExactSizeIterator {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<ExtStr>, V: Into<ExtStr>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut ext = Self::new();
        for (k, v) in iter {
            ext.insert(k, v);
        }
        ext
    }
}

/// A remoting command header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingHeader {
    /// Request code, or response code when [`FLAG_RESPONSE`] is set.
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
}

impl RemotingHeader {
    /// A request from Silo.
    #[must_use]
    pub fn request(code: i32, opaque: i32) -> Self {
        Self {
            code,
            language: LanguageCode::RUST,
            version: SILO_VERSION,
            opaque,
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
        }
    }

    /// A response to the request with `opaque`.
    #[must_use]
    pub fn response(code: i32, opaque: i32, remark: Option<String>) -> Self {
        Self { flag: FLAG_RESPONSE, remark, ..Self::request(code, opaque) }
    }

    #[must_use]
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    #[must_use]
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Decodes a header of either serialization; its texts are copied out of `bytes`.
    pub fn decode(serialize: SerializeType, bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode_in(serialize, bytes, &Bytes::new())
    }

    /// Decodes a header of either serialization; its long texts share `bytes`' memory.
    pub fn decode_shared(serialize: SerializeType, bytes: &Bytes) -> Result<Self, DecodeError> {
        Self::decode_in(serialize, bytes, bytes)
    }

    fn decode_in(serialize: SerializeType, bytes: &[u8], base: &Bytes) -> Result<Self, DecodeError> {
        match serialize {
            SerializeType::Json => json_read::decode_json(bytes, base),
            SerializeType::RocketMq => binary::decode_binary(bytes, base),
        }
    }

    /// The encoded size in `serialize`.
    pub fn encoded_len(&self, serialize: SerializeType) -> Result<usize, EncodeError> {
        match serialize {
            SerializeType::Json => Ok(json_write::json_len(self)),
            SerializeType::RocketMq => binary::binary_len(self),
        }
    }

    /// Writes the header in `serialize`.
    pub fn encode<B: BufMut + ?Sized>(&self, serialize: SerializeType, out: &mut B) -> Result<(), EncodeError> {
        match serialize {
            SerializeType::Json => {
                json_write::encode_json(self, out);
                Ok(())
            }
            SerializeType::RocketMq => binary::encode_binary(self, out),
        }
    }
}
