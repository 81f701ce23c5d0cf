//! Timer messages (RocketMQ 5.x, RIP-43): the store's part. Pending timers live on disk in
//! Apache RocketMQ 5.3.3's own files, so that a Java broker continues Silo's pending timers and
//! the other way round (docs/store-format.md §10):
//!
//! * `timerwheel`: one mapped file of `2 × slots_total` 32-byte slots. The slot of a time holds
//!   the time (divided by the precision), the timer-log offsets of its first and last unit,
//!   and a count.
//! * `timerlog/`: mapped files of 52-byte units. Each unit names a message of the timer topic
//!   by commit-log offset and size, and points back to the previous unit of its slot: a slot's
//!   timers are a backward-linked list through the log, headed by the slot's `lastPos`.
//! * `config/timercheck`: how far reading (firing) and enqueueing had got when the log and the
//!   wheel were last made durable.
//!
//! Nothing is kept in the heap per pending timer: the wheel and the log are mapped regions.
//!
//! The broker drives a [`TimerStore`] (one owner, `&mut self` for every change):
//! 1. *enqueue*: it reads the timer topic's consume queue from
//!    [`TimerRecovery::resume_queue_offset`] on, and for each message calls
//!    [`TimerStore::enqueue`] with the message's `TIMER_OUT_MS`. [`Enqueued::Due`] means the
//!    timer is already due: the broker fires it itself, now.
//! 2. *dequeue*: [`TimerStore::due_slot`] gives the oldest slot that is due, skipping empty ones;
//!    [`TimerStore::slot_entries`] lists its timers; the broker fires them (a unit with
//!    [`MAGIC_ROLL`] goes back into the timer topic instead, a [`MAGIC_DELETE`] unit cancels
//!    the timer it names), then calls [`TimerStore::finish_slot`].
//! 3. *checkpoint*, every second or so and at shutdown: [`TimerStore::checkpoint`] with the
//!    next consume-queue offset to enqueue, once every message below it is either enqueued or
//!    fired.

mod checkpoint;
pub mod layout;
mod log;
mod wheel;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use layout::{
    BLANK_MAGIC_CODE, CHECKPOINT_FILE_SIZE, CHECKPOINT_LEN, MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL, MIN_BLANK_LEN,
    SLOT_SIZE, Slot, TimerCheckpoint, TimerUnit, UNIT_SIZE, is_magic_ok,
};

use self::checkpoint::CheckpointFile;
use self::log::{Found, TimerLog};
use self::wheel::Wheel;
use crate::clock::Clock;
use crate::error::{Result, StoreError};
use crate::fs::Fs;

/// The topic that holds timer messages until they are due.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Days the wheel covers at a precision of 1000 ms (Java `TIMER_WHEEL_TTL_DAY`).
pub const TIMER_WHEEL_TTL_DAY: usize = 7;
pub const DAY_SECS: usize = 24 * 3600;
/// Java's slot count, whatever the precision: `7 × 86 400` (the file has twice as many slots).
pub const DEFAULT_SLOTS_TOTAL: usize = TIMER_WHEEL_TTL_DAY * DAY_SECS;
/// Slots kept free between the roll window and the end of the wheel (Java `TIMER_BLANK_SLOTS`).
pub const TIMER_BLANK_SLOTS: i64 = 60;
/// Java `mappedFileSizeTimerLog`: 100 MiB.
pub const DEFAULT_TIMER_LOG_FILE_SIZE: usize = 100 * 1024 * 1024;
/// Java `timerRollWindowSlot`: 2 days of slots.
pub const DEFAULT_ROLL_WINDOW_SLOTS: i64 = 2 * DAY_SECS as i64;
/// Java `timerPrecisionMs`.
pub const DEFAULT_PRECISION_MS: i64 = 1000;

/// File names under the store root (Java `TimerMessageStore.getTimerWheelPath`,
/// `getTimerLogPath`, `BrokerPathConfigHelper.getTimerCheckPath`).
pub const WHEEL_FILE: &str = "timerwheel";
pub const LOG_DIR: &str = "timerlog";
pub const CHECKPOINT_FILE: &str = "config/timercheck";

