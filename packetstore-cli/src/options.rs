//! Command-line options shared by subcommands: sizes with units, the
//! persistence options of a pool, opening a pool as the command's kind
//! (a pool of another kind is refused, unchanged, with what to do), and
//! whether a pool holds enough buffers for the servers' receive rings
//! (checked before a new pool is created, so a pool too small is never
//! written).

use std::path::Path;

use anyhow::{bail, Context};
use packetstore::io::app::Persist;
use packetstore::io::epoll::CommitPolicy;
use packetstore::io::probe::{Feature, Features};
use packetstore::PoolKindExt;
use packetstore::{Domain, Geometry, PageSync, PersistOptions, Pool, PoolError, PoolKind, SimDevice, SimMode};
use std::sync::Arc;

/// Parses "4096", "64KiB", "64K", "1GiB", "2g": binary units.
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().with_context(|| format!("'{text}' is not a size (try 64MiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => bail!("unknown size unit '{other}' in '{text}' (use KiB, MiB, GiB or TiB)"),
    };
    number.checked_mul(1 << shift).with_context(|| format!("size '{text}' overflows"))
}

/// Parses "250ms", "10s", "2m" (a bare number is seconds).
pub fn parse_duration(text: &str) -> anyhow::Result<std::time::Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().with_context(|| format!("'{text}' is not a duration (try 10s)"))?;
    let ms_per_unit: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        other => bail!("unknown duration unit '{other}' in '{text}' (use ms, s or m)"),
    };
    let ms = number.checked_mul(ms_per_unit).with_context(|| format!("duration '{text}' overflows"))?;
    Ok(std::time::Duration::from_millis(ms))
}

/// The I/O path from `--io` and `--commit`: None for io_uring, else the
/// epoll baseline's commit policy (which receives into private buffers,
/// so it cannot persist zero copy).
pub fn io_path(io: &str, commit: &str, persist: Persist) -> anyhow::Result<Option<CommitPolicy>> {
    let policy = match (io, commit) {
        ("uring", _) => None,
        ("epoll", "per-request") => Some(CommitPolicy::PerRequest),
        ("epoll", "per-turn") => Some(CommitPolicy::PerTurn),
        ("epoll", other) => bail!("unknown --commit '{other}': use per-request or per-turn"),
        (other, _) => bail!("unknown --io '{other}': use uring or epoll"),
    };
    if policy.is_some() && persist == Persist::ZeroCopy {
        bail!("--io epoll receives into private buffers: it cannot --persist zerocopy (use copy)");
    }
    Ok(policy)
}

/// Probes io_uring once, at start (before recovery, so that a kernel or a
/// sandbox that cannot run the engine is reported at once), with the
/// fallbacks `PACKETSTORE_URING_DISABLE` forces. Where the engine cannot
/// run at all, the error says what to use instead.
pub fn probe_uring() -> anyhow::Result<Features> {
    let disabled = Feature::disabled_by_environment().map_err(anyhow::Error::msg)?;
    packetstore::io::probe::probe(&disabled)
        .map_err(|error| anyhow::anyhow!("{error}; run with --io epoll --persist copy, which needs no io_uring"))
}

/// Opens the pool at `path` as a pool of `kind` (the servers': `serve`
/// for key-value, `wal` for WAL), or creates it (and its directory) with
/// that kind, `pool_size` bytes, 2 KiB buffers, and `log_count` logs of
/// `log_size` bytes in all, recording `shard` (a shard of a sharded data
/// set) in its header. Returns whether it was created. A pool of
/// another kind is refused before anything is written to it.
pub fn open_or_create_pool(
    path: &Path,
    kind: PoolKind,
    pool_size: &str,
    log_size: &str,
    log_count: u32,
    options: &PersistOptions,
    (create_dirs, shard): (bool, Option<packetstore::pool::layout::ShardId>),
) -> anyhow::Result<(Pool, bool)> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        // A mistyped --pool must not silently make a tree of directories:
        // only the default place (the README's) or --create-dirs does.
        anyhow::ensure!(
            create_dirs || is_default_data_dir(parent),
            "the pool's directory {} does not exist: create it, or give --create-dirs to have it created",
            parent.display()
        );
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if path.exists() {
        let pool =
            Pool::open_as(path, kind, options).map_err(|e| refusal(e, kind.made_by(), "give --pool another path"))?;
        return Ok((pool, false));
    }
    let geometry = new_geometry(pool_size, log_size, log_count)?;
    Ok((Pool::create_shard(path, kind, shard, geometry, options)?, true))
}

