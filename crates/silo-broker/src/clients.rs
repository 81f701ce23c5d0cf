//! Who is connected: consumer groups with their members and subscriptions, producer groups
//! with their members (both registered by HEART_BEAT), and the queue locks of orderly
//! consumers. Producers are tracked so that the broker can reach them: a transaction's
//! check-back goes to one live member of its producer group, and a reply goes to the client
//! that sent the request.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use silo_wire::LanguageCode;
use silo_wire::body::{ConsumerData, SubscriptionData};

use crate::connection::Channel;

/// A client is dropped 120 s after its last heartbeat (docs/protocol.md §2.5).
pub const CLIENT_EXPIRY: Duration = Duration::from_secs(120);
/// An orderly consumer's queue lock lasts 60 s unless renewed (docs/protocol.md §2.8).
pub const LOCK_EXPIRY: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Member {
    channel: Channel,
    last_update: Instant,
    language: LanguageCode,
    version: i32,
}

/// One consumer as admin tools see it (GET_CONSUMER_CONNECTION_LIST).
#[derive(Debug, Clone)]
pub struct Connection {
    pub client_id: String,
    pub client_addr: std::net::SocketAddr,
    pub language: LanguageCode,
    pub version: i32,
}

/// An online consumer group: its members, subscriptions and settings.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub connections: Vec<Connection>,
    pub subscriptions: Vec<SubscriptionData>,
    pub message_model: String,
    pub consume_type: String,
    pub consume_from_where: String,
}

#[derive(Debug, Default)]
struct Group {
    members: BTreeMap<String, Member>,
    subscriptions: HashMap<String, SubscriptionData>,
    message_model: String,
    consume_type: String,
    consume_from_where: String,
}

/// A producer group's members: client id -> (channel, last heartbeat, language and version).
type ProducerGroup = BTreeMap<String, (Channel, Instant, (LanguageCode, i32))>;

/// Connected clients counted as Apache's connection gauges label them.
#[derive(Debug, Default)]
pub struct ConnectionCounts {
    /// (language, version) -> producers.
    pub producers: BTreeMap<(LanguageCode, i32), u64>,
    /// (group, consume type, language, version) -> consumers.
    pub consumers: BTreeMap<(String, String, LanguageCode, i32), u64>,
}

#[derive(Debug, Default)]
struct State {
    groups: HashMap<String, Group>,
    producers: HashMap<String, ProducerGroup>,
    /// (group, topic, broker name, queue id) → (client id, expiry).
    locks: HashMap<(String, String, String, i32), (String, Instant)>,
}

#[derive(Debug, Default)]
pub struct ClientRegistry {
    state: Mutex<State>,
}

/// A group whose membership changed: notify these channels.
#[derive(Debug)]
pub struct Changed {
    pub group: String,
    pub channels: Vec<Channel>,
}

