//! Pools written by schema 1 (strings and hashes, no databases): telling
//! the schemas apart at open, replaying schema 1's own records, and
//! converting the tree to schema 2 in one version (`docs/format.md`,
//! "Converting a schema 1 store").
//!
//! Invariant: a schema 2 tree holds `#schema` = 2 durably before the log
//! holds any record of schema 2 (a fresh pool commits it at open), so a
//! tree without it is schema 1 exactly when it or the log holds anything.
//! The conversion changes only the working version: a power failure
//! before its checkpoint leaves the schema 1 pool as it was.

use std::collections::HashMap;
use std::ops::Bound;

use super::{as_refs, decode_u32, prefix_range, Op, Store, StoreError};
use crate::index::node::Value;
use crate::index::tree::{value_extents, Tree};
use crate::log::ring::Log;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::store::keyspace::{
    element_key, expire_key, meta_key, string_key, KeyType, Meta, OID_ENTRY, SCHEMA, SCHEMA_ENTRY, SPACE_MAIN,
};

/// Schema 1's namespaces.
const V1_STRING: u8 = b'k';
const V1_HASH: u8 = b'h';
const V1_FIELD: u8 = b'f';
const V1_EXPIRE: u8 = b'x';
const V1_KEYS_ENTRY: &[u8] = b"#keys";

/// Which schema the pool's store is in; a fresh pool is made schema 2
/// (durably, before anything is logged).
pub(super) fn schema_of(pool: &Pool, tree: &mut Tree, buffers: &mut Buffers, log: &Log) -> Result<u32, StoreError> {
    if let Some(value) = tree.get(pool, SCHEMA_ENTRY)? {
        return match decode_u32(&value) {
            Some(SCHEMA) => Ok(SCHEMA),
            other => Err(StoreError::Corrupt(format!(
                "the store's schema is {other:?}; this build reads schemas 1 and {SCHEMA}"
            ))),
        };
    }
    if tree.is_empty() && log.live_lsns().next().is_none() {
        tree.insert(pool, buffers, SCHEMA_ENTRY, &Value::Inline(SCHEMA.to_le_bytes().to_vec()))?;
        tree.commit(pool, buffers)?;
        return Ok(SCHEMA);
    }
    Ok(1)
}

/// Schema 1's prefix of a hash's fields.
fn v1_field_prefix(name: &[u8]) -> Vec<u8> {
    let mut out = vec![V1_FIELD];
    out.extend_from_slice(&(name.len() as u16).to_be_bytes());
    out.extend_from_slice(name);
    out
}

/// The hash name and field of a schema 1 field key.
fn v1_split_field(tree_key: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = usize::from(u16::from_be_bytes(tree_key.get(1..3)?.try_into().ok()?));
    let name = tree_key.get(3..3 + len)?;
    Some((name, &tree_key[3 + len..]))
}

impl Store {
    /// Replays a record kind only schema 1 wrote: a hash's deletion, or a
    /// flush of every key.
    pub(super) fn apply_schema_1(&mut self, pool: &Pool, buffers: &mut Buffers, op: &Op) -> Result<(), StoreError> {
        let doomed: Vec<Vec<u8>> = match op {
            Op::DelHash { name } => {
                let range = prefix_range(&v1_field_prefix(name));
                let mut keys = vec![[&[V1_HASH][..], name].concat()];
                for entry in self.tree.range(pool, as_refs(&range), false) {
                    keys.push(entry?.0);
                }
                keys
            }
            Op::Flush => {
                let mut keys = Vec::new();
                for entry in self.tree.range(pool, (Bound::Unbounded, Bound::Unbounded), false) {
                    let key = entry?.0;
                    if key.first() != Some(&b'#') {
                        keys.push(key);
                    }
                }
                keys
            }
            _ => unreachable!("only schema 1's own kinds come here"),
        };
        for key in doomed {
            self.tree_delete(pool, buffers, &key)?;
        }
        Ok(())
    }

    /// Rewrites a replayed schema 1 tree as schema 2 in the working
    /// version: strings and expiries go to database 0, each hash becomes
    /// an object (a new oid) whose fields keep their values' extents (no
    /// byte is copied). Every old entry is deleted before any new one is
    /// written: an old key may spell a new one (`k` then four zero bytes).
    pub(super) fn convert_schema_1(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), StoreError> {
        let entries = self.tree.entries(pool)?;
        let mut oids: HashMap<Vec<u8>, u64> = HashMap::new();
        let mut converted: Vec<(Vec<u8>, Value)> = Vec::with_capacity(entries.len());
        for (key, _) in entries.iter().filter(|(key, _)| key.first() == Some(&V1_HASH)) {
            let oid = self.next_oid();
            oids.insert(key[1..].to_vec(), oid);
            let meta = Meta { kind: KeyType::Hash, oid };
            converted.push((meta_key(0, &key[1..]), Value::Inline(meta.encode().to_vec())));
        }
        for (key, value) in &entries {
            let value = match value {
                Value::Inline(_) => value.clone(),
                _ => Value::Extents(value_extents(pool, value)?, value.crc()),
            };
            let new_key = match key.first() {
                Some(&V1_STRING) => string_key(0, &key[1..]),
                Some(&V1_EXPIRE) => expire_key(0, &key[1..]),
                Some(&V1_FIELD) => match v1_split_field(key).and_then(|(name, field)| Some((oids.get(name)?, field))) {
                    Some((&oid, field)) => element_key(oid, SPACE_MAIN, field),
                    // A field of no hash (never written so by schema 1): dropped.
                    None => continue,
                },
                _ => continue,
            };
            converted.push((new_key, value));
        }
        for (key, _) in &entries {
            if key.first() != Some(&b'#') || key == V1_KEYS_ENTRY {
                self.tree_delete(pool, buffers, key)?;
            }
        }
        for (key, value) in &converted {
            self.tree_insert(pool, buffers, key, value)?;
        }
        let oid = self.oid_last.to_le_bytes().to_vec();
        self.tree_insert(pool, buffers, OID_ENTRY, &Value::Inline(oid))?;
        self.tree_insert(pool, buffers, SCHEMA_ENTRY, &Value::Inline(SCHEMA.to_le_bytes().to_vec()))?;
        self.schema = SCHEMA;
        tracing::info!(hashes = oids.len(), entries = entries.len(), "converted a schema 1 store to schema {SCHEMA}");
        Ok(())
    }
}
