//! `packetstore inspect`: what a pool holds, read without modifying it.

use std::path::PathBuf;

use anyhow::Context;
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
    for index in 0..geometry.log_count {
        let (first, count) = geometry.buffer_range(index);
        let mut buffers = Buffers::range(first, count);
        let (log, report) =
            Log::inspect(&pool, index, &mut buffers).with_context(|| format!("log {index} does not validate"))?;
        let log_usage = log.usage();
        usage.live_records += log_usage.live_records;
        usage.live_data_bytes += log_usage.live_data_bytes;
        usage.free_bytes += log_usage.free_bytes;
        usage.ring_size += log_usage.ring_size;
        usage.released += report.released_records;
        usage.torn += report.torn_records_erased;
        usage.free_buffers += buffers.free_count();
        if args.records {
            for lsn in log.live_lsns() {
                records.push((index, log.view(&pool, lsn)?));
            }
        }
        scans.push(report);
    }
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
            "buffers": { "referenced": geometry.buffer_count - usage.free_buffers, "free": usage.free_buffers },
            "records": records.iter().map(|(log, r)| serde_json::json!({
                "log": log, "lsn": r.lsn, "kind": r.kind, "tag": r.tag,
                "key": String::from_utf8_lossy(&r.key), "data_len": r.data_len, "extents": r.extents.len(),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
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
    println!("buffers     {} referenced, {} free", geometry.buffer_count - usage.free_buffers, usage.free_buffers);
    for (index, report) in scans.iter().enumerate() {
        println!("scan        log {index}: {report}");
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
