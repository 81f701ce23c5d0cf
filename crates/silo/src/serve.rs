//! `silo serve`, `silo broker` and `silo namesrv`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use silo_broker::BrokerConfig;
use silo_broker::server::{ServeOptions, run as run_server, signal, start};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// A RocketMQ broker.conf (key=value); flags below take precedence.
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    /// Where the store lives (storePathRootDir). Default: $HOME/silo-store.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Broker listen port (listenPort).
    #[arg(long)]
    listen_port: Option<u16>,
    /// Address clients are told to use and the broker listens on (brokerIP1).
    #[arg(long)]
    broker_ip: Option<std::net::IpAddr>,
    #[arg(long)]
    broker_name: Option<String>,
    #[arg(long)]
    cluster_name: Option<String>,
    /// Name servers to register with, `host:port;host:port` (namesrvAddr).
    #[arg(long)]
    namesrv_addr: Option<String>,
    /// Embedded name server address (`silo serve` only).
    #[arg(long, default_value = "127.0.0.1:9876")]
    namesrv_listen: SocketAddr,
    /// SYNC_FLUSH or ASYNC_FLUSH (flushDiskType).
    #[arg(long)]
    flush_disk_type: Option<String>,
    /// The gRPC endpoint's port for the 5.x SDKs (grpcServerPort, default 8081; 0: a free port).
    #[arg(long)]
    grpc_port: Option<u16>,
    /// Serve no gRPC endpoint.
    #[arg(long, conflicts_with = "grpc_port")]
    no_grpc: bool,
    /// TLS on every port: disabled, permissive (TLS and plaintext on one port, the default) or
    /// enforcing (tls.server.mode; the certificate is tls.server.certPath/keyPath, or one made
    /// at start).
    #[arg(long, value_name = "MODE")]
    tls_mode: Option<String>,
    /// Serve the web console on this address (default 127.0.0.1:8082): topics, groups and their
    /// lag, messages, rates. Read-only unless authentication is on and the user may write.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::console::DEFAULT_ADDR)]
    console: Option<SocketAddr>,
    /// Any other broker.conf key, as key=value; may repeat.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Args, Debug)]
pub struct NamesrvArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9876")]
    listen: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Embedded,
    Broker,
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SILO_LOG").unwrap_or_else(|_| "info".into());
    let _ =
        tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).with_target(false).try_init();
}

fn broker_config(args: &ServeArgs) -> anyhow::Result<BrokerConfig> {
    let mut c = BrokerConfig::default();
    if let Some(home) = std::env::var_os("HOME") {
        c.store_path_root_dir = PathBuf::from(home).join("silo-store");
    }
    if let Some(path) = &args.config {
        let unknown = c.load_file(path)?;
        for key in unknown {
            tracing::warn!(key, file = %path.display(), "unknown broker.conf key ignored");
        }
    }
    let mut set = |k: &str, v: &str| -> anyhow::Result<()> {
        match c.set(k, v) {
            Ok(true) => Ok(()),
            Ok(false) => bail!("unknown setting {k}"),
            Err(e) => bail!("{k}={v}: {e}"),
        }
    };
    if let Some(v) = &args.data_dir {
        set("storePathRootDir", &v.display().to_string())?;
    }
    if let Some(v) = args.listen_port {
        set("listenPort", &v.to_string())?;
    }
    if let Some(v) = args.broker_ip {
        set("brokerIP1", &v.to_string())?;
    }
    if let Some(v) = &args.broker_name {
        set("brokerName", v)?;
    }
    if let Some(v) = &args.cluster_name {
        set("brokerClusterName", v)?;
    }
    if let Some(v) = &args.namesrv_addr {
        set("namesrvAddr", v)?;
    }
    if let Some(v) = &args.flush_disk_type {
        set("flushDiskType", v)?;
    }
    if let Some(v) = args.grpc_port {
        set("grpcServerPort", &v.to_string())?;
    }
    if args.no_grpc {
        set("grpcServerPort", "-1")?;
    }
    if let Some(v) = &args.tls_mode {
        set("tls.server.mode", v)?;
    }
    for kv in &args.set {
        let (k, v) = kv.split_once('=').with_context(|| format!("--set {kv}: expected KEY=VALUE"))?;
        set(k.trim(), v.trim())?;
    }
    Ok(c)
}

pub fn run(args: ServeArgs, mode: Mode) -> anyhow::Result<()> {
    init_logging();
    let mut config = broker_config(&args)?;
    let namesrv = match mode {
        Mode::Embedded => {
            // The embedded name server is what the broker registers with.
            config.namesrv_addr.clear();
            Some(args.namesrv_listen)
        }
        Mode::Broker => {
            if config.namesrv_addr.is_empty() {
                bail!(
                    "silo broker needs --namesrv-addr (or namesrvAddr in its broker.conf); use `silo serve` for a broker with its own name server"
                );
            }
            None
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let mut running =
            start(ServeOptions { namesrv, broker: Some(config) }).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        if let Some(broker) = running.broker.clone().filter(|b| b.config.metrics.prometheus) {
            match crate::metrics_endpoint::start(broker, running.shutdown_signal()).await {
                Ok((_, task)) => running.add_task(task),
                Err(e) => {
                    let _ = running.shutdown().await;
                    return Err(e);
                }
            }
        }
        if let (Some(broker), Some(addr)) = (running.broker.clone(), args.console) {
            match crate::console::start(broker, addr, running.shutdown_signal()).await {
                Ok((_, tasks)) => tasks.into_iter().for_each(|t| running.add_task(t)),
                Err(e) => {
                    let _ = running.shutdown().await;
                    return Err(e);
                }
            }
        }
        if let Some(broker) = running.broker.clone() {
            match silo_grpc::serve(broker, running.shutdown_signal()).await {
                Ok(Some(serving)) => running.add_task(serving.task),
                Ok(None) => {}
                Err(e) => {
                    let _ = running.shutdown().await;
                    bail!("{e}");
                }
            }
        }
        signal().await;
        tracing::info!("shutting down");
        running.shutdown().await.map_err(|e| anyhow::anyhow!("{e}"))
    })
}

pub fn run_namesrv(args: NamesrvArgs) -> anyhow::Result<()> {
    init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime
        .block_on(run_server(ServeOptions { namesrv: Some(args.listen), broker: None }, signal()))
        .map_err(|e| anyhow::anyhow!("{e}"))
}
