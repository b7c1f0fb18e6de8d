//! Directory syncs the log can answer. A program syncs a directory to make
//! the names in it durable: files created, unlinked, renamed. Under the
//! cache, a created file whose writes are logged is made again by a replay,
//! and an unlink is logged too; so a sync of a directory whose every
//! change since its last real sync is of those kinds is answered by the
//! cache's own sync (one fence, or nothing when durable at write) instead
//! of a sync of the directory on the disk. Any other change in it (a
//! rename, mkdir, rmdir, a link, a symlink, a node, a file created and not
//! written, an unlink of something else than a regular file) makes the
//! next sync of that directory a real one.
//!
//! Owns: the descriptors of directories under a prefix, the directories
//! with an unlogged change, and the files created in each since its last
//! real sync.
//!
//! Invariant: a directory sync is answered by the cache only if it was
//! asked for (`PACKETSTORE_CACHE_DIRSYNC=log`), and every change in the
//! directory since its last real sync went through this library and is
//! logged (the calls this library does not see, stdio's among them, are
//! listed in docs/write-cache.md: they are why this is not the default).

use std::collections::{HashMap, HashSet};
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use packetstore::apps::cache::CachedFile;

/// The most files created and not yet covered that are watched; past it,
/// their directories' next syncs are real (memory stays bounded for a
/// program that creates files and never syncs a directory).
const CREATED_MAX: usize = 4096;

/// A directory's path and (device, inode).
type Named = (PathBuf, (u64, u64));

#[derive(Default)]
pub struct Dirs {
    /// Whether directory syncs may be answered at all
    /// (`PACKETSTORE_CACHE_DIRSYNC=log`; off by default: a change this
    /// library cannot see, such as a file stdio created, would not be
    /// covered).
    pub enabled: bool,
    /// Descriptors of directories under a prefix, with the directory's
    /// (device, inode) to check that a descriptor still names it.
    fds: RwLock<HashMap<c_int, Named>>,
    open_count: AtomicUsize,
    /// Directories changed in a way the log does not cover.
    unlogged: Mutex<HashSet<PathBuf>>,
    /// Files created (opened with O_CREAT to write) since their directory's
    /// last real sync, by their "ever logged" flag: covered once a write
    /// of theirs was logged. At most `CREATED_MAX` are kept.
    created: Mutex<Vec<(PathBuf, Arc<AtomicBool>)>>,
    /// Directory syncs answered by the cache, and passed to the disk.
    pub answered: AtomicUsize,
    pub real: AtomicUsize,
}

/// The directory holding `path`.
pub fn parent(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

impl Dirs {
    /// Answering directory syncs if `enabled`.
    pub fn new(enabled: bool) -> Dirs {
        Dirs { enabled, ..Default::default() }
    }

    /// `fd` is the directory `id` at `path` (under a prefix, or a prefix
    /// itself).
    pub fn opened(&self, fd: c_int, path: &Path, id: (u64, u64)) {
        if !self.enabled {
            return;
        }
        if self.fds.write().expect("dir fds").insert(fd, (path.to_path_buf(), id)).is_none() {
            self.open_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn closed(&self, fd: c_int) {
        if self.open_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        if self.fds.write().expect("dir fds").remove(&fd).is_some() {
            self.open_count.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The directory `fd` names, if it is one of ours and `fd` still
    /// names it (a descriptor number reused through dup2 or a close this
    /// library did not see is forgotten).
    pub fn of(&self, fd: c_int) -> Option<PathBuf> {
        if self.open_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let (path, id) = self.fds.read().expect("dir fds").get(&fd).cloned()?;
        // SAFETY: a zeroed stat is a valid out-parameter.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above; a closed descriptor just fails.
        let same = unsafe { libc::fstat(fd, &mut stat) } == 0
            && stat.st_mode & libc::S_IFMT == libc::S_IFDIR
            && (stat.st_dev, stat.st_ino) == id;
        if !same {
            self.closed(fd);
            return None;
        }
        Some(path)
    }

    /// `dir` changed in a way the log does not cover.
    pub fn changed(&self, dir: PathBuf) {
        self.unlogged.lock().expect("unlogged dirs").insert(dir);
    }

    /// `file` was opened with O_CREAT in `dir`.
    pub fn created(&self, dir: PathBuf, file: &CachedFile) {
        let flag = file.ever_logged_flag();
        let mut created = self.created.lock().expect("created files");
        if created.iter().any(|(d, f)| d == &dir && Arc::ptr_eq(f, &flag)) {
            return;
        }
        created.push((dir, flag));
        if created.len() > CREATED_MAX {
            // Covered ones need no more watching; if that is not enough,
            // their directories' next syncs are real.
            created.retain(|(_, logged)| !logged.load(Ordering::Relaxed));
            if created.len() > CREATED_MAX / 2 {
                let mut unlogged = self.unlogged.lock().expect("unlogged dirs");
                unlogged.extend(created.drain(..).map(|(dir, _)| dir));
            }
        }
    }

    /// Whether the log covers every change in `dir` since its last real
    /// sync.
    pub fn covered(&self, dir: &Path) -> bool {
        if self.unlogged.lock().expect("unlogged dirs").contains(dir) {
            return false;
        }
        let created = self.created.lock().expect("created files");
        created.iter().filter(|(d, _)| d == dir).all(|(_, logged)| logged.load(Ordering::Relaxed))
    }

    /// `dir` is durable as it is now (synced for real, or covered by a
    /// sync of the cache).
    pub fn synced(&self, dir: &Path) {
        self.unlogged.lock().expect("unlogged dirs").remove(dir);
        self.created.lock().expect("created files").retain(|(d, _)| d != dir);
    }
}
