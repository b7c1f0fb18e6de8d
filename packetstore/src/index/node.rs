//! B+ tree nodes: the on-media format of one node (one pool buffer), as
//! pure functions on its bytes (`NodeBytes`, the data path) and between an
//! owned `Node` and its bytes (validation and tests). The tree is
//! `tree.rs`; the format, byte by byte, is in `docs/format.md`.
//!
//! A node is self-validating: a CRC-32C over the whole node (less the CRC
//! field) and the generation of the tree version that wrote it. A node that
//! fails its checks is an error, never a wrong answer. Nodes are sealed
//! once (copy on write) and never modified after (until sealed, a node of
//! the batch being built may be changed in place: an entry overwritten, a
//! child's count moved), so a torn node can only be a node whose version
//! never became durable.
//!
//! ```text
//! 0      4     5      6       8            16     20        24            32 (kind 3)
//! | magic | kind | level | count | generation | crc | reserved | first_count | slots ... free ... entries |
//! ```
//! `count` slots of u16 offsets follow the header (24 bytes; 32 for a
//! counted internal node), in key order; each points at an entry packed
//! from the end of the node:
//! - leaf entry (kind 1): key_len u16, key, value_kind u8, value_len u16,
//!   then, for a checked value (value kinds 4 to 6, all this build
//!   writes), the CRC-32C of the value's bytes (u32), then the value
//!   (inline bytes; value_len extents of 8 bytes; or, indirect, 16
//!   bytes: length u64, head index buffer u32, extent count u32). Value
//!   kinds 1 to 3 (written before value checksums) have no CRC: they read
//!   as unchecked;
//! - internal entry (kind 2, written by trees before order statistics):
//!   key_len u16, key, child u32 (the child holding keys >= key); the
//!   node's first child is in the reserved field;
//! - counted internal entry (kind 3, the only internal kind written now):
//!   key_len u16, key, child u32, count u64 (the keys in that child's
//!   subtree); the first child is in the reserved field and its count in
//!   the header's `first_count`.
//!
//! Guarantees: the CRC covers the counts; an inline value read through
//! `NodeBytes::checked_value` matches its own CRC (so a value changed
//! after its node was validated is an error, not an answer); the other
//! values carry their CRC out (`Value`) for the reader of their bytes to
//! check; validation refuses a counted
//! node with a zero count, or counts whose sum overflows a u64 (whether a
//! count is *exact* is a property of the tree, checked by
//! `Tree::check_invariants`). Leaves are the same in both kinds of tree.

use crate::pool::extent::Extent;
use crate::pool::layout::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};
use std::ops::Range;

pub const NODE_MAGIC: u32 = 0x444E_5350; // "PSND"
pub const NODE_HEADER_SIZE: usize = 24;
/// The header of a counted internal node: the common header, then the
/// first child's count.
pub const COUNTED_HEADER_SIZE: usize = 32;
const OFF_MAGIC: usize = 0;
const OFF_KIND: usize = 4;
const OFF_LEVEL: usize = 5;
const OFF_COUNT: usize = 6;
const OFF_GENERATION: usize = 8;
const OFF_CRC: usize = 16;
const OFF_FIRST_CHILD: usize = 20;
const OFF_FIRST_COUNT: usize = 24;
const _: () = assert!(OFF_FIRST_CHILD + 4 == NODE_HEADER_SIZE && OFF_GENERATION % 8 == 0);
const _: () = assert!(OFF_FIRST_COUNT + 8 == COUNTED_HEADER_SIZE && OFF_FIRST_COUNT % 8 == 0);
/// What follows the key in an internal entry: child u32 (kind 2), or child
/// u32 and count u64 (kind 3).
const CHILD_SIZE: usize = 4;
const COUNTED_CHILD_SIZE: usize = 4 + 8;

const KIND_LEAF: u8 = 1;
const KIND_INTERNAL: u8 = 2;
const KIND_COUNTED: u8 = 3;
/// Value kinds without a CRC: written before value checksums, read only.
const VALUE_INLINE: u8 = 1;
const VALUE_EXTENTS: u8 = 2;
const VALUE_INDIRECT: u8 = 3;
/// Value kinds with a CRC-32C of the value's bytes before the value: the
/// only ones written.
const VALUE_INLINE_CHECKED: u8 = 4;
const VALUE_EXTENTS_CHECKED: u8 = 5;
const VALUE_INDIRECT_CHECKED: u8 = 6;
/// The bytes a checked value's CRC takes in its entry.
pub const VALUE_CRC_SIZE: usize = 4;
/// An indirect value's bytes in its leaf: length u64, head u32, count u32.
const INDIRECT_SIZE: usize = 16;

/// A value stored in a leaf. `crc` is the CRC-32C of the value's bytes
/// in order (the log's `data_crc` of the record that wrote them); None:
/// unknown (a value written before value checksums, or one being inserted
/// whose CRC the tree computes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Small values live in the node (their CRC is checked as they are
    /// read from it, `NodeBytes::checked_value`).
    Inline(Vec<u8>),
    /// Large values stay in the buffers they were received into.
    Extents(Vec<Extent>, Option<u32>),
    /// Values with more extents than a leaf holds: the extents are listed
    /// in a chain of index buffers (`indirect.rs`) starting at `head`.
    Indirect { len: u64, head: u32, count: u32, crc: Option<u32> },
}

impl Value {
    fn encoded_len(&self) -> usize {
        1 + 2
            + match self {
                Value::Inline(bytes) => VALUE_CRC_SIZE + bytes.len(),
                Value::Extents(extents, crc) => crc.map_or(0, |_| VALUE_CRC_SIZE) + extents.len() * 8,
                Value::Indirect { crc, .. } => crc.map_or(0, |_| VALUE_CRC_SIZE) + INDIRECT_SIZE,
            }
    }

    /// The CRC the value carries (None for an inline value: its CRC stays
    /// in its node).
    pub fn crc(&self) -> Option<u32> {
        match self {
            Value::Inline(_) => None,
            Value::Extents(_, crc) | Value::Indirect { crc, .. } => *crc,
        }
    }
}

/// An inline value whose bytes no longer match their CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineMismatch;

/// A decoded node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    Leaf {
        generation: u64,
        entries: Vec<(Vec<u8>, Value)>,
    },
    /// `children[0]` holds keys below `keys[0]`; `children[i + 1]` keys
    /// at or above `keys[i]`. `counts[i]`, when present (kind 3), is the
    /// number of keys under `children[i]`; absent: kind 2, an internal node
    /// of a tree written before order statistics.
    Internal {
        generation: u64,
        level: u8,
        keys: Vec<Vec<u8>>,
        children: Vec<u32>,
        counts: Option<Vec<u64>>,
    },
}

