//! JSON bodies (docs/protocol.md §2.5, §2.6, §2.10, §2.12). Written as compact standard JSON with keys in
//! alphabetical order (fields are declared alphabetically) and quoted map keys; read with the
//! fastjson quirk tolerated: bare integer map keys such as `{0:"10.0.0.7:10911"}`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::lenient;

/// Nesting limit of the bare-key rewriter (serde_json's own limit is 128).
const MAX_DEPTH: usize = 128;

/// Quotes bare object keys (`{0:1}` → `{"0":1}`) so that a standard JSON parser accepts
/// fastjson output. Returns the input unchanged, without copying, when there are none.
pub fn quote_bare_keys(input: &[u8]) -> Result<Cow<'_, [u8]>, DecodeError> {
    // A bit per nesting level: true = object. Fixed size, so input cannot inflate it.
    let mut stack = [false; MAX_DEPTH];
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut expect_key = false;
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0usize;
    let mut i = 0usize;
    while let Some(&b) = input.get(i) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i = i.saturating_add(1);
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                expect_key = false;
            }
            b'{' if expect_key => {
                // fastjson writes a map keyed by objects (`ConsumeStats.offsetTable`, keyed by
                // `MessageQueue`) with the object itself as the key: make it a string key
                // holding the object's JSON text.
                let end = object_end(input, i)?;
                let key = input.get(i..end).unwrap_or_default();
                let buf = out.get_or_insert_with(|| Vec::with_capacity(input.len().saturating_add(64)));
                buf.extend_from_slice(input.get(copied..i).unwrap_or_default());
                buf.push(b'"');
                for &c in key {
                    if c == b'"' || c == b'\\' {
                        buf.push(b'\\');
                    }
                    buf.push(c);
                }
                buf.push(b'"');
                copied = end;
                i = end;
                expect_key = false;
                continue;
            }
            b'{' | b'[' => {
                let slot = stack
                    .get_mut(depth)
                    .ok_or(DecodeError::new(i, DecodeErrorKind::InvalidJson("nested too deeply".into())))?;
                *slot = b == b'{';
                depth = depth.saturating_add(1);
                expect_key = b == b'{';
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                expect_key = false;
            }
            b',' => {
                expect_key = depth.checked_sub(1).and_then(|d| stack.get(d)).copied().unwrap_or(false);
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ if expect_key => {
                // A bare key runs up to the colon.
                let len = input
                    .get(i..)
                    .and_then(|rest| rest.iter().position(|c| *c == b':'))
                    .ok_or(DecodeError::new(i, DecodeErrorKind::InvalidJson("bare key without ':'".into())))?;
                let end = i.saturating_add(len);
                let key = input.get(i..end).unwrap_or_default().trim_ascii_end();
                let buf = out.get_or_insert_with(|| Vec::with_capacity(input.len().saturating_add(16)));
                buf.extend_from_slice(input.get(copied..i).unwrap_or_default());
                buf.push(b'"');
                buf.extend_from_slice(key);
                buf.push(b'"');
                copied = end;
                i = end;
                expect_key = false;
                continue;
            }
            _ => expect_key = false,
        }
        i = i.saturating_add(1);
    }
    Ok(match out {
        None => Cow::Borrowed(input),
        Some(mut buf) => {
            buf.extend_from_slice(input.get(copied..).unwrap_or_default());
            Cow::Owned(buf)
        }
    })
}

/// The offset just past the object that starts at `start` (which holds `{`).
fn object_end(input: &[u8], start: usize) -> Result<usize, DecodeError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in input.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth = depth.saturating_add(1);
                if depth > MAX_DEPTH {
                    return Err(DecodeError::new(i, DecodeErrorKind::InvalidJson("nested too deeply".into())));
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Ok(i.saturating_add(1));
                }
            }
            _ => {}
        }
    }
    Err(DecodeError::new(start, DecodeErrorKind::InvalidJson("object key without its end".into())))
}

