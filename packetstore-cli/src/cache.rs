//! `packetstore cache recover POOL`: applies the write cache's live records
//! (writes that returned to a program under `packetstore-preload` and were
//! not yet written back) to their files, syncs them, and empties the log,
//! so the files are whole without the preload library. The library does
//! the same at its first call after a crash.

use std::path::PathBuf;

use anyhow::Context;
use packetstore::apps::cache::{Cache, PathFiles};
use packetstore::{PersistOptions, Pool, PoolKind, PoolKindExt};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Replay a write-cache pool's pending writes into their files.
    Recover {
        /// The pool (PACKETSTORE_CACHE_POOL of the program that used it).
        pool: PathBuf,
    },
}

pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Recover { pool } => recover(pool),
    }
}

fn recover(path: PathBuf) -> anyhow::Result<()> {
    let pool = Pool::open_as(&path, PoolKind::WriteCache, &PersistOptions::default())
        .with_context(|| format!("opening {}", path.display()))?;
    let (cache, report) = Cache::recover(pool, &mut PathFiles).context("replaying the cache's records")?;
    println!(
        "{}: replayed {} records ({} bytes) to {} files, synced; {} records left",
        path.display(),
        report.records,
        report.bytes,
        report.files,
        cache.live_records()
    );
    Ok(())
}