/// Sizes and precision of the timer files.
#[derive(Debug, Clone)]
pub struct TimerConfig {
    /// Slot width. Snapped on open as Java's setter does: below 200 → 100, below 500 → 200,
    /// below 1000 → 500, else 1000. It must stay the same over the life of the files: a slot
    /// stores its time divided by the precision.
    pub precision_ms: i64,
    /// Bytes per timer-log file (Java `mappedFileSizeTimerLog`); at least 68.
    pub timer_log_file_size: usize,
    /// Java `slotsTotal`: the wheel file has `2 × slots_total` slots of 32 bytes. Java fixes it
    /// at `7 × 86 400` whatever the precision (so the wheel spans 14 days at 1000 ms, 1.4 days at
    /// 100 ms); other values are for tests and make files Java does not open.
    pub slots_total: usize,
    /// Java `timerRollWindowSlot`: timers at least this many slots ahead of the write time are
    /// parked in a nearer slot and enqueued again from there (see [`MAGIC_ROLL`]). Values above
    /// `slots_total − 60` or below 2 mean `slots_total − 60`, as in Java.
    pub roll_window_slots: i64,
    /// The wall clock: the write time and the due time of slots come from it.
    pub clock: Arc<dyn Clock>,
}

impl Default for TimerConfig {
    fn default() -> Self {
        Self {
            precision_ms: DEFAULT_PRECISION_MS,
            timer_log_file_size: DEFAULT_TIMER_LOG_FILE_SIZE,
            slots_total: DEFAULT_SLOTS_TOTAL,
            roll_window_slots: DEFAULT_ROLL_WINDOW_SLOTS,
            clock: crate::clock::system(),
        }
    }
}

impl TimerConfig {
    /// Java `MessageStoreConfig.setTimerPrecisionMs`.
    pub fn snap_precision(ms: i64) -> i64 {
        match ms {
            i64::MIN..200 => 100,
            200..500 => 200,
            500..1000 => 500,
            _ => 1000,
        }
    }

    /// Bytes of the `timerwheel` file: `slots_total × 2 × 32` (38 707 200 by default).
    pub fn wheel_file_size(&self) -> usize {
        self.slots_total.saturating_mul(2).saturating_mul(SLOT_SIZE)
    }

    /// The roll window in slots, after Java's clamp.
    pub fn effective_roll_window_slots(&self) -> i64 {
        let max = i64::try_from(self.slots_total).unwrap_or(i64::MAX) - TIMER_BLANK_SLOTS;
        if self.roll_window_slots > max || self.roll_window_slots < 2 { max } else { self.roll_window_slots }
    }

    fn checked(mut self, root: &Path) -> Result<Self> {
        self.precision_ms = Self::snap_precision(self.precision_ms);
        let bad = |reason: String| StoreError::Layout { path: root.to_owned(), reason };
        if self.timer_log_file_size < UNIT_SIZE + MIN_BLANK_LEN || self.timer_log_file_size > i32::MAX as usize {
            return Err(bad(format!("timer-log file size {} is not in 68..=2^31-1", self.timer_log_file_size)));
        }
        let span = i64::try_from(self.slots_total).unwrap_or(i64::MAX).saturating_mul(self.precision_ms);
        if self.slots_total < 64 || span > i64::from(i32::MAX) {
            return Err(bad(format!(
                "timer slots_total {} must be at least 64 and span at most 2^31-1 ms at {} ms",
                self.slots_total, self.precision_ms
            )));
        }
        Ok(self)
    }
}

/// A timer to enqueue: a message stored in [`TIMER_TOPIC`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerRequest {
    /// Commit-log offset and size of the message in the timer topic.
    pub offset_py: i64,
    pub size_py: i32,
    /// When it is due: the message's `TIMER_OUT_MS` (already rounded by admission).
    pub deliver_ms: i64,
    /// [`hash_topic`] of the message's `REAL_TOPIC`.
    pub hash_topic: i32,
    /// A delete marker (the message has `TIMER_DEL_UNIQKEY`).
    pub delete: bool,
}

/// Java's `hashTopicForMetrics`: `String.hashCode` of the real topic.
pub fn hash_topic(real_topic: &str) -> i32 {
    silo_wire::checksum::java_string_hash(real_topic)
}

