//! The key-value server's state and the vocabulary of its command
//! handlers: configuration, counters, per-connection protocol state; a
//! command's table entry (`CommandEntry`, made with `cmd`), the set of
//! tables (`Commands`), and what a handler works with (`Ctx`: the pool,
//! the connection, the reply queue). They live in one file because they
//! name each other: the server holds the table, whose handlers take the
//! server. What the command families and links keep (a transaction, the
//! subscriptions, the client registry, ...) are types of `kept/`, which
//! imports nothing of this file: the handlers stand above both.
//!
//! Invariants: every buffer reference a request holds is given back when it
//! ends (`Args::clear`, `abandon`); a handler writes exactly one reply into
//! `Ctx` (an error sets `failed`), so replies stay in request order.

use std::collections::VecDeque;
use std::time::Duration;

use crate::io::app::{IoCounters, Persist};
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::proto::resp::{Args, Encoder, Parser, ReceiveConfig};
use crate::store::db::{Store, StoreError};

/// Listener indexes of the server's two protocols.
pub const LISTENER_HTTP: usize = 0;

pub const LISTENER_RESP: usize = 1;

/// Cursors SCAN remembers (the oldest is forgotten first: a client using
/// it starts over, which SCAN's contract allows).
pub(super) const SCAN_CURSORS_MAX: usize = 4096;

/// Expired keys removed per tick.
pub(super) const EXPIRE_PER_TICK_MAX: usize = 256;

/// Tree entries of deleted collections and flushed databases the
/// reclaimer removes per tick (about a millisecond's work).
pub(super) const GARBAGE_PER_TICK_MAX: usize = 2048;

#[derive(Clone, Debug)]
pub struct KvConfig {
    pub persist: Persist,
    pub value_size_max: u64,
    /// Values at least this long are sent from the pool (zero copy).
    pub zero_copy_min: u64,
    /// The password of both ports: AUTH on the Redis port, an
    /// `Authorization` header on the HTTP port.
    pub requirepass: Option<Vec<u8>>,
    /// With a password, /metrics still answers without it.
    pub metrics_public: bool,
    /// DEBUG SLEEP and SET-ACTIVE-EXPIRE are allowed (Redis's
    /// enable-debug-command; for test suites).
    pub debug_command: bool,
    /// Free buffers kept back for receiving (the ring's refills).
    pub buffers_reserve: u32,
    /// What the server reports (INFO, CONFIG GET).
    pub domain_name: String,
    /// Tests only: the crash simulator the pool runs on, which
    /// `DEBUG POWERFAIL` arms. None (every real deployment): the command
    /// is refused.
    pub power_switch: Option<std::sync::Arc<crate::pool::sim::SimDevice>>,
    /// What the server was started with, as CONFIG GET and protected mode
    /// need it.
    /// Value bytes the scrubber checks per second (`--scrub-rate`; 0: it
    /// does not run).
    pub scrub_rate_bytes: u64,
    pub settings: KvSettings,
}