/// The directory of the servers' default pools (`--pool`'s default), made
/// when missing: the README starts a server with no option.
pub const DATA_DIR_DEFAULT: &str = "packetstore-data";

/// Whether `dir` is the default pool directory: packetstore-data/ under
/// the current directory, named relatively or not.
fn is_default_data_dir(dir: &Path) -> bool {
    let here = std::env::current_dir().map(|cwd| cwd.join(DATA_DIR_DEFAULT));
    dir == Path::new(DATA_DIR_DEFAULT) || here.is_ok_and(|here| here == dir)
}

/// The size of a new pool when `--pool-size` is not given.
pub const POOL_SIZE_DEFAULT: &str = "1GiB";

/// The buffers of a pool the servers create.
pub const BUFFER_SIZE: u32 = packetstore::limits::BUFFER_SIZE_DEFAULT;

/// The geometry of a new pool of `pool_size` bytes with `log_count` logs
/// sharing `log_size` bytes, and 2 KiB buffers in the rest.
pub fn new_geometry(pool_size: &str, log_size: &str, log_count: u32) -> anyhow::Result<Geometry> {
    let mut geometry = Geometry::for_file_size(parse_size(pool_size)?, BUFFER_SIZE, parse_size(log_size)?)
        .map_err(|e| anyhow::anyhow!("pool size {pool_size}: {e}"))?;
    geometry.log_count = log_count;
    geometry.validate().map_err(|e| anyhow::anyhow!("{log_count} logs: {e}"))?;
    Ok(geometry)
}

/// The buffers a server needs in each of its event loops' equal shares of
/// a pool, to keep its receive ring refilled: `per_entry` per ring entry,
/// and at least `fixed`.
#[derive(Clone, Copy, Debug)]
pub struct BuffersNeeded {
    pub ring_entries: u16,
    pub per_entry: u32,
    pub fixed: u32,
    pub loops: u32,
}

impl BuffersNeeded {
    /// Buffers each loop needs with a ring of `ring_entries`.
    pub fn per_loop(&self, ring_entries: u16) -> u32 {
        (self.per_entry * u32::from(ring_entries)).max(self.fixed)
    }

    /// The smallest pool with a log region of `log_size` bytes that holds
    /// them, in whole MiB.
    pub fn pool_size_min_mib(&self, log_size: u64) -> u64 {
        let per_loop = self.per_loop(self.ring_entries).max(packetstore::limits::BUFFER_COUNT_MIN);
        let geometry =
            Geometry { buffer_size: BUFFER_SIZE, buffer_count: per_loop * self.loops, log_size, log_count: self.loops };
        geometry.file_size().div_ceil(1 << 20)
    }

    /// The largest ring (a power of two) that `buffers_per_loop` can feed.
    pub fn ring_entries_max(&self, buffers_per_loop: u32) -> Option<u16> {
        (0..=15).rev().map(|shift| 1u16 << shift).find(|&entries| self.per_loop(entries) <= buffers_per_loop)
    }

    /// What they are, in words: "a receive ring of 1024 entries (8 buffers
    /// of 2 KiB per ring entry)".
    fn describe(&self) -> String {
        let loops = if self.loops > 1 { format!("{} event loops, each with ", self.loops) } else { String::new() };
        let rule = match (self.per_entry, self.fixed) {
            (0, fixed) => format!("{fixed} buffers of 2 KiB"),
            (per_entry, _) => format!("{per_entry} buffers of 2 KiB per ring entry"),
        };
        let each = if self.loops > 1 { ", per loop" } else { "" };
        format!("{loops}a receive ring of {} entries ({rule}{each})", self.ring_entries)
    }
}

