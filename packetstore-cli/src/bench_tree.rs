//! `packetstore bench tree`: the persistent B+ tree against the volatile
//! ceiling (a DRAM `BTreeMap` of the same keys and values) and against the
//! recovery it replaces (a DRAM `BTreeMap` rebuilt by replaying a log of the
//! same inserts). Per persistence domain, value kind and node size; the
//! three runs alternate (tree, BTreeMap, replay; three times by default) in
//! one process, and each figure is the median of its rounds.
//!
//! A tree run: N random 8-byte keys inserted in batches of 64 (one commit,
//! two fences each), then single inserts each committed alone on the full
//! tree, then N gets in another random order, one full scan, and finally a
//! reopen: open + the first get (the O(1) open), then the reclamation walk.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context};
use packetstore::index::node::Value;
use packetstore::index::tree::Tree;
use packetstore::util::rng::SplitMix64;
use packetstore::PoolKindExt;
use packetstore::{Buffers, Extent, Geometry, Log, PersistOptions, Pool, PoolKind};

use crate::bench_log::{median, setup, Dirs};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dirs: Dirs,
    /// Domains: pm, pm-10us, page-fdatasync, page-msync, none.
    #[arg(long, value_delimiter = ',', default_value = "pm,pm-10us,page-fdatasync")]
    pub domains: Vec<String>,
    /// Values: inline16 (16 bytes in the leaf), extent1k (1 KiB in pool
    /// buffers, the leaf holds its extent).
    #[arg(long, value_delimiter = ',', default_value = "inline16,extent1k")]
    pub values: Vec<String>,
    /// Node sizes (the pool's buffer size), bytes.
    #[arg(long, value_delimiter = ',', default_value = "2048")]
    pub node_sizes: Vec<u32>,
    /// Keys inserted per run.
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: usize,
    /// Seconds (at most) of single inserts, each committed alone.
    #[arg(long, default_value_t = 1.0)]
    pub single_seconds: f64,
    /// Rounds of tree / BTreeMap / replay per cell.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Also write the table (Markdown) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the figures as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    Inline16,
    Extent1k,
}

impl ValueKind {
    fn parse(name: &str) -> anyhow::Result<ValueKind> {
        match name {
            "inline16" => Ok(ValueKind::Inline16),
            "extent1k" => Ok(ValueKind::Extent1k),
            other => anyhow::bail!("unknown value kind '{other}' (inline16, extent1k)"),
        }
    }

    fn len(self) -> usize {
        match self {
            ValueKind::Inline16 => 16,
            ValueKind::Extent1k => 1024,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ValueKind::Inline16 => "16 B inline",
            ValueKind::Extent1k => "1 KiB extent",
        }
    }
}

/// Packs values into pool buffers one after another, as the receive path
/// does; holds the caller's reference on the buffer being filled.
struct Packer {
    current: Option<(u32, usize)>,
}

impl Packer {
    fn put(&mut self, pool: &Pool, buffers: &mut Buffers, data: &[u8]) -> anyhow::Result<Vec<Extent>> {
        let size = pool.geometry().buffer_size as usize;
        let mut extents = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let (buffer, offset) = match self.current {
                Some((buffer, offset)) if offset < size => (buffer, offset),
                _ => {
                    self.finish(buffers)?;
                    (buffers.allocate()?, 0)
                }
            };
            let n = rest.len().min(size - offset);
            pool.write(pool.buffer_offset(buffer) + offset as u64, &rest[..n]);
            extents.push(Extent::new(buffer, offset, n));
            self.current = Some((buffer, offset + n));
            rest = &rest[n..];
        }
        Ok(extents)
    }

    /// Drops the reference on the buffer being filled (the values in it
    /// hold their own).
    fn finish(&mut self, buffers: &mut Buffers) -> anyhow::Result<()> {
        if let Some((buffer, _)) = self.current.take() {
            buffers.release(buffer)?;
        }
        Ok(())
    }
}

fn value_bytes(kind: ValueKind, key: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; kind.len()];
    SplitMix64::new(key).fill(&mut bytes[..16]);
    bytes
}

