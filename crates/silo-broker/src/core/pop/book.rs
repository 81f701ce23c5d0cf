//! The broker's memory of unacknowledged pops: one checkpoint per pop of one queue, with the
//! time its messages become visible again and which of them were acknowledged. It is a
//! projection of the pop journal ([`super::journal`]): every change is first appended there,
//! and [`PopBook::apply`] rebuilds the same state from the records when the broker opens.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::RandomState;
use std::sync::Arc;

/// Looked up by [`KeyRef`] without building an owned key (an ack allocates nothing).
type HashMap<K, V> = hashbrown::HashMap<K, V, RandomState>;

use super::journal::{AckRecord, BatchAckRecord, CheckpointRecord, JournalRecord};

/// Names one checkpoint, as an acknowledgement names it: the group, the topic popped from,
/// the queue, the pop's first offset in it and the pop's time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CheckpointKey {
    pub group: Arc<str>,
    pub topic: Arc<str>,
    pub queue_id: i32,
    pub start_offset: i64,
    pub pop_time: i64,
}

/// A [`CheckpointKey`] borrowed from a request: hashes and compares as the owned one.
#[derive(Debug, Clone, Copy, Hash)]
pub struct KeyRef<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    pub queue_id: i32,
    pub start_offset: i64,
    pub pop_time: i64,
}

impl hashbrown::Equivalent<CheckpointKey> for KeyRef<'_> {
    fn equivalent(&self, k: &CheckpointKey) -> bool {
        self.queue_id == k.queue_id
            && self.start_offset == k.start_offset
            && self.pop_time == k.pop_time
            && self.group == &*k.group
            && self.topic == &*k.topic
    }
}

impl CheckpointKey {
    pub fn as_ref(&self) -> KeyRef<'_> {
        KeyRef {
            group: &self.group,
            topic: &self.topic,
            queue_id: self.queue_id,
            start_offset: self.start_offset,
            pop_time: self.pop_time,
        }
    }
}

/// One unacknowledged pop of one queue.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub revive_qid: i32,
    /// Where its record is in the revive queue.
    pub revive_offset: i64,
    pub invisible_time: i64,
    /// The messages' queue offsets.
    pub offsets: Vec<i64>,
    /// Bit `i` set: `offsets[i]` is acknowledged (or revived).
    pub acked: u64,
    /// The client whose pop the broker renews while it is connected (gRPC `auto_renew`).
    pub owner: Option<Arc<str>>,
    /// Renewals so far (each extends the invisible time by a longer step).
    pub renewals: u32,
}

impl Checkpoint {
    pub fn visible_at(&self, key: &CheckpointKey) -> i64 {
        key.pop_time.saturating_add(self.invisible_time)
    }

    fn all_acked(&self) -> bool {
        let n = self.offsets.len().min(64);
        let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        self.acked & full == full
    }

    pub fn index_of(&self, offset: i64) -> Option<usize> {
        self.offsets.iter().position(|&o| o == offset).filter(|&i| i < 64)
    }

    pub fn is_acked(&self, index: usize) -> bool {
        index < 64 && self.acked & (1u64 << index) != 0
    }

    /// The offsets not acknowledged yet.
    pub fn unacked(&self) -> impl Iterator<Item = i64> + '_ {
        self.offsets.iter().enumerate().filter(|(i, _)| !self.is_acked(*i)).map(|(_, &o)| o)
    }
}

/// What an acknowledgement found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckLookup {
    /// The checkpoint holds the message and it is not acknowledged yet.
    Pending,
    /// Already acknowledged (a repeated ack).
    AlreadyAcked,
    /// No checkpoint of that name holds that offset (revived, never popped, or forged).
    Unknown,
}

#[derive(Debug, Default)]
pub struct PopBook {
    checkpoints: HashMap<CheckpointKey, Checkpoint>,
    /// (visible at, key): which checkpoints come due first.
    due: BTreeSet<(i64, CheckpointKey)>,
    /// Per revive queue, the live checkpoints by journal position: the smallest is how far
    /// the journal's progress may be committed.
    live: BTreeMap<i32, BTreeMap<i64, CheckpointKey>>,
    /// Fully acknowledged checkpoints, kept until their invisible time has passed so that a
    /// repeated acknowledgement is recognised as one; by the time they were visible again.
    completed: HashMap<CheckpointKey, Checkpoint>,
    completed_by_time: BTreeSet<(i64, CheckpointKey)>,
    /// Messages held, for the operator's figures.
    held: usize,
    /// Group and topic names, shared by the keys that name them.
    names: hashbrown::HashSet<Arc<str>, RandomState>,
    /// Checkpoints with an owner.
    owned: usize,
}

