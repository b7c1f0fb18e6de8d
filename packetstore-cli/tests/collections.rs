//! Goal: the commands schema 2 brought answer as Redis 7.0.15 does and
//! keep their data across a kill -9: hashes complete, the sixteen
//! databases (SELECT, MOVE, SWAPDB, FLUSHDB, FLUSHALL), RENAME, RENAMENX,
//! COPY, RANDOMKEY, EXPIRE's options and times, sorted sets, sets and lists (with blocking pops); and a
//! deleted collection's elements are reclaimed in the background.
//!
//! Method: the real binary on ephemeral ports (pools on /dev/shm), driven
//! with the `redis` crate; expected replies are Redis 7.0.15's
//! (`t_hash.c`, `t_zset.c`, `db.c`, `expire.c` and its test suite).

use std::time::Duration;

use redis::{FromRedisValue, Value};

mod common;
use common::{Server, TempPool};

/// Runs a command, which must succeed.
fn q<T: FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Asserts that a command fails with an error containing `text`.
fn fails(c: &mut redis::Connection, args: &[&str], text: &str) {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    match command.query::<Value>(c) {
        Err(error) => assert!(error.to_string().contains(text), "{args:?}: {error} lacks {text:?}"),
        Ok(value) => panic!("{args:?}: expected an error, got {value:?}"),
    }
}

/// A reply in a compact form: integers, strings, nil, [arrays].
fn shown(c: &mut redis::Connection, args: &[&str]) -> String {
    fn show(value: &Value) -> String {
        match value {
            Value::Nil => "nil".into(),
            Value::Int(n) => n.to_string(),
            Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Value::SimpleString(text) => text.clone(),
            Value::Okay => "OK".into(),
            Value::Double(d) => d.to_string(),
            Value::Array(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(" ")),
            other => format!("{other:?}"),
        }
    }
    show(&q::<Value>(c, args))
}

/// Hash commands, each against Redis 7.0's replies and errors.
#[test]
fn hashes_answer_as_redis() {
    let pool = TempPool::new("coll-hashes");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(q::<i64>(&mut c, &["HSET", "h", "a", "1", "b", "2", "a", "3"]), 2);
    assert_eq!(shown(&mut c, &["HMSET", "h", "c", "x"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "a", "9"]), 0);
    assert_eq!(q::<i64>(&mut c, &["HSETNX", "h", "d", "4"]), 1);
    assert_eq!(shown(&mut c, &["HMGET", "h", "a", "nope", "d"]), "[3 nil 4]");
    assert_eq!(shown(&mut c, &["HKEYS", "h"]), "[a b c d]");
    assert_eq!(shown(&mut c, &["HVALS", "h"]), "[3 2 x 4]");
    assert_eq!(q::<i64>(&mut c, &["HLEN", "h"]), 4);
    assert_eq!(q::<i64>(&mut c, &["HSTRLEN", "h", "c"]), 1);
    assert_eq!(q::<i64>(&mut c, &["HINCRBY", "h", "a", "-10"]), -7);
    fails(&mut c, &["HINCRBY", "h", "c", "1"], "hash value is not an integer");
    let _: i64 = q(&mut c, &["HSET", "h", "big", STR_MAX]);
    fails(&mut c, &["HINCRBY", "h", "big", "1"], "increment or decrement would overflow");
    assert_eq!(shown(&mut c, &["HINCRBYFLOAT", "h", "f", "1.5"]), "1.5");
    assert_eq!(shown(&mut c, &["HINCRBYFLOAT", "h", "f", "0.1"]), "1.6");
    fails(&mut c, &["HINCRBYFLOAT", "h", "c", "1"], "hash value is not a float");
    fails(&mut c, &["HINCRBYFLOAT", "h", "f", "inf"], "value is NaN or Infinity");
    let field: String = q(&mut c, &["HRANDFIELD", "h"]);
    assert!(["a", "b", "c", "d", "big", "f"].contains(&field.as_str()), "{field}");
    let three: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "3"]);
    assert_eq!(three.len(), 3);
    assert_eq!(three.iter().collect::<std::collections::HashSet<_>>().len(), 3, "distinct: {three:?}");
    let many: Vec<String> = q(&mut c, &["HRANDFIELD", "h", "-20"]);
    assert_eq!(many.len(), 20, "repeats allowed");
    fails(&mut c, &["HRANDFIELD", "h", "-9223372036854775808"], "value is out of range");
    // HSCAN returns every field exactly once over its pages.
    for i in 0..50 {
        let _: i64 = q(&mut c, &["HSET", "scan", &format!("f{i}"), "v"]);
    }
    let (mut cursor, mut seen) = (0u64, std::collections::HashSet::new());
    loop {
        let (next, page): (u64, Vec<String>) = q(&mut c, &["HSCAN", "scan", &cursor.to_string(), "COUNT", "7"]);
        for pair in page.chunks(2) {
            assert!(seen.insert(pair[0].clone()), "{} twice", pair[0]);
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(seen.len(), 50);
    // The last field's removal deletes the hash.
    assert_eq!(q::<i64>(&mut c, &["HDEL", "scan", "f0"]), 1);
    let fields: Vec<String> = (1..50).map(|i| format!("f{i}")).collect();
    let mut hdel = vec!["HDEL", "scan"];
    hdel.extend(fields.iter().map(String::as_str));
    assert_eq!(q::<i64>(&mut c, &hdel), 49);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "scan"]), 0);
    let _: () = q(&mut c, &["SET", "s", "v"]);
    fails(&mut c, &["HGET", "s", "a"], "WRONGTYPE");
    fails(&mut c, &["HSETNX", "s", "a", "1"], "WRONGTYPE");
}

const STR_MAX: &str = "9223372036854775807";

