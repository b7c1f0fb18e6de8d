//! Client-side caching as Redis 7.0 serves it (CLIENT TRACKING): a RESP3
//! client hears once of each key it read that changes, after the reply of
//! its own command that changed it; OPTIN tracks only after CLIENT CACHING
//! YES; a RESP2 client redirects to a subscriber of `__redis__:invalidate`;
//! BCAST hears of every key under its prefixes; a flush invalidates
//! everything with a null; a gone redirect is reported; the key table
//! stays within `tracking-table-max-keys`, invalidating what it drops.
//!
//! Method: raw RESP connections against `packetstore serve`; the reply
//! summaries (`common::read_reply`) show key lengths, so the keys here
//! differ in length.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Server, TempPool};

/// A RESP3 push `invalidate` naming one key of `len` bytes.
fn invalidate_one(len: usize) -> String {
    format!(">2 [$10, *1 [${len}]]")
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
    let pool = TempPool::new("tracking-redirect");
    let server = Server::start(&pool.0, &[]);
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
    assert_eq!(listener.read().unwrap(), "*3 [$7, $20, *2 [$6, $7]]");
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
    let mut lengths = Vec::new();
    for _ in 0..2 {
        let message = reader.read().unwrap();
        let len = message.trim_start_matches(">2 [$10, *1 [$").trim_end_matches("]]");
        lengths.push(len.parse::<usize>().unwrap_or_else(|_| panic!("not an invalidation: {message}")));
    }
    lengths.sort();
    lengths.dedup();
    assert_eq!(lengths.len(), 2, "the same key invalidated twice");
    assert_eq!(reader.call(&[b"PING"]).unwrap(), "+PONG");
    let mut info = redis::Client::open(format!("redis://{}/", server.resp)).unwrap().get_connection().unwrap();
    let stats: String = redis::cmd("INFO").arg("STATS").query(&mut info).unwrap();
    assert!(stats.contains("tracking_total_keys:1\r\n"), "{stats}");
    let clients: String = redis::cmd("INFO").arg("CLIENTS").query(&mut info).unwrap();
    assert!(clients.contains("tracking_clients:1\r\n"), "{clients}");
}
