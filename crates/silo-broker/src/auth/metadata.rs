//! The users and ACLs a broker knows, kept in `config/auth.json` under the store root and
//! changed only through the admin requests (and, at start, the users broker.conf names).
//!
//! Every change is written to the file (atomically, fsynced, the previous version kept as a
//! backup) before it takes effect and before it is acknowledged: a change the admin tool saw
//! succeed survives a crash, and one that could not be stored is refused and not applied.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use silo_store::config_file::{read_json, write_json_atomic};
use silo_store::fs::Fs;

use super::json::{AclInfo, AclInvalid, AuthFile, UserInfo};
use super::model::{Acl, PolicyType, Resource, User, UserStatus, UserType};

/// Why a change was refused, in Java's words.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// Java's authentication or authorization exception: NO_PERMISSION.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    InvalidAcl(#[from] AclInvalid),
    #[error("cannot store the change: {0}")]
    Store(#[from] silo_store::StoreError),
}

impl MetadataError {
    fn refused(text: impl Into<String>) -> Self {
        Self::Refused(text.into())
    }
}

#[derive(Debug, Default, Clone)]
struct State {
    users: BTreeMap<String, User>,
    /// By subject (`User:alice`).
    acls: BTreeMap<String, Acl>,
}

/// A consistent view of the users and ACLs (later changes do not show in it).
#[derive(Debug, Clone)]
pub struct View(Arc<State>);

impl View {
    #[must_use]
    pub fn user(&self, username: &str) -> Option<&User> {
        self.0.users.get(username)
    }

    #[must_use]
    pub fn acl(&self, subject: &str) -> Option<&Acl> {
        self.0.acls.get(subject)
    }
}

/// The users and ACLs.
#[derive(Debug)]
pub struct AuthMetadata {
    state: RwLock<Arc<State>>,
    /// Serialises changes: each reads the current state, writes the file, then publishes.
    changing: Mutex<()>,
    /// `None`: kept in memory only (a name server without a store).
    file: Option<(Arc<dyn Fs>, PathBuf)>,
}

/// The subject key of a user's ACL.
#[must_use]
pub fn user_subject(username: &str) -> String {
    format!("User:{username}")
}

/// The user a subject key names (`User:alice`: `alice`); `None` for another kind of subject.
#[must_use]
pub fn subject_user(subject: &str) -> Option<&str> {
    let (kind, name) = subject.split_once(':').unwrap_or((subject, ""));
    kind.eq_ignore_ascii_case("User").then_some(name)
}

impl AuthMetadata {
    /// Loads `file` (a missing file is an empty set), then adds each of `initial` that is not
    /// there yet, as Java does for `initAuthenticationUser` and the inner credentials: an
    /// operator's later change to such a user is kept across restarts.
    pub fn open(file: Option<(Arc<dyn Fs>, PathBuf)>, initial: &[User]) -> Result<Self, MetadataError> {
        let mut state = State::default();
        if let Some((fs, path)) = &file
            && let Some(stored) = read_json::<AuthFile>(&**fs, path)?
        {
            for info in stored.users {
                if let Some(user) = stored_user(&info) {
                    state.users.insert(user.username.clone(), user);
                }
            }
            for info in stored.acls {
                let Some(subject) = info.subject.clone() else { continue };
                match info.policies() {
                    Ok(policies) => {
                        state.acls.insert(subject.clone(), Acl { subject, policies });
                    }
                    Err(e) => tracing::warn!(%subject, error = %e, "stored ACL is invalid; ignored"),
                }
            }
        }
        let metadata = Self { state: RwLock::new(Arc::new(state)), changing: Mutex::new(()), file };
        let missing: Vec<&User> = initial.iter().filter(|u| metadata.user(&u.username).is_none()).collect();
        if !missing.is_empty() {
            metadata.change(|s| {
                for u in missing {
                    s.users.insert(u.username.clone(), u.clone());
                }
                Ok(())
            })?;
        }
        Ok(metadata)
    }

