//! Who is calling: with `authenticationEnabled`, every request must be signed as the 5.x SDKs
//! sign it when given credentials, and the signature is checked against the account's secret.
//!
//! The SDK sends `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time,
//! Signature=<hex>`, where the signature is HMAC-SHA1 with the secret key over the value of its
//! `x-mq-date-time` header. Refusals are UNAUTHORIZED with Apache's words; the secret is never
//! logged, and the comparison takes the same time whatever the bytes.

use hmac::{KeyInit, Mac};
use silo_broker::auth::Auth;
use silo_broker::auth::model::UserStatus;

/// Why a request was refused (Apache's messages, checked against its proxy 5.3.3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("username cannot be null.")]
    NoUser,
    #[error("datetime is null.")]
    NoDateTime,
    /// No space between the algorithm and the fields, or a header past any real one's size.
    #[error("authentication header is incorrect.")]
    Malformed,
    /// A field with no `=` (an empty one too).
    #[error("authentication keyValues length is incorrect, actual length=1.")]
    FieldWithoutValue,
    /// `Credential=` with nothing but slashes.
    #[error("authentication credential length is incorrect, actual length=0.")]
    EmptyCredential,
    /// A `Signature` that is not hex (the proxy fails to build its context).
    #[error("create authentication context error.")]
    SignatureNotHex,
    #[error("User:{0} is not found.")]
    UnknownUser(String),
    #[error("User:{0} is disabled.")]
    Disabled(String),
    #[error("check signature failed.")]
    BadSignature,
}

/// The longest `authorization` header read (a real one is under 200 bytes; the connection's
/// header limit, 64 KiB, bounds every header anyway).
const MAX_AUTHORIZATION_LEN: usize = 16 * 1024;

/// The longest signature decoded: an HMAC-SHA1 is 20 bytes, so anything longer fails the
/// check (as the proxy's does) without being decoded.
const MAX_SIGNATURE_HEX: usize = 128;

/// Checks a request's `authorization` and `x-mq-date-time` headers, in the proxy's order
/// (header, date, fields, user, signature); the user it is signed by.
pub fn authenticate(auth: &Auth, authorization: Option<&str>, date_time: Option<&str>) -> Result<String, AuthError> {
    let Some(authorization) = authorization.filter(|a| !a.is_empty()) else { return Err(AuthError::NoUser) };
    let Some(date_time) = date_time.filter(|d| !d.is_empty()) else { return Err(AuthError::NoDateTime) };
    if authorization.len() > MAX_AUTHORIZATION_LEN {
        return Err(AuthError::Malformed);
    }
    let (_algorithm, fields) = authorization.split_once(' ').ok_or(AuthError::Malformed)?;
    let mut username = None;
    let mut signature = None;
    // As Java's `split(",")`: trailing empty fields are dropped, others count.
    for field in fields.trim_end_matches(',').split(',') {
        let (key, value) = field.trim().split_once('=').ok_or(AuthError::FieldWithoutValue)?;
        match key {
            "Credential" => {
                // Java's `split("/")` of nothing but slashes is empty.
                if !value.is_empty() && value.chars().all(|c| c == '/') {
                    return Err(AuthError::EmptyCredential);
                }
                username = value.split('/').next();
            }
            "Signature" => {
                // Every signature field is decoded as it is read, as the proxy decodes them.
                if !is_hex(value) {
                    return Err(AuthError::SignatureNotHex);
                }
                signature = Some(value);
            }
            _ => {}
        }
    }
    let username = username.filter(|u| !u.is_empty()).ok_or(AuthError::NoUser)?;
    let view = auth.metadata.view();
    let user = view.user(username).ok_or_else(|| AuthError::UnknownUser(username.to_owned()))?;
    if user.user_status == UserStatus::Disable {
        return Err(AuthError::Disabled(username.to_owned()));
    }
    let mut expected = [0u8; MAX_SIGNATURE_HEX / 2];
    let len = signature.and_then(|s| decode_hex(s, &mut expected)).ok_or(AuthError::BadSignature)?;
    let mut mac =
        hmac::Hmac::<sha1::Sha1>::new_from_slice(user.password.as_bytes()).map_err(|_| AuthError::BadSignature)?;
    mac.update(date_time.as_bytes());
    mac.verify_slice(expected.get(..len).unwrap_or_default()).map_err(|_| AuthError::BadSignature)?;
    Ok(user.username.clone())
}

