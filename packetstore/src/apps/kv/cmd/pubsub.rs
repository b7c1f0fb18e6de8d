//! Pub/Sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH,
//! PUBSUB CHANNELS/NUMSUB/NUMPAT, and the sharded forms (SSUBSCRIBE,
//! SUNSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS/SHARDNUMSUB), which on one
//! server are the same with their own channels, as in Redis 7.0 without a
//! cluster. Messages are not persisted, as in Redis.
//!
//! A message for another connection goes to that connection's mailbox, and
//! the event loop is asked to serve it (`App::take_wakeups`); when it is
//! served its mailbox moves into its replies, as far as its reply queue
//! takes (a subscriber that stops reading is paused by the loop, and its
//! mailbox is bounded: past `MAILBOX_BYTES_MAX` it is disconnected, as
//! Redis's `client-output-buffer-limit pubsub` does). So a slow subscriber
//! never slows a publisher.
//!
//! Client-side caching's invalidations for a connection that does not
//! subscribe (`tracking.rs`) wait in a mailbox too, until it is served.
//!
//! The subscriptions and mailboxes (`Subscriptions`, `PubSub`) are in
//! `kept/pubsub.rs`.
//!
//! Invariants: a connection is listed under a channel (or pattern) exactly
//! when the channel is in its own set; a mailbox exists while its
//! connection subscribes to something or has mail; both go when it goes.

