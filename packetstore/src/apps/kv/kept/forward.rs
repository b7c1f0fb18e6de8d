//! What a follower's relays keep (`forward.rs` decides each client's route
//! and serves both sides of a relay): a client connection's route
//! (`Route`), and the relays to the leader (`Relays`): which client and
//! which link, and the bytes on their way in each direction.
//!
//! Invariants: each relayed extent carries one buffer reference of the
//! relay's until it is queued on the other connection (which then owns
//! it); a relay takes no more of a side's input while `RELAY_QUEUED_MAX`
//! bytes wait unsent the other way.

use std::collections::{HashMap, VecDeque};

use crate::io::app::{ConnToken, Dial, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;

/// A relay stops taking a side's input while this much waits unsent.
const RELAY_QUEUED_MAX: u64 = 4 << 20;

/// What a client connection of a follower is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Route {
    /// Not decided: its first command decides.
    #[default]
    Undecided,
    /// Served here (the leader, or READONLY on a follower).
    Local,
    /// Relayed to the leader through relay `id`.
    Relayed(usize),
    /// Not decided, and its first command is one a client library sends
    /// when it connects (CLIENT SETINFO): answered here, and the next one
    /// decides.
    SetupHere,
}

/// Bytes on their way: pool extents (one reference each) or copied bytes.
pub(in crate::apps::kv) enum Chunk {
    Pool(Vec<Extent>),
    Bytes(Vec<u8>),
}

/// A client relayed to the leader.
pub struct Relay {
    pub(in crate::apps::kv) client: ConnToken,
    /// The client speaks HTTP (its link opens with RELAYHTTP).
    pub(in crate::apps::kv) http: bool,
    /// What it set up here before it was relayed.
    pub(in crate::apps::kv) state: crate::replica::wire::ClientState,
    pub(in crate::apps::kv) link: Option<ConnToken>,
    /// Bytes on their way to the leader (`TO_LEADER`) and to the client.
    pub(in crate::apps::kv) queues: [VecDeque<Chunk>; 2],
    pub(in crate::apps::kv) queued: [u64; 2],
    pub(in crate::apps::kv) closed: bool,
    /// The client left before the link connected: the relay waits only
    /// for its dial to end.
    pub(in crate::apps::kv) orphaned: bool,
}

/// A relay's directions: the side a connection sends to, and the queue
/// its own input goes to (`queues[i]`, with `queued[i]` bytes).
pub(in crate::apps::kv) const TO_LEADER: usize = 0;
pub(in crate::apps::kv) const TO_CLIENT: usize = 1;

impl Relay {
    /// One side's turn (`sends`: the queue it sends): what waits for it
    /// is queued on its `out` (all of it); its input, if `input`, is
    /// taken, zero copy, for the other side unless that side has
    /// `RELAY_QUEUED_MAX` waiting. Returns whether anything moved (the
    /// other side has work).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::apps::kv) fn shuttle(
        &mut self,
        sends: usize,
        input: bool,
        pool: &Pool,
        buffers: &mut Buffers,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> bool {
        let takes = 1 - sends;
        let sent = drain(pool, buffers, &mut self.queues[sends], out);
        self.queued[sends] -= sent;
        if !input || stream.is_empty() || self.queued[takes] >= RELAY_QUEUED_MAX {
            return sent > 0;
        }
        let n = stream.len();
        self.queued[takes] += n as u64;
        self.queues[takes].push_back(take(buffers, stream, n));
        stream.consume(n, |segment| release(segment, buffers));
        true
    }
}

#[derive(Default)]
pub struct Relays {
    pub(in crate::apps::kv) relays: HashMap<usize, Relay>,
    pub(in crate::apps::kv) next: usize,
    pub(in crate::apps::kv) dials: Vec<Dial>,
    pub wake: Vec<ConnToken>,
    /// Clients that arrived while no leader was known.
    pub(in crate::apps::kv) waiting: Vec<ConnToken>,
}

/// The stream's first `n` bytes, for the other side: pool extents with a
/// reference each, or a copy where they are not in the pool.
fn take(buffers: &mut Buffers, stream: &Stream, n: usize) -> Chunk {
    let mut extents = Vec::new();
    if stream.pool_extents(n, &mut extents) {
        for extent in &extents {
            buffers.retain(extent.buffer).expect("a received buffer takes another reference");
        }
        return Chunk::Pool(extents);
    }
    let mut bytes = Vec::with_capacity(n);
    stream.for_each_slice(n, |s| bytes.extend_from_slice(s));
    Chunk::Bytes(bytes)
}

/// Queues chunks on `out` (their references move to it); returns the bytes.
fn drain(pool: &Pool, _buffers: &mut Buffers, chunks: &mut VecDeque<Chunk>, out: &mut OutQueue) -> u64 {
    let mut bytes = 0;
    while let Some(chunk) = chunks.pop_front() {
        match chunk {
            Chunk::Bytes(data) => {
                bytes += data.len() as u64;
                out.push(&data);
            }
            Chunk::Pool(extents) => {
                for extent in extents {
                    bytes += u64::from(extent.len);
                    let offset = pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
                    // SAFETY: the relay's reference on the buffer moves to
                    // the queue: nothing reuses or writes it until it is sent.
                    unsafe { out.push_pool(extent.buffer, pool.address(offset), u32::from(extent.len)) };
                }
            }
        }
    }
    bytes
}
