//! [`SimFs`]: a simulated machine for tests, with its files in memory.
//!
//! It models what a real machine guarantees and no more:
//! - A file's bytes are durable once a sync covering them completed; a name (a creation, a
//!   rename, a removal) once its directory was synced. Directories themselves are durable
//!   when created.
//! - Power loss ([`SimFs::power_fail_at_op`]) happens at the start of a chosen operation:
//!   that operation and every later one fail, and the machine's disk keeps the durable state
//!   plus, chosen by the seed, some of the pages written since their last sync (torn writes at
//!   page granularity). [`SimFs::reboot`] starts a new machine on that disk.
//! - A failed sync ([`SimFs::fail_sync`]) leaves the pages it covered as they were on disk and
//!   marks them clean, as Linux does after an fsync error: a later sync that succeeds does not
//!   write them. A failed write ([`SimFs::fail_write`]) stops half way; a failed rename
//!   ([`SimFs::fail_rename`]) does not happen.
//! - A capacity ([`SimFs::set_capacity`]) makes creations fail with `StorageFull`.
//!
//! The choice of surviving pages depends only on the seed, the file and the page, so a crash
//! image is reproducible from the same seed and the same operations. Power-loss tests run the
//! store without background threads ([`crate::StoreConfig::background`]), so that the
//! operations, and with them the crash point, are the same on every run of a seed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use super::{DiskSpace, Fs, MapMode, Region, Reservation, StoreLock};

const PAGE: usize = 4096;
/// What a simulated disk holds without a capacity.
const UNLIMITED: u64 = 1 << 40;

/// One file's bytes: what the page cache holds (`live`, a fixed allocation while mapped) and
/// what the disk holds (`durable`).
struct SimFile {
    /// The page cache. Its allocation never moves while a region maps it.
    live: Mutex<Box<[u8]>>,
    live_ptr: std::sync::atomic::AtomicPtr<u8>,
    live_len: AtomicUsize,
    durable: Mutex<Vec<u8>>,
    /// Pages whose last sync failed: the kernel dropped their dirty state, so no later sync
    /// writes them.
    lost: Mutex<BTreeSet<usize>>,
    mapped: AtomicUsize,
    modified: Mutex<SystemTime>,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile").field("len", &self.live_len.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl SimFile {
    fn new(bytes: Vec<u8>, durable: Vec<u8>) -> Arc<Self> {
        let mut live = bytes.into_boxed_slice();
        let ptr = live.as_mut_ptr();
        let len = live.len();
        Arc::new(Self {
            live: Mutex::new(live),
            live_ptr: std::sync::atomic::AtomicPtr::new(ptr),
            live_len: AtomicUsize::new(len),
            durable: Mutex::new(durable),
            lost: Mutex::new(BTreeSet::new()),
            mapped: AtomicUsize::new(0),
            modified: Mutex::new(SystemTime::now()),
        })
    }

    fn len(&self) -> usize {
        self.live_len.load(Ordering::Acquire)
    }

    /// A copy of the page cache's bytes `[from, to)`. Power-loss tests drive the store from
    /// one thread (no background threads), so nothing writes the bytes meanwhile.
    fn live_range(&self, from: usize, to: usize) -> Vec<u8> {
        let len = self.len();
        let (from, to) = (from.min(len), to.min(len).max(from.min(len)));
        let ptr = self.live_ptr.load(Ordering::Acquire);
        let mut out = vec![0u8; to - from];
        // SAFETY: `ptr` is the live allocation of `len` bytes (alive while `self` is) and
        // `from..to` lies inside it; the store's writers do not write bytes a sync covers.
        unsafe { std::ptr::copy_nonoverlapping(ptr.add(from), out.as_mut_ptr(), to - from) };
        out
    }

    fn live_copy(&self) -> Vec<u8> {
        self.live_range(0, self.len())
    }