/// The server's settings beyond the protocol's: where it listens, its
/// limits, and the switches that only tests turn on.
#[derive(Clone, Debug)]
pub struct KvSettings {
    /// The Redis protocol's and HTTP's listening addresses (None: not
    /// known, as in tests that run the server in-process).
    pub resp: Option<std::net::SocketAddr>,
    pub http: Option<std::net::SocketAddr>,
    /// `--connections-max` (Redis's maxclients).
    pub connections_max: usize,
    /// The pool's directory, absolute (Redis's dir).
    pub dir: String,
    /// Redis's protected mode (`--protected-mode`, CONFIG SET
    /// protected-mode): with no password set and a listener beyond
    /// loopback, clients from other hosts are refused.
    pub protected_mode: bool,
    /// PACKETSTORE_ENABLE_TEST_SWITCHES=1: `DEBUG PANIC` and `DEBUG
    /// PANIC-AT` inject panics (tests of the request paths' panic
    /// handling). Off in every real deployment.
    pub test_switches: bool,
    /// A shard of a sharded server: its Redis Cluster view and cluster
    /// port (`cluster.rs`). None: one server, no cluster ports.
    pub cluster: Option<crate::apps::kv::cluster::ClusterView>,
    /// Redis parameters set at start (`--redis-param`, a redis.conf's
    /// directives), each checked by `cmd::config::check_at_start`: set
    /// as CONFIG SET would set them, before the first client.
    pub redis_params: Vec<(&'static str, String)>,
    /// The redis.conf the server was started with (`serve --config`), which
    /// CONFIG REWRITE rewrites. None: no such file (REWRITE is refused).
    pub config_file: Option<std::path::PathBuf>,
}

impl Default for KvSettings {
    fn default() -> KvSettings {
        KvSettings {
            resp: None,
            http: None,
            connections_max: 10_000,
            dir: String::new(),
            protected_mode: true,
            test_switches: false,
            cluster: None,
            redis_params: Vec::new(),
            config_file: None,
        }
    }
}

/// Where a test switch makes the next request panic (`DEBUG PANIC-AT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PanicPoint {
    /// A write, after it staged its values, before the store takes them
    /// (RESP and HTTP writes).
    Staged,
    /// A read, after it queued its reply from pool buffers (RESP and HTTP).
    Replied,
    /// The next frame on a peer link, once parsed.
    PeerFrame,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct KvStats {
    /// Requests by protocol (`PROTOCOLS`), kind (`KINDS`) and result
    /// (`RESULTS`), for /metrics.
    pub requests: [[[u64; 3]; 3]; 2],
    pub commands: u64,
    pub http_requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub refused_full: u64,
    pub errors: u64,
    /// Requests whose handler panicked (answered with an error), on every
    /// path (RESP, HTTP, peer links).
    pub panics: u64,
    /// Buffer references those requests had staged, given back.
    pub panic_refs_released: u64,
    /// Connections refused by protected mode.
    pub denied: u64,
    /// Redis connections closed for sending an HTTP request.
    pub cross_protocol: u64,
    /// Script steps that ended paused past lua-time-limit (others got
    /// BUSY until the next).
    pub script_pauses: u64,
    pub bytes_sent_zero_copy: u64,
    pub bytes_sent_copied: u64,
    /// Value bytes written: persisted where they were received (zero copy)
    /// or copied (copy mode, and values small enough to be inlined).
    pub value_bytes_in_place: u64,
    pub value_bytes_copied: u64,
}

/// One connection's protocol state.
pub struct KvConn {
    pub(super) listener: usize,
    pub(super) id: u64,
    /// How the event loop names it (to wake it: pub/sub, blocking pops).
    pub(super) token: crate::io::app::ConnToken,
    pub(super) name: Option<Vec<u8>>,
    /// The logical database it selected (SELECT 0-15).
    pub(super) db: u8,
    pub(super) authenticated: bool,
    /// The transaction being queued (after MULTI).
    pub(super) multi: Option<crate::apps::kv::kept::multi::Multi>,
    /// Keys WATCH watches.
    pub(super) watching: Option<crate::apps::kv::kept::multi::Watching>,
    /// Channels and patterns it subscribes to.
    pub(super) subscriptions: Option<crate::apps::kv::kept::pubsub::Subscriptions>,
    /// Parked by a blocking pop that found nothing (its command kept).
    pub(super) blocked: Option<crate::apps::kv::kept::blocking::Blocked>,
    /// Set by a blocking pop's handler that found nothing: park me.
    pub(super) block_request: Option<crate::apps::kv::kept::blocking::BlockRequest>,
    /// CLIENT REPLY: whether its replies are sent.
    pub(super) reply: crate::apps::kv::kept::client::ReplyMode,
    pub(super) encoder: Encoder,
    pub(super) parser: Parser,
    pub(super) args: Args,
    pub(super) http: Option<HttpBody>,
    /// Set on a link to or from a peer of a replicated group.
    pub(super) peer: Option<crate::apps::kv::kept::replication::PeerLink>,
    /// Where its commands run, in a replicated group (`forward.rs`).
    pub(super) route: crate::apps::kv::kept::forward::Route,
    /// A peer link that turned out to carry a relayed client: the
    /// listener whose protocol it speaks (LISTENER_RESP or LISTENER_HTTP).
    pub(super) relay_accepted: Option<usize>,
    /// A follower's client that asked to read here (READONLY, ROLE, INFO
    /// first): possibly stale reads are its choice.
    pub(super) reads_here: bool,
    /// Refused by protected mode (`protected.rs`): told so, then closed.
    pub(super) denied: bool,
    /// Replies it waits for from another shard (`shard_link.rs`), which
    /// one, and whether its next command waits for them, parsed.
    /// On another shard's private link: when its next command arrived
    /// there (`shard_link::arrival_ns`), the order it blocks in.
    pub(super) arrived_ns: Option<u64>,
    pub(super) awaiting: u32,
    pub(super) awaiting_shard: u16,
    /// What it awaits is a blocking command on another shard (a private
    /// link): a client that closes then is let go at once, as Redis frees
    /// a blocked client that closes, not kept until its reply.
    pub(super) blocked_elsewhere: bool,
    pub(super) held: bool,
    /// A malformed request read while replies were outstanding: answered,
    /// and the connection closed, once they are all in.
    pub(super) held_error: Option<String>,
    /// An HTTP request relayed to another shard asked to close the
    /// connection: it closes once that reply is sent.
    pub(super) http_close: bool,
}

pub struct KvServer {
    pub(super) config: KvConfig,
    pub(super) store: Store,
    pub(super) next_client_id: u64,
    /// The wall clock at an instant (microseconds since the epoch), so a
    /// command's milliseconds come from its one monotonic clock read
    /// (`dispatch.rs` `wall_ms_at`).
    pub(super) clock_anchor: (std::time::Instant, u64),
    pub(super) scan_cursors: VecDeque<(u64, Vec<u8>)>,
    pub(super) next_cursor: u64,
    pub(super) io: IoCounters,
    pub(super) stats: KvStats,
    pub(super) started: std::time::Instant,
    pub(super) recovery: String,
    /// Commands served at the last tick (a tick with none is idle).
    pub(super) commands_at_tick: u64,
    /// Write commands per commit (group commit batch sizes), and the
    /// writes counted at the last commit.
    pub(super) batch_writes: crate::util::metrics::Histogram,
    pub(super) writes_at_commit: u64,
    pub(super) recovery_ns: u64,
    /// Value bytes of the command being built: left where they were
    /// received, or copied (counted once it applies).
    pub(super) staged_in_place: u64,
    pub(super) staged_copied: u64,
    /// When a cross-protocol attempt was last logged.
    pub(super) cross_protocol_logged: Option<std::time::Instant>,
    /// The command table (`dispatch::COMMANDS`), and its entries by name.
    pub(super) commands: Commands,
    pub(super) command_index: CommandIndex,
    /// Watched keys and who watches them (WATCH).
    pub(super) watched: std::collections::HashMap<Vec<u8>, Vec<crate::apps::kv::kept::multi::Watcher>>,
    /// The command running wrote to the store (its keys are touched for
    /// WATCH).
    pub(super) modified: bool,
    /// A parked command is being run again (INFO commandstats counts it
    /// once).
    pub(super) retrying_blocked: bool,
    /// The command running is a part of a spanning command that another
    /// part counts (INFO commandstats, errorstats, SLOWLOG, LATENCY count
    /// the client's command once: `shard_link::LINK_PART`).
    pub(super) uncounted: bool,
    /// The loop is stopping (`App::draining`): a link that closes is not
    /// made again.
    pub(super) stopping: bool,
    /// The command running came on a link for a READONLY client of a
    /// replicated node (`replication.rs` `link_refuses`).
    pub(super) link_reads_here: bool,
    /// SHUTDOWN asked the event loop to stop.
    pub(super) shutdown_requested: bool,
    /// The group dropped entries this node's tree reflects: the loop
    /// stopped, and the node must start again from its durable state.
    pub(super) rebuild_requested: bool,
    /// The crash simulator's power fails at the `fences`-th fence once a
    /// snapshot begins loading: (seed, fences) (`server.rs`
    /// `powerfail_at_loading`, tests only).
    pub(super) powerfail_at_loading: Option<(u64, u64)>,
    /// Peer links: frames refused (they broke the protocol or failed a
    /// check) and links closed, since the start.
    pub(super) peer_frames_refused: u64,
    /// Peer frames whose value found no room in the pool (not damage).
    pub(super) peer_frames_unstored: u64,
    pub(super) peer_links_closed: u64,
    /// The tick removes expired keys (DEBUG SET-ACTIVE-EXPIRE turns it off).
    pub(super) active_expire: bool,
    /// Redis's configuration parameters as CONFIG GET shows them.
    pub(super) config_params: std::collections::HashMap<&'static str, String>,
    /// The parameters' values at start, before any given at start or set
    /// since: what CONFIG REWRITE leaves out of the file.
    pub(super) config_baseline: std::collections::HashMap<&'static str, String>,
    /// Channels, patterns, their subscribers and mailboxes.
    pub(super) pubsub: crate::apps::kv::kept::pubsub::PubSub,
    /// EVAL's interpreter and script cache, and the function libraries.
    pub(super) scripting: crate::apps::kv::kept::scripting::Scripting,
    /// The node of a replicated group this server is (None: a single
    /// server), new outbound peer links to serve, and the commits begun.
    pub(super) replica: Option<crate::replica::Replica>,
    pub(super) peer_wake: Vec<crate::io::app::ConnToken>,
    pub(super) commits_begun: u64,
    pub(super) relays: crate::apps::kv::kept::forward::Relays,
    /// A shard's links to the others (`shard_link.rs`).
    pub(super) links: crate::apps::kv::shard_link::ShardLinks,
    /// Connections parked by blocking pops, by key.
    pub(super) blocking: crate::apps::kv::kept::blocking::Blocking,
    /// The Redis-protocol connections as CLIENT LIST shows them.
    pub(super) clients: crate::apps::kv::kept::client::Clients,
    /// notify-keyspace-events' classes (`cmd/notify.rs`); 0: none.
    pub(super) notify_flags: u32,
    /// SLOWLOG's entries and settings (`cmd/slowlog.rs`).
    pub(super) slowlog: crate::apps::kv::kept::slowlog::Slowlog,
    /// Client-side caching: tracking clients and the keys they read
    /// (`cmd/tracking.rs`).
    pub(super) tracking: crate::apps::kv::kept::tracking::Tracking,
    /// MONITOR's connections (`cmd/monitor.rs`).
    pub(super) monitors: crate::apps::kv::kept::monitor::Monitors,
    /// The store's count of collections emptied in the background at the
    /// last CONFIG RESETSTAT (INFO shows those since).
    pub(super) lazyfreed_at_reset: u64,
    /// INFO's instantaneous_ops_per_sec, sampled by the tick.
    pub(super) ops_rate: crate::apps::kv::kept::report::OpsRate,
    /// LATENCY's events and the commands' histograms (`cmd/latency.rs`).
    pub(super) latency: crate::apps::kv::kept::latency::Latency,
    /// A test switch armed (`DEBUG PANIC-AT`): the next request there
    /// panics.
    pub(super) panic_at: Option<PanicPoint>,
    /// INFO commandstats, by command; errorstats, by error prefix.
    /// By command slot (`CommandIndex`).
    pub(super) command_stats: Vec<CallStats>,
    pub(super) error_stats: std::collections::BTreeMap<String, u64>,
    /// The exchange of a sharded server's shards, for commands across
    /// them (`across.rs`).
    pub(super) across: Option<std::sync::Arc<crate::apps::kv::exchange::Exchange>>,
    /// The shards parked for the command running here (a script's, a
    /// SORT's: `parked.rs`), whose calls for their keys run there.
    pub(super) session: Option<crate::apps::kv::session::Session>,
}

/// One command's counters (INFO commandstats).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CallStats {
    /// Runs of its handler, and their microseconds.
    pub(super) calls: u64,
    pub(super) usec: u64,
    /// Refused before running (arity, authentication, context, full).
    pub(super) rejected: u64,
    /// Ran and answered an error.
    pub(super) failed: u64,
}

