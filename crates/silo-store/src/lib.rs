//! `silo-store`: the message store, in Apache RocketMQ's on-disk format.
//!
//! A commit log of fixed-size memory-mapped segments holds every message as a stored record;
//! per-queue consume queues of 20-byte units index it; an optional key index finds records by
//! key. A store directory written by RocketMQ's `DefaultMessageStore` opens here and the other
//! way round. `docs/store-format.md` documents every file byte by byte, and the invariants of
//! append, dispatch and recovery.
//!
//! The hot paths are built not to copy or allocate per message: see [`Appender`] for the
//! append path, and [`MessageRef`] for reads that hand out the mapped bytes themselves.

pub mod checkpoint;
pub mod clock;
mod commit_log;
pub mod config;
pub mod config_file;
pub mod consume_queue;
pub mod error;
pub mod fs;
pub mod index;
mod mapped;
pub mod names;
mod store;
pub mod timer;

pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{DiskPolicy, FlushMode, StoreConfig};
pub use error::{Result, StoreError};
pub use store::{AppendResult, Appender, MessageToStore};
pub use store::{
    GetResult, GetStatus, LogSlice, MessageRef, RecoveryReport, ReplicaError, Store, SyncReplication, TagFilter,
};
