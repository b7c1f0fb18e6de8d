//! The steps every key-value event loop takes around serving, one server
//! or a shard: its store's recovery, its configuration, its start-up
//! lines, and its checkpoint after a graceful stop.

use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::Context;

use crate::apps::kv::{KvConfig, KvServer};
use crate::index::compact::CompactConfig;
use crate::io::engine::EngineConfig;
use crate::launch::config::Plan;
use crate::store::db::{Store, StoreConfig};
use crate::{Buffers, Pool};

/// Shard `index`'s key-value configuration: the plan's, with its pool's
/// directory and domain, its simulator (if any) and the main ports'
/// addresses `(resp, http)`.
pub fn kv_config(
    plan: &Plan,
    domain: &crate::DomainInfo,
    power: Option<std::sync::Arc<crate::SimDevice>>,
    (resp, http): (Option<SocketAddr>, Option<SocketAddr>),
) -> KvConfig {
    let mut config = plan.kv.clone();
    config.domain_name = domain.domain.name().to_string();
    config.power_switch = power;
    config.settings.resp = resp;
    config.settings.http = http;
    config.settings.dir = pool_dir(&plan.config.pool);
    config
}

/// The pool's directory, absolute (CONFIG GET dir).
fn pool_dir(pool: &std::path::Path) -> String {
    let dir = pool.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()).display().to_string()
}

/// 0600, or 0640 with `--pool-group-read`, whatever an earlier run set.
pub fn set_pool_mode(path: &std::path::Path, group_read: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if group_read { 0o640 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {} to {mode:o}", path.display()))
}

/// For `inspect`: what this recovery found (advisory, in the header page).
pub fn record_recovery(pool: &Pool, report: &crate::store::db::StoreReport) {
    pool.record_recovery(&crate::LastRecovery {
        duration_us: report.duration.as_micros() as u64,
        records_replayed: report.replayed_records,
        records_dropped: report.dropped_records,
        keys: report.keys,
        ..Default::default()
    });
}

/// Names no table for one-sided readers when dropped (after the shutdown
/// checkpoint, whatever its outcome).
struct Untrust<'p>(&'p Pool);

impl Drop for Untrust<'_> {
    fn drop(&mut self) {
        self.0.set_reader_instance(0);
    }
}

/// How a shard's graceful stop ended (`stopped`), for the process's one
/// log line (`log_stopped`).
#[derive(Clone, Copy, Debug)]
pub enum Stopped {
    /// The drain gave up on clients that did not read their replies.
    GaveUp,
    /// Every reply sent, then a checkpoint folded this many records in.
    Checkpointed { records: u64, ms: f64 },
}

/// After a graceful stop (either loop): a drain that sent every reply is
/// followed by a checkpoint, so that the next start replays nothing; one
/// that gave up on clients leaves the log to recovery.
pub fn stopped(drained: bool, server: &mut KvServer, pool: &Pool, buffers: &mut Buffers) -> anyhow::Result<Stopped> {
    // One-sided readers stop trusting the table (it goes with the store).
    let _untrusted = Untrust(pool);
    if !drained {
        return Ok(Stopped::GaveUp);
    }
    let started = std::time::Instant::now();
    let records = server.checkpoint_all(pool, buffers).context("the shutdown checkpoint failed")?;
    Ok(Stopped::Checkpointed { records: records as u64, ms: started.elapsed().as_secs_f64() * 1e3 })
}

/// The process's one line for its shards' stops.
pub fn log_stopped(shards: &[Stopped]) {
    let pools = if shards.len() > 1 { "pools" } else { "pool" };
    if shards.iter().any(|s| matches!(s, Stopped::GaveUp)) {
        tracing::warn!("stopped: gave up on clients that did not read their replies; no checkpoint (recovery replays the log); {pools} closed");
        return;
    }
    let (mut records, mut ms) = (0, 0.0f64);
    for shard in shards {
        if let Stopped::Checkpointed { records: r, ms: m } = shard {
            records += r;
            ms = ms.max(*m);
        }
    }
    tracing::info!(
        "stopped: every reply sent; checkpoint: {records} log records folded into the tree in {ms:.1} ms; {pools} closed"
    );
}

