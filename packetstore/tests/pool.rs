//! Goal: the pool file behaves as `docs/format.md` promises on real files.
//!
//! Method: create and reopen pools on tmpfs (/dev/shm) and on the disk
//! (the system temp dir), check permissions, locking, domain detection,
//! and that every kind of damage (truncation, flipped bits in the header,
//! the log and the buffers) gives a clear error or a correct recovery,
//! never a panic. Property: open/append/commit/close cycles keep every
//! committed record.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use packetstore::util::rng::SplitMix64;
use packetstore::{Buffers, Domain, Extent, Geometry, Log, LogError, PersistOptions, Pool, PoolError};
use proptest::prelude::*;

const GEOMETRY: Geometry = Geometry { buffer_size: 2048, buffer_count: 256, log_size: 64 * 1024, log_count: 1 };

struct TempDir(PathBuf);

impl TempDir {
    fn new(root: &str, name: &str) -> TempDir {
        let dir = Path::new(root).join(format!("packetstore-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn disk_dir() -> String {
    // target/ lives on the project's disk, an ordinary (page-cache) file system.
    concat!(env!("CARGO_MANIFEST_DIR"), "/../target").to_string()
}

/// Appends one record of `data` (in fresh buffers) and commits.
fn append_committed(pool: &Pool, buffers: &mut Buffers, log: &mut Log, key: &[u8], data: &[u8]) -> u64 {
    let mut extents = Vec::new();
    buffers.copy_in(pool, data, &mut extents).unwrap();
    let lsn = log.append(pool, buffers, 1, 0, key, &extents).unwrap();
    buffers.release_extents(&extents).unwrap();
    log.commit(pool, buffers).unwrap();
    lsn
}

fn records(pool: &Pool, log: &Log) -> Vec<(Vec<u8>, Vec<u8>)> {
    log.live_lsns()
        .map(|lsn| {
            let view = log.view(pool, lsn).unwrap();
            let data = log.read_data(pool, &view);
            (view.key, data)
        })
        .collect()
}

#[test]
fn created_0600_and_reopens_to_the_same_buffers() {
    for root in ["/dev/shm", &disk_dir()] {
        let dir = TempDir::new(root, "create");
        let path = dir.path("a.pool");
        {
            let pool = Pool::create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{root}: pool created with mode {mode:o}");
            let mut buffers = Buffers::new(GEOMETRY.buffer_count);
            let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
            append_committed(&pool, &mut buffers, &mut log, b"k", &[42u8; 5000]);
        }
        let pool = Pool::open(&path, &PersistOptions::default()).unwrap();
        assert_eq!(pool.geometry(), GEOMETRY);
        let mut buffers = Buffers::new(GEOMETRY.buffer_count);
        let (log, report) = Log::recover(&pool, &mut buffers).unwrap();
        assert_eq!(report.live_records, 1);
        assert_eq!(records(&pool, &log), vec![(b"k".to_vec(), vec![42u8; 5000])]);
        assert!(matches!(Pool::create(&path, GEOMETRY, &PersistOptions::default()), Err(PoolError::Exists { .. })));
        let leftovers: Vec<_> = std::fs::read_dir(&dir.0).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers.len(), 1, "temporary files left behind: {leftovers:?}");
    }
}

#[test]
fn detects_the_domain_from_the_file() {
    let shm = TempDir::new("/dev/shm", "domain");
    let pool = Pool::create(&shm.path("p"), GEOMETRY, &PersistOptions::default()).unwrap();
    assert_eq!(pool.domain().domain, Domain::CacheLine);
    assert!(!pool.domain().durable, "tmpfs must be labelled as emulation");
    assert!(pool.domain().to_string().contains("EMULATED: not durable across power loss"), "{}", pool.domain());

    let disk = TempDir::new(&disk_dir(), "domain");
    let pool = Pool::create(&disk.path("p"), GEOMETRY, &PersistOptions::default()).unwrap();
    assert_eq!(pool.domain().domain, Domain::Page, "an ordinary file is the page domain: {}", pool.domain());
    assert!(pool.domain().durable);
    drop(pool);
    let forced = PersistOptions { domain: Some(Domain::CacheLine), ..Default::default() };
    let pool = Pool::open(&disk.path("p"), &forced).unwrap();
    assert_eq!(pool.domain().domain, Domain::CacheLine);
    assert!(!pool.domain().durable, "cache-line flushes of a page-cache file are not durable");
    drop(pool);
    let none = PersistOptions { domain: Some(Domain::None), ..Default::default() };
    let pool = Pool::open(&disk.path("p"), &none).unwrap();
    assert!(pool.domain().to_string().contains("NONE"), "{}", pool.domain());
}

#[test]
fn every_domain_commits_and_recovers() {
    use packetstore::PageSync;
    let dir = TempDir::new(&disk_dir(), "domains");
    let options = [
        PersistOptions { domain: Some(Domain::Page), page_sync: PageSync::Fdatasync, ..Default::default() },
        PersistOptions { domain: Some(Domain::Page), page_sync: PageSync::Msync, ..Default::default() },
        PersistOptions { domain: Some(Domain::CacheLine), fence_latency_ns: 10_000, ..Default::default() },
        PersistOptions { domain: Some(Domain::Byte), ..Default::default() },
        PersistOptions { domain: Some(Domain::None), ..Default::default() },
    ];
    for (i, option) in options.iter().enumerate() {
        let path = dir.path(&format!("p{i}"));
        {
            let pool = Pool::create(&path, GEOMETRY, option).unwrap();
            let mut buffers = Buffers::new(GEOMETRY.buffer_count);
            let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
            append_committed(&pool, &mut buffers, &mut log, b"x", b"hello");
            let fences = pool.stats().fences.load(std::sync::atomic::Ordering::Relaxed);
            assert!(fences >= 3, "{}: {fences} fences", pool.domain());
            if option.fence_latency_ns > 0 {
                let max = pool.stats().fence_ns_max.load(std::sync::atomic::Ordering::Relaxed);
                assert!(max >= option.fence_latency_ns, "emulated latency not applied: {max} ns");
            }
        }
        let pool = Pool::open(&path, option).unwrap();
        let mut buffers = Buffers::new(GEOMETRY.buffer_count);
        let (log, _) = Log::recover(&pool, &mut buffers).unwrap();
        assert_eq!(records(&pool, &log), vec![(b"x".to_vec(), b"hello".to_vec())], "{}", pool.domain());
    }
}

#[test]
fn a_second_opener_is_refused() {
    let dir = TempDir::new("/dev/shm", "lock");
    let path = dir.path("p");
    let pool = Pool::create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
    match Pool::open(&path, &PersistOptions::default()) {
        Err(PoolError::Locked { .. }) => {}
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("a second opener in the same process got the pool"),
    }
    // Another process learns our pid: flock(1) cannot take the OFD lock
    // range semantics, so use a tiny shell-free child: ourselves.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_probe_child", "--nocapture", "--test-threads", "1"])
        .env("PACKETSTORE_LOCK_PROBE", &path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains(&format!("locked by another opener (pid {})", std::process::id())), "child said: {text}");
    drop(pool);
    Pool::open(&path, &PersistOptions::default()).expect("the lock is released on drop");
}

/// A killed server's lock can outlive its pid: the kernel finishes the
/// dead process's io_uring requests (an fdatasync of the pool) in a worker
/// after the process is reaped. An opener that finds the recorded holder
/// gone waits for the lock instead of refusing a restart.
#[test]
fn a_lock_whose_holder_is_gone_is_waited_for() {
    use std::os::unix::fs::FileExt;
    let dir = TempDir::new("/dev/shm", "lock-dead");
    let path = dir.path("p");
    let pool = Pool::create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id() as i32;
    child.wait().unwrap();
    // The holder pid field of the header page (docs/format.md, offset 256).
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&dead_pid.to_le_bytes(), 256).unwrap();
    let started = std::time::Instant::now();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(pool);
    });
    Pool::open(&path, &PersistOptions::default()).expect("the opener waits for a dead holder's lock");
    assert!(started.elapsed() >= std::time::Duration::from_millis(250), "opened while the lock was still held");
    release.join().unwrap();
}

