//! The timer files (`timerwheel`, `timerlog/`, `config/timercheck`; docs/store-format.md §10):
//! slots read back across timer-log files, byte-exact layouts, reopening, rolling, retention,
//! damaged links, and power loss on the simulated machine.
//!
//! The power-loss test runs `SILO_TIMER_POWER_LOSS_SEEDS` seeds (default 300); one seed alone:
//! `SILO_TIMER_POWER_LOSS_SEED=12 cargo test -p silo-store --test timer_files -- --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use silo_store::fs::{Fs, SimFs};
use silo_store::timer::{
    Enqueued, MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL, TimerConfig, TimerEntry, TimerRequest, TimerStore,
};
use silo_store::{Clock, ManualClock, StoreError};

const T0: i64 = 1_700_000_000_000;
/// 18 units per file: the unit at 884 leaves 64 bytes, the next would leave 12 (< 16).
const LOG_FILE: usize = 1000;

fn cfg(clock: &Arc<ManualClock>) -> TimerConfig {
    TimerConfig {
        precision_ms: 1000,
        timer_log_file_size: LOG_FILE,
        slots_total: 100,
        roll_window_slots: 40,
        clock: clock.clone(),
    }
}

fn req(id: i64, deliver_ms: i64) -> TimerRequest {
    TimerRequest { offset_py: id * 100, size_py: 100, deliver_ms, hash_topic: 7, delete: false }
}

fn stored(r: Enqueued) -> (i64, i64, bool) {
    match r {
        Enqueued::Stored { pos, slot_time_ms, rolled } => (pos, slot_time_ms, rolled),
        Enqueued::Due => panic!("unexpectedly due"),
    }
}

/// Reads every due slot: (slot time, entries), finishing each.
fn drain(store: &mut TimerStore) -> Vec<(i64, Vec<TimerEntry>)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(slot) = store.due_slot() {
        store.slot_entries(slot, &mut buf).unwrap();
        out.push((slot, buf.clone()));
        store.finish_slot(slot);
    }
    out
}

fn ids(entries: &[TimerEntry]) -> Vec<i64> {
    entries.iter().map(|e| e.offset_py / 100).collect()
}

fn real_fs() -> Arc<dyn Fs> {
    silo_store::fs::real()
}

#[test]
fn slots_read_back_across_timer_log_files() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0 + 250);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    assert_eq!(store.write_time_ms(), T0);
    let mut expected: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for id in 0..50i64 {
        let deliver = T0 + 1000 * (1 + id % 4) + id * 7;
        let (pos, slot, rolled) = stored(store.enqueue(&req(id, deliver)).unwrap());
        assert!(!rolled);
        assert_eq!(slot, deliver);
        // 18 units per file, files named by their global offset.
        let (file, unit) = (id / 18, id % 18);
        assert_eq!(pos, file * LOG_FILE as i64 + unit * 52, "unit {id}");
        expected.entry(deliver / 1000 * 1000).or_default().push(id);
    }
    let names: Vec<String> =
        store.log_files().iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["00000000000000000000", "00000000000000001000", "00000000000000002000"]);
    // Nothing is due before its slot has passed.
    assert_eq!(store.due_slot(), None);
    let slot = store.slot(T0 + 1000).unwrap();
    assert_eq!(slot.num, 13);
    assert_eq!(slot.first_pos, 0);

    clock.advance(10_000);
    let got = drain(&mut store);
    assert_eq!(got.len(), 4);
    for (slot, entries) in &got {
        assert_eq!(&ids(entries), &expected[slot], "slot {slot}");
        for e in entries {
            assert_eq!(e.magic, MAGIC_DEFAULT);
            assert_eq!(e.enqueue_time_ms, T0);
            assert_eq!(e.slot_time_ms / 1000 * 1000, *slot);
            assert_eq!((e.size_py, e.hash_topic), (100, 7));
        }
    }
    assert_eq!(store.due_slot(), None);
    // The blank record fills the end of the first file: `size = 64`, `BLANK_MAGIC_CODE`.
    let first = std::fs::read(dir.path().join("timerlog/00000000000000000000")).unwrap();
    assert_eq!(first.len(), LOG_FILE);
    assert_eq!(&first[936..952], &[0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0xCB, 0xD4, 0x31, 0x94]);
}

