//! Goal: the B+ tree agrees with a BTreeMap model, keeps its shape and its
//! reference counts exact after every operation, and every commit is
//! atomic across a power failure, with nothing leaked.
//!
//! Method: a harness (`Store`) drives the tree with random inserts, updates
//! and deletes over a small key space (so that splits, merges,
//! redistributions and root changes of every level happen). Values are
//! inline, or extents of buffers the harness fills (write-behind: the tree
//! is their only record once the harness drops its own reference). After
//! each step `Tree::check_invariants` checks order, key bounds, balance,
//! fill and len; the buffers' reference counts must equal the references
//! the tree holds (nodes, value extents, releases due at the next commit);
//! and at intervals every get and a full scan are compared with the model,
//! and every value's bytes with what was written, and the order statistics
//! (`count` over ranges with every kind of bound, `rank`, `nth`,
//! `range_from_rank`) with the model's (`check_invariants` checks every
//! subtree count after every step). Reopens run the reclamation walk in
//! small steps between further changes. Trees written before order
//! statistics (internal nodes without counts) are made with a test-only
//! writer, read, refused changes, upgraded and reopened.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use packetstore::index::node::Value;
use packetstore::index::tree::{FinderMode, Tree, TreeError};
use packetstore::util::rng::SplitMix64;
use packetstore::{Buffers, Extent, Geometry, Pool, SimDevice, SimMode};

struct Store {
    seed: u64,
    geometry: Geometry,
    device: Arc<SimDevice>,
    pool: Pool,
    buffers: Buffers,
    tree: Tree,
    model: BTreeMap<Vec<u8>, Value>,
    committed: BTreeMap<Vec<u8>, Value>,
    /// What the harness wrote into each value buffer (offset, bytes).
    contents: HashMap<u32, (u16, Vec<u8>)>,
}

impl Store {
    fn new(seed: u64, geometry: Geometry, mode: SimMode) -> Store {
        let device = Arc::new(SimDevice::new(geometry.file_size(), mode));
        let pool = Pool::create_simulated(device.clone(), geometry).unwrap();
        let mut buffers = Buffers::new(geometry.buffer_count);
        let mut tree = Tree::open(&pool, &mut buffers).unwrap();
        // Odd seeds keep the batch's nodes in DRAM until the commit (as the
        // page domain does).
        tree.set_shadow(seed % 2 == 1).unwrap();
        Store {
            seed,
            geometry,
            device,
            pool,
            buffers,
            tree,
            model: BTreeMap::new(),
            committed: BTreeMap::new(),
            contents: HashMap::new(),
        }
    }

    /// A random value: inline, or (one time in three) one or two extents
    /// of freshly filled buffers whose references the caller holds.
    fn value(&mut self, rng: &mut SplitMix64) -> Value {
        if rng.chance(2, 3) {
            let mut bytes = vec![0u8; rng.below(40) as usize];
            rng.fill(&mut bytes);
            return Value::Inline(bytes);
        }
        let size = u64::from(self.geometry.buffer_size);
        let mut extents = Vec::new();
        // Now and then more extents than a leaf holds: an indirect value.
        let count = if rng.chance(1, 8) { 9 + rng.below(40) } else { 1 + rng.below(2) };
        // The CRC of the value's bytes, as the store's log hands it over
        // (the tree keeps it with the value: a get returns it).
        let mut crc = 0;
        for _ in 0..count {
            let Ok(buffer) = self.buffers.allocate() else { break };
            let offset = rng.below(size);
            let len = 1 + rng.below(size - offset);
            let mut bytes = vec![0u8; len as usize];
            rng.fill(&mut bytes);
            self.pool.write(self.pool.buffer_offset(buffer) + offset, &bytes);
            crc = crc32c::crc32c_append(crc, &bytes);
            self.contents.insert(buffer, (offset as u16, bytes));
            extents.push(Extent::new(buffer, offset as usize, len as usize));
        }
        Value::Extents(extents, Some(crc))
    }

    fn drop_callers_references(&mut self, value: &Value) {
        if let Value::Extents(extents, _) = value {
            self.buffers.release_extents(extents).unwrap();
        }
    }

    fn insert(&mut self, key: Vec<u8>, rng: &mut SplitMix64, context: &str) {
        let value = self.value(rng);
        let previous = self.tree.insert(&self.pool, &mut self.buffers, &key, &value);
        self.drop_callers_references(&value);
        let previous = previous.unwrap_or_else(|e| panic!("{context}: insert: {e}"));
        // The model keeps what the tree stores: the value itself, or, for
        // more extents than a leaf holds, an indirect value naming them.
        let stored = self.tree.get(&self.pool, &key).unwrap().expect("get after insert");
        match (&stored, &value) {
            (Value::Indirect { .. }, Value::Extents(extents, _)) => {
                assert_eq!(
                    &packetstore::index::tree::value_extents(&self.pool, &stored).unwrap(),
                    extents,
                    "{context}: indirect"
                )
            }
            _ => assert_eq!(stored, value, "{context}: get after insert"),
        }
        assert_eq!(previous, self.model.insert(key.clone(), stored), "{context}: previous value");
    }

    fn delete(&mut self, key: &[u8], context: &str) {
        let previous = self.tree.delete(&self.pool, &mut self.buffers, key).unwrap();
        assert_eq!(previous, self.model.remove(key), "{context}: deleted value");
        assert_eq!(self.tree.get(&self.pool, key).unwrap(), None, "{context}: get after delete");
    }

    fn commit(&mut self) {
        self.tree.commit(&self.pool, &mut self.buffers).unwrap();
        self.committed = self.model.clone();
    }

    /// The shape and the reference counts (cheap: every step).
    fn check_shape(&self, context: &str) {
        let stats = self.tree.check_invariants(&self.pool).unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(stats.entries, self.model.len() as u64, "{context}: entries");
        if !self.tree.is_reclaiming() {
            for buffer in self.buffers.owned() {
                let expected = stats.refs.get(&buffer).copied().unwrap_or(0);
                assert_eq!(
                    u32::from(self.buffers.refs(buffer)),
                    expected,
                    "{context}: buffer {buffer}'s references (a leak, or a value not held)"
                );
            }
            self.buffers.check_invariants();
        }
    }

    /// Everything against the model: scans both ways, gets, value bytes.
    fn check_all(&self, context: &str) {
        self.check_shape(context);
        let entries = self.tree.entries(&self.pool).unwrap();
        let expected: Vec<(Vec<u8>, Value)> = self.model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(entries, expected, "{context}: forward scan");
        let unbounded = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
        let backward: Vec<_> = self.tree.range(&self.pool, unbounded, true).map(Result::unwrap).collect();
        assert!(backward.iter().rev().eq(entries.iter()), "{context}: backward scan");
        assert_eq!(self.tree.first(&self.pool).unwrap(), entries.first().cloned(), "{context}: first");
        assert_eq!(self.tree.last(&self.pool).unwrap(), entries.last().cloned(), "{context}: last");
        for (key, value) in &self.model {
            assert_eq!(self.tree.get(&self.pool, key).unwrap().as_ref(), Some(value), "{context}: get {key:?}");
            if !matches!(value, Value::Inline(_)) {
                for extent in packetstore::index::tree::value_extents(&self.pool, value).unwrap() {
                    let (offset, bytes) = &self.contents[&extent.buffer];
                    assert_eq!((extent.offset, usize::from(extent.len)), (*offset, bytes.len()));
                    let mut found = vec![0u8; bytes.len()];
                    self.pool.read(self.pool.buffer_offset(extent.buffer) + u64::from(*offset), &mut found);
                    assert!(found == *bytes, "{context}: the bytes of {key:?}'s value in buffer {}", extent.buffer);
                }
            }
        }
        self.check_order(context);
    }

