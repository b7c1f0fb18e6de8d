//! Unmodified sqlite3 (Debian's CLI) under the preload library, with
//! `PRAGMA synchronous=FULL`, in both journal modes: thousands of small
//! transactions, the process killed with -9 at random moments and started
//! again (as a supervisor would), and after each restart (whose first open
//! recovers the cache) `PRAGMA integrity_check` is ok and every
//! transaction sqlite3 reported committed is in the table.
//!
//! The preload library is the cdylib cargo builds with this test.
//! `PACKETSTORE_PRELOAD_KILLS=N` sets the kills per journal mode (8).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use packetstore::util::rng::SplitMix64;

mod common;
use common::Setup;

/// Runs `sql` to the end; its stdout and stderr.
fn run(command: &mut Command, sql: &str) -> (String, String) {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "sqlite3 failed: {}", String::from_utf8_lossy(&output.stderr));
    (String::from_utf8_lossy(&output.stdout).into(), String::from_utf8_lossy(&output.stderr).into())
}

/// Starts sqlite3 inserting rows `next..` one transaction each; a thread
/// (returned, to be joined once sqlite3 is gone: it has then read every
/// report) notes the highest id sqlite3 reported committed.
fn start_inserting(
    command: &mut Command,
    mode: &str,
    next: u64,
) -> (Child, Arc<AtomicU64>, std::thread::JoinHandle<()>) {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let committed = Arc::new(AtomicU64::new(next - 1));
    let seen = committed.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(id) = line.strip_prefix("committed|") {
                seen.fetch_max(id.parse().unwrap(), Ordering::Relaxed);
            }
        }
    });
    let mode = mode.to_string();
    std::thread::spawn(move || {
        let head = format!(
            "PRAGMA journal_mode={mode};\nPRAGMA synchronous=FULL;\n\
             CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v TEXT NOT NULL);\n"
        );
        if stdin.write_all(head.as_bytes()).is_err() {
            return;
        }
        for id in next.. {
            let sql = format!(
                "INSERT INTO t VALUES({id}, printf('%.*c', {}, 'x'));\nSELECT 'committed', {id};\n",
                10 + id % 300
            );
            if stdin.write_all(sql.as_bytes()).is_err() {
                return;
            }
        }
    });
    (child, committed, reader)
}

fn check(setup: &Setup, db: &Path, committed: u64, context: &str) -> (u64, String) {
    let sql = format!("PRAGMA integrity_check;\nSELECT count(*), coalesce(max(id), 0) FROM t WHERE id <= {committed};\nSELECT count(*) FROM t;\n");
    let (out, err) = run(&mut setup.sqlite(db, false), &sql);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.first(), Some(&"ok"), "{context}: integrity_check: {out} {err}");
    assert_eq!(
        lines.get(1).copied(),
        Some(format!("{committed}|{committed}").as_str()),
        "{context}: every committed row: {out}"
    );
    let rows: u64 = lines[2].parse().unwrap();
    assert!(rows <= committed + 1, "{context}: {rows} rows, {committed} committed: at most the one in flight more");
    (rows, err)
}

fn kills(mode: &str, durability: &str) {
    let setup = Setup::new(&format!("{}-{durability}", mode.to_lowercase()));
    let db = setup.dir.join("db.sqlite");
    let rounds: u64 = std::env::var("PACKETSTORE_PRELOAD_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let mut rng = SplitMix64::new(mode.len() as u64);
    let (mut committed, mut replayed_somewhere) = (0u64, false);
    for round in 0..rounds {
        let mut sqlite = setup.sqlite(&db, true);
        sqlite.env("PACKETSTORE_CACHE_DURABILITY", durability);
        let (mut child, seen, reader) = start_inserting(&mut sqlite, mode, committed + 1);
        // The random moment counts from the run's first commit: a debug
        // build of the library on a loaded machine can take longer than
        // the shortest delay to start (about 300 ms seen with two runs in
        // parallel), and a run killed before it commits proves nothing.
        let started = std::time::Instant::now();
        while seen.load(Ordering::Relaxed) == committed && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
        child.kill().unwrap();
        child.wait().unwrap();
        // Every report sqlite3 printed before the kill, read.
        reader.join().unwrap();
        let before = committed;
        committed = seen.load(Ordering::Relaxed);
        assert!(committed > before, "{mode} round {round}: sqlite3 committed nothing in its run");
        let (rows, banner) = check(&setup, &db, committed, &format!("{mode} round {round}"));
        committed = rows.max(committed);
        replayed_somewhere |= banner.contains("recovery replayed") && !banner.contains("replayed 0 records");
    }
    assert!(committed > 100, "{mode}: {committed} transactions in all");
    assert!(replayed_somewhere, "{mode}: some restart replayed records the kill left in the log");
}

#[test]
fn sqlite_in_wal_mode_survives_kills() {
    kills("WAL", "write");
}

#[test]
fn sqlite_in_delete_mode_survives_kills() {
    kills("DELETE", "write");
}

#[test]
fn sqlite_durable_at_fsync_survives_kills() {
    kills("WAL", "fsync");
}
