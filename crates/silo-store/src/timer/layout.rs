//! Byte layouts of the three timer files (docs/store-format.md §10): the 52-byte timer-log unit,
//! the 32-byte wheel slot and the 56 bytes of `config/timercheck`. Pure encoding and decoding;
//! every integer is big-endian, as Java's `ByteBuffer` writes it.

/// Bytes of one timer-log unit.
pub const UNIT_SIZE: usize = 52;
/// Bytes of one wheel slot.
pub const SLOT_SIZE: usize = 32;
/// The shortest blank record at the end of a timer-log file: `size`, `prevPos`, `magic`. A unit
/// is only placed where it leaves at least this much room behind it.
pub const MIN_BLANK_LEN: usize = 16;
/// `magic` of the blank record that fills the end of a timer-log file. Java writes it as
/// `0xBBCCDDEE ^ 1880681586 + 8`; `+` binds first, so it is `0xBBCCDDEE ^ 1880681594`.
pub const BLANK_MAGIC_CODE: i32 = (0xBBCC_DDEE_u32 ^ 1_880_681_594_u32) as i32;
/// Offset of `offsetPy` inside a unit (Java `UNIT_PRE_SIZE_FOR_MSG`).
pub const UNIT_PRE_SIZE_FOR_MSG: usize = 28;

/// Magic bit of every unit.
pub const MAGIC_DEFAULT: i32 = 1;
/// The unit's slot is a stop on the way: when it is due, the message goes back into the timer
/// topic and is enqueued again, towards its real time.
pub const MAGIC_ROLL: i32 = 1 << 1;
/// The unit is a delete marker (a recalled timer), not a timer to fire.
pub const MAGIC_DELETE: i32 = 1 << 2;

/// Bytes of `config/timercheck` (Java maps one 4 KiB page).
pub const CHECKPOINT_FILE_SIZE: usize = 4096;
/// Bytes of `config/timercheck` that hold values.
pub const CHECKPOINT_LEN: usize = 56;

/// Java's validity rule for a unit's magic: only the four low bits may be set.
pub fn is_magic_ok(magic: i32) -> bool {
    (magic | 0xF) == 0xF
}

pub(crate) fn get_i64(b: &[u8], at: usize) -> i64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map_or(0, i64::from_be_bytes)
}

pub(crate) fn get_i32(b: &[u8], at: usize) -> i32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, i32::from_be_bytes)
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = out.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

/// One timer-log unit, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerUnit {
    /// Always [`UNIT_SIZE`] for a unit.
    pub size: i32,
    /// Global timer-log offset of the previous unit of the same slot, -1 for the slot's first.
    pub prev_pos: i64,
    pub magic: i32,
    /// The store's write time when the unit was appended (`currWriteTimeMs`: the wall clock
    /// rounded down to the precision, never moving back).
    pub write_time_ms: i64,
    /// The unit's slot time minus `write_time_ms`.
    pub delay_ms: i32,
    /// Commit-log offset of the message (in the timer topic).
    pub offset_py: i64,
    /// Size of that stored message.
    pub size_py: i32,
    /// Java `String.hashCode` of the real topic (for metrics), 0 without one.
    pub hash_topic: i32,
    /// Written as 0.
    pub reserved: i64,
}

impl TimerUnit {
    pub fn encode(&self) -> [u8; UNIT_SIZE] {
        let mut out = [0u8; UNIT_SIZE];
        put(&mut out, 0, &self.size.to_be_bytes());
        put(&mut out, 4, &self.prev_pos.to_be_bytes());
        put(&mut out, 12, &self.magic.to_be_bytes());
        put(&mut out, 16, &self.write_time_ms.to_be_bytes());
        put(&mut out, 24, &self.delay_ms.to_be_bytes());
        put(&mut out, 28, &self.offset_py.to_be_bytes());
        put(&mut out, 36, &self.size_py.to_be_bytes());
        put(&mut out, 40, &self.hash_topic.to_be_bytes());
        put(&mut out, 44, &self.reserved.to_be_bytes());
        out
    }

