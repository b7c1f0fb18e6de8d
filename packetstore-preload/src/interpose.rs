//! The C library functions this library replaces (LD_PRELOAD puts these
//! first). Each forwards to the C library's own (`real`) unless it is
//! about a cached file and called from outside this library.
//!
//! Owns: the translation between C calls (errno, -1) and the cache.
//!
//! Invariant: a call about a file that is not cached, or made from inside
//! this library (`Inside`), behaves exactly as the C library's.

use std::ffi::{c_char, c_int, c_void, CStr};

use libc::{iovec, mode_t, off64_t, off_t, size_t, ssize_t};

use packetstore::apps::cache::Durability;

use crate::kill;
use crate::real;
use crate::state::{running, state_for, Inside, State};

fn set_errno(error: &std::io::Error) {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = error.raw_os_error().unwrap_or(libc::EIO) };
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// The state and the cached file of `fd`, if this call is the cache's.
fn cached(fd: c_int) -> Option<(Inside, &'static State, std::sync::Arc<packetstore::apps::cache::CachedFile>)> {
    let inside = Inside::enter()?;
    let state = running()?;
    let file = state.cached(fd)?;
    Some((inside, state, file))
}

/// Where a write through `fd` without an offset lands: the end for
/// O_APPEND, else the file position.
fn position(fd: c_int) -> std::io::Result<u64> {
    // SAFETY: plain calls on a descriptor.
    let flags = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    // SAFETY: as above.
    let at = if flags >= 0 && flags & libc::O_APPEND != 0 {
        unsafe { libc::lseek64(fd, 0, libc::SEEK_END) }
    } else {
        unsafe { libc::lseek64(fd, 0, libc::SEEK_CUR) }
    };
    if at < 0 {
        return Err(last_error());
    }
    Ok(at as u64)
}

/// Runs a cached write by `call` (its kill points' name): `data` at
/// `offset`, applied by `apply`.
fn cached_write(
    call: &'static str,
    fd: c_int,
    offset: Option<u64>,
    data: &[u8],
    apply: impl FnOnce() -> ssize_t,
) -> Option<ssize_t> {
    let (_inside, state, file) = cached(fd)?;
    let offset = match offset.map_or_else(|| position(fd), Ok) {
        Ok(offset) => offset,
        Err(error) => {
            set_errno(&error);
            return Some(-1);
        }
    };
    let apply = || match kill::around(call, apply) {
        n if n >= 0 => Ok(n as usize),
        _ => Err(last_error()),
    };
    let written = state.cache.write(&file, offset, data, apply).and_then(|n| {
        // Durable at fsync: a descriptor opened O_SYNC or O_DSYNC syncs
        // each write.
        if state.cache.durability() == Durability::Fsync && opened_sync(fd) {
            state.cache.sync()?;
        }
        Ok(n)
    });
    Some(match written {
        Ok(n) => n as ssize_t,
        Err(error) => {
            set_errno(&error);
            -1
        }
    })
}

/// Whether `fd` was opened with O_SYNC or O_DSYNC.
fn opened_sync(fd: c_int) -> bool {
    // SAFETY: a plain call on a descriptor.
    let flags = unsafe { real::fcntl(fd, libc::F_GETFL, 0) };
    flags >= 0 && flags & (libc::O_SYNC | libc::O_DSYNC) != 0
}

/// The bytes `iov` names, gathered.
///
/// # Safety
/// `iov` points at `count` iovecs of readable memory.
unsafe fn gather(iov: *const iovec, count: c_int) -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..count.max(0) as usize {
        // SAFETY: the caller's contract.
        let vector = unsafe { &*iov.add(i) };
        if vector.iov_len > 0 {
            // SAFETY: as above.
            data.extend_from_slice(unsafe { std::slice::from_raw_parts(vector.iov_base.cast::<u8>(), vector.iov_len) });
        }
    }
    data
}

/// # Safety
/// `buf` points at `count` readable bytes (write(2)'s contract).
unsafe fn slice<'a>(buf: *const c_void, count: size_t) -> &'a [u8] {
    if count == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), count) }
}

/// # Safety
/// write(2).
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t {
    // SAFETY: write(2)'s contract, passed on.
    let data = unsafe { slice(buf, count) };
    // SAFETY: as above.
    cached_write("write", fd, None, data, || unsafe { real::write(fd, buf, count) })
        .unwrap_or_else(|| unsafe { real::write(fd, buf, count) })
}