/// Labels of `KvStats::requests`.
pub const PROTOCOLS: [&str; 2] = ["resp", "http"];

pub const KINDS: [&str; 3] = ["read", "write", "other"];

pub const RESULTS: [&str; 3] = ["ok", "error", "refused"];

pub(super) const RESP: usize = 0;

pub(super) const HTTP: usize = 1;

pub(super) const READ: usize = 0;

pub(super) const WRITE: usize = 1;

pub(super) const OTHER: usize = 2;
/// `KvConn::awaiting_shard` of a client whose spanning command is out:
/// no shard's (a later command waits for its reply, wherever it goes).
pub(super) const SPANNING: u16 = u16::MAX;
/// Not a client's request here (`run_command`'s kind): a command relayed
/// to the shard that runs it (which counts it), or a link's own line.
pub(super) const UNCOUNTED: usize = usize::MAX;

/// An HTTP request whose body is arriving.
pub(super) struct HttpBody {
    pub(super) key: Vec<u8>,
    pub(super) keep_alive: bool,
    pub(super) remaining: u64,
    pub(super) len: u64,
    pub(super) extents: Vec<Extent>,
    pub(super) copy_fill: Option<usize>,
    pub(super) refused: bool,
    /// The shard that owns the key, when not this one: the whole body is
    /// sent there (`rest.rs`, `relay_http`).
    pub(super) shard: Option<u16>,
}

