//! The packet-logging switch (issue 22; PASTE section 5.2, mSwitch with a
//! logging action): a learning bridge whose packet memory is the pool's
//! buffers, which logs a frame where it was received by keeping its buffer
//! out of the receive side (a fresh buffer takes its place) and naming it
//! in a log record; the frame is still forwarded. `docs/switch.md` draws
//! the buffer life cycle; in short, per batch (`Switch::step`):
//!
//! 1. completions: a buffer whose transmission completed loses that reference;
//!    then the frames a port's transmit ring could not take in an earlier
//!    batch (its backlog) are offered again; while any port has a backlog,
//!    the batch ends here: receive is held (back-pressure), not dropped;
//! 2. receive: frames land in buffers the ports were filled with;
//! 3. decide: the bridge learns and picks egress ports, the policy picks
//!    frames to log; a logged frame's record is appended (swap: naming the
//!    frame in place; copy: naming a copy), which flushes frame and record;
//! 4. retention: the oldest records past the size or age limit are released;
//! 5. commit: one fence for the whole batch (records, releases, anchor);
//! 6. transmit: each egress port takes a reference and queues the frame
//!    (what its ring does not take waits in its backlog, in order); only
//!    now, so a frame leaves the switch only once its record is durable;
//! 7. the receive reference is dropped: an unlogged frame's buffer is free
//!    once its transmissions complete; a logged one's once, in addition, its
//!    record is released by retention and that release committed;
//! 8. refill: fresh buffers go to each port's receive side.
//!
//! Invariants: every buffer's reference count equals the number of holders
//! among {a port's receive side, a transmission in flight or in a port's
//! backlog, a live record},
//! checked by `check_accounting`; a frame is transmitted only after the
//! fence that made its record durable; the log is a prefix of what was
//! received in order (per batch, frames in port order, then ring order);
//! a port sends frames in the order they were queued for it; a frame is
//! dropped for a full transmit ring only on a port that took nothing for
//! `SwitchConfig::tx_hold_ns` (a stalled port: its link down), never
//! because the switch outran a port that is sending.

pub mod bridge;
pub mod pcap;
pub mod policy;
pub mod record;

use std::collections::VecDeque;

use crate::error::{BufferError, LogError};
use crate::io::ports::{Frame, Ports};
use crate::log::ring::Log;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use bridge::{Bridge, Egress};
use policy::Policy;
use record::{FrameKey, FRAME_SIZE_MAX, HOW_COPY, HOW_SWAP, KIND_FRAME};

/// Frames received per port per batch at most.
pub const RX_BATCH_MAX: usize = 64;
/// Buffers kept in each port's receive side (by default).
pub const FILL_TARGET: usize = 1024;
/// Transmissions in flight per port at most (by default: the AF_XDP
/// transmit ring's size).
pub const TX_IN_FLIGHT_MAX: usize = 2048;
/// Ports a switch has at most.
pub const PORTS_MAX: usize = 16;
/// How long receive is held for a port whose transmit ring takes nothing
/// (by default): past it the port counts as stalled (its link down, say)
/// and its frames are dropped until its ring moves again, so that one dead
/// port cannot stop the switch. A ring of 2,048 frames drains in 25 ms at
/// 1 Gb/s with full-size frames; veth drains it in about a millisecond.
pub const TX_HOLD_DEFAULT_NS: u64 = 100_000_000;
/// Bytes of a frame's headers the bridge and the policy read.
const HEADER_PEEK: usize = 128;

/// How the switch logs the frames its policy picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogMode {
    /// Forward only.
    Off,
    /// Log in place: the receive buffer becomes the log's (PASTE).
    Swap,
    /// Copy into a fresh pool buffer and log that (the paper's baseline).
    Copy,
}

impl LogMode {
    pub fn parse(text: &str) -> Option<LogMode> {
        match text {
            "off" | "none" => Some(LogMode::Off),
            "swap" => Some(LogMode::Swap),
            "copy" => Some(LogMode::Copy),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LogMode::Off => "off",
            LogMode::Swap => "swap",
            LogMode::Copy => "copy",
        }
    }
}

