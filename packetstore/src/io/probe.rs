//! io_uring's features, probed once at start: what this kernel lets the
//! engine use, so that a missing feature costs a fallback and one line in
//! the log instead of a failure after recovery.
//!
//! Owns: the list of kernel features the engine uses, the mainline release
//! each arrived in, and a test of each on a scratch ring. A test exercises
//! the feature (a ring set up with the flags, a buffer ring registered with
//! the flag, a multishot accept or receive that must complete on a local
//! socket pair), since distributions backport features and block system
//! calls, so a version number would lie.
//!
//! Required: without these the engine cannot run, and the caller must use
//! the epoll loop ([`Unavailable`]): io_uring itself (blocked by seccomp
//! profiles and by the `kernel.io_uring_disabled` sysctl), provided-buffer
//! rings (Linux 5.19), multishot accept (5.19), multishot receive (6.0).
//! The engine's other operations (send, sendmsg, fsync, timeout, poll,
//! cancel) are older than all of these.
//!
//! Optional, each with a fallback ([`Feature`]): SINGLE_ISSUER |
//! DEFER_TASKRUN (6.1), incremental buffer consumption (6.12), the
//! multishot receive byte limit (6.17). Receive bundles and zero-copy
//! sends are not used.
//!
//! Invariant: a feature reported present worked on this kernel, in this
//! process (a seccomp filter is per process); a feature the caller disabled
//! is reported absent whatever the kernel has.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::io::bufring::BufRing;

/// The environment variable that forces fallbacks: a comma-separated list
/// of [`Feature::name`]s, or `all`. For testing the fallbacks on a kernel
/// that has everything, measuring them, or working around a kernel bug.
pub const DISABLE_VARIABLE: &str = "PACKETSTORE_URING_DISABLE";

/// How long one probe waits for a completion before calling the feature
/// missing (a local socket pair answers in microseconds).
const COMPLETION_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Completions one probe reads before giving up on its own.
const COMPLETIONS_MAX: usize = 64;
/// Entries and bytes of the scratch buffer ring (provided once: the two
/// receive probes take one buffer each).
const SCRATCH_ENTRIES: u16 = 8;
const SCRATCH_BUFFER_BYTES: u32 = 256;
/// What the byte-limit probe sends, and the limit it sets.
const PROBE_BYTES: usize = 64;
const PROBE_LIMIT_BYTES: u32 = 16;
const GROUP: u16 = 0;
const GROUP_INCREMENTAL: u16 = 1;
const TIMEOUT_TAG: u64 = 1 << 63;

/// An optional kernel feature: the engine runs without it, at a cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN.
    DeferTaskrun,
    /// IOU_PBUF_RING_INC: receives pack into a provided buffer.
    IncrementalBuffers,
    /// A multishot receive ends after `sqe->optlen` bytes.
    ReceiveLimit,
}

impl Feature {
    pub const ALL: [Feature; 3] = [Feature::DeferTaskrun, Feature::IncrementalBuffers, Feature::ReceiveLimit];

