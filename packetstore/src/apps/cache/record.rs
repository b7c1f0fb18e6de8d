//! The write cache's log records: what a cached write or truncate was, so
//! that recovery can apply it again to the real file.
//!
//! A record's `tag` is its sequence number (global across the cache's
//! lanes: the order writes returned to their callers); its key is the
//! file offset (a write), the new size (a truncate) or the newest sequence
//! number a sync of the file covered (a synced mark), u64 little-endian,
//! then the file's path; a write's data is the record's extents.
//!
//! An unlink record (its word is 0) says: this path was removed at this
//! record's sequence number; the path's earlier changes are void, and
//! recovery removes the path again, unless a live synced mark of the path
//! numbered past the unlink shows that a later file of that name was
//! synced (docs/write-cache.md, "Unlinks").
//!
//! A synced mark says: every write and truncate of this path numbered up
//! to `upto` is in the file durably. Recovery skips those, so releases of
//! records that reach the media in any subset (or lanes' in any order)
//! never let an older record be applied after a newer one was dropped.
//!
//! Invariant: `decode` accepts exactly what `encode` makes (a kind of
//! `CACHE_RECORD_KINDS`, a key of 8 bytes and a non-empty path).

use crate::pool::kind::CACHE_RECORD_KINDS;

/// A write of the record's data at `offset`.
pub const KIND_WRITE: u16 = 0x30;
/// A truncate (or extension) to `size`.
pub const KIND_TRUNCATE: u16 = 0x31;
/// A synced mark: the path's changes up to `upto` are durable in the file.
pub const KIND_SYNCED: u16 = 0x32;
/// An unlink: the path was removed at this record's sequence number.
pub const KIND_UNLINKED: u16 = 0x33;
const _: () = assert!(*CACHE_RECORD_KINDS.start() == KIND_WRITE && *CACHE_RECORD_KINDS.end() == KIND_UNLINKED);

/// The longest path a cached file may have (the rest of a log key).
pub const PATH_MAX: usize = crate::limits::KEY_SIZE_MAX - 8;

/// What a record asks of its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Write { offset: u64 },
    Truncate { size: u64 },
    Synced { upto: u64 },
    Unlinked,
}

/// The key of a record of `change` to `path`.
pub fn encode(change: &Change, path: &[u8]) -> (u16, Vec<u8>) {
    assert!(!path.is_empty() && path.len() <= PATH_MAX, "a cached path fits a key");
    let (kind, word) = match *change {
        Change::Write { offset } => (KIND_WRITE, offset),
        Change::Truncate { size } => (KIND_TRUNCATE, size),
        Change::Synced { upto } => (KIND_SYNCED, upto),
        Change::Unlinked => (KIND_UNLINKED, 0),
    };
    let mut key = Vec::with_capacity(8 + path.len());
    key.extend_from_slice(&word.to_le_bytes());
    key.extend_from_slice(path);
    (kind, key)
}

/// The change and the path a record names; None if it is not the cache's.
pub fn decode(kind: u16, key: &[u8]) -> Option<(Change, &[u8])> {
    if key.len() <= 8 {
        return None;
    }
    let word = u64::from_le_bytes(key[..8].try_into().ok()?);
    let change = match kind {
        KIND_WRITE => Change::Write { offset: word },
        KIND_TRUNCATE => Change::Truncate { size: word },
        KIND_SYNCED => Change::Synced { upto: word },
        KIND_UNLINKED if word == 0 => Change::Unlinked,
        _ => return None,
    };
    Some((change, &key[8..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for change in [
            Change::Write { offset: 7 << 40 },
            Change::Truncate { size: 0 },
            Change::Synced { upto: 9 },
            Change::Unlinked,
        ] {
            let (kind, key) = encode(&change, b"/data/db.sqlite");
            assert_eq!(decode(kind, &key), Some((change, &b"/data/db.sqlite"[..])));
        }
        assert_eq!(decode(KIND_WRITE, &[0; 8]), None, "no path");
        assert_eq!(decode(1, &[0; 9]), None, "another program's record");
    }
}
