//! The producer: sync, one-way and batch sends, round robin over the topic's writable queues,
//! retried on another queue (another broker when there is one) after a failure that may pass.
//! Every send is an independent future: a caller pipelines by keeping many in flight at once
//! (see `silo bench`), and they share one connection per broker.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use silo_wire::batch::{OutgoingMessage, OutgoingProperties, encode_batch};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::{CustomHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader};
use silo_wire::{ExtStr, Frame, RemotingHeader};

use crate::client::{AUTO_CREATE_TOPIC, Client, TopicRoute};
use crate::error::ClientError;
use crate::message::{Message, MessageQueue, UniqIdGenerator, now_millis};

/// How the broker stored a message it accepted (docs/protocol.md §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SendStatus {
    SendOk,
    /// Stored, but not flushed within the sync-flush timeout.
    FlushDiskTimeout,
    FlushSlaveTimeout,
    SlaveNotAvailable,
}

/// The answer to an accepted send.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SendResult {
    pub status: SendStatus,
    /// The producer's unique id (for a batch: the ids, comma-separated).
    pub msg_id: String,
    /// The broker's offset id (for a batch: comma-separated).
    pub offset_msg_id: String,
    pub queue: MessageQueue,
    /// The queue offset of the (first) message.
    pub queue_offset: i64,
}

/// Producer settings.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub group: String,
    /// Further attempts after a failed send (Java's `retryTimesWhenSendFailed`, 2).
    pub retries: u32,
    /// Queues a new topic gets when the broker creates it on first send.
    pub default_topic_queue_nums: i32,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        Self { group: "silo-producer".into(), retries: 2, default_topic_queue_nums: 4 }
    }
}

/// Where a producer may send a topic's messages.
#[derive(Debug)]
pub enum WritableQueues {
    /// The topic's own route.
    Known(Arc<TopicRoute>),
    /// The topic does not exist yet: queues on the brokers of the auto-create route.
    AutoCreate(Arc<TopicRoute>, Vec<MessageQueue>),
}

impl WritableQueues {
    #[must_use]
    pub fn list(&self) -> &[MessageQueue] {
        match self {
            Self::Known(route) => &route.write_queues,
            Self::AutoCreate(_, queues) => queues,
        }
    }

    #[must_use]
    pub fn route(&self) -> &TopicRoute {
        match self {
            Self::Known(route) | Self::AutoCreate(route, _) => route,
        }
    }
}

#[derive(Debug)]
pub struct Producer {
    client: Client,
    config: ProducerConfig,
    ids: OnceLock<UniqIdGenerator>,
    next_queue: AtomicUsize,
}

impl Producer {
    #[must_use]
    pub fn new(client: Client, config: ProducerConfig) -> Self {
        Self { client, config, ids: OnceLock::new(), next_queue: AtomicUsize::new(0) }
    }

    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The writable queues of `topic`; for a topic the name server does not know yet, the
    /// auto-create route (TBW102) with the default queue count, so that the broker creates it.
    /// A known topic's queues are borrowed from the cached route, not copied per send.
    pub async fn queues(&self, topic: &str) -> Result<WritableQueues, ClientError> {
        if let Some(route) = self.client.route(topic).await?
            && !route.write_queues.is_empty()
        {
            return Ok(WritableQueues::Known(route));
        }
        let route = self.client.route(AUTO_CREATE_TOPIC).await?.ok_or_else(|| ClientError::NoRoute {
            topic: topic.to_owned(),
            reason: "the topic does not exist and the broker does not create topics on first use \
                     (create it with `silo admin topic create`)"
                .into(),
        })?;
        let mut queues = Vec::new();
        for (broker, _) in route.brokers() {
            let n = route.write_queues.iter().filter(|q| q.broker_name == broker).count();
            let n = i32::try_from(n).unwrap_or(0).min(self.config.default_topic_queue_nums);
            queues.extend((0..n).map(|queue_id| MessageQueue {
                topic: topic.to_owned(),
                broker_name: broker.to_owned(),
                queue_id,
            }));
        }
        if queues.is_empty() {
            return Err(ClientError::NoRoute { topic: topic.to_owned(), reason: "no writable queue".into() });
        }
        Ok(WritableQueues::AutoCreate(route, queues))
    }

