//! Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
//! BZPOPMAX, BZMPOP, CLIENT UNBLOCK, and the machinery itself: a connection
//! whose pop finds nothing is parked with its command, its keys are
//! registered, and a write to one of them wakes it (`App::take_wakeups`)
//! to run the command again; the tick wakes it when its timeout passes.
//!
//! The pop that serves a blocked client is an ordinary write: logged,
//! applied and replied to after the same commit as any other, so it is
//! durable before its reply leaves, and the writer's reply too.
//!
//! What it keeps between commands (`BlockRequest`, `Blocked`, `Blocking`)
//! is in `kept/blocking.rs`.
//!
//! Invariants: a parked connection runs nothing else until it is served
//! or times out (its later requests wait in its stream); it is listed
//! under each of its keys and in `blocked_conns`, and leaves all of them
//! when it is woken, times out or goes; inside MULTI/EXEC (a store group)
//! a pop never blocks: it answers at once, as Redis's does.

use std::time::{Duration, Instant};

use crate::apps::kv::kept::blocking::{BlockRequest, Blocked};
use crate::apps::kv::ops::{parse_i64, SYNTAX};
use crate::apps::kv::state::{cmd, watch_id, CommandEntry, Ctx, KvConn, KvServer};
use crate::io::app::ConnToken;
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::store::db::StoreError;
use crate::store::keyspace::KeyType;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("blpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Pops the first element of the first non-empty list, waiting up to a timeout.", KvServer::cmd_blpop),
    cmd("brpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Pops the last element of the first non-empty list, waiting up to a timeout.", KvServer::cmd_brpop),
    cmd("blmove", 6, &["write", "denyoom", "noscript", "blocking"], (1, 2, 1), "list", "Moves an element from one list to another, waiting up to a timeout.", KvServer::cmd_blmove),
    cmd("brpoplpush", 4, &["write", "denyoom", "noscript", "blocking"], (1, 2, 1), "list", "Moves the last element of a list to the head of another, waiting up to a timeout.", KvServer::cmd_brpoplpush),
    cmd("blmpop", -5, &["write", "blocking"], (0, 0, 0), "list", "Pops elements from the first non-empty list, waiting up to a timeout.", KvServer::cmd_blmpop),
    cmd("bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Pops the member of lowest score of the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzpopmin),
    cmd("bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Pops the member of highest score of the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzpopmax),
    cmd("bzmpop", -5, &["write", "blocking"], (0, 0, 0), "sorted_set", "Pops members from the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzmpop),
];

/// The longest timeout a blocking command takes (Redis bounds it by what
/// its clock holds; a year is as good as forever here).
const TIMEOUT_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// A timeout argument in seconds (fractions allowed). Err: the reply.
fn parse_timeout(bytes: &[u8]) -> Result<Option<Instant>, &'static str> {
    let seconds: f64 = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|s: &f64| s.is_finite())
        .ok_or("ERR timeout is not a float or out of range")?;
    if seconds < 0.0 {
        return Err("ERR timeout is negative");
    }
    if seconds == 0.0 {
        return Ok(None);
    }
    let timeout = Duration::from_secs_f64(seconds.min(TIMEOUT_MAX.as_secs_f64()));
    Ok(Some(Instant::now() + timeout))
}

impl KvServer {
    /// Called by a pop that found nothing: parks the connection (outside a
    /// transaction or script), or answers the timeout's reply at once
    /// (inside one: a null array, or a null if `null_bulk`).
    pub(in crate::apps::kv) fn block_or_null(
        &mut self,
        ctx: &mut Ctx<'_>,
        keys: &[Vec<u8>],
        deadline: Option<Instant>,
        kind: KeyType,
        null_bulk: bool,
    ) {
        if self.store.in_group() {
            if null_bulk {
                ctx.null();
            } else {
                let enc = ctx.enc();
                enc.null_array(ctx.out.bytes());
            }
            return;
        }
        let keys = keys.iter().map(|key| ctx.watch_id(key)).collect();
        ctx.conn.block_request = Some(BlockRequest { keys, deadline, kind, elsewhere: None });
    }

