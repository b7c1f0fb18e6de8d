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

/// A hasher for maps whose keys are a fixed set this process defines (the
/// command names): a client's bytes only look a key up, never insert one,
/// so no client can crowd a bucket, and SipHash's keyed defence buys
/// nothing. Eight bytes at a time, one multiply each (issue 36: the two
/// SipHash lookups of every command, the table and INFO commandstats).
#[derive(Default, Clone, Copy)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.write_u64(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.write_u64(u64::from_le_bytes(tail) ^ bytes.len() as u64);
    }

    fn write_u8(&mut self, byte: u8) {
        self.write_u64(u64::from(byte));
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by a fixed set of names, hashed by `NameHasher`.
pub type NameHashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<NameHasher>>;

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

    #[test]
    fn names_that_share_a_prefix_or_differ_in_length_hash_apart() {
        let hash = |name: &[u8]| {
            let mut hasher = NameHasher::default();
            hasher.write(name);
            hasher.finish()
        };
        let names: Vec<Vec<u8>> = ["set", "setex", "setnx", "set\0", "", "\0", "\0\0", "zrangebyscore", "zrangebylex"]
            .iter()
            .map(|n| n.as_bytes().to_vec())
            .chain((0..2000).map(|i| format!("command{i}").into_bytes()))
            .collect();
        let hashes: std::collections::HashSet<u64> = names.iter().map(|n| hash(n)).collect();
        assert_eq!(hashes.len(), names.len(), "every name hashes apart");
        let map: NameHashMap<&[u8], usize> = names.iter().enumerate().map(|(i, n)| (&n[..], i)).collect();
        assert!(names.iter().enumerate().all(|(i, n)| map[&n[..]] == i));
    }
}
