//! Where a command runs, and the way there: the connection layer between
//! a client and the shard that owns its keys (or, on a follower, the
//! group's leader). `placement.rs` names the choices; `shard_link.rs`
//! relays a command to another shard and its reply back in order,
//! `http_relay.rs` an HTTP request; `span.rs` (with `span_info.rs` for
//! INFO) splits a command over every shard it names and merges the
//! replies; `exchange.rs` is the shards' shared mailboxes, eventfds and
//! transaction lock, `session.rs` a command across shards in progress,
//! `across_plans.rs` how one splits into single-shard commands,
//! `across.rs` runs it with those shards parked, durable as one, and
//! `parked.rs` runs scripts and SORT that reach parked shards' keys as
//! they go; `cluster.rs` is the Redis Cluster view for clients that route
//! themselves; `forward.rs` relays a follower's client to the leader.
//!
//! Owns: no keys and no values; only the way to them. Every command runs
//! on one shard's store through `dispatch.rs`, whichever way it came.

pub mod across;
pub(super) mod across_plans;
pub mod cluster;
pub(super) mod exchange;
pub(super) mod forward;
pub(super) mod http_relay;
pub(super) mod parked;
pub(super) mod placement;
pub(super) mod session;
pub(super) mod shard_link;
pub(super) mod span;
pub(super) mod span_info;
