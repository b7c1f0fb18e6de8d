//! No client command can stop the server (issue 15): every command name
//! the server knows and every one Redis 7.0.15 knows
//! (`fixtures/redis-7.0.15-commands.txt`, from its `COMMAND LIST`), with 0
//! to 4 arguments of assorted shapes, is answered, and PING still answers
//! after each; a bug in a handler (DEBUG PANIC, on a test server) is an
//! error for that client only. Also: COMMAND and its subcommands as Redis 7
//! answers them, transactions (MULTI, EXEC, WATCH), an HTTP request sent to
//! the Redis port is closed and stores nothing, and `--requirepass` guards
//! the HTTP port too.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{Raw, Server, TempPool};

/// Arguments of assorted shapes: empty, numbers at the edges, words that
/// are options of many commands, a 100-byte argument (received into pool
/// buffers, not copied), binary bytes.
fn shapes() -> Vec<Vec<u8>> {
    let mut shapes: Vec<Vec<u8>> = ["", "0", "-1", "1", "9223372036854775807", "-9223372036854775808", "k", "*", "NX"]
        .iter()
        .chain(["EX", "GET", "COUNT", "MATCH", "TYPE", "INFO", "1.5", "field"].iter())
        .map(|s| s.as_bytes().to_vec())
        .collect();
    shapes.push(vec![b'v'; 100]);
    shapes.push(vec![0, 0xff, b'\r', b'\n']);
    shapes
}

/// Every name to try: Redis 7's (a container's subcommand `config|get` is
/// sent as CONFIG GET) and this server's own.
fn command_names(server: &Server) -> Vec<Vec<Vec<u8>>> {
    let fixture = include_str!("fixtures/redis-7.0.15-commands.txt");
    let mut names: Vec<Vec<Vec<u8>>> =
        fixture.lines().map(|line| line.split('|').map(|part| part.as_bytes().to_vec()).collect()).collect();
    let ours = redis::cmd("COMMAND").arg("LIST").query::<Vec<String>>(&mut server.client()).unwrap();
    assert!(ours.len() >= 40, "COMMAND LIST: {ours:?}");
    names.extend(ours.iter().map(|name| vec![name.as_bytes().to_vec()]));
    // QUIT closes the connection (tried last); SHUTDOWN is Redis's only.
    names.retain(|name| name[0] != b"quit" && name[0] != b"shutdown");
    names
}

#[test]
fn no_command_with_up_to_four_arguments_stops_the_server() {
    let pool = TempPool::new("every-command");
    let server = Server::start(&pool.0, &[]);
    let shapes = shapes();
    let mut raw = Raw::connect(&server);
    let mut sent = 0;
    for name in command_names(&server) {
        for argc in 0..=4 {
            // Three arrangements of the shapes per count, all different.
            for rotation in 0..3 {
                let mut args: Vec<&[u8]> = name.iter().map(Vec::as_slice).collect();
                args.extend((0..argc).map(|i| shapes[(i * 7 + rotation * 5 + argc) % shapes.len()].as_slice()));
                let reply = raw.call(&args).unwrap_or_else(|e| panic!("{args:?}: no reply ({e})"));
                assert!(!reply.contains("internal error"), "{args:?}: a handler panicked: {reply}");
                // (Un)subscribing answers once per channel named (at least once).
                if name.len() == 1 && name[0].ends_with(b"subscribe") && !reply.starts_with('-') {
                    for _ in 1..argc.max(1) {
                        raw.read().unwrap_or_else(|e| panic!("{args:?}: a confirmation missing ({e})"));
                    }
                }
                sent += 1;
                // Back to a fresh connection's state: no transaction (MULTI
                // queues commands), no subscription, RESP2 (after HELLO 3).
                assert_eq!(raw.call(&[b"RESET"]).unwrap(), "+RESET", "after {args:?}");
                assert_eq!(raw.call(&[b"PING"]).unwrap(), "+PONG", "after {args:?}");
            }
        }
    }
    assert!(sent > 5_000, "{sent} commands sent");
    eprintln!("{sent} commands sent, each followed by RESET and PING");
    assert_eq!(raw.call(&[b"QUIT"]).unwrap(), "+OK");
    let mut client = server.client();
    assert_eq!(redis::cmd("PING").query::<String>(&mut client).unwrap(), "PONG");
}

