//! The sixteen databases: SELECT, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB,
//! MOVE (`docs/format.md`, "Databases").
//!
//! A connection selects a logical database (0-15); the store maps each to
//! a physical id (`#db` n). FLUSHDB gives the logical database a new,
//! never used physical id and marks the old one dead (`G` db) for the
//! reclaimer: O(1) whatever the database holds. SWAPDB exchanges two
//! mappings, O(1). MOVE moves a collection's `m` entry (its oid, and so
//! its elements, stay), or a string's value extents (no byte copied).
//!
//! Invariant: every change of the mapping is one store group, so after a
//! power failure a database is either flushed (or swapped) or not.

use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, watch_id, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;
use crate::store::keyspace::{db_entry_key, dead_db_key, DbId, DATABASES, DB_NEXT_ENTRY};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("select", 2, &["loading", "stale", "fast"], (0, 0, 0), "connection", "Selects a database (0-15).", KvServer::cmd_select),
    cmd("dbsize", 1, &["readonly", "fast"], (0, 0, 0), "server", "Returns the number of keys of the database.", KvServer::cmd_dbsize),
    cmd("flushdb", -1, &["write"], (0, 0, 0), "server", "Deletes every key of the database: O(1), reclaimed in the background.", KvServer::cmd_flushdb),
    cmd("flushall", -1, &["write"], (0, 0, 0), "server", "Deletes every key of every database: O(1) per database.", KvServer::cmd_flushall),
    cmd("swapdb", 3, &["write", "fast"], (0, 0, 0), "server", "Swaps two databases.", KvServer::cmd_swapdb),
    cmd("move", 3, &["write", "fast"], (1, 1, 1), "generic", "Moves a key to another database.", KvServer::cmd_move),
];

/// A database index argument. Err: the error reply.
pub(in crate::apps::kv) fn parse_db(bytes: &[u8], not_integer: &'static str) -> Result<u8, &'static str> {
    match parse_i64(bytes) {
        Some(n) if (0..i64::from(DATABASES)).contains(&n) => Ok(n as u8),
        Some(_) => Err("ERR DB index is out of range"),
        None => Err(not_integer),
    }
}

impl KvServer {
    fn cmd_select(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_db(&ctx.arg(1), NOT_INTEGER) {
            Ok(db) => {
                ctx.conn.db = db;
                ctx.ok();
            }
            Err(why) => ctx.error(why),
        }
        Ok(())
    }

    fn cmd_dbsize(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let size = self.store.db_size(ctx.pool, ctx.db)?;
        ctx.int(size as i64);
        Ok(())
    }

    /// FLUSHDB and FLUSHALL's only option.
    fn flush_option_ok(ctx: &mut Ctx<'_>) -> bool {
        let ok = ctx.argc() == 1
            || (ctx.argc() == 2 && matches!(ctx.conn.args.upper(1).as_deref(), Some(b"SYNC" | b"ASYNC")));
        if !ok {
            ctx.error(SYNTAX);
        }
        ok
    }

    fn cmd_flushdb(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if Self::flush_option_ok(ctx) {
            let logical = ctx.conn.db;
            self.flush_databases(ctx, &[logical])?;
            ctx.ok();
        }
        Ok(())
    }

    fn cmd_flushall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if Self::flush_option_ok(ctx) {
            let all: Vec<u8> = (0..DATABASES as u8).collect();
            self.flush_databases(ctx, &all)?;
            ctx.ok();
        }
        Ok(())
    }

    /// Empties logical databases `logicals` in one store group: each that
    /// holds anything gets a new physical id, and its old one is dead.
    fn flush_databases(&mut self, ctx: &mut Ctx<'_>, logicals: &[u8]) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        let mut next = self.store.db_next();
        let mut flushed = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            for &logical in logicals {
                let old = server.store.physical_db(logical);
                if server.store.db_size(ctx.pool, old)? == 0 {
                    continue;
                }
                ops.push(server.put_staged(ctx.pool, ctx.buffers, db_entry_key(logical), &next.to_le_bytes())?);
                ops.push(server.put_staged(ctx.pool, ctx.buffers, dead_db_key(old).to_vec(), &[])?);
                flushed.push(logical);
                next = next.checked_add(1).ok_or_else(|| StoreError::Full("database ids are exhausted".into()))?;
            }
            if !ops.is_empty() {
                ops.push(server.put_staged(ctx.pool, ctx.buffers, DB_NEXT_ENTRY.to_vec(), &next.to_le_bytes())?);
            }
            Ok(())
        })?;
        // Watchers of keys that existed fail their EXEC.
        let existed = self.watched_existing(ctx, &flushed);
        self.apply(ctx, &ops)?;
        self.touch_all_keys(|id| existed.contains(id));
        self.tracking_flush();
        self.wake_all_blocked();
        if !flushed.is_empty() {
            self.scan_cursors.clear();
        }
        Ok(())
    }

    /// The watched keys of logical databases `logicals` that exist now.
    fn watched_existing(&self, ctx: &Ctx<'_>, logicals: &[u8]) -> std::collections::HashSet<Vec<u8>> {
        self.watched
            .keys()
            .filter(|id| id.first().is_some_and(|db| logicals.contains(db)))
            .filter(|id| {
                let db = self.store.physical_db(id[0]);
                self.store.key_type(ctx.pool, db, &id[1..], ctx.now).ok().flatten().is_some()
            })
            .cloned()
            .collect()
    }

    fn cmd_swapdb(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let first = parse_db(&ctx.arg(1), "ERR invalid first DB index");
        let second = parse_db(&ctx.arg(2), "ERR invalid second DB index");
        let (a, b) = match (first, second) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(why), _) | (_, Err(why)) => {
                ctx.error(why);
                return Ok(());
            }
        };
        if a != b {
            let (pa, pb) = (self.store.physical_db(a), self.store.physical_db(b));
            let existed = self.watched_existing(ctx, &[a, b]);
            let mut ops = Vec::new();
            self.build_ops(ctx, &mut ops, |server, ctx, ops| {
                ops.push(server.put_staged(ctx.pool, ctx.buffers, db_entry_key(a), &pb.to_le_bytes())?);
                ops.push(server.put_staged(ctx.pool, ctx.buffers, db_entry_key(b), &pa.to_le_bytes())?);
                Ok(())
            })?;
            self.apply(ctx, &ops)?;
            // Keys of either database that exist now, or did, are changed.
            let now_existing = self.watched_existing(ctx, &[a, b]);
            self.touch_all_keys(|id| existed.contains(id) || now_existing.contains(id));
            self.wake_all_blocked();
        }
        ctx.ok();
        Ok(())
    }

    fn cmd_move(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let target = match parse_db(&ctx.arg(2), NOT_INTEGER) {
            Ok(target) => target,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        if target == ctx.conn.db {
            ctx.error("ERR source and destination objects are the same");
            return Ok(());
        }
        let dst: DbId = self.store.physical_db(target);
        let exists_src = self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_some();
        if !exists_src || self.store.key_type(ctx.pool, dst, &key, ctx.now)?.is_some() {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            // An expired key at the destination is removed first.
            server.delete_ops(ctx.pool, ctx.buffers, dst, &key, ops)?;
            server.relocate_ops(ctx, &key, dst, &key, ops)
        })?;
        self.apply(ctx, &ops)?;
        self.touch_key(&watch_id(target, &key), true);
        ctx.int(1);
        Ok(())
    }
}
