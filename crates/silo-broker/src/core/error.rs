//! The core's one error type. The remoting adapter maps each variant to a RocketMQ response
//! code and remark in one place (`cmd::error_response`).

use silo_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("bad request header: {0}")]
    BadHeader(String),
    #[error("bad request body: {0}")]
    BadBody(String),
    #[error("the topic[{0}] is invalid")]
    InvalidTopic(String),
    #[error("topic[{0}] not exist, apply first please!")]
    TopicNotExist(String),
    #[error("the topic[{0}] sending message is forbidden")]
    WriteForbidden(String),
    #[error("the topic[{0}] pulling message is forbidden")]
    ReadForbidden(String),
    /// A send to a queue the topic does not have.
    #[error("request queueId[{queue_id}] is illegal, topic has {queues} queues")]
    NoSuchQueue { queue_id: i32, queues: i32 },
    /// A pull from a queue the topic does not have.
    #[error("queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}]")]
    NoSuchReadQueue { topic: String, queue_id: i32, read_queues: i32 },
    #[error("a batch cannot be retried or delayed")]
    BatchRetryOrDelay,
    #[error("bad batch body: {0}")]
    BadBatch(silo_wire::DecodeError),
    #[error("empty batch")]
    EmptyBatch,
    /// `rejectTransactionMessage` is on (Java's remark).
    #[error("the broker sending transaction message is forbidden")]
    TransactionsRejected,
    /// END_TRANSACTION names a commit-log offset that holds no readable record (Java's remark).
    #[error("Find prepared transaction message failed: no record at commit-log offset {0}")]
    NoHalfMessage(i64),
    /// END_TRANSACTION names a record that is not a half message.
    #[error("the record at commit-log offset {offset} is not a half message (topic {topic})")]
    NotAHalfMessage { offset: i64, topic: String },
    /// END_TRANSACTION whose header does not match the half message (Java's remarks).
    #[error("{0}")]
    TransactionMismatch(&'static str),
    /// A timer message whose delivery time is not a number or too far away (Java's
    /// WHEEL_TIMER_MSG_ILLEGAL).
    #[error("timer message illegal: {0}")]
    TimerIllegal(String),
    /// `timerWheelEnable` is off (Java's WHEEL_TIMER_NOT_ENABLE).
    #[error("accurate timer message is not enabled, timerWheelEnable is false")]
    TimersDisabled,
    #[error("END_TRANSACTION with commitOrRollback {0}: expected 0, 8 or 12")]
    BadTransactionOutcome(i32),
    /// CONSUMER_SEND_MSG_BACK for an offset that holds no readable record.
    #[error("look message by offset failed, {0}")]
    NoMessageAt(i64),
    #[error("stored record does not decode")]
    StoredRecordCorrupt,
    #[error("{0}")]
    SubscriptionParseFailed(String),
    #[error("the consumer's subscription not exist, group: {group} topic: {topic}")]
    SubscriptionNotExist { group: String, topic: String },
    #[error("the consumer's subscription not latest")]
    SubscriptionNotLatest,
    /// A subscription with an expression type other than TAG (SQL92).
    #[error("The broker does not support consumer to filter message by SQL92")]
    FilterUnsupported,
    /// QUERY_CONSUMER_OFFSET for a queue the group never committed (Java's remark).
    #[error("Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")]
    NoCommittedOffset,
    #[error("no consumer for this group, {0}")]
    NoConsumer(String),
    /// CHECK_CLIENT_CONFIG for a filter type the broker cannot apply.
    #[error("the broker does not support {0} filtering")]
    FilterTypeUnsupported(String),
    #[error("{0} is required")]
    MissingField(&'static str),
    #[error("queue numbers must be within 1..=1024, not {0}")]
    QueueCount(i32),
    /// GET_TOPIC_CONFIG for a topic this broker lacks (Java's remark).
    #[error("No topic in this broker. topic: {0}")]
    NoTopicHere(String),
    /// GET_TOPIC_STATS_INFO for a topic this broker lacks.
    #[error("topic[{0}] not exist")]
    TopicNotFound(String),
    #[error("the consumer group[{0}] not online")]
    ConsumerNotOnline(String),
    #[error("can not find message by the offset, {offset}: {reason}")]
    NoMessageAtOffset { offset: i64, reason: String },
    #[error("can not find message, maybe time range not correct")]
    NoMessageForKey,
    /// SET_MESSAGE_REQUEST_MODE for a retry topic (Java's remark).
    #[error("retry topic is not allowed to set mode")]
    RetryTopicMode,
    #[error("subscription group does not exist")]
    GroupNotExist,
    #[error("the consume mode must be PULL or POP, not {0:?}")]
    BadRequestMode(String),
    #[error("the group[{0}] is invalid")]
    InvalidGroup(String),
    /// GET_SUBSCRIPTIONGROUP_CONFIG for a group this broker lacks (Java's remark).
    #[error("No group in this broker")]
    NoGroupHere,
    /// A topic-attribute modification Apache's broker refuses (its remark).
    #[error("{0}")]
    BadAttributes(String),
    #[error("MIXED message type is not supported.")]
    MixedMessageTypeUnsupported,
    /// POP_MESSAGE asking for more than 32 messages (Java's remark; the broker's address).
    #[error("the broker[{0}] pop message's num is greater than 32")]
    PopTooMany(String),
    /// POP with `timerWheelEnable=false` (Java's remark: its revive needs timers).
    #[error("the broker[{0}] pop message is forbidden because timerWheelEnable is false")]
    PopNeedsTimers(String),
    /// A pop that arrived more than 500 ms after its own poll time ran out (Java's remark).
    #[error("the broker[{0}] pop message is timeout too much")]
    PopTimeoutTooMuch(String),
    #[error("the topic[{0}] peeking message is forbidden")]
    PopForbidden(String),
    #[error("subscription group [{0}] does not exist")]
    PopGroupNotExist(String),
    #[error("subscription group no permission, {0}")]
    GroupConsumeDisabled(String),
    /// An acknowledgement for a queue the topic does not have (Java answers MESSAGE_ILLEGAL).
    #[error("queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}]")]
    AckQueueIllegal { topic: String, queue_id: i32, read_queues: i32 },
    /// An acknowledgement for an offset outside the queue (Java's remark).
    #[error("offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{min}~{max}")]
    AckOffsetIllegal { topic: String, queue_id: i32, offset: i64, min: i64, max: i64 },
    /// A change of invisible time for an offset outside the queue (Java gives no remark).
    #[error("")]
    ChangeOffsetIllegal,
    /// A receipt handle that does not parse.
    #[error("{0}")]
    BadHandle(String),
    /// The handle's invisible time ran out and its message was handed out again: this
    /// handle can no longer acknowledge or renew it.
    #[error(
        "the receipt handle expired: its message is visible again (popTime {pop_time}, invisibleTime {invisible_time})"
    )]
    HandleExpired { pop_time: i64, invisible_time: i64 },
    /// A handle naming no message this broker holds for this group (forged, another
    /// group's, or already renewed).
    #[error("no popped message of this group matches the receipt handle")]
    NoSuchPoppedMessage,
    /// An admin's call for a consumer that is not connected (Java's remark).
    #[error("The Consumer <{group}> <{client_id}> not online")]
    ClientNotOnline { group: String, client_id: String },
    /// The consumer did not answer an admin's call in time (Java's remark).
    #[error("consumer <{group}> <{client_id}> Timeout: no answer within {millis} ms")]
    ClientCallTimeout { group: String, client_id: String, millis: u128 },
    /// The consumer refuses what an admin asked of it (the proxy's words).
    #[error("{0}")]
    ClientRefused(String),
    /// The consumer could not do what an admin asked of it.
    #[error("{0}")]
    ClientCallFailed(String),
    /// `recallMessageEnable` is off (Java's remark).
    #[error("recall failed, operation is forbidden")]
    RecallForbidden,
    #[error("recall failed, the topic[{0}] not exist")]
    RecallTopicNotExist(String),
    /// A recall whose handle does not parse, names another topic or broker, or whose time is
    /// past or too far (Java's remarks).
    #[error("{0}")]
    RecallIllegal(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}