#[test]
fn a_handler_that_panics_answers_an_error_and_the_server_goes_on() {
    let pool = TempPool::new("debug-panic");
    let switches = [("PACKETSTORE_ENABLE_TEST_SWITCHES", "1")];
    let server = Server::start_env(&pool.0, &["--simulate-power-failures", "cache-line"], &switches);
    let mut client = server.client();
    redis::cmd("SET").arg("kept").arg("1").query::<()>(&mut client).unwrap();
    let error = redis::cmd("DEBUG").arg("PANIC").query::<()>(&mut client).unwrap_err();
    assert!(error.to_string().contains("internal error in 'debug'"), "{error}");
    assert_eq!(redis::cmd("GET").arg("kept").query::<String>(&mut client).unwrap(), "1");
    let info: String = redis::cmd("INFO").arg("stats").query(&mut client).unwrap();
    assert!(info.contains("command_panics:1\r\n"), "{info}");
}

#[test]
fn command_and_its_subcommands_answer_as_redis_7() {
    let pool = TempPool::new("command");
    let server = Server::start(&pool.0, &[]);
    let mut client = server.client();
    let all: Vec<redis::Value> = redis::cmd("COMMAND").query(&mut client).unwrap();
    let count: usize = redis::cmd("COMMAND").arg("COUNT").query(&mut client).unwrap();
    assert_eq!(all.len(), count);
    let info: Vec<Vec<redis::Value>> =
        redis::cmd("COMMAND").arg("INFO").arg("get").arg("set").query(&mut client).unwrap();
    assert_eq!(info.len(), 2);
    assert_eq!(info[0].len(), 10, "Redis 7's ten fields: {:?}", info[0]);
    assert_eq!(info[0][0], redis::Value::BulkString(b"get".to_vec()));
    assert_eq!(info[0][1], redis::Value::Int(2));
    let unknown: Vec<redis::Value> = redis::cmd("COMMAND").arg("INFO").arg("nosuch").query(&mut client).unwrap();
    assert_eq!(unknown, vec![redis::Value::Nil]);
    let docs: redis::Value = redis::cmd("COMMAND").arg("DOCS").arg("get").query(&mut client).unwrap();
    assert!(format!("{docs:?}").contains("summary"), "{docs:?}");
    let list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut client).unwrap();
    assert!(list.len() > count && list.contains(&"client|list".to_string()), "subcommands too: {list:?}");
    let hashes: Vec<String> =
        redis::cmd("COMMAND").arg("LIST").arg("FILTERBY").arg("PATTERN").arg("h*").query(&mut client).unwrap();
    assert!(hashes.contains(&"hset".to_string()) && hashes.iter().all(|name| name.starts_with('h')), "{hashes:?}");
    let writes: Vec<String> =
        redis::cmd("COMMAND").arg("LIST").arg("FILTERBY").arg("ACLCAT").arg("write").query(&mut client).unwrap();
    assert!(writes.contains(&"set".to_string()) && !writes.contains(&"get".to_string()), "{writes:?}");
    let keys: Vec<String> = redis::cmd("COMMAND")
        .arg("GETKEYS")
        .arg("MSET")
        .arg("a")
        .arg("1")
        .arg("b")
        .arg("2")
        .query(&mut client)
        .unwrap();
    assert_eq!(keys, ["a", "b"]);
    let help: Vec<String> = redis::cmd("COMMAND").arg("HELP").query(&mut client).unwrap();
    assert!(help[0].starts_with("COMMAND <subcommand>"));
    let error = redis::cmd("COMMAND").arg("COUNT").arg("x").query::<()>(&mut client).unwrap_err();
    assert!(error.to_string().contains("wrong number of arguments for 'command|count'"), "{error}");
    let error = redis::cmd("COMMAND").arg("NOSUCH").query::<()>(&mut client).unwrap_err();
    assert!(error.to_string().contains("unknown subcommand 'NOSUCH'"), "{error}");
    // The report's crash: redis-cli's bare COMMAND.
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.resp.port().to_string(), "command"])
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("getdel"));
    assert_eq!(redis::cmd("PING").query::<String>(&mut client).unwrap(), "PONG");
}

