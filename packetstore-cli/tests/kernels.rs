//! Goal: on kernels older than the project's (Debian 12's 6.1, Ubuntu
//! 24.04's 6.8, 6.12), the servers start, serve and stop as on a new one,
//! each missing io_uring feature costing a fallback and one line in the
//! log; where io_uring is blocked (a container's seccomp profile), they
//! exit at once with an error that says to use `--io epoll --persist copy`,
//! which then works.
//!
//! Method: CI's kernel has every feature, so the fallbacks are forced with
//! `PACKETSTORE_URING_DISABLE` (the switch each one's code path takes on an
//! old kernel), one at a time and all at once, and both servers are
//! checked through real clients (the redis crate, HTTP over sockets) and
//! their log. io_uring is blocked for real, for the child only, with a
//! seccomp filter that fails io_uring_setup with EPERM (Docker's default
//! profile) or ENOSYS. `tests/kernels/run-debian-6.1.sh` is the manual
//! check on Debian 12's own kernel.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use redis::Commands;

mod common;
use common::{Server, TempPool};

/// Each fallback alone, then all of them: (switch value, features it
/// turns off, words of each one's log line).
const FALLBACKS: [(&str, &[&str]); 4] = [
    ("defer-taskrun", &["deferred task work (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, Linux 6.1)"]),
    ("incremental", &["incremental buffer consumption (IOU_PBUF_RING_INC, Linux 6.12)"]),
    ("receive-limit", &["the multishot receive byte limit (sqe->optlen of a multishot receive, Linux 6.17)"]),
    (
        "all",
        &[
            "deferred task work (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, Linux 6.1)",
            "incremental buffer consumption (IOU_PBUF_RING_INC, Linux 6.12)",
            "the multishot receive byte limit (sqe->optlen of a multishot receive, Linux 6.17)",
        ],
    ),
];

/// The log lines that announce a fallback.
fn fallback_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|line| line.contains("io_uring: ")).collect()
}

/// Checks that `log` has one line per forced fallback, naming it.
fn assert_fallbacks_logged(log: &str, switch: &str, titles: &[&str]) {
    let lines = fallback_lines(log);
    assert_eq!(lines.len(), titles.len(), "{switch}: one line per fallback:\n{log}");
    for (line, title) in lines.iter().zip(titles) {
        assert!(line.contains("WARN") && line.contains(title), "{switch}: {line}");
        assert!(line.contains("disabled by PACKETSTORE_URING_DISABLE"), "{switch}: {line}");
    }
}

/// One HTTP/1.1 request on a fresh connection (closed by the server):
/// the status and the body.
fn http(addr: SocketAddr, request: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let head_end = reply.windows(4).position(|w| w == b"\r\n\r\n").expect("a reply head") + 4;
    let head = String::from_utf8_lossy(&reply[..head_end]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, reply[head_end..].to_vec())
}

fn value(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 + seed * 7) as u8).collect()
}

