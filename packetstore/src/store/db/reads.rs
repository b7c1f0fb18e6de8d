//! The store's reads in schema 2 (`docs/format.md`, "The key-value store,
//! schema 2"): which logical database maps to which physical id, a key's
//! type and expiry, a string's value, a collection's metadata and its
//! elements (by key, by rank, by range, counted), and the keys of a
//! database (SCAN, DBSIZE, RANDOMKEY).
//!
//! Invariant: nothing here writes; an expired key reads as absent to
//! every caller (its entries stay until a write or the expiry cycle
//! removes them, durably).

use std::ops::Bound;

use super::{as_refs, prefix_range, ScanPage, Store, StoreError};
use crate::index::node::Value;
use crate::index::tree::Range;
use crate::pool::file::Pool;
use crate::store::keyspace::{
    db_prefix, db_user_key, element_key, element_prefix, meta_key, prefix_end, string_key, DbId, KeyType, Meta,
    DATABASES, ELEMENT_PREFIX_LEN, KEY_PREFIX_LEN, NS_META, NS_STRING,
};

/// An element range's bound on the part of the key after `e` oid space.
pub type RestBound<'a> = Bound<&'a [u8]>;

/// Elements of one space of an object, in key order (or reversed): the
/// part of each tree key after `e` oid space, and the value.
/// Each value is checked against its CRC (`scrub.rs`).
pub struct Elements<'t> {
    inner: Range<'t>,
    store: &'t Store,
    pool: &'t Pool,
}

impl Iterator for Elements<'_> {
    type Item = Result<(Vec<u8>, Value), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.inner.next()?;
        Some(self.store.counted(entry).and_then(|(mut key, value)| {
            let value = self.store.checked(self.pool, &key, Some(value))?.expect("a value was given");
            // In place: the rest moves down, no second allocation.
            key.drain(..ELEMENT_PREFIX_LEN);
            Ok((key, value))
        }))
    }
}

/// A tree bound on `e` oid space rest from a bound on rest.
fn element_bound(oid: u64, space: u8, bound: RestBound<'_>, low: bool) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(rest) => Bound::Included(element_key(oid, space, rest)),
        Bound::Excluded(rest) => Bound::Excluded(element_key(oid, space, rest)),
        Bound::Unbounded if low => Bound::Included(element_prefix(oid, space).to_vec()),
        Bound::Unbounded => prefix_end(&element_prefix(oid, space)).map_or(Bound::Unbounded, Bound::Excluded),
    }
}

impl Store {
    /// The physical id of logical database `logical` (0-15).
    pub fn physical_db(&self, logical: u8) -> DbId {
        self.dbs[usize::from(logical)]
    }

    /// Whether `key` of `db` has expired (it is then absent to every command).
    pub fn is_expired(&self, db: DbId, key: &[u8], now: u64) -> bool {
        !self.expiries.is_empty() && self.expiries.get(&db_user_key(db, key)).is_some_and(|&at| at <= now)
    }

    /// The expiry of `key` of `db` (ms since the epoch), if it has one.
    pub fn expiry(&self, db: DbId, key: &[u8]) -> Option<u64> {
        if self.expiries.is_empty() {
            return None;
        }
        self.expiries.get(&db_user_key(db, key)).copied()
    }

    /// The type of a live key.
    pub fn key_type(&self, pool: &Pool, db: DbId, key: &[u8], now: u64) -> Result<Option<KeyType>, StoreError> {
        if self.is_expired(db, key, now) {
            return Ok(None);
        }
        if self.counted(self.tree.get(pool, &string_key(db, key)))?.is_some() {
            return Ok(Some(KeyType::String));
        }
        Ok(self.meta_raw(pool, db, key)?.map(|meta| meta.kind))
    }

