//! AF_XDP ports whose UMEM is the pool's buffer region: the kernel copies
//! a received frame straight into the pool buffer the switch put in the
//! port's fill ring (copy mode, which every driver has; zero-copy is not
//! requested), and transmits from pool buffers. One socket per interface (queue 0), all sharing one
//! UMEM, so a frame received on one port is sent on another without a copy
//! in user space. Sockets and rings come from the `xdpilone` crate; the
//! six-instruction XDP program that redirects every frame to the socket
//! (an XSKMAP lookup) is loaded here with raw `bpf(2)` calls and attached
//! with a BPF link, so it detaches when the process dies (even `kill -9`).
//!
//! Invariant: UMEM address `a` is byte `a % buffer_size` of pool buffer
//! `a / buffer_size`; the UMEM is exactly the pool's buffer region, which
//! is page aligned and outlives the ports (the switch owns both). Every
//! ring is read and written in rounds until a round finds nothing: a
//! ring's cached view of the kernel's index is refreshed only when it
//! shows nothing, so one round may see a fraction of what is there.

use std::ffi::CString;
use std::io;
use std::num::NonZeroU32;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::time::Duration;

use xdpilone::xdp::XdpDesc;
use xdpilone::{DeviceQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig};

use crate::io::ports::{Frame, PortDrops, Ports};
use crate::pool::file::Pool;

/// Descriptors in each ring (fill, completion, receive, transmit).
pub const XDP_RING_SIZE: u32 = 2048;
/// `XDP_PACKET_HEADROOM`: where the kernel puts a received frame in its chunk.
pub const XDP_HEADROOM: u32 = 256;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const XDP_COPY: u16 = 1 << 1;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;

/// Where the XDP program runs on an interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (veth has it): `XDP_FLAGS_DRV_MODE`.
    Driver,
    /// On the socket buffer, any driver: `XDP_FLAGS_SKB_MODE`.
    Generic,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Driver => "driver",
            XdpMode::Generic => "generic",
        }
    }
}

/// Calls `bpf(cmd, attr)`; `attr` is the zero-padded `union bpf_attr`.
fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> io::Result<RawFd> {
    // SAFETY: attr is 128 readable and writable bytes, more than every
    // command used here reads; the kernel checks the rest is zero.
    let result = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() as libc::c_uint) };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(result as RawFd)
}

fn put_u32(attr: &mut [u8; 128], at: usize, value: u32) {
    attr[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

fn put_u64(attr: &mut [u8; 128], at: usize, value: u64) {
    attr[at..at + 8].copy_from_slice(&value.to_ne_bytes());
}

fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was just returned by bpf(2) and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// One `struct bpf_insn`.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let mut out = [0u8; 8];
    out[0] = code;
    out[1] = (src << 4) | (dst & 0x0f);
    out[2..4].copy_from_slice(&off.to_ne_bytes());
    out[4..8].copy_from_slice(&imm.to_ne_bytes());
    out
}

/// The program: `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);`
fn redirect_program(map_fd: RawFd) -> Vec<u8> {
    const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
    const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_DW | BPF_IMM
    const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    const PSEUDO_MAP_FD: u8 = 1;
    const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
    [
        insn(LDX_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        insn(MOV64_K, 3, 0, 0, XDP_PASS),
        insn(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
    ]
    .concat()
}

/// The XDP program on one interface, its XSKMAP, and the link that keeps
/// it attached while this value lives.
pub struct XdpProgram {
    map: OwnedFd,
    _program: OwnedFd,
    _link: OwnedFd,
    pub mode: XdpMode,
}

impl XdpProgram {
    /// Loads the redirect program and attaches it to `ifindex` in `mode`,
    /// or in the driver and else generically when `mode` is None.
    pub fn attach(ifindex: u32, mode: Option<XdpMode>) -> io::Result<XdpProgram> {
        let mut attr = [0u8; 128];
        put_u32(&mut attr, 0, BPF_MAP_TYPE_XSKMAP);
        put_u32(&mut attr, 4, 4);
        put_u32(&mut attr, 8, 4);
        put_u32(&mut attr, 12, 64);
        let map = owned(bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| context(e, "creating the XSKMAP"))?);
        let code = redirect_program(map.as_raw_fd());
        let license = c"Dual MIT/GPL";
        let mut log = vec![0u8; 4096];
        let mut attr = [0u8; 128];
        put_u32(&mut attr, 0, BPF_PROG_TYPE_XDP);
        put_u32(&mut attr, 4, (code.len() / 8) as u32);
        put_u64(&mut attr, 8, code.as_ptr() as u64);
        put_u64(&mut attr, 16, license.as_ptr() as u64);
        put_u32(&mut attr, 24, 1);
        put_u32(&mut attr, 28, log.len() as u32);
        put_u64(&mut attr, 32, log.as_mut_ptr() as u64);
        attr[48..48 + 8].copy_from_slice(b"pkts_xsk");
        put_u32(&mut attr, 68, BPF_XDP);
        let program = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
            let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
            context(e, &format!("loading the XDP program (verifier: {})", text.trim()))
        })?;
        let program = owned(program);
        let modes = match mode {
            Some(mode) => vec![mode],
            None => vec![XdpMode::Driver, XdpMode::Generic],
        };
        let mut last = None;
        for mode in modes {
            let mut attr = [0u8; 128];
            put_u32(&mut attr, 0, program.as_raw_fd() as u32);
            put_u32(&mut attr, 4, ifindex);
            put_u32(&mut attr, 8, BPF_XDP);
            let flags = if mode == XdpMode::Driver { XDP_FLAGS_DRV_MODE } else { XDP_FLAGS_SKB_MODE };
            put_u32(&mut attr, 12, flags);
            match bpf(BPF_LINK_CREATE, &mut attr) {
                Ok(link) => return Ok(XdpProgram { map, _program: program, _link: owned(link), mode }),
                // Busy: a program (a killed predecessor's) is still
                // attached; another mode would only fail differently.
                Err(error) if error.kind() == io::ErrorKind::ResourceBusy => {
                    return Err(context(error, &format!("attaching the XDP program in {} mode", mode.name())))
                }
                Err(error) => {
                    last = Some(context(error, &format!("attaching the XDP program in {} mode", mode.name())))
                }
            }
        }
        Err(last.expect("at least one mode tried"))
    }

    /// Sends the frames of receive queue `queue` to socket `socket`.
    pub fn insert(&self, queue: u32, socket: RawFd) -> io::Result<()> {
        let key = queue;
        let value = socket as u32;
        let mut attr = [0u8; 128];
        put_u32(&mut attr, 0, self.map.as_raw_fd() as u32);
        put_u64(&mut attr, 8, &key as *const u32 as u64);
        put_u64(&mut attr, 16, &value as *const u32 as u64);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map_err(|e| context(e, "adding the socket to the XSKMAP"))?;
        Ok(())
    }
}

