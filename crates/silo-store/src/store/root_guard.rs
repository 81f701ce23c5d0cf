//! One open store per directory in this process (the `lock` file's fcntl lock keeps other
//! processes out).

use std::sync::Mutex;

use crate::error::{Result, StoreError};

/// fcntl locks are per process: they keep other processes (another Silo, a Java broker) out,
/// but not a second `Store::open` of the same directory in this process. This registry does.
static OPEN_ROOTS: Mutex<Vec<std::path::PathBuf>> = Mutex::new(Vec::new());

#[derive(Debug)]
pub(crate) struct RootGuard(std::path::PathBuf);

impl RootGuard {
    pub(crate) fn acquire(root: &std::path::Path) -> Result<Self> {
        let canonical = root.canonicalize().map_err(StoreError::io("resolve", root))?;
        let mut open = OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner());
        if open.contains(&canonical) {
            return Err(StoreError::Locked(root.to_owned()));
        }
        open.push(canonical.clone());
        Ok(Self(canonical))
    }
}

impl Drop for RootGuard {
    fn drop(&mut self) {
        OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != self.0);
    }
}