/// Parses a JSON body written by Java, Go or Silo.
pub fn decode_json_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, DecodeError> {
    // Every body is an object; serde would also fill a struct from an array, fastjson refuses.
    if let Some(at) = body.iter().position(|b| !b.is_ascii_whitespace())
        && body.get(at) != Some(&b'{')
    {
        return Err(DecodeError::new(at, DecodeErrorKind::InvalidJson("a body must be a JSON object".into())));
    }
    let text = quote_bare_keys(body)?;
    // Offsets refer to the rewritten text when bare keys were quoted (each quoting shifts by 2).
    // The error names the field it is about (`consumerDataSet[0].consumeType: ...`).
    let mut de = serde_json::Deserializer::from_slice(&text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let mut err = crate::error::json_error(&text, &inner);
        if path != "."
            && let DecodeErrorKind::InvalidJson(msg) = &mut err.kind
        {
            *msg = format!("{path}: {msg}");
        }
        err
    })?;
    de.end().map_err(|e| crate::error::json_error(&text, &e))?;
    Ok(value)
}

/// Writes a body as compact standard JSON.
#[must_use]
pub fn encode_json_body<T: Serialize>(body: &T) -> Vec<u8> {
    // Serializing these plain structs and maps of strings cannot fail.
    serde_json::to_vec(body).unwrap_or_default()
}

/// A tag code set entry: Java sends numbers, Go sends numeric strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TagCode(pub i32);

impl<'de> Deserialize<'de> for TagCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Str(String),
        }
        let value = match Raw::deserialize(d)? {
            Raw::Int(v) => v,
            Raw::Str(s) => s.trim().parse().map_err(serde::de::Error::custom)?,
        };
        // Java's hash wraps to 32 bits; Go may render it unsigned.
        #[allow(clippy::cast_possible_truncation)]
        Ok(TagCode(value as i32))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionData {
    #[serde(deserialize_with = "lenient::boolean")]
    pub class_filter_mode: bool,
    #[serde(deserialize_with = "lenient::or_empty")]
    pub code_set: Vec<TagCode>,
    #[serde(deserialize_with = "lenient::opt_string")]
    pub expression_type: Option<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub sub_string: String,
    #[serde(deserialize_with = "lenient::long")]
    pub sub_version: i64,
    #[serde(deserialize_with = "lenient::strings")]
    pub tags_set: Vec<String>,
    #[serde(deserialize_with = "lenient::string")]
    pub topic: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerData {
    /// The `ConsumeFromWhere` constant's name (clients may send its ordinal).
    #[serde(deserialize_with = "lenient::consume_from_where")]
    pub consume_from_where: String,
    /// The `ConsumeType` constant's name (clients may send its ordinal).
    #[serde(deserialize_with = "lenient::consume_type")]
    pub consume_type: String,
    #[serde(deserialize_with = "lenient::string")]
    pub group_name: String,
    /// The `MessageModel` constant's name (clients may send its ordinal).
    #[serde(deserialize_with = "lenient::message_model")]
    pub message_model: String,
    #[serde(deserialize_with = "lenient::or_empty")]
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub unit_mode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerData {
    #[serde(deserialize_with = "lenient::string")]
    pub group_name: String,
}

/// HEART_BEAT (34) body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct HeartbeatData {
    #[serde(rename = "clientID", deserialize_with = "lenient::string")]
    pub client_id: String,
    #[serde(rename = "consumerDataSet", deserialize_with = "lenient::or_empty")]
    pub consumer_data_set: Vec<ConsumerData>,
    #[serde(rename = "heartbeatFingerprint", deserialize_with = "lenient::int")]
    pub heartbeat_fingerprint: i32,
    #[serde(rename = "producerDataSet", deserialize_with = "lenient::or_empty")]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(rename = "withoutSub", deserialize_with = "lenient::boolean")]
    pub without_sub: bool,
}

/// GET_CONSUMER_LIST_BY_GROUP (38) answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumerListBody {
    pub consumer_id_list: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    /// brokerId (0 = master) → address.
    pub broker_addrs: BTreeMap<i64, String>,
    pub broker_name: String,
    pub cluster: String,
    pub enable_acting_master: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    pub broker_name: String,
    pub perm: i32,
    pub read_queue_nums: i32,
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

/// GET_ROUTEINFO_BY_TOPIC (105) answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    #[serde(deserialize_with = "lenient::long")]
    pub counter: i64,
    #[serde(deserialize_with = "lenient::long")]
    pub state_version: i64,
    #[serde(deserialize_with = "lenient::long")]
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    #[serde(deserialize_with = "lenient::or_empty")]
    pub attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub order: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "lenient::string")]
    pub topic_filter_type: String,
    #[serde(deserialize_with = "lenient::string")]
    pub topic_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

