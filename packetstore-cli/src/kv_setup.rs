//! What `packetstore serve`'s one server and its shards share: the
//! command line (`Args`), what is worked out from it once (`Prepared`),
//! and the steps each event loop takes around serving (its store's
//! recovery, its configuration, its checkpoint after a graceful stop).

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use packetstore::apps::kv::{KvConfig, KvServer};
use packetstore::index::compact::CompactConfig;
use packetstore::io::app::Persist;
use packetstore::io::engine::EngineConfig;
use packetstore::store::db::{Store, StoreConfig};
use packetstore::{Buffers, Pool};

use crate::listen::BindArgs;
use crate::options::{
    io_path, parse_duration, parse_size, probe_uring, BuffersNeeded, LoopArgs, PersistArgs, POOL_SIZE_DEFAULT,
};

#[derive(clap::Args)]
pub struct Args {
    /// A TOML file of options: the keys are these flags without dashes
    /// (pool-size = "4GiB", requirepass = "...", busy-poll = true). Flags
    /// given on the command line win.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The pool file (created on first run).
    #[arg(long, default_value = "packetstore-data/kv.pool")]
    pub pool: PathBuf,
    /// Size of a new pool, each shard's [default: 1GiB shared by the
    /// shards, each at least what its ring needs]. An existing pool keeps
    /// its size (a different value is a warning). A new pool needs about 8
    /// buffers of 2 KiB per receive ring entry after its log: at least 129
    /// MiB with the defaults (the error names the minimum).
    #[arg(long)]
    pub pool_size: Option<String>,
    /// Log region of a new pool.
    #[arg(long, default_value = "64MiB")]
    pub log_size: String,
    /// HTTP listener (PUT/GET/HEAD/DELETE /kv/<key>): IP:PORT or
    /// HOST:PORT. A host name binds the first address it resolves to, IPv4
    /// first (localhost: 127.0.0.1).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = crate::listen::parse_address)]
    pub http: SocketAddr,
    /// Redis protocol listener, as --http (a host name binds its first
    /// address, IPv4 first).
    #[arg(long, default_value = "127.0.0.1:6379", value_parser = crate::listen::parse_address)]
    pub resp: SocketAddr,
    /// Require this password on both ports: AUTH on the Redis protocol,
    /// `Authorization: Bearer <password>` (or Basic) on HTTP.
    #[arg(long)]
    pub requirepass: Option<String>,
    /// With --requirepass, let GET /metrics through without the password
    /// (for a Prometheus scraper on a trusted network).
    #[arg(long)]
    pub metrics_public: bool,
    /// Redis's protected mode: while no password is set (--requirepass,
    /// CONFIG SET requirepass) and a listener is bound beyond loopback,
    /// clients connecting from other hosts get Redis's -DENIED error (HTTP:
    /// 403) and are disconnected; loopback clients are served. `no` turns
    /// it off (also CONFIG SET protected-mode no).
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    pub protected_mode: String,
    /// Allow Redis's DEBUG SLEEP and DEBUG SET-ACTIVE-EXPIRE (for test
    /// suites; Redis's enable-debug-command). Off: DEBUG is refused.
    #[arg(long)]
    pub enable_debug_command: bool,
    /// I/O path: uring (PASTE's engine) or epoll (the Linux baseline).
    #[arg(long, default_value = "uring")]
    pub io: String,
    /// zerocopy (values stay where they were received) or copy.
    #[arg(long, default_value = "zerocopy")]
    pub persist: String,
    /// epoll only: per-request (a fence or sync per request) or per-turn.
    #[arg(long, default_value = "per-turn")]
    pub commit: String,
    /// The largest value accepted.
    #[arg(long, default_value = "64MiB")]
    pub value_size_max: String,
    /// Values at least this long are sent from the pool without copying
    /// (measured: copying is cheaper up to 4 KiB, sending from the pool
    /// from 8 KiB; bench/results/kv.md).
    #[arg(long, default_value = "8KiB")]
    pub zero_copy_min: String,
    /// The replay budget: a restart replays at most this many log records
    /// (a checkpoint starts at half of it; writes wait at all of it).
    /// About 2 us a record (bench/results/restart.md).
    #[arg(long, default_value_t = packetstore::store::db::REPLAY_RECORDS_MAX_DEFAULT, alias = "checkpoint-records")]
    pub replay_budget: usize,
    /// Checkpoint the index this long after the last checkpoint too
    /// ("500ms", "10s").
    #[arg(long, default_value = "1s")]
    pub checkpoint_interval: String,
    /// Compact (relocate the values of partly live buffers) when this
    /// fraction of the bytes of the buffers holding values is waste; 0
    /// compacts continuously, above 1 never.
    #[arg(long, default_value_t = 0.5)]
    pub compact_waste: f64,
    /// Value bytes a second the scrubber checks against their CRCs, pass
    /// after pass over the whole tree ("8MiB"; 0: no scrubbing), for the
    /// process (its shards share it evenly). Progress and what it found:
    /// INFO persistence (scrub_*) and /metrics.
    #[arg(long, default_value = "8MiB")]
    pub scrub_rate: String,
    /// Publish for one-sided readers: processes on this machine that map
    /// the pool read-only and answer GET and HGET without this server
    /// (`packetstore get`, the reader library; docs/one-sided-reads.md).
    #[arg(long)]
    pub one_sided_reads: bool,
    /// Make the pool file (and the one-sided readers' table) readable by
    /// the file's group: 0640 instead of 0600.
    #[arg(long)]
    pub pool_group_read: bool,
    /// Shards: event loops, each pinned to its own core with its own pool
    /// file (`kv.pool`, `kv.1.pool`, ...), owning a range of Redis
    /// Cluster's hash slots; on the main ports (Redis and HTTP) a request
    /// for another shard's keys is relayed there, and a command over
    /// several shards' keys runs atomically across them (docs/shards.md).
    /// A data set keeps the count it was made with. Unset or `auto`: the
    /// data set's count when its pool exists, else one shard per core this
    /// process may use (its affinity mask: `taskset -c 1` makes one; one
    /// for a node of a replicated group and with --io epoll, which do not
    /// run shards unless told a number).
    #[arg(long = "shards", value_name = "N|auto")]
    pub shards_wanted: Option<String>,
    /// The shard count served (`resolve_shards`, from --shards and the
    /// data set found).
    #[arg(skip)]
    pub shards: u16,
    /// Serve Redis Cluster clients: shard i on this port + i (0: any free
    /// ports), on --resp's address, each a master of its slots. With more
    /// than one shard and no --cluster-ports: any free ports (CLUSTER
    /// SLOTS and the listening line name them).
    #[arg(long)]
    pub cluster_ports: Option<u16>,
    #[command(flatten)]
    pub bind_args: BindArgs,
    #[command(flatten)]
    pub loop_args: LoopArgs,
    #[command(flatten)]
    pub persist_args: PersistArgs,
    #[command(flatten)]
    pub group_args: crate::group::GroupArgs,
}

