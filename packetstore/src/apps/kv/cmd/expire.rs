//! Expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX,
//! GT, LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST (Redis 7.0's
//! `expire.c`).
//!
//! An expiry is the tree entry `x` db key (u64 ms since the epoch),
//! mirrored in the store's in-memory index, which the server's tick reads
//! to delete keys as they expire.
//!
//! Invariant: a time that has already passed deletes the key in the
//! same store group (as Redis does), so no key is ever stored expired by
//! a command.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::{Op, StoreError};
use crate::store::keyspace::expire_key;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("ttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in seconds.", KvServer::cmd_ttl),
    cmd("pttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in milliseconds.", KvServer::cmd_pttl),
    cmd("expiretime", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns when a key expires, in seconds since the epoch.", KvServer::cmd_expiretime),
    cmd("pexpiretime", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns when a key expires, in milliseconds since the epoch.", KvServer::cmd_pexpiretime),
    cmd("expire", -3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in seconds.", KvServer::cmd_expire),
    cmd("pexpire", -3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in milliseconds.", KvServer::cmd_pexpire),
    cmd("expireat", -3, &["write", "fast"], (1, 1, 1), "generic", "Sets an expiry time in seconds since the epoch.", KvServer::cmd_expireat),
    cmd("pexpireat", -3, &["write", "fast"], (1, 1, 1), "generic", "Sets an expiry time in milliseconds since the epoch.", KvServer::cmd_pexpireat),
    cmd("persist", 2, &["write", "fast"], (1, 1, 1), "generic", "Removes the time to live of a key.", KvServer::cmd_persist),
];

/// EXPIRE's condition on the key's current expiry.
#[derive(Clone, Copy, Default)]
struct Condition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Condition {
    /// Parses the options from argument 3 on, as Redis 7.0 does. Err: the
    /// error reply.
    fn parse(ctx: &Ctx<'_>) -> Result<Condition, String> {
        let mut condition = Condition::default();
        for i in 3..ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"NX") => condition.nx = true,
                Some(b"XX") => condition.xx = true,
                Some(b"GT") => condition.gt = true,
                Some(b"LT") => condition.lt = true,
                _ => return Err(format!("ERR Unsupported option {}", String::from_utf8_lossy(&ctx.arg(i)))),
            }
        }
        if condition.nx && (condition.xx || condition.gt || condition.lt) {
            return Err("ERR NX and XX, GT or LT options at the same time are not compatible".into());
        }
        if condition.gt && condition.lt {
            return Err("ERR GT and LT options at the same time are not compatible".into());
        }
        Ok(condition)
    }

    /// Whether a new expiry `at` may replace `current` (None: none).
    fn allows(self, current: Option<u64>, at: i64) -> bool {
        match current {
            Some(_) if self.nx => false,
            None if self.xx || self.gt => false,
            Some(current) if self.gt && at <= current as i64 => false,
            Some(current) if self.lt && at >= current as i64 => false,
            _ => true,
        }
    }
}

impl KvServer {
    /// Milliseconds until argument 1 expires: -2 if absent, -1 if it
    /// has no expiry; or its expiry time (`absolute`).
    fn expiry_ms(&self, ctx: &Ctx<'_>, absolute: bool) -> Result<i64, StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none() {
            return Ok(-2);
        }
        Ok(match self.store.expiry(ctx.db, &key) {
            None => -1,
            Some(at) if absolute => at as i64,
            Some(at) => at.saturating_sub(ctx.now) as i64,
        })
    }

    fn cmd_ttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.expiry_ms(ctx, false)?;
        ctx.int(if ms < 0 { ms } else { (ms + 500) / 1000 });
        Ok(())
    }

    fn cmd_pttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.expiry_ms(ctx, false)?;
        ctx.int(ms);
        Ok(())
    }

    fn cmd_expiretime(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.expiry_ms(ctx, true)?;
        ctx.int(if ms < 0 { ms } else { ms / 1000 });
        Ok(())
    }

    fn cmd_pexpiretime(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.expiry_ms(ctx, true)?;
        ctx.int(ms);
        Ok(())
    }

    fn cmd_expire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_generic(ctx, 1000, false, "expire")
    }

    fn cmd_pexpire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_generic(ctx, 1, false, "pexpire")
    }

    fn cmd_expireat(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_generic(ctx, 1000, true, "expireat")
    }

    fn cmd_pexpireat(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_generic(ctx, 1, true, "pexpireat")
    }

    /// The expiry time argument 2 names, in ms since the epoch (`scale`
    /// ms per unit; relative to now unless `absolute`). Err: the reply.
    fn expiry_arg(ctx: &Ctx<'_>, scale: i64, absolute: bool, name: &str) -> Result<i64, String> {
        let when = parse_i64(&ctx.arg(2)).ok_or(NOT_INTEGER)?;
        let invalid = || format!("ERR invalid expire time in '{name}' command");
        let when = when.checked_mul(scale).ok_or_else(invalid)?;
        let base = if absolute { 0 } else { ctx.now as i64 };
        when.checked_add(base).ok_or_else(invalid)
    }

    /// Redis's `expireGenericCommand`.
    fn expire_generic(&mut self, ctx: &mut Ctx<'_>, scale: i64, absolute: bool, name: &str) -> Result<(), StoreError> {
        let parsed = Condition::parse(ctx).and_then(|c| Ok((c, Self::expiry_arg(ctx, scale, absolute, name)?)));
        let (condition, at) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none()
            || !condition.allows(self.store.expiry(ctx.db, &key), at)
        {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            if at <= ctx.now as i64 {
                server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &key, ops)?;
            } else {
                ops.push(server.put_bytes(ctx, expire_key(ctx.db, &key), &(at as u64).to_le_bytes())?);
            }
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::GENERIC, if at <= ctx.now as i64 { "del" } else { "expire" }, &key);
        ctx.int(1);
        Ok(())
    }

    fn cmd_persist(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_none() || self.store.expiry(ctx.db, &key).is_none()
        {
            ctx.int(0);
            return Ok(());
        }
        self.apply(ctx, &[Op::Del { key: expire_key(ctx.db, &key) }])?;
        self.notify(ctx, notify::GENERIC, "persist", &key);
        ctx.int(1);
        Ok(())
    }
}
