//! What the HA links do, as operators read it: per slave on a master, how far it confirmed
//! and how far behind it is; on a slave, which master it follows and how much it holds.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Bytes moved per second, as the last whole second saw them. One writer adds; any reader
/// reads.
#[derive(Debug, Default)]
pub(crate) struct Rate {
    window_start_ms: AtomicI64,
    window_bytes: AtomicU64,
    last_second: AtomicU64,
}

impl Rate {
    pub(crate) fn add(&self, bytes: usize) {
        let now = now_ms();
        let start = self.window_start_ms.load(Ordering::Relaxed);
        if now - start >= 1000 {
            let moved = self.window_bytes.swap(0, Ordering::Relaxed);
            // A window longer than a second (an idle spell) is averaged over its length.
            let secs = ((now - start) / 1000).max(1) as u64;
            self.last_second.store(if start == 0 { 0 } else { moved / secs }, Ordering::Relaxed);
            self.window_start_ms.store(now, Ordering::Relaxed);
        }
        self.window_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn per_second(&self) -> i64 {
        // A link that went quiet more than two seconds ago moves nothing now.
        if now_ms() - self.window_start_ms.load(Ordering::Relaxed) > 2000 {
            return 0;
        }
        self.last_second.load(Ordering::Relaxed) as i64
    }
}

/// One slave's link, seen from the master.
#[derive(Debug)]
pub(crate) struct SlaveLink {
    pub(crate) addr: SocketAddr,
    /// What the slave asked for first (-1 until its first report).
    pub(crate) requested: AtomicI64,
    /// The last offset it confirmed (-1 until its first report).
    pub(crate) confirmed: AtomicI64,
    /// Where the next transfer starts.
    pub(crate) next_transfer: AtomicI64,
    /// Bytes shipped per second.
    pub(crate) rate: Rate,
}

/// The slave's link to its master.
#[derive(Debug, Default)]
pub(crate) struct MasterLink {
    pub(crate) master: Mutex<Option<SocketAddr>>,
    pub(crate) connected: AtomicBool,
    /// The master's offset as its last transfer showed it.
    pub(crate) master_seen: AtomicI64,
    pub(crate) last_transfer_ms: AtomicI64,
    pub(crate) last_report_ms: AtomicI64,
    pub(crate) bytes_received: AtomicU64,
    pub(crate) rate: Rate,
    /// Why the last link ended, if it was refused.
    pub(crate) last_refusal: Mutex<Option<String>>,
}

impl MasterLink {
    pub(crate) fn transfer(&self, offset_after: i64, bytes: usize) {
        self.master_seen.fetch_max(offset_after, Ordering::AcqRel);
        self.last_transfer_ms.store(now_ms(), Ordering::Release);
        self.bytes_received.fetch_add(bytes as u64, Ordering::Relaxed);
        self.rate.add(bytes);
    }

    pub(crate) fn reported(&self) {
        self.last_report_ms.store(now_ms(), Ordering::Release);
    }

