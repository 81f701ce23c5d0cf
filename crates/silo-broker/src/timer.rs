//! Delivery of 5.x timer messages (docs/protocol.md §4.13): a message sent with
//! `TIMER_DELIVER_MS`, `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` waits in `rmq_sys_wheel_timer`
//! queue 0 with its wheel slot in `TIMER_OUT_MS` (admission is in [`crate::core::send`]). This
//! service moves it along, with Apache RocketMQ's timer files ([`silo_store::timer`]):
//!
//! 1. *enqueue*: the timer topic's queue is read from where the checkpoint left it; each message
//!    becomes a unit of the timer log in its slot of the wheel (or fires at once if its slot
//!    has passed);
//! 2. *fire*: every slot whose time has passed is read; its messages are stored again under
//!    their real topic and queue (a timer further away than the wheel's roll window goes back
//!    into the timer topic instead, to be enqueued again nearer its time);
//! 3. *checkpoint*, about every second and at shutdown: the timer files are made durable, then
//!    the progress. In synchronous-flush mode the fired messages are made durable first.
//!
//! Nothing per pending timer is kept in memory. After a clean stop every timer fires once;
//! after a crash, the timers read or enqueued since the last checkpoint are read again, so a
//! few may fire twice (never none).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use silo_store::timer::{Enqueued, TIMER_TOPIC, TimerConfig, TimerEntry, TimerRequest, TimerStore, hash_topic};
use silo_store::{Appender, MessageToStore, StoreError, TagFilter};
use silo_wire::properties::keys;
use silo_wire::record::{Decoded, StoredRecord, decode_record};

use crate::broker::Broker;

/// How often the service looks for new timers and due slots.
pub const TICK: Duration = Duration::from_millis(100);
/// How often the timer files are checkpointed.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The service's state between rounds.
#[derive(Debug)]
pub struct TimerService {
    store: TimerStore,
    /// Next offset of the timer topic's queue to enqueue.
    next_enqueue: i64,
    appender: Appender,
    props: String,
    entries: Vec<TimerEntry>,
    last_checkpoint: Instant,
    /// End offset of the last message fired, for the durability wait before a checkpoint.
    fired_end: Option<i64>,
    /// The delete keys of the slot being fired, and a buffer to build a message's key in.
    recalled: std::collections::HashSet<String>,
    key: String,
    /// After a crash: the commit-log offset of the last timer message the recovered log
    /// holds; messages of the timer topic up to it are not enqueued again.
    enqueued_through: Option<i64>,
}

/// What one round did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Round {
    pub enqueued: usize,
    pub fired: usize,
    pub rolled: usize,
    /// Timers not delivered because a delete marker in their slot recalled them.
    pub recalled: usize,
}

/// The timer files' settings for this broker.
pub fn timer_config(broker: &Broker) -> TimerConfig {
    TimerConfig {
        precision_ms: broker.config.timers.precision_ms,
        timer_log_file_size: broker.config.timer_log_file_size,
        roll_window_slots: broker.config.timer_roll_window_slots,
        clock: broker.config.clock.clone(),
        ..TimerConfig::default()
    }
}

/// Whether this store has ever held a timer (the timer files are created with the first).
pub fn has_timers(broker: &Broker) -> bool {
    broker.store.max_offset_in_queue(TIMER_TOPIC, 0) > 0
        || broker.store.config().fs.exists(&broker.config.store_path_root_dir.join(silo_store::timer::WHEEL_FILE))
}

impl TimerService {
    /// Opens (and recovers) the timer files.
    pub fn open(broker: &Broker) -> Result<Self, StoreError> {
        let root: &Path = &broker.config.store_path_root_dir;
        let store = TimerStore::open(Arc::clone(&broker.store.config().fs), root, timer_config(broker))?;
        let next_enqueue = store.recovery().resume_queue_offset;
        // Timers enqueued after the last checkpoint are in the recovered log already: the
        // timer topic's queue is in log order, so everything up to the last unit's message
        // was enqueued (or fired) and is not enqueued a second time.
        let enqueued_through = store.recovery().last_unit.map(|u| u.offset_py);
        Ok(Self {
            store,
            next_enqueue,
            enqueued_through,
            appender: Appender::new(),
            props: String::new(),
            entries: Vec::new(),
            recalled: std::collections::HashSet::new(),
            key: String::new(),
            last_checkpoint: Instant::now(),
            fired_end: None,
        })
    }

