//! A load generator for durable SETs: `SET key:<random> <value>`, each
//! optionally followed in the same write by `WAITAOF numlocal numreplicas
//! timeout` (Redis 7.2 / Valkey 8), every reply checked.
//!
//! redis-benchmark cannot chain two commands per request, and WAITAOF is not
//! allowed in scripts, so bench/replication.sh measures packetstore and Valkey
//! with this one client. One thread, one epoll loop over C connections (run it
//! pinned: `taskset -c 0`). Each connection sends a batch of P requests in one
//! write, reads all their replies, then sends the next batch.
//!
//! A request succeeds only when its guarantee is confirmed: SET must answer
//! `+OK`; with `--waitaof L R`, the WAITAOF that follows it must answer an
//! array whose two counts are at least L and R. Anything else (an error, a
//! short count, a dropped connection) is a failure, counted and reported,
//! and not part of the throughput or the latencies.
//!
//! With `--wait-per after-reply` (the default) the batch's P SETs are sent,
//! and once all are answered one WAITAOF (it covers every earlier write of
//! the connection), as a client that awaits each reply does; all P
//! requests complete with it. With `--wait-per request` every SET is
//! followed by its own WAITAOF in the same write (at -P 16: SET, WAITAOF,
//! SET, WAITAOF, ...); with `--wait-per batch` one WAITAOF follows the P
//! SETs in the same write. Valkey 8.0 stalls a WAITAOF that arrives in the
//! same read as its SET until its replicas' next once-a-second ack (see
//! bench/replication.sh): those two modes measure that.
//!
//! A request's latency runs from the write that carried it to the reply that
//! completes it (its SET's, or the WAITAOF's that covers it).
//!
//! Prints one CSV line (`--header` prints the field names first):
//! `requests_per_s,p50_ms,p99_ms,failures,requests,seconds,max_ms`
//!
//! ```text
//! cargo build --release --example durable_set
//! taskset -c 0 target/release/examples/durable_set -p 6379 -c 50 -n 100000 -d 300 --waitaof 1 1
//! ```

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};

#[derive(Parser, Debug)]
#[command(about = "SET (optionally + WAITAOF) load generator with checked replies; prints one CSV line")]
struct Args {
    /// Server host.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Server port.
    #[arg(short, long, default_value_t = 6379)]
    port: u16,
    /// Connections.
    #[arg(short, long, default_value_t = 50)]
    connections: usize,
    /// Requests in all (a request is one SET, with its WAITAOF if asked).
    #[arg(short = 'n', long, default_value_t = 100_000)]
    requests: u64,
    /// Requests per write (pipeline depth) on each connection.
    #[arg(short = 'P', long, default_value_t = 1)]
    pipeline: u64,
    /// Value size in bytes.
    #[arg(short = 'd', long, default_value_t = 300)]
    data_size: usize,
    /// Keys are key:<random number below this>.
    #[arg(short = 'r', long, default_value_t = 100_000)]
    keyspace: u64,
    /// Follow SETs with `WAITAOF L R <timeout>`; the reply must count >= L and >= R.
    #[arg(long, num_args = 2, value_names = ["NUMLOCAL", "NUMREPLICAS"])]
    waitaof: Option<Vec<u64>>,
    /// WAITAOF's timeout in milliseconds (0: wait forever).
    #[arg(long, default_value_t = 0)]
    waitaof_timeout: u64,
    /// One WAITAOF per request in the same write (SET, WAITAOF, SET,
    /// WAITAOF...), one per batch of -P SETs in the same write, or one per
    /// batch sent once every SET of it is answered (after-reply: what a
    /// client that awaits each reply does).
    #[arg(long, value_enum, default_value_t = WaitPer::AfterReply)]
    wait_per: WaitPer,
    /// Give up (counting what is outstanding as failed) after this long without a reply.
    #[arg(long, default_value_t = 30)]
    stall_s: u64,
    /// Print the CSV header line first.
    #[arg(long)]
    header: bool,
    /// Random seed.
    #[arg(long, default_value_t = 0x9e37_79b9_7f4a_7c15)]
    seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum WaitPer {
    Request,
    Batch,
    AfterReply,
}

/// A parsed RESP reply, reduced to what the checks need.
#[derive(Debug)]
enum Reply {
    Ok,
    #[allow(dead_code)] // read through Debug, in the first failure reported
    Other(String),
    Int(i64),
    Array(Vec<Reply>),
}

/// Parses one reply from `buf`; `None` when it is not all there yet.
fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
    let line = &buf[1..end];
    let text = || String::from_utf8_lossy(line).into_owned();
    let number = || -> Result<i64> { text().parse().with_context(|| format!("bad number in reply: {}", text())) };
    let after = end + 2;
    match buf.first() {
        Some(b'+') if line == b"OK" => Ok(Some((Reply::Ok, after))),
        Some(b'+' | b'-') => Ok(Some((Reply::Other(String::from_utf8_lossy(&buf[..end]).into_owned()), after))),
        Some(b':') => Ok(Some((Reply::Int(number()?), after))),
        Some(b'$') => {
            let n = number()?;
            if n < 0 {
                return Ok(Some((Reply::Other("(nil)".into()), after)));
            }
            let total = after + usize::try_from(n)? + 2;
            Ok((buf.len() >= total)
                .then(|| (Reply::Other(String::from_utf8_lossy(&buf[after..total - 2]).into()), total)))
        }
        Some(b'*') => {
            let n = number()?;
            let mut items = Vec::new();
            let mut at = after;
            for _ in 0..n.max(0) {
                let Some((item, used)) = parse(&buf[at..])? else { return Ok(None) };
                items.push(item);
                at += used;
            }
            Ok(Some((Reply::Array(items), at)))
        }
        _ => bail!("unexpected reply: {:?}", String::from_utf8_lossy(&buf[..end.min(80)])),
    }
}

