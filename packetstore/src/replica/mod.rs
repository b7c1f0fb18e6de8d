//! Replication: a group of packetstore nodes that behaves like one durable
//! server, on TiKV's raft-rs. The Raft log is the store's own log (every
//! tree change is an entry of put and delete records closed by an entry
//! record); values travel zero copy, from the pool on the sender to the
//! receive buffers they land in on the receiver, and are logged there.
//!
//! Files, lowest first: `entries.rs` (the Raft log raft-rs reads: entries
//! over the store's records; the encodings of entry and state records and
//! of `#raft`), `wire.rs` (the frames peers exchange, read by the RESP
//! parser), `node.rs` (the node: raft-rs driven once per loop turn; which
//! replies may leave).
//!
//! It stands on the store (and reads frames with `proto::resp`, queues
//! them with `io::outq`); the key-value server drives it.

pub mod entries;
pub mod node;
pub mod wire;

pub use node::{Replica, ReplicaConfig, ReplicaError};
