//! Goal: a supervisor that restarts a server at once after `kill -9`, on
//! the same ports, always gets it back with every acknowledged write (the
//! dead process's listening socket can outlive it by a moment, while its
//! io_uring is torn down: the new server waits for it); a server that
//! cannot listen, or whose new pool would be too small, stops with an
//! error that says why and leaves no pool file; host names are accepted as
//! listening addresses; an address the network can reach without a
//! password is warned about.
//!
//! Method: the real binary. The restart rounds run `serve` and `wal` (two
//! event loops on one port, SO_REUSEPORT), each with its pool on tmpfs and
//! on the project's ext4 disk, the four in parallel: each round loads the
//! server from several connections, kills it with SIGKILL, reaps it, and
//! starts it again at once on the ports the first round got (the load's
//! clients are collected after that: waiting for them to notice the death
//! first gave the kernel time to close the listeners, and no serve restart
//! met one; with --bind-timeout 0 every combination fails within a few
//! rounds, and the test asserts that some restart did wait); the new
//! server must print its listening line, answer real requests on every
//! listener, and return every acknowledged write (serve: every key, every
//! round; wal: the last round's bodies and a sample each round, all at the
//! end). The other tests hold a port with a listener of this process, or
//! ask for a pool too small, and read the error.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use packetstore::util::rng::SplitMix64;

mod common;
use common::{read_response, Server, TempPool};

