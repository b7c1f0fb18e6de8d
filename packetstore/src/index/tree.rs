//! The persistent B+ tree (issue 4): an ordered map from byte-string keys
//! to inline values or extent lists of retained pool buffers, in pool
//! buffers, copy on write, committed in batches through two meta slots.
//! One writer; readers run on the writer's thread (see "Readers" below).
//!
//! # Commit, step by step (`Tree::commit`)
//!
//! 1. Every node written in the batch (a fresh copy: nodes reachable from
//!    the committed root are never written) is sealed with the new
//!    generation and its CRC, and flushed; so are the bytes of the value
//!    extents inserted in the batch.
//! 2. Fence: the new version's nodes and values are durable.
//! 3. The meta slot the previous commit did not use gets {generation, root,
//!    height, len, high-water mark, crc} as one line, flushed.
//! 4. Fence: the new version is the tree. A power failure before it leaves
//!    the previous slot, whose nodes are intact, or the new one.
//! 5. The buffers the batch stopped referencing (replaced nodes, values
//!    overwritten or deleted) lose the tree's reference: at once, or, with
//!    a read lease (`set_read_lease`, for one-sided readers in other
//!    processes: docs/one-sided-reads.md), once the lease has passed since
//!    this step (`release_leased`), so that a reader that started on the
//!    previous version and finished within the lease read no reused buffer.
//!
//! `commit` runs all of it. A caller that fences anyway (the key-value
//! store, whose log commits every turn) runs it in phases instead, each
//! after one of its own fences: `prepare` (step 1), `write_meta` (step 3),
//! `finish` (step 5). Changes made meanwhile go to the next batch: the
//! prepared nodes are copied, never written again.
//!
//! Invariant: a node reachable from a durable meta slot is never written,
//! and no buffer the durable version references is free.
//!
//! # Opening in O(1), and no leaks by construction
//!
//! Opening reads the meta slots and nothing else: the first get reads only
//! its path. The buffers the tree references (nodes and value extents) are
//! found later by a *reclamation walk* of the opened version, in bounded
//! steps (`reclaim_step`), or at once when space runs short. Until it ends,
//! the buffers below the meta's high-water mark are held (`Buffers::
//! hold_below`): not free, so nothing the opened version references can be
//! handed out, and every buffer the tree lets go is released only after the
//! walk. Buffers above the mark were never referenced by a durable version,
//! so they are free at once. When the walk ends, every held buffer nobody
//! references becomes free: nodes and values of interrupted batches cannot
//! leak, and no freed-node list needs keeping durable.
//!
//! # Shape
//!
//! Every leaf is at depth `height`; keys are strictly ordered within a node
//! and within the bounds its parent gives it; a non-root node is never
//! emptier than `fill_min` bytes (merged with or refilled from a sibling
//! when a change leaves it under a quarter full); the root is a leaf, or an
//! internal node with at least one separator. `check_invariants` asserts
//! all of it, and the reference counts.
//!
//! # Order statistics
//!
//! Every internal node is a counted node (`node.rs`, kind 3): with each
//! child, the number of keys under it. Invariant: every count is exact in
//! the working version, at every moment (not only at commits): an insert
//! of a new key adds 1 and a delete subtracts 1 along the path (in place
//! in nodes this batch already wrote, whose ancestors are always fresh
//! too), and splits, merges, redistributions and root changes sum their
//! nodes' counts afresh. So `count` (keys in a range), `rank` (keys below
//! a key), `nth` (the key at a rank) and `range_from_rank` read only one
//! or two paths: O(log n) nodes. `check_invariants` checks every count.
//!
//! A tree written before order statistics has internal nodes without
//! counts (kind 2). It opens and reads (`get`, `range`, scans) as before;
//! the count queries and every change return `TreeError::Uncounted`, so no
//! tree mixes the kinds (the root's kind is the tree's), until `add_counts`
//! rewrites its internal nodes, copy on write, durable at the next commit.
//!
//! # Readers
//!
//! Reads (`get`, `range`, `first`, `last`, the order statistics) take
//! `&self` and read node bytes in place, so they cannot overlap a change
//! on the same tree. Concurrent
//! readers on other threads are not supported in this version: freed nodes
//! are reused after one commit, so a reader of an older version would need
//! the writer to know its version (LMDB's reader table). The servers run
//! one event loop per tree, where reads and writes of a turn alternate.

use std::cell::RefCell;
use std::collections::BTreeMap;

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::BufferError;
use crate::index::indirect;
use crate::index::node::{
    self, Edit, Node, NodeBytes, NodeError, Value, COUNTED_HEADER_SIZE, NODE_HEADER_SIZE, VALUE_CRC_SIZE,
};
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::pool::layout::{get_u32, get_u64, put_u32, put_u64};
use crate::util::idhash::IdHashSet;

// The tree's other parts, each an `impl Tree` or a type of its own.
mod check;
mod finder;
pub use finder::FinderMode;
mod range;
mod rank;
mod release;
mod upgrade;

pub use check::ValuesReport;
use range::own;
pub use range::Range;

/// Where the two meta slots live: unused bytes of the header page.
pub const META_SLOT_OFFSETS: [u64; 2] = [1024, 1088];
const _: () = assert!(crate::pool::file::HDR_READER_INSTANCE + 8 <= META_SLOT_OFFSETS[0], "after the pool's fields");
const META_SIZE: usize = 64;
const META_MAGIC: u32 = 0x4D54_5350; // "PSTM"

/// A committed version pinned for a reader that spans loop turns
/// (`Tree::pin_committed`): its nodes and values stay as they are until
/// it is unpinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Version(Meta);

/// A committed (or working) version of the tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Meta {
    generation: u64,
    root: Option<u32>,
    /// Levels above the leaves (0: the root is a leaf).
    height: u8,
    len: u64,
    /// Every buffer this version references is below it.
    high_water: u32,
}

impl Meta {
    fn encode(&self) -> [u8; META_SIZE] {
        let mut b = [0u8; META_SIZE];
        put_u32(&mut b, 0, META_MAGIC);
        put_u64(&mut b, 8, self.generation);
        put_u32(&mut b, 16, self.root.map_or(u32::MAX, |r| r));
        b[20] = self.height;
        put_u64(&mut b, 24, self.len);
        put_u32(&mut b, 32, self.high_water);
        let crc = crate::util::crc::crc32c(&b[..60]);
        put_u32(&mut b, 60, crc);
        b
    }

    fn decode(b: &[u8]) -> Option<Meta> {
        if get_u32(b, 0) != META_MAGIC || get_u32(b, 60) != crate::util::crc::crc32c(&b[..60]) {
            return None;
        }
        let root = get_u32(b, 16);
        Some(Meta {
            generation: get_u64(b, 8),
            root: (root != u32::MAX).then_some(root),
            height: b[20],
            len: get_u64(b, 24),
            high_water: get_u32(b, 32),
        })
    }
}

/// A committed version as a one-sided reader finds it in a meta slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaSlot {
    pub generation: u64,
    pub root: Option<u32>,
    /// Levels above the leaves (0: the root is a leaf).
    pub height: u8,
}

/// Decodes a meta slot's 64 bytes (`META_SLOT_OFFSETS`): None unless its
/// magic and CRC hold.
pub fn decode_meta_slot(bytes: &[u8; 64]) -> Option<MetaSlot> {
    Meta::decode(bytes).map(|meta| MetaSlot { generation: meta.generation, root: meta.root, height: meta.height })
}

/// Whether either meta slot of `pool` holds a valid meta (magic and CRC):
/// a tree was committed there. Reads 128 bytes, writes nothing (the kind
/// inference, `kind::infer`).
pub fn has_committed_version(pool: &Pool) -> bool {
    META_SLOT_OFFSETS.iter().any(|&offset| {
        let mut bytes = [0u8; META_SIZE];
        pool.read(offset, &mut bytes);
        Meta::decode(&bytes).is_some()
    })
}

/// Size limits of keys and values, checked against the node size so that
/// a node always holds three of the largest entries (a split leaves both
/// halves non-empty; `fill_min` follows from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeConfig {
    pub key_size_max: usize,
    /// Bytes of a value in its leaf: an inline value's length, or 8 per
    /// extent.
    pub value_size_max: usize,
}

impl TreeConfig {
    /// The defaults for a node size: a third of the node per entry; keys
    /// up to 512 bytes (less in nodes under 2 KiB), leaving values at least
    /// 64 bytes (eight extents) or half the room.
    /// The key limit is the one trees had before value checksums (the
    /// value's CRC comes out of the value's share), so that every key an
    /// older tree holds can still be written.
    pub fn for_node_size(node_size: usize) -> TreeConfig {
        let room = (node_size - NODE_HEADER_SIZE) / 3 - (2 + 2 + 3);
        let key_size_max = crate::limits::KEY_SIZE_MAX.min(room.saturating_sub(64).max(room / 2));
        TreeConfig { key_size_max, value_size_max: room - key_size_max - VALUE_CRC_SIZE }
    }

