//! The index file: RocketMQ's `index/<yyyyMMddHHmmssSSS>` hash index from message keys to
//! commit-log offsets, byte-compatible with the Java broker's files.
//!
//! # Layout (all integers big-endian)
//!
//! ```text
//! header   40 bytes   i64 beginTimestamp | i64 endTimestamp | i64 beginPhyOffset |
//!                     i64 endPhyOffset | i32 hashSlotCount | i32 indexCount
//! slots    hash_slots x i32     index number of the newest entry of the slot, 0 = empty
//! entries  max_entries x 20 B   i32 keyHash | i64 commitLogOffset | i32 timeDiff | i32 prevIndex
//! ```
//!
//! `indexCount` is the number of the next entry to write; it starts at 1 (entry 0 is never
//! used), so a file holds `max_entries - 1` entries and is full when `indexCount` reaches
//! `max_entries`. `timeDiff` is `(storeTimestamp - beginTimestamp) / 1000`, seconds since the
//! file's first entry; `prevIndex` chains the entries of one slot from newest to oldest.
//!
//! The indexed key is `topic + "#" + key`; its hash is the absolute value of Java's
//! `String.hashCode` (0 when that is `Integer.MIN_VALUE`), and its slot is `hash % hash_slots`.
//!
//! # Java behaviour reproduced
//!
//! * Writing an entry: a slot value `<= 0` or `> indexCount` counts as empty (`prevIndex` 0);
//!   `hashSlotCount` grows when the slot was empty in that sense; the time diff is computed
//!   against the header's `beginTimestamp` *before* the first entry sets it: 0 if that is
//!   `<= 0`, otherwise truncated toward zero and clamped to `[0, i32::MAX]`. The first entry
//!   (`indexCount <= 1`) sets `beginPhyOffset`/`beginTimestamp`; every entry sets the end fields.
//! * A new file after a full one starts with begin = end = the previous file's end timestamp and
//!   end physical offset (each only when positive). Its first entry's time diff is therefore
//!   relative to the previous file's end, like Java's.
//! * A query walks the files from newest to oldest, searches a file when
//!   `begin < fileBegin && end > fileEnd`, or `begin` or `end` lies in `[fileBegin, fileEnd]`,
//!   and stops after the first file with `fileBegin < begin` or once it has `max` offsets.
//!   Within a file it starts at the slot (skipped when its value is `<= 0`, `> indexCount` or
//!   `indexCount <= 1`), stops at an entry whose time diff is negative, takes entries whose hash
//!   matches and whose time `fileBegin + timeDiff * 1000` lies in `[begin, end]`, and stops when
//!   `prevIndex <= 0 || prevIndex > indexCount || prevIndex == current || time < begin`.
//!   Unlike Java it also drops duplicate offsets and bounds each walk by `indexCount` steps.
//! * Loading: an `indexCount <= 0` is read as 1 (a file Java created but never flushed).
//!   Recovery deletes the files whose `endTimestamp` is newer than the checkpoint's
//!   `indexMsgTimestamp`; retention deletes leading files whose `endPhyOffset` is below the
//!   commit log's minimum offset, never the newest file.
//!
//! Java names a file by the local time of its creation; Silo names it by the store timestamp of
//! its first entry in UTC, kept strictly above the previous file's name so that name order stays
//! creation order.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use std::sync::Arc;

use crate::fs::{Fs, MapMode, Region};

/// Size of the file header.
pub const HEADER_SIZE: usize = 40;
/// Size of one hash slot.
pub const SLOT_SIZE: usize = 4;
/// Size of one index entry.
pub const ENTRY_SIZE: usize = 20;
/// Java's separator of the `KEYS` property.
pub const KEY_SEPARATOR: char = ' ';

const BEGIN_TIMESTAMP_AT: usize = 0;
const END_TIMESTAMP_AT: usize = 8;
const BEGIN_PHY_OFFSET_AT: usize = 16;
const END_PHY_OFFSET_AT: usize = 24;
const HASH_SLOT_COUNT_AT: usize = 32;
const INDEX_COUNT_AT: usize = 36;

/// Milliseconds of 9999-12-31T23:59:59.999Z, the last instant a 17-digit name can hold.
const MAX_NAME_MILLIS: i64 = 253_402_300_799_999;
const MILLIS_PER_DAY: i64 = 86_400_000;
/// How many later names to try when the wanted one is taken.
const NAME_ATTEMPTS: u32 = 1000;

/// Sizes of an index file. Every file of a store has the same sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConfig {
    /// Number of hash slots (Java's `maxHashSlotNum`).
    pub hash_slots: u32,
    /// Number of 20-byte entries, including the unused entry 0 (Java's `maxIndexNum`).
    pub max_entries: u32,
}

impl Default for IndexConfig {
    /// Java's defaults: 5 000 000 slots, 20 000 000 entries (420 000 040-byte files).
    fn default() -> Self {
        Self { hash_slots: 5_000_000, max_entries: 20_000_000 }
    }
}

