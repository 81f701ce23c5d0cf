//! POP consumption through the broker's core, with the clock moved by hand: a popped message
//! is invisible for its invisible time; unacknowledged it comes back once through the group's
//! retry topic with its attempt counted, and to the dead-letter queue when the group's
//! attempts are used up; an acknowledged one never comes back, also after a reopen; a renewed
//! handle replaces the old one; forged, foreign and expired handles acknowledge nothing; an
//! orderly pop holds its queue until acknowledged. (Java clients run the same flows over
//! sockets, directly and through Apache's proxy, in `crates/silo/tests/`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::BrokerError;
use silo_broker::core::filter::PullFilter;
use silo_broker::core::pop::{HandleRequest, PopRequest, Popped};
use silo_broker::topics::topic_config;
use silo_broker::{Broker, BrokerConfig};
use silo_store::{Clock as _, GetStatus, ManualClock, MessageToStore, TagFilter};
use silo_wire::body::SubscriptionGroupConfig;
use silo_wire::pop::TopicMark;
use silo_wire::properties::PropertiesView;
use silo_wire::record::{Decoded, decode_record};

const START: i64 = 1_800_000_000_000;
const GROUP: &str = "pop-group";
const TOPIC: &str = "Orders";
const INVISIBLE: i64 = 30_000;

fn open(dir: &Path, clock: &Arc<ManualClock>) -> Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        clock: clock.clone(),
        ..Default::default()
    };
    let broker = Broker::open(config, None).unwrap();
    broker.topics.put(topic_config(TOPIC, 2, 2, 6)).unwrap();
    broker
}

fn send(broker: &Broker, conn: &mut ConnState, queue_id: i32, body: &str) {
    let props = format!("TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}id-{body}\u{2}");
    let msg = MessageToStore {
        topic: TOPIC,
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: START,
        born_host: broker.config.broker_addr(),
        reconsume_times: 0,
        prepared_tx_offset: 0,
        body: body.as_bytes(),
        properties: &props,
    };
    broker.store.append(&mut conn.appender, &msg).unwrap();
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
}

fn request(queue_id: i32, max: i32, order: bool) -> PopRequest<'static> {
    PopRequest {
        group: GROUP,
        topic: TOPIC,
        queue_id,
        max_messages: max,
        invisible_time: INVISIBLE,
        init_mode: 0,
        expression: None,
        expression_type: None,
        order,
        attempt_id: None,
        owner: None,
    }
}

/// A popped message as a client sees it: its body, attempts, the topic it was read from and
/// the handle the client builds from the answer's header (as Java's client builds it).
#[derive(Debug, Clone)]
struct Got {
    body: String,
    reconsume_times: i32,
    read_from: String,
    queue_id: i32,
    offset: i64,
    handle: String,
}

fn info_map(info: &str) -> HashMap<String, String> {
    info.split(';')
        .filter(|e| !e.is_empty())
        .map(|e| {
            let parts: Vec<&str> = e.split(' ').collect();
            assert_eq!(parts.len(), 3, "entry {e:?} of {info:?}");
            (format!("{}@{}", parts[0], parts[1]), parts[2].to_owned())
        })
        .collect()
}

fn received(broker: &Broker, p: &Popped) -> Vec<Got> {
    let starts = info_map(&p.start_offset_info);
    let offsets = info_map(&p.msg_offset_info);
    let counts = info_map(&p.order_count_info);
    p.messages
        .iter()
        .map(|m| {
            let Ok(Decoded::Record(rec)) = decode_record(m, 0) else { panic!("undecodable") };
            let mark = TopicMark::of_topic(rec.topic);
            let key = format!("{}@{}", mark.as_str(), rec.meta.queue_id);
            let listed: Vec<i64> = offsets[&key].split(',').map(|o| o.parse().unwrap()).collect();
            assert!(listed.contains(&m.queue_offset), "msgOffsetInfo lists every message");
            let handle = format!(
                "{} {} {} {} {} {} {} {}",
                starts[&key],
                p.pop_time,
                p.invisible_time,
                p.revive_qid,
                mark.as_str(),
                broker.config.broker_name,
                rec.meta.queue_id,
                m.queue_offset
            );
            let order_count = counts
                .get(&format!("{}@qo{}%{}", mark.as_str(), rec.meta.queue_id, m.queue_offset))
                .map(|c| c.parse().unwrap());
            Got {
                body: String::from_utf8(rec.body.to_vec()).unwrap(),
                reconsume_times: order_count.filter(|&c| c > 0).unwrap_or(rec.meta.reconsume_times),
                read_from: rec.topic.to_owned(),
                queue_id: rec.meta.queue_id,
                offset: m.queue_offset,
                handle,
            }
        })
        .collect()
}

