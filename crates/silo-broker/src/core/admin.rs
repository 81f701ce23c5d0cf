//! Administration (docs/protocol.md §2.9): topics created, deleted and described, the
//! broker's runtime figures, per-queue statistics of a topic and of a consumer group, who
//! consumes a topic, a group's connections, and messages found by offset or by key.

use std::collections::{BTreeMap, BTreeSet};

use silo_store::MessageRef;
use silo_wire::body::TopicConfig;

use super::BrokerError;
use super::send::MAX_TOPIC_LEN;
use crate::broker::Broker;
use crate::clients::GroupInfo;

/// Most queues a topic may have.
const MAX_QUEUES: i32 = 1024;

/// One queue of a topic, in [`Broker::topic_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueStats {
    pub queue_id: i32,
    pub min_offset: i64,
    pub max_offset: i64,
    /// Store time of the queue's last message (0 for an empty queue).
    pub last_update: i64,
}

/// One queue's progress of a consumer group, in [`Broker::consume_stats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueProgress {
    pub topic: String,
    pub queue_id: i32,
    pub broker_offset: i64,
    pub consumer_offset: i64,
    /// Store time of the last consumed message (0 if none).
    pub last_consumed: i64,
}

impl Broker {
    /// Creates or replaces a topic.
    pub fn create_topic(&self, tc: TopicConfig) -> Result<(), BrokerError> {
        if !silo_store::names::is_valid_topic(&tc.topic_name) || tc.topic_name.len() > MAX_TOPIC_LEN {
            return Err(BrokerError::InvalidTopic(tc.topic_name));
        }
        for n in [tc.read_queue_nums, tc.write_queue_nums] {
            if !(1..=MAX_QUEUES).contains(&n) {
                return Err(BrokerError::QueueCount(n));
            }
        }
        self.topics.put(tc)?;
        self.register_routes_if_changed();
        Ok(())
    }

    /// Deletes a topic as Apache's broker does: its config, its consume queues and every
    /// group's committed offsets of it (its records stay in the commit log until retention).
    pub fn delete_topic(&self, topic: &str) -> Result<(), BrokerError> {
        self.topics.delete(topic)?;
        self.register_routes_if_changed();
        let queues = self.store.delete_topic(topic)?;
        let offsets = self.offsets.remove_topic(topic);
        self.offsets.persist()?;
        tracing::info!(topic, queues, offsets, "topic deleted");
        Ok(())
    }

    pub fn topic(&self, topic: &str) -> Result<TopicConfig, BrokerError> {
        self.topics.get(topic).ok_or_else(|| BrokerError::NoTopicHere(topic.to_owned()))
    }

    /// The figures GET_BROKER_RUNTIME_INFO reports, by Java's names and in Java's formats.
    pub fn runtime_info(&self) -> BTreeMap<String, String> {
        let (min, max) = self.store.commit_log_range();
        let put = self.stats.put_messages.load(std::sync::atomic::Ordering::Relaxed);
        let got = self.stats.get_messages.load(std::sync::atomic::Ordering::Relaxed);
        let boot =
            self.config.clock.now_ms().saturating_sub(i64::try_from(self.started.elapsed().as_millis()).unwrap_or(0));
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
            ("commitLogDiskRatio", java_double(self.store.commit_log_disk_ratio())),
            ("consumeQueueDiskRatio", java_double(self.store.consume_queue_disk_ratio())),
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
        if let Some(front_end) = self.front_end() {
            front_end.runtime_info(&mut table);
        }
        table.extend(self.ha_links.runtime_table(&self.store, &self.config));
        if let Some((allocs, bytes)) = crate::alloc_probe::read() {
            table.insert("siloAllocCount".into(), allocs.to_string());
            table.insert("siloAllocBytes".into(), bytes.to_string());
        }
        table
    }

    /// Per queue of the topic: its offsets and the store time of its last message.
    pub fn topic_stats(&self, topic: &str) -> Result<Vec<QueueStats>, BrokerError> {
        let tc = self.topics.get(topic).ok_or_else(|| BrokerError::TopicNotFound(topic.to_owned()))?;
        Ok((0..tc.read_queue_nums.max(tc.write_queue_nums).max(0))
            .map(|q| {
                let min_offset = self.store.min_offset_in_queue(topic, q).max(0);
                let max_offset = self.store.max_offset_in_queue(topic, q).max(0);
                let last_update = if max_offset > 0 {
                    self.store.message_store_time(topic, q, max_offset - 1).unwrap_or(0)
                } else {
                    0
                };
                QueueStats { queue_id: q, min_offset, max_offset, last_update }
            })
            .collect())
    }

