//! The remoting adapter for the admin requests: topic create/delete/list (17, 215, 21), runtime info (28), topic and consumer
//! statistics (202, 208), who consumes a topic and a group's connections (300, 203), view a
//! message by id (33) and query by key (12); docs/protocol.md §2.9.

use crate::core::attributes::{MESSAGE_TYPE, alter, parse_modification};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use silo_wire::Frame;
use silo_wire::body::{SubscriptionData, encode_json_body};
use silo_wire::custom::ViewMessageRequestHeader;

use super::error_response;
use crate::broker::Broker;
use crate::connection::{Body, Outgoing};
use crate::core::BrokerError;
use crate::response;
use crate::topics::topic_config;
use crate::try_reply;

#[derive(Debug, Serialize)]
struct KvTable {
    table: BTreeMap<String, String>,
}

/// A `MessageQueue` as a fastjson map key (written bare: `{"brokerName":..}:value`).
fn queue_key(broker_name: &str, topic: &str, queue_id: i32) -> serde_json::Value {
    serde_json::json!({"brokerName": broker_name, "queueId": queue_id, "topic": topic})
}

/// QUERY_TOPIC_CONSUME_BY_WHO body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GroupList {
    group_list: BTreeSet<String>,
}

/// GET_CONSUMER_CONNECTION_LIST body (`ConsumerConnection`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsumerConnection {
    connection_set: Vec<Connection>,
    consume_from_where: String,
    consume_type: String,
    message_model: String,
    subscription_table: BTreeMap<String, SubscriptionData>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Connection {
    client_addr: String,
    client_id: String,
    language: &'static str,
    version: i32,
}

fn field<'a>(frame: &'a Frame, key: &str) -> Option<&'a str> {
    frame.header.ext_fields.get(key)
}

/// A header field the request must carry.
fn required<'a>(frame: &'a Frame, key: &'static str) -> Result<&'a str, BrokerError> {
    field(frame, key).ok_or(BrokerError::MissingField(key))
}

fn reply(opaque: i32, r: Result<Outgoing, BrokerError>) -> Outgoing {
    r.unwrap_or_else(|e| error_response(opaque, &e))
}

