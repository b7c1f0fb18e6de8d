//! A load generator for reads, one thread (one reader core: run it pinned,
//! `taskset -c 0`): GETs of keys `rb:<size>:<i>` over a zipfian
//! distribution (YCSB's, theta 0.99), one at a time, by one of three paths:
//!
//! - `one-sided`: `packetstore::reader::Reader` on the server's pool (the
//!   server runs with `--one-sided-reads`); fallbacks to its Redis port;
//! - `resp`: GET over one Redis-protocol connection (loopback);
//! - `http`: GET /kv/<key> over one HTTP/1.1 keep-alive connection;
//! - `writer`: no reads: SETs of new values, one at a time, as fast as the
//!   server answers, for `--seconds` (the concurrent writer of a read run).
//!
//! With `--update-share F` a share F of the operations are SETs of a new
//! value (over the Redis port, in every mode: YCSB-B is F = 0.05); only
//! reads are timed. Every read is checked: a value of the key's size.
//! `--load` first writes every key once (pipelined) and exits.
//!
//! Prints one CSV line (`--header` prints the field names first):
//! `reads_per_s,p50_us,p99_us,reads,updates,seconds,fallbacks,retries,from_log`
//!
//! ```text
//! cargo build --release -p packetstore-cli --example read_bench
//! target/release/examples/read_bench --load --size 1024 --keys 10000
//! taskset -c 0 target/release/examples/read_bench --mode one-sided --size 1024 --seconds 5
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use packetstore::reader::fallback::{Fallback, Reply};
use packetstore::reader::{Reader, ReaderOptions};
use packetstore::util::rng::SplitMix64;

struct Args {
    mode: String,
    pool: PathBuf,
    resp: String,
    http: String,
    size: usize,
    keys: u64,
    seconds: f64,
    update_share: f64,
    load: bool,
    header: bool,
}

fn parse() -> Args {
    let mut args = Args {
        mode: "one-sided".into(),
        pool: "packetstore-data/kv.pool".into(),
        resp: "127.0.0.1:6379".into(),
        http: "127.0.0.1:8080".into(),
        size: 64,
        keys: 10_000,
        seconds: 5.0,
        update_share: 0.0,
        load: false,
        header: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--mode" => args.mode = value(),
            "--pool" => args.pool = value().into(),
            "--resp" => args.resp = value(),
            "--http" => args.http = value(),
            "--size" => args.size = value().parse().expect("--size"),
            "--keys" => args.keys = value().parse().expect("--keys"),
            "--seconds" => args.seconds = value().parse().expect("--seconds"),
            "--update-share" => args.update_share = value().parse().expect("--update-share"),
            "--load" => args.load = true,
            "--header" => args.header = true,
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// YCSB's zipfian generator (Gray et al.), theta 0.99, over `0..n`.
struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
}

impl Zipf {
    fn new(n: u64) -> Zipf {
        let theta = 0.99;
        let zeta = |count: u64| (1..=count).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let (zeta_n, zeta_2) = (zeta(n), zeta(2));
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n);
        Zipf { n: n as f64, theta, alpha, zeta_n, eta }
    }

    fn next(&self, rng: &mut SplitMix64) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        ((self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n as u64 - 1)
    }
}

fn key(size: usize, i: u64) -> String {
    format!("rb:{size}:{i}")
}

fn value(size: usize, version: u64) -> Vec<u8> {
    let mut bytes = vec![b'a' + (version % 26) as u8; size];
    bytes[..8.min(size)].copy_from_slice(&version.to_le_bytes()[..8.min(size)]);
    bytes
}

/// An HTTP/1.1 keep-alive client for GET /kv/<key>.
struct Http {
    reader: BufReader<TcpStream>,
    line: String,
}

impl Http {
    fn connect(address: &str) -> Http {
        let stream = TcpStream::connect(address).expect("the HTTP port");
        stream.set_nodelay(true).unwrap();
        Http { reader: BufReader::new(stream), line: String::new() }
    }

    fn get(&mut self, key: &str, out: &mut Vec<u8>) -> bool {
        let request = format!("GET /kv/{key} HTTP/1.1\r\nHost: bench\r\n\r\n");
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
        self.line.clear();
        self.reader.read_line(&mut self.line).unwrap();
        let found = self.line.starts_with("HTTP/1.1 200");
        let mut length = 0usize;
        loop {
            self.line.clear();
            self.reader.read_line(&mut self.line).unwrap();
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap();
                }
            }
        }
        out.resize(length, 0);
        self.reader.read_exact(out).unwrap();
        found
    }
}

