//! The store's one seam to the file system.
//!
//! Every file operation of the store (create, map, sync, extend, rename, remove, list, lock)
//! goes through [`Fs`], and every mapped file is a [`Region`]. The real implementation,
//! [`RealFs`], is what runs in production; [`SimFs`] is a simulated machine for tests: it
//! keeps files in memory, can fail any operation on purpose, and can lose power, keeping only
//! what a completed sync covered (plus, at random, some of the pages written since).
//!
//! The seam costs nothing on the hot path: a region hands out its base address once, and the
//! append path copies into it directly. Only per-file and per-flush operations (a sync, a new
//! segment) pass through a trait object.

mod real;
pub mod sim;

use std::fmt::Debug;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

pub use real::{RealFs, mappings_in_use};
pub use sim::SimFs;

/// How [`Fs::map_file`] finds the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapMode {
    /// The file exists with exactly the requested size.
    Open,
    /// Create the file at full size, or reuse an empty leftover of an earlier attempt, and
    /// reserve its space. Fails with [`io::ErrorKind::StorageFull`] (and leaves no file
    /// behind) when the file system cannot hold it.
    Create,
    /// Create the file at full size, or reuse an empty leftover, without reserving its space:
    /// the caller reserves it ahead of its writes with [`Region::reserve_range`]. For files of
    /// which most stay nearly empty (a consume queue per queue).
    CreateSparse,
}

/// Space on the file system holding a path, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    pub total: u64,
    /// Free blocks, including those only the superuser may use (what `df` counts as used is
    /// `total - free`).
    pub free: u64,
}

impl DiskSpace {
    /// The used fraction, as Java's broker computes it: `(total - free) / total`.
    pub fn used_ratio(&self) -> f64 {
        if self.total == 0 { 0.0 } else { self.total.saturating_sub(self.free) as f64 / self.total as f64 }
    }
}

/// Whether a region's space is reserved on disk (see [`Region::reserve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// Every byte of the region has a block behind it: writes through the mapping cannot
    /// fault for lack of space.
    Reserved,
    /// The file system can neither preallocate nor be filled in; writes may fault (SIGBUS)
    /// once it is full.
    Unsupported,
}

/// A file mapped into memory at a fixed size.
///
/// # Safety contract
/// [`as_ptr`](Region::as_ptr) is valid for reads and writes of [`len`](Region::len) bytes for
/// the life of the region and never moves. Callers coordinate who writes which bytes.
pub trait Region: Send + Sync + Debug {
    /// The first byte of the mapping.
    fn as_ptr(&self) -> *mut u8;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Makes bytes `[offset, offset + len)` durable (msync). An error means their state on
    /// disk is unknown, and stays unknown: a later successful sync does not prove they were
    /// written.
    fn sync(&self, offset: usize, len: usize) -> io::Result<()>;
    /// Gives every byte of the region a block on disk, so that writing into the mapping can
    /// never meet a full file system.
    fn reserve(&self) -> io::Result<Reservation>;
    /// Gives bytes `[offset, offset + len)` blocks on disk, as [`reserve`](Region::reserve)
    /// does for the whole region.
    fn reserve_range(&self, offset: usize, len: usize) -> io::Result<Reservation>;
    /// The first stretch `[start, end)` at or after `from` that may hold bytes other than
    /// zero, or `None` if everything from `from` on reads as zeros. A file system that cannot
    /// tell answers `[from, len)`: the caller then looks at every byte.
    fn next_data(&self, from: usize) -> io::Result<Option<(usize, usize)>> {
        Ok((from < self.len()).then_some((from, self.len())))
    }
    /// Makes `[from, len)` read as zeros, durably, keeping the space reserved.
    fn zero_from(&self, from: usize) -> io::Result<()>;
    /// Tells the kernel not to read ahead (files written and read a few bytes at a time).
    fn advise_random(&self) -> io::Result<()> {
        Ok(())
    }
    /// Tells the kernel the mapping is read in order (a consumer catching up on a segment).
    fn advise_sequential(&self) -> io::Result<()> {
        Ok(())
    }
    /// Faults in, writable, the pages of `[offset, offset + len)`, without changing bytes.
    fn populate_write(&self, _offset: usize, _len: usize) -> io::Result<()> {
        Ok(())
    }
}

/// What holds a store directory for one store: dropping it releases the directory.
pub trait StoreLock: Send + Sync + Debug {}

/// The file system the store lives on.
pub trait Fs: Send + Sync + Debug {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The entries of `dir` (files and directories), in no particular order.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    fn is_dir(&self, path: &Path) -> bool;
    fn exists(&self, path: &Path) -> bool;
    fn file_len(&self, path: &Path) -> io::Result<u64>;
    /// The whole file (config files, the checkpoint: small files).
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Reads from `offset` into `buf`; returns how many bytes were there.
    fn read_at(&self, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Creates or truncates `path` (readable by its owner only), writes `bytes` and syncs the
    /// file.
    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Writes `bytes` at `offset` of an existing file and syncs its data.
    fn write_at_synced(&self, path: &Path, bytes: &[u8], offset: u64) -> io::Result<()>;
    /// Extends (never shrinks) a file to `len` bytes with zeros, and syncs it.
    fn extend(&self, path: &Path, len: u64) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn map_file(&self, path: &Path, size: usize, mode: MapMode) -> io::Result<Box<dyn Region>>;
    fn modified(&self, path: &Path) -> Option<SystemTime>;
    /// Space on the file system holding `path`.
    fn space(&self, path: &Path) -> io::Result<DiskSpace>;
    /// Takes the store directory for this store alone: no other process, and no other open
    /// store in this process. [`io::ErrorKind::WouldBlock`] if it is taken.
    fn lock_store(&self, root: &Path) -> io::Result<Box<dyn StoreLock>>;
}

/// The production file system.
pub fn real() -> Arc<dyn Fs> {
    Arc::new(RealFs)
}
