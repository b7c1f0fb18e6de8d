//! The key-value store behind `packetstore serve` (PASTE's pKVS, paper
//! section 5.1): strings and collections in sixteen databases, with
//! expiry, in one persistent B+ tree
//! whose changes are made durable first by the log (write-behind logging).
//!
//! # The write path
//!
//! A command becomes a list of [`Op`]s, blind writes of whole values
//! (`Put` a key's new value, `Del` a key, delete a hash, flush all), which
//! `apply` appends to the log as one group of records (the last one tagged
//! `TAG_END`) and applies to the tree's working version. A value is named
//! by extents of pool buffers: the bytes a client's request was received
//! into (zero copy), so neither the log nor the tree copies it; the tree
//! keeps small values (up to `INLINE_VALUE_MAX`) inline in its leaf. The
//! log's commit (one fence, or one fdatasync per batch) makes the group
//! durable: that is when the reply may leave.
//!
//! # Checkpoints ride on the log's commits
//!
//! The tree is made durable in the background, in three phases each after
//! one of the log's own commits (so a checkpoint adds no fence and no sync):
//! 1. `prepare`: the tree's changed nodes are sealed and flushed; they
//!    cover every record appended so far.
//! 2. after the next commit: the tree's meta slot is written and flushed.
//! 3. after the one after: the tree's new version is durable, so the records
//!    it covers are released (their buffers lose the log's references, the
//!    log's space is reused), and the values it replaced lose the tree's.
//!
//! # Recovery
//!
//! Open the log (its live records take references), open the tree (O(1):
//! the last durable version), then replay the live records, group by group,
//! into the tree, except those below the version's mark (`#lsn`: the log's
//! tail when the checkpoint began), which it reflects already. Records are
//! released only after the version covering them is durable, but the
//! release marks of one checkpoint may reach the media in any subset, so
//! the mark, not the release marks, says where replay starts. A group
//! without its end record (a batch torn by a power failure, never
//! acknowledged) is released, not replayed: a command is all or nothing.
//!
//! # Keys in the tree (schema 2, `docs/format.md`)
//!
//! One tree holds every namespace, by the key's first byte: `k` db key (a
//! string), `m` db key (a collection's 16-byte metadata naming its object
//! id), `x` db key (expiry, u64 ms since the epoch), `e` oid space rest (a
//! collection's elements), `g` oid and `G` db (garbage: a dead object, a
//! flushed physical database, emptied by the reclaimer in `garbage.rs`),
//! and the store's own entries: `#db` n (logical database n's physical
//! id), `#dbnext`, `#oid`, `#schema`, `#lsn` (the first record the
//! checkpoint does not cover). Reads are in `reads.rs`; pools of schema 1
//! are converted at open (`convert.rs`).
//!
//! Invariants: a record is released only after a durable tree version
//! reflects it; a command's records are appended together and end with
//! `TAG_END`; `collections` equals the number of `m` entries, `garbage`
//! the number of `g` and `G` entries, `dbs` the `#db` entries;
//! `expiries` mirrors the `x` entries.

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::time::{Duration, Instant};

use crate::error::{BufferError, LogError};
use crate::index::compact::{CompactConfig, CompactStats, Compactor};
use crate::index::node::Value;
use crate::index::tree::{value_extents, Tree, TreeError};
use crate::limits::LOG_BATCH_SIZE_MAX;
use crate::log::ring::{CommitTicket, Log, RecoveryReport};
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::store::keyspace::{
    db_entry_logical, prefix_end, split_db_user_key, DbId, DATABASES, DB_NEXT_ENTRY, DB_NEXT_FIRST, ELEMENT_PREFIX_LEN,
    KEY_PREFIX_LEN, NS_DEAD, NS_DEAD_DB, NS_EXPIRE, NS_META, OID_ENTRY,
};

mod convert;
mod counts;
mod garbage;
mod metas;
mod published;
mod reads;
mod replicated;
mod scrub;
mod txn;

pub use reads::{Elements, RestBound};
pub use replicated::{Replication, KIND_ENTRY, KIND_STATE, RAFT_ENTRY};
pub use scrub::{ScrubStats, SCRUB_ENTRIES_PER_STEP_MAX};
pub use txn::{Alone, Horizons, TxnMarker, TxnOracle, KIND_TXN, TXN_ENTRY, TXN_MARKER_SIZE, TXN_SHARDS_MAX};

/// Record kinds of the store's log.
pub const KIND_PUT: u16 = 0x20;
pub const KIND_DEL: u16 = 0x21;
pub const KIND_DEL_HASH: u16 = 0x22;
pub const KIND_FLUSH: u16 = 0x23;
/// The end of a group of several commands (a transaction): no key, no
/// extents, tagged `TAG_END`; replaying it changes nothing.
pub const KIND_END: u16 = 0x24;
const _: () = assert!(
    *crate::pool::kind::STORE_RECORD_KINDS.start() == KIND_PUT
        && *crate::pool::kind::STORE_RECORD_KINDS.end() == txn::KIND_TXN
        && replicated::KIND_STATE + 1 == txn::KIND_TXN
);
/// The log bytes one group of several commands may take: it must fit the
/// room a batch always has when a command starts (`batch_has_room`: under
/// half of `LOG_BATCH_SIZE_MAX` used, three eighths of the ring free).
pub const GROUP_LOG_BYTES_MAX: u64 = LOG_BATCH_SIZE_MAX / 4;
/// Tree entries compaction may visit per op written.
const ENTRIES_PER_OP: usize = 4;
/// Compaction may copy 1/COPY_SHARE of the bytes written (measured when
/// relocating all the time: 1/2 cost up to 31% of SET throughput; 1/5 cost
/// 15%, then 36% at -P 16 once 2 MiB pages made writes faster; 1/8 costs
/// 7% and 17%, within the 20% bound; bench/results/kv.md).
const COPY_SHARE: u64 = 8;
/// Tag bit of a command's last record.
pub const TAG_END: u64 = 1;

/// The default replay budget (records). Replaying a record costs about
/// 2 us (`bench/restart.sh`): this bounds a restart's replay to tens of
/// milliseconds.
pub const REPLAY_RECORDS_MAX_DEFAULT: usize = 20_000;

/// The longest key a client may use.
pub const KEY_SIZE_MAX: usize = 256;
/// The longest element a collection keeps in its tree keys: a hash
/// field, a set or sorted set member (`e` oid space, a score key of 8
/// bytes for sorted sets, then the member must fit a tree key).
pub const MEMBER_SIZE_MAX: usize = 480;
/// The longest hash field (a member of a hash).
pub const FIELD_SIZE_MAX: usize = MEMBER_SIZE_MAX;
/// Values up to this size are copied into the tree's leaf.
pub const INLINE_VALUE_MAX: usize = 64;
/// The default limit on a value.
pub const VALUE_SIZE_MAX_DEFAULT: u64 = 64 * 1024 * 1024;

/// The lsn of the first record a checkpoint does not cover.
pub(super) const COVERED_ENTRY: &[u8] = b"#lsn";

const _: () = assert!(KEY_PREFIX_LEN + KEY_SIZE_MAX <= crate::limits::KEY_SIZE_MAX);
const _: () = assert!(ELEMENT_PREFIX_LEN + 8 + MEMBER_SIZE_MAX <= crate::limits::KEY_SIZE_MAX);
/// The longest tree key the store writes.
const TREE_KEY_LONGEST: usize = if KEY_PREFIX_LEN + KEY_SIZE_MAX > ELEMENT_PREFIX_LEN + 8 + MEMBER_SIZE_MAX {
    KEY_PREFIX_LEN + KEY_SIZE_MAX
} else {
    ELEMENT_PREFIX_LEN + 8 + MEMBER_SIZE_MAX
};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("out of space: {0}")]
    Full(String),
    #[error("value of {size} bytes is over the limit of {limit}")]
    TooLarge { size: u64, limit: u64 },
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// A replicated store that is not its group's writer.
    #[error("READONLY You can't write against a read only replica.")]
    ReadOnly,
    /// A node's pool opened outside its group (it would diverge from it).
    #[error(
        "this pool belongs to a node of a replicated group: start it with that node's --node-id and the group's \
         --peers (its own entries and state are in the log and tree; served alone it would diverge from the group)"
    )]
    GroupPool,
}

