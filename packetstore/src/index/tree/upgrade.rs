//! The upgrade of a tree written before order statistics: every internal
//! node rewritten with its children's counts (copy on write, durable at the
//! next commit), split where it no longer fits; and, for tests, the way
//! back.
//!
//! Invariant: only internal nodes are written; leaves and values are
//! untouched, and the counts written are those the leaves' headers give.

use super::*;

/// A subtree rewritten by `add_counts`: the node its parent now points at,
/// the keys under it, and, for the right half of a split, the separator
/// before it.
struct Piece {
    separator: Option<Vec<u8>>,
    node: u32,
    count: u64,
}

impl Tree {
    /// Rewrites every internal node of the working version as a counted
    /// node (copy on write; durable at the next `commit`), learning the
    /// counts from the leaves' headers: the upgrade of a tree written
    /// before order statistics. Reads every node once; writes only
    /// internal nodes (a node that no longer fits with its counts is split,
    /// and the root may gain a level). Nothing to do on a counted tree.
    pub fn add_counts(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), TreeError> {
        self.check_writable()?;
        if self.is_counted(pool)? {
            self.counted = true;
            return Ok(());
        }
        self.rewrite_internal_nodes(pool, buffers, true)?;
        self.counted = true;
        Ok(())
    }

    /// The inverse of `add_counts`, for tests of the upgrade only: writes
    /// the internal nodes as a tree before order statistics did (kind 2),
    /// so that a test can make such a tree with this build.
    #[doc(hidden)]
    pub fn remove_counts_for_tests(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), TreeError> {
        self.check_writable()?;
        if self.work.height > 0 && self.is_counted(pool)? {
            self.rewrite_internal_nodes(pool, buffers, false)?;
        }
        self.counted = false;
        Ok(())
    }

    /// Rewrites every internal node with counts or without; reserves the
    /// buffers first (four per internal node, as a node may split in up to
    /// four, one per new root level, and the change reserve), finishing the
    /// reclamation walk if they are short.
    fn rewrite_internal_nodes(&mut self, pool: &Pool, buffers: &mut Buffers, counted: bool) -> Result<(), TreeError> {
        let Some(root) = self.work.root else { return Ok(()) };
        let internal_nodes = self.internal_node_count(pool)?;
        let needed = 4 * internal_nodes + u64::from(self.work.height) + 2 + u64::from(self.reserve_for(true));
        if u64::from(buffers.free_count()) < needed && self.walk.is_some() {
            self.finish_reclaim(pool, buffers)?;
        }
        if u64::from(buffers.free_count()) < needed {
            return Err(BufferError::PoolFull { count: buffers.count() }.into());
        }
        let result = self.rewrite_subtree(pool, buffers, root, self.work.height, counted);
        let mut pieces = self.poison(result)?;
        // The root grew over a node with its counts: new roots above, until
        // one node holds the pieces.
        while pieces.len() > 1 {
            let level = self.work.height + 1;
            let keys =
                pieces[1..].iter().map(|p| p.separator.clone().expect("a right piece has a separator")).collect();
            let children = pieces.iter().map(|p| p.node).collect();
            let counts = pieces.iter().map(|p| p.count).collect();
            let image = Node::Internal { generation: 0, level, keys, children, counts: Some(counts) };
            let result = self.write_pieces(pool, buffers, None, image);
            pieces = self.poison(result)?;
            self.work.height = level;
        }
        self.work.root = Some(pieces[0].node);
        Ok(())
    }

    /// Internal nodes of the working version (reading only them).
    fn internal_node_count(&self, pool: &Pool) -> Result<u64, TreeError> {
        let mut stack: Vec<(u32, u8)> = self.work.root.map(|r| (r, self.work.height)).into_iter().collect();
        let mut count = 0;
        while let Some((node, level)) = stack.pop() {
            if level == 0 {
                continue;
            }
            let view = NodeBytes(self.node(pool, node, level)?);
            count += 1;
            stack.extend((0..=view.count()).map(|i| (view.child(i), level - 1)));
        }
        Ok(count)
    }