/// A creator killed part-way leaves `NAME.creating-PID`; the next create
/// or open of NAME removes it, and never a creation still in progress:
/// one whose creator holds its creation lock, or (in the instant before the
/// creator takes it) whose PID runs a process that started before the
/// file was written.
#[test]
fn stale_creations_are_removed_and_live_ones_kept() {
    use packetstore::pool::file::CREATION_LOCK_BYTE;
    use std::os::fd::AsRawFd;
    let dir = TempDir::new("/dev/shm", "creating");
    let path = dir.path("a.pool");
    let dead_pid = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    assert!(!Path::new(&format!("/proc/{dead_pid}")).exists(), "pid {dead_pid} was reused at once");
    let mut live = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let live_pid = live.id();
    let creating = |pid: String| dir.path(&format!("a.pool.creating-{pid}"));
    let make = |file: &Path| std::fs::File::create(file).unwrap();
    let held = |file: &std::fs::File| {
        // The lock a creator holds while it builds the pool (an OFD lock,
        // which conflicts with any other open of the file, even ours).
        // SAFETY: struct flock is plain data; all-zero is valid.
        let mut request: libc::flock = unsafe { std::mem::zeroed() };
        request.l_type = libc::F_WRLCK as i16;
        request.l_whence = libc::SEEK_SET as i16;
        request.l_start = CREATION_LOCK_BYTE;
        request.l_len = 1;
        // SAFETY: an open descriptor and a valid struct flock.
        assert_eq!(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &request) }, 0);
    };
    let stale_dead = creating(dead_pid.to_string());
    make(&stale_dead);
    // A live PID that started after the file was last written: reused.
    let stale_reused = creating(live_pid.to_string());
    make(&stale_reused).set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).unwrap();
    // A creation in progress (its creator holds the lock; this test holds
    // it for a sleeping process), and one in another PID namespace (its
    // PID is dead here, but its lock is held).
    let mut creator = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    let ours = creating(creator.id().to_string());
    let ours_file = make(&ours);
    held(&ours_file);
    let elsewhere = creating((dead_pid + 1_000_000).to_string());
    let elsewhere_file = make(&elsewhere);
    held(&elsewhere_file);
    let others = [dir.path(&format!("b.pool.creating-{dead_pid}")), dir.path("a.pool.creating-x")];
    for other in &others {
        make(other);
    }
    let pool = Pool::create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
    assert!(!stale_dead.exists(), "a dead creator's file is left");
    assert!(!stale_reused.exists(), "a file older than the process now holding its PID is left");
    assert!(ours.exists() && elsewhere.exists(), "a locked creation was removed");
    for other in &others {
        assert!(other.exists(), "{} is not this pool's creation", other.display());
    }
    // The pool exists: an open removes the leftovers too.
    drop(pool);
    make(&stale_dead);
    let fresh_live = creating(live_pid.to_string());
    make(&fresh_live);
    let _pool = Pool::open(&path, &PersistOptions::default()).unwrap();
    assert!(!stale_dead.exists(), "an open left a dead creator's file");
    assert!(fresh_live.exists(), "a creation between its open and its lock (a live PID, written since) was removed");
    assert!(ours.exists() && elsewhere.exists(), "an open removed a locked creation");
    for child in [&mut live, &mut creator] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// Run by `a_second_opener_is_refused` in a child process; as a test of its
