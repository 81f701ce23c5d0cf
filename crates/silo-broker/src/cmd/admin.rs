//! Admin requests: topic create/delete/list (17, 215, 21), runtime info (28), topic and consumer
//! statistics (202, 208), who consumes a topic and a group's connections (300, 203), view a
//! message by id (33) and query by key (12); docs/protocol.md §2.9.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use silo_wire::Frame;
use silo_wire::body::{SubscriptionData, encode_json_body};
use silo_wire::codes::response as rs;
use silo_wire::custom::ViewMessageRequestHeader;

use crate::broker::Broker;
use crate::connection::{Body, Outgoing};
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

impl Broker {
    pub(crate) fn create_topic(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(topic) = field(frame, "topic") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic is required");
        };
        if !silo_store::names::is_valid_topic(topic) || topic.len() > 127 {
            return response::error(opaque, rs::INVALID_PARAMETER, format!("the topic[{topic}] is invalid"));
        }
        let num = |k: &str, d: i32| field(frame, k).and_then(|v| v.parse::<i32>().ok()).unwrap_or(d);
        let read = num("readQueueNums", 16);
        let write = num("writeQueueNums", 16);
        if !(1..=1024).contains(&read) || !(1..=1024).contains(&write) {
            return response::error(opaque, rs::INVALID_PARAMETER, "queue numbers must be within 1..=1024");
        }
        let mut tc = topic_config(topic, read, write, num("perm", 6));
        tc.topic_sys_flag = num("topicSysFlag", 0);
        tc.order = field(frame, "order").is_some_and(|v| v == "true");
        if let Some(t) = field(frame, "topicFilterType") {
            tc.topic_filter_type = t.into();
        }
        match self.topics.put(tc) {
            Ok(_) => {
                self.register_routes_if_changed();
                response::success(opaque)
            }
            Err(e) => response::error(opaque, rs::SYSTEM_ERROR, e.to_string()),
        }
    }

    pub(crate) fn delete_topic(self: &Arc<Self>, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(topic) = field(frame, "topic") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic is required");
        };
        match self.topics.delete(topic) {
            Ok(_) => {
                self.register_routes_if_changed();
                response::success(opaque)
            }
            Err(e) => response::error(opaque, rs::SYSTEM_ERROR, e.to_string()),
        }
    }

    pub(crate) fn topic_config(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(topic) = field(frame, "topic") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic is required");
        };
        match self.topics.get(topic) {
            // TopicConfigAndQueueMapping: the topic config, without a static-topic mapping.
            Some(tc) => response::with_body(opaque, encode_json_body(&tc)),
            None => response::error(opaque, rs::TOPIC_NOT_EXIST, format!("No topic in this broker. topic: {topic}")),
        }
    }

    pub(crate) fn all_topic_config(&self, frame: &Frame) -> Outgoing {
        response::with_body(frame.header.opaque, encode_json_body(&self.topics.all()))
    }

    pub(crate) fn runtime_info(&self, frame: &Frame) -> Outgoing {
        let (min, max) = self.store.commit_log_range();
        let put = self.stats.put_messages.load(std::sync::atomic::Ordering::Relaxed);
        let got = self.stats.get_messages.load(std::sync::atomic::Ordering::Relaxed);
        let boot = std::time::SystemTime::now()
            .checked_sub(self.started.elapsed())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis());
        let mut table: BTreeMap<String, String> = [
            ("brokerVersionDesc", "V5_3_3".to_owned()),
            ("brokerVersion", silo_wire::header::SILO_VERSION.to_string()),
            ("msgPutTotalTodayNow", put.to_string()),
            ("msgGetTotalTodayNow", got.to_string()),
            ("msgPutTotalTodayMorning", "0".into()),
            ("msgGetTotalTodayMorning", "0".into()),
            ("msgPutTotalYesterdayMorning", "0".into()),
            ("msgGetTotalYesterdayMorning", "0".into()),
            ("putTps", "0.0 0.0 0.0".into()),
            ("getTransferredTps", "0.0 0.0 0.0".into()),
            ("commitLogMinOffset", min.to_string()),
            ("commitLogMaxOffset", max.to_string()),
            ("dispatchBehindBytes", self.store.dispatch_behind().to_string()),
            ("commitLogDiskRatio", "0.0".into()),
            ("pageCacheLockTimeMills", "0".into()),
            ("earliestMessageTimeStamp", "0".into()),
            ("bootTimestamp", boot.to_string()),
            // Requests are handled as they arrive: no queue builds up in front of a pool.
            ("brokerActive", "true".into()),
            ("sendThreadPoolQueueSize", "0".into()),
            ("sendThreadPoolQueueHeadWaitTimeMills", "0".into()),
            ("pullThreadPoolQueueSize", "0".into()),
            ("pullThreadPoolQueueHeadWaitTimeMills", "0".into()),
            ("ackThreadPoolQueueSize", "0".into()),
            ("ackThreadPoolQueueHeadWaitTimeMills", "0".into()),
            ("runtime", format!("[ {} seconds ]", self.started.elapsed().as_secs())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        if let Some((allocs, bytes)) = crate::alloc_probe::read() {
            table.insert("siloAllocCount".into(), allocs.to_string());
            table.insert("siloAllocBytes".into(), bytes.to_string());
        }
        response::with_body(frame.header.opaque, encode_json_body(&KvTable { table }))
    }

    /// GET_TOPIC_STATS_INFO (202): per queue of the topic, its min and max offset and the
    /// store time of its last message (0 for an empty queue). Map keyed by `MessageQueue`
    /// objects, written by hand as for GET_CONSUME_STATS.
    pub(crate) fn topic_stats(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(topic) = field(frame, "topic") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic is required");
        };
        let Some(tc) = self.topics.get(topic) else {
            return response::error(opaque, rs::TOPIC_NOT_EXIST, format!("topic[{topic}] not exist"));
        };
        let mut entries = Vec::new();
        for q in 0..tc.read_queue_nums.max(tc.write_queue_nums).max(0) {
            let min = self.store.min_offset_in_queue(topic, q).max(0);
            let max = self.store.max_offset_in_queue(topic, q).max(0);
            let last = if max > 0 { self.store.message_store_time(topic, q, max - 1).unwrap_or(0) } else { 0 };
            entries.push(format!(
                "{}:{{\"lastUpdateTimestamp\":{last},\"maxOffset\":{max},\"minOffset\":{min}}}",
                queue_key(&self.config.broker_name, topic, q)
            ));
        }
        let body = format!("{{\"offsetTable\":{{{}}},\"topicPutTps\":0.0}}", entries.join(","));
        response::with_body(opaque, body.into_bytes())
    }

    /// GET_CONSUME_STATS (208): per queue of the group's topics (or of the one topic asked
    /// for), the queue's end, the committed offset and the store time of the last consumed
    /// message. The body is fastjson's `ConsumeStats`, whose map is keyed by `MessageQueue`
    /// objects: fastjson writes object keys, which standard JSON cannot, so it is written here
    /// by hand in that form.
    pub(crate) fn consume_stats(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(group) = field(frame, "consumerGroup") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "consumerGroup is required");
        };
        let topics: Vec<String> = match field(frame, "topic").filter(|t| !t.is_empty()) {
            Some(t) => vec![t.to_owned()],
            None => self.offsets.group_offsets(group).into_keys().collect(),
        };
        let mut entries = Vec::new();
        for topic in &topics {
            let Some(tc) = self.topics.get(topic) else { continue };
            for q in 0..tc.read_queue_nums.max(0) {
                let broker_offset = self.store.max_offset_in_queue(topic, q);
                let consumer_offset = self.offsets.query(group, topic, q).unwrap_or(0).max(0);
                let last = if consumer_offset > 0 {
                    self.store.message_store_time(topic, q, consumer_offset - 1).unwrap_or(0)
                } else {
                    0
                };
                let key = queue_key(&self.config.broker_name, topic, q);
                entries.push(format!(
                    "{key}:{{\"brokerOffset\":{broker_offset},\"consumerOffset\":{consumer_offset},\"lastTimestamp\":{last},\"pullOffset\":{consumer_offset}}}"
                ));
            }
        }
        let body = format!("{{\"consumeTps\":0.0,\"offsetTable\":{{{}}}}}", entries.join(","));
        response::with_body(opaque, body.into_bytes())
    }

    /// QUERY_TOPIC_CONSUME_BY_WHO (300): groups subscribed to the topic now, and groups with
    /// committed offsets on it.
    pub(crate) fn topic_consumed_by(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(topic) = field(frame, "topic") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic is required");
        };
        let mut group_list: BTreeSet<String> = self.clients.groups_of_topic(topic).into_iter().collect();
        group_list.extend(self.offsets.groups_of_topic(topic));
        response::with_body(opaque, encode_json_body(&GroupList { group_list }))
    }

    /// GET_CONSUMER_CONNECTION_LIST (203): the group's online clients (id, address, language,
    /// version), subscriptions and settings; CONSUMER_NOT_ONLINE when it has none.
    pub(crate) fn consumer_connections(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let Some(group) = field(frame, "consumerGroup") else {
            return response::error(opaque, rs::INVALID_PARAMETER, "consumerGroup is required");
        };
        let Some(info) = self.clients.group_info(group) else {
            return response::error(opaque, rs::CONSUMER_NOT_ONLINE, format!("the consumer group[{group}] not online"));
        };
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
        response::with_body(opaque, encode_json_body(&body))
    }

    pub(crate) fn view_message(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ViewMessageRequestHeader = try_reply!(super::header(frame));
        match self.store.read_at(h.offset) {
            Ok(m) => {
                let mut out = response::success(opaque);
                out.body = Body::Records(vec![m]);
                out
            }
            Err(e) => response::error(
                opaque,
                rs::SYSTEM_ERROR,
                format!("can not find message by the offset, {}: {e}", h.offset),
            ),
        }
    }

    pub(crate) fn query_message(&self, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let (Some(topic), Some(key)) = (field(frame, "topic"), field(frame, "key")) else {
            return response::error(opaque, rs::INVALID_PARAMETER, "topic and key are required");
        };
        let num = |k: &str, d: i64| field(frame, k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(d);
        let max = num("maxNum", 32).clamp(1, 64) as usize;
        let found = self.store.query_by_key(topic, key, max, num("beginTimestamp", 0), num("endTimestamp", i64::MAX));
        if found.is_empty() {
            return response::error(opaque, rs::QUERY_NOT_FOUND, "can not find message, maybe time range not correct");
        }
        let mut out = response::success(opaque);
        out.header.ext_fields.insert("indexLastUpdateTimestamp", "0");
        out.header.ext_fields.insert("indexLastUpdatePhyoffset", "0");
        out.body = Body::Records(found);
        out
    }
}
