//! The steady-state append path allocates nothing, with or without LMQ offsets: a counting
//! global allocator fails this test on a regression.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use silo_store::{Appender, FlushMode, Store};

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

fn allocations(f: impl FnOnce()) -> u64 {
    let before = silo_alloc_count::this_thread();
    f();
    silo_alloc_count::this_thread().since(before).allocs
}

fn steady_state_allocations(props: &str, lmq: bool) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.commit_log_segment_size = 8 << 20;
    c.enable_multi_dispatch = lmq;
    c.enable_lmq = lmq;
    c.flush = FlushMode::Async {
        interval: Duration::from_secs(3600),
        least_pages: 1 << 20,
        thorough_interval: Duration::from_secs(3600),
    };
    let store = Store::open(c).unwrap();
    let mut app = Appender::new();
    let body = vec![42u8; 1024];
    let msg = message("NoAlloc", 1, &body, props);
    // Warm up: the first append creates the segment, the queue's offset entry, the LMQ entries
    // and grows the appender's scratch space.
    for _ in 0..10 {
        store.append(&mut app, &msg).unwrap();
    }
    let n = allocations(|| {
        for _ in 0..2000 {
            store.append(&mut app, &msg).unwrap();
        }
    });
    store.shutdown().unwrap();
    n
}

#[test]
fn appending_allocates_nothing_in_steady_state() {
    let props = "UNIQ_KEY\u{1}7F0000010B5A1B2C3D4E000000000001\u{2}TAGS\u{1}TagA\u{2}KEYS\u{1}k\u{2}WAIT\u{1}true\u{2}";
    assert_eq!(steady_state_allocations(props, false), 0);
}

#[test]
fn lmq_appends_allocate_nothing_in_steady_state() {
    for list in ["%LMQ%one", "%LMQ%a,%LMQ%b,%LMQ%c,%LMQ%d"] {
        let props = format!("TAGS\u{1}TagA\u{2}INNER_MULTI_DISPATCH\u{1}{list}\u{2}WAIT\u{1}true\u{2}");
        assert_eq!(steady_state_allocations(&props, true), 0, "{list}");
    }
}
