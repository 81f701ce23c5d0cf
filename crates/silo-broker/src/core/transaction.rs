//! Transactions (docs/protocol.md §2.13): half messages, END_TRANSACTION and the check-back,
//! in Apache RocketMQ's layout so that either broker can continue the other's pending
//! transactions.
//!
//! A transactional send is stored as a *half message* in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0,
//! with its real topic and queue in `REAL_TOPIC`/`REAL_QID`, where no consumer of the real
//! topic sees it. END_TRANSACTION commits it (the real message is appended under its real
//! topic) or rolls it back; either way an *op* record in `RMQ_SYS_TRANS_OP_HALF_TOPIC` (tag
//! `d`, body: half-queue offsets each followed by `,`) marks it resolved. A half message that
//! stays unresolved past the transaction timeout is *checked*: it is appended again at the end
//! of the half queue with its check count raised (so that the scan can move past it), and the
//! producer group is asked with CHECK_TRANSACTION_STATE, which it answers with another
//! END_TRANSACTION. After `transactionCheckMax` checks it is moved to
//! `TRANS_CHECK_MAX_TIME_TOPIC`.
//!
//! [`TxBook`] is the state in memory: the half messages past the scan's progress that are not
//! resolved yet, and the resolved ones the progress has not passed. It is rebuilt after a
//! restart by scanning both queues from the progress kept in `consumerOffset.json` (group
//! `CID_RMQ_SYS_TRANS`, as Java keeps it), so it holds only what arrived since the progress:
//! roughly the transactions of the last timeout plus one check interval.
//!
//! Unlike Java's broker, a transaction is resolved at most once: an END_TRANSACTION for a half
//! message that is resolved already, or for a copy made by a check whose transaction was
//! resolved through another copy, appends nothing; and before a commit that answers a check,
//! the key index is asked whether the commit was already appended (by a broker that stopped
//! between the commit and its op record).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::Duration;

use silo_store::{MessageToStore, TagFilter};
use silo_wire::properties::{PropertiesView, keys};
use silo_wire::record::{Decoded, StoredRecord, decode_record, sys_flag};

use super::BrokerError;
use crate::broker::{Broker, ConnState};

/// Where half messages wait (one queue).
pub const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// Where op records mark half messages resolved (one queue, the half queue's id).
pub const OP_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// Where half messages checked `transactionCheckMax` times without an answer go.
pub const CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// The group under which the scan's progress is kept in `consumerOffset.json`.
pub const SYSTEM_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// The tag of op records.
pub const OP_TAG: &str = "d";
/// The property that holds the transaction id (the producer's `UNIQ_KEY`) on a half message.
pub const TRANSACTION_ID: &str = "__transactionId__";
/// How many times a half message has been checked.
pub const CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
/// A producer's own minimum age, in seconds, before its message is checked.
pub const CHECK_IMMUNITY: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";

/// The keys Java operators know, with Java's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionConfig {
    /// `transactionTimeOut`: a half message younger than this (by its born time) is not checked.
    pub timeout: Duration,
    /// `transactionCheckInterval`: how often the check runs.
    pub check_interval: Duration,
    /// `transactionCheckMax`: checks before a half message is given up.
    pub check_max: i32,
    /// `rejectTransactionMessage`: refuse transactional sends.
    pub reject: bool,
}

impl Default for TransactionConfig {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(6), check_interval: Duration::from_secs(30), check_max: 15, reject: false }
    }
}

/// What a producer decided (`commitOrRollback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Commit,
    Rollback,
    /// Not decided yet: the half message waits for the check.
    Unknown,
}

impl Outcome {
    /// From the header's value: 8 commit, 12 rollback, 0 unknown (the sysFlag transaction
    /// types).
    pub fn from_code(code: i32) -> Option<Self> {
        match code {
            sys_flag::TRANSACTION_COMMIT_TYPE => Some(Self::Commit),
            sys_flag::TRANSACTION_ROLLBACK_TYPE => Some(Self::Rollback),
            sys_flag::TRANSACTION_NOT_TYPE => Some(Self::Unknown),
            _ => None,
        }
    }
}