#[test]
fn file_bytes_are_javas_layout() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0 + 999);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    let deliver = T0 + 5000 + 123;
    let r =
        TimerRequest { offset_py: 0x0102_0304, size_py: 0x0506, deliver_ms: deliver, hash_topic: -1, delete: false };
    assert_eq!(stored(store.enqueue(&r).unwrap()), (0, deliver, false));
    let r2 = TimerRequest { offset_py: 0x0102_0400, delete: true, ..r };
    assert_eq!(stored(store.enqueue(&r2).unwrap()), (52, deliver, false));
    store.checkpoint(9).unwrap();

    let log = std::fs::read(dir.path().join("timerlog/00000000000000000000")).unwrap();
    let mut unit = Vec::new();
    unit.extend(52i32.to_be_bytes()); // size
    unit.extend((-1i64).to_be_bytes()); // prevPos
    unit.extend(1i32.to_be_bytes()); // magic
    unit.extend(T0.to_be_bytes()); // currWriteTime
    unit.extend(5123i32.to_be_bytes()); // delay
    unit.extend([0, 0, 0, 0, 1, 2, 3, 4]); // offsetPy
    unit.extend([0, 0, 5, 6]); // sizePy
    unit.extend([0xFF; 4]); // hashTopic -1
    unit.extend([0; 8]); // reserved
    assert_eq!(&log[..52], &unit[..]);
    // The second unit links back to the first and carries DELETE.
    assert_eq!(&log[52..56], &52i32.to_be_bytes());
    assert_eq!(&log[56..64], &0i64.to_be_bytes());
    assert_eq!(&log[64..68], &(MAGIC_DEFAULT | MAGIC_DELETE).to_be_bytes());

    let wheel = std::fs::read(dir.path().join("timerwheel")).unwrap();
    assert_eq!(wheel.len(), 100 * 2 * 32);
    let index = ((deliver / 1000) % 200) as usize;
    let mut slot = Vec::new();
    slot.extend((deliver / 1000).to_be_bytes()); // delayed time / precision
    slot.extend(0i64.to_be_bytes()); // firstPos
    slot.extend(52i64.to_be_bytes()); // lastPos
    slot.extend(0i32.to_be_bytes()); // num: +1 - 1
    slot.extend(0i32.to_be_bytes()); // magic
    assert_eq!(&wheel[index * 32..index * 32 + 32], &slot[..]);
    assert!(wheel[..index * 32].iter().chain(&wheel[index * 32 + 32..]).all(|b| *b == 0));

    let check = std::fs::read(dir.path().join("config/timercheck")).unwrap();
    assert_eq!(check.len(), 4096);
    let read_time = T0; // a new store starts reading at its first write time
    assert_eq!(&check[0..8], &read_time.to_be_bytes()); // lastReadTimeMs
    assert_eq!(&check[8..16], &104i64.to_be_bytes()); // lastTimerLogFlushPos
    assert_eq!(&check[16..24], &9i64.to_be_bytes()); // lastTimerQueueOffset
    assert_eq!(&check[24..32], &9i64.to_be_bytes()); // masterTimerQueueOffset
    assert_eq!(&check[32..40], &0i64.to_be_bytes()); // dataVersion.stateVersion
    assert_eq!(&check[40..48], &(T0 + 999).to_be_bytes()); // dataVersion.timestamp
    assert_eq!(&check[48..56], &1i64.to_be_bytes()); // dataVersion.counter
    assert!(check[56..].iter().all(|b| *b == 0));
}

