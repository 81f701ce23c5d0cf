//! Sending (docs/protocol.md §2.2, §2.7): single messages, batches, and a consumer's send-back.
//!
//! [`plan`] decides, from the request and the topic table alone, where a message goes: whether
//! its topic is created, which queue it takes, whether it is dead-lettered or delayed, whether
//! the broker gives it a unique key and whether its acknowledgement waits for durability.
//! [`Broker::send`] then carries the plan out. The body goes from the request's buffer into the
//! commit log in one copy: the store encodes the record around it; the properties string is
//! built in a per-connection buffer.

use std::fmt::Write as _;
use std::net::SocketAddr;

use silo_store::names::{DLQ_PREFIX, RETRY_PREFIX, is_valid_topic};
use silo_store::{AppendResult, MessageToStore};
use silo_wire::body::TopicConfig;
use silo_wire::msgid::offset_msg_id;
use silo_wire::properties::{PropertiesView, keys};
use silo_wire::record::{Decoded, decode_record};

use super::BrokerError;
use crate::broker::{Broker, ConnState};
use crate::metrics::MessageType;
use crate::topics::{PERM_INHERIT, PERM_READ, PERM_WRITE, SCHEDULE_TOPIC, TopicManager, TopicQueues, topic_config};

/// Longest user topic (retry and DLQ topics may be longer, up to 255).
pub(crate) const MAX_TOPIC_LEN: usize = 127;

/// Highest delay level (`messageDelayLevel` has 18).
const MAX_DELAY_LEVEL: i32 = 18;

/// Reconsume limit when the request does not say (Java's default `maxReconsumeTimes`).
pub const DEFAULT_MAX_RECONSUME: i32 = 16;

/// One message of a send: its user flag, body and properties as the producer wrote them.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    pub flag: i32,
    pub body: &'a [u8],
    pub properties: &'a str,
}

/// What a send carries.
#[derive(Debug)]
pub enum Messages<'a> {
    One(Payload<'a>),
    /// A batch for one queue; each message keeps its own properties verbatim (§3.1). Built by
    /// the front end as the store takes them, so that a batch costs one vector; the queue is
    /// filled in when the plan is carried out.
    Batch(Vec<MessageToStore<'a>>),
}

/// A producer's request to store messages.
#[derive(Debug)]
pub struct SendRequest<'a> {
    pub topic: &'a str,
    /// The topic a new topic inherits its config from (`TBW102`).
    pub default_topic: &'a str,
    pub default_topic_queue_nums: i32,
    /// Negative: the broker picks the queue.
    pub queue_id: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    pub max_reconsume_times: Option<i32>,
    /// The request's own properties (for a batch, those of the batch as a whole).
    pub properties: &'a str,
    pub messages: Messages<'a>,
}

/// What happens to the named topic's config before the append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicAction {
    Exists,
    /// Auto-created on first send, from the default topic (§2.2).
    Create(TopicConfig),
}

/// Where the message is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// The named topic's queue.
    Queue,
    /// A retry over its reconsume limit: the group's dead-letter queue (queue 0), created on
    /// demand.
    DeadLetter { topic: String },
    /// Held in `SCHEDULE_TOPIC_XXXX` queue `level - 1` until due, then moved to its queue
    /// (docs/protocol.md §4.12).
    Delayed { level: i32 },
    /// A transaction's half message: held in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 until its
    /// producer commits it ([`super::transaction`]).
    Half,
    /// A 5.x timer message: held in `rmq_sys_wheel_timer` queue 0 until `out_ms` (the
    /// delivery time as the timer wheel keeps it, see [`timer_out_ms`]), then moved to its queue.
    Timer { out_ms: i64 },
}

/// The decision for one send, made before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendPlan {
    pub topic: TopicAction,
    /// The queue the answer reports (the dead-letter queue's for a dead-lettered message).
    pub queue_id: i32,
    pub destination: Destination,
    /// A single message without `UNIQ_KEY` gets one from the broker.
    pub generate_unique_key: bool,
    /// The acknowledgement waits for [`silo_store::Store::durable`] (synchronous flush, and the
    /// producer did not set `WAIT=false`).
    pub wait_durable: bool,
}

