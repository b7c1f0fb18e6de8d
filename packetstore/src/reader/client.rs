//! `Reader`: one-sided GET and HGET for a process on the server's machine
//! (docs/one-sided-reads.md). A read maps nothing and calls nothing: it
//! copies from the pool the server maps, proves what it copied (the
//! recent-writes table's seqlocks, the lease, CRCs), and retries a bounded
//! number of times before it asks the server over RESP (the hybrid read).
//!
//! Owns: the mapped pool, the mapped table (reopened when the server
//! restarts), the fallback connection, and the reader's counters.
//!
//! Invariant: an answer is returned only if, for every tree key it read,
//! the table was unchanged (no publish) from before its first key to after
//! its last, the server instance named in the pool equals the table's
//! before and after, and less than the read lease passed since it began:
//! so every byte came from one moment's durable state, none of it from a
//! reused buffer.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::index::tree::MetaSlot;
use crate::pool::file::HDR_READER_INSTANCE;
use crate::reader::fallback::{Fallback, Reply};
use crate::reader::mapped::Mapped;
use crate::reader::recent::{key_hash, table_path, Newest, Recent};
use crate::reader::walk::{newest_version, Miss, Walk};
use crate::store::keyspace::{
    db_entry_key, element_key, expire_key, meta_key, string_key, KeyType, Meta, DATABASES, NS_EXPIRE, SPACE_MAIN,
};

/// Tries before a read falls back to the server.
pub const TRIES_DEFAULT: u32 = 8;
/// A read retries once the server's read lease (its table says how long)
/// less this margin has passed since it began.
const LEASE_MARGIN: Duration = Duration::from_millis(2);
/// How often a reader checks that the pool file at its path is still the
/// one it mapped (a pool deleted and created again under a killed server).
pub const IDENTITY_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// How a reader reads.
#[derive(Clone, Debug)]
pub struct ReaderOptions {
    /// The server's Redis address for fallbacks (`host:port`); None: a
    /// read that cannot be proved is an error.
    pub server: Option<String>,
    pub password: Option<String>,
    /// Tries of a one-sided read before the fallback.
    pub tries: u32,
    /// Skip the recent-writes table: answer from the last checkpoint
    /// (stale by at most the server's checkpoint interval and one
    /// checkpoint's duration).
    pub bounded_staleness: bool,
    /// Tests: every one-sided read fails its validation.
    pub force_fallback: bool,
    /// Tests: sleep this long between finding a value in the tree and
    /// copying it (a reader preempted mid-read).
    pub mid_read_pause: Duration,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            server: None,
            password: None,
            tries: TRIES_DEFAULT,
            bounded_staleness: false,
            force_fallback: false,
            mid_read_pause: Duration::ZERO,
        }
    }
}

/// What a reader did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReaderStats {
    /// Reads answered from the pool.
    pub one_sided: u64,
    /// Of those, values read from a log record (written since the last
    /// checkpoint).
    pub from_log: u64,
    /// One-sided tries that failed and were tried again.
    pub retries: u64,
    /// Reads the server answered.
    pub fallbacks: u64,
    /// Times the recent-writes table was (re)opened.
    pub table_opens: u64,
    /// Reads that found a value whose bytes fail the CRC stored with them
    /// (answered `ReaderError::Corrupt`, never with the bytes).
    pub corrupt: u64,
}

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    #[error("the read could not be proved one-sided ({0}) and no server is configured to fall back to")]
    NoFallback(String),
    #[error("fallback to the server failed: {0}")]
    Fallback(#[from] std::io::Error),
    #[error("the server answered: {0}")]
    Server(String),
    #[error("{0}")]
    Open(String),
    /// The value's bytes fail the CRC stored with them, in a read proved
    /// to be one moment's: the pool is damaged there.
    #[error("corrupt value for key '{}': checksum mismatch", crate::index::tree::key_text(key))]
    Corrupt { key: Vec<u8> },
}

/// One read's outcome from the pool.
enum Found {
    Value,
    Absent,
    WrongType,
    /// A value read failed its CRC.
    Corrupt,
}

