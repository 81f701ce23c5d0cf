//! `silo bench null-broker`: the ceiling a load generator and loopback allow. A responder that
//! speaks just enough of the remoting protocol, name server and broker on one port, for a
//! producer to run against it (routes, cluster info, topic creation, heartbeats, each queue's
//! max offset) and answers every send with SEND_OK at once, storing nothing.
//!
//! It is as cheap as a responder can be, so that a table row run against it measures the
//! generator and the kernel's loopback, not a broker: one task per connection, every frame a
//! read brought answered into one buffer, and that buffer written with one system call.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use anyhow::Context;
use bytes::BytesMut;
use clap::Args;
use silo_wire::body::{BrokerData, ClusterInfo, QueueData, TopicRouteData, encode_json_body};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::frame::{FrameDecoder, append_frame_head};
use silo_wire::msgid::offset_msg_id;
use silo_wire::{ExtStr, RemotingHeader, SerializeType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BROKER_NAME: &str = "null-broker";
const CLUSTER: &str = "NullCluster";

#[derive(Args, Debug, Clone)]
pub struct NullBrokerArgs {
    /// Address to listen on, as name server and broker at once (loopback only).
    #[arg(long, default_value = "127.0.0.1:9876")]
    listen: SocketAddr,
    /// Queues every topic's route offers.
    #[arg(long, default_value_t = 8)]
    queues: i32,
}

/// Most queues a topic created on the null broker may have.
const MAX_QUEUES: i32 = 1024;

/// What every connection shares: the address in the routes, the next offset of each queue,
/// and the queue count of each topic created (routed with `--queues` otherwise).
struct Responder {
    addr: SocketAddr,
    queues: i32,
    offsets: Vec<AtomicI64>,
    broker: BrokerData,
    topics: std::sync::Mutex<std::collections::HashMap<String, i32>>,
    cluster: Vec<u8>,
}

pub async fn null_broker(args: NullBrokerArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.listen.ip().is_loopback(), "the null broker listens on loopback only, not {}", args.listen);
    anyhow::ensure!((1..=MAX_QUEUES).contains(&args.queues), "--queues must be 1 to {MAX_QUEUES}");
    let listener = TcpListener::bind(args.listen).await.with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let broker = BrokerData {
        broker_addrs: BTreeMap::from([(0, addr.to_string())]),
        broker_name: BROKER_NAME.into(),
        cluster: CLUSTER.into(),
        enable_acting_master: false,
    };
    let cluster = encode_json_body(&ClusterInfo {
        broker_addr_table: BTreeMap::from([(BROKER_NAME.to_owned(), broker.clone())]),
        cluster_addr_table: BTreeMap::from([(CLUSTER.to_owned(), BTreeSet::from([BROKER_NAME.to_owned()]))]),
    });
    let responder = Arc::new(Responder {
        addr,
        queues: args.queues,
        offsets: (0..MAX_QUEUES).map(|_| AtomicI64::new(0)).collect(),
        broker,
        topics: std::sync::Mutex::default(),
        cluster,
    });
    eprintln!("null broker: listening on {addr} (name server and broker; every send answered SEND_OK, nothing stored)");
    loop {
        let (socket, _) = listener.accept().await?;
        let _ = socket.set_nodelay(true);
        let responder = Arc::clone(&responder);
        tokio::spawn(async move {
            if let Err(e) = responder.serve(socket).await {
                tracing::debug!(error = %e, "null broker connection ended");
            }
        });
    }
}

impl Responder {
    async fn serve(&self, mut socket: TcpStream) -> anyhow::Result<()> {
        let decoder = FrameDecoder::default();
        let mut input = BytesMut::with_capacity(64 * 1024);
        let mut output = BytesMut::with_capacity(16 * 1024);
        loop {
            input.reserve(64 * 1024);
            if socket.read_buf(&mut input).await? == 0 {
                return Ok(());
            }
            while let Some(frame) = decoder.decode(&mut input)? {
                if frame.header.is_response() || frame.header.is_oneway() {
                    continue;
                }
                self.answer(&frame.header, &frame.body, &mut output)?;
            }
            socket.write_all(&output).await?;
            output.clear();
        }
    }

