//! Typed custom headers (docs/protocol.md §2.0-§2.10): each request or response header is a struct whose
//! fields map to `extFields` keys. Required fields are plain types and missing ones are an
//! error; optional fields are `Option`s and are omitted when `None`, as Java omits nulls.
//!
//! The headers of the message path (send, pull) hold their texts as [`ExtStr`]s, so reading
//! one from a decoded frame and writing one into a response copy no text; the others use
//! `String`.

use crate::ext_str::ExtStr;
use crate::header::ExtFields;

/// A custom header field that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("required header field {0} is missing")]
    Missing(&'static str),
    #[error("header field {field} has invalid value {value:?}")]
    Invalid { field: &'static str, value: String },
}

/// A struct carried in a command's `extFields`.
pub trait CustomHeader: Sized {
    /// Adds this header's fields to `ext`.
    fn write_ext_fields(&self, ext: &mut ExtFields);
    /// Reads this header from `ext`; unknown keys are ignored.
    fn read_ext_fields(ext: &ExtFields) -> Result<Self, HeaderError>;

    /// Reads this header from `ext`, moving the texts it keeps out of `ext` (they are left
    /// empty) rather than copying them.
    fn take_ext_fields(ext: &mut ExtFields) -> Result<Self, HeaderError> {
        Self::read_ext_fields(ext)
    }

    fn to_ext_fields(&self) -> ExtFields {
        let mut ext = ExtFields::new();
        self.write_ext_fields(&mut ext);
        ext
    }
}

/// A value type a header field can have.
pub trait ExtValue: Sized {
    fn parse_ext(s: &ExtStr) -> Option<Self>;
    fn render_ext(&self) -> ExtStr;

    /// Like `parse_ext`, but a type that keeps the text may move it out of `slot`.
    fn take_ext(slot: &mut ExtStr) -> Option<Self> {
        Self::parse_ext(slot)
    }
}

impl ExtValue for String {
    fn parse_ext(s: &ExtStr) -> Option<Self> {
        Some(s.as_str().to_owned())
    }
    fn render_ext(&self) -> ExtStr {
        ExtStr::from(self.as_str())
    }
}

/// Taken without copying: the hot-path headers use it for their texts.
impl ExtValue for ExtStr {
    fn parse_ext(s: &ExtStr) -> Option<Self> {
        Some(s.clone())
    }
    fn render_ext(&self) -> ExtStr {
        self.clone()
    }
    fn take_ext(slot: &mut ExtStr) -> Option<Self> {
        Some(std::mem::take(slot))
    }
}

macro_rules! int_ext_value {
    ($($t:ty),*) => {$(
        impl ExtValue for $t {
            /// Java's `Integer.parseInt` / `Long.parseLong`: an optional sign and digits,
            /// nothing around them (`" 12"` is refused, as the Java broker refuses it).
            fn parse_ext(s: &ExtStr) -> Option<Self> {
                s.parse().ok()
            }
            fn render_ext(&self) -> ExtStr {
                ExtStr::format(format_args!("{self}"))
            }
        }
    )*};
}
int_ext_value!(i32, i64);

impl ExtValue for bool {
    /// Java's `Boolean.parseBoolean`: "true" in any case is true, anything else false.
    fn parse_ext(s: &ExtStr) -> Option<Self> {
        Some(s.eq_ignore_ascii_case("true"))
    }
    fn render_ext(&self) -> ExtStr {
        ExtStr::from_static(if *self { "true" } else { "false" })
    }
}

/// How a field is read and written: required (`T`) or optional (`Option<T>`).
pub trait ExtField: Sized {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError>;
    fn take(ext: &mut ExtFields, key: &'static str) -> Result<Self, HeaderError>;
    /// Like `take`, from the value already found for `key` (`None`: the header lacks it).
    fn take_found(found: Option<&mut ExtStr>, key: &'static str) -> Result<Self, HeaderError>;
    fn write(&self, key: &'static str, ext: &mut ExtFields);
}

fn invalid(key: &'static str, raw: &ExtStr) -> HeaderError {
    HeaderError::Invalid { field: key, value: raw.as_str().to_owned() }
}

impl<T: ExtValue> ExtField for T {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        let raw = ext.get_ext(key).ok_or(HeaderError::Missing(key))?;
        T::parse_ext(raw).ok_or_else(|| invalid(key, raw))
    }
    fn take(ext: &mut ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        Self::take_found(ext.get_mut_ext(key), key)
    }
    fn take_found(found: Option<&mut ExtStr>, key: &'static str) -> Result<Self, HeaderError> {
        let raw = found.ok_or(HeaderError::Missing(key))?;
        T::take_ext(raw).ok_or_else(|| invalid(key, raw))
    }
    fn write(&self, key: &'static str, ext: &mut ExtFields) {
        ext.insert(ExtStr::from_static(key), self.render_ext());
    }
}

impl<T: ExtValue> ExtField for Option<T> {
    fn read(ext: &ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        match ext.get_ext(key) {
            None => Ok(None),
            Some(raw) => T::parse_ext(raw).map(Some).ok_or_else(|| invalid(key, raw)),
        }
    }
    fn take(ext: &mut ExtFields, key: &'static str) -> Result<Self, HeaderError> {
        Self::take_found(ext.get_mut_ext(key), key)
    }
    fn take_found(found: Option<&mut ExtStr>, key: &'static str) -> Result<Self, HeaderError> {
        match found {
            None => Ok(None),
            Some(raw) => T::take_ext(raw).map(Some).ok_or_else(|| invalid(key, raw)),
        }
    }
    fn write(&self, key: &'static str, ext: &mut ExtFields) {
        if let Some(v) = self {
            ext.insert(ExtStr::from_static(key), v.render_ext());
        }
    }
}

macro_rules! custom_header {
    ($(#[$meta:meta])* $name:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal ),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl CustomHeader for $name {
            fn write_ext_fields(&self, ext: &mut ExtFields) {
                ext.reserve([$($key),*].len());
                $( ExtField::write(&self.$field, $key, ext); )*
            }
            fn read_ext_fields(ext: &ExtFields) -> Result<Self, HeaderError> {
                Ok(Self { $( $field: ExtField::read(ext, $key)?, )* })
            }
            /// One pass over the fields, each name compared with the known ones (the last
            /// occurrence of a name wins, as in a lookup), instead of one search per field.
            fn take_ext_fields(ext: &mut ExtFields) -> Result<Self, HeaderError> {
                $( let mut $field: Option<&mut ExtStr> = None; )*
                for (name, value) in ext.iter_mut_ext() {
                    let name = name.as_bytes();
                    $( if name == $key.as_bytes() { $field = Some(value); continue; } )*
                }
                Ok(Self { $( $field: ExtField::take_found($field, $key)?, )* })
            }
        }
    };
}

custom_header! {
    /// SEND_MESSAGE (10) with long field names; sent by the Go client and old Java clients.
    SendMessageRequestHeader {
        producer_group: ExtStr = "producerGroup",
        topic: ExtStr = "topic",
        default_topic: ExtStr = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<ExtStr> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        batch: Option<bool> = "batch",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
        broker_name: Option<ExtStr> = "bname",
    }
}

custom_header! {
    /// SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): the same fields under short names.
    SendMessageRequestHeaderV2 {
        producer_group: ExtStr = "a",
        topic: ExtStr = "b",
        default_topic: ExtStr = "c",
        default_topic_queue_nums: i32 = "d",
        queue_id: i32 = "e",
        sys_flag: i32 = "f",
        born_timestamp: i64 = "g",
        flag: i32 = "h",
        properties: Option<ExtStr> = "i",
        reconsume_times: Option<i32> = "j",
        unit_mode: Option<bool> = "k",
        max_reconsume_times: Option<i32> = "l",
        batch: Option<bool> = "m",
        broker_name: Option<ExtStr> = "n",
    }
}

impl From<SendMessageRequestHeaderV2> for SendMessageRequestHeader {
    fn from(v2: SendMessageRequestHeaderV2) -> Self {
        Self {
            producer_group: v2.producer_group,
            topic: v2.topic,
            default_topic: v2.default_topic,
            default_topic_queue_nums: v2.default_topic_queue_nums,
            queue_id: v2.queue_id,
            sys_flag: v2.sys_flag,
            born_timestamp: v2.born_timestamp,
            flag: v2.flag,
            properties: v2.properties,
            reconsume_times: v2.reconsume_times,
            unit_mode: v2.unit_mode,
            batch: v2.batch,
            max_reconsume_times: v2.max_reconsume_times,
            broker_name: v2.broker_name,
        }
    }
}

impl From<SendMessageRequestHeader> for SendMessageRequestHeaderV2 {
    fn from(v1: SendMessageRequestHeader) -> Self {
        Self {
            producer_group: v1.producer_group,
            topic: v1.topic,
            default_topic: v1.default_topic,
            default_topic_queue_nums: v1.default_topic_queue_nums,
            queue_id: v1.queue_id,
            sys_flag: v1.sys_flag,
            born_timestamp: v1.born_timestamp,
            flag: v1.flag,
            properties: v1.properties,
            reconsume_times: v1.reconsume_times,
            unit_mode: v1.unit_mode,
            max_reconsume_times: v1.max_reconsume_times,
            batch: v1.batch,
            broker_name: v1.broker_name,
        }
    }
}

/// Request codes whose header is [`SendMessageRequestHeaderV2`]: SEND_MESSAGE_V2,
/// SEND_BATCH_MESSAGE and SEND_REPLY_MESSAGE_V2 (SEND_REPLY_MESSAGE, 324, has the long names).
pub const SEND_V2_CODES: [i32; 3] = [310, 320, 325];

impl SendMessageRequestHeader {
    /// Reads the send header of either naming, chosen by the request code.
    pub fn read_for_code(code: i32, ext: &ExtFields) -> Result<Self, HeaderError> {
        if SEND_V2_CODES.contains(&code) {
            SendMessageRequestHeaderV2::read_ext_fields(ext).map(Self::from)
        } else {
            Self::read_ext_fields(ext)
        }
    }

    /// Like [`read_for_code`](Self::read_for_code), moving the texts out of `ext`.
    pub fn take_for_code(code: i32, ext: &mut ExtFields) -> Result<Self, HeaderError> {
        if SEND_V2_CODES.contains(&code) {
            SendMessageRequestHeaderV2::take_ext_fields(ext).map(Self::from)
        } else {
            Self::take_ext_fields(ext)
        }
    }
}

custom_header! {
    /// The answer to a send. `MSG_REGION` and `TRACE_ON` must be present: the Java client
    /// reads them unguarded.
    SendMessageResponseHeader {
        msg_id: ExtStr = "msgId",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        transaction_id: Option<ExtStr> = "transactionId",
        batch_uniq_id: Option<ExtStr> = "batchUniqId",
        /// Only for a single timer message (5.3): what RECALL_MESSAGE takes to cancel it.
        recall_handle: Option<ExtStr> = "recallHandle",
        msg_region: ExtStr = "MSG_REGION",
        trace_on: ExtStr = "TRACE_ON",
    }
}

custom_header! {
    /// PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361).
    PullMessageRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        queue_offset: i64 = "queueOffset",
        max_msg_nums: i32 = "maxMsgNums",
        sys_flag: i32 = "sysFlag",
        commit_offset: i64 = "commitOffset",
        suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        subscription: Option<ExtStr> = "subscription",
        sub_version: i64 = "subVersion",
        expression_type: Option<ExtStr> = "expressionType",
        max_msg_bytes: Option<i32> = "maxMsgBytes",
        broker_name: Option<ExtStr> = "bname",
    }
}

/// PullSysFlag bits.
pub mod pull_sys_flag {
    pub const COMMIT_OFFSET: i32 = 0x1;
    pub const SUSPEND: i32 = 0x2;
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const CLASS_FILTER: i32 = 0x8;
    pub const LITE_PULL: i32 = 0x10;
}

custom_header! {
    /// The answer to a pull; the four required fields must be present for codes 0/19/20/21.
    PullMessageResponseHeader {
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        next_begin_offset: i64 = "nextBeginOffset",
        min_offset: i64 = "minOffset",
        max_offset: i64 = "maxOffset",
        offset_delta: Option<i64> = "offsetDelta",
        topic_sys_flag: Option<i32> = "topicSysFlag",
        group_sys_flag: Option<i32> = "groupSysFlag",
        forbidden_type: Option<i32> = "forbiddenType",
    }
}

custom_header! {
    /// QUERY_CONSUMER_OFFSET (14).
    QueryConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
        /// 5.x `RpcRequestHeader` field: the broker the request is meant for.
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// UPDATE_CONSUMER_OFFSET (15).
    UpdateConsumerOffsetRequestHeader {
        consumer_group: String = "consumerGroup",
        topic: String = "topic",
        queue_id: i32 = "queueId",
        commit_offset: i64 = "commitOffset",
        /// 5.x `RpcRequestHeader` field: the broker the request is meant for.
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// GET_MAX_OFFSET (30); `committed` defaults to true.
    GetMaxOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        committed: Option<bool> = "committed",
        /// 5.x `RpcRequestHeader` field: the broker the request is meant for.
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME (32).
    QueueRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP (29).
    SearchOffsetRequestHeader {
        topic: String = "topic",
        queue_id: i32 = "queueId",
        timestamp: i64 = "timestamp",
        boundary_type: Option<String> = "boundaryType",
        /// 5.x `RpcRequestHeader` field: the broker the request is meant for.
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// The answer to the offset requests 14, 29, 30 and 31.
    OffsetResponseHeader {
        offset: i64 = "offset",
    }
}

custom_header! {
    /// The answer to GET_EARLIEST_MSG_STORETIME (32).
    TimestampResponseHeader {
        timestamp: i64 = "timestamp",
    }
}

custom_header! {
    /// GET_CONSUMER_LIST_BY_GROUP (38) and NOTIFY_CONSUMER_IDS_CHANGED (40).
    ConsumerGroupRequestHeader {
        consumer_group: String = "consumerGroup",
    }
}

custom_header! {
    /// UNREGISTER_CLIENT (35).
    UnregisterClientRequestHeader {
        client_id: String = "clientID",
        producer_group: Option<String> = "producerGroup",
        consumer_group: Option<String> = "consumerGroup",
    }
}

custom_header! {
    /// CONSUMER_SEND_MSG_BACK (36).
    ConsumerSendMsgBackRequestHeader {
        offset: i64 = "offset",
        group: String = "group",
        delay_level: i32 = "delayLevel",
        origin_msg_id: Option<String> = "originMsgId",
        origin_topic: Option<String> = "originTopic",
        unit_mode: Option<bool> = "unitMode",
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

custom_header! {
    /// END_TRANSACTION (37), producer to broker, usually one-way. `commitOrRollback`: 8 commit,
    /// 12 rollback, 0 unknown; the two offsets name the half message (its half-queue offset is
    /// the send result's queue offset).
    EndTransactionRequestHeader {
        topic: Option<String> = "topic",
        producer_group: String = "producerGroup",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        commit_or_rollback: i32 = "commitOrRollback",
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// GET_CONSUMER_RUNNING_INFO (307), admin to broker and broker to consumer.
    GetConsumerRunningInfoRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: String = "clientId",
        jstack_enable: Option<bool> = "jstackEnable",
    }
}

custom_header! {
    /// CONSUME_MESSAGE_DIRECTLY (309), admin to broker and broker to consumer. The broker adds
    /// `brokerName`, `topicSysFlag` and `groupSysFlag` before passing it on.
    ConsumeMessageDirectlyRequestHeader {
        consumer_group: String = "consumerGroup",
        client_id: Option<String> = "clientId",
        msg_id: String = "msgId",
        broker_name: Option<String> = "brokerName",
        topic: Option<String> = "topic",
    }
}

custom_header! {
    /// RECALL_MESSAGE (370): the topic and the handle a timer message's send answered with.
    RecallMessageRequestHeader {
        producer_group: Option<String> = "producerGroup",
        topic: String = "topic",
        recall_handle: String = "recallHandle",
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// The answer to RECALL_MESSAGE: the recalled message's unique key.
    RecallMessageResponseHeader {
        msg_id: String = "msgId",
    }
}

custom_header! {
    /// PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker to the requesting client: a reply, with the
    /// replier's send header and the hosts as `/ip:port` text; the body is the reply's body.
    ReplyMessageRequestHeader {
        producer_group: String = "producerGroup",
        topic: String = "topic",
        default_topic: String = "defaultTopic",
        default_topic_queue_nums: i32 = "defaultTopicQueueNums",
        queue_id: i32 = "queueId",
        sys_flag: i32 = "sysFlag",
        born_timestamp: i64 = "bornTimestamp",
        flag: i32 = "flag",
        properties: Option<String> = "properties",
        reconsume_times: Option<i32> = "reconsumeTimes",
        unit_mode: Option<bool> = "unitMode",
        born_host: String = "bornHost",
        store_host: String = "storeHost",
        store_timestamp: i64 = "storeTimestamp",
    }
}

custom_header! {
    /// CHECK_TRANSACTION_STATE (39), broker to producer, one-way; the body is the message in
    /// the stored record format, with its real topic and queue.
    CheckTransactionStateRequestHeader {
        topic: Option<String> = "topic",
        tran_state_table_offset: i64 = "tranStateTableOffset",
        commit_log_offset: i64 = "commitLogOffset",
        msg_id: Option<String> = "msgId",
        transaction_id: Option<String> = "transactionId",
        offset_msg_id: Option<String> = "offsetMsgId",
        broker_name: Option<String> = "bname",
    }
}

custom_header! {
    /// VIEW_MESSAGE_BY_ID (33): `offset` is the commit-log offset.
    ViewMessageRequestHeader {
        topic: Option<String> = "topic",
        offset: i64 = "offset",
    }
}

custom_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105).
    GetRouteInfoRequestHeader {
        topic: String = "topic",
        accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
    }
}

custom_header! {
    /// REGISTER_BROKER (103).
    RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: String = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: Option<i64> = "heartbeatTimeoutMillis",
        enable_acting_master: Option<bool> = "enableActingMaster",
        compressed: Option<bool> = "compressed",
        body_crc32: Option<i32> = "bodyCrc32",
    }
}

custom_header! {
    /// The answer to REGISTER_BROKER; both fields are filled only for slaves.
    RegisterBrokerResponseHeader {
        ha_server_addr: Option<String> = "haServerAddr",
        master_addr: Option<String> = "masterAddr",
    }
}

custom_header! {
    /// UNREGISTER_BROKER (104).
    UnregisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

custom_header! {
    /// POP_MESSAGE (200050). `queueId` -1 pops from any queue; `initMode` says where a group
    /// with no committed offset starts (0 the first message, 1 the end); `order` asks for one
    /// message group (queue) at a time.
    PopMessageRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
        invisible_time: i64 = "invisibleTime",
        poll_time: i64 = "pollTime",
        /// Absent or 0 from the proxy: the broker takes its own clock.
        born_time: Option<i64> = "bornTime",
        init_mode: i32 = "initMode",
        exp_type: Option<ExtStr> = "expType",
        exp: Option<ExtStr> = "exp",
        order: Option<bool> = "order",
        attempt_id: Option<ExtStr> = "attemptId",
    }
}

custom_header! {
    /// The answer to a pop: the fields from which the client rebuilds each message's receipt
    /// handle (see [`crate::pop`]).
    PopMessageResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
        rest_num: i64 = "restNum",
        start_offset_info: Option<ExtStr> = "startOffsetInfo",
        msg_offset_info: Option<ExtStr> = "msgOffsetInfo",
        order_count_info: Option<ExtStr> = "orderCountInfo",
    }
}

custom_header! {
    /// PEEK_MESSAGE (200052).
    PeekMessageRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        max_msg_nums: i32 = "maxMsgNums",
    }
}

custom_header! {
    /// ACK_MESSAGE (200051): `extraInfo` is the receipt handle, `offset` the message's queue
    /// offset, `topic` the topic it was popped from (the retry topic for a retried message).
    AckMessageRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        extra_info: ExtStr = "extraInfo",
        offset: i64 = "offset",
    }
}

custom_header! {
    /// CHANGE_MESSAGE_INVISIBLETIME (200053).
    ChangeInvisibleTimeRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        extra_info: ExtStr = "extraInfo",
        offset: i64 = "offset",
        invisible_time: i64 = "invisibleTime",
    }
}