/// own it checks that opening a pool that does not exist is a clear error.
#[test]
fn lock_probe_child() {
    match std::env::var_os("PACKETSTORE_LOCK_PROBE") {
        Some(path) => match Pool::open(Path::new(&path), &PersistOptions::default()) {
            Err(error) => println!("child: {error}"),
            Ok(_) => println!("child: opened a locked pool"),
        },
        None => {
            let error = Pool::open(Path::new("/nonexistent/pool"), &PersistOptions::default()).err().unwrap();
            assert!(error.to_string().contains("/nonexistent/pool"), "{error}");
        }
    }
}

#[test]
fn damaged_files_are_refused_or_recovered_never_a_panic() {
    let dir = TempDir::new("/dev/shm", "damage");
    let pristine = dir.path("pristine");
    {
        let pool = Pool::create(&pristine, GEOMETRY, &PersistOptions::default()).unwrap();
        let mut buffers = Buffers::new(GEOMETRY.buffer_count);
        let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
        for i in 0..20u8 {
            append_committed(&pool, &mut buffers, &mut log, &[i], &vec![i; 100 + 300 * i as usize]);
        }
        log.checkpoint(&pool, &mut buffers).unwrap();
    }
    let bytes = std::fs::read(&pristine).unwrap();
    let damaged = dir.path("damaged");
    type Records = Vec<(Vec<u8>, Vec<u8>)>;
    let attempt = |image: &[u8]| -> Result<Records, String> {
        let _ = std::fs::remove_file(&damaged);
        std::fs::write(&damaged, image).unwrap();
        let pool = Pool::open(&damaged, &PersistOptions::default()).map_err(|e| e.to_string())?;
        let mut buffers = Buffers::new(pool.geometry().buffer_count);
        let (log, _) = Log::recover(&pool, &mut buffers).map_err(|e| e.to_string())?;
        Ok(records(&pool, &log))
    };
    let good = attempt(&bytes).unwrap();
    assert_eq!(good.len(), 20);

    // Truncation anywhere: refused with the sizes.
    for len in [0, 7, 100, 4096, bytes.len() / 2, bytes.len() - 1] {
        let error = attempt(&bytes[..len]).unwrap_err();
        assert!(error.contains("truncated") || error.contains("not a packetstore pool"), "len {len}: {error}");
    }
    let mut extended = bytes.clone();
    extended.extend_from_slice(&[0; 4096]);
    assert!(attempt(&extended).unwrap_err().contains("truncated or extended"));

    // Any flipped bit of the header: refused.
    let mut rng = SplitMix64::new(11);
    for bit in 0..128 * 8 {
        let mut image = bytes.clone();
        image[bit / 8] ^= 1 << (bit % 8);
        let error = attempt(&image).unwrap_err();
        assert!(!error.is_empty());
    }
    // Flipped bits in the log and the buffers: an error naming corruption,
    // or a recovery with every record byte-exact (the flip hit unused or
    // released space). After a checkpoint no batch is in doubt, so even a
    // flip in the last record must be reported, never silently dropped.
    let log_region = 4096..4096 + GEOMETRY.log_size as usize;
    let used_log = 4096 + 64..4096 + 64 + 20 * 128;
    let buffer_region = GEOMETRY.buffers_offset() as usize..bytes.len();
    let (mut harmless, mut corrupt) = (0, 0);
    for round in 0..600 {
        let region = match round % 3 {
            0 => log_region.clone(),
            1 => used_log.clone(),
            _ => buffer_region.clone(),
        };
        let at = region.start + rng.below((region.end - region.start) as u64) as usize;
        let mut image = bytes.clone();
        image[at] ^= 1 << rng.below(8);
        match attempt(&image) {
            Ok(found) => {
                for record in &found {
                    assert!(good.contains(record), "flip at {at}: a record came back altered");
                }
                let lost = good.len() - found.len();
                assert_eq!(lost, 0, "flip at {at}: {lost} records silently dropped");
                harmless += 1;
            }
            Err(error) => {
                assert!(error.contains("corrupt"), "flip at {at}: unclear error {error}");
                corrupt += 1;
            }
        }
    }
    eprintln!("bit flips: {harmless} harmless, {corrupt} reported corrupt");
    assert!(corrupt > 0, "no flip was ever detected: the test is not reaching the records");
}

