//! Users and ACLs as JSON: the bodies of the admin requests (`UserInfo`, `AclInfo`, as Java's
//! tools send and read them) and, in the same shapes, the broker's own file of them.

use serde::{Deserialize, Serialize};

use super::model::{Acl, Action, Decision, Entry, IpRange, Policy, PolicyType, Resource, User, UserStatus, UserType};

/// A user as the admin requests carry it; every field optional (an update sends only what
/// changes).
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_status: Option<String>,
}

impl std::fmt::Debug for UserInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserInfo")
            .field("username", &self.username)
            .field("user_type", &self.user_type)
            .field("user_status", &self.user_status)
            .finish_non_exhaustive()
    }
}

/// An ACL as the admin requests carry it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AclInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default)]
    pub policies: Vec<PolicyInfo>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_type: Option<String>,
    #[serde(default)]
    pub entries: Vec<PolicyEntryInfo>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEntryInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default)]
    pub actions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
}

impl From<&User> for UserInfo {
    fn from(u: &User) -> Self {
        Self {
            username: Some(u.username.clone()),
            password: Some(u.password.clone()),
            user_type: Some(u.user_type.name().to_owned()),
            user_status: Some(u.user_status.name().to_owned()),
        }
    }
}

impl From<&Acl> for AclInfo {
    fn from(acl: &Acl) -> Self {
        Self {
            subject: Some(acl.subject.clone()),
            policies: acl
                .policies
                .iter()
                .map(|p| PolicyInfo {
                    policy_type: Some(p.policy_type.name().to_owned()),
                    entries: p
                        .entries
                        .iter()
                        .map(|e| PolicyEntryInfo {
                            resource: Some(e.resource.key()),
                            actions: e.actions.iter().map(|a| a.name().to_owned()).collect(),
                            source_ips: e.source_ips.iter().map(|r| r.text.clone()).collect(),
                            decision: Some(e.decision.name().to_owned()),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// What is wrong with an ACL sent to be stored (Java's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclInvalid {
    #[error("The policies is empty.")]
    NoPolicies,
    #[error("The resource is null.")]
    NoResource,
    #[error("The actions is empty.")]
    NoActions,
    #[error("The actions can not be Any.")]
    AnyAction,
    #[error("The source ip is empty.")]
    EmptySourceIp,
    #[error("The source ip is invalid.")]
    BadSourceIp,
    #[error("The decision is null or illegal.")]
    NoDecision,
}

impl AclInfo {
    /// The policies, checked as Java checks them before storing: unknown action names are
    /// dropped, a policy without a type is a custom one, a policy without entries is skipped.
    pub fn policies(&self) -> Result<Vec<Policy>, AclInvalid> {
        let mut out = Vec::new();
        for p in &self.policies {
            if p.entries.is_empty() {
                continue;
            }
            let policy_type = p.policy_type.as_deref().and_then(PolicyType::from_name).unwrap_or(PolicyType::Custom);
            let mut entries = Vec::with_capacity(p.entries.len());
            for e in &p.entries {
                let resource = e.resource.as_deref().and_then(Resource::parse).ok_or(AclInvalid::NoResource)?;
                let actions: Vec<Action> = e.actions.iter().filter_map(|a| Action::from_name(a)).collect();
                if actions.is_empty() {
                    return Err(AclInvalid::NoActions);
                }
                if actions.contains(&Action::Any) {
                    return Err(AclInvalid::AnyAction);
                }
                let mut source_ips = Vec::with_capacity(e.source_ips.len());
                for ip in &e.source_ips {
                    if ip.trim().is_empty() {
                        return Err(AclInvalid::EmptySourceIp);
                    }
                    source_ips.push(IpRange::parse(ip).ok_or(AclInvalid::BadSourceIp)?);
                }
                let decision = e.decision.as_deref().and_then(Decision::from_name).ok_or(AclInvalid::NoDecision)?;
                entries.push(Entry { resource, actions, source_ips, decision });
            }
            out.push(Policy { policy_type, entries });
        }
        if out.is_empty() {
            return Err(AclInvalid::NoPolicies);
        }
        Ok(out)
    }
}

impl UserInfo {
    /// The user type named, if it is one.
    #[must_use]
    pub fn user_type(&self) -> Option<UserType> {
        self.user_type.as_deref().and_then(UserType::from_name)
    }

    /// The user status named, if it is one.
    #[must_use]
    pub fn user_status(&self) -> Option<UserStatus> {
        self.user_status.as_deref().and_then(UserStatus::from_name)
    }
}

/// The broker's file of users and ACLs (`config/auth.json` under the store root).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AuthFile {
    #[serde(default)]
    pub users: Vec<UserInfo>,
    #[serde(default)]
    pub acls: Vec<AclInfo>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn javas_acl_body_reads_and_writes_back() {
        // What DefaultMQAdminExt.createAcl sends (fastjson, fields in name order).
        let body = r#"{"policies":[{"entries":[{"actions":["Pub","Sub","Nonsense"],"decision":"Allow","resource":"Topic:orders","sourceIps":["127.0.0.1","10.0.0.0/8"]}]}],"subject":"User:bob"}"#;
        let info: AclInfo = serde_json::from_str(body).unwrap();
        let policies = info.policies().unwrap();
        assert_eq!(policies.len(), 1);
        assert_eq!(policies[0].policy_type, PolicyType::Custom);
        assert_eq!(policies[0].entries[0].actions, vec![Action::Pub, Action::Sub]);
        let back = AclInfo::from(&Acl { subject: "User:bob".into(), policies });
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            r#"{"subject":"User:bob","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:orders","actions":["Pub","Sub"],"sourceIps":["127.0.0.1","10.0.0.0/8"],"decision":"Allow"}]}]}"#
        );
    }

    #[test]
    fn invalid_acls_are_refused_with_javas_words() {
        let check = |entry: &str| {
            let body = format!(r#"{{"policies":[{{"entries":[{entry}]}}]}}"#);
            serde_json::from_str::<AclInfo>(&body).unwrap().policies().unwrap_err()
        };
        assert_eq!(check(r#"{"actions":["Pub"],"decision":"Allow"}"#), AclInvalid::NoResource);
        assert_eq!(check(r#"{"resource":"Queue:x","actions":["Pub"],"decision":"Allow"}"#), AclInvalid::NoResource);
        assert_eq!(check(r#"{"resource":"Topic:x","actions":["Bogus"],"decision":"Allow"}"#), AclInvalid::NoActions);
        assert_eq!(check(r#"{"resource":"Topic:x","actions":["Any"],"decision":"Allow"}"#), AclInvalid::AnyAction);
        assert_eq!(check(r#"{"resource":"Topic:x","actions":["Pub"]}"#), AclInvalid::NoDecision);
        assert_eq!(
            check(r#"{"resource":"Topic:x","actions":["Pub"],"decision":"Allow","sourceIps":["1.2.3"]}"#),
            AclInvalid::BadSourceIp
        );
        assert_eq!(
            serde_json::from_str::<AclInfo>(r#"{"policies":[]}"#).unwrap().policies().unwrap_err(),
            AclInvalid::NoPolicies
        );
    }
}