/// The topic table as the send policy reads it.
pub trait TopicLookup {
    /// Queue counts and permissions, read without copying the config's texts (every send).
    fn queues(&self, topic: &str) -> Option<TopicQueues>;
    /// The whole config (only on a miss, to derive a new topic from the default one).
    fn config(&self, topic: &str) -> Option<TopicConfig>;
}

impl TopicLookup for TopicManager {
    fn queues(&self, topic: &str) -> Option<TopicQueues> {
        TopicManager::queues(self, topic)
    }
    fn config(&self, topic: &str) -> Option<TopicConfig> {
        self.get(topic)
    }
}

/// The broker settings the send policy reads.
#[derive(Debug, Clone, Copy)]
pub struct SendPolicy {
    pub auto_create_topic: bool,
    /// Acknowledgements wait for durability: a synchronous flush, or a synchronous master's slave.
    pub sync_flush: bool,
    /// `rejectTransactionMessage`.
    pub reject_transactions: bool,
    /// Timer messages (`timerWheelEnable`, `timerPrecisionMs`, `timerMaxDelaySec`).
    pub timers: TimerPolicy,
    /// The broker's clock, for timer messages' delays.
    pub now_ms: i64,
}

/// How timer messages are admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerPolicy {
    pub enabled: bool,
    pub precision_ms: i64,
    pub max_delay_ms: i64,
}

impl Default for TimerPolicy {
    /// Java's: on, 1 s precision, 3 days at most.
    fn default() -> Self {
        Self { enabled: true, precision_ms: 1000, max_delay_ms: 3 * 24 * 3600 * 1000 }
    }
}

/// The delivery time a timer message asks for (`TIMER_DELAY_SEC`, else `TIMER_DELAY_MS`, else
/// `TIMER_DELIVER_MS`, as Java reads them), `None` if it sets none of the three.
pub fn timer_deliver_ms(view: &PropertiesView<'_>, now_ms: i64) -> Option<Result<i64, BrokerError>> {
    let bad = |key: &'static str, v: &str| BrokerError::TimerIllegal(format!("{key}={v:?} is not a number"));
    if let Some(v) = view.get(keys::TIMER_DELAY_SEC) {
        return Some(
            v.parse::<i64>()
                .map(|s| now_ms.saturating_add(s.saturating_mul(1000)))
                .map_err(|_| bad(keys::TIMER_DELAY_SEC, v)),
        );
    }
    if let Some(v) = view.get(keys::TIMER_DELAY_MS) {
        return Some(v.parse::<i64>().map(|ms| now_ms.saturating_add(ms)).map_err(|_| bad(keys::TIMER_DELAY_MS, v)));
    }
    let v = view.get(keys::TIMER_DELIVER_MS)?;
    Some(v.parse::<i64>().map_err(|_| bad(keys::TIMER_DELIVER_MS, v)))
}

/// The slot time the timer wheel keeps for a delivery time: rounded down to the precision, and
/// one step earlier when it is an exact multiple (Java's encoding: a slot fires once the clock
/// has passed it by a whole step, so the message is never early and at most one step late).
pub fn timer_out_ms(deliver_ms: i64, precision_ms: i64) -> i64 {
    let p = precision_ms.max(1);
    if deliver_ms.rem_euclid(p) == 0 { deliver_ms - p } else { deliver_ms.div_euclid(p) * p }
}

/// A topic name the broker accepts from a producer.
pub fn check_topic(topic: &str) -> Result<(), BrokerError> {
    let system = topic.starts_with(RETRY_PREFIX) || topic.starts_with(DLQ_PREFIX);
    if !is_valid_topic(topic) || (!system && topic.len() > MAX_TOPIC_LEN) {
        return Err(BrokerError::InvalidTopic(topic.to_owned()));
    }
    Ok(())
}

/// Auto-creation on first send (docs/protocol.md §2.2): from a default topic with the INHERIT
/// bit, with `min(requested, default's write queues)` queues; `None` if it may not be.
pub fn derive_from_default(topic: &str, default: &TopicConfig, requested_queues: i32) -> Option<TopicConfig> {
    if default.perm & PERM_INHERIT == 0 {
        return None;
    }
    let n = requested_queues.clamp(1, default.write_queue_nums.max(1));
    let mut tc = topic_config(topic, n, n, default.perm & !PERM_INHERIT);
    tc.topic_filter_type.clone_from(&default.topic_filter_type);
    Some(tc)
}

