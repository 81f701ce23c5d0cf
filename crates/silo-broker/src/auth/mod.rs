//! Access control, as RocketMQ 5.3 has it ("ACL 2.0"), for every front end.
//!
//! Authentication: a request is signed by a user (its access key and an HMAC of the request
//! under its secret key, see `silo_wire::signature`); the broker checks that the user exists,
//! is enabled and that the signature is right. Authorization: the resources a request names
//! (the request table's `access` column) are checked against the user's ACL; a super user may do
//! anything. Both are off by default (`authenticationEnabled`, `authorizationEnabled`), and a
//! refusal is NO_PERMISSION with the words of Java's broker, so that clients and tools report
//! it as they do against Java.
//!
//! Nothing here knows about frames beyond their fields and body, nor about sockets: the
//! remoting dispatcher and the name server ask [`Auth::admit`]; the gRPC front end reads
//! [`Auth::metadata`] for its own signature scheme and asks [`Auth::authorize`] what the
//! signer may do; the web console checks passwords with [`Auth::check_password`].

pub mod access;
pub mod json;
pub mod metadata;
pub mod model;

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

use silo_wire::Frame;
use silo_wire::signature::{ACCESS_KEY, SIGNATURE, UNIQUE_KEY_QUERY};

use self::access::{Access, Need};
use self::metadata::{AuthMetadata, MetadataError, View};
use self::model::{Action, Decision, Target, User, UserStatus, UserType};
use crate::config::AuthSettings;

/// The protocol version of RocketMQ 4.9.3 (the ordinal of its `MQVersion`): clients up to it
/// sign before adding `_UNIQUE_KEY_QUERY`, so that field is not part of what they signed.
const V4_9_3: i32 = 399;

/// Longest user name echoed in a refusal (a real one is a few dozen characters; a request may
/// carry kilobytes).
const MAX_ECHOED_NAME: usize = 128;

/// A refusal's words (the code is always NO_PERMISSION).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

/// Access control of one broker (or name server).
#[derive(Debug)]
pub struct Auth {
    pub settings: AuthSettings,
    pub metadata: AuthMetadata,
    /// The cluster, the resource of cluster-wide requests.
    cluster: String,
}

impl Auth {
    /// The broker's: users and ACLs in `file` (`config/auth.json`), the users broker.conf
    /// names added if missing.
    pub fn open(
        settings: AuthSettings,
        file: Option<(Arc<dyn silo_store::fs::Fs>, PathBuf)>,
        cluster: &str,
    ) -> Result<Self, MetadataError> {
        let metadata = AuthMetadata::open(file, &settings.users)?;
        Ok(Self { settings, metadata, cluster: cluster.to_owned() })
    }

