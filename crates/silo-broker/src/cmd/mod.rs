//! Request handlers, one module per request family.

pub mod admin;
pub mod client;
pub mod namesrv;
pub mod offset;
pub mod pull;
pub mod send;
pub mod table;

use silo_wire::Frame;
use silo_wire::codes::response as rs;
use silo_wire::custom::{CustomHeader, HeaderError};

use crate::connection::Outgoing;
use crate::response;

/// Reads the request's custom header, or the error response that says which field is wrong.
pub fn header<H: CustomHeader>(frame: &Frame) -> Result<H, Outgoing> {
    H::read_ext_fields(&frame.header.ext_fields).map_err(|e: HeaderError| {
        response::error(frame.header.opaque, rs::INVALID_PARAMETER, format!("bad request header: {e}"))
    })
}

/// Parses a JSON body, or the error response.
pub fn body<T: serde::de::DeserializeOwned>(frame: &Frame) -> Result<T, Outgoing> {
    silo_wire::body::decode_json_body(&frame.body)
        .map_err(|e| response::error(frame.header.opaque, rs::INVALID_PARAMETER, format!("bad request body: {e}")))
}

/// Unwraps a `Result<_, Outgoing>` inside a handler.
#[macro_export]
macro_rules! try_reply {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(out) => return out,
        }
    };
}