fn context(error: io::Error, what: &str) -> io::Error {
    io::Error::new(error.kind(), format!("{what}: {error}"))
}

fn errno(error: xdpilone::Errno, what: &str) -> io::Error {
    context(io::Error::from_raw_os_error(error.get_raw()), what)
}

struct XdpPort {
    name: String,
    device: DeviceQueue,
    rx: RingRx,
    tx: RingTx,
    fd: RawFd,
    /// Buffers in the fill ring or received and not yet taken.
    filled: usize,
    _program: XdpProgram,
    _socket: Socket,
}

/// The switch's AF_XDP ports over one UMEM (the pool's buffers).
pub struct XdpPorts {
    ports: Vec<XdpPort>,
    buffer_size: u32,
    mode: XdpMode,
    // Dropped last: the sockets above hold the UMEM registration.
    _umem: Umem,
}

/// The file system of `path`, by name where known, for messages.
fn file_system(path: &std::path::Path) -> String {
    const NAMES: [(i64, &str); 6] = [
        (0x0102_1994, "tmpfs"),
        (0x9584_58f6, "hugetlbfs"),
        (0xef53, "ext4"),
        (0x5846_5342, "xfs"),
        (0x9123_683e, "btrfs"),
        (0x6969, "nfs"),
    ];
    let Ok(c_path) = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())) else {
        return "an unknown file system".into();
    };
    // SAFETY: statfs is plain data; all-zero is a valid value.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c_path is NUL-terminated and `stat` is writable.
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return "an unknown file system".into();
    }
    let magic = stat.f_type as i64;
    NAMES.iter().find(|(m, _)| *m == magic).map_or(format!("file system {magic:#x}"), |(_, name)| name.to_string())
}

/// Why the kernel refused the pool's memory as a UMEM, in words.
fn pin_refusal(error: xdpilone::Errno, pool_path: &std::path::Path) -> io::Error {
    let cause = io::Error::from_raw_os_error(error.get_raw());
    io::Error::new(
        cause.kind(),
        format!(
            "the kernel refused to pin the pool {} ({}) as AF_XDP packet memory: {cause}. A long-term pin \
             of a shared file mapping is allowed on tmpfs (/dev/shm) and hugetlbfs; this kernel refuses it \
             for page-cache files (ext4, xfs) and for FS-DAX files. Put the pool on /dev/shm or hugetlbfs, \
             or use --datapath packet (copying)",
            pool_path.display(),
            file_system(pool_path)
        ),
    )
}