    /// Replaces the whole content (an unmapped file).
    fn replace(&self, bytes: Vec<u8>) -> io::Result<()> {
        if self.mapped.load(Ordering::Acquire) > 0 {
            return Err(io::Error::other("simulated file is mapped"));
        }
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        *live = bytes.into_boxed_slice();
        self.live_ptr.store(live.as_mut_ptr(), Ordering::Release);
        self.live_len.store(live.len(), Ordering::Release);
        *self.modified.lock().unwrap_or_else(|e| e.into_inner()) = SystemTime::now();
        Ok(())
    }

    /// Makes `[offset, offset + len)` durable, except pages lost to an earlier failed sync.
    fn sync_range(&self, offset: usize, len: usize) {
        let file_len = self.len();
        let first = offset / PAGE * PAGE;
        let end = offset.saturating_add(len).min(file_len);
        let live = self.live_range(first, end);
        let mut durable = self.durable.lock().unwrap_or_else(|e| e.into_inner());
        if durable.len() != file_len {
            durable.resize(file_len, 0);
        }
        let lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        let mut page = offset / PAGE;
        while page * PAGE < end {
            let (from, to) = (page * PAGE, ((page + 1) * PAGE).min(end));
            if !lost.contains(&page)
                && let (Some(d), Some(l)) = (durable.get_mut(from..to), live.get(from - first..to - first))
            {
                d.copy_from_slice(l);
            }
            page += 1;
        }
        *self.modified.lock().unwrap_or_else(|e| e.into_inner()) = SystemTime::now();
    }

    /// A failed sync of `[offset, offset + len)`: its dirty pages are dropped, not written.
    fn lose_range(&self, offset: usize, len: usize) {
        let end = offset.saturating_add(len).min(self.len());
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        let mut page = offset / PAGE;
        while page * PAGE < end {
            lost.insert(page);
            page += 1;
        }
    }
}

/// Faults armed by a test, each firing once.
#[derive(Debug, Default)]
struct Faults {
    /// Fail the sync that is the n-th from when it was armed (1 = the next).
    sync_in: Option<u64>,
    /// Fail the next whole-file write to a path containing this, half way.
    write: Option<String>,
    /// Fail the next rename onto a path containing this.
    rename: Option<String>,
}

#[derive(Debug)]
struct Machine {
    dirs: BTreeSet<PathBuf>,
    /// Names as the running system sees them.
    live: BTreeMap<PathBuf, Arc<SimFile>>,
    /// Names as they would be found after power loss.
    durable: BTreeMap<PathBuf, Arc<SimFile>>,
    ops: u64,
    power_fails_at: Option<u64>,
    /// The disk as power loss left it: path → bytes.
    image: Option<BTreeMap<PathBuf, Vec<u8>>>,
    faults: Faults,
    capacity: u64,
    locks: BTreeSet<PathBuf>,
}

/// A simulated machine (module docs). Cheap to share behind an `Arc`.
pub struct SimFs {
    /// This machine, for the regions and locks it hands out.
    me: std::sync::Weak<SimFs>,
    seed: u64,
    machine: Mutex<Machine>,
    dead: AtomicBool,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFs").field("seed", &self.seed).finish_non_exhaustive()
    }
}

fn dead() -> io::Error {
    io::Error::other("simulated power loss: the machine is off")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display()))
}

