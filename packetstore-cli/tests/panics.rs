//! Goal: a bug that panics while a request runs costs that request only,
//! on every request path (a Redis command, an HTTP request, a WAL
//! request, a peer link's frame): the request gets an error (RESP -ERR,
//! HTTP 500; a peer link is closed), other clients are served, and every
//! buffer reference the request had staged is given back (issue 35).
//!
//! Method: servers with test switches on (PACKETSTORE_ENABLE_TEST_SWITCHES=1)
//! arm a panic (`DEBUG PANIC-AT STAGED | REPLIED | PEER-FRAME`, the WAL's
//! `GET /debug/panic`) where the request holds references: a write after
//! it staged a 64 KiB value (kept in the buffers it was received into), a
//! read after it queued a 64 KiB reply from the pool, a frame whose 64 KiB
//! argument sits in receive buffers. The pool's free buffers (INFO
//! memory, the WAL's GET /log) must come back to their count before the
//! request, and another client must be served meanwhile. The servers
//! receive into whole buffers (`--whole-buffers`: with the default
//! incremental receive, a buffer the ring has half filled is neither free
//! nor a request's) and checkpoint only when told, so that the count moves
//! by requests only.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{free_port, Server, TempPool};

const SWITCHES: [(&str, &str); 1] = [("PACKETSTORE_ENABLE_TEST_SWITCHES", "1")];

/// Whole receive buffers, and no periodic checkpoint (it rewrites tree
/// nodes into other buffers): the free count changes only by requests.
const QUIET: [&str; 3] = ["--whole-buffers", "--checkpoint-interval", "60m"];

/// A value large enough to stay in the buffers it was received into (and
/// to be replied from them): over zero_copy_min (8 KiB).
fn big_value(seed: u8) -> Vec<u8> {
    (0..64 * 1024).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// INFO memory's pool_free_buffers.
fn free_buffers(connection: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(connection).unwrap();
    info.lines().find_map(|l| l.strip_prefix("pool_free_buffers:")).unwrap().trim().parse().unwrap()
}

/// Waits until `read` gives the same count twice 200 ms apart (a
/// checkpoint may be under way); returns it.
fn settled(mut read: impl FnMut() -> u64) -> u64 {
    let mut last = read();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = read();
        if now == last {
            return now;
        }
        last = now;
    }
}

