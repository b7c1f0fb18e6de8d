//! What command handlers share: writes as store [`Op`]s (values staged in
//! the buffers they arrived in, or copied), applied all or nothing;
//! replies of stored values (zero copy from pool buffers when large); and
//! the argument checks and error strings of Redis.
//!
//! Invariant: a write that fails (the pool or the log is full) leaves
//! nothing behind: its staged values are released (`Store::release_ops`)
//! and the client gets the error.

use crate::apps::kv::state::{Ctx, KvServer};
use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::io::app::Persist;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::store::db::{value_bytes, value_len, Op, Store, StoreError, KEY_SIZE_MAX};
use crate::store::keyspace::{
    dead_key, element_key, element_prefix, expire_key, meta_key, string_key, DbId, KeyType, Meta, ELEMENT_PREFIX_LEN,
    OID_ENTRY,
};

/// Checks a key's size.
pub(super) fn key_ok(key: &[u8]) -> Result<(), String> {
    if key.len() > KEY_SIZE_MAX {
        return Err(format!("ERR key of {} bytes is over the limit of {KEY_SIZE_MAX}", key.len()));
    }
    Ok(())
}

/// LEFT or RIGHT (true). Err: the error reply.
pub(super) fn parse_end(arg: Option<Vec<u8>>) -> Result<bool, &'static str> {
    match arg.as_deref() {
        Some(b"LEFT") => Ok(false),
        Some(b"RIGHT") => Ok(true),
        _ => Err(SYNTAX),
    }
}

pub(super) use crate::redis_spec::numbers::parse_i64;

pub(super) const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

pub(super) const NOT_INTEGER: &str = "ERR value is not an integer or out of range";

pub(super) const SYNTAX: &str = "ERR syntax error";

/// Redis's error for a write that would make a string longer than the
/// limit (`KvServer::string_max`).
pub(super) const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// Redis's own limit on a string (`proto-max-bulk-len`, 512 MB).
pub(super) const PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;

/// Strings at least this long are rewritten by SETRANGE, SETBIT and
/// BITFIELD without copying their unchanged bytes (`put_spliced`).
const SPLICE_MIN: u64 = 4096;

/// The parts of `extents` (a value's, in order) holding its bytes
/// `from..to`, appended to `out`.
fn slice_extents(extents: &[Extent], from: u64, to: u64, out: &mut Vec<Extent>) {
    let mut at = 0u64;
    for extent in extents {
        let (start, end) = (at, at + u64::from(extent.len));
        at = end;
        if end <= from {
            continue;
        }
        if start >= to {
            break;
        }
        let skip = from.saturating_sub(start);
        let take = end.min(to) - start - skip;
        out.push(Extent::new(extent.buffer, usize::from(extent.offset) + skip as usize, take as usize));
    }
}

/// `len` bytes of a string value from `start` (within it), read from
/// only the extents that hold them.
pub(super) fn value_range(pool: &Pool, value: &Value, start: u64, len: u64) -> Result<Vec<u8>, StoreError> {
    if let Value::Inline(bytes) = value {
        return Ok(bytes[start as usize..(start + len) as usize].to_vec());
    }
    let mut parts = Vec::new();
    slice_extents(&value_extents(pool, value)?, start, start + len, &mut parts);
    let mut out = Vec::with_capacity(len as usize);
    pool.read_extents(&parts, &mut out);
    Ok(out)
}

