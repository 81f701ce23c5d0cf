//! Topic configs (`config/topics.json`, docs/protocol.md §4.10), with the built-in topics a broker needs
//! and auto-creation from `TBW102` (docs/protocol.md §2.2).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};
use silo_store::config_file::{read_json, write_json_atomic};
use silo_wire::body::{DataVersion, TopicConfig};

pub use silo_wire::codes::perm::{INHERIT as PERM_INHERIT, READ as PERM_READ, WRITE as PERM_WRITE};
pub const DEFAULT_TOPIC: &str = "TBW102";
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicsFile {
    pub data_version: DataVersion,
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// What the message path needs of a topic's config, read without cloning its texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicQueues {
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
}

impl TopicQueues {
    pub fn of(tc: &TopicConfig) -> Self {
        Self { read_queue_nums: tc.read_queue_nums, write_queue_nums: tc.write_queue_nums, perm: tc.perm }
    }
}

#[derive(Debug)]
pub struct TopicManager {
    fs: std::sync::Arc<dyn silo_store::fs::Fs>,
    path: PathBuf,
    state: RwLock<TopicsFile>,
    /// Held across a write's snapshot and the write, so that writes happen one at a time and
    /// none overwrites a newer snapshot with an older one.
    persist_lock: std::sync::Mutex<()>,
}

/// The topic replies go to: `<cluster>_REPLY_TOPIC`.
pub fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_REPLY_TOPIC")
}

pub fn topic_config(name: &str, read: i32, write: i32, perm: i32) -> TopicConfig {
    TopicConfig {
        topic_name: name.into(),
        read_queue_nums: read,
        write_queue_nums: write,
        perm,
        topic_filter_type: "SINGLE_TAG".into(),
        ..Default::default()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl TopicManager {
    /// Loads `topics.json` and adds the built-in topics.
    pub fn load(
        fs: std::sync::Arc<dyn silo_store::fs::Fs>,
        path: PathBuf,
        config: &crate::config::BrokerConfig,
    ) -> Result<Self, silo_store::StoreError> {
        let mut state: TopicsFile = read_json(&*fs, &path)?.unwrap_or_default();
        let mut builtin = vec![
            topic_config("SELF_TEST_TOPIC", 1, 1, PERM_READ | PERM_WRITE),
            topic_config(SCHEDULE_TOPIC, 18, 18, PERM_READ | PERM_WRITE),
            topic_config(&config.broker_cluster_name, 16, 16, PERM_READ | PERM_WRITE | PERM_INHERIT),
            topic_config(&config.broker_name, 1, 1, PERM_READ | PERM_WRITE | PERM_INHERIT),
            topic_config("OFFSET_MOVED_EVENT", 1, 1, PERM_READ | PERM_WRITE | PERM_INHERIT),
            // Where responders send replies (request-reply, docs/protocol.md §2.14).
            topic_config(&reply_topic(&config.broker_cluster_name), 1, 1, PERM_READ | PERM_WRITE),
        ];
        if config.auto_create_topic_enable {
            let n = config.default_topic_queue_nums;
            builtin.push(topic_config(DEFAULT_TOPIC, n, n, PERM_READ | PERM_WRITE | PERM_INHERIT));
        }
        for tc in builtin {
            state.topic_config_table.entry(tc.topic_name.clone()).or_insert(tc);
        }
        let manager = Self { fs, path, state: RwLock::new(state), persist_lock: std::sync::Mutex::new(()) };
        manager.persist()?;
        Ok(manager)
    }

    /// Changes with every create, update or delete (the `dataVersion` counter).
    pub fn version(&self) -> i64 {
        self.state.read().unwrap_or_else(|e| e.into_inner()).data_version.counter
    }

    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).topic_config_table.get(topic).cloned()
    }

    /// The queue counts and permissions of `topic`, for the send and pull paths.
    pub fn queues(&self, topic: &str) -> Option<TopicQueues> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).topic_config_table.get(topic).map(TopicQueues::of)
    }

    pub fn all(&self) -> TopicsFile {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn table(&self) -> BTreeMap<String, TopicConfig> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).topic_config_table.clone()
    }

    /// A slave's copy of its master's topics: replaces the whole table when the master's
    /// version differs, and persists. Returns whether anything changed.
    pub fn replace_from_master(&self, master: TopicsFile) -> Result<bool, silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if s.data_version == master.data_version && s.topic_config_table == master.topic_config_table {
                return Ok(false);
            }
            *s = master;
        }
        self.persist()?;
        Ok(true)
    }

    /// Creates or replaces a topic and persists; returns whether anything changed.
    pub fn put(&self, tc: TopicConfig) -> Result<bool, silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if s.topic_config_table.get(&tc.topic_name) == Some(&tc) {
                return Ok(false);
            }
            s.topic_config_table.insert(tc.topic_name.clone(), tc);
            s.data_version.counter += 1;
            s.data_version.timestamp = now_ms();
        }
        self.persist()?;
        Ok(true)
    }

    pub fn delete(&self, topic: &str) -> Result<bool, silo_store::StoreError> {
        let removed = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let removed = s.topic_config_table.remove(topic).is_some();
            if removed {
                s.data_version.counter += 1;
                s.data_version.timestamp = now_ms();
            }
            removed
        };
        if removed {
            self.persist()?;
        }
        Ok(removed)
    }

    /// Adds `tc` unless its topic exists, and persists; returns the topic's config either way
    /// (another request may have created it first). The send policy decides what `tc` is.
    pub fn create_if_absent(&self, tc: TopicConfig) -> Result<TopicConfig, silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if let Some(existing) = s.topic_config_table.get(&tc.topic_name) {
                return Ok(existing.clone());
            }
            s.topic_config_table.insert(tc.topic_name.clone(), tc.clone());
            s.data_version.counter += 1;
            s.data_version.timestamp = now_ms();
        }
        self.persist()?;
        Ok(tc)
    }

    /// Retry and DLQ topics: one queue, read/write, created on demand.
    pub fn ensure_system(&self, topic: &str, queues: i32) -> Result<TopicConfig, silo_store::StoreError> {
        if let Some(tc) = self.get(topic) {
            return Ok(tc);
        }
        self.create_if_absent(topic_config(topic, queues, queues, PERM_READ | PERM_WRITE))
    }

    fn persist(&self) -> Result<(), silo_store::StoreError> {
        let _one_writer = self.persist_lock.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = self.all();
        write_json_atomic(&*self.fs, &self.path, &snapshot)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Topics created at the same time from many threads (gRPC handlers, pops creating retry
    /// topics) are all in the file afterwards: writes neither fail on each other's temporary
    /// file nor overwrite a newer snapshot with an older one.
    #[test]
    fn topics_created_concurrently_are_all_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("topics.json");
        let config = crate::config::BrokerConfig::default();
        let topics = Arc::new(TopicManager::load(silo_store::fs::real(), path.clone(), &config).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let topics = Arc::clone(&topics);
                std::thread::spawn(move || {
                    for i in 0..25 {
                        topics.ensure_system(&format!("t{t}-{i}"), 1).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let reloaded = TopicManager::load(silo_store::fs::real(), path, &config).unwrap();
        for t in 0..8 {
            for i in 0..25 {
                assert!(reloaded.get(&format!("t{t}-{i}")).is_some(), "t{t}-{i} lost");
            }
        }
    }
}
