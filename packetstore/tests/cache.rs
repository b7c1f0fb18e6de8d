//! The write cache (`packetstore::apps::cache`) under the crash simulator:
//! writes and truncates of a few files through the cache, write-backs now
//! and then, and power failures at random fences of the cache's log. The
//! files are a model file system whose unsynced writes reach the "disk"
//! partly or not at all at the failure, as the page cache's would. After
//! recovery replays the live records, every file equals the model: every
//! write and truncate that returned, in order, and the one in flight
//! whole or not at all (never torn).
//!
//! Half the seeds run durable at fsync (`Durability::Fsync`): writes are
//! appended without a fence and a sync commits every lane; after a power
//! failure every byte the last sync covered, and no later change touched,
//! is there (a sync that did nothing was caught at the first seed).
//!
//! Also: several threads writing several files through the lanes, against
//! a model, with write-backs running beside them.
//!
//! `PACKETSTORE_CACHE_CRASH_SEEDS=N` sets the seeds (600 by default: a
//! recovery that ignored the synced marks failed at seed 274);
//! `PACKETSTORE_CACHE_SEED=HEX` replays one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use packetstore::apps::cache::{Cache, CacheRecovery, Durability, ReplayFiles, SyncFile};
use packetstore::util::rng::SplitMix64;
use packetstore::{Geometry, Pool, SimDevice, SimMode};

const GEOMETRY: Geometry = Geometry { buffer_size: 4096, buffer_count: 512, log_size: 64 * 1024, log_count: 2 };
const FILES: u64 = 3;
const PAGE: usize = 4096;

/// One file of the model: what the page cache holds, what the disk holds,
/// and the changes since the last sync (which a power failure may keep in
/// part).
#[derive(Clone, Default, Debug)]
struct ModelFile {
    volatile: Vec<u8>,
    durable: Vec<u8>,
    unsynced: Vec<Op>,
    /// An unlink whose directory was not synced yet: the removed file's
    /// durable bytes and unsynced changes, which a power failure may bring
    /// back under the name.
    removed: Option<(Vec<u8>, Vec<Op>)>,
    /// Which file (inode) the name is: a new one after each unlink.
    generation: u64,
}

#[derive(Clone, Debug)]
enum Op {
    Write(u64, Vec<u8>),
    Truncate(u64),
    Unlink,
}

fn apply(content: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(offset, data) => {
            let end = *offset as usize + data.len();
            if content.len() < end {
                content.resize(end, 0);
            }
            content[*offset as usize..end].copy_from_slice(data);
        }
        Op::Truncate(size) => content.resize(*size as usize, 0),
        Op::Unlink => content.clear(),
    }
}

impl ModelFile {
    /// The program's change `op`, as the page cache holds it.
    fn change(&mut self, op: &Op) {
        if let Op::Unlink = op {
            let removed = (std::mem::take(&mut self.durable), std::mem::take(&mut self.unsynced));
            self.removed.get_or_insert(removed);
            self.generation += 1;
        } else {
            self.unsynced.push(op.clone());
        }
        apply(&mut self.volatile, op);
    }
}

type Fs = Arc<Mutex<BTreeMap<Vec<u8>, ModelFile>>>;

struct ModelSync {
    fs: Fs,
    path: Vec<u8>,
}

impl SyncFile for ModelSync {
    fn sync(&self) -> std::io::Result<()> {
        // (A sync of a new file makes its name durable too, as on ext4.)
        let mut fs = self.fs.lock().unwrap();
        let file = fs.entry(self.path.clone()).or_default();
        file.durable = file.volatile.clone();
        file.unsynced.clear();
        file.removed = None;
        Ok(())
    }

    fn sync_dir(&self, path: &[u8]) -> std::io::Result<()> {
        assert_eq!(path, &self.path[..]);
        // Every name in the directory is durable as it is now.
        let dir = &path[..path.iter().rposition(|&b| b == b'/').unwrap()];
        for (other, file) in self.fs.lock().unwrap().iter_mut() {
            if other.starts_with(dir) && other[dir.len()] == b'/' {
                file.removed = None;
            }
        }
        Ok(())
    }
}

