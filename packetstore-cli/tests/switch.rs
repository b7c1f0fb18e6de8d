//! `packetstore switch` for real, in network namespaces this test makes:
//! three hosts, each wired by a veth pair to a port of the switch, which
//! runs as `ip netns exec SW packetstore switch`. Through it: ping, a TCP
//! transfer, and raw frames of 64 to 1,514 bytes (this test's own
//! AF_PACKET sender and receiver, on threads moved into the hosts'
//! namespaces). Then the pcap export must equal, byte for byte and in
//! order, the raw frames sent, including across a `kill -9` of the switch
//! in the middle of a burst and an immediate restart (every frame a host
//! received is in the log: a frame leaves the switch only after its
//! record's fence); tcpdump must read the file; `packetstore replay` must
//! send the log again, in order. Per-port counters are read from /metrics.
//! Runs over AF_XDP with the pool on tmpfs and on hugetlbfs (the two file
//! systems whose pages the kernel pins for it), and over the AF_PACKET
//! fallback with the pool on disk. Needs root, iproute2, ethtool, ping, tcpdump;
//! it fails, not skips, without them.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use packetstore::apps::switch::pcap::read_pcap;
use packetstore::io::packet::{bind_packet, packet_socket, RawSender};
use packetstore::util::rng::SplitMix64;

/// The EtherType of this test's raw frames (IEEE local experimental).
const ETHERTYPE_TEST: u16 = 0x88b5;

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn require_tools() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert!(euid == 0, "tests/switch.rs needs root (network namespaces, veths, AF_XDP); uid is {euid}");
    for (program, flag) in [("ip", "-V"), ("ethtool", "--version"), ("ping", "-V"), ("tcpdump", "--version")] {
        let status = Command::new(program).arg(flag).stdout(Stdio::null()).stderr(Stdio::null()).status();
        assert!(status.is_ok(), "tests/switch.rs needs {program} (scripts/test.sh installs it)");
    }
}

/// Runs `f` on a thread moved into network namespace `name`; sockets it
/// makes stay in that namespace.
fn in_netns<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let thread = scope.spawn(|| {
            let path = format!("/var/run/netns/{name}");
            let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: a valid namespace descriptor; only this thread moves.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
            f()
        });
        thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The namespaces of one run: hosts `h1..h3` (10.S.0.N/24 on eth0) wired to
/// ports `p1..p3` of namespace `sw`; deleted on drop.
struct Net {
    tag: String,
    subnet: u8,
}

impl Net {
    fn create(run_index: u8) -> Net {
        let tag = format!("pssw-{}-{run_index}", std::process::id());
        let net = Net { tag, subnet: 100 + run_index };
        run("ip", &["netns", "add", &net.sw()]);
        run("ip", &["-n", &net.sw(), "link", "set", "lo", "up"]);
        for n in 1..=3 {
            let host = net.host(n);
            run("ip", &["netns", "add", &host]);
            let port = format!("p{n}");
            run(
                "ip",
                &["link", "add", &port, "netns", &net.sw(), "type", "veth", "peer", "name", "eth0", "netns", &host],
            );
            run("ip", &["-n", &host, "addr", "add", &format!("10.{}.0.{n}/24", net.subnet), "dev", "eth0"]);
            run("ip", &["-n", &host, "link", "set", "eth0", "up"]);
            run("ip", &["-n", &host, "link", "set", "lo", "up"]);
            run("ip", &["-n", &net.sw(), "link", "set", &port, "up"]);
            // The hosts fill in their checksums (a veth leaves them to
            // hardware, which AF_XDP and AF_PACKET bypass).
            run("ip", &["netns", "exec", &host, "ethtool", "-K", "eth0", "tx", "off"]);
            // No IPv6 chatter (router solicitations) among the test's frames.
            run("ip", &["netns", "exec", &host, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
        }
        net
    }

    fn sw(&self) -> String {
        format!("{}-sw", self.tag)
    }

    fn host(&self, n: u8) -> String {
        format!("{}-h{n}", self.tag)
    }

    fn ip(&self, n: u8) -> String {
        format!("10.{}.0.{n}", self.subnet)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for name in [self.sw(), self.host(1), self.host(2), self.host(3)] {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
        }
    }
}

/// A running switch and the line it printed at start.
struct Switch {
    child: Child,
    banner: String,
}

fn start_switch(net: &Net, pool: &Path, datapath: &str, metrics_port: u16) -> Switch {
    start_switch_with(net, pool, datapath, metrics_port, &["--check-accounting"])
}

/// The switch on ports p1 to p3 of `net`, with `extra` arguments.
fn start_switch_with(net: &Net, pool: &Path, datapath: &str, metrics_port: u16, extra: &[&str]) -> Switch {
    let mut child = Command::new("ip")
        .args(["netns", "exec", &net.sw(), env!("CARGO_BIN_EXE_packetstore"), "switch"])
        .arg("--pool")
        .arg(pool)
        .args(["--port", "p1", "--port", "p2", "--port", "p3", "--datapath", datapath, "--pool-size", "64MiB"])
        .args(["--log-size", "4MiB", "--metrics", &format!("127.0.0.1:{metrics_port}")])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .expect("packetstore switch");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
    let mut banner = String::new();
    lines.read_line(&mut banner).expect("the switch's first line");
    assert!(banner.starts_with("switch on"), "the switch did not start: {banner:?}");
    // The rest of its output is not read: keep the pipe drained.
    std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
    Switch { child, banner }
}

impl Drop for Switch {
    /// A failing test leaves no switch behind (it would hold the pipes).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Switch {
    fn kill_9(mut self) {
        // SAFETY: a signal to the child this test started (`ip netns exec`
        // execs the switch, so the pid is the switch's).
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGKILL) };
        self.child.wait().expect("the killed switch");
    }

