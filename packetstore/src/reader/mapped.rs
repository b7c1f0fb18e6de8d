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
    /// Kept open: `is_current` asks it whether the file was deleted.
    file: std::fs::File,
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
    /// Copies `out.len()` bytes from `offset`, if inside the mapping.
    fn copy(&self, offset: u64, out: &mut [u8]) -> bool {
        let Some(end) = offset.checked_add(out.len() as u64) else { return false };
        if end > self.len as u64 {
            return false;
        }
        // SAFETY: in bounds (checked); the mapping lives as long as `self`
        // and cannot overlap `out` (a private buffer). The server may be
        // writing these bytes: they are copied, never borrowed, and callers
        // validate the copy (CRCs, lsns, seqlocks, the lease) before they
        // trust it.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(offset as usize), out.as_mut_ptr(), out.len()) };
        true
    }

    /// Appends `len` bytes from `offset` to `out` (without zeroing them
    /// first), if inside the mapping.
    fn copy_into_spare(&self, offset: u64, len: usize, out: &mut Vec<u8>) -> bool {
        let Some(end) = offset.checked_add(len as u64) else { return false };
        if end > self.len as u64 {
            return false;
        }
        out.reserve(len);
        // SAFETY: the source is in bounds (checked) and private to no one
        // (see `copy`); the target is `out`'s spare capacity, reserved
        // above, and becomes initialised by the copy before `set_len`.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(offset as usize), out.as_mut_ptr().add(out.len()), len);
            out.set_len(out.len() + len);
        }
        true
    }

    /// The 8-byte word at `offset` (8-aligned), loaded atomically.
    fn word(&self, offset: u64) -> Option<u64> {
        if offset % 8 != 0 || offset.checked_add(8)? > self.len as u64 {
            return None;
        }
        // SAFETY: in bounds and aligned (checked; the mapping is
        // page-aligned); the server stores such words atomically.
        let word = unsafe { &*self.base.add(offset as usize).cast::<std::sync::atomic::AtomicU64>() };
        Some(word.load(std::sync::atomic::Ordering::Acquire))
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
        let base =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = Mapping { base: base.cast(), len };
        let mut header_bytes = [0u8; HDR_SIZE];
        assert!(map.copy(0, &mut header_bytes), "checked above");
        let header = Header::decode(&header_bytes).map_err(|e| invalid(format!("not a pool header: {e:?}")))?;
        if header.geometry.file_size() > len as u64 {
            return Err(invalid(format!(
                "its geometry needs {} bytes, the file has {len}",
                header.geometry.file_size()
            )));
        }
        Ok(Mapped { map, header, file })
    }

    pub fn geometry(&self) -> Geometry {
        self.header.geometry
    }

    /// Which shard of which data set the pool is (None: an unsharded one).
    pub fn shard(&self) -> Option<crate::pool::layout::ShardId> {
        self.header.shard
    }

    /// Whether the file mapped is still the pool at `path`, whole: not
    /// deleted, the same file at the path, the same size, the same
    /// creation id in its header (three syscalls: call it now and then).
    pub fn is_current(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Ok(mapped), Ok(named)) = (self.file.metadata(), std::fs::metadata(path)) else { return false };
        let mut id = [0u8; 16];
        mapped.nlink() > 0
            && (mapped.dev(), mapped.ino()) == (named.dev(), named.ino())
            && mapped.len() == self.map.len as u64
            && self.map.copy(crate::pool::layout::HDR_CREATION_ID as u64, &mut id)
            && u128::from_le_bytes(id) == self.header.creation_id
    }

    /// The pool's creation id (a re-created pool has another).
    pub fn creation_id(&self) -> u128 {
        self.header.creation_id
    }

    /// Copies `out.len()` bytes at `offset`: false if beyond the file.
    pub fn copy(&self, offset: u64, out: &mut [u8]) -> bool {
        self.map.copy(offset, out)
    }

    /// The 8-byte word at `offset`, loaded atomically (an acquire).
    pub fn word(&self, offset: u64) -> Option<u64> {
        self.map.word(offset)
    }

    /// Appends the bytes `extents` name, each checked against the geometry.
    pub fn copy_extents(
        &self,
        extents: impl Iterator<Item = Extent> + Clone,
        out: &mut Vec<u8>,
    ) -> Result<(), &'static str> {
        let geometry = self.geometry();
        out.reserve(extents.clone().map(|e| usize::from(e.len)).sum());
        for extent in extents {
            extent.check(geometry.buffer_count, geometry.buffer_size).map_err(|_| "an extent beyond the pool")?;
            let at = geometry.buffer_offset(extent.buffer) + u64::from(extent.offset);
            if !self.map.copy_into_spare(at, usize::from(extent.len), out) {
                return Err("an extent beyond the file");
            }
        }
        Ok(())
    }
}
