//! What the broker counts for Prometheus, named and labelled as Apache RocketMQ 5.x's broker
//! exports them (`metricsExporterType=PROM`), so that dashboards built for Apache read Silo.
//!
//! Counting is atomic adds on counters found by name under a read lock: a topic's (or a
//! topic and group's) counters are allocated the first time it is counted and reused after,
//! so the send and pull paths allocate nothing for it. Gauges (topics, groups, connections,
//! lag, storage) are computed when scraped.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Upper bounds of `rocketmq_message_size` (bytes), as Apache's.
const SIZE_BOUNDS: [u64; 6] = [1024, 4096, 524_288, 1_048_576, 2_097_152, 4_194_304];
/// Upper bounds of `rocketmq_rpc_latency` (milliseconds), as Apache's.
const LATENCY_BOUNDS_MS: [u64; 9] = [1, 3, 5, 7, 10, 100, 1000, 2000, 3000];
/// Upper bounds of `rocketmq_finish_message_latency`, as Apache's: 5 s, 1 min, 10 min, 1 h,
/// 12 h, 24 h. Apache records a transaction's age in seconds under a unit of milliseconds;
/// Silo records what Apache records, so that the same dashboards read it.
const FINISH_BOUNDS_S: [u64; 6] = [5, 60, 600, 3600, 43_200, 86_400];

/// A message's type, as Apache labels sends (`message_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Normal,
    Fifo,
    Delay,
    Transaction,
}

impl MessageType {
    const ALL: [MessageType; 4] = [Self::Normal, Self::Fifo, Self::Delay, Self::Transaction];

    fn label(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Fifo => "fifo",
            Self::Delay => "delay",
            Self::Transaction => "transaction",
        }
    }
}

#[derive(Debug)]
struct Histogram<const N: usize> {
    /// Observations at or below each bound (not cumulative; summed when rendered).
    buckets: [AtomicU64; N],
    over: AtomicU64,
    sum: AtomicU64,
}

impl<const N: usize> Default for Histogram<N> {
    fn default() -> Self {
        Self { buckets: std::array::from_fn(|_| AtomicU64::new(0)), over: AtomicU64::new(0), sum: AtomicU64::new(0) }
    }
}

impl<const N: usize> Histogram<N> {
    /// `n` observations of `value` each.
    fn observe(&self, bounds: &[u64; N], value: u64, n: u64) {
        match bounds.iter().position(|b| value <= *b).and_then(|i| self.buckets.get(i)) {
            Some(bucket) => bucket.fetch_add(n, Relaxed),
            None => self.over.fetch_add(n, Relaxed),
        };
        self.sum.fetch_add(value.saturating_mul(n), Relaxed);
    }

    fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Relaxed)).sum::<u64>() + self.over.load(Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[u64; N]) {
        let mut cumulative = 0;
        for (bound, bucket) in bounds.iter().zip(&self.buckets) {
            cumulative += bucket.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}.0\"}} {cumulative}");
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum.load(Relaxed));
    }
}

#[derive(Debug, Default)]
struct Incoming {
    messages: AtomicU64,
    bytes: AtomicU64,
    size: Histogram<6>,
}

/// A topic's sends, by message type.
#[derive(Debug, Default)]
struct TopicIn([Incoming; 4]);

/// Deliveries of a topic to a group.
#[derive(Debug, Default)]
struct Delivered {
    messages: AtomicU64,
    bytes: AtomicU64,
}

/// A topic's deliveries, by consumer group.
type GroupDeliveries = HashMap<Box<str>, Arc<Delivered>>;

/// A topic's transactions ended by END_TRANSACTION.
#[derive(Debug, Default)]
struct Ended {
    commits: AtomicU64,
    rollbacks: AtomicU64,
    /// Committed transactions' ages (born to commit), in seconds.
    finish: Histogram<6>,
}

/// What `rocketmq_rpc_latency` is labelled by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Call {
    request: i32,
    response: i32,
    oneway: bool,
}