    fn stop(mut self) {
        // SAFETY: as above.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let status = self.child.wait().expect("the switch");
        assert!(status.success(), "the switch's clean stop: {status}");
    }
}

/// An AF_PACKET socket receiving this test's frames on `interface`.
fn raw_receiver(interface: &str) -> OwnedFd {
    let fd = packet_socket().unwrap();
    bind_packet(&fd, interface, ETHERTYPE_TEST).unwrap();
    // Room for a whole replay (a few thousand frames) read afterwards.
    let room: libc::c_int = 64 << 20;
    // SAFETY: a valid int for SO_RCVBUFFORCE (root may pass the limit).
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            std::ptr::from_ref(&room).cast(),
            std::mem::size_of_val(&room) as u32,
        )
    };
    let timeout = libc::timeval { tv_sec: 0, tv_usec: 200_000 };
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
    fd
}

/// Receives frames until `expected` arrived or nothing came for `quiet`.
fn receive_frames(fd: &OwnedFd, expected: usize, quiet: Duration) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut last = Instant::now();
    let mut buffer = vec![0u8; 4096];
    while frames.len() < expected && last.elapsed() < quiet {
        // SAFETY: `buffer` is writable for its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if n > 0 {
            frames.push(buffer[..n as usize].to_vec());
            last = Instant::now();
        }
    }
    frames
}

/// A raw frame from `source` to `destination` of `len` bytes, numbered.
fn raw_frame(destination: [u8; 6], source: [u8; 6], number: u64, len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut frame = destination.to_vec();
    frame.extend_from_slice(&source);
    frame.extend_from_slice(&ETHERTYPE_TEST.to_be_bytes());
    frame.extend_from_slice(&number.to_le_bytes());
    let mut rest = vec![0u8; len - frame.len()];
    rng.fill(&mut rest);
    frame.extend_from_slice(&rest);
    frame
}

fn frames_of_test(pcap_path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(pcap_path).unwrap();
    let frames = read_pcap(&bytes).unwrap();
    frames.into_iter().map(|(_, f)| f).filter(|f| f.len() >= 14 && f[12..14] == ETHERTYPE_TEST.to_be_bytes()).collect()
}

fn export_pcap(pool: &Path, out: &Path) {
    run(env!("CARGO_BIN_EXE_packetstore"), &["pcap", pool.to_str().unwrap(), "-o", out.to_str().unwrap()]);
}

fn metrics(net: &Net, port: u16) -> String {
    let response = in_netns(&net.sw(), || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("the metrics listener");
        stream.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    });
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

fn counter(text: &str, name: &str, port: &str) -> u64 {
    let prefix = format!("packetstore_switch_{name}_total{{port=\"{port}\"}} ");
    let line = text.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{prefix} in {text}"));
    line[prefix.len()..].parse::<f64>().unwrap() as u64
}

