//! Goal: pools written by earlier releases keep opening, byte for byte.
//!
//! Method: `fixtures/pool-vN.bin` are pools of each format version committed
//! to the repository (3 live records, 1 released, a checkpointed anchor;
//! version 2 with two logs, the records in the second). The test opens a
//! copy of each and checks geometry, records and data. A fixture is written
//! by this test once, with PACKETSTORE_WRITE_FIXTURE=N for the current
//! version N, and never regenerated afterwards: a format change adds one.

use std::path::{Path, PathBuf};

use packetstore::{Buffers, Geometry, Log, PersistOptions, Pool};

const GEOMETRY_V1: Geometry = Geometry { buffer_size: 512, buffer_count: 16, log_size: 16 * 1024, log_count: 1 };
const GEOMETRY_V2: Geometry = Geometry { buffer_size: 512, buffer_count: 32, log_size: 32 * 1024, log_count: 2 };
const RECORDS: [(&[u8], &[u8]); 4] =
    [(b"alpha", b"first value"), (b"beta", b"released"), (b"gamma", &[7u8; 700]), (b"delta", b"")];

fn fixture(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/pool-v{version}.bin"))
}

fn write_fixture(path: &Path, geometry: Geometry, log_index: u32) {
    let _ = std::fs::remove_file(path);
    let pool = Pool::create(path, geometry, &PersistOptions::default()).unwrap();
    let (first, count) = geometry.buffer_range(log_index);
    let mut buffers = Buffers::range(first, count);
    let (mut log, _) = Log::recover_log(&pool, log_index, &mut buffers).unwrap();
    let mut lsns = Vec::new();
    for (key, data) in RECORDS {
        let mut extents = Vec::new();
        buffers.copy_in(&pool, data, &mut extents).unwrap();
        lsns.push(log.append(&pool, &mut buffers, 2, key.len() as u64, key, &extents).unwrap());
        buffers.release_extents(&extents).unwrap();
    }
    log.commit(&pool, &mut buffers).unwrap();
    log.release(&pool, lsns[1]).unwrap();
    log.checkpoint(&pool, &mut buffers).unwrap();
}

fn check_fixture(version: u32, geometry: Geometry, log_index: u32) {
    let copy = std::env::temp_dir().join(format!("packetstore-v{version}-{}.pool", std::process::id()));
    std::fs::copy(fixture(version), &copy).expect("the committed fixture");
    let pool = Pool::open(&copy, &PersistOptions::default()).unwrap();
    assert_eq!(pool.geometry(), geometry);
    assert_eq!(pool.header().version, version);
    let (first, count) = geometry.buffer_range(log_index);
    let mut buffers = Buffers::range(first, count);
    let (log, report) = Log::recover_log(&pool, log_index, &mut buffers).unwrap();
    assert_eq!(report.live_records, 3);
    let found: Vec<(Vec<u8>, Vec<u8>, u16, u64)> = log
        .live_lsns()
        .map(|lsn| {
            let view = log.view(&pool, lsn).unwrap();
            let data = log.read_data(&pool, &view);
            (view.key, data, view.kind, view.tag)
        })
        .collect();
    let expected: Vec<_> = RECORDS
        .iter()
        .filter(|(key, _)| key != b"beta")
        .map(|(key, data)| (key.to_vec(), data.to_vec(), 2, key.len() as u64))
        .collect();
    assert_eq!(found, expected);
    drop(pool);
    let _ = std::fs::remove_file(copy);
}

#[test]
fn version_1_pool_opens() {
    check_fixture(1, GEOMETRY_V1, 0);
}

#[test]
fn version_2_pool_opens() {
    if std::env::var("PACKETSTORE_WRITE_FIXTURE").as_deref() == Ok("2") {
        write_fixture(&fixture(2), GEOMETRY_V2, 1);
    }
    check_fixture(2, GEOMETRY_V2, 1);
}
