//! What the console's pages show, as JSON: read from the broker's core the way the admin
//! requests read it, so that the console and `mqadmin` never disagree.

use serde_json::{Value, json};
use silo_broker::broker::Broker;
use silo_wire::StoredRecord;

/// The most of a body a message view carries (the page says how long the whole body is).
pub const MAX_BODY_SHOWN: usize = 64 * 1024;
/// The most messages one lookup by key returns.
pub const MAX_FOUND: usize = 32;

/// Topics the broker makes for itself, and the internal ones of retries, dead letters,
/// schedules and transactions: listed apart from the users' own.
pub fn is_system_topic(broker: &Broker, topic: &str) -> bool {
    let c = &broker.config;
    ["%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_"].iter().any(|p| topic.starts_with(p))
        || ["TBW102", "SELF_TEST_TOPIC", "SCHEDULE_TOPIC_XXXX", "OFFSET_MOVED_EVENT"].contains(&topic)
        || topic == c.broker_cluster_name
        || topic == c.broker_name
        || topic.strip_prefix(c.broker_cluster_name.as_str()) == Some("_REPLY_TOPIC")
}

/// The broker, its cluster as the name server knows it, and its runtime figures.
pub fn overview(broker: &Broker) -> Value {
    let c = &broker.config;
    let info = broker.runtime_info();
    let brokers: Vec<Value> = match &broker.embedded_routes {
        Some(routes) => {
            let cluster = routes.cluster_info();
            let mut out = Vec::new();
            for (cluster_name, names) in &cluster.cluster_addr_table {
                for name in names {
                    let Some(data) = cluster.broker_addr_table.get(name) else { continue };
                    for (id, addr) in &data.broker_addrs {
                        out.push(json!({"cluster": cluster_name, "name": name, "id": id, "addr": addr}));
                    }
                }
            }
            out
        }
        None => vec![json!({
            "cluster": c.broker_cluster_name,
            "name": c.broker_name,
            "id": c.broker_id,
            "addr": format!("{}:{}", c.broker_ip, c.listen_port),
        })],
    };
    let table = broker.topics.table();
    let user_topics = table.keys().filter(|t| !is_system_topic(broker, t)).count();
    json!({
        "cluster": c.broker_cluster_name,
        "brokerName": c.broker_name,
        "brokerId": c.broker_id,
        "addr": format!("{}:{}", c.broker_ip, c.listen_port),
        "version": info.get("brokerVersionDesc"),
        "bootTimestamp": info.get("bootTimestamp").and_then(|v| v.parse::<i64>().ok()),
        "messagesIn": broker.stats.put_messages.load(std::sync::atomic::Ordering::Relaxed),
        "messagesOut": broker.stats.get_messages.load(std::sync::atomic::Ordering::Relaxed),
        "commitLogMinOffset": info.get("commitLogMinOffset").and_then(|v| v.parse::<i64>().ok()),
        "commitLogMaxOffset": info.get("commitLogMaxOffset").and_then(|v| v.parse::<i64>().ok()),
        "commitLogDiskRatio": info.get("commitLogDiskRatio").and_then(|v| v.parse::<f64>().ok()),
        "topics": user_topics,
        "groups": groups(broker).iter().filter(|g| !is_system_group(g)).count(),
        "brokers": brokers,
        "runtime": info,
    })
}

/// Every topic: its queues and how many messages they hold.
pub fn topics(broker: &Broker) -> Value {
    let mut out = Vec::new();
    for (name, tc) in broker.topics.table() {
        let queues = broker.topic_stats(&name).unwrap_or_default();
        let messages: i64 = queues.iter().map(|q| q.max_offset - q.min_offset).sum();
        let last_update = queues.iter().map(|q| q.last_update).max().unwrap_or(0);
        out.push(json!({
            "name": name,
            "system": is_system_topic(broker, &name),
            "readQueues": tc.read_queue_nums,
            "writeQueues": tc.write_queue_nums,
            "perm": tc.perm,
            "messages": messages,
            "lastUpdate": last_update,
        }));
    }
    Value::Array(out)
}

