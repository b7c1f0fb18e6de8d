//! The PASTE engine on io_uring: many TCP connections multiplexed over one
//! provided-buffer ring whose buffers are pool buffers, one system call per
//! loop turn, replies held until the turn's commit.
//!
//! # One loop turn
//!
//! 1. `io_uring_enter` submits everything queued in the previous turn and
//!    waits for at least one completion (or, busy polling, does not wait).
//! 2. Reap every completion: accepts (arm a multishot receive for the new
//!    connection), received segments (append to the connection's stream;
//!    swap a fresh buffer in under the same bid), send completions.
//! 3. Give each connection with new bytes to the application ([`App`]: the
//!    WAL server or the key-value server), which parses requests, logs
//!    mutating ones where they landed, and queues replies (inline bytes, or
//!    references to pool bytes for zero-copy reads). Nothing is sent yet.
//!    Then the application's background work (`App::tick`).
//! 4. Commit: one fence for every record of the turn (cache-line, byte and
//!    none domains). In the page domain the turn instead starts an
//!    fdatasync through the ring (if none is in flight) and holds the
//!    turn's replies until the sync covering them completes; receiving and
//!    parsing go on meanwhile. A reply never leaves before every record
//!    appended before it is durable.
//! 5. Queue the sends of the replies (one send, or a sendmsg whose iovecs
//!    point at pool bytes: the reply holds a reference on each such buffer
//!    until the send completes), re-provide buffers, re-arm receives
//!    stopped by -ENOBUFS or by their byte limit; they are submitted by the
//!    next turn's enter.
//!
//! # Fairness
//!
//! A multishot receive ends after `turn_receive_bytes` (the kernel's
//! per-request byte limit, `sqe->optlen`, Linux 6.17) and is re-armed at
//! the end of the turn. So one connection's receive work per turn is
//! bounded: a peer streaming a large value (or a flood of abandoned ones)
//! cannot make a turn, and the latency of every other connection's
//! requests, grow with its bandwidth. Kernels without the limit refuse it
//! (-EINVAL): the start-up probe (`probe.rs`, [`EngineConfig::adapt_to`])
//! turns it off beforehand, and an engine configured without a probe drops
//! it at the first refusal and goes on without.
//!
//! # Older kernels
//!
//! `probe.rs` finds which optional features the kernel has;
//! [`EngineConfig::adapt_to`] turns off those it lacks (a plain ring for
//! SINGLE_ISSUER | DEFER_TASKRUN, whole buffers for incremental
//! consumption, no receive limit), logging one line each.
//!
//! # Buffers
//!
//! Zero copy: every ring entry points at a pool buffer with one reference
//! (the ring's). With whole-buffer consumption, a completion moves that
//! reference to the connection's stream, and the bid is provided again at
//! once with a freshly allocated pool buffer (PASTE's swap). With
//! incremental consumption (the default), the kernel packs receives, of any
//! connection, into the buffer until it is full: each segment takes a
//! reference of its own, and when the kernel retires the buffer (no
//! BUF_MORE) the ring's reference is dropped and the bid swapped. A request whose body is logged takes its own
//! references; when the stream has consumed a segment, it drops its
//! reference, so a buffer returns to the free list exactly when no record,
//! request or stream needs it. If the pool has no free buffer, the bid waits
//! (`starved`) and is provided when one frees up.
//!
//! Copy and off: the ring's entries point at private memory; a consumed
//! segment's bid is provided again with the same memory.
//!
//! # Stopping
//!
//! Once `stop` is set (a signal handler also writes `wake_fd`, an eventfd
//! every loop polls, so that loops asleep in the kernel wake up), the loop
//! drains: it stops accepting (its listeners are shut down, so new
//! connections are refused), stops reading, serves and commits what it has
//! already received, sends every reply, and closes each connection once its
//! replies are out; it returns when none is left, or after `drain_timeout`
//! for peers that do not read. Nothing acknowledged is left unsent unless
//! its peer stops reading.
//!
//! Invariant: every buffer is in exactly one place: the ring, a stream, a
//! starved bid's absence, or the free list (plus record and request
//! references); a closed connection releases all of its stream's segments
//! and abandons its request.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::io::app::{App, ConnToken, Dial, IoCounters, Persist, DIALED};
use crate::io::bufring::BufRing;
use crate::io::dial::Dials;
use crate::io::outq::{Mark, OutQueue};
use crate::io::probe::{with_optlen, Feature, Features};
use crate::io::stream::{Segment, Source, Stream};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::pool::persist::AsyncSync;

const OP_ACCEPT: u64 = 1;
const OP_RECV: u64 = 2;
const OP_SEND: u64 = 3;
const OP_SYNC: u64 = 4;
const OP_TIMER: u64 = 5;
const OP_CANCEL: u64 = 6;
const OP_POLL: u64 = 7;
const OP_WAKE: u64 = 8;
const OP_CONNECT: u64 = 9;
const OP_NUDGE: u64 = 10;
/// A stream of more segments than this (a peer trickling bytes, or input
/// waiting while paused) is coalesced into one, if it holds at most
/// `COALESCE_BYTES_MAX` bytes.
const STREAM_SEGMENTS_MAX: usize = 32;
const COALESCE_BYTES_MAX: usize = 256 << 10;
/// Slices one send may carry (iovecs of a sendmsg).
const SEND_SLICES_MAX: usize = 64;
/// The default `turn_receive_bytes`: 32 buffers of 2 KiB, what the kernel
/// receives in one pass of a multishot receive before it requeues it.
pub const TURN_RECEIVE_BYTES: u32 = 64 << 10;
const BUFFER_GROUP: u16 = 0;
/// The most fdatasyncs in flight at once (page domain).
pub const SYNCS_IN_FLIGHT_MAX: usize = 16;
/// io_uring_enter flag: wait for (and run the task work of) completions.
const IORING_ENTER_GETEVENTS: u32 = 1;
/// Size of a private receive buffer (copy and off modes).
const PRIVATE_BUFFER_SIZE: u32 = 2048;

#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub listen: SocketAddr,
    /// Provided buffers in the ring (a power of two, at most 32768).
    pub ring_entries: u16,
    /// Submission queue entries.
    pub queue_entries: u32,
    pub connections_max: usize,
    pub busy_poll: bool,
    pub reuse_port: bool,
    /// Page domain: fdatasyncs kept in flight at once (1..=16), each
    /// covering everything appended before it began.
    pub syncs_in_flight: usize,
    /// Zero copy only: incremental buffer consumption (IOU_PBUF_RING_INC):
    /// receives pack into a pool buffer until it is full, so small
    /// requests share buffers and pages instead of taking one each.
    pub incremental: bool,
    /// Back-pressure: a connection with this many reply bytes unsent is
    /// paused (its requests are not served) until its peer has read half.
    pub out_pause_bytes: u64,
    /// A paused connection stops receiving once this many request bytes
    /// wait: the socket's buffer then fills and TCP stops the peer.
    pub input_pause_bytes: usize,
    /// A paused connection whose peer reads nothing for this long is
    /// disconnected.
    pub stall_timeout: Duration,
    /// Fairness: a connection's receive stops after this many bytes and is
    /// re-armed for the next turn (0: no limit).
    pub turn_receive_bytes: u32,
    /// Stopping: a descriptor (an eventfd) that becomes readable when the
    /// caller's `stop` flag is set, so that a loop asleep wakes up.
    pub wake_fd: Option<RawFd>,
    /// Another thread's call for this loop (an eventfd it writes): when it
    /// becomes readable the loop reads it and calls `App::nudged` at the
    /// end of that turn, once the turn's commit has begun (a shard asked to take part in a transaction
    /// across shards, `apps/kv/txn.rs`).
    pub nudge_fd: Option<RawFd>,
    /// Stopping: how long the loop waits for replies to be read.
    pub drain_timeout: Duration,
    /// Set up the ring with SINGLE_ISSUER | DEFER_TASKRUN (Linux 6.1):
    /// completions' task work runs when the loop waits, not whenever the
    /// kernel likes.
    pub defer_taskrun: bool,
    /// Connected sockets the loop serves from its start, each as a
    /// connection of the listener index given (which need not be a
    /// listener of its: the application tells them apart by it). The loop
    /// owns and closes them; their output is never paused (the application
    /// bounds it). Shards' links to each other (socketpairs).
    pub adopt: Vec<(RawFd, usize)>,
    /// The process's limit on accepted connections, shared by its loops
    /// (a sharded server: `--connections-max` is the process's, whatever
    /// loop the kernel gives a connection to). `connections_max` still
    /// bounds each loop's own, links included.
    pub clients: Option<Arc<SharedLimit>>,
    /// This loop logs the stop's line (one loop of a process does: a
    /// sharded server's shard 0, with the process's connection count).
    pub logs_stop: bool,
}

