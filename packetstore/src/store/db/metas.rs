//! Collections' metadata (`m` entries: type and object id), kept in DRAM
//! beside the tree (issue 36).
//!
//! Every command on a collection first finds its `m` entry: a descent of
//! the tree, 6-9% of an HSET, SADD, LPUSH or ZRANGE. An `m` entry is
//! written once, when its collection is created, and deleted with it, so
//! a copy kept after the first read stays right until the tree changes
//! that entry; then `Store::tree_insert` or `tree_delete` drops the copy
//! (the only ways an entry changes) and the next read takes it from the
//! tree again. Lost at a restart, refilled by reads.
//!
//! Invariant: a kept copy equals the tree's `m` entry of that key.
//! Builds with debug assertions check it on every read. Only present
//! entries are kept (an absent one is one descent, as before). Keys are a
//! client's bytes: hashed with the standard, keyed hasher.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::store::keyspace::{Meta, NS_META};

/// Entries kept at most; past it the table starts over (bounded memory:
/// about 100 bytes an entry with a short key).
pub const KEPT_METAS_MAX: usize = 65_536;

/// Copies of `m` entries, by tree key (`meta_key`).
#[derive(Default)]
pub struct KeptMetas {
    metas: RefCell<HashMap<Vec<u8>, Meta>>,
}

impl KeptMetas {
    /// The kept copy of the `m` entry at tree key `key`, if kept.
    pub fn get(&self, key: &[u8]) -> Option<Meta> {
        self.metas.borrow().get(key).copied()
    }

    /// Keeps the entry the tree just gave.
    pub fn fill(&self, key: &[u8], meta: Meta) {
        let mut metas = self.metas.borrow_mut();
        if metas.len() >= KEPT_METAS_MAX {
            metas.clear();
        }
        metas.insert(key.to_vec(), meta);
    }

    /// The tree's entry at `key` changed or went: its copy goes.
    pub fn note_changed(&self, key: &[u8]) {
        if key.first() == Some(&NS_META) {
            self.metas.borrow_mut().remove(key);
        }
    }

    /// Forgets every copy (a tree operation failed half way).
    pub fn forget(&self) {
        self.metas.borrow_mut().clear();
    }

    /// How many are kept (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.metas.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::keyspace::{meta_key, KeyType};

    #[test]
    fn a_change_of_the_entry_drops_its_copy_and_no_other() {
        let metas = KeptMetas::default();
        let (a, b) = (meta_key(0, b"a"), meta_key(0, b"b"));
        metas.fill(&a, Meta { kind: KeyType::List, oid: 1 });
        metas.fill(&b, Meta { kind: KeyType::Hash, oid: 2 });
        metas.note_changed(&a);
        assert_eq!(metas.get(&a), None);
        assert_eq!(metas.get(&b).map(|m| m.oid), Some(2));
        // The same bytes outside the `m` namespace are another entry.
        let mut other = b.clone();
        other[0] = NS_META.wrapping_add(1);
        metas.note_changed(&other);
        assert_eq!(metas.get(&b).map(|m| m.oid), Some(2));
        assert_ne!(meta_key(1, b"b"), b, "databases are apart");
        assert_eq!(metas.get(&meta_key(1, b"b")), None);
    }

    #[test]
    fn the_table_starts_over_when_full() {
        let metas = KeptMetas::default();
        for n in 0..KEPT_METAS_MAX as u64 {
            metas.fill(&meta_key(0, &n.to_le_bytes()), Meta { kind: KeyType::Set, oid: n });
        }
        assert_eq!(metas.len(), KEPT_METAS_MAX);
        metas.fill(&meta_key(0, b"last"), Meta { kind: KeyType::Set, oid: 9 });
        assert_eq!(metas.len(), 1);
        metas.forget();
        assert_eq!(metas.len(), 0);
    }
}
