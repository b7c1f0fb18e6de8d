//! CLIENT: the registry of Redis-protocol connections and the commands
//! over it (LIST, INFO, KILL, ID, SETNAME, GETNAME, REPLY, NO-EVICT,
//! NO-TOUCH, PAUSE, UNPAUSE, GETREDIR, TRACKING, CACHING, TRACKINGINFO,
//! UNBLOCK, SETINFO, HELP),
//! with Redis 7.0's replies and errors.
//!
//! A connection's state lives in its `KvConn`, which only its own turn
//! sees; the registry keeps what CLIENT LIST shows of the others (name,
//! addresses, age, idle, last command, subscriptions, transaction),
//! refreshed after each of its commands (`observe`). CLIENT KILL marks a
//! connection killed and wakes it: its next turn closes it (`serve_resp`).
//!
//! The registry (`Clients`) and a connection's reply mode are in
//! `kept/client.rs`; `observe`, which reads a `KvConn`, is here.
//!
//! Invariant: a Redis-protocol connection is registered from `connect` to
//! `abandon`, exactly; a killed one runs no further command.

use std::time::Instant;

use crate::apps::kv::kept::client::{ClientInfo, Clients, ReplyMode};
use crate::apps::kv::ops::{parse_i64, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvConn, KvServer};
use crate::store::db::StoreError;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("client", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "CLIENT LIST, INFO, KILL, ID, SETNAME, GETNAME, REPLY, NO-EVICT, NO-TOUCH, PAUSE, UNPAUSE, GETREDIR, TRACKING, CACHING, TRACKINGINFO, HELP.", KvServer::cmd_client),
];

/// CLIENT PAUSE's longest timeout, in milliseconds (Redis takes any
/// positive 64-bit count; a year is longer than anyone means).
const PAUSE_MS_MAX: i64 = 365 * 24 * 3600 * 1000;

/// The registry's one method that reads a connection's own state
/// (`KvConn`, of `state.rs`): the rest is in `kept/client.rs`.
impl Clients {
    /// After a command: what CLIENT LIST shows of the connection now.
    /// `at`: when the command began (the last interaction).
    pub(in crate::apps::kv) fn observe(&mut self, conn: &KvConn, command: &'static str, at: Instant) {
        // A link's connection runs commands for clients of other shards
        // (or this one's, a part of their spanning command): not theirs to
        // describe.
        if conn.listener == crate::apps::kv::LISTENER_LINK_IN {
            return;
        }
        let Some(info) = self.list.get_mut(&conn.id) else { return };
        info.last = at;
        info.cmd = command;
        info.name.clone_from(&conn.name);
        info.subs = conn.subscriptions.as_ref().map_or((0, 0, 0), |s| s.counts());
        info.multi = conn.multi.as_ref().map(|m| m.queued.len());
        info.resp3 = conn.encoder.resp3;
    }
}

/// CLIENT's subcommands: a known one with the wrong number of arguments
/// gets Redis 7's arity error, an unknown one its "unknown subcommand".
const SUBCOMMANDS: &[&[u8]] = &[
    b"id",
    b"info",
    b"list",
    b"setname",
    b"getname",
    b"kill",
    b"reply",
    b"no-evict",
    b"no-touch",
    b"pause",
    b"unpause",
    b"getredir",
    b"unblock",
    b"tracking",
    b"caching",
    b"trackinginfo",
    b"help",
];

/// The bytes of the asking connection's current command as a client
/// sends it (RESP's multibulk form): what Redis's query buffer holds
/// while the command runs.
fn request_len(ctx: &Ctx<'_>) -> usize {
    let digits = |n: usize| n.to_string().len();
    let args: usize =
        (0..ctx.argc()).map(|i| ctx.conn.args.arg_len(i) as usize).map(|len| 1 + digits(len) + 2 + len + 2).sum();
    1 + digits(ctx.argc()) + 2 + args
}

/// CLIENT KILL's filters (the new form), Redis 7.0's.
#[derive(Default)]
struct KillFilter {
    id: Option<u64>,
    pubsub: Option<bool>,
    addr: Option<String>,
    laddr: Option<String>,
    skipme: bool,
    /// TYPE master or replica: none connects here, nothing matches.
    none: bool,
}

