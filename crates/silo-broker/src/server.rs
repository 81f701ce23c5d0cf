//! Listeners, connections and the broker's periodic work.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use silo_wire::body::{RegisterBrokerBody, TopicConfigSerializeWrapper, encode_json_body};
use silo_wire::codes::request as rq;
use silo_wire::custom::{CustomHeader, RegisterBrokerRequestHeader, UnregisterBrokerRequestHeader};
use silo_wire::frame::{FrameDecoder, encode_frame};
use silo_wire::{RemotingHeader, SerializeType};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::broker::{Broker, ConnState};
use crate::cmd;
use crate::connection::{Channel, FrameWriter, Outgoing};
use crate::namesrv::RouteTable;
use crate::response;
use crate::tls::{Accepted, Transport};

static CONNECTION_IDS: AtomicU64 = AtomicU64::new(1);

/// What a listener serves.
#[derive(Debug, Clone)]
pub enum Role {
    Broker(Arc<Broker>),
    /// A name server, with the access control it enforces (an embedded one shares its
    /// broker's; a standalone one has none, as Java's name server).
    NameServer(Arc<RouteTable>, Option<Arc<crate::auth::Auth>>),
}

/// Java's `serverSocketBacklog`, for listeners without a broker config (a bare name server).
pub const DEFAULT_BACKLOG: u32 = 1024;

