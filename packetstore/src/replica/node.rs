//! One node of a replicated group: raft-rs's `RawNode` over the store's
//! log (`entries.rs`), driven by the event loop once per turn.
//!
//! The commit path (docs/replication.md has it as numbered steps): the
//! leader runs a command on its tree at once, as a single server does, and
//! its records wait in the log; at the end of the turn they become one
//! Raft entry (an entry record closes them), raft-rs sends it to the
//! followers while the leader's own fence or fdatasync runs; each follower
//! logs the entry where its bytes landed, makes it durable with its own
//! fence or fdatasync, and answers; the replies of the turn leave once a
//! majority (the leader included) has the entry durable. A follower
//! applies an entry to its tree once it is committed.
//!
//! Owns: the Raft node, the entries proposed and received but not yet
//! handed to the log, the messages waiting for their links, and which of
//! the loop's commits may release their replies.
//!
//! Invariants: the tree reflects exactly the entries up to `tree_index`
//! (a leader's beyond the commit index are its own, run speculatively),
//! unless a snapshot or repair is loading (`loading`: the tree is part
//! old, part stream, nothing is applied to it or read from it, and a
//! checkpoint's `#raft` says so); a
//! durable checkpoint never reflects an entry that is not committed; a
//! reply leaves only once the entry of every write before it is committed
//! in the term it was proposed in, and, for a turn that served reads, once
//! a quorum confirmed the leader after those reads (ReadIndex).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfState, Entry, EntryType, Message};
use raft::{RawNode, StateRole};

use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::replica::entries::{EntryKey, EntryMeta, LogStorage, Meta, ENTRY_DATA_MAX, RECORDS};
use crate::replica::wire::{release_records, Landed, Received};
use crate::store::db::{Store, StoreError, KIND_ENTRY, KIND_STATE};

/// How a replicated group is configured on this node.
#[derive(Clone, Debug)]
pub struct ReplicaConfig {
    pub node_id: u64,
    pub group_id: u64,
    /// Every voter of a new group, this node included: id and peer address.
    pub members: BTreeMap<u64, SocketAddr>,
    /// A peer link must present this in its HELLO.
    pub secret: Vec<u8>,
    /// raft-rs's tick.
    pub tick: Duration,
    /// An election starts after 10 to 20 ticks without a leader.
    pub election_ticks: usize,
    pub heartbeat_ticks: usize,
    /// Join an existing group (no membership of its own until the leader
    /// adds it) instead of starting a new one with `members` as voters.
    pub join: bool,
    /// This node's Redis-protocol address, told to peers in HELLO: ROLE and
    /// INFO name the leader's client address, not its peer port.
    pub client_addr: Option<SocketAddr>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    #[error("this pool belongs to group {found} as node {node}; this server was started for group {wanted} as node {wanted_node}")]
    OtherGroup { found: u64, node: u64, wanted: u64, wanted_node: u64 },
    /// The group dropped entries this node's tree reflects (a leader cut
    /// off with writes nobody else has): only a restart, which rebuilds
    /// the tree from its checkpoint and the committed entries, goes on.
    #[error("the group dropped entry {index}, which this node's tree reflects: restarting rebuilds it from the committed log")]
    Diverged { index: u64 },
    /// The node stopped leading in the loop turn in which it ran writes
    /// (a higher term arrived after them): they are in its tree but in no
    /// entry, and no other node has them. Like `Diverged`, only a rebuild
    /// from the committed log goes on; their clients get no reply.
    #[error(
        "this node stopped leading in the turn in which it ran writes: rebuilding from the committed log drops them"
    )]
    Deposed,
    /// A snapshot whose chunks are merged into the tree was refused by
    /// raft-rs when its MsgSnapshot came (stale, or this node's log
    /// already past it): the tree holds a stream that matches no log, and
    /// no later snapshot may begin over it. Only a rebuild goes on.
    #[error("raft-rs refused snapshot {index} after its chunks were merged: rebuilding from the durable checkpoint and the committed log")]
    SnapshotRefused { index: u64 },
    #[error("corrupt replicated log: {0}")]
    Corrupt(String),
}

/// A link to a peer, one way: our messages to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    Down { retry_at: Instant },
    Dialing,
    Up { token: (u32, u32) },
}

/// What a begun commit's replies wait for.
#[derive(Clone, Copy, Debug)]
struct Awaited {
    seq: u64,
    /// The last entry proposed before it, and that entry's term.
    index: u64,
    term: u64,
    /// A ReadIndex request (its context is `seq`), if the turn served reads,
    /// and the term this node led in when it asked.
    read: bool,
    leader_term: u64,
}

pub struct Replica {
    pub config: ReplicaConfig,
    raw: RawNode<LogStorage>,
    /// The leader's proposals not yet handed to the storage, by index.
    proposed: HashMap<u64, EntryMeta>,
    /// Received records, by the slot named in their entry's data.
    landed: HashMap<u32, Vec<Landed>>,
    next_landed: u32,
    /// The last entry the tree reflects.
    tree_index: u64,
    tree_term: u64,
    links: BTreeMap<u64, Link>,
    outbox: BTreeMap<u64, VecDeque<Message>>,
    last_tick: Instant,
    /// Readies appended but not yet durable: (commit seq, ready number,
    /// messages to send once durable). A ready waits for the first commit
    /// begun after it.
    unpersisted: VecDeque<(u64, u64, Vec<Message>)>,
    begun: u64,
    awaited: VecDeque<Awaited>,
    acknowledged: u64,
    reads_confirmed: u64,
    /// The first commit whose replies will never be acknowledged, not yet
    /// told to the loop.
    abandoned: Option<u64>,
    /// Reads served since the last commit began, and the term this node
    /// led in when it served them.
    pub reads_pending: bool,
    reads_term: u64,
    meta_written: Meta,
    applied_checkpoint: u64,
    /// The leader's snapshots being streamed, by follower; and the base of
    /// those sent, until the follower has caught up to it.
    pub streams: BTreeMap<u64, SnapshotStream>,
    /// Snapshot streams begun since the start (a follower merely behind
    /// catches up from the log: on a healthy group this stays 0).
    pub snapshots_started: u64,
    /// Snapshot streams cancelled (stalled, or holding back too much).
    pub snapshots_cancelled: u64,
    /// A loaded snapshot raft-rs refused: the next commit stops the loop
    /// for a rebuild.
    snapshot_refused: Option<u64>,
    /// A leadership transfer asked for (`transfer_leadership`), begun once
    /// the turn's records are proposed (raft-rs drops proposals while one
    /// is under way), and when the last one began (another waits
    /// `TRANSFER_RETRY_TIMEOUTS` election timeouts: the shard serves
    /// meanwhile, should the target be unable to take it).
    transfer_to: Option<u64>,
    transfer_begun: Option<Instant>,
    /// The peers' Redis-protocol addresses, as their HELLOs gave them.
    client_addrs: BTreeMap<u64, SocketAddr>,
    sent_snapshots: BTreeMap<u64, u64>,
    /// This node was removed from the group.
    removed: bool,
    /// A follower loading a snapshot (its tree reflects no entry until the
    /// snapshot is installed; checkpoints meanwhile say so in `#raft`).
    loading: Option<Loading>,
    /// This node opened a tree left part loaded (INFO replication's
    /// `raft_opened_part_loaded`).
    pub opened_part_loaded: bool,
    /// A follower whose tree is part loaded: the repair to ask the leader
    /// for (its id, this tree's last whole entry), sent on the link to it,
    /// and when it was last asked for.
    repair_ask: Option<(u64, u64)>,
    repair_asked_at: Option<Instant>,
    /// The leader: repairs asked for, by follower (the entry the stream's
    /// base must reach), begun once a checkpoint here reaches it.
    repairs: BTreeMap<u64, u64>,
    /// Part-loaded trees repaired here since the start (INFO's
    /// `raft_repairs`).
    pub repairs_done: u64,
}

