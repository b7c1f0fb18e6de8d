//! Sorted set ranges and set algebra: ZRANGE (by rank, BYSCORE, BYLEX,
//! REV, LIMIT, WITHSCORES) and its older forms, ZRANGESTORE, ZCOUNT,
//! ZLEXCOUNT, ZREMRANGEBYRANK/SCORE/LEX, ZUNION, ZINTER, ZDIFF (and their
//! STORE forms, WEIGHTS, AGGREGATE), ZINTERCARD (Redis 7.0's `t_zset.c`).
//!
//! Ranges read the tree: by rank and by score on the score space (a seek
//! by rank or by score key, O(log n), then one step per member), by lex
//! on the member space. Counts are two descents, O(log n).
//!
//! Invariant: a STORE form writes its destination as one store group (the
//! old destination deleted, the new members written), and stores nothing,
//! deleting the destination, when the result is empty.

use std::ops::Bound;

use crate::apps::kv::cmd::zsets::stored_score;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{Ctx, KvServer};
use crate::store::db::{StoreError, MEMBER_SIZE_MAX};
use crate::store::keyspace::{prefix_end, score_from_key, score_key, KeyType, Meta, SPACE_MAIN, SPACE_SCORE};

/// A range of a sorted set, as its command gave it.
#[derive(Clone)]
enum Range {
    Rank(i64, i64),
    /// min, min exclusive, max, max exclusive.
    Score(f64, bool, f64, bool),
    /// min and max: None for `-` and `+`, else the member and whether
    /// it is excluded.
    Lex(LexBound, LexBound),
}

#[derive(Clone)]
enum LexBound {
    Min,
    Max,
    At(Vec<u8>, bool),
}

/// A score bound (`1.5`, `(1.5`, `-inf`, `+inf`). Err: the reply.
fn parse_score_bound(bytes: &[u8]) -> Result<(f64, bool), &'static str> {
    let (text, exclusive) = match bytes.strip_prefix(b"(") {
        Some(rest) => (rest, true),
        None => (bytes, false),
    };
    crate::apps::kv::cmd::zsets::parse_score(text).map(|s| (s, exclusive)).ok_or("ERR min or max is not a float")
}

/// A lex bound (`[a`, `(a`, `-`, `+`). Err: the reply.
fn parse_lex_bound(bytes: &[u8]) -> Result<LexBound, &'static str> {
    match bytes.first() {
        Some(b'-') if bytes.len() == 1 => Ok(LexBound::Min),
        Some(b'+') if bytes.len() == 1 => Ok(LexBound::Max),
        Some(b'[') => Ok(LexBound::At(bytes[1..].to_vec(), false)),
        Some(b'(') => Ok(LexBound::At(bytes[1..].to_vec(), true)),
        _ => Err("ERR min or max not valid string range item"),
    }
}

/// The tree bounds (on the rest after `e` oid space) of a range, owned.
fn owned_bound(bound: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    bound
}

fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Range {
    /// Whether the range can hold nothing (its start after its end).
    fn is_empty(&self) -> bool {
        match self {
            Range::Rank(..) => false,
            Range::Score(min, min_ex, max, max_ex) => min > max || (min == max && (*min_ex || *max_ex)),
            Range::Lex(min, max) => match (min, max) {
                (LexBound::Max, _) | (_, LexBound::Min) => true,
                (LexBound::At(a, a_ex), LexBound::At(b, b_ex)) => a > b || (a == b && (*a_ex || *b_ex)),
                _ => false,
            },
        }
    }

    /// The space a score or lex range reads, and its bounds there.
    fn tree_bounds(&self) -> (u8, Bound<Vec<u8>>, Bound<Vec<u8>>) {
        match self {
            Range::Score(min, min_ex, max, max_ex) => {
                let start = if *min_ex {
                    prefix_end(&score_key(*min)).map_or(Bound::Excluded(vec![0xFF; 9]), Bound::Included)
                } else {
                    Bound::Included(score_key(*min).to_vec())
                };
                let end = if *max_ex {
                    Bound::Excluded(score_key(*max).to_vec())
                } else {
                    prefix_end(&score_key(*max)).map_or(Bound::Unbounded, Bound::Excluded)
                };
                (SPACE_SCORE, owned_bound(start), end)
            }
            Range::Lex(min, max) => {
                let start = match min {
                    LexBound::At(m, false) => Bound::Included(m.clone()),
                    LexBound::At(m, true) => Bound::Excluded(m.clone()),
                    _ => Bound::Unbounded,
                };
                let end = match max {
                    LexBound::At(m, false) => Bound::Included(m.clone()),
                    LexBound::At(m, true) => Bound::Excluded(m.clone()),
                    _ => Bound::Unbounded,
                };
                (SPACE_MAIN, start, end)
            }
            Range::Rank(..) => unreachable!("ranks are not key bounds"),
        }
    }
}

/// ZRANGE's query, parsed.
struct Query {
    range: Range,
    reverse: bool,
    /// LIMIT offset count (count negative: all).
    limit: Option<(i64, i64)>,
    with_scores: bool,
}

/// The form of ZRANGE a command is.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// ZRANGE and ZRANGESTORE: options say the kind.
    Generic,
    Rank,
    Score,
    Lex,
}

impl Query {
    /// Parses `min max [options]` from argument `at` (`reverse`: the
    /// command is a REV form, whose bounds come max first). Err: reply.
    fn parse(ctx: &Ctx<'_>, at: usize, form: Form, reverse: bool, store: bool) -> Result<Query, &'static str> {
        let (mut kind, mut reverse, mut limit, mut with_scores) = (form, reverse, None, false);
        let mut i = at + 2;
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"WITHSCORES") if !store => with_scores = true,
                Some(b"LIMIT") if i + 2 < ctx.argc() => {
                    let offset = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?;
                    let count = parse_i64(&ctx.arg(i + 2)).ok_or(NOT_INTEGER)?;
                    limit = Some((offset, count));
                    i += 2;
                }
                Some(b"BYSCORE") if form == Form::Generic && kind == Form::Generic => kind = Form::Score,
                Some(b"BYLEX") if form == Form::Generic && kind == Form::Generic => kind = Form::Lex,
                Some(b"REV") if form == Form::Generic => reverse = true,
                _ => return Err(SYNTAX),
            }
            i += 1;
        }
        let kind = if kind == Form::Generic { Form::Rank } else { kind };
        if limit.is_some() && kind == Form::Rank {
            return Err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
        }
        if with_scores && kind == Form::Lex {
            return Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        }
        let (first, second) = (ctx.arg(at), ctx.arg(at + 1));
        let (low, high) = if reverse && kind != Form::Rank { (second, first) } else { (first, second) };
        let range = match kind {
            Form::Rank => Range::Rank(parse_i64(&low).ok_or(NOT_INTEGER)?, parse_i64(&high).ok_or(NOT_INTEGER)?),
            Form::Score => {
                let (min, min_ex) = parse_score_bound(&low)?;
                let (max, max_ex) = parse_score_bound(&high)?;
                Range::Score(min, min_ex, max, max_ex)
            }
            _ => Range::Lex(parse_lex_bound(&low)?, parse_lex_bound(&high)?),
        };
        Ok(Query { range, reverse, limit, with_scores })
    }
}

/// Members with their scores; Err(()) once an error was replied.
type Scored = Result<Vec<(Vec<u8>, f64)>, ()>;

/// The most members a set algebra command may gather in memory.
const ALGEBRA_MEMBERS_MAX: usize = 10_000_000;

