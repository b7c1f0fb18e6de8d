//! Goal: SIGTERM and SIGINT stop the servers gracefully, in both I/O
//! paths (io_uring and epoll): no new connections, the turn in flight
//! committed, every reply sent, the connections closed, a checkpoint (KV),
//! the lock released, exit 0; a client that does not read cannot hold the
//! shutdown forever; every loop of a multi-threaded server wakes up to stop.
//!
//! Method: the real binary under pipelined load; the signal; then a
//! restart on the same pool (which the lock would refuse if it were still
//! held) that must find every acknowledged write and replay no log record.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use redis::Commands;

mod common;
use common::{Server, TempPool, Wal};

fn signal(child: &std::process::Child, signal: libc::c_int) {
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// A client pipelining SETs of its own keys in batches until the server
/// closes the connection; returns the keys acknowledged.
fn pipelining_writer(addr: SocketAddr, client: usize) -> Vec<String> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut acknowledged = Vec::new();
    for batch in 0.. {
        let keys: Vec<String> = (0..100).map(|i| format!("c{client}:{}", batch * 100 + i)).collect();
        let mut request = Vec::new();
        for key in &keys {
            request.extend_from_slice(
                format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$8\r\nvalue-{client:02}\r\n", key.len()).as_bytes(),
            );
        }
        if stream.write_all(&request).is_err() {
            return acknowledged;
        }
        for key in keys {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return acknowledged,
                Ok(_) => {
                    assert_eq!(line, "+OK\r\n", "a reply during shutdown");
                    acknowledged.push(key);
                }
            }
        }
    }
    unreachable!()
}

/// The epoll loop, as `--io epoll` runs it.
const EPOLL: &[&str] = &["--io", "epoll", "--persist", "copy"];

#[test]
fn sigterm_sends_every_reply_checkpoints_and_releases_the_lock() {
    sigterm_under_load(&[]);
}

#[test]
fn sigterm_in_epoll_mode_sends_every_reply_checkpoints_and_releases_the_lock() {
    sigterm_under_load(EPOLL);
}

fn sigterm_under_load(io: &[&str]) {
    let name = format!("term{}", io.concat());
    for (pool, how) in [(TempPool::new(&name), libc::SIGTERM), (TempPool::on_disk(&name), libc::SIGINT)] {
        let mut server = Server::start(&pool.0, io);
        let resp = server.resp;
        let writers: Vec<_> =
            (0..4).map(|client| std::thread::spawn(move || pipelining_writer(resp, client))).collect();
        std::thread::sleep(Duration::from_millis(300));
        signal(&server.child, how);
        assert!(server.wait_exit(Duration::from_secs(20)), "the server did not stop");
        let status = server.child.wait().unwrap();
        assert!(status.success(), "a graceful stop exits 0: {status}");
        let acknowledged: Vec<Vec<String>> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(acknowledged.iter().all(|keys| !keys.is_empty()), "every writer was acknowledged before the stop");

        // The lock is free, the checkpoint folded every record, and every
        // acknowledged write is there.
        let server = Server::start(&pool.0, io);
        let banner = server.banner().join("\n");
        assert!(banner.contains(" 0 log records replayed"), "{io:?}: a clean stop leaves nothing to replay: {banner}");
        let mut c = server.client();
        for (client, keys) in acknowledged.iter().enumerate() {
            for key in keys {
                let value: Option<String> = c.get(key).unwrap();
                assert_eq!(value.as_deref(), Some(format!("value-{client:02}").as_str()), "{key}");
            }
        }
    }
}

#[test]
fn a_client_that_does_not_read_cannot_hold_the_shutdown_forever() {
    a_stuck_client(&[]);
}

#[test]
fn a_client_that_does_not_read_cannot_hold_an_epoll_shutdown_forever() {
    a_stuck_client(EPOLL);
}