/// What every shard shares, worked out from the arguments once.
pub struct Prepared {
    pub persist: Persist,
    pub policy: Option<packetstore::io::epoll::CommitPolicy>,
    pub features: Option<packetstore::io::probe::Features>,
    pub options: packetstore::PersistOptions,
    pub needed: BuffersNeeded,
    pub pool_size: String,
    pub value_size_max: u64,
    pub buffers_reserve: u32,
}

impl Prepared {
    /// Works out from `args` what does not depend on the pool: the I/O path
    /// (probing io_uring's features), the persistence options, the buffers
    /// a pool needs, the limits.
    pub fn new(args: &Args) -> anyhow::Result<Prepared> {
        let persist = Persist::parse(&args.persist)
            .filter(|&p| p != Persist::Off)
            .with_context(|| format!("unknown --persist '{}': use zerocopy or copy", args.persist))?;
        let policy = io_path(&args.io, &args.commit, persist)?;
        let features = if policy.is_none() { Some(probe_uring()?) } else { None };
        let options = args.persist_args.options()?;
        let buffers_reserve =
            if persist == Persist::ZeroCopy { u32::from(args.loop_args.ring_entries) * 2 } else { 64 };
        let needed = BuffersNeeded { ring_entries: args.loop_args.ring_entries, per_entry: 0, fixed: 0, loops: 1 };
        let needed = match persist {
            Persist::ZeroCopy => BuffersNeeded { per_entry: 8, ..needed },
            _ => BuffersNeeded { fixed: 4 * buffers_reserve, ..needed },
        };
        Ok(Prepared {
            persist,
            policy,
            features,
            options,
            needed,
            pool_size: new_pool_size(args, &needed)?,
            value_size_max: parse_size(&args.value_size_max)?,
            buffers_reserve,
        })
    }
}

