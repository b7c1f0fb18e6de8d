//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HDEL, HLEN, HSTRLEN,
//! HEXISTS, HINCRBY, HINCRBYFLOAT, HKEYS, HVALS, HGETALL, HRANDFIELD,
//! HSCAN (Redis 7.0's `t_hash.c`).
//!
//! A hash is an object (schema 2): an `m` entry naming its oid, and one
//! tree entry per field, `e` oid `0x01` field, whose value is the field's
//! value, kept in the buffers it was received into when large. Nothing
//! stores the number of fields: HLEN counts them in the tree (O(log n)),
//! so adding a field writes that field alone.
//!
//! Invariant: a hash with no field left is deleted (its `m` entry and
//! expiry) in the same store group as the removal of its last field.

use std::ops::Bound;

use crate::apps::kv::cmd::notify;
use crate::apps::kv::cmd::strings::{add_floats, parse_float, FLOAT_CHARS_MAX, NOT_FLOAT};
use crate::apps::kv::ops::{key_ok, parse_cursor, parse_i64, parse_scan_args, random_below, NOT_INTEGER, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::proto::resp::glob_match;
use crate::store::db::{value_bytes, value_len, Op, StoreError, FIELD_SIZE_MAX};
use crate::store::keyspace::{element_key, KeyType, Meta, SPACE_MAIN};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("hset", -4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets fields of a hash.", KvServer::cmd_hset),
    cmd("hmset", -4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets fields of a hash (replies OK).", KvServer::cmd_hmset),
    cmd("hsetnx", 4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets a field of a hash if it does not exist.", KvServer::cmd_hsetnx),
    cmd("hget", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the value of a hash field.", KvServer::cmd_hget),
    cmd("hmget", -3, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the values of hash fields.", KvServer::cmd_hmget),
    cmd("hdel", -3, &["write", "fast"], (1, 1, 1), "hash", "Deletes fields of a hash.", KvServer::cmd_hdel),
    cmd("hgetall", 2, &["readonly"], (1, 1, 1), "hash", "Returns every field and value of a hash.", KvServer::cmd_hgetall),
    cmd("hkeys", 2, &["readonly"], (1, 1, 1), "hash", "Returns the fields of a hash.", KvServer::cmd_hkeys),
    cmd("hvals", 2, &["readonly"], (1, 1, 1), "hash", "Returns the values of a hash.", KvServer::cmd_hvals),
    cmd("hlen", 2, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the number of fields of a hash.", KvServer::cmd_hlen),
    cmd("hstrlen", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the length of a hash field's value.", KvServer::cmd_hstrlen),
    cmd("hexists", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Whether a hash field exists.", KvServer::cmd_hexists),
    cmd("hincrby", 4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Adds an integer to a hash field.", KvServer::cmd_hincrby),
    cmd("hincrbyfloat", 4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Adds a number to a hash field.", KvServer::cmd_hincrbyfloat),
    cmd("hrandfield", -2, &["readonly"], (1, 1, 1), "hash", "Returns random fields of a hash.", KvServer::cmd_hrandfield),
    cmd("hscan", -3, &["readonly"], (1, 1, 1), "hash", "Iterates over the fields and values of a hash.", KvServer::cmd_hscan),
];

/// A field's size check. Err: the error reply.
fn field_ok(field: &[u8]) -> Result<(), String> {
    if field.len() > FIELD_SIZE_MAX {
        return Err(format!("ERR field of {} bytes is over the limit of {FIELD_SIZE_MAX}", field.len()));
    }
    Ok(())
}

impl KvServer {
    /// The live hash at argument 1, None if absent; replies WRONGTYPE and
    /// returns Err(()) if the key holds another type.
    fn hash_read(&self, ctx: &mut Ctx<'_>) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let key = ctx.arg(1).into_owned();
        let found = self.collection(ctx, &key, KeyType::Hash)?;
        if found.is_err() {
            ctx.error(WRONGTYPE);
        }
        Ok(found)
    }

    fn cmd_hset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.hset_generic(ctx, "hset", false)
    }

    fn cmd_hmset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.hset_generic(ctx, "hmset", true)
    }

    /// HSET and HMSET: sets the field and value pairs from argument 2 on;
    /// replies with the number of fields added (or OK).
    fn hset_generic(&mut self, ctx: &mut Ctx<'_>, name: &str, reply_ok: bool) -> Result<(), StoreError> {
        if ctx.argc() % 2 != 0 {
            ctx.error(&format!("ERR wrong number of arguments for '{name}' command"));
            return Ok(());
        }
        let key = ctx.arg(1).into_owned();
        let checked = key_ok(&key).and_then(|()| (2..ctx.argc()).step_by(2).try_for_each(|i| field_ok(&ctx.arg(i))));
        if let Err(why) = checked {
            ctx.error(&why);
            return Ok(());
        }
        let mut ops = Vec::new();
        let added = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let Ok((meta, created)) = server.collection_for_write(ctx, &key, KeyType::Hash, ops)? else {
                return Ok(None);
            };
            let mut seen = std::collections::HashSet::new();
            let mut added = 0;
            for i in (2..ctx.argc()).step_by(2) {
                let field = ctx.arg(i).into_owned();
                let new = created || server.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)?.is_none();
                if seen.insert(field.clone()) && new {
                    added += 1;
                }
                ops.push(server.put_element_arg(ctx, meta.oid, SPACE_MAIN, &field, i + 1)?);
            }
            Ok(Some(added))
        })?;
        let Some(added) = added else {
            ctx.error(WRONGTYPE);
            return Ok(());
        };
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::HASH, "hset", &key);
        if reply_ok {
            ctx.ok();
        } else {
            ctx.int(added);
        }
        Ok(())
    }

    fn cmd_hsetnx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if let Err(why) = key_ok(&key).and_then(|()| field_ok(&field)) {
            ctx.error(&why);
            return Ok(());
        }
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        if let Some(meta) = found {
            if self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)?.is_some() {
                ctx.int(0);
                return Ok(());
            }
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let meta = match found {
                Some(meta) => meta,
                None => server.collection_for_write(ctx, &key, KeyType::Hash, ops)?.expect("checked").0,
            };
            ops.push(server.put_element_arg(ctx, meta.oid, SPACE_MAIN, &field, 3)?);
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::HASH, "hset", &key);
        ctx.int(1);
        Ok(())
    }

    fn cmd_hget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        self.stats.reads += 1;
        let field = ctx.arg(2).into_owned();
        match found.map(|meta| self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)).transpose()?.flatten() {
            Some(value) => self.reply_value(ctx, &value)?,
            None => ctx.null(),
        }
        Ok(())
    }

    fn cmd_hmget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        self.stats.reads += 1;
        ctx.array(ctx.argc() - 2);
        for i in 2..ctx.argc() {
            let field = ctx.arg(i).into_owned();
            match found.map(|meta| self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)).transpose()?.flatten() {
                Some(value) => self.reply_value(ctx, &value)?,
                None => ctx.null(),
            }
        }
        Ok(())
    }

    fn cmd_hdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let key = ctx.arg(1).into_owned();
        let mut ops = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in 2..ctx.argc() {
            let field = ctx.arg(i).into_owned();
            if seen.insert(field.clone()) && self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)?.is_some() {
                ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, &field) });
            }
        }
        let removed = ops.len();
        if removed > 0 {
            let emptied = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)? == removed as u64;
            if emptied {
                self.drop_empty_ops(ctx, &key, &mut ops);
            }
            self.apply(ctx, &ops)?;
            self.notify(ctx, notify::HASH, "hdel", &key);
            if emptied {
                self.notify(ctx, notify::GENERIC, "del", &key);
            }
        }
        ctx.int(removed as i64);
        Ok(())
    }

    /// Every field and value of the hash at argument 1, in field order.
    fn hash_entries(&self, ctx: &Ctx<'_>, meta: Option<Meta>) -> Result<Vec<(Vec<u8>, Value)>, StoreError> {
        let Some(meta) = meta else { return Ok(Vec::new()) };
        self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false).collect()
    }

    fn cmd_hgetall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let entries = self.hash_entries(ctx, found)?;
        ctx.map(entries.len());
        for (field, value) in entries {
            ctx.bulk(&field);
            self.reply_value(ctx, &value)?;
        }
        Ok(())
    }

    fn cmd_hkeys(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let entries = self.hash_entries(ctx, found)?;
        ctx.array(entries.len());
        for (field, _) in entries {
            ctx.bulk(&field);
        }
        Ok(())
    }

    fn cmd_hvals(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let entries = self.hash_entries(ctx, found)?;
        ctx.array(entries.len());
        for (_, value) in entries {
            self.reply_value(ctx, &value)?;
        }
        Ok(())
    }

    fn cmd_hlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let len = match found {
            Some(meta) => self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?,
            None => 0,
        };
        ctx.int(len as i64);
        Ok(())
    }

    /// The value of field argument 2 of the hash at argument 1 (None:
    /// absent); Err(()) after replying WRONGTYPE.
    fn hash_field(&self, ctx: &mut Ctx<'_>) -> Result<Result<Option<Value>, ()>, StoreError> {
        let Ok(found) = self.hash_read(ctx)? else { return Ok(Err(())) };
        let field = ctx.arg(2).into_owned();
        Ok(Ok(found.map(|meta| self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &field)).transpose()?.flatten()))
    }

    fn cmd_hstrlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(value) = self.hash_field(ctx)? else { return Ok(()) };
        ctx.int(value.as_ref().map_or(0, value_len) as i64);
        Ok(())
    }

    fn cmd_hexists(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(value) = self.hash_field(ctx)? else { return Ok(()) };
        ctx.int(i64::from(value.is_some()));
        Ok(())
    }

    /// Writes `bytes` as field argument 2 of the hash at argument 1
    /// (created if absent): one store group.
    fn hash_put_computed(&mut self, ctx: &mut Ctx<'_>, bytes: &[u8]) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let (meta, _) = server.collection_for_write(ctx, &key, KeyType::Hash, ops)?.expect("type checked");
            ops.push(server.put_bytes(ctx, element_key(meta.oid, SPACE_MAIN, &field), bytes)?);
            Ok(())
        })?;
        self.apply(ctx, &ops)
    }

    /// The checks HINCRBY and HINCRBYFLOAT share: key and field sizes, and
    /// the type. Returns the field's current value (None: absent), or
    /// Err(()) once an error was replied.
    fn hincr_current(&self, ctx: &mut Ctx<'_>) -> Result<Result<Option<Vec<u8>>, ()>, StoreError> {
        if let Err(why) = key_ok(&ctx.arg(1)).and_then(|()| field_ok(&ctx.arg(2))) {
            ctx.error(&why);
            return Ok(Err(()));
        }
        let Ok(value) = self.hash_field(ctx)? else { return Ok(Err(())) };
        Ok(Ok(match value {
            Some(value) if value_len(&value) >= FLOAT_CHARS_MAX => Some(b"not a number: too long".to_vec()),
            Some(value) => Some(value_bytes(ctx.pool, &value)?.into_owned()),
            None => None,
        }))
    }

    fn cmd_hincrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(by) = parse_i64(&ctx.arg(3)) else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        let Ok(current) = self.hincr_current(ctx)? else { return Ok(()) };
        let current = match current.map(|bytes| parse_i64(&bytes)) {
            None => 0,
            Some(Some(n)) => n,
            Some(None) => {
                ctx.error("ERR hash value is not an integer");
                return Ok(());
            }
        };
        let Some(sum) = current.checked_add(by) else {
            ctx.error("ERR increment or decrement would overflow");
            return Ok(());
        };
        self.hash_put_computed(ctx, sum.to_string().as_bytes())?;
        let key = ctx.arg(1).into_owned();
        self.notify(ctx, notify::HASH, "hincrby", &key);
        ctx.int(sum);
        Ok(())
    }

    fn cmd_hincrbyfloat(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_float(&ctx.arg(3)) {
            None => {
                ctx.error(NOT_FLOAT);
                return Ok(());
            }
            Some(by) if !by.is_finite() => {
                ctx.error("ERR value is NaN or Infinity");
                return Ok(());
            }
            Some(_) => {}
        }
        let Ok(current) = self.hincr_current(ctx)? else { return Ok(()) };
        let current = current.unwrap_or_else(|| b"0".to_vec());
        if parse_float(&current).is_none() {
            ctx.error("ERR hash value is not a float");
            return Ok(());
        }
        let text = match add_floats(&current, &ctx.arg(3)) {
            Ok(text) => text,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        self.hash_put_computed(ctx, text.as_bytes())?;
        let key = ctx.arg(1).into_owned();
        self.notify(ctx, notify::HASH, "hincrbyfloat", &key);
        ctx.bulk(text.as_bytes());
        Ok(())
    }
}

