//! `packetstore serve`: the durable key-value server. HTTP (`/kv/<key>`,
//! PASTE's pKVS) and the Redis protocol, a shard per core by default.
//! This file only parses the options into the library's `ServeConfig`;
//! `packetstore::launch` checks them and assembles the server (see
//! `packetstore::apps::kv` for the protocols and `packetstore::store::db`
//! for how writes become durable).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use packetstore::io::app::Persist;
use packetstore::launch::group::parse_peers;
use packetstore::launch::{GroupSettings, ServeConfig};

use crate::options::{parse_address, parse_duration, BindArgs, LoopArgs, PersistArgs, Size};

pub fn run(args: Args) -> anyhow::Result<()> {
    packetstore::launch::serve(config(args)?)
}

/// The library's configuration from the command line.
fn config(args: Args) -> anyhow::Result<ServeConfig> {
    let persist = Persist::parse(&args.persist)
        .filter(|&p| p != Persist::Off)
        .ok_or_else(|| anyhow::anyhow!("unknown --persist '{}': use zerocopy or copy", args.persist))?;
    Ok(ServeConfig {
        io: packetstore::launch::pools::parse_io(&args.io, &args.commit)?,
        persist,
        storage: args.persist_args.storage()?,
        loops: args.loop_args.settings(),
        bind_timeout: args.bind_args.bind_timeout,
        group: GroupSettings {
            node_id: args.group_args.node_id,
            peers: args.group_args.peers,
            group_id: args.group_args.group_id,
            peer_secret: args.group_args.peer_secret,
            raft_tick: args.group_args.raft_tick,
            join: args.group_args.join,
        },
        pool: args.pool,
        pool_size: args.pool_size,
        log_size: args.log_size,
        http: args.http,
        resp: args.resp,
        requirepass: args.requirepass,
        metrics_public: args.metrics_public,
        protected_mode: args.protected_mode == "yes",
        debug_command: args.enable_debug_command,
        value_size_max: args.value_size_max,
        zero_copy_min: args.zero_copy_min,
        replay_budget: args.replay_budget,
        checkpoint_interval: args.checkpoint_interval,
        compact_waste: args.compact_waste,
        scrub_rate: args.scrub_rate,
        one_sided_reads: args.one_sided_reads,
        pool_group_read: args.pool_group_read,
        shards: args.shards.and_then(|count| count.0),
        cluster_ports: args.cluster_ports,
        redis_params: args.redis_params,
        redis_conf: args.redis_conf,
        replay_progress: Some(replay_bar),
    })
}

/// `--redis-param NAME=VALUE`.
fn parse_redis_param(text: &str) -> anyhow::Result<(String, String)> {
    let (name, value) = text.split_once('=').ok_or_else(|| anyhow::anyhow!("'{text}' is not NAME=VALUE"))?;
    Ok((name.trim().to_ascii_lowercase(), value.to_string()))
}

/// `--shards`: a number, or `auto` (None).
#[derive(Clone, Copy, Debug)]
pub struct ShardCount(Option<u16>);

fn parse_shards(text: &str) -> anyhow::Result<ShardCount> {
    if text == "auto" {
        return Ok(ShardCount(None));
    }
    let max = packetstore::launch::config::SHARDS_MAX;
    let count = text.parse::<u16>().map_err(|_| anyhow::anyhow!("--shards {text}: use auto or 1 to {max}"))?;
    Ok(ShardCount(Some(count)))
}

/// A progress bar for a long replay, on a terminal only.
fn replay_bar() -> Box<dyn FnMut(u64, u64)> {
    let mut bar: Option<indicatif::ProgressBar> = None;
    Box::new(move |done: u64, total: u64| {
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
    })
}

