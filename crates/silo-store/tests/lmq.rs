//! LMQ multi-dispatch (spec section 5) and the regression list of apache/rocketmq PR #10814:
//! mixed queue names, LMQ disabled, the exact stored property bytes, the END_OF_FILE retry,
//! and offsets that advance exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use silo_store::{Appender, GetStatus, Store, StoreConfig, StoreError, TagFilter};

fn lmq_config(root: &std::path::Path) -> StoreConfig {
    let mut c = config(root);
    c.enable_multi_dispatch = true;
    c.enable_lmq = true;
    c
}

fn stored_props(store: &Store, phys: i64) -> String {
    let m = store.read_at(phys).unwrap();
    record(&m).properties.as_str().to_owned()
}

fn lmq_offsets_of(store: &Store, name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = store.get_messages(name, 0, offset, 32, 1 << 20, TagFilter::All);
        if r.status != GetStatus::Found {
            return out;
        }
        out.extend(r.messages.iter().map(|m| m.physical_offset()));
        offset = r.next_begin_offset;
    }
}

#[test]
fn stored_properties_carry_the_assigned_offsets_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    let props = "WAIT\u{1}true\u{2}INNER_MULTI_DISPATCH\u{1}%LMQ%a,%LMQ%b\u{2}TAGS\u{1}t\u{2}";
    let r0 = store.append(&mut app, &message("Parent", 0, b"one", props)).unwrap();
    let r1 = store.append(&mut app, &message("Parent", 1, b"two", props)).unwrap();
    assert_eq!(
        stored_props(&store, r0.physical_offset),
        "WAIT\u{1}true\u{2}INNER_MULTI_DISPATCH\u{1}%LMQ%a,%LMQ%b\u{2}TAGS\u{1}t\u{2}INNER_MULTI_QUEUE_OFFSET\u{1}0,0\u{2}"
    );
    assert!(stored_props(&store, r1.physical_offset).ends_with("INNER_MULTI_QUEUE_OFFSET\u{1}1,1\u{2}"));
    assert_eq!((store.next_lmq_offset("%LMQ%a"), store.next_lmq_offset("%LMQ%b")), (2, 2));
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(lmq_offsets_of(&store, "%LMQ%a"), vec![r0.physical_offset, r1.physical_offset]);
    assert_eq!(lmq_offsets_of(&store, "%LMQ%b"), vec![r0.physical_offset, r1.physical_offset]);
    // The parent queues are dispatched as usual.
    assert_eq!(store.max_offset_in_queue("Parent", 0), 1);
    // A client cannot forge the broker's offsets, and a separator-less tail is repaired.
    let forged = "INNER_MULTI_QUEUE_OFFSET\u{1}999\u{2}INNER_MULTI_DISPATCH\u{1}%LMQ%a";
    let r2 = store.append(&mut app, &message("Parent", 0, b"three", forged)).unwrap();
    assert_eq!(
        stored_props(&store, r2.physical_offset),
        "INNER_MULTI_DISPATCH\u{1}%LMQ%a\u{2}INNER_MULTI_QUEUE_OFFSET\u{1}2\u{2}"
    );
}

#[test]
fn mixed_lists_dispatch_every_lmq_and_skip_other_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    // A plain name in the middle and an empty element at the end: Java's split loses these.
    let props = "INNER_MULTI_DISPATCH\u{1}%LMQ%x,plain,%LMQ%y,\u{2}";
    let mut phys = Vec::new();
    for _ in 0..3 {
        phys.push(store.append(&mut app, &message("Parent", 0, b"m", props)).unwrap().physical_offset);
    }
    assert!(stored_props(&store, phys[2]).ends_with("INNER_MULTI_QUEUE_OFFSET\u{1}2,,2,\u{2}"));
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(lmq_offsets_of(&store, "%LMQ%x"), phys);
    assert_eq!(lmq_offsets_of(&store, "%LMQ%y"), phys);
    assert_eq!(store.max_offset_in_queue("plain", 0), 0, "a non-LMQ name gets no units");
}

#[test]
fn with_lmq_disabled_slots_are_empty_and_nothing_is_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = lmq_config(dir.path());
    c.enable_lmq = false;
    let store = Store::open(c).unwrap();
    let mut app = Appender::new();
    let props = "INNER_MULTI_DISPATCH\u{1}%LMQ%a,%LMQ%b\u{2}";
    let r = store.append(&mut app, &message("Parent", 0, b"m", props)).unwrap();
    assert!(stored_props(&store, r.physical_offset).ends_with("INNER_MULTI_QUEUE_OFFSET\u{1},\u{2}"));
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(store.max_offset_in_queue("%LMQ%a", 0), 0);
    // Multi-dispatch off: the properties are stored verbatim.
    let dir = tempfile::tempdir().unwrap();
    let mut c = lmq_config(dir.path());
    c.enable_multi_dispatch = false;
    let store = Store::open(c).unwrap();
    let r = store.append(&mut app, &message("Parent", 0, b"m", props)).unwrap();
    assert_eq!(stored_props(&store, r.physical_offset), props);
}

