//! Admin calls the broker passes on to one online consumer (docs/protocol.md §2.9): its thread
//! stack and running state (`mqadmin consumerStatus`, GET_CONSUMER_RUNNING_INFO) and consuming
//! one stored message on demand (`mqadmin queryMsgById -g -d`, CONSUME_MESSAGE_DIRECTLY).
//!
//! A remoting consumer gets the request itself and its answer goes back unchanged, as Java's
//! broker relays it. A consumer of another front end (a 5.x SDK over gRPC) is reached through
//! [`crate::broker::FrontEnd::call_client`], which turns the call into that protocol's command
//! and its answer into a [`ClientAnswer`]; the remoting adapter encodes that as Apache's proxy
//! does.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use silo_wire::LanguageCode;

use super::BrokerError;

/// How long the broker waits for a consumer's answer (Java's `Broker2Client.callClient`).
pub const CLIENT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// What an admin asks of a consumer.
#[derive(Debug, Clone)]
pub enum ClientCall {
    /// How it consumes, and (`jstack`) its threads' stacks.
    RunningInfo { jstack: bool },
    /// Consume this stored record now, as if it had been delivered.
    VerifyMessage { record: Bytes },
}

/// A consumer's running state, as `mqadmin consumerStatus` shows it (Java's
/// `ConsumerRunningInfo`, of which a front end's consumer fills what it knows).
#[derive(Debug, Clone, Default)]
pub struct RunningInfo {
    /// `PROP_CONSUME_TYPE` and the like.
    pub properties: Vec<(String, String)>,
    pub subscriptions: Vec<Subscription>,
    /// Its threads' stacks, when asked for.
    pub jstack: Option<String>,
}

/// How the consumer's listener took a message it was handed directly (Java's `CMResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeOutcome {
    Success,
    /// Failed: it wants the message again later.
    Later,
    /// The listener returned nothing (the message did not decode).
    ReturnNull,
}

impl ConsumeOutcome {
    /// The name Java's `CMResult` has.
    pub fn java_name(self) -> &'static str {
        match self {
            ConsumeOutcome::Success => "CR_SUCCESS",
            ConsumeOutcome::Later => "CR_LATER",
            ConsumeOutcome::ReturnNull => "CR_RETURN_NULL",
        }
    }
}

/// What a front end's consumer answered.
#[derive(Debug)]
pub enum ClientAnswer {
    RunningInfo(RunningInfo),
    /// `outcome` is `None` when the client's status fits none of [`ConsumeOutcome`].
    Verified {
        outcome: Option<ConsumeOutcome>,
        remark: String,
    },
    Refused(BrokerError),
}

/// How a front end's consumer consumes, as a consumer connection list names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeType {
    /// Pulls (`CONSUME_ACTIVELY`): a simple consumer.
    Actively,
    /// Is pushed to (`CONSUME_PASSIVELY`): a push consumer.
    Passively,
}

impl ConsumeType {
    pub fn java_name(self) -> &'static str {
        match self {
            ConsumeType::Actively => "CONSUME_ACTIVELY",
            ConsumeType::Passively => "CONSUME_PASSIVELY",
        }
    }
}

/// One subscription of a front end's consumer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub topic: String,
    /// `TAG` or `SQL92`.
    pub expression_type: &'static str,
    pub expression: String,
}

/// An online consumer of another front end, as admin reads list it.
#[derive(Debug, Clone)]
pub struct FrontEndConsumer {
    pub client_id: String,
    pub client_addr: SocketAddr,
    pub language: LanguageCode,
    /// The version ordinal reported for it (§1.8).
    pub version: i32,
    pub consume_type: ConsumeType,
    pub subscriptions: Vec<Subscription>,
}
