//! Client-side caching as Redis 7.0 serves it (CLIENT TRACKING): a RESP3
//! client hears once of each key it read that changes, after the reply of
//! its own command that changed it; OPTIN tracks only after CLIENT CACHING
//! YES; a RESP2 client redirects to a subscriber of `__redis__:invalidate`;
//! BCAST hears of every key under its prefixes; a flush invalidates
//! everything with a null; a gone redirect is reported; the key table
//! stays within `tracking-table-max-keys`, invalidating what it drops.
//!
//! The same holds on the main port of a sharded server whatever shards
//! the reader, the writer, the redirect and the key are on.
//!
//! Method: raw RESP connections against `packetstore serve`; the reply
//! summaries (`common::read_reply`) show key lengths, so the keys here
//! differ in length. With `--shards 2`, connections are made until one is
//! on the shard wanted (a client id's parity names its shard) and keys are
//! chosen by CLUSTER KEYSLOT.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Server, ShardPools, TempPool};

/// A RESP3 push `invalidate` naming one key of `len` bytes.
fn invalidate_one(len: usize) -> String {
    format!(">2 [$10, *1 [${len}]]")
}

/// The key lengths of the next `n` one-key invalidations `reader` hears,
/// each once (a key invalidated twice shows as fewer).
fn distinct_invalidated_lengths(reader: &mut Raw, n: usize) -> Vec<usize> {
    let mut lengths = Vec::new();
    for _ in 0..n {
        let message = reader.read().unwrap();
        let len = message.trim_start_matches(">2 [$10, *1 [$").trim_end_matches("]]");
        lengths.push(len.parse::<usize>().unwrap_or_else(|_| panic!("not an invalidation: {message}")));
    }
    lengths.sort();
    lengths.dedup();
    lengths
}

fn resp3_tracking(server: &Server, options: &[&[u8]]) -> Raw {
    let mut client = Raw::connect(server);
    assert!(client.call(&[b"HELLO", b"3"]).unwrap().starts_with('%'));
    let mut args: Vec<&[u8]> = vec![b"CLIENT", b"TRACKING", b"ON"];
    args.extend_from_slice(options);
    assert_eq!(client.call(&args).unwrap(), "+OK");
    client
}

#[test]
fn a_read_key_is_invalidated_once_and_after_the_reply_of_the_write() {
    let pool = TempPool::new("tracking-resp3");
    let server = Server::start(&pool.0, &[]);
    let mut reader = resp3_tracking(&server, &[]);
    let mut writer = Raw::connect(&server);
    assert_eq!(writer.call(&[b"SET", b"k1", b"a"]).unwrap(), "+OK");
    assert_eq!(reader.call(&[b"GET", b"k1"]).unwrap(), "$1");
    assert_eq!(writer.call(&[b"SET", b"k1", b"b"]).unwrap(), "+OK");
    // Pushed without the reader asking.
    assert_eq!(reader.read().unwrap(), invalidate_one(2));
    // The entry went with the message: a second write says nothing.
    assert_eq!(writer.call(&[b"SET", b"k1", b"c"]).unwrap(), "+OK");
    assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
    // Its own write: the reply first, then the invalidation.
    assert_eq!(reader.call(&[b"HGET", b"hash3", b"f"]).unwrap(), "_");
    assert_eq!(reader.call(&[b"HSET", b"hash3", b"f", b"1"]).unwrap(), ":1");
    assert_eq!(reader.read().unwrap(), invalidate_one(5));
    // OPTIN: only the command after CLIENT CACHING YES is tracked.
    assert_eq!(reader.call(&[b"CLIENT", b"TRACKING", b"OFF"]).unwrap(), "+OK");
    assert_eq!(reader.call(&[b"CLIENT", b"TRACKING", b"ON", b"OPTIN"]).unwrap(), "+OK");
    assert_eq!(reader.call(&[b"GET", b"k1"]).unwrap(), "$1");
    assert_eq!(reader.call(&[b"CLIENT", b"CACHING", b"YES"]).unwrap(), "+OK");
    assert_eq!(reader.call(&[b"GET", b"four"]).unwrap(), "_");
    assert_eq!(writer.call(&[b"MSET", b"k1", b"d", b"four", b"e"]).unwrap(), "+OK");
    assert_eq!(reader.read().unwrap(), invalidate_one(4));
    assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
}

#[test]
fn redirect_bcast_flush_and_a_broken_redirect() {
    for shards in ["1", "2"] {
        redirect_bcast_flush_and_a_broken_redirect_on(shards);
    }
}

