//! The packet-logging switch's engine (`packetstore::apps::switch`) over
//! in-memory ports: learning-bridge forwarding, the log's content and
//! order (swap and copy), retention with buffer accounting over a long
//! run, and power failures at random fences under the crash simulator:
//! the log recovers to a contiguous run of what was received, in order,
//! holding every frame of every committed batch, never a torn frame.
//! (tests/switch_netns.rs in packetstore-cli runs the real AF_XDP switch.)

use std::sync::Arc;

use packetstore::apps::switch::pcap::{logged_frames, LoggedFrame};
use packetstore::apps::switch::policy::Policy;
use packetstore::apps::switch::{LogMode, Retention, Switch, SwitchConfig, SwitchError};
use packetstore::io::ports::{MemoryPorts, Ports, MEMORY_FILL_SIZE};
use packetstore::util::rng::SplitMix64;
use packetstore::{Geometry, Pool, SimDevice, SimMode};

const GEOMETRY: Geometry = Geometry { buffer_size: 2048, buffer_count: 1536, log_size: 128 * 1024, log_count: 1 };
const NAMES: [&str; 3] = ["p1", "p2", "p3"];

fn mac(station: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, station]
}

/// A frame from `source` to `destination` carrying `sequence`, `len` bytes.
fn frame(destination: [u8; 6], source: [u8; 6], sequence: u64, len: usize, rng: &mut SplitMix64) -> Vec<u8> {
    let mut f = destination.to_vec();
    f.extend_from_slice(&source);
    f.extend_from_slice(&0x88b5u16.to_be_bytes());
    f.extend_from_slice(&sequence.to_le_bytes());
    let mut rest = vec![0u8; len - f.len()];
    rng.fill(&mut rest);
    f.extend_from_slice(&rest);
    f
}

fn config(mode: LogMode) -> SwitchConfig {
    SwitchConfig { fill_target: MEMORY_FILL_SIZE, tx_max: 64, ..SwitchConfig::new(mode, Policy::All) }
}

fn memory_pool() -> (Arc<SimDevice>, Pool) {
    let device = Arc::new(SimDevice::new(GEOMETRY.file_size(), SimMode::CacheLine));
    let pool = Pool::create_simulated(device.clone(), GEOMETRY).unwrap();
    (device, pool)
}

/// The frames a switch's log holds, read as `packetstore pcap` does.
fn logged(switch: Switch) -> (Vec<LoggedFrame>, Pool) {
    let pool = switch.shut_down().unwrap();
    (logged_frames(&pool, 0, u64::MAX).unwrap(), pool)
}

