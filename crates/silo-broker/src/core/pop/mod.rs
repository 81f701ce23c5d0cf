//! POP consumption (docs/protocol.md §2.16): a consumer takes messages for an invisible time
//! and acknowledges each; what it does not acknowledge in time comes back through the group's
//! retry topic `%RETRY%group_topic` with its delivery attempt counted. The broker, not the
//! client, owns the consume offsets of a popped queue, so many consumers share one queue.
//!
//! * A pop of a queue reads from the group's committed offset, appends one checkpoint to the
//!   pop journal ([`journal`]), moves the committed offset past what it read, and answers.
//! * An acknowledgement appends an ack record and marks the message in the checkpoint
//!   ([`book`]); a checkpoint leaves the book once every message is acknowledged.
//! * When a checkpoint's invisible time has passed, the revive round ([`Broker::revive_round`])
//!   stores each unacknowledged message again in the retry topic, then journals that it did.
//! * An orderly pop (FIFO) holds the queue instead ([`order`]): no checkpoint, the committed
//!   offset moves only past acknowledged messages, and the next pop of the queue waits.

pub mod book;
pub mod journal;
pub mod order;

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use silo_store::{GetStatus, MessageRef, MessageToStore, TagFilter};
use silo_wire::pop::{self as wire_pop, ORDER_REVIVE_QUEUE, ReceiptHandle, TopicMark};
use silo_wire::properties::keys;
use silo_wire::record::{Decoded, decode_record};

use self::book::{AckLookup, Checkpoint, CheckpointKey, KeyRef, PopBook};
use self::journal::{ACK_TAG, AckOut, BATCH_ACK_TAG, BatchAckOut, CK_TAG, CheckpointOut, JournalRecord};
use self::order::{OrderAck, OrderBook, QueueRef};
use super::BrokerError;
use super::filter::{PullFilter, filter_for};
use crate::broker::{Broker, ConnState};
use crate::topics::PERM_READ;

/// Most messages one pop returns (Java's limit).
pub const MAX_POP_MESSAGES: i32 = 32;

/// Most bytes one pop returns.
pub const MAX_POP_BYTES: usize = 256 * 1024;

/// Most acknowledgements one entry of a batch ack is read for.
pub const MAX_BATCH_ACK_BITS: usize = 4096;

/// Longest a pop is parked, whatever it asks.
pub const MAX_POLL: Duration = Duration::from_secs(30);

/// The pop settings of `broker.conf` (Java's keys and defaults).
#[derive(Debug, Clone)]
pub struct PopConfig {
    /// `reviveQueueNum`: revive queues the checkpoints are spread over.
    pub revive_queue_num: i32,
    /// `popFromRetryProbability`: percent of pops that read the retry topic first.
    pub retry_probability: u32,
    /// `popPollingSize`: most pops parked at once on one queue; beyond it POLLING_FULL.
    pub polling_size: usize,
    /// `renewAheadTimeMillis`: an owned pop is renewed this long before it would come due.
    pub renew_ahead_ms: i64,
    /// `renewMaxTimeMillis`: an owned pop is renewed for at most this long after it was
    /// popped; then its messages come back like any other unacknowledged ones.
    pub renew_max_ms: i64,
    /// `invisibleTimeMillisWhenClear`: when a client says it is terminating, the messages it
    /// holds become visible this long after.
    pub release_ms: i64,
    /// The first step of the renewal schedule (`defaultInvisibleTimeMills`, the invisible time
    /// an owned pop starts with): later steps are 3, 5, 10, 30 and 60 times it.
    pub renew_step_ms: i64,
}

impl Default for PopConfig {
    fn default() -> Self {
        Self {
            revive_queue_num: 8,
            retry_probability: 20,
            polling_size: 1024,
            renew_ahead_ms: 10_000,
            renew_max_ms: 3 * 3600 * 1000,
            release_ms: 1000,
            renew_step_ms: 60_000,
        }
    }
}

/// How far each renewal of an owned pop pushes its deadline, in first steps, by renewal count
/// (the last repeats): with the default first step of a minute, the schedule Apache's proxy
/// renews with (1, 3, 5, 10, 30, 60 minutes).
const RENEW_STEPS: [i64; 6] = [1, 3, 5, 10, 30, 60];

/// Shards of the per-queue pop lock (two pops of one queue by one group must not read the
/// same offset).
const QUEUE_LOCKS: usize = 64;

/// The broker's pop state.
#[derive(Debug)]
pub struct PopState {
    book: Mutex<PopBook>,
    order: Mutex<OrderBook>,
    /// What `consumerOrderInfo.json` holds now.
    order_saved: Mutex<Option<order::OrderInfoFile>>,
    queue_locks: [Mutex<()>; QUEUE_LOCKS],
    seq: AtomicU64,
    /// Rings when an orderly queue is released or retried messages were stored: parked pops
    /// look again.
    pub released: tokio::sync::Notify,
    /// Pops parked now, by `topic@group@queueId` (POLLING_FULL and POLLING_INFO).
    parked: Mutex<std::collections::HashMap<String, usize>>,
    revive_topic: String,
}

impl PopState {
    pub fn new(cluster: &str) -> Self {
        Self {
            book: Mutex::default(),
            order: Mutex::default(),
            order_saved: Mutex::default(),
            queue_locks: std::array::from_fn(|_| Mutex::new(())),
            seq: AtomicU64::new(0),
            released: tokio::sync::Notify::new(),
            parked: Mutex::default(),
            revive_topic: journal::revive_topic(cluster),
        }
    }

    pub fn revive_topic(&self) -> &str {
        &self.revive_topic
    }

    fn book(&self) -> MutexGuard<'_, PopBook> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn order(&self) -> MutexGuard<'_, OrderBook> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn queue_lock(&self, topic: &str, group: &str, queue_id: i32) -> MutexGuard<'_, ()> {
        let mut h = DefaultHasher::new();
        (topic, group, queue_id).hash(&mut h);
        #[allow(clippy::indexing_slicing)] // the shard is taken modulo the array's length
        let lock = &self.queue_locks[(h.finish() % QUEUE_LOCKS as u64) as usize];
        lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parks one pop on `topic@group@queueId`, unless `limit` are parked there already.
    pub fn park(self: &std::sync::Arc<Self>, topic: &str, group: &str, queue_id: i32, limit: usize) -> Option<Parked> {
        let key = format!("{topic}@{group}@{queue_id}");
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        let n = parked.entry(key.clone()).or_insert(0);
        if *n >= limit {
            return None;
        }
        *n += 1;
        Some(Parked { state: std::sync::Arc::clone(self), key })
    }

