//! The key-value server's configuration, resolved once.
//!
//! `ServeConfig` is what the user asked for, already in units (the
//! command line's parser or a configuration file fills it: `packetstore
//! serve --config FILE` reads a TOML file of the same options). `Plan::new`
//! checks it whole and works out, once, everything the shards share: the
//! shard count (from `--shards` and the data set found), the I/O path
//! (probing io_uring), each new pool's size, the buffers a pool must hold,
//! the event loop's configuration, the replicated group's, and the
//! key-value server's (`KvConfig`: what CONFIG GET and INFO answer from).
//! Everything after it (`single.rs`, `shards.rs`) reads the plan only.
//!
//! Invariant: a `Plan` exists only for a configuration every check
//! passed, and it is made before any pool is created, opened or replayed
//! and before any port is bound, so a mistake leaves no file and no
//! listener behind.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, ensure, Context};

use crate::apps::kv::{check_at_start, AtStart, KvConfig, KvSettings};
use crate::io::app::Persist;
use crate::io::engine::EngineConfig;
use crate::io::epoll::CommitPolicy;
use crate::io::probe::Features;
use crate::launch::pools::{
    check_io, probe_uring, simulator_allowed, test_switches_enabled, BuffersNeeded, POOL_SIZE_DEFAULT_MIB,
};
use crate::launch::units::Size;
use crate::replica::ReplicaConfig;
use crate::{PersistOptions, SimMode};

/// The longest `--bind-timeout` accepted.
pub const BIND_TIMEOUT_MAX: Duration = Duration::from_secs(3600);

/// The most shards a data set may have.
pub const SHARDS_MAX: u16 = crate::store::db::TXN_SHARDS_MAX as u16;

/// A recovery's progress, for a caller that shows it (a terminal's bar):
/// made once per store opened, then told (records done, records in all).
pub type ReplayProgress = fn() -> Box<dyn FnMut(u64, u64)>;

/// `packetstore serve`'s options, in units.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Shard 0's pool file (the others lie beside it).
    pub pool: PathBuf,
    /// Each new pool's size (None: 1 GiB shared by the shards).
    pub pool_size: Option<Size>,
    /// The log region of a new pool.
    pub log_size: Size,
    pub http: SocketAddr,
    pub resp: SocketAddr,
    pub requirepass: Option<String>,
    pub metrics_public: bool,
    pub protected_mode: bool,
    pub debug_command: bool,
    /// None: io_uring; else the epoll baseline with its commit policy.
    pub io: Option<CommitPolicy>,
    pub persist: Persist,
    pub value_size_max: Size,
    pub zero_copy_min: Size,
    pub replay_budget: usize,
    pub checkpoint_interval: Duration,
    pub compact_waste: f64,
    /// The process's scrub rate, in bytes a second (shared by its shards).
    pub scrub_rate: Size,
    pub one_sided_reads: bool,
    pub pool_group_read: bool,
    /// None: a shard per core (an existing data set keeps its count).
    pub shards: Option<u16>,
    pub cluster_ports: Option<u16>,
    pub bind_timeout: Duration,
    pub loops: LoopSettings,
    pub storage: StorageSettings,
    pub group: GroupSettings,
    /// Redis parameters to set at start, in order (a later one wins):
    /// `--redis-param NAME=VALUE`, and a redis.conf's directives.
    pub redis_params: Vec<(String, String)>,
    /// The redis.conf the options came from, which CONFIG REWRITE rewrites.
    pub redis_conf: Option<PathBuf>,
    pub replay_progress: Option<ReplayProgress>,
}

/// The event loop's options, shared by `serve` and `wal`.
#[derive(Clone, Debug)]
pub struct LoopSettings {
    pub ring_entries: u16,
    pub busy_poll: bool,
    pub syncs_in_flight: usize,
    pub whole_buffers: bool,
    pub connections_max: usize,
    pub client_pause: Size,
    pub client_stall_timeout: Duration,
    pub client_receive_per_turn: Size,
}

impl LoopSettings {
    /// The event loop's configuration (`incremental`: the persist mode and
    /// loop allow incremental buffer consumption), its bounds checked.
    pub fn engine_config(&self, incremental: bool) -> anyhow::Result<EngineConfig> {
        ensure!(self.connections_max >= 1, "--connections-max must be at least 1");
        ensure!(self.client_pause.bytes >= 64 * 1024, "--client-pause must be at least 64KiB");
        let per_turn = self.client_receive_per_turn.bytes;
        ensure!(
            per_turn == 0 || (4096..=1 << 30).contains(&per_turn),
            "--client-receive-per-turn must be 0 (unlimited) or between 4KiB and 1GiB"
        );
        Ok(EngineConfig {
            ring_entries: self.ring_entries,
            busy_poll: self.busy_poll,
            syncs_in_flight: self.syncs_in_flight,
            incremental: incremental && !self.whole_buffers,
            connections_max: self.connections_max,
            out_pause_bytes: self.client_pause.bytes,
            stall_timeout: self.client_stall_timeout,
            turn_receive_bytes: per_turn as u32,
            ..EngineConfig::default()
        })
    }
}