#[test]
fn forwards_like_a_learning_bridge_and_logs_every_frame_in_order() {
    for mode in [LogMode::Swap, LogMode::Copy] {
        let (_device, pool) = memory_pool();
        let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config(mode)).unwrap();
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        let mut rng = SplitMix64::new(7);
        let broadcast = [0xff; 6];
        // Station 1 on p1 broadcasts: flooded to p2 and p3, never back.
        let hello = frame(broadcast, mac(1), 0, 60, &mut rng);
        ports.inject(0, &hello);
        assert_eq!(switch.step(&mut ports, 1).unwrap(), 1);
        assert_eq!(ports.take_sent(0), Vec::<Vec<u8>>::new(), "{mode:?}: no hairpin");
        assert_eq!(ports.take_sent(1), vec![hello.clone()]);
        assert_eq!(ports.take_sent(2), vec![hello.clone()]);
        // Station 2 on p2 answers station 1: learned, so only p1.
        let answer = frame(mac(1), mac(2), 1, 1514, &mut rng);
        ports.inject(1, &answer);
        switch.step(&mut ports, 2).unwrap();
        assert_eq!(ports.take_sent(0), vec![answer.clone()]);
        assert!(ports.take_sent(2).is_empty(), "{mode:?}: a known destination is not flooded");
        // To an unknown station: flooded; to a station on the ingress port: filtered.
        let unknown = frame(mac(9), mac(1), 2, 100, &mut rng);
        let same_port = frame(mac(1), mac(5), 3, 64, &mut rng);
        ports.inject(0, &unknown);
        ports.inject(0, &same_port);
        switch.step(&mut ports, 3).unwrap();
        assert_eq!(ports.take_sent(1), vec![unknown.clone()]);
        assert_eq!(ports.take_sent(2), vec![unknown.clone()]);
        assert!(ports.take_sent(0).is_empty());
        let counters = switch.port_counters().to_vec();
        assert_eq!((counters[0].rx_frames, counters[0].flooded, counters[0].filtered), (3, 2, 1));
        assert_eq!((counters[1].tx_frames, counters[2].tx_frames, counters[0].tx_frames), (2, 2, 1));
        switch.check_accounting();
        let (frames, pool) = logged(switch);
        let bytes: Vec<Vec<u8>> = frames.iter().map(|f| f.bytes.clone()).collect();
        assert_eq!(bytes, vec![hello, answer, unknown, same_port], "{mode:?}: every frame, in order");
        assert_eq!(frames.iter().map(|f| f.ingress).collect::<Vec<_>>(), vec![0, 1, 0, 0]);
        assert_eq!(frames.iter().map(|f| f.received_ns).collect::<Vec<_>>(), vec![1, 2, 3, 3]);
        // `pcap --since 2 --until 3`: the frames received in [2, 3).
        let window = logged_frames(&pool, 2, 3).unwrap();
        assert_eq!(window.iter().map(|f| f.received_ns).collect::<Vec<_>>(), vec![2], "{mode:?}: a time window");
    }
}

#[test]
fn a_policy_logs_only_what_it_matches_and_off_logs_nothing() {
    let policy = Policy::from_rules(&["in=p2".to_string()]).unwrap();
    for (mode, policy, expect) in [(LogMode::Swap, policy, 1), (LogMode::Off, Policy::All, 0)] {
        let (_device, pool) = memory_pool();
        let config = SwitchConfig { policy, ..config(mode) };
        let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config).unwrap();
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        let mut rng = SplitMix64::new(1);
        ports.inject(0, &frame([0xff; 6], mac(1), 0, 60, &mut rng));
        ports.inject(1, &frame([0xff; 6], mac(2), 1, 60, &mut rng));
        switch.step(&mut ports, 1).unwrap();
        assert_eq!(switch.counters().fences, expect as u64, "{mode:?}: a fence only for a batch that logged");
        switch.check_accounting();
        let (frames, _) = logged(switch);
        assert_eq!(frames.len(), expect, "{mode:?}");
    }
}

/// A long run with retention by size and by age: after every batch every
/// buffer's references are accounted for; at the end, with the ports
/// drained, every buffer is free or held by a live record.
#[test]
fn retention_keeps_buffer_accounting_exact_over_a_long_run() {
    for mode in [LogMode::Swap, LogMode::Copy] {
        let (_device, pool) = memory_pool();
        let config =
            SwitchConfig { retention: Retention { max_bytes: 200 * 2048, max_age_ns: Some(50) }, ..config(mode) };
        let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config).unwrap();
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        let mut rng = SplitMix64::new(99);
        let mut sequence = 0;
        for now in 1..3_000u64 {
            for _ in 0..rng.below(40) {
                let port = rng.below(3) as usize;
                let destination = if rng.chance(1, 4) { [0xff; 6] } else { mac(1 + rng.below(6) as u8) };
                let len = 60 + rng.below(1455) as usize;
                ports.inject(port, &frame(destination, mac(1 + port as u8), sequence, len, &mut rng));
                sequence += 1;
            }
            switch.step(&mut ports, now).unwrap();
            switch.check_accounting();
            assert!(switch.live_records() <= 200, "{mode:?}: retention by size");
            for port in 0..3 {
                ports.take_sent(port);
            }
        }
        assert!(switch.counters().retention_released > 10_000, "{mode:?}: retention ran");
        // One more batch collects the last transmissions' completions.
        switch.step(&mut ports, 3_000).unwrap();
        let live = switch.live_records();
        let filled = ports.held().len();
        assert_eq!(switch.free_buffers() as usize, GEOMETRY.buffer_count as usize - live - filled, "{mode:?}");
        let (frames, _) = logged(switch);
        assert_eq!(frames.len(), live);
        assert!(frames.windows(2).all(|w| w[0].received_ns <= w[1].received_ns), "log order is receive order");
        assert!(frames.iter().all(|f| f.received_ns + 50 >= 3_000), "{mode:?}: retention by age");
    }
}

