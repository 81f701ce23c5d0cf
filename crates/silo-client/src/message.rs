//! Messages going out and coming in, and the queues they live in.

use std::borrow::Cow;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};

use bytes::Bytes;
use silo_wire::properties::{PropertiesView, keys};
use silo_wire::record::{RecordMeta, StoredRecord, sys_flag};

use crate::error::ClientError;

/// One queue of a topic on one broker.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
}

impl std::fmt::Display for MessageQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}#{}", self.topic, self.broker_name, self.queue_id)
    }
}

/// A message to send.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub body: Bytes,
    pub tags: Option<String>,
    /// Index keys (stored space-separated in `KEYS`).
    pub keys: Vec<String>,
    /// User properties.
    pub properties: Vec<(String, String)>,
    /// The user flag.
    pub flag: i32,
    /// Delay level (1..=18, docs/protocol.md §4.12), for scheduled delivery.
    pub delay_level: Option<u8>,
}

impl Message {
    #[must_use]
    pub fn new(body: impl Into<Bytes>) -> Self {
        Self { body: body.into(), ..Self::default() }
    }

    #[must_use]
    pub fn with_tags(mut self, tags: impl Into<String>) -> Self {
        self.tags = Some(tags.into());
        self
    }

    #[must_use]
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.keys.push(key.into());
        self
    }

    #[must_use]
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }

    /// Renders the properties string of this message with its unique id and `WAIT`.
    pub(crate) fn properties_string(&self, uniq_id: &str, wait: bool) -> Result<String, ClientError> {
        let mut out = String::with_capacity(64);
        let mut put = |k: &str, v: &str| -> Result<(), ClientError> {
            if k.is_empty() || [k, v].iter().any(|s| s.contains(['\u{1}', '\u{2}'])) {
                return Err(ClientError::InvalidArgument(format!(
                    "property {k:?}: names must be non-empty and neither names nor values may hold \\u0001 or \\u0002"
                )));
            }
            out.push_str(k);
            out.push('\u{1}');
            out.push_str(v);
            out.push('\u{2}');
            Ok(())
        };
        if let Some(tags) = self.tags.as_deref().filter(|t| !t.is_empty()) {
            put(keys::TAGS, tags)?;
        }
        if !self.keys.is_empty() {
            put(keys::KEYS, &self.keys.join(" "))?;
        }
        if let Some(level) = self.delay_level.filter(|l| *l > 0) {
            put(keys::DELAY, &level.to_string())?;
        }
        put(keys::WAIT, if wait { "true" } else { "false" })?;
        put(keys::UNIQ_KEY, uniq_id)?;
        for (k, v) in &self.properties {
            put(k, v)?;
        }
        if out.len() > silo_wire::properties::MAX_PROPERTIES_LEN {
            return Err(ClientError::InvalidArgument(format!(
                "the properties take {} bytes; at most 32767 fit",
                out.len()
            )));
        }
        Ok(out)
    }
}

/// A message read from a broker: the stored record, its parts sliced out of the response
/// without copying.
#[derive(Debug, Clone)]
pub struct ReceivedMessage {
    pub meta: RecordMeta,
    topic: Bytes,
    body: Bytes,
    properties: Bytes,
}

impl ReceivedMessage {
    /// Slices `record`'s parts out of `input`, the buffer it was decoded from.
    pub(crate) fn from_record(input: &Bytes, record: &StoredRecord<'_>) -> Self {
        Self {
            meta: record.meta,
            topic: input.slice_ref(record.topic.as_bytes()),
            body: input.slice_ref(record.body),
            properties: input.slice_ref(record.properties.as_str().as_bytes()),
        }
    }

    /// Every record in a pull or query body.
    pub(crate) fn decode_all(input: &Bytes) -> Result<Vec<Self>, ClientError> {
        let mut walker = silo_wire::RecordWalker::new(input);
        let mut out = Vec::new();
        for record in walker.by_ref() {
            out.push(Self::from_record(input, &record));
        }
        if let Some(silo_wire::record::WalkStop::Invalid(e)) = walker.stop() {
            return Err(ClientError::Decode(e.clone()));
        }
        Ok(out)
    }

    #[must_use]
    pub fn topic(&self) -> &str {
        // Checked to be UTF-8 when the record was decoded.
        std::str::from_utf8(&self.topic).unwrap_or_default()
    }

    /// The body as stored (compressed if the producer compressed it).
    #[must_use]
    pub fn raw_body(&self) -> &Bytes {
        &self.body
    }

