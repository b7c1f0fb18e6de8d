//! The applications on the engine: the WAL server (`wal`, PASTE's
//! write-ahead log over HTTP) and the key-value server (`kv`, HTTP and the
//! Redis protocol over one store). Each implements `io::App`.

pub mod cache;
pub mod kv;
pub mod wal;