fn redirect_bcast_flush_and_a_broken_redirect_on(shards: &str) {
    let pool = TempPool::new("tracking-redirect");
    let server = Server::start(&pool.0, &["--shards", shards]);
    let mut listener = Raw::connect(&server);
    let id = listener.call(&[b"CLIENT", b"ID"]).unwrap();
    let id = id.trim_start_matches(':').to_string();
    assert_eq!(listener.call(&[b"SUBSCRIBE", b"__redis__:invalidate"]).unwrap(), "*3 [$9, $20, :1]");
    let mut client = Raw::connect(&server);
    let on = [b"CLIENT".as_slice(), b"TRACKING", b"ON", b"REDIRECT", id.as_bytes()];
    assert_eq!(client.call(&on).unwrap(), "+OK");
    let mut admin = redis::Client::open(format!("redis://{}/", server.resp)).unwrap().get_connection().unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).unwrap();
    assert!(list.lines().any(|l| l.contains(" flags=t ") && l.contains(&format!(" redir={id} "))), "{list}");
    assert_eq!(client.call(&[b"CLIENT", b"GETREDIR"]).unwrap(), format!(":{id}"));
    let mut writer = Raw::connect(&server);
    assert_eq!(client.call(&[b"GET", b"key"]).unwrap(), "$-1");
    assert_eq!(writer.call(&[b"INCR", b"key"]).unwrap(), ":1");
    // RESP2: a message on the channel, the keys as an array.
    assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *1 [$3]]");
    // A flush: a null for every tracking client.
    assert_eq!(writer.call(&[b"FLUSHALL"]).unwrap(), "+OK");
    assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *-1]");
    // BCAST: every key under the prefix, whoever read it, once a turn.
    assert_eq!(client.call(&[b"CLIENT", b"TRACKING", b"OFF"]).unwrap(), "+OK");
    let bcast = [b"CLIENT".as_slice(), b"TRACKING", b"ON", b"BCAST", b"PREFIX", b"user:", b"REDIRECT", id.as_bytes()];
    assert_eq!(client.call(&bcast).unwrap(), "+OK");
    assert_eq!(writer.call(&[b"MSET", b"user:1", b"a", b"other", b"b", b"user:22", b"c"]).unwrap(), "+OK");
    // One message with both keys; with shards, a message from each shard
    // whose key it is (each shard's turn is its own).
    let first = listener.read().unwrap();
    if first != "*3 [$7, $20, *2 [$6, $7]]" {
        let mut both = [first, listener.read().unwrap()];
        both.sort();
        assert_eq!(both, ["*3 [$7, $20, *1 [$6]]", "*3 [$7, $20, *1 [$7]]"]);
    }
    // Overlapping prefixes are refused.
    let overlap = client.call(&[b"CLIENT", b"TRACKING", b"ON", b"BCAST", b"PREFIX", b"us"]).unwrap();
    assert!(overlap.starts_with("-ERR Prefix 'us' overlaps"), "{overlap}");
    // The redirect's connection goes: the client's flags say so.
    drop(listener);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert_eq!(writer.call(&[b"SET", b"user:1", b"x"]).unwrap(), "+OK");
        let info = client.call(&[b"CLIENT", b"TRACKINGINFO"]).unwrap();
        // flags {on, bcast, broken_redirect}: three entries.
        if info.starts_with("*6 [$5, *3") {
            break;
        }
        assert!(Instant::now() < deadline, "the broken redirect is not reported: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_key_table_stays_within_its_limit_and_invalidates_what_it_drops() {
    let pool = TempPool::new("tracking-limit");
    let server = Server::start(&pool.0, &[]);
    let mut reader = resp3_tracking(&server, &[]);
    for key in [b"a".as_slice(), b"bb", b"ccc"] {
        assert_eq!(reader.call(&[b"GET", key]).unwrap(), "_");
    }
    let mut admin = Raw::connect(&server);
    assert_eq!(admin.call(&[b"CONFIG", b"SET", b"tracking-table-max-keys", b"1"]).unwrap(), "+OK");
    // Two of the three keys are dropped, each with its invalidation.
    let lengths = distinct_invalidated_lengths(&mut reader, 2);
    assert_eq!(lengths.len(), 2, "the same key invalidated twice");
    assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
    let mut info = redis::Client::open(format!("redis://{}/", server.resp)).unwrap().get_connection().unwrap();
    let stats: String = redis::cmd("INFO").arg("STATS").query(&mut info).unwrap();
    assert!(stats.contains("tracking_total_keys:1\r\n"), "{stats}");
    let clients: String = redis::cmd("INFO").arg("CLIENTS").query(&mut info).unwrap();
    assert!(clients.contains("tracking_clients:1\r\n"), "{clients}");
}