    /// After a command asked to block: keeps its arguments and parks the
    /// connection.
    pub(in crate::apps::kv) fn park(&mut self, conn: &mut KvConn) {
        let request = conn.block_request.take().expect("a block request");
        let args = std::mem::take(&mut conn.args);
        let arrived_ns = conn.arrived_ns.take().unwrap_or_else(crate::apps::kv::shard_link::arrival_ns);
        let elsewhere = request.elsewhere.as_ref();
        self.blocking.register((conn.id, conn.token), &request.keys, (request.deadline, elsewhere), arrived_ns);
        let (keys, deadline, kind, elsewhere) = (request.keys, request.deadline, request.kind, request.elsewhere);
        conn.blocked = Some(Blocked { args, keys, deadline, kind, arrived_ns, elsewhere });
    }

    /// A parked connection is served: its command runs again, or answers
    /// its timeout. Returns whether the connection may go on with its
    /// next requests (false: parked again).
    pub(in crate::apps::kv) fn retry_blocked(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> bool {
        let Some(mut blocked) = conn.blocked.take() else { return true };
        let unblocked = self.blocking.unblocked.get(&conn.id).copied();
        self.blocking.unregister(conn.id, &blocked.keys);
        // Another shard's client that is gone (CLIENT KILL, QUIT: it left
        // the exchange before the kill was answered) takes nothing; its
        // shard drops the reply and closes this private link.
        let gone = conn.listener == crate::apps::kv::LISTENER_LINK_IN
            && self.across.as_ref().is_some_and(|exchange| !exchange.is_connected(conn.id));
        if gone {
            blocked.args.clear(buffers);
            conn.encoder.null_array(out.bytes());
            return true;
        }
        if unblocked == Some(true) {
            blocked.args.clear(buffers);
            conn.encoder.error(out.bytes(), "UNBLOCKED client unblocked via CLIENT UNBLOCK");
            return true;
        }
        if unblocked == Some(false) || blocked.deadline.is_some_and(|d| d <= Instant::now()) {
            blocked.args.clear(buffers);
            conn.encoder.null_array(out.bytes());
            return true;
        }
        if blocked.kind == KeyType::Stream
            && blocked.args.bytes(pool, 0).eq_ignore_ascii_case(b"xreadgroup")
            && !self.every_key_holds(pool, &blocked)
        {
            // Redis 7.0: a group reader whose stream is deleted (or
            // replaced by another type) is released with an error.
            blocked.args.clear(buffers);
            conn.encoder.error(out.bytes(), "UNBLOCKED the stream key no longer exists");
            return true;
        }
        // While a script is busy on another shard (BUSY on this main port)
        // it waits, as one Redis serves it after the script: the tick wakes
        // it once no shard is busy.
        let busy = self.busy_elsewhere(conn).is_some();
        if busy {
            self.blocking.after_busy.push(conn.token);
        }
        if busy || (!blocked.written_elsewhere() && !self.any_key_holds(pool, &blocked)) {
            // Woken for nothing it can take (or not now): parked again, as
            // it was.
            let waits = (blocked.deadline, blocked.elsewhere.as_ref());
            self.blocking.register((conn.id, conn.token), &blocked.keys, waits, blocked.arrived_ns);
            conn.blocked = Some(blocked);
            return false;
        }
        conn.args = blocked.args;
        // Parked again, it keeps its place in line.
        conn.arrived_ns = Some(blocked.arrived_ns);
        // The command runs as if it had just arrived; its deadline stays.
        self.retrying_blocked = true;
        self.execute(pool, buffers, conn, out);
        self.retrying_blocked = false;
        if let Some(request) = &mut conn.block_request {
            request.deadline = blocked.deadline;
            self.park(conn);
            return false;
        }
        conn.arrived_ns = None;
        conn.args.clear(buffers);
        true
    }

    /// Whether every one of a parked command's keys holds its type.
    fn every_key_holds(&self, pool: &Pool, blocked: &Blocked) -> bool {
        let now = crate::store::db::now_ms();
        blocked.keys.iter().all(|id| {
            let db = self.store.physical_db(id[0]);
            self.store.key_type(pool, db, &id[1..], now).ok().flatten() == Some(blocked.kind)
        })
    }

    /// Whether one of a parked command's keys holds the type it pops.
    fn any_key_holds(&self, pool: &Pool, blocked: &Blocked) -> bool {
        let now = crate::store::db::now_ms();
        blocked.keys.iter().any(|id| {
            let db = self.store.physical_db(id[0]);
            self.store.key_type(pool, db, &id[1..], now).ok().flatten() == Some(blocked.kind)
        })
    }

    /// Wakes parked connections (`App::take_wakeups`), each once.
    fn wake_parked(&mut self, tokens: impl IntoIterator<Item = ConnToken>) {
        for token in tokens {
            if !self.pubsub.wake.contains(&token) {
                self.pubsub.wake.push(token);
            }
        }
    }

    /// A write touched `key` of logical database `logical`: the
    /// connections parked on it are woken, in arrival order. If the key
    /// now holds what a pop takes, the command's connection waits for them
    /// to be served (`Blocking::woken`).
    pub(in crate::apps::kv) fn wake_blocked(&mut self, ctx: &Ctx<'_>, key: &[u8]) {
        if self.blocking.is_empty() {
            return;
        }
        let tokens: Vec<ConnToken> = self.blocking.waiting_on(&watch_id(ctx.conn.db, key)).collect();
        if tokens.is_empty() {
            return;
        }
        // (A SET over a key a pop waits on wakes it for nothing: the
        // writer does not wait for that.)
        let kind = self.store.key_type(ctx.pool, ctx.db, key, ctx.now).ok().flatten();
        let takes = matches!(kind, Some(KeyType::List | KeyType::ZSet | KeyType::Stream));
        self.blocking.woken |= takes;
        // Not during a script: its parked clients are served after it
        // (`deferred_wakes`), as in Redis; a paused script must not be
        // served again and again within one pass of the event loop.
        self.blocking.wake_now |= takes && !self.scripting.running && self.scripting.paused.is_none();
        self.wake_parked(tokens);
    }

    /// `App::nudged`: the parked connections one of whose keys another
    /// shard wrote are woken (to run their command across shards again).
    pub(in crate::apps::kv) fn wake_written_elsewhere(&mut self) {
        self.wake_parked(self.blocking.written_elsewhere());
    }

    /// Every parked connection is woken (FLUSHDB, FLUSHALL, SWAPDB change
    /// keys wholesale): each checks its keys again.
    pub(in crate::apps::kv) fn wake_all_blocked(&mut self) {
        self.wake_parked(self.blocking.all());
    }

    /// The tick: parked connections whose timeout passed are woken (to
    /// answer it).
    pub(in crate::apps::kv) fn wake_timed_out(&mut self) {
        if self.blocking.is_empty() {
            return;
        }
        // And those that waited for a script busy on another shard, once
        // none is.
        let me = self.shard_index();
        if !self.blocking.after_busy.is_empty() && self.across.as_ref().is_none_or(|e| e.busy_elsewhere(me).is_none()) {
            let waited = std::mem::take(&mut self.blocking.after_busy);
            self.wake_parked(waited);
        }
        self.wake_parked(self.blocking.expired(Instant::now()));
    }

    /// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the connection was parked
    /// (it answers as if timed out, or with an UNBLOCKED error), else 0.
    pub(in crate::apps::kv) fn client_unblock(&mut self, ctx: &mut Ctx<'_>) {
        let Some(id) = parse_i64(&ctx.arg(2)) else {
            return ctx.error("ERR value is not an integer or out of range");
        };
        let reason = if ctx.argc() > 3 { ctx.conn.args.upper(3) } else { None };
        let error = match reason.as_deref() {
            None | Some(b"TIMEOUT") => false,
            Some(b"ERROR") => true,
            Some(_) => return ctx.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        };
        let Some(&(token, _)) = u64::try_from(id).ok().and_then(|id| self.blocking.conns.get(&id)) else {
            return ctx.int(0);
        };
        self.blocking.unblocked.insert(id as u64, error);
        self.wake_parked([token]);
        ctx.int(1);
    }

    /// The connection goes: if parked, it leaves the lists.
    pub(in crate::apps::kv) fn forget_blocked(&mut self, buffers: &mut Buffers, conn: &mut KvConn) {
        if let Some(mut blocked) = conn.blocked.take() {
            self.blocking.unregister(conn.id, &blocked.keys);
            blocked.args.clear(buffers);
        }
        conn.block_request = None;
    }

    fn cmd_bzpopmin(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.bzpop_generic(ctx, false)
    }

    fn cmd_bzpopmax(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.bzpop_generic(ctx, true)
    }

    /// BZPOPMIN and BZPOPMAX key... timeout: [key, member, score].
    fn bzpop_generic(&mut self, ctx: &mut Ctx<'_>, max: bool) -> Result<(), StoreError> {
        let Some(deadline) = timeout_arg(ctx, ctx.argc() - 1) else { return Ok(()) };
        let keys: Vec<Vec<u8>> = (1..ctx.argc() - 1).map(|i| ctx.arg(i).into_owned()).collect();
        for key in &keys {
            let Ok(found) = self.zset_read(ctx, key)? else { return Ok(()) };
            if let Some(meta) = found {
                let popped = self.zpop(ctx, key, meta, 1, max)?;
                let (member, score) = &popped[0];
                ctx.array(3);
                ctx.bulk(key);
                ctx.bulk(member);
                let enc = ctx.enc();
                enc.double(ctx.out.bytes(), *score);
                return Ok(());
            }
        }
        self.block_or_null(ctx, &keys, deadline, KeyType::ZSet, false);
        Ok(())
    }

    /// BZMPOP timeout numkeys key... MIN|MAX [COUNT n].
    fn cmd_bzmpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_mpop(ctx, 2, [b"MIN", b"MAX"])? else { return Ok(()) };
        let Some(deadline) = timeout_arg(ctx, 1) else { return Ok(()) };
        if self.zmpop_first(ctx, &request)? {
            return Ok(());
        }
        self.block_or_null(ctx, &request.keys, deadline, KeyType::ZSet, false);
        Ok(())
    }

