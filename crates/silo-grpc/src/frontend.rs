//! The gRPC front end's state: the broker it adapts, its settings, and the clients it knows.
//! Each RPC family is a module that adds `impl Frontend` handlers; they turn protobuf requests
//! into the core's domain types and the core's answers (and [`BrokerError`]s) into protobuf.

use std::net::SocketAddr;
use std::sync::Arc;

use silo_broker::Broker;
use silo_broker::broker::ConnState;
use silo_broker::config::GrpcSettings;
use silo_broker::core::BrokerError;
use tonic::Request;

use crate::clients::Clients;
use crate::listener::PeerInfo;
use crate::proto::{Code, Status};
use crate::status::code_of;

/// The front end.
#[derive(Debug)]
pub struct Frontend {
    pub broker: Arc<Broker>,
    pub config: GrpcSettings,
    /// The address the endpoint listens on (what QueryRoute names when a client's request does
    /// not say how it reached us).
    pub local: SocketAddr,
    pub clients: Clients,
    /// Admin calls pushed to clients, waiting for their answers.
    pub calls: crate::admin_calls::PendingCalls,
    /// Connections accepted, by kind.
    pub stats: Arc<crate::listener::ConnStats>,
    /// Encoding state the handlers reuse (an appender and buffers), so that a send does not
    /// allocate them per request.
    conns: std::sync::Mutex<Vec<ConnState>>,
}

/// What every request carries in its metadata (the SDKs' `x-mq-*` headers).
#[derive(Debug, Clone)]
pub struct Caller {
    pub client_id: String,
    pub language: String,
    pub client_version: String,
    pub remote: SocketAddr,
    /// The user the request is signed by (authentication on).
    pub user: Option<String>,
}

fn header<'a, T>(req: &'a Request<T>, name: &str) -> &'a str {
    req.metadata().get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

impl Frontend {
    pub fn new(broker: Arc<Broker>, config: GrpcSettings, local: SocketAddr) -> Self {
        let grace = std::time::Duration::from_millis(config.client_grace_ms);
        Self {
            broker,
            config,
            local,
            clients: Clients::new(grace),
            calls: crate::admin_calls::PendingCalls::default(),
            stats: Arc::default(),
            conns: std::sync::Mutex::default(),
        }
    }

    /// Runs `f` with a pooled [`ConnState`].
    pub fn with_conn<R>(&self, f: impl FnOnce(&mut ConnState) -> R) -> R {
        let pooled = self.conns.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = pooled.unwrap_or_default();
        let out = f(&mut conn);
        let mut pool = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 16 {
            pool.push(conn);
        }
        out
    }

    /// The caller named by the request's metadata. As Apache's proxy checks them: its
    /// credentials first (when authentication is on), then what the request touches against
    /// the user's ACL (when authorization is on), then that it names a client id.
    pub fn caller<T: crate::authorize::Touches>(&self, req: &Request<T>) -> Result<Caller, Status> {
        let client_id = header(req, "x-mq-client-id");
        let remote = req.extensions().get::<PeerInfo>().map_or(self.local, |p| p.remote);
        let mut user = None;
        if self.broker.config.auth.enabled {
            let authorization = req.metadata().get("authorization").and_then(|v| v.to_str().ok());
            let date_time = req.metadata().get("x-mq-date-time").and_then(|v| v.to_str().ok());
            match crate::auth::authenticate(&self.broker.auth, authorization, date_time) {
                Ok(u) => user = Some(u),
                Err(e) => {
                    // Counted, and logged at debug only: a client retrying with a wrong secret
                    // must not flood the log.
                    self.stats.unauthenticated.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::debug!(client = client_id, %remote, reason = %e, "gRPC request refused: not authenticated");
                    return Err(status(Code::Unauthorized, e.to_string()));
                }
            }
        }
        self.authorize(user.as_deref(), req.get_ref(), remote)?;
        if client_id.trim().is_empty() {
            return Err(status(Code::ClientIdRequired, "client id cannot be empty"));
        }
        self.clients.seen(client_id);
        Ok(Caller {
            client_id: client_id.to_owned(),
            language: header(req, "x-mq-language").to_owned(),
            client_version: header(req, "x-mq-client-version").to_owned(),
            remote,
            user,
        })
    }

    /// Whether `user` may do what `request` asks (always, with authorization off); a refusal
    /// is UNAUTHORIZED, as the proxy answers it.
    pub fn authorize(
        &self,
        user: Option<&str>,
        request: &impl crate::authorize::Touches,
        remote: SocketAddr,
    ) -> Result<(), Status> {
        let auth = &self.broker.auth;
        if !auth.settings.authorization_enabled {
            return Ok(());
        }
        let needs = request.touches().map_err(|why| status(Code::Unauthorized, why))?;
        auth.authorize(user, &needs, remote.ip()).map_err(|refusal| status(Code::Unauthorized, refusal.0))
    }
}

/// A status with Java's code and a message.
pub fn status(code: Code, message: impl Into<String>) -> Status {
    Status { code: code as i32, message: message.into() }
}

pub fn ok() -> Status {
    status(Code::Ok, "OK")
}

/// A code's name as the proto spells it (`MASTER_PERSISTENCE_TIMEOUT`): the message of a
/// response's overall status when all its entries share that code.
pub fn code_name(code: Code) -> String {
    let debug = format!("{code:?}");
    let mut out = String::with_capacity(debug.len() + 8);
    for (i, c) in debug.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The overall status of a response with per-entry statuses: their common code (named), or
/// MULTIPLE_RESULTS when they differ.
pub fn overall<'a>(entries: impl IntoIterator<Item = &'a Status>, empty: &str) -> Status {
    let mut codes = entries.into_iter().map(|s| s.code);
    let Some(first) = codes.next() else { return status(Code::InternalServerError, empty) };
    if codes.any(|c| c != first) {
        return status(Code::MultipleResults, "MULTIPLE_RESULTS");
    }
    let code = Code::try_from(first).unwrap_or(Code::Unspecified);
    status(code, code_name(code))
}

/// The status a core error answers with.
pub fn error_status(e: &BrokerError) -> Status {
    status(code_of(e), e.to_string())
}
