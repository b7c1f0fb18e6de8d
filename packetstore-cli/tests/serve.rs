//! Goal: `packetstore serve` works with real, unmodified clients: the
//! `redis` crate and `redis-cli` on the Redis protocol, a Rust HTTP client
//! and curl on HTTP; acknowledged writes survive a restart and kill -9.
//!
//! Method: the real binary on ephemeral ports, pools on /dev/shm (and one
//! on the disk, page domain); every command of the issue is exercised with
//! its Redis reply shapes, including errors, pipelining, binary values,
//! values over the limit, AUTH and RESP3.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use redis::Commands;

mod common;
use common::{Server, TempPool};

fn error_of<T: std::fmt::Debug>(result: redis::RedisResult<T>) -> String {
    match result {
        Err(error) => error.to_string(),
        Ok(value) => panic!("expected an error, got {value:?}"),
    }
}

// Allowed: one scripted session against the server, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn redis_crate_strings_and_keys() {
    let pool = TempPool::new("strings");
    let server = Server::start(&pool.0, &[]);
    let banner = server.banner().join("\n");
    // The pool's path (one shard: "pool: ..."; shards: "shard 0: pool ...").
    let path = pool.0.to_str().unwrap();
    assert!(banner.contains(path) && banner.contains("persistence domain: cache-line"), "{banner}");
    assert!(banner.contains("not durable across power loss"), "tmpfs is emulated, and says so: {banner}");
    let mut c = server.client();
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let echo: Vec<u8> = redis::cmd("ECHO").arg(b"a\r\nb\0c").query(&mut c).unwrap();
    assert_eq!(echo, b"a\r\nb\0c");
    // SET and GET, binary-safe, small (inline) and large (zero copy).
    for len in [0usize, 1, 64, 65, 1000, 2047, 2048, 2049, 5000, 30_000, 100_000, 3 << 20] {
        let value: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        let key = format!("bin:{len}\r\n\0");
        let _: () = c.set(&key, &value).unwrap();
        let back: Vec<u8> = c.get(&key).unwrap();
        assert_eq!(back.len(), len);
        assert!(back == value, "value of {len} bytes");
        let strlen: usize = redis::cmd("STRLEN").arg(&key).query(&mut c).unwrap();
        assert_eq!(strlen, len);
    }
    // NX, XX, GET.
    let set: Option<String> = redis::cmd("SET").arg("k").arg("1").arg("NX").query(&mut c).unwrap();
    assert_eq!(set.as_deref(), Some("OK"));
    let set: Option<String> = redis::cmd("SET").arg("k").arg("2").arg("NX").query(&mut c).unwrap();
    assert_eq!(set, None);
    let set: Option<String> = redis::cmd("SET").arg("nothere").arg("2").arg("XX").query(&mut c).unwrap();
    assert_eq!(set, None);
    let old: Option<String> = redis::cmd("SET").arg("k").arg("3").arg("GET").query(&mut c).unwrap();
    assert_eq!(old.as_deref(), Some("1"));
    assert!(
        error_of(redis::cmd("SET").arg("k").arg("v").arg("NX").arg("XX").query::<()>(&mut c)).contains("syntax error")
    );
    // GETDEL, DEL/UNLINK, EXISTS.
    let value: Option<String> = redis::cmd("GETDEL").arg("k").query(&mut c).unwrap();
    assert_eq!(value.as_deref(), Some("3"));
    let gone: Option<String> = c.get("k").unwrap();
    assert_eq!(gone, None);
    let _: () = c.set("a", "1").unwrap();
    let _: () = c.set("b", "2").unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg("a").arg("b").arg("a").arg("zz").query(&mut c).unwrap();
    assert_eq!(exists, 3);
    let deleted: i64 = c.del(&["a", "zz"]).unwrap();
    assert_eq!(deleted, 1);
    let deleted: i64 = redis::cmd("UNLINK").arg("b").query(&mut c).unwrap();
    assert_eq!(deleted, 1);
    // MSET, MGET.
    let _: () = redis::cmd("MSET").arg("m1").arg("x").arg("m2").arg("y").query(&mut c).unwrap();
    let values: Vec<Option<String>> = redis::cmd("MGET").arg("m1").arg("nope").arg("m2").query(&mut c).unwrap();
    assert_eq!(values, vec![Some("x".into()), None, Some("y".into())]);
    assert!(error_of(redis::cmd("MSET").arg("a").query::<()>(&mut c)).contains("wrong number of arguments"));
    // Counters.
    let n: i64 = c.incr("n", 1).unwrap();
    assert_eq!(n, 1);
    let n: i64 = redis::cmd("INCRBY").arg("n").arg(41).query(&mut c).unwrap();
    assert_eq!(n, 42);
    let n: i64 = redis::cmd("DECR").arg("n").query(&mut c).unwrap();
    assert_eq!(n, 41);
    let n: i64 = redis::cmd("DECRBY").arg("n").arg(50).query(&mut c).unwrap();
    assert_eq!(n, -9);
    let _: () = c.set("big", i64::MAX.to_string()).unwrap();
    assert!(error_of(redis::cmd("INCR").arg("big").query::<i64>(&mut c)).contains("overflow"));
    let _: () = c.set("text", "abc").unwrap();
    assert!(error_of(redis::cmd("INCR").arg("text").query::<i64>(&mut c)).contains("not an integer"));
    // APPEND: zero copy of both parts, then a read of the whole.
    let part = vec![b'p'; 3000];
    let len: usize = c.append("ap", &part).unwrap();
    assert_eq!(len, 3000);
    let len: usize = c.append("ap", "tail").unwrap();
    assert_eq!(len, 3004);
    let whole: Vec<u8> = c.get("ap").unwrap();
    assert_eq!(&whole[..3000], &part[..]);
    assert_eq!(&whole[3000..], b"tail");
    // KEYS, SCAN with MATCH and COUNT, DBSIZE.
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    for i in 0..300 {
        let _: () = c.set(format!("user:{i:03}"), i).unwrap();
    }
    let _: () = c.set("other", 1).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 301);
    let mut keys: Vec<String> = c.keys("user:1?9").unwrap();
    keys.sort();
    assert_eq!(keys, (0..10).map(|i| format!("user:1{i}9")).collect::<Vec<_>>());
    let mut scanned: Vec<String> = c.scan_match("user:*").unwrap().collect();
    scanned.sort();
    scanned.dedup();
    assert_eq!(scanned.len(), 300);
    let (cursor, page): (u64, Vec<String>) = redis::cmd("SCAN").arg(0).arg("COUNT").arg(7).query(&mut c).unwrap();
    assert!(cursor != 0 && page.len() == 7);
    // Errors in Redis's own shapes; the connection stays usable.
    assert!(error_of(redis::cmd("NOSUCH").arg("x").query::<()>(&mut c)).contains("unknown command 'NOSUCH'"));
    assert!(error_of(redis::cmd("GET").query::<()>(&mut c)).contains("wrong number of arguments for 'get' command"));
    let _: () = c.hset("hash", "f", "v").unwrap();
    assert!(error_of(c.get::<_, String>("hash")).contains("WRONGTYPE"));
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    // SELECT, CLIENT, CONFIG GET, COMMAND, INFO.
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    assert!(error_of(redis::cmd("SELECT").arg(16).query::<()>(&mut c)).contains("out of range"));
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg("tester").query(&mut c).unwrap();
    let name: String = redis::cmd("CLIENT").arg("GETNAME").query(&mut c).unwrap();
    assert_eq!(name, "tester");
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut c).unwrap();
    assert!(id > 0);
    let config: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("appendonly").query(&mut c).unwrap();
    assert_eq!(config, vec!["appendonly", "yes"]);
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut c).unwrap();
    assert!(count >= 40);
    let info: String = redis::cmd("INFO").query(&mut c).unwrap();
    for section in ["# Server", "# Clients", "# Persistence", "# Stats", "# Memory", "# Keyspace", "db0:keys=302"] {
        assert!(info.contains(section), "INFO lacks {section}: {info}");
    }
    // What monitoring reads: the sizes, and their human forms as Redis
    // writes them (`bytesToHuman`).
    let field = |name: &str| {
        let line = info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("no {name}"));
        line.split_once(':').unwrap().1.to_string()
    };
    let used: u64 = field("used_memory").parse().unwrap();
    let human = field("used_memory_human");
    let mib = used as f64 / 1048576.0;
    assert!(human == format!("{mib:.2}M") || human.ends_with('K') || human.ends_with('B'), "{used} as {human}");
    assert!(field("used_memory_rss").parse::<u64>().unwrap() > 0);
    assert!(field("used_memory_rss_human").ends_with('M') || field("used_memory_rss_human").ends_with('G'));
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 0);
}