impl KvServer {
    /// How long recovery took (for /metrics).
    pub fn set_recovery_duration(&mut self, duration: Duration) {
        self.recovery_ns = duration.as_nanos() as u64;
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A clean shutdown, once the event loop has stopped with nothing in
    /// flight: checkpoints until every log record is folded into the tree,
    /// so the next start replays nothing. Returns the records folded.
    pub fn checkpoint_all(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<usize, StoreError> {
        let records = self.store.live_records().count();
        self.store.checkpoint_all(pool, buffers)?;
        Ok(records)
    }

    pub fn stats(&self) -> KvStats {
        self.stats
    }

    pub(super) fn receive_config(&self) -> ReceiveConfig {
        ReceiveConfig {
            persist: self.config.persist,
            value_size_max: self.config.value_size_max,
            buffers_reserve: self.config.buffers_reserve,
        }
    }

    // ---- the Redis protocol ----
}

pub(super) type Cmd = fn(&mut KvServer, &mut Ctx<'_>) -> Result<(), StoreError>;

/// Every command the server runs: its families' tables, in COMMAND's
/// order (`dispatch::COMMANDS`). The server holds it, so a family (COMMAND
/// itself) can list the others without importing the table that lists it.
#[derive(Clone, Copy)]
pub(super) struct Commands(pub(super) &'static [&'static [CommandEntry]]);

impl Commands {
    /// Every command, family by family.
    pub(super) fn iter(self) -> impl Iterator<Item = &'static CommandEntry> {
        self.0.iter().flat_map(|family| family.iter())
    }

    /// The number of commands (COMMAND COUNT).
    pub(super) fn count(self) -> usize {
        self.0.iter().map(|family| family.len()).sum()
    }
}

/// The commands by lower-case name: one hash lookup per command instead of
/// a scan of every family. Each command also has a slot, its position in
/// the table: the per-command counters are kept by slot, not by name (INFO
/// commandstats an array, LATENCY HISTOGRAM a map keyed by a number; issue
/// 36: hashing and comparing the name again for each counter was 8-15% of
/// a pipelined GET).
pub(super) struct CommandIndex {
    by_name: crate::util::idhash::NameHashMap<&'static [u8], CommandSlot>,
    entries: Vec<&'static CommandEntry>,
    /// A container's subcommands, by slot (`kept/latency.rs`).
    subcommands: Vec<Option<&'static [&'static str]>>,
}

