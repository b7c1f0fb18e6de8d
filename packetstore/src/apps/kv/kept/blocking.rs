//! What blocking pops keep (`cmd/blocking.rs` runs the commands and parks
//! and wakes the connections): a handler's request to park
//! (`BlockRequest`), a parked connection's command (`Blocked`), and the
//! server's list of parked connections by key (`Blocking`).
//!
//! A command whose keys several shards own (on a sharded server's main
//! port) is parked on its shard's keys here and on a flag that the other
//! shards set when one of its keys there is written (`elsewhere`).
//!
//! Invariant: a parked connection is listed under each of its keys, in
//! arrival order, and in `conns` (and `elsewhere`, if it waits on other
//! shards' keys), and leaves all of them together (`register`,
//! `unregister`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::io::app::ConnToken;
use crate::proto::resp::Args;
use crate::store::keyspace::KeyType;

/// What a handler asks for when its pop finds nothing: park the
/// connection on `keys` (watch ids) until `deadline` (None: forever).
pub(in crate::apps::kv) struct BlockRequest {
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) deadline: Option<Instant>,
    /// The type the pop takes from: a woken client whose keys hold none
    /// of it (deleted again, or replaced by another type) stays parked.
    pub(in crate::apps::kv) kind: KeyType,
    /// Set by another shard when one of the command's keys there is
    /// written (a command across shards); None: every key is this shard's.
    pub(in crate::apps::kv) elsewhere: Option<Arc<AtomicBool>>,
}

/// A parked connection's command.
pub(in crate::apps::kv) struct Blocked {
    pub(in crate::apps::kv) args: Args,
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) deadline: Option<Instant>,
    pub(in crate::apps::kv) kind: KeyType,
    /// When the command arrived (`shard_link::arrival_ns`; on another
    /// shard, for one that came on a private link): its place in line.
    pub(in crate::apps::kv) arrived_ns: u64,
    /// As `BlockRequest::elsewhere`.
    pub(in crate::apps::kv) elsewhere: Option<Arc<AtomicBool>>,
}

impl Blocked {
    /// Whether another shard wrote one of its keys there since it parked.
    pub(in crate::apps::kv) fn written_elsewhere(&self) -> bool {
        self.elsewhere.as_ref().is_some_and(|flag| flag.load(Ordering::Acquire))
    }
}

/// Parked connections by key, in arrival order, and their deadlines.
#[derive(Default)]
pub(in crate::apps::kv) struct Blocking {
    /// Per key: (connection id, its token, when its command arrived),
    /// ordered by arrival.
    by_key: std::collections::HashMap<Vec<u8>, VecDeque<(u64, ConnToken, u64)>>,
    pub(in crate::apps::kv) conns: std::collections::HashMap<u64, (ConnToken, Option<Instant>)>,
    /// Connections CLIENT UNBLOCK woke, and whether with an error (else
    /// as if their timeout had passed).
    pub(in crate::apps::kv) unblocked: std::collections::HashMap<u64, bool>,
    /// Parked connections that also wait on other shards' keys: the flag
    /// those shards set.
    elsewhere: std::collections::HashMap<u64, (ConnToken, Arc<AtomicBool>)>,
    /// The command running woke parked connections (`dispatch.rs` then
    /// lets the event loop serve them before the connection's next).
    pub(in crate::apps::kv) woken: bool,
    /// Parked connections were woken to take what a write left, and the
    /// event loop has not taken them yet (`App::wakes_now`).
    pub(in crate::apps::kv) wake_now: bool,
    /// Parked connections woken while a script was busy on another shard:
    /// woken again once none is (a closed one is skipped by its token).
    pub(in crate::apps::kv) after_busy: Vec<ConnToken>,
}

impl Blocking {
    /// The number of parked connections (INFO's blocked_clients).
    pub(in crate::apps::kv) fn count(&self) -> usize {
        self.conns.len()
    }

    pub(in crate::apps::kv) fn register(
        &mut self,
        (conn, token): (u64, ConnToken),
        keys: &[Vec<u8>],
        (deadline, elsewhere): (Option<Instant>, Option<&Arc<AtomicBool>>),
        arrived_ns: u64,
    ) {
        for key in keys {
            let queue = self.by_key.entry(key.clone()).or_default();
            // After every command that arrived before it (one relayed from
            // another shard may come after a later local one).
            let at = queue.iter().rposition(|&(_, _, arrived)| arrived <= arrived_ns).map_or(0, |at| at + 1);
            queue.insert(at, (conn, token, arrived_ns));
        }
        self.conns.insert(conn, (token, deadline));
        if let Some(flag) = elsewhere {
            self.elsewhere.insert(conn, (token, flag.clone()));
        }
    }

    pub(in crate::apps::kv) fn unregister(&mut self, conn: u64, keys: &[Vec<u8>]) {
        for key in keys {
            if let Some(queue) = self.by_key.get_mut(key) {
                queue.retain(|(id, _, _)| *id != conn);
                if queue.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
        self.conns.remove(&conn);
        self.unblocked.remove(&conn);
        self.elsewhere.remove(&conn);
    }

    /// The parked connections one of whose keys another shard wrote.
    pub(in crate::apps::kv) fn written_elsewhere(&self) -> Vec<ConnToken> {
        let written = self.elsewhere.values().filter(|(_, flag)| flag.load(Ordering::Acquire));
        written.map(|(token, _)| *token).collect()
    }

    /// The connections parked on `key`, in arrival order.
    pub(in crate::apps::kv) fn waiting_on(&self, key: &[u8]) -> impl Iterator<Item = ConnToken> + '_ {
        self.by_key.get(key).into_iter().flat_map(|queue| queue.iter().map(|(_, token, _)| *token))
    }

    pub(in crate::apps::kv) fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Every parked connection.
    pub(in crate::apps::kv) fn all(&self) -> Vec<ConnToken> {
        self.conns.values().map(|(token, _)| *token).collect()
    }

    /// The parked connections whose deadline has passed.
    pub(in crate::apps::kv) fn expired(&self, now: Instant) -> Vec<ConnToken> {
        self.conns.values().filter(|(_, deadline)| deadline.is_some_and(|d| d <= now)).map(|(t, _)| *t).collect()
    }
}
