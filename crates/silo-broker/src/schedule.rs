//! Delivery of delayed messages (docs/protocol.md §4.12): messages wait in `SCHEDULE_TOPIC_XXXX`, queue
//! `level - 1`, whose consume-queue tags slot holds the delivery time; when it has come they are
//! stored again under their real topic and queue. Progress per level is kept in
//! `config/delayOffset.json` (`{"offsetTable":{1:0,2:5}}`, the Java layout).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use silo_store::config_file::{read_json, write_json_atomic};
use silo_store::{Appender, MessageToStore, TagFilter};
use silo_wire::properties::keys;
use silo_wire::record::{Decoded, decode_record};

use crate::broker::Broker;
use crate::topics::SCHEDULE_TOPIC;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct DelayOffsets {
    offset_table: BTreeMap<i32, i64>,
}

/// The scheduler's state between rounds: progress per level and reusable buffers.
#[derive(Debug)]
pub struct Scheduler {
    path: PathBuf,
    offsets: DelayOffsets,
    appender: Appender,
    props: String,
}

/// `config/delayOffset.json` under the store root.
pub fn delay_offset_path(config: &crate::BrokerConfig) -> PathBuf {
    config.store_path_root_dir.join("config").join("delayOffset.json")
}

impl Scheduler {
    /// Loads the progress from `config/delayOffset.json`.
    pub fn load(broker: &Broker) -> Result<Self, silo_store::StoreError> {
        let path = delay_offset_path(&broker.config);
        let offsets = read_json(&*broker.store.config().fs, &path)?.unwrap_or_default();
        Ok(Self { path, offsets, appender: Appender::new(), props: String::new() })
    }

    /// One round: stores again, under its real topic and queue, every delayed message whose
    /// time has come by the broker's clock, and persists the progress. Returns how many
    /// messages were delivered.
    pub fn deliver_due(&mut self, broker: &Broker) -> usize {
        let now = broker.config.clock.now_ms();
        let mut changed = false;
        let mut delivered = 0;
        let (offsets, appender, props) = (&mut self.offsets, &mut self.appender, &mut self.props);
        for level in 1..=18i32 {
            let queue = level - 1;
            let mut progress = offsets.offset_table.get(&level).copied().unwrap_or(0);
            'level: loop {
                let r = broker.store.get_messages(SCHEDULE_TOPIC, queue, progress, 32, 1 << 20, TagFilter::All);
                if r.status != silo_store::GetStatus::Found {
                    if r.next_begin_offset > progress && r.status != silo_store::GetStatus::OffsetOverflowOne {
                        progress = r.next_begin_offset;
                        changed = true;
                        continue;
                    }
                    break;
                }
                for m in &r.messages {
                    if m.tags_code > now {
                        break 'level;
                    }
                    if let Ok(Decoded::Record(rec)) = decode_record(m, 0) {
                        let (Some(topic), Some(qid)) = (
                            rec.properties.get(keys::REAL_TOPIC),
                            rec.properties.get(keys::REAL_QID).and_then(|q| q.parse::<i32>().ok()),
                        ) else {
                            tracing::error!(
                                offset = m.physical_offset(),
                                "delayed message without REAL_TOPIC/REAL_QID; dropped"
                            );
                            progress = m.queue_offset + 1;
                            changed = true;
                            continue;
                        };
                        props.clear();
                        rec.properties
                            .push_without(props, &[keys::DELAY, keys::REAL_TOPIC, keys::REAL_QID, keys::WAIT]);
                        let _ = write!(props, "{}\u{1}false\u{2}", keys::WAIT);
                        let msg = MessageToStore::again(&rec, topic, qid, props);
                        if let Err(e) = broker.store.append(appender, &msg) {
                            tracing::error!(error = %e, "re-putting a delayed message failed; retrying later");
                            break 'level;
                        }
                    }
                    progress = m.queue_offset + 1;
                    changed = true;
                    delivered += 1;
                }
            }
            offsets.offset_table.insert(level, progress);
        }
        if changed && let Err(e) = write_json_atomic(&*broker.store.config().fs, &self.path, &*offsets) {
            tracing::error!(error = %e, "cannot write delay offsets");
        }
        delivered
    }
}

/// Runs until the broker shuts down: every 100 ms, delivers what is due.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let mut scheduler = match Scheduler::load(&broker) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "delay offsets unreadable; delayed messages are not delivered");
            return;
        }
    };
    loop {
        scheduler.deliver_due(&broker);
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = shutdown.changed() => return,
        }
    }
}
