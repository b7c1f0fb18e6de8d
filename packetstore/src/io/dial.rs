//! Outgoing connections an application asks its loop to open (a replica's
//! links to its peers, a follower's links to the leader for the clients it
//! forwards): an io_uring connect, linked to a timeout so that a peer
//! behind a dead link cannot hold a dial for the kernel's two minutes.
//!
//! Owns: each dial's socket, its address and its timeout until the connect
//! completes; then the socket goes to the loop as a connection like an
//! accepted one (the application sees it in `App::connect` with the
//! listener index `DIALED + id`), or is closed and the application told
//! (`App::dial_failed`).
//!
//! Invariant: the address and timespec an in-flight connect names stay at
//! fixed addresses (boxed) until its completion.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use io_uring::{opcode, squeue, types};

pub use crate::io::app::{Dial, DIALED};

struct Pending {
    id: usize,
    fd: OwnedFd,
    addr: Box<(libc::sockaddr_storage, libc::socklen_t)>,
    timeout: Box<types::Timespec>,
}

/// The dials in flight, by slot (the slot is in the completion's user
/// data).
#[derive(Default)]
pub struct Dials {
    slots: Vec<Option<Pending>>,
    free: Vec<u32>,
}

impl Dials {
    /// Makes the socket of `dial` and returns its slot and the two entries
    /// to submit, in order: the connect (linked) and its timeout; the
    /// caller sets their user data.
    pub fn start(&mut self, dial: &Dial) -> io::Result<(u32, squeue::Entry, squeue::Entry)> {
        let domain = if dial.addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
        // SAFETY: plain socket creation; the fd is owned from here on.
        let raw = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just created and nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        crate::io::net::set_nodelay(raw);
        let addr = Box::new(crate::io::net::sockaddr(dial.addr));
        let timeout = Box::new(timespec(dial.timeout));
        let connect =
            opcode::Connect::new(types::Fd(fd.as_raw_fd()), (&addr.0 as *const libc::sockaddr_storage).cast(), addr.1)
                .build()
                .flags(squeue::Flags::IO_LINK);
        let limit = opcode::LinkTimeout::new(&*timeout).build();
        let pending = Pending { id: dial.id, fd, addr, timeout };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(pending);
                slot
            }
            None => {
                self.slots.push(Some(pending));
                self.slots.len() as u32 - 1
            }
        };
        Ok((slot, connect, limit))
    }

    /// The connect of `slot` completed with `result`: the application's id
    /// and the connected socket, or the error.
    pub fn finish(&mut self, slot: u32, result: i32) -> (usize, io::Result<OwnedFd>) {
        let pending = self.slots[slot as usize].take().expect("a dial in flight");
        self.free.push(slot);
        let Pending { id, fd, addr, timeout } = pending;
        drop((addr, timeout));
        match result {
            0 => (id, Ok(fd)),
            r if r == -libc::ECANCELED => (id, Err(io::Error::from(io::ErrorKind::TimedOut))),
            r => (id, Err(io::Error::from_raw_os_error(-r))),
        }
    }

    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

fn timespec(duration: Duration) -> types::Timespec {
    types::Timespec::new().sec(duration.as_secs()).nsec(duration.subsec_nanos())
}
