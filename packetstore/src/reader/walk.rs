//! The one-sided reader's walk over a mapped pool: the newest committed
//! tree version (a meta slot), a key's entry in it, a value's bytes, and a
//! live log record named by the recent-writes table.
//!
//! Owns: the reader's scratch copies of nodes and records.
//!
//! Invariant: every byte is copied out of the mapping before it is parsed;
//! a node is searched only once its copy passed `node::validate` (magic,
//! CRC, every offset), a record only once its copy passed its header CRC,
//! a value only once its extents were checked against the geometry. A
//! check that fails is a `Miss`, never a panic or a read outside the
//! mapping, whatever the pool holds. A value whose copied bytes differ from
//! the CRC stored with it sets `Walk::corrupt`: the caller decides, once
//! it has proved the read was one moment's (not a buffer reused under it),
//! that the value is damaged, and answers so, never with its bytes.

use crate::index::indirect;
use crate::index::node::{self, NodeBytes, Value};
use crate::index::tree::{child_index, decode_meta_slot, MetaSlot, META_SLOT_OFFSETS};
use crate::log::record::{self, HEADER_SIZE, OFF_RELEASE_MARK, RELEASE_MAGIC};
use crate::pool::layout::ANCHOR_OFF_HEAD_LSN;
use crate::reader::mapped::Mapped;
use crate::store::db::{KIND_DEL, KIND_PUT};

/// Why a one-sided read could not answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// A race with the server (a record released meanwhile, a publish or a
    /// checkpoint under way, the lease overrun): another try may answer.
    Raced(&'static str),
    /// The pool or the table fails a check, or the reader cannot decide
    /// (a hash shared by two keys): the server must answer.
    Refused(String),
}

fn damaged(what: &str) -> Miss {
    Miss::Refused(format!("the pool fails a check: {what}"))
}

/// The newest committed tree version of the pool (either meta slot, by
/// generation). A slot being written fails its CRC and is skipped.
pub fn newest_version(pool: &Mapped) -> Result<MetaSlot, Miss> {
    let mut newest: Option<MetaSlot> = None;
    for offset in META_SLOT_OFFSETS {
        let mut bytes = [0u8; 64];
        if !pool.copy(offset, &mut bytes) {
            return Err(damaged("no header page"));
        }
        if let Some(slot) = decode_meta_slot(&bytes) {
            if newest.is_none_or(|n| slot.generation > n.generation) {
                newest = Some(slot);
            }
        }
    }
    newest.ok_or(Miss::Raced("no committed tree version yet"))
}

/// Nodes a reader keeps validated copies of (2 KiB each by default: 8 MiB).
pub const NODE_CACHE_MAX: usize = 4096;

/// Where a node's seal (generation and CRC) sits, and its length.
const SEAL: std::ops::Range<usize> = node::SEAL_OFFSET..node::SEAL_OFFSET + 12;

/// Scratch space and validated node copies, reused from read to read.
#[derive(Default)]
pub struct Walk {
    record: Vec<u8>,
    /// Copies of nodes that passed `node::validate`, by buffer, each with
    /// the seal it had. A node is sealed once and never changed while its
    /// buffer holds it; a buffer reused holds a node of a later generation
    /// (another seal). So a copy whose seal equals the buffer's is the
    /// node (the read's lease check covers the seal's read).
    cache: crate::util::idhash::IdHashMap<u32, Box<[u8]>>,
    /// Nodes copied from the pool (not found in the cache).
    pub nodes_copied: u64,
    /// Set when a value read since the caller last cleared it failed its
    /// CRC (inline: its entry's; extents: the one stored with them).
    pub corrupt: bool,
}

