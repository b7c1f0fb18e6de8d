//! A command across shards in progress on its coordinator (`across.rs`):
//! the shards parked for it, which of them wrote, and the database and
//! protocol its parts run in. A type of its own, knowing only the exchange,
//! so that the server's state can hold one (a script's, a SORT's:
//! `parked.rs`) without importing the protocol that runs it.
//!
//! Owns: a session's bookkeeping, and the process's stop when a command
//! across shards cannot end whole.
//!
//! Invariant: a session is dropped only after `across_end` marked it done;
//! dropped otherwise (a bug unwinding), it stops the process before any
//! parked shard serves again.

use std::collections::BTreeSet;

use crate::apps::kv::exchange::Exchange;

/// A coordinator's command in progress: the shards parked for it.
pub(in crate::apps::kv) struct Session {
    pub(in crate::apps::kv) exchange: std::sync::Arc<Exchange>,
    pub(in crate::apps::kv) me: u16,
    pub(in crate::apps::kv) parked: Vec<u16>,
    /// Shards whose part wrote (this one included).
    pub(in crate::apps::kv) wrote: BTreeSet<u16>,
    /// Parked shards that answered with writes of theirs not yet durable.
    pub(in crate::apps::kv) pending: BTreeSet<u16>,
    pub(in crate::apps::kv) db: u8,
    pub(in crate::apps::kv) resp3: bool,
    /// The client whose command it is (its parts run for that id: a
    /// tracking client's keys are tracked, NOLOOP knows its writes).
    pub(in crate::apps::kv) client: u64,
    /// Ended whole (`across_end`): dropping it is then no bug.
    pub(in crate::apps::kv) done: bool,
}

impl Session {
    /// A session of coordinator `me` with nothing parked yet, for a client
    /// (its database, protocol and id).
    pub(in crate::apps::kv) fn new(
        exchange: std::sync::Arc<Exchange>,
        me: u16,
        (db, resp3, client): (u8, bool, u64),
    ) -> Session {
        Session {
            exchange,
            me,
            parked: Vec::new(),
            wrote: BTreeSet::new(),
            pending: BTreeSet::new(),
            db,
            resp3,
            client,
            done: false,
        }
    }

    /// Whether `shard` is parked for this session.
    pub(in crate::apps::kv) fn has_parked(&self, shard: u16) -> bool {
        self.parked.contains(&shard)
    }

    /// The coordinator's own part wrote (a script's local calls).
    pub(in crate::apps::kv) fn wrote_here(&mut self) {
        self.wrote.insert(self.me);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.done {
            // Only a bug unwinds through here. Ending the parts would make
            // half a transaction durable; releasing none would hang every
            // shard. The process stops instead: the parts' groups have no
            // end record, so recovery drops them whole.
            stop_half_way("a command across shards unwound half way");
        }
    }
}

/// A command across shards cannot end whole (a bug, a shard gone or
/// unable to make its part durable): stops the process at once, before any
/// shard serves again, so that recovery decides the transaction with
/// nothing after it in any writer's log (`store/db/txn.rs`).
pub(in crate::apps::kv) fn stop_half_way(why: &str) -> ! {
    tracing::error!("{why}: stopping the process; recovery keeps the transaction whole or drops it");
    if let Some(hook) = BEFORE_STOPPING_HALF_WAY.get() {
        hook();
    }
    std::process::abort()
}

/// What runs just before the process stops half way: a sharded server on
/// the crash simulator (a test switch) writes every shard's crash image
/// there, as the power failing at that moment would leave the pools.
static BEFORE_STOPPING_HALF_WAY: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>> = std::sync::OnceLock::new();

/// Sets the hook `stop_half_way` runs (once per process; a second is
/// ignored).
pub fn before_stopping_half_way(hook: Box<dyn Fn() + Send + Sync>) {
    let _ = BEFORE_STOPPING_HALF_WAY.set(hook);
}
