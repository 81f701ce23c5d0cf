//! The name server's route table (docs/protocol.md §2.10): which brokers exist, which topics they hold, and
//! for how long they are alive without re-registering.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use silo_wire::body::{BrokerData, QueueData, TopicConfig, TopicRouteData};

/// GET_BROKER_CLUSTER_INFO body.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER body.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    pub topic_list: BTreeSet<String>,
}

#[derive(Debug)]
struct Live {
    broker_name: String,
    cluster: String,
    /// Where its slaves replicate from (`haServerAddr`).
    ha_server_addr: String,
    last_update: Instant,
    timeout: Duration,
}

#[derive(Debug, Default)]
struct Routes {
    clusters: BTreeMap<String, BTreeSet<String>>,
    brokers: BTreeMap<String, BrokerData>,
    topics: BTreeMap<String, BTreeMap<String, QueueData>>,
    live: HashMap<String, Live>,
    /// Which connection each broker registered on, by connection id.
    channels: HashMap<u64, BTreeSet<String>>,
    kv: BTreeMap<(String, String), String>,
}

/// What a broker tells the name server when it registers.
#[derive(Debug, Clone)]
pub struct Registration<'a> {
    pub cluster: &'a str,
    pub broker_name: &'a str,
    pub broker_addr: &'a str,
    pub broker_id: i64,
    /// The broker's HA listener, which the name server tells its slaves.
    pub ha_server_addr: &'a str,
    pub timeout: Duration,
    pub topics: &'a BTreeMap<String, TopicConfig>,
}

/// What a registering slave is told about its group's master.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterOfGroup {
    pub master_addr: Option<String>,
    pub ha_server_addr: Option<String>,
}

#[derive(Debug, Default)]
pub struct RouteTable {
    routes: Mutex<Routes>,
}

/// Default broker expiry without re-registration.
pub const BROKER_EXPIRY: Duration = Duration::from_secs(120);

impl RouteTable {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// REGISTER_BROKER: stores the broker and, for its group's master (or, with no master, the
    /// slave with the lowest id, as Java's name server does), replaces the queue data of each
    /// topic it reports. A slave gets its master's address and HA address back, when the
    /// master is registered.
    pub fn register(&self, reg: &Registration<'_>) -> MasterOfGroup {
        let mut r = self.lock();
        r.clusters.entry(reg.cluster.into()).or_default().insert(reg.broker_name.into());
        let data = r.brokers.entry(reg.broker_name.into()).or_insert_with(|| BrokerData {
            broker_name: reg.broker_name.into(),
            cluster: reg.cluster.into(),
            ..Default::default()
        });
        // An address may move between ids (failover); keep one id per address.
        data.broker_addrs.retain(|id, addr| *id == reg.broker_id || addr != reg.broker_addr);
        data.broker_addrs.insert(reg.broker_id, reg.broker_addr.into());
        let lowest = data.broker_addrs.keys().next().copied();
        let master = (reg.broker_id != 0).then(|| data.broker_addrs.get(&0).cloned()).flatten();
        if lowest == Some(reg.broker_id) {
            for (topic, tc) in reg.topics {
                r.topics.entry(topic.clone()).or_default().insert(
                    reg.broker_name.into(),
                    QueueData {
                        broker_name: reg.broker_name.into(),
                        perm: tc.perm,
                        read_queue_nums: tc.read_queue_nums,
                        write_queue_nums: tc.write_queue_nums,
                        topic_sys_flag: tc.topic_sys_flag,
                    },
                );
            }
            // Topics the broker no longer reports lose its queues.
            let name = reg.broker_name;
            r.topics.retain(|topic, queues| {
                if !reg.topics.contains_key(topic) {
                    queues.remove(name);
                }
                !queues.is_empty()
            });
        }
        r.live.insert(
            reg.broker_addr.into(),
            Live {
                broker_name: reg.broker_name.into(),
                cluster: reg.cluster.into(),
                ha_server_addr: reg.ha_server_addr.into(),
                last_update: Instant::now(),
                timeout: reg.timeout,
            },
        );
        let ha_server_addr = master.as_ref().and_then(|m| r.live.get(m)).map(|l| l.ha_server_addr.clone());
        MasterOfGroup { master_addr: master, ha_server_addr }
    }

    /// Notes that `broker_addr` registered on connection `conn`.
    pub fn registered_on(&self, conn: u64, broker_addr: &str) {
        let mut r = self.lock();
        if !r.channels.get(&conn).is_some_and(|a| a.contains(broker_addr)) {
            r.channels.entry(conn).or_default().insert(broker_addr.to_owned());
        }
    }

    /// Connection `conn` closed: every broker that registered on it is removed.
    pub fn channel_closed(&self, conn: u64) {
        let mut r = self.lock();
        if let Some(addrs) = r.channels.remove(&conn) {
            for addr in addrs {
                // Unless it registered again on another connection since.
                let elsewhere = r.channels.values().any(|a| a.contains(&addr));
                if !elsewhere {
                    tracing::info!(broker = %addr, "the broker's registering connection closed");
                    Self::remove_locked(&mut r, &addr);
                }
            }
        }
    }

    /// UNREGISTER_BROKER, or expiry.
    pub fn unregister(&self, broker_addr: &str) {
        let mut r = self.lock();
        Self::remove_locked(&mut r, broker_addr);
    }

