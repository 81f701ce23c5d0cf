//! Appending and reading back: offsets, order, rollover across segments, batches, tag
//! filters, lookups by offset and key, and what survives a clean restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use silo_store::{Appender, GetStatus, Store, TagFilter};

#[test]
fn messages_read_back_in_order_across_segment_rollover_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    let mut expected = Vec::new();
    for i in 0..600u64 {
        let (b, p) = (body(i), props(i));
        let r = store.append(&mut app, &message("TopicTest", (i % 4) as i32, &b, &p)).unwrap();
        assert_eq!(r.queue_offset, (i / 4) as i64, "queue offsets are consecutive per queue");
        expected.push((r.physical_offset, b));
    }
    let (min, max) = store.commit_log_range();
    assert!(max > 3 * 64 * 1024, "several segments were written ({min}..{max})");
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    let check = |store: &Store| {
        for q in 0..4 {
            assert_eq!(store.max_offset_in_queue("TopicTest", q), 150);
            let mut offset = 0;
            while offset < 150 {
                let got = store.get_messages("TopicTest", q, offset, 32, 256 * 1024, TagFilter::All);
                assert_eq!(got.status, GetStatus::Found);
                for m in &got.messages {
                    let i = (m.queue_offset * 4 + q as i64) as usize;
                    let rec = record(m);
                    assert_eq!(rec.body, &expected[i].1[..]);
                    assert_eq!(rec.meta.physical_offset, expected[i].0);
                    assert_eq!(rec.meta.queue_offset, m.queue_offset);
                    assert!(rec.body_crc_matches());
                }
                offset = got.next_begin_offset;
            }
        }
    };
    check(&store);
    store.shutdown().unwrap();
    drop(store);
    let (store, report) = Store::open_with_report(config(dir.path())).unwrap();
    assert!(!report.abnormal);
    assert_eq!(report.truncated_bytes, 0);
    check(&store);
    // Appends continue the queues.
    let (b, p) = (body(600), props(600));
    assert_eq!(store.append(&mut app, &message("TopicTest", 0, &b, &p)).unwrap().queue_offset, 150);
}

#[test]
fn read_statuses_follow_the_java_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    assert_eq!(store.get_messages("T", 0, 0, 32, 1 << 20, TagFilter::All).status, GetStatus::NoMatchedLogicQueue);
    for i in 0..10u64 {
        let (b, p) = (body(i), props(i));
        store.append(&mut app, &message("T", 0, &b, &p)).unwrap();
    }
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    let r = store.get_messages("T", 0, 10, 32, 1 << 20, TagFilter::All);
    assert_eq!((r.status, r.next_begin_offset), (GetStatus::OffsetOverflowOne, 10));
    let r = store.get_messages("T", 0, 12, 32, 1 << 20, TagFilter::All);
    assert_eq!((r.status, r.next_begin_offset), (GetStatus::OffsetOverflowBadly, 10));
    let r = store.get_messages("T", 0, 3, 4, 1 << 20, TagFilter::All);
    assert_eq!((r.status, r.messages.len(), r.next_begin_offset, r.max_offset), (GetStatus::Found, 4, 7, 10));
    // Tag filter: only Tag1 (i % 3 == 1): 1, 4, 7.
    let tag1 = silo_wire::checksum::tags_code(Some("Tag1"));
    let r = store.get_messages("T", 0, 0, 32, 1 << 20, TagFilter::Codes(&[tag1]));
    assert_eq!(r.messages.iter().map(|m| m.queue_offset).collect::<Vec<_>>(), vec![1, 4, 7]);
    let r = store.get_messages("T", 0, 8, 32, 1 << 20, TagFilter::Codes(&[tag1]));
    assert_eq!((r.status, r.next_begin_offset), (GetStatus::NoMatchedMessage, 10));
    // Byte limit: at least one message, then stop before exceeding it.
    let r = store.get_messages("T", 0, 0, 32, 1, TagFilter::All);
    assert_eq!(r.messages.len(), 1);
}

#[test]
fn batches_take_consecutive_offsets_and_never_span_segments() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    let bodies: Vec<Vec<u8>> = (0..32).map(|i| vec![i as u8; 1500]).collect();
    let props: Vec<String> = (0..32).map(props).collect();
    for round in 0..10 {
        let msgs: Vec<_> = (0..32).map(|i| message("Batch", 1, &bodies[i], &props[i])).collect();
        let r = store.append_batch(&mut app, &msgs).unwrap();
        assert_eq!(r.queue_offset, round * 32);
        assert_eq!(r.count, 32);
        let recs = app.batch_records();
        let seg = |o: i64| o / (64 * 1024);
        assert_eq!(seg(recs[0].0), seg(recs[31].0 + recs[31].1 as i64 - 1), "batch within one segment");
    }
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(store.max_offset_in_queue("Batch", 1), 320);
    let r = store.get_messages("Batch", 1, 300, 32, 1 << 20, TagFilter::All);
    assert_eq!(record(&r.messages[0]).body, &bodies[300 % 32][..]);
}

#[test]
fn lookups_by_offset_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    let mut offsets = Vec::new();
    for i in 0..50u64 {
        let (b, p) = (body(i), props(i));
        offsets.push(store.append(&mut app, &message("Keys", 0, &b, &p)).unwrap().physical_offset);
    }
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    let m = store.read_at(offsets[17]).unwrap();
    assert_eq!(record(&m).body, &body(17)[..]);
    assert!(store.read_at(offsets[17] + 1).is_err());
    let found = store.query_by_key("Keys", "key-23", 10, 0, i64::MAX);
    assert_eq!(found.iter().map(|m| m.physical_offset()).collect::<Vec<_>>(), vec![offsets[23]]);
    let found = store.query_by_key("Keys", "order-2", 32, 0, i64::MAX);
    assert_eq!(found.len(), 10);
    let found = store.query_by_key("Keys", &format!("UNIQ{:028}", 42), 32, 0, i64::MAX);
    assert_eq!(found[0].physical_offset(), offsets[42]);
}