/// HRANDFIELD's count: the number of picks and whether they may repeat.
enum Picks {
    One,
    Distinct(u64),
    Repeating(u64),
}

impl KvServer {
    fn cmd_hrandfield(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let with_values = ctx.argc() == 4 && ctx.conn.args.upper(3).as_deref() == Some(b"WITHVALUES");
        if ctx.argc() > 4 || (ctx.argc() == 4 && !with_values) {
            ctx.error(crate::apps::kv::ops::SYNTAX);
            return Ok(());
        }
        let picks = match (ctx.argc() > 2).then(|| parse_i64(&ctx.arg(2))) {
            None => Picks::One,
            Some(None) => {
                ctx.error(NOT_INTEGER);
                return Ok(());
            }
            Some(Some(n)) if n >= 0 => Picks::Distinct(n as u64),
            Some(Some(n)) if n == i64::MIN || (n < -(i64::MAX / 2) && with_values) => {
                ctx.error("ERR value is out of range");
                return Ok(());
            }
            Some(Some(n)) => Picks::Repeating(n.unsigned_abs()),
        };
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let Some(meta) = found else {
            if matches!(picks, Picks::One) {
                ctx.null();
            } else {
                ctx.array(0);
            }
            return Ok(());
        };
        let size = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?;
        let ranks = random_ranks(&picks, size);
        if matches!(picks, Picks::One) {
            let (field, _) = self.store.element_nth(ctx.pool, meta.oid, SPACE_MAIN, ranks[0])?.expect("a rank");
            ctx.bulk(&field);
            return Ok(());
        }
        self.reply_picked(ctx, meta, &ranks, with_values)
    }