/// A consumer group's settings (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200, and
/// `subscriptionGroup.json`), with Java's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    #[serde(deserialize_with = "lenient::or_empty")]
    pub attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "lenient::long")]
    pub broker_id: i64,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_broadcast_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_from_min_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_message_orderly: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub consume_timeout_minute: i32,
    #[serde(deserialize_with = "lenient::string")]
    pub group_name: String,
    /// `{"type":"CUSTOMIZED"}` or `EXPONENTIAL` with its policy: kept as written.
    pub group_retry_policy: serde_json::Value,
    #[serde(deserialize_with = "lenient::int")]
    pub group_sys_flag: i32,
    #[serde(deserialize_with = "lenient::boolean")]
    pub notify_consumer_ids_changed_enable: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub retry_max_times: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub retry_queue_nums: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_data_set: Option<serde_json::Value>,
    #[serde(deserialize_with = "lenient::long")]
    pub which_broker_when_consume_slowly: i64,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        Self {
            attributes: BTreeMap::new(),
            broker_id: 0,
            consume_broadcast_enable: true,
            consume_enable: true,
            consume_from_min_enable: true,
            consume_message_orderly: false,
            consume_timeout_minute: 15,
            group_name: String::new(),
            group_retry_policy: serde_json::json!({"type": "CUSTOMIZED"}),
            group_sys_flag: 0,
            notify_consumer_ids_changed_enable: true,
            retry_max_times: 16,
            retry_queue_nums: 1,
            subscription_data_set: None,
            which_broker_when_consume_slowly: 1,
        }
    }
}

/// SET_MESSAGE_REQUEST_MODE (401) body: how a group consumes a topic, `PULL` or `POP`
/// (`mqadmin setConsumeMode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageRequestMode {
    #[serde(deserialize_with = "lenient::string")]
    pub consumer_group: String,
    #[serde(deserialize_with = "lenient::string")]
    pub mode: String,
    #[serde(deserialize_with = "lenient::int")]
    pub pop_share_queue_num: i32,
    #[serde(deserialize_with = "lenient::string")]
    pub topic: String,
}

impl Default for MessageRequestMode {
    fn default() -> Self {
        Self { consumer_group: String::new(), mode: "PULL".into(), pop_share_queue_num: 0, topic: String::new() }
    }
}

/// QUERY_ASSIGNMENT (400) body: which queues of `topic` client `client_id` of `consumer_group`
/// should consume, the broker deciding (`setClientRebalance(false)` consumers).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentRequestBody {
    #[serde(deserialize_with = "lenient::string")]
    pub topic: String,
    #[serde(deserialize_with = "lenient::string")]
    pub consumer_group: String,
    #[serde(deserialize_with = "lenient::string")]
    pub client_id: String,
    #[serde(deserialize_with = "lenient::string")]
    pub strategy_name: String,
    /// `CLUSTERING` or `BROADCASTING`.
    #[serde(deserialize_with = "lenient::string")]
    pub message_model: String,
}

/// The answer to QUERY_ASSIGNMENT; `None` (absent) tells the client to keep what it has.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryAssignmentResponseBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_queue_assignments: Option<Vec<MessageQueueAssignment>>,
}

/// One assigned queue and how to consume it (`PULL` or `POP`; a POP queue id of -1 means
/// "pop from any queue of that broker").
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueueAssignment {
    pub message_queue: MessageQueueData,
    #[serde(deserialize_with = "lenient::string")]
    pub mode: String,
    pub attachments: BTreeMap<String, String>,
}

