//! The broker and the embedded name server over real loopback sockets, spoken to frame by frame
//! the way stock clients do: route lookup, auto-created topics, send, heartbeat, pull with long
//! polling, offsets, and what happens to bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use silo_broker::Broker;
use silo_broker::server::ServeOptions;
use silo_broker::server::{Role, serve};
use silo_wire::body::{
    ConsumerData, HeartbeatData, SubscriptionData, TagCode, TopicRouteData, decode_json_body, encode_json_body,
};
use silo_wire::codes::{request as rq, response as rs};
use silo_wire::custom::*;
use silo_wire::frame::{FrameDecoder, encode_frame};
use silo_wire::{Frame, RemotingHeader, SerializeType};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Cluster {
    namesrv: SocketAddr,
    broker: SocketAddr,
    _dir: tempfile::TempDir,
    _running: silo_broker::server::Running,
    broker_state: std::sync::Arc<Broker>,
}

async fn start() -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let mut options = ServeOptions::local(dir.path());
    options.broker.as_mut().unwrap().mapped_file_size_commit_log = 1 << 20;
    let running = silo_broker::server::start(options).await.unwrap();
    let (namesrv, broker) = (running.namesrv_addr.unwrap(), running.broker_addr.unwrap());
    let broker_state = running.broker.clone().unwrap();
    Cluster { namesrv, broker, _dir: dir, _running: running, broker_state }
}

struct Client {
    stream: TcpStream,
    buf: BytesMut,
    opaque: i32,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Self {
        Self { stream: TcpStream::connect(addr).await.unwrap(), buf: BytesMut::new(), opaque: 0 }
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    async fn next_frame(&mut self) -> Option<Frame> {
        let decoder = FrameDecoder::default();
        loop {
            if let Some(f) = decoder.decode(&mut self.buf).unwrap() {
                return Some(f);
            }
            let n =
                tokio::time::timeout(Duration::from_secs(20), self.stream.read_buf(&mut self.buf)).await.ok()?.ok()?;
            if n == 0 {
                return None;
            }
        }
    }

    /// Sends a request and returns its response (skipping broker-initiated requests).
    async fn call(&mut self, code: i32, ext: &impl CustomHeader, body: &[u8], serialize: SerializeType) -> Frame {
        self.opaque += 1;
        let mut h = RemotingHeader::request(code, self.opaque);
        ext.write_ext_fields(&mut h.ext_fields);
        let mut out = Vec::new();
        encode_frame(&h, serialize, body, &mut out).unwrap();
        self.send_raw(&out).await;
        loop {
            let f = self.next_frame().await.expect("response");
            if f.header.is_response() && f.header.opaque == self.opaque {
                return f;
            }
        }
    }
}

#[derive(Default)]
struct NoHeader;
impl CustomHeader for NoHeader {
    fn write_ext_fields(&self, _: &mut silo_wire::ExtFields) {}
    fn read_ext_fields(_: &silo_wire::ExtFields) -> Result<Self, HeaderError> {
        Ok(Self)
    }
}

fn send_header(topic: &str, queue_id: i32, props: &str) -> SendMessageRequestHeaderV2 {
    SendMessageRequestHeaderV2 {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(props.into()),
        ..Default::default()
    }
}

fn pull_header(topic: &str, queue_id: i32, offset: i64, suspend: bool) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: if suspend { pull_sys_flag::SUSPEND } else { 0 },
        commit_offset: 0,
        suspend_timeout_millis: 2_000,
        sub_version: 1,
        ..Default::default()
    }
}

