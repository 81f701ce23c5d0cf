//! [`RealFs`]: the operating system's file system, with mapped files and space reservation.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use memmap2::{MmapOptions, MmapRaw};
use rustix::fs::FallocateFlags;

use super::{DiskSpace, Fs, MapMode, Region, Reservation, StoreLock};

/// The operating system's file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

/// Zeros written per call where a file system cannot preallocate.
const FILL_STEP: usize = 1 << 20;

/// fcntl locks are per process: they keep other processes (another Silo, a Java broker) out,
/// but not a second store on the same directory in this process. This registry does.
static OPEN_ROOTS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

#[derive(Debug)]
struct RealLock {
    canonical: PathBuf,
    /// The open `lock` file, holding its fcntl lock.
    _file: File,
}

impl StoreLock for RealLock {}

impl Drop for RealLock {
    fn drop(&mut self) {
        OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).retain(|p| *p != self.canonical);
    }
}

impl Fs for RealFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn read_at(&self, path: &Path, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let file = File::open(path)?;
        let mut read = 0;
        while read < buf.len() {
            let Some(rest) = buf.get_mut(read..) else { break };
            match file.read_at(rest, offset + read as u64)? {
                0 => break,
                n => read += n,
            }
        }
        Ok(read)
    }

    fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        // Owner-only: these are the store's metadata files, and `config/auth.json` holds the
        // users' secret keys. A file created before (by an older version) is narrowed too.
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
        if f.metadata()?.permissions().mode() & 0o077 != 0 {
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(bytes)?;
        f.sync_all()
    }

    fn write_at_synced(&self, path: &Path, bytes: &[u8], offset: u64) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(path)?;
        f.write_all_at(bytes, offset)?;
        f.sync_data()
    }

    fn extend(&self, path: &Path, len: u64) -> io::Result<()> {
        let f = OpenOptions::new().write(true).open(path)?;
        if f.metadata()?.len() < len {
            f.set_len(len)?;
        }
        f.sync_all()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn map_file(&self, path: &Path, size: usize, mode: MapMode) -> io::Result<Box<dyn Region>> {
        let region = match mode {
            MapMode::Open => {
                let file = OpenOptions::new().read(true).write(true).open(path)?;
                RealRegion::map(path, file, size)?
            }
            MapMode::Create | MapMode::CreateSparse => {
                let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
                let created = (|| {
                    file.set_len(size as u64)?;
                    let region = RealRegion::map(path, file, size)?;
                    if mode == MapMode::Create && region.reserve()? == Reservation::Unsupported {
                        tracing::warn!(path = %path.display(),
                            "this file system can neither preallocate nor fill files: a full disk may stop the broker (SIGBUS)");
                    }
                    Ok(region)
                })();
                match created {
                    Ok(region) => region,
                    Err(e) => {
                        // Leave nothing half made: the next attempt starts afresh.
                        let _ = std::fs::remove_file(path);
                        return Err(e);
                    }
                }
            }
        };
        Ok(Box::new(region))
    }

    fn modified(&self, path: &Path) -> Option<SystemTime> {
        std::fs::metadata(path).ok()?.modified().ok()
    }

    fn space(&self, path: &Path) -> io::Result<DiskSpace> {
        let st = rustix::fs::statvfs(path)?;
        let unit = if st.f_frsize > 0 { st.f_frsize } else { st.f_bsize };
        Ok(DiskSpace { total: st.f_blocks.saturating_mul(unit), free: st.f_bfree.saturating_mul(unit) })
    }

    fn lock_store(&self, root: &Path) -> io::Result<Box<dyn StoreLock>> {
        let canonical = root.canonicalize()?;
        let mut open = OPEN_ROOTS.lock().unwrap_or_else(|e| e.into_inner());
        if open.contains(&canonical) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(root.join("lock"))?;
        rustix::fs::fcntl_lock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))?;
        open.push(canonical.clone());
        Ok(Box::new(RealLock { canonical, _file: file }))
    }
}

/// The process's memory mappings and the kernel's limit on them (`vm.max_map_count`), where
/// the system says; every mapped store file (a consume queue per queue) is one mapping.
pub fn mappings_in_use() -> Option<(usize, usize)> {
    let limit = std::fs::read_to_string("/proc/sys/vm/max_map_count").ok()?.trim().parse().ok()?;
    let maps = std::fs::read("/proc/self/maps").ok()?;
    Some((maps.iter().filter(|b| **b == b'\n').count(), limit))
}

/// A file mapped shared, read-write.
///
/// The region keeps no descriptor open: the mapping holds the file, and `msync` needs no
/// descriptor. A broker with a consume queue per queue would otherwise hold a descriptor per
/// queue and meet the process's limit (often 1,024 or 20,000) long before anything else. The
/// rarer operations that need one (reserving space, finding data past a position) open the
/// file for the call.
#[derive(Debug)]
struct RealRegion {
    path: PathBuf,
    map: MmapRaw,
    len: usize,
}

