//! Request and response messages of `apache.rocketmq.v2.MessagingService`, plus the commands
//! exchanged on its telemetry stream.

use prost_types::{Duration, Timestamp};

use super::definition::{
    Assignment, ClientType, Endpoints, FilterExpression, LiteSubscriptionAction, Message, MessageQueue, OffsetOption,
    QueryOffsetPolicy, Resource, Settings, Status, TransactionResolution, TransactionSource,
};

// ---- QueryRoute ------------------------------------------------------------------------------

/// Asks for the queues of a topic, as reachable from the given access point.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryRouteRequest {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    /// Access point the client used; servers may tailor the route to it.
    #[prost(message, optional, tag = "2")]
    pub endpoints: Option<Endpoints>,
}

/// The route of a topic: its addressable message queues.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryRouteResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub message_queues: Vec<MessageQueue>,
}

// ---- SendMessage -----------------------------------------------------------------------------

/// Publishes a batch of messages.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SendMessageRequest {
    #[prost(message, repeated, tag = "1")]
    pub messages: Vec<Message>,
}

/// Outcome of sending one message of a batch.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SendResultEntry {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, tag = "2")]
    pub message_id: String,
    /// Set for transaction messages; needed to end the transaction.
    #[prost(string, tag = "3")]
    pub transaction_id: String,
    /// Queue offset the message was stored at.
    #[prost(int64, tag = "4")]
    pub offset: i64,
    /// Handle for `RecallMessage` (delay messages).
    #[prost(string, tag = "5")]
    pub recall_handle: String,
}

/// Result of a send; entries may fail individually.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SendMessageResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<SendResultEntry>,
}

// ---- QueryAssignment -------------------------------------------------------------------------

/// Asks which queues of a topic the server assigns to this consumer.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryAssignmentRequest {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "3")]
    pub endpoints: Option<Endpoints>,
}

/// The queues assigned to a consumer.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryAssignmentResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub assignments: Vec<Assignment>,
}

// ---- ReceiveMessage --------------------------------------------------------------------------

/// Pops a batch of messages from a queue on behalf of a group (server streaming).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ReceiveMessageRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub message_queue: Option<MessageQueue>,
    #[prost(message, optional, tag = "3")]
    pub filter_expression: Option<FilterExpression>,
    #[prost(int32, tag = "4")]
    pub batch_size: i32,
    /// How long received messages stay hidden; required for simple consumers.
    #[prost(message, optional, tag = "5")]
    pub invisible_duration: Option<Duration>,
    /// Let the server renew invisibility while the message is being processed.
    #[prost(bool, tag = "6")]
    pub auto_renew: bool,
    #[prost(message, optional, tag = "7")]
    pub long_polling_timeout: Option<Duration>,
    /// Client-chosen id that makes a retried receive idempotent.
    #[prost(string, optional, tag = "8")]
    pub attempt_id: Option<String>,
}

/// One frame of a receive stream: a status, a message, or the delivery start time.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ReceiveMessageResponse {
    #[prost(oneof = "receive_message_response::Content", tags = "1, 2, 3")]
    pub content: Option<receive_message_response::Content>,
}

/// Nested types of [`ReceiveMessageResponse`].
pub mod receive_message_response {
    /// Payload of a receive frame.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Content {
        #[prost(message, tag = "1")]
        Status(super::Status),
        /// Boxed: a message is far larger than the other arms.
        #[prost(message, boxed, tag = "2")]
        Message(Box<super::Message>),
        /// When the server started delivering.
        #[prost(message, tag = "3")]
        DeliveryTimestamp(super::Timestamp),
    }
}

// ---- AckMessage ------------------------------------------------------------------------------

/// One received message to acknowledge.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AckMessageEntry {
    #[prost(string, tag = "1")]
    pub message_id: String,
    #[prost(string, tag = "2")]
    pub receipt_handle: String,
    #[prost(string, optional, tag = "3")]
    pub lite_topic: Option<String>,
}

/// Acknowledges successfully processed messages.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AckMessageRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub topic: Option<Resource>,
    #[prost(message, repeated, tag = "3")]
    pub entries: Vec<AckMessageEntry>,
}

/// Outcome of acknowledging one message.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AckMessageResultEntry {
    #[prost(string, tag = "1")]
    pub message_id: String,
    #[prost(string, tag = "2")]
    pub receipt_handle: String,
    #[prost(message, optional, tag = "3")]
    pub status: Option<Status>,
}

/// Result of an ack: an RPC-level status plus one entry per acknowledged message.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct AckMessageResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub entries: Vec<AckMessageResultEntry>,
}

// ---- ForwardMessageToDeadLetterQueue ---------------------------------------------------------

