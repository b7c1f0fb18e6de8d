//! What the binary's integration tests share: a pool file that is removed
//! when the test ends, and `packetstore serve` started on ephemeral ports.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A pool path, unique to this test process, deleted on drop with the
/// other shards' pools beside it (`kv.1.pool`, ...: `--shards N`).
pub struct TempPool(pub PathBuf);

impl TempPool {
    /// On tmpfs: the cache-line domain (emulated persistent memory).
    pub fn new(name: &str) -> TempPool {
        Self::at("/dev/shm", name)
    }

    /// On the project's disk: the page domain (fdatasync through io_uring).
    pub fn on_disk(name: &str) -> TempPool {
        Self::at(env!("CARGO_TARGET_TMPDIR"), name)
    }

    fn at(dir: &str, name: &str) -> TempPool {
        let path = PathBuf::from(dir).join(format!("packetstore-test-{name}-{}.pool", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempPool(path)
    }
}

impl Drop for TempPool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        for index in 1..=256 {
            let _ = std::fs::remove_file(packetstore::pool::layout::shard_path(&self.0, index));
        }
    }
}

/// `packetstore serve` on ephemeral ports, killed on drop.
pub struct Server {
    pub child: Child,
    pub http: SocketAddr,
    pub resp: SocketAddr,
    pub lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    pub fn start(pool: &Path, extra: &[&str]) -> Server {
        Self::start_env(pool, extra, &[])
    }

    /// `start` with environment variables (test switches).
    pub fn start_env(pool: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Self::spawn(pool, extra, env, Stdio::inherit())
    }

    /// `start` with the server's log (stderr) written to `log`.
    pub fn start_logging(pool: &Path, extra: &[&str], log: &Path) -> Server {
        Self::start_env_logging(pool, extra, &[], log)
    }

    /// `start_env` with the server's log (stderr) written to `log`.
    pub fn start_env_logging(pool: &Path, extra: &[&str], env: &[(&str, &str)], log: &Path) -> Server {
        Self::spawn(pool, extra, env, Stdio::from(std::fs::File::create(log).unwrap()))
    }

