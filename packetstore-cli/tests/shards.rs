//! Goal: `packetstore serve --shards N --cluster-ports P` is N shards, each
//! a Redis Cluster master of its slot range on its own port: clients that
//! route themselves (redis-py's RedisCluster, old and new, and ioredis's
//! Cluster) work unchanged;
//! a key on the wrong shard is answered MOVED with the right port, keys of
//! several slots CROSSSLOT; every shard keeps its own keys across a
//! graceful stop and a kill -9; a data set refuses to open with another
//! shard count, and a shard's pool refuses to open alone.
//!
//! Method: the real binary on ephemeral ports, pools on /dev/shm; the slots
//! are checked against values Redis computes (CLUSTER KEYSLOT foo = 12182).

mod common;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{error_text, read_response, Server, ShardPools};

fn start(pools: &ShardPools) -> Server {
    let shards = pools.count.to_string();
    Server::start(&pools.first.0, &["--shards", &shards, "--cluster-ports", "0"])
}

/// The cluster ports the listening line names, in shard order.
fn cluster_ports(server: &Server, pools: &ShardPools) -> Vec<u16> {
    cluster_ports_of(&mut server.client(), pools)
}

fn cluster_ports_of(c: &mut redis::Connection, pools: &ShardPools) -> Vec<u16> {
    let slots: Vec<(i64, i64, Vec<redis::Value>)> =
        redis::cmd("CLUSTER").arg("SLOTS").query::<Vec<redis::Value>>(c).unwrap().into_iter().map(slot_entry).collect();
    assert_eq!(slots.len(), usize::from(pools.count));
    let mut next = 0;
    let mut ports = Vec::new();
    for (start, end, node) in slots {
        assert_eq!(start, next, "the ranges are contiguous from slot 0");
        assert!(end >= start);
        next = end + 1;
        let port: i64 = redis::from_redis_value(&node[1]).unwrap();
        ports.push(port as u16);
    }
    assert_eq!(next, 16384, "every slot is served");
    ports
}

fn slot_entry(value: redis::Value) -> (i64, i64, Vec<redis::Value>) {
    let fields: Vec<redis::Value> = redis::from_redis_value(&value).unwrap();
    let node: Vec<redis::Value> = redis::from_redis_value(&fields[2]).unwrap();
    (redis::from_redis_value(&fields[0]).unwrap(), redis::from_redis_value(&fields[1]).unwrap(), node)
}