/// A connection to the shard `shard` of 2, and its client id.
fn raw_on(server: &Server, shard: u64) -> (Raw, String) {
    for _ in 0..200 {
        let mut c = Raw::connect(server);
        let id = c.call(&[b"CLIENT", b"ID"]).unwrap().trim_start_matches(':').to_string();
        if (id.parse::<u64>().unwrap() - 1) % 2 == shard {
            return (c, id);
        }
    }
    panic!("the kernel put 200 connections on one shard");
}

/// A key of `len` bytes (`prefix` then digits) that shard `shard` of 2 owns.
fn key_of_len_on(c: &mut redis::Connection, prefix: &str, len: usize, shard: i64) -> String {
    (0..)
        .map(|n: u64| format!("{prefix}{n:0width$}", width = len - prefix.len()))
        .find(|key| {
            let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap();
            slot * 2 / 16384 == shard
        })
        .expect("a key")
}

fn info_figure(c: &mut redis::Connection, section: &str, name: &str) -> i64 {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    let line = info.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("{name}"));
    line[name.len() + 1..].trim().parse().unwrap()
}

#[test]
fn tracking_holds_across_shards() {
    let pools = ShardPools::new("tracking-shards", 2);
    let server = Server::start(&pools.first.0, &["--shards", "2", "--cluster-ports", "0"]);
    let mut admin = redis::Client::open(format!("redis://{}/", server.resp)).unwrap().get_connection().unwrap();
    // Keys of 6 and 9 bytes on each shard.
    let keys = [
        [key_of_len_on(&mut admin, "s", 6, 0), key_of_len_on(&mut admin, "s", 9, 0)],
        [key_of_len_on(&mut admin, "t", 6, 1), key_of_len_on(&mut admin, "t", 9, 1)],
    ];
    for reader_shard in 0..2 {
        let (mut reader, _) = raw_on(&server, reader_shard);
        assert!(reader.call(&[b"HELLO", b"3"]).unwrap().starts_with('%'));
        assert_eq!(reader.call(&[b"CLIENT", b"TRACKING", b"ON"]).unwrap(), "+OK");
        for (key_shard, [key, _]) in keys.iter().enumerate() {
            for writer_shard in 0..2 {
                let what = format!("reader on {reader_shard}, key on {key_shard}, writer on {writer_shard}");
                let (mut writer, _) = raw_on(&server, writer_shard);
                let read = reader.call(&[b"GET", key.as_bytes()]).unwrap();
                assert!(read == "_" || read == "$1", "{what}: {read}");
                assert_eq!(writer.call(&[b"SET", key.as_bytes(), b"v"]).unwrap(), "+OK", "{what}");
                assert_eq!(reader.read().unwrap(), invalidate_one(6), "{what}");
            }
            // Its own write: the reply, then the invalidation.
            assert_eq!(reader.call(&[b"GET", key.as_bytes()]).unwrap(), "$1");
            assert_eq!(reader.call(&[b"SET", key.as_bytes(), b"w"]).unwrap(), "+OK");
            assert_eq!(reader.read().unwrap(), invalidate_one(6), "own write, key on {key_shard}");
            assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
        }
        // MGET over both shards tracks both keys; DEL of both: one reply,
        // then both messages.
        let (a, b) = (keys[0][1].as_bytes(), keys[1][1].as_bytes());
        assert!(reader.call(&[b"MGET", a, b]).unwrap().starts_with("*2"));
        assert_eq!(reader.call(&[b"DEL", a, b]).unwrap(), ":0");
        assert_eq!(reader.call(&[b"SET", a, b"1"]).unwrap(), "+OK");
        assert_eq!(reader.read().unwrap(), invalidate_one(9));
        assert_eq!(reader.call(&[b"SET", b, b"1"]).unwrap(), "+OK");
        assert_eq!(reader.read().unwrap(), invalidate_one(9));
        assert_eq!(reader.call(&[b"GET", a]).unwrap(), "$1");
        assert_eq!(reader.call(&[b"GET", b]).unwrap(), "$1");
        assert_eq!(reader.call(&[b"DEL", a, b]).unwrap(), ":2");
        assert_eq!(reader.read().unwrap(), invalidate_one(9));
        assert_eq!(reader.read().unwrap(), invalidate_one(9));
        assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
    }
    // Redirects to a client of the other shard, NOLOOP, BCAST, INFO.
    for client_shard in 0..2 {
        let (mut listener, listener_id) = raw_on(&server, 1 - client_shard);
        assert_eq!(listener.call(&[b"SUBSCRIBE", b"__redis__:invalidate"]).unwrap(), "*3 [$9, $20, :1]");
        let (mut client, _) = raw_on(&server, client_shard);
        let (mut writer, _) = raw_on(&server, client_shard);
        let on = [b"CLIENT".as_slice(), b"TRACKING", b"ON", b"REDIRECT", listener_id.as_bytes(), b"NOLOOP"];
        assert_eq!(client.call(&on).unwrap(), "+OK");
        assert_eq!(client.call(&[b"CLIENT", b"GETREDIR"]).unwrap(), format!(":{listener_id}"));
        for [key, _] in &keys {
            assert_eq!(client.call(&[b"SET", key.as_bytes(), b"1"]).unwrap(), "+OK");
            assert_eq!(client.call(&[b"GET", key.as_bytes()]).unwrap(), "$1");
        }
        assert_eq!(info_figure(&mut admin, "stats", "tracking_total_keys"), 2);
        assert_eq!(info_figure(&mut admin, "clients", "tracking_clients"), 1);
        // Its own writes (NOLOOP) say nothing; the writer's are heard.
        assert_eq!(client.call(&[b"SET", keys[0][0].as_bytes(), b"x"]).unwrap(), "+OK");
        assert_eq!(client.call(&[b"SET", keys[1][0].as_bytes(), b"x"]).unwrap(), "+OK");
        assert_eq!(info_figure(&mut admin, "stats", "tracking_total_keys"), 0);
        assert_eq!(client.call(&[b"GET", keys[1][0].as_bytes()]).unwrap(), "$1");
        assert_eq!(writer.call(&[b"SET", keys[1][0].as_bytes(), b"y"]).unwrap(), "+OK");
        assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *1 [$6]]", "redirected from shard {client_shard}");
        // BCAST: every shard's keys under the prefix reach the redirect.
        assert_eq!(client.call(&[b"CLIENT", b"TRACKING", b"OFF"]).unwrap(), "+OK");
        let bcast = [b"CLIENT".as_slice(), b"TRACKING", b"ON", b"BCAST", b"PREFIX", b"s", b"PREFIX", b"t"];
        let mut bcast = bcast.to_vec();
        bcast.extend_from_slice(&[b"REDIRECT", listener_id.as_bytes()]);
        assert_eq!(client.call(&bcast).unwrap(), "+OK");
        assert_eq!(writer.call(&[b"SET", keys[0][1].as_bytes(), b"z"]).unwrap(), "+OK");
        assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *1 [$9]]");
        assert_eq!(writer.call(&[b"SET", keys[1][1].as_bytes(), b"z"]).unwrap(), "+OK");
        assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *1 [$9]]");
        assert_eq!(info_figure(&mut admin, "stats", "tracking_total_prefixes"), 2);
        // A flush: one null, from the client's own shard.
        assert_eq!(writer.call(&[b"FLUSHALL"]).unwrap(), "+OK");
        assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *-1]");
        assert_eq!(listener.call(&[b"PING"]).unwrap(), "*2 [$4, $0]");
        // The client goes: every shard forgets it.
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(5);
        while info_figure(&mut admin, "clients", "tracking_clients") != 0 {
            assert!(Instant::now() < deadline, "a gone client still tracks");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(info_figure(&mut admin, "stats", "tracking_total_prefixes"), 0);
    }
    // A redirect to a client of the other shard that goes: broken.
    let (listener, listener_id) = raw_on(&server, 1);
    let (mut client, _) = raw_on(&server, 0);
    assert!(client.call(&[b"HELLO", b"3"]).unwrap().starts_with('%'));
    let on = [b"CLIENT".as_slice(), b"TRACKING", b"ON", b"REDIRECT", listener_id.as_bytes()];
    assert_eq!(client.call(&on).unwrap(), "+OK");
    assert_eq!(client.call(&[b"GET", keys[1][0].as_bytes()]).unwrap(), "_");
    drop(listener);
    let (mut writer, _) = raw_on(&server, 1);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(writer.call(&[b"SET", keys[1][0].as_bytes(), b"v"]).unwrap(), "+OK");
    assert_eq!(client.read().unwrap(), ">2 [$21, :]".replace(":]", &format!(":{listener_id}]")));
    let info = client.call(&[b"CLIENT", b"TRACKINGINFO"]).unwrap();
    assert!(info.starts_with("%3 [$5, ~2"), "flags on, broken_redirect: {info}");
    // A redirect to no client anywhere is refused.
    let missing = client.call(&[b"CLIENT", b"TRACKING", b"ON", b"REDIRECT", b"999999"]).unwrap();
    assert!(missing.starts_with("-ERR The client ID you want redirect to does not exist"), "{missing}");
}