impl ClientRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn members_of(group: &Group) -> Vec<Channel> {
        group.members.values().map(|m| m.channel.clone()).collect()
    }

    /// Registers a consumer from a heartbeat (sent in `language`, `version`); returns the change
    /// to notify, if membership changed.
    pub fn register_consumer(
        &self,
        client_id: &str,
        data: &ConsumerData,
        channel: &Channel,
        (language, version): (LanguageCode, i32),
    ) -> Option<Changed> {
        let mut s = self.lock();
        let group = s.groups.entry(data.group_name.clone()).or_default();
        group.message_model = data.message_model.clone();
        group.consume_type = data.consume_type.clone();
        group.consume_from_where = data.consume_from_where.clone();
        for sub in &data.subscription_data_set {
            group.subscriptions.insert(sub.topic.clone(), sub.clone());
        }
        let is_new = match group.members.get_mut(client_id) {
            Some(m) => {
                let moved = m.channel.id != channel.id;
                m.channel = channel.clone();
                m.last_update = Instant::now();
                (m.language, m.version) = (language, version);
                moved
            }
            None => {
                let m = Member { channel: channel.clone(), last_update: Instant::now(), language, version };
                group.members.insert(client_id.to_owned(), m);
                true
            }
        };
        is_new.then(|| Changed { group: data.group_name.clone(), channels: Self::members_of(group) })
    }

    /// Registers (or refreshes) a producer of `group` from a heartbeat.
    pub fn register_producer(&self, client_id: &str, group: &str, channel: &Channel, sender: (LanguageCode, i32)) {
        let mut s = self.lock();
        let members = s.producers.entry(group.to_owned()).or_default();
        members.insert(client_id.to_owned(), (channel.clone(), Instant::now(), sender));
    }

    /// Producers and consumers connected now, by what Apache labels them with.
    pub fn connection_counts(&self) -> ConnectionCounts {
        let s = self.lock();
        let mut counts = ConnectionCounts::default();
        for (_, (channel, _, sender)) in s.producers.values().flatten() {
            if !channel.is_closed() {
                *counts.producers.entry(*sender).or_default() += 1;
            }
        }
        for (name, g) in &s.groups {
            for m in g.members.values().filter(|m| !m.channel.is_closed()) {
                let key = (name.clone(), g.consume_type.clone(), m.language, m.version);
                *counts.consumers.entry(key).or_default() += 1;
            }
        }
        counts
    }

    pub fn unregister_producer(&self, client_id: &str, group: &str) {
        let mut s = self.lock();
        if let Some(members) = s.producers.get_mut(group) {
            members.remove(client_id);
            if members.is_empty() {
                s.producers.remove(group);
            }
        }
    }

    /// One open channel to a member of producer group `group`; successive calls rotate over
    /// the members (`turn` picks which), so that check-backs spread over them.
    pub fn producer_channel(&self, group: &str, turn: usize) -> Option<Channel> {
        let s = self.lock();
        let live: Vec<&Channel> =
            s.producers.get(group)?.values().map(|(c, _, _)| c).filter(|c| !c.is_closed()).collect();
        let n = live.len();
        (n > 0).then(|| live.get(turn % n).map(|c| (*c).clone())).flatten()
    }

    /// The channel of a connected client (producer or consumer), by client id.
    pub fn client_channel(&self, client_id: &str) -> Option<Channel> {
        let s = self.lock();
        let producer = s.producers.values().filter_map(|m| m.get(client_id)).map(|(c, _, _)| c);
        let consumer = s.groups.values().filter_map(|g| g.members.get(client_id)).map(|m| &m.channel);
        producer.chain(consumer).find(|c| !c.is_closed()).cloned()
    }

    /// The channel of `client_id` as a member of consumer `group`, if it is connected.
    pub fn consumer_channel(&self, group: &str, client_id: &str) -> Option<Channel> {
        let s = self.lock();
        s.groups.get(group)?.members.get(client_id).map(|m| m.channel.clone()).filter(|c| !c.is_closed())
    }

    pub fn unregister_consumer(&self, client_id: &str, group_name: &str) -> Option<Changed> {
        let mut s = self.lock();
        let group = s.groups.get_mut(group_name)?;
        group.members.remove(client_id)?;
        Some(Changed { group: group_name.into(), channels: Self::members_of(group) })
    }

    /// Drops every registration of a closed connection.
    pub fn channel_closed(&self, channel_id: u64) -> Vec<Changed> {
        let mut s = self.lock();
        for members in s.producers.values_mut() {
            members.retain(|_, (c, _, _)| c.id != channel_id);
        }
        s.producers.retain(|_, m| !m.is_empty());
        let mut changed = Vec::new();
        for (name, group) in s.groups.iter_mut() {
            let before = group.members.len();
            group.members.retain(|_, m| m.channel.id != channel_id);
            if group.members.len() != before {
                changed.push(Changed { group: name.clone(), channels: Self::members_of(group) });
            }
        }
        changed
    }

    /// Drops clients whose last heartbeat is too old.
    pub fn expire(&self, now: Instant) -> Vec<Changed> {
        let mut s = self.lock();
        for members in s.producers.values_mut() {
            members.retain(|_, (_, seen, _)| now.duration_since(*seen) <= CLIENT_EXPIRY);
        }
        s.producers.retain(|_, m| !m.is_empty());
        let mut changed = Vec::new();
        for (name, group) in s.groups.iter_mut() {
            let before = group.members.len();
            group.members.retain(|_, m| now.duration_since(m.last_update) <= CLIENT_EXPIRY);
            if group.members.len() != before {
                changed.push(Changed { group: name.clone(), channels: Self::members_of(group) });
            }
        }
        let now_locks = now;
        s.locks.retain(|_, (_, expiry)| *expiry > now_locks);
        changed
    }

    pub fn consumer_ids(&self, group: &str) -> Vec<String> {
        self.lock().groups.get(group).map(|g| g.members.keys().cloned().collect()).unwrap_or_default()
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<SubscriptionData> {
        self.lock().groups.get(group)?.subscriptions.get(topic).cloned()
    }

    pub fn has_group(&self, group: &str) -> bool {
        self.lock().groups.contains_key(group)
    }

    pub fn is_broadcast(&self, group: &str) -> bool {
        self.lock().groups.get(group).is_some_and(|g| g.message_model == "BROADCASTING")
    }

    /// The group with its members, if any member is online.
    pub fn group_info(&self, group: &str) -> Option<GroupInfo> {
        let s = self.lock();
        let g = s.groups.get(group).filter(|g| !g.members.is_empty())?;
        Some(GroupInfo {
            connections: g
                .members
                .iter()
                .map(|(id, m)| Connection {
                    client_id: id.clone(),
                    client_addr: m.channel.remote,
                    language: m.language,
                    version: m.version,
                })
                .collect(),
            subscriptions: g.subscriptions.values().cloned().collect(),
            message_model: g.message_model.clone(),
            consume_type: g.consume_type.clone(),
            consume_from_where: g.consume_from_where.clone(),
        })
    }

    /// Groups that subscribe to `topic`, for admin reads.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        self.lock().groups.iter().filter(|(_, g)| g.subscriptions.contains_key(topic)).map(|(n, _)| n.clone()).collect()
    }

    /// LOCK_BATCH_MQ: grants each queue not held by another live client; returns the granted.
    pub fn lock_queues(
        &self,
        group: &str,
        client_id: &str,
        queues: &[(String, String, i32)],
    ) -> Vec<(String, String, i32)> {
        let mut s = self.lock();
        let now = Instant::now();
        let mut granted = Vec::new();
        for (topic, broker, qid) in queues {
            let key = (group.to_owned(), topic.clone(), broker.clone(), *qid);
            let free = match s.locks.get(&key) {
                Some((holder, expiry)) => holder == client_id || *expiry <= now,
                None => true,
            };
            if free {
                s.locks.insert(key, (client_id.to_owned(), now + LOCK_EXPIRY));
                granted.push((topic.clone(), broker.clone(), *qid));
            }
        }
        granted
    }

    pub fn unlock_queues(&self, group: &str, client_id: &str, queues: &[(String, String, i32)]) {
        let mut s = self.lock();
        for (topic, broker, qid) in queues {
            let key = (group.to_owned(), topic.clone(), broker.clone(), *qid);
            if s.locks.get(&key).is_some_and(|(holder, _)| holder == client_id) {
                s.locks.remove(&key);
            }
        }
    }
}
