//! The index file (`index/<yyyyMMddHHmmssSSS>`): byte layout, queries with Java's semantics,
//! rollover, reopening, recovery, retention and corrupt input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use silo_store::index::{IndexConfig, IndexError, IndexService};
use silo_wire::checksum::java_string_hash;

/// 2023-11-14T22:13:20.123Z
const T0: i64 = 1_700_000_000_123;
const ALL: (i64, i64) = (0, i64::MAX);

fn tiny(hash_slots: u32, max_entries: u32) -> IndexConfig {
    IndexConfig { hash_slots, max_entries }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn query_all(index: &IndexService, key: &str) -> Vec<i64> {
    index.query("T", key, usize::MAX, ALL.0, ALL.1)
}

fn header(begin_ts: i64, end_ts: i64, begin_phy: i64, end_phy: i64, slot_count: i32, index_count: i32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(begin_ts.to_be_bytes());
    out.extend(end_ts.to_be_bytes());
    out.extend(begin_phy.to_be_bytes());
    out.extend(end_phy.to_be_bytes());
    out.extend(slot_count.to_be_bytes());
    out.extend(index_count.to_be_bytes());
    out
}

fn entry(key_hash: i32, phys: i64, time_diff: i32, prev: i32) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(key_hash.to_be_bytes());
    out.extend(phys.to_be_bytes());
    out.extend(time_diff.to_be_bytes());
    out.extend(prev.to_be_bytes());
    out
}

fn slots(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
}

#[test]
fn small_file_is_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(dir.path(), tiny(4, 4)).unwrap();
    // "T#k" = 84*31^2 + 35*31 + 107 = 81916, slot 81916 % 4 = 0;
    // "T#a" = 84*31^2 + 35*31 + 97 = 81906, slot 2.
    assert_eq!(java_string_hash("T#k"), 81_916);
    assert_eq!(java_string_hash("T#a"), 81_906);
    index.put("T", "k", 100, T0).unwrap();
    index.put("T", "a", 150, T0 + 1_000).unwrap();
    index.put("T", "k", 200, T0 + 2_500).unwrap(); // 2.5 s truncates to 2
    assert_eq!(names(dir.path()), ["20231114221320123"]);

    let mut expected = header(T0, T0 + 2_500, 100, 200, 2, 4);
    expected.extend(slots(&[3, 0, 2, 0]));
    expected.extend([0u8; 20]); // entry 0 is never used
    expected.extend(entry(81_916, 100, 0, 0)); // the first entry of a file has no begin yet: 0
    expected.extend(entry(81_906, 150, 1, 0));
    expected.extend(entry(81_916, 200, 2, 1)); // chained to entry 1 of slot 0
    assert_eq!(expected.len(), 40 + 4 * 4 + 4 * 20);
    let first = dir.path().join("20231114221320123");
    assert_eq!(fs::read(&first).unwrap(), expected);

    // indexCount 4 == max_entries: full. The next file starts from the previous file's end, and
    // (like Java) the first entry's time diff is taken against that before begin is reset.
    index.put("T", "a", 300, T0 + 5_000).unwrap();
    assert_eq!(names(dir.path()), ["20231114221320123", "20231114221325123"]);
    let mut expected2 = header(T0 + 5_000, T0 + 5_000, 300, 300, 1, 2);
    expected2.extend(slots(&[0, 0, 1, 0]));
    expected2.extend([0u8; 20]);
    expected2.extend(entry(81_906, 300, 2, 0)); // (T0+5000 - (T0+2500)) / 1000
    expected2.extend([0u8; 40]);
    index.flush().unwrap();
    assert_eq!(fs::read(dir.path().join("20231114221325123")).unwrap(), expected2);
    assert_eq!(fs::read(&first).unwrap(), expected, "a full file is not touched again");

    assert_eq!(query_all(&index, "k"), [200, 100]);
    assert_eq!(query_all(&index, "a"), [300, 150]);
    assert_eq!(index.last_timestamp(), T0 + 5_000);
    assert_eq!(index.end_phys_offset(), 300);
    // Java reads that first entry as stored at begin + 2 s (outside the header's own range), so
    // an exact-time query misses it, and only a range reaching both finds it.
    assert_eq!(index.query("T", "a", 10, T0 + 5_000, T0 + 5_000), Vec::<i64>::new());
    assert_eq!(index.query("T", "a", 10, T0 + 7_000, T0 + 7_000), Vec::<i64>::new());
    assert_eq!(index.query("T", "a", 10, T0 + 5_000, T0 + 7_000), [300]);
}