    /// A topic's route: this responder, with the topic's queues.
    fn route(&self, topic: &str) -> Vec<u8> {
        let queues = self.topics.lock().unwrap_or_else(|e| e.into_inner()).get(topic).copied().unwrap_or(self.queues);
        encode_json_body(&TopicRouteData {
            broker_datas: vec![self.broker.clone()],
            queue_datas: vec![QueueData {
                broker_name: BROKER_NAME.into(),
                perm: 6,
                read_queue_nums: queues,
                topic_sys_flag: 0,
                write_queue_nums: queues,
            }],
            ..TopicRouteData::default()
        })
    }

    /// Appends the answer to one request.
    fn answer(&self, request: &RemotingHeader, body: &[u8], out: &mut BytesMut) -> anyhow::Result<()> {
        let mut header = RemotingHeader::response(rs::SUCCESS, request.opaque, None);
        let route;
        let body: &[u8] = match request.code {
            rq::SEND_MESSAGE | rq::SEND_MESSAGE_V2 | rq::SEND_BATCH_MESSAGE => {
                let queue_key = if request.code == rq::SEND_MESSAGE { "queueId" } else { "e" };
                let queue = request
                    .ext_fields
                    .get(queue_key)
                    .and_then(|q| q.parse::<i32>().ok())
                    .filter(|q| (0..MAX_QUEUES).contains(q))
                    .unwrap_or(0);
                // A batch takes one offset per message, as in a broker, so that the queue's max
                // offset counts messages (what the harness reads to count the Java tools' sends).
                let messages = if request.code == rq::SEND_BATCH_MESSAGE {
                    i64::try_from(silo_wire::decode_batch(body).count()).unwrap_or(1).max(1)
                } else {
                    1
                };
                let offset = self
                    .offsets
                    .get(usize::try_from(queue).unwrap_or(0))
                    .map_or(0, |o| o.fetch_add(messages, Ordering::Relaxed));
                let ext = &mut header.ext_fields;
                ext.insert("msgId", ExtStr::from(offset_msg_id(self.addr, offset).as_str()));
                ext.insert("queueId", ExtStr::format(format_args!("{queue}")));
                ext.insert("queueOffset", ExtStr::format(format_args!("{offset}")));
                ext.insert("MSG_REGION", "DefaultRegion");
                ext.insert("TRACE_ON", "false");
                &[]
            }
            rq::UPDATE_AND_CREATE_TOPIC => {
                let topic = request.ext_fields.get("topic").unwrap_or_default();
                let queues = request.ext_fields.get("writeQueueNums").and_then(|q| q.parse::<i32>().ok());
                if let Some(queues) = queues.filter(|q| (1..=MAX_QUEUES).contains(q)) {
                    self.topics.lock().unwrap_or_else(|e| e.into_inner()).insert(topic.to_owned(), queues);
                }
                &[]
            }
            rq::GET_MAX_OFFSET => {
                let queue = request.ext_fields.get("queueId").and_then(|q| q.parse::<usize>().ok()).unwrap_or(0);
                let offset = self.offsets.get(queue).map_or(0, |o| o.load(Ordering::Relaxed));
                header.ext_fields.insert("offset", ExtStr::format(format_args!("{offset}")));
                &[]
            }
            rq::GET_ROUTEINFO_BY_TOPIC => {
                route = self.route(request.ext_fields.get("topic").unwrap_or_default());
                &route
            }
            rq::GET_BROKER_CLUSTER_INFO => &self.cluster,
            // Heartbeats, client unregistration, topic creation: accepted, nothing kept.
            _ => &[],
        };
        append_frame_head(&header, SerializeType::Json, body.len(), out)?;
        out.extend_from_slice(body);
        Ok(())
    }
}
