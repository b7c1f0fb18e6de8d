//! The Raft log as raft-rs sees it (its `Storage`), kept over the store's
//! log: for each entry still in the log, its term, its type, and the lsns
//! of its records (its puts and deletes, then its entry record). The
//! values stay in the pool; raft-rs only ever holds a one-byte marker as a
//! normal entry's data (`RECORDS`), and the transport reads the records
//! when it sends the entry.
//!
//! Also the encodings of what the replica persists: the entry record's key
//! (`EntryKey`), the state record's key and `#raft` (`Meta`).
//!
//! Invariants: `entries[i]` has index `snapshot_index + 1 + i`; the terms
//! never decrease; an entry's lsns are live records of the store's log
//! until the entry is truncated or compacted, and only then released.

use std::collections::VecDeque;

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, EntryType, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};

/// A normal entry's data inside raft-rs: "this entry has records" (an
/// empty normal entry is a leader's no-op).
pub const RECORDS: &[u8] = b"R";
/// The most data an entry record carries inline (a membership change).
pub const ENTRY_DATA_MAX: usize = 256;

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryMeta {
    pub term: u64,
    pub entry_type: EntryType,
    /// A membership change's bytes (raft-rs decodes them); RECORDS or
    /// empty for a normal entry.
    pub data: Vec<u8>,
    /// Its records' lsns, the entry record last.
    pub lsns: Vec<u64>,
    /// The bytes its records name (for message size limits).
    pub payload_bytes: u64,
}

/// raft-rs's `Storage`, over the entries the store's log holds.
#[derive(Default)]
pub struct LogStorage {
    pub entries: VecDeque<EntryMeta>,
    /// The last entry compacted away (into the tree's checkpoint).
    pub snapshot_index: u64,
    pub snapshot_term: u64,
    /// The last entry the durable checkpoint's tree reflects, and its term
    /// (at or past `snapshot_index`: entries kept for followers stay in the
    /// log beyond it). A snapshot's base: the tree a stream sends.
    pub checkpoint_index: u64,
    pub checkpoint_term: u64,
    pub hard_state: HardState,
    pub conf_state: ConfState,
}

impl LogStorage {
    pub fn first_index(&self) -> u64 {
        self.snapshot_index + 1
    }

    pub fn last_index(&self) -> u64 {
        self.snapshot_index + self.entries.len() as u64
    }

    pub fn get(&self, index: u64) -> Option<&EntryMeta> {
        index.checked_sub(self.first_index()).and_then(|i| self.entries.get(i as usize))
    }

    pub fn term_of(&self, index: u64) -> Option<u64> {
        if index == self.snapshot_index {
            return Some(self.snapshot_term);
        }
        self.get(index).map(|e| e.term)
    }

    /// Appends the entry with index `index`, dropping (and returning) every
    /// entry at or after it first: their records are the caller's to
    /// release.
    pub fn append(&mut self, index: u64, meta: EntryMeta) -> Vec<EntryMeta> {
        assert!(index > self.snapshot_index, "an entry {index} at or below the snapshot {}", self.snapshot_index);
        assert!(index <= self.last_index() + 1, "a gap before entry {index} (last {})", self.last_index());
        let keep = (index - self.first_index()) as usize;
        let dropped: Vec<EntryMeta> = self.entries.drain(keep..).collect();
        if let Some(last) = self.entries.back() {
            assert!(last.term <= meta.term, "terms never decrease");
        }
        self.entries.push_back(meta);
        dropped
    }

    /// Forgets the entries up to `index` (the tree reflects them, durably):
    /// returns them, for their records to be released.
    pub fn compact_to(&mut self, index: u64) -> Vec<EntryMeta> {
        if index <= self.snapshot_index {
            return Vec::new();
        }
        let term = self.term_of(index).expect("compacting to an entry in the log");
        let count = (index - self.snapshot_index) as usize;
        let gone: Vec<EntryMeta> = self.entries.drain(..count).collect();
        self.snapshot_index = index;
        self.snapshot_term = term;
        gone
    }

    /// A snapshot's base: the last entry the durable checkpoint's tree
    /// reflects (a stream sends that tree), and its term.
    pub fn snapshot_base(&self) -> (u64, u64) {
        if self.checkpoint_index > self.snapshot_index {
            (self.checkpoint_index, self.checkpoint_term)
        } else {
            (self.snapshot_index, self.snapshot_term)
        }
    }

