//! Shared domain types of `apache.rocketmq.v2`: resources, routes, messages, status codes and
//! client settings. Request/response envelopes live in [`super::service`].

use std::collections::HashMap;

use bytes::Bytes;
use prost_types::{Duration, Timestamp};

// ---------------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------------

/// Outcome a producer (or a transaction check) reports for a half message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum TransactionResolution {
    Unspecified = 0,
    /// Make the message visible to consumers.
    Commit = 1,
    /// Discard the message.
    Rollback = 2,
}

/// Who is ending a transaction: the producer on its own, or in answer to a broker check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum TransactionSource {
    SourceUnspecified = 0,
    /// The producer finished the local transaction by itself.
    SourceClient = 1,
    /// The producer answers a `RecoverOrphanedTransactionCommand` from the server.
    SourceServerCheck = 2,
}

/// Access rights of a message queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Permission {
    Unspecified = 0,
    None = 1,
    Read = 2,
    Write = 3,
    ReadWrite = 4,
}

/// Language of a subscription filter expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum FilterType {
    Unspecified = 0,
    /// Tag expression such as `a || b` or `*`.
    Tag = 1,
    /// SQL92 predicate over message properties.
    Sql = 2,
}

/// How the addresses of an [`Endpoints`] are to be interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum AddressScheme {
    Unspecified = 0,
    IPv4 = 1,
    IPv6 = 2,
    DomainName = 3,
}

/// Kind of a message, which also decides what a topic accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum MessageType {
    Unspecified = 0,
    Normal = 1,
    /// Ordered within its message group.
    Fifo = 2,
    /// Delivered no earlier than its delivery timestamp.
    Delay = 3,
    /// Half message, visible only after commit.
    Transaction = 4,
    /// Message of a lite topic.
    Lite = 5,
    /// Message carrying a delivery priority.
    Priority = 6,
}

/// Algorithm of a body checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum DigestType {
    Unspecified = 0,
    Crc32 = 1,
    Md5 = 2,
    Sha1 = 3,
}

/// Role of a connected client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum ClientType {
    Unspecified = 0,
    Producer = 1,
    PushConsumer = 2,
    SimpleConsumer = 3,
    PullConsumer = 4,
    LitePushConsumer = 5,
    LiteSimpleConsumer = 6,
}

/// Compression applied to a message body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Encoding {
    Unspecified = 0,
    /// Body stored as is.
    Identity = 1,
    Gzip = 2,
}

/// Result code carried in every [`Status`]; the numbering loosely follows HTTP status classes
/// (2xxxx success, 4xxxx client errors, 5xxxx server errors).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Code {
    Unspecified = 0,
    /// Success.
    Ok = 20000,
    /// Several results of differing outcome; inspect the per-entry statuses.
    MultipleResults = 30000,
    /// Malformed request or missing required field/header.
    BadRequest = 40000,
    IllegalAccessPoint = 40001,
    IllegalTopic = 40002,
    IllegalConsumerGroup = 40003,
    IllegalMessageTag = 40004,
    IllegalMessageKey = 40005,
    IllegalMessageGroup = 40006,
    IllegalMessagePropertyKey = 40007,
    InvalidTransactionId = 40008,
    IllegalMessageId = 40009,
    IllegalFilterExpression = 40010,
    IllegalInvisibleTime = 40011,
    IllegalDeliveryTime = 40012,
    InvalidReceiptHandle = 40013,
    MessagePropertyConflictWithType = 40014,
    UnrecognizedClientType = 40015,
    MessageCorrupted = 40016,
    /// The `x-mq-client-id` header is missing.
    ClientIdRequired = 40017,
    IllegalPollingTime = 40018,
    IllegalOffset = 40019,
    IllegalLiteTopic = 40020,
    /// `Settings::client_properties` break the size/shape limits.
    InvalidClientProperties = 40021,
    /// Missing or invalid credentials.
    Unauthorized = 40100,
    PaymentRequired = 40200,
    /// Authenticated, but not allowed to do this.
    Forbidden = 40300,
    NotFound = 40400,
    MessageNotFound = 40401,
    TopicNotFound = 40402,
    ConsumerGroupNotFound = 40403,
    OffsetNotFound = 40404,
    RequestTimeout = 40800,
    PayloadTooLarge = 41300,
    MessageBodyTooLarge = 41301,
    MessageBodyEmpty = 41302,
    /// The operation's preconditions are not met (e.g. client not started).
    PreconditionFailed = 42800,
    /// Throttled.
    TooManyRequests = 42900,
    LiteTopicQuotaExceeded = 42901,
    LiteSubscriptionQuotaExceeded = 42902,
    RequestHeaderFieldsTooLarge = 43100,
    MessagePropertiesTooLarge = 43101,
    InternalError = 50000,
    InternalServerError = 50001,
    HaNotAvailable = 50002,
    NotImplemented = 50100,
    /// An upstream (store) server did not answer in time.
    ProxyTimeout = 50400,
    MasterPersistenceTimeout = 50401,
    SlavePersistenceTimeout = 50402,
    Unsupported = 50500,
    VersionUnsupported = 50501,
    /// Verifying a FIFO message is refused because it would break ordering.
    VerifyFifoMessageUnsupported = 50502,
    FailedToConsumeMessage = 60000,
}

