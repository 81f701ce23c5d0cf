//! Transactions through the broker's core, with the clock moved by hand: a half message is
//! invisible until committed; a commit delivers it once with the producer's properties, a
//! rollback never; an unresolved one is checked after the timeout, at most
//! `transactionCheckMax` times; a forged END_TRANSACTION commits nothing; and the state is
//! rebuilt from the store when the broker is reopened. (The stock Java, Go and C++ producers
//! run the same flows over sockets in `crates/silo/tests/client_interop.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use silo_broker::broker::ConnState;
use silo_broker::core::BrokerError;
use silo_broker::core::send::{Messages, Payload, SendRequest};
use silo_broker::core::transaction::{
    CHECK_MAX_TIME_TOPIC, EndTransaction, Ended, HALF_TOPIC, Outcome, SYSTEM_GROUP, TransactionConfig,
};
use silo_broker::{Broker, BrokerConfig};
use silo_store::{GetStatus, ManualClock, MessageToStore, TagFilter};
use silo_wire::properties::PropertiesView;
use silo_wire::record::{Decoded, decode_record, sys_flag};

const START: i64 = 1_800_000_000_000;
const GROUP: &str = "pg";

fn open(dir: &Path, clock: &Arc<ManualClock>, check_max: i32) -> Arc<Broker> {
    let config = BrokerConfig {
        store_path_root_dir: dir.to_owned(),
        mapped_file_size_commit_log: 1 << 20,
        clock: clock.clone(),
        transaction: TransactionConfig { check_max, ..TransactionConfig::default() },
        ..Default::default()
    };
    Broker::open(config, None).unwrap()
}

/// What a send result tells the producer: the half message's queue and commit-log offsets.
#[derive(Debug, Clone, Copy)]
struct HalfSent {
    half_offset: i64,
    commit_log_offset: i64,
}

/// A transactional send, as TransactionMQProducer makes it.
fn send_half(broker: &Broker, conn: &mut ConnState, uniq: &str, body: &[u8]) -> HalfSent {
    let props = format!(
        "TRAN_MSG\u{1}true\u{2}PGROUP\u{1}{GROUP}\u{2}UNIQ_KEY\u{1}{uniq}\u{2}KEYS\u{1}key-{uniq}\u{2}TAGS\u{1}TagT\u{2}color\u{1}blue\u{2}"
    );
    let mut req = SendRequest {
        topic: "Orders",
        default_topic: "TBW102",
        default_topic_queue_nums: 4,
        queue_id: 1,
        sys_flag: sys_flag::TRANSACTION_PREPARED_TYPE,
        born_timestamp: START,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        max_reconsume_times: None,
        properties: &props,
        messages: Messages::One(Payload { flag: 0, body, properties: &props }),
    };
    let plan = broker.plan_send(&req).unwrap();
    let sent = broker.send(conn, &mut req, &plan).unwrap();
    assert_eq!(plan.queue_id, 1, "the answer names the real queue");
    HalfSent { half_offset: sent.append.queue_offset, commit_log_offset: sent.append.physical_offset }
}

fn end(
    broker: &Broker,
    conn: &mut ConnState,
    h: HalfSent,
    outcome: Outcome,
    from_check: bool,
) -> Result<Ended, BrokerError> {
    let req = EndTransaction {
        producer_group: GROUP,
        half_offset: h.half_offset,
        commit_log_offset: h.commit_log_offset,
        outcome,
        from_check,
    };
    broker.end_transaction(conn, &req)
}

/// Bodies of the messages consumers of `Orders` queue 1 can read.
fn delivered(broker: &Broker) -> Vec<Vec<u8>> {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    let r = broker.store.get_messages("Orders", 1, 0, 1000, 1 << 24, TagFilter::All);
    if r.status != GetStatus::Found {
        return Vec::new();
    }
    r.messages
        .iter()
        .map(|m| match decode_record(m, 0) {
            Ok(Decoded::Record(rec)) => rec.body.to_vec(),
            _ => panic!("undecodable"),
        })
        .collect()
}

fn check_round(broker: &Broker, conn: &mut ConnState) -> silo_broker::core::transaction::CheckRound {
    assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
    broker.transaction_check_round(conn, broker.config.clock.now_ms()).unwrap()
}