fn a_stuck_client(io: &[&str]) {
    let pool = TempPool::new(&format!("term-stuck{}", io.concat()));
    let mut server = Server::start(&pool.0, io);
    let mut c = server.client();
    let _: () = c.set("big", vec![b'x'; 64 << 10]).unwrap();
    let mut stuck = TcpStream::connect(server.resp).unwrap();
    stuck.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let batch = b"GET big\r\n".repeat(1000);
    // Enough GETs that megabytes of replies wait unread.
    for _ in 0..20 {
        if stuck.write_all(&batch).is_err() {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    signal(&server.child, libc::SIGTERM);
    assert!(server.wait_exit(Duration::from_secs(20)), "a client that never reads held the shutdown");
    assert!(server.child.wait().unwrap().success());
    assert!(started.elapsed() >= Duration::from_secs(4), "the drain gave up before its 5 s: {:?}", started.elapsed());
    drop(stuck);
    // The store is intact (the log is replayed instead).
    let server = Server::start(&pool.0, io);
    let value: Vec<u8> = server.client().get("big").unwrap();
    assert_eq!(value.len(), 64 << 10);
}

#[test]
fn sigterm_stops_every_loop_of_a_multi_threaded_wal() {
    every_wal_loop_stops(&[]);
}

#[test]
fn sigterm_stops_every_epoll_loop_of_a_multi_threaded_wal() {
    every_wal_loop_stops(EPOLL);
}

fn every_wal_loop_stops(io: &[&str]) {
    let pool = TempPool::new(&format!("term-wal{}", io.concat()));
    let mut wal = Wal::start(&pool.0, &[io, &["--threads", "2"]].concat());
    let (child, addr) = (&mut wal.child, wal.addr);
    // Requests on several connections, so both loops have clients.
    for _ in 0..8 {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(b"POST /log HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    }
    signal(child, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "a loop did not wake up to stop");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
    // After the stop, nobody listens any more.
    assert!(TcpStream::connect(addr).is_err());
}

/// The epoll loop logs its stop as the io_uring engine does: two lines,
/// the checkpoint's with every reply sent.
#[test]
fn an_epoll_stop_logs_the_same_lines() {
    let pool = TempPool::new("log-epoll");
    let log = pool.0.with_extension("log");
    let mut server = Server::start_logging(&pool.0, EPOLL, &log);
    let mut c = server.client();
    for i in 0..1000 {
        let _: () = c.set(format!("k{i}"), i).unwrap();
    }
    signal(&server.child, libc::SIGTERM);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("INFO") && lines[0].contains("stopping") && lines[0].contains("connections=1"), "{text}");
    assert!(lines[1].contains("INFO") && lines[1].contains("stopped: every reply sent; checkpoint: "), "{text}");
}

/// The log: one line per notable event, none at steady state: a flood of
/// refused connections is one line, a thousand requests none, a stop two;
/// with two shards too (the process's lines, not each shard's).
#[test]
fn the_log_is_one_line_per_event_and_quiet_at_steady_state() {
    for shards in ["1", "2"] {
        the_log_is_one_line_per_event_on(shards);
    }
}

fn the_log_is_one_line_per_event_on(shards: &str) {
    let pool = TempPool::new("log");
    let log = pool.0.with_extension("log");
    let mut server = Server::start_logging(&pool.0, &["--connections-max", "4", "--shards", shards], &log);
    let mut c = server.client();
    let mut extra = Vec::new();
    for _ in 0..100 {
        extra.push(TcpStream::connect(server.resp).unwrap());
    }
    for i in 0..1000 {
        let _: () = c.set(format!("k{i}"), i).unwrap();
        let _: u32 = c.get(format!("k{i}")).unwrap();
    }
    signal(&server.child, libc::SIGTERM);
    assert!(server.wait_exit(Duration::from_secs(20)));
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].contains("WARN") && lines[0].contains("connections refused"), "{text}");
    assert!(lines[1].contains("INFO") && lines[1].contains("stopping"), "{text}");
    assert!(lines[2].contains("INFO") && lines[2].contains("stopped: every reply sent"), "{text}");
}

/// SHUTDOWN stops the server as SIGTERM does (exit 0, a checkpoint, the
/// lock released); inside MULTI it is refused; ABORT has nothing to abort.
#[test]
fn the_shutdown_command_stops_the_server_gracefully() {
    let pool = TempPool::new("shutdown-command");
    let mut server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let error = redis::cmd("SHUTDOWN").arg("ABORT").query::<()>(&mut c).unwrap_err();
    assert!(error.to_string().contains("No shutdown in progress"), "{error}");
    let refused: redis::RedisResult<()> = redis::pipe().atomic().cmd("SHUTDOWN").query(&mut c);
    assert!(refused.unwrap_err().to_string().contains("not allowed inside a transaction"));
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    assert!(server.wait_exit(Duration::from_secs(20)), "the server did not stop");
    assert!(server.child.wait().unwrap().success(), "a graceful stop exits 0");
    let server = Server::start(&pool.0, &[]);
    let banner = server.banner().join("\n");
    assert!(banner.contains(" 0 log records replayed"), "a clean stop leaves nothing to replay: {banner}");
    let value: Option<String> = redis::cmd("GET").arg("k").query(&mut server.client()).unwrap();
    assert_eq!(value.as_deref(), Some("v"));
}