/// Implementation language of a client SDK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum Language {
    Unspecified = 0,
    Java = 1,
    Cpp = 2,
    DotNet = 3,
    Golang = 4,
    Rust = 5,
    Python = 6,
    Php = 7,
    NodeJs = 8,
    Ruby = 9,
    ObjectiveC = 10,
    Dart = 11,
    Kotlin = 12,
}

/// How a `SyncLiteSubscriptionRequest` changes a consumer's set of lite topics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum LiteSubscriptionAction {
    /// Add the listed lite topics to the current set.
    PartialAdd = 0,
    /// Remove the listed lite topics from the current set.
    PartialRemove = 1,
    /// The list is the complete set of lite topics to subscribe.
    CompleteAdd = 2,
    /// The list is the complete set of lite topics to unsubscribe.
    CompleteRemove = 3,
}

/// Which offset a `QueryOffsetRequest` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
#[repr(i32)]
pub enum QueryOffsetPolicy {
    /// Earliest offset still stored.
    Beginning = 0,
    /// Offset just past the newest message.
    End = 1,
    /// First offset at or after the given timestamp.
    Timestamp = 2,
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// Subscription filter: an expression and the language it is written in.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct FilterExpression {
    #[prost(enumeration = "FilterType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub expression: String,
}

/// Retry schedule for failed sends (producers) or failed consumption (consumers).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RetryPolicy {
    /// Total number of attempts, the first one included.
    #[prost(int32, tag = "1")]
    pub max_attempts: i32,
    #[prost(oneof = "retry_policy::Strategy", tags = "2, 3")]
    pub strategy: Option<retry_policy::Strategy>,
}

/// Nested types of [`RetryPolicy`].
pub mod retry_policy {
    /// How the delay between attempts is computed.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Strategy {
        #[prost(message, tag = "2")]
        ExponentialBackoff(super::ExponentialBackoff),
        #[prost(message, tag = "3")]
        CustomizedBackoff(super::CustomizedBackoff),
    }
}

/// Delay growing geometrically from `initial` by `multiplier`, capped at `max`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ExponentialBackoff {
    #[prost(message, optional, tag = "1")]
    pub initial: Option<Duration>,
    #[prost(message, optional, tag = "2")]
    pub max: Option<Duration>,
    #[prost(float, tag = "3")]
    pub multiplier: f32,
}

/// Explicit list of delays, one per retry (the classic `1s 5s 10s 30s 1m ...` ladder).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct CustomizedBackoff {
    #[prost(message, repeated, tag = "1")]
    pub next: Vec<Duration>,
}

/// Name of a topic or group, qualified by an optional namespace.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct Resource {
    #[prost(string, tag = "1")]
    pub resource_namespace: String,
    /// Unique within its namespace.
    #[prost(string, tag = "2")]
    pub name: String,
}

/// One topic a consumer subscribes to, with its filter.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SubscriptionEntry {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub expression: Option<FilterExpression>,
}

/// A host and port.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct Address {
    #[prost(string, tag = "1")]
    pub host: String,
    #[prost(int32, tag = "2")]
    pub port: i32,
}

/// A set of addresses sharing one scheme; used for access points and broker locations.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct Endpoints {
    #[prost(enumeration = "AddressScheme", tag = "1")]
    pub scheme: i32,
    #[prost(message, repeated, tag = "2")]
    pub addresses: Vec<Address>,
}