/// Did this WAITAOF reply confirm at least `local` and `replicas`?
fn waitaof_ok(reply: &Reply, local: u64, replicas: u64) -> bool {
    let at_least = |r: &Reply, n: u64| matches!(r, Reply::Int(v) if u64::try_from(*v).is_ok_and(|v| v >= n));
    match reply {
        Reply::Array(items) => items.len() == 2 && at_least(&items[0], local) && at_least(&items[1], replicas),
        _ => false,
    }
}

/// What a reply on a connection is expected to be.
#[derive(Clone, Copy)]
enum Expect {
    /// A SET's reply; `completes`: no WAITAOF follows, the request ends here.
    Set { completes: bool },
    /// A WAITAOF's reply, completing the SETs since the last one.
    Wait,
}

struct Conn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    out: Vec<u8>,
    written: usize,
    sent_at: Instant,
    expect: std::collections::VecDeque<Expect>,
    /// SETs answered (and how many of them failed) that wait for a WAITAOF.
    awaiting: u64,
    awaiting_failed: u64,
}

struct Totals {
    issued: u64,
    done: u64,
    failures: u64,
    latencies_us: Vec<u32>,
    last_progress: Instant,
    first_error: Option<String>,
}

impl Totals {
    fn finish(&mut self, n: u64, failed: u64, latency: Duration, what: impl FnOnce() -> String) {
        self.done += n;
        self.failures += failed;
        self.last_progress = Instant::now();
        let us = u32::try_from(latency.as_micros()).unwrap_or(u32::MAX);
        self.latencies_us.extend(std::iter::repeat_n(us, usize::try_from(n - failed).unwrap_or(0)));
        if failed > 0 && self.first_error.is_none() {
            self.first_error = Some(what());
        }
    }
}

struct Load {
    args: Args,
    value: Vec<u8>,
    rng: u64,
    wait_cmd: Vec<u8>,
}

impl Load {
    fn next_key(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % self.args.keyspace.max(1)
    }

    /// Queues the next batch on `conn`; false when every request is issued.
    fn send_batch(&mut self, conn: &mut Conn, totals: &mut Totals) -> bool {
        let n = self.args.pipeline.max(1).min(self.args.requests - totals.issued);
        if n == 0 {
            return false;
        }
        totals.issued += n;
        conn.out.clear();
        conn.written = 0;
        let waiting = self.args.waitaof.is_some();
        for i in 0..n {
            let key = format!("key:{:012}", self.next_key());
            let _ = write!(conn.out, "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n", key.len(), self.value.len());
            conn.out.extend_from_slice(&self.value);
            conn.out.extend_from_slice(b"\r\n");
            let wait_here = waiting
                && match self.args.wait_per {
                    WaitPer::Request => true,
                    WaitPer::Batch => i == n - 1,
                    WaitPer::AfterReply => false,
                };
            conn.expect.push_back(Expect::Set { completes: !waiting });
            if wait_here {
                conn.out.extend_from_slice(&self.wait_cmd);
                conn.expect.push_back(Expect::Wait);
            }
        }
        conn.sent_at = Instant::now();
        true
    }