impl XdpPorts {
    /// Opens one socket per interface in `names` over the UMEM `area` (the
    /// pool's buffer region, page aligned, `buffer_size` per chunk).
    ///
    /// # Safety
    /// `area` must stay mapped and unmoved for as long as the ports live.
    pub unsafe fn open(
        names: &[String],
        (area, pool_path): (NonNull<[u8]>, &std::path::Path),
        buffer_size: u32,
        mode: Option<XdpMode>,
    ) -> io::Result<XdpPorts> {
        let config = UmemConfig {
            fill_size: XDP_RING_SIZE,
            complete_size: XDP_RING_SIZE,
            frame_size: buffer_size,
            headroom: 0,
            flags: 0,
        };
        // SAFETY: the caller keeps `area` mapped; the pool's buffer region
        // starts on a page.
        let umem = unsafe { Umem::new(config, area) }.map_err(|e| pin_refusal(e, pool_path))?;
        let mut ports = Vec::new();
        let mut chosen = mode;
        for (index, name) in names.iter().enumerate() {
            let port = XdpPort::open(&umem, name, index == 0, chosen)?;
            chosen = Some(port._program.mode);
            ports.push(port);
        }
        let mode = chosen.unwrap_or(XdpMode::Generic);
        Ok(XdpPorts { ports, buffer_size, mode, _umem: umem })
    }
}

impl XdpPort {
    fn open(umem: &Umem, name: &str, first: bool, mode: Option<XdpMode>) -> io::Result<XdpPort> {
        let c_name = CString::new(name).map_err(|_| io::Error::other("an interface name holds a NUL"))?;
        let mut info = IfInfo::invalid();
        info.from_name(&c_name).map_err(|e| errno(e, &format!("interface {name}")))?;
        let socket = if first { Socket::with_shared(&info, umem) } else { Socket::new(&info) }
            .map_err(|e| errno(e, "creating an AF_XDP socket"))?;
        let device = umem.fq_cq(&socket).map_err(|e| errno(e, &format!("fill and completion rings of {name}")))?;
        let config = SocketConfig {
            rx_size: NonZeroU32::new(XDP_RING_SIZE),
            tx_size: NonZeroU32::new(XDP_RING_SIZE),
            // A socket sharing the UMEM may name no flags: it inherits
            // the first socket's (the kernel refuses them with EINVAL).
            bind_flags: if first { XDP_COPY | XDP_USE_NEED_WAKEUP } else { 0 },
        };
        let user = umem.rx_tx(&socket, &config).map_err(|e| errno(e, &format!("rings of {name}")))?;
        let rx = user.map_rx().map_err(|e| errno(e, "mapping the receive ring"))?;
        let tx = user.map_tx().map_err(|e| errno(e, "mapping the transmit ring"))?;
        bind_when_free(umem, &user, name)?;
        let deadline = std::time::Instant::now() + BIND_BUSY_WAIT;
        let program = loop {
            match XdpProgram::attach(info.ifindex(), mode) {
                // A killed predecessor's link is released asynchronously.
                Err(e) if e.kind() == io::ErrorKind::ResourceBusy && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                other => break other.map_err(|e| context(e, name))?,
            }
        };
        let fd = user.as_raw_fd();
        program.insert(0, fd)?;
        Ok(XdpPort { name: name.to_string(), device, rx, tx, fd, filled: 0, _program: program, _socket: socket })
    }
}

/// How long a bind waits for the queue of a socket that was just closed
/// (a killed predecessor's: the kernel releases it after an RCU grace
/// period, so a supervisor's immediate restart finds it busy).
pub const BIND_BUSY_WAIT: Duration = Duration::from_secs(5);

/// Binds `user` to its interface's queue 0, waiting while it is busy.
fn bind_when_free(umem: &Umem, user: &xdpilone::User, name: &str) -> io::Result<()> {
    let deadline = std::time::Instant::now() + BIND_BUSY_WAIT;
    loop {
        match umem.bind(user) {
            Ok(()) => return Ok(()),
            Err(e) if e.get_raw() == libc::EBUSY && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => {
                return Err(errno(e, &format!("binding an AF_XDP socket to {name} queue 0 (another socket holds it?)")))
            }
        }
    }
}

impl Ports for XdpPorts {
    fn mechanism(&self) -> String {
        format!("AF_XDP copy mode, XDP in {} mode, UMEM = the pool's buffers", self.mode.name())
    }

    fn count(&self) -> usize {
        self.ports.len()
    }

