//! The pool file's layout: the geometry, the header that records it, and the
//! offsets of every region, all pure functions of the header.
//!
//! Invariant: the layout of a pool is computed only from its header, so the
//! same file always opens to the same buffers (PASTE's deterministic Ppool).
//! The header is written once, at creation, and never modified afterwards:
//! there is no mutable state in it to tear. That holds for the pool's kind
//! too (version 3): an old pool that records none is never rewritten to
//! claim one (`kind.rs`, `store/claim.rs`). See `docs/format.md`.
//!
//! ```text
//! 0          4096                4096+log_size (rounded up to 4 KiB)
//! | header   | log region         | buffer 0 | buffer 1 | ... | buffer n-1 |
//! ```

use crate::limits::*;
use crate::pool::kind::{PoolKind, POOL_KIND_VALUE_MAX};

pub const POOL_MAGIC: [u8; 8] = *b"PKTSTPOL";
/// Version 3 records the pool's kind; version 2 added `log_count`.
pub const FORMAT_VERSION: u32 = 3;
/// Oldest version this build opens (version 1 had one log, no log count).
pub const FORMAT_VERSION_MIN: u32 = 1;
/// The first version whose header records the pool's kind.
pub const FORMAT_VERSION_KIND: u32 = 3;

// Header field offsets, chained so that a change to one moves the rest.
pub const HDR_MAGIC: usize = 0;
pub const HDR_VERSION: usize = HDR_MAGIC + 8;
pub const HDR_HEADER_SIZE: usize = HDR_VERSION + 4;
pub const HDR_BUFFER_SIZE: usize = HDR_HEADER_SIZE + 4;
pub const HDR_BUFFER_COUNT: usize = HDR_BUFFER_SIZE + 4;
pub const HDR_LOG_OFFSET: usize = HDR_BUFFER_COUNT + 4;
pub const HDR_LOG_SIZE: usize = HDR_LOG_OFFSET + 8;
pub const HDR_BUFFERS_OFFSET: usize = HDR_LOG_SIZE + 8;
pub const HDR_FILE_SIZE: usize = HDR_BUFFERS_OFFSET + 8;
pub const HDR_CREATION_ID: usize = HDR_FILE_SIZE + 8;
pub const HDR_CREATED_UNIX_NS: usize = HDR_CREATION_ID + 16;
pub const HDR_LOG_COUNT: usize = HDR_CREATED_UNIX_NS + 8;
pub const HDR_KIND: usize = HDR_LOG_COUNT + 4;
pub const HDR_SHARD: usize = HDR_KIND + 4;
pub const HDR_SHARDS: usize = HDR_SHARD + 2;
pub const HDR_SET_ID: usize = HDR_SHARDS + 2;
pub const HDR_RESERVED: usize = HDR_SET_ID + 16;
pub const HDR_CRC: usize = 124;
/// Bytes of the header that carry meaning; the rest of its page is zero.
pub const HDR_SIZE: usize = HDR_CRC + 4;

const _: () = assert!(HDR_RESERVED <= HDR_CRC);
const _: () = assert!(HDR_SIZE as u64 <= HEADER_REGION_SIZE);
const _: () = assert!(HDR_CREATION_ID % 8 == 0 && HDR_LOG_OFFSET % 8 == 0);
const _: () = assert!(HDR_KIND == 84 && HDR_SHARD == 88, "docs/format.md draws the kind at 84, the shard at 88");
const _: () = assert!(HDR_SET_ID == 92 && HDR_RESERVED == 108, "docs/format.md draws the data set's id at 92");

/// What a caller chooses when creating a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub buffer_size: u32,
    pub buffer_count: u32,
    /// The whole log region, shared equally by `log_count` logs.
    pub log_size: u64,
    /// Independent logs (one per event loop); each owns an equal slice of
    /// the log region and of the buffers.
    pub log_count: u32,
}