/// Before a pool is created: refuses a `pool_size` too small for `needed`,
/// naming the smallest that will do. An existing pool (`path` exists) is
/// checked once opened, by `check_buffers`.
pub fn check_new_pool(path: &Path, pool_size: &str, log_size: &str, needed: &BuffersNeeded) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    let log_bytes = parse_size(log_size).context("--log-size")?;
    let min_mib = needed.pool_size_min_mib(log_bytes);
    let too_small = || {
        anyhow::anyhow!(
            "--pool-size {pool_size} is too small for {}: with a {} MiB log (--log-size), a pool needs at least \
             {min_mib} MiB; use --pool-size {min_mib}MiB or more, or shrink --ring-entries",
            needed.describe(),
            log_bytes >> 20,
        )
    };
    if parse_size(pool_size).context("--pool-size")? < min_mib << 20 {
        return Err(too_small());
    }
    let geometry = new_geometry(pool_size, log_size, needed.loops)?;
    if geometry.buffer_range(0).1 < needed.per_loop(needed.ring_entries) {
        return Err(too_small());
    }
    Ok(())
}

/// After a pool is opened: refuses one whose loops' shares are too small
/// for `needed`. An existing pool keeps its size: the way out is a smaller
/// ring.
pub fn check_buffers(path: &Path, geometry: &Geometry, needed: &BuffersNeeded) -> anyhow::Result<()> {
    let have = geometry.buffer_range(0).1;
    if have >= needed.per_loop(needed.ring_entries) {
        return Ok(());
    }
    let fix = match needed.ring_entries_max(have) {
        Some(entries) => format!("shrink --ring-entries to {entries} or less"),
        None => "no receive ring fits it".to_string(),
    };
    bail!(
        "{} holds {have} buffers per event loop, too few for {}; an existing pool keeps its size (--pool-size \
         applies to a new pool only): {fix}, or move it away and start with a new, larger pool",
        path.display(),
        needed.describe()
    )
}

/// A `--pool-size` given for an existing pool that a new pool of that size
/// would not match: a warning, since the pool keeps its size.
pub fn warn_pool_size_ignored(path: &Path, pool_size: Option<&str>, pool: &Pool) {
    let Some(pool_size) = pool_size else { return };
    let geometry = pool.geometry();
    let wanted = parse_size(pool_size)
        .ok()
        .and_then(|bytes| Geometry::for_file_size(bytes, geometry.buffer_size, geometry.log_size).ok())
        .map(|wanted| wanted.buffer_count);
    if wanted != Some(geometry.buffer_count) {
        tracing::warn!(
            "--pool-size {pool_size} is ignored: {} already exists and keeps its size ({:.1} MiB); --pool-size \
             applies to a new pool only",
            path.display(),
            pool.len() as f64 / 1048576.0
        );
    }
}

/// A pool of the wrong kind, said so that the user can act: what the pool
/// is, what `command` (in backquotes) needs, and `remedy`. Any other
/// error passes through as it is.
pub fn refusal(error: PoolError, command: &str, remedy: &str) -> anyhow::Error {
    let PoolError::WrongKind { path, found, wanted, evidence } = error else {
        return error.into();
    };
    let inferred = evidence.map(|why| format!("; its header records no kind, but its contents do: {why}"));
    anyhow::anyhow!(
        "{} is a {found} pool (made by {}{}); {command} needs a {wanted} pool: {remedy} (the pool was left unchanged)",
        path.display(),
        found.made_by(),
        inferred.unwrap_or_default()
    )
}

/// The io_uring event loop's options, shared by `wal` and `serve`.
#[derive(clap::Args, Clone, Debug)]
pub struct LoopArgs {
    /// Buffers in the receive ring (a power of two, at most 32768).
    #[arg(long, default_value_t = 4096)]
    pub ring_entries: u16,
    /// Poll for completions instead of sleeping in the kernel.
    #[arg(long)]
    pub busy_poll: bool,
    /// Page domain (io uring): fdatasyncs kept in flight at once, each
    /// covering everything appended before it (1..=16).
    #[arg(long, default_value_t = 1)]
    pub syncs_in_flight: usize,
    /// Zero copy: give each receive whole pool buffers, instead of the
    /// default incremental consumption (IOU_PBUF_RING_INC), where requests
    /// pack into shared buffers (fewer pages per request and per sync:
    /// +10-28% on ext4 here, neutral on /dev/shm).
    #[arg(long)]
    pub whole_buffers: bool,
    /// Connections served at once; beyond it new ones are closed at once
    /// and counted (INFO rejected_connections). Also bounded by the open
    /// file limit (ulimit -n).
    #[arg(long, default_value_t = 10_000)]
    pub connections_max: usize,
    /// Back-pressure: a client this far behind reading its replies is not
    /// served (and soon not read) until it catches up.
    #[arg(long, default_value = "4MiB")]
    pub client_pause: String,
    /// A paused client that reads nothing for this long is disconnected.
    #[arg(long, default_value = "60s")]
    pub client_stall_timeout: String,
    /// Fairness: what one client may send in one loop turn before the
    /// others are served (its receive is re-armed for the next turn);
    /// 0: unlimited (a fast sender then stretches everyone's turns).
    #[arg(long, default_value = "64KiB")]
    pub client_receive_per_turn: String,
}