/// A listener on `addr` with room for `backlog` connections not yet accepted (the standard
/// library's bind queues only 128: a reconnect storm then waits a second or more for SYN
/// retransmission).
pub fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// Accepts connections until `shutdown` flips. Accepting runs on a thread of its own, in
/// plain blocking `accept` calls, so that it never waits behind request handling: in a
/// reconnect storm the kernel's queue of connections not yet accepted is drained as fast as
/// they arrive, and each connection is handed to the runtime that serves it.
pub async fn serve(
    listener: TcpListener,
    role: Role,
    transport: Transport,
    idle: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let serving = tokio::runtime::Handle::current();
    let (listener, addr) = match listener.into_std().and_then(|l| {
        l.set_nonblocking(false)?;
        let addr = l.local_addr()?;
        Ok((l, addr))
    }) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot hand the listener to the accepting thread");
            return;
        }
    };
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let accepting = move || {
        loop {
            let accepted = listener.accept();
            if stopping.load(Ordering::Acquire) {
                return;
            }
            match accepted.and_then(|(s, remote)| s.set_nonblocking(true).map(|()| (s, remote))) {
                Ok((socket, remote)) => {
                    let role = role.clone();
                    let transport = transport.clone();
                    serving.spawn(async move {
                        match TcpStream::from_std(socket) {
                            Ok(socket) => new_connection(socket, remote, role, &transport, idle).await,
                            Err(e) => tracing::warn!(%remote, error = %e, "cannot serve an accepted connection"),
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors, say: back off rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    };
    let thread = match std::thread::Builder::new().name("silo-accept".into()).spawn(accepting) {
        Ok(t) => t,
        Err(e) => return tracing::error!(error = %e, "cannot start the accepting thread"),
    };
    let _ = shutdown.changed().await;
    stop.store(true, Ordering::Release);
    // Wake the blocked accept with a connection of our own; it sees the flag and stops.
    let wake = if addr.ip().is_unspecified() { SocketAddr::new([127, 0, 0, 1].into(), addr.port()) } else { addr };
    let _ = std::net::TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
}

/// How long a TLS client may take over its handshake once its first byte has arrived.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A new connection: told TLS from plaintext by its first byte where the port takes TLS, then
/// served. The first byte is awaited as long as an idle connection is kept; the handshake is
/// bounded on its own, so a client that stalls inside it is closed.
async fn new_connection(socket: TcpStream, remote: SocketAddr, role: Role, transport: &Transport, idle: Duration) {
    let _ = socket.set_nodelay(true);
    if !transport.inspects() {
        let (reader, writer) = socket.into_split();
        return connection(reader, writer, remote, role, idle).await;
    }
    match tokio::time::timeout(idle, socket.readable()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return tracing::debug!(%remote, error = %e, "connection failed before its first byte"),
        Err(_) => return tracing::debug!(%remote, "idle connection closed before its first byte"),
    }
    match tokio::time::timeout(idle.min(TLS_HANDSHAKE_TIMEOUT), transport.accept(socket)).await {
        Ok(Ok(Accepted::Plain(socket))) => {
            let (reader, writer) = socket.into_split();
            connection(reader, writer, remote, role, idle).await
        }
        Ok(Ok(Accepted::Tls(stream))) => {
            let (reader, writer) = tokio::io::split(*stream);
            connection(Unbuffered(reader), writer, remote, role, idle).await
        }
        Ok(Err(e)) => tracing::info!(%remote, error = %e, mode = ?transport.mode(), "connection refused"),
        Err(_) => tracing::info!(%remote, "TLS handshake not finished in time; connection closed"),
    }
}

/// A connection's reading side. A plaintext socket says when it has bytes before any read
/// buffer exists, so an idle connection pins none; a TLS stream holds its own buffers, and
/// reads at once.
trait Source: AsyncRead + Unpin + Send {
    fn ready(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send;
}

impl Source for tokio::net::tcp::OwnedReadHalf {
    fn ready(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
        self.readable()
    }
}

/// The reading half of a TLS connection (a [`Source`] that is always ready).
struct Unbuffered<R>(R);

impl<R: AsyncRead + Unpin> AsyncRead for Unbuffered<R> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl<R: AsyncRead + Unpin + Send> Source for Unbuffered<R> {
    fn ready(&self) -> impl std::future::Future<Output = std::io::Result<()>> + Send {
        std::future::ready(Ok(()))
    }
}

/// Bytes a connection asks the kernel for per read: what 32 pipelined 1 KiB sends of one
/// producer take, so that one wake-up reads all of them.
const READ_CHUNK: usize = 64 * 1024;

/// Answers written out at most this many at a time while a long read is still being handled,
/// so that the client's pipeline is refilled while the rest is handled, not after all of it.
const ANSWERS_PER_WRITE: usize = 16;

/// Frames queued by others (parked pulls, flushed sends, notifications) taken per turn.
const QUEUED_PER_TURN: usize = 256;

/// One connection: read frames, handle them, write the answers; close on a frame that does not
/// decode or after `idle` without a request (RocketMQ's 120 s).
///
/// One task does it all: every frame a read brought is handled and its answer written with
/// the others, in one vectored write, before the next read (a hop to a writer task per burst
/// cost two context switches on a busy core). While a write waits for the client to read, no
/// more of its requests are read: a client that stops reading its answers meets TCP's flow
/// control instead of growing the broker's memory. The idle limit is one timer per
/// connection, re-armed when it fires, not one per read.
async fn connection<R, W>(mut reader: R, mut writer: W, remote: SocketAddr, role: Role, idle: Duration)
where
    R: Source,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut queued) = mpsc::unbounded_channel();
    let id = CONNECTION_IDS.fetch_add(1, Ordering::Relaxed);
    let channel = Channel::new(remote, id, tx);
    let decoder = FrameDecoder::default();
    // No read buffer until the first bytes arrive: an idle connection (10,000 of them after a
    // reconnect storm) costs its task and channel, not 64 KiB.
    let mut buf = BytesMut::new();
    let mut conn = ConnState::default();
    let mut out: Vec<Outgoing> = Vec::new();
    let mut frames_out = FrameWriter::default();
    let idle_timer = tokio::time::sleep(idle);
    tokio::pin!(idle_timer);
    let mut active = tokio::time::Instant::now();
    'read: loop {
        let closing = loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    if frame.header.is_response() {
                        channel.answer_arrived(frame);
                        continue;
                    }
                    let code = frame.header.code;
                    let answer = match &role {
                        Role::Broker(b) => cmd::dispatch::broker_request(b, &mut conn, &channel, frame),
                        Role::NameServer(t, auth) => {
                            let answer = cmd::dispatch::namesrv_request(t, auth.as_deref(), &frame, remote.ip());
                            if code == silo_wire::codes::request::REGISTER_BROKER
                                && answer.as_ref().is_none_or(|o| o.header.code == silo_wire::codes::response::SUCCESS)
                                && let Some(addr) = frame.header.ext_fields.get("brokerAddr")
                            {
                                t.registered_on(id, addr);
                            }
                            answer
                        }
                    };
                    if let Some(answer) = answer {
                        if let Some(problem) = answer.header.remark.as_deref().filter(|r| r.starts_with("bad request"))
                        {
                            // Input the Java broker would refuse too: say who sent it and what.
                            tracing::warn!(client = %remote, request = code, %problem, "request refused");
                        }
                        out.push(answer);
                        if out.len() >= ANSWERS_PER_WRITE && frames_out.write(&mut writer, &mut out).await.is_err() {
                            break 'read;
                        }
                    }
                }
                Ok(None) => break false,
                Err(e) => {
                    // The stream cannot be resynchronised: say why, then close.
                    tracing::warn!(%remote, error = %e, "undecodable frame; closing the connection");
                    out.push(response::error(
                        0,
                        silo_wire::codes::response::SYSTEM_ERROR,
                        format!("undecodable frame: {e}"),
                    ));
                    break true;
                }
            }
        };
        while out.len() < QUEUED_PER_TURN
            && let Ok(frame) = queued.try_recv()
        {
            out.push(frame);
        }
        if !out.is_empty() && frames_out.write(&mut writer, &mut out).await.is_err() {
            tracing::debug!(%remote, "connection closed while writing");
            break;
        }
        if closing {
            break;
        }
        // Give back a large buffer once it is drained, so a burst does not pin memory.
        if buf.is_empty() && buf.capacity() > 4 << 20 {
            buf = BytesMut::with_capacity(READ_CHUNK);
        }
        if buf.capacity() == 0 {
            tokio::select! {
                biased;
                ready = unless_idle(reader.ready(), idle_timer.as_mut(), active, idle) => match ready {
                    Some(Ok(())) => buf = BytesMut::with_capacity(READ_CHUNK),
                    Some(Err(_)) => break,
                    None => {
                        tracing::debug!(%remote, "idle connection closed");
                        break;
                    }
                },
                _ = queued.recv_many(&mut out, QUEUED_PER_TURN) => continue,
            }
        }
        buf.reserve(READ_CHUNK);
        tokio::select! {
            biased;
            read = unless_idle(reader.read_buf(&mut buf), idle_timer.as_mut(), active, idle) => match read {
                Some(Ok(0)) | Some(Err(_)) => break,
                Some(Ok(_)) => active = tokio::time::Instant::now(),
                None => {
                    tracing::debug!(%remote, "idle connection closed");
                    break;
                }
            },
            _ = queued.recv_many(&mut out, QUEUED_PER_TURN) => {}
        }
    }
    match &role {
        Role::Broker(b) => {
            let changed = b.clients.channel_closed(id);
            b.notify(changed);
        }
        // As Java's name server: a broker whose registering connection closed is gone (its
        // process died, say), without waiting for its registration to expire.
        Role::NameServer(t, _) => t.channel_closed(id),
    }
    drop(channel);
    let _ = writer.shutdown().await;
}

