//! The one-sided reader of a server's data set: one pool, or on a sharded
//! server (`serve --shards N --one-sided-reads`) every shard's pool, each
//! key read from the pool of the shard that owns its hash slot.
//!
//! Owns: the shards' `PoolReader`s and the routing of a key to one.
//!
//! Invariant: a key is only ever read from its owner's pool (the shard
//! count and slot ranges are the ones every shard's header records), so
//! each pool reader's guarantees (durable values only, monotonic reads)
//! hold per key as on one pool.

use std::path::Path;

use crate::pool::layout::shard_path;
use crate::reader::client::{PoolReader, ReaderError, ReaderOptions, ReaderStats};
use crate::reader::mapped::Mapped;
use crate::reader::walk::Miss;
use crate::util::slots::{key_slot, owner};

/// A one-sided reader of one server's pools.
pub struct Reader {
    /// Index: shard (one for an unsharded pool).
    shards: Vec<PoolReader>,
    /// The shard the last read went to (`last_miss`).
    last: usize,
}

impl Reader {
    /// Maps the pool at `pool_path` read-only, and when it is shard 0 of a
    /// sharded data set, every other shard's beside it (each must name the
    /// same data set). The server need not run: a read then falls back
    /// (and fails if the server is down).
    pub fn open(pool_path: &Path, options: ReaderOptions) -> Result<Reader, ReaderError> {
        let first = Mapped::open(pool_path).map_err(|e| ReaderError::Open(e.to_string()))?;
        let Some(id) = first.shard() else {
            return Ok(Reader { shards: vec![PoolReader::open(pool_path, options)?], last: 0 });
        };
        if id.index != 0 {
            let why = format!("{} is shard {} of {}: open shard 0's pool", pool_path.display(), id.index, id.count);
            return Err(ReaderError::Open(why));
        }
        let mut shards = Vec::with_capacity(usize::from(id.count));
        for index in 0..id.count {
            let path = shard_path(pool_path, index);
            let mapped = Mapped::open(&path).map_err(|e| ReaderError::Open(e.to_string()))?;
            match mapped.shard() {
                Some(found) if found.index == index && found.count == id.count && found.set_id == id.set_id => {}
                found => {
                    let why = format!("{} is not shard {index} of {}'s data set ({found:?})", path.display(), id.count);
                    return Err(ReaderError::Open(why));
                }
            }
            shards.push(PoolReader::open(&path, options.clone())?);
        }
        Ok(Reader { shards, last: 0 })
    }

    /// The pool reader of `key`'s shard.
    fn shard_of(&mut self, key: &[u8]) -> &mut PoolReader {
        self.last = match self.shards.len() {
            1 => 0,
            count => usize::from(owner(key_slot(key), count as u16)),
        };
        &mut self.shards[self.last]
    }

    /// Every shard's counters, added.
    pub fn stats(&self) -> ReaderStats {
        self.shards.iter().map(PoolReader::stats).fold(ReaderStats::default(), |sum, one| ReaderStats {
            one_sided: sum.one_sided + one.one_sided,
            from_log: sum.from_log + one.from_log,
            retries: sum.retries + one.retries,
            fallbacks: sum.fallbacks + one.fallbacks,
            table_opens: sum.table_opens + one.table_opens,
            corrupt: sum.corrupt + one.corrupt,
        })
    }

    /// Why the last read that fell back (on the last read's shard) could
    /// not be proved.
    pub fn last_miss(&self) -> Option<&Miss> {
        self.shards[self.last].last_miss()
    }

    /// The string value of `key` in logical database `db` (0-15): None if
    /// absent or expired; `WrongType` if it holds a collection.
    pub fn get(&mut self, db: u8, key: &[u8]) -> Result<Option<Vec<u8>>, ReaderError> {
        self.shard_of(key).get(db, key)
    }

    /// `get`, into `out` (cleared first): true if the key has a value.
    pub fn get_into(&mut self, db: u8, key: &[u8], out: &mut Vec<u8>) -> Result<bool, ReaderError> {
        self.shard_of(key).get_into(db, key, out)
    }

    /// The value of `field` of the hash `key` in database `db`.
    pub fn hget(&mut self, db: u8, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ReaderError> {
        self.shard_of(key).hget(db, key, field)
    }

    /// Whether `member` is in the set `key` of database `db`.
    pub fn sismember(&mut self, db: u8, key: &[u8], member: &[u8]) -> Result<bool, ReaderError> {
        self.shard_of(key).sismember(db, key, member)
    }

    /// The score of `member` in the sorted set `key` of database `db`.
    pub fn zscore(&mut self, db: u8, key: &[u8], member: &[u8]) -> Result<Option<f64>, ReaderError> {
        self.shard_of(key).zscore(db, key, member)
    }
}
