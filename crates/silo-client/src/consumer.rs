//! The pull consumer: pull a queue from an offset (optionally long polling), and read or commit
//! the group's offsets. It takes no part in rebalancing: the caller chooses the queues (a
//! command-line consumer or a benchmark reads them all).

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::{
    CustomHeader, GetMaxOffsetRequestHeader, OffsetResponseHeader, PullMessageRequestHeader, PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
    pull_sys_flag,
};
use silo_wire::{Frame, RemotingHeader};

use crate::client::{Client, expect_success};
use crate::error::ClientError;
use crate::message::{MessageQueue, ReceivedMessage};

/// How a subscription's expression is written (`expressionType`, docs/protocol.md §2.15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExpressionType {
    /// `*` or tags separated by `||`.
    Tag,
    /// An SQL92 selector over the message's properties (Java's `MessageSelector.bySql`).
    Sql92,
}

impl ExpressionType {
    /// The name sent in the pull header and the heartbeat: `TAG` or `SQL92`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tag => "TAG",
            Self::Sql92 => "SQL92",
        }
    }
}

/// What a subscription selects: every message (`*`), those with one of some tags
/// (`TagA || TagB`), or those whose properties satisfy an SQL92 selector (`a = 3`). The broker
/// filters by tag hash and the client checks the tags themselves; an SQL92 selector is
/// evaluated by the broker only (which needs `enablePropertyFilter=true` on Apache RocketMQ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    expression: String,
    expression_type: ExpressionType,
    tags: Option<HashSet<String>>,
}

impl Subscription {
    /// Parses a tag expression as RocketMQ does: `*` (or empty) for all, else tags
    /// separated by `||`.
    #[must_use]
    pub fn parse(expression: &str) -> Self {
        let expr = expression.trim();
        if expr.is_empty() || expr == "*" {
            return Self { expression: "*".into(), expression_type: ExpressionType::Tag, tags: None };
        }
        let tags: HashSet<String> =
            expr.split("||").map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned).collect();
        Self { expression: expr.into(), expression_type: ExpressionType::Tag, tags: Some(tags) }
    }

    /// An SQL92 selector, sent as written; the broker parses and evaluates it (an expression
    /// it cannot parse makes the pull fail with SUBSCRIPTION_PARSE_FAILED).
    #[must_use]
    pub fn sql92(expression: &str) -> Self {
        Self { expression: expression.trim().into(), expression_type: ExpressionType::Sql92, tags: None }
    }

    #[must_use]
    pub fn expression(&self) -> &str {
        &self.expression
    }

    #[must_use]
    pub fn expression_type(&self) -> ExpressionType {
        self.expression_type
    }

    /// Whether a message with `tags` is selected, as far as the client can tell: an SQL92
    /// selector is the broker's to apply, so every message it returns is.
    #[must_use]
    pub fn matches(&self, tags: Option<&str>) -> bool {
        match &self.tags {
            None => true,
            Some(set) => tags.is_some_and(|t| set.contains(t)),
        }
    }
}

/// What a pull found (docs/protocol.md §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    Found,
    /// Nothing at or after the offset (after waiting, when long polling).
    NoNewMsg,
    /// Messages exist but none matched the subscription; go on from `next_begin_offset`.
    NoMatchedMsg,
    /// The offset is outside the queue; go on from `next_begin_offset`.
    OffsetIllegal,
}

#[derive(Debug, Clone)]
pub struct PullResult {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// The messages that matched, in queue order.
    pub messages: Vec<ReceivedMessage>,
}

#[derive(Debug, Clone)]
pub struct PullConsumer {
    client: Client,
    group: String,
}

impl PullConsumer {
    #[must_use]
    pub fn new(client: Client, group: impl Into<String>) -> Self {
        Self { client, group: group.into() }
    }

    #[must_use]
    pub fn group(&self) -> &str {
        &self.group
    }

    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The readable queues of `topic`.
    pub async fn queues(&self, topic: &str) -> Result<Vec<MessageQueue>, ClientError> {
        Ok(self.client.require_route(topic).await?.read_queues.clone())
    }

    /// Pulls up to `max` messages of `mq` from `offset`. With `long_poll`, a pull that finds
    /// nothing waits at the broker up to that long for a message to arrive.
    pub async fn pull(
        &self,
        mq: &MessageQueue,
        offset: i64,
        max: i32,
        subscription: &Subscription,
        long_poll: Option<Duration>,
    ) -> Result<PullResult, ClientError> {
        let addr = self.client.master_of(mq).await?;
        let mut sys_flag = pull_sys_flag::SUBSCRIPTION;
        if long_poll.is_some() {
            sys_flag |= pull_sys_flag::SUSPEND;
        }
        let hold = long_poll.unwrap_or_default();
        let mut header = RemotingHeader::request(rq::PULL_MESSAGE, 0);
        PullMessageRequestHeader {
            consumer_group: self.group.as_str().into(),
            topic: mq.topic.as_str().into(),
            queue_id: mq.queue_id,
            queue_offset: offset,
            max_msg_nums: max,
            sys_flag,
            commit_offset: 0,
            suspend_timeout_millis: i64::try_from(hold.as_millis()).unwrap_or(i64::MAX),
            subscription: Some(subscription.expression.as_str().into()),
            sub_version: 0,
            expression_type: Some(subscription.expression_type.as_str().into()),
            max_msg_bytes: None,
            broker_name: Some(mq.broker_name.as_str().into()),
        }
        .write_ext_fields(&mut header.ext_fields);
        let conn = self.client.connection(&addr).await?;
        let frame = conn.request(header, Bytes::new(), hold + self.client.config().timeout).await?;
        let status = match frame.header.code {
            rs::SUCCESS => PullStatus::Found,
            rs::PULL_NOT_FOUND => PullStatus::NoNewMsg,
            rs::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMsg,
            rs::PULL_OFFSET_MOVED => PullStatus::OffsetIllegal,
            _ => {
                return Err(expect_success(&addr, rq::PULL_MESSAGE, frame)
                    .err()
                    .unwrap_or_else(|| unreachable_ok(&addr)));
            }
        };
        let h = PullMessageResponseHeader::read_ext_fields(&frame.header.ext_fields)
            .map_err(|e| ClientError::BadResponse { addr: addr.clone(), what: e.to_string() })?;
        let messages = if status == PullStatus::Found {
            let mut all = ReceivedMessage::decode_all(&frame.body)?;
            all.retain(|m| subscription.matches(m.tags()));
            all
        } else {
            Vec::new()
        };
        Ok(PullResult {
            status,
            next_begin_offset: h.next_begin_offset,
            min_offset: h.min_offset,
            max_offset: h.max_offset,
            messages,
        })
    }