    pub(crate) fn refused(&self, why: String) {
        *self.last_refusal.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// Every link of this broker.
#[derive(Debug, Default)]
pub struct HaLinks {
    pub(crate) slaves: Mutex<Vec<Arc<SlaveLink>>>,
    pub(crate) master: MasterLink,
    /// The master's HA address as the name server last told it (without `haMasterAddress`).
    learned: Mutex<Option<SocketAddr>>,
    /// The master's remoting address as the name server last told it: where metadata comes from.
    learned_remoting: Mutex<Option<SocketAddr>>,
    /// Where this broker's HA listener is bound (a master's).
    pub(crate) listening: std::sync::OnceLock<SocketAddr>,
}

impl HaLinks {
    /// A registration's answer named the group's master: its HA and remoting addresses
    /// (empty when the group has no master now; then the last ones known stay).
    pub fn learn_master(&self, ha_addr: &str, master_addr: &str) {
        for (text, slot, what) in [(ha_addr, &self.learned, "HA"), (master_addr, &self.learned_remoting, "remoting")] {
            if text.is_empty() {
                continue;
            }
            match text.parse::<SocketAddr>() {
                Ok(addr) => {
                    let mut learned = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if *learned != Some(addr) {
                        tracing::info!(master = %addr, what, "the name server names the master's address");
                        *learned = Some(addr);
                    }
                }
                Err(e) => {
                    tracing::warn!(addr = text, what, error = %e, "the name server's master address does not parse")
                }
            }
        }
    }

    /// Whether this slave's link to its master is up now.
    pub fn master_connected(&self) -> bool {
        self.master.connected.load(Ordering::Acquire)
    }

    /// The master's remoting address, as the name server named it.
    pub fn learned_master_remoting(&self) -> Option<SocketAddr> {
        *self.learned_remoting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The address this broker registers as its `haServerAddr`.
    pub fn ha_server_addr(&self, config: &crate::BrokerConfig) -> String {
        match self.listening.get() {
            Some(addr) => addr.to_string(),
            None => SocketAddr::new(config.broker_ip, config.ha.port(config.listen_port)).to_string(),
        }
    }

    /// Notes where the HA listener is bound.
    pub fn set_listening(&self, addr: SocketAddr) {
        let _ = self.listening.set(addr);
    }

    pub fn learned_master(&self) -> Option<SocketAddr> {
        *self.learned.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn add_slave(&self, addr: SocketAddr) -> Arc<SlaveLink> {
        let link = Arc::new(SlaveLink {
            addr,
            requested: AtomicI64::new(-1),
            confirmed: AtomicI64::new(-1),
            next_transfer: AtomicI64::new(-1),
            rate: Rate::default(),
        });
        self.slaves.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::clone(&link));
        link
    }

    pub(crate) fn remove_slave(&self, link: &Arc<SlaveLink>) {
        self.slaves.lock().unwrap_or_else(|e| e.into_inner()).retain(|l| !Arc::ptr_eq(l, link));
    }
}

impl HaLinks {
    /// GET_BROKER_HA_STATUS's answer, as Java's `HARuntimeInfo`.
    pub fn runtime_info(
        &self,
        store: &silo_store::Store,
        master: bool,
        max_gap: i64,
    ) -> silo_wire::body::HaRuntimeInfo {
        use silo_wire::body::{HaClientInfo, HaConnectionInfo, HaRuntimeInfo};
        let max = store.commit_log_range().1;
        if !master {
            let m = &self.master;
            return HaRuntimeInfo {
                master: false,
                ha_client_runtime_info: HaClientInfo {
                    master_addr: m.master.lock().unwrap_or_else(|e| e.into_inner()).map(|a| a.to_string()),
                    transferred_byte_in_second: m.rate.per_second(),
                    max_offset: max,
                    last_read_timestamp: m.last_transfer_ms.load(Ordering::Acquire),
                    last_write_timestamp: m.last_report_ms.load(Ordering::Acquire),
                    master_flush_offset: 0,
                    activated: m.connected.load(Ordering::Acquire),
                },
                ..Default::default()
            };
        }
        let links = self.slaves.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let connections: Vec<HaConnectionInfo> = links
            .iter()
            .map(|l| {
                let ack = l.confirmed.load(Ordering::Acquire).max(0);
                HaConnectionInfo {
                    addr: l.addr.to_string(),
                    slave_ack_offset: ack,
                    diff: max - ack,
                    in_sync: ack > 0 && max - ack < max_gap,
                    transferred_byte_in_second: l.rate.per_second(),
                    transfer_from_where: l.next_transfer.load(Ordering::Acquire),
                }
            })
            .collect();
        HaRuntimeInfo {
            master: true,
            master_commit_log_max_offset: max,
            in_sync_slave_nums: connections.iter().filter(|c| c.in_sync).count() as i32,
            ha_connection_info: connections,
            ..Default::default()
        }
    }

    /// Silo's replication figures in GET_BROKER_RUNTIME_INFO (Java's table has none), read from
    /// the same view as GET_BROKER_HA_STATUS.
    pub fn runtime_table(&self, store: &silo_store::Store, config: &crate::BrokerConfig) -> Vec<(String, String)> {
        let mut rows = vec![("brokerRole".to_owned(), config.ha.role.java_name().to_owned())];
        let info = self.runtime_info(store, config.ha.role.is_master(), config.ha.max_gap_not_in_sync);
        if info.master {
            let slaves = &info.ha_connection_info;
            // How long ago the oldest message each slave lacks was stored (0 when caught up).
            let now = now_ms();
            let behind_ms: Vec<i64> = slaves
                .iter()
                .map(|c| {
                    if c.diff <= 0 { 0 } else { store_time(store, c.slave_ack_offset).map_or(0, |t| (now - t).max(0)) }
                })
                .collect();
            rows.push(("haSlaveCount".into(), slaves.len().to_string()));
            rows.push(("haInSyncSlaveCount".into(), info.in_sync_slave_nums.to_string()));
            // The furthest behind is what an operator watches.
            rows.push(("haSlaveBehindBytes".into(), slaves.iter().map(|c| c.diff).max().unwrap_or(0).to_string()));
            rows.push(("haSlaveBehindMillis".into(), behind_ms.iter().max().copied().unwrap_or(0).to_string()));
            for (i, (c, ms)) in slaves.iter().zip(&behind_ms).enumerate() {
                let sync = if c.in_sync { "" } else { " (not in sync)" };
                rows.push((
                    format!("haSlave{i}"),
                    format!("{} confirmed {} behind {} bytes {ms} ms{sync}", c.addr, c.slave_ack_offset, c.diff),
                ));
            }
        } else {
            let c = &info.ha_client_runtime_info;
            let m = &self.master;
            rows.push(("haMasterAddr".into(), c.master_addr.clone().unwrap_or_default()));
            rows.push(("haMasterConnected".into(), c.activated.to_string()));
            rows.push(("haHeldOffset".into(), store.replica_held().to_string()));
            rows.push(("haMasterOffsetSeen".into(), m.master_seen.load(Ordering::Acquire).to_string()));
            let refusal = m.last_refusal.lock().unwrap_or_else(|e| e.into_inner()).clone();
            rows.push(("haLastRefusal".into(), refusal.unwrap_or_default()));
        }
        rows
    }
}

/// The store time of the record at `offset`.
fn store_time(store: &silo_store::Store, offset: i64) -> Option<i64> {
    let record = store.read_at(offset).ok()?;
    match silo_wire::record::decode_record(&record, 0) {
        Ok(silo_wire::record::Decoded::Record(r)) => Some(r.meta.store_timestamp),
        _ => None,
    }
}
