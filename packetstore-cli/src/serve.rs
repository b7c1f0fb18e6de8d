//! `packetstore serve`: the durable key-value server. HTTP (`/kv/<key>`,
//! PASTE's pKVS) and the Redis protocol on one event loop over one pool.
//! See `packetstore::apps::kv` for the protocols and `packetstore::store::db` for how
//! writes become durable.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use packetstore::apps::kv::{KvConfig, KvServer};
use packetstore::index::compact::CompactConfig;
use packetstore::io::app::Persist;
use packetstore::io::cores::{raise_open_file_limit, run_loop};
use packetstore::io::engine::EngineConfig;
use packetstore::store::db::{Store, StoreConfig};
use packetstore::{Buffers, Pool, PoolKind};

use crate::listen::BindArgs;
use crate::options::{
    check_buffers, check_new_pool, io_path, open_or_create_pool, parse_duration, parse_size, power_switch, probe_uring,
    warn_pool_size_ignored, write_crash_image, BuffersNeeded, LoopArgs, PersistArgs, POOL_SIZE_DEFAULT,
    TMPFS_SMALL_PAGES,
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
    /// Size of a new pool [default: 1GiB]. An existing pool keeps its
    /// size (a different value is a warning). A new pool needs about 8
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
    #[arg(long, default_value = "127.0.0.1:6380", value_parser = crate::listen::parse_address)]
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
    /// after pass over the whole tree ("8MiB"; 0: no scrubbing). Progress
    /// and what it found: INFO persistence (scrub_*) and /metrics.
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
    /// Cluster's hash slots. A data set keeps the count it was made with.
    /// Above 1 it needs --cluster-ports; the main ports then answer a
    /// command for another shard's key with MOVED (HTTP: 421) until
    /// commands are relayed between shards.
    #[arg(long, default_value_t = 1)]
    pub shards: u16,
    /// Serve Redis Cluster clients: shard i on this port + i (0: any free
    /// ports), on --resp's address, each a master of its slots.
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
    pub zero_copy: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    crate::shards::check_shard_count(&args)?;
    let persist = Persist::parse(&args.persist)
        .filter(|&p| p != Persist::Off)
        .with_context(|| format!("unknown --persist '{}': use zerocopy or copy", args.persist))?;
    let policy = io_path(&args.io, &args.commit, persist)?;
    let features = if policy.is_none() { Some(probe_uring()?) } else { None };
    let options = args.persist_args.options()?;
    raise_open_file_limit();
    let buffers_reserve = if persist == Persist::ZeroCopy { u32::from(args.loop_args.ring_entries) * 2 } else { 64 };
    let needed = BuffersNeeded { ring_entries: args.loop_args.ring_entries, per_entry: 0, fixed: 0, loops: 1 };
    let needed = match persist {
        Persist::ZeroCopy => BuffersNeeded { per_entry: 8, ..needed },
        _ => BuffersNeeded { fixed: 4 * buffers_reserve, ..needed },
    };
    let prepared = Prepared {
        persist,
        policy,
        features,
        options,
        needed,
        pool_size: args.pool_size.clone().unwrap_or_else(|| POOL_SIZE_DEFAULT.to_string()),
        value_size_max: parse_size(&args.value_size_max)?,
        buffers_reserve,
        zero_copy: persist == Persist::ZeroCopy,
    };
    if args.shards > 1 || args.cluster_ports.is_some() {
        return crate::shards::run(&args, &prepared);
    }
    run_single(args, prepared)
}