/// BATCH_ACK_MESSAGE (200151) body: acknowledgements of many pops at once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BatchAckMessageRequestBody {
    #[serde(deserialize_with = "lenient::string")]
    pub broker_name: String,
    pub acks: Vec<BatchAck>,
}

/// The acknowledged messages of one pop of one queue: bit `i` of `bit_set` acknowledges queue
/// offset `start_offset + i`. Field names are Java's short ones (the long ones are accepted).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchAck {
    #[serde(rename = "c", alias = "consumerGroup", deserialize_with = "lenient::string")]
    pub consumer_group: String,
    #[serde(rename = "t", alias = "topic", deserialize_with = "lenient::string")]
    pub topic: String,
    /// `"1"` for the retry topic (the topic mark of the handle).
    #[serde(rename = "r", alias = "retry", deserialize_with = "lenient::string")]
    pub retry: String,
    #[serde(rename = "so", alias = "startOffset", deserialize_with = "lenient::long")]
    pub start_offset: i64,
    #[serde(rename = "q", alias = "queueId", deserialize_with = "lenient::int")]
    pub queue_id: i32,
    #[serde(rename = "rq", alias = "reviveQueueId", deserialize_with = "lenient::int")]
    pub revive_queue_id: i32,
    #[serde(rename = "pt", alias = "popTime", deserialize_with = "lenient::long")]
    pub pop_time: i64,
    #[serde(rename = "it", alias = "invisibleTime", deserialize_with = "lenient::long")]
    pub invisible_time: i64,
    /// `java.util.BitSet.toByteArray()` (little-endian bytes), as Base64 text.
    #[serde(rename = "b", alias = "bitSet", with = "base64_bytes")]
    pub bit_set: Vec<u8>,
}

impl BatchAck {
    /// The acknowledged offsets, in ascending order.
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        let start = self.start_offset;
        self.bit_set.iter().enumerate().flat_map(move |(byte_index, byte)| {
            (0..8u32).filter(move |bit| byte & (1u8 << bit) != 0).map(move |bit| {
                let index = (byte_index as i64).saturating_mul(8).saturating_add(i64::from(bit));
                start.saturating_add(index)
            })
        })
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

/// `messageRequestMode.json`, and the GET_ALL_MESSAGE_REQUEST_MODE (402) answer: topic → group
/// → mode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageRequestModes {
    pub message_request_mode_map: BTreeMap<String, BTreeMap<String, MessageRequestMode>>,
}

/// `subscriptionGroup.json`, and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupWrapper {
    pub data_version: DataVersion,
    pub forbidden_table: BTreeMap<String, serde_json::Value>,
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    pub data_version: DataVersion,
    /// 5.x static-topic fields; Silo has no static topics but passes them through unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping_data_version: Option<DataVersion>,
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_detail_map: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_info_map: Option<serde_json::Map<String, serde_json::Value>>,
}

/// REGISTER_BROKER (103) body, uncompressed form.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    #[serde(deserialize_with = "lenient::strings")]
    pub filter_server_list: Vec<String>,
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

/// GET_BROKER_CLUSTER_INFO (106) answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    /// Broker name → its addresses.
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Cluster name → its broker names.
    pub cluster_addr_table: BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    pub topic_list: std::collections::BTreeSet<String>,
}

/// GET_BROKER_HA_STATUS (907): a master's links to its slaves, or a slave's to its master, as
/// Java's `HARuntimeInfo` has them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaRuntimeInfo {
    pub master: bool,
    pub master_commit_log_max_offset: i64,
    pub in_sync_slave_nums: i32,
    pub ha_connection_info: Vec<HaConnectionInfo>,
    pub ha_client_runtime_info: HaClientInfo,
}

/// One slave's link, seen from its master.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaConnectionInfo {
    pub addr: String,
    pub slave_ack_offset: i64,
    /// Bytes the master holds that the slave has not confirmed.
    pub diff: i64,
    pub in_sync: bool,
    pub transferred_byte_in_second: i64,
    pub transfer_from_where: i64,
}

