//! One-sided reads (issue 20, docs/one-sided-reads.md): what a process on
//! the server's machine needs to answer reads from the pool itself,
//! without the server's CPU, and what the server publishes for it.
//!
//! Owns: the recent-writes table (`recent`), shared by the server that
//! writes it and the readers that map it read-only; the reader
//! (`client`), its walk of a mapped pool (`walk`, `mapped`) and its
//! fallback to the server (`fallback`); the routing of each key to its
//! shard's pool on a sharded server (`sharded`); the removal of tables
//! whose server is gone (`stale`).

pub mod client;
pub mod fallback;
pub mod mapped;
pub mod recent;
mod sharded;
pub mod stale;
pub mod walk;

pub use client::{PoolReader, ReaderError, ReaderOptions, ReaderStats};
pub use sharded::Reader;
