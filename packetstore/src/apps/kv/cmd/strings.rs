//! String commands: SET (with its options), GET, GETDEL, MSET, MGET,
//! INCR/DECR and their BY forms, APPEND, STRLEN.
//!
//! Invariant: each command is one store group (`KvServer::apply`),
//! durable before its reply; a value is kept in the buffers it arrived in
//! wherever that pays.

use crate::apps::kv::ops::{key_ok, parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::store::db::{expire_key, string_key, value_bytes, value_len, Op, StoreError};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("set", -3, &["write", "denyoom"], (1, 1, 1), "string", "Sets a key to a string value, durably.", KvServer::cmd_set),
    cmd("get", 2, &["readonly", "fast"], (1, 1, 1), "string", "Returns the string value of a key.", KvServer::cmd_get),
    cmd("getdel", 2, &["write", "fast"], (1, 1, 1), "string", "Returns the string value of a key and deletes the key.", KvServer::cmd_getdel),
    cmd("mset", -3, &["write", "denyoom"], (1, -1, 2), "string", "Sets several keys at once, all or none.", KvServer::cmd_mset),
    cmd("mget", -2, &["readonly", "fast"], (1, -1, 1), "string", "Returns the string values of several keys.", KvServer::cmd_mget),
    cmd("incr", 2, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by one.", KvServer::cmd_incr),
    cmd("decr", 2, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements the integer value of a key by one.", KvServer::cmd_decr),
    cmd("incrby", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by a number.", KvServer::cmd_incrby),
    cmd("decrby", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements the integer value of a key by a number.", KvServer::cmd_decrby),
    cmd("append", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Appends a string to the value of a key.", KvServer::cmd_append),
    cmd("strlen", 2, &["readonly", "fast"], (1, 1, 1), "string", "Returns the length of a string value.", KvServer::cmd_strlen),
];

impl KvServer {
    fn cmd_set(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let (mut nx, mut xx, mut get, mut keep_ttl) = (false, false, false, false);
        let mut expire_at: Option<u64> = None;
        let mut i = 3;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            let next = (i + 1 < ctx.argc()).then(|| ctx.arg(i + 1).into_owned());
            match option.as_slice() {
                b"NX" if !xx => nx = true,
                b"XX" if !nx => xx = true,
                b"GET" => get = true,
                b"KEEPTTL" if expire_at.is_none() => keep_ttl = true,
                b"EX" | b"PX" | b"EXAT" | b"PXAT" if expire_at.is_none() && !keep_ttl && next.is_some() => {
                    let Some(n) = next.as_deref().and_then(parse_i64) else {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    };
                    let at = match option.as_slice() {
                        b"EX" => n.checked_mul(1000).and_then(|ms| ms.checked_add(ctx.now as i64)),
                        b"PX" => n.checked_add(ctx.now as i64),
                        b"EXAT" => n.checked_mul(1000),
                        _ => Some(n),
                    };
                    match at {
                        Some(at) if n > 0 && at > 0 => expire_at = Some(at as u64),
                        _ => {
                            ctx.error("ERR invalid expire time in 'set' command");
                            return Ok(());
                        }
                    }
                    i += 1;
                }
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(());
                }
            }
            i += 1;
        }
        // Plain SETs (no NX, XX or GET) look nothing up unless hashes
        // exist (one of which this key could be).
        let old = if nx || xx || get || self.store.has_hashes() { self.string_of(ctx, &key)? } else { Ok(None) };
        let exists = match &old {
            Ok(value) => value.is_some(),
            Err(()) => {
                if get {
                    ctx.error(WRONGTYPE);
                    return Ok(());
                }
                true
            }
        };
        let old_bytes = match &old {
            Ok(Some(value)) if get => Some(value_bytes(ctx.pool, value)?),
            _ => None,
        };
        if (nx && exists) || (xx && !exists) {
            match old_bytes {
                Some(bytes) => ctx.bulk(&bytes),
                None if get => ctx.null(),
                None => ctx.null(),
            }
            return Ok(());
        }
        let mut ops = Vec::new();
        self.clear_for_string(ctx.pool, ctx.now, &key, keep_ttl || expire_at.is_some(), &mut ops)?;
        let put = self.put_arg(ctx, string_key(&key), 2)?;
        ops.push(put);
        if let Some(at) = expire_at {
            let put = self.put_bytes(ctx, expire_key(&key), &at.to_le_bytes())?;
            ops.push(put);
        }
        self.apply(ctx, &ops)?;
        match (get, old_bytes) {
            (true, Some(bytes)) => ctx.bulk(&bytes),
            (true, None) => ctx.null(),
            _ => ctx.ok(),
        }
        Ok(())
    }

    fn cmd_get(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        match self.string_of(ctx, &key)? {
            Ok(Some(value)) => self.reply_value(ctx, &value)?,
            Ok(None) => ctx.null(),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_getdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.string_of(ctx, &key)? {
            Ok(Some(value)) => {
                let bytes = value_bytes(ctx.pool, &value)?;
                let mut ops = Vec::new();
                self.delete_ops(ctx.pool, &key, &mut ops)?;
                self.apply(ctx, &ops)?;
                ctx.bulk(&bytes);
            }
            Ok(None) => ctx.null(),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_mset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() % 2 == 0 {
            ctx.error("ERR wrong number of arguments for 'mset' command");
            return Ok(());
        }
        let mut ops = Vec::new();
        let result = (|| {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                if let Err(why) = key_ok(&key) {
                    return Ok(Err(why));
                }
                self.clear_for_string(ctx.pool, ctx.now, &key, false, &mut ops)?;
                let put = self.put_arg(ctx, string_key(&key), i + 1)?;
                ops.push(put);
            }
            Ok(Ok(()))
        })();
        self.finish_ops(ctx, &ops, result, |ctx| ctx.ok())
    }

    fn cmd_mget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.array(ctx.argc() - 1);
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            self.stats.reads += 1;
            match self.store.get(ctx.pool, &key, ctx.now)? {
                Some(value) => self.reply_value(ctx, &value)?,
                None => ctx.null(),
            }
        }
        Ok(())
    }

    fn incr_by(&mut self, ctx: &mut Ctx<'_>, by: i64) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let current = match self.string_of(ctx, &key)? {
            Ok(Some(value)) => {
                if value_len(&value) > 20 {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                }
                match parse_i64(&value_bytes(ctx.pool, &value)?) {
                    Some(n) => n,
                    None => {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    }
                }
            }
            Ok(None) => 0,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let Some(next) = current.checked_add(by) else {
            ctx.error("ERR increment or decrement would overflow");
            return Ok(());
        };
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let mut text = Vec::new();
        crate::proto::resp::push_int(&mut text, next);
        let put = self.put_bytes(ctx, string_key(&key), &text)?;
        ops.push(put);
        self.apply(ctx, &ops)?;
        ctx.int(next);
        Ok(())
    }

    fn cmd_incr(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.incr_by(ctx, 1)
    }

    fn cmd_decr(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.incr_by(ctx, -1)
    }

    fn cmd_incrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_i64(&ctx.arg(2)) {
            Some(by) => self.incr_by(ctx, by),
            None => {
                ctx.error(NOT_INTEGER);
                Ok(())
            }
        }
    }

    fn cmd_decrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_i64(&ctx.arg(2)).and_then(i64::checked_neg) {
            Some(by) => self.incr_by(ctx, by),
            None => {
                ctx.error(NOT_INTEGER);
                Ok(())
            }
        }
    }

    fn cmd_append(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let old = match self.string_of(ctx, &key)? {
            Ok(old) => old,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let old_len = old.as_ref().map_or(0, value_len);
        let add_len = ctx.conn.args.arg_len(2);
        let total = old_len + add_len;
        if total > self.config.value_size_max {
            ctx.error(&format!("ERR string exceeds maximum allowed size ({} bytes)", self.config.value_size_max));
            return Ok(());
        }
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        // The new value: the old value's extents and the argument's, both
        // where they already are (zero copy), or copied when small.
        let mut extents = Vec::new();
        let result = (|| {
            match &old {
                Some(Value::Inline(bytes)) => extents.extend(self.store.stage(ctx.pool, ctx.buffers, bytes)?),
                Some(value) => {
                    for extent in value_extents(ctx.pool, value)? {
                        ctx.buffers.retain(extent.buffer)?;
                        extents.push(extent);
                    }
                }
                None => {}
            }
            match ctx.conn.args.extents(2) {
                Some(arg) => {
                    for extent in arg {
                        ctx.buffers.retain(extent.buffer)?;
                        extents.push(*extent);
                    }
                    self.stage_bytes(ctx.conn.args.arg_len(2), true);
                }
                None => {
                    let bytes = ctx.arg(2).into_owned();
                    extents.extend(self.store.stage(ctx.pool, ctx.buffers, &bytes)?);
                    self.stage_bytes(bytes.len() as u64, false);
                }
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(error) = result {
            ctx.buffers.release_extents(&extents).expect("our references");
            return Err(error);
        }
        if extents.len() > crate::limits::RECORD_EXTENTS_MAX {
            // Too fragmented for one record: one copy into whole buffers.
            let mut bytes = Vec::with_capacity(total as usize);
            ctx.pool.read_extents(&extents, &mut bytes);
            ctx.buffers.release_extents(&extents).expect("our references");
            extents.clear();
            ctx.buffers.copy_in(ctx.pool, &bytes, &mut extents)?;
        }
        ops.push(Op::Put { key: string_key(&key), extents, len: total });
        self.apply(ctx, &ops)?;
        ctx.int(total as i64);
        Ok(())
    }

    fn cmd_strlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.string_of(ctx, &key)? {
            Ok(value) => ctx.int(value.as_ref().map_or(0, value_len) as i64),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }
}