fn connect(port: u16) -> redis::Connection {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let c = client.get_connection_with_timeout(Duration::from_secs(10)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c
}

/// The shard (index into `ports`) that owns `key`, as the server says.
fn owner(c: &mut redis::Connection, key: &str, pools: &ShardPools) -> usize {
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap();
    (slot * i64::from(pools.count) / 16384) as usize
}

// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn shards_answer_as_redis_cluster_masters_and_redirect() {
    let pools = ShardPools::new("shards-moved", 3);
    let server = start(&pools);
    // The banner says the domain and its warning once, as one shard's does.
    let banner = server.banner().join("\n");
    assert!(banner.starts_with("packetstore serve "), "{banner}");
    assert_eq!(banner.matches("persistence domain: cache-line").count(), 1, "{banner}");
    assert!(banner.contains("not durable across power loss"), "tmpfs is emulated, and says so: {banner}");
    assert_eq!(banner.matches("shard ").count(), 3, "a line per shard: {banner}");
    let ports = cluster_ports(&server, &pools);
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    let mut c = server.client();
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg("foo").query(&mut c).unwrap();
    assert_eq!(slot, 12182, "Redis's slot of foo");
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg("{user1000}.following").query(&mut c).unwrap();
    let same: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg("{user1000}.followers").query(&mut c).unwrap();
    assert_eq!(slot, same, "a hash tag decides the slot");
    // Node ids: 40 hex digits, one per shard, each shard's MYID its own.
    let ids: Vec<String> = shard.iter_mut().map(|s| redis::cmd("CLUSTER").arg("MYID").query(s).unwrap()).collect();
    assert!(ids.iter().all(|id| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())), "{ids:?}");
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 3);
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut shard[1]).unwrap();
    let mine = nodes.lines().find(|l| l.contains("myself")).expect("a myself line");
    assert!(mine.starts_with(&ids[1]) && mine.contains(&format!(":{}@", ports[1])), "{nodes}");
    let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut shard[0]).unwrap();
    assert!(info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3"), "{info}");
    // The right shard runs the command; another answers MOVED to it.
    for i in 0..60 {
        let key = format!("key:{i}");
        let home = owner(&mut c, &key, &pools);
        let _: () = redis::cmd("SET").arg(&key).arg(i).query(&mut shard[home]).unwrap();
        let other = (home + 1) % 3;
        let moved = error_text(redis::cmd("GET").arg(&key).query::<Option<String>>(&mut shard[other]));
        let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(&key).query(&mut c).unwrap();
        assert!(moved.contains(&format!("{slot} 127.0.0.1:{}", ports[home])) && moved.contains("MOVED"), "{moved}");
    }
    let sizes: Vec<i64> = shard.iter_mut().map(|s| redis::cmd("DBSIZE").query(s).unwrap()).collect();
    assert_eq!(sizes.iter().sum::<i64>(), 60, "each key on one shard only: {sizes:?}");
    assert!(sizes.iter().all(|&n| n > 0), "{sizes:?}");
    // Several slots in one command: CROSSSLOT, movable keys included.
    let home = owner(&mut c, "{t}a", &pools);
    let cross = error_text(redis::cmd("MSET").arg("{t}a").arg(1).arg("{u}b").arg(2).query::<()>(&mut shard[home]));
    assert!(cross.contains("CROSSSLOT"), "{cross}");
    let cross =
        error_text(redis::cmd("EVAL").arg("return 1").arg(2).arg("{t}a").arg("{u}b").query::<i64>(&mut shard[home]));
    assert!(cross.contains("CROSSSLOT"), "{cross}");
    let _: () = redis::cmd("MSET").arg("{t}a").arg(1).arg("{t}b").arg(2).query(&mut shard[home]).unwrap();
    let got: Vec<String> = redis::cmd("MGET").arg("{t}a").arg("{t}b").query(&mut shard[home]).unwrap();
    assert_eq!(got, ["1", "2"]);
    let elsewhere = (home + 2) % 3;
    let moved = error_text(
        redis::cmd("EVAL")
            .arg("return redis.call('GET', KEYS[1])")
            .arg(1)
            .arg("{t}a")
            .query::<String>(&mut shard[elsewhere]),
    );
    assert!(moved.contains("MOVED"), "a script's keys are routed too: {moved}");
    // A transaction with a key of another shard is aborted.
    let _: () = redis::cmd("MULTI").query(&mut shard[elsewhere]).unwrap();
    let moved = error_text(redis::cmd("SET").arg("{t}a").arg(3).query::<()>(&mut shard[elsewhere]));
    assert!(moved.contains("MOVED"), "{moved}");
    let aborted = error_text(redis::cmd("EXEC").query::<Vec<String>>(&mut shard[elsewhere]));
    assert!(aborted.contains("EXECABORT"), "{aborted}");
    let kept: String = redis::cmd("GET").arg("{t}a").query(&mut shard[home]).unwrap();
    assert_eq!(kept, "1");
    // Only database 0, as on a cluster.
    let refused = error_text(redis::cmd("SELECT").arg(1).query::<()>(&mut shard[0]));
    assert!(refused.contains("SELECT is not allowed in cluster mode"), "{refused}");
    // The slot's keys, from the shard that holds them.
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg("{t}").query(&mut c).unwrap();
    let count: i64 = redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(&mut shard[home]).unwrap();
    assert_eq!(count, 2);
    let keys: Vec<String> =
        redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(10).query(&mut shard[home]).unwrap();
    assert_eq!(keys, ["{t}a", "{t}b"]);
    let bad = error_text(redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(16384).query::<i64>(&mut shard[0]));
    assert!(bad.contains("Invalid slot"), "{bad}");
    // HTTP on the shared port: whichever shard takes the connection.
    let status = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "v"])
        .arg(format!("http://{}/kv/{{t}}a", server.http))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "204");
}

