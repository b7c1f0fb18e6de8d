//! `packetstore inspect`: what a pool holds, read without modifying it.
//!
//! It prints what applies to the pool's kind (recorded in the header, or
//! inferred from the contents of an old pool): the logs, one per event
//! loop, of a WAL pool; the log, tree, keys and values of a key-value
//! pool; everything for a pool whose kind cannot be told (to diagnose it).
//! `--verify` also checks that the contents fit the kind: no tree in a WAL
//! or log pool, no record of another program in a key-value or WAL pool;
//! and every value of the tree against its CRC, naming the key of each
//! that fails (`inspect_values.rs`).
//!
//! Given shard 0's file of a sharded data set (`serve --shards N`), it
//! inspects every shard's file (found beside it, checked to be of the same
//! set) and sums the keys and problems; any other shard's file alone is
//! inspected as itself.

use std::path::{Path, PathBuf};

use anyhow::Context;
use packetstore::index::tree::{Tree, TreeStats};
use packetstore::pool::kind::Evidence;
use packetstore::PoolKindExt;
use packetstore::{Buffers, Log, LogUsage, Pool, PoolKind, RecordView, RecoveryReport};

use crate::options::PersistArgs;

#[derive(clap::Args)]
pub struct Args {
    /// The pool file.
    pub pool: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// List every live record.
    #[arg(long)]
    pub records: bool,
    /// Also check every live record's data against its CRC (the scan
    /// checks headers), every tree node's CRC and invariants, every value
    /// against its CRC, and that the contents fit the pool's kind; exit 1
    /// if anything is wrong.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub persist: PersistArgs,
}

/// The pool's kind as `inspect` reports it.
struct KindReport {
    /// Recorded, inferred, or `Unset` (empty, or undecided).
    kind: PoolKind,
    /// The header records it (version 3).
    recorded: bool,
    /// `inspect --json`'s `kind`: the kind's label, or "unknown".
    label: &'static str,
    /// How it was told, for the text and `kind_evidence`.
    evidence: String,
}

impl KindReport {
    fn of(pool: &Pool) -> KindReport {
        let version = pool.header().version;
        let recorded = pool.header().kind != PoolKind::Unset;
        match pool.kind_evidence() {
            Evidence::Kind { kind, .. } if recorded => {
                KindReport { kind, recorded, label: kind.label(), evidence: "recorded in the header".into() }
            }
            Evidence::Kind { kind, why } => KindReport {
                kind,
                recorded,
                label: kind.label(),
                evidence: format!("not recorded (format version {version}); inferred from its contents: {why}"),
            },
            Evidence::Empty => KindReport {
                kind: PoolKind::Unset,
                recorded,
                label: PoolKind::Unset.label(),
                evidence: format!(
                    "not recorded (format version {version}) and the pool is empty: the first server to open it uses it"
                ),
            },
            Evidence::Undecided(reason) => KindReport {
                kind: PoolKind::Unset,
                recorded,
                label: "unknown",
                evidence: format!("not recorded (format version {version}), and the contents do not tell: {reason}"),
            },
        }
    }
}

/// One log's scan.
struct LogScan {
    usage: LogUsage,
    report: RecoveryReport,
    /// The tags of the first and last live records (a WAL's sequence numbers).
    tags: Option<(u64, u64)>,
}

/// What inspect found, for either output.
#[derive(Default)]
struct Findings {
    logs: Vec<LogScan>,
    /// Every log's live records' lsns.
    live_lsns: Vec<u64>,
    /// The key-value store's replay mark (`#lsn`): records below it are in
    /// the tree already, and recovery releases them without replaying.
    replay_from: Option<u64>,
    records: Vec<(u32, RecordView)>,
    problems: Vec<String>,
    verified_records: u64,
    verified_bytes: u64,
    /// Buffers referenced by a live record or by the tree.
    referenced: std::collections::HashSet<u32>,
    /// The tree, for kinds that hold one: its walk (None if damaged).
    tree: Option<(Tree, Option<TreeStats>)>,
    /// The store's key count, as its last checkpoint wrote it.
    keys: Option<u64>,
    /// `--verify`: the tree's values checked against their CRCs.
    values: Option<packetstore::index::tree::ValuesReport>,
}