    /// The order statistics against the model: `nth` and `rank` of every
    /// key (and `rank` of a key just after each, absent), `nth` past the
    /// end, `count` over ranges between sampled probes (present and absent
    /// keys) with every pair of bound kinds, and `range_from_rank` both
    /// ways from sampled ranks.
    fn check_order(&self, context: &str) {
        let (tree, pool) = (&self.tree, &self.pool);
        let keys: Vec<&Vec<u8>> = self.model.keys().collect();
        let len = keys.len() as u64;
        assert_eq!(tree.count(pool, (Bound::Unbounded, Bound::Unbounded)).unwrap(), len, "{context}: count all");
        for (rank, key) in keys.iter().enumerate() {
            assert_eq!(tree.rank(pool, key).unwrap(), rank as u64, "{context}: rank of {key:?}");
            let after = [key.as_slice(), &[0]].concat();
            assert!(!self.model.contains_key(&after), "probes are absent: keys hold no zero byte");
            assert_eq!(tree.rank(pool, &after).unwrap(), rank as u64 + 1, "{context}: rank after {key:?}");
            let (found, value) = tree.nth(pool, rank as u64).unwrap().expect("a rank below len");
            assert_eq!((&found, &value), (*key, &self.model[*key]), "{context}: nth({rank})");
        }
        assert_eq!(tree.nth(pool, len).unwrap(), None, "{context}: nth(len)");
        assert_eq!(tree.rank(pool, b"").unwrap(), 0, "{context}: rank of the empty key");
        let mut probes: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff]];
        for key in keys.iter().step_by(keys.len() / 6 + 1) {
            probes.push(key.to_vec());
            probes.push([key.as_slice(), &[0]].concat());
        }
        let bound = |kind: usize, key: &[u8]| -> Bound<Vec<u8>> {
            match kind {
                0 => Bound::Included(key.to_vec()),
                1 => Bound::Excluded(key.to_vec()),
                _ => Bound::Unbounded,
            }
        };
        for (a, b) in probes.iter().flat_map(|a| probes.iter().map(move |b| (a, b))) {
            for (start_kind, end_kind) in (0..3).flat_map(|s| (0..3).map(move |e| (s, e))) {
                let (start, end) = (bound(start_kind, a), bound(end_kind, b));
                let expected = keys.iter().filter(|k| within(k, &start, &end)).count() as u64;
                let range = (start.as_ref().map(Vec::as_slice), end.as_ref().map(Vec::as_slice));
                assert_eq!(tree.count(pool, range).unwrap(), expected, "{context}: count {start:?}..{end:?}");
            }
        }
        for rank in (0..len + 1).step_by(keys.len() / 5 + 1) {
            let limit = probes[rank as usize % probes.len()].clone();
            for (kind, reverse) in (0..3).flat_map(|k| [(k, false), (k, true)]) {
                let limit = bound(kind, &limit);
                let found: Vec<Vec<u8>> = tree
                    .range_from_rank(pool, rank, limit.as_ref().map(Vec::as_slice), reverse)
                    .map(|entry| entry.unwrap().0)
                    .collect();
                let expected: Vec<Vec<u8>> = match (reverse, rank < len) {
                    (_, false) => Vec::new(),
                    (false, true) => keys[rank as usize..]
                        .iter()
                        .take_while(|k| within(k, &Bound::Unbounded, &limit))
                        .map(|k| k.to_vec())
                        .collect(),
                    (true, true) => keys[..=rank as usize]
                        .iter()
                        .rev()
                        .take_while(|k| within(k, &limit, &Bound::Unbounded))
                        .map(|k| k.to_vec())
                        .collect(),
                };
                assert_eq!(found, expected, "{context}: from rank {rank}, reverse {reverse}, limit {limit:?}");
            }
        }
    }

    /// `check_all` less the order statistics (a tree without counts).
    fn check_all_but_order(&self, context: &str) {
        self.check_shape(context);
        let entries = self.tree.entries(&self.pool).unwrap();
        assert!(entries.iter().map(|(k, v)| (k, v)).eq(self.model.iter()), "{context}: forward scan");
        let unbounded = (Bound::Unbounded, Bound::Unbounded);
        let backward: Vec<_> = self.tree.range(&self.pool, unbounded, true).map(Result::unwrap).collect();
        assert!(backward.iter().rev().eq(entries.iter()), "{context}: backward scan");
        for (key, value) in &self.model {
            assert_eq!(self.tree.get(&self.pool, key).unwrap().as_ref(), Some(value), "{context}: get {key:?}");
        }
    }

    /// Reopens on `device` (a crash image or what memory holds).
    fn reopen(&mut self, device: SimDevice) {
        self.device = Arc::new(device);
        self.pool = Pool::open_simulated(self.device.clone()).unwrap();
        self.buffers = Buffers::new(self.geometry.buffer_count);
        self.tree = Tree::open(&self.pool, &mut self.buffers)
            .unwrap_or_else(|e| panic!("seed {}: the tree does not open: {e}", self.seed));
        self.tree.set_shadow(self.seed % 2 == 1).unwrap();
        let finder = if self.seed % 4 < 2 { FinderMode::Always } else { FinderMode::Adaptive };
        self.tree.set_finder_mode(finder);
    }

    /// Runs the reclamation walk a few nodes at a time.
    fn reclaim_some(&mut self, rng: &mut SplitMix64) {
        if self.tree.is_reclaiming() {
            let budget = 1 + rng.below(4) as usize;
            self.tree.reclaim_step(&self.pool, &mut self.buffers, budget).unwrap();
        }
    }
}