/// What [`TimerStore::enqueue`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// A unit was appended at timer-log offset `pos`, in the slot of `slot_time_ms`. `rolled`:
    /// the timer is further away than the roll window, so the slot is a stop on the way
    /// (the unit has [`MAGIC_ROLL`]); its real time stays in the message's `TIMER_OUT_MS`.
    Stored { pos: i64, slot_time_ms: i64, rolled: bool },
    /// The timer is due already (its time is before the write time, or its slot was read):
    /// nothing was stored, the broker fires it now.
    Due,
}

/// One timer of a slot, as [`TimerStore::slot_entries`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerEntry {
    /// Timer-log offset of the unit.
    pub pos: i64,
    /// Commit-log offset and size of the message in the timer topic.
    pub offset_py: i64,
    pub size_py: i32,
    pub magic: i32,
    /// The write time when it was enqueued (Java passes it on as `TIMER_ENQUEUE_MS`).
    pub enqueue_time_ms: i64,
    /// The time the unit was put at (`enqueue_time_ms + delay`), inside the slot read. For a
    /// rolled unit this is not the timer's real time: that is the message's `TIMER_OUT_MS`.
    pub slot_time_ms: i64,
    pub hash_topic: i32,
}

impl TimerEntry {
    pub fn is_roll(&self) -> bool {
        self.magic & MAGIC_ROLL != 0
    }

    pub fn is_delete(&self) -> bool {
        self.magic & MAGIC_DELETE != 0
    }

    fn from_unit(pos: i64, u: &TimerUnit) -> Self {
        Self {
            pos,
            offset_py: u.offset_py,
            size_py: u.size_py,
            magic: u.magic,
            enqueue_time_ms: u.write_time_ms,
            slot_time_ms: u.slot_time_ms(),
            hash_topic: u.hash_topic,
        }
    }
}

/// What opening found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerRecovery {
    /// `config/timercheck` as found (zeros for a new store).
    pub checkpoint: TimerCheckpoint,
    /// The consume-queue offset of [`TIMER_TOPIC`] (queue 0) to enqueue from.
    pub resume_queue_offset: i64,
    /// The first slot time that will be read.
    pub read_time_ms: i64,
    /// Timer-log offset where the recovery scan began (the start of the file before the one
    /// holding the checkpoint's flush position, as in Java).
    pub scanned_from: i64,
    /// Units found by the scan, each of which was linked into its slot again.
    pub units_scanned: u64,
    /// The end of the timer log: the first position that holds neither a unit nor a blank.
    pub log_end: i64,
    /// Timer-log files after the end that were removed.
    pub files_removed: usize,
    /// Slots (not yet read) that pointed past the end of the log and were repaired.
    pub slots_repaired: u64,
    /// The last unit of the log (Java finds the consume-queue offset of its message to
    /// re-check where to enqueue from).
    pub last_unit: Option<TimerEntry>,
    /// The log ends before the checkpoint's flush position: units the checkpoint covered are
    /// gone (damaged disk). Their messages are in the timer topic before
    /// `resume_queue_offset`; the broker must enqueue again from further back to keep them.
    pub checkpointed_units_lost: bool,
}

/// The timer files of one store (module docs).
#[derive(Debug)]
pub struct TimerStore {
    config: TimerConfig,
    wheel: Wheel,
    log: TimerLog,
    checkpoint_file: CheckpointFile,
    /// The values last written to `config/timercheck`.
    checkpointed: TimerCheckpoint,
    /// The next slot to read.
    read_time_ms: i64,
    /// `currWriteTimeMs`: the clock rounded down to the precision, never moving back.
    write_time_ms: i64,
    recovery: TimerRecovery,
    /// Why writes stopped: a failed sync leaves the files' state on disk unknown.
    stopped: Option<String>,
    /// Largest slot time in the oldest timer-log file, once computed: (file start, time).
    first_file_max_slot: Option<(u64, i64)>,
}