impl Walk {
    /// The value of `key` in tree version `version`.
    pub fn tree_get(&mut self, pool: &Mapped, version: &MetaSlot, key: &[u8]) -> Result<Option<Value>, Miss> {
        let Some(mut node) = version.root else { return Ok(None) };
        let mut level = version.height;
        loop {
            let view = NodeBytes(self.node(pool, node)?);
            if view.level() != level {
                return Err(Miss::Raced("a node's level disagrees with its parent's"));
            }
            if view.is_leaf() {
                let Ok(index) = view.search(key) else { return Ok(None) };
                let (value, intact) = match view.checked_value(index) {
                    Ok(value) => (value, true),
                    Err(_) => (view.value(index), false),
                };
                self.corrupt |= !intact;
                return Ok(Some(value));
            }
            if level == 0 {
                return Err(damaged("an internal node at the leaves' level"));
            }
            node = view.child(child_index(&view, key));
            level -= 1;
        }
    }

    /// Whether version `version` may hold a key starting with `prefix`:
    /// false only if it surely holds none (one descent, no scan).
    pub fn may_hold_prefix(&mut self, pool: &Mapped, version: &MetaSlot, prefix: &[u8]) -> Result<bool, Miss> {
        let Some(mut node) = version.root else { return Ok(false) };
        let mut level = version.height;
        // The smallest separator right of the path: a lower bound of every
        // key right of the leaf reached.
        let mut right: Option<Vec<u8>> = None;
        loop {
            let view = NodeBytes(self.node(pool, node)?);
            if view.level() != level {
                return Err(Miss::Raced("a node's level disagrees with its parent's"));
            }
            let index = match view.search(prefix) {
                Ok(index) | Err(index) => index,
            };
            if view.is_leaf() {
                return Ok(match index < view.count() {
                    true => view.key(index).starts_with(prefix),
                    false => right.is_some_and(|key| key.starts_with(prefix)),
                });
            }
            if level == 0 {
                return Err(damaged("an internal node at the leaves' level"));
            }
            let child = child_index(&view, prefix);
            if child < view.count() {
                right = Some(view.key(child).to_vec());
            }
            node = view.child(child);
            level -= 1;
        }
    }

    /// Node `node`'s bytes, validated: the cached copy if its seal is the
    /// buffer's, else a fresh copy (then cached).
    fn node(&mut self, pool: &Mapped, node: u32) -> Result<&[u8], Miss> {
        let geometry = pool.geometry();
        if node >= geometry.buffer_count {
            return Err(damaged("a node beyond the pool"));
        }
        let at = geometry.buffer_offset(node);
        let mut seal = [0u8; 12];
        if !pool.copy(at + SEAL.start as u64, &mut seal) {
            return Err(damaged("a node beyond the file"));
        }
        let cached = self.cache.get(&node).is_some_and(|copy| copy[SEAL] == seal);
        if !cached {
            let mut copy = vec![0u8; geometry.buffer_size as usize].into_boxed_slice();
            if !pool.copy(at, &mut copy) {
                return Err(damaged("a node beyond the file"));
            }
            self.nodes_copied += 1;
            // A node of the version read is immutable for the lease: one
            // that fails its checks was reused (the read overran the
            // lease, the caller's check says) or is damaged.
            node::validate(&copy).map_err(|_| Miss::Raced("a node fails its checks"))?;
            if self.cache.len() >= NODE_CACHE_MAX {
                self.cache.clear();
            }
            self.cache.insert(node, copy);
        }
        Ok(&self.cache[&node])
    }

    /// Appends the bytes of a tree value to `out`; sets `corrupt` if the
    /// copy differs from the value's CRC.
    pub fn value_into(&mut self, pool: &Mapped, value: &Value, out: &mut Vec<u8>) -> Result<(), Miss> {
        let start = out.len();
        self.copy_value(pool, value, out)?;
        if value.crc().is_some_and(|crc| crate::util::crc::crc32c(&out[start..]) != crc) {
            self.corrupt = true;
        }
        Ok(())
    }

