//! Goal: the real servers keep their promises across a power failure under
//! load. The key-value server (Redis protocol) and the WAL server (HTTP)
//! run in the real io_uring engine, on the crash simulator, with several
//! clients pipelining mixed writes, deletes and reads, tree checkpoints and
//! compaction running. The key-value clients use every mutating command
//! family (`kv_model`): strings, hashes, lists (LINSERT, LMOVE), sets,
//! sorted sets, streams with a consumer group (XADD, XDEL, XTRIM, XGROUP
//! CREATE, XREADGROUP, XACK: its pending list checked), RENAME, COPY,
//! MOVE between databases, EXPIRE and PERSIST, MULTI/EXEC transactions
//! and an EVAL script of three writes; each transaction and script must
//! come back whole or not at all. Power fails at a random fence or sync
//! completion.
//! The server restarts on the image the simulator leaves, and is checked
//! against the clients' own records:
//! - nothing acknowledged is lost;
//! - nothing torn, stale or never written is returned, before the failure
//!   (every read is checked against the client's model at that point) or
//!   after it;
//! - what survives of the commands in flight is, per client, a prefix of
//!   them by whole command (a connection's commands apply in order).
//!
//! Each seed restarts the server several times on its own image, so later
//! failures start from recovered state. The simulator's page mode drives
//! the engine's asynchronous sync path (replies held until the sync that
//! covers the changes before them); its cache-line mode the synchronous
//! one.
//!
//! CI runs `PACKETSTORE_POWERFAIL_SEEDS` (default 150) seeds of each server
//! with 4 failures each: 1,200 failure points. One seed: `PACKETSTORE_POWERFAIL_SEED=hex`.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use packetstore::apps::kv::{KvConfig, KvServer};
use packetstore::apps::wal::{Persist, Wal, WalConfig};
use packetstore::index::compact::CompactConfig;
use packetstore::io::engine::{Engine, EngineConfig};
use packetstore::store::db::{Store, StoreConfig};
use packetstore::util::rng::SplitMix64;
use packetstore::{Buffers, Geometry, Pool, SimDevice, SimMode};

mod kv_model;
use kv_model::{random_cmd, stamped, Cmd, KvModel, Reply};

const FAILURES_PER_SEED: usize = 4;
/// What the clients of a run do.
#[derive(Clone, Copy)]
struct Workload {
    clients: usize,
    /// Scripts run busy loops of up to this many iterations, with
    /// lua-time-limit at 1 ms, so they pause between event-loop turns with
    /// a write done (one client: the others would get BUSY).
    spin_max: u64,
}

/// Script pauses over the whole test binary (a pausing workload must see
/// some, or it tests nothing).
static SCRIPT_PAUSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

const MIXED: Workload = Workload { clients: 3, spin_max: 0 };
const PAUSING_SCRIPTS: Workload = Workload { clients: 1, spin_max: 3_000_000 };
/// Reading a reply gives up after this long without the server (it died).
const CLIENT_POLL: Duration = Duration::from_millis(20);
/// A power failure that has not happened by then is a hang: a test failure.
const FAILURE_DEADLINE: Duration = Duration::from_secs(20);
const RING_ENTRIES: u16 = 64;

fn seeds() -> Vec<u64> {
    if let Ok(hex) = std::env::var("PACKETSTORE_POWERFAIL_SEED") {
        return vec![u64::from_str_radix(hex.trim_start_matches("0x"), 16).expect("a hex seed")];
    }
    let count = std::env::var("PACKETSTORE_POWERFAIL_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(150);
    (0..count).map(|i| 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i + 1)).collect()
}

// ---- the server under test, on a simulated device ----

/// Which server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Server {
    Kv,
    Wal,
}

struct Setup {
    mode: SimMode,
    persist: Persist,
    incremental: bool,
}

impl Setup {
    fn new(rng: &mut SplitMix64, server: Server) -> Setup {
        let mode = if rng.chance(1, 2) { SimMode::Page } else { SimMode::CacheLine };
        let persist = if server == Server::Wal && rng.chance(1, 4) { Persist::Copy } else { Persist::ZeroCopy };
        Setup { mode, persist, incremental: persist == Persist::ZeroCopy && rng.chance(1, 2) }
    }