impl IndexConfig {
    /// Size in bytes of one file: `40 + hash_slots * 4 + max_entries * 20`.
    #[must_use]
    pub fn file_size(&self) -> u64 {
        HEADER_SIZE as u64
            + u64::from(self.hash_slots) * SLOT_SIZE as u64
            + u64::from(self.max_entries) * ENTRY_SIZE as u64
    }

    fn layout(&self) -> Result<Layout, IndexError> {
        if self.hash_slots == 0 {
            return Err(IndexError::Config { config: *self, reason: "hash_slots must be at least 1" });
        }
        if self.max_entries < 2 {
            return Err(IndexError::Config {
                config: *self,
                reason: "max_entries must be at least 2 (entry 0 is unused)",
            });
        }
        // Java computes the file size and every position as an `int`.
        let size = self.file_size();
        if size > i32::MAX as u64 {
            return Err(IndexError::Config { config: *self, reason: "the file would exceed 2^31 - 1 bytes" });
        }
        let (Ok(size), Ok(hash_slots), Ok(max_entries)) =
            (usize::try_from(size), i32::try_from(self.hash_slots), i32::try_from(self.max_entries))
        else {
            return Err(IndexError::Config { config: *self, reason: "the file does not fit in memory" });
        };
        Ok(Layout { config: *self, size, hash_slots, max_entries })
    }
}

/// The validated config, in the integer types the file uses.
#[derive(Debug, Clone, Copy)]
struct Layout {
    config: IndexConfig,
    size: usize,
    hash_slots: i32,
    max_entries: i32,
}

impl Layout {
    fn slot_pos(&self, key_hash: i32) -> usize {
        let slot = key_hash.unsigned_abs() % self.hash_slots.unsigned_abs();
        // The slot region lies within `size`, which fits in `usize`.
        HEADER_SIZE + slot as usize * SLOT_SIZE
    }

    /// Byte position of entry `index`, `None` unless the whole entry lies inside the file.
    fn entry_pos(&self, index: i32) -> Option<usize> {
        let index = usize::try_from(index).ok()?;
        let pos = (self.hash_slots.unsigned_abs() as usize)
            .checked_mul(SLOT_SIZE)?
            .checked_add(HEADER_SIZE)?
            .checked_add(index.checked_mul(ENTRY_SIZE)?)?;
        (pos.checked_add(ENTRY_SIZE)? <= self.size).then_some(pos)
    }
}

/// Errors of the index files.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index: {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("index file {path} has {actual} bytes, expected {expected} ({hash_slots} slots, {max_entries} entries)")]
    WrongSize { path: PathBuf, actual: u64, expected: u64, hash_slots: u32, max_entries: u32 },
    #[error("index file {path}: corrupt header: {field} (byte {offset}) is {value}: {reason}")]
    CorruptHeader { path: PathBuf, field: &'static str, offset: usize, value: i64, reason: &'static str },
    #[error("index file {path}: {what} at byte {offset} lies outside the file")]
    OutOfBounds { path: PathBuf, what: &'static str, offset: usize },
    #[error("{path} in the index directory is not a regular file")]
    NotAFile { path: PathBuf },
    #[error("no free index file name in {dir} after {name}")]
    NoFreeName { dir: PathBuf, name: String },
    #[error("invalid index config {config:?}: {reason}")]
    Config { config: IndexConfig, reason: &'static str },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> IndexError + 'a {
    move |source| IndexError::Io { op, path: path.to_owned(), source }
}

/// The 40-byte header of an index file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexHeader {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phys_offset: i64,
    pub end_phys_offset: i64,
    pub hash_slot_count: i32,
    pub index_count: i32,
}

impl IndexHeader {
    #[must_use]
    pub fn decode(bytes: &[u8; HEADER_SIZE]) -> Self {
        Self {
            begin_timestamp: be_i64(bytes, BEGIN_TIMESTAMP_AT).unwrap_or(0),
            end_timestamp: be_i64(bytes, END_TIMESTAMP_AT).unwrap_or(0),
            begin_phys_offset: be_i64(bytes, BEGIN_PHY_OFFSET_AT).unwrap_or(0),
            end_phys_offset: be_i64(bytes, END_PHY_OFFSET_AT).unwrap_or(0),
            hash_slot_count: be_i32(bytes, HASH_SLOT_COUNT_AT).unwrap_or(0),
            index_count: be_i32(bytes, INDEX_COUNT_AT).unwrap_or(0),
        }
    }

    #[must_use]
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut out = [0u8; HEADER_SIZE];
        let (ts, rest) = out.split_at_mut(16);
        let (phy, counts) = rest.split_at_mut(16);
        let (begin_ts, end_ts) = ts.split_at_mut(8);
        begin_ts.copy_from_slice(&self.begin_timestamp.to_be_bytes());
        end_ts.copy_from_slice(&self.end_timestamp.to_be_bytes());
        let (begin_phy, end_phy) = phy.split_at_mut(8);
        begin_phy.copy_from_slice(&self.begin_phys_offset.to_be_bytes());
        end_phy.copy_from_slice(&self.end_phys_offset.to_be_bytes());
        let (slots, count) = counts.split_at_mut(4);
        slots.copy_from_slice(&self.hash_slot_count.to_be_bytes());
        count.copy_from_slice(&self.index_count.to_be_bytes());
        out
    }

    /// Number of entries written (`indexCount - 1`).
    #[must_use]
    pub fn entries(&self) -> u32 {
        self.index_count.saturating_sub(1).max(0).unsigned_abs()
    }

    /// Java's `IndexFile.isTimeMatched`: whether a query for `[begin, end]` searches this file.
    #[must_use]
    pub fn time_matches(&self, begin: i64, end: i64) -> bool {
        let (b, e) = (self.begin_timestamp, self.end_timestamp);
        (begin < b && end > e) || (begin >= b && begin <= e) || (end >= b && end <= e)
    }

    /// Checks a header read from `path`; `indexCount` 0 becomes 1 like Java's `load`.
    fn validated(mut self, path: &Path, layout: &Layout) -> Result<Self, IndexError> {
        let corrupt = |field, offset, value, reason| IndexError::CorruptHeader {
            path: path.to_owned(),
            field,
            offset,
            value,
            reason,
        };
        for (field, offset, value) in [
            ("beginTimestamp", BEGIN_TIMESTAMP_AT, self.begin_timestamp),
            ("endTimestamp", END_TIMESTAMP_AT, self.end_timestamp),
            ("beginPhyOffset", BEGIN_PHY_OFFSET_AT, self.begin_phys_offset),
            ("endPhyOffset", END_PHY_OFFSET_AT, self.end_phys_offset),
        ] {
            if value < 0 {
                return Err(corrupt(field, offset, value, "negative"));
            }
        }
        if self.hash_slot_count < 0 {
            return Err(corrupt("hashSlotCount", HASH_SLOT_COUNT_AT, self.hash_slot_count.into(), "negative"));
        }
        if self.hash_slot_count > layout.max_entries {
            return Err(corrupt(
                "hashSlotCount",
                HASH_SLOT_COUNT_AT,
                self.hash_slot_count.into(),
                "more used slots than the file has entries",
            ));
        }
        if self.index_count < 0 {
            return Err(corrupt("indexCount", INDEX_COUNT_AT, self.index_count.into(), "negative"));
        }
        if self.index_count > layout.max_entries {
            return Err(corrupt("indexCount", INDEX_COUNT_AT, self.index_count.into(), "beyond the file's entries"));
        }
        if self.index_count == 0 {
            self.index_count = 1;
        }
        Ok(self)
    }
}

