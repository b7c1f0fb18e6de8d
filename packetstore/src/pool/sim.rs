//! The crash simulator: a persistence backend for tests that records what
//! was made durable, and produces the image a power failure would leave.
//!
//! It keeps three views of a small in-memory pool:
//! - `memory`: what the program sees (the CPU caches and DRAM);
//! - `durable`: what has certainly reached the persistence domain;
//! - `pending`: per cache line, the content captured by a flush that no
//!   fence has committed yet.
//!
//! `flush` snapshots lines into `pending`; `fence` commits them to `durable`
//! (in the page mode, a fence commits every written line, as fdatasync
//! writes every dirty page). Every store must be declared (`note_written`):
//! the pool's own writes are, and a test declares what it stores "as the
//! kernel". `crash` then builds the power-failure image: every committed
//! line, plus, for each written-but-uncommitted line, a seeded random choice
//! between its durable content, its flushed snapshot and its current
//! content, whole or torn at aligned 8-byte words (the only atomic unit).
//!
//! Faults the image may contain, all of which recovery must survive:
//! - a line written but never flushed, persisted early (eviction);
//! - a flushed line whose fence never ran, persisted or not;
//! - any of those torn between two 8-byte words;
//! - any interleaving of the above across lines (no order is kept).
//!
//! A crash can also be armed at the n-th fence: the image is taken after
//! every flush of the batch and before its fence (the worst moment), and
//! the device is then dead: fences fail with "power lost".
//!
//! Memory lent to the kernel (a receive buffer in io_uring's ring, `lend`)
//! may change at any moment without a declaration, as a NIC's DMA would:
//! until it is reclaimed, its changed lines count as written.
//!
//! Invariant (asserted at every crash): every line whose memory differs
//! from the durable image was declared, or is lent to the kernel. An undeclared store is a bug in the
//! code under test, reported with its offset.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Mutex;

use crate::limits::CACHE_LINE_SIZE;
use crate::util::rng::SplitMix64;

const LINE: u64 = CACHE_LINE_SIZE as u64;
const WORDS_PER_LINE: usize = CACHE_LINE_SIZE / 8;

/// A sync in flight: the lines it covers, and the last flush it covers.
pub struct SimSync {
    lines: Vec<(u64, [u8; CACHE_LINE_SIZE])>,
    flushes: u64,
}

/// Which persistence domain the simulator imitates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimMode {
    /// Only flushed lines are committed by a fence.
    CacheLine,
    /// A fence commits every line written so far (fdatasync).
    Page,
}

struct State {
    durable: Vec<u8>,
    /// Per line, the content a flush captured, and the flush's sequence.
    pending: BTreeMap<u64, ([u8; CACHE_LINE_SIZE], u64)>,
    flushes: u64,
    dirty: BTreeSet<u64>,
    fences: u64,
    crash_at_fence: Option<(u64, u64)>,
    /// A power failure armed for a moment (wall clock, shared by every
    /// process of a group): at the first fence from then on.
    crash_at_time: Option<(std::time::SystemTime, u64)>,
    /// An I/O error injected at this fence (the device lives on).
    fail_at_fence: Option<u64>,
    failed_fences: u64,
    crash_image: Option<Vec<u8>>,
    dead: bool,
    /// Line ranges lent to the kernel: first line -> end line (exclusive).
    lent: BTreeMap<u64, u64>,
}

/// A simulated persistent device. Shared (`Arc`) between the pool that
/// writes to it and the test that crashes it.
pub struct SimDevice {
    mode: SimMode,
    /// The program's view; `u64` elements keep it 8-byte aligned. A box
    /// turned raw (`Box::leak`, freed in `Drop`): the pool writes through
    /// pointers derived from it while the device is shared, which a
    /// `Box` field, reached through `&self`, would not allow.
    memory: std::ptr::NonNull<[u64]>,
    len: u64,
    state: Mutex<State>,
}

// SAFETY: `memory` is owned by the device and only reached through raw
// pointers; the state is behind a Mutex. As with real memory, concurrent
// stores to the same bytes are the program's affair (one writer thread).
unsafe impl Send for SimDevice {}
// SAFETY: as above.
unsafe impl Sync for SimDevice {}

