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

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Runs until the broker shuts down: every 100 ms, delivers what is due.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let path: PathBuf = broker.config.store_path_root_dir.join("config").join("delayOffset.json");
    let mut offsets: DelayOffsets = match read_json(&path) {
        Ok(v) => v.unwrap_or_default(),
        Err(e) => {
            tracing::error!(error = %e, "delay offsets unreadable; delayed messages are not delivered");
            return;
        }
    };
    let mut appender = Appender::new();
    let mut props = String::new();
    loop {
        let mut changed = false;
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
                    if m.tags_code > now_ms() {
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
                        for (k, v) in rec.properties.iter() {
                            if !matches!(k, keys::DELAY | keys::REAL_TOPIC | keys::REAL_QID | keys::WAIT) {
                                let _ = write!(props, "{k}\u{1}{v}\u{2}");
                            }
                        }
                        let _ = write!(props, "{}\u{1}false\u{2}", keys::WAIT);
                        let msg = MessageToStore {
                            topic,
                            queue_id: qid,
                            flag: rec.meta.flag,
                            sys_flag: rec.meta.sys_flag,
                            born_timestamp: rec.meta.born_timestamp,
                            born_host: rec.meta.born_host,
                            reconsume_times: rec.meta.reconsume_times,
                            prepared_tx_offset: 0,
                            body: rec.body,
                            properties: &props,
                        };
                        if let Err(e) = broker.store.append(&mut appender, &msg) {
                            tracing::error!(error = %e, "re-putting a delayed message failed; retrying later");
                            break 'level;
                        }
                    }
                    progress = m.queue_offset + 1;
                    changed = true;
                }
            }
            offsets.offset_table.insert(level, progress);
        }
        if changed && let Err(e) = write_json_atomic(&path, &offsets) {
            tracing::error!(error = %e, "cannot write delay offsets");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = shutdown.changed() => return,
        }
    }
}