struct Replay(Fs);

impl ReplayFiles for Replay {
    fn write(&mut self, path: &[u8], offset: u64, data: &[u8]) -> std::io::Result<()> {
        let mut fs = self.0.lock().unwrap();
        let file = fs.entry(path.to_vec()).or_default();
        let op = Op::Write(offset, data.to_vec());
        apply(&mut file.volatile, &op);
        file.unsynced.push(op);
        Ok(())
    }

    fn truncate(&mut self, path: &[u8], size: u64) -> std::io::Result<()> {
        let mut fs = self.0.lock().unwrap();
        let file = fs.entry(path.to_vec()).or_default();
        let op = Op::Truncate(size);
        apply(&mut file.volatile, &op);
        file.unsynced.push(op);
        Ok(())
    }

    fn remove(&mut self, path: &[u8]) -> std::io::Result<()> {
        // Removed and its directory synced.
        self.0.lock().unwrap().insert(path.to_vec(), ModelFile::default());
        Ok(())
    }

    fn sync(&mut self, path: &[u8]) -> std::io::Result<()> {
        ModelSync { fs: self.0.clone(), path: path.to_vec() }.sync()
    }
}

/// The power fails: each file keeps its durable bytes plus, of each change
/// since its last sync, in order, nothing, all, or some pages (the kernel
/// wrote some dirty pages back on its own).
fn power_failure(fs: &Fs, rng: &mut SplitMix64) {
    for file in fs.lock().unwrap().values_mut() {
        // An unlink not made durable: the removed file may be back.
        let (mut disk, unsynced) = match file.removed.take() {
            Some((durable, unsynced)) if rng.chance(1, 2) => (durable, unsynced),
            _ => (file.durable.clone(), file.unsynced.clone()),
        };
        for op in &unsynced {
            match (op, rng.below(3)) {
                (_, 0) => {}
                (Op::Write(offset, data), 1) => {
                    // Some pages of it.
                    for (i, chunk) in data.chunks(PAGE).enumerate() {
                        if rng.chance(1, 2) {
                            apply(&mut disk, &Op::Write(offset + (i * PAGE) as u64, chunk.to_vec()));
                        }
                    }
                }
                (op, _) => apply(&mut disk, op),
            }
        }
        file.volatile = disk.clone();
        file.durable = disk;
        file.unsynced.clear();
    }
}

/// `op` without its data.
fn brief(op: &Op) -> String {
    match op {
        Op::Write(offset, data) => format!("write {} bytes at {offset}", data.len()),
        Op::Truncate(size) => format!("truncate to {size}"),
        Op::Unlink => "unlink".into(),
    }
}

/// The power fails (at the fence the device was armed for, or now): the
/// files keep some of their unsynced changes, and the cache is recovered
/// from the device's image.
fn power_fail_and_recover(
    device: &SimDevice,
    fs: &Fs,
    rng: &mut SplitMix64,
    mode: SimMode,
    context: &str,
) -> (Arc<SimDevice>, Cache, CacheRecovery) {
    device.disarm();
    let image = device.take_crash_image().unwrap_or_else(|| device.crash(rng.next_u64()));
    power_failure(fs, rng);
    let device = Arc::new(SimDevice::from_image(image, mode));
    let pool = Pool::open_simulated(device.clone()).unwrap();
    let (cache, report) =
        Cache::recover(pool, &mut Replay(fs.clone())).unwrap_or_else(|e| panic!("{context}: recovery: {e}"));
    (device, cache, report)
}

fn path(i: u64) -> Vec<u8> {
    format!("/model/file{i}").into_bytes()
}

fn random_op(rng: &mut SplitMix64) -> Op {
    if rng.chance(1, 10) {
        return Op::Unlink;
    }
    if rng.chance(1, 8) {
        return Op::Truncate(rng.below(40_000));
    }
    let len = match rng.below(4) {
        0 => 1 + rng.below(100),
        1 => 1 + rng.below(PAGE as u64),
        2 => PAGE as u64,
        _ => 1 + rng.below(20_000),
    } as usize;
    let mut data = vec![0u8; len];
    rng.fill(&mut data);
    Op::Write(rng.below(40_000), data)
}

