//! Keyspace commands: DEL/UNLINK, EXISTS, TOUCH, KEYS, SCAN, TYPE,
//! RANDOMKEY, MEMORY USAGE, RENAME, RENAMENX, COPY (expiry is `expire.rs`).
//!
//! DEL of a collection is O(1) whatever its size: its object goes to the
//! graveyard (`g` oid) and the reclaimer empties it in the background.
//! RENAME moves a collection's `m` entry (O(1)) or a string's extents (no
//! byte copied). COPY of a collection writes each element under a new
//! object id (O(n), as Redis's), naming the same value extents.
//!
//! Invariant: an expired key reads as absent; a write that finds it
//! expired removes it in its own store group, and the server's tick
//! removes the others (durably, as writes).

use crate::apps::kv::cmd::databases::parse_db;
use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, parse_cursor, parse_i64, parse_scan_args, random_below, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, watch_id, CommandEntry, Ctx, KvServer};
use crate::proto::resp::glob_match;
use crate::store::db::{value_len, Op, StoreError};
use crate::store::keyspace::{
    db_user_key, element_key, expire_key, meta_key, string_key, DbId, KeyType, Meta, ELEMENT_PREFIX_LEN,
    KEY_PREFIX_LEN, META_SIZE, OID_ENTRY,
};