/// END_TRANSACTION as the producer sends it.
#[derive(Debug, Clone, Copy)]
pub struct EndTransaction<'a> {
    pub producer_group: &'a str,
    /// The half message's offset in the half queue (the send result's queue offset).
    pub half_offset: i64,
    /// The half message's commit-log offset (from the send result's offset message id).
    pub commit_log_offset: i64,
    pub outcome: Outcome,
    pub from_check: bool,
}

/// What END_TRANSACTION did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Committed,
    RolledBack,
    /// Unknown: nothing was written.
    Left,
    /// The transaction was resolved already; nothing was written.
    AlreadyResolved,
}

/// A half message the scan has seen and nothing has resolved yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Half {
    pub tx_id: String,
    pub group: String,
    /// The topic the message is for once committed (`REAL_TOPIC`).
    pub topic: String,
    pub commit_log_offset: i64,
    pub born_ms: i64,
    pub check_times: i32,
    /// The producer's own minimum age before a check ([`CHECK_IMMUNITY`]), if it set one.
    pub immunity: Option<Duration>,
}

impl Half {
    /// From a stored half message at `commit_log_offset`.
    pub fn of(rec: &StoredRecord<'_>, commit_log_offset: i64) -> Self {
        let p = rec.properties;
        Self {
            tx_id: transaction_id(&p).to_owned(),
            group: p.get(keys::PGROUP).unwrap_or("").to_owned(),
            topic: p.get(keys::REAL_TOPIC).unwrap_or("").to_owned(),
            commit_log_offset,
            born_ms: rec.meta.born_timestamp,
            check_times: p.get(CHECK_TIMES).and_then(|v| v.parse().ok()).unwrap_or(0),
            immunity: p.get(CHECK_IMMUNITY).and_then(|v| v.parse::<u64>().ok()).map(Duration::from_secs),
        }
    }

    /// Whether it is old enough to be checked at `now_ms`: past the producer's immunity if it
    /// set one, else past the timeout; a born time in the future (a skewed client clock) does
    /// not hold it back, as in Java.
    pub fn is_due(&self, now_ms: i64, timeout: Duration) -> bool {
        let age = now_ms.saturating_sub(self.born_ms);
        let min_age = self.immunity.unwrap_or(timeout);
        age < 0 || age >= i64::try_from(min_age.as_millis()).unwrap_or(i64::MAX)
    }
}

/// The transaction id of a half message: `__transactionId__`, else its `UNIQ_KEY`.
pub fn transaction_id<'a>(p: &PropertiesView<'a>) -> &'a str {
    p.get(TRANSACTION_ID).or_else(|| p.get(keys::UNIQ_KEY)).unwrap_or("")
}

/// How END_TRANSACTION for one half message is to be carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndPlan {
    /// Resolve these half-queue offsets (the one named and every pending copy of the same
    /// transaction) with one op record, after appending the commit if it is one.
    Resolve(BTreeSet<i64>),
    /// That half message, or its transaction, is resolved already.
    AlreadyResolved,
    /// The half message was passed by the check (a copy of it was made, then resolved or
    /// given up) and no copy of its transaction is pending: its END_TRANSACTION is too late.
    Stale,
}

/// The transaction state in memory; see the module docs.
#[derive(Debug, Default)]
pub struct TxBook {
    /// Next half-queue offset the scan reads.
    half_scanned: i64,
    /// Next op-queue offset the scan reads.
    op_scanned: i64,
    /// Half messages seen and not resolved, by half-queue offset.
    pending: BTreeMap<i64, Half>,
    /// The pending half-queue offsets of each transaction (a check makes a copy).
    by_tx: HashMap<String, BTreeSet<i64>>,
    /// Resolved half-queue offsets the progress has not passed, with the op-queue offset of
    /// the op record that resolved each.
    resolved: BTreeMap<i64, i64>,
}

