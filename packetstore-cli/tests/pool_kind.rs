//! Goal: a pool knows what it is (issue 15). Each command refuses a pool
//! of another kind, exits non-zero saying what the pool is and what to do,
//! and leaves the file byte for byte as it was; `inspect` prints only what
//! applies to the kind. An old (version 2) key-value pool, which records no
//! kind, still serves and is still refused by the WAL server.
//!
//! Method: the real binary makes a key-value pool (`serve`, a few SETs,
//! SIGTERM) and a WAL pool (`wal --threads 2`, a few POSTs, SIGTERM); then
//! each other command runs on them, and the whole file is compared before
//! and after. The old pool is the key-value pool with its header rewritten
//! as version 2 wrote it (docs/format.md: version 2, no kind, its CRC).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use redis::Commands;

mod common;
use common::{Server, TempPool, Wal};

fn packetstore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_packetstore")).args(args).output().unwrap()
}

/// A key-value pool holding k0..k9, stopped gracefully.
fn key_value_pool(name: &str) -> TempPool {
    let pool = TempPool::new(name);
    // One pool file (one shard): the tests read and rewrite its header.
    let mut server = Server::start(&pool.0, &["--shards", "1"]);
    let mut client = server.client();
    for i in 0..10 {
        let _: () = client.set(format!("k{i}"), format!("value {i}")).unwrap();
    }
    stop(&mut server.child);
    assert!(server.wait_exit(Duration::from_secs(20)), "serve stops on SIGTERM");
    pool
}