    /// The largest leaf entry, with its slot (a value with its CRC).
    fn leaf_entry_max(&self) -> usize {
        2 + 2 + self.key_size_max + 3 + VALUE_CRC_SIZE + self.value_size_max
    }

    /// The largest (counted) internal entry, with its slot: the key, the
    /// child u32 and its count u64.
    fn internal_entry_max(&self) -> usize {
        2 + 2 + self.key_size_max + 4 + 8
    }

    fn check(&self, node_size: usize) -> Result<(), TreeError> {
        let leaves_fit = NODE_HEADER_SIZE + 3 * self.leaf_entry_max() <= node_size;
        let internals_fit = COUNTED_HEADER_SIZE + 3 * self.internal_entry_max() <= node_size;
        if !leaves_fit || !internals_fit || self.key_size_max > crate::limits::KEY_SIZE_MAX {
            return Err(TreeError::Config(format!(
                "keys of {} and values of {} bytes do not fit three to a {node_size}-byte node \
                 (keys at most {})",
                self.key_size_max,
                self.value_size_max,
                crate::limits::KEY_SIZE_MAX
            )));
        }
        Ok(())
    }
}

/// Errors of the tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("key of {size} bytes is over the limit of {limit}")]
    KeyTooLarge { size: usize, limit: usize },
    #[error("value of {size} bytes in its leaf is over the limit of {limit}")]
    ValueTooLarge { size: usize, limit: usize },
    #[error("invalid value: {0}")]
    InvalidValue(String),
    #[error("tree configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Buffers(#[from] BufferError),
    #[error("tree node {node}: {error}")]
    Corrupt { node: u32, error: NodeError },
    /// A value whose bytes no longer match the CRC stored with it; `key`
    /// is the tree key. Never its bytes.
    #[error("corrupt value for tree key '{}': checksum mismatch", key_text(key))]
    CorruptValue { key: Vec<u8> },
    #[error("commit failed, the tree accepts nothing more: {0}")]
    CommitFailed(std::io::Error),
    #[error("the tree accepts no more changes after an earlier failure: {0}")]
    Poisoned(String),
    #[error(
        "the tree was written before order statistics (internal nodes without counts): \
         it reads, but counts and changes need `Tree::add_counts` first"
    )]
    Uncounted,
}

/// The reclamation walk of the version found at open (module comment).
struct Walk {
    /// Nodes still to visit, with the level each must have.
    stack: Vec<(u32, u8)>,
    /// References the tree dropped meanwhile, released when the walk ends.
    deferred: Vec<u32>,
}

/// A commit in progress: the version it makes the tree, and the references
/// to drop once it is durable.
struct Prepared {
    meta: Meta,
    release: Vec<u32>,
    meta_written: bool,
}

/// DRAM images of the batch's nodes (page domain): a private anonymous
/// mapping with a slot per buffer (virtual: only slots used take memory),
/// and a bit per buffer saying the node's image is there, not in the pool.
/// The page domain writes a pool page back at every sync and faults on the
/// next store to it; a node written many times between two checkpoints is
/// better kept out of the pool until the checkpoint writes it once.
struct Shadow {
    base: *mut u8,
    len: usize,
    node_size: usize,
    bits: Vec<u64>,
}

impl Shadow {
    fn new(buffer_count: u32, node_size: usize) -> std::io::Result<Shadow> {
        let len = buffer_count as usize * node_size;
        // SAFETY: an anonymous private mapping the kernel places; reserved
        // lazily (MAP_NORESERVE), so untouched slots cost nothing.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_ANONYMOUS | libc::MAP_PRIVATE | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Shadow { base: base.cast(), len, node_size, bits: vec![0; (buffer_count as usize).div_ceil(64)] })
    }

    fn has(&self, node: u32) -> bool {
        self.bits[(node / 64) as usize] & (1 << (node % 64)) != 0
    }

    fn set(&mut self, node: u32, on: bool) {
        let bit = 1u64 << (node % 64);
        if on {
            self.bits[(node / 64) as usize] |= bit;
        } else {
            self.bits[(node / 64) as usize] &= !bit;
        }
    }

    /// The slot of `node`.
    ///
    /// # Safety
    /// The caller does not keep the slice across a write to the same slot
    /// (the tree writes slots only through `&mut self`), nor beyond the
    /// shadow's life.
    unsafe fn slot<'a>(&self, node: u32) -> &'a [u8] {
        let at = node as usize * self.node_size;
        assert!(at + self.node_size <= self.len);
        // SAFETY: inside the mapping (asserted); see the contract above.
        unsafe { std::slice::from_raw_parts(self.base.add(at), self.node_size) }
    }

    /// Where the slot of `node` starts (for a prefetch: no access).
    fn slot_address(&self, node: u32) -> *const u8 {
        self.base.wrapping_add(node as usize * self.node_size).cast_const()
    }

    /// The slot of `node`, to change in place.
    fn slot_mut(&mut self, node: u32) -> &mut [u8] {
        let at = node as usize * self.node_size;
        assert!(at + self.node_size <= self.len);
        // SAFETY: inside the mapping (asserted); `&mut self` excludes
        // readers of the shadow through this tree for the slice's life.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(at), self.node_size) }
    }

    fn write(&mut self, node: u32, offset: usize, bytes: &[u8]) {
        let at = node as usize * self.node_size + offset;
        assert!(offset + bytes.len() <= self.node_size && at + bytes.len() <= self.len);
        // SAFETY: inside the mapping (asserted); `&mut self` excludes
        // readers of the shadow through this tree.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(at), bytes.len()) };
    }
}

// SAFETY: the mapping is owned by the shadow and reached only through the
// tree that owns it (`&self` reads, `&mut self` writes).
unsafe impl Send for Shadow {}

impl Drop for Shadow {
    fn drop(&mut self) {
        // SAFETY: our mapping; no slice of it outlives the tree.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// What `check_invariants` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    pub height: u8,
    pub nodes: u64,
    pub leaves: u64,
    pub entries: u64,
    /// Bytes used by entries, slots and headers, over all nodes.
    pub bytes_used: u64,
    /// The values' bytes (inline or in value buffers), and those inline.
    pub value_bytes: u64,
    pub inline_bytes: u64,
    /// References the tree holds on each buffer: one per node, one per
    /// value extent, and those it drops at the next commit.
    pub refs: BTreeMap<u32, u32>,
}

pub struct Tree {
    config: TreeConfig,
    node_size: usize,
    buffer_count: u32,
    /// Under this many bytes a non-root node is merged or refilled.
    underfull: usize,
    /// Bytes every non-root leaf and internal node keeps (`check_invariants`).
    fill_min_leaf: usize,
    fill_min_internal: usize,
    committed: Meta,
    work: Meta,
    /// Which meta slot holds `committed`.
    slot: usize,
    /// Nodes written in this batch: writable until the commit.
    fresh: IdHashSet<u32>,
    /// References dropped at the next commit: nodes of the committed version
    /// replaced, nodes written and dropped in this batch, values replaced.
    release_at_commit: Vec<u32>,
    /// Value extents inserted in this batch: flushed at commit.
    flush_at_commit: Vec<Extent>,
    /// Index buffers written in this batch (indirect values): flushed at
    /// commit, always (no log holds them).
    flush_index_at_commit: Vec<u32>,
    walk: Option<Walk>,
    /// One-sided readers' lease: how long a buffer a commit stopped
    /// referencing stays unreleased after the new meta slot is durable.
    read_lease: Option<std::time::Duration>,
    /// Buffers commits stopped referencing, waiting for the read lease:
    /// (release no earlier than, buffers), oldest first.
    leased: std::collections::VecDeque<(std::time::Instant, Vec<u32>)>,
    /// Committed versions pinned for readers that span loop turns (a
    /// snapshot streamed to a follower): while any is, what commits stop
    /// referencing is held here, not released, so no pinned node or value
    /// is reused or written.
    pins: u32,
    pinned_held: Vec<u32>,
    /// A commit between `prepare` and `finish`.
    prepared: Option<Prepared>,
    /// Page domain: the batch's nodes live in DRAM until `prepare`.
    shadow: Option<Shadow>,
    /// Whether commits flush inserted values' bytes (off when a log made
    /// them durable before they were inserted).
    flush_values: bool,
    /// One bit per buffer: a node checked (CRC and layout) since it was
    /// last written, or written by this process.
    verified: Vec<AtomicU64>,
    poisoned: Option<String>,
    /// The root was found to be a leaf or a counted internal node (so are
    /// all the tree's internal nodes): changes may go ahead. Learned at the
    /// first change (opening reads no node).
    counted: bool,
    entry: Vec<u8>,
    scratch: Scratch,
    /// Bumped whenever a node joins or leaves the working version or is
    /// rewritten whole (`allocate`, `retire`, `write_node`): until then,
    /// every path found stays the path to its key's leaf.
    shape: u64,
    /// The last descent of `get`, for a change of the same key that
    /// follows it (a read-modify-write: INCR, HSET, ZADD).
    last_descent: RefCell<LastDescent>,
    /// Where `get` found keys, kept in DRAM so that it need not descend
    /// again (`finder.rs`); told of every node change below.
    finder: RefCell<finder::Finder>,
}

/// Where `get` last found (or would have put) a key: the path from the
/// root and the leaf, valid while the tree's `shape` and root are those it
/// was found under (`root` None: nothing kept). A change of that key takes it instead of descending
/// again (issue 36: the second descent of a read-modify-write was a tenth
/// of its CPU). Edits in place inside fresh nodes keep it valid: they move
/// no key to another leaf and no child to another index.
#[derive(Default)]
struct LastDescent {
    key: Vec<u8>,
    path: Vec<Step>,
    leaf: u32,
    root: Option<u32>,
    shape: u64,
}

/// The extents of a value read from a tree: an indirect value's are read
/// from its index chain, checked; none for an inline value.
pub fn value_extents(pool: &Pool, value: &Value) -> Result<Vec<Extent>, TreeError> {
    match value {
        Value::Inline(_) => Ok(Vec::new()),
        Value::Extents(extents, _) => Ok(extents.clone()),
        &Value::Indirect { head, count, .. } => indirect::read_chain(pool, head, count)
            .map(|(_, extents)| extents)
            .map_err(|_| TreeError::Corrupt { node: head, error: NodeError::Malformed("a damaged index chain") }),
    }
}

/// A tree key as text for a message: printable ASCII as is, other bytes
/// as `\xNN` (a key is at most 512 bytes, so the text is bounded).
pub fn key_text(key: &[u8]) -> String {
    key.iter().flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect()
}

/// What checking a value's bytes against its CRC found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueCheck {
    /// The bytes match the CRC; `bytes` of them were read.
    Matched { bytes: u64 },
    /// No CRC to check: an inline value (checked when read from its node)
    /// or a value written before value checksums.
    Unchecked,
    /// The bytes differ from what the CRC says was written; `bytes` of
    /// them were read.
    Mismatch { bytes: u64 },
}

