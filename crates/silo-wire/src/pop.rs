//! POP consumption's client-visible strings (docs/protocol.md §2.16): the receipt handle a
//! client acknowledges with (`extraInfo`), and the three per-queue info strings of a pop
//! answer from which the client builds each message's handle.
//!
//! A handle is eight fields separated by single spaces, with an optional ninth that the proxy
//! appends:
//!
//! ```text
//! startOffset popTime invisibleTime reviveQid topicMark brokerName queueId queueOffset [commitLogOffset]
//! ```
//!
//! `topicMark` says which topic the message was popped from: `0` the topic itself, `1` the
//! group's retry topic `%RETRY%group_topic`, `2` the retry topic of the `+` form. A
//! `reviveQid` of 999 marks an orderly (FIFO) pop.
//!
//! The info strings are `;`-separated entries of `mark queueId value`, one per queue a pop
//! read: the queue's start offset (`startOffsetInfo`), its messages' queue offsets joined by
//! `,` (`msgOffsetInfo`), and for orderly pops how often the messages were handed out before
//! (`orderCountInfo`, whose `queueId` field may instead be `qo<queueId>%<offset>` for one
//! message).

use std::fmt::Write as _;

/// The `reviveQid` of an orderly pop.
pub const ORDER_REVIVE_QUEUE: i32 = 999;

/// Which topic of a group a popped message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMark {
    Normal,
    /// `%RETRY%group_topic`.
    Retry,
    /// `%RETRY%group+topic`.
    RetryV2,
}

impl TopicMark {
    /// The mark of a topic a message was read from.
    pub fn of_topic(topic: &str) -> Self {
        match topic.strip_prefix("%RETRY%") {
            None => TopicMark::Normal,
            Some(rest) if rest.contains('+') => TopicMark::RetryV2,
            Some(_) => TopicMark::Retry,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TopicMark::Normal => "0",
            TopicMark::Retry => "1",
            TopicMark::RetryV2 => "2",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "0" => Some(TopicMark::Normal),
            "1" => Some(TopicMark::Retry),
            "2" => Some(TopicMark::RetryV2),
            _ => None,
        }
    }

    /// The topic a message with this mark was popped from, for a pop of `topic` by `group`.
    pub fn real_topic(self, topic: &str, group: &str) -> String {
        match self {
            TopicMark::Normal => topic.to_owned(),
            TopicMark::Retry => retry_topic(group, topic),
            TopicMark::RetryV2 => format!("%RETRY%{group}+{topic}"),
        }
    }
}

/// The retry topic into which a group's unacknowledged pops of `topic` come back.
pub fn retry_topic(group: &str, topic: &str) -> String {
    format!("%RETRY%{group}_{topic}")
}

/// Why a receipt handle was refused: the field and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed receipt handle: {field} at byte {at}")]
pub struct HandleError {
    pub field: &'static str,
    pub at: usize,
}

/// A parsed receipt handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptHandle<'a> {
    /// The first queue offset the pop read in this queue (it names the pop's checkpoint).
    pub start_offset: i64,
    pub pop_time: i64,
    pub invisible_time: i64,
    pub revive_qid: i32,
    pub mark: TopicMark,
    pub broker_name: &'a str,
    pub queue_id: i32,
    /// The message's own queue offset (absent in handles of the seven-field form).
    pub queue_offset: Option<i64>,
    /// What the proxy appends: the message's commit-log offset.
    pub commit_log_offset: Option<i64>,
}

/// Longest handle accepted: a real one is under 100 bytes.
pub const MAX_HANDLE_LEN: usize = 1024;

const FIELDS: [&str; 9] = [
    "startOffset",
    "popTime",
    "invisibleTime",
    "reviveQid",
    "topicMark",
    "brokerName",
    "queueId",
    "queueOffset",
    "commitLogOffset",
];

impl<'a> ReceiptHandle<'a> {
    /// Parses a handle; seven fields at least, nine at most.
    pub fn parse(s: &'a str) -> Result<Self, HandleError> {
        if s.len() > MAX_HANDLE_LEN {
            return Err(HandleError { field: "length", at: MAX_HANDLE_LEN });
        }
        let mut parts: [(&str, usize); 9] = [("", 0); 9];
        let mut n = 0usize;
        let mut at = 0usize;
        for piece in s.split(' ') {
            let Some(slot) = parts.get_mut(n) else {
                return Err(HandleError { field: "end", at });
            };
            *slot = (piece, at);
            n = n.saturating_add(1);
            at = at.saturating_add(piece.len()).saturating_add(1);
        }
        if n < 7 {
            let field = FIELDS.get(n).copied().unwrap_or("end");
            return Err(HandleError { field, at: s.len() });
        }
        let field = |i: usize| parts.get(i).copied().unwrap_or(("", s.len()));
        let int = |i: usize| -> Result<i64, HandleError> {
            let (text, at) = field(i);
            let name = FIELDS.get(i).copied().unwrap_or("end");
            text.parse::<i64>().map_err(|_| HandleError { field: name, at })
        };
        let small = |i: usize| -> Result<i32, HandleError> {
            let (_, at) = field(i);
            let name = FIELDS.get(i).copied().unwrap_or("end");
            i32::try_from(int(i)?).map_err(|_| HandleError { field: name, at })
        };
        let (mark_text, mark_at) = field(4);
        let mark = TopicMark::parse(mark_text).ok_or(HandleError { field: "topicMark", at: mark_at })?;
        let (broker_name, broker_at) = field(5);
        if broker_name.is_empty() {
            return Err(HandleError { field: "brokerName", at: broker_at });
        }
        Ok(ReceiptHandle {
            start_offset: int(0)?,
            pop_time: int(1)?,
            invisible_time: int(2)?,
            revive_qid: small(3)?,
            mark,
            broker_name,
            queue_id: small(6)?,
            queue_offset: if n > 7 { Some(int(7)?) } else { None },
            commit_log_offset: if n > 8 { Some(int(8)?) } else { None },
        })
    }

