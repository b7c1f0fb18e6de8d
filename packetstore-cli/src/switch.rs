//! `packetstore switch`, `packetstore pcap` and `packetstore replay`: the
//! packet-logging learning bridge over AF_XDP ports whose packet memory is
//! the pool (`packetstore::apps::switch`), the log as a pcap file, and the
//! logged frames sent again, in order, on an interface (FTMB's replay).
//!
//! Invariant: the switch runs one event loop on one thread; the metrics
//! listener only reads a text snapshot the loop publishes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use packetstore::apps::switch::pcap;
use packetstore::apps::switch::policy::Policy;
use packetstore::apps::switch::{LogMode, Retention, Switch, SwitchConfig};
use packetstore::io::packet::PacketPorts;
use packetstore::io::ports::Ports;
use packetstore::io::xdp::{XdpMode, XdpPorts};
use packetstore::{Geometry, Pool, PoolKind, PoolKindExt};

use crate::options::{parse_duration, parse_size, PersistArgs};

/// Buffers of a switch pool: a frame after XDP's 256-byte headroom.
const SWITCH_BUFFER_SIZE: u32 = 2048;

#[derive(clap::Args)]
pub struct Args {
    /// The pool: the switch's packet memory and its log. AF_XDP needs it
    /// on tmpfs (/dev/shm) or hugetlbfs. Created if missing.
    #[arg(long)]
    pub pool: PathBuf,
    /// An interface to switch between (two or more: --port veth0 --port veth1).
    #[arg(long = "port", required = true)]
    pub ports: Vec<String>,
    /// swap: log a frame in the buffer it was received in (PASTE); copy:
    /// copy it into another buffer and log that (the baseline); off.
    #[arg(long, default_value = "swap")]
    pub log: String,
    /// Log only frames matching a rule (repeatable; any rule matches):
    /// field=value[,field=value] with fields in (port name), ethertype
    /// (0x0806), ip (10.0.0.1 or 10.0.0.0/24, source or destination) and
    /// l4port (TCP or UDP). Without rules every frame is logged.
    #[arg(long = "match")]
    pub rules: Vec<String>,
    /// Keep at most this much pool memory of logged frames (each frame
    /// holds a 2 KiB buffer); the oldest records are released beyond it.
    /// Default: all the pool has beside the ports' rings.
    #[arg(long, value_parser = parse_size)]
    pub retain_size: Option<u64>,
    /// Release records older than this (e.g. 10m).
    #[arg(long, value_parser = parse_duration)]
    pub retain_age: Option<Duration>,
    /// Forget a station not heard from for this long.
    #[arg(long, value_parser = parse_duration, default_value = "300s")]
    pub ageing: Duration,
    /// Size of a new pool.
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    pub pool_size: u64,
    /// Size of a new pool's log (128 bytes per logged frame).
    #[arg(long, value_parser = parse_size, default_value = "32MiB")]
    pub log_size: u64,
    /// How frames move: xdp (AF_XDP, the pool is the packet memory),
    /// packet (AF_PACKET TPACKET_V3, copying each frame into the pool), or
    /// auto (xdp, else packet, saying why).
    #[arg(long, default_value = "auto")]
    pub datapath: String,
    /// Where the XDP program runs: driver or generic (default: driver if
    /// the interface has it, else generic).
    #[arg(long)]
    pub xdp_mode: Option<String>,
    /// Serve the counters at http://ADDR/metrics.
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Never sleep between batches (lowest latency; one core busy).
    #[arg(long)]
    pub busy_poll: bool,
    /// Check every buffer's references after every batch (slow; tests).
    #[arg(long, hide = true)]
    pub check_accounting: bool,
    #[command(flatten)]
    pub persist: PersistArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = LogMode::parse(&args.log).with_context(|| format!("--log {}: use swap, copy or off", args.log))?;
    let policy = Policy::from_rules(&args.rules).map_err(|e| anyhow::anyhow!("--match: {e}"))?;
    let xdp_mode = match args.xdp_mode.as_deref() {
        None => None,
        Some("driver") => Some(XdpMode::Driver),
        Some("generic") => Some(XdpMode::Generic),
        Some(other) => bail!("--xdp-mode {other}: use driver or generic"),
    };
    if args.ports.len() < 2 {
        bail!("a switch needs two or more --port interfaces");
    }
    if !matches!(args.datapath.as_str(), "auto" | "xdp" | "packet") {
        bail!("--datapath {}: use auto, xdp or packet", args.datapath);
    }
    let pool = open_pool(&args)?;
    let retention = Retention {
        max_bytes: args.retain_size.unwrap_or(u64::MAX),
        max_age_ns: args.retain_age.map(|age| age.as_nanos() as u64),
    };
    let config =
        SwitchConfig { retention, ageing_ns: args.ageing.as_nanos() as u64, ..SwitchConfig::new(mode, policy) };
    let domain = pool.domain().to_string();
    let geometry = pool.geometry();
    let area = umem_area(&pool);
    let mut switch = Switch::new(pool, args.ports.clone(), config)?;
    let mut ports = open_ports(&args, area, geometry.buffer_size, xdp_mode)?;
    let (records, buffers) = switch.limits();
    // A closed standard output (a supervisor's pipe gone) must not stop
    // the switch: what it prints is informative only.
    let _ = writeln!(
        std::io::stdout(),
        "switch on {} ({}), logging {} ({}), pool {} ({domain}), {} records kept, up to {} records and {} buffers",
        args.ports.join(", "),
        ports.mechanism(),
        mode.name(),
        if args.rules.is_empty() { "every frame".to_string() } else { format!("{} rules", args.rules.len()) },
        args.pool.display(),
        switch.live_records(),
        records,
        buffers,
    );
    let _ = std::io::stdout().flush();
    let snapshot = Arc::new(Mutex::new(String::new()));
    if let Some(address) = args.metrics {
        serve_metrics(address, snapshot.clone())?;
    }
    run_loop(&mut switch, ports.as_mut(), &args, &snapshot)?;
    drop(ports);
    switch.shut_down()?;
    let _ = writeln!(std::io::stdout(), "switch stopped; the log is vouched for");
    Ok(())
}

