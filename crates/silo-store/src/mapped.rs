//! A fixed-size memory-mapped file with one writer and many readers.
//!
//! The writer (the commit log's append critical section, or the dispatcher for consume queues)
//! copies bytes past the published write position, then publishes the new position with a
//! release store. Readers only look at bytes below a position they loaded with acquire, which
//! are never written again. That is what makes handing out `&[u8]` views into the map sound
//! while the writer goes on.
//!
//! A file that retention deletes is unlinked, not truncated: a reader holding an `Arc` to it
//! keeps a valid mapping (the kernel keeps the inode until the last unmap), so a read handle
//! can never turn into SIGBUS.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::{Result, StoreError};
use crate::fs::{Fs, MapMode, Region, Reservation};

/// Bytes populated per call by [`MappedFile::prefault_ahead`].
const PREFAULT_STEP: usize = 1 << 20;

#[derive(Debug)]
pub struct MappedFile {
    path: PathBuf,
    /// Global offset of the file's first byte (its name).
    start: u64,
    size: usize,
    fs: Arc<dyn Fs>,
    region: Box<dyn Region>,
    /// `region.as_ptr()`, kept so that the hot path does not ask for it per write.
    base: *mut u8,
    /// Bytes written and published.
    wrote: AtomicUsize,
    /// Bytes known to be on disk.
    flushed: AtomicUsize,
    /// Set when retention removed the file; it is unlinked then, the mapping lives on.
    deleted: AtomicBool,
    /// Bytes whose pages are already faulted in writable (see [`MappedFile::prefault_ahead`]).
    populated: AtomicUsize,
    /// Bytes from the first that have blocks on disk, so that writes into them cannot fault
    /// on a full disk. Files created with [`MappedFile::create`] are reserved whole; sparse
    /// ones and files opened from disk from 0, until [`MappedFile::reserve`] or
    /// [`MappedFile::reserve_through`] ran.
    reserved_to: AtomicUsize,
}

// SAFETY: `base` points into `region`, which is `Send + Sync` and lives as long as `self`;
// who may write which bytes is the module's protocol (one writer past `wrote`, readers below).
unsafe impl Send for MappedFile {}
// SAFETY: as above.
unsafe impl Sync for MappedFile {}

/// The 20-digit file name of a file starting at `start`.
pub fn file_name(start: u64) -> String {
    format!("{start:020}")
}

/// Parses a 20-digit file name into its start offset.
pub fn parse_file_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit())).then(|| name.parse().ok()).flatten()
}

impl MappedFile {
    /// Creates (or reuses an empty leftover of) the file at full size, with its space
    /// reserved: a full file system fails here, with [`StoreError::DiskFull`], not later with
    /// SIGBUS in the middle of an append.
    pub fn create(fs: &Arc<dyn Fs>, path: &Path, start: u64, size: usize) -> Result<Self> {
        Self::create_with(fs, path, start, size, MapMode::Create)
    }

    /// Creates (or reuses an empty leftover of) the file at full size without reserving its
    /// space: the writer reserves it a step ahead of its writes with
    /// [`reserve_through`](Self::reserve_through). A consume queue holds 300,000 units of 20
    /// bytes; a broker with 100,000 queues that reserved each whole would need 572 GiB of disk
    /// before its first message.
    pub fn create_sparse(fs: &Arc<dyn Fs>, path: &Path, start: u64, size: usize) -> Result<Self> {
        Self::create_with(fs, path, start, size, MapMode::CreateSparse)
    }

    fn create_with(fs: &Arc<dyn Fs>, path: &Path, start: u64, size: usize, mode: MapMode) -> Result<Self> {
        if fs.exists(path) {
            let len = fs.file_len(path).map_err(StoreError::io("stat", path))?;
            if len != 0 && len != size as u64 {
                return Err(StoreError::Layout {
                    path: path.to_owned(),
                    reason: format!("exists with {len} bytes, expected 0 or {size}"),
                });
            }
        }
        let region = fs.map_file(path, size, mode).map_err(StoreError::create(path, size))?;
        let reserved_to = if mode == MapMode::Create { size } else { 0 };
        Ok(Self::new(fs, path, start, size, region, reserved_to))
    }