#[test]
fn the_key_table_limit_is_the_processs_across_shards() {
    let pools = ShardPools::new("tracking-shards-limit", 2);
    let server = Server::start(&pools.first.0, &["--shards", "2", "--cluster-ports", "0"]);
    let mut admin = redis::Client::open(format!("redis://{}/", server.resp)).unwrap().get_connection().unwrap();
    let keys = [
        key_of_len_on(&mut admin, "a", 3, 0),
        key_of_len_on(&mut admin, "a", 4, 0),
        key_of_len_on(&mut admin, "b", 5, 1),
        key_of_len_on(&mut admin, "b", 6, 1),
    ];
    let (mut reader, _) = raw_on(&server, 0);
    assert!(reader.call(&[b"HELLO", b"3"]).unwrap().starts_with('%'));
    assert_eq!(reader.call(&[b"CLIENT", b"TRACKING", b"ON"]).unwrap(), "+OK");
    for key in &keys {
        assert_eq!(reader.call(&[b"GET", key.as_bytes()]).unwrap(), "_");
    }
    assert_eq!(info_figure(&mut admin, "stats", "tracking_total_keys"), 4);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("tracking-table-max-keys").arg("1").query(&mut admin).unwrap();
    // Three of the four keys go, each with its invalidation, not more.
    let lengths = distinct_invalidated_lengths(&mut reader, 3);
    assert_eq!(lengths.len(), 3, "a key invalidated twice");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
    assert_eq!(info_figure(&mut admin, "stats", "tracking_total_keys"), 1);
}

