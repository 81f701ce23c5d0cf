//! The ROCKETMQ binary serialization of the header: fixed-width fields, length-prefixed remark and
//! `extFields` entries, all big-endian.

use bytes::{BufMut, Bytes};

use super::{ExtFields, LanguageCode, RemotingHeader};
use crate::error::{DecodeError, EncodeError};
use crate::ext_str::ExtStr;
use crate::reader::Reader;

/// Fixed part of the binary header.
pub const BINARY_FIXED_LEN: usize = 2 + 1 + 2 + 4 + 4 + 4 + 4;

pub(super) fn binary_len(h: &RemotingHeader) -> Result<usize, EncodeError> {
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

pub(super) fn encode_binary<B: BufMut + ?Sized>(h: &RemotingHeader, out: &mut B) -> Result<(), EncodeError> {
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
pub(super) fn decode_binary(bytes: &[u8], base: &Bytes) -> Result<RemotingHeader, DecodeError> {
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
    use crate::error::EncodeError;
    use crate::header::{LanguageCode, RemotingHeader, SerializeType};

    #[test]
    fn binary_matches_the_spec_example() {
        let h = RemotingHeader { language: LanguageCode::JAVA, ..RemotingHeader::response(0, 5, None) };
        let mut out = Vec::new();
        h.encode(SerializeType::RocketMq, &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 1, 0xDF, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(RemotingHeader::decode(SerializeType::RocketMq, &out).unwrap(), h);
    }

    #[test]
    fn binary_rejects_codes_it_cannot_carry() {
        let h = RemotingHeader::request(200_050, 1);
        assert_eq!(h.encode(SerializeType::RocketMq, &mut Vec::new()), Err(EncodeError::CodeOutOfRange(200_050)));
    }
}
