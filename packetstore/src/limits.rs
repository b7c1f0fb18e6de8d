//! Every limit of the library in one place, fixed at compile time.
//!
//! Sizes are in bytes unless the name says otherwise. Each limit is checked
//! where data enters (pool creation, record append, recovery), so a value
//! read from disk or from the network can never exceed it unnoticed.

/// The size of one cache line, the unit of flushing and of the log's layout.
pub const CACHE_LINE_SIZE: usize = 64;

/// The page size assumed by the layout. Regions start on page boundaries so
/// that msync ranges and page-cache write-back never straddle two regions.
pub const PAGE_SIZE: u64 = 4096;

/// Slots of the tree's finder, the DRAM cache from a key to its leaf
/// (`index/tree/finder.rs`): 16 bytes each, as many as the tree's keys up to
/// this (64 MiB); beyond it, the keys that find no slot are descended to.
/// (Its other part, an 8-byte epoch per buffer, is 0.4% of a pool of 2 KiB
/// buffers.)
pub const FINDER_SLOTS_MAX: usize = 1 << 22;

/// The pool header occupies the first page of the file.
pub const HEADER_REGION_SIZE: u64 = PAGE_SIZE;

/// Buffers are a power of two between these sizes. The upper bound keeps an
/// extent's offset and length in 16 bits (PASTE's 8-byte extent).
pub const BUFFER_SIZE_MIN: u32 = 512;
pub const BUFFER_SIZE_MAX: u32 = 32 * 1024;
pub const BUFFER_SIZE_DEFAULT: u32 = 2048;

/// A pool holds at least this many buffers.
pub const BUFFER_COUNT_MIN: u32 = 16;

/// The log region: a multiple of the page size within these bounds.
pub const LOG_SIZE_MIN: u64 = 16 * 1024;
pub const LOG_SIZE_MAX: u64 = 64 * 1024 * 1024 * 1024;
pub const LOG_SIZE_DEFAULT: u64 = 64 * 1024 * 1024;

/// The largest pool file: 16 TiB. Larger pools are refused at creation.
pub const POOL_SIZE_MAX: u64 = 16 * 1024 * 1024 * 1024 * 1024;

/// Logs one pool may hold (one per event loop).
pub const LOG_COUNT_MAX: u32 = 64;

/// An application key stored inline in a log record.
pub const KEY_SIZE_MAX: usize = 512;

/// Extents one record may name: with 32 KiB buffers, 2 GiB of data.
pub const RECORD_EXTENTS_MAX: usize = 65_536;

/// The largest record in the log (header, extents, key, padding).
pub const RECORD_SIZE_MAX: usize = 64 + RECORD_EXTENTS_MAX * 8 + KEY_SIZE_MAX + CACHE_LINE_SIZE;

/// Bytes of log that may be appended between two commits. Recovery looks at
/// most this far past the end of the log for records of the batch that was
/// in flight when power failed, so this bounds recovery's extra work.
pub const LOG_BATCH_SIZE_MAX: u64 = 8 * 1024 * 1024;

/// References one buffer may hold (records naming it plus the owner's own).
pub const BUFFER_REFS_MAX: u16 = u16::MAX;

/// The emulated fence latency an operator may ask for (10 ms).
pub const FENCE_LATENCY_NS_MAX: u64 = 10_000_000;

const _: () = assert!(BUFFER_SIZE_MAX <= 1 << 15, "extent offsets and lengths are 16-bit");
const _: () = assert!(BUFFER_SIZE_MIN.is_power_of_two() && BUFFER_SIZE_MAX.is_power_of_two());
const _: () = assert!(LOG_SIZE_MIN % PAGE_SIZE == 0 && LOG_SIZE_DEFAULT % PAGE_SIZE == 0);
const _: () = assert!((RECORD_SIZE_MAX as u64) * 2 <= LOG_BATCH_SIZE_MAX);