/// # Safety
/// pwrite(2).
#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, count: size_t, offset: off_t) -> ssize_t {
    // SAFETY: pwrite(2)'s contract, passed on.
    let data = unsafe { slice(buf, count) };
    let at = (offset >= 0).then_some(offset as u64);
    // SAFETY: as above.
    cached_write("pwrite", fd, at, data, || unsafe { real::pwrite(fd, buf, count, offset) })
        .unwrap_or_else(|| unsafe { real::pwrite(fd, buf, count, offset) })
}

/// # Safety
/// pwrite64(2).
#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, count: size_t, offset: off64_t) -> ssize_t {
    // SAFETY: pwrite(2)'s contract, passed on.
    let data = unsafe { slice(buf, count) };
    let at = (offset >= 0).then_some(offset as u64);
    // SAFETY: as above.
    cached_write("pwrite", fd, at, data, || unsafe { real::pwrite64(fd, buf, count, offset) })
        .unwrap_or_else(|| unsafe { real::pwrite64(fd, buf, count, offset) })
}

/// # Safety
/// writev(2).
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const iovec, count: c_int) -> ssize_t {
    if Inside::enter().is_some() && running().and_then(|s| s.cached(fd)).is_some() {
        // SAFETY: writev(2)'s contract.
        let data = unsafe { gather(iov, count) };
        // SAFETY: as above.
        if let Some(n) = cached_write("writev", fd, None, &data, || unsafe { real::writev(fd, iov, count) }) {
            return n;
        }
    }
    // SAFETY: passed on.
    unsafe { real::writev(fd, iov, count) }
}

/// # Safety
/// pwritev(2).
#[no_mangle]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const iovec, count: c_int, offset: off_t) -> ssize_t {
    if Inside::enter().is_some() && running().and_then(|s| s.cached(fd)).is_some() {
        // SAFETY: pwritev(2)'s contract.
        let data = unsafe { gather(iov, count) };
        let at = (offset >= 0).then_some(offset as u64);
        // SAFETY: as above.
        if let Some(n) = cached_write("pwritev", fd, at, &data, || unsafe { real::pwritev(fd, iov, count, offset) }) {
            return n;
        }
    }
    // SAFETY: passed on.
    unsafe { real::pwritev(fd, iov, count, offset) }
}

/// # Safety
/// pwritev64(2).
#[no_mangle]
pub unsafe extern "C" fn pwritev64(fd: c_int, iov: *const iovec, count: c_int, offset: off64_t) -> ssize_t {
    // SAFETY: the same call.
    unsafe { pwritev(fd, iov, count, offset) }
}

/// fsync on a cached file: everything written is durable already.
/// fsync or fdatasync of `fd`: for a cached file, the cache's sync (every
/// write already durable, or one commit of every lane); None otherwise.
fn cached_sync(fd: c_int) -> Option<c_int> {
    let (_inside, state, _) = cached(fd)?;
    Some(cache_sync(state))
}

fn cache_sync(state: &State) -> c_int {
    match state.cache.sync() {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("packetstore-preload: fsync: {error}");
            set_errno(&std::io::Error::from_raw_os_error(libc::EIO));
            -1
        }
    }
}

/// fsync or fdatasync (`real`) of a descriptor: a cached file's is the
/// cache's; a directory's whose every change the log covers is too
/// (`dirs`); any other goes to the C library.
fn any_sync(fd: c_int, real: impl FnOnce() -> c_int) -> c_int {
    if let Some(done) = cached_sync(fd) {
        return done;
    }
    let Some(_inside) = Inside::enter() else { return real() };
    let Some((state, dir)) = running().and_then(|state| Some((state, state.dirs.of(fd)?))) else { return real() };
    if state.dirs.covered(&dir) {
        let done = cache_sync(state);
        if done == 0 {
            state.dirs.synced(&dir);
            state.dirs.answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        return done;
    }
    state.dirs.real.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let done = real();
    if done == 0 {
        state.dirs.synced(&dir);
    }
    done
}

/// sync_file_range promises no durability: for a cached file it has
/// nothing to start.
fn synced(fd: c_int) -> bool {
    cached(fd).is_some()
}

/// # Safety
/// fsync(2).
#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    // SAFETY: passed on.
    any_sync(fd, || unsafe { real::fsync(fd) })
}