/// One 20-byte index entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexEntry {
    pub key_hash: i32,
    pub phys_offset: i64,
    /// Seconds since the file's `beginTimestamp`.
    pub time_diff: i32,
    /// Previous (older) entry of the same slot, 0 for none.
    pub prev_index: i32,
}

impl IndexEntry {
    #[must_use]
    pub fn decode(bytes: &[u8; ENTRY_SIZE]) -> Self {
        Self {
            key_hash: be_i32(bytes, 0).unwrap_or(0),
            phys_offset: be_i64(bytes, 4).unwrap_or(0),
            time_diff: be_i32(bytes, 12).unwrap_or(0),
            prev_index: be_i32(bytes, 16).unwrap_or(0),
        }
    }

    #[must_use]
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        let (hash, rest) = out.split_at_mut(4);
        let (offset, rest) = rest.split_at_mut(8);
        let (diff, prev) = rest.split_at_mut(4);
        hash.copy_from_slice(&self.key_hash.to_be_bytes());
        offset.copy_from_slice(&self.phys_offset.to_be_bytes());
        diff.copy_from_slice(&self.time_diff.to_be_bytes());
        prev.copy_from_slice(&self.prev_index.to_be_bytes());
        out
    }
}

fn be_i32(buf: &[u8], pos: usize) -> Option<i32> {
    buf.get(pos..)?.first_chunk::<4>().copied().map(i32::from_be_bytes)
}

fn be_i64(buf: &[u8], pos: usize) -> Option<i64> {
    buf.get(pos..)?.first_chunk::<8>().copied().map(i64::from_be_bytes)
}

fn read_entry(buf: &[u8], pos: usize) -> Option<IndexEntry> {
    buf.get(pos..)?.first_chunk::<ENTRY_SIZE>().map(IndexEntry::decode)
}

fn write_at(buf: &mut [u8], pos: usize, bytes: &[u8]) -> Option<()> {
    buf.get_mut(pos..pos.checked_add(bytes.len())?)?.copy_from_slice(bytes);
    Some(())
}

fn java_hash_step(h: i32, unit: u16) -> i32 {
    h.wrapping_mul(31).wrapping_add(i32::from(unit))
}

/// Java's `(topic + "#" + key).hashCode()`, computed over the UTF-16 units of the three parts
/// without building the string.
#[must_use]
pub fn java_key_hash(topic: &str, key: &str) -> i32 {
    let h = topic.encode_utf16().fold(0, java_hash_step);
    let h = java_hash_step(h, u16::from(b'#'));
    key.encode_utf16().fold(h, java_hash_step)
}

