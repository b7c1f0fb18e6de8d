//! Blocking pops: BZPOPMIN, BZPOPMAX, BZMPOP (the lists' BLPOP family
//! will use the same machinery), and the machinery itself: a connection
//! whose pop finds nothing is parked with its command, its keys are
//! registered, and a write to one of them wakes it (`App::take_wakeups`)
//! to run the command again; the tick wakes it when its timeout passes.
//!
//! The pop that serves a blocked client is an ordinary write: logged,
//! applied and replied to after the same commit as any other, so it is
//! durable before its reply leaves, and the writer's reply too.
//!
//! Invariants: a parked connection runs nothing else until it is served
//! or times out (its later requests wait in its stream); it is listed
//! under each of its keys and in `blocked_conns`, and leaves all of them
//! when it is woken, times out or goes; inside MULTI/EXEC (a store group)
//! a pop never blocks: it answers at once, as Redis's does.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::apps::kv::ops::{parse_i64, SYNTAX};
use crate::apps::kv::state::{cmd, watch_id, CommandEntry, Ctx, KvConn, KvServer};
use crate::io::app::ConnToken;
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::Args;
use crate::store::db::StoreError;
use crate::store::keyspace::KeyType;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Pops the member of lowest score of the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzpopmin),
    cmd("bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Pops the member of highest score of the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzpopmax),
    cmd("bzmpop", -5, &["write", "blocking"], (0, 0, 0), "sorted_set", "Pops members from the first non-empty sorted set, waiting up to a timeout.", KvServer::cmd_bzmpop),
];

/// The longest timeout a blocking command takes (Redis bounds it by what
/// its clock holds; a year is as good as forever here).
const TIMEOUT_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// What a handler asks for when its pop finds nothing: park the
/// connection on `keys` (watch ids) until `deadline` (None: forever).
pub(in crate::apps::kv) struct BlockRequest {
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) deadline: Option<Instant>,
    /// The type the pop takes from: a woken client whose keys hold none
    /// of it (deleted again, or replaced by another type) stays parked.
    pub(in crate::apps::kv) kind: KeyType,
}

/// A parked connection's command.
pub(in crate::apps::kv) struct Blocked {
    pub(in crate::apps::kv) args: Args,
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) deadline: Option<Instant>,
    pub(in crate::apps::kv) kind: KeyType,
}

/// Parked connections by key, in arrival order, and their deadlines.
#[derive(Default)]
pub(in crate::apps::kv) struct Blocking {
    by_key: std::collections::HashMap<Vec<u8>, VecDeque<(u64, ConnToken)>>,
    conns: std::collections::HashMap<u64, (ConnToken, Option<Instant>)>,
}

impl Blocking {
    /// The number of parked connections (INFO's blocked_clients).
    pub(in crate::apps::kv) fn count(&self) -> usize {
        self.conns.len()
    }

    fn register(&mut self, conn: u64, token: ConnToken, keys: &[Vec<u8>], deadline: Option<Instant>) {
        for key in keys {
            self.by_key.entry(key.clone()).or_default().push_back((conn, token));
        }
        self.conns.insert(conn, (token, deadline));
    }

    fn unregister(&mut self, conn: u64, keys: &[Vec<u8>]) {
        for key in keys {
            if let Some(queue) = self.by_key.get_mut(key) {
                queue.retain(|(id, _)| *id != conn);
                if queue.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
        self.conns.remove(&conn);
    }

    /// The connections parked on `key`, in arrival order.
    pub(in crate::apps::kv) fn waiting_on(&self, key: &[u8]) -> impl Iterator<Item = ConnToken> + '_ {
        self.by_key.get(key).into_iter().flat_map(|queue| queue.iter().map(|(_, token)| *token))
    }

    pub(in crate::apps::kv) fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// The parked connections whose deadline has passed.
    pub(in crate::apps::kv) fn expired(&self, now: Instant) -> Vec<ConnToken> {
        self.conns.values().filter(|(_, deadline)| deadline.is_some_and(|d| d <= now)).map(|(t, _)| *t).collect()
    }
}

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
    /// transaction), or answers the timeout's reply at once (inside one).
    pub(in crate::apps::kv) fn block_or_null(
        &mut self,
        ctx: &mut Ctx<'_>,
        keys: Vec<Vec<u8>>,
        deadline: Option<Instant>,
        kind: KeyType,
    ) {
        if self.store.in_group() {
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
            return;
        }
        ctx.conn.block_request = Some(BlockRequest { keys, deadline, kind });
    }