    /// Opens an existing file, which must have exactly `size` bytes.
    pub fn open(fs: &Arc<dyn Fs>, path: &Path, start: u64, size: usize) -> Result<Self> {
        let len = fs.file_len(path).map_err(StoreError::io("stat", path))?;
        if len != size as u64 {
            return Err(StoreError::Layout {
                path: path.to_owned(),
                reason: format!("has {len} bytes, expected {size}"),
            });
        }
        let region = fs.map_file(path, size, MapMode::Open).map_err(StoreError::io("mmap", path))?;
        Ok(Self::new(fs, path, start, size, region, 0))
    }

    fn new(
        fs: &Arc<dyn Fs>,
        path: &Path,
        start: u64,
        size: usize,
        region: Box<dyn Region>,
        reserved_to: usize,
    ) -> Self {
        let base = region.as_ptr();
        Self {
            path: path.to_owned(),
            start,
            size,
            fs: Arc::clone(fs),
            region,
            base,
            wrote: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            deleted: AtomicBool::new(false),
            populated: AtomicUsize::new(0),
            reserved_to: AtomicUsize::new(reserved_to),
        }
    }

    /// Whether writes into the file cannot meet a full disk (see [`reserve`](Self::reserve)).
    pub fn is_reserved(&self) -> bool {
        self.reserved_to.load(Ordering::Acquire) >= self.size
    }

    /// Reserves the space of a file opened from disk (it may be sparse: Java's files are, and
    /// Silo's were), before anything writes into it. [`StoreError::DiskFull`] if the file
    /// system cannot hold it; the caller must not write then.
    pub fn reserve(&self) -> Result<()> {
        if self.is_reserved() {
            return Ok(());
        }
        self.reserve_range(0, self.size)
    }

    /// Makes sure bytes `[0, end)` have blocks on disk, reserving up to the next multiple of
    /// `step` at once (one `fallocate` per step, not per write). Single writer.
    pub fn reserve_through(&self, end: usize, step: usize) -> Result<()> {
        let have = self.reserved_to.load(Ordering::Acquire);
        if end <= have {
            return Ok(());
        }
        let to = if step == 0 { end } else { end.div_ceil(step).saturating_mul(step) }.min(self.size);
        self.reserve_range(have, to)
    }

