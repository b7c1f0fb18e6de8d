//! Goal: on the main port of a sharded server, what Redis does on one
//! node works whatever shard a key or a client is on: a blocking command
//! waits on another shard's key (on its client's private link there) and
//! CLIENT UNBLOCK and INFO find it; scripts and functions read and write
//! keys of every shard, declared or not, atomically; EVALSHA finds a
//! script another shard compiled; a busy script makes every shard's
//! clients BUSY and SCRIPT KILL reaches it from any of them; CONFIG SET
//! applies to every shard; SORT's BY, GET and STORE reach other shards'
//! keys; MULTI queues keyless commands of every shard (FLUSHALL). The
//! figures are the server's, not one shard's: INFO's commandstats,
//! errorstats, keyspace and counters, SLOWLOG (one log, newest first),
//! LATENCY HISTOGRAM, CLIENT LIST and KILL, MONITOR.
//!
//! Method: `serve --shards 2`, keys chosen on each shard by CLUSTER
//! KEYSLOT, several connections (spread over both shards by the kernel;
//! a client id's parity names its shard) so that each check meets both
//! cases, its key here and its key there.

mod common;

use std::time::{Duration, Instant};

use common::{error_text, Server, ShardPools};

fn start(pools: &ShardPools) -> Server {
    Server::start(&pools.first.0, &["--shards", "2", "--cluster-ports", "0"])
}

/// A key named `prefix`N that shard `shard` of 2 owns.
fn key_on(c: &mut redis::Connection, prefix: &str, shard: i64) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|key| {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap();
            slot * 2 / 16384 == shard
        })
        .expect("a key")
}

/// Connections until there are two on each shard (client ids: shard i's
/// are i+1 modulo 2), with their shards.
fn clients_on_both(server: &Server) -> Vec<(redis::Connection, i64)> {
    let mut found: Vec<(redis::Connection, i64)> = Vec::new();
    for _ in 0..200 {
        let mut c = server.client();
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut c).unwrap();
        let shard = (id - 1) % 2;
        if found.iter().filter(|(_, s)| *s == shard).count() < 2 {
            found.push((c, shard));
        }
        if found.len() == 4 {
            return found;
        }
    }
    panic!("the kernel put 200 connections on one shard");
}

fn blocked_clients(c: &mut redis::Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
    let line = info.lines().find(|l| l.starts_with("blocked_clients:")).expect("blocked_clients");
    line["blocked_clients:".len()..].trim().parse().unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}: not after 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn blocking_commands_wait_on_another_shards_keys() {
    let pools = ShardPools::new("parked-blocking", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let keys = [key_on(&mut admin, "l", 0), key_on(&mut admin, "l", 1)];
    for (mut c, shard) in clients_on_both(&server) {
        for key in &keys {
            let addr = server.resp;
            let key_for_thread = key.clone();
            let popper = std::thread::spawn(move || {
                let mut c = redis::Client::open(format!("redis://{addr}/")).unwrap().get_connection().unwrap();
                let popped: Option<(String, String)> =
                    redis::cmd("BLPOP").arg(&key_for_thread).arg(10).query(&mut c).unwrap();
                popped
            });
            wait_for("the BLPOP blocks", || blocked_clients(&mut c) == 1);
            let _: i64 = redis::cmd("RPUSH").arg(key).arg("v").query(&mut c).unwrap();
            assert_eq!(popper.join().unwrap(), Some((key.clone(), "v".into())), "client on shard {shard}");
        }
    }
    // CLIENT UNBLOCK, from any shard, finds a client blocked on either.
    for key in &keys {
        let mut waiter = server.client();
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut waiter).unwrap();
        let (key, addr) = (key.clone(), server.resp);
        let waiting = std::thread::spawn(move || {
            redis::cmd("BLPOP")
                .arg(&key)
                .arg(0)
                .query::<Option<(String, String)>>(&mut waiter)
                .map_err(|e| e.to_string())
        });
        wait_for("the BLPOP blocks", || blocked_clients(&mut admin) == 1);
        let mut other = redis::Client::open(format!("redis://{addr}/")).unwrap().get_connection().unwrap();
        let unblocked: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).arg("ERROR").query(&mut other).unwrap();
        assert_eq!(unblocked, 1);
        let answer = waiting.join().unwrap();
        assert!(answer.as_ref().is_err_and(|e| e.contains("UNBLOCKED")), "{answer:?}");
    }
    // A client that goes away while blocked is forgotten there: a push
    // later stays in the list.
    for key in &keys {
        use std::io::Write;
        let mut gone = std::net::TcpStream::connect(server.resp).unwrap();
        write!(gone, "*3\r\n$5\r\nBLPOP\r\n${}\r\n{key}\r\n$1\r\n0\r\n", key.len()).unwrap();
        wait_for("the BLPOP blocks", || blocked_clients(&mut admin) == 1);
        drop(gone);
        wait_for("the client is forgotten", || blocked_clients(&mut admin) == 0);
        let _: i64 = redis::cmd("RPUSH").arg(key).arg("kept").query(&mut admin).unwrap();
        let len: i64 = redis::cmd("LLEN").arg(key).query(&mut admin).unwrap();
        assert_eq!(len, 1, "nobody popped it");
    }
}

