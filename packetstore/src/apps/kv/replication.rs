//! The key-value server as a node of a replicated group: its peer links
//! (inbound on the peer listener, outbound dialed by the loop), and the
//! loop's commit hooks that hand each turn to the replica
//! (`replica/node.rs`) and release replies once the group acknowledged
//! them.
//!
//! Owns: the peer connections' protocol state (`PeerLink`, in
//! `kept/replication.rs`).
//!
//! Invariants: a peer link's input is parsed by the same bounded RESP
//! parser as a client's, and a link that breaks the format, or presents
//! the wrong group or secret, is closed; writes run only where the
//! replica `can_write`; background writers (expiry, reclamation,
//! compaction) run only on the leader, so a follower's tree changes only
//! by committed entries.

use std::time::Instant;

use crate::apps::kv::kept::replication::PeerLink;
use crate::apps::kv::state::{KvConn, KvServer};
use crate::io::app::{ConnToken, Dial, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Parsed, REFUSED_NO_ROOM};
use crate::replica::wire::{self, Frame, Inbound};

/// Not an error: the link carries a relayed client from here on.
const RELAYED: &str = "relayed";

/// The listener index of the peer port.
pub const LISTENER_PEER: usize = 2;
/// A snapshot's chunk (tree bytes read per turn), and the most of it a
/// link may have unsent before the next chunk.
const SNAPSHOT_CHUNK_BYTES: usize = 256 << 10;
const SNAPSHOT_QUEUE_BYTES_MAX: u64 = 1 << 20;
/// How long a dial to a peer may take.
const DIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// One node leads every shard's group: the node that leads shard 0's.
/// Shard 0 publishes its group's leader; any other shard that leads its
/// own group elsewhere hands the leadership over to that node. Commands
/// across shards then find every shard they reach leading on the node that
/// runs them, and a follower relays a client to one node for all its keys.
fn follow_shard_zero(
    exchange: &crate::apps::kv::exchange::Exchange,
    shard: u16,
    replica: &mut crate::replica::Replica,
) {
    if shard == 0 {
        exchange.set_group_leader(replica.leader_id());
        return;
    }
    let leader = exchange.group_leader();
    if leader != 0 && replica.is_leader() && leader != replica.config.node_id {
        replica.transfer_leadership(leader);
    }
}

impl KvServer {
    /// The peer link a new connection is, if it is one.
    pub(super) fn peer_link(&mut self, listener: usize, token: ConnToken) -> Option<PeerLink> {
        let replica = self.replica.as_mut()?;
        if listener == LISTENER_PEER {
            return Some(PeerLink::Inbound(Box::default()));
        }
        let id = listener.checked_sub(crate::io::app::DIALED)?;
        if id >= crate::apps::kv::forward::RELAY_DIAL_BASE {
            self.relay_linked(id, token);
            return Some(PeerLink::Relay { id, hello_sent: false });
        }
        let peer = id as u64;
        replica.link_up(peer, (token.slot, token.generation));
        self.peer_wake.push(token);
        Some(PeerLink::Outbound { peer, hello_sent: false })
    }

