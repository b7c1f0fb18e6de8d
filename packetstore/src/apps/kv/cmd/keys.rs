//! Keyspace commands: DEL/UNLINK, EXISTS, KEYS, SCAN, TYPE, TTL/PTTL,
//! EXPIRE/PEXPIRE, PERSIST.
//!
//! Invariant: an expired key reads as absent; a write that finds it
//! expired removes it in its own store group, and the server's tick
//! removes the others (durably, as writes).

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer, SCAN_CURSORS_MAX};
use crate::proto::resp::glob_match;
use crate::store::db::{expire_key, KeyType, Op, StoreError};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("del", -2, &["write"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("unlink", -2, &["write", "fast"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("exists", -2, &["readonly", "fast"], (1, -1, 1), "generic", "Counts how many of the keys exist.", KvServer::cmd_exists),
    cmd("keys", 2, &["readonly"], (0, 0, 0), "generic", "Returns the keys matching a pattern.", KvServer::cmd_keys),
    cmd("scan", -2, &["readonly"], (0, 0, 0), "generic", "Iterates over the keys.", KvServer::cmd_scan),
    cmd("type", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the type of a key.", KvServer::cmd_type),
    cmd("ttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in seconds.", KvServer::cmd_ttl),
    cmd("pttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in milliseconds.", KvServer::cmd_pttl),
    cmd("expire", 3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in seconds.", KvServer::cmd_expire),
    cmd("pexpire", 3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in milliseconds.", KvServer::cmd_pexpire),
    cmd("memory", -2, &["readonly"], (0, 0, 0), "server", "MEMORY USAGE: the bytes a key takes in the pool (its entries, values and their overhead).", KvServer::cmd_memory),
    cmd("persist", 2, &["write", "fast"], (1, 1, 1), "generic", "Removes the time to live of a key.", KvServer::cmd_persist),
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
            let live = self.store.key_type(ctx.pool, &key, ctx.now)?.is_some();
            let before = ops.len();
            self.delete_ops(ctx.pool, &key, &mut ops)?;
            if live && ops.len() > before {
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
            if self.store.key_type(ctx.pool, &key, ctx.now)?.is_some() {
                count += 1;
            }
        }
        ctx.int(count);
        Ok(())
    }

    fn cmd_keys(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let pattern = ctx.arg(1).into_owned();
        let (keys, _) = self.store.scan(ctx.pool, None, usize::MAX, ctx.now, |key| glob_match(&pattern, key))?;
        ctx.array(keys.len());
        for key in keys {
            ctx.bulk(&key);
        }
        Ok(())
    }

    fn cmd_scan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(cursor) = std::str::from_utf8(&ctx.arg(1)).ok().and_then(|c| c.parse::<u64>().ok()) else {
            ctx.error("ERR invalid cursor");
            return Ok(());
        };
        let (mut pattern, mut count, mut type_filter) = (None, 10usize, None);
        let mut i = 2;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            if i + 1 >= ctx.argc() {
                ctx.error(SYNTAX);
                return Ok(());
            }
            match option.as_slice() {
                b"MATCH" => pattern = Some(ctx.arg(i + 1).into_owned()),
                b"COUNT" => match parse_i64(&ctx.arg(i + 1)) {
                    Some(n) if n >= 1 => count = n.min(1_000_000) as usize,
                    Some(_) => {
                        ctx.error(SYNTAX);
                        return Ok(());
                    }
                    None => {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    }
                },
                b"TYPE" => type_filter = Some(ctx.arg(i + 1).to_ascii_lowercase()),
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(());
                }
            }
            i += 2;
        }
        let after = if cursor == 0 {
            None
        } else {
            // An unknown cursor (forgotten) starts over.
            self.scan_cursors.iter().find(|(id, _)| *id == cursor).map(|(_, key)| key.clone())
        };
        let (pool, now) = (ctx.pool, ctx.now);
        let store = &self.store;
        let (keys, last) = store.scan(pool, after.as_deref(), count, now, |key| {
            pattern.as_ref().is_none_or(|p| glob_match(p, key))
                && type_filter.as_ref().is_none_or(|t| {
                    let kind = store.key_type(pool, key, now).ok().flatten();
                    matches!((t.as_slice(), kind), (b"string", Some(KeyType::String)) | (b"hash", Some(KeyType::Hash)))
                })
        })?;
        let next = match last {
            Some(key) => {
                let id = self.next_cursor;
                self.next_cursor += 1;
                if self.scan_cursors.len() >= SCAN_CURSORS_MAX {
                    self.scan_cursors.pop_front();
                }
                self.scan_cursors.push_back((id, key));
                id
            }
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
        let bytes = match self.store.key_type(ctx.pool, &key, ctx.now)? {
            None => {
                ctx.null();
                return Ok(());
            }
            Some(KeyType::String) => {
                let len = self.store.get(ctx.pool, &key, ctx.now)?.as_ref().map_or(0, crate::store::db::value_len);
                ENTRY_OVERHEAD + 1 + key.len() as u64 + len
            }
            Some(KeyType::Hash) => {
                let fields = self.store.hash_fields(ctx.pool, &key, ctx.now)?;
                let each: u64 = fields
                    .iter()
                    .map(|(f, v)| ENTRY_OVERHEAD + 3 + (key.len() + f.len()) as u64 + crate::store::db::value_len(v))
                    .sum();
                ENTRY_OVERHEAD + 1 + key.len() as u64 + 8 + each
            }
        };
        ctx.int(bytes as i64);
        Ok(())
    }

    fn cmd_type(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let name = match self.store.key_type(ctx.pool, &key, ctx.now)? {
            Some(KeyType::String) => "string",
            Some(KeyType::Hash) => "hash",
            None => "none",
        };
        let enc = ctx.enc();
        enc.simple(ctx.out.bytes(), name);
        Ok(())
    }

    fn ttl_ms(&self, ctx: &Ctx<'_>) -> Result<i64, StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() {
            return Ok(-2);
        }
        Ok(self.store.expiry(&key).map_or(-1, |at| at.saturating_sub(ctx.now) as i64))
    }

    fn cmd_ttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.ttl_ms(ctx)?;
        ctx.int(if ms < 0 { ms } else { (ms + 500) / 1000 });
        Ok(())
    }

    fn cmd_pttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.ttl_ms(ctx)?;
        ctx.int(ms);
        Ok(())
    }

    fn expire_in(&mut self, ctx: &mut Ctx<'_>, scale: i64) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Some(at) =
            parse_i64(&ctx.arg(2)).and_then(|n| n.checked_mul(scale)).and_then(|ms| ms.checked_add(ctx.now as i64))
        else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        if at <= ctx.now as i64 {
            self.delete_ops(ctx.pool, &key, &mut ops)?;
        } else {
            let put = self.put_bytes(ctx, expire_key(&key), &(at as u64).to_le_bytes())?;
            ops.push(put);
        }
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::GENERIC, if at <= ctx.now as i64 { "del" } else { "expire" }, &key);
        ctx.int(1);
        Ok(())
    }

    fn cmd_expire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_in(ctx, 1000)
    }

    fn cmd_pexpire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_in(ctx, 1)
    }

    fn cmd_persist(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() || self.store.expiry(&key).is_none() {
            ctx.int(0);
            return Ok(());
        }
        self.apply(ctx, &[Op::Del { key: expire_key(&key) }])?;
        self.notify(ctx, notify::GENERIC, "persist", &key);
        ctx.int(1);
        Ok(())
    }

    // ---- HTTP (pKVS) ----
}