    pub fn decode(b: &[u8; UNIT_SIZE]) -> Self {
        Self {
            size: get_i32(b, 0),
            prev_pos: get_i64(b, 4),
            magic: get_i32(b, 12),
            write_time_ms: get_i64(b, 16),
            delay_ms: get_i32(b, 24),
            offset_py: get_i64(b, 28),
            size_py: get_i32(b, 36),
            hash_topic: get_i32(b, 40),
            reserved: get_i64(b, 44),
        }
    }

    /// The unit's slot time: `write_time_ms + delay_ms`.
    pub fn slot_time_ms(&self) -> i64 {
        self.write_time_ms.saturating_add(i64::from(self.delay_ms))
    }

    /// What recovery accepts as a unit. Java's rule is `size == 52` and a magic with only the
    /// four low bits; Silo also wants a message behind it (`sizePy > 0`, `offsetPy >= 0`),
    /// which every unit Java or Silo writes has and a unit torn across two pages (its second
    /// half still zeros) has not.
    pub fn is_valid(&self) -> bool {
        self.size == UNIT_SIZE as i32 && is_magic_ok(self.magic) && self.size_py > 0 && self.offset_py >= 0
    }
}

/// The blank record that fills the last `len` bytes of a timer-log file (only its first 16
/// bytes are written).
pub fn blank_record(len: usize) -> [u8; MIN_BLANK_LEN] {
    let mut out = [0u8; MIN_BLANK_LEN];
    put(&mut out, 0, &i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes());
    put(&mut out, 12, &BLANK_MAGIC_CODE.to_be_bytes());
    out
}

/// One wheel slot, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// The slot's time divided by the precision (Java stores `timeMs / precisionMs`).
    pub time_units: i64,
    /// Global timer-log offset of the slot's first unit.
    pub first_pos: i64,
    /// Global timer-log offset of the slot's last unit: the head of its backward list.
    pub last_pos: i64,
    /// Timers in the slot (delete markers count -1). Advisory: only flow control reads it.
    pub num: i32,
    /// Unused by Java ("no use now, just keep it"); kept as found.
    pub magic: i32,
}

impl Slot {
    pub fn encode(&self) -> [u8; SLOT_SIZE] {
        let mut out = [0u8; SLOT_SIZE];
        put(&mut out, 0, &self.time_units.to_be_bytes());
        put(&mut out, 8, &self.first_pos.to_be_bytes());
        put(&mut out, 16, &self.last_pos.to_be_bytes());
        put(&mut out, 24, &self.num.to_be_bytes());
        put(&mut out, 28, &self.magic.to_be_bytes());
        out
    }

    pub fn decode(b: &[u8]) -> Self {
        Self {
            time_units: get_i64(b, 0),
            first_pos: get_i64(b, 8),
            last_pos: get_i64(b, 16),
            num: get_i32(b, 24),
            magic: get_i32(b, 28),
        }
    }
}

/// The values of `config/timercheck`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerCheckpoint {
    /// The first slot time not yet completely fired: reading resumes there.
    pub last_read_time_ms: i64,
    /// A timer-log offset up to which the log was on disk when the checkpoint was taken.
    pub last_timer_log_flush_pos: i64,
    /// The next offset of the timer topic's consume queue to enqueue from.
    pub last_timer_queue_offset: i64,
    /// The same, as the master last reported it (a master writes its own value).
    pub master_timer_queue_offset: i64,
    /// `DataVersion.stateVersion`.
    pub state_version: i64,
    /// `DataVersion.timestamp`: when the progress last changed.
    pub version_timestamp: i64,
    /// `DataVersion.counter`: how many times the progress changed.
    pub version_counter: i64,
}

