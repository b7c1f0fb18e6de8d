//! Goal: packetstore answers as a real Redis 7 (Debian's redis-server,
//! installed by scripts/test.sh) does. (1) Random command sequences over a
//! few shared keys (strings, lists, sets, sorted sets, hashes, streams
//! with a group, keys, SORT, EVAL; types collide, so WRONGTYPE and every
//! error text are compared too) get the same replies from both. (2) The
//! two exchange values through DUMP and RESTORE in both directions, for
//! every type Redis 7.0 dumps compactly (int and LZF strings, listpack
//! hashes and sorted sets, intsets, quicklists) and plainly (large
//! collections).
//!
//! Method: a redis-server on a free port (no persistence) beside
//! `packetstore serve`. Replies whose order Redis leaves open (set
//! members, hash fields) are compared sorted; commands whose reply
//! depends on chance or the clock are not generated.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Raw, Resp, Server, TempPool};
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

/// HyperLogLogs are Redis's bytes: the same PFADDs leave the same string
/// (sparse, promoted to dense, merged), the same counts and cached
/// counts, and each side counts the other's string (GET then SET).
#[test]
fn hyperloglogs_are_byte_for_byte_redis_7_s() {
    let redis = Redis::start();
    let pool = TempPool::new("redis-peer-hll");
    let server = Server::start(&pool.0, &[]);
    let (mut r, mut p) = (redis.client(), server.client());
    let mut rng = Rng(36);
    let mut script: Vec<Vec<Vec<u8>>> = Vec::new();
    for round in 0..300u64 {
        let key = ["h1", "h2", "h3"][rng.below(3) as usize];
        let mut add = argv(&["PFADD", key]);
        for _ in 0..1 + rng.below(if round < 200 { 8 } else { 200 }) {
            add.push(format!("e{}", rng.below(30_000)).into_bytes());
        }
        script.push(add);
        if round % 7 == 0 {
            script.push(argv(&["PFCOUNT", key]));
        }
        if round % 50 == 49 {
            script.push(argv(&["PFMERGE", "m", "h1", "h2", "h3"]));
            script.push(argv(&["PFCOUNT", "h1", "h2", "h3"]));
        }
    }
    script.push(argv(&["PFMERGE", "m", "h1", "h2", "h3"]));
    // Small ones stay sparse, merged too.
    script.push(argv(&["PFADD", "s", "a", "b", "c", "", "e1"]));
    script.push(argv(&["PFADD", "s2", "c", "d"]));
    script.push(argv(&["PFCOUNT", "s"]));
    script.push(argv(&["PFMERGE", "ms", "s", "s2"]));
    for command in &script {
        assert_eq!(run(&mut p, command), run(&mut r, command), "{:?}", String::from_utf8_lossy(&command[0]));
    }
    let mut encodings = Vec::new();
    for key in ["h1", "h2", "h3", "m", "s", "ms"] {
        let theirs: Vec<u8> = redis::cmd("GET").arg(key).query(&mut r).unwrap();
        let ours: Vec<u8> = redis::cmd("GET").arg(key).query(&mut p).unwrap();
        assert_eq!(ours, theirs, "{key}: the same bytes");
        encodings.push(redis::cmd("PFDEBUG").arg("ENCODING").arg(key).query::<String>(&mut p).unwrap());
        // Each side's string, counted by the other.
        let copy = format!("{key}:copy");
        let _: () = redis::cmd("SET").arg(&copy).arg(&theirs).query(&mut p).unwrap();
        let _: () = redis::cmd("SET").arg(&copy).arg(&ours).query(&mut r).unwrap();
        let counts: Vec<i64> =
            [&mut p, &mut r].into_iter().map(|c| redis::cmd("PFCOUNT").arg(&copy).query(c).unwrap()).collect();
        assert_eq!(counts[0], counts[1], "{key}");
    }
    assert!(encodings.iter().any(|e| e == "sparse") && encodings.iter().any(|e| e == "dense"), "{encodings:?}");
}