impl KillFilter {
    /// Parses `CLIENT KILL <filter> <value> ...`; Err: the error to answer.
    fn parse(ctx: &Ctx<'_>) -> Result<KillFilter, String> {
        let mut filter = KillFilter { skipme: true, ..KillFilter::default() };
        if ctx.argc() % 2 != 0 {
            return Err(SYNTAX.into());
        }
        for i in (2..ctx.argc()).step_by(2) {
            let value = String::from_utf8_lossy(&ctx.arg(i + 1)).into_owned();
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"ID") => match parse_i64(value.as_bytes()) {
                    Some(id) if id >= 1 => filter.id = Some(id as u64),
                    _ => return Err("ERR client-id should be greater than 0".into()),
                },
                Some(b"TYPE") => match client_type(&value) {
                    Ok(kind) => filter.pubsub = Some(kind),
                    Err(why) if why.is_empty() => filter.none = true,
                    Err(why) => return Err(why),
                },
                Some(b"ADDR") => filter.addr = Some(value),
                Some(b"LADDR") => filter.laddr = Some(value),
                Some(b"USER") if value == "default" => {}
                Some(b"USER") => return Err(format!("ERR No such user '{value}'")),
                Some(b"SKIPME") => match value.to_ascii_lowercase().as_str() {
                    "yes" => filter.skipme = true,
                    "no" => filter.skipme = false,
                    _ => return Err(SYNTAX.into()),
                },
                _ => return Err(SYNTAX.into()),
            }
        }
        Ok(filter)
    }

    fn matches(&self, id: u64, info: &ClientInfo, me: u64) -> bool {
        !self.none
            && self.id.is_none_or(|want| want == id)
            && self.pubsub.is_none_or(|want| want == info.is_pubsub())
            && self.addr.as_ref().is_none_or(|want| *want == info.addr)
            && self.laddr.as_ref().is_none_or(|want| *want == info.laddr)
            && !(self.skipme && id == me)
    }
}

/// A client type's name: true for pubsub, false for normal; Err for the
/// replication types (none here) made an empty match, unknown types an
/// error, as Redis's `getClientTypeByName`.
fn client_type(name: &str) -> Result<bool, String> {
    match name.to_ascii_lowercase().as_str() {
        "normal" => Ok(false),
        "pubsub" => Ok(true),
        // No replica or master connects to packetstore: these match none.
        "master" | "slave" | "replica" => Err(String::new()),
        _ => Err(format!("ERR Unknown client type '{name}'")),
    }
}

const HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Accepted and checked; packetstore holds no client (see its README).",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Print this help.",
];

