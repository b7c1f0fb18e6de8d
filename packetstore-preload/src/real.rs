//! The C library's own functions, found with `dlsym(RTLD_NEXT, ...)`: what
//! every interposed call forwards to.
//!
//! Owns: one resolved pointer per function, resolved on first use.
//!
//! Invariant: a pointer is the next definition after this library's (the
//! C library's), never this library's own: calling it cannot recurse.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use libc::{iovec, mode_t, off64_t, off_t, size_t, ssize_t};

/// Resolves `name` (NUL-terminated) to the next definition.
fn next(name: &'static [u8]) -> usize {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT looks past this library.
    let symbol = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    assert!(!symbol.is_null(), "packetstore-preload: the C library has no {}", String::from_utf8_lossy(name));
    symbol as usize
}

macro_rules! real {
    ($( $name:ident ( $($arg:ident : $ty:ty),* ) -> $ret:ty ;)*) => {
        $(
            /// The C library's function of this name.
            ///
            /// # Safety
            /// As the C function's contract.
            pub unsafe fn $name($($arg: $ty),*) -> $ret {
                static POINTER: AtomicUsize = AtomicUsize::new(0);
                let mut pointer = POINTER.load(Ordering::Relaxed);
                if pointer == 0 {
                    pointer = next(concat!(stringify!($name), "\0").as_bytes());
                    POINTER.store(pointer, Ordering::Relaxed);
                }
                // SAFETY: the symbol has this C signature (glibc's).
                let function: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(pointer) };
                // SAFETY: the caller keeps the C contract.
                unsafe { function($($arg),*) }
            }
        )*
    };
}

real! {
    open(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    open64(path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int;
    close(fd: c_int) -> c_int;
    write(fd: c_int, buf: *const c_void, count: size_t) -> ssize_t;
    pwrite(fd: c_int, buf: *const c_void, count: size_t, offset: off_t) -> ssize_t;
    pwrite64(fd: c_int, buf: *const c_void, count: size_t, offset: off64_t) -> ssize_t;
    writev(fd: c_int, iov: *const iovec, count: c_int) -> ssize_t;
    pwritev(fd: c_int, iov: *const iovec, count: c_int, offset: off_t) -> ssize_t;
    fsync(fd: c_int) -> c_int;
    fdatasync(fd: c_int) -> c_int;
    sync_file_range(fd: c_int, offset: off64_t, nbytes: off64_t, flags: u32) -> c_int;
    ftruncate(fd: c_int, length: off_t) -> c_int;
    ftruncate64(fd: c_int, length: off64_t) -> c_int;
    truncate(path: *const c_char, length: off_t) -> c_int;
    truncate64(path: *const c_char, length: off64_t) -> c_int;
    fallocate(fd: c_int, mode: c_int, offset: off_t, len: off_t) -> c_int;
    pwritev2(fd: c_int, iov: *const iovec, count: c_int, offset: off_t, flags: c_int) -> ssize_t;
    copy_file_range(fd_in: c_int, off_in: *mut off64_t, fd_out: c_int, off_out: *mut off64_t, len: size_t, flags: u32) -> ssize_t;
    sendfile(out_fd: c_int, in_fd: c_int, offset: *mut off_t, count: size_t) -> ssize_t;
    sendfile64(out_fd: c_int, in_fd: c_int, offset: *mut off64_t, count: size_t) -> ssize_t;
    splice(fd_in: c_int, off_in: *mut off64_t, fd_out: c_int, off_out: *mut off64_t, len: size_t, flags: u32) -> ssize_t;
    fallocate64(fd: c_int, mode: c_int, offset: off64_t, len: off64_t) -> c_int;
    unlink(path: *const c_char) -> c_int;
    unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    rename(old: *const c_char, new: *const c_char) -> c_int;
    renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int;
    renameat2(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char, flags: u32) -> c_int;
    mmap(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, offset: off_t) -> *mut c_void;
    mmap64(addr: *mut c_void, len: size_t, prot: c_int, flags: c_int, fd: c_int, offset: off64_t) -> *mut c_void;
    dup(fd: c_int) -> c_int;
    dup2(old: c_int, new: c_int) -> c_int;
    dup3(old: c_int, new: c_int, flags: c_int) -> c_int;
    fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int;
    fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int;
    mkdir(path: *const c_char, mode: mode_t) -> c_int;
    mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int;
    rmdir(path: *const c_char) -> c_int;
    symlink(target: *const c_char, path: *const c_char) -> c_int;
    symlinkat(target: *const c_char, dirfd: c_int, path: *const c_char) -> c_int;
    link(old: *const c_char, new: *const c_char) -> c_int;
    linkat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char, flags: c_int) -> c_int;
    mknod(path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
    mknodat(dirfd: c_int, path: *const c_char, mode: mode_t, dev: libc::dev_t) -> c_int;
}