/// A frame leaves the switch only after the fence that made its record
/// durable: when that fence fails (or the power does), nothing of the
/// batch is transmitted; the batch before it was.
#[test]
fn no_frame_of_a_batch_is_sent_before_its_fence() {
    for crash in [false, true] {
        let (device, pool) = memory_pool();
        let mut switch =
            Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config(LogMode::Swap)).unwrap();
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        let mut rng = SplitMix64::new(3);
        ports.inject(0, &frame([0xff; 6], mac(1), 0, 60, &mut rng));
        switch.step(&mut ports, 1).unwrap();
        assert_eq!(ports.take_sent(1).len(), 1, "the first batch was fenced and sent");
        assert_eq!(ports.take_sent(2).len(), 1, "flooded");
        if crash {
            device.crash_at_fence(device.fences() + 1, 7);
        } else {
            device.fail_at_fence(device.fences() + 1);
        }
        for n in 1..10 {
            ports.inject(0, &frame([0xff; 6], mac(1), n, 60 + n as usize, &mut rng));
        }
        assert!(switch.step(&mut ports, 2).is_err(), "crash {crash}: the fence failed");
        for port in 0..NAMES.len() {
            assert!(ports.take_sent(port).is_empty(), "crash {crash}: a frame left before its fence");
        }
    }
}

/// A port whose transmit ring takes only 3 frames per batch (a link slower
/// than the traffic for it): the switch holds receive while the frames
/// wait instead of dropping them (issue 35), so every frame is sent, in
/// order, none dropped by the switch or for want of a receive buffer.
#[test]
fn a_slow_transmit_ring_holds_receive_and_drops_nothing() {
    for mode in [LogMode::Swap, LogMode::Off] {
        let (_device, pool) = memory_pool();
        let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config(mode)).unwrap();
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        let mut rng = SplitMix64::new(35);
        // Station 2 on p2 announces itself: frames to it go to p2 alone.
        ports.inject(1, &frame([0xff; 6], mac(2), 0, 60, &mut rng));
        switch.step(&mut ports, 1).unwrap();
        ports.take_sent(0);
        ports.take_sent(2);
        ports.limit_transmit(1, Some(3));
        let mut sent = Vec::new();
        let mut now = 2;
        for round in 0..10u64 {
            // Fewer frames than a port keeps buffers for: none can be
            // lost for want of a receive buffer while receive is held.
            for n in 0..48 {
                let bytes = frame(mac(2), mac(1), round * 100 + n, 60 + rng.below(1455) as usize, &mut rng);
                ports.inject(0, &bytes);
                sent.push(bytes);
            }
            for _ in 0..40 {
                switch.step(&mut ports, now).unwrap();
                switch.check_accounting();
                now += 1;
            }
        }
        let on_p2 = ports.take_sent(1);
        let dropped: u64 = switch.port_counters().iter().map(|c| c.tx_dropped + c.rx_dropped).sum();
        assert!(
            on_p2 == sent,
            "{mode:?}: p2 sent {} of {} frames; the switch dropped {dropped}",
            on_p2.len(),
            sent.len()
        );
        assert_eq!(dropped, 0, "{mode:?}: no drop");
        assert!(ports.take_sent(2).is_empty(), "{mode:?}: nothing flooded");
        assert_eq!(ports.drops(0).rx_no_buffer, 0, "{mode:?}: no frame found its port without a buffer");
        let text = switch.metrics_text();
        assert_eq!(metric(&text, "packetstore_switch_tx_backlog_frames"), Some(0), "{mode:?}: the backlog drained");
        let held = metric(&text, "packetstore_switch_rx_held_total");
        assert!(held >= Some(10 * 14), "{mode:?}: receive was held ({held:?} batches)");
    }
}

