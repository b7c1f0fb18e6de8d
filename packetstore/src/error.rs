//! Error types: one enum per operation family, each wrapping the I/O error
//! that caused it. Messages say what was wrong and, where it helps, what to do.

use std::path::PathBuf;

use crate::pool::kind::PoolKind;

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
    /// The pool is of another kind than the opener's (`Pool::open_as`).
    /// Nothing was written.
    #[error(
        "{path} is a {found} pool (made by {}{}), not the {wanted} pool {} needs; it was left unchanged",
        found.made_by(),
        evidence.as_ref().map(|why| format!("; its header records no kind, its contents say so: {why}")).unwrap_or_default(),
        wanted.made_by()
    )]
    WrongKind { path: PathBuf, found: PoolKind, wanted: PoolKind, evidence: Option<String> },
    /// An old pool that records no kind, whose contents do not tell it
    /// either (damaged, or of two kinds). Nothing was written.
    #[error(
        "{path} is a version-{version} pool, which does not record what made it, and its contents do not tell: \
         {reason}. It was left unchanged; `packetstore inspect --verify {}` shows what it holds",
        path.display()
    )]
    KindUndecided { path: PathBuf, version: u32, reason: String },
    #[error(
        "{path}: pool kind {found} is not one this build knows (1 key-value, 2 WAL, 3 log, 4 tree, 5 write cache, 6 switch): \
         made by a later build? It was left unchanged"
    )]
    UnknownKind { path: PathBuf, found: u32 },
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