    /// Whether either check is on (otherwise [`Auth::admit`] admits everything at once).
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.settings.enabled || self.settings.authorization_enabled
    }

    /// Checks a remoting request: its signature, then what it touches (`access`, from the
    /// request table) against the signer's ACL. `from`: the peer's address.
    pub fn admit(&self, frame: &Frame, access: &Access, from: IpAddr) -> Result<(), Refusal> {
        if !self.is_on() {
            return Ok(());
        }
        let view = self.metadata.view();
        let code = frame.header.code;
        let signer = frame.header.ext_fields.get(ACCESS_KEY);
        if self.settings.enabled && !whitelisted(&self.settings.authentication_whitelist, code) {
            let result = self.check_signature(&view, frame, signer);
            if let Err(refusal) = &result {
                tracing::info!(user = signer.map(echo), request = code, %from, reason = %refusal,
                    "request refused: not authenticated");
            }
            result?;
        }
        if self.settings.authorization_enabled && !whitelisted(&self.settings.authorization_whitelist, code) {
            let needs = access.needs(frame, &self.cluster).map_err(|e| Refusal(e.to_string()))?;
            let result = self.check_needs(&view, signer, &needs, from);
            if let Err(refusal) = &result {
                tracing::info!(user = signer.map(echo), request = code, %from, reason = %refusal,
                    "request refused: not authorized");
            }
            result?;
        }
        Ok(())
    }

    fn check_signature(&self, view: &View, frame: &Frame, signer: Option<&str>) -> Result<(), Refusal> {
        let username = signer.filter(|s| !s.is_empty()).ok_or_else(|| Refusal("username cannot be null.".into()))?;
        let user = known_user(view, username)?;
        let fields = &frame.header.ext_fields;
        let signature = fields.get(SIGNATURE).ok_or_else(|| Refusal("check signature failed.".into()))?;
        let skip = (frame.header.version <= V4_9_3).then_some(UNIQUE_KEY_QUERY);
        if !silo_wire::signature::verify(fields, &frame.body, user.password.as_bytes(), signature, skip) {
            return Err(Refusal("check signature failed.".into()));
        }
        Ok(())
    }

    fn check_needs(&self, view: &View, signer: Option<&str>, needs: &[Need<'_>], from: IpAddr) -> Result<(), Refusal> {
        if needs.is_empty() {
            return Ok(());
        }
        // Java fails its own check when a request names resources but no user.
        let username = signer
            .ok_or_else(|| Refusal("Authorization failed. Please verify your access rights and try again.".into()))?;
        for need in needs {
            self.decide(view, username, need.target(), need.actions, from)?;
        }
        Ok(())
    }

    fn decide(
        &self,
        view: &View,
        username: &str,
        target: Target<'_>,
        actions: &[Action],
        from: IpAddr,
    ) -> Result<(), Refusal> {
        let user = view.user(username).ok_or_else(|| Refusal(format!("User:{} not found.", echo(username))))?;
        if user.user_type == UserType::Super {
            return Ok(());
        }
        let subject = metadata::user_subject(username);
        let from = from.to_canonical();
        let refuse =
            |detail: &str| Refusal(format!("{subject} has no permission to access {target} from {from}, {detail}"));
        let acl = view.acl(&subject).ok_or_else(|| refuse("no matched policies."))?;
        match acl.deciding_entry(target, actions, Some(from)) {
            None => Err(refuse("no matched policies.")),
            Some(e) if e.decision == Decision::Deny => Err(refuse("the decision is deny.")),
            Some(_) => Ok(()),
        }
    }

    /// Checks a user name and password given directly (HTTP Basic authentication at the web
    /// console): the user exists, is enabled, and the password is its secret key, compared in
    /// time that does not depend on where the bytes differ.
    pub fn check_password(&self, username: &str, password: &str) -> Result<(), Refusal> {
        use subtle::ConstantTimeEq;
        let view = self.metadata.view();
        let user = known_user(&view, username)?;
        if !bool::from(user.password.as_bytes().ct_eq(password.as_bytes())) {
            tracing::info!(user = echo(username), "console sign-in refused: wrong password");
            return Err(Refusal("check signature failed.".into()));
        }
        Ok(())
    }

    /// Whether `username` (already authenticated, or `None`) may do what `needs` names, from
    /// `from`: for a front end that reads its requests' resources itself (gRPC, the console).
    /// Always yes with authorization off.
    pub fn authorize(&self, username: Option<&str>, needs: &[Need<'_>], from: IpAddr) -> Result<(), Refusal> {
        if !self.settings.authorization_enabled {
            return Ok(());
        }
        let result = self.check_needs(&self.metadata.view(), username, needs, from);
        if let Err(refusal) = &result {
            tracing::info!(user = username.map(echo), %from, reason = %refusal, "request refused: not authorized");
        }
        result
    }

    /// Whether the request's signer is a super user, or no one signed it (authentication off):
    /// only they may create or change super users.
    #[must_use]
    pub fn signed_by_super_or_nobody(&self, frame: &Frame) -> bool {
        match frame.header.ext_fields.get(ACCESS_KEY).filter(|k| !k.is_empty()) {
            None => true,
            Some(user) => self.metadata.is_super(user),
        }
    }
}

fn known_user<'v>(view: &'v View, username: &str) -> Result<&'v User, Refusal> {
    let user = view.user(username).ok_or_else(|| Refusal(format!("User:{} is not found.", echo(username))))?;
    if user.user_status == UserStatus::Disable {
        return Err(Refusal(format!("User:{username} is disabled.")));
    }
    Ok(user)
}

/// A user name as a refusal or log line shows it: cut short if it is long.
fn echo(name: &str) -> &str {
    match name.char_indices().nth(MAX_ECHOED_NAME) {
        Some((end, _)) => name.get(..end).unwrap_or(name),
        None => name,
    }
}