/// The value of the sample `name` (no labels) in a `/metrics` text.
fn metric(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(' ').next() == Some(name))?;
    line.rsplit(' ').next()?.parse::<f64>().ok().map(|v| v as u64)
}

/// A port whose ring takes nothing (its link down) holds receive only for
/// `tx_hold_ns`: then it counts as stalled, its waiting frames are
/// dropped and so are later ones, without holding, while the other ports
/// are served; once its ring takes frames again it is served again.
#[test]
fn a_dead_port_stalls_after_the_hold_time_and_the_others_go_on() {
    let (_device, pool) = memory_pool();
    let config = SwitchConfig { tx_hold_ns: 5, ..config(LogMode::Swap) };
    let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config).unwrap();
    let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
    switch.start(&mut ports);
    ports.limit_transmit(1, Some(0));
    let mut rng = SplitMix64::new(36);
    let frames: Vec<Vec<u8>> = (0..3).map(|n| frame([0xff; 6], mac(1), n, 100, &mut rng)).collect();
    ports.inject(0, &frames[0]);
    assert_eq!(switch.step(&mut ports, 1).unwrap(), 1);
    assert!(switch.holding(), "p2 took nothing: receive is held");
    ports.inject(0, &frames[1]);
    for now in 2..=6 {
        assert_eq!(switch.step(&mut ports, now).unwrap(), 0, "held at {now}");
        switch.check_accounting();
    }
    // Past the hold time: p2 stalls, the switch receives again.
    assert_eq!(switch.step(&mut ports, 7).unwrap(), 1);
    switch.check_accounting();
    assert!(!switch.holding(), "a stalled port holds nothing");
    assert_eq!(ports.take_sent(2), frames[..2].to_vec(), "p3 was served");
    assert_eq!((switch.counters().tx_stalls, switch.port_counters()[1].tx_dropped), (1, 2));
    ports.limit_transmit(1, None);
    ports.inject(0, &frames[2]);
    switch.step(&mut ports, 8).unwrap();
    switch.check_accounting();
    assert_eq!(ports.take_sent(1), vec![frames[2].clone()], "p2 is served again");
    assert_eq!(ports.take_sent(2), vec![frames[2].clone()]);
}

/// Retention that would keep less than one batch is refused at start:
/// it would release records of the batch that appended them.
#[test]
fn retention_smaller_than_a_batch_is_refused() {
    let (_device, pool) = memory_pool();
    let config =
        SwitchConfig { retention: Retention { max_bytes: 100 * 2048, max_age_ns: None }, ..config(LogMode::Swap) };
    let error = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config).err().expect("refused");
    assert!(error.to_string().contains("fewer than one batch"), "{error}");
}

/// What a run has received, and how much of it a recovered log must hold.
struct Model {
    /// Every frame received, in order (the log's order).
    received: Vec<Vec<u8>>,
    /// Received frames whose records are durable (their batch committed).
    committed: usize,
    /// The oldest record retention had durably kept.
    first_durable: usize,
    /// The oldest record retention would keep had the crashed batch's
    /// releases reached the media (they may, without its appends).
    first_at_most: usize,
}