impl RealRegion {
    fn map(path: &Path, file: File, len: usize) -> io::Result<Self> {
        let map = MmapOptions::new().len(len).map_raw(&file).map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::NOMEM.raw_os_error())
                && let Some((used, limit)) = mappings_in_use()
            {
                io::Error::new(e.kind(), format!(
                    "{e}: {used} of vm.max_map_count {limit} mappings in use (each consume-queue file is one); raise it, e.g. sysctl vm.max_map_count=655360"))
            } else {
                e
            }
        })?;
        Ok(Self { path: path.to_owned(), map, len })
    }

    fn file(&self) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(&self.path)
    }

    /// Writes zeros into the holes of `[from, to)` (where the file has no blocks), for file
    /// systems that cannot preallocate. Data already there is left alone.
    fn fill_holes(&self, from: u64, to: u64) -> io::Result<Reservation> {
        use rustix::fs::{SeekFrom, seek};
        let len = to.min(self.len as u64);
        let file = self.file()?;
        let zeros = vec![0u8; FILL_STEP];
        let mut pos = from;
        while pos < len {
            let hole = match seek(&file, SeekFrom::Hole(pos)) {
                Ok(h) => h,
                Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOTSUP) => return Ok(Reservation::Unsupported),
                Err(e) => return Err(e.into()),
            };
            if hole >= len {
                break;
            }
            let data = match seek(&file, SeekFrom::Data(hole)) {
                Ok(d) => d.min(len),
                Err(rustix::io::Errno::NXIO) => len,
                Err(e) => return Err(e.into()),
            };
            let mut at = hole;
            while at < data {
                let n = ((data - at) as usize).min(FILL_STEP);
                file.write_all_at(zeros.get(..n).unwrap_or(&zeros), at)?;
                at += n as u64;
            }
            pos = data;
        }
        Ok(Reservation::Reserved)
    }
}

impl Region for RealRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    fn len(&self) -> usize {
        self.len
    }

    fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        self.map.flush_range(offset, len)
    }

    fn reserve(&self) -> io::Result<Reservation> {
        self.reserve_range(0, self.len)
    }

    fn reserve_range(&self, offset: usize, len: usize) -> io::Result<Reservation> {
        let end = offset.saturating_add(len).min(self.len);
        if end <= offset {
            return Ok(Reservation::Reserved);
        }
        match rustix::fs::fallocate(&self.file()?, FallocateFlags::empty(), offset as u64, (end - offset) as u64) {
            Ok(()) => Ok(Reservation::Reserved),
            Err(rustix::io::Errno::NOTSUP) => self.fill_holes(offset as u64, end as u64),
            Err(e) => Err(e.into()),
        }
    }

    /// `SEEK_DATA` and `SEEK_HOLE`: a hole, and on ext4 and XFS a preallocated extent never
    /// written, reads as zeros without being read.
    fn next_data(&self, from: usize) -> io::Result<Option<(usize, usize)>> {
        use rustix::fs::{SeekFrom, seek};
        if from >= self.len {
            return Ok(None);
        }
        let file = self.file()?;
        let start = match seek(&file, SeekFrom::Data(from as u64)) {
            Ok(d) => d,
            Err(rustix::io::Errno::NXIO) => return Ok(None),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOTSUP) => return Ok(Some((from, self.len))),
            Err(e) => return Err(e.into()),
        };
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        if start >= self.len {
            return Ok(None);
        }
        let end = match seek(&file, SeekFrom::Hole(start as u64)) {
            Ok(h) => usize::try_from(h).unwrap_or(usize::MAX).min(self.len),
            Err(_) => self.len,
        };
        Ok(Some((start, end.max(start))))
    }

    fn zero_from(&self, from: usize) -> io::Result<()> {
        if from >= self.len {
            return Ok(());
        }
        let len = (self.len - from) as u64;
        let keep = FallocateFlags::KEEP_SIZE;
        let file = self.file()?;
        if rustix::fs::fallocate(&file, FallocateFlags::ZERO_RANGE | keep, from as u64, len).is_err() {
            if rustix::fs::fallocate(&file, FallocateFlags::PUNCH_HOLE | keep, from as u64, len).is_ok() {
                // The hole gave the space back: take it again. On a full disk that fails, and the
                // file stays sparse: files opened from disk are reserved before their first
                // write anyway, so recovery goes on and the writer meets the full disk instead.
                let _ = self.reserve();
            } else {
                // SAFETY: `from..len` is inside the mapping; callers zero a tail no reader can
                // see (recovery, before any reader or writer exists).
                unsafe { std::ptr::write_bytes(self.map.as_mut_ptr().add(from), 0, self.len - from) };
            }
        }
        self.map.flush_range(from, self.len - from)
    }

    fn advise_sequential(&self) -> io::Result<()> {
        self.map.advise(memmap2::Advice::Sequential)
    }

    fn advise_random(&self) -> io::Result<()> {
        self.map.advise(memmap2::Advice::Random)
    }

    fn populate_write(&self, offset: usize, len: usize) -> io::Result<()> {
        self.map.advise_range(memmap2::Advice::PopulateWrite, offset, len)
    }
}
