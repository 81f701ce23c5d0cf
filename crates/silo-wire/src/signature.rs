//! Request signatures: how a remoting request proves who sent it (RocketMQ's access-key
//! scheme, the same from 4.4 to 5.3).
//!
//! The signer adds `AccessKey` (and, if it has one, `SecurityToken`) to the header's fields,
//! then computes HMAC-SHA1, keyed with the secret key, over the values of every field sorted by
//! key (UTF-16 order, as a Java `TreeMap` sorts them), `Signature` left out, followed by the
//! body. The signature travels Base64-encoded in the field `Signature`. Nothing is concatenated
//! into a buffer: the MAC takes the pieces in order.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};

use crate::header::ExtFields;

/// The field that names the signer.
pub const ACCESS_KEY: &str = "AccessKey";
/// The field that carries the signature.
pub const SIGNATURE: &str = "Signature";
/// The optional field of a temporary credential.
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// Left out of the signed content of requests from clients of version 4.9.3 and older, which
/// added it after signing.
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// The length of an HMAC-SHA1.
pub const MAC_LEN: usize = 20;

/// The longest Base64 signature compared: a real one is 28 characters; anything longer cannot
/// match and is refused without being decoded.
const MAX_SIGNATURE_B64: usize = 64;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// An access key and its secret key: who signs, and the key of the MAC.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    pub access_key: String,
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret never reaches a log.
        f.debug_struct("Credentials").field("access_key", &self.access_key).finish_non_exhaustive()
    }
}

/// The MAC of a request as its signer computed it: `fields` sorted by key (the last of a
/// repeated key, as Java's map keeps it), `Signature` and any key `skip` names left out, then
/// `body`.
/// `None` only if the MAC refuses the key, which HMAC never does (it takes keys of any length).
#[must_use]
pub fn mac(fields: &ExtFields, body: &[u8], secret: &[u8], skip: Option<&str>) -> Option<[u8; MAC_LEN]> {
    let mut mac = HmacSha1::new_from_slice(secret).ok()?;
    // Last occurrence first, so that after a stable sort the first of equal keys is the one
    // that counts.
    let mut signed: Vec<(&str, &str)> =
        fields.iter().rev().filter(|&(k, _)| k != SIGNATURE && Some(k) != skip).collect();
    signed.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    signed.dedup_by(|later, first| later.0 == first.0);
    for (_, value) in signed {
        mac.update(value.as_bytes());
    }
    mac.update(body);
    Some(mac.finalize().into_bytes().into())
}

/// Signs a request: adds `AccessKey` (and `SecurityToken`), then `Signature`.
pub fn sign(fields: &mut ExtFields, body: &[u8], credentials: &Credentials, security_token: Option<&str>) {
    fields.insert(ACCESS_KEY, credentials.access_key.clone());
    if let Some(token) = security_token {
        fields.insert(SECURITY_TOKEN, token.to_owned());
    }
    if let Some(mac) = mac(fields, body, credentials.secret_key.as_bytes(), None) {
        fields.insert(SIGNATURE, STANDARD.encode(mac));
    }
}

/// Whether `signature` (Base64, as sent) is the MAC of the request under `secret`. The
/// comparison takes the same time whatever the bytes.
#[must_use]
pub fn verify(fields: &ExtFields, body: &[u8], secret: &[u8], signature: &str, skip: Option<&str>) -> bool {
    if signature.len() > MAX_SIGNATURE_B64 {
        return false;
    }
    let mut sent = [0u8; MAX_SIGNATURE_B64];
    let Ok(len) = STANDARD.decode_slice(signature, &mut sent) else { return false };
    let Some(expected) = mac(fields, body, secret, skip) else { return false };
    let sent = sent.get(..len).unwrap_or_default();
    // Equal lengths first (a length is not secret), then every byte, without an early exit.
    sent.len() == expected.len() && sent.iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_signed_request_verifies_and_any_change_breaks_it() {
        let mut fields: ExtFields = [("topic", "orders"), ("queueId", "3"), ("b", "x")].into_iter().collect();
        let alice = Credentials { access_key: "alice".into(), secret_key: "s3cret".into() };
        sign(&mut fields, b"body", &alice, None);
        let sig = fields.get(SIGNATURE).unwrap().to_owned();
        assert_eq!(sig.len(), 28);
        assert!(verify(&fields, b"body", b"s3cret", &sig, None));
        assert!(!verify(&fields, b"bodY", b"s3cret", &sig, None));
        assert!(!verify(&fields, b"body", b"guess", &sig, None));
        let mut changed = fields.clone();
        changed.insert("queueId", "4");
        assert!(!verify(&changed, b"body", b"s3cret", &sig, None));
        assert!(!verify(&fields, b"body", b"s3cret", "not base64!", None));
        assert!(!verify(&fields, b"body", b"s3cret", &"A".repeat(1000), None));
        assert!(!verify(&fields, b"body", b"s3cret", "", None));
    }

    #[test]
    fn content_is_the_sorted_values_then_the_body() {
        // What Java's hook signs for these fields: values in key order, then the body.
        let fields: ExtFields = [("b", "2"), ("AccessKey", "ak"), ("a", "1")].into_iter().collect();
        let mut by_hand = HmacSha1::new_from_slice(b"sk").unwrap();
        by_hand.update(b"ak12body");
        let want: [u8; MAC_LEN] = by_hand.finalize().into_bytes().into();
        assert_eq!(mac(&fields, b"body", b"sk", None), Some(want));
        // A repeated key counts once, with its last value; a skipped key not at all.
        let mut repeated = fields.clone();
        repeated.push("a", "0");
        repeated.push("a", "1");
        repeated.push(UNIQUE_KEY_QUERY, "true");
        assert_eq!(mac(&repeated, b"body", b"sk", Some(UNIQUE_KEY_QUERY)), Some(want));
    }

    #[test]
    fn keys_sort_as_java_strings_do() {
        // U+FF5E sorts before U+1F600 in UTF-8 byte order but after it in UTF-16.
        let fields: ExtFields = [("\u{1F600}", "smile"), ("\u{FF5E}", "tilde")].into_iter().collect();
        let mut by_hand = HmacSha1::new_from_slice(b"k").unwrap();
        by_hand.update("smiletilde".as_bytes());
        let want: [u8; MAC_LEN] = by_hand.finalize().into_bytes().into();
        assert_eq!(mac(&fields, b"", b"k", None), Some(want));
    }
}