/// A broker that hosts message queues.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Broker {
    #[prost(string, tag = "1")]
    pub name: String,
    /// 0 for the leader, greater than 0 for followers.
    #[prost(int32, tag = "2")]
    pub id: i32,
    /// Where clients reach this broker.
    #[prost(message, optional, tag = "3")]
    pub endpoints: Option<Endpoints>,
}

/// One queue of a topic as seen in a route.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct MessageQueue {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    #[prost(int32, tag = "2")]
    pub id: i32,
    #[prost(enumeration = "Permission", tag = "3")]
    pub permission: i32,
    #[prost(message, optional, tag = "4")]
    pub broker: Option<Broker>,
    /// Message types this queue's topic takes.
    #[prost(enumeration = "MessageType", repeated, tag = "5")]
    pub accept_message_types: Vec<i32>,
}

/// Checksum of a message body, used to detect corruption.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Digest {
    #[prost(enumeration = "DigestType", tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub checksum: String,
}

/// Properties RocketMQ itself defines for a message; some are set by the producer, others by
/// the broker on storage or delivery.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SystemProperties {
    #[prost(string, optional, tag = "1")]
    pub tag: Option<String>,
    #[prost(string, repeated, tag = "2")]
    pub keys: Vec<String>,
    /// Client-generated unique id; a send without one is rejected.
    #[prost(string, tag = "3")]
    pub message_id: String,
    #[prost(message, optional, tag = "4")]
    pub body_digest: Option<Digest>,
    #[prost(enumeration = "Encoding", tag = "5")]
    pub body_encoding: i32,
    #[prost(enumeration = "MessageType", tag = "6")]
    pub message_type: i32,
    #[prost(message, optional, tag = "7")]
    pub born_timestamp: Option<Timestamp>,
    #[prost(string, tag = "8")]
    pub born_host: String,
    /// When the broker stored the message; absent on send.
    #[prost(message, optional, tag = "9")]
    pub store_timestamp: Option<Timestamp>,
    #[prost(string, tag = "10")]
    pub store_host: String,
    /// Earliest delivery time of a delay message.
    #[prost(message, optional, tag = "11")]
    pub delivery_timestamp: Option<Timestamp>,
    /// Handle of a popped message, used to ack it or change its invisibility.
    #[prost(string, optional, tag = "12")]
    pub receipt_handle: Option<String>,
    #[prost(int32, tag = "13")]
    pub queue_id: i32,
    #[prost(int64, optional, tag = "14")]
    pub queue_offset: Option<i64>,
    /// How long a received message stays hidden from other consumers.
    #[prost(message, optional, tag = "15")]
    pub invisible_duration: Option<Duration>,
    /// 1-based delivery count; absent on send.
    #[prost(int32, optional, tag = "16")]
    pub delivery_attempt: Option<i32>,
    /// Ordering group of a FIFO message.
    #[prost(string, optional, tag = "17")]
    pub message_group: Option<String>,
    #[prost(string, optional, tag = "18")]
    pub trace_context: Option<String>,
    /// After how long an unresolved transaction message is checked with a producer.
    #[prost(message, optional, tag = "19")]
    pub orphaned_transaction_recovery_duration: Option<Duration>,
    /// Set when the message was taken from a dead letter queue.
    #[prost(message, optional, tag = "20")]
    pub dead_letter_queue: Option<DeadLetterQueue>,
    #[prost(string, optional, tag = "21")]
    pub lite_topic: Option<String>,
    #[prost(int32, optional, tag = "22")]
    pub priority: Option<i32>,
}

/// Where a dead-lettered message originally came from.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DeadLetterQueue {
    #[prost(string, tag = "1")]
    pub topic: String,
    #[prost(string, tag = "2")]
    pub message_id: String,
}

/// A message as sent or delivered: topic, user and system properties, and body.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Message {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    /// Application key/value properties; RocketMQ's reserved keys are rejected.
    #[prost(map = "string, string", tag = "2")]
    pub user_properties: HashMap<String, String>,
    #[prost(message, optional, tag = "3")]
    pub system_properties: Option<SystemProperties>,
    /// Payload; decoding from a `Bytes` buffer yields a slice of that buffer, not a copy.
    #[prost(bytes = "bytes", tag = "4")]
    pub body: Bytes,
}

/// A queue the server's load balancer assigned to a consumer.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Assignment {
    #[prost(message, optional, tag = "1")]
    pub message_queue: Option<MessageQueue>,
}

/// Result of an operation: a [`Code`] and a human-readable explanation.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct Status {
    #[prost(enumeration = "Code", tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