/// splitmix64: a fixed, well-spread function of its input.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn path_hash(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl SimFs {
    /// An empty machine whose power-loss choices follow `seed`.
    pub fn new(seed: u64) -> Arc<Self> {
        Self::with_files(seed, BTreeMap::new(), BTreeSet::new())
    }

    fn with_files(seed: u64, files: BTreeMap<PathBuf, Vec<u8>>, mut dirs: BTreeSet<PathBuf>) -> Arc<Self> {
        let mut live = BTreeMap::new();
        for (path, bytes) in files {
            let mut dir = path.parent();
            while let Some(d) = dir {
                dirs.insert(d.to_owned());
                dir = d.parent();
            }
            live.insert(path, SimFile::new(bytes.clone(), bytes));
        }
        let durable = live.clone();
        Arc::new_cyclic(|me| Self {
            me: me.clone(),
            seed,
            machine: Mutex::new(Machine {
                dirs,
                live,
                durable,
                ops: 0,
                power_fails_at: None,
                image: None,
                faults: Faults::default(),
                capacity: UNLIMITED,
                locks: BTreeSet::new(),
            }),
            dead: AtomicBool::new(false),
        })
    }

    fn machine(&self) -> MutexGuard<'_, Machine> {
        self.machine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Power fails at the start of the `n`-th mutating operation from now (1 = the next).
    pub fn power_fail_at_op(&self, n: u64) {
        let mut m = self.machine();
        m.power_fails_at = Some(m.ops + n.max(1));
    }

    /// Power fails now.
    pub fn power_fail_now(&self) {
        let mut m = self.machine();
        self.lose_power(&mut m);
    }

    /// Mutating operations so far.
    pub fn ops(&self) -> u64 {
        self.machine().ops
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// The `n`-th sync from now (1 = the next) fails with EIO.
    pub fn fail_sync(&self, n: u64) {
        self.machine().faults.sync_in = Some(n.max(1));
    }

    /// The next whole-file write to a path containing `part` writes half, then fails.
    pub fn fail_write(&self, part: &str) {
        self.machine().faults.write = Some(part.to_owned());
    }

    /// The next rename onto a path containing `part` fails and does not happen.
    pub fn fail_rename(&self, part: &str) {
        self.machine().faults.rename = Some(part.to_owned());
    }

    /// Creations beyond `bytes` in all fail with `StorageFull`.
    pub fn set_capacity(&self, bytes: u64) {
        self.machine().capacity = bytes;
    }

    /// A new machine on the disk that power loss left (or, if power never failed, on the disk
    /// as a power loss now would leave it).
    pub fn reboot(&self) -> Arc<SimFs> {
        let mut m = self.machine();
        if m.image.is_none() {
            self.lose_power(&mut m);
        }
        let image = m.image.clone().unwrap_or_default();
        Self::with_files(mix(self.seed), image, m.dirs.clone())
    }

    /// The bytes of a file as the running system sees them.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.machine().live.get(path).map(|f| f.live_copy())
    }

    /// Writes the files as the running system sees them under `dir` (on the real file system),
    /// to replay a failing case with the real store.
    pub fn save_to(&self, dir: &Path) -> io::Result<()> {
        let files: Vec<(PathBuf, Vec<u8>)> =
            self.machine().live.iter().map(|(p, f)| (p.clone(), f.live_copy())).collect();
        for (path, bytes) in files {
            let rel = path.strip_prefix("/").unwrap_or(&path);
            let target = dir.join(rel);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(target, bytes)?;
        }
        Ok(())
    }

    fn lose_power(&self, m: &mut Machine) {
        if m.image.is_some() {
            return;
        }
        let mut image = BTreeMap::new();
        for (path, file) in &m.durable {
            let live = file.live_copy();
            let mut disk = file.durable.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let lost = file.lost.lock().unwrap_or_else(|e| e.into_inner()).clone();
            disk.resize(live.len(), 0);
            let salt = mix(self.seed ^ path_hash(path));
            for (page, (d, l)) in disk.chunks_mut(PAGE).zip(live.chunks(PAGE)).enumerate() {
                // A page written since its last sync reached the disk, or did not.
                if d != l && !lost.contains(&page) && mix(salt ^ page as u64) & 1 == 1 {
                    d.copy_from_slice(l);
                }
            }
            image.insert(path.clone(), disk);
        }
        m.image = Some(image);
        self.dead.store(true, Ordering::Release);
    }

    /// Counts one mutating operation; fails it if the power is (or goes) off.
    fn op(&self, m: &mut Machine) -> io::Result<()> {
        if self.is_dead() {
            return Err(dead());
        }
        m.ops += 1;
        if m.power_fails_at.is_some_and(|at| m.ops >= at) {
            self.lose_power(m);
            return Err(dead());
        }
        Ok(())
    }

    fn used(m: &Machine) -> u64 {
        m.live.values().map(|f| f.len() as u64).sum()
    }

    fn file(m: &Machine, path: &Path) -> io::Result<Arc<SimFile>> {
        m.live.get(path).cloned().ok_or_else(|| not_found(path))
    }

    fn check_parent(m: &Machine, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !m.dirs.contains(dir) => Err(not_found(dir)),
            _ => Ok(()),
        }
    }
}