#[test]
fn a_committed_message_is_delivered_once_with_its_properties_and_a_rolled_back_one_never() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    let a = send_half(&broker, &mut conn, "A", b"commit me");
    let b = send_half(&broker, &mut conn, "B", b"roll me back");
    assert!(delivered(&broker).is_empty(), "a half message is visible before its commit");

    assert_eq!(end(&broker, &mut conn, a, Outcome::Commit, false).unwrap(), Ended::Committed);
    assert_eq!(end(&broker, &mut conn, b, Outcome::Rollback, false).unwrap(), Ended::RolledBack);
    // The same END_TRANSACTION again (a resent one-way frame) applies nothing.
    assert_eq!(end(&broker, &mut conn, a, Outcome::Commit, false).unwrap(), Ended::AlreadyResolved);
    assert_eq!(end(&broker, &mut conn, b, Outcome::Commit, false).unwrap(), Ended::AlreadyResolved);
    assert_eq!(delivered(&broker), vec![b"commit me".to_vec()]);

    let r = broker.store.get_messages("Orders", 1, 0, 10, 1 << 20, TagFilter::All);
    let Ok(Decoded::Record(rec)) = decode_record(&r.messages[0], 0) else { panic!() };
    let p = PropertiesView::from_valid(rec.properties.as_str());
    assert_eq!(
        (p.get("KEYS"), p.get("TAGS"), p.get("color"), p.get("UNIQ_KEY")),
        (Some("key-A"), Some("TagT"), Some("blue"), Some("A"))
    );
    assert_eq!((p.get("TRAN_MSG"), p.get("REAL_TOPIC"), p.get("REAL_QID")), (None, None, None));
    assert_eq!(rec.meta.sys_flag & sys_flag::TRANSACTION_MASK, sys_flag::TRANSACTION_COMMIT_TYPE);
    assert_eq!(rec.meta.prepared_tx_offset, a.commit_log_offset);
    assert_eq!(rec.meta.born_timestamp, START);
    // Nothing is left to check, however late it gets.
    clock.advance(3_600_000);
    assert!(check_round(&broker, &mut conn).checks.is_empty());
}

#[test]
fn an_end_transaction_that_does_not_name_a_half_message_of_the_group_commits_nothing() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    let h = send_half(&broker, &mut conn, "H", b"half");
    // An ordinary message of the real topic, which a forged header might point at.
    let mut plain = ConnState::default();
    let props = "UNIQ_KEY\u{1}P\u{2}";
    let mut req = SendRequest {
        topic: "Orders",
        default_topic: "TBW102",
        default_topic_queue_nums: 4,
        queue_id: 1,
        sys_flag: 0,
        born_timestamp: START,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        max_reconsume_times: None,
        properties: props,
        messages: Messages::One(Payload { flag: 0, body: b"plain", properties: props }),
    };
    let plan = broker.plan_send(&req).unwrap();
    let plain_sent = broker.send(&mut plain, &mut req, &plan).unwrap();

    let forged =
        HalfSent { half_offset: plain_sent.append.queue_offset, commit_log_offset: plain_sent.append.physical_offset };
    let e = end(&broker, &mut conn, forged, Outcome::Commit, false).unwrap_err();
    assert!(matches!(e, BrokerError::NotAHalfMessage { .. }), "{e}");
    let e =
        end(&broker, &mut conn, HalfSent { commit_log_offset: h.commit_log_offset + 1, ..h }, Outcome::Commit, false)
            .unwrap_err();
    assert!(matches!(e, BrokerError::NoHalfMessage(_)), "{e}");
    let e =
        end(&broker, &mut conn, HalfSent { half_offset: h.half_offset + 7, ..h }, Outcome::Commit, false).unwrap_err();
    assert!(e.to_string().contains("transaction state table offset"), "{e}");
    let e = broker
        .end_transaction(
            &mut conn,
            &EndTransaction {
                producer_group: "another",
                half_offset: h.half_offset,
                commit_log_offset: h.commit_log_offset,
                outcome: Outcome::Commit,
                from_check: false,
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("producer group"), "{e}");
    assert_eq!(delivered(&broker), vec![b"plain".to_vec()], "a refused END_TRANSACTION committed something");
    // The genuine one still works.
    assert_eq!(end(&broker, &mut conn, h, Outcome::Commit, false).unwrap(), Ended::Committed);
    assert_eq!(delivered(&broker), vec![b"plain".to_vec(), b"half".to_vec()]);
}

