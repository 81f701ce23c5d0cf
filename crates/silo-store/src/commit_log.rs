//! The commit log: consecutive fixed-size mapped segments named by their start offset.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::{Result, StoreError};
use crate::fs::Fs;
use crate::mapped::{MappedFile, file_name, parse_file_name};

/// How far ahead of the write position pages are faulted in: far more than the fastest disk
/// fills between two rounds (2 ms) of the allocator thread.
const PREFAULT_WINDOW: usize = 32 << 20;

#[derive(Debug)]
pub struct CommitLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    segment_size: usize,
    segments: RwLock<Vec<Arc<MappedFile>>>,
    /// End of the published records: everything below is readable and dispatchable.
    max_offset: AtomicI64,
    /// Start of the oldest segment still present.
    min_offset: AtomicI64,
    /// End of the bytes known to be on disk.
    flushed_offset: AtomicI64,
    /// The next segment, created ahead of need by the allocator.
    prepared: Mutex<Option<Arc<MappedFile>>>,
}

impl CommitLog {
    /// Opens the segments in `dir`. Every segment must have exactly `segment_size` bytes and
    /// follow the previous one without a gap, with two repairs (docs/store-format.md): a
    /// zero-length last file is deleted (created but never written), and a last file shorter
    /// than a segment (cut off by a crash or a copy) is extended with zeros, which the recovery
    /// walk then treats as the end of the data.
    pub fn open(fs: &Arc<dyn Fs>, dir: &Path, segment_size: usize) -> Result<Self> {
        fs.create_dir_all(dir).map_err(StoreError::io("create", dir))?;
        let mut found: Vec<(u64, PathBuf)> = Vec::new();
        for path in fs.list_dir(dir).map_err(StoreError::io("list", dir))? {
            match path.file_name().and_then(|n| n.to_str()).and_then(parse_file_name) {
                Some(start) => found.push((start, path)),
                None => {
                    tracing::warn!(path = %path.display(), "ignoring a file that is not a commit-log segment")
                }
            }
        }
        found.sort();
        // Segments at the end that were created ahead of need and never written (their first
        // record would start at byte 0) are removed, so that a short last segment before them
        // is still recognised as the last.
        while let Some((_, path)) = found.last() {
            let mut head = [0u8; 8];
            let read = fs.read_at(path, &mut head, 0).map_err(StoreError::io("read", path))?;
            if found.len() > 1 && (read == 0 || head == [0u8; 8]) {
                fs.remove_file(path).map_err(StoreError::io("delete", path))?;
                found.pop();
            } else {
                break;
            }
        }
        let count = found.len();
        let mut segments = Vec::with_capacity(count);
        for (i, (start, path)) in found.into_iter().enumerate() {
            let last = i + 1 == count;
            let len = fs.file_len(&path).map_err(StoreError::io("stat", &path))?;
            if start % segment_size as u64 != 0 {
                return Err(StoreError::Layout {
                    path,
                    reason: format!("start offset is not a multiple of the segment size {segment_size}"),
                });
            }
            if len == 0 && last {
                fs.remove_file(&path).map_err(StoreError::io("delete", &path))?;
                continue;
            }
            if len < segment_size as u64 && last {
                tracing::warn!(path = %path.display(), len, "last commit-log segment is short; extending it with zeros");
                fs.extend(&path, segment_size as u64).map_err(StoreError::io("extend", &path))?;
            }
            let segment = MappedFile::open(fs, &path, start, segment_size)?;
            segment.sequential();
            segments.push(Arc::new(segment));
        }
        for pair in segments.windows(2) {
            if let [a, b] = pair
                && a.end() != b.start()
            {
                return Err(StoreError::Layout {
                    path: b.path().to_owned(),
                    reason: format!("does not follow {} (expected start {})", a.path().display(), a.end()),
                });
            }
        }
        let min = segments.first().map_or(0, |s| s.start() as i64);
        Ok(Self {
            fs: Arc::clone(fs),
            dir: dir.to_owned(),
            segment_size,
            segments: RwLock::new(segments),
            max_offset: AtomicI64::new(min),
            min_offset: AtomicI64::new(min),
            flushed_offset: AtomicI64::new(min),
            prepared: Mutex::new(None),
        })
    }

    pub fn segment_size(&self) -> usize {
        self.segment_size
    }

    pub fn max_offset(&self) -> i64 {
        self.max_offset.load(Ordering::Acquire)
    }

    pub(crate) fn set_max_offset(&self, offset: i64) {
        self.max_offset.store(offset, Ordering::Release);
    }

    pub fn min_offset(&self) -> i64 {
        self.min_offset.load(Ordering::Acquire)
    }

    pub fn flushed_offset(&self) -> i64 {
        self.flushed_offset.load(Ordering::Acquire)
    }

    pub(crate) fn set_flushed_offset(&self, offset: i64) {
        self.flushed_offset.fetch_max(offset, Ordering::AcqRel);
    }

    /// An empty log that is to begin at `offset` (a replica's first segment, where its
    /// master's last one starts) rather than at 0.
    pub(crate) fn start_at(&self, offset: i64) {
        self.min_offset.store(offset, Ordering::Release);
        self.max_offset.store(offset, Ordering::Release);
        self.flushed_offset.store(offset, Ordering::Release);
    }

