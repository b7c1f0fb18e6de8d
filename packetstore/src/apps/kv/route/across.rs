//! Commands across shards, atomic and durable as one (issue 37): on the
//! main port of a sharded server, a command whose keys several shards own
//! (MSET, RENAME, SUNIONSTORE, a DEL of many keys, ...) runs with every
//! shard it touches *parked*: each stops serving anyone else and runs only
//! the parts this command sends it, on its own store, until the command is
//! durable everywhere. No other command sees half of it; a power failure
//! keeps all of it or none (`store/db/txn.rs`).
//!
//! # The protocol (one command, its *coordinator* the shard it arrived on)
//!
//! 1. The coordinator takes the process's one transaction lock
//!    (`Exchange::try_lock`). While it waits it serves parking requests
//!    itself, so two coordinators never wait on each other.
//! 2. It posts `Park` in each other shard's mailbox and writes that shard's
//!    eventfd (`nudge_fd`, polled by its event loop, `App::nudged`). Each
//!    answers once it has opened a group in its store, then waits for
//!    requests only (`take_part`). A shard running a paused script answers
//!    BUSY instead, and the command is refused with nothing done.
//! 3. The command's recipe (`across_plans.rs`) sends `Run` requests: Redis
//!    commands on keys of that shard, run as a client's (on a stand-in
//!    connection); the coordinator's own parts run in place.
//! 4. `Finish`: each shard that wrote closes its group with the marker
//!    (transaction id, the writers) and makes it durable at once; the
//!    others make durable whatever they had pending (a read must not
//!    return what a power failure could take back).
//! 5. Only once every shard answered `Finish` are they released, and the
//!    lock. The reply is then sent.
//!
//! Owns: the mailboxes, the eventfds, the lock and the transaction ids.
//!
//! Invariants: one transaction at a time in the process; a shard releases
//! its part to readers only after every writer's part is durable; a
//! coordinator that unwinds (a bug) releases every parked shard (`Drop`),
//! so a panic never leaves a shard parked forever.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;

pub use crate::apps::kv::exchange::Exchange;
use crate::apps::kv::exchange::{Request, Response};
pub(in crate::apps::kv) use crate::apps::kv::session::{stop_half_way, Session};
use crate::apps::kv::state::{KvConn, KvServer};
use crate::io::app::{App, ConnToken};
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Args, Encoder};
use crate::store::db::TxnMarker;

/// A command across shards on a node of a replicated group: not built yet
/// (each shard's part would commit in its own group; one unit across
/// groups needs a decision record the groups agree on).
pub(in crate::apps::kv) const ACROSS_REPLICATED: &str =
    "CROSSSLOT Keys in request don't hash to the same slot (a replicated group's \
     shards do not yet run one command across shards: give its keys one {hash tag})";

/// Stops the process if dropped while unwinding (a parked shard's bug).
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            stop_half_way("a shard taking part in a command across shards panicked");
        }
    }
}

/// Parks `shards` (none of them parked yet, the coordinator not among
/// them) into `session`, all asked at once; the refusal of one that
/// would not (the others are parked).
pub(in crate::apps::kv) fn park_into(session: &mut Session, shards: &[u16]) -> Option<String> {
    let exchange = session.exchange.clone();
    for &shard in shards {
        exchange.post(shard, Request::Park);
        exchange.nudge(shard);
    }
    let mut refused = None;
    for &shard in shards {
        match exchange.wait_response(shard) {
            Response::Parked(Ok(())) => session.parked.push(shard),
            Response::Parked(Err(why)) => refused = Some(why),
            Response::Gone => refused = Some(format!("ERR shard {shard} is stopping")),
            _ => unreachable!("a shard answers Park with Parked"),
        }
    }
    refused
}

/// A shard's refusal to be parked while its running script takes the
/// transaction lock (`parked.rs` `grow_session`): the coordinator releases
/// everything and begins again.
pub(in crate::apps::kv) const RETRY: &str = "TRYAGAIN a script on another shard is parking shards: try again";

/// A stand-in connection's token: nothing is ever sent to it.
const STAND_IN: ConnToken = ConnToken { slot: u32::MAX, generation: 0 };