fn load(args: &Args) {
    let mut stream = TcpStream::connect(&args.resp).expect("the Redis port");
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for chunk in (0..args.keys).collect::<Vec<_>>().chunks(64) {
        let mut request = Vec::new();
        for &i in chunk {
            let (k, v) = (key(args.size, i), value(args.size, 0));
            request.extend_from_slice(format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n", k.len(), v.len()).as_bytes());
            request.extend_from_slice(&v);
            request.extend_from_slice(b"\r\n");
        }
        stream.write_all(&request).unwrap();
        for _ in chunk {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            assert_eq!(line, "+OK\r\n", "SET answered {line}");
        }
    }
}

/// `--mode writer`: SETs over the zipfian keys until `--seconds` pass.
fn write(args: &Args) {
    let mut resp = Fallback::new(&args.resp, None);
    let zipf = Zipf::new(args.keys);
    let mut rng = SplitMix64::new(11);
    let started = Instant::now();
    let mut writes = 0u64;
    while started.elapsed().as_secs_f64() < args.seconds {
        let k = key(args.size, zipf.next(&mut rng));
        let reply = resp.command(0, &[b"SET", k.as_bytes(), &value(args.size, writes + 1_000_000)]).unwrap();
        assert_eq!(reply, Reply::Status("OK".into()));
        writes += 1;
    }
    println!(
        "{:.0},0,0,0,{writes},{:.2},0,0,0",
        writes as f64 / started.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

fn main() {
    let args = parse();
    if args.header {
        println!("reads_per_s,p50_us,p99_us,reads,updates,seconds,fallbacks,retries,from_log");
    }
    if args.load {
        load(&args);
        return;
    }
    if args.mode == "writer" {
        write(&args);
        return;
    }
    let mut one_sided = (args.mode == "one-sided").then(|| {
        let options = ReaderOptions { server: Some(args.resp.clone()), ..ReaderOptions::default() };
        Reader::open(&args.pool, options).expect("opening the pool")
    });
    let mut resp = Fallback::new(&args.resp, None);
    let mut http = (args.mode == "http").then(|| Http::connect(&args.http));
    let zipf = Zipf::new(args.keys);
    let mut rng = SplitMix64::new(7);
    let mut latencies_ns: Vec<u32> = Vec::with_capacity(4 << 20);
    let mut out = Vec::with_capacity(args.size);
    let (mut updates, mut version) = (0u64, 0u64);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.seconds);
    while Instant::now() < deadline {
        let k = key(args.size, zipf.next(&mut rng));
        if (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= args.update_share && args.update_share > 0.0 {
            version += 1;
            let reply = resp.command(0, &[b"SET", k.as_bytes(), &value(args.size, version)]).unwrap();
            assert_eq!(reply, Reply::Status("OK".into()));
            updates += 1;
            continue;
        }
        let t = Instant::now();
        let found = match (&mut one_sided, &mut http) {
            (Some(reader), _) => reader.get_into(0, k.as_bytes(), &mut out).unwrap(),
            (_, Some(http)) => http.get(&k, &mut out),
            _ => match resp.command(0, &[b"GET", k.as_bytes()]).unwrap() {
                Reply::Bulk(Some(bytes)) => {
                    out = bytes;
                    true
                }
                other => panic!("GET answered {other:?}"),
            },
        };
        latencies_ns.push(t.elapsed().as_nanos().min(u128::from(u32::MAX)) as u32);
        assert!(found && out.len() == args.size, "{k}: found {found}, {} bytes", out.len());
    }
    let seconds = started.elapsed().as_secs_f64();
    let reads = latencies_ns.len();
    latencies_ns.sort_unstable();
    let percentile = |p: f64| latencies_ns[((reads as f64 * p) as usize).min(reads - 1)] as f64 / 1e3;
    let stats = one_sided.as_ref().map(|r| r.stats()).unwrap_or_default();
    println!(
        "{:.0},{:.2},{:.2},{reads},{updates},{seconds:.2},{},{},{}",
        reads as f64 / seconds,
        percentile(0.5),
        percentile(0.99),
        stats.fallbacks,
        stats.retries,
        stats.from_log
    );
}
