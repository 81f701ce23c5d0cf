//! `config/timercheck`: 4096 bytes, of which the first 56 hold [`TimerCheckpoint`]. Written
//! with one `pwrite` + `fdatasync` of the 56 bytes (one sector: whole or not at all).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::layout::{CHECKPOINT_FILE_SIZE, CHECKPOINT_LEN, TimerCheckpoint};
use crate::error::{Result, StoreError};
use crate::fs::Fs;

#[derive(Debug)]
pub(crate) struct CheckpointFile {
    fs: Arc<dyn Fs>,
    path: PathBuf,
}

impl CheckpointFile {
    /// Opens or creates (zeros) the file; returns it with the stored values, and whether it
    /// existed.
    pub(crate) fn open(fs: &Arc<dyn Fs>, path: &Path) -> Result<(Self, TimerCheckpoint, bool)> {
        let existed = fs.exists(path);
        let stored = if existed {
            let mut buf = [0u8; CHECKPOINT_LEN];
            let read = fs.read_at(path, &mut buf, 0).map_err(StoreError::io("read", path))?;
            let len = fs.file_len(path).map_err(StoreError::io("stat", path))?;
            if len < CHECKPOINT_FILE_SIZE as u64 {
                fs.extend(path, CHECKPOINT_FILE_SIZE as u64).map_err(StoreError::io("size", path))?;
            }
            TimerCheckpoint::decode(buf.get(..read).unwrap_or_default())
        } else {
            if let Some(dir) = path.parent() {
                fs.create_dir_all(dir).map_err(StoreError::io("create", dir))?;
            }
            fs.write_synced(path, &[0u8; CHECKPOINT_FILE_SIZE]).map_err(StoreError::io("create", path))?;
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir).map_err(StoreError::io("fsync", dir))?;
            }
            TimerCheckpoint::default()
        };
        Ok((Self { fs: Arc::clone(fs), path: path.to_owned() }, stored, existed))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn store(&self, cp: &TimerCheckpoint) -> Result<()> {
        self.fs.write_at_synced(&self.path, &cp.encode(), 0).map_err(StoreError::io("write", &self.path))
    }
}
