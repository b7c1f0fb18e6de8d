//! Goal: on the main port of a sharded server, a command whose keys two
//! shards own runs as Redis runs it, atomically (no other client sees half
//! of it) and durably as one (`apps/kv/across.rs`); two such commands
//! arriving on different shards at once never wait on each other forever.
//!
//! Method: `serve --shards 2`, keys chosen on each shard by CLUSTER KEYSLOT.
//! Each command family across shards is checked against Redis's answers.
//! Then writers (connections spread over both shards, so both coordinate)
//! set `x` and `y`, on different shards, to the same counter with MSET,
//! while readers MGET both and must always see them equal; the server is
//! killed (-9) under that load, restarted at once, and must still show
//! them equal, at or past the last MSET answered. (Power failures across
//! shards are the crash simulator's: `packetstore/tests/txn.rs`.)

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{error_text, Server, ShardPools};

fn start(pools: &ShardPools) -> Server {
    Server::start(&pools.first.0, &["--shards", "2", "--cluster-ports", "0"])
}

/// `count` keys named `prefix`N that shard `shard` of 2 owns.
fn keys_on(c: &mut redis::Connection, prefix: &str, shard: i64, count: usize) -> Vec<String> {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .filter(|key| {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap();
            slot * 2 / 16384 == shard
        })
        .take(count)
        .collect()
}

// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn commands_across_shards_answer_as_redis() {
    let pools = ShardPools::new("across-commands", 2);
    let server = start(&pools);
    let mut c = server.client();
    let (a, b) = (keys_on(&mut c, "a", 0, 2), keys_on(&mut c, "b", 1, 2));
    let q = |c: &mut redis::Connection, args: &[&str]| -> redis::Value {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let int = |v: redis::Value| -> i64 { redis::from_redis_value(&v).unwrap() };
    let text = |v: redis::Value| -> Option<String> { redis::from_redis_value(&v).unwrap() };
    // MSET, MGET, MSETNX, EXISTS, DEL.
    assert_eq!(q(&mut c, &["MSET", &a[0], "1", &b[0], "2"]), redis::Value::Okay);
    let got: Vec<Option<String>> = redis::from_redis_value(&q(&mut c, &["MGET", &b[0], "none", &a[0]])).unwrap();
    assert_eq!(got, vec![Some("2".into()), None, Some("1".into())]);
    assert_eq!(int(q(&mut c, &["MSETNX", &a[1], "x", &b[0], "y"])), 0, "b0 exists");
    assert_eq!(int(q(&mut c, &["EXISTS", &a[1], &b[0], &b[0]])), 2, "nothing of the refused MSETNX");
    assert_eq!(int(q(&mut c, &["MSETNX", &a[1], "x", &b[1], "y"])), 1);
    assert_eq!(int(q(&mut c, &["DEL", &a[1], &b[1], "none"])), 2);
    // RENAME keeps the value, its type and its expiry; RENAMENX refuses.
    q(&mut c, &["RPUSH", &a[1], "p", "q"]);
    q(&mut c, &["PEXPIRE", &a[1], "100000"]);
    assert_eq!(q(&mut c, &["RENAME", &a[1], &b[1]]), redis::Value::Okay);
    assert_eq!(int(q(&mut c, &["EXISTS", &a[1]])), 0);
    let list: Vec<String> = redis::from_redis_value(&q(&mut c, &["LRANGE", &b[1], "0", "-1"])).unwrap();
    assert_eq!(list, ["p", "q"]);
    let ttl = int(q(&mut c, &["PTTL", &b[1]]));
    assert!((90_000..=100_000).contains(&ttl), "the expiry moved with it: {ttl}");
    assert_eq!(int(q(&mut c, &["RENAMENX", &b[1], &a[0]])), 0, "a0 exists");
    let missing = error_text(redis::cmd("RENAME").arg(&a[1]).arg(&b[1]).query::<()>(&mut c));
    assert!(missing.contains("no such key"), "{missing}");
    // LMOVE and RPOPLPUSH move one element; a wrong type changes nothing.
    assert_eq!(text(q(&mut c, &["LMOVE", &b[1], &a[1], "LEFT", "RIGHT"])), Some("p".into()));
    assert_eq!(text(q(&mut c, &["RPOPLPUSH", &b[1], &a[1]])), Some("q".into()));
    assert_eq!(int(q(&mut c, &["EXISTS", &b[1]])), 0, "emptied");
    let list: Vec<String> = redis::from_redis_value(&q(&mut c, &["LRANGE", &a[1], "0", "-1"])).unwrap();
    assert_eq!(list, ["q", "p"]);
    let wrong = error_text(redis::cmd("LMOVE").arg(&a[1]).arg(&b[0]).arg("LEFT").arg("LEFT").query::<()>(&mut c));
    assert!(wrong.contains("WRONGTYPE"), "{wrong}");
    assert_eq!(int(q(&mut c, &["LLEN", &a[1]])), 2, "nothing popped");
    assert_eq!(q(&mut c, &["LMOVE", "none", &a[1], "LEFT", "LEFT"]), redis::Value::Nil);
    // SMOVE, and the *STORE family on temporary copies at the destination.
    q(&mut c, &["DEL", &a[1]]);
    q(&mut c, &["SADD", &a[1], "m", "n"]);
    q(&mut c, &["SADD", &b[1], "n", "o"]);
    assert_eq!(int(q(&mut c, &["SMOVE", &a[1], &b[1], "m"])), 1);
    assert_eq!(int(q(&mut c, &["SMOVE", &a[1], &b[1], "zz"])), 0);
    let wrong = error_text(redis::cmd("SMOVE").arg(&a[1]).arg(&b[0]).arg("n").query::<()>(&mut c));
    assert!(wrong.contains("WRONGTYPE"), "{wrong}");
    assert_eq!(int(q(&mut c, &["SUNIONSTORE", &a[0], &a[1], &b[1]])), 3, "n, m, o");
    let mut union: Vec<String> = redis::from_redis_value(&q(&mut c, &["SMEMBERS", &a[0]])).unwrap();
    union.sort();
    assert_eq!(union, ["m", "n", "o"]);
    let mut inter: Vec<String> = redis::from_redis_value(&q(&mut c, &["SINTER", &a[1], &b[1]])).unwrap();
    inter.sort();
    assert_eq!(inter, ["n"]);
    q(&mut c, &["ZADD", &a[1].replace('a', "za"), "1", "x"]);
    let (za, zb) = (keys_on(&mut c, "za", 0, 1).remove(0), keys_on(&mut c, "zb", 1, 1).remove(0));
    q(&mut c, &["ZADD", &za, "1", "x", "2", "y"]);
    q(&mut c, &["ZADD", &zb, "10", "y"]);
    assert_eq!(int(q(&mut c, &["ZUNIONSTORE", &zb, "2", &za, &zb])), 2);
    assert_eq!(text(q(&mut c, &["ZSCORE", &zb, "y"])), Some("12".into()));
    q(&mut c, &["PEXPIRE", &za, "100000"]);
    assert_eq!(int(q(&mut c, &["COPY", &za, &b[0], "REPLACE"])), 1);
    assert_eq!(int(q(&mut c, &["ZCARD", &b[0]])), 2);
    let ttl = int(q(&mut c, &["PTTL", &b[0]]));
    assert!((90_000..=100_000).contains(&ttl), "COPY keeps the source's expiry: {ttl}");
    // A missing source moves nothing, whatever the destination holds.
    assert_eq!(int(q(&mut c, &["SMOVE", "missing-set", &b[0], "m"])), 0);
    // No temporary key is left anywhere.
    let keys: Vec<String> = redis::from_redis_value(&q(&mut c, &["KEYS", "*packetstore-across*"])).unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    // A transaction across shards: every command in order, one reply
    // each, SELECT included; a WATCH whose key changed runs nothing.
    let replies: (String, i64, i64, (), Vec<Option<String>>) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(&a[0])
        .arg("t1")
        .cmd("INCR")
        .arg(b[0].replace('b', "cnt"))
        .cmd("DEL")
        .arg(&a[1])
        .arg(&b[1])
        .cmd("MSET")
        .arg(&a[1])
        .arg("m1")
        .arg(&b[1])
        .arg("m2")
        .cmd("MGET")
        .arg(&b[1])
        .arg(&a[0])
        .arg(&a[1])
        .query(&mut c)
        .unwrap();
    assert_eq!(replies.0, "OK");
    assert_eq!((replies.1, replies.2), (1, 2));
    assert_eq!(replies.4, [Some("m2".into()), Some("t1".into()), Some("m1".into())]);
    // SELECT inside it moves the commands after it, and the connection.
    let selected: ((), (), ()) = redis::pipe()
        .atomic()
        .cmd("SELECT")
        .arg(3)
        .cmd("SET")
        .arg(&a[0])
        .arg("in3")
        .cmd("SET")
        .arg(&b[0])
        .arg("in3")
        .query(&mut c)
        .unwrap();
    assert_eq!(selected, ((), (), ()));
    let in3: Vec<String> = redis::cmd("MGET").arg(&a[0]).arg(&b[0]).query(&mut c).unwrap();
    assert_eq!(in3, ["in3", "in3"], "the connection is in database 3");
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    assert_eq!(text(q(&mut c, &["GET", &a[0]])), Some("t1".into()), "database 0 untouched");
    // WATCH of keys on both shards (one is another shard's, whichever
    // shard this connection is on): a write to either fails the EXEC.
    let mut other = server.client();
    for key in [&a[0], &b[0]] {
        let _: () = redis::cmd("WATCH").arg(&a[0]).arg(&b[0]).query(&mut c).unwrap();
        let _: () = redis::cmd("SET").arg(key).arg("changed").query(&mut other).unwrap();
        let aborted: Option<((), ())> = redis::pipe().atomic().set(&a[0], "no").set(&b[0], "no").query(&mut c).unwrap();
        assert_eq!(aborted, None, "{key} changed: nothing ran");
        assert_eq!(text(q(&mut c, &["GET", key])), Some("changed".into()));
    }
    let _: () = redis::cmd("WATCH").arg(&a[0]).arg(&b[0]).query(&mut c).unwrap();
    let ran: Option<((), ())> = redis::pipe().atomic().set(&a[0], "yes").set(&b[0], "yes").query(&mut c).unwrap();
    assert_eq!(ran, Some(((), ())), "nothing changed: it ran");
    // A watch ended (EXEC) is forgotten: a later write fails nothing.
    let _: () = redis::cmd("SET").arg(&b[0]).arg("after").query(&mut other).unwrap();
    let ran: Option<((),)> = redis::pipe().atomic().set(&a[0], "again").query(&mut c).unwrap();
    assert_eq!(ran, Some(((),)));
    // What cannot run across shards inside MULTI is refused, the
    // transaction aborted.
    let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
    let refused =
        error_text(redis::cmd("EVAL").arg("return 1").arg(2).arg(&a[0]).arg(&b[0]).query::<redis::Value>(&mut c));
    assert!(refused.contains("CROSSSLOT"), "{refused}");
    let aborted = error_text(redis::cmd("EXEC").query::<redis::Value>(&mut c));
    assert!(aborted.contains("EXECABORT"), "{aborted}");
}