custom_header! {
    /// The answer to a change of invisible time: the new handle's pop fields.
    ChangeInvisibleTimeResponseHeader {
        pop_time: i64 = "popTime",
        invisible_time: i64 = "invisibleTime",
        revive_qid: i32 = "reviveQid",
    }
}

custom_header! {
    /// NOTIFICATION (200054): wait until a pop would find something.
    NotificationRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
        poll_time: i64 = "pollTime",
        born_time: Option<i64> = "bornTime",
        order: Option<bool> = "order",
        attempt_id: Option<ExtStr> = "attemptId",
    }
}

custom_header! {
    NotificationResponseHeader {
        has_msg: bool = "hasMsg",
        polling_full: Option<bool> = "pollingFull",
    }
}

custom_header! {
    /// POLLING_INFO (200055).
    PollingInfoRequestHeader {
        consumer_group: ExtStr = "consumerGroup",
        topic: ExtStr = "topic",
        queue_id: i32 = "queueId",
    }
}

custom_header! {
    PollingInfoResponseHeader {
        polling_num: i32 = "pollingNum",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_fields_are_enforced_and_optional_ones_omitted() {
        let h = QueryConsumerOffsetRequestHeader {
            consumer_group: "g".into(),
            topic: "T".into(),
            queue_id: 2,
            set_zero_if_not_found: None,
            broker_name: None,
        };
        let ext = h.to_ext_fields();
        assert_eq!(ext.len(), 3);
        assert_eq!(QueryConsumerOffsetRequestHeader::read_ext_fields(&ext).unwrap(), h);
        let mut partial = ExtFields::new();
        partial.insert("topic", "T");
        assert_eq!(
            QueryConsumerOffsetRequestHeader::read_ext_fields(&partial),
            Err(HeaderError::Missing("consumerGroup"))
        );
        partial.insert("consumerGroup", "g");
        partial.insert("queueId", "zero");
        assert!(matches!(
            QueryConsumerOffsetRequestHeader::read_ext_fields(&partial),
            Err(HeaderError::Invalid { field: "queueId", .. })
        ));
    }

    #[test]
    fn v1_and_v2_send_headers_carry_the_same_fields() {
        let v2 = SendMessageRequestHeaderV2 {
            producer_group: "pg".into(),
            topic: "T".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 1,
            sys_flag: 0,
            born_timestamp: 1,
            flag: 0,
            properties: Some("TAGS\u{1}a\u{2}".into()),
            batch: Some(true),
            ..Default::default()
        };
        let v1 = SendMessageRequestHeader::read_for_code(320, &v2.to_ext_fields()).unwrap();
        assert_eq!(v1.batch, Some(true));
        assert_eq!(SendMessageRequestHeaderV2::from(v1.clone()), v2);
        assert_eq!(SendMessageRequestHeader::read_for_code(10, &v1.to_ext_fields()).unwrap(), v1);
        let mut ext = v2.to_ext_fields();
        assert_eq!(SendMessageRequestHeader::take_for_code(310, &mut ext).unwrap(), v1);
        assert_eq!((ext.get("b"), ext.get("i"), ext.get("d")), (Some(""), Some(""), Some("4")));
        let mut bad = v2.to_ext_fields();
        bad.insert("e", "one");
        assert!(matches!(
            SendMessageRequestHeader::take_for_code(310, &mut bad),
            Err(HeaderError::Invalid { field: "e", value }) if value == "one"
        ));
    }
}
