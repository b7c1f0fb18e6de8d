//! The write cache for unmodified programs (issue 21; NVCACHE, the Dulong
//! thesis chapter 3): a write to a cached file is made durable in the
//! pool's log (its data copied into pool buffers, one record, one fence or
//! fdatasync of the pool), then applied to the real file (write-through
//! into the page cache, with no sync), then returned; `fsync` is then free.
//! A background step syncs the files written (one sync per file per
//! batch) and releases the records it covered. After a crash, recovery
//! applies the live records again, in the order the writes returned.
//! `packetstore-preload` puts this under `write(2)` with LD_PRELOAD.
//!
//! Owns: the lanes (one log and its buffers each, one per writing thread
//! up to the pool's log count), the global sequence of writes, and the
//! files with records not yet released (their sync handles).
//!
//! Invariants:
//! - durable at write (`Durability::Write`): a write returns only after
//!   its record is durable, and its record is durable before its bytes can
//!   reach the file (so after a crash a write is whole: every byte, or, if
//!   it never returned, none of its log);
//! - durable at fsync (`Durability::Fsync`): every record appended before
//!   a `sync` began is durable when it returns (one fence for all lanes);
//! - per file, sequence order is the order writes reached the file (the
//!   file's lock covers both), so replaying in sequence order rebuilds it;
//! - a record is released only after a sync of its file that began after
//!   the write reached the file.
//!
//! Locks: a file's, then a lane's; never the other way.

pub mod record;

use std::collections::BTreeMap;

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::error::LogError;
use crate::log::ring::Log;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use record::Change;

/// A file the cache writes: how to sync it (fdatasync, or a model's).
pub trait SyncFile: Send + Sync {
    /// Makes every write that reached the file so far durable.
    fn sync(&self) -> std::io::Result<()>;
    /// Makes the removal of `path` (this file's name) durable: a sync of
    /// its directory.
    fn sync_dir(&self, path: &[u8]) -> std::io::Result<()>;
}

/// How recovery applies records to files named by path.
pub trait ReplayFiles {
    fn write(&mut self, path: &[u8], offset: u64, data: &[u8]) -> std::io::Result<()>;
    fn truncate(&mut self, path: &[u8], size: u64) -> std::io::Result<()>;
    /// Makes what `write` and `truncate` did to `path` durable.
    fn sync(&mut self, path: &[u8]) -> std::io::Result<()>;
    /// Removes `path` if it exists, durably (its directory synced).
    fn remove(&mut self, path: &[u8]) -> std::io::Result<()>;
}

/// Recovery's files through the file system, by path (the preload library
/// and `packetstore cache recover`).
pub struct PathFiles;

impl PathFiles {
    fn open(path: &[u8]) -> std::io::Result<std::fs::File> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::OpenOptionsExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(path));
        std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o644).open(path)
    }
}

impl ReplayFiles for PathFiles {
    fn write(&mut self, path: &[u8], offset: u64, data: &[u8]) -> std::io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&Self::open(path)?, data, offset)
    }

    fn truncate(&mut self, path: &[u8], size: u64) -> std::io::Result<()> {
        Self::open(path)?.set_len(size)
    }

    fn sync(&mut self, path: &[u8]) -> std::io::Result<()> {
        Self::open(path)?.sync_data()
    }

    fn remove(&mut self, path: &[u8]) -> std::io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(path));
        match std::fs::remove_file(path) {
            // Gone already, or the name is a directory now: nothing of the
            // removed file is left to remove.
            Err(error) if !matches!(error.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory) => {
                return Err(error)
            }
            _ => {}
        }
        match sync_parent(path) {
            // The directory itself is gone: so is the name.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// Syncs the directory holding `path` (an unlink in it becomes durable).
pub fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("/"));
    std::fs::File::open(parent)?.sync_all()
}

/// Which live records recovery skips: changes a synced mark covers, or
/// that an unlink of their path after them voided; and unlinks of a path
/// a later synced mark shows was made again and synced.
struct ReplayPlan {
    synced: BTreeMap<Vec<u8>, u64>,
    unlinks: BTreeMap<Vec<u8>, Vec<u64>>,
}