/// # Safety
/// fdatasync(2).
#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    // SAFETY: passed on.
    any_sync(fd, || unsafe { real::fdatasync(fd) })
}

/// # Safety
/// sync_file_range(2).
#[no_mangle]
pub unsafe extern "C" fn sync_file_range(fd: c_int, offset: off64_t, nbytes: off64_t, flags: u32) -> c_int {
    // SAFETY: passed on.
    if synced(fd) {
        0
    } else {
        unsafe { real::sync_file_range(fd, offset, nbytes, flags) }
    }
}

fn cached_truncate(fd: c_int, length: i64, apply: impl FnOnce() -> c_int) -> Option<c_int> {
    let (_inside, state, file) = cached(fd)?;
    if length < 0 || crate::state::refuses_truncate(fd, c"", libc::AT_EMPTY_PATH) {
        return None;
    }
    let apply = || if kill::around("ftruncate", apply) == 0 { Ok(()) } else { Err(last_error()) };
    Some(match state.cache.truncate(&file, length as u64, apply) {
        Ok(()) => 0,
        Err(error) => {
            set_errno(&error);
            -1
        }
    })
}

/// # Safety
/// ftruncate(2).
#[no_mangle]
pub unsafe extern "C" fn ftruncate(fd: c_int, length: off_t) -> c_int {
    // SAFETY: passed on.
    cached_truncate(fd, length, || unsafe { real::ftruncate(fd, length) })
        .unwrap_or_else(|| unsafe { real::ftruncate(fd, length) })
}

/// # Safety
/// ftruncate64(2).
#[no_mangle]
pub unsafe extern "C" fn ftruncate64(fd: c_int, length: off64_t) -> c_int {
    // SAFETY: passed on.
    cached_truncate(fd, length, || unsafe { real::ftruncate64(fd, length) })
        .unwrap_or_else(|| unsafe { real::ftruncate64(fd, length) })
}

/// truncate(2) of `path` to `length` (`apply`, the kernel's): a cached
/// file's goes through the cache, its record logged first
/// (`State::truncate_path`).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn path_truncate(path: *const c_char, length: i64, apply: impl FnOnce() -> c_int) -> c_int {
    let Some(inside) = Inside::enter() else { return apply() };
    // SAFETY: the caller's contract.
    let target = (!path.is_null() && length >= 0).then(|| state_for(libc::AT_FDCWD, unsafe { CStr::from_ptr(path) }));
    let Some((state, absolute)) = target.flatten() else {
        drop(inside);
        return apply();
    };
    let apply = || if kill::around("truncate", apply) == 0 { Ok(()) } else { Err(last_error()) };
    match state.truncate_path(&absolute, length as u64, apply) {
        Ok(()) => 0,
        Err(error) => {
            set_errno(&error);
            -1
        }
    }
}

/// # Safety
/// truncate(2).
#[no_mangle]
pub unsafe extern "C" fn truncate(path: *const c_char, length: off_t) -> c_int {
    // SAFETY: passed on.
    unsafe { path_truncate(path, length, || real::truncate(path, length)) }
}

/// # Safety
/// truncate64(2).
#[no_mangle]
pub unsafe extern "C" fn truncate64(path: *const c_char, length: off64_t) -> c_int {
    // SAFETY: passed on.
    unsafe { path_truncate(path, length, || real::truncate64(path, length)) }
}

/// `apply`, a call that writes into `fd` in a way the log does not
/// describe (a copy between files, a splice, pwritev2 with RWF_APPEND), on
/// a cached file: drained first, then applied and synced. None if `fd` is
/// not cached.
fn unlogged(fd: c_int, apply: impl FnOnce() -> ssize_t) -> Option<ssize_t> {
    let (_inside, state, file) = cached(fd)?;
    let apply = || match apply() {
        n if n >= 0 => Ok(n),
        _ => Err(last_error()),
    };
    Some(state.cache.unlogged(&file, apply).unwrap_or_else(|error| {
        set_errno(&error);
        -1
    }))
}

/// pwritev2's flags this library handles like pwritev (a priority, a
/// promise not to block); a sync flag syncs after the write.
const PWRITEV2_PLAIN: c_int = libc::RWF_HIPRI | libc::RWF_NOWAIT | libc::RWF_DSYNC | libc::RWF_SYNC;

