//! Goal: a 3-node group stays linearizable through network faults and
//! crashes: the leader cut off from the majority while its clients still
//! reach it, a follower cut off (a minority partition), one link cut (a
//! partial partition), a flapping link, kill -9 during a partition with
//! an immediate restart, and the leader paused (SIGSTOP) while cut off,
//! resumed once another leads. Porcupine (tools/linearizability, a Go
//! program over the vendored github.com/anishathalye/porcupine v1.3.1)
//! checks the clients' history.
//!
//! Method: network namespaces made here, named with the process id: a hub
//! namespace holding a bridge and the clients' address (10.S.R.254), and a
//! namespace per node (10.S.R.i) joined to the bridge by a veth pair. Each
//! node runs as `ip netns exec NS packetstore serve` on its own address;
//! client threads of this test enter the hub namespace (setns) and reach
//! the nodes over the bridge, so nothing of this test is in the root
//! namespace but its processes. Peer traffic is cut with tc on a node's
//! veth: an htb qdisc whose class 1:2 ends in a `pfifo limit 0` (it drops
//! every packet) and, per cut peer, a u32 filter sending the packets for
//! that peer's address to it. Clients' packets (from the hub's address)
//! match no filter, so a cut-off leader still serves its clients. (tc's
//! usual `action drop` (act_gact) and netem are not in this machine's
//! kernel; htb, pfifo and u32 are.) A flapping link is the hub end of a
//! node's veth set down and up. A seeded nemesis runs every fault once, in
//! a random order, then heals and waits until the group serves writes
//! again. No node may exit by itself: a deposed leader whose uncommitted
//! entries the group dropped restarts in place (it re-executes itself);
//! a node that exits anyway is restarted, as a supervisor would, and
//! fails the run.
//!
//! Client threads, half writers and half readers, SET and GET a few keys
//! (every SET with a unique value) over connections to random nodes with
//! short timeouts, and record every operation (client, key, value, call
//! and return times). A SET answered +OK is complete; one answered
//! otherwise (an error, a timeout, a closed connection) may or may not
//! have happened: it is recorded as indeterminate (it returns at the end
//! of the history) and the client goes on as a new process on a new
//! connection. A failed GET is dropped. Beside Porcupine's verdict the
//! test checks: hundreds of operations completed, reads and writes
//! completed during faults, a value written by a SET refused with TRYAGAIN
//! or READONLY is never read, no node crashed, and the checker rejects the
//! history with a stale read added.
//!
//! One run by default (CI); `PACKETSTORE_PARTITION_RUNS=N` runs N with
//! different seeds, `PACKETSTORE_PARTITION_SEED=hex` reruns one. A failed
//! run keeps its history, visualization and node logs (the path is in the
//! message; `PACKETSTORE_PARTITION_KEEP=1` keeps every run's). Needs root
//! and iproute2 (ip, tc): fails without them.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Server, TempPool};

/// Client threads, keys they share, and the least number of completed
/// operations a run must have.
const CLIENTS: usize = 6;
const KEYS: u64 = 5;
const MIN_COMPLETED: usize = 300;
/// Reads and writes that must complete while a fault is on.
const MIN_DURING_FAULTS: usize = 20;
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
const REPLY_TIMEOUT: Duration = Duration::from_millis(1000);

// ---- seeded choices ----

/// splitmix64: the nemesis's and the clients' choices, from the run's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low + 1))
    }

    fn pick(&mut self, from: &[usize]) -> usize {
        from[self.below(from.len() as u64) as usize]
    }
}

// ---- commands and namespaces ----

/// Runs a command (ip, tc); its stderr on failure.
fn try_run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} {}: {e} (is iproute2 installed?)", args.join(" ")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
}

fn sh(program: &str, args: &[&str]) {
    try_run(program, args).unwrap_or_else(|e| panic!("{e}"));
}

/// The test needs root and iproute2; it fails (not skips) without them,
/// so that CI cannot pass without running it.
fn require_root_and_iproute2() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert!(euid == 0, "partitions.rs needs root (it makes network namespaces, veths, tc filters); uid is {euid}");
    for program in ["ip", "tc"] {
        if let Err(e) = try_run(program, &["-V"]) {
            panic!("partitions.rs needs iproute2's {program}: {e}");
        }
    }
}

/// Moves the calling thread into a network namespace made by `ip netns`.
fn enter_netns(name: &str) {
    let path = format!("/var/run/netns/{name}");
    let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: a valid namespace file descriptor; only this thread moves.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {name}: {}", std::io::Error::last_os_error());
}

/// Runs `f` on a thread in the namespace `name` (the test's own thread
/// stays where it is).
fn in_netns<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let thread = scope.spawn(|| {
            enter_netns(name);
            f()
        });
        thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Namespaces a previous run of this test left behind (it was killed):
/// their processes are ended and they are deleted, with its pool files.
fn sweep_leftovers() {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let pid = name.strip_prefix("pspart-").and_then(|rest| rest.split('-').next()?.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let pids = Command::new("ip").args(["netns", "pids", name]).output().map(|o| o.stdout).unwrap_or_default();
        for leftover in String::from_utf8_lossy(&pids).split_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{leftover}/comm")).unwrap_or_default();
            if let (Ok(leftover), "packetstore") = (leftover.parse::<libc::pid_t>(), comm.trim()) {
                // SAFETY: a signal to a server a dead run of this test started.
                unsafe { libc::kill(leftover, libc::SIGKILL) };
            }
        }
        let _ = try_run("ip", &["netns", "del", name]);
        for i in 1..=3 {
            let _ = std::fs::remove_file(format!("/dev/shm/packetstore-test-partitions-{i}-{pid}.pool"));
        }
    }
}

