//! packetstore: PASTE (NSDI 2018) rebuilt in user space on io_uring, and
//! the durable servers built on it.
//!
//! TCP data is received by io_uring straight into buffers of a named,
//! persistent pool file; a mutating request is made durable where it
//! landed (cache-line flushes on persistent memory, or one fdatasync on an
//! ordinary file, once per event-loop batch), logged as a small record
//! naming its extents, and acknowledged. Reads are never flushed.
//!
//! The layers, lowest first (each uses only those above it in this list):
//!
//! - [`error`], [`limits`], [`util`]: error types, every bound in one
//!   place, metrics and a deterministic generator.
//! - [`pool`]: PASTE's Ppool. The pool file, its layout and kind,
//!   persistence domains and flush instructions, buffer reference counts,
//!   extents, and the crash simulator.
//! - [`log`]: PASTE's Plog. Records naming extents, in a ring in the
//!   pool's log region; commit, release, recovery.
//! - [`index`]: the persistent copy-on-write B+ tree and its compaction.
//! - [`store`]: the key-value store (commands as log groups, checkpoints,
//!   recovery) and which program a pool belongs to.
//! - [`io`]: the event loops (io_uring, epoll), sockets, and the `App`
//!   trait through which they serve an application. Stands on `pool` only.
//! - [`proto`]: wire formats, HTTP/1.1 heads and the Redis protocol.
//! - [`redis_spec`]: what Redis defines (its command table, its
//!   configuration parameters, HyperLogLog and geohash encodings), as data
//!   and pure functions.
//! - [`script`]: the Lua 5.1 runtime Redis scripts run in (its protected
//!   environment and libraries, replies to and from Lua, pausing a script
//!   that runs long); the key-value server gives it `redis.call`.
//! - [`apps`]: the WAL server and the key-value server, each an `App`.
//! - [`launch`]: assembly: a server's pools, listeners, shards, groups
//!   and readers, from one validated configuration (the CLI only parses).
//!
//! Every persistent structure is drawn byte by byte, with its persistence
//! order, in `docs/format.md`; `docs/architecture.md` walks the layers.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod error;
pub mod limits;
pub mod util;

pub mod pool;

pub mod log;

pub mod index;

pub mod store;

pub mod io;

pub mod proto;

pub mod redis_spec;

pub mod script;

pub mod replica;

pub mod reader;

pub mod apps;

pub mod launch;

pub use error::{BufferError, LogError, PoolError};
pub use log::{CommitSummary, CommitTicket, Log, LogUsage, RecordView, RecoveryReport};
pub use pool::{
    Buffers, Domain, DomainInfo, Extent, Geometry, LastRecovery, PageSync, PersistOptions, Pool, PoolKind, SimDevice,
    SimMode, SyncToken,
};
pub use store::PoolKindExt;
