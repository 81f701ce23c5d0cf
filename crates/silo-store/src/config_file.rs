//! The broker's JSON config files (`config/topics.json`, `consumerOffset.json`, ...; spec
//! 4.10), written the way the Java broker keeps them safe: the new content goes to `<file>.tmp`
//! and is fsynced, the previous version is kept as `<file>.bak`, then the temporary file is
//! renamed over the original. A reader that finds the main file missing or unparsable falls
//! back to the `.bak` copy (and says so); if neither parses it returns an error that names the
//! file and the byte offset. Java-written files (fastjson: bare integer keys, pretty-printed)
//! are accepted.

use std::path::{Path, PathBuf};

use serde::{Serialize, de::DeserializeOwned};

use crate::error::{Result, StoreError};
use crate::fs::Fs;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `value` to `path` atomically, keeping the previous version as `path.bak`.
pub fn write_json_atomic<T: Serialize>(fs: &dyn Fs, path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| StoreError::Config { path: path.to_owned(), reason: e.to_string() })?;
    write_atomic(fs, path, &bytes)
}

/// Writes `bytes` to `path` atomically, keeping the previous version as `path.bak`: at every
/// moment, and after power loss at any point, `path` holds the old or the new content whole
/// (or, before the first write, nothing), and a reader falls back to `.bak` if it is missing.
pub fn write_atomic(fs: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        fs.create_dir_all(dir).map_err(StoreError::io("create", dir))?;
    }
    let tmp = with_suffix(path, ".tmp");
    fs.write_synced(&tmp, bytes).map_err(StoreError::io("write", &tmp))?;
    if fs.exists(path) {
        let bak = with_suffix(path, ".bak");
        let old = fs.read(path).map_err(StoreError::io("read", path))?;
        fs.write_synced(&bak, &old).map_err(StoreError::io("back up", path))?;
    }
    fs.rename(&tmp, path).map_err(StoreError::io("rename", &tmp))?;
    if let Some(dir) = dir {
        // Make the rename itself durable.
        fs.sync_dir(dir).map_err(StoreError::io("fsync", dir))?;
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T> {
    silo_wire::body::decode_json_body(bytes)
        .map_err(|e| StoreError::Config { path: path.to_owned(), reason: e.to_string() })
}

/// Reads `path` (or its `.bak` if the main file is missing or corrupt). `Ok(None)` if neither
/// exists.
pub fn read_json<T: DeserializeOwned>(fs: &dyn Fs, path: &Path) -> Result<Option<T>> {
    let bak = with_suffix(path, ".bak");
    let main = match fs.read(path) {
        Ok(bytes) => Some(parse::<T>(path, &bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(StoreError::io("read", path)(e)),
    };
    match main {
        Some(Ok(value)) => Ok(Some(value)),
        main_err => {
            let backup = match fs.read(&bak) {
                Ok(bytes) => Some(parse::<T>(&bak, &bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(StoreError::io("read", &bak)(e)),
            };
            match (main_err, backup) {
                (None, None) => Ok(None),
                (Some(Err(e)), Some(Ok(value))) => {
                    tracing::warn!(error = %e, backup = %bak.display(), "config file is corrupt; using its backup");
                    Ok(Some(value))
                }
                (None, Some(Ok(value))) => {
                    tracing::warn!(backup = %bak.display(), "config file is missing; using its backup");
                    Ok(Some(value))
                }
                (Some(Err(e)), _) => Err(e),
                (None, Some(Err(e))) => Err(e),
                (Some(Ok(_)), _) => unreachable!("handled above"),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::fs::RealFs;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Offsets {
        #[serde(rename = "offsetTable")]
        offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    }

    #[test]
    fn config_files_and_their_backups_are_readable_by_their_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        std::fs::write(&path, b"{}").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomic(&RealFs, &path, b"{\"users\":[]}").unwrap();
        for p in [path.clone(), with_suffix(&path, ".bak")] {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
    }

    #[test]
    fn java_written_files_with_bare_keys_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerOffset.json");
        std::fs::write(&path, "{\n\t\"offsetTable\":{\n\t\t\"T@g\":{0:12,1:7\n\t\t}\n\t}\n}").unwrap();
        let read: Offsets = read_json(&RealFs, &path).unwrap().unwrap();
        assert_eq!(read.offset_table["T@g"][&1], 7);
    }

    #[test]
    fn a_corrupt_file_falls_back_to_its_backup_or_reports_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let v1 = Offsets { offset_table: BTreeMap::from([("a@g".into(), BTreeMap::from([(0, 1)]))]) };
        let v2 = Offsets { offset_table: BTreeMap::from([("a@g".into(), BTreeMap::from([(0, 2)]))]) };
        write_json_atomic(&RealFs, &path, &v1).unwrap();
        write_json_atomic(&RealFs, &path, &v2).unwrap();
        assert_eq!(read_json::<Offsets>(&RealFs, &path).unwrap().unwrap(), v2);
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(read_json::<Offsets>(&RealFs, &path).unwrap().unwrap(), v1, "the backup holds the previous version");
        std::fs::write(with_suffix(&path, ".bak"), "{").unwrap();
        let err = read_json::<Offsets>(&RealFs, &path).unwrap_err().to_string();
        assert!(err.contains("topics.json") && err.contains("offset"), "{err}");
        assert!(read_json::<Offsets>(&RealFs, &dir.path().join("absent.json")).unwrap().is_none());
    }
}