#[test]
fn an_unknown_transaction_is_checked_after_the_timeout_and_its_answer_commits_once() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    let u = send_half(&broker, &mut conn, "U", b"unknown at first");
    assert_eq!(end(&broker, &mut conn, u, Outcome::Unknown, false).unwrap(), Ended::Left);

    clock.advance(5_999);
    assert!(check_round(&broker, &mut conn).checks.is_empty(), "checked before the 6 s timeout");
    clock.advance(1);
    let round = check_round(&broker, &mut conn);
    assert_eq!(round.checks.len(), 1);
    let check = round.checks[0].clone();
    assert_eq!((check.group.as_str(), check.real_topic.as_str(), check.tx_id.as_str()), (GROUP, "Orders", "U"));
    assert!(check.half_offset > u.half_offset, "the check names the copy at the end of the half queue");
    // The body is the message as the producer sent it: real topic and queue.
    let Ok(Decoded::Record(body)) = decode_record(&check.message, 0) else { panic!("check body undecodable") };
    assert_eq!((body.topic, body.meta.queue_id, body.body), ("Orders", 1, &b"unknown at first"[..]));
    assert_eq!(body.properties.get("TRANSACTION_CHECK_TIMES"), Some("1"));

    // The producer answers the check; and, late, the original END_TRANSACTION arrives too.
    let copy = HalfSent { half_offset: check.half_offset, commit_log_offset: check.commit_log_offset };
    assert_eq!(end(&broker, &mut conn, copy, Outcome::Commit, true).unwrap(), Ended::Committed);
    assert!(end(&broker, &mut conn, u, Outcome::Commit, false).is_err(), "the passed original committed again");
    assert_eq!(delivered(&broker), vec![b"unknown at first".to_vec()]);
    clock.advance(600_000);
    assert!(check_round(&broker, &mut conn).checks.is_empty());
}

#[test]
fn a_transaction_nobody_answers_is_given_up_after_the_check_limit() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 3);
    let mut conn = ConnState::default();
    send_half(&broker, &mut conn, "N", b"never answered");
    clock.advance(6_000);
    let mut checks = 0;
    let mut given_up = 0;
    for _ in 0..10 {
        let round = check_round(&broker, &mut conn);
        checks += round.checks.len();
        given_up += round.given_up;
        clock.advance(30_000);
    }
    assert_eq!((checks, given_up), (3, 1));
    assert!(delivered(&broker).is_empty());
    let r = broker.store.get_messages(CHECK_MAX_TIME_TOPIC, 0, 0, 10, 1 << 20, TagFilter::All);
    assert_eq!(r.messages.len(), 1, "the given-up message is kept in {CHECK_MAX_TIME_TOPIC}");
}

#[test]
fn pending_transactions_survive_a_restart_and_resolve_once() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let (c, r, u1, u2);
    {
        let broker = open(dir.path(), &clock, 15);
        let mut conn = ConnState::default();
        c = send_half(&broker, &mut conn, "C", b"committed before the restart");
        r = send_half(&broker, &mut conn, "R", b"rolled back before the restart");
        u1 = send_half(&broker, &mut conn, "U1", b"committed by its check");
        u2 = send_half(&broker, &mut conn, "U2", b"rolled back by its check");
        end(&broker, &mut conn, c, Outcome::Commit, false).unwrap();
        end(&broker, &mut conn, r, Outcome::Rollback, false).unwrap();
        clock.advance(6_000);
        // One round passes the progress over everything, copying the two unknown ones.
        assert_eq!(check_round(&broker, &mut conn).checks.len(), 2);
        assert!(broker.store.wait_dispatched(Duration::from_secs(10)));
        broker.offsets.persist().unwrap();
        broker.store.shutdown().unwrap();
    }
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    assert!(broker.offsets.query(SYSTEM_GROUP, HALF_TOPIC, 0).unwrap() > u2.half_offset);
    // Answers to the checks sent before the restart name the copies.
    clock.advance(30_000);
    let round = check_round(&broker, &mut conn);
    assert_eq!(round.checks.len(), 2, "the pending copies are checked again after the restart");
    for check in &round.checks {
        let copy = HalfSent { half_offset: check.half_offset, commit_log_offset: check.commit_log_offset };
        let outcome = if check.tx_id == "U1" { Outcome::Commit } else { Outcome::Rollback };
        assert_eq!(
            end(&broker, &mut conn, copy, outcome, true).unwrap(),
            if outcome == Outcome::Commit { Ended::Committed } else { Ended::RolledBack }
        );
    }
    // The originals' late END_TRANSACTIONs change nothing.
    for h in [c, r, u1, u2] {
        let _ = end(&broker, &mut conn, h, Outcome::Commit, false);
    }
    assert_eq!(delivered(&broker), vec![b"committed before the restart".to_vec(), b"committed by its check".to_vec()]);
    clock.advance(600_000);
    assert!(check_round(&broker, &mut conn).checks.is_empty());
}