/// `io`, unless the connection stays idle for `idle` after `active` first (`None`). The
/// connection's one timer is polled beside it and re-armed only when it fires early, so a
/// read registers no timer of its own.
async fn unless_idle<T>(
    io: impl std::future::Future<Output = T>,
    mut timer: std::pin::Pin<&mut tokio::time::Sleep>,
    active: tokio::time::Instant,
    idle: Duration,
) -> Option<T> {
    tokio::pin!(io);
    loop {
        tokio::select! {
            biased;
            out = &mut io => return Some(out),
            () = timer.as_mut() => {
                let due = active + idle;
                if tokio::time::Instant::now() >= due {
                    return None;
                }
                timer.as_mut().reset(due);
            }
        }
    }
}

/// The broker's background work: persist offsets, expire clients and brokers.
pub async fn housekeeping(broker: Arc<Broker>, routes: Option<Arc<RouteTable>>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => return,
        }
        broker.commit_revive_progress();
        if let Err(e) = broker.persist_order_info() {
            tracing::error!(error = %e, "cannot persist orderly pop holds");
        }
        if let Err(e) = broker.offsets.persist() {
            tracing::error!(error = %e, "cannot persist consumer offsets");
        }
        let changed = broker.clients.expire(Instant::now());
        broker.notify(changed);
        if let Some(routes) = &routes {
            routes.expire(Instant::now());
        }
        broker.register_routes();
    }
}

