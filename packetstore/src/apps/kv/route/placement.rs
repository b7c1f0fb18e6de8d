//! Where a command runs on a sharded server (`KvServer::placement`, in
//! `cmd/cluster.rs`, decides; `dispatch.rs` carries it out): here, on
//! another shard, in parts, across shards, or refused. A type of its own,
//! so that what decides and what carries out import it, not each other.
//!
//! Owns: the decision's shape only.
//!
//! Invariant: every variant but `Here` answers the command itself (a
//! reply, a relay, or a refusal); `Parked` runs it here after parking.

/// Where a command runs (`KvServer::placement`).
pub(in crate::apps::kv) enum Placement {
    Here,
    Refused(String),
    Relay(u16),
    /// A blocking command, on the client's private link to the shard
    /// (`ShardLinks::send_private`).
    Private(u16),
    /// In parts, one per shard, merged (`span.rs`).
    Span(crate::apps::kv::span::Plan),
    /// A script or function whose declared keys these shards own: run
    /// here with them parked (`parked.rs`).
    Parked(std::collections::BTreeSet<u16>),
    /// A running script's call for keys of a shard parked for it.
    InSession(u16),
    /// ... for keys of several shards parked for it: across them.
    InSessionAcross(crate::apps::kv::across_plans::Across, Vec<Vec<u8>>, Vec<(usize, u16)>),
    /// A running script met another shard's key with nothing written: it
    /// is stopped, and runs again across every shard.
    RestartAcross,
    /// A running script that wrote met keys of shards not parked for it:
    /// they are parked now (its session begins, or grows), and the call
    /// runs in the session (`parked.rs`).
    Grow(std::collections::BTreeSet<u16>),
    /// Atomic across shards (`across.rs`): how, its arguments and keys.
    Across(crate::apps::kv::across_plans::Across, Vec<Vec<u8>>, Vec<(usize, u16)>),
}