/// The ports `--datapath` asks for. The XDP ports must be dropped before
/// the switch (which owns the pool, their packet memory).
fn open_ports(
    args: &Args,
    area: NonNull<[u8]>,
    buffer_size: u32,
    xdp_mode: Option<XdpMode>,
) -> anyhow::Result<Box<dyn Ports>> {
    if args.datapath != "packet" {
        // SAFETY: the area is the pool's buffer region, mapped for as long
        // as the switch (which owns the pool) lives; `run` drops the ports
        // first.
        match unsafe { XdpPorts::open(&args.ports, (area, &args.pool), buffer_size, xdp_mode) } {
            Ok(ports) => return Ok(Box::new(ports)),
            Err(error) if args.datapath == "xdp" => return Err(error.into()),
            Err(error) => eprintln!("AF_XDP is unavailable ({error}); falling back to AF_PACKET, which copies"),
        }
    }
    Ok(Box::new(PacketPorts::open(&args.ports, buffer_size)?))
}

fn open_pool(args: &Args) -> anyhow::Result<Pool> {
    let options = args.persist.options()?;
    if args.pool.exists() {
        return Pool::open_as(&args.pool, PoolKind::Switch, &options)
            .with_context(|| format!("opening {}", args.pool.display()));
    }
    let log_size = args.log_size.next_multiple_of(4096);
    let geometry = Geometry::for_file_size(args.pool_size, SWITCH_BUFFER_SIZE, log_size)
        .map_err(|e| anyhow::anyhow!("--pool-size {}: {e}", args.pool_size))?;
    Pool::open_or_create_as(&args.pool, PoolKind::Switch, geometry, &options)
        .with_context(|| format!("creating {}", args.pool.display()))
}

/// The pool's buffer region, the ports' UMEM.
fn umem_area(pool: &Pool) -> NonNull<[u8]> {
    let geometry = pool.geometry();
    let start = pool.address(pool.buffer_offset(0));
    let len = geometry.buffer_count as usize * geometry.buffer_size as usize;
    NonNull::new(std::ptr::slice_from_raw_parts_mut(start, len)).expect("a mapped pool is not at address 0")
}

fn run_loop(switch: &mut Switch, ports: &mut dyn Ports, args: &Args, snapshot: &Mutex<String>) -> anyhow::Result<()> {
    let (stop, _wake) = packetstore::launch::shutdown::install()?;
    switch.start(ports);
    let mut published = Instant::now();
    publish(switch, snapshot);
    while !stop.load(Ordering::SeqCst) {
        let now_ns = packetstore::pool::file::unix_ns();
        let received = switch.step(ports, now_ns)?;
        if args.check_accounting {
            switch.check_accounting();
        }
        // While receive is held (a transmit ring full), step again at
        // once: the rings drain without any frame arriving.
        if received == 0 && !args.busy_poll && !switch.holding() {
            ports.wait(Duration::from_millis(10))?;
        }
        if published.elapsed() >= Duration::from_millis(100) {
            switch.age(now_ns);
            publish(switch, snapshot);
            published = Instant::now();
        }
    }
    Ok(())
}

fn publish(switch: &Switch, snapshot: &Mutex<String>) {
    *snapshot.lock().expect("metrics lock") = switch.metrics_text();
}