impl TimerStore {
    /// Opens (creating what is missing) the timer files under `store_root` and recovers them:
    ///
    /// 1. `config/timercheck` is read; the wheel is mapped (its size must be
    ///    `slots_total × 64`); the timer-log files are mapped.
    /// 2. From the start of the file before the one holding the checkpoint's flush position,
    ///    every unit up to the end of the log is linked into its slot again: the slot's
    ///    `lastPos` becomes the unit (a slot that held another time is reset to the unit
    ///    alone). The log ends at the first position holding neither a unit nor a blank; the
    ///    rest of that file is zeroed and later files are removed.
    /// 3. Every slot still to be read that points at or past the end of the log (the wheel
    ///    reached the disk before the log did) is cut back to its units below the end, or
    ///    emptied.
    /// 4. The repaired wheel is synced before anything new is appended.
    pub fn open(fs: Arc<dyn Fs>, store_root: &Path, config: TimerConfig) -> Result<Self> {
        let config = config.checked(store_root)?;
        let precision = config.precision_ms;
        fs.create_dir_all(store_root).map_err(StoreError::io("create", store_root))?;
        let (checkpoint_file, cp, _) = CheckpointFile::open(&fs, &store_root.join(CHECKPOINT_FILE))?;
        let mut wheel = Wheel::open(&fs, &store_root.join(WHEEL_FILE), config.slots_total, precision)?;
        let mut log = TimerLog::load(&fs, &store_root.join(LOG_DIR), config.timer_log_file_size)?;

        let write_time_ms = floor(config.clock.now_ms(), precision);
        let slots_total = i64::try_from(config.slots_total).unwrap_or(i64::MAX);
        let oldest = write_time_ms - slots_total * precision + TIMER_BLANK_SLOTS * precision;
        let mut read_time_ms = floor(cp.last_read_time_ms, precision).max(oldest);

        // 2. Link the units after the checkpoint into their slots again; find the end.
        let file_size = log.file_size() as i64;
        let begin = cp.last_timer_log_flush_pos.saturating_sub(file_size).max(0);
        let start_index = log.files().iter().rposition(|f| f.start() as i64 <= begin).unwrap_or(0);
        let scanned_from = log.files().get(start_index).map_or(0, |f| f.start() as i64);
        let scan = scan(&log, start_index, |pos, unit| revise(&mut wheel, pos, unit, true));
        if scan.stopped_early {
            tracing::warn!(end = scan.end, "the timer log ends before its last file does; later files are removed");
        }
        let files_removed = log.set_end(scan.end_index, scan.end as u64)?;
        let log_end = log.end();
        // A new timer store holds nothing to read: reading starts now, rather than a whole
        // turn of the wheel back (600,000 empty slots to step over before the first timer).
        if cp.last_read_time_ms == 0 && log_end == 0 {
            read_time_ms = write_time_ms;
        }

        // 3. Slots that point past the end of the log.
        let slots_repaired = repair_slots_past_end(&mut wheel, &log, read_time_ms);

        // 4. Make the repairs durable before the log positions past the end are reused.
        wheel.sync()?;

        let checkpointed_units_lost = cp.last_timer_log_flush_pos > log_end;
        if checkpointed_units_lost {
            tracing::error!(
                flush_pos = cp.last_timer_log_flush_pos,
                log_end,
                "the timer log ends before its checkpointed flush position: checkpointed timers are lost"
            );
        }
        let recovery = TimerRecovery {
            checkpoint: cp,
            resume_queue_offset: cp.last_timer_queue_offset,
            read_time_ms,
            scanned_from,
            units_scanned: scan.units,
            log_end,
            files_removed,
            slots_repaired,
            last_unit: scan.last,
            checkpointed_units_lost,
        };
        tracing::info!(?recovery, "timer store recovered");
        Ok(Self {
            config,
            wheel,
            log,
            checkpoint_file,
            checkpointed: cp,
            read_time_ms,
            write_time_ms,
            recovery,
            stopped: None,
            first_file_max_slot: None,
        })
    }

    pub fn config(&self) -> &TimerConfig {
        &self.config
    }

    pub fn recovery(&self) -> &TimerRecovery {
        &self.recovery
    }

    /// The values last written to `config/timercheck`.
    pub fn checkpointed(&self) -> &TimerCheckpoint {
        &self.checkpointed
    }

    /// The next slot time to read.
    pub fn read_time_ms(&self) -> i64 {
        self.read_time_ms
    }

    /// The write time (Java `currWriteTimeMs`), as of the last call that read the clock.
    pub fn write_time_ms(&self) -> i64 {
        self.write_time_ms
    }

    /// Global offsets of the first byte and of the end of the timer log.
    pub fn log_range(&self) -> (i64, i64) {
        (self.log.min_offset(), self.log.end())
    }

