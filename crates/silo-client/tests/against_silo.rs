//! The client against a real Silo broker and name server on loopback sockets: what a producer
//! sends comes back to a pull consumer byte for byte with its keys, tags and properties, in
//! queue order; offsets commit; the admin requests see what was done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use silo_client::{
    Admin, Client, ClientConfig, ClientError, Message, MessageQueue, Producer, ProducerConfig, PullConsumer,
    PullStatus, ReceivedMessage, SendStatus, Subscription, TopicSpec,
};

struct Silo {
    namesrv: String,
    broker: String,
    _dir: tempfile::TempDir,
    _running: silo_broker::server::Running,
}

async fn start() -> Silo {
    let dir = tempfile::tempdir().unwrap();
    let mut options = silo_broker::server::ServeOptions::local(dir.path());
    options.broker.as_mut().unwrap().mapped_file_size_commit_log = 4 << 20;
    let running = silo_broker::server::start(options).await.unwrap();
    let (namesrv, broker) = (running.namesrv_addr.unwrap(), running.broker_addr.unwrap());
    Silo { namesrv: namesrv.to_string(), broker: broker.to_string(), _dir: dir, _running: running }
}

/// Awaits `check` (bounded): the broker dispatches to consume queues just after it answers a
/// send, as Apache RocketMQ does.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn client(silo: &Silo) -> Client {
    Client::new(ClientConfig::new(&silo.namesrv))
}