/// One topic: its settings, each queue's offsets, and the groups that consume it.
pub fn topic(broker: &Broker, name: &str) -> Option<Value> {
    let tc = broker.topics.get(name)?;
    let queues: Vec<Value> = broker
        .topic_stats(name)
        .unwrap_or_default()
        .iter()
        .map(|q| {
            json!({"queueId": q.queue_id, "minOffset": q.min_offset, "maxOffset": q.max_offset,
                   "lastUpdate": q.last_update})
        })
        .collect();
    let groups: Vec<Value> = broker
        .groups_of_topic(name)
        .into_iter()
        .map(|g| {
            let lag: i64 = broker.consume_stats(&g, Some(name)).iter().map(lag).sum();
            json!({"group": g, "lag": lag})
        })
        .collect();
    Some(json!({
        "name": name,
        "system": is_system_topic(broker, name),
        "readQueues": tc.read_queue_nums,
        "writeQueues": tc.write_queue_nums,
        "perm": tc.perm,
        "order": tc.order,
        "attributes": tc.attributes,
        "queues": queues,
        "groups": groups,
    }))
}

fn lag(q: &silo_broker::core::admin::QueueProgress) -> i64 {
    (q.broker_offset - q.consumer_offset).max(0)
}

/// Groups the broker makes for itself (its tools, self-test and proxies): listed apart.
pub fn is_system_group(group: &str) -> bool {
    ["CID_RMQ_SYS_", "CID_ONS"].iter().any(|p| group.starts_with(p))
        || ["TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP"].contains(&group)
}

/// The names of every group the broker knows: configured, with committed offsets, or online.
fn groups(broker: &Broker) -> std::collections::BTreeSet<String> {
    let mut names: std::collections::BTreeSet<String> =
        broker.groups.all().subscription_group_table.into_keys().collect();
    for key in broker.offsets.all().offset_table.into_keys() {
        if let Some((_, group)) = key.split_once('@') {
            names.insert(group.to_owned());
        }
    }
    names.retain(|g| !g.is_empty());
    names
}

/// Every group: what it lags behind in total and how many of its clients are online.
pub fn group_list(broker: &Broker) -> Value {
    let out: Vec<Value> = groups(broker)
        .into_iter()
        .map(|g| {
            let progress = broker.consume_stats(&g, None);
            let topics: std::collections::BTreeSet<&str> = progress.iter().map(|q| q.topic.as_str()).collect();
            let online = broker.group_info(&g).map(|i| i.connections.len()).unwrap_or(0);
            json!({
                "group": g,
                "system": is_system_group(&g),
                "topics": topics,
                "lag": progress.iter().map(lag).sum::<i64>(),
                "online": online,
            })
        })
        .collect();
    Value::Array(out)
}

/// One group: per queue of each topic it consumes, the queue's end, the group's offset and
/// the lag between them; and its online clients.
pub fn group(broker: &Broker, name: &str) -> Value {
    let progress = broker.consume_stats(name, None);
    let queues: Vec<Value> = progress
        .iter()
        .map(|q| {
            json!({"topic": q.topic, "queueId": q.queue_id, "brokerOffset": q.broker_offset,
                   "consumerOffset": q.consumer_offset, "lag": lag(q), "lastConsumed": q.last_consumed})
        })
        .collect();
    let (connections, subscriptions) = match broker.group_info(name) {
        Ok(info) => (
            info.connections
                .iter()
                .map(|c| {
                    json!({"clientId": c.client_id, "addr": c.client_addr, "language": c.language.name(),
                           "version": c.version})
                })
                .collect(),
            info.subscriptions.iter().map(|s| json!({"topic": s.topic, "expression": s.sub_string})).collect(),
        ),
        Err(_) => (Vec::new(), Vec::new()),
    };
    json!({
        "group": name,
        "lag": progress.iter().map(lag).sum::<i64>(),
        "queues": queues,
        "connections": connections,
        "subscriptions": subscriptions,
    })
}

