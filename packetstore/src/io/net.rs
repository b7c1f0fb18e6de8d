//! Listening sockets: bound with SO_REUSEADDR and, for several event loops
//! on one port, SO_REUSEPORT (the kernel spreads connections over them);
//! bound again, for a bounded time, while their address is in use; and who
//! holds an address, from `/proc/net/tcp`, `/proc/net/tcp6` and
//! `/proc/*/fd`.
//!
//! Why retry: a process killed with SIGKILL may keep its listening socket
//! for a moment after it has been reaped, because its io_uring is torn down
//! by a kernel worker afterwards (measured in `docs/operations.md`); a
//! supervisor that restarts it at once would otherwise get EADDRINUSE.
//!
//! Invariant: `listen_retrying` never binds a socket with SO_REUSEPORT to
//! a fixed port that another socket listens on (checked just before, by
//! an exclusive probe). The kernel lets a socket with SO_REUSEPORT join
//! any listener of the same user that set it too, dead or alive, and would
//! then hand that listener a share of the connections; such a port counts
//! as in use.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Connections waiting to be accepted, per listening socket.
pub const LISTEN_BACKLOG: i32 = 4096;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// A listening TCP socket on `addr`.
pub fn listen(addr: SocketAddr, reuse_port: bool, nonblocking: bool) -> io::Result<OwnedFd> {
    let fd = bound_socket(addr, reuse_port, nonblocking)?;
    // SAFETY: a bound socket.
    check(unsafe { libc::listen(fd.as_raw_fd(), LISTEN_BACKLOG) })?;
    Ok(fd)
}

/// A TCP socket with SO_REUSEADDR (and SO_REUSEPORT if asked), bound to
/// `addr`.
fn bound_socket(addr: SocketAddr, reuse_port: bool, nonblocking: bool) -> io::Result<OwnedFd> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    let mut kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
    if nonblocking {
        kind |= libc::SOCK_NONBLOCK;
    }
    // SAFETY: plain socket creation; the fd is owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(check(libc::socket(domain, kind, 0))?) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    set_option(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuse_port {
        set_option(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let (storage, len) = sockaddr(addr);
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    check(unsafe { libc::bind(raw, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    Ok(fd)
}

/// The first wait of `listen_retrying` between attempts; each wait doubles,
/// up to `BIND_RETRY_INTERVAL_MAX`.
pub const BIND_RETRY_INTERVAL_MIN: Duration = Duration::from_millis(1);
/// The longest wait of `listen_retrying` between attempts (so a port freed
/// is taken within this).
pub const BIND_RETRY_INTERVAL_MAX: Duration = Duration::from_millis(20);

/// `listen`, tried again while the address is in use (EADDRINUSE), until
/// `timeout` has passed; the last EADDRINUSE is returned then, and any
/// other error at once. `on_wait` is called once, when the first attempt
/// finds the address in use. With `reuse_port`, an address that another
/// socket already listens on counts as in use (see the invariant above).
pub fn listen_retrying(
    addr: SocketAddr,
    reuse_port: bool,
    nonblocking: bool,
    timeout: Duration,
    on_wait: impl FnOnce(),
) -> io::Result<OwnedFd> {
    let deadline = Instant::now() + timeout;
    let mut interval = BIND_RETRY_INTERVAL_MIN;
    let mut on_wait = Some(on_wait);
    loop {
        let error = match listen_alone(addr, reuse_port, nonblocking) {
            Err(error) if error.raw_os_error() == Some(libc::EADDRINUSE) => error,
            result => return result,
        };
        if timeout.is_zero() {
            return Err(error);
        }
        if let Some(on_wait) = on_wait.take() {
            on_wait();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(error);
        }
        std::thread::sleep(interval.min(left));
        interval = (interval * 2).min(BIND_RETRY_INTERVAL_MAX);
    }
}

/// `listen`, refusing (EADDRINUSE) to share a fixed port through
/// SO_REUSEPORT with another listener: first a probe without SO_REUSEPORT
/// is bound there, which any listener on the address refuses (a socket
/// that is not listening, such as a connection in TIME_WAIT, does not),
/// then closed. A listener that binds in the moment between the probe and
/// the real socket is not seen; a dead one lingering cannot reappear.
/// (Reading `/proc/net/tcp` instead costs about 0.3 s per attempt on a
/// host with 100,000 connections in TIME_WAIT.)
fn listen_alone(addr: SocketAddr, reuse_port: bool, nonblocking: bool) -> io::Result<OwnedFd> {
    if reuse_port && addr.port() != 0 {
        drop(bound_socket(addr, false, false)?);
    }
    listen(addr, reuse_port, nonblocking)
}

/// The inode of a socket, as `/proc/net/tcp` and `/proc/PID/fd` name it.
#[cfg(test)]
fn socket_inode(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: `stat` is plain data; zero is a valid initial value.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a valid out-parameter.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) })?;
    Ok(stat.st_ino)
}

