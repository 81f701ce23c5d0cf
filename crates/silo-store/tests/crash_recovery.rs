//! Acknowledged means stored: a child process appending with synchronous flush is killed with
//! SIGKILL at random moments, many times in a row; after each restart every acknowledged
//! message is present and intact, queues have no holes, and nothing torn is visible. Then torn
//! and garbled tails: truncation, flipped bytes, a zeroed last page.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use silo_store::{Appender, FlushMode, GetStatus, Store, StoreConfig, TagFilter};

#[path = "../src/bin/crash_writer.rs"]
#[allow(dead_code)]
mod writer;

const SEGMENT: usize = 64 * 1024;

fn crash_config(root: &Path) -> StoreConfig {
    let mut c = config(root);
    c.commit_log_segment_size = SEGMENT;
    c.flush = FlushMode::Sync { timeout: Duration::from_secs(30) };
    c.enable_multi_dispatch = true;
    c.enable_lmq = true;
    c
}

/// Every message of every queue of `topic`, checked for integrity: seq → queue offset.
fn read_all(store: &Store, topic: &str, queues: i32) -> HashMap<u64, (i32, i64)> {
    let mut seen = HashMap::new();
    for q in 0..queues {
        let (min, max) = (store.min_offset_in_queue(topic, q), store.max_offset_in_queue(topic, q));
        let mut offset = min;
        while offset < max {
            let r = store.get_messages(topic, q, offset, 32, 1 << 20, TagFilter::All);
            assert_eq!(r.status, GetStatus::Found, "queue {q} offset {offset} of {max}");
            for m in &r.messages {
                assert_eq!(m.queue_offset, offset, "no holes in queue {q}");
                let rec = record(m);
                assert!(rec.body_crc_matches(), "intact body");
                assert_eq!(rec.meta.queue_offset, offset);
                let seq: u64 = rec.properties.get("KEYS").unwrap().strip_prefix("seq-").unwrap().parse().unwrap();
                assert_eq!(rec.body, &writer::crash_body(seq)[..], "body of {seq}");
                assert!(seen.insert(seq, (q, offset)).is_none(), "{seq} stored twice");
                offset += 1;
            }
        }
    }
    seen
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

#[test]
fn sigkill_under_load_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    println!("random seed {seed}");
    let mut rng = Lcg(seed);
    let mut acked: BTreeSet<u64> = BTreeSet::new();
    let mut next_seq = 0u64;
    let rounds = 12;
    let mut abnormal_recoveries = 0;
    for round in 0..rounds {
        let mut child = Command::new(env!("CARGO_BIN_EXE_silo-store-crash-writer"))
            .args([dir.path().to_str().unwrap(), &next_seq.to_string(), "4", &SEGMENT.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acks = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(seq) = line.strip_prefix("ACK ") {
                    acks.push(seq.parse::<u64>().unwrap());
                }
            }
            acks
        });
        // Wait until the child acknowledges something, then kill it at a random moment.
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(30 + rng.next(250)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acks = reader.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(60));
        acked.extend(acks.iter().copied());

        let (store, report) = Store::open_with_report(crash_config(dir.path())).unwrap();
        if report.abnormal {
            abnormal_recoveries += 1;
        }
        let seen = read_all(&store, "Crash", 4);
        let missing: Vec<_> = acked.iter().filter(|s| !seen.contains_key(s)).take(10).collect();
        assert!(missing.is_empty(), "round {round}: acknowledged but lost: {missing:?} ({report:?})");
        // The LMQ holds every third message, in commit-log order, without holes.
        let lmq = store.max_offset_in_queue("%LMQ%crash", 0);
        assert_eq!(lmq as usize, seen.keys().filter(|s| *s % 3 == 0).count(), "round {round}: LMQ units");
        assert_eq!(store.next_lmq_offset("%LMQ%crash"), lmq);
        for q in 0..4 {
            assert_eq!(store.next_queue_offset("Crash", q), store.max_offset_in_queue("Crash", q));
        }
        next_seq = seen.keys().max().map_or(next_seq, |m| m + 1).max(next_seq);
        println!(
            "round {round}: {} acked in total, {} stored, recovery {:?}, truncated {} bytes, re-dispatched {}",
            acked.len(),
            seen.len(),
            report.elapsed,
            report.truncated_bytes,
            report.redispatched_records
        );
        store.shutdown().unwrap();
        drop(store);
        // Half the rounds restart the child on a store that crashed (no clean shutdown between).
        if round % 2 == 1 {
            std::fs::write(dir.path().join("abort"), b"simulated").unwrap();
        }
    }
    assert!(acked.len() > 100, "the child acknowledged only {} messages", acked.len());
    assert!(abnormal_recoveries >= rounds / 2);
}

/// Appends 200 messages to a fresh store and closes it without a clean shutdown marker
/// removal check; returns the physical offsets.
fn filled_store(root: &Path) -> Vec<(i64, i32)> {
    let store = Store::open(config(root)).unwrap();
    let mut app = Appender::new();
    let mut out = Vec::new();
    for i in 0..200u64 {
        let (b, p) = (body(i), props(i));
        let r = store.append(&mut app, &message("Torn", (i % 2) as i32, &b, &p)).unwrap();
        out.push((r.physical_offset, r.size));
    }
    store.shutdown().unwrap();
    out
}