    /// Its name in [`DISABLE_VARIABLE`].
    pub fn name(self) -> &'static str {
        match self {
            Feature::DeferTaskrun => "defer-taskrun",
            Feature::IncrementalBuffers => "incremental",
            Feature::ReceiveLimit => "receive-limit",
        }
    }

    /// What it is.
    pub fn title(self) -> &'static str {
        match self {
            Feature::DeferTaskrun => "deferred task work",
            Feature::IncrementalBuffers => "incremental buffer consumption",
            Feature::ReceiveLimit => "the multishot receive byte limit",
        }
    }

    /// Its name in the kernel's interface.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Feature::DeferTaskrun => "IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN",
            Feature::IncrementalBuffers => "IOU_PBUF_RING_INC",
            Feature::ReceiveLimit => "sqe->optlen of a multishot receive",
        }
    }

    /// The first mainline release that has it.
    pub fn since(self) -> &'static str {
        match self {
            Feature::DeferTaskrun => "6.1",
            Feature::IncrementalBuffers => "6.12",
            Feature::ReceiveLimit => "6.17",
        }
    }

    /// What the engine does without it and what that costs, as measured on
    /// the project's machine (docs/operations.md, "Older kernels").
    pub fn fallback(self) -> &'static str {
        match self {
            Feature::DeferTaskrun => {
                "using a plain ring (completions run as task work at any time instead of at the loop's \
                 wait; measured here: 0.80x SET and 0.69x GET throughput, bench/results/fallbacks.md)"
            }
            Feature::IncrementalBuffers => {
                "receiving into whole buffers, one or more per receive (measured here: SET of 1 KiB \
                 values 0.89x pipelined, at parity unpipelined; bench/results/fallbacks.md)"
            }
            Feature::ReceiveLimit => {
                "no per-client fairness limit: one client's flood can stretch every turn (measured here: \
                 a well-behaved client's SET p99 7.4x under a flood of resets, vs 1.1x with the limit; \
                 bench/results/hostile.md)"
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Parses [`DISABLE_VARIABLE`]'s value: names separated by commas, or
    /// `all`; empty is none.
    pub fn parse_list(text: &str) -> Result<Vec<Feature>, String> {
        let mut features = Vec::new();
        for word in text.split(',').map(str::trim).filter(|word| !word.is_empty()) {
            if word == "all" {
                features.extend(Feature::ALL);
                continue;
            }
            let feature = Feature::ALL.into_iter().find(|f| f.name() == word).ok_or_else(|| {
                let names: Vec<&str> = Feature::ALL.iter().map(|f| f.name()).collect();
                format!("unknown io_uring feature '{word}' in {DISABLE_VARIABLE}: use {} or all", names.join(", "))
            })?;
            features.push(feature);
        }
        Ok(features)
    }

    /// The features [`DISABLE_VARIABLE`] disables (none when it is unset).
    pub fn disabled_by_environment() -> Result<Vec<Feature>, String> {
        match std::env::var(DISABLE_VARIABLE) {
            Ok(text) => Feature::parse_list(&text),
            Err(std::env::VarError::NotPresent) => Ok(Vec::new()),
            Err(error) => Err(format!("{DISABLE_VARIABLE}: {error}")),
        }
    }
}

/// What the probe found: which optional features the engine may use.
#[derive(Clone, Debug)]
pub struct Features {
    /// The running kernel's release (`uname -r`), for the log.
    pub kernel: String,
    present: [bool; 3],
    disabled: [bool; 3],
}

impl Features {
    /// Every feature: what an engine assumes when nobody probed.
    pub fn all() -> Features {
        Features { kernel: kernel_release(), present: [true; 3], disabled: [false; 3] }
    }

    /// Whether the engine may use `feature`.
    pub fn has(&self, feature: Feature) -> bool {
        self.present[feature.index()] && !self.disabled[feature.index()]
    }

    /// The log line for a feature the engine wants and may not use.
    pub fn fallback_line(&self, feature: Feature) -> String {
        let why = if self.disabled[feature.index()] {
            format!("disabled by {DISABLE_VARIABLE}")
        } else {
            format!("not in this kernel ({})", self.kernel)
        };
        format!(
            "io_uring: {} ({}, Linux {}) {why}: {}",
            feature.title(),
            feature.kernel_name(),
            feature.since(),
            feature.fallback()
        )
    }
}

/// io_uring cannot serve here: what is missing, and why.
#[derive(Debug)]
pub enum Unavailable {
    /// io_uring_setup failed: blocked (EPERM, a seccomp profile or the
    /// sysctl) or absent (ENOSYS).
    Setup(io::Error),
    /// A feature the engine cannot do without.
    Missing { what: &'static str, since: &'static str, error: io::Error },
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::Setup(error) => match error.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => write!(
                    f,
                    "io_uring is blocked here (io_uring_setup: {error}): a seccomp profile (a container's \
                     default one) or the kernel.io_uring_disabled sysctl forbids it"
                ),
                Some(libc::ENOSYS) => write!(
                    f,
                    "this kernel has no io_uring (io_uring_setup: {error}): built without it, or hidden by a \
                     seccomp profile"
                ),
                _ => write!(f, "io_uring cannot be set up: {error}"),
            },
            Unavailable::Missing { what, since, error } => {
                write!(f, "this kernel lacks {what} (Linux {since}), which the io_uring engine needs ({error})")
            }
        }
    }
}

impl std::error::Error for Unavailable {}

