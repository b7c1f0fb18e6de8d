//! Goal: pools written by earlier releases keep opening, byte for byte.
//!
//! Method: `fixtures/pool-v1.bin` is a format-version-1 pool committed to
//! the repository (3 live records, 1 released, a checkpointed anchor). The
//! test opens a copy and checks geometry, records and data. The fixture was
//! written by this same test with PACKETSTORE_WRITE_FIXTURE=1, once; it must
//! never be regenerated for a format change (add a new fixture instead).

use std::path::{Path, PathBuf};

use packetstore::{Buffers, Geometry, Log, PersistOptions, Pool};

const GEOMETRY: Geometry = Geometry { buffer_size: 512, buffer_count: 16, log_size: 16 * 1024 };
const RECORDS: [(&[u8], &[u8]); 4] =
    [(b"alpha", b"first value"), (b"beta", b"released"), (b"gamma", &[7u8; 700]), (b"delta", b"")];

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pool-v1.bin")
}

fn write_fixture(path: &Path) {
    let _ = std::fs::remove_file(path);
    let pool = Pool::create(path, GEOMETRY, &PersistOptions::default()).unwrap();
    let mut buffers = Buffers::new(GEOMETRY.buffer_count);
    let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
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

#[test]
fn version_1_pool_opens() {
    if std::env::var_os("PACKETSTORE_WRITE_FIXTURE").is_some() {
        write_fixture(&fixture());
    }
    let copy = std::env::temp_dir().join(format!("packetstore-v1-{}.pool", std::process::id()));
    std::fs::copy(fixture(), &copy).expect("the committed version-1 fixture");
    let pool = Pool::open(&copy, &PersistOptions::default()).unwrap();
    assert_eq!(pool.geometry(), GEOMETRY);
    let mut buffers = Buffers::new(GEOMETRY.buffer_count);
    let (log, report) = Log::recover(&pool, &mut buffers).unwrap();
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