    fn cmd_blpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.blpop_generic(ctx, false)
    }

    fn cmd_brpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.blpop_generic(ctx, true)
    }

    /// BLPOP and BRPOP key... timeout: [key, element].
    fn blpop_generic(&mut self, ctx: &mut Ctx<'_>, right: bool) -> Result<(), StoreError> {
        let Some(deadline) = timeout_arg(ctx, ctx.argc() - 1) else { return Ok(()) };
        let keys: Vec<Vec<u8>> = (1..ctx.argc() - 1).map(|i| ctx.arg(i).into_owned()).collect();
        for key in &keys {
            let Ok(found) = self.list_read(ctx, key)? else { return Ok(()) };
            if let Some(meta) = found {
                let mut taken = self.list_pop(ctx, key, meta, 1, right)?;
                ctx.array(2);
                ctx.bulk(key);
                self.reply_taken(ctx, taken.pop().expect("a non-empty list"));
                return Ok(());
            }
        }
        self.block_or_null(ctx, &keys, deadline, KeyType::List, false);
        Ok(())
    }

    /// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
    fn cmd_blmove(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let from = crate::apps::kv::ops::parse_end(ctx.conn.args.upper(3));
        let ends = from.and_then(|from| Ok((from, crate::apps::kv::ops::parse_end(ctx.conn.args.upper(4))?)));
        let (from_right, to_right) = match ends {
            Ok(ends) => ends,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        self.blmove_generic(ctx, from_right, to_right, 5)
    }

    /// BRPOPLPUSH source destination timeout.
    fn cmd_brpoplpush(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.blmove_generic(ctx, true, false, 3)
    }

    fn blmove_generic(
        &mut self,
        ctx: &mut Ctx<'_>,
        from_right: bool,
        to_right: bool,
        timeout_at: usize,
    ) -> Result<(), StoreError> {
        let Some(deadline) = timeout_arg(ctx, timeout_at) else { return Ok(()) };
        if !self.lmove_generic(ctx, from_right, to_right)? {
            let src = ctx.arg(1).into_owned();
            self.block_or_null(ctx, &[src], deadline, KeyType::List, true);
        }
        Ok(())
    }

    /// BLMPOP timeout numkeys key... LEFT|RIGHT [COUNT n].
    fn cmd_blmpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_mpop(ctx, 2, [b"LEFT", b"RIGHT"])? else { return Ok(()) };
        let Some(deadline) = timeout_arg(ctx, 1) else { return Ok(()) };
        if self.lmpop_first(ctx, &request)? {
            return Ok(());
        }
        self.block_or_null(ctx, &request.keys, deadline, KeyType::List, false);
        Ok(())
    }
}