use crate::apps::kv::kept::pubsub::{Mailbox, Space, Subscriptions};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::proto::resp::{glob_match, Encoder};
use crate::store::db::StoreError;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("subscribe", -2, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Listens for messages published to channels.", KvServer::cmd_subscribe),
    cmd("unsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Stops listening to channels.", KvServer::cmd_unsubscribe),
    cmd("psubscribe", -2, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Listens for messages published to channels matching patterns.", KvServer::cmd_psubscribe),
    cmd("punsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Stops listening to patterns.", KvServer::cmd_punsubscribe),
    cmd("ssubscribe", -2, &["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "Listens for messages published to shard channels.", KvServer::cmd_ssubscribe),
    cmd("sunsubscribe", -1, &["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "Stops listening to shard channels.", KvServer::cmd_sunsubscribe),
    cmd("publish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], (0, 0, 0), "pubsub", "Posts a message to a channel.", KvServer::cmd_publish),
    cmd("spublish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], (1, 1, 1), "pubsub", "Posts a message to a shard channel.", KvServer::cmd_spublish),
    cmd("pubsub", -2, &["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "PUBSUB CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB.", KvServer::cmd_pubsub),
];

/// A message as a subscriber's protocol frames it: RESP3 a push, RESP2 an
/// array.
fn frame(enc: Encoder, parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + parts.iter().map(|p| p.len() + 16).sum::<usize>());
    out.push(if enc.resp3 { b'>' } else { b'*' });
    out.extend_from_slice(format!("{}\r\n", parts.len()).as_bytes());
    for part in parts {
        enc.bulk(&mut out, part);
    }
    out
}

/// A (un)subscribe confirmation: verb, name (or null), count.
fn confirmation(enc: Encoder, verb: &[u8], name: Option<&[u8]>, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.push(if enc.resp3 { b'>' } else { b'*' });
    out.extend_from_slice(b"3\r\n");
    enc.bulk(&mut out, verb);
    match name {
        Some(name) => enc.bulk(&mut out, name),
        None => enc.null(&mut out),
    }
    enc.int(&mut out, count as i64);
    out
}

impl KvServer {
    fn cmd_subscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.subscribe(ctx, Space::Channel);
        Ok(())
    }

    fn cmd_psubscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.subscribe(ctx, Space::Pattern);
        Ok(())
    }

    fn cmd_ssubscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.subscribe(ctx, Space::Shard);
        Ok(())
    }

    fn cmd_unsubscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.unsubscribe(ctx, Space::Channel);
        Ok(())
    }

    fn cmd_punsubscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.unsubscribe(ctx, Space::Pattern);
        Ok(())
    }

    fn cmd_sunsubscribe(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.unsubscribe(ctx, Space::Shard);
        Ok(())
    }

    fn subscribe(&mut self, ctx: &mut Ctx<'_>, space: Space) {
        let enc = ctx.enc();
        let (id, token) = (ctx.conn.id, ctx.conn.token);
        let mailbox = self.pubsub.mailboxes.entry(id).or_insert(Mailbox {
            token,
            resp3: enc.resp3,
            bytes: Vec::new(),
            overflowed: false,
        });
        mailbox.resp3 = enc.resp3;
        for i in 1..ctx.argc() {
            let name = ctx.arg(i).into_owned();
            let subs = ctx.conn.subscriptions.get_or_insert_with(Default::default);
            if subs.set(space).insert(name.clone()) {
                self.pubsub.map(space).entry(name.clone()).or_default().push(id);
            }
            let count = subs.count(space);
            ctx.out.push(&confirmation(enc, space.verbs().0, Some(&name), count));
        }
    }

    fn unsubscribe(&mut self, ctx: &mut Ctx<'_>, space: Space) {
        let enc = ctx.enc();
        let id = ctx.conn.id;
        let names: Vec<Vec<u8>> = if ctx.argc() > 1 {
            (1..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect()
        } else {
            ctx.conn.subscriptions.as_mut().map(|s| s.set(space).iter().cloned().collect()).unwrap_or_default()
        };
        if names.is_empty() {
            let count = ctx.conn.subscriptions.as_ref().map_or(0, |s| s.count(space));
            ctx.out.push(&confirmation(enc, space.verbs().1, None, count));
        }
        for name in names {
            let subs = ctx.conn.subscriptions.get_or_insert_with(Default::default);
            if subs.set(space).remove(&name) {
                self.pubsub.remove(space, &name, id);
            }
            let count = subs.count(space);
            ctx.out.push(&confirmation(enc, space.verbs().1, Some(&name), count));
        }
        if ctx.conn.subscriptions.as_ref().is_some_and(Subscriptions::is_empty) {
            ctx.conn.subscriptions = None;
            // Invalidations waiting in it stay until it is served.
            if self.pubsub.mailboxes.get(&id).is_some_and(|m| m.bytes.is_empty()) {
                self.pubsub.mailboxes.remove(&id);
            }
        }
    }

    fn cmd_publish(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (channel, message) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let receivers = self.publish(Some(ctx), Space::Channel, &channel, &message);
        ctx.int(receivers as i64);
        Ok(())
    }

    fn cmd_spublish(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (channel, message) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let receivers = self.publish(Some(ctx), Space::Shard, &channel, &message);
        ctx.int(receivers as i64);
        Ok(())
    }

    /// Posts `message` to every subscriber of `channel` (and, for plain
    /// channels, of every matching pattern); returns how many receive it.
    /// The publisher's own copy (RESP3 lets a subscriber publish) goes
    /// straight into its replies, before PUBLISH's. Without a command
    /// (`ctx` None: the server's own events) every copy goes by mailbox.
    fn publish(&mut self, mut ctx: Option<&mut Ctx<'_>>, space: Space, channel: &[u8], message: &[u8]) -> usize {
        let mut receivers = 0;
        let kind: &[u8] = if space == Space::Shard { b"smessage" } else { b"message" };
        let ids = self.pubsub.map(space).get(channel).cloned().unwrap_or_default();
        for id in ids {
            receivers += 1;
            self.send_to(ctx.as_deref_mut(), id, &[kind, channel, message]);
        }
        if space == Space::Channel {
            let patterns: Vec<(Vec<u8>, Vec<u64>)> = self
                .pubsub
                .patterns
                .iter()
                .filter(|(pattern, _)| glob_match(pattern, channel))
                .map(|(pattern, ids)| (pattern.clone(), ids.clone()))
                .collect();
            for (pattern, ids) in patterns {
                for id in ids {
                    receivers += 1;
                    self.send_to(ctx.as_deref_mut(), id, &[b"pmessage", &pattern, channel, message]);
                }
            }
        }
        receivers
    }

    /// Publishes on a plain channel (keyspace notifications); returns
    /// how many receive it.
    pub(in crate::apps::kv) fn publish_channel(
        &mut self,
        ctx: Option<&mut Ctx<'_>>,
        channel: &[u8],
        message: &[u8],
    ) -> usize {
        self.publish(ctx, Space::Channel, channel, message)
    }

    fn send_to(&mut self, ctx: Option<&mut Ctx<'_>>, client: u64, parts: &[&[u8]]) {
        // A PUBLISH's part on another shard's link runs as its client (the
        // link takes its id): the publisher's own copy goes by its mailbox
        // here, not into the link's reply, where it was lost.
        let own = ctx.filter(|ctx| ctx.conn.id == client && ctx.conn.listener != crate::apps::kv::LISTENER_LINK_IN);
        if let Some(ctx) = own {
            let framed = frame(ctx.enc(), parts);
            ctx.out.push(&framed);
            return;
        }
        // Encoded for the subscriber's protocol.
        let resp3 = self.pubsub.mailboxes.get(&client).is_some_and(|m| m.resp3);
        let framed = frame(Encoder { resp3 }, parts);
        self.pubsub.post(client, &framed);
    }

    fn cmd_pubsub(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.arg(1).to_ascii_uppercase();
        match (sub.as_slice(), ctx.argc()) {
            (b"CHANNELS" | b"SHARDCHANNELS", 2 | 3) => {
                let space = if sub == b"CHANNELS" { Space::Channel } else { Space::Shard };
                let pattern = (ctx.argc() == 3).then(|| ctx.arg(2).into_owned());
                let names: Vec<Vec<u8>> = self
                    .pubsub
                    .map(space)
                    .keys()
                    .filter(|name| pattern.as_ref().is_none_or(|p| glob_match(p, name)))
                    .cloned()
                    .collect();
                ctx.array(names.len());
                names.iter().for_each(|name| ctx.bulk(name));
            }
            (b"NUMSUB" | b"SHARDNUMSUB", _) => {
                let space = if sub == b"NUMSUB" { Space::Channel } else { Space::Shard };
                ctx.map(ctx.argc() - 2);
                for i in 2..ctx.argc() {
                    let name = ctx.arg(i).into_owned();
                    let count = self.pubsub.map(space).get(&name).map_or(0, Vec::len);
                    ctx.bulk(&name);
                    ctx.int(count as i64);
                }
            }
            (b"NUMPAT", 2) => {
                let count = self.pubsub.patterns.len();
                ctx.int(count as i64);
            }
            // A spanning NUMPAT's part (`span::NUMPAT_PART`): this shard's
            // patterns, which the coordinator counts once each.
            (sub, 2)
                if sub == crate::apps::kv::span::NUMPAT_PART
                    && ctx.conn.listener == crate::apps::kv::LISTENER_LINK_IN =>
            {
                let patterns: Vec<Vec<u8>> = self.pubsub.patterns.keys().cloned().collect();
                ctx.array(patterns.len());
                patterns.iter().for_each(|pattern| ctx.bulk(pattern));
            }
            (b"HELP", 2) => {
                let lines = [
                    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "CHANNELS [<pattern>]",
                    "NUMPAT",
                    "NUMSUB [<channel> ...]",
                    "SHARDCHANNELS [<pattern>]",
                    "SHARDNUMSUB [<shardchannel> ...]",
                    "HELP",
                ];
                ctx.array(lines.len());
                lines.iter().for_each(|line| ctx.out.push(format!("+{line}\r\n").as_bytes()));
            }
            _ => {
                let sub = String::from_utf8_lossy(&ctx.arg(1)).into_owned();
                ctx.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
                ));
            }
        }
        Ok(())
    }
}

/// Whether a command may run on a RESP2 connection that subscribes
/// (Redis: only the (un)subscribe commands, PING, QUIT and RESET).
pub(in crate::apps::kv) fn allowed_while_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}