impl KvServer {
    /// Where a walk for ranks `start..=stop` (negative: from the end)
    /// begins, and how many elements it takes; None when the range is
    /// empty. From the front with both ranks at or over zero, the walk ends
    /// at the last element by itself, so the set is not counted (two
    /// descents saved).
    fn rank_walk(
        &self,
        ctx: &Ctx<'_>,
        meta: Meta,
        start: i64,
        stop: i64,
        reverse: bool,
    ) -> Result<Option<(u64, usize)>, StoreError> {
        if start >= 0 && stop >= 0 && !reverse {
            let count = usize::try_from((stop - start).saturating_add(1)).unwrap_or(0);
            return Ok((count > 0).then_some((start as u64, count)));
        }
        let n = self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)? as i64;
        let start = if start < 0 { (start + n).max(0) } else { start };
        let stop = if stop < 0 { stop + n } else { stop.min(n - 1) };
        if start > stop || start >= n {
            return Ok(None);
        }
        let first = if reverse { n - 1 - start } else { start } as u64;
        Ok(Some((first, (stop - start + 1) as usize)))
    }

    /// The members of `range` of the sorted set `meta`, with scores, in
    /// the query's order, after LIMIT.
    fn zrange_members(&self, ctx: &Ctx<'_>, meta: Meta, query: &Query) -> Result<Vec<(Vec<u8>, f64)>, StoreError> {
        let mut out = Vec::new();
        if query.range.is_empty() {
            return Ok(out);
        }
        if let Range::Rank(start, stop) = query.range {
            let Some((first, count)) = self.rank_walk(ctx, meta, start, stop, query.reverse)? else { return Ok(out) };
            let iter = self.store.elements_from_rank(ctx.pool, meta.oid, SPACE_SCORE, first, query.reverse)?;
            for entry in iter.take(count) {
                let (rest, _) = entry?;
                out.push(member_and_score(rest));
            }
            return Ok(out);
        }
        let (space, start, end) = query.range.tree_bounds();
        let (offset, count) = query.limit.unwrap_or((0, -1));
        if offset < 0 {
            return Ok(out);
        }
        let iter = self.store.elements(ctx.pool, meta.oid, space, as_ref(&start), as_ref(&end), query.reverse);
        let take = if count < 0 { usize::MAX } else { count as usize };
        for entry in iter.skip(offset as usize).take(take) {
            let (rest, value) = entry?;
            out.push(if space == SPACE_SCORE {
                member_and_score(rest)
            } else {
                let score = stored_score(&value)?;
                (rest, score)
            });
        }
        Ok(out)
    }

    /// ZRANGE and its forms: reply with the range of the key at 1.
    fn zrange_generic(&mut self, ctx: &mut Ctx<'_>, form: Form, reverse: bool) -> Result<(), StoreError> {
        let query = match Query::parse(ctx, 2, form, reverse, false) {
            Ok(query) => query,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let members = match found {
            Some(meta) => self.zrange_members(ctx, meta, &query)?,
            None => Vec::new(),
        };
        Self::reply_scored(ctx, &members, query.with_scores, true);
        Ok(())
    }

    pub(super) fn cmd_zrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Generic, false)
    }

    pub(super) fn cmd_zrevrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Rank, true)
    }

    pub(super) fn cmd_zrangebyscore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Score, false)
    }

    pub(super) fn cmd_zrevrangebyscore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Score, true)
    }

    pub(super) fn cmd_zrangebylex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Lex, false)
    }

    pub(super) fn cmd_zrevrangebylex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zrange_generic(ctx, Form::Lex, true)
    }

    pub(super) fn cmd_zrangestore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let query = match Query::parse(ctx, 3, Form::Generic, false, true) {
            Ok(query) => query,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let src = ctx.arg(2).into_owned();
        let Ok(found) = self.zset_read(ctx, &src)? else { return Ok(()) };
        let members = match found {
            Some(meta) => self.zrange_members(ctx, meta, &query)?,
            None => Vec::new(),
        };
        let dst = ctx.arg(1).into_owned();
        self.zstore(ctx, &dst, &members)?;
        ctx.int(members.len() as i64);
        Ok(())
    }

    /// Writes `members` as the sorted set at `dst`, replacing what is
    /// there; an empty result deletes it. One store group.
    pub(in crate::apps::kv) fn zstore(
        &mut self,
        ctx: &mut Ctx<'_>,
        dst: &[u8],
        members: &[(Vec<u8>, f64)],
    ) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.delete_ops(ctx.pool, ctx.buffers, ctx.db, dst, ops)?;
            if members.is_empty() {
                return Ok(());
            }
            let meta = server.new_object_ops(ctx, dst, KeyType::ZSet, ops)?;
            for (member, score) in members {
                server.zset_member_ops(ctx, meta.oid, member, None, *score, ops)?;
            }
            Ok(())
        })?;
        self.apply(ctx, &ops)
    }

    /// The range of a ZCOUNT / ZLEXCOUNT / ZREMRANGEBY* command (bounds
    /// at 2 and 3). Err(()) once an error was replied.
    fn parse_range_at_2(ctx: &mut Ctx<'_>, form: Form) -> Result<Range, ()> {
        let parsed = match form {
            Form::Score => parse_score_bound(&ctx.arg(2))
                .and_then(|(min, min_ex)| {
                    parse_score_bound(&ctx.arg(3)).map(|(max, max_ex)| (min, min_ex, max, max_ex))
                })
                .map(|(a, b, c, d)| Range::Score(a, b, c, d)),
            Form::Lex => parse_lex_bound(&ctx.arg(2))
                .and_then(|min| parse_lex_bound(&ctx.arg(3)).map(|max| Range::Lex(min, max))),
            _ => match (parse_i64(&ctx.arg(2)), parse_i64(&ctx.arg(3))) {
                (Some(a), Some(b)) => Ok(Range::Rank(a, b)),
                _ => Err(NOT_INTEGER),
            },
        };
        parsed.map_err(|why| ctx.error(why))
    }

    fn zcount_generic(&mut self, ctx: &mut Ctx<'_>, form: Form) -> Result<(), StoreError> {
        let Ok(range) = Self::parse_range_at_2(ctx, form) else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let count = match found {
            Some(meta) if !range.is_empty() => {
                let (space, start, end) = range.tree_bounds();
                self.store.element_count_in(ctx.pool, meta.oid, space, as_ref(&start), as_ref(&end))?
            }
            _ => 0,
        };
        ctx.int(count as i64);
        Ok(())
    }

    pub(super) fn cmd_zcount(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zcount_generic(ctx, Form::Score)
    }

    pub(super) fn cmd_zlexcount(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zcount_generic(ctx, Form::Lex)
    }

    fn zremrange_generic(&mut self, ctx: &mut Ctx<'_>, form: Form) -> Result<(), StoreError> {
        let Ok(range) = Self::parse_range_at_2(ctx, form) else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.zset_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let query = Query { range, reverse: false, limit: None, with_scores: false };
        let members = self.zrange_members(ctx, meta, &query)?;
        let mut ops = Vec::new();
        for (member, score) in &members {
            Self::zset_remove_ops(meta.oid, member, *score, &mut ops);
        }
        self.apply_removal(ctx, &key, meta, members.len(), ops)?;
        ctx.int(members.len() as i64);
        Ok(())
    }

    pub(super) fn cmd_zremrangebyrank(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zremrange_generic(ctx, Form::Rank)
    }

    pub(super) fn cmd_zremrangebyscore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zremrange_generic(ctx, Form::Score)
    }

    pub(super) fn cmd_zremrangebylex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.zremrange_generic(ctx, Form::Lex)
    }
}

