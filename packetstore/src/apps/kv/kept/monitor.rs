//! What MONITOR keeps (`cmd/monitor.rs` runs the command and feeds the
//! monitors): the connections in MONITOR mode (`Monitors`).
//!
//! Invariant: a connection is listed from MONITOR until it goes (or
//! RESET), once; the list is empty unless someone monitors.

use crate::io::app::ConnToken;

/// The connections in MONITOR mode.
#[derive(Default)]
pub(in crate::apps::kv) struct Monitors {
    pub(in crate::apps::kv) connections: Vec<(u64, ConnToken)>,
}

impl Monitors {
    /// The connection is gone (or RESET): it no longer monitors.
    pub(in crate::apps::kv) fn forget(&mut self, id: u64) {
        self.connections.retain(|&(monitor, _)| monitor != id);
    }

    pub(in crate::apps::kv) fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }

    /// Whether the connection monitors (CLIENT LIST's flag O).
    pub(in crate::apps::kv) fn contains(&self, id: u64) -> bool {
        self.connections.iter().any(|&(monitor, _)| monitor == id)
    }
}