/// The sixteen databases: keys are per database; MOVE, SWAPDB, FLUSHDB and
/// FLUSHALL; COPY ... DB; and all of it after a kill -9. With two shards
/// too, four times (SWAPDB swapped only the connection's shard's, so the
/// key's shard kept the old mapping whenever the two differed).
#[test]
fn databases_are_sixteen_and_durable() {
    for shards in ["1", "2", "2", "2", "2"] {
        databases_are_sixteen_and_durable_on(shards);
    }
}

fn databases_are_sixteen_and_durable_on(shards: &str) {
    let pool = TempPool::new("coll-dbs");
    {
        let server = Server::start(&pool.0, &["--shards", shards]);
        let mut c = server.client();
        let _: () = q(&mut c, &["SET", "k", "zero"]);
        assert_eq!(shown(&mut c, &["SELECT", "1"]), "OK");
        assert_eq!(shown(&mut c, &["GET", "k"]), "nil");
        let _: () = q(&mut c, &["SET", "k", "one"]);
        let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
        assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 2);
        fails(&mut c, &["SELECT", "16"], "DB index is out of range");
        fails(&mut c, &["MOVE", "h", "1"], "source and destination objects are the same");
        assert_eq!(q::<i64>(&mut c, &["MOVE", "h", "2"]), 1);
        assert_eq!(q::<i64>(&mut c, &["MOVE", "k", "0"]), 0, "k exists in database 0");
        assert_eq!(q::<i64>(&mut c, &["COPY", "k", "k2", "DB", "3"]), 1);
        assert_eq!(shown(&mut c, &["SWAPDB", "0", "1"]), "OK");
        assert_eq!(shown(&mut c, &["GET", "k"]), "zero", "database 1 now holds what 0 held");
        fails(&mut c, &["SWAPDB", "0", "x"], "invalid second DB index");
        assert_eq!(shown(&mut c, &["SELECT", "3"]), "OK");
        assert_eq!(shown(&mut c, &["GET", "k2"]), "one");
        let _: () = q(&mut c, &["SET", "gone", "v"]);
        assert_eq!(shown(&mut c, &["FLUSHDB"]), "OK");
        assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0);
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(shown(&mut c, &["GET", "k"]), "one", "database 0 after the swap");
    assert_eq!(shown(&mut c, &["SELECT", "1"]), "OK");
    assert_eq!(shown(&mut c, &["GET", "k"]), "zero");
    assert_eq!(shown(&mut c, &["SELECT", "2"]), "OK");
    assert_eq!(shown(&mut c, &["HGET", "h", "f"]), "v");
    assert_eq!(shown(&mut c, &["SELECT", "3"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0, "flushed, durably");
    assert_eq!(shown(&mut c, &["FLUSHALL"]), "OK");
    for db in 0..16 {
        assert_eq!(shown(&mut c, &["SELECT", &db.to_string()]), "OK");
        assert_eq!(q::<i64>(&mut c, &["DBSIZE"]), 0, "database {db} after FLUSHALL");
    }
}

/// RENAME, RENAMENX, COPY, RANDOMKEY, TOUCH; EXPIRE's NX, XX, GT and LT;
/// EXPIREAT, PEXPIREAT, EXPIRETIME, PEXPIRETIME.
#[test]
fn keyspace_and_expiry_answer_as_redis() {
    let pool = TempPool::new("coll-keys");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    fails(&mut c, &["RENAME", "none", "x"], "no such key");
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(shown(&mut c, &["RENAME", "h", "h2"]), "OK");
    assert_eq!(shown(&mut c, &["HGET", "h2", "f"]), "v");
    let _: () = q(&mut c, &["SET", "s", "1"]);
    assert_eq!(q::<i64>(&mut c, &["RENAMENX", "s", "h2"]), 0);
    assert_eq!(shown(&mut c, &["RENAME", "s", "h2"]), "OK", "a string over a hash");
    assert_eq!(shown(&mut c, &["TYPE", "h2"]), "string");
    let _: i64 = q(&mut c, &["HSET", "src", "a", "1", "b", "2"]);
    assert_eq!(q::<i64>(&mut c, &["COPY", "src", "dst"]), 1);
    assert_eq!(q::<i64>(&mut c, &["COPY", "src", "dst"]), 0);
    let _: i64 = q(&mut c, &["HSET", "src", "a", "changed"]);
    assert_eq!(shown(&mut c, &["HGETALL", "dst"]), "[a 1 b 2]", "a copy is independent");
    assert_eq!(q::<i64>(&mut c, &["COPY", "src", "dst", "REPLACE"]), 1);
    assert_eq!(shown(&mut c, &["HGET", "dst", "a"]), "changed");
    fails(&mut c, &["COPY", "src", "src"], "source and destination objects are the same");
    assert_eq!(q::<i64>(&mut c, &["TOUCH", "src", "dst", "none"]), 2);
    let key: String = q(&mut c, &["RANDOMKEY"]);
    assert!(["h2", "src", "dst"].contains(&key.as_str()), "{key}");
    // Expiry options.
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "src", "100", "XX"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "src", "100", "NX"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "src", "50", "GT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "src", "200", "GT"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "src", "300", "LT"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXPIRE", "dst", "300", "LT"]), 1, "no expiry counts as infinite");
    fails(&mut c, &["EXPIRE", "src", "1", "NX", "XX"], "NX and XX, GT or LT options at the same time");
    fails(&mut c, &["EXPIRE", "src", "1", "GT", "LT"], "GT and LT options at the same time");
    fails(&mut c, &["EXPIRE", "src", "1", "YY"], "Unsupported option YY");
    fails(&mut c, &["EXPIRE", "src", "9223372036854775807"], "invalid expire time in 'expire' command");
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "src", "4000000000"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "src"]), 4_000_000_000);
    assert_eq!(q::<i64>(&mut c, &["PEXPIRETIME", "src"]), 4_000_000_000_000);
    assert_eq!(q::<i64>(&mut c, &["PEXPIREAT", "src", "4000000000123"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "src"]), 4_000_000_000);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "none"]), -2);
    assert_eq!(q::<i64>(&mut c, &["EXPIRETIME", "h2"]), -1);
    assert_eq!(q::<i64>(&mut c, &["PEXPIREAT", "src", "1"]), 1, "a time passed deletes the key");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "src"]), 0);
}

