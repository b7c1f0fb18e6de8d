//! Goal: the WAL server works for real clients in every mode, and every
//! acknowledged body survives kill -9.
//!
//! Method: start `packetstore wal` on an ephemeral 127.0.0.1 port with a
//! /dev/shm pool, talk HTTP/1.1 to it over plain sockets, and check the
//! replies and `GET /log/<seq>` byte for byte. The same functional checks
//! run against every I/O path and persistence mode.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use packetstore::util::rng::SplitMix64;

mod common;
use common::TempPool;

struct Server {
    child: Child,
    addr: SocketAddr,
    /// What it prints after listening.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    fn start(pool: &Path, extra: &[&str]) -> Server {
        Self::start_env(pool, extra, &[])
    }

    fn start_env(pool: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
        command
            .envs(env.iter().copied())
            .args(["wal", "--pool", pool.to_str().unwrap(), "--pool-size", "256MiB", "--log-size", "64MiB"])
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::inherit());
        let (child, addr, lines) = common::spawn_wal(&mut command);
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Server { child, addr, lines: receive }
    }

    /// Waits for the process to exit by itself; false after `timeout`.
    fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
struct Response {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Response {
    fn seq(&self) -> u64 {
        self.headers.get("x-seq").unwrap_or_else(|| panic!("no X-Seq in {self:?}")).parse().unwrap()
    }
}

fn read_response(reader: &mut impl BufRead) -> Option<Response> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let status = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length").map_or(0, |l| l.parse().unwrap());
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Response { status, headers, body })
}