/// Accepted connections of every loop of a process against one limit.
#[derive(Debug)]
pub struct SharedLimit {
    open: AtomicUsize,
    max: usize,
    /// When a loop last logged refusals (ms past `made`, 0: never).
    logged_ms: std::sync::atomic::AtomicU64,
    made: Instant,
}

impl SharedLimit {
    pub fn new(max: usize) -> Arc<SharedLimit> {
        Arc::new(SharedLimit {
            open: AtomicUsize::new(0),
            max,
            logged_ms: std::sync::atomic::AtomicU64::new(0),
            made: Instant::now(),
        })
    }

    /// Takes a place, if one is left.
    fn take(&self) -> bool {
        if self.open.fetch_add(1, Ordering::AcqRel) < self.max {
            return true;
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
        false
    }

    /// Whether a refusal may be logged now: one line per 10 s for all the
    /// loops together.
    fn may_log(&self) -> bool {
        let now_ms = self.made.elapsed().as_millis() as u64 + 1;
        let last = self.logged_ms.load(Ordering::Acquire);
        (last == 0 || now_ms >= last + 10_000)
            && self.logged_ms.compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// The places taken now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    fn give_back(&self) {
        let was = self.open.fetch_sub(1, Ordering::AcqRel);
        assert!(was > 0, "a place given back was taken");
    }
}

impl EngineConfig {
    /// Turns off what the kernel lacks (or `PACKETSTORE_URING_DISABLE`
    /// disables), as `features` (the start-up probe) says, logging one line
    /// per feature this configuration wanted and may not have. Call it
    /// once per process: every loop of a server shares the result.
    pub fn adapt_to(self, features: &Features) -> EngineConfig {
        let wanted = [
            (Feature::DeferTaskrun, self.defer_taskrun),
            (Feature::IncrementalBuffers, self.incremental),
            (Feature::ReceiveLimit, self.turn_receive_bytes != 0),
        ];
        for (feature, wants) in wanted {
            if wants && !features.has(feature) {
                tracing::warn!("{}", features.fallback_line(feature));
            }
        }
        self.adapt_quietly(features)
    }

    /// `adapt_to` without its log lines: for every loop of a process but
    /// the one that logs them (a sharded server's shard 0).
    pub fn adapt_quietly(mut self, features: &Features) -> EngineConfig {
        self.defer_taskrun &= features.has(Feature::DeferTaskrun);
        self.incremental &= features.has(Feature::IncrementalBuffers);
        if !features.has(Feature::ReceiveLimit) {
            self.turn_receive_bytes = 0;
        }
        self
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            listen: "127.0.0.1:8080".parse().expect("a socket address"),
            ring_entries: 4096,
            queue_entries: 4096,
            connections_max: 16_384,
            busy_poll: false,
            reuse_port: false,
            syncs_in_flight: 1,
            incremental: false,
            out_pause_bytes: 4 << 20,
            input_pause_bytes: 256 << 10,
            stall_timeout: Duration::from_secs(60),
            turn_receive_bytes: TURN_RECEIVE_BYTES,
            wake_fd: None,
            nudge_fd: None,
            drain_timeout: Duration::from_secs(5),
            defer_taskrun: true,
            adopt: Vec::new(),
            clients: None,
            logs_stop: true,
        }
    }
}

/// Counters of the engine, for metrics and tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineStats {
    pub turns: u64,
    pub completions: u64,
    pub accepted: u64,
    pub refused: u64,
    pub closed: u64,
    pub received_bytes: u64,
    pub enobufs: u64,
    pub starved_bids_max: u64,
    /// Connections paused because their peer did not read replies.
    pub paused: u64,
    /// ... and disconnected because it went on not reading.
    pub stalled: u64,
    /// Streams of many small segments copied into one (trickling peers).
    pub coalesced: u64,
    /// Connections closed because their peer reset while they waited for
    /// receive buffers.
    pub reset_while_starved: u64,
    /// Receives ended by `turn_receive_bytes` (and re-armed).
    pub receive_limited: u64,
    /// The most bytes one connection received in one turn.
    pub turn_received_max: u64,
}

struct InFlightSync<T> {
    ticket: T,
    token: crate::pool::persist::SyncToken,
    epoch: u64,
    result: Option<i32>,
}

struct Conn<C> {
    fd: RawFd,
    generation: u32,
    stream: Stream,
    state: C,
    /// Replies: sent up to its ready mark. `classified` is where this
    /// turn's replies begin (the end of those already ready or held).
    out: OutQueue,
    classified: Mark,
    /// Replies waiting for a sync (asynchronous commits): the (epoch, end)
    /// marks saying which sync releases which prefix.
    held_marks: std::collections::VecDeque<(u64, Mark)>,
    /// The send in flight: its iovecs and message header (their addresses
    /// stay fixed until the completion), and its length.
    iov: Vec<libc::iovec>,
    msg: Box<libc::msghdr>,
    send_len: usize,
    send_in_flight: bool,
    /// Its unsent replies were abandoned while a send was in flight: the
    /// queue is cleared once that send completes (the kernel reads its
    /// bytes until then; clearing at once released pool buffers it was
    /// still sending and left its completion nothing to advance over).
    clear_after_send: bool,
    recv_armed: bool,
    /// Bytes received in turn `received_turn` (fairness figures).
    received_in_turn: u64,
    received_turn: u64,
    /// Back-pressure: the peer is behind reading replies, so its requests
    /// wait; since when it has read nothing (a stall).
    paused_since: Option<Instant>,
    /// An AsyncCancel of the receive is in flight (paused input).
    recv_cancelling: bool,
    /// The application left its input waiting on something other than
    /// more bytes (`Progress::waits`): past `input_pause_bytes` it stops
    /// receiving too, as a paused connection does.
    input_waits: bool,
    /// Its receive was cancelled for paused input and not armed again.
    input_stopped: bool,
    /// A poll for a reset is armed (while the receive waits for buffers),
    /// and whether its cancel was sent (closing).
    poll_armed: bool,
    poll_cancelling: bool,
    /// Stop reading: the peer closed, failed, or the protocol said so.
    closing: bool,
    /// The protocol said close: what is left of its input is never parsed
    /// (a peer that closed may still have requests to serve; this may not).
    app_closed: bool,
    /// Closing only because the peer closed its side (a receive ended
    /// with 0): its socket still sends, so replies the application still
    /// owes it (`App::awaits_replies`) go out before it closes.
    peer_eof_only: bool,
    /// It holds a place of `EngineConfig::clients`, given back at close.
    placed: bool,
    shut_down: bool,
    dirty: bool,
}

impl<C> Conn<C> {
    /// Closing, but may still be served: its peer only half-closed, and
    /// the application did not close it.
    fn half_closed(&self) -> bool {
        self.closing && self.peer_eof_only && !self.app_closed
    }

    /// Whether its input is paused: it is not served for now (paused for
    /// output, or the application waits) and `limit_bytes` of requests
    /// already wait.
    fn input_paused(&self, limit_bytes: usize) -> bool {
        (self.paused_since.is_some() || self.input_waits) && self.stream.len() >= limit_bytes
    }

    /// Closing for a reason that ends sending too (a reset, a failed send,
    /// a stall, the server stopping).
    fn close_hard(&mut self) {
        self.closing = true;
        self.peer_eof_only = false;
    }
}

/// Where the ring's buffers live.
enum Backing {
    /// Zero copy: `table[bid]` is the pool buffer provided under `bid`;
    /// `used[bid]` how much of it the kernel filled (incremental rings).
    Pool { table: Vec<u32>, used: Vec<u32>, starved: Vec<u16>, incremental: bool },
    /// Copy and off: bid `b` is `memory[b * size..]`.
    Private { memory: *mut u8, len: usize },
}