#[test]
fn redis_crate_hashes_and_expiry() {
    let pool = TempPool::new("hashes");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let added: i64 =
        redis::cmd("HSET").arg("h").arg("a").arg("1").arg("b").arg(vec![b'z'; 5000]).query(&mut c).unwrap();
    assert_eq!(added, 2);
    let added: i64 = redis::cmd("HSET").arg("h").arg("a").arg("2").arg("c").arg("3").query(&mut c).unwrap();
    assert_eq!(added, 1);
    let a: String = c.hget("h", "a").unwrap();
    assert_eq!(a, "2");
    let b: Vec<u8> = c.hget("h", "b").unwrap();
    assert_eq!(b, vec![b'z'; 5000]);
    let len: i64 = c.hlen("h").unwrap();
    assert_eq!(len, 3);
    let exists: bool = c.hexists("h", "c").unwrap();
    assert!(exists);
    let all: std::collections::BTreeMap<String, Vec<u8>> = c.hgetall("h").unwrap();
    assert_eq!(all.keys().collect::<Vec<_>>(), vec!["a", "b", "c"]);
    let removed: i64 = redis::cmd("HDEL").arg("h").arg("a").arg("nope").query(&mut c).unwrap();
    assert_eq!(removed, 1);
    let kind: String = redis::cmd("TYPE").arg("h").query(&mut c).unwrap();
    assert_eq!(kind, "hash");
    let _: () = c.set("s", "v").unwrap();
    assert!(error_of(c.hset::<_, _, _, i64>("s", "f", "v")).contains("WRONGTYPE"));
    // Deleting the last field deletes the hash.
    let _: i64 = redis::cmd("HDEL").arg("h").arg("b").arg("c").query(&mut c).unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg("h").query(&mut c).unwrap();
    assert_eq!(exists, 0);
    // SET over a hash replaces it.
    let _: i64 = c.hset("h2", "f", "v").unwrap();
    let _: () = c.set("h2", "now a string").unwrap();
    let value: String = c.get("h2").unwrap();
    assert_eq!(value, "now a string");
    // Expiry: EX/PX/EXAT/PXAT/KEEPTTL, TTL, EXPIRE, PERSIST; real expiry.
    let _: () = redis::cmd("SET").arg("t1").arg("v").arg("PX").arg(300).query(&mut c).unwrap();
    let pttl: i64 = redis::cmd("PTTL").arg("t1").query(&mut c).unwrap();
    assert!((1..=300).contains(&pttl), "{pttl}");
    let _: () = redis::cmd("SET").arg("t2").arg("v").arg("EX").arg(100).query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("t2").arg("w").arg("KEEPTTL").query(&mut c).unwrap();
    let ttl: i64 = c.ttl("t2").unwrap();
    assert!((99..=100).contains(&ttl), "KEEPTTL kept it: {ttl}");
    let _: () = c.set("t2", "x").unwrap();
    let ttl: i64 = c.ttl("t2").unwrap();
    assert_eq!(ttl, -1, "a plain SET clears the TTL");
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let _: () = redis::cmd("SET").arg("t3").arg("v").arg("EXAT").arg(now_s + 1000).query(&mut c).unwrap();
    let ttl: i64 = c.ttl("t3").unwrap();
    assert!((990..=1000).contains(&ttl), "{ttl}");
    let persisted: i64 = redis::cmd("PERSIST").arg("t3").query(&mut c).unwrap();
    assert_eq!(persisted, 1);
    let _: i64 = c.hset("th", "f", "v").unwrap();
    let set: i64 = redis::cmd("PEXPIRE").arg("th").arg(200).query(&mut c).unwrap();
    assert_eq!(set, 1);
    assert!(
        error_of(redis::cmd("SET").arg("k").arg("v").arg("EX").arg(0).query::<()>(&mut c)).contains("invalid expire")
    );
    std::thread::sleep(Duration::from_millis(450));
    let gone: Option<String> = c.get("t1").unwrap();
    assert_eq!(gone, None, "expired");
    let fields: i64 = c.hlen("th").unwrap();
    assert_eq!(fields, 0, "the hash expired too");
    let ttl: i64 = c.ttl("t1").unwrap();
    assert_eq!(ttl, -2);
    // Active expiry removes them from the key count.
    std::thread::sleep(Duration::from_millis(300));
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 4, "s, h2, t2, t3 remain");
}