/// HTTP on the one port serves every shard's keys: a request for a key of
/// another shard than the connection's runs there and is answered in
/// order (pipelined PUTs with a large body, GETs, DELETEs, 404s), and a
/// connection that asks to close closes right after its answer.
#[test]
fn http_serves_every_shards_keys_on_the_one_port() {
    let pools = ShardPools::new("shards-http", 3);
    let server = start(&pools);
    let mut c = server.client();
    let keys: Vec<String> =
        (0..3).map(|s| (0..).map(|i| format!("h{i}")).find(|key| owner(&mut c, key, &pools) == s).unwrap()).collect();
    let large: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let body_of = |round: usize, s: usize| if s == 1 { large.clone() } else { format!("{round}-{s}").into_bytes() };
    // The kernel spreads connections over the shards: on each, two of the
    // three keys are another shard's.
    for round in 0..6 {
        let mut requests = Vec::new();
        for (s, key) in keys.iter().enumerate() {
            let body = body_of(round, s);
            requests.extend_from_slice(
                format!("PUT /kv/{key} HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
            );
            requests.extend_from_slice(&body);
        }
        for key in &keys {
            requests.extend_from_slice(format!("GET /kv/{key} HTTP/1.1\r\n\r\n").as_bytes());
        }
        for _ in 0..2 {
            requests.extend_from_slice(format!("DELETE /kv/{} HTTP/1.1\r\n\r\n", keys[0]).as_bytes());
        }
        requests.extend_from_slice(format!("GET /kv/{} HTTP/1.1\r\n\r\n", keys[0]).as_bytes());
        requests.extend_from_slice(format!("GET /kv/{} HTTP/1.1\r\nConnection: close\r\n\r\n", keys[2]).as_bytes());
        requests.extend_from_slice(format!("GET /kv/{} HTTP/1.1\r\n\r\n", keys[1]).as_bytes());
        let mut stream = TcpStream::connect(server.http).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(&requests).unwrap();
        let mut reader = BufReader::new(stream);
        let mut next = || read_response(&mut reader).map(|(status, _, body)| (status, body));
        for _ in &keys {
            assert_eq!(next(), Some((204, Vec::new())), "round {round}: PUT");
        }
        for s in 0..keys.len() {
            assert_eq!(next(), Some((200, body_of(round, s))), "round {round}: GET of shard {s}'s key");
        }
        assert_eq!(next(), Some((204, Vec::new())), "round {round}: DELETE");
        assert_eq!(next(), Some((404, Vec::new())), "round {round}: DELETE again");
        assert_eq!(next(), Some((404, Vec::new())), "round {round}: GET after DELETE");
        assert_eq!(next(), Some((200, body_of(round, 2))), "round {round}: the last GET before the close");
        assert_eq!(next(), None, "round {round}: closed after the request that asked, the one after it unread");
    }
    // HEAD: the length, no body; and what HTTP wrote is what RESP reads.
    for _ in 0..4 {
        let mut stream = TcpStream::connect(server.http).unwrap();
        let head = format!("HEAD /kv/{} HTTP/1.1\r\nConnection: close\r\n\r\n", keys[1]);
        stream.write_all(head.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("Content-Length: 300000\r\n"), "{response}");
        assert!(response.ends_with("\r\n\r\n"), "no body: {response}");
    }
    let got: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(&mut c).unwrap();
    assert_eq!(got, [None, Some(large), Some(b"5-2".to_vec())]);
}

// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn the_main_port_relays_commands_to_the_shard_of_their_keys() {
    let pools = ShardPools::new("shards-relay", 3);
    let server = Server::start(&pools.first.0, &["--shards", "3", "--cluster-ports", "0", "--requirepass", "pw"]);
    let auth = |c: &mut redis::Connection| redis::cmd("AUTH").arg("pw").query::<()>(c).unwrap();
    let mut c = server.client();
    auth(&mut c);
    let ports = cluster_ports_of(&mut c, &pools);
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    shard.iter_mut().for_each(auth);
    // Client-side caching: on the main port every shard tracks for the
    // client (tests/tracking.rs); on a shard's own cluster port, that shard.
    let _: () = redis::cmd("CLIENT").arg("TRACKING").arg("ON").query(&mut c).unwrap();
    let _: () = redis::cmd("CLIENT").arg("TRACKING").arg("ON").query(&mut shard[0]).unwrap();
    // Every key lands on its own shard, whichever shard took the client.
    for i in 0..120 {
        let _: () = redis::cmd("SET").arg(format!("k{i}")).arg(i).query(&mut c).unwrap();
    }
    for i in 0..120 {
        let key = format!("k{i}");
        let home = owner(&mut c, &key, &pools);
        let value: String = redis::cmd("GET").arg(&key).query(&mut shard[home]).unwrap();
        assert_eq!(value, i.to_string(), "{key} on shard {home}");
        let value: String = redis::cmd("GET").arg(&key).query(&mut c).unwrap();
        assert_eq!(value, i.to_string());
    }
    // A pipeline over every shard keeps its order: each GET sees the SET
    // and INCR before it.
    let mut pipe = redis::pipe();
    for i in 0..200 {
        let key = format!("p{}", i % 37);
        pipe.cmd("SET").arg(&key).arg(i).cmd("INCR").arg(&key).cmd("GET").arg(&key);
    }
    let replies: Vec<redis::Value> = pipe.query(&mut c).unwrap();
    for i in 0..200 {
        let incr: i64 = redis::from_redis_value(&replies[3 * i + 1]).unwrap();
        let get: String = redis::from_redis_value(&replies[3 * i + 2]).unwrap();
        assert_eq!((incr, get), (i as i64 + 1, (i + 1).to_string()), "command {i}");
    }
    // The client's database and protocol travel with its commands.
    let _: () = redis::cmd("SELECT").arg(5).query(&mut c).unwrap();
    for i in 0..30 {
        let _: () = redis::cmd("HSET").arg(format!("h{i}")).arg("f").arg(i).query(&mut c).unwrap();
    }
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let gone: Option<String> = redis::cmd("HGET").arg("h7").arg("f").query(&mut c).unwrap();
    assert_eq!(gone, None, "database 0 has no h7");
    let _: () = redis::cmd("SELECT").arg(5).query(&mut c).unwrap();
    let _: redis::Value = redis::cmd("HELLO").arg(3).query(&mut c).unwrap();
    for i in 0..30 {
        let map: redis::Value = redis::cmd("HGETALL").arg(format!("h{i}")).query(&mut c).unwrap();
        assert!(matches!(&map, redis::Value::Map(m) if m.len() == 1), "a RESP3 map: {map:?}");
    }
    // A write across shards runs in the client's database and protocol.
    let _: () = redis::cmd("MSET").arg("m1").arg("x").arg("m2").arg("y").arg("m3").arg("z").query(&mut c).unwrap();
    let values: Vec<String> = redis::cmd("MGET").arg("m3").arg("m1").arg("m2").query(&mut c).unwrap();
    assert_eq!(values, ["z", "x", "y"]);
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let none: Vec<Option<String>> = redis::cmd("MGET").arg("m1").arg("m2").query(&mut c).unwrap();
    assert_eq!(none, [None, None], "database 0 has none of them");
    let _: () = redis::cmd("SELECT").arg(5).query(&mut c).unwrap();
    // Many clients at once, each reading its own writes.
    let addr = server.resp;
    let threads: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://:pw@{addr}/")).unwrap();
                let mut c = client.get_connection().unwrap();
                for i in 0..300 {
                    let key = format!("t{t}:{i}");
                    let _: () = redis::cmd("SET").arg(&key).arg(i).query(&mut c).unwrap();
                    let value: i64 = redis::cmd("INCR").arg(&key).query(&mut c).unwrap();
                    assert_eq!(value, i + 1);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let sizes: Vec<i64> = shard.iter_mut().map(|s| redis::cmd("DBSIZE").query(s).unwrap()).collect();
    assert_eq!(sizes.iter().sum::<i64>(), 120 + 37 + 1800, "{sizes:?}");
    // A transaction runs on whichever shards its keys are
    // (`tests/across.rs` checks it across them).
    for i in 0..20 {
        let _: () = redis::cmd("MULTI").query(&mut c).unwrap();
        let queued: String = redis::cmd("SET").arg(format!("m{i}")).arg(i).query(&mut c).unwrap();
        assert_eq!(queued, "QUEUED");
        let _: redis::Value = redis::cmd("EXEC").query(&mut c).unwrap();
        let value: i64 = redis::cmd("GET").arg(format!("m{i}")).query(&mut c).unwrap();
        assert_eq!(value, i);
    }
}

/// Replies keep their order and nothing is lost however a relayed command
/// is followed: a local refusal, a malformed request, replies turned off, a
/// value refused on arrival, a shard channel, large values both ways.
// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn relayed_replies_keep_their_order_whatever_follows() {
    let pools = ShardPools::new("shards-relay-order", 3);
    let server = Server::start(&pools.first.0, &["--shards", "3", "--cluster-ports", "0", "--value-size-max", "8MiB"]);
    // With 3 shards, most of 12 keys are another shard's than the one that
    // accepted the connection, and at least one is (asserted at the end).
    let keys: Vec<String> = (0..12).map(|i| format!("o{i}")).collect();
    let mut raw = common::Raw::connect(&server);
    for key in &keys {
        raw.send(&[b"SET", key.as_bytes(), b"1"]).unwrap();
        raw.send(&[b"GET", key.as_bytes(), b"extra"]).unwrap();
        raw.send(&[b"MSET", key.as_bytes(), b"2", b"other-key", b"3"]).unwrap();
        raw.send(&[b"BLPOP", key.as_bytes(), b"1"]).unwrap();
        raw.send(&[b"INCR", key.as_bytes()]).unwrap();
    }
    for key in &keys {
        let replies: Vec<String> = (0..5).map(|_| raw.read().unwrap()).collect();
        assert_eq!(replies[0], "+OK", "{key}: {replies:?}");
        assert!(replies[1].starts_with("-ERR wrong number of arguments"), "{key}: {replies:?}");
        assert!(replies[2].starts_with("-CROSSSLOT") || replies[2] == "+OK", "{key}: {replies:?}");
        assert!(replies[3].starts_with('-') || replies[3].starts_with('*'), "{key}: {replies:?}");
        assert!(replies[4].starts_with(':'), "{key}: {replies:?}");
    }
    // Replies off: a relayed reply is dropped like a local one.
    raw.send(&[b"CLIENT", b"REPLY", b"SKIP"]).unwrap();
    raw.send(&[b"GET", keys[3].as_bytes()]).unwrap();
    raw.send(&[b"PING"]).unwrap();
    assert_eq!(raw.read().unwrap(), "+PONG");
    // A value refused on arrival is refused, not relayed as an empty one.
    let big = vec![b'x'; 9 << 20];
    for key in &keys {
        let refused = raw.call(&[b"SET", key.as_bytes(), &big]).unwrap();
        assert!(refused.starts_with('-'), "{key}: {refused}");
        let len = raw.call(&[b"STRLEN", key.as_bytes()]).unwrap();
        assert_ne!(len, ":0", "{key} kept its value");
    }
    // Shard channels are not relayed; the server goes on.
    for key in &keys {
        let reply = raw.call(&[b"SSUBSCRIBE", key.as_bytes()]).unwrap();
        if reply.starts_with('-') {
            assert!(reply.contains("not relayed between shards yet"), "{reply}");
        } else {
            raw.call(&[b"SUNSUBSCRIBE"]).unwrap();
        }
    }
    // Large values both ways, pipelined: the links do not jam. (A client
    // that writes far more than it reads is paused, relayed or not: it
    // reads each key's replies before the next key.)
    let value = vec![b'v'; 7 << 20];
    for key in &keys[..4] {
        raw.send(&[b"SET", key.as_bytes(), &value]).unwrap();
        raw.send(&[b"GET", key.as_bytes()]).unwrap();
        raw.send(&[b"GET", key.as_bytes()]).unwrap();
        assert_eq!(raw.read().unwrap(), "+OK", "{key}");
        assert_eq!(raw.read().unwrap(), format!("${}", 7 << 20), "{key}");
        assert_eq!(raw.read().unwrap(), format!("${}", 7 << 20), "{key}");
    }
    // A malformed request after relayed ones: their replies first.
    for key in &keys {
        raw.send(&[b"INCR", format!("n{key}").as_bytes()]).unwrap();
    }
    let mut stream = raw_stream(&raw);
    std::io::Write::write_all(&mut stream, b"*x\r\n").unwrap();
    for key in &keys {
        let reply = raw.read().unwrap();
        assert!(reply.starts_with(':'), "{key}: {reply}");
    }
    let error = raw.read().unwrap();
    assert!(error.starts_with("-ERR"), "{error}");
    // A script's calls for any shard's keys are answered, and the replies
    // after it stay in step.
    let mut raw = common::Raw::connect(&server);
    let script = b"return redis.call('GET', ARGV[1])";
    for key in &keys {
        raw.send(&[b"EVAL", script, b"0", key.as_bytes()]).unwrap();
        raw.send(&[b"PING"]).unwrap();
    }
    for key in &keys {
        // Another shard's key too: the script runs again with every shard
        // parked (it had written nothing).
        let reply = raw.read().unwrap();
        assert!(reply.starts_with('$'), "{key}: {reply}");
        assert_eq!(raw.read().unwrap(), "+PONG", "{key}");
    }
    // A script's SELECT stays with its link's command: the next client's
    // relayed command runs in its own database (read back on the owning
    // shard's cluster port, database 0).
    let mut c = server.client();
    let ports = cluster_ports(&server, &pools);
    for key in &keys {
        let tag = format!("{{{key}}}");
        let mut x = common::Raw::connect(&server);
        let selected = x.call(&[b"EVAL", b"redis.call('SELECT','5') return 1", b"1", tag.as_bytes()]).unwrap();
        assert_eq!(selected, ":1");
        let mut y = common::Raw::connect(&server);
        let victim = format!("victim{tag}");
        assert_eq!(y.call(&[b"SET", victim.as_bytes(), b"db0"]).unwrap(), "+OK");
        let mut home = connect(ports[owner(&mut c, &victim, &pools)]);
        let value: Option<String> = redis::cmd("GET").arg(&victim).query(&mut home).unwrap();
        assert_eq!(value.as_deref(), Some("db0"), "{victim} in database 0");
    }
    // At least one key was another shard's (so the above relayed).
    let mut home = std::collections::HashSet::new();
    for key in &keys {
        home.insert(owner(&mut c, key, &pools));
    }
    assert!(home.len() > 1, "keys of several shards: {home:?}, ports {ports:?}");
}