#[test]
fn collisions_time_ranges_max_and_order() {
    let dir = tempfile::tempdir().unwrap();
    // One slot: every key collides; the chain holds all of them.
    let mut index = IndexService::open(dir.path(), tiny(1, 100)).unwrap();
    for i in 0..20i64 {
        let key = format!("k{}", i % 3);
        index.put("T", &key, 1_000 + i * 10, T0 + i * 1_000).unwrap();
    }
    // k0: i = 0, 3, ..., 18.
    let k0: Vec<i64> = (0..20).rev().filter(|i| i % 3 == 0).map(|i| 1_000 + i * 10).collect();
    assert_eq!(query_all(&index, "k0"), k0);
    assert_eq!(index.query("T", "k0", 3, ALL.0, ALL.1), k0[..3]);
    assert_eq!(index.query("T", "k0", 0, ALL.0, ALL.1), Vec::<i64>::new());
    // Other topic, same key: a different hash.
    assert_eq!(index.query("U", "k0", 10, ALL.0, ALL.1), Vec::<i64>::new());
    assert_eq!(query_all(&index, "nope"), Vec::<i64>::new());
    // Store time in [T0 + 3 s, T0 + 9 s]: i = 3, 6, 9.
    assert_eq!(index.query("T", "k0", 10, T0 + 3_000, T0 + 9_000), [1_090, 1_060, 1_030]);
    // Boundaries are inclusive; a range past the file finds nothing.
    assert_eq!(index.query("T", "k1", 10, T0 + 4_000, T0 + 4_000), [1_040]);
    assert_eq!(index.query("T", "k1", 10, T0 + 60_000, T0 + 70_000), Vec::<i64>::new());
    assert_eq!(index.query("T", "k1", 10, T0 + 5_000, T0 + 4_000), Vec::<i64>::new());
}

#[test]
fn duplicates_are_dropped_and_times_truncate_to_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(dir.path(), tiny(8, 100)).unwrap();
    index.put("T", "dup", 10, T0).unwrap();
    index.put("T", "dup", 10, T0).unwrap(); // UNIQ_KEY == KEYS
    index.put("T", "dup", 20, T0 + 1_999).unwrap(); // stored as 1 s after begin
    index.put("T", "dup", 20, T0 + 1_999).unwrap();
    assert_eq!(query_all(&index, "dup"), [20, 10]);
    assert_eq!(index.query("T", "dup", 1, ALL.0, ALL.1), [20]);
    assert_eq!(index.query("T", "dup", 10, T0 + 1_000, T0 + 1_000), [20]);
    assert_eq!(index.query("T", "dup", 10, T0 + 1_500, T0 + 2_000), Vec::<i64>::new());
}

#[test]
fn put_message_follows_build_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(dir.path(), tiny(16, 100)).unwrap();
    assert_eq!(index.put_message("T", Some("U1"), Some("a  b "), 100, T0).unwrap(), 3);
    assert_eq!(index.put_message("T", None, None, 200, T0).unwrap(), 0);
    assert_eq!(index.put_message("T", Some("U2"), Some(""), 300, T0 + 1_000).unwrap(), 1);
    // Re-dispatch after recovery: below the end offset is skipped, at it is indexed again.
    assert_eq!(index.put_message("T", Some("U1"), Some("a b"), 100, T0).unwrap(), 0);
    assert_eq!(index.put_message("T", Some("U2"), None, 300, T0 + 1_000).unwrap(), 1);
    assert_eq!(index.files().next().unwrap().1.entries(), 5);
    assert_eq!(query_all(&index, "U1"), [100]);
    assert_eq!(query_all(&index, "a"), [100]);
    assert_eq!(query_all(&index, "b"), [100]);
    assert_eq!(query_all(&index, "U2"), [300]);
    assert_eq!(query_all(&index, ""), Vec::<i64>::new());
}