/// A stored record as the message page shows it. The body is text as far as it is valid
/// UTF-8 (invalid bytes become U+FFFD) and cut at [`MAX_BODY_SHOWN`]; the page puts it into
/// the document as text, never as markup.
pub fn message(record: &StoredRecord<'_>) -> Value {
    let m = &record.meta;
    let shown = record.body.get(..MAX_BODY_SHOWN).unwrap_or(record.body);
    let properties: serde_json::Map<String, Value> =
        record.properties.iter().map(|(k, v)| (k.to_owned(), Value::String(v.to_owned()))).collect();
    json!({
        "msgId": silo_wire::msgid::offset_msg_id(m.store_host, m.physical_offset).to_string(),
        "uniqueKey": record.properties.get("UNIQ_KEY"),
        "topic": record.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "keys": record.properties.get("KEYS"),
        "tags": record.properties.get("TAGS"),
        "bornTimestamp": m.born_timestamp,
        "bornHost": m.born_host.to_string(),
        "storeTimestamp": m.store_timestamp,
        "storeHost": m.store_host.to_string(),
        "reconsumeTimes": m.reconsume_times,
        "sysFlag": m.sys_flag,
        "properties": properties,
        "bodyLength": record.body.len(),
        "bodyTruncated": shown.len() < record.body.len(),
        "body": String::from_utf8_lossy(shown),
    })
}

/// Why a lookup found nothing, for the page to say.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("give a topic and a key, or a message id")]
    NothingAsked,
    #[error("no message of topic {topic} has key or id {key}")]
    NoneForKey { topic: String, key: String },
    #[error("{0}")]
    NotHere(String),
}

/// Messages by key (`topic` and `key`: the index holds keys and unique ids), or by the
/// offset message id the broker answered a send with (`id`; with a topic, a unique id too).
pub fn find(broker: &Broker, topic: Option<&str>, key: Option<&str>, id: Option<&str>) -> Result<Value, LookupError> {
    if let Some(id) = id.map(str::trim).filter(|i| !i.is_empty()) {
        if let Ok((_, offset)) = silo_wire::msgid::parse_offset_msg_id(id) {
            let found = broker.message_at(offset).map_err(|e| LookupError::NotHere(e.to_string()))?;
            let record = silo_wire::record::decode_record(&found, 0)
                .ok()
                .and_then(|d| match d {
                    silo_wire::record::Decoded::Record(r) => Some(message(&r)),
                    _ => None,
                })
                .ok_or_else(|| LookupError::NotHere(format!("no message at commit-log offset {offset}")))?;
            return Ok(json!([record]));
        }
        // A client's message id (its unique key) is indexed under the topic as a key.
        if let Some(topic) = topic.filter(|t| !t.is_empty()) {
            return by_key(broker, topic, id);
        }
        return Err(LookupError::NothingAsked);
    }
    match (topic.filter(|t| !t.is_empty()), key.map(str::trim).filter(|k| !k.is_empty())) {
        (Some(topic), Some(key)) => by_key(broker, topic, key),
        _ => Err(LookupError::NothingAsked),
    }
}

fn by_key(broker: &Broker, topic: &str, key: &str) -> Result<Value, LookupError> {
    let none = || LookupError::NoneForKey { topic: topic.to_owned(), key: key.to_owned() };
    let found = broker.messages_by_key(topic, key, MAX_FOUND, 0, i64::MAX).map_err(|_| none())?;
    let records: Vec<Value> = found
        .iter()
        .filter_map(|m| match silo_wire::record::decode_record(m, 0) {
            Ok(silo_wire::record::Decoded::Record(r)) => Some(message(&r)),
            _ => None,
        })
        .collect();
    if records.is_empty() {
        return Err(none());
    }
    Ok(Value::Array(records))
}