    /// Timer-log files on disk.
    pub fn log_files(&self) -> Vec<PathBuf> {
        self.log.files().iter().map(|f| f.path().to_owned()).collect()
    }

    fn advance_write_time(&mut self) {
        let now = floor(self.config.clock.now_ms(), self.config.precision_ms);
        self.write_time_ms = self.write_time_ms.max(now);
    }

    fn check_writable(&self) -> Result<()> {
        match &self.stopped {
            Some(why) => Err(StoreError::WritesStopped(why.clone())),
            None => Ok(()),
        }
    }

    /// Enqueues one timer (Java `doEnqueue`): appends its unit to the timer log, linked to the
    /// slot's previous last unit, and makes it the slot's last unit.
    ///
    /// A timer at least `roll_window_slots` ahead of the write time goes, with [`MAGIC_ROLL`],
    /// into the slot half a window ahead when it is due less than a third of a window after the
    /// window's end, else into the slot a whole window ahead. A timer whose time is before the
    /// write time, or whose slot was already read, is [`Enqueued::Due`].
    pub fn enqueue(&mut self, req: &TimerRequest) -> Result<Enqueued> {
        self.check_writable()?;
        if req.size_py <= 0 || req.offset_py < 0 {
            return Err(StoreError::MessageIllegal(format!(
                "timer at commit-log offset {} with size {}",
                req.offset_py, req.size_py
            )));
        }
        self.advance_write_time();
        let precision = self.config.precision_ms;
        let write = self.write_time_ms;
        if req.deliver_ms < write || floor(req.deliver_ms, precision) < self.read_time_ms {
            return Ok(Enqueued::Due);
        }
        let window_slots = self.config.effective_roll_window_slots();
        let window = window_slots * precision;
        let mut slot_time = req.deliver_ms;
        let mut magic = MAGIC_DEFAULT;
        let rolled = slot_time - write >= window;
        if rolled {
            magic |= MAGIC_ROLL;
            slot_time = if slot_time - write - window < window_slots / 3 * precision {
                write + window_slots / 2 * precision
            } else {
                write + window
            };
        }
        if req.delete {
            magic |= MAGIC_DELETE;
        }
        let delay = i32::try_from(slot_time - write).map_err(|_| {
            StoreError::MessageIllegal(format!("timer delay {} ms does not fit the timer log", slot_time - write))
        })?;
        let index = self.wheel.index(slot_time);
        let slot = self.wheel.get(slot_time).unwrap_or(Slot { first_pos: -1, last_pos: -1, ..Slot::default() });
        let unit = TimerUnit {
            size: UNIT_SIZE as i32,
            prev_pos: slot.last_pos,
            magic,
            write_time_ms: write,
            delay_ms: delay,
            offset_py: req.offset_py,
            size_py: req.size_py,
            hash_topic: req.hash_topic,
            reserved: 0,
        };
        let pos = self.log.append(&unit.encode())?;
        self.wheel.put_raw(
            index,
            &Slot {
                time_units: self.wheel.time_units(slot_time),
                first_pos: if slot.first_pos == -1 { pos } else { slot.first_pos },
                last_pos: pos,
                num: if req.delete { slot.num.wrapping_sub(1) } else { slot.num.wrapping_add(1) },
                magic: slot.magic,
            },
        );
        Ok(Enqueued::Stored { pos, slot_time_ms: slot_time, rolled })
    }

    /// The slot of `slot_time_ms`, if it holds that time.
    pub fn slot(&self, slot_time_ms: i64) -> Option<Slot> {
        self.wheel.get(slot_time_ms)
    }

    /// The oldest slot that is due (its time is before the write time) and holds timers.
    /// Empty slots on the way count as read.
    pub fn due_slot(&mut self) -> Option<i64> {
        self.advance_write_time();
        while self.read_time_ms < self.write_time_ms {
            if self.wheel.get(self.read_time_ms).is_some() {
                return Some(self.read_time_ms);
            }
            self.read_time_ms += self.config.precision_ms;
        }
        None
    }

    /// Marks every slot up to and including that of `slot_time_ms` read: reading goes on with
    /// the next one. Call it once the slot's timers are fired (stored in their topics); a crash
    /// before the next checkpoint reads the slot again.
    pub fn finish_slot(&mut self, slot_time_ms: i64) {
        let next = floor(slot_time_ms, self.config.precision_ms) + self.config.precision_ms;
        self.read_time_ms = self.read_time_ms.max(next);
    }

