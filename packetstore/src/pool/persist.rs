//! Persistence domains: how bytes stored into the pool become durable.
//!
//! One interface, three granularities (as libpmem2 splits them), plus "none"
//! for benchmarks and the crash simulator as the test twin:
//!
//! | domain     | `flush(range)`                 | `fence()`                     |
//! |------------|--------------------------------|-------------------------------|
//! | cache line | clwb / clflushopt / clflush    | sfence (+ emulated latency)   |
//! | byte       | nothing (caches are persistent)| sfence (+ emulated latency)   |
//! | page       | remembers the range (msync)    | fdatasync, or msync of ranges |
//! | none       | nothing                        | nothing                       |
//! | simulated  | snapshots the lines            | commits the snapshots         |
//!
//! Contract for callers: bytes are durable once a `flush` covering them has
//! been followed by a `fence` that returned Ok. Every store into the pool
//! must be visible to the simulator: the pool's own write methods declare
//! theirs, and a store made by someone else (the kernel receiving into a
//! buffer) must be declared with `note_written` before it is flushed.
//!
//! Invariant: a failed fence (fdatasync's EIO) is final. Dirty pages may have
//! been dropped by the kernel, so a later fence that succeeds proves nothing
//! about earlier stores; the domain stays failed and every later fence fails.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::limits::PAGE_SIZE;
use crate::pool::flush::{spin_ns, store_fence, FlushInstruction};
use crate::pool::sim::SimDevice;
use crate::util::metrics::{Exposition, Histogram};

/// The granularity at which stores become durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// Persistent memory behind the CPU caches (ADR): flush lines, fence.
    CacheLine,
    /// Caches in the power-fail domain (eADR): fence only.
    Byte,
    /// A page-cache file on a block device: fdatasync or msync per batch.
    Page,
    /// Nothing is made durable: benchmarks only.
    None,
}

impl Domain {
    pub fn name(self) -> &'static str {
        match self {
            Domain::CacheLine => "cache-line",
            Domain::Byte => "byte",
            Domain::Page => "page",
            Domain::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<Domain> {
        match text {
            "cache-line" | "cacheline" | "cache_line" => Some(Domain::CacheLine),
            "byte" | "eadr" => Some(Domain::Byte),
            "page" => Some(Domain::Page),
            "none" => Some(Domain::None),
            _ => None,
        }
    }
}

/// How the page domain makes a batch durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageSync {
    /// One fdatasync of the whole file.
    Fdatasync,
    /// msync(MS_SYNC) of the page ranges flushed in the batch.
    Msync,
}

impl PageSync {
    pub fn name(self) -> &'static str {
        match self {
            PageSync::Fdatasync => "fdatasync",
            PageSync::Msync => "msync",
        }
    }

    pub fn parse(text: &str) -> Option<PageSync> {
        match text {
            "fdatasync" => Some(PageSync::Fdatasync),
            "msync" => Some(PageSync::Msync),
            _ => None,
        }
    }
}

/// The persistence a caller asks for when opening a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistOptions {
    /// None: detect from the file (MAP_SYNC, tmpfs, else page).
    pub domain: Option<Domain>,
    pub page_sync: PageSync,
    /// Spin this long at every fence of the cache-line and byte domains, to
    /// emulate slow persistent memory (the paper used 10 us).
    pub fence_latency_ns: u64,
    /// Map the whole pool up front (MAP_POPULATE): no page fault on the
    /// data path, at the cost of memory (tmpfs) or reading the file.
    pub prefault: bool,
    /// At creation only, on a file system other than tmpfs: write zeros
    /// over the whole file, 4 KiB at a time, after reserving its blocks.
    /// Every block is then written (not an unwritten extent), so the page
    /// domain's syncs write data and a cache flush, never a journal commit
    /// converting blocks; and the file's pages stay in the page cache as
    /// single pages, so a store into a buffer faults without reading the
    /// disk, and writeback writes the 4 KiB pages stored into, not large
    /// folios. Costs one write of the pool at creation (about 1 GiB/s
    /// here). Off: creation only reserves.
    pub zero_fill: bool,
    /// At creation only: leave the file sparse instead of reserving its
    /// blocks (posix_fallocate). A huge pool then costs only what it holds,
    /// but a full file system can kill the process (SIGBUS) on a store into
    /// a hole.
    pub sparse: bool,
}