/// Reads `value`'s bytes where they lie and checks them against the CRC it
/// carries. An indirect value's chain is read and checked first (a damaged
/// chain is an error, as for any read of it).
pub fn check_value(pool: &Pool, value: &Value) -> Result<ValueCheck, TreeError> {
    let Some(stored) = value.crc() else { return Ok(ValueCheck::Unchecked) };
    // An extent value's list is used in place (no copy on the read path).
    let chain;
    let extents: &[Extent] = match value {
        Value::Extents(extents, _) => extents,
        _ => {
            chain = value_extents(pool, value)?;
            &chain
        }
    };
    let crc = crate::log::data_crc(pool, extents);
    let bytes = extents.iter().map(|e| u64::from(e.len)).sum();
    Ok(if crc == stored { ValueCheck::Matched { bytes } } else { ValueCheck::Mismatch { bytes } })
}

/// `check_value` as an error naming `key` (a tree key) on a mismatch.
pub fn verify_value(pool: &Pool, key: &[u8], value: &Value) -> Result<(), TreeError> {
    match check_value(pool, value)? {
        ValueCheck::Mismatch { .. } => Err(TreeError::CorruptValue { key: key.to_vec() }),
        ValueCheck::Matched { .. } | ValueCheck::Unchecked => Ok(()),
    }
}

/// Leaf entry `index` of `view` for a reader: its value with an inline
/// value's CRC checked (`TreeError::CorruptValue` naming its key).
pub(crate) fn read_value(view: &NodeBytes<'_>, index: usize) -> Result<Value, TreeError> {
    view.checked_value(index).map_err(|_| TreeError::CorruptValue { key: view.key(index).to_vec() })
}

/// Node images reused from change to change (no allocation per insert).
#[derive(Default)]
struct Scratch {
    /// Twice a node: a node being changed, perhaps overfull.
    content: Vec<u8>,
    /// Twice a node: its parent's new image.
    parent: Vec<u8>,
    left: Vec<u8>,
    right: Vec<u8>,
}

impl Scratch {
    fn sized(mut self, node_size: usize) -> Scratch {
        for (buffer, size) in [
            (&mut self.content, 2 * node_size),
            (&mut self.parent, 2 * node_size),
            (&mut self.left, node_size),
            (&mut self.right, node_size),
        ] {
            buffer.resize(size, 0);
        }
        self
    }
}

/// One step of a path from the root: a node and the child index taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Step {
    node: u32,
    child: usize,
}

impl Tree {
    /// Opens the tree of `pool` with the default limits for its node size.
    pub fn open(pool: &Pool, buffers: &mut Buffers) -> Result<Tree, TreeError> {
        let config = TreeConfig::for_node_size(pool.geometry().buffer_size as usize);
        Self::open_with(pool, buffers, config)
    }

    /// Opens the tree of `pool`: the newest valid meta slot; the other slot
    /// is erased (durably) so no remnant of an interrupted commit can come
    /// back. O(1): the buffers below the high-water mark are held until the
    /// reclamation walk ends. `buffers` must be fresh (references taken by
    /// a log's recovery may be in it).
    pub fn open_with(pool: &Pool, buffers: &mut Buffers, config: TreeConfig) -> Result<Tree, TreeError> {
        Self::open_inner(pool, buffers, config, false)
    }

    /// Opens the tree of `pool` to read it, writing nothing (not even the
    /// erasure of the other meta slot): for `packetstore inspect`. The tree
    /// it returns must not be changed.
    pub fn inspect(pool: &Pool) -> Result<Tree, TreeError> {
        let config = TreeConfig::for_node_size(pool.geometry().buffer_size as usize);
        let mut buffers = Buffers::new(pool.geometry().buffer_count);
        Self::open_inner(pool, &mut buffers, config, true)
    }