/// Runs `op` on file `i` through the cache (applying it to the model's
/// page cache as the real write would).
fn run_op(cache: &Cache, fs: &Fs, i: u64, op: &Op) -> std::io::Result<()> {
    let sync_fs = fs.clone();
    let generation = fs.lock().unwrap().entry(path(i)).or_default().generation;
    let file = cache
        .file((generation, i), std::path::Path::new(std::str::from_utf8(&path(i)).unwrap()), || {
            Arc::new(ModelSync { fs: sync_fs, path: path(i) })
        })
        .expect("a short path");
    let to_model = |op: &Op| fs.lock().unwrap().entry(path(i)).or_default().change(op);
    match op {
        Op::Write(offset, data) => cache
            .write(&file, *offset, data, || {
                to_model(op);
                Ok(data.len())
            })
            .map(|_| ()),
        Op::Truncate(size) => cache.truncate(&file, *size, || {
            to_model(op);
            Ok(())
        }),
        Op::Unlink => cache.unlink(&file, || {
            to_model(op);
            Ok(())
        }),
    }
}

fn contents(fs: &Fs) -> BTreeMap<Vec<u8>, Vec<u8>> {
    fs.lock().unwrap().iter().map(|(p, f)| (p.clone(), f.volatile.clone())).filter(|(_, v)| !v.is_empty()).collect()
}

/// Durable at fsync: what each file must hold after a crash. The state at
/// the last sync that returned, except bytes a later change touched (a
/// write's range; anything past a later truncate's size), which may hold
/// anything those changes could leave.
#[derive(Clone, Default)]
struct SyncedFile {
    content: Vec<u8>,
    touched: Vec<bool>,
    /// The smallest size a change since the sync left.
    floor: usize,
}

impl SyncedFile {
    fn at_sync(content: &[u8]) -> SyncedFile {
        SyncedFile { content: content.to_vec(), touched: vec![false; content.len()], floor: content.len() }
    }

    fn touch(&mut self, op: &Op) {
        match op {
            Op::Write(offset, data) => {
                let end = (*offset as usize + data.len()).min(self.touched.len());
                for t in self.touched.iter_mut().take(end).skip(*offset as usize) {
                    *t = true;
                }
            }
            Op::Truncate(size) => self.floor = self.floor.min(*size as usize),
            Op::Unlink => self.floor = 0,
        }
    }

    /// Panics unless `found` keeps every byte no later change touched.
    fn check(&self, found: &[u8], context: &str) {
        let keep = self.floor.min(self.content.len());
        assert!(found.len() >= keep, "{context}: {} bytes, at least {keep} synced", found.len());
        for p in (0..keep).filter(|&p| !self.touched[p]) {
            assert_eq!(found[p], self.content[p], "{context}: byte {p} synced and untouched since");
        }
    }
}