#[test]
fn default_sizes_are_javas() {
    let c = TimerConfig::default();
    assert_eq!(c.slots_total, 604_800);
    assert_eq!(c.wheel_file_size(), 38_707_200);
    assert_eq!(c.timer_log_file_size, 104_857_600);
    assert_eq!(c.effective_roll_window_slots(), 172_800);
    assert_eq!(TimerConfig { roll_window_slots: 1, ..TimerConfig::default() }.effective_roll_window_slots(), 604_740);
    for (given, snapped) in
        [(1, 100), (150, 100), (200, 200), (499, 200), (500, 500), (999, 500), (1000, 1000), (5000, 1000)]
    {
        assert_eq!(TimerConfig::snap_precision(given), snapped);
    }
}

#[test]
fn reopening_keeps_pending_timers() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    for id in 0..40 {
        store.enqueue(&req(id, T0 + 3000 + (id % 5) * 1000)).unwrap();
    }
    store.close(40).unwrap();

    // A clean reopen: the checkpoint covers everything.
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    let rec = store.recovery().clone();
    assert_eq!(rec.resume_queue_offset, 40);
    assert_eq!(rec.log_end, 2 * LOG_FILE as i64 + 4 * 52);
    assert_eq!(rec.slots_repaired, 0);
    assert!(!rec.checkpointed_units_lost);
    assert_eq!(rec.last_unit.unwrap().offset_py, 39 * 100);
    // More timers after the reopen link to the same slots.
    for id in 40..45 {
        store.enqueue(&req(id, T0 + 3000 + (id % 5) * 1000)).unwrap();
    }
    drop(store); // no checkpoint: recovery relinks these from the log

    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    assert_eq!(store.recovery().resume_queue_offset, 40);
    clock.advance(20_000);
    let got = drain(&mut store);
    assert_eq!(got.len(), 5);
    for (k, (slot, entries)) in got.iter().enumerate() {
        assert_eq!(*slot, T0 + 3000 + k as i64 * 1000);
        let want: Vec<i64> = (0..45).filter(|id| id % 5 == k as i64).collect();
        assert_eq!(ids(entries), want);
    }
}

#[test]
fn a_clean_reopen_reads_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    for id in 0..60 {
        store.enqueue(&req(id, T0 + 1000 + (id % 12) * 1000)).unwrap();
    }
    clock.advance(6_500);
    let before: Vec<i64> = drain(&mut store).iter().flat_map(|(_, e)| ids(e)).collect();
    assert_eq!(before.len(), 25); // slots T0+1s..T0+5s
    let read = store.read_time_ms();
    assert_eq!(read, T0 + 6000);
    store.close(60).unwrap();

    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    assert_eq!(store.read_time_ms(), read);
    clock.advance(20_000);
    let after: Vec<i64> = drain(&mut store).iter().flat_map(|(_, e)| ids(e)).collect();
    let all: BTreeSet<i64> = before.iter().chain(&after).copied().collect();
    assert_eq!(before.len() + after.len(), 60, "fired twice or lost");
    assert_eq!(all, (0..60).collect());
}

#[test]
fn far_timers_roll_and_due_timers_are_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0 + 400);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    // Window 40 slots: at least 40 s ahead rolls; within a third (13 s) past the window, to
    // half a window, else to a whole window.
    assert_eq!(stored(store.enqueue(&req(1, T0 + 39_999)).unwrap()), (0, T0 + 39_999, false));
    assert_eq!(stored(store.enqueue(&req(2, T0 + 40_000)).unwrap()), (52, T0 + 20_000, true));
    assert_eq!(stored(store.enqueue(&req(3, T0 + 52_999)).unwrap()), (104, T0 + 20_000, true));
    assert_eq!(stored(store.enqueue(&req(4, T0 + 53_000)).unwrap()), (156, T0 + 40_000, true));
    assert_eq!(store.enqueue(&req(5, T0 - 1)).unwrap(), Enqueued::Due);
    assert!(matches!(store.enqueue(&req(6, T0)).unwrap(), Enqueued::Stored { .. }));
    clock.advance(25_000);
    let got = drain(&mut store);
    let rolled: Vec<&TimerEntry> = got.iter().flat_map(|(_, e)| e).filter(|e| e.is_roll()).collect();
    assert_eq!(rolled.len(), 2);
    assert!(rolled.iter().all(|e| e.magic == MAGIC_DEFAULT | MAGIC_ROLL && e.slot_time_ms == T0 + 20_000));
    // A slot already read takes no timers: they are due.
    assert_eq!(store.enqueue(&req(7, T0 + 10_000)).unwrap(), Enqueued::Due);
    assert!(store.enqueue(&TimerRequest { size_py: 0, ..req(8, T0 + 90_000) }).is_err());
}