/// The namespaces, bridge and veths of one run, deleted on drop; which
/// peer links are cut.
struct Net {
    hub: String,
    nodes: Vec<String>,
    /// The first three octets of every address: 10.S.R.
    prefix: String,
    /// Directed cuts (from, to) in force.
    cuts: BTreeSet<(usize, usize)>,
    /// Nodes whose link is down.
    down: BTreeSet<usize>,
}

impl Net {
    /// The hub and three nodes; the subnet varies with the process and the
    /// run (every address is inside these namespaces anyway).
    fn create(run: usize) -> Net {
        let pid = std::process::id();
        let tag = format!("pspart-{pid}-{run}");
        let net = Net {
            hub: format!("{tag}-hub"),
            nodes: (1..=3).map(|i| format!("{tag}-n{i}")).collect(),
            prefix: format!("10.{}.{}", 200 + pid % 50, run % 250),
            cuts: BTreeSet::new(),
            down: BTreeSet::new(),
        };
        let hub = net.hub.as_str();
        sh("ip", &["netns", "add", hub]);
        sh("ip", &["-n", hub, "link", "add", "br0", "type", "bridge"]);
        sh("ip", &["-n", hub, "addr", "add", &format!("{}.254/24", net.prefix), "dev", "br0"]);
        sh("ip", &["-n", hub, "link", "set", "br0", "up"]);
        sh("ip", &["-n", hub, "link", "set", "lo", "up"]);
        for i in 1..=3 {
            net.add_node(i);
        }
        net
    }