/// Whether `key` lies within the bounds (an empty range when they cross).
fn within(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let above = match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

fn run(seed: u64, buffer_size: u32) {
    let mut rng = SplitMix64::new(seed);
    let geometry = Geometry { buffer_size, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(seed, geometry, SimMode::CacheLine);
    // Half the seeds with a finder at every read (else it works only while
    // reads outnumber changes, seldom here).
    let finder = if seed % 4 < 2 { FinderMode::Always } else { FinderMode::Adaptive };
    store.tree.set_finder_mode(finder);
    for step in 0..3000 {
        let context = format!("seed {seed} step {step}");
        let key = format!("key-{:05}", rng.below(700)).into_bytes();
        // The second half deletes mostly: nodes merge, roots collapse.
        let delete_odds = if step < 1500 { (1, 3) } else { (3, 4) };
        // Half the changes read their key first, as a read-modify-write
        // does: the change then takes the path the read found, which test
        // builds check against a fresh descent. Half of those delete
        // another key in between (a command's other ops; no read after it,
        // which would replace the path kept), which may move nodes and must
        // then make the change descend afresh.
        if rng.chance(1, 2) {
            let found = store.tree.get(&store.pool, &key).unwrap();
            assert_eq!(found.as_ref(), store.model.get(&key), "{context}: get {key:?} before its change");
            if rng.chance(1, 2) {
                let other = format!("key-{:05}", rng.below(700)).into_bytes();
                let previous = store.tree.delete(&store.pool, &mut store.buffers, &other).unwrap();
                assert_eq!(previous, store.model.remove(&other), "{context}: deleted value of {other:?}");
            }
        }
        if rng.chance(delete_odds.0, delete_odds.1) {
            store.delete(&key, &context);
        } else {
            store.insert(key, &mut rng, &context);
        }
        store.reclaim_some(&mut rng);
        if rng.chance(1, 16) {
            store.commit();
        }
        store.check_shape(&context);
        // Lookups after every change (copies, splits, merges, root
        // changes), not only at the occasional full check.
        for _ in 0..3 {
            let probe = format!("key-{:05}", rng.below(700)).into_bytes();
            let found = store.tree.get(&store.pool, &probe).unwrap();
            assert_eq!(found.as_ref(), store.model.get(&probe), "{context}: get {probe:?}");
        }
        if rng.chance(1, 100) {
            store.check_all(&context);
        }
        if rng.chance(1, 300) {
            // A process crash: memory survives, the simulator keeps only
            // what was fenced; only the last committed version may be found.
            let after = store.device.after_process_crash();
            store.reopen(after);
            store.model = store.committed.clone();
            store.check_all(&format!("{context}: after reopen"));
        }
    }
    store.tree.finish_reclaim(&store.pool, &mut store.buffers).unwrap();
    store.commit();
    store.tree.set_finder_mode(FinderMode::Always);
    store.check_all(&format!("seed {seed}: final"));
    assert!(store.model.len() < 300, "seed {seed}: the delete-heavy half did not shrink the tree");
    // Nothing changed since the last full check read every key: a second
    // read of each is answered by the finder, without a descent (all but
    // the few whose bucket of four slots overflowed).
    let hits = store.tree.finder_hits();
    for (key, value) in &store.model {
        assert_eq!(store.tree.get(&store.pool, key).unwrap().as_ref(), Some(value), "seed {seed}: get {key:?} again");
    }
    let answered = store.tree.finder_hits() - hits;
    assert!(answered * 100 >= store.model.len() as u64 * 95, "seed {seed}: the finder answered {answered} reads");
}

/// Goal: the finder (the DRAM cache from a key to its leaf and index)
/// never answers what the tree no longer holds: after a same-size
/// overwrite in place (which keeps its slots), a different-size one, inserts
/// that split the key's leaf, deletes that merge it, a commit, and a
/// delete of the key itself, each read returns the model's value, and the
/// reads between changes are answered by it (so the test exercises it).
#[test]
fn the_finder_answers_only_what_the_tree_holds() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
    for shadow in [false, true] {
        let mut store = Store::new(u64::from(shadow), geometry, SimMode::CacheLine);
        store.tree.set_finder_mode(FinderMode::Always);
        let mut model = BTreeMap::new();
        let key = |i: u32| format!("key-{i:05}").into_bytes();
        let check = |store: &Store, model: &BTreeMap<Vec<u8>, Value>, context: &str| {
            for i in 0..400 {
                let found = store.tree.get(&store.pool, &key(i)).unwrap();
                assert_eq!(found.as_ref(), model.get(&key(i)), "{context}: get {i} (shadow {shadow})");
            }
        };
        let put = |store: &mut Store, model: &mut BTreeMap<Vec<u8>, Value>, i: u32, value: &[u8]| {
            store.tree.insert(&store.pool, &mut store.buffers, &key(i), &Value::Inline(value.to_vec())).unwrap();
            model.insert(key(i), Value::Inline(value.to_vec()));
        };
        for i in (0..400).step_by(4) {
            put(&mut store, &mut model, i, b"first");
        }
        check(&store, &model, "filled");
        let hits = store.tree.finder_hits();
        check(&store, &model, "read again");
        assert!(store.tree.finder_hits() - hits >= 100, "the second reads hit the finder");
        // Same size, in place: the slots stay, the values are new.
        for i in (0..400).step_by(4) {
            put(&mut store, &mut model, i, b"other");
        }
        check(&store, &model, "same-size overwrite");
        for i in (0..400).step_by(8) {
            put(&mut store, &mut model, i, b"a longer value than before");
        }
        check(&store, &model, "different-size overwrite");
        for i in (1..400).step_by(4) {
            put(&mut store, &mut model, i, b"between");
        }
        check(&store, &model, "inserts between (splits)");
        store.tree.commit(&store.pool, &mut store.buffers).unwrap();
        check(&store, &model, "committed");
        for i in (0..400).step_by(2) {
            store.tree.delete(&store.pool, &mut store.buffers, &key(i)).unwrap();
            model.remove(&key(i));
            if i % 40 == 0 {
                check(&store, &model, &format!("deleting, at {i}"));
            }
        }
        check(&store, &model, "deleted (merges)");
        store.tree.commit(&store.pool, &mut store.buffers).unwrap();
        check(&store, &model, "committed again");
    }
}

/// Goal: while the tree is quiet (reads, no changes), a descent fills the
/// finder with every key of the leaf it reached, so that keys read for the
/// first time are found without descending: of 2,000 keys read once
/// each, all but about one per leaf.
#[test]
fn a_quiet_tree_finds_keys_never_read_before() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    let key = |i: u32| format!("key-{i:05}").into_bytes();
    for i in 0..2000 {
        store.tree.insert(&store.pool, &mut store.buffers, &key(i), &Value::Inline(i.to_le_bytes().to_vec())).unwrap();
    }
    store.tree.commit(&store.pool, &mut store.buffers).unwrap();
    // Two windows of reads of one key: the finder learns the tree is quiet.
    for _ in 0..2048 {
        store.tree.get(&store.pool, &key(0)).unwrap();
    }
    let hits = store.tree.finder_hits();
    for i in 0..2000 {
        let found = store.tree.get(&store.pool, &key(i)).unwrap();
        assert_eq!(found, Some(Value::Inline(i.to_le_bytes().to_vec())), "get {i}");
    }
    let leaves = store.tree.check_invariants(&store.pool).unwrap().leaves;
    let answered = store.tree.finder_hits() - hits;
    assert!(answered + 2 * leaves >= 2000, "{answered} of 2,000 first reads found, {leaves} leaves");
    // Absent keys (each between two present ones): the second read of each
    // is answered from the leaf the first one's descent ended in (most:
    // they take slots from present keys in a finder sized for those).
    let absent = |i: u32| format!("key-{:05}+", i * 4).into_bytes();
    for i in 0..500 {
        assert_eq!(store.tree.get(&store.pool, &absent(i)).unwrap(), None, "get absent {i}");
    }
    let hits = store.tree.finder_hits();
    for i in 0..500 {
        assert_eq!(store.tree.get(&store.pool, &absent(i)).unwrap(), None, "get absent {i} again");
    }
    let answered = store.tree.finder_hits() - hits;
    assert!(answered >= 300, "{answered} of 500 absent keys' second reads answered");
    // And a key inserted where one was absent is found (its leaf changed).
    store.tree.insert(&store.pool, &mut store.buffers, &absent(7), &Value::Inline(b"now".to_vec())).unwrap();
    assert_eq!(store.tree.get(&store.pool, &absent(7)).unwrap(), Some(Value::Inline(b"now".to_vec())));
}

#[test]
fn tree_matches_the_model_with_its_invariants_after_every_step() {
    for seed in 0..12 {
        run(seed, if seed % 2 == 0 { 512 } else { 2048 });
    }
}

