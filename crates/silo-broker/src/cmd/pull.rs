//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), with long polling (docs/protocol.md §2.3).
//!
//! Found records go out as [`Body::Records`]: handles on the mapped commit log, written to the
//! socket without an intermediate copy. A pull that finds nothing and may be suspended waits
//! for the dispatcher to add a message to its queue (no polling), or for its timeout.

use std::sync::Arc;
use std::time::Duration;

use silo_store::{GetStatus, TagFilter};
use silo_wire::checksum::java_string_hash;
use silo_wire::codes::response as rs;
use silo_wire::custom::{PullMessageRequestHeader, PullMessageResponseHeader, pull_sys_flag};
use silo_wire::{ExtFields, ExtStr, Frame};

use crate::broker::Broker;
use crate::connection::{Body, Channel, Outgoing};
use crate::response;
use crate::topics::{PERM_READ, TopicQueues};

/// Longest a read waits for dispatch to catch up with what was appended before it.
pub(crate) const CATCH_UP: Duration = Duration::from_secs(1);

/// Most bytes a pull returns (the Java broker's in-memory cap).
const MAX_PULL_BYTES: usize = 256 * 1024;

/// Tag codes of a subscription expression: `None` for everything (`*` or empty).
pub fn parse_tags(expression: &str) -> Option<Vec<i64>> {
    let expression = expression.trim();
    if expression.is_empty() || expression == "*" {
        return None;
    }
    Some(
        expression
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| i64::from(java_string_hash(t)))
            .collect(),
    )
}

/// The header with its texts copied out of the request frame.
fn detached(h: PullMessageRequestHeader) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: h.consumer_group.detached(),
        topic: h.topic.detached(),
        subscription: h.subscription.as_ref().map(ExtStr::detached),
        expression_type: h.expression_type.as_ref().map(ExtStr::detached),
        broker_name: h.broker_name.as_ref().map(ExtStr::detached),
        ..h
    }
}

impl Broker {
    pub(crate) fn pull_message(
        self: &Arc<Self>,
        channel: &Channel,
        frame: Frame,
        allow_suspend: bool,
    ) -> Option<Outgoing> {
        let opaque = frame.header.opaque;
        let h: PullMessageRequestHeader = match super::header(&frame) {
            Ok(h) => h,
            Err(out) => return Some(out),
        };
        let codes = match self.pull_filter(opaque, &h) {
            Ok(c) => c,
            Err(out) => return Some(out),
        };
        if allow_suspend && h.sys_flag & pull_sys_flag::COMMIT_OFFSET != 0 && h.commit_offset >= 0 {
            self.offsets.commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
        }
        // The response's fields go into the request's field vector.
        let out = self.read_queue(opaque, &h, codes.as_deref(), frame.header.ext_fields);
        let empty = matches!(out.header.code, rs::PULL_NOT_FOUND | rs::PULL_OFFSET_MOVED);
        let suspend = allow_suspend
            && h.sys_flag & pull_sys_flag::SUSPEND != 0
            && self.config.long_polling_enable
            && out.header.code == rs::PULL_NOT_FOUND;
        // An empty answer while dispatch is behind the log may be missing a message that was
        // acknowledged before this pull: answer only once dispatch has caught up with it.
        let behind = empty && self.store.dispatch_behind() > 0;
        if !suspend && !behind {
            return Some(out);
        }
        // Park: answer when a message arrives in this queue or the hold time is over. The
        // parked header must not keep the connection's read buffer alive.
        let h = detached(h);
        let broker = Arc::clone(self);
        let channel = channel.clone();
        let hold = Duration::from_millis(u64::try_from(h.suspend_timeout_millis).unwrap_or(15_000).min(30_000));
        tokio::spawn(async move {
            if behind {
                broker.store.caught_up(CATCH_UP).await;
                let out = broker.read_queue(opaque, &h, codes.as_deref(), ExtFields::new());
                let suspend = suspend && out.header.code == rs::PULL_NOT_FOUND;
                if !suspend {
                    channel.send(out);
                    return;
                }
            }
            broker.store.wait_for_message(&h.topic, h.queue_id, h.queue_offset, hold).await;
            // Re-run without suspension: FOUND, or PULL_NOT_FOUND after the hold time (a message
            // the tag filter rejects comes back as PULL_RETRY_IMMEDIATELY, past it).
            channel.send(broker.read_queue(opaque, &h, codes.as_deref(), ExtFields::new()));
        });
        None
    }

