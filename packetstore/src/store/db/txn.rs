//! Transactions across shards (issue 37): one command whose writes land on
//! several shards, each shard a store with its own pool and log, is
//! durable as one unit. A power failure never leaves part of it.
//!
//! # How a transaction is written (`apps/kv/txn.rs` drives it)
//!
//! Transactions are serialised: a process runs one at a time (a global
//! lock), so their ids (`txid`, from 1) grow, and one begins only after the
//! one before it is durable on every shard it wrote. On each shard that
//! writes (a *writer*), its part is one group of the log, like a MULTI's,
//! closed by a marker record (`KIND_TXN`, tagged `TAG_END`) whose key is
//! the transaction's id and the set of writers (`TxnMarker`). Applying the
//! marker sets the store's entry `#txn` to the id. Each writer then makes
//! its part durable at once (`Store::persist_appended`: the log's appended
//! bytes flushed and fenced, no commit), and only once every writer's part
//! is durable may any of them be read, and the command be answered.
//!
//! # Recovery: a shard's *horizon* decides
//!
//! A shard's horizon is the largest transaction id its durable state names:
//! the tree's `#txn`, or a marker among the log's live records. Because
//! transactions are serialised, a writer of transaction t whose horizon is
//! at least t has its part of t durable (a later transaction wrote nothing
//! anywhere before t was durable everywhere). So a marker (t, writers)
//! found at replay is committed iff every writer's horizon is >= t; if not,
//! the power failure came before t was durable everywhere, nothing of it
//! was answered or read, and its group is released on every shard that has
//! it. Only the last transaction can be undecided, and nothing follows it
//! in any writer's log: `replay` checks both.
//!
//! Invariant: recovery decides a transaction the same way on every shard,
//! from the same horizons (`Horizons`, published by each shard's open
//! before any replays).

use std::sync::{Condvar, Mutex};

use crate::index::node::Value;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::store::db::{Op, Store, StoreError, TAG_END};

/// Record kind of a transaction's marker (see the module's comment).
pub const KIND_TXN: u16 = 0x27;
/// The store's entry holding the id of the last transaction it applied
/// (u64 LE).
pub const TXN_ENTRY: &[u8] = b"#txn";
/// The most shards a marker names (one bit each).
pub const TXN_SHARDS_MAX: usize = 256;
/// A marker's bytes: id u64 LE, then the writers' bitmap (bit i of byte
/// i / 8: shard i wrote).
pub const TXN_MARKER_SIZE: usize = 8 + TXN_SHARDS_MAX / 8;

/// A transaction's marker: its id and the shards that wrote a part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnMarker {
    pub txid: u64,
    pub writers: Vec<u16>,
}

impl TxnMarker {
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; TXN_MARKER_SIZE];
        bytes[..8].copy_from_slice(&self.txid.to_le_bytes());
        for &shard in &self.writers {
            let shard = usize::from(shard);
            assert!(shard < TXN_SHARDS_MAX, "a marker names shards below {TXN_SHARDS_MAX}");
            bytes[8 + shard / 8] |= 1 << (shard % 8);
        }
        bytes
    }

    /// None unless `bytes` is a marker `encode` wrote (id >= 1, a writer).
    pub fn decode(bytes: &[u8]) -> Option<TxnMarker> {
        if bytes.len() != TXN_MARKER_SIZE {
            return None;
        }
        let txid = u64::from_le_bytes(bytes[..8].try_into().ok()?);
        let writers: Vec<u16> =
            (0..TXN_SHARDS_MAX).filter(|&i| bytes[8 + i / 8] & (1 << (i % 8)) != 0).map(|i| i as u16).collect();
        (txid >= 1 && !writers.is_empty()).then_some(TxnMarker { txid, writers })
    }
}

/// What recovery asks of the data set about a marker it replays.
pub trait TxnOracle {
    /// Publishes this shard's horizon (called once, before replay).
    fn publish(&self, shard: u16, horizon: u64);
    /// Whether the transaction of `marker` is durable on every writer:
    /// Err when the data set cannot say (a shard missing, or failed).
    fn committed(&self, marker: &TxnMarker) -> Result<bool, StoreError>;
}

/// The oracle of a store opened by itself (tools, an unsharded server): a
/// marker naming only this store's shard is committed; one naming another
/// shard cannot be decided here.
pub struct Alone;

impl TxnOracle for Alone {
    fn publish(&self, _shard: u16, _horizon: u64) {}

    fn committed(&self, marker: &TxnMarker) -> Result<bool, StoreError> {
        Err(StoreError::Corrupt(format!(
            "transaction {} across shards {:?} is in this pool's log, undecided: open the whole data set \
             (packetstore serve with its --shards)",
            marker.txid, marker.writers
        )))
    }
}

/// Every shard's horizon, published by shards opening in parallel: a
/// shard's replay waits here until all have published (or one failed).
pub struct Horizons {
    state: Mutex<Vec<Option<Result<u64, ()>>>>,
    published: Condvar,
}

impl Horizons {
    pub fn new(shards: u16) -> Horizons {
        Horizons { state: Mutex::new(vec![None; usize::from(shards)]), published: Condvar::new() }
    }

    /// Shard `shard` will publish nothing (its open failed): the others'
    /// undecided transactions cannot be decided.
    pub fn fail(&self, shard: u16) {
        let mut state = self.state.lock().expect("horizons lock");
        if let Some(slot) = state.get_mut(usize::from(shard)) {
            slot.get_or_insert(Err(()));
        }
        self.published.notify_all();
    }

