//! Goal: packetstore and a real Redis 7 (Debian's redis-server, installed
//! by scripts/test.sh) exchange values through DUMP and RESTORE in both
//! directions, for every type Redis 7.0 dumps compactly (int and LZF
//! strings, listpack hashes and sorted sets, intsets, quicklists) and in
//! its plain encodings (large collections), and the restored values read
//! back the same.
//!
//! Method: a redis-server on a free port (no persistence) beside
//! `packetstore serve`; the same writes to both; DUMP from one, RESTORE
//! into the other, then compare reads.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, TempPool};
use redis::Value;

/// A redis-server child on a free port, stopped on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (Debian's redis-server package; scripts/test.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port }
    }

    fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).unwrap().get_connection().unwrap()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(c: &mut redis::Connection, args: &[Vec<u8>]) -> Value {
    let mut command = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
    for arg in &args[1..] {
        command.arg(&arg[..]);
    }
    command.query(c).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(&args[0])))
}

fn argv(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

/// The writes both servers get: each type, small (compact encodings) and
/// large (plain ones).
fn writes() -> Vec<Vec<Vec<u8>>> {
    let mut out = vec![
        argv(&["SET", "int", "12345"]),
        argv(&["SET", "neg", "-7"]),
        vec![b"SET".to_vec(), b"lzf".to_vec(), vec![b'a'; 5000]],
        vec![b"SET".to_vec(), b"bin".to_vec(), (0..=255u8).collect()],
        argv(&["RPUSH", "list", "a", "1", "300000", "-5", "9223372036854775807", ""]),
        argv(&["SADD", "intset", "1", "2", "-70000", "5000000000"]),
        argv(&["SADD", "set", "a", "b", "c"]),
        argv(&["HSET", "hash", "f", "v", "n", "12"]),
        argv(&["ZADD", "zset", "1.5", "a", "-3", "b", "0", "c", "inf", "d"]),
    ];
    let mut big_list = argv(&["RPUSH", "biglist"]);
    let mut big_hash = argv(&["HSET", "bighash"]);
    let mut big_zset = argv(&["ZADD", "bigzset"]);
    let mut big_set = argv(&["SADD", "bigset"]);
    for i in 0..2000 {
        big_list.push(format!("item-{i}-{}", "x".repeat(i % 50)).into_bytes());
        big_hash.extend([format!("f{i}").into_bytes(), format!("value {i}").into_bytes()]);
        big_zset.extend([format!("{}", i as f64 / 7.0).into_bytes(), format!("m{i}").into_bytes()]);
        big_set.push(format!("s{i}").into_bytes());
    }
    out.extend([big_list, big_hash, big_zset, big_set]);
    out
}

/// How a key reads: type-specific, in a canonical order.
fn read_back(c: &mut redis::Connection, key: &str) -> Value {
    let kind: String = redis::cmd("TYPE").arg(key).query(c).unwrap();
    let words: Vec<&str> = match kind.as_str() {
        "string" => vec!["GET", key],
        "list" => vec!["LRANGE", key, "0", "-1"],
        "set" => vec!["SORT", key, "ALPHA"],
        "hash" => vec!["HGETALL", key],
        "zset" => vec!["ZRANGE", key, "0", "-1", "WITHSCORES"],
        other => panic!("{key}: unexpected type {other}"),
    };
    let value = run(c, &argv(&words));
    match (kind.as_str(), value) {
        // HGETALL's order is the server's own: compare as sorted pairs.
        ("hash", Value::Array(items)) => {
            let mut pairs: Vec<_> = items.chunks(2).map(|p| format!("{:?}={:?}", p[0], p[1])).collect();
            pairs.sort();
            Value::Array(pairs.into_iter().map(|p| Value::BulkString(p.into_bytes())).collect())
        }
        (_, value) => value,
    }
}

const KEYS: [&str; 13] =
    ["int", "neg", "lzf", "bin", "list", "intset", "set", "hash", "zset", "biglist", "bighash", "bigzset", "bigset"];

#[test]
fn dump_and_restore_interoperate_with_redis_7_both_ways() {
    let redis = Redis::start();
    let pool = TempPool::new("redis-peer-dump");
    let server = Server::start(&pool.0, &[]);
    let (mut r, mut p) = (redis.client(), server.client());
    for write in writes() {
        run(&mut r, &write);
        run(&mut p, &write);
    }
    for key in KEYS {
        let expected = read_back(&mut r, key);
        assert_eq!(read_back(&mut p, key), expected, "{key}: the same writes read the same");
        // Redis's payload into packetstore.
        let from_redis: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut r).unwrap();
        let copy = format!("{key}:from-redis");
        let _: () = redis::cmd("RESTORE").arg(&copy).arg(0).arg(&from_redis).query(&mut p).unwrap();
        assert_eq!(read_back(&mut p, &copy), expected, "{key}: Redis's DUMP restored by packetstore");
        // packetstore's payload into Redis.
        let ours: Vec<u8> = redis::cmd("DUMP").arg(key).query(&mut p).unwrap();
        let copy = format!("{key}:from-packetstore");
        let _: () = redis::cmd("RESTORE").arg(&copy).arg(0).arg(&ours).query(&mut r).unwrap();
        assert_eq!(read_back(&mut r, &copy), expected, "{key}: packetstore's DUMP restored by Redis");
    }
    // RESTORE's rules, as Redis's.
    let payload: Vec<u8> = redis::cmd("DUMP").arg("int").query(&mut p).unwrap();
    let busy = redis::cmd("RESTORE").arg("int").arg(0).arg(&payload).query::<()>(&mut p).unwrap_err();
    assert!(busy.to_string().contains("Target key name already exists"), "{busy}");
    let mut damaged = payload.clone();
    damaged[1] ^= 0x40;
    let bad = redis::cmd("RESTORE").arg("x").arg(0).arg(&damaged).query::<()>(&mut p).unwrap_err();
    assert!(bad.to_string().contains("payload version or checksum are wrong"), "{bad}");
    let _: () = redis::cmd("RESTORE").arg("ttl").arg(100_000).arg(&payload).query(&mut p).unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg("ttl").query(&mut p).unwrap();
    assert!((90_000..=100_000).contains(&ttl), "{ttl}");
    assert_eq!(redis::cmd("DUMP").arg("none").query::<Option<Vec<u8>>>(&mut p).unwrap(), None);
}