#[test]
fn rollover_keeps_names_ordered_and_queries_span_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(dir.path(), tiny(2, 4)).unwrap();
    // Three entries per file; every entry has the same store time.
    for i in 0..10 {
        index.put("T", "k", i * 100, T0).unwrap();
    }
    let files = names(dir.path());
    assert_eq!(files, ["20231114221320123", "20231114221320124", "20231114221320125", "20231114221320126"]);
    assert_eq!(index.files().len(), 4);
    let expected: Vec<i64> = (0..10).rev().map(|i| i * 100).collect();
    assert_eq!(query_all(&index, "k"), expected);
    assert_eq!(index.query("T", "k", 4, T0, T0), expected[..4]);
    for (_, header) in index.files() {
        assert_eq!(header.begin_timestamp, T0);
    }

    // A store clock that went backwards still gets a later name.
    for i in 10..13 {
        index.put("T", "k", i * 100, T0 - 60_000).unwrap();
    }
    assert_eq!(names(dir.path()).last().unwrap(), "20231114221320127");
}

#[test]
fn reopen_queries_and_appends() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(3, 5);
    {
        let mut index = IndexService::open(dir.path(), config).unwrap();
        for i in 0..6 {
            index.put("T", &format!("k{}", i % 2), i * 10, T0 + i * 1_000).unwrap();
        }
        index.flush().unwrap();
    }
    let mut index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.files().len(), 2);
    assert_eq!(query_all(&index, "k0"), [40, 20, 0]);
    assert_eq!(query_all(&index, "k1"), [50, 30, 10]);
    assert_eq!(index.last_timestamp(), T0 + 5_000);
    assert_eq!(index.end_phys_offset(), 50);
    index.put("T", "k0", 60, T0 + 6_000).unwrap();
    assert_eq!(index.files().len(), 2, "the second file had room");
    assert_eq!(query_all(&index, "k0"), [60, 40, 20, 0]);
    let (_, last) = index.files().last().unwrap();
    assert_eq!((last.index_count, last.begin_phys_offset, last.end_phys_offset), (4, 40, 60));
}

#[test]
fn discard_newer_than_deletes_files_ending_later() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(2, 3); // two entries per file
    let mut index = IndexService::open(dir.path(), config).unwrap();
    for i in 0..6 {
        index.put("T", "k", i * 10, T0 + i * 1_000).unwrap();
    }
    let ends: Vec<i64> = index.files().map(|(_, h)| h.end_timestamp).collect();
    assert_eq!(ends, [T0 + 1_000, T0 + 3_000, T0 + 5_000]);
    index.discard_newer_than(T0 + 3_000).unwrap();
    assert_eq!(index.files().len(), 2);
    assert_eq!(names(dir.path()).len(), 2);
    assert_eq!(query_all(&index, "k"), [30, 20, 10, 0]);
    assert_eq!(index.last_timestamp(), T0 + 3_000);
    // Re-dispatch rebuilds a new file after the kept ones.
    index.put("T", "k", 40, T0 + 4_000).unwrap();
    assert_eq!(query_all(&index, "k"), [40, 30, 20, 10, 0]);
    index.discard_newer_than(0).unwrap();
    assert_eq!(index.files().len(), 0);
    assert!(names(dir.path()).is_empty());
    assert_eq!(index.last_timestamp(), 0);
    drop(index);
    assert_eq!(IndexService::open(dir.path(), config).unwrap().files().len(), 0);
}