async fn heartbeat(c: &mut Client, topic: &str, tags: &str) {
    let codes: Vec<TagCode> = if tags == "*" {
        vec![]
    } else {
        tags.split("||").map(|t| TagCode(silo_wire::checksum::java_string_hash(t.trim()))).collect()
    };
    let hb = HeartbeatData {
        client_id: "127.0.0.1@test".into(),
        consumer_data_set: vec![ConsumerData {
            group_name: "cg".into(),
            consume_type: "CONSUME_PASSIVELY".into(),
            message_model: "CLUSTERING".into(),
            consume_from_where: "CONSUME_FROM_FIRST_OFFSET".into(),
            subscription_data_set: vec![SubscriptionData {
                topic: topic.into(),
                sub_string: tags.into(),
                sub_version: 1,
                code_set: codes,
                expression_type: Some("TAG".into()),
                ..Default::default()
            }],
            unit_mode: false,
        }],
        ..Default::default()
    };
    let r = c.call(rq::HEART_BEAT, &NoHeader, &encode_json_body(&hb), SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
}

#[tokio::test]
async fn a_topic_is_auto_created_routed_sent_to_and_pulled_from() {
    let cluster = start().await;
    let mut ns = Client::connect(cluster.namesrv).await;
    let route = |topic: &str| GetRouteInfoRequestHeader { topic: topic.into(), accept_standard_json_only: None };
    // Unknown topic: TOPIC_NOT_EXIST; TBW102 is routable for auto-creation.
    assert_eq!(
        ns.call(rq::GET_ROUTEINFO_BY_TOPIC, &route("Orders"), &[], SerializeType::Json).await.header.code,
        rs::TOPIC_NOT_EXIST
    );
    let r = ns.call(rq::GET_ROUTEINFO_BY_TOPIC, &route("TBW102"), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
    let data: TopicRouteData = decode_json_body(&r.body).unwrap();
    assert_eq!(data.broker_datas[0].broker_addrs[&0], cluster.broker.to_string());

    let mut br = Client::connect(cluster.broker).await;
    let mut ids = Vec::new();
    for i in 0..10 {
        let props = format!(
            "TAGS\u{1}{}\u{2}KEYS\u{1}k{i}\u{2}UNIQ_KEY\u{1}U{i:031}\u{2}WAIT\u{1}true\u{2}",
            if i % 2 == 0 { "TagA" } else { "TagB" }
        );
        // Alternate the two header serializations.
        let ser = if i % 2 == 0 { SerializeType::Json } else { SerializeType::RocketMq };
        let r =
            br.call(rq::SEND_MESSAGE_V2, &send_header("Orders", 1, &props), format!("body-{i}").as_bytes(), ser).await;
        assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
        let h = SendMessageResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap();
        assert_eq!((h.queue_id, h.queue_offset), (1, i));
        assert_eq!(h.msg_region, "DefaultRegion");
        ids.push(h.msg_id);
    }
    // The new topic is routable now, with 4 queues (min of the requested 4 and TBW102's 8).
    let data: TopicRouteData =
        decode_json_body(&ns.call(rq::GET_ROUTEINFO_BY_TOPIC, &route("Orders"), &[], SerializeType::Json).await.body)
            .unwrap();
    assert_eq!(data.queue_datas[0].write_queue_nums, 4);

    // Pull without a registered subscription: SUBSCRIPTION_NOT_EXIST; after a heartbeat: data.
    let r = br.call(rq::PULL_MESSAGE, &pull_header("Orders", 1, 0, false), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUBSCRIPTION_NOT_EXIST);
    heartbeat(&mut br, "Orders", "TagA").await;
    // Messages are readable once dispatched (asynchronously, as in RocketMQ): wait for it.
    assert!(cluster.broker_state.store.wait_dispatched(Duration::from_secs(5)));
    let r = br.call(rq::PULL_MESSAGE, &pull_header("Orders", 1, 0, false), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
    let h = PullMessageResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap();
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (10, 0, 10));
    let records: Vec<_> = silo_wire::RecordWalker::new(&r.body).collect();
    assert_eq!(records.len(), 5, "only TagA");
    assert_eq!(records[1].body, b"body-2");
    assert_eq!(records[1].properties.get("KEYS"), Some("k2"));
    assert_eq!(records[1].properties.get("CLUSTER"), Some("DefaultCluster"));

    // Caught up: PULL_NOT_FOUND; with SUSPEND the pull is held until a message arrives.
    let r = br.call(rq::PULL_MESSAGE, &pull_header("Orders", 1, 10, false), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::PULL_NOT_FOUND);
    let mut consumer = Client::connect(cluster.broker).await;
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let r = consumer.call(rq::PULL_MESSAGE, &pull_header("Orders", 1, 10, true), &[], SerializeType::Json).await;
        (r, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let props = "TAGS\u{1}TagA\u{2}";
    br.call(rq::SEND_MESSAGE_V2, &send_header("Orders", 1, props), b"late", SerializeType::Json).await;
    let (r, waited) = waiting.await.unwrap();
    assert_eq!(r.header.code, rs::SUCCESS);
    assert!(waited < Duration::from_millis(1900), "woken by the message, not the timeout: {waited:?}");
    assert_eq!(silo_wire::RecordWalker::new(&r.body).next().unwrap().body, b"late");

    // Offsets.
    let commit = UpdateConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "Orders".into(),
        queue_id: 1,
        commit_offset: 7,
        broker_name: None,
    };
    assert_eq!(br.call(rq::UPDATE_CONSUMER_OFFSET, &commit, &[], SerializeType::Json).await.header.code, rs::SUCCESS);
    let q = QueryConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "Orders".into(),
        queue_id: 1,
        set_zero_if_not_found: None,
        broker_name: None,
    };
    let r = br.call(rq::QUERY_CONSUMER_OFFSET, &q, &[], SerializeType::Json).await;
    assert_eq!(OffsetResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap().offset, 7);
    // A group without an offset: a young queue is read from 0; an empty one has no offset
    // (QUERY_NOT_FOUND), as the Java broker answers.
    let fresh = QueryConsumerOffsetRequestHeader { consumer_group: "cg-new".into(), ..q.clone() };
    let r = br.call(rq::QUERY_CONSUMER_OFFSET, &fresh, &[], SerializeType::Json).await;
    assert_eq!(OffsetResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap().offset, 0);
    let empty = QueryConsumerOffsetRequestHeader { topic: "%RETRY%cg-new".into(), queue_id: 0, ..fresh.clone() };
    let r = br.call(rq::QUERY_CONSUMER_OFFSET, &empty, &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::QUERY_NOT_FOUND, "{:?}", r.header.remark);
    let m = GetMaxOffsetRequestHeader { topic: "Orders".into(), queue_id: 1, committed: None, broker_name: None };
    let r = br.call(rq::GET_MAX_OFFSET, &m, &[], SerializeType::Json).await;
    assert_eq!(OffsetResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap().offset, 11);
    // View by the msgId the send returned.
    let (_, offset) = silo_wire::msgid::parse_offset_msg_id(&ids[3]).unwrap();
    let r = br
        .call(rq::VIEW_MESSAGE_BY_ID, &ViewMessageRequestHeader { topic: None, offset }, &[], SerializeType::Json)
        .await;
    assert_eq!(silo_wire::RecordWalker::new(&r.body).next().unwrap().body, b"body-3");
    drop(cluster.broker_state);
}

/// What `mqadmin queryMsgById` and `consumerConnection` ask: who consumes a topic (300), and a
/// group's online clients (203), or CONSUMER_NOT_ONLINE (206).
#[tokio::test]
async fn admin_reads_list_the_groups_of_a_topic_and_their_connections() {
    let cluster = start().await;
    let mut br = Client::connect(cluster.broker).await;
    let r = br.call(rq::SEND_MESSAGE_V2, &send_header("Orders", 0, "KEYS\u{1}k\u{2}"), b"x", SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
    let group = |g: &str| ConsumerGroupRequestHeader { consumer_group: g.into() };
    let r = br.call(203, &group("cg"), &[], SerializeType::Json).await;
    assert_eq!((r.header.code, r.header.remark.as_deref()), (206, Some("the consumer group[cg] not online")));

    heartbeat(&mut br, "Orders", "TagA").await;
    // QUERY_TOPIC_CONSUME_BY_WHO's header is just `topic`.
    let by_who = GetRouteInfoRequestHeader { topic: "Orders".into(), accept_standard_json_only: None };
    let r = br.call(300, &by_who, &[], SerializeType::Json).await;
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!((r.header.code, &v), (rs::SUCCESS, &serde_json::json!({"groupList": ["cg"]})));
    let r = br.call(203, &group("cg"), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let conn = &v["connectionSet"][0];
    assert_eq!((conn["clientId"].as_str(), conn["language"].as_str()), (Some("127.0.0.1@test"), Some("RUST")));
    assert_eq!(conn["version"].as_i64(), Some(i64::from(silo_wire::header::SILO_VERSION)));
    assert_eq!(conn["clientAddr"].as_str().unwrap().split(':').next(), Some("127.0.0.1"));
    assert_eq!(v["subscriptionTable"]["Orders"]["subString"].as_str(), Some("TagA"));
    assert_eq!(
        (v["consumeType"].as_str(), v["messageModel"].as_str()),
        (Some("CONSUME_PASSIVELY"), Some("CLUSTERING"))
    );

    // Gone from the group, but its committed offset still ties it to the topic.
    let commit = UpdateConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "Orders".into(),
        queue_id: 0,
        commit_offset: 1,
        broker_name: None,
    };
    assert_eq!(br.call(rq::UPDATE_CONSUMER_OFFSET, &commit, &[], SerializeType::Json).await.header.code, rs::SUCCESS);
    let bye = UnregisterClientRequestHeader {
        client_id: "127.0.0.1@test".into(),
        producer_group: None,
        consumer_group: Some("cg".into()),
    };
    assert_eq!(br.call(rq::UNREGISTER_CLIENT, &bye, &[], SerializeType::Json).await.header.code, rs::SUCCESS);
    assert_eq!(br.call(203, &group("cg"), &[], SerializeType::Json).await.header.code, 206);
    let v: serde_json::Value =
        serde_json::from_slice(&br.call(300, &by_who, &[], SerializeType::Json).await.body).unwrap();
    assert_eq!(v, serde_json::json!({"groupList": ["cg"]}));
}

#[tokio::test]
async fn bad_input_gets_an_error_or_a_clean_close_and_the_broker_keeps_serving() {
    let cluster = start().await;
    // Unknown request code: REQUEST_CODE_NOT_SUPPORTED, connection stays usable.
    let mut c = Client::connect(cluster.broker).await;
    let r = c.call(9999, &NoHeader, &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::REQUEST_CODE_NOT_SUPPORTED);
    // Missing required header fields: an error, not a dropped connection.
    let r = c.call(rq::SEND_MESSAGE_V2, &NoHeader, b"x", SerializeType::Json).await;
    assert_eq!(r.header.code, rs::INVALID_PARAMETER);
    // Path traversal in a topic name never reaches the file system.
    for bad in ["../x", "a/b", ".."] {
        let r = c.call(rq::SEND_MESSAGE_V2, &send_header(bad, 0, ""), b"x", SerializeType::Json).await;
        assert_eq!(r.header.code, rs::INVALID_PARAMETER, "{bad}");
    }
    // A batch body that lies about its sizes.
    let mut h = send_header("Batchy", 0, "");
    h.batch = Some(true);
    let lying = [0u8, 0, 0, 100, 0, 0, 0, 0];
    let r = c.call(rq::SEND_BATCH_MESSAGE, &h, &lying, SerializeType::Json).await;
    assert_eq!(r.header.code, rs::MESSAGE_ILLEGAL);
    // A huge declared frame length: the connection is closed, nothing allocated for it.
    let mut bad = Client::connect(cluster.broker).await;
    bad.send_raw(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]).await;
    // At most an error response, then end of stream (next_frame returns None on close).
    while let Some(f) = bad.next_frame().await {
        assert_eq!(f.header.code, rs::SYSTEM_ERROR);
    }
    // Garbage JSON header.
    let mut bad = Client::connect(cluster.broker).await;
    bad.send_raw(&[0, 0, 0, 9, 0, 0, 0, 5, b'{', b'x', b'x', b'x', b'x']).await;
    while bad.next_frame().await.is_some() {}
    // The first connection still works.
    let r = c.call(rq::SEND_MESSAGE_V2, &send_header("StillUp", 0, ""), b"ok", SerializeType::RocketMq).await;
    assert_eq!(r.header.code, rs::SUCCESS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_connections_are_served() {
    let cluster = start().await;
    let mut clients = Vec::new();
    for _ in 0..1000 {
        clients.push(Client::connect(cluster.broker).await);
    }
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            tokio::spawn(async move {
                let h = GetMaxOffsetRequestHeader {
                    topic: "Any".into(),
                    queue_id: (i % 4) as i32,
                    committed: None,
                    broker_name: None,
                };
                c.call(rq::GET_MAX_OFFSET, &h, &[], SerializeType::Json).await.header.code
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        if tokio::time::timeout(Duration::from_secs(30), t).await.unwrap().unwrap() == rs::SUCCESS {
            ok += 1;
        }
    }
    assert_eq!(ok, 1000);
}

/// The cluster's broker served on a listener of its own with the idle limit `idle`; it serves
/// while the returned sender lives.
async fn serve_with_idle(cluster: &Cluster, idle: Duration) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(serve(
        listener,
        Role::Broker(cluster.broker_state.clone()),
        silo_broker::tls::Transport::plaintext(),
        idle,
        rx,
    ));
    (addr, tx)
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let cluster = start().await;
    let (addr, _running) = serve_with_idle(&cluster, Duration::from_millis(300)).await;
    let mut c = Client::connect(addr).await;
    let started = std::time::Instant::now();
    assert!(c.next_frame().await.is_none(), "closed without a frame");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(250) && waited < Duration::from_secs(5), "{waited:?}");
}

/// The idle limit counts from the last request, not from the connection's start: a client that
/// keeps talking for several idle times stays connected, and is closed one idle time after it
/// falls silent (the connection's one timer is re-armed, not replaced per read).
#[tokio::test]
async fn a_connection_in_use_stays_open_and_closes_an_idle_time_after_its_last_request() {
    let cluster = start().await;
    let idle = Duration::from_millis(400);
    let (addr, _running) = serve_with_idle(&cluster, idle).await;
    let mut c = Client::connect(addr).await;
    let talking = std::time::Instant::now();
    let mut last_request = talking;
    while talking.elapsed() < idle * 4 {
        last_request = std::time::Instant::now();
        let r = c.call(rq::GET_BROKER_RUNTIME_INFO, &NoHeader, b"", SerializeType::Json).await;
        assert_eq!(r.header.code, rs::SUCCESS, "answered {:?} after {:?}", r.header.remark, talking.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(c.next_frame().await.is_none(), "closed without a frame");
    let waited = last_request.elapsed();
    assert!(waited >= idle && waited < Duration::from_secs(5), "closed {waited:?} after the last request");
}

/// Pull of `topic` queue 0 from 0 with an SQL92 subscription in the header.
fn sql_pull(topic: &str, sql: &str) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        subscription: Some(sql.into()),
        expression_type: Some("SQL92".into()),
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        ..pull_header(topic, 0, 0, false)
    }
}

fn records(body: &[u8]) -> Vec<String> {
    silo_wire::record::RecordWalker::new(body).map(|rec| String::from_utf8(rec.body.to_vec()).unwrap()).collect()
}

#[tokio::test]
async fn bad_selectors_transaction_ends_and_timer_properties_get_clear_errors_and_nothing_acknowledged_is_lost() {
    let cluster = start().await;
    let mut c = Client::connect(cluster.broker).await;
    for i in 0..10 {
        let h = send_header("Guarded", 0, &format!("a\u{1}{i}\u{2}"));
        let r = c.call(rq::SEND_MESSAGE_V2, &h, format!("m{i}").as_bytes(), SerializeType::Json).await;
        assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    }

    // Selectors: too long, too deep, not the language.
    let long = format!("a = '{}'", "x".repeat(100 * 1024));
    let deep = format!("{}a = 1{}", "(".repeat(100_000), ")".repeat(100_000));
    for (sql, what) in [(long.as_str(), "64"), (deep.as_str(), "deep"), ("a ~ 1", "~"), ("a IN (1, 2)", "IN")] {
        let r = c.call(rq::PULL_MESSAGE, &sql_pull("Guarded", sql), &[], SerializeType::Json).await;
        assert_eq!(r.header.code, rs::SUBSCRIPTION_PARSE_FAILED, "{}", &sql[..sql.len().min(40)]);
        let remark = r.header.remark.unwrap_or_default();
        assert!(remark.contains("offset") || remark.contains(what), "no position in {remark:?}");
        assert!(remark.len() < 1024, "the remark echoes a huge selector: {} bytes", remark.len());
    }
    // Acknowledged sends reach the consume queue a moment later (the dispatcher's round):
    // pull until they have, within a bound.
    let dispatched = std::time::Instant::now() + Duration::from_secs(5);
    let r = loop {
        let r = c.call(rq::PULL_MESSAGE, &sql_pull("Guarded", "a > 6 OR a = 2"), &[], SerializeType::Json).await;
        if r.header.code == rs::SUCCESS || std::time::Instant::now() > dispatched {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(r.header.code, rs::SUCCESS);
    assert_eq!(records(&r.body), ["m2", "m7", "m8", "m9"]);

    // END_TRANSACTION naming records that are not half messages, or nothing at all.
    for offset in [0i64, 17, 1 << 40] {
        let h = EndTransactionRequestHeader {
            producer_group: "pg".into(),
            tran_state_table_offset: 0,
            commit_log_offset: offset,
            commit_or_rollback: 8,
            ..Default::default()
        };
        let r = c.call(rq::END_TRANSACTION, &h, &[], SerializeType::Json).await;
        assert_eq!(r.header.code, rs::SYSTEM_ERROR, "offset {offset}");
        assert!(r.header.remark.as_deref().is_some_and(|m| m.contains(&offset.to_string()) || m.contains("half")));
    }
    let bad_outcome = EndTransactionRequestHeader { commit_or_rollback: 5, ..Default::default() };
    let r = c.call(rq::END_TRANSACTION, &bad_outcome, &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::INVALID_PARAMETER);

    // Timer properties that are not numbers, or too far away.
    for props in
        ["TIMER_DELAY_SEC\u{1}soon\u{2}", "TIMER_DELIVER_MS\u{1}99999999999999999\u{2}", "TIMER_DELAY_MS\u{1}-\u{2}"]
    {
        let r = c.call(rq::SEND_MESSAGE_V2, &send_header("Guarded", 0, props), b"timer", SerializeType::Json).await;
        assert_eq!(r.header.code, rs::MESSAGE_ILLEGAL, "{props:?}: {:?}", r.header.remark);
    }

    // Everything acknowledged is there, nothing refused is, and the broker still serves.
    let all = PullMessageRequestHeader { expression_type: Some("TAG".into()), ..sql_pull("Guarded", "*") };
    let r = c.call(rq::PULL_MESSAGE, &all, &[], SerializeType::Json).await;
    assert_eq!(records(&r.body), (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let r = c.call(rq::SEND_MESSAGE_V2, &send_header("Guarded", 0, ""), b"after", SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
}

/// Raw header fields, as admin tools send them.
struct Fields(Vec<(&'static str, String)>);
impl CustomHeader for Fields {
    fn write_ext_fields(&self, ext: &mut silo_wire::ExtFields) {
        for (k, v) in &self.0 {
            ext.insert(*k, v.as_str());
        }
    }
    fn read_ext_fields(_: &silo_wire::ExtFields) -> Result<Self, HeaderError> {
        Ok(Self(Vec::new()))
    }
}

fn update_topic(topic: &str, attributes: &str) -> Fields {
    Fields(vec![
        ("topic", topic.to_owned()),
        ("readQueueNums", "4".into()),
        ("writeQueueNums", "4".into()),
        ("perm", "6".into()),
        ("attributes", attributes.to_owned()),
    ])
}

async fn attributes(c: &mut Client) -> serde_json::Value {
    let h = Fields(vec![("topic", "Typed".into())]);
    let r = c.call(rq::GET_TOPIC_CONFIG, &h, &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["attributes"].clone()
}

#[tokio::test]
async fn topic_attributes_are_kept_changed_and_answered_as_apache_does() {
    let cluster = start().await;
    let mut c = Client::connect(cluster.broker).await;
    let r = c
        .call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", "+message.type=FIFO"), &[], SerializeType::Json)
        .await;
    assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    assert_eq!(attributes(&mut c).await, serde_json::json!({"message.type": "FIFO"}));
    // An update without attributes keeps them; a change and a removal apply.
    c.call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", ""), &[], SerializeType::Json).await;
    assert_eq!(attributes(&mut c).await, serde_json::json!({"message.type": "FIFO"}));
    c.call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", "+message.type=TRANSACTION"), &[], SerializeType::Json)
        .await;
    assert_eq!(attributes(&mut c).await, serde_json::json!({"message.type": "TRANSACTION"}));
    // Refused with Java's codes and reasons, leaving the topic as it was.
    for (attrs, code, why) in [
        ("+message.type=MIXED", rs::INVALID_PARAMETER, "MIXED"),
        ("+message.type=LIFO", rs::SYSTEM_ERROR, "not in set"),
        ("+queue.type=BatchCQ", rs::SYSTEM_ERROR, "unchangeable"),
        ("+color=red", rs::SYSTEM_ERROR, "unsupported key"),
        ("message.type=FIFO", rs::SYSTEM_ERROR, "format is wrong"),
    ] {
        let r = c.call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", attrs), &[], SerializeType::Json).await;
        assert_eq!(r.header.code, code, "{attrs}: {:?}", r.header.remark);
        assert!(r.header.remark.as_deref().is_some_and(|m| m.contains(why)), "{attrs}: {:?}", r.header.remark);
    }
    assert_eq!(attributes(&mut c).await, serde_json::json!({"message.type": "TRANSACTION"}));
    c.call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", "-message.type"), &[], SerializeType::Json).await;
    assert_eq!(attributes(&mut c).await, serde_json::json!({}));
    // Kept in topics.json, as Java keeps them.
    c.call(rq::UPDATE_AND_CREATE_TOPIC, &update_topic("Typed", "+message.type=DELAY"), &[], SerializeType::Json).await;
    let file = std::fs::read_to_string(cluster._dir.path().join("config/topics.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&file).unwrap();
    assert_eq!(v["topicConfigTable"]["Typed"]["attributes"], serde_json::json!({"message.type": "DELAY"}));
}

async fn group_config(c: &mut Client, group: &str) -> serde_json::Value {
    let r = c
        .call(rq::GET_SUBSCRIPTIONGROUP_CONFIG, &Fields(vec![("group", group.into())]), &[], SerializeType::Json)
        .await;
    assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    serde_json::from_slice(&r.body).unwrap()
}

#[tokio::test]
async fn subscription_groups_are_created_answered_persisted_and_deleted_as_apache_does() {
    let cluster = start().await;
    let mut c = Client::connect(cluster.broker).await;
    let body =
        br#"{"groupName":"billing","retryMaxTimes":3,"consumeMessageOrderly":true,"consumeBroadcastEnable":false}"#;
    let r = c.call(rq::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &NoHeader, body, SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    let g = group_config(&mut c, "billing").await;
    assert_eq!((g["retryMaxTimes"].as_i64(), g["consumeMessageOrderly"].as_bool()), (Some(3), Some(true)));
    assert_eq!((g["consumeEnable"].as_bool(), g["retryQueueNums"].as_i64()), (Some(true), Some(1)), "defaults: {g}");
    assert_eq!(g["groupRetryPolicy"], serde_json::json!({"type": "CUSTOMIZED"}));
    // A group nobody created gets Java's defaults on first use (autoCreateSubscriptionGroup).
    assert_eq!(group_config(&mut c, "shipping").await["retryMaxTimes"].as_i64(), Some(16));
    let file = std::fs::read_to_string(cluster._dir.path().join("config/subscriptionGroup.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&file).unwrap();
    assert_eq!(v["subscriptionGroupTable"]["billing"]["retryMaxTimes"].as_i64(), Some(3));
    assert!(v["subscriptionGroupTable"]["TOOLS_CONSUMER"].is_object() && v["forbiddenTable"].is_object());
    let r = c.call(rq::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &NoHeader, &[], SerializeType::Json).await;
    let all: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(all["subscriptionGroupTable"]["shipping"].is_object());

    let r = c
        .call(rq::DELETE_SUBSCRIPTIONGROUP, &Fields(vec![("groupName", "billing".into())]), &[], SerializeType::Json)
        .await;
    assert_eq!(r.header.code, rs::SUCCESS);
    assert_eq!(
        group_config(&mut c, "billing").await["retryMaxTimes"].as_i64(),
        Some(16),
        "the deleted settings came back"
    );
    let bad = br#"{"groupName":"no spaces allowed"}"#;
    let r = c.call(rq::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &NoHeader, bad, SerializeType::Json).await;
    assert_eq!(r.header.code, rs::INVALID_PARAMETER);
}

fn pop_header(topic: &str, max: i32, poll_ms: i64, born: Option<i64>) -> PopMessageRequestHeader {
    PopMessageRequestHeader {
        consumer_group: "popper".into(),
        topic: topic.into(),
        queue_id: -1,
        max_msg_nums: max,
        invisible_time: 30_000,
        poll_time: poll_ms,
        born_time: born,
        init_mode: 0,
        exp_type: Some("TAG".into()),
        exp: Some("*".into()),
        order: Some(false),
        attempt_id: None,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// A pop answers with Java's codes and header; a parked pop is answered as soon as a message
/// arrives; acks with bad handles get Java's codes and acknowledge nothing.
#[tokio::test]
async fn pops_park_until_a_message_arrives_and_bad_acks_get_javas_codes() {
    let cluster = start().await;
    let mut c = Client::connect(cluster.broker).await;
    let r = c.call(rq::SEND_MESSAGE_V2, &send_header("Popped", 0, ""), b"first", SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);

    let r = c.call(rq::POP_MESSAGE, &pop_header("Popped", 33, 0, None), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::INVALID_PARAMETER, "{:?}", r.header.remark);
    let r = c.call(rq::POP_MESSAGE, &pop_header("Nowhere", 1, 0, None), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::TOPIC_NOT_EXIST);
    let late = pop_header("Popped", 1, 1000, Some(now_ms() - 10_000));
    let r = c.call(rq::POP_MESSAGE, &late, &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::POLLING_TIMEOUT);
    assert!(r.header.remark.as_deref().is_some_and(|m| m.contains("timeout too much")));

    // (A send is answered once stored; its message reaches the queue an instant later: a pop
    // that may wait a little finds it however fast it comes.)
    let r = c.call(rq::POP_MESSAGE, &pop_header("Popped", 32, 5_000, Some(now_ms())), &[], SerializeType::Json).await;
    assert_eq!((r.header.code, r.header.remark.as_deref()), (rs::SUCCESS, Some("FOUND")));
    assert_eq!(records(&r.body), ["first"]);
    let h = PopMessageResponseHeader::read_ext_fields(&r.header.ext_fields).unwrap();
    assert_eq!((h.invisible_time, h.rest_num), (30_000, 0));
    assert_eq!(h.start_offset_info.as_deref(), Some("0 0 0"));
    assert_eq!(h.msg_offset_info.as_deref(), Some("0 0 0"));
    let handle = format!("0 {} 30000 {} 0 broker-a 0 0", h.pop_time, h.revive_qid);

    // Nothing left: POLLING_TIMEOUT with the header, never PULL_NOT_FOUND.
    let r = c.call(rq::POP_MESSAGE, &pop_header("Popped", 32, 0, None), &[], SerializeType::Json).await;
    assert_eq!((r.header.code, r.header.remark.as_deref()), (rs::POLLING_TIMEOUT, Some("NO_MESSAGE_IN_QUEUE")));
    assert!(r.header.ext_fields.get("popTime").is_some());

    // A parked pop is answered when a message arrives, well before its poll time.
    let mut parked = Client::connect(cluster.broker).await;
    let started = std::time::Instant::now();
    let wait = tokio::spawn(async move {
        let h = pop_header("Popped", 32, 20_000, Some(now_ms()));
        parked.call(rq::POP_MESSAGE, &h, &[], SerializeType::Json).await
    });
    // POLLING_INFO counts it once it is parked.
    let info = PollingInfoRequestHeader { consumer_group: "popper".into(), topic: "Popped".into(), queue_id: -1 };
    let parked_by = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = c.call(rq::POLLING_INFO, &info, &[], SerializeType::Json).await;
        assert_eq!(r.header.code, rs::SUCCESS);
        if r.header.ext_fields.get("pollingNum") == Some("1") {
            break;
        }
        assert!(std::time::Instant::now() < parked_by, "the pop was never parked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = c.call(rq::SEND_MESSAGE_V2, &send_header("Popped", 1, ""), b"second", SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS);
    let r = tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap().unwrap();
    assert_eq!(r.header.code, rs::SUCCESS);
    assert_eq!(records(&r.body), ["second"]);
    assert!(started.elapsed() < Duration::from_secs(10), "the parked pop waited its whole poll time");

    let ack = |extra: &str, queue_id: i32, offset: i64| AckMessageRequestHeader {
        consumer_group: "popper".into(),
        topic: "Popped".into(),
        queue_id,
        extra_info: extra.into(),
        offset,
    };
    let r = c.call(rq::ACK_MESSAGE, &ack("not a handle", 0, 0), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SYSTEM_ERROR);
    let r = c.call(rq::ACK_MESSAGE, &ack(&handle, 9, 0), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::MESSAGE_ILLEGAL);
    let r = c.call(rq::ACK_MESSAGE, &ack(&handle, 0, 5), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::NO_MESSAGE);
    assert!(r.header.remark.as_deref().is_some_and(|m| m.starts_with("offset is illegal")));
    let forged = format!("0 {} 30000 0 0 broker-a 0 0", h.pop_time + 1);
    let r = c.call(rq::ACK_MESSAGE, &ack(&forged, 0, 0), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::NO_MESSAGE, "a handle of no pop acknowledges nothing");
    assert_eq!(cluster.broker_state.pop.in_flight().1, 2, "both popped messages are still held");
    let r = c.call(rq::ACK_MESSAGE, &ack(&handle, 0, 0), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS, "{:?}", r.header.remark);
    let r = c.call(rq::ACK_MESSAGE, &ack(&handle, 0, 0), &[], SerializeType::Json).await;
    assert_eq!(r.header.code, rs::SUCCESS, "a repeated ack");
    assert_eq!(cluster.broker_state.pop.in_flight().1, 1);

    // No pop is parked now, and the one message left is invisible: nothing to take.
    let r = c.call(rq::POLLING_INFO, &info, &[], SerializeType::Json).await;
    assert_eq!((r.header.code, r.header.ext_fields.get("pollingNum")), (rs::SUCCESS, Some("0")));
    let n = NotificationRequestHeader {
        consumer_group: "popper".into(),
        topic: "Popped".into(),
        queue_id: -1,
        poll_time: 0,
        born_time: None,
        order: None,
        attempt_id: None,
    };
    let r = c.call(rq::NOTIFICATION, &n, &[], SerializeType::Json).await;
    assert_eq!((r.header.code, r.header.ext_fields.get("hasMsg")), (rs::SUCCESS, Some("false")));
}