/// A snapshot on its way to a follower (`wire.rs`'s B, P and E frames,
/// then raft-rs's MsgSnapshot).
pub struct SnapshotStream {
    pub message: Message,
    /// The last key sent (None: none yet).
    pub cursor: Option<Vec<u8>>,
    pub begun: bool,
    /// Every chunk was sent: the MsgSnapshot follows at once (the chunks
    /// are a committed version of the tree, pinned by the store).
    pub chunks_done: bool,
    /// When a chunk last went out (or the stream began): a follower that
    /// takes none for `STREAM_STALL_MAX` has its stream cancelled.
    pub progress_at: Instant,
    /// It repairs a follower's part-loaded tree: no MsgSnapshot ends it,
    /// and raft-rs does not hear of it.
    pub repair: bool,
}

/// A snapshot stream that sends nothing for this long (a stopped or
/// stalled follower) is cancelled: its pinned version holds back what
/// every checkpoint frees meanwhile. raft-rs sends another later.
pub const STREAM_STALL_MAX: Duration = Duration::from_secs(10);
/// After a leadership transfer began, the next waits this many election
/// timeouts (raft-rs gives a transfer one).
const TRANSFER_RETRY_TIMEOUTS: usize = 5;

/// A follower whose snapshot stream sent nothing for this long (or that
/// opened a tree left part loaded) asks the leader for a repair stream,
/// and asks again this long after: a leader that still has the entries it
/// lacks sends those instead of a snapshot, which a part-loaded tree
/// cannot apply.
const REPAIR_ASK_AFTER: Duration = Duration::from_secs(2);

#[derive(Clone, Debug)]
struct Loading {
    /// The snapshot's base: its index and term.
    index: u64,
    term: u64,
    /// The upper key of the last chunk merged (None: none yet).
    lower: Option<Vec<u8>>,
    /// Every chunk merged, the last included.
    complete: bool,
    /// Its MsgSnapshot went to raft-rs (the install follows).
    stepped: bool,
    /// When its stream last sent a frame (None: opened part loaded).
    heard_at: Option<Instant>,
    /// A repair stream (asked for by this node): once its last chunk is
    /// merged, the tree stands at `index` and this node applies the
    /// entries after it from its own log.
    repair: bool,
    /// The peer whose link began the stream: frames of another (an old
    /// leader's, flushed late) are refused, not merged into it.
    from: Option<u64>,
}

impl Loading {
    /// A load of the snapshot at (index, term) that merged nothing yet.
    fn new((index, term): (u64, u64), heard_at: Option<Instant>, repair: bool, from: Option<u64>) -> Loading {
        Loading { index, term, lower: None, complete: false, stepped: false, heard_at, repair, from }
    }
}

impl Replica {
    /// Opens the node over `store` (opened `replicated`): rebuilds the Raft
    /// log from the store's live records and applies the entries its hard
    /// state says are committed.
    pub fn open(
        config: ReplicaConfig,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
    ) -> Result<Replica, ReplicaError> {
        let checkpoint = match store.raft_meta(pool)? {
            Some(bytes) => Some(Meta::decode(&bytes).ok_or_else(|| ReplicaError::Corrupt("#raft".into()))?),
            None => None,
        };
        let mut storage = LogStorage::default();
        // A new group's members start as voters; a node joining an
        // existing group starts with none and learns the membership from
        // the leader (a snapshot).
        let voters: Vec<u64> = if config.join { Vec::new() } else { config.members.keys().copied().collect() };
        let mut meta = checkpoint.clone().unwrap_or_else(|| Meta {
            group_id: config.group_id,
            node_id: config.node_id,
            conf_state: ConfState::from((voters, Vec::<u64>::new())),
            ..Meta::default()
        });
        storage.snapshot_index = meta.applied_index;
        storage.snapshot_term = meta.applied_term;
        let latest = rebuild(store, pool, &mut storage, meta.applied_index)?;
        if let Some(latest) = latest {
            // Where the tree stands is the checkpoint's to say.
            meta = Meta {
                applied_index: meta.applied_index,
                applied_term: meta.applied_term,
                loading: meta.loading,
                ..latest
            };
        }
        if meta.group_id != config.group_id || meta.node_id != config.node_id {
            return Err(ReplicaError::OtherGroup {
                found: meta.group_id,
                node: meta.node_id,
                wanted: config.group_id,
                wanted_node: config.node_id,
            });
        }
        storage.hard_state = meta.hard_state.clone();
        storage.conf_state = meta.conf_state.clone();
        let mut config = config;
        for (id, addr) in &meta.addresses {
            // Members added at run time; --peers names the others.
            config.members.entry(*id).or_insert(*addr);
        }
        let mut replica = Replica::start(config, storage, meta.applied_index, meta.applied_term)?;
        replica.meta_written = meta.clone();
        if let Some((index, term)) = meta.loading {
            // The durable tree is part old, part snapshot: nothing is
            // applied to it, and no read is served, until a snapshot is
            // loaded whole (a repair is asked for: `ask_for_repair`).
            tracing::warn!(index, "this node's tree was left part loaded (snapshot {index}): it waits for a snapshot");
            replica.open_part_loaded(index, term);
        }
        // Entries committed before the restart: the tree gets them now.
        let commit = meta.hard_state.commit.min(replica.raw.store().last_index());
        for index in meta.applied_index + 1..=commit {
            let entry = replica.raw.store().entry(index).expect("in the log");
            replica.apply_entry(store, pool, buffers, &entry)?;
        }
        replica.report_applied();
        if checkpoint.is_none() {
            // A new member: its state record names the group from now on.
            let key = replica.meta().encode();
            store.append_replica_record(pool, buffers, KIND_STATE, &key)?;
        }
        replica.update_store(store);
        Ok(replica)
    }

    /// The tree is part loaded (snapshot `index`, `term`): nothing is
    /// applied to it and no read served until a repair or a snapshot.
    fn open_part_loaded(&mut self, index: u64, term: u64) {
        self.loading = Some(Loading::new((index, term), None, false, None));
        self.opened_part_loaded = true;
    }

    /// A test switch (`PACKETSTORE_TEST_OPEN_PART_LOADED`): this node treats
    /// its tree as part loaded, as if a crash had left it so.
    pub fn treat_tree_as_part_loaded(&mut self) {
        tracing::warn!("test switch: this node treats its tree as part loaded");
        let (index, term) = (self.tree_index, self.tree_term);
        self.open_part_loaded(index.max(1), term);
    }

    fn start(
        config: ReplicaConfig,
        storage: LogStorage,
        applied: u64,
        applied_term: u64,
    ) -> Result<Replica, ReplicaError> {
        let raft_config = raft::Config {
            id: config.node_id,
            election_tick: config.election_ticks,
            heartbeat_tick: config.heartbeat_ticks,
            applied,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            check_quorum: true,
            pre_vote: true,
            read_only_option: raft::ReadOnlyOption::Safe,
            ..raft::Config::default()
        };
        raft_config.validate()?;
        let logger = slog::Logger::root(TracingDrain, slog::o!("node" => config.node_id));
        let raw = RawNode::new(&raft_config, storage, &logger)?;
        let now = Instant::now();
        let links = config
            .members
            .keys()
            .filter(|&&id| id != config.node_id)
            .map(|&id| (id, Link::Down { retry_at: now }))
            .collect();
        Ok(Replica {
            config,
            raw,
            proposed: HashMap::new(),
            landed: HashMap::new(),
            next_landed: 0,
            tree_index: applied,
            tree_term: applied_term,
            links,
            outbox: BTreeMap::new(),
            last_tick: now,
            unpersisted: VecDeque::new(),
            begun: 0,
            awaited: VecDeque::new(),
            acknowledged: 0,
            reads_confirmed: 0,
            abandoned: None,
            reads_pending: false,
            reads_term: 0,
            meta_written: Meta::default(),
            applied_checkpoint: applied,
            streams: BTreeMap::new(),
            sent_snapshots: BTreeMap::new(),
            snapshots_started: 0,
            snapshots_cancelled: 0,
            snapshot_refused: None,
            transfer_to: None,
            transfer_begun: None,
            client_addrs: BTreeMap::new(),
            removed: false,
            loading: None,
            opened_part_loaded: false,
            repair_ask: None,
            repair_asked_at: None,
            repairs: BTreeMap::new(),
            repairs_done: 0,
        })
    }

