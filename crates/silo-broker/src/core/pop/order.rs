//! Orderly (FIFO) pops: a queue handed out to one consumer is held until its messages are
//! acknowledged or their invisible time runs out, and the next consumer waits. The queue's
//! committed offset moves only past acknowledged messages, so nothing is lost when the
//! broker stops; the holds themselves are kept in memory (and in
//! `config/consumerOrderInfo.json` at shutdown, so that a clean restart remembers partial
//! acknowledgements and delivery counts).

use std::collections::BTreeMap;
use std::hash::RandomState;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One queue of one group, as a hold names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey {
    pub topic: Arc<str>,
    pub group: Arc<str>,
    pub queue_id: i32,
}

/// A [`QueueKey`] borrowed from a request: hashes and compares as the owned one, so that
/// checking or acknowledging a hold allocates nothing.
#[derive(Debug, Clone, Copy, Hash)]
pub struct QueueRef<'a> {
    pub topic: &'a str,
    pub group: &'a str,
    pub queue_id: i32,
}

impl hashbrown::Equivalent<QueueKey> for QueueRef<'_> {
    fn equivalent(&self, k: &QueueKey) -> bool {
        self.queue_id == k.queue_id && self.topic == &*k.topic && self.group == &*k.group
    }
}

impl QueueRef<'_> {
    pub fn to_owned_key(&self) -> QueueKey {
        QueueKey { topic: self.topic.into(), group: self.group.into(), queue_id: self.queue_id }
    }
}

/// An orderly pop's hold on a queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderHold {
    pub pop_time: i64,
    pub invisible_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
    /// The messages handed out, by queue offset.
    pub offsets: Vec<i64>,
    /// Bit `i` set: `offsets[i]` acknowledged.
    pub acked: u64,
    /// How often each message was handed out before this time (its delivery attempt - 1).
    pub counts: Vec<i32>,
    /// The client the broker renews the hold for while it is connected (a gRPC push consumer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub renewals: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl OrderHold {
    pub fn visible_at(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    fn all_acked(&self) -> bool {
        let n = self.offsets.len().min(64);
        let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        self.acked & full == full
    }

    fn is_acked(&self, i: usize) -> bool {
        i < 64 && self.acked & (1u64 << i) != 0
    }

    /// Where the queue's committed offset may move: past the acknowledged prefix.
    fn commit_point(&self) -> Option<i64> {
        let mut next = None;
        for (i, &o) in self.offsets.iter().enumerate() {
            if !self.is_acked(i) {
                break;
            }
            next = Some(o.saturating_add(1));
        }
        next
    }
}

/// What acknowledging an orderly message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAck {
    /// The queue's committed offset moves to this (and the hold ends when all are acked).
    Commit { offset: i64, released: bool },
    /// Acknowledged, but an earlier message of the hold is not yet.
    Partial,
    /// Already acknowledged.
    Repeated,
    /// The queue holds no such message for this pop.
    Unknown,
}

#[derive(Debug, Default)]
pub struct OrderBook {
    holds: hashbrown::HashMap<QueueKey, OrderHold, RandomState>,
}

impl OrderBook {
    /// Whether the queue is held by another pop at `now` (a pop with the same attempt id is
    /// the same consumer asking again, and gets the held messages again).
    pub fn blocked(&self, key: &QueueRef<'_>, now: i64, attempt_id: Option<&str>) -> bool {
        let Some(hold) = self.holds.get(key) else { return false };
        if hold.all_acked() || now >= hold.visible_at() {
            return false;
        }
        !(attempt_id.is_some() && hold.attempt_id.as_deref() == attempt_id)
    }

