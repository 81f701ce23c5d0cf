//! Replication between the brokers of a group (docs/replication.md): one master (brokerId 0)
//! and its slaves, which copy its commit log byte for byte over the classic HA stream
//! (docs/protocol.md §7) and its metadata over remoting.
//!
//! The role is decided here and only here ([`BrokerRole`], [`HaSettings`]): what the store
//! accepts, which background services run, what a send waits for, and which links exist all
//! follow from it, so that a role given by an election later changes one value.
//!
//! | file | what |
//! |---|---|
//! | `master.rs` | the master's HA listener: one link per slave, shipping from the mapped log |
//! | `slave.rs` | the slave's link to its master: appends, reports, checks the master is its own |
//! | `links.rs` | what each link did, for runtime info and `haStatus` |
//! | `metadata.rs` | the slave's periodic copy of the master's topics, offsets and groups |

mod links;
mod master;
pub mod metadata;
mod slave;

use std::net::SocketAddr;
use std::time::Duration;

pub use links::HaLinks;
pub use master::serve as serve_master;
pub use slave::follow;

/// `brokerRole`, as Java's broker.conf names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrokerRole {
    /// Acknowledges a send once it is stored here; slaves catch up behind.
    #[default]
    AsyncMaster,
    /// Acknowledges a send once a slave also holds it.
    SyncMaster,
    /// Follows a master: takes no sends, serves reads.
    Slave,
}

impl BrokerRole {
    pub fn is_master(self) -> bool {
        !matches!(self, Self::Slave)
    }

    /// Java's name, for logs and runtime info.
    pub fn java_name(self) -> &'static str {
        match self {
            Self::AsyncMaster => "ASYNC_MASTER",
            Self::SyncMaster => "SYNC_MASTER",
            Self::Slave => "SLAVE",
        }
    }
}

impl std::str::FromStr for BrokerRole {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "ASYNC_MASTER" => Ok(Self::AsyncMaster),
            "SYNC_MASTER" => Ok(Self::SyncMaster),
            "SLAVE" => Ok(Self::Slave),
            other => Err(format!("{other:?}: expected ASYNC_MASTER, SYNC_MASTER or SLAVE")),
        }
    }
}

/// The replication keys of broker.conf, with Java's defaults.
#[derive(Debug, Clone)]
pub struct HaSettings {
    /// `brokerRole`.
    pub role: BrokerRole,
    /// `haListenPort`: `None` is listenPort + 1, as Java's broker start-up sets it; 0 takes a
    /// free port (tests).
    pub listen_port: Option<u16>,
    /// `haMasterAddress`: where a slave connects. Without it the slave asks the name server,
    /// which answers every registration with the master's HA address.
    pub master_address: Option<SocketAddr>,
    /// `haSendHeartbeatInterval` (5 s): a slave reports at least this often, and an idle
    /// master sends an empty transfer after this long.
    pub heartbeat_interval: Duration,
    /// `haHousekeepingInterval` (20 s): a link with nothing read for this long is dropped.
    pub housekeeping_interval: Duration,
    /// `haTransferBatchSize` (32 KiB): the largest body of one transfer.
    pub transfer_batch_size: usize,
    /// `haMaxGapNotInSync` (256 MiB): a slave further behind does not count as in sync.
    pub max_gap_not_in_sync: i64,
    /// `slaveTimeout` (3 s): how long a SYNC_MASTER send waits for a slave.
    pub slave_timeout: Duration,
    /// `slaveReadEnable` (false, as Java): whether a slave serves pulls at all.
    pub slave_read_enable: bool,
    /// How often a slave copies its master's metadata (Java's fixed 60 s; Silo's key
    /// `haMetadataSyncInterval`, in milliseconds).
    pub metadata_sync_interval: Duration,
    /// How long after start the first copy is taken (Java's 10 s, or the interval if shorter).
    pub metadata_sync_delay: Duration,
}

impl Default for HaSettings {
    fn default() -> Self {
        Self {
            role: BrokerRole::AsyncMaster,
            listen_port: None,
            master_address: None,
            heartbeat_interval: Duration::from_secs(5),
            housekeeping_interval: Duration::from_secs(20),
            transfer_batch_size: 32 * 1024,
            max_gap_not_in_sync: 256 << 20,
            slave_timeout: Duration::from_secs(3),
            slave_read_enable: false,
            metadata_sync_interval: metadata::DEFAULT_INTERVAL,
            metadata_sync_delay: metadata::DEFAULT_DELAY,
        }
    }
}

/// What Java's broker answers, before reading a request, to a request its slave does not serve.
pub const SLAVE_REJECT_REMARK: &str = "[REJECTREQUEST]system busy, start flow control for a while";

impl HaSettings {
    /// Whether a broker of this role refuses request `code` outright, as Java's does (its
    /// processors' `rejectRequest`, answered SYSTEM_BUSY): a slave takes no sends (the client
    /// retries them on another master) and, unless `slaveReadEnable`, no pulls.
    pub fn refuses(&self, code: i32) -> bool {
        use silo_wire::codes::request as rq;
        if self.role.is_master() {
            return false;
        }
        match code {
            rq::SEND_MESSAGE | rq::SEND_MESSAGE_V2 | rq::SEND_BATCH_MESSAGE | rq::CONSUMER_SEND_MSG_BACK => true,
            rq::PULL_MESSAGE | rq::LITE_PULL_MESSAGE => !self.slave_read_enable,
            _ => false,
        }
    }

    /// The port of the HA listener for a broker on `listen_port`.
    pub fn port(&self, listen_port: u16) -> u16 {
        self.listen_port.unwrap_or_else(|| listen_port.saturating_add(1))
    }

    /// What a send's durability wait adds on this role.
    pub fn sync_replication(&self) -> Option<silo_store::SyncReplication> {
        (self.role == BrokerRole::SyncMaster)
            .then_some(silo_store::SyncReplication { timeout: self.slave_timeout, max_gap: self.max_gap_not_in_sync })
    }
}
