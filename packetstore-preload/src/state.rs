//! The preloaded cache's state: its configuration (from the environment),
//! the cache over its pool (recovered at the first interposed call), the
//! table of cached file descriptors, the write-back thread, and the guard
//! that makes every call from inside this library go straight to the C
//! library.
//!
//! Owns: the process's `Cache`, which file descriptors it caches, and the
//! per-thread reentrancy flag.
//!
//! Invariants: at most one process uses a pool (the pool's lock; a second
//! one, or a forked child, passes everything through, so its own fsync
//! calls stay real); a descriptor is cached only if it names a regular file
//! under a configured prefix, opened for writing.

use std::collections::HashMap;
use std::ffi::{c_int, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use packetstore::apps::cache::{Cache, CachedFile, Durability, PathFiles, SyncFile};
use packetstore::{Geometry, PersistOptions, Pool, PoolKind, PoolKindExt};

use crate::real;

/// How often the write-back thread looks at the lanes.
const WRITE_BACK_TICK: Duration = Duration::from_millis(5);
/// A write-back runs at least this often while records are live (one sync
/// per written file per batch); `PACKETSTORE_CACHE_WRITEBACK_MS` changes it.
const WRITE_BACK_INTERVAL: Duration = Duration::from_millis(100);
/// A write-back runs at once when a lane is this full.
const WRITE_BACK_FULL: f64 = 0.25;

thread_local! {
    /// Inside this library: every call goes to the C library.
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Set while this library handles a call; None if it already was.
pub struct Inside(());

impl Inside {
    pub fn enter() -> Option<Inside> {
        // `then`, not `then_some`: a guard made and dropped would clear the flag.
        INSIDE.with(|inside| (!inside.replace(true)).then(|| Inside(())))
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|inside| inside.set(false));
    }
}

/// A forked child passes everything through (the pool is its parent's).
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn after_fork_in_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The process's cache.
pub struct State {
    pub cache: Arc<Cache>,
    pub dirs: crate::dirs::Dirs,
    fds: RwLock<HashMap<c_int, Arc<CachedFile>>>,
    cached_fds: AtomicUsize,
}

static STATE: OnceLock<Option<State>> = OnceLock::new();

/// The configured path prefixes (none if the cache is not configured):
/// read once, without touching the pool.
pub fn prefixes() -> &'static [Vec<u8>] {
    static PREFIXES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    PREFIXES.get_or_init(|| {
        match (std::env::var_os("PACKETSTORE_CACHE_POOL"), std::env::var("PACKETSTORE_CACHE_PATHS")) {
            (Some(_), Ok(paths)) => paths.split(':').filter(|p| !p.is_empty()).map(|p| p.as_bytes().to_vec()).collect(),
            _ => Vec::new(),
        }
    })
}

/// Whether `path` (absolute) is under a configured prefix.
pub fn under_prefix(path: &Path) -> bool {
    let path = path.as_os_str().as_bytes();
    prefixes().iter().any(|prefix| path.starts_with(prefix))
}

/// Whether the directory `path` is under a prefix, or is a prefix itself
/// (`/srv/db` for the prefix `/srv/db/`).
pub fn dir_under_prefix(path: &Path) -> bool {
    let mut with_slash = path.as_os_str().as_bytes().to_vec();
    with_slash.push(b'/');
    prefixes().iter().any(|prefix| with_slash.starts_with(prefix))
}

/// At exit, with PACKETSTORE_CACHE_STATS set: what the cache did.
extern "C" fn print_stats() {
    let Some(state) = running() else { return };
    let stats = state.cache.stats();
    eprintln!(
        "packetstore-preload: {} writes, {} write-backs, {} records released, {} synced directly; directory syncs: {} answered by the cache, {} real",
        stats.writes,
        stats.write_backs,
        stats.records_released,
        stats.synced_directly,
        state.dirs.answered.load(Ordering::Relaxed),
        state.dirs.real.load(Ordering::Relaxed)
    );
}

/// The cache if it is already set up (a call about a descriptor needs no
/// more: only an open under a prefix can have cached one).
pub fn running() -> Option<&'static State> {
    if FORKED.load(Ordering::Relaxed) {
        return None;
    }
    STATE.get().and_then(Option::as_ref)
}

