//! A key-value server of N shards (`--shards N`, by default a shard per
//! core). Each shard is an
//! event loop pinned to its own core, with its own pool file, log, tree,
//! checkpoints and compaction, owning a contiguous range of Redis
//! Cluster's 16,384 hash slots (`crate::apps::kv::cluster`).
//!
//! Each shard listens on its own cluster port (`--cluster-ports P`: shard
//! i on P + i), where it answers as a Redis Cluster master of its slots:
//! clients that route themselves (redis-py's RedisCluster, ioredis's
//! Cluster, `redis-cli -c`, `redis-benchmark --cluster`) send each command
//! straight to its core. The main ports are shared by every shard
//! (SO_REUSEPORT); on the Redis port a command for another shard's keys is
//! relayed to it over the links made here (`apps/kv/route/shard_link.rs`), and
//! so is an HTTP request (`apps/kv/route/http_relay.rs`).
//!
//! On the crash simulator (`--simulate-power-failures`, a test switch)
//! each shard's pool runs on a device of its own; when one's power fails,
//! every shard stops and each pool file gets its device's crash image (the
//! others' taken as they stop), as one power cut would leave them.
//!
//! Owns: the shards' pool paths (`kv.pool`, `kv.1.pool`, ...), checking
//! that the files found form one data set of this many shards, the links
//! between shards (socketpairs), and the shards' threads.
//!
//! Invariants: a shard serves only a pool whose header names it as shard
//! `i` of `N` of the same data set as shard 0 (a pool of another count,
//! index or set is refused before anything is replayed); no shard serves
//! before every shard has recovered; a shard that stops, by SHUTDOWN or
//! by failing, stops the others.

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};

use crate::apps::kv::across::Exchange;
use crate::apps::kv::cluster::ClusterView;
use crate::apps::kv::KvServer;
use crate::io::cores::{allowed_cpus, pin_current_thread, run_loop};
use crate::io::engine::EngineConfig;
use crate::launch::config::Plan;
use crate::launch::pools::{check_buffers, check_new_pool, open_or_create_pool, power_switch};
use crate::launch::setup::Stopped;
use crate::pool::layout::ShardId;
use crate::replica::ReplicaConfig;
use crate::store::db::Horizons;
use crate::{Buffers, Pool, PoolKind, SimDevice};

/// Stops every shard when dropped; a panic also counts as a failure (so
/// that shards waiting for the others' recovery give up).
struct StopAllOnDrop<'a>(&'a AtomicBool);

impl Drop for StopAllOnDrop<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
        super::shutdown::request_stop();
    }
}

/// Shard `index`'s pool file: `--pool` itself for shard 0, then
/// `kv.1.pool`, `kv.2.pool`, ... beside it (one-sided readers find them
/// the same way).
pub use crate::pool::layout::shard_path;

/// One shard, ready to recover and serve.
struct Shard {
    index: u16,
    path: PathBuf,
    /// The pool it serves: its file's, or on the crash simulator the
    /// simulated device's (`device`), while the file stays open and locked
    /// (`_file`).
    pool: Pool,
    _file: Option<Pool>,
    device: Option<Arc<SimDevice>>,
    created: bool,
    listeners: Vec<OwnedFd>,
}