/// Restarts per server and storage: `PACKETSTORE_RESTARTS` (100).
fn rounds() -> u64 {
    std::env::var("PACKETSTORE_RESTARTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100)
}

/// What a server logs when it starts waiting for its address.
const WAITING: &str = "is in use; trying again";

/// Every connection's reads and writes give up after this (a dead server's
/// connections are closed by the kernel; this only bounds a bug).
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// One server and storage's restart rounds: their summary, and how many
/// restarts found the dead server's listener still there.
type Run = Box<dyn FnOnce() -> (String, usize) + Send>;

#[test]
fn kill_9_then_an_immediate_restart_on_the_same_ports_loses_nothing() {
    let started = Instant::now();
    let runs: Vec<(&str, Run)> = vec![
        ("serve on tmpfs", Box::new(|| serve_restarts(TempPool::new("restart-serve")))),
        ("serve on ext4", Box::new(|| serve_restarts(TempPool::on_disk("restart-serve")))),
        ("wal on tmpfs", Box::new(|| wal_restarts(TempPool::new("restart-wal")))),
        ("wal on ext4", Box::new(|| wal_restarts(TempPool::on_disk("restart-wal")))),
    ];
    let handles: Vec<_> = runs.into_iter().map(|(name, run)| (name, std::thread::spawn(run))).collect();
    let (mut failed, mut waits) = (Vec::new(), 0);
    for (name, handle) in handles {
        match handle.join() {
            Ok((summary, waited)) => {
                eprintln!("{name}: {summary}");
                waits += waited;
            }
            Err(_) => failed.push(name),
        }
    }
    eprintln!("all four in {:.1} s", started.elapsed().as_secs_f64());
    assert!(failed.is_empty(), "failed: {failed:?} (their panics are above)");
    // Most restarts here meet the lingering listener (bench/linger.py); if
    // none did, this test proved nothing about waiting for it.
    assert!(waits > 0, "no restart found the dead server's listener still there: the wait went untested");
}

/// A server's stderr, in a file next to its pool.
fn log_path(pool: &Path) -> PathBuf {
    pool.with_extension("log")
}

/// Whether the server that wrote `log` waited for its address.
fn waited(log: &Path) -> bool {
    std::fs::read_to_string(log).unwrap_or_default().contains(WAITING)
}

/// Kills and reaps, as a supervisor does before restarting.
fn kill_and_reap(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

// ---- serve ----

const SERVE_CLIENTS: usize = 3;
const SERVE_KEYS_PER_CLIENT: u64 = 100;
const SERVE_SIZES: [&str; 8] =
    ["--pool-size", "64MiB", "--log-size", "8MiB", "--ring-entries", "256", "--bind-timeout", "10s"];

/// One client's keys: their acknowledged values, and the write in flight
/// when the server died (it may or may not have been applied).
#[derive(Default)]
struct Keys {
    acknowledged: HashMap<String, Vec<u8>>,
    in_flight: Option<(String, Vec<u8>)>,
    writes: u64,
}

fn serve_restarts(pool: TempPool) -> (String, usize) {
    let log = log_path(&pool.0);
    let mut clients: Vec<Keys> = (0..SERVE_CLIENTS).map(|_| Keys::default()).collect();
    let mut ports: Vec<String> = vec!["127.0.0.1:0".into(), "127.0.0.1:0".into()];
    // The last round's load, collected after the restart: a supervisor
    // restarts as soon as it has reaped, not once the clients have noticed.
    let mut writers: Vec<std::thread::JoinHandle<Keys>> = Vec::new();
    let (mut waits, rounds) = (0, rounds());
    for round in 0..=rounds {
        let args = [&SERVE_SIZES[..], &["--http", &ports[0], "--resp", &ports[1]]].concat();
        let mut server = Server::start_logging(&pool.0, &args, &log);
        ports = vec![server.http.to_string(), server.resp.to_string()];
        waits += usize::from(waited(&log));
        if !writers.is_empty() {
            clients = writers.drain(..).map(|w| w.join().unwrap()).collect();
        }
        let mut c = server.client();
        assert_eq!(http_status(server.http, b"GET /kv/nothing HTTP/1.1\r\n\r\n"), 404, "round {round}: HTTP");
        for keys in &mut clients {
            check_keys(&mut c, keys, round);
        }
        if round == rounds {
            break;
        }
        let resp = server.resp;
        writers = std::mem::take(&mut clients)
            .into_iter()
            .enumerate()
            .map(|(client, keys)| std::thread::spawn(move || set_until_dead(resp, client, round, keys)))
            .collect();
        std::thread::sleep(Duration::from_millis(50 + (round * 37) % 200));
        kill_and_reap(&mut server.child);
    }
    let _ = std::fs::remove_file(&log);
    let writes: u64 = clients.iter().map(|keys| keys.writes).sum();
    assert!(writes >= rounds, "only {writes} SETs acknowledged over {rounds} rounds: the load proved little");
    let summary = format!(
        "{rounds} immediate restarts on {ports:?}, {waits} waited for a port, {writes} SETs acknowledged, none lost"
    );
    (summary, waits)
}

/// After a restart: the write in flight counts if it was applied; then
/// every key must read exactly as acknowledged.
fn check_keys(c: &mut redis::Connection, keys: &mut Keys, round: u64) {
    if let Some((key, value)) = keys.in_flight.take() {
        let found: Option<Vec<u8>> = redis::cmd("GET").arg(&key).query(c).unwrap();
        if found.as_ref() == Some(&value) {
            keys.acknowledged.insert(key, value);
        }
    }
    let names: Vec<&String> = keys.acknowledged.keys().collect();
    let mut pipe = redis::pipe();
    for name in &names {
        pipe.cmd("GET").arg(*name);
    }
    let found: Vec<Option<Vec<u8>>> = pipe.query(c).unwrap();
    for (name, found) in names.iter().zip(found) {
        assert!(found.as_ref() == Some(&keys.acknowledged[*name]), "round {round}: {name} lost or wrong");
    }
}

/// SETs of the client's keys, values of 10 B to 3 KB, until the server
/// dies; what was acknowledged is recorded.
fn set_until_dead(resp: SocketAddr, client: usize, round: u64, mut keys: Keys) -> Keys {
    let Ok(client_handle) = redis::Client::open(format!("redis://{resp}/")) else { return keys };
    let Ok(mut c) = client_handle.get_connection_with_timeout(IO_TIMEOUT) else { return keys };
    let _ = c.set_read_timeout(Some(IO_TIMEOUT));
    let mut rng = SplitMix64::new(round << 8 | client as u64);
    for i in 0.. {
        let key = format!("c{client}:k{}", rng.below(SERVE_KEYS_PER_CLIENT));
        let len = [10, 300, 3000][rng.below(3) as usize];
        let value: Vec<u8> = format!("{round}:{client}:{i}:").bytes().chain((0..len).map(|j| (i + j) as u8)).collect();
        keys.in_flight = Some((key.clone(), value.clone()));
        if redis::cmd("SET").arg(&key).arg(&value).query::<()>(&mut c).is_err() {
            return keys;
        }
        keys.in_flight = None;
        keys.acknowledged.insert(key, value);
        keys.writes += 1;
    }
    unreachable!()
}

/// One HTTP request on a fresh connection: the status.
fn http_status(addr: SocketAddr, request: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.write_all(request).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line.split_whitespace().nth(1).unwrap_or_else(|| panic!("no status in {line:?}")).parse().unwrap()
}

// ---- wal ----

const WAL_WRITERS: u64 = 3;
const WAL_SAMPLE: usize = 100;

/// A body, regenerated from its seed and length (so thousands of them
/// cost no memory).
fn body(seed: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0u8; len];
    SplitMix64::new(seed).fill(&mut data);
    data
}

/// `packetstore wal` with two event loops on `listen`, its stderr in `log`.
fn start_wal(pool: &Path, listen: &str, log: &Path) -> (Child, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_packetstore"));
    command
        .args(["wal", "--pool", pool.to_str().unwrap(), "--pool-size", "64MiB", "--log-size", "8MiB"])
        .args(["--ring-entries", "256", "--threads", "2", "--listen", listen, "--bind-timeout", "10s"])
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()));
    let (child, addr, _) = common::spawn_wal(&mut command);
    (child, addr)
}