/// Probes the kernel (a few milliseconds at most; call it once, at start).
/// Features in `disabled` are not probed and are reported absent.
///
/// The probe runs in a thread of its own: requests the scratch ring leaves
/// behind (an armed accept, timeouts) are cancelled when it exits, as task
/// work of that thread. Run in the caller's thread, that work arrived as a
/// signal-like interruption of its next long system call: on Linux 6.1 the
/// pool's creation (fallocate on tmpfs) failed with EINTR.
pub fn probe(disabled: &[Feature]) -> Result<Features, Unavailable> {
    let disabled = disabled.to_vec();
    let prober = std::thread::Builder::new()
        .name("io_uring probe".to_string())
        .spawn(move || probe_in_this_thread(&disabled))
        .map_err(Unavailable::Setup)?;
    prober.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn probe_in_this_thread(disabled: &[Feature]) -> Result<Features, Unavailable> {
    let mut features = Features { kernel: kernel_release(), present: [false; 3], disabled: [false; 3] };
    for feature in disabled {
        features.disabled[feature.index()] = true;
    }
    let wanted = |feature: Feature| !disabled.contains(&feature);
    let (mut ring, defer_taskrun) = setup(wanted(Feature::DeferTaskrun))?;
    features.present[Feature::DeferTaskrun.index()] = defer_taskrun;
    let scratch = Scratch::new(&ring).map_err(|error| Unavailable::Missing {
        what: "provided-buffer rings (IORING_REGISTER_PBUF_RING)",
        since: "5.19",
        error,
    })?;
    accept_multishot(&mut ring).map_err(|error| Unavailable::Missing {
        what: "multishot accept",
        since: "5.19",
        error,
    })?;
    receive(&mut ring, 0).map_err(|error| Unavailable::Missing { what: "multishot receive", since: "6.0", error })?;
    if wanted(Feature::ReceiveLimit) {
        features.present[Feature::ReceiveLimit.index()] = receive(&mut ring, PROBE_LIMIT_BYTES).is_ok();
    }
    if wanted(Feature::IncrementalBuffers) {
        let incremental = BufRing::register(&ring, SCRATCH_ENTRIES, GROUP_INCREMENTAL, true);
        if incremental.is_ok() {
            let _ = ring.submitter().unregister_buf_ring(GROUP_INCREMENTAL);
        }
        features.present[Feature::IncrementalBuffers.index()] = incremental.is_ok();
    }
    scratch.unregister(&ring);
    Ok(features)
}

/// A ring with SINGLE_ISSUER | DEFER_TASKRUN if `defer_taskrun` and the
/// kernel has them, else a plain one; and which it is.
fn setup(defer_taskrun: bool) -> Result<(IoUring, bool), Unavailable> {
    if defer_taskrun {
        match IoUring::builder().setup_single_issuer().setup_defer_taskrun().build(16) {
            Ok(ring) => return Ok((ring, true)),
            Err(error) if blocked(&error) => return Err(Unavailable::Setup(error)),
            Err(_) => {}
        }
    }
    let ring = IoUring::new(16).map_err(Unavailable::Setup)?;
    Ok((ring, false))
}

/// io_uring_setup refused for everyone, whatever the flags.
fn blocked(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::ENOSYS))
}

/// The scratch buffer ring the receive probes use, and its memory.
struct Scratch {
    bufring: BufRing,
    memory: Box<[u8]>,
}

impl Scratch {
    fn new(ring: &IoUring) -> io::Result<Scratch> {
        let bufring = BufRing::register(ring, SCRATCH_ENTRIES, GROUP, false)?;
        let memory = vec![0u8; usize::from(SCRATCH_ENTRIES) * SCRATCH_BUFFER_BYTES as usize].into_boxed_slice();
        let mut scratch = Scratch { bufring, memory };
        for bid in 0..SCRATCH_ENTRIES {
            let at = usize::from(bid) * SCRATCH_BUFFER_BYTES as usize;
            // SAFETY: inside `memory`, which nobody else uses. The kernel
            // writes into it only during a receive probe, and every probe
            // closes its peer socket before it returns (no byte can arrive
            // after), so the memory outlives every write into it, on the
            // error paths too.
            unsafe { scratch.bufring.provide(bid, scratch.memory.as_mut_ptr().add(at), SCRATCH_BUFFER_BYTES) };
        }
        scratch.bufring.publish();
        Ok(scratch)
    }