/// Opens the store: recovery (its progress told to the plan's
/// `replay_progress`, a terminal's bar).
pub fn open_store(
    plan: &Plan,
    pool: &Pool,
    buffers: &mut Buffers,
    replicated: bool,
    shard: Option<(&crate::store::db::Horizons, u16)>,
) -> anyhow::Result<(Store, crate::store::db::StoreReport)> {
    let config = &plan.config;
    let store_config = StoreConfig {
        value_size_max: config.value_size_max.bytes,
        replay_records_max: config.replay_budget,
        checkpoint_interval: config.checkpoint_interval,
        buffers_reserve: plan.buffers_reserve,
        compaction: CompactConfig { waste_min: config.compact_waste, ..CompactConfig::default() },
        replicated,
    };
    let mut told = config.replay_progress.map(|make| make());
    let mut progress = |done: u64, total: u64| {
        if let Some(told) = told.as_mut() {
            told(done, total);
        }
    };
    let opened = match shard {
        // A shard decides transactions across shards with the others.
        Some((horizons, index)) => Store::open_shard(pool, buffers, store_config, (horizons, index), &mut progress)
            .inspect_err(|_| {
                horizons.fail(index);
            }),
        None => Store::open_with_progress(pool, buffers, store_config, &mut progress),
    };
    opened.context("recovery failed")
}

/// The limits line: connections, client pauses, receive per turn, auth.
pub fn print_limits(config: &EngineConfig, plan: &Plan) {
    println!(
        "limits: {} connections, client output pause {} KiB, stall timeout {:.0} s, receive per turn {}, auth {}",
        config.connections_max,
        config.out_pause_bytes >> 10,
        config.stall_timeout.as_secs_f64(),
        match config.turn_receive_bytes {
            0 => "unlimited".to_string(),
            bytes => format!("{} KiB", bytes >> 10),
        },
        match (plan.config.requirepass.is_some(), plan.config.metrics_public) {
            (true, false) => "password required on both ports (Redis: AUTH; HTTP: Authorization), /metrics included",
            (true, true) => "password required on both ports (Redis: AUTH; HTTP: Authorization), except GET /metrics",
            (false, _) => "none: anyone who can connect may read and write",
        }
    );
}

/// The banner: version, pool, persistence domain and its warnings.
pub fn print_banner(path: &std::path::Path, pool: &Pool, created: bool, simulated: bool) -> anyhow::Result<()> {
    let geometry = pool.geometry();
    let mut out = std::io::stdout().lock();
    writeln!(out, "packetstore serve {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "pool: {} ({:.1} MiB, {}{})",
        path.display(),
        pool.len() as f64 / 1048576.0,
        geometry,
        if created { ", created" } else { "" }
    )?;
    drop(out);
    print_domain(pool, simulated)
}

/// A sharded server's banner before its shards' lines: the version, and
/// the persistence domain of its pools (shard 0's: they lie side by side)
/// with its warnings, as one shard's banner says them.
pub fn print_sharded_banner(pool: &Pool, simulated: bool) -> anyhow::Result<()> {
    println!("packetstore serve {}", env!("CARGO_PKG_VERSION"));
    print_domain(pool, simulated)
}

/// The persistence domain and its warnings (emulated, simulated, small
/// pages).
fn print_domain(pool: &Pool, simulated: bool) -> anyhow::Result<()> {
    let domain = pool.domain();
    let mut out = std::io::stdout().lock();
    writeln!(out, "persistence domain: {domain}")?;
    if simulated {
        writeln!(out, "WARNING: SIMULATED POWER FAILURES (test switch): the pool runs in memory on the crash simulator; DEBUG POWERFAIL writes the crash image back to the file")?;
    } else if !domain.durable {
        writeln!(out, "WARNING: this domain is not durable across power loss (emulated or none): use it for testing")?;
    }
    if domain.tmpfs_huge_pages == Some(false) {
        writeln!(out, "{}", crate::launch::pools::TMPFS_SMALL_PAGES)?;
    }
    out.flush()?;
    drop(out);

    Ok(())
}
