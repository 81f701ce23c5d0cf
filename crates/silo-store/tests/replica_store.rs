//! A replica store holds its master's commit log byte for byte, at the master's offsets, and
//! builds its own consume queues from it; it refuses bytes that do not continue what it holds
//! and keeps its data; a synchronous master acknowledges only what a slave confirmed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::time::Duration;

use common::{body, config, message, props};
use silo_store::{Appender, ReplicaError, Store, StoreError, SyncReplication, TagFilter};

const TOPIC: &str = "ReplicatedTopic";

fn fill(master: &Store, from: u64, count: u64) {
    let mut app = Appender::new();
    for i in from..from + count {
        let (b, p) = (body(i), props(i));
        master.append(&mut app, &message(TOPIC, (i % 4) as i32, &b, &p)).unwrap();
    }
}

/// Ships the master's log from `from` to `replica` in pieces of the given sizes (cycled),
/// as the HA stream does: never across a segment, freely inside records.
fn ship(master: &Store, replica: &Store, mut from: i64, pieces: &[usize]) -> i64 {
    let mut sizes = pieces.iter().cycle();
    while let Some(slice) = master.log_slice(from, *sizes.next().unwrap()) {
        let held = replica.append_replicated(from, &slice).unwrap();
        from += slice.len() as i64;
        assert_eq!(held, from);
    }
    from
}

/// The log's bytes below `end`, per segment (a segment prepared ahead of need is not data).
fn segment_bytes(dir: &std::path::Path, end: i64) -> Vec<(u64, Vec<u8>)> {
    let mut files: Vec<(u64, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some((p.file_name()?.to_str()?.parse::<u64>().ok()?, p)))
        .filter(|(start, _)| (*start as i64) < end)
        .map(|(start, p)| {
            let mut bytes = std::fs::read(&p).unwrap();
            bytes.truncate((end as u64 - start).min(bytes.len() as u64) as usize);
            (start, bytes)
        })
        .collect();
    files.sort();
    files
}

fn messages(store: &Store, queue: i32, from: i64) -> Vec<Vec<u8>> {
    assert!(store.wait_dispatched(Duration::from_secs(10)));
    let got = store.get_messages(TOPIC, queue, from, 10_000, usize::MAX, TagFilter::All);
    got.messages.iter().map(|m| m.to_vec()).collect()
}

