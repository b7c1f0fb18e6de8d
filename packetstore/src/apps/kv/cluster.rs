//! Hash slots and the Redis Cluster view of a sharded server.
//!
//! A key belongs to one of Redis Cluster's 16,384 hash slots: CRC16
//! (XMODEM) of the key, or of its hash tag (the bytes between the first
//! `{` and the next `}`, when there are any), modulo 16,384, exactly as
//! Redis computes it (`cluster.c` `keyHashSlot`). Shard `i` of `n` owns the
//! contiguous slot range `[i * 16384 / n, (i + 1) * 16384 / n)`: every shard
//! of a data set computes the same owner for a key, and the ranges are
//! fixed by the shard count recorded in each shard's pool header.
//!
//! Owns: the slot function, the shards' slot ranges, and what a cluster
//! port tells a client (node ids, endpoints).
//!
//! Invariant: `owner(slot)` lies in `0..shards` and is the one shard whose
//! `slot_range` holds `slot`; the ranges cover every slot exactly once.

use std::net::IpAddr;

/// Redis Cluster's hash slots.
pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no
/// reflection), Redis's `crc16`.
const CRC16_TABLE: [u16; 256] = crc16_table();

const fn crc16_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = (byte as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
}

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ b)])
}

/// The hash slot of `key` (Redis's `keyHashSlot`): only the hash tag is
/// hashed when the key has a non-empty one.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) & (SLOTS - 1)
}

/// The shard of `shards` that owns `slot`.
pub fn owner(slot: u16, shards: u16) -> u16 {
    assert!(shards > 0 && slot < SLOTS, "slot {slot} of {shards} shards");
    let shard = (u32::from(slot) * u32::from(shards) / u32::from(SLOTS)) as u16;
    debug_assert!(slot_range(shard, shards).contains(&slot));
    shard
}

/// The slots shard `shard` of `shards` owns.
pub fn slot_range(shard: u16, shards: u16) -> std::ops::Range<u16> {
    assert!(shard < shards, "shard {shard} of {shards}");
    let start = |i: u16| (u32::from(i) * u32::from(SLOTS)).div_ceil(u32::from(shards)) as u16;
    let end = if shard + 1 == shards { SLOTS } else { start(shard + 1) };
    start(shard)..end
}

/// What a sharded server's cluster ports tell clients: every shard is a
/// Redis Cluster master of its slot range, reached on its own port.
#[derive(Clone, Debug)]
pub struct ClusterView {
    /// This server's shard, and how many there are.
    pub shard: u16,
    pub shards: u16,
    /// The data set's id (shard 0's pool creation id): node ids derive
    /// from it, so they stay the same across restarts.
    pub set_id: u128,
    /// The address clients reach the cluster ports at, and each shard's
    /// port (index: shard).
    pub host: IpAddr,
    pub ports: Vec<u16>,
    /// The event loop's index of this shard's cluster listener.
    pub listener: usize,
}

impl ClusterView {
    /// Shard `shard`'s node id: 40 hex digits, as Redis's.
    pub fn node_id(&self, shard: u16) -> String {
        let mixed = self.set_id ^ (u128::from(shard) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
        format!("{mixed:032x}{:08x}", u32::from(shard))
    }

    /// `host:port` of shard `shard` (a MOVED reply's address).
    pub fn endpoint(&self, shard: u16) -> String {
        format!("{}:{}", self.host, self.ports[usize::from(shard)])
    }

    /// Whether a connection of `listener` has its commands for another
    /// shard's keys relayed there: the main Redis port's, with more than
    /// one shard (`shard_link.rs`).
    pub fn relays(&self, listener: usize) -> bool {
        self.shards > 1 && listener == crate::apps::kv::LISTENER_RESP
    }

    pub fn owns(&self, slot: u16) -> bool {
        owner(slot, self.shards) == self.shard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from Redis's cluster specification and redis-cli.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"123456789"), 12739);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // An empty tag hashes the whole key; only the first tag counts.
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") & 16383);
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        assert_eq!(key_slot(b""), 0);
    }

    #[test]
    fn ranges_cover_every_slot_once() {
        for shards in [1u16, 2, 3, 5, 7, 8, 16, 64] {
            let mut next = 0;
            for shard in 0..shards {
                let range = slot_range(shard, shards);
                assert_eq!(range.start, next, "{shards} shards");
                assert!(!range.is_empty());
                for slot in range.clone() {
                    assert_eq!(owner(slot, shards), shard);
                }
                next = range.end;
            }
            assert_eq!(next, SLOTS);
        }
        assert_eq!(slot_range(0, 3), 0..5462);
        assert_eq!(slot_range(1, 3), 5462..10923);
    }
}