/// Whether `conn` is a parked shard's stand-in for a coordinator's client.
pub(in crate::apps::kv) fn is_stand_in(conn: &KvConn) -> bool {
    conn.token == STAND_IN
}

impl KvServer {
    /// Joins the exchange of this process's shards.
    pub fn join_exchange(&mut self, exchange: std::sync::Arc<Exchange>) {
        self.across = Some(exchange);
    }

    /// Hands each other shard the far ends of the private links made for
    /// it (`ShardLinks::handed`); a shard that has stopped gets nothing:
    /// the link closes, and what was sent on it is answered with an error.
    pub(in crate::apps::kv) fn hand_links(&mut self) {
        let handed = std::mem::take(&mut self.links.handed);
        let Some(exchange) = self.across.as_ref() else { return };
        for (shard, far) in handed {
            if exchange.hand_over(shard, far).is_err() {
                tracing::warn!("shard {shard} has stopped: a private link to it closes");
            }
        }
    }

    /// `tick`: idle private links to every other shard, ready.
    pub(in crate::apps::kv) fn keep_links(&mut self) {
        if self.across.is_some() {
            self.links.keep_idle_links(self.shard_index());
            self.hand_links();
        }
    }

    /// `App::nudged`: the links other shards handed this one are adopted
    /// at the end of this turn.
    pub(in crate::apps::kv) fn adopt_handed(&mut self) {
        use std::os::fd::IntoRawFd;
        let Some(exchange) = self.across.as_ref() else { return };
        for fd in exchange.take_handed(self.shard_index()) {
            self.links.adopt.push((fd.into_raw_fd(), crate::apps::kv::shard_link::LISTENER_LINK_IN));
        }
    }

    /// The process's clients and blocked clients (every shard's, when
    /// sharded: a client blocked on another shard's key counts there).
    pub(in crate::apps::kv) fn client_totals(&self) -> (usize, usize) {
        let figures = self.shard_figures();
        use crate::apps::kv::exchange::Figure::{Blocked, Clients};
        (figures[Clients as usize], figures[Blocked as usize])
    }

    /// This shard's `Figure`s, or every shard's added (published first).
    pub(in crate::apps::kv) fn shard_figures(&self) -> [usize; crate::apps::kv::exchange::FIGURES] {
        let (tracking_clients, keys, items) = self.tracking_figures();
        let own = [self.clients.len(), self.blocking.count(), tracking_clients, keys, items];
        let Some(exchange) = self.across.as_ref() else { return own };
        exchange.publish(self.shard_index(), own);
        exchange.totals()
    }

    /// Tells the other shards this shard's clients and whether a script
    /// keeps it busy (`tick`).
    pub(in crate::apps::kv) fn publish_shard_state(&self) {
        let Some(exchange) = self.across.as_ref() else { return };
        self.client_totals();
        let busy = self.scripting.paused.as_ref().map(|script| match script.is_eval() {
            true => crate::apps::kv::exchange::Busy::Eval,
            false => crate::apps::kv::exchange::Busy::Function,
        });
        exchange.set_busy(self.shard_index(), busy);
        let (channels, patterns, _) = self.pubsub.counts();
        exchange.set_listening(self.shard_index(), channels + patterns > 0);
    }

    /// A keyspace notification published here goes to the other shards
    /// whose clients subscribe to anything (a PUBLISH on the link, its
    /// reply dropped): a subscriber hears of every shard's keys.
    pub(in crate::apps::kv) fn publish_elsewhere(&mut self, channel: &[u8], message: &[u8]) {
        let Some(exchange) = self.across.as_ref() else { return };
        for shard in exchange.listening_elsewhere(self.shard_index()) {
            self.links.send_own(shard, &[b"PUBLISH".as_slice(), channel, message]);
        }
    }

    /// The shard busy with a script, if not this one, when `conn` is a
    /// client of the main port (a cluster port's node is busy alone, as
    /// a Redis Cluster node).
    pub(in crate::apps::kv) fn busy_elsewhere(&self, conn: &KvConn) -> Option<(u16, crate::apps::kv::exchange::Busy)> {
        let view = self.config.settings.cluster.as_ref()?;
        if !view.relays(conn.listener) {
            return None;
        }
        self.across.as_ref()?.busy_elsewhere(view.shard)
    }