/// Sorted sets: ZADD's options, ranks, ranges by rank, score and lex,
/// pops, the algebra, Redis's score formatting; then a kill -9.
#[test]
fn sorted_sets_answer_as_redis_and_survive_a_restart() {
    let pool = TempPool::new("coll-zsets");
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        assert_eq!(q::<i64>(&mut c, &["ZADD", "z", "1", "a", "2", "b", "3", "c"]), 3);
        assert_eq!(q::<i64>(&mut c, &["ZADD", "z", "CH", "1", "a", "5", "b"]), 1);
        assert_eq!(q::<i64>(&mut c, &["ZADD", "z", "NX", "9", "a", "4", "d"]), 1);
        assert_eq!(q::<i64>(&mut c, &["ZADD", "z", "XX", "GT", "CH", "0", "a", "6", "b"]), 1);
        fails(&mut c, &["ZADD", "z", "NX", "XX", "1", "a"], "XX and NX options at the same time are not compatible");
        fails(&mut c, &["ZADD", "z", "GT", "LT", "1", "a"], "GT, LT, and/or NX options");
        fails(
            &mut c,
            &["ZADD", "z", "INCR", "1", "a", "2", "b"],
            "INCR option supports a single increment-element pair",
        );
        fails(&mut c, &["ZADD", "z", "nan", "a"], "value is not a valid float");
        assert_eq!(shown(&mut c, &["ZADD", "z", "INCR", "0.1", "a"]), "1.1000000000000001");
        assert_eq!(shown(&mut c, &["ZINCRBY", "z", "-0.1", "a"]), "1");
        assert_eq!(shown(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]), "[a 1 c 3 d 4 b 6]");
        assert_eq!(shown(&mut c, &["ZREVRANGE", "z", "0", "1"]), "[b d]");
        assert_eq!(q::<i64>(&mut c, &["ZRANK", "z", "d"]), 2);
        assert_eq!(q::<i64>(&mut c, &["ZREVRANK", "z", "d"]), 1);
        assert_eq!(shown(&mut c, &["ZRANGEBYSCORE", "z", "(1", "+inf"]), "[c d b]");
        assert_eq!(shown(&mut c, &["ZRANGE", "z", "(6", "-inf", "BYSCORE", "REV", "LIMIT", "1", "1"]), "[c]");
        assert_eq!(q::<i64>(&mut c, &["ZCOUNT", "z", "-inf", "(4"]), 2);
        assert_eq!(shown(&mut c, &["ZMSCORE", "z", "a", "x"]), "[1 nil]");
        let _: i64 = q(&mut c, &["ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"]);
        assert_eq!(shown(&mut c, &["ZRANGEBYLEX", "lex", "(a", "[c"]), "[b c]");
        assert_eq!(q::<i64>(&mut c, &["ZLEXCOUNT", "lex", "-", "+"]), 4);
        fails(&mut c, &["ZRANGEBYLEX", "lex", "a", "c"], "not valid string range item");
        assert_eq!(q::<i64>(&mut c, &["ZREMRANGEBYLEX", "lex", "[c", "+"]), 2);
        assert_eq!(shown(&mut c, &["ZPOPMIN", "z"]), "[a 1]");
        assert_eq!(shown(&mut c, &["ZPOPMAX", "z", "2"]), "[b 6 d 4]");
        let _: i64 = q(&mut c, &["ZADD", "y", "10", "c", "1", "e"]);
        assert_eq!(q::<i64>(&mut c, &["ZUNIONSTORE", "u", "2", "z", "y", "WEIGHTS", "2", "1"]), 2);
        assert_eq!(shown(&mut c, &["ZRANGE", "u", "0", "-1", "WITHSCORES"]), "[e 1 c 16]");
        assert_eq!(shown(&mut c, &["ZINTER", "2", "z", "y", "AGGREGATE", "MAX", "WITHSCORES"]), "[c 10]");
        assert_eq!(shown(&mut c, &["ZDIFF", "2", "y", "z"]), "[e]");
        assert_eq!(q::<i64>(&mut c, &["ZINTERCARD", "2", "u", "y", "LIMIT", "1"]), 1);
        assert_eq!(q::<i64>(&mut c, &["ZRANGESTORE", "r", "u", "0", "0"]), 1);
        assert_eq!(shown(&mut c, &["ZMPOP", "2", "none", "u", "MAX", "COUNT", "5"]), "[u [[c 16] [e 1]]]");
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "u"]), 0, "an emptied sorted set is deleted");
        let _: () = q(&mut c, &["SET", "s", "v"]);
        fails(&mut c, &["ZADD", "s", "1", "a"], "WRONGTYPE");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(shown(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]), "[c 3]");
    assert_eq!(shown(&mut c, &["ZRANGE", "r", "0", "-1", "WITHSCORES"]), "[e 1]");
    assert_eq!(shown(&mut c, &["ZRANGE", "lex", "0", "-1"]), "[a b]");
}