    fn spawn(pool: &Path, extra: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_packetstore"))
            .envs(env.iter().copied())
            .args(["serve", "--pool", pool.to_str().unwrap(), "--pool-size", "256MiB", "--ring-entries", "1024"])
            .args(["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        let (http, resp) = loop {
            let line = stdout.next().unwrap_or_else(|| panic!("the server exited before listening: {seen:?}")).unwrap();
            if let Some(rest) = line.strip_prefix("listening: http ") {
                let mut words = rest.split([' ', ',']).filter(|w| !w.is_empty());
                let http = words.next().unwrap().parse().unwrap();
                assert_eq!(words.next(), Some("redis"));
                let resp = words.next().unwrap().parse().unwrap();
                break (http, resp);
            }
            seen.push(line);
        };
        let (send, lines) = std::sync::mpsc::channel();
        for line in seen {
            send.send(line).unwrap();
        }
        std::thread::spawn(move || {
            for line in stdout.map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Server { child, http, resp, lines }
    }

    /// Every line the server printed that was not taken yet, once it
    /// exited: read until its output ends (the thread reading it may lag
    /// behind the exit on a busy machine), 10 s at most.
    pub fn lines_at_exit(&self) -> Vec<String> {
        lines_until_end(&self.lines)
    }

    /// The start-up lines printed before listening.
    pub fn banner(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    pub fn client(&self) -> redis::Connection {
        let client = redis::Client::open(format!("redis://{}/", self.resp)).unwrap();
        let connection = client.get_connection_with_timeout(Duration::from_secs(10)).unwrap();
        connection.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        connection
    }

    /// A connection, or None while the server does not take one (it is
    /// restarting in place, or stopped).
    pub fn try_client(&self) -> Option<redis::Connection> {
        let client = redis::Client::open(format!("redis://{}/", self.resp)).ok()?;
        let connection = client.get_connection_with_timeout(Duration::from_secs(2)).ok()?;
        connection.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        Some(connection)
    }

    /// Waits for the process to exit by itself; false after `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// A server the caller's `command` starts (`packetstore serve` with its
    /// own addresses, under a wrapper such as `ip netns exec`), once it
    /// prints its listening line; its stdout is piped here.
    pub fn start_command(command: &mut Command) -> Server {
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let (send, lines) = std::sync::mpsc::channel();
        let (http, resp) = loop {
            let Some(Ok(line)) = stdout.next() else {
                let _ = child.kill();
                let status = child.wait();
                let seen: Vec<String> = lines.try_iter().collect();
                panic!("the server exited before listening ({status:?}): {seen:?}");
            };
            if let Some(rest) = line.strip_prefix("listening: http ") {
                let mut words = rest.split([' ', ',']).filter(|w| !w.is_empty());
                let http = words.next().unwrap().parse().unwrap();
                assert_eq!(words.next(), Some("redis"));
                let resp = words.next().unwrap().parse().unwrap();
                break (http, resp);
            }
            send.send(line).unwrap();
        };
        std::thread::spawn(move || {
            for line in stdout.map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Server { child, http, resp, lines }
    }
}

/// `packetstore wal` on an ephemeral port, killed on drop unless it has
/// exited.
pub struct Wal {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Wal {
    pub fn start(pool: &Path, extra: &[&str]) -> Wal {
        let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
        command
            .args(["wal", "--pool", pool.to_str().unwrap(), "--pool-size", "64MiB", "--log-size", "4MiB"])
            .args(["--listen", "127.0.0.1:0", "--ring-entries", "256"])
            .args(extra);
        let (child, addr, _) = spawn_wal(&mut command);
        Wal { child, addr }
    }
}

/// Spawns a `packetstore wal` command and reads its stdout up to its
/// "listening on ADDR" line: the child, the address, and the rest of its
/// output.
pub fn spawn_wal(command: &mut Command) -> (Child, SocketAddr, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the server exited before listening").unwrap();
        if let Some(rest) = line.strip_prefix("listening on ") {
            break rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    (child, addr, lines)
}

impl Drop for Wal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- a raw RESP client: replies as text, for exact checks ----

/// One RESP reply, read whole: its first line and, for aggregates, their
/// elements' in brackets (enough to tell an error from an answer).
pub fn read_reply(reader: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end().to_string();
    let (kind, rest) = line.split_at(1);
    let n: i64 = rest.parse().unwrap_or(0);
    match kind {
        "$" | "=" | "!" if n >= 0 => {
            let mut body = vec![0; n as usize + 2];
            reader.read_exact(&mut body)?;
        }
        "*" | "~" | ">" | "%" | "|" if n > 0 => {
            let count = if kind == "%" || kind == "|" { 2 * n } else { n };
            let elements = (0..count).map(|_| read_reply(reader)).collect::<std::io::Result<Vec<_>>>()?;
            return Ok(format!("{line} [{}]", elements.join(", ")));
        }
        _ => {}
    }
    Ok(line)
}

/// One RESP2 or RESP3 reply, its exact bytes (bulk bodies included).
pub fn read_raw_reply(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let n: i64 = std::str::from_utf8(&line[1..]).ok().and_then(|n| n.trim_end().parse().ok()).unwrap_or(0);
    match line[0] {
        b'$' | b'=' | b'!' if n >= 0 => {
            let mut body = vec![0; n as usize + 2];
            reader.read_exact(&mut body)?;
            line.extend_from_slice(&body);
        }
        b'*' | b'~' | b'>' | b'%' | b'|' if n > 0 => {
            let count = if matches!(line[0], b'%' | b'|') { 2 * n } else { n };
            for _ in 0..count {
                line.extend(read_raw_reply(reader)?);
            }
        }
        _ => {}
    }
    Ok(line)
}

/// One reply as a tree, for comparisons that must leave out an order a
/// server leaves open: a line (its type byte first), a bulk string, or an
/// aggregate (its type byte; a map's keys and values alternate).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    Line(String),
    Bulk(Vec<u8>),
    Agg(u8, Vec<Resp>),
}

impl Resp {
    /// The reply's exact bytes back.
    pub fn parse(bytes: &[u8]) -> Resp {
        read_resp(&mut std::io::Cursor::new(bytes)).expect("a whole reply")
    }

    pub fn items(&self) -> &[Resp] {
        match self {
            Resp::Agg(_, items) => items,
            other => panic!("not an aggregate: {other:?}"),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Resp::Bulk(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Resp::Line(line) => line[1..].to_string(),
            other => panic!("not a string: {other:?}"),
        }
    }
}

pub fn read_resp(reader: &mut impl BufRead) -> std::io::Result<Resp> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end().to_string();
    let kind = line.as_bytes()[0];
    let n: i64 = line[1..].parse().unwrap_or(0);
    match kind {
        b'$' | b'=' | b'!' if n >= 0 => {
            let mut body = vec![0; n as usize + 2];
            reader.read_exact(&mut body)?;
            body.truncate(n as usize);
            Ok(Resp::Bulk(body))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' if n >= 0 => {
            let count = if kind == b'%' || kind == b'|' { 2 * n } else { n };
            Ok(Resp::Agg(kind, (0..count).map(|_| read_resp(reader)).collect::<std::io::Result<_>>()?))
        }
        _ => Ok(Resp::Line(line)),
    }
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

pub struct Raw {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Raw {
    pub fn connect(server: &Server) -> Raw {
        let stream = TcpStream::connect(server.resp).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Raw { reader: BufReader::new(stream.try_clone().unwrap()), stream }
    }

    pub fn call(&mut self, args: &[&[u8]]) -> std::io::Result<String> {
        self.stream.write_all(&encode(args))?;
        read_reply(&mut self.reader)
    }

    /// A connection to any RESP server (a redis-server beside the test's).
    pub fn connect_to(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Raw { reader: BufReader::new(stream.try_clone().unwrap()), stream }
    }

    /// A call's reply, its exact bytes.
    pub fn call_raw(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|arg| arg.as_bytes()).collect();
        self.stream.write_all(&encode(&args)).unwrap();
        read_raw_reply(&mut self.reader).unwrap()
    }

    /// A call's reply, as a tree.
    pub fn call_resp(&mut self, args: &[&str]) -> Resp {
        Resp::parse(&self.call_raw(args))
    }
}

impl Raw {
    /// Sends a command without reading its reply.
    pub fn send(&mut self, args: &[&[u8]]) -> std::io::Result<()> {
        self.stream.write_all(&encode(args))
    }

    /// The connection, to write raw bytes on it.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Reads the next reply (or pushed message).
    pub fn read(&mut self) -> std::io::Result<String> {
        read_reply(&mut self.reader)
    }
}

/// A port free now, below the kernel's ephemeral range (32768 and up), for
/// servers that must keep their ports across restarts (a group's peers, a
/// node that re-executes itself): a port from that range can be taken
/// meanwhile as the source port of some outgoing connection.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + std::process::id() * 7;
        let port = 20_000 + (n % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The python of a virtualenv (under the target directory, made on first
/// use) with redis-py `version` installed from PyPI (scripts/test.sh
/// installs python3-venv).
pub fn redis_py(version: &str) -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redis-py-{version}"));
    let python = venv.join("bin/python");
    if !python.exists() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().expect("python3");
        assert!(made.success(), "python3 -m venv failed (Debian: apt-get install python3-venv)");
        let package = format!("redis=={version}");
        let pip = Command::new(venv.join("bin/pip")).args(["install", "-q", &package]).status().expect("pip");
        assert!(pip.success(), "pip install {package} failed");
    }
    python
}

/// ioredis `version` installed once under the target directory (npm from
/// its registry); the path to `require`. Node.js 20 or newer runs it.
pub fn ioredis(version: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ioredis-{version}"));
    let module = dir.join("node_modules/ioredis");
    if !module.join("package.json").exists() {
        let package = format!("ioredis@{version}");
        let npm = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(&package)
            .status()
            .expect("npm (scripts/test.sh installs it)");
        assert!(npm.success(), "npm install {package} failed");
    }
    module
}

/// A sharded data set's pool files (`kv.pool`, `kv.1.pool`, ...), removed
/// when the test ends.
pub struct ShardPools {
    pub first: TempPool,
    pub count: u16,
}

impl ShardPools {
    pub fn new(name: &str, count: u16) -> ShardPools {
        let pools = ShardPools { first: TempPool::new(name), count };
        pools.remove();
        pools
    }

    pub fn path(&self, index: u16) -> PathBuf {
        let first = &self.first.0;
        if index == 0 {
            return first.clone();
        }
        let stem = first.file_stem().unwrap().to_string_lossy();
        first.with_file_name(format!("{stem}.{index}.pool"))
    }

    pub fn remove(&self) {
        for index in 0..self.count.max(8) {
            let _ = std::fs::remove_file(self.path(index));
        }
    }
}

impl Drop for ShardPools {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The error a command was answered with (its code, then the message).
pub fn error_text<T: std::fmt::Debug>(result: redis::RedisResult<T>) -> String {
    match result {
        Err(error) => format!("{} {}", error.code().unwrap_or(""), error),
        Ok(value) => panic!("expected an error, got {value:?}"),
    }
}

/// An HTTP response: status, headers (lower case), body; None on a closed
/// or broken connection.
pub fn read_response(reader: &mut impl BufRead) -> Option<(u16, std::collections::HashMap<String, String>, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let status = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = std::collections::HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length").map_or(0, |l| l.parse().unwrap());
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((status, headers, body))
}

/// Writes unique keys through a replicated group's three nodes in turn
/// (the next after every 50th, and after any error) until `stop`; returns
/// the acknowledged ones.
pub fn group_writer(
    addresses: std::sync::Arc<std::sync::Mutex<Vec<Option<SocketAddr>>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::collections::BTreeMap<String, String> {
    let mut acked = std::collections::BTreeMap::new();
    let mut n = 0u64;
    let mut node = 0usize;
    let mut connection: Option<redis::Connection> = None;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if connection.is_none() {
            node = (node + 1) % 3;
            let Some(addr) = addresses.lock().unwrap()[node] else { continue };
            let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
            match client.get_connection_with_timeout(Duration::from_secs(1)) {
                Ok(c) => {
                    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    connection = Some(c);
                }
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
            }
        }
        n += 1;
        let key = format!("w:{n}");
        let value = format!("value-{n}-{}", "x".repeat((n % 7) as usize * 40));
        let result: redis::RedisResult<()> =
            redis::cmd("SET").arg(&key).arg(&value).query(connection.as_mut().unwrap());
        match result {
            Ok(()) => {
                acked.insert(key, value);
                // Next write through the next node, now and then.
                if n % 50 == 0 {
                    connection = None;
                }
            }
            Err(_) => {
                connection = None;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    acked
}

/// The lines `lines` still brings until its sender is gone (the server's
/// output ended), 10 s at most.
pub fn lines_until_end(lines: &std::sync::mpsc::Receiver<String>) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut said = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => said.push(line),
            Err(_) => break,
        }
    }
    said
}