impl LoopArgs {
    /// The event loop's configuration, from the flags (`incremental`: the
    /// persist mode and loop allow incremental buffer consumption).
    pub fn engine_config(&self, incremental: bool) -> anyhow::Result<packetstore::io::engine::EngineConfig> {
        anyhow::ensure!(self.connections_max >= 1, "--connections-max must be at least 1");
        let out_pause_bytes = parse_size(&self.client_pause).context("--client-pause")?;
        anyhow::ensure!(out_pause_bytes >= 64 * 1024, "--client-pause must be at least 64KiB");
        let stall_timeout = parse_duration(&self.client_stall_timeout).context("--client-stall-timeout")?;
        let per_turn = parse_size(&self.client_receive_per_turn).context("--client-receive-per-turn")?;
        anyhow::ensure!(
            per_turn == 0 || (4096..=1 << 30).contains(&per_turn),
            "--client-receive-per-turn must be 0 (unlimited) or between 4KiB and 1GiB"
        );
        Ok(packetstore::io::engine::EngineConfig {
            ring_entries: self.ring_entries,
            busy_poll: self.busy_poll,
            syncs_in_flight: self.syncs_in_flight,
            incremental: incremental && !self.whole_buffers,
            connections_max: self.connections_max,
            out_pause_bytes,
            stall_timeout,
            turn_receive_bytes: per_turn as u32,
            ..packetstore::io::engine::EngineConfig::default()
        })
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct PersistArgs {
    /// Persistence domain: auto, cache-line, byte, page or none (benchmarks
    /// only). auto: MAP_SYNC -> cache-line, tmpfs -> cache-line (emulated),
    /// otherwise page.
    #[arg(long, default_value = "auto")]
    pub domain: String,
    /// How the page domain syncs a batch: fdatasync or msync.
    #[arg(long, default_value = "fdatasync")]
    pub page_sync: String,
    /// Emulated latency added to every fence of the cache-line and byte
    /// domains, in nanoseconds (the paper's slow-PM case is 10000).
    #[arg(long, default_value_t = 0, alias = "fence-delay-ns")]
    pub fence_latency_ns: u64,
    /// Map the whole pool at start (no page faults while serving).
    #[arg(long)]
    pub prefault: bool,
    /// When creating a pool on a disk file system: reserve its blocks
    /// without writing zeros over them. Creation is then instant, but until
    /// every block has been written once, the page domain's syncs also
    /// commit the file system's journal (about half the SET throughput on
    /// ext4). By default, creation writes the pool once (about 1 s per GiB).
    #[arg(long)]
    pub reserve_only: bool,
    /// When creating a pool: leave the file sparse instead of reserving its
    /// space. A huge pool then costs only what it holds, but a full file
    /// system can kill the server (SIGBUS) when it writes into a hole.
    #[arg(long)]
    pub sparse: bool,
    /// When creating a pool: make its directory (and their parents) if
    /// missing. Without it a missing directory is an error, except the
    /// default one (packetstore-data/ under the current directory).
    #[arg(long)]
    pub create_dirs: bool,
    /// Test switch: run the pool in memory on the crash simulator
    /// (cache-line or page), where a debug request cuts the power (RESP
    /// `DEBUG POWERFAIL`, HTTP `GET /debug/powerfail`) and the crash image
    /// is written back to the file. Nothing is durable until then. Refused
    /// unless PACKETSTORE_ENABLE_TEST_SWITCHES=1.
    #[arg(long, hide = true)]
    pub simulate_power_failures: Option<String>,
}

/// Whether the environment enables test switches
/// (PACKETSTORE_ENABLE_TEST_SWITCHES=1): panic injection (`DEBUG PANIC`,
/// `DEBUG PANIC-AT`, the WAL's `GET /debug/panic`), and with
/// `--simulate-power-failures` the crash simulator.
pub fn test_switches_enabled() -> bool {
    std::env::var("PACKETSTORE_ENABLE_TEST_SWITCHES").as_deref() == Ok("1")
}

/// The crash simulator of `--simulate-power-failures`, loaded with the
/// pool file's bytes: refused unless the environment enables test switches.
pub fn power_switch(args: &PersistArgs, pool: &Path) -> anyhow::Result<Option<Arc<SimDevice>>> {
    let Some(mode) = &args.simulate_power_failures else { return Ok(None) };
    if !test_switches_enabled() {
        bail!(
            "--simulate-power-failures is a test switch (the pool runs in memory: nothing is durable); \
             it is refused unless PACKETSTORE_ENABLE_TEST_SWITCHES=1"
        );
    }
    let mode = match mode.as_str() {
        "cache-line" => SimMode::CacheLine,
        "page" => SimMode::Page,
        other => bail!("unknown simulator mode '{other}': use cache-line or page"),
    };
    let image = std::fs::read(pool).with_context(|| format!("cannot read {}", pool.display()))?;
    Ok(Some(Arc::new(SimDevice::from_image(image, mode))))
}

/// The simulated power failed: writes what survived into the pool file,
/// as a restart after a real failure would find it.
pub fn write_crash_image(device: &SimDevice, pool: &Path) -> anyhow::Result<()> {
    let image = device.take_crash_image().context("a dead simulator has its crash image")?;
    write_image(pool, &image)?;
    println!("power failed (simulated): the crash image is in {}", pool.display());
    Ok(())
}

/// Writes a crash image over the pool file at `pool`, durably.
pub fn write_image(pool: &Path, image: &[u8]) -> anyhow::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(pool)?;
    std::os::unix::fs::FileExt::write_all_at(&file, image, 0)?;
    file.sync_data()?;
    Ok(())
}

impl PersistArgs {
    pub fn options(&self) -> anyhow::Result<PersistOptions> {
        let domain = match self.domain.as_str() {
            "auto" => None,
            other => Some(
                Domain::parse(other)
                    .with_context(|| format!("unknown domain '{other}': use auto, cache-line, byte, page or none"))?,
            ),
        };
        let page_sync = PageSync::parse(&self.page_sync)
            .with_context(|| format!("unknown page sync '{}': use fdatasync or msync", self.page_sync))?;
        Ok(PersistOptions {
            domain,
            page_sync,
            fence_latency_ns: self.fence_latency_ns,
            prefault: self.prefault,
            zero_fill: !self.reserve_only,
            sparse: self.sparse,
        })
    }
}

/// Printed when a tmpfs pool gets 4 KiB pages (`DomainInfo::tmpfs_huge_pages`).
pub const TMPFS_SMALL_PAGES: &str = "note: this tmpfs maps the pool with 4 KiB pages; a tmpfs mounted with \
    huge=within_size maps it with 2 MiB pages and serves about 1.5x faster (docs/operations.md)";

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_size, BuffersNeeded};
    use std::time::Duration;

    #[test]
    fn the_smallest_pool_for_a_ring() {
        let serve = BuffersNeeded { ring_entries: 1024, per_entry: 8, fixed: 0, loops: 1 };
        // 8192 buffers of 2 KiB after a 64 MiB log and the header page.
        assert_eq!(serve.pool_size_min_mib(64 << 20), 81);
        assert_eq!(serve.ring_entries_max(8192), Some(1024));
        assert_eq!(serve.ring_entries_max(8191), Some(512));
        assert_eq!(serve.ring_entries_max(7), None);
        let wal = BuffersNeeded { ring_entries: 256, per_entry: 3, fixed: 0, loops: 2 };
        assert_eq!(wal.pool_size_min_mib(4 << 20), 8);
        // The defaults, as serve's and wal's --help state them.
        assert_eq!(BuffersNeeded { ring_entries: 4096, ..serve }.pool_size_min_mib(64 << 20), 129);
        assert_eq!(BuffersNeeded { ring_entries: 4096, loops: 1, ..wal }.pool_size_min_mib(256 << 20), 281);
        let copy = BuffersNeeded { ring_entries: 4096, per_entry: 0, fixed: 256, loops: 1 };
        assert_eq!(copy.per_loop(4096), 256);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("1 fortnight").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999m").is_err());
    }
}