impl Drop for SimDevice {
    fn drop(&mut self) {
        // SAFETY: from `Box::leak` in `from_image`; the device and every
        // pool over it (which hold an `Arc` of it) are gone.
        drop(unsafe { Box::from_raw(self.memory.as_ptr()) });
    }
}

impl std::fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimDevice").field("mode", &self.mode).field("len", &self.len).finish_non_exhaustive()
    }
}

impl SimDevice {
    /// A device of `len` zero bytes (rounded up to a cache line).
    pub fn new(len: u64, mode: SimMode) -> SimDevice {
        Self::from_image(vec![0; len as usize], mode)
    }

    /// A device whose memory and durable content both equal `image`: the
    /// state in which a machine reboots after a power failure.
    pub fn from_image(mut image: Vec<u8>, mode: SimMode) -> SimDevice {
        let len = (image.len() as u64).div_ceil(LINE) * LINE;
        image.resize(len as usize, 0);
        let mut memory = vec![0u64; len as usize / 8].into_boxed_slice();
        for (word, bytes) in memory.iter_mut().zip(image.chunks_exact(8)) {
            *word = u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
        }
        SimDevice {
            mode,
            memory: std::ptr::NonNull::from(Box::leak(memory)),
            len,
            state: Mutex::new(State {
                durable: image,
                pending: BTreeMap::new(),
                flushes: 0,
                dirty: BTreeSet::new(),
                fences: 0,
                crash_at_fence: None,
                crash_at_time: None,
                fail_at_fence: None,
                failed_fences: 0,
                crash_image: None,
                dead: false,
                lent: BTreeMap::new(),
            }),
        }
    }