/// The broker's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    topics: RwLock<HashMap<Box<str>, Arc<TopicIn>>>,
    deliveries: RwLock<HashMap<Box<str>, GroupDeliveries>>,
    calls: RwLock<HashMap<Call, Arc<Histogram<9>>>>,
    transactions: RwLock<HashMap<Box<str>, Arc<Ended>>>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Metrics {
    /// `count` messages of `bytes` body bytes in all stored to `topic` (a batch counts each).
    pub fn sent(&self, topic: &str, kind: MessageType, count: u64, bytes: u64) {
        let found = read(&self.topics).get(topic).cloned();
        let counters = found.unwrap_or_else(|| Arc::clone(write(&self.topics).entry(topic.into()).or_default()));
        let Some(c) = counters.0.get(kind as usize) else { return };
        c.messages.fetch_add(count, Relaxed);
        c.bytes.fetch_add(bytes, Relaxed);
        // A batch's members are observed at their mean size: one add per batch, not per member.
        c.size.observe(&SIZE_BOUNDS, bytes.checked_div(count).unwrap_or(0), count);
    }

    /// Records delivered to `group` from `topic` (pulled, popped or received).
    pub fn delivered<'r>(&self, topic: &str, group: &str, records: impl IntoIterator<Item = &'r [u8]>) {
        let (mut count, mut bytes) = (0u64, 0u64);
        for r in records {
            count += 1;
            bytes += silo_wire::record::body_len(r).unwrap_or(0) as u64;
        }
        if count == 0 {
            return;
        }
        let found = read(&self.deliveries).get(topic).and_then(|g| g.get(group)).cloned();
        let counters = found.unwrap_or_else(|| {
            let mut map = write(&self.deliveries);
            Arc::clone(map.entry(topic.into()).or_default().entry(group.into()).or_default())
        });
        counters.messages.fetch_add(count, Relaxed);
        counters.bytes.fetch_add(bytes, Relaxed);
    }

    /// A remoting request of code `request` answered `response` (or one-way) after `took`.
    pub fn called(&self, request: i32, response: i32, oneway: bool, took: Duration) {
        let call = Call { request, response: if oneway { 0 } else { response }, oneway };
        let found = read(&self.calls).get(&call).cloned();
        let h = found.unwrap_or_else(|| Arc::clone(write(&self.calls).entry(call).or_default()));
        h.observe(&LATENCY_BOUNDS_MS, u64::try_from(took.as_millis()).unwrap_or(u64::MAX), 1);
    }

    /// A transaction of `topic` (its real topic) ended: committed `age_ms` after its half
    /// message was born, or rolled back.
    pub fn transaction_ended(&self, topic: &str, committed: bool, age_ms: i64) {
        let found = read(&self.transactions).get(topic).cloned();
        let c = found.unwrap_or_else(|| Arc::clone(write(&self.transactions).entry(topic.into()).or_default()));
        if committed {
            c.commits.fetch_add(1, Relaxed);
            c.finish.observe(&FINISH_BOUNDS_S, u64::try_from(age_ms / 1000).unwrap_or(0), 1);
        } else {
            c.rollbacks.fetch_add(1, Relaxed);
        }
    }

    /// The counters in Prometheus' text format, each series labelled with `common`
    /// (`cluster`, `node_type`, `node_id`).
    pub fn render_counters(&self, out: &mut String, common: &str) {
        let topics = read(&self.topics);
        let mut sorted: Vec<_> = topics.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        // Each topic and type that was sent, with its labels, once for the three families.
        let series: Vec<(String, &Incoming)> = sorted
            .iter()
            .flat_map(|(topic, t)| MessageType::ALL.iter().zip(&t.0).map(move |(kind, c)| (topic, kind, c)))
            .filter(|(_, _, c)| c.messages.load(Relaxed) > 0)
            .map(|(topic, kind, c)| {
                let labels = format!(
                    "{common},is_system=\"{}\",message_type=\"{}\",topic=\"{}\"",
                    is_system(topic),
                    kind.label(),
                    escape(topic)
                );
                (labels, c)
            })
            .collect();
        for (name, value) in [
            ("rocketmq_messages_in_total", (|c: &Incoming| c.messages.load(Relaxed)) as fn(&Incoming) -> u64),
            ("rocketmq_throughput_in_total", |c: &Incoming| c.bytes.load(Relaxed)),
        ] {
            header(out, name, "counter");
            for (labels, c) in &series {
                let _ = writeln!(out, "{name}{{{labels}}} {}", value(c));
            }
        }
        header(out, "rocketmq_message_size", "histogram");
        for (labels, c) in &series {
            c.size.render(out, "rocketmq_message_size", labels, &SIZE_BOUNDS);
        }
        drop(series);
        drop(topics);
        let deliveries = read(&self.deliveries);
        let mut rows: Vec<(&str, &str, &Delivered)> =
            deliveries.iter().flat_map(|(t, groups)| groups.iter().map(move |(g, d)| (&**t, &**g, &**d))).collect();
        rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        for (name, value) in [
            ("rocketmq_messages_out_total", (|d: &Delivered| d.messages.load(Relaxed)) as fn(&Delivered) -> u64),
            ("rocketmq_throughput_out_total", |d: &Delivered| d.bytes.load(Relaxed)),
        ] {
            header(out, name, "counter");
            for (topic, group, d) in &rows {
                let _ = writeln!(
                    out,
                    "{name}{{{common},consumer_group=\"{}\",is_system=\"{}\",topic=\"{}\"}} {}",
                    escape(group),
                    is_system(topic),
                    escape(topic),
                    value(d)
                );
            }
        }
        drop(deliveries);
        header(out, "rocketmq_rpc_latency", "histogram");
        let calls = read(&self.calls);
        let mut sorted: Vec<_> = calls.iter().collect();
        sorted.sort_by_key(|(c, _)| (c.request, c.response, c.oneway));
        for (call, h) in sorted {
            let result = if call.oneway {
                "oneway"
            } else if call.response == silo_wire::codes::response::SUCCESS {
                "success"
            } else {
                "failure"
            };
            let labels = format!(
                "{common},is_long_polling=\"false\",protocol_type=\"remoting\",request_code=\"{}\",response_code=\"{}\",result=\"{result}\"",
                request_name(call.request),
                response_name(call.response)
            );
            h.render(out, "rocketmq_rpc_latency_milliseconds", &labels, &LATENCY_BOUNDS_MS);
        }
        drop(calls);
        let transactions = read(&self.transactions);
        let mut sorted: Vec<_> = transactions.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (name, value) in [
            ("rocketmq_commit_messages_total", (|e: &Ended| e.commits.load(Relaxed)) as fn(&Ended) -> u64),
            ("rocketmq_rollback_messages_total", |e: &Ended| e.rollbacks.load(Relaxed)),
        ] {
            header(out, name, "counter");
            for (topic, e) in &sorted {
                let _ = writeln!(out, "{name}{{{common},topic=\"{}\"}} {}", escape(topic), value(e));
            }
        }
        header(out, "rocketmq_finish_message_latency", "histogram");
        for (topic, e) in &sorted {
            let labels = format!("{common},topic=\"{}\"", escape(topic));
            e.finish.render(out, "rocketmq_finish_message_latency_milliseconds", &labels, &FINISH_BOUNDS_S);
        }
    }
}