fn run(seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let sim = if rng.chance(1, 2) { SimMode::CacheLine } else { SimMode::Page };
    let mode = if rng.chance(1, 2) { LogMode::Swap } else { LogMode::Copy };
    // At least a batch (3 ports x 64 frames): the switch refuses less.
    let keep = 192 + rng.below(300);
    let context = format!("seed {seed:#x} ({sim:?}, {mode:?}, keep {keep})");
    let mut device = Arc::new(SimDevice::new(GEOMETRY.file_size(), sim));
    let mut pool = Pool::create_simulated(device.clone(), GEOMETRY).unwrap();
    let mut model = Model { received: Vec::new(), committed: 0, first_durable: 0, first_at_most: 0 };
    let mut sequence = 0u64;
    for cycle in 0..3 {
        let config = SwitchConfig { retention: Retention { max_bytes: keep * 2048, max_age_ns: None }, ..config(mode) };
        let mut switch = Switch::new(pool, NAMES.iter().map(|n| n.to_string()).collect(), config).unwrap();
        assert_eq!(switch.live_records(), model.committed - model.first_durable, "{context} cycle {cycle}");
        let mut ports = MemoryPorts::new(&NAMES, GEOMETRY.buffer_size);
        switch.start(&mut ports);
        device.crash_at_fence(device.fences() + 1 + rng.below(40), rng.next_u64());
        let mut in_batch = Vec::new();
        let process_crash = rng.chance(1, 4);
        for now in 1.. {
            in_batch.clear();
            for _ in 0..rng.below(24) {
                let port = rng.below(3) as usize;
                let bytes = frame([0xff; 6], mac(1 + port as u8), sequence, 60 + rng.below(1455) as usize, &mut rng);
                sequence += 1;
                ports.inject(port, &bytes);
                in_batch.push((port, bytes));
            }
            // The ports receive port by port: that is the log's order.
            in_batch.sort_by_key(|(port, _)| *port);
            model.received.extend(in_batch.iter().map(|(_, b)| b.clone()));
            let released_before = switch.counters().retention_released;
            let result = switch.step(&mut ports, now);
            let released = (switch.counters().retention_released - released_before) as usize;
            model.first_at_most = model.first_durable + released;
            match result {
                Ok(_) => {
                    switch.check_accounting();
                    model.committed = model.received.len();
                    model.first_durable = model.committed - switch.live_records();
                    model.first_at_most = model.first_durable;
                    if process_crash && rng.chance(1, 30) {
                        break;
                    }
                }
                Err(SwitchError::Log(_)) => break,
                Err(error) => panic!("{context}: {error}"),
            }
        }
        drop(switch);
        device = if device.is_dead() {
            Arc::new(SimDevice::from_image(device.take_crash_image().expect("a crash leaves an image"), sim))
        } else {
            // The process dies, the machine stays up.
            device.disarm();
            Arc::new(device.after_process_crash())
        };
        pool = Pool::open_simulated(device.clone()).unwrap();
        let found = logged_frames(&pool, 0, u64::MAX).unwrap_or_else(|e| panic!("{context}: {e}"));
        check_prefix(&found, &mut model, &context);
    }
}

/// The recovered log is `received[first..end]`: contiguous, in order,
/// whole; `end` covers every committed frame retention kept; `first` is
/// what retention had durably kept, or later by at most the crashed
/// batch's releases (which may reach the media without its appends).
fn check_prefix(found: &[LoggedFrame], model: &mut Model, context: &str) {
    let Some(first) = found.first() else {
        assert!(
            model.committed <= model.first_at_most,
            "{context}: the log is empty, but frames {}..{} were committed and kept",
            model.first_at_most,
            model.committed
        );
        model.received.truncate(model.committed);
        model.first_durable = model.committed;
        return;
    };
    let start = model
        .received
        .iter()
        .position(|r| *r == first.bytes)
        .unwrap_or_else(|| panic!("{context}: the first logged frame was never received"));
    for (i, frame) in found.iter().enumerate() {
        assert_eq!(
            model.received.get(start + i),
            Some(&frame.bytes),
            "{context}: logged frame {i} is not received frame {}",
            start + i
        );
    }
    let end = start + found.len();
    assert!(end >= model.committed, "{context}: the log ends at {end}, before the committed {}", model.committed);
    assert!(start >= model.first_durable, "{context}: a released record came back before {}", model.first_durable);
    assert!(start <= model.first_at_most, "{context}: kept records {}..{start} lost", model.first_at_most);
    // Frames past the log's end were never acknowledged: gone.
    model.received.truncate(end);
    model.committed = end;
    model.first_durable = start;
}

#[test]
fn power_failures_leave_a_contiguous_log_of_whole_frames() {
    let seeds: u64 = std::env::var("PACKETSTORE_SWITCH_CRASH_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    for seed in 0..seeds {
        run(seed);
    }
}
