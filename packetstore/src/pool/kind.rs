//! What a pool is for: its kind (a key-value store, a WAL, ...), recorded
//! in the header since format version 3, and what the contents of a pool
//! that records none say it is (`Evidence`; the rule that infers it reads
//! the log and the tree, so it lives above them, in `store/claim.rs`).
//!
//! Invariant: a program opens a pool only as its own kind
//! (`Pool::open_claimed`), and the check reads the pool but writes nothing,
//! so a refused pool is left byte for byte as it was. The kind is written
//! once, with the rest of the header, when the pool is created; an old
//! pool's header is never rewritten to claim it (`docs/format.md`, "Pool
//! kinds").

/// What a pool is for, as stored at header offset 84 (a `u32`).
///
/// Values above `POOL_KIND_VALUE_MAX` are kinds of later builds (a write
/// cache, a switch's packet log, ...): this build refuses them by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Not recorded: a pool of format version 1 or 2, or one made by the
    /// library without a kind (tests, tools). See `infer`.
    Unset = 0,
    /// `packetstore serve`'s store: log 0 and the B+ tree.
    KeyValue = 1,
    /// `packetstore wal`'s log: one log per event loop.
    Wal = 2,
    /// A bare log whose records a program defines: `packetstore demo`,
    /// `bench log`, the crash writer.
    Log = 3,
    /// A bare B+ tree: `packetstore bench tree`.
    Tree = 4,
    /// The write cache for unmodified programs (`apps/cache`,
    /// `packetstore-preload`): one log per lane of writers.
    WriteCache = 5,
    /// A switch's packet log (`apps/switch`): one log of received frames
    /// in the pool's buffers, which are the switch's packet memory.
    Switch = 6,
}

/// The largest kind value this build knows.
pub const POOL_KIND_VALUE_MAX: u32 = 6;

/// Every kind, in value order (for tests and messages).
pub const POOL_KINDS: [PoolKind; 7] = [
    PoolKind::Unset,
    PoolKind::KeyValue,
    PoolKind::Wal,
    PoolKind::Log,
    PoolKind::Tree,
    PoolKind::WriteCache,
    PoolKind::Switch,
];
const _: () = assert!(POOL_KINDS.len() as u32 == POOL_KIND_VALUE_MAX + 1);

/// Record kinds of the key-value store's log (`store/db.rs`, `KIND_PUT` to
/// `KIND_END`, a replicated store's `KIND_ENTRY` and `KIND_STATE`, and a cross-shard transaction's `KIND_TXN`), and the WAL's (`apps/wal.rs`, `KIND_WAL`); each of those
/// files asserts that its kinds are these.
pub const STORE_RECORD_KINDS: std::ops::RangeInclusive<u16> = 0x20..=0x27;
pub const WAL_RECORD_KIND: u16 = 1;
/// Record kinds of the write cache (`apps/cache/record.rs`).
pub const CACHE_RECORD_KINDS: std::ops::RangeInclusive<u16> = 0x30..=0x33;
/// Record kinds of the switch's packet log (`apps/switch/record.rs`).
pub const SWITCH_RECORD_KINDS: std::ops::RangeInclusive<u16> = 0x40..=0x40;

impl PoolKind {
    /// The kind stored as `value`; None for a value this build does not know.
    pub fn from_u32(value: u32) -> Option<PoolKind> {
        POOL_KINDS.get(usize::try_from(value).ok()?).copied()
    }

    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// Its name in messages: "a {name} pool".
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Unset => "unclaimed",
            PoolKind::KeyValue => "key-value",
            PoolKind::Wal => "WAL",
            PoolKind::Log => "log",
            PoolKind::Tree => "tree",
            PoolKind::WriteCache => "write-cache",
            PoolKind::Switch => "switch packet-log",
        }
    }

    /// Its name in JSON (`inspect --json`'s `kind`).
    pub fn label(self) -> &'static str {
        match self {
            PoolKind::Unset => "unclaimed",
            PoolKind::KeyValue => "key-value",
            PoolKind::Wal => "wal",
            PoolKind::Log => "log",
            PoolKind::Tree => "tree",
            PoolKind::WriteCache => "write-cache",
            PoolKind::Switch => "switch",
        }
    }

    /// The commands that make and use pools of this kind.
    pub fn made_by(self) -> &'static str {
        match self {
            PoolKind::Unset => "no program yet",
            PoolKind::KeyValue => "`packetstore serve`",
            PoolKind::Wal => "`packetstore wal`",
            PoolKind::Log => "`packetstore demo` or a benchmark",
            PoolKind::Tree => "`packetstore bench tree`",
            PoolKind::WriteCache => "`packetstore-preload` (LD_PRELOAD) or `packetstore cache`",
            PoolKind::Switch => "`packetstore switch`",
        }
    }

    /// Whether a live log record of `record_kind` with a key of `key_len`
    /// bytes belongs in a pool of this kind (`inspect --verify`).
    pub fn holds_record(self, record_kind: u16, key_len: u16) -> bool {
        match self {
            PoolKind::KeyValue => STORE_RECORD_KINDS.contains(&record_kind),
            PoolKind::Wal => record_kind == WAL_RECORD_KIND && key_len == 0,
            PoolKind::Tree => false,
            PoolKind::WriteCache => CACHE_RECORD_KINDS.contains(&record_kind),
            PoolKind::Switch => SWITCH_RECORD_KINDS.contains(&record_kind),
            PoolKind::Unset | PoolKind::Log => true,
        }
    }

    /// Whether a pool of this kind may hold a committed B+ tree.
    pub fn holds_tree(self) -> bool {
        matches!(self, PoolKind::KeyValue | PoolKind::Tree | PoolKind::Unset)
    }

    /// The kind a live record at a log's head says the pool is.
    pub fn of_record(record_kind: u16, key_len: u16) -> PoolKind {
        if STORE_RECORD_KINDS.contains(&record_kind) {
            PoolKind::KeyValue
        } else if record_kind == WAL_RECORD_KIND && key_len == 0 {
            PoolKind::Wal
        } else if CACHE_RECORD_KINDS.contains(&record_kind) {
            PoolKind::WriteCache
        } else if SWITCH_RECORD_KINDS.contains(&record_kind) {
            PoolKind::Switch
        } else {
            PoolKind::Log
        }
    }
}

impl std::fmt::Display for PoolKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the contents of a pool without a recorded kind say it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// No committed tree and every log empty: nothing durable that any
    /// program could misread, so the first program to open it may use it.
    Empty,
    /// The contents say what made the pool; `why` names what was found.
    Kind { kind: PoolKind, why: String },
    /// Damaged, or contents of two kinds: no program may assume either.
    Undecided(String),
}
