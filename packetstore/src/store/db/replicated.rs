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
use crate::index::tree::Version;
use crate::log::RecordView;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::store::db::{Op, Store, StoreError, KIND_DEL, KIND_PUT, TAG_END};

/// Closes an entry: its key is the replica's (term, index, type, data).
pub const KIND_ENTRY: u16 = 0x25;
/// The replica's hard state (term, vote, commit) and membership.
pub const KIND_STATE: u16 = 0x26;
/// Records kept for followers, at most, per record of the replay budget.
pub(super) const RETAINED_PER_BUDGET: usize = 2;

/// The tree entry holding the replica's metadata as of the checkpoint.
pub const RAFT_ENTRY: &[u8] = b"#raft";

/// What a replicated store tracks.
#[derive(Debug, Default)]
pub struct Replication {
    /// Records appended since the last entry record, oldest first.
    pub(super) open: Vec<u64>,
    /// The value bytes those records name.
    pub(super) open_bytes: u64,
    /// The first record of the first entry the tree does not reflect
    /// (None: every record does).
    pub(super) unapplied_from: Option<u64>,
    /// The first record of the first entry the tree does not reflect, not
    /// lowered for followers (None: the tree reflects every record): the
    /// records before it are covered by the next checkpoint.
    pub(super) applied_end: Option<u64>,
    /// `#raft` as the next checkpoint writes it, and as the tree holds it.
    pub(super) meta: Vec<u8>,
    pub(super) meta_written: Vec<u8>,
    /// `#raft` and the mark as the last durable checkpoint wrote them.
    pub(super) meta_durable: Option<(Vec<u8>, u64)>,
    /// `#raft` and the mark of the checkpoint under way.
    pub(super) meta_checkpointing: Option<(Vec<u8>, u64)>,
    pub(super) checkpoint_allowed: bool,
    /// The log's tail when the checkpoint under way took its mark, and
    /// when the last durable one did: live records before it are kept for
    /// followers (the durable tree reflects them), not replayed by a
    /// restart, so they count against retention, not the replay budget.
    pub(super) checkpointing_tail_lsn: u64,
    pub(super) covered_tail_lsn: u64,
    /// Whether commands may write (the group's leader, ready to).
    pub(super) writable: bool,
    /// The committed tree version each snapshot stream reads, by follower.
    pub(super) snapshot_pins: std::collections::BTreeMap<u64, Version>,
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
    /// closed now (no group of several commands is open), and the value
    /// bytes they name.
    pub fn take_open_records(&mut self) -> Option<(Vec<u64>, u64)> {
        if self.group.is_some() || self.repl.as_ref().is_none_or(|r| r.open.is_empty()) {
            return None;
        }
        let repl = self.repl();
        Some((std::mem::take(&mut repl.open), std::mem::take(&mut repl.open_bytes)))
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
        (extents, data_crc): (&[Extent], u32),
    ) -> Result<u64, StoreError> {
        if kind != KIND_PUT && kind != KIND_DEL {
            return Err(StoreError::Corrupt(format!("a replicated record of kind {kind:#x}")));
        }
        let lsn = self.log.append_with_crc(pool, buffers, (kind, 0), key, extents, Some(data_crc))?;
        self.records.push_back(lsn);
        self.log_dirty = true;
        self.writes_unsynced = true;
        self.stats.records += 1;
        Ok(lsn)
    }