/// Why node bytes were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeError {
    BadMagic,
    BadChecksum,
    Malformed(&'static str),
    TooLarge { needed: usize, size: usize },
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::BadMagic => write!(f, "not a tree node (bad magic)"),
            NodeError::BadChecksum => write!(f, "tree node checksum mismatch"),
            NodeError::Malformed(why) => write!(f, "malformed tree node: {why}"),
            NodeError::TooLarge { needed, size } => write!(f, "node needs {needed} bytes, has {size}"),
        }
    }
}

impl Node {
    /// Bytes this node needs when encoded.
    pub fn encoded_len(&self) -> usize {
        match self {
            Node::Leaf { entries, .. } => {
                NODE_HEADER_SIZE
                    + entries.iter().map(|(key, value)| 2 + 2 + key.len() + value.encoded_len()).sum::<usize>()
            }
            Node::Internal { keys, counts: None, .. } => {
                NODE_HEADER_SIZE + keys.iter().map(|key| 2 + 2 + key.len() + CHILD_SIZE).sum::<usize>()
            }
            Node::Internal { keys, counts: Some(_), .. } => {
                COUNTED_HEADER_SIZE + keys.iter().map(|key| 2 + 2 + key.len() + COUNTED_CHILD_SIZE).sum::<usize>()
            }
        }
    }

    /// Encodes into `out` (a whole node buffer), CRC last.
    pub fn encode(&self, out: &mut [u8]) -> Result<(), NodeError> {
        let needed = self.encoded_len();
        if needed > out.len() || out.len() > usize::from(u16::MAX) + 1 {
            return Err(NodeError::TooLarge { needed, size: out.len() });
        }
        out.fill(0);
        put_u32(out, OFF_MAGIC, NODE_MAGIC);
        let mut end = out.len();
        let mut slot = match self {
            Node::Internal { counts: Some(_), .. } => COUNTED_HEADER_SIZE,
            _ => NODE_HEADER_SIZE,
        };
        let mut place = |out: &mut [u8], entry: &[u8]| {
            end -= entry.len();
            out[end..end + entry.len()].copy_from_slice(entry);
            put_u16(out, slot, u16::try_from(end).expect("offsets fit: nodes are at most 64 KiB"));
            slot += 2;
        };
        let mut entry = Vec::new();
        match self {
            Node::Leaf { generation, entries } => {
                out[OFF_KIND] = KIND_LEAF;
                put_u16(out, OFF_COUNT, entries.len() as u16);
                put_u64(out, OFF_GENERATION, *generation);
                for (key, value) in entries {
                    leaf_entry(&mut entry, key, value);
                    place(out, &entry);
                }
            }
            Node::Internal { generation, level, keys, children, counts } => {
                if children.len() != keys.len() + 1 || *level == 0 {
                    return Err(NodeError::Malformed("an internal node has one more child than keys, level >= 1"));
                }
                if counts.as_ref().is_some_and(|counts| counts.len() != children.len()) {
                    return Err(NodeError::Malformed("a counted node has one count per child"));
                }
                out[OFF_KIND] = if counts.is_some() { KIND_COUNTED } else { KIND_INTERNAL };
                out[OFF_LEVEL] = *level;
                put_u16(out, OFF_COUNT, keys.len() as u16);
                put_u64(out, OFF_GENERATION, *generation);
                put_u32(out, OFF_FIRST_CHILD, children[0]);
                if let Some(counts) = counts {
                    put_u64(out, OFF_FIRST_COUNT, counts[0]);
                }
                for (i, (key, child)) in keys.iter().zip(&children[1..]).enumerate() {
                    match counts {
                        Some(counts) => internal_entry(&mut entry, key, *child, counts[i + 1]),
                        None => {
                            entry.clear();
                            entry.extend_from_slice(&(key.len() as u16).to_le_bytes());
                            entry.extend_from_slice(key);
                            entry.extend_from_slice(&child.to_le_bytes());
                        }
                    }
                    place(out, &entry);
                }
            }
        }
        let crc = node_crc(out);
        put_u32(out, OFF_CRC, crc);
        Ok(())
    }

    /// Decodes and checks node bytes (`validate`, then the owned form).
    pub fn decode(bytes: &[u8]) -> Result<Node, NodeError> {
        validate(bytes)?;
        let view = NodeBytes(bytes);
        let generation = get_u64(bytes, OFF_GENERATION);
        let count = view.count();
        Ok(if view.is_leaf() {
            Node::Leaf { generation, entries: (0..count).map(|i| (view.key(i).to_vec(), view.value(i))).collect() }
        } else {
            Node::Internal {
                generation,
                level: view.level(),
                keys: (0..count).map(|i| view.key(i).to_vec()).collect(),
                children: (0..=count).map(|i| view.child(i)).collect(),
                counts: view.is_counted().then(|| (0..=count).map(|i| view.child_count(i)).collect()),
            }
        })
    }
}

/// Checks node bytes without allocating: magic, CRC, then every offset and
/// length against the node's bounds, key order, and kind against level.
/// Bytes that pass may be read through `NodeBytes`.
pub fn validate(bytes: &[u8]) -> Result<(), NodeError> {
    if bytes.len() < NODE_HEADER_SIZE || get_u32(bytes, OFF_MAGIC) != NODE_MAGIC {
        return Err(NodeError::BadMagic);
    }
    if get_u32(bytes, OFF_CRC) != node_crc(bytes) {
        return Err(NodeError::BadChecksum);
    }
    validate_layout(bytes)
}

/// `validate` without the magic and CRC: for a node being built (not yet
/// sealed).
pub fn validate_layout(bytes: &[u8]) -> Result<(), NodeError> {
    if bytes.len() < NODE_HEADER_SIZE {
        return Err(NodeError::Malformed("shorter than a header"));
    }
    let kind = bytes[OFF_KIND];
    match kind {
        KIND_LEAF if bytes[OFF_LEVEL] == 0 => {}
        KIND_INTERNAL | KIND_COUNTED if bytes[OFF_LEVEL] > 0 => {}
        KIND_LEAF | KIND_INTERNAL | KIND_COUNTED => return Err(NodeError::Malformed("level disagrees with kind")),
        _ => return Err(NodeError::Malformed("unknown node kind")),
    }
    let header_size = if kind == KIND_COUNTED { COUNTED_HEADER_SIZE } else { NODE_HEADER_SIZE };
    let count = usize::from(get_u16(bytes, OFF_COUNT));
    let slots_end = header_size + 2 * count;
    if slots_end > bytes.len() {
        return Err(NodeError::Malformed("more slots than fit"));
    }
    let mut reader = Reader { bytes, at: 0 };
    let mut previous: Option<&[u8]> = None;
    let mut total = 0u64;
    if kind == KIND_COUNTED {
        total = add_count(total, get_u64(bytes, OFF_FIRST_COUNT))?;
    }
    for i in 0..count {
        reader.at = usize::from(get_u16(bytes, header_size + 2 * i));
        if reader.at < slots_end {
            return Err(NodeError::Malformed("an entry overlaps the slots"));
        }
        let key_len = usize::from(reader.u16()?);
        let key = reader.take(key_len)?;
        if previous.is_some_and(|p| p >= key) {
            return Err(NodeError::Malformed("keys out of order"));
        }
        previous = Some(key);
        if kind == KIND_LEAF {
            let value_kind = reader.take(1)?[0];
            let value_len = usize::from(reader.u16()?);
            if value_kind >= VALUE_INLINE_CHECKED {
                reader.take(VALUE_CRC_SIZE)?;
            }
            match value_kind {
                VALUE_INLINE | VALUE_INLINE_CHECKED => reader.take(value_len)?,
                VALUE_EXTENTS | VALUE_EXTENTS_CHECKED => reader.take(value_len * 8)?,
                VALUE_INDIRECT | VALUE_INDIRECT_CHECKED if value_len == INDIRECT_SIZE => reader.take(value_len)?,
                _ => return Err(NodeError::Malformed("unknown value kind")),
            };
        } else if kind == KIND_COUNTED {
            reader.take(CHILD_SIZE)?;
            total = add_count(total, get_u64(reader.take(8)?, 0))?;
        } else {
            reader.take(CHILD_SIZE)?;
        }
        // Packed: entry i ends where entry i - 1 starts (entry 0 at the
        // node's end), so lengths follow from the slots (`NodeBytes`).
        let end = if i == 0 { bytes.len() } else { usize::from(get_u16(bytes, header_size + 2 * (i - 1))) };
        if reader.at != end {
            return Err(NodeError::Malformed("entries not packed in key order from the end"));
        }
    }
    Ok(())
}

