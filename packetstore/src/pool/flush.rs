//! Cache-line write-back instructions, detected with CPUID.
//!
//! The pool's memory `unsafe` is here and in `file.rs`. clwb and
//! clflushopt have no stable Rust intrinsic, so they are issued with inline
//! assembly; clflush and sfence use the stable intrinsics. A write-back is
//! only ordered by the next `sfence` (clwb, clflushopt) or is ordered by
//! itself (clflush); `Persistence::fence` always issues the sfence.

use crate::limits::CACHE_LINE_SIZE;

/// The best write-back instruction this CPU offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushInstruction {
    /// Writes the line back and may keep it cached: the fastest.
    Clwb,
    /// Writes back and evicts, weakly ordered: overlaps with later work.
    Clflushopt,
    /// Writes back and evicts, serialised: the slowest.
    Clflush,
}

impl FlushInstruction {
    pub fn name(self) -> &'static str {
        match self {
            FlushInstruction::Clwb => "clwb",
            FlushInstruction::Clflushopt => "clflushopt",
            FlushInstruction::Clflush => "clflush",
        }
    }

    /// The best instruction this CPU has, in the order clwb, clflushopt,
    /// clflush. None when it has none (or is not x86_64).
    pub fn detect() -> Option<FlushInstruction> {
        [FlushInstruction::Clwb, FlushInstruction::Clflushopt, FlushInstruction::Clflush]
            .into_iter()
            .find(|i| i.available())
    }

    /// Reads CPUID: leaf 7 EBX bit 24 is CLWB, bit 23 CLFLUSHOPT; leaf 1 EDX
    /// bit 19 is CLFLUSH.
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid_count;
            let leaf7_ebx = if __cpuid_count(0, 0).eax >= 7 { __cpuid_count(7, 0).ebx } else { 0 };
            match self {
                FlushInstruction::Clwb => leaf7_ebx & (1 << 24) != 0,
                FlushInstruction::Clflushopt => leaf7_ebx & (1 << 23) != 0,
                FlushInstruction::Clflush => __cpuid_count(1, 0).edx & (1 << 19) != 0,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// Writes back every cache line overlapping `[addr, addr + len)`.
    ///
    /// The range need not be aligned. The caller must call [`store_fence`]
    /// before relying on the write-back.
    #[inline]
    pub fn flush_range(self, addr: *const u8, len: usize) {
        if len == 0 {
            return;
        }
        let mask = !(CACHE_LINE_SIZE - 1);
        let first = addr as usize & mask;
        let end = addr as usize + len;
        let mut line = first;
        while line < end {
            self.flush_line(line as *const u8);
            line += CACHE_LINE_SIZE;
        }
    }

    #[inline]
    fn flush_line(self, line: *const u8) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the write-back instructions take any address the process
        // has mapped and neither read nor modify memory as Rust sees it;
        // `flush_range` callers pass addresses inside the pool mapping, and
        // `detect` proved that the chosen instruction exists on this CPU.
        unsafe {
            match self {
                FlushInstruction::Clwb => {
                    std::arch::asm!("clwb [{0}]", in(reg) line, options(nostack, preserves_flags))
                }
                FlushInstruction::Clflushopt => {
                    std::arch::asm!("clflushopt [{0}]", in(reg) line, options(nostack, preserves_flags))
                }
                FlushInstruction::Clflush => std::arch::x86_64::_mm_clflush(line),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = line;
    }
}

/// Copies `src` to `dst` with non-temporal stores: the lines go to memory
/// without being read first (no read for ownership) and without staying
/// cached, so no write-back instruction is needed for them; like a
/// write-back, they are ordered by the next [`store_fence`].
///
/// # Safety
///
/// `dst` must be 64-byte aligned and valid for `src.len()` bytes of
/// writes, which must be a multiple of 64, and must not overlap `src`.
#[inline]
pub unsafe fn stream_lines(dst: *mut u8, src: &[u8]) {
    debug_assert!(dst as usize % CACHE_LINE_SIZE == 0 && src.len() % CACHE_LINE_SIZE == 0);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        for at in (0..src.len()).step_by(16) {
            // SAFETY: `at + 16 <= src.len()` (the length is a multiple of
            // 64); the caller vouches for `dst`, aligned to 16 as a line
            // start plus a multiple of 16. SSE2 is part of x86_64.
            unsafe {
                let word = _mm_loadu_si128(src.as_ptr().add(at) as *const __m128i);
                _mm_stream_si128(dst.add(at) as *mut __m128i, word);
            }
        }
    }
    // Never chosen off x86_64 (`Persistence::streams_lines`): a plain copy,
    // which the caller would still have to flush.
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: as the caller vouches above.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len())
    }
}

/// Orders every earlier write-back and store before any later store.
#[inline]
pub fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no operands and no memory effects beyond ordering.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Spins for `ns` nanoseconds: the emulated latency of slow persistent
/// memory at each fence (the paper's appendix A.3). Spinning, not sleeping,
/// because a sleep's granularity would dominate a 1-10 us latency.
#[inline]
pub fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = std::time::Instant::now();
    let wait = std::time::Duration::from_nanos(ns);
    while start.elapsed() < wait {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_cpu_has_a_write_back_instruction() {
        // Every x86_64 CPU has clflush (it is part of SSE2).
        #[cfg(target_arch = "x86_64")]
        assert!(FlushInstruction::detect().is_some());
    }

    #[test]
    fn every_instruction_runs_on_unaligned_ranges() {
        let data = vec![7u8; 4096 + 13];
        for instruction in [FlushInstruction::Clwb, FlushInstruction::Clflushopt, FlushInstruction::Clflush] {
            // Only run what this CPU has: an absent one would fault.
            if instruction.available() {
                instruction.flush_range(data[5..].as_ptr(), 4096);
            }
        }
        store_fence();
        assert!(data.iter().all(|&b| b == 7), "a write-back changed memory");
    }

    #[test]
    fn streamed_lines_hold_exactly_the_bytes_copied() {
        let mut target = vec![0u8; 4 * CACHE_LINE_SIZE + CACHE_LINE_SIZE];
        let start = target.as_ptr().align_offset(CACHE_LINE_SIZE);
        let src: Vec<u8> = (0..3 * CACHE_LINE_SIZE).map(|i| (i % 251) as u8 + 1).collect();
        // SAFETY: `start` is line aligned inside `target`, which has room
        // for the three lines after it; `src` is another allocation.
        unsafe { stream_lines(target.as_mut_ptr().add(start), &src) };
        store_fence();
        assert_eq!(&target[start..start + src.len()], &src[..]);
        assert!(target[..start].iter().chain(&target[start + src.len()..]).all(|&b| b == 0), "nothing else written");
    }
}
