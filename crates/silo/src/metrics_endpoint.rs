//! The Prometheus endpoint (`metricsExporterType=PROM`): `GET /metrics` on
//! `metricsPromExporterHost:metricsPromExporterPort` answers the broker's metrics in
//! Prometheus' text format, as Apache RocketMQ 5.x's broker serves them.
//!
//! A scrape is rare and small, so each is rendered fresh; the port is bounded against slow
//! and idle clients as every HTTP port of the broker is (see `http_port`).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use silo_broker::broker::Broker;
use tokio::sync::watch;

use crate::http_port::{Reply, reply};

/// Binds the endpoint and serves it until `shutdown`; the address it listens on.
pub async fn start(
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let settings = &broker.config.metrics;
    let addr = SocketAddr::new(settings.host.unwrap_or(broker.config.broker_ip), settings.port);
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("metrics endpoint on {addr}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "Prometheus metrics at /metrics");
    let task = crate::http_port::serve("metrics", listener, shutdown, move |req, _| answer(&broker, req));
    Ok((addr, task))
}

fn answer(broker: &Broker, req: &http::Request<hyper::body::Incoming>) -> Reply {
    match (req.method(), req.uri().path()) {
        (&http::Method::GET, "/metrics") => {
            reply(http::StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", broker.prometheus_text())
        }
        (&http::Method::GET, _) => reply(http::StatusCode::NOT_FOUND, "text/plain", "try /metrics\n"),
        _ => reply(http::StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n"),
    }
}