    /// Replies with the fields (and values) at `ranks`.
    fn reply_picked(
        &mut self,
        ctx: &mut Ctx<'_>,
        meta: Meta,
        ranks: &[u64],
        with_values: bool,
    ) -> Result<(), StoreError> {
        let resp3 = ctx.enc().resp3;
        ctx.array(if with_values && !resp3 { ranks.len() * 2 } else { ranks.len() });
        for &rank in ranks {
            let (field, value) = self.store.element_nth(ctx.pool, meta.oid, SPACE_MAIN, rank)?.expect("a rank");
            if with_values && resp3 {
                ctx.array(2);
            }
            ctx.bulk(&field);
            if with_values {
                self.reply_value(ctx, &value)?;
            }
        }
        Ok(())
    }

    fn cmd_hscan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let cursor = match parse_cursor(&ctx.arg(2)) {
            Ok(cursor) => cursor,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let args = match parse_scan_args(ctx, 3, false) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let Ok(found) = self.hash_read(ctx)? else { return Ok(()) };
        let (next, page) = match found {
            Some(meta) => self.scan_elements(ctx, meta.oid, SPACE_MAIN, cursor, args.count)?,
            None => (0, Vec::new()),
        };
        let page: Vec<_> =
            page.into_iter().filter(|(field, _)| args.pattern.as_ref().is_none_or(|p| glob_match(p, field))).collect();
        ctx.array(2);
        ctx.bulk(next.to_string().as_bytes());
        ctx.array(page.len() * 2);
        for (field, value) in page {
            ctx.bulk(&field);
            self.reply_value(ctx, &value)?;
        }
        Ok(())
    }
}