/// The `keyHash` stored for (topic, key): Java's `IndexFile.indexKeyHashMethod`, i.e. the
/// absolute value of [`java_key_hash`], or 0 when that is `Integer.MIN_VALUE`.
#[must_use]
pub fn index_key_hash(topic: &str, key: &str) -> i32 {
    java_key_hash(topic, key).checked_abs().unwrap_or(0)
}

/// Java's time diff of an entry stored at `store_timestamp` in a file beginning at `begin`.
fn time_diff(begin: i64, store_timestamp: i64) -> i32 {
    if begin <= 0 {
        return 0;
    }
    let diff = store_timestamp.wrapping_sub(begin) / 1000;
    if diff < 0 { 0 } else { i32::try_from(diff).unwrap_or(i32::MAX) }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) to days since 1970-01-01; the inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The file name `yyyyMMddHHmmssSSS` of the UTC instant `millis` (clamped to years 1970-9999).
#[must_use]
pub fn file_name_for(millis: i64) -> String {
    let millis = millis.clamp(0, MAX_NAME_MILLIS);
    let (year, month, day) = civil_from_days(millis.div_euclid(MILLIS_PER_DAY));
    let in_day = millis.rem_euclid(MILLIS_PER_DAY);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    let mut name = String::with_capacity(17);
    let _ = write!(name, "{year:04}{month:02}{day:02}{hour:02}{minute:02}{second:02}{milli:03}");
    name
}

/// The UTC instant a `yyyyMMddHHmmssSSS` name stands for, `None` for any other name.
#[must_use]
pub fn parse_file_name(name: &str) -> Option<i64> {
    if name.len() != 17 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| name.get(range).and_then(|s| s.parse::<i64>().ok());
    let (year, month, day) = (field(0..4)?, field(4..6)?, field(6..8)?);
    let (hour, minute, second, milli) = (field(8..10)?, field(10..12)?, field(12..14)?, field(14..17)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let millis =
        days_from_civil(year, month, day) * MILLIS_PER_DAY + hour * 3_600_000 + minute * 60_000 + second * 1000 + milli;
    // Rejects dates such as February 30 and instants before 1970.
    (file_name_for(millis) == name).then_some(millis)
}

/// An index file's mapping, owned by its [`IndexFile`] alone: reached only through `&self` or
/// `&mut self` of that file, so Rust's aliasing rules hold for the slices it hands out.
#[derive(Debug)]
struct IndexMap(Box<dyn Region>);

impl std::ops::Deref for IndexMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the region is valid for `len` bytes for its life (the `Region` contract) and
        // nothing else writes it (type docs).
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), self.0.len()) }
    }
}

impl std::ops::DerefMut for IndexMap {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), self.0.len()) }
    }
}

/// One mapped index file.
#[derive(Debug)]
struct IndexFile {
    path: PathBuf,
    /// The file name, as loaded or created.
    name: String,
    map: IndexMap,
    /// Whether the file's space is reserved (files created here are; loaded ones are reserved
    /// before their first new entry).
    reserved: bool,
    header: IndexHeader,
    /// Written since the last flush.
    dirty: AtomicBool,
}

impl IndexFile {
    fn open(fs: &Arc<dyn Fs>, path: PathBuf, name: String, layout: &Layout) -> Result<Self, IndexError> {
        let len = fs.file_len(&path).map_err(io_err("stat", &path))?;
        if len != layout.size as u64 {
            return Err(IndexError::WrongSize {
                path,
                actual: len,
                expected: layout.size as u64,
                hash_slots: layout.config.hash_slots,
                max_entries: layout.config.max_entries,
            });
        }
        // The store directory belongs to this process (the store's lock file keeps other brokers
        // out) and index files are never truncated while mapped.
        let map = IndexMap(fs.map_file(&path, layout.size, MapMode::Open).map_err(io_err("mmap", &path))?);
        no_readahead(&map, &path);
        let Some(header) = map.first_chunk::<HEADER_SIZE>() else {
            return Err(IndexError::OutOfBounds { path, what: "the header", offset: 0 });
        };
        let header = IndexHeader::decode(header).validated(&path, layout)?;
        Ok(Self { path, name, map, reserved: false, header, dirty: AtomicBool::new(false) })
    }

    /// Creates the file at full (sparse) size with Java's initial header: begin = end = the
    /// previous file's end values when they are positive.
    fn create(
        fs: &Arc<dyn Fs>,
        path: PathBuf,
        name: String,
        layout: &Layout,
        prev: Option<&IndexHeader>,
    ) -> Result<Self, IndexError> {
        if fs.exists(&path) {
            return Err(IndexError::Io { op: "create", path, source: io::ErrorKind::AlreadyExists.into() });
        }
        // Created at full size with its space reserved, and its name made durable.
        let map = IndexMap(fs.map_file(&path, layout.size, MapMode::Create).map_err(io_err("create", &path))?);
        if let Some(dir) = path.parent() {
            fs.sync_dir(dir).map_err(io_err("fsync", dir))?;
        }
        no_readahead(&map, &path);
        let mut header = IndexHeader { index_count: 1, ..IndexHeader::default() };
        if let Some(prev) = prev {
            if prev.end_phys_offset > 0 {
                header.begin_phys_offset = prev.end_phys_offset;
                header.end_phys_offset = prev.end_phys_offset;
            }
            if prev.end_timestamp > 0 {
                header.begin_timestamp = prev.end_timestamp;
                header.end_timestamp = prev.end_timestamp;
            }
        }
        let mut file = Self { path, name, map, reserved: true, header, dirty: AtomicBool::new(true) };
        file.write_header()?;
        Ok(file)
    }

