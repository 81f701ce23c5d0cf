//! 5.x timer messages through the broker's core, with the clock moved by hand: a message sent
//! with a delay is delivered once its time has come and not before, with its properties; it
//! survives a restart and fires once; a crash fires it at least once. (The stock Java 5.3.3
//! producer runs the same over sockets in `crates/silo/tests/client_interop.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::BrokerError;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_broker::timer::TimerService;
use silo_broker::{Broker, BrokerConfig};
use silo_store::{GetStatus, ManualClock, TagFilter};
use silo_wire::properties::PropertiesView;
use silo_wire::record::{Decoded, decode_record};

/// A whole second, so that the rounding is visible.
const START: i64 = 1_800_000_000_000;

fn open(dir: &Path, clock: &Arc<ManualClock>) -> Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        timer_log_file_size: 1 << 16,
        clock: clock.clone(),
        ..Default::default()
    };
    Broker::open(config, None).unwrap()
}

fn send(broker: &Broker, props: &str, body: &[u8]) -> Result<(), BrokerError> {
    let mut conn = ConnState::default();
    let mut req = SendRequest {
        topic: "Later",
        default_topic: "TBW102",
        default_topic_queue_nums: 4,
        queue_id: 2,
        sys_flag: 0,
        born_timestamp: START,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        max_reconsume_times: None,
        properties: props,
        messages: Messages::One(Payload { flag: 0, body, properties: props }),
    };
    let plan = broker.plan_send(&req)?;
    broker.send(&mut conn, &mut req, &plan).map(drop)
}

fn delivered(broker: &Broker) -> Vec<(Vec<u8>, String)> {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    let r = broker.store.get_messages("Later", 2, 0, 1000, 1 << 24, TagFilter::All);
    if r.status != GetStatus::Found {
        return Vec::new();
    }
    r.messages
        .iter()
        .map(|m| match decode_record(m, 0) {
            Ok(Decoded::Record(rec)) => (rec.body.to_vec(), rec.properties.as_str().to_owned()),
            _ => panic!("undecodable"),
        })
        .collect()
}

fn round(service: &mut TimerService, broker: &Broker) -> usize {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    service.run_once(broker).unwrap().fired
}

#[test]
fn a_timer_message_is_delivered_when_its_time_comes_and_not_before() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    send(&broker, "TIMER_DELAY_SEC\u{1}10\u{2}KEYS\u{1}k1\u{2}color\u{1}red\u{2}", b"ten seconds").unwrap();
    send(&broker, "TIMER_DELAY_MS\u{1}2500\u{2}", b"two and a half").unwrap();
    send(&broker, &format!("TIMER_DELIVER_MS\u{1}{}\u{2}", START + 4_000), b"at four").unwrap();
    send(&broker, "TIMER_DELIVER_MS\u{1}5\u{2}", b"in the past").unwrap();
    let mut service = TimerService::open(&broker).unwrap();
    assert_eq!(round(&mut service, &broker), 0);
    assert_eq!(delivered(&broker).len(), 1, "only the one in the past is delivered at once");

    let mut seen = vec![b"in the past".to_vec()];
    for (at, body) in [(2_500, &b"two and a half"[..]), (4_000, b"at four"), (10_000, b"ten seconds")] {
        clock.set(START + at - 1);
        round(&mut service, &broker);
        assert_eq!(
            delivered(&broker).len(),
            seen.len(),
            "{:?} delivered a millisecond early",
            String::from_utf8_lossy(body)
        );
        clock.set(START + (at + 999) / 1000 * 1000);
        round(&mut service, &broker);
        seen.push(body.to_vec());
        assert_eq!(delivered(&broker).iter().map(|(b, _)| b.clone()).collect::<Vec<_>>(), seen);
    }
    let (_, props) = &delivered(&broker)[3];
    let p = PropertiesView::from_valid(props);
    assert_eq!((p.get("KEYS"), p.get("color"), p.get("TIMER_DELAY_SEC")), (Some("k1"), Some("red"), Some("10")));
    assert_eq!((p.get("REAL_TOPIC"), p.get("REAL_QID")), (None, None));
    assert!(p.get("TIMER_DEQUEUE_MS").is_some() && p.get("TIMER_ENQUEUE_MS").is_some());
    clock.advance(3_600_000);
    round(&mut service, &broker);
    assert_eq!(delivered(&broker).len(), 4, "a timer fired twice");
}

#[test]
fn timer_properties_that_are_not_numbers_or_too_far_away_are_refused() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    for props in ["TIMER_DELAY_SEC\u{1}soon\u{2}", "TIMER_DELAY_MS\u{1}1e3\u{2}", "TIMER_DELIVER_MS\u{1} 5\u{2}"] {
        let e = send(&broker, props, b"x").unwrap_err();
        assert!(matches!(e, BrokerError::TimerIllegal(_)), "{props:?}: {e}");
    }
    let e = send(&broker, "TIMER_DELAY_SEC\u{1}999999999\u{2}", b"x").unwrap_err();
    assert!(e.to_string().contains("max delay"), "{e}");
    assert!(delivered(&broker).is_empty(), "a refused timer message was stored");
}

#[test]
fn a_pending_timer_survives_a_restart_and_fires_once() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock);
        send(&broker, "TIMER_DELAY_SEC\u{1}5\u{2}", b"after the restart").unwrap();
        send(&broker, "TIMER_DELAY_SEC\u{1}1\u{2}", b"before the restart").unwrap();
        let mut service = TimerService::open(&broker).unwrap();
        round(&mut service, &broker);
        clock.set(START + 1_000);
        assert_eq!(round(&mut service, &broker), 1);
        service.close(&broker).unwrap();
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock);
    let mut service = TimerService::open(&broker).unwrap();
    assert_eq!(round(&mut service, &broker), 0, "a timer fired again after a clean restart");
    clock.set(START + 5_000);
    assert_eq!(round(&mut service, &broker), 1);
    let bodies: Vec<_> = delivered(&broker).into_iter().map(|(b, _)| b).collect();
    assert_eq!(bodies, vec![b"before the restart".to_vec(), b"after the restart".to_vec()]);
}

#[test]
fn a_crash_neither_loses_a_timer_nor_fires_it_twice() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock);
        send(&broker, "TIMER_DELAY_SEC\u{1}3\u{2}", b"fired before the crash").unwrap();
        send(&broker, "TIMER_DELAY_SEC\u{1}9\u{2}", b"enqueued, never checkpointed").unwrap();
        let mut service = TimerService::open(&broker).unwrap();
        round(&mut service, &broker);
        clock.set(START + 3_000);
        assert_eq!(round(&mut service, &broker), 1);
        // Dropped without a checkpoint: a crash after the enqueue and the fire.
        drop(service);
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock);
    let mut service = TimerService::open(&broker).unwrap();
    assert_eq!(round(&mut service, &broker), 0, "the fired timer fired again");
    clock.set(START + 9_000);
    assert_eq!(round(&mut service, &broker), 1, "the enqueued timer was lost or enqueued twice");
    clock.set(START + 60_000);
    round(&mut service, &broker);
    let bodies: Vec<_> = delivered(&broker).into_iter().map(|(b, _)| b).collect();
    assert_eq!(bodies, vec![b"fired before the crash".to_vec(), b"enqueued, never checkpointed".to_vec()]);
}
