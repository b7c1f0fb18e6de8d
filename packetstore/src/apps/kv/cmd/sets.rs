//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD,
//! SPOP, SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SUNION, SDIFF and their
//! STORE forms, SSCAN (Redis 7.0's `t_set.c`).
//!
//! A set is an object (schema 2): an `m` entry naming its oid, and one
//! tree entry per member, `e` oid `0x01` member, with an empty value.
//! SADD of a new member writes that member alone; SCARD counts in the
//! tree (O(log n)); SRANDMEMBER and SPOP pick members by rank.
//!
//! Invariant: a set with no member left is deleted in the same store
//! group as the removal of its last member.

use std::collections::BTreeSet;
use std::ops::Bound;

use crate::apps::kv::cmd::hashes::random_ranks_for;
use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{parse_cursor, parse_i64, parse_scan_args, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::proto::resp::glob_match;
use crate::store::db::{Op, StoreError, MEMBER_SIZE_MAX};
use crate::store::keyspace::{element_key, KeyType, Meta, SPACE_MAIN};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("sadd", -3, &["write", "denyoom", "fast"], (1, 1, 1), "set", "Adds members to a set.", KvServer::cmd_sadd),
    cmd("srem", -3, &["write", "fast"], (1, 1, 1), "set", "Removes members from a set.", KvServer::cmd_srem),
    cmd("smembers", 2, &["readonly"], (1, 1, 1), "set", "Returns every member of a set.", KvServer::cmd_smembers),
    cmd("sismember", 3, &["readonly", "fast"], (1, 1, 1), "set", "Whether a member is in a set.", KvServer::cmd_sismember),
    cmd("smismember", -3, &["readonly", "fast"], (1, 1, 1), "set", "Whether each member is in a set.", KvServer::cmd_smismember),
    cmd("scard", 2, &["readonly", "fast"], (1, 1, 1), "set", "Returns the number of members of a set.", KvServer::cmd_scard),
    cmd("spop", -2, &["write", "fast"], (1, 1, 1), "set", "Removes and returns random members.", KvServer::cmd_spop),
    cmd("srandmember", -2, &["readonly"], (1, 1, 1), "set", "Returns random members.", KvServer::cmd_srandmember),
    cmd("smove", 4, &["write", "fast"], (1, 2, 1), "set", "Moves a member from one set to another.", KvServer::cmd_smove),
    cmd("sinter", -2, &["readonly"], (1, -1, 1), "set", "Returns the intersection of sets.", KvServer::cmd_sinter),
    cmd("sintercard", -3, &["readonly"], (0, 0, 0), "set", "Counts the intersection of sets.", KvServer::cmd_sintercard),
    cmd("sunion", -2, &["readonly"], (1, -1, 1), "set", "Returns the union of sets.", KvServer::cmd_sunion),
    cmd("sdiff", -2, &["readonly"], (1, -1, 1), "set", "Returns the difference of sets.", KvServer::cmd_sdiff),
    cmd("sinterstore", -3, &["write", "denyoom"], (1, -1, 1), "set", "Stores the intersection of sets.", KvServer::cmd_sinterstore),
    cmd("sunionstore", -3, &["write", "denyoom"], (1, -1, 1), "set", "Stores the union of sets.", KvServer::cmd_sunionstore),
    cmd("sdiffstore", -3, &["write", "denyoom"], (1, -1, 1), "set", "Stores the difference of sets.", KvServer::cmd_sdiffstore),
    cmd("sscan", -3, &["readonly"], (1, 1, 1), "set", "Iterates over the members of a set.", KvServer::cmd_sscan),
];

/// The most members a set algebra command gathers in memory.
const ALGEBRA_MEMBERS_MAX: usize = 10_000_000;

/// A set algebra operation.
#[derive(Clone, Copy, PartialEq)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

/// Members; Err(()) once an error was replied.
type Members = Result<BTreeSet<Vec<u8>>, ()>;

impl KvServer {
    /// The live set at `key`, None if absent; replies WRONGTYPE and
    /// returns Err(()) if it holds another type.
    fn set_read(&self, ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let found = self.collection(ctx, key, KeyType::Set)?;
        if found.is_err() {
            ctx.error(WRONGTYPE);
        }
        Ok(found)
    }

