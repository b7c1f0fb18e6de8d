//! A hasher for sets and maps keyed by the pool's own integer ids (buffer
//! and node numbers): one multiply instead of SipHash, which was 2% of a
//! write's CPU in the tree's set of fresh nodes. Only for ids this process
//! allocates; anything a client chooses keeps the standard, keyed hasher.

use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing of one integer: the high bits of `id * 2^64/phi`.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not an integer id: fold the bytes in (correct, not fast).
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.write_u64(u64::from(id));
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = (self.0 ^ id).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26);
    }
}

pub type IdHashSet<T> = std::collections::HashSet<T, BuildHasherDefault<IdHasher>>;
/// A map keyed by ids, hashed the same way.
pub type IdHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_ids_spread_over_buckets() {
        // hashbrown takes the top 7 bits as a tag and the low bits as the
        // bucket: both must vary across consecutive ids.
        let hashes: Vec<u64> = (0..1024u32)
            .map(|id| {
                let mut hasher = IdHasher::default();
                hasher.write_u32(id);
                hasher.finish()
            })
            .collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 1023).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 600, "{} distinct low buckets of 1024", low.len());
        assert_eq!(top.len(), 128, "every 7-bit tag used");
    }

    #[test]
    fn a_set_of_ids_behaves_as_a_set() {
        let mut set = IdHashSet::default();
        for id in (0..10_000u32).step_by(3) {
            assert!(set.insert(id));
        }
        assert!(!set.insert(3));
        assert!(set.contains(&9_999) && !set.contains(&10_000));
        assert_eq!(set.len(), 3_334);
    }
}
