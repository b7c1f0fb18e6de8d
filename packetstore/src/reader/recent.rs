//! The recent-writes table (docs/one-sided-reads.md, "Freshness"): a file
//! in shared memory that the server writes and one-sided readers in other
//! processes map read-only. It says, for the keys written since the tree's
//! last checkpoints, the newest write the server has made durable: the
//! tree key's hash, the tree generation that will first hold it (its
//! batch), and the lsn of its log record.
//!
//! Owns: the file's layout, its creation (server) and opening (reader), the
//! table-wide publish seqlock and the per-bucket seqlocks.
//!
//! Invariants: the table's seq is odd exactly while the server publishes a
//! commit's writes, a bucket's seq exactly while the server writes that
//! bucket. A key's way only ever moves to newer writes. A way is given to
//! another key only by raising the bucket's `evicted` to the batch of the
//! write it forgets, so a reader that finds no way for its key knows the
//! tree holds the key's newest write if `evicted` is at most the tree's
//! generation. The server publishes a write only after the fence that made
//! it durable, and before its reply leaves.
//!
//! ```text
//! header (64 bytes)
//! 0       8         12            16         24        32    40         48        64
//! | magic | version | bucket_count | instance | pool_id | seq | lease_us | reserved |
//! buckets (128 bytes each, bucket_count of them, a power of two)
//! 0     8         16                      40     ...     112        128
//! | seq | evicted | way 0: hash batch lsn | ways 1-3      | reserved |
//! ```

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};

/// How long a buffer a checkpoint stopped referencing stays unreleased:
/// a one-sided read that takes longer retries (the store's read lease,
/// which a new table records).
pub const READ_LEASE: std::time::Duration = std::time::Duration::from_millis(20);

const MAGIC: u64 = u64::from_le_bytes(*b"PSRECENT");
const VERSION: u32 = 2;
const HEADER_SIZE: usize = 64;
const OFF_SEQ: usize = 32;
const OFF_LEASE: usize = 40;
const BUCKET_SIZE: usize = 128;
/// Ways per bucket: the keys of a bucket written since the last
/// checkpoints that the table remembers at once.
pub const WAYS: usize = 4;
const WAY_SIZE: usize = 24;
const OFF_WAYS: usize = 16;
const _: () = assert!(OFF_WAYS + WAYS * WAY_SIZE <= BUCKET_SIZE);
/// Buckets in a table (32 MiB of tmpfs, a million ways): enough that the
/// keys written between two checkpoints rarely overflow one.
pub const BUCKETS_DEFAULT: u32 = 1 << 18;
/// The most buckets a reader accepts from a file (a damaged header must
/// not make it map gigabytes).
pub const BUCKETS_MAX: u32 = 1 << 24;
/// How long a reader waits for a seqlock held by the server (a server
/// stopped in the middle of a publish must not hang its readers).
const SPIN_MAX: u32 = 1 << 16;

/// The 64-bit hash of a tree key that the server and readers agree on
/// (two CRC-32Cs with different seeds: hardware-fast, stable forever).
pub fn key_hash(key: &[u8]) -> u64 {
    let high = crate::util::crc::crc32c_append(0x9e37_79b9, key);
    let low = crate::util::crc::crc32c(key);
    u64::from(high) << 32 | u64::from(low)
}

/// Where the server publishes a pool's table: tmpfs, named by the pool
/// file's device and inode (the same file under any path).
pub fn table_path(pool: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(pool)?;
    Ok(PathBuf::from(format!("/dev/shm/packetstore-{}-{}.recent", meta.dev(), meta.ino())))
}

/// What the table says of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Newest {
    /// Its newest durable write: first in tree generation `batch`, logged
    /// at `lsn`.
    Write { batch: u64, lsn: u64 },
    /// Not remembered: the tree generation `batch` (or any later) holds
    /// its newest durable write (0: every generation).
    InTreeFrom { batch: u64 },
}

/// A seqlock held too long by the server (stopped mid-publish?).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy;

/// A mapped table: the server's (writable) or a reader's (read-only).
pub struct Recent {
    base: *mut u8,
    len: usize,
    bucket_count: u32,
    path: PathBuf,
    writer: bool,
}

