//! Sorted set commands, the member side: ZADD, ZINCRBY, ZREM, ZSCORE,
//! ZMSCORE, ZCARD, ZRANK, ZREVRANK, ZPOPMIN, ZPOPMAX, ZMPOP, ZRANDMEMBER,
//! ZSCAN (Redis 7.0's `t_zset.c`); ranges and set algebra are in
//! `zranges.rs`.
//!
//! A sorted set is an object (schema 2) whose members are kept twice:
//! `e` oid `0x01` member -> score (f64 LE), for ZSCORE and lex ranges,
//! and `e` oid `0x02` score key, member -> empty, in score order, for
//! score ranges and ranks (the tree's order statistics make ZRANK and
//! ZRANGE by rank O(log n)). A new member is two records, a changed score
//! three.
//!
//! Invariants: every member has both entries, with the same score, and
//! no score is NaN; a sorted set with no member left is deleted in the
//! same store group.

use crate::apps::kv::cmd::blocking::MpopRequest;
use crate::apps::kv::cmd::hashes::random_ranks_for;
use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{parse_cursor, parse_i64, parse_scan_args, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::proto::resp::glob_match;
use crate::store::db::{Op, StoreError, MEMBER_SIZE_MAX};
use crate::store::keyspace::{element_key, score_key, KeyType, Meta, SPACE_MAIN, SPACE_SCORE};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("zadd", -4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted_set", "Adds members with scores, or updates their scores.", KvServer::cmd_zadd),
    cmd("zincrby", 4, &["write", "denyoom", "fast"], (1, 1, 1), "sorted_set", "Adds to a member's score.", KvServer::cmd_zincrby),
    cmd("zrem", -3, &["write", "fast"], (1, 1, 1), "sorted_set", "Removes members.", KvServer::cmd_zrem),
    cmd("zscore", 3, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Returns a member's score.", KvServer::cmd_zscore),
    cmd("zmscore", -3, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Returns members' scores.", KvServer::cmd_zmscore),
    cmd("zcard", 2, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Returns the number of members.", KvServer::cmd_zcard),
    cmd("zrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Returns a member's rank by score, lowest first.", KvServer::cmd_zrank),
    cmd("zrevrank", 3, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Returns a member's rank by score, highest first.", KvServer::cmd_zrevrank),
    cmd("zpopmin", -2, &["write", "fast"], (1, 1, 1), "sorted_set", "Removes and returns the members of lowest score.", KvServer::cmd_zpopmin),
    cmd("zpopmax", -2, &["write", "fast"], (1, 1, 1), "sorted_set", "Removes and returns the members of highest score.", KvServer::cmd_zpopmax),
    cmd("zmpop", -4, &["write"], (0, 0, 0), "sorted_set", "Pops members from the first non-empty sorted set.", KvServer::cmd_zmpop),
    cmd("zrandmember", -2, &["readonly"], (1, 1, 1), "sorted_set", "Returns random members.", KvServer::cmd_zrandmember),
    cmd("zscan", -3, &["readonly"], (1, 1, 1), "sorted_set", "Iterates over members and scores.", KvServer::cmd_zscan),
    cmd("zrange", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by rank, score or lex range.", KvServer::cmd_zrange),
    cmd("zrangestore", -5, &["write", "denyoom"], (1, 2, 1), "sorted_set", "Stores a range of members.", KvServer::cmd_zrangestore),
    cmd("zrevrange", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by rank, highest first.", KvServer::cmd_zrevrange),
    cmd("zrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by score range.", KvServer::cmd_zrangebyscore),
    cmd("zrevrangebyscore", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by score range, highest first.", KvServer::cmd_zrevrangebyscore),
    cmd("zrangebylex", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by lex range.", KvServer::cmd_zrangebylex),
    cmd("zrevrangebylex", -4, &["readonly"], (1, 1, 1), "sorted_set", "Returns members by lex range, highest first.", KvServer::cmd_zrevrangebylex),
    cmd("zcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Counts members in a score range.", KvServer::cmd_zcount),
    cmd("zlexcount", 4, &["readonly", "fast"], (1, 1, 1), "sorted_set", "Counts members in a lex range.", KvServer::cmd_zlexcount),
    cmd("zremrangebyrank", 4, &["write"], (1, 1, 1), "sorted_set", "Removes members by rank range.", KvServer::cmd_zremrangebyrank),
    cmd("zremrangebyscore", 4, &["write"], (1, 1, 1), "sorted_set", "Removes members by score range.", KvServer::cmd_zremrangebyscore),
    cmd("zremrangebylex", 4, &["write"], (1, 1, 1), "sorted_set", "Removes members by lex range.", KvServer::cmd_zremrangebylex),
    cmd("zunion", -3, &["readonly"], (0, 0, 0), "sorted_set", "Returns the union of sorted sets.", KvServer::cmd_zunion),
    cmd("zinter", -3, &["readonly"], (0, 0, 0), "sorted_set", "Returns the intersection of sorted sets.", KvServer::cmd_zinter),
    cmd("zdiff", -3, &["readonly"], (0, 0, 0), "sorted_set", "Returns the difference of sorted sets.", KvServer::cmd_zdiff),
    cmd("zunionstore", -4, &["write", "denyoom"], (1, 1, 1), "sorted_set", "Stores the union of sorted sets.", KvServer::cmd_zunionstore),
    cmd("zinterstore", -4, &["write", "denyoom"], (1, 1, 1), "sorted_set", "Stores the intersection of sorted sets.", KvServer::cmd_zinterstore),
    cmd("zdiffstore", -4, &["write", "denyoom"], (1, 1, 1), "sorted_set", "Stores the difference of sorted sets.", KvServer::cmd_zdiffstore),
    cmd("zintercard", -3, &["readonly"], (0, 0, 0), "sorted_set", "Counts the intersection of sorted sets.", KvServer::cmd_zintercard),
];

pub(in crate::apps::kv) const NOT_FLOAT: &str = "ERR value is not a valid float";

/// A score argument as Redis's `strtod` takes it: decimal or `inf`
/// forms; NaN refused.
pub(in crate::apps::kv) fn parse_score(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.starts_with(char::is_whitespace) || text.ends_with(char::is_whitespace) {
        return None;
    }
    let value: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => text.parse().ok()?,
    };
    (!value.is_nan()).then_some(value)
}

/// A score stored in the member space (8 bytes, LE).
pub(in crate::apps::kv) fn stored_score(value: &Value) -> Result<f64, StoreError> {
    match value {
        Value::Inline(bytes) if bytes.len() == 8 => Ok(f64::from_le_bytes(bytes[..].try_into().expect("8 bytes"))),
        _ => Err(StoreError::Corrupt("a sorted set score is not 8 bytes".into())),
    }
}

/// The score space's key rest of a member: its score key, then itself.
pub(in crate::apps::kv) fn score_rest(score: f64, member: &[u8]) -> Vec<u8> {
    let mut rest = score_key(score).to_vec();
    rest.extend_from_slice(member);
    rest
}

/// ZADD's options.
#[derive(Clone, Copy, Default)]
struct AddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

impl AddOptions {
    /// Parses the options after the key; returns them and the index of
    /// the first score. Err: the error reply.
    fn parse(ctx: &Ctx<'_>) -> Result<(AddOptions, usize), &'static str> {
        let mut options = AddOptions::default();
        let mut i = 2;
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"NX") => options.nx = true,
                Some(b"XX") => options.xx = true,
                Some(b"GT") => options.gt = true,
                Some(b"LT") => options.lt = true,
                Some(b"CH") => options.ch = true,
                Some(b"INCR") => options.incr = true,
                _ => break,
            }
            i += 1;
        }
        let pairs = ctx.argc() - i;
        if pairs == 0 || pairs % 2 != 0 {
            return Err(SYNTAX);
        }
        if options.nx && options.xx {
            return Err("ERR XX and NX options at the same time are not compatible");
        }
        if (options.nx && (options.gt || options.lt)) || (options.gt && options.lt) {
            return Err("ERR GT, LT, and/or NX options at the same time are not compatible");
        }
        if options.incr && pairs > 2 {
            return Err("ERR INCR option supports a single increment-element pair");
        }
        Ok((options, i))
    }
}

/// What one ZADD pair did.
enum Added {
    New,
    Changed,
    Same,
    /// Not applied (NX, XX, GT or LT said no).
    Skipped,
}

impl KvServer {
    /// The live sorted set at `key`, None if absent; replies WRONGTYPE and
    /// returns Err(()) if it holds another type.
    pub(in crate::apps::kv) fn zset_read(
        &self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
    ) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let found = self.collection(ctx, key, KeyType::ZSet)?;
        if found.is_err() {
            ctx.error(WRONGTYPE);
        }
        Ok(found)
    }

    /// A member's score.
    pub(in crate::apps::kv) fn zscore_of(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        member: &[u8],
    ) -> Result<Option<f64>, StoreError> {
        self.store.element(ctx.pool, oid, SPACE_MAIN, member)?.map(|v| stored_score(&v)).transpose()
    }

    /// Ops setting `member`'s score (its old one `old`, if any).
    pub(in crate::apps::kv) fn zset_member_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        member: &[u8],
        old: Option<f64>,
        score: f64,
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if let Some(old) = old {
            ops.push(Op::Del { key: element_key(oid, SPACE_SCORE, &score_rest(old, member)) });
        }
        ops.push(self.put_bytes(ctx, element_key(oid, SPACE_MAIN, member), &score.to_le_bytes())?);
        ops.push(self.put_bytes(ctx, element_key(oid, SPACE_SCORE, &score_rest(score, member)), &[])?);
        Ok(())
    }

    /// Ops removing `member` (of score `score`).
    pub(in crate::apps::kv) fn zset_remove_ops(oid: u64, member: &[u8], score: f64, ops: &mut Vec<Op>) {
        ops.push(Op::Del { key: element_key(oid, SPACE_MAIN, member) });
        ops.push(Op::Del { key: element_key(oid, SPACE_SCORE, &score_rest(score, member)) });
    }

    fn cmd_zadd(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (options, first) = match AddOptions::parse(ctx) {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        self.zadd_generic(ctx, options, first)
    }

    fn cmd_zincrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = AddOptions { incr: true, ..AddOptions::default() };
        self.zadd_generic(ctx, options, 2)
    }

    /// ZADD and ZINCRBY: the score and member pairs from argument `first`.
    fn zadd_generic(&mut self, ctx: &mut Ctx<'_>, options: AddOptions, first: usize) -> Result<(), StoreError> {
        let mut pairs = Vec::new();
        for i in (first..ctx.argc()).step_by(2) {
            let Some(score) = parse_score(&ctx.arg(i)) else {
                ctx.error(NOT_FLOAT);
                return Ok(());
            };
            let member = ctx.arg(i + 1).into_owned();
            if member.len() > MEMBER_SIZE_MAX {
                ctx.error(&format!("ERR member of {} bytes is over the limit of {MEMBER_SIZE_MAX}", member.len()));
                return Ok(());
            }
            pairs.push((score, member));
        }
        self.zadd_parsed(ctx, options, &pairs)
    }

    /// GEOADD's ZADD: the pairs computed, NX, XX and CH as given.
    pub(in crate::apps::kv) fn zadd_scored(
        &mut self,
        ctx: &mut Ctx<'_>,
        (nx, xx, ch): (bool, bool, bool),
        pairs: &[(f64, Vec<u8>)],
    ) -> Result<(), StoreError> {
        self.zadd_parsed(ctx, AddOptions { nx, xx, ch, ..AddOptions::default() }, pairs)
    }

    /// ZADD of parsed pairs to the key at argument 1.
    fn zadd_parsed(
        &mut self,
        ctx: &mut Ctx<'_>,
        options: AddOptions,
        pairs: &[(f64, Vec<u8>)],
    ) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        if found.is_none() && options.xx {
            self.zadd_reply(ctx, options, 0, None);
            return Ok(());
        }
        let mut ops = Vec::new();
        let outcome = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let meta = match found {
                Some(meta) => meta,
                None => server.collection_for_write(ctx, &key, KeyType::ZSet, ops)?.expect("type checked").0,
            };
            server.zadd_pairs(ctx, meta, options, pairs, found.is_none(), ops)
        })?;
        let (count, last) = match outcome {
            Ok(outcome) => outcome,
            Err(why) => {
                crate::store::db::Store::release_ops(ctx.buffers, &ops);
                ctx.error(why);
                return Ok(());
            }
        };
        let added_any = ops.iter().any(|op| matches!(op, Op::Put { key, .. } if key.first() == Some(&b'e')));
        if added_any {
            self.apply(ctx, &ops)?;
            self.notify(ctx, notify::ZSET, if options.incr { "zincr" } else { "zadd" }, &key);
        } else {
            crate::store::db::Store::release_ops(ctx.buffers, &ops);
        }
        self.zadd_reply(ctx, options, count, last);
        Ok(())
    }

    /// Adds each pair; returns the count to reply (added, or changed with
    /// CH) and, with INCR, the new score (None: not applied). Err: the
    /// error reply (a NaN result).
    fn zadd_pairs(
        &mut self,
        ctx: &mut Ctx<'_>,
        meta: Meta,
        options: AddOptions,
        pairs: &[(f64, Vec<u8>)],
        created: bool,
        ops: &mut Vec<Op>,
    ) -> Result<Result<(i64, Option<f64>), &'static str>, StoreError> {
        let mut count = 0;
        let mut last = None;
        let mut pending: std::collections::HashMap<Vec<u8>, f64> = std::collections::HashMap::new();
        for (score, member) in pairs {
            let old = match pending.get(member) {
                Some(&score) => Some(score),
                None if created => None,
                None => self.zscore_of(ctx, meta.oid, member)?,
            };
            let mut new = *score;
            if options.incr {
                new += old.unwrap_or(0.0);
                if new.is_nan() {
                    return Ok(Err("ERR resulting score is not a number (NaN)"));
                }
            }
            let added = match old {
                None if options.xx => Added::Skipped,
                None => Added::New,
                Some(_) if options.nx => Added::Skipped,
                Some(old) if (options.gt && new <= old) || (options.lt && new >= old) => Added::Skipped,
                Some(old) if old == new => Added::Same,
                Some(_) => Added::Changed,
            };
            match added {
                Added::Skipped | Added::Same => {}
                Added::New | Added::Changed => {
                    self.zset_member_ops(ctx, meta.oid, member, old, new, ops)?;
                    pending.insert(member.clone(), new);
                }
            }
            match added {
                Added::New => count += 1,
                Added::Changed if options.ch => count += 1,
                _ => {}
            }
            if !matches!(added, Added::Skipped) {
                last = Some(new);
            }
        }
        Ok(Ok((count, last)))
    }

    fn zadd_reply(&self, ctx: &mut Ctx<'_>, options: AddOptions, count: i64, last: Option<f64>) {
        if !options.incr {
            ctx.int(count);
            return;
        }
        match last {
            Some(score) => {
                let enc = ctx.enc();
                enc.double(ctx.out.bytes(), score);
            }
            None => ctx.null(),
        }
    }

    fn cmd_zrem(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let mut ops = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in 2..ctx.argc() {
            let member = ctx.arg(i).into_owned();
            if seen.insert(member.clone()) {
                if let Some(score) = self.zscore_of(ctx, meta.oid, &member)? {
                    Self::zset_remove_ops(meta.oid, &member, score, &mut ops);
                }
            }
        }
        let removed = ops.len() / 2;
        self.apply_removal(ctx, &key, meta, removed, ops)?;
        if removed > 0 {
            self.notify(ctx, notify::ZSET, "zrem", &key);
        }
        ctx.int(removed as i64);
        Ok(())
    }

    fn cmd_zscore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let member = ctx.arg(2).into_owned();
        match found.map(|meta| self.zscore_of(ctx, meta.oid, &member)).transpose()?.flatten() {
            Some(score) => {
                let enc = ctx.enc();
                enc.double(ctx.out.bytes(), score);
            }
            None => ctx.null(),
        }
        Ok(())
    }

    fn cmd_zmscore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        ctx.array(ctx.argc() - 2);
        for i in 2..ctx.argc() {
            let member = ctx.arg(i).into_owned();
            match found.map(|meta| self.zscore_of(ctx, meta.oid, &member)).transpose()?.flatten() {
                Some(score) => {
                    let enc = ctx.enc();
                    enc.double(ctx.out.bytes(), score);
                }
                None => ctx.null(),
            }
        }
        Ok(())
    }

    fn cmd_zcard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let count = match found {
            Some(meta) => self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?,
            None => 0,
        };
        ctx.int(count as i64);
        Ok(())
    }

    fn cmd_zrank(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrank_generic(ctx, false)
    }

    fn cmd_zrevrank(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrank_generic(ctx, true)
    }

    /// ZRANK and ZREVRANK: O(log n) through the tree's counts.
    fn zrank_generic(&mut self, ctx: &mut Ctx<'_>, reverse: bool) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let member = ctx.arg(2).into_owned();
        let Some(meta) = found else {
            ctx.null();
            return Ok(());
        };
        let Some(score) = self.zscore_of(ctx, meta.oid, &member)? else {
            ctx.null();
            return Ok(());
        };
        let rank = self.store.element_rank(ctx.pool, meta.oid, SPACE_SCORE, &score_rest(score, &member))?;
        let count = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?;
        ctx.int(if reverse { count - 1 - rank } else { rank } as i64);
        Ok(())
    }

    /// Replies with (member, score) pairs: flat in RESP2, pairs in RESP3
    /// when `nested` (ZPOPMIN's and ZRANGE's WITHSCORES differ there).
    pub(in crate::apps::kv) fn reply_scored(
        ctx: &mut Ctx<'_>,
        pairs: &[(Vec<u8>, f64)],
        with_scores: bool,
        nested: bool,
    ) {
        let resp3 = ctx.enc().resp3;
        let flat = with_scores && !(resp3 && nested);
        ctx.array(if flat { pairs.len() * 2 } else { pairs.len() });
        for (member, score) in pairs {
            if with_scores && resp3 && nested {
                ctx.array(2);
            }
            ctx.bulk(member);
            if with_scores {
                let enc = ctx.enc();
                enc.double(ctx.out.bytes(), *score);
            }
        }
    }

    /// Removes up to `count` members of lowest (or highest) score; returns
    /// them with their scores.
    pub(in crate::apps::kv) fn zpop(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        count: usize,
        max: bool,
    ) -> Result<Vec<(Vec<u8>, f64)>, StoreError> {
        let mut popped = Vec::new();
        let unbounded = std::ops::Bound::Unbounded;
        for entry in self.store.elements(ctx.pool, meta.oid, SPACE_SCORE, unbounded, unbounded, max).take(count) {
            let (rest, _) = entry?;
            let score = crate::store::keyspace::score_from_key(rest[..8].try_into().expect("a score key"));
            popped.push((rest[8..].to_vec(), score));
        }
        let mut ops = Vec::new();
        for (member, score) in &popped {
            Self::zset_remove_ops(meta.oid, member, *score, &mut ops);
        }
        self.apply_removal(ctx, key, meta, popped.len(), ops)?;
        Ok(popped)
    }

    fn cmd_zpopmin(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zpop_generic(ctx, false)
    }

    fn cmd_zpopmax(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zpop_generic(ctx, true)
    }

    fn zpop_generic(&mut self, ctx: &mut Ctx<'_>, max: bool) -> Result<(), StoreError> {
        if ctx.argc() > 3 {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let count = match (ctx.argc() == 3).then(|| parse_i64(&ctx.arg(2))) {
            None => None,
            Some(Some(n)) if n >= 0 => Some(n as usize),
            Some(Some(_)) => {
                ctx.error("ERR value is out of range, must be positive");
                return Ok(());
            }
            Some(None) => {
                ctx.error(NOT_INTEGER);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let popped = match found {
            Some(meta) => self.zpop(ctx, &key, meta, count.unwrap_or(1), max)?,
            None => Vec::new(),
        };
        // Without a count, RESP3 replies with one flat pair.
        Self::reply_scored(ctx, &popped, true, count.is_some());
        Ok(())
    }

    /// ZMPOP numkeys key... MIN|MAX [COUNT n].
    fn cmd_zmpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_mpop(ctx, 1, [b"MIN", b"MAX"])? else { return Ok(()) };
        if !self.zmpop_first(ctx, &request)? {
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
        }
        Ok(())
    }

    /// Pops from the first non-empty sorted set of the request and
    /// replies [key, [[member, score]...]] (nested in RESP2 too). Returns
    /// whether it replied (a WRONGTYPE error counts); false: all empty.
    pub(in crate::apps::kv) fn zmpop_first(
        &mut self,
        ctx: &mut Ctx<'_>,
        request: &MpopRequest,
    ) -> Result<bool, StoreError> {
        for key in &request.keys {
            let Ok(found) = self.zset_read(ctx, key)? else { return Ok(true) };
            if let Some(meta) = found {
                let popped = self.zpop(ctx, key, meta, request.count, request.last)?;
                ctx.array(2);
                ctx.bulk(key);
                ctx.array(popped.len());
                for (member, score) in &popped {
                    ctx.array(2);
                    ctx.bulk(member);
                    let enc = ctx.enc();
                    enc.double(ctx.out.bytes(), *score);
                }
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn cmd_zrandmember(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let with_scores = ctx.argc() == 4 && ctx.conn.args.upper(3).as_deref() == Some(b"WITHSCORES");
        if ctx.argc() > 4 || (ctx.argc() == 4 && !with_scores) {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let count = match (ctx.argc() > 2).then(|| parse_i64(&ctx.arg(2))) {
            None => None,
            Some(None) => {
                ctx.error(NOT_INTEGER);
                return Ok(());
            }
            Some(Some(n)) if n == i64::MIN || (n < -(i64::MAX / 2) && with_scores) => {
                ctx.error("ERR value is out of range");
                return Ok(());
            }
            Some(Some(n)) => Some(n),
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            if count.is_some() {
                ctx.array(0);
            } else {
                ctx.null();
            }
            return Ok(());
        };
        let size = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)?;
        let (distinct, repeating) = match count {
            None => (None, None),
            Some(n) if n >= 0 => (Some(n as u64), None),
            Some(n) => (None, Some(n.unsigned_abs())),
        };
        let mut picked = Vec::new();
        for rank in random_ranks_for(distinct, repeating, size) {
            let (member, value) = self.store.element_nth(ctx.pool, meta.oid, SPACE_MAIN, rank)?.expect("a rank");
            picked.push((member, stored_score(&value)?));
        }
        if count.is_none() {
            ctx.bulk(&picked[0].0);
            return Ok(());
        }
        Self::reply_scored(ctx, &picked, with_scores, true);
        Ok(())
    }

    fn cmd_zscan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let parsed = parse_cursor(&ctx.arg(2)).and_then(|cursor| Ok((cursor, parse_scan_args(ctx, 3, false)?)));
        let (cursor, args) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let (next, page) = match found {
            Some(meta) => self.scan_elements(ctx, meta.oid, SPACE_MAIN, cursor, args.count)?,
            None => (0, Vec::new()),
        };
        let mut pairs = Vec::new();
        for (member, value) in page {
            if args.pattern.as_ref().is_none_or(|p| glob_match(p, &member)) {
                pairs.push((member, stored_score(&value)?));
            }
        }
        ctx.array(2);
        ctx.bulk(next.to_string().as_bytes());
        ctx.array(pairs.len() * 2);
        for (member, score) in pairs {
            ctx.bulk(&member);
            let text = crate::proto::resp::format_double(score);
            ctx.bulk(text.as_bytes());
        }
        Ok(())
    }
}