/// A command's position in the table (`CommandIndex`).
pub(super) type CommandSlot = u16;

/// Command names are at most this long (Redis's longest is 20 bytes).
const COMMAND_NAME_MAX: usize = 32;

impl CommandIndex {
    pub(super) fn new(commands: Commands) -> CommandIndex {
        let entries: Vec<&'static CommandEntry> = commands.iter().collect();
        assert!(entries.len() <= usize::from(CommandSlot::MAX), "more commands than slots");
        let by_name: crate::util::idhash::NameHashMap<_, _> =
            entries.iter().enumerate().map(|(slot, entry)| (entry.name.as_bytes(), slot as CommandSlot)).collect();
        assert_eq!(by_name.len(), entries.len(), "two commands of the table share a name");
        assert!(entries
            .iter()
            .all(|entry| entry.name.len() <= COMMAND_NAME_MAX && entry.name == entry.name.to_lowercase()));
        let subcommands =
            entries.iter().map(|entry| crate::apps::kv::kept::latency::subcommands_of(entry.name)).collect();
        CommandIndex { by_name, entries, subcommands }
    }

    /// The command named `name`, in any case.
    pub(super) fn find(&self, name: &[u8]) -> Option<&'static CommandEntry> {
        self.find_slot(name).map(|(_, entry)| entry)
    }

    /// The command named `name`, in any case, with its slot.
    pub(super) fn find_slot(&self, name: &[u8]) -> Option<(CommandSlot, &'static CommandEntry)> {
        if name.len() > COMMAND_NAME_MAX {
            return None;
        }
        let mut lower = [0u8; COMMAND_NAME_MAX];
        lower[..name.len()].copy_from_slice(name);
        lower[..name.len()].make_ascii_lowercase();
        let slot = *self.by_name.get(&lower[..name.len()])?;
        Some((slot, self.entries[usize::from(slot)]))
    }

    /// The command in `slot`.
    pub(super) fn entry(&self, slot: CommandSlot) -> &'static CommandEntry {
        self.entries[usize::from(slot)]
    }

    /// The subcommands of the command in `slot`, if it is a container.
    pub(super) fn subcommands(&self, slot: CommandSlot) -> Option<&'static [&'static str]> {
        self.subcommands[usize::from(slot)]
    }
}