/// A one-sided reader of one pool (one shard's of a sharded server:
/// `sharded.rs`'s `Reader` routes each key to its shard's).
pub struct PoolReader {
    pool_path: PathBuf,
    pool: Mapped,
    identity_checked: Instant,
    table: Option<Recent>,
    walk: Walk,
    fallback: Option<Fallback>,
    options: ReaderOptions,
    stats: ReaderStats,
    /// The newest tree generation a read used (monotonic reads).
    generation_seen: u64,
    /// Databases' physical ids as a generation holds them, with what the
    /// table said of their `#db` entries then (`physical_db`).
    databases: [Option<(u64, Newest, u32)>; DATABASES as usize],
    /// Whether a generation holds any expiry (`expired`).
    expiries: Option<(u64, bool)>,
    last_miss: Option<Miss>,
}

impl PoolReader {
    /// Maps the pool at `pool_path` read-only. The server need not run: a
    /// read then falls back (and fails if the server is down).
    pub fn open(pool_path: &Path, options: ReaderOptions) -> Result<PoolReader, ReaderError> {
        let pool = Mapped::open(pool_path).map_err(|e| ReaderError::Open(e.to_string()))?;
        let fallback = options.server.as_deref().map(|address| Fallback::new(address, options.password.as_deref()));
        Ok(PoolReader {
            pool_path: pool_path.to_path_buf(),
            pool,
            identity_checked: Instant::now(),
            table: None,
            walk: Walk::default(),
            fallback,
            options,
            stats: ReaderStats::default(),
            generation_seen: 0,
            databases: [None; DATABASES as usize],
            expiries: None,
            last_miss: None,
        })
    }

    pub fn stats(&self) -> ReaderStats {
        self.stats
    }

    /// Why the last read that fell back could not be proved.
    pub fn last_miss(&self) -> Option<&Miss> {
        self.last_miss.as_ref()
    }

    /// The string value of `key` in logical database `db` (0-15): None if
    /// absent or expired; `WrongType` if it holds a collection.
    pub fn get(&mut self, db: u8, key: &[u8]) -> Result<Option<Vec<u8>>, ReaderError> {
        let mut out = Vec::new();
        Ok(self.get_into(db, key, &mut out)?.then_some(out))
    }

    /// `get`, into `out` (cleared first): true if the key has a value.
    pub fn get_into(&mut self, db: u8, key: &[u8], out: &mut Vec<u8>) -> Result<bool, ReaderError> {
        let found = self.one_sided(out, |reader, version, out| reader.try_get(version, db, key, out));
        self.answer(found, out, db, &[b"GET", key])
    }

