//! What the store publishes for one-sided readers (issue 20,
//! docs/one-sided-reads.md): each durable put or delete, in the
//! recent-writes table, once the commit that made it durable is done and
//! before its reply leaves; and the tree's read lease.
//!
//! Owns: the writes waiting to be published (those of an open group wait
//! for its end: a paused script's writes are committed before they are
//! acknowledged, and must not be seen until then).
//!
//! Invariant: a write is published only after a commit that covers it is
//! durable, with the tree generation that will first hold it (its batch).

use std::time::Instant;

use crate::index::tree::TreeError;
use crate::pool::buffers::Buffers;
use crate::reader::recent::{key_hash, Recent};
use crate::store::db::Store;

pub use crate::reader::recent::READ_LEASE;

/// The table and what waits to go into it.
pub(crate) struct Publishing {
    table: Recent,
    /// (key hash, lsn) of the open group's writes.
    group: Vec<(u64, u64)>,
    /// (key hash, batch, lsn) of writes appended since the last commit began.
    ready: Vec<(u64, u64, u64)>,
}

/// Writes a commit in flight covers, published when it is durable.
#[derive(Default)]
pub struct Unpublished(Vec<(u64, u64, u64)>);

impl Store {
    /// Publishes durable writes into `table` from now on, and keeps what
    /// checkpoints release for `READ_LEASE`.
    pub fn publish_for_readers(&mut self, buffers: &mut Buffers, table: Recent) -> Result<(), TreeError> {
        assert!(self.repl.is_none(), "a replicated store does not publish (its followers apply later)");
        self.tree.set_read_lease(buffers, Some(READ_LEASE))?;
        self.published = Some(Publishing { table, group: Vec::new(), ready: Vec::new() });
        Ok(())
    }

    /// A put or delete of tree key `key` was appended at `lsn`.
    pub(super) fn note_appended(&mut self, key: &[u8], lsn: u64) {
        let batch = self.tree.batch_generation();
        let in_group = self.group.is_some();
        let Some(published) = self.published.as_mut() else { return };
        match in_group {
            true => published.group.push((key_hash(key), lsn)),
            false => published.ready.push((key_hash(key), batch, lsn)),
        }
    }

    /// How many writes wait to be published (for `forget_unpublished`).
    pub(super) fn unpublished_mark(&self) -> (usize, usize) {
        self.published.as_ref().map_or((0, 0), |p| (p.group.len(), p.ready.len()))
    }

    /// A command failed after appending some records (released at once):
    /// its writes, noted since `mark`, are never published.
    pub(super) fn forget_unpublished(&mut self, mark: (usize, usize)) {
        if let Some(published) = self.published.as_mut() {
            published.group.truncate(mark.0);
            published.ready.truncate(mark.1);
        }
    }

    /// The open group ended: its writes go with the next commit.
    pub(super) fn note_group_end(&mut self) {
        let batch = self.tree.batch_generation();
        let Some(published) = self.published.as_mut() else { return };
        let group = std::mem::take(&mut published.group);
        published.ready.extend(group.into_iter().map(|(hash, lsn)| (hash, batch, lsn)));
    }

    /// The writes the commit beginning now covers.
    pub(super) fn take_unpublished(&mut self) -> Unpublished {
        Unpublished(self.published.as_mut().map(|p| std::mem::take(&mut p.ready)).unwrap_or_default())
    }

    /// The commit that covered `writes` is durable: readers may see them;
    /// leases that have passed are released.
    pub(super) fn publish(&mut self, buffers: &mut Buffers, writes: Unpublished) -> Result<(), TreeError> {
        let Some(published) = self.published.as_ref() else { return Ok(()) };
        if !writes.0.is_empty() {
            published.table.begin_publish();
            for (hash, batch, lsn) in writes.0 {
                published.table.publish(hash, batch, lsn);
            }
            published.table.end_publish();
        }
        self.tree.release_leased(buffers, Some(Instant::now()))?;
        Ok(())
    }
}
