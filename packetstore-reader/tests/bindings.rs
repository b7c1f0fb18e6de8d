//! The C and Python bindings, as their users run them: the C example
//! (`examples/get.c`) compiled with the system's C compiler against the
//! cdylib, and the Python example (`python/example.py`, cffi) loading it,
//! each reading a pool that a store in this process publishes for readers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use packetstore::index::compact::CompactConfig;
use packetstore::reader::recent::{table_path, Recent, BUCKETS_DEFAULT};
use packetstore::store::db::{Op, Store, StoreConfig};
use packetstore::store::keyspace::{element_key, meta_key, string_key, KeyType, Meta, SPACE_MAIN};
use packetstore::{Buffers, Geometry, PersistOptions, Pool};

const GEOMETRY: Geometry = Geometry { buffer_size: 2048, buffer_count: 1024, log_size: 128 * 1024, log_count: 1 };

/// A pool with `greeting` = "hello from the pool", a 5,000-byte value,
/// and a hash `h` with field `f` = "field value"; some committed into the
/// tree, some still in the log.
struct Published {
    path: PathBuf,
    // Kept alive: the store publishes while the readers read.
    _pool: Pool,
    _store: Store,
}

impl Drop for Published {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(table_path(&self.path).unwrap());
        let _ = std::fs::remove_file(&self.path);
    }
}

fn publish(name: &str) -> Published {
    let path = PathBuf::from(format!("/dev/shm/packetstore-bindings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let pool = Pool::create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
    let mut buffers = Buffers::new(GEOMETRY.buffer_count);
    let config = StoreConfig {
        value_size_max: 1 << 20,
        replay_records_max: 1_000,
        checkpoint_interval: Duration::from_secs(3600),
        buffers_reserve: 0,
        compaction: CompactConfig::default(),
        replicated: false,
    };
    let (mut store, _) = Store::open(&pool, &mut buffers, config).unwrap();
    let table =
        Recent::create(&table_path(&path).unwrap(), BUCKETS_DEFAULT, 0o600, 42, pool.header().creation_id as u64);
    store.publish_for_readers(&mut buffers, table.unwrap()).unwrap();
    pool.set_reader_instance(42);
    let put = |store: &mut Store, buffers: &mut Buffers, key: Vec<u8>, bytes: &[u8]| {
        let mut extents = Vec::new();
        buffers.copy_in(&pool, bytes, &mut extents).unwrap();
        let op = Op::Put { key, extents, len: bytes.len() as u64 };
        store.apply(&pool, buffers, std::slice::from_ref(&op)).unwrap();
        Store::release_ops(buffers, &[op]);
    };
    put(&mut store, &mut buffers, string_key(0, b"greeting"), b"hello from the pool");
    put(&mut store, &mut buffers, string_key(0, b"large"), &[b'x'; 5_000]);
    store.commit(&pool, &mut buffers).unwrap();
    store.checkpoint_all(&pool, &mut buffers).unwrap();
    // These stay in the log: readers find them through the table.
    put(&mut store, &mut buffers, meta_key(0, b"h"), &Meta { kind: KeyType::Hash, oid: 7 }.encode());
    put(&mut store, &mut buffers, element_key(7, SPACE_MAIN, b"f"), b"field value");
    store.commit(&pool, &mut buffers).unwrap();
    Published { path, _pool: pool, _store: store }
}

/// The directory holding the cdylib cargo built for this test.
fn library_dir() -> PathBuf {
    let deps = std::env::current_exe().unwrap().parent().unwrap().to_path_buf();
    for dir in [deps.clone(), deps.parent().unwrap().to_path_buf()] {
        if dir.join("libpacketstore_reader.so").exists() {
            return dir;
        }
    }
    panic!("libpacketstore_reader.so is not next to {}: cargo builds it with this test", deps.display());
}

fn run(command: &mut Command) -> (bool, String, String) {
    let output = command.output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into(),
        String::from_utf8_lossy(&output.stderr).into(),
    )
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_c_example_reads_one_sidedly() {
    let published = publish("c");
    let lib = library_dir();
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("packetstore-reader-get");
    let (built, _, errors) = run(Command::new("cc")
        .arg("-Wall")
        .arg("-Werror")
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("examples/get.c"))
        .arg("-L")
        .arg(&lib)
        .arg("-lpacketstore_reader")
        .arg("-o")
        .arg(&exe));
    assert!(built, "the C example compiles against the header: {errors}");
    let pool = published.path.to_str().unwrap();
    let get = |args: &[&str]| run(Command::new(&exe).env("LD_LIBRARY_PATH", &lib).arg(pool).arg("-").args(args));
    let (ok, out, err) = get(&["greeting"]);
    assert!(ok, "{err}");
    assert_eq!(out, "hello from the pool\n");
    assert!(err.contains("one-sided 1, fallbacks 0"), "{err}");
    assert_eq!(get(&["large"]).1, format!("{}\n", "x".repeat(5_000)));
    assert_eq!(get(&["missing"]).1, "(nil)\n");
    assert_eq!(get(&["h", "f"]).1, "field value\n", "a hash field still in the log");
    let (ok, _, err) = get(&["h"]);
    assert!(!ok && err.contains("WRONGTYPE"), "{err}");
}

/// cffi, pinned, in a virtualenv made on first use (pip from PyPI).
const CFFI: &str = "cffi==1.17.1";

fn python_with_cffi() -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cffi-1.17.1");
    let python = venv.join("bin/python");
    if !python.exists() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().expect("python3");
        assert!(made.success(), "python3 -m venv failed (Debian: apt-get install python3-venv)");
        let pip = Command::new(venv.join("bin/pip")).args(["install", "-q", CFFI]).status().expect("pip");
        assert!(pip.success(), "pip install {CFFI} failed");
    }
    python
}

#[test]
fn the_python_example_reads_one_sidedly() {
    let published = publish("python");
    let so = library_dir().join("libpacketstore_reader.so");
    let python = crate_dir().join("python");
    let pool = published.path.to_str().unwrap();
    let get = |args: &[&str]| {
        run(Command::new(python_with_cffi())
            .env("PACKETSTORE_READER_LIB", &so)
            .env("PYTHONPATH", &python)
            .arg(python.join("example.py"))
            .arg(pool)
            .arg("-")
            .args(args))
    };
    let (ok, out, err) = get(&["greeting"]);
    assert!(ok, "python3 with cffi runs the example: {err}");
    assert_eq!(out, "hello from the pool\n");
    assert!(err.contains("'one_sided': 1") && err.contains("'fallbacks': 0"), "{err}");
    assert_eq!(get(&["h", "f"]).1, "field value\n");
    assert_eq!(get(&["nothing"]).1, "(nil)\n");
    let (ok, _, err) = get(&["h"]);
    assert!(!ok && err.contains("WRONGTYPE"), "{err}");
}