    /// Records a pop of `offsets` and returns each message's delivery count before it.
    pub fn hold(
        &mut self,
        key: &QueueRef<'_>,
        pop_time: i64,
        invisible_time: i64,
        attempt_id: Option<&str>,
        owner: Option<&str>,
        offsets: &[i64],
    ) -> &[i32] {
        let previous = self.holds.remove(key);
        let counts = offsets
            .iter()
            .map(|o| {
                previous.as_ref().and_then(|p| p.offsets.iter().position(|x| x == o).map(|i| (p, i))).map_or(
                    0,
                    |(p, i)| {
                        let before = p.counts.get(i).copied().unwrap_or(0);
                        // The same attempt asking again is not a new delivery.
                        let same = attempt_id.is_some() && p.attempt_id.as_deref() == attempt_id;
                        if same { before } else { before.saturating_add(1) }
                    },
                )
            })
            .collect();
        let hold = OrderHold {
            pop_time,
            invisible_time,
            attempt_id: attempt_id.map(str::to_owned),
            offsets: offsets.to_vec(),
            acked: 0,
            counts,
            owner: owner.map(str::to_owned),
            renewals: 0,
        };
        &self.holds.entry(key.to_owned_key()).or_insert(hold).counts
    }

    pub fn ack(&mut self, key: &QueueRef<'_>, pop_time: i64, offset: i64) -> OrderAck {
        let Some(hold) = self.holds.get_mut(key) else { return OrderAck::Unknown };
        let Some(i) = hold.offsets.iter().position(|&o| o == offset).filter(|&i| i < 64) else {
            return OrderAck::Unknown;
        };
        if hold.pop_time != pop_time && !hold.is_acked(i) {
            // A handle of an earlier pop of the queue: that delivery is over.
            return OrderAck::Unknown;
        }
        if hold.is_acked(i) {
            return OrderAck::Repeated;
        }
        hold.acked |= 1u64 << i;
        let released = hold.all_acked();
        let commit = hold.commit_point();
        if released {
            self.holds.remove(key);
        }
        match commit {
            Some(offset) => OrderAck::Commit { offset, released },
            None => OrderAck::Partial,
        }
    }

    /// Keeps the hold of the pop at `pop_time` holding `offset` until `until` (at least);
    /// returns whether it held it.
    pub fn renew(&mut self, key: &QueueRef<'_>, pop_time: i64, offset: i64, until: i64) -> bool {
        let Some(hold) = self.holds.get_mut(key) else { return false };
        if hold.pop_time != pop_time || !hold.offsets.contains(&offset) {
            return false;
        }
        hold.invisible_time = hold.invisible_time.max(until.saturating_sub(pop_time));
        true
    }

    /// Renews the owned holds that would let go within `ahead` of `now`, for owners `alive`
    /// says are connected: each by `step(renewals)`, for at most `max` after its pop. Returns
    /// how many were renewed.
    pub fn renew_owned(
        &mut self,
        now: i64,
        ahead: i64,
        max: i64,
        step: impl Fn(u32) -> i64,
        alive: &dyn Fn(&str) -> bool,
    ) -> usize {
        let mut renewed = 0;
        for hold in self.holds.values_mut() {
            let Some(owner) = hold.owner.as_deref() else { continue };
            if hold.all_acked() || hold.visible_at() > now.saturating_add(ahead) || now >= hold.visible_at() {
                continue;
            }
            if now.saturating_sub(hold.pop_time) >= max || !alive(owner) {
                continue;
            }
            let until = now.saturating_add(step(hold.renewals)).min(hold.pop_time.saturating_add(max));
            if until > hold.visible_at() {
                hold.invisible_time = until.saturating_sub(hold.pop_time);
                hold.renewals = hold.renewals.saturating_add(1);
                renewed += 1;
            }
        }
        renewed
    }

    /// A hold's messages were never handed on (the client went away first): the hold lets go
    /// by `until` and is its owner's no more. Returns whether the hold was that pop's.
    pub fn give_back(&mut self, key: &QueueRef<'_>, pop_time: i64, offset: i64, until: i64) -> bool {
        let Some(hold) = self.holds.get_mut(key) else { return false };
        if hold.pop_time != pop_time || !hold.offsets.contains(&offset) {
            return false;
        }
        hold.invisible_time = hold.invisible_time.min(until.saturating_sub(pop_time));
        hold.owner = None;
        true
    }