impl crate::broker::Broker {
    /// Every metric, counters and gauges, in Prometheus' text format (what the exporter
    /// serves at `/metrics`).
    pub fn prometheus_text(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let common = format!(
            "cluster=\"{}\",node_id=\"{}\",node_type=\"broker\"",
            escape(&self.config.broker_cluster_name),
            escape(&self.config.broker_name)
        );
        let gauge = |out: &mut String, name: &str, family: &str, value: i64| {
            header(out, family, "gauge");
            let _ = writeln!(out, "{name}{{{common}}} {value}");
        };
        let topics = self.topics.table();
        gauge(&mut out, "rocketmq_topic_number", "rocketmq_topic_number", topics.len() as i64);
        let groups = self.groups.all().subscription_group_table.len();
        gauge(&mut out, "rocketmq_consumer_group_number", "rocketmq_consumer_group_number", groups as i64);
        let permission = if self.config.ha.role.is_master() { 6 } else { 4 };
        gauge(&mut out, "rocketmq_broker_permission", "rocketmq_broker_permission", permission);
        let (min, max) = self.store.commit_log_range();
        let storage = "storage_medium=\"disk\",storage_type=\"local\"";
        for (name, family, value) in [
            ("rocketmq_storage_size_bytes", "rocketmq_storage_size", max.saturating_sub(min)),
            (
                "rocketmq_storage_flush_behind_bytes",
                "rocketmq_storage_flush_behind_bytes",
                max.saturating_sub(self.store.flushed_offset()).max(0),
            ),
            (
                "rocketmq_storage_dispatch_behind_bytes",
                "rocketmq_storage_dispatch_behind_bytes",
                self.store.dispatch_behind(),
            ),
        ] {
            header(&mut out, family, "gauge");
            let _ = writeln!(out, "{name}{{{common},{storage}}} {value}");
        }
        // How old the oldest stored message is (nothing while the log is empty, as Apache).
        let oldest = self.message_at(min).ok().and_then(|m| match silo_wire::record::decode_record(&m, 0) {
            Ok(silo_wire::record::Decoded::Record(r)) => Some(r.meta.store_timestamp),
            _ => None,
        });
        header(&mut out, "rocketmq_storage_message_reserve_time", "gauge");
        if let Some(oldest) = oldest.filter(|t| *t > 0 && max > min) {
            let age = self.config.clock.now_ms().saturating_sub(oldest).max(0);
            let _ = writeln!(out, "rocketmq_storage_message_reserve_time_milliseconds{{{common},{storage}}} {age}");
        }
        // Half messages not yet committed or rolled back, by their real topic.
        header(&mut out, "rocketmq_half_messages", "gauge");
        let half = self.transactions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pending_by_topic();
        for (topic, n) in &half {
            let _ = writeln!(out, "rocketmq_half_messages{{{common},topic=\"{}\"}} {n}", escape(topic));
        }
        let connections = self.clients.connection_counts();
        header(&mut out, "rocketmq_producer_connections", "gauge");
        for ((language, version), n) in &connections.producers {
            let _ = writeln!(
                out,
                "rocketmq_producer_connections{{{common},language=\"{}\",protocol_type=\"remoting\",version=\"{}\"}} {n}",
                language.name().to_ascii_lowercase(),
                version_label(*version)
            );
        }
        header(&mut out, "rocketmq_consumer_connections", "gauge");
        for ((group, consume_type, language, version), n) in &connections.consumers {
            let mode = if consume_type == "CONSUME_PASSIVELY" { "push" } else { "pull" };
            let _ = writeln!(
                out,
                "rocketmq_consumer_connections{{{common},consume_mode=\"{mode}\",consumer_group=\"{}\",is_system=\"false\",language=\"{}\",protocol_type=\"remoting\",version=\"{}\"}} {n}",
                escape(group),
                language.name().to_ascii_lowercase(),
                version_label(*version)
            );
        }
        // Lag: per group and topic with committed offsets, what the queues hold beyond them.
        // Lag latency: how long the oldest message not yet consumed has waited (the store time
        // of the first message past the committed offset, over the group's queues of the topic).
        let offsets = self.offsets.all().offset_table;
        let mut lag: std::collections::BTreeMap<(&str, &str), (i64, Option<i64>)> = std::collections::BTreeMap::new();
        for (key, queues) in &offsets {
            let Some((topic, group)) = key.split_once('@') else { continue };
            let (sum, oldest) = lag.entry((group, topic)).or_default();
            for (queue, committed) in queues {
                let behind = self.store.max_offset_in_queue(topic, *queue).saturating_sub(*committed).max(0);
                *sum += behind;
                if behind > 0
                    && let Some(stored) = self.store.message_store_time(topic, *queue, *committed).filter(|t| *t > 0)
                {
                    *oldest = Some(oldest.map_or(stored, |o: i64| o.min(stored)));
                }
            }
        }
        let now = self.config.clock.now_ms();
        for (name, family) in [
            ("rocketmq_consumer_lag_messages", "rocketmq_consumer_lag_messages"),
            ("rocketmq_consumer_lag_latency_milliseconds", "rocketmq_consumer_lag_latency"),
        ] {
            header(&mut out, family, "gauge");
            for ((group, topic), (behind, oldest)) in &lag {
                let value = if name == "rocketmq_consumer_lag_messages" {
                    *behind
                } else {
                    oldest.map_or(0, |t| now.saturating_sub(t).max(0))
                };
                let _ = writeln!(
                    out,
                    "{name}{{{common},consumer_group=\"{}\",is_retry=\"{}\",is_system=\"{}\",topic=\"{}\"}} {value}",
                    escape(group),
                    topic.starts_with(silo_store::names::RETRY_PREFIX),
                    is_system(topic),
                    escape(topic)
                );
            }
        }
        self.metrics.render_counters(&mut out, &common);
        out
    }
}

