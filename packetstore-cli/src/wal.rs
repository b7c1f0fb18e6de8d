//! `packetstore wal`: the paper's WAL server. POST bodies become log
//! records, acknowledged with `X-Seq` once durable; `GET /log/<seq>` reads
//! one back. See `packetstore::apps::wal` for the protocol and `engine` / `epoll`
//! for the I/O paths.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use packetstore::apps::wal::{Persist, SeqIndex, Wal, WalConfig};
use packetstore::io::cores::{listeners_on_port, raise_open_file_limit, LoopError, Loops};
use packetstore::io::engine::EngineConfig;
use packetstore::{Buffers, Pool, PoolKind, RecoveryReport, SimDevice};

use crate::options::BindArgs;
use crate::options::{
    check_buffers, check_new_pool, io_path, open_or_create_pool, parse_size, power_switch, probe_uring,
    warn_pool_size_ignored, write_crash_image, BuffersNeeded, LoopArgs, PersistArgs, Size, POOL_SIZE_DEFAULT,
};

#[derive(clap::Args)]
pub struct Args {
    /// A TOML file of options: the keys are these flags without dashes
    /// (pool-size = "4GiB", threads = 2, busy-poll = true). Flags given on
    /// the command line win.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The pool file (created if missing).
    #[arg(long, default_value = "packetstore-data/wal.pool")]
    pub pool: PathBuf,
    /// Size of a new pool [default: 1GiB]. An existing pool keeps its
    /// size (a different value is a warning). In zero copy, each event
    /// loop needs 3 buffers of 2 KiB per receive ring entry after the log:
    /// at least 281 MiB with the defaults (the error names the minimum).
    #[arg(long, value_parser = Size::parse)]
    pub pool_size: Option<Size>,
    /// Log region of a new pool.
    #[arg(long, default_value = "256MiB", value_parser = Size::parse)]
    pub log_size: Size,
    /// Address to listen on: IP:PORT or HOST:PORT. A host name binds the
    /// first address it resolves to, IPv4 first (localhost: 127.0.0.1).
    /// The WAL server has no authentication.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = crate::options::parse_address)]
    pub listen: SocketAddr,
    /// I/O path: uring (PASTE's engine) or epoll (the paper's Linux baseline).
    #[arg(long, default_value = "uring")]
    pub io: String,
    /// zerocopy (log bodies where they landed), copy, or off (nothing durable).
    #[arg(long, default_value = "zerocopy")]
    pub persist: String,
    /// epoll only: per-request (fence or sync per request) or per-turn.
    #[arg(long, default_value = "per-request")]
    pub commit: String,
    /// Event loops.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Largest request body accepted.
    #[arg(long, default_value = "64MiB")]
    pub body_size_max: String,
    #[command(flatten)]
    pub bind_args: BindArgs,
    #[command(flatten)]
    pub loop_args: LoopArgs,
    #[command(flatten)]
    pub persist_args: PersistArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let persist = Persist::parse(&args.persist)
        .with_context(|| format!("unknown --persist '{}': use zerocopy, copy or off", args.persist))?;
    let threads =
        u32::try_from(args.threads).ok().filter(|t| (1..=64).contains(t)).context("--threads must be 1..=64")?;
    let policy = io_path(&args.io, &args.commit, persist)?;
    let features = if policy.is_none() { Some(probe_uring()?) } else { None };
    let options = args.persist_args.options()?;
    raise_open_file_limit();
    // Sizes are checked and every loop's listener bound before the pool is
    // created or opened: a failure leaves no file and recovers nothing.
    // Each loop's receive ring stays refillable: twice its size stays free.
    let buffers_reserve = u32::from(args.loop_args.ring_entries) * 2;
    let needed = BuffersNeeded {
        ring_entries: args.loop_args.ring_entries,
        per_entry: if persist == Persist::ZeroCopy { 3 } else { 0 },
        fixed: 0,
        loops: threads,
    };
    let pool_size = &args.pool_size.clone().map_or_else(|| Size::parse(POOL_SIZE_DEFAULT), Ok)?;
    check_new_pool(&args.pool, pool_size, &args.log_size, &needed)?;
    let listeners = bind_listeners(&args, threads, policy.is_some())?;
    let addr = packetstore::io::net::local_addr(&listeners[0])?;
    let dirs = args.persist_args.create_dirs;
    let (file_pool, created) =
        open_or_create_pool(&args.pool, PoolKind::Wal, pool_size, &args.log_size, threads, &options, (dirs, None))?;
    if !created {
        warn_pool_size_ignored(&args.pool, args.pool_size.as_ref(), &file_pool);
    }
    // The file pool stays open (and locked) while a simulated one runs.
    let power = power_switch(args.persist_args.storage()?.simulate, &args.pool)?;
    if power.is_some() && threads > 1 {
        // It checks that every store was declared; two loops storing at
        // once would race with that check.
        bail!("--simulate-power-failures supports one event loop: use --threads 1");
    }
    let simulated = power.as_ref().map(|device| Pool::open_simulated(device.clone())).transpose()?;
    let pool = simulated.as_ref().unwrap_or(&file_pool);
    let geometry = pool.geometry();
    if geometry.log_count != threads {
        bail!(
            "{} was created for {} event loop(s) ({} logs): run it with --threads {}",
            args.pool.display(),
            geometry.log_count,
            geometry.log_count,
            geometry.log_count
        );
    }
    check_buffers(&args.pool, &geometry, &needed)?;
    let config = WalConfig { persist, body_size_max: parse_size(&args.body_size_max)?, buffers_reserve };
    let mut engine_config = args.loop_args.engine_config(persist == Persist::ZeroCopy && policy.is_none())?;
    if let Some(features) = &features {
        engine_config = engine_config.adapt_to(features);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "packetstore wal {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "pool: {} ({:.1} MiB, {})", args.pool.display(), pool.len() as f64 / 1048576.0, geometry)?;
    writeln!(out, "persistence domain: {}", pool.domain())?;
    if power.is_some() {
        writeln!(out, "WARNING: SIMULATED POWER FAILURES (test switch): the pool runs in memory on the crash simulator; GET /debug/powerfail writes the crash image back to the file")?;
    }
    if pool.domain().tmpfs_huge_pages == Some(false) {
        writeln!(out, "{}", crate::options::TMPFS_SMALL_PAGES)?;
    }
    drop(out);
    let shared = SeqIndex::new(pool);
    let (stop, wake_fd) = packetstore::launch::shutdown::install()?;
    let loops = Loops {
        pool,
        policy,
        config: EngineConfig { listen: addr, wake_fd: Some(wake_fd), ..engine_config },
        listeners,
        stop,
    };
    // Each loop recovers its own log, in parallel.
    let recover = |index: u32, buffers: &mut Buffers| {
        let (mut wal, report) = Wal::recover_log(pool, index, buffers, config, shared.clone())
            .map_err(|error| format!("log {index}: {error}"))?;
        if let Some(device) = &power {
            wal.set_power_switch(device.clone());
        }
        wal.set_test_switches(crate::options::test_switches_enabled());
        Ok((wal, (format!("recovery: log {index}: {report}"), report)))
    };
    let finished = |index: u32, outcome: Result<bool, LoopError>| loop_finished(index, outcome, &power, &args.pool);
    let started = |reports: Vec<(String, RecoveryReport)>| -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        // What the loops' recoveries found, summed for `inspect` (each loop
        // recovered its own log, in parallel: the longest is the time).
        let mut last = packetstore::LastRecovery::default();
        for (line, report) in reports {
            writeln!(out, "{line}")?;
            last.records_replayed += report.live_records;
            last.records_dropped += report.torn_records_erased;
            last.duration_us = last.duration_us.max(report.duration.as_micros() as u64);
        }
        // Not on the crash simulator: its check that every store is
        // declared assumes one writer, and the loop is already serving.
        if power.is_none() {
            pool.record_recovery(&last);
        }
        let kind = match policy {
            None => "io uring".to_string(),
            Some(_) => format!("io epoll, commit {}", args.commit),
        };
        writeln!(out, "listening on {addr} ({kind}, persist {}, threads {threads})", persist.name())?;
        out.flush()?;
        Ok(())
    };
    loops.run(recover, finished, started)?;
    tracing::info!("stopped: every event loop's replies sent; pool closed");
    Ok(())
}

