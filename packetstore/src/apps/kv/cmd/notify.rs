//! Keyspace notifications (Redis 7.0's notify.c): the classes of
//! `notify-keyspace-events` (K E g $ l s h z x e t m d n A), their parsing
//! and printing as CONFIG shows them, and `KvServer::notify`, which
//! publishes `__keyspace@<db>__:<key>` (message: the event) and
//! `__keyevent@<db>__:<event>` (message: the key) through pub/sub.
//!
//! Invariant: with notifications off (the default) a write pays one test of
//! a flag word and nothing else; a notification is published after the
//! write it describes was applied, in the order Redis fires them.

use crate::apps::kv::state::{Ctx, KvServer};

/// K: `__keyspace@<db>__:` channels.
pub(in crate::apps::kv) const KEYSPACE: u32 = 1 << 0;
/// E: `__keyevent@<db>__:` channels.
pub(in crate::apps::kv) const KEYEVENT: u32 = 1 << 1;
/// g: generic commands (DEL, EXPIRE, RENAME, ...).
pub(in crate::apps::kv) const GENERIC: u32 = 1 << 2;
/// $: string commands.
pub(in crate::apps::kv) const STRING: u32 = 1 << 3;
/// l: list commands.
pub(in crate::apps::kv) const LIST: u32 = 1 << 4;
/// s: set commands.
pub(in crate::apps::kv) const SET: u32 = 1 << 5;
/// h: hash commands.
pub(in crate::apps::kv) const HASH: u32 = 1 << 6;
/// z: sorted set commands.
pub(in crate::apps::kv) const ZSET: u32 = 1 << 7;
/// x: a key expired (deleted for its time to live).
pub(in crate::apps::kv) const EXPIRED: u32 = 1 << 8;
/// e: a key evicted for maxmemory.
pub(in crate::apps::kv) const EVICTED: u32 = 1 << 9;
/// t: stream commands.
pub(in crate::apps::kv) const STREAM: u32 = 1 << 10;
/// m: key misses (not part of A).
pub(in crate::apps::kv) const KEY_MISS: u32 = 1 << 11;
/// d: module key types.
pub(in crate::apps::kv) const MODULE: u32 = 1 << 13;
/// n: a key was created (not part of A).
pub(in crate::apps::kv) const NEW: u32 = 1 << 14;
/// A: every class but m and n.
pub(in crate::apps::kv) const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The classes by letter, in the order Redis prints them.
const CLASSES: [(char, u32); 10] = [
    ('g', GENERIC),
    ('$', STRING),
    ('l', LIST),
    ('s', SET),
    ('h', HASH),
    ('z', ZSET),
    ('x', EXPIRED),
    ('e', EVICTED),
    ('t', STREAM),
    ('d', MODULE),
];

/// CONFIG SET's error for a letter that names no class (Redis's words).
pub(in crate::apps::kv) const BAD_CLASS: &str = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";

/// Redis's `keyspaceEventsStringToFlags`; None if a letter is unknown.
pub(in crate::apps::kv) fn parse_flags(text: &str) -> Option<u32> {
    let mut flags = 0;
    for c in text.chars() {
        flags |= match c {
            'A' => ALL,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => KEY_MISS,
            'n' => NEW,
            _ => CLASSES.iter().find(|(letter, _)| *letter == c)?.1,
        };
    }
    Some(flags)
}

/// Redis's `keyspaceEventsFlagsToString`: how CONFIG GET shows them.
pub(in crate::apps::kv) fn flags_text(flags: u32) -> String {
    let mut text = String::new();
    if flags & ALL == ALL {
        text.push('A');
    } else {
        text.extend(CLASSES.iter().filter(|(_, class)| flags & class != 0).map(|(letter, _)| letter));
    }
    for (letter, class) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS), ('n', NEW)] {
        if flags & class != 0 {
            text.push(letter);
        }
    }
    text
}

impl Ctx<'_> {
    /// The connection's logical database (SELECT's number), as channel
    /// names spell it.
    pub(in crate::apps::kv) fn logical_db(&self) -> u32 {
        u32::from(self.conn.db)
    }
}

impl KvServer {
    /// Whether events of `class` are published (one test of a word).
    #[inline]
    pub(in crate::apps::kv) fn notifies(&self, class: u32) -> bool {
        self.notify_flags & class != 0
    }

    /// Publishes event `event` of `class` on `key`, if enabled (Redis's
    /// `notifyKeyspaceEvent`), from a command: a subscriber that is the
    /// connection running it gets it before the command's reply.
    #[inline]
    pub(in crate::apps::kv) fn notify(&mut self, ctx: &mut Ctx<'_>, class: u32, event: &str, key: &[u8]) {
        if self.notifies(class) {
            let db = ctx.logical_db();
            self.publish_event(Some(ctx), db, event, key);
        }
    }

    /// The `new` event (class n) for a key the command created.
    #[inline]
    pub(in crate::apps::kv) fn notify_created(&mut self, ctx: &mut Ctx<'_>, created: bool, key: &[u8]) {
        if created {
            self.notify(ctx, NEW, "new", key);
        }
    }

    /// The same, from the server's own work (the expiry tick).
    pub(in crate::apps::kv) fn notify_background(&mut self, class: u32, event: &str, key: &[u8], db: u32) {
        if self.notifies(class) {
            self.publish_event(None, db, event, key);
        }
    }

    #[cold]
    fn publish_event(&mut self, mut ctx: Option<&mut Ctx<'_>>, db: u32, event: &str, key: &[u8]) {
        if self.notify_flags & KEYSPACE != 0 {
            let mut channel = format!("__keyspace@{db}__:").into_bytes();
            channel.extend_from_slice(key);
            self.publish_channel(ctx.as_deref_mut(), &channel, event.as_bytes());
            self.publish_elsewhere(&channel, event.as_bytes());
        }
        if self.notify_flags & KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}").into_bytes();
            self.publish_channel(ctx, &channel, key);
            self.publish_elsewhere(&channel, key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_and_print_as_redis() {
        let text = |s: &str| flags_text(parse_flags(s).unwrap());
        assert_eq!(text("gKE"), "gKE");
        assert_eq!(text("$lshzxeKE"), "$lshzxeKE");
        assert_eq!(text("KA"), "AK");
        assert_eq!(text("EA"), "AE");
        assert_eq!(text("AKEmn"), "AKEmn");
        assert_eq!(text(""), "");
        assert_eq!(parse_flags("Kq"), None);
    }
}
