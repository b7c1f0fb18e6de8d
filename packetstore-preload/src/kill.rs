//! A test switch: `PACKETSTORE_CACHE_KILL_AT=CALL:PHASE[:N]` makes the
//! library kill its own process with SIGKILL at the Nth time (1 if left
//! out) an interposed call named CALL on a cached file reaches PHASE:
//! `before` its kernel part (its record, if it has one, already logged)
//! or `after` it (the kernel call returned, nothing after it done yet).
//! A test can then crash a program at an exact point of a call, with no
//! tracer and no timing (packetstore-preload/tests/kills.rs).
//!
//! Owns: the parsed switch and its count of passes.
//!
//! Invariant: without `PACKETSTORE_ENABLE_TEST_SWITCHES=1` the switch is
//! refused (the cache is then off, as for any bad setting), so a stray
//! variable can never kill a program in production; without the variable
//! a point costs one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The calls with kill points, as the switch names them. `o_trunc` is an
/// open (or creat) with O_TRUNC of a cached file; `write` covers
/// `write`, `pwrite` covers `pwrite` and `pwrite64`, `unlink` covers
/// `unlinkat`, `rename` covers `renameat` and `renameat2`, `truncate`
/// covers `truncate64` and `ftruncate` covers `ftruncate64`.
pub const CALLS: [&str; 10] =
    ["o_trunc", "ftruncate", "truncate", "write", "pwrite", "writev", "pwritev", "pwritev2", "unlink", "rename"];

/// Where in a call a point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the call's kernel part (after its record is logged).
    Before,
    /// After its kernel part returned.
    After,
}

struct KillAt {
    call: &'static str,
    phase: Phase,
    nth: u64,
    passes: AtomicU64,
}

static KILL_AT: OnceLock<KillAt> = OnceLock::new();

/// Reads the switch from the environment (once, at set-up): an error if
/// it is malformed, or set without `PACKETSTORE_ENABLE_TEST_SWITCHES=1`.
pub fn configure() -> Result<(), String> {
    let Ok(text) = std::env::var("PACKETSTORE_CACHE_KILL_AT") else { return Ok(()) };
    if std::env::var("PACKETSTORE_ENABLE_TEST_SWITCHES").as_deref() != Ok("1") {
        return Err(format!(
            "PACKETSTORE_CACHE_KILL_AT={text} is a test switch (it kills this program); \
             it is refused unless PACKETSTORE_ENABLE_TEST_SWITCHES=1"
        ));
    }
    let bad =
        || format!("PACKETSTORE_CACHE_KILL_AT={text}: give CALL:before|after[:N], CALL one of {}", CALLS.join(" "));
    let mut parts = text.split(':');
    let call = parts.next().and_then(|name| CALLS.iter().find(|&&c| c == name)).ok_or_else(bad)?;
    let phase = match parts.next() {
        Some("before") => Phase::Before,
        Some("after") => Phase::After,
        _ => return Err(bad()),
    };
    let nth = match parts.next() {
        None => 1,
        Some(n) => n.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(bad)?,
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    let _ = KILL_AT.set(KillAt { call, phase, nth, passes: AtomicU64::new(0) });
    Ok(())
}

/// A kill point: `call` reached `phase`. Kills the process if the switch
/// names this pass.
pub fn point(call: &str, phase: Phase) {
    let Some(kill) = KILL_AT.get() else { return };
    if kill.call != call || kill.phase != phase {
        return;
    }
    if kill.passes.fetch_add(1, Ordering::Relaxed) + 1 == kill.nth {
        // SAFETY: signals this process; SIGKILL cannot be caught, so
        // nothing of the program runs after it (it is delivered before the
        // kill system call returns to this thread).
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        unreachable!("SIGKILL returned");
    }
}

/// Runs `kernel` (a call's kernel part) between its two kill points.
pub fn around<T>(call: &str, kernel: impl FnOnce() -> T) -> T {
    point(call, Phase::Before);
    let result = kernel();
    point(call, Phase::After);
    result
}