fn raw_stream(raw: &common::Raw) -> std::net::TcpStream {
    raw.stream().try_clone().unwrap()
}

#[test]
fn each_shard_keeps_its_keys_across_restarts_and_refuses_another_count() {
    let pools = ShardPools::new("shards-restart", 2);
    let mut server = start(&pools);
    let ports = cluster_ports(&server, &pools);
    let mut c = server.client();
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    let keys: Vec<(String, usize)> =
        (0..200).map(|i| format!("k{i}")).map(|k| (k.clone(), owner(&mut c, &k, &pools))).collect();
    for (i, (key, home)) in keys.iter().enumerate() {
        let _: () = redis::cmd("SET").arg(key).arg(i).query(&mut shard[*home]).unwrap();
    }
    // A graceful stop, then a kill -9 after more writes.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGINT) };
    assert!(server.wait_exit(Duration::from_secs(30)), "a graceful stop");
    let server = start(&pools);
    let ports = cluster_ports(&server, &pools);
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    for (i, (key, home)) in keys.iter().enumerate() {
        let _: () = redis::cmd("APPEND").arg(key).arg("+").query(&mut shard[*home]).unwrap();
        let value: String = redis::cmd("GET").arg(key).query(&mut shard[*home]).unwrap();
        assert_eq!(value, format!("{i}+"));
    }
    server.kill();
    let server = start(&pools);
    let ports = cluster_ports(&server, &pools);
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    for (i, (key, home)) in keys.iter().enumerate() {
        let value: String = redis::cmd("GET").arg(key).query(&mut shard[*home]).unwrap();
        assert_eq!(value, format!("{i}+"), "acknowledged before the kill -9");
    }
    // SHUTDOWN on one shard stops them all (each checkpointing).
    let mut server = server;
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut shard[1]);
    assert!(server.wait_exit(Duration::from_secs(30)), "SHUTDOWN on shard 1 stops the process");
    drop(shard);
    let server = start(&pools);
    let ports = cluster_ports(&server, &pools);
    let (key, home) = &keys[7];
    let value: String = redis::cmd("GET").arg(key).query(&mut connect(ports[*home])).unwrap();
    assert_eq!(value, "7+");
    server.kill();
    // Another count, or one shard's pool alone: refused, nothing opened.
    let refused = refusal(&pools.first.0, &["--shards", "3", "--cluster-ports", "0"]);
    assert!(refused.contains("is shard 0 of a data set of 2 shards: start with --shards 2"), "{refused}");
    assert!(!pools.path(2).exists(), "nothing was created for the refused start");
    let refused = refusal(&pools.path(1), &[]);
    assert!(refused.contains("is shard 1 of a data set of 2 shards"), "{refused}");
    for bad in ["0", "257", "many"] {
        let refused = refusal(&pools.first.0, &["--shards", bad]);
        assert!(refused.contains(&format!("--shards {bad}: use auto or 1 to 256")), "{refused}");
    }
    // Without --shards (or with auto) the data set's count; without
    // --cluster-ports, any free ports.
    for extra in [&[][..], &["--shards", "auto"]] {
        let server = Server::start(&pools.first.0, extra);
        let mut c = server.client();
        assert_eq!(cluster_ports_of(&mut c, &pools).len(), 2, "{extra:?}");
        let value: String = redis::cmd("GET").arg(key).query(&mut c).unwrap();
        assert_eq!(value, "7+", "{extra:?}");
    }
}

