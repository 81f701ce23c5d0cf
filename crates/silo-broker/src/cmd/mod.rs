//! Request handlers, one module per request family.

pub mod admin;
pub mod auth;
pub mod client;
pub mod client_call;
pub mod dispatch;
pub mod namesrv;
pub mod offset;
pub mod pop;
pub mod pull;
pub mod reply;
pub mod send;
pub mod table;
pub mod transaction;

use silo_wire::Frame;
use silo_wire::codes::response as rs;
use silo_wire::custom::{CustomHeader, HeaderError};

use crate::connection::Outgoing;
use crate::core::BrokerError;
use crate::response;

/// The one mapping from the core's errors to RocketMQ response codes and remarks (the remarks
/// are the Java broker's where clients or operators read them).
pub fn error_response(opaque: i32, e: &BrokerError) -> Outgoing {
    use silo_store::StoreError;
    let code = match e {
        BrokerError::BadHeader(_)
        | BrokerError::BadBody(_)
        | BrokerError::InvalidTopic(_)
        | BrokerError::NoSuchQueue { .. }
        | BrokerError::NoSuchReadQueue { .. } => rs::INVALID_PARAMETER,
        BrokerError::TopicNotExist(_) => rs::TOPIC_NOT_EXIST,
        BrokerError::WriteForbidden(_) | BrokerError::ReadForbidden(_) | BrokerError::TransactionsRejected => {
            rs::NO_PERMISSION
        }
        BrokerError::BatchRetryOrDelay
        | BrokerError::BadBatch(_)
        | BrokerError::EmptyBatch
        | BrokerError::TimerIllegal(_) => rs::MESSAGE_ILLEGAL,
        BrokerError::TimersDisabled | BrokerError::BadAttributes(_) => rs::SYSTEM_ERROR,
        BrokerError::MixedMessageTypeUnsupported | BrokerError::InvalidGroup(_) => rs::INVALID_PARAMETER,
        BrokerError::NoGroupHere | BrokerError::GroupNotExist => rs::SUBSCRIPTION_GROUP_NOT_EXIST,
        BrokerError::RetryTopicMode => rs::NO_PERMISSION,
        BrokerError::BadRequestMode(_) => rs::INVALID_PARAMETER,
        BrokerError::NoMessageAt(_) | BrokerError::StoredRecordCorrupt | BrokerError::FilterUnsupported => {
            rs::SYSTEM_ERROR
        }
        BrokerError::SubscriptionParseFailed(_) => rs::SUBSCRIPTION_PARSE_FAILED,
        BrokerError::SubscriptionNotExist { .. } => rs::SUBSCRIPTION_NOT_EXIST,
        BrokerError::SubscriptionNotLatest => rs::SUBSCRIPTION_NOT_LATEST,
        BrokerError::NoCommittedOffset => rs::QUERY_NOT_FOUND,
        BrokerError::NoConsumer(_) | BrokerError::FilterTypeUnsupported(_) | BrokerError::NoMessageAtOffset { .. } => {
            rs::SYSTEM_ERROR
        }
        BrokerError::MissingField(_) | BrokerError::QueueCount(_) | BrokerError::BadTransactionOutcome(_) => {
            rs::INVALID_PARAMETER
        }
        BrokerError::NoHalfMessage(_) | BrokerError::NotAHalfMessage { .. } | BrokerError::TransactionMismatch(_) => {
            rs::SYSTEM_ERROR
        }
        BrokerError::NoTopicHere(_) | BrokerError::TopicNotFound(_) => rs::TOPIC_NOT_EXIST,
        BrokerError::ConsumerNotOnline(_) => rs::CONSUMER_NOT_ONLINE,
        BrokerError::NoMessageForKey => rs::QUERY_NOT_FOUND,
        BrokerError::PopTooMany(_) => rs::INVALID_PARAMETER,
        BrokerError::PopNeedsTimers(_) | BrokerError::BadHandle(_) => rs::SYSTEM_ERROR,
        BrokerError::PopTimeoutTooMuch(_) => rs::POLLING_TIMEOUT,
        BrokerError::PopForbidden(_) | BrokerError::GroupConsumeDisabled(_) => rs::NO_PERMISSION,
        BrokerError::PopGroupNotExist(_) => rs::SUBSCRIPTION_GROUP_NOT_EXIST,
        BrokerError::AckQueueIllegal { .. } => rs::MESSAGE_ILLEGAL,
        BrokerError::AckOffsetIllegal { .. }
        | BrokerError::ChangeOffsetIllegal
        | BrokerError::HandleExpired { .. }
        | BrokerError::NoSuchPoppedMessage => rs::NO_MESSAGE,
        BrokerError::ClientNotOnline { .. } | BrokerError::ClientCallFailed(_) => rs::SYSTEM_ERROR,
        BrokerError::ClientCallTimeout { .. } => rs::CONSUME_MSG_TIMEOUT,
        BrokerError::ClientRefused(_) => rs::NO_PERMISSION,
        BrokerError::RecallForbidden => rs::NO_PERMISSION,
        BrokerError::RecallTopicNotExist(_) => rs::TOPIC_NOT_EXIST,
        BrokerError::RecallIllegal(_) => rs::ILLEGAL_OPERATION,
        BrokerError::Store(s) => match s {
            StoreError::MessageIllegal(_) | StoreError::InvalidLmqName(_) | StoreError::InvalidTopic(_) => {
                rs::MESSAGE_ILLEGAL
            }
            StoreError::FlushTimeout(_) => rs::FLUSH_DISK_TIMEOUT,
            StoreError::ReplicaTimeout(_) => rs::FLUSH_SLAVE_TIMEOUT,
            StoreError::ReplicaNotAvailable => rs::SLAVE_NOT_AVAILABLE,
            StoreError::ShutDown | StoreError::DiskFull(_) | StoreError::WritesStopped(_) | StoreError::Replica => {
                rs::SERVICE_NOT_AVAILABLE
            }
            _ => rs::SYSTEM_ERROR,
        },
    };
    response::error(opaque, code, e.to_string())
}

impl crate::broker::Broker {
    /// Sends `reply` on `channel` once the commit log is durable up to `end` (synchronous
    /// flush); if the flush fails the answer says FLUSH_DISK_TIMEOUT, as Java's does. `None`:
    /// a one-way request, nothing to answer.
    pub(crate) fn reply_when_durable(
        self: &std::sync::Arc<Self>,
        channel: &crate::connection::Channel,
        reply: Option<Outgoing>,
        end: i64,
    ) {
        let broker = std::sync::Arc::clone(self);
        let channel = channel.clone();
        tokio::spawn(async move {
            let mut reply = reply;
            if let Err(e) = broker.store.durable(end).await {
                tracing::warn!(error = %e, "stored but not known to be durable");
                if let Some(r) = &mut reply {
                    r.header.code = not_durable_code(&e);
                }
            }
            if let Some(r) = reply {
                channel.send(r);
            }
        });
    }
}

/// The code of an answer whose message is stored but did not pass the durability wait: still
/// a success to the client, which reads the code as the send's status (Java's
/// `SendStatus.FLUSH_DISK_TIMEOUT`, `FLUSH_SLAVE_TIMEOUT`, `SLAVE_NOT_AVAILABLE`).
fn not_durable_code(e: &silo_store::StoreError) -> i32 {
    use silo_store::StoreError;
    match e {
        StoreError::ReplicaTimeout(_) => rs::FLUSH_SLAVE_TIMEOUT,
        StoreError::ReplicaNotAvailable => rs::SLAVE_NOT_AVAILABLE,
        _ => rs::FLUSH_DISK_TIMEOUT,
    }
}

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
