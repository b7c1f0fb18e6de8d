//! The key-value store: commands as groups of log records applied to the
//! tree, checkpoints that ride on the log's commits, recovery that replays
//! what the tree does not yet hold (`db`); and which program a pool
//! belongs to (`claim`), which reads the log and the tree.

mod claim;
pub mod db;
pub mod keyspace;

pub use claim::PoolKindExt;
pub use db::{Op, Store, StoreConfig, StoreError, StoreReport, StoreTicket};
