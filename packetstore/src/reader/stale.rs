//! Recent-writes tables left behind (issue 35): a table is 32 MiB of
//! tmpfs, and every server with one-sided reads makes one. A server
//! removes its own when it stops (`Recent`'s drop, and `remove_table` once
//! the server is done); one that was killed leaves it (302 after one run of
//! the test suite, whose servers are killed), so each start removes those
//! whose server is gone (`remove_stale_tables`).
//!
//! A table's server is gone when no process maps the table (its server
//! maps it for as long as it runs) and the table is older than
//! `STALE_AGE_MIN` (a server that has just created its table maps it a
//! moment later).
//!
//! Only the caller's own tables are candidates (/dev/shm is sticky: one
//! may remove only one's own files anyway), and their servers ran as the
//! caller, whose processes' maps it may read; a process whose maps it may
//! not read runs as another user, and maps no table whose server it is.
//!
//! Invariant: a table whose server process still runs is never removed.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where tables live, and how their names begin and end
/// (`recent::table_path`).
const TABLE_DIR: &str = "/dev/shm";
const TABLE_PREFIX: &str = "packetstore-";
const TABLE_SUFFIX: &str = ".recent";

/// A table younger than this may belong to a server that is creating it.
pub const STALE_AGE_MIN: Duration = Duration::from_secs(10);

/// Processes examined at most (a bound on the scan of /proc).
const PROCESSES_MAX: usize = 1 << 20;

/// Removes a server's own table at its clean stop; a table already gone
/// is not an error.
pub fn remove_table(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Every table in /dev/shm: their paths.
fn tables() -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(TABLE_DIR)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(TABLE_PREFIX) && name.ends_with(TABLE_SUFFIX) {
            found.push(entry.path());
        }
    }
    Ok(found)
}

/// The tables the processes whose maps this one may read map, by path.
fn mapped_tables() -> io::Result<std::collections::HashSet<PathBuf>> {
    let mut mapped = std::collections::HashSet::new();
    let processes = std::fs::read_dir("/proc")?;
    for entry in processes.take(PROCESSES_MAX).flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // A process that exited meanwhile maps nothing; one of another
        // user is not the server of any of our tables.
        let Ok(maps) = std::fs::read_to_string(entry.path().join("maps")) else { continue };
        for line in maps.lines() {
            if let Some(at) = line.find(TABLE_DIR) {
                if line.ends_with(TABLE_SUFFIX) {
                    mapped.insert(PathBuf::from(&line[at..]));
                }
            }
        }
    }
    Ok(mapped)
}

/// Removes the tables whose server is gone (see the module comment);
/// returns the paths removed. Tables this process may not remove are left.
pub fn remove_stale_tables() -> io::Result<Vec<PathBuf>> {
    let tables = tables()?;
    if tables.is_empty() {
        return Ok(Vec::new());
    }
    let mapped = mapped_tables()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for table in tables {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&table) else { continue };
        let age = meta.modified().map(|at| at.elapsed().unwrap_or_default());
        let old = age.is_ok_and(|age| age >= STALE_AGE_MIN);
        let ours = meta.uid() == me;
        if ours && old && !mapped.contains(&table) && std::fs::remove_file(&table).is_ok() {
            removed.push(table);
        }
    }
    Ok(removed)
}