/// A blocking command of `args` sent on a connection of its own; its
/// reply, once it comes.
fn blocked_call(server: &Server, args: Vec<String>) -> std::thread::JoinHandle<Result<redis::Value, String>> {
    let addr = server.resp;
    std::thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://{addr}/")).unwrap().get_connection().unwrap();
        let mut command = redis::cmd(&args[0]);
        command.arg(&args[1..]);
        command.query::<redis::Value>(&mut c).map_err(|e| e.to_string())
    })
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|arg| arg.to_string()).collect()
}

/// Blocking pops of keys that several shards own wait on all of them, as
/// on one Redis: the first key written wakes the client, which pops from
/// the first non-empty key in order; the timeout, CLIENT UNBLOCK and MULTI
/// (which never blocks) answer as Redis does; one element pushed serves
/// one of two blocked clients, not both.
#[test]
fn blocking_pops_wait_on_keys_of_several_shards() {
    let pools = ShardPools::new("parked-blocking-across", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let (a, b) = (key_on(&mut admin, "x", 0), key_on(&mut admin, "y", 1));
    let pops: [(&[&str], &str); 6] = [
        (&["BLPOP", &a, &b, "0"], "LPUSH"),
        (&["BRPOP", &a, &b, "0"], "LPUSH"),
        (&["BLMPOP", "0", "2", &a, &b, "LEFT", "COUNT", "2"], "LPUSH"),
        (&["BZPOPMIN", &a, &b, "0"], "ZADD"),
        (&["BZMPOP", "0", "2", &a, &b, "MAX"], "ZADD"),
        (&["BLPOP", &b, &a, "0"], "LPUSH"),
    ];
    for (pop, push) in pops {
        for written in [&a, &b] {
            let waiting = blocked_call(&server, strings(pop));
            wait_for("the pop blocks", || blocked_clients(&mut admin) == 1);
            let mut add = redis::cmd(push);
            match push {
                "ZADD" => add.arg(written).arg(1).arg("m"),
                _ => add.arg(written).arg("m"),
            };
            let _: i64 = add.query(&mut admin).unwrap();
            let got = waiting.join().unwrap().unwrap_or_else(|e| panic!("{pop:?}: {e}"));
            let text = format!("{got:?}");
            assert!(
                text.contains(written.as_str()) && text.contains("\"m\""),
                "{pop:?} after a write of {written}: {text}"
            );
            let _: i64 = redis::cmd("DEL").arg(&a).arg(&b).query(&mut admin).unwrap();
        }
    }
    // Both non-empty: the first key in order, at once.
    let _: i64 = redis::cmd("RPUSH").arg(&b).arg("from-b").query(&mut admin).unwrap();
    let _: i64 = redis::cmd("RPUSH").arg(&a).arg("from-a").query(&mut admin).unwrap();
    let first: (String, String) = redis::cmd("BLPOP").arg(&b).arg(&a).arg(0).query(&mut admin).unwrap();
    assert_eq!(first, (b.clone(), "from-b".to_string()));
    let _: i64 = redis::cmd("DEL").arg(&a).arg(&b).query(&mut admin).unwrap();
    // BLMOVE waits on its source and pushes to a destination of another
    // shard.
    let moving = blocked_call(&server, strings(&["BLMOVE", &a, &b, "LEFT", "RIGHT", "0"]));
    wait_for("BLMOVE blocks", || blocked_clients(&mut admin) == 1);
    let _: i64 = redis::cmd("RPUSH").arg(&a).arg("moved").query(&mut admin).unwrap();
    assert_eq!(moving.join().unwrap(), Ok(redis::Value::BulkString(b"moved".to_vec())));
    let dst: Vec<String> = redis::cmd("LRANGE").arg(&b).arg(0).arg(-1).query(&mut admin).unwrap();
    assert_eq!(dst, ["moved"]);
    let _: i64 = redis::cmd("DEL").arg(&a).arg(&b).query(&mut admin).unwrap();
    // A key written as another type wakes it for nothing: it waits on,
    // and takes the next element pushed (Redis: WRONGTYPE only at the
    // pop's first run).
    for _ in 0..4 {
        let waiting = blocked_call(&server, strings(&["BLPOP", &a, &b, "0"]));
        wait_for("BLPOP blocks", || blocked_clients(&mut admin) == 1);
        let _: () = redis::cmd("SET").arg(&a).arg("a string").query(&mut admin).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(blocked_clients(&mut admin), 1, "still blocked after its key became a string");
        let _: i64 = redis::cmd("RPUSH").arg(&b).arg("after").query(&mut admin).unwrap();
        let got = format!("{:?}", waiting.join().unwrap().unwrap());
        assert!(got.contains("\"after\""), "{got}");
        let _: i64 = redis::cmd("DEL").arg(&a).arg(&b).query(&mut admin).unwrap();
    }
    // The timeout: nil.
    let started = Instant::now();
    let timed_out: Option<(String, String)> = redis::cmd("BLPOP").arg(&a).arg(&b).arg(0.3).query(&mut admin).unwrap();
    assert_eq!(timed_out, None);
    assert!(started.elapsed() >= Duration::from_millis(300), "answered before its timeout");
    // A bad timeout: Redis's error, nothing blocks.
    let negative = error_text(redis::cmd("BLPOP").arg(&a).arg(&b).arg(-1).query::<redis::Value>(&mut admin));
    assert!(negative.contains("timeout is negative"), "{negative}");
    // CLIENT UNBLOCK.
    let mut waiter = server.client();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut waiter).unwrap();
    let (a2, b2) = (a.clone(), b.clone());
    let waiting = std::thread::spawn(move || {
        redis::cmd("BLPOP").arg(&a2).arg(&b2).arg(0).query::<Option<(String, String)>>(&mut waiter).unwrap()
    });
    wait_for("the BLPOP blocks", || blocked_clients(&mut admin) == 1);
    let unblocked: i64 = redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query(&mut admin).unwrap();
    assert_eq!((unblocked, waiting.join().unwrap()), (1, None));
    // In MULTI a blocking pop answers at once.
    let (popped,): (Option<(String, String)>,) =
        redis::pipe().atomic().cmd("BLPOP").arg(&a).arg(&b).arg(0).query(&mut admin).unwrap();
    assert_eq!(popped, None);
    // Two clients blocked, one element each time: one client each.
    let first = blocked_call(&server, strings(&["BLPOP", &a, &b, "0"]));
    let second = blocked_call(&server, strings(&["BLPOP", &b, &a, "0"]));
    wait_for("both block", || blocked_clients(&mut admin) == 2);
    let _: i64 = redis::cmd("RPUSH").arg(&b).arg("one").query(&mut admin).unwrap();
    wait_for("one is served", || blocked_clients(&mut admin) == 1);
    let _: i64 = redis::cmd("RPUSH").arg(&a).arg("two").query(&mut admin).unwrap();
    let got = [first.join().unwrap().unwrap(), second.join().unwrap().unwrap()].map(|v| format!("{v:?}"));
    let has = |element: &str| got.iter().filter(|reply| reply.contains(&format!("\"{element}\""))).count();
    assert_eq!((has("one"), has("two")), (1, 1), "{got:?}");
    let left: i64 = redis::cmd("EXISTS").arg(&a).arg(&b).query(&mut admin).unwrap();
    assert_eq!(left, 0, "each element popped once");
}

