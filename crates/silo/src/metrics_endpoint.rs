//! The Prometheus endpoint (`metricsExporterType=PROM`): `GET /metrics` on
//! `metricsPromExporterHost:metricsPromExporterPort` answers the broker's metrics in
//! Prometheus' text format, as Apache RocketMQ 5.x's broker serves them.
//!
//! A scrape is rare and small, so each is rendered fresh. A client that sends its request
//! head slowly, or never, is closed after [`HEADER_TIMEOUT`]; the connection count is bounded
//! by [`MAX_CONNECTIONS`], so such clients cannot crowd out Prometheus or the broker.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use http_body_util::Full;
use hyper::body::Bytes;
use silo_broker::broker::Broker;
use tokio::sync::{Semaphore, watch};

/// How long a connection may take to send a request's head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait in the listen queue.
pub const MAX_CONNECTIONS: usize = 64;

/// Binds the endpoint and serves it until `shutdown`; the address it listens on.
pub async fn start(
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let settings = &broker.config.metrics;
    let addr = SocketAddr::new(settings.host.unwrap_or(broker.config.broker_ip), settings.port);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("metrics endpoint on {addr}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "Prometheus metrics at /metrics");
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let task = tokio::spawn(async move {
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
                        tracing::warn!(error = %e, "metrics accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = shutdown.changed() => return,
            };
            let broker = Arc::clone(&broker);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let broker = Arc::clone(&broker);
                    async move { Ok::<_, std::convert::Infallible>(answer(&broker, &req)) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .max_buf_size(16 * 1024)
                    .serve_connection(hyper_util::rt::TokioIo::new(socket), service);
                if let Err(e) = conn.await {
                    tracing::debug!(%remote, error = %e, "metrics connection ended");
                }
                drop(permit);
            });
        }
    });
    Ok((addr, task))
}

fn answer(broker: &Broker, req: &http::Request<hyper::body::Incoming>) -> http::Response<Full<Bytes>> {
    let reply = |status: http::StatusCode, content_type: &'static str, body: String| {
        let mut r = http::Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
        r
    };
    match (req.method(), req.uri().path()) {
        (&http::Method::GET, "/metrics") => {
            reply(http::StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", broker.prometheus_text())
        }
        (&http::Method::GET, _) => reply(http::StatusCode::NOT_FOUND, "text/plain", "try /metrics\n".into()),
        _ => reply(http::StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n".into()),
    }
}
