//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (Redis 7.0's
//! `multi.c`).
//!
//! After MULTI a connection's commands are queued, not run: each keeps the
//! arguments it was received with (`Args`, holding its references on the
//! pool buffers its values arrived in, so a queued value is not copied).
//! EXEC runs them one after the other with nothing in between, inside one
//! store group (`Store::begin_group`): their log records form one group
//! that recovery replays all or none, so a power failure never leaves half
//! a transaction. WATCH makes EXEC fail (a null reply) when a watched key
//! was written, or expired, since.
//!
//! A connection's transaction and watched keys, and the server's map's
//! entries (`Multi`, `Watching`, `Watcher`), are in `kept/multi.rs`.
//!
//! Invariants: a queue is bounded (`MULTI_COMMANDS_MAX`,
//! `MULTI_BYTES_MAX`); every queued command's references are given back
//! when it runs, when the transaction is discarded or aborted, and when
//! the connection goes (`KvServer::forget_connection`); a connection's
//! watched keys are listed both in the server's map and in the connection,
//! and leave both together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::apps::kv::kept::multi::{Flag, Multi, Watcher, Watching, REMOTE_CONN};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvConn, KvServer};
use crate::pool::buffers::Buffers;
use crate::store::db::StoreError;

/// Commands one transaction may queue.
pub(in crate::apps::kv) const MULTI_COMMANDS_MAX: usize = 100_000;
/// Argument bytes one transaction may queue (they pin pool buffers until
/// EXEC).
pub(in crate::apps::kv) const MULTI_BYTES_MAX: u64 = 64 << 20;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("multi", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Starts a transaction.", KvServer::cmd_multi),
    cmd("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], (0, 0, 0), "transactions", "Runs a transaction's commands, one log group.", KvServer::cmd_exec),
    cmd("discard", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Discards a transaction.", KvServer::cmd_discard),
    cmd("watch", -2, &["noscript", "loading", "stale", "fast", "allow_busy"], (1, -1, 1), "transactions", "Makes EXEC fail if any of the keys is written before it.", KvServer::cmd_watch),
    cmd("unwatch", 1, &["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Forgets every watched key.", KvServer::cmd_unwatch),
];

/// Whether a command runs at once inside MULTI rather than being queued.
pub(in crate::apps::kv) fn runs_in_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset")
}

impl KvServer {
    fn cmd_multi(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.conn.multi.is_some() {
            ctx.error("ERR MULTI calls can not be nested");
            return Ok(());
        }
        ctx.conn.multi = Some(Multi::default());
        ctx.ok();
        Ok(())
    }

    fn cmd_discard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(mut multi) = ctx.conn.multi.take() else {
            ctx.error("ERR DISCARD without MULTI");
            return Ok(());
        };
        multi.clear(ctx.buffers);
        self.unwatch_all(ctx.conn);
        ctx.ok();
        Ok(())
    }

    fn cmd_exec(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(mut multi) = ctx.conn.multi.take() else {
            ctx.error("ERR EXEC without MULTI");
            return Ok(());
        };
        if multi.aborted {
            multi.clear(ctx.buffers);
            self.unwatch_all(ctx.conn);
            ctx.error("EXECABORT Transaction discarded because of previous errors.");
            return Ok(());
        }
        // Commands for other shards (a sharded server's main port): their
        // shards are parked first, so the watched keys are checked with no
        // other command able to change them before the transaction runs.
        let exchange = self.across.clone();
        let mut across = None;
        if let Some(routed) = self.exec_routes(ctx.pool, ctx.conn, &multi.queued) {
            let exchange = exchange.as_ref().expect("routes only with an exchange");
            let shards = self.routed_shards(&routed);
            match self.across_begin(ctx.pool, ctx.buffers, exchange, &shards, ctx.conn) {
                Ok(session) => across = Some((session, routed)),
                Err(why) => {
                    multi.clear(ctx.buffers);
                    self.unwatch_all(ctx.conn);
                    ctx.error(&format!("EXECABORT Transaction discarded because of: {why}"));
                    return Ok(());
                }
            }
        }
        let dirty = self.watch_failed(ctx);
        self.unwatch_all(ctx.conn);
        if dirty {
            multi.clear(ctx.buffers);
            if let Some((session, _)) = across {
                self.across_end(ctx.pool, ctx.buffers, session).map_err(StoreError::Corrupt)?;
            }
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
            return Ok(());
        }
        if let Some((session, routed)) = across {
            multi.clear(ctx.buffers);
            return self.exec_across(ctx, session, routed);
        }
        ctx.array(multi.queued.len());
        self.store.begin_group();
        // The EXEC command's own arguments are none: set them aside while
        // each queued command takes its place.
        let exec_args = std::mem::take(&mut ctx.conn.args);
        self.scripting.in_exec = true;
        for args in multi.queued.drain(..) {
            ctx.conn.args = args;
            self.execute(ctx.pool, ctx.buffers, ctx.conn, ctx.out);
            ctx.conn.args.clear(ctx.buffers);
        }
        self.scripting.in_exec = false;
        ctx.conn.args = exec_args;
        if self.session.is_some() {
            // A script among them parked other shards (`parked.rs`): the
            // session's end closes this group as the transaction's part
            // here (`end_parked`, after EXEC).
            return Ok(());
        }
        // The group's end record: its replies leave with the commit that
        // makes the whole group durable.
        self.store.end_group(ctx.pool, ctx.buffers)
    }

    fn cmd_watch(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.conn.multi.is_some() {
            ctx.error("ERR WATCH inside MULTI is not allowed");
            return Ok(());
        }
        let watching = ctx
            .conn
            .watching
            .get_or_insert_with(|| Watching { dirty: Arc::new(AtomicBool::new(false)), keys: Vec::new() });
        // No point in watching more once a watched key changed.
        if watching.dirty.load(Ordering::Relaxed) {
            ctx.ok();
            return Ok(());
        }
        let dirty = watching.dirty.clone();
        // Another shard's keys are watched there (`across.rs`).
        let here = match self.watch_across(ctx, &dirty) {
            Ok(here) => here,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        for i in (1..ctx.argc()).filter(|i| here.as_ref().is_none_or(|here| here.contains(i))) {
            let key = ctx.watch_id(&ctx.arg(i));
            let watching = ctx.conn.watching.as_mut().expect("made above");
            if watching.keys.contains(&key) {
                continue;
            }
            watching.keys.push(key.clone());
            let expired = self.store.is_expired(ctx.db, &key[1..], ctx.now);
            let watcher = Watcher { conn: ctx.conn.id, dirty: Flag::Own(dirty.clone()), expired };
            self.watched.entry(key).or_default().push(watcher);
        }
        ctx.ok();
        Ok(())
    }

    fn cmd_unwatch(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.unwatch_all(ctx.conn);
        ctx.ok();
        Ok(())
    }

    /// Whether EXEC must fail: a watched key was written, or has expired
    /// since it was watched (Redis's `isWatchedKeyExpired`).
    fn watch_failed(&self, ctx: &Ctx<'_>) -> bool {
        let Some(watching) = &ctx.conn.watching else { return false };
        if watching.dirty.load(Ordering::Relaxed) {
            return true;
        }
        watching.keys.iter().any(|key| {
            let db = self.store.physical_db(key[0]);
            let expired_now = self.store.is_expired(db, &key[1..], ctx.now);
            let watcher = self.watched.get(key).and_then(|list| list.iter().find(|w| w.conn == ctx.conn.id));
            expired_now && watcher.is_some_and(|w| !w.expired)
        })
    }

    /// Forgets the connection's watched keys (UNWATCH, EXEC, DISCARD).
    pub(in crate::apps::kv) fn unwatch_all(&mut self, conn: &mut KvConn) {
        let Some(watching) = conn.watching.take() else { return };
        for key in watching.keys {
            if let Some(list) = self.watched.get_mut(&key) {
                list.retain(|w| w.conn != conn.id);
                if list.is_empty() {
                    self.watched.remove(&key);
                }
            }
        }
    }

    /// A command wrote `key` (of the connection's database) where the
    /// dispatcher would not see it (not at its key positions, or only some
    /// of them were written): watchers fail their EXEC, parked pops wake.
    pub(in crate::apps::kv) fn touch_written(&mut self, ctx: &Ctx<'_>, key: &[u8]) {
        let id = ctx.watch_id(key);
        if self.watched.contains_key(&id) {
            let exists = self.store.key_type(ctx.pool, ctx.db, key, ctx.now).ok().flatten().is_some();
            self.touch_key(&id, exists);
        }
        self.tracking_invalidate(key, Some(ctx.conn.id));
        self.wake_blocked(ctx, key);
    }

    /// Registers watchers of `keys` for another shard's connection (WATCH;
    /// with `wake`, a pop blocked there, whose shard is woken when one is
    /// written); drops the spent ones of earlier connections first.
    pub(in crate::apps::kv) fn watch_for(
        &mut self,
        keys: Vec<Vec<u8>>,
        flag: std::sync::Weak<AtomicBool>,
        wake: Option<u16>,
    ) {
        self.sweep_watchers();
        let now = crate::store::db::now_ms();
        for key in keys {
            let db = self.store.physical_db(key[0]);
            let (dirty, expired) = match wake {
                None => (Flag::Remote(flag.clone()), self.store.is_expired(db, &key[1..], now)),
                Some(home) => (Flag::Wake(flag.clone(), home), false),
            };
            self.watched.entry(key).or_default().push(Watcher { conn: REMOTE_CONN, dirty, expired });
        }
    }

    /// Wakes the shards whose blocked pops a watcher's mark concerns.
    fn wake_shards(&self, shards: impl IntoIterator<Item = u16>) {
        if let Some(exchange) = self.across.as_ref() {
            for shard in shards {
                exchange.nudge(shard);
            }
        }
    }

    /// Drops the watchers of other shards' connections that are spent.
    pub(in crate::apps::kv) fn sweep_watchers(&mut self) {
        self.watched.retain(|_, list| {
            list.retain(|watcher| !watcher.is_spent());
            !list.is_empty()
        });
    }

    /// A key was written: connections watching it fail their EXEC. One
    /// that watched it already expired sees its deletion as no change.
    pub(in crate::apps::kv) fn touch_key(&mut self, key: &[u8], exists_now: bool) {
        let Some(list) = self.watched.get_mut(key) else { return };
        let mut wake = Vec::new();
        for watcher in list.iter_mut() {
            if watcher.expired && !exists_now {
                watcher.expired = false;
                continue;
            }
            wake.extend(watcher.mark());
        }
        list.retain(|watcher| !watcher.is_spent());
        if list.is_empty() {
            self.watched.remove(key);
        }
        self.wake_shards(wake);
    }

    /// Every watched key was possibly written (FLUSHALL, FLUSHDB): each one
    /// that existed makes its watchers fail; one that had expired does not.
    pub(in crate::apps::kv) fn touch_all_keys(&mut self, existed: impl Fn(&[u8]) -> bool) {
        let mut wake = Vec::new();
        for (key, list) in self.watched.iter_mut() {
            let existed = existed(key);
            for watcher in list.iter_mut() {
                if watcher.expired {
                    watcher.expired = false;
                    continue;
                }
                if existed {
                    wake.extend(watcher.mark());
                }
            }
        }
        self.wake_shards(wake);
    }

    /// The connection is gone: its transaction and watched keys go too.
    pub(in crate::apps::kv) fn forget_connection(&mut self, buffers: &mut Buffers, conn: &mut KvConn) {
        if let Some(mut multi) = conn.multi.take() {
            multi.clear(buffers);
        }
        self.unwatch_all(conn);
        self.pubsub.forget(conn.id, conn.subscriptions.take());
        // A link's connection runs commands for other shards' clients,
        // whose tracking ends with their own connections.
        if conn.listener != crate::apps::kv::LISTENER_LINK_IN && self.tracking.disable(conn.id) {
            self.tracking_off_elsewhere(conn.id);
        }
        if self.monitors.contains(conn.id) {
            self.monitors.forget(conn.id);
            self.publish_monitoring();
        }
        self.forget_blocked(buffers, conn);
    }
}