/// Sends a request on `conn` (connecting first if needed) and reads its response; signed with
/// `credentials` if given (`innerClientAuthenticationCredentials`). The connection is kept: a
/// name server forgets a broker as soon as its registering channel closes.
pub(crate) async fn request(
    conn: &mut Option<TcpStream>,
    addr: SocketAddr,
    header: &RemotingHeader,
    body: &[u8],
    credentials: Option<&crate::config::Credentials>,
) -> std::io::Result<silo_wire::frame::Frame> {
    let signed;
    let header = match credentials {
        Some(c) => {
            let mut h = header.clone();
            silo_wire::signature::sign(&mut h.ext_fields, body, c, None);
            signed = h;
            &signed
        }
        None => header,
    };
    let mut out = Vec::new();
    encode_frame(header, SerializeType::Json, body, &mut out).map_err(std::io::Error::other)?;
    let result = async {
        if conn.is_none() {
            *conn = Some(tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr)).await??);
        }
        let stream = conn.as_mut().ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotConnected))?;
        stream.write_all(&out).await?;
        let mut buf = BytesMut::with_capacity(4096);
        let decoder = FrameDecoder::default();
        loop {
            if let Some(frame) = decoder.decode(&mut buf).map_err(std::io::Error::other)? {
                if frame.header.is_response() && frame.header.opaque == header.opaque {
                    return Ok(frame);
                }
                continue;
            }
            let n = tokio::time::timeout(Duration::from_secs(24), stream.read_buf(&mut buf)).await??;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
    .await;
    if result.is_err() {
        *conn = None; // reconnect next time
    }
    result
}

