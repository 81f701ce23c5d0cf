//! Store benchmarks: append throughput against the raw ceilings of this machine (memcpy into a
//! mapped file, a plain sequential write), LMQ appends, synchronous flush with group commit,
//! dispatch, and recovery of a 1 GiB commit log after a crash. A counting allocator reports
//! allocations per append on the appending thread.
//!
//! Run: `cargo bench -p silo-store --bench store`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hdrhistogram::Histogram;
use silo_store::{Appender, FlushMode, MessageToStore, Store, StoreConfig};

#[global_allocator]
static GLOBAL: silo_alloc_count::Counting = silo_alloc_count::Counting;

/// Allocations and bytes per call on this thread.
fn allocs_per_op(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    let before = silo_alloc_count::this_thread();
    for _ in 0..n {
        f();
    }
    let c = silo_alloc_count::this_thread().since(before);
    (c.allocs as f64 / n as f64, c.bytes as f64 / n as f64)
}

const SEGMENT: usize = 256 << 20;
const PROPS: &str =
    "UNIQ_KEY\u{1}7F0000010B5A1B2C3D4E000000000001\u{2}TAGS\u{1}TagA\u{2}KEYS\u{1}order-12345\u{2}WAIT\u{1}true\u{2}";

fn config(root: &Path, flush: FlushMode) -> StoreConfig {
    let mut c = StoreConfig::new(root);
    c.commit_log_segment_size = SEGMENT;
    c.flush = flush;
    c
}

fn message<'a>(body: &'a [u8], props: &'a str, queue_id: i32) -> MessageToStore<'a> {
    MessageToStore {
        topic: "BenchTopic",
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_tx_offset: 0,
        body,
        properties: props,
    }
}

fn size_name(size: usize) -> String {
    if size >= 1024 { format!("{}KiB", size / 1024) } else { format!("{size}B") }
}

fn bench_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group.sample_size(20).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    for size in [128usize, 1024, 16 * 1024] {
        let body = vec![0x5Au8; size];
        let record_len = {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(config(dir.path(), FlushMode::default_async())).unwrap();
            store.append(&mut Appender::new(), &message(&body, PROPS, 0)).unwrap().size as usize
        };
        group.throughput(Throughput::Bytes(record_len as u64));
        let name = size_name(size);

        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(config(dir.path(), FlushMode::default_async())).unwrap();
        let mut app = Appender::new();
        group.bench_function(BenchmarkId::new("silo_single_writer", &name), |b| {
            b.iter(|| store.append(&mut app, black_box(&message(&body, PROPS, 0))).unwrap())
        });
        let (allocs, bytes) = allocs_per_op(10_000, || {
            store.append(&mut app, &message(&body, PROPS, 0)).unwrap();
        });
        println!("alloc-report append/silo_single_writer/{name:<8} allocs/append {allocs:.2} bytes/append {bytes:.0}");
        drop(store);
        drop(dir);

        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(config(dir.path(), FlushMode::default_async())).unwrap());
        group.bench_function(BenchmarkId::new("silo_two_writers", &name), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                std::thread::scope(|s| {
                    for w in 0..2 {
                        let store = &store;
                        let body = &body;
                        s.spawn(move || {
                            let mut app = Appender::new();
                            for _ in 0..iters / 2 {
                                store.append(&mut app, &message(body, PROPS, w)).unwrap();
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
        drop(store);
        drop(dir);

        // Ceiling 1: copying the same record bytes into a fresh mapped file of the segment's
        // size (new pages, as the log has), a new file whenever one is full.
        let dir = tempfile::tempdir().unwrap();
        let record = vec![0xA5u8; record_len];
        let new_map = |n: usize| {
            let path = dir.path().join(format!("m{n}"));
            let file =
                std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            file.set_len(SEGMENT as u64).unwrap();
            let _ = std::fs::remove_file(&path);
            // SAFETY: the file is private to this benchmark.
            unsafe { memmap2::MmapMut::map_mut(&file) }.unwrap()
        };
        let mut files = 0usize;
        let mut map = new_map(files);
        let mut pos = 0usize;
        group.bench_function(BenchmarkId::new("ceiling_memcpy_to_new_mapped_file", &name), |b| {
            b.iter(|| {
                if pos + record_len > SEGMENT {
                    files += 1;
                    map = new_map(files);
                    pos = 0;
                }
                map[pos..pos + record_len].copy_from_slice(black_box(&record));
                pos += record_len;
            })
        });
        drop(map);

        // Ceiling 2: a plain sequential write(2) of each record to a new file of the same size.
        let new_file = |n: usize| {
            let path = dir.path().join(format!("w{n}"));
            let f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&path).unwrap();
            let _ = std::fs::remove_file(&path);
            f
        };
        let mut out = new_file(0);
        let mut written = 0usize;
        group.bench_function(BenchmarkId::new("ceiling_sequential_write_to_new_file", &name), |b| {
            b.iter(|| {
                if written + record_len > SEGMENT {
                    files += 1;
                    out = new_file(files);
                    written = 0;
                }
                out.write_all(black_box(&record)).unwrap();
                written += record_len;
            })
        });
    }
    group.finish();
}

fn bench_lmq(c: &mut Criterion) {
    let mut group = c.benchmark_group("append_lmq");
    group.sample_size(20).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    let body = vec![0x5Au8; 1024];
    for (name, list) in
        [("no_lmq", None), ("1_lmq", Some("%LMQ%q1")), ("4_lmq", Some("%LMQ%q1,%LMQ%q2,%LMQ%q3,%LMQ%q4"))]
    {
        let props = match list {
            Some(l) => format!("{PROPS}INNER_MULTI_DISPATCH\u{1}{l}\u{2}"),
            None => PROPS.to_owned(),
        };
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path(), FlushMode::default_async());
        cfg.enable_multi_dispatch = true;
        cfg.enable_lmq = true;
        let store = Store::open(cfg).unwrap();
        let mut app = Appender::new();
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("1KiB", name), |b| {
            b.iter(|| store.append(&mut app, black_box(&message(&body, &props, 0))).unwrap())
        });
        let (allocs, bytes) = allocs_per_op(10_000, || {
            store.append(&mut app, &message(&body, &props, 0)).unwrap();
        });
        println!("alloc-report append_lmq/1KiB/{name:<8} allocs/append {allocs:.2} bytes/append {bytes:.0}");
    }
    group.finish();
}

fn bench_sync_flush(c: &mut Criterion) {
    let mut group = c.benchmark_group("sync_flush_group_commit");
    group.sample_size(10).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    let body = vec![0x5Au8; 1024];
    // Ceiling for one writer without group commit: a 1 KiB write(2) and an fdatasync each.
    {
        let dir = tempfile::tempdir().unwrap();
        let mut f =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(dir.path().join("f")).unwrap();
        let record = vec![0xA5u8; 1150];
        group.throughput(Throughput::Elements(1));
        group.bench_function("ceiling_write_fdatasync_1KiB", |b| {
            b.iter(|| {
                f.write_all(&record).unwrap();
                f.sync_data().unwrap();
            })
        });
    }
    for writers in [1usize, 8, 64] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(config(dir.path(), FlushMode::default_sync())).unwrap());
        let hist = Arc::new(Mutex::new(Histogram::<u64>::new(3).unwrap()));
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("1KiB", format!("{writers}_writers")), |b| {
            b.iter_custom(|iters| {
                let per = (iters as usize).div_ceil(writers);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for w in 0..writers {
                        let (store, body, hist) = (&store, &body, &hist);
                        s.spawn(move || {
                            let mut app = Appender::new();
                            let mut local = Histogram::<u64>::new(3).unwrap();
                            for _ in 0..per {
                                let t = Instant::now();
                                let r = store.append(&mut app, &message(body, PROPS, (w % 8) as i32)).unwrap();
                                store.wait_durable(r.end_offset).unwrap();
                                local.record(t.elapsed().as_micros() as u64).unwrap();
                            }
                            hist.lock().unwrap().add(&local).unwrap();
                        });
                    }
                });
                // Time per message: total time over the messages of all writers.
                start.elapsed().mul_f64(iters as f64 / (per * writers) as f64)
            })
        });
        let h = hist.lock().unwrap();
        println!(
            "latency-report sync_flush/1KiB/{writers}_writers  n={} p50={}us p99={}us max={}us",
            h.len(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.max()
        );
    }
    group.finish();
}