impl Default for PersistOptions {
    fn default() -> Self {
        PersistOptions {
            domain: None,
            page_sync: PageSync::Fdatasync,
            fence_latency_ns: 0,
            prefault: false,
            zero_fill: true,
            sparse: false,
        }
    }
}

/// What was chosen, how, and what it guarantees: reported at start-up and by
/// `inspect`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainInfo {
    pub domain: Domain,
    /// False when an acknowledged write would not survive a power loss:
    /// DRAM emulation, a cache-line domain forced onto a page-cache file,
    /// or the none domain.
    pub durable: bool,
    /// How the domain was chosen ("MAP_SYNC mapping", "tmpfs", ...).
    pub detected_by: String,
    pub instruction: Option<FlushInstruction>,
    pub page_sync: PageSync,
    pub fence_latency_ns: u64,
    pub simulated: bool,
    /// For a pool on tmpfs: whether its mount gives the mapping 2 MiB pages
    /// (`huge=` other than never, or shmem_enabled=force). None elsewhere.
    /// With 4 KiB pages, every node and value a request touches in a large
    /// pool costs a TLB miss, a nested page walk in a VM: 1.5x slower here.
    pub tmpfs_huge_pages: Option<bool>,
}

impl std::fmt::Display for DomainInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.domain.name())?;
        match self.domain {
            Domain::CacheLine => write!(f, " ({})", self.instruction.map_or("none", |i| i.name()))?,
            Domain::Page => write!(f, " ({})", self.page_sync.name())?,
            Domain::Byte | Domain::None => {}
        }
        if self.fence_latency_ns > 0 {
            write!(f, ", +{} ns emulated latency per fence", self.fence_latency_ns)?;
        }
        write!(f, ", detected by {}", self.detected_by)?;
        if self.simulated {
            write!(f, "; SIMULATED: the crash simulator, for tests")?;
        } else if self.domain == Domain::None {
            write!(f, "; NONE: nothing is made durable, for benchmarks only")?;
        } else if !self.durable {
            write!(f, "; EMULATED: not durable across power loss")?;
        }
        Ok(())
    }
}

/// Counters of the persistence work done, for metrics and benchmarks.
#[derive(Debug, Default)]
pub struct PersistStats {
    pub lines_flushed: AtomicU64,
    pub fences: AtomicU64,
    pub fence_ns_total: AtomicU64,
    pub fence_ns_max: AtomicU64,
    /// Every fence's latency (the page domain's: its fdatasync or msync).
    pub fence_ns: Histogram,
}

impl PersistStats {
    /// Writes the pool's persistence work into a /metrics exposition (both
    /// servers): cache lines flushed, fences, and the fences' latency (the
    /// page domain's: its syncs).
    pub fn expose(&self, e: &mut Exposition, domain: &str) {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed) as f64;
        e.single(
            "packetstore_lines_flushed_total",
            "counter",
            "Cache lines flushed (clwb/clflushopt).",
            load(&self.lines_flushed),
        );
        e.single(
            "packetstore_fences_total",
            "counter",
            "Fences of the pool: an sfence after flushes, or in the page domain an fdatasync or msync.",
            load(&self.fences),
        );
        let help = "Fence latency (page domain: the sync).";
        e.histogram("packetstore_fence_seconds", help, &[("domain", domain)], &self.fence_ns, 1e-9, 8, 34, 2);
    }
}

