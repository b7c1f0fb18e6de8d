//! The recent-writes table (docs/one-sided-reads.md, "Freshness"): a file
//! in shared memory that the server writes and one-sided readers in other
//! processes map read-only. For each bucket of tree-key hashes it names the
//! newest write the server has made durable: the key's hash, the tree
//! generation that will first hold it (its batch), and the lsn of its log
//! record.
//!
//! Owns: the file's layout, its creation (server) and opening (reader), and
//! the per-bucket seqlock.
//!
//! Invariants: a bucket's seq is odd exactly while the server writes it; a
//! reader takes a bucket only if it read the same even seq before and
//! after its fields. The server publishes a write only after the fence
//! that made it durable, and before its reply leaves. Buckets only ever
//! move to newer writes (batch and lsn never decrease for a key).
//!
//! ```text
//! header (64 bytes)
//! 0       8         12            16         24         40        64
//! | magic | version | bucket_count | instance | pool_id  | reserved |
//! buckets (32 bytes each, bucket_count of them, a power of two)
//! 0     8          16      24    32
//! | seq | key_hash | batch | lsn |
//! ```

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering};

const MAGIC: u64 = u64::from_le_bytes(*b"PSRECENT");
const VERSION: u32 = 1;
const HEADER_SIZE: usize = 64;
const BUCKET_SIZE: usize = 32;
/// Buckets in a table (32 MiB of tmpfs): enough that the keys written
/// between two checkpoints rarely share one.
pub const BUCKETS_DEFAULT: u32 = 1 << 20;
/// The most buckets a reader accepts from a file (a damaged header must
/// not make it map gigabytes).
pub const BUCKETS_MAX: u32 = 1 << 26;

/// The 64-bit hash of a tree key that the server and readers agree on
/// (two CRC-32Cs with different seeds: hardware-fast, stable forever).
pub fn key_hash(key: &[u8]) -> u64 {
    let high = crc32c::crc32c_append(0x9e37_79b9, key);
    let low = crc32c::crc32c(key);
    u64::from(high) << 32 | u64::from(low)
}

/// Where the server publishes a pool's table: tmpfs, named by the pool
/// file's device and inode (the same file under any path).
pub fn table_path(pool: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(pool)?;
    Ok(PathBuf::from(format!("/dev/shm/packetstore-{}-{}.recent", meta.dev(), meta.ino())))
}

/// What a bucket says about a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub key_hash: u64,
    pub batch: u64,
    pub lsn: u64,
}

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
        assert!(bucket_count.is_power_of_two() && bucket_count <= BUCKETS_MAX, "a bucket count is a power of two");
        let _ = std::fs::remove_file(path);
        let file = OpenOptions::new().read(true).write(true).create_new(true).mode(mode).open(path)?;
        // The mode is exact whatever the umask.
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        let len = HEADER_SIZE + bucket_count as usize * BUCKET_SIZE;
        file.set_len(len as u64)?;
        let mut table = Self::map(&file, len, true, path)?;
        table.bucket_count = bucket_count;
        table.word(8).store(u64::from(VERSION) | u64::from(bucket_count) << 32, Ordering::Relaxed);
        table.word(16).store(instance, Ordering::Relaxed);
        table.word(24).store(pool_id, Ordering::Relaxed);
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

    /// The pool's id the table is for.
    pub fn pool_id(&self) -> u64 {
        self.word(24).load(Ordering::Relaxed)
    }

    /// Server: a durable write of the key hashing to `key_hash`, first in
    /// tree generation `batch`, logged at `lsn`.
    pub fn publish(&self, key_hash: u64, batch: u64, lsn: u64) {
        assert!(self.writer, "only the server publishes");
        let at = self.bucket_offset(key_hash);
        let seq = self.word(at);
        let before = seq.load(Ordering::Relaxed);
        debug_assert!(before % 2 == 0, "one writer");
        seq.store(before + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        self.word(at + 8).store(key_hash, Ordering::Relaxed);
        self.word(at + 16).store(batch, Ordering::Relaxed);
        self.word(at + 24).store(lsn, Ordering::Relaxed);
        seq.store(before + 2, Ordering::Release);
    }

    /// Reader: the bucket of `key_hash`, read consistently (retrying while
    /// the server writes it), with its seq (to check later that it has not
    /// moved). An empty bucket has batch 0.
    pub fn lookup(&self, key_hash: u64) -> (Bucket, u64) {
        let at = self.bucket_offset(key_hash);
        loop {
            let before = self.word(at).load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let bucket = Bucket {
                key_hash: self.word(at + 8).load(Ordering::Relaxed),
                batch: self.word(at + 16).load(Ordering::Relaxed),
                lsn: self.word(at + 24).load(Ordering::Relaxed),
            };
            fence(Ordering::Acquire);
            if self.word(at).load(Ordering::Relaxed) == before {
                return (bucket, before);
            }
        }
    }

    /// Reader: whether the bucket of `key_hash` still has seq `seq`.
    pub fn unchanged(&self, key_hash: u64, seq: u64) -> bool {
        fence(Ordering::Acquire);
        self.word(self.bucket_offset(key_hash)).load(Ordering::Acquire) == seq
    }
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
        let hash = key_hash(b"k\0\0\0\0user");
        let (empty, seq) = reader.lookup(hash);
        assert_eq!(empty.batch, 0, "an empty bucket");
        server.publish(hash, 3, 4096);
        assert!(!reader.unchanged(hash, seq), "a publish moves the seq");
        let (bucket, _) = reader.lookup(hash);
        assert_eq!(bucket, Bucket { key_hash: hash, batch: 3, lsn: 4096 });
        // Another key of the same bucket takes it over.
        let other = hash + (1 << 4);
        server.publish(other, 3, 8192);
        assert_eq!(reader.lookup(hash).0.key_hash, other);
        drop(reader);
        drop(server);
        assert!(!path.exists(), "the server's table goes with it");
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