/// A blocking pop's shape, for running it across shards: where its
/// timeout is, what type it pops, and whether only its first key (the
/// source of BLMOVE and BRPOPLPUSH) is waited on.
pub(in crate::apps::kv) struct PopShape {
    timeout_at: usize,
    kind: KeyType,
    source_only: bool,
}

/// Whether command `name` (lower case) is a blocking pop that runs across
/// shards (XREAD and XREADGROUP with BLOCK do not).
pub(in crate::apps::kv) fn pops_across(name: &str) -> bool {
    matches!(name, "blpop" | "brpop" | "bzpopmin" | "bzpopmax" | "blmpop" | "bzmpop" | "blmove" | "brpoplpush")
}

/// The shape of blocking pop `args` (name first), if `pops_across`.
pub(in crate::apps::kv) fn pop_shape(args: &[Vec<u8>]) -> Option<PopShape> {
    let last = args.len().checked_sub(1)?;
    let (timeout_at, kind, source_only) = match &args.first()?.to_ascii_lowercase()[..] {
        b"blpop" | b"brpop" => (last, KeyType::List, false),
        b"bzpopmin" | b"bzpopmax" => (last, KeyType::ZSet, false),
        b"blmpop" => (1, KeyType::List, false),
        b"bzmpop" => (1, KeyType::ZSet, false),
        b"blmove" => (5, KeyType::List, true),
        b"brpoplpush" => (3, KeyType::List, true),
        _ => return None,
    };
    (timeout_at <= last).then_some(PopShape { timeout_at, kind, source_only })
}