    // ---- state ----

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// Node `id`'s Redis-protocol address, once known (its HELLO, or this
    /// node's own).
    pub fn client_addr(&self, id: u64) -> Option<SocketAddr> {
        if id == self.config.node_id {
            return self.config.client_addr;
        }
        self.client_addrs.get(&id).copied()
    }

    /// A peer said, in its HELLO, where its clients reach it.
    pub fn note_client_addr(&mut self, id: u64, addr: SocketAddr) {
        self.client_addrs.insert(id, addr);
    }

    pub fn leader_id(&self) -> u64 {
        self.raw.raft.leader_id
    }

    /// A leader hands its leadership to `to` (raft-rs's transfer: once `to`
    /// has every entry, it campaigns at once), unless it is already doing
    /// so: begun at this turn's commit, after its records are proposed;
    /// no write runs here meanwhile (`can_write`). A sharded node's shards
    /// follow the leader of shard 0's group this way, so that one node
    /// leads every shard (`apps/kv/replication.rs`).
    pub fn transfer_leadership(&mut self, to: u64) {
        let timeout = self.config.tick * (self.config.election_ticks * TRANSFER_RETRY_TIMEOUTS) as u32;
        let recent = self.transfer_begun.is_some_and(|at| at.elapsed() < timeout);
        if self.is_leader() && to != self.config.node_id && !self.is_transferring() && !recent {
            self.transfer_to = Some(to);
        }
    }

    /// A leader handing its leadership over, or about to (raft-rs gives
    /// up after an election timeout, and it leads on).
    pub fn is_transferring(&self) -> bool {
        self.raw.raft.lead_transferee.is_some() || self.transfer_to.is_some()
    }

    /// Begins the transfer asked for, once the turn's records are proposed
    /// and no group is open (a paused script's: its records are proposed
    /// when it ends, which a transfer under way would refuse).
    fn begin_transfer(&mut self, store: &Store) {
        if store.in_group() {
            return;
        }
        let Some(to) = self.transfer_to.take() else { return };
        if self.is_leader() && self.raw.raft.lead_transferee.is_none() {
            tracing::info!(group = self.config.group_id, to, "handing leadership over");
            self.transfer_begun = Some(Instant::now());
            self.raw.transfer_leader(to);
        }
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn commit_index(&self) -> u64 {
        self.raw.raft.raft_log.committed
    }

    pub fn last_index(&self) -> u64 {
        self.raw.raft.raft_log.last_index()
    }

    pub fn first_index(&self) -> u64 {
        self.raw.store().first_index()
    }

    pub fn tree_index(&self) -> u64 {
        self.tree_index
    }

    pub fn role(&self) -> &'static str {
        match self.raw.raft.state {
            StateRole::Leader => "leader",
            StateRole::Follower => "follower",
            StateRole::Candidate | StateRole::PreCandidate => "candidate",
        }
    }

    /// On the leader: whether follower `id` was heard from within the last
    /// election timeout (raft-rs's check-quorum activity).
    pub fn follower_active(&self, id: u64) -> bool {
        self.is_leader() && self.raw.raft.prs().get(id).is_some_and(|pr| pr.recent_active)
    }

