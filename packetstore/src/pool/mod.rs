//! PASTE's Ppool: one named file of fixed-size buffers and their
//! durability. The file and its layout, the persistence domains that make
//! its bytes durable (cache-line flushes on persistent memory, emulated or
//! real; fdatasync on an ordinary file), the flush instructions, buffer
//! reference counts, the extents that name bytes in buffers, the pool's
//! kind, and the crash simulator that proves all of it.
//!
//! The lowest layer of storage: it knows nothing of the log, the tree or
//! the network (the log anchor's initial encoding is in `layout`, because
//! the pool writes it when it formats a file).

pub(crate) mod buffers;
pub(crate) mod extent;
pub mod file;
mod flush;
pub mod kind;
pub mod layout;
pub(crate) mod persist;
pub(crate) mod sim;
mod staging;

pub use buffers::{Buffers, StagingScope};
pub use extent::Extent;
pub use file::{Infer, LastRecovery, Pool};
pub use kind::{Evidence, PoolKind};
pub use layout::Geometry;
pub use persist::{Domain, DomainInfo, PageSync, PersistOptions, PersistStats, SyncToken};
pub use sim::{SimDevice, SimMode};
