//! Recalling timer messages through the broker's core, with the clock moved by hand: a
//! recalled timer is never delivered and the timers beside it are; a recall survives a
//! restart; a far timer's recall travels with it through its rolls; a recall that Java would
//! refuse is refused with Java's words. (The stock Java 5.x SDK recalls over gRPC in
//! `crates/silo/tests/sdk5_interop.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::BrokerError;
use silo_broker::core::recall::{RecallRequest, decode_handle, encode_handle};
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_broker::timer::{Round, TimerService};
use silo_broker::{Broker, BrokerConfig};
use silo_store::{GetStatus, ManualClock, TagFilter};
use silo_wire::record::{Decoded, decode_record};

/// A whole second, so that the rounding is visible.
const START: i64 = 1_800_000_000_000;
const TOPIC: &str = "Later";
const HOST: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 5000);

fn open(dir: &Path, clock: &Arc<ManualClock>, recall: bool, roll_window_slots: i64) -> Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        timer_log_file_size: 1 << 16,
        timer_roll_window_slots: roll_window_slots,
        recall_message_enable: recall,
        clock: clock.clone(),
        ..Default::default()
    };
    Broker::open(config, None).unwrap()
}

/// Sends a timer message with its own unique key; the recall handle its answer carries.
fn send_timer(broker: &Broker, key: &str, delay_ms: i64) -> String {
    let mut conn = ConnState::default();
    let props = format!("TIMER_DELAY_MS\u{1}{delay_ms}\u{2}UNIQ_KEY\u{1}{key}\u{2}");
    let mut req = SendRequest {
        topic: TOPIC,
        default_topic: "TBW102",
        default_topic_queue_nums: 1,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: START,
        born_host: HOST,
        reconsume_times: 0,
        max_reconsume_times: None,
        properties: &props,
        messages: Messages::One(Payload { flag: 0, body: key.as_bytes(), properties: &props }),
    };
    let plan = broker.plan_send(&req).unwrap();
    let sent = broker.send(&mut conn, &mut req, &plan).unwrap();
    broker.recall_handle(&req, &plan, &sent).expect("a timer message's answer has a recall handle")
}

fn recall(broker: &Broker, topic: &str, handle: &str) -> Result<String, BrokerError> {
    let mut conn = ConnState::default();
    let req = RecallRequest { topic, handle, producer_group: Some("P"), born_host: HOST };
    broker.recall(&mut conn, &req).map(|r| r.message_id)
}

fn delivered(broker: &Broker) -> Vec<String> {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    let r = broker.store.get_messages(TOPIC, 0, 0, 1000, 1 << 24, TagFilter::All);
    if r.status != GetStatus::Found {
        return Vec::new();
    }
    r.messages
        .iter()
        .map(|m| match decode_record(m, 0) {
            Ok(Decoded::Record(rec)) => String::from_utf8(rec.body.to_vec()).unwrap(),
            _ => panic!("undecodable"),
        })
        .collect()
}

fn round(service: &mut TimerService, broker: &Broker) -> Round {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    service.run_once(broker).unwrap()
}

#[test]
fn a_recalled_timer_is_never_delivered_and_the_timers_beside_it_are() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, true, silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS);
    let mut service = TimerService::open(&broker).unwrap();
    // Three in the same slot, one in a later slot.
    let handles: Vec<String> = ["a", "b", "c"].iter().map(|k| send_timer(&broker, k, 5_000)).collect();
    let later = send_timer(&broker, "d", 8_000);
    round(&mut service, &broker);
    let h = decode_handle(&handles[1]).unwrap();
    assert_eq!((h.topic.as_str(), h.broker_name.as_str(), h.message_id.as_str()), (TOPIC, "broker-a", "b"));
    // One past the slot time of a delivery at START + 5 s (the slot before it, Java's rounding).
    assert_eq!(h.timestamp, (START + 4_000 + 1).to_string());

    assert_eq!(recall(&broker, TOPIC, &handles[1]).unwrap(), "b");
    assert_eq!(recall(&broker, TOPIC, &later).unwrap(), "d");
    // The service's next round files the markers in their slots (it runs every 100 ms).
    assert_eq!(round(&mut service, &broker).enqueued, 2);
    clock.set(START + 5_000);
    let r = round(&mut service, &broker);
    assert_eq!((r.fired, r.recalled), (2, 1));
    assert_eq!(delivered(&broker), ["a", "c"]);
    clock.set(START + 60_000);
    let r = round(&mut service, &broker);
    assert_eq!((r.fired, r.recalled), (0, 1));
    assert_eq!(delivered(&broker), ["a", "c"], "a recalled timer was delivered");
    // Its time has passed: there is nothing left to recall.
    let e = recall(&broker, TOPIC, &handles[0]).unwrap_err();
    assert_eq!(e.to_string(), "recall failed, timestamp invalid");
}