/// DEL of a large hash is one record whatever its size, and the reclaimer
/// empties its elements in the background (INFO's garbage gauge returns
/// to 0); the tree then holds nothing of it.
#[test]
fn deleting_a_large_collection_is_reclaimed_in_the_background() {
    let pool = TempPool::new("coll-reclaim");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    for chunk in 0..20 {
        let mut command = redis::cmd("HSET");
        command.arg("big");
        for i in 0..500 {
            command.arg(format!("f{chunk}-{i}")).arg("value");
        }
        let _: i64 = command.query(&mut c).unwrap();
    }
    assert_eq!(q::<i64>(&mut c, &["HLEN", "big"]), 10_000);
    assert_eq!(q::<i64>(&mut c, &["DEL", "big"]), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "big"]), 0);
    let gauge = |c: &mut redis::Connection| -> f64 {
        let text = ureq_metrics(&server);
        let _ = c;
        text.lines()
            .find_map(|line| line.strip_prefix("packetstore_garbage_entries "))
            .and_then(|v| v.trim().parse().ok())
            .expect("the garbage gauge")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while gauge(&mut c) > 0.0 {
        assert!(std::time::Instant::now() < deadline, "the reclaimer did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    // INFO's lazyfree fields, as Redis names them: none pending, one freed.
    let memory: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    assert!(memory.contains("lazyfree_pending_objects:0\r\n"), "{memory}");
    assert!(memory.contains("lazyfreed_objects:1\r\n"), "{memory}");
    assert_eq!(q::<String>(&mut c, &["CONFIG", "RESETSTAT"]), "OK");
    let memory: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    assert!(memory.contains("lazyfreed_objects:0\r\n"), "{memory}");
    assert_eq!(q::<i64>(&mut c, &["HSET", "big", "again", "1"]), 1, "a new hash of the same name is empty");
    assert_eq!(q::<i64>(&mut c, &["HLEN", "big"]), 1);
}

/// GET /metrics from the server's HTTP port.
fn ureq_metrics(server: &Server) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(server.http).unwrap();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}

/// Blocking pops: BZPOPMIN waits for a ZADD from another connection and
/// gets the member; a timeout answers nil; a parked client that goes is
/// forgotten (INFO's blocked_clients back to 0); inside MULTI a pop never
/// blocks; BZMPOP pops as ZMPOP.
#[test]
fn blocking_pops_wait_for_a_write_or_a_timeout() {
    let pool = TempPool::new("coll-blocking");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let blocked_clients = |c: &mut redis::Connection| -> i64 {
        let info: String = q(c, &["INFO", "clients"]);
        info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).unwrap().trim().parse().unwrap()
    };
    let waiter = {
        let mut w = server.client();
        std::thread::spawn(move || shown(&mut w, &["BZPOPMIN", "none", "z", "10"]))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut c) == 0 {
        assert!(std::time::Instant::now() < deadline, "the waiter never parked");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _: i64 = q(&mut c, &["ZADD", "z", "2", "b", "1", "a"]);
    assert_eq!(waiter.join().unwrap(), "[z a 1]", "woken by the ZADD, lowest score first");
    assert_eq!(shown(&mut c, &["ZRANGE", "z", "0", "-1"]), "[b]", "the pop was applied");
    assert_eq!(blocked_clients(&mut c), 0);
    let started = std::time::Instant::now();
    assert_eq!(shown(&mut c, &["BZPOPMAX", "empty", "0.2"]), "nil");
    assert!(started.elapsed() >= Duration::from_millis(150), "the timeout was waited for");
    fails(&mut c, &["BZPOPMIN", "z", "-1"], "timeout is negative");
    fails(&mut c, &["BZPOPMIN", "z", "x"], "timeout is not a float or out of range");
    // A parked client that disconnects is forgotten.
    let waiter = {
        let addr = server.resp;
        std::thread::spawn(move || {
            use std::io::Write;
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream.write_all(b"*3\r\n$8\r\nBZPOPMIN\r\n$5\r\nnever\r\n$1\r\n0\r\n").unwrap();
            std::thread::sleep(Duration::from_millis(300));
        })
    };
    waiter.join().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut c) != 0 {
        assert!(std::time::Instant::now() < deadline, "a gone client stayed parked");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Inside MULTI a pop answers at once.
    let (reply,): (Value,) = redis::pipe().atomic().cmd("BZPOPMIN").arg("nothing").arg("0").query(&mut c).unwrap();
    assert_eq!(reply, Value::Nil);
    let _: i64 = q(&mut c, &["ZADD", "m", "1", "x", "2", "y"]);
    assert_eq!(shown(&mut c, &["BZMPOP", "1", "2", "none", "m", "MAX", "COUNT", "5"]), "[m [[y 2] [x 1]]]");
}

/// A client parked on a key is served by the push that fills it before
/// the pushing connection's next command runs, as Redis serves it: LPUSH
/// and LPOP pipelined in one write leave the LPOP nothing (the event loop
/// served its connection's commands through before the woken client, so
/// the LPOP took the element and the parked client went on waiting). Two
/// keys with a client parked on each, pushed in one pipeline: each served
/// before the next command. One shard and two (the pusher on the keys'
/// shard or relayed to it: eight rounds, new connections each).
#[test]
fn a_woken_client_is_served_before_the_pushers_next_command() {
    for shards in ["1", "2"] {
        let pool = TempPool::new("coll-woken-first");
        let server = Server::start(&pool.0, &["--shards", shards]);
        let mut c = server.client();
        for round in 0..8 {
            let keys = [format!("{{w{round}}}1"), format!("{{w{round}}}2")];
            let waiters: Vec<_> = keys
                .iter()
                .map(|key| {
                    let mut w = server.client();
                    let key = key.clone();
                    std::thread::spawn(move || shown(&mut w, &["BLPOP", &key, "10"]))
                })
                .collect();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let info: String = q(&mut c, &["INFO", "clients"]);
                let parked = info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).unwrap().trim() == "2";
                if parked {
                    break;
                }
                assert!(std::time::Instant::now() < deadline, "the waiters never parked");
                std::thread::sleep(Duration::from_millis(10));
            }
            // One write: the commands arrive in the same receive.
            let mut pusher = std::net::TcpStream::connect(server.resp).unwrap();
            pusher.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let [k1, k2] = &keys;
            let pipeline = format!("LPUSH {k1} a\r\nLPUSH {k2} b\r\nLPOP {k2}\r\nLPOP {k1}\r\n");
            std::io::Write::write_all(&mut pusher, pipeline.as_bytes()).unwrap();
            let expected = b":1\r\n:1\r\n$-1\r\n$-1\r\n";
            let mut replies = vec![0u8; expected.len()];
            std::io::Read::read_exact(&mut pusher, &mut replies).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&replies),
                String::from_utf8_lossy(expected),
                "{shards} shard(s), round {round}: an LPOP took what a parked client waited for"
            );
            for (waiter, (key, value)) in waiters.into_iter().zip(keys.iter().zip(["a", "b"])) {
                assert_eq!(waiter.join().unwrap(), format!("[{key} {value}]"), "{shards} shard(s): served");
            }
        }
    }
}

