//! Pulling (docs/protocol.md §2.3): which messages a pull gets, and when an empty pull waits.
//!
//! A read returns handles on the mapped commit log ([`MessageRef`]), which the front end writes
//! out without copying. An empty read may wait, for two reasons the core decides
//! ([`Broker::empty_pull_waits`]): dispatch is behind the log (a message acknowledged before
//! the pull may not be in its queue yet), or the consumer allows the broker to hold the pull
//! (long polling) until a message arrives.

use std::time::Duration;

use silo_store::{GetStatus, MessageRef};
use silo_wire::checksum::java_string_hash;

use super::BrokerError;
use super::filter::{PullFilter, filter_for, is_sql};
use crate::broker::Broker;
use crate::topics::{PERM_READ, TopicQueues};

/// Most bytes a pull returns (the Java broker's in-memory cap).
pub const MAX_PULL_BYTES: usize = 256 * 1024;

/// Longest a read waits for dispatch to catch up with what was appended before it.
pub const CATCH_UP: Duration = Duration::from_secs(1);

/// Longest a pull is held, whatever the consumer asks.
pub const MAX_HOLD: Duration = Duration::from_secs(30);

/// The tags a subscription expression names (`a || b`): `None` for everything (`*` or empty).
pub fn tag_names(expression: &str) -> Option<impl Iterator<Item = &str>> {
    let expression = expression.trim();
    if expression.is_empty() || expression == "*" {
        return None;
    }
    Some(expression.split("||").map(str::trim).filter(|t| !t.is_empty()))
}

/// Tag codes of a subscription expression: `None` for everything (`*` or empty).
pub fn parse_tags(expression: &str) -> Option<Vec<i64>> {
    tag_names(expression).map(|tags| tags.map(|t| i64::from(java_string_hash(t))).collect())
}

/// Which subscription filters a pull.
#[derive(Debug, Clone, Copy)]
pub enum Subscription<'a> {
    /// Carried by the pull itself (lite pull, pull consumers).
    Given { expression: &'a str, expression_type: Option<&'a str> },
    /// The one the group registered by heartbeat, at least at this version.
    Registered { sub_version: i64 },
}

/// A consumer's request for the messages of one queue from an offset.
#[derive(Debug, Clone, Copy)]
pub struct PullRequest<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub max_messages: i32,
    pub max_bytes: Option<i32>,
    pub subscription: Subscription<'a>,
    /// How long the broker may hold the pull when there is nothing to return (`None`: answer
    /// at once).
    pub hold: Option<Duration>,
}

/// How a pull came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    Found,
    /// Nothing at the offset (yet).
    NoNewMessage,
    /// Nothing that matched the filter in what was read: pull again from `next_begin_offset`.
    RetryImmediately,
    /// The offset is outside the queue: continue from `next_begin_offset`.
    OffsetMoved,
}

/// The answer to a pull.
#[derive(Debug)]
pub struct Pulled {
    pub status: PullStatus,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    /// The store's own view of the read (Java reports it in the remark).
    pub store_status: GetStatus,
    pub messages: Vec<MessageRef>,
}

/// Why an empty pull waits before it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// Dispatch is behind the log: wait for it first (bounded by [`CATCH_UP`]).
    pub catch_up: bool,
    /// Then hold the pull until a message arrives, for at most this long.
    pub hold: Option<Duration>,
}

impl Broker {
    /// Checks the pull against the topic and the subscription; returns what it keeps.
    pub fn pull_filter(&self, req: &PullRequest<'_>) -> Result<PullFilter, BrokerError> {
        let lmq = || TopicQueues { read_queue_nums: 1, write_queue_nums: 1, perm: 6 };
        let Some(tc) = self.topics.queues(req.topic).or_else(|| silo_store::names::is_lmq(req.topic).then(lmq)) else {
            return Err(BrokerError::TopicNotExist(req.topic.to_owned()));
        };
        if tc.perm & PERM_READ == 0 {
            return Err(BrokerError::ReadForbidden(req.topic.to_owned()));
        }
        if req.queue_id < 0 || req.queue_id >= tc.read_queue_nums.max(1) {
            return Err(BrokerError::NoSuchReadQueue {
                topic: req.topic.to_owned(),
                queue_id: req.queue_id,
                read_queues: tc.read_queue_nums,
            });
        }
        // As in Java (`filterSupportRetry` off): a retry topic is not filtered by SQL92.
        let sql_applies = !req.topic.starts_with(silo_store::names::RETRY_PREFIX);
        let sql_enabled = self.config.enable_property_filter;
        match req.subscription {
            Subscription::Given { expression, expression_type } => {
                if is_sql(expression_type) && !sql_applies {
                    return Ok(PullFilter::All);
                }
                filter_for(&self.selectors, expression, expression_type, sql_enabled)
            }
            Subscription::Registered { sub_version } => {
                let Some(sub) = self.clients.subscription(req.group, req.topic) else {
                    return Err(BrokerError::SubscriptionNotExist {
                        group: req.group.to_owned(),
                        topic: req.topic.to_owned(),
                    });
                };
                if sub.sub_version < sub_version {
                    return Err(BrokerError::SubscriptionNotLatest);
                }
                let expression_type = sub.expression_type.as_deref();
                if is_sql(expression_type) && !sql_applies {
                    return Ok(PullFilter::All);
                }
                filter_for(&self.selectors, &sub.sub_string, expression_type, sql_enabled)
            }
        }
    }