/// Client user agent: SDK language and version, platform and host.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct Ua {
    #[prost(enumeration = "Language", tag = "1")]
    pub language: i32,
    #[prost(string, tag = "2")]
    pub version: String,
    /// OS name, version, architecture and the like.
    #[prost(string, tag = "3")]
    pub platform: String,
    #[prost(string, tag = "4")]
    pub hostname: String,
}

/// Client configuration, sent by the client when a telemetry stream opens and answered by the
/// server with the values it imposes.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Settings {
    #[prost(enumeration = "ClientType", optional, tag = "1")]
    pub client_type: Option<i32>,
    /// Access point the client was configured with.
    #[prost(message, optional, tag = "2")]
    pub access_point: Option<Endpoints>,
    /// Send retry schedule (producers) or redelivery schedule (consumers).
    #[prost(message, optional, tag = "3")]
    pub backoff_policy: Option<RetryPolicy>,
    /// Timeout of non-long-polling RPCs.
    #[prost(message, optional, tag = "4")]
    pub request_timeout: Option<Duration>,
    #[prost(oneof = "settings::PubSub", tags = "5, 6")]
    pub pub_sub: Option<settings::PubSub>,
    #[prost(message, optional, tag = "7")]
    pub user_agent: Option<Ua>,
    #[prost(message, optional, tag = "8")]
    pub metric: Option<Metric>,
    /// Client-declared metadata for observability only (bounded in count and size; never to be
    /// trusted for security decisions).
    #[prost(map = "string, string", tag = "9")]
    pub client_properties: HashMap<String, String>,
}

/// Nested types of [`Settings`].
pub mod settings {
    /// Role-specific part of the settings.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum PubSub {
        #[prost(message, tag = "5")]
        Publishing(super::Publishing),
        #[prost(message, tag = "6")]
        Subscription(super::Subscription),
    }
}

/// Producer-side settings.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Publishing {
    /// Topics the producer intends to send to.
    #[prost(message, repeated, tag = "1")]
    pub topics: Vec<Resource>,
    /// Largest body the server accepts.
    #[prost(int32, tag = "2")]
    pub max_body_size: i32,
    /// Whether the client should check a message's type against the queue before sending.
    #[prost(bool, tag = "3")]
    pub validate_message_type: bool,
}

/// Consumer-side settings.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Subscription {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub subscriptions: Vec<SubscriptionEntry>,
    /// Server-set: the group consumes message groups in order.
    #[prost(bool, optional, tag = "3")]
    pub fifo: Option<bool>,
    /// Server-set batch size for push consumers.
    #[prost(int32, optional, tag = "4")]
    pub receive_batch_size: Option<i32>,
    /// Server-set long-polling timeout for push consumers' receives.
    #[prost(message, optional, tag = "5")]
    pub long_polling_timeout: Option<Duration>,
    /// Lite push consumers only: how many lite topics may be subscribed.
    #[prost(int32, optional, tag = "6")]
    pub lite_subscription_quota: Option<i32>,
    /// Lite push consumers only: longest allowed lite topic name.
    #[prost(int32, optional, tag = "7")]
    pub max_lite_topic_size: Option<i32>,
}

/// Whether and where the client exports its metrics.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Metric {
    #[prost(bool, tag = "1")]
    pub on: bool,
    /// Metrics collector; required when `on` is set.
    #[prost(message, optional, tag = "2")]
    pub endpoints: Option<Endpoints>,
}

/// Starting position for a lite subscription.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct OffsetOption {
    #[prost(oneof = "offset_option::OffsetType", tags = "1, 2, 3, 4")]
    pub offset_type: Option<offset_option::OffsetType>,
}

/// Nested types of [`OffsetOption`].
pub mod offset_option {
    /// Named starting positions.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, ::prost::Enumeration)]
    #[repr(i32)]
    pub enum Policy {
        /// Resume from the last committed position.
        Last = 0,
        /// Start from the earliest stored message.
        Min = 1,
        /// Start from the newest message.
        Max = 2,
    }

    /// The ways a starting position can be given.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum OffsetType {
        #[prost(enumeration = "Policy", tag = "1")]
        Policy(i32),
        /// An absolute queue offset.
        #[prost(int64, tag = "2")]
        Offset(i64),
        /// This many messages before the tail.
        #[prost(int64, tag = "3")]
        TailN(i64),
        /// First message stored at or after this point in time.
        #[prost(int64, tag = "4")]
        Timestamp(i64),
    }
}