    /// Pops parked on `topic@group@queueId` now.
    pub fn polling_num(&self, topic: &str, group: &str, queue_id: i32) -> usize {
        let parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        parked.get(&format!("{topic}@{group}@{queue_id}")).copied().unwrap_or(0)
    }

    /// When the next checkpoint comes due.
    /// The earliest time a checkpoint comes due.
    pub fn next_due(&self) -> Option<i64> {
        self.book().next_due()
    }

    /// The earliest time something the broker renews for a client would lapse (an owned
    /// checkpoint, or an owned orderly hold not lapsed at `now`); `None` when nothing is owned,
    /// so that a broker without gRPC push consumers does no renewal work.
    pub fn next_owned_due(&self, now: i64) -> Option<i64> {
        let ck = {
            let book = self.book();
            if book.has_owned() { book.next_due() } else { None }
        };
        let hold = self.order().next_owned_visible(now);
        match (ck, hold) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Unacknowledged pops and the messages they hold.
    pub fn in_flight(&self) -> (usize, usize) {
        let b = self.book();
        (b.len(), b.held_messages())
    }
}

/// A parked pop's place; leaving it (dropping) unparks.
#[derive(Debug)]
pub struct Parked {
    state: std::sync::Arc<PopState>,
    key: String,
}

impl Drop for Parked {
    fn drop(&mut self) {
        let mut parked = self.state.parked.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = parked.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                parked.remove(&self.key);
            }
        }
    }
}

/// A pop, as a front end hands it to the core.
#[derive(Debug, Clone, Copy)]
pub struct PopRequest<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    /// -1: any queue.
    pub queue_id: i32,
    pub max_messages: i32,
    pub invisible_time: i64,
    /// 0 (MIN): a group with no committed offset starts at the first message; 1 (MAX): at
    /// the end.
    pub init_mode: i32,
    pub expression: Option<&'a str>,
    pub expression_type: Option<&'a str>,
    pub order: bool,
    pub attempt_id: Option<&'a str>,
    /// The client whose pop (or, for an orderly pop, whose hold on the queue) the broker is to
    /// renew while that client is connected (a gRPC push consumer's `auto_renew`).
    pub owner: Option<&'a str>,
}

/// What a pop took.
#[derive(Debug, Default)]
pub struct Popped {
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    /// Messages left behind the popped ones in the queues read.
    pub rest_num: i64,
    pub start_offset_info: String,
    pub msg_offset_info: String,
    pub order_count_info: String,
    pub messages: Vec<MessageRef>,
    /// Commit-log offset past the last journal record this pop wrote (0 if none): with
    /// synchronous flush the answer waits until it is durable.
    pub journal_end: i64,
}

/// An acknowledgement or a change of invisible time, as a front end hands it to the core.
#[derive(Debug, Clone, Copy)]
pub struct HandleRequest<'a> {
    pub group: &'a str,
    /// The topic the message was popped from (the retry topic for a retried message).
    pub topic: &'a str,
    pub queue_id: i32,
    pub offset: i64,
    pub handle: &'a str,
}

/// The new pop fields of a renewed handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renewed {
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub journal_end: i64,
}

/// What one revive round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReviveRound {
    /// Messages stored again in a retry topic.
    pub revived: usize,
    /// Messages that had used up their attempts: stored in the group's dead-letter queue.
    pub dead_lettered: usize,
    /// Messages whose record could no longer be read (removed by retention): dropped.
    pub dropped: usize,
}

enum Revived {
    Retry { end_offset: i64 },
    DeadLettered,
}

fn key_ref<'a>(req: &HandleRequest<'a>, h: &ReceiptHandle<'_>) -> KeyRef<'a> {
    KeyRef {
        group: req.group,
        topic: req.topic,
        queue_id: req.queue_id,
        start_offset: h.start_offset,
        pop_time: h.pop_time,
    }
}

/// Per-pop text buffers for the answer's info strings.
#[derive(Default)]
struct Infos {
    start: String,
    msgs: String,
    counts: String,
}

impl Broker {
    /// Checks a pop against the broker, the topic and the group, in Java's order; returns the
    /// filter of the normal topic.
    pub fn pop_filter(&self, req: &PopRequest<'_>) -> Result<PullFilter, BrokerError> {
        if req.max_messages > MAX_POP_MESSAGES {
            return Err(BrokerError::PopTooMany(self.config.broker_ip.to_string()));
        }
        if !self.config.timers.enabled {
            return Err(BrokerError::PopNeedsTimers(self.config.broker_ip.to_string()));
        }
        let Some(tc) = self.topics.queues(req.topic) else {
            return Err(BrokerError::TopicNotExist(req.topic.to_owned()));
        };
        if tc.perm & PERM_READ == 0 {
            return Err(BrokerError::PopForbidden(req.topic.to_owned()));
        }
        if req.queue_id >= tc.read_queue_nums {
            return Err(BrokerError::NoSuchReadQueue {
                topic: req.topic.to_owned(),
                queue_id: req.queue_id,
                read_queues: tc.read_queue_nums,
            });
        }
        self.consuming_group(req.group)?;
        match req.expression.filter(|e| !e.is_empty()) {
            None => Ok(PullFilter::All),
            Some(e) => {
                filter_for(&self.selectors, e, req.expression_type, self.config.enable_property_filter).map_err(|err| {
                    match err {
                        BrokerError::FilterUnsupported => err,
                        _ => BrokerError::SubscriptionParseFailed("parse the consumer's subscription failed".into()),
                    }
                })
            }
        }
    }

    /// The group, which must exist (or be created, with `autoCreateSubscriptionGroup`) and
    /// may consume.
    fn consuming_group(&self, group: &str) -> Result<(), BrokerError> {
        match self.groups.consume_enabled(group)? {
            None => Err(BrokerError::PopGroupNotExist(group.to_owned())),
            Some(false) => Err(BrokerError::GroupConsumeDisabled(group.to_owned())),
            Some(true) => Ok(()),
        }
    }