/// `--shards auto` on a new data set: a shard per core this process may
/// use.
#[test]
fn auto_makes_a_shard_per_allowed_core() {
    // At most 4 of this process's cores, whatever the machine.
    let cpus: Vec<String> =
        packetstore::io::cores::allowed_cpus().unwrap().iter().take(4).map(usize::to_string).collect();
    let cores = cpus.len() as u16;
    let pools = ShardPools::new("shards-auto", cores);
    let mut command = Command::new("taskset");
    command.args(["-c", &cpus.join(","), env!("CARGO_BIN_EXE_packetstore"), "serve", "--pool"]);
    command.arg(&pools.first.0).args([
        "--pool-size",
        "64MiB",
        "--log-size",
        "8MiB",
        "--ring-entries",
        "256",
        "--shards",
        "auto",
    ]);
    command.args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"]);
    if cores == 1 {
        // One shard has no cluster view unless asked for.
        command.args(["--cluster-ports", "0"]);
    }
    let server = Server::start_command(&mut command);
    let mut c = server.client();
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut c).unwrap();
    assert_eq!(slots.len(), usize::from(cores));
    assert!((0..cores).all(|i| pools.path(i).exists()));
}

#[test]
fn an_unsharded_pool_refuses_shards_and_opens_with_cluster_ports() {
    let pools = ShardPools::new("shards-plain", 2);
    // An unsharded data set: one shard, whatever the default.
    let server = Server::start(&pools.first.0, &["--shards", "1"]);
    let mut c = server.client();
    let _: () = redis::cmd("SET").arg("foo").arg("bar").query(&mut c).unwrap();
    let disabled = error_text(redis::cmd("CLUSTER").arg("SLOTS").query::<()>(&mut c));
    assert!(disabled.contains("cluster support disabled"), "{disabled}");
    server.kill();
    let refused = refusal(&pools.first.0, &["--shards", "2", "--cluster-ports", "0"]);
    assert!(refused.contains("holds an unsharded data set"), "{refused}");
    assert!(!pools.path(1).exists(), "nothing was created for the refused start");
    // One shard with a cluster port: the same pool, all slots, no MOVED.
    let server = Server::start(&pools.first.0, &["--cluster-ports", "0"]);
    let mut c = server.client();
    let slots: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut c).unwrap();
    assert_eq!(slots.len(), 1);
    let (start, end, node) = slot_entry(slots[0].clone());
    assert_eq!((start, end), (0, 16383));
    let port: i64 = redis::from_redis_value(&node[1]).unwrap();
    let mut cluster = connect(port as u16);
    let value: String = redis::cmd("GET").arg("foo").query(&mut cluster).unwrap();
    assert_eq!(value, "bar");
}