// SAFETY: the mapping is shared memory accessed only through atomics.
unsafe impl Send for Recent {}
// SAFETY: as above; every access is an atomic load or store.
unsafe impl Sync for Recent {}

impl Recent {
    /// The server's table for `pool`, created afresh (any older file is
    /// replaced) with the pool's `mode` (0600, or 0640 for group readers),
    /// `instance` (random per start) and `pool_id` (the pool's creation id).
    pub fn create(path: &Path, bucket_count: u32, mode: u32, instance: u64, pool_id: u64) -> io::Result<Recent> {
        Self::create_with_lease(path, bucket_count, mode, instance, pool_id, READ_LEASE)
    }

    /// `create`, naming the read lease the server keeps (readers time
    /// their reads against it).
    pub fn create_with_lease(
        path: &Path,
        bucket_count: u32,
        mode: u32,
        instance: u64,
        pool_id: u64,
        lease: std::time::Duration,
    ) -> io::Result<Recent> {
        assert!(bucket_count.is_power_of_two() && bucket_count <= BUCKETS_MAX, "a bucket count is a power of two");
        let _ = std::fs::remove_file(path);
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(mode).open(path)?;
        // The mode is exact whatever the umask.
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        let len = HEADER_SIZE + bucket_count as usize * BUCKET_SIZE;
        // Allocated now, not at the first publish into each page: a full
        // tmpfs fails the start, never a publish (SIGBUS) between a fence
        // and its replies.
        allocate(&file, len)?;
        let mut table = Self::map(&file, len, true, path)?;
        table.bucket_count = bucket_count;
        table.word(8).store(u64::from(VERSION) | u64::from(bucket_count) << 32, Ordering::Relaxed);
        table.word(16).store(instance, Ordering::Relaxed);
        table.word(24).store(pool_id, Ordering::Relaxed);
        table.word(OFF_LEASE).store(lease.as_micros() as u64, Ordering::Relaxed);
        // The magic last: a reader that sees it sees the rest.
        table.word(0).store(MAGIC, Ordering::Release);
        Ok(table)
    }

    /// A reader's view of the table at `path`, checked: magic, version and
    /// a size that matches its bucket count.
    pub fn open(path: &Path) -> io::Result<Recent> {
        let file = OpenOptions::new().read(true).open(path)?;
        let len = file.metadata()?.len() as usize;
        let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
        if len < HEADER_SIZE {
            return Err(invalid("shorter than its header"));
        }
        let mut table = Self::map(&file, len, false, path)?;
        if table.word(0).load(Ordering::Acquire) != MAGIC {
            return Err(invalid("not a recent-writes table"));
        }
        let word = table.word(8).load(Ordering::Relaxed);
        let (version, bucket_count) = (word as u32, (word >> 32) as u32);
        if version != VERSION {
            return Err(invalid(&format!("version {version}, this build reads {VERSION}")));
        }
        if !bucket_count.is_power_of_two() || bucket_count > BUCKETS_MAX {
            return Err(invalid(&format!("{bucket_count} buckets")));
        }
        if len != HEADER_SIZE + bucket_count as usize * BUCKET_SIZE {
            return Err(invalid("its size does not match its bucket count"));
        }
        table.bucket_count = bucket_count;
        Ok(table)
    }

    fn map(file: &std::fs::File, len: usize, writer: bool, path: &Path) -> io::Result<Recent> {
        use std::os::fd::AsRawFd;
        let protection = if writer { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh shared mapping of `len` bytes of an open file;
        // the result is checked.
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len, protection, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Recent { base: base.cast(), len, bucket_count: 0, path: path.to_path_buf(), writer })
    }