impl KvServer {
    pub(super) fn check_password(&self, user: Option<&[u8]>, password: &[u8]) -> Result<(), &'static str> {
        let Some(expected) = &self.config.requirepass else {
            return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        };
        // Every byte is compared, so the time taken says nothing of where
        // a guess first differs.
        let differ = password.len() != expected.len()
            || password.iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) != 0;
        if user.is_some_and(|u| u != b"default") || differ {
            return Err("WRONGPASS invalid username-password pair or user is disabled.");
        }
        Ok(())
    }

    /// Applies a command's ops; gives back their references either way.
    pub(super) fn apply(&mut self, ctx: &mut Ctx<'_>, ops: &[Op]) -> Result<(), StoreError> {
        let writes = ops.iter().any(|op| matches!(op, Op::Put { .. }));
        if writes {
            self.panic_if_armed(crate::apps::kv::state::PanicPoint::Staged);
        }
        let result = if writes { self.store.check_room_for_write(ctx.buffers) } else { Ok(()) };
        let result = result.and_then(|()| self.store.apply(ctx.pool, ctx.buffers, ops));
        Store::release_ops(ctx.buffers, ops);
        if result.is_ok() {
            self.count_write();
            // Nothing applied (DEL of missing keys): no key changed, so no
            // watcher fails and no tracking client is told (as Redis).
            self.modified |= !ops.is_empty();
        }
        self.staged_in_place = 0;
        self.staged_copied = 0;
        result
    }

    /// Counts an applied write command and its value bytes.
    pub(super) fn count_write(&mut self) {
        self.stats.writes += 1;
        self.stats.value_bytes_in_place += std::mem::take(&mut self.staged_in_place);
        self.stats.value_bytes_copied += std::mem::take(&mut self.staged_copied);
    }

    /// Notes value bytes a command writes: received bytes it keeps where
    /// they are (`received`; copied anyway in copy mode) or bytes it copies.
    pub(super) fn stage_bytes(&mut self, len: u64, received: bool) {
        if received && self.config.persist == Persist::ZeroCopy {
            self.staged_in_place += len;
        } else {
            self.staged_copied += len;
        }
    }

    /// Ends a command whose ops were being built: applies them and calls
    /// `reply`, or, when building stopped (`built` is an error reply or a
    /// failure), gives their references back.
    pub(super) fn finish_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        ops: &[Op],
        built: Result<Result<(), String>, StoreError>,
        reply: impl FnOnce(&mut Ctx<'_>),
    ) -> Result<(), StoreError> {
        match built {
            Ok(Ok(())) => {
                self.apply(ctx, ops)?;
                reply(ctx);
                Ok(())
            }
            Ok(Err(why)) => {
                Store::release_ops(ctx.buffers, ops);
                ctx.error(&why);
                Ok(())
            }
            Err(error) => {
                Store::release_ops(ctx.buffers, ops);
                Err(error)
            }
        }
    }

    /// A `Put` of argument `i` (its own references on the extents).
    pub(super) fn put_arg(&mut self, ctx: &mut Ctx<'_>, tree_key: Vec<u8>, i: usize) -> Result<Op, StoreError> {
        let len = ctx.conn.args.arg_len(i);
        let extents = match ctx.conn.args.extents(i) {
            Some(extents) => {
                for extent in extents {
                    ctx.buffers.retain_staged(extent.buffer)?;
                }
                self.stage_bytes(len, true);
                extents.to_vec()
            }
            None => {
                let bytes = ctx.arg(i).into_owned();
                self.stage_bytes(len, false);
                self.store.stage(ctx.pool, ctx.buffers, &bytes)?
            }
        };
        Ok(Op::Put { key: tree_key, extents, len })
    }

    /// A `Put` of computed bytes.
    pub(super) fn put_bytes(&mut self, ctx: &mut Ctx<'_>, tree_key: Vec<u8>, bytes: &[u8]) -> Result<Op, StoreError> {
        self.stage_bytes(bytes.len() as u64, false);
        self.put_staged(ctx.pool, ctx.buffers, tree_key, bytes)
    }

    /// A `Put` of computed bytes, staged in the pool (not counted as a
    /// command's value bytes: the store's own entries).
    pub(super) fn put_staged(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        tree_key: Vec<u8>,
        bytes: &[u8],
    ) -> Result<Op, StoreError> {
        let extents = self.store.stage(pool, buffers, bytes)?;
        Ok(Op::Put { key: tree_key, extents, len: bytes.len() as u64 })
    }

    /// A `Put` of an element whose value is argument `i` (kept where it
    /// was received when large).
    pub(super) fn put_element_arg(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        space: u8,
        rest: &[u8],
        i: usize,
    ) -> Result<Op, StoreError> {
        self.put_arg(ctx, element_key(oid, space, rest), i)
    }

    /// The longest string a command may make: the server's value limit,
    /// and never more than Redis's.
    pub(super) fn string_max(&self) -> u64 {
        self.config.value_size_max.min(PROTO_MAX_BULK_LEN)
    }

    /// Writes `bytes` as the string at `key` (known not to hold another
    /// type), keeping its time to live (as SETRANGE, SETBIT, INCRBYFLOAT):
    /// one store group.
    pub(super) fn put_string(&mut self, ctx: &mut Ctx<'_>, key: &[u8], bytes: &[u8]) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, key, &mut ops)?;
        let put = self.put_bytes(ctx, string_key(ctx.db, key), bytes)?;
        ops.push(put);
        self.apply(ctx, &ops)
    }

    /// Writes `bytes` at `offset` of the string at `key` (`old`, known
    /// to be a string or absent; zeros fill any gap past its end), keeping
    /// its time to live: one store group. Returns the new length.
    pub(super) fn put_spliced(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        old: Option<&Value>,
        offset: u64,
        bytes: &[u8],
    ) -> Result<u64, StoreError> {
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, key, &mut ops)?;
        let old_len = old.map_or(0, value_len);
        let total = old_len.max(offset + bytes.len() as u64);
        let put = match old {
            Some(value) if total >= SPLICE_MIN && !matches!(value, Value::Inline(_)) => {
                self.splice(ctx, key, value, offset, bytes)?
            }
            _ => None,
        };
        let put = match put {
            Some(put) => put,
            None => {
                let mut whole = match old {
                    Some(value) => value_bytes(ctx.pool, value)?.into_owned(),
                    None => Vec::new(),
                };
                whole.resize(total as usize, 0);
                whole[offset as usize..offset as usize + bytes.len()].copy_from_slice(bytes);
                self.put_bytes(ctx, string_key(ctx.db, key), &whole)?
            }
        };
        ops.push(put);
        self.apply(ctx, &ops)?;
        Ok(total)
    }

    /// `put_spliced`'s Put for a large stored value: its bytes before and
    /// after the change stay where they are (new references on their
    /// buffers), only the change (and any zeros before it) is staged.
    /// None: `may_share` says no (the caller copies instead).
    fn splice(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        value: &Value,
        offset: u64,
        bytes: &[u8],
    ) -> Result<Option<Op>, StoreError> {
        let old = value_extents(ctx.pool, value)?;
        let old_len = value_len(value);
        let end = offset + bytes.len() as u64;
        let (mut kept, mut suffix) = (Vec::new(), Vec::new());
        slice_extents(&old, 0, offset.min(old_len), &mut kept);
        slice_extents(&old, end, old_len, &mut suffix);
        let mut middle = vec![0u8; offset.saturating_sub(old_len) as usize];
        middle.extend_from_slice(bytes);
        let buffer_size = u64::from(ctx.pool.geometry().buffer_size);
        kept.extend_from_slice(&suffix);
        let staged = (middle.len() as u64).div_ceil(buffer_size) as usize + 1;
        if !self.may_share(ctx, &kept, staged, old_len.max(end)) {
            return Ok(None);
        }
        self.retain_all(ctx, &kept)?;
        let staged = match self.store.stage(ctx.pool, ctx.buffers, &middle) {
            Ok(staged) => staged,
            Err(error) => {
                ctx.buffers.release_extents(&kept).expect("our references");
                return Err(error);
            }
        };
        self.stage_bytes(middle.len() as u64, false);
        let prefix = kept.len() - suffix.len();
        let mut extents = kept[..prefix].to_vec();
        extents.extend_from_slice(&staged);
        extents.extend_from_slice(&suffix);
        Ok(Some(Op::Put { key: string_key(ctx.db, key), extents, len: old_len.max(end) }))
    }

    /// Whether a new value of `len` bytes may name `extents` shared with
    /// the value it replaces (and `staged` more extents): not when it
    /// would be fragmented (over twice the extents a copy takes, plus 16)
    /// or leave a buffer with over half the references it may hold. Every
    /// version of a value names its shared buffers until checkpointed, so
    /// sharing without these bounds runs buffers out of references.
    pub(super) fn may_share(&self, ctx: &Ctx<'_>, extents: &[Extent], staged: usize, len: u64) -> bool {
        let buffer_size = u64::from(ctx.pool.geometry().buffer_size);
        let count = extents.len() + staged;
        if count as u64 > 2 * len.div_ceil(buffer_size) + 16 || count > crate::limits::RECORD_EXTENTS_MAX {
            return false;
        }
        let mut added: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        for extent in extents {
            *added.entry(extent.buffer).or_default() += 1;
        }
        let limit = u32::from(crate::limits::BUFFER_REFS_MAX / 2);
        added.iter().all(|(&buffer, &n)| u32::from(ctx.buffers.refs(buffer)) + n <= limit)
    }

    /// Takes a reference on each extent's buffer; none on an error.
    pub(super) fn retain_all(&self, ctx: &mut Ctx<'_>, extents: &[Extent]) -> Result<(), StoreError> {
        for (i, extent) in extents.iter().enumerate() {
            if let Err(error) = ctx.buffers.retain_staged(extent.buffer) {
                ctx.buffers.release_extents(&extents[..i]).expect("our references");
                return Err(error.into());
            }
        }
        Ok(())
    }

    /// Ops that make `key` of `db` ready for a new string value: a
    /// collection there goes (to the graveyard), and so does its expiry
    /// unless `keep_expiry` and the key is live.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn clear_for_string(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        db: DbId,
        now: u64,
        key: &[u8],
        keep_expiry: bool,
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if let Some(meta) = self.store.meta_raw(pool, db, key)? {
            ops.push(Op::Del { key: meta_key(db, key) });
            ops.push(self.put_staged(pool, buffers, dead_key(meta.oid).to_vec(), &[meta.kind.code()])?);
        }
        let live = !self.store.is_expired(db, key, now);
        if self.store.expiry(db, key).is_some() && !(keep_expiry && live) {
            ops.push(Op::Del { key: expire_key(db, key) });
        }
        Ok(())
    }

    /// Ops that remove `key` if it has expired (so a write starts afresh).
    pub(super) fn purge_if_expired(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if !self.store.is_expired(ctx.db, key, ctx.now) {
            return Ok(());
        }
        self.delete_ops(ctx.pool, ctx.buffers, ctx.db, key, ops)?;
        Ok(())
    }

    /// Ops deleting `key` of `db` whatever its type (expired or not), and
    /// its expiry: O(1) for a collection, whose object goes to the
    /// graveyard. Returns whether the key was there (expired or not).
    pub(super) fn delete_ops(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        db: DbId,
        key: &[u8],
        ops: &mut Vec<Op>,
    ) -> Result<bool, StoreError> {
        let mut found = false;
        if self.store.get_raw(pool, &string_key(db, key))?.is_some() {
            ops.push(Op::Del { key: string_key(db, key) });
            found = true;
        } else if let Some(meta) = self.store.meta_raw(pool, db, key)? {
            ops.push(Op::Del { key: meta_key(db, key) });
            ops.push(self.put_staged(pool, buffers, dead_key(meta.oid).to_vec(), &[meta.kind.code()])?);
            found = true;
        }
        if self.store.expiry(db, key).is_some() {
            ops.push(Op::Del { key: expire_key(db, key) });
        }
        Ok(found)
    }

    /// The live collection of type `kind` at `key`: Ok(Some) if there,
    /// Ok(None) if absent, Err(()) if the key holds another type
    /// (WRONGTYPE).
    pub(super) fn collection(
        &self,
        ctx: &Ctx<'_>,
        key: &[u8],
        kind: KeyType,
    ) -> Result<Result<Option<Meta>, ()>, StoreError> {
        // One lookup when the collection is there (a key is never both a
        // string and a collection).
        if self.store.is_expired(ctx.db, key, ctx.now) {
            return Ok(Ok(None));
        }
        if let Some(meta) = self.store.meta_raw(ctx.pool, ctx.db, key)? {
            return Ok(if meta.kind == kind { Ok(Some(meta)) } else { Err(()) });
        }
        if self.store.get_raw(ctx.pool, &string_key(ctx.db, key))?.is_some() {
            return Ok(Err(()));
        }
        Ok(Ok(None))
    }

    /// The collection of type `kind` a write to `key` goes to: the live
    /// one, or a new one whose creation ops (removal of an expired key,
    /// `#oid`, the `m` entry) are pushed to `ops`. Err(()): WRONGTYPE.
    /// Returns the metadata and whether it is new.
    pub(super) fn collection_for_write(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        kind: KeyType,
        ops: &mut Vec<Op>,
    ) -> Result<Result<(Meta, bool), ()>, StoreError> {
        match self.collection(ctx, key, kind)? {
            Err(()) => Ok(Err(())),
            Ok(Some(meta)) => Ok(Ok((meta, false))),
            Ok(None) => {
                self.purge_if_expired(ctx, key, ops)?;
                let meta = self.new_object_ops(ctx, key, kind, ops)?;
                Ok(Ok((meta, true)))
            }
        }
    }

    /// Ops creating an empty collection of type `kind` at `key` (known
    /// free): a new object id, written to `#oid` in the same group, and
    /// the `m` entry naming it.
    pub(super) fn new_object_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        kind: KeyType,
        ops: &mut Vec<Op>,
    ) -> Result<Meta, StoreError> {
        let meta = Meta { kind, oid: self.store.next_oid() };
        ops.push(self.put_staged(ctx.pool, ctx.buffers, OID_ENTRY.to_vec(), &meta.oid.to_le_bytes())?);
        ops.push(self.put_staged(ctx.pool, ctx.buffers, meta_key(ctx.db, key), &meta.encode())?);
        Ok(meta)
    }

    /// Applies `ops` that remove `removed` elements (of the main space)
    /// of the collection `meta` at `key`, deleting it in the same group if
    /// none is left (lists, sets, sorted sets). Returns whether it did.
    pub(super) fn apply_removal(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        removed: usize,
        mut ops: Vec<Op>,
    ) -> Result<bool, StoreError> {
        if removed == 0 {
            return Ok(false);
        }
        let emptied =
            self.store.element_count(ctx.pool, meta.oid, crate::store::keyspace::SPACE_MAIN)? == removed as u64;
        if emptied {
            self.drop_empty_ops(ctx, key, &mut ops);
        }
        self.apply(ctx, &ops)?;
        Ok(emptied)
    }

    /// Ops removing the collection at `key` whose last element the same
    /// command removes: its `m` entry and its expiry (no graveyard entry:
    /// nothing is left under its oid).
    pub(super) fn drop_empty_ops(&self, ctx: &Ctx<'_>, key: &[u8], ops: &mut Vec<Op>) {
        ops.push(Op::Del { key: meta_key(ctx.db, key) });
        if self.store.expiry(ctx.db, key).is_some() {
            ops.push(Op::Del { key: expire_key(ctx.db, key) });
        }
    }

    /// Replies with a string value: from the pool when long enough.
    pub(super) fn reply_value(&mut self, ctx: &mut Ctx<'_>, value: &Value) -> Result<(), StoreError> {
        let len = value_len(value);
        if len >= self.config.zero_copy_min && !matches!(value, Value::Inline(_)) {
            let extents = value_extents(ctx.pool, value)?;
            let enc = ctx.enc();
            enc.bulk_header(ctx.out.bytes(), len);
            self.push_extents(ctx, &extents);
            ctx.out.push(b"\r\n");
            self.stats.bytes_sent_zero_copy += len;
        } else if let Value::Inline(bytes) = value {
            ctx.bulk(bytes);
            self.stats.bytes_sent_copied += len;
        } else {
            // Copied from the pool straight into the reply.
            let extents = value_extents(ctx.pool, value)?;
            let enc = ctx.enc();
            enc.bulk_header(ctx.out.bytes(), len);
            ctx.pool.read_extents(&extents, ctx.out.bytes());
            ctx.out.push(b"\r\n");
            self.stats.bytes_sent_copied += len;
        }
        Ok(())
    }

    /// Queues pool bytes as reply parts, each holding a reference.
    pub(super) fn push_extents(&mut self, ctx: &mut Ctx<'_>, extents: &[Extent]) {
        for extent in extents {
            ctx.buffers.retain(extent.buffer).expect("a stored value's buffer takes a reply's reference");
            let offset = ctx.pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
            // SAFETY: the reply took a reference on the buffer just above:
            // nothing reuses or writes it until it is sent.
            unsafe { ctx.out.push_pool(extent.buffer, ctx.pool.address(offset), u32::from(extent.len)) };
        }
        self.panic_if_armed(crate::apps::kv::state::PanicPoint::Replied);
    }

    /// The live string at `key`; Err(()) if it holds another type.
    pub(super) fn string_of(&self, ctx: &Ctx<'_>, key: &[u8]) -> Result<Result<Option<Value>, ()>, StoreError> {
        if let Some(value) = self.store.get(ctx.pool, ctx.db, key, ctx.now)? {
            return Ok(Ok(Some(value)));
        }
        if self.store.meta(ctx.pool, ctx.db, key, ctx.now)?.is_some() {
            return Ok(Err(()));
        }
        Ok(Ok(None))
    }
}