/// How much of the log is kept: the oldest records beyond either limit are
/// released while the switch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Pool bytes logged frames may hold (whole buffers).
    pub max_bytes: u64,
    pub max_age_ns: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct SwitchConfig {
    pub mode: LogMode,
    pub policy: Policy,
    pub retention: Retention,
    pub ageing_ns: u64,
    /// Buffers kept in each port's receive side.
    pub fill_target: usize,
    /// Transmissions in flight per port at most.
    pub tx_max: usize,
    /// How long receive is held for a port whose ring takes nothing
    /// before that port counts as stalled (its frames then dropped).
    pub tx_hold_ns: u64,
}

impl SwitchConfig {
    /// Logging `mode` with `policy`, keeping what the pool holds, the
    /// default ageing time, and rings of the AF_XDP sizes.
    pub fn new(mode: LogMode, policy: Policy) -> SwitchConfig {
        SwitchConfig {
            mode,
            policy,
            retention: Retention { max_bytes: u64::MAX, max_age_ns: None },
            ageing_ns: bridge::AGEING_DEFAULT_NS,
            fill_target: FILL_TARGET,
            tx_max: TX_IN_FLIGHT_MAX,
            tx_hold_ns: TX_HOLD_DEFAULT_NS,
        }
    }
}

/// Counters of one port (`/metrics`: `packetstore_switch_*{port=...}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    pub logged_frames: u64,
    pub logged_bytes: u64,
    /// Frames received on this port that were flooded.
    pub flooded: u64,
    /// Frames received on this port whose destination is on this port.
    pub filtered: u64,
    /// Frames not sent on this port because its transmit ring took nothing
    /// for `tx_hold_ns` (the port stalled).
    pub tx_dropped: u64,
    /// Frames received on this port and dropped: too long, or their record
    /// found no room.
    pub rx_dropped: u64,
}

/// Counters of the whole switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchCounters {
    pub batches: u64,
    pub fences: u64,
    /// Records released by retention.
    pub retention_released: u64,
    /// Times a port's receive side could not be refilled: the pool was out
    /// of free buffers.
    pub fill_starved: u64,
    /// Batches whose receive was held because a port's transmit ring was
    /// full (back-pressure).
    pub rx_held: u64,
    /// Times a port was found stalled (its ring took nothing for
    /// `tx_hold_ns`) and its backlog dropped.
    pub tx_stalls: u64,
}

/// A live record: what retention needs to know of it.
#[derive(Clone, Copy, Debug)]
struct Live {
    lsn: u64,
    received_ns: u64,
}

/// What to do with one received frame in this batch.
struct Decision {
    port: usize,
    frame: Frame,
    egress: Egress,
    /// The policy picked it.
    log: bool,
}