    /// A collection's metadata, ignoring expiry.
    pub fn meta_raw(&self, pool: &Pool, db: DbId, key: &[u8]) -> Result<Option<Meta>, StoreError> {
        if self.collections == 0 {
            return Ok(None);
        }
        let tree_key = meta_key(db, key);
        let kept = self.metas.get(&tree_key);
        if kept.is_some() && !cfg!(debug_assertions) {
            return Ok(kept);
        }
        let meta = match self.counted(self.tree.get(pool, &tree_key))? {
            None => None,
            Some(Value::Inline(bytes)) => Some(Meta::decode(&bytes).ok_or_else(|| {
                StoreError::Corrupt(format!("metadata of {:?} is malformed", String::from_utf8_lossy(key)))
            })?),
            Some(_) => return Err(StoreError::Corrupt("metadata stored out of line".into())),
        };
        match (kept, meta) {
            (Some(_), _) => assert_eq!(kept, meta, "the kept metadata of {:?} is off", String::from_utf8_lossy(key)),
            (None, Some(meta)) => self.metas.fill(&tree_key, meta),
            (None, None) => {}
        }
        Ok(meta)
    }

    /// A live collection's metadata (None: absent, expired, or a string).
    pub fn meta(&self, pool: &Pool, db: DbId, key: &[u8], now: u64) -> Result<Option<Meta>, StoreError> {
        if self.is_expired(db, key, now) {
            return Ok(None);
        }
        self.meta_raw(pool, db, key)
    }

    /// The value of a tree key (any namespace), ignoring expiry. Like
    /// every read of a value here, its bytes are checked against its CRC
    /// (an error naming the key if they fail it).
    pub fn get_raw(&self, pool: &Pool, tree_key: &[u8]) -> Result<Option<Value>, StoreError> {
        let value = self.counted(self.tree.get(pool, tree_key))?;
        self.checked(pool, tree_key, value)
    }

    /// A live string's value; None if absent, expired or of another type.
    pub fn get(&self, pool: &Pool, db: DbId, key: &[u8], now: u64) -> Result<Option<Value>, StoreError> {
        if self.is_expired(db, key, now) {
            return Ok(None);
        }
        self.get_raw(pool, &string_key(db, key))
    }

    /// One element of an object.
    pub fn element(&self, pool: &Pool, oid: u64, space: u8, rest: &[u8]) -> Result<Option<Value>, StoreError> {
        self.get_raw(pool, &element_key(oid, space, rest))
    }

    /// The number of elements of a space of an object. O(log n) the first time, then O(1).
    /// Kept in DRAM once asked for (`counts.rs`).
    pub fn element_count(&self, pool: &Pool, oid: u64, space: u8) -> Result<u64, StoreError> {
        let kept = self.counts.get(oid, space);
        if let Some(count) = kept {
            if !cfg!(debug_assertions) {
                return Ok(count);
            }
        }
        let count = self.element_count_in(pool, oid, space, Bound::Unbounded, Bound::Unbounded)?;
        match kept {
            Some(kept) => assert_eq!(kept, count, "the kept element count of oid {oid} space {space} is off"),
            None => self.counts.fill(oid, space, count),
        }
        Ok(count)
    }

    /// The number of elements of a space whose rest lies in the bounds.
    pub fn element_count_in(
        &self,
        pool: &Pool,
        oid: u64,
        space: u8,
        start: RestBound<'_>,
        end: RestBound<'_>,
    ) -> Result<u64, StoreError> {
        let range = (element_bound(oid, space, start, true), element_bound(oid, space, end, false));
        Ok(self.tree.count(pool, as_refs(&range))?)
    }

    /// The rank of `rest` within its space: the number of elements before
    /// it (present or not). O(log n).
    pub fn element_rank(&self, pool: &Pool, oid: u64, space: u8, rest: &[u8]) -> Result<u64, StoreError> {
        let base = self.tree.rank(pool, &element_prefix(oid, space))?;
        Ok(self.tree.rank(pool, &element_key(oid, space, rest))? - base)
    }

