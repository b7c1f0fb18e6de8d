//! Buffer reference counts and the free-buffer allocator (volatile; rebuilt
//! at recovery from the records that name buffers).
//!
//! Invariant: a buffer is free exactly when its count is zero, and then it
//! is found in exactly one of two places: the free stack (buffers released
//! below the sweep cursor) or at or above the sweep cursor. Allocation pops
//! the stack, else advances the cursor over referenced buffers. So a fresh
//! `Buffers` costs O(1) (the counts start as untouched zero pages) and
//! recovery touches only the buffers that live records name: its cost is
//! bounded by the live data, not by the size of the pool.
//!
//! A buffer with a nonzero count is never handed out: the log's promise
//! never to reuse a live buffer rests on this.
//!
//! The held region (the B+ tree's opening, issue 4): `hold_below(n)` makes
//! the buffers below `n` *unknown* rather than free: a persistent structure
//! may reference them and has not said which yet. Unknown buffers are not
//! counted free and never handed out; references come and go on them as
//! usual. `release_held` ends the region: each unknown buffer whose count
//! is then zero becomes free. So opening costs O(1), and the walk that
//! finds the references can run later, in steps.

use crate::error::BufferError;
use crate::limits::BUFFER_REFS_MAX;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::pool::staging::Staging;
pub use crate::pool::staging::StagingScope;

/// Free buffers below the sweep cursor: a stack (the most recently freed
/// first: warm in the caches), or ordered (the lowest first: a batch's
/// buffers are neighbours in the file, for the page domain, where every
/// sync writes back whole pages and contiguous ones go out together).
enum FreeList {
    Stack(Vec<u32>),
    Ordered(std::collections::BTreeSet<u32>),
}

impl FreeList {
    fn push(&mut self, index: u32) {
        match self {
            FreeList::Stack(stack) => stack.push(index),
            FreeList::Ordered(set) => {
                set.insert(index);
            }
        }
    }

    fn pop(&mut self) -> Option<u32> {
        match self {
            FreeList::Stack(stack) => stack.pop(),
            FreeList::Ordered(set) => set.pop_first(),
        }
    }

