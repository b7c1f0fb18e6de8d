//! Goal: `packetstore inspect` reports what a key-value pool holds (log,
//! tree, live and dead bytes, buffers) without changing it, and `--verify`
//! catches damage: a live record's data that no longer matches its CRC, a
//! tree node that no longer matches its CRC.
//!
//! Method: the real binary fills a pool and stops two ways (kill -9: the
//! data is in live log records; SIGTERM: checkpointed into the tree); then
//! inspect, a byte flipped where inspect's own JSON says the data or the
//! root node is, and inspect again.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use redis::Commands;

mod common;
use common::{Server, TempPool, Wal};

/// These tests read one pool file's records and tree by their offsets (a
/// sharded data set's inspection has its own test, below): one shard,
/// whatever the default.
const ONE_POOL: &[&str] = &["--shards", "1"];

fn inspect(pool: &Path, verify: bool) -> (bool, serde_json::Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    command.args(["inspect", "--json", "--records", pool.to_str().unwrap()]);
    if verify {
        command.arg("--verify");
    }
    let output = command.output().unwrap();
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("inspect printed JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.success(), json)
}

fn fill(server: &Server) {
    let mut c = server.client();
    for i in 0..200u32 {
        let value: Vec<u8> = (0..3000u32).map(|j| (i + j) as u8).collect();
        let _: () = c.set(format!("k{i}"), value).unwrap();
    }
}

fn flip_byte(pool: &Path, offset: u64) {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(pool).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    file.write_all_at(&[byte[0] ^ 0x40], offset).unwrap();
}

#[test]
fn verify_catches_damaged_record_data() {
    let pool = TempPool::new("inspect-log");
    let server = Server::start(&pool.0, ONE_POOL);
    fill(&server);
    server.kill();
    let before = std::fs::read(&pool.0).unwrap();
    let (ok, json) = inspect(&pool.0, true);
    assert!(ok, "{json}");
    // Past the header page (where an opener records its pid, as the lock's
    // advisory holder), not a byte changed.
    let after = std::fs::read(&pool.0).unwrap();
    assert!(after[4096..] == before[4096..], "inspect changed the pool");
    assert_eq!(json["verify"]["ok"], true);
    assert_eq!(json["log"]["live_records"], 200);
    assert_eq!(json["verify"]["records_checked"], 200);
    assert_eq!(json["verify"]["data_bytes_checked"], 600_000);
    // Flip a byte of the last record's data.
    let record = json["records"].as_array().unwrap().last().unwrap();
    let extent = &record["extents"][0];
    let buffer_size = json["geometry"]["buffer_size"].as_u64().unwrap();
    let offset = json["geometry"]["buffers_offset"].as_u64().unwrap()
        + extent[0].as_u64().unwrap() * buffer_size
        + extent[1].as_u64().unwrap();
    flip_byte(&pool.0, offset);
    let (ok, json) = inspect(&pool.0, true);
    assert!(!ok, "inspect --verify exits 1 on damage");
    let problems = json["verify"]["problems"].to_string();
    assert!(problems.contains("data checksum mismatch"), "{problems}");
    // Without --verify, the same pool inspects fine (the scan checks headers).
    assert!(inspect(&pool.0, false).0);
}

#[test]
fn verify_catches_a_damaged_tree_node_and_reports_the_tree() {
    let pool = TempPool::new("inspect-tree");
    let mut server = Server::start(&pool.0, ONE_POOL);
    fill(&server);
    let _: () = server.client().del("k0").unwrap();
    // SIGTERM: the shutdown checkpoint moves everything into the tree.
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let (ok, json) = inspect(&pool.0, true);
    assert!(ok, "{json}");
    let tree = &json["tree"];
    assert_eq!(tree["keys"], 199);
    assert_eq!(tree["entries"], 201, "and the store's #schema and #lsn");
    let inline = tree["inline_value_bytes"].as_u64().unwrap();
    assert_eq!(tree["live_value_bytes"].as_u64().unwrap() - inline, 199 * 3000);
    assert_eq!(inline, 12, "the store's #schema (4 bytes) and #lsn (8)");
    assert!(tree["height"].as_u64().unwrap() >= 1);
    assert_eq!(json["log"]["live_records"], 0, "checkpointed");
    assert!(json["verify"]["nodes_checked"].as_u64().unwrap() >= 1);
    let root = tree["root"].as_u64().expect("a root");
    let buffer_size = json["geometry"]["buffer_size"].as_u64().unwrap();
    let offset = json["geometry"]["buffers_offset"].as_u64().unwrap() + root * buffer_size + 100;
    flip_byte(&pool.0, offset);
    let (ok, json) = inspect(&pool.0, true);
    assert!(!ok);
    let problems = json["verify"]["problems"].to_string();
    assert!(problems.contains(&format!("node {root}")), "{problems}");
}

/// The last recovery, as the server that ran it recorded it in the pool:
/// after a kill -9, the next start replays the 200 records, and inspect
/// says so after that server has stopped too.
#[test]
fn inspect_reports_the_last_recovery() {
    let pool = TempPool::new("inspect-last");
    let server = Server::start(&pool.0, ONE_POOL);
    let first_pid = server.child.id();
    fill(&server);
    server.kill();
    let (ok, json) = inspect(&pool.0, false);
    assert!(ok, "{json}");
    let last = &json["recovery"]["last"];
    assert_eq!(last["pid"], first_pid, "{json}");
    assert_eq!(last["records_replayed"], 0, "a new pool: nothing to replay");
    assert_eq!(json["recovery"]["records_to_replay"], 200);

    let mut server = Server::start(&pool.0, ONE_POOL);
    let second_pid = server.child.id();
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(second_pid as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let (ok, json) = inspect(&pool.0, false);
    assert!(ok, "{json}");
    let last = &json["recovery"]["last"];
    assert_eq!(last["pid"], second_pid, "{json}");
    assert_eq!(last["records_replayed"], 200, "{json}");
    assert_eq!(last["records_dropped"], 0);
    assert_eq!(last["keys"], 200);
    assert!(last["duration_us"].as_u64().unwrap() > 0);
    assert_eq!(json["recovery"]["records_to_replay"], 0, "checkpointed at the stop");
}

/// The WAL server records its loops' recoveries too, summed: two loops,
/// 100 bodies, a restart, and inspect counts the 100 records it recovered.
#[test]
fn inspect_reports_the_wal_servers_last_recovery() {
    use std::io::{BufRead, BufReader, Read, Write};
    let pool = TempPool::new("inspect-wal");
    let threads = ["--threads", "2"];
    let server = Wal::start(&pool.0, &threads);
    for i in 0..100u32 {
        // A connection each, so that both loops take some.
        let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
        let body = format!("body {i}");
        write!(stream, "POST /wal HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 20"), "{status}");
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
    }
    drop(server); // kill -9
    let mut server = Wal::start(&pool.0, &threads);
    let second_pid = server.child.id();
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(second_pid as libc::pid_t, libc::SIGTERM) }, 0);
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status}");
    let (ok, json) = inspect(&pool.0, false);
    assert!(ok, "{json}");
    let last = &json["recovery"]["last"];
    assert_eq!(last["pid"], second_pid, "{json}");
    assert_eq!(last["records_replayed"], 100, "{json}");
    assert_eq!(last["keys"], 0);
}