impl ReplayPlan {
    /// From the live records `(seq, lsn, kind, key)`; an error if one is
    /// not the cache's.
    fn new<'a>(live: impl Iterator<Item = (u64, u64, u16, &'a [u8])>) -> std::io::Result<ReplayPlan> {
        let mut plan = ReplayPlan { synced: BTreeMap::new(), unlinks: BTreeMap::new() };
        for (seq, lsn, kind, key) in live {
            match record::decode(kind, key) {
                Some((Change::Synced { upto }, path)) => {
                    let mark = plan.synced.entry(path.to_vec()).or_default();
                    *mark = (*mark).max(upto);
                }
                Some((Change::Unlinked, path)) => plan.unlinks.entry(path.to_vec()).or_default().push(seq),
                Some(_) => {}
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("record {lsn} is not the cache's"),
                    ))
                }
            }
        }
        Ok(plan)
    }

    fn skips(&self, change: &Change, path: &[u8], seq: u64) -> bool {
        let synced_past = |seq: u64| self.synced.get(path).is_some_and(|&upto| upto >= seq);
        match change {
            Change::Synced { .. } => true,
            // A later file of this name was synced: it is not the one
            // this unlink removed.
            Change::Unlinked => synced_past(seq),
            Change::Write { .. } | Change::Truncate { .. } => {
                synced_past(seq) || self.unlinks.get(path).is_some_and(|unlinks| unlinks.iter().any(|&at| at > seq))
            }
        }
    }
}

/// A file's identity (device, inode) and its state in the cache.
pub type FileId = (u64, u64);

/// A cached file: its path (as records name it), its sync handle, its lock
/// (writes to it are ordered), and its records not yet released.
pub struct CachedFile {
    id: FileId,
    path: Vec<u8>,
    handle: Arc<dyn SyncFile>,
    /// Live records, oldest first.
    records: Mutex<Vec<Logged>>,
    /// Held while a write or a truncate takes its sequence number, is
    /// logged and reaches the file.
    order: Mutex<()>,
    /// The unlink record once the file's path was removed (its records are
    /// then void, and released after a sync of its directory).
    unlinked: Mutex<Option<Logged>>,
    /// Some change of it was ever logged (a replay would make it again);
    /// shared with whoever tracks its creation (`ever_logged_flag`).
    ever_logged: Arc<std::sync::atomic::AtomicBool>,
}

impl CachedFile {
    pub fn path(&self) -> &[u8] {
        &self.path
    }

    pub fn id(&self) -> FileId {
        self.id
    }

    /// Whether some change of it was ever logged: a replay would make the
    /// file again (so its creation needs no sync of its directory).
    pub fn ever_logged(&self) -> bool {
        self.ever_logged.load(Ordering::Relaxed)
    }

    /// The flag `ever_logged` reads, to keep without keeping the file.
    pub fn ever_logged_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.ever_logged.clone()
    }

    /// `logged` reached the file: listed for a write-back.
    fn listed(&self, logged: Logged) {
        self.records.lock().expect("records").push(logged);
        self.ever_logged.store(true, Ordering::Relaxed);
    }

    /// No live record and no unlink waiting for a write-back.
    fn is_idle(&self) -> bool {
        self.records.lock().expect("records").is_empty() && self.unlinked.lock().expect("unlinked").is_none()
    }
}

/// A live record: its lane, its lsn, its sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Logged {
    lane: usize,
    lsn: u64,
    seq: u64,
}

/// The share of each lane's log kept for synced marks (a write-back
/// appends one per file before it releases anything): writes leave it free.
const MARK_RESERVE_DIVISOR: u64 = 8;

/// One log and its share of the buffers.
struct Lane {
    log: Log,
    buffers: Buffers,
}

/// What the cache did (cumulative).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub writes: u64,
    pub bytes: u64,
    /// Writes made durable by a sync of their file because the log was
    /// full (the cache's "SSD speed" phase).
    pub synced_directly: u64,
    pub write_backs: u64,
    pub records_released: u64,
    pub files_synced: u64,
}

/// `CacheStats`'s counters, counted without a lock on the write path.
#[derive(Default)]
struct Counters {
    writes: AtomicU64,
    bytes: AtomicU64,
    synced_directly: AtomicU64,
    write_backs: AtomicU64,
    records_released: AtomicU64,
    files_synced: AtomicU64,
}

fn add(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// What recovery replayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheRecovery {
    pub records: u64,
    pub files: u64,
    pub bytes: u64,
}

/// When a write to a cached file is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// When `write(2)` returns (NVCACHE's promise): one fence per write,
    /// nearly free in the cache-line domain. The default there.
    Write,
    /// When the program's next `fsync` or `fdatasync` of any cached file
    /// returns (POSIX's promise): writes are appended without a fence, and
    /// a sync commits every lane with one fence, one fdatasync of the pool
    /// in the page domain (a group commit, instead of a sync of each
    /// file). The default in the page domain.
    Fsync,
}