/// Apache's `version` label: the name of Java's `MQVersion.Version` at `ordinal`, in lower
/// case (`v5_3_3` for 479). From `V4_0_0_SNAPSHOT` (212) on, each x.y.z has a snapshot and a
/// release, ten patches to a minor and ten minors to a major; older ordinals, whose list is
/// irregular, are shown as numbers.
fn version_label(ordinal: i32) -> String {
    let (major, first) = match ordinal {
        412..=611 => (5, 412),
        212..=411 => (4, 212),
        _ => return ordinal.to_string(),
    };
    let index = ordinal - first;
    let (number, release) = (index / 2, index % 2 == 1);
    format!("v{major}_{}_{}{}", number / 10, number % 10, if release { "" } else { "_snapshot" })
}

/// Whether Apache counts `topic` as a system topic (`is_system`): the broker's own topics.
fn is_system(topic: &str) -> bool {
    use silo_store::names;
    topic.starts_with(names::SYSTEM_TOPIC_PREFIX)
        || topic.starts_with("RMQ_SYS_")
        || topic == names::SCHEDULE_TOPIC
        || matches!(topic, "TBW102" | "SELF_TEST_TOPIC" | "OFFSET_MOVED_EVENT" | "BenchmarkTest")
}

/// A `# TYPE` line, named as Apache's exporter names the family (a histogram's and a unit's
/// family lack the unit suffix its samples have: `rocketmq_rpc_latency` for
/// `rocketmq_rpc_latency_milliseconds_bucket`).
pub fn header(out: &mut String, family: &str, kind: &str) {
    let _ = writeln!(out, "# TYPE {family} {kind}");
}