    /// raft-rs's view of entry `index`.
    pub fn entry(&self, index: u64) -> Option<Entry> {
        let meta = self.get(index)?;
        Some(Entry {
            entry_type: meta.entry_type,
            term: meta.term,
            index,
            data: meta.data.clone().into(),
            ..Default::default()
        })
    }
}

impl Storage for LogStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState { hard_state: self.hard_state.clone(), conf_state: self.conf_state.clone() })
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < self.first_index() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last_index() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        // Limited by the bytes the entries really carry, not by raft-rs's
        // estimate (its data is one byte).
        let max_size = max_size.into().unwrap_or(u64::MAX);
        let mut out = Vec::new();
        let mut size = 0u64;
        for index in low..high {
            let meta = self.get(index).expect("in range");
            size += meta.payload_bytes + 64 * meta.lsns.len() as u64;
            if !out.is_empty() && size > max_size {
                break;
            }
            out.push(self.entry(index).expect("in range"));
        }
        Ok(out)
    }

    fn term(&self, index: u64) -> raft::Result<u64> {
        if index < self.snapshot_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        self.term_of(index).ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(LogStorage::first_index(self))
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(LogStorage::last_index(self))
    }

    /// The snapshot is streamed by the transport (`apps/kv/replication.rs`,
    /// from the durable checkpoint's tree, pinned when the stream begins):
    /// raft-rs only gets its metadata. (This server never asks raft-rs for
    /// a snapshot, `request_index` being that of one asked: the base waits
    /// for a checkpoint that reaches it, should it ever.)
    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        let (index, term) = self.snapshot_base();
        if index < request_index {
            return Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable));
        }
        let mut snapshot = Snapshot::default();
        let meta = snapshot.mut_metadata();
        meta.index = index;
        meta.term = term;
        meta.set_conf_state(self.conf_state.clone());
        Ok(snapshot)
    }
}

/// The key of an entry record: term, index, type, inline data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryKey {
    pub term: u64,
    pub index: u64,
    pub entry_type: EntryType,
    pub data: Vec<u8>,
}

impl EntryKey {
    pub fn encode(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(17 + self.data.len());
        key.extend_from_slice(&self.term.to_le_bytes());
        key.extend_from_slice(&self.index.to_le_bytes());
        key.push(self.entry_type as u8);
        key.extend_from_slice(&self.data);
        key
    }

    pub fn decode(key: &[u8]) -> Option<EntryKey> {
        if key.len() < 17 {
            return None;
        }
        let entry_type = match key[16] {
            0 => EntryType::EntryNormal,
            1 => EntryType::EntryConfChange,
            2 => EntryType::EntryConfChangeV2,
            _ => return None,
        };
        Some(EntryKey {
            term: u64::from_le_bytes(key[0..8].try_into().ok()?),
            index: u64::from_le_bytes(key[8..16].try_into().ok()?),
            entry_type,
            data: key[17..].to_vec(),
        })
    }
}

/// What the replica persists besides entries, in state records and in
/// `#raft`: the group, the hard state, the membership, and where the tree
/// stands (the last entry it reflects, and that entry's term).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    pub group_id: u64,
    pub node_id: u64,
    pub hard_state: HardState,
    pub conf_state: ConfState,
    pub applied_index: u64,
    pub applied_term: u64,
    /// Every member's peer address (a node added at run time included).
    pub addresses: std::collections::BTreeMap<u64, std::net::SocketAddr>,
    /// A snapshot was loading (its index and term) when this was written:
    /// in `#raft`, the durable tree is part old, part snapshot, and
    /// reflects no entry (a node that opens it serves nothing until a
    /// snapshot is loaded whole). Only `#raft`'s counts; state records
    /// carry it too, unread.
    pub loading: Option<(u64, u64)>,
}