    pub fn mode(&self) -> SimMode {
        self.mode
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The base of the program's view, for the pool.
    pub(crate) fn memory_ptr(&self) -> *mut u8 {
        self.memory.as_ptr() as *mut u8
    }

    fn current(&self) -> &[u8] {
        // SAFETY: `memory` is `len` initialised bytes that live as long as
        // `self`. Tests are single-threaded with respect to one device, so
        // no store runs while the simulator reads (it is called between
        // the pool's operations, never during one).
        unsafe { std::slice::from_raw_parts(self.memory.as_ptr() as *const u8, self.len as usize) }
    }

    fn lines(&self, offset: u64, len: u64) -> std::ops::Range<u64> {
        assert!(offset + len <= self.len, "access [{offset}, +{len}) beyond the device ({})", self.len);
        offset / LINE..(offset + len).div_ceil(LINE)
    }

    pub(crate) fn note_written(&self, offset: u64, len: u64) {
        let mut state = self.state.lock().expect("sim lock");
        if state.dead {
            return;
        }
        state.dirty.extend(self.lines(offset, len));
    }

    /// Lends `[offset, offset + len)` to the kernel, which may store into
    /// it from now on without telling (a buffer given to the receive ring).
    pub(crate) fn lend(&self, offset: u64, len: u64) {
        let lines = self.lines(offset, len);
        let mut state = self.state.lock().expect("sim lock");
        state.lent.insert(lines.start, lines.end);
    }

    /// Takes back a range lent with `lend`: its changed lines are written.
    pub(crate) fn reclaim(&self, offset: u64, len: u64) {
        let lines = self.lines(offset, len);
        let mut state = self.state.lock().expect("sim lock");
        let end = state.lent.remove(&lines.start);
        assert_eq!(end, Some(lines.end), "reclaiming [{offset}, +{len}), which was not lent as such");
        self.absorb(&mut state, lines);
    }

    /// Marks the changed lines of `lines` written.
    fn absorb(&self, state: &mut State, lines: std::ops::Range<u64>) {
        let current = self.current();
        for line in lines {
            let at = (line * LINE) as usize;
            if current[at..at + CACHE_LINE_SIZE] != state.durable[at..at + CACHE_LINE_SIZE] {
                state.dirty.insert(line);
            }
        }
    }

    /// Marks the changed lines of every lent range written (the kernel's
    /// stores so far), before anything reads `dirty`.
    fn absorb_lent(&self, state: &mut State) {
        let ranges: Vec<(u64, u64)> = state.lent.iter().map(|(&a, &b)| (a, b)).collect();
        for (start, end) in ranges {
            self.absorb(state, start..end);
        }
    }

    pub(crate) fn flush(&self, offset: u64, len: u64) {
        let mut state = self.state.lock().expect("sim lock");
        if state.dead {
            return;
        }
        let current = self.current();
        state.flushes += 1;
        let sequence = state.flushes;
        for line in self.lines(offset, len) {
            let at = (line * LINE) as usize;
            let snapshot: [u8; CACHE_LINE_SIZE] = current[at..at + CACHE_LINE_SIZE].try_into().expect("a line");
            state.pending.insert(line, (snapshot, sequence));
        }
    }

    pub(crate) fn fence(&self) -> io::Result<()> {
        let mut state = self.state.lock().expect("sim lock");
        self.absorb_lent(&mut state);
        self.count_fence(&mut state)?;
        let current = self.current();
        let pending = std::mem::take(&mut state.pending);
        match self.mode {
            SimMode::CacheLine => {
                for (line, (snapshot, _)) in pending {
                    let at = (line * LINE) as usize;
                    state.durable[at..at + CACHE_LINE_SIZE].copy_from_slice(&snapshot);
                }
            }
            SimMode::Page => {
                let dirty: Vec<u64> = state.dirty.iter().copied().chain(pending.into_keys()).collect();
                for line in dirty {
                    let at = (line * LINE) as usize;
                    state.durable[at..at + CACHE_LINE_SIZE].copy_from_slice(&current[at..at + CACHE_LINE_SIZE]);
                }
            }
        }
        // A line stays dirty while the program's view differs from durable.
        forget_clean_lines(&mut state, current);
        Ok(())
    }

    /// Starts a sync that completes later (an asynchronous fdatasync): it
    /// covers exactly the lines as they are now: flushed ones (cache-line
    /// mode), or every written one (page mode). Writes made after this call
    /// are not covered, even if the sync completes after them.
    pub(crate) fn begin_sync(&self) -> SimSync {
        let mut state = self.state.lock().expect("sim lock");
        self.absorb_lent(&mut state);
        let current = self.current();
        let mut lines: BTreeMap<u64, [u8; CACHE_LINE_SIZE]> =
            state.pending.iter().map(|(&line, &(snapshot, _))| (line, snapshot)).collect();
        if self.mode == SimMode::Page {
            for &line in &state.dirty {
                let at = (line * LINE) as usize;
                lines.insert(line, current[at..at + CACHE_LINE_SIZE].try_into().expect("a line"));
            }
        }
        SimSync { lines: lines.into_iter().collect(), flushes: state.flushes }
    }

    /// Completes a sync begun with `begin_sync`: commits what it covered.
    /// Counts as a fence (an armed crash can happen here).
    pub(crate) fn complete_sync(&self, sync: SimSync) -> io::Result<()> {
        let mut state = self.state.lock().expect("sim lock");
        self.absorb_lent(&mut state);
        self.count_fence(&mut state)?;
        let current = self.current();
        for (line, snapshot) in sync.lines {
            let at = (line * LINE) as usize;
            state.durable[at..at + CACHE_LINE_SIZE].copy_from_slice(&snapshot);
            // Still different in memory (written since): still dirty.
            if current[at..at + CACHE_LINE_SIZE] != snapshot {
                state.dirty.insert(line);
            }
        }
        // Flushes the sync covered are done; later ones stay pending.
        state.pending.retain(|_, &mut (_, sequence)| sequence > sync.flushes);
        forget_clean_lines(&mut state, current);
        Ok(())
    }

    /// Counts a fence (or a completed sync); fails if the device is dead,
    /// or dies here when a crash is armed at this fence (taking the image
    /// before anything of this fence is committed).
    fn count_fence(&self, state: &mut State) -> io::Result<()> {
        if state.dead {
            return Err(power_lost());
        }
        state.fences += 1;
        if state.fail_at_fence == Some(state.fences) {
            // Nothing of this fence or sync reaches the media; the device
            // works on (a real failed fdatasync may even have written part:
            // the page domain must never trust what it covered).
            state.fail_at_fence = None;
            state.failed_fences += 1;
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        let due = state.crash_at_time.filter(|&(when, _)| when <= std::time::SystemTime::now());
        if let Some((at_fence, seed)) = due.map(|(_, seed)| (state.fences, seed)).or(state.crash_at_fence) {
            if state.fences == at_fence {
                let image = self.image(state, seed);
                state.crash_image = Some(image);
                state.dead = true;
                return Err(power_lost());
            }
        }
        Ok(())
    }

    /// Number of fences so far (the successful ones and a fatal one).
    pub fn fences(&self) -> u64 {
        self.state.lock().expect("sim lock").fences
    }

    /// Makes fence (or sync completion) `fence_number` fail with EIO,
    /// committing nothing, while the device stays up.
    pub fn fail_at_fence(&self, fence_number: u64) {
        self.state.lock().expect("sim lock").fail_at_fence = Some(fence_number);
    }

    /// How many injected failures happened.
    pub fn failed_fences(&self) -> u64 {
        self.state.lock().expect("sim lock").failed_fences
    }

    /// Arms a power failure at the `fence_number`-th fence (counting from
    /// 1 over the device's life): that fence captures the crash image with
    /// `seed`, commits nothing, and fails; the device is dead afterwards.
    pub fn crash_at_fence(&self, fence_number: u64, seed: u64) {
        self.state.lock().expect("sim lock").crash_at_fence = Some((fence_number, seed));
    }

    /// Arms a power failure at the first fence (or sync completion, or
    /// `crash_if_due`) at or after `when`: several devices armed for the
    /// same moment fail together, as a rack whose power is cut would.
    pub fn crash_at_time(&self, when: std::time::SystemTime, seed: u64) {
        self.state.lock().expect("sim lock").crash_at_time = Some((when, seed));
    }

    /// Cuts the power now if a failure armed for a moment is due (for an
    /// idle server, whose fences would not notice); whether the device is
    /// dead.
    pub fn crash_if_due(&self) -> bool {
        let mut state = self.state.lock().expect("sim lock");
        if let Some((_, seed)) = state.crash_at_time.filter(|&(when, _)| when <= std::time::SystemTime::now()) {
            self.absorb_lent(&mut state);
            let image = self.image(&state, seed);
            state.crash_image = Some(image);
            state.dead = true;
            state.crash_at_time = None;
        }
        state.dead
    }

    /// Cancels an armed crash that has not happened.
    pub fn disarm(&self) {
        let mut state = self.state.lock().expect("sim lock");
        state.crash_at_fence = None;
        state.crash_at_time = None;
    }

    /// The image captured by an armed crash, once it happened.
    pub fn take_crash_image(&self) -> Option<Vec<u8>> {
        self.state.lock().expect("sim lock").crash_image.take()
    }

    pub fn is_dead(&self) -> bool {
        self.state.lock().expect("sim lock").dead
    }

    /// Cuts the power now: returns the image that survives, and kills the
    /// device. The same seed gives the same image.
    pub fn crash(&self, seed: u64) -> Vec<u8> {
        let mut state = self.state.lock().expect("sim lock");
        self.absorb_lent(&mut state);
        let image = self.image(&state, seed);
        state.dead = true;
        image
    }

    /// What a process that restarts itself finds in the pool (a node that
    /// rebuilds re-executes itself): everything stored so far. The
    /// simulator's memory is written back to the pool file as this, or the
    /// new process would find the pool as the simulator started it.
    pub fn process_restart_image(&self) -> Vec<u8> {
        let mut state = self.state.lock().expect("sim lock");
        self.end_process(&mut state)
    }

    /// The process ends: everything stored so far (every store declared),
    /// and the device is dead to it.
    fn end_process(&self, state: &mut State) -> Vec<u8> {
        self.absorb_lent(state);
        let current = self.current().to_vec();
        self.assert_every_store_declared(state, &current);
        state.dead = true;
        current
    }

    /// Kills the process, not the machine: returns the device the restarted
    /// process finds. Its memory is everything stored so far (the page
    /// cache, or persistent memory's caches, survive), but only what was
    /// committed is durable: a later power failure can still lose the rest.
    pub fn after_process_crash(&self) -> SimDevice {
        let mut state = self.state.lock().expect("sim lock");
        let current = self.end_process(&mut state);
        let device = SimDevice::from_image(current, self.mode);
        {
            let mut next = device.state.lock().expect("sim lock");
            let memory = device.current();
            next.dirty = (0..self.len / LINE)
                .filter(|&line| {
                    let at = (line * LINE) as usize;
                    memory[at..at + CACHE_LINE_SIZE] != state.durable[at..at + CACHE_LINE_SIZE]
                })
                .collect();
            next.durable = state.durable.clone();
        }
        device
    }

    /// The durable image plus a random choice for each uncommitted line.
    fn image(&self, state: &State, seed: u64) -> Vec<u8> {
        let current = self.current();
        self.assert_every_store_declared(state, current);
        let mut rng = SplitMix64::new(seed);
        let mut image = state.durable.clone();
        let lent = state.lent.iter().flat_map(|(&start, &end)| start..end);
        let candidates: BTreeSet<u64> = state.dirty.iter().chain(state.pending.keys()).copied().chain(lent).collect();
        for line in candidates {
            let at = (line * LINE) as usize;
            let durable = &state.durable[at..at + CACHE_LINE_SIZE];
            let flushed = state.pending.get(&line).map(|(s, _)| &s[..]);
            let now = &current[at..at + CACHE_LINE_SIZE];
            let out = &mut image[at..at + CACHE_LINE_SIZE];
            match rng.below(4) {
                0 => {} // never reached the media
                1 => out.copy_from_slice(now),
                2 => out.copy_from_slice(flushed.unwrap_or(now)),
                _ => {
                    for word in 0..WORDS_PER_LINE {
                        let source = match rng.below(3) {
                            0 => durable,
                            1 => flushed.unwrap_or(now),
                            _ => now,
                        };
                        out[word * 8..word * 8 + 8].copy_from_slice(&source[word * 8..word * 8 + 8]);
                    }
                }
            }
        }
        image
    }

    fn assert_every_store_declared(&self, state: &State, current: &[u8]) {
        for (line, (now, durable)) in
            current.chunks_exact(CACHE_LINE_SIZE).zip(state.durable.chunks_exact(CACHE_LINE_SIZE)).enumerate()
        {
            let line = line as u64;
            let lent = state.lent.range(..=line).next_back().is_some_and(|(_, &end)| line < end);
            if now != durable && !state.dirty.contains(&line) && !state.pending.contains_key(&line) && !lent {
                panic!("crash simulator: an undeclared store changed the line at offset {}", line * LINE);
            }
        }
    }
}

/// A line stays dirty only while the program's view differs from durable.
fn forget_clean_lines(state: &mut State, current: &[u8]) {
    let State { durable, dirty, .. } = state;
    dirty.retain(|&line| {
        let at = (line * LINE) as usize;
        durable[at..at + CACHE_LINE_SIZE] != current[at..at + CACHE_LINE_SIZE]
    });
}

fn power_lost() -> io::Error {
    io::Error::other("simulated power failure: the device is gone")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(device: &SimDevice, offset: u64, bytes: &[u8]) {
        // SAFETY: the test owns the device and stays within its length.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), device.memory_ptr().add(offset as usize), bytes.len()) };
        device.note_written(offset, bytes.len() as u64);
    }

    #[test]
    fn fenced_lines_survive_every_crash() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        store(&device, 100, &[0xAB; 200]);
        device.flush(100, 200);
        device.fence().unwrap();
        store(&device, 1000, &[0xCD; 64]);
        for seed in 0..100 {
            let image = device.image(&device.state.lock().unwrap(), seed);
            assert!(image[100..300].iter().all(|&b| b == 0xAB));
        }
    }

    #[test]
    fn unfenced_lines_may_or_may_not_survive_and_tear_at_words() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        store(&device, 0, &[0xFF; 64]);
        device.flush(0, 64);
        let (mut none, mut all, mut torn) = (0, 0, 0);
        for seed in 0..400 {
            let image = device.image(&device.state.lock().unwrap(), seed);
            for word in image[..64].chunks_exact(8) {
                assert!(word == [0; 8] || word == [0xFF; 8], "a word tore inside itself");
            }
            match image[..64].iter().filter(|&&b| b == 0xFF).count() {
                0 => none += 1,
                64 => all += 1,
                _ => torn += 1,
            }
        }
        assert!(none > 0 && all > 0 && torn > 0, "none {none} all {all} torn {torn}");
    }

