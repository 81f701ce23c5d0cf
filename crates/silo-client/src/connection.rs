//! One TCP connection to a name server or broker, multiplexed by `opaque`: any number of
//! requests may be in flight at once (pipelining), and their responses come back in any order.
//!
//! Frames go out through a writer task that gathers whatever is queued into one vectored write,
//! so a pipelined producer costs one system call per burst, not per message, and a message body
//! handed in as `Bytes` is written from where it lies, never copied into a frame buffer. Frames
//! come in through the codec's incremental decoder on a reader task; a response's body is a
//! slice of the read buffer.

use std::collections::{HashMap, VecDeque};
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use silo_wire::frame::{FrameDecoder, encode_frame_head};
use silo_wire::header::FLAG_ONEWAY;
use silo_wire::{Frame, RemotingHeader, SerializeType};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::ClientError;
pub use crate::tls::Tls;

/// Most slices handed to one vectored write (Linux's `IOV_MAX` is 1024).
const MAX_IOVECS: usize = 256;

type Pending = Arc<Mutex<HashMap<i32, oneshot::Sender<Frame>>>>;

/// A connection shared by every request to one address.
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    local: SocketAddr,
    serialize: SerializeType,
    tx: mpsc::UnboundedSender<[Bytes; 2]>,
    pending: Pending,
    opaque: AtomicI32,
    closed: Arc<AtomicBool>,
    /// What every request is signed with, if the server wants signed requests.
    credentials: Option<Arc<Credentials>>,
}

/// An access key and its secret key: with them every request is signed as RocketMQ's
/// `AclClientRPCHook` signs it, for a server with authentication on.
pub use silo_wire::signature::Credentials;

impl Connection {
    /// Connects to `addr` in plaintext, giving up after `timeout`.
    pub async fn connect(addr: SocketAddr, serialize: SerializeType, timeout: Duration) -> Result<Self, ClientError> {
        Self::connect_with(addr, serialize, timeout, None).await
    }

    /// Connects to `addr`, over TLS if `tls` is given, giving up after `timeout` (the
    /// handshake included).
    pub async fn connect_with(
        addr: SocketAddr,
        serialize: SerializeType,
        timeout: Duration,
        tls: Option<&Tls>,
    ) -> Result<Self, ClientError> {
        let failed = |reason: String| ClientError::Connect { addr: addr.to_string(), reason };
        let connecting = async {
            let stream = TcpStream::connect(addr).await.map_err(|e| failed(e.to_string()))?;
            let _ = stream.set_nodelay(true);
            let local = stream.local_addr().map_err(|e| failed(e.to_string()))?;
            let (tx, rx) = mpsc::unbounded_channel();
            let pending: Pending = Arc::default();
            let closed = Arc::new(AtomicBool::new(false));
            match tls {
                None => {
                    let (reader, writer) = stream.into_split();
                    tokio::spawn(write_loop(writer, rx, closed.clone()));
                    tokio::spawn(read_loop(reader, addr, pending.clone(), closed.clone()));
                }
                Some(tls) => {
                    let stream = tls.handshake(addr, stream).await.map_err(|e| failed(format!("TLS: {e}")))?;
                    let (reader, writer) = tokio::io::split(stream);
                    tokio::spawn(write_loop(writer, rx, closed.clone()));
                    tokio::spawn(read_loop(reader, addr, pending.clone(), closed.clone()));
                }
            }
            Ok(Self { addr, local, serialize, tx, pending, opaque: AtomicI32::new(1), closed, credentials: None })
        };
        tokio::time::timeout(timeout, connecting).await.map_err(|_| failed(format!("no answer within {timeout:?}")))?
    }

    /// Signs every request from now on with `credentials`.
    #[must_use]
    pub fn signed_with(mut self, credentials: Option<Arc<Credentials>>) -> Self {
        self.credentials = credentials;
        self
    }

    fn sign(&self, header: &mut RemotingHeader, body: &[u8]) {
        if let Some(c) = &self.credentials {
            silo_wire::signature::sign(&mut header.ext_fields, body, c, None);
        }
    }

