//! The tree's finder (issue 36): a volatile cache in DRAM from a key to
//! where its entry lies, the leaf and the entry's index in it, so that a
//! read of a key found before skips the descent (four binary searches of
//! a 100,000-key tree: 45% of a GET's instructions) for one probe of a
//! cache line and one key comparison.
//!
//! Nothing of it is persistent: opening starts it empty, and it fills as
//! reads descend. It is a cache, never the truth: a slot is used only when
//! its leaf is unchanged since the slot was filled (`epochs`) and the key
//! at its index is the key asked for; any other slot is a miss, and the
//! caller descends as before.
//!
//! A read of an absent key notes the leaf its descent ended in. A later
//! read finds the key absent if that leaf (unchanged, so still a leaf of
//! the working version) holds a key below it and one above it: then no
//! other leaf can hold it. Nothing else is trusted: a slot's tag may be
//! another key's, so an answer always comes from the leaf's own bytes.
//!
//! It works only while the tree is quiet: fewer inserts and deletes than a
//! quarter of the reads over the last `WINDOW_READS` reads. Then a descent
//! fills every key of the leaf it reached, once per version of that leaf,
//! so that a read-mostly store soon finds every key without descending,
//! not only keys read twice. While leaves change about as often as reads
//! come (a write-heavy load, a read-modify-write's read), a slot would
//! seldom outlive its leaf's next change: reads neither probe nor fill
//! (no hash, no cache line touched), and only count.
//!
//! Invariant (kept by the tree, which calls `changed` for every node it
//! writes, allocates or retires): a buffer's epoch moves whenever the node
//! in it joins or leaves the working version, or could hold another key at
//! an index. Correctness rests on the first: a hit reads a live leaf of
//! the working version that holds the key, so its entry is the key's (keys
//! are unique); the key comparison alone would catch a shifted index (the
//! tests check that a retired leaf's slots are never used). Moving the
//! epoch on in-place edits too makes the next read refill the leaf whole,
//! rather than each shifted key missing once. An entry rewritten in place
//! with the same size (the same key, a new value) keeps its index and its
//! epoch: the value is read from the node at each hit. Epochs are 64-bit
//! and only grow (by two: the low bit notes a leaf filled whole at that
//! epoch), so a slot can never match a later life of its buffer.
//!
//! Layout: buckets of four 16-byte slots, one cache line each, as many
//! slots as the tree's keys (rounded up to a power of two, at most
//! `FINDER_SLOTS_MAX`); a key's bucket and its 16-bit tag come from one
//! hash of its bytes.

use std::hash::Hasher;

use crate::limits::FINDER_SLOTS_MAX;
use crate::util::idhash::NameHasher;

/// Slots per bucket: one 64-byte line.
const WAYS: usize = 4;
/// Buckets of a finder that has not grown yet.
const BUCKETS_MIN: usize = 256;
/// Reads over which the tree's change rate is measured.
const WINDOW_READS: u32 = 1024;
/// Quiet: fewer inserts and deletes than reads over this many, in a window
/// (a leaf filled whole, about one descent's work, then serves several
/// reads before it changes).
const QUIET_READS_PER_CHANGE: u32 = 4;
/// An epoch's low bit: the leaf's keys were all filled at this epoch.
const FILLED_WHOLE: u64 = 1;

const _: () = assert!(crate::limits::FINDER_SLOTS_MAX.is_power_of_two());

/// When the finder works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinderMode {
    /// While the tree is quiet (the default).
    Adaptive,
    /// At every read (tests: a finder that is never idle).
    Always,
}

#[derive(Clone, Copy, Default)]
#[repr(C)]
struct Slot {
    /// The leaf's buffer + 1; 0: an empty slot.
    leaf_plus_one: u32,
    tag: u16,
    index: u16,
    /// The leaf's epoch when the slot was filled.
    epoch: u64,
}

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket([Slot; WAYS]);

/// Where a key was found: its leaf and the entry's index there, or (None)
/// the leaf a descent for an absent key ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub leaf: u32,
    pub index: Option<usize>,
}

/// A slot's index for an absent key.
const ABSENT: u16 = u16::MAX;

pub(crate) struct Finder {
    buckets: Vec<Bucket>,
    /// One per buffer: moved by every change to the node in it.
    epochs: Vec<u64>,
    /// Probes answered (for tests and `stats`).
    hits: u64,
    /// The current window: reads, and the tree's changes (inserts and
    /// deletes, not the node operations each makes), so far.
    window_reads: u32,
    window_changes: u32,
    /// The last full window's verdict: leaves are worth filling whole.
    quiet: bool,
    mode: FinderMode,
}

