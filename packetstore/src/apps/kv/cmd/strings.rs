//! String commands: SET (with its options) and its forms SETNX, SETEX,
//! PSETEX, GETSET; GET, GETEX, GETDEL; MSET, MSETNX, MGET; INCR/DECR and
//! their BY forms, INCRBYFLOAT; APPEND, SETRANGE, GETRANGE/SUBSTR,
//! STRLEN; LCS. (The bit commands are `bits.rs`.)
//!
//! Invariant: each command is one store group (`KvServer::apply`),
//! durable before its reply; a value is kept in the buffers it arrived in
//! wherever that pays; no command makes a string longer than
//! `KvServer::string_max`, and LCS allocates at most that much for its
//! table.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, parse_i64, value_range, NOT_INTEGER, STRING_TOO_LONG, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::pool::extent::Extent;
use crate::store::db::{value_bytes, value_len, Op, Store, StoreError};
use crate::store::keyspace::{expire_key, string_key};

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
    cmd("setnx", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Sets a key only if it does not exist.", KvServer::cmd_setnx),
    cmd("setex", 4, &["write", "denyoom"], (1, 1, 1), "string", "Sets a key with a time to live in seconds.", KvServer::cmd_setex),
    cmd("psetex", 4, &["write", "denyoom"], (1, 1, 1), "string", "Sets a key with a time to live in milliseconds.", KvServer::cmd_psetex),
    cmd("getex", -2, &["write", "fast"], (1, 1, 1), "string", "Returns a string value and sets or removes its time to live.", KvServer::cmd_getex),
    cmd("getset", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Sets a string value and returns the old one.", KvServer::cmd_getset),
    cmd("msetnx", -3, &["write", "denyoom"], (1, -1, 2), "string", "Sets several keys only if none exists.", KvServer::cmd_msetnx),
    cmd("setrange", 4, &["write", "denyoom"], (1, 1, 1), "string", "Overwrites part of a string at an offset.", KvServer::cmd_setrange),
    cmd("getrange", 4, &["readonly"], (1, 1, 1), "string", "Returns a substring of a string value.", KvServer::cmd_getrange),
    cmd("substr", 4, &["readonly"], (1, 1, 1), "string", "Returns a substring of a string value.", KvServer::cmd_getrange),
    cmd("incrbyfloat", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the floating point value of a key.", KvServer::cmd_incrbyfloat),
    cmd("lcs", -3, &["readonly"], (1, 2, 1), "string", "Finds the longest common substring of two strings.", KvServer::cmd_lcs),
];

/// How an expiry argument counts: relative seconds or milliseconds, or
/// a Unix time in seconds or milliseconds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireUnit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// The options of SET and GETEX (Redis's
/// `parseExtendedStringArgumentsOrReply`).
#[derive(Default)]
struct SetOptions {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    /// The expiry argument's position and unit.
    expire: Option<(usize, ExpireUnit)>,
}

impl SetOptions {
    /// The options from argument `first` on; GETEX's (`getex`: PERSIST
    /// and the expiries) or SET's. None: a syntax error.
    fn parse(ctx: &Ctx<'_>, first: usize, getex: bool) -> Option<SetOptions> {
        let mut o = SetOptions::default();
        let mut i = first;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            let unit = match option.as_slice() {
                b"EX" => Some(ExpireUnit::Ex),
                b"PX" => Some(ExpireUnit::Px),
                b"EXAT" => Some(ExpireUnit::ExAt),
                b"PXAT" => Some(ExpireUnit::PxAt),
                _ => None,
            };
            // Redis lets an expiry be repeated in the same unit (the last
            // one counts), not mixed with another.
            let expire_free = o.expire.is_none_or(|(_, u)| Some(u) == unit);
            match option.as_slice() {
                b"NX" if !getex && !o.xx => o.nx = true,
                b"XX" if !getex && !o.nx => o.xx = true,
                b"GET" if !getex => o.get = true,
                b"KEEPTTL" if !getex && o.expire.is_none() => o.keep_ttl = true,
                b"PERSIST" if getex && o.expire.is_none() => o.persist = true,
                _ if unit.is_some() && expire_free && !o.keep_ttl && !o.persist && i + 1 < ctx.argc() => {
                    o.expire = Some((i + 1, unit.expect("matched")));
                    i += 1;
                }
                _ => return None,
            }
            i += 1;
        }
        Some(o)
    }
}

/// The absolute expiry (ms since the epoch) an expiry argument gives, as
/// Redis's `getExpireMillisecondsOrReply` checks it; Err: the error reply.
fn expire_at(ctx: &Ctx<'_>, expire: Option<(usize, ExpireUnit)>, name: &str) -> Result<Option<u64>, String> {
    let Some((i, unit)) = expire else {
        return Ok(None);
    };
    let n = parse_i64(&ctx.arg(i)).ok_or_else(|| NOT_INTEGER.to_string())?;
    let invalid = || format!("ERR invalid expire time in '{name}' command");
    let seconds = matches!(unit, ExpireUnit::Ex | ExpireUnit::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let mut ms = if seconds { n * 1000 } else { n };
    if matches!(unit, ExpireUnit::Ex | ExpireUnit::Px) {
        ms = ms.checked_add(ctx.now as i64).ok_or_else(invalid)?;
    }
    Ok(Some(ms as u64))
}

impl KvServer {
    fn cmd_set(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(options) = SetOptions::parse(ctx, 3, false) else {
            ctx.error(SYNTAX);
            return Ok(());
        };
        self.set_generic(ctx, 2, &options, "set", false)
    }

    fn cmd_setnx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = SetOptions { nx: true, ..SetOptions::default() };
        self.set_generic(ctx, 2, &options, "setnx", true)
    }

    fn cmd_setex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = SetOptions { expire: Some((2, ExpireUnit::Ex)), ..SetOptions::default() };
        self.set_generic(ctx, 3, &options, "setex", false)
    }

    fn cmd_psetex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = SetOptions { expire: Some((2, ExpireUnit::Px)), ..SetOptions::default() };
        self.set_generic(ctx, 3, &options, "psetex", false)
    }

    fn cmd_getset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = SetOptions { get: true, ..SetOptions::default() };
        self.set_generic(ctx, 2, &options, "getset", false)
    }

    /// Redis's `setGenericCommand`: SET and its forms (SETNX, SETEX,
    /// PSETEX, GETSET) set argument `value` at the key (argument 1).
    /// `int_reply`: 1 and 0 instead of OK and nil (SETNX).
    fn set_generic(
        &mut self,
        ctx: &mut Ctx<'_>,
        value: usize,
        options: &SetOptions,
        name: &str,
        int_reply: bool,
    ) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let expire_at = match expire_at(ctx, options.expire, name) {
            Ok(at) => at,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        // Plain SETs (no NX, XX or GET) look nothing up unless collections
        // exist (one of which this key could be).
        let lookup =
            options.nx || options.xx || options.get || self.store.has_collections() || self.notifies(notify::NEW);
        let old = if lookup { self.string_of(ctx, &key)? } else { Ok(None) };
        let exists = match &old {
            Ok(value) => value.is_some(),
            Err(()) if options.get => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
            Err(()) => true,
        };
        let old_bytes = match &old {
            Ok(Some(value)) if options.get => Some(value_bytes(ctx.pool, value)?.into_owned()),
            _ => None,
        };
        if (options.nx && exists) || (options.xx && !exists) {
            match old_bytes {
                Some(bytes) => ctx.bulk(&bytes),
                None if int_reply && !options.get => ctx.int(0),
                None => ctx.null(),
            }
            return Ok(());
        }
        // The put, an expiry, and what clearing the key takes.
        let mut ops = Vec::with_capacity(4);
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let keep = options.keep_ttl || expire_at.is_some();
            server.clear_for_string(ctx.pool, ctx.buffers, ctx.db, ctx.now, &key, keep, ops)?;
            ops.push(server.put_arg(ctx, string_key(ctx.db, &key), value)?);
            if let Some(at) = expire_at {
                ops.push(server.put_bytes(ctx, expire_key(ctx.db, &key), &at.to_le_bytes())?);
            }
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        self.notify_created(ctx, !exists, &key);
        self.notify(ctx, notify::STRING, "set", &key);
        if expire_at.is_some() {
            self.notify(ctx, notify::GENERIC, "expire", &key);
        }
        match (options.get, old_bytes) {
            (true, Some(bytes)) => ctx.bulk(&bytes),
            (true, None) => ctx.null(),
            _ if int_reply => ctx.int(1),
            _ => ctx.ok(),
        }
        Ok(())
    }

    fn cmd_getex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(options) = SetOptions::parse(ctx, 2, true) else {
            ctx.error(SYNTAX);
            return Ok(());
        };
        let key = ctx.arg(1).into_owned();
        let value = match self.string_of(ctx, &key)? {
            Ok(Some(value)) => value,
            Ok(None) => {
                ctx.null();
                return Ok(());
            }
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let at = match expire_at(ctx, options.expire, "getex") {
            Ok(at) => at,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let absolute = matches!(options.expire, Some((_, ExpireUnit::ExAt | ExpireUnit::PxAt)));
        let mut ops = Vec::new();
        match at {
            Some(at) if absolute && at <= ctx.now => {
                self.delete_ops(ctx.pool, ctx.buffers, ctx.db, &key, &mut ops)?;
            }
            Some(at) => ops.push(self.put_bytes(ctx, expire_key(ctx.db, &key), &at.to_le_bytes())?),
            None if options.persist && self.store.expiry(ctx.db, &key).is_some() => {
                ops.push(Op::Del { key: expire_key(ctx.db, &key) })
            }
            None => {}
        }
        if ops.is_empty() {
            self.stats.reads += 1;
            return self.reply_value(ctx, &value);
        }
        let bytes = match value_bytes(ctx.pool, &value) {
            Ok(bytes) => bytes.into_owned(),
            Err(error) => {
                Store::release_ops(ctx.buffers, &ops);
                return Err(error);
            }
        };
        self.apply(ctx, &ops)?;
        let event = match at {
            Some(at) if absolute && at <= ctx.now => "del",
            Some(_) => "expire",
            None => "persist",
        };
        self.notify(ctx, notify::GENERIC, event, &key);
        ctx.bulk(&bytes);
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
                self.delete_ops(ctx.pool, ctx.buffers, ctx.db, &key, &mut ops)?;
                self.apply(ctx, &ops)?;
                self.notify(ctx, notify::GENERIC, "del", &key);
                ctx.bulk(&bytes);
            }
            Ok(None) => ctx.null(),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_mset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.mset_generic(ctx, false)
    }

    fn cmd_msetnx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.mset_generic(ctx, true)
    }

    /// MSET, and MSETNX (`nx`: nothing is set if any key exists).
    fn mset_generic(&mut self, ctx: &mut Ctx<'_>, nx: bool) -> Result<(), StoreError> {
        if ctx.argc() % 2 == 0 {
            let name = if nx { "msetnx" } else { "mset" };
            ctx.error(&format!("ERR wrong number of arguments for '{name}' command"));
            return Ok(());
        }
        if nx {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_some() {
                    ctx.int(0);
                    return Ok(());
                }
            }
        }
        // Keys created, for `new` events (looked up only if they are on).
        let mut created = Vec::new();
        if self.notifies(notify::NEW) {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none() && !created.contains(&key) {
                    created.push(key);
                }
            }
        }
        let mut ops = Vec::new();
        let result = (|| {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                if let Err(why) = key_ok(&key) {
                    return Ok(Err(why));
                }
                self.clear_for_string(ctx.pool, ctx.buffers, ctx.db, ctx.now, &key, false, &mut ops)?;
                let put = self.put_arg(ctx, string_key(ctx.db, &key), i + 1)?;
                ops.push(put);
            }
            Ok(Ok(()))
        })();
        self.finish_ops(ctx, &ops, result, |ctx| if nx { ctx.int(1) } else { ctx.ok() })?;
        if !ctx.failed && self.notifies(notify::STRING | notify::NEW) {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                let new = created.iter().position(|k| *k == key).map(|at| created.swap_remove(at));
                self.notify_created(ctx, new.is_some(), &key);
                self.notify(ctx, notify::STRING, "set", &key);
            }
        }
        Ok(())
    }

    fn cmd_mget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.array(ctx.argc() - 1);
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            self.stats.reads += 1;
            match self.store.get(ctx.pool, ctx.db, &key, ctx.now)? {
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
        let created = self.notifies(notify::NEW) && self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none();
        let Some(next) = current.checked_add(by) else {
            ctx.error("ERR increment or decrement would overflow");
            return Ok(());
        };
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let mut text = Vec::new();
        crate::proto::resp::push_int(&mut text, next);
        let put = self.put_bytes(ctx, string_key(ctx.db, &key), &text)?;
        ops.push(put);
        self.apply(ctx, &ops)?;
        self.notify_created(ctx, created, &key);
        self.notify(ctx, notify::STRING, "incrby", &key);
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
        match parse_i64(&ctx.arg(2)) {
            Some(i64::MIN) => {
                ctx.error("ERR decrement would overflow");
                Ok(())
            }
            Some(by) => self.incr_by(ctx, -by),
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
        let total = old.as_ref().map_or(0, value_len) + ctx.conn.args.arg_len(2);
        if total > self.string_max() {
            ctx.error(STRING_TOO_LONG);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let put = match self.append_shared(ctx, &key, old.as_ref(), total)? {
            Some(put) => put,
            None => {
                let mut bytes = match &old {
                    Some(value) => value_bytes(ctx.pool, value)?.into_owned(),
                    None => Vec::new(),
                };
                bytes.extend_from_slice(&ctx.arg(2));
                self.put_bytes(ctx, string_key(ctx.db, &key), &bytes)?
            }
        };
        ops.push(put);
        self.apply(ctx, &ops)?;
        self.notify_created(ctx, old.is_none(), &key);
        self.notify(ctx, notify::STRING, "append", &key);
        ctx.int(total as i64);
        Ok(())
    }

    /// APPEND's Put naming the old value's bytes and the argument's where
    /// they already are (zero copy, new references on their buffers); None
    /// when neither is in the pool, or when sharing would fragment the
    /// value or strain a buffer's references (`may_share`): the caller
    /// copies the whole value instead.
    fn append_shared(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        old: Option<&Value>,
        total: u64,
    ) -> Result<Option<Op>, StoreError> {
        let old_stored = match old {
            Some(value) if !matches!(value, Value::Inline(_)) => value_extents(ctx.pool, value)?,
            _ => Vec::new(),
        };
        let received = ctx.conn.args.extents(2).map(<[Extent]>::to_vec).unwrap_or_default();
        if old_stored.is_empty() && received.is_empty() {
            return Ok(None);
        }
        let mut shared = old_stored;
        let old_parts = shared.len();
        shared.extend_from_slice(&received);
        if !self.may_share(ctx, &shared, 2, total) {
            return Ok(None);
        }
        self.retain_all(ctx, &shared)?;
        let mut staged = Vec::new();
        let result = (|| {
            if let Some(Value::Inline(bytes)) = old {
                staged.extend(self.store.stage(ctx.pool, ctx.buffers, bytes)?);
            }
            let inline_parts = staged.len();
            if received.is_empty() {
                let bytes = ctx.arg(2).into_owned();
                staged.extend(self.store.stage(ctx.pool, ctx.buffers, &bytes)?);
            }
            Ok::<usize, StoreError>(inline_parts)
        })();
        let inline_parts = match result {
            Ok(parts) => parts,
            Err(error) => {
                ctx.buffers.release_extents(&shared).expect("our references");
                ctx.buffers.release_extents(&staged).expect("our references");
                return Err(error);
            }
        };
        self.stage_bytes(ctx.conn.args.arg_len(2), !received.is_empty());
        // In order: the old value (staged if it was inline, else where it
        // is), then the argument (where it was received, else staged).
        let mut extents = staged[..inline_parts].to_vec();
        extents.extend_from_slice(&shared[..old_parts]);
        extents.extend_from_slice(&shared[old_parts..]);
        extents.extend_from_slice(&staged[inline_parts..]);
        Ok(Some(Op::Put { key: string_key(ctx.db, key), extents, len: total }))
    }

    fn cmd_strlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.string_of(ctx, &key)? {
            Ok(value) => ctx.int(value.as_ref().map_or(0, value_len) as i64),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_setrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let Some(offset) = parse_i64(&ctx.arg(2)) else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        if offset < 0 {
            ctx.error("ERR offset is out of range");
            return Ok(());
        }
        let old = match self.string_of(ctx, &key)? {
            Ok(old) => old,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let add = ctx.conn.args.arg_len(3);
        if add == 0 {
            // Setting nothing changes nothing (and creates no key).
            ctx.int(old.as_ref().map_or(0, value_len) as i64);
            return Ok(());
        }
        if (offset as u64).saturating_add(add) > self.string_max() {
            ctx.error(STRING_TOO_LONG);
            return Ok(());
        }
        let bytes = ctx.arg(3).into_owned();
        let total = self.put_spliced(ctx, &key, old.as_ref(), offset as u64, &bytes)?;
        self.notify_created(ctx, old.is_none(), &key);
        self.notify(ctx, notify::STRING, "setrange", &key);
        ctx.int(total as i64);
        Ok(())
    }

    /// GETRANGE and SUBSTR: Redis's index rules (negative from the end,
    /// clamped to the string).
    fn cmd_getrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (Some(start), Some(end)) = (parse_i64(&ctx.arg(2)), parse_i64(&ctx.arg(3))) else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        let value = match self.string_of(ctx, &key)? {
            Ok(Some(value)) => value,
            Ok(None) => {
                ctx.bulk(b"");
                return Ok(());
            }
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        match byte_range(value_len(&value) as i64, start, end) {
            Some((start, end)) => {
                let bytes = value_range(ctx.pool, &value, start as u64, (end - start + 1) as u64)?;
                ctx.bulk(&bytes);
            }
            None => ctx.bulk(b""),
        }
        Ok(())
    }

    fn cmd_incrbyfloat(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let current = match self.string_of(ctx, &key)? {
            Ok(Some(value)) if value_len(&value) >= FLOAT_CHARS_MAX => None,
            Ok(Some(value)) => Some(value_bytes(ctx.pool, &value)?.into_owned()),
            Ok(None) => Some(b"0".to_vec()),
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let created = self.notifies(notify::NEW) && self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none();
        let text = match current.map(|current| add_floats(&current, &ctx.arg(2))) {
            Some(Ok(text)) => text,
            Some(Err(why)) => {
                ctx.error(why);
                return Ok(());
            }
            None => {
                ctx.error(NOT_FLOAT);
                return Ok(());
            }
        };
        self.put_string(ctx, &key, text.as_bytes())?;
        self.notify_created(ctx, created, &key);
        self.notify(ctx, notify::STRING, "incrbyfloat", &key);
        ctx.bulk(text.as_bytes());
        Ok(())
    }

    fn cmd_lcs(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key_a, key_b) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        self.stats.reads += 1;
        let (Ok(a), Ok(b)) = (self.string_of(ctx, &key_a)?, self.string_of(ctx, &key_b)?) else {
            ctx.error("ERR The specified keys must contain string values");
            return Ok(());
        };
        let options = match LcsOptions::parse(ctx) {
            Ok(options) => options,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let (a_len, b_len) = (a.as_ref().map_or(0, value_len), b.as_ref().map_or(0, value_len));
        let table_bytes = (a_len + 1).saturating_mul(b_len + 1).saturating_mul(4);
        if table_bytes > self.string_max() {
            ctx.error(&format!(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len \
                 (the table of {table_bytes} bytes is over this server's limit of {})",
                self.string_max()
            ));
            return Ok(());
        }
        let read = |value: &Option<Value>| match value {
            Some(value) => value_bytes(ctx.pool, value).map(|b| b.into_owned()),
            None => Ok(Vec::new()),
        };
        let (a, b) = (read(&a)?, read(&b)?);
        let table = lcs_table(&a, &b);
        let (string, matches) = lcs_walk(&a, &b, &table, options.min_len, options.idx || !options.len);
        let total = i64::from(table[table.len() - 1]);
        if options.idx {
            ctx.map(2);
            ctx.bulk(b"matches");
            ctx.array(matches.len());
            for m in &matches {
                ctx.array(if options.with_len { 3 } else { 2 });
                for (from, to) in [(m[0], m[1]), (m[2], m[3])] {
                    ctx.array(2);
                    ctx.int(i64::from(from));
                    ctx.int(i64::from(to));
                }
                if options.with_len {
                    ctx.int(i64::from(m[1] - m[0] + 1));
                }
            }
            ctx.bulk(b"len");
            ctx.int(total);
        } else if options.len {
            ctx.int(total);
        } else {
            ctx.bulk(&string);
        }
        Ok(())
    }
}

/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer strings are no numbers.
pub(super) const FLOAT_CHARS_MAX: u64 = 5 * 1024;

pub(super) const NOT_FLOAT: &str = "ERR value is not a valid float";

/// The first and last byte (inclusive) of `start..=end` in a string of
/// `len` bytes, by GETRANGE's rules (negative indexes count from the end;
/// both are clamped); None: the range is empty.
fn byte_range(len: i64, start: i64, end: i64) -> Option<(i64, i64)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    (start <= end && len > 0).then_some((start, end))
}

/// A decimal number exactly: `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// The digits a `Decimal` keeps (within i128 whatever the sum).
const DECIMAL_DIGITS_MAX: usize = 36;

/// The digits after the point Redis prints (`%.17Lf`).
const FLOAT_DECIMALS: u32 = 17;

impl Decimal {
    /// `[-+]digits[.digits][e[-+]digits]` with at most
    /// `DECIMAL_DIGITS_MAX` digits and as many after the point; None for
    /// anything else (`inf`, hexadecimal: read as floats).
    fn parse(text: &[u8]) -> Option<Decimal> {
        let (negative, body) = match text.first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (body, exponent) = match body.iter().position(|&c| c == b'e' || c == b'E') {
            Some(e) => {
                let digits = body[e + 1..].strip_prefix(b"+").unwrap_or(&body[e + 1..]);
                let exponent: i64 = std::str::from_utf8(digits).ok().filter(|d| d.len() <= 4)?.parse().ok()?;
                (&body[..e], exponent)
            }
            None => (body, 0),
        };
        let (int, frac) = match body.iter().position(|&c| c == b'.') {
            Some(dot) => (&body[..dot], &body[dot + 1..]),
            None => (body, &[][..]),
        };
        let digits = int.len() + frac.len();
        if digits == 0 || digits > DECIMAL_DIGITS_MAX || !int.iter().chain(frac).all(u8::is_ascii_digit) {
            return None;
        }
        let mut mantissa = int.iter().chain(frac).fold(0i128, |m, &c| m * 10 + i128::from(c - b'0'));
        let mut scale = frac.len() as i64 - exponent;
        if scale < 0 {
            mantissa = mantissa.checked_mul(10i128.checked_pow(u32::try_from(-scale).ok()?)?)?;
            scale = 0;
        }
        if scale > DECIMAL_DIGITS_MAX as i64 {
            return None;
        }
        Some(Decimal { mantissa: if negative { -mantissa } else { mantissa }, scale: scale as u32 })
    }

    /// The exact sum, if it fits.
    fn add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let widen = |d: Decimal| d.mantissa.checked_mul(10i128.checked_pow(scale - d.scale)?);
        Some(Decimal { mantissa: widen(self)?.checked_add(widen(other)?)?, scale })
    }

    /// As Redis prints a long double (`%.17Lf`, trailing zeros and a
    /// negative zero's sign removed).
    fn format(self) -> String {
        let Decimal { mut mantissa, mut scale } = self;
        if scale > FLOAT_DECIMALS {
            // Rounded half to even, as printf rounds.
            let divisor = 10i128.pow(scale - FLOAT_DECIMALS);
            let (quotient, remainder) = (mantissa / divisor, (mantissa % divisor).abs());
            let up = remainder * 2 > divisor || (remainder * 2 == divisor && quotient % 2 != 0);
            mantissa = if up { quotient + mantissa.signum() } else { quotient };
            scale = FLOAT_DECIMALS;
        }
        let digits = mantissa.unsigned_abs().to_string();
        let digits = format!("{digits:0>width$}", width = scale as usize + 1);
        let (int, frac) = digits.split_at(digits.len() - scale as usize);
        let frac = frac.trim_end_matches('0');
        let sign = if mantissa < 0 { "-" } else { "" };
        if frac.is_empty() {
            format!("{sign}{int}")
        } else {
            format!("{sign}{int}.{frac}")
        }
    }
}

/// A number as Redis's `string2ld` reads one: the whole string, no
/// leading space, not NaN, not out of range.
pub(super) fn parse_float(text: &[u8]) -> Option<f64> {
    if text.is_empty() || text.len() as u64 >= FLOAT_CHARS_MAX || text[0].is_ascii_whitespace() {
        return None;
    }
    let value: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let infinite_text = text.to_ascii_lowercase().windows(3).any(|w| w == b"inf");
    (!value.is_nan() && (value.is_finite() || infinite_text)).then_some(value)
}

/// INCRBYFLOAT's sum of two numbers as text. Redis adds long doubles and
/// prints `%.17Lf`: exact decimal arithmetic (rounded to 17 decimals)
/// gives what it prints for ordinary decimal numbers, which f64 would not
/// (1 - 1.1 is -0.1, not -0.10000000000000009); numbers beyond
/// `Decimal` (over 36 digits, hexadecimal, `inf`) are added in f64,
/// printed as `%.17f`. Err: the error reply.
pub(super) fn add_floats(current: &[u8], by: &[u8]) -> Result<String, &'static str> {
    let (Some(a), Some(b)) = (parse_float(current), parse_float(by)) else {
        return Err(NOT_FLOAT);
    };
    if let Some(sum) = Decimal::parse(current).zip(Decimal::parse(by)).and_then(|(a, b)| a.add(b)) {
        return Ok(sum.format());
    }
    let sum = a + b;
    if !sum.is_finite() {
        return Err("ERR increment would produce NaN or Infinity");
    }
    let text = format!("{sum:.17}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    Ok(if text == "-0" { "0".to_string() } else { text.to_string() })
}

/// LCS's options.
#[derive(Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_len: bool,
    min_len: u64,
}

impl LcsOptions {
    fn parse(ctx: &Ctx<'_>) -> Result<LcsOptions, &'static str> {
        let mut o = LcsOptions::default();
        let mut i = 3;
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).unwrap_or_default().as_slice() {
                b"IDX" => o.idx = true,
                b"LEN" => o.len = true,
                b"WITHMATCHLEN" => o.with_len = true,
                b"MINMATCHLEN" if i + 1 < ctx.argc() => {
                    o.min_len = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?.max(0) as u64;
                    i += 1;
                }
                _ => return Err(SYNTAX),
            }
            i += 1;
        }
        if o.len && o.idx {
            return Err("ERR If you want both the length and indexes, please just use IDX.");
        }
        Ok(o)
    }
}