/// Goal: every commit is atomic across a power failure, splits, merges and
/// root changes included, and nothing leaks. Power fails between
/// operations or at either fence of a commit (the nodes' fence, or the meta
/// slot's); after recovery (the reclamation walk run in steps among new
/// changes) the tree is exactly the last committed version, or, when the
/// failure hit the meta slot's fence, the version being committed; every
/// invariant holds, values have their bytes, and every buffer's reference
/// count is the tree's. Then it goes on from there, three failures per
/// seed. Seeds are printed on failure; `PACKETSTORE_TREE_CRASH_SEEDS` sets
/// how many (700 by default: over 2,000 failure points),
/// `PACKETSTORE_TREE_SEED` replays one.
#[test]
fn commits_are_atomic_across_power_failures() {
    if let Some(seed) = std::env::var("PACKETSTORE_TREE_SEED").ok().and_then(|v| v.parse().ok()) {
        return power_failures(seed);
    }
    // Found by the long mode: a partly written meta slot of a failed commit,
    // mixed with the next commit's words, reassembled into a valid old meta.
    power_failures(2_128_642_117);
    let seeds: u64 = std::env::var("PACKETSTORE_TREE_CRASH_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(700);
    for seed in 0..seeds {
        power_failures(0x7ee0_0000 + seed);
    }
    // Every cycle ends in a power failure (at a fence, or between steps).
    println!("{} failure points, {seeds} seeds", CYCLES * (seeds + 1));
}

const CYCLES: u64 = 3;

fn power_failures(seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let mode = if rng.chance(1, 2) { SimMode::CacheLine } else { SimMode::Page };
    let geometry = Geometry { buffer_size: 512, buffer_count: 2048, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(seed, geometry, mode);
    for cycle in 0..CYCLES {
        let context = format!("seed {seed} cycle {cycle}");
        let steps = 1 + rng.below(150);
        let mut failed_at_meta = false;
        let mut image = None;
        for step in 0..steps {
            let key = format!("k{:04}", rng.below(300)).into_bytes();
            if rng.chance(1, 3) {
                store.delete(&key, &context);
            } else {
                store.insert(key, &mut rng, &context);
            }
            store.reclaim_some(&mut rng);
            let last = step + 1 == steps;
            if last || rng.chance(1, 10) {
                if last && rng.chance(2, 3) {
                    // Power fails at the first (nodes) or second (meta) fence.
                    let which = 1 + rng.below(2);
                    store.device.crash_at_fence(store.device.fences() + which, rng.next_u64());
                    failed_at_meta = which == 2;
                }
                match store.tree.commit(&store.pool, &mut store.buffers) {
                    Ok(()) => store.committed = store.model.clone(),
                    Err(_) => {
                        assert!(store.device.is_dead(), "{context}: a commit failed without a power failure");
                        image = store.device.take_crash_image();
                        break;
                    }
                }
            }
        }
        let image = image.unwrap_or_else(|| store.device.crash(rng.next_u64()));
        store.reopen(SimDevice::from_image(image, mode));
        let found: BTreeMap<Vec<u8>, Value> = store.tree.entries(&store.pool).unwrap().into_iter().collect();
        let ok = found == store.committed || (failed_at_meta && found == store.model);
        assert!(
            ok,
            "{context}: recovered {} keys, committed {}, batch {}",
            found.len(),
            store.committed.len(),
            store.model.len()
        );
        store.model = found.clone();
        store.committed = found;
        store.check_all(&format!("{context}: after recovery"));
        // Changes while the walk runs, then the walk's end: no leak.
        for step in 0..rng.below(20) {
            let key = format!("k{:04}", rng.below(300)).into_bytes();
            store.insert(key, &mut rng, &format!("{context}: during the walk, step {step}"));
            store.reclaim_some(&mut rng);
        }
        store.tree.finish_reclaim(&store.pool, &mut store.buffers).unwrap();
        store.check_all(&format!("{context}: after the walk"));
    }
}

/// Goal: deleting everything, in ascending order (every emptied leaf is its
/// parent's first child) and in descending order (always the last), keeps
/// the tree correct at every step and ends with no node at all.
#[test]
fn deleting_everything_in_order_empties_the_tree() {
    for descending in [false, true] {
        let geometry = Geometry { buffer_size: 512, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
        let mut store = Store::new(0, geometry, SimMode::CacheLine);
        for i in 0..2000u32 {
            let key = format!("{i:06}").into_bytes();
            let value = Value::Inline(i.to_le_bytes().to_vec());
            store.tree.insert(&store.pool, &mut store.buffers, &key, &value).unwrap();
            store.model.insert(key, value);
        }
        store.commit();
        let height = store.tree.height();
        assert!(height >= 2, "2,000 keys in 512-byte nodes make at least three levels");
        let keys: Vec<Vec<u8>> = if descending {
            store.model.keys().rev().cloned().collect()
        } else {
            store.model.keys().cloned().collect()
        };
        for (n, key) in keys.iter().enumerate() {
            let context = format!("descending {descending}, delete {n}");
            store.delete(key, &context);
            store.check_shape(&context);
            if n % 300 == 0 {
                store.commit();
            }
        }
        store.commit();
        assert!(store.tree.is_empty() && store.tree.node_count(&store.pool).unwrap() == 0);
        assert_eq!(store.buffers.free_count(), geometry.buffer_count, "descending {descending}: every node was freed");
    }
}

/// Goal: a pinned committed version (a snapshot stream's) reads back
/// exactly as it was committed while later commits rewrite, overwrite and
/// delete everything, and nothing it references is freed until the last
/// unpin; then every buffer the later versions dropped is free again.
#[test]
fn a_pinned_version_stays_whole_through_later_commits() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    for i in 0..1500u32 {
        let key = format!("{i:06}").into_bytes();
        store.tree.insert(&store.pool, &mut store.buffers, &key, &Value::Inline(i.to_le_bytes().to_vec())).unwrap();
    }
    store.commit();
    let pinned: Vec<(Vec<u8>, Value)> = store.tree.entries(&store.pool).unwrap();
    let version = store.tree.pin_committed();
    let second = store.tree.pin_committed();
    let free_pinned = store.buffers.free_count();
    for round in 0..4u32 {
        for i in 0..1500u32 {
            let key = format!("{i:06}").into_bytes();
            if (i + round) % 3 == 0 {
                store.tree.delete(&store.pool, &mut store.buffers, &key).unwrap();
            } else {
                let value = Value::Inline(vec![round as u8; 20 + (i % 40) as usize]);
                store.tree.insert(&store.pool, &mut store.buffers, &key, &value).unwrap();
            }
        }
        store.commit();
        let read: Vec<(Vec<u8>, Value)> = store
            .tree
            .range_in(&version, &store.pool, (Bound::Unbounded, Bound::Unbounded))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(read, pinned, "round {round}: the pinned version changed");
        assert!(store.tree.pinned_buffers() > 0, "round {round}: nothing held back");
        assert!(store.buffers.free_count() < free_pinned, "round {round}: a pinned node was freed");
    }
    assert_eq!(version, second);
    store.tree.unpin(&mut store.buffers).unwrap();
    assert!(store.tree.pinned_buffers() > 0, "one pin left: still held");
    store.tree.unpin(&mut store.buffers).unwrap();
    assert_eq!(store.tree.pinned_buffers(), 0);
    let live = store.tree.node_count(&store.pool).unwrap() as u32;
    assert_eq!(store.buffers.free_count(), geometry.buffer_count - live, "every buffer held back was freed");
}

/// Goal: range scans, forward and backward, with every kind of bound, return
/// exactly what `BTreeMap::range` returns.
#[test]
fn range_scans_match_the_model() {
    use std::ops::Bound;
    for seed in 0..6u64 {
        let mut rng = SplitMix64::new(0x5ca0 + seed);
        let geometry = Geometry {
            buffer_size: if seed % 2 == 0 { 512 } else { 2048 },
            buffer_count: 4096,
            log_size: 16 * 1024,
            log_count: 1,
        };
        let mut store = Store::new(seed, geometry, SimMode::CacheLine);
        for _ in 0..1500 {
            let key = format!("{:04}", rng.below(1000)).into_bytes();
            if rng.chance(1, 4) {
                store.delete(&key, "fill");
            } else {
                store.insert(key, &mut rng, "fill");
            }
        }
        store.commit();
        let (tree, pool, model) = (&store.tree, &store.pool, &store.model);
        let bound = |rng: &mut SplitMix64, key: &Vec<u8>| match rng.below(3) {
            0 => Bound::Included(key.clone()),
            1 => Bound::Excluded(key.clone()),
            _ => Bound::Unbounded,
        };
        for _ in 0..300 {
            let (a, b) =
                (format!("{:04}", rng.below(1100)).into_bytes(), format!("{:04}", rng.below(1100)).into_bytes());
            let (start, end) = (bound(&mut rng, &a), bound(&mut rng, &b));
            let invalid = match (&start, &end) {
                (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
                    s > e || (s == e && (matches!(start, Bound::Excluded(_)) || matches!(end, Bound::Excluded(_))))
                }
                _ => false,
            };
            let expected: Vec<(Vec<u8>, Value)> = if invalid {
                Vec::new()
            } else {
                model.range((start.clone(), end.clone())).map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            let bounds = (start.as_ref().map(|k| k.as_slice()), end.as_ref().map(|k| k.as_slice()));
            let forward: Vec<_> = tree.range(pool, bounds, false).map(|r| r.unwrap()).collect();
            assert_eq!(forward, expected, "seed {seed}: forward {start:?}..{end:?}");
            let backward: Vec<_> = tree.range(pool, bounds, true).map(|r| r.unwrap()).collect();
            assert!(backward.iter().rev().eq(expected.iter()), "seed {seed}: backward {start:?}..{end:?}");
        }
    }
}

/// Goal: a damaged node image is a clear error, never a wrong answer or a
/// panic. Method: flip one bit in each node in turn and reopen (as after a
/// restart on a damaged pool): a full scan, which visits every node, must
/// fail, and so must the reclamation walk; every get returns the right
/// value or an error; a change on a damaged path is refused and stops
/// further changes (the tree is poisoned, not half-updated).
#[test]
fn damaged_nodes_are_errors_not_wrong_answers() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 1024, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    for i in 0..300u32 {
        let key = format!("{:05}", i * 7 % 1000).into_bytes();
        let value = Value::Inline(i.to_le_bytes().to_vec());
        store.tree.insert(&store.pool, &mut store.buffers, &key, &value).unwrap();
        store.model.insert(key, value);
    }
    store.commit();
    let nodes: Vec<u32> = store.buffers.owned().filter(|&b| store.buffers.refs(b) > 0).collect();
    assert_eq!(nodes.len() as u64, store.tree.node_count(&store.pool).unwrap());
    let mut rng = SplitMix64::new(9);
    for &node in &nodes {
        let at = store.pool.buffer_offset(node) + rng.below(u64::from(geometry.buffer_size));
        let mut byte = [0u8; 1];
        store.pool.read(at, &mut byte);
        store.pool.write(at, &[byte[0] ^ (1 << rng.below(8))]);
        let after = store.device.after_process_crash();
        store.reopen(after);
        let (tree, pool) = (&store.tree, &store.pool);
        let scan: Result<Vec<_>, _> =
            tree.range(pool, (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded), false).collect();
        assert!(scan.is_err(), "node {node}: a damaged node went unnoticed by a full scan");
        for (key, value) in &store.model {
            match tree.get(pool, key) {
                Ok(found) => assert_eq!(found.as_ref(), Some(value), "node {node}: a wrong answer for {key:?}"),
                Err(error) => assert!(error.to_string().contains("tree node"), "{error}"),
            }
        }
        let walk = store.tree.finish_reclaim(&store.pool, &mut store.buffers);
        assert!(walk.is_err(), "node {node}: the reclamation walk missed the damage");
        let refused = store.tree.insert(&store.pool, &mut store.buffers, b"00000", &Value::Inline(vec![1]));
        assert!(refused.is_err(), "node {node}: a change accepted after the walk failed");
        store.pool.write(at, &byte);
    }
    let after = store.device.after_process_crash();
    store.reopen(after);
    store.tree.finish_reclaim(&store.pool, &mut store.buffers).unwrap();
    store.check_all("restored");
}

/// Goal: opening is O(1): it reads no node. Method: damage a leaf, reopen;
/// opening and a get on another leaf's key succeed; the damage surfaces
/// only when a reader or the reclamation walk reaches that leaf.
#[test]
fn opening_reads_no_node() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 1024, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    for i in 0..400u32 {
        let key = format!("{i:05}").into_bytes();
        store.tree.insert(&store.pool, &mut store.buffers, &key, &Value::Inline(vec![7; 20])).unwrap();
    }
    store.commit();
    // The last key's leaf is the rightmost one; damage the first key's.
    let first_leaf = {
        let stats = store.tree.check_invariants(&store.pool).unwrap();
        assert!(stats.height >= 1);
        // The leaf holding "00000" is the one a get of it reads last.
        *stats.refs.keys().find(|&&b| leaf_holds(&store.pool, b, b"00000")).unwrap()
    };
    store.pool.write(store.pool.buffer_offset(first_leaf) + 100, &[0xAA; 4]);
    let after = store.device.after_process_crash();
    store.reopen(after);
    assert_eq!(store.tree.len(), 400, "len comes from the meta slot");
    assert_eq!(store.tree.get(&store.pool, b"00399").unwrap(), Some(Value::Inline(vec![7; 20])));
    assert!(store.tree.get(&store.pool, b"00000").is_err(), "the damaged leaf is found when read");
    assert!(store.tree.finish_reclaim(&store.pool, &mut store.buffers).is_err());
}

fn leaf_holds(pool: &Pool, buffer: u32, key: &[u8]) -> bool {
    let mut bytes = vec![0u8; pool.geometry().buffer_size as usize];
    pool.read(pool.buffer_offset(buffer), &mut bytes);
    matches!(packetstore::index::node::Node::decode(&bytes), Ok(packetstore::index::node::Node::Leaf { entries, .. })
        if entries.iter().any(|(k, _)| k == key))
}

/// Goal: a full pool is a clean error: the change that does not fit is
/// refused before anything is modified, everything already in the tree
/// stays, commits go on, and deleting makes room again. During the
/// reclamation walk, a change short of buffers finishes the walk first.
#[test]
fn a_full_pool_refuses_changes_cleanly() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 64, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    let mut i = 0u32;
    let error = loop {
        let key = format!("{i:05}").into_bytes();
        let value = Value::Inline(vec![i as u8; 30]);
        match store.tree.insert(&store.pool, &mut store.buffers, &key, &value) {
            Ok(_) => {
                store.model.insert(key, value);
                i += 1;
            }
            Err(error) => break error,
        }
        if i % 8 == 0 {
            store.commit();
        }
    };
    assert!(error.to_string().contains("full"), "{error}");
    store.check_all("full");
    store.commit();
    store.check_all("full, committed");
    // After a restart, the walk has not run: space is found by finishing it.
    let after = store.device.after_process_crash();
    store.reopen(after);
    assert!(store.tree.is_reclaiming());
    for n in 0..i / 2 {
        store.delete(format!("{n:05}").as_bytes(), "deleting");
        if n % 8 == 0 {
            store.commit();
        }
    }
    assert!(!store.tree.is_reclaiming(), "a change short of buffers finished the walk");
    store.commit();
    for n in 0..i / 4 {
        let key = format!("{n:05}").into_bytes();
        let value = Value::Inline(vec![1; 30]);
        store.tree.insert(&store.pool, &mut store.buffers, &key, &value).unwrap();
        store.model.insert(key, value);
    }
    store.commit();
    store.check_all("refilled");
}

