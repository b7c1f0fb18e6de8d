//! One key-value server over one pool (`--shards 1`): the server that may
//! also be a node of a replicated group, run on the crash simulator, run
//! on the epoll baseline, or publish for one-sided readers.
//!
//! Invariant: both listeners (and a node's peer port) are bound before
//! the pool is created or opened, so a failure leaves no file and replays
//! nothing; the pool stays open and locked until the loop has stopped and
//! its checkpoint is written.

use std::io::Write;
use std::os::fd::OwnedFd;

use anyhow::bail;

use crate::apps::kv::KvServer;
use crate::io::cores::run_loop;
use crate::io::engine::EngineConfig;
use crate::launch::config::Plan;
use crate::launch::pools::{
    check_buffers, check_new_pool, open_or_create_pool, power_switch, warn_pool_size_ignored, write_crash_image,
};
use crate::launch::setup::{kv_config, open_store, print_limits, record_recovery, stopped};
use crate::{Buffers, Pool, PoolKind};

/// Serves one pool on one event loop until stopped.
pub(super) fn run(plan: &Plan) -> anyhow::Result<()> {
    let config = &plan.config;
    let mut group = plan.group.clone();
    // Sizes are checked and both listeners bound before the pool is
    // created or opened: a failure leaves no file and replays nothing.
    check_new_pool(&config.pool, &plan.pool_size, &config.log_size, &plan.needed)?;
    let listeners = bind_listeners(plan)?;
    let (file_pool, created) = open_or_create_pool(
        &config.pool,
        PoolKind::KeyValue,
        &plan.pool_size,
        &config.log_size,
        1,
        &config.storage.options,
        (config.storage.create_dirs, None),
    )?;
    if !created {
        warn_pool_size_ignored(&config.pool, config.pool_size.as_ref(), &file_pool);
    }
    // The file pool stays open (and locked) while a simulated one runs.
    let power = power_switch(config.storage.simulate, &config.pool)?;
    let simulated = power.as_ref().map(|device| Pool::open_simulated(device.clone())).transpose()?;
    let pool = simulated.as_ref().unwrap_or(&file_pool);
    let geometry = pool.geometry();
    if geometry.log_count != 1 {
        bail!(
            "{} was made for {} event loops (a WAL pool?): serve uses one",
            config.pool.display(),
            geometry.log_count
        );
    }
    check_buffers(&config.pool, &geometry, &plan.needed)?;
    crate::launch::shards::check_shard(&config.pool, file_pool.header().shard, None)?;
    let domain = pool.domain().clone();
    crate::launch::setup::print_banner(&config.pool, pool, created, power.is_some())?;

    let mut buffers = Buffers::new(geometry.buffer_count);
    // The page domain writes back whole pages at each sync: hand out
    // neighbouring buffers so that a batch's values share pages.
    buffers.set_sequential(domain.domain == crate::Domain::Page);
    let (mut store, report) = open_store(plan, pool, &mut buffers, group.is_some(), None)?;
    let (http_addr, resp_addr) =
        (crate::io::net::local_addr(&listeners[0])?, crate::io::net::local_addr(&listeners[1])?);
    if let Some(group) = group.as_mut() {
        group.client_addr = Some(resp_addr);
    }
    let replica = group.map(|group| super::group::join_group(group, &mut store, pool, &mut buffers)).transpose()?;
    let shared = replica.is_some() || power.is_some();
    let _table = super::readers::set_up_readers((config, &config.pool), pool, &mut store, &mut buffers, shared)?;
    let recovery = report.to_string();
    println!("recovery: {recovery}");
    record_recovery(pool, &report);
    let kv_config = kv_config(plan, &domain, power.clone(), (Some(resp_addr), Some(http_addr)));
    let mut server = KvServer::new(kv_config, store, recovery);
    if let Some(replica) = replica {
        server.set_replica(replica);
    }
    server.set_recovery_duration(report.duration);
    let (stop, wake_fd) = super::shutdown::install()?;
    let mut engine = EngineConfig { listen: http_addr, wake_fd: Some(wake_fd), ..plan.engine.clone() };
    if let Some(features) = &plan.features {
        engine = engine.adapt_to(features);
    }
    let kind = match config.io {
        None => "io uring".to_string(),
        Some(policy) => format!("io epoll, commit {}", policy.name()),
    };
    let ready = format!(
        "listening: http {http_addr}, redis {resp_addr} ({kind}, 1 event loop, persist {}, limits: value {} bytes, key {} bytes)",
        config.persist.name(),
        config.value_size_max.bytes,
        crate::store::db::KEY_SIZE_MAX
    );
    print_limits(&engine, plan);
    let on_ready = || {
        println!("{ready}");
        let _ = std::io::stdout().flush();
    };
    let outcome = run_loop(pool, &mut buffers, &mut server, config.io, engine, listeners, (stop, on_ready));
    if let Some(done) = stopped_abnormally(power.as_deref(), &config.pool, &server) {
        return done;
    }
    let drained = outcome?;
    let stop = stopped(drained, &mut server, pool, &mut buffers)?;
    crate::launch::setup::log_stopped(&[stop]);
    Ok(())
}

/// The loop stopped because the simulated power failed (the crash image
/// is written back) or because the node must rebuild (restarted in place).
fn stopped_abnormally(
    power: Option<&crate::SimDevice>,
    pool: &std::path::Path,
    server: &KvServer,
) -> Option<anyhow::Result<()>> {
    if let Some(device) = power.filter(|device| device.is_dead()) {
        return Some(write_crash_image(device, pool));
    }
    server.rebuild_requested().then(|| super::group::restart_in_place(power.map(|device| (device, pool))))
}

/// The HTTP and Redis protocol listeners (and a group node's peer port),
/// in that order, each bound with the wait of `--bind-timeout`; a warning
/// for each that the network can reach without a password.
fn bind_listeners(plan: &Plan) -> anyhow::Result<Vec<OwnedFd>> {
    let config = &plan.config;
    let (timeout, nonblocking) = (config.bind_timeout, config.io.is_some());
    let http = super::listen::bind(config.http, "HTTP", false, nonblocking, timeout)?;
    let resp = super::listen::bind(config.resp, "Redis protocol", false, nonblocking, timeout)?;
    super::listen::warn_serve_exposure(config.http, config.resp, config.requirepass.is_some(), config.protected_mode);
    let mut listeners = vec![http, resp];
    if let Some(group) = &plan.group {
        // A node's peer port: its own entry of --peers.
        let peer = group.members[&group.node_id];
        listeners.push(super::listen::bind(peer, "peer", false, nonblocking, timeout)?);
        super::listen::warn_peer_exposure(peer, !group.secret.is_empty());
    }
    Ok(listeners)
}
