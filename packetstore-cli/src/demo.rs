//! `packetstore demo`: the pool and log at work, end to end. Creates the
//! pool on first run; each run recovers what earlier runs committed,
//! appends records (data written into pool buffers, as the network engine
//! will receive it), commits them in batches, and releases the oldest when
//! the pool or log fills.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use packetstore::PoolKindExt;
use packetstore::{Buffers, Geometry, Log, LogError, Pool, PoolKind};

use crate::options::{parse_size, refusal, PersistArgs};

#[derive(clap::Args)]
pub struct Args {
    /// The pool file (created if missing).
    #[arg(long, default_value = "packetstore-data/demo.pool")]
    pub pool: PathBuf,
    /// Size of a new pool (an existing pool keeps its size).
    #[arg(long, default_value = "64MiB")]
    pub pool_size: String,
    /// Records to append.
    #[arg(long, default_value_t = 1000)]
    pub records: u64,
    /// Records per commit.
    #[arg(long, default_value_t = 16)]
    pub batch: u64,
    /// Bytes of data per record.
    #[arg(long, default_value_t = 1024)]
    pub record_size: usize,
    #[command(flatten)]
    pub persist: PersistArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = args.persist.options()?;
    if let Some(parent) = args.pool.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    // The size applies to a new pool only; an existing pool opens as it is.
    let existed = args.pool.exists();
    let pool = if existed {
        Pool::open_as(&args.pool, PoolKind::Log, &options)
            .map_err(|error| refusal(error, "`packetstore demo`", "give --pool another path"))?
    } else {
        let geometry = Geometry::for_file_size(parse_size(&args.pool_size)?, 2048, 4 << 20)
            .map_err(|e| anyhow::anyhow!("pool size {}: {e}", args.pool_size))?;
        Pool::create_as(&args.pool, PoolKind::Log, geometry, &options)?
    };
    println!(
        "{} pool {} ({:.1} MiB, {})",
        if existed { "opened" } else { "created" },
        args.pool.display(),
        pool.len() as f64 / 1048576.0,
        pool.geometry()
    );
    println!("persistence domain: {}", pool.domain());
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let (mut log, report) = Log::recover(&pool, &mut buffers)?;
    println!("recovery: {report}");
    let first = log.live_lsns().next();
    let last = log.live_lsns().last();
    if let (Some(first), Some(last)) = (first, last) {
        let (a, b) = (log.view(&pool, first)?, log.view(&pool, last)?);
        println!("  oldest record {:?}, newest {:?}", String::from_utf8_lossy(&a.key), String::from_utf8_lossy(&b.key));
    }
    let start_number = match last {
        Some(lsn) => log.view(&pool, lsn)?.tag + 1,
        None => 0,
    };
    let started = Instant::now();
    let mut released = 0;
    let mut payload = vec![0u8; args.record_size.max(1)];
    for number in start_number..start_number + args.records {
        for (i, byte) in payload.iter_mut().enumerate() {
            *byte = (number as usize).wrapping_mul(31).wrapping_add(i) as u8;
        }
        let key = format!("demo-{number}");
        // Written into pool buffers, as the network engine receives it.
        let mut extents = Vec::new();
        while buffers.copy_in(&pool, &payload, &mut extents).is_err() {
            released += release_oldest(&pool, &mut buffers, &mut log)?;
        }
        loop {
            match log.append(&pool, &mut buffers, 1, number, key.as_bytes(), &extents) {
                Ok(_) => break,
                Err(LogError::LogFull { .. } | LogError::BatchFull { .. }) => {
                    released += release_oldest(&pool, &mut buffers, &mut log)?
                }
                Err(error) => return Err(error.into()),
            }
        }
        buffers.release_extents(&extents)?; // the log holds its own references now
        if (number + 1 - start_number) % args.batch.max(1) == 0 {
            log.commit(&pool, &mut buffers)?;
        }
    }
    log.checkpoint(&pool, &mut buffers)?;
    let seconds = started.elapsed().as_secs_f64();
    let usage = log.usage();
    println!(
        "appended {} records of {} bytes in batches of {} ({:.0} records/s), released {} old ones; {} live records, {} free buffers",
        args.records, args.record_size, args.batch, args.records as f64 / seconds, released, usage.live_records, buffers.free_count()
    );
    println!("run again to see them recovered; `packetstore inspect {}` shows the pool", args.pool.display());
    Ok(())
}

/// Releases the oldest quarter of the live records and commits.
fn release_oldest(pool: &Pool, buffers: &mut Buffers, log: &mut Log) -> anyhow::Result<u64> {
    let victims: Vec<u64> = log.live_lsns().collect();
    let count = (victims.len() / 4).max(1).min(victims.len());
    anyhow::ensure!(count > 0, "the pool is too small for one record");
    for &lsn in &victims[..count] {
        log.release(pool, lsn)?;
    }
    log.commit(pool, buffers)?;
    Ok(count as u64)
}