/// One event loop over one pool (`--shards 1`): the server that may also
/// be a node of a replicated group, run on the crash simulator, or publish
/// for one-sided readers.
fn run_single(args: Args, prepared: Prepared) -> anyhow::Result<()> {
    let Prepared {
        persist,
        policy,
        ref features,
        ref options,
        ref needed,
        ref pool_size,
        value_size_max,
        buffers_reserve,
        ..
    } = prepared;
    let mut group = args.group_args.config()?;
    if group.is_some() && policy.is_some() {
        bail!("a replicated group runs on the io_uring engine only (--io uring)");
    }
    // Sizes are checked and both listeners bound before the pool is
    // created or opened: a failure leaves no file and replays nothing.
    check_new_pool(&args.pool, pool_size, &args.log_size, needed)?;
    let listeners = bind_listeners(&args, policy.is_some(), group.as_ref())?;
    let (file_pool, created) = open_or_create_pool(
        &args.pool,
        PoolKind::KeyValue,
        pool_size,
        &args.log_size,
        1,
        options,
        (args.persist_args.create_dirs, None),
    )?;
    if !created {
        warn_pool_size_ignored(&args.pool, args.pool_size.as_deref(), &file_pool);
    }
    // The file pool stays open (and locked) while a simulated one runs.
    let power = power_switch(&args.persist_args, &args.pool)?;
    let simulated = power.as_ref().map(|device| Pool::open_simulated(device.clone())).transpose()?;
    let pool = simulated.as_ref().unwrap_or(&file_pool);
    let geometry = pool.geometry();
    if geometry.log_count != 1 {
        bail!("{} was made for {} event loops (a WAL pool?): serve uses one", args.pool.display(), geometry.log_count);
    }
    check_buffers(&args.pool, &geometry, needed)?;
    crate::shards::check_shard(&args.pool, file_pool.header().shard, None)?;
    let domain = pool.domain().clone();
    print_banner(&args.pool, pool, created, power.is_some())?;

    let mut buffers = Buffers::new(geometry.buffer_count);
    // The page domain writes back whole pages at each sync: hand out
    // neighbouring buffers so that a batch's values share pages.
    buffers.set_sequential(domain.domain == packetstore::Domain::Page);
    let (mut store, report) = open_store(&args, pool, &mut buffers, value_size_max, buffers_reserve, group.is_some())?;
    if let Some(group) = group.as_mut() {
        group.client_addr = Some(packetstore::io::net::local_addr(&listeners[1])?);
    }
    let replica = group.map(|group| join_group(group, &mut store, pool, &mut buffers)).transpose()?;
    let _table = set_up_readers(&args, pool, &mut store, &mut buffers, replica.is_some() || power.is_some())?;
    let recovery = report.to_string();
    println!("recovery: {recovery}");
    let recovery_duration = report.duration;
    record_recovery(pool, &report);
    let addrs = (
        Some(packetstore::io::net::local_addr(&listeners[1])?),
        Some(packetstore::io::net::local_addr(&listeners[0])?),
    );
    let kv_config = kv_config(&args, &prepared, &domain, power.clone(), addrs)?;
    let mut server = KvServer::new(kv_config, store, recovery);
    if let Some(replica) = replica {
        server.set_replica(replica);
    }
    server.set_recovery_duration(recovery_duration);
    let http_addr = packetstore::io::net::local_addr(&listeners[0])?;
    let resp_addr = packetstore::io::net::local_addr(&listeners[1])?;
    let (stop, wake_fd) = crate::shutdown::install()?;
    let mut config = EngineConfig {
        listen: http_addr,
        wake_fd: Some(wake_fd),
        ..args.loop_args.engine_config(persist == Persist::ZeroCopy)?
    };
    if let Some(features) = &features {
        config = config.adapt_to(features);
    }
    let kind = match policy {
        None => "io uring".to_string(),
        Some(_) => format!("io epoll, commit {}", args.commit),
    };
    let ready = format!(
        "listening: http {http_addr}, redis {resp_addr} ({kind}, 1 event loop, persist {}, limits: value {} bytes, key {} bytes)",
        persist.name(),
        value_size_max,
        packetstore::store::db::KEY_SIZE_MAX
    );
    print_limits(&config, &args);
    let on_ready = || {
        println!("{ready}");
        let _ = std::io::stdout().flush();
    };
    let outcome = run_loop(pool, &mut buffers, &mut server, policy, config, listeners, (stop, on_ready));
    if let Some(done) = stopped_abnormally(power.as_deref(), &args.pool, &server) {
        return done;
    }
    let drained = outcome?;
    stopped(drained, &mut server, pool, &mut buffers)
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
        scrub_rate_bytes: parse_size(&args.scrub_rate).context("--scrub-rate")?,
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

/// The pool's mode, and with `--one-sided-reads` the readers' table
/// (removed when the returned guard drops, as the server stops). Tables
/// left by servers that are gone are removed first.
fn set_up_readers(
    args: &Args,
    pool: &Pool,
    store: &mut Store,
    buffers: &mut Buffers,
    shared: bool,
) -> anyhow::Result<Option<RemoveTable>> {
    set_pool_mode(&args.pool, args.pool_group_read)?;
    match packetstore::reader::stale::remove_stale_tables() {
        Ok(removed) if !removed.is_empty() => {
            tracing::info!("removed {} one-sided readers' tables left by servers that are gone", removed.len())
        }
        Ok(_) => {}
        Err(error) => tracing::warn!("looking for one-sided readers' tables left in /dev/shm: {error}"),
    }
    if !args.one_sided_reads {
        return Ok(None);
    }
    if shared {
        bail!("--one-sided-reads is for a single node on a real pool (not a group member, not the crash simulator)");
    }
    publish_for_readers(&args.pool, pool, store, buffers, args.pool_group_read).map(Some)
}

/// Removes the server's one-sided readers' table when dropped: as it stops
/// (32 MiB of tmpfs each; readers that have it mapped keep their mapping
/// and see the pool untrust it).
struct RemoveTable(std::path::PathBuf);

impl Drop for RemoveTable {
    fn drop(&mut self) {
        if let Err(error) = packetstore::reader::stale::remove_table(&self.0) {
            tracing::warn!("removing the one-sided readers' table {}: {error}", self.0.display());
        }
    }
}

/// Names no table for one-sided readers when dropped (after the shutdown
/// checkpoint, whatever its outcome).
struct Untrust<'p>(&'p Pool);

