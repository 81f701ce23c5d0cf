//! The general JSON reader: serde seeds that decode any header serde_json accepts, as leniently
//! as Java's parser, behind the fast path for the common shape.

use std::fmt;

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::{ExtFields, LanguageCode, RemotingHeader, fast_json};
use crate::error::DecodeError;
use crate::ext_str::ExtStr;

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
pub(super) fn decode_json(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
    match fast_json::decode(bytes, base) {
        Some(header) => Ok(header),
        None => decode_json_general(bytes, base),
    }
}

/// Decodes any JSON header serde_json accepts.
pub(super) fn decode_json_general(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_map(HeaderSeed(base))
        .and_then(|h| de.end().map(|()| h))
        .map_err(|e| crate::error::json_error(bytes, &e))
}

#[cfg(test)]
mod tests {
    use crate::header::{LanguageCode, RemotingHeader, SerializeType};

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
}