    /// Rewrites the internal nodes of the subtree at `node` (see
    /// `rewrite_internal_nodes`); returns what the parent must now point
    /// at: the subtree's new root, or two halves and their separator.
    fn rewrite_subtree(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        node: u32,
        level: u8,
        counted: bool,
    ) -> Result<Vec<Piece>, TreeError> {
        let bytes = self.node(pool, node, level)?;
        if level == 0 {
            return Ok(vec![Piece { separator: None, node, count: NodeBytes(bytes).count() as u64 }]);
        }
        let Node::Internal { keys, children, .. } =
            Node::decode(bytes).map_err(|error| TreeError::Corrupt { node, error })?
        else {
            unreachable!("level checked by `node`");
        };
        let (mut new_keys, mut new_children, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        for (i, &child) in children.iter().enumerate() {
            for (j, piece) in self.rewrite_subtree(pool, buffers, child, level - 1, counted)?.into_iter().enumerate() {
                match (i, j) {
                    (0, 0) => {}
                    (_, 0) => new_keys.push(keys[i - 1].clone()),
                    _ => new_keys.push(piece.separator.expect("a split's right half has a separator")),
                }
                new_children.push(piece.node);
                counts.push(piece.count);
            }
        }
        if counted {
            let image =
                Node::Internal { generation: 0, level, keys: new_keys, children: new_children, counts: Some(counts) };
            return self.write_pieces(pool, buffers, Some(node), image);
        }
        // Without counts a node only shrinks: it fits where it fitted.
        let count = counts.iter().sum();
        let image = Node::Internal { generation: 0, level, keys: new_keys, children: new_children, counts: None };
        let mut image_bytes = std::mem::take(&mut self.scratch.left);
        image.encode(&mut image_bytes).expect("a node fits without its counts");
        let id = self.copy_of(buffers, Some(node));
        if let Ok(id) = id {
            self.write_node(pool, id, &image_bytes);
        }
        self.scratch.left = image_bytes;
        Ok(vec![Piece { separator: None, node: id?, count }])
    }

    /// Writes `image` (a counted internal node), the new version of `old`
    /// (None: a new node), as one node or, when it does not fit, as several
    /// (`split_to_fit`): the first in `old`'s copy, the others in new
    /// buffers.
    fn write_pieces(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        old: Option<u32>,
        image: Node,
    ) -> Result<Vec<Piece>, TreeError> {
        let mut pieces = Vec::new();
        let mut image_bytes = std::mem::take(&mut self.scratch.left);
        for (i, (separator, piece)) in split_to_fit(image, self.node_size).into_iter().enumerate() {
            let Node::Internal { counts: Some(counts), .. } = &piece else { unreachable!("counted internal nodes") };
            let count = counts.iter().sum();
            piece.encode(&mut image_bytes).expect("fits: split to fit");
            let id = if i == 0 { self.copy_of(buffers, old) } else { self.allocate(buffers) };
            let id = match id {
                Ok(id) => id,
                Err(error) => {
                    self.scratch.left = image_bytes;
                    return Err(error);
                }
            };
            self.write_node(pool, id, &image_bytes);
            pieces.push(Piece { separator, node: id, count });
        }
        self.scratch.left = image_bytes;
        Ok(pieces)
    }
}

/// Splits an internal node image into pieces that each fit `node_size`
/// bytes: in two at the entry that balances their bytes (the middle
/// separator moves up, as `NodeBytes::split` does), and again while a piece
/// does not fit (one half can: a long separator where the halves meet).
/// Returns each piece with the separator before it (None for the first).
fn split_to_fit(image: Node, node_size: usize) -> Vec<(Option<Vec<u8>>, Node)> {
    if image.encoded_len() <= node_size {
        return vec![(None, image)];
    }
    let Node::Internal { generation, level, mut keys, mut children, counts } = image else {
        unreachable!("only internal nodes are split to fit")
    };
    assert!(keys.len() >= 3, "an overfull node has more than three separators (the config fits three)");
    let sizes: Vec<usize> = keys.iter().map(|key| 2 + 2 + key.len() + 12).collect();
    let total: usize = sizes.iter().sum();
    let (mut half, mut middle) = (0, 1);
    for (i, size) in sizes.iter().enumerate().take(keys.len() - 2) {
        half += size;
        middle = i + 1;
        if half * 2 >= total {
            break;
        }
    }
    let mut counts = counts.expect("a counted node");
    let (right_keys, right_children, right_counts) =
        (keys.split_off(middle + 1), children.split_off(middle + 1), counts.split_off(middle + 1));
    let separator = keys.pop().expect("the middle separator");
    let left = Node::Internal { generation, level, keys, children, counts: Some(counts) };
    let right =
        Node::Internal { generation, level, keys: right_keys, children: right_children, counts: Some(right_counts) };
    let mut pieces = split_to_fit(left, node_size);
    let mut right_pieces = split_to_fit(right, node_size);
    right_pieces[0].0 = Some(separator);
    pieces.append(&mut right_pieces);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An internal node as a tree before order statistics may have written
    /// it (at most `node_size` bytes without counts), with counts.
    fn old_full_node(node_size: usize) -> impl Strategy<Value = Node> {
        proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 1..=91), 3..60).prop_map(move |keys| {
            let mut keys: Vec<Vec<u8>> = keys.into_iter().collect();
            let without_counts = |keys: &[Vec<u8>]| NODE_HEADER_SIZE + keys.iter().map(|k| 8 + k.len()).sum::<usize>();
            while without_counts(&keys) > node_size {
                keys.pop();
            }
            let children = (0..=keys.len() as u32).collect();
            let counts = Some((1..=keys.len() as u64 + 1).collect());
            Node::Internal { generation: 0, level: 1, keys, children, counts }
        })
    }

    proptest! {
        /// Goal: `add_counts` can always write an old node with its counts:
        /// every piece fits a node and keeps a separator, and the pieces
        /// with the separators between them are the node.
        #[test]
        fn old_nodes_split_to_fit_with_their_counts(node in old_full_node(512)) {
            let Node::Internal { keys, children, counts, .. } = node.clone() else { unreachable!() };
            let pieces = split_to_fit(node, 512);
            let (mut all_keys, mut all_children, mut all_counts) = (Vec::new(), Vec::new(), Vec::new());
            for (i, (separator, piece)) in pieces.into_iter().enumerate() {
                prop_assert!(piece.encoded_len() <= 512);
                prop_assert_eq!(separator.is_some(), i > 0);
                let Node::Internal { keys, children, counts, .. } = piece else { unreachable!() };
                prop_assert!(!keys.is_empty(), "a piece keeps a separator");
                all_keys.extend(separator);
                all_keys.extend(keys);
                all_children.extend(children);
                all_counts.extend(counts.unwrap());
            }
            prop_assert_eq!(all_keys, keys);
            prop_assert_eq!(all_children, children);
            prop_assert_eq!(Some(all_counts), counts);
        }
    }

    /// Goal: the case a two-way split misses: many one-byte separators and
    /// a long one where the halves meet. Three pieces.
    #[test]
    fn a_long_separator_in_the_middle_splits_in_three() {
        // With counts: 22 x 17 bytes, then 107 where the halves meet (the
        // left half: 32 + 481 = 513 bytes), then 21 x 17.
        let mut keys: Vec<Vec<u8>> = (0..22u8).map(|b| vec![b]).collect();
        keys.push([vec![22u8], vec![0xAA; 90]].concat());
        keys.extend((23..44u8).map(|b| vec![b]));
        assert!(NODE_HEADER_SIZE + keys.iter().map(|k| 8 + k.len()).sum::<usize>() <= 512, "an old node fits");
        let n = keys.len();
        let node = Node::Internal {
            generation: 0,
            level: 1,
            keys,
            children: (0..=n as u32).collect(),
            counts: Some(vec![1; n + 1]),
        };
        let pieces = split_to_fit(node, 512);
        assert_eq!(pieces.len(), 3, "two halves, one of them split again");
        assert!(pieces.iter().all(|(_, piece)| piece.encoded_len() <= 512));
    }
}