fn pop(broker: &Broker, conn: &mut ConnState, req: &PopRequest<'_>) -> Vec<Got> {
    let filter = broker.pop_filter(req).unwrap();
    let popped = broker.pop(conn, req, &filter).unwrap();
    received(broker, &popped)
}

fn ack(broker: &Broker, conn: &mut ConnState, got: &Got) -> Result<i64, BrokerError> {
    let req = HandleRequest {
        group: GROUP,
        topic: &got.read_from,
        queue_id: got.queue_id,
        offset: got.offset,
        handle: &got.handle,
    };
    broker.ack(conn, &req)
}

fn revive(broker: &Broker, conn: &mut ConnState) -> silo_broker::core::pop::ReviveRound {
    let r = broker.revive_round(conn, broker.config.clock.now_ms()).unwrap();
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    r
}

fn bodies(got: &[Got]) -> Vec<&str> {
    let mut b: Vec<&str> = got.iter().map(|g| g.body.as_str()).collect();
    b.sort_unstable();
    b
}

#[test]
fn an_unacknowledged_message_comes_back_once_through_the_retry_topic_with_its_attempt_counted() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    for (q, b) in [(0, "a"), (1, "b"), (0, "c")] {
        send(&broker, &mut conn, q, b);
    }
    let first = pop(&broker, &mut conn, &request(-1, 32, false));
    assert_eq!(bodies(&first), ["a", "b", "c"]);
    assert!(first.iter().all(|g| g.reconsume_times == 0 && g.read_from == TOPIC));
    // Invisible: another pop gets nothing, however often it asks.
    assert!(pop(&broker, &mut conn, &request(-1, 32, false)).is_empty());

    let a = first.iter().find(|g| g.body == "a").unwrap();
    let c = first.iter().find(|g| g.body == "c").unwrap();
    ack(&broker, &mut conn, a).unwrap();
    ack(&broker, &mut conn, c).unwrap();
    // Acknowledging twice is harmless.
    ack(&broker, &mut conn, a).unwrap();

    clock.advance(INVISIBLE - 1);
    assert_eq!(revive(&broker, &mut conn).revived, 0, "nothing revives before its time");
    clock.advance(1);
    assert_eq!(revive(&broker, &mut conn).revived, 1);
    assert_eq!(revive(&broker, &mut conn).revived, 0, "a checkpoint revives once");

    let again = pop(&broker, &mut conn, &request(-1, 32, false));
    assert_eq!(bodies(&again), ["b"]);
    let b = &again[0];
    assert_eq!((b.reconsume_times, b.read_from.as_str()), (1, "%RETRY%pop-group_Orders"));
    let stored = broker.store.get_messages(&b.read_from, 0, b.offset, 1, 1 << 20, TagFilter::All);
    let Ok(Decoded::Record(rec)) = decode_record(&stored.messages[0], 0) else { panic!() };
    let p = PropertiesView::from_valid(rec.properties.as_str());
    assert_eq!((p.get("UNIQ_KEY"), p.get("TAGS")), (Some("id-b"), Some("TagA")), "the retried copy keeps its id");
    assert_eq!(p.get("1ST_POP_TIME"), Some(START.to_string().as_str()));
    ack(&broker, &mut conn, b).unwrap();
    clock.advance(10 * INVISIBLE);
    assert_eq!(revive(&broker, &mut conn).revived, 0);
    assert!(pop(&broker, &mut conn, &request(-1, 32, false)).is_empty());
    assert_eq!(broker.pop.in_flight(), (0, 0));
}

#[test]
fn after_the_groups_last_attempt_a_message_goes_to_the_dead_letter_queue() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    broker
        .groups
        .put(SubscriptionGroupConfig { group_name: GROUP.into(), retry_max_times: 2, ..Default::default() })
        .unwrap();
    let mut conn = ConnState::default();
    send(&broker, &mut conn, 0, "doomed");
    let mut attempts = Vec::new();
    for _ in 0..3 {
        let got = pop(&broker, &mut conn, &request(-1, 32, false));
        assert_eq!(bodies(&got), ["doomed"]);
        attempts.push(got[0].reconsume_times);
        clock.advance(INVISIBLE);
        revive(&broker, &mut conn);
    }
    assert_eq!(attempts, [0, 1, 2], "one first delivery and retryMaxTimes retries");
    assert!(pop(&broker, &mut conn, &request(-1, 32, false)).is_empty());
    let dlq = broker.store.get_messages("%DLQ%pop-group", 0, 0, 10, 1 << 20, TagFilter::All);
    assert_eq!(dlq.status, GetStatus::Found);
    let Ok(Decoded::Record(rec)) = decode_record(&dlq.messages[0], 0) else { panic!() };
    assert_eq!((rec.body, rec.meta.reconsume_times), (&b"doomed"[..], 3));
}