/// Ranks to pick among `size` elements: one; up to `n` distinct (all of
/// them, in order, when `n` covers the set); or `n` with repetition.
pub(in crate::apps::kv) fn random_ranks_for(distinct: Option<u64>, repeating: Option<u64>, size: u64) -> Vec<u64> {
    let picks = match (distinct, repeating) {
        (Some(n), _) => Picks::Distinct(n),
        (_, Some(n)) => Picks::Repeating(n),
        _ => Picks::One,
    };
    random_ranks(&picks, size)
}

/// The most picks one command makes (a negative count's repetitions).
const PICKS_MAX: u64 = 1 << 24;

fn random_ranks(picks: &Picks, size: u64) -> Vec<u64> {
    match *picks {
        Picks::One => vec![random_below(size)],
        Picks::Distinct(n) if n >= size => (0..size).collect(),
        Picks::Distinct(n) => {
            let mut chosen = std::collections::BTreeSet::new();
            while (chosen.len() as u64) < n {
                chosen.insert(random_below(size));
            }
            let mut ranks: Vec<u64> = chosen.into_iter().collect();
            // Redis returns a sample in no particular order.
            for i in (1..ranks.len()).rev() {
                ranks.swap(i, random_below(i as u64 + 1) as usize);
            }
            ranks
        }
        Picks::Repeating(_) if size == 0 => Vec::new(),
        Picks::Repeating(n) => (0..n.min(PICKS_MAX)).map(|_| random_below(size)).collect(),
    }
}
