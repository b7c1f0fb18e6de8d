//! The learning bridge (IEEE 802.1D without spanning tree): which ports a
//! frame leaves by. A frame's source MAC is learned on its ingress port;
//! a known unicast destination goes to its port, anything else (broadcast,
//! multicast, unknown) floods to every port; never back out of the ingress
//! port. Entries not refreshed within the ageing time are forgotten.
//!
//! Invariants: the table holds at most `MAC_TABLE_MAX` entries (a flood of
//! random sources evicts none of the known ones before they age; new ones
//! are then not learned and their frames flood); a group MAC (bit 0 of the
//! first byte) is never learned.

use std::collections::HashMap;

/// Entries the table holds at most.
pub const MAC_TABLE_MAX: usize = 65_536;
/// How long an entry lives without a frame from its address (802.1D's
/// default ageing time is 300 s).
pub const AGEING_DEFAULT_NS: u64 = 300_000_000_000;

pub type Mac = [u8; 6];

/// Where a frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Egress {
    /// One port.
    Port(usize),
    /// Every port but the ingress one.
    Flood,
    /// Nowhere: its destination is on its ingress port.
    Filter,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    port: usize,
    seen_ns: u64,
}

/// The MAC table.
pub struct Bridge {
    table: HashMap<Mac, Entry>,
    ageing_ns: u64,
    /// Sources not learned because the table was full.
    pub not_learned: u64,
}

pub fn is_group(mac: &Mac) -> bool {
    mac[0] & 1 == 1
}

impl Bridge {
    pub fn new(ageing_ns: u64) -> Bridge {
        Bridge { table: HashMap::new(), ageing_ns, not_learned: 0 }
    }

    /// Learns the source of `frame` (received on `ingress` at `now_ns`)
    /// and says where it goes. A frame shorter than an Ethernet header is
    /// filtered.
    pub fn forward(&mut self, frame: &[u8], ingress: usize, now_ns: u64) -> Egress {
        if frame.len() < 14 {
            return Egress::Filter;
        }
        let destination: Mac = frame[0..6].try_into().expect("six bytes");
        let source: Mac = frame[6..12].try_into().expect("six bytes");
        self.learn(source, ingress, now_ns);
        if is_group(&destination) {
            return Egress::Flood;
        }
        match self.table.get(&destination) {
            Some(entry) if now_ns.saturating_sub(entry.seen_ns) <= self.ageing_ns => {
                if entry.port == ingress {
                    Egress::Filter
                } else {
                    Egress::Port(entry.port)
                }
            }
            _ => Egress::Flood,
        }
    }

    fn learn(&mut self, source: Mac, port: usize, now_ns: u64) {
        if is_group(&source) {
            return;
        }
        if self.table.len() >= MAC_TABLE_MAX && !self.table.contains_key(&source) {
            self.age(now_ns);
            if self.table.len() >= MAC_TABLE_MAX {
                self.not_learned += 1;
                return;
            }
        }
        self.table.insert(source, Entry { port, seen_ns: now_ns });
    }

    /// Forgets the entries older than the ageing time.
    pub fn age(&mut self, now_ns: u64) {
        let ageing = self.ageing_ns;
        self.table.retain(|_, entry| now_ns.saturating_sub(entry.seen_ns) <= ageing);
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The port `mac` was learned on, if its entry is alive.
    pub fn port_of(&self, mac: &Mac, now_ns: u64) -> Option<usize> {
        self.table.get(mac).filter(|e| now_ns.saturating_sub(e.seen_ns) <= self.ageing_ns).map(|e| e.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(destination: Mac, source: Mac) -> Vec<u8> {
        let mut f = destination.to_vec();
        f.extend_from_slice(&source);
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0);
        f
    }

    const A: Mac = [2, 0, 0, 0, 0, 0xa];
    const B: Mac = [2, 0, 0, 0, 0, 0xb];
    const BROADCAST: Mac = [0xff; 6];

    #[test]
    fn learns_floods_unknown_and_forwards_known() {
        let mut bridge = Bridge::new(AGEING_DEFAULT_NS);
        assert_eq!(bridge.forward(&frame(B, A), 0, 1), Egress::Flood, "B unknown");
        assert_eq!(bridge.forward(&frame(A, B), 1, 2), Egress::Port(0), "A learned on 0");
        assert_eq!(bridge.forward(&frame(B, A), 0, 3), Egress::Port(1), "B learned on 1");
        assert_eq!(bridge.forward(&frame(BROADCAST, A), 0, 4), Egress::Flood);
    }

    #[test]
    fn never_back_out_of_the_ingress_port() {
        let mut bridge = Bridge::new(AGEING_DEFAULT_NS);
        bridge.forward(&frame(BROADCAST, A), 0, 1);
        bridge.forward(&frame(BROADCAST, B), 0, 1);
        assert_eq!(bridge.forward(&frame(A, B), 0, 2), Egress::Filter);
    }

    #[test]
    fn entries_age_and_a_station_moves() {
        let mut bridge = Bridge::new(1_000);
        bridge.forward(&frame(BROADCAST, A), 0, 0);
        assert_eq!(bridge.port_of(&A, 1_000), Some(0));
        assert_eq!(bridge.port_of(&A, 1_001), None, "aged");
        assert_eq!(bridge.forward(&frame(A, B), 1, 1_001), Egress::Flood);
        bridge.forward(&frame(BROADCAST, A), 2, 1_002);
        assert_eq!(bridge.forward(&frame(A, B), 1, 1_003), Egress::Port(2), "moved to port 2");
        bridge.age(10_000);
        assert!(bridge.is_empty());
    }

    #[test]
    fn group_sources_are_not_learned_and_runts_are_filtered() {
        let mut bridge = Bridge::new(AGEING_DEFAULT_NS);
        bridge.forward(&frame(A, BROADCAST), 0, 0);
        assert!(bridge.is_empty());
        assert_eq!(bridge.forward(&[0u8; 13], 0, 0), Egress::Filter);
    }

    #[test]
    fn a_full_table_learns_no_more() {
        let mut bridge = Bridge::new(AGEING_DEFAULT_NS);
        for i in 0..MAC_TABLE_MAX as u32 + 10 {
            let b = i.to_be_bytes();
            bridge.forward(&frame(BROADCAST, [2, 0, b[0], b[1], b[2], b[3]]), 0, 1);
        }
        assert_eq!(bridge.len(), MAC_TABLE_MAX);
        assert_eq!(bridge.not_learned, 10);
    }
}
