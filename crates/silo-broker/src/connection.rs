//! A client connection's outgoing side. One task per connection reads the requests and writes
//! the answers: what a read brought is answered and written with one vectored write before the
//! next read, so a pipelined burst costs a read and a write, not a hop to another task per
//! answer. Frames made elsewhere (parked pulls answered later, answers that waited for a flush,
//! broker-initiated requests such as NOTIFY_CONSUMER_IDS_CHANGED) are queued on the
//! connection's [`Channel`], which wakes that task, and go out in the same ordered stream.
//!
//! Pull responses carry their records as [`MessageRef`]s: the header is encoded into a small
//! buffer and the records go from the mapped commit log to the socket with vectored writes,
//! never through an intermediate buffer.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

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

/// The sending side of a connection, cheap to clone and share (e.g. with the consumer registry
/// for notifications).
#[derive(Debug, Clone)]
pub struct Channel {
    pub remote: SocketAddr,
    pub id: u64,
    tx: mpsc::UnboundedSender<Outgoing>,
    opaque: Arc<AtomicI32>,
    /// Requests the broker sent to the client that wait for its answer, by opaque.
    awaiting: Arc<std::sync::Mutex<std::collections::HashMap<i32, tokio::sync::oneshot::Sender<silo_wire::Frame>>>>,
}

impl Channel {
    pub fn new(remote: SocketAddr, id: u64, tx: mpsc::UnboundedSender<Outgoing>) -> Self {
        Self { remote, id, tx, opaque: Arc::new(AtomicI32::new(1)), awaiting: Arc::default() }
    }

    /// Queues a frame; false if the connection is gone.
    pub fn send(&self, out: Outgoing) -> bool {
        self.tx.send(out).is_ok()
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

/// Slices one `writev` takes at most (Linux's IOV_MAX is 1024).
const MAX_IOV: usize = 1024;

/// Encodes and writes batches of frames: the heads one after the other into one buffer, the
/// bodies beside them as slices (stored records straight from the mapped log), in one
/// vectored write. Its buffers are kept from batch to batch, so writing allocates nothing.
#[derive(Debug, Default)]
pub struct FrameWriter {
    heads: BytesMut,
    /// Where each frame's head ends in `heads`; `None` for a frame whose head did not encode.
    head_ends: Vec<Option<usize>>,
    slices_room: Vec<IoSlice<'static>>,
}

impl FrameWriter {
    /// Writes `frames`, in order, and empties it (keeping its room).
    pub async fn write<W: AsyncWrite + Unpin>(
        &mut self,
        socket: &mut W,
        frames: &mut Vec<Outgoing>,
    ) -> std::io::Result<()> {
        self.heads.clear();
        self.head_ends.clear();
        for out in frames.iter() {
            match append_frame_head(&out.header, SerializeType::Json, out.body.len(), &mut self.heads) {
                Ok(_) => self.head_ends.push(Some(self.heads.len())),
                Err(e) => {
                    tracing::error!(error = %e, "cannot encode a response header");
                    self.head_ends.push(None);
                }
            }
        }
        let mut slices = reuse(std::mem::take(&mut self.slices_room));
        let mut start = 0;
        for (out, end) in frames.iter().zip(&self.head_ends) {
            let Some(end) = *end else { continue };
            slices.push(IoSlice::new(self.heads.get(start..end).unwrap_or_default()));
            start = end;
            match &out.body {
                Body::None => {}
                Body::Bytes(b) if b.is_empty() => {}
                Body::Bytes(b) => slices.push(IoSlice::new(b)),
                Body::Records(records) => slices.extend(records.iter().map(|r| IoSlice::new(r))),
            }
        }
        let result = write_all_slices(socket, &mut slices).await;
        self.slices_room = reuse(slices);
        frames.clear();
        // A TLS stream may hold the tail of what was written until flushed; a socket's flush
        // does nothing.
        result?;
        socket.flush().await
    }
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
