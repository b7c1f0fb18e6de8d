//! AF_PACKET sockets: `RawSender` sends whole Ethernet frames on an
//! interface (`packetstore replay`).
//!
//! Invariant: a frame is sent whole or not at all (a short send is an error).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The index of the interface named `name`.
pub fn interface_index(name: &str) -> io::Result<u32> {
    let c_name = CString::new(name).map_err(|_| io::Error::other("an interface name holds a NUL"))?;
    // SAFETY: c_name is NUL-terminated.
    let index = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
    if index == 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("interface {name}: {error}")));
    }
    Ok(index)
}

/// An AF_PACKET raw socket bound to one interface, receiving nothing.
pub struct RawSender {
    fd: OwnedFd,
}

impl RawSender {
    pub fn open(interface: &str) -> io::Result<RawSender> {
        let index = interface_index(interface)?;
        // Protocol 0: the socket receives no frames.
        // SAFETY: plain socket creation.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let error = io::Error::last_os_error();
            return Err(io::Error::new(error.kind(), format!("an AF_PACKET socket (needs CAP_NET_RAW): {error}")));
        }
        // SAFETY: fd was just created and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sockaddr_ll is plain data; all-zero is valid.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_ifindex = index as i32;
        // SAFETY: `address` is a valid sockaddr_ll of the length given.
        let bound = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::from_ref(&address).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if bound != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(RawSender { fd })
    }

    /// Sends one frame, waiting while the interface's queue is full.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: `frame` is readable for its length.
            let sent = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if sent == frame.len() as isize {
                return Ok(());
            }
            if sent >= 0 {
                return Err(io::Error::other(format!("sent {sent} of {} bytes", frame.len())));
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => {
                    std::thread::sleep(std::time::Duration::from_micros(100))
                }
                _ => return Err(error),
            }
        }
    }
}
