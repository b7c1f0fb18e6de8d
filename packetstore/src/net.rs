//! Listening sockets: bound with SO_REUSEADDR and, for several event loops
//! on one port, SO_REUSEPORT (the kernel spreads connections over them).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};

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
    // SAFETY: a bound socket.
    check(unsafe { libc::listen(raw, LISTEN_BACKLOG) })?;
    Ok(fd)
}

/// The address a socket is bound to (to learn an ephemeral port).
pub fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    let raw = std::os::fd::AsRawFd::as_raw_fd(fd);
    // SAFETY: sockaddr_storage is plain data, large enough for any address.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: valid out-parameters of the right size.
    check(unsafe { libc::getsockname(raw, (&mut storage as *mut libc::sockaddr_storage).cast(), &mut len) })?;
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

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
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