/// TCP's LISTEN state in `/proc/net/tcp` (`TCP_LISTEN`).
const TCP_STATE_LISTEN: u8 = 0x0A;

/// The inodes of the sockets listening on an address that overlaps `addr`
/// (the same port, and the same IP or a wildcard on either side), in this
/// network namespace. Empty when `/proc` cannot be read.
pub fn listeners_on(addr: SocketAddr) -> Vec<u64> {
    let mut inodes = Vec::new();
    for (path, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        inodes.extend(
            parse_proc_net_tcp(&text, v6)
                .filter(|&(local, state, _)| state == TCP_STATE_LISTEN && overlaps(local, addr))
                .map(|(_, _, inode)| inode),
        );
    }
    inodes
}

/// Whether a socket bound to `a` and one bound to `b` claim the same
/// connections: the same port, and the same IP (IPv4-mapped IPv6 counting
/// as IPv4) or a wildcard on either side.
fn overlaps(a: SocketAddr, b: SocketAddr) -> bool {
    let canonical = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (ip_a, ip_b) = (canonical(a.ip()), canonical(b.ip()));
    a.port() == b.port() && (ip_a == ip_b || ip_a.is_unspecified() || ip_b.is_unspecified())
}

/// The rows of `/proc/net/tcp` (or `tcp6`): local address, state, inode.
/// Rows that do not parse are skipped.
fn parse_proc_net_tcp(text: &str, v6: bool) -> impl Iterator<Item = (SocketAddr, u8, u64)> + '_ {
    text.lines().skip(1).filter_map(move |line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (address, port) = fields.get(1)?.split_once(':')?;
        let ip = if v6 { parse_ipv6_hex(address)? } else { parse_ipv4_hex(address)? };
        let port = u16::from_str_radix(port, 16).ok()?;
        let state = u8::from_str_radix(fields.get(3)?, 16).ok()?;
        let inode = fields.get(9)?.parse().ok()?;
        Some((SocketAddr::new(ip, port), state, inode))
    })
}

/// An IPv4 address as the kernel prints it: the in-memory (network order)
/// 32-bit word, as a hexadecimal number of this machine's byte order.
fn parse_ipv4_hex(hex: &str) -> Option<IpAddr> {
    let word = u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 8)?;
    Some(IpAddr::V4(Ipv4Addr::from(word.to_ne_bytes())))
}

/// An IPv6 address as the kernel prints it: four such words.
fn parse_ipv6_hex(hex: &str) -> Option<IpAddr> {
    if hex.len() != 32 || !hex.is_ascii() {
        return None;
    }
    let mut octets = [0u8; 16];
    for (index, chunk) in octets.chunks_exact_mut(4).enumerate() {
        let word = u32::from_str_radix(&hex[index * 8..index * 8 + 8], 16).ok()?;
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    Some(IpAddr::V6(Ipv6Addr::from(octets)))
}

/// A process with a descriptor for a socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// Its command line (its `comm` if that is empty), at most
    /// `HOLDER_COMMAND_CHARS_MAX` characters.
    pub command: String,
}

/// The longest command line a `Holder` reports.
pub const HOLDER_COMMAND_CHARS_MAX: usize = 120;

/// The processes that hold a descriptor for one of the sockets `inodes`,
/// found by reading every `/proc/PID/fd` this process may read. A socket
/// that no process holds (one being closed by the kernel after its process
/// died, or one in another PID namespace) has none.
pub fn holders(inodes: &[u64]) -> Vec<Holder> {
    let names: Vec<String> = inodes.iter().map(|inode| format!("socket:[{inode}]")).collect();
    let Ok(processes) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in processes.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else { continue };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| names.iter().any(|name| target.as_os_str() == name.as_str()))
        });
        if holds {
            found.push(Holder { pid, command: command_of(pid) });
        }
    }
    found
}

/// A process's command line, spaces for its NULs, else its `comm`.
fn command_of(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut command: String = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_string();
    if command.is_empty() {
        command = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string();
    }
    if command.chars().count() > HOLDER_COMMAND_CHARS_MAX {
        command = command.chars().take(HOLDER_COMMAND_CHARS_MAX).collect::<String>() + "...";
    }
    command
}