/// The same across connections: a push and another client's pop that the
/// event loop takes in one pass (both arrived while it slept in a DEBUG
/// SLEEP) leave the pop nothing: the parked client is served between
/// them, as Redis serves it before running the next command. Before, the
/// pass served every connection it had through first (10 of 10 pops took
/// the element on one shard).
#[test]
fn a_woken_client_is_served_before_another_connections_next_command() {
    use std::io::{Read, Write};
    for shards in ["1", "2"] {
        let pool = TempPool::new("coll-woken-pass");
        let server = Server::start(&pool.0, &["--shards", shards, "--enable-debug-command"]);
        let mut c = server.client();
        let connect = || {
            let stream = std::net::TcpStream::connect(server.resp).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            stream
        };
        let reply = |stream: &mut std::net::TcpStream, expected: &[u8]| {
            let mut got = vec![0u8; expected.len()];
            stream.read_exact(&mut got).unwrap();
            String::from_utf8_lossy(&got).into_owned()
        };
        for round in 0..4 {
            let key = format!("{{p}}{round}");
            let waiter = {
                let mut w = server.client();
                let key = key.clone();
                std::thread::spawn(move || shown(&mut w, &["BLPOP", &key, "10"]))
            };
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let info: String = q(&mut c, &["INFO", "clients"]);
                if info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).unwrap().trim() == "1" {
                    break;
                }
                assert!(std::time::Instant::now() < deadline, "the waiter never parked");
                std::thread::sleep(Duration::from_millis(10));
            }
            let (mut sleeper, mut pusher, mut popper) = (connect(), connect(), connect());
            sleeper.write_all(b"DEBUG SLEEP 0.3\r\n").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            pusher.write_all(format!("LPUSH {key} a\r\n").as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(10));
            popper.write_all(format!("LPOP {key}\r\n").as_bytes()).unwrap();
            assert_eq!(reply(&mut pusher, b":1\r\n"), ":1\r\n");
            assert_eq!(reply(&mut popper, b"$-1\r\n"), "$-1\r\n", "{shards} shard(s), round {round}: the pop took it");
            assert_eq!(reply(&mut sleeper, b"+OK\r\n"), "+OK\r\n");
            assert_eq!(waiter.join().unwrap(), format!("[{key} a]"), "{shards} shard(s): the parked client is served");
        }
    }
}

/// Sets: membership, counts, random picks, pops, moves, the algebra and
/// its STORE forms, SSCAN; an emptied set is deleted; across a kill -9.
#[test]
fn sets_answer_as_redis_and_survive_a_restart() {
    let pool = TempPool::new("coll-sets");
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a", "b", "c", "a"]), 3);
        assert_eq!(q::<i64>(&mut c, &["SADD", "s", "a"]), 0);
        assert_eq!(q::<i64>(&mut c, &["SCARD", "s"]), 3);
        assert_eq!(shown(&mut c, &["SMEMBERS", "s"]), "[a b c]");
        assert_eq!(q::<i64>(&mut c, &["SISMEMBER", "s", "b"]), 1);
        assert_eq!(shown(&mut c, &["SMISMEMBER", "s", "a", "x"]), "[1 0]");
        let one: String = q(&mut c, &["SRANDMEMBER", "s"]);
        assert!(["a", "b", "c"].contains(&one.as_str()));
        assert_eq!(q::<Vec<String>>(&mut c, &["SRANDMEMBER", "s", "5"]).len(), 3);
        assert_eq!(q::<Vec<String>>(&mut c, &["SRANDMEMBER", "s", "-5"]).len(), 5);
        let _: i64 = q(&mut c, &["SADD", "t", "b", "c", "d"]);
        assert_eq!(shown(&mut c, &["SINTER", "s", "t"]), "[b c]");
        assert_eq!(shown(&mut c, &["SUNION", "s", "t"]), "[a b c d]");
        assert_eq!(shown(&mut c, &["SDIFF", "s", "t"]), "[a]");
        assert_eq!(q::<i64>(&mut c, &["SINTERCARD", "2", "s", "t", "LIMIT", "1"]), 1);
        assert_eq!(q::<i64>(&mut c, &["SUNIONSTORE", "u", "s", "t"]), 4);
        assert_eq!(q::<i64>(&mut c, &["SDIFFSTORE", "u2", "s", "s"]), 0);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "u2"]), 0, "an empty result stores nothing");
        assert_eq!(q::<i64>(&mut c, &["SMOVE", "s", "t", "a"]), 1);
        assert_eq!(q::<i64>(&mut c, &["SMOVE", "s", "t", "zz"]), 0);
        assert_eq!(q::<i64>(&mut c, &["SREM", "s", "b", "c", "x"]), 2);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 0, "an emptied set is deleted");
        let popped: Vec<String> = q(&mut c, &["SPOP", "u", "10"]);
        assert_eq!(popped.len(), 4);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "u"]), 0);
        fails(&mut c, &["SPOP", "t", "-1"], "value is out of range, must be positive");
        let (cursor, page): (u64, Vec<String>) = q(&mut c, &["SSCAN", "t", "0", "COUNT", "100"]);
        assert_eq!((cursor, page.len()), (0, 4));
        let _: () = q(&mut c, &["SET", "str", "v"]);
        fails(&mut c, &["SADD", "str", "a"], "WRONGTYPE");
        fails(&mut c, &["SINTER", "t", "str"], "WRONGTYPE");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(shown(&mut c, &["SMEMBERS", "t"]), "[a b c d]");
}