impl Geometry {
    /// The geometry that fills a file of `file_size` bytes with buffers of
    /// `buffer_size` after a log of `log_size`.
    pub fn for_file_size(file_size: u64, buffer_size: u32, log_size: u64) -> Result<Geometry, String> {
        let buffers_offset = buffers_offset(log_size);
        if file_size <= buffers_offset {
            return Err(format!("{file_size} bytes leave no room for buffers after a {log_size}-byte log"));
        }
        if buffer_size == 0 {
            return Err("buffer size 0".into());
        }
        let count = (file_size - buffers_offset) / u64::from(buffer_size);
        let buffer_count = u32::try_from(count).map_err(|_| format!("{count} buffers exceed the 32-bit index"))?;
        let geometry = Geometry { buffer_size, buffer_count, log_size, log_count: 1 };
        geometry.validate()?;
        Ok(geometry)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !self.buffer_size.is_power_of_two() || !(BUFFER_SIZE_MIN..=BUFFER_SIZE_MAX).contains(&self.buffer_size) {
            return Err(format!(
                "buffer size {} is not a power of two in {BUFFER_SIZE_MIN}..={BUFFER_SIZE_MAX}",
                self.buffer_size
            ));
        }
        if self.buffer_count < BUFFER_COUNT_MIN {
            return Err(format!("{} buffers is fewer than {BUFFER_COUNT_MIN}", self.buffer_count));
        }
        if self.log_size % PAGE_SIZE != 0 || !(LOG_SIZE_MIN..=LOG_SIZE_MAX).contains(&self.log_size) {
            return Err(format!(
                "log size {} is not a multiple of {PAGE_SIZE} in {LOG_SIZE_MIN}..={LOG_SIZE_MAX}",
                self.log_size
            ));
        }
        if !(1..=LOG_COUNT_MAX).contains(&self.log_count) {
            return Err(format!("{} logs is not in 1..={LOG_COUNT_MAX}", self.log_count));
        }
        if self.log_region_size() < LOG_SIZE_MIN {
            return Err(format!(
                "a {}-byte log region split {} ways leaves less than {LOG_SIZE_MIN} bytes per log",
                self.log_size, self.log_count
            ));
        }
        if self.buffer_count / self.log_count < BUFFER_COUNT_MIN {
            return Err(format!(
                "{} buffers split {} ways leaves fewer than {BUFFER_COUNT_MIN} each",
                self.buffer_count, self.log_count
            ));
        }
        let file_size = self.file_size();
        if file_size > POOL_SIZE_MAX {
            return Err(format!("pool of {file_size} bytes exceeds the {POOL_SIZE_MAX}-byte limit"));
        }
        Ok(())
    }

    pub fn log_offset(&self) -> u64 {
        HEADER_REGION_SIZE
    }

    pub fn buffers_offset(&self) -> u64 {
        buffers_offset(self.log_size)
    }

    pub fn file_size(&self) -> u64 {
        self.buffers_offset() + u64::from(self.buffer_size) * u64::from(self.buffer_count)
    }

    /// The bytes of each log: an equal share of the log region, in pages.
    pub fn log_region_size(&self) -> u64 {
        self.log_size / u64::from(self.log_count) / PAGE_SIZE * PAGE_SIZE
    }

    /// Log `index`'s ring of records, after its anchor: `(offset, size)`.
    /// Record `lsn` starts at `offset + lsn % size`.
    pub fn log_ring(&self, index: u32) -> (u64, u64) {
        (self.log_region_offset(index) + ANCHOR_SIZE, self.log_region_size() - ANCHOR_SIZE)
    }

    /// The file offset of log `index`.
    pub fn log_region_offset(&self, index: u32) -> u64 {
        assert!(index < self.log_count, "log {index} of {}", self.log_count);
        self.log_offset() + u64::from(index) * self.log_region_size()
    }

    /// The buffers log `index` owns: `(first, count)`, an equal share.
    pub fn buffer_range(&self, index: u32) -> (u32, u32) {
        assert!(index < self.log_count, "log {index} of {}", self.log_count);
        let share = |i: u32| (u64::from(self.buffer_count) * u64::from(i) / u64::from(self.log_count)) as u32;
        (share(index), share(index + 1) - share(index))
    }

