//! Goal: the command works as a user runs it, and a real process killed
//! with SIGKILL at random moments never loses a commit it reported.
//!
//! Method (kill -9): a child `packetstore crash-writer` appends and commits
//! to a /dev/shm pool, printing each commit after it returns; the parent
//! kills it after a random delay, then runs `crash-writer --verify`, which
//! recovers, checks every record's bytes against the payload its number
//! determines (failing otherwise) and lists the live records. Every record
//! reported committed, and not named in a later release, must be listed.
//! `PACKETSTORE_KILLS` sets the number of kills (25 by default).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use packetstore::util::rng::SplitMix64;

fn packetstore() -> Command {
    Command::new(env!("CARGO_BIN_EXE_packetstore"))
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = Path::new("/dev/shm").join(format!("packetstore-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn numbers(line: &str, word: &str) -> Vec<u64> {
    line.strip_prefix(word)
        .map(|rest| rest.split_whitespace().map(|n| n.parse().unwrap()).collect())
        .unwrap_or_default()
}

#[test]
fn kill_9_never_loses_a_reported_commit() {
    let kills: u64 = std::env::var("PACKETSTORE_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(25);
    let dir = TempDir::new("kill");
    let pool = dir.0.join("kill.pool");
    let mut rng = SplitMix64::new(0xdead);
    let mut must: BTreeSet<u64> = BTreeSet::new();
    let mut committed_total = 0;
    for round in 0..kills {
        let mut child = packetstore()
            .args(["crash-writer", "--pool", pool.to_str().unwrap(), "--seed", &round.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader =
            std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(20 + rng.below(150)));
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        assert!(status.code().is_none(), "round {round}: the writer exited by itself: {status}");
        for line in reader.join().unwrap() {
            let committed = numbers(&line, "committed ");
            committed_total += committed.len();
            must.extend(committed);
            for released in numbers(&line, "releasing ") {
                must.remove(&released);
            }
        }
        let verify =
            packetstore().args(["crash-writer", "--verify", "--pool", pool.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&verify.stderr);
        assert!(verify.status.success(), "round {round}: recovery or data check failed: {stderr}");
        let stdout = String::from_utf8_lossy(&verify.stdout);
        let live: BTreeSet<u64> = numbers(stdout.trim(), "live ").into_iter().collect();
        let lost: Vec<_> = must.difference(&live).collect();
        assert!(lost.is_empty(), "round {round}: committed records lost after kill -9: {lost:?}");
        // What recovery kept is now durable: it must survive from now on.
        must = live;
    }
    eprintln!("{kills} kills, {committed_total} records reported committed, {} live at the end", must.len());
    assert!(committed_total > 0, "no writer ever committed: the test proved nothing");
}

#[test]
fn version_help_and_clear_errors() {
    let version = packetstore().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("packetstore 0."));
    let help = packetstore().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("inspect") && help.contains("demo") && !help.contains("crash-writer"), "{help}");

    let dir = TempDir::new("errors");
    let not_a_pool = dir.0.join("notes.txt");
    std::fs::write(&not_a_pool, "hello").unwrap();
    let output = packetstore().args(["inspect", not_a_pool.to_str().unwrap()]).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a packetstore pool"), "{stderr}");

    let output = packetstore().args(["demo", "--domain", "floppy"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown domain 'floppy'"));

    // A group node with syncs in flight could not make a loaded snapshot
    // durable before acknowledging: refused before any pool is made.
    let pool = dir.0.join("node.pool");
    let args = ["serve", "--pool", pool.to_str().unwrap(), "--node-id", "1", "--peers", "1=127.0.0.1:1"];
    let output = packetstore().args(args).args(["--syncs-in-flight", "2"]).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("keeps one sync in flight"));
    assert!(!pool.exists(), "a refused start made a pool");
}

#[test]
fn demo_then_inspect_json() {
    let dir = TempDir::new("demo");
    let pool = dir.0.join("demo.pool");
    let pool = pool.to_str().unwrap();
    for _ in 0..2 {
        let output =
            packetstore().args(["demo", "--pool", pool, "--records", "50", "--pool-size", "16MiB"]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let output = packetstore().args(["inspect", "--json", "--records", pool]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["log"]["live_records"], 100);
    assert_eq!(json["domain"]["durable"], false, "a /dev/shm pool is emulation");
    assert_eq!(json["records"][99]["key"], "demo-99");
    assert_eq!(json["records"][0]["data_len"], 1024);
}