    /// The leader's view of each follower: (id, matched index).
    pub fn progress(&self) -> Vec<(u64, u64)> {
        if !self.is_leader() {
            return Vec::new();
        }
        let mut out: Vec<(u64, u64)> = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(&id, _)| id != self.config.node_id)
            .map(|(&id, pr)| (id, pr.matched))
            .collect();
        out.sort_unstable();
        out
    }

    pub fn voters(&self) -> Vec<u64> {
        let mut voters: Vec<u64> = self.raw.raft.prs().conf().voters().ids().iter().collect();
        voters.sort_unstable();
        voters
    }

    /// Whether this node may run writes now: it leads, and its tree holds
    /// every committed entry, its own term's first one included (so no
    /// entry of an earlier term is still to be applied under it).
    pub fn can_write(&self) -> bool {
        let log = &self.raw.raft.raft_log;
        self.is_leader()
            && log.term(log.committed).unwrap_or(0) == self.raw.raft.term
            && self.tree_index >= log.committed
            && !self.is_transferring()
            && self.loading.is_none()
    }

    fn meta(&self) -> Meta {
        Meta {
            group_id: self.config.group_id,
            node_id: self.config.node_id,
            hard_state: self.raw.raft.hard_state(),
            conf_state: self.raw.store().conf_state.clone(),
            applied_index: self.tree_index,
            applied_term: self.tree_term,
            addresses: self.config.members.clone(),
            loading: self.loading.as_ref().map(|l| (l.index, l.term)),
        }
    }

    // ---- links ----

    /// Links to open: `(peer id, address)`.
    pub fn dials(&mut self, now: Instant) -> Vec<(u64, SocketAddr)> {
        let mut out = Vec::new();
        for (&id, link) in self.links.iter_mut() {
            if let Link::Down { retry_at } = *link {
                if now >= retry_at {
                    if let Some(&addr) = self.config.members.get(&id) {
                        *link = Link::Dialing;
                        out.push((id, addr));
                    }
                }
            }
        }
        out
    }

    pub fn link_up(&mut self, peer: u64, token: (u32, u32)) {
        self.links.insert(peer, Link::Up { token });
    }

    /// A link failed or closed: retried after a pause; raft-rs hears the
    /// peer is unreachable (it probes again instead of streaming).
    pub fn link_down(&mut self, peer: u64) {
        self.links.insert(peer, Link::Down { retry_at: Instant::now() + Duration::from_millis(200) });
        self.outbox.remove(&peer);
        if self.streams.remove(&peer).is_some_and(|s| !s.repair) {
            self.raw.report_snapshot(peer, raft::SnapshotStatus::Failure);
        }
        self.sent_snapshots.remove(&peer);
        if self.is_leader() {
            self.raw.report_unreachable(peer);
        }
    }

    /// The links with messages waiting (their loop tokens).
    pub fn links_to_wake(&self) -> Vec<(u32, u32)> {
        let streaming = self.streams.keys();
        let queued = self.outbox.iter().filter(|(_, queue)| !queue.is_empty()).map(|(id, _)| id);
        let asked = self.repair_ask.as_ref().map(|(peer, _)| peer);
        let mut ids: Vec<u64> = queued.chain(streaming).chain(asked).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter()
            .filter_map(|id| match self.links.get(id) {
                Some(Link::Up { token }) => Some(*token),
                _ => None,
            })
            .collect()
    }

    /// The messages waiting for `peer`'s link.
    pub fn take_outgoing(&mut self, peer: u64) -> VecDeque<Message> {
        self.outbox.remove(&peer).unwrap_or_default()
    }

    /// The records of an entry to send (the entry record excluded).
    pub fn records_of(&self, index: u64) -> Option<Vec<u64>> {
        let meta = self.raw.store().get(index).or_else(|| self.proposed.get(&index))?;
        Some(meta.lsns[..meta.lsns.len() - 1].to_vec())
    }

    fn send(&mut self, messages: Vec<Message>) {
        for message in messages {
            tracing::trace!(to = message.to, kind = ?message.msg_type, entries = message.entries.len(), "queue");
            if message.msg_type == raft::eraftpb::MessageType::MsgSnapshot {
                let to = message.to;
                // (A part-loaded tree has nothing to send: a leader that
                // loads hands its leadership over.)
                let up = matches!(self.links.get(&to), Some(Link::Up { .. }));
                if up && !self.streams.contains_key(&to) && self.loading.is_none() {
                    tracing::info!(
                        follower = to,
                        index = message.get_snapshot().get_metadata().index,
                        "streaming a snapshot"
                    );
                    self.snapshots_started += 1;
                    self.streams.insert(
                        to,
                        SnapshotStream {
                            message,
                            cursor: None,
                            begun: false,
                            chunks_done: false,
                            progress_at: Instant::now(),
                            repair: false,
                        },
                    );
                } else {
                    self.raw.report_snapshot(to, raft::SnapshotStatus::Failure);
                }
                continue;
            }
            // Messages to a peer whose link is down are dropped: raft-rs
            // sends again (heartbeats, probes).
            if matches!(self.links.get(&message.to), Some(Link::Up { .. })) {
                self.outbox.entry(message.to).or_default().push_back(message);
            }
        }
    }

    // ---- input ----

    /// Raft's clock: a tick per `config.tick`.
    pub fn tick(&mut self, now: Instant) {
        while now.duration_since(self.last_tick) >= self.config.tick {
            self.last_tick += self.config.tick;
            self.raw.tick();
            if self.raw.raft.election_elapsed % 10 == 0 {
                tracing::debug!(
                    role = self.role(),
                    term = self.term(),
                    commit = self.commit_index(),
                    last = self.last_index(),
                    tree = self.tree_index,
                    begun = self.begun,
                    acked = self.acknowledged,
                    first = self.raw.store().first_index(),
                    streams = self.streams.len(),
                    "replica"
                );
            }
        }
    }

    /// A message from a peer, its records landed in the pool.
    pub fn receive(&mut self, buffers: &mut Buffers, received: Received) -> Result<(), ReplicaError> {
        let Received { mut message, records } = received;
        if message.msg_type == raft::eraftpb::MessageType::MsgSnapshot
            && !self.snapshot_ready(message.get_snapshot().get_metadata().index, message.from)
        {
            tracing::warn!(from = message.from, "a snapshot message without its chunks: dropped");
            release_records(buffers, records.into_iter().flat_map(|(_, r)| r));
            return Ok(());
        }
        if message.msg_type == raft::eraftpb::MessageType::MsgSnapshot {
            if let Some(loading) = self.loading.as_mut() {
                loading.stepped = true;
            }
        }
        tracing::trace!(from = message.from, kind = ?message.msg_type, entries = message.entries.len(), "receive");
        let mut records: HashMap<u64, Vec<Landed>> = records.into_iter().collect();
        for entry in message.entries.iter_mut() {
            if let Some(landed) = records.remove(&entry.index) {
                let slot = self.next_landed;
                self.next_landed = self.next_landed.wrapping_add(1);
                self.landed.insert(slot, landed);
                let mut data = b"L".to_vec();
                data.extend_from_slice(&slot.to_le_bytes());
                entry.data = data.into();
            }
        }
        release_records(buffers, records.into_values().flatten());
        let snapshot = (message.msg_type == raft::eraftpb::MessageType::MsgSnapshot)
            .then(|| message.get_snapshot().get_metadata().index);
        let stepped = match self.raw.step(message) {
            Ok(()) | Err(raft::Error::StepPeerNotFound) | Err(raft::Error::StepLocalMsg) => Ok(()),
            Err(error) => Err(error.into()),
        };
        if let Some(index) = snapshot {
            let taken = self.raw.raft.raft_log.unstable_snapshot().as_ref().map(|s| s.get_metadata().index);
            if taken != Some(index) {
                tracing::warn!(index, "raft-rs refused a loaded snapshot: this node rebuilds itself");
                self.snapshot_refused = Some(index);
            }
        }
        stepped
    }

    // ---- the turn's commit ----

    /// A read was served here as the group's leader: the turn's replies
    /// wait for a ReadIndex in this term.
    pub fn note_read(&mut self) {
        if self.is_leader() {
            if self.reads_pending && self.reads_term != self.term() {
                // Served in two terms in one turn: the earlier is lost.
                self.reads_term = 0;
            } else {
                self.reads_term = self.term();
            }
            self.reads_pending = true;
        }
    }

    /// Whether the turn's end must begin a commit even if the store has
    /// nothing to make durable: reads wait for a ReadIndex.
    pub fn wants_commit(&self) -> bool {
        self.reads_pending
    }

    /// Whether the end of the turn has work for the replica.
    pub fn needs_commit(&self, store: &Store) -> bool {
        self.raw.has_ready() || store.has_open_records() || self.reads_pending || self.repair_complete()
    }

    /// Before the loop's commit begins: the turn's records become an entry
    /// (a leader), raft-rs's ready is handled (messages sent, committed
    /// entries applied, new entries and the hard state logged), and a
    /// ReadIndex is requested for the turn's reads.
    pub fn before_commit(&mut self, store: &mut Store, pool: &Pool, buffers: &mut Buffers) -> Result<(), ReplicaError> {
        if let Some(index) = self.snapshot_refused {
            return Err(ReplicaError::SnapshotRefused { index });
        }
        self.seal(store, pool, buffers)?;
        self.finish_repair(store, pool, buffers)?;
        self.ask_for_repair();
        self.start_repairs();
        self.hand_over_while_loading();
        if self.reads_pending && self.is_leader() {
            if self.raw.raft.commit_to_current_term() {
                let seq = self.begun + 1;
                self.raw.read_index(seq.to_le_bytes().to_vec());
            } else {
                // raft-rs drops a ReadIndex request (silently) until the
                // leader has committed an entry of its term, and until then
                // no data command ran here (`can_write` refuses them with
                // TRYAGAIN): the turn's replies wait only for the commit of
                // the leader's own first entry, not for a confirmation that
                // would never come (they used to wait for the next client's
                // read, minutes later on an idle group).
                self.reads_pending = false;
                self.reads_term = 0;
            }
        }
        self.begin_transfer(store);
        if self.raw.has_ready() {
            self.handle_ready(store, pool, buffers)?;
        }
        self.release_unused(buffers);
        self.note_checkpoints(store);
        self.update_store(store);
        Ok(())
    }

    /// The loop's commit `seq` (1, 2, ...) began: it covers every ready
    /// handled so far, and its replies wait for what was proposed so far.
    pub fn commit_begun(&mut self) {
        self.begun += 1;
        let seq = self.begun;
        for ready in self.unpersisted.iter_mut().filter(|r| r.0 == 0) {
            ready.0 = seq;
        }
        let index = self.last_index();
        let term = self.raw.raft.raft_log.term(index).unwrap_or(0);
        let read = std::mem::take(&mut self.reads_pending);
        let reads_term = std::mem::take(&mut self.reads_term);
        if read && (!self.is_leader() || self.term() != reads_term) {
            // Reads served as leader of a term this node no longer leads:
            // never confirmed, their replies are dropped.
            self.abandoned = Some(self.abandoned.map_or(seq, |a| a.min(seq)));
            self.acknowledged = self.acknowledged.max(seq);
            self.advance_acks();
            return;
        }
        let needs_group = self.is_leader() || read;
        let index = if needs_group { index } else { 0 };
        let leader_term = self.term();
        self.awaited.push_back(Awaited { seq, index, term, read, leader_term });
        self.advance_acks();
    }

    /// The loop's commit `seq` is durable here: raft-rs hears of the
    /// readies it covered, and their messages leave.
    pub fn commit_durable(&mut self, seq: u64, store: &Store) {
        // A checkpoint that became durable released its records: the
        // entries they held leave raft-rs's log at once.
        self.note_checkpoints(store);
        while self.unpersisted.front().is_some_and(|r| r.0 != 0 && r.0 <= seq) {
            let (_, number, messages) = self.unpersisted.pop_front().expect("checked");
            self.raw.on_persist_ready(number);
            self.send(messages);
        }
        self.report_applied();
    }

    /// The first commit whose replies will never be acknowledged, once.
    pub fn take_abandoned(&mut self) -> Option<u64> {
        self.abandoned.take()
    }

    /// Whether every begun commit may release its replies.
    pub fn all_acknowledged(&self) -> bool {
        self.acknowledged == self.begun
    }

    /// How many begun commits may release their replies.
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged
    }

    fn advance_acks(&mut self) {
        let commit = self.commit_index();
        while let Some(front) = self.awaited.front() {
            // Reads asked as leader of a term this node no longer leads are
            // never confirmed: their replies are dropped (the loop closes
            // their connections) and later commits go on.
            let lost = front.read
                && self.reads_confirmed < front.seq
                && (!self.is_leader() || self.term() != front.leader_term);
            if lost {
                tracing::warn!(
                    commit = front.seq,
                    "leadership lost with reads unconfirmed: their clients are disconnected"
                );
                self.abandoned = Some(self.abandoned.map_or(front.seq, |a| a.min(front.seq)));
                self.acknowledged = front.seq;
                self.awaited.pop_front();
                continue;
            }
            // Committed in the term it was proposed in, and applied (a
            // membership change in effect before its reply).
            let compacted = front.index != 0 && front.index < self.first_index();
            let committed = front.index == 0
                || compacted
                || (commit >= front.index
                    && self.raw.raft.raft_log.applied >= front.index
                    && self.raw.raft.raft_log.term(front.index).ok() == Some(front.term));
            let read = !front.read || self.reads_confirmed >= front.seq;
            if !(committed && read) {
                break;
            }
            self.acknowledged = front.seq;
            self.awaited.pop_front();
        }
    }

    /// The turn's records, closed by an entry record and proposed.
    fn seal(&mut self, store: &mut Store, pool: &Pool, buffers: &mut Buffers) -> Result<(), ReplicaError> {
        let Some((mut lsns, payload_bytes)) = store.take_open_records() else { return Ok(()) };
        if !self.is_leader() {
            // Writes run only while the store is writable (`can_write`),
            // which the loop updates after every raft step: these ran while
            // this node led, and a later step of the same turn deposed it.
            return Err(ReplicaError::Deposed);
        }
        self.raw.propose(Vec::new(), RECORDS.to_vec())?;
        let index = self.last_index();
        let term = self.term();
        let key = EntryKey { term, index, entry_type: EntryType::EntryNormal, data: Vec::new() };
        lsns.push(store.append_replica_record(pool, buffers, KIND_ENTRY, &key.encode())?);
        self.proposed.insert(
            index,
            EntryMeta { term, entry_type: EntryType::EntryNormal, data: RECORDS.to_vec(), lsns, payload_bytes },
        );
        self.tree_index = index;
        self.tree_term = term;
        Ok(())
    }

    fn handle_ready(&mut self, store: &mut Store, pool: &Pool, buffers: &mut Buffers) -> Result<(), ReplicaError> {
        let mut ready = self.raw.ready();
        self.send(ready.take_messages());
        if !ready.snapshot().is_empty() {
            self.install_snapshot(store, pool, buffers, ready.snapshot().get_metadata())?;
        }
        for state in ready.take_read_states() {
            let seq = state.request_ctx.as_slice().try_into().map(u64::from_le_bytes).unwrap_or(0);
            self.reads_confirmed = self.reads_confirmed.max(seq);
        }
        let committed = ready.take_committed_entries();
        let entries = ready.take_entries();
        let persist = !entries.is_empty() || ready.hs().is_some();
        for entry in &entries {
            self.persist_entry(store, pool, buffers, entry)?;
        }
        let mut state_changed = ready.hs().is_some();
        for entry in &committed {
            state_changed |= self.apply_entry(store, pool, buffers, entry)?;
        }
        if state_changed {
            let key = self.meta().encode();
            store.append_replica_record(pool, buffers, KIND_STATE, &key)?;
        }
        let number = ready.number();
        let messages = ready.take_persisted_messages();
        self.raw.advance_append_async(ready);
        // A ready with nothing to persist counts as persisted at once,
        // unless earlier ones still wait for their sync (on_persist_ready(n)
        // says every ready up to n is durable).
        if persist || state_changed || !self.unpersisted.is_empty() {
            self.unpersisted.push_back((0, number, messages));
        } else {
            self.raw.on_persist_ready(number);
            self.send(messages);
        }
        self.report_applied();
        self.advance_acks();
        Ok(())
    }

    /// Tells raft-rs how far entries are applied: the tree's index, within
    /// what raft-rs counts as committed and persisted here.
    fn report_applied(&mut self) {
        let applied = self.tree_index.min(self.committed_here());
        if applied > self.raw.raft.raft_log.applied {
            self.raw.advance_apply_to(applied);
        }
    }

    /// The last entry both committed and durable in this node's log: the
    /// most its tree may apply.
    fn committed_here(&self) -> u64 {
        let log = &self.raw.raft.raft_log;
        log.committed.min(log.persisted)
    }

    /// Logs an entry raft-rs hands over (a follower's received one, or
    /// the leader's own, already logged), truncating any it replaces.
    fn persist_entry(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        entry: &Entry,
    ) -> Result<(), ReplicaError> {
        let meta = match (entry.entry_type, entry.data.as_ref()) {
            (EntryType::EntryNormal, RECORDS) => self
                .proposed
                .remove(&entry.index)
                .ok_or_else(|| ReplicaError::Corrupt(format!("proposal {} not found", entry.index)))?,
            (EntryType::EntryNormal, data) if data.first() == Some(&b'L') && data.len() == 5 => {
                let slot = u32::from_le_bytes(data[1..5].try_into().expect("4 bytes"));
                let landed = self.landed.remove(&slot).ok_or_else(|| ReplicaError::Corrupt("landed records".into()))?;
                self.log_received(store, pool, buffers, entry, landed)?
            }
            (entry_type, data) => {
                if data.len() > ENTRY_DATA_MAX {
                    return Err(ReplicaError::Corrupt(format!("entry {} carries {} bytes", entry.index, data.len())));
                }
                let key = EntryKey { term: entry.term, index: entry.index, entry_type, data: data.to_vec() };
                let lsn = store.append_replica_record(pool, buffers, KIND_ENTRY, &key.encode())?;
                EntryMeta { term: entry.term, entry_type, data: data.to_vec(), lsns: vec![lsn], payload_bytes: 0 }
            }
        };
        let dropped = self.raw.mut_store().append(entry.index, meta);
        for gone in dropped {
            if entry.index <= self.tree_index {
                return Err(ReplicaError::Diverged { index: entry.index });
            }
            store.release_logged(pool, &gone.lsns)?;
        }
        Ok(())
    }

    fn log_received(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        entry: &Entry,
        landed: Vec<Landed>,
    ) -> Result<EntryMeta, ReplicaError> {
        let mut lsns = Vec::with_capacity(landed.len() + 1);
        let mut payload_bytes = 0;
        let mut result = Ok(());
        for record in &landed {
            match store.append_received(pool, buffers, record.kind, &record.key, (&record.extents, record.data_crc)) {
                Ok(lsn) => lsns.push(lsn),
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
            payload_bytes += record.len;
        }
        release_records(buffers, landed);
        result?;
        let key =
            EntryKey { term: entry.term, index: entry.index, entry_type: EntryType::EntryNormal, data: Vec::new() };
        lsns.push(store.append_replica_record(pool, buffers, KIND_ENTRY, &key.encode())?);
        Ok(EntryMeta {
            term: entry.term,
            entry_type: EntryType::EntryNormal,
            data: RECORDS.to_vec(),
            lsns,
            payload_bytes,
        })
    }

    /// A committed entry: into the tree (unless the leader ran it
    /// already), or a membership change into raft-rs. Returns whether the
    /// membership changed.
    fn apply_entry(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        entry: &Entry,
    ) -> Result<bool, ReplicaError> {
        if entry.entry_type == EntryType::EntryConfChange && !self.loading.as_ref().is_some_and(|l| l.stepped) {
            // Applied when committed, even if a leader's tree is past it
            // or a follower's is loading (not once a loaded snapshot went
            // to raft-rs: its membership replaces the log's); again after a
            // restart or a repair, as a no-op.
            let change = ConfChange::parse_from_bytes(&entry.data).map_err(|e| ReplicaError::Corrupt(e.to_string()))?;
            let changed = self.apply_membership(&change)?;
            if entry.index > self.tree_index && self.loading.is_none() {
                self.tree_index = entry.index;
                self.tree_term = entry.term;
            }
            return Ok(changed);
        }
        if entry.index <= self.tree_index || self.loading.is_some() {
            return Ok(false);
        }
        let changed = false;
        match entry.entry_type {
            EntryType::EntryNormal if !entry.data.is_empty() => {
                let meta = self.raw.store().get(entry.index).expect("a committed entry is in the log");
                let records = meta.lsns[..meta.lsns.len() - 1].to_vec();
                store.apply_logged(pool, buffers, &records)?;
            }
            EntryType::EntryNormal => {}
            other => return Err(ReplicaError::Corrupt(format!("an entry of type {other:?}"))),
        }
        self.tree_index = entry.index;
        self.tree_term = entry.term;
        Ok(changed)
    }

    /// A committed membership change: into raft-rs (unless already in the
    /// configuration), the member's address into the peers. Returns whether
    /// anything changed.
    fn apply_membership(&mut self, change: &ConfChange) -> Result<bool, ReplicaError> {
        use raft::eraftpb::ConfChangeType;
        let id = change.node_id;
        let voter = self.raw.store().conf_state.voters.contains(&id);
        let adding = change.change_type == ConfChangeType::AddNode;
        if adding {
            if let Some(addr) = std::str::from_utf8(&change.context).ok().and_then(|t| t.parse().ok()) {
                self.config.members.insert(id, addr);
                if id != self.config.node_id {
                    self.links.entry(id).or_insert(Link::Down { retry_at: Instant::now() });
                }
            }
        }
        if adding == voter {
            return Ok(false);
        }
        let state = self.raw.apply_conf_change(change)?;
        self.raw.mut_store().conf_state = state;
        if !adding {
            tracing::info!(node = id, "removed from the group");
            self.links.remove(&id);
            self.outbox.remove(&id);
            // Its stream would never be woken again, and its pin would
            // hold back what every later checkpoint frees.
            self.streams.remove(&id);
            self.sent_snapshots.remove(&id);
            self.removed |= id == self.config.node_id;
        } else {
            tracing::info!(node = id, "added to the group");
        }
        Ok(true)
    }

    /// Proposes adding (with its peer address) or removing a member; it
    /// takes effect once committed. One change at a time.
    pub fn propose_membership(&mut self, id: u64, addr: Option<SocketAddr>) -> Result<(), ReplicaError> {
        use raft::eraftpb::ConfChangeType;
        let mut change = ConfChange { node_id: id, ..Default::default() };
        match addr {
            Some(addr) => {
                change.change_type = ConfChangeType::AddNode;
                change.context = addr.to_string().into_bytes().into();
            }
            None => change.change_type = ConfChangeType::RemoveNode,
        }
        self.raw.propose_conf_change(Vec::new(), change)?;
        Ok(())
    }

    /// Whether this node was removed from its group (it should stop).
    pub fn is_removed(&self) -> bool {
        self.removed
    }

    /// Records that arrived but that raft-rs did not take (a stale or
    /// rejected message): their references go back.
    fn release_unused(&mut self, buffers: &mut Buffers) {
        for (_, records) in self.landed.drain() {
            release_records(buffers, records);
        }
    }

    /// Tells the store where its applied prefix ends, what `#raft` says,
    /// and whether it may checkpoint.
    fn update_store(&mut self, store: &mut Store) {
        // Records from the first entry the tree lacks, or that a follower
        // still needs, stay in the log through the next checkpoint.
        let keep_from = self.retain_from(store).map_or(self.tree_index + 1, |r| r.min(self.tree_index + 1));
        let first = self.raw.store().first_index();
        let unapplied = self.raw.store().get(keep_from.max(first)).map(|meta| meta.lsns[0]);
        store.set_unapplied_from(unapplied);
        let applied_end = self.raw.store().get((self.tree_index + 1).max(first)).map(|meta| meta.lsns[0]);
        store.set_applied_end(applied_end);
        let meta = self.meta();
        if meta != self.meta_written {
            store.set_raft_meta(meta.encode());
            self.meta_written = meta;
        }
        // Loading too: a checkpoint then says so in `#raft` (the pool
        // could otherwise never hold both the old values and the new).
        store.set_checkpoint_allowed(self.tree_index <= self.commit_index());
    }

    /// A checkpoint became durable: the entries it reflects leave the Raft
    /// log (the store released their records).
    fn note_checkpoints(&mut self, store: &Store) {
        let Some((bytes, mark)) = store.durable_raft_meta() else { return };
        let Some(meta) = Meta::decode(bytes) else { return };
        if meta.loading.is_none() && meta.applied_index > self.raw.store().checkpoint_index {
            // The tree a snapshot stream would send (`LogStorage::snapshot`).
            let storage = self.raw.mut_store();
            storage.checkpoint_index = meta.applied_index;
            storage.checkpoint_term = meta.applied_term;
        }
        let storage = self.raw.store();
        let mut to = storage.snapshot_index;
        while let Some(entry) = storage.get(to + 1) {
            if to + 1 > meta.applied_index || entry.lsns.iter().any(|&lsn| lsn >= mark) {
                break;
            }
            to += 1;
        }
        if to > storage.snapshot_index {
            self.raw.mut_store().compact_to(to);
        }
    }
}

