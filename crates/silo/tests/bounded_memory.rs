//! The broker's memory stays bounded under a flood: 16 producers with 64 sends of 1 MiB in
//! flight each, against a synchronously flushed store (the disk sets the pace), never raise
//! its anonymous memory past a fixed bound, because a connection reads its next request only
//! once the last one is stored; and a consumer that sends pulls but stops reading the answers
//! does not grow it either, because a connection whose answers pile up reads no more of its
//! requests. (Stored messages are served from the mapped log: file pages, not anonymous
//! memory.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::SiloServer;
use silo_wire::custom::{CustomHeader, PullMessageRequestHeader, pull_sys_flag};
use silo_wire::frame::encode_frame;
use silo_wire::{RemotingHeader, SerializeType};

/// The flood's bound on the broker's anonymous memory: a frame of 1 MiB per connection being
/// stored, plus the broker's own (about 28 MiB measured).
const FLOOD_BOUND: u64 = 48 << 20;
/// What a consumer that stops reading may add to it.
const STALLED_CONSUMER_BOUND: u64 = 8 << 20;

/// Samples the broker's anonymous memory every 10 ms until `stop`; returns the peak.
fn sample_peak(silo: &SiloServer, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let pid = silo.child.id();
    let peak = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        while !stop.load(Ordering::Acquire) {
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                && let Some(kb) = status
                    .lines()
                    .find(|l| l.starts_with("RssAnon:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
            {
                peak.fetch_max(kb * 1024, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        peak.load(Ordering::Relaxed)
    })
}

fn silo_cli(silo: &SiloServer, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_silo"))
        .args(args)
        .env("NAMESRV_ADDR", silo.namesrv.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "silo {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), silo.log_tail());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_flood_of_large_sends_keeps_the_broker_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let silo = SiloServer::start(
        &dir.path().join("store"),
        &["--flush-disk-type", "SYNC_FLUSH", "--set", "mappedFileSizeCommitLog=268435456"],
    );
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak(&silo, stop.clone());
    let report = dir.path().join("flood.json");
    silo_cli(
        &silo,
        &[
            "bench",
            "produce",
            "--topic",
            "Flood",
            "--size",
            "1048576",
            "--producers",
            "16",
            "--inflight",
            "64",
            "--count",
            "1024",
            "--timeout-ms",
            "60000",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    stop.store(true, Ordering::Release);
    let peak = sampler.join().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    eprintln!("flood: {report}\nbroker anonymous memory peak: {} KiB", peak / 1024);
    assert_eq!(report["errors"].as_u64(), Some(0), "{report}");
    assert!(peak < FLOOD_BOUND, "the broker's anonymous memory peaked at {} KiB", peak / 1024);
}

fn pull_frame(opaque: i32, topic: &str) -> Vec<u8> {
    let mut h = RemotingHeader::request(silo_wire::codes::request::PULL_MESSAGE, opaque);
    PullMessageRequestHeader {
        consumer_group: "StalledConsumer".into(),
        topic: topic.into(),
        queue_id: 0,
        queue_offset: 0,
        max_msg_nums: 32,
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        subscription: Some("*".into()),
        expression_type: Some("TAG".into()),
        ..Default::default()
    }
    .write_ext_fields(&mut h.ext_fields);
    let mut out = Vec::new();
    encode_frame(&h, SerializeType::Json, &[], &mut out).unwrap();
    out
}

#[test]
fn a_consumer_that_stops_reading_does_not_grow_the_broker_memory() {
    let dir = tempfile::tempdir().unwrap();
    let silo = SiloServer::start(&dir.path().join("store"), &[]);
    silo_cli(&silo, &["bench", "produce", "--topic", "Stalled", "--size", "4096", "--queues", "1", "--count", "2000"]);
    let before = silo.anonymous_memory();

    // 50,000 pulls of 32 messages each (6 GiB of answers), written as fast as the broker
    // reads them, never reading an answer.
    let mut socket = std::net::TcpStream::connect(silo.broker).unwrap();
    socket.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut requests = Vec::new();
    for i in 0..500 {
        requests.extend(pull_frame(i, "Stalled"));
    }
    let started = Instant::now();
    let mut written = 0usize;
    while written < 100 && started.elapsed() < Duration::from_secs(20) {
        if socket.write_all(&requests).is_err() {
            break; // the broker stopped reading: TCP's flow control holds the rest here
        }
        written += 1;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak(&silo, stop.clone());
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Release);
    let peak = sampler.join().unwrap().max(silo.anonymous_memory());
    eprintln!(
        "{} pull requests written before the broker stopped reading; anonymous memory {} KiB before, {} KiB at peak",
        written * 500,
        before / 1024,
        peak / 1024
    );
    assert!(written < 100, "the broker read every request although no answer was read");
    assert!(peak.saturating_sub(before) < STALLED_CONSUMER_BOUND, "grew by {} KiB", (peak - before) / 1024);

    // The broker goes on serving everyone else.
    let info = common::call_within(
        silo.broker,
        silo_wire::codes::request::GET_BROKER_RUNTIME_INFO,
        &[],
        Duration::from_secs(5),
    );
    assert_eq!(info.header.code, 0);
    drop(socket);
}