    /// The timers of the slot of `slot_time_ms`, oldest first, into `out` (cleared first).
    ///
    /// Walks the slot's list from its last unit backwards. The walk always terminates: every
    /// link must point to an earlier position, or it is a [`StoreError::Corrupt`] naming the
    /// unit (or the slot) that holds the bad link; so is a link past the end of the log, one
    /// that is not a unit's position, or a unit of another slot. A link to a file retention
    /// already removed ends the list.
    pub fn slot_entries(&self, slot_time_ms: i64, out: &mut Vec<TimerEntry>) -> Result<()> {
        out.clear();
        let Some(slot) = self.wheel.get(slot_time_ms) else { return Ok(()) };
        let index = self.wheel.index(slot_time_ms);
        let want = self.wheel.time_units(slot_time_ms);
        let end = self.log.end();
        // Who holds the link being followed: the slot, then each unit.
        let mut holder: (PathBuf, u64) = (self.wheel.path().to_owned(), Wheel::byte_offset(index) + 16);
        let mut pos = slot.last_pos;
        let mut bound = end;
        while pos >= 0 {
            let corrupt = |holder: &(PathBuf, u64), reason: String| StoreError::Corrupt {
                path: holder.0.clone(),
                offset: holder.1,
                reason,
            };
            if pos >= bound {
                return Err(corrupt(
                    &holder,
                    if bound == end {
                        format!("timer link {pos} is past the end of the timer log ({end})")
                    } else {
                        format!("timer link {pos} does not point backwards (from {bound})")
                    },
                ));
            }
            if pos < self.log.min_offset() {
                tracing::warn!(pos, slot_time_ms, "a timer list reaches a removed timer-log file");
                break;
            }
            let Some(file) = self.log.file_for(pos) else {
                return Err(corrupt(&holder, format!("timer link {pos} is in no timer-log file")));
            };
            let in_file = (pos as u64 - file.start()) as usize;
            if !in_file.is_multiple_of(UNIT_SIZE) {
                return Err(corrupt(&holder, format!("timer link {pos} is not at a unit boundary")));
            }
            let unit_at = (file.path().to_owned(), in_file as u64);
            let Some(bytes) = file.readable(in_file, UNIT_SIZE).and_then(|b| b.first_chunk::<UNIT_SIZE>()) else {
                return Err(corrupt(&holder, format!("timer link {pos} is past the end of the timer log")));
            };
            let unit = TimerUnit::decode(bytes);
            if !unit.is_valid() {
                return Err(corrupt(
                    &unit_at,
                    format!("not a timer unit (size {}, magic {:#x}, sizePy {})", unit.size, unit.magic, unit.size_py),
                ));
            }
            if self.wheel.time_units(unit.slot_time_ms()) != want {
                return Err(corrupt(
                    &unit_at,
                    format!("unit of slot time {} in the list of slot time {slot_time_ms}", unit.slot_time_ms()),
                ));
            }
            out.push(TimerEntry::from_unit(pos, &unit));
            holder = (unit_at.0, unit_at.1 + 4);
            bound = pos;
            pos = unit.prev_pos;
        }
        out.reverse();
        Ok(())
    }

    /// Makes the timer files durable and records the progress in `config/timercheck`, in this
    /// order: the timer log (and the names of new files), then the wheel, then the checkpoint.
    /// So a checkpoint on disk never covers a unit or a slot that is not.
    ///
    /// `last_timer_queue_offset` is the next offset of the timer topic's consume queue to
    /// enqueue: every message below it must be enqueued, or, if it was [`Enqueued::Due`],
    /// fired. The read time recorded is [`read_time_ms`](Self::read_time_ms).
    ///
    /// A failed sync stops writes ([`StoreError::WritesStopped`] from then on): what it covered
    /// may not be on disk, and no later sync can prove it is. Reopening recovers.
    pub fn checkpoint(&mut self, last_timer_queue_offset: i64) -> Result<()> {
        self.check_writable()?;
        let result = self.write_checkpoint(last_timer_queue_offset);
        if let Err(e) = &result {
            self.stopped = Some(format!("a timer-store flush failed: {e}"));
        }
        result
    }

