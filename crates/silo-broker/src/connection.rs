//! A client connection: frames in through the codec's incremental decoder, frames out through
//! a writer task, so that responses (including parked pulls answered later) and broker-initiated
//! requests (NOTIFY_CONSUMER_IDS_CHANGED) share one ordered outgoing stream.
//!
//! Pull responses carry their records as [`MessageRef`]s: the header is encoded into a small
//! buffer and the records go from the mapped commit log to the socket with vectored writes,
//! never through an intermediate buffer.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};
use silo_store::MessageRef;
use silo_wire::frame::append_frame_head;
use silo_wire::{RemotingHeader, SerializeType};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// The body of an outgoing frame.
#[derive(Debug)]
pub enum Body {
    None,
    Bytes(Bytes),
    /// Stored records, written straight from the commit log.
    Records(Vec<MessageRef>),
}

impl Body {
    pub fn len(&self) -> usize {
        match self {
            Body::None => 0,
            Body::Bytes(b) => b.len(),
            Body::Records(r) => r.iter().map(MessageRef::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A frame to send.
#[derive(Debug)]
pub struct Outgoing {
    pub header: RemotingHeader,
    pub body: Body,
}

/// Frames queued for a connection's writer beyond which the connection reads no more
/// requests: a client that stops reading its responses then meets TCP's flow control instead
/// of growing the broker's memory (Netty's write-buffer high-water mark, in frames).
pub const MAX_QUEUED_FRAMES: usize = 256;

/// How many frames wait for a connection's writer, and a wake-up when they drain.
#[derive(Debug, Default)]
pub struct Backlog {
    queued: AtomicUsize,
    drained: tokio::sync::Notify,
}

impl Backlog {
    /// Waits until fewer than [`MAX_QUEUED_FRAMES`] frames are queued.
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            if self.queued.load(Ordering::Acquire) < MAX_QUEUED_FRAMES {
                return;
            }
            drained.await;
        }
    }

    /// `n` frames left the queue; wakes the reader when the queue falls to half its limit.
    fn written(&self, n: usize) {
        let before = self.queued.fetch_sub(n, Ordering::AcqRel);
        if before > MAX_QUEUED_FRAMES / 2 && before.saturating_sub(n) <= MAX_QUEUED_FRAMES / 2 {
            self.drained.notify_waiters();
        }
    }
}

/// The sending side of a connection, cheap to clone and share (e.g. with the consumer registry
/// for notifications).
#[derive(Debug, Clone)]
pub struct Channel {
    pub remote: SocketAddr,
    pub id: u64,
    tx: mpsc::UnboundedSender<Outgoing>,
    opaque: Arc<AtomicI32>,
    backlog: Arc<Backlog>,
    /// Requests the broker sent to the client that wait for its answer, by opaque.
    awaiting: Arc<std::sync::Mutex<std::collections::HashMap<i32, tokio::sync::oneshot::Sender<silo_wire::Frame>>>>,
}

impl Channel {
    pub fn new(remote: SocketAddr, id: u64, tx: mpsc::UnboundedSender<Outgoing>) -> Self {
        Self { remote, id, tx, opaque: Arc::new(AtomicI32::new(1)), backlog: Arc::default(), awaiting: Arc::default() }
    }

    /// Queues a frame; false if the connection is gone.
    pub fn send(&self, out: Outgoing) -> bool {
        self.backlog.queued.fetch_add(1, Ordering::AcqRel);
        let sent = self.tx.send(out).is_ok();
        if !sent {
            self.backlog.written(1);
        }
        sent
    }

    /// The frames waiting for this connection's writer.
    pub fn backlog(&self) -> &Arc<Backlog> {
        &self.backlog
    }

    /// A one-way request from the broker to the client.
    pub fn send_oneway_request(&self, code: i32, ext: silo_wire::ExtFields) -> bool {
        self.send_oneway_request_with_body(code, ext, Body::None)
    }

    /// A one-way request from the broker to the client, with a body.
    pub fn send_oneway_request_with_body(&self, code: i32, ext: silo_wire::ExtFields, body: Body) -> bool {
        let opaque = self.opaque.fetch_add(1, Ordering::Relaxed);
        let mut header = RemotingHeader::request(code, opaque);
        header.flag |= silo_wire::header::FLAG_ONEWAY;
        header.ext_fields = ext;
        self.send(Outgoing { header, body })
    }

    /// A request from the broker to the client whose answer is awaited: the answer, or `None`
    /// if the connection closed or `timeout` passed first.
    pub async fn request(
        &self,
        code: i32,
        ext: silo_wire::ExtFields,
        body: Body,
        timeout: std::time::Duration,
    ) -> Option<silo_wire::Frame> {
        let opaque = self.opaque.fetch_add(1, Ordering::Relaxed);
        let mut header = RemotingHeader::request(code, opaque);
        header.ext_fields = ext;
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.awaiting.lock().unwrap_or_else(|e| e.into_inner()).insert(opaque, tx);
        let answer = if self.send(Outgoing { header, body }) {
            tokio::time::timeout(timeout, rx).await.ok().and_then(Result::ok)
        } else {
            None
        };
        self.awaiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&opaque);
        answer
    }

    /// The client answered a request of the broker's; an answer nobody waits for (to a
    /// one-way notification, or after its timeout) is dropped.
    pub fn answer_arrived(&self, answer: silo_wire::Frame) {
        let waiting = self.awaiting.lock().unwrap_or_else(|e| e.into_inner()).remove(&answer.header.opaque);
        if let Some(tx) = waiting {
            let _ = tx.send(answer);
        }
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Frames written with one vectored write at most: a burst of pipelined answers goes out in
/// one system call instead of one per answer.
const WRITE_BATCH: usize = 64;

/// Slices one `writev` takes at most (Linux's IOV_MAX is 1024).
const MAX_IOV: usize = 1024;

/// Writes frames from `rx` to the socket until the channel or the socket closes. Whatever is
/// queued when the writer wakes goes out together: the heads encoded one after the other
/// into one buffer, the bodies beside them as slices, in one vectored write.
pub async fn write_loop<W: AsyncWrite + Unpin>(
    mut socket: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    backlog: Arc<Backlog>,
) {
    let mut frames: Vec<Outgoing> = Vec::with_capacity(WRITE_BATCH);
    let mut heads = BytesMut::with_capacity(16 * 1024);
    // Where each frame's head ends in `heads`; `None` for a frame whose head did not encode.
    let mut head_ends: Vec<Option<usize>> = Vec::with_capacity(WRITE_BATCH);
    let mut slices_room: Vec<IoSlice<'static>> = Vec::with_capacity(MAX_IOV);
    while rx.recv_many(&mut frames, WRITE_BATCH).await > 0 {
        backlog.written(frames.len());
        heads.clear();
        head_ends.clear();
        for out in &frames {
            match append_frame_head(&out.header, SerializeType::Json, out.body.len(), &mut heads) {
                Ok(_) => head_ends.push(Some(heads.len())),
                Err(e) => {
                    tracing::error!(error = %e, "cannot encode a response header");
                    head_ends.push(None);
                }
            }
        }
        let mut slices = reuse(std::mem::take(&mut slices_room));
        let mut start = 0;
        for (out, end) in frames.iter().zip(&head_ends) {
            let Some(end) = *end else { continue };
            slices.push(IoSlice::new(heads.get(start..end).unwrap_or_default()));
            start = end;
            match &out.body {
                Body::None => {}
                Body::Bytes(b) if b.is_empty() => {}
                Body::Bytes(b) => slices.push(IoSlice::new(b)),
                Body::Records(records) => slices.extend(records.iter().map(|r| IoSlice::new(r))),
            }
        }
        let result = write_all_slices(&mut socket, &mut slices).await;
        slices_room = reuse(slices);
        frames.clear();
        // A TLS stream may hold the tail of what was written until flushed; a socket's flush
        // does nothing. Flushed once nothing more is queued, so a burst still goes in one go.
        let result = match result {
            Ok(()) if rx.is_empty() => socket.flush().await,
            other => other,
        };
        if let Err(e) = result {
            tracing::debug!(error = %e, "connection closed while writing");
            return;
        }
    }
    let _ = socket.shutdown().await;
}

/// An emptied vector of slices with the room of `v`, for slices of another lifetime: the
/// writer keeps one allocation for its slice lists however many batches it writes (the
/// standard library collects an empty vector's iterator into its own allocation when the
/// element layout is the same).
fn reuse<'a>(mut v: Vec<IoSlice<'_>>) -> Vec<IoSlice<'a>> {
    v.clear();
    v.into_iter().map(|_| IoSlice::new(&[])).collect()
}

/// Writes every slice, in order, with as few system calls as the kernel allows.
async fn write_all_slices<W: AsyncWrite + Unpin>(
    socket: &mut W,
    mut slices: &mut [IoSlice<'_>],
) -> std::io::Result<()> {
    while !slices.is_empty() {
        let n = socket.write_vectored(slices.get(..MAX_IOV).unwrap_or(slices)).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}
