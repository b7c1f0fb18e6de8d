//! One-sided reads (issue 20, docs/one-sided-reads.md): what a process on
//! the server's machine needs to answer reads from the pool itself,
//! without the server's CPU, and what the server publishes for it.
//!
//! Owns: the recent-writes table (`recent`), shared by the server that
//! writes it and the readers that map it read-only.

pub mod mapped;
pub mod recent;
