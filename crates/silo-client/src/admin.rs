//! Administration: topics, the cluster, consumer progress, message lookup and broker runtime
//! information, the requests `mqadmin` sends (docs/protocol.md §2.9, §2.10).

use bytes::Bytes;
use silo_wire::RemotingHeader;
use silo_wire::body::{
    ClusterInfo, ConsumeStats, KvTable, MessageQueueData, OffsetWrapper, TopicList, TopicRouteData, decode_json_body,
};
use silo_wire::codes::{request as rq, response as rs};

use crate::client::{Client, expect_success};
use crate::error::ClientError;
use crate::message::ReceivedMessage;

/// A topic to create or update.
#[derive(Debug, Clone)]
pub struct TopicSpec {
    pub topic: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    /// 6 = read and write (RocketMQ's PermName).
    pub perm: i32,
    pub order: bool,
}

impl TopicSpec {
    #[must_use]
    pub fn new(topic: impl Into<String>, queues: i32) -> Self {
        Self { topic: topic.into(), read_queue_nums: queues, write_queue_nums: queues, perm: 6, order: false }
    }
}

/// A message found by [`Admin::query_by_key`] or [`Admin::view_message`], with the broker that
/// holds it.
#[derive(Debug, Clone)]
pub struct FoundMessage {
    pub broker_addr: String,
    pub message: ReceivedMessage,
}

#[derive(Debug, Clone)]
pub struct Admin {
    client: Client,
}

fn request(code: i32, fields: &[(&str, String)]) -> RemotingHeader {
    let mut header = RemotingHeader::request(code, 0);
    for (k, v) in fields {
        header.ext_fields.insert(*k, v.clone());
    }
    header
}