fn run(seed: u64) {
    let mut rng = SplitMix64::new(seed);
    let mode = if rng.chance(1, 2) { SimMode::CacheLine } else { SimMode::Page };
    let durability = if rng.chance(1, 2) { Durability::Write } else { Durability::Fsync };
    if durability == Durability::Fsync {
        return run_durable_at_fsync(seed, rng, mode);
    }
    let mut device = Arc::new(SimDevice::new(GEOMETRY.file_size(), mode));
    let fs: Fs = Arc::default();
    let pool = Pool::create_simulated(device.clone(), GEOMETRY).unwrap();
    let (mut cache, _) = Cache::recover(pool, &mut Replay(fs.clone())).unwrap();
    cache.set_durability(Durability::Write);
    // What the files must hold: every change that returned.
    let mut acknowledged: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for cycle in 0..3 {
        let context = format!("seed {seed:#x} cycle {cycle} ({mode:?})");
        let mut in_flight = None;
        for _ in 0..1 + rng.below(60) {
            if rng.chance(1, 6) {
                device.crash_at_fence(device.fences() + 1 + rng.below(3), rng.next_u64());
            }
            let i = rng.below(FILES);
            let op = random_op(&mut rng);
            let trace = std::env::var_os("PACKETSTORE_CACHE_TRACE").is_some();
            if rng.chance(1, 5) {
                if trace {
                    eprintln!("{context}: write-back");
                }
                if cache.write_back().is_err() {
                    break;
                }
            }
            if trace {
                eprintln!("{context}: file {i}: {}", brief(&op));
            }
            if run_op(&cache, &fs, i, &op).is_err() {
                in_flight = Some((i, op));
                break;
            }
            apply(acknowledged.entry(i).or_default(), &op);
            if device.is_dead() {
                break;
            }
        }
        let report;
        (device, cache, report) = power_fail_and_recover(&device, &fs, &mut rng, mode, &context);
        cache.set_durability(Durability::Write);
        let found = contents(&fs);
        let expect = |with_in_flight: bool| {
            let mut files = acknowledged.clone();
            if let (true, Some((i, op))) = (with_in_flight, &in_flight) {
                apply(files.entry(*i).or_default(), op);
            }
            files.into_iter().map(|(i, v)| (path(i), v)).filter(|(_, v)| !v.is_empty()).collect::<BTreeMap<_, _>>()
        };
        let (without, with) = (expect(false), expect(true));
        if found != without && found != with {
            for (p, v) in &found {
                let w = without.get(p);
                let first = w.map(|w| v.iter().zip(w.iter()).position(|(a, b)| a != b));
                eprintln!(
                    "{}: found {} bytes, expected {:?} bytes, first difference {:?}",
                    String::from_utf8_lossy(p),
                    v.len(),
                    w.map(|w| w.len()),
                    first
                );
            }
        }
        assert!(
            found == without || found == with,
            "{context}: after recovery ({report:?}) the files are neither the acknowledged state nor it with the \
             change in flight ({:?})",
            in_flight.as_ref().map(|(i, op)| (i, brief(op)))
        );
        if found == with {
            if let Some((i, op)) = in_flight.take() {
                apply(acknowledged.entry(i).or_default(), &op);
            }
        }
        assert_eq!(cache.live_records(), 0, "{context}: recovery releases what it replayed");
    }
}

/// `run` durable at fsync: changes between syncs may be lost or torn;
/// every byte the last sync covered, and no later change touched, stays.
fn run_durable_at_fsync(seed: u64, mut rng: SplitMix64, mode: SimMode) {
    let mut device = Arc::new(SimDevice::new(GEOMETRY.file_size(), mode));
    let fs: Fs = Arc::default();
    let pool = Pool::create_simulated(device.clone(), GEOMETRY).unwrap();
    let (mut cache, _) = Cache::recover(pool, &mut Replay(fs.clone())).unwrap();
    cache.set_durability(Durability::Fsync);
    // What the page cache holds (every change that returned), and what
    // each file must keep after a crash.
    let mut acknowledged: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut synced: BTreeMap<u64, SyncedFile> = BTreeMap::new();
    let (mut syncs, mut checked) = (0, 0);
    for cycle in 0..3 {
        let context = format!("seed {seed:#x} cycle {cycle} ({mode:?}, durable at fsync)");
        for _ in 0..1 + rng.below(60) {
            if rng.chance(1, 6) {
                device.crash_at_fence(device.fences() + 1 + rng.below(3), rng.next_u64());
            }
            let i = rng.below(FILES);
            let op = random_op(&mut rng);
            if rng.chance(1, 5) && cache.write_back().is_err() {
                break;
            }
            // Touched before it runs: in flight, it may be found in part.
            synced.entry(i).or_default().touch(&op);
            if run_op(&cache, &fs, i, &op).is_err() {
                break;
            }
            apply(acknowledged.entry(i).or_default(), &op);
            if rng.chance(1, 3) {
                if cache.sync().is_err() {
                    break;
                }
                syncs += 1;
                for f in 0..FILES {
                    synced.insert(f, SyncedFile::at_sync(acknowledged.get(&f).map_or(&[][..], |v| &v[..])));
                }
            }
            if device.is_dead() {
                break;
            }
        }
        (device, cache, _) = power_fail_and_recover(&device, &fs, &mut rng, mode, &context);
        cache.set_durability(Durability::Fsync);
        let found = contents(&fs);
        for (i, file) in &synced {
            file.check(found.get(&path(*i)).map_or(&[][..], |v| &v[..]), &format!("{context}: file {i}"));
            checked += 1;
        }
        // What survived is the new starting point, synced by recovery.
        acknowledged = (0..FILES).map(|i| (i, found.get(&path(i)).cloned().unwrap_or_default())).collect();
        synced = acknowledged.iter().map(|(i, v)| (*i, SyncedFile::at_sync(v))).collect();
        assert_eq!(cache.live_records(), 0, "{context}: recovery releases what it replayed");
    }
    assert!(checked > 0, "seed {seed:#x}: nothing checked ({syncs} syncs)");
}