    /// Reads a live record back.
    pub fn logged(&self, pool: &Pool, lsn: u64) -> Result<RecordView, StoreError> {
        Ok(self.log.view(pool, lsn)?)
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
            self.apply_tree(pool, buffers, &op, view.data_crc)?;
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

    /// Where the tree's applied prefix ends, followers aside (the first
    /// record of the first entry it lacks; None: it lacks none).
    pub fn set_applied_end(&mut self, lsn: Option<u64>) {
        self.repl().applied_end = lsn;
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

    /// `#raft` and the mark of the last checkpoint that became durable
    /// (records below the mark are released).
    pub fn durable_raft_meta(&self) -> Option<(&[u8], u64)> {
        self.repl.as_ref()?.meta_durable.as_ref().map(|(meta, mark)| (meta.as_slice(), *mark))
    }

    /// `#raft` as the durable tree holds it (None: never written).
    pub fn raft_meta(&self, pool: &Pool) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(value) = self.tree.get(pool, RAFT_ENTRY)? else { return Ok(None) };
        crate::index::tree::verify_value(pool, RAFT_ENTRY, &value)?;
        Ok(Some(super::value_bytes(pool, &value)?.into_owned()))
    }

    /// Checkpoint phase 1 in a replicated store: the mark is where the
    /// applied prefix ends, and `#raft` is written when it changed.
    pub(super) fn replicated_mark(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<u64, StoreError> {
        let tail = self.log.usage().tail_lsn;
        let repl = self.repl.as_mut().expect("a replicated store");
        let mark = repl.unapplied_from.unwrap_or(tail);
        repl.meta_checkpointing = Some((repl.meta.clone(), mark));
        // Not the mark: the mark is where the records kept begin (those
        // of entries the tree lacks, and those followers still need); the
        // tree reflects every record before the first entry it lacks (a
        // follower's received, uncommitted entries are replayed by a
        // restart once committed: they count against the replay budget).
        repl.checkpointing_tail_lsn = repl.applied_end.unwrap_or(tail);
        if repl.meta != repl.meta_written {
            let meta = repl.meta.clone();
            repl.meta_written = meta.clone();
            if meta.len() <= super::INLINE_VALUE_MAX {
                self.tree.insert(pool, buffers, RAFT_ENTRY, &Value::Inline(meta))?;
            } else {
                // Larger than a leaf takes inline (a group with many
                // members): staged into the pool, flushed here since no
                // log record flushes it, durable with the checkpoint.
                let extents = self.stage(pool, buffers, &meta)?;
                for extent in &extents {
                    pool.flush(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), u64::from(extent.len));
                }
                let result = self.tree.insert(pool, buffers, RAFT_ENTRY, &Value::Extents(extents.clone(), None));
                buffers.release_extents(&extents)?;
                result?;
            }
        }
        Ok(mark)
    }
}

/// A tree entry: its key and value.
pub type TreeEntry = (Vec<u8>, Value);

/// Entries of the tree that are this node's own, never sent in a snapshot
/// nor removed by one: the checkpoint's mark and the replica's metadata.
fn is_local_entry(key: &[u8]) -> bool {
    key == super::COVERED_ENTRY || key == RAFT_ENTRY
}

impl Store {
    /// Pins the tree's last committed version for a snapshot stream to
    /// `peer` (replacing a pin it had): it holds only committed entries (a
    /// leader checkpoints only when all it reflects is committed), and
    /// stays whole, whatever commits follow, until the pin is dropped.
    pub fn pin_snapshot(&mut self, buffers: &mut Buffers, peer: u64) -> Result<(), StoreError> {
        self.unpin_snapshot(buffers, peer)?;
        let version = self.tree.pin_committed();
        self.repl().snapshot_pins.insert(peer, version);
        Ok(())
    }

    fn unpin_snapshot(&mut self, buffers: &mut Buffers, peer: u64) -> Result<(), StoreError> {
        if self.repl().snapshot_pins.remove(&peer).is_some() {
            self.tree.unpin(buffers)?;
        }
        Ok(())
    }

    /// Drops the pins of snapshot streams that ended (`streaming` says
    /// which followers still have one): what commits held back for them
    /// is released.
    pub fn retain_snapshot_pins(
        &mut self,
        buffers: &mut Buffers,
        streaming: impl Fn(u64) -> bool,
    ) -> Result<(), StoreError> {
        let Some(repl) = &self.repl else { return Ok(()) };
        let ended: Vec<u64> = repl.snapshot_pins.keys().copied().filter(|&peer| !streaming(peer)).collect();
        for peer in ended {
            self.unpin_snapshot(buffers, peer)?;
        }
        Ok(())
    }

    /// A snapshot's next chunk (the leader's side): up to `max_bytes` of
    /// the entries after `after` (None: from the first) in the version
    /// pinned for `peer`, the store's local entries left out. Returns them
    /// and whether the version ended.
    pub fn snapshot_chunk(
        &self,
        pool: &Pool,
        peer: u64,
        after: Option<&[u8]>,
        max_bytes: usize,
    ) -> Result<(Vec<TreeEntry>, bool), StoreError> {
        let version = self.repl.as_ref().and_then(|r| r.snapshot_pins.get(&peer));
        let version =
            version.ok_or_else(|| StoreError::Corrupt(format!("no version pinned for a snapshot to {peer}")))?;
        let start = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        let mut out = Vec::new();
        let mut bytes = 0;
        for entry in self.tree.range_in(version, pool, (start, std::ops::Bound::Unbounded)) {
            let (key, value) = entry?;
            if is_local_entry(&key) {
                continue;
            }
            bytes += key.len() + super::value_len(&value) as usize + 32;
            out.push((key, value));
            if bytes >= max_bytes {
                return Ok((out, false));
            }
        }
        Ok((out, true))
    }