#[test]
fn redis_py_cluster_clients_route_to_the_shards() {
    let pools = ShardPools::new("shards-redis-py", 3);
    let server = start(&pools);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/redis_py_cluster_check.py");
    for version in ["5.0.8", "8.1.0"] {
        let python = common::redis_py(version);
        let output = Command::new(python).arg(script).arg(server.resp.port().to_string()).arg("3").output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "redis-py {version}:\n{stdout}\n{stderr}");
        assert!(stdout.contains("all redis-py cluster checks passed"), "{stdout}");
    }
}

#[test]
fn ioredis_cluster_clients_route_to_the_shards() {
    let pools = ShardPools::new("shards-ioredis", 3);
    let server = start(&pools);
    let module = common::ioredis("6.0.0");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ioredis_cluster_check.js");
    let output = Command::new("node")
        .arg(script)
        .arg(&module)
        .arg(server.resp.port().to_string())
        .arg("3")
        .output()
        .expect("node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "ioredis 6.0.0:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all ioredis cluster checks passed"), "{stdout}");
}

/// Starts `serve` on `pool` with `extra`, expecting it to refuse: its
/// error output.
fn refusal(pool: &Path, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args(["serve", "--pool", pool.to_str().unwrap(), "--pool-size", "256MiB", "--ring-entries", "1024"])
        .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .args(extra)
        .output()
        .unwrap();
    assert!(!output.status.success(), "expected a refusal: {}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// On the main port, a command that spans shards answers as Redis does:
/// DBSIZE, KEYS, SCAN, RANDOMKEY, FLUSHDB and FLUSHALL see every shard's keys; DEL, UNLINK,
/// EXISTS, TOUCH and MGET split by shard and merge, MGET's values in the
/// order of its keys; replies keep their order around them in a pipeline.
// Allowed: one scripted session, asserted step by step.
#[allow(clippy::too_many_lines)]
#[test]
fn commands_that_span_shards_answer_for_every_shard() {
    let pools = ShardPools::new("shards-span", 3);
    let server = start(&pools);
    let mut c = server.client();
    let ports = cluster_ports(&server, &pools);
    let mut shard: Vec<redis::Connection> = ports.iter().map(|&p| connect(p)).collect();
    for i in 0..60 {
        let _: () = redis::cmd("SET").arg(format!("s{i}")).arg(i).query(&mut c).unwrap();
    }
    let homes: std::collections::HashSet<usize> = (0..60).map(|i| owner(&mut c, &format!("s{i}"), &pools)).collect();
    assert_eq!(homes.len(), 3, "the keys are on every shard");
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 60);
    let sizes: Vec<i64> = shard.iter_mut().map(|s| redis::cmd("DBSIZE").query(s).unwrap()).collect();
    assert!(sizes.iter().all(|&n| n > 0 && n < 60), "each shard holds a part: {sizes:?}");
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("s*").query(&mut c).unwrap();
    keys.sort();
    let mut expected: Vec<String> = (0..60).map(|i| format!("s{i}")).collect();
    expected.sort();
    assert_eq!(keys, expected);
    // MGET: values in the order of the keys, a missing one nil.
    let names = ["s3", "s17", "nope", "s42", "s0", "s59", "s3"];
    let values: Vec<Option<String>> = redis::cmd("MGET").arg(&names[..]).query(&mut c).unwrap();
    let wanted: Vec<Option<String>> = names.iter().map(|n| n.strip_prefix('s').map(str::to_string)).collect();
    assert_eq!(values, wanted);
    // SCAN walks every shard (its cursor names the shard), a few keys at a
    // time, and ends at 0 having seen every key once.
    let (mut cursor, mut seen, mut calls) = (0u64, Vec::new(), 0);
    loop {
        let (next, keys): (u64, Vec<String>) =
            redis::cmd("SCAN").arg(cursor).arg("MATCH").arg("s*").arg("COUNT").arg(7).query(&mut c).unwrap();
        seen.extend(keys);
        calls += 1;
        if next == 0 {
            break;
        }
        cursor = next;
        assert!(calls < 100, "SCAN ends");
    }
    seen.sort();
    assert_eq!(seen, expected);
    assert!(calls >= 9, "7 keys at a time over three shards: {calls} calls");
    let random: String = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
    assert!(expected.contains(&random), "{random}");
    let found: i64 = redis::cmd("EXISTS").arg(&names[..]).query(&mut c).unwrap();
    assert_eq!(found, 6, "a key named twice counts twice");
    let touched: i64 = redis::cmd("TOUCH").arg(&["s1", "s2", "s4", "s8", "none"][..]).query(&mut c).unwrap();
    assert_eq!(touched, 4);
    let deleted: i64 = redis::cmd("DEL").arg(&["s1", "s2", "s4", "s8", "none"][..]).query(&mut c).unwrap();
    assert_eq!(deleted, 4);
    let unlinked: i64 = redis::cmd("UNLINK").arg(&["s10", "s11", "s12"][..]).query(&mut c).unwrap();
    assert_eq!(unlinked, 3);
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 53);
    // In a pipeline each reply stays in its place: the GET after the DEL
    // sees the key gone, the one before sees it.
    let mut pipe = redis::pipe();
    pipe.cmd("SET").arg("p1").arg("x").cmd("GET").arg("p1");
    pipe.cmd("DEL").arg(&["p1", "s20", "s30", "s40"][..]).cmd("GET").arg("p1").cmd("DBSIZE").cmd("EXISTS").arg("s21");
    let (set, before, gone, after, size, exists): (String, String, i64, Option<String>, i64, i64) =
        pipe.query(&mut c).unwrap();
    assert_eq!((set.as_str(), before.as_str(), gone, after, size, exists), ("OK", "x", 4, None, 50, 1));
    // RESP3 and another database travel with the parts; FLUSHDB clears only
    // the client's database, FLUSHALL every one, on every shard.
    let _: redis::Value = redis::cmd("HELLO").arg(3).query(&mut c).unwrap();
    let _: () = redis::cmd("SELECT").arg(4).query(&mut c).unwrap();
    for i in 0..30 {
        let _: () = redis::cmd("SET").arg(format!("d{i}")).arg(i).query(&mut c).unwrap();
    }
    let nulls: redis::Value = redis::cmd("MGET").arg(&["d1", "x1", "d2", "x2"][..]).query(&mut c).unwrap();
    let redis::Value::Array(items) = &nulls else { panic!("an array: {nulls:?}") };
    assert!(matches!(items[1], redis::Value::Nil) && matches!(items[3], redis::Value::Nil), "{nulls:?}");
    let _: () = redis::cmd("FLUSHDB").query(&mut c).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 0, "database 4 is empty on every shard");
    let _: () = redis::cmd("SELECT").arg(0).query(&mut c).unwrap();
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 50, "database 0 kept its keys");
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let sizes: Vec<i64> = shard.iter_mut().map(|s| redis::cmd("DBSIZE").query(s).unwrap()).collect();
    assert_eq!(sizes, vec![0, 0, 0]);
    let none: Option<String> = redis::cmd("RANDOMKEY").query(&mut c).unwrap();
    assert_eq!(none, None, "no shard has a key");
    // A message published on the main port reaches subscribers on every
    // shard (each connection landed on some shard), and counts them all.
    let mut subscribers: Vec<redis::Connection> = (0..6).map(|_| server.client()).collect();
    for s in &mut subscribers {
        let _: redis::Value = redis::cmd("SUBSCRIBE").arg("news").query(s).unwrap();
    }
    let _: redis::Value = redis::cmd("HELLO").arg(2).query(&mut c).unwrap();
    let receivers: i64 = redis::cmd("PUBLISH").arg("news").arg("hello").query(&mut c).unwrap();
    assert_eq!(receivers, 6);
    for s in &mut subscribers {
        let message: Vec<redis::Value> = redis::from_redis_value(&s.recv_response().unwrap()).unwrap();
        let text: String = redis::from_redis_value(&message[2]).unwrap();
        assert_eq!(text, "hello");
    }
    // Inside MULTI it is queued, and EXEC runs it on every shard.
    let _: () = redis::cmd("MSET").arg("a1").arg(1).arg("b1").arg(1).arg("c1").arg(1).query(&mut c).unwrap();
    let (set, flushed): (String, String) =
        redis::pipe().atomic().cmd("SET").arg("kept").arg(1).cmd("FLUSHALL").query(&mut c).unwrap();
    assert_eq!((set.as_str(), flushed.as_str()), ("OK", "OK"));
    let size: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(size, 0);
    // A script's keys may be any shards' (they are parked for it).
    let both: i64 = redis::cmd("EVAL").arg("return 1").arg(3).arg("a1").arg("b1").arg("c1").query(&mut c).unwrap();
    assert_eq!(both, 1);
    // LMPOP pops the first non-empty key of any shards (in order).
    let _: () = redis::cmd("RPUSH").arg("c1").arg("x").arg("y").query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH").arg("b1").arg("z").query(&mut c).unwrap();
    let popped: (String, Vec<String>) =
        redis::cmd("LMPOP").arg(3).arg("a1").arg("b1").arg("c1").arg("LEFT").arg("COUNT").arg(5).query(&mut c).unwrap();
    assert_eq!(popped, ("b1".to_string(), vec!["z".to_string()]), "the first non-empty key, whole");
    let left: i64 = redis::cmd("LLEN").arg("c1").query(&mut c).unwrap();
    assert_eq!(left, 2, "the later key untouched");
    // A blocking pop of several shards' keys waits on all of them
    // (`parked.rs`): here, its timeout.
    let mut blocking = redis::cmd("BLMPOP");
    blocking.arg(0.1).arg(3).arg("a1").arg("b1").arg("zz").arg("LEFT");
    assert_eq!(blocking.query::<redis::Value>(&mut c), Ok(redis::Value::Nil));
}

