//! A slave's copy of its master's metadata, over remoting, as Java's slave takes it: topic
//! configs (GET_ALL_TOPIC_CONFIG 21), consumer offsets (GET_ALL_CONSUMER_OFFSET 43), delay
//! progress (GET_ALL_DELAY_OFFSET 45), subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG
//! 201) and request modes (GET_ALL_MESSAGE_REQUEST_MODE 402). Java copies them every 60 s,
//! starting 10 s after start; a consumer that reads from the slave sees offsets up to a
//! minute old, and commits of its own on the slave are kept ([`OffsetManager::merge_from_master`]).
//!
//! [`OffsetManager::merge_from_master`]: crate::offsets::OffsetManager::merge_from_master

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use silo_store::config_file::write_json_atomic;
use silo_wire::RemotingHeader;
use silo_wire::body::decode_json_body;
use silo_wire::codes::request as rq;
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::broker::Broker;

/// Copies the master's metadata every `metadata_sync_interval` until `shutdown` flips.
pub async fn run(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    broker.offsets.track_local_commits();
    let interval = broker.config.ha.metadata_sync_interval;
    let mut conn: Option<TcpStream> = None;
    let mut opaque = 0i32;
    tokio::select! {
        _ = tokio::time::sleep(broker.config.ha.metadata_sync_delay) => {}
        _ = shutdown.changed() => return,
    }
    loop {
        match broker.ha_links.learned_master_remoting() {
            Some(master) => match sync_all(&broker, &mut conn, master, &mut opaque).await {
                Ok(()) => tracing::debug!(%master, "copied the master's metadata"),
                Err(e) => tracing::warn!(%master, error = %e, "cannot copy the master's metadata"),
            },
            None => tracing::debug!("no master known yet; its metadata is copied once the name server names it"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.changed() => return,
        }
    }
}

type SyncError = Box<dyn std::error::Error + Send + Sync>;

async fn sync_all(
    broker: &Broker,
    conn: &mut Option<TcpStream>,
    master: SocketAddr,
    opaque: &mut i32,
) -> Result<(), SyncError> {
    let mut ask = async |code: i32| -> Result<bytes::Bytes, SyncError> {
        *opaque = opaque.wrapping_add(1);
        let header = RemotingHeader::request(code, *opaque);
        let frame =
            crate::server::request(conn, master, &header, &[], broker.config.auth.inner_credentials.as_ref()).await?;
        if frame.header.code != silo_wire::codes::response::SUCCESS {
            return Err(format!("request {code}: code {} {:?}", frame.header.code, frame.header.remark).into());
        }
        Ok(frame.body)
    };
    let topics = ask(rq::GET_ALL_TOPIC_CONFIG).await?;
    if broker.topics.replace_from_master(decode_json_body(&topics)?)? {
        tracing::info!("topic configs copied from the master");
        broker.register_routes_if_changed();
    }
    let offsets = ask(rq::GET_ALL_CONSUMER_OFFSET).await?;
    broker.offsets.merge_from_master(decode_json_body(&offsets)?);
    broker.offsets.persist()?;
    let delay = ask(rq::GET_ALL_DELAY_OFFSET).await?;
    let delay: serde_json::Value = decode_json_body(&delay)?;
    write_json_atomic(&*broker.store.config().fs, &crate::schedule::delay_offset_path(&broker.config), &delay)?;
    let groups = ask(rq::GET_ALL_SUBSCRIPTIONGROUP_CONFIG).await?;
    broker.groups.replace_from_master(decode_json_body(&groups)?)?;
    let modes = ask(rq::GET_ALL_MESSAGE_REQUEST_MODE).await?;
    broker.request_modes.replace_from_master(decode_json_body(&modes)?)?;
    Ok(())
}

/// How long after start the first copy is taken, and how often after (Java's 10 s and 60 s).
pub const DEFAULT_DELAY: Duration = Duration::from_secs(10);
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