    /// The file offset of buffer `index`.
    #[inline]
    pub fn buffer_offset(&self, index: u32) -> u64 {
        debug_assert!(index < self.buffer_count);
        self.buffers_offset() + u64::from(index) * u64::from(self.buffer_size)
    }
}

impl std::fmt::Display for Geometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} buffers of {} B, log {} B", self.buffer_count, self.buffer_size, self.log_size)?;
        if self.log_count > 1 {
            write!(f, " in {} logs", self.log_count)?;
        }
        Ok(())
    }
}

fn buffers_offset(log_size: u64) -> u64 {
    (HEADER_REGION_SIZE + log_size).div_ceil(PAGE_SIZE) * PAGE_SIZE
}

/// The decoded pool header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub geometry: Geometry,
    pub creation_id: u128,
    pub created_unix_ns: u64,
    /// The format version the file was written with (this build writes
    /// `FORMAT_VERSION`; it reads back to `FORMAT_VERSION_MIN`).
    pub version: u32,
    /// What the pool is for (version 3); `Unset` in older versions.
    pub kind: PoolKind,
    /// Which shard of a sharded data set it holds (None: the whole data
    /// set; those bytes were zero before shards existed).
    pub shard: Option<ShardId>,
}

/// A pool's place in a sharded data set: shard `index` of `count`, all of
/// them made together with the same random `set_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardId {
    pub index: u16,
    pub count: u16,
    pub set_id: u128,
}

/// Shard `index`'s pool file in the data set whose first file (shard 0's)
/// is `first`: `first` itself, then `kv.1.pool`, `kv.2.pool`, ... beside it.
pub fn shard_path(first: &std::path::Path, index: u16) -> std::path::PathBuf {
    if index == 0 {
        return first.to_path_buf();
    }
    let stem = first.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match first.extension() {
        Some(ext) => format!("{stem}.{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index}"),
    };
    first.with_file_name(name)
}

/// Why a header was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderError {
    BadMagic,
    UnsupportedVersion(u32),
    BadChecksum {
        stored: u32,
        computed: u32,
    },
    BadGeometry(String),
    /// A kind value this build does not know (a later build's kind).
    UnknownKind(u32),
}

impl Header {
    pub fn encode(&self) -> [u8; HDR_SIZE] {
        let g = &self.geometry;
        let mut b = [0u8; HDR_SIZE];
        b[HDR_MAGIC..HDR_MAGIC + 8].copy_from_slice(&POOL_MAGIC);
        put_u32(&mut b, HDR_VERSION, FORMAT_VERSION);
        put_u32(&mut b, HDR_HEADER_SIZE, HEADER_REGION_SIZE as u32);
        put_u32(&mut b, HDR_BUFFER_SIZE, g.buffer_size);
        put_u32(&mut b, HDR_BUFFER_COUNT, g.buffer_count);
        put_u64(&mut b, HDR_LOG_OFFSET, g.log_offset());
        put_u64(&mut b, HDR_LOG_SIZE, g.log_size);
        put_u64(&mut b, HDR_BUFFERS_OFFSET, g.buffers_offset());
        put_u64(&mut b, HDR_FILE_SIZE, g.file_size());
        b[HDR_CREATION_ID..HDR_CREATION_ID + 16].copy_from_slice(&self.creation_id.to_le_bytes());
        put_u64(&mut b, HDR_CREATED_UNIX_NS, self.created_unix_ns);
        put_u32(&mut b, HDR_LOG_COUNT, g.log_count);
        put_u32(&mut b, HDR_KIND, self.kind.as_u32());
        if let Some(shard) = self.shard {
            assert!(shard.index < shard.count, "shard {} of {}", shard.index, shard.count);
            b[HDR_SHARD..HDR_SHARD + 2].copy_from_slice(&shard.index.to_le_bytes());
            b[HDR_SHARDS..HDR_SHARDS + 2].copy_from_slice(&shard.count.to_le_bytes());
            b[HDR_SET_ID..HDR_SET_ID + 16].copy_from_slice(&shard.set_id.to_le_bytes());
        }
        let crc = crate::util::crc::crc32c(&b[..HDR_CRC]);
        put_u32(&mut b, HDR_CRC, crc);
        b
    }