    /// The body, inflated if the producer compressed it (Java producers compress bodies over
    /// 4 KiB with zlib).
    pub fn body(&self) -> Result<Cow<'_, [u8]>, ClientError> {
        if self.meta.sys_flag & sys_flag::COMPRESSED == 0 {
            return Ok(Cow::Borrowed(&self.body));
        }
        // Bits 8..10 name the algorithm; 0 (older brokers) and 3 both mean zlib.
        let kind = (self.meta.sys_flag & sys_flag::COMPRESSION_TYPE_MASK) >> 8;
        if kind != 0 && kind != 3 {
            return Err(ClientError::InvalidArgument(format!(
                "message body compressed with algorithm {kind} (LZ4 = 1, ZSTD = 2): only zlib is supported"
            )));
        }
        let mut out = Vec::with_capacity(self.body.len().saturating_mul(4).min(16 << 20));
        // Bounded: a body cannot inflate past the broker's largest message.
        flate2::read::ZlibDecoder::new(&self.body[..])
            .take(64 << 20)
            .read_to_end(&mut out)
            .map_err(|e| ClientError::InvalidArgument(format!("compressed body does not inflate: {e}")))?;
        Ok(Cow::Owned(out))
    }

    #[must_use]
    pub fn properties(&self) -> PropertiesView<'_> {
        PropertiesView::from_valid(std::str::from_utf8(&self.properties).unwrap_or_default())
    }

    #[must_use]
    pub fn tags(&self) -> Option<&str> {
        self.properties().get(keys::TAGS)
    }

    /// The index keys.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.properties().get(keys::KEYS).unwrap_or_default().split(' ').filter(|k| !k.is_empty())
    }

    /// The producer's unique id, or the offset id for messages sent without one.
    #[must_use]
    pub fn msg_id(&self) -> String {
        match self.properties().get(keys::UNIQ_KEY) {
            Some(id) => id.to_owned(),
            None => self.offset_msg_id(),
        }
    }

    /// The broker's id of the stored record (what VIEW_MESSAGE_BY_ID takes).
    #[must_use]
    pub fn offset_msg_id(&self) -> String {
        silo_wire::msgid::offset_msg_id(self.meta.store_host, self.meta.physical_offset).to_string()
    }

    #[must_use]
    pub fn queue_id(&self) -> i32 {
        self.meta.queue_id
    }

    #[must_use]
    pub fn queue_offset(&self) -> i64 {
        self.meta.queue_offset
    }

    #[must_use]
    pub fn born_timestamp(&self) -> i64 {
        self.meta.born_timestamp
    }

    #[must_use]
    pub fn store_timestamp(&self) -> i64 {
        self.meta.store_timestamp
    }

    #[must_use]
    pub fn reconsume_times(&self) -> i32 {
        self.meta.reconsume_times
    }
}

/// Makes producer unique ids (`UNIQ_KEY`, docs/protocol.md §3.7) without allocating: address, process,
/// a per-process random value, the time since the start of the month and a counter.
#[derive(Debug)]
pub struct UniqIdGenerator {
    ip: [u8; 4],
    pid: u16,
    instance_hash: i32,
    counter: AtomicU16,
}

impl UniqIdGenerator {
    #[must_use]
    pub fn new(local: Option<SocketAddr>) -> Self {
        let ip = match local {
            Some(SocketAddr::V4(a)) => a.ip().octets(),
            _ => [127, 0, 0, 1],
        };
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let pid = std::process::id();
        let instance_hash = i32::from_ne_bytes((nanos ^ pid.rotate_left(16)).to_ne_bytes());
        Self { ip, pid: (pid & 0xFFFF) as u16, instance_hash, counter: AtomicU16::new(0) }
    }

    #[must_use]
    pub fn next(&self) -> silo_wire::msgid::MsgIdBuf {
        let now_ms = now_millis();
        silo_wire::msgid::uniq_id(silo_wire::msgid::UniqIdParts {
            ip: self.ip,
            pid: self.pid,
            instance_hash: self.instance_hash,
            ms_since_month_start: i32::try_from(now_ms - month_start_millis(now_ms)).unwrap_or(0),
            counter: self.counter.fetch_add(1, Ordering::Relaxed),
        })
    }
}

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The start of the UTC month containing `ms` (milliseconds since the epoch).
fn month_start_millis(ms: i64) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    let days = ms.div_euclid(DAY_MS);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, public domain).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day_of_month = doy - (153 * mp + 2) / 5; // 0-based
    (days - day_of_month) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn month_start_is_the_first_day_at_midnight() {
        // 2026-11-29T07:48:18Z → 2026-11-01T00:00:00Z.
        assert_eq!(month_start_millis(1_795_938_498_000), 1_793_491_200_000);
        // Leap day: 2024-02-29T12:00:00Z → 2024-02-01.
        assert_eq!(month_start_millis(1_709_208_000_000), 1_706_745_600_000);
        assert_eq!(month_start_millis(0), 0);
    }

    #[test]
    fn uniq_ids_are_32_hex_digits_and_differ() {
        let g = UniqIdGenerator::new(None);
        let (a, b) = (g.next(), g.next());
        assert_eq!(a.as_str().len(), 32);
        assert_ne!(a, b);
    }

    #[test]
    fn properties_reject_separators() {
        let m = Message::new("x").with_property("a\u{1}", "b");
        assert!(m.properties_string("ID", true).is_err());
        let m = Message::new("x").with_tags("TagA").with_key("k1").with_key("k2");
        let p = m.properties_string("ID", true).unwrap();
        let view = PropertiesView::from_valid(&p);
        assert_eq!(view.get("TAGS"), Some("TagA"));
        assert_eq!(view.get("KEYS"), Some("k1 k2"));
        assert_eq!(view.get("UNIQ_KEY"), Some("ID"));
    }
}
