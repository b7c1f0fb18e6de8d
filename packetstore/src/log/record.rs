//! Log record encoding: pure functions from fields to bytes and back.
//!
//! A record is a 64-byte header, its extents (8 bytes each, PASTE's
//! {index:32, offset:16, length:16}), the application's key, and zero
//! padding to a multiple of 64 bytes, so no two records share a cache line.
//! Two CRC-32Cs make a record self-validating: `header_crc` over the header
//! (less the release mark) and the body, `data_crc` over the bytes its
//! extents name. A record is valid only when both match, so the record and
//! its data can be made durable by the same fence. Byte diagram:
//! `docs/format.md`.

use crate::limits::{CACHE_LINE_SIZE, KEY_SIZE_MAX, RECORD_EXTENTS_MAX, RECORD_SIZE_MAX};
pub use crate::pool::extent::Extent;
use crate::pool::layout::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

pub const RECORD_MAGIC: u32 = 0x4352_5350; // "PSRC" in little-endian bytes
pub const HEADER_SIZE: usize = 64;
pub const EXTENT_SIZE: usize = 8;
/// Kind 0 marks padding that skips to the end of the ring's lap.
pub const KIND_PAD: u16 = 0;
/// XORed with a record's lsn to form its release mark: no other value of
/// the word (zero, a torn mix, another record's mark) means "released".
pub const RELEASE_MAGIC: u64 = 0x5245_4c45_4153_4544; // "RELEASED"

pub const OFF_MAGIC: usize = 0;
pub const OFF_KIND: usize = OFF_MAGIC + 4;
pub const OFF_KEY_LEN: usize = OFF_KIND + 2;
pub const OFF_LSN: usize = OFF_KEY_LEN + 2;
pub const OFF_COMMIT_LSN: usize = OFF_LSN + 8;
pub const OFF_EXTENT_COUNT: usize = OFF_COMMIT_LSN + 8;
pub const OFF_RECORD_LEN: usize = OFF_EXTENT_COUNT + 4;
pub const OFF_DATA_LEN: usize = OFF_RECORD_LEN + 4;
pub const OFF_TAG: usize = OFF_DATA_LEN + 8;
pub const OFF_DATA_CRC: usize = OFF_TAG + 8;
pub const OFF_HEADER_CRC: usize = OFF_DATA_CRC + 4;
pub const OFF_RELEASE_MARK: usize = OFF_HEADER_CRC + 4;
const _: () = assert!(OFF_RELEASE_MARK == 56 && OFF_RELEASE_MARK + 8 == HEADER_SIZE);
const _: () = assert!(OFF_LSN % 8 == 0 && OFF_RELEASE_MARK % 8 == 0);

/// The fields of a record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: u16,
    pub key_len: u16,
    pub lsn: u64,
    pub commit_lsn: u64,
    pub extent_count: u32,
    pub record_len: u32,
    pub data_len: u64,
    pub tag: u64,
    pub data_crc: u32,
    pub header_crc: u32,
    pub release_mark: u64,
}

/// The size in the log of a record with these extents and key.
pub fn record_len(extent_count: usize, key_len: usize) -> usize {
    (HEADER_SIZE + extent_count * EXTENT_SIZE + key_len).div_ceil(CACHE_LINE_SIZE) * CACHE_LINE_SIZE
}

/// Encodes a record into `out` (cleared first). `data_crc` is the CRC of
/// the extents' bytes; `data_len` their total length.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    out: &mut Vec<u8>,
    kind: u16,
    lsn: u64,
    commit_lsn: u64,
    tag: u64,
    key: &[u8],
    extents: &[Extent],
    data_len: u64,
    data_crc: u32,
) {
    assert!(key.len() <= KEY_SIZE_MAX && extents.len() <= RECORD_EXTENTS_MAX);
    let len = record_len(extents.len(), key.len());
    out.clear();
    out.resize(len, 0);
    put_u32(out, OFF_MAGIC, RECORD_MAGIC);
    put_u16(out, OFF_KIND, kind);
    put_u16(out, OFF_KEY_LEN, key.len() as u16);
    put_u64(out, OFF_LSN, lsn);
    put_u64(out, OFF_COMMIT_LSN, commit_lsn);
    put_u32(out, OFF_EXTENT_COUNT, extents.len() as u32);
    put_u32(out, OFF_RECORD_LEN, len as u32);
    put_u64(out, OFF_DATA_LEN, data_len);
    put_u64(out, OFF_TAG, tag);
    put_u32(out, OFF_DATA_CRC, data_crc);
    let mut at = HEADER_SIZE;
    for extent in extents {
        put_u32(out, at, extent.buffer);
        put_u16(out, at + 4, extent.offset);
        put_u16(out, at + 6, extent.len);
        at += EXTENT_SIZE;
    }
    out[at..at + key.len()].copy_from_slice(key);
    let crc = header_crc(out);
    put_u32(out, OFF_HEADER_CRC, crc);
    // The release mark (bytes 56..64) stays zero: live.
}

/// The CRC protecting a record: header bytes before the CRC field, then the
/// body (extents and key) and its padding.
pub fn header_crc(record: &[u8]) -> u32 {
    let crc = crate::util::crc::crc32c(&record[..OFF_HEADER_CRC]);
    crate::util::crc::crc32c_append(crc, &record[HEADER_SIZE..])
}

