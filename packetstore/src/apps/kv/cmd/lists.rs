//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
//! LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH, LMPOP
//! (Redis 7.0's `t_list.c`); BLPOP and the other blocking forms are in
//! `blocking.rs`.
//!
//! A list is an object (schema 2): `e` oid `0x01` seq (u64 BE) -> the
//! element, kept in the buffers it was received into when large. A push
//! takes the seq `SEQ_STEP` beyond its end (the first push takes 2^63),
//! so LINSERT almost always finds a free seq between two neighbours.
//! Positions are ranks in the tree: LLEN, LINDEX, LSET and the start of
//! LRANGE are O(log n), and the holes LREM or LTRIM leave cost nothing. A
//! push is one record per element; LMOVE moves a value without copying
//! its bytes.
//!
//! Invariants: a list's seqs increase from head to tail; a list with no
//! element left is deleted in the same store group as its last removal.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, parse_end, parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::store::db::{value_bytes, value_len, Op, StoreError};
use crate::store::keyspace::{element_key, seq_key, KeyType, Meta, SEQ_FIRST, SPACE_MAIN};

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("lpush", -3, &["write", "denyoom", "fast"], (1, 1, 1), "list", "Prepends elements to a list.", KvServer::cmd_lpush),
    cmd("rpush", -3, &["write", "denyoom", "fast"], (1, 1, 1), "list", "Appends elements to a list.", KvServer::cmd_rpush),
    cmd("lpushx", -3, &["write", "denyoom", "fast"], (1, 1, 1), "list", "Prepends elements to an existing list.", KvServer::cmd_lpushx),
    cmd("rpushx", -3, &["write", "denyoom", "fast"], (1, 1, 1), "list", "Appends elements to an existing list.", KvServer::cmd_rpushx),
    cmd("lpop", -2, &["write", "fast"], (1, 1, 1), "list", "Removes and returns the first elements of a list.", KvServer::cmd_lpop),
    cmd("rpop", -2, &["write", "fast"], (1, 1, 1), "list", "Removes and returns the last elements of a list.", KvServer::cmd_rpop),
    cmd("llen", 2, &["readonly", "fast"], (1, 1, 1), "list", "Returns the length of a list.", KvServer::cmd_llen),
    cmd("lrange", 4, &["readonly"], (1, 1, 1), "list", "Returns a range of elements.", KvServer::cmd_lrange),
    cmd("lindex", 3, &["readonly"], (1, 1, 1), "list", "Returns the element at an index.", KvServer::cmd_lindex),
    cmd("lset", 4, &["write", "denyoom"], (1, 1, 1), "list", "Sets the element at an index.", KvServer::cmd_lset),
    cmd("linsert", 5, &["write", "denyoom"], (1, 1, 1), "list", "Inserts an element before or after another.", KvServer::cmd_linsert),
    cmd("lrem", 4, &["write"], (1, 1, 1), "list", "Removes elements equal to a value.", KvServer::cmd_lrem),
    cmd("ltrim", 4, &["write"], (1, 1, 1), "list", "Keeps only a range of elements.", KvServer::cmd_ltrim),
    cmd("lpos", -3, &["readonly"], (1, 1, 1), "list", "Returns the positions of elements equal to a value.", KvServer::cmd_lpos),
    cmd("lmove", 5, &["write", "denyoom"], (1, 2, 1), "list", "Moves an element from one list to another.", KvServer::cmd_lmove),
    cmd("rpoplpush", 3, &["write", "denyoom"], (1, 2, 1), "list", "Moves the last element of a list to the head of another.", KvServer::cmd_rpoplpush),
    cmd("lmpop", -4, &["write"], (0, 0, 0), "list", "Pops elements from the first non-empty list.", KvServer::cmd_lmpop),
];

/// The distance between the seqs of two elements pushed one after the
/// other: LINSERT takes the middle of a gap, so only after 16 inserts at
/// one place must it renumber. 2^47 pushes fit at each end.
pub(in crate::apps::kv) const SEQ_STEP: u64 = 1 << 16;