#[test]
fn transactions_run_as_redis_runs_them() {
    let pool = TempPool::new("multi");
    let server = Server::start(&pool.0, &[]);
    let mut client = server.client();
    redis::cmd("SET").arg("alice").arg("100").query::<()>(&mut client).unwrap();
    redis::cmd("SET").arg("bob").arg("0").query::<()>(&mut client).unwrap();
    // redis-rs's atomic pipeline, like redis-py's pipeline(): MULTI, the
    // commands, EXEC in one write.
    let (alice, bob): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("DECRBY")
        .arg("alice")
        .arg(30)
        .cmd("INCRBY")
        .arg("bob")
        .arg(30)
        .query(&mut client)
        .unwrap();
    assert_eq!((alice, bob), (70, 30));
    let balances: (String, String) = redis::cmd("MGET").arg("alice").arg("bob").query(&mut client).unwrap();
    assert_eq!(balances, ("70".to_string(), "30".to_string()));
    // Step by step: queued, then run in order; an error at run time (the
    // wrong type) fails that command alone.
    let mut raw = Raw::connect(&server);
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "-ERR MULTI calls can not be nested");
    assert_eq!(raw.call(&[b"SET", b"carol", b"5"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"HSET", b"carol", b"f", b"v"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"INCR", b"carol"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"WATCH", b"x"]).unwrap(), "-ERR WATCH inside MULTI is not allowed");
    assert_eq!(
        raw.call(&[b"EXEC"]).unwrap(),
        "*3 [+OK, -WRONGTYPE Operation against a key holding the wrong kind of value, :6]"
    );
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "-ERR EXEC without MULTI");
    assert_eq!(raw.call(&[b"DISCARD"]).unwrap(), "-ERR DISCARD without MULTI");
    // An error while queueing (unknown command, wrong arity) aborts it all.
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"SET", b"alice", b"0"]).unwrap(), "+QUEUED");
    assert!(raw.call(&[b"NOSUCHCOMMAND"]).unwrap().starts_with("-ERR unknown command"));
    assert!(raw.call(&[b"GET"]).unwrap().starts_with("-ERR wrong number of arguments"));
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "-EXECABORT Transaction discarded because of previous errors.");
    assert_eq!(raw.call(&[b"GET", b"alice"]).unwrap(), "$2");
    // DISCARD drops what was queued.
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"DEL", b"bob"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"DISCARD"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"EXISTS", b"bob"]).unwrap(), ":1");
    // WATCH: a key written by another connection fails EXEC (a null
    // array) and nothing queued runs; unwritten, EXEC runs.
    let mut other = Raw::connect(&server);
    assert_eq!(raw.call(&[b"WATCH", b"alice", b"nobody"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"SET", b"alice", b"1"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"SET", b"bob", b"watched"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "*-1");
    assert_eq!(raw.call(&[b"GET", b"bob"]).unwrap(), "$2");
    assert_eq!(raw.call(&[b"WATCH", b"alice"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"GET", b"alice"]).unwrap(), "$1");
    assert_eq!(other.call(&[b"DEL", b"nobody"]).unwrap(), ":0");
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"SET", b"bob", b"watched"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "*1 [+OK]");
    // After EXEC nothing is watched any more; UNWATCH forgets too.
    assert_eq!(other.call(&[b"SET", b"alice", b"2"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"WATCH", b"bob"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"UNWATCH"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"SET", b"bob", b"3"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"GET", b"bob"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "*1 [$1]");
    // FLUSHALL touches every watched key that existed.
    assert_eq!(raw.call(&[b"WATCH", b"bob"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"FLUSHALL"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"PING"]).unwrap(), "+QUEUED");
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "*-1");
    // A connection that goes mid-transaction leaves nothing behind.
    assert_eq!(other.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"SET", b"gone", b"x"]).unwrap(), "+QUEUED");
    drop(other);
    assert_eq!(raw.call(&[b"EXISTS", b"gone"]).unwrap(), ":0");
}

/// Writes `request` to the Redis port; returns what came back before the
/// server closed the connection.
fn http_to_redis_port(server: &Server, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(server.resp).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("the server closes the connection");
    answer
}

#[test]
fn an_http_request_to_the_redis_port_is_closed_and_stores_nothing() {
    // With two shards the two closes may land on either: INFO adds them.
    for shards in ["1", "2"] {
        an_http_request_to_the_redis_port_is_closed_on(shards);
    }
}

