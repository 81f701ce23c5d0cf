//! Who is calling: with `authenticationEnabled`, every request must be signed as the 5.x SDKs
//! sign it when given credentials, and the signature is checked against the account's secret.
//!
//! The SDK sends `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time,
//! Signature=<hex>`, where the signature is HMAC-SHA1 with the secret key over the value of its
//! `x-mq-date-time` header. Refusals are UNAUTHORIZED with Apache's words; the secret is never
//! logged, and the comparison takes the same time whatever the bytes.

use hmac::{KeyInit, Mac};
use silo_broker::config::AuthSettings;

/// Why a request was refused (Apache's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("username cannot be null.")]
    NoUser,
    #[error("datetime is null.")]
    NoDateTime,
    #[error("authentication header is incorrect.")]
    Malformed,
    #[error("User:{0} is not found.")]
    UnknownUser(String),
    #[error("check signature failed.")]
    BadSignature,
}

/// The longest `authorization` header read (a real one is under 200 bytes).
const MAX_AUTHORIZATION_LEN: usize = 1024;

/// Checks a request's `authorization` and `x-mq-date-time` headers; the user it is signed by.
pub fn authenticate<'a>(
    settings: &'a AuthSettings,
    authorization: Option<&str>,
    date_time: Option<&str>,
) -> Result<&'a str, AuthError> {
    let Some(authorization) = authorization.filter(|a| !a.is_empty()) else { return Err(AuthError::NoUser) };
    let Some(date_time) = date_time.filter(|d| !d.is_empty()) else { return Err(AuthError::NoDateTime) };
    if authorization.len() > MAX_AUTHORIZATION_LEN {
        return Err(AuthError::Malformed);
    }
    let (_algorithm, fields) = authorization.split_once(' ').ok_or(AuthError::Malformed)?;
    let mut username = None;
    let mut signature = None;
    for field in fields.split(',') {
        let (key, value) = field.trim().split_once('=').ok_or(AuthError::Malformed)?;
        match key {
            "Credential" => username = value.split('/').next(),
            "Signature" => signature = Some(value),
            _ => {}
        }
    }
    let username = username.filter(|u| !u.is_empty()).ok_or(AuthError::NoUser)?;
    let user = settings.user(username).ok_or_else(|| AuthError::UnknownUser(username.to_owned()))?;
    let expected = signature.and_then(decode_hex).ok_or(AuthError::BadSignature)?;
    let mut mac =
        hmac::Hmac::<sha1::Sha1>::new_from_slice(user.password.as_bytes()).map_err(|_| AuthError::BadSignature)?;
    mac.update(date_time.as_bytes());
    mac.verify_slice(&expected).map_err(|_| AuthError::BadSignature)?;
    Ok(&user.username)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 128 {
        return None;
    }
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    };
    s.as_bytes().chunks(2).map(|p| Some(nibble(*p.first()?)? << 4 | nibble(*p.get(1)?)?)).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use silo_broker::config::User;

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
        let settings =
            AuthSettings { enabled: true, users: vec![User { username: "alice".into(), password: "s3cret".into() }] };
        let date = "20261201T221500Z";
        let good = signed("alice", "s3cret", date);
        assert_eq!(authenticate(&settings, Some(&good), Some(date)), Ok("alice"));
        // Hex in either case.
        let (head, hex) = good.split_once("Signature=").unwrap();
        let upper = format!("{head}Signature={}", hex.to_uppercase());
        assert_eq!(authenticate(&settings, Some(&upper), Some(date)), Ok("alice"));
        assert_eq!(authenticate(&settings, None, Some(date)), Err(AuthError::NoUser));
        assert_eq!(authenticate(&settings, Some(&good), None), Err(AuthError::NoDateTime));
        assert_eq!(authenticate(&settings, Some(&good), Some("20261201T221501Z")), Err(AuthError::BadSignature));
        let wrong = signed("alice", "guess", date);
        assert_eq!(authenticate(&settings, Some(&wrong), Some(date)), Err(AuthError::BadSignature));
        let bob = signed("bob", "s3cret", date);
        assert_eq!(authenticate(&settings, Some(&bob), Some(date)), Err(AuthError::UnknownUser("bob".into())));
        for junk in ["MQv2-HMAC-SHA1", "x", "MQv2 Credential", "MQv2 Credential=alice, Signature=zz", &"a".repeat(5000)]
        {
            assert!(authenticate(&settings, Some(junk), Some(date)).is_err(), "{junk}");
        }
    }
}
