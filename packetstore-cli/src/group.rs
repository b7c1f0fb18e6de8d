//! `packetstore serve --node-id N --peers ...`: the options that make the
//! server a node of a replicated group, and the group's configuration.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use packetstore::replica::ReplicaConfig;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct GroupArgs {
    /// Run as node N (1, 2, ...) of a replicated group (Raft): a write is
    /// acknowledged once durable on a majority of the group's pools.
    #[arg(long)]
    pub node_id: Option<u64>,
    /// Every member of the group, this node included, with its peer
    /// address: "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003". This
    /// node listens for its peers on its own entry's address.
    #[arg(long)]
    pub peers: Option<String>,
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
    #[arg(long, default_value = "100ms")]
    pub raft_tick: String,
    /// Join an existing group instead of starting one: the node waits
    /// until the leader adds it (`GROUP ADD N HOST:PORT` on any member),
    /// then catches up from a snapshot. --peers names the members and
    /// this node.
    #[arg(long)]
    pub join: bool,
}

impl GroupArgs {
    /// The group's configuration, if this server is a node of one.
    pub fn config(&self) -> anyhow::Result<Option<ReplicaConfig>> {
        let Some(node_id) = self.node_id else {
            if self.peers.is_some() {
                bail!("--peers needs --node-id");
            }
            return Ok(None);
        };
        let peers = self.peers.as_deref().context("--node-id needs --peers (every member, this node included)")?;
        let members = parse_peers(peers)?;
        if !members.contains_key(&node_id) {
            bail!("--peers does not name node {node_id} (this node's own peer address)");
        }
        Ok(Some(ReplicaConfig {
            node_id,
            group_id: self.group_id,
            members,
            secret: self.peer_secret.clone().unwrap_or_default().into_bytes(),
            tick: crate::options::parse_duration(&self.raft_tick)?.max(Duration::from_millis(10)),
            election_ticks: 10,
            heartbeat_ticks: 2,
            join: self.join,
            client_addr: None,
        }))
    }
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
        let addr = crate::listen::parse_address(addr.trim()).map_err(|e| anyhow::anyhow!("--peers: {e}"))?;
        if members.insert(id, addr).is_some() {
            bail!("--peers names node {id} twice");
        }
    }
    if members.is_empty() {
        bail!("--peers is empty");
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_parse_and_refuse_mistakes() {
        let members = parse_peers("1=127.0.0.1:7001, 2=127.0.0.1:7002").unwrap();
        assert_eq!(members.len(), 2);
        assert!(parse_peers("1=127.0.0.1:7001,1=127.0.0.1:7002").is_err());
        assert!(parse_peers("0=127.0.0.1:7001").is_err());
        assert!(parse_peers("x").is_err());
    }
}