/// Serves `plan.shards` shards until stopped.
pub(super) fn run(plan: &Plan) -> anyhow::Result<()> {
    let (count, config) = (plan.shards, &plan.config);
    assert!(config.io.is_none(), "Plan::new refuses shards on the epoll engine");
    // A node of a replicated group: each shard is a group of its own.
    let group = plan.group.clone();
    let groups = (0..count)
        .map(|index| group.as_ref().map(|group| super::group::shard_config(group, index, count)).transpose())
        .collect::<anyhow::Result<Vec<Option<ReplicaConfig>>>>()?;
    let listeners = bind_all(plan, &groups)?;
    let mut links = shard_links(count)?;
    let pools = open_all(plan)?;
    let cpus = allowed_cpus().context("reading this process's CPU affinity")?;
    // The cluster port comes after a node's peer port.
    let cluster_listener = if group.is_some() { 3 } else { 2 };
    let ports = listeners.iter().map(|l| crate::io::net::local_addr(&l[cluster_listener]).map(|a| a.port()));
    let ports = ports.collect::<std::io::Result<Vec<u16>>>()?;
    let main = (crate::io::net::local_addr(&listeners[0][0])?, crate::io::net::local_addr(&listeners[0][1])?);
    let set_id = pools[0].1.header().shard.map_or(0, |id| id.set_id);
    let shards = pools
        .into_iter()
        .zip(listeners)
        .enumerate()
        .map(|(i, ((path, pool, created), listeners))| {
            let device = power_switch(config.storage.simulate, &path)?;
            let (pool, file) = match &device {
                Some(device) => (Pool::open_simulated(device.clone())?, Some(pool)),
                None => (pool, None),
            };
            Ok(Shard { index: i as u16, path, pool, _file: file, device, created, listeners })
        })
        .collect::<anyhow::Result<Vec<Shard>>>()?;
    let devices = simulated_devices(&shards);
    super::setup::print_sharded_banner(&shards[0].pool, !devices.is_empty())?;
    let (stop, wake_fd) = super::shutdown::install()?;
    let horizons = Horizons::new(count);
    let exchange = Arc::new(Exchange::new(count).context("making the shards' eventfds")?);
    let failed = AtomicBool::new(false);
    let recovered = AtomicUsize::new(0);
    let ready = AtomicUsize::new(0);
    // Clients are told an address they can reach: a wildcard bind
    // announces loopback.
    let host = match config.resp.ip() {
        ip if ip.is_unspecified() => std::net::IpAddr::from([127, 0, 0, 1]),
        ip => ip,
    };
    let view = |index| ClusterView {
        shard: index,
        shards: count,
        set_id,
        host,
        ports: ports.clone(),
        listener: cluster_listener,
    };
    let rebuild = AtomicBool::new(false);
    // --connections-max is the process's, whichever shard the kernel hands
    // a connection to.
    let clients = crate::io::engine::SharedLimit::new(config.loops.connections_max);
    let outcomes: Vec<anyhow::Result<Option<Stopped>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = shards
            .into_iter()
            .zip(groups)
            .map(|(shard, group)| {
                let cpu = cpus[usize::from(shard.index) % cpus.len()];
                let (failed, recovered, ready, view) = (&failed, &recovered, &ready, view(shard.index));
                let (horizons, exchange, rebuild, clients) = (&horizons, &exchange, &rebuild, clients.clone());
                let links = std::mem::take(&mut links[usize::from(shard.index)]);
                scope.spawn(move || {
                    // However this thread ends (a panic too), the others stop.
                    let _stop_all = StopAllOnDrop(failed);
                    let one = OneShard {
                        plan,
                        view,
                        main,
                        cpu,
                        stop,
                        wake_fd,
                        links,
                        horizons,
                        exchange,
                        group,
                        rebuild,
                        clients,
                    };
                    let outcome = one.serve(shard, recovered, failed, ready);
                    // (The guard stops the others as this returns.)
                    if outcome.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    outcome
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a shard panicked")))).collect()
    });
    let errors = ended(outcomes, count);
    if devices.iter().any(|(device, _)| device.is_dead()) {
        return write_crash_images(&devices);
    }
    if rebuild.load(Ordering::SeqCst) {
        // A shard's group dropped entries its tree reflects: the whole node
        // starts again from its durable state, as one shard alone does.
        return super::group::restart_in_place(devices.iter().map(|(device, path)| (&**device, path.as_path())));
    }
    match errors.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The shards' threads' ends: their errors; when every shard stopped
/// gracefully, the process's one line for the stop.
fn ended(outcomes: Vec<anyhow::Result<Option<Stopped>>>, count: u16) -> Vec<anyhow::Error> {
    let mut stops = Vec::new();
    let mut errors = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(stopped) => stops.extend(stopped),
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() && stops.len() == usize::from(count) {
        super::setup::log_stopped(&stops);
    }
    errors
}

/// The shards' simulated devices, if they run on the crash simulator: a
/// command across shards that cannot end whole then stops the process
/// after writing every pool the image the power failing then would leave.
fn simulated_devices(shards: &[Shard]) -> Vec<(Arc<SimDevice>, PathBuf)> {
    let devices: Vec<(Arc<SimDevice>, PathBuf)> =
        shards.iter().filter_map(|s| s.device.clone().map(|device| (device, s.path.clone()))).collect();
    if !devices.is_empty() {
        println!("WARNING: SIMULATED POWER FAILURES (test switch): every shard's pool runs in memory on the crash simulator; DEBUG POWERFAIL writes the crash images back to the files");
        let at_stop = devices.clone();
        crate::apps::kv::before_stopping_half_way(Box::new(move || {
            if let Err(error) = write_crash_images(&at_stop) {
                eprintln!("writing the crash images: {error:#}");
            }
        }));
    }
    devices
}

/// The simulated power failed: every shard's pool file gets what survived
/// on its device (a device still up is cut now, its shard having stopped).
fn write_crash_images(devices: &[(Arc<SimDevice>, PathBuf)]) -> anyhow::Result<()> {
    for (index, (device, path)) in devices.iter().enumerate() {
        let image = device.take_crash_image().unwrap_or_else(|| device.crash(0x5eed ^ index as u64));
        super::pools::write_image(path, &image)?;
    }
    let paths: Vec<String> = devices.iter().map(|(_, path)| path.display().to_string()).collect();
    println!("power failed (simulated): the crash images are in {}", paths.join(", "));
    let _ = std::io::Write::flush(&mut std::io::stdout());
    Ok(())
}

/// Every shard's ends of the links between shards: for each two shards
/// i and j, a socketpair that carries i's clients' commands to j (i's end
/// served as `LISTENER_LINK_OUT + j`, j's as `LISTENER_LINK_IN`) and one
/// the other way; and one from each shard to itself, which carries its
/// part of a command that spans every shard. The event loops own and
/// close them.
fn shard_links(count: u16) -> anyhow::Result<Vec<Vec<(std::os::fd::RawFd, usize)>>> {
    use crate::apps::kv::{link_pair, LISTENER_LINK_IN, LISTENER_LINK_OUT};
    use std::os::fd::IntoRawFd;
    let mut links = vec![Vec::new(); usize::from(count)];
    for from in 0..usize::from(count) {
        for to in 0..usize::from(count) {
            let (near, far) = link_pair().context("making the links between shards")?;
            links[from].push((near.into_raw_fd(), LISTENER_LINK_OUT + to));
            links[to].push((far.into_raw_fd(), LISTENER_LINK_IN));
        }
    }
    Ok(links)
}

/// Every shard's listeners: the main HTTP and Redis ports (shared through
/// SO_REUSEPORT, at their first shard's port when given as 0), a node's
/// peer port for its shard's group (`groups`), then its cluster port.
fn bind_all(plan: &Plan, groups: &[Option<ReplicaConfig>]) -> anyhow::Result<Vec<Vec<OwnedFd>>> {
    let config = &plan.config;
    let (timeout, nonblocking) = (config.bind_timeout, config.io.is_some());
    let base = plan.cluster_ports.context("--shards above 1 needs --cluster-ports (the first shard's port)")?;
    let (mut http, mut resp) = (config.http, config.resp);
    let mut all = Vec::new();
    for index in 0..plan.shards {
        // The first shard's binds refuse a port another process listens
        // on; the others join the first's (SO_REUSEPORT).
        let (h, r) = if index == 0 {
            let h = super::listen::bind(http, "HTTP", true, nonblocking, timeout)?;
            (h, super::listen::bind(resp, "Redis protocol", true, nonblocking, timeout)?)
        } else {
            let join = |addr| crate::io::net::listen(addr, true, nonblocking);
            (join(http).context("HTTP, another shard")?, join(resp).context("Redis protocol, another shard")?)
        };
        (http, resp) = (crate::io::net::local_addr(&h)?, crate::io::net::local_addr(&r)?);
        let port = if base == 0 { 0 } else { base.checked_add(index).context("--cluster-ports: past port 65535")? };
        let cluster = SocketAddr::new(config.resp.ip(), port);
        let mut listeners = vec![h, r];
        if let Some(group) = &groups[usize::from(index)] {
            let peer = group.members[&group.node_id];
            listeners.push(super::listen::bind(peer, "peer", false, nonblocking, timeout)?);
            super::listen::warn_peer_exposure(peer, !group.secret.is_empty());
        }
        listeners.push(super::listen::bind(cluster, "Redis Cluster", false, nonblocking, timeout)?);
        all.push(listeners);
    }
    super::listen::warn_serve_exposure(config.http, config.resp, config.requirepass.is_some(), config.protected_mode);
    Ok(all)
}

/// Opens every shard's pool, or creates them all (a new data set), and
/// checks that they form one data set of `plan.shards` shards.
fn open_all(plan: &Plan) -> anyhow::Result<Vec<(PathBuf, Pool, bool)>> {
    let (count, config) = (plan.shards, &plan.config);
    let paths: Vec<PathBuf> = (0..count).map(|i| shard_path(&config.pool, i)).collect();
    let found: Vec<&PathBuf> = paths.iter().filter(|p| p.exists()).collect();
    if !found.is_empty() && found.len() != paths.len() {
        if let Some(shard) = super::pools::header_of(found[0]).map(|header| header.shard) {
            // What the first file found says of its data set.
            check_shard(found[0], shard, paths.iter().position(|p| p == found[0]).map(|i| (i as u16, count)))?;
        }
        let missing: Vec<String> = paths.iter().filter(|p| !p.exists()).map(|p| p.display().to_string()).collect();
        bail!(
            "{} of {count} shards' pools exist; missing: {} (a data set's shard count is fixed when it is made: \
             start with the --shards it was made with)",
            found.len(),
            missing.join(", ")
        );
    }
    let set_id = crate::pool::file::random_id();
    let mut pools = Vec::new();
    for (index, path) in paths.into_iter().enumerate() {
        // One shard is the whole data set: its pool is a plain one.
        let id = (count > 1).then_some(ShardId { index: index as u16, count, set_id });
        check_new_pool(&path, &plan.pool_size, &config.log_size, &plan.needed)?;
        let (pool, created) = open_or_create_pool(
            &path,
            PoolKind::KeyValue,
            &plan.pool_size,
            &config.log_size,
            1,
            &config.storage.options,
            (config.storage.create_dirs, id),
        )?;
        if !created && index == 0 {
            // Once for the data set: every shard's pool has one size.
            super::pools::warn_pool_size_ignored(&path, config.pool_size.as_ref(), &pool);
        }
        check_shard(&path, pool.header().shard, Some((index as u16, count)))?;
        check_set(&path, &pool, pools.first().map(|(_, p, _): &(PathBuf, Pool, bool)| p))?;
        check_buffers(&path, &pool.geometry(), &plan.needed)?;
        pools.push((path, pool, created));
    }
    Ok(pools)
}

/// Whether a pool whose header says `found` is shard `index` of the data
/// set `set` (shard 0's id): the offline tools' check of the files beside
/// shard 0's.
pub fn is_shard_of(found: Option<ShardId>, index: u16, set: ShardId) -> bool {
    found.is_some_and(|id| id.index == index && id.count == set.count && id.set_id == set.set_id)
}

/// A pool's `found` shard must be `wanted` (index, count), where a count
/// of 1 is an unsharded pool (the whole data set).
pub fn check_shard(path: &Path, found: Option<ShardId>, wanted: Option<(u16, u16)>) -> anyhow::Result<()> {
    let wanted = wanted.filter(|&(_, count)| count > 1);
    match found {
        None if wanted.is_none() => Ok(()),
        None => bail!(
            "{} holds an unsharded data set: serve it with --shards 1 (moving its keys into shards is not built yet)",
            path.display()
        ),
        Some(found) if Some((found.index, found.count)) != wanted => bail!(
            "{} is shard {} of a data set of {} shards: start with --shards {}",
            path.display(),
            found.index,
            found.count,
            found.count
        ),
        Some(_) => Ok(()),
    }
}

/// Every pool's shard, then: one data set (shard 0's id) and one log each.
fn check_set(path: &Path, pool: &Pool, first: Option<&Pool>) -> anyhow::Result<()> {
    if pool.geometry().log_count != 1 {
        bail!("{} was made for {} event loops: a shard uses one", path.display(), pool.geometry().log_count);
    }
    let found = pool.header().shard.map(|s| s.set_id);
    let set = first.and_then(|p| p.header().shard).map(|s| s.set_id);
    if let (Some(found), Some(set)) = (found, set) {
        if found != set {
            bail!("{} belongs to another data set than shard 0's ({found:032x}, not {set:032x})", path.display());
        }
    }
    Ok(())
}

/// Marks a shard's horizon failed when dropped, unless it was published.
pub struct Unblock<'a>(pub &'a Horizons, pub u16);

impl Drop for Unblock<'_> {
    fn drop(&mut self) {
        self.0.fail(self.1);
    }
}

/// Tells the exchange this shard's loop has ended, when dropped.
struct Leave<'a>(&'a Exchange, u16);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// What one shard's thread needs besides its pool.
struct OneShard<'a> {
    plan: &'a Plan,
    view: ClusterView,
    /// The main ports' addresses (HTTP, Redis protocol).
    main: (SocketAddr, SocketAddr),
    cpu: usize,
    stop: &'static AtomicBool,
    wake_fd: i32,
    /// Its ends of the links to and from every other shard, with the
    /// listener index each is served as (`shard_link.rs`).
    links: Vec<(std::os::fd::RawFd, usize)>,
    /// Every shard's horizon at recovery, and the exchange for commands
    /// across shards (`apps/kv/route/across.rs`).
    horizons: &'a Horizons,
    exchange: &'a Arc<Exchange>,
    /// The process's limit on client connections, shared by every shard.
    clients: Arc<crate::io::engine::SharedLimit>,
    /// Its group, on a node of a replicated group; and the node's flag
    /// that a shard must rebuild (the process restarts in place).
    group: Option<ReplicaConfig>,
    rebuild: &'a AtomicBool,
}