/// `packetstore compact`: a pool left wasteful (its server never compacted)
/// is compacted by hand: values moved, buffers freed, every value intact.
#[test]
fn compact_by_hand_frees_buffers_and_keeps_every_value() {
    let pool = TempPool::new("compact");
    let mut server = Server::start(&pool.0, &["--compact-waste", "2", "--shards", "1"]);
    let mut c = server.client();
    let mut want = std::collections::BTreeMap::new();
    // Each round after the first overwrites a scattered half of the keys,
    // so most buffers end up holding live and dead values side by side.
    for round in 0..5u32 {
        let mut pipe = redis::pipe();
        for key in (0..3000u32).filter(|k| round == 0 || (k.wrapping_mul(2_654_435_761) >> (round + 3)) & 1 == 0) {
            let value = format!("{round}:{key}:").repeat(30);
            pipe.set(format!("k{key}"), &value).ignore();
            want.insert(format!("k{key}"), value);
        }
        let () = pipe.query(&mut c).unwrap();
    }
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let output =
        Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["compact", pool.0.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    let line = text.lines().find(|l| l.starts_with("compaction:")).expect("a summary line");
    eprintln!("{line}");
    let number_before = |word: &str| -> u64 {
        let words: Vec<&str> = line.split([' ', ',', ';']).filter(|w| !w.is_empty()).collect();
        let at = words.iter().position(|w| *w == word).unwrap_or_else(|| panic!("{word} in {line}"));
        words[at - 1].parse().unwrap()
    };
    assert!(number_before("values") > 1000, "values moved: {line}");
    let free: Vec<u64> =
        line.rsplit("free buffers ").next().unwrap().split(" -> ").map(|n| n.trim().parse().unwrap()).collect();
    assert!(free[1] > free[0] + 100, "buffers freed: {line}");
    assert!(inspect(&pool.0, true).0, "the compacted pool verifies");
    let server = Server::start(&pool.0, ONE_POOL);
    let mut c = server.client();
    for (key, value) in &want {
        let got: String = c.get(key).unwrap();
        assert!(got == *value, "{key}");
    }
}

/// The replay budget bounds recovery: far more writes than the budget,
/// pipelined from four clients with checkpoints left to the budget alone,
/// a kill -9 under load, and the restart replays at most the budget (from
/// the recovery record the restarted server wrote, not from wall time),
/// with every acknowledged write present.
#[test]
fn recovery_replays_at_most_the_replay_budget() {
    const BUDGET: u64 = 1_000;
    let pool = TempPool::new("inspect-budget");
    let budget = BUDGET.to_string();
    let extra = ["--replay-budget", budget.as_str(), "--checkpoint-interval", "60m", "--shards", "1"];
    let server = Server::start(&pool.0, &extra);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|client| {
            let mut connection = server.client();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut acknowledged = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut pipe = redis::pipe();
                    for i in acknowledged..acknowledged + 100 {
                        pipe.set(format!("c{client}-{i}"), i).ignore();
                    }
                    if pipe.query::<()>(&mut connection).is_err() {
                        break;
                    }
                    acknowledged += 100;
                }
                acknowledged
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut server = server;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acknowledged: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(acknowledged.iter().sum::<u64>() > 10 * BUDGET, "far more writes than the budget: {acknowledged:?}");
    let (ok, json) = inspect(&pool.0, false);
    assert!(ok, "{json}");
    let to_replay = json["recovery"]["records_to_replay"].as_u64().unwrap();
    assert!(to_replay <= BUDGET, "the log holds {to_replay} records to replay, over the budget of {BUDGET}");

    let mut server = Server::start(&pool.0, &extra);
    let mut c = server.client();
    for (client, &count) in acknowledged.iter().enumerate() {
        for i in (0..count).step_by(97).chain(count.checked_sub(1)) {
            let value: Option<u64> = c.get(format!("c{client}-{i}")).unwrap();
            assert_eq!(value, Some(i), "client {client}'s acknowledged write {i}");
        }
    }
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let (_, json) = inspect(&pool.0, false);
    let replayed = json["recovery"]["last"]["records_replayed"].as_u64().unwrap();
    assert_eq!(replayed, to_replay, "the restart replayed what inspect said it would");
    assert!(replayed <= BUDGET);
}

/// A sharded data set is inspected and compacted whole from shard 0's
/// file: every shard's keys counted, damage in another shard's file found,
/// and `compact` opens the shards together (an MSET across them, left in
/// their logs by a kill -9, is decided from every shard's horizon).
#[test]
fn a_sharded_data_set_is_inspected_and_compacted_whole() {
    let pool = TempPool::new("inspect-shards");
    let server = Server::start(&pool.0, &["--shards", "2"]);
    let mut c = server.client();
    for round in 0..3u32 {
        let mut pipe = redis::pipe();
        for i in 0..300u32 {
            pipe.set(format!("k{i}"), format!("{round}:{i}:").repeat(40)).ignore();
        }
        let () = pipe.query(&mut c).unwrap();
    }
    // One command over both shards' keys: a transaction across shards.
    let pairs: Vec<(String, String)> = (0..20u32).map(|i| (format!("m{i}"), format!("m-{i}"))).collect();
    let () = c.mset(&pairs).unwrap();
    server.kill();
    let second = packetstore::pool::layout::shard_path(&pool.0, 1);
    let (ok, json) = inspect(&pool.0, true);
    assert!(ok, "{json}");
    assert_eq!(json["data_set"]["shards"], 2, "{json}");
    assert_eq!(json["data_set"]["problems"], 0);
    let shards = json["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2);
    assert_eq!(shards[1]["path"], second.to_str().unwrap());
    let live: Vec<u64> = shards.iter().map(|s| s["log"]["live_records"].as_u64().unwrap()).collect();
    assert!(live.iter().all(|&n| n > 100), "both shards hold records: {live:?}");
    // Damage in a committed record of shard 1's file: the data set does
    // not inspect, and the error names the shard.
    let record = shards[1]["records"].as_array().unwrap().iter().find(|r| r["data_len"].as_u64() > Some(100)).unwrap();
    let extent = &record["extents"][0];
    let geometry = &shards[1]["geometry"];
    let offset = geometry["buffers_offset"].as_u64().unwrap()
        + extent[0].as_u64().unwrap() * geometry["buffer_size"].as_u64().unwrap()
        + extent[1].as_u64().unwrap();
    flip_byte(&second, offset);
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args(["inspect", "--verify", pool.0.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("shard 1 of 2") && stderr.contains("checksum"), "{stderr}");
    flip_byte(&second, offset);
    // Compaction of the whole set: each shard recovers (the MSET decided
    // committed on both), compacts and checkpoints.
    let output =
        Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["compact", pool.0.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}{}", String::from_utf8_lossy(&output.stderr));
    for shard in 0..2 {
        assert!(text.lines().any(|l| l.starts_with(&format!("shard {shard}: compaction:"))), "{text}");
    }
    let (ok, json) = inspect(&pool.0, true);
    assert!(ok, "{json}");
    let keys: u64 = json["shards"].as_array().unwrap().iter().map(|s| s["tree"]["keys"].as_u64().unwrap()).sum();
    assert_eq!(json["data_set"]["keys"], keys);
    assert_eq!(keys, 320, "{json}");
    let server = Server::start(&pool.0, &["--shards", "2"]);
    let mut c = server.client();
    for i in 0..300u32 {
        let got: String = c.get(format!("k{i}")).unwrap();
        assert_eq!(got, format!("2:{i}:").repeat(40));
    }
    for (key, value) in &pairs {
        let got: String = c.get(key).unwrap();
        assert_eq!(&got, value);
    }
}
