//! The persistent B+ tree (issue 4): first version: copy-on-write insert,
//! delete, get, range scans and len over pool buffers, committed in
//! batches through two meta slots; range iterators. Not yet: merges of
//! underfull nodes, value-extent references, the persisted freed-node list
//! (open walks the tree), concurrent readers. Design: `docs/tree-design.md`.
//!
//! # Commit, step by step
//!
//! 1. Every node written in the batch (a fresh copy: nodes reachable from
//!    the committed root are never written) is sealed with the new
//!    generation and its CRC, and flushed.
//! 2. Fence: the new version's nodes are durable.
//! 3. The meta slot the previous commit did not use gets {generation, root,
//!    height, len, crc} as one line, flushed.
//! 4. Fence: the new version is the tree. A power failure before it leaves
//!    the previous slot, whose nodes are intact, or the new one.
//! 5. The nodes the batch replaced are freed.
//!
//! Invariant: a node reachable from a durable meta slot is never written.

use std::collections::HashSet;
use std::ops::Bound;

use crate::buffers::Buffers;
use crate::error::BufferError;
use crate::layout::{get_u32, get_u64, put_u32, put_u64};
use crate::node::{self, Edit, Node, NodeBytes, NodeError, Value};
use crate::pool::Pool;

/// Where the two meta slots live: unused bytes of the header page.
pub const META_SLOT_OFFSETS: [u64; 2] = [1024, 1088];
const META_SIZE: usize = 64;
const META_MAGIC: u32 = 0x4D54_5350; // "PSTM"

/// A committed (or working) version of the tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Meta {
    generation: u64,
    root: Option<u32>,
    /// Levels above the leaves (0: the root is a leaf).
    height: u8,
    len: u64,
}

impl Meta {
    fn encode(&self) -> [u8; META_SIZE] {
        let mut b = [0u8; META_SIZE];
        put_u32(&mut b, 0, META_MAGIC);
        put_u64(&mut b, 8, self.generation);
        put_u32(&mut b, 16, self.root.map_or(u32::MAX, |r| r));
        b[20] = self.height;
        put_u64(&mut b, 24, self.len);
        let crc = crc32c::crc32c(&b[..60]);
        put_u32(&mut b, 60, crc);
        b
    }

    fn decode(b: &[u8]) -> Option<Meta> {
        if get_u32(b, 0) != META_MAGIC || get_u32(b, 60) != crc32c::crc32c(&b[..60]) {
            return None;
        }
        let root = get_u32(b, 16);
        Some(Meta {
            generation: get_u64(b, 8),
            root: (root != u32::MAX).then_some(root),
            height: b[20],
            len: get_u64(b, 24),
        })
    }
}

/// Errors of the tree.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("key of {0} bytes is over the limit")]
    KeyTooLarge(usize),
    #[error("entry does not fit a node even alone")]
    EntryTooLarge,
    #[error(transparent)]
    Buffers(#[from] BufferError),
    #[error("tree node {node}: {error}")]
    Corrupt { node: u32, error: NodeError },
    #[error("commit failed, the tree accepts nothing more: {0}")]
    CommitFailed(std::io::Error),
}

pub struct Tree {
    node_size: usize,
    committed: Meta,
    work: Meta,
    /// Nodes written in this batch: writable until the commit.
    fresh: HashSet<u32>,
    /// Nodes of the committed version this batch replaced.
    replaced: Vec<u32>,
    /// Which meta slot holds `committed`.
    slot: usize,
    /// Nodes written in this batch and then dropped from it: freed at
    /// commit with the replaced ones (nothing durable names them).
    dropped_fresh: Vec<u32>,
    scratch: Vec<u8>,
    entry: Vec<u8>,
}

/// One step of a path from the root: a node and the child index taken.
#[derive(Clone, Copy)]
struct Step {
    node: u32,
    child: usize,
}

