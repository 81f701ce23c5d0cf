//! What the gRPC tests share: a broker with its gRPC endpoint started in-process on loopback,
//! and a bare HTTP/2 gRPC client that can also send what no SDK would (malformed protobuf,
//! oversized frames, no client id, a thousand streams on one connection).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use silo_broker::Broker;
use silo_broker::server::{Running, ServeOptions, start};
use silo_grpc::proto;

pub struct Endpoint {
    pub running: Running,
    pub broker: Arc<Broker>,
    pub grpc: SocketAddr,
    pub frontend: Arc<silo_grpc::Frontend>,
    _dir: tempfile::TempDir,
}

/// A broker with its embedded name server and its gRPC endpoint, on free loopback ports;
/// `set` are broker.conf keys.
pub async fn endpoint(set: &[(&str, &str)]) -> Endpoint {
    let dir = tempfile::tempdir().unwrap();
    let mut options = ServeOptions::local(dir.path());
    let config = options.broker.as_mut().unwrap();
    config.grpc.port = Some(0);
    config.tls.mode = silo_broker::config::TlsMode::Disabled;
    // Small segments: tests run side by side on one disk.
    config.mapped_file_size_commit_log = 16 << 20;
    for (k, v) in set {
        assert!(config.set(k, v).unwrap(), "{k}");
    }
    let mut running = start(options).await.unwrap();
    let broker = running.broker.clone().unwrap();
    let serving = silo_grpc::serve(Arc::clone(&broker), running.shutdown_signal()).await.unwrap().unwrap();
    let (grpc, frontend) = (serving.addr, Arc::clone(&serving.frontend));
    running.add_task(serving.task);
    Endpoint { running, broker, grpc, frontend, _dir: dir }
}

/// A gRPC frame: not compressed, the length, the message.
pub fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(message.len() + 5);
    b.put_u8(0);
    b.put_u32(u32::try_from(message.len()).unwrap());
    b.put_slice(message);
    b.freeze()
}

pub fn encode(m: &impl prost::Message) -> Bytes {
    frame(&m.encode_to_vec())
}

/// What a call came back with.
#[derive(Debug)]
pub struct Reply {
    /// `grpc-status` (0 OK).
    pub grpc_status: i32,
    pub grpc_message: String,
    pub messages: Vec<Bytes>,
}

impl Reply {
    pub fn decode<M: prost::Message + Default>(&self) -> Vec<M> {
        self.messages.iter().map(|m| M::decode(m.clone()).unwrap()).collect()
    }

    pub fn one<M: prost::Message + Default>(&self) -> M {
        assert_eq!(self.grpc_status, 0, "{}", self.grpc_message);
        let mut all = self.decode::<M>();
        assert_eq!(all.len(), 1, "{} messages", all.len());
        all.remove(0)
    }
}

/// A client's metadata: its id (empty for none), language and version.
#[derive(Debug, Clone)]
pub struct Meta {
    pub client_id: String,
    pub version: String,
    /// `grpc-timeout`, if any.
    pub timeout: Option<Duration>,
}

impl Meta {
    pub fn client(id: &str) -> Self {
        Self { client_id: id.into(), version: "5.0.7".into(), timeout: Some(Duration::from_secs(10)) }
    }
}

/// One HTTP/2 connection to the endpoint.
#[derive(Clone)]
pub struct Conn {
    send: h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
    task: Arc<tokio::task::JoinHandle<()>>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        // Large windows, as gRPC clients open them: h2's budget for small DATA frames is half
        // the connection window, and a thousand answers arrive at once.
        let (send, conn) = h2::client::Builder::new()
            .initial_connection_window_size(16 << 20)
            .initial_window_size(1 << 20)
            .max_concurrent_reset_streams(4096)
            .handshake(tcp)
            .await
            .unwrap();
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        Self { send, addr, task: Arc::new(task) }
    }

    /// Drops the connection at once (a client that crashed, or whose network failed).
    pub fn kill(self) {
        self.task.abort();
    }

    fn request(&self, method: &str, meta: &Meta) -> http::Request<()> {
        let mut b = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}{method}", self.addr))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("x-mq-language", "JAVA")
            .header("x-mq-client-version", meta.version.as_str())
            .header("x-mq-protocol", "v2");
        if !meta.client_id.is_empty() {
            b = b.header("x-mq-client-id", meta.client_id.as_str());
        }
        if let Some(t) = meta.timeout {
            b = b.header("grpc-timeout", format!("{}m", t.as_millis()));
        }
        b.body(()).unwrap()
    }

    /// A call with `body` (already framed) as the whole request stream.
    pub async fn call_raw(&mut self, method: &str, meta: &Meta, body: Bytes) -> Reply {
        let req = self.request(method, meta);
        let mut send = self.send.clone().ready().await.unwrap();
        let (response, mut stream) = send.send_request(req, false).unwrap();
        stream.send_data(body, true).unwrap();
        read(response).await
    }

    pub async fn call(&mut self, method: &str, meta: &Meta, m: &impl prost::Message) -> Reply {
        self.call_raw(method, meta, encode(m)).await
    }

    /// Opens a stream whose request side stays open: its sender and the response.
    pub async fn open_stream(
        &mut self,
        method: &str,
        meta: &Meta,
    ) -> (h2::SendStream<Bytes>, h2::client::ResponseFuture) {
        let req = self.request(method, meta);
        let mut send = self.send.clone().ready().await.unwrap();
        let (response, stream) = send.send_request(req, false).unwrap();
        (stream, response)
    }
}