impl Finder {
    pub fn new(buffer_count: u32) -> Finder {
        Finder {
            buckets: vec![Bucket::default(); BUCKETS_MIN],
            epochs: vec![0; buffer_count as usize],
            hits: 0,
            window_reads: 0,
            window_changes: 0,
            quiet: false,
            mode: FinderMode::Adaptive,
        }
    }

    pub fn set_mode(&mut self, mode: FinderMode) {
        self.mode = mode;
    }

    /// The node in `buffer` changed, joined or left the tree: every slot
    /// that points into it is stale.
    #[inline]
    pub fn changed(&mut self, buffer: u32) {
        let epoch = &mut self.epochs[buffer as usize];
        *epoch = (*epoch | FILLED_WHOLE) + 1;
    }

    /// The tree took an insert or a delete (counted toward the window).
    #[inline]
    pub fn wrote(&mut self) {
        self.window_changes = self.window_changes.saturating_add(1);
    }

    /// Whether `leaf`'s current version was filled whole already.
    pub fn is_filled_whole(&self, leaf: u32) -> bool {
        self.epochs[leaf as usize] & FILLED_WHOLE != 0
    }

    /// A read begins: counts it toward the window; whether the finder is
    /// at work (the tree is quiet), so the read should probe and fill it.
    pub fn read(&mut self) -> bool {
        self.window_reads += 1;
        if self.window_reads == WINDOW_READS {
            self.quiet = self.window_changes < WINDOW_READS / QUIET_READS_PER_CHANGE;
            (self.window_reads, self.window_changes) = (0, 0);
        }
        match self.mode {
            FinderMode::Adaptive => self.quiet,
            FinderMode::Always => true,
        }
    }

    /// Notes that every key of `leaf` was just filled.
    pub fn filled_whole(&mut self, leaf: u32) {
        self.epochs[leaf as usize] |= FILLED_WHOLE;
    }

    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// A candidate for `hash`'s key: a slot with its tag whose leaf has not
    /// changed since. The caller checks that the key at the index is its
    /// key (two keys may share a tag), then calls `hit`.
    #[inline]
    pub fn probe(&self, hash: u64) -> Option<Found> {
        let (bucket, tag) = self.place(hash);
        let slot = self.buckets[bucket]
            .0
            .iter()
            .find(|slot| slot.tag == tag && slot.leaf_plus_one != 0 && self.is_current(slot))?;
        Some(Found { leaf: slot.leaf_plus_one - 1, index: (slot.index != ABSENT).then_some(usize::from(slot.index)) })
    }

    /// A probe's candidate was the key: a read answered.
    pub fn hit(&mut self) {
        self.hits += 1;
    }

    /// Notes that `hash`'s key is entry `index` of `leaf`, as the working
    /// version is now. Call `grow` first.
    pub fn fill(&mut self, hash: u64, found: Found) {
        let index = match found.index {
            None => ABSENT,
            Some(index) => match u16::try_from(index) {
                Ok(index) if index != ABSENT => index,
                _ => return,
            },
        };
        let (bucket, tag) = self.place(hash);
        let epoch = self.epochs[found.leaf as usize] & !FILLED_WHOLE;
        let slots = &self.buckets[bucket].0;
        // An empty or stale slot, else one with this tag (this key's, or a
        // colliding one's), else one chosen by the hash's spare bits. A
        // stale slot of this key left behind is never used (`probe`).
        let way = slots
            .iter()
            .position(|slot| slot.leaf_plus_one == 0 || !self.is_current(slot))
            .or_else(|| slots.iter().position(|slot| slot.tag == tag))
            .unwrap_or((hash >> 40) as usize % WAYS);
        self.buckets[bucket].0[way] = Slot { leaf_plus_one: found.leaf + 1, tag, index, epoch };
    }

    /// Makes room for `keys` (the tree's key count), up to the limit: a
    /// finder that grows starts empty.
    pub fn grow(&mut self, keys: u64) {
        if keys > (self.buckets.len() * WAYS) as u64 && self.buckets.len() * WAYS < FINDER_SLOTS_MAX {
            let slots = (keys.min(FINDER_SLOTS_MAX as u64) as usize).next_power_of_two();
            self.buckets = vec![Bucket::default(); slots / WAYS];
            // Leaves filled whole before are no longer.
            self.epochs.iter_mut().for_each(|epoch| *epoch &= !FILLED_WHOLE);
        }
    }

    fn is_current(&self, slot: &Slot) -> bool {
        self.epochs.get(slot.leaf_plus_one as usize - 1).map(|epoch| epoch & !FILLED_WHOLE) == Some(slot.epoch)
    }

    fn place(&self, hash: u64) -> (usize, u16) {
        ((hash as usize) & (self.buckets.len() - 1), (hash >> 48) as u16)
    }
}