impl From<BufferError> for StoreError {
    fn from(error: BufferError) -> Self {
        StoreError::Full(error.to_string())
    }
}

impl StoreError {
    /// The tree key of a value that failed its CRC, if that is the error.
    pub fn corrupt_value_key(&self) -> Option<&[u8]> {
        match self {
            StoreError::Tree(TreeError::CorruptValue { key }) => Some(key),
            _ => None,
        }
    }

    /// Whether the error is a lack of space (the client may retry later).
    pub fn is_full(&self) -> bool {
        matches!(self, StoreError::Full(_) | StoreError::Tree(TreeError::Buffers(_)))
            || matches!(self, StoreError::Log(LogError::LogFull { .. }))
    }
}

#[derive(Clone, Copy, Debug)]
pub struct StoreConfig {
    pub value_size_max: u64,
    /// The replay budget: recovery replays at most this many log records
    /// (plus those of the one command that crossed it). A checkpoint
    /// starts when the log holds half as many records since the durable
    /// tree's mark; commands wait while it holds all of them.
    pub replay_records_max: usize,
    /// A checkpoint also starts this long after the last one, if anything
    /// changed.
    pub checkpoint_interval: Duration,
    /// Free buffers kept back from writes (the receive ring's refills).
    pub buffers_reserve: u32,
    pub compaction: CompactConfig,
    /// The log is a replicated group's Raft log (`replicated.rs`): the
    /// replica, not the store, replays it at open.
    pub replicated: bool,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            value_size_max: VALUE_SIZE_MAX_DEFAULT,
            replay_records_max: REPLAY_RECORDS_MAX_DEFAULT,
            checkpoint_interval: Duration::from_secs(1),
            buffers_reserve: 0,
            compaction: CompactConfig::default(),
            replicated: false,
        }
    }
}

/// One blind write of a command. `Put` names its value by extents on
/// which the caller holds a reference (kept by the caller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Put {
        key: Vec<u8>,
        extents: Vec<Extent>,
        len: u64,
    },
    Del {
        key: Vec<u8>,
    },
    /// Schema 1's deletion of a hash: replayed only while a schema 1 pool
    /// is converted; never written.
    DelHash {
        name: Vec<u8>,
    },
    /// Schema 1's flush of every key: replayed only, never written.
    Flush,
    /// Ends a group of several commands (`end_group` appends it; handlers
    /// never build it).
    End,
    /// Ends a transaction's part on this shard (`end_group_txn` appends
    /// it): its marker's bytes (`TxnMarker`). Sets `#txn`.
    Txn {
        marker: Vec<u8>,
    },
}

pub use crate::store::keyspace::KeyType;

#[derive(Clone, Copy, Debug, Default)]
pub struct StoreStats {
    pub commands: u64,
    pub records: u64,
    pub commits: u64,
    pub checkpoints: u64,
    pub checkpoint_ns_max: u64,
    pub expired: u64,
    pub refused_full: u64,
    /// Snapshot values a follower already held (kept, not landed again).
    pub snapshot_values_kept: u64,
    /// Dead collections the reclaimer emptied in the background (INFO's
    /// lazyfreed_objects).
    pub lazyfreed: u64,
}

/// What opening found.
#[derive(Clone, Debug)]
pub struct StoreReport {
    pub log: RecoveryReport,
    pub tree_generation: u64,
    pub replayed_records: u64,
    pub dropped_records: u64,
    pub keys: u64,
    pub duration: Duration,
    /// Where the time went: the log's scan, opening the tree (and counting
    /// hashes and expiries), the replay, the closing checkpoint, and the
    /// reclamation walk when it had to finish first.
    pub phases: [(&'static str, Duration); 5],
}

impl std::fmt::Display for StoreReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} keys; tree generation {}; {} log records replayed, {} of a torn command dropped; {:.1} ms (",
            self.keys,
            self.tree_generation,
            self.replayed_records,
            self.dropped_records,
            self.duration.as_secs_f64() * 1e3
        )?;
        for (i, (name, duration)) in self.phases.iter().enumerate() {
            let separator = if i == 0 { "" } else { ", " };
            write!(f, "{separator}{name} {:.1}", duration.as_secs_f64() * 1e3)?;
        }
        write!(f, ")")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Prepared { durable: bool },
    MetaWritten { durable: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Prepare,
    Meta,
}

/// A commit in flight (page domain): the log's part and the checkpoint
/// phase it makes durable.
pub struct StoreTicket {
    log: Option<CommitTicket>,
    step: Option<Step>,
    /// Whether it makes changes durable (not only background work).
    carries_writes: bool,
    /// What one-sided readers may see once it is durable.
    unpublished: published::Unpublished,
}

pub use published::READ_LEASE;

pub struct Store {
    config: StoreConfig,
    log: Log,
    tree: Tree,
    /// Live records, oldest first; the first `covered` are reflected in
    /// the tree version being checkpointed.
    records: VecDeque<u64>,
    /// `apply`'s list of the command's records, (LSN, data CRC), kept
    /// between commands: no allocation per write (issue 36).
    appended: Vec<(u64, u32)>,
    covered: usize,
    phase: Phase,
    log_dirty: bool,
    /// Collections (`m` entries, every physical database; counted at open).
    collections: u64,
    /// The physical id of each logical database (`#db` n).
    dbs: [DbId; DATABASES as usize],
    /// The next physical id FLUSHDB hands out (`#dbnext`).
    db_next: DbId,
    /// The last object id handed out (`#oid`, or a reservation since).
    oid_last: u64,
    /// `g` and `G` entries: dead objects and flushed databases.
    garbage: u64,
    /// The schema of the tree being replayed into: 1 only while a pool of
    /// schema 1 is being converted at open.
    schema: u32,
    /// The `#lsn` value the tree holds (None: not known since open).
    /// Rewriting an unchanged one copied its leaf and root, whose old
    /// copies the next checkpoint then had to release: an idle server
    /// checkpointed every second forever.
    covered_written: Option<u64>,
    expiries: HashMap<Vec<u8>, u64>,
    /// The same, ordered by time: the keys due first are found in O(log n).
    /// Keys are `db_user_key`s (db, then the key).
    expiry_order: std::collections::BTreeSet<(u64, Vec<u8>)>,
    /// A buffer computed values are packed into, and its fill.
    arena: Option<(u32, u32)>,
    last_checkpoint: Instant,
    /// Set while `apply` holds a command in the log but not yet in the tree.
    mutating: bool,
    /// A group of several commands is open (`begin_group`): the log bytes
    /// and records its commands appended so far.
    group: Option<(u64, usize)>,
    /// One-sided readers' recent-writes table, if published (`published.rs`).
    published: Option<published::Publishing>,
    checkpoint_started: Option<Instant>,
    /// A quarter of the pool or less is free (see `note_buffers`).
    buffers_low: bool,
    /// Records appended since the last commit began, and syncs in flight
    /// that carry records (`writes_pending`).
    writes_unsynced: bool,
    write_syncs_in_flight: usize,
    compactor: Compactor,
    /// Compaction's budget, earned by writes: entries to visit, bytes to
    /// copy.
    credit_entries: usize,
    credit_bytes: u64,
    stats: StoreStats,
    /// Set in a replicated group (`replicated.rs`).
    repl: Option<Replication>,
    /// Corrupt values reads found, and the scrubber (`scrub.rs`).
    integrity: scrub::Integrity,
    /// Collections' element counts, kept beside the tree (`counts.rs`).
    counts: counts::ElementCounts,
    /// Collections' `m` entries, kept beside the tree (`metas.rs`).
    metas: metas::KeptMetas,
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    now_us() / 1000
}

/// Microseconds since the epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// A page of SCAN: the keys, and where the next page starts (None: done).
pub type ScanPage = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// The entries of `tree` whose keys start with `prefix`.
fn prefix_range(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (Bound::Included(prefix.to_vec()), prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded))
}