    /// The value of `field` of the hash `key` in database `db`.
    pub fn hget(&mut self, db: u8, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ReaderError> {
        let mut out = Vec::new();
        let found = self.one_sided(&mut out, |reader, version, out| {
            reader.try_element(version, db, key, KeyType::Hash, field, out)
        });
        Ok(self.answer(found, &mut out, db, &[b"HGET", key, field])?.then_some(out))
    }

    /// Whether `member` is in the set `key` of database `db`.
    pub fn sismember(&mut self, db: u8, key: &[u8], member: &[u8]) -> Result<bool, ReaderError> {
        let mut out = Vec::new();
        let found = self.one_sided(&mut out, |reader, version, out| {
            reader.try_element(version, db, key, KeyType::Set, member, out)
        });
        match found {
            Some(found) => Self::found(found, key),
            None => match self.fall_back(db, &[b"SISMEMBER", key, member])? {
                Reply::Integer(n) => Ok(n == 1),
                other => Err(ReaderError::Server(format!("unexpected reply {other:?}"))),
            },
        }
    }

    /// The score of `member` in the sorted set `key` of database `db`.
    pub fn zscore(&mut self, db: u8, key: &[u8], member: &[u8]) -> Result<Option<f64>, ReaderError> {
        let mut out = Vec::new();
        let found = self.one_sided(&mut out, |reader, version, out| {
            reader.try_element(version, db, key, KeyType::ZSet, member, out)
        });
        let stored = |bytes: &[u8]| {
            let bytes: [u8; 8] = bytes.try_into().map_err(|_| ReaderError::Server("a score of 8 bytes".into()))?;
            Ok(Some(f64::from_le_bytes(bytes)))
        };
        match found {
            Some(found) => match Self::found(found, key)? {
                true => stored(&out),
                false => Ok(None),
            },
            None => match self.fall_back(db, &[b"ZSCORE", key, member])? {
                Reply::Bulk(None) => Ok(None),
                Reply::Bulk(Some(text)) => parse_score(&text).map(Some),
                other => Err(ReaderError::Server(format!("unexpected reply {other:?}"))),
            },
        }
    }

    fn found(found: Found, key: &[u8]) -> Result<bool, ReaderError> {
        match found {
            Found::Value => Ok(true),
            Found::Absent => Ok(false),
            Found::WrongType => Err(ReaderError::WrongType),
            Found::Corrupt => Err(ReaderError::Corrupt { key: key.to_vec() }),
        }
    }

    /// A read answered by a bulk string (GET, HGET): from the pool, or
    /// else from the server into `out`.
    fn answer(&mut self, found: Option<Found>, out: &mut Vec<u8>, db: u8, args: &[&[u8]]) -> Result<bool, ReaderError> {
        if let Some(found) = found {
            return Self::found(found, args[1]);
        }
        match self.fall_back(db, args)? {
            Reply::Bulk(Some(bytes)) => {
                *out = bytes;
                Ok(true)
            }
            Reply::Bulk(None) => Ok(false),
            other => Err(ReaderError::Server(format!("unexpected reply {other:?}"))),
        }
    }

    /// Sends `args` to the server: its reply, errors made `ReaderError`s.
    fn fall_back(&mut self, db: u8, args: &[&[u8]]) -> Result<Reply, ReaderError> {
        let why = self.last_miss.as_ref().map_or_else(String::new, |m| format!("{m:?}"));
        let Some(fallback) = self.fallback.as_mut() else { return Err(ReaderError::NoFallback(why)) };
        self.stats.fallbacks += 1;
        match fallback.command(db, args)? {
            Reply::Error(error) if error.starts_with("WRONGTYPE") => Err(ReaderError::WrongType),
            Reply::Error(error) => Err(ReaderError::Server(error)),
            reply => Ok(reply),
        }
    }

    /// Tries `read` up to `tries` times; None: fall back.
    fn one_sided(
        &mut self,
        out: &mut Vec<u8>,
        mut read: impl FnMut(&mut PoolReader, &MetaSlot, &mut Vec<u8>) -> Result<Found, Miss>,
    ) -> Option<Found> {
        for attempt in 0..self.options.tries {
            if attempt > 0 {
                self.stats.retries += 1;
                std::hint::spin_loop();
            }
            out.clear();
            match self.attempt(out, &mut read) {
                Ok(found) => {
                    self.stats.one_sided += 1;
                    return Some(found);
                }
                Err(miss) => {
                    let refused = matches!(miss, Miss::Refused(_));
                    self.last_miss = Some(miss);
                    if refused {
                        break;
                    }
                }
            }
        }
        out.clear();
        None
    }

    /// One try: the checks around `read` that make its answer one moment's.
    fn attempt(
        &mut self,
        out: &mut Vec<u8>,
        read: &mut impl FnMut(&mut PoolReader, &MetaSlot, &mut Vec<u8>) -> Result<Found, Miss>,
    ) -> Result<Found, Miss> {
        if self.options.force_fallback {
            return Err(Miss::Raced("the test switch fails every one-sided read"));
        }
        let started = Instant::now();
        let instance = self.trusted_instance()?;
        let seq = self.table().stable_seq().map_err(|_| Miss::Raced("a publish is taking long"))?;
        let version = newest_version(&self.pool)?;
        if version.generation < self.generation_seen {
            return Err(Miss::Raced("an older tree version than one read before"));
        }
        self.walk.corrupt = false;
        let found = read(self, &version, out)?;
        // What was copied is read before the checks below (weakly ordered
        // CPUs too).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // Bounded staleness reads the tree alone: publishes do not matter.
        if !self.options.bounded_staleness && self.table().publish_seq() != seq {
            return Err(Miss::Raced("the server published writes during the read"));
        }
        if self.pool.word(HDR_READER_INSTANCE) != Some(instance) {
            return Err(Miss::Raced("the server stopped or restarted during the read"));
        }
        if started.elapsed() >= self.table().lease().saturating_sub(LEASE_MARGIN) {
            return Err(Miss::Raced("the read took longer than the lease"));
        }
        self.generation_seen = version.generation;
        // Proved one moment's read: a CRC that failed is the pool's damage,
        // not a buffer reused under the read.
        if self.walk.corrupt {
            out.clear();
            self.stats.corrupt += 1;
            return Ok(Found::Corrupt);
        }
        Ok(found)
    }

    fn table(&self) -> &Recent {
        self.table.as_ref().expect("trusted_instance opened it")
    }

    /// The server instance the pool names, with its table open: a table
    /// of another instance (a restarted server) is reopened; none named (no
    /// server publishing) is a miss.
    fn trusted_instance(&mut self) -> Result<u64, Miss> {
        self.check_identity()?;
        let instance = self.pool.word(HDR_READER_INSTANCE).ok_or_else(|| Miss::Refused("no header page".into()))?;
        if instance == 0 {
            return Err(Miss::Refused("no server publishes for one-sided readers".into()));
        }
        if self.table.as_ref().is_some_and(|t| t.instance() == instance) {
            return Ok(instance);
        }
        self.table = None;
        let path = table_path(&self.pool_path).map_err(|e| Miss::Refused(format!("the pool: {e}")))?;
        let table = Recent::open(&path).map_err(|e| Miss::Refused(format!("the recent-writes table: {e}")))?;
        self.stats.table_opens += 1;
        if table.pool_id() != self.pool.creation_id() as u64 {
            return Err(Miss::Refused("the recent-writes table is another pool's".into()));
        }
        let matches = table.instance() == instance;
        self.table = Some(table);
        match matches {
            true => Ok(instance),
            false => Err(Miss::Raced("the server is starting")),
        }
    }

    /// Every `IDENTITY_CHECK_INTERVAL`: the pool file at the path is still
    /// the one mapped, not deleted, not rewritten (else the reader maps the
    /// one at the path).
    fn check_identity(&mut self) -> Result<(), Miss> {
        if self.identity_checked.elapsed() < IDENTITY_CHECK_INTERVAL {
            return Ok(());
        }
        self.identity_checked = Instant::now();
        // The same file at the path, whole (`Mapped::is_current`).
        if !self.pool.is_current(&self.pool_path) {
            self.pool = Mapped::open(&self.pool_path).map_err(|e| Miss::Refused(e.to_string()))?;
            self.table = None;
            // Its nodes and entries are another pool's.
            self.walk = Walk::default();
            self.databases = [None; DATABASES as usize];
            self.expiries = None;
            self.generation_seen = 0;
        }
        Ok(())
    }

    /// The newest durable write of `tree_key` as of `version` and the
    /// table: its value appended to `out` (true), or absent (false).
    fn lookup(&mut self, version: &MetaSlot, tree_key: &[u8], out: &mut Vec<u8>) -> Result<bool, Miss> {
        let newest = self.newest(tree_key)?;
        match newest {
            Newest::Write { batch, lsn } if batch > version.generation => {
                let put = self.walk.log_get(&self.pool, lsn, tree_key, out)?;
                self.stats.from_log += 1;
                Ok(put)
            }
            Newest::InTreeFrom { batch } if batch > version.generation => {
                Err(Miss::Raced("the table forgot a key the tree does not hold yet"))
            }
            _ => match self.walk.tree_get(&self.pool, version, tree_key)? {
                Some(value) => {
                    if !self.options.mid_read_pause.is_zero() {
                        std::thread::sleep(self.options.mid_read_pause);
                    }
                    self.walk.value_into(&self.pool, &value, out)?;
                    Ok(true)
                }
                None => Ok(false),
            },
        }
    }

    /// A small value (a u32 or u64, a collection's metadata) of `tree_key`.
    fn lookup_small(&mut self, version: &MetaSlot, tree_key: &[u8]) -> Result<Option<Vec<u8>>, Miss> {
        let mut bytes = Vec::new();
        Ok(self.lookup(version, tree_key, &mut bytes)?.then_some(bytes))
    }

    /// What the table says of `tree_key` (in bounded staleness: nothing).
    fn newest(&self, tree_key: &[u8]) -> Result<Newest, Miss> {
        match self.options.bounded_staleness {
            true => Ok(Newest::InTreeFrom { batch: 0 }),
            false => self.table().lookup(key_hash(tree_key)).map_err(|_| Miss::Raced("a bucket is being written")),
        }
    }

    /// Logical database `db`'s physical id. Remembered per generation: the
    /// same tree version, with the table saying the same of the `#db`
    /// entry, gives the same answer.
    fn physical_db(&mut self, version: &MetaSlot, db: u8) -> Result<u32, Miss> {
        if u32::from(db) >= DATABASES {
            return Err(Miss::Refused(format!("database {db} does not exist")));
        }
        let entry = db_entry_key(db);
        let newest = self.newest(&entry)?;
        if let Some((generation, said, physical)) = self.databases[usize::from(db)] {
            if generation == version.generation && said == newest && tree_decides(&newest, version) {
                return Ok(physical);
            }
        }
        let physical = match self.lookup_small(version, &entry)? {
            None => u32::from(db),
            Some(bytes) => u32::from_le_bytes(bytes.try_into().map_err(|_| Miss::Refused("a #db entry".into()))?),
        };
        self.databases[usize::from(db)] = Some((version.generation, newest, physical));
        Ok(physical)
    }

    /// Whether `key` of physical database `physical` has expired. A
    /// generation that holds no expiry at all (remembered) needs no walk
    /// unless the table names a newer write of the key's expiry.
    fn expired(&mut self, version: &MetaSlot, physical: u32, key: &[u8]) -> Result<bool, Miss> {
        let tree_key = expire_key(physical, key);
        let newest = self.newest(&tree_key)?;
        if tree_decides(&newest, version) && !self.generation_has_expiries(version)? {
            return Ok(false);
        }
        let Some(bytes) = self.lookup_small(version, &tree_key)? else { return Ok(false) };
        let at = u64::from_le_bytes(bytes.try_into().map_err(|_| Miss::Refused("an expiry entry".into()))?);
        Ok(at <= crate::store::db::now_ms())
    }

    fn generation_has_expiries(&mut self, version: &MetaSlot) -> Result<bool, Miss> {
        if let Some((generation, any)) = self.expiries {
            if generation == version.generation {
                return Ok(any);
            }
        }
        let any = self.walk.may_hold_prefix(&self.pool, version, &[NS_EXPIRE])?;
        self.expiries = Some((version.generation, any));
        Ok(any)
    }

    /// A live collection's metadata.
    fn meta(&mut self, version: &MetaSlot, physical: u32, key: &[u8]) -> Result<Option<Meta>, Miss> {
        let Some(bytes) = self.lookup_small(version, &meta_key(physical, key))? else { return Ok(None) };
        Meta::decode(&bytes).map(Some).ok_or_else(|| Miss::Refused("a collection's metadata".into()))
    }

    fn try_get(&mut self, version: &MetaSlot, db: u8, key: &[u8], out: &mut Vec<u8>) -> Result<Found, Miss> {
        let physical = self.physical_db(version, db)?;
        if self.lookup(version, &string_key(physical, key), out)? {
            return Ok(if self.expired(version, physical, key)? { Found::Absent } else { Found::Value });
        }
        if self.meta(version, physical, key)?.is_some() && !self.expired(version, physical, key)? {
            return Ok(Found::WrongType);
        }
        Ok(Found::Absent)
    }

    /// An element (a hash field, a set or sorted set member) of the
    /// collection `key` of type `kind`: its entry's value into `out`.
    fn try_element(
        &mut self,
        version: &MetaSlot,
        db: u8,
        key: &[u8],
        kind: KeyType,
        member: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Found, Miss> {
        let physical = self.physical_db(version, db)?;
        let Some(meta) = self.meta(version, physical, key)? else {
            let mut ignored = Vec::new();
            let string = self.lookup(version, &string_key(physical, key), &mut ignored)?;
            return Ok(match string && !self.expired(version, physical, key)? {
                true => Found::WrongType,
                false => Found::Absent,
            });
        };
        if self.expired(version, physical, key)? {
            return Ok(Found::Absent);
        }
        if meta.kind != kind {
            return Ok(Found::WrongType);
        }
        Ok(match self.lookup(version, &element_key(meta.oid, SPACE_MAIN, member), out)? {
            true => Found::Value,
            false => Found::Absent,
        })
    }
}

/// A score as the server writes it in a reply ("1.5", "inf", "-inf").
fn parse_score(text: &[u8]) -> Result<f64, ReaderError> {
    let text = std::str::from_utf8(text).map_err(|_| ReaderError::Server("a score that is not text".into()))?;
    text.parse::<f64>().map_err(|_| ReaderError::Server(format!("a score {text:?}")))
}

/// Whether tree version `version` holds the newest durable write of a key
/// the table says `newest` of.
fn tree_decides(newest: &Newest, version: &MetaSlot) -> bool {
    match *newest {
        Newest::Write { batch, .. } | Newest::InTreeFrom { batch } => batch <= version.generation,
    }
}
