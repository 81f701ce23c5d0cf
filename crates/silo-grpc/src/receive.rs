//! ReceiveMessage: a POP of the group's queues, long-polled, answered on a server stream: a
//! status, then one response per message. Each message carries its receipt handle, built by
//! the broker the way Apache's proxy builds it (the POP handle plus the commit-log offset).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use silo_broker::core::pop::{HandleRequest, PopRequest, Popped};
use silo_wire::pop::{ReceiptHandle, TopicMark};
use silo_wire::record::{Decoded, decode_record};
use tonic::{Request, Response};

use crate::convert::{self, Delivery};
use crate::frontend::{Frontend, error_status, ok, status};
use crate::proto::receive_message_response::Content;
use crate::proto::{Code, FilterType, ReceiveMessageRequest, ReceiveMessageResponse, Resource, Status};
use crate::session::LONG_POLLING_MAX;
use crate::validate;
use silo_broker::core::BrokerError;

/// The shortest long poll (Apache's proxy's minimum): a receive whose deadline leaves less is
/// refused.
pub const LONG_POLLING_MIN: Duration = Duration::from_secs(5);
/// The range a simple consumer's invisible duration must be in.
pub const INVISIBLE_MIN: Duration = Duration::from_secs(10);
pub const INVISIBLE_MAX: Duration = Duration::from_secs(12 * 3600);
/// What a long poll leaves of the client's deadline for the answer to reach it.
const ANSWER_MARGIN: Duration = Duration::from_millis(200);
/// What the client keeps of its deadline for the answer to travel, when its settings do not
/// say (the SDKs' default request timeout).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// The deadline a `grpc-timeout` header gives (digits and a unit: H, M, S, m, u, n).
pub fn grpc_timeout(v: &str) -> Option<Duration> {
    let unit = v.chars().last()?;
    let digits = v.get(..v.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(n.saturating_mul(3600)),
        'M' => Duration::from_secs(n.saturating_mul(60)),
        'S' => Duration::from_secs(n),
        'm' => Duration::from_millis(n),
        'u' => Duration::from_micros(n),
        'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

fn to_duration(d: &prost_types::Duration) -> Duration {
    let ms = d.seconds.saturating_mul(1000).saturating_add(i64::from(d.nanos / 1_000_000));
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The pop's first offset in queue `queue_id` of the topic marked `mark`, from the pop's
/// `startOffsetInfo` (`mark queue offset` entries joined by `;`).
pub fn start_offset_of(info: &str, mark: TopicMark, queue_id: i32) -> Option<i64> {
    info.split(';').find_map(|entry| {
        let mut f = entry.split(' ');
        let (m, q, o) = (f.next()?, f.next()?, f.next()?);
        (m == mark.as_str() && q.parse::<i32>().ok()? == queue_id).then(|| o.parse().ok()).flatten()
    })
}

/// How often a FIFO message was delivered before, from the pop's `orderCountInfo`: its own
/// entry (`mark qo<queue>%<offset> count`) or its queue's (`mark queue count`).
pub fn order_count_of(info: &str, mark: TopicMark, queue_id: i32, offset: i64) -> Option<i32> {
    let own = format!("qo{queue_id}%{offset}");
    let queue = queue_id.to_string();
    let mut by_queue = None;
    for entry in info.split(';') {
        let mut f = entry.split(' ');
        let (Some(m), Some(k), Some(c)) = (f.next(), f.next(), f.next()) else { continue };
        if m != mark.as_str() {
            continue;
        }
        if k == own {
            return c.parse().ok();
        }
        if k == queue {
            by_queue = c.parse().ok();
        }
    }
    by_queue
}

/// The frame that ends every answer: when the stream closed (the SDKs measure delivery
/// latency with it).
fn closing(now_ms: i64) -> Result<ReceiveMessageResponse, tonic::Status> {
    Ok(ReceiveMessageResponse { content: Some(Content::DeliveryTimestamp(convert::timestamp(now_ms))) })
}

/// An answer with no message: the status, then the closing frame.
fn one(status: Status) -> Responses {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    Responses {
        items: VecDeque::from([Ok(ReceiveMessageResponse { content: Some(Content::Status(status)) }), closing(now)]),
        undelivered: None,
    }
}

/// The responses of one receive, in order. Messages the stream never handed on (the client
/// went away first) are given back when it is dropped: visible again a second later, as Apache's
/// proxy gives back what it failed to write, instead of staying invisible for their whole
/// invisible time.
#[derive(Debug)]
pub struct Responses {
    items: VecDeque<Result<ReceiveMessageResponse, tonic::Status>>,
    undelivered: Option<Undelivered>,
}

#[derive(Debug)]
struct Undelivered {
    frontend: Arc<Frontend>,
    group: String,
    /// Per message still queued, in order: (topic popped from, queue, offset, handle).
    messages: VecDeque<(String, i32, i64, String)>,
}

/// The invisible time of a message given back undelivered.
const GIVE_BACK_MS: i64 = 1000;

impl tokio_stream::Stream for Responses {
    type Item = Result<ReceiveMessageResponse, tonic::Status>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.items.pop_front();
        if let (Some(Ok(ReceiveMessageResponse { content: Some(Content::Message(_)) })), Some(u)) =
            (&next, self.undelivered.as_mut())
        {
            u.messages.pop_front();
        }
        Poll::Ready(next)
    }
}

impl Drop for Responses {
    fn drop(&mut self) {
        let Some(u) = self.undelivered.take() else { return };
        for (topic, queue_id, offset, handle) in &u.messages {
            let req = HandleRequest { group: &u.group, topic, queue_id: *queue_id, offset: *offset, handle };
            if let Err(e) = u.frontend.with_conn(|conn| u.frontend.broker.give_back(conn, &req, GIVE_BACK_MS)) {
                tracing::debug!(error = %e, offset, "giving back an undelivered message failed; it comes back when due");
            }
        }
    }
}

impl Frontend {
    pub(crate) async fn receive_message(
        self: &Arc<Self>,
        req: Request<ReceiveMessageRequest>,
    ) -> Result<Response<Responses>, tonic::Status> {
        let caller = match self.caller(&req) {
            Ok(c) => c,
            Err(s) => return Ok(Response::new(one(s))),
        };
        let deadline = req.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(grpc_timeout);
        let r = req.into_inner();
        let group = r.group.clone().unwrap_or_default();
        let mq = r.message_queue.clone().unwrap_or_default();
        let topic = mq.topic.clone().unwrap_or_default();
        let settings = self.clients.settings(&caller.client_id);
        let request_timeout =
            settings.as_ref().and_then(|s| s.request_timeout.as_ref()).map_or(DEFAULT_REQUEST_TIMEOUT, to_duration);
        // The long poll, as Apache's proxy reckons it: what the request asks, or what its
        // deadline leaves after half a request timeout; within the proxy's bounds; and never
        // past the deadline (less a margin for the answer to travel).
        let asked = r.long_polling_timeout.as_ref().map(to_duration);
        let mut poll = asked
            .or_else(|| deadline.map(|d| d.saturating_sub(request_timeout / 2)))
            .unwrap_or(LONG_POLLING_MAX)
            .clamp(LONG_POLLING_MIN, LONG_POLLING_MAX);
        if let Some(remaining) = deadline {
            if poll > remaining {
                if remaining < LONG_POLLING_MIN {
                    // Clients older than 5.0.3 know no ILLEGAL_POLLING_TIME.
                    let code = if "5.0.3" > caller.client_version.as_str() {
                        Code::BadRequest
                    } else {
                        Code::IllegalPollingTime
                    };
                    let s = status(
                        code,
                        "The deadline time remaining is not enough for polling, please check network condition",
                    );
                    return Ok(Response::new(one(s)));
                }
                poll = remaining;
            }
            poll = poll.min(remaining.saturating_sub(ANSWER_MARGIN));
        }
        if let Err(s) = validate::topic(&topic.name).and_then(|()| validate::group(&group.name)) {
            return Ok(Response::new(one(s)));
        }
        let invisible = if r.auto_renew {
            Duration::from_millis(u64::try_from(self.config.auto_renew_invisible_ms).unwrap_or(60_000))
        } else {
            // An absent duration is zero, and too small.
            let d = r.invisible_duration.as_ref().map_or(Duration::ZERO, to_duration);
            if d < INVISIBLE_MIN {
                let s = status(
                    Code::IllegalInvisibleTime,
                    format!("the invisibleTime is too small. min is {}", INVISIBLE_MIN.as_millis()),
                );
                return Ok(Response::new(one(s)));
            }
            if d > INVISIBLE_MAX {
                let s = status(
                    Code::IllegalInvisibleTime,
                    format!("the invisibleTime is too large. max is {}", INVISIBLE_MAX.as_millis()),
                );
                return Ok(Response::new(one(s)));
            }
            d
        };
        if self.broker.topics.queues(&topic.name).is_none() {
            return Ok(Response::new(one(crate::route::no_route(&topic.name))));
        }
        let (expression, expression_type) = match &r.filter_expression {
            Some(f) if f.r#type() == FilterType::Sql => (f.expression.as_str(), "SQL92"),
            Some(f) if !f.expression.is_empty() => (f.expression.as_str(), "TAG"),
            _ => ("*", "TAG"),
        };
        let order = self.broker.groups.get(&group.name).is_some_and(|g| g.consume_message_orderly);
        let pop = PopRequest {
            group: &group.name,
            topic: &topic.name,
            // Every queue of the topic, whatever queue the request names (Apache's proxy ignores
            // it too: the SDKs that pick a queue from the route would otherwise read only that one).
            queue_id: -1,
            // At most 32 (more is cut to 32, as the proxy cuts it).
            max_messages: r.batch_size.clamp(1, silo_broker::core::pop::MAX_POP_MESSAGES),
            invisible_time: i64::try_from(invisible.as_millis()).unwrap_or(i64::MAX),
            init_mode: 1,
            expression: Some(expression),
            expression_type: Some(expression_type),
            order,
            attempt_id: r.attempt_id.as_deref(),
            // A push consumer's messages are renewed by the broker while the consumer is
            // connected, so that a slow handler, or a client reconnecting, loses nothing.
            owner: r.auto_renew.then_some(caller.client_id.as_str()),
        };
        let filter = match self.broker.pop_filter(&pop) {
            Ok(f) => f,
            Err(e @ (BrokerError::SubscriptionParseFailed(_) | BrokerError::FilterUnsupported)) => {
                return Ok(Response::new(one(status(Code::IllegalFilterExpression, e.to_string()))));
            }
            Err(e) => return Ok(Response::new(one(error_status(&e)))),
        };
        let until = tokio::time::Instant::now() + poll;
        let mut parked = None;
        let popped = loop {
            let popped = match self.with_conn(|conn| self.broker.pop(conn, &pop, &filter)) {
                Ok(p) => p,
                Err(e) => return Ok(Response::new(one(error_status(&e)))),
            };
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if !popped.messages.is_empty() || left.is_zero() || !self.broker.config.long_polling_enable {
                break popped;
            }
            if parked.is_none() {
                parked = self.broker.pop.park(pop.topic, pop.group, pop.queue_id, self.broker.config.pop.polling_size);
                if parked.is_none() {
                    return Ok(Response::new(one(status(Code::TooManyRequests, "polling full"))));
                }
            }
            self.broker.pop_wait(&pop, left).await;
        };
        drop(parked);
        if popped.messages.is_empty() {
            return Ok(Response::new(one(status(Code::MessageNotFound, "no new message"))));
        }
        // Built before the durability wait: if the client goes away during it, dropping the
        // answer gives its messages back.
        let digest = convert::DigestKind::for_language(&caller.language);
        let answer = self.deliveries(&popped, &group.name, &topic, order, digest);
        if popped.journal_end > 0
            && self.broker.store.flush_mode().is_sync()
            && let Err(e) = self.broker.store.durable(popped.journal_end).await
        {
            tracing::warn!(error = %e, "pop journal not known to be durable");
        }
        Ok(Response::new(answer))
    }

    /// The stream of one found pop: the status, then each message with its handle.
    fn deliveries(
        self: &Arc<Self>,
        popped: &Popped,
        group: &str,
        topic: &Resource,
        order: bool,
        digest: convert::DigestKind,
    ) -> Responses {
        let mut items = VecDeque::with_capacity(popped.messages.len() + 2);
        let mut undelivered = VecDeque::with_capacity(popped.messages.len());
        items.push_back(Ok(ReceiveMessageResponse { content: Some(Content::Status(ok())) }));
        let mut handle = String::with_capacity(96);
        for m in &popped.messages {
            let Ok(Decoded::Record(rec)) = decode_record(m, 0) else {
                tracing::warn!(offset = m.physical_offset(), "a popped record does not decode; skipped");
                continue;
            };
            let mark = TopicMark::of_topic(rec.topic);
            let queue_id = rec.meta.queue_id;
            let start = start_offset_of(&popped.start_offset_info, mark, queue_id).unwrap_or(rec.meta.queue_offset);
            handle.clear();
            ReceiptHandle {
                start_offset: start,
                pop_time: popped.pop_time,
                invisible_time: popped.invisible_time,
                revive_qid: popped.revive_qid,
                mark,
                broker_name: &self.broker.config.broker_name,
                queue_id,
                queue_offset: Some(rec.meta.queue_offset),
                commit_log_offset: Some(m.physical_offset()),
            }
            .write(&mut handle);
            let reconsumed = if order {
                order_count_of(&popped.order_count_info, mark, queue_id, rec.meta.queue_offset)
                    .unwrap_or(rec.meta.reconsume_times)
            } else {
                rec.meta.reconsume_times
            };
            let delivery = Delivery {
                topic,
                receipt_handle: Some(handle.clone()),
                reconsumed,
                digest,
                max_inflated: self.broker.config.max_message_size as u64,
            };
            let message = convert::message(&rec, convert::body_of(m, &rec), delivery);
            items.push_back(Ok(ReceiveMessageResponse { content: Some(Content::Message(Box::new(message))) }));
            undelivered.push_back((rec.topic.to_owned(), queue_id, rec.meta.queue_offset, handle.clone()));
        }
        items.push_back(closing(self.broker.config.clock.now_ms()));
        let undelivered =
            Some(Undelivered { frontend: Arc::clone(self), group: group.to_owned(), messages: undelivered });
        Responses { items, undelivered }
    }
}
