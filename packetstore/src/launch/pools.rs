//! A server's pool, before it serves: opened as the server's kind (a
//! pool of another kind is refused, unchanged, with what to do) or
//! created with the geometry its options give, and checked to hold the
//! buffers its event loops' receive rings need (checked before a new pool
//! is created, so a pool too small is never written). Also the crash
//! simulator's switch, which loads a pool file into memory and writes
//! its crash image back.
//!
//! Invariant: nothing here writes to an existing pool file except
//! `write_image`, the crash simulator's image after a simulated failure.

use std::path::Path;

use std::sync::Arc;

use anyhow::{bail, Context};

use crate::io::app::Persist;
use crate::io::epoll::CommitPolicy;
use crate::io::probe::{Feature, Features};
use crate::launch::units::Size;
use crate::store::PoolKindExt;
use crate::{Geometry, PersistOptions, Pool, PoolError, PoolKind, SimDevice, SimMode};

/// The I/O path from `--io` and `--commit`: None for io_uring, else the
/// epoll baseline's commit policy (which receives into private buffers,
/// so it cannot persist zero copy).
pub fn io_path(io: &str, commit: &str, persist: Persist) -> anyhow::Result<Option<CommitPolicy>> {
    let policy = parse_io(io, commit)?;
    check_io(policy, persist)?;
    Ok(policy)
}

/// `--io` and `--commit` read: None for io_uring, else the epoll
/// baseline's commit policy.
pub fn parse_io(io: &str, commit: &str) -> anyhow::Result<Option<CommitPolicy>> {
    Ok(match (io, commit) {
        ("uring", _) => None,
        ("epoll", "per-request") => Some(CommitPolicy::PerRequest),
        ("epoll", "per-turn") => Some(CommitPolicy::PerTurn),
        ("epoll", other) => bail!("unknown --commit '{other}': use per-request or per-turn"),
        (other, _) => bail!("unknown --io '{other}': use uring or epoll"),
    })
}

/// The epoll baseline receives into private buffers: it cannot persist
/// zero copy.
pub fn check_io(policy: Option<CommitPolicy>, persist: Persist) -> anyhow::Result<()> {
    if policy.is_some() && persist == Persist::ZeroCopy {
        bail!("--io epoll receives into private buffers: it cannot --persist zerocopy (use copy)");
    }
    Ok(())
}

/// Probes io_uring once, at start (before recovery, so that a kernel or a
/// sandbox that cannot run the engine is reported at once), with the
/// fallbacks `PACKETSTORE_URING_DISABLE` forces. Where the engine cannot
/// run at all, the error says what to use instead.
pub fn probe_uring() -> anyhow::Result<Features> {
    let disabled = Feature::disabled_by_environment().map_err(anyhow::Error::msg)?;
    crate::io::probe::probe(&disabled)
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
    pool_size: &Size,
    log_size: &Size,
    log_count: u32,
    options: &PersistOptions,
    (create_dirs, shard): (bool, Option<crate::pool::layout::ShardId>),
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
pub const POOL_SIZE_DEFAULT_MIB: u64 = 1024;

/// The buffers of a pool the servers create.
pub const BUFFER_SIZE: u32 = crate::limits::BUFFER_SIZE_DEFAULT;

/// The geometry of a new pool of `pool_size` bytes with `log_count` logs
/// sharing `log_size` bytes, and 2 KiB buffers in the rest.
pub fn new_geometry(pool_size: &Size, log_size: &Size, log_count: u32) -> anyhow::Result<Geometry> {
    let mut geometry = Geometry::for_file_size(pool_size.bytes, BUFFER_SIZE, log_size.bytes)
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
        let per_loop = self.per_loop(self.ring_entries).max(crate::limits::BUFFER_COUNT_MIN);
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
pub fn check_new_pool(path: &Path, pool_size: &Size, log_size: &Size, needed: &BuffersNeeded) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    let log_bytes = log_size.bytes;
    let min_mib = needed.pool_size_min_mib(log_bytes);
    let too_small = || {
        anyhow::anyhow!(
            "--pool-size {pool_size} is too small for {}: with a {} MiB log (--log-size), a pool needs at least \
             {min_mib} MiB; use --pool-size {min_mib}MiB or more, or shrink --ring-entries",
            needed.describe(),
            log_bytes >> 20,
        )
    };
    if pool_size.bytes < min_mib << 20 {
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
pub fn warn_pool_size_ignored(path: &Path, pool_size: Option<&Size>, pool: &Pool) {
    let Some(pool_size) = pool_size else { return };
    let geometry = pool.geometry();
    let wanted = Geometry::for_file_size(pool_size.bytes, geometry.buffer_size, geometry.log_size)
        .ok()
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

/// Whether the environment enables test switches
/// (PACKETSTORE_ENABLE_TEST_SWITCHES=1): panic injection (`DEBUG PANIC`,
/// `DEBUG PANIC-AT`, the WAL's `GET /debug/panic`), and with
/// `--simulate-power-failures` the crash simulator.
pub fn test_switches_enabled() -> bool {
    std::env::var("PACKETSTORE_ENABLE_TEST_SWITCHES").as_deref() == Ok("1")
}

/// The crash simulator of `--simulate-power-failures`, loaded with the
/// pool file's bytes: refused unless the environment enables test switches.
pub fn power_switch(mode: Option<SimMode>, pool: &Path) -> anyhow::Result<Option<Arc<SimDevice>>> {
    let Some(mode) = mode else { return Ok(None) };
    simulator_allowed()?;
    let image = std::fs::read(pool).with_context(|| format!("cannot read {}", pool.display()))?;
    Ok(Some(Arc::new(SimDevice::from_image(image, mode))))
}

/// The crash simulator is a test switch: refused unless the environment
/// enables test switches.
pub fn simulator_allowed() -> anyhow::Result<()> {
    if !test_switches_enabled() {
        bail!(
            "--simulate-power-failures is a test switch (the pool runs in memory: nothing is durable); \
             it is refused unless PACKETSTORE_ENABLE_TEST_SWITCHES=1"
        );
    }
    Ok(())
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

/// Printed when a tmpfs pool gets 4 KiB pages (`DomainInfo::tmpfs_huge_pages`).
pub const TMPFS_SMALL_PAGES: &str = "note: this tmpfs maps the pool with 4 KiB pages; a tmpfs mounted with \
    huge=within_size maps it with 2 MiB pages and serves about 1.5x faster (docs/operations.md)";

/// The header of the pool file at `path`, if it reads as one.
pub fn header_of(path: &Path) -> Option<crate::pool::layout::Header> {
    let mut bytes = vec![0u8; crate::pool::layout::HDR_SIZE];
    let file = std::fs::File::open(path).ok()?;
    std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0).ok()?;
    crate::pool::layout::Header::decode(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::BuffersNeeded;

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
}
