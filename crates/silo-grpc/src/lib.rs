//! `silo-grpc`: RocketMQ 5.x's gRPC protocol (`apache.rocketmq.v2.MessagingService`) served by
//! the broker itself, as a second front end over its protocol-neutral core. The 5.x SDKs
//! connect to `silo serve` directly, with no proxy in between (docs/protocol.md §6).
//!
//! [`serve`] binds the port, accepts TLS and plaintext on it ([`listener`]), and routes each
//! RPC ([`service`]) to its handler: [`route`], [`session`], [`send`], [`receive`], [`ack`],
//! [`transaction`]. The protobuf messages are in [`proto`].
//!
//! Everything that arrives here is untrusted: no unwrap, no indexing (outside tests).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic))]

pub mod ack;
pub mod admin_calls;
pub mod auth;
mod authorize;
pub mod clients;
pub mod convert;
pub mod frontend;
pub mod fuzzing;
pub mod listener;
pub mod proto;
pub mod recall;
pub mod receive;
pub mod route;
pub mod send;
pub mod service;
pub mod session;
pub mod status;
pub mod transaction;
pub mod validate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::Broker;
use silo_broker::config::TlsMode;
use tokio::sync::watch;

pub use frontend::Frontend;

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("gRPC endpoint cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Tls(#[from] silo_broker::tls::TlsError),
}

/// A started endpoint.
#[derive(Debug)]
pub struct Serving {
    pub addr: SocketAddr,
    pub frontend: Arc<Frontend>,
    pub task: tokio::task::JoinHandle<()>,
}

/// Binds `broker`'s gRPC port (`grpcServerPort` on `brokerIP1`) and serves until `shutdown`.
pub async fn serve(broker: Arc<Broker>, shutdown: watch::Receiver<bool>) -> Result<Option<Serving>, ServeError> {
    let settings = broker.config.grpc.clone();
    let Some(port) = settings.port else { return Ok(None) };
    let addr = SocketAddr::new(broker.config.broker_ip, port);
    let listener = silo_broker::server::listen(addr, broker.config.server_socket_backlog)
        .map_err(|source| ServeError::Listen { addr, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Listen { addr, source })?;
    let mode = broker.config.tls.mode;
    let identity = if mode == TlsMode::Disabled { None } else { Some(broker.tls_identity()?) };
    let transport = silo_broker::tls::Transport::new(mode, identity.as_deref(), &[b"h2"])?;
    let frontend = Arc::new(Frontend::new(Arc::clone(&broker), settings.clone(), addr));
    broker.set_front_end(Arc::clone(&frontend) as Arc<dyn silo_broker::broker::FrontEnd>);
    let service = service::MessagingService::new(Arc::clone(&frontend));
    let mut stop = shutdown.clone();
    let housekeeping = Arc::clone(&frontend);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            tokio::select! {
                _ = tick.tick() => housekeeping.clients.expire(Duration::from_secs(600)),
                _ = stop.changed() => return,
            }
        }
    });
    let task = listener::serve(
        listener,
        transport,
        service,
        listener::ConnLimits::default(),
        Arc::clone(&frontend.stats),
        shutdown,
    );
    tracing::info!(%addr, tls = ?mode, "gRPC endpoint listening");
    Ok(Some(Serving { addr, frontend, task }))
}

impl silo_broker::broker::FrontEnd for Frontend {
    fn check_transaction(&self, check: &silo_broker::core::transaction::Check, turn: usize) -> bool {
        self.send_check(check, turn)
    }

    fn client_alive(&self, client_id: &str) -> bool {
        self.clients.is_alive(client_id)
    }

    fn runtime_info(&self, table: &mut std::collections::BTreeMap<String, String>) {
        use std::sync::atomic::Ordering::Relaxed;
        table.insert("grpcListenAddr".into(), self.local.to_string());
        table.insert("grpcTlsConnections".into(), self.stats.tls_connections.load(Relaxed).to_string());
        table.insert("grpcPlaintextConnections".into(), self.stats.plaintext_connections.load(Relaxed).to_string());
        table.insert("grpcRefusedConnections".into(), self.stats.refused_connections.load(Relaxed).to_string());
        table.insert("grpcClients".into(), self.clients.len().to_string());
        table.insert("grpcUnauthenticatedRequests".into(), self.stats.unauthenticated.load(Relaxed).to_string());
    }

    fn consumers(&self, group: &str) -> Vec<silo_broker::core::client_call::FrontEndConsumer> {
        self.grpc_consumers(group)
    }

    fn call_client(
        &self,
        group: &str,
        client_id: &str,
        call: silo_broker::core::client_call::ClientCall,
    ) -> Option<tokio::sync::oneshot::Receiver<silo_broker::core::client_call::ClientAnswer>> {
        self.call_grpc_client(group, client_id, call)
    }
}
