//! The JSON writer: the header as compact JSON, keys in alphabetical order and strings escaped
//! the way fastjson writes them, into a counter for the sizing pass or into the output buffer.

use bytes::BufMut;

use super::RemotingHeader;

/// The size of the header as JSON.
pub(super) fn json_len(h: &RemotingHeader) -> usize {
    let mut counter = Counter(0);
    write_json(h, &mut counter);
    counter.0
}

/// Writes the header as JSON.
pub(super) fn encode_json<B: BufMut + ?Sized>(h: &RemotingHeader, out: &mut B) {
    write_json(h, &mut BufSink(out));
}

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

#[cfg(test)]
mod tests {
    use crate::header::{LanguageCode, RemotingHeader, SerializeType};

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
}