impl OneShard<'_> {
    /// Pins itself, recovers, waits for every shard, serves, and
    /// checkpoints after a graceful stop.
    fn serve(
        self,
        shard: Shard,
        recovered: &AtomicUsize,
        failed: &AtomicBool,
        ready: &AtomicUsize,
    ) -> anyhow::Result<Option<Stopped>> {
        let index = shard.index;
        // However recovery ends (an error, a panic), no shard waits for
        // this one's horizon forever (a no-op once it published).
        let _unblock = Unblock(self.horizons, index);
        // However this thread ends (a panic too), no command across shards
        // waits for it to answer.
        let _leave = Leave(self.exchange, index);
        if let Err(error) = pin_current_thread(self.cpu) {
            tracing::warn!("shard {index}: could not pin to CPU {}: {error}", self.cpu);
        }
        let recovery = self.recover(&shard);
        // No shard serves before every shard has recovered (or one failed).
        failed.fetch_or(recovery.is_err(), Ordering::SeqCst);
        recovered.fetch_add(1, Ordering::SeqCst);
        let shards = usize::from(self.plan.shards);
        while recovered.load(Ordering::SeqCst) < shards && !failed.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // A shard's one-sided readers' table lives as long as it serves.
        let (mut buffers, mut server, _table) = recovery?;
        if failed.load(Ordering::SeqCst) {
            return Ok(None);
        }
        // Every shard recovered: new transactions are numbered above
        // every horizon.
        self.exchange.start_after(self.horizons.max()?);
        server.join_exchange(self.exchange.clone());
        let plan = self.plan;
        let config = EngineConfig {
            listen: self.main.0,
            wake_fd: Some(self.wake_fd),
            nudge_fd: Some(self.exchange.nudge_fd(index)),
            // Its clients (at most the process's, `clients`: the kernel may
            // give any shard them all), its links, and private links (its
            // clients' own to other shards, and theirs to it).
            connections_max: plan.config.loops.connections_max
                + self.links.len()
                + 2 * crate::apps::kv::PRIVATE_LINKS_MAX,
            clients: Some(self.clients.clone()),
            logs_stop: index == 0,
            adopt: self.links.clone(),
            ..plan.engine.clone()
        };
        let config = match &plan.features {
            // One line per fallback for the process: shard 0's.
            Some(features) if index == 0 => config.adapt_to(features),
            Some(features) => config.adapt_quietly(features),
            None => config,
        };
        let shards = usize::from(plan.shards);
        let main = self.main;
        let on_ready = || {
            if ready.fetch_add(1, Ordering::SeqCst) + 1 == shards {
                let whole = EngineConfig { connections_max: plan.config.loops.connections_max, ..config.clone() };
                super::setup::print_limits(&whole, plan);
                let ports: Vec<String> = self.view.ports.iter().map(u16::to_string).collect();
                println!(
                    "listening: http {}, redis {} ({shards} shards; cluster ports {})",
                    main.0,
                    main.1,
                    ports.join(" ")
                );
                let _ = std::io::Write::flush(&mut std::io::stdout());
            }
        };
        let pool = &shard.pool;
        let outcome = run_loop(
            pool,
            &mut buffers,
            &mut server,
            plan.config.io,
            config.clone(),
            shard.listeners,
            (self.stop, on_ready),
        );
        // One shard stopping (SHUTDOWN, a failed commit) stops them all:
        // a data set is served whole or not at all.
        super::shutdown::request_stop();
        // No command across shards waits for this one any more.
        self.exchange.leave(index);
        if shard.device.as_ref().is_some_and(|device| device.is_dead()) {
            // Its image is written once every shard has stopped (`run`).
            return Ok(None);
        }
        if server.rebuild_requested() {
            self.rebuild.store(true, Ordering::SeqCst);
            return Ok(None);
        }
        let drained = outcome.with_context(|| format!("shard {index}"))?;
        let stopped = super::setup::stopped(drained, &mut server, pool, &mut buffers);
        stopped.map(Some).with_context(|| format!("shard {index}"))
    }

    /// Recovers the shard's store, publishes for one-sided readers (when
    /// asked) and makes its server.
    fn recover(&self, shard: &Shard) -> anyhow::Result<(Buffers, KvServer, Option<super::readers::RemoveTable>)> {
        let plan = self.plan;
        let pool = &shard.pool;
        let geometry = pool.geometry();
        let mut buffers = Buffers::new(geometry.buffer_count);
        buffers.set_sequential(pool.domain().domain == crate::Domain::Page);
        // A replicated shard's store replays nothing: its group decides
        // what is committed (no command across shards runs in one).
        let replicated = self.group.is_some();
        let horizons = (!replicated).then_some((self.horizons, shard.index));
        let (mut store, report) = super::setup::open_store(plan, pool, &mut buffers, replicated, horizons)
            .with_context(|| format!("shard {} ({})", shard.index, shard.path.display()))?;
        if replicated {
            crate::store::db::TxnOracle::publish(self.horizons, shard.index, 0);
        }
        let replica = match self.group.clone() {
            Some(group) => {
                let group = ReplicaConfig { client_addr: Some(self.main.1), ..group };
                Some(super::group::join_group(group, &mut store, pool, &mut buffers)?)
            }
            None => None,
        };
        let shared = shard.device.is_some() || replicated;
        let table =
            super::readers::set_up_readers((&plan.config, &shard.path), pool, &mut store, &mut buffers, shared)?;
        println!(
            "shard {}: pool {} ({:.1} MiB{}), CPU {}, slots {:?}; recovery: {report}",
            shard.index,
            shard.path.display(),
            pool.len() as f64 / 1048576.0,
            if shard.created { ", created" } else { "" },
            self.cpu,
            crate::apps::kv::cluster::slot_range(shard.index, plan.shards),
        );
        super::setup::record_recovery(pool, &report);
        let addrs = (Some(self.main.1), Some(self.main.0));
        let mut config = super::setup::kv_config(plan, pool.domain(), shard.device.clone(), addrs);
        config.settings.cluster = Some(self.view.clone());
        let mut server = KvServer::new(config, store, report.to_string());
        if let Some(replica) = replica {
            server.set_replica(replica);
        }
        server.set_recovery_duration(report.duration);
        Ok((buffers, server, table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_paths_sit_beside_the_first() {
        assert_eq!(shard_path(Path::new("d/kv.pool"), 0), Path::new("d/kv.pool"));
        assert_eq!(shard_path(Path::new("d/kv.pool"), 3), Path::new("d/kv.3.pool"));
        assert_eq!(shard_path(Path::new("kv"), 2), Path::new("kv.2"));
    }
}
