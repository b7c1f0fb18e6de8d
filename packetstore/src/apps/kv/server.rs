//! The key-value server's [`App`] face: making the server, and the calls
//! the event loop makes (connect, input, commit, tick, abandon), each
//! handed to the Redis path (`dispatch.rs`) or the HTTP path (`rest.rs`).
//!
//! Invariants: an abandoned connection gives back every buffer reference
//! its unfinished request held; the store's commit is the loop's commit,
//! so a reply leaves only once the write it acknowledges is durable.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::apps::kv::cmd::notify;
use crate::apps::kv::dispatch::COMMANDS;
use crate::apps::kv::kept::forward::Route;
use crate::apps::kv::shard_link::{ShardLinks, LISTENER_LINK_IN, LISTENER_LINK_OUT};
use crate::apps::kv::state::{
    watch_id, CommandIndex, KvConfig, KvConn, KvServer, KvStats, EXPIRE_PER_TICK_MAX, GARBAGE_PER_TICK_MAX,
    LISTENER_HTTP,
};
use crate::io::app::{App, ConnToken, IoCounters, Persist, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Args, Encoder, Parser};
use crate::store::db::{now_ms, Store, StoreTicket};
use crate::store::keyspace::DATABASES;

impl KvServer {
    pub fn new(config: KvConfig, store: Store, recovery: String) -> KvServer {
        let links = config.settings.cluster.as_ref().map_or_else(Default::default, |view| ShardLinks::new(view.shards));
        let next_client_id = config.settings.cluster.as_ref().map_or(1, |view| u64::from(view.shard) + 1);
        let config_baseline = crate::apps::kv::cmd::config::initial_values(&config);
        let powerfail_at_loading = config.settings.test_switches.then(powerfail_at_loading).flatten();
        let mut server = KvServer {
            config_params: config_baseline.clone(),
            config_baseline,
            config,
            store,
            next_client_id,
            clock_anchor: (std::time::Instant::now(), crate::store::db::now_us()),
            scan_cursors: VecDeque::new(),
            next_cursor: 1,
            io: IoCounters::default(),
            stats: KvStats::default(),
            started: std::time::Instant::now(),
            recovery,
            commands_at_tick: 0,
            batch_writes: crate::util::metrics::Histogram::default(),
            writes_at_commit: 0,
            recovery_ns: 0,
            staged_in_place: 0,
            staged_copied: 0,
            cross_protocol_logged: None,
            commands: COMMANDS,
            command_index: CommandIndex::new(COMMANDS),
            watched: std::collections::HashMap::new(),
            modified: false,
            retrying_blocked: false,
            uncounted: false,
            stopping: false,
            link_reads_here: false,
            shutdown_requested: false,
            rebuild_requested: false,
            powerfail_at_loading,
            peer_frames_refused: 0,
            peer_frames_unstored: 0,
            peer_links_closed: 0,
            active_expire: true,
            pubsub: Default::default(),
            blocking: Default::default(),
            clients: Default::default(),
            notify_flags: 0,
            slowlog: Default::default(),
            tracking: Default::default(),
            monitors: Default::default(),
            lazyfreed_at_reset: 0,
            ops_rate: Default::default(),
            latency: Default::default(),
            command_stats: vec![Default::default(); COMMANDS.count()],
            error_stats: std::collections::BTreeMap::new(),
            across: None,
            session: None,
            scripting: Default::default(),
            replica: None,
            peer_wake: Vec::new(),
            commits_begun: 0,
            relays: Default::default(),
            links,
            panic_at: None,
        };
        server.set_params_at_start();
        server
    }

    /// Makes this server a node of a replicated group (its store was
    /// opened `replicated`).
    pub fn set_replica(&mut self, replica: crate::replica::Replica) {
        self.replica = Some(replica);
        self.sync_writable();
    }
}

impl App for KvServer {
    type Conn = KvConn;
    /// The store's ticket, the commit's number (1, 2, ...), and when it
    /// began (while LATENCY's monitor is on: `aof-fsync-always`).
    type Ticket = (Option<StoreTicket>, u64, Option<Instant>);

    fn persist(&self) -> Persist {
        self.config.persist
    }