/// CLIENT KILL closes a client blocked on another shard's key at once
/// (Redis frees it): it takes nothing pushed afterwards.
#[test]
fn a_killed_client_blocked_on_another_shards_key_takes_nothing() {
    let pools = ShardPools::new("shards-kill-blocked", 2);
    let server = start(&pools);
    let mut killer = common::Raw::connect(&server);
    let mut watcher = server.client();
    // "a" is shard 1's, "b" shard 0's: one of them is another shard's.
    for key in ["a", "b"] {
        let mut victim = common::Raw::connect(&server);
        let id = victim.call(&[b"CLIENT", b"ID"]).unwrap();
        let id = id.trim_start_matches(':').to_string();
        victim.send(&[b"BLPOP", key.as_bytes(), b"0"]).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let info: String = redis::cmd("INFO").arg("clients").query(&mut watcher).unwrap();
            if info.contains("blocked_clients:1") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{key}: never blocked: {info}");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]).unwrap(), ":1", "{key}");
        assert!(victim.read().is_err(), "{key}: the killed client's connection closes, unanswered");
        assert_eq!(killer.call(&[b"RPUSH", key.as_bytes(), b"x"]).unwrap(), ":1", "{key}");
        assert_eq!(killer.call(&[b"LLEN", key.as_bytes()]).unwrap(), ":1", "{key}: the element stays");
        assert_eq!(killer.call(&[b"DEL", key.as_bytes()]).unwrap(), ":1");
    }
}
