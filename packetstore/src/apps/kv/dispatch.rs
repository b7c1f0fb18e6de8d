//! The command table and the Redis-protocol path: parsing a connection's
//! requests, finding each command (its family's table in `cmd/`),
//! checking arity, authentication and refused transactions, answering
//! unknown commands, and running the handler with panics caught.
//!
//! Adding a command family means adding a file to `cmd/` with its
//! `COMMANDS` table and one entry in `COMMANDS` here, nothing else.
//!
//! Invariant: a handler that panics answers its client with an error and
//! the server goes on, unless the store was caught between its log and its
//! tree (`Store::is_consistent`), in which case the process stops and
//! recovery replays the log.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::apps::kv::cmd;
use crate::apps::kv::cmd::multi::{runs_in_multi, MULTI_BYTES_MAX, MULTI_COMMANDS_MAX};
use crate::apps::kv::cmd::pubsub::allowed_while_subscribed;
use crate::apps::kv::cmd::scripting::{BUSY_EVAL, BUSY_FUNCTION};
use crate::apps::kv::exchange::Busy;
use crate::apps::kv::kept::client::ReplyMode;
use crate::apps::kv::placement::Placement;
use crate::apps::kv::shard_link::Client;
use crate::apps::kv::span;
use crate::apps::kv::state::{
    CommandEntry, CommandSlot, Commands, Ctx, KvConn, KvServer, OTHER, READ, RESP, SPANNING, UNCOUNTED, WRITE,
};
use crate::io::app::{Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::Parsed;
use crate::store::db::now_us;

/// Whether a Redis command name is an HTTP request's first word or a
/// header (Redis's `securityWarningCommand` test).
pub(super) fn is_http_line(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

impl KvServer {
    /// Why a group's node may not run a data command now: a connection
    /// opened on the leader whose node lost the leadership (its reads
    /// would no longer be linearizable); a leader still applying its
    /// predecessors' entries; a follower whose tree holds entries it ran as
    /// leader that are not committed (they may yet be dropped).
    fn replica_refuses(&self, ctx: &Ctx<'_>, entry: &CommandEntry) -> Option<&'static str> {
        let replica = self.replica.as_ref()?;
        if !(entry.has_flag("readonly") || entry.has_flag("write")) {
            return None;
        }
        if replica.is_leader() && replica.is_transferring() {
            return Some(
                "TRYAGAIN this node is handing this shard's leadership to the node that leads the others: try again",
            );
        }
        if replica.is_leader() {
            return (!replica.can_write()).then_some(
                "TRYAGAIN this node was just elected the group's leader and is applying its log: try again",
            );
        }
        if !ctx.conn.reads_here {
            return Some("TRYAGAIN this node is no longer the group's leader: reconnect (to any node)");
        }
        (replica.tree_index() > replica.commit_index())
            .then_some("TRYAGAIN this node holds writes the group has not committed: try again")
    }
}

/// Relayed commands a client may have in flight: its replies, which its
/// output's limit does not see until they are in, stay bounded.
const RELAYED_IN_FLIGHT_MAX: u32 = 64;

/// A write on a node of a group that is not its leader (Redis's reply on
/// a read-only replica).
const READONLY: &str = "READONLY You can't write against a read only replica.";
/// How long a command's wall clock may be derived from the monotonic clock
/// before the wall clock is read again: a step of the wall clock (NTP, an
/// operator) shows in commands within this.
const CLOCK_ANCHOR_MAX: Duration = Duration::from_millis(100);

/// Milliseconds since the epoch at `at` (an instant just read): the
/// anchor's wall clock plus the monotonic time since it, re-anchored once
/// it is `CLOCK_ANCHOR_MAX` old. A command's start reads one clock, not
/// two (issue 36: the reads were 5% of a pipelined GET); the same answer as
/// `store::db::now_ms` to the millisecond, but for a step of the wall clock
/// in the last `CLOCK_ANCHOR_MAX`.
pub(super) fn wall_ms_at(anchor: &mut (Instant, u64), at: Instant) -> u64 {
    let (anchored, anchor_us) = *anchor;
    match at.checked_duration_since(anchored) {
        Some(since) if since < CLOCK_ANCHOR_MAX => (anchor_us + since.as_micros() as u64) / 1000,
        _ => {
            let us = now_us();
            *anchor = (at, us);
            us / 1000
        }
    }
}

impl KvServer {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn serve_resp(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut progress = Progress::default();
        // Messages published to it since it was last served go first;
        // a connection CLIENT KILL closed runs nothing more (once the
        // replies it waits for from other shards are in: its own CLIENT
        // KILL, spanning every shard, is answered first).
        let killed = self.clients.is_killed(conn.id);
        let waits = conn.awaiting > 0 && self.clients.closes_after_replies(conn.id);
        if (killed && !waits) || self.pubsub.deliver(conn.id, conn.subscriptions.is_some(), out) {
            progress.close = true;
            return progress;
        }
        // A paused script runs its next step first; its client's later
        // requests wait for its end.
        if self.runs_paused_script(conn) && !self.resume_script(pool, buffers, conn, out) {
            return progress;
        }
        // A parked connection runs its blocking command again first; while
        // it stays parked, its later requests wait. While a script is
        // paused, it waits for the script's end (it must not see the
        // script's writes half done).
        if conn.blocked.is_some() && self.scripting.paused.is_some() {
            self.scripting.deferred_wakes.push(conn.token);
            return progress;
        }
        if conn.blocked.is_some() {
            self.blocking.woken = false;
            if !self.retry_blocked(pool, buffers, conn, out) {
                return progress;
            }
            // Served (a BLMOVE's push may wake others): as `stops_after`.
            if self.yields_to_woken(&mut progress) {
                return progress;
            }
        }
        // Replies from other shards go out first, in order; a command
        // parsed while they were outstanding runs once they are all in.
        let delivered = self.links.deliver(conn.token, conn.id, out);
        assert!(delivered <= conn.awaiting, "more replies than commands relayed");
        conn.awaiting -= delivered;
        conn.blocked_elsewhere &= conn.awaiting > 0;
        if killed {
            progress.close = conn.awaiting == 0;
            return progress;
        }
        if conn.awaiting > 0 && (conn.held || conn.held_error.is_some()) {
            return progress;
        }
        if let Some(why) = conn.held_error.take() {
            conn.encoder.error(out.bytes(), &format!("ERR {why}"));
            progress.close = true;
            return progress;
        }
        if conn.held {
            // Output full: served again once it drains (no spinning).
            if out.is_full() {
                return progress;
            }
            if !self.store.batch_has_room() {
                progress.more = true;
                return progress;
            }
            conn.held = false;
            progress.close |= self.run_next(pool, buffers, conn, out);
            progress.requests += 1;
            if self.stops_after(buffers, conn, &mut progress) {
                return progress;
            }
        }
        let config = self.receive_config();
        while progress.requests < requests_max && !progress.close && !out.is_full() {
            if !self.store.batch_has_room() {
                progress.more = true;
                break;
            }
            match conn.parser.parse(pool, buffers, &config, stream, &mut conn.args, release) {
                Parsed::Incomplete => break,
                Parsed::Malformed(why) => {
                    conn.parser.abandon(buffers, &mut conn.args);
                    self.stats.errors += 1;
                    self.count_error(b"-ERR");
                    if conn.awaiting > 0 {
                        // Answered, and the connection closed, after the
                        // replies before it.
                        conn.held_error = Some(why.to_string());
                        break;
                    }
                    conn.encoder.error(out.bytes(), &format!("ERR {why}"));
                    progress.close = true;
                }
                Parsed::Command => {
                    if conn.awaiting > 0 && !self.may_run_held(pool, conn) {
                        // It waits, parsed, for the replies before it.
                        conn.held = true;
                        break;
                    }
                    progress.close |= self.run_next(pool, buffers, conn, out);
                    progress.requests += 1;
                    if self.stops_after(buffers, conn, &mut progress) {
                        break;
                    }
                }
            }
        }
        progress
    }

    /// Runs a connection's parsed command (`execute`), noting whether it
    /// woke parked clients (`stops_after`).
    fn run_next(&mut self, pool: &Pool, buffers: &mut Buffers, conn: &mut KvConn, out: &mut OutQueue) -> bool {
        self.blocking.woken = false;
        self.execute(pool, buffers, conn, out)
    }

    /// After a connection's command: parks it if it asked to block, else
    /// frees its arguments. True if the connection's next command waits:
    /// it parked; a paused script answers later; or parked clients it
    /// woke (a push to a key they wait on) are served first, as one Redis
    /// serves them before it runs another command (the event loop serves
    /// them first, `Engine::wake_connections`, then this connection).
    fn stops_after(&mut self, buffers: &mut Buffers, conn: &mut KvConn, progress: &mut Progress) -> bool {
        if conn.block_request.is_some() {
            self.park(conn);
            return true;
        }
        conn.args.clear(buffers);
        self.yields_to_woken(progress) || self.runs_paused_script(conn)
    }

    /// Whether the command just run woke parked clients that can take
    /// something (`Blocking::woken`): then the connection is served again
    /// after them (`Progress::more`).
    fn yields_to_woken(&mut self, progress: &mut Progress) -> bool {
        let woke = std::mem::take(&mut self.blocking.woken);
        progress.more |= woke;
        woke
    }

    /// A private link's line before each command (`shard_link::LINK_CLIENT`
    /// id arrived_ns): its connection takes the client's id and the
    /// command's arrival time. False: another command.
    fn link_client(&mut self, pool: &Pool, conn: &mut KvConn, out: &mut OutQueue) -> bool {
        if conn.args.len() != 3
            || !conn.args.bytes(pool, 0).eq_ignore_ascii_case(crate::apps::kv::shard_link::LINK_CLIENT)
        {
            return false;
        }
        let number = |i: usize| std::str::from_utf8(&conn.args.bytes(pool, i)).ok().and_then(|n| n.parse::<u64>().ok());
        match (number(1), number(2)) {
            (Some(id), Some(arrived_ns)) => {
                conn.id = id;
                conn.arrived_ns = Some(arrived_ns);
                out.push(b"+OK\r\n");
            }
            _ => conn.encoder.error(out.bytes(), "ERR a private link's client line that is not two numbers"),
        }
        true
    }

    /// Whether the parsed command of a client may run now: it has no
    /// reply from another shard outstanding, or it goes to that same shard
    /// (whose link answers in order) and the link has room.
    fn may_run_held(&self, pool: &Pool, conn: &KvConn) -> bool {
        if conn.awaiting == 0 {
            return true;
        }
        conn.awaiting < RELAYED_IN_FLIGHT_MAX
            && self.relay_target(pool, conn) == Some(conn.awaiting_shard)
            && self.links.has_room(conn.awaiting_shard)
    }

    /// Runs the parsed command; true if the connection should close.
    /// A connection whose replies are off (CLIENT REPLY OFF or SKIP) runs
    /// it into a scratch queue that is dropped, except for what Redis
    /// sends regardless: (un)subscribe confirmations and CLIENT REPLY ON.
    pub(super) fn execute(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> bool {
        let before = (self.stats.errors, self.stats.refused_full);
        // A link's command runs for a client of another shard (its id, if
        // it tracks; a private link's client): messages for that client
        // follow the reply on the link.
        let on_link = conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        let own_id = if on_link { self.link_as(pool, conn) } else { None };
        let outer = on_link.then(|| self.tracking.run_for(Some((conn.id, conn.encoder.resp3))));
        // Invalidations for this client wait for its reply (not inside
        // EXEC or a script, whose commands come here too).
        let top = !self.scripting.running && self.tracking_begin(conn.id);
        let mode = conn.reply;
        let (close, kind, failed) = if mode == ReplyMode::On || replies_anyway(pool, conn) {
            self.run_command(pool, buffers, conn, out)
        } else {
            let mut scratch = OutQueue::new();
            let result = self.run_command(pool, buffers, conn, &mut scratch);
            scratch.clear(|buffer| {
                let _ = buffers.release(buffer);
            });
            result
        };
        match conn.reply {
            ReplyMode::Skip if mode == ReplyMode::Skip => conn.reply = ReplyMode::On,
            ReplyMode::SkipNext => conn.reply = ReplyMode::Skip,
            _ => {}
        }
        if top {
            // CLIENT CACHING holds for the next command, or transaction.
            let keeps_caching = conn.multi.is_some() || conn.args.bytes(pool, 0).eq_ignore_ascii_case(b"client");
            self.tracking_end(out, keeps_caching);
        }
        if let Some(outer) = outer {
            self.tracking.run_for(outer);
        }
        if let Some(own_id) = own_id {
            conn.id = own_id;
            self.uncounted = false;
            self.link_reads_here = false;
        }
        if kind != UNCOUNTED {
            self.count_request(RESP, kind, before, failed);
        }
        close
    }

    /// A link's command relayed for a tracking client (`shard_link::LINK_AS`
    /// id caching command...): the prefix goes, the connection takes the
    /// client's id for the command, and the client's CLIENT CACHING choice
    /// holds for it. Returns the connection's own id, to take back after.
    fn link_as(&mut self, pool: &Pool, conn: &mut KvConn) -> Option<u64> {
        use crate::apps::kv::shard_link::LINK_AS;
        if conn.args.len() < 4 || !conn.args.bytes(pool, 0).eq_ignore_ascii_case(LINK_AS) {
            return None;
        }
        use crate::apps::kv::shard_link::{LINK_CACHING, LINK_PART};
        let number = |i: usize| std::str::from_utf8(&conn.args.bytes(pool, i)).ok().and_then(|n| n.parse::<u64>().ok());
        let (Some(id), Some(flags)) = (number(1), number(2)) else { return None };
        conn.args.drop_front(3);
        self.tracking.set_caching(id, flags & u64::from(LINK_CACHING) != 0);
        self.uncounted = flags & u64::from(LINK_PART) != 0;
        self.link_reads_here = flags & u64::from(crate::apps::kv::shard_link::LINK_READONLY) != 0;
        Some(std::mem::replace(&mut conn.id, id))
    }

    /// `execute`'s work; also returns the command's kind and whether its
    /// reply was an error. Counts the command (INFO commandstats), its
    /// error (errorstats), and what CLIENT LIST shows of the connection.
    pub(super) fn run_command(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> (bool, usize, bool) {
        if conn.listener == crate::apps::kv::LISTENER_LINK_IN && self.link_client(pool, conn, out) {
            return (false, UNCOUNTED, false);
        }
        if conn.listener == crate::apps::kv::LISTENER_LINK_IN {
            // Messages from other shards for this one's clients.
            let name = conn.args.bytes(pool, 0);
            let push = name.eq_ignore_ascii_case(crate::apps::kv::cmd::tracking::PUSH);
            let monitor =
                conn.args.len() == 2 && name.eq_ignore_ascii_case(crate::apps::kv::cmd::monitor::MONITOR_LINE);
            let http = conn.args.len() >= 4 && name.eq_ignore_ascii_case(crate::apps::kv::http_relay::HTTP_ON_SHARD);
            drop(name);
            if push || monitor || http {
                let db = self.store.physical_db(conn.db);
                let mut ctx = Ctx { pool, buffers, conn, out, now: 0, db, close: false, failed: false };
                match (push, monitor, ctx.conn.args.refused.clone()) {
                    (true, _, _) => self.tracking_push(&mut ctx),
                    // A line the link could not take (too long, the pool
                    // nearly full) is not shown; the monitors go on.
                    (_, true, Some(why)) => {
                        tracing::warn!("a MONITOR line from another shard was dropped: {why}");
                        ctx.ok();
                    }
                    (_, true, None) => self.monitor_line(&mut ctx),
                    // The client hears 503 (`http_relay::response_of_reply`).
                    (_, _, Some(why)) => ctx.error(&format!("ERR the request was not taken: {why}")),
                    _ => match self.link_refuses(true) {
                        Some(why) => ctx.error(&why),
                        None => self.http_for_shard_guarded(&mut ctx),
                    },
                }
                // A relayed HTTP request is counted where it arrived.
                return (false, UNCOUNTED, false);
            }
        }
        self.stats.commands += u64::from(!self.uncounted);
        let found = self.command_index.find_slot(&conn.args.bytes(pool, 0));
        let entry = found.map(|(_, entry)| entry);
        let kind = match entry {
            Some(entry) if entry.has_flag("write") => WRITE,
            Some(entry) if entry.has_flag("readonly") => READ,
            _ => OTHER,
        };
        let on_link = conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        if let Some(why) = on_link.then(|| self.link_refuses(kind != OTHER)).flatten() {
            let db = self.store.physical_db(conn.db);
            let mut ctx = Ctx { pool, buffers, conn, out, now: 0, db, close: false, failed: false };
            ctx.error(&why);
            return (false, kind, true);
        }
        let start = out.bytes().len();
        let started = Instant::now();
        let now = wall_ms_at(&mut self.clock_anchor, started);
        let db = self.store.physical_db(conn.db);
        let mut ctx = Ctx { pool, buffers, conn, out, now, db, close: false, failed: false };
        let outcome = self.run_entry(&mut ctx, entry, started);
        // A part of a spanning command after its first is not the client's
        // call: the first part counts it.
        let counted = !self.uncounted;
        if ctx.failed && counted {
            let reply = &ctx.out.bytes()[start..];
            self.count_error(reply);
        }
        if let (Some((slot, entry)), Outcome::Ran(took), true) = (found, outcome, counted) {
            self.slowlog_note(&ctx, entry.name, took.as_micros() as u64);
            self.latency_note(&ctx, slot, took);
        }
        if let Some((slot, entry)) = found {
            if counted {
                self.count_call(slot, outcome, ctx.failed);
            }
            self.clients.observe(ctx.conn, entry.name, started);
        }
        if outcome == Outcome::Relayed && counted {
            // Counted by the shard that runs it (as its call, request and
            // result): once for the process, as one Redis counts it.
            self.stats.commands -= 1;
            return (ctx.close, UNCOUNTED, ctx.failed);
        }
        let kind = if outcome == Outcome::Queued { OTHER } else { kind };
        (ctx.close, kind, ctx.failed)
    }

    /// Checks and runs the command found (`entry`) in `ctx`; `started`:
    /// when it began (its checks are timed with its handler).
    fn run_entry(&mut self, ctx: &mut Ctx<'_>, entry: Option<&'static CommandEntry>, started: Instant) -> Outcome {
        if entry.is_none() && is_http_line(&ctx.arg(0)) {
            self.warn_cross_protocol(ctx);
            self.stats.errors += 1;
            ctx.close = true;
            ctx.failed = true;
            return Outcome::Rejected;
        }
        if let Err(why) = self.check_command(ctx, entry) {
            // A command refused while queueing aborts the transaction.
            if let Some(multi) = &mut ctx.conn.multi {
                multi.aborted = true;
            }
            ctx.error(&why);
            return Outcome::Rejected;
        }
        let entry = entry.expect("checked by check_command");
        let busy = match &self.scripting.paused {
            Some(script) => Some(if script.is_eval() { BUSY_EVAL } else { BUSY_FUNCTION }),
            // A script busy on another shard makes the main port busy too.
            None => self.busy_elsewhere(ctx.conn).map(|(_, busy)| match busy {
                Busy::Eval => BUSY_EVAL,
                Busy::Function => BUSY_FUNCTION,
            }),
        };
        if let Some(busy) = busy.filter(|_| !crate::apps::kv::cmd::scripting::allowed_while_busy(entry, ctx)) {
            match ctx.conn.multi.take() {
                // Redis's execCommandAbort: the transaction is dropped.
                Some(mut multi) if entry.name == "exec" => {
                    multi.clear(ctx.buffers);
                    self.unwatch_all(ctx.conn);
                    ctx.error(&format!("EXECABORT Transaction discarded because of: {busy}"));
                }
                Some(mut multi) => {
                    multi.aborted = true;
                    ctx.conn.multi = Some(multi);
                    ctx.error(busy);
                }
                None => ctx.error(busy),
            }
            return Outcome::Rejected;
        }
        if let Some(why) = ctx.conn.args.refused.clone() {
            if let Some(multi) = &mut ctx.conn.multi {
                multi.aborted = true;
            }
            ctx.error(&why);
            self.stats.refused_full += 1;
            return Outcome::Rejected;
        }
        if ctx.conn.subscriptions.is_some() && !ctx.conn.encoder.resp3 && !allowed_while_subscribed(entry.name) {
            ctx.error(&format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in \
                 this context",
                entry.name
            ));
            return Outcome::Rejected;
        }
        // Where it runs: checked after the refusals above (a value refused
        // on arrival must not travel as an empty one), before queueing.
        if let Some(outcome) = self.place(ctx, entry) {
            return outcome;
        }
        if ctx.conn.multi.is_some() && entry.has_flag("no_multi") {
            if let Some(multi) = &mut ctx.conn.multi {
                multi.aborted = true;
            }
            ctx.error("ERR Command not allowed inside a transaction");
            return Outcome::Rejected;
        }
        if ctx.conn.multi.is_some() && !runs_in_multi(entry.name) {
            self.queue(ctx);
            return Outcome::Queued;
        }
        if let Some(why) = self.replica_refuses(ctx, entry) {
            ctx.error(why);
            return Outcome::Rejected;
        }
        if entry.has_flag("write") && !self.writable() {
            ctx.error(READONLY);
            return Outcome::Rejected;
        }
        if !entry.has_flag("loading") && self.replica.as_ref().is_some_and(|r| r.is_loading()) {
            ctx.error("LOADING packetstore is loading a snapshot from the group's leader");
            return Outcome::Rejected;
        }
        self.monitor_before(ctx, entry);
        let reply_from = ctx.out.bytes().len();
        self.run_handler(ctx, entry);
        if !self.scripting.running && !self.scripting.in_exec {
            // A script or SORT that ran with other shards parked (`parked.rs`;
            // inside EXEC, after EXEC).
            self.end_parked(ctx, reply_from);
        }
        self.tracking_remember(ctx, entry);
        self.monitor_after(ctx, entry);
        Outcome::Ran(started.elapsed())
    }

    /// Runs `placement`'s decision: None to run here; otherwise the
    /// command was refused (its error answered) or relayed.
    fn place(&mut self, ctx: &mut Ctx<'_>, entry: &CommandEntry) -> Option<Outcome> {
        let tracking_itself = entry.name == "client" && ctx.argc() > 1 && ctx.arg(1).eq_ignore_ascii_case(b"tracking");
        match self.placement(ctx, entry) {
            Placement::Here => None,
            Placement::Refused(why) => {
                if let Some(multi) = &mut ctx.conn.multi {
                    multi.aborted = true;
                }
                ctx.error(&why);
                Some(Outcome::Rejected)
            }
            Placement::Relay(shard) => {
                let conn = &*ctx.conn;
                let client = self.client_for_link(conn, tracking_itself);
                let flags = (conn.reply != ReplyMode::On, entry.group == "scripting");
                // Encoded straight onto the link: one copy of the arguments.
                let args: Vec<std::borrow::Cow<'_, [u8]>> = (0..ctx.argc()).map(|i| ctx.arg(i)).collect();
                self.links.send(shard, client, &args, flags);
                drop(args);
                ctx.conn.awaiting += 1;
                ctx.conn.awaiting_shard = shard;
                Some(Outcome::Relayed)
            }
            Placement::Private(shard) => {
                let conn = &*ctx.conn;
                let client = self.client_for_link(conn, tracking_itself);
                let args: Vec<std::borrow::Cow<'_, [u8]>> = (0..ctx.argc()).map(|i| ctx.arg(i)).collect();
                let arrived_ns = crate::apps::kv::shard_link::arrival_ns();
                let sent = self.links.send_private(shard, client, &args, (conn.reply != ReplyMode::On, arrived_ns));
                drop(args);
                self.hand_links();
                if let Err(why) = sent {
                    ctx.error(&why);
                    return Some(Outcome::Rejected);
                }
                // No later command goes anywhere before its reply.
                ctx.conn.awaiting += 1;
                ctx.conn.awaiting_shard = SPANNING;
                ctx.conn.blocked_elsewhere = true;
                Some(Outcome::Relayed)
            }
            Placement::Parked(shards) => match self.begin_parked(ctx, &shards) {
                // It runs here; `run_entry` ends the session after it.
                Ok(()) => None,
                Err(why) => {
                    ctx.error(&why);
                    Some(Outcome::Rejected)
                }
            },
            Placement::InSession(shard) => {
                self.call_in_session(ctx, shard);
                Some(Outcome::Relayed)
            }
            Placement::InSessionAcross(across, args, keys) => {
                self.call_across_in_session(ctx, &across, &args, &keys);
                Some(Outcome::Relayed)
            }
            Placement::Grow(shards) => match self.grow_session(ctx, &shards) {
                // Parked now: placed again, in the session.
                Ok(()) => self.place(ctx, entry),
                Err(why) => {
                    ctx.error(&why);
                    Some(Outcome::Rejected)
                }
            },
            Placement::RestartAcross => {
                self.scripting.restart_across = true;
                ctx.error(crate::apps::kv::parked::RESTARTING);
                Some(Outcome::Rejected)
            }
            Placement::Across(across, args, keys) => {
                let started = Instant::now();
                self.run_across(ctx, &across, &args, &keys);
                Some(Outcome::Ran(started.elapsed()))
            }
            Placement::Span(plan) => {
                let conn = &*ctx.conn;
                let client = self.client_for_link(conn, tracking_itself);
                let arg = |arg: &span::Arg| match arg {
                    span::Arg::Index(i) => ctx.arg(*i),
                    span::Arg::Value(value) => std::borrow::Cow::Owned(value.clone()),
                };
                let parts: Vec<(u16, Vec<std::borrow::Cow<'_, [u8]>>)> =
                    plan.parts.iter().map(|part| (part.shard, part.args.iter().map(arg).collect())).collect();
                let home = self.shard_index();
                self.links.send_span((client, home), &parts, plan.merge, conn.reply != ReplyMode::On);
                drop(parts);
                // One merged reply; no later command goes anywhere before it.
                ctx.conn.awaiting += 1;
                ctx.conn.awaiting_shard = SPANNING;
                Some(Outcome::Relayed)
            }
        }
    }

    /// Runs a command's handler, answering its error or a panic's.
    fn run_handler(&mut self, ctx: &mut Ctx<'_>, entry: &'static CommandEntry) {
        self.modified = false;
        // A bug in a handler answers this client with an error instead of
        // stopping the server, unless it struck while the store was
        // between its log and its tree: then only a restart may go on
        // (`guard.rs`).
        let guard = self.guard_begin(ctx.buffers, ctx.out);
        let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (entry.handler)(self, ctx)));
        let handled = match handled {
            Ok(result) => {
                self.guard_end(ctx.buffers, guard);
                result
            }
            Err(panic) => {
                let what = self.guard_caught(ctx.pool, ctx.buffers, ctx.out, guard, panic);
                tracing::error!("command '{}' failed on a bug, answered with an error: {what}", entry.name);
                ctx.error(&format!("ERR internal error in '{}': the command was not run ({what})", entry.name));
                return;
            }
        };
        match handled {
            Ok(()) => {
                if self.modified && !self.watched.is_empty() {
                    self.touch_keys(ctx, entry);
                }
                if self.modified && self.tracking.is_active() {
                    for i in entry.key_positions(ctx.argc()) {
                        let key = ctx.arg(i).into_owned();
                        self.tracking_invalidate(&key, Some(ctx.conn.id));
                    }
                }
                if self.modified && !self.blocking.is_empty() {
                    for i in entry.key_positions(ctx.argc()) {
                        let key = ctx.arg(i).into_owned();
                        self.wake_blocked(ctx, &key);
                    }
                }
            }
            Err(crate::store::db::StoreError::ReadOnly) => {
                self.stats.errors += 1;
                ctx.error(READONLY);
            }
            Err(error) if error.corrupt_value_key().is_some() => {
                self.stats.errors += 1;
                let reply = self.corrupt_reply(ctx, entry, error.corrupt_value_key().expect("checked"));
                ctx.error(&reply);
            }
            Err(error) if error.is_full() => {
                self.stats.refused_full += 1;
                ctx.error(&format!("OOM command not allowed: {error}"));
            }
            Err(error) => {
                self.stats.errors += 1;
                ctx.error(&format!("ERR {error}"));
            }
        }
    }

    /// INFO commandstats: a command refused, queued or run.
    fn count_call(&mut self, slot: CommandSlot, outcome: Outcome, failed: bool) {
        let stats = &mut self.command_stats[usize::from(slot)];
        match outcome {
            Outcome::Rejected => stats.rejected += 1,
            Outcome::Queued | Outcome::Relayed => {}
            Outcome::Ran(took) => {
                // A parked command run again is the same call (Redis counts
                // a blocking command once).
                stats.calls += u64::from(!self.retrying_blocked);
                stats.usec += took.as_micros() as u64;
                stats.failed += u64::from(failed);
            }
        }
    }

    /// INFO errorstats: an error reply, by its prefix (`ERR`, `WRONGTYPE`,
    /// ...), as Redis counts them.
    pub(super) fn count_error(&mut self, reply: &[u8]) {
        let text = reply.strip_prefix(b"-").unwrap_or(b"ERR");
        let end = text.iter().position(|&b| b == b' ' || b == b'\r').unwrap_or(text.len());
        let prefix = String::from_utf8_lossy(&text[..end.min(ERROR_PREFIX_MAX)]).into_owned();
        if self.error_stats.len() < ERROR_KINDS_MAX || self.error_stats.contains_key(&prefix) {
            *self.error_stats.entry(prefix).or_insert(0) += 1;
        }
    }

    /// What must hold before a command runs: it is known, the connection is
    /// authenticated, its arity is right, and no refused transaction is
    /// open. Err: the error to answer (counted).
    pub(super) fn check_command(&mut self, ctx: &mut Ctx<'_>, entry: Option<&CommandEntry>) -> Result<(), String> {
        let Some(entry) = entry else {
            self.stats.errors += 1;
            let mut text =
                format!("ERR unknown command '{}', with args beginning with: ", String::from_utf8_lossy(&ctx.arg(0)));
            for i in 1..ctx.argc().min(4) {
                let _ = write!(text, "'{}' ", String::from_utf8_lossy(&ctx.arg(i)));
            }
            return Err(text);
        };
        if self.config.requirepass.is_some()
            && !ctx.conn.authenticated
            && !entry.has_flag("no_auth")
            && entry.name != "quit"
        {
            return Err("NOAUTH Authentication required.".into());
        }
        if !entry.arity_fits(ctx.argc() as i64) {
            self.stats.errors += 1;
            return Err(format!("ERR wrong number of arguments for '{}' command", entry.name));
        }
        Ok(())
    }

    /// Queues the parsed command in the connection's transaction (its
    /// arguments move, references and all), or aborts the transaction if
    /// its queue is full.
    fn queue(&mut self, ctx: &mut Ctx<'_>) {
        let multi = ctx.conn.multi.as_mut().expect("in a transaction");
        let bytes: u64 = (0..ctx.conn.args.len()).map(|i| ctx.conn.args.arg_len(i)).sum();
        if multi.queued.len() >= MULTI_COMMANDS_MAX || multi.bytes + bytes > MULTI_BYTES_MAX {
            multi.aborted = true;
            multi.clear(ctx.buffers);
            ctx.error(&format!(
                "ERR a transaction queues at most {MULTI_COMMANDS_MAX} commands and {MULTI_BYTES_MAX} bytes \
                 of arguments: this one is aborted"
            ));
            return;
        }
        if multi.aborted {
            // No point in keeping what EXEC will refuse.
            ctx.out.push(b"+QUEUED\r\n");
            return;
        }
        multi.bytes += bytes;
        multi.queued.push(std::mem::take(&mut ctx.conn.args));
        ctx.out.push(b"+QUEUED\r\n");
    }

    /// A command that wrote touches its key arguments: connections
    /// watching them fail their EXEC.
    fn touch_keys(&mut self, ctx: &mut Ctx<'_>, entry: &CommandEntry) {
        for i in entry.key_positions(ctx.argc()) {
            let key = ctx.arg(i).into_owned();
            self.touch_watched(ctx.pool, (ctx.conn.db, ctx.db), &key, ctx.now);
        }
    }

    /// The watchers of `key` in logical database `logical` (physical
    /// `db`) fail: it was written.
    pub(super) fn touch_watched(
        &mut self,
        pool: &Pool,
        (logical, db): (u8, crate::store::keyspace::DbId),
        key: &[u8],
        now: u64,
    ) {
        let id = crate::apps::kv::state::watch_id(logical, key);
        if self.watched.contains_key(&id) {
            let exists = self.store.key_type(pool, db, key, now).ok().flatten().is_some();
            self.touch_key(&id, exists);
        }
    }

    /// Redis's rule against cross-protocol scripting: a Redis connection
    /// whose command is `POST` or `Host:` is a web page talking HTTP to a
    /// local server; it is closed without a reply. Logged at most once a
    /// minute.
    pub(super) fn warn_cross_protocol(&mut self, ctx: &Ctx<'_>) {
        self.stats.cross_protocol += 1;
        let now = std::time::Instant::now();
        if self.cross_protocol_logged.is_some_and(|at| now.duration_since(at) < CROSS_PROTOCOL_LOG_INTERVAL) {
            return;
        }
        self.cross_protocol_logged = Some(now);
        tracing::warn!(
            "possible security attack: a client (connection {}) sent '{}' to the Redis port, an HTTP request \
             (cross-protocol scripting); connection closed ({} so far; logged at most once a minute)",
            ctx.conn.id,
            String::from_utf8_lossy(&ctx.arg(0)),
            self.stats.cross_protocol
        );
    }
}

/// Error prefixes counted at most this long, and at most this many kinds
/// (Redis's errorstats stop at 128 kinds too).
const ERROR_PREFIX_MAX: usize = 64;

const ERROR_KINDS_MAX: usize = 128;

/// What became of a command (INFO commandstats).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Rejected,
    Queued,
    /// Run by another shard (which counts it).
    Relayed,
    Ran(Duration),
}

/// Whether a command's replies go out even while the connection's replies
/// are off: (un)subscribe confirmations (pushes, in Redis), CLIENT REPLY
/// ON and RESET (which turn replies back on before answering).
fn replies_anyway(pool: &Pool, conn: &KvConn) -> bool {
    let name = conn.args.bytes(pool, 0);
    if conn.args.len() == 3 && name.eq_ignore_ascii_case(b"client") {
        return conn.args.upper(1).as_deref() == Some(b"REPLY") && conn.args.upper(2).as_deref() == Some(b"ON");
    }
    allowed_while_subscribed(&String::from_utf8_lossy(&name).to_ascii_lowercase())
        && !name.eq_ignore_ascii_case(b"ping")
        && !name.eq_ignore_ascii_case(b"quit")
}

/// Cross-protocol attempts are logged at most this often.
pub(super) const CROSS_PROTOCOL_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// The command families, each a file of `cmd/` with its table, in
/// COMMAND's order. A new family is a file and one entry here.
pub(super) const COMMANDS: Commands = Commands(&[
    cmd::server::COMMANDS,
    cmd::client::COMMANDS,
    cmd::cluster::COMMANDS,
    cmd::command::COMMANDS,
    cmd::config::COMMANDS,
    cmd::slowlog::COMMANDS,
    cmd::monitor::COMMANDS,
    cmd::latency::COMMANDS,
    cmd::durability::COMMANDS,
    cmd::group::COMMANDS,
    cmd::strings::COMMANDS,
    cmd::bits::COMMANDS,
    cmd::hyperloglog::COMMANDS,
    cmd::keys::COMMANDS,
    cmd::expire::COMMANDS,
    cmd::databases::COMMANDS,
    cmd::hashes::COMMANDS,
    cmd::lists::COMMANDS,
    cmd::sets::COMMANDS,
    cmd::zsets::COMMANDS,
    cmd::geo::COMMANDS,
    cmd::sort::COMMANDS,
    cmd::streams::COMMANDS,
    cmd::stream_groups::COMMANDS,
    cmd::stream_pending::COMMANDS,
    cmd::dump::COMMANDS,
    cmd::blocking::COMMANDS,
    cmd::multi::COMMANDS,
    cmd::pubsub::COMMANDS,
    cmd::object::COMMANDS,
    cmd::scripting::COMMANDS,
    cmd::functions::COMMANDS,
]);

impl KvServer {
    /// Who a command relayed for `conn` is for, in its database and
    /// protocol; if it tracks, its id and CLIENT CACHING choice go with the
    /// command (`shard_link::LINK_AS`), as they do with CLIENT TRACKING
    /// itself, which runs on every shard.
    fn client_for_link(&self, conn: &KvConn, tracking_itself: bool) -> Client {
        use crate::apps::kv::shard_link::{LINK_CACHING, LINK_READONLY};
        let caching = if self.tracking.caching(conn.id) { LINK_CACHING } else { 0 };
        // A replicated node's READONLY client may read another shard's
        // keys where they are, even on a follower (`link_refuses`).
        let reads_here = self.replica.is_some() && conn.reads_here;
        // The client's id goes with the command while a client tracks, or
        // a MONITOR anywhere shows the command with its client's address.
        let tag = (tracking_itself || self.tracking.tracks(conn.id) || self.monitored()).then_some(caching);
        let tag = if reads_here { Some(tag.unwrap_or(0) | LINK_READONLY) } else { tag };
        Client { token: conn.token, id: conn.id, db: conn.db, resp3: conn.encoder.resp3, tag }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_the_wall_clock_from_its_anchor() {
        let mut anchor = (Instant::now(), now_us());
        let at = Instant::now();
        let derived = wall_ms_at(&mut anchor, at);
        let read = crate::store::db::now_ms();
        assert!(derived.abs_diff(read) <= 1, "derived {derived} ms, read {read} ms");
        // An anchor older than the limit is replaced, and a wrong one is
        // corrected at once.
        let stale = Instant::now() - CLOCK_ANCHOR_MAX;
        let mut wrong = (stale, 0);
        let now = Instant::now();
        assert!(wall_ms_at(&mut wrong, now) >= read);
        assert_eq!(wrong.0, now);
        // Within the limit, the monotonic time since the anchor counts.
        let mut fixed = (now, 5_000_000);
        assert_eq!(wall_ms_at(&mut fixed, now + Duration::from_millis(42)), 5_042);
    }

    #[test]
    fn a_flag_kept_as_a_bit_answers_as_the_string_would() {
        let flags = ["write", "readonly", "no_multi", "loading", "admin", "fast", "noscript"];
        let mut seen = [0usize; 7];
        for entry in COMMANDS.iter() {
            for (i, flag) in flags.iter().enumerate() {
                let has = entry.flags.contains(flag);
                assert_eq!(entry.has_flag(flag), has, "{} {flag}", entry.name);
                seen[i] += usize::from(has);
            }
        }
        // Each flag is held by some command and lacked by another, so both
        // answers were checked.
        assert!(seen.iter().all(|&n| n > 0 && n < COMMANDS.count()), "{seen:?}");
    }
}
