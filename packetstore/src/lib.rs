//! packetstore: PASTE (NSDI 2018) rebuilt in user space on io_uring.
//!
//! This crate is the storage foundation: a persistent pool of fixed-size
//! buffers in one named file ([`pool`]), persistence domains that make its
//! bytes durable on persistent memory, emulated persistent memory or an
//! ordinary SSD file ([`persist`]), a crash simulator to prove it ([`sim`]),
//! buffer reference counts ([`buffers`]) and a recoverable log of records
//! that name extents of retained buffers ([`log`], [`record`]).
//!
//! The on-disk format is drawn byte by byte in `docs/format.md`.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod app;
pub mod buffers;
pub mod bufring;
pub mod compact;
pub mod cpu;
pub mod engine;
pub mod epoll;
pub mod error;
pub mod http;
pub mod indirect;
pub mod kind;
pub mod kv;
pub mod layout;
pub mod limits;
pub mod log;
pub mod metrics;
pub mod net;
pub mod node;
pub mod outq;
pub mod persist;
pub mod pool;
pub mod probe;
pub mod record;
pub mod resp;
pub mod rng;
pub mod sim;
pub mod slots;
pub mod store;
pub mod stream;
pub mod tree;
pub mod wal;

pub use buffers::Buffers;
pub use error::{BufferError, LogError, PoolError};
pub use kind::PoolKind;
pub use layout::Geometry;
pub use log::{CommitSummary, CommitTicket, Log, LogUsage, RecordView, RecoveryReport};
pub use persist::{Domain, DomainInfo, PageSync, PersistOptions, SyncToken};
pub use pool::{LastRecovery, Pool};
pub use record::Extent;
pub use sim::{SimDevice, SimMode};