    fn is_full(&self, layout: &Layout) -> bool {
        self.header.index_count >= layout.max_entries
    }

    fn write_header(&mut self) -> Result<(), IndexError> {
        let bytes = self.header.encode();
        write_at(&mut self.map, 0, &bytes).ok_or_else(|| IndexError::OutOfBounds {
            path: self.path.clone(),
            what: "the header",
            offset: 0,
        })
    }

    /// Java's `IndexFile.putKey` on a file that is not full.
    fn put(
        &mut self,
        layout: &Layout,
        key_hash: i32,
        phys_offset: i64,
        store_timestamp: i64,
    ) -> Result<(), IndexError> {
        let index = self.header.index_count;
        let slot_pos = layout.slot_pos(key_hash);
        let out_of_bounds = |what, offset| IndexError::OutOfBounds { path: self.path.clone(), what, offset };
        let Some(entry_pos) = layout.entry_pos(index) else {
            return Err(out_of_bounds("the next entry", 0));
        };
        let Some(slot_value) = be_i32(&self.map, slot_pos) else {
            return Err(out_of_bounds("a hash slot", slot_pos));
        };
        let prev_index = if slot_value <= 0 || slot_value > index { 0 } else { slot_value };
        let entry = IndexEntry {
            key_hash,
            phys_offset,
            time_diff: time_diff(self.header.begin_timestamp, store_timestamp),
            prev_index,
        };
        if write_at(&mut self.map, entry_pos, &entry.encode()).is_none() {
            return Err(out_of_bounds("an entry", entry_pos));
        }
        if write_at(&mut self.map, slot_pos, &index.to_be_bytes()).is_none() {
            return Err(out_of_bounds("a hash slot", slot_pos));
        }
        let header = &mut self.header;
        if index <= 1 {
            header.begin_phys_offset = phys_offset;
            header.begin_timestamp = store_timestamp;
        }
        if prev_index == 0 {
            header.hash_slot_count = header.hash_slot_count.wrapping_add(1);
        }
        header.index_count = index.saturating_add(1);
        header.end_phys_offset = phys_offset;
        header.end_timestamp = store_timestamp;
        self.dirty.store(true, Ordering::Relaxed);
        self.write_header()
    }

    /// Java's `IndexFile.selectPhyOffset`, adding offsets not yet in `seen` to `out`.
    fn select(&self, layout: &Layout, query: &Query, out: &mut Vec<i64>, seen: &mut HashSet<i64>) {
        let Query { key_hash, max, begin, end } = *query;
        let index_count = self.header.index_count;
        let Some(slot_value) = be_i32(&self.map, layout.slot_pos(key_hash)) else { return };
        if slot_value <= 0 || slot_value > index_count || index_count <= 1 {
            return;
        }
        let mut current = slot_value;
        // A chain written by Java or Silo only goes down, so it has at most `indexCount` entries;
        // a longer walk is a cycle in corrupt data.
        for _ in 0..index_count {
            if out.len() >= max {
                return;
            }
            let Some(entry) = layout.entry_pos(current).and_then(|pos| read_entry(&self.map, pos)) else {
                return;
            };
            if entry.time_diff < 0 {
                return;
            }
            let time = self.header.begin_timestamp.wrapping_add(i64::from(entry.time_diff) * 1000);
            if entry.key_hash == key_hash && time >= begin && time <= end && seen.insert(entry.phys_offset) {
                out.push(entry.phys_offset);
            }
            let prev = entry.prev_index;
            if prev <= 0 || prev > index_count || prev == current || time < begin {
                return;
            }
            current = prev;
        }
    }
}

/// What [`IndexService::query`] looks for.
#[derive(Debug, Clone, Copy)]
struct Query {
    key_hash: i32,
    max: usize,
    begin: i64,
    end: i64,
}

/// The index files of a store (`<store>/index/`), oldest first.
#[derive(Debug)]
pub struct IndexService {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    layout: Layout,
    files: Vec<IndexFile>,
}

impl IndexService {
    /// Opens `dir` (creating it), loading existing files in name order. Files whose size does not
    /// match the config, or whose header is impossible (negative timestamps, offsets or counts,
    /// `indexCount > max_entries`), give an error naming the file. A zero-length newest file is
    /// the leftover of a creation interrupted by a crash and is deleted.
    pub fn open(dir: &Path, config: IndexConfig) -> Result<Self, IndexError> {
        Self::open_on(&crate::fs::real(), dir, config)
    }

