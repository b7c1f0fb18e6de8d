//! What the server keeps between commands for its command families and
//! links, one file a family: the types `KvServer` and `KvConn`
//! (`state.rs`) hold as fields, with the methods that need nothing but
//! their own data. The commands that read and change them stand above
//! `state.rs`, in `cmd/` (and `forward.rs`, `replication.rs`, `report.rs`),
//! as `impl KvServer` blocks; each file here is named as the file that
//! runs it.
//!
//! Invariant: nothing here imports `state.rs` or a command handler, so
//! the server's state stands above these types and below the handlers that
//! use it: no import runs in a circle.

pub(super) mod blocking;
pub(super) mod client;
pub(super) mod forward;
pub(super) mod functions;
pub(super) mod latency;
pub(super) mod latency_histogram;
pub(super) mod monitor;
pub(super) mod multi;
pub(super) mod pubsub;
pub(super) mod replication;
pub(super) mod report;
pub(super) mod scripting;
pub(super) mod slowlog;
pub(super) mod tracking;