fn whitelisted(list: &[String], code: i32) -> bool {
    !list.is_empty() && list.iter().any(|c| c.parse::<i32>().is_ok_and(|c| c == code))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use silo_wire::RemotingHeader;
    use silo_wire::signature::sign;

    use super::json::{AclInfo, UserInfo};
    use super::*;

    fn auth() -> Auth {
        let settings = AuthSettings {
            enabled: true,
            authorization_enabled: true,
            users: vec![User {
                username: "admin".into(),
                password: "root-pw".into(),
                user_type: UserType::Super,
                user_status: UserStatus::Enable,
            }],
            ..Default::default()
        };
        let auth = Auth::open(settings, None, "DefaultCluster").unwrap();
        let alice = UserInfo { username: Some("alice".into()), password: Some("pw".into()), ..Default::default() };
        auth.metadata.create_user(&alice).unwrap();
        let body = r#"{"policies":[{"entries":[{"resource":"Topic:orders","actions":["Pub"],"decision":"Allow"}]}]}"#;
        auth.metadata.put_acl("User:alice", &serde_json::from_str::<AclInfo>(body).unwrap()).unwrap();
        auth
    }

    fn request(topic: &'static str, signer: Option<(&str, &str)>) -> Frame {
        let mut header = RemotingHeader::request(310, 7);
        header.ext_fields.insert("b", topic);
        header.ext_fields.insert("a", "pg");
        if let Some((user, secret)) = signer {
            let c = silo_wire::signature::Credentials { access_key: user.into(), secret_key: secret.into() };
            sign(&mut header.ext_fields, b"hello", &c, None);
        }
        Frame { serialize: silo_wire::SerializeType::Json, header, body: bytes::Bytes::from_static(b"hello") }
    }

    const SEND: Access = Access::Custom(access::send_v2);
    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn each_refusal_says_what_javas_broker_says() {
        let auth = auth();
        let refusal = |f: &Frame| auth.admit(f, &SEND, LOCAL).unwrap_err().0;
        assert!(auth.admit(&request("orders", Some(("alice", "pw"))), &SEND, LOCAL).is_ok());
        assert!(auth.admit(&request("anything", Some(("admin", "root-pw"))), &SEND, LOCAL).is_ok());
        assert_eq!(refusal(&request("orders", None)), "username cannot be null.");
        assert_eq!(refusal(&request("orders", Some(("alice", "guess")))), "check signature failed.");
        assert_eq!(refusal(&request("orders", Some(("mallory", "x")))), "User:mallory is not found.");
        assert_eq!(
            refusal(&request("payments", Some(("alice", "pw")))),
            "User:alice has no permission to access Topic:payments from 127.0.0.1, no matched policies."
        );
        // A signed request replayed with another body, or cut short, no longer verifies.
        let mut replayed = request("orders", Some(("alice", "pw")));
        replayed.body = bytes::Bytes::from_static(b"hellO");
        assert_eq!(refusal(&replayed), "check signature failed.");
        replayed.body = bytes::Bytes::from_static(b"hell");
        assert_eq!(refusal(&replayed), "check signature failed.");
        // A huge access key is not echoed whole.
        let huge: &'static str = Box::leak("k".repeat(10_000).into_boxed_str());
        assert!(refusal(&request("orders", Some((huge, "x")))).len() < 200);
        auth.metadata
            .update_user(&UserInfo {
                username: Some("alice".into()),
                user_status: Some("disable".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(refusal(&request("orders", Some(("alice", "pw")))), "User:alice is disabled.");
    }

    #[test]
    fn off_admits_everything_and_whitelists_skip_a_check() {
        let mut auth = auth();
        auth.settings.enabled = false;
        auth.settings.authorization_enabled = false;
        assert!(auth.admit(&request("payments", None), &SEND, LOCAL).is_ok());
        auth.settings.enabled = true;
        auth.settings.authentication_whitelist = vec!["310".into()];
        assert!(auth.admit(&request("payments", None), &SEND, LOCAL).is_ok());
        auth.settings.authorization_enabled = true;
        assert_eq!(
            auth.admit(&request("payments", None), &SEND, LOCAL).unwrap_err().0,
            "Authorization failed. Please verify your access rights and try again."
        );
        assert!(auth.admit(&request("payments", None), &Access::Open, LOCAL).is_ok());
    }
}
