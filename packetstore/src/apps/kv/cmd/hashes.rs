//! Hash commands: HSET, HGET, HDEL, HGETALL, HLEN, HEXISTS.
//!
//! Invariant: a hash's field count (`h` + key) and its fields (`f` + key +
//! field) change in the same store group; a hash with no field left is
//! deleted in that group.

use crate::apps::kv::ops::{key_ok, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::{expire_key, field_key, hash_key, KeyType, Op, StoreError, FIELD_SIZE_MAX};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("hset", -4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets fields of a hash.", KvServer::cmd_hset),
    cmd("hget", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the value of a hash field.", KvServer::cmd_hget),
    cmd("hdel", -3, &["write", "fast"], (1, 1, 1), "hash", "Deletes fields of a hash.", KvServer::cmd_hdel),
    cmd("hgetall", 2, &["readonly"], (1, 1, 1), "hash", "Returns every field and value of a hash.", KvServer::cmd_hgetall),
    cmd("hlen", 2, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the number of fields of a hash.", KvServer::cmd_hlen),
    cmd("hexists", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Whether a hash field exists.", KvServer::cmd_hexists),
];

impl KvServer {
    /// The hash at `key` exists as a hash (live), or is absent; Err if it
    /// is a string.
    fn hash_check(&self, ctx: &Ctx<'_>, key: &[u8]) -> Result<Result<bool, ()>, StoreError> {
        match self.store.key_type(ctx.pool, key, ctx.now)? {
            Some(KeyType::String) => Ok(Err(())),
            Some(KeyType::Hash) => Ok(Ok(true)),
            None => Ok(Ok(false)),
        }
    }

    fn cmd_hset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() % 2 != 0 {
            ctx.error("ERR wrong number of arguments for 'hset' command");
            return Ok(());
        }
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let mut count = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        let mut added = 0;
        let mut seen = std::collections::HashSet::new();
        let result = (|| {
            for i in (2..ctx.argc()).step_by(2) {
                let field = ctx.arg(i).into_owned();
                if field.len() > FIELD_SIZE_MAX {
                    return Ok(Err(format!(
                        "ERR field of {} bytes is over the limit of {FIELD_SIZE_MAX}",
                        field.len()
                    )));
                }
                if seen.insert(field.clone()) && self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_none() {
                    added += 1;
                    count += 1;
                }
                let put = self.put_arg(ctx, field_key(&key, &field), i + 1)?;
                ops.push(put);
            }
            let header = self.put_bytes(ctx, hash_key(&key), &count.to_le_bytes())?;
            ops.push(header);
            Ok(Ok(()))
        })();
        self.finish_ops(ctx, &ops, result, |ctx| ctx.int(added))
    }

    fn cmd_hget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        self.stats.reads += 1;
        match self.store.hash_get(ctx.pool, &key, &field, ctx.now)? {
            Some(value) => self.reply_value(ctx, &value)?,
            None => ctx.null(),
        }
        Ok(())
    }

    fn cmd_hdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.hash_check(ctx, &key)? {
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
            Ok(false) => {
                ctx.int(0);
                return Ok(());
            }
            Ok(true) => {}
        }
        let mut count = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        let mut ops = Vec::new();
        let mut removed = 0;
        let mut seen = std::collections::HashSet::new();
        for i in 2..ctx.argc() {
            let field = ctx.arg(i).into_owned();
            if seen.insert(field.clone()) && self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_some() {
                ops.push(Op::Del { key: field_key(&key, &field) });
                removed += 1;
                count -= 1;
            }
        }
        if removed > 0 {
            if count == 0 {
                ops.push(Op::DelHash { name: key.clone() });
                if self.store.expiry(&key).is_some() {
                    ops.push(Op::Del { key: expire_key(&key) });
                }
            } else {
                let header = self.put_bytes(ctx, hash_key(&key), &count.to_le_bytes())?;
                ops.push(header);
            }
            self.apply(ctx, &ops)?;
        }
        ctx.int(removed);
        Ok(())
    }

    fn cmd_hgetall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let fields = self.store.hash_fields(ctx.pool, &key, ctx.now)?;
        ctx.map(fields.len());
        for (field, value) in fields {
            ctx.bulk(&field);
            self.reply_value(ctx, &value)?;
        }
        Ok(())
    }

    fn cmd_hlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let len = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        ctx.int(len as i64);
        Ok(())
    }

    fn cmd_hexists(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let found = self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_some();
        ctx.int(i64::from(found));
        Ok(())
    }
}