#[test]
fn full_log_and_full_pool_are_clear_errors() {
    let dir = TempDir::new("/dev/shm", "full");
    let geometry = Geometry { buffer_size: 512, buffer_count: 16, log_size: 16 * 1024, log_count: 1 };
    let pool = Pool::create(&dir.path("p"), geometry, &PersistOptions::default()).unwrap();
    let mut buffers = Buffers::new(geometry.buffer_count);
    let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
    let buffer = buffers.allocate().unwrap();
    pool.write(pool.buffer_offset(buffer), &[1; 8]);
    let key = [7u8; 400];
    let mut appended = 0;
    let error = loop {
        match log.append(&pool, &mut buffers, 1, 0, &key, &[Extent::new(buffer, 0, 8)]) {
            Ok(_) => appended += 1,
            Err(error) => break error,
        }
        log.commit(&pool, &mut buffers).unwrap();
    };
    assert!(matches!(error, LogError::LogFull { .. }), "{error}");
    assert!(appended > 10);
    assert_eq!(buffers.refs(buffer) as usize, appended + 1, "each record holds a reference");
    for _ in 0..15 {
        buffers.allocate().unwrap();
    }
    assert!(buffers.allocate().unwrap_err().to_string().contains("pool full"));
    // Errors do not poison the log: release, commit, and appending works.
    let oldest = log.live_lsns().next().unwrap();
    log.release(&pool, oldest).unwrap();
    assert!(
        matches!(
            log.append(&pool, &mut buffers, 1, 0, &key, &[Extent::new(buffer, 0, 8)]),
            Err(LogError::LogFull { .. })
        ),
        "space is reusable only after the release commits"
    );
    log.commit(&pool, &mut buffers).unwrap();
    log.append(&pool, &mut buffers, 1, 0, &key, &[Extent::new(buffer, 0, 8)]).unwrap();
    // Invalid input is refused without side effects.
    assert!(log.append(&pool, &mut buffers, 0, 0, b"", &[]).is_err());
    assert!(log.append(&pool, &mut buffers, 1, 0, &[0; 513], &[]).is_err());
    assert!(log.append(&pool, &mut buffers, 1, 0, b"", &[Extent::new(99, 0, 1)]).is_err());
    assert!(log.append(&pool, &mut buffers, 1, 0, b"", &[Extent::new(buffer, 500, 100)]).is_err());
    assert!(log.release(&pool, 12345).is_err());
}