    /// The address this connection goes to.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Our end of the connection.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Whether the connection has failed or been closed by the peer.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.tx.is_closed()
    }

    fn frame_head(&self, header: &mut RemotingHeader, body_len: usize) -> Result<Bytes, ClientError> {
        header.opaque = self.opaque.fetch_add(1, Ordering::Relaxed);
        let mut head = BytesMut::with_capacity(256);
        encode_frame_head(header, self.serialize, body_len, &mut head)?;
        Ok(head.freeze())
    }

    /// Sends a request and waits up to `timeout` for its response. Any response code is
    /// returned as is; the caller decides what is an error.
    pub async fn request(
        &self,
        mut header: RemotingHeader,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Frame, ClientError> {
        let code = header.code;
        self.sign(&mut header, &body);
        let head = self.frame_head(&mut header, body.len())?;
        let opaque = header.opaque;
        let (done, answer) = oneshot::channel();
        self.lock_pending().insert(opaque, done);
        if self.closed.load(Ordering::Acquire) || self.tx.send([head, body]).is_err() {
            self.lock_pending().remove(&opaque);
            return Err(ClientError::ConnectionClosed { addr: self.addr.to_string() });
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(frame)) => Ok(frame),
            Ok(Err(_)) => Err(ClientError::ConnectionClosed { addr: self.addr.to_string() }),
            Err(_) => {
                self.lock_pending().remove(&opaque);
                Err(ClientError::Timeout { addr: self.addr.to_string(), code, timeout })
            }
        }
    }

    /// Sends a one-way request: no response is expected or waited for.
    pub fn oneway(&self, mut header: RemotingHeader, body: Bytes) -> Result<(), ClientError> {
        header.flag |= FLAG_ONEWAY;
        self.sign(&mut header, &body);
        let head = self.frame_head(&mut header, body.len())?;
        if self.closed.load(Ordering::Acquire) {
            return Err(ClientError::ConnectionClosed { addr: self.addr.to_string() });
        }
        self.tx.send([head, body]).map_err(|_| ClientError::ConnectionClosed { addr: self.addr.to_string() })
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<i32, oneshot::Sender<Frame>>> {
        // A panic while holding the lock cannot leave the map inconsistent: keep using it.
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// Gathers queued frames into vectored writes until the connection is dropped or fails.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut socket: W,
    mut rx: mpsc::UnboundedReceiver<[Bytes; 2]>,
    closed: Arc<AtomicBool>,
) {
    let mut queue: VecDeque<Bytes> = VecDeque::new();
    while let Some([head, body]) = rx.recv().await {
        queue.push_back(head);
        if !body.is_empty() {
            queue.push_back(body);
        }
        // Take what else is already queued, so a burst goes out in one write.
        while queue.len() < MAX_IOVECS {
            match rx.try_recv() {
                Ok([head, body]) => {
                    queue.push_back(head);
                    if !body.is_empty() {
                        queue.push_back(body);
                    }
                }
                Err(_) => break,
            }
        }
        // A TLS stream may keep the tail of a write until flushed; a socket's flush does nothing.
        let written = match write_queue(&mut socket, &mut queue).await {
            Ok(()) => socket.flush().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::debug!(error = %e, "write failed; closing the connection");
            break;
        }
    }
    closed.store(true, Ordering::Release);
    let _ = socket.shutdown().await;
}

async fn write_queue<W: AsyncWrite + Unpin>(socket: &mut W, queue: &mut VecDeque<Bytes>) -> std::io::Result<()> {
    while !queue.is_empty() {
        let slices: Vec<IoSlice<'_>> = queue.iter().take(MAX_IOVECS).map(|b| IoSlice::new(b)).collect();
        let mut written = socket.write_vectored(&slices).await?;
        drop(slices);
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let Some(front) = queue.front_mut() else { break };
            if written >= front.len() {
                written -= front.len();
                queue.pop_front();
            } else {
                front.advance(written);
                written = 0;
            }
        }
    }
    Ok(())
}

/// Hands each response to the request waiting for it; when the connection ends, every waiting
/// request learns so (its sender is dropped).
async fn read_loop<R: AsyncRead + Unpin>(mut socket: R, addr: SocketAddr, pending: Pending, closed: Arc<AtomicBool>) {
    let decoder = FrameDecoder::default();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    'read: loop {
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => {
                    if !frame.header.is_response() {
                        // Broker-initiated requests (consumer-ids-changed notices) need no answer
                        // from a client that does not take part in rebalancing.
                        continue;
                    }
                    let waiter =
                        pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&frame.header.opaque);
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(frame);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(%addr, error = %e, "undecodable frame from the server; closing the connection");
                    break 'read;
                }
            }
        }
        if buf.is_empty() && buf.capacity() > 4 << 20 {
            buf = BytesMut::with_capacity(64 * 1024);
        }
        buf.reserve(64 * 1024);
        if closed.load(Ordering::Acquire) {
            break;
        }
        match socket.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    closed.store(true, Ordering::Release);
    pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
}