impl KvServer {
    /// A blocking pop across shards (`across.rs`), before it runs: its
    /// deadline. Err: the timeout's error, already replied.
    pub(in crate::apps::kv) fn pop_across_deadline(
        ctx: &mut Ctx<'_>,
        shape: &PopShape,
        args: &[Vec<u8>],
    ) -> Result<Option<Instant>, ()> {
        parse_timeout(&args[shape.timeout_at]).map_err(|why| ctx.error(why))
    }

    /// A blocking pop across shards found nothing (its shards still
    /// parked in `session`): each other shard watches the pop's keys there
    /// and wakes this one when one is written; the connection is then
    /// parked on its keys here and on that flag (`park`), and runs the pop
    /// across shards again when either is written.
    pub(in crate::apps::kv) fn park_across(
        &mut self,
        ctx: &mut Ctx<'_>,
        session: &crate::apps::kv::session::Session,
        (shape, deadline): (&PopShape, Option<Instant>),
        (args, keys): (&[Vec<u8>], &[(usize, u16)]),
    ) {
        let shards = self.config.settings.cluster.as_ref().map_or(1, |view| view.shards);
        let waited = if shape.source_only { &keys[..1] } else { keys };
        let mut here = Vec::new();
        let mut elsewhere: std::collections::BTreeMap<u16, Vec<Vec<u8>>> = Default::default();
        for &(i, _) in waited {
            let shard = crate::apps::kv::cluster::owner(crate::apps::kv::cluster::key_slot(&args[i]), shards);
            match shard == session.me {
                true => here.push(ctx.watch_id(&args[i])),
                false => elsewhere.entry(shard).or_default().push(ctx.watch_id(&args[i])),
            }
        }
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for (shard, keys) in elsewhere {
            let wake = (std::sync::Arc::downgrade(&flag), Some(session.me));
            session.exchange.watch_on(shard, keys, wake);
        }
        ctx.conn.block_request = Some(BlockRequest { keys: here, deadline, kind: shape.kind, elsewhere: Some(flag) });
    }
}

