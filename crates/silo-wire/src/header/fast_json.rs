//! A fast path for JSON headers as Java and Silo write them: an object of the header's own
//! fields, integers as plain numbers, texts as strings, and `extFields` as an object of
//! string values. It takes texts without escapes as slices of the input and unescapes the
//! others straight into their final place (the properties string always has escapes: `\u0001`
//! and `\u0002`), where serde_json would first build each in a scratch buffer of its own.
//!
//! It accepts a strict subset of what the general decoder accepts and gives the same header
//! for it; on anything else (other value types, nulls, duplicate fields, surrogate escapes,
//! malformed input) it returns `None` and the general decoder decides, errors included.

use bytes::Bytes;

use super::{ExtFields, LanguageCode, RemotingHeader};
use crate::ext_str::ExtStr;

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    base: &'a Bytes,
}

/// Decodes `bytes` if it is of the common shape; texts that lie in `base` are shared.
pub(super) fn decode(bytes: &[u8], base: &Bytes) -> Option<RemotingHeader> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut p = Parser { text, pos: 0, base };
    let h = p.header()?;
    p.skip_ws();
    (p.pos == text.len()).then_some(h)
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.pos = self.pos.saturating_add(1);
        }
    }

    /// Consumes `byte` after optional whitespace.
    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == byte).then(|| self.pos = self.pos.saturating_add(1))
    }

    /// A string token: its raw content (between the quotes) and whether it has escapes.
    fn raw_string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    self.pos = self.pos.saturating_add(2);
                }
                0x00..=0x1F => return None,
                _ => self.pos = self.pos.saturating_add(1),
            }
        }
        let raw = self.text.get(start..self.pos)?;
        self.pos = self.pos.saturating_add(1);
        Some((raw, escaped))
    }

    /// A string without escapes, as a slice of the input.
    fn plain_string(&mut self) -> Option<&'a str> {
        match self.raw_string()? {
            (raw, false) => Some(raw),
            (_, true) => None,
        }
    }

    fn string(&mut self) -> Option<ExtStr> {
        match self.raw_string()? {
            (raw, false) => Some(ExtStr::sliced(self.base, raw)),
            // Unescaping never lengthens a text.
            (raw, true) => ExtStr::build(raw.len(), |out| unescape(raw, out)),
        }
    }

    /// An integer in i32 range, written plainly (no fraction, exponent or leading zero).
    fn int(&mut self) -> Option<i32> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos = self.pos.saturating_add(1);
        }
        let digits = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos = self.pos.saturating_add(1);
        }
        let number = self.text.get(start..self.pos)?;
        let digits = self.text.get(digits..self.pos)?;
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        number.parse().ok()
    }

    /// `{}` or `{"key":"value",...}`.
    fn ext_fields(&mut self) -> Option<ExtFields> {
        self.eat(b'{')?;
        let mut ext = ExtFields::with_capacity(16);
        self.skip_ws();
        if self.peek()? == b'}' {
            self.pos = self.pos.saturating_add(1);
            return Some(ext);
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            let value = self.string()?;
            ext.push(key, value);
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos = self.pos.saturating_add(1),
                b'}' => {
                    self.pos = self.pos.saturating_add(1);
                    return Some(ext);
                }
                _ => return None,
            }
        }
    }

    fn header(&mut self) -> Option<RemotingHeader> {
        fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
            slot.is_none().then(|| *slot = Some(value))
        }
        self.eat(b'{')?;
        let (mut code, mut language, mut version, mut opaque, mut flag) = (None, None, None, None, None);
        let (mut remark, mut ext_fields) = (None, None);
        self.skip_ws();
        let mut done = self.peek()? == b'}';
        if done {
            self.pos = self.pos.saturating_add(1);
        }
        while !done {
            let key = self.plain_string()?;
            self.eat(b':')?;
            match key {
                "code" => once(&mut code, self.int()?)?,
                "version" => once(&mut version, self.int()?)?,
                "opaque" => once(&mut opaque, self.int()?)?,
                "flag" => once(&mut flag, self.int()?)?,
                "language" => once(&mut language, LanguageCode::from_name(self.plain_string()?))?,
                "remark" => once(&mut remark, self.string()?)?,
                "extFields" => once(&mut ext_fields, self.ext_fields()?)?,
                // Other fields (serializeTypeCurrentRPC) are ignored; only strings are taken here.
                _ => {
                    self.raw_string()?;
                }
            }
            self.skip_ws();
            match self.peek()? {
                b',' => self.pos = self.pos.saturating_add(1),
                b'}' => {
                    self.pos = self.pos.saturating_add(1);
                    done = true;
                }
                _ => return None,
            }
        }
        Some(RemotingHeader {
            code: code.unwrap_or(0),
            language: language.unwrap_or(LanguageCode::OTHER),
            version: version.unwrap_or(0),
            opaque: opaque.unwrap_or(0),
            flag: flag.unwrap_or(0),
            remark: remark.map(ExtStr::into_string).filter(|r| !r.is_empty()),
            ext_fields: ext_fields.unwrap_or_default(),
        })
    }
}