    fn connect(&mut self, listener: usize, token: ConnToken) -> KvConn {
        let peer = self.peer_link(listener, token);
        let id = self.next_client_id;
        // Unique across shards: shard i's ids are i+1, i+1+shards, ...
        self.next_client_id += self.config.settings.cluster.as_ref().map_or(1, |view| u64::from(view.shards));
        // A shard's links are no clients (nor listed as ones); what comes
        // in on one was authenticated on its own shard.
        let link = listener == LISTENER_LINK_IN || self.links.linked(listener, token);
        if listener != LISTENER_HTTP && peer.is_none() && !link {
            self.clients.register(id, token);
            if let Some(exchange) = self.across.as_ref() {
                exchange.joined(id);
            }
        }
        KvConn {
            listener,
            id,
            token,
            name: None,
            db: 0,
            authenticated: self.config.requirepass.is_none() || link,
            multi: None,
            watching: None,
            subscriptions: None,
            blocked: None,
            block_request: None,
            reply: Default::default(),
            encoder: Encoder { resp3: false },
            parser: Parser::default(),
            args: Args::default(),
            http: None,
            peer,
            route: Default::default(),
            relay_accepted: None,
            reads_here: false,
            denied: false,
            arrived_ns: None,
            awaiting: 0,
            awaiting_shard: 0,
            blocked_elsewhere: false,
            held: false,
            held_error: None,
            http_close: false,
        }
    }

    fn accepted(&mut self, conn: &mut KvConn, fd: i32, peer: Option<SocketAddr>, local: Option<SocketAddr>) {
        if conn.listener == LISTENER_LINK_IN {
            return;
        }
        if self.protected_mode_refuses(conn, peer) {
            return;
        }
        if conn.listener != LISTENER_HTTP && conn.peer.is_none() {
            self.clients.accepted(conn.id, fd, peer, local);
            if let (Some(exchange), Some(peer)) = (self.across.as_ref(), peer) {
                exchange.set_addr(conn.id, peer.to_string());
            }
        }
    }

    fn on_input(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        if conn.denied {
            return self.deny(conn, out);
        }
        if (LISTENER_LINK_OUT..crate::io::app::DIALED).contains(&conn.listener) {
            return self.links.serve_link(conn.listener, buffers, stream, out, release);
        }
        if self.replica.is_some() {
            // Raft's clock before any command runs: a leader that was
            // paused (SIGSTOP, a stalled VM) learns that its quorum is gone
            // before it runs writes, not after, when they would be in its
            // tree but in no entry (the node must then rebuild itself).
            self.replica_tick(buffers);
            self.sync_writable();
        }
        if conn.peer.is_some() {
            let progress = self.serve_peer(pool, buffers, conn, stream, out, release);
            self.sync_writable();
            if conn.peer.is_none() && progress.requests > 0 {
                // A relayed client's first commands, served with its RELAY.
                if let Some(replica) = self.replica.as_mut() {
                    replica.note_read();
                }
            }
            return progress;
        }
        let mut progress = {
            let mut setup = 0;
            loop {
                match self.route(conn, stream) {
                    Route::Local if conn.listener == LISTENER_HTTP => {
                        break self.serve_http(pool, buffers, conn, stream, out, requests_max, release)
                    }
                    Route::Local => break self.serve_resp(pool, buffers, conn, stream, out, requests_max, release),
                    Route::Relayed(id) => return self.relay_client(pool, buffers, id, stream, out, release),
                    Route::Undecided => return Progress { requests: setup, ..Progress::default() },
                    Route::SetupHere => {
                        // A client library's greeting, answered here; the
                        // next command decides where the connection goes.
                        let served = self.serve_resp(pool, buffers, conn, stream, out, 1, release);
                        setup += served.requests;
                        if served.requests == 0 || served.close {
                            return served;
                        }
                    }
                }
            }
        };
        progress.waits = self.input_waits(conn);
        if progress.requests > 0 {
            if let Some(replica) = self.replica.as_mut() {
                // The turn's replies wait for a quorum to confirm this
                // leader after its reads (ReadIndex).
                replica.note_read();
            }
        }
        progress
    }