/// Adds a child's count to a counted node's total: every child holds a key
/// (a subtree without keys is removed), and the total fits a u64.
fn add_count(total: u64, count: u64) -> Result<u64, NodeError> {
    if count == 0 {
        return Err(NodeError::Malformed("a counted node names a child without keys"));
    }
    total.checked_add(count).ok_or(NodeError::Malformed("a counted node's counts overflow"))
}

/// One change applied while copying a node (copy on write).
#[derive(Clone, Copy, Debug)]
pub enum Edit<'a> {
    /// Insert an entry (its encoded bytes, as `entry_bytes` builds them) at
    /// slot `index`.
    Insert { index: usize, entry: &'a [u8] },
    /// Replace the entry at `index`.
    Replace { index: usize, entry: &'a [u8] },
    /// Remove the entry at `index`.
    Remove { index: usize },
}

/// The data path's view of a node: it works on the node's bytes in place
/// (the probe in `docs/tree-design.md`: 4-6x faster than owned nodes). The
/// bytes must have passed `Node::decode` once (when read from the pool),
/// so offsets are trusted here and checked only by debug assertions.
pub struct NodeBytes<'a>(pub &'a [u8]);

impl<'a> NodeBytes<'a> {
    pub fn count(&self) -> usize {
        usize::from(get_u16(self.0, OFF_COUNT))
    }

    pub fn is_leaf(&self) -> bool {
        self.0[OFF_KIND] == KIND_LEAF
    }

    /// Whether this is a counted internal node (kind 3): each child's
    /// subtree size is stored with it.
    pub fn is_counted(&self) -> bool {
        self.0[OFF_KIND] == KIND_COUNTED
    }

    /// Where the slots start: after the header, 8 bytes longer in a
    /// counted node (branch-free: it is on every key's path).
    fn slots_at(&self) -> usize {
        NODE_HEADER_SIZE + (COUNTED_HEADER_SIZE - NODE_HEADER_SIZE) * usize::from(self.is_counted())
    }

    /// Levels above the leaves (0 for a leaf).
    pub fn level(&self) -> u8 {
        self.0[OFF_LEVEL]
    }

    fn entry_start(&self, index: usize) -> usize {
        debug_assert!(index < self.count());
        usize::from(get_u16(self.0, self.slots_at() + 2 * index))
    }

    /// Where entry `index` ends: where entry `index - 1` starts (entries are
    /// packed in key order from the end; `validate` checks it).
    fn entry_end(&self, index: usize) -> usize {
        if index == 0 {
            self.0.len()
        } else {
            self.entry_start(index - 1)
        }
    }

    /// The key of entry `index`.
    pub fn key(&self, index: usize) -> &'a [u8] {
        let at = self.entry_start(index);
        let len = usize::from(get_u16(self.0, at));
        &self.0[at + 2..at + 2 + len]
    }

    /// Where entry `index` starts in the node.
    pub fn entry_offset(&self, index: usize) -> usize {
        self.entry_start(index)
    }

    /// The whole encoded entry `index` (key and value or child).
    pub fn entry(&self, index: usize) -> &'a [u8] {
        &self.0[self.entry_start(index)..self.entry_end(index)]
    }

    /// Entries `from..to` as one contiguous block, and where it starts.
    fn block(&self, from: usize, to: usize) -> (usize, &'a [u8]) {
        if from >= to {
            return (0, &[]);
        }
        let start = self.entry_start(to - 1);
        (start, &self.0[start..self.entry_end(from)])
    }

    /// Binary search: `Ok(index)` of `key`, or `Err(index)` to insert it at.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        // The slot base as a constant in the loop (as in `move_slots`).
        if self.is_counted() {
            self.search_from::<COUNTED_HEADER_SIZE>(key)
        } else {
            self.search_from::<NODE_HEADER_SIZE>(key)
        }
    }

    fn search_from<const SLOTS_AT: usize>(&self, key: &[u8]) -> Result<usize, usize> {
        // The slots as one array of pairs, sliced once: each probe's slot
        // read is then checked against their count only (issue 36: 2% of a
        // SET against slicing bytes).
        let slots = pairs(&self.0[SLOTS_AT..SLOTS_AT + 2 * self.count()]);
        let (mut low, mut high) = (0, slots.len());
        while low < high {
            let middle = (low + high) / 2;
            // Both entries the next step may read, fetched while this one
            // is compared: a probe's cost is the miss on its entry (the
            // slots share a line or two), and the misses now overlap.
            self.prefetch_entry(slots, (low + middle) / 2);
            self.prefetch_entry(slots, (middle + 1 + high) / 2);
            let at = usize::from(u16::from_le_bytes(slots[middle]));
            let len = usize::from(get_u16(self.0, at));
            match compare_keys(&self.0[at + 2..at + 2 + len], key) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Ok(middle),
            }
        }
        Err(low)
    }

    /// A hint that entry `index`'s first line is read soon (no effect on
    /// the result; an index past the slots fetches nothing).
    #[inline(always)]
    fn prefetch_entry(&self, slots: &[[u8; 2]], index: usize) {
        let Some(&slot) = slots.get(index) else { return };
        prefetch_line(self.0.as_ptr().wrapping_add(usize::from(u16::from_le_bytes(slot))));
    }

    /// Bytes the node uses: header, slots and entries.
    pub fn used(&self) -> usize {
        let count = self.count();
        self.slots_at() + 2 * count + self.block(0, count).1.len()
    }

    /// Copies this node into `out` (same size or not), compacted, with
    /// `edit` applied. The header is copied; call `seal` after.
    pub fn rebuild(&self, out: &mut [u8], edit: Edit<'_>) -> Result<(), NodeError> {
        let count = self.count();
        // The entries before the edit, the new entry, the entries after.
        let (before, entry, after_from) = match edit {
            Edit::Insert { index, entry } => {
                assert!(index <= count);
                (index, entry, index)
            }
            Edit::Replace { index, entry } => {
                assert!(index < count);
                (index, entry, index + 1)
            }
            Edit::Remove { index } => {
                assert!(index < count);
                (index, &[][..], index + 1)
            }
        };
        let new_count = before + usize::from(!matches!(edit, Edit::Remove { .. })) + (count - after_from);
        let (a_start, a) = self.block(0, before);
        let (b_start, b) = self.block(after_from, count);
        let slots_at = self.slots_at();
        let needed = slots_at + 2 * new_count + a.len() + entry.len() + b.len();
        if needed > out.len() {
            return Err(NodeError::TooLarge { needed, size: out.len() });
        }
        out[..slots_at].copy_from_slice(&self.0[..slots_at]);
        put_u16(out, OFF_COUNT, new_count as u16);
        // Copies a block of packed entries below `end` and writes their
        // slots from `first_slot`, shifted by how far the block moved.
        let place_block =
            |out: &mut [u8], end: &mut usize, block: &[u8], start: usize, entries: Range<usize>, first_slot: usize| {
                *end -= block.len();
                out[*end..*end + block.len()].copy_from_slice(block);
                self.move_slots(out, entries, first_slot, start, *end);
            };
        let mut end = out.len();
        place_block(out, &mut end, a, a_start, 0..before, 0);
        let inserted = !matches!(edit, Edit::Remove { .. });
        if inserted {
            end -= entry.len();
            out[end..end + entry.len()].copy_from_slice(entry);
            put_u16(out, slots_at + 2 * before, end as u16);
        }
        place_block(out, &mut end, b, b_start, after_from..count, before + usize::from(inserted));
        out[slots_at + 2 * new_count..end].fill(0);
        Ok(())
    }
}