/// Writes `bytes` of 1 KiB records into a fresh store and shuts it down; returns the count.
fn fill(root: &Path, bytes: usize, segment: usize) -> u64 {
    let mut cfg = config(root, FlushMode::default_async());
    cfg.commit_log_segment_size = segment;
    let store = Store::open(cfg).unwrap();
    let mut app = Appender::new();
    let body = vec![0x5Au8; 1024];
    let mut n = 0u64;
    loop {
        let r = store.append(&mut app, &message(&body, PROPS, (n % 8) as i32)).unwrap();
        n += 1;
        if r.end_offset as usize >= bytes - 4096 {
            break;
        }
    }
    store.shutdown().unwrap();
    n
}

fn bench_dispatch_and_recovery(c: &mut Criterion) {
    let mut group = c.benchmark_group("recovery");
    group.sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(1));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let gib = 1usize << 30;
    let records = fill(&root, gib, gib);
    println!("recovery setup: {records} records of 1 KiB in a 1 GiB commit log");
    group.throughput(Throughput::Elements(records));
    // After a crash: abort present, checkpoint present; the walk validates every record of the
    // segment (CRC included) and finds every consume-queue unit already there.
    group.bench_function("crash_1GiB_log", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                std::fs::write(root.join("abort"), b"1").unwrap();
                let mut cfg = config(&root, FlushMode::default_async());
                cfg.commit_log_segment_size = gib;
                let start = Instant::now();
                let (store, report) = Store::open_with_report(cfg).unwrap();
                total += start.elapsed();
                assert!(report.abnormal);
                store.shutdown().unwrap();
            }
            total
        })
    });
    // Dispatch: the consume queues, index and checkpoint are gone, so recovery dispatches
    // every record of the log again.
    group.bench_function("redispatch_1GiB_log", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for d in ["consumequeue", "index"] {
                    let _ = std::fs::remove_dir_all(root.join(d));
                }
                let _ = std::fs::remove_file(root.join("checkpoint"));
                std::fs::write(root.join("abort"), b"1").unwrap();
                let mut cfg = config(&root, FlushMode::default_async());
                cfg.commit_log_segment_size = gib;
                let start = Instant::now();
                let (store, report) = Store::open_with_report(cfg).unwrap();
                total += start.elapsed();
                assert_eq!(report.redispatched_records, records);
                store.shutdown().unwrap();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_lmq, bench_sync_flush, bench_dispatch_and_recovery);
criterion_main!(benches);