/// Each new pool's size: `--pool-size` (each shard's), or else the
/// default 1 GiB shared by the shards, each at least what its ring needs
/// (129 MiB with the default ring and log: up to 7 shards the total stays
/// 1 GiB; past that it is shards x 129 MiB, each with little room left for
/// values: give --pool-size on a machine of many cores).
fn new_pool_size(args: &Args, needed: &BuffersNeeded) -> anyhow::Result<String> {
    if let Some(size) = &args.pool_size {
        return Ok(size.clone());
    }
    if args.shards <= 1 {
        return Ok(POOL_SIZE_DEFAULT.to_string());
    }
    let shared_mib = (parse_size(POOL_SIZE_DEFAULT)? >> 20) / u64::from(args.shards);
    let least_mib = needed.pool_size_min_mib(parse_size(&args.log_size)?);
    Ok(format!("{}MiB", shared_mib.max(least_mib)))
}

/// The key-value server's configuration from the command line.
/// `(resp, http)`: the main ports' addresses.
pub fn kv_config(
    args: &Args,
    prepared: &Prepared,
    domain: &packetstore::DomainInfo,
    power: Option<std::sync::Arc<packetstore::SimDevice>>,
    (resp, http): (Option<SocketAddr>, Option<SocketAddr>),
) -> anyhow::Result<KvConfig> {
    let Prepared { value_size_max, buffers_reserve, .. } = *prepared;
    Ok(KvConfig {
        persist: prepared.persist,
        value_size_max,
        zero_copy_min: parse_size(&args.zero_copy_min)?,
        requirepass: args.requirepass.clone().map(String::into_bytes),
        metrics_public: args.metrics_public,
        debug_command: args.enable_debug_command,
        buffers_reserve,
        domain_name: domain.domain.name().to_string(),
        power_switch: power,
        // The process's rate, shared evenly by its shards.
        scrub_rate_bytes: parse_size(&args.scrub_rate).context("--scrub-rate")? / u64::from(args.shards.max(1)),
        settings: packetstore::apps::kv::KvSettings {
            resp,
            http,
            connections_max: args.loop_args.connections_max,
            dir: pool_dir(&args.pool),
            protected_mode: args.protected_mode == "yes",
            test_switches: crate::options::test_switches_enabled(),
            cluster: None,
        },
    })
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
pub fn record_recovery(pool: &Pool, report: &packetstore::store::db::StoreReport) {
    pool.record_recovery(&packetstore::LastRecovery {
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

/// Opens the store: recovery (a progress bar for long replays, on a
/// terminal).
pub fn open_store(
    args: &Args,
    pool: &Pool,
    buffers: &mut Buffers,
    value_size_max: u64,
    buffers_reserve: u32,
    replicated: bool,
    shard: Option<(&packetstore::store::db::Horizons, u16)>,
) -> anyhow::Result<(Store, packetstore::store::db::StoreReport)> {
    let store_config = StoreConfig {
        value_size_max,
        replay_records_max: args.replay_budget,
        checkpoint_interval: parse_duration(&args.checkpoint_interval)?,
        buffers_reserve,
        compaction: CompactConfig { waste_min: args.compact_waste, ..CompactConfig::default() },
        replicated,
    };
    // A progress bar for long replays, on a terminal only.
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut progress = |done: u64, total: u64| {
        if total < 50_000 || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "recovery: replaying the log {bar:40} {pos}/{len} records {eta}",
                )
                .expect("a valid template"),
            );
            bar
        });
        bar.set_position(done);
        if done == total {
            bar.finish_and_clear();
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
pub fn print_limits(config: &EngineConfig, args: &Args) {
    println!(
        "limits: {} connections, client output pause {} KiB, stall timeout {:.0} s, receive per turn {}, auth {}",
        config.connections_max,
        config.out_pause_bytes >> 10,
        config.stall_timeout.as_secs_f64(),
        match config.turn_receive_bytes {
            0 => "unlimited".to_string(),
            bytes => format!("{} KiB", bytes >> 10),
        },
        match (args.requirepass.is_some(), args.metrics_public) {
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
        writeln!(out, "{}", crate::options::TMPFS_SMALL_PAGES)?;
    }
    out.flush()?;
    drop(out);

    Ok(())
}
