//! Field readers for JSON bodies that accept what the Java broker's JSON parser (fastjson 1.2,
//! which Apache RocketMQ 5.3.3 decodes request bodies with) accepts from non-Java clients, and
//! refuse what it refuses (docs/protocol.md §2.12). The C++ client, for one, writes enums as
//! their ordinals and `subVersion` as a string; Go writes tag codes as strings. Each reader is
//! used with `#[serde(deserialize_with = ...)]` on the field Java declares with that type.
//!
//! The rules, per Java field type (checked against the 5.3.3 jars):
//! - `String`: a string; any other value becomes its JSON text (`0`, `1.5`, `true`, `{"a":1}`);
//!   `null` is empty.
//! - `int` / `long`: a number, a fraction truncated toward zero; `true`/`false` as 1/0; a string
//!   holding a decimal integer, with an optional sign and leading zeros (for `int` also with a
//!   `.0` fraction); `null` and `""` are 0. Anything else, or a value out of the type's range,
//!   is refused.
//! - `boolean`: `true`/`false`; a number is true when its integer part is 1; the strings `true`,
//!   `1`, `Y`, `T` (any case) are true and `false`, `0`, `N`, `F`, `""` false; `null` is false.
//!   Any other string, an array or an object is refused.
//! - an enum: its ordinal as an in-range integer, or its name in any case. An unknown name, a
//!   string of digits, `""` and `null` leave it unset (empty here), as fastjson does silently;
//!   an out-of-range number, a fraction, a boolean, an array or an object is refused.
//! - a collection: an array (or `null`, which is empty); a lone value is refused.
//!
//! What fastjson also tolerates in the JSON text itself (comments, single quotes, unquoted keys,
//! trailing commas, keys matched without regard to case) no client is known to write, and is
//! not accepted here.

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::Value;

/// The value's JSON text, as fastjson hands a non-string value to a `String` field.
fn text_of(v: Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A Java `String` field.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(text_of(Value::deserialize(d)?))
}

/// A Java `String` field that is `null` when absent.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Null => None,
        v => Some(text_of(v)),
    })
}

/// Digits with an optional sign, as Java's `Integer.parseInt` takes them.
fn parse_decimal(s: &str) -> Option<i128> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || digits.len() > 38 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// An integer as fastjson reads it into an `int` (`fraction_text`: `"12.0"` allowed) or a
/// `long`, before the range check.
fn integer(v: &Value, fraction_text: bool) -> Option<i128> {
    match v {
        Value::Null => Some(0),
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Some(i128::from(u))
            } else {
                let f = n.as_f64()?;
                #[allow(clippy::cast_possible_truncation)]
                (f.is_finite() && f.abs() < 1e38).then(|| f.trunc() as i128)
            }
        }
        Value::String(s) if s.is_empty() => Some(0),
        Value::String(s) => parse_decimal(s).or_else(|| {
            let whole = s.strip_suffix(".0").filter(|_| fraction_text)?;
            parse_decimal(whole)
        }),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// A Java `long` field.
pub fn long<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let v = Value::deserialize(d)?;
    integer(&v, false).and_then(|i| i64::try_from(i).ok()).ok_or_else(|| D::Error::custom(format!("{v} is not a long")))
}

/// A Java `int` field.
pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    let v = Value::deserialize(d)?;
    integer(&v, true).and_then(|i| i32::try_from(i).ok()).ok_or_else(|| D::Error::custom(format!("{v} is not an int")))
}

/// A Java `boolean` field.
pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let v = Value::deserialize(d)?;
    let b = match &v {
        Value::Null => Some(false),
        Value::Bool(b) => Some(*b),
        Value::Number(n) => {
            let whole = n.as_i64().or_else(|| n.as_f64().map(f64::trunc).filter(|f| f.abs() < 1e18).map(|f| f as i64));
            Some(whole == Some(1))
        }
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "1" | "y" | "t" => Some(true),
            "false" | "0" | "n" | "f" | "" => Some(false),
            _ => None,
        },
        Value::Array(_) | Value::Object(_) => None,
    };
    b.ok_or_else(|| D::Error::custom(format!("{v} is not a boolean")))
}

/// A collection field: `null` is empty.
pub fn or_empty<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A `Set<String>` / `List<String>` field, each element read as a [`string`].
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let items: Option<Vec<Value>> = Option::deserialize(d)?;
    Ok(items.unwrap_or_default().into_iter().map(text_of).collect())
}

/// A `Set<Integer>` field: elements as [`int`]; `null` and `""` elements are left out.
pub fn ints<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i32>, D::Error> {
    let items: Option<Vec<Value>> = Option::deserialize(d)?;
    let mut out = Vec::new();
    for v in items.unwrap_or_default() {
        if v.is_null() || v.as_str() == Some("") {
            continue;
        }
        let i = integer(&v, true)
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| D::Error::custom(format!("{v} is not an int")))?;
        out.push(i);
    }
    Ok(out)
}

/// An enum field, normalised to its constant's name (empty when unset); `names` are the
/// constants in declaration order, so their positions are the ordinals.
fn enum_name<'de, D: Deserializer<'de>>(d: D, what: &str, names: &[&'static str]) -> Result<String, D::Error> {
    let v = Value::deserialize(d)?;
    let found = match &v {
        Value::Null => Some(""),
        Value::String(s) => Some(names.iter().find(|n| n.eq_ignore_ascii_case(s)).copied().unwrap_or("")),
        Value::Number(n) => n.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| names.get(i)).copied(),
        Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
    };
    found.map(str::to_owned).ok_or_else(|| D::Error::custom(format!("{v} is not a {what}")))
}

/// `ConsumeType`, in Java's declaration order.
pub const CONSUME_TYPES: &[&str] = &["CONSUME_ACTIVELY", "CONSUME_PASSIVELY", "CONSUME_POP"];
/// `MessageModel`, in Java's declaration order.
pub const MESSAGE_MODELS: &[&str] = &["BROADCASTING", "CLUSTERING"];
/// `ConsumeFromWhere`, in Java's declaration order (the deprecated constants keep their places).
pub const CONSUME_FROM_WHERE: &[&str] = &[
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
];

pub fn consume_type<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    enum_name(d, "ConsumeType", CONSUME_TYPES)
}

pub fn message_model<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    enum_name(d, "MessageModel", MESSAGE_MODELS)
}

pub fn consume_from_where<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    enum_name(d, "ConsumeFromWhere", CONSUME_FROM_WHERE)
}