    /// The next queue round robin, on another broker than `avoid` when there is one.
    fn pick<'q>(&self, queues: &'q [MessageQueue], avoid: Option<&str>) -> Option<&'q MessageQueue> {
        let start = self.next_queue.fetch_add(1, Ordering::Relaxed);
        let n = queues.len();
        let mut candidates = (0..n).filter_map(|i| queues.get((start + i) % n.max(1)));
        let first = candidates.next()?;
        if avoid != Some(first.broker_name.as_str()) {
            return Some(first);
        }
        Some(candidates.find(|q| avoid != Some(q.broker_name.as_str())).unwrap_or(first))
    }

    fn ids(&self) -> &UniqIdGenerator {
        self.ids.get_or_init(|| UniqIdGenerator::new(None))
    }

    /// Sends one message and waits until the broker stored it.
    pub async fn send(&self, topic: &str, msg: &Message) -> Result<SendResult, ClientError> {
        let id = self.ids().next();
        let props = msg.properties_string(id.as_str(), true)?;
        self.send_with_retries(topic, rq::SEND_MESSAGE_V2, msg.flag, props, msg.body.clone(), false, id.as_str().into())
            .await
    }

    /// Sends one message to a chosen queue, without retrying elsewhere.
    pub async fn send_to(&self, mq: &MessageQueue, msg: &Message) -> Result<SendResult, ClientError> {
        let id = self.ids().next();
        let props = msg.properties_string(id.as_str(), true)?;
        let addr = self.client.master_of(mq).await?;
        let header = self.header(mq, rq::SEND_MESSAGE_V2, msg.flag, props.into(), false);
        let frame = self.client.call(&addr, header, msg.body.clone()).await?;
        let (status, h) = stored(&addr, rq::SEND_MESSAGE_V2, frame)?;
        Ok(SendResult {
            status,
            msg_id: id.as_str().into(),
            offset_msg_id: h.msg_id.into_string(),
            queue: MessageQueue { queue_id: h.queue_id, ..mq.clone() },
            queue_offset: h.queue_offset,
        })
    }

    /// Sends several messages of one topic as one request (SEND_BATCH_MESSAGE): they are stored
    /// together in one queue, in order. The batch is encoded in one pass into one buffer.
    pub async fn send_batch(&self, topic: &str, msgs: &[Message]) -> Result<SendResult, ClientError> {
        if msgs.is_empty() {
            return Err(ClientError::InvalidArgument("a batch needs at least one message".into()));
        }
        if msgs.iter().any(|m| m.delay_level.is_some()) {
            return Err(ClientError::InvalidArgument("messages of a batch cannot be delayed".into()));
        }
        let mut ids = Vec::with_capacity(msgs.len());
        let mut props = Vec::with_capacity(msgs.len());
        for m in msgs {
            let id = self.ids().next();
            props.push(m.properties_string(id.as_str(), true)?);
            ids.push(id);
        }
        let entries: Vec<OutgoingMessage<'_>> = msgs
            .iter()
            .zip(&props)
            .map(|(m, p)| OutgoingMessage {
                flag: m.flag,
                body: &m.body,
                properties: OutgoingProperties::Raw(p.as_bytes()),
            })
            .collect();
        let body = encode_batch(&entries)?;
        let all_ids = ids.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(",");
        let header_props = "WAIT\u{1}true\u{2}".to_owned();
        self.send_with_retries(topic, rq::SEND_BATCH_MESSAGE, 0, header_props, body, true, all_ids).await
    }

    /// Sends one message without waiting for the broker: nothing says whether it was stored.
    pub async fn send_oneway(&self, topic: &str, msg: &Message) -> Result<(), ClientError> {
        let id = self.ids().next();
        let props = msg.properties_string(id.as_str(), false)?;
        let queues = self.queues(topic).await?;
        let mq = self
            .pick(queues.list(), None)
            .ok_or_else(|| ClientError::NoRoute { topic: topic.to_owned(), reason: "no writable queue".into() })?;
        let addr = queues.route().master(&mq.broker_name).unwrap_or_default();
        let header = self.header(mq, rq::SEND_MESSAGE_V2, msg.flag, props.into(), false);
        self.client.connection(addr).await?.oneway(header, msg.body.clone())
    }

    #[allow(clippy::too_many_arguments)]
    async fn send_with_retries(
        &self,
        topic: &str,
        code: i32,
        flag: i32,
        props: String,
        body: Bytes,
        batch: bool,
        msg_id: String,
    ) -> Result<SendResult, ClientError> {
        // Shared, so that another attempt does not copy it again.
        let props = ExtStr::from_utf8(Bytes::from(props.into_bytes())).unwrap_or_else(|| ExtStr::from(""));
        let mut avoid: Option<String> = None;
        let mut attempt = 0;
        loop {
            let queues = self.queues(topic).await?;
            let mq = self
                .pick(queues.list(), avoid.as_deref())
                .ok_or_else(|| ClientError::NoRoute { topic: topic.to_owned(), reason: "no writable queue".into() })?;
            let addr = queues.route().master(&mq.broker_name).unwrap_or_default();
            let header = self.header(mq, code, flag, props.clone(), batch);
            let answer = match self.client.call(addr, header, body.clone()).await {
                Ok(frame) => stored(addr, code, frame),
                Err(e) => Err(e),
            };
            match answer {
                Ok((status, h)) => {
                    return Ok(SendResult {
                        status,
                        msg_id,
                        offset_msg_id: h.msg_id.into_string(),
                        queue: MessageQueue { queue_id: h.queue_id, ..mq.clone() },
                        queue_offset: h.queue_offset,
                    });
                }
                Err(e) if e.is_retryable() && attempt < self.config.retries => {
                    tracing::debug!(error = %e, %mq, attempt, "send failed; retrying on another queue");
                    attempt += 1;
                    avoid = Some(mq.broker_name.clone());
                    self.client.forget_route(topic);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn header(&self, mq: &MessageQueue, code: i32, flag: i32, props: ExtStr, batch: bool) -> RemotingHeader {
        let mut header = RemotingHeader::request(code, 0);
        SendMessageRequestHeaderV2 {
            producer_group: self.config.group.as_str().into(),
            topic: mq.topic.as_str().into(),
            default_topic: AUTO_CREATE_TOPIC.into(),
            default_topic_queue_nums: self.config.default_topic_queue_nums,
            queue_id: mq.queue_id,
            sys_flag: 0,
            born_timestamp: now_millis(),
            flag,
            properties: Some(props),
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batch),
            broker_name: Some(mq.broker_name.as_str().into()),
        }
        .write_ext_fields(&mut header.ext_fields);
        header
    }
}

/// How the broker stored a send, from its answer to request `code`.
fn stored(addr: &str, code: i32, frame: Frame) -> Result<(SendStatus, SendMessageResponseHeader), ClientError> {
    let status = match frame.header.code {
        rs::SUCCESS => SendStatus::SendOk,
        rs::FLUSH_DISK_TIMEOUT => SendStatus::FlushDiskTimeout,
        rs::FLUSH_SLAVE_TIMEOUT => SendStatus::FlushSlaveTimeout,
        rs::SLAVE_NOT_AVAILABLE => SendStatus::SlaveNotAvailable,
        refused => {
            return Err(ClientError::Refused {
                addr: addr.to_owned(),
                request: code,
                code: refused,
                remark: frame.header.remark.unwrap_or_default(),
            });
        }
    };
    let h = SendMessageResponseHeader::read_ext_fields(&frame.header.ext_fields)
        .map_err(|e| ClientError::BadResponse { addr: addr.to_owned(), what: e.to_string() })?;
    Ok((status, h))
}
