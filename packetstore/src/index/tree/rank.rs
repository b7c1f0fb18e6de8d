//! The tree's order statistics: counting the keys of a range, a key's
//! rank, the key at a rank, and iterating from a rank, each O(log n) by
//! the counts that counted internal nodes keep for their children.

use super::*;

impl Tree {
    /// Whether the tree's internal nodes carry counts (kind 3), so that the
    /// count queries work and changes are accepted: reads the root (all
    /// internal nodes are of the root's kind). A tree of one leaf, or
    /// none, is counted.
    pub fn is_counted(&self, pool: &Pool) -> Result<bool, TreeError> {
        match self.work.root {
            Some(root) if self.work.height > 0 => Ok(NodeBytes(self.node(pool, root, self.work.height)?).is_counted()),
            _ => Ok(true),
        }
    }

    /// Refuses with `Uncounted` a tree written before order statistics
    /// (once known counted, no node is read again for this).
    pub(super) fn check_counted(&mut self, pool: &Pool) -> Result<(), TreeError> {
        if !self.counted {
            if !self.is_counted(pool)? {
                return Err(TreeError::Uncounted);
            }
            self.counted = true;
        }
        Ok(())
    }

    /// The number of keys in `range`. O(log n): two descents.
    pub fn count(&self, pool: &Pool, range: (Bound<&[u8]>, Bound<&[u8]>)) -> Result<u64, TreeError> {
        let below_end = match range.1 {
            Bound::Unbounded => self.counted_len(pool)?,
            Bound::Included(key) => self.position(pool, key, true)?,
            Bound::Excluded(key) => self.position(pool, key, false)?,
        };
        let below_start = match range.0 {
            Bound::Unbounded => 0,
            Bound::Included(key) => self.position(pool, key, false)?,
            Bound::Excluded(key) => self.position(pool, key, true)?,
        };
        Ok(below_end.saturating_sub(below_start))
    }

    /// The number of keys strictly less than `key` (present or not): its
    /// rank if present. The rank within the keys of a prefix is
    /// `rank(key) - rank(prefix)`. O(log n).
    pub fn rank(&self, pool: &Pool, key: &[u8]) -> Result<u64, TreeError> {
        self.position(pool, key, false)
    }

    /// `len`, once the tree is known counted.
    fn counted_len(&self, pool: &Pool) -> Result<u64, TreeError> {
        if !self.is_counted(pool)? {
            return Err(TreeError::Uncounted);
        }
        Ok(self.work.len)
    }

    /// The number of keys below `key`, or at or below it (`inclusive`):
    /// one descent, adding the counts of the children left of the path.
    fn position(&self, pool: &Pool, key: &[u8], inclusive: bool) -> Result<u64, TreeError> {
        let Some(mut node) = self.work.root else { return Ok(0) };
        let mut level = self.work.height;
        let mut below = 0u64;
        loop {
            let view = NodeBytes(self.node(pool, node, level)?);
            if view.is_leaf() {
                let index = match view.search(key) {
                    Ok(index) => index + usize::from(inclusive),
                    Err(index) => index,
                };
                return Ok(below + index as u64);
            }
            if !view.is_counted() {
                return Err(TreeError::Uncounted);
            }
            let child = child_index(&view, key);
            below += (0..child).map(|i| view.child_count(i)).sum::<u64>();
            node = view.child(child);
            level -= 1;
        }
    }

    /// The entry of rank `index` (0-based, in key order), or None when the
    /// tree has at most `index` keys. O(log n).
    pub fn nth(&self, pool: &Pool, index: u64) -> Result<Option<(Vec<u8>, Value)>, TreeError> {
        if index >= self.counted_len(pool)? {
            return Ok(None);
        }
        let mut found = None;
        self.descend_to_rank(pool, index, |bytes, position| {
            let view = NodeBytes(bytes);
            if view.is_leaf() {
                found = Some(super::read_value(&view, position).map(|value| (view.key(position).to_vec(), value)));
            }
        })?;
        found.transpose()
    }

    /// Descends from the root to the entry of rank `index` (< len), calling
    /// `visit` with each node's bytes and the child (or, in the leaf, the
    /// entry) taken.
    fn descend_to_rank<'p>(
        &self,
        pool: &'p Pool,
        index: u64,
        mut visit: impl FnMut(&'p [u8], usize),
    ) -> Result<(), TreeError> {
        let (Some(mut node), mut level, mut rest) = (self.work.root, self.work.height, index) else {
            return Ok(());
        };
        let disagree = |node| TreeError::Corrupt { node, error: NodeError::Malformed("counts disagree with len") };
        loop {
            let bytes = self.node(pool, node, level)?;
            let view = NodeBytes(bytes);
            if view.is_leaf() {
                let position = usize::try_from(rest).ok().filter(|&p| p < view.count()).ok_or(disagree(node))?;
                visit(bytes, position);
                return Ok(());
            }
            if !view.is_counted() {
                return Err(TreeError::Uncounted);
            }
            let mut child = None;
            for i in 0..=view.count() {
                let count = view.child_count(i);
                if rest < count {
                    child = Some(i);
                    break;
                }
                rest -= count;
            }
            let child = child.ok_or(disagree(node))?;
            visit(bytes, child);
            node = view.child(child);
            level -= 1;
        }
    }

    /// The entries from rank `index` on: up in key order while at or below
    /// the end bound `limit` (`reverse` false), or down while at or above
    /// the start bound `limit` (`reverse` true). Empty when `index` is not
    /// a rank (at least `len`). The seek is O(log n); each step as `range`.
    pub fn range_from_rank<'t>(&'t self, pool: &'t Pool, index: u64, limit: Bound<&[u8]>, reverse: bool) -> Range<'t> {
        let (start, end) = if reverse { (own(limit), Bound::Unbounded) } else { (Bound::Unbounded, own(limit)) };
        let (root, height) = (self.work.root, self.work.height);
        let mut iter =
            Range { tree: self, root, height, pool, stack: Vec::new(), start, end, reverse, error: None, check: true };
        let result = self.counted_len(pool).and_then(|len| {
            if index >= len {
                return Ok(());
            }
            self.descend_to_rank(pool, index, |bytes, position| {
                // A leaf's position is the next entry forward, one past it
                // in reverse (`Range`).
                let leaf = NodeBytes(bytes).is_leaf();
                iter.stack.push((bytes, if leaf && reverse { position + 1 } else { position }));
            })
        });
        if let Err(error) = result {
            iter.stack.clear();
            iter.error = Some(error);
        }
        iter
    }
}
