//! The store in a replicated group (`replica/` drives it): its log is the
//! Raft log. Every tree change belongs to an **entry**: a run of put and
//! delete records closed by an entry record (`KIND_ENTRY`, tagged
//! `TAG_END`) that names the entry's term and index. The replica's hard
//! state rides in state records (`KIND_STATE`), and the checkpoint keeps
//! the replica's metadata in the tree (`#raft`).
//!
//! Owns: the records appended since the last entry record (`open`), where
//! the tree's applied prefix ends in the log (`unapplied_from`), and
//! whether a checkpoint may begin (`checkpoint_allowed`).
//!
//! Invariants: the store replays nothing at open (the replica decides
//! which entries are committed); a checkpoint's `#lsn` is the first record
//! of the first entry the tree does not reflect, so recovery never skips
//! an unapplied entry; a leader checkpoints only when every entry its tree
//! reflects is committed (`checkpoint_allowed`), so a durable tree never
//! holds a write the group could still drop.

use crate::index::node::Value;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::store::db::{Op, Store, StoreError, KIND_DEL, KIND_PUT, TAG_END};

/// Closes an entry: its key is the replica's (term, index, type, data).
pub const KIND_ENTRY: u16 = 0x25;
/// The replica's hard state (term, vote, commit) and membership.
pub const KIND_STATE: u16 = 0x26;
/// The tree entry holding the replica's metadata as of the checkpoint.
pub const RAFT_ENTRY: &[u8] = b"#raft";

/// What a replicated store tracks.
#[derive(Debug, Default)]
pub struct Replication {
    /// Records appended since the last entry record, oldest first.
    pub(super) open: Vec<u64>,
    /// The first record of the first entry the tree does not reflect
    /// (None: every record does).
    pub(super) unapplied_from: Option<u64>,
    /// `#raft` as the next checkpoint writes it, and as the tree holds it.
    pub(super) meta: Vec<u8>,
    pub(super) meta_written: Vec<u8>,
    /// `#raft` as the last durable checkpoint wrote it.
    pub(super) meta_durable: Option<Vec<u8>>,
    /// `#raft` of the checkpoint under way.
    pub(super) meta_checkpointing: Option<Vec<u8>>,
    pub(super) checkpoint_allowed: bool,
    /// Whether commands may write (the group's leader, ready to).
    pub(super) writable: bool,
}

/// A record of the log, as the replica reads it back.
#[derive(Clone, Debug)]
pub struct LoggedRecord {
    pub lsn: u64,
    pub kind: u16,
    pub key: Vec<u8>,
    pub extents: Vec<Extent>,
    pub data_len: u64,
    pub data_crc: u32,
}

impl Store {
    /// Whether the store runs in a replicated group.
    pub fn is_replicated(&self) -> bool {
        self.repl.is_some()
    }

    fn repl(&mut self) -> &mut Replication {
        self.repl.as_mut().expect("a replicated store")
    }

    /// The records appended since the last entry record, if they may be
    /// closed now (no group of several commands is open).
    pub fn take_open_records(&mut self) -> Option<Vec<u64>> {
        if self.group.is_some() || self.repl.as_ref().is_none_or(|r| r.open.is_empty()) {
            return None;
        }
        Some(std::mem::take(&mut self.repl().open))
    }

    /// Whether records wait for their entry record.
    pub fn has_open_records(&self) -> bool {
        self.repl.as_ref().is_some_and(|r| !r.open.is_empty())
    }

    /// Appends a record of the replica's own (`KIND_ENTRY` or `KIND_STATE`),
    /// no extents, tagged `TAG_END`. Durable at the next commit.
    pub fn append_replica_record(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        kind: u16,
        key: &[u8],
    ) -> Result<u64, StoreError> {
        assert!(kind == KIND_ENTRY || kind == KIND_STATE, "a replica record kind");
        let lsn = self.log.append(pool, buffers, kind, TAG_END, key, &[])?;
        self.records.push_back(lsn);
        self.log_dirty = true;
        self.writes_unsynced = true;
        self.stats.records += 1;
        Ok(lsn)
    }

    /// A follower's record of an entry it received: logged (its bytes are
    /// where they landed, the caller holds a reference on each extent), not
    /// applied. Durable at the next commit.
    pub fn append_received(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        kind: u16,
        key: &[u8],
        extents: &[Extent],
    ) -> Result<u64, StoreError> {
        if kind != KIND_PUT && kind != KIND_DEL {
            return Err(StoreError::Corrupt(format!("a replicated record of kind {kind:#x}")));
        }
        let lsn = self.log.append(pool, buffers, kind, 0, key, extents)?;
        self.records.push_back(lsn);
        self.log_dirty = true;
        self.writes_unsynced = true;
        self.stats.records += 1;
        Ok(lsn)
    }

