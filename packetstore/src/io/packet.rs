//! AF_PACKET sockets: `RawSender` sends whole Ethernet frames on an
//! interface (`packetstore replay`), and `PacketPorts` are the switch's
//! copying fallback where AF_XDP is unavailable: a TPACKET_V3 receive ring
//! per interface, each frame copied from it into a pool buffer (with an
//! 802.1Q tag the kernel took out put back), sent with `sendmmsg`.
//!
//! Invariants: a frame is sent whole or not at all (a short send is an
//! error); a ring block goes back to the kernel only once every frame in it
//! was copied out.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The index of the interface named `name`.
pub fn interface_index(name: &str) -> io::Result<u32> {
    let c_name = CString::new(name).map_err(|_| io::Error::other("an interface name holds a NUL"))?;
    // SAFETY: c_name is NUL-terminated.
    let index = unsafe { libc::if_nametoindex(c_name.as_ptr()) };
    if index == 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("interface {name}: {error}")));
    }
    Ok(index)
}

/// An AF_PACKET raw socket that receives nothing until `bind_packet`
/// names its interface (a socket made with a protocol receives every
/// interface's frames until it is bound).
pub fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("an AF_PACKET socket (needs CAP_NET_RAW): {error}")));
    }
    // SAFETY: fd was just created and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds `fd` to `interface`, receiving frames of EtherType `protocol`
/// (host order; `ETH_P_ALL` for every frame, 0 for none).
pub fn bind_packet(fd: &OwnedFd, interface: &str, protocol: u16) -> io::Result<()> {
    let index = interface_index(interface)?;
    // SAFETY: sockaddr_ll is plain data; all-zero is valid.
    let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    address.sll_family = libc::AF_PACKET as u16;
    address.sll_protocol = protocol.to_be();
    address.sll_ifindex = index as i32;
    // SAFETY: `address` is a valid sockaddr_ll of the length given.
    let bound = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(&address).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if bound != 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("binding to {interface}: {error}")));
    }
    Ok(())
}

/// An AF_PACKET raw socket bound to one interface, receiving nothing.
pub struct RawSender {
    fd: OwnedFd,
}

impl RawSender {
    pub fn open(interface: &str) -> io::Result<RawSender> {
        let fd = packet_socket()?;
        bind_packet(&fd, interface, 0)?;
        Ok(RawSender { fd })
    }

    /// Sends one frame, waiting while the interface's queue is full.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: `frame` is readable for its length.
            let sent = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if sent == frame.len() as isize {
                return Ok(());
            }
            if sent >= 0 {
                return Err(io::Error::other(format!("sent {sent} of {} bytes", frame.len())));
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => {
                    std::thread::sleep(std::time::Duration::from_micros(100))
                }
                _ => return Err(error),
            }
        }
    }
}

/// Bytes of one receive ring block, blocks per ring, and how long the
/// kernel waits before handing over a block that is not full.
const BLOCK_SIZE: u32 = 1 << 20;
const BLOCK_COUNT: u32 = 8;
const BLOCK_TIMEOUT_MS: u32 = 1;
/// Where a copied frame starts in its pool buffer (as with XDP).
pub const PACKET_HEADROOM: u32 = 256;
/// Frames sent per sendmmsg at most.
const SEND_BATCH_MAX: usize = 64;
/// Buffers a port holds for receiving at most.
pub const PACKET_FILL_MAX: usize = 256;

// struct tpacket_block_desc, then struct tpacket_hdr_v1 at offset 8.
const BLOCK_STATUS: usize = 8;
const BLOCK_NUM_PKTS: usize = 12;
const BLOCK_FIRST: usize = 16;
// struct tpacket3_hdr.
const HDR_NEXT: usize = 0;
const HDR_SNAPLEN: usize = 12;
const HDR_STATUS: usize = 20;
const HDR_MAC: usize = 24;
const HDR_VLAN_TCI: usize = 32;
const HDR_VLAN_TPID: usize = 36;

/// Sends one frame per iovec with one `sendmmsg`; returns how many were
/// sent, or -1 (errno set).
///
/// # Safety
/// Every iovec must cover readable bytes for the call's duration.
pub unsafe fn send_frames(fd: std::os::fd::RawFd, iovecs: &mut [libc::iovec], flags: libc::c_int) -> isize {
    let mut messages: Vec<libc::mmsghdr> = iovecs
        .iter_mut()
        .map(|iov| {
            // SAFETY: mmsghdr is plain data; all-zero is valid.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: each message points at one iovec, readable (the caller's
    // promise) for the call's duration.
    unsafe { libc::sendmmsg(fd, messages.as_mut_ptr(), messages.len() as u32, flags) as isize }
}

/// One AF_PACKET port: its socket, its TPACKET_V3 receive ring, where the
/// reader is in it, and the buffers it was filled with.
struct PacketPort {
    name: String,
    fd: OwnedFd,
    ring: *mut u8,
    /// The block being read, the frame in it, and that frame's offset.
    block: u32,
    frame: u32,
    offset: usize,
    filled: Vec<u32>,
    /// Buffers sent (the kernel copied them): complete at once.
    sent: Vec<u32>,
    no_buffer: u64,
    /// Frames the kernel refused to send (not for a full queue).
    refused: u64,
}

// SAFETY: the ring mapping belongs to this port alone; the switch uses its
// ports from one thread at a time.
unsafe impl Send for PacketPort {}

/// The switch's ports over AF_PACKET: frames are copied out of the kernel's
/// receive ring into pool buffers, and sent with a copy (`sendmmsg`).
pub struct PacketPorts {
    ports: Vec<PacketPort>,
    buffer_size: u32,
    /// One frame out of the ring, its VLAN tag put back.
    scratch: Vec<u8>,
}

fn set_option<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, value: &T, what: &str) -> io::Result<()> {
    // SAFETY: `value` is a valid T for the option's length.
    let result = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            std::ptr::from_ref(value).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if result != 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("{what}: {error}")));
    }
    Ok(())
}

