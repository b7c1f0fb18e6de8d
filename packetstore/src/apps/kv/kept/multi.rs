//! What transactions and WATCH keep (`cmd/multi.rs` runs the commands):
//! a connection's queued transaction (`Multi`) and watched keys
//! (`Watching`), and an entry of the server's map of watched keys
//! (`Watcher`).
//!
//! Invariants: a queued command holds its buffer references until
//! `Multi::clear` gives them back; a watcher of another shard's connection
//! (`REMOTE_CONN`) holds only a weak handle on that connection's flag, and
//! is spent once the flag is set or gone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::pool::buffers::Buffers;
use crate::proto::resp::Args;

/// A transaction being queued.
#[derive(Default)]
pub(in crate::apps::kv) struct Multi {
    pub(in crate::apps::kv) queued: Vec<Args>,
    /// Argument bytes queued.
    pub(in crate::apps::kv) bytes: u64,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub(in crate::apps::kv) aborted: bool,
}

impl Multi {
    /// Gives back every queued command's references.
    pub(in crate::apps::kv) fn clear(&mut self, buffers: &mut Buffers) {
        for mut args in self.queued.drain(..) {
            args.clear(buffers);
        }
        self.bytes = 0;
    }
}

/// One connection's watched keys (each as `state::watch_id`: the
/// logical database, then the key).
pub(in crate::apps::kv) struct Watching {
    /// Set when a watched key is written (by the server's map).
    pub(in crate::apps::kv) dirty: Arc<AtomicBool>,
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
}

/// A connection watching a key (an entry of the server's map).
pub(in crate::apps::kv) struct Watcher {
    pub(in crate::apps::kv) conn: u64,
    pub(in crate::apps::kv) dirty: Flag,
    /// The key had expired when WATCH was called: its deletion is no change.
    pub(in crate::apps::kv) expired: bool,
}

/// The `conn` of a watcher registered for another shard's connection
/// (`across.rs`): never one of this shard's ids.
pub(in crate::apps::kv) const REMOTE_CONN: u64 = u64::MAX;

/// Where a watcher's write is told: its connection's flag, or, for
/// another shard's connection, a weak handle on it (dead once that
/// connection stopped watching: the watcher is then dropped here).
pub(in crate::apps::kv) enum Flag {
    Own(Arc<AtomicBool>),
    Remote(std::sync::Weak<AtomicBool>),
    /// Another shard's blocked connection (a blocking pop across shards):
    /// as `Remote`, and that shard (`u16`) is woken to run it again.
    Wake(std::sync::Weak<AtomicBool>, u16),
}

impl Watcher {
    /// Marks its connection's flag; the shard to wake for it, if any
    /// (`Flag::Wake`, not marked before).
    pub(in crate::apps::kv) fn mark(&self) -> Option<u16> {
        match &self.dirty {
            Flag::Own(flag) => flag.store(true, Ordering::Relaxed),
            Flag::Remote(flag) => {
                if let Some(flag) = flag.upgrade() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            Flag::Wake(flag, home) => {
                let flag = flag.upgrade()?;
                return (!flag.swap(true, Ordering::AcqRel)).then_some(*home);
            }
        }
        None
    }

    /// Another shard's connection's watcher that has done its work (its
    /// key was written) or whose connection stopped watching.
    pub(in crate::apps::kv) fn is_spent(&self) -> bool {
        match &self.dirty {
            Flag::Own(_) => false,
            Flag::Remote(flag) | Flag::Wake(flag, _) => flag.upgrade().is_none_or(|flag| flag.load(Ordering::Relaxed)),
        }
    }
}