impl TxBook {
    /// Starts from the progress kept in `consumerOffset.json`.
    pub fn starting_at(half_progress: i64, op_progress: i64) -> Self {
        Self { half_scanned: half_progress, op_scanned: op_progress, ..Self::default() }
    }

    /// The scan's progress: the first half-queue offset not known to be resolved, and the
    /// first op-queue offset that may resolve a half message at or after it. Both only grow.
    pub fn progress(&self) -> (i64, i64) {
        let half = self.pending.keys().next().copied().unwrap_or(self.half_scanned).min(self.half_scanned);
        let op = self.resolved.range(half..).map(|(_, op)| *op).min().unwrap_or(self.op_scanned).min(self.op_scanned);
        (half, op)
    }

    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Pending half messages by real topic (a transaction's copies made by checks counted once).
    pub fn pending_by_topic(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        let mut seen = std::collections::HashSet::new();
        for half in self.pending.values() {
            if seen.insert(half.tx_id.as_str()) {
                *out.entry(half.topic.clone()).or_default() += 1;
            }
        }
        out
    }

    pub fn next_half_to_scan(&self) -> i64 {
        self.half_scanned
    }

    pub fn next_op_to_scan(&self) -> i64 {
        self.op_scanned
    }

    /// The scan read half message `offset`.
    pub fn half_seen(&mut self, offset: i64, half: Half) {
        if offset < self.half_scanned {
            return;
        }
        self.half_scanned = offset + 1;
        if self.resolved.contains_key(&offset) {
            return;
        }
        self.by_tx.entry(half.tx_id.clone()).or_default().insert(offset);
        self.pending.entry(offset).or_insert(half);
    }

    /// The scan moved past half-queue offsets that hold nothing readable.
    pub fn halves_skipped_to(&mut self, next: i64) {
        self.half_scanned = self.half_scanned.max(next);
    }

    /// An op record at op-queue offset `op_offset` resolves half message `half_offset`.
    pub fn resolved(&mut self, half_offset: i64, op_offset: i64) {
        if half_offset >= self.progress().0 {
            let op = self.resolved.entry(half_offset).or_insert(op_offset);
            *op = (*op).min(op_offset);
        }
        if let Some(half) = self.pending.remove(&half_offset) {
            self.forget_copy(&half.tx_id, half_offset);
        }
        self.prune();
    }

    /// The scan read op records up to `next`.
    pub fn ops_scanned_to(&mut self, next: i64) {
        self.op_scanned = self.op_scanned.max(next);
    }

    fn forget_copy(&mut self, tx_id: &str, offset: i64) {
        if let Some(set) = self.by_tx.get_mut(tx_id) {
            set.remove(&offset);
            if set.is_empty() {
                self.by_tx.remove(tx_id);
            }
        }
    }

    /// Drops resolved entries the progress has passed.
    fn prune(&mut self) {
        let half = self.progress().0;
        self.resolved = self.resolved.split_off(&half);
    }

    /// Decides END_TRANSACTION for half message `offset` of transaction `tx_id`.
    pub fn plan_end(&self, offset: i64, tx_id: &str) -> EndPlan {
        if self.resolved.contains_key(&offset) {
            return EndPlan::AlreadyResolved;
        }
        let copies = self.by_tx.get(tx_id).cloned().unwrap_or_default();
        let passed = offset < self.progress().0 || (offset < self.half_scanned && !self.pending.contains_key(&offset));
        if passed && copies.is_empty() {
            return EndPlan::Stale;
        }
        let mut halves = copies;
        if !passed {
            halves.insert(offset);
        }
        EndPlan::Resolve(halves)
    }

    /// The pending half messages due for a check at `now_ms`, oldest offset first.
    pub fn due(&self, now_ms: i64, timeout: Duration) -> Vec<(i64, Half)> {
        self.pending.iter().filter(|(_, h)| h.is_due(now_ms, timeout)).map(|(o, h)| (*o, h.clone())).collect()
    }

    /// Half message `old` was appended again at `new` (a check).
    pub fn rechecked(&mut self, old: i64, new: i64, half: Half) {
        if let Some(h) = self.pending.remove(&old) {
            self.forget_copy(&h.tx_id, old);
        }
        self.by_tx.entry(half.tx_id.clone()).or_default().insert(new);
        self.pending.insert(new, half);
        self.prune();
    }

    /// Half message `offset` was given up (moved to [`CHECK_MAX_TIME_TOPIC`]).
    pub fn given_up(&mut self, offset: i64) {
        if let Some(h) = self.pending.remove(&offset) {
            self.forget_copy(&h.tx_id, offset);
        }
        self.prune();
    }
}

/// A check-back to send: CHECK_TRANSACTION_STATE to one producer of `group`.
#[derive(Debug, Clone)]
pub struct Check {
    pub group: String,
    pub real_topic: String,
    /// The copy's half-queue offset and commit-log offset: what the producer's answer names.
    pub half_offset: i64,
    pub commit_log_offset: i64,
    pub tx_id: String,
    /// The message as the producer sent it (real topic and queue restored), in the stored
    /// record format.
    pub message: Vec<u8>,
}

/// What one check round did.
#[derive(Debug, Default)]
pub struct CheckRound {
    pub checks: Vec<Check>,
    pub given_up: usize,
    /// Due half messages found committed already (an op record was missing).
    pub found_committed: usize,
}

/// Properties of a message as the producer sent it: the half message's, without what the
/// broker added to hold it.
fn real_properties(out: &mut String, p: &PropertiesView<'_>) {
    out.clear();
    p.push_without(out, &[keys::TRAN_MSG, keys::REAL_TOPIC, keys::REAL_QID, CHECK_TIMES]);
}

impl Broker {
    /// The transaction keys, as configured.
    fn tx_config(&self) -> TransactionConfig {
        self.config.transaction
    }