#[test]
fn acknowledged_writes_survive_power_failures_whole() {
    if let Ok(seed) = std::env::var("PACKETSTORE_CACHE_SEED") {
        run(u64::from_str_radix(seed.trim_start_matches("0x"), 16).unwrap());
        return;
    }
    let seeds: u64 = std::env::var("PACKETSTORE_CACHE_CRASH_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(600);
    for seed in 0..seeds {
        run(0xcac4e << 20 | seed);
    }
}

/// Threads writing their own regions of shared files through the lanes,
/// write-backs beside them: afterwards, and after a process crash and
/// recovery, every file holds what the model says.
#[test]
fn threads_write_through_their_lanes() {
    let device = Arc::new(SimDevice::new(GEOMETRY.file_size(), SimMode::CacheLine));
    let fs: Fs = Arc::default();
    let pool = Pool::create_simulated(device.clone(), GEOMETRY).unwrap();
    let (cache, _) = Cache::recover(pool, &mut Replay(fs.clone())).unwrap();
    let cache = Arc::new(cache);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer_back = {
        let (cache, stop) = (cache.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                cache.write_back().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (cache, fs) = (cache.clone(), fs.clone());
            std::thread::spawn(move || {
                let mut rng = SplitMix64::new(t);
                let mut mine = BTreeMap::new();
                for n in 0..400u64 {
                    // Thread t owns bytes [t * 8 KiB, (t + 1) * 8 KiB) of each file.
                    let i = rng.below(FILES);
                    let offset = t * 8192 + rng.below(4096);
                    let data = vec![(t * 64 + n % 64) as u8; 1 + rng.below(4096) as usize];
                    run_op(&cache, &fs, i, &Op::Write(offset, data.clone())).unwrap();
                    apply(mine.entry(i).or_insert_with(Vec::new), &Op::Write(offset, data));
                }
                mine
            })
        })
        .collect();
    let models: Vec<BTreeMap<u64, Vec<u8>>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer_back.join().unwrap();
    let check = |fs: &Fs, context: &str| {
        let files = contents(fs);
        for (t, model) in models.iter().enumerate() {
            for (i, bytes) in model {
                let file = &files[&path(*i)];
                let region = t * 8192..(t * 8192 + 8192).min(bytes.len());
                assert_eq!(&file[region.clone()], &bytes[region], "{context}: thread {t}'s bytes of file {i}");
            }
        }
    };
    check(&fs, "in the page cache");
    let stats = cache.stats();
    assert_eq!(stats.writes, 1_600, "{stats:?}");
    assert!(stats.write_backs > 0 && stats.records_released > 0, "{stats:?}");
    // The process dies (the page cache survives, unsynced writes too);
    // recovery replays what was not written back, idempotently.
    let image = device.after_process_crash();
    drop(cache);
    let pool = Pool::open_simulated(Arc::new(image)).unwrap();
    let (cache, _) = Cache::recover(pool, &mut Replay(fs.clone())).unwrap();
    check(&fs, "after recovery");
    assert_eq!(cache.live_records(), 0);
}