impl Replica {
    /// Whether a snapshot is being loaded (the tree is not whole: no
    /// reads, no applies, no writes).
    pub fn is_loading(&self) -> bool {
        self.loading.is_some()
    }

    /// A follower loading a snapshot whose stream went quiet, or that
    /// opened its tree part loaded, asks the group's leader for a repair
    /// stream (a Q frame on its link to the leader, again every
    /// `REPAIR_ASK_AFTER` until one begins). Not raft-rs's request for a
    /// snapshot: while that is pending, raft-rs takes no entry, and with a
    /// third node down the leader could then commit nothing, so never
    /// checkpoint past the asker's last entry, as such a snapshot needs.
    /// This node's log goes on meanwhile; the repair stream is the
    /// leader's last checkpoint, and this node applies its own entries
    /// after it.
    fn ask_for_repair(&mut self) {
        let Some(loading) = &self.loading else { return };
        let quiet = loading.heard_at.is_none_or(|at| at.elapsed() >= REPAIR_ASK_AFTER);
        let recent = self.repair_asked_at.is_some_and(|at| at.elapsed() < REPAIR_ASK_AFTER);
        let leader = self.leader_id();
        let linked = matches!(self.links.get(&leader), Some(Link::Up { .. }));
        if loading.stepped || !quiet || recent || !linked || leader == self.config.node_id {
            return;
        }
        tracing::info!(leader, tree = self.tree_index, "asking the leader to repair this node's part-loaded tree");
        self.repair_ask = Some((leader, self.tree_index));
        self.repair_asked_at = Some(Instant::now());
    }