/// The persistence backend of one pool.
pub(crate) enum Persistence {
    Hardware(Hardware),
    Simulated(Arc<SimDevice>),
}

pub(crate) struct Hardware {
    pub domain: Domain,
    pub instruction: Option<FlushInstruction>,
    pub page_sync: PageSync,
    pub fence_latency_ns: u64,
    pub fd: RawFd,
    pub base: *mut u8,
    /// Page-aligned byte ranges flushed since the last fence (msync only).
    pub dirty_ranges: Mutex<Vec<(u64, u64)>>,
    pub failed: AtomicBool,
}

impl Persistence {
    /// Declares that `[offset, offset + len)` was stored to.
    #[inline]
    pub fn note_written(&self, offset: u64, len: u64) {
        if let Persistence::Simulated(device) = self {
            device.note_written(offset, len);
        }
    }

    /// Whether whole lines are best written with non-temporal stores,
    /// which need no write-back (`Pool::write_lines_flushed`): the hardware
    /// cache-line domain.
    #[inline]
    pub fn streams_lines(&self) -> bool {
        // Only x86_64 has the streaming stores `flush::stream_lines` uses.
        cfg!(target_arch = "x86_64") && matches!(self, Persistence::Hardware(hw) if hw.domain == Domain::CacheLine)
    }

    /// Starts writing back `[offset, offset + len)`; durable at the next fence.
    #[inline]
    pub fn flush(&self, offset: u64, len: u64, stats: &PersistStats) {
        if len == 0 {
            return;
        }
        match self {
            Persistence::Hardware(hw) => hw.flush(offset, len, stats),
            Persistence::Simulated(device) => device.flush(offset, len),
        }
    }

    /// Makes every earlier flush durable.
    pub fn fence(&self, stats: &PersistStats) -> io::Result<()> {
        let start = Instant::now();
        let result = match self {
            Persistence::Hardware(hw) => hw.fence(),
            Persistence::Simulated(device) => device.fence(),
        };
        let ns = start.elapsed().as_nanos() as u64;
        stats.fences.fetch_add(1, Ordering::Relaxed);
        stats.fence_ns_total.fetch_add(ns, Ordering::Relaxed);
        stats.fence_ns_max.fetch_max(ns, Ordering::Relaxed);
        stats.fence_ns.observe(ns);
        result
    }
}

/// What an asynchronous sync submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncSync {
    /// fdatasync this file.
    File(RawFd),
    /// Nothing: the simulator commits at `complete_sync`.
    Simulated,
    /// Nothing: `complete_sync` fences (cache-line and byte domains, for
    /// an application whose replies wait for peers anyway).
    Fence,
}

/// A sync begun and not yet completed (see `Pool::begin_sync`).
pub struct SyncToken {
    started: Instant,
    covered: Option<crate::pool::sim::SimSync>,
}

impl Persistence {
    pub fn begin_sync(&self) -> SyncToken {
        let covered = match self {
            Persistence::Hardware(_) => None,
            Persistence::Simulated(device) => Some(device.begin_sync()),
        };
        SyncToken { started: Instant::now(), covered }
    }

    /// `result` is the outcome of the caller's own sync (hardware page
    /// domain); the other domains complete here.
    pub fn complete_sync(&self, token: SyncToken, result: io::Result<()>, stats: &PersistStats) -> io::Result<()> {
        let result = match (self, token.covered) {
            (Persistence::Simulated(device), Some(covered)) => device.complete_sync(covered),
            (Persistence::Hardware(hw), _) => {
                if hw.failed.load(Ordering::Acquire) {
                    Err(io::Error::other("an earlier sync failed; this pool can no longer make writes durable"))
                } else if hw.domain == Domain::Page {
                    result
                } else {
                    hw.fence()
                }
            }
            (Persistence::Simulated(_), None) => unreachable!("a simulated sync has its snapshot"),
        };
        if let Persistence::Hardware(hw) = self {
            if result.is_err() {
                hw.failed.store(true, Ordering::Release);
            }
        }
        let ns = token.started.elapsed().as_nanos() as u64;
        stats.fences.fetch_add(1, Ordering::Relaxed);
        stats.fence_ns_total.fetch_add(ns, Ordering::Relaxed);
        stats.fence_ns_max.fetch_max(ns, Ordering::Relaxed);
        stats.fence_ns.observe(ns);
        result
    }