    /// One read of the queue (the status table of docs/protocol.md §2.3).
    pub fn read_queue(&self, req: &PullRequest<'_>, filter: &PullFilter) -> Pulled {
        let max = usize::try_from(req.max_messages).unwrap_or(32).clamp(1, 1024);
        let max_bytes =
            req.max_bytes.and_then(|b| usize::try_from(b).ok()).unwrap_or(MAX_PULL_BYTES).min(MAX_PULL_BYTES);
        let r = filter.with_store_filter(|f| {
            self.store.get_messages(req.topic, req.queue_id, req.queue_offset, max, max_bytes, f)
        });
        let (status, next) = match r.status {
            GetStatus::Found => (PullStatus::Found, r.next_begin_offset),
            GetStatus::NoMatchedMessage | GetStatus::MessageWasRemoving => {
                (PullStatus::RetryImmediately, r.next_begin_offset)
            }
            GetStatus::NoMessageInQueue | GetStatus::NoMatchedLogicQueue => {
                if req.queue_offset != 0 {
                    (PullStatus::OffsetMoved, 0)
                } else {
                    (PullStatus::NoNewMessage, 0)
                }
            }
            GetStatus::OffsetOverflowOne => (PullStatus::NoNewMessage, req.queue_offset),
            GetStatus::OffsetFoundNull => (PullStatus::NoNewMessage, r.next_begin_offset),
            GetStatus::OffsetOverflowBadly | GetStatus::OffsetTooSmall => {
                (PullStatus::OffsetMoved, r.next_begin_offset)
            }
        };
        if status == PullStatus::Found {
            self.stats.get_messages.fetch_add(r.messages.len() as u64, std::sync::atomic::Ordering::Relaxed);
            self.metrics.delivered(req.topic, req.group, r.messages.iter().map(|m| &m[..]));
        }
        Pulled {
            status,
            next_begin_offset: next,
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            store_status: r.status,
            messages: r.messages,
        }
    }

    /// Whether, and how, a pull that came out `pulled` waits before it is answered.
    pub fn empty_pull_waits(&self, req: &PullRequest<'_>, pulled: &Pulled) -> Option<Wait> {
        let empty = matches!(pulled.status, PullStatus::NoNewMessage | PullStatus::OffsetMoved);
        let hold = req
            .hold
            .filter(|_| self.config.long_polling_enable && pulled.status == PullStatus::NoNewMessage)
            .map(|h| h.min(MAX_HOLD));
        let catch_up = empty && self.store.dispatch_behind() > 0;
        (catch_up || hold.is_some()).then_some(Wait { catch_up, hold })
    }

    /// Waits as `wait` says, then reads again.
    pub async fn pull_after(&self, req: &PullRequest<'_>, filter: &PullFilter, wait: Wait) -> Pulled {
        if wait.catch_up {
            self.store.caught_up(CATCH_UP).await;
            let pulled = self.read_queue(req, filter);
            if wait.hold.is_none() || pulled.status != PullStatus::NoNewMessage {
                return pulled;
            }
        }
        if let Some(hold) = wait.hold {
            self.store.wait_for_message(req.topic, req.queue_id, req.queue_offset, hold).await;
        }
        // FOUND, or NoNewMessage after the hold time (a message the filter rejects comes back
        // as RetryImmediately, past it).
        self.read_queue(req, filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_expressions() {
        assert_eq!(parse_tags("*"), None);
        assert_eq!(parse_tags(""), None);
        assert_eq!(parse_tags("TagA || TagB"), Some(vec![2_598_919, 2_598_920]));
    }
}