const OUT_OF_RANGE: &str = "ERR index out of range";

const SEQS_EXHAUSTED: &str = "list has no free position left at this end";

/// An element's seq, from its key's rest.
fn seq_of(rest: &[u8]) -> Result<u64, StoreError> {
    let bytes: [u8; 8] = rest.try_into().map_err(|_| StoreError::Corrupt("a list seq is not 8 bytes".into()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// The seq a push at one end takes, after the end's current seq.
fn seq_beyond(end: Option<u64>, right: bool) -> Result<u64, StoreError> {
    let next = match end {
        None => Some(SEQ_FIRST),
        Some(seq) if right => seq.checked_add(SEQ_STEP),
        Some(seq) => seq.checked_sub(SEQ_STEP).filter(|&s| s > 0),
    };
    next.ok_or_else(|| StoreError::Full(SEQS_EXHAUSTED.into()))
}

/// A position argument resolved against a length: Redis's negative
/// indexes count from the end. None: before the head.
fn resolve(index: i64, len: u64) -> Option<u64> {
    let len = len as i64;
    let at = if index < 0 { len + index } else { index };
    (at >= 0).then_some(at as u64)
}

/// A value taken out of a list by a pop or a move, with its own buffer
/// references while large, so that its reply may be queued after the
/// write that removed it.
pub(in crate::apps::kv) enum Taken {
    Bytes(Vec<u8>),
    Pool { extents: Vec<Extent>, len: u64 },
}

impl Taken {
    /// Gives back the references of values that will not be replied.
    fn release(buffers: &mut Buffers, taken: &[Taken]) {
        for item in taken {
            if let Taken::Pool { extents, .. } = item {
                buffers.release_extents(extents).expect("our references");
            }
        }
    }
}

impl KvServer {
    /// The live list at `key`, None if absent; replies WRONGTYPE and
    /// returns Err(()) if it holds another type.
    pub(in crate::apps::kv) fn list_read(
        &self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
    ) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let found = self.collection(ctx, key, KeyType::List)?;
        if found.is_err() {
            ctx.error(WRONGTYPE);
        }
        Ok(found)
    }

    fn list_len(&self, ctx: &Ctx<'_>, meta: Option<Meta>) -> Result<u64, StoreError> {
        match meta {
            Some(meta) => self.store.element_count(ctx.pool, meta.oid, SPACE_MAIN),
            None => Ok(0),
        }
    }

    /// The seq of a list's head (or tail, `right`); None: empty.
    fn list_end(&self, ctx: &Ctx<'_>, oid: u64, right: bool) -> Result<Option<u64>, StoreError> {
        let unbounded = std::ops::Bound::Unbounded;
        match self.store.elements(ctx.pool, oid, SPACE_MAIN, unbounded, unbounded, right).next() {
            Some(entry) => Ok(Some(seq_of(&entry?.0)?)),
            None => Ok(None),
        }
    }

    /// Keeps a stored value for a reply after the write removing it.
    fn take_value(&self, ctx: &mut Ctx<'_>, value: &Value) -> Result<Taken, StoreError> {
        let len = value_len(value);
        if matches!(value, Value::Inline(_)) || len < self.config.zero_copy_min {
            return Ok(Taken::Bytes(value_bytes(ctx.pool, value)?.into_owned()));
        }
        let extents = value_extents(ctx.pool, value)?;
        self.retain_all(ctx, &extents)?;
        Ok(Taken::Pool { extents, len })
    }

    /// Replies with a taken value (giving back its references).
    pub(in crate::apps::kv) fn reply_taken(&mut self, ctx: &mut Ctx<'_>, taken: Taken) {
        match taken {
            Taken::Bytes(bytes) => {
                ctx.bulk(&bytes);
                self.stats.bytes_sent_copied += bytes.len() as u64;
            }
            Taken::Pool { extents, len } => {
                let enc = ctx.enc();
                enc.bulk_header(ctx.out.bytes(), len);
                self.push_extents(ctx, &extents);
                ctx.out.push(b"\r\n");
                ctx.buffers.release_extents(&extents).expect("our references");
                self.stats.bytes_sent_zero_copy += len;
            }
        }
    }

    /// Applies `ops`; on a failure, gives back the taken values'
    /// references.
    fn apply_taking(
        &mut self,
        ctx: &mut Ctx<'_>,
        taken: &[Taken],
        apply: impl FnOnce(&mut Self, &mut Ctx<'_>) -> Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        let result = apply(self, ctx);
        if result.is_err() {
            Taken::release(ctx.buffers, taken);
        }
        result
    }

    /// LPUSH, RPUSH, LPUSHX (`existing`), RPUSHX: the new length.
    fn push_generic(&mut self, ctx: &mut Ctx<'_>, right: bool, existing: bool) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        if existing {
            let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
            if found.is_none() {
                ctx.int(0);
                return Ok(());
            }
        }
        let mut ops = Vec::new();
        let len = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let Ok((meta, created)) = server.collection_for_write(ctx, &key, KeyType::List, ops)? else {
                return Ok(None);
            };
            let before = if created { 0 } else { server.list_len(ctx, Some(meta))? };
            let mut end = if created { None } else { server.list_end(ctx, meta.oid, right)? };
            for i in 2..ctx.argc() {
                let seq = seq_beyond(end, right)?;
                ops.push(server.put_element_arg(ctx, meta.oid, SPACE_MAIN, &seq_key(seq), i)?);
                end = Some(seq);
            }
            Ok(Some(before + (ctx.argc() - 2) as u64))
        })?;
        let Some(len) = len else {
            ctx.error(WRONGTYPE);
            return Ok(());
        };
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::LIST, if right { "rpush" } else { "lpush" }, &key);
        ctx.int(len as i64);
        Ok(())
    }

    fn cmd_lpush(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.push_generic(ctx, false, false)
    }

    fn cmd_rpush(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.push_generic(ctx, true, false)
    }

    fn cmd_lpushx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.push_generic(ctx, false, true)
    }

    fn cmd_rpushx(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.push_generic(ctx, true, true)
    }

    /// Pops up to `count` elements from one end of the list `meta` at
    /// `key` (deleting it if emptied) and sends the events. Returns the
    /// values, head or tail first as popped.
    pub(in crate::apps::kv) fn list_pop(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        count: usize,
        right: bool,
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken = Vec::new();
        let mut ops = Vec::new();
        let unbounded = std::ops::Bound::Unbounded;
        let found: Vec<_> = self
            .store
            .elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, right)
            .take(count)
            .collect::<Result<_, _>>()?;
        for (rest, value) in &found {
            match self.take_value(ctx, value) {
                Ok(item) => taken.push(item),
                Err(error) => {
                    Taken::release(ctx.buffers, &taken);
                    return Err(error);
                }
            }
            ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, rest) });
        }
        let emptied =
            self.apply_taking(ctx, &taken, |server, ctx| server.apply_removal(ctx, key, meta, found.len(), ops))?;
        self.notify(ctx, notify::LIST, if right { "rpop" } else { "lpop" }, key);
        self.notify_emptied(ctx, emptied, key);
        Ok(taken)
    }

    /// The `del` event of a collection whose last element went.
    pub(in crate::apps::kv) fn notify_emptied(&mut self, ctx: &mut Ctx<'_>, emptied: bool, key: &[u8]) {
        if emptied {
            self.notify(ctx, notify::GENERIC, "del", key);
        }
    }

    fn cmd_lpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.pop_generic(ctx, false)
    }

    fn cmd_rpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.pop_generic(ctx, true)
    }

    /// LPOP and RPOP key [count]: one element, or an array of up to count.
    fn pop_generic(&mut self, ctx: &mut Ctx<'_>, right: bool) -> Result<(), StoreError> {
        if ctx.argc() > 3 {
            ctx.error(&format!("ERR wrong number of arguments for '{}' command", if right { "rpop" } else { "lpop" }));
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
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            match count {
                Some(_) => ctx.enc().null_array(ctx.out.bytes()),
                None => ctx.null(),
            }
            return Ok(());
        };
        if count == Some(0) {
            ctx.array(0);
            return Ok(());
        }
        let taken = self.list_pop(ctx, &key, meta, count.unwrap_or(1), right)?;
        if count.is_some() {
            ctx.array(taken.len());
        }
        for item in taken {
            self.reply_taken(ctx, item);
        }
        Ok(())
    }

    fn cmd_llen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let len = self.list_len(ctx, found)?;
        ctx.int(len as i64);
        Ok(())
    }

    /// Integer arguments `from..` (Redis's `getLongFromObjectOrReply`);
    /// None once the error was replied.
    fn int_args<const N: usize>(ctx: &mut Ctx<'_>, from: usize) -> Option<[i64; N]> {
        let mut out = [0i64; N];
        for (n, slot) in out.iter_mut().enumerate() {
            match parse_i64(&ctx.arg(from + n)) {
                Some(value) => *slot = value,
                None => {
                    ctx.error(NOT_INTEGER);
                    return None;
                }
            }
        }
        Some(out)
    }

    /// The ranks `start..=end` of a Redis range over `len` elements (None:
    /// empty), as `addListRangeReply` clamps them.
    fn clamp_range(start: i64, end: i64, len: u64) -> Option<(u64, u64)> {
        let start = resolve(start, len).unwrap_or(0);
        let end = resolve(end, len)?;
        if start > end || start >= len {
            return None;
        }
        Some((start, end.min(len - 1)))
    }

    fn cmd_lrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some([start, end]) = Self::int_args::<2>(ctx, 2) else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        self.stats.reads += 1;
        let len = self.list_len(ctx, found)?;
        let (Some(meta), Some((first, last))) = (found, Self::clamp_range(start, end, len)) else {
            ctx.array(0);
            return Ok(());
        };
        let values: Vec<Value> = self
            .store
            .elements_from_rank(ctx.pool, meta.oid, SPACE_MAIN, first, false)?
            .take((last - first + 1) as usize)
            .map(|entry| entry.map(|(_, value)| value))
            .collect::<Result<_, _>>()?;
        ctx.array(values.len());
        for value in &values {
            self.reply_value(ctx, value)?;
        }
        Ok(())
    }

    /// The element at a Redis index (negative from the tail): its key's
    /// rest and value.
    fn list_at(&self, ctx: &Ctx<'_>, meta: Meta, index: i64) -> Result<Option<(Vec<u8>, Value)>, StoreError> {
        let len = self.list_len(ctx, Some(meta))?;
        match resolve(index, len).filter(|&at| at < len) {
            Some(at) => self.store.element_nth(ctx.pool, meta.oid, SPACE_MAIN, at),
            None => Ok(None),
        }
    }

    fn cmd_lindex(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.null();
            return Ok(());
        };
        let Some([index]) = Self::int_args::<1>(ctx, 2) else { return Ok(()) };
        self.stats.reads += 1;
        match self.list_at(ctx, meta, index)? {
            Some((_, value)) => self.reply_value(ctx, &value)?,
            None => ctx.null(),
        }
        Ok(())
    }

    fn cmd_lset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.error("ERR no such key");
            return Ok(());
        };
        let Some([index]) = Self::int_args::<1>(ctx, 2) else { return Ok(()) };
        let Some((rest, _)) = self.list_at(ctx, meta, index)? else {
            ctx.error(OUT_OF_RANGE);
            return Ok(());
        };
        let put = self.put_element_arg(ctx, meta.oid, SPACE_MAIN, &rest, 3)?;
        self.apply(ctx, &[put])?;
        self.notify(ctx, notify::LIST, "lset", &key);
        ctx.ok();
        Ok(())
    }

    /// Whether a stored element equals `wanted`.
    fn element_is(&self, ctx: &Ctx<'_>, value: &Value, wanted: &[u8]) -> Result<bool, StoreError> {
        Ok(value_len(value) == wanted.len() as u64 && value_bytes(ctx.pool, value)?.as_ref() == wanted)
    }

    /// The rank of the first element equal to `wanted`, from the head.
    fn find_element(&self, ctx: &Ctx<'_>, oid: u64, wanted: &[u8]) -> Result<Option<u64>, StoreError> {
        let unbounded = std::ops::Bound::Unbounded;
        for (rank, entry) in self.store.elements(ctx.pool, oid, SPACE_MAIN, unbounded, unbounded, false).enumerate() {
            let (_, value) = entry?;
            if self.element_is(ctx, &value, wanted)? {
                return Ok(Some(rank as u64));
            }
        }
        Ok(None)
    }

    /// LINSERT key BEFORE|AFTER pivot element: the new length, -1 if the
    /// pivot is not there, 0 if the key is not.
    fn cmd_linsert(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let after = match ctx.conn.args.upper(2).as_deref() {
            Some(b"AFTER") => true,
            Some(b"BEFORE") => false,
            _ => {
                ctx.error(SYNTAX);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let pivot = ctx.arg(3).into_owned();
        let Some(pivot_rank) = self.find_element(ctx, meta.oid, &pivot)? else {
            ctx.int(-1);
            return Ok(());
        };
        let len = self.list_len(ctx, Some(meta))?;
        // The new element goes between ranks `left` and `left + 1`.
        let left = if after { Some(pivot_rank) } else { pivot_rank.checked_sub(1) };
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let seq = server.free_seq(ctx, meta.oid, left, len, ops)?;
            ops.push(server.put_element_arg(ctx, meta.oid, SPACE_MAIN, &seq_key(seq), 4)?);
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::LIST, "linsert", &key);
        ctx.int(len as i64 + 1);
        Ok(())
    }

    /// A free seq right after rank `left` (None: before the head) of a list
    /// of `len` elements; when its neighbours' seqs are adjacent, pushes the
    /// ops renumbering the shorter side to make room.
    fn free_seq(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        left: Option<u64>,
        len: u64,
        ops: &mut Vec<Op>,
    ) -> Result<u64, StoreError> {
        let seq_at = |server: &Self, rank: u64| -> Result<u64, StoreError> {
            let (rest, _) =
                server.store.element_nth(ctx.pool, oid, SPACE_MAIN, rank)?.expect("a rank below the length");
            seq_of(&rest)
        };
        let right = left.map_or(0, |l| l + 1);
        let (Some(left), true) = (left, right < len) else {
            // At an end: as a push.
            let end = if right < len { Some(seq_at(self, right)?) } else { Some(seq_at(self, len - 1)?) };
            return seq_beyond(end, right >= len);
        };
        let (low, high) = (seq_at(self, left)?, seq_at(self, right)?);
        if high - low >= 2 {
            return Ok(low + (high - low) / 2);
        }
        let before = left + 1;
        if before <= len - before {
            self.renumber(ctx, oid, left, false, high, ops)
        } else {
            self.renumber(ctx, oid, right, true, low, ops)
        }
    }

    /// Renumbers the elements from rank `from` to the head (or, `tail`,
    /// to the tail) `SEQ_STEP` apart, starting two steps from `anchor` (the
    /// seq of the neighbour that stays), and returns the seq one step from
    /// the anchor, now free. Deletes come before puts, so that an old seq
    /// reused by another element is never overwritten.
    fn renumber(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        from: u64,
        tail: bool,
        anchor: u64,
        ops: &mut Vec<Op>,
    ) -> Result<u64, StoreError> {
        let moved: Vec<(Vec<u8>, Value)> =
            self.store.elements_from_rank(ctx.pool, oid, SPACE_MAIN, from, !tail)?.collect::<Result<_, _>>()?;
        let step_from_anchor = |steps: u64| -> Result<u64, StoreError> {
            let distance = steps.checked_mul(SEQ_STEP);
            let seq = distance.and_then(|d| if tail { anchor.checked_add(d) } else { anchor.checked_sub(d) });
            seq.filter(|&s| s > 0).ok_or_else(|| StoreError::Full(SEQS_EXHAUSTED.into()))
        };
        step_from_anchor(moved.len() as u64 + 1)?;
        for (rest, _) in &moved {
            ops.push(Op::Del { key: element_key(oid, SPACE_MAIN, rest) });
        }
        for (n, (_, value)) in moved.iter().enumerate() {
            let seq = step_from_anchor(n as u64 + 2)?;
            ops.push(self.value_op(ctx, element_key(oid, SPACE_MAIN, &seq_key(seq)), value)?);
        }
        step_from_anchor(1)
    }

    /// LREM key count element: removes up to |count| equal elements from
    /// the head (count > 0), the tail (count < 0), or all (0).
    fn cmd_lrem(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some([count]) = Self::int_args::<1>(ctx, 2) else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let wanted = ctx.arg(3).into_owned();
        let limit = if count == 0 { usize::MAX } else { count.unsigned_abs().min(usize::MAX as u64) as usize };
        let unbounded = std::ops::Bound::Unbounded;
        let mut ops = Vec::new();
        for entry in self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, count < 0) {
            let (rest, value) = entry?;
            if self.element_is(ctx, &value, &wanted)? {
                ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, &rest) });
                if ops.len() == limit {
                    break;
                }
            }
        }
        let removed = ops.len();
        let emptied = self.apply_removal(ctx, &key, meta, removed, ops)?;
        if removed > 0 {
            self.notify(ctx, notify::LIST, "lrem", &key);
        }
        self.notify_emptied(ctx, emptied, &key);
        ctx.int(removed as i64);
        Ok(())
    }

    /// LTRIM key start stop: keeps ranks start..=stop.
    fn cmd_ltrim(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some([start, end]) = Self::int_args::<2>(ctx, 2) else { return Ok(()) };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.ok();
            return Ok(());
        };
        let len = self.list_len(ctx, Some(meta))?;
        let (head, tail) = match Self::clamp_range(start, end, len) {
            Some((first, last)) => (first, len - 1 - last),
            None => (len, 0),
        };
        let mut ops = Vec::new();
        for (count, from_tail) in [(head, false), (tail, true)] {
            let unbounded = std::ops::Bound::Unbounded;
            for entry in self
                .store
                .elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, from_tail)
                .take(count as usize)
            {
                ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, &entry?.0) });
            }
        }
        let removed = ops.len();
        let emptied = self.apply_removal(ctx, &key, meta, removed, ops)?;
        self.notify(ctx, notify::LIST, "ltrim", &key);
        self.notify_emptied(ctx, emptied, &key);
        ctx.ok();
        Ok(())
    }

    /// LPOS key element [RANK r] [COUNT n] [MAXLEN len].
    fn cmd_lpos(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let options = match LposOptions::parse(ctx) {
            Ok(options) => options,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.list_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            match options.count {
                Some(_) => ctx.array(0),
                None => ctx.null(),
            }
            return Ok(());
        };
        self.stats.reads += 1;
        let wanted = ctx.arg(2).into_owned();
        let len = self.list_len(ctx, Some(meta))?;
        let reverse = options.rank < 0;
        let skip = options.rank.unsigned_abs() - 1;
        let want = match options.count {
            Some(0) => u64::MAX,
            Some(n) => n,
            None => 1,
        };
        let scan = if options.maxlen == 0 { len } else { options.maxlen.min(len) };
        let unbounded = std::ops::Bound::Unbounded;
        let (mut matches, mut found_at) = (0u64, Vec::new());
        let elements = self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, reverse);
        for (index, entry) in elements.take(scan as usize).enumerate() {
            let (_, value) = entry?;
            if self.element_is(ctx, &value, &wanted)? {
                matches += 1;
                if matches > skip {
                    found_at.push(if reverse { len - 1 - index as u64 } else { index as u64 });
                    if found_at.len() as u64 >= want {
                        break;
                    }
                }
            }
        }
        match (options.count, found_at.first()) {
            (Some(_), _) => {
                ctx.array(found_at.len());
                found_at.iter().for_each(|&at| ctx.int(at as i64));
            }
            (None, Some(&at)) => ctx.int(at as i64),
            (None, None) => ctx.null(),
        }
        Ok(())
    }

    /// LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
    fn cmd_lmove(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ends = parse_end(ctx.conn.args.upper(3)).and_then(|from| Ok((from, parse_end(ctx.conn.args.upper(4))?)));
        match ends {
            Ok((from_right, to_right)) => self.lmove_or_null(ctx, from_right, to_right),
            Err(why) => {
                ctx.error(why);
                Ok(())
            }
        }
    }

    fn cmd_rpoplpush(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.lmove_or_null(ctx, true, false)
    }

    /// LMOVE and RPOPLPUSH: the element moved, or null.
    fn lmove_or_null(&mut self, ctx: &mut Ctx<'_>, from_right: bool, to_right: bool) -> Result<(), StoreError> {
        if !self.lmove_generic(ctx, from_right, to_right)? {
            ctx.null();
        }
        Ok(())
    }

    /// Moves an element from the list at argument 1 to the list at
    /// argument 2 in one store group, replying with it. Returns false,
    /// without a reply, if the source is empty.
    pub(in crate::apps::kv) fn lmove_generic(
        &mut self,
        ctx: &mut Ctx<'_>,
        from_right: bool,
        to_right: bool,
    ) -> Result<bool, StoreError> {
        let (src, dst) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let Ok(found) = self.list_read(ctx, &src)? else { return Ok(true) };
        let Some(meta) = found else {
            return Ok(false);
        };
        if let Err(why) = key_ok(&dst) {
            ctx.error(&why);
            return Ok(true);
        }
        if self.collection(ctx, &dst, KeyType::List)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(true);
        }
        let unbounded = std::ops::Bound::Unbounded;
        let Some(entry) = self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, from_right).next()
        else {
            return Err(StoreError::Corrupt("a list with no element".into()));
        };
        let (rest, value) = entry?;
        let taken = self.take_value(ctx, &value)?;
        let mut ops = vec![Op::Del { key: element_key(meta.oid, SPACE_MAIN, &rest) }];
        let built = self
            .build_ops(ctx, &mut ops, |server, ctx, ops| server.move_to(ctx, &src, meta, &dst, to_right, &value, ops));
        let emptied = match built {
            Ok(emptied) => emptied,
            Err(error) => {
                Taken::release(ctx.buffers, std::slice::from_ref(&taken));
                return Err(error);
            }
        };
        self.apply_taking(ctx, std::slice::from_ref(&taken), |server, ctx| server.apply(ctx, &ops).map(|()| true))?;
        self.notify(ctx, notify::LIST, if to_right { "rpush" } else { "lpush" }, &dst);
        self.notify(ctx, notify::LIST, if from_right { "rpop" } else { "lpop" }, &src);
        self.notify_emptied(ctx, emptied, &src);
        self.reply_taken(ctx, taken);
        Ok(true)
    }

    /// The ops after the removal of `value` from `src` (`meta`, its delete
    /// already in `ops`) that push it on `dst`: the source is dropped if
    /// that emptied it (returns true), the destination made if absent.
    #[allow(clippy::too_many_arguments)]
    fn move_to(
        &mut self,
        ctx: &mut Ctx<'_>,
        src: &[u8],
        meta: Meta,
        dst: &[u8],
        to_right: bool,
        value: &Value,
        ops: &mut Vec<Op>,
    ) -> Result<bool, StoreError> {
        let same = src == dst;
        let emptied = !same && self.list_len(ctx, Some(meta))? == 1;
        if emptied {
            self.drop_empty_ops(ctx, src, ops);
        }
        let (target, end) = if same {
            // Rotation: the end beyond the one element that stays put.
            (meta, self.list_end(ctx, meta.oid, to_right)?)
        } else {
            let Ok((target, created)) = self.collection_for_write(ctx, dst, KeyType::List, ops)? else {
                unreachable!("the destination's type was checked");
            };
            (target, if created { None } else { self.list_end(ctx, target.oid, to_right)? })
        };
        let seq = seq_beyond(end, to_right)?;
        ops.push(self.value_op(ctx, element_key(target.oid, SPACE_MAIN, &seq_key(seq)), value)?);
        Ok(emptied)
    }

    /// LMPOP numkeys key... LEFT|RIGHT [COUNT n].
    fn cmd_lmpop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_mpop(ctx, 1, [b"LEFT", b"RIGHT"])? else { return Ok(()) };
        if !self.lmpop_first(ctx, &request)? {
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
        }
        Ok(())
    }

    /// Pops from the first non-empty list of the request and replies
    /// [key, [element...]]. Returns whether it replied (WRONGTYPE counts);
    /// false: all empty.
    pub(in crate::apps::kv) fn lmpop_first(
        &mut self,
        ctx: &mut Ctx<'_>,
        request: &crate::apps::kv::cmd::blocking::MpopRequest,
    ) -> Result<bool, StoreError> {
        for key in &request.keys {
            let Ok(found) = self.list_read(ctx, key)? else { return Ok(true) };
            if let Some(meta) = found {
                let taken = self.list_pop(ctx, key, meta, request.count, request.last)?;
                ctx.array(2);
                ctx.bulk(key);
                ctx.array(taken.len());
                for item in taken {
                    self.reply_taken(ctx, item);
                }
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// LPOS's options.
struct LposOptions {
    /// Which match is the first reported: 1 the first from the head, -1
    /// the first from the tail.
    rank: i64,
    /// COUNT (0: all matches); None: reply one position, not an array.
    count: Option<u64>,
    /// How many elements to compare at most (0: all).
    maxlen: u64,
}

impl LposOptions {
    /// Parses the options after the element. Err: the error reply.
    fn parse(ctx: &Ctx<'_>) -> Result<LposOptions, String> {
        let mut options = LposOptions { rank: 1, count: None, maxlen: 0 };
        let mut i = 3;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            if i + 1 >= ctx.argc() {
                return Err(SYNTAX.into());
            }
            let value = parse_i64(&ctx.arg(i + 1));
            match option.as_slice() {
                b"RANK" => match value {
                    Some(0) => {
                        return Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second \
                                    ... or use negative to start from the end of the list"
                            .into())
                    }
                    // -i64::MIN does not exist: Redis refuses it too.
                    Some(i64::MIN) => {
                        return Err("ERR value is out of range, value must between -9223372036854775807 and \
                                    9223372036854775807"
                            .into())
                    }
                    Some(rank) => options.rank = rank,
                    None => return Err(NOT_INTEGER.into()),
                },
                b"COUNT" => options.count = Some(non_negative(value, "ERR COUNT can't be negative")?),
                b"MAXLEN" => options.maxlen = non_negative(value, "ERR MAXLEN can't be negative")?,
                _ => return Err(SYNTAX.into()),
            }
            i += 2;
        }
        Ok(options)
    }
}

/// A non-negative integer option. Err: the error reply.
fn non_negative(value: Option<i64>, negative: &str) -> Result<u64, String> {
    match value {
        Some(n) if n >= 0 => Ok(n as u64),
        Some(_) => Err(negative.into()),
        None => Err(NOT_INTEGER.into()),
    }
}