    /// Decodes and checks a header: magic, version, checksum, then that the
    /// stored derived offsets agree with those computed from the geometry.
    pub fn decode(b: &[u8]) -> Result<Header, HeaderError> {
        if b.len() < HDR_SIZE || b[HDR_MAGIC..HDR_MAGIC + 8] != POOL_MAGIC {
            return Err(HeaderError::BadMagic);
        }
        let stored = get_u32(b, HDR_CRC);
        let computed = crate::util::crc::crc32c(&b[..HDR_CRC]);
        // The version is checked first so a future format with another
        // checksum is reported as a version problem, not as corruption.
        let version = get_u32(b, HDR_VERSION);
        if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&version) {
            return Err(HeaderError::UnsupportedVersion(version));
        }
        if stored != computed {
            return Err(HeaderError::BadChecksum { stored, computed });
        }
        let geometry = Geometry {
            buffer_size: get_u32(b, HDR_BUFFER_SIZE),
            buffer_count: get_u32(b, HDR_BUFFER_COUNT),
            log_size: get_u64(b, HDR_LOG_SIZE),
            // Version 1 had one log; its bytes here were reserved (zero).
            log_count: if version == 1 { 1 } else { get_u32(b, HDR_LOG_COUNT) },
        };
        if version == 1 && get_u32(b, HDR_LOG_COUNT) != 0 {
            return Err(HeaderError::BadGeometry("version 1 header with nonzero reserved bytes".into()));
        }
        let kind = decode_kind(b, version)?;
        geometry.validate().map_err(HeaderError::BadGeometry)?;
        let derived = [
            (u64::from(get_u32(b, HDR_HEADER_SIZE)), HEADER_REGION_SIZE, "header size"),
            (get_u64(b, HDR_LOG_OFFSET), geometry.log_offset(), "log offset"),
            (get_u64(b, HDR_BUFFERS_OFFSET), geometry.buffers_offset(), "buffers offset"),
            (get_u64(b, HDR_FILE_SIZE), geometry.file_size(), "file size"),
        ];
        for (stored, computed, name) in derived {
            if stored != computed {
                return Err(HeaderError::BadGeometry(format!(
                    "{name} {stored} disagrees with the geometry ({computed})"
                )));
            }
        }
        Ok(Header {
            geometry,
            creation_id: get_u128(b, HDR_CREATION_ID),
            created_unix_ns: get_u64(b, HDR_CREATED_UNIX_NS),
            version,
            kind,
            shard: decode_shard(b)?,
        })
    }
}

fn get_u128(b: &[u8], at: usize) -> u128 {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&b[at..at + 16]);
    u128::from_le_bytes(bytes)
}

/// The shard at `HDR_SHARD`: a count of 0 (every pool made before shards,
/// and every unsharded one) is the whole data set, with all of it zero.
fn decode_shard(b: &[u8]) -> Result<Option<ShardId>, HeaderError> {
    let index = u16::from_le_bytes([b[HDR_SHARD], b[HDR_SHARD + 1]]);
    let count = u16::from_le_bytes([b[HDR_SHARDS], b[HDR_SHARDS + 1]]);
    let set_id = get_u128(b, HDR_SET_ID);
    match count {
        0 if index == 0 && set_id == 0 => Ok(None),
        0 => Err(HeaderError::BadGeometry("an unsharded pool's shard bytes are not zero".into())),
        _ if index < count => Ok(Some(ShardId { index, count, set_id })),
        _ => Err(HeaderError::BadGeometry(format!("shard {index} of {count}"))),
    }
}

