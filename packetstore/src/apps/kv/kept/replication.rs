//! What a node of a replicated group keeps per peer connection
//! (`replication.rs` serves the links): which kind of link it is, and an
//! inbound link's parsed state (`PeerLink`).
//!
//! Invariant: a link's kind is decided when its connection is made
//! (`KvServer::peer_link`) and never changes; an inbound link's state is
//! given back (`Inbound::abandon`) when the link goes.

use crate::replica::wire::Inbound;

/// A connection to or from a peer of the group.
pub enum PeerLink {
    /// A peer's messages to us.
    Inbound(Box<Inbound>),
    /// Our messages to the peer.
    Outbound { peer: u64, hello_sent: bool },
    /// A client of ours relayed to the leader (`forward.rs`).
    Relay { id: usize, hello_sent: bool },
}