/// A slave's link to its master.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaClientInfo {
    pub master_addr: Option<String>,
    pub transferred_byte_in_second: i64,
    pub max_offset: i64,
    pub last_read_timestamp: i64,
    pub last_write_timestamp: i64,
    pub master_flush_offset: i64,
    /// Java's `isActivated`, as fastjson names it.
    pub activated: bool,
}

/// A string table, the answer to GET_BROKER_RUNTIME_INFO (28).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct KvTable {
    pub table: BTreeMap<String, String>,
}

/// A queue, as the key of [`ConsumeStats::offset_table`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessageQueueData {
    pub broker_name: String,
    pub queue_id: i32,
    pub topic: String,
}

/// One queue's progress in [`ConsumeStats`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetWrapper {
    pub broker_offset: i64,
    pub consumer_offset: i64,
    pub last_timestamp: i64,
    pub pull_offset: i64,
}

/// GET_CONSUME_STATS (208) answer. fastjson keys `offsetTable` by `MessageQueue` objects;
/// [`decode_json_body`] turns those into string keys holding the object's JSON, which
/// [`ConsumeStats::queues`] parses back.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeStats {
    pub consume_tps: f64,
    pub offset_table: BTreeMap<String, OffsetWrapper>,
}

impl ConsumeStats {
    /// The progress per queue, sorted by topic, broker and queue; keys that are not queues
    /// are skipped.
    #[must_use]
    pub fn queues(&self) -> Vec<(MessageQueueData, OffsetWrapper)> {
        let mut out: Vec<(MessageQueueData, OffsetWrapper)> = self
            .offset_table
            .iter()
            .filter_map(|(k, v)| serde_json::from_str::<MessageQueueData>(k).ok().map(|mq| (mq, v.clone())))
            .collect();
        out.sort_by(|a, b| {
            (&a.0.topic, &a.0.broker_name, a.0.queue_id).cmp(&(&b.0.topic, &b.0.broker_name, b.0.queue_id))
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_integer_keys_are_accepted() {
        let text = br#"{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.7:10911", 1 :"10.0.0.8:10911"},"brokerName":"b","cluster":"c"}],"queueDatas":[]}"#;
        let route: TopicRouteData = decode_json_body(text).unwrap();
        assert_eq!(route.broker_datas[0].broker_addrs[&1], "10.0.0.8:10911");
        let out = String::from_utf8(encode_json_body(&route)).unwrap();
        assert!(out.contains(r#""brokerAddrs":{"0":"10.0.0.7:10911","1":"10.0.0.8:10911"}"#), "{out}");
    }

    #[test]
    fn strings_that_look_like_keys_are_left_alone() {
        let text = br#"{"a":"{0:1}","b":[{"c":1},2]}"#;
        assert!(matches!(quote_bare_keys(text).unwrap(), Cow::Borrowed(_)));
    }

    #[test]
    fn object_keys_become_string_keys() {
        let text = br#"{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T\"x"}:{"brokerOffset":5},{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":3}}}"#;
        let v: serde_json::Value = decode_json_body(text).unwrap();
        let table = v["offsetTable"].as_object().unwrap();
        assert_eq!(table.len(), 2);
        let (key, value) = table.iter().find(|(k, _)| k.contains("\"queueId\":1")).unwrap();
        let mq: serde_json::Value = serde_json::from_str(key).unwrap();
        assert_eq!(mq["topic"], "T\"x");
        assert_eq!(value["brokerOffset"], 5);
        assert!(decode_json_body::<serde_json::Value>(br#"{{"a":1"#).is_err());
    }

    #[test]
    fn go_code_sets_are_strings() {
        let sub: SubscriptionData =
            decode_json_body(br#"{"codeSet":["2598919"],"tagsSet":["TagA"],"topic":"T"}"#).unwrap();
        assert_eq!(sub.code_set, vec![TagCode(2_598_919)]);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = vec![b'['; 10_000];
        assert!(decode_json_body::<serde_json::Value>(&text).is_err());
    }
}
