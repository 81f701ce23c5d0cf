//! Store errors. I/O errors name the file; corruption errors name the file and the offset.

use std::path::{Path, PathBuf};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file whose size or name breaks the layout (see docs/store-format.md).
    #[error("{path}: {reason}")]
    Layout { path: PathBuf, reason: String },
    /// Bytes on disk that cannot be what Silo or RocketMQ wrote.
    #[error("{path} at byte {offset}: {reason}")]
    Corrupt { path: PathBuf, offset: u64, reason: String },
    /// A config file that is not the JSON it should be (and no usable backup).
    #[error("config file {path}: {reason}")]
    Config { path: PathBuf, reason: String },
    /// A message the format cannot store (too large, bad properties, too long a topic).
    #[error("message rejected: {0}")]
    MessageIllegal(String),
    /// An LMQ name that is not a legal queue name (it would reach the file system).
    #[error("invalid LMQ name {0:?}")]
    InvalidLmqName(String),
    /// A topic name that is not legal (it would reach the file system).
    #[error("invalid topic name {0:?}")]
    InvalidTopic(String),
    /// A commit-log offset that holds no readable record.
    #[error("no record at commit-log offset {0}")]
    NoRecordAt(i64),
    /// Synchronous flush did not complete within the timeout; the message is stored.
    #[error("flush did not complete within {0:?}")]
    FlushTimeout(std::time::Duration),
    /// The disk has no room for new records: a file could not be created or reserved, or the
    /// disk's used ratio passed `diskSpaceWarningLevelRatio`. Reads go on; writes are accepted
    /// again once space returns.
    #[error("the disk is full: {0}")]
    DiskFull(String),
    /// A sync failed, so what it covered may not be on disk, and no later sync can prove it
    /// is: the store accepts no more writes until it is reopened (recovery then finds what
    /// really is on disk).
    #[error("writes are stopped: {0}")]
    WritesStopped(String),
    /// The store follows a master: it takes the master's bytes, not messages of its own.
    #[error("the store is a replica: it takes no messages of its own")]
    Replica,
    /// A synchronous master's send: no slave confirmed the bytes within the timeout; the
    /// message is stored on the master.
    #[error("no slave confirmed the message within {0:?}")]
    ReplicaTimeout(std::time::Duration),
    /// A synchronous master's send: no slave is connected and in sync; the message is stored
    /// on the master.
    #[error("no slave is available")]
    ReplicaNotAvailable,
    /// The store is shutting down or was shut down.
    #[error("the store is shut down")]
    ShutDown,
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// Another process holds the store's lock file.
    #[error("store directory {0} is in use by another process")]
    Locked(PathBuf),
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { op, path, source }
    }

    /// The error of creating a `size`-byte file at `path`: [`StoreError::DiskFull`] when the
    /// file system cannot hold it, else an I/O error.
    pub(crate) fn create(path: &Path, size: usize) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_owned();
        move |e| {
            if e.kind() == std::io::ErrorKind::StorageFull {
                Self::DiskFull(format!("no space for {} ({size} bytes)", path.display()))
            } else {
                Self::io("create", path)(e)
            }
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