    /// A store into memory lent to the kernel needs no declaration: the
    /// kernel's bytes may or may not survive a crash, and a page-mode
    /// fence commits them; once reclaimed, a new undeclared store is a bug.
    #[test]
    fn memory_lent_to_the_kernel_changes_without_declaration() {
        let device = SimDevice::new(4096, SimMode::Page);
        let raw = |offset: usize, byte: u8| {
            // SAFETY: the test owns the device and stays within its length.
            unsafe { *device.memory_ptr().add(offset) = byte };
        };
        device.lend(1024, 2048);
        raw(1500, 7);
        let images: Vec<u8> = (0..64).map(|seed| device.image(&device.state.lock().unwrap(), seed)[1500]).collect();
        assert!(images.contains(&0) && images.contains(&7), "the kernel's byte may or may not survive");
        device.fence().unwrap();
        assert_eq!(device.crash(1)[1500], 7);
        let device = SimDevice::new(4096, SimMode::CacheLine);
        device.lend(0, 1024);
        device.reclaim(0, 1024);
        // SAFETY: as above.
        unsafe { *device.memory_ptr().add(10) = 1 };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device.crash(0)));
        assert!(caught.is_err(), "an undeclared store after reclaim is caught");
    }

    #[test]
    fn page_mode_fence_commits_unflushed_writes() {
        let device = SimDevice::new(4096, SimMode::Page);
        store(&device, 128, &[9; 8]);
        device.fence().unwrap();
        assert_eq!(&device.crash(1)[128..136], &[9; 8]);
    }

    #[test]
    fn cache_line_fence_commits_only_flushed_lines_as_flushed() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        store(&device, 0, &[1; 8]);
        device.flush(0, 8);
        store(&device, 0, &[2; 8]); // after the flush: not covered by it
        device.fence().unwrap();
        let state = device.state.lock().unwrap();
        assert_eq!(&state.durable[..8], &[1; 8]);
        assert!(state.dirty.contains(&0), "the line still differs and must stay dirty");
    }

    #[test]
    fn armed_crash_happens_at_that_fence() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        device.crash_at_fence(2, 7);
        store(&device, 0, &[1; 8]);
        device.flush(0, 8);
        device.fence().unwrap();
        store(&device, 64, &[2; 8]);
        device.flush(64, 8);
        assert!(device.fence().is_err());
        let image = device.take_crash_image().expect("an image");
        assert_eq!(&image[..8], &[1; 8]);
        assert!(device.is_dead() && device.fence().is_err());
    }

    #[test]
    fn process_crash_keeps_memory_but_not_durability() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        store(&device, 0, &[3; 8]);
        let restarted = device.after_process_crash();
        assert!(device.is_dead());
        assert_eq!(&restarted.current()[..8], &[3; 8]);
        let lost = (0..100).any(|seed| restarted.image(&restarted.state.lock().unwrap(), seed)[..8] == [0; 8]);
        assert!(lost, "an unflushed store must be losable after the restart");
    }

    #[test]
    #[should_panic(expected = "undeclared store")]
    fn undeclared_store_is_caught() {
        let device = SimDevice::new(4096, SimMode::CacheLine);
        // SAFETY: in bounds; deliberately not declared.
        unsafe { *device.memory_ptr().add(70) = 1 };
        device.crash(0);
    }
}
