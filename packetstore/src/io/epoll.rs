//! The baseline server loop: epoll, read() into private buffers, the same
//! application logic ([`App`]: bodies copied into the pool), sendmsg(). With
//! `CommitPolicy::PerRequest` every request is committed (one fence or one
//! fdatasync) before its reply is written: the paper's "Linux" baseline.
//! With `PerTurn`, one commit covers every request of an epoll_wait turn
//! before the replies are written (Redis's group commit).
//!
//! Private buffers are 16 KiB chunks recycled through a free list; a
//! stream segment names its chunk, and a consumed chunk returns to the list.
//!
//! Stopping, as the io_uring engine does: once `stop` is set (the wake
//! descriptor gets the loop out of epoll_wait), the loop stops accepting
//! (its listeners are shut down) and reading; what it received was served
//! and committed in the turn that read it, so it sends every reply and
//! closes each connection once its replies are out, within `DRAIN_TIMEOUT`
//! for peers that do not read. `is_drained` says whether every connection
//! closed in time.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::io::app::{App, ConnToken};
use crate::io::outq::OutQueue;
use crate::io::stream::{Segment, Source, Stream};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;

const CHUNK_SIZE: usize = 16 * 1024;
/// Bytes read from one connection per turn before moving on (fairness).
const READ_PER_TURN_MAX: usize = 256 * 1024;
const EVENTS_MAX: usize = 1024;
const LISTENER_TOKEN: u64 = u64::MAX;
/// The stop eventfd (`set_wake_fd`): it only wakes the loop up.
const WAKE_TOKEN: u64 = u64::MAX / 2;
/// Slices one sendmsg carries.
const IOV_MAX: usize = 64;
/// Stopping: how long the loop waits for peers to read their replies (the
/// io_uring engine's default `drain_timeout`).
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// Stopping: how often a drain that waits wakes up to check its deadline.
const DRAIN_CHECK_MS: i32 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitPolicy {
    PerRequest,
    PerTurn,
}

impl CommitPolicy {
    /// As `--commit` names it.
    pub fn name(self) -> &'static str {
        match self {
            CommitPolicy::PerRequest => "per-request",
            CommitPolicy::PerTurn => "per-turn",
        }
    }
}

struct Conn<C> {
    fd: RawFd,
    /// Tells this connection from the slot's earlier and later ones.
    generation: u32,
    stream: Stream,
    state: C,
    /// Replies; ready (sendable) once committed.
    out: OutQueue,
    closing: bool,
    /// The peer sent everything it will: close once it is all served.
    eof: bool,
    writable_wanted: bool,
}

/// Private receive chunks.
#[derive(Default)]
struct Chunks {
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
}

impl Chunks {
    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.chunks.push(vec![0u8; CHUNK_SIZE].into_boxed_slice());
            (self.chunks.len() - 1) as u32
        })
    }
}

pub struct EpollServer<'a, A: App> {
    pool: &'a Pool,
    buffers: &'a mut Buffers,
    app: &'a mut A,
    policy: CommitPolicy,
    epoll: OwnedFd,
    listeners: Vec<OwnedFd>,
    conns: Vec<Option<Conn<A::Conn>>>,
    free_slots: Vec<u32>,
    chunks: Chunks,
    touched: Vec<u32>,
    /// The wake descriptor, removed from the set when the drain begins.
    wake_fd: Option<RawFd>,
    /// Stopping: the drain's deadline, once it began.
    draining_until: Option<Instant>,
    /// The last connection's generation.
    generation: u32,
    /// Connections the application asked to serve (`App::take_wakeups`).
    wake: Vec<ConnToken>,
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

