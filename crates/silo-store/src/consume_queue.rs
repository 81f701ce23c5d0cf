//! Consume queues (docs/store-format.md §4): per (topic, queue id), files of 20-byte units
//! `i64 commitLogOffset | i32 size | i64 tagsCode`, the unit of logical offset `n` at byte
//! `n * 20` of the queue. Written only by the dispatcher (and recovery), read by pulls.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use crate::error::{Result, StoreError};
use crate::fs::Fs;
use crate::mapped::{MappedFile, file_name, parse_file_name};

pub const UNIT_SIZE: usize = 20;

/// Disk space a consume-queue file is given ahead of its units: files are sparse, and each
/// step of 16 KiB (819 units) is reserved before the first unit that needs it. A queue that
/// holds one message takes one step of disk, not the file's 5.7 MiB.
const RESERVE_STEP: usize = 16 * 1024;

/// The placeholder unit Java writes for logical offsets that have no message (a queue whose
/// first file starts past 0, or a gap found during recovery).
pub const BLANK_UNIT: Unit = Unit { commit_log_offset: 0, size: i32::MAX, tags_code: 0 };

/// One consume-queue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub commit_log_offset: i64,
    pub size: i32,
    pub tags_code: i64,
}

impl Unit {
    pub fn encode(&self) -> [u8; UNIT_SIZE] {
        let mut out = [0u8; UNIT_SIZE];
        let (off, rest) = out.split_at_mut(8);
        off.copy_from_slice(&self.commit_log_offset.to_be_bytes());
        let (size, tags) = rest.split_at_mut(4);
        size.copy_from_slice(&self.size.to_be_bytes());
        tags.copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8; UNIT_SIZE]) -> Self {
        let (off, rest) = bytes.split_first_chunk::<8>().map_or(([0; 8], &[][..]), |(a, r)| (*a, r));
        let (size, rest) = rest.split_first_chunk::<4>().map_or(([0; 4], &[][..]), |(a, r)| (*a, r));
        let tags = rest.first_chunk::<8>().copied().unwrap_or_default();
        Self {
            commit_log_offset: i64::from_be_bytes(off),
            size: i32::from_be_bytes(size),
            tags_code: i64::from_be_bytes(tags),
        }
    }

    /// Java's validity rule for recovery scans.
    pub fn is_valid(&self) -> bool {
        self.commit_log_offset >= 0 && self.size > 0
    }

    pub fn is_blank(&self) -> bool {
        *self == BLANK_UNIT
    }
}

/// What loading a queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadOutcome {
    /// Valid units up to the end (a torn tail, if any, was cut).
    Clean,
    /// An invalid unit with data after it: the queue must be rebuilt from the commit log.
    Damaged,
}

/// One consume queue.
#[derive(Debug)]
pub struct ConsumeQueue {
    fs: Arc<dyn Fs>,
    topic: Box<str>,
    queue_id: i32,
    dir: PathBuf,
    file_size: usize,
    files: RwLock<Vec<Arc<MappedFile>>>,
    /// Smallest readable logical offset (raised by retention).
    min_offset: AtomicI64,
    /// Next logical offset to be written (= number of units, counting blanks).
    max_offset: AtomicI64,
    /// Largest commit-log end (offset + size) any unit points to.
    max_physical_end: AtomicI64,
    /// Woken when units are added; see [`ConsumeQueue::notified`].
    notify: tokio::sync::Notify,
    /// Set by the dispatcher when this queue got units in the current round.
    touched: AtomicBool,
    /// A file was created since the last flush: its directory entry is synced with the next
    /// flush, before the units it holds count as durable.
    names_dirty: AtomicBool,
}