pub struct Engine<'a, A: App> {
    pool: &'a Pool,
    buffers: &'a mut Buffers,
    app: &'a mut A,
    config: EngineConfig,
    // Field order matters for drop: the ring goes before the buffer ring.
    ring: IoUring,
    bufring: BufRing,
    backing: Backing,
    /// The listeners; a connection tells the application which one it
    /// came through (the key-value server speaks HTTP on one, RESP on the
    /// other).
    listeners: Vec<OwnedFd>,
    conns: Vec<Option<Conn<A::Conn>>>,
    free_slots: Vec<u32>,
    generation: u32,
    dirty: Vec<u32>,
    /// Connections the application asked to serve (`App::take_wakeups`).
    wake: Vec<ConnToken>,
    /// `wake_connections`' scratch: the slots it puts first.
    woken: Vec<u32>,
    /// Connections that may have something to send or to close.
    pending: Vec<u32>,
    rearm: Vec<u32>,
    /// Connections whose receive stopped with -ENOBUFS: re-armed once the
    /// ring holds buffers again.
    out_of_buffers: Vec<u32>,
    /// Entries provided to the ring and not yet used by the kernel.
    ring_available: u32,
    /// Page domain: the file to fdatasync through the ring, one batch in
    /// flight while the next is received and parsed.
    async_sync: Option<AsyncSync>,
    /// Syncs in flight, oldest first: ticket, token, epoch, and the result
    /// once its completion arrived (they may complete out of order; they
    /// are applied in order).
    syncs: std::collections::VecDeque<InFlightSync<A::Ticket>>,
    /// The epoch of the next sync to begin; replies tagged with an epoch
    /// leave once that sync is done.
    next_epoch: u64,
    held_conns: Vec<u32>,
    /// The last epoch whose sync finished (its writes are durable here),
    /// and whether replies also wait for the application's acknowledgement
    /// (`App::commits_acknowledged`).
    synced_epoch: u64,
    external_acks: bool,
    /// Connections the application asked for, in flight.
    dials: Dials,
    dial_queue: Vec<Dial>,
    /// Connections paused by back-pressure (checked for stalls).
    paused: Vec<u32>,
    /// The application's timer: its timespec (fixed address while armed).
    timer: Box<types::Timespec>,
    timer_armed: bool,
    /// Stopping: the drain's deadline, once it began.
    draining_until: Option<Instant>,
    /// Refused connections not yet logged, and when the last line was.
    refused_unlogged: u64,
    refused_logged_at: Option<Instant>,
    /// `nudge_fd` was readable this turn: `App::nudged` runs at its end.
    nudged: bool,
    stats: EngineStats,
}

fn user_data(op: u64, slot: u32, generation: u32) -> u64 {
    op << 56 | u64::from(generation & 0xFF_FFFF) << 32 | u64::from(slot)
}

fn decode(user_data: u64) -> (u64, u32, u32) {
    (user_data >> 56, ((user_data >> 32) & 0xFF_FFFF) as u32, user_data as u32)
}

impl<'a, A: App> Engine<'a, A> {
    /// Sets up the rings and listens: on `listeners` if any are given
    /// (bound by the caller, with SO_REUSEPORT when several loops share a
    /// port), else on `config.listen`. With `Persist::ZeroCopy` the ring's
    /// buffers are pool buffers (from `buffers`, this loop's share);
    /// otherwise private memory.
    pub fn new(
        pool: &'a Pool,
        buffers: &'a mut Buffers,
        app: &'a mut A,
        config: EngineConfig,
        listeners: Vec<OwnedFd>,
    ) -> io::Result<Self> {
        assert!((1..=SYNCS_IN_FLIGHT_MAX).contains(&config.syncs_in_flight), "syncs in flight out of range");
        let ring = setup_ring(&config)?;
        let persist = app.persist();
        let external_acks = app.acknowledges_externally();
        let incremental = config.incremental && persist == Persist::ZeroCopy;
        let mut bufring = BufRing::register(&ring, config.ring_entries, BUFFER_GROUP, incremental)?;
        let entries = config.ring_entries;
        let backing = if persist == Persist::ZeroCopy {
            let size = pool.geometry().buffer_size;
            let mut table = Vec::with_capacity(entries as usize);
            for bid in 0..entries {
                let buffer = buffers
                    .allocate()
                    .map_err(|e| io::Error::other(format!("the pool cannot fill the receive ring: {e}")))?;
                table.push(buffer);
                pool.lend(pool.buffer_offset(buffer), u64::from(size));
                // SAFETY: the buffer is ours (one reference, the ring's)
                // until the kernel returns this bid.
                unsafe { bufring.provide(bid, pool.address(pool.buffer_offset(buffer)), size) };
            }
            Backing::Pool { table, used: vec![0; entries as usize], starved: Vec::new(), incremental }
        } else {
            let len = entries as usize * PRIVATE_BUFFER_SIZE as usize;
            let memory = crate::io::bufring::map_anonymous(len)?;
            for bid in 0..entries {
                // SAFETY: inside our mapping, which outlives the ring.
                unsafe {
                    bufring.provide(bid, memory.add(bid as usize * PRIVATE_BUFFER_SIZE as usize), PRIVATE_BUFFER_SIZE)
                };
            }
            Backing::Private { memory, len }
        };
        bufring.publish();
        let listeners = if listeners.is_empty() {
            vec![crate::io::net::listen(config.listen, config.reuse_port, false)?]
        } else {
            listeners
        };
        assert!(listeners.len() < 1 << 24, "listener indexes fit the user data");
        let mut engine = Engine {
            pool,
            buffers,
            app,
            config,
            ring,
            bufring,
            backing,
            listeners,
            conns: Vec::new(),
            free_slots: Vec::new(),
            generation: 0,
            dirty: Vec::new(),
            wake: Vec::new(),
            woken: Vec::new(),
            pending: Vec::new(),
            rearm: Vec::new(),
            out_of_buffers: Vec::new(),
            ring_available: u32::from(entries),
            async_sync: match persist {
                Persist::Off => None,
                _ if external_acks => Some(pool.async_sync().unwrap_or(AsyncSync::Fence)),
                _ => pool.async_sync(),
            },
            syncs: std::collections::VecDeque::new(),
            next_epoch: 1,
            held_conns: Vec::new(),
            synced_epoch: 0,
            external_acks: external_acks && persist != Persist::Off,
            dials: Dials::default(),
            dial_queue: Vec::new(),
            paused: Vec::new(),
            timer: Box::new(types::Timespec::new()),
            timer_armed: false,
            draining_until: None,
            refused_unlogged: 0,
            refused_logged_at: None,
            nudged: false,
            stats: EngineStats::default(),
        };
        for index in 0..engine.listeners.len() {
            engine.arm_accept(index)?;
        }
        for (fd, listener) in std::mem::take(&mut engine.config.adopt) {
            engine.adopt(fd, listener);
        }
        if let Some(fd) = engine.config.wake_fd {
            let entry =
                opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build().user_data(user_data(OP_WAKE, 0, 0));
            engine.push(entry)?;
        }
        engine.arm_nudge()?;
        Ok(engine)
    }