#[test]
fn geometry_mismatch_is_refused() {
    let dir = TempDir::new("/dev/shm", "geometry");
    let path = dir.path("p");
    drop(Pool::open_or_create(&path, GEOMETRY, &PersistOptions::default()).unwrap());
    let other = Geometry { buffer_count: 512, ..GEOMETRY };
    let error = Pool::open_or_create(&path, other, &PersistOptions::default()).err().unwrap();
    assert!(matches!(error, PoolError::GeometryMismatch { .. }), "{error}");
}

#[test]
fn a_64_gib_sparse_pool_opens() {
    let dir = TempDir::new(&disk_dir(), "big");
    let geometry = Geometry::for_file_size(64 << 30, 2048, 64 << 20).unwrap();
    let sparse = PersistOptions { sparse: true, ..PersistOptions::default() };
    let pool = Pool::create(&dir.path("big"), geometry, &sparse).unwrap();
    assert!(pool.len() > 63 << 30);
    let mut buffers = Buffers::new(geometry.buffer_count);
    let (mut log, report) = Log::recover(&pool, &mut buffers).unwrap();
    assert_eq!(report.live_records, 0);
    let last = geometry.buffer_count - 1;
    buffers.retain(last).unwrap();
    pool.write(pool.buffer_offset(last), b"far away");
    log.append(&pool, &mut buffers, 1, 0, b"", &[Extent::new(last, 0, 8)]).unwrap();
    log.commit(&pool, &mut buffers).unwrap();
    use std::os::unix::fs::MetadataExt;
    let allocated = std::fs::metadata(dir.path("big")).unwrap().blocks() * 512;
    assert!(allocated < 64 << 20, "a 64 GiB pool allocated {allocated} bytes");
}