/// RANDOMKEY's tries at finding a key that has not expired.
const RANDOMKEY_TRIES_MAX: usize = 100;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("del", -2, &["write"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("unlink", -2, &["write", "fast"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("exists", -2, &["readonly", "fast"], (1, -1, 1), "generic", "Counts how many of the keys exist.", KvServer::cmd_exists),
    cmd("touch", -2, &["readonly", "fast"], (1, -1, 1), "generic", "Counts how many of the keys exist (packetstore keeps no access time).", KvServer::cmd_exists),
    cmd("keys", 2, &["readonly"], (0, 0, 0), "generic", "Returns the keys matching a pattern.", KvServer::cmd_keys),
    cmd("scan", -2, &["readonly"], (0, 0, 0), "generic", "Iterates over the keys.", KvServer::cmd_scan),
    cmd("type", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the type of a key.", KvServer::cmd_type),
    cmd("randomkey", 1, &["readonly"], (0, 0, 0), "generic", "Returns a random key.", KvServer::cmd_randomkey),
    cmd("rename", 3, &["write"], (1, 2, 1), "generic", "Renames a key.", KvServer::cmd_rename),
    cmd("renamenx", 3, &["write", "fast"], (1, 2, 1), "generic", "Renames a key if the new name is free.", KvServer::cmd_renamenx),
    cmd("copy", -3, &["write", "denyoom"], (1, 2, 1), "generic", "Copies a key.", KvServer::cmd_copy),
    cmd("memory", -2, &["readonly"], (0, 0, 0), "server", "MEMORY USAGE: the bytes a key takes in the pool (its entries, values and their overhead).", KvServer::cmd_memory),
];

impl KvServer {
    fn cmd_del(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        let mut deleted = 0;
        let mut live_keys = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            if !seen.insert(key.clone()) {
                continue;
            }
            let live = self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_some();
            let found = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
                server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &key, ops)
            })?;
            if live && found {
                deleted += 1;
                if self.notifies(notify::GENERIC) {
                    live_keys.push(key);
                }
            }
        }
        self.apply(ctx, &ops)?;
        live_keys.iter().for_each(|key| self.notify(ctx, notify::GENERIC, "del", key));
        ctx.int(deleted);
        Ok(())
    }

    fn cmd_exists(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut count = 0;
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_some() {
                count += 1;
            }
        }
        ctx.int(count);
        Ok(())
    }

    fn cmd_keys(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let pattern = ctx.arg(1).into_owned();
        let (keys, _) =
            self.store.scan(ctx.pool, ctx.db, None, usize::MAX, ctx.now, |key| glob_match(&pattern, key))?;
        ctx.array(keys.len());
        for key in keys {
            ctx.bulk(&key);
        }
        Ok(())
    }

    fn cmd_scan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let parsed = parse_cursor(&ctx.arg(1)).and_then(|cursor| Ok((cursor, parse_scan_args(ctx, 2, true)?)));
        let (cursor, args) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        // A cursor remembers the database it scanned: another one's (after
        // SELECT) starts over.
        let after = self
            .find_cursor(cursor)
            .and_then(|id| (id.len() >= 4 && id[..4] == ctx.db.to_be_bytes()).then(|| id[4..].to_vec()));
        let (pool, now, db) = (ctx.pool, ctx.now, ctx.db);
        let store = &self.store;
        let (keys, last) = store.scan(pool, db, after.as_deref(), args.count, now, |key| {
            args.pattern.as_ref().is_none_or(|p| glob_match(p, key))
                && args.type_filter.as_ref().is_none_or(|t| {
                    let kind = store.key_type(pool, db, key, now).ok().flatten();
                    kind.is_some_and(|kind| kind.name().as_bytes() == t.as_slice())
                })
        })?;
        let next = match last {
            Some(key) => self.save_cursor(db_user_key(db, &key)),
            None => 0,
        };
        ctx.array(2);
        ctx.bulk(next.to_string().as_bytes());
        ctx.array(keys.len());
        for key in keys {
            ctx.bulk(&key);
        }
        Ok(())
    }

    /// MEMORY USAGE key [SAMPLES n]: what the key takes in the pool, as
    /// tree entries (key, value header and slot) plus value bytes; nil if
    /// absent. MEMORY DOCTOR and STATS are Redis's allocator's: refused.
    fn cmd_memory(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let usage = ctx.conn.args.upper(1).filter(|sub| sub == b"USAGE");
        let samples_ok = ctx.argc() == 3
            || (ctx.argc() == 5
                && ctx.conn.args.upper(3).as_deref() == Some(b"SAMPLES")
                && parse_i64(&ctx.arg(4)).is_some());
        if usage.is_none() || !samples_ok {
            let sub = String::from_utf8_lossy(&ctx.arg(1)).into_owned();
            ctx.error(&format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try MEMORY HELP."));
            return Ok(());
        }
        let key = ctx.arg(2).into_owned();
        /// A tree entry's own bytes: key length, value header, slot.
        const ENTRY_OVERHEAD: u64 = 2 + 3 + 2;
        let bytes = match self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)? {
            None => {
                ctx.null();
                return Ok(());
            }
            Some(KeyType::String) => {
                let len = self.store.get(ctx.pool, ctx.db, &key, ctx.now)?.as_ref().map_or(0, value_len);
                ENTRY_OVERHEAD + KEY_PREFIX_LEN as u64 + key.len() as u64 + len
            }
            Some(_) => {
                let meta = self.store.meta_raw(ctx.pool, ctx.db, &key)?.expect("a collection");
                let each: u64 = self
                    .store
                    .object_entries(ctx.pool, meta.oid)?
                    .iter()
                    .map(|(k, v)| ENTRY_OVERHEAD + k.len() as u64 + value_len(v))
                    .sum();
                ENTRY_OVERHEAD + (KEY_PREFIX_LEN + key.len() + META_SIZE) as u64 + each
            }
        };
        ctx.int(bytes as i64);
        Ok(())
    }

    fn cmd_type(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let name = self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.map_or("none", KeyType::name);
        let enc = ctx.enc();
        enc.simple(ctx.out.bytes(), name);
        Ok(())
    }

    /// RANDOMKEY: a key of the database picked by rank (O(log n)); an
    /// expired one is skipped, a few times at most, as Redis does.
    fn cmd_randomkey(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let size = self.store.db_size(ctx.pool, ctx.db)?;
        for _ in 0..RANDOMKEY_TRIES_MAX {
            if size == 0 {
                break;
            }
            let Some(key) = self.store.key_at(ctx.pool, ctx.db, random_below(size))? else { break };
            if !self.store.is_expired(ctx.db, &key, ctx.now) {
                ctx.bulk(&key);
                return Ok(());
            }
        }
        ctx.null();
        Ok(())
    }

    fn cmd_rename(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.rename_generic(ctx, false)
    }

    fn cmd_renamenx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.rename_generic(ctx, true)
    }

    /// RENAME and RENAMENX (`nx`: only if the new name is free).
    fn rename_generic(&mut self, ctx: &mut Ctx<'_>, nx: bool) -> Result<(), StoreError> {
        let (src, dst) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if let Err(why) = key_ok(&dst) {
            ctx.error(&why);
            return Ok(());
        }
        if self.store.key_type(ctx.pool, ctx.db, &src, ctx.now)?.is_none() {
            ctx.error("ERR no such key");
            return Ok(());
        }
        if src == dst {
            if nx {
                ctx.int(0);
            } else {
                ctx.ok();
            }
            return Ok(());
        }
        if nx && self.store.key_type(ctx.pool, ctx.db, &dst, ctx.now)?.is_some() {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &dst, ops)?;
            let db = ctx.db;
            server.relocate_ops(ctx, &src, db, &dst, ops)
        })?;
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::GENERIC, "rename_from", &src);
        self.notify(ctx, notify::GENERIC, "rename_to", &dst);
        if nx {
            ctx.int(1);
        } else {
            ctx.ok();
        }
        Ok(())
    }

    /// COPY's options after the two keys: the destination's logical
    /// database and REPLACE. Err: the error reply.
    fn copy_options(ctx: &Ctx<'_>) -> Result<(u8, bool), &'static str> {
        let (mut logical, mut replace) = (ctx.conn.db, false);
        let mut i = 3;
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"REPLACE") => replace = true,
                Some(b"DB") if i + 1 < ctx.argc() => {
                    i += 1;
                    logical = parse_db(&ctx.arg(i), NOT_INTEGER)?;
                }
                _ => return Err(SYNTAX),
            }
            i += 1;
        }
        Ok((logical, replace))
    }

    /// COPY source destination [DB n] [REPLACE].
    fn cmd_copy(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (src, dst) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let (logical, replace) = match Self::copy_options(ctx) {
            Ok(options) => options,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        if let Err(why) = key_ok(&dst) {
            ctx.error(&why);
            return Ok(());
        }
        if src == dst && logical == ctx.conn.db {
            ctx.error("ERR source and destination objects are the same");
            return Ok(());
        }
        let dst_db = self.store.physical_db(logical);
        let Some(kind) = self.store.key_type(ctx.pool, ctx.db, &src, ctx.now)? else {
            ctx.int(0);
            return Ok(());
        };
        if !replace && self.store.key_type(ctx.pool, dst_db, &dst, ctx.now)?.is_some() {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.delete_ops(ctx.pool, ctx.buffers, dst_db, &dst, ops)?;
            server.copy_ops(ctx, &src, kind, dst_db, &dst, ops)
        })?;
        self.apply(ctx, &ops)?;
        self.touch_key(&watch_id(logical, &dst), true);
        ctx.int(1);
        Ok(())
    }

    /// Ops writing a copy of the live key `src` (of type `kind`) as `dst`
    /// of `dst_db`, with its expiry: a string names the same extents; a
    /// collection gets a new oid and each element is written under it.
    fn copy_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        src: &[u8],
        kind: KeyType,
        dst_db: DbId,
        dst: &[u8],
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if kind == KeyType::String {
            let value = self.store.get_raw(ctx.pool, &string_key(ctx.db, src))?.expect("a live string");
            ops.push(self.value_op(ctx, string_key(dst_db, dst), &value)?);
        } else {
            let meta = self.store.meta_raw(ctx.pool, ctx.db, src)?.expect("a live collection");
            let copy = Meta { kind, oid: self.store.next_oid() };
            ops.push(self.put_staged(ctx.pool, ctx.buffers, OID_ENTRY.to_vec(), &copy.oid.to_le_bytes())?);
            ops.push(self.put_staged(ctx.pool, ctx.buffers, meta_key(dst_db, dst), &copy.encode())?);
            for (tree_key, value) in self.store.object_entries(ctx.pool, meta.oid)? {
                let space = tree_key[ELEMENT_PREFIX_LEN - 1];
                let new_key = element_key(copy.oid, space, &tree_key[ELEMENT_PREFIX_LEN..]);
                ops.push(self.value_op(ctx, new_key, &value)?);
            }
        }
        if let Some(at) = self.store.expiry(ctx.db, src) {
            ops.push(self.put_staged(ctx.pool, ctx.buffers, expire_key(dst_db, dst), &at.to_le_bytes())?);
        }
        Ok(())
    }

    // ---- HTTP (pKVS) ----
}
