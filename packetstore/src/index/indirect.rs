//! Index buffers: the extent list of a value too fragmented for a leaf (a
//! 64 MiB value received into 2 KiB buffers names 32,768 extents), written
//! as a chain of pool buffers that the tree's leaf points to
//! (`Value::Indirect`).
//!
//! ```text
//! 0       4       6          8      12    16
//! | magic | count | reserved | next | crc | count extents of 8 bytes ...
//! ```
//! `next` is the following index buffer (`NONE` ends the chain); `crc` is
//! a CRC-32C over the header (with the crc field zero) and the extents.
//!
//! Invariant: a chain is written once (into freshly allocated buffers),
//! made durable with the tree version that first references it, and never
//! modified; reading it checks every buffer's magic, CRC and bounds, and
//! that the chain names exactly the extent count its leaf says, so a damaged
//! chain is an error, never a wrong value.

use crate::error::BufferError;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::pool::layout::{get_u16, get_u32, put_u16, put_u32};

pub const INDEX_MAGIC: u32 = 0x5849_5350; // "PSIX"
pub const INDEX_HEADER_SIZE: usize = 16;
/// The end of a chain.
pub const NONE: u32 = u32::MAX;
const OFF_COUNT: usize = 4;
const OFF_NEXT: usize = 8;
const OFF_CRC: usize = 12;

/// Extents one index buffer holds.
pub fn per_buffer(buffer_size: u32) -> usize {
    (buffer_size as usize - INDEX_HEADER_SIZE) / 8
}

/// Index buffers a chain of `count` extents needs.
pub fn buffers_needed(count: usize, buffer_size: u32) -> usize {
    count.div_ceil(per_buffer(buffer_size))
}

/// Writes `extents` into freshly allocated index buffers (one reference
/// each, the caller's) and returns them, head first. Nothing is flushed:
/// the caller flushes them before anything durable points at the head.
pub fn write_chain(pool: &Pool, buffers: &mut Buffers, extents: &[Extent]) -> Result<Vec<u32>, BufferError> {
    let size = pool.geometry().buffer_size;
    let per = per_buffer(size);
    let needed = buffers_needed(extents.len(), size);
    let mut chain = Vec::with_capacity(needed);
    for _ in 0..needed {
        match buffers.allocate() {
            Ok(buffer) => chain.push(buffer),
            Err(error) => {
                for buffer in chain {
                    buffers.release(buffer).expect("allocated above");
                }
                return Err(error);
            }
        }
    }
    let mut bytes = vec![0u8; size as usize];
    for (i, chunk) in extents.chunks(per).enumerate() {
        bytes.fill(0);
        put_u32(&mut bytes, 0, INDEX_MAGIC);
        put_u16(&mut bytes, OFF_COUNT, chunk.len() as u16);
        put_u32(&mut bytes, OFF_NEXT, chain.get(i + 1).copied().unwrap_or(NONE));
        for (j, extent) in chunk.iter().enumerate() {
            let at = INDEX_HEADER_SIZE + 8 * j;
            put_u32(&mut bytes, at, extent.buffer);
            put_u16(&mut bytes, at + 4, extent.offset);
            put_u16(&mut bytes, at + 6, extent.len);
        }
        let used = INDEX_HEADER_SIZE + 8 * chunk.len();
        let crc = crate::util::crc::crc32c(&bytes[..used]);
        put_u32(&mut bytes, OFF_CRC, crc);
        pool.write(pool.buffer_offset(chain[i]), &bytes[..used]);
    }
    Ok(chain)
}

/// Reads the chain at `head` that must name `count` extents: its index
/// buffers and the extents, checked.
pub fn read_chain(pool: &Pool, head: u32, count: u32) -> Result<(Vec<u32>, Vec<Extent>), String> {
    read_chain_from(pool.geometry(), head, count, |buffer, bytes| pool.read(pool.buffer_offset(buffer), bytes))
}

/// `read_chain` over any copy of the pool's buffers (`read` fills a
/// buffer's bytes: a one-sided reader's mapping, for instance).
pub fn read_chain_from(
    geometry: crate::pool::layout::Geometry,
    head: u32,
    count: u32,
    mut read: impl FnMut(u32, &mut [u8]),
) -> Result<(Vec<u32>, Vec<Extent>), String> {
    let per = per_buffer(geometry.buffer_size);
    let expected_buffers = (count as usize).div_ceil(per);
    // The chain's buffers are the pool's: a count the pool cannot hold is
    // refused before anything is allocated for it.
    if expected_buffers > geometry.buffer_count as usize {
        return Err(format!("index chain at {head}: {count} extents need more index buffers than the pool has"));
    }
    let mut chain = Vec::with_capacity(expected_buffers);
    let mut extents = Vec::with_capacity(count as usize);
    let mut next = head;
    let mut bytes = vec![0u8; geometry.buffer_size as usize];
    while next != NONE {
        if chain.len() >= expected_buffers {
            return Err(format!("index chain at {head} is longer than its {count} extents need"));
        }
        if next >= geometry.buffer_count {
            return Err(format!("index buffer {next} is beyond the pool"));
        }
        read(next, &mut bytes);
        let stored = get_u32(&bytes, OFF_CRC);
        let n = usize::from(get_u16(&bytes, OFF_COUNT));
        if get_u32(&bytes, 0) != INDEX_MAGIC || n == 0 || n > per {
            return Err(format!("index buffer {next} is not an index (bad magic or count)"));
        }
        let used = INDEX_HEADER_SIZE + 8 * n;
        put_u32(&mut bytes, OFF_CRC, 0);
        if crate::util::crc::crc32c(&bytes[..used]) != stored {
            return Err(format!("index buffer {next}: checksum mismatch"));
        }
        for j in 0..n {
            let at = INDEX_HEADER_SIZE + 8 * j;
            let extent =
                Extent { buffer: get_u32(&bytes, at), offset: get_u16(&bytes, at + 4), len: get_u16(&bytes, at + 6) };
            extent.check(geometry.buffer_count, geometry.buffer_size)?;
            extents.push(extent);
        }
        chain.push(next);
        next = get_u32(&bytes, OFF_NEXT);
    }
    if extents.len() != count as usize {
        return Err(format!("index chain at {head} names {} extents, its leaf says {count}", extents.len()));
    }
    Ok((chain, extents))
}