/// The timeout at argument `at`; None once its error was replied.
fn timeout_arg(ctx: &mut Ctx<'_>, at: usize) -> Option<Option<Instant>> {
    match parse_timeout(&ctx.arg(at)) {
        Ok(deadline) => Some(deadline),
        Err(why) => {
            ctx.error(why);
            None
        }
    }
}

/// The request of ZMPOP, BZMPOP, LMPOP and BLMPOP.
pub(in crate::apps::kv) struct MpopRequest {
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    /// MAX or RIGHT: pop from the end of the order.
    pub(in crate::apps::kv) last: bool,
    pub(in crate::apps::kv) count: usize,
}

impl KvServer {
    /// Parses `numkeys key... MIN|MAX [COUNT n]` from argument `at` (the
    /// two `ends` words, MIN and MAX or LEFT and RIGHT); None once an
    /// error was replied.
    pub(in crate::apps::kv) fn parse_mpop(
        &self,
        ctx: &mut Ctx<'_>,
        at: usize,
        ends: [&[u8]; 2],
    ) -> Result<Option<MpopRequest>, StoreError> {
        match mpop_request(ctx, at, ends) {
            Ok(request) => Ok(Some(request)),
            Err(why) => {
                ctx.error(why);
                Ok(None)
            }
        }
    }
}

/// `parse_mpop`'s work. Err: the error reply.
fn mpop_request(ctx: &Ctx<'_>, at: usize, ends: [&[u8]; 2]) -> Result<MpopRequest, &'static str> {
    let numkeys = match parse_i64(&ctx.arg(at)) {
        Some(n) if n > 0 && (n as usize) < ctx.argc() - at - 1 => n as usize,
        Some(n) if n > 0 => return Err(SYNTAX),
        // Redis answers this for anything but a positive integer.
        Some(_) | None => return Err("ERR numkeys should be greater than 0"),
    };
    let at_where = at + 1 + numkeys;
    let last = match ctx.conn.args.upper(at_where) {
        Some(word) if word == ends[0] => false,
        Some(word) if word == ends[1] => true,
        _ => return Err(SYNTAX),
    };
    let rest = ctx.argc() - at_where - 1;
    let option = if rest > 0 { ctx.conn.args.upper(at_where + 1) } else { None };
    let count = match (rest, option.as_deref()) {
        (0, _) => 1,
        (2, Some(b"COUNT")) => match parse_i64(&ctx.arg(at_where + 2)) {
            Some(n) if n > 0 => n as usize,
            _ => return Err("ERR count should be greater than 0"),
        },
        _ => return Err(SYNTAX),
    };
    let keys = (at + 1..at_where).map(|i| ctx.arg(i).into_owned()).collect();
    Ok(MpopRequest { keys, last, count })
}