/// Decides where a send goes. `pick` chooses a queue among the given number of write queues
/// when the producer let the broker choose.
pub fn plan(
    req: &SendRequest<'_>,
    topics: &impl TopicLookup,
    policy: SendPolicy,
    pick: impl FnOnce(i32) -> i32,
) -> Result<SendPlan, BrokerError> {
    check_topic(req.topic)?;
    let is_retry = req.topic.starts_with(RETRY_PREFIX);
    let (tc, action) = match topics.queues(req.topic) {
        Some(queues) => (queues, TopicAction::Exists),
        None => {
            let created = if is_retry {
                Some(topic_config(req.topic, 1, 1, PERM_READ | PERM_WRITE))
            } else if policy.auto_create_topic {
                topics
                    .config(req.default_topic)
                    .and_then(|default| derive_from_default(req.topic, &default, req.default_topic_queue_nums))
            } else {
                None
            };
            let tc = created.ok_or_else(|| BrokerError::TopicNotExist(req.topic.to_owned()))?;
            (TopicQueues::of(&tc), TopicAction::Create(tc))
        }
    };
    if tc.perm & PERM_WRITE == 0 {
        return Err(BrokerError::WriteForbidden(req.topic.to_owned()));
    }
    let queues = tc.write_queue_nums.max(tc.read_queue_nums);
    let mut queue_id = if req.queue_id < 0 { pick(tc.write_queue_nums) } else { req.queue_id };
    if queue_id >= queues {
        return Err(BrokerError::NoSuchQueue { queue_id, queues });
    }
    let view = PropertiesView::from_valid(req.properties);
    let delay_level = view.get(keys::DELAY).and_then(|d| d.parse::<i64>().ok()).filter(|d| *d > 0);
    let mut destination = Destination::Queue;
    if is_retry && req.reconsume_times > req.max_reconsume_times.unwrap_or(DEFAULT_MAX_RECONSUME) {
        let group = req.topic.trim_start_matches(RETRY_PREFIX);
        destination = Destination::DeadLetter { topic: format!("{DLQ_PREFIX}{group}") };
        queue_id = 0;
    }
    let generate_unique_key = match &req.messages {
        Messages::Batch(messages) => {
            if is_retry || view.get(keys::DELAY).is_some_and(|d| d != "0" && d != "-1") {
                return Err(BrokerError::BatchRetryOrDelay);
            }
            if messages.is_empty() {
                return Err(BrokerError::EmptyBatch);
            }
            false
        }
        Messages::One(_) => {
            let prepared = view.get(keys::TRAN_MSG).is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if prepared && destination == Destination::Queue && !is_retry {
                if policy.reject_transactions {
                    return Err(BrokerError::TransactionsRejected);
                }
                destination = Destination::Half;
            } else if let (Some(level), Destination::Queue) = (delay_level, &destination) {
                let level = i32::try_from(level.min(i64::from(MAX_DELAY_LEVEL))).unwrap_or(MAX_DELAY_LEVEL);
                destination = Destination::Delayed { level };
            } else if destination == Destination::Queue
                // One pass over the properties for the common case of no timer at all.
                && req.properties.contains("TIMER_")
                && view.get(keys::TIMER_OUT_MS).is_none()
                && let Some(deliver) = timer_deliver_ms(&view, policy.now_ms)
            {
                if !policy.timers.enabled {
                    return Err(BrokerError::TimersDisabled);
                }
                let deliver = deliver?;
                if deliver <= policy.now_ms && view.get(keys::TIMER_DEL_UNIQKEY).is_some() {
                    // A delete marker for a time already past has nothing left to cancel.
                    return Err(BrokerError::TimerIllegal(format!(
                        "the delete marker's delivery time {deliver} has passed"
                    )));
                }
                if deliver > policy.now_ms {
                    if deliver - policy.now_ms > policy.timers.max_delay_ms {
                        return Err(BrokerError::TimerIllegal(format!(
                            "the delay time should not be bigger than the max delay {}ms",
                            policy.timers.max_delay_ms
                        )));
                    }
                    destination = Destination::Timer { out_ms: timer_out_ms(deliver, policy.timers.precision_ms) };
                }
            }
            view.get(keys::UNIQ_KEY).is_none()
        }
    };
    let wait_durable = policy.sync_flush && view.get(keys::WAIT).is_none_or(|w| w != "false");
    Ok(SendPlan { topic: action, queue_id, destination, generate_unique_key, wait_durable })
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

/// Where a send's messages landed.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub append: AppendResult,
    /// Messages stored (the batch's physical offsets are in the connection's appender).
    pub count: usize,
    /// The `UNIQ_KEY` the broker gave a single message that came without one.
    pub generated_key: Option<silo_wire::msgid::MsgIdBuf>,
}

