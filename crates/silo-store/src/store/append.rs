//! The append path (docs/store-format.md §7.1; apache/rocketmq PR #10814).
//!
//! Outside the critical section an [`Appender`] validates a message and encodes everything
//! but the fields only the critical section can know (queue offset, physical offset, store
//! timestamp, LMQ offsets) into its reusable scratch buffer: the record's fixed prefix, and
//! its topic and properties. The body is not copied there. Inside the critical section the
//! store assigns the offsets, patches them into the prefix and copies prefix, body and suffix
//! straight into the mapped segment: the body is copied exactly once, from the caller's buffer
//! into the log. Queue and LMQ offsets advance only after the bytes are in the segment; a
//! record that does not fit writes the blank marker and is retried in the next segment with
//! the same offsets, so nothing advances twice. After warm-up nothing here allocates.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::BufMut;
use silo_wire::checksum::body_crc;
use silo_wire::properties::{MAX_PROPERTIES_LEN, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, PropertiesView, keys};
use silo_wire::record::{BLANK_LEN, MessageVersion, encode_blank, offsets, store_timestamp_offset, sys_flag};

use super::gate::WriteGate;
use super::workers::Workers;
use crate::commit_log::CommitLog;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::mapped::MappedFile;
use crate::names::{is_lmq, is_valid_topic, topic_allows_lmq};

/// Offsets assigned inside the append critical section.
#[derive(Debug, Default)]
pub(crate) struct AppendState {
    pub(crate) current: Option<Arc<MappedFile>>,
    /// topic → queue id → next queue offset (Java's `topicQueueTable`).
    pub(crate) queue_offsets: HashMap<Box<str>, Vec<i64>>,
    /// LMQ name → next offset.
    pub(crate) lmq_offsets: HashMap<Box<str>, i64>,
    pub(crate) last_store_timestamp: i64,
}

/// A message as the broker hands it to the store.
#[derive(Debug, Clone, Copy)]
pub struct MessageToStore<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub flag: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_tx_offset: i64,
    pub body: &'a [u8],
    /// The properties string exactly as it is to be stored.
    pub properties: &'a str,
}

impl<'a> MessageToStore<'a> {
    /// A stored record stored again under `topic`/`queue_id` with `properties` (a delayed, timer,
    /// transactional or given-up message moving on): its flag, sysFlag, born time and host,
    /// reconsume count and body as they were.
    pub fn again(
        rec: &silo_wire::record::StoredRecord<'a>,
        topic: &'a str,
        queue_id: i32,
        properties: &'a str,
    ) -> Self {
        Self {
            topic,
            queue_id,
            flag: rec.meta.flag,
            sys_flag: rec.meta.sys_flag,
            born_timestamp: rec.meta.born_timestamp,
            born_host: rec.meta.born_host,
            reconsume_times: rec.meta.reconsume_times,
            prepared_tx_offset: 0,
            body: rec.body,
            properties,
        }
    }
}

/// Where an appended record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendResult {
    /// Commit-log offset of the (first) record.
    pub physical_offset: i64,
    /// Size of the (first) record.
    pub size: i32,
    /// Queue offset of the (first) record.
    pub queue_offset: i64,
    /// Records written.
    pub count: usize,
    pub store_timestamp: i64,
    /// Commit-log offset just past the last record: flushed once the flush offset reaches it.
    pub end_offset: i64,
}

#[derive(Debug, Clone)]
struct Encoded {
    /// The fixed part, up to and including BODYLEN, in `Appender::buf`.
    prefix: Range<usize>,
    /// TOPICLEN, TOPIC and, unless LMQ offsets are still to be added, PROPLEN and properties.
    suffix: Range<usize>,
    /// Size without the LMQ additions.
    base_size: usize,
    /// For LMQ records: the properties (without length) in `buf`, and the LMQ slots.
    lmq_props: Option<Range<usize>>,
    lmq_slots: Range<usize>,
    sys_flag: i32,
}

#[derive(Debug, Clone)]
struct LmqSlot {
    /// The LMQ name inside the message's properties, or `None` for an empty slot (a name that
    /// is not an LMQ, or LMQ disabled).
    name: Option<Range<usize>>,
    offset: i64,
}