impl KvServer {
    fn cmd_client(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.conn.args.upper(1).unwrap_or_default();
        match (sub.as_slice(), ctx.argc()) {
            (b"SETNAME", 3) => client_setname(ctx),
            (b"GETNAME", 2) => match ctx.conn.name.clone() {
                Some(name) => ctx.bulk(&name),
                None => ctx.null(),
            },
            (b"ID", 2) => ctx.int(ctx.conn.id as i64),
            (b"SETINFO", 4) => ctx.ok(),
            (b"LIST", _) => self.client_list(ctx),
            (b"INFO", 2) => {
                self.clients.observe(ctx.conn, "client", Instant::now());
                let line = self.clients.list.get(&ctx.conn.id).map(|i| {
                    let (flags, redirect) = self.tracking.list_fields(ctx.conn.id);
                    let extra = (self.monitors.contains(ctx.conn.id), flags, redirect);
                    i.line(ctx.conn.id, "client|info", request_len(ctx), Instant::now(), extra)
                });
                let enc = ctx.enc();
                enc.verbatim(ctx.out.bytes(), &line.unwrap_or_default());
            }
            (b"KILL", 3..) => self.client_kill(ctx),
            (b"REPLY", 3) => client_reply(ctx),
            (b"NO-EVICT" | b"NO-TOUCH", 3) => self.client_switch(ctx, sub == b"NO-EVICT"),
            (b"PAUSE", 3 | 4) => client_pause(ctx),
            (b"UNPAUSE", 2) => ctx.ok(),
            (b"GETREDIR", 2) => self.client_getredir(ctx),
            (b"UNBLOCK", 3 | 4) => self.client_unblock(ctx),
            (b"TRACKING", 3..) => self.client_tracking(ctx),
            (b"CACHING", 3..) => self.client_caching(ctx),
            (b"TRACKINGINFO", 2) => self.client_trackinginfo(ctx),
            (b"HELP", 2) => {
                ctx.array(HELP.len());
                HELP.iter().for_each(|line| ctx.out.push(format!("+{line}\r\n").as_bytes()));
            }
            _ if SUBCOMMANDS.contains(&sub.to_ascii_lowercase().as_slice()) => ctx.error(&format!(
                "ERR wrong number of arguments for 'client|{}' command",
                String::from_utf8_lossy(&sub).to_ascii_lowercase()
            )),
            _ => ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }

    /// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...].
    fn client_list(&mut self, ctx: &mut Ctx<'_>) {
        let mut pubsub = None;
        let mut ids: Option<Vec<u64>> = None;
        if ctx.argc() == 4 && ctx.conn.args.upper(2).as_deref() == Some(b"TYPE") {
            match client_type(&String::from_utf8_lossy(&ctx.arg(3))) {
                Ok(kind) => pubsub = Some(kind),
                Err(why) if why.is_empty() => ids = Some(Vec::new()),
                Err(why) => return ctx.error(&why),
            }
        } else if ctx.argc() >= 4 && ctx.conn.args.upper(2).as_deref() == Some(b"ID") {
            let mut list = Vec::new();
            for i in 3..ctx.argc() {
                match parse_i64(&ctx.arg(i)) {
                    Some(id) if id > 0 => list.push(id as u64),
                    _ => return ctx.error("ERR Invalid client ID"),
                }
            }
            ids = Some(list);
        } else if ctx.argc() != 2 {
            return ctx.error(SYNTAX);
        }
        self.clients.observe(ctx.conn, "client", Instant::now());
        let (me, now) = (ctx.conn.id, Instant::now());
        let mut text = String::new();
        for (&id, info) in self.clients.live() {
            if pubsub.is_some_and(|want| want != info.is_pubsub()) || ids.as_ref().is_some_and(|l| !l.contains(&id)) {
                continue;
            }
            let (cmd, qbuf) = if id == me { ("client|list", request_len(ctx)) } else { (info.cmd, 0) };
            let (flags, redirect) = self.tracking.list_fields(id);
            text.push_str(&info.line(id, cmd, qbuf, now, (self.monitors.contains(id), flags, redirect)));
        }
        let enc = ctx.enc();
        enc.verbatim(ctx.out.bytes(), &text);
    }

    /// CLIENT KILL addr:port (the old form: OK or an error) or CLIENT KILL
    /// <filter> <value> ... (the number killed).
    fn client_kill(&mut self, ctx: &mut Ctx<'_>) {
        let me = ctx.conn.id;
        // A part of the client's CLIENT KILL spanning every shard runs on a
        // link for it: the client goes once the reply is in, not the link.
        let on_link = ctx.conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        if ctx.argc() == 3 {
            let addr = String::from_utf8_lossy(&ctx.arg(2)).into_owned();
            let found = self.clients.live().find(|(_, info)| info.addr == addr).map(|(&id, _)| id);
            match found {
                Some(id) if id == me && !on_link => {
                    ctx.ok();
                    ctx.close = true;
                }
                Some(id) => {
                    self.kill_client(id, me);
                    ctx.ok();
                }
                None => ctx.error("ERR No such client"),
            }
            return;
        }
        let filter = match KillFilter::parse(ctx) {
            Ok(filter) => filter,
            Err(why) => return ctx.error(&why),
        };
        let victims: Vec<u64> =
            self.clients.live().filter(|(&id, info)| filter.matches(id, info, me)).map(|(&id, _)| id).collect();
        for &id in &victims {
            if id == me && !on_link {
                ctx.close = true;
            } else {
                self.kill_client(id, me);
            }
        }
        ctx.int(victims.len() as i64);
    }

    /// Kills client `id` of this shard for client `me`: gone for every
    /// other client at once (a redirect to it is broken on every shard,
    /// as after QUIT).
    fn kill_client(&mut self, id: u64, me: u64) {
        if self.clients.kill(id, id == me) {
            if let Some(exchange) = self.across.as_ref() {
                exchange.left(id);
            }
        }
    }

    /// CLIENT NO-EVICT / NO-TOUCH ON|OFF: kept and shown in CLIENT LIST's
    /// flags (packetstore evicts no client and keeps no access clock).
    fn client_switch(&mut self, ctx: &mut Ctx<'_>, evict: bool) {
        let on = match ctx.conn.args.upper(2).as_deref() {
            Some(b"ON") => true,
            Some(b"OFF") => false,
            _ => return ctx.error(SYNTAX),
        };
        if let Some(info) = self.clients.list.get_mut(&ctx.conn.id) {
            if evict {
                info.no_evict = on;
            } else {
                info.no_touch = on;
            }
        }
        ctx.ok();
    }
}

fn client_setname(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2).into_owned();
    if name.iter().any(|&b| b <= b' ' || b > b'~') {
        ctx.error("ERR Client names cannot contain spaces, newlines or special characters.");
    } else {
        ctx.conn.name = (!name.is_empty()).then_some(name);
        ctx.ok();
    }
}

/// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing (the dispatcher
/// drops the replies, `KvServer::execute`), ON answers OK.
fn client_reply(ctx: &mut Ctx<'_>) {
    match ctx.conn.args.upper(2).as_deref() {
        Some(b"ON") => {
            ctx.conn.reply = ReplyMode::On;
            ctx.ok();
        }
        Some(b"OFF") => ctx.conn.reply = ReplyMode::Off,
        Some(b"SKIP") if ctx.conn.reply != ReplyMode::Off => ctx.conn.reply = ReplyMode::SkipNext,
        Some(b"SKIP") => {}
        _ => ctx.error(SYNTAX),
    }
}

/// CLIENT PAUSE <timeout> [WRITE|ALL]: checked as Redis checks it and
/// answered OK; packetstore holds no client (README).
fn client_pause(ctx: &mut Ctx<'_>) {
    match parse_i64(&ctx.arg(2)) {
        Some(ms) if (0..=PAUSE_MS_MAX).contains(&ms) => {}
        Some(_) => return ctx.error("ERR timeout is negative"),
        None => return ctx.error("ERR timeout is not an integer or out of range"),
    }
    if ctx.argc() == 4 && !matches!(ctx.conn.args.upper(3).as_deref(), Some(b"WRITE" | b"ALL")) {
        return ctx.error(SYNTAX);
    }
    ctx.ok();
}