#[derive(clap::Args)]
pub struct Args {
    /// A TOML file of options: the keys are these flags without dashes
    /// (pool-size = "4GiB", requirepass = "...", busy-poll = true); or a
    /// Redis user's redis.conf (port, bind, requirepass, any Redis 7.0
    /// parameter: docs/operations.md). Flags given on the command line win.
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
    #[arg(long, value_parser = Size::parse)]
    pub pool_size: Option<Size>,
    /// Log region of a new pool.
    #[arg(long, default_value = "64MiB", value_parser = Size::parse)]
    pub log_size: Size,
    /// HTTP listener (PUT/GET/HEAD/DELETE /kv/<key>): IP:PORT or
    /// HOST:PORT. A host name binds the first address it resolves to, IPv4
    /// first (localhost: 127.0.0.1).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_address)]
    pub http: SocketAddr,
    /// Redis protocol listener, as --http (a host name binds its first
    /// address, IPv4 first).
    #[arg(long, default_value = "127.0.0.1:6379", value_parser = parse_address)]
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
    #[arg(long, default_value = "64MiB", value_parser = Size::parse)]
    pub value_size_max: Size,
    /// Values at least this long are sent from the pool without copying
    /// (measured: copying is cheaper up to 4 KiB, sending from the pool
    /// from 8 KiB; bench/results/kv.md).
    #[arg(long, default_value = "8KiB", value_parser = Size::parse)]
    pub zero_copy_min: Size,
    /// The replay budget: a restart replays at most this many log records
    /// (a checkpoint starts at half of it; writes wait at all of it).
    /// About 2 us a record (bench/results/restart.md).
    #[arg(long, default_value_t = packetstore::store::db::REPLAY_RECORDS_MAX_DEFAULT, alias = "checkpoint-records")]
    pub replay_budget: usize,
    /// Checkpoint the index this long after the last checkpoint too
    /// ("500ms", "10s").
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub checkpoint_interval: std::time::Duration,
    /// Compact (relocate the values of partly live buffers) when this
    /// fraction of the bytes of the buffers holding values is waste; 0
    /// compacts continuously, above 1 never.
    #[arg(long, default_value_t = 0.5)]
    pub compact_waste: f64,
    /// Value bytes a second the scrubber checks against their CRCs, pass
    /// after pass over the whole tree ("8MiB"; 0: no scrubbing), for the
    /// process (its shards share it evenly). Progress and what it found:
    /// INFO persistence (scrub_*) and /metrics.
    #[arg(long, default_value = "8MiB", value_parser = Size::parse)]
    pub scrub_rate: Size,
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
    #[arg(long, value_name = "N|auto", value_parser = parse_shards)]
    pub shards: Option<ShardCount>,
    /// Serve Redis Cluster clients: shard i on this port + i (0: any free
    /// ports), on --resp's address, each a master of its slots. With more
    /// than one shard and no --cluster-ports: any free ports (CLUSTER
    /// SLOTS and the listening line name them).
    #[arg(long)]
    pub cluster_ports: Option<u16>,
    /// A Redis configuration parameter set at start, as CONFIG SET
    /// would set it (repeatable; a later one wins): `--redis-param
    /// notify-keyspace-events=KEA`. A redis.conf given as --config becomes
    /// these (and --resp, --requirepass, ...: docs/operations.md).
    #[arg(long = "redis-param", value_name = "NAME=VALUE", value_parser = parse_redis_param)]
    pub redis_params: Vec<(String, String)>,
    /// Set by --config when it reads a redis.conf: the file CONFIG
    /// REWRITE rewrites.
    #[arg(long = "redis-conf", hide = true)]
    pub redis_conf: Option<PathBuf>,
    #[command(flatten)]
    pub bind_args: BindArgs,
    #[command(flatten)]
    pub loop_args: LoopArgs,
    #[command(flatten)]
    pub persist_args: PersistArgs,
    #[command(flatten)]
    pub group_args: GroupArgs,
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct GroupArgs {
    /// Run as node N (1, 2, ...) of a replicated group (Raft): a write is
    /// acknowledged once durable on a majority of the group's pools.
    #[arg(long)]
    pub node_id: Option<u64>,
    /// Every member of the group, this node included, with its peer
    /// address: "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003". This
    /// node listens for its peers on its own entry's address.
    #[arg(long, value_parser = parse_peers)]
    pub peers: Option<BTreeMap<u64, SocketAddr>>,
    /// The group's id: a pool that belongs to another group (or to another
    /// node id) is refused.
    #[arg(long, default_value_t = 1)]
    pub group_id: u64,
    /// A secret every peer link must present (none by default: peers
    /// listen on 127.0.0.1 unless told otherwise).
    #[arg(long)]
    pub peer_secret: Option<String>,
    /// raft's tick ("100ms"): heartbeats every 2 ticks, elections after 10
    /// to 20 ticks without a leader.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
    pub raft_tick: std::time::Duration,
    /// Join an existing group instead of starting one: the node waits
    /// until the leader adds it (`GROUP ADD N HOST:PORT` on any member),
    /// then catches up from a snapshot. --peers names the members and
    /// this node.
    #[arg(long)]
    pub join: bool,
}