/// A key's hash: the names' hasher (`util::idhash::NameHasher`, eight
/// bytes a multiply), then mixed by murmur3's finaliser, so that the low
/// bits (the bucket) and the high ones (the tag) both depend on every byte.
#[inline]
pub(crate) fn hash(key: &[u8]) -> u64 {
    let mut hasher = NameHasher::default();
    hasher.write(key);
    let mut h = hasher.finish();
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_slot_is_found_until_its_leaf_changes() {
        let mut finder = Finder::new(16);
        let h = hash(b"key:1");
        assert_eq!(finder.probe(h), None);
        finder.fill(h, Found { leaf: 3, index: Some(7) });
        assert_eq!(finder.probe(h), Some(Found { leaf: 3, index: Some(7) }));
        finder.changed(4);
        assert_eq!(finder.probe(h), Some(Found { leaf: 3, index: Some(7) }), "another leaf changed");
        finder.changed(3);
        assert_eq!(finder.probe(h), None, "its leaf changed");
        finder.fill(h, Found { leaf: 3, index: Some(2) });
        assert_eq!(finder.probe(h), Some(Found { leaf: 3, index: Some(2) }));
        // Noting the leaf filled whole keeps its slots.
        finder.filled_whole(3);
        assert_eq!(finder.probe(h), Some(Found { leaf: 3, index: Some(2) }));
        finder.changed(3);
        assert_eq!(finder.probe(h), None, "its leaf changed after being filled whole");
    }

    #[test]
    fn buffer_zero_and_empty_slots_never_match_by_accident() {
        let finder = Finder::new(16);
        // Empty slots are zeroed: tag 0, leaf 0, epoch 0 would match a
        // key whose tag is 0 and buffer 0's first epoch, were empty slots
        // not told apart.
        for key in 0..100_000u32 {
            assert_eq!(finder.probe(hash(&key.to_le_bytes())), None);
        }
    }

    #[test]
    fn the_finder_grows_with_the_keys_and_stays_bounded() {
        let mut finder = Finder::new(8);
        finder.fill(hash(b"a"), Found { leaf: 1, index: Some(0) });
        finder.filled_whole(1);
        finder.grow(100_000);
        assert_eq!(finder.buckets.len() * WAYS, 131_072);
        assert_eq!(finder.probe(hash(b"a")), None, "a finder that grows starts empty");
        assert_eq!(finder.epochs[1] & FILLED_WHOLE, 0, "and no leaf is filled whole");
        finder.fill(hash(b"a"), Found { leaf: 1, index: Some(0) });
        assert_eq!(finder.probe(hash(b"a")), Some(Found { leaf: 1, index: Some(0) }));
        finder.grow(u64::MAX);
        assert_eq!(finder.buckets.len() * WAYS, FINDER_SLOTS_MAX);
        // An absent key's leaf is noted.
        finder.fill(hash(b"d"), Found { leaf: 2, index: None });
        assert_eq!(finder.probe(hash(b"d")), Some(Found { leaf: 2, index: None }));
        // An index a slot cannot hold is not noted.
        finder.fill(hash(b"c"), Found { leaf: 1, index: Some(70_000) });
        assert_eq!(finder.probe(hash(b"c")), None);
    }

    #[test]
    fn four_ways_keep_most_of_a_full_bucket_set() {
        let mut finder = Finder::new(4);
        let keys = 4096u64;
        finder.grow(keys);
        for key in 0..keys {
            finder.fill(hash(format!("key:{key:012}").as_bytes()), Found { leaf: 0, index: Some(key as usize % 100) });
        }
        let found = (0..keys).filter(|key| finder.probe(hash(format!("key:{key:012}").as_bytes())).is_some()).count();
        // As many slots as keys, four ways: most keys keep a slot.
        assert!(found as u64 > keys * 8 / 10, "{found} of {keys} kept");
    }

    #[test]
    fn the_finder_works_only_while_reads_outnumber_changes() {
        let mut finder = Finder::new(64);
        // The first window: not yet measured, not quiet.
        assert!(!finder.read());
        for _ in 1..WINDOW_READS {
            finder.read();
        }
        // A window of reads without changes: quiet.
        assert!(finder.read());
        assert!(!finder.is_filled_whole(5));
        finder.filled_whole(5);
        assert!(finder.is_filled_whole(5));
        finder.changed(5);
        assert!(!finder.is_filled_whole(5), "a new version of the leaf");
        // A window with a change per two reads: busy.
        for read in 0..WINDOW_READS {
            if read % 2 == 0 {
                finder.wrote();
            }
            finder.read();
        }
        assert!(!finder.read(), "changes as frequent as reads");
        // One change per eight reads: quiet again.
        for read in 0..WINDOW_READS {
            if read % 8 == 0 {
                finder.wrote();
            }
            finder.read();
        }
        assert!(finder.read());
    }
}
