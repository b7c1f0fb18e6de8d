//! The server-side commands applications and Redis's suite use: CLIENT
//! (LIST's fields, KILL closing another connection at once, REPLY OFF and
//! SKIP), keyspace notifications for set, del, expire and expired, INFO's
//! commandstats and errorstats, OBJECT ENCODING, TOUCH and RANDOMKEY.
//!
//! Method: raw RESP connections (exact frames, in order) and the redis
//! crate, against `packetstore serve`.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{Raw, Server, TempPool};

/// One CLIENT LIST line's fields.
fn fields(line: &str) -> HashMap<String, String> {
    line.split(' ')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn client_list(conn: &mut redis::Connection, args: &[&str]) -> Vec<HashMap<String, String>> {
    let text: String = redis::cmd("CLIENT").arg("LIST").arg(args).query(conn).unwrap();
    text.lines().map(fields).collect()
}

#[test]
fn client_list_shows_redis_fields_and_filters() {
    let pool = TempPool::new("clients-list");
    let server = Server::start(&pool.0, &[]);
    let mut me = server.client();
    let mut other = Raw::connect(&server);
    assert_eq!(other.call(&[b"CLIENT", b"SETNAME", b"worker"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"SUBSCRIBE", b"ch"]).unwrap(), "*3 [$9, $2, :1]");
    let list = client_list(&mut me, &[]);
    assert_eq!(list.len(), 2, "{list:?}");
    let order = [
        "id",
        "addr",
        "laddr",
        "fd",
        "name",
        "age",
        "idle",
        "flags",
        "db",
        "sub",
        "psub",
        "ssub",
        "multi",
        "qbuf",
        "qbuf-free",
        "argv-mem",
        "multi-mem",
        "rbs",
        "rbp",
        "obl",
        "oll",
        "omem",
        "tot-mem",
        "events",
        "cmd",
        "user",
        "redir",
        "resp",
    ];
    let text: String = redis::cmd("CLIENT").arg("LIST").query(&mut me).unwrap();
    let names: Vec<&str> = text.lines().next().unwrap().split(' ').map(|p| p.split('=').next().unwrap()).collect();
    assert_eq!(names, order);
    let worker = list.iter().find(|c| c["name"] == "worker").expect("the named connection");
    assert_eq!((worker["sub"].as_str(), worker["flags"].as_str(), worker["cmd"].as_str()), ("1", "P", "subscribe"));
    assert_eq!(worker["laddr"], server.resp.to_string());
    assert!(worker["addr"].starts_with("127.0.0.1:"), "{worker:?}");
    let mine = list.iter().find(|c| c["name"].is_empty()).unwrap();
    assert_eq!((mine["cmd"].as_str(), mine["flags"].as_str(), mine["resp"].as_str()), ("client|list", "N", "2"));
    // The asking connection's query buffer holds its command, as Redis's
    // does: `*2 $6 client $4 list`, 26 bytes; the others' are empty.
    assert_eq!((mine["qbuf"].as_str(), worker["qbuf"].as_str()), ("26", "0"));
    let arity = redis::cmd("CLIENT").arg("KILL").query::<()>(&mut me).unwrap_err().to_string();
    assert!(arity.contains("wrong number of arguments for 'client|kill' command"), "{arity}");
    // Filters: by type, by id.
    let pubsub = client_list(&mut me, &["TYPE", "pubsub"]);
    assert_eq!(pubsub.len(), 1);
    assert_eq!(pubsub[0]["name"], "worker");
    assert_eq!(client_list(&mut me, &["TYPE", "normal"]).len(), 1);
    assert_eq!(client_list(&mut me, &["TYPE", "replica"]).len(), 0);
    let by_id = client_list(&mut me, &["ID", &worker["id"], "999999"]);
    assert_eq!(by_id.len(), 1);
    let error = redis::cmd("CLIENT").arg("LIST").arg("TYPE").arg("bogus").query::<String>(&mut me).unwrap_err();
    assert!(error.to_string().contains("Unknown client type 'bogus'"), "{error}");
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut me).unwrap();
    assert!(info.contains("cmd=client|info") && info.ends_with('\n'), "{info}");
}

