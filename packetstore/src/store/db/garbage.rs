//! The reclaimer: empties dead objects (`g` oid) and flushed physical
//! databases (`G` db) a bounded number of tree entries at a time, between
//! event-loop turns, so that DEL of a collection and FLUSHDB are O(1) in
//! the command whatever their size (`docs/format.md`, "Object ids and the
//! graveyard", "Databases").
//!
//! Its deletes are applied to the tree without log records: they remove
//! only entries no command can reach (their object has no `m` entry, their
//! database is no logical database's), they are idempotent, and the `g`
//! or `G` entry goes last, so every durable tree version either still
//! names the garbage or holds none of it. A power failure only makes the
//! reclaimer start that object or database again.

use super::{as_refs, prefix_range, Store, StoreError};
use crate::index::node::Value;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::store::keyspace::{
    db_prefix, dead_db_key, dead_key, dead_oid, object_prefix, DbId, Meta, NS_DEAD, NS_DEAD_DB, NS_EXPIRE, NS_META,
    NS_STRING,
};

impl Store {
    /// Removes up to about `budget` garbage entries. Returns the entries
    /// removed (0: nothing to do).
    pub fn collect_garbage(&mut self, pool: &Pool, buffers: &mut Buffers, budget: usize) -> Result<usize, StoreError> {
        if self.garbage == 0 || self.mutating {
            return Ok(0);
        }
        if let Some(db) = self.first_dead_db(pool)? {
            return self.empty_db_step(pool, buffers, db, budget);
        }
        let range = prefix_range(&[NS_DEAD]);
        let first = self.tree.range(pool, as_refs(&range), false).next().transpose()?;
        match first.and_then(|(key, _)| dead_oid(&key)) {
            Some(oid) => self.empty_object_step(pool, buffers, oid, budget),
            None => Ok(0),
        }
    }

    fn first_dead_db(&self, pool: &Pool) -> Result<Option<DbId>, StoreError> {
        let range = prefix_range(&[NS_DEAD_DB]);
        let first = self.tree.range(pool, as_refs(&range), false).next().transpose()?;
        Ok(first.and_then(|(key, _)| Some(u32::from_be_bytes(key.get(1..5)?.try_into().ok()?))))
    }

    /// Up to `budget` keys starting with `prefix`.
    fn keys_under(&self, pool: &Pool, prefix: &[u8], budget: usize) -> Result<Vec<(Vec<u8>, Value)>, StoreError> {
        let range = prefix_range(prefix);
        // Keys only: a damaged value of a dead object must not stop its
        // reclamation (its extents are read, not its bytes).
        self.tree
            .range(pool, as_refs(&range), false)
            .unchecked()
            .take(budget)
            .map(|e| e.map_err(StoreError::from))
            .collect()
    }

    fn empty_object_step(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        oid: u64,
        budget: usize,
    ) -> Result<usize, StoreError> {
        let doomed = self.keys_under(pool, &object_prefix(oid), budget)?;
        let removed = doomed.len();
        for (key, _) in doomed {
            self.tree_delete(pool, buffers, &key)?;
        }
        if removed < budget {
            self.tree_delete(pool, buffers, &dead_key(oid))?;
            self.note_delete(&dead_key(oid));
            self.stats.lazyfreed += 1;
        }
        Ok(removed + 1)
    }

    /// Empties flushed database `db`: its strings and expiries are
    /// deleted, its collections become dead objects (their elements are
    /// emptied later, as any dead object's).
    fn empty_db_step(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        db: DbId,
        budget: usize,
    ) -> Result<usize, StoreError> {
        let mut removed = 0;
        for ns in [NS_STRING, NS_META, NS_EXPIRE] {
            for (key, value) in self.keys_under(pool, &db_prefix(ns, db), budget - removed)? {
                if ns == NS_META {
                    let meta = match &value {
                        Value::Inline(bytes) => Meta::decode(bytes),
                        _ => None,
                    };
                    let meta = meta.ok_or_else(|| StoreError::Corrupt("metadata is malformed".into()))?;
                    let dead = dead_key(meta.oid);
                    let previous = self.tree_insert(pool, buffers, &dead, &Value::Inline(vec![meta.kind.code()]))?;
                    self.note_put(&dead, &Value::Inline(vec![meta.kind.code()]), previous.is_none());
                }
                if self.tree_delete(pool, buffers, &key)?.is_some() {
                    self.note_delete(&key);
                }
                removed += 1;
            }
            if removed >= budget {
                return Ok(removed);
            }
        }
        if self.tree_delete(pool, buffers, &dead_db_key(db))?.is_some() {
            self.note_delete(&dead_db_key(db));
        }
        Ok(removed + 1)
    }

    /// Runs the reclaimer until no garbage is left (tests; a shutdown).
    pub fn collect_all_garbage(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        while self.collect_garbage(pool, buffers, 4096)? > 0 {}
        Ok(())
    }
}
