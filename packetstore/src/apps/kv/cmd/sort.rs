//! SORT and SORT_RO (Redis 7.0's `sort.c`): the elements of a list, set or
//! sorted set, ordered numerically or bytewise (ALPHA), by themselves or by
//! keys named through a pattern (BY), a LIMIT window of them, each replaced
//! by the values of GET patterns, answered or stored as a list (STORE).
//!
//! Invariants: a sort reads everything it needs before it writes; STORE
//! replaces its destination in one store group (the old key to the
//! graveyard, the new list's elements `SEQ_STEP` apart), deletes it when
//! the result is empty, and touches only the destination (WATCH, blocked
//! pops), not the source. Numeric sorting parses as C's strtod does, and
//! refuses what strtod would flag (trailing bytes, NaN, out of range).

use std::cmp::Ordering;

use crate::apps::kv::cmd::lists::SEQ_STEP;
use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::store::db::{value_bytes, StoreError};
use crate::store::keyspace::{element_key, seq_key, KeyType, Meta, SEQ_FIRST, SPACE_MAIN, SPACE_SCORE};

/// This family's commands, as COMMAND describes them.
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("sort", -2, &["write", "denyoom", "movablekeys"], (1, 1, 1), "generic", "Sorts the elements of a list, set or sorted set, optionally storing the result.", KvServer::cmd_sort),
    cmd("sort_ro", -2, &["readonly", "movablekeys"], (1, 1, 1), "generic", "Sorts the elements of a list, set or sorted set (read-only).", KvServer::cmd_sort_ro),
];

const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// The options of one SORT.
struct SortArgs {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    store: Option<Vec<u8>>,
    by: Option<Vec<u8>>,
    /// BY a pattern without `*`: the elements keep their order.
    dontsort: bool,
    gets: Vec<Vec<u8>>,
}

/// Whether a SORT (its arguments) reads keys other than its source (BY
/// or GET patterns with a `*`), and the key it stores into, if any. None:
/// it does not parse (its handler answers why).
pub(in crate::apps::kv) fn sort_reaches(ctx: &Ctx<'_>, readonly: bool) -> Option<(bool, Option<Vec<u8>>)> {
    let args = parse(ctx, readonly).ok()?;
    let by = args.by.as_ref().is_some_and(|by| !args.dontsort && by.contains(&b'*'));
    let gets = args.gets.iter().any(|get| get.contains(&b'*'));
    Some((by || gets, args.store))
}

/// Parses the options after the key. Err: the error reply.
fn parse(ctx: &Ctx<'_>, readonly: bool) -> Result<SortArgs, &'static str> {
    let mut args = SortArgs {
        desc: false,
        alpha: false,
        limit: (0, -1),
        store: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
    };
    let mut j = 2;
    while j < ctx.argc() {
        let left = ctx.argc() - j - 1;
        let word = ctx.arg(j).to_ascii_uppercase();
        match word.as_slice() {
            b"ASC" => args.desc = false,
            b"DESC" => args.desc = true,
            b"ALPHA" => args.alpha = true,
            b"LIMIT" if left >= 2 => {
                let start = parse_i64(&ctx.arg(j + 1)).ok_or(NOT_INTEGER)?;
                let count = parse_i64(&ctx.arg(j + 2)).ok_or(NOT_INTEGER)?;
                args.limit = (start, count);
                j += 2;
            }
            b"STORE" if !readonly && left >= 1 => {
                args.store = Some(ctx.arg(j + 1).into_owned());
                j += 1;
            }
            b"BY" if left >= 1 => {
                let pattern = ctx.arg(j + 1).into_owned();
                args.dontsort = !pattern.contains(&b'*');
                args.by = Some(pattern);
                j += 1;
            }
            b"GET" if left >= 1 => {
                args.gets.push(ctx.arg(j + 1).into_owned());
                j += 1;
            }
            _ => return Err(SYNTAX),
        }
        j += 1;
    }
    Ok(args)
}

/// The window LIMIT selects of `len` elements, Redis's way: (start, end)
/// inclusive, empty when end < start.
fn window(limit: (i64, i64), len: usize) -> (i64, i64) {
    let len = len as i64;
    let start = limit.0.max(0);
    let mut end = if limit.1 < 0 { len - 1 } else { start.saturating_add(limit.1 - 1) };
    let start = if start >= len {
        end = len - 2;
        len - 1
    } else {
        start
    };
    (start, end.min(len - 1))
}

/// A double as C's strtod reads a whole string (leading white space
/// allowed, nothing after); None where SORT refuses it: trailing bytes,
/// NaN, or a value out of range (strtod's ERANGE: overflow, or underflow
/// of a non-zero value to zero).
fn strtod(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if text.is_empty() {
        return Some(0.0);
    }
    let value: f64 = text.parse().ok()?;
    let lower = text.to_ascii_lowercase();
    let names_infinity = lower.contains("inf");
    if value.is_nan() || (value.is_infinite() && !names_infinity) {
        return None;
    }
    let mantissa = lower.split('e').next().unwrap_or("");
    if value == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return None;
    }
    Some(value)
}

