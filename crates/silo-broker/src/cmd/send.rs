//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
//! CONSUMER_SEND_MSG_BACK (36); docs/protocol.md §2.2, §2.7.
//!
//! The body goes from the request's read buffer into the commit log in one copy: the store
//! encodes the record around it. The properties string is built in a per-connection buffer.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use silo_store::names::{DLQ_PREFIX, RETRY_PREFIX, is_valid_topic};
use silo_store::{MessageToStore, StoreError};
use silo_wire::codes::response as rs;
use silo_wire::custom::{ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader, SendMessageResponseHeader};
use silo_wire::msgid::offset_msg_id;
use silo_wire::properties::{PropertiesView, keys};
use silo_wire::record::{Decoded, decode_record};
use silo_wire::{ExtStr, Frame};

use crate::broker::{Broker, ConnState};
use crate::connection::{Channel, Outgoing};
use crate::response;
use crate::topics::{PERM_WRITE, SCHEDULE_TOPIC, TopicQueues};
use crate::try_reply;

/// Longest user topic (retry and DLQ topics may be longer, up to 255).
const MAX_TOPIC_LEN: usize = 127;

fn store_error(opaque: i32, e: &StoreError) -> Outgoing {
    let code = match e {
        StoreError::MessageIllegal(_) | StoreError::InvalidLmqName(_) | StoreError::InvalidTopic(_) => {
            rs::MESSAGE_ILLEGAL
        }
        StoreError::ShutDown => rs::SERVICE_NOT_AVAILABLE,
        _ => rs::SYSTEM_ERROR,
    };
    response::error(opaque, code, e.to_string())
}

/// Builds the stored properties: the client's, with a trailing separator, plus what the broker
/// adds (`CLUSTER`, and `UNIQ_KEY` for single messages that lack it).
fn stored_properties(out: &mut String, client: &str, cluster: &str, add_uniq: Option<&str>) {
    out.clear();
    out.push_str(client);
    if !out.is_empty() && !out.ends_with('\u{2}') {
        out.push('\u{2}');
    }
    if let Some(uniq) = add_uniq {
        let _ = write!(out, "{}\u{1}{uniq}\u{2}", keys::UNIQ_KEY);
    }
    if !cluster.is_empty() {
        let _ = write!(out, "{}\u{1}{cluster}\u{2}", keys::CLUSTER);
    }
}

impl Broker {
    fn check_topic(&self, opaque: i32, topic: &str) -> Result<(), Outgoing> {
        let system = topic.starts_with(RETRY_PREFIX) || topic.starts_with(DLQ_PREFIX);
        if !is_valid_topic(topic) || (!system && topic.len() > MAX_TOPIC_LEN) {
            return Err(response::error(opaque, rs::INVALID_PARAMETER, format!("the topic[{topic}] is invalid")));
        }
        Ok(())
    }

    pub(crate) fn send_message(
        self: &Arc<Self>,
        conn: &mut ConnState,
        channel: &Channel,
        frame: Frame,
    ) -> Option<Outgoing> {
        let oneway = frame.header.is_oneway();
        let out = self.send_message_inner(conn, channel, frame);
        match out {
            SendOutcome::Reply(out) => (!oneway).then_some(out),
            SendOutcome::AfterFlush { end, reply } => {
                let broker = Arc::clone(self);
                let channel = channel.clone();
                tokio::spawn(async move {
                    let flushed = tokio::time::timeout(Duration::from_secs(5), broker.store.flushed(end)).await;
                    let mut reply = reply;
                    if !matches!(flushed, Ok(Ok(()))) {
                        reply.header.code = rs::FLUSH_DISK_TIMEOUT;
                    }
                    if !oneway {
                        channel.send(reply);
                    }
                });
                None
            }
        }
    }