    /// Records only how far reading has got, keeping the last checkpoint's log position and
    /// queue offset (which were durable already): one small synced write, no log or wheel
    /// sync. Call it after the slots' timers are fired (and, with synchronous flush, durable),
    /// so that a crash does not fire them again; enqueue progress waits for
    /// [`checkpoint`](Self::checkpoint).
    pub fn record_read_progress(&mut self) -> Result<()> {
        self.check_writable()?;
        if self.read_time_ms <= self.checkpointed.last_read_time_ms {
            return Ok(());
        }
        let cp = TimerCheckpoint { last_read_time_ms: self.read_time_ms, ..self.checkpointed };
        let result = self.checkpoint_file.store(&cp);
        match &result {
            Ok(()) => self.checkpointed = cp,
            Err(e) => self.stopped = Some(format!("a timer checkpoint write failed: {e}")),
        }
        result
    }

    fn write_checkpoint(&mut self, last_timer_queue_offset: i64) -> Result<()> {
        self.log.flush()?;
        self.wheel.sync()?;
        let mut cp = TimerCheckpoint {
            last_read_time_ms: self.read_time_ms,
            last_timer_log_flush_pos: self.log.end(),
            last_timer_queue_offset,
            master_timer_queue_offset: last_timer_queue_offset,
            ..self.checkpointed
        };
        if cp.last_read_time_ms != self.checkpointed.last_read_time_ms
            || cp.last_timer_queue_offset != self.checkpointed.last_timer_queue_offset
            || cp.version_timestamp == 0
        {
            cp.version_timestamp = self.config.clock.now_ms();
            cp.version_counter = cp.version_counter.wrapping_add(1);
        }
        self.checkpoint_file.store(&cp)?;
        self.checkpointed = cp;
        Ok(())
    }

    /// Removes the oldest timer-log files that no timer needs any more, never the file being
    /// written. A file goes when either
    /// * every unit in it has a slot time before the *checkpointed* read time (all read, and a
    ///   crash cannot make them be read again), or
    /// * as in Java, the message of its last unit is below `min_commit_log_offset` (the commit
    ///   log no longer holds the file's messages, so its timers cannot fire anyway).
    ///
    /// Returns how many files were removed.
    pub fn delete_expired_files(&mut self, min_commit_log_offset: i64) -> Result<usize> {
        self.check_writable()?;
        let mut removed = 0;
        while let [first, _, ..] = self.log.files() {
            let start = first.start();
            let size = first.size();
            let bytes = first.all_bytes();
            // Java `getOffsetForLastUnit`: where the file's last unit is, units packed from 0.
            let last_at = size - (size - MIN_BLANK_LEN) % UNIT_SIZE - MIN_BLANK_LEN - UNIT_SIZE;
            let last = bytes.get(last_at..last_at + UNIT_SIZE).and_then(|b| b.first_chunk::<UNIT_SIZE>());
            let gone_from_commit_log =
                last.map(TimerUnit::decode).is_some_and(|u| u.is_valid() && u.offset_py < min_commit_log_offset);
            let max_slot = match self.first_file_max_slot {
                Some((s, t)) if s == start => t,
                _ => {
                    let t = bytes
                        .chunks_exact(UNIT_SIZE)
                        .filter_map(|c| c.first_chunk::<UNIT_SIZE>())
                        .map(TimerUnit::decode)
                        .take_while(TimerUnit::is_valid)
                        .map(|u| u.slot_time_ms())
                        .max()
                        .unwrap_or(i64::MIN);
                    self.first_file_max_slot = Some((start, t));
                    t
                }
            };
            let all_read = floor(max_slot, self.config.precision_ms) < self.checkpointed.last_read_time_ms;
            if !(all_read || gone_from_commit_log) {
                break;
            }
            tracing::info!(path = %first.path().display(), all_read, gone_from_commit_log, "removing a timer-log file");
            self.log.remove_first()?;
            removed += 1;
        }
        if removed > 0 {
            self.log.flush()?;
        }
        Ok(removed)
    }

    /// A checkpoint, then the files are closed (Java's shutdown).
    pub fn close(mut self, last_timer_queue_offset: i64) -> Result<()> {
        self.checkpoint(last_timer_queue_offset)
    }

    /// Path of `config/timercheck`.
    pub fn checkpoint_path(&self) -> &Path {
        self.checkpoint_file.path()
    }
}