/// Goal: keys and values over the limits are refused with their sizes, and
/// limits that would not fit three entries to a node are refused at open.
#[test]
fn limits_are_explicit() {
    use packetstore::index::tree::{TreeConfig, TreeError};
    let geometry = Geometry { buffer_size: 2048, buffer_count: 64, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    let config = store.tree.config();
    assert_eq!(config.key_size_max, 512, "the default key limit");
    let long_key = vec![b'k'; 513];
    let error = store.tree.insert(&store.pool, &mut store.buffers, &long_key, &Value::Inline(vec![])).unwrap_err();
    assert!(matches!(error, TreeError::KeyTooLarge { size: 513, limit: 512 }), "{error}");
    let big = Value::Inline(vec![0; config.value_size_max + 1]);
    let error = store.tree.insert(&store.pool, &mut store.buffers, b"k", &big).unwrap_err();
    assert!(matches!(error, TreeError::ValueTooLarge { .. }), "{error}");
    let largest = Value::Inline(vec![0; config.value_size_max]);
    store.tree.insert(&store.pool, &mut store.buffers, &vec![b'k'; 512], &largest).unwrap();
    let bad_extent = Value::Extents(vec![Extent::new(64, 0, 1)], None);
    assert!(store.tree.insert(&store.pool, &mut store.buffers, b"x", &bad_extent).is_err());
    store.commit();
    let too_big = TreeConfig { key_size_max: 512, value_size_max: 300 };
    let mut buffers = Buffers::new(geometry.buffer_count);
    let refused = Tree::open_with(&store.pool, &mut buffers, too_big);
    assert!(matches!(refused, Err(TreeError::Config(_))), "three 819-byte entries do not fit 2 KiB");
}

/// Goal: PASTE's write-behind logging, with one reference count. A write's
/// data stays in the buffers it landed in; the log records it first (a
/// small record naming its extents, durable at the log's commit: the write
/// is acknowledged then); the tree indexes it and, once the tree's commit
/// is durable, the record is released. After any power failure:
/// - the log's recovery and the tree's reclamation walk agree on every
///   buffer: its count is exactly the live records' references plus the
///   tree's, so nothing leaks and nothing referenced is free;
/// - replaying the live records the tree lacks gives every acknowledged
///   write, with its bytes, and nothing that was never written.
///
/// `PACKETSTORE_WRITE_BEHIND_SEEDS` sets the number of seeds (300 by
/// default, three failures each).
#[test]
fn write_behind_log_and_tree_agree_on_buffers() {
    let seeds: u64 = std::env::var("PACKETSTORE_WRITE_BEHIND_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for seed in 0..seeds {
        write_behind(0x3b00_0000 + seed);
    }
}

fn write_behind(seed: u64) {
    use packetstore::Log;
    let mut rng = SplitMix64::new(seed);
    let mode = if rng.chance(1, 2) { SimMode::CacheLine } else { SimMode::Page };
    let geometry = Geometry { buffer_size: 512, buffer_count: 1024, log_size: 32 * 1024, log_count: 1 };
    let mut device = Arc::new(SimDevice::new(geometry.file_size(), mode));
    let mut pool = Pool::create_simulated(device.clone(), geometry).unwrap();
    let mut buffers = Buffers::new(geometry.buffer_count);
    let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
    let mut tree = Tree::open(&pool, &mut buffers).unwrap();
    let mut acknowledged: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut written: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    let mut next_key = 0u64;
    for cycle in 0..3 {
        let context = format!("seed {seed} cycle {cycle}");
        // Records appended in the open turn, and indexed in the tree.
        let mut turn: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut image = None;
        for step in 0..1 + rng.below(60) {
            let key = format!("w{next_key:06}").into_bytes();
            next_key += 1;
            let mut data = vec![0u8; 1 + rng.below(900) as usize];
            rng.fill(&mut data);
            let mut extents = Vec::new();
            buffers.copy_in(&pool, &data, &mut extents).unwrap();
            let lsn = log.append(&pool, &mut buffers, 1, 0, &key, &extents).unwrap();
            tree.insert(&pool, &mut buffers, &key, &Value::Extents(extents.clone(), None)).unwrap();
            buffers.release_extents(&extents).unwrap();
            written.insert(key.clone(), data);
            turn.push((lsn, key));
            if step % 7 == 6 || rng.chance(1, 5) {
                // The end of a turn: the log's commit acknowledges, the
                // tree's makes the records redundant, their release follows.
                if rng.chance(1, 3) {
                    device.crash_at_fence(device.fences() + 1 + rng.below(4), rng.next_u64());
                }
                let log_committed = log.commit(&pool, &mut buffers).is_ok();
                if log_committed {
                    acknowledged.extend(turn.iter().map(|(_, k)| (k.clone(), written[k].clone())));
                }
                if !log_committed || tree.commit(&pool, &mut buffers).is_err() {
                    image = device.take_crash_image();
                    break;
                }
                for (lsn, _) in turn.drain(..) {
                    log.release(&pool, lsn).unwrap();
                }
            }
        }
        device.disarm();
        let image = image.unwrap_or_else(|| device.crash(rng.next_u64()));
        device = Arc::new(SimDevice::from_image(image, mode));
        pool = Pool::open_simulated(device.clone()).unwrap();
        buffers = Buffers::new(geometry.buffer_count);
        (log, _) = Log::recover(&pool, &mut buffers).unwrap_or_else(|e| panic!("{context}: log recovery: {e}"));
        tree = Tree::open(&pool, &mut buffers).unwrap();
        tree.finish_reclaim(&pool, &mut buffers).unwrap();
        // One reference count: the log's records plus the tree's.
        let stats = tree.check_invariants(&pool).unwrap_or_else(|e| panic!("{context}: {e}"));
        let mut expected = stats.refs.clone();
        let live: Vec<u64> = log.live_lsns().collect();
        for &lsn in &live {
            for extent in log.view(&pool, lsn).unwrap().extents {
                *expected.entry(extent.buffer).or_default() += 1;
            }
        }
        for buffer in buffers.owned() {
            let want = expected.get(&buffer).copied().unwrap_or(0);
            assert_eq!(u32::from(buffers.refs(buffer)), want, "{context}: buffer {buffer}'s references");
        }
        buffers.check_invariants();
        // Replay what the tree lacks, then the records are redundant.
        for &lsn in &live {
            let view = log.view(&pool, lsn).unwrap();
            if tree.get(&pool, &view.key).unwrap().is_none() {
                tree.insert(&pool, &mut buffers, &view.key, &Value::Extents(view.extents.clone(), Some(view.data_crc)))
                    .unwrap();
            }
        }
        tree.commit(&pool, &mut buffers).unwrap();
        for &lsn in &live {
            log.release(&pool, lsn).unwrap();
        }
        log.commit(&pool, &mut buffers).unwrap();
        // Every acknowledged write, with its bytes; nothing never written.
        let mut found = BTreeMap::new();
        for (key, value) in tree.entries(&pool).unwrap() {
            let Value::Extents(extents, _) = value else { panic!("{context}: an inline value nobody wrote") };
            let mut data = Vec::new();
            for extent in extents {
                let mut bytes = vec![0u8; usize::from(extent.len)];
                pool.read(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), &mut bytes);
                data.extend_from_slice(&bytes);
            }
            let expected = written.get(&key).unwrap_or_else(|| panic!("{context}: {key:?} was never written"));
            assert!(data == *expected, "{context}: the bytes of {key:?}");
            found.insert(key, data);
        }
        for key in acknowledged.keys() {
            assert!(found.contains_key(key), "{context}: acknowledged {key:?} lost");
        }
        acknowledged = found;
    }
}

