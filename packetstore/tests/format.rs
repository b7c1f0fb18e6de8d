//! Goal: pools written by earlier releases keep opening, byte for byte,
//! and a pool's kind (version 3) is encoded, refused and inferred as
//! `docs/format.md` says.
//!
//! Method: `fixtures/pool-vN.bin` are pools of each format version committed
//! to the repository (3 live records, 1 released, a checkpointed anchor;
//! version 2 with two logs, the records in the second; version 3 a log
//! pool). The test opens a copy of each and checks geometry, kind, records
//! and data. A fixture is written by this test once, with
//! PACKETSTORE_WRITE_FIXTURE=N for the current version N, and never
//! regenerated afterwards: a format change adds one. The kind's rules for
//! old pools are checked on pools made by this build and then rewritten as
//! version 2 (version 2 header, no kind), as an older build made them; each
//! refusal must leave the whole file as it was.

use std::path::{Path, PathBuf};

use packetstore::index::node::Value;
use packetstore::index::tree::Tree;
use packetstore::pool::kind::{Evidence, POOL_KINDS, POOL_KIND_VALUE_MAX};
use packetstore::pool::layout::{Header, HeaderError, FORMAT_VERSION, HDR_CRC, HDR_KIND, HDR_SIZE, HDR_VERSION};
use packetstore::PoolKindExt;
use packetstore::{Buffers, Extent, Geometry, Log, PersistOptions, Pool, PoolError, PoolKind};

const GEOMETRY_V1: Geometry = Geometry { buffer_size: 512, buffer_count: 16, log_size: 16 * 1024, log_count: 1 };
const GEOMETRY_V2: Geometry = Geometry { buffer_size: 512, buffer_count: 32, log_size: 32 * 1024, log_count: 2 };
const GEOMETRY_V3: Geometry = GEOMETRY_V1;
/// Pools made by this test for the kind's rules: room for a tree and a log.
const GEOMETRY_KIND: Geometry = Geometry { buffer_size: 2048, buffer_count: 64, log_size: 16 * 1024, log_count: 1 };
const RECORDS: [(&[u8], &[u8]); 4] =
    [(b"alpha", b"first value"), (b"beta", b"released"), (b"gamma", &[7u8; 700]), (b"delta", b"")];

fn fixture(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/pool-v{version}.bin"))
}