/// Reusable encoding state, one per writer (connection, thread). Reusing it is what keeps the
/// steady-state append free of allocations.
#[derive(Debug, Default)]
pub struct Appender {
    buf: Vec<u8>,
    encoded: Vec<Encoded>,
    lmq: Vec<LmqSlot>,
    /// Physical offset and size of each record of the last batch.
    batch: Vec<(i64, i32)>,
}

const LMQ_OFFSET_KEY: &str = keys::INNER_MULTI_QUEUE_OFFSET;
/// Room for `INNER_MULTI_QUEUE_OFFSET \u1 ... \u2` besides the offsets themselves.
const LMQ_KEY_OVERHEAD: usize = LMQ_OFFSET_KEY.len() + 2;

fn digits(v: i64) -> usize {
    let mut n = if v < 0 { 2 } else { 1 };
    let mut x = v.unsigned_abs();
    while x >= 10 {
        x /= 10;
        n += 1;
    }
    n
}

/// Writes `v` in decimal into `out`, returning the digits.
fn format_i64(v: i64, out: &mut [u8; 20]) -> &[u8] {
    let mut x = v.unsigned_abs();
    let mut i = out.len();
    loop {
        i -= 1;
        if let Some(slot) = out.get_mut(i) {
            *slot = b'0' + (x % 10) as u8;
        }
        x /= 10;
        if x == 0 || i == 0 {
            break;
        }
    }
    if v < 0 && i > 0 {
        i -= 1;
        if let Some(slot) = out.get_mut(i) {
            *slot = b'-';
        }
    }
    out.get(i..).unwrap_or_default()
}

impl Appender {
    pub fn new() -> Self {
        Self::default()
    }

    /// Physical offsets and sizes of the records of the last [`Store::append_batch`].
    ///
    /// [`Store::append_batch`]: crate::Store::append_batch
    pub fn batch_records(&self) -> &[(i64, i32)] {
        &self.batch
    }

    fn clear(&mut self) {
        self.buf.clear();
        self.encoded.clear();
        self.lmq.clear();
        self.batch.clear();
    }