/// Goal: the order statistics (`count`, `rank`, `nth`, `range_from_rank`)
/// agree with the model at every moment: within a batch (counts changed in
/// place in the batch's nodes), after commits, and after process crashes
/// and reopens. Method: random inserts, overwrites and deletes over a key
/// space that grows and shrinks the tree through several levels (512-byte
/// nodes), the whole check every 40 steps, on both node homes (shadow or
/// pool); `check_invariants` checks every subtree count after every step.
#[test]
fn order_statistics_match_the_model() {
    for seed in 0..4u64 {
        let mut rng = SplitMix64::new(0x0da7 + seed);
        let geometry = Geometry { buffer_size: 512, buffer_count: 4096, log_size: 16 * 1024, log_count: 1 };
        let mut store = Store::new(seed, geometry, SimMode::CacheLine);
        for step in 0..2400 {
            let context = format!("seed {seed} step {step}");
            let key = format!("o{:04}", rng.below(900)).into_bytes();
            let delete_odds = if step < 1200 { (1, 4) } else { (2, 3) };
            if rng.chance(delete_odds.0, delete_odds.1) {
                store.delete(&key, &context);
            } else {
                store.insert(key, &mut rng, &context);
            }
            store.reclaim_some(&mut rng);
            if rng.chance(1, 20) {
                store.commit();
            }
            store.check_shape(&context);
            if step % 40 == 0 {
                store.check_order(&context);
            }
            if rng.chance(1, 400) {
                let after = store.device.after_process_crash();
                store.reopen(after);
                store.model = store.committed.clone();
                store.check_all(&format!("{context}: after reopen"));
            }
        }
        assert!(store.tree.height() >= 1, "seed {seed}: the tree kept more than one leaf");
    }
}