impl PopBook {
    pub fn len(&self) -> usize {
        self.checkpoints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.checkpoints.is_empty()
    }

    /// Unacknowledged messages across every checkpoint.
    pub fn held_messages(&self) -> usize {
        self.held
    }

    /// The shared copy of a group or topic name (allocated once per name).
    pub fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return Arc::clone(n);
        }
        let n: Arc<str> = name.into();
        self.names.insert(Arc::clone(&n));
        n
    }

    pub fn insert(&mut self, key: CheckpointKey, ck: Checkpoint) {
        // A new pop is the broker's "now": what completed before it and is visible since can go.
        self.forget_completed(key.pop_time);
        if self.checkpoints.contains_key(&key) {
            self.update(&key, ck);
            return;
        }
        // A later record of a checkpoint already finished (a renewal journaled just before its
        // last ack): it stays finished.
        if self.completed.contains_key(&key) {
            return;
        }
        if ck.owner.is_some() {
            self.owned = self.owned.saturating_add(1);
        }
        self.held = self.held.saturating_add(ck.unacked().count());
        self.due.insert((ck.visible_at(&key), key.clone()));
        self.live.entry(ck.revive_qid).or_default().insert(ck.revive_offset, key.clone());
        self.checkpoints.insert(key, ck);
    }

    /// A later record of a checkpoint the book holds (a renewal, or its release): its invisible
    /// time, owner and renewals replace the held ones; acknowledged bits add. The checkpoint
    /// keeps its first journal position: the journal's progress may not pass it, so a replay
    /// always starts at or before the first record and reads every ack written since.
    fn update(&mut self, key: &CheckpointKey, ck: Checkpoint) {
        let Some(held) = self.checkpoints.get(key) else { return };
        let old_at = held.visible_at(key);
        self.due.remove(&(old_at, key.clone()));
        self.due.insert((ck.visible_at(key), key.clone()));
        let owned_before = held.owner.is_some();
        let Some(held) = self.checkpoints.get_mut(key) else { return };
        let newly_acked = (ck.acked & !held.acked).count_ones() as usize;
        held.acked |= ck.acked;
        held.invisible_time = ck.invisible_time;
        held.owner = ck.owner;
        held.renewals = ck.renewals;
        let owned_after = held.owner.is_some();
        self.held = self.held.saturating_sub(newly_acked);
        match (owned_before, owned_after) {
            (false, true) => self.owned = self.owned.saturating_add(1),
            (true, false) => self.owned = self.owned.saturating_sub(1),
            _ => {}
        }
        let all = self.checkpoints.get(key).is_some_and(Checkpoint::all_acked);
        if all && let Some((owned, done)) = self.remove(&key.as_ref()) {
            let at = done.visible_at(&owned);
            self.completed_by_time.insert((at, owned.clone()));
            self.completed.insert(owned, done);
        }
    }

    /// [`Self::update`] if the book still holds the checkpoint; nothing otherwise.
    pub fn update_if_held(&mut self, key: &CheckpointKey, ck: Checkpoint) {
        if self.checkpoints.contains_key(key) {
            self.update(key, ck);
        }
    }

    /// Whether any checkpoint has an owner (renewal has work to do).
    pub fn has_owned(&self) -> bool {
        self.owned > 0
    }

    /// The owned checkpoints that come due by `until`, earliest first: what the broker renews.
    pub fn renewable(&self, until: i64) -> Vec<(CheckpointKey, Checkpoint)> {
        if self.owned == 0 {
            return Vec::new();
        }
        self.due
            .iter()
            .take_while(|(at, _)| *at <= until)
            .filter_map(|(_, k)| {
                self.checkpoints.get(k).filter(|ck| ck.owner.is_some()).map(|ck| (k.clone(), ck.clone()))
            })
            .collect()
    }

    /// The checkpoints `owner` holds.
    pub fn owned_by(&self, owner: &str) -> Vec<(CheckpointKey, Checkpoint)> {
        if self.owned == 0 {
            return Vec::new();
        }
        self.checkpoints
            .iter()
            .filter(|(_, ck)| ck.owner.as_deref() == Some(owner))
            .map(|(k, ck)| (k.clone(), ck.clone()))
            .collect()
    }

    pub fn get(&self, key: &KeyRef<'_>) -> Option<&Checkpoint> {
        self.checkpoints.get(key)
    }

    pub fn lookup(&self, key: &KeyRef<'_>, offset: i64) -> AckLookup {
        if self.completed.get(key).is_some_and(|ck| ck.index_of(offset).is_some()) {
            return AckLookup::AlreadyAcked;
        }
        match self.checkpoints.get(key).and_then(|ck| ck.index_of(offset).map(|i| ck.is_acked(i))) {
            None => AckLookup::Unknown,
            Some(true) => AckLookup::AlreadyAcked,
            Some(false) => AckLookup::Pending,
        }
    }

    /// Marks `offset` of checkpoint `key` acknowledged; drops the checkpoint once all are.
    /// Returns whether it was pending.
    pub fn ack(&mut self, key: &KeyRef<'_>, offset: i64) -> bool {
        let Some(ck) = self.checkpoints.get_mut(key) else { return false };
        let Some(i) = ck.index_of(offset) else { return false };
        if ck.is_acked(i) {
            return false;
        }
        ck.acked |= 1u64 << i;
        self.held = self.held.saturating_sub(1);
        if ck.all_acked()
            && let Some((owned, done)) = self.remove(key)
        {
            let at = done.visible_at(&owned);
            self.completed_by_time.insert((at, owned.clone()));
            self.completed.insert(owned, done);
        }
        true
    }

    /// Forgets completed checkpoints that became visible before `now`.
    pub fn forget_completed(&mut self, now: i64) {
        while let Some((at, _)) = self.completed_by_time.first() {
            if *at > now {
                break;
            }
            if let Some((_, key)) = self.completed_by_time.pop_first() {
                self.completed.remove(&key);
            }
        }
    }

    pub fn remove(&mut self, key: &KeyRef<'_>) -> Option<(CheckpointKey, Checkpoint)> {
        let (key, ck) = self.checkpoints.remove_entry(key)?;
        self.held = self.held.saturating_sub(ck.unacked().count());
        if ck.owner.is_some() {
            self.owned = self.owned.saturating_sub(1);
        }
        let due = (ck.visible_at(&key), key);
        self.due.remove(&due);
        let key = due.1;
        self.live.get_mut(&ck.revive_qid).and_then(|q| q.remove(&ck.revive_offset));
        if self.live.get(&ck.revive_qid).is_some_and(BTreeMap::is_empty) {
            self.live.remove(&ck.revive_qid);
        }
        Some((key, ck))
    }

    /// The checkpoints due at `now` (visible again with messages unacknowledged), earliest
    /// first, at most `limit`; they stay in the book until revived.
    pub fn due(&self, now: i64, limit: usize) -> Vec<(CheckpointKey, Checkpoint)> {
        self.due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .filter_map(|(_, k)| self.checkpoints.get(k).map(|ck| (k.clone(), ck.clone())))
            .collect()
    }

    /// The earliest time a checkpoint comes due.
    pub fn next_due(&self) -> Option<i64> {
        self.due.first().map(|(at, _)| *at)
    }

    /// The smallest journal position still needed in revive queue `qid`, if any.
    pub fn oldest_live(&self, qid: i32) -> Option<i64> {
        self.live.get(&qid).and_then(|q| q.first_key_value()).map(|(o, _)| *o)
    }

    /// Applies one journal record read back at open.
    pub fn apply(&mut self, record: JournalRecord, revive_qid: i32) {
        match record {
            JournalRecord::Checkpoint(ck) => {
                let (key, ck) = from_record(ck, revive_qid);
                self.insert(key, ck);
            }
            JournalRecord::Ack(AckRecord { ack_offset, start_offset, group, topic, queue_id, pop_time, .. }) => {
                let key = KeyRef { group: &group, topic: &topic, queue_id, start_offset, pop_time };
                self.ack(&key, ack_offset);
            }
            JournalRecord::BatchAck(BatchAckRecord {
                ack_offsets,
                start_offset,
                group,
                topic,
                queue_id,
                pop_time,
                ..
            }) => {
                let key = KeyRef { group: &group, topic: &topic, queue_id, start_offset, pop_time };
                for o in ack_offsets {
                    self.ack(&key, o);
                }
            }
        }
    }
}