/// # Safety
/// pwritev2(2).
#[no_mangle]
pub unsafe extern "C" fn pwritev2(fd: c_int, iov: *const iovec, count: c_int, offset: off_t, flags: c_int) -> ssize_t {
    // SAFETY: passed on.
    let real = || unsafe { real::pwritev2(fd, iov, count, offset, flags) };
    if flags & !PWRITEV2_PLAIN != 0 {
        return unlogged(fd, real).unwrap_or_else(real);
    }
    if Inside::enter().is_some() && running().and_then(|s| s.cached(fd)).is_some() {
        // SAFETY: pwritev2(2)'s contract.
        let data = unsafe { gather(iov, count) };
        let at = (offset >= 0).then_some(offset as u64);
        // RWF_NOWAIT could fail with EAGAIN after the record is logged:
        // the write is made without it (blocking is allowed to take longer).
        let plain = flags & !libc::RWF_NOWAIT;
        // SAFETY: as above.
        if let Some(n) =
            cached_write("pwritev2", fd, at, &data, || unsafe { real::pwritev2(fd, iov, count, offset, plain) })
        {
            if n >= 0 && flags & (libc::RWF_DSYNC | libc::RWF_SYNC) != 0 {
                if let Some(-1) = cached_sync(fd) {
                    return -1;
                }
            }
            return n;
        }
    }
    real()
}

/// # Safety
/// pwritev64v2(2).
#[no_mangle]
pub unsafe extern "C" fn pwritev64v2(
    fd: c_int,
    iov: *const iovec,
    count: c_int,
    offset: off64_t,
    flags: c_int,
) -> ssize_t {
    // SAFETY: the same call.
    unsafe { pwritev2(fd, iov, count, offset, flags) }
}

/// # Safety
/// copy_file_range(2).
#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: u32,
) -> ssize_t {
    // SAFETY: passed on.
    let real = || unsafe { real::copy_file_range(fd_in, off_in, fd_out, off_out, len, flags) };
    unlogged(fd_out, real).unwrap_or_else(real)
}

/// # Safety
/// sendfile(2).
#[no_mangle]
pub unsafe extern "C" fn sendfile(out_fd: c_int, in_fd: c_int, offset: *mut off_t, count: size_t) -> ssize_t {
    // SAFETY: passed on.
    let real = || unsafe { real::sendfile(out_fd, in_fd, offset, count) };
    unlogged(out_fd, real).unwrap_or_else(real)
}

/// # Safety
/// sendfile64(2).
#[no_mangle]
pub unsafe extern "C" fn sendfile64(out_fd: c_int, in_fd: c_int, offset: *mut off64_t, count: size_t) -> ssize_t {
    // SAFETY: passed on.
    let real = || unsafe { real::sendfile64(out_fd, in_fd, offset, count) };
    unlogged(out_fd, real).unwrap_or_else(real)
}

/// # Safety
/// splice(2).
#[no_mangle]
pub unsafe extern "C" fn splice(
    fd_in: c_int,
    off_in: *mut off64_t,
    fd_out: c_int,
    off_out: *mut off64_t,
    len: size_t,
    flags: u32,
) -> ssize_t {
    // SAFETY: passed on.
    let real = || unsafe { real::splice(fd_in, off_in, fd_out, off_out, len, flags) };
    unlogged(fd_out, real).unwrap_or_else(real)
}

/// A fallocate that changes data (punch a hole, zero, collapse or insert
/// a range) on a cached file: drained first, then applied and synced (the
/// log cannot describe it). Allocation alone (mode 0, KEEP_SIZE) changes
/// no byte and passes through.
fn cached_fallocate(fd: c_int, mode: c_int, apply: impl FnOnce() -> c_int) -> Option<c_int> {
    if mode & !libc::FALLOC_FL_KEEP_SIZE == 0 {
        return None;
    }
    let (_inside, state, file) = cached(fd)?;
    let apply = || if apply() == 0 { Ok(()) } else { Err(last_error()) };
    Some(match state.cache.unlogged(&file, apply) {
        Ok(()) => 0,
        Err(error) => {
            set_errno(&error);
            -1
        }
    })
}

/// # Safety
/// fallocate(2).
#[no_mangle]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, offset: off_t, len: off_t) -> c_int {
    // SAFETY: passed on.
    cached_fallocate(fd, mode, || unsafe { real::fallocate(fd, mode, offset, len) })
        .unwrap_or_else(|| unsafe { real::fallocate(fd, mode, offset, len) })
}