fn write_fixture(path: &Path, kind: PoolKind, geometry: Geometry, log_index: u32) {
    let _ = std::fs::remove_file(path);
    let pool = Pool::create_as(path, kind, geometry, &PersistOptions::default()).unwrap();
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

/// A copy of the fixture of `version`, removed on drop.
fn fixture_copy(version: u32) -> TempFile {
    let copy = TempFile::new(&format!("v{version}"));
    std::fs::copy(fixture(version), &copy.0).expect("the committed fixture");
    copy
}

fn check_fixture(version: u32, kind: PoolKind, geometry: Geometry, log_index: u32) {
    let copy = fixture_copy(version);
    let pool = Pool::open(&copy.0, &PersistOptions::default()).unwrap();
    assert_eq!(pool.geometry(), geometry);
    assert_eq!(pool.header().version, version);
    assert_eq!(pool.header().kind, kind);
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
}

#[test]
fn version_1_pool_opens() {
    check_fixture(1, PoolKind::Unset, GEOMETRY_V1, 0);
}

#[test]
fn version_2_pool_opens() {
    check_fixture(2, PoolKind::Unset, GEOMETRY_V2, 1);
}

#[test]
fn version_3_pool_opens() {
    assert_eq!(FORMAT_VERSION, 3, "a new version adds its own fixture and test");
    if std::env::var("PACKETSTORE_WRITE_FIXTURE").as_deref() == Ok("3") {
        write_fixture(&fixture(3), PoolKind::Log, GEOMETRY_V3, 0);
    }
    check_fixture(3, PoolKind::Log, GEOMETRY_V3, 0);
}

/// A file path unique to this test process and this call (tests run in
/// parallel, some on copies of the same fixture), removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("packetstore-format-{name}-{}-{call}.pool", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `bytes` (a header) as `version` wrote it, with `kind_value` at the
/// kind's offset and the CRC recomputed. Version 1 had no log count either.
fn as_version(mut bytes: [u8; HDR_SIZE], version: u32, kind_value: u32) -> [u8; HDR_SIZE] {
    bytes[HDR_VERSION..HDR_VERSION + 4].copy_from_slice(&version.to_le_bytes());
    bytes[HDR_KIND..HDR_KIND + 4].copy_from_slice(&kind_value.to_le_bytes());
    if version == 1 {
        bytes[HDR_KIND - 4..HDR_KIND].fill(0);
    }
    let crc = crc32c::crc32c(&bytes[..HDR_CRC]);
    bytes[HDR_CRC..HDR_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// Rewrites the header of the pool at `path` with `as_version`.
fn rewrite_header(path: &Path, version: u32, kind_value: u32) {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut bytes = [0u8; HDR_SIZE];
    file.read_exact_at(&mut bytes, 0).unwrap();
    file.write_all_at(&as_version(bytes, version, kind_value), 0).unwrap();
}

fn header(kind: PoolKind) -> Header {
    Header { geometry: GEOMETRY_V1, creation_id: 7, created_unix_ns: 42, version: FORMAT_VERSION, kind, shard: None }
}

/// Opening `path` as `kind` is refused, and the whole file is left as it was.
fn refused_unchanged(path: &Path, kind: PoolKind) -> PoolError {
    let before = std::fs::read(path).unwrap();
    let error = match Pool::open_as(path, kind, &PersistOptions::default()) {
        Ok(pool) => panic!("{} opened as {kind}: {:?}", path.display(), pool.kind_evidence()),
        Err(error) => error,
    };
    assert!(std::fs::read(path).unwrap() == before, "refusing {} as {kind} changed it", path.display());
    error
}

#[test]
fn every_kind_round_trips_in_the_header() {
    for kind in POOL_KINDS {
        let bytes = header(kind).encode();
        assert_eq!(bytes[HDR_KIND..HDR_KIND + 4], kind.as_u32().to_le_bytes());
        assert_eq!(Header::decode(&bytes).map(|h| h.kind), Ok(kind));
        assert_eq!(PoolKind::from_u32(kind.as_u32()), Some(kind));
    }
}

#[test]
fn an_unknown_kind_is_refused_by_its_value() {
    for value in [POOL_KIND_VALUE_MAX + 1, 0x8000_0000, u32::MAX] {
        let bytes = as_version(header(PoolKind::Wal).encode(), FORMAT_VERSION, value);
        assert_eq!(Header::decode(&bytes), Err(HeaderError::UnknownKind(value)));
    }
    // On a file: the error names the value, and the file is left as it was.
    let file = TempFile::new("unknown-kind");
    drop(Pool::create_as(&file.0, PoolKind::Wal, GEOMETRY_KIND, &PersistOptions::default()).unwrap());
    rewrite_header(&file.0, FORMAT_VERSION, 9);
    let before = std::fs::read(&file.0).unwrap();
    let error = Pool::open(&file.0, &PersistOptions::default()).err().expect("an unknown kind is refused");
    assert!(matches!(error, PoolError::UnknownKind { found: 9, .. }), "{error}");
    assert!(error.to_string().contains("pool kind 9 is not one this build knows"), "{error}");
    assert!(std::fs::read(&file.0).unwrap() == before, "refusing it changed the file");
}

#[test]
fn an_old_header_records_no_kind() {
    // Versions 1 and 2 reserved the kind's bytes: zero reads as unset,
    // anything else is a damaged header.
    for version in [1, 2] {
        let bytes = as_version(header(PoolKind::Unset).encode(), version, 0);
        assert_eq!(Header::decode(&bytes).map(|h| (h.version, h.kind)), Ok((version, PoolKind::Unset)));
        let bytes = as_version(header(PoolKind::Unset).encode(), version, PoolKind::Wal.as_u32());
        assert!(matches!(Header::decode(&bytes), Err(HeaderError::BadGeometry(_))), "version {version}");
    }
}

#[test]
fn a_recorded_kind_is_enforced_before_anything_is_written() {
    let copy = fixture_copy(3);
    for wanted in [PoolKind::KeyValue, PoolKind::Wal, PoolKind::Tree] {
        let error = refused_unchanged(&copy.0, wanted);
        assert!(
            matches!(error, PoolError::WrongKind { found: PoolKind::Log, wanted: w, evidence: None, .. } if w == wanted),
            "{error}"
        );
        assert!(error.to_string().contains("it was left unchanged"), "{error}");
    }
    let pool = Pool::open_as(&copy.0, PoolKind::Log, &PersistOptions::default()).unwrap();
    assert_eq!(pool.kind_evidence(), Evidence::Kind { kind: PoolKind::Log, why: "recorded in the header".into() });
}

#[test]
fn old_fixtures_get_the_kind_their_contents_say() {
    // Version 1: one log of records with keys, kind 2: a bare log (`demo`).
    let v1 = fixture_copy(1);
    let evidence = Pool::open(&v1.0, &PersistOptions::default()).unwrap().kind_evidence();
    assert!(matches!(evidence, Evidence::Kind { kind: PoolKind::Log, .. }), "{evidence:?}");
    let error = refused_unchanged(&v1.0, PoolKind::KeyValue);
    assert!(matches!(&error, PoolError::WrongKind { found: PoolKind::Log, evidence: Some(_), .. }), "{error}");
    assert!(Pool::open_as(&v1.0, PoolKind::Log, &PersistOptions::default()).is_ok());
    // Version 2: two logs (only `wal` makes them) of a bare log's records:
    // contents of two kinds, which no program may take for its own.
    let v2 = fixture_copy(2);
    for wanted in [PoolKind::Wal, PoolKind::Log] {
        let error = refused_unchanged(&v2.0, wanted);
        assert!(matches!(&error, PoolError::KindUndecided { version: 2, .. }), "{error}");
        assert!(error.to_string().contains("packetstore inspect --verify"), "{error}");
    }
}

/// A pool as an older build left it: made by this build without a kind,
/// filled by `fill`, and rewritten as version 2.
fn old_pool(name: &str, fill: impl FnOnce(&Pool)) -> TempFile {
    let file = TempFile::new(name);
    let pool = Pool::create(&file.0, GEOMETRY_KIND, &PersistOptions::default()).unwrap();
    fill(&pool);
    drop(pool);
    rewrite_header(&file.0, 2, 0);
    file
}

/// Appends and commits one record to log 0.
fn append(pool: &Pool, kind: u16, key: &[u8], tag: u64) {
    let mut buffers = Buffers::new(GEOMETRY_KIND.buffer_count);
    let (mut log, _) = Log::recover(pool, &mut buffers).unwrap();
    let mut extents: Vec<Extent> = Vec::new();
    buffers.copy_in(pool, b"some bytes", &mut extents).unwrap();
    log.append(pool, &mut buffers, kind, tag, key, &extents).unwrap();
    buffers.release_extents(&extents).unwrap();
    log.commit(pool, &mut buffers).unwrap();
}

/// Commits a tree of one key.
fn commit_tree(pool: &Pool) {
    let mut buffers = Buffers::new(GEOMETRY_KIND.buffer_count);
    let mut tree = Tree::open(pool, &mut buffers).unwrap();
    tree.insert(pool, &mut buffers, b"kkey", &Value::Inline(b"value".to_vec())).unwrap();
    tree.commit(pool, &mut buffers).unwrap();
}

#[test]
fn an_old_key_value_pool_opens_as_key_value_only() {
    // Known by its tree (checkpointed), or by its log's first record (a
    // store killed before its first checkpoint).
    type Fill = (&'static str, fn(&Pool));
    let fills: [Fill; 2] =
        [("kv-tree", commit_tree), ("kv-log", |pool| append(pool, packetstore::store::db::KIND_PUT, b"kkey", 1))];
    for (name, fill) in fills {
        let old = old_pool(name, fill);
        for wanted in [PoolKind::Wal, PoolKind::Log, PoolKind::Tree] {
            let error = refused_unchanged(&old.0, wanted);
            assert!(
                matches!(&error, PoolError::WrongKind { found: PoolKind::KeyValue, evidence: Some(_), .. }),
                "{name}: {error}"
            );
        }
        let pool = Pool::open_as(&old.0, PoolKind::KeyValue, &PersistOptions::default()).unwrap();
        assert_eq!(pool.header().kind, PoolKind::Unset, "an old pool is never rewritten to claim it");
    }
}

#[test]
fn an_old_wal_pool_opens_as_wal_only() {
    let old = old_pool("wal", |pool| append(pool, packetstore::apps::wal::KIND_WAL, b"", 1));
    for wanted in [PoolKind::KeyValue, PoolKind::Log, PoolKind::Tree] {
        let error = refused_unchanged(&old.0, wanted);
        assert!(matches!(&error, PoolError::WrongKind { found: PoolKind::Wal, evidence: Some(_), .. }), "{error}");
    }
    assert!(Pool::open_as(&old.0, PoolKind::Wal, &PersistOptions::default()).is_ok());
}

#[test]
fn an_empty_old_pool_is_claimed_by_its_first_opener_without_a_write() {
    let old = old_pool("empty", |_| {});
    let header_before = std::fs::read(&old.0).unwrap()[..HDR_SIZE].to_vec();
    for kind in [PoolKind::KeyValue, PoolKind::Wal, PoolKind::Log, PoolKind::Tree] {
        let pool = Pool::open_as(&old.0, kind, &PersistOptions::default()).unwrap();
        assert_eq!(pool.kind_evidence(), Evidence::Empty);
        drop(pool);
        assert!(std::fs::read(&old.0).unwrap()[..HDR_SIZE] == header_before, "opening as {kind} wrote the header");
    }
}

#[test]
fn an_old_pool_of_two_kinds_or_damaged_is_refused_to_every_kind() {
    // The reported damage: a WAL server appended to a key-value pool.
    let mixed = old_pool("mixed", |pool| {
        commit_tree(pool);
        append(pool, packetstore::apps::wal::KIND_WAL, b"", 1);
    });
    // A log anchor whose magic is gone: the head cannot be read.
    let damaged = old_pool("damaged", |pool| {
        pool.write(GEOMETRY_KIND.log_offset(), &[0u8; 8]);
    });
    for (old, words) in [(&mixed, "contents of different kinds"), (&damaged, "log 0: the log anchor has a bad magic")] {
        for wanted in [PoolKind::KeyValue, PoolKind::Wal] {
            let error = refused_unchanged(&old.0, wanted);
            assert!(matches!(&error, PoolError::KindUndecided { .. }), "{error}");
            assert!(error.to_string().contains(words), "{error}");
        }
    }
}
