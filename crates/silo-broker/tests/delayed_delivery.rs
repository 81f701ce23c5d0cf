//! A delayed message is delivered to its topic when its time comes by the broker's clock, and
//! not a millisecond before; a retry dead-lettered with a delay is not delayed. Driven through
//! the broker's core with a clock moved by hand, without sockets or sleeps.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_broker::schedule::Scheduler;
use silo_broker::{Broker, BrokerConfig};
use silo_store::{GetStatus, ManualClock, TagFilter};
use silo_wire::properties::PropertiesView;
use silo_wire::record::{Decoded, decode_record};

const START: i64 = 1_800_000_000_000;

/// A broker on a fresh directory whose time is `clock` (no sockets).
fn broker_with(clock: &Arc<ManualClock>) -> (tempfile::TempDir, Arc<Broker>) {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        store_path_root_dir: dir.path().to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        clock: clock.clone(),
        ..Default::default()
    };
    let broker = Broker::open(config, None).unwrap();
    (dir, broker)
}

/// A single message to `topic`/`queue_id`, as a producer sends it.
fn single<'a>(topic: &'a str, queue_id: i32, properties: &'a str, body: &'a [u8]) -> SendRequest<'a> {
    SendRequest {
        topic,
        default_topic: "TBW102",
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: START,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        max_reconsume_times: None,
        properties,
        messages: Messages::One(Payload { flag: 0, body, properties }),
    }
}

#[test]
fn a_delayed_message_is_delivered_when_its_time_comes_and_not_before() {
    let clock = ManualClock::new(START);
    let (_dir, broker) = broker_with(&clock);
    let mut conn = ConnState::default();
    // Level 3 is 10 s in Java's default messageDelayLevel.
    let mut req = single("Later", 2, "DELAY\u{1}3\u{2}KEYS\u{1}k1\u{2}", b"due in ten seconds");
    let plan = broker.plan_send(&req).unwrap();
    broker.send(&mut conn, &mut req, &plan).unwrap();
    let mut scheduler = Scheduler::load(&broker).unwrap();
    let in_queue = |broker: &Arc<Broker>| {
        assert!(broker.store.wait_dispatched(Duration::from_secs(10)), "dispatch did not catch up");
        broker.store.get_messages("Later", 2, 0, 32, 1 << 20, TagFilter::All)
    };

    assert_eq!(scheduler.deliver_due(&broker), 0);
    assert_ne!(in_queue(&broker).status, GetStatus::Found, "delivered at once");
    clock.advance(9_999);
    assert_eq!(scheduler.deliver_due(&broker), 0, "delivered a millisecond early");
    clock.advance(1);
    assert_eq!(scheduler.deliver_due(&broker), 1);
    let got = in_queue(&broker);
    assert_eq!(got.status, GetStatus::Found);
    let Ok(Decoded::Record(rec)) = decode_record(&got.messages[0], 0) else { panic!("undecodable") };
    assert_eq!(rec.body, b"due in ten seconds");
    assert_eq!(rec.topic, "Later");
    let props = PropertiesView::from_valid(rec.properties.as_str());
    assert_eq!(props.get("KEYS"), Some("k1"));
    assert_eq!(props.get("DELAY"), None, "the delivered copy is not delayed again");
    // Delivered once: a later round finds nothing more.
    clock.advance(60_000);
    assert_eq!(scheduler.deliver_due(&broker), 0);
}

/// A client that re-sends a failed message itself (orderly consumers always do) sends it to the
/// retry topic with `DELAY = 3 + reconsumeTimes`. Over its limit it goes to the dead-letter
/// queue at once, as in the Java broker, stored with `DELAY=-1`; it used to wait out the delay
/// in the schedule topic first.
#[test]
fn a_dead_lettered_retry_is_not_delayed() {
    let clock = ManualClock::new(START);
    let (_dir, broker) = broker_with(&clock);
    let mut conn = ConnState::default();
    let properties = "DELAY\u{1}4\u{2}RETRY_TOPIC\u{1}Orders\u{2}UNIQ_KEY\u{1}AB12\u{2}";
    let mut req = single("%RETRY%billing", 0, properties, b"failed twice");
    req.reconsume_times = 2;
    req.max_reconsume_times = Some(1);
    let plan = broker.plan_send(&req).unwrap();
    broker.send(&mut conn, &mut req, &plan).unwrap();
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    let got = broker.store.get_messages("%DLQ%billing", 0, 0, 32, 1 << 20, TagFilter::All);
    assert_eq!(got.status, GetStatus::Found, "not in the dead-letter queue at once");
    let Ok(Decoded::Record(rec)) = decode_record(&got.messages[0], 0) else { panic!("undecodable") };
    assert_eq!(rec.body, b"failed twice");
    let props = PropertiesView::from_valid(rec.properties.as_str());
    assert_eq!(props.get("DELAY"), Some("-1"));
    assert_eq!(props.get("RETRY_TOPIC"), Some("Orders"));
    assert_eq!(props.get("UNIQ_KEY"), Some("AB12"));
    let scheduled = broker.store.get_messages("SCHEDULE_TOPIC_XXXX", 3, 0, 32, 1 << 20, TagFilter::All);
    assert_ne!(scheduled.status, GetStatus::Found, "parked in the schedule topic");
}