    /// How syncs run asynchronously, if they do: the hardware page domain
    /// with fdatasync (submitted to io_uring, running while the caller
    /// works), and the simulator's page mode (a no-op completion stands for
    /// the fdatasync, so tests exercise the same path).
    pub fn async_sync(&self) -> Option<AsyncSync> {
        match self {
            Persistence::Hardware(hw) if hw.domain == Domain::Page && hw.page_sync == PageSync::Fdatasync => {
                Some(AsyncSync::File(hw.fd))
            }
            Persistence::Simulated(device) if device.mode() == crate::pool::sim::SimMode::Page => {
                Some(AsyncSync::Simulated)
            }
            _ => None,
        }
    }
}

impl Hardware {
    #[inline]
    fn flush(&self, offset: u64, len: u64, stats: &PersistStats) {
        match self.domain {
            Domain::CacheLine => {
                let instruction = self.instruction.expect("the cache-line domain has an instruction");
                let lines = (offset + len).div_ceil(64) - offset / 64;
                stats.lines_flushed.fetch_add(lines, Ordering::Relaxed);
                // `base + offset` stays inside the mapping: the pool checks
                // every range against its length before calling.
                instruction.flush_range(self.base.wrapping_add(offset as usize), len as usize);
            }
            Domain::Page if self.page_sync == PageSync::Msync => {
                let start = offset / PAGE_SIZE * PAGE_SIZE;
                let end = (offset + len).div_ceil(PAGE_SIZE) * PAGE_SIZE;
                let mut ranges = self.dirty_ranges.lock().expect("dirty ranges lock");
                match ranges.last_mut() {
                    Some(last) if last.1 >= start && last.0 <= end => {
                        last.0 = last.0.min(start);
                        last.1 = last.1.max(end);
                    }
                    _ => ranges.push((start, end)),
                }
            }
            Domain::Page | Domain::Byte | Domain::None => {}
        }
    }

    fn fence(&self) -> io::Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(io::Error::other("an earlier sync failed; this pool can no longer make writes durable"));
        }
        let result = match self.domain {
            Domain::CacheLine | Domain::Byte => {
                store_fence();
                spin_ns(self.fence_latency_ns);
                Ok(())
            }
            Domain::Page => self.sync_pages(),
            Domain::None => Ok(()),
        };
        if result.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        result
    }

    fn sync_pages(&self) -> io::Result<()> {
        match self.page_sync {
            PageSync::Fdatasync => {
                // SAFETY: fdatasync only reads the descriptor, which the pool
                // keeps open for as long as this backend lives.
                if unsafe { libc::fdatasync(self.fd) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            }
            PageSync::Msync => {
                let mut ranges = std::mem::take(&mut *self.dirty_ranges.lock().expect("dirty ranges lock"));
                ranges.sort_unstable();
                let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
                for (start, end) in ranges {
                    match merged.last_mut() {
                        Some(last) if start <= last.1 => last.1 = last.1.max(end),
                        _ => merged.push((start, end)),
                    }
                }
                for (start, end) in merged {
                    // SAFETY: the range is page-aligned and inside the
                    // mapping (flush ranges are checked against its length
                    // and rounded to pages that the mapping covers in full).
                    let rc = unsafe {
                        libc::msync(self.base.add(start as usize).cast(), (end - start) as usize, libc::MS_SYNC)
                    };
                    if rc != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                Ok(())
            }
        }
    }
}
