//! The key-value server (`packetstore serve`): the [`App`] that speaks
//! HTTP (PASTE's pKVS: `PUT`/`GET`/`HEAD`/`DELETE /kv/<key>`) on one
//! listener and the Redis protocol on the other, over one [`Store`].
//!
//! Owns: per-connection protocol state, command semantics (Redis's, for the
//! commands listed in `COMMANDS`), and replies. A write is applied to the
//! store (logged, then indexed) while its reply is queued; the I/O loop
//! sends the reply only after the commit that makes the write durable.
//! Reads are answered from the tree's working version, never flushed; a
//! value of at least `zero_copy_min` bytes is sent straight from the pool
//! buffers it was received into (the reply holds references on them until
//! sent), smaller ones are copied into the reply.
//!
//! Invariants: every buffer reference a request holds is given back when
//! it ends (`Args::clear`, `abandon`); a write refused for lack of space
//! leaves nothing behind (`Store::apply` is all or nothing).
//!
//! The files, lowest first (each imports only those before it):
//! `kept/` (what the command families and links keep between commands,
//! the types of the state's fields; of the library's layers above `store`
//! it imports only the Lua runtime, `script/`), `state.rs` (the server's
//! state, configuration and counters; a command's table entry and what a
//! handler works with), `ops.rs` (what handlers share), `guard.rs` (a
//! request's panic caught), `protected.rs` (Redis's protected mode),
//! `report.rs` (INFO, /metrics), `cmd/` (one file per command family,
//! each with its table; Redis's own definitions, such as the command
//! table, are `redis_spec/`), `integrity.rs` (value checksums:
//! corrupt-value replies, the scrubber's ticks, their INFO and metrics),
//! `dispatch.rs` (the table of families; arity, auth, unknown commands),
//! `rest.rs` (HTTP), and `server.rs` (the `App` impl the event loop
//! calls). Beside them, `route/`: where a command runs and the way there
//! (relayed to its shard or to the group's leader, split over shards, or
//! run across them durable as one; the Redis Cluster view).

mod cmd;
mod dispatch;
mod guard;
mod integrity;
mod kept;
mod ops;
mod protected;
mod replication;
mod report;
mod rest;
mod route;
mod server;
mod state;

pub use route::{across, cluster};
use route::{across_plans, exchange, forward, http_relay, parked, placement, session, shard_link, span, span_info};

pub use cmd::config::{check_at_start, AtStart, CLIENT_OUTPUT_BUFFER_LIMIT_DEFAULT};
pub use integrity::SCRUB_RATE_DEFAULT_BYTES;
pub use replication::LISTENER_PEER;
pub use rest::percent_decode;
pub use session::before_stopping_half_way;
pub use shard_link::{link_pair, LISTENER_LINK_IN, LISTENER_LINK_OUT, PRIVATE_LINKS_MAX};
pub use state::{
    KvConfig, KvConn, KvServer, KvSettings, KvStats, PanicPoint, KINDS, LISTENER_HTTP, LISTENER_RESP, PROTOCOLS,
    RESULTS,
};