    fn name(&self, port: usize) -> &str {
        &self.ports[port].name
    }

    fn fill_room(&mut self, port: usize) -> usize {
        // The fill ring holds at most the buffers the port holds (`filled`
        // counts those in the fill ring and those received and not yet
        // taken), so it has room for at least the rest: exact enough, and
        // unlike the ring's cached view never stale (`fill` writes through
        // a stale view in rounds).
        XDP_RING_SIZE as usize - self.ports[port].filled
    }

    fn fill(&mut self, port: usize, buffers: &[u32]) {
        let size = u64::from(self.buffer_size);
        let port = &mut self.ports[port];
        let mut written = 0;
        while written < buffers.len() {
            let mut writer = port.device.fill((buffers.len() - written) as u32);
            let round = writer.insert(buffers[written..].iter().map(|&b| u64::from(b) * size)) as usize;
            writer.commit();
            if round == 0 {
                break;
            }
            written += round;
        }
        assert_eq!(written, buffers.len(), "the fill ring had room for what fill_room said");
        port.filled += buffers.len();
        if port.device.needs_wakeup() {
            port.device.wake();
        }
    }

    fn receive(&mut self, port: usize, max: usize, _pool: &Pool, out: &mut Vec<Frame>) {
        let size = u64::from(self.buffer_size);
        let port = &mut self.ports[port];
        let mut taken = 0;
        // In rounds: a round reads what the ring's cached view of the
        // kernel's producer shows, and refreshes that view only once it
        // shows nothing (see `transmit`).
        while taken < max {
            let mut reader = port.rx.receive((max - taken) as u32);
            let mut round = 0;
            while let Some(desc) = reader.read() {
                let buffer = (desc.addr / size) as u32;
                out.push(Frame { buffer, offset: (desc.addr % size) as u32, len: desc.len });
                round += 1;
            }
            reader.release();
            if round == 0 {
                break;
            }
            taken += round;
        }
        port.filled -= taken;
    }

    fn transmit(&mut self, port: usize, frames: &[Frame], _pool: &Pool) -> usize {
        let size = u64::from(self.buffer_size);
        let tx = &mut self.ports[port].tx;
        let mut written = 0;
        // In rounds, until the ring takes no more: xdpilone reserves from
        // its cached view of the kernel's consumer and refreshes that view
        // only when it shows no free slot at all, so one reservation may
        // offer a few slots while the kernel has long freed the ring (at
        // each lap of the ring: issue 35, frames dropped at 15,000/s). A
        // round that gets nothing has refreshed the view: the ring is full.
        while written < frames.len() {
            let descriptors = frames[written..].iter().map(|f| XdpDesc {
                addr: u64::from(f.buffer) * size + u64::from(f.offset),
                len: f.len,
                options: 0,
            });
            let mut writer = tx.transmit((frames.len() - written) as u32);
            let round = writer.insert(descriptors) as usize;
            writer.commit();
            if round == 0 {
                break;
            }
            written += round;
        }
        written
    }

    fn flush_transmit(&mut self, port: usize) {
        let port = &mut self.ports[port];
        // Copy mode transmits only inside sendto, and each call sends at
        // most a budget of descriptors (32): kick while the ring drains.
        let mut pending = port.tx.pending();
        while pending > 0 {
            port.tx.wake();
            let now = port.tx.pending();
            if now >= pending {
                break;
            }
            pending = now;
        }
    }

    fn completed(&mut self, port: usize, out: &mut Vec<u32>) {
        let size = u64::from(self.buffer_size);
        let device = &mut self.ports[port].device;
        // In rounds, as `receive`: reaped late, a completion holds a slot
        // of the switch's transmit budget (`SwitchConfig::tx_max`).
        loop {
            let mut reader = device.complete(XDP_RING_SIZE);
            let mut round = 0;
            while let Some(address) = reader.read() {
                out.push((address / size) as u32);
                round += 1;
            }
            reader.release();
            if round == 0 {
                break;
            }
        }
    }

    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        let mut fds: Vec<libc::pollfd> =
            self.ports.iter().map(|p| libc::pollfd { fd: p.fd, events: libc::POLLIN, revents: 0 }).collect();
        let millis = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfd of the length given.
        let result = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
        if result < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        Ok(())
    }

    fn drops(&self, port: usize) -> PortDrops {
        match self.ports[port].device.statistics_v2() {
            Ok(stats) => PortDrops {
                rx_ring_full: stats.rx_ring_full,
                rx_no_buffer: stats.rx_fill_ring_empty_descs,
                tx_invalid: stats.tx_invalid_descs,
            },
            Err(_) => PortDrops::default(),
        }
    }
}