    /// Validates and encodes one message (outside the critical section).
    pub(crate) fn encode(&mut self, cfg: &StoreConfig, msg: &MessageToStore<'_>, allow_lmq: bool) -> Result<()> {
        if !is_valid_topic(msg.topic) {
            return Err(StoreError::InvalidTopic(msg.topic.to_owned()));
        }
        if msg.queue_id < 0 {
            return Err(StoreError::MessageIllegal(format!("queue id {} is negative", msg.queue_id)));
        }
        if msg.body.len() > cfg.max_message_size {
            return Err(StoreError::MessageIllegal(format!(
                "body of {} bytes exceeds the maximum of {}",
                msg.body.len(),
                cfg.max_message_size
            )));
        }
        if msg.properties.len() > MAX_PROPERTIES_LEN {
            return Err(StoreError::MessageIllegal(format!(
                "properties of {} bytes exceed the 32767-byte limit",
                msg.properties.len()
            )));
        }
        let props = PropertiesView::from_valid(msg.properties);
        let dispatch = (allow_lmq && cfg.enable_multi_dispatch && topic_allows_lmq(msg.topic))
            .then(|| props.get(keys::INNER_MULTI_DISPATCH))
            .flatten()
            .filter(|d| !d.is_empty());

        let mut sys = msg.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if msg.born_host.is_ipv6() {
            sys |= sys_flag::BORNHOST_V6;
        }
        if cfg.store_host.is_ipv6() {
            sys |= sys_flag::STOREHOST_V6;
        }
        let version = MessageVersion::for_topic_len(msg.topic.len());

        // Prefix: every fixed field, with placeholders for what the critical section assigns.
        let prefix_start = self.buf.len();
        self.buf.put_i32(0); // TOTALSIZE, set below
        self.buf.put_i32(version.magic());
        self.buf.put_i32(body_crc(msg.body));
        self.buf.put_i32(msg.queue_id);
        self.buf.put_i32(msg.flag);
        self.buf.put_i64(0); // QUEUEOFFSET
        self.buf.put_i64(0); // PHYSICALOFFSET
        self.buf.put_i32(sys);
        self.buf.put_i64(msg.born_timestamp);
        put_host(&mut self.buf, msg.born_host);
        self.buf.put_i64(0); // STORETIMESTAMP
        put_host(&mut self.buf, cfg.store_host);
        self.buf.put_i32(msg.reconsume_times);
        self.buf.put_i64(msg.prepared_tx_offset);
        self.buf.put_i32(msg.body.len() as i32);
        let prefix = prefix_start..self.buf.len();

        let suffix_start = self.buf.len();
        match version {
            MessageVersion::V1 => self.buf.put_u8(msg.topic.len() as u8),
            MessageVersion::V2 => self.buf.put_i16(msg.topic.len() as i16),
        }
        self.buf.put_slice(msg.topic.as_bytes());

        let lmq_start = self.lmq.len();
        let lmq_props = match dispatch {
            None => {
                // Where the dispatcher would honour INNER_MULTI_QUEUE_OFFSET but this append did
                // not assign it (a batch, an empty list), a client-sent value is dropped: only
                // the broker chooses LMQ offsets.
                let lmq_dispatchable = cfg.enable_multi_dispatch && cfg.enable_lmq && topic_allows_lmq(msg.topic);
                if lmq_dispatchable && props.get(LMQ_OFFSET_KEY).is_some() {
                    let len_at = self.buf.len();
                    self.buf.put_i16(0);
                    let start = self.buf.len();
                    for (k, v) in props.iter().filter(|(k, _)| *k != LMQ_OFFSET_KEY) {
                        self.buf.put_slice(k.as_bytes());
                        self.buf.put_u8(NAME_VALUE_SEPARATOR);
                        self.buf.put_slice(v.as_bytes());
                        self.buf.put_u8(PROPERTY_SEPARATOR);
                    }
                    let len = (self.buf.len() - start) as i16;
                    if let Some(slot) = self.buf.get_mut(len_at..len_at + 2) {
                        slot.copy_from_slice(&len.to_be_bytes());
                    }
                } else {
                    self.buf.put_i16(msg.properties.len() as i16);
                    self.buf.put_slice(msg.properties.as_bytes());
                }
                None
            }
            Some(list) => {
                // The broker owns INNER_MULTI_QUEUE_OFFSET: drop any the client sent, and make
                // sure the last pair ends with a separator before ours is appended.
                let suffix_end = self.buf.len();
                let props_start = self.buf.len();
                for (k, v) in props.iter().filter(|(k, _)| *k != LMQ_OFFSET_KEY) {
                    self.buf.put_slice(k.as_bytes());
                    self.buf.put_u8(NAME_VALUE_SEPARATOR);
                    self.buf.put_slice(v.as_bytes());
                    self.buf.put_u8(PROPERTY_SEPARATOR);
                }
                // Slot names are kept as ranges into the message's own properties string.
                let base = list.as_ptr() as usize - msg.properties.as_ptr() as usize;
                let mut at = 0usize;
                for name in list.split(',') {
                    let range = base + at..base + at + name.len();
                    at += name.len() + 1;
                    let slot = if cfg.enable_lmq && is_lmq(name) {
                        if !is_valid_topic(name) {
                            self.buf.truncate(prefix_start);
                            self.lmq.truncate(lmq_start);
                            return Err(StoreError::InvalidLmqName(name.to_owned()));
                        }
                        Some(range)
                    } else {
                        None
                    };
                    self.lmq.push(LmqSlot { name: slot, offset: 0 });
                }
                let props_range = props_start..self.buf.len();
                // Suffix holds only the topic part; the properties follow in the lock.
                let encoded = Encoded {
                    prefix: prefix.clone(),
                    suffix: suffix_start..suffix_end,
                    base_size: 0,
                    lmq_props: Some(props_range),
                    lmq_slots: lmq_start..self.lmq.len(),
                    sys_flag: sys,
                };
                let base_size = prefix.len()
                    + (suffix_end - suffix_start)
                    + msg.body.len()
                    + 2
                    + encoded.lmq_props.as_ref().map_or(0, |r| r.len());
                self.encoded.push(Encoded { base_size, ..encoded });
                return Ok(());
            }
        };
        let suffix = suffix_start..self.buf.len();
        let size = prefix.len() + msg.body.len() + suffix.len();
        if size > i32::MAX as usize {
            self.buf.truncate(prefix_start);
            return Err(StoreError::MessageIllegal(format!("record of {size} bytes is too large")));
        }
        if let Some(total) = self.buf.get_mut(prefix_start..prefix_start + 4) {
            total.copy_from_slice(&(size as i32).to_be_bytes());
        }
        self.encoded.push(Encoded {
            prefix,
            suffix,
            base_size: size,
            lmq_props,
            lmq_slots: lmq_start..lmq_start,
            sys_flag: sys,
        });
        Ok(())
    }
}

