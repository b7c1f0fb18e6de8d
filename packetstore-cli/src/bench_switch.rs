//! `packetstore bench switch-load`: the traffic generator of
//! `bench/switch.py`. A sender thread in one network namespace sends raw
//! frames on its interface (AF_PACKET, `sendmmsg`, no qdisc), a receiver
//! thread in another receives them (AF_PACKET), and the two report
//! frames per second, loss, and per-frame latency (each frame carries its
//! send time, CLOCK_MONOTONIC, which every namespace shares).
//!
//! Two runs: `throughput` sends `--frames` frames as fast as the sender
//! can; `bursts` sends bursts of `--burst` frames back to back, one burst
//! at a time, waiting for the last frame of each before the next (the
//! paper's latency under bursts). Prints one JSON line.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use packetstore::io::packet::{bind_packet, packet_socket, send_frames};

/// This generator's EtherType (IEEE local experimental 2).
const ETHERTYPE_LOAD: u16 = 0x88b6;
const SEND_BATCH: usize = 32;

#[derive(clap::Args)]
pub struct Args {
    /// throughput or bursts.
    #[arg(long, default_value = "throughput")]
    pub run: String,
    /// Namespace and interface of the sender (ip netns name, interface).
    #[arg(long)]
    pub tx_netns: String,
    #[arg(long, default_value = "eth0")]
    pub tx_interface: String,
    #[arg(long)]
    pub rx_netns: String,
    #[arg(long, default_value = "eth0")]
    pub rx_interface: String,
    /// Frame size in bytes (60 to 1514).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Frames to send (throughput) or bursts to send (bursts).
    #[arg(long, default_value_t = 200_000)]
    pub frames: u64,
    /// Frames per burst (bursts).
    #[arg(long, default_value_t = 32)]
    pub burst: usize,
    /// The receiver's MAC address (the destination of every frame).
    #[arg(long)]
    pub destination: String,
}

fn enter_netns(name: &str) -> anyhow::Result<()> {
    let path = format!("/var/run/netns/{name}");
    let file = File::open(&path).with_context(|| path.clone())?;
    // SAFETY: a valid namespace descriptor; only the calling thread moves.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!("setns {name}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// An AF_PACKET socket on `interface` for `protocol` frames, with large
/// buffers and no qdisc.
fn load_socket(interface: &str, protocol: u16) -> anyhow::Result<OwnedFd> {
    let fd = packet_socket()?;
    let big: libc::c_int = 64 << 20;
    let bypass: libc::c_int = 1;
    // SAFETY: valid ints for the options; failures only cost speed.
    unsafe {
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, std::ptr::from_ref(&big).cast(), 4);
        libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, std::ptr::from_ref(&big).cast(), 4);
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            std::ptr::from_ref(&bypass).cast(),
            4,
        );
    }
    bind_packet(&fd, interface, protocol)?;
    Ok(fd)
}

fn monotonic_ns() -> u64 {
    // SAFETY: timespec is plain data; clock_gettime fills it.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock and pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

fn parse_mac(text: &str) -> anyhow::Result<[u8; 6]> {
    let bytes: Vec<u8> =
        text.trim().split(':').map(|b| u8::from_str_radix(b, 16)).collect::<Result<_, _>>().context("a MAC address")?;
    bytes.try_into().map_err(|_| anyhow::anyhow!("{text}: not six bytes"))
}

/// Sends `frames` (each stamped with its send time and number) in
/// `sendmmsg` batches.
fn send_all(fd: &OwnedFd, template: &[u8], first: u64, count: usize) -> anyhow::Result<()> {
    let mut frames: Vec<Vec<u8>> = vec![template.to_vec(); count.min(SEND_BATCH)];
    let mut number = first;
    let mut left = count;
    while left > 0 {
        let n = left.min(SEND_BATCH);
        for frame in &mut frames[..n] {
            frame[14..22].copy_from_slice(&number.to_le_bytes());
            frame[22..30].copy_from_slice(&monotonic_ns().to_le_bytes());
            number += 1;
        }
        let mut iovecs: Vec<libc::iovec> =
            frames[..n].iter_mut().map(|f| libc::iovec { iov_base: f.as_mut_ptr().cast(), iov_len: f.len() }).collect();
        let mut done = 0;
        while done < n {
            // SAFETY: the iovecs cover `frames`, alive for the call.
            let sent = unsafe { send_frames(fd.as_raw_fd(), &mut iovecs[done..], 0) };
            if sent < 0 {
                let error = std::io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::ENOBUFS) {
                    std::thread::yield_now();
                    continue;
                }
                bail!("sendmmsg: {error}");
            }
            done += sent as usize;
        }
        left -= n;
    }
    Ok(())
}

