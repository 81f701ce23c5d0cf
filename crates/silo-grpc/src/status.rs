//! The core's errors as `apache.rocketmq.v2.Code`s: one table, in the spirit of Apache's
//! proxy, which maps the broker's remoting answers the same way. The message is the core's
//! own text (Java's remark where the core copies the broker's).

use silo_broker::core::BrokerError;
use silo_store::StoreError;

use crate::proto::Code;

/// The code a core error answers with.
pub fn code_of(e: &BrokerError) -> Code {
    use BrokerError as E;
    match e {
        E::BadHeader(_) | E::BadBody(_) | E::MissingField(_) | E::QueueCount(_) => Code::BadRequest,
        E::BadBatch(_) | E::EmptyBatch | E::BatchRetryOrDelay => Code::BadRequest,
        E::InvalidTopic(_) => Code::IllegalTopic,
        E::InvalidGroup(_) => Code::IllegalConsumerGroup,
        E::TopicNotExist(_) | E::TopicNotFound(_) | E::NoTopicHere(_) => Code::TopicNotFound,
        E::WriteForbidden(_) | E::ReadForbidden(_) | E::PopForbidden(_) | E::TransactionsRejected => Code::Forbidden,
        E::GroupConsumeDisabled(_) => Code::Forbidden,
        E::NoSuchQueue { .. } | E::NoSuchReadQueue { .. } | E::AckQueueIllegal { .. } => Code::BadRequest,
        E::NoHalfMessage(_) | E::NotAHalfMessage { .. } | E::TransactionMismatch(_) => Code::InvalidTransactionId,
        E::BadTransactionOutcome(_) => Code::BadRequest,
        E::TimerIllegal(_) => Code::IllegalDeliveryTime,
        E::TimersDisabled | E::PopNeedsTimers(_) | E::FilterUnsupported | E::FilterTypeUnsupported(_) => {
            Code::Unsupported
        }
        E::MixedMessageTypeUnsupported => Code::Unsupported,
        E::SubscriptionParseFailed(_) => Code::IllegalFilterExpression,
        E::SubscriptionNotExist { .. } | E::SubscriptionNotLatest => Code::IllegalFilterExpression,
        E::NoMessageAt(_) | E::NoMessageAtOffset { .. } | E::NoMessageForKey => Code::MessageNotFound,
        E::StoredRecordCorrupt => Code::MessageCorrupted,
        E::NoCommittedOffset => Code::OffsetNotFound,
        E::NoConsumer(_) | E::ConsumerNotOnline(_) => Code::NotFound,
        E::GroupNotExist | E::NoGroupHere | E::PopGroupNotExist(_) => Code::ConsumerGroupNotFound,
        E::RetryTopicMode | E::BadRequestMode(_) | E::BadAttributes(_) => Code::BadRequest,
        E::PopTooMany(_) => Code::BadRequest,
        E::PopTimeoutTooMuch(_) => Code::IllegalPollingTime,
        E::AckOffsetIllegal { .. } | E::ChangeOffsetIllegal => Code::InvalidReceiptHandle,
        E::BadHandle(_) | E::HandleExpired { .. } | E::NoSuchPoppedMessage => Code::InvalidReceiptHandle,
        E::ClientNotOnline { .. } | E::ClientCallTimeout { .. } | E::ClientCallFailed(_) => Code::InternalServerError,
        E::ClientRefused(_) => Code::Forbidden,
        // The proxy passes a recall's refusals on as the broker's remark under this code.
        E::RecallForbidden | E::RecallTopicNotExist(_) | E::RecallIllegal(_) => Code::InternalServerError,
        E::Store(s) => store_code(s),
    }
}

fn store_code(e: &StoreError) -> Code {
    match e {
        StoreError::MessageIllegal(_) => Code::BadRequest,
        StoreError::InvalidTopic(_) | StoreError::InvalidLmqName(_) => Code::IllegalTopic,
        StoreError::NoRecordAt(_) => Code::MessageNotFound,
        StoreError::FlushTimeout(_) => Code::MasterPersistenceTimeout,
        StoreError::ReplicaTimeout(_) => Code::SlavePersistenceTimeout,
        StoreError::ReplicaNotAvailable => Code::HaNotAvailable,
        _ => Code::InternalError,
    }
}
