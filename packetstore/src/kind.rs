//! What a pool is for: its kind (a key-value store, a WAL, ...), recorded
//! in the header since format version 3, and the rule that infers the kind
//! of a pool that records none (versions 1 and 2, or a pool the library
//! made without one).
//!
//! Invariant: a program opens a pool only as its own kind
//! (`Pool::open_as`), and the check reads the pool but writes nothing, so a
//! refused pool is left byte for byte as it was. The kind is written once,
//! with the rest of the header, when the pool is created; an old pool's
//! header is never rewritten to claim it (`docs/format.md`, "Pool kinds").
//!
//! The inference reads a bounded amount whatever the pool's size: the two
//! tree meta slots, and per log its anchor and the record at its head.

use crate::log::LogHead;
use crate::pool::Pool;

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
}

/// The largest kind value this build knows.
pub const POOL_KIND_VALUE_MAX: u32 = 4;

/// Every kind, in value order (for tests and messages).
pub const POOL_KINDS: [PoolKind; 5] =
    [PoolKind::Unset, PoolKind::KeyValue, PoolKind::Wal, PoolKind::Log, PoolKind::Tree];
const _: () = assert!(POOL_KINDS.len() as u32 == POOL_KIND_VALUE_MAX + 1);

/// Record kinds of the key-value store's log (`store.rs`, `KIND_PUT` to
/// `KIND_FLUSH`), and the WAL's (`wal.rs`, `KIND_WAL`).
const STORE_RECORD_KINDS: std::ops::RangeInclusive<u16> = 0x20..=0x23;
const WAL_RECORD_KIND: u16 = 1;
const _: () = assert!(WAL_RECORD_KIND == crate::wal::KIND_WAL);
const _: () = assert!(crate::store::KIND_PUT == 0x20 && crate::store::KIND_FLUSH == 0x23);

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
        }
    }

    /// Whether a live log record of `record_kind` with a key of `key_len`
    /// bytes belongs in a pool of this kind (`inspect --verify`).
    pub fn holds_record(self, record_kind: u16, key_len: u16) -> bool {
        match self {
            PoolKind::KeyValue => STORE_RECORD_KINDS.contains(&record_kind),
            PoolKind::Wal => record_kind == WAL_RECORD_KIND && key_len == 0,
            PoolKind::Tree => false,
            PoolKind::Unset | PoolKind::Log => true,
        }
    }

    /// Whether a pool of this kind may hold a committed B+ tree.
    pub fn holds_tree(self) -> bool {
        matches!(self, PoolKind::KeyValue | PoolKind::Tree | PoolKind::Unset)
    }

    /// The kind a live record at a log's head says the pool is.
    fn of_record(record_kind: u16, key_len: u16) -> PoolKind {
        if STORE_RECORD_KINDS.contains(&record_kind) {
            PoolKind::KeyValue
        } else if record_kind == WAL_RECORD_KIND && key_len == 0 {
            PoolKind::Wal
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

/// Infers the kind of `pool` from its contents, reading (never writing) the
/// tree's meta slots and, per log, the anchor and the record at the head.
///
/// | found | kind |
/// |---|---|
/// | a valid tree meta slot | key-value |
/// | a record of kind 0x20..=0x23 at a log's head | key-value |
/// | a record of kind 1 with an empty key at a log's head | WAL |
/// | any other record at a log's head | log |
/// | more than one log | WAL (only `packetstore wal` makes them) |
/// | none of these | empty: claimable |
/// | two of these that disagree, or a log damaged at its head | undecided |
pub fn infer(pool: &Pool) -> Evidence {
    let geometry = pool.geometry();
    let mut found: Vec<(PoolKind, String)> = Vec::new();
    if crate::tree::has_committed_version(pool) {
        found.push((PoolKind::KeyValue, "a committed B+ tree".into()));
    }
    if geometry.log_count > 1 {
        found.push((PoolKind::Wal, format!("{} logs", geometry.log_count)));
    }
    for index in 0..geometry.log_count {
        match crate::log::head_of(pool, index) {
            LogHead::Empty => {}
            LogHead::Record { lsn, kind, key_len } => found.push((
                PoolKind::of_record(kind, key_len),
                format!("log {index} starts with a record of kind {kind:#x} at lsn {lsn}"),
            )),
            LogHead::Damaged(reason) => return Evidence::Undecided(format!("log {index}: {reason}")),
        }
    }
    debug_assert!(found.iter().all(|(kind, _)| *kind != PoolKind::Unset));
    let Some((kind, _)) = found.first().cloned() else { return Evidence::Empty };
    let why = found.iter().map(|(_, why)| why.as_str()).collect::<Vec<_>>().join(", ");
    if found.iter().any(|(other, _)| *other != kind) {
        let kinds = found.iter().map(|(kind, why)| format!("{why} ({kind})")).collect::<Vec<_>>().join("; ");
        return Evidence::Undecided(format!("contents of different kinds: {kinds}"));
    }
    Evidence::Kind { kind, why }
}