/// How pools are opened and created.
#[derive(Clone, Debug)]
pub struct StorageSettings {
    pub options: PersistOptions,
    /// Make a missing pool directory (only the default one is made without).
    pub create_dirs: bool,
    /// Test switch: run each pool on the crash simulator in this mode.
    pub simulate: Option<SimMode>,
}

/// The options that make the server a node of a replicated group.
#[derive(Clone, Debug, Default)]
pub struct GroupSettings {
    pub node_id: Option<u64>,
    pub peers: Option<BTreeMap<u64, SocketAddr>>,
    pub group_id: u64,
    pub peer_secret: Option<String>,
    pub raft_tick: Duration,
    pub join: bool,
}

impl GroupSettings {
    /// The group's configuration, if this server is a node of one.
    pub fn config(&self) -> anyhow::Result<Option<ReplicaConfig>> {
        let Some(node_id) = self.node_id else {
            if self.peers.is_some() {
                bail!("--peers needs --node-id");
            }
            return Ok(None);
        };
        let members = self.peers.clone().context("--node-id needs --peers (every member, this node included)")?;
        if !members.contains_key(&node_id) {
            bail!("--peers does not name node {node_id} (this node's own peer address)");
        }
        Ok(Some(ReplicaConfig {
            node_id,
            group_id: self.group_id,
            members,
            secret: self.peer_secret.clone().unwrap_or_default().into_bytes(),
            tick: self.raft_tick.max(Duration::from_millis(10)),
            election_ticks: 10,
            heartbeat_ticks: 2,
            join: self.join,
            client_addr: None,
        }))
    }
}

/// What every shard shares, worked out from the configuration once.
pub struct Plan {
    pub config: ServeConfig,
    /// The shards served (from `--shards` and the data set found).
    pub shards: u16,
    /// Shard 0's cluster port (0: any free ports); set whenever the
    /// server runs more than one shard.
    pub cluster_ports: Option<u16>,
    /// io_uring's features (None on the epoll baseline).
    pub features: Option<Features>,
    pub needed: BuffersNeeded,
    /// Each new pool's size.
    pub pool_size: Size,
    /// Free buffers each store keeps back for receiving.
    pub buffers_reserve: u32,
    /// The event loop's configuration, before a shard's own parts.
    pub engine: EngineConfig,
    /// The group this node belongs to (shard 0's, for a sharded node).
    pub group: Option<ReplicaConfig>,
    /// The key-value server's configuration, before a shard's own parts
    /// (its domain, simulator, addresses, cluster view).
    pub kv: KvConfig,
}

impl Plan {
    /// Checks `config` and works out what does not depend on the pool: the
    /// shard count, the I/O path (probing io_uring's features), the
    /// buffers a pool needs, the limits.
    pub fn new(config: ServeConfig) -> anyhow::Result<Plan> {
        check(&config)?;
        let (shards, cluster_ports) = shard_count(&config)?;
        // Shards (or one with a cluster port) run on io_uring only.
        if (shards > 1 || cluster_ports.is_some()) && config.io.is_some() {
            bail!("--shards {shards} runs on the io_uring engine only (--io uring)");
        }
        let persist = config.persist;
        let features = if config.io.is_none() { Some(probe_uring()?) } else { None };
        let ring_entries = config.loops.ring_entries;
        let buffers_reserve = if persist == Persist::ZeroCopy { u32::from(ring_entries) * 2 } else { 64 };
        let needed = BuffersNeeded { ring_entries, per_entry: 0, fixed: 0, loops: 1 };
        let needed = match persist {
            Persist::ZeroCopy => BuffersNeeded { per_entry: 8, ..needed },
            _ => BuffersNeeded { fixed: 4 * buffers_reserve, ..needed },
        };
        let engine = config.loops.engine_config(persist == Persist::ZeroCopy)?;
        let group = config.group.config()?;
        let pool_size = new_pool_size(&config, shards, &needed);
        let mut kv = kv_config(&config, shards, buffers_reserve);
        kv.settings.redis_params = redis_params(&config.redis_params)?;
        kv.settings.config_file = config.redis_conf.clone();
        Ok(Plan { config, shards, cluster_ports, features, needed, pool_size, buffers_reserve, engine, group, kv })
    }
}

/// The checks of options taken one with another.
fn check(config: &ServeConfig) -> anyhow::Result<()> {
    ensure!(config.persist != Persist::Off, "--persist off is for the WAL server only: use zerocopy or copy");
    check_io(config.io, config.persist)?;
    ensure!(config.bind_timeout <= BIND_TIMEOUT_MAX, "--bind-timeout must be at most 1h");
    if config.http == config.resp && config.http.port() != 0 {
        bail!("--http and --resp are both {}: give them different ports", config.http);
    }
    if config.group.node_id.is_some() && config.io.is_some() {
        bail!("a replicated group runs on the io_uring engine only (--io uring)");
    }
    if config.group.node_id.is_some() && config.loops.syncs_in_flight > 1 {
        // A loaded snapshot is made durable by a full checkpoint before the
        // node acknowledges anything after it; with a sync in flight that
        // checkpoint could not complete at once, and a crash then left a
        // log with a gap that no restart opens.
        bail!("a node of a replicated group keeps one sync in flight: drop --syncs-in-flight");
    }
    if config.storage.simulate.is_some() {
        simulator_allowed()?;
    }
    if config.one_sided_reads && (config.group.node_id.is_some() || config.storage.simulate.is_some()) {
        bail!("--one-sided-reads is for a single node on a real pool (not a group member, not the crash simulator)");
    }
    Ok(())
}