#[test]
fn what_was_popped_survives_a_reopen_and_what_was_acknowledged_does_not_come_back() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock);
        let mut conn = ConnState::default();
        for b in ["kept", "acked"] {
            send(&broker, &mut conn, 0, b);
        }
        let got = pop(&broker, &mut conn, &request(0, 32, false));
        assert_eq!(bodies(&got), ["acked", "kept"]);
        ack(&broker, &mut conn, got.iter().find(|g| g.body == "acked").unwrap()).unwrap();
        broker.commit_revive_progress();
        broker.offsets.persist().unwrap();
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    assert_eq!(broker.pop.in_flight(), (1, 1), "the checkpoint and its one unacknowledged message");
    assert!(pop(&broker, &mut conn, &request(0, 32, false)).is_empty(), "still invisible");
    clock.advance(INVISIBLE);
    assert_eq!(revive(&broker, &mut conn).revived, 1);
    let back = pop(&broker, &mut conn, &request(-1, 32, false));
    assert_eq!(bodies(&back), ["kept"]);
}

#[test]
fn a_renewed_handle_replaces_the_old_one() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    send(&broker, &mut conn, 0, "slow");
    let got = pop(&broker, &mut conn, &request(0, 1, false)).remove(0);
    clock.advance(20_000);
    let req = HandleRequest { group: GROUP, topic: TOPIC, queue_id: 0, offset: got.offset, handle: &got.handle };
    let renewed = broker.change_invisible(&mut conn, &req, 60_000).unwrap();
    assert_eq!((renewed.pop_time, renewed.invisible_time), (START + 20_000, 60_000));
    // The new handle, as the client builds it: the message's own offset starts it.
    let new_handle = format!(
        "{} {} {} {} 0 {} 0 {}",
        got.offset, renewed.pop_time, renewed.invisible_time, renewed.revive_qid, broker.config.broker_name, got.offset
    );
    clock.advance(INVISIBLE);
    assert_eq!(revive(&broker, &mut conn).revived, 0, "the old deadline no longer applies");
    assert!(matches!(ack(&broker, &mut conn, &got), Err(BrokerError::HandleExpired { .. })), "the old handle is spent");
    let renewed_got = Got { handle: new_handle, ..got };
    ack(&broker, &mut conn, &renewed_got).unwrap();
    clock.advance(120_000);
    assert_eq!(revive(&broker, &mut conn).revived, 0);
}

#[test]
fn forged_foreign_and_malformed_handles_acknowledge_nothing() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    send(&broker, &mut conn, 0, "x");
    send(&broker, &mut conn, 0, "y");
    let got = pop(&broker, &mut conn, &request(0, 32, false));
    let x = got.iter().find(|g| g.body == "x").unwrap();
    let y = got.iter().find(|g| g.body == "y").unwrap();
    // Another group's ack with a real handle.
    let foreign = HandleRequest { group: "other", topic: TOPIC, queue_id: 0, offset: x.offset, handle: &x.handle };
    assert!(matches!(broker.ack(&mut conn, &foreign), Err(BrokerError::NoSuchPoppedMessage)));
    // A real handle with its pop time changed names no pop.
    let forged = x.handle.replacen(&START.to_string(), &(START + 1).to_string(), 1);
    let req = HandleRequest { group: GROUP, topic: TOPIC, queue_id: 0, offset: y.offset, handle: &forged };
    assert!(matches!(broker.ack(&mut conn, &req), Err(BrokerError::NoSuchPoppedMessage)));
    for bad in ["", "1 2 3", "a b c d e f g h", "0 1 2 3 9 b 0 1"] {
        let req = HandleRequest { group: GROUP, topic: TOPIC, queue_id: 0, offset: x.offset, handle: bad };
        assert!(matches!(broker.ack(&mut conn, &req), Err(BrokerError::BadHandle(_))), "{bad:?}");
    }
    let out_of_range = HandleRequest { group: GROUP, topic: TOPIC, queue_id: 0, offset: 99, handle: &x.handle };
    assert!(matches!(broker.ack(&mut conn, &out_of_range), Err(BrokerError::AckOffsetIllegal { .. })));
    let wrong_queue = HandleRequest { group: GROUP, topic: TOPIC, queue_id: 5, offset: 0, handle: &x.handle };
    assert!(matches!(broker.ack(&mut conn, &wrong_queue), Err(BrokerError::AckQueueIllegal { .. })));
    assert_eq!(broker.pop.in_flight(), (1, 2), "none of these acknowledged anything");
    clock.advance(INVISIBLE);
    assert_eq!(revive(&broker, &mut conn).revived, 2);
}