#[test]
fn client_kill_closes_the_other_connection_at_once() {
    let pool = TempPool::new("clients-kill");
    let server = Server::start(&pool.0, &[]);
    let mut killer = Raw::connect(&server);
    let mut victim = Raw::connect(&server);
    let id = victim.call(&[b"CLIENT", b"ID"]).unwrap();
    let id = id.trim_start_matches(':').as_bytes().to_vec();
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", &id]).unwrap(), ":1");
    // The victim sent nothing: it is closed because it was woken.
    assert!(victim.read().is_err(), "the killed connection is still open");
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", &id]).unwrap(), ":0");
    // The old form, by address; SKIPME spares the caller.
    let mut me = server.client();
    let mut second = Raw::connect(&server);
    assert_eq!(second.call(&[b"CLIENT", b"SETNAME", b"second"]).unwrap(), "+OK");
    let list = client_list(&mut me, &[]);
    let addr = list.iter().find(|c| c["name"] == "second").unwrap()["addr"].clone();
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", addr.as_bytes()]).unwrap(), "+OK");
    assert!(second.read().is_err());
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", addr.as_bytes()]).unwrap(), "-ERR No such client");
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"TYPE", b"normal"]).unwrap(), ":1");
    assert_eq!(killer.call(&[b"PING"]).unwrap(), "+PONG");
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"ID", b"0"]).unwrap(), "-ERR client-id should be greater than 0");
    assert_eq!(killer.call(&[b"CLIENT", b"KILL", b"USER", b"nobody"]).unwrap(), "-ERR No such user 'nobody'");
}

#[test]
fn client_reply_off_and_skip_drop_replies() {
    let pool = TempPool::new("clients-reply");
    let server = Server::start(&pool.0, &[]);
    let mut client = Raw::connect(&server);
    client.send(&[b"CLIENT", b"REPLY", b"OFF"]).unwrap();
    client.send(&[b"SET", b"k", b"v"]).unwrap();
    client.send(&[b"GET", b"nope"]).unwrap();
    assert_eq!(client.call(&[b"CLIENT", b"REPLY", b"ON"]).unwrap(), "+OK");
    assert_eq!(client.call(&[b"GET", b"k"]).unwrap(), "$1");
    client.send(&[b"CLIENT", b"REPLY", b"SKIP"]).unwrap();
    client.send(&[b"INCR", b"n"]).unwrap();
    assert_eq!(client.call(&[b"INCR", b"n"]).unwrap(), ":2");
    // Subscriptions confirm even with replies off, as Redis pushes them.
    client.send(&[b"CLIENT", b"REPLY", b"OFF"]).unwrap();
    assert_eq!(client.call(&[b"SUBSCRIBE", b"ch"]).unwrap(), "*3 [$9, $2, :1]");
    // Messages arrive too; the (dropped) PING before it answers nothing.
    client.send(&[b"PING"]).unwrap();
    let mut publisher = Raw::connect(&server);
    assert_eq!(publisher.call(&[b"PUBLISH", b"ch", b"hi"]).unwrap(), ":1");
    assert_eq!(client.read().unwrap(), "*3 [$7, $2, $2]");
    // RESET turns replies back on and answers.
    assert_eq!(client.call(&[b"RESET"]).unwrap(), "+RESET");
    assert_eq!(client.call(&[b"PING"]).unwrap(), "+PONG");
}

#[test]
fn keyspace_notifications_reach_a_subscriber() {
    let pool = TempPool::new("clients-notify");
    let server = Server::start(&pool.0, &[]);
    let mut writer = server.client();
    let mut subscriber = server.client();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.psubscribe("__key*__:*").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Off by default: this SET publishes nothing.
    let _: () = redis::cmd("SET").arg("quiet").arg("1").query(&mut writer).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("KEA").query(&mut writer).unwrap();
    let flags: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("notify-keyspace-events").query(&mut writer).unwrap();
    assert_eq!(flags[1], "AKE");
    let _: () = redis::cmd("SET").arg("foo").arg("bar").query(&mut writer).unwrap();
    let _: i64 = redis::cmd("EXPIRE").arg("foo").arg("100").query(&mut writer).unwrap();
    let _: i64 = redis::cmd("DEL").arg("foo").query(&mut writer).unwrap();
    let _: () = redis::cmd("SET").arg("short").arg("x").arg("PX").arg("50").query(&mut writer).unwrap();
    let mut got = Vec::new();
    for _ in 0..10 {
        let message = pubsub.get_message().unwrap();
        got.push(format!("{} {}", message.get_channel_name(), message.get_payload::<String>().unwrap()));
    }
    let expected = [
        "__keyspace@0__:foo set",
        "__keyevent@0__:set foo",
        "__keyspace@0__:foo expire",
        "__keyevent@0__:expire foo",
        "__keyspace@0__:foo del",
        "__keyevent@0__:del foo",
        "__keyspace@0__:short set",
        "__keyevent@0__:set short",
        "__keyspace@0__:short expire",
        "__keyevent@0__:expire short",
    ];
    assert_eq!(got, expected);
    // The expiry tick's deletion is an `expired` event.
    let mut expired = Vec::new();
    for _ in 0..2 {
        let message = pubsub.get_message().unwrap();
        expired.push(format!("{} {}", message.get_channel_name(), message.get_payload::<String>().unwrap()));
    }
    assert_eq!(expired, ["__keyspace@0__:short expired", "__keyevent@0__:expired short"]);
    let error = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("Kq").query::<()>(&mut writer);
    assert!(error.unwrap_err().to_string().contains("Invalid event class character"));
}