/// Writes the JSON string content `raw` unescaped. Fails on invalid escapes and on surrogate
/// escapes, which the general decoder handles.
fn unescape(raw: &str, out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    let mut rest = raw;
    while let Some(i) = rest.find('\\') {
        out.write_str(rest.get(..i).ok_or(std::fmt::Error)?)?;
        let escape = rest.get(i.saturating_add(1)..).ok_or(std::fmt::Error)?;
        let (c, len) = match escape.as_bytes().first() {
            Some(b'"') => ('"', 1),
            Some(b'\\') => ('\\', 1),
            Some(b'/') => ('/', 1),
            Some(b'b') => ('\u{8}', 1),
            Some(b'f') => ('\u{c}', 1),
            Some(b'n') => ('\n', 1),
            Some(b'r') => ('\r', 1),
            Some(b't') => ('\t', 1),
            Some(b'u') => {
                let hex = escape.get(1..5).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                let code = hex.and_then(|h| u32::from_str_radix(h, 16).ok());
                (code.and_then(char::from_u32).ok_or(std::fmt::Error)?, 5)
            }
            _ => return Err(std::fmt::Error),
        };
        out.write_char(c)?;
        rest = escape.get(len..).ok_or(std::fmt::Error)?;
    }
    out.write_str(rest)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::header::SerializeType;
    use crate::header::json_read::decode_json_general;

    fn both(text: &str) -> (Option<RemotingHeader>, Option<RemotingHeader>) {
        let base = Bytes::copy_from_slice(text.as_bytes());
        (decode(&base, &base), decode_json_general(&base, &base).ok())
    }

    #[test]
    fn takes_what_java_writes() {
        let text = r#"{"code":310,"extFields":{"a":"pg","b":"TopicTest","i":"TAGS\u0001TagA\u0002UNIQ_KEY\u0001AC1\u0002","g":"1700000000000"},"flag":0,"language":"JAVA","opaque":42,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let (fast, general) = both(text);
        assert_eq!(fast, general);
        let h = fast.unwrap();
        assert_eq!(h.ext_fields.get("i"), Some("TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}AC1\u{2}"));
        assert_eq!((h.code, h.opaque, h.version, h.language), (310, 42, 479, LanguageCode::JAVA));
    }

    #[test]
    fn leaves_everything_else_to_the_general_decoder() {
        for text in [
            r#"{"code":"11","flag":0}"#,
            r#"{"code":1.0}"#,
            r#"{"code":01}"#,
            r#"{"code":2147483648}"#,
            r#"{"code":-2147483648, "flag" : 1 }"#,
            r#"{"code":1,"code":2}"#,
            r#"{"code":1,}"#,
            r#"{"code":null}"#,
            r#"{"extFields":null}"#,
            r#"{"extFields":{"n":5,"b":true,"z":null}}"#,
            r#"{"extFields":{"a":"x","a":"y"}}"#,
            r#"{"extFields":{"s":"\ud83d\ude00","t":"\ud83d"}}"#,
            r#"{"extFields":{"e":"\x"}}"#,
            r#"{"extFields":{"e":"\u00g1"}}"#,
            r#"{"extFields":{"e":"\u+041"}}"#,
            r#"{"extFields":{"k\u0041":"v"}}"#,
            r#"{"remark":"","unknown":[1],"language":"KLINGON"}"#,
            r#"{"remark":"a\"b\\c\/d\b\f\n\r\t\u00e9"}"#,
            "{\"remark\":\"tab\tinside\"}",
            "{}",
            " {} ",
            "{} x",
            "[1]",
            "",
        ] {
            let (fast, general) = both(text);
            assert!(fast.is_none() || fast == general, "{text}: {fast:?} vs {general:?}");
        }
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![".{0,60}", "[\\u{0}-\\u{7f}]{0,60}", "[a-zA-Z0-9]{0,50}"]
    }

    proptest! {
        #[test]
        fn agrees_with_the_general_decoder(
            code in any::<i32>(),
            opaque in any::<i32>(),
            flag in any::<i32>(),
            version in any::<i32>(),
            language in 0u8..16,
            remark in proptest::option::of(text()),
            ext in proptest::collection::vec((text(), text()), 0..16),
        ) {
            let mut h = RemotingHeader {
                code, language: LanguageCode(language), version, opaque, flag, remark, ext_fields: ExtFields::new(),
            };
            for (k, v) in ext {
                h.ext_fields.insert(k, v);
            }
            let mut out = Vec::new();
            h.encode(SerializeType::Json, &mut out).unwrap();
            let (fast, general) = both(std::str::from_utf8(&out).unwrap());
            prop_assert!(fast.is_some());
            prop_assert_eq!(&fast, &general);
            let fast = fast.unwrap();
            prop_assert_eq!(fast.ext_fields, h.ext_fields);
            prop_assert_eq!(fast.remark, h.remark.filter(|r| !r.is_empty()));
        }
    }
}