fn geometry(node_size: u32, keys: usize, kind: ValueKind, log_size: u64) -> Geometry {
    // Nodes about 70% full, twice over for copy-on-write churn, plus the
    // values' buffers, plus slack.
    let entry =
        2 + 2 + 8 + 3 + if kind == ValueKind::Inline16 { 16 } else { 8 * 1024usize.div_ceil(node_size as usize) };
    let nodes = keys * entry / (node_size as usize * 6 / 10);
    let values = if kind == ValueKind::Inline16 { 0 } else { keys * 1024 / node_size as usize + keys / 64 };
    let count = (2 * nodes + values + 65_536).next_power_of_two() as u32;
    Geometry { buffer_size: node_size, buffer_count: count, log_size, log_count: 1 }
}

/// A permutation of `0..n` (for gets in an order unlike the inserts').
fn permuted(i: usize, n: usize) -> usize {
    (i.wrapping_mul(2_654_435_761) + 12_345) % n
}

#[derive(Default)]
struct TreeRun {
    insert64: f64,
    insert1: f64,
    get: f64,
    scan: f64,
    open_first_get_ms: f64,
    walk_ms: f64,
    height: u8,
    nodes: u64,
}

fn run_tree(
    path: &Path,
    options: &PersistOptions,
    node_size: u32,
    kind: ValueKind,
    keys: &[u64],
    single_seconds: f64,
) -> anyhow::Result<TreeRun> {
    let _ = std::fs::remove_file(path);
    let geometry = geometry(node_size, keys.len() + 100_000, kind, 16 * 1024);
    let pool = Pool::create_as(path, PoolKind::Tree, geometry, options)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut buffers = Buffers::new(geometry.buffer_count);
    let mut tree = Tree::open(&pool, &mut buffers)?;
    let mut packer = Packer { current: None };
    let mut put = |pool: &Pool, buffers: &mut Buffers, tree: &mut Tree, key: u64| -> anyhow::Result<()> {
        let bytes = value_bytes(kind, key);
        let value = match kind {
            ValueKind::Inline16 => Value::Inline(bytes),
            // The CRC of the bytes just written, as the store's log hands it
            // to the tree (not a second read of them).
            ValueKind::Extent1k => Value::Extents(packer.put(pool, buffers, &bytes)?, Some(crc32c::crc32c(&bytes))),
        };
        tree.insert(pool, buffers, &key.to_be_bytes(), &value)?;
        Ok(())
    };
    let mut run = TreeRun::default();
    let started = Instant::now();
    for chunk in keys.chunks(64) {
        for &key in chunk {
            put(&pool, &mut buffers, &mut tree, key)?;
        }
        tree.commit(&pool, &mut buffers)?;
    }
    run.insert64 = keys.len() as f64 / started.elapsed().as_secs_f64();
    let mut rng = SplitMix64::new(0x51);
    let started = Instant::now();
    let mut singles = 0u64;
    while started.elapsed().as_secs_f64() < single_seconds && singles < 100_000 {
        put(&pool, &mut buffers, &mut tree, rng.next_u64())?;
        tree.commit(&pool, &mut buffers)?;
        singles += 1;
    }
    run.insert1 = singles as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    for i in 0..keys.len() {
        let key = keys[permuted(i, keys.len())];
        ensure!(tree.get(&pool, &key.to_be_bytes())?.is_some(), "key {key} lost");
    }
    run.get = keys.len() as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut scanned = 0u64;
    for entry in tree.range(&pool, (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded), false) {
        entry?;
        scanned += 1;
    }
    run.scan = scanned as f64 / started.elapsed().as_secs_f64();
    ensure!(scanned == tree.len(), "the scan saw {scanned} of {} entries", tree.len());
    run.height = tree.height();
    run.nodes = tree.node_count(&pool)?;
    drop((tree, buffers, pool));
    // The O(1) open: the pool, the tree's meta, and one get's path.
    let started = Instant::now();
    let pool = Pool::open_as(path, PoolKind::Tree, options)?;
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let mut tree = Tree::open(&pool, &mut buffers)?;
    ensure!(tree.get(&pool, &keys[keys.len() / 2].to_be_bytes())?.is_some(), "the first get after open");
    run.open_first_get_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    tree.finish_reclaim(&pool, &mut buffers)?;
    run.walk_ms = started.elapsed().as_secs_f64() * 1e3;
    drop((tree, buffers, pool));
    let _ = std::fs::remove_file(path);
    Ok(run)
}