#[test]
fn info_counts_commands_and_errors() {
    let pool = TempPool::new("clients-info");
    let server = Server::start(&pool.0, &[]);
    let mut client = server.client();
    for _ in 0..3 {
        let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut client).unwrap();
    }
    assert!(redis::cmd("SET").arg("k").query::<()>(&mut client).is_err());
    assert!(redis::cmd("INCR").arg("k").query::<i64>(&mut client).is_err());
    let stats: String = redis::cmd("INFO").arg("commandstats").arg("errorstats").query(&mut client).unwrap();
    let line = |prefix: &str| stats.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_string();
    assert!(line("cmdstat_set:").starts_with("cmdstat_set:calls=3,"), "{stats}");
    assert!(line("cmdstat_set:").ends_with(",rejected_calls=1,failed_calls=0"), "{stats}");
    assert!(line("cmdstat_incr:").ends_with(",rejected_calls=0,failed_calls=1"), "{stats}");
    assert_eq!(line("errorstat_ERR:"), "errorstat_ERR:count=2");
    assert!(!stats.contains("# Server"));
    let default: String = redis::cmd("INFO").query(&mut client).unwrap();
    assert!(default.contains("used_cpu_user:") && !default.contains("cmdstat_"));
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut client).unwrap();
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut client).unwrap();
    assert!(!stats.contains("cmdstat_set"), "{stats}");
}

#[test]
fn object_encoding_touch_and_randomkey() {
    let pool = TempPool::new("clients-object");
    let server = Server::start(&pool.0, &[]);
    let mut client = server.client();
    let long = "x".repeat(1000);
    for (key, value) in [("n", "12345"), ("s", "hello"), ("l", long.as_str()), ("z", "007")] {
        let _: () = redis::cmd("SET").arg(key).arg(value).query(&mut client).unwrap();
    }
    let _: i64 = redis::cmd("HSET").arg("h").arg("f").arg("v").query(&mut client).unwrap();
    let encoding = |client: &mut redis::Connection, key: &str| -> Option<String> {
        redis::cmd("OBJECT").arg("ENCODING").arg(key).query(client).unwrap()
    };
    assert_eq!(encoding(&mut client, "n").as_deref(), Some("int"));
    assert_eq!(encoding(&mut client, "s").as_deref(), Some("embstr"));
    assert_eq!(encoding(&mut client, "z").as_deref(), Some("embstr"));
    assert_eq!(encoding(&mut client, "l").as_deref(), Some("raw"));
    assert_eq!(encoding(&mut client, "h").as_deref(), Some("hashtable"));
    assert_eq!(encoding(&mut client, "none"), None);
    let refcount: i64 = redis::cmd("OBJECT").arg("REFCOUNT").arg("s").query(&mut client).unwrap();
    assert_eq!(refcount, 1);
    let freq = redis::cmd("OBJECT").arg("FREQ").arg("s").query::<i64>(&mut client).unwrap_err();
    assert!(freq.to_string().contains("An LFU maxmemory policy is not selected"), "{freq}");
    let touched: i64 = redis::cmd("TOUCH").arg("n").arg("s").arg("none").query(&mut client).unwrap();
    assert_eq!(touched, 2);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let key: String = redis::cmd("RANDOMKEY").query(&mut client).unwrap();
        seen.insert(key);
    }
    assert_eq!(seen.len(), 5, "{seen:?}");
    let _: () = redis::cmd("FLUSHALL").query(&mut client).unwrap();
    let none: Option<String> = redis::cmd("RANDOMKEY").query(&mut client).unwrap();
    assert_eq!(none, None);
}

#[test]
fn new_key_events_fire_once_per_created_key() {
    let pool = TempPool::new("clients-new");
    let server = Server::start(&pool.0, &[]);
    let mut writer = server.client();
    let mut subscriber = server.client();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.psubscribe("*").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("notify-keyspace-events").arg("En").query(&mut writer).unwrap();
    let _: () = redis::cmd("SET").arg("foo").arg("bar").query(&mut writer).unwrap();
    let _: () = redis::cmd("SET").arg("foo").arg("baz").query(&mut writer).unwrap();
    let _: i64 = redis::cmd("INCR").arg("counter").query(&mut writer).unwrap();
    let _: () = redis::cmd("MSET").arg("foo").arg("1").arg("m").arg("2").query(&mut writer).unwrap();
    let _: i64 = redis::cmd("SETBIT").arg("bits").arg("3").arg("1").query(&mut writer).unwrap();
    let mut got = Vec::new();
    for _ in 0..4 {
        let message = pubsub.get_message().unwrap();
        got.push(format!("{} {}", message.get_channel_name(), message.get_payload::<String>().unwrap()));
    }
    assert_eq!(
        got,
        ["__keyevent@0__:new foo", "__keyevent@0__:new counter", "__keyevent@0__:new m", "__keyevent@0__:new bits"]
    );
}