/// One pool file inspected.
struct Inspected {
    path: PathBuf,
    pool: Pool,
    kind: KindReport,
    findings: Findings,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let first = inspect_pool(&args.pool, &args)?;
    let set = first.pool.header().shard.filter(|id| id.count > 1 && id.index == 0);
    let Some(set) = set else {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&json_of(&first, &args))?);
        } else {
            print_text(&first, &args);
        }
        anyhow::ensure!(!args.verify || first.findings.problems.is_empty(), "verification failed");
        return Ok(());
    };
    let mut shards = vec![first];
    for index in 1..set.count {
        let path = packetstore::pool::layout::shard_path(&args.pool, index);
        let mut shard = inspect_pool(&path, &args)
            .with_context(|| format!("shard {index} of {} ({})", set.count, path.display()))?;
        let found = shard.pool.header().shard;
        if !packetstore::launch::shards::is_shard_of(found, index, set) {
            shard
                .findings
                .problems
                .push(format!("{} is not shard {index} of shard 0's data set (its header: {found:?})", path.display()));
        }
        shards.push(shard);
    }
    let keys: Option<u64> = shards.iter().map(|s| s.findings.keys).sum();
    let problems: usize = shards.iter().map(|s| s.findings.problems.len()).sum();
    if args.json {
        let json = serde_json::json!({
            "data_set": {
                "shards": set.count,
                "set_id": format!("{:032x}", set.set_id),
                "keys": keys,
                "problems": problems,
            },
            "shards": shards.iter().map(|shard| json_of(shard, &args)).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!("data set    {} shards (set {:032x}), {} keys", set.count, set.set_id, keys.unwrap_or(0));
        for (index, shard) in shards.iter().enumerate() {
            println!("\n--- shard {index} of {}", set.count);
            print_text(shard, &args);
        }
    }
    anyhow::ensure!(
        !args.verify || problems == 0,
        "verification failed ({problems} problems over {} shards)",
        set.count
    );
    Ok(())
}

/// Opens `path` read-only and inspects it as `args` ask.
fn inspect_pool(path: &Path, args: &Args) -> anyhow::Result<Inspected> {
    let pool = Pool::open(path, &args.persist.options()?).with_context(|| {
        format!("cannot open the pool {} (is a server using it? inspect takes the lock too)", path.display())
    })?;
    let kind = KindReport::of(&pool);
    let mut findings = Findings::default();
    for index in 0..pool.geometry().log_count {
        scan_log(&pool, index, args, kind.kind, &mut findings)?;
    }
    if kind.kind.holds_tree() {
        walk_tree(&pool, &mut findings)?;
        if args.verify {
            crate::inspect_values::verify_values(
                &pool,
                &mut findings.values,
                &mut findings.problems,
                findings.tree.as_ref().map(|(tree, _)| tree),
            );
        }
    } else if args.verify && packetstore::index::tree::has_committed_version(&pool) {
        findings.problems.push(format!("a committed B+ tree in a {} pool, which has none", kind.kind));
    }
    Ok(Inspected { path: path.to_path_buf(), pool, kind, findings })
}

/// Scans log `index` read-only, with its share of the buffers.
fn scan_log(pool: &Pool, index: u32, args: &Args, kind: PoolKind, findings: &mut Findings) -> anyhow::Result<()> {
    let (first, count) = pool.geometry().buffer_range(index);
    let mut buffers = Buffers::range(first, count);
    let (log, report) =
        Log::inspect(pool, index, &mut buffers).with_context(|| format!("log {index} does not validate"))?;
    if args.verify && report.end_reason.contains("checksum") {
        findings.problems.push(format!(
            "log {index}: the scan stops at lsn {} on a record that fails its check ({}): a batch torn by a \
             crash (the next open erases it) or damage; records after it are not recovered",
            report.end_lsn, report.end_reason
        ));
    }
    let mut tags = None;
    for lsn in log.live_lsns() {
        findings.live_lsns.push(lsn);
        let view = log.view(pool, lsn)?;
        findings.referenced.extend(view.extents.iter().map(|e| e.buffer));
        tags = Some((tags.map_or(view.tag, |(first, _)| first), view.tag));
        if args.verify {
            verify_record(pool, &log, index, kind, &view, findings);
        }
        if args.records {
            findings.records.push((index, view));
        }
    }
    findings.logs.push(LogScan { usage: log.usage(), report, tags });
    Ok(())
}

fn verify_record(pool: &Pool, log: &Log, index: u32, kind: PoolKind, view: &RecordView, findings: &mut Findings) {
    let data = log.read_data(pool, view);
    if crc32c::crc32c(&data) != view.data_crc {
        findings.problems.push(format!("log {index} record {}: its data does not match its CRC", view.lsn));
    }
    if !kind.holds_record(view.kind, view.key.len() as u16) {
        findings.problems.push(format!(
            "log {index} record {}: kind {:#x} (key of {} bytes) is not a record of a {kind} pool: written by \
             another program",
            view.lsn,
            view.kind,
            view.key.len()
        ));
    }
    findings.verified_records += 1;
    findings.verified_bytes += data.len() as u64;
}

/// Walks the tree read-only, checking every node's CRC and the tree's
/// invariants on the way.
fn walk_tree(pool: &Pool, findings: &mut Findings) -> anyhow::Result<()> {
    let tree = Tree::inspect(pool).context("the tree's meta does not validate")?;
    let walk = match tree.check_invariants(pool) {
        Ok(stats) => Some(stats),
        Err(problem) => {
            findings.problems.push(format!("tree: {problem}"));
            None
        }
    };
    if let Some(stats) = &walk {
        findings.referenced.extend(stats.refs.keys().copied());
    }
    let entry = |key: &[u8]| {
        tree.get(pool, key).ok().flatten().and_then(|value| match value {
            packetstore::index::node::Value::Inline(bytes) => bytes.try_into().ok().map(u64::from_le_bytes),
            _ => None,
        })
    };
    findings.keys = match tree.get(pool, b"#schema").ok().flatten() {
        // Schema 2: the strings and collections of the 16 databases.
        Some(_) => schema2_keys(pool, &tree),
        None => entry(b"#keys"),
    };
    findings.replay_from = entry(b"#lsn");
    findings.tree = Some((tree, walk));
    Ok(())
}

/// The keys of a schema 2 store: its `k` and `m` entries in the physical
/// databases the 16 logical ones map to (flushed ones not yet reclaimed
/// are not counted).
fn schema2_keys(pool: &Pool, tree: &Tree) -> Option<u64> {
    use packetstore::store::keyspace::{db_entry_key, db_prefix, prefix_end, DATABASES, NS_META, NS_STRING};
    use std::ops::Bound;
    let mut total = 0;
    for logical in 0..DATABASES as u8 {
        let db = match tree.get(pool, &db_entry_key(logical)).ok()? {
            Some(packetstore::index::node::Value::Inline(bytes)) => u32::from_le_bytes(bytes.try_into().ok()?),
            _ => u32::from(logical),
        };
        for ns in [NS_STRING, NS_META] {
            let start = db_prefix(ns, db);
            let end = prefix_end(&start)?;
            total += tree.count(pool, (Bound::Included(&start[..]), Bound::Excluded(&end[..]))).ok()?;
        }
    }
    Some(total)
}

/// The tree's figures: its walk, its value buffers, the dead bytes in them.
fn tree_figures(findings: &Findings, buffer_size: u32) -> Option<(&Tree, &TreeStats, u64, u64)> {
    let (tree, Some(stats)) = findings.tree.as_ref()? else { return None };
    // Buffers the tree references are its nodes and its values'.
    let value_buffers = stats.refs.len() as u64 - stats.nodes;
    let in_buffers = stats.value_bytes - stats.inline_bytes;
    let dead = (value_buffers * u64::from(buffer_size)).saturating_sub(in_buffers);
    Some((tree, stats, value_buffers, dead))
}

/// The logs' figures, summed.
fn total(findings: &Findings, figure: impl Fn(&LogScan) -> u64) -> u64 {
    findings.logs.iter().map(figure).sum()
}

fn json_of(inspected: &Inspected, args: &Args) -> serde_json::Value {
    let Inspected { path, pool, kind, findings } = inspected;
    let geometry = pool.geometry();
    let header = pool.header();
    let free_buffers = geometry.buffer_count - findings.referenced.len() as u32;
    let tree = tree_figures(findings, geometry.buffer_size).map(|(tree, stats, value_buffers, dead)| {
        serde_json::json!({
            "generation": tree.generation(),
            "root": tree.root(),
            "keys": findings.keys,
            "height": stats.height,
            "entries": stats.entries,
            "nodes": stats.nodes,
            "node_bytes_used": stats.bytes_used,
            "live_value_bytes": stats.value_bytes,
            "inline_value_bytes": stats.inline_bytes,
            "value_buffers": value_buffers,
            "dead_bytes_in_value_buffers": dead,
        })
    });
    let logs: Vec<_> = findings
        .logs
        .iter()
        .enumerate()
        .map(|(index, scan)| {
            serde_json::json!({
                "log": index,
                "live_records": scan.usage.live_records,
                "live_data_bytes": scan.usage.live_data_bytes,
                "free_bytes": scan.usage.free_bytes,
                "ring_size": scan.usage.ring_size,
                "first_tag": scan.tags.map(|(first, _)| first),
                "last_tag": scan.tags.map(|(_, last)| last),
            })
        })
        .collect();
    serde_json::json!({
        "path": path,
        "file_size": pool.len(),
        "format_version": header.version,
        "kind": kind.label,
        "kind_recorded": kind.recorded,
        "kind_evidence": kind.evidence,
        "creation_id": format!("{:032x}", header.creation_id),
        "created_unix_ns": header.created_unix_ns,
        "geometry": {
            "buffer_size": geometry.buffer_size,
            "buffer_count": geometry.buffer_count,
            "log_size": geometry.log_size,
            "log_offset": geometry.log_offset(),
            "buffers_offset": geometry.buffers_offset(),
        },
        "domain": {
            "name": pool.domain().domain.name(),
            "durable": pool.domain().durable,
            "detected_by": pool.domain().detected_by,
            "description": pool.domain().to_string(),
        },
        "log": {
            "logs": geometry.log_count,
            "ring_size": total(findings, |s| s.usage.ring_size),
            "free_bytes": total(findings, |s| s.usage.free_bytes),
            "live_records": total(findings, |s| s.usage.live_records),
            "live_data_bytes": total(findings, |s| s.usage.live_data_bytes),
            "released_records_not_reclaimed": total(findings, |s| s.report.released_records),
            "torn_records_past_end": total(findings, |s| s.report.torn_records_erased),
            "scan_ms": findings.logs.iter().map(|s| s.report.duration.as_secs_f64() * 1e3).sum::<f64>(),
        },
        "logs": logs,
        "buffers": { "referenced": findings.referenced.len(), "free": free_buffers },
        "tree": tree,
        "recovery": {
            "records_to_replay": records_to_replay(findings),
            "last": pool.last_recovery().map(|last| serde_json::json!({
                "pid": last.pid,
                "finished_unix_ns": last.finished_unix_ns,
                "duration_us": last.duration_us,
                "records_replayed": last.records_replayed,
                "records_dropped": last.records_dropped,
                "keys": last.keys,
            })),
        },
        "verify": args.verify.then(|| serde_json::json!({
            "ok": findings.problems.is_empty(),
            "records_checked": findings.verified_records,
            "data_bytes_checked": findings.verified_bytes,
            "nodes_checked": findings.tree.as_ref().and_then(|(_, walk)| walk.as_ref()).map_or(0, |s| s.nodes),
            "values_checked": findings.values.as_ref().map_or(0, |v| v.checked),
            "value_bytes_checked": findings.values.as_ref().map_or(0, |v| v.bytes),
            "values_unchecked": findings.values.as_ref().map_or(0, |v| v.unchecked),
            "values_corrupt": findings.values.as_ref().map_or(0, |v| v.corrupt.len()),
            "problems": findings.problems,
        })),
        "records": findings.records.iter().map(|(log, r)| serde_json::json!({
            "log": log, "lsn": r.lsn, "kind": r.kind, "tag": r.tag,
            "key": String::from_utf8_lossy(&r.key), "data_len": r.data_len,
            "extents": r.extents.iter().map(|e| [e.buffer, u32::from(e.offset), u32::from(e.len)]).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn print_text(inspected: &Inspected, args: &Args) {
    let Inspected { path, pool, kind, findings } = inspected;
    let geometry = pool.geometry();
    println!("pool        {}", path.display());
    if let Some(id) = pool.header().shard.filter(|id| id.count > 1) {
        println!("shard       {} of {} (set {:032x})", id.index, id.count, id.set_id);
    }
    println!(
        "size        {} bytes ({:.1} MiB), format version {}",
        pool.len(),
        pool.len() as f64 / 1048576.0,
        pool.header().version
    );
    match kind.kind {
        PoolKind::Unset => println!("kind        {}: {}", kind.label, kind.evidence),
        known => println!("kind        {known} (made by {}): {}", known.made_by(), kind.evidence),
    }
    println!("geometry    {geometry}");
    println!("domain      {}", pool.domain());
    print_logs(kind.kind, findings, geometry.log_count);
    let free_buffers = geometry.buffer_count - findings.referenced.len() as u32;
    let by = if findings.tree.is_some() { "by live records and the tree" } else { "by live records" };
    println!("buffers     {} referenced ({by}), {free_buffers} free", findings.referenced.len());
    print_recovery(pool, kind.kind, findings);
    if findings.tree.is_some() {
        print_tree(findings, geometry.buffer_size);
    }
    if args.verify {
        let values = findings.values.clone().unwrap_or_default();
        println!(
            "verify      {} records ({} data bytes), {} tree nodes and {} values ({} bytes; {} without a CRC) checked: {}",
            findings.verified_records,
            findings.verified_bytes,
            findings.tree.as_ref().and_then(|(_, walk)| walk.as_ref()).map_or(0, |s| s.nodes),
            values.checked,
            values.bytes,
            values.unchecked,
            if findings.problems.is_empty() {
                "ok".to_string()
            } else {
                format!("{} PROBLEMS", findings.problems.len())
            }
        );
        for problem in &findings.problems {
            println!("  {problem}");
        }
    }
    for (log, r) in &findings.records {
        println!(
            "  log {log} lsn {:>10}  kind {:>3}  tag {:>20}  {:>8} bytes in {:>3} extents  key {:?}",
            r.lsn,
            r.kind,
            r.tag,
            r.data_len,
            r.extents.len(),
            String::from_utf8_lossy(&r.key)
        );
    }
}

/// The logs: summed, then one line per log (per event loop, for a WAL).
fn print_logs(kind: PoolKind, findings: &Findings, log_count: u32) {
    println!(
        "log         {} live records, {} data bytes in {log_count} log(s); {} of {} ring bytes free",
        total(findings, |s| s.usage.live_records),
        total(findings, |s| s.usage.live_data_bytes),
        total(findings, |s| s.usage.free_bytes),
        total(findings, |s| s.usage.ring_size)
    );
    let torn = total(findings, |s| s.report.torn_records_erased);
    if torn > 0 {
        println!("            {torn} records of an interrupted batch past the end (erased at the next open)");
    }
    for (index, scan) in findings.logs.iter().enumerate() {
        if kind != PoolKind::KeyValue {
            let seq = match (kind, scan.tags) {
                (PoolKind::Wal, Some((first, last))) => format!(", first sequence number {first}, last {last}"),
                _ => String::new(),
            };
            let event_loop = if kind == PoolKind::Wal { format!("event loop {index}: ") } else { String::new() };
            println!(
                "log {index:<7} {event_loop}{} live records, {} data bytes{seq}; {} of {} ring bytes free",
                scan.usage.live_records, scan.usage.live_data_bytes, scan.usage.free_bytes, scan.usage.ring_size
            );
        }
        println!("scan        log {index}: {}", scan.report);
    }
}

fn print_recovery(pool: &Pool, kind: PoolKind, findings: &Findings) {
    let key_value = kind == PoolKind::KeyValue;
    match pool.last_recovery() {
        Some(last) => {
            let ago_s = packetstore::pool::file::unix_ns().saturating_sub(last.finished_unix_ns) / 1_000_000_000;
            let keys = if key_value { format!(", {} keys", last.keys) } else { String::new() };
            println!(
                "recovery    last: {} log records {}, {} of a torn {} dropped{keys}, {:.1} ms (pid {}, {} s ago)",
                last.records_replayed,
                if key_value { "replayed" } else { "recovered" },
                last.records_dropped,
                if key_value { "command" } else { "batch" },
                last.duration_us as f64 / 1e3,
                last.pid,
                ago_s
            );
        }
        None => {
            println!("recovery    last: none recorded (never served by this version of `packetstore serve` or `wal`)")
        }
    }
    let live = records_to_replay(findings);
    if key_value {
        println!("recovery    next: would replay {live} live log records into the tree");
    } else {
        println!("recovery    next: would recover {live} live log records");
    }
}

/// What the next start would replay: the live records, except, in a
/// key-value pool, those below the tree's replay mark.
fn records_to_replay(findings: &Findings) -> u64 {
    let from = findings.replay_from.unwrap_or(0);
    findings.live_lsns.iter().filter(|&&lsn| lsn >= from).count() as u64
}

fn print_tree(findings: &Findings, buffer_size: u32) {
    let Some((tree, stats, value_buffers, dead)) = tree_figures(findings, buffer_size) else {
        println!("tree        damaged (see verify)");
        return;
    };
    println!(
        "tree        generation {}, height {}, {} keys ({} entries: fields, expiries, the checkpoint's own) in {} nodes",
        tree.generation(),
        stats.height,
        findings.keys.unwrap_or(0),
        stats.entries,
        stats.nodes
    );
    println!(
        "values      {} live bytes ({} inline), {} value buffers, {} dead bytes in them (compaction reclaims)",
        stats.value_bytes, stats.inline_bytes, value_buffers, dead
    );
}
