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
    let mut buffers = Buffers::new(geometry.buffer_count);
    let (log, report) = Log::inspect(&pool, &mut buffers).context("the log does not validate")?;
    let usage = log.usage();
    let header = pool.header();
    let records = if args.records {
        log.live_lsns().map(|lsn| log.view(&pool, lsn)).collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    if args.json {
        let json = serde_json::json!({
            "path": args.pool,
            "file_size": pool.len(),
            "format_version": packetstore::layout::FORMAT_VERSION,
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
                "head_lsn": usage.head_lsn,
                "tail_lsn": usage.tail_lsn,
                "ring_size": usage.ring_size,
                "free_bytes": usage.free_bytes,
                "live_records": usage.live_records,
                "live_data_bytes": usage.live_data_bytes,
                "released_records_not_reclaimed": report.released_records,
                "torn_records_past_end": report.torn_records_erased,
                "scan_ms": report.duration.as_secs_f64() * 1e3,
            },
            "buffers": { "referenced": geometry.buffer_count - buffers.free_count(), "free": buffers.free_count() },
            "records": records.iter().map(|r| serde_json::json!({
                "lsn": r.lsn, "kind": r.kind, "tag": r.tag,
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
        packetstore::layout::FORMAT_VERSION
    );
    println!("geometry    {geometry}");
    println!("domain      {}", pool.domain());
    println!(
        "log         {} live records, {} data bytes; lsn [{}, {}); {} of {} ring bytes free",
        usage.live_records, usage.live_data_bytes, usage.head_lsn, usage.tail_lsn, usage.free_bytes, usage.ring_size
    );
    if report.torn_records_erased > 0 {
        println!(
            "            {} records of an interrupted batch past the end (will be erased at the next open)",
            report.torn_records_erased
        );
    }
    println!("buffers     {} referenced, {} free", geometry.buffer_count - buffers.free_count(), buffers.free_count());
    println!("scan        {report}");
    for r in &records {
        println!(
            "  lsn {:>10}  kind {:>3}  tag {:>20}  {:>8} bytes in {:>3} extents  key {:?}",
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