fn floor(ms: i64, precision: i64) -> i64 {
    ms.div_euclid(precision) * precision
}

struct Scan {
    /// Index of the file the log ends in.
    end_index: usize,
    end: i64,
    units: u64,
    last: Option<TimerEntry>,
    /// The end is not in the last file.
    stopped_early: bool,
}

/// Walks the log from the start of file `start_index` to its end, calling `f` for every unit.
fn scan(log: &TimerLog, start_index: usize, mut f: impl FnMut(i64, &TimerUnit)) -> Scan {
    let files = log.files();
    let mut out = Scan {
        end_index: start_index,
        end: files.get(start_index).map_or(0, |f| f.start() as i64),
        units: 0,
        last: None,
        stopped_early: false,
    };
    for (index, file) in files.iter().enumerate().skip(start_index) {
        out.end_index = index;
        let mut pos = 0usize;
        loop {
            match log.probe(index, pos) {
                Found::Unit(unit) => {
                    let at = (file.start() + pos as u64) as i64;
                    f(at, &unit);
                    out.units += 1;
                    out.last = Some(TimerEntry::from_unit(at, &unit));
                    pos += UNIT_SIZE;
                }
                Found::Blank => {
                    out.end = file.end() as i64;
                    break;
                }
                Found::End => {
                    out.end = (file.start() + pos as u64) as i64;
                    out.stopped_early = index + 1 < files.len();
                    return out;
                }
            }
        }
    }
    out
}

/// Java `reviseSlot(time, IGNORE, pos, force)`: the unit at `pos` becomes its slot's last unit;
/// with `force`, a slot holding another time is reset to hold this unit alone.
fn revise(wheel: &mut Wheel, pos: i64, unit: &TimerUnit, force: bool) {
    let time = unit.slot_time_ms();
    let index = wheel.index(time);
    let mut slot = wheel.raw(index);
    if slot.time_units != wheel.time_units(time) {
        if force {
            let num = if unit.magic & MAGIC_DELETE != 0 { -1 } else { 1 };
            wheel.put_raw(
                index,
                &Slot { time_units: wheel.time_units(time), first_pos: pos, last_pos: pos, num, magic: 0 },
            );
        }
    } else if slot.last_pos != pos || slot.first_pos < 0 {
        if slot.first_pos < 0 {
            slot.first_pos = pos;
        }
        slot.last_pos = pos;
        wheel.put_raw(index, &slot);
    }
}

/// Java `checkPhyPos` and its second revision: slots still to be read (from `read_time_ms` on,
/// one turn of the wheel) that point at or past the end of the log. A slot whose first unit is
/// below the end is cut back to it and then relinked by scanning from there; any other is
/// emptied. Returns how many slots were repaired.
fn repair_slots_past_end(wheel: &mut Wheel, log: &TimerLog, read_time_ms: i64) -> u64 {
    let end = log.end();
    let min = log.min_offset();
    let slots = i64::try_from(wheel.slots()).unwrap_or(i64::MAX);
    let read_units = wheel.time_units(read_time_ms);
    let mut repaired = 0;
    let mut rescan_from: Option<i64> = None;
    for index in 0..wheel.slots() {
        let slot = wheel.raw(index);
        let expected = read_units + (index as i64 - read_units).rem_euclid(slots);
        if slot.time_units != expected || (slot.last_pos < end && slot.first_pos < end) {
            continue;
        }
        repaired += 1;
        if slot.first_pos >= min && slot.first_pos < end {
            wheel.put_raw(index, &Slot { last_pos: slot.first_pos, ..slot });
            rescan_from = Some(rescan_from.map_or(slot.first_pos, |r| r.min(slot.first_pos)));
        } else {
            wheel.put_raw(index, &Slot::default());
        }
    }
    if let Some(from) = rescan_from {
        tracing::warn!(slots = repaired, from, "timer slots pointed past the end of the timer log; relinking");
        let start_index = log.files().iter().rposition(|f| f.start() as i64 <= from).unwrap_or(0);
        scan(log, start_index, |pos, unit| revise(wheel, pos, unit, false));
    } else if repaired > 0 {
        tracing::warn!(slots = repaired, "timer slots pointed past the end of the timer log; emptied");
    }
    repaired
}