    fn remove(&mut self, index: u32) -> bool {
        match self {
            FreeList::Stack(stack) => match stack.iter().rposition(|&i| i == index) {
                Some(at) => {
                    stack.swap_remove(at);
                    true
                }
                None => false,
            },
            FreeList::Ordered(set) => set.remove(&index),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn len(&self) -> usize {
        match self {
            FreeList::Stack(stack) => stack.len(),
            FreeList::Ordered(set) => set.len(),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match self {
            FreeList::Stack(stack) => Box::new(stack.iter().copied()),
            FreeList::Ordered(set) => Box::new(set.iter().copied()),
        }
    }
}

pub struct Buffers {
    /// The first buffer index this allocator owns; it owns `counts.len()`.
    first: u32,
    counts: Vec<u16>,
    free_stack: FreeList,
    sweep_cursor: u32,
    free_count: u32,
    /// Buffers below this (relative) index with a zero count are unknown,
    /// not free (see the module comment); 0 when nothing is held.
    held: u32,
    /// One past the highest (relative) index ever handed out or retained,
    /// or held: every buffer anyone may reference is below it.
    high_water: u32,
    /// The references the running request staged (`staging.rs`).
    staging: Staging,
}

impl Buffers {
    /// `count` buffers, all free.
    pub fn new(count: u32) -> Buffers {
        Self::range(0, count)
    }

    /// Buffers `first..first + count` of a pool, all free: the share of one
    /// event loop (`Geometry::buffer_range`), with its own free list.
    pub fn range(first: u32, count: u32) -> Buffers {
        Buffers {
            first,
            counts: vec![0; count as usize],
            free_stack: FreeList::Stack(Vec::new()),
            sweep_cursor: 0,
            free_count: count,
            held: 0,
            high_water: 0,
            staging: Staging::default(),
        }
    }

    /// Makes the buffers below `end` (absolute index) unknown until
    /// `release_held`. Only before anything was handed out or released:
    /// references taken so far (by a log's recovery) stay. Costs one pass
    /// over the counts below `end`.
    pub fn hold_below(&mut self, end: u32) {
        assert!(
            self.sweep_cursor == 0 && self.free_stack.is_empty() && self.held == 0,
            "hold_below only on a fresh allocator"
        );
        let end = end.saturating_sub(self.first).min(self.count());
        let unknown = self.counts[..end as usize].iter().filter(|&&c| c == 0).count() as u32;
        self.free_count -= unknown;
        self.held = end;
        self.sweep_cursor = end;
        self.high_water = self.high_water.max(end);
    }

    /// Whether a held region is in force.
    pub fn is_holding(&self) -> bool {
        self.held > 0
    }

    /// Ends the held region: the unknown buffers whose count is zero
    /// become free. One pass over the region.
    pub fn release_held(&mut self) {
        for index in 0..self.held {
            if self.counts[index as usize] == 0 {
                self.free_stack.push(index);
                self.free_count += 1;
            }
        }
        self.held = 0;
    }

    /// One past the highest absolute buffer index anyone may reference:
    /// every buffer handed out or retained since this allocator began, and
    /// the held region, are below it.
    pub fn high_water(&self) -> u32 {
        self.first + self.high_water
    }

    /// The buffers owned: `first..first + count`.
    pub fn owned(&self) -> std::ops::Range<u32> {
        self.first..self.first + self.counts.len() as u32
    }

    pub fn count(&self) -> u32 {
        self.counts.len() as u32
    }

    pub fn free_count(&self) -> u32 {
        self.free_count
    }

    pub fn refs(&self, index: u32) -> u16 {
        self.counts[(index - self.first) as usize]
    }

    fn slot(&self, index: u32) -> Option<usize> {
        index.checked_sub(self.first).map(|i| i as usize).filter(|&i| i < self.counts.len())
    }

    /// Hands out the lowest free buffer first instead of the most recently
    /// freed (see `FreeList`): for pools in the page domain.
    pub fn set_sequential(&mut self, on: bool) {
        let free: Vec<u32> = self.free_stack.iter().collect();
        self.free_stack = if on { FreeList::Ordered(free.into_iter().collect()) } else { FreeList::Stack(free) };
    }

    /// Takes a free buffer; its count becomes 1 (the caller's reference).
    pub fn allocate(&mut self) -> Result<u32, BufferError> {
        let index = match self.free_stack.pop() {
            Some(index) => index,
            None => loop {
                if self.sweep_cursor as usize >= self.counts.len() {
                    assert_eq!(self.free_count, 0, "free buffers lost: stack empty, sweep done");
                    return Err(BufferError::PoolFull { count: self.count() });
                }
                let index = self.sweep_cursor;
                self.sweep_cursor += 1;
                if self.counts[index as usize] == 0 {
                    break index;
                }
            },
        };
        assert_eq!(self.counts[index as usize], 0, "buffer {index} handed out while referenced");
        assert!(index >= self.held, "buffer {index} handed out from the held region");
        self.counts[index as usize] = 1;
        self.free_count -= 1;
        self.high_water = self.high_water.max(index + 1);
        Ok(self.first + index)
    }

    /// Adds a reference to a buffer; a free buffer becomes referenced (as
    /// recovery does for buffers named by records).
    pub fn retain(&mut self, buffer: u32) -> Result<(), BufferError> {
        let index = self.slot(buffer).ok_or(BufferError::OutOfRange(buffer))? as u32;
        let count = &mut self.counts[index as usize];
        if *count == BUFFER_REFS_MAX {
            return Err(BufferError::TooManyRefs(buffer));
        }
        *count += 1;
        self.high_water = self.high_water.max(index + 1);
        if *count == 1 && index < self.held {
            // It was unknown, not free: nothing to take out.
        } else if *count == 1 {
            // It was free: take it out of where free buffers are kept.
            self.free_count -= 1;
            if index < self.sweep_cursor {
                let found = self.free_stack.remove(index);
                assert!(found, "a free buffer below the cursor is in the free list");
            }
        }
        Ok(())
    }

    /// Drops a reference; at zero the buffer is free again. Returns whether
    /// it became free.
    pub fn release(&mut self, buffer: u32) -> Result<bool, BufferError> {
        let became_free = self.release_unstaged(buffer)?;
        self.staging.note_given_back(buffer);
        Ok(became_free)
    }

    /// `release` of a reference that was never staged by a request (an
    /// owner's own, such as the store's copy arena): it pairs with nothing
    /// in the staging ledger.
    pub fn release_unstaged(&mut self, buffer: u32) -> Result<bool, BufferError> {
        let index = self.slot(buffer).ok_or(BufferError::OutOfRange(buffer))? as u32;
        let count = &mut self.counts[index as usize];
        if *count == 0 {
            return Err(BufferError::NotReferenced(buffer));
        }
        *count -= 1;
        if *count > 0 {
            return Ok(false);
        }
        if index < self.held {
            // Unknown until the region is released: someone may still
            // reference it without having said so yet.
            return Ok(false);
        }
        self.free_count += 1;
        if index < self.sweep_cursor {
            self.free_stack.push(index);
        }
        Ok(true)
    }

    /// Copies `data` into freshly allocated buffers of `pool`, filling each
    /// from offset 0, and appends their extents to `extents`. The caller
    /// holds one reference on each buffer. On a full pool nothing is kept:
    /// the buffers taken so far are released and `extents` is unchanged.
    /// This is the copy path (data received elsewhere); zero copy receives
    /// straight into pool buffers instead.
    pub fn copy_in(&mut self, pool: &Pool, data: &[u8], extents: &mut Vec<Extent>) -> Result<(), BufferError> {
        let size = pool.geometry().buffer_size as usize;
        let first = extents.len();
        for chunk in data.chunks(size) {
            match self.allocate() {
                Ok(buffer) => {
                    pool.write(pool.buffer_offset(buffer), chunk);
                    extents.push(Extent::new(buffer, 0, chunk.len()));
                }
                Err(error) => {
                    for extent in extents.drain(first..) {
                        self.release(extent.buffer).expect("allocated above");
                    }
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// Appends `bytes` to a value being copied into the pool (the copy
    /// path): packed after `fill` bytes of the last extent's buffer, which
    /// this function allocated for the value (`fill` is None until it has),
    /// continuing in fresh buffers. The caller holds one reference on each
    /// buffer added. On a full pool it stops and returns the error; the
    /// extents added so far stay for the caller to release.
    pub fn copy_packed(
        &mut self,
        pool: &Pool,
        extents: &mut Vec<Extent>,
        fill: &mut Option<usize>,
        mut bytes: &[u8],
    ) -> Result<(), BufferError> {
        let size = pool.geometry().buffer_size as usize;
        while !bytes.is_empty() {
            let used = match *fill {
                Some(used) if used < size => used,
                _ => {
                    let buffer = self.allocate()?;
                    extents.push(Extent::new(buffer, 0, 0));
                    0
                }
            };
            let last = extents.last_mut().expect("a copy buffer");
            let n = bytes.len().min(size - used);
            pool.write(pool.buffer_offset(last.buffer) + used as u64, &bytes[..n]);
            *last = Extent::new(last.buffer, 0, used + n);
            *fill = Some(used + n);
            bytes = &bytes[n..];
        }
        Ok(())
    }

    /// Drops the caller's reference on each extent's buffer.
    pub fn release_extents(&mut self, extents: &[Extent]) -> Result<(), BufferError> {
        for extent in extents {
            self.release(extent.buffer)?;
        }
        Ok(())
    }

    /// `retain` for the running request: the reference is noted in the
    /// staging ledger, so a panic that unwinds the request gives it back.
    pub fn retain_staged(&mut self, buffer: u32) -> Result<(), BufferError> {
        self.retain(buffer)?;
        self.staging.note_taken(buffer);
        Ok(())
    }

    /// Notes references the running request already holds (a body it
    /// received, taken over from its connection) as staged by it.
    pub fn adopt_staged(&mut self, extents: &[Extent]) {
        for extent in extents {
            self.staging.note_taken(extent.buffer);
        }
    }

    /// Begins a request's staging scope (they nest).
    pub fn begin_staging(&mut self) -> StagingScope {
        self.staging.begin()
    }

    /// Ends a scope whose request finished: what it still holds is owned
    /// elsewhere now (a reply queue). Returns how many references that is.
    pub fn end_staging(&mut self, scope: StagingScope) -> u64 {
        self.staging.end_counted(scope)
    }

    /// Ends a scope whose request panicked: gives back every reference it
    /// staged and did not give back. Returns how many.
    pub fn unwind_staging(&mut self, scope: StagingScope) -> u64 {
        let mut released = 0;
        for (buffer, refs) in self.staging.end(scope) {
            for _ in 0..refs {
                // A scope's count never exceeds the references taken in it
                // (see `staging.rs`): an error is a bug in the ledger.
                self.release_unstaged(buffer).expect("a staged reference");
                // Outer scopes may have staged the same buffer: they did
                // not take this reference, so they pair with nothing here.
                released += 1;
            }
        }
        released
    }

    /// Checks the invariant in full: O(buffers), for tests.
    pub fn check_invariants(&self) {
        let held = self.held as usize;
        let free = self.counts[held..].iter().filter(|&&c| c == 0).count() as u32;
        assert_eq!(free, self.free_count, "free count (held buffers are not free)");
        let below: usize = self.counts[held..self.sweep_cursor as usize].iter().filter(|&&c| c == 0).count();
        assert_eq!(below, self.free_stack.len(), "free buffers below the cursor are exactly the stack");
        for index in self.free_stack.iter() {
            assert!(
                index >= self.held && index < self.sweep_cursor && self.counts[index as usize] == 0,
                "stack holds buffer {index}"
            );
        }
        assert!(self.held <= self.sweep_cursor, "the held region is below the cursor");
        let highest = self.counts.iter().rposition(|&c| c > 0).map_or(0, |i| i as u32 + 1);
        assert!(highest <= self.high_water && self.sweep_cursor <= self.high_water, "the high-water mark");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::SplitMix64;

    /// A request's staged references come back when it panics (its scope
    /// is unwound), not when it ends; releases pair with the innermost
    /// scope that staged the buffer; nothing it did not take is released.
    #[test]
    fn a_panicked_request_gives_back_only_what_it_staged() {
        let mut buffers = Buffers::new(8);
        let kept = buffers.allocate().unwrap();
        let outer = buffers.begin_staging();
        buffers.retain_staged(kept).unwrap();
        let inner = buffers.begin_staging();
        buffers.retain_staged(kept).unwrap();
        buffers.retain_staged(kept).unwrap();
        buffers.release(kept).unwrap();
        assert_eq!(buffers.unwind_staging(inner), 1, "the inner scope's one unreleased reference");
        assert_eq!(buffers.refs(kept), 2);
        assert_eq!(buffers.unwind_staging(outer), 1);
        assert_eq!(buffers.refs(kept), 1, "the reference taken before any scope stays");
        let scope = buffers.begin_staging();
        buffers.retain_staged(kept).unwrap();
        assert_eq!(buffers.end_staging(scope), 1, "a request that ended hands its references on");
        assert_eq!(buffers.refs(kept), 2);
        buffers.check_invariants();
    }

    #[test]
    fn never_hands_out_a_referenced_buffer() {
        let mut buffers = Buffers::new(64);
        let mut rng = SplitMix64::new(5);
        let mut held: Vec<u32> = Vec::new();
        for _ in 0..20_000 {
            match rng.below(4) {
                0 | 1 => match buffers.allocate() {
                    Ok(index) => {
                        assert!(!held.contains(&index), "buffer {index} handed out twice");
                        held.push(index);
                    }
                    Err(BufferError::PoolFull { .. }) => assert_eq!(held.len(), 64),
                    Err(e) => panic!("{e}"),
                },
                2 if !held.is_empty() => {
                    let index = held.swap_remove(rng.below(held.len() as u64) as usize);
                    assert!(buffers.release(index).unwrap());
                }
                _ => {
                    // A reference taken on a free buffer (as recovery does).
                    let index = rng.below(64) as u32;
                    if buffers.refs(index) == 0 {
                        buffers.retain(index).unwrap();
                        held.push(index);
                    }
                }
            }
            buffers.check_invariants();
            assert_eq!(buffers.free_count() as usize, 64 - held.len());
        }
    }

    #[test]
    fn copy_in_keeps_nothing_when_the_pool_fills() {
        use crate::{Geometry, Pool, SimDevice, SimMode};
        let geometry = Geometry { buffer_size: 512, buffer_count: 16, log_size: 16 * 1024, log_count: 1 };
        let device = std::sync::Arc::new(SimDevice::new(geometry.file_size(), SimMode::CacheLine));
        let pool = Pool::create_simulated(device, geometry).unwrap();
        let mut buffers = Buffers::new(16);
        let mut extents = vec![Extent::new(0, 0, 1)]; // the caller's earlier extent stays
        buffers.retain(0).unwrap();
        let data: Vec<u8> = (0..1300u32).map(|i| i as u8).collect();
        buffers.copy_in(&pool, &data, &mut extents).unwrap();
        assert_eq!(extents.len(), 4, "1300 bytes take three 512-byte buffers");
        let mut read = vec![0u8; 1300];
        for (i, extent) in extents[1..].iter().enumerate() {
            pool.read(pool.buffer_offset(extent.buffer), &mut read[i * 512..i * 512 + extent.len as usize]);
        }
        assert_eq!(read, data);
        assert_eq!(buffers.free_count(), 12);
        let too_big = vec![1u8; 512 * 13];
        assert_eq!(buffers.copy_in(&pool, &too_big, &mut extents), Err(BufferError::PoolFull { count: 16 }));
        assert_eq!(extents.len(), 4, "a failed copy leaves the extents as they were");
        assert_eq!(buffers.free_count(), 12, "a failed copy keeps no buffer");
        buffers.check_invariants();
    }

    /// Goal: held buffers are never handed out or counted free, references
    /// on them come and go, and releasing the region frees exactly those
    /// left at zero.
    #[test]
    fn held_buffers_are_unknown_until_released() {
        let mut buffers = Buffers::new(32);
        buffers.retain(3).unwrap(); // a log's recovery, before the hold
        buffers.hold_below(10);
        assert_eq!(buffers.free_count(), 22, "only the buffers above the region are free");
        assert_eq!(buffers.high_water(), 10);
        buffers.retain(5).unwrap(); // the walk finds buffer 5
        buffers.retain(7).unwrap();
        assert!(!buffers.release(7).unwrap(), "a held buffer at zero stays unknown");
        assert!(!buffers.release(3).unwrap());
        let mut handed = Vec::new();
        while let Ok(index) = buffers.allocate() {
            assert!(index >= 10, "buffer {index} handed out from the held region");
            handed.push(index);
        }
        assert_eq!(handed.len(), 22);
        buffers.check_invariants();
        buffers.release_held();
        assert_eq!(buffers.free_count(), 9, "all of 0..10 but buffer 5");
        buffers.check_invariants();
        let mut again: Vec<u32> = std::iter::from_fn(|| buffers.allocate().ok()).collect();
        again.sort_unstable();
        assert_eq!(again, vec![0, 1, 2, 3, 4, 6, 7, 8, 9]);
        assert_eq!(buffers.high_water(), 32);
    }

    #[test]
    fn errors() {
        let mut buffers = Buffers::new(16);
        assert_eq!(buffers.release(3), Err(BufferError::NotReferenced(3)));
        assert_eq!(buffers.retain(16), Err(BufferError::OutOfRange(16)));
        for _ in 0..16 {
            buffers.allocate().unwrap();
        }
        assert_eq!(buffers.allocate(), Err(BufferError::PoolFull { count: 16 }));
    }

    #[test]
    fn sequential_hands_out_the_lowest_free_buffer() {
        let mut buffers = Buffers::new(16);
        buffers.set_sequential(true);
        let taken: Vec<u32> = (0..8).map(|_| buffers.allocate().unwrap()).collect();
        for &index in [6u32, 2, 4].iter() {
            buffers.release(taken[index as usize]).unwrap();
        }
        assert_eq!(buffers.allocate().unwrap(), 2, "the lowest free, not the last freed");
        assert_eq!(buffers.allocate().unwrap(), 4);
        buffers.retain(6).unwrap();
        assert_eq!(buffers.allocate().unwrap(), 8, "then the sweep goes on");
        buffers.check_invariants();
        buffers.set_sequential(false);
        buffers.release(3).unwrap();
        buffers.release(1).unwrap();
        assert_eq!(buffers.allocate().unwrap(), 1, "a stack again: the last freed");
        buffers.check_invariants();
    }
}