/// The cache if `path` (relative to `dirfd`) is under a prefix: set up,
/// and its pool recovered, before the first such path is opened, renamed
/// or unlinked (so a replay never lands after the program's own change).
/// Programs that never touch such a path (a shell, `env`, `taskset`, a
/// tracer) never open the pool.
pub fn state_for(dirfd: c_int, path: &CStr) -> Option<(&'static State, PathBuf)> {
    if prefixes().is_empty() {
        return None;
    }
    let absolute = absolute(dirfd, path.to_bytes())?;
    if !under_prefix(&absolute) && !dir_under_prefix(&absolute) {
        return None;
    }
    Some((state()?, absolute))
}

/// The cache, set up (and its pool recovered) on first use; None when not
/// configured, refused, or in a forked child.
fn state() -> Option<&'static State> {
    if FORKED.load(Ordering::Relaxed) {
        return None;
    }
    STATE
        .get_or_init(|| match set_up() {
            Ok(state) => state,
            Err(error) => {
                eprintln!("packetstore-preload: not caching: {error}");
                None
            }
        })
        .as_ref()
}

fn env_size(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => parse_size(&text).ok_or_else(|| format!("{name}={text}: not a size (like 256MiB)")),
    }
}

fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(scale)
}

fn set_up() -> Result<Option<State>, String> {
    let (Ok(pool_path), Ok(paths)) =
        (std::env::var("PACKETSTORE_CACHE_POOL"), std::env::var("PACKETSTORE_CACHE_PATHS"))
    else {
        return Ok(None);
    };
    if prefixes().iter().any(|p| p[0] != b'/') {
        return Err(format!("PACKETSTORE_CACHE_PATHS={paths}: give absolute paths"));
    }
    crate::kill::configure()?;
    let size = env_size("PACKETSTORE_CACHE_SIZE", 256 << 20)?;
    let log = env_size("PACKETSTORE_CACHE_LOG_SIZE", 32 << 20)?;
    let lanes = env_size("PACKETSTORE_CACHE_LANES", default_lanes())? as u32;
    let mut geometry = Geometry::for_file_size(size, 4096, log)?;
    geometry.log_count = lanes;
    geometry.validate()?;
    let options = PersistOptions::default();
    // An existing pool keeps its own geometry (the sizes shape a new one):
    // its live records must be recovered whatever the environment says now.
    let opened = match Path::new(&pool_path).exists() {
        true => Pool::open_as(Path::new(&pool_path), PoolKind::WriteCache, &options),
        false => Pool::open_or_create_as(Path::new(&pool_path), PoolKind::WriteCache, geometry, &options),
    };
    let pool = opened.map_err(|e| format!("{pool_path}: {e}"))?;
    let domain = pool.domain().clone();
    let (mut cache, recovery) =
        Cache::recover(pool, &mut PathFiles).map_err(|e| format!("recovering {pool_path}: {e}"))?;
    match std::env::var("PACKETSTORE_CACHE_DURABILITY").as_deref() {
        Err(_) => {}
        Ok("write") => cache.set_durability(Durability::Write),
        Ok("fsync") => cache.set_durability(Durability::Fsync),
        Ok(other) => return Err(format!("PACKETSTORE_CACHE_DURABILITY={other}: write or fsync")),
    }
    let cache = Arc::new(cache);
    let write_back_cpu = match std::env::var("PACKETSTORE_CACHE_WRITEBACK_CPU") {
        Err(_) => None,
        Ok(text) => Some(
            text.trim()
                .parse::<usize>()
                .ok()
                .filter(|&cpu| cpu < libc::CPU_SETSIZE as usize)
                .ok_or_else(|| format!("PACKETSTORE_CACHE_WRITEBACK_CPU={text}: not a CPU number"))?,
        ),
    };
    let interval = match std::env::var("PACKETSTORE_CACHE_WRITEBACK_MS") {
        Err(_) => WRITE_BACK_INTERVAL,
        Ok(text) => Duration::from_millis(
            text.trim().parse().map_err(|_| format!("PACKETSTORE_CACHE_WRITEBACK_MS={text}: not milliseconds"))?,
        ),
    };
    spawn_write_back(cache.clone(), write_back_cpu, interval);
    // SAFETY: registering a handler that only stores to an atomic.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    if std::env::var_os("PACKETSTORE_CACHE_STATS").is_some() {
        // SAFETY: registering a handler that only reads atomics and writes
        // to stderr.
        unsafe { libc::atexit(print_stats) };
    }
    if std::env::var_os("PACKETSTORE_CACHE_QUIET").is_none() {
        eprintln!(
            "packetstore-preload: caching writes under {paths} in {pool_path} ({}, {}{}); recovery replayed {} records to {} files",
            domain.domain.name(),
            cache.durability().name(),
            if domain.durable { "" } else { ", EMULATED: not durable across power loss" },
            recovery.records,
            recovery.files
        );
    }
    let dirs = crate::dirs::Dirs::new(match std::env::var("PACKETSTORE_CACHE_DIRSYNC").as_deref() {
        Err(_) | Ok("real") => false,
        Ok("log") => true,
        Ok(other) => return Err(format!("PACKETSTORE_CACHE_DIRSYNC={other}: real or log")),
    });
    Ok(Some(State { cache, dirs, fds: RwLock::new(HashMap::new()), cached_fds: AtomicUsize::new(0) }))
}