/// Reads a whole response: its frames and its status (in the trailers, or in the headers of a
/// trailers-only answer).
pub async fn read(response: h2::client::ResponseFuture) -> Reply {
    let response = response.await.unwrap();
    let header_status = grpc_status(response.headers());
    let mut body = response.into_body();
    let mut data = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap();
    let (grpc_status, grpc_message) = trailers.as_ref().map(grpc_status).unwrap_or(header_status);
    let mut messages = Vec::new();
    let mut data = data.freeze();
    while data.len() >= 5 {
        let len = u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize;
        messages.push(data.slice(5..5 + len));
        data = data.slice(5 + len..);
    }
    Reply { grpc_status, grpc_message, messages }
}

/// Reads the next frame of a streaming response body.
pub async fn next_frame(body: &mut h2::RecvStream, buf: &mut BytesMut) -> Option<Bytes> {
    loop {
        if buf.len() >= 5 {
            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
            if buf.len() >= 5 + len {
                let f = buf.split_to(5 + len).freeze();
                return Some(f.slice(5..));
            }
        }
        let chunk = body.data().await?.ok()?;
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
}

fn grpc_status(h: &http::HeaderMap) -> (i32, String) {
    let status = h.get("grpc-status").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(-1);
    let message = h.get("grpc-message").and_then(|v| v.to_str().ok()).map(percent_decoded).unwrap_or_default();
    (status, message)
}

/// `grpc-message` is percent-encoded.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn resource(name: &str) -> Option<proto::Resource> {
    Some(proto::Resource { resource_namespace: String::new(), name: name.into() })
}

pub fn message(topic: &str, id: &str, body: &'static [u8]) -> proto::Message {
    proto::Message {
        topic: resource(topic),
        user_properties: Default::default(),
        system_properties: Some(proto::SystemProperties { message_id: id.into(), ..Default::default() }),
        body: Bytes::from_static(body),
    }
}

/// Sends one message; its entry's code.
pub async fn send(conn: &mut Conn, meta: &Meta, topic: &str, id: &str, body: &'static [u8]) -> i32 {
    let r = conn
        .call(
            proto::method::SEND_MESSAGE,
            meta,
            &proto::SendMessageRequest { messages: vec![message(topic, id, body)] },
        )
        .await;
    let resp: proto::SendMessageResponse = r.one();
    let s = resp.status.unwrap();
    if s.code != 20000 {
        eprintln!("send {id} answered {}: {}; entries {:?}", s.code, s.message, resp.entries);
    }
    s.code
}

/// A receive (a SimpleConsumer's unless `auto_renew`): the status code, and the messages.
pub async fn receive(
    conn: &mut Conn,
    meta: &Meta,
    group: &str,
    topic: &str,
    long_poll: Duration,
    auto_renew: bool,
) -> (i32, Vec<proto::Message>) {
    let req = receive_request(group, topic, long_poll, auto_renew);
    let r = conn.call(proto::method::RECEIVE_MESSAGE, meta, &req).await;
    assert_eq!(r.grpc_status, 0, "{}", r.grpc_message);
    let (code, messages, text) = status_of(&r);
    assert!(code == 20000 || code == 40401, "receive answered {code}: {text}");
    (code, messages)
}

/// A receive answer's status code, messages and status text.
pub fn status_of(r: &Reply) -> (i32, Vec<proto::Message>, String) {
    use proto::receive_message_response::Content;
    let mut code = -1;
    let mut text = String::new();
    let mut messages = Vec::new();
    for f in r.decode::<proto::ReceiveMessageResponse>() {
        match f.content {
            Some(Content::Status(s)) => {
                code = s.code;
                text = s.message;
            }
            Some(Content::Message(m)) => messages.push(*m),
            _ => {}
        }
    }
    (code, messages, text)
}

pub fn receive_request(
    group: &str,
    topic: &str,
    long_poll: Duration,
    auto_renew: bool,
) -> proto::ReceiveMessageRequest {
    proto::ReceiveMessageRequest {
        group: resource(group),
        message_queue: Some(proto::MessageQueue { topic: resource(topic), id: -1, ..Default::default() }),
        filter_expression: None,
        batch_size: 32,
        invisible_duration: Some(prost_types::Duration { seconds: 20, nanos: 0 }),
        auto_renew,
        long_polling_timeout: Some(prost_types::Duration {
            seconds: long_poll.as_secs() as i64,
            nanos: long_poll.subsec_nanos() as i32,
        }),
        attempt_id: None,
    }
}

/// A receive answer's status code and messages.
pub fn frames_of(r: &Reply) -> (i32, Vec<proto::Message>) {
    use proto::receive_message_response::Content;
    let mut code = -1;
    let mut messages = Vec::new();
    for f in r.decode::<proto::ReceiveMessageResponse>() {
        match f.content {
            Some(Content::Status(s)) => code = s.code,
            Some(Content::Message(m)) => messages.push(*m),
            _ => {}
        }
    }
    (code, messages)
}

pub fn handle_of(m: &proto::Message) -> String {
    m.system_properties.as_ref().and_then(|s| s.receipt_handle.clone()).unwrap()
}

/// Acknowledges `m`; the entry's code.
pub async fn ack(conn: &mut Conn, meta: &Meta, group: &str, topic: &str, m: &proto::Message) -> i32 {
    let entry = proto::AckMessageEntry {
        message_id: m.system_properties.as_ref().unwrap().message_id.clone(),
        receipt_handle: handle_of(m),
        lite_topic: None,
    };
    let req = proto::AckMessageRequest { group: resource(group), topic: resource(topic), entries: vec![entry] };
    let resp: proto::AckMessageResponse = conn.call(proto::method::ACK_MESSAGE, meta, &req).await.one();
    resp.entries[0].status.as_ref().unwrap().code
}

pub fn code(c: proto::Code) -> i32 {
    c as i32
}

/// Waits until `f` holds, at most `within`.
pub async fn until(what: &str, within: Duration, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + within;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what} did not happen within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