/// Scripts that write their own shard's key and then another shard's park
/// that shard as they go, while clients of both shards run such scripts
/// and MSETs across shards at once: none waits on another for good; a
/// script's second write is refused only when two scripts grow into each
/// other's shards at once (TRYAGAIN), and then its first write alone
/// stays: every other shard's counter holds exactly the scripts that
/// answered.
#[test]
fn scripts_that_grow_across_shards_under_contention() {
    let pools = ShardPools::new("parked-grow", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let keys = [key_on(&mut admin, "g", 0), key_on(&mut admin, "h", 1)];
    let rounds = 300;
    let workers: Vec<_> = clients_on_both(&server)
        .into_iter()
        .enumerate()
        .map(|(i, (mut c, shard))| {
            let (here, there) = (keys[shard as usize].clone(), keys[1 - shard as usize].clone());
            std::thread::spawn(move || {
                let (mut answered, mut refused) = (0, 0);
                for round in 0..rounds {
                    if i % 2 == 1 && round % 2 == 0 {
                        let _: () = redis::cmd("MSET")
                            .arg(format!("{here}:m"))
                            .arg(round)
                            .arg(format!("{there}:m"))
                            .arg(round)
                            .query(&mut c)
                            .unwrap();
                        continue;
                    }
                    let grow = format!("redis.call('incr', '{here}:{i}'); return redis.call('incr', '{there}:{i}')");
                    match eval(&mut c, &grow, &[]) {
                        Ok(_) => answered += 1,
                        Err(e) if e.code() == Some("TRYAGAIN") => refused += 1,
                        Err(e) => panic!("worker {i}: {e}"),
                    }
                }
                (i, shard, here, there, answered, refused)
            })
        })
        .collect();
    for worker in workers {
        let (i, shard, here, there, answered, refused) = worker.join().unwrap();
        let first: i64 = redis::cmd("GET").arg(format!("{here}:{i}")).query(&mut admin).unwrap();
        let second: Option<i64> = redis::cmd("GET").arg(format!("{there}:{i}")).query(&mut admin).unwrap();
        assert_eq!(first, answered + refused, "worker {i} on shard {shard}: every first write");
        assert_eq!(second.unwrap_or(0), answered, "worker {i} on shard {shard}: a second write per answer");
        eprintln!("grow: worker {i} on shard {shard}: {answered} answered, {refused} refused");
    }
}

/// A script relayed to its keys' shard that runs past busy-reply-threshold
/// pauses there and resumes to its end, while a MONITOR is connected (the
/// relayed command then carries its client's id, which the paused script
/// keeps): before, it was never resumed and every shard answered BUSY.
#[test]
fn a_relayed_script_that_pauses_ends_while_monitored() {
    let pools = ShardPools::new("parked-monitored-pause", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut admin).unwrap();
    let mut monitor = common::Raw::connect(&server);
    monitor.send(&[b"MONITOR"]).unwrap();
    let long = "redis.call('set', KEYS[1], 'long'); local t = redis.call('time'); \
                local start = t[1] * 1000000 + t[2]; while true do local n = redis.call('time'); \
                if n[1] * 1000000 + n[2] - start > 300000 then break end end; return 'done'";
    for (mut c, shard) in clients_on_both(&server) {
        let key = key_on(&mut admin, "p", 1 - shard);
        let done: String = redis::cmd("EVAL").arg(long).arg(1).arg(&key).query(&mut c).unwrap();
        assert_eq!(done, "done", "client on shard {shard}");
        let pong: String = redis::cmd("PING").query(&mut admin).unwrap();
        assert_eq!(pong, "PONG");
    }
}

/// SCRIPT KILL from a client of the shard a busy script was relayed from
/// reaches it (on a private link: the shared one carries the script, whose
/// later commands wait for its end).
#[test]
fn script_kill_reaches_a_relayed_script_from_its_own_shard() {
    let pools = ShardPools::new("parked-kill-relayed", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut admin).unwrap();
    let mut clients = clients_on_both(&server);
    for shard in [0, 1] {
        let at = clients.iter().position(|(_, s)| *s == shard).unwrap();
        let (mut runner, _) = clients.remove(at);
        let at = clients.iter().position(|(_, s)| *s == shard).unwrap();
        let (mut killer, _) = clients.remove(at);
        let key = key_on(&mut admin, "r", 1 - shard);
        let running = std::thread::spawn(move || {
            let spin = "redis.call('get', KEYS[1]); while true do end";
            redis::cmd("EVAL").arg(spin).arg(1).arg(&key).query::<redis::Value>(&mut runner).map_err(|e| e.to_string())
        });
        wait_for("the script is busy", || {
            redis::cmd("PING").query::<String>(&mut killer).is_err_and(|e| e.to_string().contains("BUSY"))
        });
        let killed: redis::RedisResult<()> = redis::cmd("SCRIPT").arg("KILL").query(&mut killer);
        assert!(killed.is_ok(), "SCRIPT KILL from shard {shard}: {killed:?}");
        let answer = running.join().unwrap();
        assert!(answer.as_ref().is_err_and(|e| e.contains("killed")), "{answer:?}");
        let pong: String = redis::cmd("PING").query(&mut killer).unwrap();
        assert_eq!(pong, "PONG");
    }
}

/// A client blocked on its shard's key, woken (a push on that shard's
/// cluster port) while a script is busy on the other shard, waits for the
/// script's end and then takes the element, as one Redis would serve it
/// after the script: before, it was answered BUSY.
#[test]
fn a_blocked_client_woken_while_another_shard_is_busy_waits() {
    let pools = ShardPools::new("parked-busy-wake", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut admin).unwrap();
    let (a, b) = (key_on(&mut admin, "w", 0), key_on(&mut admin, "v", 1));
    let slots: Vec<(i64, i64, Vec<redis::Value>)> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut admin).unwrap();
    let port_0: i64 = slots
        .iter()
        .find(|(start, _, _)| *start == 0)
        .map(|(_, _, node)| redis::from_redis_value(&node[1]).unwrap())
        .unwrap();
    let mut clients = clients_on_both(&server);
    let (mut waiter, _) = clients.remove(clients.iter().position(|(_, s)| *s == 0).unwrap());
    let (mut runner, _) = clients.remove(clients.iter().position(|(_, s)| *s == 1).unwrap());
    let a2 = a.clone();
    let waiting = std::thread::spawn(move || {
        redis::cmd("BLPOP").arg(&a2).arg(0).query::<(String, String)>(&mut waiter).map_err(|e| e.to_string())
    });
    wait_for("the BLPOP blocks", || blocked_clients(&mut admin) == 1);
    let spin = "redis.call('set', KEYS[1], 1); local t = redis.call('time'); local start = t[1] * 1000000 + t[2]; \
                while true do local n = redis.call('time'); if n[1] * 1000000 + n[2] - start > 600000 then break end end";
    let running =
        std::thread::spawn(move || redis::cmd("EVAL").arg(spin).arg(1).arg(&b).query::<redis::Value>(&mut runner));
    wait_for("the script is busy", || {
        redis::cmd("PING").query::<String>(&mut admin).is_err_and(|e| e.to_string().contains("BUSY"))
    });
    let mut node_0 = redis::Client::open(format!("redis://127.0.0.1:{port_0}/")).unwrap().get_connection().unwrap();
    let _: i64 = redis::cmd("RPUSH").arg(&a).arg("during").query(&mut node_0).unwrap();
    assert_eq!(waiting.join().unwrap(), Ok((a.clone(), "during".to_string())));
    assert!(running.join().unwrap().is_ok());
}