fn as_refs(range: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> (Bound<&[u8]>, Bound<&[u8]>) {
    fn map(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
        match b {
            Bound::Included(k) => Bound::Included(k.as_slice()),
            Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        }
    }
    (map(&range.0), map(&range.1))
}

fn decode_u32(value: &Value) -> Option<u32> {
    match value {
        Value::Inline(bytes) if bytes.len() == 4 => Some(u32::from_le_bytes(bytes[..].try_into().ok()?)),
        _ => None,
    }
}

/// A store entry that does not decode.
fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} entry is malformed"))
}

fn decode_u64(value: &Value) -> Option<u64> {
    match value {
        Value::Inline(bytes) if bytes.len() == 8 => Some(u64::from_le_bytes(bytes[..].try_into().ok()?)),
        _ => None,
    }
}

/// The bytes of a value: an inline value's borrowed, others copied out of
/// the pool.
pub fn value_bytes<'v>(pool: &Pool, value: &'v Value) -> Result<std::borrow::Cow<'v, [u8]>, StoreError> {
    if let Value::Inline(bytes) = value {
        return Ok(std::borrow::Cow::Borrowed(bytes));
    }
    let mut out = Vec::with_capacity(value_len(value) as usize);
    pool.read_extents(&value_extents(pool, value)?, &mut out);
    Ok(std::borrow::Cow::Owned(out))
}

/// A value's length in bytes.
pub fn value_len(value: &Value) -> u64 {
    match value {
        Value::Inline(bytes) => bytes.len() as u64,
        Value::Extents(extents, _) => extents.iter().map(|e| u64::from(e.len)).sum(),
        Value::Indirect { len, .. } => *len,
    }
}

impl Store {
    /// Opens (or starts) the store of `pool`: recovers its log, opens its
    /// tree and replays the log's live records into it.
    pub fn open(pool: &Pool, buffers: &mut Buffers, config: StoreConfig) -> Result<(Store, StoreReport), StoreError> {
        Self::open_with_progress(pool, buffers, config, &mut |_, _| {})
    }