impl ConsumeQueue {
    /// An in-memory handle; files are created on the first unit.
    pub fn new(fs: &Arc<dyn Fs>, root: &Path, topic: &str, queue_id: i32, file_size: usize) -> Self {
        Self {
            fs: Arc::clone(fs),
            topic: topic.into(),
            queue_id,
            dir: root.join(topic).join(queue_id.to_string()),
            file_size,
            files: RwLock::new(Vec::new()),
            min_offset: AtomicI64::new(0),
            max_offset: AtomicI64::new(0),
            max_physical_end: AtomicI64::new(0),
            notify: tokio::sync::Notify::new(),
            touched: AtomicBool::new(false),
            names_dirty: AtomicBool::new(false),
        }
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    pub fn min_offset(&self) -> i64 {
        self.min_offset.load(Ordering::Acquire)
    }

    pub fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub fn max_physical_end(&self) -> i64 {
        self.max_physical_end.load(Ordering::Acquire)
    }

    /// A future that completes at the next dispatch into this queue. Create it, check
    /// [`max_offset`](Self::max_offset), then await it: no wake-up can be missed in between.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }

    pub(crate) fn mark_touched(&self) -> bool {
        !self.touched.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn wake(&self) {
        self.touched.store(false, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Loads the queue's files and finds the last valid unit (recovery, before use).
    pub fn load(&self) -> Result<LoadOutcome> {
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        let entries = match self.fs.list_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LoadOutcome::Clean),
            Err(e) => return Err(StoreError::io("list", &self.dir)(e)),
        };
        for path in entries {
            let Some(start) = path.file_name().and_then(|n| n.to_str()).and_then(parse_file_name) else {
                tracing::warn!(path = %path.display(), "ignoring a file that is not a consume-queue file");
                continue;
            };
            names.push((start, path));
        }
        names.sort();
        let mut files = Vec::with_capacity(names.len());
        for (start, path) in names {
            let len = self.fs.file_len(&path).map_err(StoreError::io("stat", &path))?;
            if len == 0 {
                // A file created but never written (Java deletes these too).
                self.fs.remove_file(&path).map_err(StoreError::io("delete", &path))?;
                continue;
            }
            if start % self.file_size as u64 != 0 {
                return Err(StoreError::Layout {
                    path,
                    reason: format!("start offset is not a multiple of the file size {}", self.file_size),
                });
            }
            let file = MappedFile::open(&self.fs, &path, start, self.file_size)?;
            file.no_readahead();
            files.push(Arc::new(file));
        }
        // Consecutive files only: a hole means lost data that no rule can repair.
        for pair in files.windows(2) {
            if let [a, b] = pair
                && a.end() != b.start()
            {
                return Err(StoreError::Layout {
                    path: b.path().to_owned(),
                    reason: format!("does not follow {} (expected start {})", a.path().display(), a.end()),
                });
            }
        }
        // Every file but the last is full; in the last, stop at the first invalid unit. An
        // invalid unit followed by more data is damage, not a torn tail: the caller rebuilds
        // the queue from the commit log instead of dropping what follows.
        let mut max_phys_end = 0i64;
        let count = files.len();
        for (i, file) in files.iter().enumerate() {
            let bytes = file.all_bytes();
            let mut wrote = 0usize;
            for chunk in bytes.chunks_exact(UNIT_SIZE) {
                let Some(arr) = chunk.first_chunk::<UNIT_SIZE>() else { break };
                let unit = Unit::decode(arr);
                if !unit.is_valid() {
                    break;
                }
                if !unit.is_blank() {
                    max_phys_end = max_phys_end.max(unit.commit_log_offset.saturating_add(i64::from(unit.size)));
                }
                wrote += UNIT_SIZE;
            }
            if wrote < self.file_size {
                let rest_nonzero = file.holds_data_from(wrote + UNIT_SIZE)?;
                let later_files = i + 1 < count;
                if rest_nonzero || later_files {
                    tracing::error!(path = %file.path().display(), at = wrote, "damaged consume-queue unit; the queue will be rebuilt from the commit log");
                    *self.files.write().unwrap_or_else(|e| e.into_inner()) = files;
                    return Ok(LoadOutcome::Damaged);
                }
                file.set_recovered(wrote);
                // What follows the last valid unit reads as zeros but for the unit itself,
                // which may be torn: zero just that one (the writer overwrites it next).
                if bytes.get(wrote..wrote + UNIT_SIZE).is_some_and(|u| u.iter().any(|x| *x != 0)) {
                    file.zero_range(wrote, UNIT_SIZE)?;
                }
                break;
            }
            file.set_recovered(wrote);
        }
        let first_start = files.first().map_or(0, |f| f.start());
        let end = files.last().map_or(0, |f| f.start() + f.wrote() as u64);
        self.min_offset.store((first_start / UNIT_SIZE as u64) as i64, Ordering::Release);
        self.max_offset.store((end / UNIT_SIZE as u64) as i64, Ordering::Release);
        self.max_physical_end.store(max_phys_end, Ordering::Release);
        *self.files.write().unwrap_or_else(|e| e.into_inner()) = files;
        Ok(LoadOutcome::Clean)
    }

    /// Deletes every file of the queue (before a rebuild from the commit log).
    pub fn reset(&self) -> Result<()> {
        let mut files = self.files.write().unwrap_or_else(|e| e.into_inner());
        for f in files.drain(..) {
            f.delete()?;
        }
        self.min_offset.store(0, Ordering::Release);
        self.max_offset.store(0, Ordering::Release);
        self.max_physical_end.store(0, Ordering::Release);
        Ok(())
    }

    /// Writes the unit for logical offset `offset`. Offsets already written are duplicates
    /// (recovery re-dispatch) and are skipped; a gap is filled with blank units. Single writer.
    pub fn put(&self, offset: i64, unit: Unit) -> Result<bool> {
        let mut max = self.max_offset();
        if offset < max {
            return Ok(false);
        }
        if offset > max && max == 0 && self.files.read().unwrap_or_else(|e| e.into_inner()).is_empty() {
            // An empty queue starting past 0 (rebuilt after retention): no blanks to write but
            // the head of its first file.
            self.min_offset.store(offset, Ordering::Release);
            self.max_offset.store(offset, Ordering::Release);
            max = offset;
        }
        if offset > max {
            tracing::warn!(topic = %self.topic, queue = self.queue_id, from = max, to = offset, "filling a consume-queue gap with blank units");
            for gap in max..offset {
                self.write_unit(gap, BLANK_UNIT)?;
            }
        }
        self.write_unit(offset, unit)?;
        self.max_physical_end.fetch_max(unit.commit_log_offset.saturating_add(i64::from(unit.size)), Ordering::AcqRel);
        self.max_offset.store(offset.saturating_add(1), Ordering::Release);
        Ok(true)
    }

    fn write_unit(&self, offset: i64, unit: Unit) -> Result<()> {
        let byte = (offset as u64).saturating_mul(UNIT_SIZE as u64);
        let file = self.file_for_write(byte)?;
        let pos = (byte - file.start()) as usize;
        // Space comes a step ahead of the units, never past them, so a full disk fails here
        // with a typed error rather than as SIGBUS inside the write.
        file.reserve_through(pos + UNIT_SIZE, RESERVE_STEP)?;
        // SAFETY: the dispatcher is the only writer of consume queues and `pos` is the file's
        // write position (units are written in order), past anything published.
        unsafe { file.write_at(pos, &[&unit.encode()]) };
        file.publish(pos + UNIT_SIZE);
        Ok(())
    }

    fn file_for_write(&self, byte: u64) -> Result<Arc<MappedFile>> {
        {
            let files = self.files.read().unwrap_or_else(|e| e.into_inner());
            if let Some(last) = files.last()
                && byte >= last.start()
                && byte < last.end()
            {
                return Ok(Arc::clone(last));
            }
        }
        let start = byte - byte % self.file_size as u64;
        self.fs.create_dir_all(&self.dir).map_err(StoreError::io("create", &self.dir))?;
        let file = MappedFile::create_sparse(&self.fs, &self.dir.join(file_name(start)), start, self.file_size)?;
        self.names_dirty.store(true, Ordering::Release);
        file.no_readahead();
        let file = Arc::new(file);
        let mut files = self.files.write().unwrap_or_else(|e| e.into_inner());
        if files.is_empty() && start > 0 {
            // A queue whose first unit lies past 0 (e.g. after retention removed every file):
            // Java pre-fills the file's head with blank units, so that scans see valid units.
            let head = (byte - start) as usize;
            file.reserve_through(head, RESERVE_STEP)?;
            for pos in (0..head).step_by(UNIT_SIZE) {
                // SAFETY: the file is new and unpublished; the dispatcher is the only writer.
                unsafe { file.write_at(pos, &[&BLANK_UNIT.encode()]) };
            }
            file.publish(head);
            self.min_offset.store((byte / UNIT_SIZE as u64) as i64, Ordering::Release);
        }
        files.push(Arc::clone(&file));
        Ok(file)
    }

    /// The unit at logical offset `offset`, if written and not removed.
    pub fn get(&self, offset: i64) -> Option<Unit> {
        if offset < self.min_offset() || offset >= self.max_offset() {
            return None;
        }
        let byte = (offset as u64).checked_mul(UNIT_SIZE as u64)?;
        let files = self.files.read().unwrap_or_else(|e| e.into_inner());
        let first = files.first()?.start();
        let index = usize::try_from((byte.checked_sub(first)?) / self.file_size as u64).ok()?;
        let file = files.get(index)?;
        let bytes = file.readable((byte - file.start()) as usize, UNIT_SIZE)?;
        Some(Unit::decode(bytes.first_chunk::<UNIT_SIZE>()?))
    }

    /// Visits units from `offset` up to the end of the file holding it (Java reads at most one
    /// file per pull), calling `f(offset, unit)` until it returns false.
    pub fn scan(&self, offset: i64, mut f: impl FnMut(i64, Unit) -> bool) {
        if offset < self.min_offset() {
            return;
        }
        let Some(byte) = (offset as u64).checked_mul(UNIT_SIZE as u64) else { return };
        let file = {
            let files = self.files.read().unwrap_or_else(|e| e.into_inner());
            let Some(first) = files.first().map(|f| f.start()) else { return };
            let Some(index) = byte.checked_sub(first).map(|d| d / self.file_size as u64) else { return };
            match usize::try_from(index).ok().and_then(|i| files.get(i)) {
                Some(file) => Arc::clone(file),
                None => return,
            }
        };
        let Some(bytes) = file.readable_from((byte - file.start()) as usize) else { return };
        for (at, chunk) in (offset..).zip(bytes.chunks_exact(UNIT_SIZE)) {
            let Some(arr) = chunk.first_chunk::<UNIT_SIZE>() else { break };
            if !f(at, Unit::decode(arr)) {
                break;
            }
        }
    }

    /// Recovery: drops units pointing at or past `log_end` (commit-log bytes that did not
    /// survive), so no unit can name a record that does not exist.
    pub fn truncate_beyond(&self, log_end: i64) -> Result<()> {
        let min = self.min_offset();
        let mut max = self.max_offset();
        while max > min {
            match self.get(max - 1) {
                Some(unit)
                    if unit.is_blank() || unit.commit_log_offset.saturating_add(i64::from(unit.size)) <= log_end =>
                {
                    break;
                }
                _ => max -= 1,
            }
        }
        if max == self.max_offset() {
            return Ok(());
        }
        let byte = (max as u64) * UNIT_SIZE as u64;
        let mut files = self.files.write().unwrap_or_else(|e| e.into_inner());
        while let Some(last) = files.last() {
            if last.start() > byte || (last.start() == byte && byte > 0 && files.len() > 1) {
                last.delete()?;
                files.pop();
                continue;
            }
            let pos = (byte - last.start()) as usize;
            // Only the units written past `pos` hold bytes: zero those, not the sparse rest.
            let wrote = last.wrote();
            last.set_recovered(pos);
            last.zero_range(pos, wrote.saturating_sub(pos))?;
            break;
        }
        self.max_offset.store(max, Ordering::Release);
        let phys_end = if max > min { self.get_unlocked(&files, max - 1) } else { None };
        self.max_physical_end.store(phys_end.map_or(0, |u| u.commit_log_offset + i64::from(u.size)), Ordering::Release);
        Ok(())
    }

    fn get_unlocked(&self, files: &[Arc<MappedFile>], offset: i64) -> Option<Unit> {
        let byte = (offset as u64).checked_mul(UNIT_SIZE as u64)?;
        let file = files.iter().find(|f| byte >= f.start() && byte < f.end())?;
        let bytes = file.readable((byte - file.start()) as usize, UNIT_SIZE)?;
        Some(Unit::decode(bytes.first_chunk::<UNIT_SIZE>()?))
    }

    /// Retention: raises the min offset past units that point below `log_min` and deletes
    /// files that hold only such units. Units within a queue point to increasing offsets.
    pub fn correct_min_offset(&self, log_min: i64) -> Result<()> {
        let (mut lo, hi) = (self.min_offset(), self.max_offset());
        // Binary search for the first unit at or past log_min (blanks count as below).
        let mut hi_search = hi;
        while lo < hi_search {
            let mid = lo + (hi_search - lo) / 2;
            match self.get(mid) {
                Some(u) if !u.is_blank() && u.commit_log_offset >= log_min => hi_search = mid,
                _ => lo = mid + 1,
            }
        }
        let new_min = lo;
        if new_min <= self.min_offset() {
            return Ok(());
        }
        self.min_offset.store(new_min, Ordering::Release);
        let keep_from = (new_min as u64) * UNIT_SIZE as u64;
        let mut files = self.files.write().unwrap_or_else(|e| e.into_inner());
        while files.len() > 1 && files.first().is_some_and(|f| f.end() <= keep_from) {
            let first = files.remove(0);
            first.delete()?;
        }
        Ok(())
    }

    /// Whether [`flush`](Self::flush) has anything to do: a new file's name or unflushed units.
    pub fn needs_flush(&self) -> bool {
        self.names_dirty.load(Ordering::Acquire)
            || self.files.read().unwrap_or_else(|e| e.into_inner()).iter().any(|f| f.dirty() > 0)
    }

    /// Flushes dirty units; returns whether anything was written. Unless `whole`, the page
    /// the dispatcher is filling is left for later ([`MappedFile::flush_completed_pages`]).
    pub fn flush(&self, whole: bool) -> Result<bool> {
        if self.names_dirty.swap(false, Ordering::AcqRel) {
            // The queue's directory, and the topic's and the root's above it (both may be
            // new), so that the files the units are in survive power loss.
            let dirs = [Some(self.dir.as_path()), self.dir.parent(), self.dir.parent().and_then(Path::parent)];
            for dir in dirs.into_iter().flatten() {
                if let Err(e) = self.fs.sync_dir(dir) {
                    self.names_dirty.store(true, Ordering::Release);
                    return Err(StoreError::io("fsync", dir)(e));
                }
            }
        }
        let files: Vec<Arc<MappedFile>> = {
            let files = self.files.read().unwrap_or_else(|e| e.into_inner());
            files.iter().filter(|f| f.dirty() > 0).cloned().collect()
        };
        for f in &files {
            if whole || f.is_full() {
                f.flush()?;
            } else {
                f.flush_completed_pages()?;
            }
        }
        Ok(!files.is_empty())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn unit(i: i64) -> Unit {
        Unit { commit_log_offset: i * 100, size: 100, tags_code: i }
    }

    #[test]
    fn units_roll_over_files_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 3, 5 * UNIT_SIZE);
        for i in 0..12 {
            assert!(cq.put(i, unit(i)).unwrap());
        }
        assert!(!cq.put(5, unit(5)).unwrap(), "a re-dispatched unit is a duplicate");
        assert_eq!(cq.get(7), Some(unit(7)));
        let reloaded = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 3, 5 * UNIT_SIZE);
        reloaded.load().unwrap();
        assert_eq!((reloaded.min_offset(), reloaded.max_offset()), (0, 12));
        assert_eq!(reloaded.get(11), Some(unit(11)));
        assert_eq!(reloaded.max_physical_end(), 1200);
        let mut seen = Vec::new();
        reloaded.scan(3, |off, u| {
            seen.push((off, u.tags_code));
            true
        });
        assert_eq!(seen, vec![(3, 3), (4, 4)], "a scan stops at the end of the file");
    }