#[test]
fn pipelining_resp3_auth_and_limits() {
    let pool = TempPool::new("pipeline");
    let server = Server::start(&pool.0, &["--requirepass", "s3cret", "--value-size-max", "100KiB"]);
    let client = redis::Client::open(format!("redis://{}/", server.resp)).unwrap();
    // Without AUTH everything but AUTH/HELLO/QUIT answers NOAUTH.
    let mut raw = TcpStream::connect(server.resp).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"GET x\r\nAUTH wrong\r\nAUTH s3cret\r\nGET x\r\n").unwrap();
    let mut reader = BufReader::new(raw.try_clone().unwrap());
    let mut line = String::new();
    for expected in ["-NOAUTH", "-WRONGPASS", "+OK", "$-1"] {
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with(expected), "{expected} vs {line:?}");
    }
    // RESP3 after HELLO 3: maps and nulls in their own types.
    raw.write_all(b"HELLO 3\r\n").unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "%7\r\n");
    for _ in 0..14 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.starts_with('$') {
            line.clear();
            reader.read_line(&mut line).unwrap();
        }
    }
    raw.write_all(b"*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n").unwrap();
    line.clear();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "_\r\n", "RESP3 null");
    raw.write_all(b"HSET h f v\r\nHGETALL h\r\n").unwrap();
    let mut replies = String::new();
    for _ in 0..6 {
        line.clear();
        reader.read_line(&mut line).unwrap();
        replies.push_str(&line);
    }
    assert_eq!(replies, ":1\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    // A value over the limit: an error, and the connection goes on.
    let mut c = client.get_connection().unwrap();
    let _: () = redis::cmd("AUTH").arg("s3cret").query(&mut c).unwrap();
    let huge = vec![b'x'; 200 * 1024];
    let error = error_of(c.set::<_, _, ()>("huge", &huge));
    assert!(error.contains("over the limit"), "{error}");
    let pong: String = redis::cmd("PING").query(&mut c).unwrap();
    assert_eq!(pong, "PONG");
    let missing: Option<Vec<u8>> = c.get("huge").unwrap();
    assert_eq!(missing, None);
    // A length no client sends by mistake (over Redis's 512 MiB
    // proto-max-bulk-len): answered at once, not drained, then closed.
    let mut raw = TcpStream::connect(server.resp).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.write_all(b"AUTH s3cret\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$999999999999\r\n").unwrap();
    let mut reply = String::new();
    raw.read_to_string(&mut reply).expect("the reply, then the close, without waiting for the value");
    assert_eq!(reply, "+OK\r\n-ERR Protocol error: invalid bulk length\r\n");
    // Pipelining: 2,000 commands in one write, replies in order.
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.set(format!("p{i}"), format!("v{i}")).ignore();
        pipe.get(format!("p{i}"));
    }
    let values: Vec<String> = pipe.query(&mut c).unwrap();
    assert_eq!(values.len(), 1000);
    assert!(values.iter().enumerate().all(|(i, v)| *v == format!("v{i}")));
    // HELLO with AUTH on a fresh connection.
    let mut fresh = TcpStream::connect(server.resp).unwrap();
    fresh.write_all(b"HELLO 2 AUTH default s3cret\r\nDBSIZE\r\n").unwrap();
    let mut text = vec![0u8; 4096];
    std::thread::sleep(Duration::from_millis(200));
    let n = fresh.read(&mut text).unwrap();
    let text = String::from_utf8_lossy(&text[..n]);
    assert!(text.starts_with("*14\r\n") && text.ends_with(":1001\r\n"), "{text}");
    // A malformed frame: an error, then the connection closes.
    let mut bad = TcpStream::connect(server.resp).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    bad.write_all(b"*2\r\n+GET\r\n").unwrap();
    let mut text = String::new();
    let _ = bad.read_to_string(&mut text);
    assert!(text.starts_with("-ERR Protocol error"), "{text}");
}

