//! Redis Cluster's hash slots and which shard of a data set owns each.
//!
//! A key belongs to one of Redis Cluster's 16,384 hash slots: CRC16
//! (XMODEM) of the key, or of its hash tag (the bytes between the first
//! `{` and the next `}`, when there are any), modulo 16,384, exactly as
//! Redis computes it (`cluster.c` `keyHashSlot`). Shard `i` of `n` owns the
//! contiguous slot range `[i * 16384 / n, (i + 1) * 16384 / n)`: every shard
//! of a data set, and every one-sided reader of it, computes the same owner
//! for a key; the ranges are fixed by the shard count recorded in each
//! shard's pool header.
//!
//! Owns: the slot function and the shards' slot ranges.
//!
//! Invariant: `owner(slot)` lies in `0..shards` and is the one shard whose
//! `slot_range` holds `slot`; the ranges cover every slot exactly once.

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