    /// One round: enqueues what arrived, fires what is due, checkpoints when it is time.
    pub fn run_once(&mut self, broker: &Broker) -> Result<Round, StoreError> {
        let mut round = Round::default();
        self.enqueue_new(broker, &mut round)?;
        self.fire_due(broker, &mut round)?;
        if self.last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
            self.checkpoint(broker)?;
        }
        Ok(round)
    }

    /// Makes the fired messages and the timer files durable, then records the progress.
    pub fn checkpoint(&mut self, broker: &Broker) -> Result<(), StoreError> {
        if let Some(end) = self.fired_end.take()
            && broker.store.flush_mode().is_sync()
        {
            broker.store.wait_durable(end)?;
        }
        self.store.checkpoint(self.next_enqueue)?;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// Checkpoints for the last time (a clean stop fires nothing twice).
    pub fn close(mut self, broker: &Broker) -> Result<(), StoreError> {
        if let Some(end) = self.fired_end.take() {
            broker.store.wait_durable(end)?;
        }
        self.store.close(self.next_enqueue)
    }

    fn enqueue_new(&mut self, broker: &Broker, round: &mut Round) -> Result<(), StoreError> {
        loop {
            let from = self.next_enqueue;
            let r = broker.store.get_messages(TIMER_TOPIC, 0, from, 256, 4 << 20, TagFilter::All);
            if r.messages.is_empty() {
                // Offsets whose files retention removed hold nothing to enqueue.
                if r.next_begin_offset > from && r.status != silo_store::GetStatus::OffsetOverflowOne {
                    self.next_enqueue = r.next_begin_offset;
                    continue;
                }
                return Ok(());
            }
            for m in &r.messages {
                let Ok(Decoded::Record(rec)) = decode_record(m, 0) else {
                    tracing::error!(offset = m.physical_offset(), "a timer message does not decode; skipped");
                    self.next_enqueue = m.queue_offset + 1;
                    continue;
                };
                let out_ms = rec.properties.get(keys::TIMER_OUT_MS).and_then(|v| v.parse::<i64>().ok());
                let Some(deliver_ms) = out_ms else {
                    tracing::error!(
                        offset = m.physical_offset(),
                        "a timer message without TIMER_OUT_MS; delivered now"
                    );
                    self.fire(broker, &rec, None)?;
                    round.fired += 1;
                    self.next_enqueue = m.queue_offset + 1;
                    continue;
                };
                if self.enqueued_through.is_some_and(|through| m.physical_offset() <= through) {
                    self.next_enqueue = m.queue_offset + 1;
                    continue;
                }
                let req = TimerRequest {
                    offset_py: m.physical_offset(),
                    size_py: i32::try_from(m.len()).unwrap_or(i32::MAX),
                    deliver_ms,
                    hash_topic: hash_topic(rec.properties.get(keys::REAL_TOPIC).unwrap_or("")),
                    delete: rec.properties.get(keys::TIMER_DEL_UNIQKEY).is_some(),
                };
                match self.store.enqueue(&req)? {
                    Enqueued::Stored { .. } => round.enqueued += 1,
                    Enqueued::Due => {
                        if !req.delete {
                            self.fire(broker, &rec, None)?;
                            round.fired += 1;
                        }
                    }
                }
                self.next_enqueue = m.queue_offset + 1;
            }
        }
    }

    fn fire_due(&mut self, broker: &Broker, round: &mut Round) -> Result<(), StoreError> {
        let mut finished = false;
        while let Some(slot) = self.store.due_slot() {
            let mut entries = std::mem::take(&mut self.entries);
            self.store.slot_entries(slot, &mut entries)?;
            // A slot's delete markers first (Java's order): the messages they name are not
            // delivered, whichever came first into the slot.
            self.recalled.clear();
            for e in entries.iter().filter(|e| e.is_delete()) {
                let Ok(stored) = broker.store.read_at(e.offset_py) else { continue };
                let Ok(Decoded::Record(rec)) = decode_record(&stored, 0) else { continue };
                let real_due = rec.properties.get(keys::TIMER_OUT_MS).and_then(|v| v.parse::<i64>().ok());
                if e.is_roll() && real_due.is_some_and(|due| due > e.slot_time_ms) {
                    // A marker for a far timer travels with it, roll by roll.
                    self.roll(broker, &rec)?;
                    round.rolled += 1;
                } else if let Some(key) = rec.properties.get(keys::TIMER_DEL_UNIQKEY) {
                    self.recalled.insert(key.to_owned());
                }
            }
            for e in &entries {
                if e.is_delete() {
                    continue;
                }
                let Ok(stored) = broker.store.read_at(e.offset_py) else {
                    tracing::warn!(offset = e.offset_py, "a timer's message has left the commit log; not delivered");
                    continue;
                };
                let Ok(Decoded::Record(rec)) = decode_record(&stored, 0) else { continue };
                if !self.recalled.is_empty() && self.is_recalled(&rec) {
                    round.recalled += 1;
                    continue;
                }
                let real_due = rec.properties.get(keys::TIMER_OUT_MS).and_then(|v| v.parse::<i64>().ok());
                if e.is_roll() && real_due.is_some_and(|due| due > e.slot_time_ms) {
                    self.roll(broker, &rec)?;
                    round.rolled += 1;
                } else {
                    self.fire(broker, &rec, Some(e.enqueue_time_ms))?;
                    round.fired += 1;
                }
            }
            self.entries = entries;
            self.store.finish_slot(slot);
            finished = true;
        }
        if finished {
            // What was fired is recorded at once, so that a crash does not fire it again.
            if let Some(end) = self.fired_end
                && broker.store.flush_mode().is_sync()
            {
                broker.store.wait_durable(end)?;
            }
            self.store.record_read_progress()?;
        }
        Ok(())
    }

    /// Whether one of the slot's delete markers names `rec` (`REAL_TOPIC+UNIQ_KEY`).
    fn is_recalled(&mut self, rec: &StoredRecord<'_>) -> bool {
        let (Some(topic), Some(key)) = (rec.properties.get(keys::REAL_TOPIC), rec.properties.get(keys::UNIQ_KEY))
        else {
            return false;
        };
        self.key.clear();
        let _ = write!(self.key, "{topic}+{key}");
        self.recalled.contains(self.key.as_str())
    }

    /// Stores a due timer message under its real topic and queue.
    fn fire(&mut self, broker: &Broker, rec: &StoredRecord<'_>, enqueued_ms: Option<i64>) -> Result<(), StoreError> {
        let p = rec.properties;
        let (Some(topic), Some(queue_id)) =
            (p.get(keys::REAL_TOPIC), p.get(keys::REAL_QID).and_then(|q| q.parse::<i32>().ok()))
        else {
            tracing::error!(offset = rec.meta.physical_offset, "a timer message without REAL_TOPIC/REAL_QID; dropped");
            return Ok(());
        };
        self.props.clear();
        p.push_without(
            &mut self.props,
            &[keys::REAL_TOPIC, keys::REAL_QID, keys::TIMER_ENQUEUE_MS, keys::TIMER_DEQUEUE_MS, keys::WAIT],
        );
        if let Some(ms) = enqueued_ms {
            let _ = write!(self.props, "{}\u{1}{ms}\u{2}", keys::TIMER_ENQUEUE_MS);
        }
        let now = broker.config.clock.now_ms();
        let _ = write!(self.props, "{}\u{1}{now}\u{2}{}\u{1}false\u{2}", keys::TIMER_DEQUEUE_MS, keys::WAIT);
        let msg = MessageToStore::again(rec, topic, queue_id, &self.props);
        if broker.topics.queues(topic).is_none() {
            broker.topics.ensure_system(topic, queue_id.saturating_add(1).max(1))?;
            broker.register_routes_if_changed();
        }
        let r = broker.store.append(&mut self.appender, &msg)?;
        self.fired_end = Some(r.end_offset);
        broker.stats.put_messages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Puts a far timer back into the timer topic, to be enqueued again nearer its time.
    fn roll(&mut self, broker: &Broker, rec: &StoredRecord<'_>) -> Result<(), StoreError> {
        let p = rec.properties;
        let times = p.get(keys::TIMER_ROLL_TIMES).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
        self.props.clear();
        p.push_without(&mut self.props, &[keys::TIMER_ROLL_TIMES]);
        let _ = write!(self.props, "{}\u{1}{}\u{2}", keys::TIMER_ROLL_TIMES, times + 1);
        let msg = MessageToStore::again(rec, TIMER_TOPIC, 0, &self.props);
        let r = broker.store.append(&mut self.appender, &msg)?;
        self.fired_end = Some(r.end_offset);
        Ok(())
    }
}

/// Runs until the broker shuts down. The timer files are opened when the first timer message
/// arrives (or at start, if the store has timers), so a broker that never sees one has none.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut service: Option<TimerService> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = shutdown.changed() => break,
        }
        if service.is_none() && has_timers(&broker) {
            let b = Arc::clone(&broker);
            match tokio::task::spawn_blocking(move || TimerService::open(&b)).await {
                Ok(Ok(s)) => service = Some(s),
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "the timer files cannot be opened; timer messages wait");
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, "opening the timer files panicked");
                    return;
                }
            }
        }
        let Some(mut s) = service.take() else { continue };
        let b = Arc::clone(&broker);
        match tokio::task::spawn_blocking(move || {
            let r = s.run_once(&b);
            (s, r)
        })
        .await
        {
            Ok((s, r)) => {
                if let Err(e) = r {
                    tracing::warn!(error = %e, "timer round failed; trying again");
                }
                service = Some(s);
            }
            Err(e) => {
                tracing::error!(error = %e, "timer round panicked; timers stop");
                return;
            }
        }
    }
    if let Some(s) = service {
        let b = Arc::clone(&broker);
        match tokio::task::spawn_blocking(move || s.close(&b)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "the timer files' last checkpoint failed"),
            Err(e) => tracing::error!(error = %e, "closing the timer files panicked"),
        }
    }
}