/// The default limit: values up to 64 MiB, stored where they were
/// received (an index chain names their 32,768 extents), read back whole,
/// over both protocols, and across a restart.
#[test]
fn sixty_four_mib_values() {
    let pool = TempPool::new("64mib");
    let value: Vec<u8> = (0..64u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        let _: () = c.set("big", &value).unwrap();
        let back: Vec<u8> = c.get("big").unwrap();
        assert!(back == value, "64 MiB read back");
        let over = vec![0u8; (64 << 20) + 1];
        assert!(error_of(c.set::<_, _, ()>("over", &over)).contains("over the limit"));
        let (status, body) = http(&server, b"GET /kv/big HTTP/1.1\r\n\r\n");
        assert_eq!(status, 200);
        assert!(body == value, "64 MiB over HTTP");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let back: Vec<u8> = c.get("big").unwrap();
    assert!(back == value, "64 MiB after kill -9 and restart");
    let _: i64 = c.del("big").unwrap();
}

/// A pool too small for the data: writes get -OOM (HTTP 507) and change
/// nothing, reads and deletes keep working, deleting makes room again, and
/// nothing acknowledged is lost across a restart.
#[test]
fn a_full_pool_refuses_writes_and_keeps_reads_and_deletes() {
    let pool = TempPool::new("full");
    let small = ["--pool-size", "8MiB", "--log-size", "1MiB", "--ring-entries", "64"];
    let mut acknowledged = std::collections::BTreeMap::new();
    {
        let server = Server::start(&pool.0, &small);
        let mut c = server.client();
        let mut refused = None;
        for i in 0..20_000u32 {
            let value = vec![(i % 251) as u8; 1000];
            match c.set::<_, _, ()>(format!("k{i:05}"), &value) {
                Ok(()) => {
                    acknowledged.insert(format!("k{i:05}"), value);
                }
                Err(error) => {
                    refused = Some(error.to_string());
                    break;
                }
            }
        }
        let refused = refused.expect("an 8 MiB pool fills up");
        assert!(refused.starts_with("OOM"), "{refused}");
        assert!(acknowledged.len() > 1000, "{} values fit", acknowledged.len());
        // HTTP says 507. A checkpoint since the refusal may have freed a
        // few buffers (tree nodes replaced): fill those first, each PUT a
        // new key (one key overwritten would free its old value each time).
        let mut stored = 0;
        loop {
            let key = format!("over{stored:04}");
            let mut put = format!("PUT /kv/{key} HTTP/1.1\r\nContent-Length: 1000\r\n\r\n").into_bytes();
            put.extend_from_slice(&[7u8; 1000]);
            let status = http(&server, &put).0;
            assert!(status == 204 || status == 507, "a PUT to a full pool: {status}");
            if status == 507 {
                break;
            }
            acknowledged.insert(key, vec![7u8; 1000]);
            stored += 1;
            assert!(stored < 2000, "the pool never filled again: {stored} PUTs stored");
        }
        // Reads work, and deletes (which need no new buffers).
        for (key, value) in acknowledged.iter().step_by(97) {
            let found: Vec<u8> = c.get(key).unwrap();
            assert!(found == *value, "{key}");
        }
        let keys: Vec<String> = acknowledged.keys().take(acknowledged.len() / 2).cloned().collect();
        for chunk in keys.chunks(100) {
            let deleted: usize = c.del(chunk).unwrap();
            assert_eq!(deleted, chunk.len());
        }
        for key in &keys {
            acknowledged.remove(key);
        }
        // The next checkpoint (within a second) returns their buffers.
        let mut stored = false;
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            if c.set::<_, _, ()>("after", vec![1u8; 1000]).is_ok() {
                stored = true;
                break;
            }
        }
        assert!(stored, "deleting made room again");
        acknowledged.insert("after".into(), vec![1u8; 1000]);
        server.kill();
    }
    let server = Server::start(&pool.0, &small);
    let mut c = server.client();
    for (key, value) in &acknowledged {
        let found: Option<Vec<u8>> = c.get(key).unwrap();
        assert!(found.as_ref() == Some(value), "{key} after restart");
    }
    let size: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, acknowledged.len(), "deleted keys stay deleted");
}