fn post_bytes(body: &[u8]) -> Vec<u8> {
    let mut request = format!("POST /wal HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    request.extend_from_slice(body);
    request
}

fn get_bytes(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

/// One request on a fresh connection.
fn exchange(server: &Server, request: &[u8]) -> Response {
    let mut stream = server.connect();
    stream.write_all(request).unwrap();
    read_response(&mut BufReader::new(stream)).expect("a response")
}

fn body(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    SplitMix64::new(seed).fill(&mut data);
    data
}

const MODES: [&[&str]; 6] = [
    &["--io", "uring", "--persist", "zerocopy"],
    &["--io", "uring", "--persist", "copy"],
    &["--io", "uring", "--persist", "off"],
    &["--io", "epoll", "--persist", "copy", "--commit", "per-request"],
    &["--io", "epoll", "--persist", "copy", "--commit", "per-turn"],
    &["--io", "epoll", "--persist", "off"],
];

/// The functional checks every mode passes.
fn functional(mode: &[&str]) {
    functional_on(TempPool::new(&mode.join("-").replace("--", "")), mode, "cache-line");
}

fn functional_on(pool: TempPool, mode: &[&str], domain: &str) {
    let server = Server::start(&pool.0, mode);
    let persisting = !mode.contains(&"off");

    // Bodies from 0 B to several MiB, straddling many 2 KiB buffers.
    let mut acked = Vec::new();
    for (i, len) in [0usize, 1, 100, 2047, 2048, 2049, 5000, 100_000, 3 << 20].into_iter().enumerate() {
        let data = body(i as u64, len);
        let response = exchange(&server, &post_bytes(&data));
        assert_eq!(response.status, 200, "{mode:?}: POST of {len} bytes");
        acked.push((response.seq(), data));
    }
    // Pipelining: many requests in one write, replies in order.
    let mut stream = server.connect();
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    for i in 0..50u64 {
        let data = body(1000 + i, (i as usize * 37) % 3000);
        batch.extend_from_slice(&post_bytes(&data));
        expected.push(data);
    }
    batch.extend_from_slice(&get_bytes("/anything"));
    stream.write_all(&batch).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for data in expected {
        let response = read_response(&mut reader).expect("a pipelined response");
        assert_eq!(response.status, 200);
        acked.push((response.seq(), data));
    }
    assert_eq!(read_response(&mut reader).unwrap().status, 404, "GET of a path outside the API");
    let seqs: Vec<u64> = acked.iter().map(|(seq, _)| *seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{mode:?}: sequence numbers are dense: {seqs:?}");

    // Read back byte for byte (when anything is persisted).
    for (seq, data) in &acked {
        let response = exchange(&server, &get_bytes(&format!("/log/{seq}")));
        if persisting {
            assert_eq!(response.status, 200, "{mode:?}: GET /log/{seq}");
            assert!(
                response.body == *data,
                "{mode:?}: record {seq} differs ({} vs {} bytes)",
                response.body.len(),
                data.len()
            );
        } else {
            assert_eq!(response.status, 404, "{mode:?}: nothing is persisted");
        }
    }
    let summary = String::from_utf8(exchange(&server, &get_bytes("/log")).body).unwrap();
    assert!(summary.contains(&format!("\"domain\":\"{domain}\"")), "{summary}");

    // Malformed input: 400 and close; too large: 413; chunked: 411.
    for (request, status) in [
        (&b"NONSENSE\r\n\r\n"[..], 400),
        (b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        (b"GET / HTTP/9.9\r\n\r\n", 505),
    ] {
        let mut stream = server.connect();
        stream.write_all(request).unwrap();
        let mut reader = BufReader::new(stream);
        assert_eq!(
            read_response(&mut reader).unwrap().status,
            status,
            "{mode:?}: {:?}",
            String::from_utf8_lossy(request)
        );
        assert!(read_response(&mut reader).is_none(), "{mode:?}: the connection is closed after an error");
    }
    // Paths outside the API: 404, and a POST's body is not logged.
    let records = |server: &Server| {
        let summary = String::from_utf8(exchange(server, &get_bytes("/log")).body).unwrap();
        summary.split("\"records\":").nth(1).map(|rest| rest.split([',', '}']).next().unwrap().to_string())
    };
    let before = records(&server);
    assert_eq!(exchange(&server, &get_bytes("/")).status, 404, "{mode:?}");
    assert_eq!(exchange(&server, &get_bytes("/nonsense")).status, 404, "{mode:?}");
    let stray = b"POST /elsewhere HTTP/1.1\r\nContent-Length: 5\r\n\r\nstray";
    assert_eq!(exchange(&server, stray).status, 404, "{mode:?}");
    assert_eq!(records(&server), before, "{mode:?}: nothing logged for a stray POST");
    // The server is still there for everyone else.
    assert_eq!(exchange(&server, &post_bytes(b"after errors")).status, 200);
}

#[test]
fn uring_zerocopy_functional() {
    functional(MODES[0]);
}

#[test]
fn uring_zerocopy_busy_poll_functional() {
    // Busy polling: the loop never sleeps in the kernel (io_uring_enter
    // with GETEVENTS and no minimum), and serves exactly the same.
    functional(&["--io", "uring", "--persist", "zerocopy", "--busy-poll"]);
}

#[test]
fn uring_zerocopy_whole_buffers_functional() {
    // Without incremental consumption: each receive takes whole buffers.
    functional(&["--io", "uring", "--persist", "zerocopy", "--whole-buffers"]);
}

#[test]
fn uring_zerocopy_page_domain_functional() {
    // An ext4 pool: the page domain, whose fdatasync runs through io_uring
    // while the next batch is received (replies wait for their sync).
    functional_on(TempPool::on_disk("page-zerocopy"), MODES[0], "page");
}

#[test]
fn epoll_copy_page_domain_functional() {
    functional_on(TempPool::on_disk("page-epoll"), MODES[4], "page");
}

#[test]
fn uring_copy_functional() {
    functional(MODES[1]);
}

#[test]
fn uring_off_functional() {
    functional(MODES[2]);
}

#[test]
fn epoll_copy_per_request_functional() {
    functional(MODES[3]);
}

#[test]
fn epoll_copy_per_turn_functional() {
    functional(MODES[4]);
}

#[test]
fn epoll_off_functional() {
    functional(MODES[5]);
}

fn free_buffers(server: &Server) -> u64 {
    let summary = String::from_utf8(exchange(server, &get_bytes("/log")).body).unwrap();
    let at = summary.find("\"free_buffers\":").unwrap() + "\"free_buffers\":".len();
    summary[at..].split(',').next().unwrap().parse().unwrap()
}

#[test]
fn a_thousand_concurrent_connections() {
    for mode in [MODES[0], MODES[3]] {
        let pool = TempPool::new("thousand");
        let server = Server::start(&pool.0, mode);
        let mut streams: Vec<TcpStream> = (0..1000).map(|_| server.connect()).collect();
        for (i, stream) in streams.iter_mut().enumerate() {
            stream.write_all(&post_bytes(&body(i as u64, 700))).unwrap();
        }
        let mut seqs = Vec::new();
        for stream in &streams {
            let response = read_response(&mut BufReader::new(stream)).expect("a response");
            assert_eq!(response.status, 200);
            seqs.push(response.seq());
        }
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), 1000, "{mode:?}: every connection got its own record");
    }
}

#[test]
fn clients_vanishing_mid_body_leak_nothing() {
    // With an incremental ring (the zero-copy default), a record can share
    // a buffer with the ring; when the kernel retires that buffer a fresh
    // one replaces it, so up to one buffer per ring entry may stay
    // referenced without any leak. That mode runs a 16-entry ring and
    // allows a drift of 16, far below the ~500 buffers the cut-off bodies
    // would hold if they leaked. Whole buffers and copy allow none.
    let incremental: &[&str] = &["--io", "uring", "--persist", "zerocopy", "--ring-entries", "16"];
    let whole: &[&str] = &["--io", "uring", "--persist", "zerocopy", "--whole-buffers"];
    for mode in [whole, MODES[1], incremental] {
        let drift_allowed = if mode == incremental { 16 } else { 0 };
        let pool = TempPool::new("vanish");
        let server = Server::start(&pool.0, mode);
        exchange(&server, &post_bytes(b"warm up"));
        let before = free_buffers(&server);
        let records_before = String::from_utf8(exchange(&server, &get_bytes("/log")).body).unwrap();
        for i in 0..20 {
            let mut stream = server.connect();
            let data = body(i, 50_000);
            let request = post_bytes(&data);
            stream.write_all(&request[..request.len() / 2]).unwrap();
            if i % 2 == 0 {
                stream.shutdown(Shutdown::Both).unwrap();
            } // else: dropped (closed) without a shutdown
        }
        // Buffers come back once the server has seen every close.
        let deadline = Instant::now() + Duration::from_secs(10);
        while free_buffers(&server) + drift_allowed < before || free_buffers(&server) > before {
            assert!(
                Instant::now() < deadline,
                "{mode:?}: buffers leaked: {} free, {before} before",
                free_buffers(&server)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let records_after = String::from_utf8(exchange(&server, &get_bytes("/log")).body).unwrap();
        let records = |s: &str| s.split("\"records\":").nth(1).unwrap().split(',').next().unwrap().to_string();
        assert_eq!(records(&records_before), records(&records_after), "{mode:?}: a cut-off body was logged");
    }
}

#[test]
fn a_ring_running_dry_loses_no_byte() {
    // 16 receive buffers for 20 clients sending 200 KiB each: the ring runs
    // dry again and again (-ENOBUFS); every body must still arrive intact.
    for extra in [&["--whole-buffers"][..], &[][..]] {
        let pool = TempPool::new("dry");
        let server = Server::start(&pool.0, &[&["--ring-entries", "16"][..], extra].concat());
        let handles: Vec<_> = (0..20u64)
            .map(|i| {
                let addr = server.addr;
                std::thread::spawn(move || {
                    let mut stream = TcpStream::connect(addr).unwrap();
                    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                    let data = body(500 + i, 200 * 1024);
                    stream.write_all(&post_bytes(&data)).unwrap();
                    let response = read_response(&mut BufReader::new(stream)).expect("a response");
                    assert_eq!(response.status, 200);
                    (response.seq(), data)
                })
            })
            .collect();
        for handle in handles {
            let (seq, data) = handle.join().unwrap();
            let response = exchange(&server, &get_bytes(&format!("/log/{seq}")));
            assert!(response.body == data, "record {seq} damaged");
        }
        let summary = String::from_utf8(exchange(&server, &get_bytes("/log")).body).unwrap();
        let enobufs: u64 = summary.split("\"enobufs\":").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
        assert!(enobufs > 0, "the ring never ran dry: the test proved nothing ({summary})");
    }
}

#[test]
fn a_full_pool_answers_503_and_keeps_serving() {
    let pool = TempPool::new("full");
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    command.args(["wal", "--pool", pool.0.to_str().unwrap(), "--pool-size", "24MiB", "--log-size", "4MiB"]).args([
        "--listen",
        "127.0.0.1:0",
        "--ring-entries",
        "256",
    ]);
    let (child, addr, _) = common::spawn_wal(&mut command);
    let (_, lines) = std::sync::mpsc::channel();
    let server = Server { child, addr, lines };
    let mut refused = 0;
    let mut acked = Vec::new();
    for i in 0..400u64 {
        let data = body(i, 64 * 1024);
        let response = exchange(&server, &post_bytes(&data));
        match response.status {
            200 => acked.push((response.seq(), data)),
            503 => {
                assert!(response.headers.contains_key("retry-after"));
                refused += 1;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert!(refused > 0 && !acked.is_empty(), "{} acked, {refused} refused", acked.len());
    for (seq, data) in &acked {
        assert!(exchange(&server, &get_bytes(&format!("/log/{seq}"))).body == *data, "record {seq}");
    }
    assert_eq!(exchange(&server, &get_bytes("/log")).status, 200, "reads still work");
}

#[test]
fn kill_9_loses_no_acknowledged_body() {
    kill_9(TempPool::new("kill"));
}

#[test]
fn kill_9_loses_no_acknowledged_body_page_domain() {
    kill_9(TempPool::on_disk("kill"));
}

/// Power failures of the real binary through its test switch
/// (`--simulate-power-failures`, `GET /debug/powerfail`):
/// `PACKETSTORE_WAL_POWERFAILS` (25) per simulator mode.
#[test]
fn power_failures_of_the_binary_lose_no_acknowledged_body() {
    let rounds = std::env::var("PACKETSTORE_WAL_POWERFAILS").ok().and_then(|v| v.parse().ok()).unwrap_or(25);
    for mode in ["cache-line", "page"] {
        restarts(TempPool::new(&format!("wal-power-{mode}")), Some(mode), rounds);
    }
}

#[test]
fn the_power_switch_is_refused_by_a_normal_server() {
    let pool = TempPool::new("wal-switch");
    let server = Server::start(&pool.0, &[]);
    let response = exchange(&server, &get_bytes("/debug/powerfail?seed=1&fences=1"));
    assert_eq!(response.status, 403, "a normal server must not arm the simulator");
}

/// Kills per storage: `PACKETSTORE_WAL_KILLS`, 100 by default.
fn wal_kills() -> u64 {
    std::env::var("PACKETSTORE_WAL_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100)
}

fn kill_9(pool: TempPool) {
    restarts(pool, None, wal_kills());
}

/// Stops the server `rounds` times under load, by SIGKILL or (with a
/// simulator mode) by a simulated power failure, and checks the bodies.
fn restarts(pool: TempPool, power: Option<&str>, rounds: u64) {
    // Writers POST distinct bodies and note every acknowledged X-Seq; the
    // server is killed at a random moment, restarted, and the records must
    // read back byte for byte: after each restart those of the last run
    // and a random sample of the older ones, and at the end all of them.
    let mut rng = SplitMix64::new(42);
    let mut acked: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut last_round: Vec<u64> = Vec::new();
    let (extra, env): (Vec<&str>, Vec<(&str, &str)>) = match power {
        Some(mode) => (vec!["--simulate-power-failures", mode], vec![("PACKETSTORE_ENABLE_TEST_SWITCHES", "1")]),
        None => (vec![], vec![]),
    };
    for round in 0..rounds {
        let mut server = Server::start_env(&pool.0, &extra, &env);
        let older: Vec<u64> = acked.keys().copied().collect();
        let sample = (0..200.min(older.len())).map(|_| older[rng.below(older.len() as u64) as usize]);
        for seq in last_round.iter().copied().chain(sample) {
            let data = &acked[&seq];
            let response = exchange(&server, &get_bytes(&format!("/log/{seq}")));
            assert!(response.status == 200 && response.body == *data, "round {round}: record {seq} lost or damaged");
        }
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let addr = server.addr;
                std::thread::spawn(move || {
                    let mut done = Vec::new();
                    let Ok(mut stream) = TcpStream::connect(addr) else { return done };
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    for i in 0.. {
                        let data = body(round << 40 | w << 32 | i, 1 + (i as usize * 997) % 20_000);
                        if stream.write_all(&post_bytes(&data)).is_err() {
                            break;
                        }
                        match read_response(&mut reader) {
                            Some(response) if response.status == 200 => done.push((response.seq(), data)),
                            _ => break,
                        }
                    }
                    done
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50 + rng.below(250)));
        match power {
            None => server.kill(),
            Some(_) => {
                let fences = 1 + rng.below(40);
                // The reply may never come: the power can fail at the very
                // sync that would release it.
                let mut stream = server.connect();
                stream.write_all(&get_bytes(&format!("/debug/powerfail?seed={round}&fences={fences}"))).unwrap();
                if let Some(armed) = read_response(&mut BufReader::new(stream)) {
                    assert_eq!(armed.status, 200, "round {round}: the switch refused");
                }
                // The armed fence comes with the next syncs: if the writers
                // stopped before it (an error ends each), POSTs go on until
                // it does (an idle server syncs nothing; the test once
                // waited 60 s for a failure that had nothing left to hit).
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                while !server.wait_exit(Duration::from_millis(500)) {
                    assert!(std::time::Instant::now() < deadline, "round {round}: the power never failed");
                    if let Ok(mut nudge) = TcpStream::connect(server.addr) {
                        let _ = nudge.write_all(&post_bytes(&body(round << 40 | 5 << 32, 100)));
                        let _ = read_response(&mut BufReader::new(nudge));
                    }
                }
                let said = common::lines_until_end(&server.lines);
                assert!(
                    said.iter().any(|l| l.starts_with("power failed (simulated)")),
                    "round {round}: the server stopped for another reason: {said:?}"
                );
            }
        }
        last_round.clear();
        for writer in writers {
            let done = writer.join().unwrap();
            last_round.extend(done.iter().map(|(seq, _)| *seq));
            acked.extend(done);
        }
    }
    assert!(acked.len() > 100, "only {} bodies acknowledged", acked.len());
    eprintln!("{}: {rounds} restarts, {} bodies acknowledged", pool.0.display(), acked.len());
    let server = Server::start_env(&pool.0, &extra, &env);
    for (seq, data) in &acked {
        let response = exchange(&server, &get_bytes(&format!("/log/{seq}")));
        assert!(response.status == 200 && response.body == *data, "record {seq} lost or damaged");
    }
}

#[test]
fn two_event_loops_share_one_pool() {
    // SO_REUSEPORT spreads connections over two loops, each with its own
    // log and buffers; any loop serves any record; a restart keeps them.
    let pool = TempPool::new("threads");
    let mut acked = BTreeMap::new();
    {
        let server = Server::start(&pool.0, &["--threads", "2"]);
        for i in 0..40u64 {
            let data = body(9000 + i, 100 + i as usize * 50);
            let response = exchange(&server, &post_bytes(&data));
            assert_eq!(response.status, 200);
            acked.insert(response.seq(), data);
        }
        let logs: std::collections::BTreeSet<u64> = acked.keys().map(|seq| (seq - 1) % 2).collect();
        assert_eq!(logs.len(), 2, "40 connections all went to one loop: {:?}", acked.keys());
        for _ in 0..2 {
            for (seq, data) in &acked {
                let response = exchange(&server, &get_bytes(&format!("/log/{seq}")));
                assert!(response.status == 200 && response.body == *data, "record {seq} from another connection");
            }
        }
        server.kill();
    }
    let server = Server::start(&pool.0, &["--threads", "2"]);
    for (seq, data) in &acked {
        assert!(exchange(&server, &get_bytes(&format!("/log/{seq}"))).body == *data, "record {seq} after restart");
    }
    server.kill();
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args(["wal", "--pool", pool.0.to_str().unwrap(), "--listen", "127.0.0.1:0", "--threads", "1"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("run it with --threads 2"), "{stderr}");
}