/// Goal: a tree written before order statistics (kind-2 internal nodes)
/// still opens and reads; counts and changes are refused with a clear
/// error (nothing mixes the two kinds); `add_counts` upgrades it, a power
/// failure during the upgrade's commit leaves the old tree or the new one
/// with the same contents, and the upgraded tree, reopened, counts exactly
/// and takes changes. Method: a tree built by this build, rewritten by the
/// test-only writer of kind-2 nodes, committed. (Its nodes, once counted
/// nodes, always fit again: `the_trees_of_an_older_release_upgrade` has
/// internal nodes that do not.)
#[test]
fn trees_without_counts_read_and_upgrade() {
    for (seed, fence) in [(0u64, None), (1, Some(1u64)), (2, Some(2))] {
        let context = format!("seed {seed}, power failure at fence {fence:?}");
        let mut rng = SplitMix64::new(0x01d + seed);
        let geometry = Geometry { buffer_size: 512, buffer_count: 16384, log_size: 16 * 1024, log_count: 1 };
        let mut store = Store::new(seed, geometry, SimMode::CacheLine);
        for _ in 0..3000 {
            let key = format!("{:08}", rng.below(100_000)).into_bytes();
            store.insert(key, &mut rng, &context);
        }
        store.commit();
        store.tree.remove_counts_for_tests(&store.pool, &mut store.buffers).unwrap();
        store.commit();
        let after = store.device.after_process_crash();
        store.reopen(after);
        let (pool, tree) = (&store.pool, &store.tree);
        assert!(tree.height() >= 2 && !tree.is_counted(pool).unwrap(), "{context}: an old tree, three levels");
        let unbounded = (Bound::Unbounded, Bound::Unbounded);
        assert!(matches!(tree.count(pool, unbounded), Err(TreeError::Uncounted)), "{context}: count refused");
        assert!(matches!(tree.rank(pool, b"5"), Err(TreeError::Uncounted)), "{context}: rank refused");
        assert!(matches!(tree.nth(pool, 0), Err(TreeError::Uncounted)), "{context}: nth refused");
        let from_rank = tree.range_from_rank(pool, 0, Bound::Unbounded, false).next();
        assert!(matches!(from_rank, Some(Err(TreeError::Uncounted))), "{context}: range_from_rank refused");
        store.check_shape(&context);
        let entries = store.tree.entries(&store.pool).unwrap();
        assert!(entries.iter().map(|(k, v)| (k, v)).eq(store.model.iter()), "{context}: an old tree reads");
        let value = Value::Inline(vec![1]);
        let refused = store.tree.insert(&store.pool, &mut store.buffers, b"new", &value);
        assert!(matches!(refused, Err(TreeError::Uncounted)), "{context}: insert refused");
        let refused = store.tree.delete(&store.pool, &mut store.buffers, entries[0].0.as_slice());
        assert!(matches!(refused, Err(TreeError::Uncounted)), "{context}: delete refused");
        store.tree.finish_reclaim(&store.pool, &mut store.buffers).unwrap();
        store.check_all_but_order(&context);
        let nodes_before = store.tree.node_count(&store.pool).unwrap();
        store.tree.add_counts(&store.pool, &mut store.buffers).unwrap();
        assert!(store.tree.is_counted(&store.pool).unwrap());
        store.check_all(&format!("{context}: upgraded, not committed"));
        assert!(store.tree.node_count(&store.pool).unwrap() >= nodes_before, "{context}: a node per node, or more");
        let mut upgraded = true;
        if let Some(fence) = fence {
            store.device.crash_at_fence(store.device.fences() + fence, rng.next_u64());
            assert!(store.tree.commit(&store.pool, &mut store.buffers).is_err());
            let image = store.device.take_crash_image().expect("a power failure");
            store.reopen(SimDevice::from_image(image, SimMode::CacheLine));
            upgraded = store.tree.is_counted(&store.pool).unwrap();
            if fence == 1 {
                assert!(!upgraded, "{context}: the upgrade's nodes were not durable");
            }
        } else {
            store.commit();
            let after = store.device.after_process_crash();
            store.reopen(after);
        }
        store.tree.finish_reclaim(&store.pool, &mut store.buffers).unwrap();
        if !upgraded {
            store.check_all_but_order(&format!("{context}: the old tree after the failure"));
            store.tree.add_counts(&store.pool, &mut store.buffers).unwrap();
        }
        store.commit();
        store.check_all(&format!("{context}: upgraded and reopened"));
        for step in 0..1500 {
            let key = format!("{:08}", rng.below(100_000)).into_bytes();
            let step_context = format!("{context}: change {step} after the upgrade");
            if rng.chance(1, 2) {
                let existing = store.model.keys().nth(rng.below(store.model.len() as u64) as usize).cloned();
                store.delete(&existing.unwrap_or(key), &step_context);
            } else {
                store.insert(key, &mut rng, &step_context);
            }
            store.check_shape(&step_context);
        }
        store.commit();
        store.check_all(&format!("{context}: changed after the upgrade"));
    }
}