/// Lists: pushes and pops at both ends (with counts), positions, LINSERT
/// many times at one spot (the gap between two seqs runs out and a side is
/// renumbered), LREM, LTRIM, LPOS, LMOVE (rotating one list), LMPOP; an
/// emptied list is deleted; across a kill -9.
#[test]
fn lists_answer_as_redis_and_survive_a_restart() {
    let pool = TempPool::new("coll-lists");
    let expected_inserted: Vec<String>;
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        assert_eq!(q::<i64>(&mut c, &["RPUSH", "l", "b", "c"]), 2);
        assert_eq!(q::<i64>(&mut c, &["LPUSH", "l", "a", "z"]), 4);
        assert_eq!(shown(&mut c, &["LRANGE", "l", "0", "-1"]), "[z a b c]");
        assert_eq!(q::<i64>(&mut c, &["LPUSHX", "none", "x"]), 0);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "none"]), 0);
        assert_eq!(shown(&mut c, &["LPOP", "l"]), "z");
        assert_eq!(shown(&mut c, &["RPOP", "l", "2"]), "[c b]");
        assert_eq!(shown(&mut c, &["LPOP", "none", "2"]), "nil");
        fails(&mut c, &["LPOP", "l", "-1"], "value is out of range, must be positive");
        let _: i64 = q(&mut c, &["RPUSH", "l", "b", "c", "b", "d"]);
        assert_eq!(q::<i64>(&mut c, &["LLEN", "l"]), 5);
        assert_eq!(shown(&mut c, &["LINDEX", "l", "-1"]), "d");
        assert_eq!(shown(&mut c, &["LINDEX", "l", "99"]), "nil");
        let _: () = q(&mut c, &["LSET", "l", "0", "A"]);
        fails(&mut c, &["LSET", "l", "9", "x"], "index out of range");
        fails(&mut c, &["LSET", "none", "0", "x"], "no such key");
        assert_eq!(shown(&mut c, &["LPOS", "l", "b", "RANK", "-1"]), "3");
        assert_eq!(shown(&mut c, &["LPOS", "l", "b", "COUNT", "0"]), "[1 3]");
        fails(&mut c, &["LPOS", "l", "b", "RANK", "0"], "RANK can't be zero");
        assert_eq!(q::<i64>(&mut c, &["LREM", "l", "-1", "b"]), 1);
        assert_eq!(shown(&mut c, &["LRANGE", "l", "0", "-1"]), "[A b c d]");
        assert_eq!(q::<i64>(&mut c, &["LINSERT", "l", "BEFORE", "nope", "x"]), -1);
        fails(&mut c, &["LINSERT", "l", "MIDDLE", "b", "x"], "syntax error");
        // 40 inserts after "b": each lands between "b" and the previous one,
        // exhausting the 2^16 gap after 16 and forcing renumbering.
        for i in 0..40 {
            let _: i64 = q(&mut c, &["LINSERT", "l", "AFTER", "b", &format!("i{i}")]);
        }
        let mut expected = vec!["A".to_string(), "b".into()];
        expected.extend((0..40).rev().map(|i| format!("i{i}")));
        expected.extend(["c".to_string(), "d".into()]);
        assert_eq!(q::<Vec<String>>(&mut c, &["LRANGE", "l", "0", "-1"]), expected);
        // And 40 before "A", the head.
        for i in 0..40 {
            let _: i64 = q(&mut c, &["LINSERT", "l", "BEFORE", "A", &format!("h{i}")]);
        }
        let mut with_head: Vec<String> = (0..40).map(|i| format!("h{i}")).collect();
        with_head.extend(expected);
        assert_eq!(q::<Vec<String>>(&mut c, &["LRANGE", "l", "0", "-1"]), with_head);
        expected_inserted = with_head;
        // LMOVE of a list onto itself rotates it.
        let _: i64 = q(&mut c, &["RPUSH", "r", "1", "2", "3"]);
        assert_eq!(shown(&mut c, &["LMOVE", "r", "r", "LEFT", "RIGHT"]), "1");
        assert_eq!(shown(&mut c, &["RPOPLPUSH", "r", "r"]), "1");
        assert_eq!(shown(&mut c, &["LRANGE", "r", "0", "-1"]), "[1 2 3]");
        assert_eq!(shown(&mut c, &["LMOVE", "r", "m", "RIGHT", "LEFT"]), "3");
        assert_eq!(shown(&mut c, &["LMOVE", "empty", "m", "RIGHT", "LEFT"]), "nil");
        let _: () = q(&mut c, &["LTRIM", "r", "1", "-1"]);
        assert_eq!(shown(&mut c, &["LRANGE", "r", "0", "-1"]), "[2]");
        let _: () = q(&mut c, &["LTRIM", "r", "5", "9"]);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "r"]), 0, "a list trimmed to nothing is deleted");
        assert_eq!(shown(&mut c, &["LMPOP", "2", "none", "m", "RIGHT", "COUNT", "9"]), "[m [3]]");
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "m"]), 0, "an emptied list is deleted");
        let _: () = q(&mut c, &["SET", "str", "v"]);
        fails(&mut c, &["LPUSH", "str", "a"], "WRONGTYPE");
        fails(&mut c, &["LRANGE", "str", "0", "1"], "WRONGTYPE");
        assert_eq!(shown(&mut c, &["TYPE", "l"]), "list");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(q::<Vec<String>>(&mut c, &["LRANGE", "l", "0", "-1"]), expected_inserted);
    assert_eq!(shown(&mut c, &["LINDEX", "l", "40"]), "A");
}

