//! One-sided readers (`packetstore::reader`) against a store in this
//! process that publishes for them, over a real pool file on tmpfs that
//! the reader maps read-only, as another process would.
//!
//! What is checked: after every commit, a read returns the newest
//! committed write of its key (from the log before a checkpoint covers
//! it, from the tree after), never a write not yet committed; expiry,
//! collections (WRONGTYPE, HGET) and remapped databases read as the server
//! reads them; a table too small to remember every key makes reads retry
//! and give up, never answer wrong; and a damaged pool or table gives
//! errors, not panics or reads outside the mapping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use packetstore::index::compact::CompactConfig;
use packetstore::reader::recent::{table_path, Recent, BUCKETS_DEFAULT};
use packetstore::reader::{Reader, ReaderError, ReaderOptions};
use packetstore::store::db::{Op, Store, StoreConfig};
use packetstore::store::keyspace::{
    db_entry_key, element_key, expire_key, meta_key, string_key, KeyType, Meta, SPACE_MAIN,
};
use packetstore::util::rng::SplitMix64;
use packetstore::{Buffers, Geometry, PersistOptions, Pool};

const GEOMETRY: Geometry = Geometry { buffer_size: 2048, buffer_count: 4096, log_size: 256 * 1024, log_count: 1 };
const INSTANCE: u64 = 0x1234_5678_9abc_def0;

fn config() -> StoreConfig {
    StoreConfig {
        value_size_max: 1 << 20,
        // Checkpoints every few commands: reads move from the log to the tree.
        replay_records_max: 16,
        checkpoint_interval: Duration::from_secs(3600),
        buffers_reserve: 0,
        // Compaction relocates every value it meets, all the time.
        compaction: CompactConfig { waste_min: 0.0, fill_max: 1.01, entries_per_step: 5, bytes_per_step: 16 * 1024 },
        replicated: false,
    }
}

/// A pool file on tmpfs, removed (with its table) at the end.
struct PoolFile(PathBuf);