    /// [`open`](Self::open) on a given file system.
    pub fn open_on(fs: &Arc<dyn Fs>, dir: &Path, config: IndexConfig) -> Result<Self, IndexError> {
        let layout = config.layout()?;
        fs.create_dir_all(dir).map_err(io_err("create directory", dir))?;
        let mut names = Vec::new();
        for path in fs.list_dir(dir).map_err(io_err("list", dir))? {
            if let Some(name) = path.file_name() {
                names.push(name.to_owned());
            }
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        let last = names.len().saturating_sub(1);
        for (i, name) in names.into_iter().enumerate() {
            let path = dir.join(&name);
            if fs.is_dir(&path) {
                return Err(IndexError::NotAFile { path });
            }
            let len = fs.file_len(&path).map_err(io_err("stat", &path))?;
            if i == last && len == 0 {
                tracing::warn!(path = %path.display(), "deleting an empty index file left by an interrupted creation");
                fs.remove_file(&path).map_err(io_err("delete", &path))?;
                continue;
            }
            let name = name.to_string_lossy().into_owned();
            let file = IndexFile::open(fs, path, name, &layout)?;
            tracing::debug!(path = %file.path.display(), header = ?file.header, "loaded index file");
            files.push(file);
        }
        Ok(Self { fs: Arc::clone(fs), dir: dir.to_owned(), layout, files })
    }

    /// The directory of the files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The config the service was opened with.
    #[must_use]
    pub fn config(&self) -> IndexConfig {
        self.layout.config
    }

    /// The files, oldest first, with their headers.
    pub fn files(&self) -> impl ExactSizeIterator<Item = (&Path, &IndexHeader)> {
        self.files.iter().map(|f| (f.path.as_path(), &f.header))
    }

    /// Indexes `key` of `topic` for the record at `phys_offset` stored at `store_timestamp` (ms).
    /// Rolls to a new file when the current one is full. Does not allocate unless it creates a
    /// file.
    pub fn put(&mut self, topic: &str, key: &str, phys_offset: i64, store_timestamp: i64) -> Result<(), IndexError> {
        let key_hash = index_key_hash(topic, key);
        let layout = self.layout;
        if let Some(file) = self.files.last_mut()
            && !file.is_full(&layout)
        {
            if !file.reserved {
                file.map.0.reserve().map_err(io_err("reserve", &file.path))?;
                file.reserved = true;
            }
            return file.put(&layout, key_hash, phys_offset, store_timestamp);
        }
        let mut file = self.create_file(store_timestamp)?;
        let put = file.put(&layout, key_hash, phys_offset, store_timestamp);
        self.files.push(file);
        put
    }

    /// Java's `IndexService.buildIndex` for one dispatched record (the caller skips rollback
    /// messages): nothing if `phys_offset` is below [`end_phys_offset`](Self::end_phys_offset)
    /// (already indexed before a re-dispatch), else the unique key if present (even empty, as
    /// Java does) and every non-empty space-separated entry of `keys`. Returns the keys indexed.
    pub fn put_message(
        &mut self,
        topic: &str,
        uniq_key: Option<&str>,
        keys: Option<&str>,
        phys_offset: i64,
        store_timestamp: i64,
    ) -> Result<usize, IndexError> {
        if phys_offset < self.end_phys_offset() {
            return Ok(0);
        }
        let mut count = 0;
        if let Some(uniq) = uniq_key {
            self.put(topic, uniq, phys_offset, store_timestamp)?;
            count += 1;
        }
        for key in keys.unwrap_or("").split(KEY_SEPARATOR).filter(|k| !k.is_empty()) {
            self.put(topic, key, phys_offset, store_timestamp)?;
            count += 1;
        }
        Ok(count)
    }

    /// Up to `max` commit-log offsets of records indexed under (topic, key) with store time in
    /// `[begin, end]` ms, newest first, without duplicates. (Java's broker caps `max` at
    /// `maxMsgsNumBatch`, 64, before calling this.)
    #[must_use]
    pub fn query(&self, topic: &str, key: &str, max: usize, begin: i64, end: i64) -> Vec<i64> {
        let query = Query { key_hash: index_key_hash(topic, key), max, begin, end };
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        if max == 0 {
            return out;
        }
        for file in self.files.iter().rev() {
            if file.header.time_matches(begin, end) {
                file.select(&self.layout, &query, &mut out, &mut seen);
            }
            if file.header.begin_timestamp < begin || out.len() >= max {
                break;
            }
        }
        out
    }

    /// msyncs every file written since the last flush.
    pub fn flush(&self) -> Result<(), IndexError> {
        for file in &self.files {
            if file.dirty.swap(false, Ordering::AcqRel)
                && let Err(source) = file.map.0.sync(0, file.map.0.len())
            {
                file.dirty.store(true, Ordering::Release);
                return Err(IndexError::Io { op: "msync", path: file.path.clone(), source });
            }
        }
        Ok(())
    }

    /// Recovery after a crash: deletes the files whose `endTimestamp` is newer than `timestamp`
    /// (the checkpoint's `indexMsgTimestamp`); re-dispatch rebuilds them.
    pub fn discard_newer_than(&mut self, timestamp: i64) -> Result<(), IndexError> {
        let (keep, discard): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.files).into_iter().partition(|f| f.header.end_timestamp <= timestamp);
        self.files = keep;
        for file in &discard {
            tracing::info!(path = %file.path.display(), end = file.header.end_timestamp, timestamp, "discarding index file newer than the checkpoint");
        }
        destroy_all(&self.fs, discard)
    }