    fn reserve_range(&self, from: usize, to: usize) -> Result<()> {
        let result = if from == 0 && to >= self.size {
            self.region.reserve()
        } else {
            self.region.reserve_range(from, to.saturating_sub(from))
        };
        match result {
            Ok(Reservation::Reserved) => {}
            Ok(Reservation::Unsupported) => {
                tracing::warn!(path = %self.path.display(),
                    "this file system cannot reserve space: a full disk may stop the broker (SIGBUS)");
                // Asking again per step would not help, and would warn per step.
                self.reserved_to.store(self.size, Ordering::Release);
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                return Err(StoreError::DiskFull(format!("no space to reserve {}", self.path.display())));
            }
            Err(e) => return Err(StoreError::io("reserve", &self.path)(e)),
        }
        self.reserved_to.fetch_max(to, Ordering::AcqRel);
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn start(&self) -> u64 {
        self.start
    }

    pub fn size(&self) -> usize {
        self.size
    }

    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size as u64)
    }

    /// The published write position.
    pub fn wrote(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    pub fn flushed(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    pub fn is_full(&self) -> bool {
        self.wrote() >= self.size
    }

    /// The whole mapping, for recovery scans that run before any writer or reader exists.
    pub fn all_bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `size` bytes long and lives as long as `self`. During recovery
        // nothing writes concurrently; afterwards callers use `readable`.
        unsafe { std::slice::from_raw_parts(self.base, self.size) }
    }

    /// Published bytes `[pos, pos + len)`, if they are all below the write position.
    pub fn readable(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.wrote() {
            return None;
        }
        // SAFETY: `end <= wrote <= size`, so the range is inside the mapping, and bytes below the
        // published write position are never written again (module docs).
        Some(unsafe { std::slice::from_raw_parts(self.base.add(pos), len) })
    }

    /// Published bytes from `pos` to the write position.
    pub fn readable_from(&self, pos: usize) -> Option<&[u8]> {
        let wrote = self.wrote();
        self.readable(pos, wrote.checked_sub(pos)?)
    }

    /// Bytes `[pos, pos + len)` the caller wrote but may not have published yet.
    ///
    /// # Safety
    /// The caller is the file's only writer (as for [`write_at`](Self::write_at)) and wrote
    /// the range itself; nothing writes it while the slice lives.
    pub unsafe fn written(&self, pos: usize, len: usize) -> &[u8] {
        let end = pos.saturating_add(len).min(self.size);
        let pos = pos.min(end);
        // SAFETY: `pos..end` is inside the mapping (clamped), and the caller contract keeps it
        // unchanged while borrowed.
        unsafe { std::slice::from_raw_parts(self.base.add(pos), end - pos) }
    }

    /// Copies `parts` one after another into the file at `pos`, without publishing them.
    ///
    /// # Safety
    /// The caller is the file's only writer (it holds the lock that serialises writers), and
    /// `pos` is at or past the published write position, so no reader can be looking at the
    /// bytes written.
    pub unsafe fn write_at(&self, pos: usize, parts: &[&[u8]]) -> usize {
        let mut at = pos;
        for part in parts {
            let end = at.saturating_add(part.len());
            assert!(end <= self.size, "write past the end of {}", self.path.display());
            // SAFETY: `at..end` is inside the mapping (asserted), unobserved by readers (caller
            // contract), and `part` cannot overlap it: it is not published memory of this map.
            unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), self.base.add(at), part.len()) };
            at = end;
        }
        at.saturating_sub(pos)
    }

    /// Publishes the write position (after the bytes below it were written).
    pub fn publish(&self, wrote: usize) {
        self.wrote.store(wrote.min(self.size), Ordering::Release);
    }

    /// Recovery: sets the write and flush positions.
    pub fn set_recovered(&self, wrote: usize) {
        self.wrote.store(wrote.min(self.size), Ordering::Release);
        self.flushed.store(wrote.min(self.size), Ordering::Release);
    }

    /// Writes the dirty range to disk (msync). Returns the new flushed position.
    pub fn flush(&self) -> Result<usize> {
        self.flush_to(self.wrote())
    }

    /// Writes to disk only the pages the writer has finished with: up to the last page
    /// boundary at or below the write position. An msync of the page the writer is still
    /// filling starts its writeback, and the writer's next store into it then waits for that
    /// writeback to finish: several milliseconds, inside the append's critical section or the
    /// dispatcher. Periodic (asynchronous) flushes use this; the page is flushed once it is
    /// complete, by a whole flush, or at shutdown. Returns the new flushed position.
    pub fn flush_completed_pages(&self) -> Result<usize> {
        const PAGE: usize = 4096;
        self.flush_to(self.wrote() / PAGE * PAGE)
    }

    fn flush_to(&self, to: usize) -> Result<usize> {
        let flushed = self.flushed();
        if to > flushed {
            self.region.sync(flushed, to - flushed).map_err(StoreError::io("msync", &self.path))?;
            self.flushed.fetch_max(to, Ordering::AcqRel);
        }
        Ok(self.flushed())
    }

    /// Dirty bytes not yet flushed.
    pub fn dirty(&self) -> usize {
        self.wrote().saturating_sub(self.flushed())
    }

    /// Recovery repair: makes `[from, size)` read as zeros, durably and with the space kept
    /// reserved, so that bytes of a torn or abandoned tail can never be mistaken for records
    /// after the writer has overwritten a prefix of them.
    pub fn zero_tail(&self, from: usize) -> Result<()> {
        if from >= self.size {
            return Ok(());
        }
        self.region.zero_from(from).map_err(StoreError::io("zero", &self.path))
    }

    /// Whether any byte of `[from, size)` is not zero. Holes and extents never written are
    /// skipped without being read (see [`Region::next_data`]), so that checking the empty
    /// tail of a nearly empty file costs a system call, not a page fault per page.
    pub fn holds_data_from(&self, from: usize) -> Result<bool> {
        let mut at = from;
        while let Some((start, end)) = self.region.next_data(at).map_err(StoreError::io("seek", &self.path))? {
            let Some(bytes) = self.all_bytes().get(start.max(at)..end.min(self.size)) else { return Ok(false) };
            if bytes.iter().any(|b| *b != 0) {
                return Ok(true);
            }
            if end <= at {
                return Ok(false);
            }
            at = end;
        }
        Ok(false)
    }

    /// Recovery repair of a short range: zeros `[from, from + len)` through the mapping and
    /// makes it durable. For a torn unit whose tail already reads as zeros; zeroing the whole
    /// tail ([`zero_tail`](Self::zero_tail)) would give a sparse file's every block a place on
    /// disk.
    pub fn zero_range(&self, from: usize, len: usize) -> Result<()> {
        let end = from.saturating_add(len).min(self.size);
        if end <= from {
            return Ok(());
        }
        self.reserve_through(end, 0)?;
        // SAFETY: `from..end` is inside the mapping; recovery runs before any reader or writer.
        unsafe { std::ptr::write_bytes(self.base.add(from), 0, end - from) };
        self.region.sync(from, end - from).map_err(StoreError::io("zero", &self.path))
    }

    /// Asks for aggressive readahead on this mapping (`MADV_SEQUENTIAL`): a commit-log segment
    /// is read in order, by consumers catching up and by replication. Without it, a read fault
    /// on a page not in memory reads one window around the page and waits for it; with it, the
    /// kernel reads the next window ahead while the current one is being served, and treats
    /// the pages as used once when it needs memory.
    pub fn sequential(&self) {
        if let Err(e) = self.region.advise_sequential() {
            tracing::debug!(path = %self.path.display(), error = %e, "cannot advise sequential reads");
        }
    }

    /// Turns off readahead for this mapping. A write fault on a file page that is not cached
    /// yet otherwise reads (for a sparse file: zero-fills) a whole readahead window first; for
    /// a fresh consume-queue file that took ~2 ms on its first unit, which delayed a new
    /// topic's first message by as much. Files written and read a few bytes at a time (consume
    /// queues, the index) do not need it.
    pub fn no_readahead(&self) {
        if let Err(e) = self.region.advise_random() {
            tracing::debug!(path = %self.path.display(), error = %e, "cannot turn off readahead");
        }
    }

    /// Faults in, writable, the pages up to `window` bytes past the write position, so that the
    /// writer does not take a page fault (and the kernel's page zeroing) per new page on its
    /// critical path. Populating only fills page tables, it never changes the file's bytes, so
    /// it is safe while the writer writes. Never on a file whose space is not reserved: on a
    /// full disk that would fault. Returns whether anything was done.
    pub fn prefault_ahead(&self, window: usize) -> bool {
        const PAGE: usize = 4096;
        if !self.is_reserved() {
            return false;
        }
        let target = self.wrote().saturating_add(window).min(self.size);
        let from = self.populated.load(Ordering::Acquire).max(self.wrote() / PAGE * PAGE);
        if target <= from {
            return false;
        }
        // In steps: populating holds the process's address-space lock, which every `mmap`
        // (a new consume queue, an index file) waits for. One 32 MiB call kept the dispatcher
        // from opening a new queue's file for tens of milliseconds; 1 MiB steps bound that
        // wait to well under one.
        let mut at = from;
        while at < target {
            let len = (target - at).min(PREFAULT_STEP);
            if let Err(e) = self.region.populate_write(at, len) {
                // Kernels before 5.14 lack MADV_POPULATE_WRITE: the writer faults as usual.
                tracing::debug!(error = %e, "cannot prefault a mapped file");
                self.populated.store(self.size, Ordering::Release);
                return false;
            }
            at += len;
            self.populated.fetch_max(at, Ordering::AcqRel);
        }
        true
    }

    /// Marks the file deleted and unlinks it. Readers holding it keep their mapping.
    pub fn delete(&self) -> Result<()> {
        if !self.deleted.swap(true, Ordering::AcqRel) {
            self.fs.remove_file(&self.path).map_err(StoreError::io("delete", &self.path))?;
        }
        Ok(())
    }

    /// Last modification time of the file, for retention.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        self.fs.modified(&self.path)
    }
}