/// A checkpoint record as the book keeps it.
pub fn from_record(ck: CheckpointRecord, revive_qid: i32) -> (CheckpointKey, Checkpoint) {
    let offsets: Vec<i64> =
        ck.queue_offset_diff.iter().map(|&d| ck.start_offset.saturating_add(i64::from(d))).collect();
    let acked = u64::from(ck.bit_map as u32);
    let key = CheckpointKey {
        group: ck.group.into(),
        topic: ck.topic.into(),
        queue_id: ck.queue_id,
        start_offset: ck.start_offset,
        pop_time: ck.pop_time,
    };
    let owner = ck.owner.map(Arc::from);
    let renewals = ck.renewals;
    (
        key,
        Checkpoint {
            revive_qid,
            revive_offset: ck.revive_offset,
            invisible_time: ck.invisible_time,
            offsets,
            acked,
            owner,
            renewals,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(start: i64) -> CheckpointKey {
        CheckpointKey { group: "g".into(), topic: "T".into(), queue_id: 0, start_offset: start, pop_time: 1000 }
    }

    fn key(start: i64) -> KeyRef<'static> {
        KeyRef { group: "g", topic: "T", queue_id: 0, start_offset: start, pop_time: 1000 }
    }

    fn ck(revive_offset: i64, offsets: &[i64], invisible: i64) -> Checkpoint {
        Checkpoint {
            revive_qid: 0,
            revive_offset,
            invisible_time: invisible,
            offsets: offsets.to_vec(),
            acked: 0,
            owner: None,
            renewals: 0,
        }
    }

    #[test]
    fn a_checkpoint_leaves_once_every_message_is_acknowledged() {
        let mut book = PopBook::default();
        book.insert(owned(10), ck(0, &[10, 11, 13], 5000));
        assert_eq!(book.held_messages(), 3);
        assert_eq!(book.lookup(&key(10), 12), AckLookup::Unknown);
        assert!(book.ack(&key(10), 11));
        assert_eq!(book.lookup(&key(10), 11), AckLookup::AlreadyAcked);
        assert!(!book.ack(&key(10), 11));
        assert!(book.ack(&key(10), 10) && book.ack(&key(10), 13));
        assert!(book.is_empty());
        assert_eq!(book.lookup(&key(10), 13), AckLookup::AlreadyAcked, "a repeated ack is known as one");
        book.forget_completed(6000);
        assert_eq!(book.lookup(&key(10), 13), AckLookup::Unknown);
        assert_eq!((book.held_messages(), book.oldest_live(0), book.next_due()), (0, None, None));
    }

    #[test]
    fn due_checkpoints_come_earliest_first_and_hold_back_the_journal() {
        let mut book = PopBook::default();
        book.insert(owned(20), ck(7, &[20], 9000));
        book.insert(owned(10), ck(5, &[10], 3000));
        assert_eq!(book.oldest_live(0), Some(5));
        assert!(book.due(3999, 10).is_empty());
        let due = book.due(4000, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].0, owned(10));
        book.remove(&key(10));
        assert_eq!((book.oldest_live(0), book.next_due()), (Some(7), Some(10_000)));
    }

    #[test]
    fn the_journal_rebuilds_the_same_book() {
        let mut book = PopBook::default();
        let record = CheckpointRecord {
            start_offset: 10,
            pop_time: 1000,
            invisible_time: 3000,
            bit_map: 0,
            num: 2,
            queue_id: 0,
            topic: "T".into(),
            group: "g".into(),
            revive_offset: 4,
            queue_offset_diff: vec![0, 2],
            broker_name: None,
            re_put_times: 0,
            owner: None,
            renewals: 0,
        };
        book.apply(JournalRecord::Checkpoint(record), 0);
        book.apply(
            JournalRecord::Ack(AckRecord {
                ack_offset: 12,
                start_offset: 10,
                group: "g".into(),
                topic: "T".into(),
                queue_id: 0,
                pop_time: 1000,
                broker_name: None,
            }),
            0,
        );
        assert_eq!(book.lookup(&key(10), 10), AckLookup::Pending);
        assert_eq!(book.lookup(&key(10), 12), AckLookup::AlreadyAcked);
        assert_eq!(book.oldest_live(0), Some(4));
    }
}