    /// Serves a peer link: reads an inbound link's frames into the
    /// replica, or writes the messages waiting for an outbound one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn serve_peer(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut link = conn.peer.take().expect("a peer link");
        let progress = match &mut link {
            PeerLink::Outbound { peer, hello_sent } => {
                self.send_to_peer(pool, buffers, *peer, hello_sent, stream, out, release)
            }
            PeerLink::Inbound(inbound) => self.read_from_peer(pool, buffers, conn, inbound, stream, release),
            PeerLink::Relay { id, hello_sent } => self.relay_link(pool, buffers, *id, hello_sent, stream, out, release),
        };
        if let Some(listener) = conn.relay_accepted.take() {
            // A follower's relayed client: ours from now on.
            conn.listener = listener;
            conn.route = crate::apps::kv::kept::forward::Route::Local;
            if listener == crate::apps::kv::LISTENER_HTTP {
                return self.serve_http(pool, buffers, conn, stream, out, usize::MAX, release);
            }
            self.clients.register(conn.id, conn.token);
            return self.serve_resp(pool, buffers, conn, stream, out, usize::MAX, release);
        }
        conn.peer = Some(link);
        progress
    }

    #[allow(clippy::too_many_arguments)]
    fn send_to_peer(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        peer: u64,
        hello_sent: &mut bool,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> Progress {
        // A peer writes on our link only to refuse it.
        if !stream.is_empty() {
            let text = String::from_utf8_lossy(stream.front()).trim_end().to_string();
            tracing::warn!(peer, "peer refused our link: {text}");
            let n = stream.len();
            stream.consume(n, |segment| release(segment, buffers));
            return Progress { requests: 0, close: true, more: false, waits: false };
        }
        let replica = self.replica.as_mut().expect("replicated");
        if !*hello_sent {
            *hello_sent = true;
            let config = &replica.config;
            wire::hello(out.bytes(), config.group_id, config.node_id, &config.secret, config.client_addr);
        }
        if let Some(index) = replica.take_repair_ask(peer) {
            wire::repair_ask(out, index);
        }
        let messages = replica.take_outgoing(peer);
        let count = messages.len();
        tracing::trace!(peer, count, "sending");
        for message in messages {
            let replica = self.replica.as_ref().expect("replicated");
            let kind = message.msg_type;
            if let Err(error) = wire::encode(pool, buffers, &self.store, message, |i| replica.records_of(i), out) {
                // Entries compacted since raft-rs read them: it sends again
                // (a snapshot if they are gone for good).
                tracing::debug!(peer, ?kind, "a message was dropped: {error}");
            }
        }
        let result = self.stream_snapshot(pool, buffers, peer, out);
        if let Err(error) = result {
            tracing::error!(peer, "a message could not be sent: {error}");
            return Progress { requests: count, close: true, more: false, waits: false };
        }
        Progress { requests: count, close: false, more: false, waits: false }
    }

    /// The next chunk of a snapshot to `peer`, or its end: the MsgSnapshot
    /// once the group has committed what the chunks could reflect.
    fn stream_snapshot(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        peer: u64,
        out: &mut OutQueue,
    ) -> Result<(), crate::store::db::StoreError> {
        let replica = self.replica.as_mut().expect("replicated");
        let base = replica.snapshot_base();
        let Some(stream) = replica.streams.get_mut(&peer) else { return Ok(()) };
        if out.unsent_len() >= SNAPSHOT_QUEUE_BYTES_MAX {
            return Ok(());
        }
        if !stream.begun {
            stream.begun = true;
            if stream.repair {
                // Labelled with the version pinned below (a checkpoint may
                // have become durable since the repair was queued): the
                // follower applies its own entries after exactly that.
                let meta = stream.message.mut_snapshot().mut_metadata();
                (meta.index, meta.term) = base;
            }
            // The stream reads the last committed version of the tree,
            // pinned until it ends: it reflects at least the snapshot's
            // index (raft-rs's log was compacted only up to a durable
            // checkpoint) and only committed entries, and the follower
            // replays the entries after the index over it (blind writes of
            // whole tree entries: replaying them again changes nothing).
            self.store.pin_snapshot(buffers, peer)?;
            wire::snapshot_begin(out, stream.message.get_snapshot().get_metadata(), stream.repair);
        }
        if !stream.chunks_done {
            let (pairs, end) = self.store.snapshot_chunk(pool, peer, stream.cursor.as_deref(), SNAPSHOT_CHUNK_BYTES)?;
            for (key, value) in &pairs {
                wire::snapshot_pair(pool, buffers, out, key, value)?;
            }
            stream.progress_at = Instant::now();
            if let Some((last, _)) = pairs.last() {
                stream.cursor = Some(last.clone());
            }
            if end {
                stream.chunks_done = true;
                wire::snapshot_end(out, None);
            } else {
                wire::snapshot_end(out, stream.cursor.as_deref());
            }
        }
        if replica.stream_may_finish(peer) {
            tracing::info!(follower = peer, "snapshot sent");
            if let Some(message) = replica.stream_finished(peer) {
                wire::encode(pool, buffers, &self.store, message, |_| None, out)?;
            }
        }
        Ok(())
    }

    fn read_from_peer(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        inbound: &mut Inbound,
        stream: &mut Stream,
        release: &mut Release<'_>,
    ) -> Progress {
        let config = self.receive_config();
        tracing::trace!(peer = inbound.peer, bytes = stream.len(), "peer input");
        let mut frames = 0;
        loop {
            match conn.parser.parse(pool, buffers, &config, stream, &mut conn.args, release) {
                Parsed::Incomplete => return Progress { requests: frames, close: false, more: false, waits: false },
                Parsed::Malformed(why) => {
                    self.peer_frames_refused += 1;
                    tracing::warn!("a peer link broke the protocol: {why}");
                    return Progress { requests: frames, close: true, more: false, waits: false };
                }
                Parsed::Command => {}
            }
            frames += 1;
            if let Some(why) = conn.args.refused.take() {
                conn.args.clear(buffers);
                let why = if why == REFUSED_NO_ROOM {
                    self.peer_frame_unstored(buffers, &why)
                } else {
                    // Over this node's value limit: peers configured apart.
                    self.peer_frames_refused += 1;
                    format!("a frame refused: {why}")
                };
                tracing::warn!(peer = inbound.peer, "closing a peer link: {why}");
                return Progress { requests: frames, close: true, more: false, waits: false };
            }
            tracing::trace!(peer = inbound.peer, args = conn.args.len(), "peer frame");
            // A bug that panics closes this link; the node serves on
            // (`guard.rs`).
            let framed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.peer_frame(pool, buffers, conn, inbound)
            }));
            let result = framed.unwrap_or_else(|panic| Err(self.peer_frame_panicked(panic)));
            conn.args.clear(buffers);
            if conn.relay_accepted.is_some() {
                return Progress { requests: frames, close: false, more: false, waits: false };
            }
            if let Err(why) = result {
                self.peer_frames_refused += 1;
                tracing::warn!(peer = inbound.peer, "closing a peer link: {why}");
                return Progress { requests: frames, close: true, more: false, waits: false };
            }
        }
    }

    fn peer_frame(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        inbound: &mut Inbound,
    ) -> Result<(), String> {
        let replica = self.replica.as_mut().expect("replicated");
        if inbound.peer.is_none() {
            let (group, node) = wire::parse_hello(pool, &conn.args, &replica.config.secret)?;
            if group != replica.config.group_id {
                return Err(format!("HELLO from group {group}, this node is in group {}", replica.config.group_id));
            }
            if node == replica.config.node_id || node == 0 {
                return Err(format!("HELLO from node {node}"));
            }
            match conn.args.upper(0).as_deref() {
                Some(b"RELAY") => conn.relay_accepted = Some(crate::apps::kv::LISTENER_RESP),
                Some(b"RELAYHTTP") => conn.relay_accepted = Some(crate::apps::kv::LISTENER_HTTP),
                _ => {}
            }
            if conn.relay_accepted.is_some() {
                // The client as the follower set it up (it authenticated
                // there: the link itself presented the group's secret).
                let state = wire::relay_state(pool, &conn.args)?;
                conn.authenticated |= state.authenticated;
                conn.encoder.resp3 = state.resp3;
                conn.db = state.db;
                conn.name = state.name;
                return Err(RELAYED.into());
            }
            if let Some(addr) = wire::hello_client_addr(pool, &conn.args) {
                replica.note_client_addr(node, addr);
            }
            inbound.peer = Some(node);
            return Ok(());
        }
        self.panic_if_armed(crate::apps::kv::state::PanicPoint::PeerFrame);
        let frame = inbound.frame(pool, buffers, &mut self.store, &mut conn.args)?;
        let replica = self.replica.as_mut().expect("replicated");
        match frame {
            Frame::Nothing => Ok(()),
            Frame::Message(received) => replica.receive(buffers, received).map_err(|e| e.to_string()),
            Frame::RepairAsked(index) => {
                replica.repair_asked(inbound.peer.expect("after HELLO"), index);
                Ok(())
            }
            Frame::SnapshotBegin(meta, repair) => {
                if let (Some((seed, fences)), Some(device)) =
                    (self.powerfail_at_loading.take(), self.config.power_switch.as_ref())
                {
                    device.crash_at_fence(device.fences() + fences, seed);
                }
                replica.snapshot_begin(&meta, repair, inbound.peer.expect("after HELLO")).map_err(|e| e.to_string())
            }
            Frame::SnapshotChunk { upper, pairs } => {
                let from = inbound.peer.expect("after HELLO");
                replica.snapshot_chunk(&mut self.store, pool, buffers, (upper, from), pairs).map_err(|e| e.to_string())
            }
        }
    }

    /// The parser kept none of a frame's value (no room in the pool): the
    /// frame was whole on the wire but is lost here, so the link closes and
    /// the leader sends it again. A checkpoint becomes due to free room: a
    /// snapshot that was loading is streamed again from its first key, and
    /// what this node merged already (kept by that checkpoint) costs the
    /// pool nothing the second time.
    fn peer_frame_unstored(&mut self, buffers: &Buffers, why: &str) -> String {
        self.peer_frames_unstored += 1;
        self.store.note_buffers(buffers);
        let (free, count) = (buffers.free_count(), buffers.count());
        let replica = self.replica.as_ref().expect("replicated");
        let again = if replica.is_loading() { "; the snapshot loading is sent again" } else { "" };
        format!(
            "this node's pool is full: a value from the peer was not kept ({why}; {free} of {count} buffers free, {} kept for client writes){again}",
            self.config.buffers_reserve
        )
    }

    /// A peer link closed.
    pub(super) fn peer_gone(&mut self, buffers: &mut Buffers, link: PeerLink) {
        if !matches!(link, PeerLink::Relay { .. }) {
            self.peer_links_closed += 1;
        }
        match link {
            PeerLink::Inbound(mut inbound) => inbound.abandon(buffers),
            PeerLink::Outbound { peer, .. } => {
                if let Some(replica) = self.replica.as_mut() {
                    replica.link_down(peer);
                }
            }
            PeerLink::Relay { id, .. } => self.relay_closed(buffers, id, false),
        }
    }

    /// The loop's dials: links to peers that are down.
    pub(super) fn replica_dials(&mut self, dials: &mut Vec<Dial>) {
        self.relay_dials(dials);
        let Some(replica) = self.replica.as_mut() else { return };
        for (peer, addr) in replica.dials(Instant::now()) {
            dials.push(Dial { id: peer as usize, addr, timeout: DIAL_TIMEOUT });
        }
    }

    pub(super) fn replica_dial_failed(&mut self, id: usize, error: std::io::Error) {
        if id >= crate::apps::kv::forward::RELAY_DIAL_BASE {
            tracing::debug!("a relay to the leader failed: {error}");
            self.relay_failed(id);
            return;
        }
        if let Some(replica) = self.replica.as_mut() {
            tracing::debug!(peer = id, "dialing a peer failed: {error}");
            replica.link_down(id as u64);
        }
    }

    /// Peer links with messages to send.
    pub(super) fn replica_wakeups(&mut self, wake: &mut Vec<ConnToken>) {
        wake.append(&mut self.peer_wake);
        self.relay_wakeups(wake);
        if let Some(replica) = self.replica.as_ref() {
            for (slot, generation) in replica.links_to_wake() {
                wake.push(ConnToken { slot, generation });
            }
        }
    }

    /// Raft's clock, once per loop turn; and the end of snapshot streams
    /// that stopped (a leader that stepped down, a link that closed): the
    /// tree versions they pinned are let go.
    pub(super) fn replica_tick(&mut self, buffers: &mut Buffers) {
        let shard = self.shard_index();
        let Some(replica) = self.replica.as_mut() else { return };
        let now = Instant::now();
        replica.tick(now);
        // (Not while a paused script holds a group open: its records are
        // proposed when it ends.)
        if let Some(exchange) = self.across.as_ref().filter(|_| !self.store.in_group()) {
            follow_shard_zero(exchange, shard, replica);
        }
        replica.drop_streams_unless_leading();
        if !replica.streams.is_empty() {
            // What pinned versions hold back is bounded: an eighth of the
            // pool; and while the pool runs short (under a sixteenth free),
            // nothing. A stream that holds nothing back costs the pool
            // nothing: it goes on however full the pool is (it was
            // cancelled whenever under a quarter was free, so a follower
            // behind a leader whose pool was three quarters full could
            // never get its snapshot, and stayed behind for good).
            let held = self.store.pinned_buffers() as u64;
            let count = u64::from(buffers.count());
            let short = u64::from(buffers.free_count()) < count / 16;
            let too_much = held > count / 8 || (held > 0 && short);
            replica.cancel_streams(now, too_much);
        }
        let streams = &replica.streams;
        if let Err(error) = self.store.retain_snapshot_pins(buffers, |peer| streams.contains_key(&peer)) {
            tracing::error!("releasing what a snapshot stream held: {error}");
        }
    }

    /// Why a data command (`data`: a read, a write, an HTTP request) that
    /// came on a link from another shard may not run on this shard of a
    /// replicated node: this shard does not lead its group, and its client
    /// did not ask to read where it is (READONLY: `LINK_READONLY`). Its
    /// leadership may be on its way here (`follow_shard_zero`), or the
    /// client's own shard may not know yet that the node lost its own: the
    /// client tries again (TRYAGAIN), as on an unsharded node that lost its
    /// leadership. A link's SELECT, HELLO, PUBLISH and the like run.
    pub(super) fn link_refuses(&self, data: bool) -> Option<String> {
        let replica = self.replica.as_ref()?;
        if !data || self.link_reads_here || replica.is_leader() {
            return None;
        }
        Some(format!(
            "TRYAGAIN this shard does not lead its group on this node (node {} does): try again",
            replica.leader_id()
        ))
    }

    /// Tells the store whether it may take writes now.
    pub(super) fn sync_writable(&mut self) {
        if let Some(replica) = self.replica.as_ref() {
            let writable = replica.can_write();
            self.store.set_writable(writable);
        }
    }

    /// Whether this node runs writes (always, outside a group).
    pub(super) fn writable(&self) -> bool {
        self.replica.as_ref().is_none_or(|r| r.can_write())
    }

    /// Before the loop's commit: the replica's turn (a fatal error stops
    /// the server: a restart rebuilds the node from its durable state).
    pub(super) fn replica_before_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<()> {
        let Some(replica) = self.replica.as_mut() else { return Ok(()) };
        replica.before_commit(&mut self.store, pool, buffers).map_err(|e| {
            use crate::replica::ReplicaError::{Deposed, Diverged, SnapshotRefused};
            if matches!(e, Diverged { .. } | Deposed | SnapshotRefused { .. }) {
                self.rebuild_requested = true;
            }
            tracing::error!("replication stopped this node: {e}");
            std::io::Error::other(e.to_string())
        })
    }

    /// Whether the loop stopped because this node's tree reflects entries
    /// the group dropped (a deposed leader's uncommitted commands): its
    /// durable state, opened again, is the committed log's.
    pub fn rebuild_requested(&self) -> bool {
        self.rebuild_requested
    }
}