/// One writer per pair: it sets its `x` and `y` (on different shards) to
/// its own counter until `stop`, with MSET, MULTI/SET/SET/EXEC, EVAL with
/// its keys declared or EVAL without (one of them per pair); each returns
/// the last value answered.
fn writers(server: &Server, pairs: &[(String, String)], stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<u64>> {
    pairs
        .iter()
        .enumerate()
        .map(|(w, (x, y))| {
            let (addr, x, y, stop) = (server.resp, x.clone(), y.clone(), stop.clone());
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
                let mut c = client.get_connection_with_timeout(Duration::from_secs(10)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let start: Option<u64> = redis::cmd("GET").arg(&x).query(&mut c).unwrap_or(None);
                let mut answered = start.unwrap_or(0);
                while !stop.load(Ordering::Relaxed) {
                    let value = answered + 1;
                    let result = match w % 4 {
                        0 => redis::cmd("MSET").arg(&x).arg(value).arg(&y).arg(value).query::<()>(&mut c),
                        1 => redis::pipe().atomic().set(&x, value).set(&y, value).query::<()>(&mut c),
                        // A script with its keys declared, then one whose
                        // keys are not (it runs again across every shard).
                        2 => redis::cmd("EVAL")
                            .arg("redis.call('set', KEYS[1], ARGV[1]); redis.call('set', KEYS[2], ARGV[1])")
                            .arg(2)
                            .arg(&x)
                            .arg(&y)
                            .arg(value)
                            .query::<()>(&mut c),
                        _ => redis::cmd("EVAL")
                            .arg(format!(
                                "redis.call('get', '{x}'); redis.call('get', '{y}'); \
                                 redis.call('set', '{x}', ARGV[1]); redis.call('set', '{y}', ARGV[1])"
                            ))
                            .arg(0)
                            .arg(value)
                            .query::<()>(&mut c),
                    };
                    match result {
                        Ok(()) => answered = value,
                        Err(_) => break,
                    }
                }
                answered
            })
        })
        .collect()
}