    /// The 8-byte word at `offset` (8-aligned, inside the mapping).
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.len, "a word of the table");
        // SAFETY: in bounds and aligned (the mapping is page-aligned); the
        // mapping lives as long as `self`, and the memory is only ever
        // accessed through atomics, by every process.
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    fn bucket_offset(&self, key_hash: u64) -> usize {
        HEADER_SIZE + (key_hash & u64::from(self.bucket_count - 1)) as usize * BUCKET_SIZE
    }

    /// The server instance that wrote the table (random per start).
    pub fn instance(&self) -> u64 {
        self.word(16).load(Ordering::Relaxed)
    }

    /// The read lease the server keeps: buffers a checkpoint releases are
    /// reused no sooner than this after its meta slot is durable.
    pub fn lease(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.word(OFF_LEASE).load(Ordering::Relaxed))
    }

    /// The pool's id the table is for.
    pub fn pool_id(&self) -> u64 {
        self.word(24).load(Ordering::Relaxed)
    }

    /// Server: the writes of one commit follow (`publish`), until
    /// `end_publish`: readers that overlap them retry.
    pub fn begin_publish(&self) {
        assert!(self.writer, "only the server publishes");
        let seq = self.word(OFF_SEQ);
        let before = seq.load(Ordering::Relaxed);
        debug_assert!(before % 2 == 0, "publishes do not nest");
        seq.store(before + 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Server: the commit's writes are all in the table.
    pub fn end_publish(&self) {
        let seq = self.word(OFF_SEQ);
        seq.store(seq.load(Ordering::Relaxed) + 1, Ordering::Release);
    }

    /// Server: a durable write of the key hashing to `key_hash`, first in
    /// tree generation `batch`, logged at `lsn`. Takes the key's way, or
    /// the way of the oldest write (raising `evicted` to its batch).
    pub fn publish(&self, key_hash: u64, batch: u64, lsn: u64) {
        assert!(self.writer, "only the server publishes");
        let at = self.bucket_offset(key_hash);
        let ways = || (0..WAYS).map(|w| at + OFF_WAYS + w * WAY_SIZE);
        let way = ways().find(|&way| {
            self.word(way).load(Ordering::Relaxed) == key_hash && self.word(way + 8).load(Ordering::Relaxed) != 0
        });
        let way =
            way.unwrap_or_else(|| ways().min_by_key(|&way| self.word(way + 8).load(Ordering::Relaxed)).expect("ways"));
        let forgotten = self.word(way + 8).load(Ordering::Relaxed);
        debug_assert!(self.word(way).load(Ordering::Relaxed) != key_hash || forgotten <= batch, "batches only grow");
        let seq = self.word(at);
        let before = seq.load(Ordering::Relaxed);
        debug_assert!(before % 2 == 0, "one writer");
        seq.store(before + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        if self.word(way).load(Ordering::Relaxed) != key_hash && forgotten > self.word(at + 8).load(Ordering::Relaxed) {
            self.word(at + 8).store(forgotten, Ordering::Relaxed);
        }
        self.word(way).store(key_hash, Ordering::Relaxed);
        self.word(way + 8).store(batch, Ordering::Relaxed);
        self.word(way + 16).store(lsn, Ordering::Relaxed);
        seq.store(before + 2, Ordering::Release);
    }

    /// Reader: the table's publish seq, once no publish is under way: a
    /// read whose buckets were all read between this and an unchanged
    /// `publish_seq` saw whole commits.
    pub fn stable_seq(&self) -> Result<u64, Busy> {
        spin_even(self.word(OFF_SEQ))
    }

    /// Reader: the publish seq now (compare with `stable_seq`'s).
    pub fn publish_seq(&self) -> u64 {
        fence(Ordering::Acquire);
        self.word(OFF_SEQ).load(Ordering::Acquire)
    }

    /// Reader: what the table says of the key hashing to `key_hash`, read
    /// consistently (waiting, bounded, while the server writes its bucket).
    pub fn lookup(&self, key_hash: u64) -> Result<Newest, Busy> {
        let at = self.bucket_offset(key_hash);
        for _ in 0..SPIN_MAX {
            let before = spin_even(self.word(at))?;
            let mut found = None;
            for way in (0..WAYS).map(|w| at + OFF_WAYS + w * WAY_SIZE) {
                let batch = self.word(way + 8).load(Ordering::Relaxed);
                if batch != 0 && self.word(way).load(Ordering::Relaxed) == key_hash {
                    found = Some(Newest::Write { batch, lsn: self.word(way + 16).load(Ordering::Relaxed) });
                }
            }
            let evicted = self.word(at + 8).load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            if self.word(at).load(Ordering::Relaxed) == before {
                return Ok(found.unwrap_or(Newest::InTreeFrom { batch: evicted }));
            }
        }
        Err(Busy)
    }
}

/// Allocates `len` bytes of `file` (tmpfs pages included).
fn allocate(file: &std::fs::File, len: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: an open file descriptor; the call only allocates.
    let error = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    match error {
        0 => Ok(()),
        error => Err(io::Error::from_raw_os_error(error)),
    }
}

/// Waits (bounded) for a seqlock word to be even, and returns it.
fn spin_even(word: &AtomicU64) -> Result<u64, Busy> {
    for _ in 0..SPIN_MAX {
        let seq = word.load(Ordering::Acquire);
        if seq % 2 == 0 {
            return Ok(seq);
        }
        std::hint::spin_loop();
    }
    Err(Busy)
}

impl std::fmt::Debug for Recent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recent").field("path", &self.path).field("buckets", &self.bucket_count).finish()
    }
}