fn nibble(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Hex as Java's `Hex.decodeHex` takes it: an even number of hex digits (none is fine).
fn is_hex(s: &str) -> bool {
    s.len().is_multiple_of(2) && s.bytes().all(|b| nibble(b).is_some())
}

/// Decodes hex `s` (already [`is_hex`]) into `out`; `None` if it does not fit.
fn decode_hex(s: &str, out: &mut [u8]) -> Option<usize> {
    if s.len() / 2 > out.len() {
        return None;
    }
    for (pair, byte) in s.as_bytes().chunks(2).zip(out.iter_mut()) {
        *byte = nibble(*pair.first()?)? << 4 | nibble(*pair.get(1)?)?;
    }
    Some(s.len() / 2)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use silo_broker::auth::model::{User, UserType};
    use silo_broker::config::AuthSettings;

    use super::*;

    /// What the SDKs send, computed here with the same primitive.
    fn signed(user: &str, secret: &str, date: &str) -> String {
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(date.as_bytes());
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        format!("MQv2-HMAC-SHA1 Credential={user}, SignedHeaders=x-mq-date-time, Signature={hex}")
    }

    #[test]
    fn signatures_are_checked_as_apaches_proxy_checks_them() {
        let alice = User {
            username: "alice".into(),
            password: "s3cret".into(),
            user_type: UserType::Normal,
            user_status: UserStatus::Enable,
        };
        let settings = AuthSettings { enabled: true, users: vec![alice], ..Default::default() };
        let settings = Auth::open(settings, None, "DefaultCluster").unwrap();
        let date = "20261201T221500Z";
        let good = signed("alice", "s3cret", date);
        assert_eq!(authenticate(&settings, Some(&good), Some(date)), Ok("alice".to_owned()));
        // Hex in either case.
        let (head, hex) = good.split_once("Signature=").unwrap();
        let upper = format!("{head}Signature={}", hex.to_uppercase());
        assert_eq!(authenticate(&settings, Some(&upper), Some(date)), Ok("alice".to_owned()));
        assert_eq!(authenticate(&settings, None, Some(date)), Err(AuthError::NoUser));
        assert_eq!(authenticate(&settings, Some(&good), None), Err(AuthError::NoDateTime));
        assert_eq!(authenticate(&settings, Some(&good), Some("20261201T221501Z")), Err(AuthError::BadSignature));
        let wrong = signed("alice", "guess", date);
        assert_eq!(authenticate(&settings, Some(&wrong), Some(date)), Err(AuthError::BadSignature));
        let bob = signed("bob", "s3cret", date);
        assert_eq!(authenticate(&settings, Some(&bob), Some(date)), Err(AuthError::UnknownUser("bob".into())));
        // Each malformed header gets the words Apache's proxy 5.3.3 answered it with.
        let cases = [
            ("MQv2-HMAC-SHA1", AuthError::Malformed),
            (&*"a".repeat(5000), AuthError::Malformed),
            ("MQv2 Credential", AuthError::FieldWithoutValue),
            ("MQv2 Credential=alice,,Signature=00", AuthError::FieldWithoutValue),
            ("MQv2 Credential=/", AuthError::EmptyCredential),
            ("MQv2 Credential=alice, Signature=zz", AuthError::SignatureNotHex),
            ("MQv2 Credential=alice, Signature=abc", AuthError::SignatureNotHex),
            // Hex is read before the user is looked up, every Signature field of it.
            ("MQv2 Credential=nobody, Signature=zz", AuthError::SignatureNotHex),
            ("MQv2 Credential=alice, Signature=zz, Signature=00", AuthError::SignatureNotHex),
            ("MQv2 Credential=, Signature=00", AuthError::NoUser),
            ("MQv2 SignedHeaders=x-mq-date-time, Signature=00", AuthError::NoUser),
            ("MQv2 Credential=alice", AuthError::BadSignature),
            ("MQv2 Credential=alice, Signature=", AuthError::BadSignature),
            (&*format!("MQv2 Credential=alice, Signature={}", "ab".repeat(100)), AuthError::BadSignature),
        ];
        for (header, want) in cases {
            assert_eq!(authenticate(&settings, Some(header), Some(date)), Err(want), "{header}");
        }
        // A trailing comma, another algorithm name, more to the credential and a long unknown
        // field are all fine, as they are to the proxy.
        for ok in [
            format!("{good},"),
            good.replacen("MQv2-HMAC-SHA1", "Foo", 1),
            good.replacen("Credential=alice", "Credential=alice/2026/extra", 1),
            format!("{good}, X={}", "x".repeat(1100)),
        ] {
            assert_eq!(authenticate(&settings, Some(&ok), Some(date)), Ok("alice".to_owned()), "{ok}");
        }
    }
}