    fn send_message_inner(self: &Arc<Self>, conn: &mut ConnState, channel: &Channel, frame: Frame) -> SendOutcome {
        let opaque = frame.header.opaque;
        // The header's texts are moved out of the request, and its field vector is reused for
        // the response.
        let mut ext = frame.header.ext_fields;
        let h = match SendMessageRequestHeader::take_for_code(frame.header.code, &mut ext) {
            Ok(h) => h,
            Err(e) => {
                return SendOutcome::Reply(response::error(
                    opaque,
                    rs::INVALID_PARAMETER,
                    format!("bad request header: {e}"),
                ));
            }
        };
        if let Err(out) = self.check_topic(opaque, &h.topic) {
            return SendOutcome::Reply(out);
        }
        let mut topic = h.topic.clone();
        let is_retry = topic.starts_with(RETRY_PREFIX);
        // Topic config, auto-created from the default topic or as a retry topic.
        let tc = match self.topics.queues(&topic) {
            Some(queues) => Ok(Some(queues)),
            None if is_retry => self.topics.ensure_system(&topic, 1).map(|tc| Some(TopicQueues::of(&tc))),
            None if self.config.auto_create_topic_enable => self
                .topics
                .create_from_default(&topic, &h.default_topic, h.default_topic_queue_nums)
                .map(|tc| tc.as_ref().map(TopicQueues::of)),
            None => Ok(None),
        };
        let tc = match tc {
            Ok(Some(tc)) => tc,
            Ok(None) => {
                return SendOutcome::Reply(response::error(
                    opaque,
                    rs::TOPIC_NOT_EXIST,
                    format!("topic[{topic}] not exist, apply first please!"),
                ));
            }
            Err(e) => return SendOutcome::Reply(store_error(opaque, &e)),
        };
        if tc.perm & PERM_WRITE == 0 {
            return SendOutcome::Reply(response::error(
                opaque,
                rs::NO_PERMISSION,
                format!("the topic[{topic}] sending message is forbidden"),
            ));
        }
        self.register_routes_if_changed();
        let queues = tc.write_queue_nums.max(tc.read_queue_nums);
        let mut queue_id = if h.queue_id < 0 { self.pick_queue(tc.write_queue_nums) } else { h.queue_id };
        if queue_id >= queues {
            return SendOutcome::Reply(response::error(
                opaque,
                rs::INVALID_PARAMETER,
                format!("request queueId[{queue_id}] is illegal, topic has {queues} queues"),
            ));
        }
        let client_props = h.properties.as_deref().unwrap_or("");
        let view = PropertiesView::from_valid(client_props);
        // A retry message over its limit goes to the group's dead-letter queue.
        let reconsume = h.reconsume_times.unwrap_or(0);
        if is_retry {
            let max = h.max_reconsume_times.unwrap_or(16);
            if reconsume > max {
                let group = topic.trim_start_matches(RETRY_PREFIX).to_owned();
                topic = ExtStr::from(format!("{DLQ_PREFIX}{group}"));
                if let Err(e) = self.topics.ensure_system(&topic, 1) {
                    return SendOutcome::Reply(store_error(opaque, &e));
                }
                self.register_routes_if_changed();
                queue_id = 0;
            }
        }
        let born_host = channel.remote;
        let batch = h.batch.unwrap_or(false);
        let result = if batch {
            if is_retry || view.get(keys::DELAY).is_some_and(|d| d != "0" && d != "-1") {
                return SendOutcome::Reply(response::error(
                    opaque,
                    rs::MESSAGE_ILLEGAL,
                    "a batch cannot be retried or delayed",
                ));
            }
            // Inner messages keep their own properties verbatim (docs/protocol.md §3.1).
            let mut msgs = Vec::new();
            for entry in silo_wire::decode_batch(&frame.body) {
                let entry = match entry {
                    Ok(e) => e,
                    Err(e) => {
                        return SendOutcome::Reply(response::error(
                            opaque,
                            rs::MESSAGE_ILLEGAL,
                            format!("bad batch body: {e}"),
                        ));
                    }
                };
                msgs.push(MessageToStore {
                    topic: &topic,
                    queue_id,
                    flag: entry.flag,
                    sys_flag: h.sys_flag,
                    born_timestamp: h.born_timestamp,
                    born_host,
                    reconsume_times: reconsume,
                    prepared_tx_offset: 0,
                    body: entry.body,
                    properties: entry.properties.as_str(),
                });
            }
            if msgs.is_empty() {
                return SendOutcome::Reply(response::error(opaque, rs::MESSAGE_ILLEGAL, "empty batch"));
            }
            self.store.append_batch(&mut conn.appender, &msgs).map(|r| (r, msgs.len()))
        } else {
            if view.get(keys::TRAN_MSG).is_some_and(|v| v == "true") {
                return SendOutcome::Reply(response::error(
                    opaque,
                    rs::NO_PERMISSION,
                    "transactional messages are not supported",
                ));
            }
            let uniq_missing = view.get(keys::UNIQ_KEY).is_none();
            let generated;
            let add_uniq = if uniq_missing {
                generated = offset_msg_id(born_host, h.born_timestamp ^ self.store.commit_log_range().1);
                Some(generated.as_str())
            } else {
                None
            };
            let mut props = std::mem::take(&mut conn.props);
            stored_properties(&mut props, client_props, &self.config.broker_cluster_name, add_uniq);
            // Delayed messages wait in the schedule topic (docs/protocol.md §4.12).
            let delay = view.get(keys::DELAY).and_then(|d| d.parse::<i64>().ok()).filter(|d| *d > 0);
            let (store_topic, store_queue) = match delay {
                Some(level) => {
                    let level = level.min(18);
                    let _ =
                        write!(props, "{}\u{1}{topic}\u{2}{}\u{1}{queue_id}\u{2}", keys::REAL_TOPIC, keys::REAL_QID);
                    (SCHEDULE_TOPIC, (level - 1) as i32)
                }
                None => (topic.as_str(), queue_id),
            };
            let msg = MessageToStore {
                topic: store_topic,
                queue_id: store_queue,
                flag: h.flag,
                sys_flag: h.sys_flag,
                born_timestamp: h.born_timestamp,
                born_host,
                reconsume_times: reconsume,
                prepared_tx_offset: 0,
                body: &frame.body,
                properties: &props,
            };
            let r = self.store.append(&mut conn.appender, &msg).map(|r| (r, 1));
            conn.props = props;
            r
        };
        let (result, count) = match result {
            Ok(r) => r,
            Err(e) => return SendOutcome::Reply(store_error(opaque, &e)),
        };
        self.stats.put_messages.fetch_add(count as u64, std::sync::atomic::Ordering::Relaxed);
        let store_host = self.config.broker_addr();
        let msg_id = if batch {
            let records = conn.appender.batch_records();
            let mut ids = String::with_capacity(records.len() * 33);
            for (i, (phys, _)) in records.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(ids, "{sep}{}", offset_msg_id(store_host, *phys));
            }
            ExtStr::from(ids)
        } else {
            ExtStr::from(offset_msg_id(store_host, result.physical_offset).as_str())
        };
        let header = SendMessageResponseHeader {
            msg_id,
            queue_id,
            queue_offset: result.queue_offset,
            transaction_id: None,
            batch_uniq_id: None,
            msg_region: ExtStr::from(self.config.region_id.as_str()),
            trace_on: ExtStr::from_static(if self.config.trace_on { "true" } else { "false" }),
        };
        let reply = response::with_header_in(opaque, rs::SUCCESS, &header, ext);
        let wait = view.get(keys::WAIT).is_none_or(|w| w != "false");
        if self.store.flush_mode().is_sync() && wait {
            SendOutcome::AfterFlush { end: result.end_offset, reply }
        } else {
            SendOutcome::Reply(reply)
        }
    }

    /// CONSUMER_SEND_MSG_BACK: a consumer failed a message; re-store it into the group's retry
    /// topic through the schedule topic, or into its dead-letter queue.
    pub(crate) fn send_back(self: &Arc<Self>, conn: &mut ConnState, frame: &Frame) -> Outgoing {
        let opaque = frame.header.opaque;
        let h: ConsumerSendMsgBackRequestHeader = try_reply!(super::header(frame));
        let Ok(original) = self.store.read_at(h.offset) else {
            return response::error(opaque, rs::SYSTEM_ERROR, format!("look message by offset failed, {}", h.offset));
        };
        let Ok(Decoded::Record(rec)) = decode_record(&original, 0) else {
            return response::error(opaque, rs::SYSTEM_ERROR, "stored record does not decode");
        };
        let max = h.max_reconsume_times.unwrap_or(16);
        let reconsume = rec.meta.reconsume_times.saturating_add(1);
        let to_dlq = rec.meta.reconsume_times >= max || h.delay_level < 0;
        let (topic, queue_id, delay) = if to_dlq {
            (format!("{DLQ_PREFIX}{}", h.group), 0, None)
        } else {
            let level = if h.delay_level == 0 { 3 + rec.meta.reconsume_times } else { h.delay_level };
            (format!("{RETRY_PREFIX}{}", h.group), 0, Some(level.clamp(1, 18)))
        };
        if let Err(e) = self.topics.ensure_system(&topic, 1) {
            return store_error(opaque, &e);
        }
        self.register_routes_if_changed();
        let mut props = String::with_capacity(rec.properties.len() + 128);
        for (k, v) in rec.properties.iter() {
            if matches!(k, keys::DELAY | keys::REAL_TOPIC | keys::REAL_QID | keys::WAIT) {
                continue;
            }
            let _ = write!(props, "{k}\u{1}{v}\u{2}");
        }
        if rec.properties.get(keys::RETRY_TOPIC).is_none() {
            let _ = write!(props, "{}\u{1}{}\u{2}", keys::RETRY_TOPIC, rec.topic);
        }
        // As the Java broker does: the first delivery's offset message id, whatever the client
        // put in the header.
        if rec.properties.get(keys::ORIGIN_MESSAGE_ID).is_none() {
            let id = offset_msg_id(rec.meta.store_host, rec.meta.physical_offset);
            let _ = write!(props, "{}\u{1}{id}\u{2}", keys::ORIGIN_MESSAGE_ID);
        }
        let _ = write!(props, "{}\u{1}false\u{2}", keys::WAIT);
        let (store_topic, store_queue) = match delay {
            Some(level) => {
                let _ = write!(
                    props,
                    "{}\u{1}{level}\u{2}{}\u{1}{topic}\u{2}{}\u{1}{queue_id}\u{2}",
                    keys::DELAY,
                    keys::REAL_TOPIC,
                    keys::REAL_QID
                );
                (SCHEDULE_TOPIC.to_owned(), level - 1)
            }
            None => (topic.clone(), queue_id),
        };
        let msg = MessageToStore {
            topic: &store_topic,
            queue_id: store_queue,
            flag: rec.meta.flag,
            sys_flag: rec.meta.sys_flag,
            born_timestamp: rec.meta.born_timestamp,
            born_host: rec.meta.born_host,
            reconsume_times: reconsume,
            prepared_tx_offset: 0,
            body: rec.body,
            properties: &props,
        };
        match self.store.append(&mut conn.appender, &msg) {
            Ok(_) => response::success(opaque),
            Err(e) => store_error(opaque, &e),
        }
    }
}

enum SendOutcome {
    Reply(Outgoing),
    AfterFlush { end: i64, reply: Outgoing },
}
