//! `packetstore reader-check` (hidden): a reader process of the one-sided
//! reads test. Reads keys `rk0..rkN` in a random order for a while,
//! one-sidedly (falling back to the server as any reader does), checks
//! that every value is whole (the writer's format below), and prints one
//! line per read for the test to check against what its writers were
//! acknowledged: `key version start_ns end_ns` (version 0: absent), times
//! on CLOCK_MONOTONIC, which every process of the machine shares. Reads
//! that fail (the server down while the read could not be proved) print
//! nothing. The last line is the reader's counters.
//!
//! A value is `v:<key>:<version>:<filler>:<crc>`: crc is the CRC-32C (8
//! hex digits) of everything before it. A torn or misplaced value makes
//! this process fail.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use packetstore::reader::{Reader, ReaderOptions};
use packetstore::util::rng::SplitMix64;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    pub pool: PathBuf,
    #[arg(long)]
    pub server: String,
    #[arg(long)]
    pub keys: u64,
    #[arg(long)]
    pub millis: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sleep this long in the middle of each read from the tree (a reader
    /// preempted there: the lease must keep what it reads).
    #[arg(long, default_value_t = 0)]
    pub mid_read_pause_us: u64,
    /// Read from the last checkpoint only (no recent-writes table).
    #[arg(long)]
    pub bounded_staleness: bool,
    /// Spin this long between reads (keeps the output small).
    #[arg(long, default_value_t = 0)]
    pub pause_us: u64,
}

/// CLOCK_MONOTONIC in ns.
pub fn monotonic_ns() -> u64 {
    // SAFETY: a valid timespec out-parameter; the clock always exists.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The version a whole value of `key` carries.
fn check_value(key: &str, value: &[u8]) -> anyhow::Result<u64> {
    let text = std::str::from_utf8(value).context("a value that is not text")?;
    let (body, crc) = text.rsplit_once(':').context("a value without its CRC")?;
    if format!("{:08x}", crc32c::crc32c(body.as_bytes())) != crc {
        bail!("a torn value of {key}: {} bytes, CRC field {:?}", value.len(), &crc[..crc.len().min(16)]);
    }
    let mut parts = body.splitn(4, ':');
    let (tag, owner, version) = (parts.next(), parts.next(), parts.next());
    if tag != Some("v") || owner != Some(key) {
        bail!("key {key} holds a value of {owner:?}");
    }
    version.context("no version")?.parse().context("a bad version")
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = ReaderOptions {
        server: Some(args.server.clone()),
        mid_read_pause: Duration::from_micros(args.mid_read_pause_us),
        bounded_staleness: args.bounded_staleness,
        ..ReaderOptions::default()
    };
    let mut reader = Reader::open(&args.pool, options)?;
    let mut rng = SplitMix64::new(args.seed);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let deadline = Instant::now() + Duration::from_millis(args.millis);
    let mut value = Vec::new();
    let mut failed = 0u64;
    while Instant::now() < deadline {
        let key = format!("rk{}", rng.below(args.keys));
        let start = monotonic_ns();
        let found = reader.get_into(0, key.as_bytes(), &mut value);
        let end = monotonic_ns();
        match found {
            Ok(true) => writeln!(out, "{key} {} {start} {end}", check_value(&key, &value)?)?,
            Ok(false) => writeln!(out, "{key} 0 {start} {end}")?,
            Err(_) => failed += 1,
        }
        let resume = Instant::now() + Duration::from_micros(args.pause_us);
        while Instant::now() < resume {
            std::hint::spin_loop();
        }
    }
    let stats = reader.stats();
    writeln!(
        out,
        "stats one_sided={} from_log={} retries={} fallbacks={} failed={failed} table_opens={}",
        stats.one_sided, stats.from_log, stats.retries, stats.fallbacks, stats.table_opens
    )?;
    Ok(())
}