    fn pull_filter(&self, opaque: i32, h: &PullMessageRequestHeader) -> Result<Option<Vec<i64>>, Outgoing> {
        let lmq = || TopicQueues { read_queue_nums: 1, write_queue_nums: 1, perm: 6 };
        let Some(tc) = self.topics.queues(&h.topic).or_else(|| silo_store::names::is_lmq(&h.topic).then(lmq)) else {
            return Err(response::error(
                opaque,
                rs::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!", h.topic),
            ));
        };
        if tc.perm & PERM_READ == 0 {
            return Err(response::error(
                opaque,
                rs::NO_PERMISSION,
                format!("the topic[{}] pulling message is forbidden", h.topic),
            ));
        }
        if h.queue_id < 0 || h.queue_id >= tc.read_queue_nums.max(1) {
            return Err(response::error(
                opaque,
                rs::INVALID_PARAMETER,
                format!(
                    "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
                    h.queue_id, h.topic, tc.read_queue_nums
                ),
            ));
        }
        if h.sys_flag & pull_sys_flag::SUBSCRIPTION != 0 {
            let expr = h.subscription.as_deref().unwrap_or("*");
            if h.expression_type.as_deref().is_some_and(|t| t != "TAG") {
                return Err(response::error(
                    opaque,
                    rs::SUBSCRIPTION_PARSE_FAILED,
                    "only TAG expressions are supported",
                ));
            }
            return Ok(parse_tags(expr));
        }
        let Some(sub) = self.clients.subscription(&h.consumer_group, &h.topic) else {
            return Err(response::error(
                opaque,
                rs::SUBSCRIPTION_NOT_EXIST,
                format!("the consumer's subscription not exist, group: {} topic: {}", h.consumer_group, h.topic),
            ));
        };
        // A subscription registered by heartbeat with another expression type (SQL92): say so,
        // as the Java broker does, rather than filter by a "tag" that is really an SQL text.
        if sub.expression_type.as_deref().is_some_and(|t| t != "TAG") {
            return Err(response::error(
                opaque,
                rs::SYSTEM_ERROR,
                "The broker does not support consumer to filter message by SQL92",
            ));
        }
        if sub.sub_version < h.sub_version {
            return Err(response::error(opaque, rs::SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"));
        }
        Ok(parse_tags(&sub.sub_string))
    }

    /// One read of the queue, mapped to a pull response (the status table of docs/protocol.md §2.3).
    fn read_queue(&self, opaque: i32, h: &PullMessageRequestHeader, codes: Option<&[i64]>, ext: ExtFields) -> Outgoing {
        let filter = codes.map_or(TagFilter::All, TagFilter::Codes);
        let max = usize::try_from(h.max_msg_nums).unwrap_or(32).clamp(1, 1024);
        let max_bytes =
            h.max_msg_bytes.and_then(|b| usize::try_from(b).ok()).unwrap_or(MAX_PULL_BYTES).min(MAX_PULL_BYTES);
        let r = self.store.get_messages(&h.topic, h.queue_id, h.queue_offset, max, max_bytes, filter);
        let (code, next) = match r.status {
            GetStatus::Found => (rs::SUCCESS, r.next_begin_offset),
            GetStatus::NoMatchedMessage | GetStatus::MessageWasRemoving => {
                (rs::PULL_RETRY_IMMEDIATELY, r.next_begin_offset)
            }
            GetStatus::NoMessageInQueue | GetStatus::NoMatchedLogicQueue => {
                if h.queue_offset != 0 {
                    (rs::PULL_OFFSET_MOVED, 0)
                } else {
                    (rs::PULL_NOT_FOUND, 0)
                }
            }
            GetStatus::OffsetOverflowOne => (rs::PULL_NOT_FOUND, h.queue_offset),
            GetStatus::OffsetFoundNull => (rs::PULL_NOT_FOUND, r.next_begin_offset),
            GetStatus::OffsetOverflowBadly | GetStatus::OffsetTooSmall => (rs::PULL_OFFSET_MOVED, r.next_begin_offset),
        };
        let header = PullMessageResponseHeader {
            suggest_which_broker_id: 0,
            next_begin_offset: next,
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            ..Default::default()
        };
        let mut out = response::with_header_in(opaque, code, &header, ext);
        out.header.remark = Some(format!("{:?}", r.status));
        if code == rs::SUCCESS {
            self.stats.get_messages.fetch_add(r.messages.len() as u64, std::sync::atomic::Ordering::Relaxed);
            out.body = Body::Records(r.messages);
        }
        out
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