    fn abandon(&mut self, buffers: &mut Buffers, conn: &mut KvConn) {
        if let Some(link) = conn.peer.take() {
            conn.parser.abandon(buffers, &mut conn.args);
            self.peer_gone(buffers, link);
            return;
        }
        if let Route::Relayed(id) = conn.route {
            self.relay_closed(buffers, id, true);
            self.forget_client(conn);
            return;
        }
        self.orphan_script(conn);
        self.links.forget((conn.token, conn.id), conn.awaiting);
        let exchange = self.across.clone().filter(|_| !self.stopping);
        self.links.lost(conn.listener, |shard| exchange.as_ref().is_some_and(|e| !e.is_gone(shard)));
        conn.parser.abandon(buffers, &mut conn.args);
        self.forget_connection(buffers, conn);
        self.forget_client(conn);
        if let Some(body) = conn.http.take() {
            buffers.release_extents(&body.extents).expect("the request's references");
        }
    }

    fn needs_commit(&self) -> bool {
        self.store.needs_commit() || self.replica.as_ref().is_some_and(|r| r.needs_commit(&self.store))
    }

    fn writes_pending(&self) -> bool {
        self.store.writes_pending() || self.replica.as_ref().is_some_and(|r| r.reads_pending || !r.all_acknowledged())
    }

    fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<()> {
        self.observe_batch();
        let timing = self.commit_timing();
        let result = self.store.commit(pool, buffers).map_err(std::io::Error::other);
        if let Some((started, checkpoint)) = timing {
            let ms = started.elapsed().as_millis() as u64;
            self.latency.sample("aof-fsync-always", ms);
            if checkpoint {
                self.latency.sample("checkpoint", ms);
            }
        }
        result
    }

    fn begin_commit(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
    ) -> std::io::Result<Option<(Option<StoreTicket>, u64, Option<Instant>)>> {
        self.observe_batch();
        let timing = self.commit_timing();
        // A replica's turn may need a commit of its own: reads waiting for
        // a ReadIndex, a ready to make durable.
        let replica_wants = self.replica.as_ref().is_some_and(|r| r.wants_commit());
        self.replica_before_commit(pool, buffers)?;
        let ticket = self.store.begin_commit(pool, buffers).map_err(std::io::Error::other)?;
        if ticket.is_none() && !replica_wants {
            return Ok(None);
        }
        self.commits_begun += 1;
        if let Some(replica) = self.replica.as_mut() {
            replica.commit_begun();
        }
        self.sync_writable();
        if let Some((started, true)) = timing {
            self.latency.sample("checkpoint", started.elapsed().as_millis() as u64);
        }
        Ok(Some((ticket, self.commits_begun, timing.map(|(started, _)| started))))
    }

    fn finish_commit(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        ticket: (Option<StoreTicket>, u64, Option<Instant>),
    ) -> std::io::Result<()> {
        if let Some(started) = ticket.2 {
            self.latency.sample("aof-fsync-always", started.elapsed().as_millis() as u64);
        }
        if let Some(store_ticket) = ticket.0 {
            self.store.finish_commit(pool, buffers, store_ticket).map_err(std::io::Error::other)?;
        }
        if let Some(replica) = self.replica.as_mut() {
            replica.commit_durable(ticket.1, &self.store);
        }
        Ok(())
    }

    fn holds_replies(&self, conn: &KvConn) -> bool {
        // Peer links order their bytes themselves; a relayed client gets
        // the leader's replies, acknowledged there.
        conn.peer.is_none() && !matches!(conn.route, Route::Relayed(_))
    }

    fn awaits_replies(&self, conn: &KvConn) -> bool {
        // Relayed to another shard (a link's reply, an HTTP request's),
        // unless blocked there.
        conn.awaiting > 0 && !conn.blocked_elsewhere
    }

    fn acknowledges_externally(&self) -> bool {
        self.replica.is_some()
    }

    fn take_abandoned_commits(&mut self) -> Option<u64> {
        self.replica.as_mut().and_then(|r| r.take_abandoned())
    }

    fn commits_acknowledged(&self) -> u64 {
        self.replica.as_ref().map_or(u64::MAX, |r| r.acknowledged())
    }