    /// Handles one reply; the request(s) it completes are counted.
    fn on_reply(&self, conn: &mut Conn, reply: &Reply, totals: &mut Totals) -> Result<()> {
        let latency = conn.sent_at.elapsed();
        match conn.expect.pop_front().context("a reply nobody asked for")? {
            Expect::Set { completes } => {
                let ok = matches!(reply, Reply::Ok);
                if completes {
                    totals.finish(1, u64::from(!ok), latency, || format!("SET: {reply:?}"));
                } else {
                    conn.awaiting += 1;
                    conn.awaiting_failed += u64::from(!ok);
                    if !ok && totals.first_error.is_none() {
                        totals.first_error = Some(format!("SET: {reply:?}"));
                    }
                    if self.args.wait_per == WaitPer::AfterReply && conn.expect.is_empty() {
                        // The batch's SETs are all answered: its WAITAOF now
                        // (the run loop sends it; the latency still counts
                        // from the SETs' write).
                        conn.out.clear();
                        conn.written = 0;
                        conn.out.extend_from_slice(&self.wait_cmd);
                        conn.expect.push_back(Expect::Wait);
                    }
                }
            }
            Expect::Wait => {
                let [local, replicas] = self.args.waitaof.as_deref().map_or([0, 0], |w| [w[0], w[1]]);
                let ok = waitaof_ok(reply, local, replicas);
                let failed = if ok { conn.awaiting_failed } else { conn.awaiting };
                totals.finish(conn.awaiting, failed, latency, || format!("WAITAOF: {reply:?}"));
                conn.awaiting = 0;
                conn.awaiting_failed = 0;
            }
        }
        Ok(())
    }
}