fn eval(c: &mut redis::Connection, script: &str, keys: &[&str]) -> redis::RedisResult<redis::Value> {
    redis::cmd("EVAL").arg(script).arg(keys.len()).arg(keys).query(c)
}

#[test]
fn scripts_read_and_write_every_shard() {
    let pools = ShardPools::new("parked-scripts", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let (a, b) = (key_on(&mut admin, "a", 0), key_on(&mut admin, "b", 1));
    for (i, (mut c, shard)) in clients_on_both(&server).into_iter().enumerate() {
        // Declared keys of both shards.
        let both = "redis.call('set', KEYS[1], ARGV[1]); redis.call('set', KEYS[2], ARGV[1]); \
                    return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2])}";
        let got: Vec<String> = redis::cmd("EVAL").arg(both).arg(2).arg(&a).arg(&b).arg(shard).query(&mut c).unwrap();
        assert_eq!(got, [shard.to_string(), shard.to_string()]);
        // Undeclared keys, as Redis allows outside a cluster: the script
        // runs again across every shard when it meets the other's key
        // before it wrote.
        let undeclared = format!(
            "redis.call('get', '{b}'); redis.call('incr', '{a}'); \
                                  redis.call('incr', '{b}'); return redis.call('mget', '{a}', '{b}')"
        );
        let got: Vec<i64> = redis::from_redis_value(&eval(&mut c, &undeclared, &[]).unwrap()).unwrap();
        assert_eq!(got[0], got[1], "both incremented once, client on shard {shard}");
        assert_eq!(got[0], shard + 1);
        // A call whose keys both shards own, within the script.
        let across = format!("return redis.call('mset', '{a}', 'm', '{b}', 'm')");
        assert_eq!(eval(&mut c, &across, &[]).unwrap(), redis::Value::Okay);
        let got: Vec<String> = redis::cmd("MGET").arg(&a).arg(&b).query(&mut c).unwrap();
        assert_eq!(got, ["m", "m"]);
        // Written here, then another shard's key: that shard is parked
        // then (the script's session grows), and the calls run there.
        let (here, there) = if shard == 0 { (&a, &b) } else { (&b, &a) };
        let late = format!(
            "redis.call('set', '{here}', 'late'); redis.call('set', '{there}', 'there'); \
             return redis.call('get', '{there}')"
        );
        let got: String = redis::from_redis_value(&eval(&mut c, &late, &[]).unwrap()).unwrap();
        assert_eq!(got, "there", "client on shard {shard}");
        let kept: Vec<String> = redis::cmd("MGET").arg(here).arg(there).query(&mut c).unwrap();
        assert_eq!(kept, ["late", "there"]);
        // The same inside MULTI: EXEC's group is the transaction's part.
        let in_exec = format!("redis.call('set', '{here}', 'exec'); return redis.call('set', '{there}', 'exec')");
        let (ran, set): (String, String) = redis::pipe()
            .atomic()
            .cmd("EVAL")
            .arg(&in_exec)
            .arg(0)
            .cmd("SET")
            .arg(here)
            .arg("after")
            .query(&mut c)
            .unwrap();
        assert_eq!((ran.as_str(), set.as_str()), ("OK", "OK"));
        let kept: Vec<String> = redis::cmd("MGET").arg(here).arg(there).query(&mut c).unwrap();
        assert_eq!(kept, ["after", "exec"]);
        // One that grew and then runs past busy-reply-threshold cannot
        // pause (the shards parked for it would serve nobody): it runs to
        // its end, whole.
        let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).query(&mut c).unwrap();
        let long = format!(
            "redis.call('set', '{here}', 'long'); redis.call('set', '{there}', 'long'); \
             local t = redis.call('time'); local start = t[1] * 1000000 + t[2]; \
             while true do local n = redis.call('time'); \
             if n[1] * 1000000 + n[2] - start > 300000 then break end end; return 'done'"
        );
        let done: String = redis::from_redis_value(&eval(&mut c, &long, &[]).unwrap()).unwrap();
        assert_eq!(done, "done");
        let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(5000).query(&mut c).unwrap();
        let kept: Vec<String> = redis::cmd("MGET").arg(here).arg(there).query(&mut admin).unwrap();
        assert_eq!(kept, ["long", "long"]);
        // A script that catches the other shard's refusal (pcall) and
        // writes after it: it still runs again, and writes once.
        // (Its counter hashes with `here`: `{here}` is its tag.)
        let counter = format!("{{{here}}}:count{i}");
        let caught = format!("redis.pcall('get', '{there}'); return redis.call('incr', '{counter}')");
        let once: i64 = redis::from_redis_value(&eval(&mut c, &caught, &[]).unwrap()).unwrap();
        assert_eq!(once, 1, "the write after the caught refusal ran once, client on shard {shard}");
    }
    // EVALSHA finds a script another shard compiled (EVAL or SCRIPT LOAD).
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg("return 'loaded'").query(&mut admin).unwrap();
    let _ = eval(&mut admin, "return 'evaluated'", &[]).unwrap();
    // SHA-1 of "return 'evaluated'", which only EVAL compiled.
    let evaluated_sha = "93663fd5ef955e8a2ca7f51ae1e3b766238304a7";
    for (mut c, _) in clients_on_both(&server) {
        for key in [&a, &b] {
            let got: String = redis::cmd("EVALSHA").arg(&sha).arg(1).arg(key).query(&mut c).unwrap();
            assert_eq!(got, "loaded");
            let got: String = redis::cmd("EVALSHA").arg(evaluated_sha).arg(1).arg(key).query(&mut c).unwrap();
            assert_eq!(got, "evaluated");
        }
    }
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut admin).unwrap();
    for (mut c, _) in clients_on_both(&server) {
        let gone = error_text(redis::cmd("EVALSHA").arg(&sha).arg(1).arg(&b).query::<String>(&mut c));
        assert!(gone.contains("NOSCRIPT"), "SCRIPT FLUSH reached every shard: {gone}");
    }
}