    fn take_dials(&mut self, dials: &mut Vec<crate::io::app::Dial>) {
        self.replica_dials(dials);
    }

    fn dial_failed(&mut self, id: usize, error: std::io::Error) {
        self.replica_dial_failed(id, error);
    }

    fn fail_commit(&mut self) {
        self.store.fail_commit()
    }

    fn set_io_counters(&mut self, counters: IoCounters) {
        self.io = counters;
    }

    /// Reclamation walk steps, active expiry, and checkpoint scheduling.
    fn nudged(&mut self, pool: &Pool, buffers: &mut Buffers) {
        self.serve_parks(pool, buffers);
        self.adopt_handed();
        self.wake_written_elsewhere();
    }

    fn serves_woken_before_commit(&self) -> bool {
        // A sharded server's links: relayed commands and messages for
        // other shards' clients go out with this turn's replies.
        self.across.is_some()
    }

    fn take_adoptions(&mut self, adopt: &mut Vec<(std::os::fd::RawFd, usize)>) {
        adopt.append(&mut self.links.adopt);
    }

    fn draining(&mut self) {
        self.stopping = true;
    }

    fn adoption_refused(&mut self, listener: usize) {
        // The loop is full or stopping: no new link is tried.
        self.links.lost(listener, |_| false);
    }

    fn tick(&mut self, pool: &Pool, buffers: &mut Buffers) {
        // This turn's BCAST invalidations go out (Redis: before sleeping).
        self.tracking_tick();
        self.ops_rate.note(std::time::Instant::now(), self.stats.commands);
        // A power failure armed for a moment reaches an idle server too.
        if self.config.power_switch.as_ref().is_some_and(|device| device.crash_if_due()) && !self.shutdown_requested {
            tracing::error!("simulated power failure: the device is gone; stopping");
            self.shutdown_requested = true;
        }
        self.replica_tick(buffers);
        if self.replica.as_ref().is_some_and(|r| r.is_removed()) && !self.shutdown_requested {
            tracing::warn!("this node was removed from its group: stopping");
            self.shutdown_requested = true;
        }
        self.relay_retry_waiting();
        self.publish_shard_state();
        self.keep_links();
        self.sync_writable();
        self.finish_orphan(pool, buffers);
        // The scrubber only reads: it runs on a follower and during a
        // paused script too.
        self.scrub_tick(pool);
        // A follower's tree changes only by committed entries.
        if !self.writable() {
            // A follower short of room checkpoints too (applied records and
            // overwritten values are freed only by one).
            self.store.note_buffers(buffers);
            if self.store.is_reclaiming() {
                if let Err(error) = self.store.reclaim_step(pool, buffers, 64) {
                    tracing::error!("the tree's reclamation walk stopped: {error}");
                }
            }
            self.wake_timed_out();
            return;
        }
        // A paused script's group is open: nothing else may write into it
        // (reclaimer, compaction, expiry) until it ends.
        if self.store.in_group() {
            self.wake_timed_out();
            return;
        }
        if self.store.is_reclaiming() {
            if let Err(error) = self.store.reclaim_step(pool, buffers, 64) {
                tracing::error!("the tree's reclamation walk stopped: {error}");
            }
        }
        self.store.note_buffers(buffers);
        let idle = self.stats.commands == self.commands_at_tick;
        self.commands_at_tick = self.stats.commands;
        let before = self.store.compaction();
        if let Err(error) = self.store.compact_step(pool, buffers, idle) {
            tracing::error!("a compaction step failed: {error}");
        }
        let after = self.store.compaction();
        if after.running && !before.running {
            tracing::info!(waste_pct = format!("{:.1}", self.store.waste_ratio() * 100.0), "compaction started");
        } else if before.running && !after.running {
            tracing::info!(
                values = after.relocated_values - before.relocated_values,
                bytes = after.relocated_bytes - before.relocated_bytes,
                total_passes = after.relocation_passes,
                "compaction pass done"
            );
        }
        self.wake_timed_out();
        // Dead objects and flushed databases are emptied a little per tick.
        if self.store.garbage() > 0 && self.store.batch_has_room() {
            if let Err(error) = self.store.collect_garbage(pool, buffers, GARBAGE_PER_TICK_MAX) {
                tracing::warn!("reclaiming deleted keys failed (retried next tick): {error}");
            }
        }
        // Redis's `expire-cycle` event: the whole of a tick's expiry.
        let started = std::time::Instant::now();
        self.active_expire_cycle(pool, buffers);
        self.latency.sample("expire-cycle", started.elapsed().as_millis() as u64);
    }

