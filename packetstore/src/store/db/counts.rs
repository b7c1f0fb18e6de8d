//! Element counts of collections, kept in DRAM beside the tree (issue 36).
//!
//! LPUSH answers the list's new length, RPOP and SPOP need it, ZRANGE
//! normalises its range with it: each asked the tree, two rank descents
//! (`Tree::count`), 7-9% of such a command. The counts are volatile: a
//! space's count is taken from the tree the first time it is asked for,
//! then kept in step by every change of the tree (`Store::tree_insert`
//! and `tree_delete` are the only ways an element changes), and rebuilt
//! from the tree after a restart.
//!
//! Invariant: a cached count equals the number of the tree's entries with
//! that `e` oid space prefix, at every moment between two tree
//! operations. Builds with debug assertions check it on every read.
//! Anything uncertain (a tree operation that failed half way) forgets
//! every count rather than risk a wrong one.

use std::cell::RefCell;

use crate::store::keyspace::{ELEMENT_PREFIX_LEN, NS_ELEMENT};
use crate::util::idhash::IdHashMap;

/// Spaces whose counts are kept at most; past it the table starts over
/// (bounded memory: 24 bytes an entry plus the map's overhead).
pub const COUNTED_SPACES_MAX: usize = 65_536;

/// The counts, by (oid, space).
#[derive(Default)]
pub struct ElementCounts {
    counts: RefCell<IdHashMap<(u64, u8), u64>>,
}

/// The (oid, space) of an element's key, if it is one.
fn space_of(key: &[u8]) -> Option<(u64, u8)> {
    if key.len() < ELEMENT_PREFIX_LEN || key[0] != NS_ELEMENT {
        return None;
    }
    let oid = u64::from_be_bytes(key[1..9].try_into().expect("eight bytes"));
    Some((oid, key[9]))
}

impl ElementCounts {
    /// The kept count of a space, if kept.
    pub fn get(&self, oid: u64, space: u8) -> Option<u64> {
        self.counts.borrow().get(&(oid, space)).copied()
    }

    /// Keeps a count the tree just gave.
    pub fn fill(&self, oid: u64, space: u8, count: u64) {
        let mut counts = self.counts.borrow_mut();
        if counts.len() >= COUNTED_SPACES_MAX {
            counts.clear();
        }
        counts.insert((oid, space), count);
    }

    /// The tree gained `key` (it was not there before).
    pub fn note_created(&self, key: &[u8]) {
        if let Some(space) = space_of(key) {
            if let Some(count) = self.counts.borrow_mut().get_mut(&space) {
                *count += 1;
            }
        }
    }

    /// The tree lost `key` (it was there).
    pub fn note_removed(&self, key: &[u8]) {
        let Some(space) = space_of(key) else { return };
        let mut counts = self.counts.borrow_mut();
        if let Some(count) = counts.get_mut(&space) {
            assert!(*count > 0, "an element count went below zero: the counts missed a change");
            *count -= 1;
            if *count == 0 {
                // An emptied collection's oid is never used again.
                counts.remove(&space);
            }
        }
    }

    /// Forgets every count (a tree operation failed: its effect is not
    /// certain).
    pub fn forget(&self) {
        self.counts.borrow_mut().clear();
    }

    /// How many spaces are counted (tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.counts.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::keyspace::element_key;

    #[test]
    fn only_a_kept_space_moves_and_an_emptied_one_is_dropped() {
        let counts = ElementCounts::default();
        counts.note_created(&element_key(7, 1, b"a"));
        assert_eq!(counts.get(7, 1), None, "an unkept space stays unkept");
        counts.fill(7, 1, 1);
        counts.note_created(&element_key(7, 1, b"b"));
        counts.note_created(&element_key(7, 2, b"b"));
        counts.note_created(&element_key(8, 1, b"b"));
        assert_eq!(counts.get(7, 1), Some(2));
        assert_eq!(counts.get(7, 2), None);
        counts.note_removed(&element_key(7, 1, b"a"));
        counts.note_removed(&element_key(7, 1, b"b"));
        assert_eq!(counts.get(7, 1), None, "dropped at zero");
        assert_eq!(counts.len(), 0);
    }

    #[test]
    fn keys_outside_the_element_namespace_are_ignored() {
        let counts = ElementCounts::default();
        counts.fill(7, 1, 3);
        let mut meta = element_key(7, 1, b"a");
        meta[0] = NS_ELEMENT.wrapping_add(1);
        counts.note_created(&meta);
        counts.note_removed(&meta);
        counts.note_created(&[NS_ELEMENT, 0, 0]);
        assert_eq!(counts.get(7, 1), Some(3));
    }

    #[test]
    fn the_table_starts_over_when_full() {
        let counts = ElementCounts::default();
        for oid in 0..COUNTED_SPACES_MAX as u64 {
            counts.fill(oid, 0, 1);
        }
        assert_eq!(counts.len(), COUNTED_SPACES_MAX);
        counts.fill(u64::MAX, 0, 5);
        assert_eq!(counts.len(), 1);
        assert_eq!(counts.get(u64::MAX, 0), Some(5));
        assert_eq!(counts.get(0, 0), None);
    }

    #[test]
    #[should_panic(expected = "below zero")]
    fn a_removal_the_count_did_not_hold_is_a_bug() {
        let counts = ElementCounts::default();
        counts.fill(7, 1, 0);
        counts.note_removed(&element_key(7, 1, b"a"));
    }
}