/// A log far smaller than a burst of writes: the burst waits for the
/// checkpoints that release the log instead of being refused; a command
/// that could never fit is refused whole, and the server goes on.
#[test]
fn a_small_log_makes_bursts_wait_and_refuses_what_cannot_fit() {
    let pool = TempPool::new("small-log");
    let server = Server::start(&pool.0, &["--pool-size", "64MiB", "--log-size", "16KiB", "--ring-entries", "64"]);
    let mut c = server.client();
    for round in 0..5 {
        let mut pipe = redis::pipe();
        for i in 0..2000 {
            pipe.set(format!("burst{i}"), format!("{round}:{i}:{}", "w".repeat(50))).ignore();
        }
        let () = pipe.query(&mut c).unwrap_or_else(|e| panic!("round {round}: a burst was refused: {e}"));
    }
    for i in (0..2000).step_by(111) {
        let value: String = c.get(format!("burst{i}")).unwrap();
        assert!(value.starts_with(&format!("4:{i}:")), "{value}");
    }
    // 400 keys of records: more than a quarter of a 16 KiB log.
    let mut mset = redis::cmd("MSET");
    for i in 0..400 {
        mset.arg(format!("big{i}")).arg("v");
    }
    let error = error_of(mset.query::<()>(&mut c));
    assert!(error.starts_with("OOM") && error.contains("--log-size"), "{error}");
    let exists: usize = c.exists("big0").unwrap();
    assert_eq!(exists, 0, "a refused command applies nothing");
    let () = c.set("after", "ok").unwrap();
}

fn http(server: &Server, request: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(server.http).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(request).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; length];
    if !request.starts_with(b"HEAD") {
        reader.read_exact(&mut body).unwrap();
    }
    (status, body)
}