/// Applies `edit` to `node`, a compact node of the batch being built, in
/// place: the entries after the edit point (packed below it) move by the
/// size difference and their slots with them; bytes freed are zeroed, as
/// `rebuild` leaves them. Returns the bytes the node then uses, or
/// `TooLarge` with the node unchanged when the result would not fit.
/// Cheaper than `rebuild` and a copy back: only the entries after the edit
/// point move, not the whole node twice.
pub fn edit_in_place(node: &mut [u8], edit: Edit<'_>) -> Result<usize, NodeError> {
    let view = NodeBytes(node);
    let (count, slots_at) = (view.count(), view.slots_at());
    let (index, entry, after_from) = match edit {
        Edit::Insert { index, entry } => (index, entry, index),
        Edit::Replace { index, entry } => (index, entry, index + 1),
        Edit::Remove { index } => (index, &[][..], index + 1),
    };
    assert!(after_from <= count, "edit at {index} of a node of {count} entries");
    let inserted = !matches!(edit, Edit::Remove { .. });
    let new_count = count - (after_from - index) + usize::from(inserted);
    // The edit point: where the entries before it end (entry `index - 1`
    // starts), and the block of entries after it, packed below.
    let top = view.entry_end(index);
    let (b_start, b_len) = match view.block(after_from, count) {
        (_, []) => (view.entry_end(after_from), 0),
        (start, block) => (start, block.len()),
    };
    let b_new_start = (top - entry.len()) as isize - b_len as isize;
    let shift = b_new_start - b_start as isize;
    let used_before = slots_at + 2 * count + (node.len() - b_start);
    let used = (used_before as isize - shift) as usize + 2 * new_count - 2 * count;
    if used > node.len() {
        return Err(NodeError::TooLarge { needed: used, size: node.len() });
    }
    // Fits: the moved block stays above the new slots (and above the old
    // ones, read below after it moved).
    let b_new_start = b_new_start as usize;
    assert!(b_new_start >= slots_at + 2 * new_count.max(count) || shift > 0);
    node.copy_within(b_start..b_start + b_len, b_new_start);
    node[top - entry.len()..top].copy_from_slice(entry);
    // Slots: those after the edit point move by `after_from - index -
    // inserted` places and their offsets by `shift`.
    let moved = |node: &mut [u8], from: usize, to: usize| {
        let at = usize::from(get_u16(node, slots_at + 2 * from));
        put_u16(node, slots_at + 2 * to, (at as isize + shift) as u16);
    };
    let first_new = index + usize::from(inserted);
    if first_new > after_from {
        for i in (after_from..count).rev() {
            moved(node, i, i + first_new - after_from);
        }
    } else {
        for i in after_from..count {
            moved(node, i, i - (after_from - first_new));
        }
    }
    if inserted {
        put_u16(node, slots_at + 2 * index, (top - entry.len()) as u16);
    }
    put_u16(node, OFF_COUNT, new_count as u16);
    let free_end = b_new_start;
    node[slots_at + 2 * new_count..free_end].fill(0);
    Ok(used)
}