    /// The element at rank `index` of its space (None: past the end).
    pub fn element_nth(
        &self,
        pool: &Pool,
        oid: u64,
        space: u8,
        index: u64,
    ) -> Result<Option<(Vec<u8>, Value)>, StoreError> {
        let mut iter = self.elements_from_rank(pool, oid, space, index, false)?;
        iter.next().transpose()
    }

    /// The elements of a space whose rest lies in the bounds, in order
    /// (`reverse`: from the end).
    pub fn elements<'t>(
        &'t self,
        pool: &'t Pool,
        oid: u64,
        space: u8,
        start: RestBound<'_>,
        end: RestBound<'_>,
        reverse: bool,
    ) -> Elements<'t> {
        let range = (element_bound(oid, space, start, true), element_bound(oid, space, end, false));
        Elements { inner: self.tree.range(pool, as_refs(&range), reverse), store: self, pool }
    }

    /// The elements of a space from rank `index` on (`reverse`: from it
    /// down to the space's first). Empty past the space's end.
    pub fn elements_from_rank<'t>(
        &'t self,
        pool: &'t Pool,
        oid: u64,
        space: u8,
        index: u64,
        reverse: bool,
    ) -> Result<Elements<'t>, StoreError> {
        let base = self.tree.rank(pool, &element_prefix(oid, space))?;
        // Forward, a rank past the space lands past its end bound (or past
        // every key): nothing, without counting the space. In reverse it
        // would land in a later key's elements, all within the bound.
        let past_end = reverse && index >= self.element_count(pool, oid, space)?;
        let limit = if reverse {
            element_bound(oid, space, Bound::Unbounded, true)
        } else {
            element_bound(oid, space, Bound::Unbounded, false)
        };
        let index = if past_end { self.tree_len_or_max(pool)? } else { base.saturating_add(index) };
        let limit_ref = match &limit {
            Bound::Included(k) => Bound::Included(k.as_slice()),
            Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Ok(Elements { inner: self.tree.range_from_rank(pool, index, limit_ref, reverse), store: self, pool })
    }

    /// A rank past every key (an empty `range_from_rank`).
    fn tree_len_or_max(&self, pool: &Pool) -> Result<u64, StoreError> {
        Ok(self.tree.count(pool, (Bound::Unbounded, Bound::Unbounded))?)
    }

    /// The number of keys of physical database `db` (strings and
    /// collections, expired ones not yet removed included). O(log n).
    pub fn db_size(&self, pool: &Pool, db: DbId) -> Result<u64, StoreError> {
        let mut total = 0;
        for ns in [NS_STRING, NS_META] {
            let range = prefix_range(&db_prefix(ns, db));
            total += self.tree.count(pool, as_refs(&range))?;
        }
        Ok(total)
    }

    /// The number of keys of every logical database.
    pub fn keys(&self, pool: &Pool) -> Result<u64, StoreError> {
        let mut total = 0;
        for logical in 0..DATABASES as u8 {
            total += self.db_size(pool, self.physical_db(logical))?;
        }
        Ok(total)
    }

    /// The key of rank `index` among the keys of `db` (strings first, then
    /// collections; RANDOMKEY). None past the end.
    pub fn key_at(&self, pool: &Pool, db: DbId, index: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let mut index = index;
        for ns in [NS_STRING, NS_META] {
            let prefix = db_prefix(ns, db);
            let range = prefix_range(&prefix);
            let count = self.tree.count(pool, as_refs(&range))?;
            if index < count {
                let base = self.tree.rank(pool, &prefix)?;
                let found = self.tree.nth(pool, base + index)?;
                return Ok(found.map(|(key, _)| key[KEY_PREFIX_LEN..].to_vec()));
            }
            index -= count;
        }
        Ok(None)
    }

    /// Up to `count` keys of `db` after `after` (exclusive; None: from
    /// the first), in key order, strings and collections merged; returns
    /// the keys and where the next page starts. `filter` selects which to
    /// return (every key visited counts towards `count`, as Redis's SCAN).
    pub fn scan(
        &self,
        pool: &Pool,
        db: DbId,
        after: Option<&[u8]>,
        count: usize,
        now: u64,
        mut filter: impl FnMut(&[u8]) -> bool,
    ) -> Result<ScanPage, StoreError> {
        let mut streams = Vec::new();
        for ns in [NS_STRING, NS_META] {
            let prefix = db_prefix(ns, db);
            let start = match after {
                Some(key) => Bound::Excluded([&prefix[..], key].concat()),
                None => Bound::Included(prefix.to_vec()),
            };
            let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
            let range = (start, end);
            let mut iter = self
                .tree
                .range(pool, as_refs(&range), false)
                .unchecked()
                .map(|e| e.map(|(k, _)| k[KEY_PREFIX_LEN..].to_vec()));
            let first = iter.next().transpose()?;
            streams.push((iter, first));
        }
        let mut out = Vec::new();
        let mut last = None;
        let mut visited = 0;
        while visited < count {
            // The smaller head of the two streams.
            let pick = match (&streams[0].1, &streams[1].1) {
                (None, None) => return Ok((out, None)),
                (Some(_), None) => 0,
                (None, Some(_)) => 1,
                (Some(a), Some(b)) => usize::from(b < a),
            };
            let key = streams[pick].1.take().expect("picked a head");
            streams[pick].1 = streams[pick].0.next().transpose()?;
            visited += 1;
            if !self.is_expired(db, &key, now) && filter(&key) {
                out.push(key.clone());
            }
            last = Some(key);
        }
        let done = streams.iter().all(|s| s.1.is_none());
        Ok((out, if done { None } else { last }))
    }

    /// Whether any key is a collection (a string write then need not look
    /// for one to replace).
    pub fn has_collections(&self) -> bool {
        self.collections > 0
    }

    /// Keys with an expiry.
    pub fn expiring(&self) -> usize {
        self.expiries.len()
    }

    /// The last object id handed out.
    pub fn last_oid(&self) -> u64 {
        self.oid_last
    }

    /// Reserves a new object id. Whoever creates the object writes it to
    /// `#oid` in the same group (`Store::oid_op`), so replay restores the
    /// counter with the object; an id reserved by a command that is then
    /// refused is skipped, never reused.
    pub fn next_oid(&mut self) -> u64 {
        self.oid_last += 1;
        self.oid_last
    }

    /// Dead objects and flushed databases the reclaimer has yet to empty.
    pub fn garbage(&self) -> u64 {
        self.garbage
    }
}

impl Store {
    /// Every element of object `oid`, all spaces, as whole tree keys and
    /// values (COPY of a collection).
    pub fn object_entries(&self, pool: &Pool, oid: u64) -> Result<Vec<(Vec<u8>, Value)>, StoreError> {
        let range = prefix_range(&crate::store::keyspace::object_prefix(oid));
        self.tree
            .range(pool, as_refs(&range), false)
            .map(|entry| {
                let (key, value) = self.counted(entry)?;
                let value = self.checked(pool, &key, Some(value))?.expect("a value was given");
                Ok((key, value))
            })
            .collect()
    }
}

impl Store {
    /// The physical id the next FLUSHDB hands out.
    pub fn db_next(&self) -> DbId {
        self.db_next
    }
}

impl Store {
    /// Keys of physical database `db` with an expiry (INFO keyspace: a
    /// scan of the in-memory index).
    pub fn expiring_in(&self, db: DbId) -> usize {
        let prefix = db.to_be_bytes();
        self.expiries.keys().filter(|id| id.starts_with(&prefix)).count()
    }
}

impl Store {
    /// Whether a group of several commands is open (a transaction runs).
    pub fn in_group(&self) -> bool {
        self.group.is_some()
    }
}