fn an_http_request_to_the_redis_port_is_closed_on(shards: &str) {
    let pool = TempPool::new("cross-protocol");
    let server = Server::start(&pool.0, &["--shards", shards]);
    let body = "SET pwned x\r\n";
    let post = format!("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    assert_eq!(http_to_redis_port(&server, post.as_bytes()), b"", "closed without a reply");
    // A GET's request line is an inline GET (wrong arity); its Host: line
    // closes the connection before the body.
    let get = format!("GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let answer = http_to_redis_port(&server, get.as_bytes());
    assert!(String::from_utf8_lossy(&answer).starts_with("-ERR wrong number of arguments for 'get'"), "{answer:?}");
    assert!(!String::from_utf8_lossy(&answer).contains("+OK"));
    let mut client = server.client();
    assert_eq!(redis::cmd("EXISTS").arg("pwned").query::<i64>(&mut client).unwrap(), 0);
    let info: String = redis::cmd("INFO").arg("stats").query(&mut client).unwrap();
    assert!(info.contains("cross_protocol_closed:2\r\n"), "{info}");
}

/// An HTTP exchange: the status and the head's lines.
fn http(server: &Server, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(server.http).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).to_string();
    (text[9..12].parse().unwrap(), text)
}

#[test]
fn requirepass_guards_the_http_port_too() {
    let pool = TempPool::new("http-auth");
    let server = Server::start(&pool.0, &["--requirepass", "s3cret"]);
    assert!(server.banner().iter().any(|line| line.contains("password required on both ports")));
    let put = |auth: &str| format!("PUT /kv/a HTTP/1.1\r\n{auth}Content-Length: 6\r\nConnection: close\r\n\r\nsecret");
    let (status, head) = http(&server, &put(""));
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("WWW-Authenticate: Basic realm=\"packetstore\""), "{head}");
    assert_eq!(http(&server, &put("Authorization: Bearer wrong\r\n")).0, 401);
    assert_eq!(http(&server, "GET /kv/a HTTP/1.1\r\nConnection: close\r\n\r\n").0, 401);
    assert_eq!(http(&server, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").0, 401);
    let mut client = server.client();
    redis::cmd("AUTH").arg("s3cret").query::<()>(&mut client).unwrap();
    assert_eq!(redis::cmd("EXISTS").arg("a").query::<i64>(&mut client).unwrap(), 0, "a refused PUT stores nothing");
    assert_eq!(http(&server, &put("Authorization: Bearer s3cret\r\n")).0, 204);
    // "default:s3cret"
    let (status, text) =
        http(&server, "GET /kv/a HTTP/1.1\r\nAuthorization: Basic ZGVmYXVsdDpzM2NyZXQ=\r\nConnection: close\r\n\r\n");
    assert_eq!((status, text.ends_with("secret")), (200, true), "{text}");
    assert_eq!(
        http(&server, "GET /metrics HTTP/1.1\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n").0,
        200
    );
    drop(server);
    let public = Server::start(&pool.0, &["--requirepass", "s3cret", "--metrics-public"]);
    assert_eq!(http(&public, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").0, 200);
    assert_eq!(http(&public, "GET /kv/a HTTP/1.1\r\nConnection: close\r\n\r\n").0, 401);
}

#[test]
fn config_get_and_set_know_redis_parameters() {
    let pool = TempPool::new("config");
    let server = Server::start(&pool.0, &[]);
    let mut raw = Raw::connect(&server);
    // Redis's parameters, with their Redis 6 aliases; packetstore's truth.
    assert_eq!(raw.call(&[b"CONFIG", b"GET", b"appendfsync"]).unwrap(), "*2 [$11, $6]");
    assert_eq!(raw.call(&[b"CONFIG", b"GET", b"hash-max-ziplist-entries"]).unwrap(), "*2 [$24, $3]");
    assert_eq!(raw.call(&[b"CONFIG", b"SET", b"hash-max-ziplist-entries", b"16"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"CONFIG", b"GET", b"hash-max-listpack-entries"]).unwrap(), "*2 [$25, $2]");
    // Checked as Redis checks them; several at once, all or none.
    assert_eq!(
        raw.call(&[b"CONFIG", b"SET", b"maxmemory", b"bla"]).unwrap(),
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
    );
    assert_eq!(
        raw.call(&[b"CONFIG", b"SET", b"maxmemory", b"1gb", b"hz", b"x"]).unwrap().split(" - ").nth(1),
        Some("argument couldn't be parsed into an integer")
    );
    assert_eq!(raw.call(&[b"CONFIG", b"GET", b"maxmemory"]).unwrap(), "*2 [$9, $1]");
    assert_eq!(raw.call(&[b"CONFIG", b"SET", b"maxmemory", b"1gb", b"hz", b"50"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"CONFIG", b"GET", b"maxmemory"]).unwrap(), "*2 [$9, $10]");
    assert_eq!(
        raw.call(&[b"CONFIG", b"SET", b"no-such-thing", b"1"]).unwrap(),
        "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such-thing'"
    );
    assert!(raw.call(&[b"CONFIG", b"SET", b"daemonize", b"yes"]).unwrap().ends_with("can't set immutable config"));
    // What packetstore cannot be is refused with the reason.
    assert!(raw.call(&[b"CONFIG", b"SET", b"appendfsync", b"everysec"]).unwrap().contains("durable before its reply"));
    // requirepass takes effect at once, on new connections.
    assert_eq!(raw.call(&[b"CONFIG", b"SET", b"requirepass", b"pw"]).unwrap(), "+OK");
    let mut other = Raw::connect(&server);
    assert_eq!(other.call(&[b"GET", b"x"]).unwrap(), "-NOAUTH Authentication required.");
    assert_eq!(other.call(&[b"AUTH", b"pw"]).unwrap(), "+OK");
    assert_eq!(other.call(&[b"CONFIG", b"SET", b"requirepass", b""]).unwrap(), "+OK");
    assert_eq!(Raw::connect(&server).call(&[b"PING"]).unwrap(), "+PONG");
}

#[test]
fn persistence_commands_answer_truthfully_for_an_always_durable_server() {
    let pool = TempPool::new("durability");
    let server = Server::start(&pool.0, &[]);
    let mut raw = Raw::connect(&server);
    assert_eq!(raw.call(&[b"SAVE"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"BGSAVE"]).unwrap(), "+Background saving started");
    assert_eq!(raw.call(&[b"BGREWRITEAOF"]).unwrap(), "+Background append only file rewriting started");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let lastsave: i64 = raw.call(&[b"LASTSAVE"]).unwrap()[1..].parse().unwrap();
    assert!((lastsave - now).abs() <= 2, "LASTSAVE {lastsave}, now {now}");
    // No replica exists: WAIT counts none, at once, whatever the timeout.
    let started = std::time::Instant::now();
    assert_eq!(raw.call(&[b"WAIT", b"1", b"0"]).unwrap(), ":0");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(raw.call(&[b"WAITAOF", b"1", b"0", b"0"]).unwrap(), "*2 [:1, :0]");
    assert!(raw.call(&[b"TIME"]).unwrap().starts_with("*2 [$10, "));
    // SAVE is one of the commands a transaction refuses, and it aborts.
    assert_eq!(raw.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(raw.call(&[b"SAVE"]).unwrap(), "-ERR Command not allowed inside a transaction");
    assert_eq!(raw.call(&[b"EXEC"]).unwrap(), "-EXECABORT Transaction discarded because of previous errors.");
    // DEBUG SLEEP and SET-ACTIVE-EXPIRE only with --enable-debug-command.
    assert!(raw.call(&[b"DEBUG", b"SLEEP", b"0"]).unwrap().starts_with("-ERR DEBUG command not allowed"));
    // With two shards the switch is the whole server's: the keys (some on
    // the other shard than the connection's) stay too.
    for shards in ["1", "2"] {
        let pool = TempPool::new("debug-command");
        let server = Server::start(&pool.0, &["--enable-debug-command", "--shards", shards]);
        let mut raw = Raw::connect(&server);
        assert_eq!(raw.call(&[b"DEBUG", b"SLEEP", b"0.05"]).unwrap(), "+OK");
        assert_eq!(raw.call(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"]).unwrap(), "+OK");
        for i in 0..8 {
            assert_eq!(raw.call(&[b"SET", format!("k{i}").as_bytes(), b"v", b"PX", b"1"]).unwrap(), "+OK");
        }
        std::thread::sleep(Duration::from_millis(400));
        // Not removed by the tick: still counted, though they read as absent.
        assert_eq!(raw.call(&[b"DBSIZE"]).unwrap(), ":8", "{shards} shard(s)");
        assert_eq!(raw.call(&[b"GET", b"k0"]).unwrap(), "$-1");
    }
}

#[test]
fn memory_usage_counts_a_key_s_bytes() {
    let pool = TempPool::new("memory");
    let server = Server::start(&pool.0, &[]);
    let mut raw = Raw::connect(&server);
    assert_eq!(raw.call(&[b"MEMORY", b"USAGE", b"none"]).unwrap(), "$-1");
    assert_eq!(raw.call(&[b"SET", b"s", &[b'x'; 1000]]).unwrap(), "+OK");
    let usage: i64 = raw.call(&[b"MEMORY", b"USAGE", b"s", b"SAMPLES", b"0"]).unwrap()[1..].parse().unwrap();
    assert!((1001..1100).contains(&usage), "{usage}");
    assert_eq!(raw.call(&[b"HSET", b"h", b"f", b"v"]).unwrap(), ":1");
    assert!(raw.call(&[b"MEMORY", b"USAGE", b"h"]).unwrap().starts_with(':'));
    assert!(raw.call(&[b"MEMORY", b"DOCTOR"]).unwrap().starts_with("-ERR unknown subcommand"));
}

/// Redis 7.0.15's commands and subcommands (the fixture's) this server does
/// not run: whole commands (with their subcommands), then subcommands of
/// containers it runs in part.
const NOT_RUN: &[&str] = &[
    "acl",
    "failover",
    "lolwut",
    "migrate",
    "module",
    "psync",
    "replconf",
    "replicaof",
    "restore-asking",
    "slaveof",
    "sync",
];
const NOT_RUN_SUBCOMMANDS: &[&str] = &[
    "cluster|addslots",
    "cluster|addslotsrange",
    "cluster|bumpepoch",
    "cluster|count-failure-reports",
    "cluster|delslots",
    "cluster|delslotsrange",
    "cluster|failover",
    "cluster|flushslots",
    "cluster|forget",
    "cluster|links",
    "cluster|meet",
    "cluster|replicas",
    "cluster|replicate",
    "cluster|reset",
    "cluster|saveconfig",
    "cluster|set-config-epoch",
    "cluster|setslot",
    "cluster|slaves",
    "memory|doctor",
    "memory|help",
    "memory|malloc-stats",
    "memory|purge",
    "memory|stats",
    "script|debug",
];

/// COMMAND LIST is Redis 7.0.15's list, less what this server does not
/// run, plus its own GROUP and WAITAOF; COUNT is its top-level commands;
/// each listed subcommand runs (its handler does not call it unknown) and
/// each left out does not (on a one-shard cluster, which runs CLUSTER).
#[test]
fn command_list_names_exactly_what_the_server_runs() {
    let pool = TempPool::new("command-list");
    let server = Server::start(&pool.0, &["--shards", "1", "--cluster-ports", "0"]);
    let mut client = server.client();
    let fixture = include_str!("fixtures/redis-7.0.15-commands.txt");
    let runs = |name: &&str| !NOT_RUN.contains(&name.split('|').next().unwrap()) && !NOT_RUN_SUBCOMMANDS.contains(name);
    let mut expected: Vec<&str> = fixture.lines().filter(runs).chain(["group", "waitaof"]).collect();
    expected.sort_unstable();
    let mut list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut client).unwrap();
    list.sort_unstable();
    assert_eq!(list, expected);
    assert_eq!(list.len(), 366 - 11 - 18 - 24 + 2, "Redis's 366, less 11 commands and their 18 subcommands, less 24");
    let count: usize = redis::cmd("COMMAND").arg("COUNT").query(&mut client).unwrap();
    assert_eq!(count, expected.iter().filter(|name| !name.contains('|')).count());
    assert_eq!(count, 240 - 11 + 2);
    let mut raw = Raw::connect(&server);
    for name in fixture.lines().filter(|name| !matches!(*name, "quit" | "shutdown")) {
        let mut words: Vec<&str> = name.split('|').collect();
        if name.contains('|') && runs(&name) {
            // Enough arguments for its arity, so only an unknown name fails.
            let info = raw.call_resp(&["COMMAND", "INFO", name]);
            let arity = info.items()[0].items()[1].text().parse::<i64>().unwrap().unsigned_abs() as usize;
            words.resize(arity.max(words.len()), "x");
        }
        let reply = String::from_utf8_lossy(&raw.call_raw(&words)).into_owned();
        let unknown = reply.contains("unknown command") || reply.contains("unknown subcommand");
        assert_eq!(unknown, !runs(&name), "{name}: {reply}");
        raw.call_raw(&["RESET"]);
    }
}

/// COMMAND INFO of GET, ZUNIONSTORE, EVAL and XREAD is byte for byte
/// redis-server 7.0.15's (`fixtures/redis-7.0.15-command-info.resp`: its
/// RESP2 replies to `COMMAND INFO name`, one after the other); GETKEYS and
/// GETKEYSANDFLAGS find the keys Redis 7.0.15 finds, where the keys move
/// too.
#[test]
fn command_info_and_getkeys_are_redis_7_0_15_s() {
    let pool = TempPool::new("command-info");
    let server = Server::start(&pool.0, &[]);
    let mut raw = Raw::connect(&server);
    let fixture = include_bytes!("fixtures/redis-7.0.15-command-info.resp");
    let mut expected = std::io::Cursor::new(&fixture[..]);
    for name in ["get", "zunionstore", "eval", "xread"] {
        let redis = common::read_raw_reply(&mut expected).unwrap();
        let ours = raw.call_raw(&["COMMAND", "INFO", name]);
        assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&redis), "COMMAND INFO {name}");
    }
    let keys = |raw: &mut Raw, call: &str| -> Vec<String> {
        let args: Vec<&str> = ["COMMAND", "GETKEYS"].into_iter().chain(call.split(' ')).collect();
        raw.call_resp(&args).items().iter().map(common::Resp::text).collect()
    };
    for (call, expected) in [
        ("ZUNIONSTORE out 2 a b", &["out", "a", "b"][..]),
        ("EVAL return 2 k1 k2", &["k1", "k2"]),
        ("EVAL return 0", &[]),
        ("EVAL return 3 a b", &[]),
        ("FCALL f 1 k", &["k"]),
        ("XREAD COUNT 2 STREAMS s1 s2 0 0", &["s1", "s2"]),
        ("XREADGROUP GROUP g c STREAMS s1 0", &["s1"]),
        ("MEMORY USAGE key", &["key"]),
        ("LMPOP 2 l1 l2 LEFT", &["l1", "l2"]),
        ("BLMPOP 0 2 l1 l2 LEFT", &["l1", "l2"]),
        ("ZINTER 2 a b", &["a", "b"]),
        ("SINTERCARD 2 a b LIMIT 1", &["a", "b"]),
        ("SORT k BY w GET g STORE dst", &["k", "dst"]),
        ("GEORADIUS g 1 2 3 km STORE dst", &["g", "dst"]),
        ("XGROUP CREATE key groupname $", &["key"]),
        ("LCS key1 key2", &["key1", "key2"]),
        ("MSET a 1 b 2", &["a", "b"]),
    ] {
        assert_eq!(keys(&mut raw, call), expected, "COMMAND GETKEYS {call}");
    }
    for (call, error) in [
        ("ZUNIONSTORE out 0 a", "-ERR Invalid arguments specified for command"),
        ("XREAD STREAMS a", "-ERR Invalid number of arguments specified for command"),
        ("PING x", "-ERR The command has no key arguments"),
        ("NOSUCH x", "-ERR Invalid command specified"),
        // Redis: no key arguments; ACL is not run here.
        ("ACL WHOAMI", "-ERR Invalid command specified"),
    ] {
        let args: Vec<&str> = ["COMMAND", "GETKEYS"].into_iter().chain(call.split(' ')).collect();
        assert_eq!(raw.call_raw(&args), format!("{error}\r\n").into_bytes(), "COMMAND GETKEYS {call}");
    }
    let flags = |raw: &mut Raw, call: &str| -> String {
        let args: Vec<&str> = ["COMMAND", "GETKEYSANDFLAGS"].into_iter().chain(call.split(' ')).collect();
        let keys = raw.call_resp(&args);
        let each = keys.items().iter().map(|key| {
            let names: Vec<String> = key.items()[1].items().iter().map(common::Resp::text).collect();
            format!("{} {}", key.items()[0].text(), names.join("|"))
        });
        each.collect::<Vec<_>>().join(", ")
    };
    assert_eq!(flags(&mut raw, "SET k1 v1"), "k1 OW|update");
    assert_eq!(flags(&mut raw, "SET k1 v1 GET"), "k1 RW|access|update");
    assert_eq!(flags(&mut raw, "MSET k1 v1 k2 v2"), "k1 OW|update, k2 OW|update");
    assert_eq!(flags(&mut raw, "LMOVE k1 k2 left right"), "k1 RW|access|delete, k2 RW|insert");
    assert_eq!(flags(&mut raw, "SORT k1 STORE k2"), "k1 RO|access, k2 OW|update");
    assert_eq!(flags(&mut raw, "BITFIELD k GET u8 0"), "k RO|access");
}