/// A set algebra operation.
#[derive(Clone, Copy, PartialEq)]
enum Algebra {
    Union,
    Inter,
    Diff,
}

/// How scores of one member in several inputs combine.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            // Redis: inf + -inf is 0, not NaN.
            Aggregate::Sum => {
                let sum = a + b;
                if sum.is_nan() {
                    0.0
                } else {
                    sum
                }
            }
            Aggregate::Min => a.min(b),
            Aggregate::Max => a.max(b),
        }
    }
}

/// An algebra command's arguments.
struct AlgebraArgs {
    keys: Vec<Vec<u8>>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT (0: none).
    limit: usize,
}

impl AlgebraArgs {
    /// Parses `numkeys key... [WEIGHTS w...] [AGGREGATE a] [WITHSCORES]`
    /// from argument `at`. Err: the reply.
    fn parse(ctx: &Ctx<'_>, at: usize, op: Algebra, store: bool, name: &str) -> Result<AlgebraArgs, String> {
        let numkeys = parse_i64(&ctx.arg(at)).ok_or(NOT_INTEGER)?;
        if numkeys < 1 {
            return Err(format!("ERR at least 1 input key is needed for '{name}' command"));
        }
        let numkeys = numkeys as usize;
        if at + 1 + numkeys > ctx.argc() {
            return Err(SYNTAX.into());
        }
        let keys: Vec<Vec<u8>> = (at + 1..at + 1 + numkeys).map(|i| ctx.arg(i).into_owned()).collect();
        let mut args =
            AlgebraArgs { keys, weights: vec![1.0; numkeys], aggregate: Aggregate::Sum, with_scores: false, limit: 0 };
        let mut i = at + 1 + numkeys;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            match option.as_slice() {
                b"WEIGHTS" if op != Algebra::Diff && name != "zintercard" && i + numkeys < ctx.argc() => {
                    for w in 0..numkeys {
                        let weight = crate::apps::kv::cmd::zsets::parse_score(&ctx.arg(i + 1 + w));
                        args.weights[w] = weight.ok_or("ERR weight value is not a float")?;
                    }
                    i += numkeys;
                }
                b"AGGREGATE" if op != Algebra::Diff && name != "zintercard" && i + 1 < ctx.argc() => {
                    args.aggregate = match ctx.conn.args.upper(i + 1).as_deref() {
                        Some(b"SUM") => Aggregate::Sum,
                        Some(b"MIN") => Aggregate::Min,
                        Some(b"MAX") => Aggregate::Max,
                        _ => return Err(SYNTAX.into()),
                    };
                    i += 1;
                }
                b"WITHSCORES" if !store && name != "zintercard" => args.with_scores = true,
                b"LIMIT" if name == "zintercard" && i + 1 < ctx.argc() => {
                    match parse_i64(&ctx.arg(i + 1)) {
                        Some(n) if n >= 0 => args.limit = n as usize,
                        _ => return Err("ERR LIMIT can't be negative".into()),
                    }
                    i += 1;
                }
                _ => return Err(SYNTAX.into()),
            }
            i += 1;
        }
        Ok(args)
    }
}