#[test]
fn a_recall_survives_a_restart() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock, true, silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS);
        let mut service = TimerService::open(&broker).unwrap();
        let handle = send_timer(&broker, "recalled", 30_000);
        send_timer(&broker, "kept", 30_000);
        round(&mut service, &broker);
        recall(&broker, TOPIC, &handle).unwrap();
        // The marker is in the commit log but not yet in the timer files: a crash now.
        drop(service);
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock, true, silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS);
    let mut service = TimerService::open(&broker).unwrap();
    round(&mut service, &broker);
    clock.set(START + 30_000);
    let r = round(&mut service, &broker);
    assert_eq!((r.fired, r.recalled), (1, 1));
    assert_eq!(delivered(&broker), ["kept"]);
}

#[test]
fn a_far_timers_recall_rolls_with_it() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    // A window of 10 slots (seconds): a timer 25 s away is rolled twice on its way.
    let broker = open(dir.path(), &clock, true, 10);
    let mut service = TimerService::open(&broker).unwrap();
    let handle = send_timer(&broker, "far", 25_000);
    send_timer(&broker, "far too", 25_000);
    round(&mut service, &broker);
    recall(&broker, TOPIC, &handle).unwrap();
    let mut rolled = 0;
    let mut recalled = 0;
    for s in 1..=40 {
        clock.set(START + s * 1_000);
        let r = round(&mut service, &broker);
        rolled += r.rolled;
        recalled += r.recalled;
    }
    assert!(rolled >= 4, "both timers and the marker should have rolled, rolled {rolled}");
    assert_eq!(recalled, 1);
    assert_eq!(delivered(&broker), ["far too"]);
}

#[test]
fn recalls_are_refused_as_javas_broker_refuses_them() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock, false, silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS);
        let handle = send_timer(&broker, "k", 5_000);
        let e = recall(&broker, TOPIC, &handle).unwrap_err();
        assert_eq!(e.to_string(), "recall failed, operation is forbidden");
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock, true, silo_store::timer::DEFAULT_ROLL_WINDOW_SLOTS);
    let handle = send_timer(&broker, "k2", 5_000);
    let due = START + 4_001;
    let cases = [
        ("Nowhere", handle.clone(), "recall failed, the topic[Nowhere] not exist"),
        (TOPIC, "%%%".into(), "recall handle is invalid"),
        (TOPIC, encode_handle("TBW102", "broker-a", due, "k2"), "recall failed, topic not match"),
        (TOPIC, encode_handle(TOPIC, "broker-b", due, "k2"), "recall failed, broker service not available"),
        (TOPIC, encode_handle(TOPIC, "broker-a", START - 1, "k2"), "recall failed, timestamp invalid"),
        (TOPIC, encode_handle(TOPIC, "broker-a", START + 4 * 86_400_000, "k2"), "recall failed, timestamp invalid"),
    ];
    for (topic, handle, words) in cases {
        let e = recall(&broker, topic, &handle).unwrap_err();
        assert_eq!(e.to_string(), words, "{topic} {handle}");
    }
    // Nothing refused was stored: the timer topic holds the two timer messages alone.
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    assert_eq!(broker.store.max_offset_in_queue(silo_store::timer::TIMER_TOPIC, 0), 2);
}