/// Ping and a 2 MB TCP transfer from h1 to h2 through the switch.
fn ping_and_tcp(net: &Net) {
    let ping = run("ip", &["netns", "exec", &net.host(1), "ping", "-c", "3", "-i", "0.2", "-W", "2", &net.ip(2)]);
    assert!(ping.contains("3 received"), "{ping}");
    let listener = in_netns(&net.host(2), || std::net::TcpListener::bind((net.ip(2).as_str(), 5001)).unwrap());
    listener.set_nonblocking(true).unwrap();
    let payload: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut stream = loop {
                match listener.accept() {
                    Ok((stream, _)) => break stream,
                    Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                    Err(e) => panic!("no TCP connection through the switch: {e}"),
                }
            };
            stream.set_nonblocking(false).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).unwrap();
            received
        });
        in_netns(&net.host(1), || {
            let address = format!("{}:5001", net.ip(2)).parse().unwrap();
            let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
            stream.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
            stream.write_all(&payload).unwrap();
        });
        assert!(server.join().unwrap() == payload, "TCP through the switch delivers every byte in order");
    });
}

fn the_switch_forwards_and_logs(datapath: &str, run_index: u8, pool: PathBuf) {
    require_tools();
    let _ = std::fs::remove_file(&pool);
    let net = Net::create(run_index);
    let metrics_port = 9300 + u16::from(run_index);
    let switch = start_switch(&net, &pool, datapath, metrics_port);
    let expect = if datapath == "xdp" { "AF_XDP" } else { "AF_PACKET" };
    assert!(switch.banner.contains(expect), "{datapath}: {}", switch.banner);
    ping_and_tcp(&net);
    // Raw frames h1 -> h2: numbered, 64 to 1,514 bytes, to h2's MAC, which
    // the switch learned from the TCP transfer.
    let destination = mac_of(&net.host(2));
    let source = [2, 0xaa, 0, 0, 0, 1];
    let mut rng = SplitMix64::new(u64::from(run_index));
    let mut sent = Vec::new();
    let mut received = Vec::new();
    let receiver = in_netns(&net.host(2), || raw_receiver("eth0"));
    let sender = in_netns(&net.host(1), || RawSender::open("eth0").unwrap());
    for number in 0..300 {
        let len = match number {
            0 => 64,
            1 => 1514,
            _ => 64 + rng.below(1451) as usize,
        };
        let frame = raw_frame(destination, source, number, len, &mut rng);
        sender.send(&frame).unwrap();
        sent.push(frame);
        if number % 50 == 49 {
            received.extend(receive_frames(&receiver, sent.len() - received.len(), Duration::from_secs(2)));
        }
    }
    received.extend(receive_frames(&receiver, sent.len() - received.len(), Duration::from_secs(2)));
    assert!(received == sent, "{datapath}: h2 received every raw frame, whole, in order");
    // The switch publishes its counters every 100 ms.
    std::thread::sleep(Duration::from_millis(250));
    let text = metrics(&net, metrics_port);
    assert!(counter(&text, "rx_frames", "p1") >= 300 && counter(&text, "tx_frames", "p2") >= 300, "{text}");
    assert!(counter(&text, "logged_frames", "p1") >= 300, "{text}");
    // A burst, and kill -9 in its middle; a supervisor restarts the switch
    // at once, and the rest of the burst goes through it.
    let burst: Vec<Vec<u8>> =
        (300..2300).map(|n| raw_frame(destination, source, n, 64 + rng.below(1451) as usize, &mut rng)).collect();
    std::thread::scope(|scope| {
        let sending = scope.spawn(|| {
            for frame in &burst {
                sender.send(frame).unwrap();
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        std::thread::sleep(Duration::from_millis(150));
        switch.kill_9();
        let switch = start_switch(&net, &pool, datapath, metrics_port);
        sending.join().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let after: Vec<Vec<u8>> = receive_frames(&receiver, usize::MAX, Duration::from_secs(1));
        received.extend(after);
        switch.stop();
    });
    sent.extend(burst.iter().cloned());
    // Beside the test's files (hugetlbfs takes no write(2)).
    let capture = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("switch-{run_index}.pcap"));
    export_pcap(&pool, &capture);
    let logged = frames_of_test(&capture);
    // The log: sent frames, in order, none twice, none torn; and every
    // frame h2 received (forwarded only after its fence) among them.
    let number = |f: &[u8]| u64::from_le_bytes(f[14..22].try_into().unwrap());
    let mut position = 0;
    for (i, frame) in logged.iter().enumerate() {
        let at = sent[position..].iter().position(|s| s == frame).unwrap_or_else(|| {
            let same = sent.iter().find(|s| number(s) == number(frame));
            panic!(
                "{datapath}: logged frame {i} (number {}, {} bytes; the sent one of that number: {:?} bytes, equal {}) \
                 is not a sent frame after number {}",
                number(frame),
                frame.len(),
                same.map(|s| s.len()),
                same == Some(frame),
                position.checked_sub(1).map_or(0, |p| number(&sent[p])),
            )
        });
        position += at + 1;
    }
    assert!(logged[..300] == sent[..300], "{datapath}: the first 300 frames, byte for byte and in order");
    for frame in &received {
        assert!(logged.contains(frame), "{datapath}: a frame h2 received is missing from the log");
    }
    assert!(logged.len() > 1000, "{datapath}: most of the burst went through ({} logged)", logged.len());
    let tcpdump = Command::new("tcpdump").arg("-nr").arg(&capture).output().unwrap();
    assert!(tcpdump.status.success(), "tcpdump reads the capture: {}", String::from_utf8_lossy(&tcpdump.stderr));
    let lines = String::from_utf8_lossy(&tcpdump.stdout).lines().count();
    assert!(lines >= logged.len(), "tcpdump shows every frame ({lines} lines)");
    replay_sends_the_log_again(&net, &pool, &logged);
    std::fs::remove_file(&capture).unwrap();
    std::fs::remove_file(&pool).unwrap();
}

/// `packetstore replay POOL --to p2` (in the switch's namespace, the
/// switch stopped): h2 receives the logged test frames again, in order.
fn replay_sends_the_log_again(net: &Net, pool: &Path, logged: &[Vec<u8>]) {
    let receiver = in_netns(&net.host(2), || raw_receiver("eth0"));
    let binary = env!("CARGO_BIN_EXE_packetstore");
    let pool = pool.to_str().unwrap();
    let output = run("ip", &["netns", "exec", &net.sw(), binary, "replay", pool, "--to", "p2"]);
    assert!(output.starts_with("replayed"), "{output}");
    let again = receive_frames(&receiver, logged.len(), Duration::from_secs(2));
    assert!(again == logged, "replay sent {} frames of {}, in order", again.len(), logged.len());
}

#[test]
fn over_af_xdp_with_the_pool_as_packet_memory() {
    let pool = PathBuf::from(format!("/dev/shm/packetstore-test-switch-xdp-{}.pool", std::process::id()));
    the_switch_forwards_and_logs("xdp", 1, pool);
}

#[test]
fn over_the_af_packet_fallback_with_the_pool_on_disk() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let pool = dir.join(format!("switch-packet-{}.pool", std::process::id()));
    the_switch_forwards_and_logs("packet", 2, pool);
}

/// A hugetlbfs mount of its own, with enough huge pages reserved for a
/// 64 MiB pool; both undone on drop.
struct HugePages {
    dir: PathBuf,
    before: u64,
}

impl HugePages {
    fn mount() -> HugePages {
        let path = "/proc/sys/vm/nr_hugepages";
        let before: u64 = std::fs::read_to_string(path).unwrap().trim().parse().unwrap();
        std::fs::write(path, (before + 40).to_string()).unwrap();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("huge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        run("mount", &["-t", "hugetlbfs", "none", dir.to_str().unwrap()]);
        HugePages { dir, before }
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", self.before.to_string());
    }
}

#[test]
fn over_af_xdp_with_the_pool_on_hugetlbfs() {
    let huge = HugePages::mount();
    let pool = huge.dir.join("switch.pool");
    the_switch_forwards_and_logs("xdp", 4, pool);
    drop(huge);
}

/// A pool on a disk file system cannot be AF_XDP packet memory: `--datapath
/// xdp` says so and names the file system.
#[test]
fn xdp_refuses_a_pool_on_disk_clearly() {
    require_tools();
    let net = Net::create(3);
    let pool = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("switch-refused-{}.pool", std::process::id()));
    let _ = std::fs::remove_file(&pool);
    let output = Command::new("ip")
        .args(["netns", "exec", &net.sw(), env!("CARGO_BIN_EXE_packetstore"), "switch", "--pool"])
        .arg(&pool)
        .args(["--port", "p1", "--port", "p2", "--datapath", "xdp", "--pool-size", "16MiB", "--log-size", "1MiB"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("refused to pin") && stderr.contains("tmpfs"), "{stderr}");
    let _ = std::fs::remove_file(&pool);
}

/// The MAC address of `eth0` in namespace `host` (read through `ip netns
/// exec`, which mounts the namespace's own /sys: a thread moved with
/// setns still sees the test's).
fn mac_of(host: &str) -> [u8; 6] {
    let text = run("ip", &["netns", "exec", host, "cat", "/sys/class/net/eth0/address"]);
    let bytes: Vec<u8> = text.trim().split(':').map(|b| u8::from_str_radix(b, 16).unwrap()).collect();
    bytes.try_into().unwrap()
}

/// Sends `frames` on `sender` at `per_second`, in 1 ms slices (a frame's
/// due time is fixed from the start: a late slice catches up).
fn send_paced(sender: &RawSender, frames: &[Vec<u8>], per_second: u64) {
    let start = Instant::now();
    let per_slice = (per_second / 1000) as usize;
    for (slice, chunk) in frames.chunks(per_slice).enumerate() {
        for frame in chunk {
            sender.send(frame).unwrap();
        }
        let due = start + Duration::from_millis(slice as u64 + 1);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
}

/// Issue 35, item 9: 15,000 frames/s of 64 to 1,514 bytes for 5 s from h1
/// to h2 through the switch over AF_XDP, each logged: every frame arrives,
/// whole and in order, and no port counts a drop. (On db4f3bf about one
/// batch per lap of the 2,048-slot transmit ring was dropped as "transmit
/// ring was full": 200 to 300 of these 75,000, the first at frame 2,046.)
#[test]
fn over_af_xdp_no_frame_is_dropped_at_15000_frames_per_second() {
    const RATE: u64 = 15_000;
    const SECONDS: u64 = 5;
    require_tools();
    let pool = PathBuf::from(format!("/dev/shm/packetstore-test-switch-rate-{}.pool", std::process::id()));
    let _ = std::fs::remove_file(&pool);
    let net = Net::create(5);
    let metrics_port = 9305;
    let switch = start_switch_with(&net, &pool, "xdp", metrics_port, &[]);
    assert!(switch.banner.contains("AF_XDP"), "{}", switch.banner);
    // h2 announces itself (the switch learns its MAC), so the frames are
    // forwarded to p2 alone, not flooded.
    let ping = run("ip", &["netns", "exec", &net.host(1), "ping", "-c", "1", "-W", "2", &net.ip(2)]);
    assert!(ping.contains("1 received"), "{ping}");
    let destination = mac_of(&net.host(2));
    let source = [2, 0xaa, 0, 0, 0, 5];
    let mut rng = SplitMix64::new(35);
    let sent: Vec<Vec<u8>> = (0..RATE * SECONDS)
        .map(|n| raw_frame(destination, source, n, 64 + rng.below(1451) as usize, &mut rng))
        .collect();
    let receiver = in_netns(&net.host(2), || raw_receiver("eth0"));
    let sender = in_netns(&net.host(1), || RawSender::open("eth0").unwrap());
    let started = Instant::now();
    let received = std::thread::scope(|scope| {
        let receiving = scope.spawn(|| receive_frames(&receiver, sent.len(), Duration::from_secs(3)));
        send_paced(&sender, &sent, RATE);
        eprintln!("sent {} frames at {:.0} frames/s", sent.len(), sent.len() as f64 / started.elapsed().as_secs_f64());
        receiving.join().unwrap()
    });
    std::thread::sleep(Duration::from_millis(250));
    let text = metrics(&net, metrics_port);
    let dropped: Vec<String> = ["p1", "p2", "p3"]
        .iter()
        .flat_map(|port| ["tx_dropped_frames", "rx_dropped_frames"].map(|name| (name, *port)))
        .filter(|(name, port)| counter(&text, name, port) > 0)
        .map(|(name, port)| format!("{name}{{{port}}} = {}", counter(&text, name, port)))
        .collect();
    let number = |f: &[u8]| u64::from_le_bytes(f[14..22].try_into().unwrap());
    let missing = sent.len() - received.len();
    let first_gap = received.iter().enumerate().find(|(i, f)| number(f) != *i as u64).map(|(i, _)| i);
    assert!(
        missing == 0 && first_gap.is_none() && dropped.is_empty(),
        "h2 received {} of {} frames (first out of place at {first_gap:?}); drops: {dropped:?}\n{text}",
        received.len(),
        sent.len()
    );
    assert!(received == sent, "every frame whole");
    assert!(counter(&text, "logged_frames", "p1") >= sent.len() as u64, "{text}");
    assert!(counter(&text, "flooded_frames", "p1") < 10, "the frames went to p2 alone: {text}");
    switch.stop();
    std::fs::remove_file(&pool).unwrap();
}