#[test]
fn http_pkvs_with_a_rust_client_and_curl() {
    let pool = TempPool::new("http");
    let server = Server::start(&pool.0, &[]);
    let value: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let mut put = b"PUT /kv/a%20b%00c HTTP/1.1\r\nContent-Length: 10000\r\n\r\n".to_vec();
    put.extend_from_slice(&value);
    assert_eq!(http(&server, &put).0, 204);
    let (status, body) = http(&server, b"GET /kv/a%20b%00c HTTP/1.1\r\n\r\n");
    assert_eq!(status, 200);
    assert!(body == value);
    let (status, _) = http(&server, b"HEAD /kv/a%20b%00c HTTP/1.1\r\n\r\n");
    assert_eq!(status, 200);
    // A PUT asking to close gets its reply before the close (it was
    // stored, then closed unanswered, before the fix).
    let put = b"PUT /kv/closing HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    assert_eq!(http(&server, put).0, 204);
    // The same store on both protocols: binary key and all.
    let mut c = server.client();
    let via_redis: Vec<u8> = c.get(b"a b\0c").unwrap();
    assert!(via_redis == value);
    let _: () = c.set("from-redis", "hello").unwrap();
    assert_eq!(http(&server, b"GET /kv/from-redis HTTP/1.1\r\n\r\n"), (200, b"hello".to_vec()));
    assert_eq!(http(&server, b"DELETE /kv/from-redis HTTP/1.1\r\n\r\n").0, 204);
    assert_eq!(http(&server, b"DELETE /kv/from-redis HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(http(&server, b"GET /kv/from-redis HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(http(&server, b"GET /elsewhere HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(http(&server, b"GET /kv/bad%zz HTTP/1.1\r\n\r\n").0, 404);
    assert_eq!(http(&server, b"BREW /kv/x HTTP/1.1\r\n\r\n").0, 501);
    // curl, as a user would.
    let url = format!("http://{}/kv/curl-key", server.http);
    let dir = std::env::temp_dir().join(format!("packetstore-curl-{}", std::process::id()));
    std::fs::write(&dir, &value).unwrap();
    let curl = |args: &[&str]| {
        let output = Command::new("curl").args(["-s", "-S"]).args(args).output().expect("curl is installed (.ci/run)");
        assert!(output.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        output.stdout
    };
    let code = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        "PUT",
        "--data-binary",
        &format!("@{}", dir.display()),
        &url,
    ]);
    assert_eq!(code, b"204");
    let body = curl(&[&url]);
    assert!(body == value, "curl reads back the {} bytes", value.len());
    let code = curl(&["-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", &url]);
    assert_eq!(code, b"204");
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn redis_cli_works() {
    let pool = TempPool::new("cli");
    let server = Server::start(&pool.0, &[]);
    let port = server.resp.port().to_string();
    let cli = |args: &[&str]| -> String {
        let output = Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .output()
            .expect("redis-cli is installed (Debian redis-tools, .ci/run installs it)");
        assert!(output.status.success(), "redis-cli {args:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(cli(&["ping"]), "PONG\n");
    assert_eq!(cli(&["set", "greeting", "hello world"]), "OK\n");
    assert_eq!(cli(&["get", "greeting"]), "hello world\n");
    assert_eq!(cli(&["hset", "h", "a", "1", "b", "2"]), "2\n");
    assert_eq!(cli(&["hgetall", "h"]), "a\n1\nb\n2\n");
    assert_eq!(cli(&["incr", "counter"]), "1\n");
    assert_eq!(cli(&["dbsize"]), "3\n");
    let mut keys: Vec<String> = cli(&["--scan"]).lines().map(String::from).collect();
    keys.sort();
    assert_eq!(keys, vec!["counter", "greeting", "h"]);
    assert!(cli(&["info", "keyspace"]).contains("db0:keys=3"));
    assert!(cli(&["get", "h"]).contains("WRONGTYPE"));
    // A pipe of commands (redis-cli --pipe speaks raw RESP).
    let mut child = Command::new("redis-cli")
        .args(["-p", &port, "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    for i in 0..500 {
        input.extend_from_slice(format!("*3\r\n$3\r\nSET\r\n$6\r\nk{i:05}\r\n$3\r\nv{:02}\r\n", i % 100).as_bytes());
    }
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("errors: 0, replies: 500"), "{text}");
    assert_eq!(cli(&["dbsize"]), "503\n");
}

/// Kills per storage in `kill_9_under_load` (`PACKETSTORE_SERVE_KILLS`).
fn kills() -> usize {
    std::env::var("PACKETSTORE_SERVE_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(100)
}

/// One client's keys and what it knows of them: the acknowledged state of
/// each key (None: deleted), and the write in flight when the server died.
#[derive(Default)]
struct KillModel {
    acknowledged: std::collections::HashMap<String, Option<Vec<u8>>>,
    in_flight: Option<(String, Option<Vec<u8>>)>,
    acknowledged_ops: usize,
}

impl KillModel {
    /// After a restart: the write in flight counts if it was applied;
    /// then every key must read exactly as acknowledged.
    fn settle_and_check(&mut self, c: &mut redis::Connection, context: &str) {
        if let Some((key, outcome)) = self.in_flight.take() {
            let found: Option<Vec<u8>> = c.get(&key).unwrap();
            if found == outcome {
                self.acknowledged.insert(key, outcome);
            }
        }
        let keys: Vec<&String> = self.acknowledged.keys().collect();
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.get(*key);
        }
        let found: Vec<Option<Vec<u8>>> = pipe.query(c).unwrap();
        for (key, found) in keys.iter().zip(found) {
            let expected = &self.acknowledged[*key];
            assert!(
                &found == expected,
                "{context}: {key} lost or wrong after the restart: found {:?}, acknowledged {:?}",
                found.as_ref().map(|f| String::from_utf8_lossy(&f[..f.len().min(16)]).into_owned()),
                expected.as_ref().map(|v| String::from_utf8_lossy(&v[..v.len().min(16)]).into_owned()),
            );
        }
    }
}

/// A client's load until the server dies: SET (values up to 20 KB), DEL,
/// and GETs checked against what it knows.
fn kill_load(resp: SocketAddr, client: usize, round: usize, mut model: KillModel) -> KillModel {
    let Ok(connection) = redis::Client::open(format!("redis://{resp}/")) else { return model };
    let Ok(mut c) = connection.get_connection() else { return model };
    let mut rng = (client as u64 + 1) * 0x9e37_79b9 + round as u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for i in 0.. {
        let key = format!("c{client}:k{}", next() % 150);
        let outcome = match next() % 10 {
            0..=5 => {
                let len = [10, 300, 3000, 20_000][(next() % 4) as usize];
                let value: Vec<u8> =
                    format!("{round}:{client}:{i}:").bytes().chain((0..len).map(|j| (i + j) as u8)).collect();
                Some(Some(value))
            }
            6..=7 => Some(None),
            _ => None,
        };
        match outcome {
            Some(outcome) => {
                model.in_flight = Some((key.clone(), outcome.clone()));
                let done = match &outcome {
                    Some(value) => c.set::<_, _, ()>(&key, value).is_ok(),
                    None => c.del::<_, ()>(&key).is_ok(),
                };
                if !done {
                    return model;
                }
                model.in_flight = None;
                model.acknowledged.insert(key, outcome);
                model.acknowledged_ops += 1;
            }
            None => {
                let Ok(found) = c.get::<_, Option<Vec<u8>>>(&key) else { return model };
                let expected = model.acknowledged.get(&key).cloned().flatten();
                assert!(found == expected, "round {round}: client {client} read {key} wrong before the kill");
            }
        }
    }
    unreachable!()
}

/// How the server stops in `restarts_under_load`.
#[derive(Clone, Copy, PartialEq)]
enum Stop {
    /// SIGKILL: the process dies, the page cache (or tmpfs) keeps what it
    /// stored.
    Kill,
    /// `DEBUG POWERFAIL` on the binary's crash simulator: the power fails
    /// at a fence or sync a few ahead, and only what a real failure there
    /// could keep is written back to the pool file.
    PowerFail,
}

/// Three clients write, delete and read their own keys; the server is
/// killed with SIGKILL at a random moment, `kills()` times, and restarted
/// on the same pool. After each restart every acknowledged write must be
/// there and every acknowledged delete absent; each client's write in
/// flight at the kill may or may not have been applied.
fn kill_9_under_load(pool: TempPool, extra: &[&str]) {
    restarts_under_load(&pool.0, extra, Stop::Kill, kills());
}

/// MSETs of two keys on two shards (`{a}` is shard 1's of 2, `{b}` shard
/// 0's), each value larger than the last: after a restart every pair is
/// whole, and at least as new as its last acknowledged MSET.
#[derive(Default)]
struct PairModel {
    acknowledged: std::collections::BTreeMap<u64, u64>,
    next: u64,
}

const PAIRS: u64 = 4;

impl PairModel {
    fn check(&self, c: &mut redis::Connection, context: &str) {
        for pair in 0..PAIRS {
            let (a, b): (Option<u64>, Option<u64>) =
                redis::cmd("MGET").arg(format!("{{a}}{pair}")).arg(format!("{{b}}{pair}")).query(c).unwrap();
            assert_eq!(a, b, "{context}: pair {pair} holds half an MSET");
            let acknowledged = self.acknowledged.get(&pair).copied();
            assert!(a >= acknowledged, "{context}: pair {pair} lost its MSET of {acknowledged:?}: {a:?}");
        }
    }
}

/// MSETs across the two shards until the server dies.
fn pair_load(resp: SocketAddr, mut model: PairModel) -> PairModel {
    let Ok(connection) = redis::Client::open(format!("redis://{resp}/")) else { return model };
    let Ok(mut c) = connection.get_connection() else { return model };
    loop {
        model.next += 1;
        let (pair, value) = (model.next % PAIRS, model.next);
        let mset = redis::cmd("MSET")
            .arg(format!("{{a}}{pair}"))
            .arg(value)
            .arg(format!("{{b}}{pair}"))
            .arg(value)
            .query::<()>(&mut c);
        if mset.is_err() {
            return model;
        }
        model.acknowledged.insert(pair, value);
    }
}

fn restarts_under_load(pool: &std::path::Path, extra: &[&str], stop: Stop, rounds: usize) {
    const CLIENTS: usize = 3;
    let env: &[(&str, &str)] = if stop == Stop::PowerFail { &[("PACKETSTORE_ENABLE_TEST_SWITCHES", "1")] } else { &[] };
    let mut models: Vec<KillModel> = (0..CLIENTS).map(|_| KillModel::default()).collect();
    // With shards, MSETs across them too.
    let sharded = extra.contains(&"--shards");
    let mut pairs = PairModel::default();
    for round in 0..rounds {
        let mut server = Server::start_env(pool, extra, env);
        let mut c = server.client();
        for model in &mut models {
            model.settle_and_check(&mut c, &format!("round {round}"));
        }
        pairs.check(&mut c, &format!("round {round}"));
        let resp = server.resp;
        let writers: Vec<_> = std::mem::take(&mut models)
            .into_iter()
            .enumerate()
            .map(|(client, model)| std::thread::spawn(move || kill_load(resp, client, round, model)))
            .collect();
        let moved = std::mem::take(&mut pairs);
        let pair_writer = std::thread::spawn(move || if sharded { pair_load(resp, moved) } else { moved });
        std::thread::sleep(Duration::from_millis(20 + (round as u64 * 37) % 130));
        match stop {
            Stop::Kill => server.kill(),
            Stop::PowerFail => {
                let fences = 1 + (round as u64 * 7919) % 40;
                // The reply may never come: the power can fail at the very
                // sync that would release it.
                match redis::cmd("DEBUG").arg("POWERFAIL").arg(round).arg(fences).query::<()>(&mut c) {
                    Ok(()) => {}
                    Err(error) if error.is_io_error() || error.is_connection_dropped() => {}
                    Err(error) => panic!("round {round}: DEBUG POWERFAIL: {error}"),
                }
                assert!(server.wait_exit(Duration::from_secs(60)), "round {round}: the power never failed");
                let said = server.lines_at_exit();
                assert!(
                    said.iter().any(|l| l.starts_with("power failed (simulated)")),
                    "round {round}: the server stopped for another reason: {said:?}"
                );
            }
        }
        models = writers.into_iter().map(|w| w.join().unwrap()).collect();
        pairs = pair_writer.join().unwrap();
    }
    let server = Server::start_env(pool, extra, env);
    let mut c = server.client();
    for model in &mut models {
        model.settle_and_check(&mut c, "final");
    }
    pairs.check(&mut c, "final");
    assert!(!sharded || !pairs.acknowledged.is_empty(), "no MSET across shards acknowledged");
    let acknowledged: usize = models.iter().map(|m| m.acknowledged_ops).sum();
    assert!(acknowledged >= rounds, "only {acknowledged} writes acknowledged over {rounds} restarts");
    eprintln!("{rounds} restarts under load, {acknowledged} writes and deletes acknowledged: none lost");
}

/// Power failures of the real binary (its test switch): `PACKETSTORE_SERVE_POWERFAILS` (25)
/// per simulator mode, each at a random fence or sync under load.
fn powerfails() -> usize {
    std::env::var("PACKETSTORE_SERVE_POWERFAILS").ok().and_then(|s| s.parse().ok()).unwrap_or(25)
}

#[test]
fn power_failures_of_the_binary_lose_nothing_acknowledged() {
    restarts_under_load(
        &TempPool::new("powerfail-cl").0,
        &["--simulate-power-failures", "cache-line"],
        Stop::PowerFail,
        powerfails(),
    );
}

#[test]
fn power_failures_of_the_binary_in_the_page_domain() {
    restarts_under_load(
        &TempPool::new("powerfail-page").0,
        &["--simulate-power-failures", "page"],
        Stop::PowerFail,
        powerfails(),
    );
}

/// Two shards on the crash simulator, one device each: the power fails at
/// a fence of the shard that took the DEBUG POWERFAIL; every shard's pool
/// keeps what it made durable, and an MSET over both shards is whole.
#[test]
fn power_failures_of_a_sharded_binary_lose_nothing_and_split_no_mset() {
    let pools = common::ShardPools::new("powerfail-shards", 2);
    let extra = ["--shards", "2", "--cluster-ports", "0", "--simulate-power-failures", "cache-line"];
    // Half the single server's rounds: each restarts two shards.
    restarts_under_load(&pools.first.0, &extra, Stop::PowerFail, powerfails().div_ceil(2));
}

#[test]
fn the_power_switch_is_refused_unless_enabled() {
    let pool = TempPool::new("switch");
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args([
            "serve",
            "--pool",
            pool.0.to_str().unwrap(),
            "--pool-size",
            "64MiB",
            "--log-size",
            "8MiB",
            "--ring-entries",
            "64",
        ])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--simulate-power-failures", "page"])
        .env_remove("PACKETSTORE_ENABLE_TEST_SWITCHES")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refused unless PACKETSTORE_ENABLE_TEST_SWITCHES=1"), "{stderr}");
    // A normal server refuses the command.
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let error = error_of(redis::cmd("DEBUG").arg("POWERFAIL").arg(1).arg(1).query::<()>(&mut c));
    assert!(error.contains("DEBUG POWERFAIL is disabled"), "{error}");
}

#[test]
fn kill_9_under_load_loses_nothing_acknowledged() {
    kill_9_under_load(TempPool::new("kill9"), &[]);
}

#[test]
fn kill_9_under_load_page_domain() {
    kill_9_under_load(TempPool::on_disk("kill9-page"), &[]);
}

#[test]
fn epoll_copy_baseline_serves_the_same() {
    let pool = TempPool::new("epoll");
    let server = Server::start(&pool.0, &["--io", "epoll", "--persist", "copy"]);
    let mut c = server.client();
    let value = vec![7u8; 9000];
    let _: () = c.set("k", &value).unwrap();
    let back: Vec<u8> = c.get("k").unwrap();
    assert!(back == value);
    let mut pipe = redis::pipe();
    for i in 0..200 {
        pipe.set(format!("p{i}"), i).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 201);
    assert_eq!(http(&server, b"GET /kv/p7 HTTP/1.1\r\n\r\n"), (200, b"7".to_vec()));
}

/// Quiet at steady state: an idle server with a little data does no work:
/// no commit, no compaction pass (one small value, most of its buffer
/// "waste", was relocated from buffer to buffer 15 times a second).
#[test]
fn an_idle_server_does_no_work() {
    let pool = TempPool::new("idle");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: () = c.set("a", "x".repeat(85)).unwrap();
    let field = |c: &mut redis::Connection, name: &str| -> u64 {
        let info: String = redis::cmd("INFO").arg("everything").query(c).unwrap();
        info.lines().find_map(|l| l.strip_prefix(&format!("{name}:"))).unwrap().trim().parse().unwrap()
    };
    // Checkpoints follow the write (each also writes the checkpoint's own
    // entries, so a few settle it); then nothing.
    let mut commits = field(&mut c, "commits");
    let settled = (0..8).any(|_| {
        std::thread::sleep(Duration::from_millis(1500));
        let now = field(&mut c, "commits");
        std::mem::replace(&mut commits, now) == now
    });
    assert!(settled, "an idle server went on committing: {commits} commits");
    assert_eq!(field(&mut c, "compaction_passes"), 0);
}