impl Tree {
    /// Opens the tree of `pool`: the newest valid meta slot; the other slot
    /// is erased (durably) so no remnant of an interrupted commit can come
    /// back. Takes a reference on every node (this version walks the tree).
    pub fn open(pool: &Pool, buffers: &mut Buffers) -> Result<Tree, TreeError> {
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
        if remnant.iter().any(|&b| b != 0) {
            pool.write(other, &[0u8; META_SIZE]);
            pool.flush(other, META_SIZE as u64);
            pool.fence().map_err(TreeError::CommitFailed)?;
        }
        let node_size = pool.geometry().buffer_size as usize;
        let tree = Tree {
            node_size,
            committed,
            work: committed,
            fresh: HashSet::new(),
            replaced: Vec::new(),
            slot,
            dropped_fresh: Vec::new(),
            scratch: vec![0; node_size * 2],
            entry: Vec::new(),
        };
        if let Some(root) = committed.root {
            tree.retain_subtree(pool, buffers, root)?;
        }
        Ok(tree)
    }

    fn retain_subtree(&self, pool: &Pool, buffers: &mut Buffers, node: u32) -> Result<(), TreeError> {
        let bytes = self.checked(pool, node)?;
        buffers.retain(node)?;
        let view = NodeBytes(&bytes);
        if !view.is_leaf() {
            for i in 0..=view.count() {
                self.retain_subtree(pool, buffers, view.child(i))?;
            }
        }
        Ok(())
    }

    /// A node's bytes, fully validated (as read from the pool).
    fn checked(&self, pool: &Pool, node: u32) -> Result<Vec<u8>, TreeError> {
        let mut bytes = vec![0u8; self.node_size];
        pool.read(pool.buffer_offset(node), &mut bytes);
        if !self.fresh.contains(&node) {
            Node::decode(&bytes).map_err(|error| TreeError::Corrupt { node, error })?;
        }
        Ok(bytes)
    }

    pub fn len(&self) -> u64 {
        self.work.len
    }

    pub fn is_empty(&self) -> bool {
        self.work.len == 0
    }

    /// The value of `key` in the working version.
    pub fn get(&self, pool: &Pool, key: &[u8]) -> Result<Option<Value>, TreeError> {
        let Some(mut node) = self.work.root else { return Ok(None) };
        loop {
            let bytes = self.checked(pool, node)?;
            let view = NodeBytes(&bytes);
            if view.is_leaf() {
                return Ok(match view.search(key) {
                    Ok(index) => Some(leaf_value(&bytes, index)),
                    Err(_) => None,
                });
            }
            node = view.child(child_index(&view, key));
        }
    }

    /// The entries with keys in `range`, in key order, or in reverse: an
    /// iterator over the working version (it must not outlive a change).
    pub fn range<'t>(&'t self, pool: &'t Pool, range: (Bound<&[u8]>, Bound<&[u8]>), reverse: bool) -> Range<'t> {
        let mut iter =
            Range { tree: self, pool, stack: Vec::new(), start: own(range.0), end: own(range.1), reverse, error: None };
        if let Err(error) = iter.seek() {
            iter.stack.clear();
            iter.error = Some(error);
        }
        iter
    }

    /// Nodes reachable from the working root (a walk: for tests and
    /// inspection).
    pub fn node_count(&self, pool: &Pool) -> Result<u64, TreeError> {
        fn walk(tree: &Tree, pool: &Pool, node: u32) -> Result<u64, TreeError> {
            let bytes = tree.checked(pool, node)?;
            let view = NodeBytes(&bytes);
            if view.is_leaf() {
                return Ok(1);
            }
            (0..=view.count()).try_fold(1, |sum, i| Ok(sum + walk(tree, pool, view.child(i))?))
        }
        match self.work.root {
            Some(root) => walk(self, pool, root),
            None => Ok(0),
        }
    }

    /// Every entry in key order (the working version).
    pub fn entries(&self, pool: &Pool) -> Result<Vec<(Vec<u8>, Value)>, TreeError> {
        let mut out = Vec::with_capacity(self.work.len as usize);
        if let Some(root) = self.work.root {
            self.collect(pool, root, &mut out)?;
        }
        Ok(out)
    }