/// The dynamic programming table of LCS: entry `j + (b.len() + 1) * i`
/// is the length of the LCS of `a[..i]` and `b[..j]`.
fn lcs_table(a: &[u8], b: &[u8]) -> Vec<u32> {
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[j + i * width] = if a[i - 1] == b[j - 1] {
                table[j - 1 + (i - 1) * width] + 1
            } else {
                table[j + (i - 1) * width].max(table[j - 1 + i * width])
            };
        }
    }
    table
}

/// Walks the table back as Redis does: the LCS itself and its matching
/// ranges (`[a_start, a_end, b_start, b_end]`, last first) at least
/// `min_len` long. Nothing when not `compute` (LEN alone).
fn lcs_walk(a: &[u8], b: &[u8], table: &[u32], min_len: u64, compute: bool) -> (Vec<u8>, Vec<[u32; 4]>) {
    let width = b.len() + 1;
    let at = |i: usize, j: usize| table[j + i * width];
    let mut idx = at(a.len(), b.len()) as usize;
    let mut string = vec![0u8; if compute { idx } else { 0 }];
    let mut matches = Vec::new();
    let unset = a.len();
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (unset, 0, 0, 0);
    let (mut i, mut j) = (a.len(), b.len());
    while compute && i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            string[idx - 1] = a[i - 1];
            if a_start == unset {
                (a_start, a_end, b_start, b_end) = (i - 1, i - 1, j - 1, j - 1);
            } else if a_start == i && b_start == j {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            emit |= a_start == 0 || b_start == 0;
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = a_start != unset;
        }
        if emit {
            let len = (a_end - a_start + 1) as u64;
            if min_len == 0 || len >= min_len {
                matches.push([a_start as u32, a_end as u32, b_start as u32, b_end as u32]);
            }
            a_start = unset;
        }
    }
    (string, matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incrbyfloat_prints_as_redis() {
        assert_eq!(add_floats(b"10.50", b"0.1"), Ok("10.6".into()));
        assert_eq!(add_floats(b"1", b"-1.1"), Ok("-0.1".into()));
        assert_eq!(add_floats(b"17179869184", b"1.5"), Ok("17179869185.5".into()));
        assert_eq!(add_floats(b"5.0e3", b"2.0e2"), Ok("5200".into()));
        assert_eq!(add_floats(b"0.024390243902439025", b"-0.024390243902439025"), Ok("0".into()));
        assert_eq!(add_floats(b"0", b"0.000000000000000000001"), Ok("0".into()));
        assert_eq!(add_floats(b"0", b"-0.000000000000000000001"), Ok("0".into()));
        assert_eq!(add_floats(b"0", b"0.000000000000000015"), Ok("0.00000000000000002".into()));
        assert_eq!(add_floats(b"0", b"+inf"), Err("ERR increment would produce NaN or Infinity"));
        assert_eq!(add_floats(b" 1", b"1"), Err(NOT_FLOAT));
        assert_eq!(add_floats(b"1 ", b"1"), Err(NOT_FLOAT));
        assert_eq!(add_floats(b"1", b"nan"), Err(NOT_FLOAT));
        assert_eq!(add_floats(b"1", b"abc"), Err(NOT_FLOAT));
        assert_eq!(add_floats(b"1e308", b"1e308"), Err("ERR increment would produce NaN or Infinity"));
        assert_eq!(add_floats(b"1.1e1", b"0.1"), Ok("11.1".into()));
        assert_eq!(add_floats(b"1E-2", b"1e+2"), Ok("100.01".into()));
        assert_eq!(add_floats(b"5.", b".5"), Ok("5.5".into()));
        assert_eq!(add_floats(b"1e30", b"1"), Ok("1000000000000000000000000000001".into()));
        assert_eq!(add_floats(b"1e1", b"1e-40"), Ok("10".into()));
        assert_eq!(Decimal::parse(b"1e-"), None);
        assert_eq!(Decimal::parse(b"e5"), None);
    }

    #[test]
    fn getrange_indexes_as_redis() {
        assert_eq!(byte_range(5, 0, -1), Some((0, 4)));
        assert_eq!(byte_range(5, -2, -1), Some((3, 4)));
        assert_eq!(byte_range(5, -1, -2), None);
        assert_eq!(byte_range(5, 3, 100), Some((3, 4)));
        assert_eq!(byte_range(5, 5, 100), None);
        assert_eq!(byte_range(0, 0, -1), None);
        assert_eq!(byte_range(5, i64::MIN, i64::MAX), Some((0, 4)));
    }

    #[test]
    fn lcs_as_redis() {
        let (a, b) = (b"ohmytext".as_slice(), b"mynewtext".as_slice());
        let table = lcs_table(a, b);
        let (string, matches) = lcs_walk(a, b, &table, 0, true);
        assert_eq!(string, b"mytext");
        assert_eq!(matches, vec![[4, 7, 5, 8], [2, 3, 0, 1]]);
        let (_, matches) = lcs_walk(a, b, &table, 4, true);
        assert_eq!(matches, vec![[4, 7, 5, 8]]);
    }
}