/// Goal: a pool written by the release before order statistics (kind-2
/// internal nodes, as full as that release filled them) opens, reads,
/// refuses counts and changes, and upgrades with `add_counts`, splitting
/// the internal nodes that no longer fit once counted (the root too, which
/// then gains a level); the upgraded tree, committed and reopened, counts
/// exactly and takes changes.
///
/// Method: `fixtures/tree-kind2.bin` and `tree-kind2-root.bin` were written
/// by commit 3467b5f (before order statistics): a tree pool of 256 (64)
/// buffers of 512 bytes, 1,500 (450) inserts of `format!("{:08}",
/// rng.below(100_000))` (SplitMix64 seeded 0x6b32) with value `i as u32`
/// little-endian (i the insert's index), a commit every 100 inserts and one
/// at the end: 1,487 keys in three levels (447 keys in two, a root of 24
/// separators, which do not fit one node with their counts). The test opens
/// a copy of each and replays the same inserts into the model.
#[test]
fn the_trees_of_an_older_release_upgrade() {
    for (name, inserts, height) in [("tree-kind2.bin", 1500, 2), ("tree-kind2-root.bin", 450, 1)] {
        let grows = name.contains("root");
        upgrade_fixture(name, inserts, height, grows);
    }
}

fn upgrade_fixture(name: &str, inserts: u32, height: u8, root_splits: bool) {
    use packetstore::{PersistOptions, PoolKind, PoolKindExt};
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let path = std::env::temp_dir().join(format!("packetstore-{name}-{}.pool", std::process::id()));
    std::fs::copy(&fixture, &path).expect("the committed fixture");
    let mut model = BTreeMap::new();
    let mut rng = SplitMix64::new(0x6b32);
    for i in 0..inserts {
        model.insert(format!("{:08}", rng.below(100_000)).into_bytes(), Value::Inline(i.to_le_bytes().to_vec()));
    }
    let open = || {
        let pool = Pool::open_as(&path, PoolKind::Tree, &PersistOptions::default()).unwrap();
        let mut buffers = Buffers::new(pool.geometry().buffer_count);
        let mut tree = Tree::open(&pool, &mut buffers).unwrap();
        tree.finish_reclaim(&pool, &mut buffers).unwrap();
        (pool, buffers, tree)
    };
    let (pool, mut buffers, mut tree) = open();
    assert_eq!((tree.len(), tree.height()), (model.len() as u64, height), "{name}");
    assert!(!tree.is_counted(&pool).unwrap(), "{name}");
    assert!(tree.entries(&pool).unwrap().iter().map(|(k, v)| (k, v)).eq(model.iter()), "{name}: the old tree reads");
    for (key, value) in &model {
        assert_eq!(tree.get(&pool, key).unwrap().as_ref(), Some(value), "{name}");
    }
    assert!(matches!(tree.count(&pool, (Bound::Unbounded, Bound::Unbounded)), Err(TreeError::Uncounted)));
    let refused = tree.insert(&pool, &mut buffers, b"x", &Value::Inline(Vec::new()));
    assert!(matches!(refused, Err(TreeError::Uncounted)), "{name}");
    let before = tree.check_invariants(&pool).unwrap();
    tree.add_counts(&pool, &mut buffers).unwrap();
    let after = tree.check_invariants(&pool).unwrap();
    assert_eq!(after.entries, before.entries, "{name}");
    assert_eq!(after.leaves, before.leaves, "{name}: the upgrade writes no leaf");
    assert!(after.nodes > before.nodes, "{name}: internal nodes too full for their counts were split");
    assert_eq!(tree.height(), height + u8::from(root_splits), "{name}: the root split under a new one");
    tree.commit(&pool, &mut buffers).unwrap();
    drop((tree, buffers, pool));
    let (pool, mut buffers, mut tree) = open();
    assert!(tree.is_counted(&pool).unwrap(), "{name}");
    tree.check_invariants(&pool).unwrap();
    for (rank, (key, value)) in model.iter().enumerate() {
        assert_eq!(tree.rank(&pool, key).unwrap(), rank as u64, "{name}");
        assert_eq!(tree.nth(&pool, rank as u64).unwrap(), Some((key.clone(), value.clone())), "{name}");
    }
    let range = (Bound::Included(&b"00050000"[..]), Bound::Excluded(&b"00070000"[..]));
    let expected = model.range::<[u8], _>(range).count() as u64;
    assert_eq!(tree.count(&pool, range).unwrap(), expected, "{name}");
    for i in 0..200u32 {
        let key = format!("{:08}", rng.below(100_000)).into_bytes();
        if i % 3 == 0 {
            assert_eq!(tree.delete(&pool, &mut buffers, &key).unwrap(), model.remove(&key), "{name}");
        } else {
            let value = Value::Inline(vec![i as u8]);
            assert_eq!(tree.insert(&pool, &mut buffers, &key, &value).unwrap(), model.insert(key, value), "{name}");
        }
        if i % 10 == 9 {
            // Small batches: the smaller fixture has 64 buffers.
            tree.commit(&pool, &mut buffers).unwrap();
        }
    }
    tree.commit(&pool, &mut buffers).unwrap();
    tree.check_invariants(&pool).unwrap();
    assert_eq!(tree.count(&pool, (Bound::Unbounded, Bound::Unbounded)).unwrap(), model.len() as u64, "{name}");
    let _ = std::fs::remove_file(&path);
}

/// Goal: with a read lease, the buffers a commit stops referencing (the
/// replaced root, here) stay referenced until the lease has passed, so a
/// one-sided reader that started on the previous version reads no reused
/// buffer; `release_leased` then frees them, and turning the lease off
/// frees what waits.
#[test]
fn a_read_lease_holds_replaced_buffers_until_it_passes() {
    let geometry = Geometry { buffer_size: 512, buffer_count: 64, log_size: 16 * 1024, log_count: 1 };
    let mut store = Store::new(0, geometry, SimMode::CacheLine);
    let lease = std::time::Duration::from_millis(200);
    store.tree.set_read_lease(&mut store.buffers, Some(lease)).unwrap();
    let value = Value::Inline(b"one".to_vec());
    store.tree.insert(&store.pool, &mut store.buffers, b"k", &value).unwrap();
    store.commit();
    let old_root = store.tree.root().expect("a root");
    let free_before = store.buffers.free_count();
    store.tree.insert(&store.pool, &mut store.buffers, b"k", &Value::Inline(b"two".to_vec())).unwrap();
    let committed_at = std::time::Instant::now();
    store.commit();
    assert_ne!(store.tree.root(), Some(old_root), "copy on write: a new root");
    assert!(store.buffers.refs(old_root) > 0, "the replaced root was released within the lease");
    assert_eq!(store.tree.leased_buffers(), 1);
    assert_eq!(store.tree.release_leased(&mut store.buffers, Some(std::time::Instant::now())).unwrap(), 0);
    assert_eq!(store.tree.release_leased(&mut store.buffers, Some(committed_at + lease * 2)).unwrap(), 1);
    assert_eq!(store.buffers.refs(old_root), 0, "released once the lease passed");
    assert_eq!(store.buffers.free_count(), free_before, "the new root took one buffer, the old one is back");
    // Turning the lease off releases what waits.
    store.tree.insert(&store.pool, &mut store.buffers, b"k", &Value::Inline(b"three".to_vec())).unwrap();
    store.commit();
    assert_eq!(store.tree.leased_buffers(), 1);
    store.tree.set_read_lease(&mut store.buffers, None).unwrap();
    assert_eq!(store.tree.leased_buffers(), 0);
}
