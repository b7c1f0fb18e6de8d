//! packetstore-preload: NVCACHE (the Dulong thesis, chapter 3) for
//! unmodified, dynamically linked programs. Loaded with LD_PRELOAD, it
//! makes each write to a file under `PACKETSTORE_CACHE_PATHS` durable in
//! the log of the pool `PACKETSTORE_CACHE_POOL` before it returns, so
//! fsync and fdatasync on those files return at once; a background thread
//! syncs the files in batches and frees the log. docs/write-cache.md.
//!
//! Owns: the interposed C functions (`interpose`), the C library's own
//! (`real`), the process's cache state (`state`), the directory syncs
//! the log answers (`dirs`) and the test switch that kills the process
//! inside a call (`kill`); the cache itself is
//! `packetstore::apps::cache`.
//!
//! Invariant: everything that is not a cached file, and every call made
//! from inside this library, goes to the C library unchanged.

mod dirs;
mod interpose;
mod kill;
mod real;
mod state;