impl Admin {
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Clusters and brokers known to the name server.
    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        let frame = self.client.call_namesrv(request(rq::GET_BROKER_CLUSTER_INFO, &[]), Bytes::new()).await?;
        let frame = expect_success("name server", rq::GET_BROKER_CLUSTER_INFO, frame)?;
        Ok(decode_json_body(&frame.body)?)
    }

    /// Every topic the name server knows.
    pub async fn topic_list(&self) -> Result<TopicList, ClientError> {
        let frame =
            self.client.call_namesrv(request(rq::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[]), Bytes::new()).await?;
        let frame = expect_success("name server", rq::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, frame)?;
        Ok(decode_json_body(&frame.body)?)
    }

    /// The route of `topic`, `None` when no broker has it.
    pub async fn route(&self, topic: &str) -> Result<Option<TopicRouteData>, ClientError> {
        self.client.fetch_route(topic).await
    }

    /// The master addresses of `cluster` (every cluster when `None`), sorted.
    pub async fn masters(&self, cluster: Option<&str>) -> Result<Vec<(String, String)>, ClientError> {
        let info = self.cluster_info().await?;
        let mut out = Vec::new();
        for (name, names) in &info.cluster_addr_table {
            if cluster.is_some_and(|c| c != name) {
                continue;
            }
            for broker in names {
                if let Some(addr) = info.broker_addr_table.get(broker).and_then(|b| b.broker_addrs.get(&0)) {
                    out.push((broker.clone(), addr.clone()));
                }
            }
        }
        if out.is_empty() {
            return Err(ClientError::InvalidArgument(match cluster {
                Some(c) => format!("cluster {c:?} has no master broker (see `silo admin cluster`)"),
                None => "no broker is registered with the name server".into(),
            }));
        }
        out.sort();
        Ok(out)
    }

    /// Creates or updates `spec` on the broker at `broker_addr`.
    pub async fn create_topic_on(&self, broker_addr: &str, spec: &TopicSpec) -> Result<(), ClientError> {
        let header = request(
            rq::UPDATE_AND_CREATE_TOPIC,
            &[
                ("topic", spec.topic.clone()),
                ("defaultTopic", crate::client::AUTO_CREATE_TOPIC.into()),
                ("readQueueNums", spec.read_queue_nums.to_string()),
                ("writeQueueNums", spec.write_queue_nums.to_string()),
                ("perm", spec.perm.to_string()),
                ("topicFilterType", "SINGLE_TAG".into()),
                ("topicSysFlag", "0".into()),
                ("order", spec.order.to_string()),
            ],
        );
        self.client.call_ok(broker_addr, header, Bytes::new()).await.map(drop)
    }

    /// Creates or updates `spec` on every master of `cluster` (every cluster when `None`);
    /// returns the brokers it was created on.
    pub async fn create_topic(&self, cluster: Option<&str>, spec: &TopicSpec) -> Result<Vec<String>, ClientError> {
        let masters = self.masters(cluster).await?;
        for (_, addr) in &masters {
            self.create_topic_on(addr, spec).await?;
        }
        self.client.forget_route(&spec.topic);
        Ok(masters.into_iter().map(|(name, _)| name).collect())
    }

    /// Deletes `topic` from every master of `cluster` (every cluster when `None`) and from the
    /// name servers.
    pub async fn delete_topic(&self, cluster: Option<&str>, topic: &str) -> Result<Vec<String>, ClientError> {
        let masters = self.masters(cluster).await?;
        for (_, addr) in &masters {
            let header = request(rq::DELETE_TOPIC_IN_BROKER, &[("topic", topic.to_owned())]);
            self.client.call_ok(addr, header, Bytes::new()).await?;
        }
        let mut fields = vec![("topic", topic.to_owned())];
        if let Some(c) = cluster {
            fields.push(("clusterName", c.to_owned()));
        }
        for ns in self.client.config().namesrv.clone() {
            let frame = self.client.call(&ns, request(rq::DELETE_TOPIC_IN_NAMESRV, &fields), Bytes::new()).await?;
            // A name server without the request forgets the topic when the brokers next register.
            if frame.header.code != rs::REQUEST_CODE_NOT_SUPPORTED {
                expect_success(&ns, rq::DELETE_TOPIC_IN_NAMESRV, frame)?;
            }
        }
        self.client.forget_route(topic);
        Ok(masters.into_iter().map(|(name, _)| name).collect())
    }

    /// A consumer group's progress per queue, from every master of the cluster, optionally for
    /// one topic.
    pub async fn consume_stats(
        &self,
        group: &str,
        topic: Option<&str>,
    ) -> Result<Vec<(MessageQueueData, OffsetWrapper)>, ClientError> {
        let masters = self.masters(None).await?;
        let mut out = Vec::new();
        for (_, addr) in &masters {
            let mut fields = vec![("consumerGroup", group.to_owned())];
            if let Some(t) = topic {
                fields.push(("topic", t.to_owned()));
            }
            let frame = self.client.call(addr, request(rq::GET_CONSUME_STATS, &fields), Bytes::new()).await?;
            // A broker that never saw the group answers with an error code: it has no progress.
            if frame.header.code != rs::SUCCESS {
                continue;
            }
            let stats: ConsumeStats = decode_json_body(&frame.body)?;
            out.extend(stats.queues());
        }
        out.sort_by(|a, b| {
            (&a.0.topic, &a.0.broker_name, a.0.queue_id).cmp(&(&b.0.topic, &b.0.broker_name, b.0.queue_id))
        });
        Ok(out)
    }

    /// The message with a broker's offset id (what a send returns as `offsetMsgId`).
    pub async fn view_message(&self, offset_msg_id: &str) -> Result<FoundMessage, ClientError> {
        let (host, offset) = silo_wire::msgid::parse_offset_msg_id(offset_msg_id)?;
        let addr = host.to_string();
        let header = request(rq::VIEW_MESSAGE_BY_ID, &[("offset", offset.to_string())]);
        let frame = self.client.call_ok(&addr, header, Bytes::new()).await?;
        let message =
            ReceivedMessage::decode_all(&frame.body)?.into_iter().next().ok_or_else(|| ClientError::BadResponse {
                addr: addr.clone(),
                what: "VIEW_MESSAGE_BY_ID answered without a message".into(),
            })?;
        Ok(FoundMessage { broker_addr: addr, message })
    }

    /// Messages of `topic` whose keys include `key` (from the brokers' key index), at most
    /// `max` per broker.
    pub async fn query_by_key(&self, topic: &str, key: &str, max: u32) -> Result<Vec<FoundMessage>, ClientError> {
        self.query(topic, key, max, false).await
    }

    /// Messages of `topic` with the producer's unique id `id`.
    pub async fn query_by_uniq_id(&self, topic: &str, id: &str) -> Result<Vec<FoundMessage>, ClientError> {
        self.query(topic, id, 32, true).await
    }

    async fn query(&self, topic: &str, key: &str, max: u32, uniq: bool) -> Result<Vec<FoundMessage>, ClientError> {
        let route = self.client.require_route(topic).await?;
        let mut out = Vec::new();
        for (_, addr) in route.brokers() {
            let mut header = request(
                rq::QUERY_MESSAGE,
                &[
                    ("topic", topic.to_owned()),
                    ("key", key.to_owned()),
                    ("maxNum", max.to_string()),
                    ("beginTimestamp", "0".into()),
                    ("endTimestamp", i64::MAX.to_string()),
                ],
            );
            header.ext_fields.insert("_UNIQUE_KEY_QUERY", uniq.to_string());
            let frame = self.client.call(addr, header, Bytes::new()).await?;
            if frame.header.code == rs::QUERY_NOT_FOUND {
                continue;
            }
            let frame = expect_success(addr, rq::QUERY_MESSAGE, frame)?;
            for message in ReceivedMessage::decode_all(&frame.body)? {
                // The index matches key hashes: check the key itself.
                let hit = if uniq {
                    message.properties().get(silo_wire::properties::keys::UNIQ_KEY) == Some(key)
                } else {
                    message.keys().any(|k| k == key)
                };
                if hit && message.topic() == topic {
                    out.push(FoundMessage { broker_addr: addr.to_owned(), message });
                }
            }
        }
        Ok(out)
    }

    /// The broker's runtime figures (GET_BROKER_RUNTIME_INFO), as `mqadmin brokerStatus` shows.
    pub async fn runtime_info(&self, broker_addr: &str) -> Result<KvTable, ClientError> {
        let frame = self.client.call_ok(broker_addr, request(rq::GET_BROKER_RUNTIME_INFO, &[]), Bytes::new()).await?;
        Ok(decode_json_body(&frame.body)?)
    }

    /// GET_BROKER_HA_STATUS: a master's links to its slaves, or a slave's to its master.
    pub async fn ha_status(&self, broker_addr: &str) -> Result<silo_wire::body::HaRuntimeInfo, ClientError> {
        let frame = self.client.call_ok(broker_addr, request(rq::GET_BROKER_HA_STATUS, &[]), Bytes::new()).await?;
        Ok(decode_json_body(&frame.body)?)
    }
}
