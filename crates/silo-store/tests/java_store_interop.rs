//! A store directory written by Apache RocketMQ 5.3.3's own `DefaultMessageStore` opens in
//! Silo with every message read back (by queue, by offset, by key, through LMQs), and a
//! directory written by Silo opens in the Java store with every message read back, after a
//! clean shutdown and after a crash. The Java side is `interop/java/store-tool.sh`, which
//! drives the real store from the Maven Central jars.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use silo_store::{Appender, GetStatus, MessageToStore, Store, StoreConfig, TagFilter};

fn tool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/java/store-tool.sh")
}

fn run_tool(args: &[&str]) -> String {
    let out = Command::new("bash").arg(tool()).args(args).output().expect("run store-tool.sh (needs Java and Maven)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "store-tool.sh {args:?} failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The sizes both sides use: 64 KiB segments, 1000-unit consume-queue files, a 5000-slot
/// index, LMQ on.
fn interop_config(root: &Path) -> StoreConfig {
    let mut c = config(root);
    c.enable_multi_dispatch = true;
    c.enable_lmq = true;
    c
}

struct Entry {
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    commit_log_offset: i64,
    body: Vec<u8>,
    tags: String,
    keys: String,
    uniq: String,
    lmq: Option<String>,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn read_manifest(path: &Path) -> Vec<Entry> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Entry {
                topic: f[0].into(),
                queue_id: f[1].parse().unwrap(),
                queue_offset: f[2].parse().unwrap(),
                commit_log_offset: f[3].parse().unwrap(),
                body: unhex(f[4]),
                tags: f[5].into(),
                keys: f[6].into(),
                uniq: f[7].into(),
                lmq: (f[8] != "-").then(|| f[8].to_owned()),
            }
        })
        .collect()
}

fn write_manifest(path: &Path, entries: &[Entry]) {
    let text: String = entries
        .iter()
        .map(|e| {
            format!(
                "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                e.topic,
                e.queue_id,
                e.queue_offset,
                e.commit_log_offset,
                hex(&e.body),
                e.tags,
                e.keys,
                e.uniq,
                e.lmq.as_deref().unwrap_or("-")
            )
        })
        .collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_store_written_by_java_opens_in_silo() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let manifest = dir.path().join("manifest");
    let out = run_tool(&["write", root.to_str().unwrap(), manifest.to_str().unwrap(), "--count", "500", "--lmq"]);
    println!("{out}");
    let entries = read_manifest(&manifest);
    assert_eq!(entries.len(), 500);

    let (store, report) = Store::open_with_report(interop_config(&root)).unwrap();
    assert!(!report.abnormal, "Java shut down cleanly");
    assert!(store.wait_dispatched(Duration::from_secs(10)));
    for e in &entries {
        let r = store.get_messages(&e.topic, e.queue_id, e.queue_offset, 1, 1 << 20, TagFilter::All);
        assert_eq!(r.status, GetStatus::Found, "{} {} {}", e.topic, e.queue_id, e.queue_offset);
        let m = &r.messages[0];
        assert_eq!(m.physical_offset(), e.commit_log_offset);
        let rec = record(m);
        assert_eq!(rec.topic, e.topic);
        assert_eq!(rec.body, &e.body[..]);
        assert!(rec.body_crc_matches());
        assert_eq!(rec.properties.get("TAGS"), Some(e.tags.as_str()));
        assert_eq!(rec.properties.get("KEYS"), Some(e.keys.as_str()));
        assert_eq!(rec.properties.get("UNIQ_KEY"), Some(e.uniq.as_str()));
        assert_eq!(store.read_at(e.commit_log_offset).unwrap().physical_offset(), e.commit_log_offset);
    }
    // Queue sizes, LMQs in commit-log order, and the Java-written index.
    for e in &entries {
        let count = entries.iter().filter(|x| x.topic == e.topic && x.queue_id == e.queue_id).count();
        assert_eq!(store.max_offset_in_queue(&e.topic, e.queue_id), count as i64);
    }
    for lmq in ["%LMQ%lmq-a", "%LMQ%lmq-b"] {
        let expected: Vec<i64> = entries
            .iter()
            .filter(|e| e.lmq.as_deref().is_some_and(|l| l.split(',').any(|n| n == lmq)))
            .map(|e| e.commit_log_offset)
            .collect();
        let r = store.get_messages(lmq, 0, 0, 1000, usize::MAX, TagFilter::All);
        let got: Vec<i64> = r.messages.iter().map(|m| m.physical_offset()).collect();
        assert_eq!(got, expected, "{lmq}");
        assert_eq!(store.next_lmq_offset(lmq), expected.len() as i64);
    }
    for e in entries.iter().step_by(7) {
        let key = e.keys.split(' ').next().unwrap();
        let found = store.query_by_key(&e.topic, key, 32, 0, i64::MAX);
        assert!(found.iter().any(|m| m.physical_offset() == e.commit_log_offset), "key {key}");
        let found = store.query_by_key(&e.topic, &e.uniq, 32, 0, i64::MAX);
        assert!(found.iter().any(|m| m.physical_offset() == e.commit_log_offset), "uniq {}", e.uniq);
    }
    // Silo goes on appending to the Java store.
    let (b, p) = (body(1), props(1));
    let r = store.append(&mut Appender::new(), &message("InteropTopic", 0, &b, &p)).unwrap();
    let q0 = entries.iter().filter(|e| e.topic == "InteropTopic" && e.queue_id == 0).count() as i64;
    assert_eq!(r.queue_offset, q0);
}