    fn is_member(&self, ctx: &Ctx<'_>, meta: Option<Meta>, member: &[u8]) -> Result<bool, StoreError> {
        match meta {
            Some(meta) => Ok(self.store.element(ctx.pool, meta.oid, SPACE_MAIN, member)?.is_some()),
            None => Ok(false),
        }
    }

    fn cmd_sadd(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let members: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        if let Some(long) = members.iter().find(|m| m.len() > MEMBER_SIZE_MAX) {
            ctx.error(&format!("ERR member of {} bytes is over the limit of {MEMBER_SIZE_MAX}", long.len()));
            return Ok(());
        }
        if let Err(why) = crate::apps::kv::ops::key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let mut ops = Vec::new();
        let added = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let Ok((meta, created)) = server.collection_for_write(ctx, &key, KeyType::Set, ops)? else {
                return Ok(None);
            };
            let mut seen = BTreeSet::new();
            for member in &members {
                let new = created || !server.is_member(ctx, Some(meta), member)?;
                if new && seen.insert(member.clone()) {
                    ops.push(server.put_bytes(ctx, element_key(meta.oid, SPACE_MAIN, member), &[])?);
                }
            }
            Ok(Some(seen.len()))
        })?;
        let Some(added) = added else {
            ctx.error(WRONGTYPE);
            return Ok(());
        };
        if added > 0 {
            self.apply(ctx, &ops)?;
            self.notify(ctx, notify::SET, "sadd", &key);
        } else {
            crate::store::db::Store::release_ops(ctx.buffers, &ops);
        }
        ctx.int(added as i64);
        Ok(())
    }

    fn cmd_srem(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let mut ops = Vec::new();
        let mut seen = BTreeSet::new();
        for i in 2..ctx.argc() {
            let member = ctx.arg(i).into_owned();
            if self.is_member(ctx, found, &member)? && seen.insert(member.clone()) {
                ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, &member) });
            }
        }
        let removed = ops.len();
        self.apply_removal(ctx, &key, meta, removed, ops)?;
        if removed > 0 {
            self.notify(ctx, notify::SET, "srem", &key);
        }
        ctx.int(removed as i64);
        Ok(())
    }

    /// Every member of the set `meta` (None: empty).
    fn set_members(&self, ctx: &Ctx<'_>, meta: Option<Meta>) -> Result<BTreeSet<Vec<u8>>, StoreError> {
        let Some(meta) = meta else { return Ok(BTreeSet::new()) };
        let mut out = BTreeSet::new();
        for entry in self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false) {
            out.insert(entry?.0);
            if out.len() > ALGEBRA_MEMBERS_MAX {
                return Err(StoreError::Full(format!("a set of over {ALGEBRA_MEMBERS_MAX} members")));
            }
        }
        Ok(out)
    }

    /// Replies with members: a RESP3 set, a RESP2 array.
    fn reply_members<'m>(ctx: &mut Ctx<'_>, members: impl ExactSizeIterator<Item = &'m Vec<u8>>) {
        if ctx.enc().resp3 {
            ctx.out.bytes().extend_from_slice(format!("~{}\r\n", members.len()).as_bytes());
        } else {
            ctx.array(members.len());
        }
        for member in members {
            ctx.bulk(member);
        }
    }

    fn cmd_smembers(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let members = self.set_members(ctx, found)?;
        Self::reply_members(ctx, members.iter());
        Ok(())
    }

    fn cmd_sismember(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let member = ctx.arg(2).into_owned();
        let is = self.is_member(ctx, found, &member)?;
        ctx.int(i64::from(is));
        Ok(())
    }

    fn cmd_smismember(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        ctx.array(ctx.argc() - 2);
        for i in 2..ctx.argc() {
            let member = ctx.arg(i).into_owned();
            let is = self.is_member(ctx, found, &member)?;
            ctx.int(i64::from(is));
        }
        Ok(())
    }

    fn cmd_scard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let count = match found {
            Some(meta) => self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?,
            None => 0,
        };
        ctx.int(count as i64);
        Ok(())
    }

    /// The count argument of SPOP and SRANDMEMBER (None: absent). Err(())
    /// once an error was replied.
    fn set_count_arg(ctx: &mut Ctx<'_>, name: &str) -> Result<Option<i64>, ()> {
        match ctx.argc() {
            2 => Ok(None),
            3 => match parse_i64(&ctx.arg(2)) {
                Some(n) if name == "spop" && n < 0 => {
                    ctx.error("ERR value is out of range, must be positive");
                    Err(())
                }
                Some(i64::MIN) => {
                    ctx.error("ERR value is out of range");
                    Err(())
                }
                Some(n) => Ok(Some(n)),
                None => {
                    ctx.error(NOT_INTEGER);
                    Err(())
                }
            },
            _ => {
                ctx.error(SYNTAX);
                Err(())
            }
        }
    }

    /// Members at random ranks: one, up to `n` distinct, or `-n` repeating.
    fn random_members(&self, ctx: &Ctx<'_>, meta: Meta, count: Option<i64>) -> Result<Vec<Vec<u8>>, StoreError> {
        let size = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?;
        let (distinct, repeating) = match count {
            None => (None, None),
            Some(n) if n >= 0 => (Some(n as u64), None),
            Some(n) => (None, Some(n.unsigned_abs())),
        };
        let mut out = Vec::new();
        for rank in random_ranks_for(distinct, repeating, size) {
            out.push(self.store.element_nth(ctx.pool, meta.oid, SPACE_MAIN, rank)?.expect("a rank").0);
        }
        Ok(out)
    }

    fn cmd_srandmember(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(count) = Self::set_count_arg(ctx, "srandmember") else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            if count.is_some() {
                ctx.array(0);
            } else {
                ctx.null();
            }
            return Ok(());
        };
        let picked = self.random_members(ctx, meta, count)?;
        if count.is_none() {
            ctx.bulk(&picked[0]);
        } else {
            ctx.array(picked.len());
            for member in &picked {
                ctx.bulk(member);
            }
        }
        Ok(())
    }

    fn cmd_spop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(count) = Self::set_count_arg(ctx, "spop") else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            if count.is_some() {
                Self::reply_members(ctx, Vec::new().iter());
            } else {
                ctx.null();
            }
            return Ok(());
        };
        let picked = self.random_members(ctx, meta, Some(count.unwrap_or(1)))?;
        let ops: Vec<Op> =
            picked.iter().map(|member| Op::Del { key: element_key(meta.oid, SPACE_MAIN, member) }).collect();
        self.apply_removal(ctx, &key, meta, picked.len(), ops)?;
        self.notify(ctx, notify::SET, "spop", &key);
        if count.is_none() {
            ctx.bulk(&picked[0]);
        } else {
            Self::reply_members(ctx, picked.iter());
        }
        Ok(())
    }

    fn cmd_smove(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (src, dst, member) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned(), ctx.arg(3).into_owned());
        // Redis's order: a missing source answers 0 before the
        // destination's type is looked at.
        let Ok(from) = self.set_read(ctx, &src)? else { return Ok(()) };
        let Some(from) = from else {
            ctx.int(0);
            return Ok(());
        };
        let Ok(to) = self.set_read(ctx, &dst)? else { return Ok(()) };
        if !self.is_member(ctx, Some(from), &member)? {
            ctx.int(0);
            return Ok(());
        }
        if src == dst {
            ctx.int(1);
            return Ok(());
        }
        let mut ops = vec![Op::Del { key: element_key(from.oid, SPACE_MAIN, &member) }];
        if self.store.element_count(ctx.pool, from.oid, SPACE_MAIN)? == 1 {
            self.drop_empty_ops(ctx, &src, &mut ops);
        }
        let added = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let meta = match to {
                Some(meta) => meta,
                None => server.collection_for_write(ctx, &dst, KeyType::Set, ops)?.expect("type checked").0,
            };
            if server.is_member(ctx, Some(meta), &member)? {
                return Ok(false);
            }
            ops.push(server.put_bytes(ctx, element_key(meta.oid, SPACE_MAIN, &member), &[])?);
            Ok(true)
        })?;
        self.apply(ctx, &ops)?;
        if !added {
            // The destination is unchanged: only the source was written
            // (WATCH on the destination holds, as in Redis).
            self.modified = false;
            self.touch_written(ctx, &src);
        }
        ctx.int(1);
        Ok(())
    }

    /// The members of the sets at `keys` combined by `op`.
    fn set_algebra(&self, ctx: &mut Ctx<'_>, keys: &[Vec<u8>], op: Algebra) -> Result<Members, StoreError> {
        let mut result: Option<BTreeSet<Vec<u8>>> = None;
        for key in keys {
            let Ok(found) = self.set_read(ctx, key)? else { return Ok(Err(())) };
            let members = self.set_members(ctx, found)?;
            result = Some(match (result, op) {
                (None, _) => members,
                (Some(acc), Algebra::Inter) => acc.intersection(&members).cloned().collect(),
                (Some(acc), Algebra::Union) => acc.union(&members).cloned().collect(),
                (Some(acc), Algebra::Diff) => acc.difference(&members).cloned().collect(),
            });
        }
        Ok(Ok(result.unwrap_or_default()))
    }

    fn set_algebra_reply(&mut self, ctx: &mut Ctx<'_>, op: Algebra) -> Result<(), StoreError> {
        let keys: Vec<Vec<u8>> = (1..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        let Ok(members) = self.set_algebra(ctx, &keys, op)? else { return Ok(()) };
        Self::reply_members(ctx, members.iter());
        Ok(())
    }

    fn set_algebra_store(&mut self, ctx: &mut Ctx<'_>, op: Algebra) -> Result<(), StoreError> {
        let dst = ctx.arg(1).into_owned();
        let keys: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        let Ok(members) = self.set_algebra(ctx, &keys, op)? else { return Ok(()) };
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &dst, ops)?;
            if members.is_empty() {
                return Ok(());
            }
            let meta = server.new_object_ops(ctx, &dst, KeyType::Set, ops)?;
            for member in &members {
                ops.push(server.put_bytes(ctx, element_key(meta.oid, SPACE_MAIN, member), &[])?);
            }
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        ctx.int(members.len() as i64);
        Ok(())
    }

    fn cmd_sinter(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_reply(ctx, Algebra::Inter)
    }

    fn cmd_sunion(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_reply(ctx, Algebra::Union)
    }

    fn cmd_sdiff(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_reply(ctx, Algebra::Diff)
    }

    fn cmd_sinterstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_store(ctx, Algebra::Inter)
    }

    fn cmd_sunionstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_store(ctx, Algebra::Union)
    }

    fn cmd_sdiffstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.set_algebra_store(ctx, Algebra::Diff)
    }

    /// SINTERCARD numkeys key... [LIMIT n].
    fn cmd_sintercard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let numkeys = match parse_i64(&ctx.arg(1)) {
            Some(n) if n > 0 && (n as usize) < ctx.argc() - 1 => n as usize,
            Some(n) if n > 0 => {
                ctx.error("ERR Number of keys can't be greater than number of args");
                return Ok(());
            }
            _ => {
                ctx.error("ERR numkeys should be greater than 0");
                return Ok(());
            }
        };
        let mut limit = 0usize;
        let rest = 2 + numkeys;
        if ctx.argc() > rest {
            match (ctx.argc() - rest, ctx.conn.args.upper(rest).as_deref()) {
                (2, Some(b"LIMIT")) => match parse_i64(&ctx.arg(rest + 1)) {
                    Some(n) if n >= 0 => limit = n as usize,
                    _ => {
                        ctx.error("ERR LIMIT can't be negative");
                        return Ok(());
                    }
                },
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(());
                }
            }
        }
        let keys: Vec<Vec<u8>> = (2..rest).map(|i| ctx.arg(i).into_owned()).collect();
        let Ok(members) = self.set_algebra(ctx, &keys, Algebra::Inter)? else { return Ok(()) };
        let count = if limit > 0 { members.len().min(limit) } else { members.len() };
        ctx.int(count as i64);
        Ok(())
    }

    fn cmd_sscan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let parsed = parse_cursor(&ctx.arg(2)).and_then(|cursor| Ok((cursor, parse_scan_args(ctx, 3, false)?)));
        let (cursor, args) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.set_read(ctx, &key)? else { return Ok(()) };
        let (next, page) = match found {
            Some(meta) => self.scan_elements(ctx, meta.oid, SPACE_MAIN, cursor, args.count)?,
            None => (0, Vec::new()),
        };
        let members: Vec<Vec<u8>> = page
            .into_iter()
            .map(|(member, _)| member)
            .filter(|member| args.pattern.as_ref().is_none_or(|p| glob_match(p, member)))
            .collect();
        ctx.array(2);
        ctx.bulk(next.to_string().as_bytes());
        ctx.array(members.len());
        for member in &members {
            ctx.bulk(member);
        }
        Ok(())
    }
}