/// Waits up to 5 s for `read` to give `want` again; panics with the last
/// count otherwise.
fn comes_back(want: u64, mut read: impl FnMut() -> u64, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = read();
        if now == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {now} free buffers, {want} before: references leaked");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One HTTP request on a new connection: (status, body). The server
/// closes after a 500.
fn http(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let text = String::from_utf8_lossy(&reply);
    let status = text.split_whitespace().nth(1).unwrap_or_else(|| panic!("no status: {text:?}")).parse().unwrap();
    let at = reply.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    (status, reply[at..].to_vec())
}

fn arm(connection: &mut redis::Connection, point: &str) {
    let () = redis::cmd("DEBUG").arg("PANIC-AT").arg(point).query(connection).unwrap();
}

/// One shard and two: with two, the switch is the process's (the next
/// such request panics on whichever shard runs it).
#[test]
fn a_redis_command_that_panics_gives_back_what_it_staged() {
    for shards in ["1", "2"] {
        a_redis_command_that_panics_on(shards);
    }
}

fn a_redis_command_that_panics_on(shards: &str) {
    let pool = TempPool::new("panic-resp");
    let server = Server::start_env(&pool.0, &[&QUIET[..], &["--shards", shards]].concat(), &SWITCHES);
    let mut client = server.client();
    let mut other = server.client();
    let () = redis::cmd("SET").arg("stored").arg(big_value(1)).query(&mut client).unwrap();
    let before = settled(|| free_buffers(&mut other));

    arm(&mut client, "STAGED");
    let error = redis::cmd("SET").arg("lost").arg(big_value(2)).query::<()>(&mut client).unwrap_err();
    assert!(error.to_string().contains("internal error in 'set'"), "{error}");
    let stored: Vec<u8> = redis::cmd("GET").arg("stored").query(&mut other).unwrap();
    assert_eq!(stored, big_value(1), "another client is served");
    let lost: Option<Vec<u8>> = redis::cmd("GET").arg("lost").query(&mut other).unwrap();
    assert_eq!(lost, None, "the write that panicked was not run");

    // A reply half queued from the pool is dropped whole: the client reads
    // a clean error, not a bulk header followed by one.
    arm(&mut client, "REPLIED");
    let error = redis::cmd("GET").arg("stored").query::<Vec<u8>>(&mut client).unwrap_err();
    assert!(error.to_string().contains("internal error in 'get'"), "{error}");
    assert_eq!(redis::cmd("PING").query::<String>(&mut client).unwrap(), "PONG", "the connection goes on");
    comes_back(before, || free_buffers(&mut other), "after RESP panics");
    let info: String = redis::cmd("INFO").arg("stats").query(&mut other).unwrap();
    assert!(info.contains("command_panics:2\r\n"), "{info}");
}

#[test]
fn an_http_request_that_panics_answers_500_and_gives_back_what_it_staged() {
    for shards in ["1", "2"] {
        an_http_request_that_panics_on(shards);
    }
}

fn an_http_request_that_panics_on(shards: &str) {
    let pool = TempPool::new("panic-http");
    let server = Server::start_env(&pool.0, &[&QUIET[..], &["--shards", shards]].concat(), &SWITCHES);
    let mut client = server.client();
    assert_eq!(http(server.http, "PUT", "/kv/stored", &big_value(1)).0, 204);
    let before = settled(|| free_buffers(&mut client));

    arm(&mut client, "STAGED");
    let (status, body) = http(server.http, "PUT", "/kv/lost", &big_value(2));
    assert_eq!(status, 500, "{}", String::from_utf8_lossy(&body));
    assert_eq!(http(server.http, "GET", "/kv/lost", b"").0, 404, "the write that panicked was not run");

    arm(&mut client, "REPLIED");
    let (status, body) = http(server.http, "GET", "/kv/stored", b"");
    assert_eq!(status, 500, "{}", String::from_utf8_lossy(&body));
    assert!(body.len() < 1024, "no part of the value follows the 500: {} bytes", body.len());
    let (status, body) = http(server.http, "GET", "/kv/stored", b"");
    assert_eq!((status, body), (200, big_value(1)), "the server serves on");
    comes_back(before, || free_buffers(&mut client), "after HTTP panics");
}

/// The WAL's GET /log free_buffers.
fn wal_free_buffers(addr: SocketAddr) -> u64 {
    let (status, body) = http(addr, "GET", "/log", b"");
    assert_eq!(status, 200);
    let text = String::from_utf8(body).unwrap();
    let at = text.find("\"free_buffers\":").unwrap() + "\"free_buffers\":".len();
    text[at..].split([',', '}']).next().unwrap().parse().unwrap()
}

#[test]
fn a_wal_request_that_panics_answers_500_and_gives_back_its_body() {
    let pool = TempPool::new("panic-wal");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_packetstore"));
    command
        .envs(SWITCHES)
        .args(["wal", "--pool", pool.0.to_str().unwrap(), "--pool-size", "64MiB", "--log-size", "4MiB"])
        .args(["--listen", "127.0.0.1:0", "--ring-entries", "256", "--whole-buffers"]);
    let (child, addr, _lines) = common::spawn_wal(&mut command);
    // Killed however the test ends.
    let _wal = common::Wal { child, addr };
    assert_eq!(http(addr, "POST", "/wal", &big_value(1)).0, 200);
    let before = settled(|| wal_free_buffers(addr));

    assert_eq!(http(addr, "GET", "/debug/panic", b"").0, 200);
    let (status, body) = http(addr, "POST", "/wal", &big_value(2));
    assert_eq!(status, 500, "{}", String::from_utf8_lossy(&body));
    comes_back(before, || wal_free_buffers(addr), "after a WAL panic");
    assert_eq!(http(addr, "POST", "/wal", &big_value(3)).0, 200, "the server serves on");
}

/// A HELLO frame from node `node` of group 1, without a secret.
fn hello(node: u64) -> Vec<u8> {
    let mut frame = b"*4\r\n$5\r\nHELLO\r\n$8\r\n".to_vec();
    frame.extend_from_slice(&1u64.to_le_bytes());
    frame.extend_from_slice(b"\r\n$8\r\n");
    frame.extend_from_slice(&node.to_le_bytes());
    frame.extend_from_slice(b"\r\n$0\r\n\r\n");
    frame
}

#[test]
fn a_peer_frame_that_panics_closes_its_link_and_the_node_serves_on() {
    let pool = TempPool::new("panic-peer");
    let (mine, theirs) = (free_port(), free_port());
    let peers = format!("1=127.0.0.1:{mine},2=127.0.0.1:{theirs}");
    let server = Server::start_env(
        &pool.0,
        &["--node-id", "1", "--peers", &peers, "--whole-buffers", "--checkpoint-interval", "60m"],
        &SWITCHES,
    );
    let mut client = server.client();
    // Read here: a follower would relay its first data command.
    let () = redis::cmd("READONLY").query(&mut client).unwrap();
    let mut link = TcpStream::connect(("127.0.0.1", mine)).unwrap();
    link.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    link.write_all(&hello(2)).unwrap();
    let before = settled(|| free_buffers(&mut client));

    arm(&mut client, "PEER-FRAME");
    let value = big_value(4);
    let mut frame = format!("*3\r\n$1\r\nM\r\n${}\r\n", value.len()).into_bytes();
    frame.extend_from_slice(&value);
    frame.extend_from_slice(b"\r\n$4\r\n\0\0\0\0\r\n");
    link.write_all(&frame).unwrap();
    let mut answer = [0u8; 16];
    let closed = match link.read(&mut answer) {
        Ok(0) => true,
        Ok(n) => panic!("the node answered on a peer link: {:?}", String::from_utf8_lossy(&answer[..n])),
        Err(error) => error.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(closed, "the link whose frame panicked is closed");
    assert_eq!(redis::cmd("PING").query::<String>(&mut client).unwrap(), "PONG", "the node serves on");
    comes_back(before, || free_buffers(&mut client), "after a peer frame's panic");
    let info: String = redis::cmd("INFO").arg("stats").query(&mut client).unwrap();
    assert!(info.contains("command_panics:1\r\n"), "{info}");
}