    fn take_wakeups(&mut self, wake: &mut Vec<ConnToken>) {
        self.blocking.wake_now = false;
        wake.append(&mut self.pubsub.wake);
        wake.append(&mut self.clients.wake);
        wake.append(&mut self.links.wake);
        self.replica_wakeups(wake);
    }

    fn wakes_now(&self) -> bool {
        self.blocking.wake_now
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }

    fn stop_requested(&self) -> bool {
        self.shutdown_requested
    }
}

impl KvServer {
    /// Whether a client's input waits on something other than more bytes
    /// (`Progress::waits`): a parsed command (or an error) behind replies
    /// from another shard, an HTTP request relayed to one, a blocked
    /// command, a paused script. Its pipelined requests then pile up only
    /// to the engine's input limit, and TCP stops the client.
    fn input_waits(&self, conn: &KvConn) -> bool {
        let behind_replies = conn.held || conn.held_error.is_some() || conn.listener == LISTENER_HTTP;
        (conn.awaiting > 0 && behind_replies) || conn.blocked.is_some() || self.runs_paused_script(conn)
    }

    /// A connection closed: a client of this shard's is gone from its list
    /// (and from the process's, `Exchange::left`); a link's is no client.
    fn forget_client(&mut self, conn: &KvConn) {
        if conn.listener == LISTENER_LINK_IN || conn.listener >= crate::apps::kv::shard_link::LISTENER_LINK_OUT {
            return;
        }
        self.clients.forget(conn.id);
        if let Some(exchange) = self.across.as_ref() {
            exchange.left(conn.id);
        }
    }

    /// While LATENCY's monitor is on: when a commit begins, and whether it
    /// runs a checkpoint's phase.
    fn commit_timing(&self) -> Option<(Instant, bool)> {
        self.latency.monitoring().then(|| (Instant::now(), self.store.checkpoint_step_due()))
    }

    /// Deletes up to `EXPIRE_PER_TICK_MAX` keys whose time has come.
    fn active_expire_cycle(&mut self, pool: &Pool, buffers: &mut Buffers) {
        let now = now_ms();
        let expired = self.store.expired_keys(now, EXPIRE_PER_TICK_MAX);
        if expired.is_empty() || !self.store.batch_has_room() || !self.active_expire {
            return;
        }
        let mut removed = 0;
        for (db, key) in expired {
            let mut ops = Vec::new();
            let result = self.delete_ops(pool, buffers, db, &key, &mut ops);
            let result = result.and_then(|_| self.store.apply(pool, buffers, &ops));
            Store::release_ops(buffers, &ops);
            if result.is_ok() {
                removed += 1;
                // Watchers of an expired key fail their EXEC; subscribers
                // hear of it in the database's number.
                let logicals: Vec<u8> = (0..DATABASES as u8).filter(|&n| self.store.physical_db(n) == db).collect();
                for logical in logicals {
                    self.notify_background(notify::EXPIRED, "expired", &key, u32::from(logical));
                    self.touch_key(&watch_id(logical, &key), false);
                }
                self.tracking_invalidate(&key, None);
            }
        }
        self.store.note_expired(removed);
    }
}

/// `PACKETSTORE_POWERFAIL_AT_LOADING=<seed>:<fences>` (test switches on,
/// crash simulator): the power fails at the `fences`-th fence from when a
/// snapshot first begins loading here (a restarted follower's, which no
/// DEBUG command could arm in time).
fn powerfail_at_loading() -> Option<(u64, u64)> {
    let text = std::env::var("PACKETSTORE_POWERFAIL_AT_LOADING").ok()?;
    let (seed, fences) = text.split_once(':')?;
    Some((seed.parse().ok()?, fences.parse().ok().filter(|&n| n > 0)?))
}