fn put_host(buf: &mut Vec<u8>, host: SocketAddr) {
    match host {
        SocketAddr::V4(a) => buf.put_slice(&a.ip().octets()),
        SocketAddr::V6(a) => buf.put_slice(&a.ip().octets()),
    }
    buf.put_i32(i32::from(host.port()));
}

fn patch_i64(buf: &mut [u8], at: usize, v: i64) {
    if let Some(slot) = buf.get_mut(at..at + 8) {
        slot.copy_from_slice(&v.to_be_bytes());
    }
}

fn patch_i32(buf: &mut [u8], at: usize, v: i32) {
    if let Some(slot) = buf.get_mut(at..at + 4) {
        slot.copy_from_slice(&v.to_be_bytes());
    }
}

/// The writing side of the store: the commit log and the state of its critical section.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) commit_log: CommitLog,
    pub(crate) state: Mutex<AppendState>,
    /// Whether appends are accepted (full disk, failed sync).
    pub(crate) gate: WriteGate,
    /// Set while the store follows a master (`replica.rs`): local appends are refused.
    pub(crate) replica: super::replica::ReplicaState,
}

impl Writer {
    /// Notes a full disk met while making room, for the gate's log and status.
    pub(crate) fn room<T>(&self, made: Result<T>) -> Result<T> {
        match made {
            Ok(v) => {
                self.gate.found_space();
                Ok(v)
            }
            Err(e) => {
                if matches!(e, StoreError::DiskFull(_)) {
                    self.gate.met_full_disk(&e);
                }
                Err(e)
            }
        }
    }
}

/// What an append reads besides the writer: the config, and the threads it wakes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendContext<'a> {
    pub(crate) config: &'a StoreConfig,
    pub(crate) writer: &'a Writer,
    pub(crate) workers: &'a Workers,
}

