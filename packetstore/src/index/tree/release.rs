//! When the buffers a commit stops referencing are released: at once, or
//! after the one-sided readers' lease (`set_read_lease`), and never while a
//! committed version is pinned for a reader that spans loop turns (a
//! snapshot stream: `pin_committed`).
//!
//! Invariant: while `pins > 0`, every buffer a commit drops waits in
//! `pinned_held`, so no node or value of a pinned version is reused or
//! written; the last `unpin` hands them to the lease (or releases them).

use super::*;

impl Tree {
    /// Releases what a commit stopped referencing, now or after the read
    /// lease.
    pub(super) fn release_after_lease(&mut self, buffers: &mut Buffers, release: Vec<u32>) -> Result<(), TreeError> {
        match self.read_lease {
            // The new slot is durable (and visible) before this instant.
            Some(lease) => self.leased.push_back((std::time::Instant::now() + lease, release)),
            None => {
                for buffer in release {
                    self.release(buffers, buffer)?;
                }
            }
        }
        Ok(())
    }

    /// Pins the last committed version for a reader that spans loop turns
    /// (`range_in`): until `unpin`, commits release nothing it references.
    pub fn pin_committed(&mut self) -> Version {
        self.pins += 1;
        Version(self.committed)
    }

    /// Ends a pin of `pin_committed`; the last one releases what commits
    /// held back meanwhile.
    pub fn unpin(&mut self, buffers: &mut Buffers) -> Result<(), TreeError> {
        assert!(self.pins > 0, "an unpin without its pin");
        self.pins -= 1;
        if self.pins == 0 {
            let held = std::mem::take(&mut self.pinned_held);
            self.release_after_lease(buffers, held)?;
        }
        Ok(())
    }

    /// Buffers held back for pinned versions.
    pub fn pinned_buffers(&self) -> usize {
        self.pinned_held.len()
    }

    /// Keeps what commits stop referencing for `lease` after each commit
    /// (one-sided readers, docs/one-sided-reads.md); `None` releases at
    /// once, and releases what waits now.
    pub fn set_read_lease(
        &mut self,
        buffers: &mut Buffers,
        lease: Option<std::time::Duration>,
    ) -> Result<(), TreeError> {
        self.read_lease = lease;
        if lease.is_none() {
            self.release_leased(buffers, None)?;
        }
        Ok(())
    }

    /// Releases the buffers whose read lease has passed at `now` (all of
    /// them for `None`); returns how many.
    pub fn release_leased(
        &mut self,
        buffers: &mut Buffers,
        now: Option<std::time::Instant>,
    ) -> Result<usize, TreeError> {
        let mut released = 0;
        while self.leased.front().is_some_and(|(due, _)| now.is_none_or(|now| *due <= now)) {
            let (_, batch) = self.leased.pop_front().expect("checked");
            released += batch.len();
            for buffer in batch {
                self.release(buffers, buffer)?;
            }
        }
        Ok(released)
    }

    /// Buffers waiting for the read lease.
    pub fn leased_buffers(&self) -> usize {
        self.leased.iter().map(|(_, batch)| batch.len()).sum()
    }
}