fn wal_restarts(pool: TempPool) -> (String, usize) {
    let log = log_path(&pool.0);
    let mut rng = SplitMix64::new(15);
    // X-Seq -> (seed, length) of every acknowledged body.
    let mut acknowledged: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    let mut last_round: Vec<u64> = Vec::new();
    let mut listen = "127.0.0.1:0".to_string();
    // The last round's writers, collected after the restart (as for serve).
    type Writer = std::thread::JoinHandle<Vec<(u64, (u64, usize))>>;
    let mut writers: Vec<Writer> = Vec::new();
    let (mut waits, rounds) = (0, rounds());
    for round in 0..=rounds {
        let (mut child, addr) = start_wal(&pool.0, &listen, &log);
        listen = addr.to_string();
        waits += usize::from(waited(&log));
        if !writers.is_empty() {
            last_round.clear();
        }
        for writer in writers.drain(..) {
            let done = writer.join().unwrap();
            last_round.extend(done.iter().map(|(seq, _)| *seq));
            acknowledged.extend(done);
        }
        let older: Vec<u64> = acknowledged.keys().copied().collect();
        let sample: Vec<u64> = if round == rounds {
            older
        } else {
            (0..WAL_SAMPLE.min(older.len())).map(|_| older[rng.below(older.len() as u64) as usize]).collect()
        };
        for seq in last_round.iter().chain(&sample) {
            let (seed, len) = acknowledged[seq];
            let (status, found) = get(addr, &format!("/log/{seq}"));
            assert!(status == 200 && found == body(seed, len), "round {round}: body {seq} lost or damaged");
        }
        if round == rounds {
            kill_and_reap(&mut child);
            break;
        }
        writers = (0..WAL_WRITERS).map(|w| std::thread::spawn(move || post_until_dead(addr, round << 8 | w))).collect();
        std::thread::sleep(Duration::from_millis(50 + rng.below(200)));
        kill_and_reap(&mut child);
    }
    let _ = std::fs::remove_file(&log);
    assert!(
        acknowledged.len() as u64 >= rounds,
        "only {} bodies acknowledged: the load proved little",
        acknowledged.len()
    );
    let summary = format!(
        "{rounds} immediate restarts on {listen}, {waits} waited for the port, {} bodies acknowledged, none lost",
        acknowledged.len()
    );
    (summary, waits)
}

/// POSTs bodies of 1 B to 4 KB until the server dies: each acknowledged
/// body's X-Seq, seed and length.
fn post_until_dead(addr: SocketAddr, writer: u64) -> Vec<(u64, (u64, usize))> {
    let mut done = Vec::new();
    let Ok(mut stream) = TcpStream::connect(addr) else { return done };
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for i in 0.. {
        let (seed, len) = (writer << 32 | i, 1 + (i as usize * 997) % 4000);
        let mut request = format!("POST /wal HTTP/1.1\r\nContent-Length: {len}\r\n\r\n").into_bytes();
        request.extend_from_slice(&body(seed, len));
        if stream.write_all(&request).is_err() {
            break;
        }
        match read_response(&mut reader) {
            Some((200, headers, _)) => {
                let seq = headers.get("x-seq").expect("an X-Seq").parse().unwrap();
                done.push((seq, (seed, len)));
            }
            _ => break,
        }
    }
    done
}

/// A GET on a fresh connection: the status and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    stream.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
    let (status, _, body) = read_response(&mut BufReader::new(stream)).expect("a response");
    (status, body)
}

// ---- errors ----