/// What the receiver saw: frame numbers and their latencies.
struct Received {
    count: u64,
    first_ns: u64,
    last_ns: u64,
    latencies_ns: Vec<u64>,
}

/// Receives until `expected` frames came or nothing came for `quiet`.
fn receive(fd: &OwnedFd, expected: u64, quiet: Duration) -> Received {
    let timeout = libc::timeval { tv_sec: 0, tv_usec: 50_000 };
    // SAFETY: a valid timeval for SO_RCVTIMEO.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            std::ptr::from_ref(&timeout).cast(),
            std::mem::size_of_val(&timeout) as u32,
        )
    };
    let mut out = Received { count: 0, first_ns: 0, last_ns: 0, latencies_ns: Vec::new() };
    let mut buffer = vec![0u8; 2048];
    let mut last = Instant::now();
    while out.count < expected && last.elapsed() < quiet {
        // SAFETY: `buffer` is writable for its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if n < 30 {
            continue;
        }
        let now = monotonic_ns();
        let sent = u64::from_le_bytes(buffer[22..30].try_into().expect("8"));
        if out.count == 0 {
            out.first_ns = now;
        }
        out.last_ns = now;
        out.count += 1;
        out.latencies_ns.push(now.saturating_sub(sent));
        last = Instant::now();
    }
    out
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if !(60..=1514).contains(&args.size) {
        bail!("--size {}: use 60 to 1514", args.size);
    }
    let destination = parse_mac(&args.destination)?;
    let mut template = destination.to_vec();
    template.extend_from_slice(&[2, 0xbe, 0, 0, 0, 1]);
    template.extend_from_slice(&ETHERTYPE_LOAD.to_be_bytes());
    template.resize(args.size, 0x5a);
    let (rx_ns, rx_if) = (args.rx_netns.clone(), args.rx_interface.clone());
    let receiver = std::thread::scope(|scope| -> anyhow::Result<_> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let expected = if args.run == "bursts" { args.frames * args.burst as u64 } else { args.frames };
        let bursts = args.run == "bursts";
        let (done_tx, done_rx) = std::sync::mpsc::channel::<u64>();
        let receiving = scope.spawn(move || -> anyhow::Result<Received> {
            enter_netns(&rx_ns)?;
            let fd = load_socket(&rx_if, ETHERTYPE_LOAD)?;
            ready_tx.send(()).ok();
            if !bursts {
                return Ok(receive(&fd, expected, Duration::from_secs(1)));
            }
            let mut all = Received { count: 0, first_ns: 0, last_ns: 0, latencies_ns: Vec::new() };
            while let Ok(burst) = done_rx.recv() {
                let got = receive(&fd, burst, Duration::from_millis(200));
                all.count += got.count;
                all.latencies_ns.extend(got.latencies_ns);
            }
            Ok(all)
        });
        ready_rx.recv().context("the receiver started")?;
        enter_netns(&args.tx_netns)?;
        let fd = load_socket(&args.tx_interface, ETHERTYPE_LOAD)?;
        let started = Instant::now();
        if bursts {
            for b in 0..args.frames {
                send_all(&fd, &template, b * args.burst as u64, args.burst)?;
                done_tx.send(args.burst as u64).ok();
                // The receiver reads the burst before the next is sent.
                std::thread::sleep(Duration::from_micros(500));
            }
            drop(done_tx);
        } else {
            send_all(&fd, &template, 0, args.frames as usize)?;
            drop(done_tx);
        }
        let send_s = started.elapsed().as_secs_f64();
        let received = receiving.join().map_err(|_| anyhow::anyhow!("the receiver panicked"))??;
        Ok((received, send_s, expected))
    })?;
    let (mut received, send_s, expected) = receiver;
    received.latencies_ns.sort_unstable();
    let span_s = (received.last_ns.saturating_sub(received.first_ns)) as f64 / 1e9;
    let fps = if span_s > 0.0 { received.count as f64 / span_s } else { 0.0 };
    println!(
        "{{\"run\":\"{}\",\"size\":{},\"burst\":{},\"sent\":{},\"received\":{},\"send_s\":{:.4},\"fps\":{:.0},\
         \"latency_p50_us\":{:.2},\"latency_p99_us\":{:.2}}}",
        args.run,
        args.size,
        if args.run == "bursts" { args.burst } else { 0 },
        expected,
        received.count,
        send_s,
        fps,
        percentile(&received.latencies_ns, 0.5) as f64 / 1e3,
        percentile(&received.latencies_ns, 0.99) as f64 / 1e3,
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct EngineArgs {
    /// off, swap or copy.
    #[arg(long, default_value = "swap")]
    pub log: String,
    /// Frame size in bytes (60 to 1514).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Frames to switch.
    #[arg(long, default_value_t = 1_000_000)]
    pub frames: u64,
    /// Frames arriving per batch (per port).
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// A pool file to create (on /dev/shm: real clwb and sfence on DRAM).
    #[arg(long, default_value = "/dev/shm/packetstore-bench-switch-engine.pool")]
    pub pool: std::path::PathBuf,
}

/// `packetstore bench switch-engine`: the switch's engine alone, on one
/// core, over in-memory ports (a frame is copied into its pool buffer as a
/// NIC's DMA would, and captured when sent): the cost of logging without
/// the kernel's network path around it. Two stations on two ports send to
/// each other; retention keeps the log from filling. Prints one JSON line.
pub fn run_engine(args: EngineArgs) -> anyhow::Result<()> {
    use packetstore::apps::switch::policy::Policy;
    use packetstore::apps::switch::{LogMode, Retention, Switch, SwitchConfig};
    use packetstore::io::ports::{MemoryPorts, MEMORY_FILL_SIZE};
    use packetstore::{Geometry, PersistOptions, Pool, PoolKind, PoolKindExt};
    let mode = LogMode::parse(&args.log).with_context(|| format!("--log {}", args.log))?;
    if !(60..=1514).contains(&args.size) || args.batch == 0 || args.batch > MEMORY_FILL_SIZE {
        bail!("--size 60..=1514 and --batch 1..={MEMORY_FILL_SIZE}");
    }
    let _ = std::fs::remove_file(&args.pool);
    let geometry = Geometry::for_file_size(256 << 20, 2048, 16 << 20).map_err(anyhow::Error::msg)?;
    let pool = Pool::open_or_create_as(&args.pool, PoolKind::Switch, geometry, &PersistOptions::default())?;
    let domain = pool.domain().to_string();
    let config = SwitchConfig {
        retention: Retention { max_bytes: 64 << 20, max_age_ns: None },
        fill_target: MEMORY_FILL_SIZE,
        tx_max: 4 * MEMORY_FILL_SIZE,
        ..SwitchConfig::new(mode, Policy::All)
    };
    let names = vec!["a".to_string(), "b".to_string()];
    let mut switch = Switch::new(pool, names, config)?;
    let mut ports = MemoryPorts::new(&["a", "b"], 2048);
    ports.discard_sent();
    switch.start(&mut ports);
    let frame = |from: u8, to: u8| {
        let mut f = vec![2, 0, 0, 0, 0, to, 2, 0, 0, 0, 0, from, 0x88, 0xb6];
        f.resize(args.size, 0x5a);
        f
    };
    let (ab, ba) = (frame(1, 2), frame(2, 1));
    // Both stations known first, so frames are forwarded, not flooded.
    ports.inject(0, &ab);
    ports.inject(1, &ba);
    switch.step(&mut ports, 1)?;
    let started = Instant::now();
    let mut switched = 0u64;
    let mut now = 2;
    while switched < args.frames {
        for _ in 0..args.batch {
            ports.inject(0, &ab);
            ports.inject(1, &ba);
        }
        switched += switch.step(&mut ports, now)? as u64;
        now += 1;
    }
    let forwarded = ports.sent_count(0) + ports.sent_count(1);
    if forwarded + 2 < switched {
        bail!("{switched} frames switched but {forwarded} forwarded");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let fences = switch.counters().fences;
    switch.check_accounting();
    println!(
        "{{\"log\":\"{}\",\"size\":{},\"batch\":{},\"frames\":{switched},\"fps\":{:.0},\"ns_per_frame\":{:.1},\
         \"fences\":{fences},\"domain\":\"{domain}\"}}",
        mode.name(),
        args.size,
        args.batch * 2,
        switched as f64 / elapsed,
        elapsed * 1e9 / switched as f64,
    );
    drop(switch);
    let _ = std::fs::remove_file(&args.pool);
    Ok(())
}