    #[test]
    fn truncation_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, 4 * UNIT_SIZE);
        for i in 0..10 {
            cq.put(i, unit(i)).unwrap();
        }
        cq.truncate_beyond(650).unwrap();
        assert_eq!(cq.max_offset(), 6);
        cq.put(6, unit(6)).unwrap();
        assert_eq!(cq.get(6), Some(unit(6)));
        cq.correct_min_offset(450).unwrap();
        assert_eq!(cq.min_offset(), 5);
        assert_eq!(cq.get(4), None);
        assert!(!dir.path().join("T/0").join(file_name(0)).exists());
    }

    #[test]
    fn garbage_after_the_last_valid_unit_is_dropped_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, 8 * UNIT_SIZE);
        for i in 0..3 {
            cq.put(i, unit(i)).unwrap();
        }
        cq.flush(true).unwrap();
        drop(cq);
        let path = dir.path().join("T/0").join(file_name(0));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3 * UNIT_SIZE + 8..3 * UNIT_SIZE + 12].copy_from_slice(&(-1i32).to_be_bytes());
        bytes[4 * UNIT_SIZE..5 * UNIT_SIZE].copy_from_slice(&unit(4).encode());
        std::fs::write(&path, &bytes).unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, 8 * UNIT_SIZE);
        assert_eq!(cq.load().unwrap(), LoadOutcome::Damaged, "valid data after the bad unit");
        // A torn tail (nothing valid after it) is cut.
        bytes[4 * UNIT_SIZE..5 * UNIT_SIZE].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, 8 * UNIT_SIZE);
        assert_eq!(cq.load().unwrap(), LoadOutcome::Clean);
        assert_eq!(cq.max_offset(), 3);
        assert_eq!(std::fs::read(&path).unwrap()[3 * UNIT_SIZE..], [0u8; 5 * UNIT_SIZE]);
    }

    /// Blocks a file really holds on disk.
    fn disk_bytes(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).unwrap().blocks() * 512
    }

    #[test]
    fn a_queue_takes_disk_for_its_units_not_for_its_whole_file() {
        // Java's file size: 300,000 units of 20 bytes.
        const FILE: usize = 300_000 * UNIT_SIZE;
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, FILE);
        cq.put(0, unit(0)).unwrap();
        cq.flush(true).unwrap();
        let path = dir.path().join("T/0").join(file_name(0));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), FILE as u64, "the file keeps Java's size");
        assert!(disk_bytes(&path) <= RESERVE_STEP as u64, "one unit took {} bytes of disk", disk_bytes(&path));
        // Units past the first step get their space as they come.
        for i in 1..2_000 {
            cq.put(i, unit(i)).unwrap();
        }
        cq.flush(true).unwrap();
        let held = disk_bytes(&path);
        assert!(held >= (2_000 * UNIT_SIZE) as u64 && held <= (2_000 * UNIT_SIZE + 2 * RESERVE_STEP) as u64, "{held}");
        drop(cq);
        // Reloading finds every unit and leaves the tail sparse.
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, FILE);
        assert_eq!(cq.load().unwrap(), LoadOutcome::Clean);
        assert_eq!(cq.max_offset(), 2_000);
        assert_eq!(cq.get(1_999), Some(unit(1_999)));
        assert_eq!(disk_bytes(&path), held, "loading gave the sparse tail no blocks");
        cq.put(2_000, unit(2_000)).unwrap();
        assert_eq!(cq.get(2_000), Some(unit(2_000)));
    }

    #[test]
    fn a_valid_unit_far_past_a_hole_still_marks_the_queue_damaged() {
        const FILE: usize = 300_000 * UNIT_SIZE;
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, FILE);
        for i in 0..3 {
            cq.put(i, unit(i)).unwrap();
        }
        cq.flush(true).unwrap();
        drop(cq);
        let path = dir.path().join("T/0").join(file_name(0));
        // A unit 4 MB in, past the reserved step and a hole; unit 3 is invalid.
        let far = 200_000 * UNIT_SIZE;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &unit(9).encode(), far as u64).unwrap();
        drop(f);
        let cq = ConsumeQueue::new(&crate::fs::real(), dir.path(), "T", 0, FILE);
        assert_eq!(cq.load().unwrap(), LoadOutcome::Damaged, "the data past the hole was found");
    }
}