#[test]
fn an_orderly_pop_holds_its_queue_until_acknowledged_or_visible_again() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    for b in ["1", "2", "3"] {
        send(&broker, &mut conn, 0, b);
    }
    let first = pop(&broker, &mut conn, &request(0, 2, true));
    assert_eq!(bodies(&first), ["1", "2"]);
    assert!(pop(&broker, &mut conn, &request(0, 2, true)).is_empty(), "the queue is held");
    // Not acknowledged in time: the same messages again, with the attempt counted.
    clock.advance(INVISIBLE);
    let again = pop(&broker, &mut conn, &request(0, 2, true));
    assert_eq!(bodies(&again), ["1", "2"]);
    assert!(again.iter().all(|g| g.reconsume_times == 1));
    // The old handle no longer acknowledges.
    assert!(ack(&broker, &mut conn, &first[0]).is_err());
    for g in &again {
        ack(&broker, &mut conn, g).unwrap();
    }
    let last = pop(&broker, &mut conn, &request(0, 2, true));
    assert_eq!(bodies(&last), ["3"]);
    assert_eq!(last[0].reconsume_times, 0);
    assert_eq!(broker.offsets.query(GROUP, TOPIC, 0), Some(2), "the committed offset waits for the ack");
    ack(&broker, &mut conn, &last[0]).unwrap();
    assert_eq!(broker.offsets.query(GROUP, TOPIC, 0), Some(3));
}

#[test]
fn pops_are_refused_as_javas_broker_refuses_them() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let too_many = PopRequest { max_messages: 33, ..request(0, 1, false) };
    assert!(matches!(broker.pop_filter(&too_many), Err(BrokerError::PopTooMany(_))));
    let missing = PopRequest { topic: "Nope", ..request(0, 1, false) };
    assert!(matches!(broker.pop_filter(&missing), Err(BrokerError::TopicNotExist(_))));
    let queue = request(2, 1, false);
    assert!(matches!(broker.pop_filter(&queue), Err(BrokerError::NoSuchReadQueue { .. })));
    broker
        .groups
        .put(SubscriptionGroupConfig { group_name: "off".into(), consume_enable: false, ..Default::default() })
        .unwrap();
    let disabled = PopRequest { group: "off", ..request(0, 1, false) };
    assert!(matches!(broker.pop_filter(&disabled), Err(BrokerError::GroupConsumeDisabled(_))));
    let bad_sql = PopRequest { expression: Some("a >"), expression_type: Some("SQL92"), ..request(0, 1, false) };
    assert!(matches!(broker.pop_filter(&bad_sql), Err(BrokerError::SubscriptionParseFailed(_))));
    assert!(matches!(broker.pop_filter(&request(-1, 32, false)), Ok(PullFilter::All)));
}

