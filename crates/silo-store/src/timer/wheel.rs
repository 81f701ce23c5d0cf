//! The `timerwheel` file: `2 × slots_total` slots of 32 bytes in one mapped region. The slot of
//! time `t` is at index `⌊t / precision⌋ mod (2 × slots_total)`; it belongs to `t` only while its
//! stored time is `⌊t / precision⌋`, so a slot left over from an earlier turn of the wheel reads
//! as empty.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::layout::{SLOT_SIZE, Slot};
use crate::error::{Result, StoreError};
use crate::fs::{Fs, MapMode, Region};

#[derive(Debug)]
pub(crate) struct Wheel {
    path: PathBuf,
    region: Box<dyn Region>,
    /// Slots in the file: `2 × slots_total`.
    slots: usize,
    precision_ms: i64,
    /// Byte range written since the last sync.
    dirty: Option<(usize, usize)>,
}

impl Wheel {
    /// Opens the file, or creates it (zeros) when it is missing or empty. Any other size is a
    /// layout error, as in Java.
    pub(crate) fn open(fs: &Arc<dyn Fs>, path: &Path, slots_total: usize, precision_ms: i64) -> Result<Self> {
        let slots = slots_total.saturating_mul(2);
        let len = slots.saturating_mul(SLOT_SIZE);
        let existing = if fs.exists(path) { fs.file_len(path).map_err(StoreError::io("stat", path))? } else { 0 };
        let region = if existing == 0 {
            let region = fs.map_file(path, len, MapMode::Create).map_err(StoreError::create(path, len))?;
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir).map_err(StoreError::io("fsync", dir))?;
            }
            region
        } else if existing != len as u64 {
            return Err(StoreError::Layout {
                path: path.to_owned(),
                reason: format!("has {existing} bytes, expected {len} ({slots_total} × 2 slots of {SLOT_SIZE} bytes)"),
            });
        } else {
            fs.map_file(path, len, MapMode::Open).map_err(StoreError::io("mmap", path))?
        };
        if region.len() != len {
            return Err(StoreError::Layout {
                path: path.to_owned(),
                reason: format!("mapped {} bytes, expected {len}", region.len()),
            });
        }
        Ok(Self { path: path.to_owned(), region, slots, precision_ms, dirty: None })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn slots(&self) -> usize {
        self.slots
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the region is valid for `len` bytes for its whole life and never moves (Region
        // contract); only this wheel writes it, through `&mut self`, so nothing writes while this
        // shared borrow lives.
        unsafe { std::slice::from_raw_parts(self.region.as_ptr(), self.region.len()) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes this the only view of the mapping.
        unsafe { std::slice::from_raw_parts_mut(self.region.as_ptr(), self.region.len()) }
    }

    /// `⌊time / precision⌋`, the value a slot stores.
    pub(crate) fn time_units(&self, time_ms: i64) -> i64 {
        time_ms.div_euclid(self.precision_ms)
    }

    pub(crate) fn index(&self, time_ms: i64) -> usize {
        let slots = i64::try_from(self.slots).unwrap_or(i64::MAX).max(1);
        usize::try_from(self.time_units(time_ms).rem_euclid(slots)).unwrap_or(0)
    }

    /// Byte offset of slot `index` in the file.
    pub(crate) fn byte_offset(index: usize) -> u64 {
        (index as u64).saturating_mul(SLOT_SIZE as u64)
    }

    pub(crate) fn raw(&self, index: usize) -> Slot {
        let at = index.saturating_mul(SLOT_SIZE);
        Slot::decode(self.bytes().get(at..at + SLOT_SIZE).unwrap_or_default())
    }

    /// The slot of `time_ms`, if it holds that time (Java `getSlot`).
    pub(crate) fn get(&self, time_ms: i64) -> Option<Slot> {
        let slot = self.raw(self.index(time_ms));
        (slot.time_units == self.time_units(time_ms)).then_some(slot)
    }

    pub(crate) fn put_raw(&mut self, index: usize, slot: &Slot) {
        let at = index.saturating_mul(SLOT_SIZE);
        if let Some(dst) = self.bytes_mut().get_mut(at..at + SLOT_SIZE) {
            dst.copy_from_slice(&slot.encode());
            let end = at + SLOT_SIZE;
            self.dirty = Some(self.dirty.map_or((at, end), |(a, b)| (a.min(at), b.max(end))));
        }
    }

    /// Writes the dirty range to disk.
    pub(crate) fn sync(&mut self) -> Result<()> {
        if let Some((from, to)) = self.dirty {
            self.region.sync(from, to - from).map_err(StoreError::io("msync", &self.path))?;
            self.dirty = None;
        }
        Ok(())
    }
}
