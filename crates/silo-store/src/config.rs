//! Store configuration, with the Java broker's defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::index::IndexConfig;

/// When appended records reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// `ASYNC_FLUSH`: a background thread flushes every `interval` when at least
    /// `least_pages` pages are dirty, and everything every `thorough_interval`.
    Async { interval: Duration, least_pages: usize, thorough_interval: Duration },
    /// `SYNC_FLUSH` with group commit: an append is acknowledged once an fsync covers it; one
    /// fsync serves every waiter that arrived meanwhile.
    Sync { timeout: Duration },
}

impl FlushMode {
    pub fn default_async() -> Self {
        Self::Async { interval: Duration::from_millis(500), least_pages: 4, thorough_interval: Duration::from_secs(10) }
    }

    pub fn default_sync() -> Self {
        Self::Sync { timeout: Duration::from_secs(5) }
    }

    pub fn is_sync(&self) -> bool {
        matches!(self, Self::Sync { .. })
    }
}

#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`: holds `commitlog/`, `consumequeue/`, `index/`, `checkpoint`, `abort`,
    /// `lock` and `config/`.
    pub root: PathBuf,
    /// `mappedFileSizeCommitLog` (1 GiB).
    pub commit_log_segment_size: usize,
    /// Units per consume-queue file (`mappedFileSizeConsumeQueue / 20` = 300 000).
    pub consume_queue_units_per_file: usize,
    pub flush: FlushMode,
    /// The broker's address, written into every record (STOREHOST).
    pub store_host: SocketAddr,
    /// `maxMessageSize` (4 MiB): the largest body accepted.
    pub max_message_size: usize,
    /// `enableMultiDispatch`: honour `INNER_MULTI_DISPATCH`.
    pub enable_multi_dispatch: bool,
    /// `enableLmq`: assign and dispatch `%LMQ%` queues.
    pub enable_lmq: bool,
    /// `fileReservedTime`: commit-log segments older than this are deleted.
    pub file_reserved_time: Duration,
    /// How often expired files are looked for.
    pub clean_interval: Duration,
    /// `messageIndexEnable`: the key index, with its sizes.
    pub index: Option<IndexConfig>,
    /// `checkCRCOnRecover`.
    pub check_crc_on_recover: bool,
    /// How often consume queues and the checkpoint are flushed.
    pub consume_queue_flush_interval: Duration,
    /// Where store timestamps come from.
    pub clock: std::sync::Arc<dyn crate::clock::Clock>,
    /// The file system the store's files live on ([`crate::fs::RealFs`] unless a test
    /// simulates one).
    pub fs: std::sync::Arc<dyn crate::fs::Fs>,
    /// The disk-space policy (`diskMaxUsedSpaceRatio` and its companions).
    pub disk: DiskPolicy,
    /// Whether the store runs its dispatcher, flusher and allocator threads. Without them the
    /// caller drives that work with [`crate::Store::run_background_once`], and a durability
    /// wait flushes in the caller's thread: one thread does everything, in an order fixed by
    /// the caller, which is what a deterministic simulation needs.
    pub background: bool,
    /// A synchronous master (`brokerRole=SYNC_MASTER`): an acknowledgement also waits for a
    /// slave's confirmation. `None` for an asynchronous master or a slave.
    pub sync_replication: Option<crate::SyncReplication>,
}

/// When the store cleans early, cleans by force and refuses writes, by the used ratio of the
/// disk holding the commit log (Java's keys and defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskPolicy {
    /// `diskMaxUsedSpaceRatio` (75 %): above it, expired segments are deleted at once rather
    /// than at the next clean time.
    pub max_used_ratio: f64,
    /// `diskSpaceCleanForciblyRatio` (85 %): above it, the oldest segments are deleted even
    /// if they have not expired (while `clean_forcibly` holds).
    pub clean_forcibly_ratio: f64,
    /// `cleanFileForciblyEnable` (true).
    pub clean_forcibly: bool,
    /// `diskSpaceWarningLevelRatio` (90 %): above it, the store refuses writes.
    pub warning_ratio: f64,
    /// How often the ratio is measured.
    pub check_interval: Duration,
}

impl Default for DiskPolicy {
    fn default() -> Self {
        Self {
            max_used_ratio: 0.75,
            clean_forcibly_ratio: 0.85,
            clean_forcibly: true,
            warning_ratio: 0.90,
            check_interval: Duration::from_secs(1),
        }
    }
}

impl StoreConfig {
    /// Java's defaults under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            commit_log_segment_size: 1 << 30,
            consume_queue_units_per_file: 300_000,
            flush: FlushMode::default_async(),
            store_host: SocketAddr::from(([127, 0, 0, 1], 10911)),
            max_message_size: 4 * 1024 * 1024,
            enable_multi_dispatch: false,
            enable_lmq: false,
            file_reserved_time: Duration::from_secs(72 * 3600),
            clean_interval: Duration::from_secs(60),
            index: Some(IndexConfig::default()),
            check_crc_on_recover: true,
            consume_queue_flush_interval: Duration::from_secs(1),
            clock: crate::clock::system(),
            fs: crate::fs::real(),
            disk: DiskPolicy::default(),
            background: true,
            sync_replication: None,
        }
    }

    pub fn commit_log_dir(&self) -> PathBuf {
        self.root.join("commitlog")
    }

    pub fn consume_queue_dir(&self) -> PathBuf {
        self.root.join("consumequeue")
    }

    pub fn index_dir(&self) -> PathBuf {
        self.root.join("index")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.root.join("config")
    }
}