    fn geometry(server: Server) -> Geometry {
        match server {
            Server::Kv => Geometry { buffer_size: 2048, buffer_count: 3072, log_size: 256 * 1024, log_count: 1 },
            Server::Wal => Geometry { buffer_size: 2048, buffer_count: 8192, log_size: 1024 * 1024, log_count: 1 },
        }
    }

    fn store_config() -> StoreConfig {
        StoreConfig {
            value_size_max: 1 << 20,
            replay_records_max: 40,
            checkpoint_interval: Duration::from_millis(5),
            buffers_reserve: u32::from(RING_ENTRIES) * 2,
            // Compaction relocates all the time.
            compaction: CompactConfig {
                waste_min: 0.0,
                fill_max: 1.01,
                entries_per_step: 8,
                bytes_per_step: 32 * 1024,
            },
            replicated: false,
        }
    }

    fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            ring_entries: RING_ENTRIES,
            queue_entries: 256,
            incremental: self.incremental,
            ..EngineConfig::default()
        }
    }
}

/// Runs the server on `device` until its power fails; returns the
/// engine's outcome (an error: power lost).
fn run_server(
    server: Server,
    setup: &Setup,
    device: Arc<SimDevice>,
    listeners: Vec<std::os::fd::OwnedFd>,
    stop: &AtomicBool,
) -> io::Result<()> {
    let pool = Pool::open_simulated(device.clone()).expect("the image opens");
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    // Recovery commits too: the power may fail there (then the error says
    // so; anything else is a test failure).
    let recovery_failed = |error: &dyn std::fmt::Display| {
        assert!(
            device.is_dead() || device.failed_fences() > 0,
            "recovery failed with the power on and no injected error: {error}"
        );
        io::Error::other(format!("power lost during recovery: {error}"))
    };
    match server {
        Server::Kv => {
            let (store, _) =
                Store::open(&pool, &mut buffers, Setup::store_config()).map_err(|e| recovery_failed(&e))?;
            let config = KvConfig {
                persist: setup.persist,
                value_size_max: 1 << 20,
                zero_copy_min: 1024,
                requirepass: None,
                metrics_public: false,
                debug_command: false,
                buffers_reserve: u32::from(RING_ENTRIES) * 2,
                domain_name: "simulated".into(),
                power_switch: None,
                settings: Default::default(),
                scrub_rate_bytes: packetstore::apps::kv::SCRUB_RATE_DEFAULT_BYTES,
            };
            let mut app = KvServer::new(config, store, String::new());
            let mut engine = Engine::new(&pool, &mut buffers, &mut app, setup.engine_config(), listeners)?;
            let outcome = engine.run(stop);
            drop(engine);
            SCRIPT_PAUSES.fetch_add(app.stats().script_pauses, Ordering::Relaxed);
            outcome
        }
        Server::Wal => {
            let config = WalConfig {
                persist: setup.persist,
                body_size_max: 1 << 20,
                buffers_reserve: u32::from(RING_ENTRIES) * 2,
            };
            let (mut app, _) = Wal::recover(&pool, &mut buffers, config).map_err(|e| recovery_failed(&e))?;
            let mut engine = Engine::new(&pool, &mut buffers, &mut app, setup.engine_config(), listeners)?;
            engine.run(stop)
        }
    }
}

// ---- a small RESP client ----

