//! The gRPC port's accept loop: TLS and plaintext on one port, as Apache's proxy serves them.
//! A connection's first byte tells them apart: a TLS ClientHello starts a handshake record
//! (0x16), an HTTP/2 client starts with its preface ("PRI * HTTP/2.0"). The Java and Go SDKs
//! connect with TLS by default, the Python, Node.js and Rust ones in plaintext.
//!
//! Each connection is classified (and its handshake done) in a task of its own, so a client
//! that connects and sends nothing delays nobody; it is dropped after [`HANDSHAKE_TIMEOUT`].

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use silo_broker::tls::{Accepted, Transport};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub use silo_broker::config::TlsMode;

/// How long a new connection may take to send its first byte and finish a TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a request knows about its connection.
#[derive(Debug, Clone, Copy)]
pub struct PeerInfo {
    pub remote: SocketAddr,
    pub tls: bool,
}

/// An accepted connection, plaintext or TLS.
#[derive(Debug)]
pub enum Conn {
    Plain(TcpStream, SocketAddr),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>, SocketAddr),
}

impl Conn {
    pub fn peer(&self) -> PeerInfo {
        match self {
            Conn::Plain(_, remote) => PeerInfo { remote: *remote, tls: false },
            Conn::Tls(_, remote) => PeerInfo { remote: *remote, tls: true },
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s, _) => s.is_write_vectored(),
            Conn::Tls(s, _) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s, _) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s, _) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Connections accepted, by kind (in the broker's runtime info).
#[derive(Debug, Default)]
pub struct ConnStats {
    pub tls_connections: AtomicU64,
    pub plaintext_connections: AtomicU64,
    /// Closed before serving: nothing sent in time, a failed handshake, the wrong kind.
    pub refused_connections: AtomicU64,
    /// Requests refused for want of a valid signature (with `authenticationEnabled`).
    pub unauthenticated: AtomicU64,
}

/// Limits of one HTTP/2 connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Streams a client may have open at once (a push consumer keeps a long poll open per
    /// queue; a thousand is a heavy but legitimate client).
    pub max_concurrent_streams: u32,
    /// The largest header block accepted.
    pub max_header_list_size: u32,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self { max_concurrent_streams: 4096, max_header_list_size: 64 * 1024 }
    }
}

/// Accepts connections until `shutdown`, classifies each and serves it with `service`, every
/// connection in a task of its own.
pub fn serve<S>(
    listener: TcpListener,
    transport: Transport,
    service: S,
    limits: ConnLimits,
    stats: Arc<ConnStats>,
    mut shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()>
where
    S: tower_service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shutdown.changed() => return,
            };
            let (socket, remote) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors, say: back off rather than spin.
                    tracing::warn!(error = %e, "gRPC accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = socket.set_nodelay(true);
            let transport = transport.clone();
            let service = service.clone();
            let stop = shutdown.clone();
            let stats = Arc::clone(&stats);
            tokio::spawn(async move {
                let conn = match tokio::time::timeout(HANDSHAKE_TIMEOUT, classify(socket, remote, &transport)).await {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(e)) => {
                        stats.refused_connections.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(%remote, error = %e, "gRPC connection refused");
                        return;
                    }
                    Err(_) => {
                        stats.refused_connections.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(%remote, "gRPC connection sent nothing in time; closed");
                        return;
                    }
                };
                let counter = if conn.peer().tls { &stats.tls_connections } else { &stats.plaintext_connections };
                counter.fetch_add(1, Ordering::Relaxed);
                serve_connection(conn, service, limits, stop).await;
            });
        }
    })
}

async fn serve_connection<S>(conn: Conn, service: S, limits: ConnLimits, mut shutdown: watch::Receiver<bool>)
where
    S: tower_service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let peer = conn.peer();
    let handler = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(peer);
        let mut service = service.clone();
        service.call(req)
    });
    let mut builder = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    // Large windows: besides letting a batch of bodies in without waiting for credit, they size
    // the HTTP/2 layer's budget for small DATA frames (half the connection window), which a
    // client with hundreds of concurrent calls of small messages (every gRPC-Java unary call
    // sends its message in a frame of its own) would otherwise exhaust, and be sent away.
    builder
        .initial_connection_window_size(8 << 20)
        .initial_stream_window_size(1 << 20)
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(limits.max_concurrent_streams)
        .max_header_list_size(limits.max_header_list_size);
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(conn), handler);
    tokio::pin!(connection);
    tokio::select! {
        r = connection.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(remote = %peer.remote, error = %e, "gRPC connection ended");
            }
        }
        _ = shutdown.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
        }
    }
}

async fn classify(socket: TcpStream, remote: SocketAddr, transport: &Transport) -> io::Result<Conn> {
    Ok(match transport.accept(socket).await? {
        Accepted::Plain(socket) => Conn::Plain(socket, remote),
        Accepted::Tls(stream) => Conn::Tls(stream, remote),
    })
}
