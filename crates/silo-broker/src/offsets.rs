//! Committed consumer offsets (`config/consumerOffset.json`): `"topic@group" → queue → offset`,
//! read with the bare integer keys Java writes, written as standard JSON, persisted every few
//! seconds and at shutdown.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use silo_store::config_file::{read_json, write_json_atomic};
use silo_wire::body::DataVersion;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetsFile {
    pub data_version: DataVersion,
    pub offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

#[derive(Debug)]
pub struct OffsetManager {
    fs: std::sync::Arc<dyn silo_store::fs::Fs>,
    path: PathBuf,
    state: Mutex<OffsetsFile>,
    dirty: AtomicBool,
    /// Held across a write's snapshot and the write, so that writes happen one at a time and
    /// none overwrites a newer snapshot with an older one.
    persist_lock: std::sync::Mutex<()>,
    /// On a slave: offsets committed here since the last copy from the master (consumers
    /// commit to the slave while the master is away), which a copy does not move back.
    local_commits: Mutex<std::collections::HashSet<(String, i32)>>,
    /// Whether `local_commits` is kept (a slave): a master's commit path does not lock it.
    tracking: AtomicBool,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

thread_local! {
    /// The `topic@group` key of a lookup, built without allocating once it has grown.
    static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn with_key<R>(topic: &str, group: &str, f: impl FnOnce(&str) -> R) -> R {
    KEY.with(|k| match k.try_borrow_mut() {
        Ok(mut k) => {
            k.clear();
            k.push_str(topic);
            k.push('@');
            k.push_str(group);
            f(&k)
        }
        Err(_) => f(&key(topic, group)),
    })
}

impl OffsetManager {
    pub fn load(fs: std::sync::Arc<dyn silo_store::fs::Fs>, path: PathBuf) -> Result<Self, silo_store::StoreError> {
        let state = read_json(&*fs, &path)?.unwrap_or_default();
        Ok(Self {
            fs,
            path,
            state: Mutex::new(state),
            dirty: AtomicBool::new(false),
            persist_lock: Mutex::new(()),
            local_commits: Mutex::default(),
            tracking: AtomicBool::new(false),
        })
    }

    /// On a slave: remember which offsets are committed here, for [`Self::merge_from_master`].
    pub fn track_local_commits(&self) {
        self.tracking.store(true, Ordering::Release);
    }

    /// A slave's copy of its master's offsets. The master's value wins, except where a
    /// consumer committed a further offset on this slave since the last copy (while the
    /// master was away): that one is kept until the master has caught up with it.
    pub fn merge_from_master(&self, master: OffsetsFile) {
        let mut local = self.local_commits.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut merged = master;
        local.retain(|(key, queue)| {
            let ours = s.offset_table.get(key).and_then(|q| q.get(queue)).copied();
            let theirs = merged.offset_table.get(key).and_then(|q| q.get(queue)).copied();
            match (ours, theirs) {
                (Some(o), t) if t.is_none_or(|t| o > t) => {
                    merged.offset_table.entry(key.clone()).or_default().insert(*queue, o);
                    true
                }
                _ => false,
            }
        });
        if s.offset_table != merged.offset_table {
            *s = merged;
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Everything, for GET_ALL_CONSUMER_OFFSET.
    pub fn all(&self) -> OffsetsFile {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Commits an offset (allocating only for a queue the group never committed before: the
    /// pop path commits per pop).
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let updated = with_key(topic, group, |k| match s.offset_table.get_mut(k).and_then(|q| q.get_mut(&queue_id)) {
            Some(o) => {
                *o = offset;
                true
            }
            None => false,
        });
        if !updated {
            s.offset_table.entry(key(topic, group)).or_default().insert(queue_id, offset);
        }
        self.dirty.store(true, Ordering::Release);
        drop(s);
        if self.tracking.load(Ordering::Relaxed) {
            self.local_commits.lock().unwrap_or_else(|e| e.into_inner()).insert((key(topic, group), queue_id));
        }
    }

    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        with_key(topic, group, |k| s.offset_table.get(k)?.get(&queue_id).copied())
    }

    /// All (topic, queue → offset) of a group.
    pub fn group_offsets(&self, group: &str) -> BTreeMap<String, BTreeMap<i32, i64>> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let suffix = format!("@{group}");
        s.offset_table.iter().filter_map(|(k, v)| k.strip_suffix(&suffix).map(|t| (t.to_owned(), v.clone()))).collect()
    }

    /// Groups with committed offsets on `topic`.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let prefix = format!("{topic}@");
        s.offset_table.keys().filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned)).collect()
    }

    /// Forgets every offset of `group` (the group was deleted).
    pub fn remove_group(&self, group: &str) -> usize {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let suffix = format!("@{group}");
        let before = s.offset_table.len();
        s.offset_table.retain(|k, _| !k.ends_with(&suffix));
        let removed = before - s.offset_table.len();
        if removed > 0 {
            self.dirty.store(true, Ordering::Release);
        }
        removed
    }

    /// Forgets every group's offsets of `topic` (the topic was deleted).
    pub fn remove_topic(&self, topic: &str) -> usize {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let prefix = format!("{topic}@");
        let before = s.offset_table.len();
        s.offset_table.retain(|k, _| !k.starts_with(&prefix));
        let removed = before - s.offset_table.len();
        if removed > 0 {
            self.dirty.store(true, Ordering::Release);
        }
        removed
    }

    /// Writes the file if anything changed since the last write.
    pub fn persist(&self) -> Result<(), silo_store::StoreError> {
        let _one_writer = self.persist_lock.lock().unwrap_or_else(|e| e.into_inner());
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let snapshot = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // Written whole or not at all; on failure (a full disk) the next round tries again.
        write_json_atomic(&*self.fs, &self.path, &snapshot).inspect_err(|_| self.dirty.store(true, Ordering::Release))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn table(entries: &[(&str, i32, i64)]) -> OffsetsFile {
        let mut f = OffsetsFile::default();
        for (k, q, o) in entries {
            f.offset_table.entry((*k).to_owned()).or_default().insert(*q, *o);
        }
        f
    }

    #[test]
    fn a_slave_keeps_offsets_committed_while_its_master_was_away_until_the_master_catches_up() {
        let dir = tempfile::tempdir().unwrap();
        let fs: std::sync::Arc<dyn silo_store::fs::Fs> = std::sync::Arc::new(silo_store::fs::RealFs);
        let offsets = OffsetManager::load(fs, dir.path().join("consumerOffset.json")).unwrap();
        offsets.track_local_commits();
        offsets.merge_from_master(table(&[("T@g", 0, 10), ("T@g", 1, 20), ("U@h", 0, 5)]));
        assert_eq!(offsets.query("g", "T", 0), Some(10));
        // The master is away; the consumer commits on the slave.
        offsets.commit("g", "T", 0, 40);
        // The master returns with what it had: the further offset stays, the rest follows it.
        offsets.merge_from_master(table(&[("T@g", 0, 10), ("T@g", 1, 25), ("U@h", 0, 5)]));
        assert_eq!(offsets.query("g", "T", 0), Some(40));
        assert_eq!(offsets.query("g", "T", 1), Some(25));
        // Once the master passed it, the master's value wins again (a reset backwards included).
        offsets.merge_from_master(table(&[("T@g", 0, 50)]));
        assert_eq!(offsets.query("g", "T", 0), Some(50));
        offsets.merge_from_master(table(&[("T@g", 0, 3)]));
        assert_eq!(offsets.query("g", "T", 0), Some(3));
        assert_eq!(offsets.query("h", "U", 0), None, "a group the master forgot is forgotten");
    }
}