#[test]
fn delete_before_keeps_the_newest_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = IndexService::open(dir.path(), tiny(2, 3)).unwrap();
    for i in 0..8 {
        index.put("T", "k", i * 10, T0 + i * 1_000).unwrap();
    }
    let ends: Vec<i64> = index.files().map(|(_, h)| h.end_phys_offset).collect();
    assert_eq!(ends, [10, 30, 50, 70]);
    assert_eq!(index.delete_before(10).unwrap(), 0, "strictly below");
    assert_eq!(index.delete_before(31).unwrap(), 2);
    assert_eq!(names(dir.path()).len(), 2);
    assert_eq!(query_all(&index, "k"), [70, 60, 50, 40]);
    assert_eq!(index.delete_before(i64::MAX).unwrap(), 1);
    assert_eq!(index.files().len(), 1);
    assert_eq!(index.delete_before(i64::MAX).unwrap(), 0);
    assert_eq!(query_all(&index, "k"), [70, 60]);
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path
}

fn open_err(dir: &Path, config: IndexConfig) -> IndexError {
    match IndexService::open(dir, config) {
        Ok(_) => panic!("opened a corrupt index"),
        Err(e) => e,
    }
}

#[test]
fn wrong_size_and_corrupt_headers_are_errors() {
    let config = tiny(2, 3);
    let size = 40 + 2 * 4 + 3 * 20;

    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "20231114221320123", &vec![0; size + 1]);
    let err = open_err(dir.path(), config);
    assert!(matches!(err, IndexError::WrongSize { actual: 109, expected: 108, .. }), "{err:?}");
    assert!(err.to_string().contains("20231114221320123"), "{err}");

    let cases: [(Vec<u8>, &str); 5] = [
        (header(0, 0, 0, 0, 0, 4), "indexCount"),
        (header(0, 0, 0, 0, 0, -1), "indexCount"),
        (header(0, 0, -5, 0, 0, 1), "beginPhyOffset"),
        (header(0, -1, 0, 0, 0, 1), "endTimestamp"),
        (header(0, 0, 0, 0, -3, 1), "hashSlotCount"),
    ];
    for (head, field) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = head;
        bytes.resize(size, 0);
        write_file(dir.path(), "20231114221320123", &bytes);
        let err = open_err(dir.path(), config);
        assert!(matches!(&err, IndexError::CorruptHeader { field: f, .. } if *f == field), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("20231114221320123") && text.contains(field), "{text}");
    }

    // A zero-length file before the newest one is an error; as the newest one it is the leftover
    // of an interrupted creation and goes away.
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "20231114221320123", &[]);
    write_file(dir.path(), "20231114221320124", &vec![0; size]);
    assert!(matches!(open_err(dir.path(), config), IndexError::WrongSize { actual: 0, .. }));
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "20231114221320123", &vec![0; size]);
    write_file(dir.path(), "20231114221320124", &[]);
    assert_eq!(IndexService::open(dir.path(), config).unwrap().files().len(), 1);
    assert_eq!(names(dir.path()), ["20231114221320123"]);

    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    assert!(matches!(open_err(dir.path(), config), IndexError::NotAFile { .. }));

    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(open_err(dir.path(), tiny(0, 3)), IndexError::Config { .. }));
    assert!(matches!(open_err(dir.path(), tiny(3, 1)), IndexError::Config { .. }));
}

#[test]
fn a_java_file_created_but_never_flushed_loads() {
    // Java's constructor leaves indexCount 0 on disk until the first put or flush.
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(4, 4);
    write_file(dir.path(), "20231114221320123", &[0; 40 + 16 + 80]);
    let mut index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.files().next().unwrap().1.index_count, 1);
    assert_eq!(query_all(&index, "k"), Vec::<i64>::new());
    index.put("T", "k", 100, T0).unwrap();
    assert_eq!(index.files().len(), 1);
    assert_eq!(query_all(&index, "k"), [100]);
    let bytes = fs::read(dir.path().join("20231114221320123")).unwrap();
    assert_eq!(&bytes[..40], header(T0, T0, 100, 100, 1, 2).as_slice());
}

