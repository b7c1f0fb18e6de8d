//! The pool (PASTE's Ppool): one file holding a header, the log region and
//! fixed-size buffers addressed by a `u32` index, mapped shared.
//!
//! Owns: the file, its lock, the mapping, and the persistence backend. All
//! access to pool memory goes through this type, which bounds-checks every
//! range and declares every store to the backend (so the crash simulator
//! sees it). This file and `flush.rs` hold the unsafe code of pool memory
//! access (system calls and io_uring have theirs in `io/`).
//!
//! Guarantees:
//! - A pool appears under its name only complete: it is built under a
//!   temporary name, synced, and renamed into place without replacing.
//!   The temporary (`NAME.creating-PID`) is locked by its creator while it
//!   is built; one whose creator is gone is removed by the next create or
//!   open of `NAME` (`remove_stale_creations`), never one in use.
//! - The file is created 0600 and locked for as long as a `Pool` holds it;
//!   a second opener, in this process or another, gets `PoolError::Locked`.
//! - Opening never repairs: bad magic, version, checksum, size or geometry
//!   is an error naming the file.
//! - Opening as a kind (`open_as`) refuses a pool of another kind before
//!   it writes anything, even the lock holder's pid: a refused pool is
//!   left byte for byte as it was.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::PoolError;
use crate::limits::{CACHE_LINE_SIZE, PAGE_SIZE};
use crate::pool::flush::FlushInstruction;
use crate::pool::kind::{Evidence, PoolKind};

/// What the contents of a pool that records no kind say it is
/// (`store::claim::infer`, which reads the log and the tree).
pub type Infer = fn(&Pool) -> Evidence;
use crate::limits::{FENCE_LATENCY_NS_MAX, HEADER_REGION_SIZE};
use crate::pool::layout::{get_u32, get_u64, put_u32, put_u64, Geometry, Header, HeaderError, ShardId, HDR_SIZE};
use crate::pool::persist::{Domain, DomainInfo, Hardware, PersistOptions, PersistStats, Persistence, SyncToken};
use crate::pool::sim::{SimDevice, SimMode};

const TMPFS_MAGIC: i64 = 0x0102_1994;
const HUGETLBFS_MAGIC: i64 = 0x9584_58f6;

/// Where the holder of the lock writes its pid: in the header page, outside
/// the checksummed header. Advisory, never synced.
const HDR_HOLDER_PID: u64 = 256;
const _: () = assert!(HDR_HOLDER_PID >= HDR_SIZE as u64 && HDR_HOLDER_PID + 4 <= HEADER_REGION_SIZE);

/// Where a server names the recent-writes table one-sided readers may
/// trust (`set_reader_instance`): in the header page, outside the
/// checksummed header. Advisory, never synced.
pub const HDR_READER_INSTANCE: u64 = 264;
const _: () = assert!(HDR_READER_INSTANCE >= HDR_HOLDER_PID + 4 && HDR_READER_INSTANCE % 8 == 0);

/// Where a server records what its recovery found (`LastRecovery`): in the
/// header page, outside the checksummed header, with its own CRC.
const HDR_LAST_RECOVERY: u64 = 128;
const LAST_RECOVERY_SIZE: usize = 64;
const LAST_RECOVERY_MAGIC: u32 = u32::from_le_bytes(*b"LREC");
const _: () = assert!(HDR_LAST_RECOVERY >= HDR_SIZE as u64 && HDR_LAST_RECOVERY + 64 <= HDR_HOLDER_PID);

/// What the last recovery of a pool found, as the server that ran it
/// recorded it (`docs/format.md`, header page offset 128). Advisory: it
/// is written after recovery and goes out with the next fence or sync,
/// never on its own; a torn or missing record only loses this report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LastRecovery {
    pub pid: u32,
    /// When recovery finished (Unix time, ns).
    pub finished_unix_ns: u64,
    pub duration_us: u64,
    /// Log records replayed (into the tree, for the key-value store).
    pub records_replayed: u64,
    /// Records of a torn batch or command dropped.
    pub records_dropped: u64,
    /// Keys afterwards (the key-value store; 0 for the WAL).
    pub keys: u64,
}

impl LastRecovery {
    fn encode(&self) -> [u8; LAST_RECOVERY_SIZE] {
        let mut b = [0u8; LAST_RECOVERY_SIZE];
        put_u32(&mut b, 0, LAST_RECOVERY_MAGIC);
        put_u32(&mut b, 4, self.pid);
        put_u64(&mut b, 8, self.finished_unix_ns);
        put_u64(&mut b, 16, self.duration_us);
        put_u64(&mut b, 24, self.records_replayed);
        put_u64(&mut b, 32, self.records_dropped);
        put_u64(&mut b, 40, self.keys);
        let crc = crate::util::crc::crc32c(&b[..60]);
        put_u32(&mut b, 60, crc);
        b
    }

    fn decode(b: &[u8]) -> Option<LastRecovery> {
        (get_u32(b, 0) == LAST_RECOVERY_MAGIC && get_u32(b, 60) == crate::util::crc::crc32c(&b[..60])).then(|| {
            LastRecovery {
                pid: get_u32(b, 4),
                finished_unix_ns: get_u64(b, 8),
                duration_us: get_u64(b, 16),
                records_replayed: get_u64(b, 24),
                records_dropped: get_u64(b, 32),
                keys: get_u64(b, 40),
            }
        })
    }
}

/// An open pool.
pub struct Pool {
    base: *mut u8,
    len: u64,
    header: Header,
    domain: DomainInfo,
    persistence: Persistence,
    stats: PersistStats,
    path: PathBuf,
    /// Holds the lock; None for a simulated pool.
    file: Option<File>,
    mapped: bool,
}

