//! Test helper for crash tests: appends numbered messages with synchronous flush from several
//! threads and prints `ACK <seq>` for each one once it is acknowledged (fsynced), until it is
//! killed. Usage: `silo-store-crash-writer <store dir> <first seq> <threads> <segment bytes>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use silo_store::{Appender, FlushMode, MessageToStore, Store, StoreConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, first, threads, segment] = args.as_slice() else {
        eprintln!("usage: silo-store-crash-writer <store dir> <first seq> <threads> <segment bytes>");
        std::process::exit(2);
    };
    let mut config = StoreConfig::new(dir);
    config.commit_log_segment_size = segment.parse().expect("segment bytes");
    config.consume_queue_units_per_file = 1000;
    config.index = Some(silo_store::index::IndexConfig { hash_slots: 5000, max_entries: 20_000 });
    config.flush = FlushMode::Sync { timeout: Duration::from_secs(30) };
    config.enable_multi_dispatch = true;
    config.enable_lmq = true;
    let store = Arc::new(Store::open(config).expect("open store"));
    let next = Arc::new(AtomicU64::new(first.parse().expect("first seq")));
    let handles: Vec<_> = (0..threads.parse::<usize>().expect("threads"))
        .map(|_| {
            let (store, next) = (store.clone(), next.clone());
            std::thread::spawn(move || {
                let mut app = Appender::new();
                loop {
                    let seq = next.fetch_add(1, Ordering::Relaxed);
                    let body = crash_body(seq);
                    let props = crash_props(seq);
                    let msg = MessageToStore {
                        topic: "Crash",
                        queue_id: (seq % 4) as i32,
                        flag: 0,
                        sys_flag: 0,
                        born_timestamp: 1_700_000_000_000,
                        born_host: "127.0.0.1:50000".parse().unwrap(),
                        reconsume_times: 0,
                        prepared_tx_offset: 0,
                        body: &body,
                        properties: &props,
                    };
                    let r = store.append(&mut app, &msg).expect("append");
                    store.wait_durable(r.end_offset).expect("flush");
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "ACK {seq}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
}

/// The body of message `seq`: its number and a pattern of a length that varies with it.
pub fn crash_body(seq: u64) -> Vec<u8> {
    let mut b = format!("crash-{seq}:").into_bytes();
    b.extend((0..(seq * 131 % 2000) as usize).map(|i| (seq as usize + i) as u8));
    b
}

/// Properties of message `seq`; every third one also goes to an LMQ.
pub fn crash_props(seq: u64) -> String {
    let lmq = if seq.is_multiple_of(3) { "INNER_MULTI_DISPATCH\u{1}%LMQ%crash\u{2}" } else { "" };
    format!("KEYS\u{1}seq-{seq}\u{2}{lmq}WAIT\u{1}true\u{2}")
}