/// Reads a line, retrying through read timeouts until `dead` is set.
fn read_line(reader: &mut BufReader<TcpStream>, dead: &AtomicBool) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    loop {
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) if line.ends_with(b"\r\n") => {
                line.truncate(line.len() - 2);
                return Ok(line);
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if dead.load(Ordering::Acquire) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

fn read_exact(reader: &mut BufReader<TcpStream>, out: &mut [u8], dead: &AtomicBool) -> io::Result<()> {
    let mut done = 0;
    while done < out.len() {
        match reader.read(&mut out[done..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if dead.load(Ordering::Acquire) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn read_reply(reader: &mut BufReader<TcpStream>, dead: &AtomicBool) -> io::Result<Reply> {
    let line = read_line(reader, dead)?;
    let (kind, rest) = line.split_first().expect("a reply line is never empty");
    let text = || String::from_utf8_lossy(rest).into_owned();
    Ok(match kind {
        b'+' => Reply::Status(rest.to_vec()),
        b'-' => Reply::Error(rest.to_vec()),
        b':' => Reply::Int(text().parse().expect("an integer reply")),
        b'$' => {
            let len: i64 = text().parse().expect("a bulk length");
            if len < 0 {
                Reply::Bulk(None)
            } else {
                let mut body = vec![0u8; len as usize + 2];
                read_exact(reader, &mut body, dead)?;
                assert_eq!(&body[len as usize..], b"\r\n", "a bulk string ends with CRLF");
                body.truncate(len as usize);
                Reply::Bulk(Some(body))
            }
        }
        b'*' if rest == b"-1" => Reply::Bulk(None),
        b'*' => {
            let len: usize = text().parse().expect("an array length");
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(read_reply(reader, dead)?);
            }
            Reply::Array(items)
        }
        other => panic!("unexpected reply type {:?}", *other as char),
    })
}

// ---- the KV workload (its commands and model: `kv_model`) ----

/// The most log records one command of this workload appends: a
/// transaction of four COPYs of lists of up to `LIST_LEN_MAX` (12) plus a
/// pipelined batch's pushes, each element a record, with the metadata,
/// object id and expiry records around them.
const COMMAND_RECORDS_MAX: usize = 160;

/// What one client saw: the commands it sent, in order, and how many of
/// them were answered (those are acknowledged).
struct KvRun {
    sent: Vec<Cmd>,
    answered: usize,
}

/// Sends pipelined batches until the server dies; checks every reply
/// against the model (so reads see exactly what was written before them).
fn kv_client(
    addr: SocketAddr,
    (client, seed): (usize, u64),
    model: KvModel,
    dead: &AtomicBool,
    workload: Workload,
) -> KvRun {
    let mut rng = SplitMix64::new(seed);
    let mut model = model;
    let mut run = KvRun { sent: Vec::new(), answered: 0 };
    let Ok(stream) = TcpStream::connect(addr) else { return run };
    stream.set_read_timeout(Some(CLIENT_POLL)).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    if workload.spin_max > 0 {
        let mut set = Vec::new();
        kv_model::encode(&[b"CONFIG", b"SET", b"lua-time-limit", b"1"], &mut set);
        if writer.write_all(&set).is_err() {
            return run;
        }
        match read_reply(&mut reader, dead) {
            Ok(reply) => assert_eq!(reply, Reply::Status(b"OK".to_vec()), "CONFIG SET lua-time-limit"),
            Err(_) => return run,
        }
    }
    let mut seq = seed.wrapping_mul(1 << 20);
    loop {
        let most = if rng.chance(1, 3) { 1 } else { 12 };
        let batch = 1 + rng.below(most) as usize;
        let mut bytes = Vec::new();
        let first = run.sent.len();
        for _ in 0..batch {
            seq += 1;
            let cmd = random_cmd(&mut rng, client, seq, &model, workload.spin_max);
            cmd.encode(&mut bytes);
            run.sent.push(cmd);
        }
        // Sometimes the batch goes out in two parts with a pause between.
        let split = if rng.chance(1, 4) { rng.below(bytes.len() as u64) as usize } else { bytes.len() };
        if writer.write_all(&bytes[..split]).is_err() {
            return run;
        }
        if split < bytes.len() {
            std::thread::sleep(Duration::from_micros(rng.below(300)));
            if writer.write_all(&bytes[split..]).is_err() {
                return run;
            }
        }
        for index in first..run.sent.len() {
            // A transaction's replies all come before it counts as answered.
            let mut replies = Vec::new();
            let expected = model.clone().apply(&run.sent[index]);
            for _ in 0..expected.len() {
                let Ok(reply) = read_reply(&mut reader, dead) else { return run };
                replies.push(reply);
            }
            assert_eq!(
                replies, expected,
                "client {client}: replies to command {index} ({:?}) disagree with the model",
                run.sent[index]
            );
            model.apply(&run.sent[index]);
            run.answered = index + 1;
        }
    }
}

/// The recovered state must be the acknowledged state plus a prefix of
/// the commands in flight; returns it (the model for the next round).
fn kv_check(before: &KvModel, run: &KvRun, recovered: &KvModel, client: usize, context: &str) -> KvModel {
    let mut model = before.clone();
    for cmd in &run.sent[..run.answered] {
        model.apply(cmd);
    }
    let mut candidates = vec![model.clone()];
    for cmd in run.sent[run.answered..].iter().filter(|c| c.is_write()) {
        model.apply(cmd);
        candidates.push(model.clone());
    }
    if candidates.iter().any(|c| c == recovered) {
        return recovered.clone();
    }
    let acknowledged = &candidates[0];
    let lost: Vec<_> = acknowledged.keys.keys().filter(|k| !recovered.keys.contains_key(*k)).collect();
    panic!(
        "{context}: client {client}'s recovered keys are not its acknowledged state plus a prefix of its {} \
         commands in flight ({} answered); acknowledged keys missing: {:?}; recovered {:?} vs acknowledged {:?}",
        run.sent.len() - run.answered,
        run.answered,
        lost.iter().map(|(db, k)| format!("{db}:{}", String::from_utf8_lossy(k))).collect::<Vec<_>>(),
        recovered.summary(),
        acknowledged.summary(),
    );
}

// ---- the WAL workload ----

/// A WAL client's record: the body it posted and, once answered, its
/// sequence number.
struct WalRun {
    bodies: Vec<Vec<u8>>,
    seqs: Vec<u64>,
}

fn wal_body(rng: &mut SplitMix64, client: usize, n: u64) -> Vec<u8> {
    let len = match rng.below(10) {
        0..=5 => 1 + rng.below(200) as usize,
        6..=8 => 200 + rng.below(4000) as usize,
        _ => 4000 + rng.below(30_000) as usize,
    };
    stamped(client, n, len)
}

fn read_http_response(reader: &mut BufReader<TcpStream>, dead: &AtomicBool) -> io::Result<(u16, Option<u64>)> {
    let status = read_line(reader, dead)?;
    let status = String::from_utf8_lossy(&status).into_owned();
    let code: u16 = status.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("an HTTP status line");
    let (mut length, mut seq) = (0usize, None);
    loop {
        let line = read_line(reader, dead)?;
        if line.is_empty() {
            break;
        }
        let line = String::from_utf8_lossy(&line).to_ascii_lowercase();
        if let Some(v) = line.strip_prefix("content-length:") {
            length = v.trim().parse().expect("a length");
        }
        if let Some(v) = line.strip_prefix("x-seq:") {
            seq = Some(v.trim().parse().expect("a sequence number"));
        }
    }
    let mut body = vec![0u8; length];
    read_exact(reader, &mut body, dead)?;
    Ok((code, seq))
}

/// Posts pipelined bodies until the server dies; a 503 (log full) is
/// allowed and acknowledges nothing.
fn wal_client(addr: SocketAddr, client: usize, seed: u64, dead: &AtomicBool) -> WalRun {
    let mut rng = SplitMix64::new(seed);
    let mut run = WalRun { bodies: Vec::new(), seqs: Vec::new() };
    let Ok(stream) = TcpStream::connect(addr) else { return run };
    stream.set_read_timeout(Some(CLIENT_POLL)).unwrap();
    stream.set_nodelay(true).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    let mut n = seed.wrapping_mul(1 << 24);
    let mut answered = 0;
    loop {
        let batch = 1 + rng.below(8) as usize;
        let mut bytes = Vec::new();
        for _ in 0..batch {
            n += 1;
            let body = wal_body(&mut rng, client, n);
            bytes.extend_from_slice(format!("POST /log HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
            bytes.extend_from_slice(&body);
            run.bodies.push(body);
        }
        if writer.write_all(&bytes).is_err() {
            return run;
        }
        while answered < run.bodies.len() {
            let Ok((code, seq)) = read_http_response(&mut reader, dead) else { return run };
            match code {
                200 => run.seqs.push(seq.expect("a 200 carries X-Seq")),
                503 => run.seqs.push(u64::MAX),
                other => panic!("client {client}: unexpected status {other}"),
            }
            answered += 1;
        }
        if run.seqs.iter().rev().take(4).all(|&s| s == u64::MAX) && run.seqs.len() >= 4 {
            // The log is full and stays so: nothing more to learn.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Every acknowledged body is in the recovered log under its sequence
/// number, byte for byte; every record there is a body some client sent.
fn wal_check(pool: &Pool, wal: &Wal, runs: &[WalRun], acknowledged: &mut BTreeMap<u64, Vec<u8>>, context: &str) {
    let log = wal.log();
    let mut present = BTreeMap::new();
    for lsn in log.live_lsns() {
        let view = log.view(pool, lsn).expect("a live record");
        present.insert(view.tag, log.read_data(pool, &view));
    }
    for run in runs {
        for (body, &seq) in run.bodies.iter().zip(&run.seqs) {
            if seq != u64::MAX {
                acknowledged.insert(seq, body.clone());
            }
        }
    }
    for (seq, body) in acknowledged.iter() {
        match present.get(seq) {
            Some(found) => assert!(
                found == body,
                "{context}: record {seq} came back different ({} bytes vs {})",
                found.len(),
                body.len()
            ),
            None => panic!("{context}: acknowledged record {seq} lost ({} present)", present.len()),
        }
    }
    let sent: std::collections::HashSet<&[u8]> = runs.iter().flat_map(|r| r.bodies.iter().map(Vec::as_slice)).collect();
    for (seq, body) in &present {
        if !acknowledged.contains_key(seq) {
            assert!(sent.contains(body.as_slice()), "{context}: record {seq} holds bytes no client sent");
            acknowledged.insert(*seq, body.clone());
        }
    }
}

// ---- the driver ----

/// One seed: a server started, crashed and restarted FAILURES_PER_SEED
/// times. Returns the failure points it checked and the operations the
/// clients saw acknowledged.
/// Returns (failure points, operations acknowledged, failed syncs).
// Allowed: one seed's story, start to verdict, read top to bottom.
#[allow(clippy::too_many_lines)]
fn run_seed(server: Server, seed: u64, workload: Workload) -> (usize, usize, usize) {
    let mut acknowledged_ops = 0;
    let mut eio_stops = 0;
    let mut rng = SplitMix64::new(seed);
    let setup = Setup::new(&mut rng, server);
    let geometry = Setup::geometry(server);
    let device = Arc::new(SimDevice::new(geometry.file_size(), setup.mode));
    drop(Pool::create_simulated(device.clone(), geometry).expect("create"));
    let mut device = Arc::new(SimDevice::from_image(device.crash(0), setup.mode));
    let mut models = vec![KvModel::default(); workload.clients];
    let mut wal_acknowledged = BTreeMap::new();
    let mut wal_runs_all: Vec<WalRun> = Vec::new();
    for round in 0..FAILURES_PER_SEED {
        let context = format!(
            "{server:?} seed {seed:x} round {round} ({:?}, {:?}, incremental {})",
            setup.mode, setup.persist, setup.incremental
        );
        // The KV server takes HTTP on its first listener and the Redis
        // protocol on its second; the WAL server serves one.
        let mut listeners = Vec::new();
        for _ in 0..if server == Server::Kv { 2 } else { 1 } {
            listeners.push(packetstore::io::net::listen("127.0.0.1:0".parse().unwrap(), false, false).unwrap());
        }
        let addr = packetstore::io::net::local_addr(listeners.last().expect("a listener")).unwrap();
        // Power fails at a random fence (or sync completion) ahead. In
        // the page mode, one round in four an fdatasync fails with EIO
        // instead: the server must stop without acknowledging what that
        // sync covered, and the power is then cut (the worst case for
        // anything not durable).
        let eio = setup.mode == SimMode::Page && rng.chance(1, 4);
        if eio {
            device.fail_at_fence(device.fences() + 1 + rng.below(60));
        } else {
            device.crash_at_fence(device.fences() + 1 + rng.below(60), rng.next_u64());
        }
        let dead = AtomicBool::new(false);
        let client_seeds: Vec<u64> = (0..workload.clients).map(|_| rng.next_u64()).collect();
        let started = Instant::now();
        let stop = AtomicBool::new(false);
        let (outcome, kv_runs, wal_runs) = std::thread::scope(|scope| {
            let engine = scope.spawn(|| run_server(server, &setup, device.clone(), listeners, &stop));
            let clients: Vec<_> = (0..workload.clients)
                .map(|c| {
                    let (dead, model, client_seed) = (&dead, models[c].clone(), client_seeds[c]);
                    scope.spawn(move || match server {
                        Server::Kv => (Some(kv_client(addr, (c, client_seed), model, dead, workload)), None),
                        Server::Wal => (None, Some(wal_client(addr, c, client_seed, dead))),
                    })
                })
                .collect();
            // Clients run until the server dies. One that ends first (it
            // failed a check) or a failure that never comes stops the server.
            while !engine.is_finished() {
                if clients.iter().any(|c| c.is_finished()) || started.elapsed() > FAILURE_DEADLINE {
                    stop.store(true, Ordering::Release);
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let outcome = engine.join().expect("the engine thread");
            dead.store(true, Ordering::Release);
            let mut kv_runs = Vec::new();
            let mut wal_runs = Vec::new();
            for client in clients {
                let (kv, wal) = client.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                kv_runs.extend(kv);
                wal_runs.extend(wal);
            }
            (outcome, kv_runs, wal_runs)
        });
        assert!(started.elapsed() < FAILURE_DEADLINE, "{context}: no power failure after {FAILURE_DEADLINE:?}");
        let error = outcome.expect_err("the server runs until its power fails");
        let image = if eio {
            assert!(
                !device.is_dead() && device.failed_fences() == 1,
                "{context}: the server stopped without the injected EIO: {error}"
            );
            eio_stops += 1;
            device.crash(rng.next_u64())
        } else {
            assert!(device.is_dead(), "{context}: the server stopped with the power on: {error}");
            device.take_crash_image().expect("the armed failure happened")
        };
        device = Arc::new(SimDevice::from_image(image, setup.mode));

        // Recover and check, as the restarted server will find it.
        let pool = Pool::open_simulated(device.clone()).unwrap_or_else(|e| panic!("{context}: open: {e}"));
        let mut buffers = Buffers::new(geometry.buffer_count);
        match server {
            Server::Kv => {
                let (store, report) = Store::open(&pool, &mut buffers, Setup::store_config())
                    .unwrap_or_else(|e| panic!("{context}: recovery: {e}"));
                // The replay budget bounds recovery whenever the power
                // fails: at most the budget, plus the records of the one
                // command that crossed it (this workload's have at most
                // COMMAND_RECORDS_MAX).
                let bound = (Setup::store_config().replay_records_max + COMMAND_RECORDS_MAX - 1) as u64;
                assert!(
                    report.replayed_records <= bound,
                    "{context}: recovery replayed {} records, over the budget's bound of {bound}",
                    report.replayed_records
                );
                acknowledged_ops += kv_runs.iter().map(|r| r.answered).sum::<usize>();
                for (client, run) in kv_runs.iter().enumerate() {
                    let recovered = kv_model::recovered(&store, &pool, client);
                    models[client] = kv_check(&models[client], run, &recovered, client, &context);
                }
            }
            Server::Wal => {
                let config = WalConfig { persist: setup.persist, body_size_max: 1 << 20, buffers_reserve: 0 };
                let (wal, _) =
                    Wal::recover(&pool, &mut buffers, config).unwrap_or_else(|e| panic!("{context}: recovery: {e}"));
                acknowledged_ops +=
                    wal_runs.iter().map(|r| r.seqs.iter().filter(|&&s| s != u64::MAX).count()).sum::<usize>();
                wal_runs_all.extend(wal_runs);
                wal_check(&pool, &wal, &wal_runs_all, &mut wal_acknowledged, &context);
            }
        }
    }
    (FAILURES_PER_SEED, acknowledged_ops, eio_stops)
}

fn run_all(server: Server, workload: Workload) {
    let (mut points, mut acknowledged, mut eio) = (0, 0, 0);
    let seeds = seeds();
    for &seed in &seeds {
        let (p, a, e) = run_seed(server, seed, workload);
        points += p;
        acknowledged += a;
        eio += e;
    }
    eprintln!(
        "{server:?} server: {points} failures under load checked ({eio} of them a failed fdatasync, then power \
         loss), {acknowledged} operations acknowledged"
    );
    assert!(eio > 0 || seeds.len() < 8, "no failed sync was injected over {} seeds", seeds.len());
    // The load is real: most failures find acknowledged work to check.
    assert!(acknowledged >= 10 * seeds.len(), "only {acknowledged} operations acknowledged over {} seeds", seeds.len());
}

#[test]
fn kv_server_survives_power_failures_under_load() {
    run_all(Server::Kv, MIXED);
}

/// Scripts that pause past lua-time-limit with a write done: the event
/// loop commits their open group's records while they wait; a power
/// failure then must bring back none of a script's writes, never some.
#[test]
fn kv_paused_scripts_are_all_or_nothing_across_power_failures() {
    let before = SCRIPT_PAUSES.load(Ordering::Relaxed);
    run_all(Server::Kv, PAUSING_SCRIPTS);
    let pauses = SCRIPT_PAUSES.load(Ordering::Relaxed) - before;
    eprintln!("{pauses} script pauses");
    assert!(pauses > 0, "no script paused: the workload does not test what it says");
}

#[test]
fn wal_server_survives_power_failures_under_load() {
    run_all(Server::Wal, MIXED);
}