/// Answers every connection with the latest snapshot (GET /metrics).
fn serve_metrics(address: SocketAddr, snapshot: Arc<Mutex<String>>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(address).with_context(|| format!("--metrics {address}"))?;
    let _ = writeln!(std::io::stdout(), "metrics on http://{}/metrics", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut request = [0u8; 1024];
            let n = stream.read(&mut request).unwrap_or(0);
            let (status, body) = if request[..n].starts_with(b"GET /metrics") {
                ("200 OK", snapshot.lock().expect("metrics lock").clone())
            } else {
                ("404 Not Found", "try /metrics\n".to_string())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(())
}

/// A window of a switch pool's log (`pcap` and `replay`).
#[derive(clap::Args)]
pub struct LogWindow {
    /// A switch pool (the switch stopped or killed: its lock must be free).
    pub pool: PathBuf,
    /// Only frames received at or after this time: Unix seconds (may be
    /// fractional), or an age such as 10m (that long ago).
    #[arg(long)]
    pub since: Option<String>,
    /// Only frames received before this time (same forms as --since).
    #[arg(long)]
    pub until: Option<String>,
    #[command(flatten)]
    pub persist: PersistArgs,
}

impl LogWindow {
    /// The logged frames in the window, oldest first.
    fn frames(&self) -> anyhow::Result<Vec<pcap::LoggedFrame>> {
        let pool = Pool::open_as(&self.pool, PoolKind::Switch, &self.persist.options()?)
            .with_context(|| format!("opening {}", self.pool.display()))?;
        let since = self.since.as_deref().map(parse_time).transpose()?.unwrap_or(0);
        let until = self.until.as_deref().map(parse_time).transpose()?.unwrap_or(u64::MAX);
        Ok(pcap::logged_frames(&pool, since, until)?)
    }
}

#[derive(clap::Args)]
pub struct PcapArgs {
    #[command(flatten)]
    pub window: LogWindow,
    /// Where to write the capture ("-": standard output).
    #[arg(long, short = 'o', default_value = "-")]
    pub output: PathBuf,
}

/// A time bound: Unix seconds ("1700000000.5") or an age ("10m").
fn parse_time(text: &str) -> anyhow::Result<u64> {
    if let Ok(seconds) = text.parse::<f64>() {
        if seconds >= 0.0 {
            return Ok((seconds * 1e9) as u64);
        }
    }
    let age = parse_duration(text).with_context(|| format!("'{text}' is neither Unix seconds nor an age"))?;
    Ok(packetstore::pool::file::unix_ns().saturating_sub(age.as_nanos() as u64))
}

pub fn run_pcap(args: PcapArgs) -> anyhow::Result<()> {
    let frames = args.window.frames()?;
    if args.output.as_os_str() == "-" {
        let stdout = std::io::stdout();
        pcap::write_pcap(&mut std::io::BufWriter::new(stdout.lock()), &frames)?;
    } else {
        let file = std::fs::File::create(&args.output).with_context(|| format!("{}", args.output.display()))?;
        pcap::write_pcap(&mut std::io::BufWriter::new(file), &frames)?;
        eprintln!("{} frames written to {}", frames.len(), args.output.display());
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub window: LogWindow,
    /// The interface to send the logged frames on, in log order.
    #[arg(long)]
    pub to: String,
    /// Keep the gaps between frames as they were received (default: as
    /// fast as the interface takes them).
    #[arg(long)]
    pub pace: bool,
}

pub fn run_replay(args: ReplayArgs) -> anyhow::Result<()> {
    let frames = args.window.frames()?;
    let socket = packetstore::io::packet::RawSender::open(&args.to)?;
    let started = Instant::now();
    let first_ns = frames.first().map_or(0, |f| f.received_ns);
    for frame in &frames {
        if args.pace {
            // The wall clock may have stepped back between two frames.
            let due = Duration::from_nanos(frame.received_ns.saturating_sub(first_ns));
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        socket.send(&frame.bytes).with_context(|| format!("sending frame {} on {}", frame.lsn, args.to))?;
    }
    println!("replayed {} frames on {} in {:.3} s", frames.len(), args.to, started.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_time;

    #[test]
    fn times_are_unix_seconds_or_ages() {
        assert_eq!(parse_time("1700000000.5").unwrap(), 1_700_000_000_500_000_000);
        let before = packetstore::pool::file::unix_ns();
        let ten_minutes_ago = parse_time("10m").unwrap();
        let after = packetstore::pool::file::unix_ns();
        assert!((before - 600_000_000_000..=after - 600_000_000_000).contains(&ten_minutes_ago));
        assert!(parse_time("yesterday").is_err());
    }
}
