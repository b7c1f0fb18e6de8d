//! `packetstore crash-writer` (hidden): the child of the kill -9 test.
//!
//! Recovers the pool, checks every recovered record against the payload
//! its number determines, then appends and commits batches until killed,
//! printing `releasing N` before a commit that releases record N and
//! `committed N...` after a commit returns. With `--verify` it only
//! recovers, checks, and prints `live N...`. The test that drives it knows
//! nothing of the payloads: a bad record makes this process fail.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use packetstore::util::rng::SplitMix64;
use packetstore::PoolKindExt;
use packetstore::{Buffers, Geometry, Log, LogError, PersistOptions, Pool, PoolKind};

/// A writer runs at most this long, so a test that forgets it cannot leak it.
const RUN_TIME_MAX: Duration = Duration::from_secs(60);
const GEOMETRY: Geometry = Geometry { buffer_size: 1024, buffer_count: 2048, log_size: 128 * 1024, log_count: 1 };

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    pub pool: PathBuf,
    /// Recover, check and list the live records, then exit.
    #[arg(long)]
    pub verify: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The data of record `number`: 1 to 3000 bytes determined by the number.
fn payload(number: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(number ^ 0xC0FF_EE00);
    let mut data = vec![0u8; 1 + rng.below(3000) as usize];
    rng.fill(&mut data);
    data
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let pool = Pool::open_or_create_as(&args.pool, PoolKind::Log, GEOMETRY, &PersistOptions::default())?;
    let mut buffers = Buffers::new(GEOMETRY.buffer_count);
    let (mut log, _) = Log::recover(&pool, &mut buffers)?;
    let mut live = Vec::new();
    for lsn in log.live_lsns().collect::<Vec<_>>() {
        let view = log.view(&pool, lsn)?;
        let number = view.tag;
        ensure!(view.key == number.to_le_bytes(), "record at lsn {lsn}: key does not match its number {number}");
        ensure!(log.read_data(&pool, &view) == payload(number), "record {number} (lsn {lsn}) has the wrong data");
        live.push(number);
    }
    let mut out = std::io::stdout().lock();
    if args.verify {
        writeln!(out, "live {}", join(&live))?;
        return Ok(());
    }
    let mut rng = SplitMix64::new(args.seed);
    let mut next = live.iter().max().map_or(0, |n| n + 1);
    let started = Instant::now();
    while started.elapsed() < RUN_TIME_MAX {
        let mut batch = Vec::new();
        for _ in 0..1 + rng.below(8) {
            let data = payload(next);
            let mut extents = Vec::new();
            while buffers.copy_in(&pool, &data, &mut extents).is_err() {
                release_oldest(&pool, &mut buffers, &mut log, &mut out)?;
            }
            loop {
                match log.append(&pool, &mut buffers, 1, next, &next.to_le_bytes(), &extents) {
                    Ok(_) => break,
                    Err(LogError::LogFull { .. }) => release_oldest(&pool, &mut buffers, &mut log, &mut out)?,
                    Err(error) => bail!(error),
                }
            }
            buffers.release_extents(&extents)?;
            batch.push(next);
            next += 1;
        }
        log.commit(&pool, &mut buffers)?;
        writeln!(out, "committed {}", join(&batch))?;
        out.flush()?;
    }
    Ok(())
}

fn release_oldest(pool: &Pool, buffers: &mut Buffers, log: &mut Log, out: &mut impl Write) -> anyhow::Result<()> {
    let victims: Vec<u64> = log.live_lsns().take(16).collect();
    ensure!(!victims.is_empty(), "nothing to release");
    let numbers = victims.iter().map(|&lsn| Ok(log.view(pool, lsn)?.tag)).collect::<anyhow::Result<Vec<u64>>>()?;
    writeln!(out, "releasing {}", join(&numbers))?;
    out.flush()?;
    for lsn in victims {
        log.release(pool, lsn)?;
    }
    log.commit(pool, buffers)?;
    Ok(())
}

fn join(numbers: &[u64]) -> String {
    numbers.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" ")
}
