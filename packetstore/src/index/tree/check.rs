//! `Tree::check_invariants`: a walk of the working version that checks
//! every invariant the tree keeps (checksums, levels, key order and bounds,
//! fill, `len`, node kinds and counts), for tests and `packetstore inspect`.

use super::*;

impl Tree {
    /// Walks the working version and checks every invariant of the module
    /// comment: node checksums (layout only for this batch's nodes), levels
    /// (balance), key order and bounds, fill, `len`, every internal node of
    /// the root's kind, and in a counted tree every child's count against
    /// the keys under it. Returns what it found, with the references the
    /// tree holds on each buffer.
    pub fn check_invariants(&self, pool: &Pool) -> Result<TreeStats, String> {
        let mut stats = TreeStats { height: self.work.height, ..TreeStats::default() };
        let prepared = self.prepared.iter().flat_map(|p| p.release.iter());
        for &buffer in self.release_at_commit.iter().chain(prepared) {
            *stats.refs.entry(buffer).or_default() += 1;
        }
        if let Some(root) = self.work.root {
            let counted = self.is_counted(pool).map_err(|e| e.to_string())?;
            let bounds = Bounds { low: None, high: None, root: true, counted };
            self.check_node(pool, root, self.work.height, bounds, &mut stats)?;
        }
        if stats.entries != self.work.len {
            return Err(format!("len says {}, the leaves hold {}", self.work.len, stats.entries));
        }
        Ok(stats)
    }

    /// Checks the subtree at `node` (`check_invariants`); returns the keys
    /// under it.
    fn check_node(
        &self,
        pool: &Pool,
        node: u32,
        level: u8,
        bounds: Bounds<'_>,
        stats: &mut TreeStats,
    ) -> Result<u64, String> {
        let mut bytes = vec![0u8; self.node_size];
        match &self.shadow {
            Some(shadow) if node < self.buffer_count && shadow.has(node) => {
                // SAFETY: copied at once; nothing writes the slot meanwhile.
                let slot = unsafe { shadow.slot(node) };
                bytes.copy_from_slice(slot)
            }
            _ => pool.read(pool.buffer_offset(node), &mut bytes),
        }
        let checked = if self.fresh.contains(&node) { node::validate_layout(&bytes) } else { node::validate(&bytes) };
        checked.map_err(|e| format!("node {node}: {e}"))?;
        let view = NodeBytes(&bytes);
        if view.level() != level {
            return Err(format!("node {node} at level {level} says {} (unbalanced)", view.level()));
        }
        *stats.refs.entry(node).or_default() += 1;
        stats.nodes += 1;
        let used = view.used();
        stats.bytes_used += used as u64;
        let fill_min = if view.is_leaf() { self.fill_min_leaf } else { self.fill_min_internal };
        if !bounds.root && (used < fill_min || view.count() == 0) {
            return Err(format!("node {node} holds {used} bytes, {} entries: under {fill_min}", view.count()));
        }
        if bounds.root && !view.is_leaf() && view.count() == 0 {
            return Err(format!("root {node} has one child and no separator"));
        }
        for i in 0..view.count() {
            let key = view.key(i);
            if bounds.low.is_some_and(|low| key < low) || bounds.high.is_some_and(|high| key >= high) {
                return Err(format!("node {node}: key {key:?} outside its parent's bounds"));
            }
        }
        if view.is_leaf() {
            self.check_leaf_values(pool, node, &view, stats)?;
            return Ok(view.count() as u64);
        }
        if view.is_counted() != bounds.counted {
            return Err(format!(
                "node {node}: counted {}, its root {} (kinds mixed)",
                view.is_counted(),
                bounds.counted
            ));
        }
        let mut total = 0;
        for i in 0..=view.count() {
            let low = if i == 0 { bounds.low } else { Some(view.key(i - 1)) };
            let high = if i == view.count() { bounds.high } else { Some(view.key(i)) };
            let child_bounds = Bounds { low, high, root: false, counted: bounds.counted };
            let keys = self.check_node(pool, view.child(i), level - 1, child_bounds, stats)?;
            if view.is_counted() && view.child_count(i) != keys {
                return Err(format!("node {node}: child {i} counted {}, holds {keys} keys", view.child_count(i)));
            }
            total += keys;
        }
        Ok(total)
    }

    /// Adds a leaf's entries and values to `stats`, with the references
    /// its values hold.
    fn check_leaf_values(
        &self,
        pool: &Pool,
        node: u32,
        view: &NodeBytes<'_>,
        stats: &mut TreeStats,
    ) -> Result<(), String> {
        stats.leaves += 1;
        stats.entries += view.count() as u64;
        for i in 0..view.count() {
            let value = view.value(i);
            stats.value_bytes += match &value {
                Value::Inline(bytes) => {
                    stats.inline_bytes += bytes.len() as u64;
                    bytes.len() as u64
                }
                Value::Extents(extents, _) => extents.iter().map(|e| u64::from(e.len)).sum(),
                Value::Indirect { len, .. } => *len,
            };
            let buffers = self.value_buffers(pool, node, &value).map_err(|e| e.to_string())?;
            for buffer in buffers {
                *stats.refs.entry(buffer).or_default() += 1;
            }
        }
        Ok(())
    }
}

/// What `check_node` expects of a node: its keys' bounds (from its
/// parent), whether it is the root, and whether the tree is counted.
#[derive(Clone, Copy)]
struct Bounds<'a> {
    low: Option<&'a [u8]>,
    high: Option<&'a [u8]>,
    root: bool,
    counted: bool,
}

/// What `Tree::check_values` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValuesReport {
    /// Values whose bytes were checked against their CRC (inline ones
    /// included), and their bytes.
    pub checked: u64,
    pub bytes: u64,
    /// Values without a CRC (written before value checksums).
    pub unchecked: u64,
    /// Tree keys of the values whose bytes fail their CRC, in key order.
    pub corrupt: Vec<Vec<u8>>,
}

impl Tree {
    /// Reads every value of the working version and checks it against its
    /// CRC (`packetstore inspect --verify`). A damaged node or index chain
    /// is an error (`check_invariants` says more); a corrupt value is
    /// listed, and the walk goes on.
    pub fn check_values(&self, pool: &Pool) -> Result<ValuesReport, TreeError> {
        let mut report = ValuesReport::default();
        for entry in self.range(pool, (Bound::Unbounded, Bound::Unbounded), false) {
            let (key, value) = match entry {
                Ok(entry) => entry,
                Err(TreeError::CorruptValue { key }) => {
                    report.corrupt.push(key);
                    continue;
                }
                Err(error) => return Err(error),
            };
            match check_value(pool, &value)? {
                ValueCheck::Matched { bytes } => {
                    report.checked += 1;
                    report.bytes += bytes;
                }
                ValueCheck::Unchecked => match &value {
                    Value::Inline(bytes) => {
                        report.checked += 1;
                        report.bytes += bytes.len() as u64;
                    }
                    _ => report.unchecked += 1,
                },
                ValueCheck::Mismatch { .. } => report.corrupt.push(key),
            }
        }
        Ok(report)
    }
}