/// BLPOP/BRPOP wake in arrival order on a push, the pop is applied once,
/// BLMOVE moves into its destination, CLIENT UNBLOCK frees a parked
/// client (with a null reply, or an UNBLOCKED error when asked).
#[test]
fn blocking_list_pops_wake_in_order_and_can_be_unblocked() {
    let pool = TempPool::new("coll-blists");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let blocked_clients = |c: &mut redis::Connection| -> i64 {
        let info: String = q(c, &["INFO", "clients"]);
        info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).unwrap().trim().parse().unwrap()
    };
    let wait_blocked = |c: &mut redis::Connection, n: i64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while blocked_clients(c) != n {
            assert!(std::time::Instant::now() < deadline, "never {n} parked");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let first = {
        let mut w = server.client();
        std::thread::spawn(move || shown(&mut w, &["BLPOP", "q", "10"]))
    };
    wait_blocked(&mut c, 1);
    let second = {
        let mut w = server.client();
        std::thread::spawn(move || shown(&mut w, &["BRPOP", "other", "q", "10"]))
    };
    wait_blocked(&mut c, 2);
    let _: i64 = q(&mut c, &["RPUSH", "q", "a", "b", "c"]);
    assert_eq!(first.join().unwrap(), "[q a]", "the first to park is served first");
    assert_eq!(second.join().unwrap(), "[q c]");
    assert_eq!(shown(&mut c, &["LRANGE", "q", "0", "-1"]), "[b]");
    let mover = {
        let mut w = server.client();
        std::thread::spawn(move || shown(&mut w, &["BLMOVE", "src", "dst", "LEFT", "RIGHT", "10"]))
    };
    wait_blocked(&mut c, 1);
    let _: i64 = q(&mut c, &["LPUSH", "src", "x"]);
    assert_eq!(mover.join().unwrap(), "x");
    assert_eq!(shown(&mut c, &["LRANGE", "dst", "0", "-1"]), "[x]");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "src"]), 0);
    for (how, reply) in [(None, "nil"), (Some("ERROR"), "UNBLOCKED: client unblocked via CLIENT UNBLOCK")] {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut w = server.client();
        let waiter = std::thread::spawn(move || {
            let id: i64 = q(&mut w, &["CLIENT", "ID"]);
            tx.send(id).unwrap();
            match redis::cmd("BLPOP").arg("never").arg("0").query::<Value>(&mut w) {
                Ok(value) => format!("{value:?}").replace("Nil", "nil"),
                Err(error) => error.to_string(),
            }
        });
        let id = rx.recv().unwrap().to_string();
        wait_blocked(&mut c, 1);
        let mut args = vec!["CLIENT", "UNBLOCK", &id];
        args.extend(how);
        assert_eq!(q::<i64>(&mut c, &args), 1);
        let got = waiter.join().unwrap();
        assert!(got.contains(reply), "{got:?} lacks {reply:?}");
        assert_eq!(q::<i64>(&mut c, &["CLIENT", "UNBLOCK", &id]), 0, "not blocked any more");
    }
    let started = std::time::Instant::now();
    assert_eq!(shown(&mut c, &["BRPOPLPUSH", "empty", "d", "0.2"]), "nil");
    assert!(started.elapsed() >= Duration::from_millis(150), "the timeout was waited for");
    fails(&mut c, &["BLPOP", "q", "-1"], "timeout is negative");
}

/// SORT and SORT_RO: numeric and ALPHA order, BY a pattern (strings and
/// hash fields, or no sorting), GET (with `#`), LIMIT, STORE replacing its
/// destination with a list (or deleting it), and Redis's errors.
#[test]
fn sort_answers_as_redis() {
    let pool = TempPool::new("coll-sort");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: i64 = q(&mut c, &["RPUSH", "l", "3", "10", "1", "2"]);
    assert_eq!(shown(&mut c, &["SORT", "l"]), "[1 2 3 10]");
    assert_eq!(shown(&mut c, &["SORT", "l", "DESC", "LIMIT", "1", "2"]), "[3 2]");
    assert_eq!(shown(&mut c, &["SORT", "l", "ALPHA"]), "[1 10 2 3]");
    assert_eq!(shown(&mut c, &["SORT", "l", "BY", "nosort", "LIMIT", "1", "2"]), "[10 1]");
    for (id, weight) in [("1", "30"), ("2", "20"), ("3", "10")] {
        let _: () = q(&mut c, &["SET", &format!("w_{id}"), weight]);
        let _: i64 = q(&mut c, &["HSET", &format!("h_{id}"), "name", &format!("n{id}")]);
    }
    // 10 has no weight: it sorts as 0.
    assert_eq!(shown(&mut c, &["SORT", "l", "BY", "w_*"]), "[10 3 2 1]");
    assert_eq!(shown(&mut c, &["SORT", "l", "BY", "w_*", "GET", "#", "GET", "h_*->name"]), "[10 nil 3 n3 2 n2 1 n1]");
    assert_eq!(q::<i64>(&mut c, &["SORT", "l", "BY", "w_*", "GET", "h_*->name", "STORE", "dst"]), 4);
    assert_eq!(shown(&mut c, &["LRANGE", "dst", "0", "-1"]), "[ n3 n2 n1]", "a missing GET stores an empty string");
    assert_eq!(shown(&mut c, &["SORT_RO", "l", "LIMIT", "0", "1"]), "[1]");
    fails(&mut c, &["SORT_RO", "l", "STORE", "x"], "syntax error");
    fails(&mut c, &["SORT", "l", "LIMIT", "a", "1"], "value is not an integer");
    assert_eq!(q::<i64>(&mut c, &["SORT", "none", "STORE", "dst"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "dst"]), 0, "an empty result deletes the destination");
    let _: i64 = q(&mut c, &["SADD", "s", "b", "a", "c"]);
    fails(&mut c, &["SORT", "s"], "One or more scores can't be converted into double");
    assert_eq!(shown(&mut c, &["SORT", "s", "ALPHA", "DESC"]), "[c b a]");
    let _: i64 = q(&mut c, &["ZADD", "z", "3", "x", "1", "y", "2", "w"]);
    assert_eq!(shown(&mut c, &["SORT", "z", "BY", "nosort", "DESC"]), "[x w y]", "score order, reversed");
    let _: () = q(&mut c, &["SET", "str", "v"]);
    fails(&mut c, &["SORT", "str"], "WRONGTYPE");
    assert_eq!(shown(&mut c, &["COMMAND", "GETKEYS", "SORT", "l", "STORE", "a", "STORE", "b"]), "[l b]");
}