/// # Safety
/// fallocate64(2).
#[no_mangle]
pub unsafe extern "C" fn fallocate64(fd: c_int, mode: c_int, offset: off64_t, len: off64_t) -> c_int {
    // SAFETY: passed on.
    cached_fallocate(fd, mode, || unsafe { real::fallocate64(fd, mode, offset, len) })
        .unwrap_or_else(|| unsafe { real::fallocate64(fd, mode, offset, len) })
}

/// An open of `path` relative to `dirfd` with `flags`, by `open` (given
/// the flags to open with): the cache is set up first if the path is
/// under a prefix (its recovery then runs before the program's open), and
/// adopts the descriptor after.
///
/// O_TRUNC is never left to the kernel's open of a path under a prefix
/// (docs/write-cache.md, "O_TRUNC"): the kernel would empty the file before
/// the cache could log it, and a crash in between would leave the file's
/// older live records to be replayed into the emptied file. An open that
/// can write is made without it, and the file is then truncated through
/// the cache (`State::opened`): its record first, then ftruncate. So an
/// open that fails (EACCES, ENOENT, EISDIR, EEXIST under O_EXCL...) fails
/// before anything is logged or truncated, and a file that did not exist
/// is created by the open as it would be. An open that cannot write keeps
/// its O_TRUNC, with the file drained first
/// (`State::open_truncating_read_only`).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn cached_open(dirfd: c_int, path: *const c_char, flags: c_int, open: impl FnOnce(c_int) -> c_int) -> c_int {
    let Some(inside) = Inside::enter() else { return open(flags) };
    // SAFETY: the caller's contract.
    let target = (!path.is_null()).then(|| state_for(dirfd, unsafe { CStr::from_ptr(path) })).flatten();
    let Some((state, absolute)) = target else {
        drop(inside);
        return open(flags);
    };
    let truncating = flags & libc::O_TRUNC != 0 && flags & libc::O_PATH == 0;
    let writing = flags & libc::O_ACCMODE != libc::O_RDONLY;
    if truncating && !writing {
        return open_truncating_read_only(state, &absolute, flags, open);
    }
    let deferred = truncating && writing;
    // The open itself runs outside the guard, as the program's own call:
    // it may block (a FIFO), and a signal handler's writes meanwhile are
    // the program's.
    drop(inside);
    let fd = open(if deferred { flags & !libc::O_TRUNC } else { flags });
    if fd < 0 {
        return fd;
    }
    let _inside = Inside::enter();
    // (`opened` notes directories and creations too.)
    match state.opened(&absolute, flags, fd, deferred) {
        Ok(()) => fd,
        Err(error) => {
            // The open fails as the kernel's would have: the descriptor
            // the program never saw is closed.
            state.forget(fd);
            state.dirs.closed(fd);
            // SAFETY: our descriptor, closed once.
            unsafe { real::close(fd) };
            set_errno(&error);
            -1
        }
    }
}

/// An open with O_TRUNC that cannot write, of `absolute` under a prefix
/// (`State::open_truncating_read_only`).
fn open_truncating_read_only(
    state: &State,
    absolute: &std::path::Path,
    flags: c_int,
    open: impl FnOnce(c_int) -> c_int,
) -> c_int {
    let open = || match open(flags) {
        fd if fd >= 0 => Ok(fd),
        _ => Err(last_error()),
    };
    match state.open_truncating_read_only(absolute, open) {
        Ok(fd) => {
            let _ = state.opened(absolute, flags, fd, false);
            fd
        }
        Err(error) => {
            set_errno(&error);
            -1
        }
    }
}

/// # Safety
/// open(2) (the mode is read whatever the flags, as the ABI allows).
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe { cached_open(libc::AT_FDCWD, path, flags, |flags| real::open(path, flags, mode)) }
}

/// # Safety
/// open64(2).
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe { cached_open(libc::AT_FDCWD, path, flags, |flags| real::open64(path, flags, mode)) }
}

/// # Safety
/// openat(2).
#[no_mangle]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe { cached_open(dirfd, path, flags, |flags| real::openat(dirfd, path, flags, mode)) }
}

/// # Safety
/// openat64(2).
#[no_mangle]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe { cached_open(dirfd, path, flags, |flags| real::openat64(dirfd, path, flags, mode)) }
}