impl NodeBytes<'_> {
    /// The child left of entry `index`'s key (`index` 0: the first child),
    /// for internal nodes: child `i` holds keys below key `i`.
    pub fn child(&self, index: usize) -> u32 {
        debug_assert!(!self.is_leaf());
        if index == 0 {
            get_u32(self.0, OFF_FIRST_CHILD)
        } else {
            let entry = self.entry(index - 1);
            let from_end = if self.is_counted() { COUNTED_CHILD_SIZE } else { CHILD_SIZE };
            get_u32(entry, entry.len() - from_end)
        }
    }

    /// The keys under child `index` of a counted internal node.
    pub fn child_count(&self, index: usize) -> u64 {
        debug_assert!(self.is_counted());
        get_u64(self.0, child_count_offset(self, index))
    }

    /// The keys under this node: a leaf's entries, or the sum of a counted
    /// node's child counts (O(fanout): for splits and merges, not for the
    /// common path, which adds a difference).
    pub fn total(&self) -> u64 {
        if self.is_leaf() {
            return self.count() as u64;
        }
        (0..=self.count()).map(|i| self.child_count(i)).sum()
    }

    /// Splits a node into `left` and `right` (each a whole node buffer,
    /// header copied, to be sealed), at the entry that balances their bytes.
    /// Returns the separator: the first key of `right` for a leaf (kept
    /// there); for an internal node, the middle key, which moves up (its
    /// child becomes `right`'s first child).
    pub fn split(&self, left: &mut [u8], right: &mut [u8]) -> Result<Vec<u8>, NodeError> {
        let count = self.count();
        if count < 2 {
            return Err(NodeError::Malformed("a node splits only with two entries or more"));
        }
        let total: usize = (0..count).map(|i| 2 + self.entry(i).len()).sum();
        let mut half = 0;
        let mut middle = 1;
        for i in 0..count - 1 {
            half += 2 + self.entry(i).len();
            middle = i + 1;
            if half * 2 >= total {
                break;
            }
        }
        let leaf = self.is_leaf();
        let separator = self.key(middle).to_vec();
        let right_from = if leaf { middle } else { middle + 1 };
        self.copy_range(left, 0, middle)?;
        self.copy_range(right, right_from, count)?;
        if !leaf {
            put_u32(right, OFF_FIRST_CHILD, self.child(middle + 1));
            if self.is_counted() {
                put_u64(right, OFF_FIRST_COUNT, self.child_count(middle + 1));
            }
        }
        Ok(separator)
    }

    /// Copies this node, compacted, into `out` (a node-size buffer).
    pub fn compact_into(&self, out: &mut [u8]) -> Result<(), NodeError> {
        self.copy_range(out, 0, self.count())
    }

    /// The value of leaf entry `index`, an inline value's CRC unchecked
    /// (the tree's own uses: the previous value of a change, the buffers a
    /// value holds).
    pub fn value(&self, index: usize) -> Value {
        self.decode_value(index).0
    }

    /// The value of leaf entry `index` for a reader: an inline value's
    /// bytes checked against its CRC (a value of a kind without one reads
    /// unchecked).
    pub fn checked_value(&self, index: usize) -> Result<Value, InlineMismatch> {
        match self.decode_value(index) {
            (Value::Inline(bytes), Some(crc)) if crate::util::crc::crc32c(&bytes) != crc => Err(InlineMismatch),
            (value, _) => Ok(value),
        }
    }

    /// Leaf entry `index`'s value and its stored CRC, if its kind has one.
    fn decode_value(&self, index: usize) -> (Value, Option<u32>) {
        debug_assert!(self.is_leaf());
        let entry = self.entry(index);
        let key_len = usize::from(get_u16(entry, 0));
        let body = &entry[2 + key_len..];
        let kind = body[0];
        let value_len = usize::from(get_u16(body, 1));
        let (crc, at) = match kind >= VALUE_INLINE_CHECKED {
            true => (Some(get_u32(body, 3)), 3 + VALUE_CRC_SIZE),
            false => (None, 3),
        };
        let value = match kind {
            VALUE_INDIRECT | VALUE_INDIRECT_CHECKED => Value::Indirect {
                len: get_u64(body, at),
                head: get_u32(body, at + 8),
                count: get_u32(body, at + 12),
                crc,
            },
            VALUE_EXTENTS | VALUE_EXTENTS_CHECKED => Value::Extents(
                body[at..at + value_len * 8]
                    .chunks_exact(8)
                    .map(|e| Extent { buffer: get_u32(e, 0), offset: get_u16(e, 4), len: get_u16(e, 6) })
                    .collect(),
                crc,
            ),
            _ => Value::Inline(body[at..at + value_len].to_vec()),
        };
        (value, crc)
    }

    /// Writes entries `from..to` of this node into `out`, compacted.
    fn copy_range(&self, out: &mut [u8], from: usize, to: usize) -> Result<(), NodeError> {
        let (start, block) = self.block(from, to);
        let slots_at = self.slots_at();
        let needed = slots_at + 2 * (to - from) + block.len();
        if needed > out.len() {
            return Err(NodeError::TooLarge { needed, size: out.len() });
        }
        out[..slots_at].copy_from_slice(&self.0[..slots_at]);
        put_u16(out, OFF_COUNT, (to - from) as u16);
        let end = out.len() - block.len();
        out[end..].copy_from_slice(block);
        self.move_slots(out, from..to, 0, start, end);
        out[slots_at + 2 * (to - from)..end].fill(0);
        Ok(())
    }

    /// Writes into `out`, from slot `first_slot`, the slots of `entries`,
    /// whose block started at `start` here and was copied to `end` in
    /// `out`: each moves by `end - start` (modulo 2^16, as it is stored).
    fn move_slots(&self, out: &mut [u8], entries: Range<usize>, first_slot: usize, start: usize, end: usize) {
        // Over two slices, so that the bounds are checked once and the loop
        // is vectorised (with the slot base read per slot it was not, and
        // inserts took 18% more instructions than before counted nodes).
        let slots_at = self.slots_at();
        let source = &self.0[slots_at + 2 * entries.start..slots_at + 2 * entries.end];
        let target = &mut out[slots_at + 2 * first_slot..slots_at + 2 * (first_slot + entries.len())];
        let shift = (end as u16).wrapping_sub(start as u16);
        for (to, from) in target.chunks_exact_mut(2).zip(source.chunks_exact(2)) {
            let moved = u16::from_le_bytes([from[0], from[1]]).wrapping_add(shift);
            to.copy_from_slice(&moved.to_le_bytes());
        }
    }
}

/// Joins two siblings into `out` (header from `left`): `left`'s entries,
/// then `middle` (an encoded entry: for internal nodes the separator
/// between them with `right`'s first child), then `right`'s. The result
/// may be larger than a node (then it is split again: redistribution).
pub fn join(
    left: &NodeBytes<'_>,
    middle: Option<&[u8]>,
    right: &NodeBytes<'_>,
    out: &mut [u8],
) -> Result<(), NodeError> {
    let entries =
        || (0..left.count()).map(|i| left.entry(i)).chain(middle).chain((0..right.count()).map(|i| right.entry(i)));
    let count = entries().count();
    let slots_at = left.slots_at();
    assert_eq!(left.0[OFF_KIND], right.0[OFF_KIND], "siblings are of one kind");
    let needed = slots_at + entries().map(|e| 2 + e.len()).sum::<usize>();
    if needed > out.len() || count > usize::from(u16::MAX) {
        return Err(NodeError::TooLarge { needed, size: out.len() });
    }
    out[..slots_at].copy_from_slice(&left.0[..slots_at]);
    put_u16(out, OFF_COUNT, count as u16);
    let mut end = out.len();
    for (slot, entry) in entries().enumerate() {
        end -= entry.len();
        out[end..end + entry.len()].copy_from_slice(entry);
        put_u16(out, slots_at + 2 * slot, end as u16);
    }
    out[slots_at + 2 * count..end].fill(0);
    Ok(())
}

/// Points child `index` of an internal node (in a buffer being built, not
/// yet sealed) at `child`.
pub fn set_child(node: &mut [u8], index: usize, child: u32) {
    if index == 0 {
        put_u32(node, OFF_FIRST_CHILD, child);
    } else {
        let view = NodeBytes(node);
        let from_end = if view.is_counted() { COUNTED_CHILD_SIZE } else { CHILD_SIZE };
        let at = view.entry_end(index - 1) - from_end;
        put_u32(node, at, child);
    }
}

/// Where the count of child `index` of a counted node lies: in the header
/// for the first child, else the last 8 bytes of entry `index - 1`. For a
/// change in place (a node written in this batch) of those 8 bytes only.
pub fn child_count_offset(view: &NodeBytes<'_>, index: usize) -> usize {
    debug_assert!(view.is_counted() && index <= view.count());
    if index == 0 {
        OFF_FIRST_COUNT
    } else {
        view.entry_end(index - 1) - 8
    }
}