    /// Every shard's horizon, once each has published one.
    pub fn all(&self) -> Result<Vec<u64>, StoreError> {
        let mut state = self.state.lock().expect("horizons lock");
        while state.iter().any(Option::is_none) {
            state = self.published.wait(state).expect("horizons lock");
        }
        state
            .iter()
            .map(|h| h.expect("all published"))
            .collect::<Result<Vec<u64>, ()>>()
            .map_err(|()| StoreError::Corrupt("another shard of the data set failed to open".into()))
    }

    /// The largest horizon: new transactions get ids above it.
    pub fn max(&self) -> Result<u64, StoreError> {
        Ok(self.all()?.into_iter().max().unwrap_or(0))
    }
}

impl TxnOracle for Horizons {
    fn publish(&self, shard: u16, horizon: u64) {
        let mut state = self.state.lock().expect("horizons lock");
        let slot = state.get_mut(usize::from(shard)).expect("a shard of the data set");
        assert!(slot.is_none(), "shard {shard} publishes its horizon once");
        *slot = Some(Ok(horizon));
        self.published.notify_all();
    }

    fn committed(&self, marker: &TxnMarker) -> Result<bool, StoreError> {
        let horizons = self.all()?;
        let mut durable = true;
        for &writer in &marker.writers {
            let horizon = horizons.get(usize::from(writer)).ok_or_else(|| {
                StoreError::Corrupt(format!("transaction {} names shard {writer}, not in the data set", marker.txid))
            })?;
            durable &= *horizon >= marker.txid;
        }
        Ok(durable)
    }
}

/// A `#txn` value.
pub(super) fn txn_value(txid: u64) -> Value {
    Value::Inline(txid.to_le_bytes().to_vec())
}

impl Store {
    /// Closes the group `begin_group` opened as this shard's part of the
    /// transaction `marker` names (this shard among its writers): appends
    /// the marker, which ends the group, and applies it (`#txn`). The
    /// caller then makes it durable with `persist_appended`.
    pub fn end_group_txn(&mut self, pool: &Pool, buffers: &mut Buffers, marker: &TxnMarker) -> Result<(), StoreError> {
        let (_, records) = self.group.take().expect("a group is open");
        assert!(records > 0, "a shard that wrote nothing is not a writer");
        assert!(self.repl.is_none(), "transactions across shards are not replicated");
        self.note_group_end();
        let bytes = marker.encode();
        // Room was kept for the largest end record by every command of the
        // group (`check_fits`); as for `end_group`, a refusal is a bug.
        self.mutating = true;
        let lsn = self.log.append(pool, buffers, KIND_TXN, TAG_END, &bytes, &[]).expect("room kept by the group");
        self.records.push_back(lsn);
        self.stats.records += 1;
        self.log_dirty = true;
        self.writes_unsynced = true;
        self.apply_tree(pool, buffers, &Op::Txn { marker: bytes }, 0)?;
        self.mutating = false;
        Ok(())
    }

    /// Makes every record appended so far durable now, with one fence and
    /// no commit (the anchor moves at the next commit, as usual): a record
    /// whose bytes are durable is found by recovery whether or not the
    /// anchor names it. An error poisons the log, as a failed commit does.
    pub fn persist_appended(&mut self, pool: &Pool) -> Result<(), StoreError> {
        self.log.persist_appended(pool)?;
        Ok(())
    }

    /// The largest transaction id this store's durable state names: the
    /// tree's `#txn`, or a marker among the log's live records.
    pub(super) fn txn_horizon(&self, pool: &Pool) -> Result<u64, StoreError> {
        let mut horizon = self.last_txn(pool)?;
        for lsn in self.log.live_lsns() {
            let view = self.log.view(pool, lsn)?;
            if view.kind == KIND_TXN {
                let marker = TxnMarker::decode(&view.key).ok_or_else(|| super::corrupt("a transaction's marker"))?;
                horizon = horizon.max(marker.txid);
            }
        }
        Ok(horizon)
    }

    /// The id of the last transaction across shards this store applied
    /// (the tree's `#txn`).
    pub fn last_txn(&self, pool: &Pool) -> Result<u64, StoreError> {
        match self.tree.get(pool, TXN_ENTRY)? {
            Some(value) => super::decode_u64(&value).ok_or_else(|| super::corrupt("#txn")),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_round_trips_and_a_wrong_one_is_refused() {
        let marker = TxnMarker { txid: 7, writers: vec![0, 3, 255] };
        assert_eq!(TxnMarker::decode(&marker.encode()), Some(marker));
        assert_eq!(TxnMarker::decode(&[0u8; TXN_MARKER_SIZE]), None, "id 0, no writer");
        assert_eq!(TxnMarker::decode(&[1u8; 8]), None, "short");
    }

    #[test]
    fn a_transaction_commits_only_where_every_writer_reached_it() {
        let horizons = Horizons::new(3);
        horizons.publish(0, 5);
        horizons.publish(1, 4);
        horizons.publish(2, 9);
        assert!(horizons.committed(&TxnMarker { txid: 5, writers: vec![0, 2] }).unwrap());
        assert!(!horizons.committed(&TxnMarker { txid: 5, writers: vec![0, 1] }).unwrap());
        assert!(horizons.committed(&TxnMarker { txid: 9, writers: vec![7] }).is_err(), "no shard 7");
        assert_eq!(horizons.max().unwrap(), 9);
    }

    #[test]
    fn a_failed_shard_leaves_transactions_undecided() {
        let horizons = Horizons::new(2);
        horizons.publish(0, 1);
        horizons.fail(1);
        assert!(horizons.committed(&TxnMarker { txid: 1, writers: vec![0] }).is_err());
    }
}
