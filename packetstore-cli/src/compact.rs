//! `packetstore compact`: compaction started by hand, on a pool no server
//! is using (the lock says so): recovery, then relocation passes until no
//! pass can free buffers, then a checkpoint so the freed buffers are free
//! in the file too. A spinner on a terminal shows the values moved.
//!
//! It runs the server's own compactor (`compact.rs`) with a waste threshold
//! of the caller's choosing (default 0: whatever can free buffers), so what
//! it does is what a server left idle long enough would do.
//!
//! Given shard 0's file of a sharded data set, it compacts every shard, a
//! thread each: they open together (a transaction across shards is
//! decided from every shard's horizon, as at a server's start).

use std::path::{Path, PathBuf};

use anyhow::Context;
use packetstore::index::compact::CompactConfig;
use packetstore::store::db::{Alone, Horizons, Store, StoreConfig, TxnOracle};
use packetstore::PoolKindExt;
use packetstore::{Buffers, Pool, PoolError, PoolKind};

use crate::options::{refusal, PersistArgs};

#[derive(clap::Args)]
pub struct Args {
    /// The pool file (a key-value server's).
    pub pool: PathBuf,
    /// Relocate when at least this fraction of the value buffers' bytes is
    /// waste (0: whenever a pass can free buffers).
    #[arg(long, default_value_t = 0.0)]
    pub waste: f64,
    #[command(flatten)]
    pub persist: PersistArgs,
}

/// Passes at most; a pass that leaves the waste as it was ends it sooner.
const PASSES_MAX: u64 = 8;

pub fn run(args: Args) -> anyhow::Result<()> {
    let first = open_pool(&args.pool, &args)?;
    let Some(set) = first.header().shard.filter(|id| id.count > 1 && id.index == 0) else {
        return compact_pool(&first, (&Alone, 0), &args, "");
    };
    let mut pools = vec![first];
    for index in 1..set.count {
        let path = packetstore::pool::layout::shard_path(&args.pool, index);
        let pool = open_pool(&path, &args)?;
        let found = pool.header().shard;
        anyhow::ensure!(
            packetstore::launch::shards::is_shard_of(found, index, set),
            "{} is not shard {index} of {}'s data set of {} shards (its header: {found:?})",
            path.display(),
            args.pool.display(),
            set.count
        );
        pools.push(pool);
    }
    let horizons = Horizons::new(set.count);
    std::thread::scope(|scope| {
        let threads: Vec<_> = pools
            .into_iter()
            .enumerate()
            .map(|(index, pool)| {
                let (args, horizons) = (&args, &horizons);
                scope.spawn(move || {
                    let index = index as u16;
                    // Its horizon failed unless published: the others stop waiting.
                    let _unblock = packetstore::launch::shards::Unblock(horizons, index);
                    compact_pool(&pool, (horizons, index), args, &format!("shard {index}: "))
                })
            })
            .collect();
        threads.into_iter().try_for_each(|thread| thread.join().expect("a shard's compaction panicked"))
    })
}

fn open_pool(path: &Path, args: &Args) -> anyhow::Result<Pool> {
    Pool::open_as(path, PoolKind::KeyValue, &args.persist.options()?).map_err(|error| match error {
        PoolError::WrongKind { .. } => refusal(error, "`packetstore compact`", "give it a key-value pool's path"),
        other => anyhow::Error::from(other)
            .context(format!("cannot open the pool {} (is a server using it? stop it first)", path.display())),
    })
}

/// Recovers the store of `pool` (shard `txn.1` of the data set whose
/// horizons `txn.0` gathers), compacts it and checkpoints it; its lines
/// start with `prefix`.
fn compact_pool(pool: &Pool, txn: (&dyn TxnOracle, u16), args: &Args, prefix: &str) -> anyhow::Result<()> {
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let config = StoreConfig {
        compaction: CompactConfig { waste_min: args.waste, ..CompactConfig::default() },
        ..StoreConfig::default()
    };
    let (mut store, report) =
        Store::open_shard(pool, &mut buffers, config, txn, &mut |_, _| {}).context("recovery failed")?;
    println!("{prefix}recovery: {report}");
    store.finish_reclaim(pool, &mut buffers)?;
    store.checkpoint_all(pool, &mut buffers)?;
    // The compactor first counts the live bytes of every buffer.
    while !store.compaction().counted {
        store.compact_step(pool, &mut buffers, true)?;
    }
    let free_before = buffers.free_count();
    let waste_before = store.waste_ratio();
    let spinner = (prefix.is_empty() && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
        let spinner = indicatif::ProgressBar::new_spinner();
        spinner.set_style(
            indicatif::ProgressStyle::with_template("compaction {spinner} {msg} {elapsed}").expect("a valid template"),
        );
        spinner
    });
    let started = std::time::Instant::now();
    let mut waste_before_pass = waste_before;
    loop {
        let before = store.compaction();
        store.compact_step(pool, &mut buffers, true)?;
        if store.needs_commit() {
            store.commit(pool, &mut buffers)?;
        }
        let after = store.compaction();
        if let Some(spinner) = &spinner {
            spinner.set_message(format!(
                "pass {}: {} values, {} bytes moved",
                after.relocation_passes + 1,
                after.relocated_values,
                after.relocated_bytes
            ));
            spinner.tick();
        }
        if after.relocation_passes > before.relocation_passes {
            // A pass ended: another only if this one made the buffers
            // holding values less wasteful (moving the last, half-filled
            // destination buffer's values around frees nothing).
            let waste = store.waste_ratio();
            if waste > waste_before_pass - 0.001 || after.relocation_passes >= PASSES_MAX {
                break;
            }
            waste_before_pass = waste;
        } else if !before.running && !after.running {
            break; // no pass to run: nothing would free a buffer
        }
    }
    store.checkpoint_all(pool, &mut buffers)?;
    if let Some(spinner) = spinner {
        spinner.finish_and_clear();
    }
    let stats = store.compaction();
    println!(
        "{prefix}compaction: {} passes, {} values and {} bytes moved in {:.1} s; waste {:.1}% -> {:.1}%; free buffers {} -> {}",
        stats.relocation_passes,
        stats.relocated_values,
        stats.relocated_bytes,
        started.elapsed().as_secs_f64(),
        waste_before * 100.0,
        store.waste_ratio() * 100.0,
        free_before,
        buffers.free_count()
    );
    Ok(())
}
