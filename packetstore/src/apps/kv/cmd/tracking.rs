//! Client-side caching, as Redis 7.0's `tracking.c`: CLIENT TRACKING,
//! CACHING, GETREDIR and TRACKINGINFO; the table of the keys tracking
//! clients read; and the invalidation messages a change of those keys
//! sends: a RESP3 push (`invalidate`, keys) on the client's own
//! connection, or, redirected, on another one (a push if that one speaks
//! RESP3, else a message on `__redis__:invalidate` if it subscribes). BCAST
//! clients get every key changed under their prefixes, once per event-loop
//! turn; a flush sends every tracking client a null ("everything").
//!
//! Keys are tracked by name, across databases, as Redis does. A message
//! for another connection goes to its mailbox (`pubsub.rs`), which the
//! event loop serves even if that connection sends nothing.
//!
//! On a sharded server's main port every shard keeps each tracking
//! client's mode (CLIENT TRACKING runs on all of them, for the client's
//! id), and a command relayed for a tracking client carries its id
//! (`shard_link::LINK_AS`): the shard that owns a key tracks it for that client, and
//! finds whom its change concerns. A message for a client of another shard
//! goes there (`PUSH`, on the link), except one for the client whose
//! command the link runs now, which follows that command's reply on the
//! link (the sending shard hands it to the client after the reply). Flushes
//! are told by each client's own shard, which FLUSHALL reaches too.
//!
//! The tracking clients, the table and the prefixes (`Tracking`) are in
//! `kept/tracking.rs`.
//!
//! Invariants: a key's table entry names each client once and goes with
//! the invalidation it sends; after each tick the table holds at most
//! `tracking-table-max-keys` keys (the tick evicts the rest, invalidating
//! them, with Redis's growing effort); a prefix is in the prefix table
//! exactly while a BCAST client has it; invalidations for the client whose
//! command caused them leave after that command's reply.

use crate::apps::kv::cmd::command::{key_positions, moves_keys};
use crate::apps::kv::kept::tracking::Tracked;
use crate::apps::kv::ops::{parse_i64, SYNTAX};
use crate::apps::kv::shard_link::LINK_AS;
use crate::apps::kv::state::{CommandEntry, Ctx, KvServer};
use crate::io::outq::OutQueue;
use crate::proto::resp::Encoder;

/// Keys the tick evicts per round over the table's limit, times the
/// rounds it stayed over (Redis's `trackingLimitUsedSlots`).
const EVICTION_EFFORT: usize = 100;

/// The limit of tracked keys when `tracking-table-max-keys` is unset.
const TABLE_KEYS_DEFAULT: usize = 1_000_000;

/// A message for a client of another shard, sent on the link to it:
/// `PACKETSTORE-PUSH target kind tracker payload`, kind 0 (the tracker's
/// own message: payload the keys part) or 1 (redirected to target), or
/// `broken` (the tracker's redirect, payload, is gone).
pub(in crate::apps::kv) const PUSH: &[u8] = b"PACKETSTORE-PUSH";

/// The shard whose connection client `id` is, of `shards` (ids of shard
/// i are i+1, i+1+shards, ...).
pub(in crate::apps::kv) fn home_shard(id: u64, shards: u16) -> u16 {
    (id.saturating_sub(1) % u64::from(shards.max(1))) as u16
}

/// Where a message for a client goes.
enum Reach {
    /// A connection of this shard.
    Here(crate::apps::kv::kept::client::Target),
    /// The client whose command a link connection runs now: after its
    /// reply, on that link (its protocol).
    Stream {
        resp3: bool,
    },
    /// Another shard's connection.
    Shard(u16),
    Gone,
}