// SAFETY: the mapping is plain shared memory valid for the pool's life; all
// mutation of the pool's own metadata goes through `&self` methods that use
// raw-pointer copies or atomics. Which region a thread may write is a
// protocol above this type (one writer per log, per buffer owner).
unsafe impl Send for Pool {}
// SAFETY: as above; the backend's own state is behind a Mutex or atomics.
unsafe impl Sync for Pool {}

impl Pool {
    /// Creates a new pool file at `path` that records no kind (a pool for
    /// tests and tools; see `create_as`). Fails if `path` exists.
    pub fn create(path: &Path, geometry: Geometry, options: &PersistOptions) -> Result<Pool, PoolError> {
        Self::create_as(path, PoolKind::Unset, geometry, options)
    }

    /// Creates a new pool file at `path` for `kind`, recorded in its header.
    /// Fails if `path` exists.
    pub fn create_as(
        path: &Path,
        kind: PoolKind,
        geometry: Geometry,
        options: &PersistOptions,
    ) -> Result<Pool, PoolError> {
        Self::create_shard(path, kind, None, geometry, options)
    }

    /// `create_as` for one shard of a sharded data set (`shard`, recorded
    /// in its header with the rest of it, under its CRC).
    pub fn create_shard(
        path: &Path,
        kind: PoolKind,
        shard: Option<ShardId>,
        geometry: Geometry,
        options: &PersistOptions,
    ) -> Result<Pool, PoolError> {
        let io_err = |source| PoolError::Io { path: path.to_path_buf(), source };
        geometry.validate().map_err(|reason| PoolError::BadGeometry { path: path.to_path_buf(), reason })?;
        if path.exists() {
            return Err(PoolError::Exists { path: path.to_path_buf() });
        }
        remove_stale_creations(path);
        let temporary = temporary_name(path);
        let result = (|| {
            let file = OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&temporary)?;
            // Held until the file closes (or this process dies): the mark
            // of a creation in progress (`remove_stale_creations`).
            lock_creation(&file)?;
            let huge_page = hugetlbfs_page_size(&file);
            if let Some(page) = huge_page.filter(|page| geometry.file_size() % page != 0) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("a pool on hugetlbfs must be a multiple of its {} KiB pages", page >> 10),
                ));
            }
            file.set_len(geometry.file_size())?;
            if !options.sparse {
                reserve(&file, geometry.file_size())?;
            }
            if !options.sparse && options.zero_fill && !on_tmpfs(&file) && huge_page.is_none() {
                zero_fill(&file, geometry.file_size())?;
            }
            match huge_page {
                // hugetlbfs has no write(2): its pages are written mapped.
                Some(page) => write_mapped(&file, &initial_metadata(&geometry, kind, shard), page)?,
                None => file.write_all_at(&initial_metadata(&geometry, kind, shard), 0)?,
            }
            file.sync_all()?;
            rename_no_replace(&temporary, path)?;
            sync_parent_directory(path)
        })();
        if let Err(error) = result {
            let _ = std::fs::remove_file(&temporary);
            if error.kind() == io::ErrorKind::AlreadyExists {
                return Err(PoolError::Exists { path: path.to_path_buf() });
            }
            return Err(io_err(error));
        }
        let pool = Self::open(path, options)?;
        pool.populate_logs();
        Ok(pool)
    }

    /// Opens an existing pool, of any kind (`inspect`, tests).
    pub fn open(path: &Path, options: &PersistOptions) -> Result<Pool, PoolError> {
        Self::open_checked(path, None, options)
    }

    /// Opens an existing pool for a program that uses pools of `kind`:
    /// a pool of another kind is refused (`PoolError::WrongKind`) before
    /// anything is written. A pool that records no kind is accepted if
    /// `infer` says its contents are of `kind`, or that it is empty. Programs
    /// call `PoolKindExt::open_as`, which passes the store's inference.
    pub fn open_claimed(
        path: &Path,
        kind: PoolKind,
        options: &PersistOptions,
        infer: Infer,
    ) -> Result<Pool, PoolError> {
        assert!(kind != PoolKind::Unset, "a program opens a pool as its own kind");
        Self::open_checked(path, Some((kind, infer)), options)
    }

    fn open_checked(path: &Path, kind: Option<(PoolKind, Infer)>, options: &PersistOptions) -> Result<Pool, PoolError> {
        let pool_err = |source| PoolError::Io { path: path.to_path_buf(), source };
        if options.fence_latency_ns > FENCE_LATENCY_NS_MAX {
            return Err(PoolError::BadGeometry {
                path: path.to_path_buf(),
                reason: format!("fence latency {} ns exceeds {FENCE_LATENCY_NS_MAX}", options.fence_latency_ns),
            });
        }
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(pool_err)?;
        lock(&file, path)?;
        remove_stale_creations(path);
        let actual = file.metadata().map_err(pool_err)?.len();
        let mut bytes = vec![0u8; HDR_SIZE];
        if actual < HDR_SIZE as u64 {
            file.read_at(&mut bytes[..actual as usize], 0).map_err(pool_err)?;
            return Err(if bytes[..actual as usize] == crate::pool::layout::POOL_MAGIC[..(actual as usize).min(8)] {
                PoolError::SizeMismatch { path: path.into(), expected: HEADER_REGION_SIZE, actual }
            } else {
                PoolError::BadMagic { path: path.into() }
            });
        }
        file.read_exact_at(&mut bytes, 0).map_err(pool_err)?;
        let header = decode_header(&bytes, path)?;
        let expected = header.geometry.file_size();
        if actual != expected {
            return Err(PoolError::SizeMismatch { path: path.into(), expected, actual });
        }
        let (base, dax) = map(&file, expected, options).map_err(pool_err)?;
        let domain = match choose_domain(&file, dax, options) {
            Ok(domain) => domain,
            Err((name, reason)) => {
                // SAFETY: `base` is the mapping of `expected` bytes just made.
                unsafe { libc::munmap(base.cast(), expected as usize) };
                return Err(PoolError::DomainUnavailable { path: path.into(), domain: name, reason });
            }
        };
        let persistence = Persistence::Hardware(Hardware {
            domain: domain.domain,
            instruction: domain.instruction,
            page_sync: domain.page_sync,
            fence_latency_ns: domain.fence_latency_ns,
            fd: file.as_raw_fd(),
            base,
            dirty_ranges: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
        });
        let pool = Pool {
            base,
            len: expected,
            header,
            domain,
            persistence,
            stats: PersistStats::default(),
            path: path.to_path_buf(),
            file: Some(file),
            mapped: true,
        };
        if let Some((kind, infer)) = kind {
            pool.check_kind(kind, infer)?; // reads only: a refused pool is unchanged
        }
        record_holder(pool.file.as_ref().expect("a file pool"));
        // Readers of an earlier server's table stop trusting it before
        // recovery changes anything (docs/one-sided-reads.md).
        pool.set_reader_instance(0);
        Ok(pool)
    }

    /// On tmpfs, at creation, gives the log regions their pages now: a
    /// fresh pool's first lap through its logs otherwise takes a page
    /// fault (zeroing a page) every 4 KiB of records, 5% of a small write's
    /// CPU (issue 36). The logs are written all over within minutes of use
    /// anyway; a pool opened again has them already (and `inspect` of a
    /// pool takes nothing). Advice only: a kernel without
    /// MADV_POPULATE_WRITE (before 5.14) skips it.
    fn populate_logs(&self) {
        if !self.file.as_ref().is_some_and(on_tmpfs) {
            return;
        }
        let geometry = self.geometry();
        let start = geometry.log_region_offset(0);
        let end = geometry.log_region_offset(geometry.log_count - 1) + geometry.log_region_size();
        let (start, end) = (start / PAGE_SIZE * PAGE_SIZE, end.div_ceil(PAGE_SIZE) * PAGE_SIZE);
        self.check(start, end - start);
        // SAFETY: the range is page aligned and inside the mapping (checked
        // above); populating allocates zeroed pages only where the file has
        // none, and changes no byte of a page it has.
        unsafe {
            libc::madvise(self.base.add(start as usize).cast(), (end - start) as usize, libc::MADV_POPULATE_WRITE)
        };
    }

    /// Refuses the pool unless it is of `wanted`, as recorded or, for a
    /// pool that records none, as its contents say (or it is empty).
    fn check_kind(&self, wanted: PoolKind, infer: Infer) -> Result<(), PoolError> {
        let path = self.path.clone();
        let found = self.header.kind;
        if found == wanted {
            return Ok(());
        }
        if found != PoolKind::Unset {
            return Err(PoolError::WrongKind { path, found, wanted, evidence: None });
        }
        match infer(self) {
            Evidence::Empty => Ok(()),
            Evidence::Kind { kind, .. } if kind == wanted => Ok(()),
            Evidence::Kind { kind, why } => {
                Err(PoolError::WrongKind { path, found: kind, wanted, evidence: Some(why) })
            }
            Evidence::Undecided(reason) => Err(PoolError::KindUndecided { path, version: self.header.version, reason }),
        }
    }

    /// What the pool is for, as recorded in its header, or (for a pool
    /// that records none) as `infer` says its contents are.
    pub fn kind_evidence_with(&self, infer: Infer) -> Evidence {
        match self.header.kind {
            PoolKind::Unset => infer(self),
            kind => Evidence::Kind { kind, why: "recorded in the header".into() },
        }
    }

    /// Opens `path`, creating it with `geometry` if it does not exist. An
    /// existing pool must have exactly that geometry.
    pub fn open_or_create(path: &Path, geometry: Geometry, options: &PersistOptions) -> Result<Pool, PoolError> {
        Self::open_or_create_checked(path, None, geometry, options)
    }

    /// `open_or_create` for a program that uses pools of `kind`: a new pool
    /// records it, an existing one must be of it (`open_claimed`).
    pub fn open_or_create_claimed(
        path: &Path,
        kind: PoolKind,
        geometry: Geometry,
        options: &PersistOptions,
        infer: Infer,
    ) -> Result<Pool, PoolError> {
        assert!(kind != PoolKind::Unset, "a program opens a pool as its own kind");
        Self::open_or_create_checked(path, Some((kind, infer)), geometry, options)
    }

    fn open_or_create_checked(
        path: &Path,
        kind: Option<(PoolKind, Infer)>,
        geometry: Geometry,
        options: &PersistOptions,
    ) -> Result<Pool, PoolError> {
        match Self::create_as(path, kind.map_or(PoolKind::Unset, |(kind, _)| kind), geometry, options) {
            Err(PoolError::Exists { .. }) => {
                let pool = Self::open_checked(path, kind, options)?;
                if pool.geometry() != geometry {
                    return Err(PoolError::GeometryMismatch {
                        path: path.into(),
                        found: pool.geometry().to_string(),
                        wanted: geometry.to_string(),
                    });
                }
                Ok(pool)
            }
            other => other,
        }
    }

    /// Formats a fresh simulated device as a pool (durably, like `create`).
    pub fn create_simulated(device: Arc<SimDevice>, geometry: Geometry) -> Result<Pool, PoolError> {
        let path = PathBuf::from("<simulated>");
        geometry.validate().map_err(|reason| PoolError::BadGeometry { path: path.clone(), reason })?;
        assert!(device.len() >= geometry.file_size(), "the device is smaller than the pool");
        let metadata = initial_metadata(&geometry, PoolKind::Unset, None);
        let pool = Self::simulated_unchecked(device, Header::decode(&metadata).expect("a fresh header decodes"));
        pool.write(0, &metadata);
        pool.flush(0, metadata.len() as u64);
        pool.fence().map_err(|source| PoolError::Io { path, source })?;
        Ok(pool)
    }

    /// Opens the pool on a simulated device (after a simulated crash, built
    /// with `SimDevice::from_image`), checking it as `open` checks a file.
    pub fn open_simulated(device: Arc<SimDevice>) -> Result<Pool, PoolError> {
        let path = PathBuf::from("<simulated>");
        let len = device.len();
        if len < HDR_SIZE as u64 {
            return Err(PoolError::SizeMismatch { path, expected: HEADER_REGION_SIZE, actual: len });
        }
        // SAFETY: the device holds `len` >= HDR_SIZE initialised bytes.
        let bytes = unsafe { std::slice::from_raw_parts(device.memory_ptr(), HDR_SIZE) }.to_vec();
        let header = decode_header(&bytes, &path)?;
        if header.geometry.file_size() > len {
            return Err(PoolError::SizeMismatch { path, expected: header.geometry.file_size(), actual: len });
        }
        Ok(Self::simulated_unchecked(device, header))
    }

    fn simulated_unchecked(device: Arc<SimDevice>, header: Header) -> Pool {
        let domain = DomainInfo {
            domain: match device.mode() {
                SimMode::CacheLine => Domain::CacheLine,
                SimMode::Page => Domain::Page,
            },
            durable: false,
            detected_by: "the crash simulator".into(),
            instruction: None,
            page_sync: crate::pool::persist::PageSync::Fdatasync,
            fence_latency_ns: 0,
            simulated: true,
            tmpfs_huge_pages: None,
        };
        Pool {
            base: device.memory_ptr(),
            len: header.geometry.file_size(),
            header,
            domain,
            persistence: Persistence::Simulated(device),
            stats: PersistStats::default(),
            path: PathBuf::from("<simulated>"),
            file: None,
            mapped: false,
        }
    }

    pub fn geometry(&self) -> Geometry {
        self.header.geometry
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn domain(&self) -> &DomainInfo {
        &self.domain
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Names the recent-writes table one-sided readers may trust (its
    /// instance; 0: none). Advisory, never flushed: every opener writes 0
    /// before it changes anything, so a stale value never outlives a start.
    pub fn set_reader_instance(&self, instance: u64) {
        self.reader_instance().store(instance, std::sync::atomic::Ordering::SeqCst);
        // Later plain stores to the pool (recovery's) are not seen before it.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    /// The instance `set_reader_instance` stored.
    pub fn reader_instance_now(&self) -> u64 {
        self.reader_instance().load(std::sync::atomic::Ordering::SeqCst)
    }

    fn reader_instance(&self) -> &std::sync::atomic::AtomicU64 {
        // SAFETY: inside the header page of the mapping (asserted at the
        // constant), 8-aligned (the mapping is page-aligned), accessed by
        // every process only through atomics; lives as long as `self`.
        unsafe { &*self.base.add(HDR_READER_INSTANCE as usize).cast::<std::sync::atomic::AtomicU64>() }
    }

    /// Records what this process's recovery found (see `LastRecovery`),
    /// stamped with this process's pid and the time now: stored and
    /// flushed, made durable by the next fence or sync.
    pub fn record_recovery(&self, recovery: &LastRecovery) {
        let recovery = LastRecovery { pid: std::process::id(), finished_unix_ns: unix_ns(), ..*recovery };
        self.write(HDR_LAST_RECOVERY, &recovery.encode());
        self.flush(HDR_LAST_RECOVERY, LAST_RECOVERY_SIZE as u64);
    }

    /// The last recovery recorded, if any (and intact).
    pub fn last_recovery(&self) -> Option<LastRecovery> {
        let mut b = [0u8; LAST_RECOVERY_SIZE];
        self.read(HDR_LAST_RECOVERY, &mut b);
        LastRecovery::decode(&b)
    }

    pub fn stats(&self) -> &PersistStats {
        &self.stats
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn check(&self, offset: u64, len: u64) {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "pool access [{offset}, +{len}) beyond the pool ({} bytes)",
            self.len
        );
    }

    /// Copies `data` into the pool at `offset` and declares the store.
    #[inline]
    pub fn write(&self, offset: u64, data: &[u8]) {
        self.check(offset, data.len() as u64);
        // SAFETY: the range is inside the mapping (checked above) and `data`
        // cannot overlap it: `data` is a shared borrow, and no shared
        // borrow of pool memory outlives the `unsafe` contract of `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(offset as usize), data.len()) };
        self.persistence.note_written(offset, data.len() as u64);
    }

    /// Writes whole lines at a line-aligned `offset` and flushes them:
    /// durable at the next fence, as `write` then `flush`. In the hardware
    /// cache-line domain it streams them (non-temporal stores): no line is
    /// read before it is written, nor written back after.
    pub fn write_lines_flushed(&self, offset: u64, data: &[u8]) {
        let line = CACHE_LINE_SIZE as u64;
        assert!(offset % line == 0 && data.len() as u64 % line == 0, "whole lines at a line boundary");
        if !self.persistence.streams_lines() {
            self.write(offset, data);
            self.flush(offset, data.len() as u64);
            return;
        }
        self.check(offset, data.len() as u64);
        // SAFETY: the range is inside the mapping (checked above), line
        // aligned (asserted, and the mapping is page aligned), and `data`
        // cannot overlap it (as for `write`).
        unsafe { crate::pool::flush::stream_lines(self.base.add(offset as usize), data) };
        self.stats.lines_flushed.fetch_add(data.len() as u64 / line, Ordering::Relaxed);
    }

    /// Orders this thread's streamed lines (`write_lines_flushed`) before
    /// its later stores: an sfence orders only its own core's
    /// non-temporal stores, so a log appended on one thread and committed
    /// (fenced) on another calls this after appending (the write cache).
    pub fn order_streamed(&self) {
        if self.persistence.streams_lines() {
            crate::pool::flush::store_fence();
        }
    }

    /// Appends the bytes `extents` name, in order, to `out`.
    pub fn read_extents(&self, extents: &[crate::pool::extent::Extent], out: &mut Vec<u8>) {
        for extent in extents {
            let (offset, len) = (self.buffer_offset(extent.buffer) + u64::from(extent.offset), usize::from(extent.len));
            self.check(offset, len as u64);
            out.reserve(len);
            // SAFETY: the range is inside the mapping (checked above); `out`
            // has `len` bytes of spare capacity (reserved above), which the
            // copy initialises before `set_len` counts them.
            unsafe {
                std::ptr::copy_nonoverlapping(self.base.add(offset as usize), out.as_mut_ptr().add(out.len()), len);
                out.set_len(out.len() + len);
            }
        }
    }

    /// Copies pool bytes at `offset` into `out`.
    #[inline]
    pub fn read(&self, offset: u64, out: &mut [u8]) {
        self.check(offset, out.len() as u64);
        // SAFETY: the range is inside the mapping; `out` is exclusively ours.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(offset as usize), out.as_mut_ptr(), out.len()) };
    }

    /// Stores an aligned 8-byte word atomically (it cannot tear).
    #[inline]
    pub fn store_u64(&self, offset: u64, value: u64) {
        assert_eq!(offset % 8, 0, "atomic stores are 8-byte aligned");
        self.check(offset, 8);
        // SAFETY: aligned (asserted), in bounds (checked), and the mapping is
        // valid for the pool's life; AtomicU64 has the layout of u64.
        let word = unsafe { &*(self.base.add(offset as usize) as *const AtomicU64) };
        word.store(value.to_le(), Ordering::Release);
        self.persistence.note_written(offset, 8);
    }

    /// Loads an aligned 8-byte word.
    #[inline]
    pub fn load_u64(&self, offset: u64) -> u64 {
        assert_eq!(offset % 8, 0, "atomic loads are 8-byte aligned");
        self.check(offset, 8);
        // SAFETY: as in `store_u64`.
        let word = unsafe { &*(self.base.add(offset as usize) as *const AtomicU64) };
        u64::from_le(word.load(Ordering::Acquire))
    }

    /// Borrows pool bytes without copying.
    ///
    /// # Safety
    /// Nobody may store into the range while the slice lives: the caller
    /// holds a reference to every buffer it covers (so no one else may
    /// reuse them), and does not write them itself meanwhile.
    #[inline]
    pub unsafe fn bytes(&self, offset: u64, len: usize) -> &[u8] {
        self.check(offset, len as u64);
        // SAFETY: in bounds (checked); immutability is the caller's promise.
        unsafe { std::slice::from_raw_parts(self.base.add(offset as usize), len) }
    }

    /// The address of pool byte `offset`, for the kernel to receive into
    /// (a provided-buffer ring entry). Whoever stores through it must call
    /// `note_written` for the bytes stored before flushing them.
    pub fn address(&self, offset: u64) -> *mut u8 {
        self.check(offset, 0);
        self.base.wrapping_add(offset as usize)
    }

    /// Declares a store made without `write` (by the kernel, say).
    #[inline]
    pub fn note_written(&self, offset: u64, len: u64) {
        self.check(offset, len);
        self.persistence.note_written(offset, len);
    }

    /// Lends `[offset, offset + len)` to the kernel, which may store into
    /// it at any moment until `reclaim` (a buffer in the receive ring). Only
    /// the crash simulator keeps track; on hardware this costs nothing.
    #[inline]
    pub fn lend(&self, offset: u64, len: u64) {
        self.check(offset, len);
        if let Persistence::Simulated(device) = &self.persistence {
            device.lend(offset, len);
        }
    }

    /// Takes back a range given to `lend`: what the kernel stored in it
    /// counts as written.
    #[inline]
    pub fn reclaim(&self, offset: u64, len: u64) {
        self.check(offset, len);
        if let Persistence::Simulated(device) = &self.persistence {
            device.reclaim(offset, len);
        }
    }

    /// Starts making `[offset, offset + len)` durable; done at the next fence.
    #[inline]
    pub fn flush(&self, offset: u64, len: u64) {
        self.check(offset, len);
        self.persistence.flush(offset, len, &self.stats);
    }

    /// Makes every earlier flush durable: one sfence, or one sync.
    pub fn fence(&self) -> io::Result<()> {
        self.persistence.fence(&self.stats)
    }

    /// Starts a sync that completes later: it covers every flush (in the
    /// page domain, every write) made before this call. The caller either
    /// runs the sync itself (an io_uring fdatasync on `async_sync_fd`) and
    /// passes its result to `complete_sync`, or, in other domains, just
    /// calls `complete_sync`, which fences.
    pub fn begin_sync(&self) -> SyncToken {
        self.persistence.begin_sync()
    }

    /// Completes a sync begun with `begin_sync`. An error is final, as for
    /// `fence`.
    pub fn complete_sync(&self, token: SyncToken, result: io::Result<()>) -> io::Result<()> {
        self.persistence.complete_sync(token, result, &self.stats)
    }

    /// How syncs run asynchronously (page domain), if they do.
    pub fn async_sync(&self) -> Option<crate::pool::persist::AsyncSync> {
        self.persistence.async_sync()
    }

    /// The file offset of buffer `index`.
    #[inline]
    pub fn buffer_offset(&self, index: u32) -> u64 {
        assert!(index < self.header.geometry.buffer_count, "buffer {index} out of range");
        self.header.geometry.buffer_offset(index)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: `base` is our mapping of `len` bytes; nothing borrowed
            // from it outlives `self` (borrows are tied to `&self`).
            unsafe { libc::munmap(self.base.cast(), self.len as usize) };
        }
        // The file (and with it the lock) closes after this.
        let _ = self.file.take();
    }
}

/// Reserves the file's blocks (posix_fallocate): a pool that was created
/// never meets a full file system later, where a store into a hole of the
/// mapping would kill the process (SIGBUS). A file system without
/// fallocate keeps the file sparse.
fn reserve(file: &File, len: u64) -> io::Result<()> {
    // SAFETY: fd is open; offsets are within off_t (len <= POOL_SIZE_MAX).
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) } {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        libc::ENOSPC => Err(io::Error::new(
            io::ErrorKind::StorageFull,
            format!(
                "no room for a pool of {} MiB on this file system (the pool's space is reserved when it is \
                 created): free space or choose a smaller --pool-size",
                len >> 20
            ),
        )),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// Writes zeros over the whole file, one page per write (see
/// `PersistOptions::zero_fill`): a larger write would put the file's pages
/// in the cache as large folios, and the page domain's writeback writes a
/// whole folio for any store into it.
fn zero_fill(file: &File, len: u64) -> io::Result<()> {
    const PAGE: usize = 4096;
    let zeros = [0u8; PAGE];
    if len >= 1 << 30 {
        tracing::info!(mib = len >> 20, "writing zeros over the new pool once (about 1 s per GiB)");
    }
    let started = std::time::Instant::now();
    let mut at = 0;
    while at < len {
        let n = (len - at).min(PAGE as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    tracing::info!(
        mib = len >> 20,
        ms = started.elapsed().as_millis() as u64,
        "pool zero-filled at creation: later writes allocate no blocks (a sync writes data only; on DAX a fault commits no metadata)"
    );
    Ok(())
}

/// The header page and the initial log anchor, written once at creation.
fn initial_metadata(geometry: &Geometry, kind: PoolKind, shard: Option<ShardId>) -> Vec<u8> {
    let header = Header {
        geometry: *geometry,
        creation_id: random_id(),
        created_unix_ns: unix_ns(),
        version: crate::pool::layout::FORMAT_VERSION,
        kind,
        shard,
    };
    let last_anchor = geometry.log_region_offset(geometry.log_count - 1);
    let mut bytes = vec![0u8; (last_anchor + crate::pool::layout::ANCHOR_SIZE) as usize];
    bytes[..HDR_SIZE].copy_from_slice(&header.encode());
    for log in 0..geometry.log_count {
        let at = geometry.log_region_offset(log) as usize;
        crate::pool::layout::encode_initial_anchor(&mut bytes[at..]);
    }
    bytes
}

fn decode_header(bytes: &[u8], path: &Path) -> Result<Header, PoolError> {
    Header::decode(bytes).map_err(|error| match error {
        HeaderError::BadMagic => PoolError::BadMagic { path: path.into() },
        HeaderError::UnsupportedVersion(found) => {
            PoolError::UnsupportedVersion { path: path.into(), found, supported: crate::pool::layout::FORMAT_VERSION }
        }
        HeaderError::BadChecksum { stored, computed } => PoolError::BadChecksum { path: path.into(), stored, computed },
        HeaderError::BadGeometry(reason) => PoolError::BadGeometry { path: path.into(), reason },
        HeaderError::UnknownKind(found) => PoolError::UnknownKind { path: path.into(), found },
    })
}

/// The time now, in nanoseconds since the Unix epoch (0 before it).
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// A random 128-bit id (a pool's creation id, a sharded data set's id).
pub fn random_id() -> u128 {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into `bytes`.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got != bytes.len() as isize {
        // Uniqueness, not secrecy, is what matters: fall back to time and pid.
        bytes[..8].copy_from_slice(&unix_ns().to_le_bytes());
        bytes[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    u128::from_le_bytes(bytes)
}

fn temporary_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".creating-{}", std::process::id()));
    path.with_file_name(name)
}

/// The byte of a `.creating-` file its creator keeps locked (an OFD
/// write lock) for as long as it builds the pool: not the pool lock's
/// byte (`lock`), so an opener of the renamed pool is never refused by it.
pub const CREATION_LOCK_BYTE: i64 = 1;

/// A creator's file may be modified this long before its process's start
/// time (as /proc gives it: boot time in whole seconds plus ticks) and
/// still be counted as that process's.
const CREATION_START_SLACK_S: f64 = 2.0;

/// Takes the creation lock of a `.creating-` file just made.
fn lock_creation(file: &File) -> io::Result<()> {
    let request = flock_request(libc::F_WRLCK as i16, CREATION_LOCK_BYTE);
    // SAFETY: the fd is open for writing; `request` is a valid struct flock.
    match unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &request) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Removes the `NAME.creating-PID` files next to `path` that no creation
/// is using any more: left by a creator killed part-way, they would stay
/// for ever. Best effort: a file that cannot be judged or removed stays.
///
/// A file is stale when nobody holds its creation lock (its creator takes
/// it right after making the file and holds it until the rename; the
/// kernel drops it when the creator dies, so this holds across PID reuse
/// and across PID namespaces, where a live creator's PID means nothing
/// here) and, to cover the instant between the creator's open and its
/// lock, its PID names no running process, or names one that started
/// after the file was last written (the PID was reused). Two processes
/// creating the same pool at once each hold their own file's lock, so
/// neither removes the other's; whichever renames second finds the pool
/// there and opens it.
fn remove_stale_creations(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut prefix = name.as_bytes().to_vec();
    prefix.extend_from_slice(b".creating-");
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let Some(digits) = entry_name.as_bytes().strip_prefix(&prefix[..]) else { continue };
        let Some(pid) = std::str::from_utf8(digits).ok().and_then(|d| d.parse::<i32>().ok()).filter(|&p| p > 0) else {
            continue;
        };
        let stale = entry.path();
        if creation_is_stale(&stale, pid) {
            match std::fs::remove_file(&stale) {
                Ok(()) => tracing::info!(file = %stale.display(), pid, "removed a pool creation its process left"),
                Err(error) => tracing::warn!(file = %stale.display(), %error, "cannot remove a stale pool creation"),
            }
        }
    }
}

/// Whether the `.creating-` file `path`, named for `pid`, belongs to no
/// creation in progress (`remove_stale_creations`).
fn creation_is_stale(path: &Path, pid: i32) -> bool {
    let Ok(file) = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) else {
        return false;
    };
    let Ok(meta) = file.metadata() else { return false };
    if !meta.file_type().is_file() {
        return false;
    }
    let mut request = flock_request(libc::F_WRLCK as i16, CREATION_LOCK_BYTE);
    // SAFETY: the fd is open; `request` is a valid struct flock, filled in.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut request) } != 0
        || request.l_type != libc::F_UNLCK as i16
    {
        return false; // held: a creation in progress (or unknown)
    }
    match process_start_unix_s(pid) {
        // Gone, or a zombie (which holds no files); or running where /proc
        // could not say when it started (then it is kept).
        None => !process_runs(pid),
        Some(started) => {
            use std::os::unix::fs::MetadataExt;
            let written = meta.mtime() as f64 + meta.mtime_nsec() as f64 / 1e9;
            started > written + CREATION_START_SLACK_S
        }
    }
}

/// When the running process `pid` started, in seconds since the Unix
/// epoch; None if it does not run (a zombie counts as not running) or
/// /proc cannot tell.
fn process_start_unix_s(pid: i32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (in parentheses, which may itself
    // hold parentheses): state is the first, starttime the 20th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    let start_ticks: f64 = fields.get(19)?.parse().ok()?;
    let boot_s: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks_per_s > 0).then(|| boot_s + start_ticks / ticks_per_s as f64)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    let (from, to) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are valid NUL-terminated paths.
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::RENAME_NOREPLACE) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn sync_parent_directory(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

/// Takes an open-file-description lock on the header page: exclusive
/// against every other opener, in this process or another, and released
/// when the file closes (even if the process dies). OFD locks do not report
/// their holder, so the holder writes its pid into an advisory field of the
/// header page for a refused opener to read.
///
/// A killed holder's lock can outlive its pid by a moment: the kernel tears
/// an io_uring instance down in a worker after the process is reaped, and a
/// request still in flight there (an fdatasync of the pool) keeps the file
/// open until it completes. So when the recorded holder no longer runs, the
/// opener retries for up to `LOCK_DEAD_HOLDER_WAIT_MS` before refusing.
fn lock(file: &File, path: &Path) -> Result<(), PoolError> {
    let fd = file.as_raw_fd();
    let request = flock_request(libc::F_WRLCK as i16, 0);
    let started = std::time::Instant::now();
    loop {
        // SAFETY: fd is open; `request` is a valid struct flock.
        if unsafe { libc::fcntl(fd, libc::F_OFD_SETLK, &request) } == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if !matches!(error.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) {
            return Err(PoolError::Io { path: path.into(), source: error });
        }
        let mut pid = [0u8; 4];
        let holder =
            file.read_exact_at(&mut pid, HDR_HOLDER_PID).ok().map(|_| i32::from_le_bytes(pid)).filter(|&pid| pid > 0);
        let holder_gone = holder.is_some_and(|pid| !process_runs(pid));
        if !holder_gone || started.elapsed().as_millis() >= LOCK_DEAD_HOLDER_WAIT_MS as u128 {
            return Err(PoolError::Locked { path: path.into(), holder });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// How long an opener waits for the lock of a holder that no longer runs.
const LOCK_DEAD_HOLDER_WAIT_MS: u64 = 10_000;

/// Whether `pid` names a process that runs (a zombie does not: it holds no
/// files). Reads `/proc/<pid>/stat`; without /proc, assumes it runs.
fn process_runs(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and
        // may itself contain parentheses: take the text after the last ')'.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(error) => error.kind() != io::ErrorKind::NotFound,
    }
}

/// Records this process as the holder. Called only once the file has been
/// validated, so it never writes into a file that is not a pool.
fn record_holder(file: &File) {
    // Advisory only: a failure here loses the pid in others' messages.
    let _ = file.write_all_at(&(std::process::id() as i32).to_le_bytes(), HDR_HOLDER_PID);
}

fn flock_request(kind: i16, start: i64) -> libc::flock {
    // SAFETY: struct flock is plain data; all-zero is a valid value.
    let mut request: libc::flock = unsafe { std::mem::zeroed() };
    request.l_type = kind;
    request.l_whence = libc::SEEK_SET as i16;
    request.l_start = start;
    request.l_len = 1;
    request
}

/// Maps the file shared; tries MAP_SYNC first, which succeeds only on DAX.
fn map(file: &File, len: u64, options: &PersistOptions) -> io::Result<(*mut u8, bool)> {
    let fd = file.as_raw_fd();
    let protection = libc::PROT_READ | libc::PROT_WRITE;
    let populate = if options.prefault { libc::MAP_POPULATE } else { 0 };
    let try_sync = !matches!(options.domain, Some(Domain::Page) | Some(Domain::None));
    if try_sync {
        // SAFETY: a fresh mapping chosen by the kernel; the fd is open.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                protection,
                libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC | populate,
                fd,
                0,
            )
        };
        if base != libc::MAP_FAILED {
            return Ok((base.cast(), true));
        }
    }
    // SAFETY: as above.
    let base =
        unsafe { libc::mmap(std::ptr::null_mut(), len as usize, protection, libc::MAP_SHARED | populate, fd, 0) };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if hugetlbfs_page_size(file).is_some() {
        // Huge pages already, and no page cache to advise.
        return Ok((base.cast(), false));
    }
    if on_tmpfs(file) {
        // Memory, with no writeback: no advice against 2 MiB pages, which
        // the mount's huge= option grants (`tmpfs_huge_pages`); a sparse
        // pool on a huge=advise mount gets them through this advice. A
        // large pool in 4 KiB pages misses the TLB on every node and value.
        // SAFETY: the range is the mapping just created.
        unsafe { libc::madvise(base, len as usize, libc::MADV_HUGEPAGE) };
        return Ok((base.cast(), false));
    }
    // A page-cache mapping: no readahead, so a fault brings in one 4 KiB
    // page rather than a large folio. Writeback writes whole folios: with
    // readahead's 2 MiB folios, a 1 KiB value cost a 2 MiB write at every
    // fdatasync (measured on ext4; bench/results/kv.md). Advice only: a
    // kernel that refuses it still maps the pool correctly.
    // SAFETY: the range is the mapping just created.
    unsafe {
        libc::madvise(base, len as usize, libc::MADV_RANDOM);
        libc::madvise(base, len as usize, libc::MADV_NOHUGEPAGE);
    }
    Ok((base.cast(), false))
}

fn statfs_of(file: &File) -> Option<libc::statfs> {
    // SAFETY: struct statfs is plain data; fstatfs fills it for an open fd.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open and `stat` is a valid out-parameter.
    (unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) } == 0).then_some(stat)
}