    /// The repair to ask `peer` for, once (`wire::repair_ask`).
    pub fn take_repair_ask(&mut self, peer: u64) -> Option<u64> {
        let (to, index) = self.repair_ask?;
        if to != peer || self.loading.is_none() {
            return None;
        }
        self.repair_ask = None;
        Some(index)
    }

    /// The base of a stream that begins now: the durable checkpoint's last
    /// entry and its term (the tree version a stream pins).
    pub fn snapshot_base(&self) -> (u64, u64) {
        self.raw.store().snapshot_base()
    }

    /// The leader: follower `peer` asks for a repair stream based at or
    /// past entry `index`.
    pub fn repair_asked(&mut self, peer: u64, index: u64) {
        if self.is_leader() && self.loading.is_none() {
            self.repairs.insert(peer, index);
        }
    }

    /// The leader begins the repair streams asked for whose base, its
    /// last durable checkpoint, reaches the entry asked for (a later
    /// checkpoint does, since the asker goes on taking entries). One
    /// stream per follower: a snapshot stream under way serves instead.
    fn start_repairs(&mut self) {
        if !self.is_leader() || self.loading.is_some() {
            self.repairs.clear();
            return;
        }
        let (index, term) = self.raw.store().snapshot_base();
        let ready: Vec<u64> =
            self.repairs.iter().filter(|&(_, &asked)| index >= asked && index > 0).map(|(&p, _)| p).collect();
        let first = self.first_index();
        for peer in ready {
            self.repairs.remove(&peer);
            // A follower behind the log's first entry gets raft-rs's own
            // snapshot, which serves as well (it asks again if not).
            let behind = self.raw.raft.prs().get(peer).is_none_or(|pr| pr.matched + 1 < first);
            if behind || self.streams.contains_key(&peer) || !matches!(self.links.get(&peer), Some(Link::Up { .. })) {
                continue;
            }
            tracing::info!(follower = peer, index, "streaming a repair of a part-loaded tree");
            let mut message = Message { to: peer, ..Default::default() };
            message.set_msg_type(raft::eraftpb::MessageType::MsgSnapshot);
            let meta = message.mut_snapshot().mut_metadata();
            meta.index = index;
            meta.term = term;
            meta.set_conf_state(self.raw.store().conf_state.clone());
            let stream = SnapshotStream {
                message,
                cursor: None,
                begun: false,
                chunks_done: false,
                progress_at: Instant::now(),
                repair: true,
            };
            self.streams.insert(peer, stream);
        }
    }