/// A request on the HTTP port for `key`: its status.
fn http(server: &Server, method: &str, key: &str, body: &str) -> u16 {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(server.http).unwrap();
    let head = format!("{method} /kv/{key} HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(format!("{head}{body}").as_bytes()).unwrap();
    common::read_response(&mut std::io::BufReader::new(stream)).expect("a response").0
}

/// An HTTP write is a write: a RESP client tracking the key is told, and a
/// transaction WATCHing it fails; on one shard, and on two, where a request
/// for the other shard's key is relayed there.
#[test]
fn http_writes_invalidate_tracked_keys_and_fail_watchers() {
    for shards in [1u16, 2] {
        let pools = ShardPools::new(&format!("tracking-http-{shards}"), shards);
        let extra: &[&str] = if shards == 1 { &[] } else { &["--shards", "2", "--cluster-ports", "0"] };
        let server = Server::start(&pools.first.0, extra);
        let mut reader = resp3_tracking(&server, &[]);
        let mut watcher = Raw::connect(&server);
        // "a" is shard 1's of 2, "b" shard 0's.
        for key in ["a", "b"] {
            let context = format!("{shards} shards, key {key}");
            assert_eq!(http(&server, "PUT", key, "v1"), 204, "{context}");
            assert_eq!(reader.call(&[b"GET", key.as_bytes()]).unwrap(), "$2", "{context}");
            assert_eq!(http(&server, "PUT", key, "v2"), 204, "{context}");
            assert_eq!(reader.read().unwrap(), invalidate_one(1), "{context}: PUT");
            assert_eq!(reader.call(&[b"GET", key.as_bytes()]).unwrap(), "$2", "{context}");
            assert_eq!(watcher.call(&[b"WATCH", key.as_bytes()]).unwrap(), "+OK");
            assert_eq!(http(&server, "DELETE", key, ""), 204, "{context}");
            assert_eq!(reader.read().unwrap(), invalidate_one(1), "{context}: DELETE");
            assert_eq!(watcher.call(&[b"MULTI"]).unwrap(), "+OK");
            assert_eq!(watcher.call(&[b"SET", key.as_bytes(), b"x"]).unwrap(), "+QUEUED");
            assert_eq!(watcher.call(&[b"EXEC"]).unwrap(), "*-1", "{context}: the watched key was deleted over HTTP");
        }
    }
}
