//! `packetstore inspect`: what a pool holds, read without modifying it.

use std::path::PathBuf;

use anyhow::Context;
use packetstore::tree::Tree;
use packetstore::{Buffers, Log, Pool};

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
    /// checks headers), and every tree node's CRC and invariants; exit 1
    /// if anything is wrong.
    #[arg(long)]
    pub verify: bool,
    #[command(flatten)]
    pub persist: PersistArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let pool = Pool::open(&args.pool, &args.persist.options()?)
        .with_context(|| "cannot open the pool (is a server using it? inspect takes the lock too)")?;
    let geometry = pool.geometry();
    let header = pool.header();
    // Every log, each with its share of the buffers; figures are summed.
    let mut usage = Usage::default();
    let mut records = Vec::new();
    let mut scans = Vec::new();
    let mut problems = Vec::new();
    let mut verified_records = 0u64;
    // Buffers referenced by a live record or by the tree.
    let mut referenced = std::collections::HashSet::new();
    let mut verified_bytes = 0u64;
    for index in 0..geometry.log_count {
        let (first, count) = geometry.buffer_range(index);
        let mut buffers = Buffers::range(first, count);
        let (log, report) =
            Log::inspect(&pool, index, &mut buffers).with_context(|| format!("log {index} does not validate"))?;
        if args.verify && report.end_reason.contains("checksum") {
            problems.push(format!(
                "log {index}: the scan stops at lsn {} on a record that fails its check ({}): a batch torn by a \
                 crash (the next open erases it) or damage; records after it are not recovered",
                report.end_lsn, report.end_reason
            ));
        }
        let log_usage = log.usage();
        usage.live_records += log_usage.live_records;
        usage.live_data_bytes += log_usage.live_data_bytes;
        usage.free_bytes += log_usage.free_bytes;
        usage.ring_size += log_usage.ring_size;
        usage.released += report.released_records;
        usage.torn += report.torn_records_erased;
        usage.free_buffers += buffers.free_count();
        {
            for lsn in log.live_lsns() {
                let view = log.view(&pool, lsn)?;
                referenced.extend(view.extents.iter().map(|e| e.buffer));
                if args.verify {
                    let data = log.read_data(&pool, &view);
                    if crc32c::crc32c(&data) != view.data_crc {
                        problems.push(format!("log {index} record {lsn}: its data does not match its CRC"));
                    }
                    verified_records += 1;
                    verified_bytes += data.len() as u64;
                }
                if args.records {
                    records.push((index, view));
                }
            }
        }
        scans.push(report);
    }
    // The tree (key-value pools): walked read-only, every node's CRC and
    // the tree's invariants checked on the way.
    let tree = Tree::inspect(&pool).context("the tree's meta does not validate")?;
    let walk = match tree.check_invariants(&pool) {
        Ok(stats) => Some(stats),
        Err(problem) => {
            problems.push(format!("tree: {problem}"));
            None
        }
    };
    if let Some(stats) = &walk {
        referenced.extend(stats.refs.keys().copied());
    }
    let free_buffers = geometry.buffer_count - referenced.len() as u32;
    // The store's key count, as its last checkpoint wrote it.
    let keys = tree.get(&pool, b"#keys").ok().flatten().and_then(|value| match value {
        packetstore::node::Value::Inline(bytes) => bytes.try_into().ok().map(u64::from_le_bytes),
        _ => None,
    });
    let tree_figures = walk.as_ref().map(|stats| {
        // Buffers the tree references are its nodes and its values'.
        let value_buffers = stats.refs.len() as u64 - stats.nodes;
        let in_buffers = stats.value_bytes - stats.inline_bytes;
        let dead = (value_buffers * u64::from(geometry.buffer_size)).saturating_sub(in_buffers);
        (stats, value_buffers, dead)
    });
    if args.json {
        let json = serde_json::json!({
            "path": args.pool,
            "file_size": pool.len(),
            "format_version": header.version,
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
                "ring_size": usage.ring_size,
                "free_bytes": usage.free_bytes,
                "live_records": usage.live_records,
                "live_data_bytes": usage.live_data_bytes,
                "released_records_not_reclaimed": usage.released,
                "torn_records_past_end": usage.torn,
                "scan_ms": scans.iter().map(|r| r.duration.as_secs_f64() * 1e3).sum::<f64>(),
            },
            "buffers": { "referenced": referenced.len(), "free": free_buffers },
            "tree": tree_figures.as_ref().map(|(stats, value_buffers, dead)| serde_json::json!({
                "generation": tree.generation(),
                "root": tree.root(),
                "keys": keys,
                "height": stats.height,
                "entries": stats.entries,
                "nodes": stats.nodes,
                "node_bytes_used": stats.bytes_used,
                "live_value_bytes": stats.value_bytes,
                "inline_value_bytes": stats.inline_bytes,
                "value_buffers": value_buffers,
                "dead_bytes_in_value_buffers": dead,
            })),
            "recovery": {
                "records_to_replay": usage.live_records,
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
                "ok": problems.is_empty(),
                "records_checked": verified_records,
                "data_bytes_checked": verified_bytes,
                "nodes_checked": walk.as_ref().map_or(0, |s| s.nodes),
                "problems": problems,
            })),
            "records": records.iter().map(|(log, r)| serde_json::json!({
                "log": log, "lsn": r.lsn, "kind": r.kind, "tag": r.tag,
                "key": String::from_utf8_lossy(&r.key), "data_len": r.data_len,
                "extents": r.extents.iter().map(|e| [e.buffer, u32::from(e.offset), u32::from(e.len)]).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
        anyhow::ensure!(!args.verify || problems.is_empty(), "verification failed");
        return Ok(());
    }
    println!("pool        {}", args.pool.display());
    println!(
        "size        {} bytes ({:.1} MiB), format version {}",
        pool.len(),
        pool.len() as f64 / 1048576.0,
        header.version
    );
    println!("geometry    {geometry}");
    println!("domain      {}", pool.domain());
    println!(
        "log         {} live records, {} data bytes in {} log(s); {} of {} ring bytes free",
        usage.live_records, usage.live_data_bytes, geometry.log_count, usage.free_bytes, usage.ring_size
    );
    if usage.torn > 0 {
        println!("            {} records of an interrupted batch past the end (erased at the next open)", usage.torn);
    }
    println!("buffers     {} referenced (by live records and the tree), {} free", referenced.len(), free_buffers);
    for (index, report) in scans.iter().enumerate() {
        println!("scan        log {index}: {report}");
    }
    match pool.last_recovery() {
        Some(last) => {
            let ago_s = packetstore::pool::unix_ns().saturating_sub(last.finished_unix_ns) / 1_000_000_000;
            println!(
                "recovery    last: {} log records replayed, {} of a torn command dropped, {} keys, {:.1} ms \
                 (pid {}, {} s ago)",
                last.records_replayed,
                last.records_dropped,
                last.keys,
                last.duration_us as f64 / 1e3,
                last.pid,
                ago_s
            );
        }
        None => {
            println!("recovery    last: none recorded (never served by this version of `packetstore serve` or `wal`)")
        }
    }
    println!("recovery    next: would replay {} live log records into the tree", usage.live_records);
    match &tree_figures {
        Some((stats, value_buffers, dead)) => {
            println!(
                "tree        generation {}, height {}, {} keys ({} entries: fields, expiries, the checkpoint's own) in {} nodes",
                tree.generation(),
                stats.height,
                keys.unwrap_or(0),
                stats.entries,
                stats.nodes
            );
            println!(
                "values      {} live bytes ({} inline), {} value buffers, {} dead bytes in them (compaction reclaims)",
                stats.value_bytes, stats.inline_bytes, value_buffers, dead
            );
        }
        None => println!("tree        damaged (see verify)"),
    }
    if args.verify {
        println!(
            "verify      {} records ({} data bytes) and {} tree nodes checked: {}",
            verified_records,
            verified_bytes,
            walk.as_ref().map_or(0, |s| s.nodes),
            if problems.is_empty() { "ok".to_string() } else { format!("{} PROBLEMS", problems.len()) }
        );
        for problem in &problems {
            println!("  {problem}");
        }
        anyhow::ensure!(problems.is_empty(), "verification failed");
    }
    for (log, r) in &records {
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
    Ok(())
}

/// Figures summed over a pool's logs.
#[derive(Default)]
struct Usage {
    live_records: u64,
    live_data_bytes: u64,
    free_bytes: u64,
    ring_size: u64,
    released: u64,
    torn: u64,
    free_buffers: u32,
}
