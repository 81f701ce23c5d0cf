//! The slave's link to its master (docs/protocol.md §7, docs/replication.md). The slave
//! connects to the master's HA port, reports where it wants the stream to start, appends
//! every transfer at the master's offsets and reports what it holds after each read, and
//! every `haSendHeartbeatInterval` besides.
//!
//! A slave with data does not take a master's word that it is the same master: it asks for
//! the stream to start at its own last whole record, so the first bytes that come back must
//! equal bytes it has. A master that sends other bytes (another group's, or garbage on the
//! port) is refused and the slave keeps its log. A Silo master whose log ends before the
//! slave's says so with a heartbeat at its end; the slave then checks the record that ends
//! there the same way and only then cuts its log back to the master's end.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use silo_wire::ha::{OFFSET_REPORT_LEN, decode_transfer, encode_offset_report};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::broker::Broker;

/// The largest transfer body a slave takes: Java's slave reads into a 4 MiB buffer, so no
/// master sends more.
const MAX_TRANSFER_BODY: usize = 4 << 20;

/// How a link ended.
#[derive(Debug)]
enum LinkEnd {
    /// The network or the master went away: reconnect.
    Lost(String),
    /// The master's stream does not continue this slave's log: refused, data kept.
    Refused(String),
    /// The master's log ends at this offset, before the slave's: check it, then cut back.
    MasterEndsAt(i64),
}