#[test]
fn a_slot_from_an_earlier_turn_of_the_wheel_reads_empty() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    store.enqueue(&req(1, T0 + 5000)).unwrap();
    // 200 slots later the same index means another time.
    let later = T0 + 5000 + 200_000;
    let mut buf = Vec::new();
    store.slot_entries(later, &mut buf).unwrap();
    assert!(buf.is_empty());
    assert!(store.slot(later).is_none());
    clock.advance(170_000);
    let (_, _, rolled) = stored(store.enqueue(&req(2, later)).unwrap());
    assert!(!rolled);
    store.slot_entries(later, &mut buf).unwrap();
    assert_eq!(ids(&buf), [2]);
    assert_eq!(buf[0].pos, 52);
}

/// Opens the store at `dir` after changing 8 bytes of the first timer-log file at `at`.
fn poke_log(dir: &Path, at: usize, value: i64) {
    let path = dir.join("timerlog/00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at..at + 8].copy_from_slice(&value.to_be_bytes());
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn damaged_links_give_typed_errors_and_never_loop() {
    let clock = ManualClock::new(T0);
    let slot = T0 + 5000;
    // Units 0, 52, 104 in `slot`; unit 156 in another slot.
    let setup = || {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
        for id in 0..3 {
            store.enqueue(&req(id, slot + id)).unwrap();
        }
        store.enqueue(&req(9, slot + 1000)).unwrap();
        store.close(4).unwrap();
        dir
    };
    let expect_corrupt = |dir: &Path, want_offset: u64, needle: &str| {
        let store = TimerStore::open(real_fs(), dir, cfg(&clock)).unwrap();
        let mut buf = Vec::new();
        match store.slot_entries(slot, &mut buf) {
            Err(StoreError::Corrupt { path, offset, reason }) => {
                assert!(path.ends_with("timerlog/00000000000000000000"), "{}", path.display());
                assert_eq!(offset, want_offset, "{reason}");
                assert!(reason.contains(needle), "{reason}");
            }
            other => panic!("expected a corrupt-link error, got {other:?}"),
        }
    };
    // The prevPos of unit 52 is at byte 56.
    for (prev, needle) in [
        (52, "does not point backwards"),     // itself: a loop
        (104, "does not point backwards"),    // forwards
        (10_000, "does not point backwards"), // past the end
        (30, "unit boundary"),
    ] {
        let dir = setup();
        poke_log(dir.path(), 56, prev);
        expect_corrupt(dir.path(), 56, needle);
    }
    // A cycle through an older unit: unit 0 points back up to 104.
    let dir = setup();
    poke_log(dir.path(), 4, 104);
    expect_corrupt(dir.path(), 4, "does not point backwards");
    // A link into another slot's unit: unit 156 is not in `slot`. Make 104 point... to a unit
    // of the other slot placed before it: rewrite unit 0's delay so that it belongs elsewhere.
    let dir = setup();
    let path = dir.path().join("timerlog/00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[24..28].copy_from_slice(&9000i32.to_be_bytes());
    std::fs::write(&path, bytes).unwrap();
    expect_corrupt(dir.path(), 0, "in the list of slot time");
    // A unit that is not one (magic with high bits).
    let dir = setup();
    let path = dir.path().join("timerlog/00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[52 + 12..52 + 16].copy_from_slice(&0x100i32.to_be_bytes());
    std::fs::write(&path, bytes).unwrap();
    // Recovery ends the log at the damaged unit, and cuts the slot back to the unit before it.
    let store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    assert_eq!(store.recovery().log_end, 52);
    assert_eq!(store.recovery().slots_repaired, 1); // slot + 1000, whose only unit is gone
    let mut buf = Vec::new();
    store.slot_entries(slot, &mut buf).unwrap();
    assert_eq!(ids(&buf), [0]);
    store.slot_entries(slot + 1000, &mut buf).unwrap();
    assert!(buf.is_empty());
}

#[test]
fn a_wheel_ahead_of_the_log_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    for id in 0..4 {
        store.enqueue(&req(id, T0 + 5000)).unwrap();
    }
    store.close(4).unwrap();
    // The last two units never reached the disk; the wheel did.
    let path = dir.path().join("timerlog/00000000000000000000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[104..208].fill(0);
    std::fs::write(&path, bytes).unwrap();
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    let rec = store.recovery().clone();
    assert_eq!(rec.log_end, 104);
    // The scan relinked the slot to its last unit on disk.
    assert_eq!(rec.units_scanned, 2);
    assert!(rec.checkpointed_units_lost);
    let mut buf = Vec::new();
    store.slot_entries(T0 + 5000, &mut buf).unwrap();
    assert_eq!(ids(&buf), [0, 1]);
    // New units reuse the positions and link correctly.
    assert_eq!(stored(store.enqueue(&req(7, T0 + 5000)).unwrap()).0, 104);
    store.slot_entries(T0 + 5000, &mut buf).unwrap();
    assert_eq!(ids(&buf), [0, 1, 7]);
}

#[test]
fn a_slot_pointing_past_the_end_is_cut_back_to_its_units_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    // Slot A: unit 0 in the first file, unit 38 at 2104 in the third; slot B between.
    store.enqueue(&req(0, T0 + 5000)).unwrap();
    for id in 1..38 {
        store.enqueue(&req(id, T0 + 6000)).unwrap();
    }
    assert_eq!(stored(store.enqueue(&req(38, T0 + 5000)).unwrap()).0, 2104);
    store.close(39).unwrap();
    // Unit 38 is lost; the recovery scan starts in the second file (one file before the
    // checkpoint's flush position 2156), so it sees no unit of A.
    let path = dir.path().join("timerlog/00000000000000002000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[104..156].fill(0);
    std::fs::write(&path, bytes).unwrap();
    let store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    let rec = store.recovery().clone();
    assert_eq!((rec.scanned_from, rec.log_end, rec.slots_repaired), (1000, 2104, 1));
    let mut buf = Vec::new();
    store.slot_entries(T0 + 5000, &mut buf).unwrap();
    assert_eq!(ids(&buf), [0]);
    store.slot_entries(T0 + 6000, &mut buf).unwrap();
    assert_eq!(ids(&buf), (1..38).collect::<Vec<_>>());
}

#[test]
fn wrong_wheel_size_is_a_layout_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("timerwheel"), [0u8; 100]).unwrap();
    let clock = ManualClock::new(T0);
    match TimerStore::open(real_fs(), dir.path(), cfg(&clock)) {
        Err(StoreError::Layout { path, .. }) => assert!(path.ends_with("timerwheel")),
        other => panic!("expected a layout error, got {other:?}"),
    }
}

#[test]
fn read_files_are_removed_and_unread_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    // Files 0 and 1000 hold slots T0+1s..T0+2s; file 2000 holds T0+30s.
    for id in 0..36 {
        store.enqueue(&req(id, T0 + 1000 + (id % 2) * 1000)).unwrap();
    }
    for id in 36..40 {
        store.enqueue(&req(id, T0 + 30_000)).unwrap();
    }
    assert_eq!(store.log_files().len(), 3);
    clock.advance(5000);
    assert_eq!(drain(&mut store).len(), 2);
    // Read, but not checkpointed: kept.
    assert_eq!(store.delete_expired_files(0).unwrap(), 0);
    store.checkpoint(40).unwrap();
    assert_eq!(store.delete_expired_files(0).unwrap(), 2);
    assert_eq!(store.log_range(), (2000, 2000 + 4 * 52));
    assert!(!dir.path().join("timerlog/00000000000000000000").exists());
    store.close(40).unwrap();
    let mut store = TimerStore::open(real_fs(), dir.path(), cfg(&clock)).unwrap();
    clock.advance(30_000);
    let got = drain(&mut store);
    assert_eq!(ids(&got[0].1), [36, 37, 38, 39]);

    // Java's rule: the commit log no longer holds the messages of a file.
    for id in 40..80 {
        store.enqueue(&req(id, T0 + 60_000)).unwrap();
    }
    store.checkpoint(80).unwrap();
    let files = store.log_files().len();
    assert_eq!(store.delete_expired_files(57 * 100).unwrap(), 1, "only the file whose last message is below");
    assert_eq!(store.log_files().len(), files - 1);
    // The slot's list now reaches a removed file and ends there.
    let mut buf = Vec::new();
    store.slot_entries(T0 + 60_000, &mut buf).unwrap();
    assert_eq!(ids(&buf), (54..80).collect::<Vec<_>>());
}

#[test]
fn a_failed_sync_stops_writes() {
    let sim = SimFs::new(1);
    let fs: Arc<dyn Fs> = sim.clone();
    let clock = ManualClock::new(T0);
    let mut store = TimerStore::open(fs, Path::new("/store"), cfg(&clock)).unwrap();
    store.enqueue(&req(1, T0 + 5000)).unwrap();
    sim.fail_sync(1);
    assert!(store.checkpoint(1).is_err());
    assert!(matches!(store.enqueue(&req(2, T0 + 5000)), Err(StoreError::WritesStopped(_))));
    assert!(matches!(store.checkpoint(1), Err(StoreError::WritesStopped(_))));
}

// ---------------------------------------------------------------------------------------------
// Power loss.

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = mix(self.0);
        self.0 % n.max(1)
    }
}