#[test]
fn invalid_topics_never_reach_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    for topic in ["../x", "a/b", "", ".."] {
        let err = store.append(&mut app, &message(topic, 0, b"x", "")).unwrap_err();
        assert!(matches!(err, silo_store::StoreError::InvalidTopic(_)), "{topic}: {err}");
    }
    assert!(!dir.path().join("x").exists());
    let too_big = vec![0u8; 5 * 1024 * 1024];
    assert!(store.append(&mut app, &message("T", 0, &too_big, "")).is_err());
}

#[tokio::test]
async fn waiting_for_a_message_is_woken_by_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(Store::open(config(dir.path())).unwrap());
    let s2 = store.clone();
    let waiter = tokio::spawn(async move { s2.wait_for_message("Wait", 2, 0, Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    let (b, p) = (body(1), props(1));
    store.append(&mut Appender::new(), &message("Wait", 2, &b, &p)).unwrap();
    assert!(waiter.await.unwrap());
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!store.wait_for_message("Wait", 2, 1, Duration::from_millis(100)).await, "times out when nothing arrives");
}

#[test]
fn retention_deletes_old_segments_without_breaking_live_read_handles() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    let mut first = None;
    for i in 0..400u64 {
        let (b, p) = (body(i), props(i));
        let r = store.append(&mut app, &message("Old", 0, &b, &p)).unwrap();
        first.get_or_insert(r.physical_offset);
    }
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    let held = store.get_messages("Old", 0, 0, 4, 1 << 20, TagFilter::All).messages;
    let before: Vec<Vec<u8>> = held.iter().map(|m| m.to_vec()).collect();
    let segments = std::fs::read_dir(dir.path().join("commitlog")).unwrap().count();
    // Everything but the active segment is "older than the reserved time" a century from now.
    let later = std::time::SystemTime::now() + Duration::from_secs(100 * 365 * 24 * 3600);
    let deleted = store.delete_expired_files_at(later).unwrap();
    assert!(deleted >= 2, "deleted {deleted} of {segments} segments");
    assert!(!dir.path().join("commitlog").join(format!("{:020}", 0)).exists());
    // The handles still read the same bytes: the mapping outlives the file.
    for (m, bytes) in held.iter().zip(&before) {
        assert_eq!(&m[..], &bytes[..]);
        assert!(record(m).body_crc_matches());
    }
    // New reads start past the deleted records.
    let r = store.get_messages("Old", 0, 0, 4, 1 << 20, TagFilter::All);
    assert_eq!(r.status, GetStatus::OffsetTooSmall);
    assert!(r.next_begin_offset > 0);
    let r = store.get_messages("Old", 0, r.next_begin_offset, 4, 1 << 20, TagFilter::All);
    assert_eq!(r.status, GetStatus::Found);
    assert!(store.read_at(first.unwrap()).is_err());
}

#[test]
fn a_store_directory_cannot_be_opened_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    assert!(matches!(Store::open(config(dir.path())), Err(silo_store::StoreError::Locked(_))));
    drop(store);
    Store::open(config(dir.path())).unwrap();
}

#[test]
fn prepared_and_rolled_back_transaction_records_take_no_queue_offset() {
    use silo_wire::record::sys_flag;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let mut app = Appender::new();
    let mut offsets = Vec::new();
    for flag in [
        0,
        sys_flag::TRANSACTION_PREPARED_TYPE,
        sys_flag::TRANSACTION_COMMIT_TYPE,
        sys_flag::TRANSACTION_ROLLBACK_TYPE,
        0,
    ] {
        let msg = silo_store::MessageToStore { sys_flag: flag, ..message("Tx", 0, b"m", "") };
        offsets.push(store.append(&mut app, &msg).unwrap().queue_offset);
    }
    assert_eq!(offsets, vec![0, 0, 1, 0, 2]);
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(store.max_offset_in_queue("Tx", 0), 3, "no holes: prepared and rollback records are not dispatched");
    drop(store);
    let store = Store::open(config(dir.path())).unwrap();
    assert_eq!(store.next_queue_offset("Tx", 0), 3);
}

#[test]
fn the_store_writes_exactly_the_record_the_codec_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let (b, p) = (body(5), props(5));
    let r = store.append(&mut Appender::new(), &message("Same", 2, &b, &p)).unwrap();
    let stored = store.read_at(r.physical_offset).unwrap();
    let rec = record(&stored);
    let mut expected = Vec::new();
    silo_wire::record::encode_record(
        &rec.meta,
        "Same",
        &b,
        silo_wire::batch::OutgoingProperties::Raw(p.as_bytes()),
        &mut expected,
    )
    .unwrap();
    assert_eq!(&stored[..], &expected[..]);
    assert_eq!(
        (rec.meta.queue_offset, rec.meta.physical_offset, rec.meta.store_timestamp),
        (0, r.physical_offset, r.store_timestamp)
    );
    assert_eq!(rec.meta.store_host, store.config().store_host);
}

#[test]
fn store_timestamps_never_go_backwards_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let last = {
        let store = Store::open(config(dir.path())).unwrap();
        let mut app = Appender::new();
        (0..20).map(|_| store.append(&mut app, &message("Ts", 0, b"m", "")).unwrap().store_timestamp).max().unwrap()
    };
    let store = Store::open(config(dir.path())).unwrap();
    assert!(store.append(&mut Appender::new(), &message("Ts", 0, b"m", "")).unwrap().store_timestamp >= last);
}