    fn collect(&self, pool: &Pool, node: u32, out: &mut Vec<(Vec<u8>, Value)>) -> Result<(), TreeError> {
        let bytes = self.checked(pool, node)?;
        let view = NodeBytes(&bytes);
        if view.is_leaf() {
            for i in 0..view.count() {
                out.push((view.key(i).to_vec(), leaf_value(&bytes, i)));
            }
        } else {
            for i in 0..=view.count() {
                self.collect(pool, view.child(i), out)?;
            }
        }
        Ok(())
    }

    /// Inserts or updates; returns the previous value. Durable at commit.
    pub fn insert(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        key: &[u8],
        value: &Value,
    ) -> Result<Option<Value>, TreeError> {
        if key.len() > crate::limits::KEY_SIZE_MAX {
            return Err(TreeError::KeyTooLarge(key.len()));
        }
        let Some(root) = self.work.root else {
            let leaf = self.allocate(buffers)?;
            Node::Leaf { generation: 0, entries: vec![(key.to_vec(), value.clone())] }
                .encode(&mut self.scratch[..self.node_size])
                .map_err(|_| TreeError::EntryTooLarge)?;
            pool.write(pool.buffer_offset(leaf), &self.scratch[..self.node_size]);
            self.work = Meta { root: Some(leaf), height: 0, len: 1, ..self.work };
            return Ok(None);
        };
        let (path, node, leaf_bytes) = self.descend(pool, root, key)?;
        let view = NodeBytes(&leaf_bytes);
        node::leaf_entry(&mut self.entry, key, value);
        let (edit, previous) = match view.search(key) {
            Ok(index) => (Edit::Replace { index, entry: &self.entry }, Some(leaf_value(&leaf_bytes, index))),
            Err(index) => (Edit::Insert { index, entry: &self.entry }, None),
        };
        // Rebuild into a double-size scratch; split if it overflows a node.
        let mut scratch = std::mem::take(&mut self.scratch);
        view.rebuild(&mut scratch, edit).map_err(|_| TreeError::EntryTooLarge)?;
        let result = self.place(pool, buffers, node, &scratch, path);
        self.scratch = scratch;
        result?;
        if previous.is_none() {
            self.work.len += 1;
        }
        Ok(previous)
    }

    /// Descends from `root` to the leaf for `key`: the path taken (each
    /// internal node and the child index followed), the leaf, its bytes.
    fn descend(&self, pool: &Pool, root: u32, key: &[u8]) -> Result<(Vec<Step>, u32, Vec<u8>), TreeError> {
        let mut path = Vec::with_capacity(usize::from(self.work.height) + 1);
        let mut node = root;
        loop {
            let bytes = self.checked(pool, node)?;
            let view = NodeBytes(&bytes);
            if view.is_leaf() {
                return Ok((path, node, bytes));
            }
            let child = child_index(&view, key);
            path.push(Step { node, child });
            node = view.child(child);
        }
    }