/// The shard count from `--shards` and the data set at `--pool`, and
/// shard 0's cluster port: a number as given; unset (`auto`), the data
/// set's count when its pool exists, else the cores this process may use
/// (at most `SHARDS_MAX`; one for a node of a replicated group or on the
/// epoll engine). More than one shard without `--cluster-ports` gets any
/// free ports. A count that is not the data set's is refused when the
/// pools are opened, naming the count to use.
fn shard_count(config: &ServeConfig) -> anyhow::Result<(u16, Option<u16>)> {
    // Shard 0's file names the data set's count (another shard's file is
    // refused by `check_shard`, naming what it is).
    let found = crate::launch::pools::header_of(&config.pool)
        .and_then(|header| header.shard)
        .filter(|id| id.index == 0)
        .map(|id| id.count);
    let existing = config.pool.exists().then(|| found.unwrap_or(1));
    // What runs one shard only (so far) makes one when asked for a shard
    // per core.
    let single = config.group.node_id.is_some() || config.io.is_some();
    let count = match config.shards {
        Some(count @ 1..=SHARDS_MAX) => count,
        Some(number) => bail!("--shards {number}: use auto or 1 to {SHARDS_MAX}"),
        // A shard per core by default; an existing data set keeps its count.
        None => match existing {
            Some(count) => count,
            None if single => 1,
            None => {
                let cores = crate::io::cores::allowed_cpus().context("reading this process's CPU affinity")?.len();
                cores.clamp(1, usize::from(SHARDS_MAX)) as u16
            }
        },
    };
    let cluster_ports = match config.cluster_ports {
        None if count > 1 => Some(0),
        ports => ports,
    };
    Ok((count, cluster_ports))
}

/// The Redis parameters to set at start, each checked as CONFIG SET checks
/// it (a bad one stops the start, naming it); one that is ignored is said
/// once, in the log.
fn redis_params(given: &[(String, String)]) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut params: Vec<(&'static str, String)> = Vec::new();
    let mut no_effect: Vec<&'static str> = Vec::new();
    for (name, value) in given {
        match check_at_start(name, value).map_err(|why| anyhow::anyhow!("--redis-param {name}: {why}"))? {
            AtStart::Set(name, value) => {
                params.retain(|(set, _)| *set != name);
                params.push((name, value));
            }
            AtStart::Ignored(why) => tracing::warn!("Redis parameter ignored: {why}"),
            AtStart::Unchanged => {}
            AtStart::NoEffect(name) if !no_effect.contains(&name) => no_effect.push(name),
            AtStart::NoEffect(_) => {}
        }
    }
    if !no_effect.is_empty() {
        tracing::warn!("Redis parameters ignored, no effect in packetstore: {}", no_effect.join(", "));
    }
    Ok(params)
}

/// Each new pool's size: `--pool-size` (each shard's), or else the
/// default 1 GiB shared by the shards, each at least what its ring needs
/// (129 MiB with the default ring and log: up to 7 shards the total stays
/// 1 GiB; past that it is shards x 129 MiB, each with little room left for
/// values: give --pool-size on a machine of many cores).
fn new_pool_size(config: &ServeConfig, shards: u16, needed: &BuffersNeeded) -> Size {
    if let Some(size) = &config.pool_size {
        return size.clone();
    }
    if shards <= 1 {
        return Size::mib(POOL_SIZE_DEFAULT_MIB);
    }
    let shared_mib = POOL_SIZE_DEFAULT_MIB / u64::from(shards);
    Size::mib(shared_mib.max(needed.pool_size_min_mib(config.log_size.bytes)))
}

/// The key-value server's configuration, before a shard's own parts.
fn kv_config(config: &ServeConfig, shards: u16, buffers_reserve: u32) -> KvConfig {
    KvConfig {
        persist: config.persist,
        value_size_max: config.value_size_max.bytes,
        zero_copy_min: config.zero_copy_min.bytes,
        requirepass: config.requirepass.clone().map(String::into_bytes),
        metrics_public: config.metrics_public,
        debug_command: config.debug_command,
        buffers_reserve,
        domain_name: String::new(),
        power_switch: None,
        // The process's rate, shared evenly by its shards.
        scrub_rate_bytes: config.scrub_rate.bytes / u64::from(shards.max(1)),
        settings: KvSettings {
            resp: None,
            http: None,
            connections_max: config.loops.connections_max,
            // Filled once the pool's directory exists (`setup::kv_config`).
            dir: String::new(),
            protected_mode: config.protected_mode,
            test_switches: test_switches_enabled(),
            cluster: None,
            redis_params: Vec::new(),
            config_file: None,
        },
    }
}