    /// Unregisters the ring before its memory goes away.
    fn unregister(self, ring: &IoUring) {
        let _ = ring.submitter().unregister_buf_ring(GROUP);
        drop(self.bufring);
        drop(self.memory);
    }
}

/// A multishot accept on a listening socket (an abstract Unix socket: no
/// port, no file) completes with a connection and stays armed.
fn accept_multishot(ring: &mut IoUring) -> io::Result<()> {
    let (listener, address, length) = unix_listener()?;
    let entry =
        opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd())).flags(libc::SOCK_CLOEXEC).build().user_data(1);
    push(ring, entry)?;
    ring.submit()?;
    let client = unix_socket()?;
    // SAFETY: `address` is a sockaddr_un of `length` bytes.
    check(unsafe { libc::connect(client.as_raw_fd(), std::ptr::from_ref(&address).cast(), length) })?;
    let (result, flags) = wait_for(ring, 1)?;
    if result < 0 {
        return Err(io::Error::from_raw_os_error(-result));
    }
    // SAFETY: a descriptor the kernel just gave us, owned from here on.
    drop(unsafe { OwnedFd::from_raw_fd(result) });
    if !cqueue::more(flags) {
        return Err(io::Error::other("the accept ended after one connection: not multishot"));
    }
    Ok(())
}