/// SETs and GETs through the redis crate (small values, a pipeline of
/// 1,000, values of 2 KiB ± 1 and 300 KiB that straddle receive buffers),
/// PUT and GET over HTTP; returns what was written.
fn exercise_kv(server: &Server, tag: &str) -> Vec<(String, Vec<u8>)> {
    let mut c = server.client();
    let mut written = Vec::new();
    for (i, len) in [0usize, 1, 100, 2047, 2048, 2049, 70_000, 300 << 10].into_iter().enumerate() {
        let key = format!("{tag}:size:{len}");
        let () = c.set(&key, value(i, len)).unwrap();
        written.push((key, value(i, len)));
    }
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.set(format!("{tag}:p:{i}"), value(i, 1024)).ignore();
        written.push((format!("{tag}:p:{i}"), value(i, 1024)));
    }
    let () = pipe.query(&mut c).unwrap();
    for (key, expected) in &written {
        let got: Vec<u8> = c.get(key).unwrap();
        assert!(got == *expected, "{tag}: GET {key}: {} bytes, expected {}", got.len(), expected.len());
    }
    let body = value(99, 5000);
    let mut put = format!("PUT /kv/{tag}:http HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
        .into_bytes();
    put.extend_from_slice(&body);
    assert_eq!(http(server.http, &put).0, 204, "{tag}: HTTP PUT");
    let (status, got) =
        http(server.http, format!("GET /kv/{tag}:http HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes());
    assert_eq!((status, got == body), (200, true), "{tag}: HTTP GET");
    written.push((format!("{tag}:http"), body));
    written
}

fn sigterm(child: &std::process::Child) {
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
}

#[test]
fn the_key_value_server_serves_with_every_fallback_forced() {
    for (switch, titles) in FALLBACKS {
        let pool = TempPool::new(&format!("fallback-kv-{switch}"));
        let log = pool.0.with_extension("log");
        // Two shards once: still one line per fallback for the process.
        let shards = if switch == "all" { "2" } else { "1" };
        let env = [("PACKETSTORE_URING_DISABLE", switch)];
        let mut server = Server::start_env_logging(&pool.0, &["--shards", shards], &env, &log);
        let banner = server.banner().join("\n");
        let unlimited = banner.contains("receive per turn unlimited");
        assert_eq!(unlimited, titles.iter().any(|t| t.contains("receive byte limit")), "{switch}: {banner}");
        let written = exercise_kv(&server, switch);
        sigterm(&server.child);
        assert!(server.wait_exit(Duration::from_secs(20)), "{switch}: the server did not stop");
        assert!(server.child.wait().unwrap().success(), "{switch}: a graceful stop exits 0");
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_fallbacks_logged(&text, switch, titles);
        assert!(text.contains("stopped: every reply sent; checkpoint"), "{switch}: {text}");

        // Restarted with every feature, it finds every write.
        let server = Server::start(&pool.0, &[]);
        let banner = server.banner().join("\n");
        assert!(banner.contains(" 0 log records replayed"), "{switch}: {banner}");
        let mut c = server.client();
        for (key, expected) in &written {
            let got: Vec<u8> = c.get(key).unwrap();
            assert!(got == *expected, "{switch}: {key} after a restart");
        }
    }
}

/// POSTs bodies that straddle receive buffers, one by one and pipelined,
/// and reads each back with GET /log/<seq>.
fn exercise_wal(addr: SocketAddr, tag: &str) {
    let mut acknowledged = Vec::new();
    let mut pipelined = Vec::new();
    for (i, len) in [1usize, 2047, 2048, 2049, 100_000].into_iter().enumerate() {
        let body = value(i, len);
        let mut request = format!("POST /wal HTTP/1.1\r\nContent-Length: {len}\r\n\r\n").into_bytes();
        request.extend_from_slice(&body);
        pipelined.extend_from_slice(&request);
        acknowledged.push(body);
    }
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(&pipelined).unwrap();
    let mut reader = BufReader::new(stream);
    let mut seqs = Vec::new();
    for _ in 0..acknowledged.len() {
        let (mut seq, mut length) = (None, 0);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{tag}: {line}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            let header = line.to_ascii_lowercase();
            if let Some(value) = header.strip_prefix("x-seq:") {
                seq = Some(value.trim().parse::<u64>().unwrap());
            }
            if let Some(value) = header.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        reader.read_exact(&mut vec![0u8; length]).unwrap();
        seqs.push(seq.expect("an X-Seq"));
    }
    for (seq, body) in seqs.iter().zip(&acknowledged) {
        let (status, got) = http(addr, format!("GET /log/{seq} HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!((status, got == *body), (200, true), "{tag}: GET /log/{seq}");
    }
}

#[test]
fn the_wal_server_serves_with_every_fallback_forced() {
    for (switch, titles) in FALLBACKS {
        let pool = TempPool::new(&format!("fallback-wal-{switch}"));
        let log = pool.0.with_extension("log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
        command
            .env("PACKETSTORE_URING_DISABLE", switch)
            .args(["wal", "--pool", pool.0.to_str().unwrap(), "--pool-size", "64MiB", "--log-size", "4MiB"])
            .args(["--listen", "127.0.0.1:0", "--ring-entries", "256", "--threads", "2"])
            .stderr(std::fs::File::create(&log).unwrap());
        let (mut child, addr, _lines) = common::spawn_wal(&mut command);
        exercise_wal(addr, switch);
        sigterm(&child);
        assert!(child.wait().unwrap().success(), "{switch}: a graceful stop exits 0");
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        // Two event loops, one probe: one line per fallback.
        assert_fallbacks_logged(&text, switch, titles);
    }
}

/// A seccomp filter that fails io_uring_setup with `errno` and allows
/// everything else, as a container's default profile does.
fn io_uring_blocked(command: &mut Command, errno: i32) -> &mut Command {
    const LOAD_WORD_ABSOLUTE: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;
    let instruction = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let program = [
        instruction(LOAD_WORD_ABSOLUTE, 0, 0, 4), // seccomp_data.arch
        instruction(JUMP_IF_EQUAL, 1, 0, AUDIT_ARCH),
        instruction(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
        instruction(LOAD_WORD_ABSOLUTE, 0, 0, 0), // seccomp_data.nr
        instruction(JUMP_IF_EQUAL, 0, 1, libc::SYS_io_uring_setup as u32),
        instruction(RETURN, 0, 0, libc::SECCOMP_RET_ERRNO | errno as u32),
        instruction(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    // SAFETY: runs in the child between fork and exec: two prctl calls
    // (async-signal-safe) over memory allocated before the fork.
    unsafe {
        command.pre_exec(move || {
            let filter = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &filter) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// Runs `packetstore ARGS` with io_uring blocked; returns its exit code
/// and stderr once it exits (within 20 s).
fn run_blocked(args: &[&str], errno: i32) -> (i32, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    io_uring_blocked(&mut command, errno).args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "{args:?}: still running with io_uring blocked");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (child.wait().unwrap().code().unwrap_or(-1), stderr)
}

#[test]
fn where_io_uring_is_blocked_the_error_says_to_use_epoll() {
    for (errno, cause) in [(libc::EPERM, "io_uring is blocked here"), (libc::ENOSYS, "this kernel has no io_uring")] {
        let pool = TempPool::new(&format!("blocked-{errno}"));
        let path = pool.0.to_str().unwrap();
        for args in [
            &["serve", "--pool", path, "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"][..],
            &["wal", "--pool", path, "--listen", "127.0.0.1:0"],
        ] {
            let (code, stderr) = run_blocked(args, errno);
            assert_eq!(code, 1, "{args:?}: {stderr}");
            assert!(stderr.contains(cause), "{args:?}: {stderr}");
            assert!(stderr.contains("run with --io epoll --persist copy, which needs no io_uring"), "{stderr}");
            // It said so before recovery: no pool was created.
            assert!(!Path::new(path).exists(), "{args:?}: the pool was created before the probe");
        }
    }
}

#[test]
fn where_io_uring_is_blocked_epoll_serves() {
    let pool = TempPool::new("blocked-epoll");
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    io_uring_blocked(&mut command, libc::EPERM)
        .args(["serve", "--pool", pool.0.to_str().unwrap(), "--pool-size", "256MiB", "--io", "epoll"])
        .args(["--persist", "copy", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .stdout(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (http, resp) = loop {
        let line = lines.next().expect("the epoll server exited before listening").unwrap();
        if let Some(rest) = line.strip_prefix("listening: http ") {
            let words: Vec<&str> = rest.split([' ', ',']).filter(|w| !w.is_empty()).collect();
            break (words[0].parse().unwrap(), words[2].parse().unwrap());
        }
    };
    let server = Server { child, http, resp, lines: std::sync::mpsc::channel().1 };
    exercise_kv(&server, "epoll");
    drop(server);

    let wal_pool = TempPool::new("blocked-epoll-wal");
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    io_uring_blocked(&mut command, libc::EPERM)
        .args(["wal", "--pool", wal_pool.0.to_str().unwrap(), "--pool-size", "64MiB", "--log-size", "4MiB"])
        .args(["--io", "epoll", "--persist", "copy", "--listen", "127.0.0.1:0"]);
    let (mut child, addr, _lines) = common::spawn_wal(&mut command);
    exercise_wal(addr, "epoll");
    let _ = child.kill();
    let _ = child.wait();
}