#[test]
fn a_commit_appended_before_a_crash_without_its_op_is_not_applied_again() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    let h = send_half(&broker, &mut conn, "X", b"committed, op lost");
    // What a broker stopped between the commit and its op record leaves: the real message only.
    let props = "UNIQ_KEY\u{1}X\u{2}PGROUP\u{1}pg\u{2}";
    let commit = MessageToStore {
        topic: "Orders",
        queue_id: 1,
        flag: 0,
        sys_flag: sys_flag::TRANSACTION_COMMIT_TYPE,
        born_timestamp: START,
        born_host: SocketAddr::from(([127, 0, 0, 1], 5000)),
        reconsume_times: 0,
        prepared_tx_offset: h.commit_log_offset,
        body: b"committed, op lost",
        properties: props,
    };
    broker.store.append(&mut conn.appender, &commit).unwrap();
    clock.advance(6_000);
    let round = check_round(&broker, &mut conn);
    assert_eq!((round.checks.len(), round.found_committed), (0, 1), "the producer was asked again");
    // And an answer to an earlier check for it appends nothing either.
    assert!(!matches!(end(&broker, &mut conn, h, Outcome::Commit, true), Ok(Ended::Committed)));
    assert_eq!(delivered(&broker).len(), 1);
}

#[test]
fn ended_and_open_transactions_are_counted_for_prometheus_by_their_real_topic() {
    let clock = ManualClock::new(START);
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), &clock, 15);
    let mut conn = ConnState::default();
    let a = send_half(&broker, &mut conn, "A", b"commit me");
    let b = send_half(&broker, &mut conn, "B", b"roll me back");
    send_half(&broker, &mut conn, "C", b"left open");
    // The check's scan is what learns of half messages (as after a restart).
    check_round(&broker, &mut conn);
    let text = broker.prometheus_text();
    assert!(text.contains("rocketmq_half_messages{") && text.contains("topic=\"Orders\"} 3\n"), "{text}");

    clock.advance(7_000);
    end(&broker, &mut conn, a, Outcome::Commit, false).unwrap();
    end(&broker, &mut conn, b, Outcome::Rollback, false).unwrap();
    // A repeated END_TRANSACTION (a resent one-way frame) counts nothing, whatever it answers.
    let _ = end(&broker, &mut conn, a, Outcome::Commit, false);
    let text = broker.prometheus_text();
    let series = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("topic=\"Orders\""))
            .map(|l| l.rsplit(' ').next().unwrap().to_owned())
    };
    assert_eq!(series("rocketmq_commit_messages_total{").as_deref(), Some("1"), "{text}");
    assert_eq!(series("rocketmq_rollback_messages_total{").as_deref(), Some("1"), "{text}");
    assert_eq!(series("rocketmq_half_messages{").as_deref(), Some("1"), "{text}");
    // Born at START, committed 7 s later: in the 60 s bucket, not the 5 s one.
    assert!(
        text.contains("topic=\"Orders\",le=\"5.0\"} 0\n") && text.contains("topic=\"Orders\",le=\"60.0\"} 1\n"),
        "{text}"
    );
}