    /// Per queue of the group's topics (or of `topic`): the queue's end and the group's offset.
    pub fn consume_stats(&self, group: &str, topic: Option<&str>) -> Vec<QueueProgress> {
        let topics: Vec<String> = match topic {
            Some(t) => vec![t.to_owned()],
            None => self.offsets.group_offsets(group).into_keys().collect(),
        };
        let mut out = Vec::new();
        for topic in topics {
            let Some(tc) = self.topics.get(&topic) else { continue };
            for q in 0..tc.read_queue_nums.max(0) {
                let broker_offset = self.store.max_offset_in_queue(&topic, q);
                let consumer_offset = self.offsets.query(group, &topic, q).unwrap_or(0).max(0);
                let last_consumed = if consumer_offset > 0 {
                    self.store.message_store_time(&topic, q, consumer_offset - 1).unwrap_or(0)
                } else {
                    0
                };
                out.push(QueueProgress {
                    topic: topic.clone(),
                    queue_id: q,
                    broker_offset,
                    consumer_offset,
                    last_consumed,
                });
            }
        }
        out
    }

    /// Groups subscribed to the topic now, and groups with committed offsets on it.
    pub fn groups_of_topic(&self, topic: &str) -> BTreeSet<String> {
        let mut groups: BTreeSet<String> = self.clients.groups_of_topic(topic).into_iter().collect();
        groups.extend(self.offsets.groups_of_topic(topic));
        groups
    }

    /// A group's online clients, subscriptions and settings.
    pub fn group_info(&self, group: &str) -> Result<GroupInfo, BrokerError> {
        let remoting = self.clients.group_info(group);
        let others = self.front_end().map(|fe| fe.consumers(group)).unwrap_or_default();
        if others.is_empty() {
            return remoting.ok_or_else(|| BrokerError::ConsumerNotOnline(group.to_owned()));
        }
        // A group with members of another front end (5.x SDKs): listed as Apache's proxy
        // registers them with its broker (clustering, from the last offset).
        let mut info = remoting.unwrap_or_else(|| GroupInfo {
            connections: Vec::new(),
            subscriptions: Vec::new(),
            message_model: "CLUSTERING".into(),
            consume_type: others.first().map_or("CONSUME_ACTIVELY", |c| c.consume_type.java_name()).into(),
            consume_from_where: "CONSUME_FROM_LAST_OFFSET".into(),
        });
        for c in others {
            info.connections.push(crate::clients::Connection {
                client_id: c.client_id,
                client_addr: c.client_addr,
                language: c.language,
                version: c.version,
            });
            for sub in c.subscriptions {
                if !info.subscriptions.iter().any(|s| s.topic == sub.topic) {
                    info.subscriptions.push(subscription_data(&sub));
                }
            }
        }
        Ok(info)
    }

    /// The record at a commit-log offset (an offset message id's second half).
    pub fn message_at(&self, offset: i64) -> Result<MessageRef, BrokerError> {
        self.store.read_at(offset).map_err(|e| BrokerError::NoMessageAtOffset { offset, reason: e.to_string() })
    }

    /// Up to `max` records of `topic` indexed under `key`, stored within [`begin`, `end`].
    pub fn messages_by_key(
        &self,
        topic: &str,
        key: &str,
        max: usize,
        begin: i64,
        end: i64,
    ) -> Result<Vec<MessageRef>, BrokerError> {
        let found = self.store.query_by_key(topic, key, max.clamp(1, 64), begin, end);
        if found.is_empty() {
            return Err(BrokerError::NoMessageForKey);
        }
        Ok(found)
    }
}

/// A double as Java's `String.valueOf` writes it: the shortest form that reads back, with at
/// least one decimal (`0.0`, `0.375`).
fn java_double(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 { format!("{v:.1}") } else { format!("{v}") }
}

/// A front end's subscription as a remoting client reports one (`SubscriptionData`).
pub(crate) fn subscription_data(sub: &super::client_call::Subscription) -> silo_wire::body::SubscriptionData {
    let tags: Vec<String> = super::pull::tag_names(&sub.expression)
        .filter(|_| sub.expression_type == "TAG")
        .map(|tags| tags.map(str::to_owned).collect())
        .unwrap_or_default();
    silo_wire::body::SubscriptionData {
        class_filter_mode: false,
        code_set: tags.iter().map(|t| silo_wire::body::TagCode(silo_wire::checksum::java_string_hash(t))).collect(),
        expression_type: Some(sub.expression_type.to_owned()),
        sub_string: if sub.expression.trim().is_empty() { "*".into() } else { sub.expression.clone() },
        sub_version: 0,
        tags_set: tags,
        topic: sub.topic.clone(),
    }
}