    /// A repair stream's last chunk is merged and this node has committed
    /// (and made durable) its base entry: the tree is never ahead of the
    /// commit index after a repair, nor built over entries it may drop.
    fn repair_complete(&self) -> bool {
        let upto = self.committed_here();
        self.loading.as_ref().is_some_and(|l| l.repair && l.complete && upto >= l.index)
    }

    /// A follower whose repair is complete: its tree is the leader's at
    /// the stream's base, and the entries after it that this node has
    /// committed are applied from its own log (blind writes: those the base
    /// already reflects change nothing). Reads are served again, and a full
    /// checkpoint makes the tree durable whole at once.
    fn finish_repair(&mut self, store: &mut Store, pool: &Pool, buffers: &mut Buffers) -> Result<(), ReplicaError> {
        if !self.repair_complete() {
            return Ok(());
        }
        let loading = self.loading.take().expect("checked");
        assert!(loading.index >= self.tree_index, "a repair's base before the tree's last whole entry");
        self.repair_ask = None;
        store.snapshot_loaded(pool)?;
        self.tree_index = loading.index;
        self.tree_term = loading.term;
        for index in loading.index + 1..=self.committed_here() {
            let entry = self.raw.store().entry(index);
            let entry =
                entry.ok_or_else(|| ReplicaError::Corrupt(format!("committed entry {index} is not in the log")))?;
            self.apply_entry(store, pool, buffers, &entry)?;
        }
        self.report_applied();
        self.update_store(store);
        // Durable whole at once, as a loaded snapshot is: until then the
        // durable tree is part loaded, and a stream (this node leading)
        // would send it.
        store.checkpoint_all(pool, buffers)?;
        self.note_checkpoints(store);
        self.repairs_done += 1;
        tracing::info!(
            index = loading.index,
            tree = self.tree_index,
            keys = store.keys(pool)?,
            "part-loaded tree repaired"
        );
        Ok(())
    }

    /// A node whose tree is part loaded that became the leader (its log
    /// was whole) can neither serve nor send a snapshot: it hands its
    /// leadership to the follower that has the most of the log.
    fn hand_over_while_loading(&mut self) {
        if self.loading.is_none() || !self.is_leader() {
            return;
        }
        let voters = self.voters();
        let live = self.progress().into_iter().filter(|&(id, _)| voters.contains(&id) && self.follower_active(id));
        let best = live.max_by_key(|&(_, matched)| matched);
        if let Some((to, _)) = best {
            self.transfer_leadership(to);
        }
    }

    /// A follower: a snapshot of the leader begins (any partial one before
    /// is superseded: its chunks are merged again from the first key).
    pub fn snapshot_begin(
        &mut self,
        meta: &raft::eraftpb::SnapshotMetadata,
        repair: bool,
        from: u64,
    ) -> Result<(), ReplicaError> {
        if self.loading.as_ref().is_some_and(|l| l.stepped) {
            // One is loaded and waits to be installed: the new one is
            // refused (the link closes; the leader tries again later).
            return Err(ReplicaError::Corrupt("a snapshot began while another waits to be installed".into()));
        }
        if repair && (self.loading.is_none() || meta.index < self.tree_index) {
            // Asked for while the tree was part loaded, it came after a
            // repair or a snapshot: this tree needs none now.
            return Err(ReplicaError::Corrupt(format!(
                "a repair stream at entry {} that this node needs not",
                meta.index
            )));
        }
        let raft = &self.raw.raft;
        let stale = meta.index < raft.raft_log.committed
            || (raft.pending_request_snapshot == raft::INVALID_INDEX
                && raft.raft_log.match_term(meta.index, meta.term));
        if stale && !repair {
            // raft-rs would not restore it (its log has it, or commits
            // past it), and merging it first would leave the tree holding
            // a snapshot no log matches: refused before any chunk (the
            // link closes; raft-rs hears the stream failed). A leader
            // sends one so when a request for a snapshot reached it after
            // the one it answered was installed.
            return Err(ReplicaError::Corrupt(format!(
                "a snapshot at entry {} began, which this node's log has or commits past ({})",
                meta.index, raft.raft_log.committed
            )));
        }
        tracing::info!(index = meta.index, term = meta.term, repair, "loading a snapshot from the leader");
        self.loading = Some(Loading::new((meta.index, meta.term), Some(Instant::now()), repair, Some(from)));
        Ok(())
    }

    /// A follower: merges a snapshot chunk into the tree (the keys after
    /// the previous chunk's upper key, up to this one's), and gives back
    /// the chunk's references.
    pub fn snapshot_chunk(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        (upper, from): (Option<Vec<u8>>, u64),
        pairs: Vec<(Vec<u8>, Landed)>,
    ) -> Result<(), ReplicaError> {
        let result = if self.loading.as_ref().is_some_and(|l| l.from != Some(from)) {
            Err(ReplicaError::Corrupt(format!("a snapshot chunk from node {from}, whose stream this is not")))
        } else {
            self.merge_chunk(store, pool, buffers, upper, &pairs)
        };
        release_records(buffers, pairs.into_iter().map(|(_, landed)| landed));
        result
    }

    fn merge_chunk(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        upper: Option<Vec<u8>>,
        pairs: &[(Vec<u8>, Landed)],
    ) -> Result<(), ReplicaError> {
        if self.loading.as_ref().is_none_or(|l| l.heard_at.is_none()) {
            return Err(ReplicaError::Corrupt("a snapshot chunk before its beginning".into()));
        }
        // Before the tree changes: `#raft` says from now on that it is part
        // loaded (a checkpoint may take it before the stream ends).
        self.update_store(store);
        let loading = self.loading.as_mut().expect("checked");
        loading.heard_at = Some(Instant::now());
        if loading.complete {
            return Err(ReplicaError::Corrupt("a snapshot chunk after its last".into()));
        }
        let sorted = pairs.windows(2).all(|w| w[0].0 < w[1].0);
        let in_range = pairs.iter().all(|(key, _)| {
            loading.lower.as_ref().is_none_or(|lower| key > lower) && upper.as_ref().is_none_or(|upper| key <= upper)
        });
        if !sorted || !in_range {
            return Err(ReplicaError::Corrupt("a snapshot chunk out of order".into()));
        }
        let values: Vec<(Vec<u8>, crate::index::node::Value)> = pairs
            .iter()
            .map(|(key, landed)| {
                let value = if landed.len <= crate::store::db::INLINE_VALUE_MAX as u64 {
                    let mut bytes = Vec::with_capacity(landed.len as usize);
                    pool.read_extents(&landed.extents, &mut bytes);
                    crate::index::node::Value::Inline(bytes)
                } else {
                    // The CRC the leader sent, checked as the bytes landed.
                    crate::index::node::Value::Extents(landed.extents.clone(), Some(landed.data_crc))
                };
                (key.clone(), value)
            })
            .collect();
        store.snapshot_merge(pool, buffers, loading.lower.as_deref(), upper.as_deref(), &values)?;
        loading.complete = upper.is_none();
        loading.lower = upper;
        Ok(())
    }