const ROOT: &str = "/store";

/// A wheel of 1000 slots each way, so that no pending timer falls out of it during a run.
fn sim_cfg(clock: &Arc<ManualClock>) -> TimerConfig {
    TimerConfig { slots_total: 1000, ..cfg(clock) }
}

/// The broker's side, simulated: the timer topic's consume queue (id, deliver time) and what
/// was fired.
#[derive(Default)]
struct World {
    cq: Vec<(i64, i64)>,
    next_cq: usize,
    fired: Vec<i64>,
    /// At the last checkpoint that returned: (queue offset, read time, fired so far).
    checkpointed: Option<(i64, i64, usize)>,
}

impl World {
    /// Enqueues what the consume queue holds past `next_cq`; a due timer is fired at once.
    fn enqueue_all(&mut self, store: &mut TimerStore) -> Result<(), StoreError> {
        while let Some(&(id, deliver)) = self.cq.get(self.next_cq) {
            match store.enqueue(&req(id, deliver))? {
                Enqueued::Due => self.fired.push(id),
                Enqueued::Stored { .. } => {}
            }
            self.next_cq += 1;
        }
        Ok(())
    }

    /// Reads every due slot: fires normal timers, puts rolled ones back into the topic.
    fn dequeue_all(&mut self, store: &mut TimerStore, now: i64) -> Result<(), StoreError> {
        let mut buf = Vec::new();
        while let Some(slot) = store.due_slot() {
            store.slot_entries(slot, &mut buf)?;
            for e in &buf {
                let id = e.offset_py / 100;
                let deliver = self.cq.iter().find(|(i, _)| *i == id).map(|(_, d)| *d).unwrap();
                assert!(e.slot_time_ms < now, "slot {slot} read before it was due");
                if e.is_roll() {
                    assert!(e.slot_time_ms < deliver);
                    self.cq.push((id, deliver));
                } else {
                    assert_eq!(e.slot_time_ms / 1000, deliver / 1000, "timer {id} in the wrong slot");
                    self.fired.push(id);
                }
            }
            store.finish_slot(slot);
        }
        Ok(())
    }
}