    /// The group's committed offset of `mq`, or `None` when it never committed one.
    pub async fn committed_offset(&self, mq: &MessageQueue) -> Result<Option<i64>, ClientError> {
        let mut header = RemotingHeader::request(rq::QUERY_CONSUMER_OFFSET, 0);
        QueryConsumerOffsetRequestHeader {
            consumer_group: self.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            set_zero_if_not_found: Some(false),
            broker_name: Some(mq.broker_name.clone()),
        }
        .write_ext_fields(&mut header.ext_fields);
        let addr = self.client.master_of(mq).await?;
        let frame = self.client.call(&addr, header, Bytes::new()).await?;
        if frame.header.code == rs::QUERY_NOT_FOUND {
            return Ok(None);
        }
        offset_of(&addr, rq::QUERY_CONSUMER_OFFSET, frame).map(Some)
    }

    /// Commits the group's offset of `mq`: the next message it will consume.
    pub async fn commit_offset(&self, mq: &MessageQueue, offset: i64) -> Result<(), ClientError> {
        let mut header = RemotingHeader::request(rq::UPDATE_CONSUMER_OFFSET, 0);
        UpdateConsumerOffsetRequestHeader {
            consumer_group: self.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
            broker_name: Some(mq.broker_name.clone()),
        }
        .write_ext_fields(&mut header.ext_fields);
        let addr = self.client.master_of(mq).await?;
        self.client.call_ok(&addr, header, Bytes::new()).await.map(drop)
    }

    /// The offset after the last message of `mq`.
    pub async fn max_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        let mut header = RemotingHeader::request(rq::GET_MAX_OFFSET, 0);
        GetMaxOffsetRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            committed: None,
            broker_name: Some(mq.broker_name.clone()),
        }
        .write_ext_fields(&mut header.ext_fields);
        self.offset_request(mq, header).await
    }

    /// The offset of the oldest message of `mq` still stored.
    pub async fn min_offset(&self, mq: &MessageQueue) -> Result<i64, ClientError> {
        let mut header = RemotingHeader::request(rq::GET_MIN_OFFSET, 0);
        QueueRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            broker_name: Some(mq.broker_name.clone()),
        }
        .write_ext_fields(&mut header.ext_fields);
        self.offset_request(mq, header).await
    }

    /// The offset of the first message of `mq` stored at or after `timestamp` (milliseconds).
    pub async fn offset_for_timestamp(&self, mq: &MessageQueue, timestamp: i64) -> Result<i64, ClientError> {
        let mut header = RemotingHeader::request(rq::SEARCH_OFFSET_BY_TIMESTAMP, 0);
        SearchOffsetRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            timestamp,
            boundary_type: Some("LOWER".into()),
            broker_name: Some(mq.broker_name.clone()),
        }
        .write_ext_fields(&mut header.ext_fields);
        self.offset_request(mq, header).await
    }

    async fn offset_request(&self, mq: &MessageQueue, header: RemotingHeader) -> Result<i64, ClientError> {
        let addr = self.client.master_of(mq).await?;
        let code = header.code;
        let frame = self.client.call(&addr, header, Bytes::new()).await?;
        offset_of(&addr, code, frame)
    }
}

fn offset_of(addr: &str, request: i32, frame: Frame) -> Result<i64, ClientError> {
    let frame = expect_success(addr, request, frame)?;
    OffsetResponseHeader::read_ext_fields(&frame.header.ext_fields)
        .map(|h| h.offset)
        .map_err(|e| ClientError::BadResponse { addr: addr.to_owned(), what: e.to_string() })
}

fn unreachable_ok(addr: &str) -> ClientError {
    ClientError::BadResponse { addr: addr.to_owned(), what: "unexpected pull response".into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_expressions() {
        let all = Subscription::parse(" * ");
        assert_eq!((all.expression(), all.expression_type()), ("*", ExpressionType::Tag));
        assert!(all.matches(None) && all.matches(Some("X")));
        let some = Subscription::parse("TagA || TagB");
        assert_eq!(some.expression_type().as_str(), "TAG");
        assert!(some.matches(Some("TagB")) && !some.matches(Some("TagC")) && !some.matches(None));
    }

    #[test]
    fn sql92_selectors_are_left_to_the_broker() {
        let sub = Subscription::sql92(" a = 3 AND TAGS IS NOT NULL ");
        assert_eq!(sub.expression(), "a = 3 AND TAGS IS NOT NULL");
        assert_eq!(sub.expression_type().as_str(), "SQL92");
        // Not a tag list: `a = 3` is no tag, and the client does not filter what comes back.
        assert!(sub.matches(None) && sub.matches(Some("T1")));
    }
}