impl PoolFile {
    fn new(name: &str) -> PoolFile {
        let path = PathBuf::from(format!("/dev/shm/packetstore-reader-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        PoolFile(path)
    }
}

impl Drop for PoolFile {
    fn drop(&mut self) {
        if let Ok(table) = table_path(&self.0) {
            let _ = std::fs::remove_file(table);
        }
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The server's side: a store publishing for readers.
struct Server {
    pool: Pool,
    buffers: Buffers,
    store: Store,
}

impl Server {
    fn start(path: &Path, buckets: u32) -> Server {
        let pool = Pool::create(path, GEOMETRY, &PersistOptions::default()).unwrap();
        let mut buffers = Buffers::new(GEOMETRY.buffer_count);
        let (mut store, _) = Store::open(&pool, &mut buffers, config()).unwrap();
        let pool_id = pool.header().creation_id as u64;
        let table = Recent::create(&table_path(path).unwrap(), buckets, 0o600, INSTANCE, pool_id).unwrap();
        store.publish_for_readers(&mut buffers, table).unwrap();
        pool.set_reader_instance(INSTANCE);
        Server { pool, buffers, store }
    }

    fn put(&mut self, key: Vec<u8>, bytes: &[u8]) -> Op {
        let mut extents = Vec::new();
        self.buffers.copy_in(&self.pool, bytes, &mut extents).expect("room");
        Op::Put { key, extents, len: bytes.len() as u64 }
    }

    /// Applies `ops` as one command (not yet durable).
    fn apply(&mut self, ops: Vec<Op>) {
        self.store.apply(&self.pool, &mut self.buffers, &ops).unwrap();
        Store::release_ops(&mut self.buffers, &ops);
    }

    fn commit(&mut self) {
        self.store.commit(&self.pool, &mut self.buffers).unwrap();
        let idle = false;
        self.store.compact_step(&self.pool, &mut self.buffers, idle).unwrap();
    }
}

fn reader(path: &Path) -> Reader {
    Reader::open(path, ReaderOptions::default()).unwrap()
}

fn random_value(rng: &mut SplitMix64) -> Vec<u8> {
    let len = match rng.below(10) {
        0..=3 => rng.below(60) as usize,
        4..=6 => 61 + rng.below(3000) as usize,
        7..=8 => rng.below(9000) as usize,
        // More extents than a leaf holds: an indirect value.
        _ => 40_000 + rng.below(30_000) as usize,
    };
    let mut bytes = vec![0u8; len];
    rng.fill(&mut bytes);
    bytes
}

/// What a string read of `key` must return, from the committed model.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expected {
    Value(Vec<u8>),
    Absent,
    WrongType,
}

fn read_string(reader: &mut Reader, key: &[u8]) -> Result<Expected, ReaderError> {
    match reader.get(0, key) {
        Ok(Some(value)) => Ok(Expected::Value(value)),
        Ok(None) => Ok(Expected::Absent),
        Err(ReaderError::WrongType) => Ok(Expected::WrongType),
        Err(error) => Err(error),
    }
}

type Fields = BTreeMap<Vec<u8>, Vec<u8>>;

/// The committed state of a few string keys, some expiring, some hashes.
#[derive(Default, Clone)]
struct Model {
    strings: BTreeMap<Vec<u8>, Vec<u8>>,
    expired: BTreeMap<Vec<u8>, bool>,
    hashes: BTreeMap<Vec<u8>, (u64, Fields)>,
}

impl Model {
    fn expected(&self, key: &[u8]) -> Expected {
        if self.expired.get(key) == Some(&true) {
            return Expected::Absent;
        }
        if let Some(value) = self.strings.get(key) {
            return Expected::Value(value.clone());
        }
        match self.hashes.contains_key(key) {
            true => Expected::WrongType,
            false => Expected::Absent,
        }
    }
}

const KEYS: u64 = 24;

fn key_name(i: u64) -> Vec<u8> {
    format!("key{i}").into_bytes()
}

/// A random command on key `key` (strings, expiries, hashes), applied to
/// the server (uncommitted) and to `model`.
fn command(rng: &mut SplitMix64, server: &mut Server, model: &mut Model, next_oid: &mut u64) {
    let key = key_name(rng.below(KEYS));
    let mut ops = Vec::new();
    match rng.below(10) {
        0..=3 => {
            if let Some((oid, fields)) = model.hashes.remove(&key) {
                ops.push(Op::Del { key: meta_key(0, &key) });
                ops.extend(fields.keys().map(|f| Op::Del { key: element_key(oid, SPACE_MAIN, f) }));
            }
            let value = random_value(rng);
            ops.push(server.put(string_key(0, &key), &value));
            model.strings.insert(key.clone(), value);
        }
        4 => {
            ops.push(Op::Del { key: string_key(0, &key) });
            model.strings.remove(&key);
        }
        5 => {
            // An expiry in the past (the key reads as absent) or the future.
            let past = rng.below(2) == 0;
            let at: u64 = if past { 1_000 } else { u64::MAX / 2 };
            ops.push(server.put(expire_key(0, &key), &at.to_le_bytes()));
            model.expired.insert(key.clone(), past);
        }
        6 => {
            ops.push(Op::Del { key: expire_key(0, &key) });
            model.expired.remove(&key);
        }
        _ => {
            if model.strings.remove(&key).is_some() {
                ops.push(Op::Del { key: string_key(0, &key) });
            }
            let (oid, fields) = model.hashes.entry(key.clone()).or_insert_with(|| {
                *next_oid += 1;
                (*next_oid, BTreeMap::new())
            });
            let meta = Meta { kind: KeyType::Hash, oid: *oid }.encode();
            let field = format!("f{}", rng.below(4)).into_bytes();
            let value = random_value(rng);
            let (oid, put_meta) = (*oid, fields.is_empty());
            fields.insert(field.clone(), value.clone());
            if put_meta {
                ops.push(server.put(meta_key(0, &key), &meta));
            }
            ops.push(server.put(element_key(oid, SPACE_MAIN, &field), &value));
        }
    }
    server.apply(ops);
}

fn check_all(reader: &mut Reader, model: &Model, context: &str) {
    for i in 0..KEYS {
        let key = key_name(i);
        let found = read_string(reader, &key).unwrap_or_else(|e| panic!("{context}: {key:?}: {e}"));
        assert_eq!(found, model.expected(&key), "{context}: key {:?}", String::from_utf8_lossy(&key));
        if let Some((_, fields)) = model.hashes.get(&key).filter(|_| model.expired.get(&key) != Some(&true)) {
            for f in 0..5 {
                let field = format!("f{f}").into_bytes();
                let found = reader.hget(0, &key, &field).unwrap_or_else(|e| panic!("{context}: hget: {e}"));
                assert_eq!(found.as_ref(), fields.get(&field), "{context}: hget {key:?} {field:?}");
            }
        }
    }
}

#[test]
fn every_read_returns_the_newest_committed_write() {
    let file = PoolFile::new("newest");
    let mut server = Server::start(&file.0, BUCKETS_DEFAULT);
    let mut reader = reader(&file.0);
    let mut rng = SplitMix64::new(20);
    let (mut model, mut next_oid) = (Model::default(), 1_000);
    for step in 0..1_500 {
        let committed = model.clone();
        for _ in 0..1 + rng.below(3) {
            command(&mut rng, &mut server, &mut model, &mut next_oid);
        }
        // Applied, not yet durable: readers still see the committed state.
        if step % 10 == 0 {
            check_all(&mut reader, &committed, &format!("step {step}, before its commit"));
        }
        server.commit();
        check_all(&mut reader, &model, &format!("step {step}"));
    }
    let stats = reader.stats();
    assert_eq!(stats.fallbacks, 0, "{stats:?}");
    assert!(stats.from_log > 1_000, "reads from the log: {stats:?}");
    assert!(server.store.stats().checkpoints > 50, "checkpoints ran: {:?}", server.store.stats());
    // Once everything is checkpointed, every read comes from the tree.
    server.store.checkpoint_all(&server.pool, &mut server.buffers).unwrap();
    let from_log = reader.stats().from_log;
    check_all(&mut reader, &model, "after the last checkpoint");
    assert_eq!(reader.stats().from_log, from_log, "the tree answers");
}

#[test]
fn remapped_databases_read_through_their_physical_id() {
    let file = PoolFile::new("databases");
    let mut server = Server::start(&file.0, BUCKETS_DEFAULT);
    let mut reader = reader(&file.0);
    // Database 1 is physical 1 until a flush (or SWAPDB) remaps it.
    let op = server.put(string_key(1, b"k"), b"one");
    server.apply(vec![op]);
    server.commit();
    assert_eq!(reader.get(1, b"k").unwrap().as_deref(), Some(&b"one"[..]));
    let ops = vec![server.put(db_entry_key(1), &77u32.to_le_bytes()), server.put(string_key(77, b"k"), b"remapped")];
    server.apply(ops);
    server.commit();
    assert_eq!(reader.get(1, b"k").unwrap().as_deref(), Some(&b"remapped"[..]));
    assert_eq!(reader.get(0, b"k").unwrap(), None);
    assert!(matches!(reader.get(16, b"k"), Err(ReaderError::NoFallback(_))), "no database 16");
}

#[test]
fn a_table_that_forgets_keys_retries_and_never_answers_wrong() {
    let file = PoolFile::new("forgets");
    // One bucket: four keys remembered at once.
    let mut server = Server::start(&file.0, 1);
    let mut reader = reader(&file.0);
    let mut rng = SplitMix64::new(21);
    let (mut model, mut next_oid) = (Model::default(), 1_000);
    let mut undecided = 0;
    for step in 0..600 {
        command(&mut rng, &mut server, &mut model, &mut next_oid);
        server.commit();
        for i in 0..KEYS {
            let key = key_name(i);
            match read_string(&mut reader, &key) {
                Ok(found) => assert_eq!(found, model.expected(&key), "step {step}"),
                Err(ReaderError::NoFallback(_)) => undecided += 1,
                Err(error) => panic!("step {step}: {error}"),
            }
        }
    }
    assert!(undecided > 0, "a one-bucket table leaves reads undecided");
    server.store.checkpoint_all(&server.pool, &mut server.buffers).unwrap();
    check_all(&mut reader, &model, "after the last checkpoint");
}

#[test]
fn a_stopped_server_or_a_forced_fallback_is_not_trusted() {
    let file = PoolFile::new("stopped");
    let mut server = Server::start(&file.0, BUCKETS_DEFAULT);
    let op = server.put(string_key(0, b"k"), b"v");
    server.apply(vec![op]);
    server.commit();
    let mut forced = Reader::open(&file.0, ReaderOptions { force_fallback: true, ..ReaderOptions::default() }).unwrap();
    assert!(matches!(forced.get(0, b"k"), Err(ReaderError::NoFallback(_))), "the test switch fails every try");
    let mut reader = reader(&file.0);
    assert_eq!(reader.get(0, b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // A server that stops names no table: readers must ask it.
    server.pool.set_reader_instance(0);
    assert!(matches!(reader.get(0, b"k"), Err(ReaderError::NoFallback(_))));
    // Another instance (a restart) whose table is not there yet.
    server.pool.set_reader_instance(INSTANCE + 1);
    assert!(matches!(reader.get(0, b"k"), Err(ReaderError::NoFallback(_))));
    // A table whose lease is shorter than the reader's margin: no read
    // can finish within it.
    let pool_id = server.pool.header().creation_id as u64;
    let short = Duration::from_millis(1);
    let table = Recent::create_with_lease(&table_path(&file.0).unwrap(), 16, 0o600, INSTANCE + 2, pool_id, short);
    let _table = table.unwrap();
    server.pool.set_reader_instance(INSTANCE + 2);
    assert!(matches!(reader.get(0, b"k"), Err(ReaderError::NoFallback(_))), "the lease is the table's");
}

/// A pool deleted and created again at the same path under a killed
/// server (the inode may be reused): within the identity check's interval
/// the reader maps the new pool and reads what the new server wrote.
#[test]
fn a_pool_made_again_at_its_path_is_noticed() {
    let file = PoolFile::new("remade");
    let mut first = Server::start(&file.0, BUCKETS_DEFAULT);
    let op = first.put(string_key(0, b"k"), b"old");
    first.apply(vec![op]);
    first.commit();
    let mut reader = reader(&file.0);
    assert_eq!(reader.get(0, b"k").unwrap().as_deref(), Some(&b"old"[..]));
    // Killed: nothing cleans up (its table and its instance word stay).
    let first_table = table_path(&file.0).unwrap();
    std::mem::forget(first);
    std::fs::remove_file(&file.0).unwrap();
    let mut second = Server::start(&file.0, BUCKETS_DEFAULT);
    let op = second.put(string_key(0, b"k"), b"new");
    second.apply(vec![op]);
    second.commit();
    std::thread::sleep(packetstore::reader::client::IDENTITY_CHECK_INTERVAL + Duration::from_millis(10));
    assert_eq!(reader.get(0, b"k").unwrap().as_deref(), Some(&b"new"[..]));
    if first_table != table_path(&file.0).unwrap() {
        std::fs::remove_file(first_table).unwrap();
    }
}

/// Damages `count` bytes of `bytes`, mostly where the reader looks.
fn damage(rng: &mut SplitMix64, bytes: &mut [u8], count: u64, log_end: usize) {
    for _ in 0..count {
        let at = match rng.below(4) {
            0 => 1024 + rng.below(128) as usize,
            1 => 4096 + rng.below((log_end - 4096) as u64) as usize,
            _ => rng.below(bytes.len() as u64) as usize,
        };
        bytes[at] ^= 1 << rng.below(8);
    }
}

/// Fuzzes the reader's walk: copies of a live pool and its table with
/// random bytes flipped. Every read gives the right value or an error
/// (never damaged bytes); none panics, none reads outside the mapping
/// (that would crash the test).
/// `PACKETSTORE_READER_FUZZ=N` runs N damaged copies (default 300).
#[test]
fn damaged_pools_and_tables_give_errors_not_panics() {
    let runs: u64 = std::env::var("PACKETSTORE_READER_FUZZ").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let file = PoolFile::new("fuzz-source");
    let mut server = Server::start(&file.0, 64);
    let mut rng = SplitMix64::new(22);
    let (mut model, mut next_oid) = (Model::default(), 1_000);
    for _ in 0..300 {
        command(&mut rng, &mut server, &mut model, &mut next_oid);
        server.commit();
    }
    let pool_bytes = std::fs::read(&file.0).unwrap();
    let table_bytes = std::fs::read(table_path(&file.0).unwrap()).unwrap();
    let log_end = 4096 + GEOMETRY.log_size as usize;
    let copy = PoolFile::new("fuzz-copy");
    let mut outcomes = BTreeMap::new();
    for run in 0..runs {
        let mut pool = pool_bytes.clone();
        let mut table = table_bytes.clone();
        let count = 1 + rng.below(64);
        damage(&mut rng, &mut pool, count, log_end);
        if run % 3 == 0 {
            let at = 64 + rng.below((table.len() - 64) as u64) as usize;
            table[at] ^= 0xff;
        }
        let _ = std::fs::remove_file(&copy.0);
        std::fs::write(&copy.0, &pool).unwrap();
        std::fs::write(table_path(&copy.0).unwrap(), &table).unwrap();
        let Ok(mut reader) = Reader::open(&copy.0, ReaderOptions::default()) else {
            *outcomes.entry("refused at open").or_insert(0) += 1;
            continue;
        };
        for i in 0..KEYS {
            let outcome = match read_string(&mut reader, &key_name(i)) {
                Ok(found) if found == model.expected(&key_name(i)) => "right",
                Ok(_) => "wrong (damaged value bytes)",
                Err(_) => "error",
            };
            *outcomes.entry(outcome).or_insert(0) += 1;
            let _ = reader.hget(0, &key_name(i), b"f1");
        }
    }
    eprintln!("damaged reads: {outcomes:?}");
    assert!(outcomes.get("error").copied().unwrap_or(0) > 0, "damage was noticed: {outcomes:?}");
    // Every value carries its CRC (issue 35): damaged value bytes are an
    // error, never returned as the value (before, 1 read in 7,200 was).
    assert_eq!(outcomes.get("wrong (damaged value bytes)"), None, "{outcomes:?}");
}