    /// Polls `nudge_fd` once more (one-shot: re-armed after each call).
    fn arm_nudge(&mut self) -> io::Result<()> {
        let Some(fd) = self.config.nudge_fd else { return Ok(()) };
        let entry =
            opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32).build().user_data(user_data(OP_NUDGE, 0, 0));
        self.push(entry)
    }

    /// The address of the first listener.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        crate::io::net::local_addr(&self.listeners[0])
    }

    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Runs turns until `stop` is set (checked once per turn) or a commit
    /// fails (fatal: replies waiting for it are never sent).
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        let mut completions = Vec::with_capacity(4096);
        // The application's first dials and timer, before the first wait.
        self.start_dials()?;
        self.arm_timer()?;
        loop {
            if (stop.load(Ordering::Relaxed) || self.app.stop_requested()) && self.draining_until.is_none() {
                self.begin_drain();
                // Its sends and closes are queued before the loop sleeps
                // (and the drain's timer bounds every later wait).
                self.end_turn()?;
            }
            if let Some(deadline) = self.draining_until {
                let live = self.conns.len() - self.free_slots.len();
                if (live == 0 && self.syncs.is_empty()) || Instant::now() >= deadline {
                    return Ok(());
                }
            }
            self.enter()?;
            completions.clear();
            completions.extend(self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
            self.stats.turns += 1;
            self.stats.completions += completions.len() as u64;
            for &(data, result, flags) in &completions {
                self.complete(data, result, flags)?;
            }
            self.end_turn()?;
        }
    }

    /// Whether the loop stopped with nothing left: no connection and no
    /// sync in flight (a drain that did not time out).
    pub fn is_drained(&self) -> bool {
        self.conns.len() == self.free_slots.len() && self.syncs.is_empty()
    }

    /// Stopping: no more connections and no more reading; every connection
    /// closes once its replies are out (see "Stopping" above).
    fn begin_drain(&mut self) {
        self.draining_until = Some(Instant::now() + self.config.drain_timeout);
        self.app.draining();
        if self.config.logs_stop {
            let own = self.conns.len() - self.free_slots.len();
            tracing::info!(
                connections = self.config.clients.as_ref().map_or(own, |limit| limit.open()),
                "stopping: no new connections; sending the replies of what was received"
            );
        }
        for listener in &self.listeners {
            // SAFETY: our descriptor. A listening socket shut down refuses
            // new connections and ends its pending accept.
            unsafe { libc::shutdown(listener.as_raw_fd(), libc::SHUT_RDWR) };
        }
        for slot in 0..self.conns.len() as u32 {
            if let Some(conn) = self.conns[slot as usize].as_mut() {
                conn.close_hard();
                self.pending.push(slot);
            }
        }
    }

    fn enter(&mut self) -> io::Result<()> {
        let result = if !self.dirty.is_empty() || self.config.busy_poll {
            // Connections wait to be served again (their application's
            // batch was full, or a paused script goes on): do not sleep,
            // but reap what completed (GETEVENTS runs the deferred task
            // work that posts completions), so others are served too.
            let pending = self.ring.submission().len() as u32;
            // SAFETY: no argument; GETEVENTS runs deferred task work.
            unsafe { self.ring.submitter().enter::<libc::sigset_t>(pending, 0, IORING_ENTER_GETEVENTS, None) }
        } else {
            self.ring.submit_and_wait(1)
        };
        match result {
            Ok(_) => Ok(()),
            Err(error) if error.raw_os_error() == Some(libc::EINTR) || error.raw_os_error() == Some(libc::EBUSY) => {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry names (send buffers, the
            // listener) stays valid until its completion, see `Conn`.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    fn arm_accept(&mut self, index: usize) -> io::Result<()> {
        let entry = opcode::AcceptMulti::new(types::Fd(self.listeners[index].as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(user_data(OP_ACCEPT, index as u32, 0));
        self.push(entry)
    }

    /// Arms the application's timer if it wants one and none is armed.
    fn arm_timer(&mut self) -> io::Result<()> {
        // Paused connections are checked for stalls at least every second;
        // a drain for its deadline every 100 ms.
        let stall_check = (!self.paused.is_empty()).then_some(Duration::from_secs(1));
        let drain_check = self.draining_until.map(|_| Duration::from_millis(100));
        let Some(interval) = [self.app.tick_interval(), stall_check, drain_check].into_iter().flatten().min() else {
            return Ok(());
        };
        if self.timer_armed {
            return Ok(());
        }
        *self.timer = types::Timespec::from(interval);
        let entry = opcode::Timeout::new(&*self.timer).build().user_data(user_data(OP_TIMER, 0, 0));
        self.timer_armed = true;
        self.push(entry)
    }

    fn arm_recv(&mut self, slot: u32) -> io::Result<()> {
        let conn = self.conns[slot as usize].as_mut().expect("a live connection");
        debug_assert!(!conn.recv_armed);
        conn.recv_armed = true;
        conn.input_stopped = false;
        let entry = opcode::RecvMulti::new(types::Fd(conn.fd), BUFFER_GROUP).build().user_data(user_data(
            OP_RECV,
            slot,
            conn.generation,
        ));
        let entry = with_optlen(entry, self.config.turn_receive_bytes);
        self.push(entry)
    }

    fn complete(&mut self, data: u64, result: i32, flags: u32) -> io::Result<()> {
        let (op, generation, slot) = decode(data);
        match op {
            OP_ACCEPT => {
                if result >= 0 {
                    self.accept(result, slot as usize);
                }
                if !cqueue::more(flags) && self.draining_until.is_none() {
                    self.arm_accept(slot as usize)?;
                }
            }
            OP_RECV => self.received(slot, generation, result, flags),
            OP_SEND => self.sent(slot, result),
            OP_SYNC => self.synced(u64::from(slot), result)?,
            OP_TIMER => {
                self.timer_armed = false;
                self.disconnect_stalled();
            }
            OP_CANCEL => {}
            OP_POLL => self.polled(slot, generation, result),
            OP_WAKE => {}
            OP_NUDGE => {
                if let Some(fd) = self.config.nudge_fd {
                    let mut count = [0u8; 8];
                    // SAFETY: reads 8 bytes into our buffer from the
                    // eventfd the caller gave us (non-blocking: a read of an
                    // eventfd already read fails with EAGAIN, harmlessly).
                    unsafe { libc::read(fd, count.as_mut_ptr().cast(), count.len()) };
                }
                self.nudged = true;
                self.arm_nudge()?;
            }
            OP_CONNECT => self.connected(slot, result),
            _ => unreachable!("unknown operation {op}"),
        }
        Ok(())
    }

    fn accept(&mut self, fd: RawFd, listener: usize) {
        let live = self.conns.len() - self.free_slots.len();
        let placed = self.config.clients.as_ref().is_none_or(|limit| limit.take());
        if !placed || live >= self.config.connections_max || self.draining_until.is_some() {
            if let Some(limit) = self.config.clients.as_ref().filter(|_| placed) {
                limit.give_back();
            }
            // SAFETY: a descriptor the kernel just gave us and nobody uses.
            unsafe { libc::close(fd) };
            self.stats.refused += 1;
            // One line per 10 s at most, for the process: a flood must not
            // flood the log.
            self.refused_unlogged += 1;
            let due = || match &self.config.clients {
                Some(limit) => limit.may_log(),
                None => self.refused_logged_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)),
            };
            if self.draining_until.is_none() && due() {
                let open = self.config.clients.as_ref().map_or(live, |limit| limit.open());
                tracing::warn!(refused = self.refused_unlogged, open, "connections refused: --connections-max reached");
                self.refused_unlogged = 0;
                self.refused_logged_at = Some(Instant::now());
            }
            return;
        }
        crate::io::net::set_nodelay(fd);
        self.add_conn(fd, listener, self.config.clients.is_some());
    }

    /// A connected socket (accepted on `listener`, or dialed: `DIALED + id`)
    /// becomes a connection: the application's state, a receive, a poll.
    fn add_conn(&mut self, fd: RawFd, listener: usize, placed: bool) {
        self.generation = self.generation.wrapping_add(1) & 0xFF_FFFF;
        let mut conn = Conn {
            fd,
            generation: self.generation,
            stream: Stream::new(),
            state: self.app.connect(listener, ConnToken { slot: self.next_slot(), generation: self.generation }),
            out: {
                let mut out = OutQueue::new();
                out.set_pause_bytes(self.config.out_pause_bytes);
                out
            },
            classified: Mark::default(),
            held_marks: std::collections::VecDeque::new(),
            iov: Vec::with_capacity(SEND_SLICES_MAX),
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            msg: Box::new(unsafe { std::mem::zeroed() }),
            send_len: 0,
            send_in_flight: false,
            clear_after_send: false,
            recv_armed: false,
            received_in_turn: 0,
            received_turn: 0,
            paused_since: None,
            recv_cancelling: false,
            input_waits: false,
            input_stopped: false,
            poll_armed: false,
            poll_cancelling: false,
            closing: false,
            app_closed: false,
            peer_eof_only: false,
            placed,
            shut_down: false,
            dirty: false,
        };
        let (peer, local) = crate::io::net::conn_addrs(fd);
        self.app.accepted(&mut conn.state, fd, peer, local);
        let expected = self.next_slot();
        let slot = crate::io::slots::insert(&mut self.conns, &mut self.free_slots, conn);
        assert_eq!(slot, expected, "the token given to the application names the slot taken");
        self.stats.accepted += 1;
        self.rearm.push(slot);
        self.arm_reset_poll(slot);
    }

    /// A connected socket the application hands over (`EngineConfig::adopt`,
    /// `App::take_adoptions`) becomes a connection. Never paused nor cut
    /// for stalling: the application bounds what it queues on these, and
    /// both ends always read.
    fn adopt(&mut self, fd: RawFd, listener: usize) {
        let slot = self.next_slot() as usize;
        self.add_conn(fd, listener, false);
        self.conns[slot].as_mut().expect("just added").out.set_pause_bytes(u64::MAX);
    }

    /// Takes the sockets the application hands over this turn: each
    /// becomes a connection, or is closed (its peer sees the end) when the
    /// loop is stopping or at `connections_max`.
    fn take_adoptions(&mut self) {
        let mut adopt = Vec::new();
        self.app.take_adoptions(&mut adopt);
        for (fd, listener) in adopt {
            let live = self.conns.len() - self.free_slots.len();
            if live >= self.config.connections_max || self.draining_until.is_some() {
                tracing::warn!(listener, open = live, "a link between shards refused: the loop is full or stopping");
                // SAFETY: the application handed this descriptor over and
                // no longer uses it.
                unsafe { libc::close(fd) };
                self.app.adoption_refused(listener);
                continue;
            }
            self.adopt(fd, listener);
        }
    }

    /// Submits the connects the application asked for this turn.
    fn start_dials(&mut self) -> io::Result<()> {
        if self.draining_until.is_some() {
            return Ok(());
        }
        let mut queue = std::mem::take(&mut self.dial_queue);
        self.app.take_dials(&mut queue);
        for dial in queue.drain(..) {
            assert!(dial.id < DIALED, "a dial id below DIALED");
            let (slot, connect, limit) = match self.dials.start(&dial) {
                Ok(started) => started,
                Err(error) => {
                    self.app.dial_failed(dial.id, error);
                    continue;
                }
            };
            // The connect and its linked timeout go in one submission.
            let room = {
                let queue = self.ring.submission();
                queue.capacity() - queue.len()
            };
            if room < 2 {
                self.ring.submit()?;
            }
            self.push(connect.user_data(user_data(OP_CONNECT, slot, 0)))?;
            self.push(limit.user_data(user_data(OP_CANCEL, slot, 0)))?;
        }
        self.dial_queue = queue;
        Ok(())
    }

    /// A connect completed: the socket becomes a connection, or the
    /// application hears why not.
    fn connected(&mut self, slot: u32, result: i32) {
        let (id, outcome) = self.dials.finish(slot, result);
        match outcome {
            Ok(fd) if self.draining_until.is_none() => self.add_conn(fd.into_raw_fd(), DIALED + id, false),
            Ok(_) => self.app.dial_failed(id, io::Error::other("the loop is stopping")),
            Err(error) => self.app.dial_failed(id, error),
        }
    }

    /// Polls a connection for a reset (POLLERR, POLLHUP; not a half-close)
    /// for as long as it lives. Its receive usually reports a reset; but a
    /// receive that waits for buffers does not run, and under a storm of
    /// resets a receive armed on a socket already reset was seen never to
    /// complete (one connection in tens of thousands): such a connection
    /// would keep its slot and its partial request's buffers for good.
    fn arm_reset_poll(&mut self, slot: u32) {
        let conn = self.conns[slot as usize].as_mut().expect("live");
        if conn.poll_armed {
            return;
        }
        conn.poll_armed = true;
        let entry = opcode::PollAdd::new(types::Fd(conn.fd), (libc::POLLERR | libc::POLLHUP) as u32)
            .build()
            .user_data(user_data(OP_POLL, slot, conn.generation));
        let _ = self.push(entry);
    }

    fn received(&mut self, slot: u32, generation: u32, result: i32, flags: u32) {
        let bid = cqueue::buffer_select(flags);
        let more = cqueue::more(flags);
        let live = self.conns.get(slot as usize).and_then(|c| c.as_ref()).is_some_and(|c| c.generation == generation);
        assert!(live, "a receive completion for a connection that is gone (slot {slot})");
        if result > 0 {
            let bid = bid.expect("a receive with data names its buffer");
            let segment = self.take_buffer(bid, result as u32, cqueue::buffer_more(flags));
            self.stats.received_bytes += result as u64;
            let conn = self.conns[slot as usize].as_mut().expect("live");
            if conn.received_turn != self.stats.turns {
                conn.received_turn = self.stats.turns;
                conn.received_in_turn = 0;
            }
            conn.received_in_turn += result as u64;
            self.stats.turn_received_max = self.stats.turn_received_max.max(conn.received_in_turn);
            if conn.closing {
                // Reading stopped: drop the bytes (and the buffer).
                self.ring_available += release_segment(segment, self.buffers, &mut self.bufring, &self.backing);
            } else {
                conn.stream.push(segment);
                if conn.stream.segment_count() > STREAM_SEGMENTS_MAX && conn.stream.len() <= COALESCE_BYTES_MAX {
                    let (buffers, bufring, backing) = (&mut *self.buffers, &mut self.bufring, &self.backing);
                    let available = &mut self.ring_available;
                    conn.stream.coalesce(|segment| *available += release_segment(segment, buffers, bufring, backing));
                    self.stats.coalesced += 1;
                }
                if conn.paused_since.is_none() && !conn.dirty {
                    conn.dirty = true;
                    self.dirty.push(slot);
                }
                if conn.input_paused(self.config.input_pause_bytes) && conn.recv_armed && !conn.recv_cancelling {
                    // Its requests wait, and enough do: stop receiving.
                    conn.recv_cancelling = true;
                    let entry = opcode::AsyncCancel::new(user_data(OP_RECV, slot, conn.generation))
                        .build()
                        .user_data(user_data(OP_CANCEL, slot, conn.generation));
                    // A full submission queue is drained by `push`.
                    let _ = self.push(entry);
                }
            }
        } else if result == -libc::ECANCELED && self.conns[slot as usize].as_ref().is_some_and(|c| c.recv_cancelling) {
            // Paused input: stopped on purpose; re-armed on resumption.
            let conn = self.conns[slot as usize].as_mut().expect("live");
            conn.recv_cancelling = false;
            conn.recv_armed = false;
            if conn.closing {
                self.pending.push(slot);
            } else if conn.input_paused(self.config.input_pause_bytes) {
                conn.input_stopped = true;
            } else {
                self.rearm.push(slot);
            }
            return;
        } else if result == -libc::EINVAL && self.config.turn_receive_bytes != 0 {
            // A kernel without the multishot byte limit (before 6.17),
            // in an engine configured without the start-up probe.
            tracing::warn!("this kernel refuses a receive byte limit: receiving without one (no per-turn fairness)");
            self.config.turn_receive_bytes = 0;
            let conn = self.conns[slot as usize].as_mut().expect("live");
            conn.recv_armed = false;
            conn.recv_cancelling = false;
            self.rearm.push(slot);
            return;
        } else if result == -libc::ENOBUFS {
            self.stats.enobufs += 1;
            let conn = self.conns[slot as usize].as_mut().expect("live");
            conn.recv_armed = false;
            conn.recv_cancelling = false;
            if conn.closing {
                // Closing already (its reset poll fired, or the server shut
                // its socket down): the receive it waited for is over.
                self.pending.push(slot);
            } else {
                // Not receiving, it notices a reset through its poll.
                self.out_of_buffers.push(slot);
            }
            return;
        } else {
            // 0: the peer closed its side; < 0: an error (reset, ...).
            let conn = self.conns[slot as usize].as_mut().expect("live");
            if result == 0 && !conn.closing {
                conn.closing = true;
                conn.peer_eof_only = true;
            } else {
                conn.close_hard();
            }
            self.pending.push(slot);
            if !conn.dirty {
                conn.dirty = true;
                self.dirty.push(slot);
            }
        }
        if !more {
            let conn = self.conns[slot as usize].as_mut().expect("live");
            conn.recv_armed = false;
            // A cancel that finds no receive any more completes -ENOENT.
            conn.recv_cancelling = false;
            if conn.closing {
                self.pending.push(slot);
            } else {
                if result > 0 {
                    // Its byte limit ended it: re-armed at the end of the
                    // turn, so it receives again in the next one.
                    self.stats.receive_limited += 1;
                }
                self.rearm.push(slot);
            }
        }
    }

    /// The segment received into `bid`; provides the bid again (zero copy:
    /// with a fresh pool buffer; private: after the segment is consumed).
    /// With an incremental ring, `more` says the kernel keeps filling the
    /// buffer: the segment takes a reference of its own, and the ring's
    /// reference is dropped (and the bid swapped) once the kernel is done.
    fn take_buffer(&mut self, bid: u16, len: u32, more: bool) -> Segment {
        match &mut self.backing {
            Backing::Pool { table, used, starved, incremental } => {
                let buffer = table[bid as usize];
                let at = if *incremental { used[bid as usize] } else { 0 };
                let offset = self.pool.buffer_offset(buffer) + u64::from(at);
                self.pool.note_written(offset, u64::from(len));
                let retired = !*incremental || !more;
                if *incremental {
                    used[bid as usize] += len;
                    self.buffers.retain(buffer).expect("a ring buffer takes a segment's reference");
                    if retired {
                        used[bid as usize] = 0;
                        self.buffers.release(buffer).expect("the ring's reference");
                    }
                }
                if retired {
                    let size = self.pool.geometry().buffer_size;
                    self.pool.reclaim(self.pool.buffer_offset(buffer), u64::from(size));
                    self.ring_available -= 1;
                    match self.buffers.allocate() {
                        Ok(fresh) => {
                            table[bid as usize] = fresh;
                            self.pool.lend(self.pool.buffer_offset(fresh), u64::from(size));
                            // SAFETY: `fresh` was just allocated: its only
                            // reference is the ring's until this bid returns.
                            unsafe {
                                self.bufring.provide(bid, self.pool.address(self.pool.buffer_offset(fresh)), size)
                            };
                            self.ring_available += 1;
                        }
                        Err(_) => {
                            starved.push(bid);
                            self.stats.starved_bids_max = self.stats.starved_bids_max.max(starved.len() as u64);
                        }
                    }
                }
                // SAFETY: the stream holds a reference on `buffer` (the
                // ring's, or its own); nobody writes these bytes until the
                // stream releases them (the kernel only fills beyond them).
                unsafe { Segment::new(Source::Pool(buffer), self.pool.address(offset), at, len) }
            }
            Backing::Private { memory, .. } => {
                self.ring_available -= 1;
                // SAFETY: bid < entries, inside the mapping; the bid is out of
                // the ring until the segment is released.
                let ptr = unsafe { memory.add(bid as usize * PRIVATE_BUFFER_SIZE as usize) };
                // SAFETY: as above.
                unsafe { Segment::new(Source::Private(u32::from(bid)), ptr, 0, len) }
            }
        }
    }

    fn sent(&mut self, slot: u32, result: i32) {
        let conn = self.conns[slot as usize].as_mut().expect("a send completion for a live connection");
        conn.send_in_flight = false;
        let buffers = &mut *self.buffers;
        let mut release = |buffer: u32| {
            buffers.release(buffer).expect("a reply part holds a reference");
        };
        if result < 0 {
            conn.close_hard();
            conn.clear_after_send = false;
            conn.out.clear(&mut release);
            conn.classified = conn.out.end();
            conn.held_marks.clear();
        } else {
            debug_assert!(result as usize <= conn.send_len);
            conn.out.advance(result as usize, &mut release);
            if std::mem::take(&mut conn.clear_after_send) {
                conn.out.clear(&mut release);
                conn.classified = conn.out.end();
            }
            if conn.paused_since.is_some() {
                if conn.out.unsent_len() <= self.config.out_pause_bytes / 2 {
                    // Resume: serve what waited, and receive again.
                    conn.paused_since = None;
                    if !conn.dirty {
                        conn.dirty = true;
                        self.dirty.push(slot);
                    }
                    if !conn.recv_armed && !conn.closing {
                        self.rearm.push(slot);
                    }
                } else if result > 0 {
                    conn.paused_since = Some(Instant::now());
                }
            }
        }
        self.pending.push(slot);
    }

    /// Disconnects paused connections whose peer has read nothing for the
    /// stall timeout: shutdown() fails the blocked send and ends the
    /// receive, and the connection closes as any other.
    fn disconnect_stalled(&mut self) {
        let timeout = self.config.stall_timeout;
        let mut paused = std::mem::take(&mut self.paused);
        paused.retain(|&slot| {
            let Some(conn) = self.conns[slot as usize].as_mut() else { return false };
            let Some(since) = conn.paused_since else { return false };
            if since.elapsed() < timeout {
                return true;
            }
            conn.paused_since = None;
            conn.close_hard();
            if !conn.shut_down {
                conn.shut_down = true;
                // SAFETY: our descriptor; its pending operations complete.
                unsafe { libc::shutdown(conn.fd, libc::SHUT_RDWR) };
            }
            self.stats.stalled += 1;
            tracing::info!(
                timeout_s = timeout.as_secs_f64(),
                "disconnected a client that read none of its replies for --client-stall-timeout"
            );
            self.pending.push(slot);
            false
        });
        self.paused = paused;
    }

    fn end_turn(&mut self) -> io::Result<()> {
        self.serve_dirty();
        self.app.tick(self.pool, self.buffers);
        self.take_adoptions();
        self.wake_connections();
        // What the turn queued for other connections (another shard's
        // link: a relayed command, a message for a client there) goes out
        // with this turn's replies, not after them: a client that sees a
        // reply and asks another shard next finds the message there first.
        if !self.dirty.is_empty() && self.app.serves_woken_before_commit() {
            self.serve_dirty();
        }
        self.start_dials()?;
        if self.async_sync.is_some() {
            self.hold_replies();
            self.start_sync()?;
            if self.external_acks {
                if let Some(epoch) = self.app.take_abandoned_commits() {
                    self.abandon_held(epoch);
                }
                self.release_held();
                // What beginning the commit queued for other connections
                // (a replica's messages) is served next turn, at once.
                self.wake_connections();
            }
        } else {
            if self.app.needs_commit() {
                self.app
                    .commit(self.pool, self.buffers)
                    .map_err(|e| io::Error::other(format!("commit failed: {e}")))?;
            }
            for &slot in &self.pending {
                if let Some(conn) = self.conns[slot as usize].as_mut() {
                    conn.out.ready_all();
                    conn.classified = conn.out.end();
                }
            }
        }
        // After the turn's commit began: its batch is handed over, so the
        // application's log has room for what another thread asks of it.
        if std::mem::take(&mut self.nudged) {
            self.app.nudged(self.pool, self.buffers);
            // What another shard handed over (a link) is served from the
            // next turn, which does not wait.
            self.take_adoptions();
            self.wake_connections();
        }
        self.flush_replies()?;
        self.provide_starved();
        self.bufring.publish();
        if self.ring_available > 0 {
            let waiting = std::mem::take(&mut self.out_of_buffers);
            self.rearm.extend(waiting);
        }
        let rearm = std::mem::take(&mut self.rearm);
        for slot in rearm {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            if conn.recv_armed || conn.closing {
                continue;
            }
            if conn.input_paused(self.config.input_pause_bytes) {
                // Armed again once it is served without waiting.
                conn.input_stopped = true;
            } else {
                self.arm_recv(slot)?;
            }
        }
        self.arm_timer()
    }

    /// The connections the application wants served although nothing
    /// arrived: they are served next turn (a turn with connections to
    /// serve does not wait for completions).
    /// They go first, in the order woken: a connection the application
    /// woke (a client parked on a key just written) is served before
    /// those already waiting to be served again.
    fn wake_connections(&mut self) {
        let mut dirty = std::mem::take(&mut self.dirty);
        self.wake_next(&mut dirty, 0, false);
        self.dirty = dirty;
    }

    /// The slot the next connection will take.
    fn next_slot(&self) -> u32 {
        self.free_slots.last().copied().unwrap_or(self.conns.len() as u32)
    }

    /// The connections the application woke go into the list `dirty` at
    /// `at` (next), in the order woken; one listed later stays where it is,
    /// or, if `move_up` (inside a pass: `App::wakes_now`), moves up (a
    /// search of the list: only then). Inside a pass, the one that just
    /// ran (at `at - 1`) is not served again: its wakeup waits for the
    /// next (`wake_connections`).
    fn wake_next(&mut self, dirty: &mut Vec<u32>, at: usize, move_up: bool) {
        let mut wake = std::mem::take(&mut self.wake);
        self.app.take_wakeups(&mut wake);
        let mut woken = std::mem::take(&mut self.woken);
        let just_ran = at.checked_sub(1).map(|i| dirty[i]);
        let mut later_turn = Vec::new();
        for token in wake.drain(..) {
            let Some(Some(conn)) = self.conns.get_mut(token.slot as usize) else { continue };
            if conn.generation != token.generation || (conn.closing && !conn.half_closed()) {
                continue;
            }
            if Some(token.slot) == just_ran {
                later_turn.push(token);
                continue;
            }
            if conn.dirty {
                if !move_up {
                    continue;
                }
                // Listed later in this pass (every listed slot is marked
                // dirty until served), or woken twice in this batch.
                let Some(later) = dirty[at..].iter().position(|&s| s == token.slot) else {
                    debug_assert!(woken.contains(&token.slot), "a dirty connection in no list");
                    continue;
                };
                dirty.remove(at + later);
            }
            conn.dirty = true;
            woken.push(token.slot);
        }
        if !woken.is_empty() {
            dirty.splice(at..at, woken.drain(..));
        }
        self.woken = woken;
        wake.append(&mut later_turn);
        self.wake = wake;
    }

    /// Step 3: the application parses and logs; replies are only queued.
    fn serve_dirty(&mut self) {
        // Connections the application woke since its last wakeups were
        // taken (a client parked on a key a command wrote) go first.
        self.wake_connections();
        let connections = (self.conns.len() - self.free_slots.len()) as u64;
        self.app.set_io_counters(IoCounters {
            connections,
            accepted: self.stats.accepted,
            refused: self.stats.refused,
            enobufs: self.stats.enobufs,
            paused: self.stats.paused,
            stalled: self.stats.stalled,
            coalesced: self.stats.coalesced,
            receive_limited: self.stats.receive_limited,
            turn_received_max: self.stats.turn_received_max,
        });
        let mut dirty = std::mem::take(&mut self.dirty);
        let mut more = Vec::new();
        let mut at = 0;
        while at < dirty.len() {
            let slot = dirty[at];
            at += 1;
            if at > 1 && self.app.wakes_now() {
                // The last one woke connections that go before any other
                // (`App::wakes_now`): next in this pass.
                at -= 1;
                self.wake_next(&mut dirty, at, true);
                continue;
            }
            let conn = self.conns[slot as usize].as_mut().expect("live");
            conn.dirty = false;
            if conn.app_closed {
                self.pending.push(slot);
                continue;
            }
            let (buffers, bufring, backing) = (&mut *self.buffers, &mut self.bufring, &self.backing);
            let available = &mut self.ring_available;
            let mut release = |segment: Segment, buffers: &mut Buffers| {
                *available += release_segment(segment, buffers, bufring, backing)
            };
            let progress = self.app.on_input(
                self.pool,
                buffers,
                &mut conn.state,
                &mut conn.stream,
                &mut conn.out,
                usize::MAX,
                &mut release,
            );
            if progress.close {
                conn.closing = true;
                conn.app_closed = true;
            }
            conn.input_waits = progress.waits;
            if conn.input_stopped && !conn.input_paused(self.config.input_pause_bytes) {
                // What it waited on came: receive again.
                self.rearm.push(slot);
            }
            if conn.out.is_full() && conn.paused_since.is_none() && !conn.closing {
                conn.paused_since = Some(Instant::now());
                self.paused.push(slot);
                self.stats.paused += 1;
            }
            if progress.more && !progress.close {
                more.push(slot);
            }
            self.pending.push(slot);
        }
        self.dirty = dirty;
        self.dirty.clear();
        for slot in more {
            let conn = self.conns[slot as usize].as_mut().expect("live");
            if !conn.dirty {
                conn.dirty = true;
                self.dirty.push(slot);
            }
        }
    }

    /// Asynchronous commits: while a change is not yet durable, this turn's
    /// replies wait for the sync that will cover everything done so far;
    /// so a reply never leaves before a change made before it, and a read
    /// never returns a change that could still be lost. Syncs that carry no
    /// change (a checkpoint's) hold nothing.
    fn hold_replies(&mut self) {
        let needs = self.app.needs_commit();
        let undurable = self.app.writes_pending();
        let epoch = if needs { self.next_epoch } else { self.next_epoch - 1 };
        for &slot in &self.pending {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            let end = conn.out.end();
            if end == conn.classified {
                continue;
            }
            conn.classified = end;
            if (!undurable || !self.app.holds_replies(&conn.state)) && conn.held_marks.is_empty() {
                conn.out.set_ready(end);
                continue;
            }
            let epoch = epoch.max(conn.held_marks.back().map_or(0, |&(e, _)| e));
            if conn.held_marks.is_empty() {
                self.held_conns.push(slot);
            }
            match conn.held_marks.back_mut() {
                Some(last) if last.0 == epoch => last.1 = end,
                _ => conn.held_marks.push_back((epoch, end)),
            }
        }
    }

    /// Begins a commit and submits its fdatasync, unless enough are in
    /// flight. Each sync covers everything done before it began.
    fn start_sync(&mut self) -> io::Result<()> {
        if self.syncs.len() >= self.config.syncs_in_flight || !self.app.needs_commit() {
            return Ok(());
        }
        let Some(ticket) =
            self.app.begin_commit(self.pool, self.buffers).map_err(|e| io::Error::other(format!("commit: {e}")))?
        else {
            return Ok(());
        };
        let token = self.pool.begin_sync();
        let epoch = self.next_epoch;
        let entry = match self.async_sync.expect("asynchronous commits") {
            AsyncSync::File(fd) => opcode::Fsync::new(types::Fd(fd)).flags(types::FsyncFlags::DATASYNC).build(),
            AsyncSync::Simulated | AsyncSync::Fence => opcode::Nop::new().build(),
        }
        .user_data(user_data(OP_SYNC, epoch as u32, 0));
        self.syncs.push_back(InFlightSync { ticket, token, epoch, result: None });
        self.next_epoch += 1;
        self.push(entry)
    }

    /// A sync completed: apply every completed sync at the front, in
    /// order, and release the replies they cover.
    fn synced(&mut self, epoch_low: u64, result: i32) -> io::Result<()> {
        let entry = self
            .syncs
            .iter_mut()
            .find(|s| s.epoch as u32 == epoch_low as u32 && s.result.is_none())
            .expect("a sync in flight");
        entry.result = Some(result);
        let mut done_epoch = None;
        while self.syncs.front().is_some_and(|s| s.result.is_some()) {
            let sync = self.syncs.pop_front().expect("checked");
            let result = sync.result.expect("checked");
            let outcome = if result < 0 { Err(io::Error::from_raw_os_error(-result)) } else { Ok(()) };
            if let Err(error) = self.pool.complete_sync(sync.token, outcome) {
                // Fatal: the replies waiting for this sync are never sent.
                tracing::error!("fdatasync failed: {error}; stopping without acknowledging what it covered");
                self.app.fail_commit();
                return Err(io::Error::other(format!("fdatasync failed, stopping: {error}")));
            }
            self.app
                .finish_commit(self.pool, self.buffers, sync.ticket)
                .map_err(|e| io::Error::other(format!("commit: {e}")))?;
            done_epoch = Some(sync.epoch);
        }
        if let Some(epoch) = done_epoch {
            self.synced_epoch = epoch;
            self.release_held();
        }
        Ok(())
    }

    /// Replies of `epoch` and later will never be acknowledged: every
    /// connection holding some drops what it has not sent and closes (its
    /// client cannot tell which of them took effect; nothing is claimed).
    fn abandon_held(&mut self, epoch: u64) {
        let held = std::mem::take(&mut self.held_conns);
        for slot in held {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            if conn.held_marks.back().is_none_or(|&(e, _)| e < epoch) {
                if !conn.held_marks.is_empty() {
                    self.held_conns.push(slot);
                }
                continue;
            }
            if conn.send_in_flight {
                conn.clear_after_send = true;
            } else {
                let buffers = &mut *self.buffers;
                conn.out.clear(|buffer| {
                    buffers.release(buffer).expect("a reply part holds a reference");
                });
            }
            conn.classified = conn.out.end();
            conn.held_marks.clear();
            conn.closing = true;
            conn.app_closed = true;
            self.pending.push(slot);
        }
    }

    /// Releases the held replies of every epoch whose sync finished and,
    /// for an application that acknowledges externally, that it has
    /// acknowledged.
    fn release_held(&mut self) {
        let mut epoch = self.synced_epoch;
        if self.external_acks {
            epoch = epoch.min(self.app.commits_acknowledged());
        }
        if epoch == 0 {
            return;
        }
        let mut held = std::mem::take(&mut self.held_conns);
        held.sort_unstable();
        held.dedup();
        for slot in held {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            let mut released = None;
            while conn.held_marks.front().is_some_and(|&(e, _)| e <= epoch) {
                released = Some(conn.held_marks.pop_front().expect("checked").1);
            }
            if let Some(mark) = released {
                conn.out.set_ready(mark);
                self.pending.push(slot);
            }
            if !conn.held_marks.is_empty() {
                self.held_conns.push(slot);
            }
        }
    }

    /// Step 5: sends queued replies; closes connections that are done.
    fn flush_replies(&mut self) -> io::Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        pending.dedup();
        for &slot in &pending {
            let Some(conn) = self.conns[slot as usize].as_mut() else { continue };
            if !conn.send_in_flight && conn.out.has_ready() {
                let entry = prepare_send(conn, slot);
                conn.send_in_flight = true;
                self.push(entry)?;
                continue;
            }
            self.maybe_close(slot);
        }
        pending.clear();
        self.pending = pending;
        Ok(())
    }

    /// Closes a connection marked closing once its replies are out and its
    /// receive has ended: shutdown() ends the receive (completion 0).
    /// The poll for a reset completed (or was cancelled).
    fn polled(&mut self, slot: u32, generation: u32, result: i32) {
        let conn = self.conns[slot as usize].as_mut().expect("a connection outlives its poll");
        assert_eq!(conn.generation & 0xFF_FFFF, generation, "a poll of this connection");
        conn.poll_armed = false;
        if result > 0 && result & i32::from(libc::POLLERR | libc::POLLHUP) != 0 && !conn.closing {
            conn.close_hard();
            self.stats.reset_while_starved += 1;
        }
        self.pending.push(slot);
    }

    fn maybe_close(&mut self, slot: u32) {
        let conn = self.conns[slot as usize].as_mut().expect("live");
        // A connection waiting to be served (woken this turn) stays until
        // `serve_dirty` has seen it: a slot in `dirty` is always live. Being
        // served puts it back in `pending`, and here.
        if !conn.closing || conn.dirty || conn.send_in_flight || !conn.out.is_empty() {
            return;
        }
        if conn.half_closed() && self.app.awaits_replies(&conn.state) {
            // Woken when they come (`wake_connections`), then closed here.
            return;
        }
        if conn.poll_armed {
            // Closed once the poll is back (it refers to the descriptor).
            if !conn.poll_cancelling {
                conn.poll_cancelling = true;
                let entry = opcode::AsyncCancel::new(user_data(OP_POLL, slot, conn.generation))
                    .build()
                    .user_data(user_data(OP_CANCEL, slot, conn.generation));
                let _ = self.push(entry);
            }
            return;
        }
        if conn.recv_armed {
            if !conn.shut_down {
                conn.shut_down = true;
                // SAFETY: our descriptor; the pending receive completes.
                unsafe { libc::shutdown(conn.fd, libc::SHUT_RDWR) };
            }
            return;
        }
        let mut conn = self.conns[slot as usize].take().expect("live");
        let (buffers, bufring, backing) = (&mut *self.buffers, &mut self.bufring, &self.backing);
        let available = &mut self.ring_available;
        conn.stream.clear(|segment| *available += release_segment(segment, buffers, bufring, backing));
        self.app.abandon(self.buffers, &mut conn.state);
        // SAFETY: no operation on this descriptor is in flight any more.
        unsafe { libc::close(conn.fd) };
        if let Some(limit) = self.config.clients.as_ref().filter(|_| conn.placed) {
            limit.give_back();
        }
        self.free_slots.push(slot);
        self.stats.closed += 1;
    }

    /// Provides starved bids with buffers freed since.
    fn provide_starved(&mut self) {
        let Backing::Pool { table, starved, .. } = &mut self.backing else { return };
        let size = self.pool.geometry().buffer_size;
        while let Some(&bid) = starved.last() {
            let Ok(fresh) = self.buffers.allocate() else { break };
            starved.pop();
            table[bid as usize] = fresh;
            self.pool.lend(self.pool.buffer_offset(fresh), u64::from(size));
            // SAFETY: freshly allocated; the ring's until the bid returns.
            unsafe { self.bufring.provide(bid, self.pool.address(self.pool.buffer_offset(fresh)), size) };
            self.ring_available += 1;
        }
    }
}

/// Gives a consumed segment's buffer back: a pool buffer loses the
/// stream's reference; a private buffer returns to the ring. Returns the
/// number of ring entries provided (0 or 1).
fn release_segment(segment: Segment, buffers: &mut Buffers, bufring: &mut BufRing, backing: &Backing) -> u32 {
    match (segment.source, backing) {
        (Source::Pool(buffer), _) => {
            buffers.release(buffer).expect("a stream segment holds a reference");
            0
        }
        (Source::Private(bid), Backing::Private { memory, .. }) => {
            // SAFETY: the bid's memory is back with us: the stream is done
            // with it; it stays valid for the ring's life.
            unsafe {
                bufring.provide(
                    bid as u16,
                    memory.add(bid as usize * PRIVATE_BUFFER_SIZE as usize),
                    PRIVATE_BUFFER_SIZE,
                )
            };
            1
        }
        (Source::Private(_), Backing::Pool { .. }) => unreachable!("private segment in a zero-copy engine"),
        (Source::Heap, _) => unreachable!("the stream releases its own heap segments"),
    }
}

/// The send of a connection's ready replies: one `send` when they are one
/// slice, else a `sendmsg` over up to `SEND_SLICES_MAX` iovecs, which the
/// connection keeps (fixed addresses) until the completion.
fn prepare_send<C>(conn: &mut Conn<C>, slot: u32) -> squeue::Entry {
    conn.iov.clear();
    // The kernel may read these bytes after this turn, when the socket has
    // room: they must not move meanwhile.
    conn.out.pin_for_send();
    let iov = &mut conn.iov;
    conn.send_len = conn
        .out
        .slices(SEND_SLICES_MAX, |ptr, len| iov.push(libc::iovec { iov_base: ptr as *mut libc::c_void, iov_len: len }));
    let data = user_data(OP_SEND, slot, conn.generation);
    if conn.iov.len() == 1 {
        let only = conn.iov[0];
        return opcode::Send::new(types::Fd(conn.fd), only.iov_base as *const u8, only.iov_len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(data);
    }
    conn.msg.msg_iov = conn.iov.as_mut_ptr();
    conn.msg.msg_iovlen = conn.iov.len();
    opcode::SendMsg::new(types::Fd(conn.fd), &*conn.msg).flags(libc::MSG_NOSIGNAL as u32).build().user_data(data)
}

fn setup_ring(config: &EngineConfig) -> io::Result<IoUring> {
    let cq = config.queue_entries * 4;
    if !config.defer_taskrun {
        return IoUring::builder().setup_cqsize(cq).build(config.queue_entries);
    }
    match IoUring::builder().setup_single_issuer().setup_defer_taskrun().setup_cqsize(cq).build(config.queue_entries) {
        Ok(ring) => Ok(ring),
        Err(error) => {
            // Not probed (`adapt_to` was not called): fall back here.
            tracing::warn!("io_uring: SINGLE_ISSUER | DEFER_TASKRUN unavailable ({error}); using a plain ring");
            IoUring::builder().setup_cqsize(cq).build(config.queue_entries)
        }
    }
}

impl<A: App> Drop for Engine<'_, A> {
    fn drop(&mut self) {
        for slot in 0..self.conns.len() {
            if let Some(mut conn) = self.conns[slot].take() {
                let buffers = &mut *self.buffers;
                conn.out.clear(|buffer| {
                    let _ = buffers.release(buffer);
                });
                // SAFETY: our descriptor; the ring is about to go away.
                unsafe { libc::close(conn.fd) };
            }
        }
        let _ = self.ring.submitter().unregister_buf_ring(BUFFER_GROUP);
        if let Backing::Pool { table, starved, .. } = &self.backing {
            let size = u64::from(self.pool.geometry().buffer_size);
            for (bid, &buffer) in table.iter().enumerate() {
                if !starved.contains(&(bid as u16)) {
                    self.pool.reclaim(self.pool.buffer_offset(buffer), size);
                }
            }
        }
        if let Backing::Private { memory, len } = self.backing {
            // SAFETY: our mapping; the buffer ring is unregistered.
            unsafe { libc::munmap(memory.cast(), len) };
        }
    }
}