#[test]
fn a_replica_holds_the_masters_log_byte_for_byte_and_serves_the_same_messages() {
    let (m_dir, r_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Store::open(config(m_dir.path())).unwrap();
    let replica = Store::open(config(r_dir.path())).unwrap();
    replica.set_following(true);
    // Several 64 KiB segments, each ended by the blank padding.
    fill(&master, 0, 1500);
    let end = ship(&master, &replica, 0, &[32 * 1024, 7, 1000, 91, 4096]);
    assert_eq!(end, master.commit_log_range().1);
    assert!(end > 3 * 64 * 1024, "the test needs several segments");
    assert_eq!(replica.commit_log_range(), master.commit_log_range());
    let (ours, theirs) =
        (segment_bytes(&r_dir.path().join("commitlog"), end), segment_bytes(&m_dir.path().join("commitlog"), end));
    assert_eq!(ours.len(), theirs.len());
    assert!(ours == theirs, "the replica's log differs from the master's");
    for q in 0..4 {
        assert_eq!(messages(&replica, q, 0), messages(&master, q, 0), "queue {q}");
        assert_eq!(replica.max_offset_in_queue(TOPIC, q), master.max_offset_in_queue(TOPIC, q));
    }
    // Found by key, as on the master.
    assert_eq!(replica.query_by_key(TOPIC, "key-77", 4, 0, i64::MAX).len(), 1);
}

#[test]
fn a_new_replica_starts_at_the_masters_last_segment_and_continues_after_a_restart() {
    let (m_dir, r_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Store::open(config(m_dir.path())).unwrap();
    fill(&master, 0, 700);
    let max = master.commit_log_range().1;
    let start = max - max % (64 * 1024);
    assert!(start > 0);
    let queue0_from = {
        let replica = Store::open(config(r_dir.path())).unwrap();
        replica.set_following(true);
        // An empty replica refuses a start inside a segment.
        match replica.append_replicated(start + 100, b"x") {
            Err(ReplicaError::Unaligned { .. }) => {}
            other => panic!("{other:?}"),
        }
        // A record cut in two is held but not visible until its rest arrives.
        let first = master.log_slice(start, 50).unwrap();
        assert_eq!(replica.append_replicated(start, &first).unwrap(), start + 50);
        assert_eq!(replica.commit_log_range(), (start, start));
        assert_eq!(replica.replica_held(), start + 50);
        ship(&master, &replica, start + 50, &[333]);
        assert_eq!(replica.commit_log_range(), (start, max));
        assert!(replica.wait_dispatched(Duration::from_secs(5)));
        let from = replica.min_offset_in_queue(TOPIC, 0);
        assert!(from > 0, "the replica's queue starts where its log does");
        assert_eq!(messages(&replica, 0, from), messages(&master, 0, from));
        replica.shutdown().unwrap();
        from
    };
    fill(&master, 700, 300);
    let replica = Store::open(config(r_dir.path())).unwrap();
    replica.set_following(true);
    assert_eq!(replica.replica_held(), max, "a reopened replica continues from what it holds");
    ship(&master, &replica, max, &[32 * 1024]);
    assert_eq!(replica.commit_log_range().1, master.commit_log_range().1);
    assert_eq!(messages(&replica, 0, queue0_from), messages(&master, 0, queue0_from));
}

#[test]
fn a_record_half_received_when_the_replica_stops_is_asked_for_again_and_never_read_torn() {
    let (m_dir, r_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Store::open(config(m_dir.path())).unwrap();
    fill(&master, 0, 50);
    let end = master.commit_log_range().1;
    let whole = {
        let replica = Store::open(config(r_dir.path())).unwrap();
        replica.set_following(true);
        // Everything but the last record, then half of it.
        assert!(master.wait_dispatched(Duration::from_secs(10)));
        // Message 49, the last appended, is queue 1's offset 12.
        let last_start = master.get_messages(TOPIC, 1, 12, 1, usize::MAX, TagFilter::All).messages[0].physical_offset();
        let before = ship_until(&master, &replica, 0, last_start);
        let half = master.log_slice(before, 40).unwrap();
        assert_eq!(replica.append_replicated(before, &half).unwrap(), before + 40);
        assert_eq!(replica.commit_log_range().1, before);
        // Stopped with the half record in its file.
        replica.shutdown().unwrap();
        before
    };
    let replica = Store::open(config(r_dir.path())).unwrap();
    replica.set_following(true);
    assert_eq!(replica.replica_held(), whole, "the half record is not held after a restart");
    assert_eq!(replica.commit_log_range().1, whole);
    ship(&master, &replica, whole, &[1000]);
    assert_eq!(replica.commit_log_range().1, end);
    assert_eq!(messages(&replica, 1, 0), messages(&master, 1, 0));
}

/// Ships from `from` up to `to` (a record boundary) in pieces of 333 bytes.
fn ship_until(master: &Store, replica: &Store, mut from: i64, to: i64) -> i64 {
    while from < to {
        let slice = master.log_slice(from, (to - from).min(333) as usize).unwrap();
        replica.append_replicated(from, &slice).unwrap();
        from += slice.len() as i64;
    }
    from
}

#[test]
fn a_replica_refuses_what_does_not_continue_its_log_and_keeps_its_data() {
    let (m_dir, r_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Store::open(config(m_dir.path())).unwrap();
    let replica = Store::open(config(r_dir.path())).unwrap();
    fill(&master, 0, 100);
    // Not following: the master's bytes are refused; following: local messages are.
    assert!(matches!(replica.append_replicated(0, b"x"), Err(ReplicaError::NotFollowing)));
    replica.set_following(true);
    let (b, p) = (body(1), props(1));
    assert!(matches!(replica.append(&mut Appender::new(), &message(TOPIC, 0, &b, &p)), Err(StoreError::Replica)));
    let end = ship(&master, &replica, 0, &[4096]);
    let before = messages(&replica, 1, 0);
    // A piece that does not start at the held end.
    match replica.append_replicated(end + 8, b"whatever") {
        Err(ReplicaError::OffsetMismatch { offered, held }) => assert_eq!((offered, held), (end + 8, end)),
        other => panic!("{other:?}"),
    }
    // Garbage at the right offset: not a record.
    match replica.append_replicated(end, &[0x5a; 200]) {
        Err(ReplicaError::NotARecord { offset, .. }) => assert_eq!(offset, end),
        other => panic!("{other:?}"),
    }
    // A record copied from elsewhere in the log names another physical offset.
    let elsewhere = master.read_at(0).unwrap().to_vec();
    assert!(matches!(replica.append_replicated(end, &elsewhere), Err(ReplicaError::NotARecord { .. })));
    assert_eq!(replica.replica_held(), end);
    assert_eq!(replica.commit_log_range().1, end);
    assert_eq!(messages(&replica, 1, 0), before);
    // The real continuation is still taken.
    fill(&master, 100, 10);
    ship(&master, &replica, end, &[100]);
    assert_eq!(replica.commit_log_range().1, master.commit_log_range().1);
}

#[test]
fn a_replica_longer_than_its_master_is_cut_back_to_the_masters_end() {
    let (m_dir, r_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = Store::open(config(m_dir.path())).unwrap();
    let replica = Store::open(config(r_dir.path())).unwrap();
    replica.set_following(true);
    fill(&master, 0, 200);
    let end = ship(&master, &replica, 0, &[32 * 1024]);
    assert!(replica.wait_dispatched(Duration::from_secs(5)));
    let before = replica.max_offset_in_queue(TOPIC, 2);
    // The master "lost" its last records: cut the replica to an earlier record boundary.
    let cut = replica.get_messages(TOPIC, 2, 10, 1, usize::MAX, TagFilter::All).messages[0].physical_offset();
    replica.truncate_replica(cut).unwrap();
    assert_eq!(replica.commit_log_range().1, cut);
    assert_eq!(replica.replica_held(), cut);
    assert!(replica.wait_dispatched(Duration::from_secs(5)));
    let after = replica.max_offset_in_queue(TOPIC, 2);
    assert!(after < before, "queue units past the cut are gone ({after} vs {before})");
    for m in replica.get_messages(TOPIC, 2, 0, 10_000, usize::MAX, TagFilter::All).messages {
        assert!(m.physical_offset() < cut);
    }
    // And it follows again from there.
    let end2 = ship(&master, &replica, cut, &[1000]);
    assert_eq!(end2, end);
    assert!(replica.wait_dispatched(Duration::from_secs(5)));
    assert_eq!(replica.max_offset_in_queue(TOPIC, 2), before);
}

fn sync_master(dir: &std::path::Path, timeout: Duration) -> Store {
    let mut c = config(dir);
    c.commit_log_segment_size = 4 << 20;
    c.sync_replication = Some(SyncReplication { timeout, max_gap: 1 << 20 });
    Store::open(c).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_master_acknowledges_what_a_slave_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let master = sync_master(dir.path(), Duration::from_millis(300));
    let (b, p) = (body(1), props(1));
    let mut app = Appender::new();
    let put = master.append(&mut app, &message(TOPIC, 0, &b, &p)).unwrap();
    // No slave: answered at once.
    let t = std::time::Instant::now();
    assert!(matches!(master.durable(put.end_offset).await, Err(StoreError::ReplicaNotAvailable)));
    assert!(t.elapsed() < Duration::from_millis(250));
    // A slave connected but silent: the wait runs out.
    master.replica_connected(true);
    assert!(matches!(master.durable(put.end_offset).await, Err(StoreError::ReplicaTimeout(_))));
    // Confirmed while waiting: acknowledged.
    let put = master.append(&mut app, &message(TOPIC, 0, &b, &p)).unwrap();
    let confirm = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        master.replica_confirmed(put.end_offset);
    };
    let (acked, ()) = tokio::join!(master.durable(put.end_offset), confirm);
    acked.unwrap();
    // A slave too far behind counts as not available.
    let big = vec![7u8; 600 * 1024];
    master.append(&mut app, &message(TOPIC, 0, &big, &p)).unwrap();
    let put = master.append(&mut app, &message(TOPIC, 0, &big, &p)).unwrap();
    assert!(matches!(master.durable(put.end_offset).await, Err(StoreError::ReplicaNotAvailable)));
    master.replica_connected(false);
}