    /// A snapshot's chunk (a follower's side): the tree's keys in
    /// `(lower, upper]` (None: unbounded) become exactly `pairs` (sorted by
    /// key), local entries aside. Values named by extents carry the
    /// caller's references (kept by the caller) and are flushed here: no
    /// log record flushes them, the loaded tree's checkpoint covers them.
    pub fn snapshot_merge(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        pairs: &[(Vec<u8>, Value)],
    ) -> Result<(), StoreError> {
        use std::ops::Bound;
        let start = lower.map_or(Bound::Unbounded, Bound::Excluded);
        let end = upper.map_or(Bound::Unbounded, Bound::Included);
        let mut stale = Vec::new();
        {
            let mut wanted = pairs.iter().map(|(k, _)| k.as_slice()).peekable();
            for entry in self.tree.range(pool, (start, end), false) {
                let (key, _) = entry?;
                while wanted.peek().is_some_and(|w| *w < key.as_slice()) {
                    wanted.next();
                }
                if wanted.peek() != Some(&key.as_slice()) && !is_local_entry(&key) {
                    stale.push(key);
                }
            }
        }
        // (A pool too full for a node of the tree fails the chunk part
        // way, with the tree whole: `mutating` ends either way.)
        self.mutating = true;
        let merged = self.merge_pairs(pool, buffers, &stale, pairs);
        self.mutating = false;
        merged
    }

    fn merge_pairs(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        stale: &[Vec<u8>],
        pairs: &[(Vec<u8>, Value)],
    ) -> Result<(), StoreError> {
        for key in stale {
            if self.tree_delete(pool, buffers, key)?.is_some() {
                self.note_delete(key);
            }
        }
        for (key, value) in pairs {
            if self.holds_value(pool, key, value)? {
                // Already this node's (a follower merely behind, or a
                // stream begun again): the tree keeps its value and the
                // landed bytes go back with the chunk, so a snapshot costs
                // the pool only what changed, not a second copy of it all.
                self.stats.snapshot_values_kept += 1;
                continue;
            }
            if let Value::Extents(extents, _) = value {
                for extent in extents {
                    pool.flush(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), u64::from(extent.len));
                }
            }
            let previous = self.tree_insert(pool, buffers, key, value)?;
            self.note_put(key, value, previous.is_none());
        }
        Ok(())
    }

    /// Whether the tree holds exactly `value` under `key` (the same bytes;
    /// CRCs and lengths rule most values out without reading them).
    fn holds_value(&self, pool: &Pool, key: &[u8], value: &Value) -> Result<bool, StoreError> {
        let Some(held) = self.tree.get(pool, key)? else { return Ok(false) };
        if super::value_len(&held) != super::value_len(value) {
            return Ok(false);
        }
        if let (Some(a), Some(b)) = (held.crc(), value.crc()) {
            if a != b {
                return Ok(false);
            }
        }
        Ok(super::value_bytes(pool, &held)? == super::value_bytes(pool, value)?)
    }

    /// A snapshot is in the tree: the indexes the store keeps in memory are
    /// rebuilt from it; the log's records are left to the next checkpoint.
    pub fn snapshot_loaded(&mut self, pool: &Pool) -> Result<(), StoreError> {
        self.load_state(pool)?;
        self.load_expiries(pool)?;
        // The log's records (the old entries and state records) stay until
        // the checkpoint that makes the loaded tree durable covers them
        // (its mark is the tail): a crash before its meta switch finds the
        // old tree with its log and hard state whole.
        if let Some(repl) = &mut self.repl {
            repl.open.clear();
            repl.open_bytes = 0;
            repl.unapplied_from = None;
            repl.applied_end = None;
        }
        Ok(())
    }

    /// How full the log is, in parts of a thousand.
    pub fn log_fill_permille(&self) -> u64 {
        let usage = self.log.usage();
        1000 - usage.free_bytes * 1000 / usage.ring_size
    }

    /// Whether records may stay in the log beyond the checkpoint for
    /// followers that are behind: the log is under a quarter full and the
    /// records kept so far are under twice the replay budget (they cost
    /// log space and the buffers of their values, not replay: a restart
    /// drops them), and the pool is not short (their values' buffers stay
    /// referenced). A follower merely behind under load catches up from
    /// the log; only one far behind needs a snapshot.
    pub fn has_room_to_retain(&self) -> bool {
        let usage = self.log.usage();
        let retained = self.records.len() - self.replay_records();
        usage.free_bytes * 4 > usage.ring_size * 3
            && retained < self.config.replay_records_max * RETAINED_PER_BUDGET
            && !self.buffers_low
    }

    /// Buffers the tree holds back for pinned versions (snapshot streams).
    pub fn pinned_buffers(&self) -> usize {
        self.tree.pinned_buffers()
    }
}