/// Writes the same kind of messages the Java tool writes, and their manifest.
fn silo_writes(root: &Path, manifest: &Path, count: u64) -> Store {
    let store = Store::open(interop_config(root)).unwrap();
    let mut app = Appender::new();
    let long_topic = "x".repeat(200);
    let mut entries = Vec::new();
    for i in 0..count {
        let (topic, queue_id) = match i {
            i if i % 100 == 42 => (long_topic.as_str(), 0),
            i if i % 7 == 3 => ("InteropOther", 0),
            i => ("InteropTopic", (i % 4) as i32),
        };
        let body = format!("silo message {i} ").repeat(1 + (i % 40) as usize).into_bytes();
        let tags = format!("Tag{}", i % 3);
        let keys = format!("key-{i} order-{}", i / 10);
        let uniq = format!("{:032X}", 0xABCD_0000_0000u64 + i);
        let lmq = (i % 5 == 0).then(|| "%LMQ%lmq-a,%LMQ%lmq-b".to_owned());
        let mut props = format!("TAGS\u{1}{tags}\u{2}KEYS\u{1}{keys}\u{2}UNIQ_KEY\u{1}{uniq}\u{2}WAIT\u{1}true\u{2}");
        if let Some(l) = &lmq {
            props.push_str(&format!("INNER_MULTI_DISPATCH\u{1}{l}\u{2}"));
        }
        let msg = MessageToStore {
            topic,
            queue_id,
            flag: 0,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000 + i as i64,
            born_host: BORN,
            reconsume_times: 0,
            prepared_tx_offset: 0,
            body: &body,
            properties: &props,
        };
        let r = store.append(&mut app, &msg).unwrap();
        entries.push(Entry {
            topic: topic.into(),
            queue_id,
            queue_offset: r.queue_offset,
            commit_log_offset: r.physical_offset,
            body,
            tags,
            keys,
            uniq,
            lmq,
        });
    }
    assert!(store.wait_dispatched(Duration::from_secs(10)));
    write_manifest(manifest, &entries);
    store
}

#[test]
fn a_store_written_by_silo_opens_in_java() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let manifest = dir.path().join("manifest");
    let store = silo_writes(&root, &manifest, 500);
    store.shutdown().unwrap();
    drop(store);
    let out = run_tool(&["verify", root.to_str().unwrap(), manifest.to_str().unwrap(), "--check-index", "--lmq"]);
    assert!(out.contains("verified 500 messages"), "{out}");
}

#[test]
fn a_crashed_silo_store_recovers_in_java() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let manifest = dir.path().join("manifest");
    let store = silo_writes(&root, &manifest, 300);
    store.shutdown().unwrap();
    drop(store);
    // As if the process had died: the abort marker is still there, so Java recovers
    // abnormally, re-dispatching from what Silo's checkpoint says.
    std::fs::write(root.join("abort"), b"12345").unwrap();
    let out = run_tool(&["verify", root.to_str().unwrap(), manifest.to_str().unwrap(), "--lmq", "--expect-abort"]);
    assert!(out.contains("verified 300 messages"), "{out}");
}
