//! Codec benchmarks: the one-pass batch encoder against a per-message baseline and the memcpy
//! ceiling, stored-record encode/decode, and the frame decoder. A counting global allocator
//! reports allocations and bytes allocated per operation next to Criterion's timings.
//!
//! Run: `cargo bench -p silo-wire --bench codec`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::panic
)]

use std::hint::black_box;

use bytes::{BufMut, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use silo_wire::batch::{OutgoingMessage, OutgoingProperties, encode_batch};
use silo_wire::frame::{FrameDecoder, encode_frame};
use silo_wire::record::{RecordMeta, decode_record, encode_record};
use silo_wire::{RemotingHeader, SerializeType};

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

/// Allocations and bytes per call of `f`, averaged over `n` calls.
fn allocs_per_op(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    f(); // warm up lazily-initialised state
    let before = silo_alloc_count::process();
    for _ in 0..n {
        f();
    }
    let c = silo_alloc_count::process().since(before);
    (c.allocs as f64 / n as f64, c.bytes as f64 / n as f64)
}

fn report(name: &str, n: u64, f: impl FnMut()) {
    let (allocs, bytes) = allocs_per_op(n, f);
    println!("alloc-report {name:<44} allocs/op {allocs:>8.2}  bytes/op {bytes:>10.0}");
}

struct Scenario {
    count: usize,
    size: usize,
    bodies: Vec<Vec<u8>>,
    uniq: Vec<String>,
}

impl Scenario {
    fn new(count: usize, size: usize) -> Self {
        let bodies = (0..count).map(|i| (0..size).map(|j| (i * 31 + j) as u8).collect()).collect();
        let uniq = (0..count).map(|i| format!("7F0000010B5A1B2C3D4E{i:012X}")).collect();
        Self { count, size, bodies, uniq }
    }

    fn props(&self, i: usize) -> [(&str, &str); 4] {
        [("UNIQ_KEY", self.uniq[i].as_str()), ("TAGS", "TagA"), ("KEYS", "order-12345 customer-9"), ("WAIT", "true")]
    }

    fn name(&self) -> String {
        let size = if self.size >= 1024 { format!("{}KiB", self.size / 1024) } else { format!("{}B", self.size) };
        format!("{}x{}", self.count, size)
    }
}

/// The baseline Silo replaces: each message's properties into a String, each message into its
/// own Vec, then every Vec concatenated into the result (the Java encoder before PR #10938).
fn encode_batch_naive(messages: &[OutgoingMessage<'_>], pairs: &[[(&str, &str); 4]]) -> Vec<u8> {
    let mut parts = Vec::with_capacity(messages.len());
    for (msg, props) in messages.iter().zip(pairs) {
        let mut p = String::new();
        for (k, v) in props {
            p.push_str(k);
            p.push('\u{1}');
            p.push_str(v);
            p.push('\u{2}');
        }
        let total = 22 + msg.body.len() + p.len();
        let mut one = Vec::with_capacity(total);
        one.put_i32(total as i32);
        one.put_i32(0);
        one.put_i32(0);
        one.put_i32(msg.flag);
        one.put_i32(msg.body.len() as i32);
        one.put_slice(msg.body);
        one.put_i16(p.len() as i16);
        one.put_slice(p.as_bytes());
        parts.push(one);
    }
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for part in &parts {
        out.extend_from_slice(part);
    }
    out
}

fn bench_encode_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode_batch");
    for (count, size) in [(10, 128), (100, 128), (10, 1024), (100, 1024)] {
        let s = Scenario::new(count, size);
        let pairs: Vec<_> = (0..count).map(|i| s.props(i)).collect();
        let messages: Vec<_> = (0..count)
            .map(|i| OutgoingMessage { flag: 0, body: &s.bodies[i], properties: OutgoingProperties::Pairs(&pairs[i]) })
            .collect();
        let encoded = encode_batch(&messages).unwrap();
        assert_eq!(encode_batch_naive(&messages, &pairs), encoded[..]);
        let len = encoded.len();
        group.throughput(Throughput::Bytes(len as u64));
        let name = s.name();
        group.bench_with_input(BenchmarkId::new("one_pass", &name), &messages, |b, m| {
            b.iter(|| encode_batch(black_box(m)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("naive_per_message", &name), &messages, |b, m| {
            b.iter(|| encode_batch_naive(black_box(m), &pairs))
        });
        let src = encoded.to_vec();
        let mut dst = vec![0u8; len];
        group.bench_function(BenchmarkId::new("memcpy_ceiling", &name), |b| {
            b.iter(|| {
                dst.copy_from_slice(black_box(&src));
                black_box(&dst);
            })
        });
        println!("alloc-report encoded size {name}: {len} bytes");
        report(&format!("encode_batch/one_pass/{name}"), 1000, || {
            black_box(encode_batch(black_box(&messages)).unwrap());
        });
        report(&format!("encode_batch/naive_per_message/{name}"), 1000, || {
            black_box(encode_batch_naive(black_box(&messages), &pairs));
        });
    }
    group.finish();
}

fn record_meta() -> RecordMeta {
    RecordMeta {
        body_crc: 0,
        queue_id: 1,
        flag: 0,
        queue_offset: 1000,
        physical_offset: 1 << 30,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.5:50000".parse().unwrap(),
        store_timestamp: 1_700_000_000_001,
        store_host: "10.0.0.7:10911".parse().unwrap(),
        reconsume_times: 0,
        prepared_tx_offset: 0,
    }
}

fn bench_record(c: &mut Criterion) {
    let mut group = c.benchmark_group("stored_record");
    let s = Scenario::new(1, 1024);
    let props = s.props(0);
    let meta = record_meta();
    let mut buf = Vec::with_capacity(4096);
    encode_record(&meta, "TopicTest", &s.bodies[0], OutgoingProperties::Pairs(&props), &mut buf).unwrap();
    let encoded = buf.clone();
    group.throughput(Throughput::Bytes(encoded.len() as u64));
    group.bench_function("encode_1KiB", |b| {
        b.iter(|| {
            buf.clear();
            encode_record(black_box(&meta), "TopicTest", &s.bodies[0], OutgoingProperties::Pairs(&props), &mut buf)
                .unwrap()
        })
    });
    group.bench_function("decode_1KiB", |b| b.iter(|| decode_record(black_box(&encoded), 0).unwrap()));
    let src = encoded.clone();
    let mut dst = vec![0u8; src.len()];
    group.bench_function("memcpy_ceiling_1KiB", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    group.finish();
    report("stored_record/encode_1KiB (reused buffer)", 1000, || {
        buf.clear();
        encode_record(&meta, "TopicTest", &s.bodies[0], OutgoingProperties::Pairs(&props), &mut buf).unwrap();
    });
    report("stored_record/decode_1KiB", 1000, || {
        black_box(decode_record(black_box(&encoded), 0).unwrap());
    });
}

fn bench_frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame_decoder");
    let body = vec![7u8; 1024];
    for serialize in [SerializeType::Json, SerializeType::RocketMq] {
        let mut header = RemotingHeader::request(310, 1);
        for (k, v) in [
            ("a", "producer-group"),
            ("b", "TopicTest"),
            ("c", "TBW102"),
            ("d", "4"),
            ("e", "1"),
            ("f", "0"),
            ("g", "1700000000000"),
            ("h", "0"),
            ("i", "UNIQ_KEY\u{1}7F0000010B5A1B2C3D4E000000000001\u{2}TAGS\u{1}TagA\u{2}WAIT\u{1}true\u{2}"),
            ("j", "0"),
            ("k", "false"),
            ("m", "false"),
        ] {
            header.ext_fields.insert(k, v);
        }
        const FRAMES: usize = 64;
        let mut stream = Vec::new();
        for _ in 0..FRAMES {
            encode_frame(&header, serialize, &body, &mut stream).unwrap();
        }
        let name = format!("{serialize:?}_send_v2_1KiB_x{FRAMES}");
        group.throughput(Throughput::Elements(FRAMES as u64));
        let decoder = FrameDecoder::default();
        let mut read_buf = BytesMut::with_capacity(stream.len());
        let decode_all = |read_buf: &mut BytesMut| {
            read_buf.clear();
            read_buf.extend_from_slice(&stream);
            let mut n = 0;
            while let Some(frame) = decoder.decode(read_buf).unwrap() {
                black_box(&frame);
                n += 1;
            }
            assert_eq!(n, FRAMES);
        };
        group.bench_function(&name, |b| b.iter(|| decode_all(&mut read_buf)));
        // The vector of extFields pairs, and for JSON the unescaped properties value.
        let (allocs, bytes) = allocs_per_op(200, || decode_all(&mut read_buf));
        println!(
            "alloc-report frame_decoder/{name:<31} allocs/frame {:>6.2}  bytes/frame {:>8.0}",
            allocs / FRAMES as f64,
            bytes / FRAMES as f64
        );
    }
    group.finish();
}

criterion_group!(benches, bench_encode_batch, bench_record, bench_frames);
criterion_main!(benches);
