//! The `timerlog/` directory: a queue of mapped files of one size, named by the global offset of
//! their first byte (20 digits), holding 52-byte units from position 0 of each file and a blank
//! record in the space at the end that cannot take a unit and its own 16-byte blank.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::layout::{BLANK_MAGIC_CODE, MIN_BLANK_LEN, TimerUnit, UNIT_SIZE, blank_record, get_i32};
use crate::error::{Result, StoreError};
use crate::fs::Fs;
use crate::mapped::{MappedFile, file_name, parse_file_name};

/// What one position of a timer-log file holds, for recovery.
pub(crate) enum Found {
    Unit(TimerUnit),
    /// The blank record: the rest of the file holds nothing.
    Blank,
    /// Neither: the log ends here.
    End,
}

#[derive(Debug)]
pub(crate) struct TimerLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    file_size: usize,
    files: Vec<MappedFile>,
    /// A file was created or removed since the last flush: the directory must be synced before
    /// the units it holds count as durable.
    names_dirty: bool,
}

impl TimerLog {
    /// Maps every file of the directory (creating the directory if needed). Write positions are
    /// set by recovery ([`TimerLog::set_end`]).
    pub(crate) fn load(fs: &Arc<dyn Fs>, dir: &Path, file_size: usize) -> Result<Self> {
        fs.create_dir_all(dir).map_err(StoreError::io("create", dir))?;
        let entries = fs.list_dir(dir).map_err(StoreError::io("list", dir))?;
        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        for path in entries {
            match path.file_name().and_then(|n| n.to_str()).and_then(parse_file_name) {
                Some(start) if !fs.is_dir(&path) => names.push((start, path)),
                _ => tracing::warn!(path = %path.display(), "ignoring an entry that is not a timer-log file"),
            }
        }
        names.sort();
        let mut files: Vec<MappedFile> = Vec::with_capacity(names.len());
        let mut removed = false;
        for (start, path) in names {
            let len = fs.file_len(&path).map_err(StoreError::io("stat", &path))?;
            if len == 0 {
                // Created but never written (Java deletes these too).
                fs.remove_file(&path).map_err(StoreError::io("delete", &path))?;
                removed = true;
                continue;
            }
            if start % file_size as u64 != 0 {
                return Err(StoreError::Layout {
                    path,
                    reason: format!("start offset is not a multiple of the timer-log file size {file_size}"),
                });
            }
            if let Some(prev) = files.last()
                && prev.end() != start
            {
                return Err(StoreError::Layout {
                    path,
                    reason: format!("does not follow {} (expected start {})", prev.path().display(), prev.end()),
                });
            }
            let file = MappedFile::open(fs, &path, start, file_size)?;
            file.no_readahead();
            files.push(file);
        }
        if removed {
            fs.sync_dir(dir).map_err(StoreError::io("fsync", dir))?;
        }
        Ok(Self { fs: Arc::clone(fs), dir: dir.to_owned(), file_size, files, names_dirty: false })
    }

    pub(crate) fn file_size(&self) -> usize {
        self.file_size
    }

    pub(crate) fn files(&self) -> &[MappedFile] {
        &self.files
    }

    /// Global offset of the first byte still on disk.
    pub(crate) fn min_offset(&self) -> i64 {
        self.files.first().map_or(0, |f| f.start() as i64)
    }

    /// Global offset one past the last published byte: where the next unit (or blank) goes.
    pub(crate) fn end(&self) -> i64 {
        self.files.last().map_or(0, |f| (f.start() + f.wrote() as u64) as i64)
    }

    /// What position `pos` of file `index` holds (recovery; reads the whole mapping).
    pub(crate) fn probe(&self, index: usize, pos: usize) -> Found {
        let Some(file) = self.files.get(index) else { return Found::End };
        let bytes = file.all_bytes();
        let Some(head) = bytes.get(pos..pos + MIN_BLANK_LEN) else { return Found::End };
        if get_i32(head, 12) == BLANK_MAGIC_CODE {
            return Found::Blank;
        }
        match bytes.get(pos..pos + UNIT_SIZE).and_then(|b| b.first_chunk::<UNIT_SIZE>()) {
            Some(b) => {
                let unit = TimerUnit::decode(b);
                if unit.is_valid() { Found::Unit(unit) } else { Found::End }
            }
            None => Found::End,
        }
    }

