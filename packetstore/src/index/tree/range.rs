//! `Range`: the iterator over a key range of a tree version, forward or
//! in reverse, holding the path of node bytes it walks.

use super::*;

/// An iterator over a key range (see `Tree::range`). Each stack entry is a
/// node's bytes and, for a leaf, the next entry to yield (forward) or one
/// past it (reverse); for an internal node, the child being walked.
pub struct Range<'t> {
    pub(super) tree: &'t Tree,
    /// The version walked: its root and height.
    pub(super) root: Option<u32>,
    pub(super) height: u8,
    pub(super) pool: &'t Pool,
    pub(super) stack: Vec<(&'t [u8], usize)>,
    pub(super) start: Bound<Vec<u8>>,
    pub(super) end: Bound<Vec<u8>>,
    pub(super) reverse: bool,
    /// A failed seek, reported by the first `next`.
    pub(super) error: Option<TreeError>,
    /// Whether an inline value is checked against its CRC as it is
    /// yielded (`TreeError::CorruptValue`; the walk goes on after it).
    pub(super) check: bool,
}

pub(super) fn own(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(key) => Bound::Included(key.to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'t> Range<'t> {
    /// The same range without checking inline values' CRCs: for walks
    /// that use keys or extents only (the reclaimer, compaction's
    /// accounting), which a damaged value must not stop.
    pub fn unchecked(mut self) -> Self {
        self.check = false;
        self
    }

    /// Descends to the first (forward) or last (reverse) entry in range.
    pub(super) fn seek(&mut self) -> Result<(), TreeError> {
        let Some(mut node) = self.root else { return Ok(()) };
        let mut level = self.height;
        let bound = if self.reverse { self.end.clone() } else { self.start.clone() };
        loop {
            let bytes = self.tree.node(self.pool, node, level)?;
            let view = NodeBytes(bytes);
            if view.is_leaf() {
                let position = match &bound {
                    Bound::Unbounded if self.reverse => view.count(),
                    Bound::Unbounded => 0,
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
            level -= 1;
            self.stack.push((bytes, child));
        }
    }

    /// Moves to the next leaf (in the iteration's direction), if any.
    fn next_leaf(&mut self) -> Result<bool, TreeError> {
        self.stack.pop();
        while let Some((bytes, child)) = self.stack.last_mut() {
            let view = NodeBytes(bytes);
            let next =
                if self.reverse { child.checked_sub(1) } else { Some(*child + 1).filter(|&c| c <= view.count()) };
            let Some(next) = next else {
                self.stack.pop();
                continue;
            };
            *child = next;
            let mut node = view.child(next);
            let mut level = view.level() - 1;
            loop {
                let bytes = self.tree.node(self.pool, node, level)?;
                let view = NodeBytes(bytes);
                let position = if self.reverse { view.count() } else { 0 };
                self.stack.push((bytes, position));
                if view.is_leaf() {
                    return Ok(true);
                }
                node = view.child(position);
                level -= 1;
            }
        }
        Ok(false)
    }

    fn in_range(&self, key: &[u8]) -> bool {
        match (&self.start, &self.end, self.reverse) {
            (Bound::Included(limit), _, true) => key >= limit.as_slice(),
            (Bound::Excluded(limit), _, true) => key > limit.as_slice(),
            (_, Bound::Included(limit), false) => key <= limit.as_slice(),
            (_, Bound::Excluded(limit), false) => key < limit.as_slice(),
            _ => true,
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
            let key = view.key(index);
            if !self.in_range(key) {
                self.stack.clear();
                return None;
            }
            let value = if self.check { super::read_value(&view, index) } else { Ok(view.value(index)) };
            return Some(value.map(|value| (key.to_vec(), value)));
        }
    }
}
