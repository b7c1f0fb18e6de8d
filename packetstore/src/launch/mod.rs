//! Assembly: a server built from one validated configuration.
//!
//! `serve(config)` is the key-value server whole: the configuration is
//! checked and resolved once (`config.rs`: the shard count, the I/O path,
//! pool sizes, the event loop's, the group's and the key-value server's
//! configuration), then one server (`single.rs`) or its shards
//! (`shards.rs`) open or create their pools (`pools.rs`), bind their
//! listeners (`listen.rs`), recover (`setup.rs`), join their replicated
//! groups (`group.rs`), publish for one-sided readers (`readers.rs`) and
//! serve until a signal or SHUTDOWN stops them (`shutdown.rs`). The
//! command line only parses its options into a `ServeConfig`; the WAL
//! server's command uses the same pools, listeners and shutdown.
//!
//! Invariant: nothing is bound, created, opened or replayed before the
//! whole configuration has been checked (`Plan::new`).

pub mod config;
pub mod group;
pub mod listen;
pub mod pools;
mod readers;
pub mod redis_conf;
pub mod setup;
pub mod shards;
pub mod shutdown;
mod single;
pub mod units;

pub use config::{GroupSettings, LoopSettings, Plan, ServeConfig, StorageSettings};

/// Runs the key-value server `config` describes until it is stopped.
pub fn serve(config: ServeConfig) -> anyhow::Result<()> {
    let plan = Plan::new(config)?;
    crate::io::cores::raise_open_file_limit();
    if plan.shards > 1 || plan.cluster_ports.is_some() {
        return shards::run(&plan);
    }
    single::run(&plan)
}