/// A multishot receive with buffer selection on a socket pair completes
/// with bytes; with `limit_bytes`, it ends (no IORING_CQE_F_MORE) once it
/// has received at least that many.
fn receive(ring: &mut IoUring, limit_bytes: u32) -> io::Result<()> {
    let (ours, peer) = socket_pair()?;
    let tag = 2 + u64::from(limit_bytes);
    let entry = opcode::RecvMulti::new(types::Fd(ours.as_raw_fd()), GROUP).build().user_data(tag);
    let entry = with_optlen(entry, limit_bytes);
    let bytes = [0x5Au8; PROBE_BYTES];
    // SAFETY: writes our own bytes to our socket.
    let written = unsafe { libc::write(peer.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if written != PROBE_BYTES as isize {
        return Err(io::Error::last_os_error());
    }
    push(ring, entry)?;
    let (result, flags) = wait_for(ring, tag)?;
    if result < 0 {
        return Err(io::Error::from_raw_os_error(-result));
    }
    if cqueue::buffer_select(flags).is_none() {
        return Err(io::Error::other("a receive with data named no buffer"));
    }
    // A limited receive ends with the completion that reaches its limit
    // (which may carry more: a plain ring's first, inline, receive takes
    // what the buffer holds); an unlimited one stays armed.
    if limit_bytes != 0 && (cqueue::more(flags) || (result as u32) < limit_bytes) {
        return Err(io::Error::other(format!(
            "the receive did not end at its limit: {result} bytes of {PROBE_BYTES}, limit {limit_bytes}"
        )));
    }
    // Closing the peer ends a receive still armed (end of file).
    drop(peer);
    Ok(())
}

fn push(ring: &mut IoUring, entry: io_uring::squeue::Entry) -> io::Result<()> {
    // SAFETY: every buffer an entry names outlives its completion: the
    // listener and sockets are closed only after it (or the receive ends at
    // end of file); the scratch ring's memory outlives the ring's use.
    unsafe { ring.submission().push(&entry) }.map_err(|_| io::Error::other("the probe ring is full"))
}

/// Waits for the completion tagged `tag`, at most `COMPLETION_WAIT`:
/// its result and flags. Completions of earlier probes are skipped.
fn wait_for(ring: &mut IoUring, tag: u64) -> io::Result<(i32, u32)> {
    let timespec = types::Timespec::from(COMPLETION_WAIT);
    let guard = opcode::Timeout::new(&timespec).build().user_data(TIMEOUT_TAG | tag);
    push(ring, guard)?;
    for _ in 0..COMPLETIONS_MAX {
        ring.submit_and_wait(1)?;
        for completion in ring.completion() {
            if completion.user_data() == tag {
                return Ok((completion.result(), completion.flags()));
            }
            if completion.user_data() == TIMEOUT_TAG | tag {
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
        }
    }
    Err(io::Error::other("too many unrelated completions"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn unix_socket() -> io::Result<OwnedFd> {
    // SAFETY: creates a descriptor, owned from here on.
    let fd: RawFd = check(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: as above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A listening socket in the abstract namespace, unique to this probe.
fn unix_listener() -> io::Result<(OwnedFd, libc::sockaddr_un, libc::socklen_t)> {
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let listener = unix_socket()?;
    // SAFETY: sockaddr_un is plain data; all zero is a valid empty address.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let count = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("packetstore-probe-{}-{count}", std::process::id());
    // sun_path[0] stays 0: the abstract namespace.
    for (slot, byte) in address.sun_path[1..].iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    let length = (std::mem::size_of::<libc::sa_family_t>() + 1 + name.len()) as libc::socklen_t;
    // SAFETY: `address` is a sockaddr_un of at least `length` bytes.
    check(unsafe { libc::bind(listener.as_raw_fd(), std::ptr::from_ref(&address).cast(), length) })?;
    // SAFETY: our socket.
    check(unsafe { libc::listen(listener.as_raw_fd(), 4) })?;
    Ok((listener, address, length))
}

fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: fills two descriptors, owned from here on.
    check(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) })?;
    // SAFETY: as above.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `uname -r`.
pub fn kernel_release() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-parameter.
    if unsafe { libc::uname(&mut name) } != 0 {
        return "unknown".to_string();
    }
    let bytes: Vec<u8> = name.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The kernel's (major, minor) version from its release, if it parses.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Sets a multishot receive's byte limit (`sqe->optlen`, Linux 6.17: the
/// receive ends, without IORING_CQE_F_MORE, once it has received that many
/// bytes; 0: no limit). The io-uring crate has no setter for it.
pub(crate) fn with_optlen(entry: squeue::Entry, optlen: u32) -> squeue::Entry {
    const OPTLEN_OFFSET: usize = 44;
    const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
    // SAFETY: `squeue::Entry` is `#[repr(C)]` around `io_uring_sqe`, 64
    // plain bytes (asserted above); bytes 44..48 are the u32 union of
    // splice_fd_in, file_index and optlen, which a receive leaves zero.
    let mut raw: [u8; 64] = unsafe { std::mem::transmute(entry) };
    debug_assert_eq!(raw[OPTLEN_OFFSET..OPTLEN_OFFSET + 4], [0; 4]);
    raw[OPTLEN_OFFSET..OPTLEN_OFFSET + 4].copy_from_slice(&optlen.to_ne_bytes());
    // SAFETY: any bytes are a valid `io_uring_sqe` (a C struct of integers).
    unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(raw) }
}

#[cfg(test)]
mod tests {
    use super::{kernel_version, probe, Feature};

    /// The probe finds every feature this kernel's version promises (a
    /// probe that wrongly reported a feature missing would cost a fallback
    /// for nothing), and a disabled feature is absent.
    #[test]
    fn the_probe_finds_what_the_kernel_has() {
        let features = probe(&[]).expect("io_uring works where the tests run");
        let version = kernel_version(&features.kernel).expect("a kernel release");
        for feature in Feature::ALL {
            let since = kernel_version(feature.since()).expect("a version");
            if version >= since {
                assert!(features.has(feature), "{feature:?} on {}", features.kernel);
            }
        }
        let none = probe(&Feature::ALL).unwrap();
        assert!(Feature::ALL.iter().all(|&f| !none.has(f)));
        let some = probe(&[Feature::IncrementalBuffers]).unwrap();
        assert!(!some.has(Feature::IncrementalBuffers));
        assert!(some.fallback_line(Feature::IncrementalBuffers).contains("disabled by PACKETSTORE_URING_DISABLE"));
    }

    #[test]
    fn feature_lists_parse() {
        assert_eq!(Feature::parse_list("").unwrap(), vec![]);
        assert_eq!(
            Feature::parse_list("incremental, receive-limit").unwrap(),
            vec![Feature::IncrementalBuffers, Feature::ReceiveLimit]
        );
        assert_eq!(Feature::parse_list("all").unwrap(), Feature::ALL.to_vec());
        let error = Feature::parse_list("incremental,bundles").unwrap_err();
        assert!(error.contains("'bundles'") && error.contains("defer-taskrun"), "{error}");
        assert_eq!(kernel_version("6.1.0-28-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("6.18.44-fc-v595"), Some((6, 18)));
    }
}
