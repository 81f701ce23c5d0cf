//! The `checkpoint` file (docs/store-format.md §6): 4 KiB, big-endian longs at 0 `physicMsgTimestamp` (store
//! time of the last flushed commit-log record), 8 `logicsMsgTimestamp` (last record whose
//! consume-queue units are flushed), 16 `indexMsgTimestamp`, 24 `masterFlushedOffset`, 32
//! `confirmPhyOffset`. Java reads the same fields, so the file is shared with the Java store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::fs::Fs;

pub const CHECKPOINT_SIZE: usize = 4096;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub physic_msg_timestamp: i64,
    pub logics_msg_timestamp: i64,
    pub index_msg_timestamp: i64,
    pub master_flushed_offset: i64,
    pub confirm_phy_offset: i64,
}

impl Checkpoint {
    /// Java's `getMinTimestamp`: records stored at or before this time are known to be both
    /// flushed and dispatched (3 s of slack for clock and flush races).
    pub fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp.min(self.logics_msg_timestamp) - 3000).max(0)
    }

    fn encode(&self) -> [u8; 40] {
        let mut out = [0u8; 40];
        for (slot, v) in out.chunks_exact_mut(8).zip([
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        ]) {
            slot.copy_from_slice(&v.to_be_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> Self {
        let field =
            |i: usize| bytes.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map_or(0, i64::from_be_bytes);
        Self {
            physic_msg_timestamp: field(0),
            logics_msg_timestamp: field(1),
            index_msg_timestamp: field(2),
            master_flushed_offset: field(3),
            confirm_phy_offset: field(4),
        }
    }
}

/// The checkpoint file.
#[derive(Debug)]
pub struct CheckpointFile {
    fs: Arc<dyn Fs>,
    path: PathBuf,
}

impl CheckpointFile {
    /// Opens or creates the file; returns it with the stored values (zeros for a new file).
    pub fn open(fs: &Arc<dyn Fs>, path: &Path) -> Result<(Self, Checkpoint)> {
        let stored = if fs.exists(path) {
            let mut buf = [0u8; 40];
            let read = fs.read_at(path, &mut buf, 0).map_err(StoreError::io("read", path))?;
            let len = fs.file_len(path).map_err(StoreError::io("stat", path))?;
            if len < CHECKPOINT_SIZE as u64 {
                fs.extend(path, CHECKPOINT_SIZE as u64).map_err(StoreError::io("size", path))?;
            }
            if read == buf.len() { Checkpoint::decode(&buf) } else { Checkpoint::default() }
        } else {
            fs.write_synced(path, &[0u8; CHECKPOINT_SIZE]).map_err(StoreError::io("create", path))?;
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir).map_err(StoreError::io("fsync", dir))?;
            }
            Checkpoint::default()
        };
        Ok((Self { fs: Arc::clone(fs), path: path.to_owned() }, stored))
    }

    /// Writes and fsyncs the values (40 bytes in one sector: written whole or not at all).
    pub fn store(&self, cp: &Checkpoint) -> Result<()> {
        self.fs.write_at_synced(&self.path, &cp.encode(), 0).map_err(StoreError::io("write", &self.path))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_4_kib() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        let (file, cp) = CheckpointFile::open(&crate::fs::real(), &path).unwrap();
        assert_eq!(cp, Checkpoint::default());
        let cp = Checkpoint {
            physic_msg_timestamp: 5000,
            logics_msg_timestamp: 4000,
            index_msg_timestamp: 3,
            ..Default::default()
        };
        file.store(&cp).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert_eq!(CheckpointFile::open(&crate::fs::real(), &path).unwrap().1, cp);
        assert_eq!(cp.min_timestamp(), 1000);
        assert_eq!(&std::fs::read(&path).unwrap()[..8], &5000i64.to_be_bytes());
    }
}
