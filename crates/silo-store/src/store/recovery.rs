//! Recovery (docs/store-format.md §7.5): load the consume queues, find the end of the valid
//! log, cut a torn tail, rebuild what is damaged and re-dispatch what the queues lack.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use silo_wire::record::{Decoded, decode_record};

use super::inner::Inner;
use crate::checkpoint::Checkpoint;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::names::is_valid_topic;

/// What recovery found and did, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub abnormal: bool,
    /// Where the recovery walk started.
    pub walk_from: i64,
    /// The end of the valid log.
    pub log_end: i64,
    /// Bytes past the last valid record that were dropped (a torn or garbled tail).
    pub truncated_bytes: u64,
    pub redispatched_records: u64,
    /// Consume queues found damaged (an invalid unit with data after it) and rebuilt.
    pub rebuilt_queues: usize,
    pub elapsed: Duration,
}

impl Inner {
    /// Loads every consume queue; returns those found damaged (to be rebuilt).
    pub(super) fn load_queues(&self) -> Result<Vec<Arc<ConsumeQueue>>> {
        let mut damaged = Vec::new();
        let root = self.config.consume_queue_dir();
        let fs = &self.config.fs;
        let topics = match fs.list_dir(&root) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(damaged),
            Err(e) => return Err(StoreError::io("list", &root)(e)),
        };
        for topic in topics {
            if !fs.is_dir(&topic) {
                continue;
            }
            let Some(name) = topic.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
            if !is_valid_topic(&name) {
                tracing::warn!(path = %topic.display(), "ignoring a consume-queue directory with an invalid topic name");
                continue;
            }
            for queue in fs.list_dir(&topic).map_err(StoreError::io("list", &topic))? {
                if !fs.is_dir(&queue) {
                    continue;
                }
                let Some(id) = queue
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|s| s.parse::<i32>().ok())
                    .filter(|id| *id >= 0)
                else {
                    continue;
                };
                if let Some(cq) = self.queue(&name, id)
                    && cq.load()? == crate::consume_queue::LoadOutcome::Damaged
                {
                    damaged.push(cq);
                }
            }
        }
        Ok(damaged)
    }

    /// Recovery (docs/store-format.md §7.5): find the end of the valid log, cut away a
    /// torn tail, make the consume queues agree with it, re-dispatch what they miss, and
    /// restore every queue's next offset.
    pub(super) fn recover(&self, abnormal: bool, checkpoint: Checkpoint) -> Result<RecoveryReport> {
        let damaged = self.load_queues()?;
        let segments = self.writer.commit_log.segments();
        let mut report = RecoveryReport { abnormal, rebuilt_queues: damaged.len(), ..Default::default() };
        if segments.is_empty() {
            // No log: no queue may name a record.
            for q in &damaged {
                q.reset()?;
            }
            for q in self.all_queues() {
                q.truncate_beyond(0)?;
            }
            let start = 0;
            self.writer.commit_log.truncate_to(start)?;
            self.dispatched.store(start, Ordering::Release);
            self.restore_offsets();
            return Ok(report);
        }
        // Where to start walking. After a clean shutdown the last three segments suffice (as in
        // Java); after a crash, the newest segment whose first record is older than what the
        // checkpoint says was both flushed and dispatched.
        let start_index = if !abnormal {
            segments.len().saturating_sub(3)
        } else {
            // The index too must be covered by the walk: its checkpoint time may lag the others.
            let min_ts = match self.index {
                Some(_) => checkpoint.min_timestamp().min((checkpoint.index_msg_timestamp - 3000).max(0)),
                None => checkpoint.min_timestamp(),
            };
            segments
                .iter()
                .enumerate()
                .rev()
                .find(|(_, seg)| match decode_record(seg.all_bytes(), 0) {
                    Ok(Decoded::Record(r)) => min_ts > 0 && r.meta.store_timestamp <= min_ts,
                    _ => false,
                })
                .map_or(0, |(i, _)| i)
        };
        let walk_from = segments.get(start_index).map_or(0, |s| s.start() as i64);
        report.walk_from = walk_from;

        // Pass 1: validate records up to the first invalid one.
        let mut end = walk_from;
        let mut last_store_timestamp = 0i64;
        // The first record the index may lack: one stored at or after the index's checkpoint
        // time. Entries of records stored in the same millisecond as the checkpoint's time may
        // have been written after it was taken, and an index file's header may have reached
        // the disk without them, so those records are indexed again (a query skips the
        // duplicate entries).
        let mut first_unindexed: Option<i64> = None;
        'segments: for seg in segments.iter().skip(start_index) {
            let bytes = seg.all_bytes();
            let mut pos = 0usize;
            while pos < bytes.len() {
                match decode_record(bytes.get(pos..).unwrap_or_default(), pos) {
                    Ok(Decoded::Record(rec)) => {
                        let expected = seg.start() as i64 + pos as i64;
                        if rec.meta.physical_offset != expected
                            || (self.config.check_crc_on_recover && !rec.body_crc_matches())
                        {
                            break 'segments;
                        }
                        if first_unindexed.is_none() && rec.meta.store_timestamp >= checkpoint.index_msg_timestamp {
                            first_unindexed = Some(expected);
                        }
                        pos += rec.total_size;
                        end = seg.start() as i64 + pos as i64;
                        last_store_timestamp = last_store_timestamp.max(rec.meta.store_timestamp);
                    }
                    Ok(Decoded::Blank { .. }) => {
                        end = seg.end() as i64;
                        continue 'segments;
                    }
                    Err(_) => break 'segments,
                }
            }
            end = seg.end() as i64;
        }
        let last = segments.last().map_or(0, |s| s.end() as i64);
        report.log_end = end;
        report.truncated_bytes = segments
            .iter()
            .filter(|s| s.end() as i64 > end)
            .map(|s| nonzero_run(s.all_bytes(), (end - s.start() as i64).max(0) as usize))
            .sum();
        let _ = last;
        self.writer.commit_log.truncate_to(end)?;

        // Damaged queues are rebuilt from the whole log; the others must not point past it.
        for q in &damaged {
            q.reset()?;
        }
        if !damaged.is_empty() {
            report.redispatched_records += self.rebuild_queues(&damaged, end);
        }
        for q in self.all_queues() {
            q.truncate_beyond(end)?;
        }
        // Pass 2: re-dispatch. After a crash, everything from the walk start: a unit already
        // present is skipped, so this only fills in what the queues miss (a queue file's pages
        // lost with the power). After a clean shutdown everything was dispatched up to the
        // queues' furthest coverage, and only what lies past it is dispatched again, as in
        // Java: so a deleted topic's records do not make its queues again.
        let covered = self.all_queues().iter().map(|q| q.max_physical_end()).max().unwrap_or(0);
        let redispatch_from = if abnormal { walk_from } else { covered.clamp(walk_from, end) };
        if abnormal && let Some(index) = &self.index {
            let mut index = index.lock().unwrap_or_else(|e| e.into_inner());
            index.discard_newer_than(checkpoint.index_msg_timestamp)?;
        }
        let index_covered = match abnormal {
            true => self.index_end().min(first_unindexed.unwrap_or(end)),
            false => self.index_end(),
        };
        self.index_covered.store(index_covered, Ordering::Release);
        self.dispatched.store(redispatch_from, Ordering::Release);
        report.redispatched_records += self.dispatch_available(end);
        // Queues must not start before the oldest record still in the log.
        let log_min = self.writer.commit_log.min_offset();
        for q in self.all_queues() {
            q.correct_min_offset(log_min)?;
        }
        self.restore_offsets();
        // Store timestamps never go backwards across a restart either: recovery after a
        // crash relies on them to find where to start.
        let mut state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        state.last_store_timestamp = last_store_timestamp;
        drop(state);
        Ok(report)
    }

    pub(super) fn index_end(&self) -> i64 {
        match &self.index {
            Some(index) => index.lock().unwrap_or_else(|e| e.into_inner()).end_phys_offset(),
            None => 0,
        }
    }

    /// Rebuilds the next queue and LMQ offsets from the consume queues.
    pub(super) fn restore_offsets(&self) {
        let mut state = self.writer.state.lock().unwrap_or_else(|e| e.into_inner());
        state.queue_offsets.clear();
        state.lmq_offsets.clear();
        for q in self.all_queues() {
            if crate::names::is_lmq(q.topic()) {
                state.lmq_offsets.insert(q.topic().into(), q.max_offset());
            } else {
                let slots = state.queue_offsets.entry(q.topic().into()).or_default();
                let i = q.queue_id() as usize;
                if slots.len() <= i {
                    slots.resize(i + 1, 0);
                }
                if let Some(s) = slots.get_mut(i) {
                    *s = q.max_offset();
                }
            }
        }
        state.current = self.writer.commit_log.last_segment();
    }
}