    /// Whether the MsgSnapshot for `index` may be stepped: its chunks are
    /// all merged.
    pub fn snapshot_ready(&self, index: u64, from: u64) -> bool {
        self.loading.as_ref().is_some_and(|l| l.complete && l.index == index && !l.repair && l.from == Some(from))
    }

    /// raft-rs applies a snapshot whose chunks are in the tree: the log is
    /// dropped, the tree stands at its index, and a full checkpoint makes
    /// the loaded tree durable before anything is acknowledged.
    fn install_snapshot(
        &mut self,
        store: &mut Store,
        pool: &Pool,
        buffers: &mut Buffers,
        meta: &raft::eraftpb::SnapshotMetadata,
    ) -> Result<(), ReplicaError> {
        let loading =
            self.loading.take().ok_or_else(|| ReplicaError::Corrupt("a snapshot that was not loaded".into()))?;
        if loading.index != meta.index || !loading.complete {
            return Err(ReplicaError::Corrupt(format!("snapshot {} installed, {} loaded", meta.index, loading.index)));
        }
        store.snapshot_loaded(pool)?;
        self.proposed.clear();
        let storage = self.raw.mut_store();
        storage.entries.clear();
        storage.snapshot_index = meta.index;
        storage.snapshot_term = meta.term;
        storage.conf_state = meta.get_conf_state().clone();
        self.tree_index = meta.index;
        self.tree_term = loading.term;
        self.applied_checkpoint = meta.index;
        self.update_store(store);
        store.checkpoint_all(pool, buffers)?;
        tracing::info!(index = meta.index, keys = store.keys(pool)?, "snapshot installed");
        Ok(())
    }

    /// The leader: whether the stream to `peer` may send its MsgSnapshot
    /// (every chunk was sent). It used to wait until the group committed
    /// every entry the chunks could reflect (they were read from the live
    /// tree): with one node down and the follower loading, nothing could
    /// commit, and the stream waited for ever.
    pub fn stream_may_finish(&self, peer: u64) -> bool {
        self.streams.get(&peer).is_some_and(|s| s.chunks_done)
    }

    /// The leader's streams end when it stops leading (their MsgSnapshot
    /// would carry a stale term, which the follower's raft-rs refuses).
    pub fn drop_streams_unless_leading(&mut self) {
        if !self.is_leader() {
            self.streams.clear();
        }
    }

    /// Cancels the streams that sent nothing for `STREAM_STALL_MAX`, or all
    /// of them (`all`: what their pinned versions hold back has grown too
    /// large for the pool); raft-rs hears they failed and tries later.
    pub fn cancel_streams(&mut self, now: Instant, all: bool) {
        let cancelled: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| all || now.duration_since(s.progress_at) > STREAM_STALL_MAX)
            .map(|(&peer, _)| peer)
            .collect();
        for peer in cancelled {
            self.snapshots_cancelled += 1;
            tracing::warn!(
                follower = peer,
                all,
                "a snapshot stream is cancelled: it stalled, or held back too much of the pool"
            );
            if self.streams.remove(&peer).is_some_and(|s| !s.repair) {
                self.raw.report_snapshot(peer, raft::SnapshotStatus::Failure);
            }
        }
    }

    /// The leader: the stream to `peer` sent its last chunk; its
    /// MsgSnapshot to send (none for a repair stream).
    pub fn stream_finished(&mut self, peer: u64) -> Option<Message> {
        let stream = self.streams.remove(&peer)?;
        if stream.repair {
            return None;
        }
        self.raw.report_snapshot(peer, raft::SnapshotStatus::Finish);
        self.sent_snapshots.insert(peer, stream.message.get_snapshot().get_metadata().index);
        Some(stream.message)
    }

    /// Entries to keep in the log for followers that are behind (and for
    /// snapshots being streamed, whose base they follow): the first index
    /// needed, unless the log is over a quarter full.
    fn retain_from(&mut self, store: &Store) -> Option<u64> {
        if !self.is_leader() {
            return None;
        }
        let progress = self.progress();
        // A snapshot's base stays until its follower has caught up to it.
        self.sent_snapshots.retain(|peer, base| progress.iter().any(|&(id, matched)| id == *peer && matched < *base));
        let snapshots = self.streams.values().map(|s| s.message.get_snapshot().get_metadata().index);
        let bases = snapshots.chain(self.sent_snapshots.values().copied()).map(|base| base + 1).min();
        let followers = progress.into_iter().map(|(_, matched)| matched + 1).min();
        let followers = followers.filter(|_| store.has_room_to_retain());
        let bases = bases.filter(|_| store.log_fill_permille() < 500);
        [bases, followers].into_iter().flatten().min()
    }
}

/// Rebuilds the Raft log from the store's live records: entries after the
/// checkpoint, in order, a later entry with the same index replacing the
/// earlier one (a truncation whose release marks a power failure lost),
/// and the last state record. Records of an entry never closed are
/// released (never acknowledged).
fn rebuild(
    store: &mut Store,
    pool: &Pool,
    storage: &mut LogStorage,
    applied: u64,
) -> Result<Option<Meta>, ReplicaError> {
    let lsns: Vec<u64> = store.live_records().collect();
    let mut group = Vec::new();
    let mut group_bytes = 0;
    let mut latest = None;
    let mut dead = Vec::new();
    for lsn in lsns {
        let record = store.logged(pool, lsn)?;
        match record.kind {
            KIND_ENTRY => {
                let key = EntryKey::decode(&record.key)
                    .ok_or_else(|| ReplicaError::Corrupt(format!("entry record {lsn}")))?;
                group.push(lsn);
                let lsns = std::mem::take(&mut group);
                let payload_bytes = std::mem::take(&mut group_bytes);
                if key.index <= applied {
                    dead.extend(lsns);
                    continue;
                }
                if key.index > storage.last_index() + 1 {
                    return Err(ReplicaError::Corrupt(format!(
                        "entry {} follows entry {}",
                        key.index,
                        storage.last_index()
                    )));
                }
                let data = if key.entry_type == EntryType::EntryNormal && lsns.len() > 1 {
                    RECORDS.to_vec()
                } else {
                    key.data
                };
                let meta = EntryMeta { term: key.term, entry_type: key.entry_type, data, lsns, payload_bytes };
                for gone in storage.append(key.index, meta) {
                    dead.extend(gone.lsns);
                }
            }
            KIND_STATE => {
                latest = Some(
                    Meta::decode(&record.key).ok_or_else(|| ReplicaError::Corrupt(format!("state record {lsn}")))?,
                );
            }
            _ => {
                group.push(lsn);
                group_bytes += record.data_len;
            }
        }
    }
    dead.extend(group);
    if !dead.is_empty() {
        store.release_logged(pool, &dead)?;
    }
    Ok(latest)
}

/// raft-rs's log lines, into tracing.
struct TracingDrain;

impl slog::Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &slog::Record<'_>, _values: &slog::OwnedKVList) -> Result<(), slog::Never> {
        match record.level() {
            slog::Level::Critical | slog::Level::Error => tracing::error!(target: "raft", "{}", record.msg()),
            slog::Level::Warning => tracing::warn!(target: "raft", "{}", record.msg()),
            slog::Level::Info => tracing::info!(target: "raft", "{}", record.msg()),
            _ => tracing::debug!(target: "raft", "{}", record.msg()),
        }
        Ok(())
    }
}