#[derive(Default)]
struct DramRun {
    insert: f64,
    get: f64,
    scan: f64,
}

fn run_dram(kind: ValueKind, keys: &[u64]) -> anyhow::Result<DramRun> {
    let mut map: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let started = Instant::now();
    for &key in keys {
        map.insert(key.to_be_bytes().to_vec(), value_bytes(kind, key));
    }
    let insert = keys.len() as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    for i in 0..keys.len() {
        let key = keys[permuted(i, keys.len())];
        ensure!(std::hint::black_box(map.get(&key.to_be_bytes()[..])).is_some(), "key {key} lost");
    }
    let get = keys.len() as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut scanned = 0u64;
    for entry in &map {
        std::hint::black_box(entry);
        scanned += 1;
    }
    let scan = scanned as f64 / started.elapsed().as_secs_f64();
    Ok(DramRun { insert, get, scan })
}

/// Writes a log of the same inserts (untimed), then times what a store
/// without a persistent index does at start: recover the log and rebuild a
/// DRAM BTreeMap from its records. Returns milliseconds.
fn run_replay(path: &Path, options: &PersistOptions, kind: ValueKind, keys: &[u64]) -> anyhow::Result<f64> {
    let _ = std::fs::remove_file(path);
    let log_size = (keys.len() as u64 * 128 * 5 / 4).next_power_of_two().max(1 << 20);
    let geometry = geometry(2048, keys.len(), kind, log_size);
    {
        let pool = Pool::create_as(path, PoolKind::Log, geometry, options)?;
        let mut buffers = Buffers::new(geometry.buffer_count);
        let (mut log, _) = Log::recover(&pool, &mut buffers)?;
        let mut packer = Packer { current: None };
        for chunk in keys.chunks(1024) {
            for &key in chunk {
                let extents = packer.put(&pool, &mut buffers, &value_bytes(kind, key))?;
                log.append(&pool, &mut buffers, 1, 0, &key.to_be_bytes(), &extents)?;
            }
            log.commit(&pool, &mut buffers)?;
        }
        packer.finish(&mut buffers)?;
        log.checkpoint(&pool, &mut buffers)?;
    }
    let started = Instant::now();
    let pool = Pool::open_as(path, PoolKind::Log, options)?;
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let (log, _) = Log::recover(&pool, &mut buffers)?;
    let mut map: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for lsn in log.live_lsns() {
        let view = log.view(&pool, lsn)?;
        let data = log.read_data(&pool, &view);
        map.insert(view.key, data);
    }
    let replay_ms = started.elapsed().as_secs_f64() * 1e3;
    ensure!(map.len() == keys.len(), "replay rebuilt {} of {} keys", map.len(), keys.len());
    drop((log, buffers, pool));
    let _ = std::fs::remove_file(path);
    Ok(replay_ms)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    ensure!(args.rounds >= 1 && args.keys >= 1000, "--rounds must be >= 1 and --keys >= 1000");
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut rng = SplitMix64::new(0x7ee);
    let keys: Vec<u64> = (0..args.keys).map(|_| rng.next_u64()).collect();
    let mut table = String::new();
    let header =
        "| domain | value | node B | height | tree ins/s (batch 64) | tree ins/s (batch 1) | BTreeMap ins/s | \
                  ins ratio | tree get/s | BTreeMap get/s | get ratio | tree scan/s | BTreeMap scan/s | \
                  open + 1st get ms | walk ms | replay ms | replay / open |";
    writeln!(table, "{header}")?;
    writeln!(table, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut csv = String::from(
        "domain,value,node_size,height,nodes,tree_insert64,tree_insert1,dram_insert,tree_get,dram_get,\
         tree_scan,dram_scan,open_first_get_ms,walk_ms,replay_ms\n",
    );
    println!("{}", table.trim_end());
    let steps = args.domains.len() * args.values.len() * args.node_sizes.len() * args.rounds;
    let bar = crate::progress::bar(steps as u64, "bench tree");
    for name in &args.domains {
        let setup = setup(name, &args.dirs)?;
        std::fs::create_dir_all(&setup.dir).with_context(|| format!("creating {}", setup.dir.display()))?;
        let path = setup.dir.join(format!("packetstore-bench-tree-{}.pool", std::process::id()));
        for value in &args.values {
            let kind = ValueKind::parse(value)?;
            for &node_size in &args.node_sizes {
                let (mut trees, mut drams, mut replays) = (Vec::new(), Vec::new(), Vec::new());
                for round in 0..args.rounds {
                    crate::progress::step(
                        &bar,
                        format!("{} {} {node_size} B: round {}", setup.name, kind.name(), round + 1),
                    );
                    trees.push(run_tree(&path, &setup.options, node_size, kind, &keys, args.single_seconds)?);
                    drams.push(run_dram(kind, &keys)?);
                    replays.push(run_replay(&path, &setup.options, kind, &keys)?);
                }
                let m = |f: &dyn Fn(&TreeRun) -> f64| median(&mut trees.iter().map(f).collect::<Vec<_>>());
                let d = |f: &dyn Fn(&DramRun) -> f64| median(&mut drams.iter().map(f).collect::<Vec<_>>());
                let (insert64, insert1, get, scan) =
                    (m(&|r| r.insert64), m(&|r| r.insert1), m(&|r| r.get), m(&|r| r.scan));
                let (open_ms, walk_ms) = (m(&|r| r.open_first_get_ms), m(&|r| r.walk_ms));
                let (dram_insert, dram_get, dram_scan) = (d(&|r| r.insert), d(&|r| r.get), d(&|r| r.scan));
                let replay_ms = median(&mut replays);
                let (height, nodes) = (trees[0].height, trees[0].nodes);
                let row = format!(
                    "| {} | {} | {node_size} | {} | {insert64:.0} | {insert1:.0} | {dram_insert:.0} | {:.2} | {get:.0} | \
                     {dram_get:.0} | {:.2} | {scan:.0} | {dram_scan:.0} | {open_ms:.2} | {walk_ms:.0} | {replay_ms:.0} | {:.0} |",
                    setup.name,
                    kind.name(),
                    u32::from(height) + 1,
                    insert64 / dram_insert,
                    get / dram_get,
                    replay_ms / open_ms,
                );
                println!("{row}");
                writeln!(table, "{row}")?;
                writeln!(
                    csv,
                    "\"{}\",{},{node_size},{},{nodes},{insert64:.0},{insert1:.0},{dram_insert:.0},{get:.0},{dram_get:.0},\
                     {scan:.0},{dram_scan:.0},{open_ms:.3},{walk_ms:.1},{replay_ms:.1}",
                    setup.name,
                    kind.name(),
                    u32::from(height) + 1
                )?;
                save(&args, &command, &table, &csv)?;
            }
        }
    }
    Ok(())
}

/// Writes the table and the CSV as they stand (after every row, so that an
/// interrupted run keeps what it measured).
fn save(args: &Args, command: &str, table: &str, csv: &str) -> anyhow::Result<()> {
    if let Some(out) = &args.out {
        let text = format!(
            "# B+ tree benchmark\n\nCommand: `{command}`\n\n\
             {} random 8-byte keys. Each cell: {} rounds, alternated tree / DRAM BTreeMap / log replay; figures \
             are medians of rounds. Ratios are tree / BTreeMap. \"open + 1st get\" reopens the pool and the tree \
             and reads one key; \"walk\" is the reclamation walk after it (run in steps while serving); \"replay\" \
             recovers a log of the same inserts and rebuilds a DRAM BTreeMap from it. Height counts levels.\n\n{table}",
            args.keys, args.rounds
        );
        write_file(out, &text)?;
    }
    if let Some(path) = &args.csv {
        write_file(path, csv)?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