impl AppendContext<'_> {
    /// Appends `msgs` (one message, or a batch for one queue), already encoded in `app`,
    /// inside the critical section.
    pub(crate) fn append_encoded(&self, app: &mut Appender, msgs: &[MessageToStore<'_>]) -> Result<AppendResult> {
        let Some(first) = msgs.first() else {
            return Err(StoreError::MessageIllegal("nothing to append".into()));
        };
        let (topic, queue_id) = (first.topic, first.queue_id);
        let mut state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        if self.workers.is_shut_down() {
            return Err(StoreError::ShutDown);
        }
        self.writer.gate.check()?;
        if self.writer.replica.following.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StoreError::Replica);
        }
        let state = &mut *state;
        let now = self.config.clock.now_ms().max(state.last_store_timestamp);
        // Prepared and rolled-back transaction records are never dispatched, so they take no
        // queue offset (0 in the record, nothing advances), as in Java.
        let tx = first.sys_flag & sys_flag::TRANSACTION_MASK;
        let takes_offset = !(tx == sys_flag::TRANSACTION_PREPARED_TYPE || tx == sys_flag::TRANSACTION_ROLLBACK_TYPE);
        let queue_offset = if takes_offset { state.queue_offset(topic, queue_id) } else { 0 };

        // LMQ offsets: read once, kept across a retry in the next segment.
        let mut sizes_total = 0usize;
        for (enc, msg) in app.encoded.iter().zip(msgs) {
            let mut size = enc.base_size;
            if enc.lmq_props.is_some() {
                let mut list_len = 0usize;
                for (i, slot) in app.lmq.get_mut(enc.lmq_slots.clone()).unwrap_or_default().iter_mut().enumerate() {
                    if i > 0 {
                        list_len += 1;
                    }
                    if let Some(range) = &slot.name {
                        let name = msg.properties.get(range.clone()).unwrap_or_default();
                        slot.offset = state.lmq_offsets.get(name).copied().unwrap_or(0);
                        list_len += digits(slot.offset);
                    }
                }
                size += LMQ_KEY_OVERHEAD + list_len;
                let props_len = enc.lmq_props.as_ref().map_or(0, |r| r.len()) + LMQ_KEY_OVERHEAD + list_len;
                if props_len > MAX_PROPERTIES_LEN {
                    return Err(StoreError::MessageIllegal(format!(
                        "properties of {props_len} bytes exceed the 32767-byte limit"
                    )));
                }
            }
            sizes_total += size;
        }
        let segment_size = self.writer.commit_log.segment_size();
        if sizes_total + BLANK_LEN > segment_size {
            return Err(StoreError::MessageIllegal(format!(
                "{sizes_total} bytes cannot fit a commit-log segment of {segment_size}"
            )));
        }

        // Find room: a record (or batch) never spans two segments.
        let segment = loop {
            let segment = match &state.current {
                Some(seg) if !seg.is_full() => seg.clone(),
                Some(seg) => {
                    let next = self.writer.room(self.writer.commit_log.roll(seg.end()))?;
                    self.workers.request_allocation();
                    state.current = Some(next.clone());
                    next
                }
                None => {
                    let next = self
                        .writer
                        .room(self.writer.commit_log.roll(self.writer.commit_log.max_offset().max(0) as u64))?;
                    self.workers.request_allocation();
                    state.current = Some(next.clone());
                    next
                }
            };
            if !segment.is_reserved() {
                // A segment opened from disk (it may be sparse) gets its space before a write.
                self.writer.room(segment.reserve())?;
            }
            let pos = segment.wrote();
            if pos + sizes_total + BLANK_LEN <= segment.size() {
                break segment;
            }
            // END_OF_FILE: pad the rest with the blank marker, retry in the next segment with
            // the same encoded bytes and the same offsets.
            let remaining = segment.size() - pos;
            let mut blank = [0u8; BLANK_LEN];
            encode_blank(remaining, &mut &mut blank[..]);
            // SAFETY: the append lock is held (single writer) and `pos` is the write position.
            unsafe { segment.write_at(pos, &[&blank]) };
            segment.publish(segment.size());
            self.writer.commit_log.set_max_offset(segment.end() as i64);
        };

        let start_pos = segment.wrote();
        let mut pos = start_pos;
        app.batch.clear();
        let mut first_size = 0i32;
        for (i, (enc, msg)) in app.encoded.iter().zip(msgs).enumerate() {
            let phys = segment.start() as i64 + pos as i64;
            let body = msg.body;
            let lmq_slots = app.lmq.get(enc.lmq_slots.clone()).unwrap_or_default();
            let lmq_list_len: usize = if enc.lmq_props.is_some() {
                lmq_slots.iter().map(|s| if s.name.is_some() { digits(s.offset) } else { 0 }).sum::<usize>()
                    + lmq_slots.len().saturating_sub(1)
            } else {
                0
            };
            let size =
                if enc.lmq_props.is_some() { enc.base_size + LMQ_KEY_OVERHEAD + lmq_list_len } else { enc.base_size };
            let prefix = app.buf.get_mut(enc.prefix.clone()).unwrap_or_default();
            patch_i32(prefix, offsets::TOTAL_SIZE, size as i32);
            patch_i64(prefix, offsets::QUEUE_OFFSET, if takes_offset { queue_offset + i as i64 } else { 0 });
            patch_i64(prefix, offsets::PHYSICAL_OFFSET, phys);
            patch_i64(prefix, store_timestamp_offset(enc.sys_flag), now);
            let prefix = app.buf.get(enc.prefix.clone()).unwrap_or_default();
            let suffix = app.buf.get(enc.suffix.clone()).unwrap_or_default();
            // SAFETY: the append lock is held and `pos` is at or past the published position.
            let mut wrote = unsafe { segment.write_at(pos, &[prefix, body, suffix]) };
            if let Some(props) = &enc.lmq_props {
                let props_bytes = app.buf.get(props.clone()).unwrap_or_default();
                let props_len = (props.len() + LMQ_KEY_OVERHEAD + lmq_list_len) as i16;
                // SAFETY: as above, continuing right after the bytes just written.
                wrote += unsafe {
                    segment.write_at(
                        pos + wrote,
                        &[&props_len.to_be_bytes(), props_bytes, LMQ_OFFSET_KEY.as_bytes(), &[NAME_VALUE_SEPARATOR]],
                    )
                };
                for (k, slot) in lmq_slots.iter().enumerate() {
                    let mut digits_buf = [0u8; 20];
                    let text: &[u8] = if slot.name.is_some() { format_i64(slot.offset, &mut digits_buf) } else { &[] };
                    let comma: &[u8] = if k + 1 < lmq_slots.len() { b"," } else { b"" };
                    // SAFETY: as above.
                    wrote += unsafe { segment.write_at(pos + wrote, &[text, comma]) };
                }
                // SAFETY: as above.
                wrote += unsafe { segment.write_at(pos + wrote, &[&[PROPERTY_SEPARATOR]]) };
            }
            debug_assert_eq!(wrote, size);
            if i == 0 {
                first_size = size as i32;
            }
            app.batch.push((phys, size as i32));
            pos += wrote;
        }
        segment.publish(pos);
        let end = segment.start() as i64 + pos as i64;
        self.writer.commit_log.set_max_offset(end);

        // PUT_OK: only now do the offsets advance, exactly once.
        if takes_offset {
            state.advance_queue(topic, queue_id, queue_offset + app.encoded.len() as i64);
        }
        for (enc, msg) in app.encoded.iter().zip(msgs) {
            for slot in app.lmq.get(enc.lmq_slots.clone()).unwrap_or_default() {
                if let Some(range) = &slot.name {
                    let name = msg.properties.get(range.clone()).unwrap_or_default();
                    state.advance_lmq(name, slot.offset + 1);
                }
            }
        }
        state.last_store_timestamp = now;
        drop(segment);
        self.workers.wake_dispatcher();
        Ok(AppendResult {
            physical_offset: segment_start_phys(&app.batch),
            size: first_size,
            queue_offset,
            count: app.encoded.len(),
            store_timestamp: now,
            end_offset: end,
        })
    }
}