/// Version 2 added `loading` (version 1, read as never loading, has none).
const META_VERSION: u8 = 2;
const META_VERSION_NO_LOADING: u8 = 1;

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![META_VERSION];
        for value in [
            self.group_id,
            self.node_id,
            self.hard_state.term,
            self.hard_state.vote,
            self.hard_state.commit,
            self.applied_index,
            self.applied_term,
        ] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        let conf = self.conf_state.write_to_bytes().expect("encoding a ConfState");
        out.extend_from_slice(&(conf.len() as u16).to_le_bytes());
        out.extend_from_slice(&conf);
        out.extend_from_slice(&(self.addresses.len() as u16).to_le_bytes());
        for (id, addr) in &self.addresses {
            let text = addr.to_string();
            out.extend_from_slice(&id.to_le_bytes());
            out.push(text.len() as u8);
            out.extend_from_slice(text.as_bytes());
        }
        // (0, 0): not loading (a snapshot's index is never 0).
        let (index, term) = self.loading.unwrap_or((0, 0));
        assert!(self.loading.is_none() || index > 0, "a loading snapshot has an index");
        out.extend_from_slice(&index.to_le_bytes());
        out.extend_from_slice(&term.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Meta> {
        let version = *bytes.first()?;
        if (version != META_VERSION && version != META_VERSION_NO_LOADING) || bytes.len() < 1 + 7 * 8 {
            return None;
        }
        let word = |i: usize| u64::from_le_bytes(bytes[1 + 8 * i..9 + 8 * i].try_into().expect("8 bytes"));
        let hard_state = HardState { term: word(2), vote: word(3), commit: word(4), ..Default::default() };
        let mut rest = &bytes[57..];
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
            rest = tail;
            Some(head)
        };
        let conf_len = u16::from_le_bytes(take(2)?.try_into().ok()?) as usize;
        let conf_state = ConfState::parse_from_bytes(take(conf_len)?).ok()?;
        let count = u16::from_le_bytes(take(2)?.try_into().ok()?);
        let mut addresses = std::collections::BTreeMap::new();
        for _ in 0..count {
            let id = u64::from_le_bytes(take(8)?.try_into().ok()?);
            let len = take(1)?[0] as usize;
            let addr = std::str::from_utf8(take(len)?).ok()?.parse().ok()?;
            addresses.insert(id, addr);
        }
        let loading = if version == META_VERSION {
            let index = u64::from_le_bytes(take(8)?.try_into().ok()?);
            let term = u64::from_le_bytes(take(8)?.try_into().ok()?);
            (index != 0).then_some((index, term))
        } else {
            None
        };
        if !rest.is_empty() {
            return None;
        }
        Some(Meta {
            addresses,
            loading,
            group_id: word(0),
            node_id: word(1),
            hard_state,
            conf_state,
            applied_index: word(5),
            applied_term: word(6),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(term: u64) -> EntryMeta {
        EntryMeta {
            term,
            entry_type: EntryType::EntryNormal,
            data: RECORDS.to_vec(),
            lsns: vec![term * 64],
            payload_bytes: 10,
        }
    }

    #[test]
    fn append_truncates_and_compaction_moves_the_first_index() {
        let mut log = LogStorage::default();
        for i in 1..=5 {
            assert!(log.append(i, meta(1)).is_empty());
        }
        let dropped = log.append(4, meta(2));
        assert_eq!(dropped.len(), 2);
        assert_eq!((log.first_index(), log.last_index()), (1, 4));
        assert_eq!(log.term_of(4), Some(2));
        assert_eq!(log.compact_to(2).len(), 2);
        assert_eq!((log.first_index(), log.last_index(), log.term_of(2)), (3, 4, Some(1)));
        assert!(matches!(Storage::term(&log, 1), Err(raft::Error::Store(StorageError::Compacted))));
        assert!(matches!(log.entries(3, 5, Some(0), GetEntriesContext::empty(false)).map(|e| e.len()), Ok(1)));
    }

    #[test]
    fn keys_and_meta_round_trip() {
        let key = EntryKey { term: 7, index: 9, entry_type: EntryType::EntryConfChangeV2, data: b"cc".to_vec() };
        assert_eq!(EntryKey::decode(&key.encode()), Some(key));
        let mut meta = Meta { group_id: 1, node_id: 2, applied_index: 5, applied_term: 3, ..Meta::default() };
        meta.hard_state.term = 3;
        meta.hard_state.commit = 5;
        meta.conf_state.voters = vec![1, 2, 3];
        meta.addresses.insert(4, "127.0.0.1:7004".parse().unwrap());
        assert_eq!(Meta::decode(&meta.encode()), Some(meta.clone()));
        // Version 1 (before `loading`): the same bytes without its 16.
        let mut old = meta.encode();
        old.truncate(old.len() - 16);
        old[0] = 1;
        assert_eq!(Meta::decode(&old), Some(meta.clone()));
        meta.loading = Some((40, 3));
        let bytes = meta.encode();
        assert_eq!(Meta::decode(&bytes), Some(meta));
        assert_eq!(Meta::decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(Meta::decode(b"\x02"), None);
        assert_eq!(Meta::decode(b"\x03"), None);
    }
}
