//! `packetstore serve`: the durable key-value server. HTTP (`/kv/<key>`,
//! PASTE's pKVS) and the Redis protocol on one event loop over one pool.
//! See `packetstore::apps::kv` for the protocols and `packetstore::store::db` for how
//! writes become durable.

use std::io::Write;

use anyhow::bail;
use packetstore::apps::kv::KvServer;
use packetstore::io::app::Persist;
use packetstore::io::cores::{raise_open_file_limit, run_loop};
use packetstore::io::engine::EngineConfig;
use packetstore::{Buffers, Pool, PoolKind};

use crate::kv_setup::{kv_config, open_store, print_limits, record_recovery, stopped, Args, Prepared};
use crate::options::{
    check_buffers, check_new_pool, open_or_create_pool, power_switch, warn_pool_size_ignored, write_crash_image,
};

pub fn run(mut args: Args) -> anyhow::Result<()> {
    crate::shards::resolve_shards(&mut args)?;
    let prepared = Prepared::new(&args)?;
    raise_open_file_limit();
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
    crate::kv_setup::print_banner(&args.pool, pool, created, power.is_some())?;

    let mut buffers = Buffers::new(geometry.buffer_count);
    // The page domain writes back whole pages at each sync: hand out
    // neighbouring buffers so that a batch's values share pages.
    buffers.set_sequential(domain.domain == packetstore::Domain::Page);
    let (mut store, report) =
        open_store(&args, pool, &mut buffers, value_size_max, buffers_reserve, group.is_some(), None)?;
    if let Some(group) = group.as_mut() {
        group.client_addr = Some(packetstore::io::net::local_addr(&listeners[1])?);
    }
    let replica = group.map(|group| crate::group::join_group(group, &mut store, pool, &mut buffers)).transpose()?;
    let shared = replica.is_some() || power.is_some();
    let _table = crate::readers::set_up_readers((&args, &args.pool), pool, &mut store, &mut buffers, shared)?;
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
    let stop = stopped(drained, &mut server, pool, &mut buffers)?;
    crate::kv_setup::log_stopped(&[stop]);
    Ok(())
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
    server.rebuild_requested().then(crate::group::restart_in_place)
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