/// Pulls every queue of `topic` from offset 0 until `want` messages arrived (bounded).
async fn pull_all(consumer: &PullConsumer, topic: &str, sub: &Subscription, want: usize) -> Vec<ReceivedMessage> {
    let queues = consumer.queues(topic).await.unwrap();
    let mut next: BTreeMap<MessageQueue, i64> = queues.into_iter().map(|q| (q, 0)).collect();
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while got.len() < want {
        assert!(tokio::time::Instant::now() < deadline, "only {} of {want} messages arrived", got.len());
        for (mq, offset) in &mut next {
            let r = consumer.pull(mq, *offset, 32, sub, Some(Duration::from_millis(100))).await.unwrap();
            *offset = r.next_begin_offset;
            got.extend(r.messages);
        }
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sent_messages_come_back_with_everything_in_queue_order() {
    let silo = start().await;
    let producer = Producer::new(client(&silo), ProducerConfig::default());
    let topic = "ClientRoundTrip";
    let mut sent = BTreeMap::new();
    for i in 0..40 {
        let msg = Message::new(format!("body-{i}"))
            .with_tags(if i % 2 == 0 { "TagA" } else { "TagB" })
            .with_key(format!("key-{i}"))
            .with_property("seq", i.to_string());
        let r = producer.send(topic, &msg).await.unwrap();
        assert_eq!(r.status, SendStatus::SendOk);
        assert_eq!(r.msg_id.len(), 32);
        sent.insert(r.msg_id.clone(), (i, r));
    }
    // Round robin over the 4 auto-created queues.
    let per_queue = sent.values().fold(BTreeMap::new(), |mut m, (_, r)| {
        *m.entry(r.queue.queue_id).or_insert(0) += 1;
        m
    });
    assert_eq!(per_queue.values().copied().collect::<Vec<_>>(), vec![10, 10, 10, 10]);

    let consumer = PullConsumer::new(client(&silo), "client-cg");
    let got = pull_all(&consumer, topic, &Subscription::parse("*"), 40).await;
    assert_eq!(got.len(), 40);
    let mut last_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for m in &got {
        let (i, r) = &sent[&m.msg_id()];
        assert_eq!(&m.body().unwrap()[..], format!("body-{i}").as_bytes());
        assert_eq!(m.tags(), Some(if i % 2 == 0 { "TagA" } else { "TagB" }));
        assert_eq!(m.keys().collect::<Vec<_>>(), vec![format!("key-{i}")]);
        assert_eq!(m.properties().get("seq"), Some(i.to_string().as_str()));
        assert_eq!((m.queue_id(), m.queue_offset()), (r.queue.queue_id, r.queue_offset));
        assert_eq!(m.offset_msg_id(), r.offset_msg_id);
        assert_eq!(m.topic(), topic);
        let prev = last_offset.insert(m.queue_id(), m.queue_offset());
        assert_eq!(prev.map_or(0, |p| p + 1), m.queue_offset(), "queue order");
    }

    // A tag subscription sees only its tag.
    let tagged =
        pull_all(&PullConsumer::new(client(&silo), "client-cg-tags"), topic, &Subscription::parse("TagB"), 20).await;
    assert!(tagged.iter().all(|m| m.tags() == Some("TagB")));
    assert_eq!(tagged.len(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_pipelining_and_oneway_store_every_message() {
    let silo = start().await;
    let producer = Arc::new(Producer::new(client(&silo), ProducerConfig::default()));
    let topic = "ClientBatch";
    let batch: Vec<Message> = (0..32).map(|i| Message::new(vec![i as u8; 1024]).with_key(format!("b{i}"))).collect();
    let r = producer.send_batch(topic, &batch).await.unwrap();
    assert_eq!(r.msg_id.split(',').count(), 32);
    assert_eq!(r.offset_msg_id.split(',').count(), 32);

    // 200 sends in flight at once over one connection.
    let sends: Vec<_> = (0..200)
        .map(|i| {
            let p = producer.clone();
            tokio::spawn(async move { p.send(topic, &Message::new(format!("p{i}"))).await })
        })
        .collect();
    for s in sends {
        s.await.unwrap().unwrap();
    }
    for i in 0..10 {
        producer.send_oneway(topic, &Message::new(format!("o{i}"))).await.unwrap();
    }
    let consumer = PullConsumer::new(client(&silo), "batch-cg");
    let got = pull_all(&consumer, topic, &Subscription::parse("*"), 242).await;
    assert_eq!(got.len(), 242);
    // The batch is stored together, in order, in one queue.
    let batch_queue = r.queue.queue_id;
    let in_batch: Vec<_> = got.iter().filter(|m| m.keys().any(|k| k.starts_with('b'))).collect();
    assert_eq!(in_batch.len(), 32);
    for (i, m) in in_batch.iter().enumerate() {
        assert_eq!(m.queue_id(), batch_queue);
        assert_eq!(m.queue_offset(), r.queue_offset + i as i64);
        assert_eq!(&m.body().unwrap()[..], &vec![i as u8; 1024][..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_commit_and_read_back() {
    let silo = start().await;
    let producer = Producer::new(client(&silo), ProducerConfig::default());
    let before = silo_client::message::now_millis() - 1000;
    let r = producer.send("ClientOffsets", &Message::new("x")).await.unwrap();
    let consumer = PullConsumer::new(client(&silo), "offsets-cg");
    let mq = r.queue.clone();
    eventually("dispatch", || async { consumer.max_offset(&mq).await.unwrap() == 1 }).await;
    assert_eq!(consumer.committed_offset(&mq).await.unwrap(), None);
    consumer.commit_offset(&mq, 1).await.unwrap();
    assert_eq!(consumer.committed_offset(&mq).await.unwrap(), Some(1));
    assert_eq!(consumer.max_offset(&mq).await.unwrap(), 1);
    assert_eq!(consumer.min_offset(&mq).await.unwrap(), 0);
    assert_eq!(consumer.offset_for_timestamp(&mq, before).await.unwrap(), 0);
    // Past the end: the broker says where to go on from.
    let sub = Subscription::parse("*");
    let past = consumer.pull(&mq, 5, 32, &sub, None).await.unwrap();
    assert_eq!(past.status, PullStatus::OffsetIllegal);
    assert_eq!(past.next_begin_offset, 1);
    let at_end = consumer.pull(&mq, 1, 32, &sub, None).await.unwrap();
    assert_eq!(at_end.status, PullStatus::NoNewMsg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_sees_topics_cluster_progress_and_messages() {
    let silo = start().await;
    let admin = Admin::new(client(&silo));
    let cluster = admin.cluster_info().await.unwrap();
    let (cluster_name, brokers) = cluster.cluster_addr_table.iter().next().unwrap();
    let broker_name = brokers.iter().next().unwrap();
    assert_eq!(cluster.broker_addr_table[broker_name].broker_addrs[&0], silo.broker);

    let created = admin.create_topic(Some(cluster_name), &TopicSpec::new("AdminTopic", 3)).await.unwrap();
    assert_eq!(created, vec![broker_name.clone()]);
    assert!(admin.topic_list().await.unwrap().topic_list.contains("AdminTopic"));
    let route = admin.route("AdminTopic").await.unwrap().unwrap();
    assert_eq!((route.queue_datas[0].read_queue_nums, route.queue_datas[0].write_queue_nums), (3, 3));

    let producer = Producer::new(client(&silo), ProducerConfig::default());
    let mut results = Vec::new();
    for i in 0..6 {
        results
            .push(producer.send("AdminTopic", &Message::new(format!("m{i}")).with_key(format!("k{i}"))).await.unwrap());
    }
    let consumer = PullConsumer::new(client(&silo), "admin-cg");
    for q in consumer.queues("AdminTopic").await.unwrap() {
        consumer.commit_offset(&q, if q.queue_id == 0 { 1 } else { 2 }).await.unwrap();
    }
    eventually("dispatch", || async {
        let stats = admin.consume_stats("admin-cg", Some("AdminTopic")).await.unwrap();
        stats.iter().map(|(_, o)| o.broker_offset).sum::<i64>() == 6
    })
    .await;
    let stats = admin.consume_stats("admin-cg", Some("AdminTopic")).await.unwrap();
    assert_eq!(stats.len(), 3);
    let lag: i64 = stats.iter().map(|(_, o)| o.broker_offset - o.consumer_offset).sum();
    assert_eq!(lag, 1);

    let viewed = admin.view_message(&results[4].offset_msg_id).await.unwrap();
    assert_eq!(&viewed.message.body().unwrap()[..], b"m4");
    let found = admin.query_by_key("AdminTopic", "k3", 32).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].message.msg_id(), results[3].msg_id);
    let by_id = admin.query_by_uniq_id("AdminTopic", &results[2].msg_id).await.unwrap();
    assert_eq!(&by_id[0].message.body().unwrap()[..], b"m2");

    let info = admin.runtime_info(&silo.broker).await.unwrap();
    assert_eq!(info.table["msgPutTotalTodayNow"], "6");

    admin.delete_topic(Some(cluster_name), "AdminTopic").await.unwrap();
    assert!(admin.route("AdminTopic").await.unwrap().is_none());
    assert!(!admin.topic_list().await.unwrap().topic_list.contains("AdminTopic"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_what_failed() {
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let producer =
        Producer::new(Client::new(ClientConfig::new(&format!("127.0.0.1:{port}"))), ProducerConfig::default());
    let err = producer.send("T", &Message::new("x")).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")));

    let silo = start().await;
    let producer = Producer::new(client(&silo), ProducerConfig::default());
    let err = producer.send("bad/topic", &Message::new("x")).await.unwrap_err();
    assert!(matches!(err, ClientError::Refused { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sql92_subscription_is_filtered_by_the_broker() {
    let silo = start().await;
    let producer = Producer::new(client(&silo), ProducerConfig::default());
    let topic = "ClientSql92";
    for i in 0..40 {
        let msg =
            Message::new(format!("s{i}")).with_tags(format!("T{}", i % 4)).with_property("a", (i % 4).to_string());
        producer.send(topic, &msg).await.unwrap();
    }
    let consumer = PullConsumer::new(client(&silo), "client-cg-sql");
    let got = pull_all(&consumer, topic, &Subscription::sql92("a = 1 AND TAGS = 'T1'"), 10).await;
    assert_eq!(got.len(), 10);
    assert!(got.iter().all(|m| m.properties().get("a") == Some("1")));
    // The broker, not the client, refuses what it cannot parse.
    let mq = consumer.queues(topic).await.unwrap().remove(0);
    let e = consumer.pull(&mq, 0, 32, &Subscription::sql92("a = = 1"), None).await.unwrap_err();
    assert!(matches!(e, ClientError::Refused { code: 23, .. }), "{e:?}");
}