    fn snapshot(&self) -> Arc<State> {
        Arc::clone(&self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// The users and ACLs as they are now, to read without copying.
    #[must_use]
    pub fn view(&self) -> View {
        View(self.snapshot())
    }

    /// Applies `f` to a copy of the state, stores the copy, then publishes it.
    fn change(&self, f: impl FnOnce(&mut State) -> Result<(), MetadataError>) -> Result<(), MetadataError> {
        let _one = self.changing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = State::clone(&self.snapshot());
        f(&mut next)?;
        if let Some((fs, path)) = &self.file {
            let file = AuthFile {
                users: next.users.values().map(UserInfo::from).collect(),
                acls: next.acls.values().map(AclInfo::from).collect(),
            };
            write_json_atomic(&**fs, path, &file)?;
        }
        *self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(next);
        Ok(())
    }

    /// The user named `username`.
    #[must_use]
    pub fn user(&self, username: &str) -> Option<User> {
        self.snapshot().users.get(username).cloned()
    }

    /// Whether `username` is a super user.
    #[must_use]
    pub fn is_super(&self, username: &str) -> bool {
        self.snapshot().users.get(username).is_some_and(|u| u.user_type == UserType::Super)
    }

    /// The ACL of `subject`.
    #[must_use]
    pub fn acl(&self, subject: &str) -> Option<Acl> {
        self.snapshot().acls.get(subject).cloned()
    }

    /// Users whose name contains `filter` (all without one), by name.
    #[must_use]
    pub fn users(&self, filter: Option<&str>) -> Vec<User> {
        let filter = filter.filter(|f| !f.trim().is_empty());
        self.snapshot().users.values().filter(|u| filter.is_none_or(|f| u.username.contains(f))).cloned().collect()
    }

    /// ACLs whose subject contains `subject_filter`, each with only the entries whose resource
    /// contains `resource_filter` (all of them when the subject itself contains it), as
    /// Java's `listAcl` filters.
    #[must_use]
    pub fn acls(&self, subject_filter: Option<&str>, resource_filter: Option<&str>) -> Vec<Acl> {
        let subject_filter = subject_filter.filter(|f| !f.trim().is_empty());
        let resource_filter = resource_filter.filter(|f| !f.trim().is_empty());
        let mut out = Vec::new();
        for acl in self.snapshot().acls.values() {
            if subject_filter.is_some_and(|f| !acl.subject.contains(f)) {
                continue;
            }
            let mut acl = acl.clone();
            if let Some(f) = resource_filter.filter(|f| !acl.subject.contains(f)) {
                for p in &mut acl.policies {
                    p.entries.retain(|e| e.resource.key().contains(f));
                }
                acl.policies.retain(|p| !p.entries.is_empty());
            }
            if !acl.policies.is_empty() {
                out.push(acl);
            }
        }
        out
    }

    /// Creates a user (normal and enabled unless `info` says otherwise).
    pub fn create_user(&self, info: &UserInfo) -> Result<(), MetadataError> {
        let username = info.username.clone().filter(|u| !u.trim().is_empty());
        let username = username.ok_or_else(|| MetadataError::refused("username can not be blank"))?;
        let password = info.password.clone().filter(|p| !p.trim().is_empty());
        let password = password.ok_or_else(|| MetadataError::refused("password can not be blank"))?;
        self.change(|s| {
            if s.users.contains_key(&username) {
                return Err(MetadataError::refused("The user is existed"));
            }
            let user = User {
                username: username.clone(),
                password,
                user_type: info.user_type().unwrap_or(UserType::Normal),
                user_status: info.user_status().unwrap_or(UserStatus::Enable),
            };
            s.users.insert(username, user);
            Ok(())
        })
    }

    /// Changes what `info` names of an existing user (a blank password is left as it was).
    pub fn update_user(&self, info: &UserInfo) -> Result<(), MetadataError> {
        let username = info.username.clone().filter(|u| !u.trim().is_empty());
        let username = username.ok_or_else(|| MetadataError::refused("username can not be blank"))?;
        self.change(|s| {
            let user = s.users.get_mut(&username).ok_or_else(|| MetadataError::refused("The user is not exist"))?;
            if let Some(p) = info.password.as_ref().filter(|p| !p.trim().is_empty()) {
                user.password.clone_from(p);
            }
            if let Some(t) = info.user_type() {
                user.user_type = t;
            }
            if let Some(st) = info.user_status() {
                user.user_status = st;
            }
            Ok(())
        })
    }

    /// Deletes a user and its ACL (nothing to do if there is no such user).
    pub fn delete_user(&self, username: &str) -> Result<(), MetadataError> {
        if username.trim().is_empty() {
            return Err(MetadataError::refused("username can not be blank"));
        }
        if self.user(username).is_none() && self.acl(&user_subject(username)).is_none() {
            return Ok(());
        }
        self.change(|s| {
            s.users.remove(username);
            s.acls.remove(&user_subject(username));
            Ok(())
        })
    }

    /// Creates or extends the ACL of `subject` with `info`'s policies (Java's `createAcl` and
    /// `updateAcl` do the same).
    pub fn put_acl(&self, subject: &str, info: &AclInfo) -> Result<(), MetadataError> {
        let policies = info.policies()?;
        self.change(|s| {
            check_subject(s, subject)?;
            match s.acls.get_mut(subject) {
                Some(acl) => acl.merge(policies),
                None => {
                    s.acls.insert(subject.to_owned(), Acl { subject: subject.to_owned(), policies });
                }
            }
            Ok(())
        })
    }

    /// Deletes the entry for `resource` from `subject`'s ACL (the whole ACL without a resource,
    /// or when nothing is left of it).
    pub fn delete_acl(
        &self,
        subject: &str,
        policy_type: Option<PolicyType>,
        resource: Option<&Resource>,
    ) -> Result<(), MetadataError> {
        self.change(|s| {
            check_subject(s, subject).map_err(|_| MetadataError::refused("The subject is not exist."))?;
            let acl = s.acls.get_mut(subject).ok_or_else(|| MetadataError::refused("The acl is not exist."))?;
            if let Some(resource) = resource {
                acl.remove_entry(policy_type.unwrap_or(PolicyType::Custom), resource);
            }
            if resource.is_none() || acl.policies.is_empty() {
                s.acls.remove(subject);
            }
            Ok(())
        })
    }
}

/// An ACL's subject must be a user that exists.
fn check_subject(s: &State, subject: &str) -> Result<(), MetadataError> {
    match subject_user(subject) {
        Some(name) if s.users.contains_key(name) => Ok(()),
        _ => Err(MetadataError::refused(format!("The subject of {subject} is not exist."))),
    }
}

/// A user from the file: every field must be there and make sense.
fn stored_user(info: &UserInfo) -> Option<User> {
    Some(User {
        username: info.username.clone()?,
        password: info.password.clone()?,
        user_type: info.user_type()?,
        user_status: info.user_status()?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn info(name: &str, password: Option<&str>) -> UserInfo {
        UserInfo { username: Some(name.into()), password: password.map(Into::into), ..Default::default() }
    }

    fn acl_body(entries: &str) -> AclInfo {
        serde_json::from_str(&format!(r#"{{"policies":[{{"entries":[{entries}]}}]}}"#)).unwrap()
    }

    #[test]
    fn users_and_acls_survive_a_reopen_and_initial_users_do_not_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(silo_store::fs::RealFs);
        let path = dir.path().join("config/auth.json");
        let admin = User {
            username: "admin".into(),
            password: "first".into(),
            user_type: UserType::Super,
            user_status: UserStatus::Enable,
        };
        let m = AuthMetadata::open(Some((Arc::clone(&fs), path.clone())), std::slice::from_ref(&admin)).unwrap();
        m.create_user(&info("bob", Some("pw"))).unwrap();
        assert!(
            matches!(m.create_user(&info("bob", Some("pw"))), Err(MetadataError::Refused(r)) if r == "The user is existed")
        );
        assert!(
            matches!(m.create_user(&info("carl", None)), Err(MetadataError::Refused(r)) if r == "password can not be blank")
        );
        m.put_acl("User:bob", &acl_body(r#"{"resource":"Topic:t","actions":["Pub"],"decision":"Allow"}"#)).unwrap();
        assert!(matches!(
            m.put_acl("User:nobody", &acl_body(r#"{"resource":"Topic:t","actions":["Pub"],"decision":"Allow"}"#)),
            Err(MetadataError::Refused(r)) if r == "The subject of User:nobody is not exist."
        ));
        m.update_user(&UserInfo { password: Some("second".into()), ..info("admin", None) }).unwrap();
        drop(m);
        let again = AuthMetadata::open(Some((fs, path)), &[admin]).unwrap();
        assert_eq!(again.user("admin").unwrap().password, "second");
        assert_eq!(again.user("bob").unwrap().user_type, UserType::Normal);
        assert_eq!(again.acl("User:bob").unwrap().policies[0].entries.len(), 1);
        again.delete_user("bob").unwrap();
        assert!(again.user("bob").is_none() && again.acl("User:bob").is_none());
    }

    #[test]
    fn listing_filters_as_java_does() {
        let m = AuthMetadata::open(None, &[]).unwrap();
        for u in ["alice", "bob", "alina"] {
            m.create_user(&info(u, Some("pw"))).unwrap();
        }
        let names = |f| m.users(f).into_iter().map(|u| u.username).collect::<Vec<_>>();
        assert_eq!(names(Some("ali")), ["alice", "alina"]);
        assert_eq!(names(None), ["alice", "alina", "bob"]);
        m.put_acl(
            "User:alice",
            &acl_body(
                r#"{"resource":"Topic:orders","actions":["Pub"],"decision":"Allow"},{"resource":"Group:g","actions":["Sub"],"decision":"Allow"}"#,
            ),
        )
        .unwrap();
        let acls = m.acls(Some("alice"), Some("orders"));
        assert_eq!(acls.len(), 1);
        assert_eq!(acls[0].policies[0].entries.len(), 1);
        assert!(m.acls(Some("bob"), None).is_empty());
        m.delete_acl("User:alice", None, Resource::parse("Topic:orders").as_ref()).unwrap();
        assert_eq!(m.acl("User:alice").unwrap().policies[0].entries.len(), 1);
        m.delete_acl("User:alice", None, None).unwrap();
        assert!(
            matches!(m.delete_acl("User:alice", None, None), Err(MetadataError::Refused(r)) if r == "The acl is not exist.")
        );
    }
}