/// A command's table entry, in COMMAND's terms.
pub(super) struct CommandEntry {
    /// Lower case.
    pub(super) name: &'static str,
    /// The number of arguments, the name included; negative: at least.
    pub(super) arity: i64,
    pub(super) flags: &'static [&'static str],
    /// First key, last key (negative: from the end), step.
    pub(super) keys: (i64, i64, i64),
    /// COMMAND DOCS's group: string, bitmap, hash, generic, connection, server.
    pub(super) group: &'static str,
    pub(super) summary: &'static str,
    pub(super) handler: Cmd,
    /// The flags the request path asks of every command, as bits of
    /// `FLAG_BITS` (issue 36: comparing them as strings, three to five a
    /// command, was measurable): `has_flag` answers those from here.
    flag_bits: u32,
}

/// The flags kept as bits, in bit order.
const FLAG_BITS: [&str; 5] = ["write", "readonly", "no_multi", "loading", "fast"];

/// `flag`'s bit in `CommandEntry::flag_bits`, or 0 for a flag kept only
/// as a string. Inlined, a literal's bit folds to a constant.
#[inline(always)]
const fn flag_bit(flag: &str) -> u32 {
    let mut i = 0;
    while i < FLAG_BITS.len() {
        if const_str_eq(flag, FLAG_BITS[i]) {
            return 1 << i;
        }
        i += 1;
    }
    0
}

const fn const_str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn flag_bits_of(flags: &[&str]) -> u32 {
    let (mut bits, mut i) = (0, 0);
    while i < flags.len() {
        bits |= flag_bit(flags[i]);
        i += 1;
    }
    bits
}

#[allow(clippy::too_many_arguments)]
pub(super) const fn cmd(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    group: &'static str,
    summary: &'static str,
    handler: Cmd,
) -> CommandEntry {
    CommandEntry { name, arity, flags, keys, group, summary, handler, flag_bits: flag_bits_of(flags) }
}

impl CommandEntry {
    pub(super) fn find(commands: Commands, name: &[u8]) -> Option<&'static CommandEntry> {
        commands.iter().find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether `argc` arguments (the name included) fit its arity.
    pub(super) fn arity_fits(&self, argc: i64) -> bool {
        (self.arity > 0 && argc == self.arity) || (self.arity < 0 && argc >= -self.arity)
    }