/// Streams: XADD's ids (auto, explicit, `ms-*`) and trims, XRANGE with
/// exclusive bounds, XDEL, XREAD and a blocking XREAD woken by XADD, a
/// consumer group's delivery, pending list, XACK, XCLAIM and XAUTOCLAIM;
/// all of it across a kill -9, and an emptied stream stays.
#[test]
fn streams_and_groups_answer_as_redis_and_survive_a_restart() {
    let pool = TempPool::new("coll-streams");
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        assert_eq!(shown(&mut c, &["XADD", "s", "1-1", "f", "a"]), "1-1");
        assert_eq!(shown(&mut c, &["XADD", "s", "1-*", "f", "b"]), "1-2");
        assert_eq!(shown(&mut c, &["XADD", "s", "2", "f", "c", "g", "d"]), "2-0");
        fails(&mut c, &["XADD", "s", "1-5", "f", "x"], "equal or smaller than the target stream top item");
        fails(&mut c, &["XADD", "s", "0-0", "f", "x"], "must be greater than 0-0");
        fails(&mut c, &["XADD", "s", "*", "f"], "wrong number of arguments");
        let auto: String = q(&mut c, &["XADD", "s", "*", "f", "e"]);
        assert!(auto.ends_with("-0") && auto.split('-').next().unwrap().parse::<u64>().unwrap() > 2);
        assert_eq!(q::<i64>(&mut c, &["XLEN", "s"]), 4);
        assert_eq!(shown(&mut c, &["XRANGE", "s", "(1-1", "2"]), "[[1-2 [f b]] [2-0 [f c g d]]]");
        assert_eq!(shown(&mut c, &["XREVRANGE", "s", "+", "-", "COUNT", "1"]), format!("[[{auto} [f e]]]"));
        assert_eq!(q::<i64>(&mut c, &["XDEL", "s", "1-2", "9-9"]), 1);
        assert_eq!(shown(&mut c, &["XREAD", "COUNT", "1", "STREAMS", "s", "1-1"]), "[[s [[2-0 [f c g d]]]]]");
        assert_eq!(shown(&mut c, &["XREAD", "STREAMS", "s", "$"]), "nil");
        // A blocking XREAD on `$` is woken by the next XADD only.
        let waiter = {
            let mut w = server.client();
            std::thread::spawn(move || shown(&mut w, &["XREAD", "BLOCK", "10000", "STREAMS", "s", "$"]))
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let info: String = q(&mut c, &["INFO", "clients"]);
            if info.contains("blocked_clients:1") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the reader never parked");
            std::thread::sleep(Duration::from_millis(10));
        }
        let woke: String = q(&mut c, &["XADD", "s", "*", "f", "new"]);
        assert_eq!(waiter.join().unwrap(), format!("[[s [[{woke} [f new]]]]]"));
        // A consumer group.
        let _: () = q(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
        fails(&mut c, &["XGROUP", "CREATE", "s", "g", "0"], "BUSYGROUP");
        let first: Value = q(&mut c, &["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"]);
        assert!(format!("{first:?}").contains("1-1"), "{first:?}");
        let pending: Value = q(&mut c, &["XPENDING", "s", "g"]);
        assert_eq!(shown(&mut c, &["XPENDING", "s", "g"]).split(' ').next().unwrap(), "[2", "{pending:?}");
        assert_eq!(q::<i64>(&mut c, &["XACK", "s", "g", "1-1"]), 1);
        assert_eq!(shown(&mut c, &["XCLAIM", "s", "g", "bob", "0", "2-0", "JUSTID"]), "[2-0]");
        let bobs = shown(&mut c, &["XPENDING", "s", "g", "-", "+", "10", "bob"]);
        assert!(bobs.starts_with("[[2-0 bob"), "{bobs}");
        let auto_claimed = shown(&mut c, &["XAUTOCLAIM", "s", "g", "carol", "0", "0", "COUNT", "10", "JUSTID"]);
        assert_eq!(auto_claimed, "[0-0 [2-0] []]");
        fails(&mut c, &["XREADGROUP", "GROUP", "nope", "x", "STREAMS", "s", ">"], "NOGROUP");
        let _: i64 = q(&mut c, &["XTRIM", "s", "MAXLEN", "0"]);
        assert_eq!(q::<i64>(&mut c, &["EXISTS", "s"]), 1, "an emptied stream stays");
        let _: () = q(&mut c, &["SET", "str", "v"]);
        fails(&mut c, &["XADD", "str", "*", "f", "v"], "WRONGTYPE");
        assert_eq!(shown(&mut c, &["TYPE", "s"]), "stream");
        let _: String = q(&mut c, &["XADD", "t", "5-0", "k", "v"]);
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(shown(&mut c, &["XRANGE", "t", "-", "+"]), "[[5-0 [k v]]]");
    assert_eq!(q::<i64>(&mut c, &["XLEN", "s"]), 0);
    let info = shown(&mut c, &["XINFO", "GROUPS", "s"]);
    assert!(info.contains("g") && info.contains("pending 1"), "the group and its pending entry survive: {info}");
    fails(&mut c, &["XADD", "s", "2-0", "f", "old"], "equal or smaller");
}