    /// Recovery: the log ends at global offset `end`, which lies in file `index` (or at its
    /// end). Earlier files are whole; the rest of that file is zeroed, later files are deleted.
    /// Returns how many files were deleted.
    pub(crate) fn set_end(&mut self, index: usize, end: u64) -> Result<usize> {
        for file in self.files.iter().take(index) {
            file.set_recovered(file.size());
        }
        let mut deleted = 0;
        if let Some(file) = self.files.get(index) {
            let pos = usize::try_from(end.saturating_sub(file.start())).unwrap_or(usize::MAX).min(file.size());
            file.set_recovered(pos);
            if pos < file.size() && file.all_bytes().get(pos..).is_some_and(|rest| rest.iter().any(|b| *b != 0)) {
                file.zero_tail(pos)?;
            }
            for later in self.files.drain(index + 1..) {
                tracing::warn!(path = %later.path().display(), "removing a timer-log file past the end of the log");
                later.delete()?;
                deleted += 1;
            }
        }
        if deleted > 0 {
            self.fs.sync_dir(&self.dir).map_err(StoreError::io("fsync", &self.dir))?;
        }
        Ok(deleted)
    }

    /// The file holding global offset `pos`.
    pub(crate) fn file_for(&self, pos: i64) -> Option<&MappedFile> {
        let pos = u64::try_from(pos).ok()?;
        let first = self.files.first()?.start();
        let index = usize::try_from(pos.checked_sub(first)? / self.file_size as u64).ok()?;
        self.files.get(index).filter(|f| pos >= f.start() && pos < f.end())
    }

    /// Appends one unit; returns its global offset. Fills the end of the current file with a
    /// blank record first when the unit and a later blank would not both fit.
    pub(crate) fn append(&mut self, unit: &[u8; UNIT_SIZE]) -> Result<i64> {
        let needs_new = match self.files.last() {
            None => true,
            Some(last) => {
                let wrote = last.wrote();
                if wrote + UNIT_SIZE + MIN_BLANK_LEN > last.size() {
                    if wrote < last.size() {
                        last.reserve()?;
                        let blank = blank_record(last.size() - wrote);
                        let n = blank.len().min(last.size() - wrote);
                        // SAFETY: the timer store is the only writer of its log (`&mut self`) and
                        // `wrote` is the published write position, which readers never pass.
                        unsafe { last.write_at(wrote, &[blank.get(..n).unwrap_or_default()]) };
                        last.publish(last.size());
                    }
                    true
                } else {
                    false
                }
            }
        };
        if needs_new {
            let start = self.files.last().map_or(0, MappedFile::end);
            let path = self.dir.join(file_name(start));
            let file = MappedFile::create(&self.fs, &path, start, self.file_size)?;
            file.no_readahead();
            self.files.push(file);
            self.names_dirty = true;
        }
        let Some(file) = self.files.last() else {
            return Err(StoreError::Layout { path: self.dir.clone(), reason: "no timer-log file".into() });
        };
        file.reserve()?;
        let pos = file.wrote();
        // SAFETY: as above: single writer, at the published write position. The file has room:
        // either it is new (file size >= 68) or the check above left it.
        unsafe { file.write_at(pos, &[unit]) };
        file.publish(pos + UNIT_SIZE);
        Ok((file.start() + pos as u64) as i64)
    }

    /// Makes every published byte durable, and the directory's names.
    pub(crate) fn flush(&mut self) -> Result<()> {
        for file in &self.files {
            if file.dirty() > 0 {
                file.flush()?;
            }
        }
        if self.names_dirty {
            self.fs.sync_dir(&self.dir).map_err(StoreError::io("fsync", &self.dir))?;
            self.names_dirty = false;
        }
        Ok(())
    }

    /// Removes the oldest file (never the last one).
    pub(crate) fn remove_first(&mut self) -> Result<()> {
        if self.files.len() < 2 {
            return Ok(());
        }
        let file = self.files.remove(0);
        file.delete()?;
        self.names_dirty = true;
        Ok(())
    }
}