impl TimerCheckpoint {
    pub fn encode(&self) -> [u8; CHECKPOINT_LEN] {
        let mut out = [0u8; CHECKPOINT_LEN];
        for (chunk, v) in out.chunks_exact_mut(8).zip([
            self.last_read_time_ms,
            self.last_timer_log_flush_pos,
            self.last_timer_queue_offset,
            self.master_timer_queue_offset,
            self.state_version,
            self.version_timestamp,
            self.version_counter,
        ]) {
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        out
    }

    /// Decodes the first 56 bytes; missing bytes read as zeros.
    pub fn decode(b: &[u8]) -> Self {
        Self {
            last_read_time_ms: get_i64(b, 0),
            last_timer_log_flush_pos: get_i64(b, 8),
            last_timer_queue_offset: get_i64(b, 16),
            master_timer_queue_offset: get_i64(b, 24),
            state_version: get_i64(b, 32),
            version_timestamp: get_i64(b, 40),
            version_counter: get_i64(b, 48),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn blank_magic_is_javas_value() {
        // `System.out.println(0xBBCCDDEE ^ 1880681586 + 8)` prints -875286124.
        assert_eq!(BLANK_MAGIC_CODE, -875_286_124);
        assert_eq!(BLANK_MAGIC_CODE as u32, 0xCBD4_3194);
        assert_eq!(blank_record(40), [0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0xCB, 0xD4, 0x31, 0x94]);
    }

    #[test]
    fn unit_bytes_are_javas_layout() {
        let unit = TimerUnit {
            size: 52,
            prev_pos: -1,
            magic: MAGIC_DEFAULT | MAGIC_ROLL,
            write_time_ms: 0x0102_0304_0506_0708,
            delay_ms: 1000,
            offset_py: 0x1122,
            size_py: 300,
            hash_topic: -2,
            reserved: 0,
        };
        #[rustfmt::skip]
        let expected: [u8; 52] = [
            0, 0, 0, 52,                                     // size
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,  // prevPos -1
            0, 0, 0, 3,                                      // magic DEFAULT|ROLL
            1, 2, 3, 4, 5, 6, 7, 8,                          // currWriteTime
            0, 0, 0x03, 0xE8,                                // delay 1000
            0, 0, 0, 0, 0, 0, 0x11, 0x22,                    // offsetPy
            0, 0, 0x01, 0x2C,                                // sizePy 300
            0xFF, 0xFF, 0xFF, 0xFE,                          // hashTopic -2
            0, 0, 0, 0, 0, 0, 0, 0,                          // reserved
        ];
        assert_eq!(unit.encode(), expected);
        assert_eq!(TimerUnit::decode(&expected), unit);
        assert_eq!(unit.slot_time_ms(), 0x0102_0304_0506_0708 + 1000);
        assert_eq!(&expected[UNIT_PRE_SIZE_FOR_MSG..UNIT_PRE_SIZE_FOR_MSG + 8], &0x1122i64.to_be_bytes());
        assert!(unit.is_valid());
        assert!(!TimerUnit { size_py: 0, ..unit }.is_valid());
        assert!(!TimerUnit { magic: 0x10, ..unit }.is_valid());
        assert!(!TimerUnit { size: 51, ..unit }.is_valid());
    }

    #[test]
    fn slot_bytes_are_javas_layout() {
        let slot = Slot { time_units: 1_700_000_000, first_pos: 52, last_pos: 104, num: 2, magic: 0 };
        #[rustfmt::skip]
        let expected: [u8; 32] = [
            0, 0, 0, 0, 0x65, 0x53, 0xF1, 0x00,  // 1_700_000_000
            0, 0, 0, 0, 0, 0, 0, 52,             // firstPos
            0, 0, 0, 0, 0, 0, 0, 104,            // lastPos
            0, 0, 0, 2,                          // num
            0, 0, 0, 0,                          // magic
        ];
        assert_eq!(slot.encode(), expected);
        assert_eq!(Slot::decode(&expected), slot);
    }

    #[test]
    fn checkpoint_bytes_are_javas_layout() {
        let cp = TimerCheckpoint {
            last_read_time_ms: 1,
            last_timer_log_flush_pos: 2,
            last_timer_queue_offset: 3,
            master_timer_queue_offset: 4,
            state_version: 5,
            version_timestamp: 6,
            version_counter: 7,
        };
        let bytes = cp.encode();
        for i in 0..7 {
            let mut field = [0u8; 8];
            field[7] = i as u8 + 1;
            assert_eq!(&bytes[i * 8..i * 8 + 8], &field, "field {i}");
        }
        assert_eq!(TimerCheckpoint::decode(&bytes), cp);
        // A file shorter than 56 bytes (or none) reads as zeros past its end.
        let short = TimerCheckpoint::decode(&bytes[..32]);
        assert_eq!(short.master_timer_queue_offset, 4);
        assert_eq!(short.version_counter, 0);
    }
}