/// REGISTER_BROKER to every external name server, now and every period (docs/protocol.md §2.10).
pub async fn register_with_name_servers(broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(broker.config.register_name_server_period);
    let mut conns: Vec<Option<TcpStream>> = broker.config.namesrv_addr.iter().map(|_| None).collect();
    let mut opaque = 0i32;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shutdown.changed() => break,
        }
        let topics = broker.topics.all();
        let body = encode_json_body(&RegisterBrokerBody {
            filter_server_list: Vec::new(),
            topic_config_serialize_wrapper: TopicConfigSerializeWrapper {
                data_version: topics.data_version,
                topic_config_table: topics.topic_config_table,
                ..Default::default()
            },
        });
        let h = RegisterBrokerRequestHeader {
            broker_name: broker.config.broker_name.clone(),
            broker_addr: broker.config.broker_addr().to_string(),
            cluster_name: broker.config.broker_cluster_name.clone(),
            ha_server_addr: broker.ha_links.ha_server_addr(&broker.config),
            broker_id: broker.config.broker_id,
            heartbeat_timeout_millis: Some(120_000),
            enable_acting_master: Some(false),
            compressed: Some(false),
            body_crc32: Some(silo_wire::checksum::body_crc(&body)),
        };
        opaque = opaque.wrapping_add(1);
        let mut header = RemotingHeader::request(rq::REGISTER_BROKER, opaque);
        h.write_ext_fields(&mut header.ext_fields);
        for (addr, conn) in broker.config.namesrv_addr.iter().zip(conns.iter_mut()) {
            match request(conn, *addr, &header, &body, broker.config.auth.inner_credentials.as_ref())
                .await
                .map(|f| f.header)
            {
                Ok(resp) if resp.code == silo_wire::codes::response::SUCCESS => {
                    tracing::debug!(namesrv = %addr, "registered");
                    if !broker.config.ha.role.is_master() {
                        broker.ha_links.learn_master(
                            resp.ext_fields.get("haServerAddr").unwrap_or(""),
                            resp.ext_fields.get("masterAddr").unwrap_or(""),
                        );
                    }
                }
                Ok(resp) => {
                    tracing::warn!(namesrv = %addr, code = resp.code, remark = ?resp.remark, "registration refused")
                }
                Err(e) => tracing::warn!(namesrv = %addr, error = %e, "registration failed"),
            }
        }
    }
    // Shutting down: unregister.
    let h = UnregisterBrokerRequestHeader {
        broker_name: broker.config.broker_name.clone(),
        broker_addr: broker.config.broker_addr().to_string(),
        cluster_name: broker.config.broker_cluster_name.clone(),
        broker_id: broker.config.broker_id,
    };
    let mut header = RemotingHeader::request(rq::UNREGISTER_BROKER, opaque.wrapping_add(1));
    h.write_ext_fields(&mut header.ext_fields);
    for (addr, conn) in broker.config.namesrv_addr.iter().zip(conns.iter_mut()) {
        let _ = request(conn, *addr, &header, &[], broker.config.auth.inner_credentials.as_ref()).await;
    }
}

/// Options of `silo serve` / `silo broker` / `silo namesrv`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Embedded name server address (`None`: no embedded name server).
    pub namesrv: Option<SocketAddr>,
    /// The broker (`None`: name server only).
    pub broker: Option<crate::BrokerConfig>,
}