    /// Node i's namespace, its veth to the bridge, and the tc qdisc its
    /// cuts use: htb, class 1:2 draining into a pfifo of limit 0 (every
    /// packet sent to it is dropped); unclassified packets bypass it.
    fn add_node(&self, i: usize) {
        let (hub, ns) = (self.hub.as_str(), self.nodes[i - 1].as_str());
        let veth = format!("v{i}");
        sh("ip", &["netns", "add", ns]);
        sh("ip", &["-n", hub, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", ns]);
        sh("ip", &["-n", hub, "link", "set", &veth, "master", "br0", "up"]);
        sh("ip", &["-n", ns, "addr", "add", &format!("{}/24", self.ip(i)), "dev", "eth0"]);
        sh("ip", &["-n", ns, "link", "set", "eth0", "up"]);
        sh("ip", &["-n", ns, "link", "set", "lo", "up"]);
        sh("tc", &["-n", ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb"]);
        sh("tc", &["-n", ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:2", "htb", "rate", "1mbit"]);
        sh("tc", &["-n", ns, "qdisc", "add", "dev", "eth0", "parent", "1:2", "handle", "2:", "pfifo", "limit", "0"]);
    }

    fn ip(&self, i: usize) -> String {
        format!("{}.{i}", self.prefix)
    }

    /// Drops what node `from` sends to node `to` (filter priority `to`).
    fn cut_one_way(&mut self, from: usize, to: usize) {
        if self.cuts.insert((from, to)) {
            let ns = &self.nodes[from - 1];
            let (prio, dst) = (to.to_string(), format!("{}/32", self.ip(to)));
            let filter = ["-n", ns, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", &prio];
            let rest = ["u32", "match", "ip", "dst", &dst, "flowid", "1:2"];
            sh("tc", &[&filter[..], &rest[..]].concat());
        }
    }

    /// Cuts the peer traffic between a and b, both ways.
    fn cut(&mut self, a: usize, b: usize) {
        self.cut_one_way(a, b);
        self.cut_one_way(b, a);
    }

    /// Cuts node i from both others (its clients still reach it).
    fn isolate(&mut self, i: usize) {
        for j in (1..=3).filter(|&j| j != i) {
            self.cut(i, j);
        }
    }

    /// Node i's link to the bridge (the hub end of its veth) up or down.
    fn set_link(&mut self, i: usize, up: bool) {
        sh("ip", &["-n", &self.hub, "link", "set", &format!("v{i}"), if up { "up" } else { "down" }]);
        if up {
            self.down.remove(&i);
        } else {
            self.down.insert(i);
        }
    }

    /// Every cut removed and every link up.
    fn heal(&mut self) {
        for (from, to) in std::mem::take(&mut self.cuts) {
            let prio = to.to_string();
            sh("tc", &["-n", &self.nodes[from - 1], "filter", "del", "dev", "eth0", "parent", "1:", "prio", &prio]);
        }
        for i in std::mem::take(&mut self.down) {
            self.set_link(i, true);
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in self.nodes.iter().chain([&self.hub]) {
            let _ = try_run("ip", &["netns", "del", ns]);
        }
    }
}

// ---- a minimal RESP client: the replies this test reads ----

#[derive(Debug)]
enum Reply {
    Status(String),
    Error(String),
    /// An integer (ROLE's offsets; not read).
    Int,
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

fn read_reply(reader: &mut impl BufRead) -> std::io::Result<Reply> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end_matches("\r\n");
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad reply line {line:?}"));
    let (kind, rest) = line.split_at_checked(1).ok_or_else(bad)?;
    let number = || rest.parse::<i64>().map_err(|_| bad());
    Ok(match kind {
        "+" => Reply::Status(rest.to_string()),
        "-" => Reply::Error(rest.to_string()),
        ":" => number().map(|_| Reply::Int)?,
        "$" if number()? < 0 => Reply::Bulk(None),
        "$" => {
            let mut body = vec![0; number()? as usize + 2];
            reader.read_exact(&mut body)?;
            body.truncate(body.len() - 2);
            Reply::Bulk(Some(body))
        }
        "*" => Reply::Array((0..number()?.max(0)).map(|_| read_reply(reader)).collect::<Result<_, _>>()?),
        _ => return Err(bad()),
    })
}

/// One connection to a node, with short timeouts.
struct Conn {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
        stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
        stream.set_write_timeout(Some(REPLY_TIMEOUT))?;
        stream.set_nodelay(true)?;
        Ok(Conn { reader: BufReader::new(stream.try_clone()?), stream })
    }

    fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Reply> {
        self.stream.write_all(&common::encode(args))?;
        read_reply(&mut self.reader)
    }
}

// ---- the group ----

/// The role a node's ROLE reports.
#[derive(Debug)]
enum Role {
    Master,
    /// A follower, and its leader's address (empty when it knows none).
    Slave(String),
}

fn role(addr: SocketAddr) -> Option<Role> {
    let reply = Conn::open(addr).ok()?.call(&[b"ROLE"]).ok()?;
    let Reply::Array(items) = reply else { return None };
    match items.as_slice() {
        [Reply::Bulk(Some(kind)), ..] if kind == b"master" => Some(Role::Master),
        [Reply::Bulk(Some(kind)), Reply::Bulk(Some(leader)), ..] if kind == b"slave" => {
            Some(Role::Slave(String::from_utf8_lossy(leader).into_owned()))
        }
        _ => None,
    }
}

/// A server that left on its own, and why (from its log).
struct Exit {
    node: usize,
    status: ExitStatus,
    reason: String,
}

/// Why a server left, from the end of its log: its panic's location and
/// message, or its last line.
fn exit_reason(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    match lines.iter().rposition(|line| line.contains("panicked at")) {
        Some(at) => lines[at..lines.len().min(at + 2)].join(" "),
        None => lines.last().copied().unwrap_or_default().to_string(),
    }
}

/// Three nodes in their namespaces, restarted on the same pools.
struct Group {
    /// Declared first: the servers die before their namespaces go.
    nodes: Vec<Option<Server>>,
    net: Net,
    pools: Vec<TempPool>,
    dir: PathBuf,
    exits: Vec<Exit>,
}

impl Group {
    fn start(net: Net, dir: PathBuf) -> Group {
        let pools = (1..=3).map(|i| TempPool::new(&format!("partitions-{i}"))).collect();
        let mut group = Group { nodes: Vec::new(), net, pools, dir, exits: Vec::new() };
        for i in 1..=3 {
            let server = group.spawn(i);
            group.nodes.push(Some(server));
        }
        group
    }

    fn resp(&self, i: usize) -> SocketAddr {
        format!("{}:6379", self.net.ip(i)).parse().unwrap()
    }

    fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("node{i}.log"))
    }

    /// `ip netns exec NS packetstore serve ...` on node i's address; its
    /// log is appended to node{i}.log. It dies with this thread (the
    /// test's), should the test be killed.
    fn spawn(&self, i: usize) -> Server {
        let peers: Vec<String> = (1..=3).map(|j| format!("{j}={}:7000", self.net.ip(j))).collect();
        let ip = self.net.ip(i);
        let mut log = File::options().create(true).append(true).open(self.log(i)).unwrap();
        writeln!(log, "---- node {i} starts ----").unwrap();
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.net.nodes[i - 1], env!("CARGO_BIN_EXE_packetstore"), "serve"]);
        command.args(["--pool", self.pools[i - 1].0.to_str().unwrap(), "--pool-size", "256MiB"]);
        command.args(["--ring-entries", "1024", "--http", &format!("{ip}:8080"), "--resp", &format!("{ip}:6379")]);
        command.args(["--node-id", &i.to_string(), "--peers", &peers.join(","), "--raft-tick", "50ms"]);
        // The test's clients connect from the host's side of the veth pairs:
        // other hosts, as protected mode sees them.
        command.args(["--protected-mode", "no"]);
        command.stderr(log);
        // SAFETY: prctl is async-signal-safe; nothing else runs in the child.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        Server::start_command(&mut command)
    }

    /// kill -9 and an immediate restart on the same pool, as a supervisor
    /// would.
    fn kill_and_restart(&mut self, i: usize) {
        self.nodes[i - 1].take().expect("running").kill();
        let server = self.spawn(i);
        self.nodes[i - 1] = Some(server);
    }

    /// Sends `signal` to node i's server (our child).
    fn signal(&self, i: usize, signal: libc::c_int) {
        let pid = self.nodes[i - 1].as_ref().expect("running").child.id() as libc::pid_t;
        // SAFETY: a signal to our own child process.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill -{signal} node {i}: {}", std::io::Error::last_os_error());
    }

    /// Restarts the nodes that exited (none should: a node whose tree
    /// reflects entries the group dropped restarts in place), noting each.
    fn supervise(&mut self) {
        for i in 1..=3 {
            let Some(server) = self.nodes[i - 1].as_mut() else { continue };
            let Ok(Some(status)) = server.child.try_wait() else { continue };
            let reason = exit_reason(&std::fs::read_to_string(self.log(i)).unwrap_or_default());
            eprintln!("  node {i} exited by itself ({status}); restarting it: {reason}");
            self.exits.push(Exit { node: i, status, reason });
            self.nodes[i - 1] = None;
            let server = self.spawn(i);
            self.nodes[i - 1] = Some(server);
        }
    }

    /// Supervises for `duration`.
    fn hold(&mut self, duration: Duration) {
        let deadline = Instant::now() + duration;
        while Instant::now() < deadline {
            self.supervise();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The leader: a node whose ROLE says master and that a follower
    /// names as its leader, polled (from the hub) until one is.
    fn leader(&mut self) -> usize {
        self.leader_among(&[1, 2, 3], Duration::from_secs(30))
    }

    /// A leader among `nodes` that another of them names as its leader,
    /// polled until `timeout`.
    fn leader_among(&mut self, nodes: &[usize], timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let addrs: Vec<SocketAddr> = (1..=3).map(|i| self.resp(i)).collect();
            let roles: Vec<Option<Role>> = in_netns(&self.net.hub, || addrs.iter().map(|&a| role(a)).collect());
            let named = |i: usize| {
                nodes.iter().any(|&j| matches!(&roles[j - 1], Some(Role::Slave(ip)) if *ip == self.net.ip(i)))
            };
            if let Some(&i) = nodes.iter().find(|&&i| matches!(roles[i - 1], Some(Role::Master)) && named(i)) {
                return i;
            }
            assert!(Instant::now() < deadline, "no leader among nodes {nodes:?} within {timeout:?}; roles: {roles:?}");
            self.hold(Duration::from_millis(50));
        }
    }

    /// Polls until a SET through some node is acknowledged.
    fn wait_writable(&mut self) -> Duration {
        let started = Instant::now();
        let deadline = started + Duration::from_secs(30);
        for attempt in 0u64.. {
            let addr = self.resp(attempt as usize % 3 + 1);
            let reply =
                in_netns(&self.net.hub, || Conn::open(addr).and_then(|mut c| c.call(&[b"SET", b"probe", b"1"])));
            if matches!(reply, Ok(Reply::Status(ref s)) if s == "OK") {
                break;
            }
            assert!(Instant::now() < deadline, "the healed group serves no write within 30 s: {reply:?}");
            self.hold(Duration::from_millis(50));
        }
        started.elapsed()
    }
}

// ---- the clients ----

/// Monotonic nanoseconds since the run's start.
struct Clock(Instant);

impl Clock {
    fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// One operation of the history (tools/linearizability/main.go describes
/// the format). Values are recorded as their tags (`c3-17`); on the wire
/// some carry padding, so that large values take their own paths.
#[derive(Clone, Debug)]
struct Op {
    process: usize,
    put: bool,
    key: u64,
    /// For a put the tag written, for a get the tag read (None: nil).
    value: Option<String>,
    call: u64,
    /// None: a put whose outcome is unknown.
    ret: Option<u64>,
    node: usize,
    error: Option<String>,
}

impl Op {
    /// A put the server refused before running it (documented: TRYAGAIN
    /// and READONLY are answered instead of running the command).
    fn refused(&self) -> bool {
        self.error.as_deref().is_some_and(|e| e.starts_with("TRYAGAIN") || e.starts_with("READONLY"))
    }
}

/// The bytes a tag is written as: a quarter of the values padded to
/// 300-800 bytes (values above 256 bytes are sent from pool buffers).
fn wire_value(tag: &str) -> Vec<u8> {
    let hash = tag.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let padding = if hash % 4 == 0 { 300 + hash as usize % 500 } else { 0 };
    let mut value = tag.as_bytes().to_vec();
    value.resize(tag.len() + padding, b'.');
    value
}

/// The tag a read value carries; a value no put could have written is
/// kept, marked, so that the checker rejects it.
fn tag_of(value: &[u8]) -> String {
    let text = String::from_utf8_lossy(value);
    let tag = text.trim_end_matches('.');
    if wire_value(tag) == value {
        return tag.to_string();
    }
    format!("corrupt({} bytes):{}", value.len(), text.chars().take(40).collect::<String>())
}

/// An I/O error, in short: a timeout, a closed or reset connection.
fn io_cause(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => "timeout".into(),
        std::io::ErrorKind::UnexpectedEof => "closed".into(),
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => "reset".into(),
        _ => error.to_string(),
    }
}

/// Runs `op` (its kind, key and value set) on `conn`, filling in its
/// times and outcome; whether the connection may be used again.
fn operate(conn: &mut Conn, op: &mut Op, clock: &Clock) -> bool {
    let key = format!("k{}", op.key);
    op.call = clock.now();
    let result = match (&op.value, op.put) {
        (Some(tag), true) => conn.call(&[b"SET", key.as_bytes(), &wire_value(tag)]),
        _ => conn.call(&[b"GET", key.as_bytes()]),
    };
    let ret = clock.now();
    match (op.put, result) {
        (true, Ok(Reply::Status(status))) if status == "OK" => op.ret = Some(ret),
        (true, Ok(Reply::Error(error))) => op.error = Some(error),
        (true, Ok(other)) => op.error = Some(format!("unexpected reply {other:?}")),
        (true, Err(error)) => op.error = Some(format!("io: {}", io_cause(&error))),
        (false, Ok(Reply::Bulk(value))) => {
            op.value = value.as_deref().map(tag_of);
            op.ret = Some(ret);
        }
        (false, Ok(Reply::Error(_)) | Err(_)) => {}
        (false, Ok(other)) => {
            op.value = Some(format!("unexpected reply {other:?}"));
            op.ret = Some(ret);
        }
    }
    op.ret.is_some()
}

/// What the client threads share.
struct Workload<'a> {
    hub: &'a str,
    addrs: Vec<SocketAddr>,
    clock: &'a Clock,
    stop: &'a AtomicBool,
    steer: &'a Steering,
    seed: u64,
    /// A bound on the run, whatever happens.
    deadline: Instant,
}

/// How the nemesis steers the writers: it holds them (no new write
/// starts) and keeps them off a node, and sees which are in a write.
struct Steering {
    hold: AtomicBool,
    /// The node writers stay off (0: none).
    avoid: AtomicUsize,
    busy: Vec<AtomicBool>,
}

impl Steering {
    fn new() -> Steering {
        Steering {
            hold: AtomicBool::new(false),
            avoid: AtomicUsize::new(0),
            busy: (0..CLIENTS).map(|_| false.into()).collect(),
        }
    }

    /// Whether client `id` (a writer) may write on `node` now; if so it is
    /// marked busy until `done` (marked first, then checked: the nemesis
    /// sets `hold` first, then waits for no writer to be busy).
    fn may_write(&self, id: usize, node: usize) -> bool {
        self.busy[id].store(true, Ordering::SeqCst);
        if self.hold.load(Ordering::SeqCst) || self.avoid.load(Ordering::SeqCst) == node {
            self.busy[id].store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn done(&self, id: usize) {
        self.busy[id].store(false, Ordering::SeqCst);
    }
}

/// A client thread: from the hub, SETs (even ids) or GETs (odd ids) of
/// random keys over connections to random nodes (a few to a score of
/// operations each); after a failure, a new connection (and, after an
/// indeterminate put, a new process). Writers never wait behind a read:
/// a leader that acknowledged writes it cannot commit would be caught by
/// the readers of the other side. Writers follow the nemesis's steering.
fn client(id: usize, work: &Workload<'_>) -> Vec<Op> {
    enter_netns(work.hub);
    let mut rng = Rng(work.seed ^ (id as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let (mut ops, mut process, mut written) = (Vec::new(), id, 0);
    let mut conn: Option<(Conn, usize, u64)> = None;
    while !work.stop.load(Ordering::Relaxed) && Instant::now() < work.deadline {
        let Some((connection, node, left)) = conn.as_mut() else {
            let avoid = if id % 2 == 0 { work.steer.avoid.load(Ordering::SeqCst) } else { 0 };
            let node = match avoid {
                0 => rng.below(3) as usize + 1,
                avoid => (avoid + rng.below(2) as usize) % 3 + 1,
            };
            match Conn::open(work.addrs[node - 1]) {
                Ok(connection) => conn = Some((connection, node, 1 + rng.below(20))),
                Err(_) => std::thread::sleep(rng.millis(10, 50)),
            }
            continue;
        };
        let put = id % 2 == 0;
        if put && !work.steer.may_write(id, *node) {
            conn = None;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        if put {
            written += 1;
        }
        let value = put.then(|| format!("c{id}-{written}"));
        let mut op = Op { process, put, key: rng.below(KEYS), value, call: 0, ret: None, node: *node, error: None };
        let reusable = operate(connection, &mut op, work.clock);
        work.steer.done(id);
        *left -= 1;
        if !reusable || *left == 0 {
            conn = None;
        }
        if op.put && op.ret.is_none() {
            process += CLIENTS;
        }
        if op.put || op.ret.is_some() {
            ops.push(op);
        }
        std::thread::sleep(rng.millis(1, 20));
    }
    ops
}

/// Sets the stop flag when dropped (also when the nemesis panics).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

// ---- the nemesis ----

#[derive(Clone, Copy, Debug)]
enum Fault {
    IsolateLeader,
    IsolateFollower,
    CutLeaderLink,
    FlapLink,
    KillDuringPartition,
    PauseIsolatedLeader,
}

const FAULTS: [Fault; 6] = [
    Fault::IsolateLeader,
    Fault::IsolateFollower,
    Fault::CutLeaderLink,
    Fault::FlapLink,
    Fault::KillDuringPartition,
    Fault::PauseIsolatedLeader,
];

/// When a fault was on, and what it was.
struct Window {
    start: u64,
    end: u64,
    what: String,
}

/// Every fault once, in a seeded order, each followed by a healed pause;
/// each fault's window is added to `windows` once healed.
fn nemesis(group: &mut Group, rng: &mut Rng, shared: (&Clock, &Steering), windows: &mut Vec<Window>) {
    let (clock, steer) = shared;
    group.hold(Duration::from_secs(1));
    let mut order = FAULTS.to_vec();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for fault in order {
        let leader = group.leader();
        let start = clock.now();
        let what = inflict(group, fault, leader, rng, steer);
        group.net.heal();
        let end = clock.now();
        eprintln!("  {:6.2}-{:6.2} s: {what}", start as f64 / 1e9, end as f64 / 1e9);
        windows.push(Window { start, end, what });
        group.hold(rng.millis(500, 1000));
    }
}

/// Puts `fault` on (the leader being `leader`) and holds it; what it was.
fn inflict(group: &mut Group, fault: Fault, leader: usize, rng: &mut Rng, steer: &Steering) -> String {
    let others: Vec<usize> = (1..=3).filter(|&i| i != leader).collect();
    match fault {
        Fault::IsolateLeader => {
            let (hold, started) = (rng.millis(1500, 3000), Instant::now());
            group.net.isolate(leader);
            // The majority elects a leader of its own (or the cut is not).
            let new = group.leader_among(&others, Duration::from_secs(10));
            let elected = started.elapsed();
            group.hold(hold.saturating_sub(elected));
            format!(
                "leader {leader} cut off from the majority (its clients still reach it); node {new} elected in {:.2} s",
                elected.as_secs_f64()
            )
        }
        Fault::IsolateFollower => {
            let follower = rng.pick(&others);
            group.net.isolate(follower);
            group.hold(rng.millis(1500, 3000));
            format!("follower {follower} cut off (a minority partition)")
        }
        Fault::CutLeaderLink => {
            let follower = rng.pick(&others);
            group.net.cut(leader, follower);
            group.hold(rng.millis(1500, 3000));
            format!("link {leader}-{follower} cut (leader {leader}; the third node reaches both)")
        }
        Fault::FlapLink => {
            let node = rng.pick(&[1, 2, 3]);
            let deadline = Instant::now() + rng.millis(2000, 3000);
            let mut flaps = 0;
            while Instant::now() < deadline {
                group.net.set_link(node, false);
                group.hold(rng.millis(100, 500));
                group.net.set_link(node, true);
                group.hold(rng.millis(100, 700));
                flaps += 1;
            }
            format!("node {node}'s link flapping ({flaps} times down; leader {leader})")
        }
        Fault::KillDuringPartition => {
            let isolated = rng.pick(&[1, 2, 3]);
            group.net.isolate(isolated);
            group.hold(rng.millis(300, 1000));
            let killed = rng.pick(&[1, 2, 3]);
            group.kill_and_restart(killed);
            group.hold(rng.millis(1000, 2000));
            format!("node {isolated} cut off (leader {leader}); node {killed} killed (-9) and restarted meanwhile")
        }
        Fault::PauseIsolatedLeader => pause_isolated_leader(group, leader, &others, rng, steer),
    }
}

/// The leader cut off and paused (SIGSTOP) while the majority elects
/// another and writes on, then resumed still cut off: it wakes up
/// believing it leads, and its clients' reads are served at once unless
/// it confirms its leadership first. Writes are steered off it (held
/// while it is cut off, then kept to the others) so that it holds no
/// write it cannot commit, behind which its reads would wait anyway.
fn pause_isolated_leader(
    group: &mut Group,
    leader: usize,
    others: &[usize],
    rng: &mut Rng,
    steer: &Steering,
) -> String {
    steer.avoid.store(leader, Ordering::SeqCst);
    steer.hold.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    while steer.busy.iter().any(|busy| busy.load(Ordering::SeqCst)) {
        assert!(Instant::now() < deadline, "a writer stayed in a write for 10 s");
        group.hold(Duration::from_millis(5));
    }
    group.net.isolate(leader);
    group.signal(leader, libc::SIGSTOP);
    steer.hold.store(false, Ordering::SeqCst);
    let new = group.leader_among(others, Duration::from_secs(10));
    group.hold(rng.millis(300, 1000));
    group.signal(leader, libc::SIGCONT);
    group.hold(rng.millis(500, 1500));
    steer.avoid.store(0, Ordering::SeqCst);
    format!(
        "leader {leader} cut off and paused, writes kept off it; node {new} elected; {leader} resumed still cut off"
    )
}

// ---- the history and its checks ----

/// `go` in tools/linearizability, offline: the vendored sources only.
fn go(args: &[&str]) -> std::process::Output {
    let mut command = Command::new(find_go());
    command.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/linearizability")).args(args);
    command.env("GOFLAGS", "-mod=vendor").env("GOPROXY", "off").env("GOTOOLCHAIN", "local");
    if ["GOCACHE", "XDG_CACHE_HOME", "HOME"].iter().all(|v| std::env::var_os(v).is_none()) {
        command.env("GOCACHE", Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-build"));
    }
    command.output().unwrap_or_else(|e| panic!("go {}: {e}", args.join(" ")))
}

/// The Go checker, built once.
fn checker() -> &'static Path {
    static CHECKER: OnceLock<PathBuf> = OnceLock::new();
    CHECKER.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("linearizability");
        let output = go(&["build", "-mod=vendor", "-o", out.to_str().unwrap(), "."]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "building tools/linearizability failed: {stderr}");
        out
    })
}

/// `go` on PATH, or in Go's default install directory.
fn find_go() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("go"))
        .chain([PathBuf::from("/usr/local/go/bin/go")])
        .find(|go| go.is_file())
        .expect("partitions.rs needs Go (>= 1.18) to build its checker, tools/linearizability: not on PATH")
}

/// Writes the history, JSON lines after '#' comments (the run's seed and
/// faults), in call order.
fn write_history(path: &Path, header: &[String], ops: &[Op]) {
    let mut out = std::io::BufWriter::new(File::create(path).unwrap());
    for line in header {
        writeln!(out, "# {line}").unwrap();
    }
    let mut ops: Vec<&Op> = ops.iter().collect();
    ops.sort_by_key(|op| op.call);
    for op in ops {
        let mut line = serde_json::json!({
            "process": op.process, "op": if op.put { "put" } else { "get" }, "key": format!("k{}", op.key),
            "value": op.value, "call": op.call, "return": op.ret, "node": op.node,
        });
        if let Some(error) = &op.error {
            line["error"] = error.as_str().into();
        }
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
}

/// Runs the checker on a history: its exit code and output.
fn check(history: &Path) -> (Option<i32>, String) {
    let output = Command::new(checker()).arg("-timeout").arg("120s").arg(history).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code(), text.trim().to_string())
}

/// A stale read to add to a history: of the value a completed put wrote,
/// after a later completed put on the same key returned.
fn stale_read(ops: &[Op]) -> Option<Op> {
    let mut puts: Vec<&Op> = ops.iter().filter(|op| op.put && op.ret.is_some()).collect();
    puts.sort_by_key(|op| op.call);
    let process = ops.iter().map(|op| op.process).max()? + 1;
    puts.iter().find_map(|first| {
        let later = puts.iter().find(|op| op.key == first.key && op.call > first.ret.unwrap())?;
        let call = later.ret.unwrap() + 1;
        let error = Some("doctored: a stale read".to_string());
        Some(Op {
            process,
            put: false,
            value: first.value.clone(),
            call,
            ret: Some(call + 1),
            node: 0,
            error,
            ..**first
        })
    })
}

/// Counts of a run's operations.
#[derive(Debug, Default)]
struct Counts {
    reads: usize,
    writes: usize,
    /// Indeterminate writes by cause.
    indeterminate: BTreeMap<String, usize>,
    reads_in_faults: usize,
    writes_in_faults: usize,
}

/// An indeterminate write's cause, in short: the server's error's first
/// word (TRYAGAIN), or the I/O error's (timeout, closed, reset).
fn cause(error: &str) -> String {
    error.strip_prefix("io: ").unwrap_or(error).split_whitespace().next().unwrap_or_default().to_string()
}

fn count(ops: &[Op], windows: &[Window]) -> Counts {
    let mut counts = Counts::default();
    for op in ops {
        let Some(ret) = op.ret else {
            *counts.indeterminate.entry(cause(op.error.as_deref().unwrap_or_default())).or_default() += 1;
            continue;
        };
        let in_fault = windows.iter().any(|w| w.start <= op.call && ret <= w.end);
        match (op.put, in_fault) {
            (true, true) => counts.writes_in_faults += 1,
            (false, true) => counts.reads_in_faults += 1,
            _ => {}
        }
        if op.put {
            counts.writes += 1;
        } else {
            counts.reads += 1;
        }
    }
    counts
}

/// What is wrong with a run's history beyond Porcupine's verdict: too
/// little done, refused writes that took effect, nodes that crashed.
fn sanity(ops: &[Op], counts: &Counts, exits: &[Exit]) -> Vec<String> {
    let mut problems = Vec::new();
    if counts.reads + counts.writes < MIN_COMPLETED {
        problems.push(format!("only {} operations completed (at least {MIN_COMPLETED})", counts.reads + counts.writes));
    }
    if counts.reads_in_faults < MIN_DURING_FAULTS || counts.writes_in_faults < MIN_DURING_FAULTS {
        problems.push(format!("too few operations completed during faults: {counts:?}"));
    }
    let refused: BTreeMap<&str, &Op> =
        ops.iter().filter(|op| op.put && op.refused()).map(|op| (op.value.as_deref().unwrap(), op)).collect();
    for read in ops.iter().filter(|op| !op.put) {
        if let Some(put) = read.value.as_deref().and_then(|v| refused.get(v)) {
            problems.push(format!("a refused SET took effect: {put:?} was read by {read:?}"));
        }
    }
    for exit in exits {
        problems.push(format!("node {} exited ({}): {}", exit.node, exit.status, exit.reason));
    }
    problems
}

/// The checker's verdicts on the history (must be Ok) and on a copy with
/// a stale read added (must be Illegal).
fn verdicts(dir: &Path, header: &[String], ops: &[Op]) -> (String, Vec<String>) {
    let mut problems = Vec::new();
    let history = dir.join("history.jsonl");
    write_history(&history, header, ops);
    let started = Instant::now();
    let (code, verdict) = check(&history);
    let verdict = format!("{verdict} [{:.1} s]", started.elapsed().as_secs_f64());
    if code != Some(0) {
        problems.push(format!("the checker's verdict (exit {code:?}): {verdict}"));
    }
    let Some(stale) = stale_read(ops) else {
        problems.push("no two sequential completed puts on a key to doctor the history with".into());
        return (verdict, problems);
    };
    let doctored = dir.join("doctored.jsonl");
    write_history(&doctored, header, &[ops, std::slice::from_ref(&stale)].concat());
    let (code, text) = check(&doctored);
    if code != Some(1) || !dir.join("doctored.jsonl.html").is_file() {
        problems.push(format!("the checker accepted a stale read {stale:?} (exit {code:?}): {text}"));
    }
    (verdict, problems)
}

// ---- runs ----

/// The runs' seeds: PACKETSTORE_PARTITION_SEED (hex) alone, or
/// PACKETSTORE_PARTITION_RUNS (default 1) random ones.
fn seeds() -> Vec<u64> {
    if let Ok(hex) = std::env::var("PACKETSTORE_PARTITION_SEED") {
        let seed = u64::from_str_radix(hex.trim().trim_start_matches("0x"), 16);
        return vec![seed.unwrap_or_else(|e| panic!("PACKETSTORE_PARTITION_SEED={hex}: not hex: {e}"))];
    }
    let runs = std::env::var("PACKETSTORE_PARTITION_RUNS")
        .map_or(1, |runs| runs.trim().parse().unwrap_or_else(|e| panic!("PACKETSTORE_PARTITION_RUNS={runs}: {e}")));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut rng = Rng(now ^ u64::from(std::process::id()) << 32);
    (0..runs).map(|_| rng.next()).collect()
}

/// What a run did: its history and faults, and what went wrong.
struct Run {
    ops: Vec<Op>,
    windows: Vec<Window>,
    exits: Vec<Exit>,
    problems: Vec<String>,
}

/// The clients against the nemesis; then the group healed, writable again,
/// and a second of healthy load.
fn load_under_faults(group: &mut Group, seed: u64) -> Run {
    let clock = Clock(Instant::now());
    let stop = AtomicBool::new(false);
    let addrs = (1..=3).map(|i| group.resp(i)).collect();
    let hub = group.net.hub.clone();
    let deadline = Instant::now() + Duration::from_secs(300);
    let steer = Steering::new();
    let work = Workload { hub: &hub, addrs, clock: &clock, stop: &stop, steer: &steer, seed, deadline };
    let mut rng = Rng(seed);
    let (mut problems, mut windows) = (Vec::new(), Vec::new());
    let ops = std::thread::scope(|scope| {
        let work = &work;
        let clients: Vec<_> = (0..CLIENTS).map(|id| scope.spawn(move || client(id, work))).collect();
        let stopper = StopOnDrop(&stop);
        // A panic (no leader, no write served) is a finding: the history
        // is still written and checked.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            nemesis(group, &mut rng, (&clock, &steer), &mut windows);
            let took = group.wait_writable();
            eprintln!("  healed: writes served again after {:.2} s", took.as_secs_f64());
            group.hold(Duration::from_secs(1));
        }));
        drop(stopper);
        if let Err(panic) = outcome {
            let text = panic.downcast_ref::<String>().cloned().or(panic.downcast_ref::<&str>().map(|s| s.to_string()));
            problems.push(format!("the nemesis failed: {}", text.unwrap_or_default()));
        }
        let ops = clients.into_iter().flat_map(|c| c.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        ops.collect::<Vec<Op>>()
    });
    Run { ops, windows, exits: std::mem::take(&mut group.exits), problems }
}

/// One run with `seed`: its summary, or what went wrong (its files kept).
fn run_once(index: usize, seed: u64) -> Result<String, String> {
    let started = Instant::now();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("partitions-{}-{seed:016x}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut group = Group::start(Net::create(index), dir.clone());
    let leader = group.leader();
    eprintln!("  nodes up in {:.2} s, leader {leader}", started.elapsed().as_secs_f64());
    let mut run = load_under_faults(&mut group, seed);
    drop(group);
    let counts = count(&run.ops, &run.windows);
    let mut header = vec![format!("seed {seed:016x}: PACKETSTORE_PARTITION_SEED={seed:x}")];
    header.extend(run.windows.iter().map(|w| format!("fault {}-{} ns: {}", w.start, w.end, w.what)));
    let (verdict, problems) = verdicts(&dir, &header, &run.ops);
    run.problems.extend(problems);
    run.problems.extend(sanity(&run.ops, &counts, &run.exits));
    let indeterminate: Vec<String> = counts.indeterminate.iter().map(|(cause, n)| format!("{n} {cause}")).collect();
    let summary = format!(
        "seed {seed:016x}: {} reads and {} writes completed ({} and {} during faults); indeterminate writes: {}; \
         {} exits; {verdict}; {:.1} s",
        counts.reads,
        counts.writes,
        counts.reads_in_faults,
        counts.writes_in_faults,
        if indeterminate.is_empty() { "none".to_string() } else { indeterminate.join(", ") },
        run.exits.len(),
        started.elapsed().as_secs_f64()
    );
    if !run.problems.is_empty() {
        return Err(format!("{summary}\n  kept: {}\n  {}", dir.display(), run.problems.join("\n  ")));
    }
    if std::env::var_os("PACKETSTORE_PARTITION_KEEP").is_some() {
        return Ok(format!("{summary}; kept: {}", dir.display()));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(summary)
}

/// The checker's own tests (it accepts a linearizable history, rejects a
/// stale read and bad input), so that CI runs them too.
#[test]
fn the_checker_passes_its_go_tests() {
    let output = go(&["test", "-mod=vendor", "-count=1", "."]);
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "go test in tools/linearizability failed: {text}");
}

#[test]
fn the_group_stays_linearizable_through_partitions_and_kills() {
    require_root_and_iproute2();
    sweep_leftovers();
    checker();
    let seeds = seeds();
    let mut failures = Vec::new();
    for (index, &seed) in seeds.iter().enumerate() {
        eprintln!("run {}/{}: seed {seed:016x}", index + 1, seeds.len());
        match run_once(index, seed) {
            Ok(summary) => eprintln!("  ok: {summary}"),
            Err(failure) => {
                eprintln!("  FAILED: {failure}");
                failures.push(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), seeds.len(), failures.join("\n"));
}