    /// This shard's index, on a sharded server.
    pub(in crate::apps::kv) fn shard_index(&self) -> u16 {
        self.config.settings.cluster.as_ref().map_or(0, |view| view.shard)
    }

    /// `App::nudged`: a coordinator's `Park` for this shard, if one waits.
    pub(in crate::apps::kv) fn serve_parks(&mut self, pool: &Pool, buffers: &mut Buffers) {
        let Some(exchange) = self.across.clone() else { return };
        let me = self.shard_index();
        while exchange.take_park(me) {
            self.take_part(pool, buffers, &exchange, me);
        }
    }

    /// Parked: runs what the coordinator sends until it releases us.
    fn take_part(&mut self, pool: &Pool, buffers: &mut Buffers, exchange: &Exchange, me: u16) {
        if let Some(why) = self.cannot_take_part(me) {
            exchange.respond(me, Response::Parked(Err(why)));
            return;
        }
        // A bug here must not leave its coordinator waiting forever, nor
        // end this part as a plain group.
        let _abort = AbortOnUnwind;
        self.store.begin_group();
        exchange.respond(me, Response::Parked(Ok(())));
        let mut finished = false;
        loop {
            match exchange.wait_request(me) {
                Request::Run { args, db, resp3, client } => {
                    let bytes = self.run_part(pool, buffers, &args, (db, resp3), client);
                    let (wrote, pending) = (self.store.group_records() > 0, self.store.writes_pending());
                    exchange.respond(me, Response::Reply { bytes, wrote, pending });
                }
                Request::Finish(marker) => {
                    let result = self.finish_part(pool, buffers, marker.as_ref());
                    finished = true;
                    exchange.respond(me, Response::Finished(result));
                }
                Request::Release => {
                    if !finished {
                        assert_eq!(self.store.group_records(), 0, "a shard that wrote is asked to finish");
                        // Nothing written: no record to append, no error.
                        let _ = self.store.end_group(pool, buffers);
                    }
                    return;
                }
                Request::Watch { keys, flag, wake } => {
                    self.watch_for(keys, flag, wake);
                    exchange.respond(me, Response::Reply { bytes: Vec::new(), wrote: false, pending: false });
                }
                Request::Park => unreachable!("a parked shard is not parked again"),
            }
        }
    }

    /// Why this shard cannot take part in a command across shards now
    /// (refused with nothing done): a paused script, or a log too full for
    /// a group (a part refused half way would leave the others' writes).
    fn cannot_take_part(&self, me: u16) -> Option<String> {
        if self.scripting.paused.is_some() {
            return Some(
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.".into(),
            );
        }
        if !self.store.batch_has_room() {
            return Some(format!("TRYAGAIN shard {me}'s log is waiting for a checkpoint: try again"));
        }
        None
    }

    /// Runs one command of a part on a stand-in connection; its reply.
    fn run_part(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        args: &[Vec<u8>],
        (db, resp3): (u8, bool),
        client: u64,
    ) -> Vec<u8> {
        let mut conn: KvConn = App::connect(self, crate::apps::kv::state::LISTENER_HTTP, STAND_IN);
        // It runs for the coordinator's client (whose messages, if it
        // tracks, go to its shard: the stand-in is no link).
        conn.id = client;
        conn.db = db;
        conn.authenticated = true;
        conn.args = Args::from_bytes(args);
        conn.encoder = Encoder { resp3 };
        // Replies come back as bytes, never as pool references.
        let zero_copy_min = std::mem::replace(&mut self.config.zero_copy_min, u64::MAX);
        let mut out = OutQueue::new();
        self.execute(pool, buffers, &mut conn, &mut out);
        self.config.zero_copy_min = zero_copy_min;
        conn.args.clear(buffers);
        std::mem::take(out.bytes())
    }