    /// After a command asked to block: keeps its arguments and parks the
    /// connection.
    pub(in crate::apps::kv) fn park(&mut self, conn: &mut KvConn) {
        let request = conn.block_request.take().expect("a block request");
        let args = std::mem::take(&mut conn.args);
        self.blocking.register(conn.id, conn.token, &request.keys, request.deadline);
        conn.blocked = Some(Blocked { args, keys: request.keys, deadline: request.deadline, kind: request.kind });
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
        self.blocking.unregister(conn.id, &blocked.keys);
        if blocked.deadline.is_some_and(|d| d <= Instant::now()) {
            blocked.args.clear(buffers);
            conn.encoder.null_array(out.bytes());
            return true;
        }
        if !self.any_key_holds(pool, &blocked) {
            // Woken for nothing it can take: parked again, as it was.
            self.blocking.register(conn.id, conn.token, &blocked.keys, blocked.deadline);
            conn.blocked = Some(blocked);
            return false;
        }
        conn.args = blocked.args;
        // The command runs as if it had just arrived; its deadline stays.
        self.execute(pool, buffers, conn, out);
        if let Some(request) = &mut conn.block_request {
            request.deadline = blocked.deadline;
            self.park(conn);
            return false;
        }
        conn.args.clear(buffers);
        true
    }

    /// Whether one of a parked command's keys holds the type it pops.
    fn any_key_holds(&self, pool: &Pool, blocked: &Blocked) -> bool {
        let now = crate::store::db::now_ms();
        blocked.keys.iter().any(|id| {
            let db = self.store.physical_db(id[0]);
            self.store.key_type(pool, db, &id[1..], now).ok().flatten() == Some(blocked.kind)
        })
    }

    /// A write touched `key` of logical database `logical`: the
    /// connections parked on it are woken, in arrival order.
    pub(in crate::apps::kv) fn wake_blocked(&mut self, logical: u8, key: &[u8]) {
        if self.blocking.is_empty() {
            return;
        }
        let tokens: Vec<ConnToken> = self.blocking.waiting_on(&watch_id(logical, key)).collect();
        for token in tokens {
            if !self.pubsub.wake.contains(&token) {
                self.pubsub.wake.push(token);
            }
        }
    }

    /// The tick: parked connections whose timeout passed are woken (to
    /// answer it).
    pub(in crate::apps::kv) fn wake_timed_out(&mut self) {
        if self.blocking.is_empty() {
            return;
        }
        for token in self.blocking.expired(Instant::now()) {
            if !self.pubsub.wake.contains(&token) {
                self.pubsub.wake.push(token);
            }
        }
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
        let deadline = match parse_timeout(&ctx.arg(ctx.argc() - 1)) {
            Ok(deadline) => deadline,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
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
        let ids = keys.iter().map(|key| ctx.watch_id(key)).collect();
        self.block_or_null(ctx, ids, deadline, KeyType::ZSet);
        Ok(())
    }

    /// BZMPOP timeout numkeys key... MIN|MAX [COUNT n].
    fn cmd_bzmpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let deadline = match parse_timeout(&ctx.arg(1)) {
            Ok(deadline) => deadline,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let Some(request) = self.parse_mpop(ctx, 2)? else { return Ok(()) };
        if self.zmpop_first(ctx, &request)? {
            return Ok(());
        }
        let ids = request.keys.iter().map(|key| ctx.watch_id(key)).collect();
        self.block_or_null(ctx, ids, deadline, KeyType::ZSet);
        Ok(())
    }
}

/// ZMPOP's and BZMPOP's request.
pub(in crate::apps::kv) struct MpopRequest {
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) max: bool,
    pub(in crate::apps::kv) count: usize,
}

impl KvServer {
    /// Parses `numkeys key... MIN|MAX [COUNT n]` from argument `at`; None
    /// once an error was replied.
    pub(in crate::apps::kv) fn parse_mpop(
        &self,
        ctx: &mut Ctx<'_>,
        at: usize,
    ) -> Result<Option<MpopRequest>, StoreError> {
        match mpop_request(ctx, at) {
            Ok(request) => Ok(Some(request)),
            Err(why) => {
                ctx.error(why);
                Ok(None)
            }
        }
    }
}

/// `parse_mpop`'s work. Err: the error reply.
fn mpop_request(ctx: &Ctx<'_>, at: usize) -> Result<MpopRequest, &'static str> {
    let numkeys = match parse_i64(&ctx.arg(at)) {
        Some(n) if n > 0 && (n as usize) < ctx.argc() - at - 1 => n as usize,
        Some(n) if n > 0 => return Err(SYNTAX),
        // Redis answers this for anything but a positive integer.
        Some(_) | None => return Err("ERR numkeys should be greater than 0"),
    };
    let at_where = at + 1 + numkeys;
    let max = match ctx.conn.args.upper(at_where).as_deref() {
        Some(b"MIN") => false,
        Some(b"MAX") => true,
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
    Ok(MpopRequest { keys, max, count })
}
