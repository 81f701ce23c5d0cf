//! Untrusted input on the gRPC port gets the answer Apache's proxy gives it, and the broker goes
//! on serving with nothing acknowledged lost: malformed protobuf, a request over the inbound
//! limit, a body over `maxMessageSize`, no client id, a Telemetry stream that never sends its
//! settings, one client id on two connections, a thousand concurrent streams from one client,
//! and a receive whose deadline is shorter than the long-poll floor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use silo_broker::topics::topic_config;
use silo_grpc::proto::{self, Code, method};

const TOPIC: &str = "BadInput";
const GROUP: &str = "bad-input-group";

fn telemetry_settings(client_type: proto::ClientType, group: Option<&str>) -> proto::TelemetryCommand {
    use proto::settings::PubSub;
    let pub_sub = match group {
        Some(g) => PubSub::Subscription(proto::Subscription {
            group: resource(g),
            subscriptions: vec![],
            ..Default::default()
        }),
        None => PubSub::Publishing(proto::Publishing { topics: vec![resource(TOPIC).unwrap()], ..Default::default() }),
    };
    proto::TelemetryCommand {
        status: None,
        command: Some(proto::telemetry_command::Command::Settings(Box::new(proto::Settings {
            client_type: Some(client_type as i32),
            pub_sub: Some(pub_sub),
            ..Default::default()
        }))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_are_refused_and_nothing_acknowledged_is_lost() {
    let e = endpoint(&[("grpcMaxInboundMessageSize", "1048576"), ("maxMessageSize", "65536")]).await;
    e.broker.topics.put(topic_config(TOPIC, 2, 2, 6)).unwrap();
    let meta = Meta::client("bad-input-1");
    let mut c = Conn::open(e.grpc).await;
    assert_eq!(send(&mut c, &meta, TOPIC, "kept-1", b"kept").await, code(Code::Ok));

    // Bytes that are no protobuf: the call fails, as grpc-java fails it (INTERNAL).
    let r = c.call_raw(method::SEND_MESSAGE, &meta, frame(&[0xff; 12])).await;
    assert_eq!(r.grpc_status, 13, "{r:?}");
    // A frame longer than grpcMaxInboundMessageSize: RESOURCE_EXHAUSTED, before it is read.
    let big = vec![b'x'; 1_200_000];
    let m = proto::SendMessageRequest { messages: vec![message(TOPIC, "big", Box::leak(big.into_boxed_slice()))] };
    let r = c.call(method::SEND_MESSAGE, &meta, &m).await;
    assert_eq!(r.grpc_status, 8, "{r:?}");
    // A frame that says it is longer than what follows, then ends.
    let mut short = frame(&[1, 2, 3]).to_vec();
    short[4] = 200;
    let r = c.call_raw(method::SEND_MESSAGE, &meta, Bytes::from(short)).await;
    assert_ne!(r.grpc_status, 0, "{r:?}");
    // A body over maxMessageSize: the proxy's code and words in the answer's status.
    let body = vec![b'y'; 70_000];
    let m = proto::SendMessageRequest { messages: vec![message(TOPIC, "too-big", Box::leak(body.into_boxed_slice()))] };
    let resp: proto::SendMessageResponse = c.call(method::SEND_MESSAGE, &meta, &m).await.one();
    let s = resp.status.unwrap();
    assert_eq!(
        (s.code, s.message.as_str()),
        (code(Code::MessageBodyTooLarge), "message body cannot exceed the max 65536")
    );
    assert!(resp.entries.is_empty());
    // A message without an id, and one to a topic the broker does not have.
    let mut no_id = message(TOPIC, "", b"x");
    no_id.system_properties.as_mut().unwrap().message_id.clear();
    let resp: proto::SendMessageResponse =
        c.call(method::SEND_MESSAGE, &meta, &proto::SendMessageRequest { messages: vec![no_id] }).await.one();
    assert_eq!(resp.status.unwrap().code, code(Code::IllegalMessageId));
    let resp: proto::SendMessageResponse = c
        .call(
            method::SEND_MESSAGE,
            &meta,
            &proto::SendMessageRequest { messages: vec![message("NoSuchTopic", "n", b"x")] },
        )
        .await
        .one();
    assert_eq!(resp.status.unwrap().code, code(Code::MessagePropertyConflictWithType));
    // A method the proxy does not serve.
    let r = c.call(method::PULL_MESSAGE, &meta, &proto::PullMessageRequest::default()).await;
    assert_eq!(r.grpc_status, 12, "UNIMPLEMENTED: {r:?}");

    // The same connection goes on serving, and the message acknowledged before is there, once.
    assert_eq!(send(&mut c, &meta, TOPIC, "kept-2", b"kept2").await, code(Code::Ok));
    // (A receive returns what is dispatched already: the second may come with a second one.)
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while got.len() < 2 && std::time::Instant::now() < deadline {
        got.extend(receive(&mut c, &meta, GROUP, TOPIC, Duration::from_secs(5), false).await.1);
    }
    let mut ids: Vec<String> = got.iter().map(|m| m.system_properties.as_ref().unwrap().message_id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["kept-1", "kept-2"]);
    for m in &got {
        assert_eq!(ack(&mut c, &meta, GROUP, TOPIC, m).await, code(Code::Ok));
    }
    // A forged handle acknowledges nothing.
    let mut forged = got[0].clone();
    forged.system_properties.as_mut().unwrap().receipt_handle = Some("1 2 3 4 0 broker-a 0 0 0".into());
    assert_eq!(ack(&mut c, &meta, GROUP, TOPIC, &forged).await, code(Code::InvalidReceiptHandle));
    let mut garbage = got[0].clone();
    garbage.system_properties.as_mut().unwrap().receipt_handle = Some("not a handle".into());
    assert_eq!(ack(&mut c, &meta, GROUP, TOPIC, &garbage).await, code(Code::InvalidReceiptHandle));
    e.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_id_or_settings_is_told_so_and_a_reused_id_keeps_working() {
    let e = endpoint(&[]).await;
    e.broker.topics.put(topic_config(TOPIC, 2, 2, 6)).unwrap();
    let mut c = Conn::open(e.grpc).await;
    // No client id: CLIENT_ID_REQUIRED in the answer (gRPC OK), on every RPC.
    let anonymous = Meta::client("");
    let resp: proto::HeartbeatResponse =
        c.call(method::HEARTBEAT, &anonymous, &proto::HeartbeatRequest::default()).await.one();
    let s = resp.status.unwrap();
    assert_eq!((s.code, s.message.as_str()), (code(Code::ClientIdRequired), "client id cannot be empty"));
    let resp: proto::SendMessageResponse = c
        .call(
            method::SEND_MESSAGE,
            &anonymous,
            &proto::SendMessageRequest { messages: vec![message(TOPIC, "a", b"a")] },
        )
        .await
        .one();
    assert_eq!(resp.status.unwrap().code, code(Code::ClientIdRequired));
    // Telemetry without a client id: one command with that status, then the stream ends.
    let r = c.call(method::TELEMETRY, &anonymous, &telemetry_settings(proto::ClientType::Producer, None)).await;
    let cmds: Vec<proto::TelemetryCommand> = r.decode();
    assert_eq!(r.grpc_status, 0);
    assert_eq!(cmds.len(), 1);
    assert_eq!(cmds[0].status.as_ref().unwrap().code, code(Code::ClientIdRequired));

    // A Telemetry stream that never sends its settings stays open; until settings come, the
    // client is unknown to Heartbeat.
    let silent = Meta::client("silent-client");
    let (_keep_open, _response) = c.open_stream(method::TELEMETRY, &silent).await;
    let resp: proto::HeartbeatResponse =
        c.call(method::HEARTBEAT, &silent, &proto::HeartbeatRequest::default()).await.one();
    let s = resp.status.unwrap();
    assert_eq!(
        (s.code, s.message.as_str()),
        (code(Code::UnrecognizedClientType), "cannot find client settings for this client")
    );
    // Settings with neither publishing nor subscription end the stream with INVALID_ARGUMENT.
    let empty = proto::TelemetryCommand {
        status: None,
        command: Some(proto::telemetry_command::Command::Settings(Box::default())),
    };
    let r = c.call(method::TELEMETRY, &silent, &empty).await;
    assert_eq!(r.grpc_status, 3, "{r:?}");
    assert_eq!(r.grpc_message, "there is no publishing or subscription data in settings");

    // One client id from two connections: both get their settings answered and both send.
    let shared = Meta::client("shared-id");
    let mut other = Conn::open(e.grpc).await;
    for conn in [&mut c, &mut other] {
        let (mut tx, response) = conn.open_stream(method::TELEMETRY, &shared).await;
        tx.send_data(encode(&telemetry_settings(proto::ClientType::Producer, None)), false).unwrap();
        let mut body = response.await.unwrap().into_body();
        let mut buf = bytes::BytesMut::new();
        let f = next_frame(&mut body, &mut buf).await.unwrap();
        let answer = <proto::TelemetryCommand as prost::Message>::decode(f).unwrap();
        assert_eq!(answer.status.unwrap().code, code(Code::Ok));
        let Some(proto::telemetry_command::Command::Settings(s)) = answer.command else { panic!("no settings") };
        let Some(proto::settings::PubSub::Publishing(p)) = s.pub_sub else { panic!("no publishing") };
        assert_eq!(p.max_body_size, 4 * 1024 * 1024);
        std::mem::forget((tx, body));
        assert_eq!(send(conn, &shared, TOPIC, "shared", b"s").await, code(Code::Ok));
        let resp: proto::HeartbeatResponse =
            conn.call(method::HEARTBEAT, &shared, &proto::HeartbeatRequest::default()).await.one();
        assert_eq!(resp.status.unwrap().code, code(Code::Ok));
    }
    e.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_long_polls_from_one_client_are_all_answered() {
    let e = endpoint(&[]).await;
    e.broker.topics.put(topic_config(TOPIC, 4, 4, 6)).unwrap();
    let meta = Meta::client("many-streams");
    let c = Conn::open(e.grpc).await;
    let polls: Vec<_> = (0..1000)
        .map(|_| {
            let mut c = c.clone();
            let meta = meta.clone();
            tokio::spawn(async move { receive(&mut c, &meta, GROUP, TOPIC, Duration::from_secs(5), false).await })
        })
        .collect();
    // Once every poll is parked, one message: exactly one poll gets it.
    let broker = e.broker.clone();
    until("1000 parked polls", Duration::from_secs(30), || broker.pop.polling_num(TOPIC, GROUP, -1) >= 1000).await;
    let mut sender = Conn::open(e.grpc).await;
    assert_eq!(send(&mut sender, &meta, TOPIC, "the-one", b"1").await, code(Code::Ok));
    let mut got = 0;
    let mut empty = 0;
    for p in polls {
        let (status, messages) = p.await.unwrap();
        if status == code(Code::Ok) {
            got += messages.len();
        } else {
            assert_eq!(status, code(Code::MessageNotFound));
            empty += 1;
        }
    }
    assert_eq!((got, got + empty >= 1000), (1, true));
    e.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_whose_deadline_is_below_the_long_poll_floor_is_refused() {
    let e = endpoint(&[]).await;
    e.broker.topics.put(topic_config(TOPIC, 2, 2, 6)).unwrap();
    let mut c = Conn::open(e.grpc).await;
    let req = receive_request(GROUP, TOPIC, Duration::from_secs(20), false);
    let hurried = Meta { timeout: Some(Duration::from_secs(3)), ..Meta::client("hurried") };
    let (status, _) = frames_of(&c.call(method::RECEIVE_MESSAGE, &hurried, &req).await);
    assert_eq!(status, code(Code::IllegalPollingTime));
    // Clients before 5.0.3 know no ILLEGAL_POLLING_TIME: BAD_REQUEST, as the proxy answers them.
    let old = Meta { version: "5.0.0".into(), ..hurried };
    let (status, _) = frames_of(&c.call(method::RECEIVE_MESSAGE, &old, &req).await);
    assert_eq!(status, code(Code::BadRequest));
    // Nothing was popped meanwhile: a patient receive finds the message sent now.
    let patient = Meta::client("patient");
    assert_eq!(send(&mut c, &patient, TOPIC, "m", b"m").await, code(Code::Ok));
    let (status, got) = receive(&mut c, &patient, GROUP, TOPIC, Duration::from_secs(5), false).await;
    assert_eq!((status, got.len()), (code(Code::Ok), 1));
    e.running.shutdown().await.unwrap();
}