/// Runs the workload of `seed` until it ends or the machine dies. Returns the world.
fn workload(seed: u64, fs: Arc<dyn Fs>, clock: &Arc<ManualClock>, world: &mut World) -> Result<(), StoreError> {
    let mut rng = Rng(seed);
    let mut store = TimerStore::open(fs, Path::new(ROOT), sim_cfg(clock))?;
    let mut next_id = 0i64;
    for _ in 0..60 {
        match rng.below(10) {
            0..=4 => {
                for _ in 0..1 + rng.below(6) {
                    let ahead = match rng.below(10) {
                        0 => 40_000 + rng.below(40_000) as i64, // rolls
                        1 => 0,
                        _ => 500 + rng.below(12_000) as i64,
                    };
                    world.cq.push((next_id, clock.now_ms() + ahead));
                    next_id += 1;
                }
                world.enqueue_all(&mut store)?;
            }
            5..=6 => {
                clock.advance(rng.below(2500) as i64);
                world.dequeue_all(&mut store, clock.now_ms())?;
            }
            _ => {
                world.enqueue_all(&mut store)?;
                let q = world.next_cq as i64;
                store.checkpoint(q)?;
                world.checkpointed = Some((q, store.read_time_ms(), world.fired.len()));
            }
        }
    }
    Ok(())
}