#[test]
fn a_busy_script_makes_every_shard_busy_until_killed_from_anywhere() {
    let pools = ShardPools::new("parked-busy", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg("50").query(&mut admin).unwrap();
    for (mut c, _) in clients_on_both(&server) {
        let threshold: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("busy-reply-threshold").query(&mut c).unwrap();
        assert_eq!(threshold[1], "50", "CONFIG SET reached every shard");
    }
    let mut others = clients_on_both(&server);
    for killer in 0..others.len() {
        let addr = server.resp;
        let script = std::thread::spawn(move || {
            let mut c = redis::Client::open(format!("redis://{addr}/")).unwrap().get_connection().unwrap();
            error_text(eval(&mut c, "while true do end", &[]))
        });
        wait_for("the script is busy", || {
            let busy = |c: &mut redis::Connection| {
                redis::cmd("PING").query::<String>(c).is_err_and(|e| e.code() == Some("BUSY"))
            };
            others.iter_mut().all(|(c, _)| busy(c))
        });
        let _: () = redis::cmd("SCRIPT").arg("KILL").query(&mut others[killer].0).unwrap();
        let ended = script.join().unwrap();
        assert!(ended.contains("killed"), "{ended}");
        for (c, _) in &mut others {
            let pong: String = redis::cmd("PING").query(c).unwrap();
            assert_eq!(pong, "PONG");
        }
    }
}

#[test]
fn sort_reaches_other_shards_keys_and_multi_spans_every_shard() {
    let pools = ShardPools::new("parked-sort", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let (list, dst) = (key_on(&mut admin, "list", 0), key_on(&mut admin, "dst", 1));
    let _: i64 = redis::cmd("RPUSH").arg(&list).arg(1).arg(2).arg(3).query(&mut admin).unwrap();
    // Weights and names: keys spread over both shards.
    for (id, weight) in [(1, 30), (2, 10), (3, 20)] {
        let _: () = redis::cmd("SET").arg(format!("w_{id}")).arg(weight).query(&mut admin).unwrap();
        let _: i64 =
            redis::cmd("HSET").arg(format!("h_{id}")).arg("name").arg(format!("n{id}")).query(&mut admin).unwrap();
    }
    for (mut c, shard) in clients_on_both(&server) {
        let sorted: Vec<String> = redis::cmd("SORT")
            .arg(&list)
            .arg("BY")
            .arg("w_*")
            .arg("GET")
            .arg("h_*->name")
            .arg("GET")
            .arg("#")
            .query(&mut c)
            .unwrap();
        assert_eq!(sorted, ["n2", "2", "n3", "3", "n1", "1"], "client on shard {shard}");
        let stored: i64 = redis::cmd("SORT")
            .arg(&list)
            .arg("BY")
            .arg("w_*")
            .arg("DESC")
            .arg("STORE")
            .arg(&dst)
            .query(&mut c)
            .unwrap();
        assert_eq!(stored, 3);
        let got: Vec<String> = redis::cmd("LRANGE").arg(&dst).arg(0).arg(-1).query(&mut c).unwrap();
        assert_eq!(got, ["1", "3", "2"]);
        let emptied: i64 = redis::cmd("SORT").arg("nothing-here").arg("STORE").arg(&dst).query(&mut c).unwrap();
        assert_eq!(emptied, 0);
        let exists: i64 = redis::cmd("EXISTS").arg(&dst).query(&mut c).unwrap();
        assert_eq!(exists, 0, "an empty result deletes the destination");
    }
    // SORT with patterns inside EXEC runs on the connection's shard, in
    // its group: the server goes on (no shard can be parked there).
    let in_exec: redis::Value =
        redis::pipe().atomic().cmd("SORT").arg(&list).arg("BY").arg("w_*").query(&mut admin).unwrap();
    assert!(matches!(in_exec, redis::Value::Array(_)), "{in_exec:?}");
    let pong: String = redis::cmd("PING").query(&mut admin).unwrap();
    assert_eq!(pong, "PONG");
    // MULTI queues FLUSHALL and CONFIG SET: EXEC runs them on every shard.
    let (a, b) = (key_on(&mut admin, "a", 0), key_on(&mut admin, "b", 1));
    let _: () = redis::cmd("MSET").arg(&a).arg(1).arg(&b).arg(2).query(&mut admin).unwrap();
    let (ok, flushed): (String, String) = redis::pipe()
        .atomic()
        .cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg("4000")
        .cmd("FLUSHALL")
        .query(&mut admin)
        .unwrap();
    assert_eq!((ok.as_str(), flushed.as_str()), ("OK", "OK"));
    let size: i64 = redis::cmd("DBSIZE").query(&mut admin).unwrap();
    assert_eq!(size, 0, "FLUSHALL in EXEC flushed every shard");
    for (mut c, _) in clients_on_both(&server) {
        let threshold: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("busy-reply-threshold").query(&mut c).unwrap();
        assert_eq!(threshold[1], "4000");
    }
}

#[test]
fn keyspace_notifications_reach_subscribers_on_every_shard() {
    let pools = ShardPools::new("parked-notify", 2);
    let server = start(&pools);
    let mut admin = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("E$").query(&mut admin).unwrap();
    let keys = [key_on(&mut admin, "n", 0), key_on(&mut admin, "n", 1)];
    let mut subscribers: Vec<redis::Connection> = clients_on_both(&server).into_iter().map(|(c, _)| c).collect();
    for s in &mut subscribers {
        let _: redis::Value = redis::cmd("SUBSCRIBE").arg("__keyevent@0__:set").query(s).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    // (Each shard learns at its next turn that another has subscribers.)
    std::thread::sleep(Duration::from_millis(300));
    // PUBSUB counts every shard's subscribers.
    let numsub: (String, i64) = redis::cmd("PUBSUB").arg("NUMSUB").arg("__keyevent@0__:set").query(&mut admin).unwrap();
    assert_eq!(numsub.1, 4);
    let channels: Vec<String> = redis::cmd("PUBSUB").arg("CHANNELS").query(&mut admin).unwrap();
    assert_eq!(channels, ["__keyevent@0__:set"], "listed once, whichever shards hold its subscribers");
    for key in &keys {
        let _: () = redis::cmd("SET").arg(key).arg(1).query(&mut admin).unwrap();
        for s in &mut subscribers {
            let message: Vec<redis::Value> = redis::from_redis_value(&s.recv_response().unwrap()).unwrap();
            let got: String = redis::from_redis_value(&message[2]).unwrap();
            assert_eq!(&got, key, "every subscriber hears of every shard's keys");
        }
    }
}

fn info_line(c: &mut redis::Connection, section: &str, prefix: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix} in {info}")).to_string()
}

// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn the_figures_are_every_shards_as_one_servers() {
    let pools = ShardPools::new("parked-figures", 2);
    let server = start(&pools);
    let mut clients = clients_on_both(&server);
    clients.sort_by_key(|(_, shard)| *shard);
    let mut admin = server.client();
    let keys = [key_on(&mut admin, "f", 0), key_on(&mut admin, "f", 1)];
    let _: () = redis::cmd("CONFIG").arg("SET").arg("slowlog-log-slower-than").arg(0).query(&mut admin).unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut admin).unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut admin).unwrap();
    // Two SETs and one GET on each shard's key, from a client of shard 0;
    // a WRONGTYPE on shard 1's key.
    assert_eq!(clients[0].1, 0);
    let mut c = server.client();
    std::mem::swap(&mut c, &mut clients[0].0);
    let c = &mut c;
    for key in &keys {
        let _: () = redis::cmd("SET").arg(key).arg("v").query(c).unwrap();
        let _: () = redis::cmd("SET").arg(key).arg("w").query(c).unwrap();
        let _: String = redis::cmd("GET").arg(key).query(c).unwrap();
    }
    let wrong = error_text(redis::cmd("LPUSH").arg(&keys[1]).arg("x").query::<i64>(c));
    assert!(wrong.contains("WRONGTYPE"), "{wrong}");
    for (other, _) in &mut clients {
        assert!(info_line(other, "commandstats", "cmdstat_set:").starts_with("cmdstat_set:calls=4,"), "set");
        assert!(info_line(other, "commandstats", "cmdstat_get:").starts_with("cmdstat_get:calls=2,"), "get");
        assert!(info_line(other, "commandstats", "cmdstat_lpush:").contains("failed_calls=1"), "lpush");
        assert_eq!(info_line(other, "errorstats", "errorstat_WRONGTYPE:"), "errorstat_WRONGTYPE:count=1");
        assert!(info_line(other, "keyspace", "db0:").starts_with("db0:keys=2,"), "keyspace");
    }
    // SLOWLOG: one log, newest first, whichever shard ran each command.
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut admin).unwrap();
    let _: () = redis::cmd("SET").arg(&keys[1]).arg("1").query(c).unwrap();
    let _: () = redis::cmd("SET").arg(&keys[0]).arg("2").query(c).unwrap();
    let _: String = redis::cmd("GET").arg(&keys[1]).query(c).unwrap();
    type Entry = (i64, i64, i64, Vec<String>, String, String);
    let entries: Vec<Entry> = redis::cmd("SLOWLOG").arg("GET").arg(3).query(c).unwrap();
    let commands: Vec<String> = entries.iter().map(|e| e.3.join(" ")).collect();
    let expected = [format!("GET {}", keys[1]), format!("SET {} 2", keys[0]), format!("SET {} 1", keys[1])];
    assert_eq!(commands, expected);
    assert!(entries.windows(2).all(|w| w[0].0 > w[1].0), "ids newest first");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("slowlog-max-len").arg(2).query(&mut admin).unwrap();
    let _: i64 = redis::cmd("DEL").arg(&keys[1]).query(c).unwrap();
    let len: i64 = redis::cmd("SLOWLOG").arg("LEN").query(c).unwrap();
    assert_eq!(len, 2, "slowlog-max-len is the process's log's");
    // LATENCY HISTOGRAM: every shard's calls.
    let histogram: redis::Value = redis::cmd("LATENCY").arg("HISTOGRAM").arg("set").query(c).unwrap();
    let text = format!("{histogram:?}");
    assert!(text.contains("calls") && text.contains("int(6)"), "{text}");
    // CLIENT LIST lists every shard's clients; CLIENT KILL finds one of the
    // other shard.
    let list: String = redis::cmd("CLIENT").arg("LIST").query(c).unwrap();
    let ids: Vec<u64> = list.lines().filter_map(|l| l.strip_prefix("id=")?.split(' ').next()?.parse().ok()).collect();
    assert!(ids.iter().any(|id| id % 2 == 0) && ids.iter().any(|id| id % 2 == 1), "{list}");
    let victim: i64 = redis::cmd("CLIENT").arg("ID").query(&mut clients[2].0).unwrap();
    assert_eq!(clients[2].1, 1);
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(victim).query(c).unwrap();
    assert_eq!(killed, 1);
    assert!(redis::cmd("PING").query::<String>(&mut clients[2].0).is_err(), "the killed client is gone");
    // MONITOR on one shard sees a command another shard's client ran on
    // its own shard.
    let mut watcher = std::net::TcpStream::connect(server.resp).unwrap();
    watcher.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    use std::io::{BufRead, Write};
    watcher.write_all(b"MONITOR\r\n").unwrap();
    let mut reader = std::io::BufReader::new(watcher.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "+OK\r\n");
    for i in [1, 3] {
        let (other, shard) = &mut clients[i];
        let key = &keys[*shard as usize];
        let _: () = redis::cmd("SET").arg(key).arg("seen").query(other).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.ends_with(&format!("\"SET\" \"{key}\" \"seen\"\r\n")), "{line}");
    }
}