/// The kind at `HDR_KIND`: from version 3; in older versions those bytes
/// were reserved, so they must be zero, and the kind is `Unset`.
fn decode_kind(b: &[u8], version: u32) -> Result<PoolKind, HeaderError> {
    let value = get_u32(b, HDR_KIND);
    if version < FORMAT_VERSION_KIND {
        if value != 0 {
            return Err(HeaderError::BadGeometry(format!("version {version} header with nonzero reserved bytes")));
        }
        return Ok(PoolKind::Unset);
    }
    match PoolKind::from_u32(value) {
        Some(kind) => Ok(kind),
        None => {
            debug_assert!(value > POOL_KIND_VALUE_MAX);
            Err(HeaderError::UnknownKind(value))
        }
    }
}

#[inline]
pub(crate) fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
#[inline]
pub(crate) fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
#[inline]
pub(crate) fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

// The log anchor: the first cache line of each log region. The log owns
// its meaning (`log/ring.rs`); the pool writes the initial one when it
// formats a new file, so its encoding lives here, below both.

pub const ANCHOR_MAGIC: u64 = u64::from_le_bytes(*b"PSLOGANC");
/// The anchor: one cache line at the start of the log region.
pub const ANCHOR_SIZE: u64 = 64;
pub const ANCHOR_OFF_MAGIC: u64 = 0;
pub const ANCHOR_OFF_HEAD_LSN: u64 = 8;
pub const ANCHOR_OFF_COMMITTED_LSN: u64 = 16;

/// The anchor of a fresh log: magic, head 0, committed 0.
pub(crate) fn encode_initial_anchor(out: &mut [u8]) {
    out[..ANCHOR_SIZE as usize].fill(0);
    put_u64(out, ANCHOR_OFF_MAGIC as usize, ANCHOR_MAGIC);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            geometry: Geometry { buffer_size: 2048, buffer_count: 1000, log_size: LOG_SIZE_MIN, log_count: 1 },
            creation_id: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            created_unix_ns: 42,
            version: FORMAT_VERSION,
            kind: PoolKind::Wal,
            shard: None,
        }
    }

    #[test]
    fn header_round_trips() {
        let h = header();
        assert_eq!(Header::decode(&h.encode()), Ok(h));
        let sharded = Header { shard: Some(ShardId { index: 2, count: 3, set_id: 0xfeed << 64 | 7 }), ..h };
        let bytes = sharded.encode();
        assert_eq!(Header::decode(&bytes), Ok(sharded));
        assert_ne!(bytes, h.encode(), "the shard is in the bytes the CRC covers");
    }

    #[test]
    fn shard_bytes_are_checked() {
        let mut bytes = header().encode();
        bytes[HDR_SHARD] = 3;
        bytes[HDR_SHARDS] = 3; // shard 3 of 3
        let crc = crate::util::crc::crc32c(&bytes[..HDR_CRC]);
        bytes[HDR_CRC..HDR_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(Header::decode(&bytes), Err(HeaderError::BadGeometry(_))));
        bytes[HDR_SHARDS] = 0; // no count, yet an index
        let crc = crate::util::crc::crc32c(&bytes[..HDR_CRC]);
        bytes[HDR_CRC..HDR_CRC + 4].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(Header::decode(&bytes), Err(HeaderError::BadGeometry(_))));
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let bytes = header().encode();
        for bit in 0..HDR_SIZE * 8 {
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(Header::decode(&b).is_err(), "flipping bit {bit} went unnoticed");
        }
    }

    #[test]
    fn geometry_limits() {
        assert!(Geometry { buffer_size: 3000, buffer_count: 100, log_size: LOG_SIZE_MIN, log_count: 1 }
            .validate()
            .is_err());
        assert!(Geometry { buffer_size: 2048, buffer_count: 1, log_size: LOG_SIZE_MIN, log_count: 1 }
            .validate()
            .is_err());
        assert!(Geometry { buffer_size: 2048, buffer_count: 100, log_size: 1000, log_count: 1 }.validate().is_err());
        let g = Geometry::for_file_size(64 << 30, 2048, LOG_SIZE_DEFAULT).unwrap();
        assert!(g.file_size() <= 64 << 30 && g.file_size() > (64 << 30) - 2048);
        assert_eq!(g.buffers_offset() % PAGE_SIZE, 0);
    }
}