/// A consumer's report that it failed a message (CONSUMER_SEND_MSG_BACK).
#[derive(Debug)]
pub struct SendBack<'a> {
    /// Commit-log offset of the failed message.
    pub offset: i64,
    pub group: &'a str,
    /// 0: the broker picks the next retry delay; negative: straight to the dead-letter queue.
    pub delay_level: i32,
    pub max_reconsume_times: Option<i32>,
}

/// Where a failed message goes next: the group's retry topic after a delay, or its
/// dead-letter queue once it has been reconsumed `max` times.
pub fn plan_send_back(group: &str, reconsumed: i32, delay_level: i32, max: Option<i32>) -> (String, Option<i32>) {
    let max = max.unwrap_or(DEFAULT_MAX_RECONSUME);
    if reconsumed >= max || delay_level < 0 {
        (format!("{DLQ_PREFIX}{group}"), None)
    } else {
        let level = if delay_level == 0 { reconsumed.saturating_add(3) } else { delay_level };
        (format!("{RETRY_PREFIX}{group}"), Some(level.clamp(1, MAX_DELAY_LEVEL)))
    }
}

impl Broker {
    /// The send policy with this broker's settings.
    pub fn plan_send(&self, req: &SendRequest<'_>) -> Result<SendPlan, BrokerError> {
        let policy = SendPolicy {
            auto_create_topic: self.config.auto_create_topic_enable,
            sync_flush: self.store.acknowledges_after_wait(),
            reject_transactions: self.config.transaction.reject,
            timers: self.config.timers,
            now_ms: self.config.clock.now_ms(),
        };
        plan(req, &self.topics, policy, |n| self.pick_queue(n))
    }

