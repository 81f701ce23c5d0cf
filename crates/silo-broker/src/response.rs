//! Building responses.

use silo_wire::codes::response;
use silo_wire::custom::CustomHeader;
use silo_wire::{ExtFields, LanguageCode, RemotingHeader};

use crate::connection::{Body, Outgoing};

/// A response to the request with `opaque`.
pub fn reply(opaque: i32, code: i32, remark: Option<String>) -> Outgoing {
    let mut header = RemotingHeader::response(code, opaque, remark);
    header.language = LanguageCode::JAVA;
    Outgoing { header, body: Body::None }
}

pub fn success(opaque: i32) -> Outgoing {
    reply(opaque, response::SUCCESS, None)
}

pub fn error(opaque: i32, code: i32, remark: impl Into<String>) -> Outgoing {
    reply(opaque, code, Some(remark.into()))
}

/// REQUEST_CODE_NOT_SUPPORTED, with Java's remark.
pub fn not_supported(opaque: i32, code: i32) -> Outgoing {
    error(opaque, response::REQUEST_CODE_NOT_SUPPORTED, format!(" request type {code} not supported"))
}

pub fn with_header(opaque: i32, code: i32, h: &impl CustomHeader) -> Outgoing {
    let mut out = reply(opaque, code, None);
    h.write_ext_fields(&mut out.header.ext_fields);
    out
}

/// Like [`with_header`], writing the fields into `ext` (cleared first), such as the request's
/// own field vector, instead of a new one.
pub fn with_header_in(opaque: i32, code: i32, h: &impl CustomHeader, mut ext: ExtFields) -> Outgoing {
    ext.clear();
    h.write_ext_fields(&mut ext);
    let mut out = reply(opaque, code, None);
    out.header.ext_fields = ext;
    out
}

pub fn with_body(opaque: i32, body: Vec<u8>) -> Outgoing {
    let mut out = success(opaque);
    out.body = Body::Bytes(body.into());
    out
}
