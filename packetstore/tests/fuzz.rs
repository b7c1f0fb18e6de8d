//! The fuzz harnesses (`fuzz/harness.rs`) on stable Rust: every saved crash
//! input under `fuzz/regressions/<target>/` replays, then a few thousand
//! random inputs per target run (`PACKETSTORE_FUZZ_CASES`, default 2000).
//! libFuzzer itself runs them with coverage guidance: `fuzz/README.md`.

#[path = "../../fuzz/harness.rs"]
mod harness;

use std::path::Path;

use packetstore::util::rng::SplitMix64;

fn cases() -> u64 {
    std::env::var("PACKETSTORE_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

/// Replays the saved inputs of `target`, then random ones built from
/// `seeds` (fragments the target's grammar likes) and random bytes.
fn run(target: &str, harness: fn(&[u8]), seeds: &[&[u8]]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions").join(target);
    let mut replayed = 0;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            eprintln!("{target}: replaying {}", path.display());
            harness(&bytes);
            replayed += 1;
        }
    }
    let mut rng = SplitMix64::new(0xf022 ^ target.len() as u64);
    for _ in 0..cases() {
        let mut input = Vec::new();
        for _ in 0..rng.below(12) {
            if !seeds.is_empty() && rng.chance(2, 3) {
                input.extend_from_slice(seeds[rng.below(seeds.len() as u64) as usize]);
            } else {
                let mut noise = vec![0u8; rng.below(24) as usize];
                rng.fill(&mut noise);
                input.extend_from_slice(&noise);
            }
        }
        harness(&input);
    }
    eprintln!("{target}: {replayed} saved inputs and {} random ones", cases());
}

#[test]
fn http_head() {
    let seeds: &[&[u8]] = &[
        b"\x03GET /kv/a%20b HTTP/1.1\r\n",
        b"PUT /kv/x HTTP/1.0\r\n",
        b"Content-Length: 12\r\n",
        b"Connection: close\r\n",
        b"%4",
        b"%+f",
        b"\r\n\r\n",
    ];
    run("http_head", harness::http_head, seeds);
}

#[test]
fn resp_parser() {
    let seeds: &[&[u8]] = &[
        b"\x07\x05",
        b"*3\r\n",
        b"$3\r\nSET\r\n",
        b"$70\r\n",
        b"0123456789012345678901234567890123456789012345678901234567890123456789\r\n",
        b"PING\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"\r\n",
    ];
    run("resp_parser", harness::resp_parser, seeds);
}

#[test]
fn log_records() {
    run("log_records", harness::log_records, &[b"\x00\x01\x04\x02", b"\x02\x01\x00\x00", b"\x30"]);
}

#[test]
fn tree_node() {
    let nodes = harness::tree_node_seeds();
    assert!(nodes.len() >= 3, "the fixture has a tree of several nodes: {}", nodes.len());
    let counted = nodes.iter().filter(|n| packetstore::index::node::NodeBytes(&n[1..]).is_counted()).count();
    assert!(counted >= 1, "the fixture's tree has a counted internal node (kind 3) to damage");
    for node in &nodes {
        harness::tree_node(node);
    }
    // `PACKETSTORE_FUZZ_SEEDS_OUT=DIR` writes them for libFuzzer's corpus.
    if let Ok(dir) = std::env::var("PACKETSTORE_FUZZ_SEEDS_OUT") {
        for (i, node) in nodes.iter().enumerate() {
            std::fs::write(Path::new(&dir).join(format!("node-{i}")), node).unwrap();
        }
    }
    // Random single-byte damage to real nodes, sealed again or not.
    let mut rng = SplitMix64::new(0x40de);
    for _ in 0..cases() {
        let mut node = nodes[rng.below(nodes.len() as u64) as usize].clone();
        for _ in 0..1 + rng.below(3) {
            let at = 1 + rng.below(node.len() as u64 - 1) as usize;
            node[at] ^= 1 << rng.below(8);
        }
        node[0] = rng.below(256) as u8;
        harness::tree_node(&node);
    }
    run("tree_node", harness::tree_node, &[b"\x01", b"PSND", b"\x00\x00\x01\x00"]);
}

#[test]
fn pool_open() {
    run("pool_open", harness::pool_open, &[b"\x40", b"\x80", b"\x01", b"\x43"]);
}