impl Drop for Recent {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
        if self.writer {
            // A stopped server leaves no table: readers then ask it (and
            // find it gone) instead of trusting a stale one.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        PathBuf::from(format!("/dev/shm/packetstore-recent-test-{name}-{}", std::process::id()))
    }

    #[test]
    fn a_reader_sees_what_the_server_published() {
        let path = temp("publish");
        let server = Recent::create(&path, 1 << 4, 0o600, 7, 9).unwrap();
        let reader = Recent::open(&path).unwrap();
        assert_eq!((reader.instance(), reader.pool_id()), (7, 9));
        assert_eq!(reader.lease(), READ_LEASE);
        let hash = key_hash(b"k\0\0\0\0user");
        assert_eq!(reader.lookup(hash), Ok(Newest::InTreeFrom { batch: 0 }), "an empty bucket");
        let seq = reader.stable_seq().unwrap();
        server.begin_publish();
        assert_eq!(reader.stable_seq(), Err(Busy), "a publish under way");
        server.publish(hash, 3, 4096);
        server.end_publish();
        assert_ne!(reader.publish_seq(), seq, "a publish moves the seq");
        assert_eq!(reader.lookup(hash), Ok(Newest::Write { batch: 3, lsn: 4096 }));
        server.begin_publish();
        server.publish(hash, 4, 8192);
        server.end_publish();
        assert_eq!(reader.lookup(hash), Ok(Newest::Write { batch: 4, lsn: 8192 }), "the key keeps its way");
        drop(reader);
        drop(server);
        assert!(!path.exists(), "the server's table goes with it");
    }

    #[test]
    fn a_key_forgotten_raises_the_bucket_s_eviction_batch() {
        let path = temp("evict");
        let server = Recent::create(&path, 1 << 4, 0o600, 1, 1).unwrap();
        let reader = Recent::open(&path).unwrap();
        let hash = key_hash(b"first");
        server.publish(hash, 5, 64);
        // Other keys of the same bucket, newer: the oldest way goes first.
        for i in 1..=WAYS as u64 {
            server.publish(hash + (i << 4), 5 + i, 64 * (i + 1));
        }
        assert_eq!(reader.lookup(hash), Ok(Newest::InTreeFrom { batch: 5 }), "forgotten at batch 5");
        assert_eq!(reader.lookup(hash + (1 << 4)), Ok(Newest::Write { batch: 6, lsn: 128 }));
        // A key never written in the bucket is as undecided as the first.
        assert_eq!(reader.lookup(hash + (99 << 4)), Ok(Newest::InTreeFrom { batch: 5 }));
    }

    #[test]
    fn damaged_tables_are_refused() {
        let path = temp("damaged");
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, vec![0u8; 100]).unwrap();
        assert!(Recent::open(&path).unwrap_err().to_string().contains("not a recent-writes table"));
        let server = Recent::create(&path, 1 << 4, 0o600, 1, 1).unwrap();
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(HEADER_SIZE as u64 + 8).unwrap();
        assert!(Recent::open(&path).unwrap_err().to_string().contains("size"));
        drop(server);
    }

    #[test]
    fn key_hashes_are_stable() {
        // A reader built by another version must agree with the server.
        assert_eq!(key_hash(b""), key_hash(b""));
        assert_ne!(key_hash(b"a"), key_hash(b"b"));
        // Pinned: changing the function breaks readers of running servers.
        assert_eq!(key_hash(b"packetstore"), 0xabd2_9ab3_ab95_7911, "pinned");
    }
}