    /// Carries out `plan` for `req`: creates what it says, then appends.
    pub fn send(&self, conn: &mut ConnState, req: &mut SendRequest<'_>, plan: &SendPlan) -> Result<Sent, BrokerError> {
        if let TopicAction::Create(tc) = &plan.topic {
            self.topics.create_if_absent(tc.clone())?;
            tracing::info!(topic = req.topic, queues = tc.write_queue_nums, "topic auto-created");
        }
        let topic = match &plan.destination {
            Destination::DeadLetter { topic } => {
                self.topics.ensure_system(topic, 1)?;
                topic.as_str()
            }
            Destination::Half => {
                self.topics.ensure_system(super::transaction::HALF_TOPIC, 1)?;
                req.topic
            }
            Destination::Timer { .. } => {
                self.topics.ensure_system(silo_store::timer::TIMER_TOPIC, 1)?;
                req.topic
            }
            Destination::Queue | Destination::Delayed { .. } => req.topic,
        };
        self.register_routes_if_changed();
        let queue_id = plan.queue_id;
        fn message<'m>(
            req: &SendRequest<'m>,
            p: &Payload<'m>,
            topic: &'m str,
            queue_id: i32,
            properties: &'m str,
        ) -> MessageToStore<'m> {
            MessageToStore {
                topic,
                queue_id,
                flag: p.flag,
                sys_flag: req.sys_flag,
                born_timestamp: req.born_timestamp,
                born_host: req.born_host,
                reconsume_times: req.reconsume_times,
                prepared_tx_offset: 0,
                body: p.body,
                properties,
            }
        }
        let named = req.topic;
        let mut generated_key = None;
        let (mut kind, mut bytes) = (
            match plan.destination {
                Destination::Half => MessageType::Transaction,
                Destination::Delayed { .. } | Destination::Timer { .. } => MessageType::Delay,
                _ => MessageType::Normal,
            },
            0u64,
        );
        let (append, count) = match &mut req.messages {
            Messages::Batch(msgs) => {
                // A batch is never dead-lettered or delayed: it goes to the topic it names.
                for m in msgs.iter_mut() {
                    m.topic = named;
                    m.queue_id = queue_id;
                    bytes += m.body.len() as u64;
                }
                (self.store.append_batch(&mut conn.appender, msgs)?, msgs.len())
            }
            Messages::One(payload) => {
                let payload = *payload;
                bytes = payload.body.len() as u64;
                if kind == MessageType::Normal
                    && PropertiesView::from_valid(payload.properties).get(keys::SHARDING_KEY).is_some()
                {
                    kind = MessageType::Fifo;
                }
                let generated;
                let add_uniq = if plan.generate_unique_key {
                    generated = offset_msg_id(req.born_host, req.born_timestamp ^ self.store.commit_log_range().1);
                    generated_key = Some(generated);
                    Some(generated.as_str())
                } else {
                    None
                };
                let mut props = std::mem::take(&mut conn.props);
                if let Destination::DeadLetter { .. } = plan.destination {
                    // As the Java broker does: a dead-lettered message is not delayed, and is
                    // stored with DELAY=-1 whatever delay its retry asked for.
                    let mut kept = String::with_capacity(payload.properties.len() + 8);
                    PropertiesView::from_valid(payload.properties).push_without(&mut kept, &[keys::DELAY]);
                    let _ = write!(kept, "{}\u{1}-1\u{2}", keys::DELAY);
                    stored_properties(&mut props, &kept, &self.config.broker_cluster_name, add_uniq);
                } else {
                    stored_properties(&mut props, payload.properties, &self.config.broker_cluster_name, add_uniq);
                }
                let (store_topic, store_queue) = match plan.destination {
                    Destination::Delayed { level } => {
                        let _ = write!(
                            props,
                            "{}\u{1}{topic}\u{2}{}\u{1}{queue_id}\u{2}",
                            keys::REAL_TOPIC,
                            keys::REAL_QID
                        );
                        (SCHEDULE_TOPIC, level - 1)
                    }
                    Destination::Half => {
                        // As Java keeps it: the real topic and queue, and the transaction id
                        // (the producer's unique key).
                        let tx_id = add_uniq
                            .or_else(|| PropertiesView::from_valid(payload.properties).get(keys::UNIQ_KEY))
                            .unwrap_or("");
                        let _ = write!(
                            props,
                            "{}\u{1}{topic}\u{2}{}\u{1}{queue_id}\u{2}{}\u{1}{tx_id}\u{2}",
                            keys::REAL_TOPIC,
                            keys::REAL_QID,
                            super::transaction::TRANSACTION_ID,
                        );
                        (super::transaction::HALF_TOPIC, 0)
                    }
                    Destination::Timer { out_ms } => {
                        let _ = write!(
                            props,
                            "{}\u{1}{out_ms}\u{2}{}\u{1}{topic}\u{2}{}\u{1}{queue_id}\u{2}",
                            keys::TIMER_OUT_MS,
                            keys::REAL_TOPIC,
                            keys::REAL_QID
                        );
                        (silo_store::timer::TIMER_TOPIC, 0)
                    }
                    _ => (topic, queue_id),
                };
                let mut stored = message(req, &payload, store_topic, store_queue, &props);
                if plan.destination == Destination::Half {
                    stored.sys_flag &= !silo_wire::record::sys_flag::TRANSACTION_MASK;
                }
                let r = self.store.append(&mut conn.appender, &stored);
                conn.props = props;
                (r?, 1)
            }
        };
        self.stats.put_messages.fetch_add(count as u64, std::sync::atomic::Ordering::Relaxed);
        self.metrics.sent(named, kind, count as u64, bytes);
        Ok(Sent { append, count, generated_key })
    }

    /// The recall handle of a message just stored as a timer (Java's `attachRecallHandle`): only
    /// for a single message, not on a retry topic; `None` for everything else.
    pub fn recall_handle(&self, req: &SendRequest<'_>, plan: &SendPlan, sent: &Sent) -> Option<String> {
        let Destination::Timer { out_ms } = plan.destination else { return None };
        let Messages::One(payload) = &req.messages else { return None };
        if req.topic.starts_with(RETRY_PREFIX) {
            return None;
        }
        let key = match &sent.generated_key {
            Some(generated) => generated.as_str(),
            None => PropertiesView::from_valid(payload.properties).get(keys::UNIQ_KEY)?,
        };
        // One past the slot time, as Java gives it: the recall's marker lands in the same slot.
        Some(super::recall::encode_handle(req.topic, &self.config.broker_name, out_ms.saturating_add(1), key))
    }

    /// CONSUMER_SEND_MSG_BACK: re-stores a failed message into the group's retry topic through
    /// the schedule topic, or into its dead-letter queue.
    pub fn send_back(&self, conn: &mut ConnState, req: &SendBack<'_>) -> Result<(), BrokerError> {
        let original = self.store.read_at(req.offset).map_err(|_| BrokerError::NoMessageAt(req.offset))?;
        let Ok(Decoded::Record(rec)) = decode_record(&original, 0) else {
            return Err(BrokerError::StoredRecordCorrupt);
        };
        let reconsumed = rec.meta.reconsume_times;
        // The request's limit if it says one (3.4.9 and later), else the group's (Java's rule).
        let max = req.max_reconsume_times.or_else(|| self.groups.retry_max_times(req.group));
        let (topic, delay) = plan_send_back(req.group, reconsumed, req.delay_level, max);
        let queue_id = 0;
        self.topics.ensure_system(&topic, 1)?;
        self.register_routes_if_changed();
        let mut props = String::with_capacity(rec.properties.len() + 128);
        rec.properties.push_without(&mut props, &[keys::DELAY, keys::REAL_TOPIC, keys::REAL_QID, keys::WAIT]);
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
                (SCHEDULE_TOPIC, level - 1)
            }
            None => (topic.as_str(), queue_id),
        };
        let msg = MessageToStore {
            reconsume_times: reconsumed.saturating_add(1),
            ..MessageToStore::again(&rec, store_topic, store_queue, &props)
        };
        self.store.append(&mut conn.appender, &msg)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    struct Table(BTreeMap<String, TopicConfig>);

    impl TopicLookup for Table {
        fn queues(&self, topic: &str) -> Option<TopicQueues> {
            self.0.get(topic).map(TopicQueues::of)
        }
        fn config(&self, topic: &str) -> Option<TopicConfig> {
            self.0.get(topic).cloned()
        }
    }

    fn table() -> Table {
        let mut t = BTreeMap::new();
        t.insert("TBW102".into(), topic_config("TBW102", 8, 8, PERM_READ | PERM_WRITE | PERM_INHERIT));
        t.insert("Orders".into(), topic_config("Orders", 4, 4, PERM_READ | PERM_WRITE));
        t.insert("ReadOnly".into(), topic_config("ReadOnly", 2, 2, PERM_READ));
        Table(t)
    }

    const ASYNC: SendPolicy = SendPolicy {
        auto_create_topic: true,
        sync_flush: false,
        reject_transactions: false,
        timers: TimerPolicy { enabled: true, precision_ms: 1000, max_delay_ms: 3 * 24 * 3600 * 1000 },
        now_ms: 1_000_000,
    };
    const BODY: Payload<'static> = Payload { flag: 0, body: b"x", properties: "" };
    const STORED: MessageToStore<'static> = MessageToStore {
        topic: "Orders",
        queue_id: 0,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 0,
        born_host: SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 1),
        reconsume_times: 0,
        prepared_tx_offset: 0,
        body: b"x",
        properties: "",
    };

    fn request<'a>(topic: &'a str, queue_id: i32, properties: &'a str) -> SendRequest<'a> {
        SendRequest {
            topic,
            default_topic: "TBW102",
            default_topic_queue_nums: 4,
            queue_id,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: SocketAddr::from(([127, 0, 0, 1], 1)),
            reconsume_times: 0,
            max_reconsume_times: None,
            properties,
            messages: Messages::One(BODY),
        }
    }

    fn no_pick(_: i32) -> i32 {
        panic!("the producer chose the queue")
    }

    #[test]
    fn a_send_to_an_existing_topic_goes_to_the_queue_asked_for() {
        let p = plan(&request("Orders", 3, ""), &table(), ASYNC, no_pick).unwrap();
        assert_eq!(p.topic, TopicAction::Exists);
        assert_eq!((p.queue_id, &p.destination), (3, &Destination::Queue));
        assert!(p.generate_unique_key && !p.wait_durable);
    }

    #[test]
    fn the_broker_picks_among_the_write_queues_when_asked_to() {
        let p = plan(&request("Orders", -1, ""), &table(), ASYNC, |n| n - 1).unwrap();
        assert_eq!(p.queue_id, 3);
    }

    #[test]
    fn a_queue_the_topic_lacks_is_refused() {
        let e = plan(&request("Orders", 4, ""), &table(), ASYNC, no_pick).unwrap_err();
        assert!(matches!(e, BrokerError::NoSuchQueue { queue_id: 4, queues: 4 }), "{e}");
    }

    #[test]
    fn a_new_topic_inherits_from_the_default_with_the_smaller_queue_count() {
        let p = plan(&request("New", 0, ""), &table(), ASYNC, no_pick).unwrap();
        let TopicAction::Create(tc) = p.topic else { panic!("not created") };
        assert_eq!((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (4, 4, PERM_READ | PERM_WRITE));
        let off = SendPolicy { auto_create_topic: false, ..ASYNC };
        assert!(matches!(plan(&request("New", 0, ""), &table(), off, no_pick), Err(BrokerError::TopicNotExist(_))));
    }

    #[test]
    fn a_topic_without_write_permission_is_refused() {
        let e = plan(&request("ReadOnly", 0, ""), &table(), ASYNC, no_pick).unwrap_err();
        assert!(matches!(e, BrokerError::WriteForbidden(_)));
    }

    #[test]
    fn invalid_topics_are_refused_before_anything_else() {
        assert!(matches!(plan(&request("a b", 0, ""), &table(), ASYNC, no_pick), Err(BrokerError::InvalidTopic(_))));
        let long = "t".repeat(MAX_TOPIC_LEN + 1);
        assert!(matches!(plan(&request(&long, 0, ""), &table(), ASYNC, no_pick), Err(BrokerError::InvalidTopic(_))));
    }

    #[test]
    fn a_retry_over_its_limit_goes_to_the_dead_letter_queue() {
        let mut r = request("%RETRY%billing", 0, "");
        r.reconsume_times = 17;
        let p = plan(&r, &table(), ASYNC, no_pick).unwrap();
        assert_eq!(p.destination, Destination::DeadLetter { topic: "%DLQ%billing".into() });
        assert_eq!(p.queue_id, 0);
        r.reconsume_times = 3;
        r.max_reconsume_times = Some(2);
        assert!(matches!(plan(&r, &table(), ASYNC, no_pick).unwrap().destination, Destination::DeadLetter { .. }));
        r.reconsume_times = 2;
        assert_eq!(plan(&r, &table(), ASYNC, no_pick).unwrap().destination, Destination::Queue);
    }

    #[test]
    fn a_delayed_message_waits_in_the_schedule_topic_at_its_level() {
        let p = plan(&request("Orders", 1, "DELAY\u{1}3\u{2}"), &table(), ASYNC, no_pick).unwrap();
        assert_eq!(p.destination, Destination::Delayed { level: 3 });
        let p = plan(&request("Orders", 1, "DELAY\u{1}99\u{2}"), &table(), ASYNC, no_pick).unwrap();
        assert_eq!(p.destination, Destination::Delayed { level: MAX_DELAY_LEVEL });
        let p = plan(&request("Orders", 1, "DELAY\u{1}0\u{2}"), &table(), ASYNC, no_pick).unwrap();
        assert_eq!(p.destination, Destination::Queue);
    }

    #[test]
    fn batches_are_never_retried_delayed_or_empty() {
        let mut r = request("Orders", 0, "DELAY\u{1}2\u{2}");
        r.messages = Messages::Batch(vec![STORED]);
        assert!(matches!(plan(&r, &table(), ASYNC, no_pick), Err(BrokerError::BatchRetryOrDelay)));
        r.properties = "";
        r.messages = Messages::Batch(Vec::new());
        assert!(matches!(plan(&r, &table(), ASYNC, no_pick), Err(BrokerError::EmptyBatch)));
        r.messages = Messages::Batch(vec![STORED, STORED]);
        assert!(!plan(&r, &table(), ASYNC, no_pick).unwrap().generate_unique_key);
    }

    #[test]
    fn synchronous_flush_makes_the_answer_wait_unless_the_producer_says_not_to() {
        let sync = SendPolicy { sync_flush: true, ..ASYNC };
        assert!(plan(&request("Orders", 0, ""), &table(), sync, no_pick).unwrap().wait_durable);
        assert!(!plan(&request("Orders", 0, "WAIT\u{1}false\u{2}"), &table(), sync, no_pick).unwrap().wait_durable);
    }

    #[test]
    fn a_message_with_its_own_unique_key_keeps_it() {
        let p = plan(&request("Orders", 0, "UNIQ_KEY\u{1}ABC\u{2}"), &table(), ASYNC, no_pick).unwrap();
        assert!(!p.generate_unique_key);
    }

    #[test]
    fn a_transactional_send_is_held_as_a_half_message_unless_the_broker_rejects_them() {
        let p =
            plan(&request("Orders", 2, "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}p\u{2}"), &table(), ASYNC, no_pick).unwrap();
        assert_eq!((p.destination, p.queue_id), (Destination::Half, 2));
        let reject = SendPolicy { reject_transactions: true, ..ASYNC };
        let e = plan(&request("Orders", 0, "TRAN_MSG\u{1}true\u{2}"), &table(), reject, no_pick).unwrap_err();
        assert!(matches!(e, BrokerError::TransactionsRejected));
    }

    #[test]
    fn a_timer_message_waits_in_the_timer_topic_never_early_and_within_the_maximum_delay() {
        let at = |props: &str| plan(&request("Orders", 1, props), &table(), ASYNC, no_pick).map(|p| p.destination);
        // 10 s from now (1_000_000): an exact multiple of the precision, kept one step earlier.
        assert_eq!(at("TIMER_DELAY_SEC\u{1}10\u{2}").unwrap(), Destination::Timer { out_ms: 1_009_000 });
        assert_eq!(at("TIMER_DELAY_MS\u{1}2500\u{2}").unwrap(), Destination::Timer { out_ms: 1_002_000 });
        assert_eq!(at("TIMER_DELIVER_MS\u{1}1003001\u{2}").unwrap(), Destination::Timer { out_ms: 1_003_000 });
        // In the past: delivered at once.
        assert_eq!(at("TIMER_DELIVER_MS\u{1}5\u{2}").unwrap(), Destination::Queue);
        // A delay level wins over the timer properties, as in Java.
        assert_eq!(at("DELAY\u{1}2\u{2}TIMER_DELAY_SEC\u{1}10\u{2}").unwrap(), Destination::Delayed { level: 2 });
        assert!(matches!(at("TIMER_DELAY_SEC\u{1}ten\u{2}"), Err(BrokerError::TimerIllegal(_))));
        assert!(matches!(at("TIMER_DELAY_SEC\u{1}259201\u{2}"), Err(BrokerError::TimerIllegal(_))));
        assert_eq!(at("TIMER_DELAY_SEC\u{1}259200\u{2}").unwrap(), Destination::Timer { out_ms: 260_199_000 });
        let off = SendPolicy { timers: TimerPolicy { enabled: false, ..ASYNC.timers }, ..ASYNC };
        let e = plan(&request("Orders", 1, "TIMER_DELAY_SEC\u{1}1\u{2}"), &table(), off, no_pick).unwrap_err();
        assert!(matches!(e, BrokerError::TimersDisabled));
    }

    #[test]
    fn a_timer_slot_is_never_before_its_delivery_time_less_one_step() {
        for d in [1_000, 1_001, 1_999, 2_000, 123_456_789] {
            let out = timer_out_ms(d, 1000);
            assert!(out + 1000 >= d && out < d && out % 1000 == 0, "{d} -> {out}");
        }
    }

    #[test]
    fn a_failed_message_is_retried_later_each_time_then_dead_lettered() {
        assert_eq!(plan_send_back("g", 0, 0, None), ("%RETRY%g".into(), Some(3)));
        assert_eq!(plan_send_back("g", 5, 0, None), ("%RETRY%g".into(), Some(8)));
        assert_eq!(plan_send_back("g", 15, 0, None), ("%RETRY%g".into(), Some(18)));
        assert_eq!(plan_send_back("g", 16, 0, None), ("%DLQ%g".into(), None));
        assert_eq!(plan_send_back("g", 1, 0, Some(1)), ("%DLQ%g".into(), None));
        assert_eq!(plan_send_back("g", 0, -1, None), ("%DLQ%g".into(), None));
        assert_eq!(plan_send_back("g", 0, 2, None), ("%RETRY%g".into(), Some(2)));
    }
}
