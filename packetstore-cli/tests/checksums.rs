//! Goal: a byte of a stored value damaged on the media is never served as
//! the value (issue 35, item 8: every value checksummed). GET, HGET,
//! LRANGE, a one-sided GET and HGET (`packetstore get`), the scrubber and
//! `inspect --verify` each report the damage, naming the key, and the
//! server counts it (INFO, /metrics); an intact key beside them still
//! reads.
//!
//! Method: the real binary. A string, a hash field and a list element of
//! 400 bytes each (in pool buffers, not inline), each a pattern of its
//! own; SIGTERM (the shutdown checkpoint puts them in the tree); one byte
//! flipped in every copy of each pattern in the stopped server's pool
//! file; a restart with the scrubber fast; the reads, the counters, and,
//! after a second stop, `inspect --verify`.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, TempPool};
use redis::Commands;

/// A 400-byte value repeating `period` (10 bytes), so that any 32-byte
/// window of it is found in the pool, wherever its extents were split.
fn value(period: &[u8; 10]) -> Vec<u8> {
    period.iter().copied().cycle().take(400).collect()
}

const STRING: &[u8; 10] = b"S0s1S2s3S4";
const FIELD: &[u8; 10] = b"H5h6H7h8H9";
const ELEMENT: &[u8; 10] = b"L-l_L=l+L*";
const INTACT: &[u8; 10] = b"OK.ok,OK;o";

fn stop(mut server: Server) {
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(server.child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(server.wait_exit(Duration::from_secs(20)), "the server stops on SIGTERM");
}

/// Flips one byte in every place of the data set's pool files (every
/// shard's, when sharded) holding a window of the value `period` repeats;
/// returns how many.
fn damage(pool: &Path, period: &[u8; 10]) -> usize {
    let mut found = 0;
    for shard in 0.. {
        let path = packetstore::pool::layout::shard_path(pool, shard);
        if !path.exists() {
            break;
        }
        found += damage_file(&path, period);
    }
    found
}

fn damage_file(pool: &Path, period: &[u8; 10]) -> usize {
    let mut bytes = std::fs::read(pool).unwrap();
    let window: Vec<u8> = value(period)[..32].to_vec();
    let mut places = Vec::new();
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(window.len()).position(|w| w == window) {
        places.push(at + found);
        at += found + 400;
        if at + window.len() > bytes.len() {
            break;
        }
    }
    for &place in &places {
        bytes[place + 5] ^= 0x20;
    }
    std::fs::write(pool, &bytes).unwrap();
    places.len()
}

fn info_field(client: &mut redis::Connection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("persistence").query(client).unwrap();
    let line = info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("{name} in {info}"));
    line[name.len() + 1..].trim().parse().unwrap()
}

fn metric(server: &Server, name: &str) -> f64 {
    let mut stream = TcpStream::connect(server.http).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let line = reply.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}"));
    line[name.len() + 1..].parse().unwrap()
}

/// The error a command answered (panics if it answered a value).
fn error_of<T: redis::FromRedisValue + std::fmt::Debug>(result: redis::RedisResult<T>) -> String {
    match result {
        Ok(value) => panic!("a damaged value was served: {value:?}"),
        Err(error) => error.to_string(),
    }
}