/// A label value with `\`, `"` and newlines escaped.
pub fn escape(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.contains(['\\', '"', '\n']) {
        return value.into();
    }
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n").into()
}

/// Apache's label for a request code: its `RequestCode` name in lower case.
fn request_name(code: i32) -> String {
    crate::cmd::table::find(code).map_or_else(|| code.to_string(), |r| r.name.to_ascii_lowercase())
}

/// Apache's label for a response code: its `ResponseCode` name in lower case.
fn response_name(code: i32) -> String {
    use silo_wire::codes::response as rs;
    let name = match code {
        rs::SUCCESS => "success",
        rs::SYSTEM_ERROR => "system_error",
        rs::SYSTEM_BUSY => "system_busy",
        rs::REQUEST_CODE_NOT_SUPPORTED => "request_code_not_supported",
        rs::FLUSH_DISK_TIMEOUT => "flush_disk_timeout",
        rs::SLAVE_NOT_AVAILABLE => "slave_not_available",
        rs::FLUSH_SLAVE_TIMEOUT => "flush_slave_timeout",
        rs::MESSAGE_ILLEGAL => "message_illegal",
        rs::SERVICE_NOT_AVAILABLE => "service_not_available",
        rs::NO_PERMISSION => "no_permission",
        rs::TOPIC_NOT_EXIST => "topic_not_exist",
        rs::PULL_NOT_FOUND => "pull_not_found",
        rs::PULL_RETRY_IMMEDIATELY => "pull_retry_immediately",
        rs::PULL_OFFSET_MOVED => "pull_offset_moved",
        rs::QUERY_NOT_FOUND => "query_not_found",
        rs::SUBSCRIPTION_GROUP_NOT_EXIST => "subscription_group_not_exist",
        rs::CONSUMER_NOT_ONLINE => "consumer_not_online",
        rs::INVALID_PARAMETER => "invalid_parameter",
        other => return other.to_string(),
    };
    name.to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn counters_render_as_apaches_series() {
        let m = Metrics::default();
        m.sent("orders", MessageType::Normal, 1, 300);
        m.sent("orders", MessageType::Normal, 2, 5000);
        m.called(310, 0, false, Duration::from_millis(2));
        m.called(11, 0, false, Duration::from_millis(4000));
        let mut out = String::new();
        m.render_counters(&mut out, "cluster=\"C\",node_id=\"b\",node_type=\"broker\"");
        let labels = "cluster=\"C\",node_id=\"b\",node_type=\"broker\",is_system=\"false\",message_type=\"normal\",topic=\"orders\"";
        assert!(out.contains(&format!("rocketmq_messages_in_total{{{labels}}} 3\n")), "{out}");
        assert!(out.contains(&format!("rocketmq_throughput_in_total{{{labels}}} 5300\n")), "{out}");
        assert!(out.contains(&format!("rocketmq_message_size_bucket{{{labels},le=\"1024.0\"}} 1\n")), "{out}");
        assert!(out.contains(&format!("rocketmq_message_size_bucket{{{labels},le=\"4096.0\"}} 3\n")), "{out}");
        assert!(
            out.contains(
                "request_code=\"send_message_v2\",response_code=\"success\",result=\"success\",le=\"3.0\"} 1\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("request_code=\"pull_message\",response_code=\"success\",result=\"success\",le=\"+Inf\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("# TYPE rocketmq_messages_in_total counter\n"), "{out}");
    }

    #[test]
    fn ended_transactions_count_by_topic_with_apaches_age_buckets() {
        let m = Metrics::default();
        m.transaction_ended("orders", true, 2_500);
        m.transaction_ended("orders", true, 90_000);
        m.transaction_ended("orders", false, 1_000);
        let mut out = String::new();
        m.render_counters(&mut out, "c=\"C\"");
        assert!(out.contains("rocketmq_commit_messages_total{c=\"C\",topic=\"orders\"} 2\n"), "{out}");
        assert!(out.contains("rocketmq_rollback_messages_total{c=\"C\",topic=\"orders\"} 1\n"), "{out}");
        let bucket = "rocketmq_finish_message_latency_milliseconds_bucket{c=\"C\",topic=\"orders\"";
        assert!(out.contains(&format!("{bucket},le=\"5.0\"}} 1\n")), "{out}");
        assert!(out.contains(&format!("{bucket},le=\"600.0\"}} 2\n")), "{out}");
        assert!(
            out.contains("rocketmq_finish_message_latency_milliseconds_sum{c=\"C\",topic=\"orders\"} 92\n"),
            "{out}"
        );
    }

    #[test]
    fn version_labels_are_javas_version_names() {
        assert_eq!(version_label(479), "v5_3_3");
        assert_eq!(version_label(481), "v5_3_4");
        assert_eq!(version_label(413), "v5_0_0");
        assert_eq!(version_label(409), "v4_9_8");
        assert_eq!(version_label(401), "v4_9_4");
        assert_eq!(version_label(412), "v5_0_0_snapshot");
        assert_eq!(version_label(121), "121");
    }
}