    /// Reads a live record back.
    pub fn logged(&self, pool: &Pool, lsn: u64) -> Result<LoggedRecord, StoreError> {
        let view = self.log.view(pool, lsn)?;
        Ok(LoggedRecord {
            lsn,
            kind: view.kind,
            key: view.key,
            extents: view.extents,
            data_len: view.data_len,
            data_crc: view.data_crc,
        })
    }

    /// Applies logged put and delete records to the tree (an entry that
    /// became committed on a follower, or one replayed at open).
    pub fn apply_logged(&mut self, pool: &Pool, buffers: &mut Buffers, lsns: &[u64]) -> Result<(), StoreError> {
        self.mutating = true;
        for &lsn in lsns {
            let view = self.log.view(pool, lsn)?;
            let op = match view.kind {
                KIND_PUT => Op::Put { key: view.key, extents: view.extents, len: view.data_len },
                KIND_DEL => Op::Del { key: view.key },
                other => return Err(StoreError::Corrupt(format!("log record {lsn} of an entry has kind {other:#x}"))),
            };
            self.apply_tree(pool, buffers, &op)?;
        }
        self.stats.commands += 1;
        self.mutating = false;
        Ok(())
    }

    /// Releases records (an entry the group dropped, never applied; or
    /// records below a checkpoint at open). Durable at the next commit.
    pub fn release_logged(&mut self, pool: &Pool, lsns: &[u64]) -> Result<(), StoreError> {
        for &lsn in lsns {
            self.log.release(pool, lsn)?;
        }
        let dropped: std::collections::HashSet<u64> = lsns.iter().copied().collect();
        self.records.retain(|lsn| !dropped.contains(lsn));
        self.log_dirty = true;
        Ok(())
    }

    /// Where the tree's applied prefix ends: the first record of the first
    /// entry it does not reflect (None: all of them).
    pub fn set_unapplied_from(&mut self, lsn: Option<u64>) {
        self.repl().unapplied_from = lsn;
    }

    /// The replica's metadata for the next checkpoint's `#raft`.
    pub fn set_raft_meta(&mut self, meta: Vec<u8>) {
        self.repl().meta = meta;
    }

    /// Whether commands may write: only the group's leader does.
    pub fn set_writable(&mut self, writable: bool) {
        self.repl().writable = writable;
    }

    /// Whether a checkpoint may begin (a leader: every entry its tree
    /// reflects is committed).
    pub fn set_checkpoint_allowed(&mut self, allowed: bool) {
        self.repl().checkpoint_allowed = allowed;
    }

    /// A checkpoint is due but waits for the group to commit what the
    /// leader's tree reflects: new writes should wait too.
    pub fn checkpoint_waiting(&self) -> bool {
        self.repl.as_ref().is_some_and(|r| !r.checkpoint_allowed) && self.checkpoint_due_ignoring_group()
    }

    /// `#raft` as the last checkpoint that became durable wrote it.
    pub fn durable_raft_meta(&self) -> Option<&[u8]> {
        self.repl.as_ref()?.meta_durable.as_deref()
    }

    /// `#raft` as the durable tree holds it (None: never written).
    pub fn raft_meta(&self, pool: &Pool) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.tree.get(pool, RAFT_ENTRY)?.map(|value| match value {
            Value::Inline(bytes) => bytes,
            other => {
                let mut bytes = Vec::new();
                if let Value::Extents(extents) = &other {
                    pool.read_extents(extents, &mut bytes);
                }
                bytes
            }
        }))
    }

    /// Checkpoint phase 1 in a replicated store: the mark is where the
    /// applied prefix ends, and `#raft` is written when it changed.
    pub(super) fn replicated_mark(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<u64, StoreError> {
        let tail = self.log.usage().tail_lsn;
        let repl = self.repl.as_mut().expect("a replicated store");
        let mark = repl.unapplied_from.unwrap_or(tail);
        repl.meta_checkpointing = Some(repl.meta.clone());
        if repl.meta != repl.meta_written {
            let meta = repl.meta.clone();
            repl.meta_written = meta.clone();
            self.tree.insert(pool, buffers, RAFT_ENTRY, &Value::Inline(meta))?;
        }
        Ok(mark)
    }
}