fn segment_start_phys(batch: &[(i64, i32)]) -> i64 {
    batch.first().map_or(0, |(p, _)| *p)
}

impl AppendState {
    fn queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.queue_offsets.get(topic).and_then(|q| q.get(queue_id as usize)).copied().unwrap_or(0)
    }

    fn advance_queue(&mut self, topic: &str, queue_id: i32, next: i64) {
        let index = queue_id as usize;
        match self.queue_offsets.get_mut(topic) {
            Some(queues) => {
                if queues.len() <= index {
                    queues.resize(index + 1, 0);
                }
                if let Some(slot) = queues.get_mut(index) {
                    *slot = next;
                }
            }
            None => {
                let mut queues = vec![0; index + 1];
                if let Some(slot) = queues.get_mut(index) {
                    *slot = next;
                }
                self.queue_offsets.insert(topic.into(), queues);
            }
        }
    }

    fn advance_lmq(&mut self, name: &str, next: i64) {
        match self.lmq_offsets.get_mut(name) {
            Some(v) => *v = next,
            None => {
                self.lmq_offsets.insert(name.into(), next);
            }
        }
    }
}

/// Appends one message. See [`Appender`].
pub(crate) fn append_one(cx: AppendContext<'_>, app: &mut Appender, msg: &MessageToStore<'_>) -> Result<AppendResult> {
    app.clear();
    app.encode(cx.config, msg, true)?;
    cx.append_encoded(app, std::slice::from_ref(msg))
}

/// Appends messages of one queue as a batch: consecutive queue offsets, never split across
/// segments. LMQ dispatch does not apply to batches (as in Java).
pub(crate) fn append_batch(
    cx: AppendContext<'_>,
    app: &mut Appender,
    msgs: &[MessageToStore<'_>],
) -> Result<AppendResult> {
    app.clear();
    let Some(first) = msgs.first() else {
        return Err(StoreError::MessageIllegal("empty batch".into()));
    };
    for msg in msgs {
        if msg.topic != first.topic || msg.queue_id != first.queue_id {
            return Err(StoreError::MessageIllegal("a batch must target one queue".into()));
        }
        if msg.sys_flag & sys_flag::TRANSACTION_MASK != sys_flag::TRANSACTION_NOT_TYPE {
            return Err(StoreError::MessageIllegal("a batch cannot hold transactional messages".into()));
        }
        app.encode(cx.config, msg, false)?;
    }
    cx.append_encoded(app, msgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_formatting() {
        for v in [0i64, 7, 10, 99, 12345, -1, i64::MAX, i64::MIN + 1] {
            let mut buf = [0u8; 20];
            let text = format_i64(v, &mut buf);
            assert_eq!(std::str::from_utf8(text).ok(), Some(v.to_string().as_str()));
            assert_eq!(digits(v), v.to_string().len());
        }
    }
}
