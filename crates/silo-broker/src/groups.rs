//! Subscription groups (`config/subscriptionGroup.json`, docs/protocol.md §2.9): each consumer
//! group's settings (retry limit, orderly, broadcast, enabled), created by admin tools or on a
//! group's first use, as Apache's broker keeps them, so that a store moves between the two and
//! the 5.x proxy finds what it asks for (GET_SUBSCRIPTIONGROUP_CONFIG).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use silo_store::config_file::{read_json, write_json_atomic};
use silo_store::fs::Fs;
use silo_wire::body::{SubscriptionGroupConfig, SubscriptionGroupWrapper};

/// The groups Java's broker creates at start (the broadcast ones are Java's too).
const BUILT_IN: [(&str, bool); 8] = [
    ("TOOLS_CONSUMER", false),
    ("FILTERSRV_CONSUMER", false),
    ("SELF_TEST_C_GROUP", false),
    ("CID_ONS-HTTP-PROXY", true),
    ("CID_ONSAPI_PULL", true),
    ("CID_ONSAPI_PERMISSION", true),
    ("CID_ONSAPI_OWNER", true),
    ("CID_RMQ_SYS_TRANS", true),
];

/// Longest group name Java accepts.
const MAX_GROUP_LEN: usize = 255;

#[derive(Debug)]
pub struct SubscriptionGroups {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    state: RwLock<SubscriptionGroupWrapper>,
    /// Held across a write's snapshot and the write, so that writes happen one at a time and
    /// none overwrites a newer snapshot with an older one.
    persist_lock: std::sync::Mutex<()>,
    auto_create: bool,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A group name Java's broker accepts: 1..=255 of `[A-Za-z0-9_%|-]` (as topics).
pub fn is_valid_group(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_GROUP_LEN && silo_store::names::is_valid_topic(name)
}

impl SubscriptionGroups {
    /// Loads the file and adds the built-in groups. `auto_create`: `autoCreateSubscriptionGroup`.
    pub fn load(fs: Arc<dyn Fs>, path: PathBuf, auto_create: bool) -> Result<Self, silo_store::StoreError> {
        let mut state: SubscriptionGroupWrapper = read_json(&*fs, &path)?.unwrap_or_default();
        for (name, broadcast) in BUILT_IN {
            state.subscription_group_table.entry(name.to_owned()).or_insert_with(|| SubscriptionGroupConfig {
                group_name: name.to_owned(),
                consume_broadcast_enable: broadcast || SubscriptionGroupConfig::default().consume_broadcast_enable,
                ..SubscriptionGroupConfig::default()
            });
        }
        let groups = Self { fs, path, state: RwLock::new(state), auto_create, persist_lock: std::sync::Mutex::new(()) };
        groups.persist()?;
        Ok(groups)
    }

    pub fn get(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.state.read().unwrap_or_else(|e| e.into_inner()).subscription_group_table.get(group).cloned()
    }

    /// A group's settings, created with the defaults on first use when
    /// `autoCreateSubscriptionGroup` is on (Java's `findSubscriptionGroupConfig`).
    pub fn find(&self, group: &str) -> Result<Option<SubscriptionGroupConfig>, silo_store::StoreError> {
        if let Some(g) = self.get(group) {
            return Ok(Some(g));
        }
        if !self.auto_create || !is_valid_group(group) {
            return Ok(None);
        }
        let config = SubscriptionGroupConfig { group_name: group.to_owned(), ..SubscriptionGroupConfig::default() };
        self.put(config.clone())?;
        Ok(Some(config))
    }

    /// Whether a group may consume: `None` if it has no settings and none may be created
    /// (Java's pop check, without copying the settings).
    pub fn consume_enabled(&self, group: &str) -> Result<Option<bool>, silo_store::StoreError> {
        let known = self
            .state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .subscription_group_table
            .get(group)
            .map(|g| g.consume_enable);
        match known {
            Some(enabled) => Ok(Some(enabled)),
            None => Ok(self.find(group)?.map(|g| g.consume_enable)),
        }
    }

    /// The retry limit of a group, if it has settings.
    pub fn retry_max_times(&self, group: &str) -> Option<i32> {
        self.state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .subscription_group_table
            .get(group)
            .map(|g| g.retry_max_times)
    }

    /// Creates or replaces a group's settings and persists them. As Apache 5.3.3 knows no
    /// group attribute, attributes are not kept.
    pub fn put(&self, mut config: SubscriptionGroupConfig) -> Result<(), silo_store::StoreError> {
        config.attributes.clear();
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            s.subscription_group_table.insert(config.group_name.clone(), config);
            s.data_version.counter += 1;
            s.data_version.timestamp = now_ms();
        }
        self.persist()
    }

    /// Removes a group's settings; whether it had any.
    pub fn delete(&self, group: &str) -> Result<bool, silo_store::StoreError> {
        let removed = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let removed = s.subscription_group_table.remove(group).is_some();
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

    /// A slave's copy of its master's groups: replaces them all when they differ.
    pub fn replace_from_master(&self, master: SubscriptionGroupWrapper) -> Result<bool, silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if *s == master {
                return Ok(false);
            }
            *s = master;
        }
        self.persist()?;
        Ok(true)
    }

    pub fn all(&self) -> SubscriptionGroupWrapper {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn persist(&self) -> Result<(), silo_store::StoreError> {
        let _one_writer = self.persist_lock.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = self.all();
        write_json_atomic(&*self.fs, &self.path, &snapshot)
    }
}