/// Runs the binary to its exit: status, stderr.
fn run(args: &[&str]) -> (std::process::ExitStatus, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore")).args(args).output().unwrap();
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// A port held by another program (a listener of this test process): both
/// servers exit at once, non-zero, naming the address and this process's
/// pid, without creating their pool and without waiting (a Redis on 6379
/// will not let go). The WAL server's loops share their port with
/// SO_REUSEPORT, which the kernel would let them use to join a listener
/// that set it too: a holder with SO_REUSEPORT must be refused as well.
#[test]
fn a_port_held_by_another_program_is_refused_at_once_with_its_holder() {
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let shared = packetstore::io::net::listen("127.0.0.1:0".parse().unwrap(), true, false).unwrap();
    let shared_addr = packetstore::io::net::local_addr(&shared).unwrap().to_string();
    let plain_addr = plain.local_addr().unwrap().to_string();
    let pool = TempPool::new("held");
    let path = pool.0.to_str().unwrap();
    let config = pool.0.with_extension("toml");
    std::fs::write(&config, "bind-timeout = \"300ms\"\n").unwrap();
    let cases: [Vec<&str>; 3] = [
        vec!["serve", "--pool", path, "--http", &plain_addr, "--resp", "127.0.0.1:0", "--bind-timeout", "300ms"],
        vec!["wal", "--pool", path, "--listen", &plain_addr, "--config", config.to_str().unwrap()],
        vec!["wal", "--pool", path, "--listen", &shared_addr, "--threads", "2", "--bind-timeout", "300ms"],
    ];
    for (args, held) in cases.iter().zip([&plain_addr, &plain_addr, &shared_addr]) {
        let (status, stderr) = run(args);
        assert!(!status.success(), "{args:?}: started on a held port: {stderr}");
        assert_eq!(stderr.matches(WAITING).count(), 0, "{args:?}: waited for another program: {stderr}");
        let error = stderr.lines().find(|l| l.starts_with("packetstore: error:")).unwrap_or_else(|| panic!("{stderr}"));
        assert!(error.contains(&format!("cannot listen on {held}")), "{args:?}: the address: {error}");
        let holder = format!("in use by pid {} (", std::process::id());
        assert!(error.contains(&holder) && error.contains("another program"), "{args:?}: the holder: {error}");
        assert!(!pool.0.exists(), "{args:?}: a pool file was created before the bind failed");
    }
    let _ = std::fs::remove_file(&config);
}

/// A port held by another packetstore (one a supervisor's restart may
/// find still stopping): waited for `--bind-timeout` (one log line), then
/// an error naming the address and that server's pid, and no pool.
#[test]
fn a_port_held_by_another_packetstore_is_waited_for_then_named_with_its_holder() {
    let first = TempPool::new("held-first");
    let holder = Server::start(&first.0, &[]);
    let pool = TempPool::new("held-second");
    let http = holder.http.to_string();
    let args = ["serve", "--pool", pool.0.to_str().unwrap(), "--http", &http, "--resp", "127.0.0.1:0"];
    let (status, stderr) = run(&[&args[..], &["--bind-timeout", "300ms"]].concat());
    assert!(!status.success(), "started on a held port: {stderr}");
    assert_eq!(stderr.matches(WAITING).count(), 1, "one line when it starts waiting: {stderr}");
    let error = stderr.lines().find(|l| l.starts_with("packetstore: error:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains(&format!("cannot listen on {http}")) && error.contains("still in use after 0.3 s"),
        "{error}"
    );
    assert!(error.contains(&format!("held by pid {}", holder.child.id())), "the holder: {error}");
    assert!(!pool.0.exists(), "a pool file was created before the bind failed");
}

/// A `--pool-size` too small for the receive ring: an error with the
/// smallest size that works, and no pool file; that size works. On an
/// existing pool, a larger ring is refused with the way out (a smaller
/// ring), and a different --pool-size is a warning.
#[test]
fn a_pool_too_small_for_the_ring_is_refused_before_it_is_created() {
    let pool = TempPool::new("too-small");
    let path = pool.0.to_str().unwrap();
    let serve = ["serve", "--pool", path, "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--ring-entries", "1024"];
    let (status, stderr) = run(&[&serve[..], &["--pool-size", "4MiB", "--log-size", "8MiB"]].concat());
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("--pool-size 4MiB is too small for a receive ring of 1024 entries")
            && stderr.contains("a pool needs at least 25 MiB")
            && stderr.contains("8 buffers of 2 KiB per ring entry"),
        "{stderr}"
    );
    assert!(!pool.0.exists(), "the pool file was created");
    let wal = ["wal", "--pool", path, "--listen", "127.0.0.1:0", "--threads", "2", "--ring-entries", "1024"];
    let (status, stderr) = run(&[&wal[..], &["--pool-size", "4MiB", "--log-size", "8MiB"]].concat());
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("a pool needs at least 21 MiB"), "{stderr}");
    assert!(!pool.0.exists(), "the pool file was created");

    // The minimum it named works; a ring twice as large then does not.
    let server = Server::start(&pool.0, &["--pool-size", "25MiB", "--log-size", "8MiB", "--ring-entries", "1024"]);
    drop(server);
    let (status, stderr) = run(&[&serve[..], &["--ring-entries", "2048"]].concat());
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("too few for a receive ring of 2048 entries")
            && stderr.contains("an existing pool keeps its size")
            && stderr.contains("shrink --ring-entries to 1024 or less"),
        "{stderr}"
    );
    let log = pool.0.with_extension("log");
    let server = Server::start_logging(&pool.0, &["--pool-size", "2GiB", "--ring-entries", "1024"], &log);
    drop(server);
    let logged = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(logged.contains("--pool-size 2GiB is ignored") && logged.contains("keeps its size"), "{logged}");
    // A data set of shards warns too, once.
    let shards = common::ShardPools::new("ignored-size-sharded", 2);
    drop(Server::start(&shards.first.0, &["--shards", "2", "--pool-size", "96MiB", "--ring-entries", "1024"]));
    let sized = ["--shards", "2", "--pool-size", "2GiB", "--ring-entries", "1024"];
    drop(Server::start_logging(&shards.first.0, &sized, &log));
    let logged = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert_eq!(logged.matches("--pool-size 2GiB is ignored").count(), 1, "{logged}");
    shards.remove();
}