fn power_loss_seed(seed: u64) {
    // A dry run counts the operations; the real run loses power at one of them.
    let ops = {
        let sim = SimFs::new(seed);
        let clock = ManualClock::new(T0);
        workload(seed, sim.clone(), &clock, &mut World::default()).unwrap();
        sim.ops()
    };
    let sim = SimFs::new(seed);
    sim.power_fail_at_op(1 + mix(seed ^ 0x5eed) % ops.max(1));
    let clock = ManualClock::new(T0);
    let mut world = World::default();
    let crashed = workload(seed, sim.clone(), &clock, &mut world).is_err();
    assert!(crashed || !sim.is_dead(), "seed {seed}");

    let machine = sim.reboot();
    let mut store = TimerStore::open(machine, Path::new(ROOT), sim_cfg(&clock))
        .unwrap_or_else(|e| panic!("seed {seed}: recovery failed: {e}"));
    let rec = store.recovery().clone();
    let (q, read, fired_by_checkpoint) = world.checkpointed.unwrap_or((0, 0, 0));
    assert_eq!(rec.resume_queue_offset, q, "seed {seed}");
    // Reading resumes at the checkpoint (or later, if that fell out of the wheel: never here).
    assert!(rec.read_time_ms >= read, "seed {seed}");
    assert!(!rec.checkpointed_units_lost, "seed {seed}");
    let before: BTreeSet<i64> = world.fired[..fired_by_checkpoint].iter().copied().collect();

    // The broker enqueues again from the checkpoint and reads everything.
    let mut after_world = World { cq: world.cq.clone(), next_cq: q as usize, ..World::default() };
    after_world.enqueue_all(&mut store).unwrap();
    for _ in 0..12 {
        clock.advance(20_000);
        after_world.dequeue_all(&mut store, clock.now_ms()).unwrap();
        after_world.enqueue_all(&mut store).unwrap();
    }
    let after: BTreeSet<i64> = after_world.fired.iter().copied().collect();
    // Nothing read before the checkpoint is read again.
    let twice: Vec<&i64> = before.intersection(&after).collect();
    assert!(twice.is_empty(), "seed {seed}: fired again after recovery: {twice:?}");
    // Nothing checkpointed (or re-enqueued) is lost.
    let all: BTreeSet<i64> = world.cq.iter().map(|(id, _)| *id).collect();
    let fired: BTreeSet<i64> = before.union(&after).copied().collect();
    let lost: Vec<&i64> = all.difference(&fired).collect();
    assert!(lost.is_empty(), "seed {seed}: lost timers {lost:?} (checkpoint {:?})", world.checkpointed);
    // The store goes on.
    store.checkpoint(after_world.next_cq as i64).unwrap();
}

#[test]
fn power_loss_loses_nothing_checkpointed() {
    if let Some(seed) = std::env::var("SILO_TIMER_POWER_LOSS_SEED").ok().and_then(|s| s.parse().ok()) {
        power_loss_seed(seed);
        return;
    }
    let seeds: u64 = std::env::var("SILO_TIMER_POWER_LOSS_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    for seed in 0..seeds {
        power_loss_seed(seed);
    }
}