impl ServeOptions {
    /// A broker with an embedded name server on free loopback ports, its store under
    /// `data_dir`: what tests start.
    pub fn local(data_dir: &std::path::Path) -> Self {
        let mut broker =
            crate::BrokerConfig { store_path_root_dir: data_dir.to_owned(), listen_port: 0, ..Default::default() };
        broker.ha.listen_port = Some(0);
        Self { namesrv: Some(SocketAddr::from(([127, 0, 0, 1], 0))), broker: Some(broker) }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A running name server and/or broker, started by [`start`].
#[derive(Debug)]
pub struct Running {
    /// Where the embedded name server listens.
    pub namesrv_addr: Option<SocketAddr>,
    /// Where the broker listens.
    pub broker_addr: Option<SocketAddr>,
    pub broker: Option<Arc<Broker>>,
    pub routes: Option<Arc<RouteTable>>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Binds the listeners, opens the store, and starts serving with every background task
/// (housekeeping, the delay scheduler, registration with external name servers). A port 0 in
/// the options takes a free port (see [`Running`] for the ones taken). The embedded name
/// server accepts only once the broker has registered.
pub async fn start(options: ServeOptions) -> Result<Running, BoxError> {
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    let routes = options.namesrv.map(|_| Arc::new(RouteTable::new()));
    let backlog = options.broker.as_ref().map_or(DEFAULT_BACKLOG, |b| b.server_socket_backlog);
    // The name server listens only once the embedded broker has registered its topics and
    // bound its port: until then a client's connection is refused (and retried), rather than
    // told "no route" for a topic the broker has, or left waiting in a backlog while the store
    // recovers.
    let bind_namesrv = || async {
        match (options.namesrv, &routes) {
            (Some(addr), Some(table)) => {
                let listener =
                    listen(addr, backlog).map_err(|e| format!("name server cannot listen on {addr}: {e}"))?;
                Ok::<_, BoxError>(Some((listener, table.clone())))
            }
            _ => Ok(None),
        }
    };
    let start_namesrv = |tasks: &mut Vec<_>,
                         namesrv: Option<(TcpListener, Arc<RouteTable>)>,
                         auth: Option<Arc<crate::auth::Auth>>,
                         transport: Transport| {
        if let Some((listener, table)) = namesrv {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!(%addr, tls = ?transport.mode(), "name server listening");
            }
            let rx = shutdown_rx.clone();
            tasks.push(tokio::spawn(serve(
                listener,
                Role::NameServer(table.clone(), auth),
                transport,
                Duration::from_secs(120),
                rx,
            )));
            let mut rx = shutdown_rx.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(5));
                loop {
                    tokio::select! { _ = tick.tick() => { table.expire(Instant::now()); } _ = rx.changed() => return }
                }
            }));
        }
    };
    let mut running = Running {
        namesrv_addr: None,
        broker_addr: None,
        broker: None,
        routes: routes.clone(),
        shutdown: shutdown_tx,
        tasks: Vec::new(),
    };
    let Some(mut config) = options.broker.clone() else {
        // A bare name server takes TLS as Java's does by default: permissive, with a
        // certificate of its own.
        let settings = crate::tls::TlsSettings::default();
        let identity = crate::tls::Identity::load(&settings)?;
        let transport = Transport::new(settings.mode, Some(&identity), &[])?;
        let namesrv = bind_namesrv().await?;
        running.namesrv_addr = namesrv.as_ref().and_then(|(l, _)| l.local_addr().ok());
        start_namesrv(&mut tasks, namesrv, None, transport);
        running.tasks = tasks;
        return Ok(running);
    };
    // A fixed port is bound once the store is open, so that nothing connects to a broker that
    // is still recovering; a free port (0, in tests) must be taken first, since the routes
    // name it.
    let mut early = None;
    if config.listen_port == 0 {
        let listen = config.broker_addr();
        let listener = self::listen(listen, backlog).map_err(|e| format!("broker cannot listen on {listen}: {e}"))?;
        config.listen_port = listener.local_addr()?.port();
        early = Some(listener);
    }
    config.settle_role()?;
    let listen = config.broker_addr();
    let data = config.store_path_root_dir.clone();
    let idle = config.channel_idle;
    // An embedded name server gets the registration in-process; external ones by TCP.
    let embedded = if config.namesrv_addr.is_empty() { routes.clone() } else { None };
    let broker = tokio::task::spawn_blocking(move || Broker::open(config, embedded)).await??;
    let mode = broker.config.tls.mode;
    let identity = if mode == crate::tls::TlsMode::Disabled { None } else { Some(broker.tls_identity()?) };
    let transport = Transport::new(mode, identity.as_deref(), &[])?;
    let listener = match early {
        Some(l) => l,
        None => self::listen(listen, backlog).map_err(|e| format!("broker cannot listen on {listen}: {e}"))?,
    };
    // Clients of RocketMQ 4.4 and older send to the "VIP channel", listenPort - 2.
    let vip = SocketAddr::new(listen.ip(), listen.port().saturating_sub(2));
    match self::listen(vip, backlog) {
        Ok(l) => tasks.push(tokio::spawn(serve(
            l,
            Role::Broker(broker.clone()),
            transport.clone(),
            idle,
            shutdown_rx.clone(),
        ))),
        Err(e) => {
            tracing::warn!(%vip, error = %e, "cannot listen on the VIP port (listenPort - 2); old clients need it")
        }
    }
    let namesrv = bind_namesrv().await?;
    running.namesrv_addr = namesrv.as_ref().and_then(|(l, _)| l.local_addr().ok());
    // The embedded name server enforces its broker's access control (Java's does none; its
    // clients sign their name-server requests all the same).
    start_namesrv(&mut tasks, namesrv, Some(Arc::clone(&broker.auth)), transport.clone());
    tracing::info!(%listen, name = %broker.config.broker_name, cluster = %broker.config.broker_cluster_name,
        data = %data.display(), flush = if broker.config.flush_disk_type_sync { "SYNC_FLUSH" } else { "ASYNC_FLUSH" },
        tls = ?mode, "broker listening");
    tasks.push(tokio::spawn(serve(listener, Role::Broker(broker.clone()), transport, idle, shutdown_rx.clone())));
    tasks.push(tokio::spawn(housekeeping(broker.clone(), routes.clone(), shutdown_rx.clone())));
    if broker.config.ha.role.is_master() {
        // The services that write messages of the broker's own run on a master only; a
        // slave's log is its master's.
        tasks.push(tokio::spawn(crate::schedule::run(broker.clone(), shutdown_rx.clone())));
        tasks.push(tokio::spawn(crate::transaction_check::run(broker.clone(), shutdown_rx.clone())));
        tasks.push(tokio::spawn(crate::timer::run(broker.clone(), shutdown_rx.clone())));
        tasks.push(tokio::spawn(crate::pop_revive::run(broker.clone(), shutdown_rx.clone())));
        let ha_addr = SocketAddr::new(listen.ip(), broker.config.ha.port(listen.port()));
        match self::listen(ha_addr, backlog) {
            Ok(ha) => {
                broker.ha_links.set_listening(ha.local_addr()?);
                broker.register_routes();
                tasks.push(tokio::spawn(crate::ha::serve_master(broker.clone(), ha, shutdown_rx.clone())));
            }
            // A port the operator chose must be there; the default one (listenPort + 1) is
            // only needed once a slave follows this master.
            Err(e) if broker.config.ha.listen_port.is_some() => {
                return Err(format!("HA listener cannot listen on {ha_addr}: {e}").into());
            }
            Err(e) => tracing::warn!(%ha_addr, error = %e,
                "cannot listen for slaves on listenPort + 1; set haListenPort for a master with slaves"),
        }
    } else {
        tasks.push(tokio::spawn(crate::ha::follow(broker.clone(), shutdown_rx.clone())));
        tasks.push(tokio::spawn(crate::ha::metadata::run(broker.clone(), shutdown_rx.clone())));
    }
    if !broker.config.namesrv_addr.is_empty() {
        tasks.push(tokio::spawn(register_with_name_servers(broker.clone(), shutdown_rx.clone())));
    }
    running.broker_addr = Some(listen);
    running.broker = Some(broker);
    running.tasks = tasks;
    Ok(running)
}