/// An OS error appears once in the message (a pool path that is a
/// directory: the pool error shows its source, which anyhow's chain would
/// print again).
#[test]
fn an_os_error_is_printed_once() {
    let (status, stderr) = run(&["serve", "--pool", "/dev/shm", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"]);
    assert!(!status.success());
    assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
    assert!(stderr.contains("/dev/shm: Is a directory (os error 21)"), "{stderr}");
}

/// `--http localhost:PORT` (and `--resp localhost:0`, `--listen
/// localhost:0`) bind 127.0.0.1, and are served.
#[test]
fn host_names_are_accepted_as_listening_addresses() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let pool = TempPool::new("localhost");
    let http = format!("localhost:{free}");
    let server = Server::start(&pool.0, &["--http", &http, "--resp", "localhost:0"]);
    assert_eq!(server.http, SocketAddr::from(([127, 0, 0, 1], free)));
    assert_eq!(http_status(server.http, b"PUT /kv/k HTTP/1.1\r\nContent-Length: 1\r\n\r\nv"), 204);
    let value: String = redis::cmd("GET").arg("k").query(&mut server.client()).unwrap();
    assert_eq!(value, "v");
    drop(server);
    let wal_pool = TempPool::new("localhost-wal");
    let log = wal_pool.0.with_extension("log");
    let (mut child, addr) = start_wal(&wal_pool.0, "localhost:0", &log);
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(get(addr, "/log").0, 200);
    kill_and_reap(&mut child);
    let _ = std::fs::remove_file(&log);
}

/// Listening where the network can reach it without a password: a
/// warning per listener; none with --requirepass, which guards both.
#[test]
fn a_listener_reachable_from_the_network_without_a_password_is_warned_about() {
    let pool = TempPool::new("exposed");
    let log = pool.0.with_extension("log");
    for (requirepass, warnings) in [(&[][..], 2), (&["--requirepass", "s3cret"][..], 0)] {
        let args = [&["--http", "0.0.0.0:0", "--resp", "0.0.0.0:0"][..], requirepass].concat();
        drop(Server::start_logging(&pool.0, &args, &log));
        let logged = std::fs::read_to_string(&log).unwrap();
        assert_eq!(logged.matches("reachable from the network").count(), warnings, "{requirepass:?}: {logged}");
    }
    drop(Server::start_logging(&pool.0, &[], &log));
    let logged = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(!logged.contains("reachable from the network"), "loopback is not: {logged}");
}