    /// `open`, calling `progress(records replayed, records to replay)` as
    /// the log is replayed (for a progress bar).
    pub fn open_with_progress(
        pool: &Pool,
        buffers: &mut Buffers,
        config: StoreConfig,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(Store, StoreReport), StoreError> {
        Self::open_shard(pool, buffers, config, (&Alone, 0), progress)
    }

    /// `open_with_progress` for shard `txn.1` of a data set: it publishes
    /// its horizon to the oracle `txn.0` before its replay, which asks the
    /// oracle about each transaction across shards it finds (`txn.rs`).
    pub fn open_shard(
        pool: &Pool,
        buffers: &mut Buffers,
        config: StoreConfig,
        txn: (&dyn TxnOracle, u16),
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(Store, StoreReport), StoreError> {
        let started = Instant::now();
        let mut lap = started;
        let mut phase = move || std::mem::replace(&mut lap, Instant::now()).elapsed();
        let (log, log_report) = Log::recover(pool, buffers)?;
        let log_time = phase();
        let mut tree = Tree::open(pool, buffers)?;
        // A tree written before order statistics reads but takes no change:
        // its internal nodes gain their counts now, durably, before the
        // log's replay changes it (the keys and values stay the same).
        if !tree.is_counted(pool)? {
            tree.add_counts(pool, buffers)?;
            tree.commit(pool, buffers)?;
        }
        let longest = TREE_KEY_LONGEST;
        if tree.config().key_size_max < longest {
            return Err(StoreError::Corrupt(format!(
                "buffers of {} bytes hold keys of at most {} bytes; the store needs {longest} (use 2 KiB buffers)",
                pool.geometry().buffer_size,
                tree.config().key_size_max
            )));
        }
        let schema = convert::schema_of(pool, &mut tree, buffers, &log)?;
        // The log flushed every value's bytes at append.
        tree.set_value_flush(false);
        // The page domain syncs whole pages: the batch's nodes wait in DRAM
        // until a checkpoint writes them once.
        tree.set_shadow(pool.domain().domain == crate::pool::persist::Domain::Page)?;
        let tree_generation = tree.generation();
        let mut store = Store::assemble(pool, config, log, tree, schema);
        store.load_state(pool)?;
        txn.0.publish(txn.1, store.txn_horizon(pool)?);
        let tree_time = phase();
        // A replicated store replays nothing itself; a pool that served
        // alone before replays its commands first, and joins with them.
        let group_pool = store.has_replicated_history(pool)?;
        if store.repl.is_none() && group_pool {
            return Err(StoreError::GroupPool);
        }
        let (mut replayed, dropped) = if store.repl.is_some() && group_pool {
            store.keep_for_replica(pool, buffers)?;
            (0, 0)
        } else {
            store.replay(pool, buffers, txn.0, progress)?
        };
        if store.schema == 1 {
            store.convert_schema_1(pool, buffers)?;
            // The conversion's version must become durable in one piece.
            replayed += 1;
        }
        store.load_state(pool)?;
        store.load_expiries(pool)?;
        let replay_time = phase();
        // Recovery ends with a checkpoint: the replayed records, and the
        // overwritten values their buffers hold, are released now. Without
        // it, a server killed before its first checkpoint, again and again,
        // piles up records until the pool cannot even fill a receive ring.
        if replayed > 0 {
            store.checkpoint_all(pool, buffers)?;
        }
        let checkpoint_time = phase();
        // The buffers the previous run used stay unknown (held) until the
        // tree's reclamation walk has found which are free; it runs in
        // steps while serving. If what is known free now could not even
        // fill a receive ring and the write reserve, finish it first:
        // otherwise a restart on a pool whose earlier runs spread over
        // the whole file cannot start (found by the kill -9 test).
        if buffers.is_holding() && buffers.free_count() < store.config.buffers_reserve.max(64) * 2 {
            store.finish_reclaim(pool, buffers)?;
        }
        let reclaim_time = phase();
        let report = StoreReport {
            log: log_report,
            tree_generation,
            replayed_records: replayed,
            dropped_records: dropped,
            keys: store.keys(pool)?,
            duration: started.elapsed(),
            phases: [
                ("log", log_time),
                ("tree", tree_time),
                ("replay", replay_time),
                ("checkpoint", checkpoint_time),
                ("reclaim", reclaim_time),
            ],
        };
        Ok((store, report))
    }

    /// A store of `log` and `tree` just opened: nothing replayed, no
    /// state loaded yet.
    fn assemble(pool: &Pool, config: StoreConfig, log: Log, tree: Tree, schema: u32) -> Store {
        Store {
            config,
            log,
            tree,
            records: VecDeque::new(),
            appended: Vec::new(),
            covered: 0,
            phase: Phase::Idle,
            log_dirty: false,
            collections: 0,
            dbs: std::array::from_fn(|n| n as DbId),
            db_next: DB_NEXT_FIRST,
            oid_last: 0,
            garbage: 0,
            schema,
            covered_written: None,
            expiries: HashMap::new(),
            expiry_order: std::collections::BTreeSet::new(),
            arena: None,
            last_checkpoint: Instant::now(),
            mutating: false,
            group: None,
            published: None,
            checkpoint_started: None,
            buffers_low: false,
            writes_unsynced: false,
            write_syncs_in_flight: 0,
            compactor: Compactor::new(config.compaction, pool.geometry().buffer_count, pool.geometry().buffer_size),
            credit_entries: 0,
            credit_bytes: 0,
            stats: StoreStats::default(),
            repl: config.replicated.then(|| Replication { checkpoint_allowed: true, ..Replication::default() }),
            integrity: scrub::Integrity::default(),
            counts: counts::ElementCounts::default(),
            metas: metas::KeptMetas::default(),
        }
    }

    /// Applies the live records, group by group; releases a trailing group
    /// that lacks its end (never acknowledged).
    fn replay(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        oracle: &dyn TxnOracle,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(u64, u64), StoreError> {
        let lsns: Vec<u64> = self.log.live_lsns().collect();
        // Records below the checkpoint's mark are in the tree already. They
        // may still look live: their release marks were written in order,
        // but a power failure may keep any subset of them. Replaying one
        // would bring back a value a later, released record replaced.
        let covered = self.tree.get(pool, COVERED_ENTRY)?.as_ref().and_then(decode_u64).unwrap_or(0);
        let (below, lsns): (Vec<u64>, Vec<u64>) = lsns.into_iter().partition(|&lsn| lsn < covered);
        for &lsn in &below {
            self.log.release(pool, lsn)?;
        }
        let mut group: Vec<(u64, Op, u32)> = Vec::new();
        let mut replayed = 0;
        // A transaction across shards that did not reach every writer: it
        // is the last group of the log (`txn.rs`).
        let mut undone: Option<u64> = None;
        let mut dropped = 0;
        let total = lsns.len() as u64;
        for (done, lsn) in lsns.into_iter().enumerate() {
            if done % 4096 == 0 {
                progress(done as u64, total);
            }
            let view = self.log.view(pool, lsn)?;
            let op = match view.kind {
                KIND_PUT => Op::Put { key: view.key, extents: view.extents, len: view.data_len },
                KIND_DEL => Op::Del { key: view.key },
                KIND_DEL_HASH => Op::DelHash { name: view.key },
                KIND_FLUSH => Op::Flush,
                KIND_END => Op::End,
                KIND_TXN => Op::Txn { marker: view.key },
                other => return Err(StoreError::Corrupt(format!("log record {lsn} has kind {other:#x}"))),
            };
            group.push((lsn, op, view.data_crc));
            if view.tag & TAG_END == 0 {
                continue;
            }
            if let Some(txid) = undone {
                return Err(StoreError::Corrupt(format!(
                    "a group follows transaction {txid}, which did not reach every shard it wrote"
                )));
            }
            if let Some((_, Op::Txn { marker }, _)) = group.last() {
                let marker = TxnMarker::decode(marker).ok_or_else(|| corrupt("a transaction's marker"))?;
                if !oracle.committed(&marker)? {
                    undone = Some(marker.txid);
                    dropped += group.len() as u64;
                    for (lsn, _, _) in group.drain(..) {
                        self.log.release(pool, lsn)?;
                    }
                    continue;
                }
            }
            for (lsn, op, crc) in group.drain(..) {
                self.apply_tree(pool, buffers, &op, crc)?;
                self.records.push_back(lsn);
                replayed += 1;
            }
        }
        progress(total, total);
        dropped += group.len() as u64;
        for (lsn, _, _) in &group {
            self.log.release(pool, *lsn)?;
        }
        if dropped > 0 || !below.is_empty() {
            self.log.commit(pool, buffers)?;
        }
        Ok((replayed, dropped))
    }

    /// Whether the pool was a replicated group's: `#raft`, or a record of
    /// the replica's own kinds.
    fn has_replicated_history(&self, pool: &Pool) -> Result<bool, StoreError> {
        if self.raft_meta(pool)?.is_some() {
            return Ok(true);
        }
        for lsn in self.log.live_lsns() {
            if matches!(self.log.view(pool, lsn)?.kind, KIND_ENTRY | KIND_STATE) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A replicated store at open: the records below the checkpoint's mark
    /// are released (the tree reflects them), the others kept for the
    /// replica to read and replay.
    fn keep_for_replica(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        let covered = self.tree.get(pool, COVERED_ENTRY)?.as_ref().and_then(decode_u64).unwrap_or(0);
        let (below, live): (Vec<u64>, Vec<u64>) = self.log.live_lsns().partition(|&lsn| lsn < covered);
        for &lsn in &below {
            self.log.release(pool, lsn)?;
        }
        self.records.extend(live);
        if !below.is_empty() {
            self.log.commit(pool, buffers)?;
        }
        let meta = self.raft_meta(pool)?.unwrap_or_default();
        let repl = self.repl.as_mut().expect("replicated");
        repl.meta_written = meta.clone();
        repl.meta = meta;
        Ok(())
    }

    fn count_prefix(&self, pool: &Pool, prefix: &[u8]) -> Result<u64, StoreError> {
        let range = prefix_range(prefix);
        Ok(self.tree.count(pool, as_refs(&range))?)
    }

    /// Reads the in-memory state the tree's entries imply: the databases'
    /// physical ids, the next one, the last object id, and the numbers of
    /// collections and of garbage entries.
    fn load_state(&mut self, pool: &Pool) -> Result<(), StoreError> {
        self.dbs = std::array::from_fn(|n| n as DbId);
        for logical in 0..DATABASES as u8 {
            if let Some(value) = self.tree.get(pool, &crate::store::keyspace::db_entry_key(logical))? {
                self.dbs[usize::from(logical)] = decode_u32(&value).ok_or_else(|| corrupt("#db"))?;
            }
        }
        self.db_next = match self.tree.get(pool, DB_NEXT_ENTRY)? {
            Some(value) => decode_u32(&value).ok_or_else(|| corrupt("#dbnext"))?,
            None => DB_NEXT_FIRST,
        };
        let oid = self.tree.get(pool, OID_ENTRY)?.as_ref().and_then(decode_u64).unwrap_or(0);
        self.oid_last = self.oid_last.max(oid);
        self.collections = if self.schema == 1 { 0 } else { self.count_prefix(pool, &[NS_META])? };
        self.garbage = self.count_prefix(pool, &[NS_DEAD])? + self.count_prefix(pool, &[NS_DEAD_DB])?;
        Ok(())
    }

    fn load_expiries(&mut self, pool: &Pool) -> Result<(), StoreError> {
        self.expiries.clear();
        self.expiry_order.clear();
        let range = prefix_range(&[NS_EXPIRE]);
        let mut found = Vec::new();
        for entry in self.tree.range(pool, as_refs(&range), false) {
            let (key, value) = entry?;
            let at = decode_u64(&value).ok_or_else(|| corrupt("an expiry"))?;
            found.push((key[1..].to_vec(), at));
        }
        for (id, at) in found {
            self.set_expiry(&id, Some(at));
        }
        Ok(())
    }

    pub fn config(&self) -> StoreConfig {
        self.config
    }

    pub fn stats(&self) -> StoreStats {
        self.stats
    }

    /// Dead collections and flushed databases the reclaimer has yet to
    /// empty (INFO's lazyfree_pending_objects).
    pub fn garbage_pending(&self) -> u64 {
        self.garbage
    }

    pub fn log(&self) -> &Log {
        &self.log
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    // ---- writes ----

    /// Whether the current batch has room for more commands (else the
    /// caller stops reading until the next commit). A log more than five
    /// eighths full also stops it: the checkpoint due since half full
    /// then releases the log within a few commits, and a burst of writes
    /// waits for it instead of being refused at three quarters. So does a
    /// log holding the whole replay budget: that bounds recovery.
    pub fn batch_has_room(&self) -> bool {
        let usage = self.log.usage();
        !self.checkpoint_waiting()
            && self.log.batch_bytes() < LOG_BATCH_SIZE_MAX / 2
            && usage.free_bytes >= usage.ring_size * 3 / 8
            && self.replay_records() < self.config.replay_records_max
    }

    /// The live records a restart would replay: all of them, but in a
    /// replicated store those a durable checkpoint covered and that stay
    /// only for followers behind (`has_room_to_retain` bounds them).
    fn replay_records(&self) -> usize {
        let Some(repl) = &self.repl else { return self.records.len() };
        let retained = self.records.partition_point(|&lsn| lsn < repl.covered_tail_lsn);
        self.records.len() - retained
    }

    /// Refuses a write that could not complete: free buffers below the
    /// reserve, or the log three quarters full (the rest is for deletes).
    pub fn check_room_for_write(&self, buffers: &Buffers) -> Result<(), StoreError> {
        let usage = self.log.usage();
        if usage.free_bytes < usage.ring_size / 4 {
            return Err(StoreError::Full(format!(
                "the log is {}% full until a checkpoint releases it",
                100 - usage.free_bytes * 100 / usage.ring_size
            )));
        }
        let needed = self.config.buffers_reserve + 64;
        if buffers.free_count() < needed {
            return Err(StoreError::Full(format!(
                "{} free buffers of {}, {} are kept for receiving",
                buffers.free_count(),
                buffers.count(),
                self.config.buffers_reserve
            )));
        }
        Ok(())
    }

    /// Copies bytes (a computed number or count, a value being relocated)
    /// into the pool, packed after the previous ones across shared
    /// buffers; the caller gets one reference per extent.
    pub fn stage(&mut self, pool: &Pool, buffers: &mut Buffers, bytes: &[u8]) -> Result<Vec<Extent>, StoreError> {
        let size = pool.geometry().buffer_size;
        // One extent per buffer the bytes span: sized once (a growing Vec
        // was 1% of a SET's instructions).
        let mut extents: Vec<Extent> = Vec::with_capacity(1 + bytes.len() / size as usize);
        let mut rest = bytes;
        while !rest.is_empty() {
            let (buffer, fill) = match self.arena {
                Some((buffer, fill)) if fill < size => (buffer, fill),
                other => {
                    let fresh = match buffers.allocate() {
                        Ok(fresh) => fresh,
                        Err(error) => {
                            buffers.release_extents(&extents).expect("our references");
                            return Err(error.into());
                        }
                    };
                    if let Some((old, _)) = other {
                        // The arena's own reference, never a request's.
                        buffers.release_unstaged(old)?;
                    }
                    self.arena = Some((fresh, 0));
                    (fresh, 0)
                }
            };
            let n = rest.len().min((size - fill) as usize);
            pool.write(pool.buffer_offset(buffer) + u64::from(fill), &rest[..n]);
            buffers.retain_staged(buffer)?;
            extents.push(Extent::new(buffer, fill as usize, n));
            self.arena = Some((buffer, fill + n as u32));
            rest = &rest[n..];
        }
        Ok(extents)
    }

    /// Gives back the references a command's `Put` ops hold.
    pub fn release_ops(buffers: &mut Buffers, ops: &[Op]) {
        for op in ops {
            if let Op::Put { extents, .. } = op {
                buffers.release_extents(extents).expect("an op's references");
            }
        }
    }

    /// Checks, before the log takes a command, everything the tree or the
    /// log could refuse half way: after the log holds it, the tree must
    /// take it too. Returns the log bytes its records take.
    fn check_fits(&mut self, pool: &Pool, buffers: &Buffers, ops: &[Op]) -> Result<u64, StoreError> {
        let tree = self.tree.config();
        let size = pool.geometry().buffer_size;
        let mut index_buffers = 0;
        for op in ops {
            let key_len = match op {
                Op::Put { key, extents, len } => {
                    if extents.len() > crate::limits::RECORD_EXTENTS_MAX {
                        return Err(StoreError::TooLarge {
                            size: *len,
                            limit: crate::limits::RECORD_EXTENTS_MAX as u64 * u64::from(size),
                        });
                    }
                    if extents.len() * 8 > tree.value_size_max {
                        index_buffers += crate::index::indirect::buffers_needed(extents.len(), size);
                    }
                    key.len()
                }
                Op::Del { key } => key.len(),
                Op::DelHash { name } => 3 + name.len(),
                Op::Flush | Op::End | Op::Txn { .. } => 0,
            };
            if key_len > tree.key_size_max {
                return Err(StoreError::Tree(TreeError::KeyTooLarge { size: key_len, limit: tree.key_size_max }));
            }
        }
        // Room for the index chains of fragmented values and for each op's
        // nodes: the tree must not run short half way through a command.
        let per_op = 4 * (u32::from(self.tree.height()) + 2) + 2;
        let needed = index_buffers as u32 + per_op * ops.len() as u32;
        if ops.iter().any(|op| matches!(op, Op::Put { .. })) && buffers.free_count() < needed {
            return Err(StoreError::Full(format!("{} free buffers, {needed} needed", buffers.free_count())));
        }
        // A command's records take at most a quarter of the log: since
        // commands wait while the log is over five eighths full
        // (`batch_has_room`), such a command always fits, padding at a
        // lap's end included. A larger one is refused as such: waiting
        // for a checkpoint would not help.
        let log_bytes: usize = ops
            .iter()
            .map(|op| match op {
                Op::Put { key, extents, .. } => crate::log::record::record_len(extents.len(), key.len()),
                Op::Del { key } => crate::log::record::record_len(0, key.len()),
                Op::DelHash { name } => crate::log::record::record_len(0, name.len()),
                Op::Flush | Op::End | Op::Txn { .. } => crate::log::record::record_len(0, 0),
            })
            .sum();
        let ring_size = self.log.usage().ring_size;
        if log_bytes as u64 > ring_size / 4 {
            self.stats.refused_full += 1;
            return Err(StoreError::Full(format!(
                "the command needs {log_bytes} bytes of log, more than a quarter of this {ring_size}-byte log: \
                 split it, or use a pool with a larger --log-size"
            )));
        }
        // A group's commands, and its end record, fit the room every batch
        // has when a command starts, so the end record always fits.
        if let Some((group_bytes, _)) = self.group {
            let end = crate::log::record::record_len(0, TXN_MARKER_SIZE) as u64;
            let limit = GROUP_LOG_BYTES_MAX.min(ring_size / 4);
            if group_bytes + log_bytes as u64 + end > limit {
                self.stats.refused_full += 1;
                return Err(StoreError::Full(format!(
                    "the transaction needs more than {limit} bytes of log (this command {log_bytes}, the ones \
                     before it {group_bytes}): split it"
                )));
            }
        }
        Ok(log_bytes as u64)
    }

    /// Appends a command's ops to the log as one group and applies them to
    /// the tree. Durable at the next commit. On an error nothing of the
    /// command remains (its records are released at once).
    pub fn apply(&mut self, pool: &Pool, buffers: &mut Buffers, ops: &[Op]) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        if self.repl.as_ref().is_some_and(|r| !r.writable) {
            return Err(StoreError::ReadOnly);
        }
        let log_bytes = self.check_fits(pool, buffers, ops)?;
        // Cleared once the log and the tree both hold the command: a panic
        // in between leaves it set (`is_consistent`).
        self.mutating = true;
        // Each record's LSN, and the CRC of its op's bytes as its
        // `data_crc`: the tree keeps it with the value (computed once,
        // where the bytes landed).
        let mut appended = std::mem::take(&mut self.appended);
        appended.clear();
        let publishing = self.unpublished_mark();
        for (i, op) in ops.iter().enumerate() {
            // In a group, only `end_group`'s record ends it.
            // In a replicated store, only the entry record ends it.
            let tag = if i + 1 == ops.len() && self.group.is_none() && self.repl.is_none() { TAG_END } else { 0 };
            let result = match op {
                Op::Put { key, extents, .. } => self.log.append(pool, buffers, KIND_PUT, tag, key, extents),
                Op::Del { key } => self.log.append(pool, buffers, KIND_DEL, tag, key, &[]),
                Op::DelHash { .. } | Op::Flush => unreachable!("schema 1's records are replayed, never written"),
                Op::End | Op::Txn { .. } => unreachable!("handlers never build a group's end"),
            };
            match result {
                Ok(lsn) => {
                    appended.push((lsn, self.log.last_data_crc()));
                    if let Op::Put { key, .. } | Op::Del { key } = op {
                        self.note_appended(key, lsn);
                    }
                }
                Err(error) => {
                    // Nothing of the command stays: readers are not told of it.
                    self.forget_unpublished(publishing);
                    for &(lsn, _) in &appended {
                        self.log.release(pool, lsn)?;
                    }
                    self.appended = appended;
                    self.log_dirty = true;
                    self.stats.refused_full += 1;
                    self.mutating = false;
                    return Err(error.into());
                }
            }
        }
        self.log_dirty = true;
        self.writes_unsynced = true;
        self.stats.records += appended.len() as u64;
        // Writes pay for compaction (see `compact_step`).
        let config = self.compactor.config;
        self.credit_entries = (self.credit_entries + ENTRIES_PER_OP * ops.len()).min(4 * config.entries_per_step);
        let written: u64 = ops.iter().map(|op| if let Op::Put { len, .. } = op { *len } else { 0 }).sum();
        self.credit_bytes = (self.credit_bytes + written / COPY_SHARE).min(4 * config.bytes_per_step);
        self.stats.commands += 1;
        if let Some((group_bytes, group_records)) = &mut self.group {
            *group_bytes += log_bytes;
            *group_records += appended.len();
        }
        if let Some(repl) = &mut self.repl {
            repl.open.extend(appended.iter().map(|&(lsn, _)| lsn));
            repl.open_bytes += written;
        }
        self.records.extend(appended.iter().map(|&(lsn, _)| lsn));
        for (op, &(_, crc)) in ops.iter().zip(&appended) {
            // The log holds the command: a failure here is fatal for the
            // tree (poisoned), and recovery would replay the command.
            self.apply_tree(pool, buffers, op, crc)?;
        }
        self.appended = appended;
        self.mutating = false;
        Ok(())
    }

    /// Opens a group: the commands applied until `end_group` are one
    /// group of the log (a transaction), replayed all or none after a
    /// power failure. Each command is still applied to the tree at once,
    /// so the next one reads its writes. The group's log bytes are bounded
    /// (`GROUP_LOG_BYTES_MAX`): a command over the bound is refused, and
    /// the group goes on without it.
    pub fn begin_group(&mut self) {
        assert!(self.group.is_none(), "groups do not nest");
        self.group = Some((0, 0));
    }

    /// The records the open group's commands appended so far (0 when no
    /// group is open).
    pub fn group_records(&self) -> usize {
        self.group.map_or(0, |(_, records)| records)
    }

    /// Closes the group `begin_group` opened: appends its end record if any
    /// command of it wrote. Durable at the next commit, like a command.
    pub fn end_group(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        let (_, records) = self.group.take().expect("a group is open");
        self.note_group_end();
        // A replicated store's entry record ends the group (`replicated.rs`).
        if records == 0 || self.repl.is_some() {
            return Ok(());
        }
        // Room was kept for it by every command of the group (`apply`). The
        // group's commands are in the tree already: were the end record
        // refused, the tree would hold what recovery drops, so that is a
        // bug that must stop the process (`is_consistent`), not an error.
        self.mutating = true;
        let lsn =
            self.log.append(pool, buffers, KIND_END, TAG_END, &[], &[]).expect("room kept by the group's commands");
        self.mutating = false;
        self.records.push_back(lsn);
        self.stats.records += 1;
        Ok(())
    }

    /// False while `apply` is between appending a command to the log and
    /// applying it to the tree: if a panic left it there, the store's
    /// volatile state no longer matches the log, and only a restart (which
    /// replays the log) may go on.
    pub fn is_consistent(&self) -> bool {
        !self.mutating
    }

    /// Applies one op to the tree's working version. `crc` is the
    /// `data_crc` of the op's record: the CRC of a put's bytes.
    /// An inline value is copied from its buffer here, after the log's
    /// append: the log flushes the buffer's lines only at the commit
    /// (`Log::begin_commit`), so they are still cached (a flush evicts
    /// them on some CPUs).
    fn apply_tree(&mut self, pool: &Pool, buffers: &mut Buffers, op: &Op, crc: u32) -> Result<(), StoreError> {
        match op {
            Op::Put { key, extents, len } => {
                let value = if *len <= INLINE_VALUE_MAX as u64 {
                    let mut bytes = Vec::with_capacity(*len as usize);
                    pool.read_extents(extents, &mut bytes);
                    Value::Inline(bytes)
                } else {
                    Value::Extents(extents.clone(), Some(crc))
                };
                let previous = self.tree_insert(pool, buffers, key, &value)?;
                self.note_put(key, &value, previous.is_none());
            }
            Op::Del { key } => {
                if self.tree_delete(pool, buffers, key)?.is_some() {
                    self.note_delete(key);
                }
            }
            Op::End => {}
            Op::Txn { marker } => {
                let marker = TxnMarker::decode(marker).ok_or_else(|| corrupt("a transaction's marker"))?;
                self.tree_insert(pool, buffers, TXN_ENTRY, &txn::txn_value(marker.txid))?;
            }
            Op::DelHash { .. } | Op::Flush if self.schema == 1 => self.apply_schema_1(pool, buffers, op)?,
            Op::DelHash { .. } | Op::Flush => {
                return Err(StoreError::Corrupt("a record of schema 1 in a store of schema 2".into()))
            }
        }
        Ok(())
    }

    /// Keeps the in-memory indexes in step with a put of `key`.
    fn note_put(&mut self, key: &[u8], value: &Value, created: bool) {
        if self.schema == 1 {
            return;
        }
        match key.first() {
            Some(&NS_META) if created => self.collections += 1,
            Some(&NS_DEAD) | Some(&NS_DEAD_DB) if created => self.garbage += 1,
            Some(&NS_EXPIRE) => {
                if let Some(at) = decode_u64(value) {
                    self.set_expiry(&key[1..], Some(at));
                }
            }
            Some(&b'#') => self.note_own_entry(key, value),
            _ => {}
        }
    }

    /// A put of one of the store's own entries (`#db` n, `#dbnext`, `#oid`).
    fn note_own_entry(&mut self, key: &[u8], value: &Value) {
        if let Some(logical) = db_entry_logical(key) {
            if let Some(db) = decode_u32(value) {
                self.dbs[usize::from(logical)] = db;
            }
        } else if key == DB_NEXT_ENTRY {
            if let Some(next) = decode_u32(value) {
                self.db_next = next;
            }
        } else if key == OID_ENTRY {
            if let Some(oid) = decode_u64(value) {
                self.oid_last = self.oid_last.max(oid);
            }
        }
    }

    fn note_delete(&mut self, key: &[u8]) {
        if self.schema == 1 {
            return;
        }
        match key.first() {
            Some(&NS_META) => self.collections -= 1,
            Some(&NS_DEAD) | Some(&NS_DEAD_DB) => self.garbage -= 1,
            Some(&NS_EXPIRE) => self.set_expiry(&key[1..], None),
            _ => {}
        }
    }

    /// `tree.insert`, telling the compactor what changed.
    fn tree_insert(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        key: &[u8],
        value: &Value,
    ) -> Result<Option<Value>, StoreError> {
        let previous = self.tree.insert(pool, buffers, key, value).inspect_err(|_| self.forget_kept())?;
        self.metas.note_changed(key);
        if previous.is_none() {
            self.counts.note_created(key);
        }
        if self.compactor.counts(key) {
            // A replaced value's index chain stays intact until the commit.
            let old = match &previous {
                Some(old) => value_extents(pool, old)?,
                None => Vec::new(),
            };
            let new: &[Extent] = match value {
                Value::Extents(extents, _) => extents,
                _ => &[],
            };
            self.compactor.note_change(key, &old, new);
        }
        Ok(previous)
    }

    /// A tree operation failed half way: the copies kept beside the tree
    /// (`counts.rs`, `metas.rs`) may no longer match it.
    fn forget_kept(&self) {
        self.counts.forget();
        self.metas.forget();
    }

    /// `tree.delete`, telling the compactor what changed.
    fn tree_delete(&mut self, pool: &Pool, buffers: &mut Buffers, key: &[u8]) -> Result<Option<Value>, StoreError> {
        let previous = self.tree.delete(pool, buffers, key).inspect_err(|_| self.forget_kept())?;
        if let Some(old) = &previous {
            self.metas.note_changed(key);
            self.counts.note_removed(key);
            if self.compactor.counts(key) {
                let old = value_extents(pool, old)?;
                self.compactor.note_change(key, &old, &[]);
            }
        }
        Ok(previous)
    }

    /// What compaction did and is doing.
    pub fn compaction(&self) -> CompactStats {
        self.compactor.stats()
    }

    /// The fraction of the value buffers' bytes that is not live.
    pub fn waste_ratio(&self) -> f64 {
        self.compactor.waste_ratio()
    }

    /// One bounded step of compaction (module `compact`): counts or
    /// relocates up to the configured entries and bytes. A relocation is a
    /// put of the same bytes, packed into fresh buffers, durable at the next
    /// commit. Stops early, harmlessly, when the pool or the batch is short.
    ///
    /// Its work is paid for by writes (each op earns `ENTRIES_PER_OP`
    /// entries to visit and 1/`COPY_SHARE` of its bytes to copy), so compaction costs a
    /// bounded fraction of the write path; an `idle` step (no command since
    /// the last) gets a full step's budget.
    pub fn compact_step(&mut self, pool: &Pool, buffers: &mut Buffers, idle: bool) -> Result<(), StoreError> {
        if self.tree.is_reclaiming() || !self.batch_has_room() {
            return Ok(());
        }
        let config = self.compactor.config;
        // A pool running short compacts harder.
        let short = buffers.free_count() < buffers.count() / 4;
        if idle || short {
            self.credit_entries = self.credit_entries.max(config.entries_per_step);
            self.credit_bytes = self.credit_bytes.max(config.bytes_per_step);
        }
        if self.credit_entries == 0 {
            return Ok(());
        }
        let Some(range) = self.compactor.next_range(short) else { return Ok(()) };
        let budget = self.credit_entries.min(config.entries_per_step);
        self.credit_entries -= budget;
        let mut entries = Vec::with_capacity(budget);
        // The CRC stored with each value: a relocation copies only bytes
        // that still match it (a corrupt value is left where it is, for
        // reads and the scrubber to report, never blessed with a new CRC).
        let mut crcs = HashMap::new();
        // Unchecked: compaction reads extents here, and checks the bytes it
        // copies below; a damaged inline value must not stop it.
        let mut iter = self.tree.range(pool, as_refs(&range), false).unchecked();
        let mut end = true;
        for entry in iter.by_ref() {
            let (key, value) = entry?;
            let len = value_len(&value);
            let extents = value_extents(pool, &value)?;
            if let Some(crc) = value.crc() {
                crcs.insert(key.clone(), crc);
            }
            entries.push((key, extents, len));
            if entries.len() == budget {
                end = false;
                break;
            }
        }
        drop(iter);
        let bytes_budget = self.credit_bytes.min(config.bytes_per_step);
        let relocations = self.compactor.step_scan(entries, end, bytes_budget);
        let relocated: u64 = relocations.iter().map(|r| r.len).sum();
        self.credit_bytes = self.credit_bytes.saturating_sub(relocated);
        for relocation in relocations {
            let needed = self.config.buffers_reserve / 2 + 64 + (relocation.len / 1024) as u32;
            if buffers.free_count() < needed {
                break;
            }
            let mut bytes = Vec::with_capacity(relocation.len as usize);
            pool.read_extents(&relocation.extents, &mut bytes);
            if crcs.get(&relocation.key).is_some_and(|&crc| crate::util::crc::crc32c(&bytes) != crc) {
                let key = relocation.key;
                self.counted::<()>(Err(TreeError::CorruptValue { key })).ok();
                continue;
            }
            let extents = self.stage(pool, buffers, &bytes)?;
            let op = Op::Put { key: relocation.key, extents, len: relocation.len };
            let result = self.apply(pool, buffers, std::slice::from_ref(&op));
            Store::release_ops(buffers, std::slice::from_ref(&op));
            result?;
            self.compactor.note_relocated(relocation.len);
        }
        Ok(())
    }

    /// Checks the compactor's live counts against the tree (tests).
    pub fn check_compaction(&self, pool: &Pool) -> Result<(), String> {
        let mut values = Vec::new();
        for entry in self.tree.range(pool, (Bound::Unbounded, Bound::Unbounded), false) {
            let (key, value) = entry.map_err(|e| e.to_string())?;
            let extents = value_extents(pool, &value).map_err(|e| e.to_string())?;
            values.push((key, extents));
        }
        self.compactor.check_against(&values)
    }

    /// Sets or clears the expiry of `key` in both indexes.
    fn set_expiry(&mut self, key: &[u8], at: Option<u64>) {
        if let Some(old) = self.expiries.remove(key) {
            self.expiry_order.remove(&(old, key.to_vec()));
        }
        if let Some(at) = at {
            self.expiries.insert(key.to_vec(), at);
            self.expiry_order.insert((at, key.to_vec()));
        }
        debug_assert_eq!(self.expiries.len(), self.expiry_order.len());
    }

    /// Up to `max` keys whose expiry has passed, the earliest first, with
    /// their physical databases; keys of flushed databases (no longer any
    /// logical database's) are left to the reclaimer.
    pub fn expired_keys(&self, now: u64, max: usize) -> Vec<(DbId, Vec<u8>)> {
        self.expiry_order
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, id)| split_db_user_key(id))
            .filter(|(db, _)| self.dbs.contains(db))
            .take(max)
            .map(|(db, key)| (db, key.to_vec()))
            .collect()
    }

    pub fn note_expired(&mut self, count: u64) {
        self.stats.expired += count;
    }

    // ---- commits and checkpoints ----

    fn checkpoint_due(&self) -> bool {
        // An open group (a paused script) has changed the tree with records
        // that recovery drops unless the group ends: no checkpoint may
        // capture them before that. Nor, in a replicated store, records
        // not yet closed by their entry record, or (a leader) entries the
        // group has not committed.
        if self.group.is_some() || self.has_open_records() {
            return false;
        }
        self.repl.as_ref().is_none_or(|r| r.checkpoint_allowed) && self.checkpoint_due_ignoring_group()
    }

    fn checkpoint_due_ignoring_group(&self) -> bool {
        // (A replicated store's `#raft` to write counts as a change: a
        // repaired tree whose chunks were all checkpointed while loading
        // still has to say it is whole.)
        let meta_changed = self.repl.as_ref().is_some_and(|r| r.meta != r.meta_written);
        if self.records.is_empty() && !self.tree.has_changes() && !meta_changed {
            return false;
        }
        let usage = self.log.usage();
        self.replay_records() >= self.config.replay_records_max / 2
            || usage.free_bytes < usage.ring_size / 2
            || self.buffers_low
            || self.last_checkpoint.elapsed() >= self.config.checkpoint_interval
    }

    /// Notes how full the pool is (a checkpoint frees the buffers of
    /// overwritten values: it is due when a quarter or less is free).
    pub fn note_buffers(&mut self, buffers: &Buffers) {
        self.buffers_low = buffers.free_count() < buffers.count() / 4;
    }

    /// Whether a commit is wanted: records to make durable, or a
    /// checkpoint phase waiting for one.
    pub fn needs_commit(&self) -> bool {
        self.log_dirty
            || matches!(self.phase, Phase::Prepared { durable: true })
            || (self.phase == Phase::Idle && self.checkpoint_due())
    }

    /// Whether the next commit runs a checkpoint's phase (LATENCY's
    /// `checkpoint` event).
    pub fn checkpoint_step_due(&self) -> bool {
        matches!(self.phase, Phase::Prepared { durable: true }) || (self.phase == Phase::Idle && self.checkpoint_due())
    }

    /// The checkpoint's next phase, done before a commit so that the
    /// commit's fence covers it.
    fn step_before_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<Option<Step>, StoreError> {
        match self.phase {
            Phase::Prepared { durable: true } => {
                self.tree.write_meta(pool);
                self.phase = Phase::MetaWritten { durable: false };
                Ok(Some(Step::Meta))
            }
            Phase::Idle if self.checkpoint_due() => {
                self.checkpoint_started = Some(Instant::now());
                let mark =
                    if self.repl.is_some() { self.replicated_mark(pool, buffers)? } else { self.log.usage().tail_lsn };
                self.covered = self.records.partition_point(|&lsn| lsn < mark);
                if self.covered_written != Some(mark) {
                    self.tree.insert(pool, buffers, COVERED_ENTRY, &Value::Inline(mark.to_le_bytes().to_vec()))?;
                    self.covered_written = Some(mark);
                }
                if self.tree.prepare(pool, buffers)? {
                    self.phase = Phase::Prepared { durable: false };
                    Ok(Some(Step::Prepare))
                } else {
                    // The durable version already reflects every record.
                    self.release_covered(pool)?;
                    Ok(None)
                }
            }
            _ => Ok(None),
        }
    }

    /// A commit that followed `step` is durable.
    fn step_durable(&mut self, pool: &Pool, buffers: &mut Buffers, step: Step) -> Result<(), StoreError> {
        match step {
            Step::Prepare => self.phase = Phase::Prepared { durable: true },
            Step::Meta => {
                self.tree.finish(buffers)?;
                if let Some(repl) = &mut self.repl {
                    if let Some(meta) = repl.meta_checkpointing.take() {
                        repl.meta_durable = Some(meta);
                        repl.covered_tail_lsn = repl.checkpointing_tail_lsn;
                    }
                }
                self.release_covered(pool)?;
                self.phase = Phase::Idle;
                self.stats.checkpoints += 1;
                if let Some(started) = self.checkpoint_started.take() {
                    self.stats.checkpoint_ns_max =
                        self.stats.checkpoint_ns_max.max(started.elapsed().as_nanos() as u64);
                }
            }
        }
        Ok(())
    }

    fn release_covered(&mut self, pool: &Pool) -> Result<(), StoreError> {
        for lsn in self.records.drain(..self.covered) {
            self.log.release(pool, lsn)?;
        }
        if self.covered > 0 {
            self.log_dirty = true;
        }
        self.covered = 0;
        self.last_checkpoint = Instant::now();
        Ok(())
    }

    /// Makes everything so far durable with one fence (and advances the
    /// checkpoint by one phase).
    pub fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        let step = self.step_before_commit(pool, buffers)?;
        self.log_dirty = false;
        let unpublished = self.take_unpublished();
        let summary = self.log.commit(pool, buffers)?;
        self.writes_unsynced = false;
        if !summary.fenced && step.is_some() {
            pool.fence().map_err(|e| StoreError::Log(LogError::CommitFailed(e)))?;
        }
        self.stats.commits += 1;
        if let Some(step) = step {
            self.step_durable(pool, buffers, step)?;
        }
        self.publish(buffers, unpublished)?;
        Ok(())
    }

    /// Whether a change (a logged command) is not yet durable: appended
    /// since the last commit began, or in a sync still in flight. Syncs of
    /// checkpoints alone do not count: a read's reply need not wait for
    /// them.
    pub fn writes_pending(&self) -> bool {
        self.writes_unsynced || self.write_syncs_in_flight > 0
    }

    /// Starts a commit whose sync the caller runs (page domain).
    pub fn begin_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<Option<StoreTicket>, StoreError> {
        let step = self.step_before_commit(pool, buffers)?;
        self.log_dirty = false;
        let log = self.log.begin_commit(pool)?;
        if log.is_none() && step.is_none() {
            return Ok(None);
        }
        let carries_writes = std::mem::take(&mut self.writes_unsynced);
        if carries_writes {
            self.write_syncs_in_flight += 1;
        }
        let unpublished = self.take_unpublished();
        Ok(Some(StoreTicket { log, step, carries_writes, unpublished }))
    }

    /// The sync of `ticket` succeeded.
    pub fn finish_commit(&mut self, pool: &Pool, buffers: &mut Buffers, ticket: StoreTicket) -> Result<(), StoreError> {
        if let Some(log) = ticket.log {
            self.log.finish_commit(log, buffers);
        }
        if ticket.carries_writes {
            self.write_syncs_in_flight -= 1;
        }
        self.stats.commits += 1;
        if let Some(step) = ticket.step {
            self.step_durable(pool, buffers, step)?;
        }
        self.publish(buffers, ticket.unpublished)?;
        Ok(())
    }

    /// The sync in flight failed: nothing more is accepted.
    pub fn fail_commit(&mut self) {
        self.log.fail_commit();
    }

    /// Runs checkpoints until the tree's durable version reflects every
    /// record and they are all released (a clean shutdown; tests).
    pub fn checkpoint_all(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        let interval = self.config.checkpoint_interval;
        self.config.checkpoint_interval = Duration::ZERO;
        let result = (|| {
            for _ in 0..4 {
                self.commit(pool, buffers)?;
            }
            self.commit(pool, buffers)
        })();
        self.config.checkpoint_interval = interval;
        result
    }

    /// Runs the tree's reclamation walk to its end.
    pub fn finish_reclaim(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        Ok(self.tree.finish_reclaim(pool, buffers)?)
    }

    /// The live records' lsns, oldest first.
    pub fn live_records(&self) -> impl Iterator<Item = u64> + '_ {
        self.records.iter().copied()
    }

    /// Whether the reclamation walk of the tree is still running.
    pub fn is_reclaiming(&self) -> bool {
        self.tree.is_reclaiming()
    }

    /// A bounded step of the tree's reclamation walk.
    pub fn reclaim_step(&mut self, pool: &Pool, buffers: &mut Buffers, budget: usize) -> Result<bool, StoreError> {
        Ok(self.tree.reclaim_step(pool, buffers, budget)?)
    }
}