#[test]
fn retry_and_system_topics_are_not_multi_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    let props = "INNER_MULTI_DISPATCH\u{1}%LMQ%a\u{2}";
    for topic in ["%RETRY%group", "%DLQ%group", "rmq_sys_x", "SCHEDULE_TOPIC_XXXX"] {
        let r = store.append(&mut app, &message(topic, 0, b"m", props)).unwrap();
        assert_eq!(stored_props(&store, r.physical_offset), props, "{topic}");
    }
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(store.max_offset_in_queue("%LMQ%a", 0), 0);
}

#[test]
fn lmq_names_that_could_escape_the_store_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    for bad in ["%LMQ%../../x", "%LMQ%a/b", "%LMQ%a\\b", "%LMQ%."] {
        let props = format!("INNER_MULTI_DISPATCH\u{1}%LMQ%ok,{bad}\u{2}");
        let err = store.append(&mut app, &message("Parent", 0, b"m", &props)).unwrap_err();
        assert!(matches!(err, StoreError::InvalidLmqName(_)), "{bad}: {err}");
    }
    assert_eq!(store.next_lmq_offset("%LMQ%ok"), 0, "a rejected message advances nothing");
    assert_eq!(store.next_queue_offset("Parent", 0), 0);
}

#[test]
fn an_end_of_file_retry_keeps_the_offsets_and_advances_them_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    let seg = store.config().commit_log_segment_size as i64;
    let props = "INNER_MULTI_DISPATCH\u{1}%LMQ%eof\u{2}";
    let big = vec![7u8; 9000];
    let mut last = None;
    let mut crossed = false;
    for i in 0..40 {
        let before = (store.next_queue_offset("Parent", 0), store.next_lmq_offset("%LMQ%eof"));
        let r = store.append(&mut app, &message("Parent", 0, &big, props)).unwrap();
        assert_eq!((r.queue_offset, before.0), (i, i));
        assert_eq!(store.next_lmq_offset("%LMQ%eof"), before.1 + 1, "exactly one increment per stored record");
        assert!(
            stored_props(&store, r.physical_offset)
                .ends_with(&format!("INNER_MULTI_QUEUE_OFFSET\u{1}{}\u{2}", before.1))
        );
        if let Some(prev) = last
            && r.physical_offset % seg == 0
            && r.physical_offset > prev
        {
            crossed = true;
            // The previous segment ends with the blank marker.
            let blank_at = store.read_at(prev).unwrap().physical_offset() + store.read_at(prev).unwrap().len() as i64;
            assert!(store.read_at(blank_at).is_err(), "padding is not a record");
        }
        last = Some(r.physical_offset);
    }
    assert!(crossed, "the test wrote across segment ends");
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    let lmq = lmq_offsets_of(&store, "%LMQ%eof");
    assert_eq!(lmq.len(), 40);
    assert!(lmq.windows(2).all(|w| w[0] < w[1]), "LMQ order is commit-log order");
}

#[test]
fn lmq_offsets_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let props = "INNER_MULTI_DISPATCH\u{1}%LMQ%keep\u{2}";
    {
        let store = Store::open(lmq_config(dir.path())).unwrap();
        let mut app = Appender::new();
        for _ in 0..5 {
            store.append(&mut app, &message("Parent", 0, b"m", props)).unwrap();
        }
    }
    let store = Store::open(lmq_config(dir.path())).unwrap();
    assert_eq!(store.next_lmq_offset("%LMQ%keep"), 5);
    let r = store.append(&mut Appender::new(), &message("Parent", 0, b"m", props)).unwrap();
    assert!(stored_props(&store, r.physical_offset).ends_with("INNER_MULTI_QUEUE_OFFSET\u{1}5\u{2}"));
}

#[test]
fn a_forged_offset_list_in_a_batch_cannot_plant_lmq_units() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(lmq_config(dir.path())).unwrap();
    let mut app = Appender::new();
    let forged = "INNER_MULTI_DISPATCH\u{1}%LMQ%f\u{2}INNER_MULTI_QUEUE_OFFSET\u{1}7\u{2}";
    let msgs = [message("Parent", 0, b"a", forged), message("Parent", 0, b"b", forged)];
    let r = store.append_batch(&mut app, &msgs).unwrap();
    assert_eq!(stored_props(&store, r.physical_offset), "INNER_MULTI_DISPATCH\u{1}%LMQ%f\u{2}");
    // A real LMQ message afterwards gets offset 0 and is dispatched.
    let real = store.append(&mut app, &message("Parent", 0, b"c", "INNER_MULTI_DISPATCH\u{1}%LMQ%f\u{2}")).unwrap();
    assert!(store.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(lmq_offsets_of(&store, "%LMQ%f"), vec![real.physical_offset]);
}