    /// When the message becomes visible again, unless acknowledged or renewed.
    pub fn visible_at(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }

    pub fn is_order(&self) -> bool {
        self.revive_qid == ORDER_REVIVE_QUEUE
    }

    /// Writes the handle as the client builds it (eight fields, plus the ninth if present).
    pub fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "{} {} {} {} {} {} {}",
            self.start_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.mark.as_str(),
            self.broker_name,
            self.queue_id
        );
        if let Some(o) = self.queue_offset {
            let _ = write!(out, " {o}");
            if let Some(c) = self.commit_log_offset {
                let _ = write!(out, " {c}");
            }
        }
    }
}

impl std::fmt::Display for ReceiptHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::with_capacity(64);
        self.write(&mut s);
        f.write_str(&s)
    }
}

fn separate(out: &mut String) {
    if !out.is_empty() {
        out.push(';');
    }
}

/// Appends a `startOffsetInfo` entry.
pub fn push_start_offset(out: &mut String, mark: TopicMark, queue_id: i32, start_offset: i64) {
    separate(out);
    let _ = write!(out, "{} {queue_id} {start_offset}", mark.as_str());
}

/// Appends a `msgOffsetInfo` entry.
pub fn push_msg_offsets(out: &mut String, mark: TopicMark, queue_id: i32, offsets: impl IntoIterator<Item = i64>) {
    separate(out);
    let _ = write!(out, "{} {queue_id} ", mark.as_str());
    for (i, o) in offsets.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{o}");
    }
}

/// Appends an `orderCountInfo` entry for one message of a queue.
pub fn push_order_count(out: &mut String, mark: TopicMark, queue_id: i32, queue_offset: i64, count: i32) {
    separate(out);
    let _ = write!(out, "{} qo{queue_id}%{queue_offset} {count}", mark.as_str());
}

/// Appends an `orderCountInfo` entry for a whole queue.
pub fn push_queue_order_count(out: &mut String, mark: TopicMark, queue_id: i32, count: i32) {
    separate(out);
    let _ = write!(out, "{} {queue_id} {count}", mark.as_str());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn handles_round_trip_in_each_form() {
        for s in [
            "12 1700000000000 30000 3 0 broker-a 2 14",
            "12 1700000000000 30000 3 1 broker-a 0 14 88812",
            "0 1700000000000 60000 999 0 b 1",
        ] {
            let h = ReceiptHandle::parse(s).unwrap();
            assert_eq!(h.to_string(), s);
        }
        let h = ReceiptHandle::parse("12 1700000000000 30000 3 1 broker-a 0 14 88812").unwrap();
        assert_eq!((h.mark, h.queue_offset, h.commit_log_offset), (TopicMark::Retry, Some(14), Some(88812)));
        assert_eq!(h.visible_at(), 1_700_000_030_000);
        assert!(ReceiptHandle::parse("0 1 2 999 0 b 1").unwrap().is_order());
    }

    #[test]
    fn malformed_handles_say_which_field_and_where() {
        let e = |s: &str| ReceiptHandle::parse(s).unwrap_err();
        assert_eq!(e(""), HandleError { field: "popTime", at: 0 });
        assert_eq!(e("12 17 3 3 0 b"), HandleError { field: "queueId", at: 13 });
        assert_eq!(e("12 x 3 3 0 b 1 2"), HandleError { field: "popTime", at: 3 });
        assert_eq!(e("12 1 3 3 7 b 1 2"), HandleError { field: "topicMark", at: 9 });
        assert_eq!(e("12 1 3 3 0  1 2"), HandleError { field: "brokerName", at: 11 });
        assert_eq!(e("12 1 3 99999999999 0 b 1 2"), HandleError { field: "reviveQid", at: 7 });
        assert_eq!(e("1 2 3 4 0 b 1 2 3 4"), HandleError { field: "end", at: 18 });
        assert_eq!(e(&"9".repeat(2000)).field, "length");
    }

    #[test]
    fn info_strings_have_the_clients_grammar() {
        let mut start = String::new();
        push_start_offset(&mut start, TopicMark::Normal, 1, 40);
        push_start_offset(&mut start, TopicMark::Retry, 0, 3);
        assert_eq!(start, "0 1 40;1 0 3");
        let mut msgs = String::new();
        push_msg_offsets(&mut msgs, TopicMark::Normal, 1, [40, 41, 43]);
        assert_eq!(msgs, "0 1 40,41,43");
        let mut counts = String::new();
        push_order_count(&mut counts, TopicMark::Normal, 1, 40, 2);
        push_queue_order_count(&mut counts, TopicMark::Normal, 1, 0);
        assert_eq!(counts, "0 qo1%40 2;0 1 0");
    }

    #[test]
    fn retry_topics_name_their_group_and_topic() {
        assert_eq!(retry_topic("g", "Orders"), "%RETRY%g_Orders");
        assert_eq!(TopicMark::of_topic("%RETRY%g_Orders"), TopicMark::Retry);
        assert_eq!(TopicMark::of_topic("%RETRY%g+Orders"), TopicMark::RetryV2);
        assert_eq!(TopicMark::of_topic("Orders"), TopicMark::Normal);
        assert_eq!(TopicMark::Retry.real_topic("Orders", "g"), "%RETRY%g_Orders");
    }
}