fn read_pair(c: &mut redis::Connection, x: &str, y: &str) -> redis::RedisResult<(Option<u64>, Option<u64>)> {
    redis::cmd("MGET").arg(x).arg(y).query(c)
}

/// Four pairs of keys, `x` on shard 0 and `y` on shard 1.
fn pairs(c: &mut redis::Connection) -> Vec<(String, String)> {
    keys_on(c, "x", 0, 4).into_iter().zip(keys_on(c, "y", 1, 4)).collect()
}

/// After a restart: each pair whole, at or past what its writer was
/// answered.
fn check_pairs(server: &Server, pairs: &[(String, String)], answered: &[u64]) {
    let mut c = server.client();
    for ((x, y), &answered) in pairs.iter().zip(answered) {
        let (vx, vy) = read_pair(&mut c, x, y).unwrap();
        assert_eq!(vx, vy, "the restart shows half an MSET");
        assert!(vx.unwrap_or(0) >= answered, "an answered MSET was lost: {vx:?} < {answered}");
    }
}

#[test]
fn no_client_sees_half_an_mset_across_shards_even_after_kill_9() {
    let pools = ShardPools::new("across-atomic", 2);
    let server = start(&pools);
    let pairs = pairs(&mut server.client());
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writers(&server, &pairs, &stop);
    // Readers on both shards (connections are spread over them).
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (addr, pairs, stop) = (server.resp, pairs.clone(), stop.clone());
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
                let mut c = client.get_connection_with_timeout(Duration::from_secs(10)).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    let (x, y) = &pairs[reads % pairs.len()];
                    let (vx, vy) = read_pair(&mut c, x, y).unwrap();
                    assert_eq!(vx, vy, "an MGET saw half an MSET");
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let reads: usize = readers.into_iter().map(|h| h.join().expect("reader")).sum();
    let answered: Vec<u64> = writing.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(reads > 100 && answered.iter().all(|&n| n > 20), "{reads} reads, {answered:?} writes");
    // kill -9 under load, restarted at once.
    stop.store(false, Ordering::Relaxed);
    let writing = writers(&server, &pairs, &stop);
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    let answered: Vec<u64> = writing.into_iter().map(|h| h.join().unwrap()).collect();
    check_pairs(&start(&pools), &pairs, &answered);
}