/// The pops of a connected gRPC push consumer (`auto_renew`) are renewed by the broker itself,
/// under the same name: the client's first handle acknowledges them however long it works,
/// also after the broker reopens; once the client is gone they come back when their deadline
/// passes, once; a client that says it is terminating has its messages back within a second.
#[test]
fn owned_pops_are_renewed_while_their_client_is_connected_and_come_back_once_it_is_gone() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let owned = |owner: &'static str| PopRequest { owner: Some(owner), ..request(0, 32, false) };
    let alive = |_: &str| true;
    let gone = |_: &str| false;
    let (slow, renewed_once) = {
        let broker = open(dir.path(), &clock);
        let mut conn = ConnState::default();
        for b in ["slow", "crashed", "quit"] {
            send(&broker, &mut conn, 0, b);
        }
        let got = pop(&broker, &mut conn, &PopRequest { max_messages: 1, ..owned("worker") });
        assert_eq!(bodies(&got), ["slow"]);
        // Nothing to renew yet: the deadline is further away than the renew-ahead time.
        assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &alive).unwrap(), 0);
        clock.advance(INVISIBLE - 5_000);
        assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &alive).unwrap(), 1);
        clock.advance(10_000);
        assert_eq!(revive(&broker, &mut conn).revived, 0, "renewed: not due at its first deadline");
        broker.commit_revive_progress();
        broker.offsets.persist().unwrap();
        broker.store.shutdown().unwrap();
        (got[0].clone(), clock.now_ms())
    };
    // Reopened: the renewal was journaled, so the message is still invisible, and the handle
    // the client got at the pop still acknowledges it.
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    assert_eq!(broker.pop.in_flight(), (1, 1));
    assert_eq!(revive(&broker, &mut conn).revived, 0);
    clock.advance(40_000);
    assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &alive).unwrap(), 1, "the second step");
    assert!(clock.now_ms() - renewed_once > 0);
    ack(&broker, &mut conn, &slow).unwrap();
    assert_eq!(broker.pop.in_flight(), (0, 0));

    // A client that crashed: no longer renewed, back at its deadline, once.
    let crashed = pop(&broker, &mut conn, &PopRequest { max_messages: 1, ..owned("crashed-client") });
    assert_eq!(bodies(&crashed), ["crashed"]);
    clock.advance(INVISIBLE - 5_000);
    assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &gone).unwrap(), 0);
    clock.advance(5_000);
    assert_eq!(revive(&broker, &mut conn).revived, 1);
    assert_eq!(revive(&broker, &mut conn).revived, 0);

    // A client that terminates: what it holds is visible a second later.
    let quit = pop(&broker, &mut conn, &PopRequest { queue_id: 0, ..owned("quitting") });
    assert!(bodies(&quit).contains(&"quit"), "{:?}", bodies(&quit));
    // (One checkpoint per queue read: the retried "crashed" may have come with it.)
    assert!(broker.release_owned_pops(&mut conn, "quitting", clock.now_ms()).unwrap() >= 1);
    assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &alive).unwrap(), 0, "released: its own no more");
    clock.advance(999);
    assert_eq!(revive(&broker, &mut conn).revived, 0);
    clock.advance(1);
    assert_eq!(revive(&broker, &mut conn).revived, quit.len());
}

/// An orderly hold popped for a gRPC push consumer is renewed while the consumer is connected
/// (its queue stays held, its messages are not redelivered), and let go a second after the
/// consumer says it is terminating.
#[test]
fn an_owned_orderly_hold_is_renewed_while_its_client_is_connected() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    for b in ["1", "2"] {
        send(&broker, &mut conn, 0, b);
    }
    let owned = PopRequest { owner: Some("fifo-worker"), ..request(0, 2, true) };
    let first = pop(&broker, &mut conn, &owned);
    assert_eq!(bodies(&first), ["1", "2"]);
    let alive = |_: &str| true;
    clock.advance(INVISIBLE - 5_000);
    assert!(broker.pop.next_owned_due(clock.now_ms()).is_some_and(|at| at <= clock.now_ms() + 10_000));
    assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &alive).unwrap(), 1);
    clock.advance(10_000);
    assert!(pop(&broker, &mut conn, &request(0, 2, true)).is_empty(), "still held past its first deadline");
    ack(&broker, &mut conn, &first[0]).unwrap();
    // It says goodbye holding "2": the queue is let go a second later, "2" comes again.
    assert_eq!(broker.release_owned_pops(&mut conn, "fifo-worker", clock.now_ms()).unwrap(), 1);
    clock.advance(999);
    assert!(pop(&broker, &mut conn, &request(0, 2, true)).is_empty());
    clock.advance(1);
    let again = pop(&broker, &mut conn, &request(0, 2, true));
    assert_eq!(bodies(&again), ["2"]);
    assert_eq!(again[0].reconsume_times, 1);
}

/// A renewal journals the acknowledgements so far, all of them: with 32 messages in one pop and
/// the 32nd acknowledged, a reopen after the renewal brings back only the one not acknowledged.
#[test]
fn a_renewed_pop_of_32_keeps_every_acknowledgement_across_a_reopen() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path(), &clock);
        let mut conn = ConnState::default();
        for i in 0..32 {
            send(&broker, &mut conn, 0, &format!("m{i:02}"));
        }
        let got = pop(&broker, &mut conn, &PopRequest { owner: Some("slow"), ..request(0, 32, false) });
        assert_eq!(got.len(), 32);
        for g in got.iter().filter(|g| g.body != "m05") {
            ack(&broker, &mut conn, g).unwrap();
        }
        clock.advance(INVISIBLE - 5_000);
        assert_eq!(broker.renew_owned_pops(&mut conn, clock.now_ms(), &|_: &str| true).unwrap(), 1);
        broker.commit_revive_progress();
        broker.offsets.persist().unwrap();
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock);
    let mut conn = ConnState::default();
    assert_eq!(broker.pop.in_flight(), (1, 1), "one checkpoint, one message not acknowledged");
    clock.advance(120_000);
    assert_eq!(revive(&broker, &mut conn).revived, 1);
    let back = pop(&broker, &mut conn, &request(-1, 32, false));
    assert_eq!(bodies(&back), ["m05"]);
}
