//! The remoting command header (docs/protocol.md §1.3-§1.6) in both serializations, JSON and ROCKETMQ binary.

use std::fmt;

use bytes::{BufMut, Bytes};
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use crate::error::{DecodeError, EncodeError};
use crate::ext_str::ExtStr;
use crate::reader::Reader;

mod fast_json;

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
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
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

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
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
            SerializeType::Json => decode_json(bytes, base),
            SerializeType::RocketMq => decode_binary(bytes, base),
        }
    }

    /// The encoded size in `serialize`.
    pub fn encoded_len(&self, serialize: SerializeType) -> Result<usize, EncodeError> {
        match serialize {
            SerializeType::Json => {
                let mut counter = Counter(0);
                write_json(self, &mut counter);
                Ok(counter.0)
            }
            SerializeType::RocketMq => binary_len(self),
        }
    }

    /// Writes the header in `serialize`.
    pub fn encode<B: BufMut + ?Sized>(&self, serialize: SerializeType, out: &mut B) -> Result<(), EncodeError> {
        match serialize {
            SerializeType::Json => {
                write_json(self, &mut BufSink(out));
                Ok(())
            }
            SerializeType::RocketMq => encode_binary(self, out),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// JSON

/// Where the JSON writer puts its bytes: a counter for the sizing pass, or the output buffer.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

struct Counter(usize);

impl Sink for Counter {
    fn put(&mut self, bytes: &[u8]) {
        self.0 = self.0.saturating_add(bytes.len());
    }
}

struct BufSink<'b, B: BufMut + ?Sized>(&'b mut B);

impl<B: BufMut + ?Sized> Sink for BufSink<'_, B> {
    fn put(&mut self, bytes: &[u8]) {
        self.0.put_slice(bytes);
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// A JSON string the way fastjson writes it (checked against the 5.3.3 golden vectors): `"` and
/// `\` escaped, the short escapes `\b \t \n \f \r`, other control characters and DEL as
/// `\u00XX` with uppercase hex, U+2028 as `\u2028`; `/` and all other text verbatim.
fn put_json_str<S: Sink>(s: &str, out: &mut S) {
    out.put(b"\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0C => Some(b"\\f"),
            0xE2 if bytes.get(i.saturating_add(1)..i.saturating_add(3)) == Some(&[0x80, 0xA8]) => Some(b"\\u2028"),
            0x00..=0x1F | 0x7F => Some(b""),
            _ => None,
        };
        let Some(escape) = escape else {
            i = i.saturating_add(1);
            continue;
        };
        out.put(bytes.get(start..i).unwrap_or_default());
        let width = if b == 0xE2 { 3 } else { 1 };
        if escape.is_empty() {
            let hi = HEX_UPPER.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
            let lo = HEX_UPPER.get(usize::from(b & 0xF)).copied().unwrap_or(b'0');
            out.put(&[b'\\', b'u', b'0', b'0', hi, lo]);
        } else {
            out.put(escape);
        }
        i = i.saturating_add(width);
        start = i;
    }
    out.put(bytes.get(start..).unwrap_or_default());
    out.put(b"\"");
}

fn put_json_int<S: Sink>(v: i32, out: &mut S) {
    let mut buf = [0u8; 12];
    let mut cursor: &mut [u8] = &mut buf[..];
    let _ = std::io::Write::write_fmt(&mut cursor, format_args!("{v}"));
    let written = 12usize.saturating_sub(cursor.len());
    out.put(buf.get(..written).unwrap_or_default());
}

/// Writes the header as compact JSON with keys in alphabetical order, like fastjson.
fn write_json<S: Sink>(h: &RemotingHeader, out: &mut S) {
    out.put(b"{\"code\":");
    put_json_int(h.code, out);
    if !h.ext_fields.is_empty() {
        out.put(b",\"extFields\":{");
        for (i, (k, v)) in h.ext_fields.iter().enumerate() {
            if i > 0 {
                out.put(b",");
            }
            put_json_str(k, out);
            out.put(b":");
            put_json_str(v, out);
        }
        out.put(b"}");
    }
    out.put(b",\"flag\":");
    put_json_int(h.flag, out);
    out.put(b",\"language\":");
    put_json_str(h.language.name(), out);
    out.put(b",\"opaque\":");
    put_json_int(h.opaque, out);
    if let Some(remark) = &h.remark {
        out.put(b",\"remark\":");
        put_json_str(remark, out);
    }
    out.put(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    put_json_int(h.version, out);
    out.put(b"}");
}

/// An integer that may arrive as a JSON number or a numeric string.
struct LenientI32(i32);

impl<'de> Deserialize<'de> for LenientI32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LenientI32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 32-bit integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LenientI32, E> {
                i32::try_from(v).map(LenientI32).map_err(|_| E::custom("integer out of i32 range"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LenientI32, E> {
                i32::try_from(v).map(LenientI32).map_err(|_| E::custom("integer out of i32 range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LenientI32, E> {
                v.trim().parse().map(LenientI32).map_err(|_| E::custom("not an integer"))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON string as an [`ExtStr`]: sliced from the input when it has no escapes.
struct TextSeed<'b>(&'b Bytes);

impl<'de> DeserializeSeed<'de> for TextSeed<'_> {
    type Value = ExtStr;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ExtStr, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for TextSeed<'_> {
    type Value = ExtStr;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<ExtStr, E> {
        Ok(ExtStr::sliced(self.0, v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ExtStr, E> {
        Ok(ExtStr::from(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<ExtStr, E> {
        Ok(ExtStr::from(v))
    }
}

/// An `extFields` value: a string, or a number/boolean rendered as Java's `toString` would;
/// `None` for null, which is dropped.
struct ValueSeed<'b>(&'b Bytes);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Option<ExtStr>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<ExtStr>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Option<ExtStr>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number, boolean or null")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::sliced(self.0, v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::from(v)))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::from(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::format(format_args!("{v}"))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::format(format_args!("{v}"))))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::format(format_args!("{v}"))))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(ExtStr::from_static(if v { "true" } else { "false" })))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// `extFields`: an object of [`ValueSeed`] values, or null.
struct ExtFieldsSeed<'b>(&'b Bytes);

impl<'de> DeserializeSeed<'de> for ExtFieldsSeed<'_> {
    type Value = ExtFields;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ExtFields, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExtFieldsSeed<'_> {
    type Value = ExtFields;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of string values, or null")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtFields, A::Error> {
        // JSON gives no count up front; real headers carry at most ~16 fields.
        let mut ext = ExtFields::with_capacity(map.size_hint().unwrap_or(16).min(16));
        while let Some(key) = map.next_key_seed(TextSeed(self.0))? {
            if let Some(value) = map.next_value_seed(ValueSeed(self.0))? {
                ext.push(key, value);
            }
        }
        Ok(ext)
    }
    fn visit_unit<E: de::Error>(self) -> Result<ExtFields, E> {
        Ok(ExtFields::new())
    }
}

/// The language name, mapped without keeping the text.
struct LanguageName(LanguageCode);

impl<'de> Deserialize<'de> for LanguageName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = LanguageName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LanguageName, E> {
                Ok(LanguageName(LanguageCode::from_name(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The header's own keys; others are ignored.
enum JsonKey {
    Code,
    Language,
    Version,
    Opaque,
    Flag,
    Remark,
    ExtFields,
    Other,
}

impl<'de> Deserialize<'de> for JsonKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = JsonKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<JsonKey, E> {
                Ok(match v {
                    "code" => JsonKey::Code,
                    "language" => JsonKey::Language,
                    "version" => JsonKey::Version,
                    "opaque" => JsonKey::Opaque,
                    "flag" => JsonKey::Flag,
                    "remark" => JsonKey::Remark,
                    "extFields" => JsonKey::ExtFields,
                    _ => JsonKey::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

/// The whole header. Absent and null fields take their defaults; a field given twice is an
/// error.
struct HeaderSeed<'b>(&'b Bytes);

impl<'de> Visitor<'de> for HeaderSeed<'_> {
    type Value = RemotingHeader;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a remoting command header object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RemotingHeader, A::Error> {
        fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
            if slot.is_some() {
                return Err(E::duplicate_field(name));
            }
            *slot = Some(value);
            Ok(())
        }
        let (mut code, mut language, mut version, mut opaque, mut flag) = (None, None, None, None, None);
        let (mut remark, mut ext_fields) = (None, None);
        while let Some(key) = map.next_key::<JsonKey>()? {
            match key {
                JsonKey::Code => once(&mut code, map.next_value::<Option<LenientI32>>()?, "code")?,
                JsonKey::Language => once(&mut language, map.next_value::<Option<LanguageName>>()?, "language")?,
                JsonKey::Version => once(&mut version, map.next_value::<Option<LenientI32>>()?, "version")?,
                JsonKey::Opaque => once(&mut opaque, map.next_value::<Option<LenientI32>>()?, "opaque")?,
                JsonKey::Flag => once(&mut flag, map.next_value::<Option<LenientI32>>()?, "flag")?,
                JsonKey::Remark => once(&mut remark, map.next_value::<Option<String>>()?, "remark")?,
                JsonKey::ExtFields => once(&mut ext_fields, map.next_value_seed(ExtFieldsSeed(self.0))?, "extFields")?,
                JsonKey::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let int = |v: Option<Option<LenientI32>>| v.flatten().map_or(0, |v| v.0);
        Ok(RemotingHeader {
            code: int(code),
            language: language.flatten().map_or(LanguageCode::OTHER, |l| l.0),
            version: int(version),
            opaque: int(opaque),
            flag: int(flag),
            // Java's binary decoder turns empty strings into null; treat JSON the same way.
            remark: remark.flatten().filter(|r| !r.is_empty()),
            ext_fields: ext_fields.unwrap_or_default(),
        })
    }
}

/// Decodes a JSON header; texts that lie in `base` (the same bytes, or empty) are shared.
fn decode_json(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
    match fast_json::decode(bytes, base) {
        Some(header) => Ok(header),
        None => decode_json_general(bytes, base),
    }
}

/// Decodes any JSON header serde_json accepts.
fn decode_json_general(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_map(HeaderSeed(base))
        .and_then(|h| de.end().map(|()| h))
        .map_err(|e| crate::error::json_error(bytes, &e))
}

// ---------------------------------------------------------------------------------------------
// ROCKETMQ binary

/// Fixed part of the binary header.
pub const BINARY_FIXED_LEN: usize = 2 + 1 + 2 + 4 + 4 + 4 + 4;

fn binary_len(h: &RemotingHeader) -> Result<usize, EncodeError> {
    let ext = ext_binary_len(&h.ext_fields)?;
    let remark = h.remark.as_ref().map_or(0, String::len);
    BINARY_FIXED_LEN
        .checked_add(remark)
        .and_then(|n| n.checked_add(ext))
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or(EncodeError::TooLarge { what: "header", len: ext })
}

fn ext_binary_len(ext: &ExtFields) -> Result<usize, EncodeError> {
    ext.iter().try_fold(0usize, |acc, (k, v)| {
        if k.len() > i16::MAX as usize {
            return Err(EncodeError::TooLarge { what: "extFields key", len: k.len() });
        }
        acc.checked_add(2 + 4)
            .and_then(|n| n.checked_add(k.len()))
            .and_then(|n| n.checked_add(v.len()))
            .ok_or(EncodeError::TooLarge { what: "extFields", len: acc })
    })
}

fn encode_binary<B: BufMut + ?Sized>(h: &RemotingHeader, out: &mut B) -> Result<(), EncodeError> {
    let code = i16::try_from(h.code).map_err(|_| EncodeError::CodeOutOfRange(h.code))?;
    let version = i16::try_from(h.version).unwrap_or(i16::MAX);
    binary_len(h)?;
    let ext_len = ext_binary_len(&h.ext_fields)?;
    out.put_i16(code);
    out.put_u8(h.language.0);
    out.put_i16(version);
    out.put_i32(h.opaque);
    out.put_i32(h.flag);
    let remark = h.remark.as_deref().unwrap_or("");
    out.put_i32(i32::try_from(remark.len()).unwrap_or(i32::MAX));
    out.put_slice(remark.as_bytes());
    out.put_i32(i32::try_from(ext_len).unwrap_or(i32::MAX));
    for (k, v) in h.ext_fields.iter() {
        out.put_i16(i16::try_from(k.len()).unwrap_or(i16::MAX));
        out.put_slice(k.as_bytes());
        out.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
        out.put_slice(v.as_bytes());
    }
    Ok(())
}

/// Counts the map entries so the pair vector is allocated once. The count is bounded by the
/// input (each entry takes at least 6 bytes), so a lying header cannot inflate it.
fn count_binary_entries(mut ext: &[u8]) -> usize {
    let mut n = 0usize;
    while let Some((key_len, rest)) = ext.split_first_chunk::<2>() {
        let key_len = usize::try_from(i16::from_be_bytes(*key_len)).unwrap_or(usize::MAX);
        let Some((value_len, rest)) = rest.get(key_len..).and_then(<[u8]>::split_first_chunk::<4>) else { break };
        let value_len = usize::try_from(i32::from_be_bytes(*value_len)).unwrap_or(usize::MAX);
        let Some(rest) = rest.get(value_len..) else { break };
        n = n.saturating_add(1);
        ext = rest;
    }
    n
}

/// Decodes a binary header; texts that lie in `base` (the same bytes, or empty) are shared.
fn decode_binary(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
    let mut r = Reader::new(bytes);
    let code = i32::from(r.i16("code")?);
    let language = LanguageCode(r.u8("language")?);
    let version = i32::from(r.i16("version")?);
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.len_i32("remark length")?;
    let remark = r.str(remark_len, "remark")?;
    let ext_len = r.len_i32("extFields length")?;
    let ext_bytes = r.bytes(ext_len, "extFields")?;
    let mut ext_fields = ExtFields::with_capacity(count_binary_entries(ext_bytes));
    let mut e = Reader::with_base(ext_bytes, r.offset().saturating_sub(ext_len));
    while e.remaining() > 0 {
        let key_len = e.len_i16("extFields key length")?;
        let key = e.str(key_len, "extFields key")?;
        let value_len = e.len_i32("extFields value length")?;
        let value = e.str(value_len, "extFields value")?;
        // Java reads zero-length strings as null, which a map lookup cannot tell from absent.
        if !key.is_empty() && !value.is_empty() {
            ext_fields.push(ExtStr::sliced(base, key), ExtStr::sliced(base, value));
        }
    }
    Ok(RemotingHeader {
        code,
        language,
        version,
        opaque,
        flag,
        remark: (!remark.is_empty()).then(|| remark.to_owned()),
        ext_fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_the_spec_example() {
        let h = RemotingHeader { language: LanguageCode::JAVA, ..RemotingHeader::response(0, 5, None) };
        let mut out = Vec::new();
        h.encode(SerializeType::Json, &mut out).unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"code":0,"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#
        );
        assert_eq!(h.encoded_len(SerializeType::Json).unwrap(), 95);
        assert_eq!(RemotingHeader::decode(SerializeType::Json, &out).unwrap(), h);
    }

    #[test]
    fn binary_matches_the_spec_example() {
        let h = RemotingHeader { language: LanguageCode::JAVA, ..RemotingHeader::response(0, 5, None) };
        let mut out = Vec::new();
        h.encode(SerializeType::RocketMq, &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 1, 0xDF, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(RemotingHeader::decode(SerializeType::RocketMq, &out).unwrap(), h);
    }

    #[test]
    fn json_decoder_is_lenient_like_java() {
        let text = br#"{"code":"11","extFields":{"a":"x","n":5,"b":true,"z":null},"flag":0,"language":"KLINGON","opaque":12,"remark":"","version":317,"unknown":[1]}"#;
        let h = RemotingHeader::decode(SerializeType::Json, text).unwrap();
        assert_eq!(h.code, 11);
        assert_eq!(h.language, LanguageCode::OTHER);
        assert_eq!(h.ext_fields.get("n"), Some("5"));
        assert_eq!(h.ext_fields.get("b"), Some("true"));
        assert_eq!(h.ext_fields.get("z"), None);
        assert_eq!(h.remark, None);
        let null_ext = br#"{"code":0,"extFields":null,"flag":0,"language":"GO","opaque":1,"remark":"","version":317}"#;
        assert!(RemotingHeader::decode(SerializeType::Json, null_ext).unwrap().ext_fields.is_empty());
    }

    #[test]
    fn json_escapes_control_characters_like_fastjson() {
        let mut h = RemotingHeader::request(310, 1);
        h.ext_fields.insert("i", "A\u{1}b\u{2}\"\\\n");
        let mut out = Vec::new();
        h.encode(SerializeType::Json, &mut out).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.contains(r#""i":"A\u0001b\u0002\"\\\n""#), "{text}");
        assert_eq!(
            RemotingHeader::decode(SerializeType::Json, &out).unwrap().ext_fields.get("i"),
            Some("A\u{1}b\u{2}\"\\\n")
        );
    }

    #[test]
    fn binary_rejects_codes_it_cannot_carry() {
        let h = RemotingHeader::request(200_050, 1);
        assert_eq!(h.encode(SerializeType::RocketMq, &mut Vec::new()), Err(EncodeError::CodeOutOfRange(200_050)));
    }
}
