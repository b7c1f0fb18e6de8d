//! Error types: one enum per operation family, each wrapping the I/O error
//! that caused it. Messages say what was wrong and, where it helps, what to do.

use std::path::PathBuf;

/// Errors from creating or opening a pool.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: already exists; open it, or remove it to create a new pool")]
    Exists { path: PathBuf },
    #[error("{path}: locked by another opener{}", holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    Locked { path: PathBuf, holder: Option<i32> },
    #[error("{path}: not a packetstore pool (bad magic)")]
    BadMagic { path: PathBuf },
    #[error("{path}: pool format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion { path: PathBuf, found: u32, supported: u32 },
    #[error("{path}: pool header checksum mismatch (stored {stored:#010x}, computed {computed:#010x}); the header is corrupt")]
    BadChecksum { path: PathBuf, stored: u32, computed: u32 },
    #[error("{path}: file is {actual} bytes but its header says {expected}: truncated or extended")]
    SizeMismatch { path: PathBuf, expected: u64, actual: u64 },
    #[error("{path}: invalid geometry: {reason}")]
    BadGeometry { path: PathBuf, reason: String },
    #[error("{path}: geometry mismatch: the pool has {found}, the caller asked for {wanted}")]
    GeometryMismatch { path: PathBuf, found: String, wanted: String },
    #[error("{path}: persistence domain {domain} is not available here: {reason}")]
    DomainUnavailable { path: PathBuf, domain: &'static str, reason: String },
}

/// Errors from the log: appends, releases, commits and recovery.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("log full: {needed} bytes needed, {free} free; commit and release records, or compact")]
    LogFull { needed: u64, free: u64 },
    #[error("batch full: {size} bytes appended since the last commit (limit {limit}); commit first")]
    BatchFull { size: u64, limit: u64 },
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    #[error("no live record at lsn {0}")]
    NoSuchRecord(u64),
    #[error("buffer {buffer} has too many references")]
    TooManyRefs { buffer: u32 },
    #[error("commit failed, the log no longer accepts writes: {0}")]
    CommitFailed(std::io::Error),
    #[error("the log refused a write after an earlier failed commit (nothing after it was acknowledged)")]
    Poisoned,
    #[error("the log was opened read-only (inspect)")]
    ReadOnly,
    #[error("log corrupt at lsn {lsn}: {reason}")]
    Corrupt { lsn: u64, reason: String },
}

/// Errors from the buffer allocator.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BufferError {
    #[error("pool full: all {count} buffers are referenced")]
    PoolFull { count: u32 },
    #[error("buffer {0} is out of range")]
    OutOfRange(u32),
    #[error("buffer {0} is not referenced")]
    NotReferenced(u32),
    #[error("buffer {0} has too many references")]
    TooManyRefs(u32),
}
