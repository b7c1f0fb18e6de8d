//! One-sided readers' side of `packetstore serve` (`--one-sided-reads`,
//! docs/one-sided-reads.md): the pool file's mode, the removal of tables
//! left by servers that are gone, and the recent-writes table a server (or
//! each shard) publishes for readers.
//!
//! Owns: a server's table, from its creation to its removal at the stop.
//!
//! Invariant: the table exists and is named in the pool before any client
//! is served, so every write acknowledged from then on is seen by readers.

use anyhow::Context;

use crate::launch::config::ServeConfig;
use crate::launch::setup::set_pool_mode;
use crate::store::db::Store;
use crate::{Buffers, Pool};

/// The pool's mode, and with `--one-sided-reads` the readers' table
/// (removed when the returned guard drops, as the server stops). Tables
/// left by servers that are gone are removed first.
pub(super) fn set_up_readers(
    (config, path): (&ServeConfig, &std::path::Path),
    pool: &Pool,
    store: &mut Store,
    buffers: &mut Buffers,
    shared: bool,
) -> anyhow::Result<Option<RemoveTable>> {
    set_pool_mode(path, config.pool_group_read)?;
    match crate::reader::stale::remove_stale_tables() {
        Ok(removed) if !removed.is_empty() => {
            tracing::info!("removed {} one-sided readers' tables left by servers that are gone", removed.len())
        }
        Ok(_) => {}
        Err(error) => tracing::warn!("looking for one-sided readers' tables left in /dev/shm: {error}"),
    }
    if !config.one_sided_reads {
        return Ok(None);
    }
    assert!(!shared, "Plan::new refuses --one-sided-reads on a group node or the crash simulator");
    publish_for_readers(path, pool, store, buffers, config.pool_group_read).map(Some)
}

/// Removes the server's one-sided readers' table when dropped: as it stops
/// (32 MiB of tmpfs each; readers that have it mapped keep their mapping
/// and see the pool untrust it).
pub(super) struct RemoveTable(std::path::PathBuf);

impl Drop for RemoveTable {
    fn drop(&mut self) {
        if let Err(error) = crate::reader::stale::remove_table(&self.0) {
            tracing::warn!("removing the one-sided readers' table {}: {error}", self.0.display());
        }
    }
}

/// Creates the recent-writes table for one-sided readers, makes the store
/// publish into it, and names it in the pool (before any client is
/// served, so a write acknowledged from now on is seen by readers).
fn publish_for_readers(
    path: &std::path::Path,
    pool: &Pool,
    store: &mut Store,
    buffers: &mut Buffers,
    group_read: bool,
) -> anyhow::Result<RemoveTable> {
    use crate::reader::recent::{table_path, Recent, BUCKETS_DEFAULT};
    let table_path = table_path(path)?;
    let instance = random_nonzero_u64().context("reading /dev/urandom")?;
    let mode = if group_read { 0o640 } else { 0o600 };
    let pool_id = pool.header().creation_id as u64;
    let table = Recent::create(&table_path, BUCKETS_DEFAULT, mode, instance, pool_id)
        .with_context(|| format!("creating the one-sided readers' table {}", table_path.display()))?;
    store.publish_for_readers(buffers, table).context("setting the tree's read lease")?;
    pool.set_reader_instance(instance);
    println!("one-sided reads: table {}, instance {instance:016x}", table_path.display());
    Ok(RemoveTable(table_path))
}

fn random_nonzero_u64() -> std::io::Result<u64> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    loop {
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        if u64::from_le_bytes(bytes) != 0 {
            return Ok(u64::from_le_bytes(bytes));
        }
    }
}