/// A loop has returned: if the simulated power failed, the first loop to
/// see it writes what survived and the process ends as a machine would; a
/// loop that stopped on an error (a failed sync, say) stops the process,
/// so nothing it held back is acknowledged by another.
fn loop_finished(index: u32, outcome: Result<bool, LoopError>, power: &Option<Arc<SimDevice>>, pool_path: &Path) {
    if let Some(device) = power.as_ref().filter(|device| device.is_dead()) {
        static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = WRITING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let code = match write_crash_image(device, pool_path) {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("packetstore: error: writing the crash image: {error:#}");
                1
            }
        };
        std::process::exit(code);
    }
    if let Err(error) = outcome {
        eprintln!("packetstore: error: event loop {index}: {error:#}");
        std::process::exit(1);
    }
}

/// A listener per event loop, all on one port (SO_REUSEPORT spreads the
/// connections over them): the first is bound with the wait of
/// `--bind-timeout`, so that an ephemeral port is known and a port in use
/// is waited for; the others join it.
fn bind_listeners(args: &Args, threads: u32, nonblocking: bool) -> anyhow::Result<Vec<std::os::fd::OwnedFd>> {
    let reuse_port = threads > 1;
    let first =
        packetstore::launch::listen::bind(args.listen, "WAL", reuse_port, nonblocking, args.bind_args.timeout()?)?;
    let addr = packetstore::io::net::local_addr(&first)?;
    let listeners = listeners_on_port(first, threads, nonblocking).map_err(|(index, error)| {
        anyhow::Error::new(error).context(format!("cannot listen on {addr} (WAL, event loop {index})"))
    })?;
    packetstore::launch::listen::warn_wal_exposure(args.listen);
    Ok(listeners)
}