/// One element to sort: itself, and what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    /// ALPHA BY: the looked-up bytes (None: missing, sorts first).
    by: Option<Vec<u8>>,
}

impl KvServer {
    fn cmd_sort(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.sort_generic(ctx, false)
    }

    fn cmd_sort_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.sort_generic(ctx, true)
    }

    fn sort_generic(&mut self, ctx: &mut Ctx<'_>, readonly: bool) -> Result<(), StoreError> {
        let mut args = match parse(ctx, readonly) {
            Ok(args) => args,
            Err(error) => {
                ctx.error(error);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Some((kind, meta)) = self.sort_source(ctx, &key)? else {
            ctx.error(WRONGTYPE);
            return Ok(());
        };
        // A set has no order of its own: unsorted output that is stored or
        // seen by a script is sorted bytewise, so that it is deterministic.
        if args.dontsort && kind == KeyType::Set && (args.store.is_some() || self.scripting.running) {
            (args.dontsort, args.alpha, args.by) = (false, true, None);
        }
        let len = match meta {
            Some(meta) => self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN)? as usize,
            None => 0,
        };
        let (start, end) = window(args.limit, len);
        let items = if args.dontsort && kind != KeyType::Set {
            // Kept in order: only the window is read.
            let count = if end >= start { (end - start + 1) as usize } else { 0 };
            self.sort_load_range(ctx, kind, meta, start.max(0) as u64, count, args.desc)?
        } else {
            let mut items = self.sort_load_all(ctx, kind, meta)?;
            if !args.dontsort {
                if !self.sort_weigh(ctx, &args, &mut items)? {
                    ctx.error(NOT_DOUBLE);
                    return Ok(());
                }
                sort_items(&mut items, &args);
            }
            if end >= start {
                items.drain(..start as usize);
                items.truncate((end - start + 1) as usize);
            } else {
                items.clear();
            }
            items
        };
        self.stats.reads += 1;
        match args.store.take() {
            Some(dst) => self.sort_store(ctx, &args, &dst, &items),
            None => self.sort_reply(ctx, &args, &items),
        }
    }

    /// The source's type and metadata (None: absent, an empty list);
    /// None: a type SORT refuses.
    fn sort_source(&self, ctx: &Ctx<'_>, key: &[u8]) -> Result<Option<(KeyType, Option<Meta>)>, StoreError> {
        match self.store.key_type(ctx.pool, ctx.db, key, ctx.now)? {
            None => Ok(Some((KeyType::List, None))),
            Some(kind @ (KeyType::List | KeyType::Set | KeyType::ZSet)) => {
                Ok(Some((kind, self.store.meta(ctx.pool, ctx.db, key, ctx.now)?)))
            }
            Some(_) => Ok(None),
        }
    }

    /// Every element, in the source's order (a sorted set's by score).
    fn sort_load_all(&self, ctx: &Ctx<'_>, kind: KeyType, meta: Option<Meta>) -> Result<Vec<Item>, StoreError> {
        self.sort_load_range(ctx, kind, meta, 0, usize::MAX, false)
    }

    /// `count` elements from rank `start` in the source's order (from the
    /// end when `desc`).
    fn sort_load_range(
        &self,
        ctx: &Ctx<'_>,
        kind: KeyType,
        meta: Option<Meta>,
        start: u64,
        count: usize,
        desc: bool,
    ) -> Result<Vec<Item>, StoreError> {
        let Some(meta) = meta else { return Ok(Vec::new()) };
        let space = if kind == KeyType::ZSet { SPACE_SCORE } else { SPACE_MAIN };
        let mut items = Vec::new();
        let entries = if desc {
            let len = self.store.element_count(ctx.pool, meta.oid, space)?;
            if start >= len {
                return Ok(items);
            }
            self.store.elements_from_rank(ctx.pool, meta.oid, space, len - 1 - start, true)?
        } else {
            self.store.elements_from_rank(ctx.pool, meta.oid, space, start, false)?
        };
        for entry in entries.take(count) {
            let (rest, value) = entry?;
            let element = match kind {
                KeyType::List => value_bytes(ctx.pool, &value)?.into_owned(),
                KeyType::Set => rest,
                // The score key's 8 bytes, then the member.
                _ => rest[8..].to_vec(),
            };
            items.push(Item { element, score: 0.0, by: None });
        }
        Ok(items)
    }

    /// Fills each item's sort key; false if a numeric one does not parse.
    fn sort_weigh(&mut self, ctx: &mut Ctx<'_>, args: &SortArgs, items: &mut [Item]) -> Result<bool, StoreError> {
        let mut parsed = true;
        for item in items.iter_mut() {
            let by = match &args.by {
                Some(pattern) => match self.sort_lookup(ctx, pattern, &item.element)? {
                    Some(bytes) => bytes,
                    None => continue,
                },
                None if args.alpha => continue,
                None => item.element.clone(),
            };
            if args.alpha {
                item.by = Some(by);
            } else {
                match strtod(&by) {
                    Some(score) => item.score = score,
                    None => parsed = false,
                }
            }
        }
        Ok(parsed)
    }

    /// The value a BY or GET pattern names for `element` (Redis's
    /// lookupKeyByPattern): `#` is the element itself; otherwise the first
    /// `*` is replaced by the element and the key read as a string, or,
    /// with `->field` after the `*`, as a hash's field. None: no `*`, no
    /// such key or field, or a key of another type.
    fn sort_lookup(
        &mut self,
        ctx: &mut Ctx<'_>,
        pattern: &[u8],
        element: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        match self.sort_lookup_value(ctx, pattern, element)? {
            Some(value) => Ok(Some(value_bytes(ctx.pool, &value)?.into_owned())),
            None => Ok(None),
        }
    }

    fn sort_lookup_value(
        &mut self,
        ctx: &mut Ctx<'_>,
        pattern: &[u8],
        element: &[u8],
    ) -> Result<Option<Value>, StoreError> {
        if pattern == b"#" {
            return Ok(Some(Value::Inline(element.to_vec())));
        }
        let Some(star) = pattern.iter().position(|&b| b == b'*') else { return Ok(None) };
        let after = &pattern[star + 1..];
        let arrow = after.windows(2).position(|w| w == b"->").filter(|&at| at + 2 < after.len());
        let (postfix, field) = match arrow {
            Some(at) => (&after[..at], Some(&after[at + 2..])),
            None => (after, None),
        };
        let key = [&pattern[..star], element, postfix].concat();
        if key_ok(&key).is_err() {
            return Ok(None);
        }
        if let Some(shard) = self.elsewhere(&key) {
            // Another shard's key, read there (parked for this SORT).
            return Ok(self.parked_lookup(ctx, shard, &key, field).map(Value::Inline));
        }
        match field {
            None => Ok(self.string_of(ctx, &key)?.ok().flatten()),
            Some(field) => match self.store.meta(ctx.pool, ctx.db, &key, ctx.now)? {
                Some(meta) if meta.kind == KeyType::Hash => self.store.element(ctx.pool, meta.oid, SPACE_MAIN, field),
                _ => Ok(None),
            },
        }
    }

    fn sort_reply(&mut self, ctx: &mut Ctx<'_>, args: &SortArgs, items: &[Item]) -> Result<(), StoreError> {
        if args.gets.is_empty() {
            ctx.array(items.len());
            for item in items {
                ctx.bulk(&item.element);
            }
            return Ok(());
        }
        ctx.array(items.len() * args.gets.len());
        for item in items {
            for pattern in &args.gets {
                match self.sort_lookup_value(ctx, pattern, &item.element)? {
                    Some(value) => self.reply_value(ctx, &value)?,
                    None => ctx.null(),
                }
            }
        }
        Ok(())
    }

    /// STORE: `dst` becomes a list of the output (missing GET values as
    /// empty strings), or is deleted if there is none; answers its length.
    fn sort_store(&mut self, ctx: &mut Ctx<'_>, args: &SortArgs, dst: &[u8], items: &[Item]) -> Result<(), StoreError> {
        if let Err(error) = key_ok(dst) {
            ctx.error(&error);
            return Ok(());
        }
        let mut outputs: Vec<Option<Value>> = Vec::new();
        for item in items {
            if args.gets.is_empty() {
                outputs.push(Some(Value::Inline(item.element.clone())));
            }
            for pattern in &args.gets {
                outputs.push(self.sort_lookup_value(ctx, pattern, &item.element)?);
            }
        }
        if let Some(shard) = self.elsewhere(dst) {
            // Another shard's destination, written there (parked for it).
            let mut list = Vec::with_capacity(outputs.len());
            for output in &outputs {
                list.push(match output {
                    Some(value) => value_bytes(ctx.pool, value)?.into_owned(),
                    None => Vec::new(),
                });
            }
            let reply = self.parked_store(ctx, shard, dst, list);
            ctx.out.bytes().extend_from_slice(&reply);
            self.modified = false;
            return Ok(());
        }
        let mut ops = Vec::new();
        let existed = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let existed = server.delete_ops(ctx.pool, ctx.buffers, ctx.db, dst, ops)?;
            if outputs.is_empty() {
                return Ok(existed);
            }
            let meta = server.new_object_ops(ctx, dst, KeyType::List, ops)?;
            for (i, output) in outputs.iter().enumerate() {
                let seq = SEQ_FIRST + i as u64 * SEQ_STEP;
                let tree_key = element_key(meta.oid, SPACE_MAIN, &seq_key(seq));
                ops.push(match output {
                    Some(value) => server.value_op(ctx, tree_key, value)?,
                    None => server.put_bytes(ctx, tree_key, &[])?,
                });
            }
            Ok(existed)
        })?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        // Only the destination was written: the source stays untouched for
        // WATCH (the dispatcher would touch the key at argument 1).
        self.modified = false;
        if !outputs.is_empty() || existed {
            self.touch_written(ctx, dst);
        }
        if !outputs.is_empty() {
            self.notify(ctx, notify::LIST, "sortstore", dst);
        } else if existed {
            self.notify(ctx, notify::GENERIC, "del", dst);
        }
        ctx.int(outputs.len() as i64);
        Ok(())
    }
}