/// A random number generator for the commands that pick at random
/// (HRANDFIELD, SRANDMEMBER, SPOP, RANDOMKEY, ...): seeded from the clock
/// once per thread. Not for anything secret.
pub(super) fn random_below(n: u64) -> u64 {
    use std::cell::RefCell;
    thread_local! {
        static RNG: RefCell<crate::util::rng::SplitMix64> = RefCell::new(crate::util::rng::SplitMix64::new(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64),
        ));
    }
    if n == 0 {
        return 0;
    }
    RNG.with(|rng| rng.borrow_mut().below(n))
}

impl KvServer {
    /// Runs `build`, which pushes a command's ops; on its error, gives
    /// back the references the ops pushed so far hold, so that a failure
    /// half way leaks nothing.
    pub(super) fn build_ops<T>(
        &mut self,
        ctx: &mut Ctx<'_>,
        ops: &mut Vec<Op>,
        build: impl FnOnce(&mut Self, &mut Ctx<'_>, &mut Vec<Op>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let result = build(self, ctx, ops);
        if result.is_err() {
            Store::release_ops(ctx.buffers, ops);
            ops.clear();
        }
        result
    }

    /// Remembers where a SCAN-like iteration stopped (a tree key) and
    /// returns its cursor; the oldest cursors are forgotten first.
    pub(super) fn save_cursor(&mut self, position: Vec<u8>) -> u64 {
        let id = self.next_cursor;
        self.next_cursor += 1;
        if self.scan_cursors.len() >= crate::apps::kv::state::SCAN_CURSORS_MAX {
            self.scan_cursors.pop_front();
        }
        self.scan_cursors.push_back((id, position));
        id
    }

    /// Where cursor `id` stopped (None: 0, or forgotten: start over,
    /// which SCAN's contract allows).
    pub(super) fn find_cursor(&self, id: u64) -> Option<Vec<u8>> {
        if id == 0 {
            return None;
        }
        self.scan_cursors.iter().find(|(cursor, _)| *cursor == id).map(|(_, key)| key.clone())
    }
}

/// A page of HSCAN, SSCAN or ZSCAN: the next cursor, and the elements.
pub(super) type ScanPageOf = (u64, Vec<(Vec<u8>, Value)>);

/// The options of SCAN, HSCAN, SSCAN and ZSCAN.
pub(super) struct ScanArgs {
    pub(super) pattern: Option<Vec<u8>>,
    pub(super) count: usize,
    /// SCAN's TYPE, lower case.
    pub(super) type_filter: Option<Vec<u8>>,
}

/// The most elements one SCAN call visits, whatever COUNT says.
pub(super) const SCAN_COUNT_MAX: usize = 1_000_000;

/// Parses `[MATCH p] [COUNT n] [TYPE t]` from argument `first` on (TYPE
/// only if `with_type`). Err: the error reply.
pub(super) fn parse_scan_args(ctx: &Ctx<'_>, first: usize, with_type: bool) -> Result<ScanArgs, &'static str> {
    let mut args = ScanArgs { pattern: None, count: 10, type_filter: None };
    let mut i = first;
    while i < ctx.argc() {
        let option = ctx.conn.args.upper(i).unwrap_or_default();
        if i + 1 >= ctx.argc() {
            return Err(SYNTAX);
        }
        match option.as_slice() {
            b"MATCH" => args.pattern = Some(ctx.arg(i + 1).into_owned()),
            b"COUNT" => match parse_i64(&ctx.arg(i + 1)) {
                Some(n) if n >= 1 => args.count = (n as usize).min(SCAN_COUNT_MAX),
                Some(_) => return Err(SYNTAX),
                None => return Err(NOT_INTEGER),
            },
            b"TYPE" if with_type => args.type_filter = Some(ctx.arg(i + 1).to_ascii_lowercase()),
            _ => return Err(SYNTAX),
        }
        i += 2;
    }
    Ok(args)
}

/// A SCAN cursor argument. Err: the error reply.
pub(super) fn parse_cursor(bytes: &[u8]) -> Result<u64, &'static str> {
    std::str::from_utf8(bytes).ok().and_then(|c| c.parse::<u64>().ok()).ok_or("ERR invalid cursor")
}

impl KvServer {
    /// One page of an object's space for HSCAN, SSCAN and ZSCAN: up to
    /// `count` elements after where `cursor` stopped, and the next cursor
    /// (0: done). Elements there for the whole iteration are returned
    /// (the cursor remembers the last key, not a position).
    pub(super) fn scan_elements(
        &mut self,
        ctx: &Ctx<'_>,
        oid: u64,
        space: u8,
        cursor: u64,
        count: usize,
    ) -> Result<ScanPageOf, StoreError> {
        let after = self.find_cursor(cursor).filter(|key| key.starts_with(&element_prefix(oid, space)));
        let start = match &after {
            Some(key) => std::ops::Bound::Excluded(&key[ELEMENT_PREFIX_LEN..]),
            None => std::ops::Bound::Unbounded,
        };
        let mut page = Vec::new();
        let mut iter = self.store.elements(ctx.pool, oid, space, start, std::ops::Bound::Unbounded, false);
        for entry in iter.by_ref() {
            page.push(entry?);
            if page.len() == count {
                break;
            }
        }
        let more = page.len() == count && iter.next().transpose()?.is_some();
        drop(iter);
        let next = match page.last() {
            Some((rest, _)) if more => self.save_cursor(element_key(oid, space, rest)),
            _ => 0,
        };
        Ok((next, page))
    }
}

impl KvServer {
    /// Ops moving the live key `src` of the command's database to `dst`
    /// of `dst_db` (free, or cleared by ops the caller pushed before): a
    /// collection's `m` entry moves and its oid stays (O(1) whatever its
    /// size); a string is written under the new name naming the same
    /// extents (no byte copied); the expiry moves too. The source goes.
    pub(super) fn relocate_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        src: &[u8],
        dst_db: DbId,
        dst: &[u8],
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if let Some(value) = self.store.get_raw(ctx.pool, &string_key(ctx.db, src))? {
            ops.push(self.value_op(ctx, string_key(dst_db, dst), &value)?);
            ops.push(Op::Del { key: string_key(ctx.db, src) });
        } else if let Some(meta) = self.store.meta_raw(ctx.pool, ctx.db, src)? {
            ops.push(self.put_staged(ctx.pool, ctx.buffers, meta_key(dst_db, dst), &meta.encode())?);
            ops.push(Op::Del { key: meta_key(ctx.db, src) });
        }
        if let Some(at) = self.store.expiry(ctx.db, src) {
            ops.push(self.put_staged(ctx.pool, ctx.buffers, expire_key(dst_db, dst), &at.to_le_bytes())?);
            ops.push(Op::Del { key: expire_key(ctx.db, src) });
        }
        Ok(())
    }

    /// A `Put` of a stored value under `tree_key`: naming the same extents
    /// (new references) when `may_share` allows, else a copy of its bytes.
    pub(super) fn value_op(&mut self, ctx: &mut Ctx<'_>, tree_key: Vec<u8>, value: &Value) -> Result<Op, StoreError> {
        if let Value::Inline(bytes) = value {
            return self.put_staged(ctx.pool, ctx.buffers, tree_key, bytes);
        }
        let extents = value_extents(ctx.pool, value)?;
        let len = value_len(value);
        if self.may_share(ctx, &extents, 0, len) {
            self.retain_all(ctx, &extents)?;
            return Ok(Op::Put { key: tree_key, extents, len });
        }
        let bytes = value_bytes(ctx.pool, value)?.into_owned();
        self.put_staged(ctx.pool, ctx.buffers, tree_key, &bytes)
    }
}
