//! Helpers shared by the store's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use silo_store::{FlushMode, MessageToStore, StoreConfig};
use silo_wire::record::{Decoded, StoredRecord, decode_record};

pub fn config(root: &Path) -> StoreConfig {
    let mut c = StoreConfig::new(root);
    c.commit_log_segment_size = 64 * 1024;
    c.consume_queue_units_per_file = 1000;
    c.index = Some(silo_store::index::IndexConfig { hash_slots: 5000, max_entries: 20_000 });
    c.flush = FlushMode::Async {
        interval: Duration::from_millis(20),
        least_pages: 1,
        thorough_interval: Duration::from_millis(200),
    };
    c
}

pub const BORN: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1)), 50000);

pub fn body(i: u64) -> Vec<u8> {
    let mut b = format!("message {i} ").into_bytes();
    let extra = (i * 37 % 300) as usize;
    b.extend((0..extra).map(|j| b'a' + ((i as usize + j) % 26) as u8));
    b
}

pub fn props(i: u64) -> String {
    format!(
        "UNIQ_KEY\u{1}UNIQ{i:028}\u{2}TAGS\u{1}Tag{}\u{2}KEYS\u{1}key-{i} order-{}\u{2}WAIT\u{1}true\u{2}",
        i % 3,
        i / 10
    )
}

pub fn message<'a>(topic: &'a str, queue_id: i32, body: &'a [u8], props: &'a str) -> MessageToStore<'a> {
    MessageToStore {
        topic,
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: BORN,
        reconsume_times: 0,
        prepared_tx_offset: 0,
        body,
        properties: props,
    }
}

pub fn record(bytes: &[u8]) -> StoredRecord<'_> {
    match decode_record(bytes, 0).unwrap() {
        Decoded::Record(r) => r,
        Decoded::Blank { .. } => panic!("blank"),
    }
}