impl PacketPort {
    fn open(name: &str) -> io::Result<PacketPort> {
        // Bound last, once the ring exists: unbound, it receives nothing
        // (bound with ETH_P_ALL at creation, it would receive every
        // interface's frames and switch them as this port's).
        let fd = packet_socket()?;
        set_option(
            &fd,
            libc::SOL_PACKET,
            libc::PACKET_VERSION,
            &(libc::tpacket_versions::TPACKET_V3 as libc::c_int),
            "TPACKET_V3",
        )?;
        // Frames this socket sends are not received back.
        set_option(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int, "PACKET_IGNORE_OUTGOING")?;
        set_option(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int, "PACKET_QDISC_BYPASS")?;
        let request = libc::tpacket_req3 {
            tp_block_size: BLOCK_SIZE,
            tp_block_nr: BLOCK_COUNT,
            tp_frame_size: 2048,
            tp_frame_nr: BLOCK_SIZE / 2048 * BLOCK_COUNT,
            tp_retire_blk_tov: BLOCK_TIMEOUT_MS,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        set_option(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &request, "the TPACKET_V3 receive ring")?;
        let len = (BLOCK_SIZE * BLOCK_COUNT) as usize;
        // SAFETY: maps the ring the kernel just made for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let port = PacketPort {
            name: name.to_string(),
            fd,
            ring: ring.cast(),
            block: 0,
            frame: 0,
            offset: 0,
            filled: Vec::new(),
            sent: Vec::new(),
            no_buffer: 0,
            refused: 0,
        };
        // On an error the port's drop unmaps the ring.
        bind_packet(&port.fd, name, libc::ETH_P_ALL as u16)?;
        Ok(port)
    }

    fn block_at(&self) -> *mut u8 {
        // SAFETY: block < BLOCK_COUNT: inside the ring.
        unsafe { self.ring.add((self.block * BLOCK_SIZE) as usize) }
    }

    fn status(&self) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: the block header's status word is aligned and shared
        // with the kernel, which is why it is read atomically.
        unsafe { &*self.block_at().add(BLOCK_STATUS).cast::<std::sync::atomic::AtomicU32>() }
    }

    fn read_u32(&self, at: usize) -> u32 {
        // SAFETY: `at` is inside the current block (offsets the kernel wrote).
        unsafe { std::ptr::read_unaligned(self.block_at().add(at).cast::<u32>()) }
    }

    fn read_u16(&self, at: usize) -> u16 {
        // SAFETY: as `read_u32`.
        unsafe { std::ptr::read_unaligned(self.block_at().add(at).cast::<u16>()) }
    }

    /// The next frame of the ring: (its bytes with any VLAN tag put back);
    /// None when the kernel has not handed over the next block.
    fn next_frame(&mut self, scratch: &mut Vec<u8>) -> bool {
        use std::sync::atomic::Ordering;
        loop {
            if self.status().load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return false;
            }
            let count = self.read_u32(BLOCK_NUM_PKTS);
            if self.frame == count {
                self.status().store(libc::TP_STATUS_KERNEL, Ordering::Release);
                self.block = (self.block + 1) % BLOCK_COUNT;
                self.frame = 0;
                continue;
            }
            if self.frame == 0 {
                self.offset = self.read_u32(BLOCK_FIRST) as usize;
            }
            let at = self.offset;
            let snaplen = self.read_u32(at + HDR_SNAPLEN) as usize;
            let status = self.read_u32(at + HDR_STATUS);
            let mac = at + usize::from(self.read_u16(at + HDR_MAC));
            // SAFETY: the kernel wrote `snaplen` bytes at `mac`, inside the block.
            let bytes = unsafe { std::slice::from_raw_parts(self.block_at().add(mac), snaplen) };
            scratch.clear();
            if status & libc::TP_STATUS_VLAN_VALID != 0 && bytes.len() >= 12 {
                // The kernel took the 802.1Q tag out of the frame: put it back.
                let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                    self.read_u16(at + HDR_VLAN_TPID)
                } else {
                    0x8100
                };
                let tci = self.read_u32(at + HDR_VLAN_TCI) as u16;
                scratch.extend_from_slice(&bytes[..12]);
                scratch.extend_from_slice(&tpid.to_be_bytes());
                scratch.extend_from_slice(&tci.to_be_bytes());
                scratch.extend_from_slice(&bytes[12..]);
            } else {
                scratch.extend_from_slice(bytes);
            }
            self.offset = at + self.read_u32(at + HDR_NEXT) as usize;
            self.frame += 1;
            return true;
        }
    }
}