/// A WAL pool of two logs holding 6 bodies, stopped gracefully.
fn wal_pool(name: &str) -> TempPool {
    let pool = TempPool::new(name);
    let mut server = Wal::start(&pool.0, &["--threads", "2"]);
    for i in 0..6 {
        let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
        let body = format!("body {i}");
        write!(
            stream,
            "POST /wal HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    }
    stop(&mut server.child);
    assert!(server.child.wait().unwrap().success(), "wal stops on SIGTERM");
    pool
}

fn stop(child: &mut std::process::Child) {
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
}

/// Runs `args` (a command on `pool`), which must fail with `message` in its
/// error and leave every byte of the pool as it was.
fn refused_unchanged(pool: &Path, args: &[&str], message: &str) {
    let before = std::fs::read(pool).unwrap();
    let output = packetstore(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{args:?} exits 1: {stderr}");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
    assert!(stderr.contains("(the pool was left unchanged)"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("listening"), "{args:?} started serving");
    let after = std::fs::read(pool).unwrap();
    assert!(after == before, "{args:?} changed the pool it refused");
}

#[test]
fn the_wal_server_and_demo_refuse_a_key_value_pool() {
    let pool = key_value_pool("kind-kv");
    let path = pool.0.to_str().unwrap();
    let listen = ["--listen", "127.0.0.1:0", "--ring-entries", "256"];
    for threads in ["1", "2"] {
        refused_unchanged(
            &pool.0,
            &[&["wal", "--pool", path, "--threads", threads][..], &listen].concat(),
            &format!(
                "{path} is a key-value pool (made by `packetstore serve`); `packetstore wal` needs a WAL pool: \
                 give --pool another path"
            ),
        );
    }
    refused_unchanged(
        &pool.0,
        &["demo", "--pool", path, "--records", "5"],
        "`packetstore demo` needs a log pool: give --pool another path",
    );
    // And the store is intact: every key is served.
    let server = Server::start(&pool.0, &[]);
    let value: String = server.client().get("k9").unwrap();
    assert_eq!(value, "value 9");
}

#[test]
fn serve_and_compact_refuse_a_wal_pool() {
    let pool = wal_pool("kind-wal");
    let path = pool.0.to_str().unwrap();
    let made_by = format!("{path} is a WAL pool (made by `packetstore wal`)");
    let listeners = ["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"];
    refused_unchanged(
        &pool.0,
        &[&["serve", "--pool", path][..], &listeners].concat(),
        &format!("{made_by}; `packetstore serve` needs a key-value pool: give --pool another path"),
    );
    refused_unchanged(
        &pool.0,
        &["compact", path],
        &format!("{made_by}; `packetstore compact` needs a key-value pool: give it a key-value pool's path"),
    );
    // And the WAL is intact: it restarts on it and recovers every body.
    let mut server = Wal::start(&pool.0, &["--threads", "2"]);
    stop(&mut server.child);
    assert!(server.child.wait().unwrap().success());
    let (_, json) = inspect_json(&pool.0);
    assert_eq!(json["recovery"]["last"]["records_replayed"], 6, "{json}");
}

fn inspect_text(pool: &Path) -> String {
    let output = packetstore(&["inspect", "--verify", pool.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    text
}

fn inspect_json(pool: &Path) -> (bool, serde_json::Value) {
    let output = packetstore(&["inspect", "--json", "--verify", pool.to_str().unwrap()]);
    (output.status.success(), serde_json::from_slice(&output.stdout).expect("inspect --json prints JSON"))
}

/// Whether `text` has a line starting with `word` (inspect's first column).
fn has_line(text: &str, word: &str) -> bool {
    text.lines().any(|line| line.split_whitespace().next() == Some(word))
}

#[test]
fn inspect_prints_what_applies_to_the_kind() {
    let kv = key_value_pool("kind-inspect-kv");
    let text = inspect_text(&kv.0);
    assert!(text.contains("kind        key-value (made by `packetstore serve`): recorded in the header"), "{text}");
    assert!(has_line(&text, "tree") && has_line(&text, "values"), "{text}");
    assert!(text.contains("10 keys"), "{text}");
    assert!(!text.contains("event loop"), "{text}");
    let (ok, json) = inspect_json(&kv.0);
    assert!(ok, "{json}");
    assert_eq!(json["kind"], "key-value");
    assert_eq!(json["kind_recorded"], true);
    assert_eq!(json["tree"]["keys"], 10);

    let wal = wal_pool("kind-inspect-wal");
    let text = inspect_text(&wal.0);
    assert!(text.contains("kind        WAL (made by `packetstore wal`): recorded in the header"), "{text}");
    assert!(text.contains("log 0       event loop 0: "), "{text}");
    assert!(text.contains("log 1       event loop 1: "), "{text}");
    assert!(!has_line(&text, "tree") && !has_line(&text, "values"), "{text}");
    assert!(!text.contains("keys") && !text.contains("into the tree"), "{text}");
    let (ok, json) = inspect_json(&wal.0);
    assert!(ok, "{json}");
    assert_eq!(json["kind"], "wal");
    assert!(json["tree"].is_null(), "{json}");
    assert_eq!(json["logs"].as_array().map(Vec::len), Some(2), "{json}");
    assert_eq!(json["log"]["live_records"], 6);
}

/// Rewrites the pool's header as version 2 wrote it: version 2 at offset
/// 8, the kind's bytes (84..88) zero, the CRC of bytes 0..124 at 124.
fn rewrite_as_version_2(pool: &Path) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().read(true).write(true).open(pool).unwrap();
    let mut header = [0u8; 128];
    file.read_exact_at(&mut header, 0).unwrap();
    header[8..12].copy_from_slice(&2u32.to_le_bytes());
    header[84..88].fill(0);
    let crc = crc32c::crc32c(&header[..124]);
    header[124..128].copy_from_slice(&crc.to_le_bytes());
    file.write_all_at(&header, 0).unwrap();
}

#[test]
fn an_old_key_value_pool_still_serves_and_is_still_refused_by_the_wal_server() {
    let pool = key_value_pool("kind-old-kv");
    rewrite_as_version_2(&pool.0);
    let path = pool.0.to_str().unwrap();
    let (ok, json) = inspect_json(&pool.0);
    assert!(ok, "{json}");
    assert_eq!((json["format_version"].as_u64(), json["kind"].as_str()), (Some(2), Some("key-value")), "{json}");
    assert_eq!(json["kind_recorded"], false);
    refused_unchanged(
        &pool.0,
        &["wal", "--pool", path, "--listen", "127.0.0.1:0", "--ring-entries", "256"],
        "is a key-value pool (made by `packetstore serve`; its header records no kind, but its contents do: \
         a committed B+ tree); `packetstore wal` needs a WAL pool",
    );
    let mut server = Server::start(&pool.0, &[]);
    let value: String = server.client().get("k3").unwrap();
    assert_eq!(value, "value 3");
    stop(&mut server.child);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let (ok, json) = inspect_json(&pool.0);
    assert!(ok && json["format_version"] == 2, "serving an old pool does not rewrite its header: {json}");
}