/// The segment holding the last record (a pre-allocated empty one may follow it).
fn last_segment(root: &Path, offsets: &[(i64, i32)]) -> std::path::PathBuf {
    let last = offsets.last().unwrap().0;
    root.join("commitlog").join(format!("{:020}", last / SEGMENT as i64 * SEGMENT as i64))
}

fn reopen_and_count(root: &Path) -> (usize, silo_store::RecoveryReport) {
    std::fs::write(root.join("abort"), b"crashed").unwrap();
    let (store, report) = Store::open_with_report(config(root)).unwrap();
    let count = (0..2).map(|q| store.max_offset_in_queue("Torn", q)).sum::<i64>() as usize;
    for q in 0..2 {
        // Everything listed reads back intact.
        let r = store.get_messages("Torn", q, 0, 1000, usize::MAX, TagFilter::All);
        for m in &r.messages {
            assert!(record(m).body_crc_matches());
        }
    }
    // And the store keeps working: append, restart, read.
    let (b, p) = (body(999), props(999));
    let r = store.append(&mut Appender::new(), &message("Torn", 0, &b, &p)).unwrap();
    store.shutdown().unwrap();
    drop(store);
    let store = Store::open(config(root)).unwrap();
    assert_eq!(record(&store.read_at(r.physical_offset).unwrap()).body, &b[..]);
    (count, report)
}

#[test]
fn a_flipped_byte_in_the_last_record_cuts_just_that_record() {
    let dir = tempfile::tempdir().unwrap();
    let offsets = filled_store(dir.path());
    let (last_off, last_size) = *offsets.last().unwrap();
    let path = last_segment(dir.path(), &offsets);
    let seg_start: i64 = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let body_at = (last_off - seg_start) as usize + 100;
    bytes[body_at] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let (count, report) = reopen_and_count(dir.path());
    assert_eq!(count, 199);
    assert_eq!(report.log_end, last_off);
    assert!(report.truncated_bytes >= last_size as u64 - 100);
}

#[test]
fn a_zeroed_last_page_recovers_to_the_last_record_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let offsets = filled_store(dir.path());
    let path = last_segment(dir.path(), &offsets);
    let seg_start: i64 = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
    let end = offsets.last().map(|(o, s)| o + *s as i64).unwrap();
    let page_start = ((end - seg_start - 1) / 4096 * 4096) as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[page_start..page_start + 4096].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let survivors = offsets.iter().filter(|(o, s)| o + *s as i64 <= seg_start + page_start as i64).count();
    let (count, _) = reopen_and_count(dir.path());
    assert_eq!(count, survivors);
}

#[test]
fn a_truncated_last_segment_is_extended_and_recovers_to_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let offsets = filled_store(dir.path());
    let path = last_segment(dir.path(), &offsets);
    let seg_start: i64 = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
    let end = offsets.last().map(|(o, s)| o + *s as i64).unwrap();
    let cut = (end - seg_start) / 2;
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(cut as u64).unwrap();
    let survivors = offsets.iter().filter(|(o, s)| o + *s as i64 <= seg_start + cut).count();
    let (count, _) = reopen_and_count(dir.path());
    assert_eq!(count, survivors);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 64 * 1024, "extended back to a full segment");
}

#[test]
fn a_garbage_tail_after_the_last_record_is_never_read_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let offsets = filled_store(dir.path());
    let path = last_segment(dir.path(), &offsets);
    let seg_start: i64 = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
    let end = (offsets.last().map(|(o, s)| o + *s as i64).unwrap() - seg_start) as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    // A stale copy of a valid record just past the end, as a previous life might leave.
    let first = (offsets[offsets.len() - 1].0 - seg_start) as usize;
    let copy = bytes[first..end].to_vec();
    bytes[end..end + copy.len()].copy_from_slice(&copy);
    bytes[end] ^= 0x01; // its size field no longer matches: invalid
    std::fs::write(&path, &bytes).unwrap();
    let (count, report) = reopen_and_count(dir.path());
    assert_eq!(count, 200);
    assert!(report.truncated_bytes > 0);
    // The stale bytes were zeroed: nothing after the end of the log but zeros and new data.
    let after = std::fs::read(&path).unwrap();
    assert!(after[end + copy.len()..end + copy.len() + 64].iter().all(|b| *b == 0));
}

#[test]
fn a_damaged_consume_queue_unit_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    filled_store(dir.path());
    let cq = dir.path().join("consumequeue/Torn/0").join(format!("{:020}", 0));
    let mut bytes = std::fs::read(&cq).unwrap();
    bytes[20 * 10 + 8..20 * 10 + 12].copy_from_slice(&(-5i32).to_be_bytes());
    std::fs::write(&cq, &bytes).unwrap();
    let (store, report) = Store::open_with_report(config(dir.path())).unwrap();
    assert_eq!(report.rebuilt_queues, 1);
    assert_eq!(store.max_offset_in_queue("Torn", 0), 100);
    let r = store.get_messages("Torn", 0, 10, 1, usize::MAX, TagFilter::All);
    assert_eq!(record(&r.messages[0]).body, &body(20)[..]);
}

#[test]
fn a_config_file_that_is_not_json_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("topics.json");
    std::fs::write(&path, b"\x00\x01 definitely not json").unwrap();
    let err = silo_store::config_file::read_json::<serde_json::Value>(&silo_store::fs::RealFs, &path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("topics.json"), "{err}");
}