    /// Retention: deletes the oldest files whose `endPhyOffset` is below `min_phys_offset`,
    /// stopping at the first one that is not, and never the newest file. Returns how many.
    pub fn delete_before(&mut self, min_phys_offset: i64) -> Result<usize, IndexError> {
        let candidates = self.files.len().saturating_sub(1);
        let count =
            self.files.iter().take(candidates).take_while(|f| f.header.end_phys_offset < min_phys_offset).count();
        let expired: Vec<_> = self.files.drain(..count).collect();
        destroy_all(&self.fs, expired)?;
        Ok(count)
    }

    /// Store timestamp of the newest indexed entry (the newest file's `endTimestamp`; 0 if
    /// none), for the checkpoint's `indexMsgTimestamp` and QUERY_MESSAGE's
    /// `indexLastUpdateTimestamp`. Read it before [`flush`](Self::flush) when writing the
    /// checkpoint so that it never covers unflushed entries.
    #[must_use]
    pub fn last_timestamp(&self) -> i64 {
        self.files.last().map_or(0, |f| f.header.end_timestamp)
    }

    /// The newest file's `endPhyOffset` (0 if none): QUERY_MESSAGE's `indexLastUpdatePhyoffset`
    /// and the re-dispatch skip of [`put_message`](Self::put_message).
    #[must_use]
    pub fn end_phys_offset(&self) -> i64 {
        self.files.last().map_or(0, |f| f.header.end_phys_offset)
    }