#[test]
fn chain_cycles_and_wild_pointers_terminate() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiny(1, 6);
    let hash = java_string_hash("T#k");
    let mut bytes = header(T0, T0 + 5_000, 0, 100, 1, 4);
    bytes.extend(slots(&[3]));
    bytes.extend([0u8; 20]);
    bytes.extend(entry(hash, 10, 1, 3)); // 1 -> 3
    bytes.extend(entry(hash, 20, 2, 1)); // 2 -> 1
    bytes.extend(entry(hash, 30, 3, 2)); // 3 -> 2: a cycle 3 -> 2 -> 1 -> 3
    bytes.extend([0u8; 40]);
    write_file(dir.path(), "20231114221320123", &bytes);
    let index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.query("T", "k", 100, ALL.0, ALL.1), [30, 20, 10]);

    // A slot pointing at indexCount itself (Java accepts it) when the file is full: the entry
    // lies outside the file and nothing is read.
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = header(T0, T0, 0, 0, 1, 6);
    bytes.extend(slots(&[6]));
    bytes.resize(40 + 4 + 6 * 20, 0xff);
    write_file(dir.path(), "20231114221320123", &bytes);
    let mut index = IndexService::open(dir.path(), config).unwrap();
    assert_eq!(index.query("T", "k", 100, ALL.0, ALL.1), Vec::<i64>::new());
    index.put("T", "k", 1, T0).unwrap(); // full: goes to a new file
    assert_eq!(index.files().len(), 2);
    assert_eq!(index.query("T", "k", 100, ALL.0, ALL.1), [1]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Garbage slots and entries under any plausible header: no panic, no endless walk, puts
    /// still work.
    #[test]
    fn garbage_never_panics(
        body in proptest::collection::vec(any::<u8>(), 4 * 3 + 8 * 20),
        index_count in 0i32..=8,
        begin in 0i64..4_000_000_000_000,
        span in 0i64..100_000,
        queries in proptest::collection::vec((0u8..4, 0usize..20, any::<i64>(), any::<i64>()), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = tiny(3, 8);
        let mut bytes = header(begin, begin + span, 0, 1_000, 0, index_count);
        bytes.extend(&body);
        write_file(dir.path(), "20231114221320123", &bytes);
        let mut index = IndexService::open(dir.path(), config).unwrap();
        for (key, max, a, b) in &queries {
            let found = index.query("T", &format!("k{key}"), *max, *a, *b);
            prop_assert!(found.len() <= *max);
            let _ = index.query("T", &format!("k{key}"), 1_000, ALL.0, ALL.1);
        }
        for i in 0..10 {
            index.put("T", &format!("k{}", i % 4), 2_000 + i, begin + span + i * 1_000).unwrap();
        }
        let found = index.query("T", "k0", 1_000, ALL.0, ALL.1);
        prop_assert_eq!(&found[..3], &[2_008, 2_004, 2_000]);
    }

    /// Against a model: a full-range query returns every distinct offset put under the key,
    /// newest first, before and after reopening; `max` gives a prefix.
    #[test]
    fn matches_a_model(
        puts in proptest::collection::vec((0usize..5, 0i64..3, 0i64..3_000), 1..60),
        hash_slots in 1u32..6,
        max_entries in 2u32..9,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let config = tiny(hash_slots, max_entries);
        let mut index = IndexService::open(dir.path(), config).unwrap();
        let (mut phys, mut ts) = (0i64, T0);
        let mut model: Vec<Vec<i64>> = vec![Vec::new(); 5];
        for (key, phys_step, ts_step) in puts {
            phys += phys_step;
            ts += ts_step;
            index.put("T", &format!("key-{key}"), phys, ts).unwrap();
            if !model[key].contains(&phys) {
                model[key].insert(0, phys);
            }
        }
        let listed = names(dir.path());
        prop_assert!(listed.windows(2).all(|w| w[0] < w[1]));
        prop_assert_eq!(listed.len(), index.files().len());
        for _round in 0..2 {
            for (key, expected) in model.iter().enumerate() {
                let key = format!("key-{key}");
                prop_assert_eq!(&index.query("T", &key, usize::MAX, ALL.0, ALL.1), expected);
                let max = expected.len() / 2;
                prop_assert_eq!(&index.query("T", &key, max, ALL.0, ALL.1)[..], &expected[..max]);
            }
            index.flush().unwrap();
            drop(index);
            index = IndexService::open(dir.path(), config).unwrap();
        }
    }
}