    /// The earliest time an owned hold not lapsed at `now` lets go (what the renewal must come
    /// before).
    pub fn next_owned_visible(&self, now: i64) -> Option<i64> {
        self.holds
            .values()
            .filter(|h| h.owner.is_some() && !h.all_acked() && h.visible_at() > now)
            .map(OrderHold::visible_at)
            .min()
    }

    /// A client is terminating: its holds let go `release` after `now` (or when due, if
    /// sooner) and are its no more. Returns how many.
    pub fn release_owned(&mut self, owner: &str, now: i64, release: i64) -> usize {
        let mut released = 0;
        for hold in self.holds.values_mut().filter(|h| h.owner.as_deref() == Some(owner)) {
            let soon = now.saturating_add(release).saturating_sub(hold.pop_time);
            hold.invisible_time = hold.invisible_time.min(soon);
            hold.owner = None;
            released += 1;
        }
        released
    }

    pub fn get(&self, key: &QueueRef<'_>) -> Option<&OrderHold> {
        self.holds.get(key)
    }

    /// The holds for `config/consumerOrderInfo.json`: `topic@group` → queue → hold.
    pub fn snapshot(&self) -> OrderInfoFile {
        let mut table: BTreeMap<String, BTreeMap<i32, OrderHold>> = BTreeMap::new();
        for (k, h) in &self.holds {
            table.entry(format!("{}@{}", k.topic, k.group)).or_default().insert(k.queue_id, h.clone());
        }
        OrderInfoFile { table }
    }

    pub fn restore(&mut self, file: OrderInfoFile) {
        for (name, queues) in file.table {
            let Some((topic, group)) = name.split_once('@') else { continue };
            for (queue_id, hold) in queues {
                if hold.offsets.len() == hold.counts.len() && hold.offsets.len() <= 64 {
                    let key = QueueKey { topic: topic.into(), group: group.into(), queue_id };
                    self.holds.insert(key, hold);
                }
            }
        }
    }
}

/// `config/consumerOrderInfo.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrderInfoFile {
    pub table: BTreeMap<String, BTreeMap<i32, OrderHold>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> QueueRef<'static> {
        QueueRef { topic: "T", group: "g", queue_id: 0 }
    }

    #[test]
    fn a_held_queue_blocks_others_until_acked_or_visible_again() {
        let mut book = OrderBook::default();
        assert!(!book.blocked(&key(), 0, None));
        assert_eq!(book.hold(&key(), 1000, 500, Some("a"), None, &[3, 4]), &[0, 0]);
        assert!(book.blocked(&key(), 1200, None));
        assert!(book.blocked(&key(), 1200, Some("b")));
        assert!(!book.blocked(&key(), 1200, Some("a")));
        assert!(!book.blocked(&key(), 1500, None));
        assert_eq!(book.ack(&key(), 1000, 4), OrderAck::Partial);
        assert_eq!(book.ack(&key(), 1000, 3), OrderAck::Commit { offset: 5, released: true });
        assert!(!book.blocked(&key(), 1200, None));
    }

    #[test]
    fn a_redelivered_message_counts_its_earlier_deliveries() {
        let mut book = OrderBook::default();
        book.hold(&key(), 1000, 500, None, None, &[3, 4]);
        assert_eq!(book.hold(&key(), 1600, 500, None, None, &[3, 4, 5]), &[1, 1, 0]);
        assert_eq!(book.hold(&key(), 2200, 500, None, None, &[3]), &[2]);
        // A handle of the earlier pop acknowledges nothing.
        assert_eq!(book.ack(&key(), 1600, 3), OrderAck::Unknown);
        assert_eq!(book.ack(&key(), 2200, 3), OrderAck::Commit { offset: 4, released: true });
    }
}
