//! packetstore-reader: one-sided reads of a running `packetstore serve
//! --one-sided-reads` from another process on the same machine
//! (docs/one-sided-reads.md). The Rust API is `Reader` (re-exported from
//! `packetstore::reader`); `ffi` is the C ABI of the cdylib
//! (`include/packetstore_reader.h`), which the Python module
//! (`python/packetstore_reader.py`, cffi) loads.
//!
//! Owns: the C ABI's handles and their error texts.
//!
//! Invariant: no panic crosses the C boundary (each entry point catches
//! it and returns an error); a value handed to C stays valid until the
//! next call on the same handle, which owns it.

pub mod ffi;

pub use packetstore::reader::{Reader, ReaderError, ReaderOptions, ReaderStats};
