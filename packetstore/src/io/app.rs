//! The contract between an I/O loop (the io_uring [`engine`](crate::io::engine)
//! or the [`epoll`](crate::io::epoll) baseline) and an application (the WAL
//! server, the key-value server).
//!
//! The loop owns connections, their received bytes ([`Stream`]) and their
//! outgoing bytes ([`OutQueue`]); the application parses requests, changes
//! its state and queues replies. The loop sends a reply only after the
//! commit that covers everything the application did before queueing it:
//! `commit` (a fence) at the end of a turn, or, in the page domain,
//! `begin_commit` and `finish_commit` around an fdatasync the loop runs
//! asynchronously.
//!
//! Invariant (the application's side): every buffer reference a request
//! takes is given back when the request ends, whether it was served,
//! refused, or its connection died (`abandon`).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::io::outq::OutQueue;
use crate::io::stream::{Segment, Stream};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;

/// Where request bodies are persisted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persist {
    /// Where they were received (the receive ring's buffers are pool
    /// buffers).
    ZeroCopy,
    /// Copied into pool buffers as they arrive (the paper's copy baselines).
    Copy,
    /// Not at all (a ceiling for comparisons).
    Off,
}

impl Persist {
    pub fn parse(text: &str) -> Option<Persist> {
        match text {
            "zerocopy" | "zero-copy" => Some(Persist::ZeroCopy),
            "copy" => Some(Persist::Copy),
            "off" => Some(Persist::Off),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Persist::ZeroCopy => "zerocopy",
            Persist::Copy => "copy",
            Persist::Off => "off",
        }
    }
}

/// What `on_input` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub requests: usize,
    /// Close the connection once its replies are sent.
    pub close: bool,
    /// The application stopped early (its batch is full): serve this
    /// connection again next turn, even if nothing new arrives.
    pub more: bool,
    /// It stopped taking this connection's input for a reason other than
    /// needing more bytes (a command waits for another shard's reply, is
    /// blocked, or a script paused): once `EngineConfig::input_pause_bytes`
    /// wait, the engine stops receiving until a turn serves it without
    /// this, so TCP stops the peer instead of its requests piling up.
    pub waits: bool,
}

/// What the I/O loop tells the application about itself (for metrics).
#[derive(Clone, Copy, Debug, Default)]
pub struct IoCounters {
    pub connections: u64,
    pub accepted: u64,
    pub refused: u64,
    pub enobufs: u64,
    /// Clients paused by back-pressure, and disconnected for not reading.
    pub paused: u64,
    pub stalled: u64,
    /// Trickling streams coalesced.
    pub coalesced: u64,
    /// Receives ended by the per-turn byte limit, and the most bytes one
    /// connection received in one turn.
    pub receive_limited: u64,
    pub turn_received_max: u64,
}

/// A connection of a loop, as the application names it to wake it later:
/// its slot and the generation that tells it from the slot's later
/// connections (a token of a connection that is gone wakes nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnToken {
    pub slot: u32,
    pub generation: u32,
}

/// The listener index `App::connect` sees for a connection the loop opened
/// on the application's request: `DIALED + Dial::id`.
pub const DIALED: usize = 1 << 20;

/// A connection the application asks its loop to open (a replica's link
/// to a peer). It arrives through `App::connect` with the listener index
/// `DIALED + id`, or `App::dial_failed` says why not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dial {
    /// The application's name for it, below `DIALED`.
    pub id: usize,
    pub addr: SocketAddr,
    /// A connect not done by then fails (`TimedOut`).
    pub timeout: Duration,
}

/// Gives a fully consumed segment's buffer back to the loop.
pub type Release<'r> = dyn FnMut(Segment, &mut Buffers) + 'r;

pub trait App {
    /// Per-connection protocol state.
    type Conn;
    /// A commit in flight (page domain).
    type Ticket;

    fn persist(&self) -> Persist;

    /// A new connection on listener `listener` (the index in the loop's
    /// list of listeners), named `token` by the loop.
    fn connect(&mut self, listener: usize, token: ConnToken) -> Self::Conn;

    /// The new connection's socket: its descriptor and both ends'
    /// addresses, for an application that reports them (CLIENT LIST).
    fn accepted(&mut self, _conn: &mut Self::Conn, _fd: i32, _peer: Option<SocketAddr>, _local: Option<SocketAddr>) {}