impl KvServer {
    /// The members and scores of the input at `key`: a sorted set, or a
    /// set (every score 1); None if absent; Err(()) after WRONGTYPE.
    fn algebra_input(&self, ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Scored, StoreError> {
        let kind = self.store.key_type(ctx.pool, ctx.db, key, ctx.now)?;
        if !matches!(kind, None | Some(KeyType::ZSet) | Some(KeyType::Set)) {
            ctx.error(WRONGTYPE);
            return Ok(Err(()));
        }
        let Some(meta) = self.store.meta(ctx.pool, ctx.db, key, ctx.now)? else { return Ok(Ok(Vec::new())) };
        let mut out = Vec::new();
        for entry in self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false) {
            let (member, value) = entry?;
            let score = if meta.kind == KeyType::Set { 1.0 } else { stored_score(&value)? };
            out.push((member, score));
            if out.len() > ALGEBRA_MEMBERS_MAX {
                return Err(StoreError::Full(format!("an input has over {ALGEBRA_MEMBERS_MAX} members")));
            }
        }
        Ok(Ok(out))
    }

    /// Computes the operation; the result sorted by score, then member.
    fn algebra(&self, ctx: &mut Ctx<'_>, op: Algebra, args: &AlgebraArgs) -> Result<Scored, StoreError> {
        let mut result: std::collections::BTreeMap<Vec<u8>, f64> = std::collections::BTreeMap::new();
        for (i, key) in args.keys.iter().enumerate() {
            let Ok(input) = self.algebra_input(ctx, key)? else { return Ok(Err(())) };
            let weight = args.weights[i];
            let weighted = input.into_iter().map(|(m, s)| {
                let s = s * weight;
                (m, if s.is_nan() { 0.0 } else { s })
            });
            if i == 0 {
                result.extend(weighted);
                continue;
            }
            match op {
                Algebra::Union => {
                    for (member, score) in weighted {
                        let entry = result.entry(member).or_insert(f64::NAN);
                        *entry = if entry.is_nan() { score } else { args.aggregate.apply(*entry, score) };
                    }
                }
                Algebra::Inter => {
                    let other: std::collections::BTreeMap<Vec<u8>, f64> = weighted.collect();
                    result.retain(|member, _| other.contains_key(member));
                    for (member, score) in result.iter_mut() {
                        *score = args.aggregate.apply(*score, other[member]);
                    }
                }
                Algebra::Diff => {
                    for (member, _) in weighted {
                        result.remove(&member);
                    }
                }
            }
        }
        let mut sorted: Vec<(Vec<u8>, f64)> = result.into_iter().collect();
        sorted.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        Ok(Ok(sorted))
    }