impl<'a, A: App> EpollServer<'a, A> {
    /// Serves on `listeners`, or on a new listener at `listen` if none are
    /// given. A listener from the caller must be non-blocking (several
    /// loops share a port with SO_REUSEPORT).
    pub fn new(
        pool: &'a Pool,
        buffers: &'a mut Buffers,
        app: &'a mut A,
        listen: SocketAddr,
        policy: CommitPolicy,
        listeners: Vec<OwnedFd>,
    ) -> io::Result<Self> {
        let listeners =
            if listeners.is_empty() { vec![crate::io::net::listen(listen, false, true)?] } else { listeners };
        // SAFETY: creates a new descriptor, owned from here on.
        let epoll = unsafe {
            <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?)
        };
        let server = EpollServer {
            pool,
            buffers,
            app,
            policy,
            epoll,
            listeners,
            conns: Vec::new(),
            free_slots: Vec::new(),
            chunks: Chunks::default(),
            touched: Vec::new(),
            generation: 0,
            wake: Vec::new(),
            wake_fd: None,
            draining_until: None,
        };
        for (index, listener) in server.listeners.iter().enumerate() {
            server.control(
                libc::EPOLL_CTL_ADD,
                listener.as_raw_fd(),
                libc::EPOLLIN as u32,
                LISTENER_TOKEN - index as u64,
            )?;
        }
        Ok(server)
    }

    /// Stopping: `fd` (an eventfd) becomes readable when the caller's
    /// `stop` flag is set, so that this loop wakes up to see it.
    pub fn set_wake_fd(&mut self, fd: RawFd) -> io::Result<()> {
        self.control(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, WAKE_TOKEN)?;
        self.wake_fd = Some(fd);
        Ok(())
    }

    /// The address of the first listener.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        crate::io::net::local_addr(&self.listeners[0])
    }

    fn control(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: valid descriptors and event struct.
        check(unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) }).map(drop)
    }

    /// Runs turns until `stop` is set (checked once per turn), then drains
    /// (see "Stopping" above) and returns.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS_MAX];
        loop {
            if (stop.load(Ordering::Relaxed) || self.app.stop_requested()) && self.draining_until.is_none() {
                self.begin_drain()?;
            }
            if let Some(deadline) = self.draining_until {
                if self.is_drained() || Instant::now() >= deadline {
                    return Ok(());
                }
            }
            // The application's tick (expiry, timeouts) runs at its interval
            // even when no I/O arrives.
            let tick_ms = self.app.tick_interval().map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
            let timeout_ms = if self.draining_until.is_some() {
                DRAIN_CHECK_MS
            } else if !self.wake.is_empty() {
                // Connections to serve again (a paused script goes on).
                0
            } else {
                tick_ms
            };
            // SAFETY: `events` has EVENTS_MAX entries.
            let n =
                unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), events.as_mut_ptr(), EVENTS_MAX as i32, timeout_ms) };
            if n < 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(error);
            }
            for event in &events[..n as usize] {
                let (token, flags) = (event.u64, event.events);
                if token == WAKE_TOKEN {
                    continue;
                }
                if token > LISTENER_TOKEN - self.listeners.len() as u64 {
                    self.accept_all((LISTENER_TOKEN - token) as usize)?;
                    continue;
                }
                let slot = token as u32;
                if self.draining_until.is_some() {
                    // Writable, or the peer went away: send, or close.
                    self.write_out(slot)?;
                    continue;
                }
                if flags & libc::EPOLLOUT as u32 != 0 {
                    self.write_out(slot)?;
                }
                if flags & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                    self.read_and_serve(slot)?;
                }
            }
            self.app.tick(self.pool, self.buffers);
            self.wake_connections()?;
            if self.policy == CommitPolicy::PerTurn || self.app.needs_commit() {
                self.commit()?;
            }
            let touched = std::mem::take(&mut self.touched);
            for &slot in &touched {
                self.write_out(slot)?;
            }
            self.touched = touched;
            self.touched.clear();
            // Wake-ups asked for during this turn are served next turn,
            // which then does not wait.
            self.app.take_wakeups(&mut self.wake);
        }
    }

    /// Serves the connections the application asked for although nothing
    /// arrived for them.
    fn wake_connections(&mut self) -> io::Result<()> {
        let mut wake = std::mem::take(&mut self.wake);
        self.app.take_wakeups(&mut wake);
        for token in wake.drain(..) {
            let Some(Some(conn)) = self.conns.get(token.slot as usize) else { continue };
            if conn.generation == token.generation && !conn.closing {
                self.serve(token.slot)?;
            }
        }
        self.wake = wake;
        Ok(())
    }

    /// Whether every connection is closed (after a drain: it did not time
    /// out).
    pub fn is_drained(&self) -> bool {
        self.conns.len() == self.free_slots.len()
    }

    /// Stopping: no more connections and no more reading. The previous turn
    /// committed and readied every reply of what it read; each connection
    /// closes once they are out (watching only for writability).
    fn begin_drain(&mut self) -> io::Result<()> {
        self.draining_until = Some(Instant::now() + DRAIN_TIMEOUT);
        tracing::info!(
            connections = self.conns.len() - self.free_slots.len(),
            "stopping: no new connections; sending the replies of what was received"
        );
        if let Some(fd) = self.wake_fd.take() {
            // It stays readable: it would wake every wait of the drain.
            self.control(libc::EPOLL_CTL_DEL, fd, 0, WAKE_TOKEN)?;
        }
        for listener in &self.listeners {
            let fd = listener.as_raw_fd();
            self.control(libc::EPOLL_CTL_DEL, fd, 0, 0)?;
            // SAFETY: our descriptor. A listening socket shut down refuses
            // new connections.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        if self.app.needs_commit() {
            self.app.commit(self.pool, self.buffers).map_err(|e| io::Error::other(format!("commit failed: {e}")))?;
        }
        for slot in 0..self.conns.len() as u32 {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            conn.closing = true;
            conn.out.ready_all();
            conn.writable_wanted = false;
            let fd = conn.fd;
            // Level-triggered EPOLLIN would fire for unread input forever;
            // `write_out` asks for EPOLLOUT if the replies do not fit.
            self.control(libc::EPOLL_CTL_MOD, fd, 0, u64::from(slot))?;
            self.write_out(slot)?;
        }
        Ok(())
    }

    /// Commits, then lets `slot`'s replies go.
    fn commit_one(&mut self, slot: u32) -> io::Result<()> {
        if self.app.needs_commit() {
            self.app.commit(self.pool, self.buffers).map_err(|e| io::Error::other(format!("commit failed: {e}")))?;
        }
        if let Some(conn) = self.conns[slot as usize].as_mut() {
            conn.out.ready_all();
        }
        Ok(())
    }

    /// Commits, then lets every touched connection's replies go.
    fn commit(&mut self) -> io::Result<()> {
        if self.app.needs_commit() {
            self.app.commit(self.pool, self.buffers).map_err(|e| io::Error::other(format!("commit failed: {e}")))?;
        }
        for &slot in &self.touched {
            if let Some(conn) = self.conns[slot as usize].as_mut() {
                conn.out.ready_all();
            }
        }
        Ok(())
    }

    fn accept_all(&mut self, listener: usize) -> io::Result<()> {
        loop {
            // SAFETY: no address wanted; flags make the socket non-blocking.
            let fd = unsafe {
                libc::accept4(
                    self.listeners[listener].as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                let error = io::Error::last_os_error();
                return match error.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::ECONNABORTED) | Some(libc::EINTR) => Ok(()),
                    Some(libc::EMFILE) | Some(libc::ENFILE) => Ok(()),
                    _ => Err(error),
                };
            }
            crate::io::net::set_nodelay(fd);
            self.generation = self.generation.wrapping_add(1);
            let token = ConnToken {
                slot: self.free_slots.last().copied().unwrap_or(self.conns.len() as u32),
                generation: self.generation,
            };
            let mut conn = Conn {
                fd,
                generation: self.generation,
                stream: Stream::new(),
                state: self.app.connect(listener, token),
                out: OutQueue::new(),
                closing: false,
                eof: false,
                writable_wanted: false,
            };
            let (peer, local) = crate::io::net::conn_addrs(fd);
            self.app.accepted(&mut conn.state, fd, peer, local);
            let slot = crate::io::slots::insert(&mut self.conns, &mut self.free_slots, conn);
            assert_eq!(slot, token.slot, "the token given to the application names the slot taken");
            self.control(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, u64::from(slot))?;
        }
    }

    fn read_and_serve(&mut self, slot: u32) -> io::Result<()> {
        let Some(conn) = self.conns[slot as usize].as_mut() else { return Ok(()) };
        let mut read_total = 0;
        while read_total < READ_PER_TURN_MAX && !conn.closing && !conn.eof {
            let id = self.chunks.take();
            let chunk = &mut self.chunks.chunks[id as usize];
            // SAFETY: reads at most CHUNK_SIZE bytes into our chunk.
            let n = unsafe { libc::read(conn.fd, chunk.as_mut_ptr().cast(), CHUNK_SIZE) };
            if n <= 0 {
                self.chunks.free.push(id);
                let error = io::Error::last_os_error();
                if n < 0 && matches!(error.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                    break;
                }
                conn.eof = true; // EOF or error: serve what came, then close
                break;
            }
            read_total += n as usize;
            // SAFETY: the chunk stays allocated and unwritten until the
            // stream releases the segment (it is off the free list).
            conn.stream.push(unsafe { Segment::new(Source::Private(id), chunk.as_ptr(), 0, n as u32) });
        }
        self.serve(slot)
    }

    fn serve(&mut self, slot: u32) -> io::Result<()> {
        let requests_max = if self.policy == CommitPolicy::PerRequest { 1 } else { usize::MAX };
        loop {
            let conn = self.conns[slot as usize].as_mut().expect("live");
            if conn.closing {
                // The protocol said close: what is left is never parsed.
                break;
            }
            let free = &mut self.chunks.free;
            let mut release = |segment: Segment, buffers: &mut Buffers| match segment.source {
                Source::Private(id) => free.push(id),
                Source::Pool(buffer) => {
                    buffers.release(buffer).expect("a referenced buffer");
                }
                Source::Heap => unreachable!("the stream releases its own heap segments"),
            };
            let progress = self.app.on_input(
                self.pool,
                self.buffers,
                &mut conn.state,
                &mut conn.stream,
                &mut conn.out,
                requests_max,
                &mut release,
            );
            conn.closing |= progress.close;
            if progress.more && !progress.close {
                // The application's batch is full: commit it, go on.
                self.commit_one(slot)?;
                continue;
            }
            if self.policy == CommitPolicy::PerRequest && (progress.requests > 0 || progress.close) {
                // The paper's baseline: durable, then the reply, per request.
                self.commit()?;
                if let Some(conn) = self.conns[slot as usize].as_mut() {
                    conn.out.ready_all();
                }
                self.write_out(slot)?;
                if self.conns[slot as usize].is_some() && !progress.close {
                    continue;
                }
            }
            break;
        }
        if let Some(conn) = self.conns[slot as usize].as_mut() {
            conn.closing |= conn.eof;
            self.touched.push(slot);
        }
        Ok(())
    }

    /// Writes what is queued; closes the connection when it is done.
    fn write_out(&mut self, slot: u32) -> io::Result<()> {
        let Some(conn) = self.conns[slot as usize].as_mut() else { return Ok(()) };
        let buffers = &mut *self.buffers;
        let mut release = |buffer: u32| {
            buffers.release(buffer).expect("a reply part holds a reference");
        };
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(IOV_MAX);
        while conn.out.has_ready() {
            iov.clear();
            conn.out.pin_for_send();
            conn.out
                .slices(IOV_MAX, |ptr, len| iov.push(libc::iovec { iov_base: ptr as *mut libc::c_void, iov_len: len }));
            // SAFETY: a message over the queue's ready slices, valid until
            // the queue advances past them (after this call).
            let n = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = iov.as_mut_ptr();
                msg.msg_iovlen = iov.len();
                libc::sendmsg(conn.fd, &msg, libc::MSG_NOSIGNAL)
            };
            if n < 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EAGAIN) {
                    if !conn.writable_wanted {
                        conn.writable_wanted = true;
                        let fd = conn.fd;
                        let reading = if self.draining_until.is_some() { 0 } else { libc::EPOLLIN };
                        self.control(libc::EPOLL_CTL_MOD, fd, (reading | libc::EPOLLOUT) as u32, u64::from(slot))?;
                    }
                    return Ok(());
                }
                conn.closing = true;
                conn.out.clear(&mut release);
                break;
            }
            conn.out.advance(n as usize, &mut release);
        }
        if conn.writable_wanted {
            conn.writable_wanted = false;
            let fd = conn.fd;
            let reading = if self.draining_until.is_some() { 0 } else { libc::EPOLLIN };
            self.control(libc::EPOLL_CTL_MOD, fd, reading as u32, u64::from(slot))?;
        }
        let conn = self.conns[slot as usize].as_mut().expect("live");
        if conn.closing && conn.out.is_empty() {
            let mut conn = self.conns[slot as usize].take().expect("live");
            let free = &mut self.chunks.free;
            conn.stream.clear(|segment| {
                if let Source::Private(id) = segment.source {
                    free.push(id);
                }
            });
            self.app.abandon(self.buffers, &mut conn.state);
            // SAFETY: our descriptor; nothing else refers to it.
            unsafe { libc::close(conn.fd) };
            self.free_slots.push(slot);
        }
        Ok(())
    }
}

impl<A: App> Drop for EpollServer<'_, A> {
    fn drop(&mut self) {
        for conn in self.conns.iter_mut().filter_map(Option::take) {
            // SAFETY: our descriptor.
            unsafe { libc::close(conn.fd) };
        }
    }
}