impl Drop for PacketPort {
    fn drop(&mut self) {
        // SAFETY: unmaps the ring mapped in `open`, used by nothing after.
        unsafe { libc::munmap(self.ring.cast(), (BLOCK_SIZE * BLOCK_COUNT) as usize) };
    }
}

impl PacketPorts {
    pub fn open(names: &[String], buffer_size: u32) -> io::Result<PacketPorts> {
        let ports = names.iter().map(|name| PacketPort::open(name)).collect::<io::Result<Vec<_>>>()?;
        Ok(PacketPorts { ports, buffer_size, scratch: Vec::with_capacity(1 << 16) })
    }
}

impl crate::io::ports::Ports for PacketPorts {
    fn mechanism(&self) -> String {
        "AF_PACKET TPACKET_V3, COPYING (the fallback: each frame is copied into the pool)".into()
    }

    fn count(&self) -> usize {
        self.ports.len()
    }

    fn name(&self, port: usize) -> &str {
        &self.ports[port].name
    }

    fn fill_room(&mut self, port: usize) -> usize {
        PACKET_FILL_MAX.saturating_sub(self.ports[port].filled.len())
    }

    fn fill(&mut self, port: usize, buffers: &[u32]) {
        self.ports[port].filled.extend_from_slice(buffers);
    }

    fn receive(
        &mut self,
        port: usize,
        max: usize,
        pool: &crate::pool::file::Pool,
        out: &mut Vec<crate::io::ports::Frame>,
    ) {
        let limit = (self.buffer_size - PACKET_HEADROOM) as usize;
        let port = &mut self.ports[port];
        let scratch = &mut self.scratch;
        let mut taken = 0;
        while taken < max && port.next_frame(scratch) {
            let Some(buffer) = port.filled.pop() else {
                port.no_buffer += 1;
                continue;
            };
            let stored = scratch.len().min(limit);
            pool.write(pool.buffer_offset(buffer) + u64::from(PACKET_HEADROOM), &scratch[..stored]);
            // A frame too long for the buffer keeps its true length: the
            // switch drops it.
            out.push(crate::io::ports::Frame { buffer, offset: PACKET_HEADROOM, len: scratch.len() as u32 });
            taken += 1;
        }
    }

    fn transmit(&mut self, port: usize, frames: &[crate::io::ports::Frame], pool: &crate::pool::file::Pool) -> usize {
        let port = &mut self.ports[port];
        let mut taken = 0;
        while taken < frames.len() {
            let chunk = &frames[taken..frames.len().min(taken + SEND_BATCH_MAX)];
            let mut iovecs: Vec<libc::iovec> = chunk
                .iter()
                .map(|f| libc::iovec {
                    iov_base: pool.address(pool.buffer_offset(f.buffer) + u64::from(f.offset)).cast(),
                    iov_len: f.len as usize,
                })
                .collect();
            // SAFETY: every iovec covers pool bytes of a frame whose buffer
            // the caller holds for the call's duration.
            let result = unsafe { send_frames(port.fd.as_raw_fd(), &mut iovecs, libc::MSG_DONTWAIT) };
            if result < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    // The socket's queue is full: the switch holds the rest
                    // and offers it again (back-pressure).
                    Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) => break,
                    // Refused outright (too long for the link, the link
                    // down): the frame is taken and counted, never offered
                    // again, so that it cannot hold the port's other frames.
                    _ => {
                        port.refused += 1;
                        port.sent.push(chunk[0].buffer);
                        taken += 1;
                        continue;
                    }
                }
            }
            let sent = result as usize;
            port.sent.extend(chunk[..sent].iter().map(|f| f.buffer));
            taken += sent;
            if sent < chunk.len() {
                break;
            }
        }
        taken
    }

    fn flush_transmit(&mut self, _port: usize) {}

    fn completed(&mut self, port: usize, out: &mut Vec<u32>) {
        out.append(&mut self.ports[port].sent);
    }

    fn wait(&mut self, timeout: std::time::Duration) -> io::Result<()> {
        let mut fds: Vec<libc::pollfd> = self
            .ports
            .iter()
            .map(|p| libc::pollfd { fd: p.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        let millis = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of pollfd of the length given.
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) } < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
        Ok(())
    }

    fn drops(&self, port: usize) -> crate::io::ports::PortDrops {
        let port = &self.ports[port];
        crate::io::ports::PortDrops { rx_no_buffer: port.no_buffer, tx_invalid: port.refused, ..Default::default() }
    }
}