/// `packetstore get` (one-sided, no fallback): exit status and output.
fn one_sided(pool: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args(["get", "--pool", pool.to_str().unwrap(), "--server", "none"])
        .args(args)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

fn write_and_damage(pool: &Path, shards: &str) {
    let server = Server::start(pool, &["--shards", shards]);
    let mut client = server.client();
    let _: () = client.set("s", value(STRING)).unwrap();
    let _: () = client.hset("h", "f", value(FIELD)).unwrap();
    let _: () = client.rpush("l", value(ELEMENT)).unwrap();
    let _: () = client.set("ok", value(INTACT)).unwrap();
    stop(server);
    for period in [STRING, FIELD, ELEMENT] {
        assert!(damage(pool, period) >= 1, "the value {:?} is in the pool", std::str::from_utf8(period));
    }
}

#[test]
fn a_damaged_value_is_reported_by_every_reader_never_served() {
    // With two shards the values lie in both files (the keys' shards).
    for shards in ["1", "2"] {
        a_damaged_value_is_reported_on(shards);
    }
}

fn a_damaged_value_is_reported_on(shards: &str) {
    let pool = TempPool::new("checksums");
    write_and_damage(&pool.0, shards);
    let server = Server::start(&pool.0, &["--one-sided-reads", "--scrub-rate", "64MiB"]);
    let mut client = server.client();
    let ok: Vec<u8> = client.get("ok").unwrap();
    assert_eq!(ok, value(INTACT), "an intact value beside the damaged ones reads");
    let get = error_of(client.get::<_, Vec<u8>>("s"));
    assert!(get.contains("corrupt value for key 's': checksum mismatch"), "GET: {get}");
    let hget = error_of(client.hget::<_, _, Vec<u8>>("h", "f"));
    assert!(hget.contains("corrupt value for key 'h': checksum mismatch"), "HGET: {hget}");
    let lrange = error_of(client.lrange::<_, Vec<Vec<u8>>>("l", 0, -1));
    assert!(lrange.contains("corrupt value for key 'l': checksum mismatch"), "LRANGE: {lrange}");
    assert_eq!(info_field(&mut client, "values_corrupt"), 3, "INFO counts the three reads");
    assert_eq!(metric(&server, "packetstore_values_corrupt_total"), 3.0);

    let (ok, text) = one_sided(&pool.0, &["s"]);
    assert!(!ok && text.contains("corrupt value for key 's': checksum mismatch"), "one-sided GET: {text}");
    assert!(!text.contains("S0s1S2"), "never the bytes: {text}");
    let (ok, text) = one_sided(&pool.0, &["--field", "f", "h"]);
    assert!(!ok && text.contains("corrupt value for key 'h': checksum mismatch"), "one-sided HGET: {text}");
    let (ok, text) = one_sided(&pool.0, &["ok"]);
    assert!(ok && text.contains("OK.ok,OK;o"), "one-sided GET of the intact key: {text}");

    // The scrubber (64 MiB/s: the whole tree in one 100 ms tick) finds
    // all three in its first pass.
    let deadline = Instant::now() + Duration::from_secs(20);
    while info_field(&mut client, "scrub_passes") < 1 {
        assert!(Instant::now() < deadline, "a scrub pass completes");
        std::thread::sleep(Duration::from_millis(50));
    }
    // One INFO: a pass under way may have found some of the three.
    let info: String = redis::cmd("INFO").arg("persistence").query(&mut client).unwrap();
    let field = |name: &str| -> u64 {
        let line = info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap();
        line[name.len() + 1..].trim().parse().unwrap()
    };
    let (passes, corrupt) = (field("scrub_passes"), field("scrub_corrupt"));
    if shards == "1" {
        assert!((3 * passes..3 * passes + 3).contains(&corrupt), "each pass finds the three: {info}");
    } else {
        // The shards' passes run apart: the data set's is the least.
        assert!(corrupt >= 3 * passes, "each pass finds the three: {info}");
    }
    assert!(info.contains("scrub_last_corrupt:"), "{info}");
    assert!(info_field(&mut client, "scrub_bytes") >= 4 * 400, "the values' bytes were read");
    assert!(metric(&server, "packetstore_scrub_corrupt_total") >= 3.0);
    assert!(metric(&server, "packetstore_scrub_passes_total") >= 1.0);
    stop(server);

    let output = Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["inspect", "--verify"]).arg(&pool.0).output();
    let output = output.unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "inspect --verify fails: {text}");
    for key in ["'s'", "'h'", "'l'"] {
        assert!(text.contains(&format!("corrupt value for key {key}")), "inspect names {key}: {text}");
    }
    assert!(!text.contains("key 'ok'"), "the intact key is not named: {text}");
}

/// One shard and two: INFO's scrub figures are the data set's (with two
/// shards the values are on both; the passes count whole passes of all).
#[test]
fn an_undamaged_pool_verifies_and_scrubs_clean() {
    for shards in ["1", "2"] {
        let pool = TempPool::new("checksums-clean");
        let server = Server::start(&pool.0, &["--scrub-rate", "64MiB", "--shards", shards]);
        let mut client = server.client();
        for i in 0..50 {
            let _: () = client.set(format!("s{i}"), value(STRING)).unwrap();
            let _: () = client.hset("h", format!("f{i}"), value(FIELD)).unwrap();
            let _: () = client.rpush("l", format!("small {i}")).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while info_field(&mut client, "scrub_passes") < 2 {
            assert!(Instant::now() < deadline, "scrub passes complete");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(info_field(&mut client, "scrub_corrupt"), 0);
        assert_eq!(info_field(&mut client, "scrub_unchecked_values"), 0, "every value was written with a CRC");
        assert!(info_field(&mut client, "scrub_values") >= 150, "{shards} shard(s)");
        stop(server);
        let output =
            Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["inspect", "--verify"]).arg(&pool.0).output();
        let output = output.unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "inspect --verify: {text}");
        assert!(text.contains("values ("), "inspect says how many values it checked: {text}");
    }
}

/// The scrubber keeps to `--scrub-rate` however busy the event loop is
/// (it runs between turns, and a busy server turns thousands of times a
/// second): the bytes it checked over a stretch of traffic stay within
/// the rate, with a tenth of a second's credit of slack.
#[test]
fn the_scrubber_keeps_to_its_rate_under_load() {
    // With two shards the rate is the process's, shared by the shards.
    for shards in ["1", "2"] {
        the_scrubber_keeps_to_its_rate_on(shards);
    }
}

fn the_scrubber_keeps_to_its_rate_on(shards: &str) {
    let pool = TempPool::new("checksums-rate");
    let server = Server::start(&pool.0, &["--scrub-rate", "100KiB", "--shards", shards]);
    let mut client = server.client();
    for i in 0..300 {
        let _: () = client.set(format!("s{i}"), value(STRING)).unwrap();
    }
    let before = info_field(&mut client, "scrub_bytes");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        let _: String = redis::cmd("PING").query(&mut client).unwrap();
    }
    let scrubbed = info_field(&mut client, "scrub_bytes") - before;
    let allowed = 100.0 * 1024.0 * (started.elapsed().as_secs_f64() + 0.2);
    assert!(scrubbed > 0, "the scrubber ran");
    assert!((scrubbed as f64) <= allowed, "{scrubbed} bytes checked, at most {allowed:.0} at 100 KiB/s");
}
