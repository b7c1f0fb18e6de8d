//! What pub/sub keeps (`cmd/pubsub.rs` runs the commands): a connection's
//! subscriptions (`Subscriptions`), and the server's side (`PubSub`): the
//! subscribers of each channel, pattern and shard channel, and each
//! subscriber's mailbox of messages waiting to be served.
//!
//! Invariants: a connection is listed under a channel (or pattern) exactly
//! when the channel is in its own set; a mailbox holds at most
//! `MAILBOX_BYTES_MAX` bytes (past it the subscriber leaves every channel,
//! and is closed when served); a mailbox exists while its connection
//! subscribes to something or has mail, and both go when it goes.

use std::collections::{HashMap, HashSet};

use crate::io::app::ConnToken;
use crate::io::outq::OutQueue;

/// The most bytes of messages waiting for one subscriber (Redis's default
/// hard limit for pub/sub clients).
pub(in crate::apps::kv) const MAILBOX_BYTES_MAX: usize = 32 << 20;

/// The three namespaces a connection subscribes in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(in crate::apps::kv) enum Space {
    Channel,
    Pattern,
    Shard,
}

impl Space {
    pub(in crate::apps::kv) fn verbs(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Space::Channel => (b"subscribe", b"unsubscribe"),
            Space::Pattern => (b"psubscribe", b"punsubscribe"),
            Space::Shard => (b"ssubscribe", b"sunsubscribe"),
        }
    }
}

/// A connection's subscriptions.
#[derive(Default)]
pub(in crate::apps::kv) struct Subscriptions {
    channels: HashSet<Vec<u8>>,
    patterns: HashSet<Vec<u8>>,
    shards: HashSet<Vec<u8>>,
}

impl Subscriptions {
    pub(in crate::apps::kv) fn set(&mut self, space: Space) -> &mut HashSet<Vec<u8>> {
        match space {
            Space::Channel => &mut self.channels,
            Space::Pattern => &mut self.patterns,
            Space::Shard => &mut self.shards,
        }
    }

    /// Channels and patterns (Redis's count in (un)subscribe replies; shard
    /// channels count on their own).
    pub(in crate::apps::kv) fn count(&self, space: Space) -> usize {
        match space {
            Space::Shard => self.shards.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    pub(in crate::apps::kv) fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shards.is_empty()
    }

    /// Channels, patterns and shard channels (CLIENT LIST's sub, psub, ssub).
    pub(in crate::apps::kv) fn counts(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shards.len())
    }
}

/// Messages waiting for one subscriber, encoded for its protocol.
pub(in crate::apps::kv) struct Mailbox {
    pub(in crate::apps::kv) token: ConnToken,
    /// Its protocol (RESP3 frames messages as pushes).
    pub(in crate::apps::kv) resp3: bool,
    pub(in crate::apps::kv) bytes: Vec<u8>,
    /// Over `MAILBOX_BYTES_MAX`: the connection is closed when served.
    pub(in crate::apps::kv) overflowed: bool,
}

/// The server's side of pub/sub.
#[derive(Default)]
pub(in crate::apps::kv) struct PubSub {
    /// Subscribers (client ids) by channel, pattern and shard channel.
    channels: HashMap<Vec<u8>, Vec<u64>>,
    pub(in crate::apps::kv) patterns: HashMap<Vec<u8>, Vec<u64>>,
    shards: HashMap<Vec<u8>, Vec<u64>>,
    pub(in crate::apps::kv) mailboxes: HashMap<u64, Mailbox>,
    /// Connections with new mail, for the event loop.
    pub(in crate::apps::kv) wake: Vec<ConnToken>,
    /// Subscribers disconnected for an overflowing mailbox.
    pub(in crate::apps::kv) overflowed: u64,
}

impl PubSub {
    /// Channels, patterns and shard channels with a subscriber (INFO).
    pub(in crate::apps::kv) fn counts(&self) -> (usize, usize, usize) {
        (self.channels.len(), self.patterns.len(), self.shards.len())
    }

    pub(in crate::apps::kv) fn map(&mut self, space: Space) -> &mut HashMap<Vec<u8>, Vec<u64>> {
        match space {
            Space::Channel => &mut self.channels,
            Space::Pattern => &mut self.patterns,
            Space::Shard => &mut self.shards,
        }
    }

    /// Puts an encoded message in a subscriber's mailbox and asks for it
    /// to be served.
    pub(in crate::apps::kv) fn post(&mut self, client: u64, message: &[u8]) {
        let Some(mailbox) = self.mailboxes.get_mut(&client) else { return };
        if mailbox.overflowed {
            return;
        }
        if mailbox.bytes.len() + message.len() > MAILBOX_BYTES_MAX {
            // Cut off: it leaves every channel now (it may not be served
            // for a while: the loop pauses a client that does not read),
            // and is closed when it is.
            mailbox.overflowed = true;
            mailbox.bytes = Vec::new();
            self.overflowed += 1;
            for map in [&mut self.channels, &mut self.patterns, &mut self.shards] {
                map.retain(|_, ids| {
                    ids.retain(|&id| id != client);
                    !ids.is_empty()
                });
            }
        } else {
            mailbox.bytes.extend_from_slice(message);
        }
        if !self.wake.contains(&mailbox.token) {
            self.wake.push(mailbox.token);
        }
    }

    /// Puts an encoded message for a connection that may not subscribe
    /// (an invalidation) in its mailbox, made if it has none.
    pub(in crate::apps::kv) fn post_push(&mut self, client: u64, token: ConnToken, message: &[u8]) {
        self.mailboxes.entry(client).or_insert(Mailbox { token, resp3: true, bytes: Vec::new(), overflowed: false });
        self.post(client, message);
    }

    /// Moves connection `id`'s mail into its replies, as far as they take
    /// (`subscribes`: whether it subscribes to anything; if not, its
    /// emptied mailbox goes); true if the connection must be closed (its
    /// mailbox overflowed).
    pub(in crate::apps::kv) fn deliver(&mut self, id: u64, subscribes: bool, out: &mut OutQueue) -> bool {
        // No mail anywhere: no lookup.
        if self.mailboxes.is_empty() {
            return false;
        }
        let Some(mailbox) = self.mailboxes.get_mut(&id) else { return false };
        if mailbox.overflowed {
            return true;
        }
        if !mailbox.bytes.is_empty() && !out.is_full() {
            out.push(&std::mem::take(&mut mailbox.bytes));
        }
        if mailbox.bytes.is_empty() && !subscribes {
            self.mailboxes.remove(&id);
        }
        false
    }

    /// Connection `id` is gone, with its `subscriptions` (taken from it):
    /// it leaves every channel.
    pub(in crate::apps::kv) fn forget(&mut self, id: u64, subscriptions: Option<Subscriptions>) {
        let Some(mut subs) = subscriptions else {
            self.mailboxes.remove(&id);
            return;
        };
        for space in [Space::Channel, Space::Pattern, Space::Shard] {
            for name in std::mem::take(subs.set(space)) {
                self.remove(space, &name, id);
            }
        }
        self.mailboxes.remove(&id);
    }

    pub(in crate::apps::kv) fn remove(&mut self, space: Space, name: &[u8], client: u64) {
        let map = self.map(space);
        if let Some(list) = map.get_mut(name) {
            list.retain(|&id| id != client);
            if list.is_empty() {
                map.remove(name);
            }
        }
    }
}