    /// The positions of its key arguments in a call of `argc` arguments
    /// (the name included), by its key specification.
    pub(super) fn key_positions(&self, argc: usize) -> impl Iterator<Item = usize> {
        let (first, last, step) = self.keys;
        let argc = argc as i64;
        let last = if last < 0 { argc + last } else { last.min(argc - 1) };
        let first = if first == 0 { last + 1 } else { first };
        (first..=last).step_by(step.max(1) as usize).map(|i| i as usize)
    }

    #[inline]
    pub(super) fn has_flag(&self, flag: &str) -> bool {
        match flag_bit(flag) {
            0 => self.flags.contains(&flag),
            bit => self.flag_bits & bit != 0,
        }
    }

    /// Redis 7's ACL categories, from the flags and the group.
    pub(super) fn acl_categories(&self) -> Vec<&'static str> {
        let mut categories = Vec::new();
        let group = match self.group {
            "string" => "@string",
            "bitmap" => "@bitmap",
            "hash" => "@hash",
            "list" => "@list",
            "set" => "@set",
            "sorted_set" => "@sortedset",
            "stream" => "@stream",
            "transactions" => "@transaction",
            "pubsub" => "@pubsub",
            "scripting" => "@scripting",
            "generic" => "@keyspace",
            "connection" => "@connection",
            _ => "@admin",
        };
        if self.has_flag("write") {
            categories.push("@write");
        }
        if self.has_flag("readonly") {
            categories.push("@read");
        }
        categories.push(group);
        categories.push(if self.has_flag("fast") { "@fast" } else { "@slow" });
        if self.has_flag("admin") {
            categories.push("@dangerous");
        }
        categories
    }
}

/// What a command handler works with.
pub(super) struct Ctx<'a> {
    pub(super) pool: &'a Pool,
    pub(super) buffers: &'a mut Buffers,
    pub(super) conn: &'a mut KvConn,
    pub(super) out: &'a mut OutQueue,
    pub(super) now: u64,
    /// The physical id of the connection's database, as of the command's
    /// start (`Store::physical_db`).
    pub(super) db: crate::store::keyspace::DbId,
    pub(super) close: bool,
    /// An error reply was written.
    pub(super) failed: bool,
}

impl Ctx<'_> {
    /// What WATCH and the watched map call `key` of this connection's
    /// database: its logical number, then the key.
    pub(super) fn watch_id(&self, key: &[u8]) -> Vec<u8> {
        watch_id(self.conn.db, key)
    }

    pub(super) fn enc(&self) -> Encoder {
        self.conn.encoder
    }

    pub(super) fn arg(&self, i: usize) -> std::borrow::Cow<'_, [u8]> {
        self.conn.args.bytes(self.pool, i)
    }

    pub(super) fn argc(&self) -> usize {
        self.conn.args.len()
    }

    pub(super) fn error(&mut self, text: &str) {
        self.failed = true;
        let enc = self.enc();
        enc.error(self.out.bytes(), text);
    }

    pub(super) fn ok(&mut self) {
        self.out.push(b"+OK\r\n");
    }

    pub(super) fn int(&mut self, value: i64) {
        let enc = self.enc();
        enc.int(self.out.bytes(), value);
    }

    pub(super) fn null(&mut self) {
        let enc = self.enc();
        enc.null(self.out.bytes());
    }

    pub(super) fn bulk(&mut self, bytes: &[u8]) {
        let enc = self.enc();
        enc.bulk(self.out.bytes(), bytes);
    }

    pub(super) fn array(&mut self, len: usize) {
        let enc = self.enc();
        enc.array(self.out.bytes(), len);
    }

    pub(super) fn map(&mut self, len: usize) {
        let enc = self.enc();
        enc.map(self.out.bytes(), len);
    }

    /// A set's header (RESP2: an array's).
    pub(super) fn set(&mut self, len: usize) {
        let enc = self.enc();
        enc.set(self.out.bytes(), len);
    }

    /// A simple string.
    pub(super) fn simple(&mut self, text: &str) {
        let enc = self.enc();
        enc.simple(self.out.bytes(), text);
    }
}

/// A watched key's identity: the logical database, then the key.
pub(super) fn watch_id(logical: u8, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(logical);
    out.extend_from_slice(key);
    out
}