/// The address a socket is bound to (to learn an ephemeral port).
pub fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    socket_addr(std::os::fd::AsRawFd::as_raw_fd(fd), false)
}

/// A connected socket's two ends: the peer's address and its own (CLIENT
/// LIST's `addr` and `laddr`); None where the kernel does not say.
pub fn conn_addrs(fd: libc::c_int) -> (Option<SocketAddr>, Option<SocketAddr>) {
    (socket_addr(fd, true).ok(), socket_addr(fd, false).ok())
}

/// The address of a socket's own end (`getsockname`) or of its peer
/// (`getpeername`).
fn socket_addr(raw: libc::c_int, peer: bool) -> io::Result<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data, large enough for any address.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let out = (&mut storage as *mut libc::sockaddr_storage).cast();
    // SAFETY: valid out-parameters of the right size.
    check(unsafe {
        if peer {
            libc::getpeername(raw, out, &mut len)
        } else {
            libc::getsockname(raw, out, &mut len)
        }
    })?;
    match storage.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let v4 = unsafe { *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr));
            Ok(SocketAddr::new(ip.into(), u16::from_be(v4.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let v6 = unsafe { *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = std::net::Ipv6Addr::from(v6.sin6_addr.s6_addr);
            Ok(SocketAddr::new(ip.into(), u16::from_be(v6.sin6_port)))
        }
        family => Err(io::Error::other(format!("unexpected address family {family}"))),
    }
}

/// Disables Nagle: replies are written whole, once per turn.
pub fn set_nodelay(fd: libc::c_int) {
    let _ = set_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
}

fn set_option(fd: libc::c_int, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a valid c_int for the option's size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    })
    .map(drop)
}

pub(crate) fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: plain data; zero is a valid initial value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(v4) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
            (storage, std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
            (storage, std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_rows_parse() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123456 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:A0B2 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 20 4 30 10 -1
";
        let rows: Vec<_> = parse_proc_net_tcp(v4, false).collect();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert_eq!(rows, vec![(local, TCP_STATE_LISTEN, 123456), (local, 1, 0)]);
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:18EC 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
";
        let rows: Vec<_> = parse_proc_net_tcp(v6, true).collect();
        assert_eq!(rows, vec![("[::1]:6380".parse().unwrap(), TCP_STATE_LISTEN, 777)]);
        assert_eq!(parse_proc_net_tcp("header\ngarbage row\n", false).count(), 0);
    }

    #[test]
    fn overlapping_addresses() {
        let at = |text: &str| text.parse::<SocketAddr>().unwrap();
        assert!(overlaps(at("127.0.0.1:80"), at("127.0.0.1:80")));
        assert!(overlaps(at("0.0.0.0:80"), at("127.0.0.1:80")));
        assert!(overlaps(at("[::]:80"), at("127.0.0.1:80")));
        assert!(overlaps(at("[::ffff:127.0.0.1]:80"), at("127.0.0.1:80")));
        assert!(!overlaps(at("127.0.0.1:80"), at("127.0.0.1:81")));
        assert!(!overlaps(at("127.0.0.2:80"), at("127.0.0.1:80")));
    }

    /// A port this process listens on: the retry gives up after its
    /// timeout with EADDRINUSE, having said once that it waits; this
    /// process is the holder; a port freed while it waits is taken.
    #[test]
    fn an_address_in_use_is_retried_then_reported_with_its_holder() {
        let held = listen("127.0.0.1:0".parse().unwrap(), false, false).unwrap();
        let addr = local_addr(&held).unwrap();
        let mut waits = 0;
        let error = listen_retrying(addr, false, false, Duration::from_millis(50), || waits += 1).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EADDRINUSE));
        assert_eq!(waits, 1);
        let inodes = listeners_on(addr);
        assert_eq!(inodes, vec![socket_inode(&held).unwrap()]);
        let found = holders(&inodes);
        assert!(found.iter().any(|h| h.pid == std::process::id()), "{found:?}");
        // SO_REUSEPORT on both sides: the kernel would let it join; it waits.
        let shared = listen("127.0.0.1:0".parse().unwrap(), true, false).unwrap();
        let shared_addr = local_addr(&shared).unwrap();
        let error = listen_retrying(shared_addr, true, false, Duration::from_millis(50), || {}).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EADDRINUSE));
        let freer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        listen_retrying(addr, false, false, Duration::from_secs(60), || {}).expect("the freed port is taken");
        freer.join().unwrap();
    }
}