impl Running {
    /// A receiver that sees `true` when the broker starts shutting down: for services started
    /// beside it (the gRPC endpoint).
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Adds a task that shutdown waits for.
    pub fn add_task(&mut self, task: tokio::task::JoinHandle<()>) {
        self.tasks.push(task);
    }

    /// Stops gracefully: stop accepting, persist offsets, unregister, flush and checkpoint the
    /// store.
    pub async fn shutdown(self) -> Result<(), BoxError> {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
        if let Some(broker) = self.broker {
            broker.commit_revive_progress();
            broker.persist_order_info()?;
            broker.offsets.persist()?;
            let store = broker.store.clone();
            tokio::task::spawn_blocking(move || store.shutdown()).await??;
            tracing::info!("store flushed and checkpointed");
        }
        Ok(())
    }
}

/// Serves until `shutdown` completes (`silo serve` passes SIGINT/SIGTERM), then stops
/// gracefully.
pub async fn run(options: ServeOptions, shutdown: impl std::future::Future<Output = ()>) -> Result<(), BoxError> {
    let running = start(options).await?;
    shutdown.await;
    tracing::info!("shutting down");
    running.shutdown().await
}

/// Completes on SIGINT or SIGTERM.
pub async fn signal() {
    wait_for_signal().await;
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