/// Decodes the 64-byte header and checks what it can alone: magic and the
/// sizes (so the caller knows how many bytes of body to read, bounded).
pub fn decode_header(line: &[u8]) -> Result<RecordHeader, &'static str> {
    assert!(line.len() >= HEADER_SIZE);
    if get_u32(line, OFF_MAGIC) != RECORD_MAGIC {
        return Err("bad magic");
    }
    let header = RecordHeader {
        kind: get_u16(line, OFF_KIND),
        key_len: get_u16(line, OFF_KEY_LEN),
        lsn: get_u64(line, OFF_LSN),
        commit_lsn: get_u64(line, OFF_COMMIT_LSN),
        extent_count: get_u32(line, OFF_EXTENT_COUNT),
        record_len: get_u32(line, OFF_RECORD_LEN),
        data_len: get_u64(line, OFF_DATA_LEN),
        tag: get_u64(line, OFF_TAG),
        data_crc: get_u32(line, OFF_DATA_CRC),
        header_crc: get_u32(line, OFF_HEADER_CRC),
        release_mark: get_u64(line, OFF_RELEASE_MARK),
    };
    let len = header.record_len as usize;
    if len < HEADER_SIZE || len % CACHE_LINE_SIZE != 0 || len > RECORD_SIZE_MAX {
        return Err("bad record length");
    }
    if header.kind != KIND_PAD {
        if header.key_len as usize > KEY_SIZE_MAX || header.extent_count as usize > RECORD_EXTENTS_MAX {
            return Err("key or extent count over the limit");
        }
        if len != record_len(header.extent_count as usize, header.key_len as usize) {
            return Err("record length disagrees with its contents");
        }
    } else if header.key_len != 0 || header.extent_count != 0 {
        return Err("padding with contents");
    }
    if header.commit_lsn > header.lsn {
        return Err("commit lsn after the record's own lsn");
    }
    Ok(header)
}

/// How many bytes from the record's start its header CRC covers: all of a
/// record, but only the header of padding (the rest of the lap is not its).
pub fn checked_len(header: &RecordHeader) -> usize {
    if header.kind == KIND_PAD {
        HEADER_SIZE
    } else {
        header.record_len as usize
    }
}

/// The extents of a full, CRC-checked record.
pub fn extents<'a>(record: &'a [u8], header: &RecordHeader) -> impl Iterator<Item = Extent> + Clone + 'a {
    let count = header.extent_count as usize;
    (0..count).map(move |i| {
        let at = HEADER_SIZE + i * EXTENT_SIZE;
        Extent { buffer: get_u32(record, at), offset: get_u16(record, at + 4), len: get_u16(record, at + 6) }
    })
}

/// The key of a full, CRC-checked record.
pub fn key<'a>(record: &'a [u8], header: &RecordHeader) -> &'a [u8] {
    let at = HEADER_SIZE + header.extent_count as usize * EXTENT_SIZE;
    &record[at..at + header.key_len as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arbitrary_extent() -> impl Strategy<Value = Extent> {
        (any::<u32>(), any::<u16>(), 1..=u16::MAX).prop_map(|(buffer, offset, len)| Extent { buffer, offset, len })
    }

    proptest! {
        #[test]
        fn records_round_trip(
            kind in 1..=u16::MAX,
            lsn in 0..u64::MAX / 2,
            behind in 0..1000u64,
            tag in any::<u64>(),
            key in proptest::collection::vec(any::<u8>(), 0..=KEY_SIZE_MAX),
            extents in proptest::collection::vec(arbitrary_extent(), 0..40),
            data_len in any::<u64>(),
            data_crc in any::<u32>(),
        ) {
            let commit_lsn = lsn.saturating_sub(behind);
            let mut bytes = Vec::new();
            encode(&mut bytes, kind, lsn, commit_lsn, tag, &key, &extents, data_len, data_crc);
            prop_assert_eq!(bytes.len(), record_len(extents.len(), key.len()));
            prop_assert_eq!(bytes.len() % 64, 0);
            let header = decode_header(&bytes).unwrap();
            prop_assert_eq!(header.header_crc, header_crc(&bytes));
            prop_assert_eq!((header.kind, header.lsn, header.commit_lsn, header.tag), (kind, lsn, commit_lsn, tag));
            prop_assert_eq!((header.data_len, header.data_crc, header.release_mark), (data_len, data_crc, 0));
            prop_assert_eq!(super::key(&bytes, &header), &key[..]);
            prop_assert_eq!(super::extents(&bytes, &header).collect::<Vec<_>>(), extents);
        }

        #[test]
        fn any_flipped_bit_outside_the_release_mark_is_detected(
            key in proptest::collection::vec(any::<u8>(), 0..100),
            extents in proptest::collection::vec(arbitrary_extent(), 1..10),
            bit in any::<prop::sample::Index>(),
        ) {
            let mut bytes = Vec::new();
            encode(&mut bytes, 7, 4096, 64, 9, &key, &extents, 100, 0xabcd);
            let bit = bit.index(bytes.len() * 8);
            prop_assume!(!(OFF_RELEASE_MARK * 8..HEADER_SIZE * 8).contains(&bit));
            bytes[bit / 8] ^= 1 << (bit % 8);
            let still_valid = decode_header(&bytes).is_ok_and(|h| h.header_crc == header_crc(&bytes));
            prop_assert!(!still_valid, "bit {} flipped unnoticed", bit);
        }
    }
}
