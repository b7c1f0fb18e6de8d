//! Probe for the B+ tree's design (docs/tree-design.md): the cost of one
//! copy-on-write leaf insert per node size, done on owned `Node`s (clone,
//! insert, encode) and on node bytes (copy, shift slots, CRC), both written
//! to a /dev/shm pool and flushed, two fences per 64 inserts; next to a
//! DRAM `BTreeMap` of 1M keys. Run:
//! `taskset -c 1 cargo run --release -p packetstore --example cow_probe`

use packetstore::index::node::{Node, Value};
use packetstore::util::rng::SplitMix64;
use packetstore::{Domain, Geometry, PersistOptions, Pool};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let n = 200_000u64;
    // DRAM baseline: random inserts into a map of 1M keys (8-byte key, 16-byte value).
    let mut rng = SplitMix64::new(1);
    let mut map = BTreeMap::new();
    for _ in 0..1_000_000 {
        map.insert(rng.next_u64(), [0u8; 16]);
    }
    let start = Instant::now();
    for _ in 0..n {
        map.insert(rng.next_u64(), [1u8; 16]);
    }
    let dram_ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("BTreeMap (1M keys) random insert: {dram_ns:.0} ns");
    for size in [512u32, 1024, 2048, 4096] {
        let path = format!("/dev/shm/cowprobe-{size}.pool");
        let _ = std::fs::remove_file(&path);
        let geometry = Geometry { buffer_size: size, buffer_count: 200_000, log_size: 64 << 10, log_count: 1 };
        let options = PersistOptions { domain: Some(Domain::CacheLine), prefault: true, ..Default::default() };
        let pool = Pool::create(std::path::Path::new(&path), geometry, &options).unwrap();
        // A leaf about 70% full of 8-byte keys and 16-byte inline values.
        let per_entry = 2 + 2 + 8 + 3 + 16;
        let count = ((size as usize - 24) * 7 / 10) / per_entry;
        let entries: Vec<(Vec<u8>, Value)> =
            (0..count as u64).map(|i| ((i * 2).to_be_bytes().to_vec(), Value::Inline(vec![0; 16]))).collect();
        let base = Node::Leaf { generation: 1, entries };
        let mut buf = vec![0u8; size as usize];
        let start = Instant::now();
        for i in 0..n {
            // Copy on write: clone the leaf, insert, encode into a fresh buffer, flush.
            let mut node = base.clone();
            if let Node::Leaf { entries, .. } = &mut node {
                let at = (i as usize) % entries.len();
                entries.insert(at, (((at as u64) * 2 + 1).to_be_bytes().to_vec(), Value::Inline(vec![1; 16])));
                entries.pop();
            }
            node.encode(&mut buf).unwrap();
            let offset = pool.buffer_offset((i % 200_000) as u32);
            pool.write(offset, &buf);
            pool.flush(offset, size as u64);
            if i % 64 == 63 {
                pool.fence().unwrap();
                pool.fence().unwrap();
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!("node {size:>4} B ({count:>3} entries): {ns:.0} ns per copy-on-write leaf insert, owned Node ({:.2}x DRAM BTreeMap speed)", dram_ns / ns);
        // The same on bytes: copy the node into its new buffer, shift the
        // slot array by one (memmove), write an entry, CRC, flush.
        base.encode(&mut buf).unwrap();
        let start = Instant::now();
        let mut scratch = vec![0u8; size as usize];
        for i in 0..n {
            scratch.copy_from_slice(&buf);
            let slots = 24 + 2 * count;
            let at = 24 + 2 * ((i as usize) % count);
            scratch.copy_within(at..slots - 2, at + 2);
            scratch[at..at + 2].copy_from_slice(&[0x10, 0x02]);
            let crc = node_crc(&scratch);
            scratch[16..20].copy_from_slice(&crc.to_le_bytes());
            let offset = pool.buffer_offset((i % 200_000) as u32);
            pool.write(offset, &scratch);
            pool.flush(offset, size as u64);
            if i % 64 == 63 {
                pool.fence().unwrap();
                pool.fence().unwrap();
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!("node {size:>4} B ({count:>3} entries): {ns:.0} ns per copy-on-write leaf insert, on bytes ({:.2}x DRAM BTreeMap speed)", dram_ns / ns);
        drop(pool);
        let _ = std::fs::remove_file(&path);
    }
}

fn node_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&bytes[..16]);
    crc32c::crc32c_append(crc, &bytes[20..])
}
