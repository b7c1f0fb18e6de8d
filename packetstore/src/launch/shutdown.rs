//! Graceful shutdown on SIGINT and SIGTERM.
//!
//! Owns the process's stop flag and its wake descriptor (an eventfd every
//! event loop polls). The first signal sets the flag and makes the eventfd
//! readable: each loop wakes, stops accepting and reading, commits and
//! sends what it has, closes its connections and returns; the pool is then
//! closed and its lock released. A second signal exits at once (nothing
//! acknowledged is lost by that either: an acknowledged write is durable).
//!
//! Invariant: the handler only does async-signal-safe work (an atomic swap,
//! `write`, `_exit`).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_signal: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        const AGAIN: &[u8] = b"packetstore: second signal, exiting now\n";
        // SAFETY: write and _exit are async-signal-safe; the buffer is static.
        unsafe {
            libc::write(2, AGAIN.as_ptr().cast(), AGAIN.len());
            libc::_exit(130);
        }
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let one: u64 = 1;
        // SAFETY: an 8-byte write to our eventfd; async-signal-safe.
        unsafe { libc::write(fd, std::ptr::from_ref(&one).cast(), 8) };
    }
}

/// Installs the handlers (once per process) and returns the stop flag and
/// the wake descriptor to give every event loop.
pub fn install() -> std::io::Result<(&'static AtomicBool, RawFd)> {
    let mut fd = WAKE_FD.load(Ordering::SeqCst);
    if fd < 0 {
        // SAFETY: creates a descriptor this module owns for the process's life.
        fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        WAKE_FD.store(fd, Ordering::SeqCst);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is valid; the handler only does
            // async-signal-safe work (see the invariant above).
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
    }
    Ok((&STOP, fd))
}

/// Stops every event loop as the first signal would (a shard that failed
/// stops the others).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let one: u64 = 1;
        // SAFETY: an 8-byte write to our eventfd.
        unsafe { libc::write(fd, std::ptr::from_ref(&one).cast(), 8) };
    }
}