/// Errors of the switch's engine.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("the packet log: {0}")]
    Log(#[from] LogError),
    #[error("the switch's buffers: {0}")]
    Buffers(#[from] BufferError),
    #[error("{0}")]
    Config(String),
}

/// The switch: the pool (packet memory and log), the bridge and counters.
pub struct Switch {
    pool: Pool,
    log: Log,
    buffers: Buffers,
    bridge: Bridge,
    config: SwitchConfig,
    names: Vec<String>,
    port_counters: Vec<PortCounters>,
    counters: SwitchCounters,
    live: VecDeque<Live>,
    /// Buffers in each port's receive side.
    in_fill: Vec<usize>,
    /// Transmissions in flight on each port.
    in_tx: Vec<usize>,
    /// Each port's frames its transmit ring has not taken yet, in order;
    /// each holds a reference.
    backlog: Vec<VecDeque<Frame>>,
    /// When each port's backlog last moved (or began), by `step`'s clock.
    backlog_since_ns: Vec<u64>,
    /// Ports found stalled: their frames are dropped, not held, until
    /// their ring takes frames again.
    stalled: Vec<bool>,
    /// Records the log keeps at most (by its ring's size, less two
    /// batches), and buffers logged frames keep at most.
    max_records: usize,
    max_logged_buffers: usize,
    scratch: Scratch,
}

#[derive(Default)]
struct Scratch {
    frames: Vec<Frame>,
    decisions: Vec<Decision>,
    done: Vec<u32>,
    fresh: Vec<u32>,
    /// The copy baseline's bounce buffer (one frame).
    copy: Vec<u8>,
}

impl Switch {
    /// The switch over `pool` (a switch pool, recovered here) for the ports
    /// named `names`.
    pub fn new(pool: Pool, names: Vec<String>, config: SwitchConfig) -> Result<Switch, SwitchError> {
        if names.is_empty() || names.len() > PORTS_MAX {
            return Err(SwitchError::Config(format!("a switch has 1 to {PORTS_MAX} ports, not {}", names.len())));
        }
        let geometry = pool.geometry();
        if geometry.buffer_size < FRAME_SIZE_MAX + crate::io::xdp::XDP_HEADROOM {
            return Err(SwitchError::Config(format!(
                "buffers of {} bytes cannot hold a {FRAME_SIZE_MAX}-byte frame after the {}-byte headroom",
                geometry.buffer_size,
                crate::io::xdp::XDP_HEADROOM
            )));
        }
        let mut buffers = Buffers::new(geometry.buffer_count);
        let (log, _report) = Log::recover(&pool, &mut buffers)?;
        let live = log
            .live_lsns()
            .map(|lsn| log.view(&pool, lsn).map(|view| Live { lsn, received_ns: view.tag }))
            .collect::<Result<VecDeque<_>, _>>()?;
        let record_len = crate::log::record::record_len(1, record::KEY_LEN) as u64;
        let batch_records = (RX_BATCH_MAX * names.len()) as u64;
        let ring_records = (log.usage().ring_size / record_len).saturating_sub(2 * batch_records + 2);
        let port_reserve = names.len() * (config.fill_target + config.tx_max + 2 * RX_BATCH_MAX);
        let pool_room = (geometry.buffer_count as usize).saturating_sub(port_reserve);
        let wanted = (config.retention.max_bytes / u64::from(geometry.buffer_size)) as usize;
        let max_logged_buffers = wanted.min(pool_room);
        // Retention must keep at least a batch: else it would release
        // records of the batch that appended them, under the same fence.
        let batch = RX_BATCH_MAX * names.len();
        if config.mode != LogMode::Off && (max_logged_buffers < batch || (ring_records as usize) < batch) {
            return Err(SwitchError::Config(format!(
                "the log would keep fewer than one batch of frames ({batch}): {max_logged_buffers} buffers (the \
                 pool's {} less {port_reserve} for the ports' rings, or --retain-size) and {ring_records} records \
                 (the log's size); raise --pool-size, --retain-size or --log-size",
                geometry.buffer_count
            )));
        }
        let ports = names.len();
        Ok(Switch {
            pool,
            log,
            buffers,
            bridge: Bridge::new(config.ageing_ns),
            config,
            port_counters: vec![PortCounters::default(); ports],
            names,
            counters: SwitchCounters::default(),
            live,
            in_fill: vec![0; ports],
            in_tx: vec![0; ports],
            backlog: vec![VecDeque::new(); ports],
            backlog_since_ns: vec![0; ports],
            stalled: vec![false; ports],
            max_records: ring_records as usize,
            max_logged_buffers,
            scratch: Scratch { copy: vec![0; FRAME_SIZE_MAX as usize], ..Scratch::default() },
        })
    }

    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn port_counters(&self) -> &[PortCounters] {
        &self.port_counters
    }

    pub fn counters(&self) -> SwitchCounters {
        self.counters
    }

    pub fn live_records(&self) -> usize {
        self.live.len()
    }

    pub fn bridge(&self) -> &Bridge {
        &self.bridge
    }

    pub fn free_buffers(&self) -> u32 {
        self.buffers.free_count()
    }

    /// Records kept at most, and buffers logged frames keep at most.
    pub fn limits(&self) -> (usize, usize) {
        (self.max_records, self.max_logged_buffers)
    }

    /// Fills every port's receive side (before the first step).
    pub fn start(&mut self, ports: &mut dyn Ports) {
        assert_eq!(ports.count(), self.names.len(), "one port per name");
        self.refill(ports);
    }

    /// One batch (steps 1 to 8 of the module's comment) at time `now_ns`.
    /// Returns the number of frames received (none while receive is held:
    /// see `holding`).
    pub fn step(&mut self, ports: &mut dyn Ports, now_ns: u64) -> Result<usize, SwitchError> {
        self.complete(ports)?;
        self.offer_backlogs(ports, now_ns)?;
        if self.holding() {
            self.counters.rx_held += 1;
            return Ok(0);
        }
        self.receive(ports);
        let received = self.scratch.decisions.len();
        self.log_frames(now_ns)?;
        self.retain(now_ns)?;
        // Nothing appended or released: no fence.
        if self.log.commit(&self.pool, &mut self.buffers)?.fenced {
            self.counters.fences += 1;
        }
        self.transmit(ports, now_ns)?;
        self.refill(ports);
        if received > 0 {
            self.counters.batches += 1;
        }
        Ok(received)
    }

    /// Step 1.
    fn complete(&mut self, ports: &mut dyn Ports) -> Result<(), SwitchError> {
        for port in 0..self.names.len() {
            self.scratch.done.clear();
            ports.completed(port, &mut self.scratch.done);
            self.in_tx[port] -= self.scratch.done.len();
            for &buffer in &self.scratch.done {
                self.buffers.release(buffer)?;
            }
        }
        Ok(())
    }

    /// Whether receive is held: a port's transmit ring has not taken every
    /// frame queued for it. The caller should step again soon rather than
    /// wait for received frames (the ports' completions free the rings).
    pub fn holding(&self) -> bool {
        self.backlog.iter().any(|b| !b.is_empty())
    }

    /// Frames waiting in the ports' backlogs.
    pub fn backlog_frames(&self) -> usize {
        self.backlog.iter().map(VecDeque::len).sum()
    }

    /// The rest of step 1: offers each port's backlog to its ring again; a
    /// port whose backlog has not moved for `tx_hold_ns` is stalled: its
    /// backlog is dropped.
    fn offer_backlogs(&mut self, ports: &mut dyn Ports, now_ns: u64) -> Result<(), SwitchError> {
        for port in 0..self.names.len() {
            if self.backlog[port].is_empty() {
                // Kicked: frames an earlier batch queued may still wait in
                // the ring (copy mode sends only when kicked).
                ports.flush_transmit(port);
                continue;
            }
            if self.offer(ports, port)? > 0 {
                self.backlog_since_ns[port] = now_ns;
            } else if now_ns.saturating_sub(self.backlog_since_ns[port]) > self.config.tx_hold_ns {
                self.stalled[port] = true;
                self.counters.tx_stalls += 1;
                self.drop_backlog(port)?;
            }
        }
        Ok(())
    }

    /// Offers port `port`'s backlog to its ring (at most `tx_max` in
    /// flight) and kicks it; returns how many frames the ring took. A port
    /// that takes a frame is no longer stalled.
    fn offer(&mut self, ports: &mut dyn Ports, port: usize) -> Result<usize, SwitchError> {
        let room = self.config.tx_max - self.in_tx[port];
        let backlog = self.backlog[port].make_contiguous();
        let offered = &backlog[..backlog.len().min(room)];
        let taken = ports.transmit(port, offered, &self.pool);
        let counters = &mut self.port_counters[port];
        counters.tx_frames += taken as u64;
        counters.tx_bytes += offered[..taken].iter().map(|f| u64::from(f.len)).sum::<u64>();
        self.backlog[port].drain(..taken);
        self.in_tx[port] += taken;
        // Every port with a backlog, every batch: a kick sends a budget of
        // frames, and what an earlier batch queued may still wait.
        ports.flush_transmit(port);
        if taken > 0 {
            self.stalled[port] = false;
        }
        Ok(taken)
    }

    /// Drops port `port`'s backlog (the port stalled), releasing the
    /// references its frames held.
    fn drop_backlog(&mut self, port: usize) -> Result<(), SwitchError> {
        self.port_counters[port].tx_dropped += self.backlog[port].len() as u64;
        while let Some(frame) = self.backlog[port].pop_front() {
            self.buffers.release(frame.buffer)?;
        }
        Ok(())
    }

    /// Step 2, and the bridge's part of step 3.
    fn receive(&mut self, ports: &mut dyn Ports) {
        self.scratch.decisions.clear();
        let buffer_size = self.pool.geometry().buffer_size;
        let now_ns = crate::pool::file::unix_ns();
        for port in 0..self.names.len() {
            self.scratch.frames.clear();
            ports.receive(port, RX_BATCH_MAX, &self.pool, &mut self.scratch.frames);
            self.in_fill[port] -= self.scratch.frames.len();
            for index in 0..self.scratch.frames.len() {
                let frame = self.scratch.frames[index];
                let whole = self.pool.buffer_offset(frame.buffer);
                self.pool.reclaim(whole, u64::from(buffer_size));
                let counters = &mut self.port_counters[port];
                counters.rx_frames += 1;
                counters.rx_bytes += u64::from(frame.len);
                let bad = frame.len == 0 || frame.len > FRAME_SIZE_MAX || frame.offset + frame.len > buffer_size;
                let (egress, log) = if bad {
                    counters.rx_dropped += 1;
                    (Egress::Filter, false)
                } else {
                    let (header, len) = self.peek(frame);
                    let egress = self.bridge.forward(&header[..len], port, now_ns);
                    self.count_egress(port, egress);
                    let log =
                        self.config.mode != LogMode::Off && self.config.policy.logs(&header[..len], &self.names[port]);
                    (egress, log)
                };
                self.scratch.decisions.push(Decision { port, frame, egress, log });
            }
        }
    }

    fn count_egress(&mut self, port: usize, egress: Egress) {
        match egress {
            Egress::Flood => self.port_counters[port].flooded += 1,
            Egress::Filter => self.port_counters[port].filtered += 1,
            Egress::Port(_) => {}
        }
    }

    /// The first bytes of a frame (up to `HEADER_PEEK`), and how many.
    fn peek(&self, frame: Frame) -> ([u8; HEADER_PEEK], usize) {
        let mut header = [0u8; HEADER_PEEK];
        let len = (frame.len as usize).min(HEADER_PEEK);
        self.pool.read(self.pool.buffer_offset(frame.buffer) + u64::from(frame.offset), &mut header[..len]);
        (header, len)
    }

    /// The policy's part of step 3: appends the records.
    fn log_frames(&mut self, now_ns: u64) -> Result<(), SwitchError> {
        if self.config.mode == LogMode::Off {
            return Ok(());
        }
        for index in 0..self.scratch.decisions.len() {
            let Decision { port, frame, egress, log } = self.scratch.decisions[index];
            if !log {
                continue;
            }
            if self.live.len() >= self.max_records || self.logged_buffers() >= self.max_logged_buffers {
                self.release_oldest()?;
            }
            match self.append(port, frame, now_ns) {
                Ok(lsn) => {
                    self.live.push_back(Live { lsn, received_ns: now_ns });
                    self.port_counters[port].logged_frames += 1;
                    self.port_counters[port].logged_bytes += u64::from(frame.len);
                }
                // No room in the log or the pool: the frame is dropped, so
                // that no frame leaves unlogged.
                Err(SwitchError::Log(LogError::LogFull { .. } | LogError::BatchFull { .. }))
                | Err(SwitchError::Buffers(BufferError::PoolFull { .. })) => {
                    self.port_counters[port].rx_dropped += 1;
                    if egress != Egress::Filter {
                        self.scratch.decisions[index].egress = Egress::Filter;
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Buffers held by live records (one each).
    fn logged_buffers(&self) -> usize {
        self.live.len()
    }

    fn append(&mut self, port: usize, frame: Frame, now_ns: u64) -> Result<u64, SwitchError> {
        let in_place = Extent::new(frame.buffer, frame.offset as usize, frame.len as usize);
        let (extent, how) = match self.config.mode {
            LogMode::Swap => (in_place, HOW_SWAP),
            LogMode::Copy => (self.copy(in_place)?, HOW_COPY),
            LogMode::Off => unreachable!("no records when logging is off"),
        };
        let key = record::encode(FrameKey { ingress: port as u16, how });
        let appended = self.log.append(&self.pool, &mut self.buffers, KIND_FRAME, now_ns, &key, &[extent]);
        if how == HOW_COPY {
            // The copy's allocation reference: the record holds its own.
            self.buffers.release(extent.buffer)?;
        }
        Ok(appended?)
    }

    /// Copies a frame into a fresh buffer (the copy baseline); the caller
    /// holds one reference on it.
    fn copy(&mut self, from: Extent) -> Result<Extent, SwitchError> {
        let buffer = self.buffers.allocate()?;
        let source = self.pool.buffer_offset(from.buffer) + u64::from(from.offset);
        let bytes = &mut self.scratch.copy[..usize::from(from.len)];
        self.pool.read(source, bytes);
        self.pool.write(self.pool.buffer_offset(buffer), bytes);
        Ok(Extent::new(buffer, 0, bytes.len()))
    }

    /// Step 4: releases the oldest records past the age limit, and past the
    /// size limit.
    fn retain(&mut self, now_ns: u64) -> Result<(), SwitchError> {
        while let Some(oldest) = self.live.front() {
            let too_old =
                self.config.retention.max_age_ns.is_some_and(|age| now_ns.saturating_sub(oldest.received_ns) > age);
            let too_many = self.live.len() > self.max_records || self.logged_buffers() > self.max_logged_buffers;
            if !too_old && !too_many {
                break;
            }
            self.release_oldest()?;
        }
        Ok(())
    }

    fn release_oldest(&mut self) -> Result<(), SwitchError> {
        if let Some(oldest) = self.live.pop_front() {
            self.log.release(&self.pool, oldest.lsn)?;
            self.counters.retention_released += 1;
        }
        Ok(())
    }

    /// Steps 6 and 7.
    fn transmit(&mut self, ports: &mut dyn Ports, now_ns: u64) -> Result<(), SwitchError> {
        let count = self.names.len();
        for decision in &self.scratch.decisions {
            let targets = match decision.egress {
                Egress::Filter => 0..0,
                Egress::Port(port) => port..port + 1,
                Egress::Flood => 0..count,
            };
            for port in targets.filter(|&p| p != decision.port) {
                self.buffers.retain(decision.frame.buffer)?;
                self.backlog[port].push_back(decision.frame);
            }
        }
        for port in 0..count {
            if self.backlog[port].is_empty() {
                // Kicked anyway: what an earlier batch queued may still wait.
                ports.flush_transmit(port);
                continue;
            }
            assert!(self.backlog[port].len() <= RX_BATCH_MAX * count, "receive is held while a backlog waits");
            self.backlog_since_ns[port] = now_ns;
            let was_stalled = self.stalled[port];
            self.offer(ports, port)?;
            // A stalled port holds nothing: what its ring did not take now
            // is dropped, so that a dead link does not stop the switch.
            if was_stalled && self.stalled[port] {
                self.drop_backlog(port)?;
            }
        }
        for decision in &self.scratch.decisions {
            self.buffers.release(decision.frame.buffer)?;
        }
        Ok(())
    }

    /// Step 8.
    fn refill(&mut self, ports: &mut dyn Ports) {
        let buffer_size = u64::from(self.pool.geometry().buffer_size);
        for port in 0..self.names.len() {
            let wanted = self.config.fill_target.saturating_sub(self.in_fill[port]).min(ports.fill_room(port));
            self.scratch.fresh.clear();
            for _ in 0..wanted {
                match self.buffers.allocate() {
                    Ok(buffer) => self.scratch.fresh.push(buffer),
                    Err(_) => {
                        self.counters.fill_starved += 1;
                        break;
                    }
                }
            }
            for &buffer in &self.scratch.fresh {
                self.pool.lend(self.pool.buffer_offset(buffer), buffer_size);
            }
            ports.fill(port, &self.scratch.fresh);
            self.in_fill[port] += self.scratch.fresh.len();
        }
    }

    /// Ages the bridge's table (call now and then).
    pub fn age(&mut self, now_ns: u64) {
        self.bridge.age(now_ns);
    }

    /// Checks that every buffer's references are accounted for: the ports'
    /// receive sides, transmissions in flight and live records hold them
    /// all, and the free ones are free. O(buffers), for tests and
    /// `--check` runs.
    pub fn check_accounting(&self) {
        self.buffers.check_invariants();
        let count = self.pool.geometry().buffer_count;
        let references: u64 = (0..count).map(|b| u64::from(self.buffers.refs(b))).sum();
        let held: usize = self.in_fill.iter().sum::<usize>()
            + self.in_tx.iter().sum::<usize>()
            + self.backlog_frames()
            + self.live.len();
        assert_eq!(references, held as u64, "every reference has a holder");
        let referenced = (0..count).filter(|&b| self.buffers.refs(b) > 0).count() as u32;
        assert_eq!(self.buffers.free_count(), count - referenced, "a buffer is free if and only if unreferenced");
    }

    /// Vouches for the last commit (a clean stop) and gives the pool back.
    pub fn shut_down(mut self) -> Result<Pool, SwitchError> {
        self.log.checkpoint(&self.pool, &mut self.buffers)?;
        Ok(self.pool)
    }
}

impl Switch {
    /// The counters as `/metrics` serves them.
    pub fn metrics_text(&self) -> String {
        let mut e = crate::util::metrics::Exposition::default();
        self.expose(&mut e);
        e.text
    }

    /// The counters in the Prometheus text format (`/metrics`).
    fn expose(&self, e: &mut crate::util::metrics::Exposition) {
        type Field = fn(&PortCounters) -> u64;
        let families: [(&str, &str, Field); 10] = [
            ("rx_frames", "Frames received on the port.", |c| c.rx_frames),
            ("rx_bytes", "Bytes received on the port.", |c| c.rx_bytes),
            ("tx_frames", "Frames sent on the port.", |c| c.tx_frames),
            ("tx_bytes", "Bytes sent on the port.", |c| c.tx_bytes),
            ("logged_frames", "Frames received on the port and logged.", |c| c.logged_frames),
            ("logged_bytes", "Bytes of frames received on the port and logged.", |c| c.logged_bytes),
            ("flooded_frames", "Frames received on the port and flooded.", |c| c.flooded),
            ("filtered_frames", "Frames received on the port for a station on the same port.", |c| c.filtered),
            ("tx_dropped_frames", "Frames not sent on the port: it stalled (its ring took nothing).", |c| c.tx_dropped),
            ("rx_dropped_frames", "Frames received on the port and dropped (too long, or no log room).", |c| {
                c.rx_dropped
            }),
        ];
        for (name, help, field) in families {
            let name = format!("packetstore_switch_{name}_total");
            e.family(&name, "counter", help);
            for (port, counters) in self.port_counters.iter().enumerate() {
                e.sample(&name, &[("port", &self.names[port])], field(counters) as f64);
            }
        }
        let c = self.counters;
        e.single("packetstore_switch_batches_total", "counter", "Batches that received frames.", c.batches as f64);
        e.single("packetstore_switch_fences_total", "counter", "Fences (one per batch that logged).", c.fences as f64);
        e.single(
            "packetstore_switch_retention_released_total",
            "counter",
            "Records released by retention.",
            c.retention_released as f64,
        );
        e.single(
            "packetstore_switch_fill_starved_total",
            "counter",
            "Refills cut short: no free buffer.",
            c.fill_starved as f64,
        );
        e.single(
            "packetstore_switch_rx_held_total",
            "counter",
            "Batches whose receive was held: a port's transmit ring was full.",
            c.rx_held as f64,
        );
        e.single(
            "packetstore_switch_tx_stalls_total",
            "counter",
            "Times a port's ring took nothing for the hold time; its waiting frames were dropped.",
            c.tx_stalls as f64,
        );
        e.single(
            "packetstore_switch_tx_backlog_frames",
            "gauge",
            "Frames waiting for room in a transmit ring.",
            self.backlog_frames() as f64,
        );
        e.single("packetstore_switch_log_records", "gauge", "Live records in the log.", self.live.len() as f64);
        e.single("packetstore_switch_free_buffers", "gauge", "Free pool buffers.", self.buffers.free_count() as f64);
        e.single("packetstore_switch_mac_entries", "gauge", "Entries of the MAC table.", self.bridge.len() as f64);
    }
}
