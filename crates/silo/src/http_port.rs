//! What the broker's HTTP ports share (the Prometheus endpoint and the web console): an
//! HTTP/1.1 server that whatever reaches the port cannot exhaust.
//!
//! Both answer small requests rarely, so every request is handled to completion in the
//! connection's task by a plain function. A client that sends its request head slowly, or
//! never (on a new connection or between requests on a kept one), is closed after
//! [`HEADER_TIMEOUT`]; a head larger than [`MAX_HEAD`] is refused; and at most
//! [`MAX_CONNECTIONS`] are served at once (more wait in the listen queue), so slow or idle
//! clients cannot crowd out the real ones or the broker.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use tokio::sync::{Semaphore, watch};

/// How long a connection may take to send a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The largest request head read (a browser's is under 2 KiB).
pub const MAX_HEAD: usize = 16 * 1024;

/// A response with a fixed body.
pub type Reply = http::Response<Full<Bytes>>;

/// A response of `status` with `body` as `content_type`.
pub fn reply(status: http::StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = http::Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    r
}

/// Serves `listener` with `answer` (given the request and the peer's address) until
/// `shutdown`. `name` says which port in the logs.
pub fn serve<F>(
    name: &'static str,
    listener: tokio::net::TcpListener,
    mut shutdown: watch::Receiver<bool>,
    answer: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(&http::Request<Incoming>, SocketAddr) -> Reply + Send + Sync + 'static,
{
    let answer = Arc::new(answer);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let permit = tokio::select! {
                p = Arc::clone(&slots).acquire_owned() => p,
                _ = shutdown.changed() => return,
            };
            let Ok(permit) = permit else { return };
            let (socket, remote) = tokio::select! {
                a = listener.accept() => match a {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(port = name, error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = shutdown.changed() => return,
            };
            let answer = Arc::clone(&answer);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let answer = Arc::clone(&answer);
                    async move { Ok::<_, std::convert::Infallible>(answer(&req, remote)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .max_buf_size(MAX_HEAD)
                    .serve_connection(hyper_util::rt::TokioIo::new(socket), service);
                if let Err(e) = conn.await {
                    tracing::debug!(port = name, %remote, error = %e, "connection ended");
                }
                drop(permit);
            });
        }
    })
}
