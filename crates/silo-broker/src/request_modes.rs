//! How each group consumes each topic, PULL or POP (`config/messageRequestMode.json`, docs/protocol.md
//! §2.9): set by `mqadmin setConsumeMode` (SET_MESSAGE_REQUEST_MODE), kept as Apache's broker keeps
//! it, so that a store moves between the two with its groups' modes.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use silo_store::config_file::{read_json, write_json_atomic};
use silo_store::fs::Fs;
use silo_wire::body::{MessageRequestMode, MessageRequestModes};

#[derive(Debug)]
pub struct RequestModes {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    state: RwLock<MessageRequestModes>,
    /// Held across a write's snapshot and the write, so that writes happen one at a time and
    /// none overwrites a newer snapshot with an older one.
    persist_lock: std::sync::Mutex<()>,
}

impl RequestModes {
    pub fn load(fs: Arc<dyn Fs>, path: PathBuf) -> Result<Self, silo_store::StoreError> {
        let state = read_json(&*fs, &path)?.unwrap_or_default();
        Ok(Self { fs, path, state: RwLock::new(state), persist_lock: std::sync::Mutex::new(()) })
    }

    /// The mode a group has for a topic, if one was set.
    pub fn get(&self, topic: &str, group: &str) -> Option<MessageRequestMode> {
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        s.message_request_mode_map.get(topic)?.get(group).cloned()
    }

    /// Sets it and persists.
    pub fn set(&self, mode: MessageRequestMode) -> Result<(), silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            s.message_request_mode_map.entry(mode.topic.clone()).or_default().insert(mode.consumer_group.clone(), mode);
        }
        let _one_writer = self.persist_lock.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = self.all();
        write_json_atomic(&*self.fs, &self.path, &snapshot)
    }

    /// A slave's copy of its master's modes: replaces them all when they differ.
    pub fn replace_from_master(&self, master: MessageRequestModes) -> Result<bool, silo_store::StoreError> {
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if *s == master {
                return Ok(false);
            }
            *s = master;
        }
        let _one_writer = self.persist_lock.lock().unwrap_or_else(|e| e.into_inner());
        let snapshot = self.all();
        write_json_atomic(&*self.fs, &self.path, &snapshot)?;
        Ok(true)
    }

    pub fn all(&self) -> MessageRequestModes {
        self.state.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