    /// Serves up to `requests_max` requests from `stream`, queueing replies
    /// in `out` (not sent before the next commit).
    #[allow(clippy::too_many_arguments)]
    fn on_input(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut Self::Conn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress;

    /// The connection is gone: give back what its request held.
    fn abandon(&mut self, buffers: &mut Buffers, conn: &mut Self::Conn);

    /// Whether a commit is needed (changes since the last one, or
    /// background work that waits for one).
    fn needs_commit(&self) -> bool;

    /// Whether a change is not yet durable: made since the last commit
    /// began, or covered by a sync still in flight. While none is, a reply
    /// (a read's) may leave at once even with a sync in flight (one that
    /// carries only background work, such as a checkpoint's).
    fn writes_pending(&self) -> bool;

    /// Makes everything done so far durable (fences). An error is fatal:
    /// replies waiting for it must never be sent.
    fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> io::Result<()>;

    /// Starts a commit whose sync the loop runs; None if nothing waits.
    fn begin_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> io::Result<Option<Self::Ticket>>;

    /// The sync of `ticket` succeeded.
    fn finish_commit(&mut self, pool: &Pool, buffers: &mut Buffers, ticket: Self::Ticket) -> io::Result<()>;

    /// The sync of a commit in flight failed: nothing may be acknowledged.
    fn fail_commit(&mut self);

    fn set_io_counters(&mut self, _counters: IoCounters) {}

    /// Background work between turns (space reclamation, expiry), bounded
    /// so that a turn stays short.
    fn tick(&mut self, _pool: &Pool, _buffers: &mut Buffers) {}

    /// Another thread wrote the loop's `nudge_fd` (`EngineConfig`): called
    /// at the end of the turn that saw it, once that turn's commit began.
    fn nudged(&mut self, _pool: &Pool, _buffers: &mut Buffers) {}

    /// Connected sockets to serve from now on, each as a connection of the
    /// listener index given, as `EngineConfig::adopt`'s (appended to
    /// `adopt`; asked once per turn). The loop owns them from then: one it
    /// cannot take (at `connections_max`, or stopping) is closed.
    fn take_adoptions(&mut self, _adopt: &mut Vec<(std::os::fd::RawFd, usize)>) {}

    /// Whether connections woken during a turn's end (its tick) are served
    /// again before the turn's commit, so what they queue goes out with
    /// the turn's replies (a sharded server's links). Default: no, they
    /// wait for the next turn.
    fn serves_woken_before_commit(&self) -> bool {
        false
    }

    /// A socket handed over by `take_adoptions` as a connection of
    /// `listener` was closed instead (the loop is full or stopping).
    fn adoption_refused(&mut self, _listener: usize) {}

    /// Connections the application wants served although nothing arrived
    /// for them (a message for a subscriber, a key a blocked client waits
    /// for, a timeout), appended to `wake`: the loop calls `on_input` for
    /// each one still connected, within its next turn.
    fn take_wakeups(&mut self, _wake: &mut Vec<ConnToken>) {}

    /// Whether connections woken since the wakeups were last taken must be
    /// served before any other connection's next request (a client
    /// parked on a key a command just filled: Redis serves it before it
    /// runs another command). The loop then takes them at once and serves
    /// them next in its pass.
    fn wakes_now(&self) -> bool {
        false
    }

    /// How soon the application wants a turn even if no I/O arrives
    /// (None: only on I/O).
    fn tick_interval(&self) -> Option<Duration> {
        None
    }

    /// Whether `conn`'s output waits for commits like replies do. A link
    /// whose bytes the application orders itself (a replica's messages to
    /// a peer, queued only once what they say is durable) answers false:
    /// its bytes leave at the end of the turn they were queued in.
    fn holds_replies(&self, _conn: &Self::Conn) -> bool {
        true
    }

    /// Whether `conn` is still owed replies from elsewhere (commands it
    /// sent that another shard runs): a connection whose peer closed only
    /// its sending side stays open until they are in and sent (the
    /// application wakes it when they come, `take_wakeups`).
    fn awaits_replies(&self, _conn: &Self::Conn) -> bool {
        false
    }

    /// Connections to open (appended to `dials`); asked once per turn.
    fn take_dials(&mut self, _dials: &mut Vec<Dial>) {}

    /// A dial failed (refused, unreachable, timed out).
    fn dial_failed(&mut self, _id: usize, _error: io::Error) {}

    /// Whether replies wait for more than local durability (a replicated
    /// application: a majority of its group). Such an application gets
    /// asynchronous commits in every persistence domain, and its replies
    /// leave only once `commits_acknowledged` covers their commit.
    fn acknowledges_externally(&self) -> bool {
        false
    }

    /// How many of the commits begun so far, counted from 1 in the order
    /// `begin_commit` returned tickets, may release their replies (their
    /// writes are durable where the application needs them to be). Asked
    /// every turn; only of an application that `acknowledges_externally`.
    fn commits_acknowledged(&self) -> u64 {
        u64::MAX
    }

    /// The first commit (counted as in `commits_acknowledged`) whose
    /// replies will never be acknowledged (a replica that lost its
    /// leadership with reads unconfirmed), if any since the last call: the
    /// loop drops the unsent replies of every connection holding replies
    /// of that commit or a later one, and closes it. Asked every turn,
    /// before `commits_acknowledged`.
    fn take_abandoned_commits(&mut self) -> Option<u64> {
        None
    }

    /// The application asked the loop to stop (as if its `stop` flag were
    /// set: a drain, then the end of `run`).
    fn stop_requested(&self) -> bool {
        false
    }

    /// The loop begins to stop: every connection closes once its replies
    /// are out (links between shards too: not to be made again).
    fn draining(&mut self) {}
}