/// (unwritten extents, all extents) of `path`, from FIEMAP.
fn extent_counts(path: &Path) -> (usize, usize) {
    use std::os::fd::AsRawFd;
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
    const FIEMAP_EXTENT_LAST: u32 = 0x1;
    const EXTENTS: usize = 256;
    // struct fiemap (32 bytes) then struct fiemap_extent[EXTENTS] (56 each).
    #[repr(C)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        extents: [[u64; 7]; EXTENTS],
    }
    let file = std::fs::File::open(path).unwrap();
    let (mut unwritten, mut all, mut start) = (0, 0, 0u64);
    loop {
        let mut map = Fiemap {
            start,
            length: u64::MAX,
            flags: 0,
            mapped_extents: 0,
            extent_count: EXTENTS as u32,
            reserved: 0,
            extents: [[0; 7]; EXTENTS],
        };
        // SAFETY: `map` is a struct fiemap with room for `extent_count`
        // extents, as the ioctl expects; the fd is open.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut map as *mut Fiemap) };
        assert_eq!(rc, 0, "FIEMAP on {}: {}", path.display(), std::io::Error::last_os_error());
        let mapped = &map.extents[..map.mapped_extents as usize];
        for extent in mapped {
            let flags = extent[5] as u32;
            all += 1;
            unwritten += usize::from(flags & FIEMAP_EXTENT_UNWRITTEN != 0);
        }
        match mapped.last() {
            Some(last) if last[5] as u32 & FIEMAP_EXTENT_LAST == 0 => start = last[0] + last[2],
            _ => return (unwritten, all),
        }
    }
}

/// Pages of `path` in the page cache, from mincore over a read-only map.
fn cached_pages(path: &Path) -> (usize, usize) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    // SAFETY: a fresh read-only mapping of the whole file, unmapped below.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    assert_ne!(base, libc::MAP_FAILED);
    let mut resident = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `base` maps `len` bytes; `resident` has one byte per page.
    assert_eq!(unsafe { libc::mincore(base, len, resident.as_mut_ptr()) }, 0);
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(base, len) };
    (resident.iter().filter(|&&r| r & 1 != 0).count(), resident.len())
}

#[test]
fn a_disk_pool_is_zero_filled_at_creation() {
    let dir = TempDir::new(&disk_dir(), "zero-fill");
    let geometry = Geometry::for_file_size(32 << 20, 2048, 1 << 20).unwrap();
    let filled = dir.path("filled");
    drop(Pool::create(&filled, geometry, &PersistOptions::default()).unwrap());
    let (unwritten, all) = extent_counts(&filled);
    assert!(all > 0);
    assert_eq!(unwritten, 0, "{unwritten} of {all} extents are unwritten: syncs would commit the journal");
    let (cached, pages) = cached_pages(&filled);
    assert!(cached * 10 >= pages * 9, "only {cached} of {pages} pages are in the page cache");
    let pool = Pool::open(&filled, &PersistOptions::default()).unwrap();
    let mut last = [1u8; 2048];
    pool.read(pool.buffer_offset(geometry.buffer_count - 1), &mut last);
    assert!(last.iter().all(|&b| b == 0), "a fresh pool's buffers read as zeros");
    drop(pool);

    // The control: reserving alone leaves unwritten extents, so the test
    // above would see them if creation did not write the pool.
    let reserved = dir.path("reserved");
    let options = PersistOptions { zero_fill: false, ..PersistOptions::default() };
    drop(Pool::create(&reserved, geometry, &options).unwrap());
    let (unwritten, _) = extent_counts(&reserved);
    assert!(unwritten > 0, "a reserved pool has unwritten extents");
}