    /// Deletes `key`; returns its value. Durable at commit. A node left
    /// empty is removed from its parent, and a root left with one child is
    /// replaced by it. Underfull nodes are not merged yet.
    pub fn delete(&mut self, pool: &Pool, buffers: &mut Buffers, key: &[u8]) -> Result<Option<Value>, TreeError> {
        let Some(root) = self.work.root else { return Ok(None) };
        let (mut path, node, leaf_bytes) = self.descend(pool, root, key)?;
        let view = NodeBytes(&leaf_bytes);
        let Ok(index) = view.search(key) else { return Ok(None) };
        let previous = leaf_value(&leaf_bytes, index);
        self.work.len -= 1;
        if view.count() > 1 || path.is_empty() {
            let mut content = vec![0u8; self.node_size];
            view.rebuild(&mut content, Edit::Remove { index }).expect("a smaller node fits");
            if view.count() == 1 {
                // The root leaf emptied: the tree is empty.
                self.retire(node);
                self.work.root = None;
                self.work.height = 0;
                return Ok(Some(previous));
            }
            self.place(pool, buffers, node, &content, path)?;
            return Ok(Some(previous));
        }
        // The leaf empties: remove it from its parent, and so on upwards.
        self.retire(node);
        while let Some(step) = path.pop() {
            let parent = self.checked(pool, step.node)?;
            let pview = NodeBytes(&parent);
            if pview.count() == 0 {
                // Its only child is gone: the parent empties too.
                self.retire(step.node);
                continue;
            }
            // Drop the child and one separator next to it.
            let mut content = vec![0u8; self.node_size];
            if step.child == 0 {
                let second = pview.child(1);
                pview.rebuild(&mut content, Edit::Remove { index: 0 }).expect("a smaller node fits");
                node::set_child(&mut content, 0, second);
            } else {
                pview.rebuild(&mut content, Edit::Remove { index: step.child - 1 }).expect("a smaller node fits");
            }
            self.place(pool, buffers, step.node, &content, path)?;
            self.collapse_root(pool)?;
            return Ok(Some(previous));
        }
        // Every node on the path emptied.
        self.work.root = None;
        self.work.height = 0;
        Ok(Some(previous))
    }

    /// A root with no separator (one child) is replaced by that child.
    fn collapse_root(&mut self, pool: &Pool) -> Result<(), TreeError> {
        while let Some(root) = self.work.root {
            let bytes = self.checked(pool, root)?;
            let view = NodeBytes(&bytes);
            if view.is_leaf() || view.count() > 0 {
                return Ok(());
            }
            let child = view.child(0);
            self.retire(root);
            self.work.root = Some(child);
            self.work.height -= 1;
        }
        Ok(())
    }

    /// A node leaves the working version: freed now if this batch wrote it,
    /// else at commit (the committed version still uses it).
    fn retire(&mut self, node: u32) {
        if !self.fresh.remove(&node) {
            self.replaced.push(node);
        } else {
            self.dropped_fresh.push(node);
        }
    }

    /// Writes the rebuilt `content` (a compacted node in a double-size
    /// buffer) as the new version of `old`, splitting it if it does not
    /// fit one node, and fixes the parents up the `path`.
    fn place(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        old: u32,
        content: &[u8],
        mut path: Vec<Step>,
    ) -> Result<(), TreeError> {
        let size = self.node_size;
        let used = NodeBytes(content).used();
        // Re-packs the entries at the end of a node-size buffer.
        let compact = |content: &[u8], out: &mut [u8]| {
            NodeBytes(content).compact_into(out).expect("fits: checked by the caller");
        };
        let mut node_bytes = vec![0u8; size];
        // (left, separator and right) to insert in the parent, if split.
        let mut replacement = self.copy_of(buffers, old)?;
        let mut split: Option<(Vec<u8>, u32)> = None;
        if used <= size {
            compact(content, &mut node_bytes);
            pool.write(pool.buffer_offset(replacement), &node_bytes);
        } else {
            let (mut left, mut right) = (vec![0u8; size], vec![0u8; size]);
            let separator = NodeBytes(content).split(&mut left, &mut right).map_err(|_| TreeError::EntryTooLarge)?;
            let right_node = self.allocate(buffers)?;
            pool.write(pool.buffer_offset(replacement), &left);
            pool.write(pool.buffer_offset(right_node), &right);
            split = Some((separator, right_node));
        }
        // Up the path: point each parent at the new child (and insert the
        // separator of a split).
        while let Some(step) = path.pop() {
            let parent = self.checked(pool, step.node)?;
            let view = NodeBytes(&parent);
            let mut rebuilt = vec![0u8; size * 2];
            match &split {
                Some((separator, right)) => {
                    node::internal_entry(&mut self.entry, separator, *right);
                    view.rebuild(&mut rebuilt, Edit::Insert { index: step.child, entry: &self.entry })
                        .map_err(|_| TreeError::EntryTooLarge)?;
                }
                None => rebuilt[..size].copy_from_slice(&parent),
            }
            node::set_child(&mut rebuilt, step.child, replacement);
            let new_parent = self.copy_of(buffers, step.node)?;
            if NodeBytes(&rebuilt).used() <= size {
                compact(&rebuilt, &mut node_bytes);
                pool.write(pool.buffer_offset(new_parent), &node_bytes);
                split = None;
            } else {
                let (mut left, mut right) = (vec![0u8; size], vec![0u8; size]);
                let separator =
                    NodeBytes(&rebuilt).split(&mut left, &mut right).map_err(|_| TreeError::EntryTooLarge)?;
                let right_node = self.allocate(buffers)?;
                pool.write(pool.buffer_offset(new_parent), &left);
                pool.write(pool.buffer_offset(right_node), &right);
                split = Some((separator, right_node));
            }
            replacement = new_parent;
        }
        // A split root grows the tree by one level.
        if let Some((separator, right)) = split {
            let root = self.allocate(buffers)?;
            let level = self.work.height + 1;
            Node::Internal { generation: 0, level, keys: vec![separator], children: vec![replacement, right] }
                .encode(&mut node_bytes)
                .map_err(|_| TreeError::EntryTooLarge)?;
            pool.write(pool.buffer_offset(root), &node_bytes);
            self.work.root = Some(root);
            self.work.height = level;
        } else {
            self.work.root = Some(replacement);
        }
        Ok(())
    }

