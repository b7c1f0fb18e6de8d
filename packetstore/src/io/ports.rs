//! A switch's ports as the switch sees them: receive into pool buffers the
//! switch gave them, transmit frames that are in pool buffers, and report
//! which transmissions completed. Implemented by AF_XDP (`xdp`, the pool is
//! the UMEM: a frame is received where it stays), AF_PACKET (`packet`, a
//! copying fallback) and an in-memory model for tests (`MemoryPorts`).
//!
//! Invariant (every implementation): a buffer handed to `fill` or
//! `transmit` belongs to the ports until it comes back, once, from
//! `receive` (as a frame) or `completed`; the ports never touch a buffer
//! they do not hold.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use crate::pool::file::Pool;

/// A frame in a pool buffer: its bytes are `len` bytes at `offset` in
/// buffer `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub buffer: u32,
    pub offset: u32,
    pub len: u32,
}

/// Drops a port's kernel side reported (not the switch's own counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortDrops {
    /// Frames the kernel dropped because the receive ring was full.
    pub rx_ring_full: u64,
    /// Frames the kernel dropped because no filled buffer was ready.
    pub rx_no_buffer: u64,
    /// Frames the kernel could not transmit: invalid descriptors (AF_XDP),
    /// frames refused by the send call other than for a full queue
    /// (AF_PACKET).
    pub tx_invalid: u64,
}

/// The switch's view of its ports.
pub trait Ports {
    /// How the ports move frames, for the start-up line and /metrics
    /// ("AF_XDP copy mode", "AF_PACKET TPACKET_V3, copying").
    fn mechanism(&self) -> String;
    fn count(&self) -> usize;
    fn name(&self, port: usize) -> &str;
    /// How many more buffers port `port` can take for receiving.
    fn fill_room(&mut self, port: usize) -> usize;
    /// Gives `buffers` (at most `fill_room`) to port `port` to receive into.
    fn fill(&mut self, port: usize, buffers: &[u32]);
    /// Appends at most `max` received frames of port `port` to `out`
    /// (ports that copy write them into `pool`'s buffers).
    fn receive(&mut self, port: usize, max: usize, pool: &Pool, out: &mut Vec<Frame>);
    /// Queues `frames` (in `pool`'s buffers) for transmission on port
    /// `port`; returns how many (a prefix) were taken. The rest stay the
    /// caller's: fewer are taken only when the port's ring or queue is
    /// full, and the caller offers them again later (back-pressure).
    fn transmit(&mut self, port: usize, frames: &[Frame], pool: &Pool) -> usize;
    /// Starts the transmissions queued (one system call per port at most).
    fn flush_transmit(&mut self, port: usize);
    /// Appends the buffers whose transmission on port `port` completed.
    fn completed(&mut self, port: usize, out: &mut Vec<u32>);
    /// Waits until a port has received something, or `timeout`.
    fn wait(&mut self, timeout: Duration) -> io::Result<()>;
    fn drops(&self, port: usize) -> PortDrops;
}

/// Ports in memory, for tests and the crash simulator: a test puts frames
/// on a port's wire (`inject`), the port receives them into buffers it was
/// filled with (copying, like a NIC's DMA), and transmitted frames are
/// captured (`sent`) and complete at once. A port's transmit ring may be
/// made to take only a few frames per call (`limit_transmit`), as a ring
/// that a slower link drains.
pub struct MemoryPorts {
    names: Vec<String>,
    buffer_size: u32,
    ports: Vec<MemoryPort>,
    /// Whether transmitted frames are kept for `take_sent` (benchmarks
    /// only count them).
    capture: bool,
}

#[derive(Default)]
struct MemoryPort {
    filled: VecDeque<u32>,
    wire_in: VecDeque<Vec<u8>>,
    received: VecDeque<Frame>,
    completed: Vec<u32>,
    sent: Vec<Vec<u8>>,
    sent_count: u64,
    no_buffer: u64,
    /// Frames one `transmit` call takes at most (None: every frame).
    transmit_limit: Option<usize>,
}

/// Bytes the memory ports leave before a received frame (as XDP does).
pub const MEMORY_HEADROOM: u32 = 256;
/// Buffers a memory port holds for receiving at most.
pub const MEMORY_FILL_SIZE: usize = 64;

