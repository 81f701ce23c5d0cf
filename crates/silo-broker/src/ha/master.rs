//! The master's HA listener (docs/protocol.md §7): one link per slave. A link waits for the
//! slave's first offset report, then ships the commit log from there in transfers of at most
//! `haTransferBatchSize` bytes, each a slice of the mapped segment written to the socket as it
//! is (no copy), never across a segment. Every report the slave sends confirms bytes, which
//! releases SYNC_MASTER sends waiting for them.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use silo_wire::ha::{TRANSFER_HEADER_LEN, TransferHeader, last_offset_report};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::links::SlaveLink;
use crate::broker::Broker;

/// Accepts slaves on `listener` until `shutdown` flips.
pub async fn serve(broker: Arc<Broker>, listener: TcpListener, mut shutdown: watch::Receiver<bool>) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, role = broker.config.ha.role.java_name(), "HA listener serving slaves");
    }
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    tokio::spawn(link(Arc::clone(&broker), stream, remote, shutdown.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "HA accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

async fn link(broker: Arc<Broker>, stream: TcpStream, remote: SocketAddr, mut shutdown: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let link = broker.ha_links.add_slave(remote);
    tracing::info!(slave = %remote, "slave connected");
    let (reader, writer) = stream.into_split();
    let (first_tx, first_rx) = watch::channel(-1i64);
    let ended = tokio::select! {
        r = read_reports(&broker, reader, &link, first_tx) => r,
        r = ship(&broker, writer, &link, first_rx) => r,
        _ = shutdown.changed() => Ok("the broker is shutting down"),
    };
    if link.requested.load(Ordering::Acquire) >= 0 {
        broker.store.replica_connected(false);
    }
    broker.ha_links.remove_slave(&link);
    match ended {
        Ok(why) => tracing::info!(slave = %remote, why, "slave link closed"),
        Err(why) => tracing::warn!(slave = %remote, %why, "slave link dropped"),
    }
}

/// Reads the slave's offset reports; acts on the last whole one of each read.
async fn read_reports(
    broker: &Broker,
    mut reader: OwnedReadHalf,
    link: &SlaveLink,
    first: watch::Sender<i64>,
) -> Result<&'static str, String> {
    let idle = broker.config.ha.housekeeping_interval;
    let mut buf = [0u8; 4096];
    let mut have = 0usize;
    loop {
        let room = buf.get_mut(have..).unwrap_or_default();
        let n = match tokio::time::timeout(idle, reader.read(room)).await {
            Err(_) => return Err(format!("no offset report for {idle:?}")),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(0)) => return Ok("the slave closed the link"),
            Ok(Ok(n)) => n,
        };
        have += n;
        let window = buf.get(..have).unwrap_or_default();
        match last_offset_report(window) {
            Ok(Some((offset, consumed))) => {
                buf.copy_within(consumed..have, 0);
                have -= consumed;
                if link.requested.load(Ordering::Acquire) < 0 {
                    // A slave counts for SYNC_MASTER sends from its first report on, not from
                    // the connection (anything may connect to the port).
                    link.requested.store(offset, Ordering::Release);
                    broker.store.replica_connected(true);
                    first.send_replace(offset);
                }
                link.confirmed.fetch_max(offset, Ordering::AcqRel);
                // A slave cannot confirm bytes this master does not hold (a longer log of its
                // own, after the master lost a tail): those would release sends it lacks.
                broker.store.replica_confirmed(offset.min(broker.store.commit_log_range().1));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("bad offset report: {e}")),
        }
    }
}

/// Ships the log from where the slave asked, then follows its growth.
async fn ship(
    broker: &Broker,
    mut writer: OwnedWriteHalf,
    link: &SlaveLink,
    mut first: watch::Receiver<i64>,
) -> Result<&'static str, String> {
    let settings = &broker.config.ha;
    let store = &broker.store;
    let requested = loop {
        let r = *first.borrow_and_update();
        if r >= 0 {
            break r;
        }
        first.changed().await.map_err(|_| "the link ended before the slave's first report".to_string())?;
    };
    let (min, max) = store.commit_log_range();
    let segment = store.config().commit_log_segment_size as i64;
    let mut next = match requested {
        // A new slave starts with the master's newest segment, as Java's master has it.
        0 => max - max % segment,
        r if r > max => {
            // The slave holds more than this master (the master lost a tail it never shipped):
            // a heartbeat at this log's end tells it where the master's log ends.
            tracing::warn!(slave = %link.addr, slave_offset = r, master_offset = max,
                "the slave holds more than the master; telling it where the master's log ends");
            max
        }
        r => r,
    };
    if next < min {
        tracing::warn!(slave = %link.addr, slave_offset = next, oldest = min,
            "the slave needs bytes this master has deleted; it cannot catch up from here");
    }
    let mut header = [0u8; TRANSFER_HEADER_LEN];
    let mut last_write = Instant::now() - settings.heartbeat_interval;
    let batch = settings.transfer_batch_size.max(1);
    loop {
        link.next_transfer.store(next, Ordering::Release);
        if let Some(slice) = store.log_slice(next, batch) {
            let len = slice.len();
            TransferHeader { phy_offset: next, body_size: len as i32 }.encode(&mut &mut header[..]);
            write_transfer(&mut writer, &header, &slice).await.map_err(|e| e.to_string())?;
            next += len as i64;
            link.rate.add(len);
            last_write = Instant::now();
            continue;
        }
        let idle = last_write.elapsed();
        if idle >= settings.heartbeat_interval {
            TransferHeader { phy_offset: next, body_size: 0 }.encode(&mut &mut header[..]);
            write_transfer(&mut writer, &header, &[]).await.map_err(|e| e.to_string())?;
            last_write = Instant::now();
            continue;
        }
        store.log_beyond(next, (settings.heartbeat_interval - idle).min(Duration::from_millis(500))).await;
    }
}

/// Writes a transfer header and its body in as few system calls as the socket allows.
async fn write_transfer(writer: &mut OwnedWriteHalf, header: &[u8], body: &[u8]) -> std::io::Result<()> {
    let (mut header, mut body) = (header, body);
    while !header.is_empty() || !body.is_empty() {
        let n = writer.write_vectored(&[IoSlice::new(header), IoSlice::new(body)]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let from_header = n.min(header.len());
        header = header.get(from_header..).unwrap_or_default();
        body = body.get(n - from_header..).unwrap_or_default();
    }
    Ok(())
}
