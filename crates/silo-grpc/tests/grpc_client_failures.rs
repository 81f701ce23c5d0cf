//! A gRPC client that fails loses nothing and duplicates nothing: one whose connection drops in
//! the middle of a long poll does not have a message taken for it (the client that comes back
//! gets it at once, as its first delivery), and a push consumer that crashes holding messages
//! (the broker renews them while it is connected) has them come back once, soon after it is
//! gone; one that terminates cleanly has them back within a second.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use silo_broker::topics::topic_config;
use silo_grpc::proto::{self, Code, method};

const TOPIC: &str = "ClientFailures";
const GROUP: &str = "client-failures-group";

fn id_of(m: &proto::Message) -> &str {
    &m.system_properties.as_ref().unwrap().message_id
}

fn attempt_of(m: &proto::Message) -> i32 {
    m.system_properties.as_ref().unwrap().delivery_attempt.unwrap()
}

/// Opens a push consumer's Telemetry stream with its settings and keeps it open.
async fn push_consumer_session(conn: &mut Conn, meta: &Meta) -> (h2::SendStream<bytes::Bytes>, h2::RecvStream) {
    let settings = proto::TelemetryCommand {
        status: None,
        command: Some(proto::telemetry_command::Command::Settings(Box::new(proto::Settings {
            client_type: Some(proto::ClientType::PushConsumer as i32),
            pub_sub: Some(proto::settings::PubSub::Subscription(proto::Subscription {
                group: resource(GROUP),
                ..Default::default()
            })),
            ..Default::default()
        }))),
    };
    let (mut tx, response) = conn.open_stream(method::TELEMETRY, meta).await;
    tx.send_data(encode(&settings), false).unwrap();
    let mut body = response.await.unwrap().into_body();
    let mut buf = bytes::BytesMut::new();
    let first = next_frame(&mut body, &mut buf).await.unwrap();
    let answer = <proto::TelemetryCommand as prost::Message>::decode(first).unwrap();
    assert_eq!(answer.status.unwrap().code, code(Code::Ok));
    (tx, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_abandoned_by_a_reconnecting_client_takes_no_message() {
    let e = endpoint(&[]).await;
    e.broker.topics.put(topic_config(TOPIC, 2, 2, 6)).unwrap();
    let meta = Meta::client("reconnecting");
    let first = Conn::open(e.grpc).await;
    let mut polling = first.clone();
    let m = meta.clone();
    let abandoned =
        tokio::spawn(async move { receive(&mut polling, &m, GROUP, TOPIC, Duration::from_secs(20), false).await });
    let broker = e.broker.clone();
    until("the long poll parks", Duration::from_secs(10), || broker.pop.polling_num(TOPIC, GROUP, -1) == 1).await;
    // The network fails: the connection is gone in the middle of the poll.
    abandoned.abort();
    first.kill();
    until("the broker lets the poll go", Duration::from_secs(10), || broker.pop.polling_num(TOPIC, GROUP, -1) == 0)
        .await;

    // The client reconnects; the message sent meanwhile is its, at once, as a first delivery.
    let mut again = Conn::open(e.grpc).await;
    assert_eq!(send(&mut again, &meta, TOPIC, "after-reconnect", b"r").await, code(Code::Ok));
    let started = Instant::now();
    let (status, got) = receive(&mut again, &meta, GROUP, TOPIC, Duration::from_secs(20), false).await;
    assert_eq!(status, code(Code::Ok));
    assert_eq!(got.iter().map(id_of).collect::<Vec<_>>(), ["after-reconnect"]);
    assert_eq!(attempt_of(&got[0]), 1);
    assert!(started.elapsed() < Duration::from_secs(5), "not held back: {:?}", started.elapsed());
    assert_eq!(ack(&mut again, &meta, GROUP, TOPIC, &got[0]).await, code(Code::Ok));
    e.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_of_a_crashed_push_consumer_come_back_once_and_a_clean_exit_gives_them_back_at_once() {
    // A 2 s invisible time renewed from 1 s before it runs out, and 500 ms of grace for a
    // client whose Telemetry stream is gone: the same flow as the defaults, faster.
    let e = endpoint(&[
        ("defaultInvisibleTimeMills", "2000"),
        ("renewAheadTimeMillis", "1000"),
        ("grpcClientGraceMillis", "500"),
    ])
    .await;
    e.broker.topics.put(topic_config(TOPIC, 1, 1, 6)).unwrap();
    let meta = Meta::client("push-consumer-1");
    let mut conn = Conn::open(e.grpc).await;
    let session = push_consumer_session(&mut conn, &meta).await;
    for id in ["held-1", "held-2"] {
        assert_eq!(send(&mut conn, &meta, TOPIC, id, b"h").await, code(Code::Ok));
    }
    // (A receive returns what is dispatched already: the second may come with a second one.)
    let mut held = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while held.len() < 2 && Instant::now() < deadline {
        held.extend(receive(&mut conn, &meta, GROUP, TOPIC, Duration::from_secs(5), true).await.1);
    }
    assert_eq!(held.len(), 2, "{:?}", held.iter().map(id_of).collect::<Vec<_>>());

    // While the consumer is connected its messages stay its own, well past the 2 s.
    let mut other = Conn::open(e.grpc).await;
    let watcher = Meta::client("another-consumer");
    let (status, stolen) = receive(&mut other, &watcher, GROUP, TOPIC, Duration::from_secs(6), false).await;
    assert_eq!((status, stolen.len()), (code(Code::MessageNotFound), 0), "renewed, not redelivered");
    // The handle the consumer got at first still acknowledges, after the renewals.
    assert_eq!(ack(&mut conn, &meta, GROUP, TOPIC, &held[0]).await, code(Code::Ok));

    // It crashes holding the other: no goodbye, the connection just goes.
    drop(session);
    conn.kill();
    let crashed_at = Instant::now();
    let (status, back) = receive(&mut other, &watcher, GROUP, TOPIC, Duration::from_secs(20), false).await;
    assert_eq!(status, code(Code::Ok));
    assert_eq!(back.iter().map(id_of).collect::<Vec<_>>(), ["held-2"], "the unacknowledged one, and only it");
    assert_eq!(attempt_of(&back[0]), 2);
    assert!(crashed_at.elapsed() < Duration::from_secs(15), "back within its renewed invisible time");
    assert_eq!(ack(&mut other, &watcher, GROUP, TOPIC, &back[0]).await, code(Code::Ok));
    let (status, _) = receive(&mut other, &watcher, GROUP, TOPIC, Duration::from_secs(5), false).await;
    assert_eq!(status, code(Code::MessageNotFound), "once");

    // A consumer that says goodbye: what it held is visible about a second later.
    let leaving = Meta::client("push-consumer-2");
    let mut conn = Conn::open(e.grpc).await;
    let _session = push_consumer_session(&mut conn, &leaving).await;
    assert_eq!(send(&mut conn, &leaving, TOPIC, "held-3", b"h").await, code(Code::Ok));
    let (_, held) = receive(&mut conn, &leaving, GROUP, TOPIC, Duration::from_secs(5), true).await;
    assert_eq!(held.iter().map(id_of).collect::<Vec<_>>(), ["held-3"]);
    let bye = proto::NotifyClientTerminationRequest { group: resource(GROUP) };
    let resp: proto::NotifyClientTerminationResponse =
        conn.call(method::NOTIFY_CLIENT_TERMINATION, &leaving, &bye).await.one();
    assert_eq!(resp.status.unwrap().code, code(Code::Ok));
    let left_at = Instant::now();
    let (_, back) = receive(&mut other, &watcher, GROUP, TOPIC, Duration::from_secs(10), false).await;
    assert_eq!(back.iter().map(id_of).collect::<Vec<_>>(), ["held-3"]);
    assert!(left_at.elapsed() < Duration::from_secs(4), "given back at once: {:?}", left_at.elapsed());
    e.running.shutdown().await.unwrap();
}