/// Moves a message that exhausted its attempts on the client side to the dead letter queue.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ForwardMessageToDeadLetterQueueRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub topic: Option<Resource>,
    #[prost(string, tag = "3")]
    pub receipt_handle: String,
    #[prost(string, tag = "4")]
    pub message_id: String,
    #[prost(int32, tag = "5")]
    pub delivery_attempt: i32,
    #[prost(int32, tag = "6")]
    pub max_delivery_attempts: i32,
    #[prost(string, optional, tag = "7")]
    pub lite_topic: Option<String>,
}

/// Result of a dead-letter forward.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ForwardMessageToDeadLetterQueueResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

// ---- Heartbeat -------------------------------------------------------------------------------

/// Periodic keep-alive of a client.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct HeartbeatRequest {
    /// Consumer group; absent for producers.
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(enumeration = "ClientType", tag = "2")]
    pub client_type: i32,
}

/// Result of a heartbeat.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct HeartbeatResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

// ---- EndTransaction --------------------------------------------------------------------------

/// Commits or rolls back a transaction message.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct EndTransactionRequest {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    #[prost(string, tag = "2")]
    pub message_id: String,
    #[prost(string, tag = "3")]
    pub transaction_id: String,
    #[prost(enumeration = "TransactionResolution", tag = "4")]
    pub resolution: i32,
    #[prost(enumeration = "TransactionSource", tag = "5")]
    pub source: i32,
    #[prost(string, tag = "6")]
    pub trace_context: String,
}

/// Result of ending a transaction.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct EndTransactionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

// ---- Telemetry -------------------------------------------------------------------------------

/// Server to client: dump your thread stacks.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct PrintThreadStackTraceCommand {
    /// Echoed in the reply to match it with this command.
    #[prost(string, tag = "1")]
    pub nonce: String,
}

/// Server to client: reconnect using the latest endpoints.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ReconnectEndpointsCommand {
    #[prost(string, tag = "1")]
    pub nonce: String,
}

/// Client to server: the thread dump asked for by a `PrintThreadStackTraceCommand`.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct ThreadStackTrace {
    #[prost(string, tag = "1")]
    pub nonce: String,
    #[prost(string, optional, tag = "2")]
    pub thread_stack_trace: Option<String>,
}

/// Server to client: try consuming this message and report the outcome.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct VerifyMessageCommand {
    #[prost(string, tag = "1")]
    pub nonce: String,
    #[prost(message, optional, tag = "2")]
    pub message: Option<Message>,
}

/// Client to server: answer to a `VerifyMessageCommand` (the outcome is in the telemetry
/// command's status).
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct VerifyMessageResult {
    #[prost(string, tag = "1")]
    pub nonce: String,
}

/// Server to producer: resolve this unfinished transaction (answered with `EndTransaction`).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RecoverOrphanedTransactionCommand {
    #[prost(message, optional, tag = "1")]
    pub message: Option<Message>,
    #[prost(string, tag = "2")]
    pub transaction_id: String,
}

/// Server to lite consumer: drop your subscription of this lite topic.
#[derive(Clone, PartialEq, Eq, Hash, ::prost::Message)]
pub struct NotifyUnsubscribeLiteCommand {
    #[prost(string, tag = "1")]
    pub lite_topic: String,
}

/// One frame of the bidirectional telemetry stream, in either direction.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TelemetryCommand {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(oneof = "telemetry_command::Command", tags = "2, 3, 4, 5, 6, 7, 8, 9")]
    pub command: Option<telemetry_command::Command>,
}

/// Nested types of [`TelemetryCommand`].
pub mod telemetry_command {
    /// What a telemetry frame carries. The large arms are boxed to keep the enum small.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Command {
        /// Client settings (client to server first, then the server's answer).
        #[prost(message, boxed, tag = "2")]
        Settings(Box<super::Settings>),
        #[prost(message, tag = "3")]
        ThreadStackTrace(super::ThreadStackTrace),
        #[prost(message, tag = "4")]
        VerifyMessageResult(super::VerifyMessageResult),
        #[prost(message, boxed, tag = "5")]
        RecoverOrphanedTransactionCommand(Box<super::RecoverOrphanedTransactionCommand>),
        #[prost(message, tag = "6")]
        PrintThreadStackTraceCommand(super::PrintThreadStackTraceCommand),
        #[prost(message, boxed, tag = "7")]
        VerifyMessageCommand(Box<super::VerifyMessageCommand>),
        #[prost(message, tag = "8")]
        ReconnectEndpointsCommand(super::ReconnectEndpointsCommand),
        #[prost(message, tag = "9")]
        NotifyUnsubscribeLiteCommand(super::NotifyUnsubscribeLiteCommand),
    }
}

// ---- NotifyClientTermination -----------------------------------------------------------------

/// Tells the server a client is shutting down.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct NotifyClientTerminationRequest {
    /// Consumer group; absent for producers.
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
}