/// How many bytes from `from` on hold data before the segment's zeros begin: the bytes a
/// recovery cuts. Scanned a chunk at a time up to the first chunk of zeros only, so a restart
/// reads what lies past the log's end, never the whole (mostly unwritten) segment.
fn nonzero_run(bytes: &[u8], from: usize) -> u64 {
    const CHUNK: usize = 64 * 1024;
    let mut last_nonzero = None;
    for (i, chunk) in bytes.get(from..).unwrap_or_default().chunks(CHUNK).enumerate() {
        match chunk.iter().rposition(|b| *b != 0) {
            Some(p) => last_nonzero = Some(i * CHUNK + p),
            None => break,
        }
    }
    last_nonzero.map_or(0, |p| p as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::nonzero_run;

    #[test]
    fn the_cut_tail_is_measured_up_to_the_first_run_of_zeros() {
        let mut seg = vec![0u8; 1 << 20];
        assert_eq!(nonzero_run(&seg, 100), 0);
        seg[100..150].fill(7);
        seg[70_000] = 1; // past a gap shorter than a chunk: still part of the torn tail
        assert_eq!(nonzero_run(&seg, 100), 70_000 - 100 + 1);
        seg[900_000] = 1; // beyond a whole chunk of zeros: not looked at
        assert_eq!(nonzero_run(&seg, 100), 70_000 - 100 + 1);
        assert_eq!(nonzero_run(&seg, 2 << 20), 0);
    }
}
