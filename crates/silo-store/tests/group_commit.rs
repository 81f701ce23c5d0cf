//! Synchronous flush with group commit: an append is released only once an fsync covers it,
//! and one fsync serves every waiter that arrived meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use silo_store::{Appender, FlushMode, Store};

#[test]
fn one_fsync_serves_many_waiters_and_nobody_is_released_early() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.flush = FlushMode::Sync { timeout: Duration::from_secs(10) };
    let store = Arc::new(Store::open(c).unwrap());
    let writers = 16;
    let per_writer = 50;
    std::thread::scope(|s| {
        for w in 0..writers {
            let store = &store;
            s.spawn(move || {
                let mut app = Appender::new();
                for i in 0..per_writer {
                    let (b, p) = (body(i), props(i));
                    let r = store.append(&mut app, &message("Sync", w, &b, &p)).unwrap();
                    store.wait_durable(r.end_offset).unwrap();
                    assert!(store.flushed_offset() >= r.end_offset, "released before an fsync covered it");
                }
            });
        }
    });
    let appends = writers as u64 * per_writer;
    let rounds = store.flush_rounds();
    println!("{appends} synchronous appends, {rounds} flushes");
    assert!(rounds < appends / 2, "group commit: {rounds} flushes for {appends} appends");
}

#[test]
fn async_flush_acknowledges_at_once_and_flushes_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(config(dir.path())).unwrap();
    let r = store.append(&mut Appender::new(), &message("Async", 0, b"m", "")).unwrap();
    store.wait_durable(r.end_offset).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while store.flushed_offset() < r.end_offset {
        assert!(std::time::Instant::now() < deadline, "the background flush never came");
        std::thread::sleep(Duration::from_millis(5));
    }
}