/// # Safety
/// creat(2).
#[no_mangle]
pub unsafe extern "C" fn creat(path: *const c_char, mode: mode_t) -> c_int {
    let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
    // SAFETY: passed on (creat is this open).
    unsafe { cached_open(libc::AT_FDCWD, path, flags, |flags| real::open(path, flags, mode)) }
}

/// # Safety
/// creat64(2).
#[no_mangle]
pub unsafe extern "C" fn creat64(path: *const c_char, mode: mode_t) -> c_int {
    let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
    // SAFETY: passed on (creat64 is this open).
    unsafe { cached_open(libc::AT_FDCWD, path, flags, |flags| real::open64(path, flags, mode)) }
}

/// # Safety
/// close(2).
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some(_inside) = Inside::enter() {
        if let Some(state) = running() {
            state.forget(fd);
            state.dirs.closed(fd);
        }
    }
    // SAFETY: passed on.
    unsafe { real::close(fd) }
}

/// Before a rename of a path under a prefix: its file's records written
/// back. Returns false (errno set) if that failed.
///
/// # Safety
/// `path` is a NUL-terminated string.
unsafe fn before_path_change(dirfd: c_int, path: *const c_char) -> bool {
    let Some(_inside) = Inside::enter() else { return true };
    if path.is_null() {
        return true;
    }
    // SAFETY: the caller's contract.
    let Some((state, absolute)) = state_for(dirfd, unsafe { CStr::from_ptr(path) }) else { return true };
    match state.before_path_change(&absolute) {
        Ok(()) => true,
        Err(error) => {
            set_errno(&error);
            false
        }
    }
}

/// An unlink of `path` relative to `dirfd` (`apply`, the real one): a
/// cached file's unlink is logged (docs/write-cache.md, "Unlinks").
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn cached_unlink(dirfd: c_int, path: *const c_char, apply: impl FnOnce() -> c_int) -> c_int {
    let Some(inside) = Inside::enter() else { return apply() };
    // SAFETY: the caller's contract.
    let target = (!path.is_null()).then(|| state_for(dirfd, unsafe { CStr::from_ptr(path) })).flatten();
    let Some((state, absolute)) = target else {
        drop(inside);
        return apply();
    };
    let apply = || if kill::around("unlink", apply) == 0 { Ok(()) } else { Err(last_error()) };
    match state.unlink(&absolute, apply) {
        Ok(()) => 0,
        Err(error) => {
            set_errno(&error);
            -1
        }
    }
}

/// # Safety
/// unlink(2).
#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe { cached_unlink(libc::AT_FDCWD, path, || real::unlink(path)) }
}

/// # Safety
/// unlinkat(2).
#[no_mangle]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    if flags & libc::AT_REMOVEDIR != 0 {
        // SAFETY: passed on (a directory is never cached; its removal is
        // a change the log does not describe).
        return unsafe {
            unlogged_name(dirfd, path);
            real::unlinkat(dirfd, path, flags)
        };
    }
    // SAFETY: passed on.
    unsafe { cached_unlink(dirfd, path, || real::unlinkat(dirfd, path, flags)) }
}

/// # Safety
/// rename(2).
#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: passed on; the target's old file goes too.
    let ready = unsafe { before_path_change(libc::AT_FDCWD, old) && before_path_change(libc::AT_FDCWD, new) };
    if !ready {
        return -1;
    }
    // SAFETY: passed on.
    kill::around("rename", || unsafe { real::rename(old, new) })
}

/// # Safety
/// renameat(2).
#[no_mangle]
pub unsafe extern "C" fn renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int {
    // SAFETY: passed on.
    let ready = unsafe { before_path_change(olddirfd, old) && before_path_change(newdirfd, new) };
    if !ready {
        return -1;
    }
    // SAFETY: passed on.
    kill::around("rename", || unsafe { real::renameat(olddirfd, old, newdirfd, new) })
}

/// # Safety
/// renameat2(2).
#[no_mangle]
pub unsafe extern "C" fn renameat2(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: u32,
) -> c_int {
    // SAFETY: passed on.
    let ready = unsafe { before_path_change(olddirfd, old) && before_path_change(newdirfd, new) };
    if !ready {
        return -1;
    }
    // SAFETY: passed on.
    kill::around("rename", || unsafe { real::renameat2(olddirfd, old, newdirfd, new, flags) })
}