    fn remove_locked(r: &mut Routes, broker_addr: &str) {
        let Some(live) = r.live.remove(broker_addr) else { return };
        let mut gone = false;
        if let Some(data) = r.brokers.get_mut(&live.broker_name) {
            data.broker_addrs.retain(|_, a| a != broker_addr);
            gone = data.broker_addrs.is_empty();
        }
        // A group's queues stay while any of its brokers lives: consumers read from a slave
        // while the master is away.
        if gone {
            for queues in r.topics.values_mut() {
                queues.remove(&live.broker_name);
            }
            r.topics.retain(|_, q| !q.is_empty());
        }
        if gone {
            r.brokers.remove(&live.broker_name);
            if let Some(names) = r.clusters.get_mut(&live.cluster) {
                names.remove(&live.broker_name);
                if names.is_empty() {
                    r.clusters.remove(&live.cluster);
                }
            }
        }
        tracing::info!(broker = broker_addr, name = %live.broker_name, "broker removed from the route table");
    }

    /// Removes brokers that did not re-register in time. Returns how many.
    pub fn expire(&self, now: Instant) -> usize {
        let mut r = self.lock();
        let expired: Vec<String> = r
            .live
            .iter()
            .filter(|(_, l)| now.duration_since(l.last_update) > l.timeout)
            .map(|(a, _)| a.clone())
            .collect();
        for addr in &expired {
            Self::remove_locked(&mut r, addr);
        }
        expired.len()
    }

    /// GET_ROUTEINFO_BY_TOPIC: only brokers that hold queues of the topic.
    pub fn route(&self, topic: &str) -> Option<TopicRouteData> {
        let r = self.lock();
        let queues = r.topics.get(topic)?;
        let mut route = TopicRouteData::default();
        for (name, q) in queues {
            if let Some(b) = r.brokers.get(name) {
                route.broker_datas.push(b.clone());
                route.queue_datas.push(q.clone());
            }
        }
        (!route.queue_datas.is_empty()).then_some(route)
    }

    /// DELETE_TOPIC_IN_NAMESRV: drops the topic's queues on the brokers of `cluster`, or
    /// everywhere without one. A broker that still holds the topic puts it back when it next
    /// registers.
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>) {
        let mut r = self.lock();
        let Some(cluster) = cluster else {
            r.topics.remove(topic);
            return;
        };
        let names = r.clusters.get(cluster).cloned().unwrap_or_default();
        if let Some(queues) = r.topics.get_mut(topic) {
            queues.retain(|name, _| !names.contains(name));
            if queues.is_empty() {
                r.topics.remove(topic);
            }
        }
    }

    pub fn cluster_info(&self) -> ClusterInfo {
        let r = self.lock();
        ClusterInfo { broker_addr_table: r.brokers.clone(), cluster_addr_table: r.clusters.clone() }
    }

    pub fn topic_list(&self) -> TopicList {
        TopicList { topic_list: self.lock().topics.keys().cloned().collect() }
    }

    pub fn put_kv(&self, namespace: &str, key: &str, value: &str) {
        self.lock().kv.insert((namespace.into(), key.into()), value.into());
    }

    pub fn get_kv(&self, namespace: &str, key: &str) -> Option<String> {
        self.lock().kv.get(&(namespace.to_owned(), key.to_owned())).cloned()
    }

    pub fn delete_kv(&self, namespace: &str, key: &str) {
        self.lock().kv.remove(&(namespace.to_owned(), key.to_owned()));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn topics(names: &[&str]) -> BTreeMap<String, TopicConfig> {
        names
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    TopicConfig {
                        topic_name: n.to_string(),
                        read_queue_nums: 4,
                        write_queue_nums: 4,
                        perm: 6,
                        ..Default::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn routes_list_only_brokers_holding_the_topic_and_expire() {
        let table = RouteTable::new();
        let (ta, tb) = (topics(&["T", "A"]), topics(&["T"]));
        for (name, addr, t) in [("a", "127.0.0.1:1", &ta), ("b", "127.0.0.1:2", &tb)] {
            table.register(&Registration {
                cluster: "C",
                broker_name: name,
                broker_addr: addr,
                broker_id: 0,
                ha_server_addr: "",
                timeout: Duration::from_secs(1),
                topics: t,
            });
        }
        assert_eq!(table.route("T").unwrap().broker_datas.len(), 2);
        let a = table.route("A").unwrap();
        assert_eq!((a.broker_datas.len(), a.broker_datas[0].broker_addrs[&0].as_str()), (1, "127.0.0.1:1"));
        assert!(table.route("missing").is_none());
        assert_eq!(table.cluster_info().cluster_addr_table["C"].len(), 2);
        // Broker a stops reporting A.
        table.register(&Registration {
            cluster: "C",
            broker_name: "a",
            broker_addr: "127.0.0.1:1",
            broker_id: 0,
            ha_server_addr: "",
            timeout: Duration::from_secs(1),
            topics: &tb,
        });
        assert!(table.route("A").is_none());
        // DELETE_TOPIC_IN_NAMESRV for another cluster keeps it; for C (or none) removes it.
        table.delete_topic("T", Some("other"));
        assert_eq!(table.route("T").unwrap().broker_datas.len(), 2);
        table.delete_topic("T", Some("C"));
        assert!(table.route("T").is_none() && !table.topic_list().topic_list.contains("T"));
        table.register(&Registration {
            cluster: "C",
            broker_name: "a",
            broker_addr: "127.0.0.1:1",
            broker_id: 0,
            ha_server_addr: "",
            timeout: Duration::from_secs(1),
            topics: &tb,
        });
        table.delete_topic("T", None);
        assert!(table.route("T").is_none());
        table.register(&Registration {
            cluster: "C",
            broker_name: "a",
            broker_addr: "127.0.0.1:1",
            broker_id: 0,
            ha_server_addr: "",
            timeout: Duration::from_secs(1),
            topics: &tb,
        });
        assert_eq!(table.expire(Instant::now() + Duration::from_secs(5)), 2);
        assert!(table.route("T").is_none());
        assert!(table.cluster_info().broker_addr_table.is_empty());
    }
}