/// Writes what is pending; true when all of it went out.
fn flush(conn: &mut Conn) -> std::io::Result<bool> {
    while conn.written < conn.out.len() {
        match conn.stream.write(&conn.out[conn.written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => conn.written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

struct Epoll(i32);

impl Epoll {
    fn new() -> Result<Self> {
        // SAFETY: plain syscall; the fd is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            bail!("epoll_create1: {}", std::io::Error::last_os_error());
        }
        Ok(Self(fd))
    }

    fn ctl(&self, op: i32, fd: i32, token: usize, out: bool) -> Result<()> {
        let events = libc::EPOLLIN | if out { libc::EPOLLOUT } else { 0 };
        let mut ev = libc::epoll_event { events: events as u32, u64: token as u64 };
        // SAFETY: `ev` lives across the call; the fds are open.
        if unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) } < 0 {
            bail!("epoll_ctl: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
        let max = i32::try_from(events.len()).unwrap_or(i32::MAX);
        // SAFETY: `events` is a valid buffer of `max` entries.
        let n = unsafe { libc::epoll_wait(self.0, events.as_mut_ptr(), max, timeout_ms) };
        usize::try_from(n).unwrap_or(0)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: the fd is ours.
        unsafe { libc::close(self.0) };
    }
}

/// Reads what has arrived on `conn` and handles every complete reply.
/// Returns whether the connection is still usable.
fn on_readable(load: &mut Load, conn: &mut Conn, totals: &mut Totals) -> Result<bool> {
    let mut chunk = [0u8; 64 * 1024];
    let open = loop {
        match conn.stream.read(&mut chunk) {
            Ok(0) => break false,
            Ok(n) => conn.rbuf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
    };
    let mut at = 0;
    while let Some((reply, used)) = parse(&conn.rbuf[at..])? {
        at += used;
        load.on_reply(conn, &reply, totals)?;
    }
    conn.rbuf.drain(..at);
    Ok(open)
}

/// Drops a broken connection: what it had outstanding failed.
fn drop_conn(conn: &Conn, totals: &mut Totals) {
    let outstanding = conn.expect.iter().filter(|e| matches!(e, Expect::Set { .. })).count() as u64 + conn.awaiting;
    totals.finish(outstanding, outstanding, Duration::ZERO, || "connection closed by the server".into());
}

fn run(mut load: Load) -> Result<(Totals, Duration)> {
    let addr = (load.args.host.as_str(), load.args.port).to_socket_addrs()?.next().context("no address")?;
    let epoll = Epoll::new()?;
    let mut conns = HashMap::new();
    for token in 0..load.args.connections {
        let stream = TcpStream::connect(addr).with_context(|| format!("connect {addr}"))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        epoll.ctl(libc::EPOLL_CTL_ADD, stream.as_raw_fd(), token, false)?;
        let conn = Conn {
            stream,
            rbuf: Vec::with_capacity(64 * 1024),
            out: Vec::new(),
            written: 0,
            sent_at: Instant::now(),
            expect: std::collections::VecDeque::new(),
            awaiting: 0,
            awaiting_failed: 0,
        };
        conns.insert(token, conn);
    }
    let capacity = usize::try_from(load.args.requests).unwrap_or(0);
    let mut totals = Totals {
        issued: 0,
        done: 0,
        failures: 0,
        latencies_us: Vec::with_capacity(capacity),
        last_progress: Instant::now(),
        first_error: None,
    };
    let start = Instant::now();
    for (&token, conn) in &mut conns {
        if load.send_batch(conn, &mut totals) && !flush(conn)? {
            epoll.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), token, true)?;
        }
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; load.args.connections.max(1)];
    while totals.done < load.args.requests && !conns.is_empty() {
        if totals.last_progress.elapsed() > Duration::from_secs(load.args.stall_s) {
            eprintln!("durable_set: no reply for {} s: giving up", load.args.stall_s);
            for conn in conns.values() {
                drop_conn(conn, &mut totals);
            }
            break;
        }
        let n = epoll.wait(&mut events, 1000);
        for ev in &events[..n] {
            let token = usize::try_from(ev.u64)?;
            let Some(conn) = conns.get_mut(&token) else { continue };
            let alive = on_readable(&mut load, conn, &mut totals)?
                && (ev.events & libc::EPOLLOUT as u32 == 0 || flush(conn).is_ok());
            if !alive {
                drop_conn(conn, &mut totals);
                conns.remove(&token);
                continue;
            }
            if conn.expect.is_empty() && conn.written == conn.out.len() {
                if load.send_batch(conn, &mut totals) {
                    let Ok(done) = flush(conn) else {
                        drop_conn(conn, &mut totals);
                        conns.remove(&token);
                        continue;
                    };
                    if !done {
                        epoll.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), token, true)?;
                    }
                }
            } else if conn.written < conn.out.len() {
                // A WAITAOF queued once its SETs were answered.
                let Ok(done) = flush(conn) else {
                    drop_conn(conn, &mut totals);
                    conns.remove(&token);
                    continue;
                };
                if !done {
                    epoll.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), token, true)?;
                }
            } else if conn.written == conn.out.len() && ev.events & libc::EPOLLOUT as u32 != 0 {
                epoll.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), token, false)?;
            }
        }
    }
    // Requests never issued because every connection broke count as failed.
    let unissued = load.args.requests - totals.issued;
    totals.finish(unissued, unissued, Duration::ZERO, || "no connection left".into());
    Ok((totals, start.elapsed()))
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.header {
        println!("requests_per_s,p50_ms,p99_ms,failures,requests,seconds,max_ms");
    }
    let wait_cmd = match &args.waitaof {
        Some(w) => {
            let [l, r, t] = [w[0].to_string(), w[1].to_string(), args.waitaof_timeout.to_string()];
            format!("*4\r\n$7\r\nWAITAOF\r\n${}\r\n{l}\r\n${}\r\n{r}\r\n${}\r\n{t}\r\n", l.len(), r.len(), t.len())
                .into_bytes()
        }
        None => Vec::new(),
    };
    let load = Load { value: vec![b'x'; args.data_size], rng: args.seed | 1, wait_cmd, args };
    let requests = load.args.requests;
    let (mut totals, elapsed) = run(load)?;
    totals.latencies_us.sort_unstable();
    let lat = &totals.latencies_us;
    let secs = elapsed.as_secs_f64();
    let ok = requests - totals.failures;
    println!(
        "{:.2},{:.3},{:.3},{},{},{:.3},{:.3}",
        ok as f64 / secs,
        percentile_ms(lat, 50.0),
        percentile_ms(lat, 99.0),
        totals.failures,
        requests,
        secs,
        percentile_ms(lat, 100.0)
    );
    if let Some(e) = totals.first_error {
        eprintln!("durable_set: {} of {requests} requests failed; first: {e}", totals.failures);
    }
    Ok(())
}