    /// Closes this shard's part: with the marker and made durable if it
    /// wrote; else whatever is pending made durable.
    fn finish_part(&mut self, pool: &Pool, buffers: &mut Buffers, marker: Option<&TxnMarker>) -> Result<(), String> {
        let result = match marker {
            Some(marker) => self.store.end_group_txn(pool, buffers, marker),
            // (A shard that wrote is in the marker: `across_call` saw its
            // last reply. Only `Session::drop` ends a writer this way.)
            None => self.store.end_group(pool, buffers),
        };
        result.map_err(|e| e.to_string())?;
        if marker.is_some() || self.store.writes_pending() {
            self.store.persist_appended(pool).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Parks `shards` (this one included or not) for a command of
    /// `conn`: Err(the reply) if one cannot take part now.
    pub(in crate::apps::kv) fn across_begin(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        exchange: &std::sync::Arc<Exchange>,
        shards: &BTreeSet<u16>,
        conn: &KvConn,
    ) -> Result<Session, String> {
        if self.replica.is_some() {
            return Err(ACROSS_REPLICATED.to_string());
        }
        loop {
            match self.try_begin(pool, buffers, exchange, shards, conn) {
                // A shard's script is taking the lock (`grow_session`):
                // it goes first, and this command begins again.
                Err(why) if why == RETRY => std::thread::yield_now(),
                begun => return begun,
            }
        }
    }

    /// One try of `across_begin`.
    fn try_begin(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        exchange: &std::sync::Arc<Exchange>,
        shards: &BTreeSet<u16>,
        conn: &KvConn,
    ) -> Result<Session, String> {
        let me = self.shard_index();
        while !exchange.try_lock() {
            // Another coordinator holds it and may be waiting for us.
            self.serve_parks(pool, buffers);
            std::thread::yield_now();
        }
        let mut session = Session::new(exchange.clone(), me, (conn.db, conn.encoder.resp3, conn.id));
        let others: Vec<u16> = shards.iter().copied().filter(|&s| s != me).collect();
        let mut refused = park_into(&mut session, &others);
        if refused.is_none() {
            refused = self.cannot_take_part(me);
        }
        self.store.begin_group();
        if let Some(why) = refused {
            self.across_end(pool, buffers, session).map_err(|e| format!("ERR {e}"))?;
            return Err(why);
        }
        Ok(session)
    }

    /// Runs `args` on `shard`'s keys within `session`: its reply.
    pub(in crate::apps::kv) fn across_call(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        session: &mut Session,
        shard: u16,
        args: Vec<Vec<u8>>,
    ) -> Vec<u8> {
        if shard == session.me {
            let bytes = self.run_part(pool, buffers, &args, (session.db, session.resp3), session.client);
            if self.store.group_records() > 0 {
                session.wrote.insert(shard);
            }
            return bytes;
        }
        self.across_post(session, shard, args);
        self.across_wait(session, shard)
    }

    /// Sends `args` to parked `shard` (`across_wait` takes its reply).
    fn across_post(&self, session: &Session, shard: u16, args: Vec<Vec<u8>>) {
        assert!(session.parked.contains(&shard), "a call goes to a parked shard");
        let (db, resp3, client) = (session.db, session.resp3, session.client);
        session.exchange.post(shard, Request::Run { args, db, resp3, client });
    }

    fn across_wait(&self, session: &mut Session, shard: u16) -> Vec<u8> {
        match session.exchange.wait_response(shard) {
            Response::Reply { bytes, wrote, pending } => {
                if wrote {
                    session.wrote.insert(shard);
                }
                if pending {
                    session.pending.insert(shard);
                }
                bytes
            }
            Response::Gone => stop_half_way(&format!("shard {shard} ended while parked")),
            _ => unreachable!("a shard answers Run with Reply"),
        }
    }

    /// `across_call` of several commands at once: each other shard's
    /// first one runs there while this shard runs its own; the replies in
    /// order.
    pub(in crate::apps::kv) fn across_call_all(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        session: &mut Session,
        calls: Vec<(u16, Vec<Vec<u8>>)>,
    ) -> Vec<Vec<u8>> {
        let mut replies: Vec<Option<Vec<u8>>> = vec![None; calls.len()];
        let mut later = Vec::new();
        let mut posted: Vec<(usize, u16)> = Vec::new();
        for (i, (shard, args)) in calls.into_iter().enumerate() {
            // One request in flight per shard: a second waits its turn.
            if shard == session.me || posted.iter().any(|&(_, s)| s == shard) {
                later.push((i, shard, args));
            } else {
                self.across_post(session, shard, args);
                posted.push((i, shard));
            }
        }
        let (mine, rest): (Vec<_>, Vec<_>) = later.into_iter().partition(|(_, shard, _)| *shard == session.me);
        for (i, shard, args) in mine {
            replies[i] = Some(self.across_call(pool, buffers, session, shard, args));
        }
        for (i, shard) in posted {
            replies[i] = Some(self.across_wait(session, shard));
        }
        for (i, shard, args) in rest {
            replies[i] = Some(self.across_call(pool, buffers, session, shard, args));
        }
        replies.into_iter().map(|reply| reply.expect("every call answered")).collect()
    }

    /// Ends `session`: every part closed and durable (one transaction id
    /// if any shard wrote), then every shard released, then the lock.
    pub(in crate::apps::kv) fn across_end(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        mut session: Session,
    ) -> Result<(), String> {
        let exchange = session.exchange.clone();
        let marker = (!session.wrote.is_empty())
            .then(|| TxnMarker { txid: exchange.take_txid(), writers: session.wrote.iter().copied().collect() });
        let marker_for = |shard: u16| marker.clone().filter(|m| m.writers.contains(&shard));
        // Shards that neither wrote nor returned what was not durable are
        // only released.
        let finishing: Vec<u16> = session
            .parked
            .iter()
            .copied()
            .filter(|shard| session.wrote.contains(shard) || session.pending.contains(shard))
            .collect();
        for &shard in &finishing {
            exchange.post(shard, Request::Finish(marker_for(shard)));
        }
        let mut outcome = self.finish_part(pool, buffers, marker_for(session.me).as_ref());
        for &shard in &finishing {
            match exchange.wait_response(shard) {
                Response::Finished(result) => outcome = outcome.and(result),
                Response::Gone => outcome = Err(format!("shard {shard} ended")),
                _ => unreachable!("a shard answers Finish with Finished"),
            }
        }
        if let Err(why) = &outcome {
            // A writer's part may not be durable while the others' are:
            // releasing them would let readers see half, and their later
            // groups would follow an undecided transaction.
            if marker.is_some() {
                stop_half_way(&format!("a command across shards could not be made durable: {why}"));
            }
        }
        for &shard in &session.parked {
            exchange.post(shard, Request::Release);
        }
        session.done = true;
        exchange.unlock();
        outcome
    }
}

/// A session's calls, as recipes make them (`across_plans::Calls`).
struct SessionCalls<'s, 'p> {
    server: &'s mut KvServer,
    pool: &'p Pool,
    buffers: &'s mut Buffers,
    session: &'s mut Session,
}

impl crate::apps::kv::across_plans::Calls for SessionCalls<'_, '_> {
    fn call(&mut self, shard: u16, args: Vec<Vec<u8>>) -> Vec<u8> {
        self.server.across_call(self.pool, self.buffers, self.session, shard, args)
    }

    fn call_all(&mut self, calls: Vec<(u16, Vec<Vec<u8>>)>) -> Vec<Vec<u8>> {
        self.server.across_call_all(self.pool, self.buffers, self.session, calls)
    }
}

impl KvServer {
    /// Runs a command across shards (`Placement::Across`) and answers it.
    pub(in crate::apps::kv) fn run_across(
        &mut self,
        ctx: &mut crate::apps::kv::state::Ctx<'_>,
        across: &crate::apps::kv::across_plans::Across,
        args: &[Vec<u8>],
        keys: &[(usize, u16)],
    ) {
        let exchange = self.across.clone().expect("placed across only with an exchange");
        // A blocking pop (outside MULTI and scripts, which never block).
        let pop = crate::apps::kv::cmd::blocking::pop_shape(args).filter(|_| !self.scripting.running);
        let deadline = match &pop {
            Some(shape) => match Self::pop_across_deadline(ctx, shape, args) {
                Ok(deadline) => deadline,
                Err(()) => return,
            },
            None => None,
        };
        let mut session = match self.across_begin(ctx.pool, ctx.buffers, &exchange, &across.shards, ctx.conn) {
            Ok(session) => session,
            Err(why) => {
                ctx.error(&why);
                return;
            }
        };
        // A woken pop passes over keys of another type (`FirstPopWoken`).
        use crate::apps::kv::across_plans::{Across, Recipe};
        let woken = (across.recipe == Recipe::FirstPop && self.retrying_blocked)
            .then(|| Across { recipe: Recipe::FirstPopWoken, shards: across.shards.clone() });
        let reply = self.run_recipe(ctx, &mut session, woken.as_ref().unwrap_or(across), args, keys);
        let parks = pop.as_ref().filter(|_| crate::apps::kv::span::is_nil(&reply));
        if let Some(shape) = parks {
            self.park_across(ctx, &session, (shape, deadline), (args, keys));
        }
        match self.across_end(ctx.pool, ctx.buffers, session) {
            Ok(()) if parks.is_some() => {}
            Ok(()) => {
                ctx.failed = reply.first() == Some(&b'-');
                ctx.out.bytes().extend_from_slice(&reply);
            }
            Err(why) => {
                ctx.conn.block_request = None;
                ctx.error(&format!("ERR {why}"));
            }
        }
    }
}

impl KvServer {
    /// Runs a command's recipe across the shards `session` parked: its
    /// reply.
    pub(in crate::apps::kv) fn run_recipe(
        &mut self,
        ctx: &mut crate::apps::kv::state::Ctx<'_>,
        session: &mut Session,
        across: &crate::apps::kv::across_plans::Across,
        args: &[Vec<u8>],
        keys: &[(usize, u16)],
    ) -> Vec<u8> {
        let shards = self.config.settings.cluster.as_ref().map_or(1, |view| view.shards);
        let mut calls = SessionCalls { server: self, pool: ctx.pool, buffers: ctx.buffers, session };
        crate::apps::kv::across_plans::run(&across.recipe, args, keys, shards, &mut calls)
    }
}

/// A transaction (MULTI) whose commands run across shards: each queued
/// command's arguments and where it runs.
pub(in crate::apps::kv) type Routed = Vec<(Vec<Vec<u8>>, crate::apps::kv::across_plans::Route)>;

impl KvServer {
    /// The `queued` commands of a transaction with where each runs, if any runs on
    /// another shard than this one (a sharded server's main port): EXEC
    /// then runs them all with their shards parked (`exec_across`).
    pub(in crate::apps::kv) fn exec_routes(&self, pool: &Pool, conn: &KvConn, queued: &[Args]) -> Option<Routed> {
        use crate::apps::kv::across_plans::Route;
        let view = self.config.settings.cluster.as_ref()?;
        if self.across.is_none() || !view.relays(conn.listener) {
            return None;
        }
        let routed: Routed = queued
            .iter()
            .map(|args| {
                let argv: Vec<Vec<u8>> = (0..args.len()).map(|i| args.bytes(pool, i).into_owned()).collect();
                let route = self.queued_route(&argv);
                (argv, route)
            })
            .collect();
        let elsewhere = routed.iter().any(|(_, route)| !matches!(route, Route::One(shard) if *shard == view.shard));
        elsewhere.then_some(routed)
    }

    /// The shards `routed` needs parked.
    pub(in crate::apps::kv) fn routed_shards(&self, routed: &Routed) -> BTreeSet<u16> {
        use crate::apps::kv::across_plans::Route;
        let mut shards = BTreeSet::from([self.shard_index()]);
        for (_, route) in routed {
            match route {
                Route::One(shard) => {
                    shards.insert(*shard);
                }
                Route::Across(across, _) => shards.extend(across.shards.iter().copied()),
                Route::Span(plan) => shards.extend(plan.parts.iter().map(|part| part.shard)),
            }
        }
        shards
    }

    /// EXEC of `routed` in `session` (its shards parked): every command's
    /// reply, in order, as one transaction across shards. SELECT changes
    /// the database of the commands after it, and the connection's.
    pub(in crate::apps::kv) fn exec_across(
        &mut self,
        ctx: &mut crate::apps::kv::state::Ctx<'_>,
        mut session: Session,
        routed: Routed,
    ) -> Result<(), crate::store::db::StoreError> {
        use crate::apps::kv::across_plans::Route;
        let shards = self.config.settings.cluster.as_ref().map_or(1, |view| view.shards);
        let (pool, buffers) = (ctx.pool, &mut *ctx.buffers);
        let mut replies = Vec::with_capacity(routed.len());
        for (argv, route) in routed {
            if argv[0].eq_ignore_ascii_case(b"select") && argv.len() == 2 {
                let db = std::str::from_utf8(&argv[1]).ok().and_then(|d| d.parse::<u8>().ok());
                replies.push(match db.filter(|&db| u32::from(db) < crate::store::keyspace::DATABASES) {
                    Some(db) => {
                        session.db = db;
                        ctx.conn.db = db;
                        b"+OK\r\n".to_vec()
                    }
                    None => b"-ERR DB index is out of range\r\n".to_vec(),
                });
                continue;
            }
            self.monitor_elsewhere(ctx.conn.id, session.db, &argv);
            replies.push(match route {
                Route::One(shard) => self.across_call(pool, buffers, &mut session, shard, argv),
                Route::Across(across, keys) => {
                    let mut calls = SessionCalls { server: self, pool, buffers, session: &mut session };
                    crate::apps::kv::across_plans::run(&across.recipe, &argv, &keys, shards, &mut calls)
                }
                Route::Span(plan) => {
                    let arg = |arg: &crate::apps::kv::span::Arg| match arg {
                        crate::apps::kv::span::Arg::Index(i) => argv[*i].clone(),
                        crate::apps::kv::span::Arg::Value(value) => value.clone(),
                    };
                    let calls = plan.parts.iter().map(|part| (part.shard, part.args.iter().map(arg).collect()));
                    let replies = self.across_call_all(pool, buffers, &mut session, calls.collect());
                    crate::apps::kv::span::merge(&plan.merge, &replies)
                }
            });
        }
        if let Err(why) = self.across_end(pool, buffers, session) {
            ctx.error(&format!("ERR {why}"));
            return Ok(());
        }
        ctx.array(replies.len());
        for reply in replies {
            ctx.out.bytes().extend_from_slice(&reply);
        }
        Ok(())
    }
}

impl KvServer {
    /// WATCH on a sharded server's main port: the keys of other shards are
    /// watched there, with their shards parked for the moment it takes
    /// (a write there then fails this connection's EXEC, as a local one
    /// does). Ok(None): every key is this shard's, or the server is not
    /// sharded; Ok(Some(i)): the argument indexes of the keys left to
    /// watch here.
    pub(in crate::apps::kv) fn watch_across(
        &mut self,
        ctx: &mut crate::apps::kv::state::Ctx<'_>,
        dirty: &std::sync::Arc<AtomicBool>,
    ) -> Result<Option<Vec<usize>>, String> {
        let Some(exchange) = self.across.clone() else { return Ok(None) };
        let Some(view) = self.config.settings.cluster.clone().filter(|view| view.relays(ctx.conn.listener)) else {
            return Ok(None);
        };
        let mut here = Vec::new();
        let mut remote: std::collections::BTreeMap<u16, Vec<Vec<u8>>> = Default::default();
        for i in 1..ctx.argc() {
            let key = ctx.arg(i);
            let shard = crate::apps::kv::cluster::owner(crate::apps::kv::cluster::key_slot(&key), view.shards);
            match shard == view.shard {
                true => here.push(i),
                false => remote.entry(shard).or_default().push(ctx.watch_id(&key)),
            }
        }
        if remote.is_empty() {
            return Ok(None);
        }
        let shards: BTreeSet<u16> = remote.keys().copied().collect();
        let session = self.across_begin(ctx.pool, ctx.buffers, &exchange, &shards, ctx.conn)?;
        for (shard, keys) in remote {
            exchange.watch_on(shard, keys, (std::sync::Arc::downgrade(dirty), None));
        }
        self.across_end(ctx.pool, ctx.buffers, session)?;
        Ok(Some(here))
    }
}