impl MemoryPorts {
    /// Ports named `names` over a pool of `buffer_size`-byte buffers.
    pub fn new(names: &[&str], buffer_size: u32) -> MemoryPorts {
        MemoryPorts {
            names: names.iter().map(|n| n.to_string()).collect(),
            buffer_size,
            ports: names.iter().map(|_| MemoryPort::default()).collect(),
            capture: true,
        }
    }

    /// Transmitted frames are counted, not kept (`take_sent` is empty).
    pub fn discard_sent(&mut self) {
        self.capture = false;
    }

    /// Frames transmitted on port `port` since the start.
    pub fn sent_count(&self, port: usize) -> u64 {
        self.ports[port].sent_count
    }

    /// Puts `frame` on port `port`'s wire; it is received at the next
    /// `receive` if a buffer is filled, else dropped (counted).
    pub fn inject(&mut self, port: usize, frame: &[u8]) {
        assert!(frame.len() as u32 + MEMORY_HEADROOM <= self.buffer_size, "frame fits a buffer");
        self.ports[port].wire_in.push_back(frame.to_vec());
    }

    /// Port `port`'s transmit ring takes at most `limit` frames per call
    /// from now on (`Some(0)`: none, a dead link); `None` lifts the limit.
    pub fn limit_transmit(&mut self, port: usize, limit: Option<usize>) {
        self.ports[port].transmit_limit = limit;
    }

    /// The frames transmitted on port `port` so far, oldest first.
    pub fn take_sent(&mut self, port: usize) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.ports[port].sent)
    }

    /// Buffers the ports hold (filled, or received and not yet taken).
    pub fn held(&self) -> Vec<u32> {
        self.ports.iter().flat_map(|p| p.filled.iter().copied().chain(p.received.iter().map(|f| f.buffer))).collect()
    }

    fn land(&mut self, port: usize, pool: &Pool) {
        while let Some(bytes) = self.ports[port].wire_in.pop_front() {
            let Some(buffer) = self.ports[port].filled.pop_front() else {
                self.ports[port].no_buffer += 1;
                continue;
            };
            pool.write(pool.buffer_offset(buffer) + u64::from(MEMORY_HEADROOM), &bytes);
            let frame = Frame { buffer, offset: MEMORY_HEADROOM, len: bytes.len() as u32 };
            self.ports[port].received.push_back(frame);
        }
    }
}

impl Ports for MemoryPorts {
    fn mechanism(&self) -> String {
        "memory (test)".into()
    }

    fn count(&self) -> usize {
        self.ports.len()
    }

    fn name(&self, port: usize) -> &str {
        &self.names[port]
    }

    fn fill_room(&mut self, port: usize) -> usize {
        MEMORY_FILL_SIZE - self.ports[port].filled.len()
    }

    fn fill(&mut self, port: usize, buffers: &[u32]) {
        assert!(buffers.len() <= self.fill_room(port), "filled past the room");
        self.ports[port].filled.extend(buffers);
    }

    fn receive(&mut self, port: usize, max: usize, pool: &Pool, out: &mut Vec<Frame>) {
        self.land(port, pool);
        let received = &mut self.ports[port].received;
        let n = max.min(received.len());
        out.extend(received.drain(..n));
    }

    fn transmit(&mut self, port: usize, frames: &[Frame], pool: &Pool) -> usize {
        let frames = &frames[..frames.len().min(self.ports[port].transmit_limit.unwrap_or(usize::MAX))];
        for frame in frames {
            if self.capture {
                let mut bytes = vec![0u8; frame.len as usize];
                pool.read(pool.buffer_offset(frame.buffer) + u64::from(frame.offset), &mut bytes);
                self.ports[port].sent.push(bytes);
            }
            self.ports[port].sent_count += 1;
            self.ports[port].completed.push(frame.buffer);
        }
        frames.len()
    }

    fn flush_transmit(&mut self, _port: usize) {}

    fn completed(&mut self, port: usize, out: &mut Vec<u32>) {
        out.append(&mut self.ports[port].completed);
    }

    fn wait(&mut self, _timeout: Duration) -> io::Result<()> {
        Ok(())
    }

    fn drops(&self, port: usize) -> PortDrops {
        PortDrops { rx_no_buffer: self.ports[port].no_buffer, ..PortDrops::default() }
    }
}