impl Durability {
    /// The default for a pool in `domain`.
    pub fn for_domain(domain: crate::pool::persist::Domain) -> Durability {
        match domain {
            crate::pool::persist::Domain::Page => Durability::Fsync,
            _ => Durability::Write,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Durability::Write => "durable at write",
            Durability::Fsync => "durable at fsync",
        }
    }
}

/// The write cache over one pool.
pub struct Cache {
    pool: Pool,
    durability: Durability,
    lanes: Vec<Mutex<Lane>>,
    next_seq: AtomicU64,
    next_lane: AtomicUsize,
    files: Mutex<BTreeMap<FileId, Arc<CachedFile>>>,
    /// Files unlinked whose unlink a write-back has not settled yet: out
    /// of `files`, so that a new file given the same inode number is a new
    /// entry.
    unlinked_files: Mutex<Vec<Arc<CachedFile>>>,
    counters: Counters,
    /// Writers waiting for room (a write-back frees it).
    room: (Mutex<u64>, Condvar),
}

/// How long a writer waits for a write-back to free room before it syncs
/// its file itself.
pub const ROOM_WAIT: Duration = Duration::from_millis(200);

thread_local! {
    /// The lane this thread appends to (assigned round-robin).
    static LANE: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// An error of the cache's log: the write did not become durable.
fn log_error(error: LogError) -> std::io::Error {
    std::io::Error::other(format!("the write cache's log: {error}"))
}

impl Cache {
    /// Recovers `pool` (a write-cache pool): every live record applied to
    /// its file through `files`, in sequence order, the files synced, the
    /// records released. Then the cache is empty and ready.
    pub fn recover(pool: Pool, files: &mut dyn ReplayFiles) -> std::io::Result<(Cache, CacheRecovery)> {
        let geometry = pool.geometry();
        let mut lanes = Vec::new();
        let mut live = Vec::new();
        for index in 0..geometry.log_count {
            let (first, count) = geometry.buffer_range(index);
            let mut buffers = Buffers::range(first, count);
            let (log, _) = Log::recover_log(&pool, index, &mut buffers).map_err(log_error)?;
            for lsn in log.live_lsns() {
                let view = log.view(&pool, lsn).map_err(log_error)?;
                let data = log.read_data(&pool, &view);
                live.push((view.tag, index as usize, lsn, view.kind, view.key, data));
            }
            lanes.push(Lane { log, buffers });
        }
        live.sort_by_key(|&(seq, ..)| seq);
        let mut report = CacheRecovery::default();
        let plan = ReplayPlan::new(live.iter().map(|(seq, _, lsn, kind, key, _)| (*seq, *lsn, *kind, &key[..])))?;
        let mut touched: Vec<Vec<u8>> = Vec::new();
        for (seq, _, _, kind, key, data) in &live {
            let (change, path) = record::decode(*kind, key).expect("checked by ReplayPlan::new");
            if plan.skips(&change, path, *seq) {
                continue;
            }
            match change {
                Change::Write { offset } => files.write(path, offset, data)?,
                Change::Truncate { size } => files.truncate(path, size)?,
                Change::Synced { .. } => continue,
                Change::Unlinked => {
                    files.remove(path)?;
                    touched.retain(|p| p != path);
                    report.records += 1;
                    continue;
                }
            }
            report.records += 1;
            report.bytes += data.len() as u64;
            if !touched.iter().any(|p| p == path) {
                touched.push(path.to_vec());
            }
        }
        for path in &touched {
            files.sync(path)?;
        }
        report.files = touched.len() as u64;
        for (_, lane, lsn, ..) in &live {
            lanes[*lane].log.release(&pool, *lsn).map_err(log_error)?;
        }
        for lane in &mut lanes {
            lane.log.commit(&pool, &mut lane.buffers).map_err(log_error)?;
        }
        let next_seq = live.last().map_or(1, |&(seq, ..)| seq + 1);
        let durability = Durability::for_domain(pool.domain().domain);
        let cache = Cache {
            pool,
            durability,
            lanes: lanes.into_iter().map(Mutex::new).collect(),
            next_seq: AtomicU64::new(next_seq),
            next_lane: AtomicUsize::new(0),
            files: Mutex::new(BTreeMap::new()),
            unlinked_files: Mutex::new(Vec::new()),
            counters: Default::default(),
            room: (Mutex::new(0), Condvar::new()),
        };
        Ok((cache, report))
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Chooses when writes are durable (before the cache is shared).
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// The program's fsync or fdatasync of a cached file: with
    /// `Durability::Fsync`, every lane's appends are committed with one
    /// fence (the lanes are held through it, so no other commit of theirs
    /// can begin and end inside this one). With `Durability::Write` every
    /// write already is durable: nothing to do.
    pub fn sync(&self) -> std::io::Result<()> {
        if self.durability == Durability::Write {
            return Ok(());
        }
        let mut lanes: Vec<_> = self.lanes.iter().map(|lane| lane.lock().expect("lane")).collect();
        let mut tickets = Vec::with_capacity(lanes.len());
        for lane in &mut lanes {
            tickets.push(lane.log.begin_commit(&self.pool).map_err(log_error)?);
        }
        if tickets.iter().all(Option::is_none) {
            return Ok(());
        }
        if let Err(error) = self.pool.fence() {
            for (lane, ticket) in lanes.iter_mut().zip(&tickets) {
                if ticket.is_some() {
                    lane.log.fail_commit();
                }
            }
            return Err(std::io::Error::other(format!("the write cache's log: {error}")));
        }
        for (lane, ticket) in lanes.iter_mut().zip(tickets) {
            if let Some(ticket) = ticket {
                let Lane { log, buffers } = &mut **lane;
                log.finish_commit(ticket, buffers);
            }
        }
        Ok(())
    }

    pub fn stats(&self) -> CacheStats {
        let c = &self.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CacheStats {
            writes: load(&c.writes),
            bytes: load(&c.bytes),
            synced_directly: load(&c.synced_directly),
            write_backs: load(&c.write_backs),
            records_released: load(&c.records_released),
            files_synced: load(&c.files_synced),
        }
    }

    /// The cached file `id`, registered with `path` and `handle` on first
    /// use. None if its path is too long to be cached.
    pub fn file(&self, id: FileId, path: &Path, handle: impl FnOnce() -> Arc<dyn SyncFile>) -> Option<Arc<CachedFile>> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        if bytes.is_empty() || bytes.len() > record::PATH_MAX {
            return None;
        }
        let mut files = self.files.lock().expect("files");
        let file = files.entry(id).or_insert_with(|| {
            Arc::new(CachedFile {
                id,
                path: bytes.to_vec(),
                handle: handle(),
                records: Mutex::new(Vec::new()),
                order: Mutex::new(()),
                unlinked: Mutex::new(None),
                ever_logged: Default::default(),
            })
        });
        Some(file.clone())
    }

    /// The cached file `id`, if the cache knows it.
    pub fn cached(&self, id: FileId) -> Option<Arc<CachedFile>> {
        self.files.lock().expect("files").get(&id).cloned()
    }

    /// Forgets the cached file `id` once it has no live record (its path
    /// or its inode is about to be another file's). False if it has some.
    pub fn forget_file(&self, id: FileId) -> bool {
        let mut files = self.files.lock().expect("files");
        let idle = files.get(&id).is_none_or(|file| file.is_idle());
        if idle {
            files.remove(&id);
        }
        idle
    }

    /// Writes `data` at `offset` of `file`: logged durably, then `apply`
    /// (the real write, which returns how many bytes it wrote) reaches the
    /// file. Returns `apply`'s count once durable.
    pub fn write(
        &self,
        file: &Arc<CachedFile>,
        offset: u64,
        data: &[u8],
        apply: impl FnOnce() -> std::io::Result<usize>,
    ) -> std::io::Result<usize> {
        let _order = file.order.lock().expect("file order");
        if file.unlinked.lock().expect("unlinked").is_some() {
            // Its name is gone (an unlink won the race): nothing to log.
            return apply();
        }
        let logged = self.log(file, &Change::Write { offset }, data)?;
        let written = apply();
        match (&written, logged) {
            // Logged and applied: durable (a short write is logged whole:
            // recovery writing the rest is a write that went further).
            // Listed only now: a write-back's sync covers what is listed.
            (Ok(_), Some(logged)) => file.listed(logged),
            // Not logged (no room): the bytes reached the file; sync it,
            // and release its older records (a replay must not put older
            // bytes over these).
            (Ok(_), None) => {
                self.sync_and_release(file)?;
                add(&self.counters.synced_directly, 1);
            }
            // Failed: recovery must not apply it.
            (Err(_), Some(logged)) => self.release_now(logged)?,
            (Err(_), None) => {}
        }
        add(&self.counters.writes, 1);
        add(&self.counters.bytes, *written.as_ref().unwrap_or(&0) as u64);
        written
    }

    /// Truncates (or extends) `file` to `size`: its record first, then
    /// `apply` (the kernel's truncate), under the file's order lock.
    ///
    /// The record is durable before the kernel truncates whenever the file
    /// has live records (and always when durable at write): otherwise a
    /// crash after the truncate could leave those older records to be
    /// replayed into the emptied file, a state that is neither the file
    /// before the truncate nor after it. A file without live records has
    /// nothing a replay could bring back; durable at fsync, its record
    /// becomes durable with the next sync. Without room in the log, the
    /// file is drained first (no older record is left), then truncated and
    /// synced (durable on return, as a logged truncate is).
    ///
    /// If `apply` fails, the record is released before the error returns.
    /// A crash in between replays it: the call never returned, so its
    /// effect (the file truncated) is one of the two states a crash in the
    /// middle of a call may leave.
    pub fn truncate(
        &self,
        file: &Arc<CachedFile>,
        size: u64,
        apply: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let _order = file.order.lock().expect("file order");
        if file.unlinked.lock().expect("unlinked").is_some() {
            return apply();
        }
        let commit = self.durability == Durability::Write || newest_seq(file).is_some();
        let Some(logged) = self.append_record(file, &Change::Truncate { size }, &[], commit)? else {
            self.drain_locked(file)?;
            apply()?;
            return file.handle.sync();
        };
        match apply() {
            Ok(()) => {
                file.listed(logged);
                Ok(())
            }
            Err(error) => {
                self.release_now(logged)?;
                Err(error)
            }
        }
    }

    /// `apply`, a change of `file` the log does not describe and that
    /// needs no sync of its own (the kernel's truncate inside an open
    /// with O_TRUNC through a descriptor that cannot write), after the
    /// file is drained, under its order lock: no record is left that a
    /// replay could put back over it, and no write can be logged between
    /// the drain and the change.
    pub fn drained<T>(&self, file: &Arc<CachedFile>, apply: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        let _order = file.order.lock().expect("file order");
        self.drain_locked(file)?;
        apply()
    }

    /// Appends and commits `change`'s record (durable on return); None if
    /// the lane stayed full for `ROOM_WAIT` (the caller syncs instead).
    fn log(&self, file: &CachedFile, change: &Change, data: &[u8]) -> std::io::Result<Option<Logged>> {
        self.append_record(file, change, data, self.durability == Durability::Write)
    }

    /// Appends `change`'s record in a lane with room, committed if
    /// `commit`; None if the lanes stayed full for `ROOM_WAIT`.
    fn append_record(
        &self,
        file: &CachedFile,
        change: &Change,
        data: &[u8],
        commit: bool,
    ) -> std::io::Result<Option<Logged>> {
        let (kind, key) = record::encode(change, &file.path);
        for attempt in 0..2 {
            if attempt > 0 {
                self.wait_for_room();
            }
            // The thread's own lane first, then any other with room.
            let own = self.lane_index();
            for lane_index in (0..self.lanes.len()).map(|i| (own + i) % self.lanes.len()) {
                let mut lane = self.lanes[lane_index].lock().expect("lane");
                let Lane { log, buffers } = &mut *lane;
                let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                match self.append(log, buffers, kind, seq, &key, data) {
                    Ok(lsn) => {
                        // The record is durable before the caller applies
                        // it (or, durable at fsync, before the next sync
                        // returns).
                        if commit {
                            log.commit(&self.pool, buffers).map_err(log_error)?;
                        }
                        return Ok(Some(Logged { lane: lane_index, lsn, seq }));
                    }
                    Err(AppendError::Full) => continue,
                    Err(AppendError::Log(error)) => return Err(log_error(error)),
                }
            }
        }
        Ok(None)
    }

    fn append(
        &self,
        log: &mut Log,
        buffers: &mut Buffers,
        kind: u16,
        seq: u64,
        key: &[u8],
        data: &[u8],
    ) -> Result<u64, AppendError> {
        // Room for the record and for the marks a write-back appends.
        let needed = crate::log::record::record_len(data.len().div_ceil(4096) + 1, key.len()) as u64;
        let usage = log.usage();
        if usage.free_bytes < needed + usage.ring_size / MARK_RESERVE_DIVISOR {
            return Err(AppendError::Full);
        }
        let mut extents = Vec::new();
        if buffers.copy_in(&self.pool, data, &mut extents).is_err() {
            for extent in &extents {
                buffers.release(extent.buffer).expect("just copied in");
            }
            return Err(AppendError::Full);
        }
        let appended = log.append(&self.pool, buffers, kind, seq, key, &extents);
        // Another thread may commit this lane (`sync`): its fence must find
        // the record's streamed lines ordered.
        self.pool.order_streamed();
        // The log holds its own references; the copy's go.
        for extent in &extents {
            buffers.release(extent.buffer).expect("just copied in");
        }
        match appended {
            Ok(lsn) => Ok(lsn),
            Err(LogError::LogFull { .. } | LogError::BatchFull { .. }) => Err(AppendError::Full),
            Err(error) => Err(AppendError::Log(error)),
        }
    }

    fn lane_index(&self) -> usize {
        LANE.with(|lane| {
            *lane.get().get_or_insert_with(|| {
                let index = self.next_lane.fetch_add(1, Ordering::Relaxed) % self.lanes.len();
                lane.set(Some(index));
                index
            })
        })
    }

    fn wait_for_room(&self) {
        let (generation, freed) = &self.room;
        let guard = generation.lock().expect("room");
        let seen = *guard;
        let _ = freed.wait_timeout_while(guard, ROOM_WAIT, |now| *now == seen);
    }

    /// Whether a lane is over `fraction` full (log bytes or buffers): a
    /// write-back is due.
    pub fn needs_write_back(&self, fraction: f64) -> bool {
        self.lanes.iter().any(|lane| {
            let lane = lane.lock().expect("lane");
            let usage = lane.log.usage();
            let log_used = 1.0 - usage.free_bytes as f64 / usage.ring_size as f64;
            let buffers_used = 1.0 - lane.buffers.free_count() as f64 / lane.buffers.count() as f64;
            log_used > fraction || buffers_used > fraction
        })
    }

    /// Syncs every file with live records (one sync each) and releases the
    /// records those syncs covered. Returns the records released.
    pub fn write_back(&self) -> std::io::Result<u64> {
        // The unlinked files first, listed before any directory is synced:
        // a sync covers only unlinks made before it began.
        let pending: Vec<Arc<CachedFile>> = self.unlinked_files.lock().expect("unlinked files").clone();
        let mut first_error = None;
        let unlinked = self.sync_unlinked_dirs(&pending, &mut first_error);
        let files: Vec<Arc<CachedFile>> = self.files.lock().expect("files").values().cloned().collect();
        let mut synced = Vec::new();
        for file in &files {
            if file.unlinked.lock().expect("unlinked").is_some() {
                continue; // unlinked since: the next write-back's
            }
            let Some(upto) = newest_seq(file) else { continue };
            // Every change up to `upto` reached the file before its record
            // was listed: this sync covers them all.
            if let Err(error) = file.handle.sync().map(|()| synced.push((file.clone(), upto))) {
                first_error.get_or_insert(error);
            }
        }
        let released = self.settle(&synced, &unlinked)?;
        self.drop_idle_files();
        add(&self.counters.write_backs, 1);
        add(&self.counters.records_released, released);
        add(&self.counters.files_synced, synced.len() as u64);
        let (generation, freed) = &self.room;
        *generation.lock().expect("room") += 1;
        freed.notify_all();
        match first_error {
            Some(error) => Err(error),
            None => Ok(released),
        }
    }

    /// Syncs the directory of each of `pending` (unlinked files) once; the
    /// files whose unlink is then durable, with their unlink records. A
    /// directory that is gone took the name with it: settled too.
    fn sync_unlinked_dirs(
        &self,
        pending: &[Arc<CachedFile>],
        first_error: &mut Option<std::io::Error>,
    ) -> Vec<(Arc<CachedFile>, Logged)> {
        let mut unlinked = Vec::new();
        let mut dirs_synced: Vec<&[u8]> = Vec::new();
        for file in pending {
            let Some(unlink) = *file.unlinked.lock().expect("unlinked") else { continue };
            let dir = parent_of(&file.path);
            if !dirs_synced.contains(&dir) {
                match file.handle.sync_dir(&file.path) {
                    Ok(()) => dirs_synced.push(dir),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => dirs_synced.push(dir),
                    Err(error) => {
                        first_error.get_or_insert(error);
                        continue;
                    }
                }
            }
            unlinked.push((file.clone(), unlink));
        }
        unlinked
    }

    /// Syncs `file` and releases its records now (before its path changes:
    /// a rename or an unlink, after which recovery could not find it).
    pub fn drain(&self, file: &Arc<CachedFile>) -> std::io::Result<()> {
        let _order = file.order.lock().expect("file order");
        self.drain_locked(file)
    }

    /// Unlinks `file`'s path (`apply`, the real unlink): an unlink record,
    /// then the unlink. The file's records are void from then on and are
    /// released with the unlink record after a write-back syncs the
    /// directory; no sync of the file.
    ///
    /// The record is durable before the unlink when the file has live
    /// records (a replay must never recreate the file from some of them),
    /// and always when durable at write (the unlink is then durable when
    /// this returns). Durable at fsync, the record of a file without live
    /// records becomes durable with the next sync (a later file of that
    /// name, once synced, never shows the removed one's bytes). Without
    /// room in the log, the file is drained first instead.
    pub fn unlink(&self, file: &Arc<CachedFile>, apply: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
        let _order = file.order.lock().expect("file order");
        if file.unlinked.lock().expect("unlinked").is_some() {
            return apply();
        }
        let commit = self.durability == Durability::Write || newest_seq(file).is_some();
        let Some(logged) = self.append_record(file, &Change::Unlinked, &[], commit)? else {
            self.drain_locked(file)?;
            return apply();
        };
        match apply() {
            Ok(()) => {
                *file.unlinked.lock().expect("unlinked") = Some(logged);
                file.ever_logged.store(true, Ordering::Relaxed);
                let mut files = self.files.lock().expect("files");
                if files.get(&file.id).is_some_and(|known| Arc::ptr_eq(known, file)) {
                    files.remove(&file.id);
                }
                self.unlinked_files.lock().expect("unlinked files").push(file.clone());
                Ok(())
            }
            Err(error) => {
                // Not unlinked: the record must not remove it on a replay.
                self.release_now(logged)?;
                Err(error)
            }
        }
    }

    /// Releases `logged` and commits its lane.
    fn release_now(&self, logged: Logged) -> std::io::Result<()> {
        let mut lane = self.lanes[logged.lane].lock().expect("lane");
        let Lane { log, buffers } = &mut *lane;
        log.release(&self.pool, logged.lsn).map_err(log_error)?;
        log.commit(&self.pool, buffers).map_err(log_error)?;
        Ok(())
    }

    /// Before `path` becomes another file's by a rename: any unlink of a
    /// file of that name still waiting for a write-back is settled now
    /// (its directory synced, its records and record released), so that
    /// no replay removes what the rename puts there.
    pub fn settle_unlinks(&self, path: &[u8]) -> std::io::Result<()> {
        let pending: Vec<Arc<CachedFile>> = self
            .unlinked_files
            .lock()
            .expect("unlinked files")
            .iter()
            .filter(|file| file.path == path)
            .cloned()
            .collect();
        let mut first_error = None;
        let unlinked = self.sync_unlinked_dirs(&pending, &mut first_error);
        if let Some(error) = first_error {
            return Err(error);
        }
        self.settle(&[], &unlinked).map(|_| ())
    }

    /// A change the log cannot describe (a hole punched, a range zeroed,
    /// collapsed or inserted): `file` is drained first (a replay must not
    /// put older writes back over the change), then `apply` runs and the
    /// file is synced, all under its order lock. Returns `apply`'s result.
    pub fn unlogged<T>(
        &self,
        file: &Arc<CachedFile>,
        apply: impl FnOnce() -> std::io::Result<T>,
    ) -> std::io::Result<T> {
        let _order = file.order.lock().expect("file order");
        self.drain_locked(file)?;
        let applied = apply()?;
        file.handle.sync()?;
        Ok(applied)
    }

    fn drain_locked(&self, file: &Arc<CachedFile>) -> std::io::Result<()> {
        match newest_seq(file) {
            Some(_) => self.sync_and_release(file),
            None => Ok(()),
        }
    }

    /// Syncs `file` (under its order lock), then releases every record the
    /// sync covered.
    fn sync_and_release(&self, file: &Arc<CachedFile>) -> std::io::Result<()> {
        file.handle.sync()?;
        match newest_seq(file) {
            Some(upto) => self.settle(&[(file.clone(), upto)], &[]).map(|_| ()),
            None => Ok(()),
        }
    }

    /// After the syncs of `synced` files: a synced mark per file, durable
    /// before any of their records is released (recovery then skips what
    /// the marks cover, whichever releases reached the media); the records
    /// released; then the marks.
    fn settle(
        &self,
        synced: &[(Arc<CachedFile>, u64)],
        unlinked: &[(Arc<CachedFile>, Logged)],
    ) -> std::io::Result<u64> {
        if synced.is_empty() && unlinked.is_empty() {
            return Ok(0);
        }
        let lane_index = self.lane_index();
        let mut marks = Vec::new();
        if !synced.is_empty() {
            let mut lane = self.lanes[lane_index].lock().expect("lane");
            let Lane { log, buffers } = &mut *lane;
            for (file, upto) in synced {
                let (kind, key) = record::encode(&Change::Synced { upto: *upto }, &file.path);
                let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                marks.push(log.append(&self.pool, buffers, kind, seq, &key, &[]).map_err(log_error)?);
            }
            log.commit(&self.pool, buffers).map_err(log_error)?;
        }
        let mut released = 0;
        let claims =
            synced.iter().map(|(file, upto)| (file, *upto)).chain(unlinked.iter().map(|(file, _)| (file, u64::MAX)));
        for (file, upto) in claims {
            // Claimed under the file's list: a drain and a write-back that
            // synced the same records release each once. The list is in
            // sequence order (appended under the file's order lock), so
            // what a sync covered is a prefix of it.
            let claimed: Vec<Logged> = {
                let mut live = file.records.lock().expect("records");
                let covered = live.partition_point(|record| record.seq <= upto);
                live.drain(..covered).collect()
            };
            for record in &claimed {
                self.lanes[record.lane].lock().expect("lane").log.release(&self.pool, record.lsn).map_err(log_error)?;
            }
            released += claimed.len() as u64;
        }
        self.commit_releases()?;
        // The unlink records after the records they void (a replay must
        // never find a voided record without its unlink), and before the
        // marks (while an unlink record is live, so is every mark of a
        // later file of that name).
        if !unlinked.is_empty() {
            for (file, _) in unlinked {
                // Claimed: a write-back and a rename's settling release it
                // once.
                let Some(unlink) = file.unlinked.lock().expect("unlinked").take() else { continue };
                self.lanes[unlink.lane].lock().expect("lane").log.release(&self.pool, unlink.lsn).map_err(log_error)?;
                released += 1;
            }
            self.commit_releases()?;
            let mut pending = self.unlinked_files.lock().expect("unlinked files");
            pending.retain(|file| !unlinked.iter().any(|(settled, _)| Arc::ptr_eq(settled, file)));
        }
        if !marks.is_empty() {
            let mut lane = self.lanes[lane_index].lock().expect("lane");
            let Lane { log, buffers } = &mut *lane;
            for lsn in marks {
                log.release(&self.pool, lsn).map_err(log_error)?;
            }
            log.commit(&self.pool, buffers).map_err(log_error)?;
        }
        Ok(released)
    }

    /// One commit per lane: the releases are durable.
    fn commit_releases(&self) -> std::io::Result<()> {
        for lane in &self.lanes {
            let mut lane = lane.lock().expect("lane");
            let Lane { log, buffers } = &mut *lane;
            log.commit(&self.pool, buffers).map_err(log_error)?;
        }
        Ok(())
    }

    /// Forgets files with no live record that only the cache holds.
    fn drop_idle_files(&self) {
        let mut files = self.files.lock().expect("files");
        files.retain(|_, file| Arc::strong_count(file) > 1 || !file.is_idle());
    }

    /// Live records (all lanes).
    pub fn live_records(&self) -> u64 {
        self.lanes.iter().map(|lane| lane.lock().expect("lane").log.usage().live_records).sum()
    }
}

/// The directory part of `path` (up to its last slash).
fn parent_of(path: &[u8]) -> &[u8] {
    &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0)]
}

/// The sequence number of `file`'s newest live record, if it has any.
fn newest_seq(file: &CachedFile) -> Option<u64> {
    let live = file.records.lock().expect("records");
    debug_assert!(live.windows(2).all(|pair| pair[0].seq < pair[1].seq), "live records in sequence order");
    live.last().map(|record| record.seq)
}

enum AppendError {
    /// No room in the lane's log or buffers.
    Full,
    Log(LogError),
}
