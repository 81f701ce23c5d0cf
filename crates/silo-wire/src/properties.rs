//! The message properties string (docs/protocol.md §3.5): `key \u{1} value \u{2} key \u{1} value \u{2} ...`.
//!
//! [`PropertiesView`] reads keys straight out of the raw bytes (a record in a mapped segment, a
//! header value) without building a map; [`write_properties`] appends pairs straight into an
//! output buffer, and [`properties_len`] tells their size beforehand so that an encoder can
//! allocate once.

use bytes::BufMut;

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};

/// Separates a key from its value.
pub const NAME_VALUE_SEPARATOR: u8 = 0x01;
/// Ends a key/value pair (optional after the last pair, depending on the writer's version).
pub const PROPERTY_SEPARATOR: u8 = 0x02;
/// The properties length is a signed 16-bit field.
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Well-known property keys (docs/protocol.md §3.6).
pub mod keys {
    pub const KEYS: &str = "KEYS";
    pub const TAGS: &str = "TAGS";
    pub const WAIT: &str = "WAIT";
    pub const DELAY: &str = "DELAY";
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
    pub const TRAN_MSG: &str = "TRAN_MSG";
    pub const PGROUP: &str = "PGROUP";
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    pub const REAL_QID: &str = "REAL_QID";
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    /// When a popped message was first handed out (set when it is revived).
    pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
    pub const CLUSTER: &str = "CLUSTER";
    pub const MSG_REGION: &str = "MSG_REGION";
    pub const TRACE_ON: &str = "TRACE_ON";
    pub const INNER_MULTI_DISPATCH: &str = "INNER_MULTI_DISPATCH";
    pub const INNER_MULTI_QUEUE_OFFSET: &str = "INNER_MULTI_QUEUE_OFFSET";
    pub const POP_CK: &str = "POP_CK";
    /// A FIFO message's group (5.x `message_group`): messages of one group keep their order.
    pub const SHARDING_KEY: &str = "__SHARDINGKEY";
    /// How long a transaction's half message waits before its first check, in seconds.
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
    /// The producer's host as it reported it (5.x SDKs).
    pub const BORN_HOST: &str = "__BORNHOST";
    pub const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
    /// Timer messages (5.x): an absolute delivery time in ms, or a delay in s or ms.
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    /// The wheel slot a timer message waits for (set by the broker).
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    /// When the timer was enqueued in the wheel and when it fired (set by the broker).
    pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
    pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
    /// How often a far timer has been put back into the timer topic on its way.
    pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
    /// A recall's delete marker: the key of the timer it cancels.
    pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
    /// Request-reply: the request's id, copied into its reply.
    pub const CORRELATION_ID: &str = "CORRELATION_ID";
    /// Request-reply: the client id of the requester, where the reply is pushed.
    pub const REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
    /// Request-reply: how long the requester waits, in ms.
    pub const TTL: &str = "TTL";
    /// `reply` on a reply message.
    pub const MSG_TYPE: &str = "MSG_TYPE";
    /// When the broker pushed a reply (ms), added to the pushed reply.
    pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
    /// Prefix of client-local keys that are never stored.
    pub const TRANSIENT_PREFIX: &str = "__RMQ.TRANSIENT.";
}

/// A validated, borrowed properties string. Lookups scan the bytes; nothing is allocated.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct PropertiesView<'a> {
    raw: &'a str,
}

impl std::fmt::Debug for PropertiesView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> PropertiesView<'a> {
    /// Checks the length limit and UTF-8; offsets in errors are relative to `raw`.
    pub fn parse(raw: &'a [u8]) -> Result<Self, DecodeError> {
        if raw.len() > MAX_PROPERTIES_LEN {
            return Err(DecodeError::new(0, DecodeErrorKind::PropertiesTooLong(raw.len())));
        }
        Self::parse_unbounded(raw)
    }

    /// Like [`parse`](Self::parse) but without the 32767-byte limit (header values may carry
    /// longer strings; the limit is enforced when a record is built).
    pub fn parse_unbounded(raw: &'a [u8]) -> Result<Self, DecodeError> {
        match std::str::from_utf8(raw) {
            Ok(raw) => Ok(Self { raw }),
            Err(e) => Err(DecodeError::new(e.valid_up_to(), DecodeErrorKind::InvalidUtf8 { field: "properties" })),
        }
    }

    /// A view over a string already known to be valid.
    #[must_use]
    pub fn from_valid(raw: &'a str) -> Self {
        Self { raw }
    }

    /// The raw properties text, exactly as stored.
    #[must_use]
    pub fn as_str(&self) -> &'a str {
        self.raw
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Entries in stored order, with the reader rules of docs/protocol.md §3.5: a pair without a `\u{1}`, or
    /// with an empty key or value, is skipped; the first `\u{1}` splits key from value.
    /// Duplicates are yielded as they occur (use [`get`](Self::get) for last-wins lookup).
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.raw.split(char::from(PROPERTY_SEPARATOR)).filter_map(|segment| {
            let (key, value) = segment.split_once(char::from(NAME_VALUE_SEPARATOR))?;
            (!key.is_empty() && !value.is_empty()).then_some((key, value))
        })
    }

    /// The value of `key`; when a key occurs more than once the last occurrence wins, as in Java.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.iter().filter(|(k, _)| *k == key).map(|(_, v)| v).last()
    }

    /// Appends every pair but those whose key is in `skip` to `out`, each followed by `\u{2}`:
    /// how a message stored again (a retry, a delivered delay, a dead letter) keeps its
    /// properties while the broker replaces some.
    pub fn push_without(&self, out: &mut String, skip: &[&str]) {
        for (key, value) in self.iter().filter(|(k, _)| !skip.contains(k)) {
            out.push_str(key);
            out.push(char::from(NAME_VALUE_SEPARATOR));
            out.push_str(value);
            out.push(char::from(PROPERTY_SEPARATOR));
        }
    }

    /// Whether the last pair is followed by a `\u{2}` (writers ≤4.9.0 and ≥5.2.0 do this).
    #[must_use]
    pub fn ends_with_separator(&self) -> bool {
        self.raw.as_bytes().last() == Some(&PROPERTY_SEPARATOR)
    }
}