    fn tx_book(&self) -> std::sync::MutexGuard<'_, TxBook> {
        self.transactions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the half message END_TRANSACTION names and checks that the header matches it:
    /// a record of the half topic, of this producer group, at this half-queue offset.
    fn verified_half(&self, req: &EndTransaction<'_>) -> Result<silo_store::MessageRef, BrokerError> {
        let r =
            self.store.read_at(req.commit_log_offset).map_err(|_| BrokerError::NoHalfMessage(req.commit_log_offset))?;
        let Ok(Decoded::Record(rec)) = decode_record(&r, 0) else {
            return Err(BrokerError::NoHalfMessage(req.commit_log_offset));
        };
        if rec.topic != HALF_TOPIC {
            return Err(BrokerError::NotAHalfMessage { offset: req.commit_log_offset, topic: rec.topic.to_owned() });
        }
        if rec.properties.get(keys::PGROUP) != Some(req.producer_group) {
            return Err(BrokerError::TransactionMismatch("The producer group wrong"));
        }
        if rec.meta.queue_offset != req.half_offset {
            return Err(BrokerError::TransactionMismatch("The transaction state table offset wrong"));
        }
        Ok(r)
    }

    /// END_TRANSACTION: commits or rolls back the half message the header names.
    pub fn end_transaction(&self, conn: &mut ConnState, req: &EndTransaction<'_>) -> Result<Ended, BrokerError> {
        let half = self.verified_half(req)?;
        let Ok(Decoded::Record(rec)) = decode_record(&half, 0) else {
            return Err(BrokerError::NoHalfMessage(req.commit_log_offset));
        };
        if req.outcome == Outcome::Unknown {
            return Ok(Ended::Left);
        }
        let tx_id = transaction_id(&rec.properties);
        let mut book = self.tx_book();
        let halves = match book.plan_end(req.half_offset, tx_id) {
            EndPlan::Resolve(halves) => halves,
            EndPlan::AlreadyResolved => return Ok(Ended::AlreadyResolved),
            EndPlan::Stale => {
                return Err(BrokerError::TransactionMismatch("the half message was resolved or checked already"));
            }
        };
        let committed_before = req.outcome == Outcome::Commit && req.from_check && self.commit_in_log(&rec, tx_id);
        if req.outcome == Outcome::Commit && !committed_before {
            self.append_commit(conn, &rec, req.commit_log_offset)?;
        }
        self.append_op(conn, &mut book, &halves)?;
        drop(book);
        if !committed_before {
            let topic = rec.properties.get(keys::REAL_TOPIC).unwrap_or(rec.topic);
            let age = self.config.clock.now_ms().saturating_sub(rec.meta.born_timestamp);
            self.metrics.transaction_ended(topic, req.outcome == Outcome::Commit, age);
        }
        Ok(match req.outcome {
            Outcome::Commit if committed_before => Ended::AlreadyResolved,
            Outcome::Commit => Ended::Committed,
            _ => Ended::RolledBack,
        })
    }

