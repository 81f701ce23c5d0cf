//! Deleting a topic removes what Apache's broker removes: the topic's config, its consume
//! queues (files included) and every group's committed offsets of it. A topic created again
//! under the same name starts from offset 0, and the deletion survives a clean restart. (As in
//! Java, records of a deleted topic stored after every other queue's last record are
//! dispatched again by a restart, since recovery resumes from the queues' furthest coverage.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_broker::{Broker, BrokerConfig};

fn open(dir: &Path) -> Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        ..Default::default()
    };
    Broker::open(config, None).unwrap()
}

fn send(broker: &Broker, topic: &str, queue_id: i32) -> i64 {
    let mut conn = ConnState::default();
    let mut req = SendRequest {
        topic,
        default_topic: "TBW102",
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        max_reconsume_times: None,
        properties: "",
        messages: Messages::One(Payload { flag: 0, body: b"m", properties: "" }),
    };
    let plan = broker.plan_send(&req).unwrap();
    broker.send(&mut conn, &mut req, &plan).unwrap().append.queue_offset
}

#[test]
fn a_deleted_topic_loses_its_queues_and_offsets_and_starts_again_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let queue_dir = dir.path().join("consumequeue").join("Doomed");
    {
        let broker = open(dir.path());
        for _ in 0..5 {
            send(&broker, "Doomed", 1);
        }
        send(&broker, "Kept", 0);
        assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
        broker.offsets.commit("billing", "Doomed", 1, 3);
        broker.offsets.commit("billing", "Kept", 0, 1);
        assert!(queue_dir.join("1").is_dir());

        broker.delete_topic("Doomed").unwrap();
        assert!(broker.topics.get("Doomed").is_none());
        assert_eq!(broker.store.max_offset_in_queue("Doomed", 1), 0);
        assert!(!queue_dir.exists(), "the topic's consume-queue files are left behind");
        assert_eq!(broker.offsets.query("billing", "Doomed", 1), None);
        assert_eq!(broker.offsets.query("billing", "Kept", 0), Some(1), "another topic's offset went too");
        let file = std::fs::read_to_string(dir.path().join("config/consumerOffset.json")).unwrap();
        assert!(!file.contains("Doomed@"), "{file}");

        broker.offsets.persist().unwrap();
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path());
    assert!(broker.topics.get("Doomed").is_none());
    assert_eq!(broker.store.max_offset_in_queue("Doomed", 1), 0, "the deleted queue came back after a restart");
    assert_eq!(broker.store.max_offset_in_queue("Kept", 0), 1);
    assert_eq!(send(&broker, "Doomed", 1), 0, "a topic created again continues the old offsets");
}