fn check_pair(key: &str, value: &str) -> Result<(), EncodeError> {
    let is_sep = |b: &u8| *b == NAME_VALUE_SEPARATOR || *b == PROPERTY_SEPARATOR;
    if key.is_empty() || key.as_bytes().iter().any(is_sep) || value.as_bytes().contains(&PROPERTY_SEPARATOR) {
        return Err(EncodeError::BadProperty { key: key.to_owned() });
    }
    Ok(())
}

/// The encoded size of `pairs` as [`write_properties`] writes them (each pair followed by
/// `\u{2}`), validating keys and values on the way. Pairs with an empty value are skipped, as
/// Java skips nulls, since a reader would drop them anyway.
pub fn properties_len<'p, I>(pairs: I) -> Result<usize, EncodeError>
where
    I: IntoIterator<Item = (&'p str, &'p str)>,
{
    let mut total = 0usize;
    for (key, value) in pairs {
        if value.is_empty() {
            continue;
        }
        check_pair(key, value)?;
        total = total.saturating_add(key.len()).saturating_add(value.len()).saturating_add(2);
    }
    if total > MAX_PROPERTIES_LEN {
        return Err(EncodeError::PropertiesTooLong(total));
    }
    Ok(total)
}

/// Appends `pairs` as `key \u{1} value \u{2}` (the ≥5.2.0 form, with the trailing separator).
/// Call [`properties_len`] first: it validates what this writes.
pub fn write_properties<'p, I, B>(pairs: I, out: &mut B)
where
    I: IntoIterator<Item = (&'p str, &'p str)>,
    B: BufMut + ?Sized,
{
    for (key, value) in pairs {
        if value.is_empty() {
            continue;
        }
        out.put_slice(key.as_bytes());
        out.put_u8(NAME_VALUE_SEPARATOR);
        out.put_slice(value.as_bytes());
        out.put_u8(PROPERTY_SEPARATOR);
    }
}

/// Convenience for callers off the hot path: the properties string as bytes.
pub fn properties_to_vec<'p, I>(pairs: I) -> Result<Vec<u8>, EncodeError>
where
    I: IntoIterator<Item = (&'p str, &'p str)> + Clone,
{
    let len = properties_len(pairs.clone())?;
    let mut out = Vec::with_capacity(len);
    write_properties(pairs, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_copied_without_the_skipped_keys() {
        let view = PropertiesView::from_valid("DELAY\u{1}3\u{2}KEYS\u{1}k\u{2}WAIT\u{1}true\u{2}TAGS\u{1}t");
        let mut out = String::from("X\u{1}1\u{2}");
        view.push_without(&mut out, &[keys::DELAY, keys::WAIT]);
        assert_eq!(out, "X\u{1}1\u{2}KEYS\u{1}k\u{2}TAGS\u{1}t\u{2}");
    }

    #[test]
    fn accepts_both_trailing_separator_variants() {
        for raw in ["TAGS\u{1}a\u{2}KEYS\u{1}k1 k2\u{2}", "TAGS\u{1}a\u{2}KEYS\u{1}k1 k2"] {
            let view = PropertiesView::parse(raw.as_bytes()).unwrap();
            assert_eq!(view.get("TAGS"), Some("a"));
            assert_eq!(view.get("KEYS"), Some("k1 k2"));
            assert_eq!(view.iter().count(), 2);
        }
    }

    #[test]
    fn last_duplicate_wins_and_empty_entries_are_dropped() {
        let raw = "A\u{1}1\u{2}\u{1}x\u{2}B\u{1}\u{2}A\u{1}2\u{2}C\u{1}v\u{1}w\u{2}zz\u{2}";
        let view = PropertiesView::parse(raw.as_bytes()).unwrap();
        assert_eq!(view.get("A"), Some("2"));
        assert_eq!(view.get("B"), None);
        assert_eq!(view.get("C"), Some("v\u{1}w"));
        assert_eq!(view.get("zz"), None);
    }

    #[test]
    fn enforces_the_signed_16_bit_limit() {
        let long = "x".repeat(MAX_PROPERTIES_LEN);
        assert!(matches!(properties_len([("K", long.as_str())]), Err(EncodeError::PropertiesTooLong(_))));
        let raw = vec![b'a'; MAX_PROPERTIES_LEN + 1];
        let err = PropertiesView::parse(&raw).unwrap_err();
        assert_eq!(err.kind, DecodeErrorKind::PropertiesTooLong(MAX_PROPERTIES_LEN + 1));
    }

    #[test]
    fn rejects_separators_inside_keys() {
        assert!(properties_len([("A\u{1}B", "v")]).is_err());
        assert!(properties_len([("A", "v\u{2}")]).is_err());
        assert!(properties_len([("", "v")]).is_err());
    }

    #[test]
    fn reports_invalid_utf8_with_offset() {
        let err = PropertiesView::parse(b"AB\x01\xff\x02").unwrap_err();
        assert_eq!(err.offset, 3);
    }
}