    /// A snapshot of the segment list.
    pub fn segments(&self) -> Vec<Arc<MappedFile>> {
        self.segments.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn last_segment(&self) -> Option<Arc<MappedFile>> {
        self.segments.read().unwrap_or_else(|e| e.into_inner()).last().cloned()
    }

    /// The segment holding global offset `offset`.
    pub fn segment_for(&self, offset: i64) -> Option<Arc<MappedFile>> {
        let offset = u64::try_from(offset).ok()?;
        let segments = self.segments.read().unwrap_or_else(|e| e.into_inner());
        let first = segments.first()?.start();
        let index = usize::try_from(offset.checked_sub(first)? / self.segment_size as u64).ok()?;
        segments.get(index).filter(|s| offset < s.end()).cloned()
    }

    /// The segment that follows `current` (or the first one at 0): the prepared one if it is
    /// ready, else created now. Called by the append critical section.
    pub(crate) fn roll(&self, next_start: u64) -> Result<Arc<MappedFile>> {
        let prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner()).take();
        let segment = match prepared {
            Some(seg) if seg.start() == next_start => seg,
            other => {
                // Prepared for an empty log at another start (a replica's log begins where its
                // master's newest segment does): its file must not stay behind as a segment of
                // zeros before the log. (With segments in the list, a stale prepared segment
                // is one the writer created itself meanwhile: its file is in use.)
                if let Some(stale) = other
                    && self.segments.read().unwrap_or_else(|e| e.into_inner()).is_empty()
                    && stale.start() != next_start
                {
                    stale.delete()?;
                }
                Arc::new(self.create_segment(next_start)?)
            }
        };
        self.segments.write().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&segment));
        Ok(segment)
    }

    /// Creates the segment after the last one ahead of need (the allocator thread).
    pub(crate) fn prepare_next(&self) -> Result<()> {
        let next = self.last_segment().map_or(self.min_offset() as u64, |s| s.end());
        {
            let prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
            if prepared.as_ref().is_some_and(|p| p.start() == next) {
                return Ok(());
            }
        }
        let segment = self.create_segment(next)?;
        segment.prefault_ahead(PREFAULT_WINDOW);
        *self.prepared.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(segment));
        Ok(())
    }

    /// A new segment, its space reserved and its name durable (a record acknowledged after a
    /// sync must not vanish with a directory entry that power loss forgot).
    fn create_segment(&self, start: u64) -> Result<MappedFile> {
        let segment = MappedFile::create(&self.fs, &self.dir.join(file_name(start)), start, self.segment_size)?;
        segment.sequential();
        self.fs.sync_dir(&self.dir).map_err(StoreError::io("fsync", &self.dir))?;
        Ok(segment)
    }

    /// Keeps the pages ahead of the write position faulted in; returns whether it did work.
    pub(crate) fn prefault(&self) -> bool {
        self.last_segment().is_some_and(|s| !s.is_full() && s.prefault_ahead(PREFAULT_WINDOW))
    }

    /// Recovery: the log ends at `end`. Later segments are deleted, the tail of the last one
    /// is zeroed so that no stale bytes can ever be read as records.
    pub(crate) fn truncate_to(&self, end: i64) -> Result<()> {
        let end_u = u64::try_from(end).unwrap_or(0);
        let mut segments = self.segments.write().unwrap_or_else(|e| e.into_inner());
        while let Some(last) = segments.last() {
            if last.start() > end_u || (last.start() == end_u && segments.len() > 1) {
                last.delete()?;
                segments.pop();
                continue;
            }
            let pos = (end_u - last.start()) as usize;
            last.set_recovered(pos);
            last.zero_tail(pos)?;
            break;
        }
        for seg in segments.iter() {
            if seg.end() <= end_u {
                seg.set_recovered(self.segment_size);
            }
        }
        drop(segments);
        self.max_offset.store(end, Ordering::Release);
        self.flushed_offset.store(end, Ordering::Release);
        Ok(())
    }

    /// Retention: deletes the oldest segments for which `expired` holds, never the last one.
    /// Returns the new minimum offset.
    pub(crate) fn delete_oldest_while(&self, mut expired: impl FnMut(&MappedFile) -> bool) -> Result<i64> {
        let mut segments = self.segments.write().unwrap_or_else(|e| e.into_inner());
        while segments.len() > 1 && segments.first().is_some_and(|s| expired(s)) {
            let first = segments.remove(0);
            tracing::info!(path = %first.path().display(), "deleting expired commit-log segment");
            first.delete()?;
        }
        let min = segments.first().map_or(self.max_offset(), |s| s.start() as i64);
        self.min_offset.store(min, Ordering::Release);
        Ok(min)
    }

    /// Flushes every segment with dirty bytes; returns the flushed end. Unless `whole`, the
    /// page the writer is filling is left for later ([`MappedFile::flush_completed_pages`]).
    pub(crate) fn flush(&self, whole: bool) -> Result<i64> {
        let target = self.max_offset();
        let dirty: Vec<Arc<MappedFile>> = {
            let segments = self.segments.read().unwrap_or_else(|e| e.into_inner());
            segments
                .iter()
                .rev()
                .take_while(|s| s.dirty() > 0 || s.flushed() < s.size())
                .filter(|s| s.dirty() > 0)
                .cloned()
                .collect()
        };
        let mut flushed = target;
        for (i, seg) in dirty.iter().rev().enumerate() {
            let last = i + 1 == dirty.len();
            if whole || !last || seg.is_full() {
                seg.flush()?;
            } else {
                let to = seg.flush_completed_pages()?;
                flushed = flushed.min(seg.start() as i64 + to as i64);
            }
        }
        self.set_flushed_offset(flushed);
        Ok(flushed)
    }

    /// Bytes appended but not yet flushed.
    pub fn dirty_bytes(&self) -> i64 {
        self.max_offset() - self.flushed_offset()
    }
}