impl Fs for SimFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut m = self.machine();
        if self.is_dead() {
            return Err(dead());
        }
        let mut d = Some(dir);
        while let Some(x) = d {
            if x.as_os_str().is_empty() {
                break;
            }
            m.dirs.insert(x.to_owned());
            d = x.parent();
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let m = self.machine();
        if !m.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let files = m.live.keys().filter(|p| p.parent() == Some(dir)).cloned();
        let dirs = m.dirs.iter().filter(|p| p.parent() == Some(dir)).cloned();
        Ok(files.chain(dirs).collect())
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.machine().dirs.contains(path)
    }

    fn exists(&self, path: &Path) -> bool {
        let m = self.machine();
        m.live.contains_key(path) || m.dirs.contains(path)
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(Self::file(&self.machine(), path)?.len() as u64)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        Ok(Self::file(&self.machine(), path)?.live_copy())
    }

    fn read_at(&self, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let bytes = self.read(path)?;
        let from = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
        let part = bytes.get(from..).unwrap_or_default();
        let n = part.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), part.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        Self::check_parent(&m, path)?;
        let half = m.faults.write.as_deref().is_some_and(|part| path.to_string_lossy().contains(part));
        let file = match m.live.get(path) {
            Some(f) => Arc::clone(f),
            None => {
                let f = SimFile::new(Vec::new(), Vec::new());
                m.live.insert(path.to_owned(), Arc::clone(&f));
                f
            }
        };
        if half {
            m.faults.write = None;
            file.replace(bytes.get(..bytes.len() / 2).unwrap_or_default().to_vec())?;
            return Err(io::Error::other("simulated write failure half way"));
        }
        file.replace(bytes.to_vec())?;
        file.sync_range(0, bytes.len());
        Ok(())
    }

    fn write_at_synced(&self, path: &Path, bytes: &[u8], offset: u64) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        let file = Self::file(&m, path)?;
        let mut content = file.live_copy();
        let from = usize::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
        let end = from.saturating_add(bytes.len());
        if content.len() < end {
            content.resize(end, 0);
        }
        if let Some(dst) = content.get_mut(from..end) {
            dst.copy_from_slice(bytes);
        }
        file.replace(content)?;
        file.sync_range(from, bytes.len());
        Ok(())
    }

    fn extend(&self, path: &Path, len: u64) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        let file = Self::file(&m, path)?;
        let mut content = file.live_copy();
        let len = usize::try_from(len).map_err(|_| io::Error::other("length too large"))?;
        if content.len() < len {
            content.resize(len, 0);
            file.replace(content)?;
            file.sync_range(0, len);
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        if m.faults.rename.as_deref().is_some_and(|part| to.to_string_lossy().contains(part)) {
            m.faults.rename = None;
            return Err(io::Error::other("simulated rename failure"));
        }
        Self::check_parent(&m, to)?;
        let file = m.live.remove(from).ok_or_else(|| not_found(from))?;
        m.live.insert(to.to_owned(), file);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        m.live.remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        let occupied = m.live.keys().chain(m.dirs.iter()).any(|p| p.parent() == Some(dir));
        if occupied {
            return Err(io::Error::new(io::ErrorKind::DirectoryNotEmpty, format!("{} is not empty", dir.display())));
        }
        if m.dirs.remove(dir) { Ok(()) } else { Err(not_found(dir)) }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut m = self.machine();
        self.op(&mut m)?;
        if !m.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        m.durable.retain(|p, _| p.parent() != Some(dir));
        let entries: Vec<(PathBuf, Arc<SimFile>)> =
            m.live.iter().filter(|(p, _)| p.parent() == Some(dir)).map(|(p, f)| (p.clone(), Arc::clone(f))).collect();
        m.durable.extend(entries);
        Ok(())
    }

    fn map_file(&self, path: &Path, size: usize, mode: MapMode) -> io::Result<Box<dyn Region>> {
        let mut m = self.machine();
        let file = match mode {
            MapMode::Open => Self::file(&m, path)?,
            // The simulated disk counts a sparse file at its full size: its full-disk faults
            // then strike consume queues where they struck before.
            MapMode::Create | MapMode::CreateSparse => {
                self.op(&mut m)?;
                Self::check_parent(&m, path)?;
                match m.live.get(path) {
                    Some(f) if f.len() == size => Arc::clone(f),
                    existing => {
                        let grow = (size - existing.map_or(0, |f| f.len().min(size))) as u64;
                        if Self::used(&m).saturating_add(grow) > m.capacity {
                            return Err(io::Error::new(io::ErrorKind::StorageFull, "simulated disk is full"));
                        }
                        let f = SimFile::new(vec![0u8; size], Vec::new());
                        m.live.insert(path.to_owned(), Arc::clone(&f));
                        f
                    }
                }
            }
        };
        if file.len() != size {
            return Err(io::Error::other(format!("{} has {} bytes, not {size}", path.display(), file.len())));
        }
        file.mapped.fetch_add(1, Ordering::AcqRel);
        let ptr = file.live_ptr.load(Ordering::Acquire);
        drop(m);
        Ok(Box::new(SimRegion { fs: self.me.clone(), file, ptr, len: size }))
    }

    fn modified(&self, path: &Path) -> Option<SystemTime> {
        let m = self.machine();
        m.live.get(path).map(|f| *f.modified.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn space(&self, _path: &Path) -> io::Result<DiskSpace> {
        let m = self.machine();
        let total = m.capacity;
        Ok(DiskSpace { total, free: total.saturating_sub(Self::used(&m)) })
    }

    fn lock_store(&self, root: &Path) -> io::Result<Box<dyn StoreLock>> {
        let mut m = self.machine();
        if !m.locks.insert(root.to_owned()) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(Box::new(SimLock { fs: self.me.clone(), root: root.to_owned() }))
    }
}

#[derive(Debug)]
struct SimLock {
    fs: std::sync::Weak<SimFs>,
    root: PathBuf,
}

impl StoreLock for SimLock {}

impl Drop for SimLock {
    fn drop(&mut self) {
        if let Some(fs) = self.fs.upgrade() {
            fs.machine().locks.remove(&self.root);
        }
    }
}

#[derive(Debug)]
struct SimRegion {
    fs: std::sync::Weak<SimFs>,
    file: Arc<SimFile>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the region's bytes are a heap allocation owned by `file` (kept alive by the `Arc`);
// who writes which bytes is coordinated by the store, as for a real mapping.
unsafe impl Send for SimRegion {}
// SAFETY: as above.
unsafe impl Sync for SimRegion {}

impl Drop for SimRegion {
    fn drop(&mut self) {
        self.file.mapped.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Region for SimRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    fn len(&self) -> usize {
        self.len
    }

    fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        let fs = self.fs.upgrade().ok_or_else(dead)?;
        let mut m = fs.machine();
        fs.op(&mut m)?;
        if let Some(n) = m.faults.sync_in {
            if n <= 1 {
                m.faults.sync_in = None;
                self.file.lose_range(offset, len);
                return Err(io::Error::from_raw_os_error(5));
            }
            m.faults.sync_in = Some(n - 1);
        }
        self.file.sync_range(offset, len);
        Ok(())
    }

    fn reserve(&self) -> io::Result<Reservation> {
        Ok(Reservation::Reserved)
    }

    fn reserve_range(&self, _offset: usize, _len: usize) -> io::Result<Reservation> {
        Ok(Reservation::Reserved)
    }

    fn zero_from(&self, from: usize) -> io::Result<()> {
        if from < self.len {
            // SAFETY: inside the allocation; callers zero a tail no reader can see.
            unsafe { std::ptr::write_bytes(self.ptr.add(from), 0, self.len - from) };
        }
        self.sync(from, self.len.saturating_sub(from))
    }
}