/// Orders items as Redis's sortCompare: numbers (ties bytewise by the
/// element), or bytes (of the BY values, missing ones first; or of the
/// elements); reversed for DESC.
fn sort_items(items: &mut [Item], args: &SortArgs) {
    let by_pattern = args.by.is_some();
    items.sort_by(|a, b| {
        let order = if !args.alpha {
            a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.element.cmp(&b.element))
        } else if by_pattern {
            a.by.cmp(&b.by)
        } else {
            a.element.cmp(&b.element)
        };
        if args.desc {
            order.reverse()
        } else {
            order
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_windows_follow_redis() {
        assert_eq!(window((0, -1), 5), (0, 4));
        assert_eq!(window((1, 2), 5), (1, 2));
        assert_eq!(window((-3, 2), 5), (0, 1));
        assert_eq!(window((7, 2), 5), (4, 3), "past the end: empty");
        assert_eq!(window((0, 0), 5), (0, -1), "count 0: empty");
        assert_eq!(window((0, -1), 0), (-1, -2));
        assert_eq!(window((2, i64::MAX), 5), (2, 4));
    }

    #[test]
    fn scores_parse_as_strtod() {
        assert_eq!(strtod(b""), Some(0.0));
        assert_eq!(strtod(b" 1.5"), Some(1.5));
        assert_eq!(strtod(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(strtod(b"1e500"), None, "overflow is ERANGE");
        assert_eq!(strtod(b"1e-500"), None, "underflow is ERANGE");
        assert_eq!(strtod(b"0e-500"), Some(0.0));
        assert_eq!(strtod(b"nan"), None);
        assert_eq!(strtod(b"1.5 "), None, "trailing bytes");
        assert_eq!(strtod(b"abc"), None);
    }
}