/// Sets the count of child `index` of a counted node (in a buffer being
/// built, not yet sealed).
pub fn set_child_count(node: &mut [u8], index: usize, count: u64) {
    assert!(count > 0, "a child without keys is removed, not counted");
    let at = child_count_offset(&NodeBytes(node), index);
    put_u64(node, at, count);
}

/// Encodes a counted internal entry: a separator, the child at or above
/// it, and the keys under that child.
pub fn internal_entry(out: &mut Vec<u8>, key: &[u8], child: u32, count: u64) {
    out.clear();
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&child.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
}

/// Encodes a leaf entry (for `Edit`). An inline value gets its CRC here;
/// an extent or indirect value is written with the CRC it carries (the
/// tree inserts none without one), or, carrying none, as an unchecked kind
/// (an entry decoded from an old node and encoded again).
pub fn leaf_entry(out: &mut Vec<u8>, key: &[u8], value: &Value) {
    out.clear();
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(key);
    let kind_and_crc = |out: &mut Vec<u8>, checked: u8, unchecked: u8, len: usize, crc: Option<u32>| {
        out.push(if crc.is_some() { checked } else { unchecked });
        out.extend_from_slice(&(len as u16).to_le_bytes());
        if let Some(crc) = crc {
            out.extend_from_slice(&crc.to_le_bytes());
        }
    };
    match value {
        Value::Inline(bytes) => {
            let crc = crate::util::crc::crc32c(bytes);
            kind_and_crc(out, VALUE_INLINE_CHECKED, VALUE_INLINE, bytes.len(), Some(crc));
            out.extend_from_slice(bytes);
        }
        Value::Indirect { len, head, count, crc } => {
            kind_and_crc(out, VALUE_INDIRECT_CHECKED, VALUE_INDIRECT, INDIRECT_SIZE, *crc);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&head.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        Value::Extents(extents, crc) => {
            kind_and_crc(out, VALUE_EXTENTS_CHECKED, VALUE_EXTENTS, extents.len(), *crc);
            for extent in extents {
                out.extend_from_slice(&extent.buffer.to_le_bytes());
                out.extend_from_slice(&extent.offset.to_le_bytes());
                out.extend_from_slice(&extent.len.to_le_bytes());
            }
        }
    }
}

/// A hint that the `len` bytes from `start` (a node) are read soon: each
/// cache line is fetched, all at once. Reads nothing into the program.
#[inline]
pub fn prefetch_lines(start: *const u8, len: usize) {
    for line in (0..len).step_by(64) {
        prefetch_line(start.wrapping_add(line));
    }
}

/// A hint that the line holding `at` is read soon (any address: the
/// callers form it with wrapping arithmetic). Reads nothing into the
/// program.
#[inline(always)]
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing into the program and
    // never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Stamps a rebuilt node with its generation and CRC: the last write
/// before it is flushed.
pub fn seal(node: &mut [u8], generation: u64) {
    let fields = seal_fields(node, generation);
    node[SEAL_OFFSET..SEAL_OFFSET + fields.len()].copy_from_slice(&fields);
}

/// Where `seal_fields` go in a node: the generation, then the CRC.
pub const SEAL_OFFSET: usize = OFF_GENERATION;

/// What `seal` would store, computed from a node left in place: the
/// generation and the CRC as 12 bytes for `SEAL_OFFSET`.
pub fn seal_fields(node: &[u8], generation: u64) -> [u8; 12] {
    const _: () = assert!(OFF_GENERATION + 8 == OFF_CRC);
    let crc = crate::util::crc::crc32c(&node[..OFF_GENERATION]);
    let crc = crate::util::crc::crc32c_append(crc, &generation.to_le_bytes());
    let crc = crate::util::crc::crc32c_append(crc, &node[OFF_CRC + 4..]);
    let mut fields = [0u8; 12];
    fields[..8].copy_from_slice(&generation.to_le_bytes());
    fields[8..].copy_from_slice(&crc.to_le_bytes());
    fields
}

fn node_crc(bytes: &[u8]) -> u32 {
    let crc = crate::util::crc::crc32c(&bytes[..OFF_CRC]);
    crate::util::crc::crc32c_append(crc, &bytes[OFF_CRC + 4..])
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], NodeError> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(NodeError::Malformed("an entry runs past the node"))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u16(&mut self) -> Result<u16, NodeError> {
        Ok(get_u16(self.take(2)?, 0))
    }
}

/// `bytes` as pairs (`<[u8]>::as_chunks::<2>`, stable only since Rust 1.88,
/// after this crate's minimum); an odd last byte is left out.
#[inline(always)]
fn pairs(bytes: &[u8]) -> &[[u8; 2]] {
    // SAFETY: `[u8; 2]` has size 2 and alignment 1, so the first
    // `len / 2` pairs of `bytes` are valid `[u8; 2]`s in its memory, borrowed
    // for as long as `bytes` is.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<[u8; 2]>(), bytes.len() / 2) }
}