impl Drop for Untrust<'_> {
    fn drop(&mut self) {
        self.0.set_reader_instance(0);
    }
}

/// 0600, or 0640 with `--pool-group-read`, whatever an earlier run set.
pub fn set_pool_mode(path: &std::path::Path, group_read: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if group_read { 0o640 } else { 0o600 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("setting the mode of {} to {mode:o}", path.display()))
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
    use packetstore::reader::recent::{table_path, Recent, BUCKETS_DEFAULT};
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

/// The loop stopped because the simulated power failed (the crash image
/// is written back) or because the node must rebuild (restarted in place).
fn stopped_abnormally(
    power: Option<&packetstore::SimDevice>,
    pool: &std::path::Path,
    server: &KvServer,
) -> Option<anyhow::Result<()>> {
    if let Some(device) = power.filter(|device| device.is_dead()) {
        return Some(write_crash_image(device, pool));
    }
    server.rebuild_requested().then(restart_in_place)
}

/// A node whose tree ran commands the group then dropped (it led, and lost
/// its leadership before they committed), or holds a snapshot stream it
/// cannot finish (refused by raft-rs, or no room left for it), starts
/// again, in place: the same
/// process image re-executed with the same arguments, as a supervisor
/// would restart it, but at once. Every descriptor is close-on-exec, so
/// the pool's lock and the listeners are released first; clients of the
/// old image see their connections close (their writes in flight were
/// never acknowledged). Opening the pool again replays only what is
/// durable, and the group sends the rest.
fn restart_in_place() -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    tracing::warn!("restarting in place to rebuild from the durable checkpoint and the committed log");
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let error = std::process::Command::new("/proc/self/exe").args(args).exec();
    Err(anyhow::Error::new(error).context("re-executing /proc/self/exe to restart in place"))
}