/// A tmpfs mounted with `huge` on a fresh directory; unmounted on drop.
/// Needs root, as the disk-full test's loop mount does.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(name: &str, huge: &str) -> Tmpfs {
        let dir = Path::new(&disk_dir()).join(format!("packetstore-test-tmpfs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size=64m,huge={huge}"), "tmpfs"])
            .arg(&dir)
            .status()
            .expect("mount (this test needs root)");
        assert!(status.success(), "mount -t tmpfs -o huge={huge} failed (this test needs root)");
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Bytes of the mapping that contains `address` mapped by 2 MiB pages
/// (`ShmemPmdMapped` or `FilePmdMapped` in /proc/self/smaps).
fn pmd_mapped_bytes(address: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut bytes = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-').filter(|(s, _)| !s.ends_with(':')) {
            if let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) {
                inside = (start..end).contains(&address);
                continue;
            }
        }
        if inside && (line.starts_with("ShmemPmdMapped:") || line.starts_with("FilePmdMapped:")) {
            bytes += line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024;
        }
    }
    bytes
}

#[test]
fn a_tmpfs_pool_asks_for_huge_pages_and_says_whether_it_got_them() {
    let geometry = Geometry::for_file_size(16 << 20, 2048, 1 << 20).unwrap();
    let touch = |pool: &Pool| {
        for i in (0..geometry.buffer_count).step_by(2) {
            pool.write(pool.buffer_offset(i), b"x");
        }
    };
    // huge=within_size: the reservation allocates 2 MiB pages, and the
    // mapping must not refuse them (MADV_NOHUGEPAGE is for page-cache files).
    let within = Tmpfs::mount("within", "within_size");
    let pool = Pool::create(&within.0.join("pool"), geometry, &PersistOptions::default()).unwrap();
    assert_eq!(pool.domain().tmpfs_huge_pages, Some(true));
    touch(&pool);
    let huge = pmd_mapped_bytes(pool.address(0) as usize);
    assert!(huge >= 4 << 20, "only {huge} bytes of the pool are mapped with 2 MiB pages");
    drop(pool);

    // huge=advise: the reservation (no mapping yet) allocates 4 KiB pages.
    let advise = Tmpfs::mount("advise", "advise");
    let pool = Pool::create(&advise.0.join("pool"), geometry, &PersistOptions::default()).unwrap();
    assert_eq!(pool.domain().tmpfs_huge_pages, Some(false), "the banner's note must show");
    touch(&pool);
    assert_eq!(pmd_mapped_bytes(pool.address(0) as usize), 0);

    let dir = TempDir::new(&disk_dir(), "not-tmpfs");
    let pool = Pool::create(&dir.path("pool"), geometry, &PersistOptions::default()).unwrap();
    assert_eq!(pool.domain().tmpfs_huge_pages, None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn open_close_cycles_keep_every_committed_record(
        cycles in proptest::collection::vec(proptest::collection::vec((0usize..6000, any::<bool>()), 0..8), 1..6),
    ) {
        let dir = TempDir::new("/dev/shm", "cycles");
        let path = dir.path("p");
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut counter = 0u32;
        for ops in cycles {
            let pool = Pool::open_or_create(&path, GEOMETRY, &PersistOptions::default()).unwrap();
            let mut buffers = Buffers::new(GEOMETRY.buffer_count);
            let (mut log, _) = Log::recover(&pool, &mut buffers).unwrap();
            prop_assert_eq!(&records(&pool, &log), &model);
            for (len, release_first) in ops {
                if release_first && !model.is_empty() {
                    let lsn = log.live_lsns().next().unwrap();
                    log.release(&pool, lsn).unwrap();
                    log.commit(&pool, &mut buffers).unwrap();
                    model.remove(0);
                }
                counter += 1;
                let data: Vec<u8> = (0..len.max(1)).map(|i| (i as u32 ^ counter) as u8).collect();
                if buffers.free_count() as usize * 2048 < data.len() + 4096 {
                    continue;
                }
                append_committed(&pool, &mut buffers, &mut log, &counter.to_le_bytes(), &data);
                model.push((counter.to_le_bytes().to_vec(), data));
            }
        }
    }
}
