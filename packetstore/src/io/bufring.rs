//! A provided-buffer ring (IORING_REGISTER_PBUF_RING): the io_uring form of
//! PASTE's Pring. Its entries point at buffers the kernel receives into.
//!
//! Protocol with the kernel: the ring is an array of `entries` (a power of
//! two) {addr, len, bid} in page-aligned memory shared with the kernel;
//! only the tail (the `resv` field of entry 0) is shared state. We write
//! entries at our private tail and publish it with a Release store; the
//! kernel consumes from its head and reports the buffer id (bid) it used in
//! each completion's flags. When no entry is left, a multishot receive
//! completes with -ENOBUFS and stops; nothing is lost (the bytes stay in
//! the socket), and the caller re-arms after providing more.
//!
//! A bid is a u16 slot name; which memory it points at can change at every
//! provide. That is PASTE's swap: a buffer the application keeps is replaced
//! under the same bid by a free one.

use std::io;

use io_uring::types::BufRingEntry;

/// The kernel's flag for incremental buffer consumption (linux 6.12+).
const IOU_PBUF_RING_INC: u16 = 2;
use io_uring::IoUring;

pub struct BufRing {
    base: *mut BufRingEntry,
    map_len: usize,
    entries: u16,
    tail: u16,
    published: u16,
}

impl BufRing {
    /// Maps and registers a ring of `entries` (power of two, <= 32768) as
    /// buffer group `group` of `ring`. With `incremental`
    /// (IOU_PBUF_RING_INC), the kernel fills a buffer across several
    /// receives, possibly of different sockets, reporting `BUF_MORE` while
    /// it keeps the buffer; the caller tracks how much of each is used.
    pub fn register(ring: &IoUring, entries: u16, group: u16, incremental: bool) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two() && entries <= 32768, "ring entries must be a power of two <= 32768");
        let map_len = (entries as usize * std::mem::size_of::<BufRingEntry>()).div_ceil(4096) * 4096;
        let base = map_anonymous(map_len)?;
        let base = base.cast::<BufRingEntry>();
        let flags = if incremental { IOU_PBUF_RING_INC } else { 0 };
        // SAFETY: the mapping is page-aligned, zeroed (tail 0), `map_len`
        // long, and lives until `self` is dropped, after the ring that uses
        // it (the caller drops the ring first, see the engine).
        if let Err(error) = unsafe { ring.submitter().register_buf_ring_with_flags(base as u64, entries, group, flags) }
        {
            // SAFETY: our mapping, unused by anyone else.
            unsafe { libc::munmap(base.cast(), map_len) };
            return Err(error);
        }
        Ok(BufRing { base, map_len, entries, tail: 0, published: 0 })
    }

    /// Queues buffer `addr..addr+len` under `bid`; visible after `publish`.
    ///
    /// # Safety
    /// The memory must stay valid, and unused by anyone else, until the
    /// kernel hands `bid` back in a completion (or the ring is unregistered).
    pub unsafe fn provide(&mut self, bid: u16, addr: *mut u8, len: u32) {
        assert!(bid < self.entries, "bid {bid} out of range");
        let index = (self.tail & (self.entries - 1)) as usize;
        // SAFETY: index < entries, inside our mapping; the kernel reads only
        // entries below the published tail, and this one is above it.
        let entry = unsafe { &mut *self.base.add(index) };
        entry.set_addr(addr as u64);
        entry.set_len(len);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes every provided entry visible to the kernel.
    pub fn publish(&mut self) {
        if self.tail == self.published {
            return;
        }
        // SAFETY: the tail field lives in entry 0 of our mapping; the kernel
        // reads it with acquire semantics, so a Release store orders the
        // entries written above before it.
        unsafe {
            let tail = BufRingEntry::tail(self.base) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
        self.published = self.tail;
    }
}

/// Maps `len` bytes of zeroed, populated private memory (the ring itself,
/// and the engine's private receive buffers). Freed with `munmap`.
pub fn map_anonymous(len: usize) -> io::Result<*mut u8> {
    // SAFETY: an anonymous private mapping chosen by the kernel.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_ANONYMOUS | libc::MAP_PRIVATE | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(base.cast())
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // The engine unregisters (or drops its IoUring) before this runs.
        // SAFETY: our mapping; the kernel no longer uses it.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}