/// What an invalidation says.
#[derive(Clone, Copy)]
enum Message<'a> {
    Key(&'a [u8]),
    /// Every key (a flush), as a null of the tracking client's protocol.
    Flush {
        resp3: bool,
    },
    /// An array of keys, encoded (BCAST).
    Keys(&'a [u8]),
}

/// The message's keys part.
fn encode_body(message: Message<'_>, out: &mut Vec<u8>) {
    let enc = Encoder { resp3: false };
    match message {
        Message::Key(key) => {
            enc.array(out, 1);
            enc.bulk(out, key);
        }
        Message::Flush { resp3: true } => out.extend_from_slice(b"_\r\n"),
        Message::Flush { resp3: false } => out.extend_from_slice(b"*-1\r\n"),
        Message::Keys(encoded) => out.extend_from_slice(encoded),
    }
}

/// An invalidation message for a connection speaking RESP3 or not (then
/// only a redirect's subscriber to `__redis__:invalidate` hears it), with
/// `body`, its keys part.
fn frame(resp3: bool, subscribed_redirect: bool, body: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = if resp3 {
        b">2\r\n$10\r\ninvalidate\r\n".to_vec()
    } else if subscribed_redirect {
        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n".to_vec()
    } else {
        // RESP2 has no pushes on a connection's own replies.
        return None;
    };
    bytes.extend_from_slice(body);
    Some(bytes)
}

/// CLIENT TRACKING's options, parsed (Redis's order of checks).
struct Options {
    /// Its redirect included.
    mode: Tracked,
    prefixes: Vec<Vec<u8>>,
}

impl KvServer {
    /// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN]
    /// [OPTOUT] [NOLOOP].
    pub(in crate::apps::kv) fn client_tracking(&mut self, ctx: &mut Ctx<'_>) {
        let options = match self.tracking_options(ctx) {
            Ok(options) => options,
            Err(why) => return ctx.error(&why),
        };
        let id = ctx.conn.id;
        let switch = ctx.arg(2).to_ascii_lowercase();
        match switch.as_slice() {
            b"on" => {
                if let Some(why) = self.tracking_unsupported(ctx) {
                    return ctx.error(why);
                }
                if let Err(why) = self.tracking_check(id, &options) {
                    return ctx.error(&why);
                }
                self.tracking.enable(id, options.mode, options.prefixes);
            }
            b"off" => {
                self.tracking.disable(id);
            }
            _ => return ctx.error(SYNTAX),
        }
        ctx.ok();
    }

    /// In a replicated group a client's commands may run on another node,
    /// and a node does not see every change of its keys as a command: a
    /// client cache would go stale unwarned, so tracking is refused there.
    fn tracking_unsupported(&self, _ctx: &Ctx<'_>) -> Option<&'static str> {
        self.replica.is_some().then_some(
            "ERR CLIENT TRACKING is not supported in a replicated group: a node does not see the changes it applies \
             from the log as commands",
        )
    }

    /// Client `id` stopped tracking with its connection (gone, or RESET):
    /// every other shard forgets its mode too (a CLIENT TRACKING off for
    /// it on each link, after whatever it sent there before).
    pub(in crate::apps::kv) fn tracking_off_elsewhere(&mut self, id: u64) {
        let Some(exchange) = self.across.clone() else { return };
        let id = id.to_string();
        let off = [LINK_AS, id.as_bytes(), b"0", b"CLIENT", b"TRACKING", b"off"];
        let me = self.shard_index();
        for shard in (0..exchange.shards()).filter(|&shard| shard != me) {
            self.links.send_own(shard, &off);
        }
    }

    /// Whether client `id` is connected, here or to another shard.
    fn client_exists(&self, id: u64) -> bool {
        if self.clients.target(id).is_some() {
            return true;
        }
        let Some(exchange) = self.across.as_ref() else { return false };
        home_shard(id, exchange.shards()) != self.shard_index() && exchange.is_connected(id)
    }

    /// Whether client `id` is this shard's (not another's, whose mode this
    /// shard keeps a copy of).
    fn tracks_here(&self, id: u64) -> bool {
        self.across.as_ref().is_none_or(|exchange| home_shard(id, exchange.shards()) == self.shard_index())
    }

    /// This shard's tracking clients (its own connections), keys in its
    /// table, and client ids across them.
    pub(in crate::apps::kv) fn tracking_figures(&self) -> (usize, usize, usize) {
        let own = self.tracking.clients.keys().filter(|&&id| self.tracks_here(id)).count();
        (own, self.tracking.table.len(), self.tracking.items as usize)
    }

    /// INFO's tracking figures: clients, keys, items (every shard's added)
    /// and prefixes (every shard has every BCAST client's).
    pub(in crate::apps::kv) fn tracking_totals(&self) -> (usize, usize, usize, usize) {
        use crate::apps::kv::exchange::Figure::{TrackingClients, TrackingItems, TrackingKeys};
        let figures = self.shard_figures();
        let prefixes = self.tracking.prefixes.len();
        (figures[TrackingClients as usize], figures[TrackingKeys as usize], figures[TrackingItems as usize], prefixes)
    }

    fn tracking_options(&self, ctx: &Ctx<'_>) -> Result<Options, String> {
        let mut options = Options { mode: Tracked::default(), prefixes: Vec::new() };
        let mut i = 3;
        while i < ctx.argc() {
            let more = i + 1 < ctx.argc();
            let word = ctx.arg(i).to_ascii_lowercase();
            match word.as_slice() {
                b"redirect" if more => {
                    i += 1;
                    if options.mode.redirect != 0 {
                        return Err("ERR A client can only redirect to a single other client".into());
                    }
                    let id = parse_i64(&ctx.arg(i)).ok_or("ERR value is not an integer or out of range")?;
                    if id <= 0 || !self.client_exists(id as u64) {
                        return Err("ERR The client ID you want redirect to does not exist".into());
                    }
                    options.mode.redirect = id as u64;
                }
                b"bcast" => options.mode.bcast = true,
                b"optin" => options.mode.optin = true,
                b"optout" => options.mode.optout = true,
                b"noloop" => options.mode.noloop = true,
                b"prefix" if more => {
                    i += 1;
                    options.prefixes.push(ctx.arg(i).into_owned());
                }
                _ => return Err(SYNTAX.into()),
            }
            i += 1;
        }
        Ok(options)
    }

    /// CLIENT TRACKING ON's checks of its options against each other and
    /// against the client's current mode.
    fn tracking_check(&self, id: u64, options: &Options) -> Result<(), String> {
        let mode = &options.mode;
        if !mode.bcast && !options.prefixes.is_empty() {
            return Err("ERR PREFIX option requires BCAST mode to be enabled".into());
        }
        let current = self.tracking.clients.get(&id);
        if current.is_some_and(|t| t.bcast != mode.bcast) {
            return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then \
                        re-enabling it with a different mode."
                .into());
        }
        if mode.bcast && (mode.optin || mode.optout) {
            return Err("ERR OPTIN and OPTOUT are not compatible with BCAST".into());
        }
        if mode.optin && mode.optout {
            return Err("ERR You can't specify both OPTIN mode and OPTOUT mode".into());
        }
        if current.is_some_and(|t| (mode.optin && t.optout) || (mode.optout && t.optin)) {
            return Err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then \
                        re-enabling it with a different mode."
                .into());
        }
        match mode.bcast.then(|| self.tracking.prefix_collision(id, &options.prefixes)).flatten() {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// CLIENT CACHING YES|NO: whether the next command's keys are tracked.
    pub(in crate::apps::kv) fn client_caching(&mut self, ctx: &mut Ctx<'_>) {
        let Some(tracked) = self.tracking.clients.get_mut(&ctx.conn.id) else {
            return ctx.error(
                "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode \
                 enabled",
            );
        };
        match ctx.arg(2).to_ascii_lowercase().as_slice() {
            b"yes" if tracked.optin => tracked.caching = true,
            b"yes" => return ctx.error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."),
            b"no" if tracked.optout => tracked.caching = true,
            b"no" => return ctx.error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."),
            _ => return ctx.error(SYNTAX),
        }
        ctx.ok();
    }

    /// CLIENT GETREDIR: the redirect (0: none), or -1 when not tracking.
    pub(in crate::apps::kv) fn client_getredir(&mut self, ctx: &mut Ctx<'_>) {
        let redirect = self.tracking.clients.get(&ctx.conn.id).map_or(-1, |t| t.redirect as i64);
        ctx.int(redirect);
    }

    /// CLIENT TRACKINGINFO: flags, redirect, prefixes.
    pub(in crate::apps::kv) fn client_trackinginfo(&mut self, ctx: &mut Ctx<'_>) {
        let tracked = self.tracking.clients.get(&ctx.conn.id);
        let mut flags = vec![if tracked.is_some() { "on" } else { "off" }];
        if let Some(t) = tracked {
            let named = [
                (t.bcast, "bcast"),
                (t.optin, "optin"),
                (t.optin && t.caching, "caching-yes"),
                (t.optout, "optout"),
                (t.optout && t.caching, "caching-no"),
                (t.noloop, "noloop"),
                (t.broken_redirect, "broken_redirect"),
            ];
            flags.extend(named.iter().filter(|(on, _)| *on).map(|(_, name)| *name));
        }
        let redirect = tracked.map_or(-1, |t| t.redirect as i64);
        let prefixes: Vec<Vec<u8>> = tracked.map(|t| t.prefixes.iter().cloned().collect()).unwrap_or_default();
        ctx.map(3);
        ctx.bulk(b"flags");
        if ctx.enc().resp3 {
            ctx.out.push(format!("~{}\r\n", flags.len()).as_bytes());
        } else {
            ctx.array(flags.len());
        }
        flags.iter().for_each(|flag| ctx.bulk(flag.as_bytes()));
        ctx.bulk(b"redirect");
        ctx.int(redirect);
        ctx.bulk(b"prefixes");
        ctx.array(prefixes.len());
        prefixes.iter().for_each(|prefix| ctx.bulk(prefix));
    }

    /// A command begins at the top level for `client` (not inside EXEC or
    /// a script): invalidations for it wait for its reply.
    pub(in crate::apps::kv) fn tracking_begin(&mut self, client: u64) -> bool {
        if self.tracking.current.is_some() {
            return false;
        }
        self.tracking.current = Some(client);
        true
    }

    /// The top-level command of `tracking_begin` is done: its client's
    /// invalidations follow its reply in `out`, and its CLIENT CACHING
    /// choice is used up unless it was CLIENT or it is in a transaction.
    pub(in crate::apps::kv) fn tracking_end(&mut self, out: &mut OutQueue, keeps_caching: bool) {
        let Some(client) = self.tracking.current.take() else { return };
        if !keeps_caching {
            if let Some(tracked) = self.tracking.clients.get_mut(&client) {
                tracked.caching = false;
            }
        }
        let pending = std::mem::take(&mut self.tracking.pending);
        let resp3 = !pending.is_empty() && self.resp3_of(client);
        for key in pending {
            let message = match &key {
                Some(key) => Message::Key(key),
                None => Message::Flush { resp3 },
            };
            self.tracking_send(client, message, Some((client, &mut *out)));
        }
    }

    /// A read-only command ran: a tracking client (not BCAST) remembers
    /// its keys (a script's declared keys, for a command a script ran).
    pub(in crate::apps::kv) fn tracking_remember(&mut self, ctx: &Ctx<'_>, entry: &CommandEntry) {
        if self.tracking.clients.is_empty()
            || !entry.has_flag("readonly")
            || entry.has_flag("pubsub")
            || matches!(entry.name, "eval_ro" | "evalsha_ro" | "fcall_ro")
        {
            return;
        }
        let id = ctx.conn.id;
        let Some(t) = self.tracking.clients.get(&id) else { return };
        if t.bcast || (t.optin && !t.caching) || (t.optout && t.caching) {
            return;
        }
        let keys: Vec<Vec<u8>> = if self.scripting.running {
            self.tracking.script_keys.clone().unwrap_or_default()
        } else if moves_keys(entry) {
            let args: Vec<Vec<u8>> = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
            key_positions(entry, &args).into_iter().map(|i| args[i].clone()).collect()
        } else {
            entry.key_positions(ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect()
        };
        for key in keys {
            if self.tracking.table.entry(key).or_default().insert(id) {
                self.tracking.items += 1;
            }
        }
    }

    /// A script of `client` with these declared keys starts a step (None:
    /// it ended its step).
    pub(in crate::apps::kv) fn tracking_script(&mut self, client: u64, keys: Option<&[Vec<u8>]>) {
        self.tracking.script_keys = keys.filter(|_| self.tracking.clients.contains_key(&client)).map(<[_]>::to_vec);
    }

    /// `key` changed (Redis's `trackingInvalidateKey` from
    /// `signalModifiedKey`): `by` the client whose command changed it, or
    /// None (the server: an expiry).
    pub(in crate::apps::kv) fn tracking_invalidate(&mut self, key: &[u8], by: Option<u64>) {
        if self.tracking.is_active() {
            self.invalidate_key(key, by, true);
        }
    }

    fn invalidate_key(&mut self, key: &[u8], by: Option<u64>, broadcast: bool) {
        if broadcast && !self.tracking.prefixes.is_empty() {
            self.tracking.note_for_broadcast(key, by);
        }
        let Some(ids) = self.tracking.table.remove(key) else { return };
        self.tracking.items -= ids.len() as u64;
        let current = self.tracking.current;
        for id in ids {
            let Some(tracked) = self.tracking.clients.get(&id) else { continue };
            if tracked.bcast || (tracked.noloop && current == Some(id)) {
                continue;
            }
            if current == Some(id) {
                self.tracking.pending.push(Some(key.to_vec()));
            } else {
                self.tracking_send(id, Message::Key(key), None);
            }
        }
    }

    /// Every key changed (FLUSHALL, FLUSHDB): every tracking client is told
    /// with a null, and the table is emptied.
    pub(in crate::apps::kv) fn tracking_flush(&mut self) {
        // Each shard tells its own clients (a flush reaches every shard).
        let ids: Vec<u64> = self.tracking.clients.keys().copied().filter(|&id| self.tracks_here(id)).collect();
        for id in ids {
            if self.tracking.current == Some(id) {
                self.tracking.pending.push(None);
            } else {
                let resp3 = self.resp3_of(id);
                self.tracking_send(id, Message::Flush { resp3 }, None);
            }
        }
        self.tracking.table.clear();
        self.tracking.items = 0;
    }

    /// Each turn: this turn's BCAST keys go out; a table over its limit is
    /// cut down (Redis's `trackingBroadcastInvalidationMessages` and
    /// `trackingLimitUsedSlots`).
    pub(in crate::apps::kv) fn tracking_tick(&mut self) {
        if self.tracking.clients.is_empty() && self.tracking.table.is_empty() {
            return;
        }
        for (client, keys) in self.tracking.take_broadcasts() {
            self.tracking_send(client, Message::Keys(&keys), None);
        }
        self.tracking_limit();
    }

    fn tracking_limit(&mut self) {
        let limit = self
            .config_params
            .get("tracking-table-max-keys")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(TABLE_KEYS_DEFAULT);
        let excess = if limit == 0 { 0 } else { self.tracking_excess(limit) };
        if excess == 0 {
            self.tracking.over_limit_ticks = 0;
            return;
        }
        let effort = EVICTION_EFFORT * (self.tracking.over_limit_ticks + 1);
        for _ in 0..excess.min(effort) {
            let Some(key) = self.tracking.table.keys().next().cloned() else { break };
            self.invalidate_key(&key, None, false);
        }
        match excess <= effort {
            true => self.tracking.over_limit_ticks = 0,
            false => self.tracking.over_limit_ticks += 1,
        }
        // The other shards see this one's table as it is now.
        self.shard_figures();
    }

    /// The keys this shard's table must give up for the process's tables
    /// to hold `limit` keys: the limit is the process's, as on one Redis.
    /// Of several shards, the one with the most keys (the first of equals,
    /// as published) gives them up, at most all of its own; the others
    /// wait for its next figures.
    fn tracking_excess(&self, limit: usize) -> usize {
        let own = self.tracking.table.len();
        let Some(exchange) = self.across.as_ref() else { return own.saturating_sub(limit) };
        use crate::apps::kv::exchange::Figure::TrackingKeys;
        let me = self.shard_index();
        let mut total = own;
        for shard in (0..exchange.shards()).filter(|&shard| shard != me) {
            let theirs = exchange.figure(shard, TrackingKeys);
            if theirs > own || (theirs == own && shard < me) {
                return 0;
            }
            total += theirs;
        }
        total.saturating_sub(limit).min(own)
    }

    /// Whether client `id` speaks RESP3: a connection of this shard, or
    /// the one a link runs a command for now.
    fn resp3_of(&self, id: u64) -> bool {
        match self.clients.target(id) {
            Some(target) => target.resp3,
            None => self.tracking.remote.is_some_and(|(remote, resp3)| remote == id && resp3),
        }
    }

    /// Where a message for client `id` goes; `in_stream`: it may follow
    /// the reply of the command running now for that client.
    fn reach(&self, id: u64, in_stream: bool) -> Reach {
        if let Some(target) = self.clients.target(id) {
            return Reach::Here(target);
        }
        if let Some((_, resp3)) = self.tracking.remote.filter(|&(remote, _)| in_stream && remote == id) {
            return Reach::Stream { resp3 };
        }
        let Some(exchange) = self.across.as_ref() else { return Reach::Gone };
        let home = home_shard(id, exchange.shards());
        match home != self.shard_index() && exchange.is_connected(id) {
            true => Reach::Shard(home),
            false => Reach::Gone,
        }
    }

    /// Sends `message` for tracking client `id` (Redis's
    /// `sendTrackingMessage`): to its redirect, or to itself; into `out`
    /// (the queue of the client it names, whose command just ran) when it
    /// goes to that client, else to the target's mailbox, or to the shard
    /// whose connection the target is.
    fn tracking_send(&mut self, id: u64, message: Message<'_>, out: Option<(u64, &mut OutQueue)>) {
        let Some(tracked) = self.tracking.clients.get(&id) else { return };
        let (target, redirected) = if tracked.redirect == 0 { (id, false) } else { (tracked.redirect, true) };
        let in_stream = out.as_ref().is_some_and(|(owner, _)| *owner == target);
        let mut body = Vec::new();
        encode_body(message, &mut body);
        match self.reach(target, in_stream) {
            Reach::Here(info) => {
                if let Some(bytes) = frame(info.resp3, redirected && info.pubsub, &body) {
                    self.tracking_deliver(target, info.token, bytes, out);
                }
            }
            Reach::Stream { resp3 } => {
                if let (Some(bytes), Some((_, out))) = (frame(resp3, false, &body), out) {
                    out.push(&bytes);
                }
            }
            Reach::Shard(shard) => {
                let (target, tracker) = (target.to_string(), id.to_string());
                let kind: &[u8] = if redirected { b"1" } else { b"0" };
                self.links.send_own(shard, &[PUSH, target.as_bytes(), kind, tracker.as_bytes(), &body]);
            }
            Reach::Gone if redirected => self.redirect_broken(id, out),
            Reach::Gone => {}
        }
    }

    /// Tracking client `id`'s redirect is gone: it is marked so, and told
    /// if it speaks RESP3 (where it is).
    fn redirect_broken(&mut self, id: u64, out: Option<(u64, &mut OutQueue)>) {
        let Some(tracked) = self.tracking.clients.get_mut(&id) else { return };
        tracked.broken_redirect = true;
        let redirect = tracked.redirect;
        let mut bytes = b">2\r\n$21\r\ntracking-redir-broken\r\n".to_vec();
        Encoder { resp3: true }.int(&mut bytes, redirect as i64);
        match self.reach(id, false) {
            Reach::Here(own) if own.resp3 => self.tracking_deliver(id, own.token, bytes, out),
            Reach::Shard(shard) => {
                let (id, redirect) = (id.to_string(), redirect.to_string());
                self.links.send_own(shard, &[PUSH, id.as_bytes(), b"broken", id.as_bytes(), redirect.as_bytes()]);
            }
            _ => {}
        }
    }

    /// PACKETSTORE-PUSH target kind tracker payload, from another shard's
    /// link (`PUSH`): a message for a client of this shard.
    pub(in crate::apps::kv) fn tracking_push(&mut self, ctx: &mut Ctx<'_>) {
        let number = |i: usize| std::str::from_utf8(&ctx.arg(i)).ok().and_then(|n| n.parse::<u64>().ok());
        let (Some(target), Some(tracker), 5) = (number(1), number(3), ctx.argc()) else {
            return ctx.error("ERR PACKETSTORE-PUSH target kind tracker payload");
        };
        match ctx.arg(2).as_ref() {
            b"broken" => self.redirect_broken(target, None),
            kind => {
                let redirected = kind == b"1";
                match self.clients.target(target) {
                    Some(info) => {
                        // A payload the link could not take (too long, or
                        // the pool nearly full) is sent as "everything":
                        // the client drops its whole cache, never keeps a
                        // stale key, and its stream stays whole.
                        let everything: &[u8] = if info.resp3 { b"_\r\n" } else { b"*-1\r\n" };
                        let body = match ctx.conn.args.refused.is_some() {
                            true => std::borrow::Cow::Borrowed(everything),
                            false => ctx.arg(4),
                        };
                        if body.is_empty() {
                            return ctx.error("ERR PACKETSTORE-PUSH with an empty payload");
                        }
                        if let Some(bytes) = frame(info.resp3, redirected && info.pubsub, &body) {
                            self.pubsub.post_push(target, info.token, &bytes);
                        }
                    }
                    None if redirected => self.redirect_broken(tracker, None),
                    None => {}
                }
            }
        }
        ctx.ok();
    }

    fn tracking_deliver(
        &mut self,
        target: u64,
        token: crate::io::app::ConnToken,
        bytes: Vec<u8>,
        out: Option<(u64, &mut OutQueue)>,
    ) {
        match out {
            Some((owner, out)) if owner == target => out.push(&bytes),
            _ => self.pubsub.post_push(target, token, &bytes),
        }
    }
}