/// Result of a termination notice.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct NotifyClientTerminationResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

// ---- ChangeInvisibleDuration -----------------------------------------------------------------

/// Extends (or shortens) how long a received message stays hidden.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ChangeInvisibleDurationRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub topic: Option<Resource>,
    #[prost(string, tag = "3")]
    pub receipt_handle: String,
    /// New invisibility period, counted from now.
    #[prost(message, optional, tag = "4")]
    pub invisible_duration: Option<Duration>,
    /// For tracing only.
    #[prost(string, tag = "5")]
    pub message_id: String,
    #[prost(string, optional, tag = "6")]
    pub lite_topic: Option<String>,
    /// If set, the redelivery does not count as another attempt.
    #[prost(bool, optional, tag = "7")]
    pub suspend: Option<bool>,
}

/// Result of changing invisibility, possibly with a fresh receipt handle.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ChangeInvisibleDurationResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, tag = "2")]
    pub receipt_handle: String,
}

// ---- PullMessage -----------------------------------------------------------------------------

/// Reads messages from a queue at an explicit offset (server streaming).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PullMessageRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub message_queue: Option<MessageQueue>,
    #[prost(int64, tag = "3")]
    pub offset: i64,
    #[prost(int32, tag = "4")]
    pub batch_size: i32,
    #[prost(message, optional, tag = "5")]
    pub filter_expression: Option<FilterExpression>,
    #[prost(message, optional, tag = "6")]
    pub long_polling_timeout: Option<Duration>,
}

/// One frame of a pull stream: a status, a message, or the offset to pull from next.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct PullMessageResponse {
    #[prost(oneof = "pull_message_response::Content", tags = "1, 2, 3")]
    pub content: Option<pull_message_response::Content>,
}

/// Nested types of [`PullMessageResponse`].
pub mod pull_message_response {
    /// Payload of a pull frame.
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Content {
        #[prost(message, tag = "1")]
        Status(super::Status),
        /// Boxed: a message is far larger than the other arms.
        #[prost(message, boxed, tag = "2")]
        Message(Box<super::Message>),
        #[prost(int64, tag = "3")]
        NextOffset(i64),
    }
}

// ---- UpdateOffset / GetOffset / QueryOffset --------------------------------------------------

/// Stores a group's consume progress on a queue.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct UpdateOffsetRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub message_queue: Option<MessageQueue>,
    #[prost(int64, tag = "3")]
    pub offset: i64,
}

/// Result of storing consume progress.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct UpdateOffsetResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

/// Reads a group's stored consume progress on a queue.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetOffsetRequest {
    #[prost(message, optional, tag = "1")]
    pub group: Option<Resource>,
    #[prost(message, optional, tag = "2")]
    pub message_queue: Option<MessageQueue>,
}

/// A group's stored consume progress.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct GetOffsetResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int64, tag = "2")]
    pub offset: i64,
}

/// Looks up an offset of a queue: its start, its end, or the first one at a time.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryOffsetRequest {
    #[prost(message, optional, tag = "1")]
    pub message_queue: Option<MessageQueue>,
    #[prost(enumeration = "QueryOffsetPolicy", tag = "2")]
    pub query_offset_policy: i32,
    /// Required with `QueryOffsetPolicy::Timestamp`.
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

/// The offset found.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct QueryOffsetResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int64, tag = "2")]
    pub offset: i64,
}

// ---- RecallMessage ---------------------------------------------------------------------------

/// Withdraws a not-yet-delivered (delay) message by the handle its send returned.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RecallMessageRequest {
    #[prost(message, optional, tag = "1")]
    pub topic: Option<Resource>,
    /// `SendResultEntry::recall_handle` of the message.
    #[prost(string, tag = "2")]
    pub recall_handle: String,
}

/// Result of a recall.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct RecallMessageResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, tag = "2")]
    pub message_id: String,
}

// ---- SyncLiteSubscription --------------------------------------------------------------------

/// Updates the lite topics a lite push consumer subscribes to under a bound topic.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SyncLiteSubscriptionRequest {
    #[prost(enumeration = "LiteSubscriptionAction", tag = "1")]
    pub action: i32,
    /// Parent topic the lite topics belong to.
    #[prost(message, optional, tag = "2")]
    pub topic: Option<Resource>,
    #[prost(message, optional, tag = "3")]
    pub group: Option<Resource>,
    #[prost(string, repeated, tag = "4")]
    pub lite_topic_set: Vec<String>,
    #[prost(int64, optional, tag = "5")]
    pub version: Option<i64>,
    #[prost(message, optional, tag = "6")]
    pub offset_option: Option<OffsetOption>,
}

/// Result of a lite subscription sync.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct SyncLiteSubscriptionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}
