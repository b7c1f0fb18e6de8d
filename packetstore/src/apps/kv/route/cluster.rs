//! The Redis Cluster view of a sharded server: what a cluster port tells a
//! client (node ids, endpoints, the slots it owns). The slots themselves
//! are `util/slots.rs`'s.
//!
//! Owns: the view.
//!
//! Invariant: a view's shard is one of its `shards`, and its ports are one
//! per shard.

use std::net::IpAddr;

pub use crate::util::slots::{key_slot, owner, slot_range, SLOTS};

/// What a sharded server's cluster ports tell clients: every shard is a
/// Redis Cluster master of its slot range, reached on its own port.
#[derive(Clone, Debug)]
pub struct ClusterView {
    /// This server's shard, and how many there are.
    pub shard: u16,
    pub shards: u16,
    /// The data set's id (shard 0's pool creation id): node ids derive
    /// from it, so they stay the same across restarts.
    pub set_id: u128,
    /// The address clients reach the cluster ports at, and each shard's
    /// port (index: shard).
    pub host: IpAddr,
    pub ports: Vec<u16>,
    /// The event loop's index of this shard's cluster listener.
    pub listener: usize,
}

impl ClusterView {
    /// Shard `shard`'s node id: 40 hex digits, as Redis's.
    pub fn node_id(&self, shard: u16) -> String {
        let mixed = self.set_id ^ (u128::from(shard) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
        format!("{mixed:032x}{:08x}", u32::from(shard))
    }

    /// `host:port` of shard `shard` (a MOVED reply's address).
    pub fn endpoint(&self, shard: u16) -> String {
        format!("{}:{}", self.host, self.ports[usize::from(shard)])
    }

    /// Whether a connection of `listener` has its commands for another
    /// shard's keys relayed there: the main Redis port's, with more than
    /// one shard (`shard_link.rs`).
    pub fn relays(&self, listener: usize) -> bool {
        self.shards > 1 && listener == crate::apps::kv::LISTENER_RESP
    }

    pub fn owns(&self, slot: u16) -> bool {
        owner(slot, self.shards) == self.shard
    }
}