    fn algebra_command(&mut self, ctx: &mut Ctx<'_>, op: Algebra, store: bool, name: &str) -> Result<(), StoreError> {
        let at = if store { 2 } else { 1 };
        let args = match AlgebraArgs::parse(ctx, at, op, store, name) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let Ok(result) = self.algebra(ctx, op, &args)? else { return Ok(()) };
        if store {
            let dst = ctx.arg(1).into_owned();
            self.zstore(ctx, &dst, &result)?;
            ctx.int(result.len() as i64);
        } else {
            Self::reply_scored(ctx, &result, args.with_scores, true);
        }
        Ok(())
    }

    pub(super) fn cmd_zunion(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Union, false, "zunion")
    }

    pub(super) fn cmd_zinter(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Inter, false, "zinter")
    }

    pub(super) fn cmd_zdiff(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Diff, false, "zdiff")
    }

    pub(super) fn cmd_zunionstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Union, true, "zunionstore")
    }

    pub(super) fn cmd_zinterstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Inter, true, "zinterstore")
    }

    pub(super) fn cmd_zdiffstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.algebra_command(ctx, Algebra::Diff, true, "zdiffstore")
    }

    pub(super) fn cmd_zintercard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let args = match AlgebraArgs::parse(ctx, 1, Algebra::Inter, false, "zintercard") {
            Ok(args) => args,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let Ok(result) = self.algebra(ctx, Algebra::Inter, &args)? else { return Ok(()) };
        let count = if args.limit > 0 { result.len().min(args.limit) } else { result.len() };
        ctx.int(count as i64);
        Ok(())
    }
}

const _: () = assert!(MEMBER_SIZE_MAX + 8 + crate::store::keyspace::ELEMENT_PREFIX_LEN <= 512);

/// The member and score of a score-space entry's rest (score key, then
/// member), the member moved down in place: no copy into a new buffer.
pub(in crate::apps::kv) fn member_and_score(mut rest: Vec<u8>) -> (Vec<u8>, f64) {
    let score = score_from_key(rest[..8].try_into().expect("a score key"));
    rest.drain(..8);
    (rest, score)
}
