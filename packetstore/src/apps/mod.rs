//! The applications on the engine: the WAL server (`wal`, PASTE's
//! write-ahead log over HTTP) and the key-value server (`kv`, HTTP and the
//! Redis protocol over one store). Each implements `io::App`. Beside them,
//! the write cache (`cache`, for unmodified programs) and the packet-logging
//! switch (`switch`, over AF_XDP ports).

pub mod cache;
pub mod kv;
pub mod switch;
pub mod wal;
