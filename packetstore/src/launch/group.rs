//! A key-value server that is a node of a replicated group (`--node-id N
//! --peers ...`): each shard's group, joining it, the peers' list read,
//! and the restart in place of a node that must rebuild.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::replica::ReplicaConfig;
use anyhow::{bail, Context};

/// The largest group id a sharded group may have: shard i's own group is
/// `group_id | i << SHARD_GROUP_SHIFT`.
const SHARD_GROUP_SHIFT: u32 = 48;

/// Shard `index` of `count`'s group: each shard is a Raft group of its own,
/// over the same nodes, each node's shard i listening for its peers on
/// the node's peer port + i, with the group id `group_id | i << 48`
/// (shard 0's is the group's own, so one shard is the unsharded group).
/// Refuses ports past 65535, and nodes on one host whose port ranges
/// overlap.
pub fn shard_config(group: &ReplicaConfig, index: u16, count: u16) -> anyhow::Result<ReplicaConfig> {
    if count > 1 && group.group_id >> SHARD_GROUP_SHIFT != 0 {
        bail!("--group-id {} with shards: use a group id below 2^{SHARD_GROUP_SHIFT}", group.group_id);
    }
    if count > 1 && group.join {
        bail!("--join with --shards {count}: a sharded node cannot join a group yet (start every node with --peers)");
    }
    let mut ports: Vec<(std::net::IpAddr, u16, u64)> = Vec::new();
    for (&id, addr) in &group.members {
        if u32::from(addr.port()) + u32::from(count) - 1 > 65535 {
            bail!(
                "--peers: node {id}'s {count} shards need ports {} to {}",
                addr.port(),
                u32::from(addr.port()) + u32::from(count) - 1
            );
        }
        if let Some((_, _, other)) =
            ports.iter().find(|(ip, port, _)| *ip == addr.ip() && port.abs_diff(addr.port()) < count)
        {
            bail!(
                "--peers: nodes {other} and {id} share ports: with {count} shards, node N's shard i listens for its \
                 peers on N's port + i, so space the nodes' ports at least {count} apart"
            );
        }
        ports.push((addr.ip(), addr.port(), id));
    }
    let members = group
        .members
        .iter()
        .map(|(&id, addr)| (id, std::net::SocketAddr::new(addr.ip(), addr.port() + index)))
        .collect();
    Ok(ReplicaConfig { group_id: group.group_id | u64::from(index) << SHARD_GROUP_SHIFT, members, ..group.clone() })
}

/// "1=host:port,2=host:port": node ids (from 1) and peer addresses.
pub fn parse_peers(text: &str) -> anyhow::Result<BTreeMap<u64, SocketAddr>> {
    let mut members = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (id, addr) = item.split_once('=').with_context(|| format!("--peers: '{item}' is not ID=HOST:PORT"))?;
        let id: u64 = id.trim().parse().with_context(|| format!("--peers: '{id}' is not a node id"))?;
        if id == 0 {
            bail!("--peers: node ids start at 1");
        }
        let addr = crate::launch::units::parse_address(addr.trim()).map_err(|e| anyhow::anyhow!("--peers: {e}"))?;
        if members.insert(id, addr).is_some() {
            bail!("--peers names node {id} twice");
        }
    }
    if members.is_empty() {
        bail!("--peers is empty");
    }
    Ok(members)
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
pub(super) fn restart_in_place<'a>(
    simulated: impl IntoIterator<Item = (&'a crate::SimDevice, &'a std::path::Path)>,
) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    // On the crash simulator the new process finds what this one stored
    // (a process restart), not the pool as the simulator started it.
    for (device, pool) in simulated {
        super::pools::write_image(pool, &device.process_restart_image())?;
    }
    tracing::warn!("restarting in place to rebuild from the durable checkpoint and the committed log");
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let error = std::process::Command::new("/proc/self/exe").args(args).exec();
    Err(anyhow::Error::new(error).context("re-executing /proc/self/exe to restart in place"))
}

/// The node of its replicated group this server is: its Raft log rebuilt
/// from the store's, its committed entries applied.
pub(super) fn join_group(
    group: ReplicaConfig,
    store: &mut crate::store::db::Store,
    pool: &crate::Pool,
    buffers: &mut crate::Buffers,
) -> anyhow::Result<crate::replica::Replica> {
    let mut replica =
        crate::replica::Replica::open(group, store, pool, buffers).context("joining the replicated group")?;
    if super::pools::test_switches_enabled() && std::env::var("PACKETSTORE_TEST_OPEN_PART_LOADED").as_deref() == Ok("1")
    {
        // Tests of the repair of a part-loaded tree where the leader still
        // has this node's next entries (which no crash reliably leaves).
        replica.treat_tree_as_part_loaded();
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn peers_parse_and_refuse_mistakes() {
        let members = parse_peers("1=127.0.0.1:7001, 2=127.0.0.1:7002").unwrap();
        assert_eq!(members.len(), 2);
        assert!(parse_peers("1=127.0.0.1:7001,1=127.0.0.1:7002").is_err());
        assert!(parse_peers("0=127.0.0.1:7001").is_err());
        assert!(parse_peers("x").is_err());
    }

    #[test]
    fn each_shard_is_a_group_of_its_own_on_the_next_port() {
        let group = |peers: &str| ReplicaConfig {
            node_id: 1,
            group_id: 7,
            members: parse_peers(peers).unwrap(),
            secret: Vec::new(),
            tick: Duration::from_millis(100),
            election_ticks: 10,
            heartbeat_ticks: 2,
            join: false,
            client_addr: None,
        };
        let spaced = group("1=127.0.0.1:7000,2=127.0.0.1:7010,3=127.0.0.2:7001");
        let zero = shard_config(&spaced, 0, 4).unwrap();
        assert_eq!((zero.group_id, zero.members[&2].port()), (7, 7010));
        let three = shard_config(&spaced, 3, 4).unwrap();
        assert_eq!(three.group_id, 7 | 3 << 48);
        assert_eq!((three.members[&1].port(), three.members[&2].port(), three.members[&3].port()), (7003, 7013, 7004));
        // Node 2's shard 0 would take node 1's shard 10's port.
        let close = group("1=127.0.0.1:7000,2=127.0.0.1:7010");
        assert!(shard_config(&close, 0, 11).is_err());
        assert!(shard_config(&close, 0, 10).is_ok());
        assert!(shard_config(&group("1=127.0.0.1:65535"), 0, 2).is_err());
        assert!(shard_config(&ReplicaConfig { join: true, ..spaced.clone() }, 0, 2).is_err());
        // One shard: the group as given.
        assert_eq!(shard_config(&close, 0, 1).unwrap().members, close.members);
    }
}
