//! Which program a pool belongs to, for a pool whose header records no
//! kind (format versions 1 and 2, or one the library made without one):
//! the rule that infers it from the contents, and opening a pool as a kind
//! (`PoolKindExt::open_as`), which refuses a pool of another.
//!
//! It lives above the log and the tree because it reads both: the pool
//! layer knows its kinds (`pool/kind.rs`) and how to refuse one, and takes
//! the inference from here.
//!
//! Invariant: the check reads the pool but writes nothing, so a refused
//! pool is left byte for byte as it was. The inference reads a bounded
//! amount whatever the pool's size: the two tree meta slots, and per log
//! its anchor and the record at its head.

use std::path::Path;

use crate::error::PoolError;
use crate::log::ring::LogHead;
use crate::pool::file::Pool;
use crate::pool::kind::{Evidence, PoolKind};
use crate::pool::layout::Geometry;
use crate::pool::persist::PersistOptions;

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
    if crate::index::tree::has_committed_version(pool) {
        found.push((PoolKind::KeyValue, "a committed B+ tree".into()));
    }
    if geometry.log_count > 1 {
        found.push((PoolKind::Wal, format!("{} logs", geometry.log_count)));
    }
    for index in 0..geometry.log_count {
        match crate::log::ring::head_of(pool, index) {
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

/// Opening a pool as a program's own kind, with the inference above for a
/// pool that records none: `Pool::open_as(path, kind, options)` with this
/// trait in scope.
pub trait PoolKindExt: Sized {
    /// Opens an existing pool for a program that uses pools of `kind`; a
    /// pool of another kind is refused before anything is written.
    fn open_as(path: &Path, kind: PoolKind, options: &PersistOptions) -> Result<Self, PoolError>;

    /// Opens `path` as `kind`, creating it with `geometry` if it does not
    /// exist (a new pool records `kind`).
    fn open_or_create_as(
        path: &Path,
        kind: PoolKind,
        geometry: Geometry,
        options: &PersistOptions,
    ) -> Result<Self, PoolError>;

    /// What the pool is for: as recorded in its header, or as its contents
    /// say (`infer`).
    fn kind_evidence(&self) -> Evidence;
}

impl PoolKindExt for Pool {
    fn open_as(path: &Path, kind: PoolKind, options: &PersistOptions) -> Result<Pool, PoolError> {
        Pool::open_claimed(path, kind, options, infer)
    }

    fn open_or_create_as(
        path: &Path,
        kind: PoolKind,
        geometry: Geometry,
        options: &PersistOptions,
    ) -> Result<Pool, PoolError> {
        Pool::open_or_create_claimed(path, kind, geometry, options, infer)
    }

    fn kind_evidence(&self) -> Evidence {
        self.kind_evidence_with(infer)
    }
}
