//! The user and ACL admin requests (3001-3010), as `mqadmin createUser` ... `listAcl` and
//! `DefaultMQAdminExt` send them. They work whether or not the checks are on (an operator sets
//! up users before turning authentication on), and each change is stored before it is
//! acknowledged (see `auth::metadata`). Codes and words are Java's broker's.

use std::sync::Arc;

use silo_wire::Frame;
use silo_wire::body::encode_json_body;
use silo_wire::codes::response as rs;

use crate::auth::json::{AclInfo, UserInfo};
use crate::auth::metadata::MetadataError;
use crate::auth::model::{PolicyType, Resource, UserType};
use crate::broker::Broker;
use crate::connection::Outgoing;
use crate::response;

fn field<'a>(frame: &'a Frame, name: &str) -> Option<&'a str> {
    frame.header.ext_fields.get(name)
}

fn failed(opaque: i32, e: &MetadataError) -> Outgoing {
    match e {
        MetadataError::Refused(_) | MetadataError::InvalidAcl(_) => {
            response::error(opaque, rs::NO_PERMISSION, e.to_string())
        }
        MetadataError::Store(_) => {
            tracing::error!(error = %e, "cannot store a change of users or ACLs");
            response::error(opaque, rs::SYSTEM_ERROR, "An system error occurred, please try again later.")
        }
    }
}

fn done(opaque: i32, result: Result<(), MetadataError>) -> Outgoing {
    match result {
        Ok(()) => response::success(opaque),
        Err(e) => failed(opaque, &e),
    }
}

/// The user a request's header and body describe (the header's name wins, as in Java).
fn user_info(frame: &Frame) -> Result<UserInfo, Outgoing> {
    let opaque = frame.header.opaque;
    let Some(username) = field(frame, "username").filter(|u| !u.is_empty()) else {
        return Err(response::error(opaque, rs::INVALID_PARAMETER, "The username is blank"));
    };
    let mut info: UserInfo = if frame.body.is_empty() { UserInfo::default() } else { super::body(frame)? };
    info.username = Some(username.to_owned());
    Ok(info)
}

impl Broker {
    /// Only a super user (or anyone, with authentication off) may make or change super users.
    fn may_touch_super(&self, frame: &Frame) -> bool {
        self.auth.signed_by_super_or_nobody(frame)
    }

    pub(crate) fn create_user_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let info = crate::try_reply!(user_info(frame));
        if info.user_type() == Some(UserType::Super) && !self.may_touch_super(frame) {
            return response::error(opaque, rs::SYSTEM_ERROR, "The super user can only be create by super user");
        }
        done(opaque, self.auth.metadata.create_user(&info))
    }

    pub(crate) fn update_user_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let info = crate::try_reply!(user_info(frame));
        if info.user_type() == Some(UserType::Super) && !self.may_touch_super(frame) {
            return response::error(opaque, rs::SYSTEM_ERROR, "The super user can only be update by super user");
        }
        let name = info.username.as_deref().unwrap_or_default();
        match self.auth.metadata.user(name) {
            None => response::error(opaque, rs::NO_PERMISSION, "The user is not exist"),
            Some(old) if old.user_type == UserType::Super && !self.may_touch_super(frame) => {
                response::error(opaque, rs::NO_PERMISSION, "The super user can only be update by super user")
            }
            Some(_) => done(opaque, self.auth.metadata.update_user(&info)),
        }
    }

    pub(crate) fn delete_user_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let name = field(frame, "username").unwrap_or_default();
        match self.auth.metadata.user(name) {
            Some(old) if old.user_type == UserType::Super && !self.may_touch_super(frame) => {
                response::error(opaque, rs::NO_PERMISSION, "The super user can only be update by super user")
            }
            _ => done(opaque, self.auth.metadata.delete_user(name)),
        }
    }

    pub(crate) fn get_user_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(name) = field(frame, "username").filter(|u| !u.trim().is_empty()) else {
            return response::error(opaque, rs::INVALID_PARAMETER, "The username is blank");
        };
        match self.auth.metadata.user(name) {
            Some(user) => response::with_body(opaque, encode_json_body(&UserInfo::from(&user))),
            None => response::success(opaque),
        }
    }

    pub(crate) fn list_users_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let users = self.auth.metadata.users(field(frame, "filter"));
        if users.is_empty() {
            return response::success(frame.header.opaque);
        }
        let infos: Vec<UserInfo> = users.iter().map(UserInfo::from).collect();
        response::with_body(frame.header.opaque, encode_json_body(&infos))
    }

    /// AUTH_CREATE_ACL and AUTH_UPDATE_ACL: both add the body's policies to the subject's ACL.
    pub(crate) fn put_acl_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let info: AclInfo =
            if frame.body.is_empty() { AclInfo::default() } else { crate::try_reply!(super::body(frame)) };
        if info.policies.is_empty() {
            return response::error(opaque, rs::SYSTEM_ERROR, "The body of acl is null");
        }
        let subject = info.subject.as_deref().or_else(|| field(frame, "subject")).unwrap_or_default();
        if crate::auth::metadata::subject_user(subject).is_none() {
            return response::error(opaque, rs::NO_PERMISSION, "The subject type is null.");
        }
        done(opaque, self.auth.metadata.put_acl(subject, &info))
    }

    pub(crate) fn delete_acl_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let subject = field(frame, "subject").unwrap_or_default();
        if subject.is_empty() {
            return response::error(opaque, rs::NO_PERMISSION, "The subject is null.");
        }
        let policy_type = field(frame, "policyType").and_then(PolicyType::from_name);
        let resource = field(frame, "resource").and_then(Resource::parse);
        done(opaque, self.auth.metadata.delete_acl(subject, policy_type, resource.as_ref()))
    }

    pub(crate) fn get_acl_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let subject = field(frame, "subject").unwrap_or_default();
        let exists = crate::auth::metadata::subject_user(subject).is_some_and(|u| self.auth.metadata.user(u).is_some());
        if !exists {
            return response::error(opaque, rs::NO_PERMISSION, "The subject is not exist.");
        }
        match self.auth.metadata.acl(subject) {
            Some(acl) => response::with_body(opaque, encode_json_body(&AclInfo::from(&acl))),
            None => response::success(opaque),
        }
    }

    pub(crate) fn list_acls_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let acls = self.auth.metadata.acls(field(frame, "subjectFilter"), field(frame, "resourceFilter"));
        if acls.is_empty() {
            return response::success(frame.header.opaque);
        }
        let infos: Vec<AclInfo> = acls.iter().map(AclInfo::from).collect();
        response::with_body(frame.header.opaque, encode_json_body(&infos))
    }
}
