//! A running server's pool, mapped read-only by a one-sided reader.
//!
//! Owns: the mapping, and every access to its bytes.
//!
//! Invariant: nothing of the pool is trusted: every offset a read follows
//! is checked against the mapping before a byte is read, so a damaged or
//! hostile pool gives an error, never a read out of bounds. The mapping is
//! `PROT_READ`: the reader cannot change the pool.

use std::io;
use std::path::Path;

use crate::pool::extent::Extent;
use crate::pool::layout::{Geometry, Header, HDR_SIZE};

/// A pool file mapped read-only.
pub struct Mapped {
    map: Mapping,
    header: Header,
}

/// The mapping itself, unmapped on drop.
struct Mapping {
    base: *const u8,
    len: usize,
}

// SAFETY: read-only shared memory; no interior state.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len as u64)?;
        if end > self.len as u64 {
            return None;
        }
        // SAFETY: in bounds (checked); the mapping lives as long as `self`.
        // The server may be writing these bytes: callers validate what they
        // read (CRCs, lsns, seqlocks) before they trust it.
        Some(unsafe { std::slice::from_raw_parts(self.base.add(offset as usize), len) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `Mapped::open`, unmapped once.
        unsafe { libc::munmap(self.base.cast_mut().cast(), self.len) };
    }
}

impl Mapped {
    /// Maps `path` read-only and checks its header (magic, CRC, geometry
    /// within the file).
    pub fn open(path: &Path) -> io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len() as usize;
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
        if len < HDR_SIZE {
            return Err(invalid("shorter than a pool header".into()));
        }
        // SAFETY: a fresh read-only shared mapping of the whole file; the
        // result is checked.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = Mapping { base: base.cast(), len };
        let header = Header::decode(map.bytes(0, HDR_SIZE).expect("checked above"))
            .map_err(|e| invalid(format!("not a pool header: {e:?}")))?;
        if header.geometry.file_size() > len as u64 {
            return Err(invalid(format!("its geometry needs {} bytes, the file has {len}", header.geometry.file_size())));
        }
        Ok(Mapped { map, header })
    }

    pub fn geometry(&self) -> Geometry {
        self.header.geometry
    }

    /// The pool's creation id (a re-created pool has another).
    pub fn creation_id(&self) -> u128 {
        self.header.creation_id
    }

    /// `len` bytes at `offset`, if inside the mapping.
    pub fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.map.bytes(offset, len)
    }

    /// Buffer `index`'s bytes.
    pub fn buffer(&self, index: u32) -> Option<&[u8]> {
        let geometry = self.geometry();
        if index >= geometry.buffer_count {
            return None;
        }
        self.bytes(geometry.buffer_offset(index), geometry.buffer_size as usize)
    }

    /// Appends the bytes `extents` name, each checked against the geometry.
    pub fn copy_extents(&self, extents: &[Extent], out: &mut Vec<u8>) -> Result<(), String> {
        let geometry = self.geometry();
        for extent in extents {
            extent.check(geometry.buffer_count, geometry.buffer_size)?;
            let at = geometry.buffer_offset(extent.buffer) + u64::from(extent.offset);
            out.extend_from_slice(self.bytes(at, usize::from(extent.len)).ok_or("an extent beyond the file")?);
        }
        Ok(())
    }
}