/// Key order (bytewise, then shorter first), eight bytes at a time: the
/// same answer as `<[u8]>::cmp`, without a call into the C library's
/// memcmp for the short keys a search compares (issue 36: that call was
/// 5-8% of a GET).
#[inline(always)]
fn compare_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let common = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= common {
        // Equal words need no byte swap: only the first that differs does.
        let x = u64::from_ne_bytes(a[at..at + 8].try_into().expect("eight bytes"));
        let y = u64::from_ne_bytes(b[at..at + 8].try_into().expect("eight bytes"));
        if x != y {
            return u64::from_be(x).cmp(&u64::from_be(y));
        }
        at += 8;
    }
    while at < common {
        if a[at] != b[at] {
            return a[at].cmp(&b[at]);
        }
        at += 1;
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Inline),
            proptest::collection::vec(
                (any::<u32>(), any::<u16>(), 1..=u16::MAX).prop_map(|(b, o, l)| Extent {
                    buffer: b,
                    offset: o,
                    len: l
                }),
                0..4
            )
            .prop_flat_map(
                |extents| proptest::option::of(any::<u32>()).prop_map(move |crc| Value::Extents(extents.clone(), crc))
            ),
            (any::<u64>(), any::<u32>(), any::<u32>(), proptest::option::of(any::<u32>()))
                .prop_map(|(len, head, count, crc)| Value::Indirect { len, head, count, crc }),
        ]
    }

    fn leaf() -> impl Strategy<Value = Node> {
        (any::<u64>(), proptest::collection::btree_map(proptest::collection::vec(any::<u8>(), 0..24), value(), 0..24))
            .prop_map(|(generation, map)| Node::Leaf { generation, entries: map.into_iter().collect() })
    }

    /// Internal nodes of both kinds: counted (kind 3, counts of up to 2^32
    /// each so that they sum without overflow) and not (kind 2).
    fn internal() -> impl Strategy<Value = Node> {
        (any::<u64>(), 1..8u8, proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..24), 0..24))
            .prop_flat_map(|(generation, level, keys)| {
                let n = keys.len();
                let counts = proptest::option::of(proptest::collection::vec(1..=u64::from(u32::MAX), n + 1));
                (Just(generation), Just(level), Just(keys), proptest::collection::vec(any::<u32>(), n + 1), counts)
            })
            .prop_map(|(generation, level, keys, children, counts)| Node::Internal {
                generation,
                level,
                keys: keys.into_iter().collect(),
                children,
                counts,
            })
    }

    /// Counted internal nodes only.
    fn counted() -> impl Strategy<Value = Node> {
        internal().prop_filter("counted", |node| matches!(node, Node::Internal { counts: Some(_), .. }))
    }

    proptest! {
        /// The search's key order is the slices' order, for keys that share
        /// prefixes of every length (so every chunk and tail path runs).
        #[test]
        fn compare_keys_is_slice_order(prefix in proptest::collection::vec(any::<u8>(), 0..20),
                                       a in proptest::collection::vec(any::<u8>(), 0..12),
                                       b in proptest::collection::vec(any::<u8>(), 0..12)) {
            let a = [&prefix[..], &a[..]].concat();
            let b = [&prefix[..], &b[..]].concat();
            prop_assert_eq!(compare_keys(&a, &b), a.cmp(&b));
            prop_assert_eq!(compare_keys(&a, &a), std::cmp::Ordering::Equal);
            prop_assert_eq!(compare_keys(&a[..a.len() / 2], &a), a[..a.len() / 2].cmp(&a));
        }
        #[test]
        fn nodes_round_trip(node in prop_oneof![leaf(), internal()]) {
            let mut bytes = vec![0u8; 2048];
            node.encode(&mut bytes).unwrap();
            prop_assert_eq!(Node::decode(&bytes).unwrap(), node);
        }

        #[test]
        fn every_flipped_bit_is_refused(node in prop_oneof![leaf(), internal()], bit in any::<prop::sample::Index>()) {
            // The size nodes_round_trip encodes into: the strategies can
            // make a node over 1 KiB (a run found one of 1,044 bytes).
            let mut bytes = vec![0u8; 2048];
            node.encode(&mut bytes).unwrap();
            let bit = bit.index(bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(Node::decode(&bytes).is_err(), "bit {} flipped unnoticed", bit);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = Node::decode(&bytes);
        }
    }

    /// A random edit script applied both to node bytes (the data path) and
    /// to the owned model; the bytes must always decode to the model.
    #[derive(Clone, Debug)]
    enum Op {
        Upsert(Vec<u8>, Value),
        Remove(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (proptest::collection::vec(any::<u8>(), 0..12), value()).prop_map(|(k, v)| Op::Upsert(k, v)),
            any::<usize>().prop_map(Op::Remove),
        ]
    }

    proptest! {
        #[test]
        fn byte_edits_match_the_model(ops in proptest::collection::vec(op(), 1..60), size in prop::sample::select(vec![512usize, 1024, 2048])) {
            let mut model: std::collections::BTreeMap<Vec<u8>, Value> = std::collections::BTreeMap::new();
            let mut bytes = vec![0u8; size];
            Node::Leaf { generation: 0, entries: Vec::new() }.encode(&mut bytes).unwrap();
            let mut next = vec![0u8; size];
            let mut entry = Vec::new();
            for (step, op) in ops.into_iter().enumerate() {
                let view = NodeBytes(&bytes);
                let edit = match &op {
                    Op::Upsert(key, value) => {
                        leaf_entry(&mut entry, key, value);
                        match view.search(key) {
                            Ok(index) => Edit::Replace { index, entry: &entry },
                            Err(index) => Edit::Insert { index, entry: &entry },
                        }
                    }
                    Op::Remove(i) if view.count() > 0 => Edit::Remove { index: i % view.count() },
                    Op::Remove(_) => continue,
                };
                let result = view.rebuild(&mut next, edit);
                // The same edit in place gives the same bytes, or is refused
                // alike (and leaves the node as it was).
                let mut in_place = bytes.clone();
                match (&result, edit_in_place(&mut in_place, edit)) {
                    (Ok(()), Ok(used)) => {
                        prop_assert_eq!(&in_place, &next);
                        prop_assert_eq!(used, NodeBytes(&next).used());
                    }
                    (Err(_), Err(_)) => prop_assert_eq!(&in_place, &bytes),
                    (a, b) => prop_assert!(false, "rebuild {:?}, in place {:?}", a, b),
                }
                match result {
                    Ok(()) => {
                        match op {
                            Op::Upsert(key, value) => {
                                model.insert(key, value);
                            }
                            Op::Remove(i) => {
                                let key = model.keys().nth(i % model.len()).unwrap().clone();
                                model.remove(&key);
                            }
                        }
                        seal(&mut next, step as u64);
                        std::mem::swap(&mut bytes, &mut next);
                    }
                    Err(NodeError::TooLarge { .. }) => {} // full: the tree would split
                    Err(other) => prop_assert!(false, "{other}"),
                }
                let decoded = Node::decode(&bytes).unwrap();
                let expected = Node::Leaf {
                    generation: get_u64(&bytes, OFF_GENERATION),
                    entries: model.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                };
                prop_assert_eq!(&decoded, &expected);
                prop_assert_eq!(NodeBytes(&bytes).used(), expected.encoded_len());
            }
        }
    }

    proptest! {
        #[test]
        fn splits_keep_every_entry_in_order(node in prop_oneof![leaf(), internal()]) {
            let size = 2048;
            let mut bytes = vec![0u8; size];
            node.encode(&mut bytes).unwrap();
            let view = NodeBytes(&bytes);
            prop_assume!(view.count() >= 2);
            let (mut left, mut right) = (vec![0u8; size], vec![0u8; size]);
            let separator = view.split(&mut left, &mut right).unwrap();
            seal(&mut left, 7);
            seal(&mut right, 7);
            let (l, r) = (Node::decode(&left).unwrap(), Node::decode(&right).unwrap());
            match (node, l, r) {
                (Node::Leaf { entries, .. }, Node::Leaf { entries: le, .. }, Node::Leaf { entries: re, .. }) => {
                    prop_assert!(!le.is_empty() && !re.is_empty());
                    prop_assert_eq!(&re[0].0, &separator);
                    prop_assert!(le.iter().all(|(k, _)| *k < separator));
                    prop_assert_eq!([le, re].concat(), entries);
                }
                (
                    Node::Internal { keys, children, counts, .. },
                    Node::Internal { keys: lk, children: lc, counts: lcounts, .. },
                    Node::Internal { keys: rk, children: rc, counts: rcounts, .. },
                ) => {
                    // The separator moved up; children, and their counts, are all kept.
                    prop_assert!(lk.iter().all(|k| *k < separator) && rk.iter().all(|k| *k > separator));
                    prop_assert_eq!([lk.clone(), vec![separator.clone()], rk].concat(), keys);
                    prop_assert_eq!([lc, rc].concat(), children);
                    prop_assert_eq!(lcounts.zip(rcounts).map(|(l, r)| [l, r].concat()), counts);
                }
                _ => prop_assert!(false, "a split changed the node kind"),
            }
        }

        #[test]
        fn set_child_points_any_child(node in internal(), pick in any::<prop::sample::Index>(), child in any::<u32>()) {
            let mut bytes = vec![0u8; 2048];
            node.encode(&mut bytes).unwrap();
            let Node::Internal { keys, mut children, generation, level, counts } = node else { unreachable!() };
            let index = pick.index(children.len());
            set_child(&mut bytes, index, child);
            seal(&mut bytes, generation);
            children[index] = child;
            prop_assert_eq!(NodeBytes(&bytes).child(index), child);
            prop_assert_eq!(Node::decode(&bytes).unwrap(), Node::Internal { generation, level, keys, children, counts });
        }

        #[test]
        fn set_child_count_changes_one_count(node in counted(), pick in any::<prop::sample::Index>(), count in 1..=u64::from(u32::MAX)) {
            let mut bytes = vec![0u8; 2048];
            node.encode(&mut bytes).unwrap();
            let Node::Internal { keys, children, generation, level, counts: Some(mut counts) } = node else { unreachable!() };
            let index = pick.index(children.len());
            set_child_count(&mut bytes, index, count);
            seal(&mut bytes, generation);
            counts[index] = count;
            let view = NodeBytes(&bytes);
            prop_assert_eq!(view.child_count(index), count);
            prop_assert_eq!(view.total(), counts.iter().sum::<u64>());
            let expected = Node::Internal { generation, level, keys, children, counts: Some(counts) };
            prop_assert_eq!(Node::decode(&bytes).unwrap(), expected);
        }

        #[test]
        fn a_zero_count_is_refused(node in counted(), pick in any::<prop::sample::Index>()) {
            let mut bytes = vec![0u8; 2048];
            node.encode(&mut bytes).unwrap();
            let Node::Internal { children, generation, .. } = node else { unreachable!() };
            let at = child_count_offset(&NodeBytes(&bytes), pick.index(children.len()));
            put_u64(&mut bytes, at, 0);
            seal(&mut bytes, generation);
            prop_assert_eq!(Node::decode(&bytes), Err(NodeError::Malformed("a counted node names a child without keys")));
        }
    }

    #[test]
    fn counted_nodes_refuse_overflowing_counts_and_level_zero() {
        let node = Node::Internal {
            generation: 3,
            level: 1,
            keys: vec![b"m".to_vec()],
            children: vec![1, 2],
            counts: Some(vec![u64::MAX, 1]),
        };
        let mut bytes = vec![0u8; 512];
        node.encode(&mut bytes).unwrap();
        assert_eq!(Node::decode(&bytes), Err(NodeError::Malformed("a counted node's counts overflow")));
        let Node::Internal { generation, keys, children, .. } = node else { unreachable!() };
        let node = Node::Internal { generation, level: 1, keys, children, counts: Some(vec![5, 7]) };
        node.encode(&mut bytes).unwrap();
        assert_eq!(NodeBytes(&bytes).total(), 12);
        assert_eq!(Node::decode(&bytes).unwrap(), node);
        bytes[OFF_LEVEL] = 0;
        seal(&mut bytes, generation);
        assert_eq!(Node::decode(&bytes), Err(NodeError::Malformed("level disagrees with kind")));
    }

    /// Value checksums: an inline value's bytes changed after its node was
    /// sealed (and validated) fail `checked_value`; an entry of the kinds
    /// written before checksums (1 to 3) reads, unchecked, as before.
    #[test]
    fn inline_values_are_checked_and_old_kinds_read_unchecked() {
        let extents = vec![Extent { buffer: 7, offset: 16, len: 300 }];
        let entries = vec![
            (b"a".to_vec(), Value::Inline(b"hello".to_vec())),
            (b"b".to_vec(), Value::Extents(extents.clone(), Some(0xdead_beef))),
        ];
        let mut bytes = vec![0u8; 512];
        Node::Leaf { generation: 1, entries }.encode(&mut bytes).unwrap();
        let view = NodeBytes(&bytes);
        assert_eq!(view.checked_value(0), Ok(Value::Inline(b"hello".to_vec())));
        assert_eq!(view.checked_value(1), Ok(Value::Extents(extents.clone(), Some(0xdead_beef))));
        let at = view.entry_offset(0) + view.entry(0).len() - 1;
        bytes[at] ^= 1;
        assert_eq!(NodeBytes(&bytes).checked_value(0), Err(InlineMismatch), "a changed byte");
        assert_eq!(NodeBytes(&bytes).value(0), Value::Inline(b"helln".to_vec()), "the tree's own unchecked view");

        // The same entries as an older build wrote them: kinds 1 and 2.
        let mut old = Vec::new();
        for (key, kind, body) in [
            (b"a", VALUE_INLINE, b"hello".to_vec()),
            (b"b", VALUE_EXTENTS, {
                let mut e = 7u32.to_le_bytes().to_vec();
                e.extend_from_slice(&16u16.to_le_bytes());
                e.extend_from_slice(&300u16.to_le_bytes());
                e
            }),
        ] {
            let mut entry = vec![1, 0];
            entry.extend_from_slice(key);
            entry.push(kind);
            let len = if kind == VALUE_INLINE { body.len() } else { body.len() / 8 };
            entry.extend_from_slice(&(len as u16).to_le_bytes());
            entry.extend_from_slice(&body);
            old.push(entry);
        }
        let mut bytes = vec![0u8; 512];
        put_u32(&mut bytes, OFF_MAGIC, NODE_MAGIC);
        bytes[OFF_KIND] = KIND_LEAF;
        put_u16(&mut bytes, OFF_COUNT, 2);
        let mut end = bytes.len();
        for (i, entry) in old.iter().enumerate() {
            end -= entry.len();
            bytes[end..end + entry.len()].copy_from_slice(entry);
            put_u16(&mut bytes, NODE_HEADER_SIZE + 2 * i, end as u16);
        }
        seal(&mut bytes, 1);
        validate(&bytes).unwrap();
        let view = NodeBytes(&bytes);
        assert_eq!(view.checked_value(0), Ok(Value::Inline(b"hello".to_vec())));
        assert_eq!(view.checked_value(1), Ok(Value::Extents(extents, None)), "no CRC: unchecked");
    }

    #[test]
    fn a_node_that_does_not_fit_is_refused() {
        let entries = (0..100u32).map(|i| (i.to_be_bytes().to_vec(), Value::Inline(vec![0; 30]))).collect();
        let node = Node::Leaf { generation: 1, entries };
        assert!(matches!(node.encode(&mut [0u8; 512]), Err(NodeError::TooLarge { .. })));
        assert!(node.encode(&mut vec![0u8; 8192]).is_ok());
    }
}