// f_type's width differs by architecture.
#[allow(clippy::unnecessary_cast)]
fn on_tmpfs(file: &File) -> bool {
    statfs_of(file).is_some_and(|stat| stat.f_type as i64 == TMPFS_MAGIC)
}

/// The page size of the hugetlbfs mount holding `file`, if it is on one
/// (memory like tmpfs, but mapped only in whole huge pages, and with no
/// write(2)).
#[allow(clippy::unnecessary_cast)]
fn hugetlbfs_page_size(file: &File) -> Option<u64> {
    statfs_of(file).filter(|stat| stat.f_type as i64 == HUGETLBFS_MAGIC).map(|stat| stat.f_bsize as u64)
}

/// Writes `bytes` at offset 0 through a mapping of the first huge pages.
fn write_mapped(file: &File, bytes: &[u8], page: u64) -> io::Result<()> {
    let len = (bytes.len() as u64).next_multiple_of(page) as usize;
    // SAFETY: maps the start of a file at least `len` long (a multiple of
    // its page size, checked at creation), shared, for this function only.
    let base = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0)
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the mapping is `len >= bytes.len()` bytes, writable, and ours.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.cast::<u8>(), bytes.len());
        libc::munmap(base, len);
    }
    Ok(())
}

/// True when every NVDIMM region reports that CPU caches are persistent.
fn platform_has_eadr() -> bool {
    let Ok(entries) = std::fs::read_dir("/sys/bus/nd/devices") else {
        return false;
    };
    let domains: Vec<String> = entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("persistence_domain")).ok())
        .map(|s| s.trim().to_string())
        .collect();
    !domains.is_empty() && domains.iter().all(|d| d == "cpu_cache")
}