    /// The node to write for `old` in this batch: itself if already fresh,
    /// else a new buffer (and `old` is replaced at commit).
    fn copy_of(&mut self, buffers: &mut Buffers, old: u32) -> Result<u32, TreeError> {
        if self.fresh.contains(&old) {
            return Ok(old);
        }
        self.replaced.push(old);
        self.allocate(buffers)
    }

    fn allocate(&mut self, buffers: &mut Buffers) -> Result<u32, TreeError> {
        let node = buffers.allocate()?;
        self.fresh.insert(node);
        Ok(node)
    }

    /// Makes the batch durable (steps 1-5 above).
    pub fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), TreeError> {
        if self.fresh.is_empty() && self.replaced.is_empty() && self.work == self.committed {
            return Ok(());
        }
        let generation = self.committed.generation + 1;
        let mut bytes = vec![0u8; self.node_size];
        for &node in &self.fresh {
            let offset = pool.buffer_offset(node);
            pool.read(offset, &mut bytes);
            node::seal(&mut bytes, generation);
            pool.write(offset, &bytes);
            pool.flush(offset, bytes.len() as u64);
        }
        pool.fence().map_err(TreeError::CommitFailed)?;
        let meta = Meta { generation, ..self.work };
        let slot = 1 - self.slot;
        pool.write(META_SLOT_OFFSETS[slot], &meta.encode());
        pool.flush(META_SLOT_OFFSETS[slot], META_SIZE as u64);
        pool.fence().map_err(TreeError::CommitFailed)?;
        self.slot = slot;
        self.committed = meta;
        self.work = meta;
        self.fresh.clear();
        for node in self.replaced.drain(..).chain(self.dropped_fresh.drain(..)) {
            buffers.release(node)?;
        }
        Ok(())
    }
}

/// An iterator over a key range (see `Tree::range`). Each stack entry is a
/// node's bytes and, for a leaf, the next entry to yield (forward) or one
/// past it (reverse); for an internal node, the child being walked.
pub struct Range<'t> {
    tree: &'t Tree,
    pool: &'t Pool,
    stack: Vec<(Vec<u8>, usize)>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    /// A failed seek, reported by the first `next`.
    error: Option<TreeError>,
}