    /// Whether the real message of transaction `tx_id` is in the log already (found through
    /// the key index by its unique key, with the commit type).
    fn commit_in_log(&self, half: &StoredRecord<'_>, tx_id: &str) -> bool {
        let (Some(topic), false) = (half.properties.get(keys::REAL_TOPIC), tx_id.is_empty()) else { return false };
        let since = half.meta.born_timestamp.saturating_sub(60_000);
        self.store.query_by_key(topic, tx_id, 32, since, i64::MAX).iter().any(|m| {
            matches!(decode_record(m, 0), Ok(Decoded::Record(r))
                if r.meta.sys_flag & sys_flag::TRANSACTION_MASK == sys_flag::TRANSACTION_COMMIT_TYPE
                    && r.properties.get(keys::UNIQ_KEY) == Some(tx_id))
        })
    }

    /// Appends the real message of a half message: its real topic and queue, the commit type,
    /// the producer's properties without the broker's half markers.
    fn append_commit(
        &self,
        conn: &mut ConnState,
        half: &StoredRecord<'_>,
        half_offset: i64,
    ) -> Result<(), BrokerError> {
        let p = half.properties;
        let (Some(topic), Some(queue_id)) =
            (p.get(keys::REAL_TOPIC), p.get(keys::REAL_QID).and_then(|q| q.parse::<i32>().ok()))
        else {
            return Err(BrokerError::StoredRecordCorrupt);
        };
        self.topics.ensure_system(topic, queue_id.saturating_add(1).max(1))?;
        let mut props = std::mem::take(&mut conn.props);
        real_properties(&mut props, &p);
        let msg = MessageToStore {
            sys_flag: (half.meta.sys_flag & !sys_flag::TRANSACTION_MASK) | sys_flag::TRANSACTION_COMMIT_TYPE,
            prepared_tx_offset: half_offset,
            ..MessageToStore::again(half, topic, queue_id, &props)
        };
        let r = self.store.append(&mut conn.appender, &msg);
        conn.props = props;
        r?;
        self.stats.put_messages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Appends one op record resolving `halves`, and notes them resolved.
    fn append_op(&self, conn: &mut ConnState, book: &mut TxBook, halves: &BTreeSet<i64>) -> Result<(), BrokerError> {
        if halves.is_empty() {
            return Ok(());
        }
        self.topics.ensure_system(OP_TOPIC, 1)?;
        let mut body = String::with_capacity(halves.len() * 12);
        for h in halves {
            let _ = write!(body, "{h},");
        }
        let props = format!("{}\u{1}{OP_TAG}\u{2}{}\u{1}false\u{2}", keys::TAGS, keys::WAIT);
        let msg = MessageToStore {
            topic: OP_TOPIC,
            queue_id: 0,
            flag: 0,
            sys_flag: 0,
            born_timestamp: self.config.clock.now_ms(),
            born_host: self.config.broker_addr(),
            reconsume_times: 0,
            prepared_tx_offset: 0,
            body: body.as_bytes(),
            properties: &props,
        };
        let r = self.store.append(&mut conn.appender, &msg)?;
        for h in halves {
            book.resolved(*h, r.queue_offset);
        }
        Ok(())
    }

    /// Loads the scan's progress (group `CID_RMQ_SYS_TRANS` in `consumerOffset.json`).
    pub fn load_transactions(&self) {
        let half = self.offsets.query(SYSTEM_GROUP, HALF_TOPIC, 0).unwrap_or(0);
        let op = self.offsets.query(SYSTEM_GROUP, OP_TOPIC, 0).unwrap_or(0);
        *self.tx_book() = TxBook::starting_at(half, op);
    }

    /// Reads the op records and half messages stored since the last scan into the book.
    fn scan_transactions(&self, book: &mut TxBook) {
        loop {
            let from = book.next_op_to_scan();
            let r = self.store.get_messages(OP_TOPIC, 0, from, 64, 1 << 20, TagFilter::All);
            for m in &r.messages {
                if let Ok(Decoded::Record(rec)) = decode_record(m, 0) {
                    if rec.properties.get(keys::TAGS) != Some(OP_TAG) {
                        continue;
                    }
                    let body = std::str::from_utf8(rec.body).unwrap_or("");
                    for offset in body.split(',').filter_map(|o| o.trim().parse::<i64>().ok()) {
                        book.resolved(offset, m.queue_offset);
                    }
                }
            }
            book.ops_scanned_to(r.next_begin_offset.max(from));
            if r.messages.is_empty() || r.next_begin_offset <= from {
                break;
            }
        }
        loop {
            let from = book.next_half_to_scan();
            let r = self.store.get_messages(HALF_TOPIC, 0, from, 64, 1 << 20, TagFilter::All);
            for m in &r.messages {
                if let Ok(Decoded::Record(rec)) = decode_record(m, 0) {
                    book.half_seen(m.queue_offset, Half::of(&rec, m.physical_offset()));
                }
            }
            if r.messages.is_empty() {
                // Offsets below the queue's first (removed with their segment) hold nothing.
                if r.next_begin_offset > from && r.status != silo_store::GetStatus::OffsetOverflowOne {
                    book.halves_skipped_to(r.next_begin_offset);
                    continue;
                }
                break;
            }
            book.halves_skipped_to(r.next_begin_offset);
        }
    }

    /// One round of the check (every `transactionCheckInterval`): scans what is new, then for
    /// each half message due at `now_ms`: resolves it if its commit is in the log already,
    /// gives it up after `transactionCheckMax` checks, else appends it again with its check
    /// count raised and returns a check-back for the copy. Keeps the progress.
    pub fn transaction_check_round(&self, conn: &mut ConnState, now_ms: i64) -> Result<CheckRound, BrokerError> {
        let config = self.tx_config();
        let mut round = CheckRound::default();
        let mut book = self.tx_book();
        self.scan_transactions(&mut book);
        let mut last_end = None;
        for (offset, half) in book.due(now_ms, config.timeout) {
            let Ok(stored) = self.store.read_at(half.commit_log_offset) else {
                tracing::error!(offset = half.commit_log_offset, "a pending half message is unreadable; given up");
                book.given_up(offset);
                continue;
            };
            let Ok(Decoded::Record(rec)) = decode_record(&stored, 0) else {
                book.given_up(offset);
                continue;
            };
            if self.commit_in_log(&rec, &half.tx_id) {
                let mut halves = BTreeSet::new();
                halves.insert(offset);
                self.append_op(conn, &mut book, &halves)?;
                round.found_committed += 1;
                continue;
            }
            if half.check_times >= config.check_max {
                self.give_up(conn, &rec)?;
                book.given_up(offset);
                round.given_up += 1;
                tracing::warn!(
                    tx = half.tx_id,
                    group = half.group,
                    checks = half.check_times,
                    "a transaction was never resolved; moved to {CHECK_MAX_TIME_TOPIC}"
                );
                continue;
            }
            let mut props = std::mem::take(&mut conn.props);
            props.clear();
            rec.properties.push_without(&mut props, &[CHECK_TIMES]);
            let _ = write!(props, "{CHECK_TIMES}\u{1}{}\u{2}", half.check_times + 1);
            let copy = MessageToStore::again(&rec, HALF_TOPIC, 0, &props);
            let appended = self.store.append(&mut conn.appender, &copy);
            conn.props = props;
            let appended = appended?;
            last_end = Some(appended.end_offset);
            let copy_half =
                Half { check_times: half.check_times + 1, commit_log_offset: appended.physical_offset, ..half };
            book.rechecked(offset, appended.queue_offset, copy_half.clone());
            if let Some(check) = self.check_for(&appended, &copy_half) {
                round.checks.push(check);
            }
        }
        // A copy must be as durable as the original before the progress passes the original.
        if let Some(end) = last_end
            && self.store.flush_mode().is_sync()
        {
            self.store.wait_durable(end)?;
        }
        let (half, op) = book.progress();
        // The half progress first: a snapshot taken between the two then holds an op progress
        // that is only too early (more is scanned again), never too late.
        self.offsets.commit(SYSTEM_GROUP, HALF_TOPIC, 0, half);
        self.offsets.commit(SYSTEM_GROUP, OP_TOPIC, 0, op);
        Ok(round)
    }

    /// Moves a half message checked too often to [`CHECK_MAX_TIME_TOPIC`].
    fn give_up(&self, conn: &mut ConnState, rec: &StoredRecord<'_>) -> Result<(), BrokerError> {
        self.topics.ensure_system(CHECK_MAX_TIME_TOPIC, 1)?;
        self.register_routes_if_changed();
        let msg = MessageToStore::again(rec, CHECK_MAX_TIME_TOPIC, 0, rec.properties.as_str());
        self.store.append(&mut conn.appender, &msg)?;
        Ok(())
    }

    /// The check-back for a copy just appended: the message as its producer sent it.
    fn check_for(&self, appended: &silo_store::AppendResult, half: &Half) -> Option<Check> {
        let stored = self.store.read_at(appended.physical_offset).ok()?;
        let Ok(Decoded::Record(rec)) = decode_record(&stored, 0) else { return None };
        let p = rec.properties;
        let real_topic = p.get(keys::REAL_TOPIC)?.to_owned();
        let mut meta = rec.meta;
        meta.queue_id = p.get(keys::REAL_QID).and_then(|q| q.parse().ok()).unwrap_or(0);
        let mut message = Vec::with_capacity(stored.len() + real_topic.len());
        silo_wire::record::encode_record(
            &meta,
            &real_topic,
            rec.body,
            silo_wire::batch::OutgoingProperties::Raw(p.as_str().as_bytes()),
            &mut message,
        )
        .ok()?;
        Some(Check {
            group: half.group.clone(),
            real_topic,
            half_offset: appended.queue_offset,
            commit_log_offset: appended.physical_offset,
            tx_id: half.tx_id.clone(),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(tx: &str, born: i64) -> Half {
        Half {
            tx_id: tx.into(),
            group: "g".into(),
            topic: "orders".into(),
            commit_log_offset: 0,
            born_ms: born,
            check_times: 0,
            immunity: None,
        }
    }

    const TIMEOUT: Duration = Duration::from_secs(6);

    #[test]
    fn a_resolved_half_message_is_never_resolved_again() {
        let mut book = TxBook::starting_at(0, 0);
        book.half_seen(0, half("t0", 0));
        book.half_seen(1, half("t1", 0));
        assert_eq!(book.plan_end(1, "t1"), EndPlan::Resolve([1].into()));
        book.resolved(1, 0);
        assert_eq!(book.plan_end(1, "t1"), EndPlan::AlreadyResolved);
        assert_eq!(book.pending(), 1);
        // Once the progress has passed it, it is known only as passed: still nothing to apply.
        book.resolved(0, 1);
        assert_eq!(book.plan_end(1, "t1"), EndPlan::Stale);
        assert_eq!(book.pending(), 0);
    }

    #[test]
    fn an_end_before_the_scan_saw_the_half_message_still_resolves_it_once() {
        let mut book = TxBook::starting_at(0, 0);
        assert_eq!(book.plan_end(3, "t3"), EndPlan::Resolve([3].into()));
        book.resolved(3, 0);
        book.half_seen(3, half("t3", 0));
        assert_eq!(book.pending(), 0, "the scan must not make a resolved half message pending");
        assert_eq!(book.plan_end(3, "t3"), EndPlan::AlreadyResolved);
    }

    #[test]
    fn a_check_copy_and_its_original_resolve_together() {
        let mut book = TxBook::starting_at(0, 0);
        book.half_seen(0, half("t", 0));
        book.half_seen(1, half("u", 0));
        book.rechecked(0, 2, half("t", 0));
        // The producer answers the original's END_TRANSACTION late: the copy is resolved.
        assert_eq!(book.plan_end(0, "t"), EndPlan::Resolve([2].into()));
        book.resolved(2, 0);
        assert_eq!(book.plan_end(2, "t"), EndPlan::AlreadyResolved);
        // With no copy pending, an answer for the passed original is too late.
        assert_eq!(book.plan_end(0, "t"), EndPlan::Stale);
    }

    #[test]
    fn the_progress_stops_at_the_oldest_pending_half_message_and_its_ops() {
        let mut book = TxBook::starting_at(10, 100);
        for o in 10..15 {
            book.half_seen(o, half(&format!("t{o}"), 0));
        }
        book.ops_scanned_to(100);
        assert_eq!(book.progress(), (10, 100));
        book.resolved(11, 100);
        book.resolved(12, 101);
        book.ops_scanned_to(102);
        assert_eq!(book.progress(), (10, 100), "10 is pending; the op of 11 must be scanned again");
        book.resolved(10, 102);
        book.ops_scanned_to(103);
        assert_eq!(book.progress(), (13, 103), "10..=12 resolved, 13 pending");
        book.rechecked(13, 15, half("t13", 0));
        book.rechecked(14, 16, half("t14", 0));
        assert_eq!(book.progress(), (15, 103));
    }

    #[test]
    fn a_restart_scans_again_from_the_progress_and_finds_the_same_pending_set() {
        let mut before = TxBook::starting_at(0, 0);
        for o in 0..4 {
            before.half_seen(o, half(&format!("t{o}"), 0));
        }
        before.resolved(1, 0);
        before.resolved(2, 1);
        before.ops_scanned_to(2);
        let (h, op) = before.progress();
        let mut after = TxBook::starting_at(h, op);
        // Ops from the op progress, then halves from the half progress, as the scan reads them.
        after.resolved(1, 0);
        after.resolved(2, 1);
        after.ops_scanned_to(2);
        for o in h..4 {
            after.half_seen(o, half(&format!("t{o}"), 0));
        }
        let pending = |b: &TxBook| b.due(i64::MAX / 2, TIMEOUT).into_iter().map(|(o, _)| o).collect::<Vec<_>>();
        assert_eq!(pending(&before), vec![0, 3]);
        assert_eq!(pending(&after), pending(&before));
    }

    #[test]
    fn a_half_message_is_due_after_the_timeout_or_its_own_immunity() {
        let h = half("t", 1_000);
        assert!(!h.is_due(6_999, TIMEOUT));
        assert!(h.is_due(7_000, TIMEOUT));
        let immune = Half { immunity: Some(Duration::from_secs(20)), ..half("t", 1_000) };
        assert!(!immune.is_due(20_999, TIMEOUT));
        assert!(immune.is_due(21_000, TIMEOUT));
        assert!(half("t", 50_000).is_due(1_000, TIMEOUT), "a born time in the future is checked");
    }

    #[test]
    fn outcomes_are_read_from_the_transaction_types() {
        assert_eq!(Outcome::from_code(8), Some(Outcome::Commit));
        assert_eq!(Outcome::from_code(12), Some(Outcome::Rollback));
        assert_eq!(Outcome::from_code(0), Some(Outcome::Unknown));
        assert_eq!(Outcome::from_code(4), None);
    }
}