    fn open_inner(pool: &Pool, buffers: &mut Buffers, config: TreeConfig, read_only: bool) -> Result<Tree, TreeError> {
        let node_size = pool.geometry().buffer_size as usize;
        config.check(node_size)?;
        let mut best: Option<(usize, Meta)> = None;
        for (slot, &offset) in META_SLOT_OFFSETS.iter().enumerate() {
            let mut bytes = [0u8; META_SIZE];
            pool.read(offset, &mut bytes);
            if let Some(meta) = Meta::decode(&bytes) {
                if best.is_none_or(|(_, b)| meta.generation > b.generation) {
                    best = Some((slot, meta));
                }
            }
        }
        let (slot, committed) = best.unwrap_or((1, Meta::default()));
        // The other slot may hold part of an interrupted commit: words of a
        // version that never became the tree, whose nodes are now free. The
        // next commit writes this slot, and a power failure then could mix
        // those words with its own back into a valid-looking old meta. So
        // erase it durably first (as the log erases its torn remnants).
        let other = META_SLOT_OFFSETS[1 - slot];
        let mut remnant = [0u8; META_SIZE];
        pool.read(other, &mut remnant);
        if remnant.iter().any(|&b| b != 0) && !read_only {
            pool.write(other, &[0u8; META_SIZE]);
            pool.flush(other, META_SIZE as u64);
            pool.fence().map_err(TreeError::CommitFailed)?;
        }
        let buffer_count = pool.geometry().buffer_count;
        let size = node_size;
        let half = NODE_HEADER_SIZE + (size - NODE_HEADER_SIZE) / 2;
        let underfull = size / 4;
        let walk = committed.root.map(|root| {
            // A meta without the mark (written before it existed) holds all.
            let high_water = if committed.high_water == 0 { buffer_count } else { committed.high_water };
            buffers.hold_below(high_water);
            Walk { stack: vec![(root, committed.height)], deferred: Vec::new() }
        });
        Ok(Tree {
            config,
            node_size,
            buffer_count,
            underfull,
            fill_min_leaf: underfull.min(half.saturating_sub(config.leaf_entry_max())).max(NODE_HEADER_SIZE),
            fill_min_internal: underfull
                .min(half.saturating_sub(2 * config.internal_entry_max()))
                .max(NODE_HEADER_SIZE),
            committed,
            work: committed,
            slot,
            fresh: IdHashSet::default(),
            release_at_commit: Vec::new(),
            flush_at_commit: Vec::new(),
            flush_index_at_commit: Vec::new(),
            walk,
            read_lease: None,
            leased: std::collections::VecDeque::new(),
            pins: 0,
            pinned_held: Vec::new(),
            prepared: None,
            shadow: None,
            flush_values: true,
            verified: (0..buffer_count.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            poisoned: None,
            counted: false,
            entry: Vec::new(),
            scratch: Scratch::default().sized(node_size),
            shape: 0,
            last_descent: RefCell::default(),
            finder: RefCell::new(finder::Finder::new(buffer_count)),
        })
    }

    pub fn config(&self) -> TreeConfig {
        self.config
    }

    pub fn len(&self) -> u64 {
        self.work.len
    }

    pub fn is_empty(&self) -> bool {
        self.work.len == 0
    }

    /// Levels above the leaves.
    pub fn height(&self) -> u8 {
        self.work.height
    }

    /// The generation of the last commit.
    /// The root node's buffer, if the tree has one (for `inspect`).
    pub fn root(&self) -> Option<u32> {
        self.work.root
    }

    pub fn generation(&self) -> u64 {
        self.committed.generation
    }

    /// The generation the working batch will be committed as: a change made
    /// now is first in that version (one past the one being prepared, if a
    /// commit is in flight).
    pub fn batch_generation(&self) -> u64 {
        self.work.generation + 1
    }

    /// Reads the finder answered without a descent, since opening.
    pub fn finder_hits(&self) -> u64 {
        self.finder.borrow().hits()
    }

    /// When the finder works (`FinderMode`; adaptive by default).
    pub fn set_finder_mode(&mut self, mode: FinderMode) {
        self.finder.get_mut().set_mode(mode);
    }

    /// Whether the reclamation walk is still to finish.
    pub fn is_reclaiming(&self) -> bool {
        self.walk.is_some()
    }

    // ---- reading nodes ----

    /// A node's bytes, in place, checked once since written: CRC and
    /// layout, and its level against the one its parent implies.
    fn node<'p>(&self, pool: &'p Pool, node: u32, level: u8) -> Result<&'p [u8], TreeError> {
        if node >= self.buffer_count {
            return Err(TreeError::Corrupt { node, error: NodeError::Malformed("child beyond the pool") });
        }
        let bytes = match &self.shadow {
            // SAFETY: shadow slots are written only through `&mut self`,
            // never while this `&self` borrow lives; the callers (this
            // tree's methods and its `Range`) do not outlive the tree.
            Some(shadow) if shadow.has(node) => unsafe { shadow.slot(node) },
            // SAFETY: nodes are written only by this tree, through `&mut
            // self` (`write_node`, `commit`), never while a `&self` borrow
            // (which the caller holds) lives; a node of the working version
            // is referenced by the tree, or held (reclamation), so no one
            // else reuses its buffer meanwhile.
            _ => unsafe { pool.bytes(pool.buffer_offset(node), self.node_size) },
        };
        let (word, bit) = ((node / 64) as usize, 1u64 << (node % 64));
        if self.verified[word].load(Ordering::Relaxed) & bit == 0 {
            node::validate(bytes).map_err(|error| TreeError::Corrupt { node, error })?;
            self.verified[word].fetch_or(bit, Ordering::Relaxed);
        }
        if NodeBytes(bytes).level() != level {
            return Err(TreeError::Corrupt { node, error: NodeError::Malformed("level disagrees with its parent's") });
        }
        Ok(bytes)
    }

    /// A hint that `node`, a leaf about to be searched, is read soon: all
    /// its lines are fetched at once, so the misses of the binary search
    /// overlap instead of following one another (issue 36: a cold key's
    /// leaf search was the largest cost of a read). Reads nothing.
    #[inline]
    fn prefetch_leaf(&self, pool: &Pool, node: u32) {
        if node >= self.buffer_count {
            return; // `node` reports it
        }
        let start = match &self.shadow {
            Some(shadow) if shadow.has(node) => shadow.slot_address(node),
            _ => pool.address(pool.buffer_offset(node)).cast_const(),
        };
        node::prefetch_lines(start, self.node_size);
    }

    fn set_verified(&self, node: u32, on: bool) {
        let (word, bit) = ((node / 64) as usize, 1u64 << (node % 64));
        if on {
            self.verified[word].fetch_or(bit, Ordering::Relaxed);
        } else {
            self.verified[word].fetch_and(!bit, Ordering::Relaxed);
        }
    }

    /// The value of `key` in the working version.
    pub fn get(&self, pool: &Pool, key: &[u8]) -> Result<Option<Value>, TreeError> {
        let Some(root) = self.work.root else { return Ok(None) };
        let hash = self.finder.borrow_mut().read().then(|| finder::hash(key));
        if let Some(hash) = hash {
            let candidate = self.finder.borrow().probe(hash);
            if let Some(found) = candidate {
                let view = NodeBytes(self.node(pool, found.leaf, 0)?);
                // A live leaf that holds the key holds its entry; one that
                // holds a key below it and one above it is the only leaf
                // that could (`finder.rs`).
                let answer = match found.index {
                    Some(index) => (index < view.count() && view.key(index) == key).then_some(Ok(index)),
                    None => match view.search(key) {
                        Err(index) if index == 0 || index == view.count() => None,
                        found => Some(found),
                    },
                };
                if let Some(answer) = answer {
                    self.finder.borrow_mut().hit();
                    return answer.ok().map(|index| read_value(&view, index)).transpose();
                }
            }
        }
        // Not reentrant: nothing below calls back into the tree.
        let mut last = self.last_descent.borrow_mut();
        last.root = None;
        last.path.clear();
        let (mut node, mut level) = (root, self.work.height);
        loop {
            let view = NodeBytes(self.node(pool, node, level)?);
            if view.is_leaf() {
                last.key.clear();
                last.key.extend_from_slice(key);
                (last.leaf, last.root, last.shape) = (node, Some(root), self.shape);
                let found = view.search(key);
                if let Some(hash) = hash {
                    self.fill_finder(&view, node, hash, found);
                }
                let Ok(index) = found else { return Ok(None) };
                return read_value(&view, index).map(Some);
            }
            let child = child_index(&view, key);
            last.path.push(Step { node, child });
            node = view.child(child);
            level -= 1;
            if level == 0 {
                self.prefetch_leaf(pool, node);
            }
        }
    }

    /// Tells the finder where a descent for the key of `hash` ended: in
    /// `leaf` (shown by `view`), at `found`: all the leaf's keys, once per
    /// version of the leaf, else the key alone (its slot was taken since);
    /// and an absent key's leaf.
    fn fill_finder(&self, view: &NodeBytes<'_>, leaf: u32, hash: u64, found: Result<usize, usize>) {
        let mut finder = self.finder.borrow_mut();
        finder.grow(self.work.len);
        let whole = !finder.is_filled_whole(leaf);
        if whole {
            for index in 0..view.count() {
                finder.fill(finder::hash(view.key(index)), finder::Found { leaf, index: Some(index) });
            }
            finder.filled_whole(leaf);
        }
        // An absent key at either end of the leaf: a later read could not
        // be answered from it (a slot would only cost a probe).
        let answerable = match found {
            Ok(_) => !whole,
            Err(index) => index > 0 && index < view.count(),
        };
        if answerable {
            finder.fill(hash, finder::Found { leaf, index: found.ok() });
        }
    }

    /// The entries with keys in `range`, in key order, or in reverse: an
    /// iterator over the working version (it must not outlive a change).
    pub fn range<'t>(&'t self, pool: &'t Pool, range: (Bound<&[u8]>, Bound<&[u8]>), reverse: bool) -> Range<'t> {
        self.range_of(self.work, pool, range, reverse)
    }

    /// The entries with keys in `range` of a pinned version, in key order.
    pub fn range_in<'t>(&'t self, version: &Version, pool: &'t Pool, range: (Bound<&[u8]>, Bound<&[u8]>)) -> Range<'t> {
        assert!(self.pins > 0, "a range of a version nobody pinned");
        self.range_of(version.0, pool, range, false)
    }

    fn range_of<'t>(
        &'t self,
        version: Meta,
        pool: &'t Pool,
        range: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
    ) -> Range<'t> {
        let mut iter = Range {
            tree: self,
            root: version.root,
            height: version.height,
            pool,
            stack: Vec::new(),
            start: own(range.0),
            end: own(range.1),
            reverse,
            error: None,
            check: true,
        };
        if let Err(error) = iter.seek() {
            iter.stack.clear();
            iter.error = Some(error);
        }
        iter
    }

    /// The entry with the smallest key.
    pub fn first(&self, pool: &Pool) -> Result<Option<(Vec<u8>, Value)>, TreeError> {
        self.range(pool, (Bound::Unbounded, Bound::Unbounded), false).next().transpose()
    }

    /// The entry with the largest key.
    pub fn last(&self, pool: &Pool) -> Result<Option<(Vec<u8>, Value)>, TreeError> {
        self.range(pool, (Bound::Unbounded, Bound::Unbounded), true).next().transpose()
    }

    /// Every entry in key order (the working version).
    pub fn entries(&self, pool: &Pool) -> Result<Vec<(Vec<u8>, Value)>, TreeError> {
        self.range(pool, (Bound::Unbounded, Bound::Unbounded), false).collect()
    }

    // ---- order statistics ----

    /// Nodes reachable from the working root (a walk).
    pub fn node_count(&self, pool: &Pool) -> Result<u64, TreeError> {
        let mut stack: Vec<(u32, u8)> = self.work.root.map(|r| (r, self.work.height)).into_iter().collect();
        let mut count = 0;
        while let Some((node, level)) = stack.pop() {
            let view = NodeBytes(self.node(pool, node, level)?);
            count += 1;
            if !view.is_leaf() {
                stack.extend((0..=view.count()).map(|i| (view.child(i), level - 1)));
            }
        }
        Ok(count)
    }

    /// Every buffer `value` references: its extents' buffers and, for an
    /// indirect value, its index buffers (read and checked). `node` names
    /// the leaf in errors.
    fn value_buffers(&self, pool: &Pool, node: u32, value: &Value) -> Result<Vec<u32>, TreeError> {
        let size = pool.geometry().buffer_size;
        match value {
            Value::Inline(_) => Ok(Vec::new()),
            Value::Extents(extents, _) => {
                for extent in extents {
                    extent.check(self.buffer_count, size).map_err(|_| TreeError::Corrupt {
                        node,
                        error: NodeError::Malformed("a value extent beyond the pool"),
                    })?;
                }
                Ok(extents.iter().map(|e| e.buffer).collect())
            }
            &Value::Indirect { head, count, .. } => {
                let (chain, extents) = indirect::read_chain(pool, head, count)
                    .map_err(|_| TreeError::Corrupt { node, error: NodeError::Malformed("a damaged index chain") })?;
                Ok(chain.into_iter().chain(extents.iter().map(|e| e.buffer)).collect())
            }
        }
    }

    // ---- reclamation ----

    /// Walks up to `budget` nodes of the version found at open, taking the
    /// tree's references on them and on their values' buffers. Returns
    /// whether the walk is over (then the held buffers nobody references
    /// are free, and the references dropped meanwhile are released).
    pub fn reclaim_step(&mut self, pool: &Pool, buffers: &mut Buffers, budget: usize) -> Result<bool, TreeError> {
        if self.walk.is_none() {
            return Ok(true);
        }
        self.check_writable()?;
        let mut walk = self.walk.take().expect("checked above");
        let result = self.walk_nodes(pool, buffers, &mut walk, budget);
        if result.is_err() || !walk.stack.is_empty() {
            // A failed walk (a damaged node) keeps the region held: nothing
            // it may reference is reused, and no change is accepted.
            self.walk = Some(walk);
            return self.poison(result).map(|()| false);
        }
        buffers.release_held();
        for buffer in walk.deferred {
            self.release(buffers, buffer)?;
        }
        Ok(true)
    }

    /// Runs the reclamation walk to its end.
    pub fn finish_reclaim(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), TreeError> {
        while !self.reclaim_step(pool, buffers, usize::MAX)? {}
        Ok(())
    }

    fn walk_nodes(&self, pool: &Pool, buffers: &mut Buffers, walk: &mut Walk, budget: usize) -> Result<(), TreeError> {
        for _ in 0..budget {
            let Some(&(node, level)) = walk.stack.last() else { return Ok(()) };
            let view = NodeBytes(self.node(pool, node, level)?);
            if view.is_leaf() {
                for i in 0..view.count() {
                    for buffer in self.value_buffers(pool, node, &view.value(i))? {
                        buffers.retain(buffer)?;
                    }
                }
            }
            buffers.retain(node)?;
            walk.stack.pop();
            if !view.is_leaf() {
                walk.stack.extend((0..=view.count()).map(|i| (view.child(i), level - 1)));
            }
        }
        Ok(())
    }

    /// Drops one of the tree's references (after the walk, or deferred).
    fn release(&mut self, buffers: &mut Buffers, buffer: u32) -> Result<(), TreeError> {
        match &mut self.walk {
            Some(walk) => walk.deferred.push(buffer),
            None => {
                if buffers.release(buffer)? {
                    self.set_verified(buffer, false);
                }
            }
        }
        Ok(())
    }

    // ---- changes ----

    fn check_writable(&self) -> Result<(), TreeError> {
        match &self.poisoned {
            Some(why) => Err(TreeError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Marks the tree failed when a change stopped half way (a damaged
    /// node met mid-change, a failed fence): nothing more is accepted.
    fn poison<T>(&mut self, result: Result<T, TreeError>) -> Result<T, TreeError> {
        if let Err(error) = &result {
            self.poisoned.get_or_insert_with(|| error.to_string());
        }
        result
    }

    /// Makes sure a change cannot run out of buffers half way: it needs at
    /// most two per level and one more for a new root. An insert leaves
    /// as many again for a delete, so that deletes (which free space at
    /// the next commit) still work in a full pool.
    fn reserve_for(&self, for_delete: bool) -> u32 {
        let change = 2 * (u32::from(self.work.height) + 1) + 1;
        if for_delete {
            change
        } else {
            2 * change
        }
    }

    fn reserve(&mut self, pool: &Pool, buffers: &mut Buffers, for_delete: bool) -> Result<(), TreeError> {
        let needed = self.reserve_for(for_delete);
        if buffers.free_count() < needed && self.walk.is_some() {
            self.finish_reclaim(pool, buffers)?;
        }
        if buffers.free_count() < needed {
            return Err(BufferError::PoolFull { count: buffers.count() }.into());
        }
        Ok(())
    }

    /// Inserts or updates; returns the previous value. Durable at commit.
    /// The tree takes its own reference on each buffer of an extent value
    /// (the caller keeps its own), and makes the value's bytes durable at
    /// commit.
    pub fn insert(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        key: &[u8],
        value: &Value,
    ) -> Result<Option<Value>, TreeError> {
        self.check_writable()?;
        self.check_counted(pool)?;
        if key.len() > self.config.key_size_max {
            return Err(TreeError::KeyTooLarge { size: key.len(), limit: self.config.key_size_max });
        }
        // Extents beyond what a leaf holds go to a chain of index buffers.
        let (extents, indirect): (&[Extent], bool) = match value {
            Value::Inline(bytes) if bytes.len() > self.config.value_size_max => {
                return Err(TreeError::ValueTooLarge { size: bytes.len(), limit: self.config.value_size_max });
            }
            Value::Inline(_) => (&[], false),
            Value::Extents(extents, _) if extents.len() > crate::limits::RECORD_EXTENTS_MAX => {
                return Err(TreeError::InvalidValue(format!(
                    "{} extents, more than {}",
                    extents.len(),
                    crate::limits::RECORD_EXTENTS_MAX
                )));
            }
            Value::Extents(extents, _) => (extents, extents.len() * 8 > self.config.value_size_max),
            Value::Indirect { .. } => {
                return Err(TreeError::InvalidValue("insert extents: the tree makes indirect values itself".into()))
            }
        };
        for extent in extents {
            extent.check(self.buffer_count, pool.geometry().buffer_size).map_err(TreeError::InvalidValue)?;
        }
        self.reserve(pool, buffers, false)?;
        let size = pool.geometry().buffer_size;
        if indirect
            && buffers.free_count()
                < (self.reserve_for(false) as usize + indirect::buffers_needed(extents.len(), size)) as u32
        {
            return Err(BufferError::PoolFull { count: buffers.count() }.into());
        }
        for (taken, extent) in extents.iter().enumerate() {
            if let Err(error) = buffers.retain(extent.buffer) {
                for undo in &extents[..taken] {
                    buffers.release(undo.buffer).expect("just retained");
                }
                return Err(error.into());
            }
        }
        // Every value is stored with its CRC: the one the caller knows (the
        // log's `data_crc` of the record that wrote the bytes), else
        // computed from the bytes now.
        let crc = match value {
            Value::Inline(_) => None,
            _ => Some(value.crc().unwrap_or_else(|| crate::log::data_crc(pool, extents))),
        };
        let stored = if indirect {
            let chain = indirect::write_chain(pool, buffers, extents).expect("reserved above");
            for &buffer in &chain {
                self.set_verified(buffer, false);
            }
            let len = extents.iter().map(|e| u64::from(e.len)).sum();
            let stored = Value::Indirect { len, head: chain[0], count: extents.len() as u32, crc };
            self.flush_index_at_commit.extend(chain);
            Some(stored)
        } else if value.crc().is_none() && crc.is_some() {
            Some(Value::Extents(extents.to_vec(), crc))
        } else {
            None
        };
        self.finder.get_mut().wrote();
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.insert_with(pool, buffers, key, stored.as_ref().unwrap_or(value), &mut scratch);
        self.scratch = scratch;
        let previous = self.poison(result)?;
        if self.flush_values {
            self.flush_at_commit.extend_from_slice(extents);
        }
        if let Some(old) = &previous {
            let old_buffers = self.value_buffers(pool, u32::MAX, old);
            let old_buffers = self.poison(old_buffers)?;
            self.release_at_commit.extend(old_buffers);
        }
        Ok(previous)
    }

    fn insert_with(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        key: &[u8],
        value: &Value,
        scratch: &mut Scratch,
    ) -> Result<Option<Value>, TreeError> {
        node::leaf_entry(&mut self.entry, key, value);
        let Some(root) = self.work.root else {
            Node::Leaf { generation: 0, entries: vec![(key.to_vec(), value.clone())] }
                .encode(&mut scratch.content)
                .expect("checked by the config: an entry fits a third of a node");
            self.propagate(pool, buffers, Vec::new(), None, 1, scratch)?;
            self.work.len = 1;
            return Ok(None);
        };
        let (path, leaf) = self.descend_to_change(pool, root, key)?;
        let view = NodeBytes(self.node(pool, leaf, 0)?);
        let found = view.search(key);
        if let Ok(index) = found {
            // An update of the same size in a leaf this batch already wrote
            // (the common overwrite): in place, no copy of the node, and the
            // shape cannot change.
            if self.fresh.contains(&leaf) && view.entry(index).len() == self.entry.len() {
                let previous = view.value(index);
                let offset = view.entry_offset(index);
                let entry = std::mem::take(&mut self.entry);
                self.write_in_place(pool, leaf, offset, &entry);
                self.entry = entry;
                return Ok(Some(previous));
            }
        }
        let previous = found.ok().map(|index| view.value(index));
        let delta = if previous.is_none() { 1 } else { 0 };
        let entry = std::mem::take(&mut self.entry);
        let edit = match found {
            Ok(index) => Edit::Replace { index, entry: &entry },
            Err(index) => Edit::Insert { index, entry: &entry },
        };
        let done = match self.fits_in_place(&view, path.is_empty(), edit) {
            Some(used) => self.edit_leaf(pool, buffers, leaf, &path, edit, used, delta).map(|()| true),
            None => Ok(false),
        };
        self.entry = entry;
        if done? {
            self.work.len += u64::from(previous.is_none());
            return Ok(previous);
        }
        let edit = match found {
            Ok(index) => Edit::Replace { index, entry: &self.entry },
            Err(index) => Edit::Insert { index, entry: &self.entry },
        };
        view.rebuild(&mut scratch.content, edit).expect("a node and one entry fit twice a node");
        self.propagate(pool, buffers, path, Some(leaf), delta, scratch)?;
        if previous.is_none() {
            self.work.len += 1;
        }
        Ok(previous)
    }

    /// Deletes `key`; returns its value. Durable at commit; the tree drops
    /// its references on the value's buffers then.
    pub fn delete(&mut self, pool: &Pool, buffers: &mut Buffers, key: &[u8]) -> Result<Option<Value>, TreeError> {
        self.check_writable()?;
        self.check_counted(pool)?;
        let Some(root) = self.work.root else { return Ok(None) };
        self.finder.get_mut().wrote();
        let (path, leaf) = self.descend_to_change(pool, root, key)?;
        let view = NodeBytes(self.node(pool, leaf, 0)?);
        let Ok(index) = view.search(key) else { return Ok(None) };
        self.reserve(pool, buffers, true)?;
        let previous = view.value(index);
        if let Some(used) = self.fits_in_place(&view, path.is_empty(), Edit::Remove { index }) {
            let result = self.edit_leaf(pool, buffers, leaf, &path, Edit::Remove { index }, used, -1);
            self.poison(result)?;
        } else {
            let mut scratch = std::mem::take(&mut self.scratch);
            view.rebuild(&mut scratch.content, Edit::Remove { index }).expect("a smaller node fits");
            let result = self.propagate(pool, buffers, path, Some(leaf), -1, &mut scratch);
            self.scratch = scratch;
            self.poison(result)?;
        }
        self.work.len -= 1;
        let old_buffers = self.value_buffers(pool, leaf, &previous);
        let old_buffers = self.poison(old_buffers)?;
        self.release_at_commit.extend(old_buffers);
        Ok(Some(previous))
    }

    /// The bytes a leaf (shown by `view`) would use after `edit` in place,
    /// if the tree's shape cannot change: the result fits the node and is
    /// not underfull (a root leaf keeps an entry). None: the caller
    /// rebuilds the node and propagates. Else `edit_leaf` applies it.
    fn fits_in_place(&self, view: &NodeBytes<'_>, is_root: bool, edit: Edit<'_>) -> Option<usize> {
        let (grows, shrinks, count) = match edit {
            Edit::Insert { entry, .. } => (2 + entry.len(), 0, view.count() + 1),
            Edit::Replace { index, entry } => (entry.len(), view.entry(index).len(), view.count()),
            Edit::Remove { index } => (0, 2 + view.entry(index).len(), view.count() - 1),
        };
        let used = view.used() + grows - shrinks;
        let shape_kept = if is_root { count > 0 } else { used >= self.underfull };
        (used <= self.node_size && shape_kept).then_some(used)
    }

    /// Applies `edit`, which `fits_in_place` said keeps the tree's shape
    /// and leaves `used` bytes, to `leaf`: in place in a leaf of this batch
    /// (only the ancestors' counts move, by `delta`); any other leaf is
    /// copied once into a new buffer and edited there, then each ancestor
    /// repointed (`repoint`): one node copy where a rebuild, a compaction
    /// and a write made three, for the leaf and again for its parent (issue
    /// 36: those copies were the checkpoint's largest cost per write). No
    /// view of the leaf may be used after.
    #[allow(clippy::too_many_arguments)]
    fn edit_leaf(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        leaf: u32,
        path: &[Step],
        edit: Edit<'_>,
        used: usize,
        delta: i64,
    ) -> Result<(), TreeError> {
        let fresh = self.fresh.contains(&leaf);
        let target = if fresh { leaf } else { self.copy_node(pool, buffers, leaf, 0)? };
        let result = self.with_fresh_node(pool, target, |bytes| node::edit_in_place(bytes, edit));
        assert_eq!(result, Ok(used), "in-place edit of node {target} (a copy of {leaf})");
        if fresh {
            self.add_to_counts(pool, path, delta)
        } else {
            self.repoint(pool, buffers, path, target, delta)
        }
    }

    /// A copy of `node` (at `level`, of an earlier batch) in a new buffer
    /// of this batch, byte for byte (every node is compact, its free bytes
    /// zero); `node` is retired.
    fn copy_node(&mut self, pool: &Pool, buffers: &mut Buffers, node: u32, level: u8) -> Result<u32, TreeError> {
        assert!(!self.fresh.contains(&node), "node {node} is of this batch already");
        let bytes = self.node(pool, node, level)?;
        let copy = self.copy_of(buffers, Some(node))?;
        // A retired node's buffer stays the tree's until the commit, so
        // `bytes` is still the node.
        self.write_node(pool, copy, bytes);
        Ok(copy)
    }

    /// Points the last step of `path` at `child`, the new version of the
    /// node it led to, with that child's count moved by `delta`: in place
    /// in an ancestor of this batch (whose own ancestors then only move
    /// their counts), else in a copy of it, repointed in turn; a new root
    /// when the path is used up.
    fn repoint(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        path: &[Step],
        mut child: u32,
        delta: i64,
    ) -> Result<(), TreeError> {
        for depth in (0..path.len()).rev() {
            let step = path[depth];
            let level = self.work.height - depth as u8;
            let fresh = self.fresh.contains(&step.node);
            let parent = if fresh { step.node } else { self.copy_node(pool, buffers, step.node, level)? };
            let count = shifted(NodeBytes(self.node(pool, parent, level)?).child_count(step.child), delta);
            self.with_fresh_node(pool, parent, |bytes| {
                node::set_child(bytes, step.child, child);
                node::set_child_count(bytes, step.child, count);
            });
            if fresh {
                return self.add_to_counts(pool, &path[..depth], delta);
            }
            child = parent;
        }
        self.work.root = Some(child);
        Ok(())
    }

    /// Runs `change` on the bytes of `node`, a node of this batch (its
    /// image in the shadow, or in the pool, noted written).
    fn with_fresh_node<R>(&mut self, pool: &Pool, node: u32, change: impl FnOnce(&mut [u8]) -> R) -> R {
        assert!(self.fresh.contains(&node) && node < self.buffer_count, "node {node} changed outside its batch");
        self.finder.get_mut().changed(node);
        match &mut self.shadow {
            Some(shadow) => {
                assert!(shadow.has(node), "a node of the batch is in the shadow");
                change(shadow.slot_mut(node))
            }
            None => {
                let offset = pool.buffer_offset(node);
                // SAFETY: inside the pool (node < buffer_count); a node of
                // this batch is written only by this tree, through `&mut
                // self`, and no slice of it from `node()` is alive (callers
                // take what they need from their views first).
                let bytes = unsafe { std::slice::from_raw_parts_mut(pool.address(offset), self.node_size) };
                let result = change(bytes);
                pool.note_written(offset, self.node_size as u64);
                result
            }
        }
    }

    /// `descend`, or the path `get` found last if it was for `key` and no
    /// node joined or left the working version since (`LastDescent`).
    fn descend_to_change(&mut self, pool: &Pool, root: u32, key: &[u8]) -> Result<(Vec<Step>, u32), TreeError> {
        let shape = self.shape;
        let last = self.last_descent.get_mut();
        if !(last.root == Some(root) && last.shape == shape && last.key == key) {
            return self.descend(pool, root, key);
        }
        last.root = None;
        let found = (std::mem::take(&mut last.path), last.leaf);
        debug_assert_eq!(self.descend(pool, root, key).ok(), Some(found.clone()), "the last descent is its key's path");
        Ok(found)
    }

    /// Descends from `root` to the leaf for `key`: the path taken (each
    /// internal node and the child index followed) and the leaf.
    fn descend(&self, pool: &Pool, root: u32, key: &[u8]) -> Result<(Vec<Step>, u32), TreeError> {
        let mut path = Vec::with_capacity(usize::from(self.work.height));
        let (mut node, mut level) = (root, self.work.height);
        while level > 0 {
            let view = NodeBytes(self.node(pool, node, level)?);
            let child = child_index(&view, key);
            path.push(Step { node, child });
            node = view.child(child);
            level -= 1;
            if level == 0 {
                self.prefetch_leaf(pool, node);
            }
        }
        Ok((path, node))
    }

    /// Writes `content` (a node image in a buffer of twice the node size)
    /// as the new version of `old` (None: a new root), and carries the
    /// change up the `path`: a node over the node size is split; a
    /// non-root node under a quarter full is merged with a sibling, or
    /// refilled from it when both do not fit one node; a root with no
    /// separator gives way to its only child. Copy on write throughout.
    /// `delta` is the change in the number of keys (+1 an insert, -1 a
    /// delete, 0 an overwrite): every ancestor's count of the child on the
    /// path moves by it; counts of split, merged or refilled nodes are
    /// summed afresh.
    fn propagate(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        mut path: Vec<Step>,
        mut old: Option<u32>,
        delta: i64,
        scratch: &mut Scratch,
    ) -> Result<(), TreeError> {
        let size = self.node_size;
        let Scratch { content, parent, left, right } = scratch;
        loop {
            let view = NodeBytes(&content[..]);
            let used = view.used();
            let level = view.level();
            let Some(step) = path.pop() else {
                // `old` is the root.
                return self.replace_root(pool, buffers, old, content, left, right);
            };
            let old_id = old.expect("a node with a parent exists");
            if used > size {
                let separator = view.split(&mut left[..], &mut right[..]).expect("an overfull node has two entries");
                let l = self.copy_of(buffers, old)?;
                let r = self.allocate(buffers)?;
                self.write_node(pool, l, left);
                self.write_node(pool, r, right);
                node::internal_entry(&mut self.entry, &separator, r, NodeBytes(right).total());
                let pview = NodeBytes(self.node(pool, step.node, level + 1)?);
                pview
                    .rebuild(&mut parent[..], Edit::Insert { index: step.child, entry: &self.entry })
                    .expect("a node and one entry fit twice a node");
                node::set_child(&mut parent[..], step.child, l);
                node::set_child_count(&mut parent[..], step.child, NodeBytes(left).total());
            } else if used < self.underfull {
                self.rebalance(pool, buffers, step, old_id, content, parent)?;
            } else {
                let id = self.copy_of(buffers, old)?;
                view.compact_into(&mut left[..]).expect("fits: checked above");
                self.write_node(pool, id, left);
                if id == old_id {
                    // Written in this batch already: so are its ancestors,
                    // which point at it; only their counts change.
                    path.push(step);
                    return self.add_to_counts(pool, &path, delta);
                }
                let pview = NodeBytes(self.node(pool, step.node, level + 1)?);
                pview.compact_into(&mut parent[..]).expect("a node fits");
                node::set_child(&mut parent[..], step.child, id);
                let count = NodeBytes(&parent[..]).child_count(step.child);
                node::set_child_count(&mut parent[..], step.child, shifted(count, delta));
            }
            old = Some(step.node);
            std::mem::swap(content, parent);
        }
    }

    /// The end of `propagate`: `content` is the new version of the root
    /// `old` (None: the tree was empty). Splits it under a new root when
    /// it is over the node size, gives way to its only child when it has
    /// no separator, or writes it.
    fn replace_root(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        old: Option<u32>,
        content: &[u8],
        left: &mut [u8],
        right: &mut [u8],
    ) -> Result<(), TreeError> {
        let view = NodeBytes(content);
        let level = view.level();
        if view.used() > self.node_size {
            let separator = view.split(left, right).expect("an overfull node has two entries");
            let l = self.copy_of(buffers, old)?;
            let r = self.allocate(buffers)?;
            self.write_node(pool, l, left);
            self.write_node(pool, r, right);
            let counts = vec![NodeBytes(left).total(), NodeBytes(right).total()];
            let root = self.allocate(buffers)?;
            let keys = vec![separator];
            Node::Internal { generation: 0, level: level + 1, keys, children: vec![l, r], counts: Some(counts) }
                .encode(left)
                .expect("one separator fits");
            self.write_node(pool, root, left);
            self.work.root = Some(root);
            self.work.height = level + 1;
        } else if view.count() == 0 {
            if let Some(old) = old {
                self.retire(old);
            }
            if view.is_leaf() {
                self.work.root = None;
                self.work.height = 0;
            } else {
                self.work.root = Some(view.child(0));
                self.work.height = level - 1;
            }
        } else {
            let id = self.copy_of(buffers, old)?;
            view.compact_into(left).expect("fits: checked above");
            self.write_node(pool, id, left);
            self.work.root = Some(id);
        }
        Ok(())
    }

    /// Moves the count of the child on the path in each of `path`'s nodes
    /// by `delta`, in place: they were all written in this batch (a fresh
    /// node's ancestors are fresh, since a copy is carried to the root), so
    /// 8 bytes per node change and nothing is copied.
    fn add_to_counts(&mut self, pool: &Pool, path: &[Step], delta: i64) -> Result<(), TreeError> {
        if delta == 0 {
            return Ok(());
        }
        for (depth, step) in path.iter().enumerate() {
            assert!(self.fresh.contains(&step.node), "node {} above a fresh node is not fresh", step.node);
            let level = self.work.height - depth as u8;
            let view = NodeBytes(self.node(pool, step.node, level)?);
            let offset = node::child_count_offset(&view, step.child);
            let count = shifted(view.child_count(step.child), delta);
            self.write_in_place(pool, step.node, offset, &count.to_le_bytes());
        }
        Ok(())
    }

    /// Writes `bytes` at `offset` of `node`, a node of this batch (its
    /// image in the shadow, or in the pool). The finder is not told: the
    /// callers write a count, or an entry over one of the same size and
    /// key, so every key keeps its index.
    fn write_in_place(&mut self, pool: &Pool, node: u32, offset: usize, bytes: &[u8]) {
        debug_assert!(self.fresh.contains(&node));
        match &mut self.shadow {
            Some(shadow) => shadow.write(node, offset, bytes),
            None => pool.write(pool.buffer_offset(node) + offset as u64, bytes),
        }
    }

    /// Merges the underfull `content` (the new version of `old`, child
    /// `step.child` of `step.node`) with its left sibling (its right one
    /// when it is the first child), or redistributes their entries when
    /// both do not fit one node. Writes the parent's new image to `parent`.
    fn rebalance(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        step: Step,
        old: u32,
        content: &[u8],
        parent: &mut [u8],
    ) -> Result<(), TreeError> {
        let size = self.node_size;
        let view = NodeBytes(content);
        let level = view.level();
        let pview = NodeBytes(self.node(pool, step.node, level + 1)?);
        // The separator between the two siblings, and which is which.
        let (separator, sibling_child) = if step.child > 0 { (step.child - 1, step.child - 1) } else { (0, 1) };
        let sibling_id = pview.child(sibling_child);
        let sibling_copy = self.node(pool, sibling_id, level)?.to_vec();
        let sibling = NodeBytes(&sibling_copy);
        let ((left, left_id), (right, right_id)) = if step.child > 0 {
            ((&sibling, sibling_id), (&view, old))
        } else {
            ((&view, old), (&sibling, sibling_id))
        };
        let mut middle = Vec::new();
        if !view.is_leaf() {
            node::internal_entry(&mut middle, pview.key(separator), right.child(0), right.child_count(0));
        }
        let mut joined = vec![0u8; 2 * size];
        node::join(left, (!middle.is_empty()).then_some(&middle[..]), right, &mut joined)
            .expect("two nodes, one under a quarter full, and a separator fit twice a node");
        let joined = NodeBytes(&joined);
        let mut out = vec![0u8; size];
        if joined.used() <= size {
            // Merge: the left node takes everything, the right one goes.
            let merged = self.copy_of(buffers, Some(left_id))?;
            self.retire(right_id);
            joined.compact_into(&mut out).expect("fits: checked above");
            self.write_node(pool, merged, &out);
            pview.rebuild(parent, Edit::Remove { index: separator }).expect("a smaller node fits");
            node::set_child(parent, separator, merged);
            node::set_child_count(parent, separator, joined.total());
        } else {
            // Redistribute: split the two nodes' entries evenly.
            let mut second = vec![0u8; size];
            let key = joined.split(&mut out, &mut second).expect("an overfull node has two entries");
            let l = self.copy_of(buffers, Some(left_id))?;
            let r = self.copy_of(buffers, Some(right_id))?;
            self.write_node(pool, l, &out);
            self.write_node(pool, r, &second);
            node::internal_entry(&mut self.entry, &key, r, NodeBytes(&second).total());
            pview
                .rebuild(parent, Edit::Replace { index: separator, entry: &self.entry })
                .expect("a node and one entry fit twice a node");
            node::set_child(parent, separator, l);
            node::set_child_count(parent, separator, NodeBytes(&out).total());
        }
        Ok(())
    }

    fn write_node(&mut self, pool: &Pool, node: u32, bytes: &[u8]) {
        assert!(self.fresh.contains(&node), "node {node} written outside its batch (copy on write broken)");
        // A whole node rewritten (a split, a merge, a refill) may hold other
        // keys or children than before.
        self.shape += 1;
        self.finder.get_mut().changed(node);
        debug_assert!(node::validate_layout(bytes).is_ok());
        match &mut self.shadow {
            Some(shadow) => {
                shadow.write(node, 0, bytes);
                shadow.set(node, true);
            }
            None => pool.write(pool.buffer_offset(node), bytes),
        }
    }

    /// A node leaves the working version: its reference drops at commit
    /// (the committed version may still use it; a node of this batch
    /// could be reused at once, but one rule is simpler and costs nothing).
    fn retire(&mut self, node: u32) {
        self.shape += 1;
        self.finder.get_mut().changed(node);
        self.fresh.remove(&node);
        if let Some(shadow) = &mut self.shadow {
            shadow.set(node, false);
        }
        self.release_at_commit.push(node);
    }

    /// The node to write for `old` in this batch: itself if already fresh,
    /// else a new buffer (and `old` is retired).
    fn copy_of(&mut self, buffers: &mut Buffers, old: Option<u32>) -> Result<u32, TreeError> {
        match old {
            Some(old) if self.fresh.contains(&old) => Ok(old),
            Some(old) => {
                self.retire(old);
                self.allocate(buffers)
            }
            None => self.allocate(buffers),
        }
    }

    fn allocate(&mut self, buffers: &mut Buffers) -> Result<u32, TreeError> {
        let node = buffers.allocate()?;
        self.shape += 1;
        self.finder.get_mut().changed(node);
        self.fresh.insert(node);
        self.set_verified(node, true);
        Ok(node)
    }

    /// Makes the batch durable (steps 1-5 of the module comment): the
    /// three phases below with a fence between each.
    pub fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), TreeError> {
        if !self.prepare(pool, buffers)? {
            return Ok(());
        }
        let fenced = pool.fence();
        self.poison(fenced.map_err(TreeError::CommitFailed))?;
        self.write_meta(pool);
        let fenced = pool.fence();
        self.poison(fenced.map_err(TreeError::CommitFailed))?;
        self.finish(buffers)
    }

    /// Keeps the batch's nodes in DRAM until `prepare` writes them to the
    /// pool (for the page domain, where every sync writes back the pages
    /// written since the last, and a store to a synced page faults). Only
    /// between batches.
    pub fn set_shadow(&mut self, on: bool) -> Result<(), TreeError> {
        assert!(self.fresh.is_empty(), "the shadow changes between batches only");
        self.shadow = match on {
            true => Some(
                Shadow::new(self.buffer_count, self.node_size)
                    .map_err(|e| TreeError::Config(format!("cannot map the DRAM shadow of the tree's nodes: {e}")))?,
            ),
            false => None,
        };
        Ok(())
    }

    /// Whether commits flush the bytes of inserted extent values (the
    /// default). A caller whose values are durable before they are
    /// inserted (a log flushed them at append, PASTE's write-behind
    /// logging) turns it off.
    pub fn set_value_flush(&mut self, on: bool) {
        self.flush_values = on;
    }

    /// Whether there is anything to commit.
    pub fn has_changes(&self) -> bool {
        !(self.fresh.is_empty() && self.release_at_commit.is_empty() && self.work == self.committed)
    }

    /// Whether a commit begun with `prepare` has not finished.
    pub fn is_committing(&self) -> bool {
        self.prepared.is_some()
    }

    /// Commit, phase 1 (step 1): seals and flushes the batch's nodes and
    /// values as version `generation + 1` and closes the batch: changes
    /// from now on copy those nodes (they belong to the version being
    /// committed) and go to the next batch. False if nothing changed. The
    /// caller fences (or syncs) before `write_meta`; the fence may be one
    /// it runs anyway, such as a log commit's.
    pub fn prepare(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<bool, TreeError> {
        self.check_writable()?;
        assert!(self.prepared.is_none(), "one commit at a time");
        if !self.has_changes() {
            return Ok(false);
        }
        let generation = self.committed.generation + 1;
        // The batch's nodes were written over the turn and are mostly out
        // of the cache by now: each is fetched whole while the one before
        // is sealed, so the CRC's misses overlap (issue 36: cold seals were
        // a tenth of a pipelined SET).
        let nodes: Vec<u32> = self.fresh.iter().copied().collect();
        for (i, &node) in nodes.iter().enumerate() {
            if let Some(&next) = nodes.get(i + 1) {
                self.prefetch_leaf(pool, next);
            }
            let offset = pool.buffer_offset(node);
            match &mut self.shadow {
                Some(shadow) if shadow.has(node) => {
                    // SAFETY: read before any write to this slot below.
                    let image = unsafe { shadow.slot(node) };
                    let fields = node::seal_fields(image, generation);
                    pool.write(offset, image);
                    shadow.set(node, false);
                    pool.write(offset + node::SEAL_OFFSET as u64, &fields);
                }
                _ => {
                    // SAFETY: a fresh node is written only by this tree
                    // (`&mut self` here), and not while this borrow lives.
                    let fields = node::seal_fields(unsafe { pool.bytes(offset, self.node_size) }, generation);
                    pool.write(offset + node::SEAL_OFFSET as u64, &fields);
                }
            }
            pool.flush(offset, self.node_size as u64);
        }
        for extent in self.flush_at_commit.drain(..) {
            pool.flush(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), u64::from(extent.len));
        }
        let size = u64::from(pool.geometry().buffer_size);
        for buffer in self.flush_index_at_commit.drain(..) {
            pool.flush(pool.buffer_offset(buffer), size);
        }
        self.work.generation = generation;
        // The working version carries the mark too: were it left behind,
        // `work != committed` would call every later checkpoint a change,
        // and an idle server wrote a new meta every second.
        self.work.high_water = buffers.high_water();
        let meta = self.work;
        self.fresh.clear();
        self.prepared =
            Some(Prepared { meta, release: std::mem::take(&mut self.release_at_commit), meta_written: false });
        Ok(true)
    }

    /// Commit, phase 2 (step 3), after a fence that followed `prepare`:
    /// writes and flushes the new meta into the slot not in use. The
    /// caller fences again before `finish`.
    pub fn write_meta(&mut self, pool: &Pool) {
        let prepared = self.prepared.as_mut().expect("write_meta follows prepare");
        assert!(!prepared.meta_written, "the meta is written once");
        let slot = 1 - self.slot;
        pool.write(META_SLOT_OFFSETS[slot], &prepared.meta.encode());
        pool.flush(META_SLOT_OFFSETS[slot], META_SIZE as u64);
        prepared.meta_written = true;
    }

    /// Commit, phase 3 (step 5), after a fence that followed `write_meta`:
    /// the new version is the tree; the buffers its batch stopped
    /// referencing lose the tree's reference.
    pub fn finish(&mut self, buffers: &mut Buffers) -> Result<(), TreeError> {
        let prepared = self.prepared.take().expect("finish follows write_meta");
        assert!(prepared.meta_written, "finish follows write_meta");
        self.slot = 1 - self.slot;
        self.committed = prepared.meta;
        if self.pins > 0 {
            self.pinned_held.extend(prepared.release);
            return Ok(());
        }
        self.release_after_lease(buffers, prepared.release)
    }

    // ---- checking ----
}

/// A child's count moved by `delta` (a key inserted or deleted below it):
/// never to zero (an empty child is merged away) nor below.
fn shifted(count: u64, delta: i64) -> u64 {
    let shifted = count.checked_add_signed(delta).expect("a count stays within u64");
    assert!(shifted > 0, "a child on a change's path keeps a key");
    shifted
}

/// The child of an internal node to descend into for `key`.
pub fn child_index(view: &NodeBytes<'_>, key: &[u8]) -> usize {
    match view.search(key) {
        Ok(index) => index + 1,
        Err(index) => index,
    }
}