/// One lane per CPU (a thread appends only while it runs), at least 2 and
/// at most 8: every lane's recovery reads ahead of its end at start-up.
fn default_lanes() -> u64 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u64).clamp(2, 8)
}

/// Pins the calling thread to `cpu` (the write-back thread, off the
/// program's cores); a warning if the kernel refuses.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity
    // read and write only that set; pid 0 is this thread.
    let pinned = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if pinned != 0 {
        eprintln!(
            "packetstore-preload: the write-back thread stays unpinned: CPU {cpu}: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn spawn_write_back(cache: Arc<Cache>, cpu: Option<usize>, interval: Duration) {
    let spawned = std::thread::Builder::new().name("packetstore-wb".into()).spawn(move || {
        INSIDE.with(|inside| inside.set(true));
        if let Some(cpu) = cpu {
            pin_to(cpu);
        }
        let mut last = Instant::now();
        loop {
            std::thread::sleep(WRITE_BACK_TICK);
            let due = last.elapsed() >= interval && cache.live_records() > 0;
            if due || cache.needs_write_back(WRITE_BACK_FULL) {
                if let Err(error) = cache.write_back() {
                    eprintln!("packetstore-preload: write-back: {error} (the log keeps the writes; retrying)");
                }
                last = Instant::now();
            }
        }
    });
    if let Err(error) = spawned {
        eprintln!(
            "packetstore-preload: no write-back thread: {error}; writes will sync their files when the log fills"
        );
    }
}

/// A cached file's sync handle: a descriptor of its own (dup), closed
/// when the cache forgets the file.
struct DupFile(c_int);

impl SyncFile for DupFile {
    fn sync(&self) -> std::io::Result<()> {
        // SAFETY: our own open descriptor.
        match unsafe { real::fdatasync(self.0) } {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    }

    fn sync_dir(&self, path: &[u8]) -> std::io::Result<()> {
        packetstore::apps::cache::sync_parent(Path::new(std::ffi::OsStr::from_bytes(path)))
    }
}

/// A file the cache knows by its path only (one it never wrote, being
/// unlinked).
struct PathFile(PathBuf);

impl SyncFile for PathFile {
    fn sync(&self) -> std::io::Result<()> {
        std::fs::File::open(&self.0)?.sync_data()
    }

    fn sync_dir(&self, path: &[u8]) -> std::io::Result<()> {
        packetstore::apps::cache::sync_parent(Path::new(std::ffi::OsStr::from_bytes(path)))
    }
}

impl Drop for DupFile {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { real::close(self.0) };
    }
}

impl State {
    /// The cached file `fd` writes to, if any.
    pub fn cached(&self, fd: c_int) -> Option<Arc<CachedFile>> {
        if self.cached_fds.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.fds.read().expect("fds").get(&fd).cloned()
    }

    /// After a successful open of `absolute` (under a prefix) as `fd`:
    /// caches it if it is a regular file opened to write. A directory is
    /// noted (its syncs may be the cache's); a file opened with O_CREAT is
    /// a change of its directory.
    ///
    /// `truncate`: the open asked for O_TRUNC, which the caller took off
    /// the kernel's open (`interpose::cached_open`): a regular file is
    /// truncated now, through the cache (`Cache::truncate`: its record
    /// first, then the kernel's ftruncate), so that no crash can leave the
    /// file emptied while older records of it are still live to be
    /// replayed into it. An error (the descriptor must then be closed and
    /// the open fail) if the truncate fails.
    pub fn opened(&self, absolute: &Path, flags: c_int, fd: c_int, truncate: bool) -> std::io::Result<()> {
        // SAFETY: `fd` is open; the kernel's ftruncate of it.
        let kernel_truncate = || match crate::kill::around("o_trunc", || unsafe { real::ftruncate(fd, 0) }) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        };
        // SAFETY: a zeroed stat is a valid out-parameter; `fd` is open.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd, &mut stat) } != 0 {
            return if truncate { kernel_truncate() } else { Ok(()) };
        }
        let kind = stat.st_mode & libc::S_IFMT;
        if kind == libc::S_IFDIR {
            self.dirs.opened(fd, absolute, (stat.st_dev, stat.st_ino));
            return Ok(());
        }
        let writing = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let file = (writing && kind == libc::S_IFREG).then(|| self.adopt(fd, absolute, &stat)).flatten();
        match (&file, flags & libc::O_CREAT != 0) {
            (Some(file), true) => self.dirs.created(crate::dirs::parent(absolute), file),
            (None, true) => self.dirs.changed(crate::dirs::parent(absolute)),
            _ => {}
        }
        // The kernel's O_TRUNC truncates regular files only (a FIFO or a
        // terminal ignores it), and refuses the open of an append-only
        // file (only O_APPEND opens it to write): it fails here as there,
        // before anything is logged.
        if truncate && kind == libc::S_IFREG && refuses_truncate(fd, c"", libc::AT_EMPTY_PATH) {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        }
        match (file, truncate && kind == libc::S_IFREG) {
            (_, false) => Ok(()),
            (Some(file), true) => self.cache.truncate(&file, 0, kernel_truncate),
            // Not cached (its path is too long for a record): no record of
            // it exists to be replayed.
            (None, true) => kernel_truncate(),
        }
    }

    /// An open with O_TRUNC through a descriptor that cannot write (the
    /// kernel truncates a regular file then too), `open`, of `absolute`: a
    /// cached file is drained first, under its order lock held through the
    /// open (`Cache::drained`), so no record of it is left to replay into
    /// the emptied file and the open itself needs no record. Returns
    /// `open`'s descriptor or error.
    pub fn open_truncating_read_only(
        &self,
        absolute: &Path,
        open: impl FnOnce() -> std::io::Result<c_int>,
    ) -> std::io::Result<c_int> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(absolute) {
            Ok(meta) if meta.file_type().is_file() => match self.cache.cached((meta.dev(), meta.ino())) {
                Some(file) => self.cache.drained(&file, open),
                None => open(),
            },
            _ => open(),
        }
    }

    /// truncate(2) of `absolute` (`apply`, the kernel's) to `length`: a
    /// cached file's truncate goes through the cache (`Cache::truncate`:
    /// its record first). A file the cache does not know has no record a
    /// replay could put back, and passes through; so does one this process
    /// may not write (the kernel refuses it, and a record of it could make
    /// a recovery truncate what the call could not).
    pub fn truncate_path(
        &self,
        absolute: &Path,
        length: u64,
        apply: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(absolute) else { return apply() };
        let file = meta.file_type().is_file().then(|| self.cache.cached((meta.dev(), meta.ino()))).flatten();
        let Some(file) = file.filter(|_| may_write(absolute) && !refuses_truncate_path(absolute)) else {
            return apply();
        };
        self.cache.truncate(&file, length, apply)
    }

    /// Caches `fd`, a descriptor of the regular file at `path`.
    fn adopt(&self, fd: c_int, path: &Path, stat: &libc::stat) -> Option<Arc<CachedFile>> {
        let id = (stat.st_dev, stat.st_ino);
        let handle = || -> Arc<dyn SyncFile> {
            // SAFETY: `fd` is open; the copy is ours.
            Arc::new(DupFile(unsafe { real::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) }))
        };
        let file = self.cache.file(id, path, handle)?;
        if self.fds.write().expect("fds").insert(fd, file.clone()).is_none() {
            self.cached_fds.fetch_add(1, Ordering::Relaxed);
        }
        Some(file)
    }

    /// `new` is a duplicate of `old` (dup, dup2, fcntl F_DUPFD).
    pub fn duplicated(&self, old: c_int, new: c_int) {
        self.forget(new);
        if let Some(file) = self.cached(old) {
            if self.fds.write().expect("fds").insert(new, file).is_none() {
                self.cached_fds.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// `fd` no longer names a cached file (closed, or made uncached).
    pub fn forget(&self, fd: c_int) -> Option<Arc<CachedFile>> {
        if self.cached_fds.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let removed = self.fds.write().expect("fds").remove(&fd);
        if removed.is_some() {
            self.cached_fds.fetch_sub(1, Ordering::Relaxed);
        }
        removed
    }

    /// Before `path` is renamed: its cached file's records are written
    /// back (synced and released), its descriptors stop being cached
    /// (their records would name a path that no longer is its), and an
    /// unlink of an earlier file of that name is settled (its record would
    /// remove whatever the rename puts there).
    pub fn before_path_change(&self, absolute: &Path) -> std::io::Result<()> {
        self.dirs.changed(crate::dirs::parent(absolute));
        self.cache.settle_unlinks(absolute.as_os_str().as_bytes())?;
        let Ok(meta) = std::fs::symlink_metadata(absolute) else { return Ok(()) };
        use std::os::unix::fs::MetadataExt;
        self.uncache((meta.dev(), meta.ino()))
    }

    /// Unlinks `path` (`apply`): a regular file's descriptors stop being
    /// cached, and its unlink is logged (`Cache::unlink`): no sync.
    pub fn unlink(&self, absolute: &Path, apply: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::symlink_metadata(absolute) {
            Ok(meta) if meta.file_type().is_file() => meta,
            _ => {
                self.dirs.changed(crate::dirs::parent(absolute));
                return apply();
            }
        };
        let id = (meta.dev(), meta.ino());
        if meta.nlink() > 1 {
            // Another name keeps the bytes: they must reach the file
            // before the records naming this path are voided.
            self.uncache(id)?;
            self.dirs.changed(crate::dirs::parent(absolute));
            return apply();
        }
        let path = absolute.to_path_buf();
        let handle = move || -> Arc<dyn SyncFile> { Arc::new(PathFile(path)) };
        // Its descriptors stop being cached once the name is gone (if the
        // unlink fails they go on, logged as before).
        let apply = || apply().map(|()| self.stop_caching(id));
        match self.cache.cached(id).or_else(|| self.cache.file(id, absolute, handle)) {
            Some(file) => self.cache.unlink(&file, apply),
            None => apply(),
        }
    }

    /// The descriptors of file `id` stop being cached.
    fn stop_caching(&self, id: (u64, u64)) {
        let mut fds = self.fds.write().expect("fds");
        let before = fds.len();
        fds.retain(|_, file| file.id() != id);
        self.cached_fds.fetch_sub(before - fds.len(), Ordering::Relaxed);
    }

    /// Writes back the cached file `id` and stops caching its descriptors.
    pub fn uncache(&self, id: (u64, u64)) -> std::io::Result<()> {
        let mut fds = self.fds.write().expect("fds");
        let theirs: Vec<c_int> = fds.iter().filter(|(_, file)| file.id() == id).map(|(&fd, _)| fd).collect();
        let file = theirs.first().and_then(|fd| fds.get(fd).cloned()).or_else(|| self.cache.cached(id));
        for fd in &theirs {
            fds.remove(fd);
            self.cached_fds.fetch_sub(1, Ordering::Relaxed);
        }
        drop(fds);
        if let Some(file) = file {
            self.cache.drain(&file)?;
            self.cache.forget_file(id);
        }
        Ok(())
    }
}

/// Whether the kernel refuses every truncate of the file `path` names
/// relative to `dirfd` (with `AT_EMPTY_PATH` and an empty path: `dirfd`
/// itself): it is append-only or immutable (EPERM). Such a truncate is
/// never logged: its record could make a recovery try what no call could
/// do (and fail, keeping the log from being recovered).
pub fn refuses_truncate(dirfd: c_int, path: &CStr, flags: c_int) -> bool {
    // SAFETY: a zeroed statx is a valid out-parameter.
    let mut attributes: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-parameter.
    let found = unsafe { libc::statx(dirfd, path.as_ptr(), flags, 0, &mut attributes) } == 0;
    let refusing = (libc::STATX_ATTR_APPEND | libc::STATX_ATTR_IMMUTABLE) as u64;
    found && attributes.stx_attributes & refusing != 0
}

fn refuses_truncate_path(path: &Path) -> bool {
    std::ffi::CString::new(path.as_os_str().as_bytes()).is_ok_and(|path| refuses_truncate(libc::AT_FDCWD, &path, 0))
}

/// Whether this process may write the file at `path` (its effective
/// ids, as the kernel checks a truncate).
fn may_write(path: &Path) -> bool {
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// The absolute path of `path` opened relative to `dirfd`.
fn absolute(dirfd: c_int, path: &[u8]) -> Option<PathBuf> {
    let path = Path::new(std::ffi::OsStr::from_bytes(path));
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    let base = if dirfd == libc::AT_FDCWD {
        std::env::current_dir().ok()?
    } else {
        std::fs::read_link(format!("/proc/self/fd/{dirfd}")).ok()?
    };
    Some(base.join(path))
}