/// GEO answers as Redis 7's: the same random points give the same
/// scores (ZRANGE WITHSCORES), positions, distances, geohash strings, and
/// searches by radius and by box with every option, sorted.
#[test]
fn geo_commands_answer_as_redis_7_does() {
    let redis = Redis::start();
    let pool = TempPool::new("redis-peer-geo");
    let server = Server::start(&pool.0, &[]);
    let (mut r, mut p) = (redis.client(), server.client());
    let mut rng = Rng(38);
    let mut coordinate = |span: f64| (rng.below(2_000_000) as f64 / 1_000_000.0 - 1.0) * span;
    let mut script =
        vec![argv(&["GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"])];
    let mut add = argv(&["GEOADD", "g", "CH"]);
    for n in 0..300 {
        let (lon, lat) = (coordinate(20.0) + 10.0, coordinate(10.0) + 40.0);
        add.extend([format!("{lon}"), format!("{lat}"), format!("p{n}")].map(String::into_bytes));
    }
    script.push(add);
    script.push(argv(&["GEOADD", "g", "NX", "0", "0", "Palermo", "1", "1", "new"]));
    script.push(argv(&["GEOADD", "g", "XX", "CH", "2", "2", "new", "3", "3", "absent"]));
    script.push(argv(&["ZRANGE", "g", "0", "-1", "WITHSCORES"]));
    script.push(argv(&["GEOPOS", "g", "Palermo", "p7", "missing"]));
    script.push(argv(&["GEOHASH", "g", "Palermo", "p8", "missing"]));
    script.push(argv(&["GEODIST", "g", "Palermo", "Catania", "km"]));
    script.push(argv(&["GEODIST", "g", "p1", "p2"]));
    script.push(argv(&["GEORADIUS", "g", "15", "37", "300", "km", "WITHDIST", "WITHCOORD", "WITHHASH", "ASC"]));
    script.push(argv(&["GEORADIUSBYMEMBER", "g", "p3", "500", "km", "DESC", "COUNT", "7"]));
    script.push(argv(&["GEOSEARCH", "g", "FROMLONLAT", "10", "40", "BYBOX", "800", "400", "km", "ASC", "WITHDIST"]));
    script.push(argv(&["GEOSEARCH", "g", "FROMMEMBER", "p4", "BYRADIUS", "200", "mi", "ASC", "COUNT", "5"]));
    script.push(argv(&["GEOSEARCHSTORE", "dst", "g", "FROMLONLAT", "10", "40", "BYRADIUS", "600", "km", "STOREDIST"]));
    script.push(argv(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]));
    script.push(argv(&["GEORADIUS", "g", "10", "40", "100", "km", "STORE", "dst2"]));
    script.push(argv(&["ZRANGE", "dst2", "0", "-1", "WITHSCORES"]));
    script.push(argv(&["GEOSEARCH", "nokey", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"]));
    // Cluster clients route with the keys COMMAND GETKEYS names.
    script.push(argv(&["COMMAND", "GETKEYS", "GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"]));
    script.push(argv(&["COMMAND", "GETKEYS", "GEORADIUSBYMEMBER", "g", "m", "1", "km", "ASC", "STOREDIST", "d"]));
    script.push(argv(&["COMMAND", "GETKEYS", "GEORADIUS", "g", "0", "0", "1", "km"]));
    script.push(argv(&["COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "m", "BYRADIUS", "1", "km"]));
    for command in &script {
        assert_eq!(run(&mut p, command), run(&mut r, command), "{:?}", String::from_utf8_lossy(&command.concat()));
    }
    // Errors, compared as text.
    for command in [
        argv(&["GEOADD", "g", "200", "0", "x"]),
        argv(&["GEOADD", "g", "NX", "XX", "0", "0", "x"]),
        argv(&["GEORADIUS", "g", "0", "0", "1", "parsec"]),
        argv(&["GEOSEARCH", "g", "FROMLONLAT", "0", "0"]),
        argv(&["GEOSEARCH", "g", "BYRADIUS", "1", "km"]),
        argv(&["GEOSEARCH", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "ANY"]),
        argv(&["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "x", "WITHDIST"]),
        argv(&["GEORADIUSBYMEMBER", "g", "missing", "1", "km"]),
    ] {
        let errors: Vec<String> = [&mut p, &mut r]
            .into_iter()
            .map(|c| {
                let mut cmd = redis::cmd(std::str::from_utf8(&command[0]).unwrap());
                for arg in &command[1..] {
                    cmd.arg(&arg[..]);
                }
                cmd.query::<Value>(c).map_or_else(|e| e.to_string(), |v| format!("{v:?}"))
            })
            .collect();
        assert_eq!(errors[0], errors[1], "{:?}", String::from_utf8_lossy(&command.concat()));
    }
}

// ---- differential: random commands against Redis 7 ----

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const VALUES: [&str; 10] = ["a", "b", "c", "1", "-3", "10", "2.5", "", "abc", "0"];

/// One random command over a few shared keys (so types collide and
/// WRONGTYPE is compared too); only commands whose reply is determined
/// by the data (no randomness, no clock), and `next_ms` for stream ids.
fn random_command(rng: &mut Rng, next_ms: &mut u64) -> Vec<String> {
    let key = |rng: &mut Rng| format!("k{}", rng.below(5));
    let v = |rng: &mut Rng| rng.pick(&VALUES).to_string();
    let int = |rng: &mut Rng, lo: i64, hi: i64| (lo + rng.below((hi - lo + 1) as u64) as i64).to_string();
    let k = key(rng);
    let w = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut cmd = match rng.below(84) {
        0 => w(&["SET", &k, &v(rng)]),
        1 => w(&["GET", &k]),
        2 => w(&["APPEND", &k, &v(rng)]),
        3 => w(&["INCR", &k]),
        4 => w(&["INCRBY", &k, &int(rng, -5, 5)]),
        5 => w(&["GETRANGE", &k, &int(rng, -3, 3), &int(rng, -3, 5)]),
        6 => w(&["SETRANGE", &k, &int(rng, 0, 4), &v(rng)]),
        7 => w(&["INCRBYFLOAT", &k, rng.pick(&["1.5", "-0.25", "3", "1e2"])]),
        8 => w(&["STRLEN", &k]),
        9 => w(&["GETDEL", &k]),
        10 => w(&["LPUSH", &k, &v(rng), &v(rng)]),
        11 => w(&["RPUSH", &k, &v(rng)]),
        12 => w(&["LPOP", &k]),
        13 => w(&["RPOP", &k, &int(rng, 0, 3)]),
        14 => w(&["LRANGE", &k, &int(rng, -4, 2), &int(rng, -3, 4)]),
        15 => w(&["LINDEX", &k, &int(rng, -3, 3)]),
        16 => w(&["LSET", &k, &int(rng, -2, 2), &v(rng)]),
        17 => w(&["LINSERT", &k, rng.pick(&["BEFORE", "AFTER"]), &v(rng), &v(rng)]),
        18 => w(&["LREM", &k, &int(rng, -2, 2), &v(rng)]),
        19 => w(&["LTRIM", &k, &int(rng, -3, 2), &int(rng, -2, 3)]),
        20 => w(&["LPOS", &k, &v(rng), "RANK", rng.pick(&["1", "-1", "2"]), "COUNT", &int(rng, 0, 2)]),
        21 => w(&["LMOVE", &k, &key(rng), rng.pick(&["LEFT", "RIGHT"]), rng.pick(&["LEFT", "RIGHT"])]),
        22 => w(&["LMPOP", "2", &k, &key(rng), rng.pick(&["LEFT", "RIGHT"]), "COUNT", &int(rng, 1, 3)]),
        23 => w(&["LLEN", &k]),
        24 => w(&["SADD", &k, &v(rng), &v(rng)]),
        25 => w(&["SREM", &k, &v(rng)]),
        26 => w(&["SCARD", &k]),
        27 => w(&["SISMEMBER", &k, &v(rng)]),
        28 => w(&["SMOVE", &k, &key(rng), &v(rng)]),
        29 => w(&[rng.pick(&["SINTER", "SUNION", "SDIFF"]), &k, &key(rng)]),
        30 => w(&[rng.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), &k, &key(rng), &key(rng)]),
        31 => w(&["SMEMBERS", &k]),
        32 => w(&["SINTERCARD", "2", &k, &key(rng)]),
        33 => w(&["ZADD", &k, &int(rng, -3, 3), &v(rng)]),
        34 => w(&["ZADD", &k, rng.pick(&["NX", "XX", "GT", "LT", "CH"]), &int(rng, -3, 3), &v(rng)]),
        35 => w(&["ZINCRBY", &k, rng.pick(&["1", "-2", "0.5"]), &v(rng)]),
        36 => w(&["ZREM", &k, &v(rng)]),
        37 => w(&["ZRANGE", &k, &int(rng, -3, 1), &int(rng, -2, 3), "WITHSCORES"]),
        38 => w(&["ZRANGEBYSCORE", &k, rng.pick(&["-inf", "(0", "1"]), rng.pick(&["+inf", "2", "(3"])]),
        39 => w(&["ZRANK", &k, &v(rng)]),
        40 => w(&["ZSCORE", &k, &v(rng)]),
        41 => w(&[rng.pick(&["ZPOPMIN", "ZPOPMAX"]), &k, &int(rng, 1, 2)]),
        42 => w(&[rng.pick(&["ZUNIONSTORE", "ZINTERSTORE"]), &k, "2", &key(rng), &key(rng)]),
        43 => w(&["ZCOUNT", &k, "-inf", &int(rng, -1, 2)]),
        44 => w(&["HSET", &k, &v(rng), &v(rng)]),
        45 => w(&["HGET", &k, &v(rng)]),
        46 => w(&["HDEL", &k, &v(rng)]),
        47 => w(&["HINCRBY", &k, &v(rng), &int(rng, -2, 2)]),
        48 => w(&["HGETALL", &k]),
        49 => w(&["HLEN", &k]),
        50 => w(&["DEL", &k]),
        51 => w(&["EXISTS", &k, &key(rng)]),
        52 => w(&["TYPE", &k]),
        53 => w(&["RENAME", &k, &key(rng)]),
        54 => w(&["COPY", &k, &key(rng), "REPLACE"]),
        55 => w(&["SORT", &k, "ALPHA", "LIMIT", "0", &int(rng, 1, 4)]),
        56 => w(&["SORT", &k, rng.pick(&["DESC", "ASC"])]),
        57 => {
            *next_ms += rng.below(2);
            w(&["XADD", &k, &format!("{next_ms}-*"), "f", &v(rng)])
        }
        58 => w(&["XRANGE", &k, "-", "+", "COUNT", &int(rng, 1, 3)]),
        59 => w(&["XTRIM", &k, "MAXLEN", &int(rng, 0, 3)]),
        60 => w(&["XGROUP", "CREATE", &k, "g", "0", "MKSTREAM"]),
        61 => w(&["XREADGROUP", "GROUP", "g", rng.pick(&["alice", "bob"]), "COUNT", "2", "STREAMS", &k, ">"]),
        62 => w(&["XDEL", &k, &format!("{}-0", rng.below(*next_ms + 1))]),
        63 => w(&["XACK", &k, "g", &format!("{}-0", rng.below(*next_ms + 1))]),
        64 => w(&["XPENDING", &k, "g"]),
        65 => w(&["XLEN", &k]),
        66 => w(&["XADD", &k, &format!("{}-{}", rng.below(*next_ms + 1), rng.below(3)), "f", &v(rng)]),
        67 => w(&["SETNX", &k, &v(rng)]),
        68 => w(&["MSET", &k, &v(rng), &key(rng), &v(rng)]),
        69 => w(&["MGET", &k, &key(rng)]),
        70 => w(&["GETSET", &k, &v(rng)]),
        71 => w(&[rng.pick(&["EXPIRE", "PERSIST"]), &k, "1000"][..if rng.below(2) == 0 { 3 } else { 2 }]),
        72 => w(&["HSETNX", &k, &v(rng), &v(rng)]),
        73 => w(&["HMGET", &k, &v(rng), &v(rng)]),
        74 => w(&["HINCRBYFLOAT", &k, &v(rng), rng.pick(&["1.5", "-2", "0.1"])]),
        75 => w(&["ZREVRANGE", &k, "0", &int(rng, -1, 2), "WITHSCORES"]),
        76 => w(&["ZREMRANGEBYSCORE", &k, &int(rng, -3, 0), &int(rng, 0, 3)]),
        77 => w(&["ZMSCORE", &k, &v(rng), &v(rng)]),
        78 => w(&["LPUSHX", &k, &v(rng)]),
        79 => w(&["SMISMEMBER", &k, &v(rng), &v(rng)]),
        80 => w(&["SETBIT", &k, &int(rng, 0, 20), &int(rng, 0, 1)]),
        81 => w(&["BITCOUNT", &k]),
        82 => w(&["RENAMENX", &k, &key(rng)]),
        _ => w(&["EVAL", "return redis.call('lpush', KEYS[1], ARGV[1])", "1", &k, &v(rng)]),
    };
    cmd.shrink_to_fit();
    cmd
}

/// A reply in a form both servers must agree on: errors as text, and the
/// replies whose order Redis leaves open (set members, hash fields)
/// sorted.
fn normalized(command: &[String], reply: redis::RedisResult<Value>) -> String {
    let value = match reply {
        Err(error) => return format!("error: {}", error.detail().unwrap_or("").trim()),
        Ok(value) => value,
    };
    let unordered = matches!(command[0].as_str(), "SMEMBERS" | "SINTER" | "SUNION" | "SDIFF");
    match (value, command[0].as_str()) {
        (Value::Array(items), _) if unordered => {
            let mut items: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
            items.sort();
            format!("{items:?}")
        }
        (Value::Array(items), "HGETALL") => {
            let mut pairs: Vec<String> = items.chunks(2).map(|p| format!("{p:?}")).collect();
            pairs.sort();
            format!("{pairs:?}")
        }
        (value, _) => format!("{value:?}"),
    }
}

/// Sends the same random commands to Redis 7 and to packetstore and
/// compares every reply (`PACKETSTORE_PEER_COMMANDS` per seed, default
/// 3,000, over 3 seeds).
#[test]
fn random_commands_answer_as_redis_7_does() {
    let commands: usize = std::env::var("PACKETSTORE_PEER_COMMANDS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    let redis = Redis::start();
    let pool = TempPool::new("redis-peer-diff");
    let server = Server::start(&pool.0, &[]);
    let (mut r, mut p) = (redis.client(), server.client());
    for seed in 1..=3u64 {
        let _: () = redis::cmd("FLUSHALL").query(&mut r).unwrap();
        let _: () = redis::cmd("FLUSHALL").query(&mut p).unwrap();
        let mut rng = Rng(seed);
        let mut next_ms = 1;
        let mut history = Vec::new();
        for _ in 0..commands {
            let command = random_command(&mut rng, &mut next_ms);
            let run = |c: &mut redis::Connection| {
                let mut cmd = redis::cmd(&command[0]);
                command[1..].iter().for_each(|a| {
                    cmd.arg(a);
                });
                normalized(&command, cmd.query::<Value>(c))
            };
            let (expected, got) = (run(&mut r), run(&mut p));
            history.push(command.join(" "));
            if expected != got {
                let recent = &history[history.len().saturating_sub(15)..];
                panic!(
                    "seed {seed}: {:?}\n  redis:       {expected}\n  packetstore: {got}\nrecent: {recent:#?}",
                    command
                );
            }
        }
    }
}

/// A COMMAND INFO entry with its subcommands (Redis lists them in its
/// hash table's order) sorted, less those `keep` leaves out.
fn info_entry(entry: &Resp, keep: &dyn Fn(&str) -> bool) -> Resp {
    let Resp::Agg(kind, fields) = entry else { return entry.clone() };
    let mut fields = fields.clone();
    if let Resp::Agg(subs_kind, subs) = &fields[9] {
        let mut subs: Vec<Resp> = subs.iter().filter(|sub| keep(&sub.items()[0].text())).cloned().collect();
        subs.sort();
        fields[9] = Resp::Agg(*subs_kind, subs);
    }
    Resp::Agg(*kind, fields)
}

/// A COMMAND DOCS map with its subcommands' map sorted, less those `keep`
/// leaves out.
fn docs_map(docs: &Resp, keep: &dyn Fn(&str) -> bool) -> Resp {
    let Resp::Agg(kind, items) = docs else { return docs.clone() };
    let mut items = items.clone();
    for pair in items.chunks_mut(2) {
        if pair[0].text() == "subcommands" {
            let Resp::Agg(subs_kind, subs) = &pair[1] else { continue };
            let mut subs: Vec<(Resp, Resp)> = subs
                .chunks(2)
                .filter(|sub| keep(&sub[0].text()))
                .map(|sub| (sub[0].clone(), docs_map(&sub[1], keep)))
                .collect();
            subs.sort();
            pair[1] = Resp::Agg(*subs_kind, subs.into_iter().flat_map(|(name, docs)| [name, docs]).collect());
        }
    }
    Resp::Agg(*kind, items)
}

/// COMMAND INFO and COMMAND DOCS of every Redis command packetstore runs
/// (its COMMAND LIST, less its own GROUP and WAITAOF) are Redis 7's, in
/// RESP2 and RESP3: arity, flags, key range, ACL categories, tips, key
/// specifications, subcommands (those it runs), summary, complexity,
/// history, arguments. COMMAND GETKEYS and GETKEYSANDFLAGS agree too.
#[test]
fn command_metadata_is_redis_7_s() {
    let redis = Redis::start();
    let pool = TempPool::new("redis-peer-command");
    let server = Server::start(&pool.0, &[]);
    let redis_addr: std::net::SocketAddr = ([127, 0, 0, 1], redis.port).into();
    for protocol in ["2", "3"] {
        let (mut r, mut p) = (Raw::connect_to(redis_addr), Raw::connect(&server));
        r.call_raw(&["HELLO", protocol]);
        p.call_raw(&["HELLO", protocol]);
        let ours: std::collections::HashSet<String> =
            p.call_resp(&["COMMAND", "LIST"]).items().iter().map(Resp::text).collect();
        let theirs: std::collections::HashSet<String> =
            r.call_resp(&["COMMAND", "LIST"]).items().iter().map(Resp::text).collect();
        let own: Vec<&String> = ours.difference(&theirs).collect();
        assert_eq!(own.len(), 2, "packetstore's own commands: {own:?}");
        let keep = |name: &str| ours.contains(name);
        let mut compared = 0;
        for name in ours.iter().filter(|name| theirs.contains(*name)) {
            let info = |c: &mut Raw| info_entry(&c.call_resp(&["COMMAND", "INFO", name]).items()[0], &keep);
            assert_eq!(info(&mut p), info(&mut r), "RESP{protocol} COMMAND INFO {name}");
            let docs = |c: &mut Raw| docs_map(&c.call_resp(&["COMMAND", "DOCS", name]).items()[1], &keep);
            assert_eq!(docs(&mut p), docs(&mut r), "RESP{protocol} COMMAND DOCS {name}");
            compared += 1;
        }
        assert!(compared > 300, "{compared} compared");
        for call in GETKEYS_CALLS {
            for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
                let args: Vec<&str> = ["COMMAND", sub].into_iter().chain(call.split(' ')).collect();
                assert_eq!(p.call_resp(&args), r.call_resp(&args), "RESP{protocol} COMMAND {sub} {call}");
            }
        }
    }
}

/// Calls whose keys both servers find (every command here is one
/// packetstore runs).
const GETKEYS_CALLS: &[&str] = &[
    "GET k",
    "SET k v",
    "SET k v NX GET",
    "MSET a 1 b 2",
    "MSET a 1 b",
    "LMOVE a b LEFT RIGHT",
    "ZUNIONSTORE out 2 a b WEIGHTS 1 2",
    "ZUNIONSTORE out 3 a b",
    "ZUNIONSTORE out -1 a",
    "ZINTER 2 a b",
    "ZDIFF 1 a",
    "ZDIFFSTORE out 1 a",
    "ZINTERCARD 2 a b",
    "ZMPOP 2 a b MIN",
    "BZMPOP 0 2 a b MIN",
    "SINTERCARD 2 a b",
    "SINTERCARD 5 a b",
    "LMPOP 1 a LEFT",
    "BLMPOP 0 2 a b LEFT",
    "EVAL s 2 k1 k2 a1",
    "EVAL s 0",
    "EVAL s x",
    "EVALSHA s 1 k",
    "EVAL_RO s 1 k",
    "FCALL f 1 k",
    "FCALL_RO f 0",
    "XREAD STREAMS a b 0 0",
    "XREAD COUNT 1 BLOCK 0 STREAMS a 0",
    "XREAD STREAMS a b 0",
    "XREADGROUP GROUP g c NOACK STREAMS a 0",
    "XREADGROUP GROUP g c STREAMS streams 0",
    "SORT k",
    "SORT k LIMIT 0 1 STORE d",
    "SORT k STORE d1 STORE d2",
    "SORT_RO k BY x",
    "GEORADIUS g 1 2 3 km STOREDIST d",
    "GEORADIUSBYMEMBER g m 3 km STORE d",
    "GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
    "MEMORY USAGE k",
    "MEMORY USAGE k SAMPLES 5",
    "OBJECT ENCODING k",
    "XGROUP CREATE k g $",
    "XINFO STREAM k",
    "BITFIELD k GET u8 0 SET u8 0 1",
    "BITFIELD_RO k GET u8 0",
    "BITOP AND d a b",
    "RENAME a b",
    "COPY a b",
    "BLPOP a b 0",
    "DEL a b c",
    "PING",
    "PING x",
    "SPUBLISH ch m",
    "PUBLISH ch m",
    "CONFIG GET x",
    "NOSUCH",
    "WATCH a b",
    "LCS a b",
    "SUBSCRIBE a",
    "PFCOUNT a b",
    "OBJECT HELP",
];