/// Picks the domain: the caller's override, else detection.
fn choose_domain(file: &File, dax: bool, options: &PersistOptions) -> Result<DomainInfo, (&'static str, String)> {
    let instruction = FlushInstruction::detect();
    let hugetlbfs = hugetlbfs_page_size(file).is_some();
    // Memory with no backing store: emulated persistent memory.
    let tmpfs = on_tmpfs(file) || hugetlbfs;
    let medium = if dax {
        "a DAX file mapped with MAP_SYNC"
    } else if hugetlbfs {
        "hugetlbfs (DRAM)"
    } else if tmpfs {
        "tmpfs (DRAM)"
    } else {
        "a page-cache file"
    };
    let (domain, detected_by, durable) = match options.domain {
        None if dax && platform_has_eadr() => {
            (Domain::Byte, "MAP_SYNC and sysfs persistence_domain=cpu_cache".into(), true)
        }
        None if dax => (Domain::CacheLine, "MAP_SYNC mapping".to_string(), true),
        None if hugetlbfs => (Domain::CacheLine, "hugetlbfs file (emulated persistent memory)".to_string(), false),
        None if tmpfs => (Domain::CacheLine, "tmpfs file (emulated persistent memory)".to_string(), false),
        None => (Domain::Page, "an ordinary file (no MAP_SYNC)".to_string(), true),
        Some(Domain::Page) => (Domain::Page, format!("override, on {medium}"), !tmpfs),
        Some(Domain::None) => (Domain::None, format!("override, on {medium}"), false),
        Some(d @ (Domain::CacheLine | Domain::Byte)) => (d, format!("override, on {medium}"), dax),
    };
    if domain == Domain::CacheLine && instruction.is_none() {
        return Err(("cache-line", "this CPU has no cache-line write-back instruction".into()));
    }
    Ok(DomainInfo {
        domain,
        durable,
        detected_by,
        instruction: (domain == Domain::CacheLine).then_some(instruction).flatten(),
        page_sync: options.page_sync,
        fence_latency_ns: if matches!(domain, Domain::CacheLine | Domain::Byte) { options.fence_latency_ns } else { 0 },
        simulated: false,
        tmpfs_huge_pages: tmpfs.then(|| hugetlbfs || tmpfs_huge_pages(file)),
    })
}

/// Whether a pool on tmpfs gets 2 MiB pages: its mount's `huge=` option
/// (/proc/self/mountinfo, found by the file's device number) is always or
/// within_size, unless the system-wide shmem_enabled says deny; or
/// shmem_enabled says force. (huge=advise does not do: the reservation at
/// creation allocates the pages before any mapping can ask for huge ones.)
fn tmpfs_huge_pages(file: &File) -> bool {
    let shmem = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled").unwrap_or_default();
    let chosen = shmem.split_whitespace().find(|w| w.starts_with('[')).unwrap_or("").trim_matches(['[', ']']);
    match chosen {
        "force" => return true,
        "deny" => return false,
        _ => {}
    }
    let Ok(meta) = file.metadata() else { return false };
    use std::os::unix::fs::MetadataExt;
    let device = format!("{}:{}", libc::major(meta.dev()), libc::minor(meta.dev()));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mountinfo.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|&f| f == "-") else { return false };
        fields.get(2) == Some(&device.as_str())
            && fields.get(dash + 1) == Some(&"tmpfs")
            && fields
                .get(dash + 3)
                .is_some_and(|options| options.split(',').any(|o| matches!(o, "huge=always" | "huge=within_size")))
    })
}