/// A stop (SIGTERM) under a load of commands across shards ends the
/// server: no coordinator waits forever for a shard whose loop has ended;
/// what was answered is there after the restart, whole.
#[test]
fn a_stop_under_commands_across_shards_ends_the_server() {
    let pools = ShardPools::new("across-stop", 2);
    let mut server = start(&pools);
    let pairs = pairs(&mut server.client());
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writers(&server, &pairs, &stop);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    assert!(server.wait_exit(Duration::from_secs(20)), "the server did not stop");
    let answered: Vec<u64> = writing.into_iter().map(|h| h.join().expect("writer")).collect();
    check_pairs(&start(&pools), &pairs, &answered);
}

/// A stream moves between shards whole: RENAME and COPY of a stream whose
/// destination another shard owns keep its entries, its last id, its
/// consumer groups, their consumers and pending entries (they travel in a
/// payload of packetstore's own, which a client's DUMP never gets and a
/// client's RESTORE refuses).
#[test]
fn streams_move_between_shards_with_their_groups() {
    let pools = ShardPools::new("across-streams", 2);
    let server = start(&pools);
    let mut c = server.client();
    let from = keys_on(&mut c, "s", 0, 1).remove(0);
    let (to, copy) = {
        let mut on_1 = keys_on(&mut c, "t", 1, 2);
        (on_1.remove(0), on_1.remove(0))
    };
    for i in 1..=5 {
        let _: String = redis::cmd("XADD").arg(&from).arg(format!("{i}-0")).arg("f").arg(i).query(&mut c).unwrap();
    }
    let _: () = redis::cmd("XGROUP").arg("CREATE").arg(&from).arg("g").arg("0").query(&mut c).unwrap();
    let _: redis::Value = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg("alice")
        .arg("COUNT")
        .arg(2)
        .arg("STREAMS")
        .arg(&from)
        .arg(">")
        .query(&mut c)
        .unwrap();
    let _: i64 = redis::cmd("XDEL").arg(&from).arg("5-0").query(&mut c).unwrap();
    let describe = |c: &mut redis::Connection, key: &str| -> String {
        let range: redis::Value = redis::cmd("XRANGE").arg(key).arg("-").arg("+").query(c).unwrap();
        let groups: redis::Value = redis::cmd("XINFO").arg("GROUPS").arg(key).query(c).unwrap();
        let pending: redis::Value = redis::cmd("XPENDING").arg(key).arg("g").query(c).unwrap();
        let info: redis::Value = redis::cmd("XINFO").arg("STREAM").arg(key).query(c).unwrap();
        format!("{range:?} {groups:?} {pending:?} {info:?}")
    };
    let before = describe(&mut c, &from);
    assert!(before.contains("alice"), "{before}");
    // A client never gets packetstore's own payload of a stream.
    let dumped = redis::cmd("DUMP").arg(&from).query::<redis::Value>(&mut c);
    assert!(error_text(dumped).contains("not supported"));
    let copied: i64 = redis::cmd("COPY").arg(&from).arg(&copy).query(&mut c).unwrap();
    assert_eq!(copied, 1);
    let () = redis::cmd("RENAME").arg(&from).arg(&to).query(&mut c).unwrap();
    let exists: i64 = redis::cmd("EXISTS").arg(&from).query(&mut c).unwrap();
    assert_eq!(exists, 0);
    assert_eq!(describe(&mut c, &to), before, "the renamed stream");
    assert_eq!(describe(&mut c, &copy), before, "the copy");
    // The moved stream goes on: ids after its last, its group's pending.
    let id: String = redis::cmd("XADD").arg(&to).arg("*").arg("f").arg("6").query(&mut c).unwrap();
    let ms: u64 = id.split('-').next().unwrap().parse().unwrap();
    assert!(ms > 5, "{id}");
    let acked: i64 = redis::cmd("XACK").arg(&to).arg("g").arg("1-0").arg("2-0").query(&mut c).unwrap();
    assert_eq!(acked, 2);
    let kind: String = redis::cmd("TYPE").arg(&to).query(&mut c).unwrap();
    assert_eq!(kind, "stream");
}