    /// Takes up to `max_messages` from the topic's queues (all of them for queue -1) and from
    /// the group's retry topic.
    pub fn pop(&self, conn: &mut ConnState, req: &PopRequest<'_>, filter: &PullFilter) -> Result<Popped, BrokerError> {
        let seq = self.pop.seq.fetch_add(1, Ordering::Relaxed);
        let random = (seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) % 100;
        let revive_qid =
            if req.order { ORDER_REVIVE_QUEUE } else { (seq % self.config.pop.revive_queue_num.max(1) as u64) as i32 };
        let mut out = Popped {
            pop_time: self.config.clock.now_ms(),
            invisible_time: req.invisible_time,
            revive_qid,
            ..Popped::default()
        };
        let mut infos = Infos::default();
        let max = usize::try_from(req.max_messages).unwrap_or(1).clamp(1, MAX_POP_MESSAGES as usize);
        let retry = wire_pop::retry_topic(req.group, req.topic);
        let retry_first = u64::from(self.config.pop.retry_probability) > random;
        if retry_first && !req.order {
            self.pop_topic(conn, req, &retry, random, max, &PullFilter::All, &mut out, &mut infos)?;
        }
        if req.queue_id < 0 {
            self.pop_topic(conn, req, req.topic, random, max, filter, &mut out, &mut infos)?;
        } else {
            self.pop_queue(conn, req, req.topic, req.queue_id, max, filter, &mut out, &mut infos)?;
        }
        if !retry_first && !req.order && out.messages.len() < max {
            self.pop_topic(conn, req, &retry, random, max, &PullFilter::All, &mut out, &mut infos)?;
        }
        out.start_offset_info = infos.start;
        out.msg_offset_info = infos.msgs;
        out.order_count_info = infos.counts;
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn pop_topic(
        &self,
        conn: &mut ConnState,
        req: &PopRequest<'_>,
        topic: &str,
        random: u64,
        max: usize,
        filter: &PullFilter,
        out: &mut Popped,
        infos: &mut Infos,
    ) -> Result<(), BrokerError> {
        let Some(tc) = self.topics.queues(topic) else { return Ok(()) };
        let n = tc.read_queue_nums.max(0);
        for i in 0..n {
            let queue_id = ((random as i64 + i64::from(i)) % i64::from(n.max(1))) as i32;
            self.pop_queue(conn, req, topic, queue_id, max, filter, out, infos)?;
        }
        Ok(())
    }

    /// Where a group's pops of a queue start when it has no committed offset (Java's rules:
    /// a retry topic and MIN from the first message; MAX from the last one, or from the first
    /// when the queue still has its first message).
    fn initial_pop_offset(&self, topic: &str, queue_id: i32, init_mode: i32) -> i64 {
        let min = self.store.min_offset_in_queue(topic, queue_id);
        if init_mode == 0 || topic.starts_with(silo_store::names::RETRY_PREFIX) {
            return min;
        }
        let max = self.store.max_offset_in_queue(topic, queue_id);
        if min <= 0 && max > 0 { 0 } else { (max - 1).max(0) }
    }

    #[allow(clippy::too_many_arguments)]
    fn pop_queue(
        &self,
        conn: &mut ConnState,
        req: &PopRequest<'_>,
        topic: &str,
        queue_id: i32,
        max: usize,
        filter: &PullFilter,
        out: &mut Popped,
        infos: &mut Infos,
    ) -> Result<(), BrokerError> {
        let _queue = self.pop.queue_lock(topic, req.group, queue_id);
        let mut offset = match self.offsets.query(req.group, topic, queue_id) {
            Some(o) if o >= 0 => o,
            _ => {
                let o = self.initial_pop_offset(topic, queue_id, req.init_mode);
                self.offsets.commit(req.group, topic, queue_id, o);
                o
            }
        };
        let room = max.saturating_sub(out.messages.len());
        let order_key = req.order.then_some(QueueRef { topic, group: req.group, queue_id });
        if let Some(key) = &order_key
            && self.pop.order().blocked(key, out.pop_time, req.attempt_id)
        {
            return Ok(());
        }
        if room == 0 {
            out.rest_num += (self.store.max_offset_in_queue(topic, queue_id) - offset).max(0);
            return Ok(());
        }
        let read = |offset: i64| {
            filter.with_store_filter(|f| self.store.get_messages(topic, queue_id, offset, room, MAX_POP_BYTES, f))
        };
        let mut r = read(offset);
        if matches!(r.status, GetStatus::OffsetTooSmall | GetStatus::OffsetOverflowBadly | GetStatus::OffsetFoundNull) {
            // The committed offset is outside the queue (retention removed files, or the queue
            // was recreated): continue from where the queue is.
            self.offsets.commit(req.group, topic, queue_id, r.next_begin_offset);
            offset = r.next_begin_offset;
            r = read(offset);
        }
        let mark = TopicMark::of_topic(topic);
        if !r.messages.is_empty() {
            let offsets: Vec<i64> = r.messages.iter().map(|m| m.queue_offset).collect();
            if let Some(key) = order_key {
                let counts = {
                    let mut order = self.pop.order();
                    order.hold(&key, out.pop_time, out.invisible_time, req.attempt_id, req.owner, &offsets).to_vec()
                };
                for (o, c) in offsets.iter().zip(&counts) {
                    wire_pop::push_order_count(&mut infos.counts, mark, queue_id, *o, *c);
                }
                wire_pop::push_queue_order_count(
                    &mut infos.counts,
                    mark,
                    queue_id,
                    counts.iter().copied().min().unwrap_or(0),
                );
                wire_pop::push_msg_offsets(&mut infos.msgs, mark, queue_id, offsets.iter().copied());
            } else {
                wire_pop::push_msg_offsets(&mut infos.msgs, mark, queue_id, offsets.iter().copied());
                let end = self.append_checkpoint(conn, req, topic, queue_id, offset, offsets, out)?;
                out.journal_end = out.journal_end.max(end);
                self.offsets.commit(req.group, topic, queue_id, r.next_begin_offset);
            }
            wire_pop::push_start_offset(&mut infos.start, mark, queue_id, offset);
            self.stats.get_messages.fetch_add(r.messages.len() as u64, Ordering::Relaxed);
            self.metrics.delivered(topic, req.group, r.messages.iter().map(|m| &m[..]));
            if out.messages.is_empty() {
                out.messages = std::mem::take(&mut r.messages);
            } else {
                out.messages.append(&mut r.messages);
            }
        } else if matches!(
            r.status,
            GetStatus::NoMatchedMessage | GetStatus::MessageWasRemoving | GetStatus::NoMatchedLogicQueue
        ) && r.next_begin_offset > offset
        {
            // Nothing the filter keeps: move past what was read (an orderly queue too, since
            // nothing of it is held).
            self.offsets.commit(req.group, topic, queue_id, r.next_begin_offset);
        }
        out.rest_num += (r.max_offset - r.next_begin_offset.max(offset)).max(0);
        Ok(())
    }

    /// Journals one checkpoint and enters it in the book; returns the journal end offset.
    #[allow(clippy::too_many_arguments)]
    fn append_checkpoint(
        &self,
        conn: &mut ConnState,
        req: &PopRequest<'_>,
        topic: &str,
        queue_id: i32,
        start: i64,
        offsets: Vec<i64>,
        out: &Popped,
    ) -> Result<i64, BrokerError> {
        let record = CheckpointOut {
            start_offset: start,
            pop_time: out.pop_time,
            invisible_time: out.invisible_time,
            bit_map: 0,
            num: u8::try_from(offsets.len()).unwrap_or(u8::MAX),
            queue_id,
            topic,
            group: req.group,
            revive_offset: 0,
            offsets: (start, &offsets),
            broker_name: &self.config.broker_name,
            re_put_times: 0,
            owner: req.owner,
            renewals: 0,
        };
        let appended = self.append_journal(conn, out.revive_qid, CK_TAG, &record)?;
        let mut book = self.pop.book();
        let ck = Checkpoint {
            revive_qid: out.revive_qid,
            revive_offset: appended.queue_offset,
            invisible_time: out.invisible_time,
            offsets,
            acked: 0,
            owner: req.owner.map(|o| book.intern(o)),
            renewals: 0,
        };
        let key = CheckpointKey {
            group: book.intern(req.group),
            topic: book.intern(topic),
            queue_id,
            start_offset: start,
            pop_time: out.pop_time,
        };
        book.insert(key, ck);
        Ok(appended.end_offset)
    }

    fn append_journal(
        &self,
        conn: &mut ConnState,
        revive_qid: i32,
        tag: &str,
        record: &impl serde::Serialize,
    ) -> Result<silo_store::AppendResult, BrokerError> {
        let topic = self.pop.revive_topic();
        if self.topics.queues(topic).is_none() {
            self.topics.ensure_system(topic, self.config.pop.revive_queue_num.max(1))?;
        }
        let mut body = std::mem::take(&mut conn.scratch);
        let mut props = std::mem::take(&mut conn.props);
        let now = self.config.clock.now_ms();
        let r =
            journal::message((topic, revive_qid), tag, record, now, self.config.broker_addr(), &mut body, &mut props)
                .and_then(|msg| self.store.append(&mut conn.appender, &msg).map_err(BrokerError::from));
        conn.scratch = body;
        conn.props = props;
        r
    }

    /// Reads a handle and checks it names the request's queue and, by its topic mark, the kind
    /// of topic the request names (the retry topic for a retried message).
    fn handle<'a>(&self, req: &HandleRequest<'a>) -> Result<ReceiptHandle<'a>, BrokerError> {
        let h = ReceiptHandle::parse(req.handle).map_err(|e| BrokerError::BadHandle(e.to_string()))?;
        if h.queue_id != req.queue_id {
            return Err(BrokerError::BadHandle(format!(
                "the handle is for queue {}, the request for queue {}",
                h.queue_id, req.queue_id
            )));
        }
        if (h.mark == TopicMark::Normal) == req.topic.starts_with(silo_store::names::RETRY_PREFIX) {
            return Err(BrokerError::BadHandle(format!("the handle is not for topic {}", req.topic)));
        }
        Ok(h)
    }

    /// Checks an acknowledgement's topic, queue and offset as Java does (an ack may name the
    /// queue's end offset, a change of invisible time may not).
    fn check_handle_target(&self, req: &HandleRequest<'_>, end_allowed: bool) -> Result<(), BrokerError> {
        let Some(tc) = self.topics.queues(req.topic) else {
            return Err(BrokerError::TopicNotExist(req.topic.to_owned()));
        };
        if req.queue_id < 0 || req.queue_id >= tc.read_queue_nums {
            return Err(BrokerError::AckQueueIllegal {
                topic: req.topic.to_owned(),
                queue_id: req.queue_id,
                read_queues: tc.read_queue_nums,
            });
        }
        let min = self.store.min_offset_in_queue(req.topic, req.queue_id);
        let max = self.store.max_offset_in_queue(req.topic, req.queue_id);
        let past_end = if end_allowed { req.offset > max } else { req.offset >= max };
        if req.offset < min || past_end {
            if !end_allowed {
                return Err(BrokerError::ChangeOffsetIllegal);
            }
            return Err(BrokerError::AckOffsetIllegal {
                topic: req.topic.to_owned(),
                queue_id: req.queue_id,
                offset: req.offset,
                min,
                max,
            });
        }
        Ok(())
    }

    /// ACK_MESSAGE: acknowledges one popped message. Returns the journal end offset (0 when
    /// nothing was written).
    pub fn ack(&self, conn: &mut ConnState, req: &HandleRequest<'_>) -> Result<i64, BrokerError> {
        self.check_handle_target(req, true)?;
        let h = self.handle(req)?;
        if h.is_order() {
            return self.ack_orderly(req, &h);
        }
        let key = key_ref(req, &h);
        let revive_qid = {
            let book = self.pop.book();
            match book.lookup(&key, req.offset) {
                AckLookup::Pending => book.get(&key).map_or(h.revive_qid, |ck| ck.revive_qid),
                AckLookup::AlreadyAcked => return Ok(0),
                AckLookup::Unknown => return Err(self.handle_gone(&h, self.config.clock.now_ms())),
            }
        };
        let record = AckOut {
            ack_offset: req.offset,
            start_offset: h.start_offset,
            group: req.group,
            topic: req.topic,
            queue_id: req.queue_id,
            pop_time: h.pop_time,
            broker_name: &self.config.broker_name,
        };
        let appended = self.append_journal(conn, revive_qid, ACK_TAG, &record)?;
        self.pop.book().ack(&key, req.offset);
        Ok(appended.end_offset)
    }

    /// The error for a handle whose checkpoint is gone: expired (revived) or never issued.
    fn handle_gone(&self, h: &ReceiptHandle<'_>, now: i64) -> BrokerError {
        if h.visible_at() <= now {
            BrokerError::HandleExpired { pop_time: h.pop_time, invisible_time: h.invisible_time }
        } else {
            BrokerError::NoSuchPoppedMessage
        }
    }

    fn ack_orderly(&self, req: &HandleRequest<'_>, h: &ReceiptHandle<'_>) -> Result<i64, BrokerError> {
        let queue = QueueRef { topic: req.topic, group: req.group, queue_id: req.queue_id };
        match self.ack_held(&queue, h.pop_time, req.offset) {
            OrderAck::Unknown => Err(self.handle_gone(h, self.config.clock.now_ms())),
            _ => Ok(0),
        }
    }

    /// Acknowledges a message of an orderly hold: the group's offset moves past the
    /// acknowledged prefix, and a released queue wakes the pops parked on it.
    fn ack_held(&self, queue: &QueueRef<'_>, pop_time: i64, offset: i64) -> OrderAck {
        let result = self.pop.order().ack(queue, pop_time, offset);
        if let OrderAck::Commit { offset, released } = result {
            let committed = self.offsets.query(queue.group, queue.topic, queue.queue_id).unwrap_or(0);
            if offset > committed {
                self.offsets.commit(queue.group, queue.topic, queue.queue_id, offset);
            }
            if released {
                self.pop.released.notify_waiters();
            }
        }
        result
    }

    /// BATCH_ACK_MESSAGE: each entry acknowledges the offsets of one pop; returns the journal
    /// end offset. Entries that name nothing held are skipped, as Java skips them.
    pub fn batch_ack(&self, conn: &mut ConnState, acks: &[silo_wire::body::BatchAck]) -> Result<i64, BrokerError> {
        let mut end = 0;
        for a in acks {
            let mark = match a.retry.as_str() {
                "" | "0" => TopicMark::Normal,
                "1" => TopicMark::Retry,
                "2" => TopicMark::RetryV2,
                other => return Err(BrokerError::BadHandle(format!("getRetry fail, format is wrong: {other:?}"))),
            };
            let topic = mark.real_topic(&a.topic, &a.consumer_group);
            let (min, max) = (
                self.store.min_offset_in_queue(&topic, a.queue_id),
                self.store.max_offset_in_queue(&topic, a.queue_id),
            );
            // A pop spans at most 32 messages of a queue; bits far past that name nothing.
            let offsets: Vec<i64> = a.offsets().take(MAX_BATCH_ACK_BITS).filter(|o| (min..=max).contains(o)).collect();
            if offsets.is_empty() {
                continue;
            }
            if a.revive_queue_id == ORDER_REVIVE_QUEUE {
                let queue = QueueRef { topic: &topic, group: &a.consumer_group, queue_id: a.queue_id };
                for o in offsets {
                    self.ack_held(&queue, a.pop_time, o);
                }
                continue;
            }
            let key = KeyRef {
                group: &a.consumer_group,
                topic: &topic,
                queue_id: a.queue_id,
                start_offset: a.start_offset,
                pop_time: a.pop_time,
            };
            let (pending, revive_qid): (Vec<i64>, i32) = {
                let book = self.pop.book();
                let p = offsets.iter().copied().filter(|o| book.lookup(&key, *o) == AckLookup::Pending).collect();
                (p, book.get(&key).map_or(0, |ck| ck.revive_qid))
            };
            if pending.is_empty() {
                continue;
            }
            let record = BatchAckOut {
                ack_offsets: &pending,
                start_offset: a.start_offset,
                group: &a.consumer_group,
                topic: &topic,
                queue_id: a.queue_id,
                pop_time: a.pop_time,
                broker_name: &self.config.broker_name,
            };
            let appended = self.append_journal(conn, revive_qid, BATCH_ACK_TAG, &record)?;
            end = end.max(appended.end_offset);
            let mut book = self.pop.book();
            for o in pending {
                book.ack(&key, o);
            }
        }
        Ok(end)
    }

    /// CHANGE_MESSAGE_INVISIBLETIME: the message becomes invisible for `invisible_time` from
    /// now, under a new handle (a new checkpoint of that one message, then an ack of the old).
    pub fn change_invisible(
        &self,
        conn: &mut ConnState,
        req: &HandleRequest<'_>,
        invisible_time: i64,
    ) -> Result<Renewed, BrokerError> {
        self.check_handle_target(req, false)?;
        let h = self.handle(req)?;
        let now = self.config.clock.now_ms();
        if h.is_order() {
            let key = QueueRef { topic: req.topic, group: req.group, queue_id: req.queue_id };
            // The hold keeps its pop time (the client's new handle carries it); the invisible
            // time is counted from it.
            let until = now.saturating_add(invisible_time);
            if !self.pop.order().renew(&key, h.pop_time, req.offset, until) {
                return Err(self.handle_gone(&h, now));
            }
            return Ok(Renewed {
                pop_time: h.pop_time,
                invisible_time: until.saturating_sub(h.pop_time),
                revive_qid: ORDER_REVIVE_QUEUE,
                journal_end: 0,
            });
        }
        let key = key_ref(req, &h);
        let old_revive_qid = {
            let book = self.pop.book();
            if book.lookup(&key, req.offset) != AckLookup::Pending {
                return Err(self.handle_gone(&h, now));
            }
            book.get(&key).map_or(h.revive_qid, |c| c.revive_qid)
        };
        // The new checkpoint goes to the handle's revive queue, as Java's does.
        let revive_qid = h.revive_qid.clamp(0, self.config.pop.revive_queue_num.max(1) - 1);
        // The new checkpoint first: if the broker stops between the two records, the message
        // comes back (at the earlier time) rather than never.
        let record = CheckpointOut {
            start_offset: req.offset,
            pop_time: now,
            invisible_time,
            bit_map: 0,
            num: 1,
            queue_id: req.queue_id,
            topic: req.topic,
            group: req.group,
            revive_offset: 0,
            offsets: (req.offset, &[req.offset]),
            broker_name: &self.config.broker_name,
            re_put_times: 0,
            owner: None,
            renewals: 0,
        };
        let appended = self.append_journal(conn, revive_qid, CK_TAG, &record)?;
        // A renewed handle is the client's own from now on: the broker no longer renews it.
        let ck = Checkpoint {
            revive_qid,
            revive_offset: appended.queue_offset,
            invisible_time,
            offsets: vec![req.offset],
            acked: 0,
            owner: None,
            renewals: 0,
        };
        let ack = AckOut {
            ack_offset: req.offset,
            start_offset: h.start_offset,
            group: req.group,
            topic: req.topic,
            queue_id: req.queue_id,
            pop_time: h.pop_time,
            broker_name: &self.config.broker_name,
        };
        let acked = self.append_journal(conn, old_revive_qid, ACK_TAG, &ack)?;
        {
            let mut book = self.pop.book();
            let new_key = CheckpointKey {
                group: book.intern(req.group),
                topic: book.intern(req.topic),
                queue_id: req.queue_id,
                start_offset: req.offset,
                pop_time: now,
            };
            book.insert(new_key, ck);
            book.ack(&key, req.offset);
        }
        Ok(Renewed { pop_time: now, invisible_time, revive_qid, journal_end: acked.end_offset })
    }

    /// Journals a checkpoint again with a new invisible time (and owner): on replay it replaces
    /// the earlier record's, so the pop keeps its name and the client's handle stays valid.
    fn rejournal(
        &self,
        conn: &mut ConnState,
        key: &CheckpointKey,
        ck: &Checkpoint,
        invisible_time: i64,
        owner: Option<Arc<str>>,
        renewals: u32,
    ) -> Result<(), BrokerError> {
        let record = CheckpointOut {
            start_offset: key.start_offset,
            pop_time: key.pop_time,
            invisible_time,
            // All 32 bits as the record keeps them (the inverse of reading it back).
            bit_map: ck.acked as u32 as i32,
            num: u8::try_from(ck.offsets.len()).unwrap_or(u8::MAX),
            queue_id: key.queue_id,
            topic: &key.topic,
            group: &key.group,
            revive_offset: 0,
            offsets: (key.start_offset, &ck.offsets),
            broker_name: &self.config.broker_name,
            re_put_times: 0,
            owner: owner.as_deref(),
            renewals,
        };
        let appended = self.append_journal(conn, ck.revive_qid, CK_TAG, &record)?;
        let renewed = Checkpoint {
            revive_qid: ck.revive_qid,
            revive_offset: appended.queue_offset,
            invisible_time,
            offsets: ck.offsets.clone(),
            acked: ck.acked,
            owner,
            renewals,
        };
        // Only while the book still holds it: an ack, a revive or a give-back may have finished
        // it meanwhile, and a renewal must not bring it back (on replay, a completed checkpoint
        // ignores later records of its name).
        self.pop.book().update_if_held(key, renewed);
        Ok(())
    }

    /// Renews the owned pops that would come due within `renewAheadTimeMillis` of `now`, for
    /// owners `alive` says are connected, each by the next step of the renewal schedule and
    /// for at most `renewMaxTimeMillis` after its pop. Returns how many were renewed.
    pub fn renew_owned_pops(
        &self,
        conn: &mut ConnState,
        now: i64,
        alive: &dyn Fn(&str) -> bool,
    ) -> Result<usize, BrokerError> {
        let cfg = &self.config.pop;
        let due = self.pop.book().renewable(now.saturating_add(cfg.renew_ahead_ms));
        let mut renewed = 0;
        for (key, ck) in due {
            let Some(owner) = ck.owner.clone() else { continue };
            if now.saturating_sub(key.pop_time) >= cfg.renew_max_ms || !alive(&owner) {
                continue;
            }
            let times = RENEW_STEPS.get(ck.renewals as usize).or(RENEW_STEPS.last()).copied().unwrap_or(1);
            let step = cfg.renew_step_ms.saturating_mul(times);
            let until = now.saturating_add(step).min(key.pop_time.saturating_add(cfg.renew_max_ms));
            let invisible = until.saturating_sub(key.pop_time);
            if invisible <= ck.invisible_time {
                continue;
            }
            self.rejournal(conn, &key, &ck, invisible, Some(owner), ck.renewals.saturating_add(1))?;
            renewed += 1;
        }
        // Orderly holds are renewed in memory (they are saved with the offsets, §11.3).
        let step = |renewals: u32| {
            cfg.renew_step_ms
                .saturating_mul(RENEW_STEPS.get(renewals as usize).or(RENEW_STEPS.last()).copied().unwrap_or(1))
        };
        renewed += self.pop.order().renew_owned(now, cfg.renew_ahead_ms, cfg.renew_max_ms, step, alive);
        Ok(renewed)
    }

    /// A client said it is terminating: the pops it owns stop being renewed and their
    /// messages become visible `invisibleTimeMillisWhenClear` from `now` (or when they were
    /// due, if sooner). Returns how many pops were released.
    pub fn release_owned_pops(&self, conn: &mut ConnState, owner: &str, now: i64) -> Result<usize, BrokerError> {
        let owned = self.pop.book().owned_by(owner);
        let mut released = 0;
        for (key, ck) in owned {
            let soon = now.saturating_add(self.config.pop.release_ms).saturating_sub(key.pop_time);
            self.rejournal(conn, &key, &ck, soon.min(ck.invisible_time), None, ck.renewals)?;
            released += 1;
        }
        let holds = self.pop.order().release_owned(owner, now, self.config.pop.release_ms);
        if holds > 0 {
            // Parked orderly pops wait for a hold to let go; this one does sooner.
            self.pop.released.notify_waiters();
        }
        released += holds;
        Ok(released)
    }

    /// Whether the handle names a popped message of this group that is still out (neither
    /// acknowledged nor handed out again).
    pub fn pop_pending(&self, req: &HandleRequest<'_>) -> bool {
        let Ok(h) = self.handle(req) else { return false };
        if h.is_order() {
            let key = QueueRef { topic: req.topic, group: req.group, queue_id: req.queue_id };
            let order = self.pop.order();
            return order
                .get(&key)
                .is_some_and(|hold| hold.pop_time == h.pop_time && hold.offsets.contains(&req.offset));
        }
        self.pop.book().lookup(&key_ref(req, &h), req.offset) == AckLookup::Pending
    }

    /// A popped message never reached its client (the stream went first): it becomes visible
    /// `ms` from now and is no longer renewed for the client.
    pub fn give_back(&self, conn: &mut ConnState, req: &HandleRequest<'_>, ms: i64) -> Result<(), BrokerError> {
        let h = self.handle(req)?;
        if h.is_order() {
            let key = QueueRef { topic: req.topic, group: req.group, queue_id: req.queue_id };
            let until = self.config.clock.now_ms().saturating_add(ms);
            self.pop.order().give_back(&key, h.pop_time, req.offset, until);
            return Ok(());
        }
        self.change_invisible(conn, req, ms).map(|_| ())
    }

    /// Whether a pop like `req` would find something now (NOTIFICATION).
    pub fn pop_has_message(&self, req: &PopRequest<'_>) -> bool {
        let (queues, _) = self.pop_watch_list(req, self.config.clock.now_ms());
        queues.iter().any(|(t, q, from)| self.store.max_offset_in_queue(t, *q) > *from)
    }

    /// The queues a pop like `req` reads (held orderly queues left out), with the offset it
    /// would read each from, and for an orderly pop the earliest time a held queue is let go.
    fn pop_watch_list(&self, req: &PopRequest<'_>, now: i64) -> (Vec<(String, i32, i64)>, Option<i64>) {
        let mut list = Vec::new();
        let mut unblock_at: Option<i64> = None;
        let mut add = |t: &str, q: i32| {
            if req.order {
                let key = QueueRef { topic: t, group: req.group, queue_id: q };
                let order = self.pop.order();
                if order.blocked(&key, now, req.attempt_id) {
                    let at = order.get(&key).map_or(now, |h| h.visible_at());
                    unblock_at = Some(unblock_at.map_or(at, |u| u.min(at)));
                    return;
                }
            }
            let from =
                self.offsets.query(req.group, t, q).unwrap_or_else(|| self.initial_pop_offset(t, q, req.init_mode));
            list.push((t.to_owned(), q, from));
        };
        let n = self.topics.queues(req.topic).map_or(0, |tc| tc.read_queue_nums.max(0));
        if req.queue_id < 0 {
            for q in 0..n {
                add(req.topic, q);
            }
        } else {
            add(req.topic, req.queue_id);
        }
        if !req.order {
            let retry = wire_pop::retry_topic(req.group, req.topic);
            let n = self.topics.queues(&retry).map_or(0, |tc| tc.read_queue_nums.max(0));
            for q in 0..n {
                add(&retry, q);
            }
        }
        (list, unblock_at)
    }

    /// Parks until a pop like `req` may find something, or `timeout` passes: a message
    /// arrives in a queue it reads, a held queue is released or let go, or retried messages
    /// are stored.
    pub async fn pop_wait(&self, req: &PopRequest<'_>, timeout: Duration) {
        let now = self.config.clock.now_ms();
        let (list, unblock_at) = self.pop_watch_list(req, now);
        let mut timeout = timeout.min(MAX_POLL);
        if let Some(at) = unblock_at {
            timeout = timeout.min(Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0).max(1)));
        }
        let watches: Vec<(&str, i32, i64)> = list.iter().map(|(t, q, o)| (t.as_str(), *q, *o)).collect();
        self.store.wait_for_any_message(&watches, Some(&self.pop.released), timeout).await;
    }

    /// PEEK_MESSAGE: what a pop of the queue would return, without taking it.
    pub fn peek(&self, group: &str, topic: &str, queue_id: i32, max: i32) -> Result<Vec<MessageRef>, BrokerError> {
        let Some(tc) = self.topics.queues(topic) else {
            return Err(BrokerError::TopicNotExist(topic.to_owned()));
        };
        if tc.perm & PERM_READ == 0 {
            return Err(BrokerError::PopForbidden(topic.to_owned()));
        }
        let max = usize::try_from(max).unwrap_or(1).clamp(1, MAX_POP_MESSAGES as usize);
        let mut found = Vec::new();
        let queues: Vec<i32> = if queue_id < 0 { (0..tc.read_queue_nums).collect() } else { vec![queue_id] };
        for q in queues {
            if found.len() >= max {
                break;
            }
            let from = self.offsets.query(group, topic, q).unwrap_or_else(|| self.initial_pop_offset(topic, q, 1));
            let r = self.store.get_messages(topic, q, from, max - found.len(), MAX_POP_BYTES, TagFilter::All);
            found.extend(r.messages);
        }
        Ok(found)
    }

    /// Rebuilds the pop book from the journal (at open).
    pub fn load_pops(&self) {
        if let Ok(Some(file)) = silo_store::config_file::read_json::<order::OrderInfoFile>(
            &*self.store.config().fs,
            &self.order_info_path(),
        ) {
            self.pop.order().restore(file);
        }
        let topic = self.pop.revive_topic().to_owned();
        if self.topics.queues(&topic).is_none() {
            return;
        }
        let mut book = self.pop.book();
        // A checkpoint means its pop moved the group's offset past its messages: after a kill
        // the offsets file may be older than the journal, and this puts them back.
        let mut read_past: std::collections::HashMap<(String, String, i32), i64> = std::collections::HashMap::new();
        for qid in 0..self.config.pop.revive_queue_num.max(1) {
            let mut from = self.offsets.query(journal::REVIVE_GROUP, &topic, qid).unwrap_or(0);
            loop {
                let r = self.store.get_messages(&topic, qid, from, 256, 4 << 20, TagFilter::All);
                if r.messages.is_empty() {
                    if matches!(r.status, GetStatus::OffsetTooSmall | GetStatus::OffsetFoundNull)
                        && r.next_begin_offset > from
                    {
                        from = r.next_begin_offset;
                        continue;
                    }
                    break;
                }
                for m in &r.messages {
                    if let Ok(Decoded::Record(rec)) = decode_record(m, 0)
                        && let Some(record) = JournalRecord::read(&rec)
                    {
                        if let JournalRecord::Checkpoint(ck) = &record {
                            let last = ck.queue_offset_diff.iter().copied().max().unwrap_or(0);
                            let next = ck.start_offset.saturating_add(i64::from(last)).saturating_add(1);
                            let e = read_past.entry((ck.group.clone(), ck.topic.clone(), ck.queue_id)).or_insert(next);
                            *e = (*e).max(next);
                        }
                        book.apply(record, qid);
                    }
                }
                from = r.next_begin_offset;
            }
        }
        for ((group, t, queue_id), next) in read_past {
            if self.offsets.query(&group, &t, queue_id).is_none_or(|o| o < next) {
                self.offsets.commit(&group, &t, queue_id, next);
            }
        }
        tracing::debug!(checkpoints = book.len(), messages = book.held_messages(), "pop journal replayed");
    }

    pub(crate) fn order_info_path(&self) -> std::path::PathBuf {
        self.config.store_path_root_dir.join("config").join("consumerOrderInfo.json")
    }

    /// Saves the orderly holds if they changed since the last save (with the offsets, and at
    /// shutdown).
    pub fn persist_order_info(&self) -> Result<(), BrokerError> {
        let snapshot = self.pop.order().snapshot();
        let mut saved = self.pop.order_saved.lock().unwrap_or_else(|e| e.into_inner());
        if saved.as_ref() == Some(&snapshot) || (saved.is_none() && snapshot.table.is_empty()) {
            return Ok(());
        }
        silo_store::config_file::write_json_atomic(&*self.store.config().fs, &self.order_info_path(), &snapshot)?;
        *saved = Some(snapshot);
        Ok(())
    }

    /// Commits the journal's progress: per revive queue, up to the oldest live checkpoint.
    pub fn commit_revive_progress(&self) {
        let topic = self.pop.revive_topic();
        if self.topics.queues(topic).is_none() {
            return;
        }
        let book = self.pop.book();
        for qid in 0..self.config.pop.revive_queue_num.max(1) {
            let upto = book.oldest_live(qid).unwrap_or_else(|| self.store.max_offset_in_queue(topic, qid));
            let committed = self.offsets.query(journal::REVIVE_GROUP, topic, qid).unwrap_or(0);
            if upto > committed {
                self.offsets.commit(journal::REVIVE_GROUP, topic, qid, upto);
            }
        }
    }

    /// Stores the unacknowledged messages of every checkpoint due at `now` again in their
    /// group's retry topic, and journals that they were.
    pub fn revive_round(&self, conn: &mut ConnState, now: i64) -> Result<ReviveRound, BrokerError> {
        let mut round = ReviveRound::default();
        let due = {
            let mut book = self.pop.book();
            book.forget_completed(now);
            book.due(now, 256)
        };
        for (key, ck) in due {
            let mut done: Vec<i64> = Vec::with_capacity(ck.offsets.len());
            let mut last_end = 0;
            for offset in ck.unacked().collect::<Vec<_>>() {
                match self.revive_one(conn, &key, offset)? {
                    Some(Revived::Retry { end_offset }) => {
                        round.revived += 1;
                        last_end = last_end.max(end_offset);
                    }
                    Some(Revived::DeadLettered) => round.dead_lettered += 1,
                    None => round.dropped += 1,
                }
                done.push(offset);
            }
            if last_end > 0 {
                // The copies must be as durable as the record saying they were made.
                self.store.wait_durable(last_end)?;
            }
            if !done.is_empty() {
                let record = BatchAckOut {
                    ack_offsets: &done,
                    start_offset: key.start_offset,
                    group: &key.group,
                    topic: &key.topic,
                    queue_id: key.queue_id,
                    pop_time: key.pop_time,
                    broker_name: &self.config.broker_name,
                };
                self.append_journal(conn, ck.revive_qid, BATCH_ACK_TAG, &record)?;
            }
            self.pop.book().remove(&key.as_ref());
        }
        if round.revived + round.dead_lettered > 0 {
            self.pop.released.notify_waiters();
            self.register_routes_if_changed();
        }
        self.commit_revive_progress();
        Ok(round)
    }

    /// Stores message `offset` of the checkpoint's queue again in the group's retry topic,
    /// one delivery attempt further. `None` when the record is gone.
    fn revive_one(
        &self,
        conn: &mut ConnState,
        key: &CheckpointKey,
        offset: i64,
    ) -> Result<Option<Revived>, BrokerError> {
        let r = self.store.get_messages(&key.topic, key.queue_id, offset, 1, MAX_POP_BYTES, TagFilter::All);
        let Some(m) = r.messages.first().filter(|m| m.queue_offset == offset) else { return Ok(None) };
        let Ok(Decoded::Record(rec)) = decode_record(m, 0) else { return Ok(None) };
        let max = self.groups.retry_max_times(&key.group).unwrap_or(super::send::DEFAULT_MAX_RECONSUME);
        if rec.meta.reconsume_times >= max {
            // Every attempt the group allows is used up (its first delivery and `retryMaxTimes`
            // retries): to the dead-letter queue, as a client's send-back would.
            let back = super::send::SendBack {
                offset: m.physical_offset(),
                group: &key.group,
                delay_level: -1,
                max_reconsume_times: Some(0),
            };
            self.send_back(conn, &back)?;
            return Ok(Some(Revived::DeadLettered));
        }
        let retry = if key.topic.starts_with(silo_store::names::RETRY_PREFIX) {
            key.topic.to_string()
        } else {
            wire_pop::retry_topic(&key.group, &key.topic)
        };
        self.topics.ensure_system(&retry, 1)?;
        let mut props = std::mem::take(&mut conn.props);
        props.clear();
        rec.properties.push_without(&mut props, &[keys::WAIT]);
        if rec.meta.reconsume_times == 0 || rec.properties.get(keys::FIRST_POP_TIME).is_none() {
            let _ = write!(props, "{}\u{1}{}\u{2}", keys::FIRST_POP_TIME, key.pop_time);
        }
        let _ = write!(props, "{}\u{1}false\u{2}", keys::WAIT);
        let msg = MessageToStore {
            reconsume_times: rec.meta.reconsume_times.saturating_add(1),
            born_host: self.config.broker_addr(),
            ..MessageToStore::again(&rec, &retry, 0, &props)
        };
        let appended = self.store.append(&mut conn.appender, &msg);
        conn.props = props;
        Ok(Some(Revived::Retry { end_offset: appended?.end_offset }))
    }
}