/// A shared writable mapping of a cached file would write around the
/// cache: the file is written back and no longer cached.
fn before_map(fd: c_int, prot: c_int, flags: c_int) {
    if prot & libc::PROT_WRITE == 0 || flags & libc::MAP_SHARED == 0 {
        return;
    }
    if let Some((_inside, state, file)) = cached(fd) {
        if let Err(error) = state.uncache(file.id()) {
            eprintln!("packetstore-preload: writing back a file before it is mapped: {error}");
        }
    }
}

/// # Safety
/// mmap(2).
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off_t,
) -> *mut c_void {
    before_map(fd, prot, flags);
    // SAFETY: passed on.
    unsafe { real::mmap(addr, len, prot, flags, fd, offset) }
}

/// # Safety
/// mmap64(2).
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: off64_t,
) -> *mut c_void {
    before_map(fd, prot, flags);
    // SAFETY: passed on.
    unsafe { real::mmap64(addr, len, prot, flags, fd, offset) }
}

/// After a duplication returned `new`: it writes to `old`'s file.
fn after_dup(old: c_int, new: c_int) -> c_int {
    if new >= 0 {
        if let Some(_inside) = Inside::enter() {
            if let Some(state) = running() {
                state.duplicated(old, new);
            }
        }
    }
    new
}

/// # Safety
/// dup(2).
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    // SAFETY: passed on.
    after_dup(fd, unsafe { real::dup(fd) })
}

/// # Safety
/// dup2(2).
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    // SAFETY: passed on.
    after_dup(old, unsafe { real::dup2(old, new) })
}

/// # Safety
/// dup3(2).
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    // SAFETY: passed on.
    after_dup(old, unsafe { real::dup3(old, new, flags) })
}

fn after_fcntl(fd: c_int, cmd: c_int, result: c_int) -> c_int {
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        return after_dup(fd, result);
    }
    result
}

/// # Safety
/// fcntl(2) (the third argument read as a word, as the ABI passes it).
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    // SAFETY: passed on.
    after_fcntl(fd, cmd, unsafe { real::fcntl(fd, cmd, arg) })
}

/// # Safety
/// fcntl64(2).
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    // SAFETY: passed on.
    after_fcntl(fd, cmd, unsafe { real::fcntl64(fd, cmd, arg) })
}

/// Before a change of a name the log does not describe (mkdir, rmdir, a
/// link, a symlink, a node) at `path` relative to `dirfd`: its directory's
/// next sync is a real one.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
unsafe fn unlogged_name(dirfd: c_int, path: *const c_char) {
    let Some(_inside) = Inside::enter() else { return };
    if path.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    if let Some((state, absolute)) = state_for(dirfd, unsafe { CStr::from_ptr(path) }) {
        state.dirs.changed(crate::dirs::parent(&absolute));
    }
}

/// # Safety
/// mkdir(2).
#[no_mangle]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(libc::AT_FDCWD, path);
        real::mkdir(path, mode)
    }
}

/// # Safety
/// mkdirat(2).
#[no_mangle]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(dirfd, path);
        real::mkdirat(dirfd, path, mode)
    }
}

/// # Safety
/// rmdir(2).
#[no_mangle]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(libc::AT_FDCWD, path);
        real::rmdir(path)
    }
}

/// # Safety
/// symlink(2).
#[no_mangle]
pub unsafe extern "C" fn symlink(target: *const c_char, path: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(libc::AT_FDCWD, path);
        real::symlink(target, path)
    }
}

/// # Safety
/// symlinkat(2).
#[no_mangle]
pub unsafe extern "C" fn symlinkat(target: *const c_char, dirfd: c_int, path: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(dirfd, path);
        real::symlinkat(target, dirfd, path)
    }
}

/// # Safety
/// link(2).
#[no_mangle]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(libc::AT_FDCWD, new);
        real::link(old, new)
    }
}

/// # Safety
/// linkat(2).
#[no_mangle]
pub unsafe extern "C" fn linkat(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: c_int,
) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(newdirfd, new);
        real::linkat(olddirfd, old, newdirfd, new, flags)
    }
}

/// # Safety
/// mknod(2).
#[no_mangle]
pub unsafe extern "C" fn mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(libc::AT_FDCWD, path);
        real::mknod(path, mode, dev)
    }
}

/// # Safety
/// mknodat(2).
#[no_mangle]
pub unsafe extern "C" fn mknodat(dirfd: c_int, path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int {
    // SAFETY: passed on.
    unsafe {
        unlogged_name(dirfd, path);
        real::mknodat(dirfd, path, mode, dev)
    }
}
