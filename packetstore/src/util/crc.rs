//! CRC-32C (Castagnoli) for the short inputs of the request path: a log
//! record's header and body (~64 bytes), a value kept inline in a leaf
//! (up to a few hundred bytes), a record's data.
//!
//! The `crc32c` crate is right for long inputs (three interleaved streams
//! and a table to combine them), but on a 48-byte header it spends most of
//! its ~150 instructions on splitting the input by alignment and on two
//! empty interleaved passes (issue 36: a SET's three CRCs were 5% of its
//! instructions). Here an input under `SHORT_MAX` bytes runs one
//! `crc32` instruction per 8 bytes, unaligned loads, then the tail;
//! longer inputs, and CPUs without SSE 4.2, go to the crate.
//!
//! Invariant: `crc32c_append(crc, data)` equals the crate's for every
//! `crc` and `data` (a property test below compares them); the persistent
//! formats name CRC-32C, not this code.

/// Inputs at or above this go to the crate's interleaved loop.
const SHORT_MAX: usize = 512;

/// CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_append(0, data)
}

/// CRC-32C of what `crc` covered followed by `data` (as `crc32c::crc32c_append`).
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if data.len() < SHORT_MAX && std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE 4.2 (checked just above).
            return unsafe { short_sse42(crc, data) };
        }
    }
    crc32c::crc32c_append(crc, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn short_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut state = u64::from(!crc);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks_exact(8) yields 8 bytes"));
        state = _mm_crc32_u64(state, word);
    }
    let mut state = state as u32;
    for &byte in words.remainder() {
        state = _mm_crc32_u8(state, byte);
    }
    !state
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers() {
        // RFC 3720 B.4: 32 bytes of zeros, and "123456789" (the check value).
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn every_length_around_the_short_limit_matches_the_crate() {
        let data: Vec<u8> = (0..SHORT_MAX * 2 + 9).map(|i| (i * 131 + 7) as u8).collect();
        for start in 0..9 {
            for len in 0..data.len() - start {
                let slice = &data[start..start + len];
                assert_eq!(
                    crc32c_append(0x1234_5678, slice),
                    crc32c::crc32c_append(0x1234_5678, slice),
                    "{start} {len}"
                );
            }
        }
    }

    proptest! {
        #[test]
        fn matches_the_crate(crc in any::<u32>(), data in proptest::collection::vec(any::<u8>(), 0..1200), split in 0usize..1200) {
            prop_assert_eq!(crc32c_append(crc, &data), crc32c::crc32c_append(crc, &data));
            let split = split.min(data.len());
            prop_assert_eq!(crc32c_append(crc32c(&data[..split]), &data[split..]), crc32c::crc32c(&data));
        }
    }
}