/// The node of its replicated group this server is: its Raft log rebuilt
/// from the store's, its committed entries applied.
fn join_group(
    group: packetstore::replica::ReplicaConfig,
    store: &mut Store,
    pool: &Pool,
    buffers: &mut Buffers,
) -> anyhow::Result<packetstore::replica::Replica> {
    let replica =
        packetstore::replica::Replica::open(group, store, pool, buffers).context("joining the replicated group")?;
    println!(
        "group {}: node {} of {:?}, term {}, commit {}, log up to {}, tree at entry {}",
        replica.config.group_id,
        replica.config.node_id,
        replica.voters(),
        replica.term(),
        replica.commit_index(),
        replica.last_index(),
        replica.tree_index()
    );
    Ok(replica)
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

/// After a graceful stop (either loop): a drain that sent every reply is
/// followed by a checkpoint, so that the next start replays nothing; one
/// that gave up on clients leaves the log to recovery.
pub fn stopped(drained: bool, server: &mut KvServer, pool: &Pool, buffers: &mut Buffers) -> anyhow::Result<()> {
    // One-sided readers stop trusting the table (it goes with the store).
    let _untrusted = Untrust(pool);
    if !drained {
        tracing::warn!("stopped: gave up on clients that did not read their replies; no checkpoint (recovery replays the log); pool closed");
        return Ok(());
    }
    let started = std::time::Instant::now();
    let records = server.checkpoint_all(pool, buffers).context("the shutdown checkpoint failed")?;
    tracing::info!(
        "stopped: every reply sent; checkpoint: {records} log records folded into the tree in {:.1} ms; pool closed",
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// The HTTP and Redis protocol listeners (and a group node's peer port),
/// in that order, each bound with
/// the wait of `--bind-timeout`; a warning for each that the network can
/// reach without a password.
fn bind_listeners(
    args: &Args,
    nonblocking: bool,
    group: Option<&packetstore::replica::ReplicaConfig>,
) -> anyhow::Result<Vec<std::os::fd::OwnedFd>> {
    let timeout = args.bind_args.timeout()?;
    if args.http == args.resp && args.http.port() != 0 {
        bail!("--http and --resp are both {}: give them different ports", args.http);
    }
    let http = crate::listen::bind(args.http, "HTTP", false, nonblocking, timeout)?;
    let resp = crate::listen::bind(args.resp, "Redis protocol", false, nonblocking, timeout)?;
    crate::listen::warn_serve_exposure(args.http, args.resp, args.requirepass.is_some(), args.protected_mode == "yes");
    let mut listeners = vec![http, resp];
    if let Some(group) = group {
        // A node's peer port: its own entry of --peers.
        let peer = group.members[&group.node_id];
        listeners.push(crate::listen::bind(peer, "peer", false, nonblocking, timeout)?);
        crate::listen::warn_peer_exposure(peer, !group.secret.is_empty());
    }
    Ok(listeners)
}

/// The banner: version, pool, persistence domain and its warnings.
fn print_banner(path: &std::path::Path, pool: &Pool, created: bool, simulated: bool) -> anyhow::Result<()> {
    let geometry = pool.geometry();
    let domain = pool.domain();
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
    writeln!(out, "persistence domain: {domain}")?;
    if simulated {
        writeln!(out, "WARNING: SIMULATED POWER FAILURES (test switch): the pool runs in memory on the crash simulator; DEBUG POWERFAIL writes the crash image back to the file")?;
    } else if !domain.durable {
        writeln!(out, "WARNING: this domain is not durable across power loss (emulated or none): use it for testing")?;
    }
    if domain.tmpfs_huge_pages == Some(false) {
        writeln!(out, "{TMPFS_SMALL_PAGES}")?;
    }
    out.flush()?;
    drop(out);

    Ok(())
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
    Store::open_with_progress(pool, buffers, store_config, &mut progress).context("recovery failed")
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