impl Broker {
    pub(crate) fn create_topic_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            (|| {
                let topic = required(frame, "topic")?;
                let num = |k: &str, d: i32| field(frame, k).and_then(|v| v.parse::<i32>().ok()).unwrap_or(d);
                let mut tc = topic_config(topic, num("readQueueNums", 16), num("writeQueueNums", 16), num("perm", 6));
                tc.topic_sys_flag = num("topicSysFlag", 0);
                tc.order = field(frame, "order").is_some_and(|v| v == "true");
                if let Some(t) = field(frame, "topicFilterType") {
                    tc.topic_filter_type = t.into();
                }
                let modification = parse_modification(field(frame, "attributes").unwrap_or(""))?;
                let mixed = modification.get(&format!("+{MESSAGE_TYPE}")).is_some_and(|v| v == "MIXED");
                if mixed && !self.config.enable_mixed_message_type {
                    return Err(BrokerError::MixedMessageTypeUnsupported);
                }
                let existing = self.topics.get(topic);
                let current = existing.as_ref().map(|t| t.attributes.clone()).unwrap_or_default();
                tc.attributes = alter(existing.is_none(), &current, &modification)?;
                self.create_topic(tc)?;
                Ok(response::success(opaque))
            })(),
        )
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the body is the group's settings.
    pub(crate) fn update_group_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let config: silo_wire::body::SubscriptionGroupConfig = crate::try_reply!(super::body(frame));
        if !crate::groups::is_valid_group(&config.group_name) {
            return error_response(opaque, &BrokerError::InvalidGroup(config.group_name));
        }
        reply(opaque, self.groups.put(config).map_err(BrokerError::from).map(|()| response::success(opaque)))
    }

    /// GET_SUBSCRIPTIONGROUP_CONFIG (352): header `group`; created on first use, as Java does.
    pub(crate) fn group_config_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            required(frame, "group").and_then(|g| match self.groups.find(g)? {
                Some(config) => Ok(response::with_body(opaque, encode_json_body(&config))),
                None => Err(BrokerError::NoGroupHere),
            }),
        )
    }

    /// SET_MESSAGE_REQUEST_MODE (401): a group consumes a topic by PULL or POP. Java's checks:
    /// not a retry topic, the topic exists, the group exists (or is created on first use).
    pub(crate) fn set_request_mode_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let mode: silo_wire::body::MessageRequestMode = crate::try_reply!(super::body(frame));
        reply(
            opaque,
            (|| {
                if mode.topic.starts_with(silo_store::names::RETRY_PREFIX) {
                    return Err(BrokerError::RetryTopicMode);
                }
                if mode.mode != "PULL" && mode.mode != "POP" {
                    return Err(BrokerError::BadRequestMode(mode.mode.clone()));
                }
                if self.topics.get(&mode.topic).is_none() {
                    return Err(BrokerError::TopicNotFound(mode.topic.clone()));
                }
                if self.groups.find(&mode.consumer_group)?.is_none() {
                    return Err(BrokerError::GroupNotExist);
                }
                self.request_modes.set(mode)?;
                Ok(response::success(opaque))
            })(),
        )
    }

    /// GET_ALL_MESSAGE_REQUEST_MODE (402).
    pub(crate) fn all_request_modes_frame(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&self.request_modes.all()))
    }

    /// GET_BROKER_HA_STATUS (907): the replication links, for `mqadmin haStatus`.
    pub(crate) fn ha_status_frame(&self, frame: &Frame) -> Outgoing {
        let info = self.ha_links.runtime_info(
            &self.store,
            self.config.ha.role.is_master(),
            self.config.ha.max_gap_not_in_sync,
        );
        response::with_body(frame.header.opaque, encode_json_body(&info))
    }

    /// GET_ALL_CONSUMER_OFFSET (43): every committed offset, for a slave's copy.
    pub(crate) fn all_consumer_offsets_frame(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&self.offsets.all()))
    }

    /// GET_ALL_DELAY_OFFSET (45): the delay scheduler's progress (`delayOffset.json` as it is),
    /// for a slave's copy.
    pub(crate) fn all_delay_offsets_frame(&self, frame: &Frame) -> Outgoing {
        let body = self.config_file_or(&crate::schedule::delay_offset_path(&self.config), br#"{"offsetTable":{}}"#);
        response::with_body(frame.header.opaque, body)
    }

    /// A config file's bytes as they are on disk, or `absent` when it is missing or empty.
    fn config_file_or(&self, path: &std::path::Path, absent: &[u8]) -> Vec<u8> {
        match self.store.config().fs.read(path) {
            Ok(bytes) if !bytes.is_empty() => bytes,
            _ => absent.to_vec(),
        }
    }

    /// GET_TIMER_CHECK_POINT (60): the timer checkpoint as `config/timercheck` holds it (zeros
    /// before the first timer), the 56 bytes Java's slave decodes.
    pub(crate) fn timer_checkpoint_frame(&self, frame: &Frame) -> Outgoing {
        let path = self.config.store_path_root_dir.join(silo_store::timer::CHECKPOINT_FILE);
        let bytes = self.store.config().fs.read(&path).unwrap_or_default();
        let checkpoint = silo_store::timer::layout::TimerCheckpoint::decode(&bytes);
        response::with_body(frame.header.opaque, checkpoint.encode().to_vec())
    }

    /// GET_TIMER_METRICS (61): `config/timermetrics` as it is, or an empty table (Silo keeps no
    /// per-topic timer counts of its own).
    pub(crate) fn timer_metrics_frame(&self, frame: &Frame) -> Outgoing {
        let path = self.config.store_path_root_dir.join("config").join("timermetrics");
        let empty = br#"{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"timingCount":{}}"#;
        response::with_body(frame.header.opaque, self.config_file_or(&path, empty))
    }

    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
    pub(crate) fn all_group_config_frame(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&self.groups.all()))
    }

    /// DELETE_SUBSCRIPTIONGROUP (207): header `groupName`, optional `cleanOffset` (also forget
    /// the group's committed offsets).
    pub(crate) fn delete_group_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            required(frame, "groupName").and_then(|g| {
                self.groups.delete(g)?;
                if field(frame, "cleanOffset").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
                    self.offsets.remove_group(g);
                    self.offsets.persist()?;
                }
                Ok(response::success(opaque))
            }),
        )
    }

    pub(crate) fn delete_topic_frame(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(opaque, required(frame, "topic").and_then(|t| self.delete_topic(t)).map(|()| response::success(opaque)))
    }

    pub(crate) fn topic_config(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        // TopicConfigAndQueueMapping: the topic config, without a static-topic mapping.
        reply(
            opaque,
            required(frame, "topic")
                .and_then(|t| self.topic(t))
                .map(|tc| response::with_body(opaque, encode_json_body(&tc))),
        )
    }

    pub(crate) fn all_topic_config(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&self.topics.all()))
    }

    pub(crate) fn runtime_info_frame(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&KvTable { table: self.runtime_info() }))
    }

    /// GET_TOPIC_STATS_INFO (202). The map is keyed by `MessageQueue` objects, written by hand
    /// as fastjson writes them (standard JSON has no object keys).
    pub(crate) fn topic_stats_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            (|| {
                let topic = required(frame, "topic")?;
                let entries: Vec<String> = self
                    .topic_stats(topic)?
                    .into_iter()
                    .map(|s| {
                        format!(
                            "{}:{{\"lastUpdateTimestamp\":{},\"maxOffset\":{},\"minOffset\":{}}}",
                            queue_key(&self.config.broker_name, topic, s.queue_id),
                            s.last_update,
                            s.max_offset,
                            s.min_offset
                        )
                    })
                    .collect();
                let body = format!("{{\"offsetTable\":{{{}}},\"topicPutTps\":0.0}}", entries.join(","));
                Ok(response::with_body(opaque, body.into_bytes()))
            })(),
        )
    }

    /// GET_CONSUME_STATS (208): fastjson's `ConsumeStats`, keyed by `MessageQueue` objects,
    /// written by hand in that form.
    pub(crate) fn consume_stats_frame(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            (|| {
                let group = required(frame, "consumerGroup")?;
                let topic = field(frame, "topic").filter(|t| !t.is_empty());
                let entries: Vec<String> = self
                    .consume_stats(group, topic)
                    .into_iter()
                    .map(|p| {
                        format!(
                            "{}:{{\"brokerOffset\":{},\"consumerOffset\":{},\"lastTimestamp\":{},\"pullOffset\":{}}}",
                            queue_key(&self.config.broker_name, &p.topic, p.queue_id),
                            p.broker_offset,
                            p.consumer_offset,
                            p.last_consumed,
                            p.consumer_offset
                        )
                    })
                    .collect();
                let body = format!("{{\"consumeTps\":0.0,\"offsetTable\":{{{}}}}}", entries.join(","));
                Ok(response::with_body(opaque, body.into_bytes()))
            })(),
        )
    }

    /// QUERY_TOPIC_CONSUME_BY_WHO (300).
    pub(crate) fn topic_consumed_by(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            required(frame, "topic").map(|t| {
                response::with_body(opaque, encode_json_body(&GroupList { group_list: self.groups_of_topic(t) }))
            }),
        )
    }

    /// GET_CONSUMER_CONNECTION_LIST (203).
    pub(crate) fn consumer_connections(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            (|| {
                let info = self.group_info(required(frame, "consumerGroup")?)?;
                let body = ConsumerConnection {
                    connection_set: info
                        .connections
                        .into_iter()
                        .map(|c| Connection {
                            client_addr: c.client_addr.to_string(),
                            client_id: c.client_id,
                            language: c.language.name(),
                            version: c.version,
                        })
                        .collect(),
                    consume_from_where: info.consume_from_where,
                    consume_type: info.consume_type,
                    message_model: info.message_model,
                    subscription_table: info.subscriptions.into_iter().map(|s| (s.topic.clone(), s)).collect(),
                };
                Ok(response::with_body(opaque, encode_json_body(&body)))
            })(),
        )
    }

    pub(crate) fn view_message(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ViewMessageRequestHeader = try_reply!(super::header(frame));
        reply(
            opaque,
            self.message_at(h.offset).map(|m| {
                let mut out = response::success(opaque);
                out.body = Body::Records(vec![m]);
                out
            }),
        )
    }

    pub(crate) fn query_message(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        reply(
            opaque,
            (|| {
                let (topic, key) = (required(frame, "topic")?, required(frame, "key")?);
                let num = |k: &str, d: i64| field(frame, k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(d);
                let max = usize::try_from(num("maxNum", 32)).unwrap_or(1);
                let found =
                    self.messages_by_key(topic, key, max, num("beginTimestamp", 0), num("endTimestamp", i64::MAX))?;
                let mut out = response::success(opaque);
                out.header.ext_fields.insert("indexLastUpdateTimestamp", "0");
                out.header.ext_fields.insert("indexLastUpdatePhyoffset", "0");
                out.body = Body::Records(found);
                Ok(out)
            })(),
        )
    }
}
