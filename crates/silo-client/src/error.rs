//! The client's errors: each says what failed and where, so that a command line can tell its
//! user what to do about it.

use std::time::Duration;

use silo_wire::{DecodeError, EncodeError};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("the connection to {addr} closed before the answer came")]
    ConnectionClosed { addr: String },
    #[error("request {code} to {addr} got no answer within {timeout:?}")]
    Timeout { addr: String, code: i32, timeout: Duration },
    /// The server answered with an error code (RocketMQ response codes, docs/protocol.md §1.7).
    #[error("{addr} refused request {request}: code {code}: {remark}")]
    Refused { addr: String, request: i32, code: i32, remark: String },
    #[error("no route for topic {topic}: {reason}")]
    NoRoute { topic: String, reason: String },
    #[error("{addr} sent an answer that does not decode: {what}")]
    BadResponse { addr: String, what: String },
    #[error("invalid address {0:?}: expected HOST:PORT")]
    BadAddress(String),
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The TLS setup (a trust file that does not read, say).
    #[error("TLS: {0}")]
    Tls(String),
    #[error(transparent)]
    Encode(#[from] EncodeError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

impl ClientError {
    /// Whether a send that failed this way may succeed on another attempt (another queue, a
    /// fresh connection): network trouble and a busy or unavailable broker, not a refusal that
    /// would repeat.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        use silo_wire::codes::response as rs;
        match self {
            Self::Connect { .. } | Self::ConnectionClosed { .. } | Self::Timeout { .. } => true,
            Self::Refused { code, .. } => {
                matches!(*code, rs::SYSTEM_ERROR | rs::SYSTEM_BUSY | rs::SERVICE_NOT_AVAILABLE | rs::TOPIC_NOT_EXIST)
            }
            _ => false,
        }
    }

    /// The response code of a refusal.
    #[must_use]
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}