    /// Creates the next file, named by `store_timestamp` but strictly after the newest name.
    fn create_file(&self, store_timestamp: i64) -> Result<IndexFile, IndexError> {
        let prev = self.files.last();
        let after = prev.and_then(|f| parse_file_name(&f.name));
        let mut millis = match after {
            Some(after) => store_timestamp.max(after.saturating_add(1)),
            None => store_timestamp,
        };
        let mut name = file_name_for(millis);
        for _ in 0..NAME_ATTEMPTS {
            let path = self.dir.join(&name);
            let newer = prev.is_none_or(|p| name > p.name);
            if newer {
                match IndexFile::create(&self.fs, path, name.clone(), &self.layout, prev.map(|p| &p.header)) {
                    Ok(file) => {
                        tracing::info!(path = %file.path.display(), "created index file");
                        return Ok(file);
                    }
                    Err(IndexError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
            }
            millis = millis.clamp(0, MAX_NAME_MILLIS).saturating_add(1);
            name = file_name_for(millis);
        }
        Err(IndexError::NoFreeName { dir: self.dir.clone(), name })
    }
}

/// Hash slots and entries are touched a few bytes at a time, the slots at random: a fault must
/// not read (zero-fill, in a sparse file) a whole readahead window around them.
fn no_readahead(map: &IndexMap, path: &Path) {
    if let Err(e) = map.0.advise_random() {
        tracing::debug!(path = %path.display(), error = %e, "cannot turn off readahead");
    }
}

/// Unmaps and deletes `files`, trying all of them; returns the first error.
fn destroy_all(fs: &Arc<dyn Fs>, files: Vec<IndexFile>) -> Result<(), IndexError> {
    let mut result = Ok(());
    for file in files {
        let path = file.path;
        drop(file.map);
        match fs.remove_file(&path) {
            Ok(()) => tracing::info!(path = %path.display(), "deleted index file"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                if result.is_ok() {
                    result = Err(IndexError::Io { op: "delete", path, source });
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use silo_wire::checksum::java_string_hash;

    fn joined(topic: &str, key: &str) -> i32 {
        java_string_hash(&format!("{topic}#{key}"))
    }

    #[test]
    fn key_hash_matches_java_ascii() {
        assert_eq!(java_key_hash("T", "k"), 81_916); // 84*31*31 + 35*31 + 107
        assert_eq!(java_key_hash("TopicTest", "OrderID188"), joined("TopicTest", "OrderID188"));
        assert_eq!(java_key_hash("", ""), i32::from(b'#'));
        assert_eq!(java_key_hash("a#b", "c#d"), joined("a#b", "c#d"));
    }

    #[test]
    fn key_hash_matches_java_non_ascii_and_surrogates() {
        // "é" and "中" are single UTF-16 units; U+1F600 is the surrogate pair D83D DE00.
        for (topic, key) in [("tópico", "clé"), ("主题", "键值"), ("emoji\u{1F600}", "\u{1F600}\u{10FFFF}x")] {
            assert_eq!(java_key_hash(topic, key), joined(topic, key), "{topic}#{key}");
        }
        let by_hand =
            [0xD83Du16, 0xDE00, u16::from(b'#'), 0xD83D, 0xDE00].iter().fold(0i32, |h, &u| java_hash_step(h, u));
        assert_eq!(java_key_hash("\u{1F600}", "\u{1F600}"), by_hand);
    }

    #[test]
    fn key_hash_of_integer_min_value_is_zero() {
        // Found by a meet-in-the-middle search: "TopicTest#ogaQmc".hashCode() == Integer.MIN_VALUE.
        assert_eq!(joined("TopicTest", "ogaQmc"), i32::MIN);
        assert_eq!(java_key_hash("TopicTest", "ogaQmc"), i32::MIN);
        assert_eq!(index_key_hash("TopicTest", "ogaQmc"), 0);
        // Negative hashes are made positive.
        let negative = (0..1000).map(|i| format!("k{i}")).find(|k| java_key_hash("T", k) < 0).unwrap();
        assert_eq!(index_key_hash("T", &negative), -java_key_hash("T", &negative));
    }

    proptest! {
        #[test]
        fn key_hash_equals_hash_of_joined_string(topic in ".{0,12}", key in ".{0,24}") {
            prop_assert_eq!(java_key_hash(&topic, &key), joined(&topic, &key));
            prop_assert!(index_key_hash(&topic, &key) >= 0);
        }

        #[test]
        fn file_names_round_trip(millis in 0i64..=MAX_NAME_MILLIS) {
            let name = file_name_for(millis);
            prop_assert_eq!(name.len(), 17);
            prop_assert_eq!(parse_file_name(&name), Some(millis));
        }
    }

    #[test]
    fn file_names_are_utc() {
        assert_eq!(file_name_for(0), "19700101000000000");
        assert_eq!(file_name_for(1_700_000_000_123), "20231114221320123");
        assert_eq!(file_name_for(951_782_400_000), "20000229000000000"); // leap day
        assert_eq!(file_name_for(-5), "19700101000000000");
        assert_eq!(file_name_for(i64::MAX), "99991231235959999");
        assert_eq!(parse_file_name("20231114221320123"), Some(1_700_000_000_123));
        assert_eq!(parse_file_name("20230230000000000"), None);
        assert_eq!(parse_file_name("2023111422132012"), None);
        assert_eq!(parse_file_name("2023111422132012x"), None);
        assert_eq!(parse_file_name("20231314221320123"), None);
    }

    #[test]
    fn time_diff_follows_java() {
        assert_eq!(time_diff(0, 5_000), 0); // no begin yet
        assert_eq!(time_diff(-1, 5_000), 0);
        assert_eq!(time_diff(1_000, 2_999), 1); // truncated
        assert_eq!(time_diff(1_000, 500), 0); // -0.5 s truncates to 0
        assert_eq!(time_diff(10_000, 500), 0); // negative clamps to 0
        assert_eq!(time_diff(1, i64::MAX), i32::MAX);
        assert_eq!(time_diff(1, i64::MIN), i32::MAX); // MIN - 1 wraps to MAX, like Java's long arithmetic
    }

    #[test]
    fn header_and_entry_codecs_round_trip() {
        let header = IndexHeader {
            begin_timestamp: 1,
            end_timestamp: 2,
            begin_phys_offset: 3,
            end_phys_offset: 4,
            hash_slot_count: 5,
            index_count: 6,
        };
        let bytes = header.encode();
        assert_eq!(bytes[7], 1);
        assert_eq!(bytes[35], 5);
        assert_eq!(bytes[39], 6);
        assert_eq!(IndexHeader::decode(&bytes), header);
        let entry = IndexEntry { key_hash: 7, phys_offset: -8, time_diff: 9, prev_index: 10 };
        let bytes = entry.encode();
        assert_eq!(&bytes[4..12], &(-8i64).to_be_bytes());
        assert_eq!(IndexEntry::decode(&bytes), entry);
    }

    #[test]
    fn time_match_is_javas() {
        let h = IndexHeader { begin_timestamp: 100, end_timestamp: 200, ..IndexHeader::default() };
        assert!(h.time_matches(50, 250)); // covers the file
        assert!(h.time_matches(150, 300)); // begin inside
        assert!(h.time_matches(0, 100)); // end on the boundary
        assert!(!h.time_matches(201, 300));
        assert!(!h.time_matches(0, 99));
        assert!(h.time_matches(150, 120)); // begin inside, even with end < begin
    }

    #[test]
    fn config_is_validated() {
        let bad = |hash_slots, max_entries| IndexConfig { hash_slots, max_entries }.layout().is_err();
        assert!(bad(0, 10));
        assert!(bad(10, 1));
        assert!(bad(u32::MAX, 10));
        assert!(!bad(1, 2));
        let java = IndexConfig::default();
        assert_eq!(java.file_size(), 420_000_040);
        assert!(java.layout().is_ok());
    }

    #[test]
    fn layout_positions_are_bounded() {
        let layout = IndexConfig { hash_slots: 4, max_entries: 4 }.layout().unwrap();
        assert_eq!(layout.size, 136);
        assert_eq!(layout.slot_pos(7), 40 + 3 * 4);
        assert_eq!(layout.entry_pos(0), Some(56));
        assert_eq!(layout.entry_pos(3), Some(116));
        assert_eq!(layout.entry_pos(4), None);
        assert_eq!(layout.entry_pos(-1), None);
        assert_eq!(layout.entry_pos(i32::MAX), None);
    }
}
