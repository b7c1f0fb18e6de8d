//! PASTE's Plog: a ring of small records in the pool's log region, each
//! naming extents of retained buffers, made durable by one fence (or one
//! fdatasync) per batch, and recovered after a crash. `record` is the
//! encoding of one record; `ring` the log that appends, commits, releases
//! and recovers them.

pub mod record;
pub mod ring;

pub use ring::{data_crc, CommitSummary, CommitTicket, Log, LogHead, LogUsage, RecordView, RecoveryReport};