    fn copy_value(&mut self, pool: &Mapped, value: &Value, out: &mut Vec<u8>) -> Result<(), Miss> {
        match value {
            Value::Inline(bytes) => out.extend_from_slice(bytes),
            Value::Extents(extents, _) => pool.copy_extents(extents.iter().copied(), out).map_err(damaged)?,
            &Value::Indirect { len, head, count, .. } => {
                let geometry = pool.geometry();
                // Every extent holds a byte, and the value fits the pool.
                if u64::from(count) > len || len > geometry.file_size() {
                    return Err(damaged("an indirect value's length or extent count"));
                }
                let read = |buffer: u32, bytes: &mut [u8]| {
                    if !pool.copy(geometry.buffer_offset(buffer), bytes) {
                        bytes.fill(0); // fails the index buffer's checks
                    }
                };
                let (_, extents) = indirect::read_chain_from(geometry, head, count, read)
                    .map_err(|_| Miss::Raced("an index chain fails its checks"))?;
                let start = out.len();
                pool.copy_extents(extents.iter().copied(), out).map_err(damaged)?;
                if (out.len() - start) as u64 != len {
                    return Err(damaged("an indirect value's length"));
                }
            }
        }
        Ok(())
    }

    /// The write of `key` logged at `lsn`: `true` with its value appended
    /// to `out` (a put), `false` for a delete. The record must be live
    /// (not released) when its value has been copied, and its value must
    /// match its CRC.
    pub fn log_get(&mut self, pool: &Mapped, lsn: u64, key: &[u8], out: &mut Vec<u8>) -> Result<bool, Miss> {
        let geometry = pool.geometry();
        let anchor = geometry.log_region_offset(0);
        let (ring_offset, ring_size) = geometry.log_ring(0);
        if ring_size == 0 || lsn % 64 != 0 {
            return Err(damaged("a log position"));
        }
        let at = ring_offset + lsn % ring_size;
        let mut line = [0u8; HEADER_SIZE];
        if !pool.copy(at, &mut line) {
            return Err(damaged("a log record beyond the file"));
        }
        // Until its CRC holds, the header may be torn or another record's
        // (the ring reused): a retry, not damage.
        let header = record::decode_header(&line).map_err(|_| Miss::Raced("the record was overwritten"))?;
        if header.lsn != lsn {
            return Err(Miss::Raced("the record was overwritten"));
        }
        let len = header.record_len as u64;
        if lsn % ring_size + len > ring_size {
            return Err(Miss::Raced("a record header that does not fit the ring"));
        }
        self.record.resize(len as usize, 0);
        if !pool.copy(at, &mut self.record) || record::header_crc(&self.record) != header.header_crc {
            return Err(Miss::Raced("the record changed while read"));
        }
        if !matches!(header.kind, KIND_PUT | KIND_DEL) {
            return Err(damaged("the table names a record that is not a put or a delete"));
        }
        if record::key(&self.record, &header) != key {
            return Err(Miss::Refused("two keys share a hash".into()));
        }
        let put = header.kind == KIND_PUT;
        if put {
            let start = out.len();
            pool.copy_extents(record::extents(&self.record, &header), out).map_err(damaged)?;
            let data = &out[start..];
            if data.len() as u64 != header.data_len || crate::util::crc::crc32c(data) != header.data_crc {
                out.truncate(start);
                return Err(Miss::Raced("a logged value changed while read"));
            }
        }
        // Live after the copy: the log moves its head past a record, or
        // marks it, before its buffers are freed (log/ring.rs).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let head = pool.word(anchor + ANCHOR_OFF_HEAD_LSN).ok_or_else(|| damaged("the log anchor"))?;
        let mark = pool.word(at + OFF_RELEASE_MARK as u64).ok_or_else(|| damaged("a release mark"))?;
        if head > lsn || mark == lsn ^ RELEASE_MAGIC {
            return Err(Miss::Raced("the record was released"));
        }
        Ok(put)
    }
}