fn own(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(key) => Bound::Included(key.to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Range<'_> {
    /// Descends to the first (forward) or last (reverse) entry in range.
    fn seek(&mut self) -> Result<(), TreeError> {
        let Some(mut node) = self.tree.work.root else { return Ok(()) };
        let bound = if self.reverse { self.end.clone() } else { self.start.clone() };
        loop {
            let bytes = self.tree.checked(self.pool, node)?;
            let view = NodeBytes(&bytes);
            if view.is_leaf() {
                let position = match &bound {
                    Bound::Unbounded => {
                        if self.reverse {
                            view.count()
                        } else {
                            0
                        }
                    }
                    Bound::Included(key) => match view.search(key) {
                        Ok(i) if self.reverse => i + 1,
                        Ok(i) | Err(i) => i,
                    },
                    Bound::Excluded(key) => match view.search(key) {
                        Ok(i) if !self.reverse => i + 1,
                        Ok(i) | Err(i) => i,
                    },
                };
                self.stack.push((bytes, position));
                return Ok(());
            }
            let child = match &bound {
                Bound::Unbounded if self.reverse => view.count(),
                Bound::Unbounded => 0,
                Bound::Included(key) | Bound::Excluded(key) => child_index(&view, key),
            };
            node = view.child(child);
            self.stack.push((bytes, child));
        }
    }

    /// Moves to the next leaf (in the iteration's direction), if any.
    fn next_leaf(&mut self) -> Result<bool, TreeError> {
        self.stack.pop();
        while let Some((bytes, child)) = self.stack.last_mut() {
            let count = NodeBytes(bytes).count();
            let next = if self.reverse { child.checked_sub(1) } else { Some(*child + 1).filter(|&c| c <= count) };
            let Some(next) = next else {
                self.stack.pop();
                continue;
            };
            *child = next;
            let mut node = NodeBytes(bytes).child(next);
            loop {
                let bytes = self.tree.checked(self.pool, node)?;
                let view = NodeBytes(&bytes);
                let position = if self.reverse { view.count() } else { 0 };
                if view.is_leaf() {
                    self.stack.push((bytes, position));
                    return Ok(true);
                }
                node = view.child(position);
                self.stack.push((bytes, position));
            }
        }
        Ok(false)
    }

    fn in_range(&self, key: &[u8]) -> bool {
        let (bound, reverse) = if self.reverse { (&self.start, true) } else { (&self.end, false) };
        match bound {
            Bound::Unbounded => true,
            Bound::Included(limit) => {
                if reverse {
                    key >= limit.as_slice()
                } else {
                    key <= limit.as_slice()
                }
            }
            Bound::Excluded(limit) => {
                if reverse {
                    key > limit.as_slice()
                } else {
                    key < limit.as_slice()
                }
            }
        }
    }
}

impl Iterator for Range<'_> {
    type Item = Result<(Vec<u8>, Value), TreeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(error) = self.error.take() {
            return Some(Err(error));
        }
        loop {
            let (bytes, position) = self.stack.last_mut()?;
            let view = NodeBytes(bytes);
            let index =
                if self.reverse { position.checked_sub(1) } else { Some(*position).filter(|&p| p < view.count()) };
            let Some(index) = index else {
                match self.next_leaf() {
                    Ok(true) => continue,
                    Ok(false) => return None,
                    Err(error) => {
                        self.stack.clear();
                        return Some(Err(error));
                    }
                }
            };
            *position = if self.reverse { index } else { index + 1 };
            let (key, value) = (view.key(index).to_vec(), view.value(index));
            if !self.in_range(&key) {
                self.stack.clear();
                return None;
            }
            return Some(Ok((key, value)));
        }
    }
}

/// The child of an internal node to descend into for `key`.
fn child_index(view: &NodeBytes<'_>, key: &[u8]) -> usize {
    match view.search(key) {
        Ok(index) => index + 1,
        Err(index) => index,
    }
}

fn leaf_value(bytes: &[u8], index: usize) -> Value {
    NodeBytes(bytes).value(index)
}