/// Follows the master until `shutdown` flips: connects, streams, reconnects after a second.
pub async fn follow(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let links = &broker.ha_links;
    // The master's end, once it said it ends before this slave's log.
    let mut master_ends_at: Option<i64> = None;
    // While the master stays away, one line says so, not one per attempt.
    let mut away = false;
    loop {
        let master = broker.config.ha.master_address.or_else(|| broker.ha_links.learned_master());
        if let Some(master) = master {
            *links.master.master.lock().unwrap_or_else(|e| e.into_inner()) = Some(master);
            let received = links.master.bytes_received.load(Ordering::Relaxed);
            let ended = tokio::select! {
                r = link(&broker, master, master_ends_at) => r,
                _ = shutdown.changed() => return,
            };
            links.master.connected.store(false, Ordering::Release);
            if links.master.bytes_received.load(Ordering::Relaxed) != received {
                away = false;
            }
            match ended {
                LinkEnd::Lost(why) if away => tracing::debug!(%master, %why, "still no link to the master"),
                LinkEnd::Lost(why) => {
                    tracing::info!(%master, %why, "link to the master lost; reconnecting every second");
                    away = true;
                }
                LinkEnd::Refused(why) => {
                    tracing::error!(%master, %why, "refused the master's stream; the replica keeps its data");
                    links.master.refused(why);
                    master_ends_at = None;
                }
                LinkEnd::MasterEndsAt(end) => {
                    tracing::warn!(%master, master_end = end, held = broker.store.replica_held(),
                        "the master's log ends before the replica's; checking the master's last record");
                    master_ends_at = Some(end);
                    continue;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = shutdown.changed() => return,
        }
    }
}

async fn link(broker: &Broker, master: SocketAddr, master_ends_at: Option<i64>) -> LinkEnd {
    let store = &broker.store;
    let settings = &broker.config.ha;
    let stream = match tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(master)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return LinkEnd::Lost(format!("connect: {e}")),
        Err(_) => return LinkEnd::Lost("connect timed out".into()),
    };
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    // Whatever arrived of a record cut in two is dropped: the stream starts at whole records.
    store.set_following(true);
    let held = store.replica_held();
    // Bytes below `check_until` are compared with the replica's own, not appended.
    let check_until = master_ends_at.filter(|end| *end < held).unwrap_or(held);
    let start = match store.last_record_start(check_until) {
        Some(start) => start,
        None if check_until == held => held,
        None => {
            return LinkEnd::Refused(format!(
                "the master's log ends at {check_until}, where the replica has no record boundary"
            ));
        }
    };
    let cut_back = check_until < held;
    let empty = held == 0 && start == 0;
    let mut expect = start;
    let mut reported = start;
    let mut report = [0u8; OFFSET_REPORT_LEN];
    encode_offset_report(start, &mut &mut report[..]);
    if let Err(e) = writer.write_all(&report).await {
        return LinkEnd::Lost(e.to_string());
    }
    broker.ha_links.master.connected.store(true, Ordering::Release);
    tracing::info!(%master, from = start, held, "following the master");
    let mut last_report = Instant::now();
    let mut last_read = Instant::now();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut first = true;
    loop {
        // Every whole transfer read so far.
        loop {
            let transfer = match decode_transfer(&buf, MAX_TRANSFER_BODY) {
                Ok(Some(t)) => t,
                Ok(None) => break,
                Err(e) => return LinkEnd::Refused(format!("not an HA transfer: {e}")),
            };
            let offset = transfer.header.phy_offset;
            if first && empty {
                // A new replica begins where the master chose (its newest segment).
                expect = offset;
            }
            first = false;
            if offset != expect {
                if transfer.header.body_size == 0 && offset < expect {
                    return LinkEnd::MasterEndsAt(offset);
                }
                return LinkEnd::Refused(format!("the master sent offset {offset}, the replica expected {expect}"));
            }
            let body = buf.get(transfer.body.clone()).unwrap_or_default();
            let mut at = offset;
            let mut rest = body;
            if at < check_until && !rest.is_empty() {
                let n = rest.len().min((check_until - at) as usize);
                let (theirs, after) = rest.split_at(n);
                let ours = store.log_slice(at, n);
                if ours.as_deref() != Some(theirs) {
                    return LinkEnd::Refused(format!(
                        "the master's bytes at {at} differ from the replica's: it is not the master this replica followed"
                    ));
                }
                at += n as i64;
                rest = after;
            }
            if cut_back && at == check_until && store.replica_held() > check_until {
                if let Err(e) = store.truncate_replica(check_until) {
                    return LinkEnd::Refused(format!("cannot cut the replica back to {check_until}: {e}"));
                }
                tracing::warn!(%master, to = check_until, from = held,
                    "cut the replica back to the master's end: the master never had the rest");
            }
            if !rest.is_empty()
                && let Err(e) = store.append_replicated(at, rest)
            {
                return LinkEnd::Refused(e.to_string());
            }
            expect = offset + body.len() as i64;
            broker.ha_links.master.transfer(expect, body.len());
            buf.advance(transfer.len);
        }
        // Report what is held after each read, and at least every heartbeat interval; but not
        // before the master's first transfer (a second report read together with the first
        // would be taken as where to start), and while the master's first bytes are still being
        // compared, only what they proved.
        let holds = if expect < check_until { expect } else { confirmable(broker).await };
        if !first && (holds != reported || last_report.elapsed() >= settings.heartbeat_interval) {
            encode_offset_report(holds.max(0), &mut &mut report[..]);
            if let Err(e) = writer.write_all(&report).await {
                return LinkEnd::Lost(e.to_string());
            }
            reported = holds;
            last_report = Instant::now();
            broker.ha_links.master.reported();
        }
        buf.reserve(64 * 1024);
        let wait = settings.heartbeat_interval.saturating_sub(last_report.elapsed()).max(Duration::from_millis(10));
        match tokio::time::timeout(wait.min(settings.housekeeping_interval), reader.read_buf(&mut buf)).await {
            Ok(Ok(0)) => return LinkEnd::Lost("the master closed the link".into()),
            Ok(Ok(_)) => last_read = Instant::now(),
            Ok(Err(e)) => return LinkEnd::Lost(e.to_string()),
            Err(_) if last_read.elapsed() >= settings.housekeeping_interval => {
                return LinkEnd::Lost(format!("nothing from the master for {:?}", settings.housekeeping_interval));
            }
            Err(_) => {}
        }
    }
}

/// What the slave confirms: every byte it holds; with synchronous flush, what is on disk.
async fn confirmable(broker: &Broker) -> i64 {
    let store = &broker.store;
    if store.flush_mode().is_sync() {
        let published = store.commit_log_range().1;
        if store.durable(published).await.is_ok() {
            return published;
        }
        return store.flushed_offset();
    }
    store.replica_held()
}
