//! Schema 2's tree keys and metadata (`docs/format.md`, "The key-value
//! store, schema 2"): how a database, a key, an object and its elements
//! are spelled as byte strings in the one tree, so that byte order is the
//! order each command needs (integers big-endian in keys, scores in an
//! order-preserving encoding), and how a collection's 16-byte metadata
//! reads.
//!
//! Pure functions on bytes: no tree, no pool. Invariant: every encoder has
//! its decoder here, and the tests check that they round-trip and that
//! encoded order is value order.

/// A string: `k` db key.
pub const NS_STRING: u8 = b'k';
/// A collection's metadata: `m` db key.
pub const NS_META: u8 = b'm';
/// An expiry: `x` db key.
pub const NS_EXPIRE: u8 = b'x';
/// An element: `e` oid space rest.
pub const NS_ELEMENT: u8 = b'e';
/// A dead object whose elements are garbage: `g` oid.
pub const NS_DEAD: u8 = b'g';
/// A flushed physical database: `G` db.
pub const NS_DEAD_DB: u8 = b'G';

/// A physical database id (`#db` maps logical databases 0-15 to them).
pub type DbId = u32;

/// Logical databases (SELECT 0-15).
pub const DATABASES: u32 = 16;

/// The byte after `e` oid that splits an object's elements into spaces.
pub const SPACE_STATE: u8 = 0x00;
pub const SPACE_MAIN: u8 = 0x01;
pub const SPACE_SCORE: u8 = 0x02;
pub const SPACE_GROUP: u8 = 0x02;
pub const SPACE_PENDING: u8 = 0x03;
pub const SPACE_CONSUMER: u8 = 0x04;

/// The length of `e` oid space.
pub const ELEMENT_PREFIX_LEN: usize = 1 + 8 + 1;
/// The length of `k`/`m`/`x` db.
pub const KEY_PREFIX_LEN: usize = 1 + 4;

/// The store's own entries (never a user's: user keys live under `k`, `m`
/// and `x`): the physical id of logical database n (`#db` n), the next
/// physical id (`#dbnext`), the last object id handed out (`#oid`), the
/// schema (`#schema`), and the checkpoint's mark (`#lsn`).
pub const DB_ENTRY: &[u8] = b"#db";
pub const DB_NEXT_ENTRY: &[u8] = b"#dbnext";
pub const OID_ENTRY: &[u8] = b"#oid";
pub const SCHEMA_ENTRY: &[u8] = b"#schema";
/// The schema this build writes.
pub const SCHEMA: u32 = 2;
/// The first physical id handed out by FLUSHDB (0-15 are the logical
/// databases' own until then).
pub const DB_NEXT_FIRST: DbId = DATABASES;

/// `#db` n: where logical database `n`'s physical id is kept.
pub fn db_entry_key(logical: u8) -> Vec<u8> {
    debug_assert!(u32::from(logical) < DATABASES);
    let mut out = DB_ENTRY.to_vec();
    out.push(logical);
    out
}

/// The logical database of a `#db` n entry.
pub fn db_entry_logical(tree_key: &[u8]) -> Option<u8> {
    (tree_key.len() == DB_ENTRY.len() + 1 && tree_key.starts_with(DB_ENTRY))
        .then(|| tree_key[DB_ENTRY.len()])
        .filter(|&n| u32::from(n) < DATABASES)
}

/// A key's identity across databases (db BE, then the key): how the
/// store's in-memory indexes (expiries) name it. It is a `k`/`m`/`x` tree
/// key without its namespace byte.
pub fn db_user_key(db: DbId, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + key.len());
    out.extend_from_slice(&db.to_be_bytes());
    out.extend_from_slice(key);
    out
}

/// The database and key of a `db_user_key`.
pub fn split_db_user_key(id: &[u8]) -> (DbId, &[u8]) {
    let db = u32::from_be_bytes(id[..4].try_into().expect("a db_user_key has its 4 bytes of db"));
    (db, &id[4..])
}

/// The type of a key, as TYPE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    String,
    Hash,
    List,
    Set,
    ZSet,
    Stream,
}

impl KeyType {
    /// TYPE's answer.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::String => "string",
            KeyType::Hash => "hash",
            KeyType::List => "list",
            KeyType::Set => "set",
            KeyType::ZSet => "zset",
            KeyType::Stream => "stream",
        }
    }

    /// The type byte of a collection's metadata (strings have none).
    pub fn code(self) -> u8 {
        match self {
            KeyType::String => 1,
            KeyType::Hash => 2,
            KeyType::List => 3,
            KeyType::Set => 4,
            KeyType::ZSet => 5,
            KeyType::Stream => 6,
        }
    }

    pub fn from_code(code: u8) -> Option<KeyType> {
        Some(match code {
            2 => KeyType::Hash,
            3 => KeyType::List,
            4 => KeyType::Set,
            5 => KeyType::ZSet,
            6 => KeyType::Stream,
            _ => return None,
        })
    }
}

/// `ns` db key.
fn db_key(ns: u8, db: DbId, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(KEY_PREFIX_LEN + key.len());
    out.push(ns);
    out.extend_from_slice(&db.to_be_bytes());
    out.extend_from_slice(key);
    out
}

pub fn string_key(db: DbId, key: &[u8]) -> Vec<u8> {
    db_key(NS_STRING, db, key)
}

pub fn meta_key(db: DbId, key: &[u8]) -> Vec<u8> {
    db_key(NS_META, db, key)
}

pub fn expire_key(db: DbId, key: &[u8]) -> Vec<u8> {
    db_key(NS_EXPIRE, db, key)
}

/// The first tree key of namespace `ns` in database `db` (`ns` db).
pub fn db_prefix(ns: u8, db: DbId) -> [u8; KEY_PREFIX_LEN] {
    let mut out = [0u8; KEY_PREFIX_LEN];
    out[0] = ns;
    out[1..].copy_from_slice(&db.to_be_bytes());
    out
}

/// The namespace, database and user key of a `k`, `m` or `x` tree key.
pub fn split_db_key(tree_key: &[u8]) -> Option<(u8, DbId, &[u8])> {
    if tree_key.len() < KEY_PREFIX_LEN || !matches!(tree_key[0], NS_STRING | NS_META | NS_EXPIRE) {
        return None;
    }
    let db = u32::from_be_bytes(tree_key[1..KEY_PREFIX_LEN].try_into().ok()?);
    Some((tree_key[0], db, &tree_key[KEY_PREFIX_LEN..]))
}

/// `e` oid space: where an object's elements of one space start.
pub fn element_prefix(oid: u64, space: u8) -> [u8; ELEMENT_PREFIX_LEN] {
    let mut out = [0u8; ELEMENT_PREFIX_LEN];
    out[0] = NS_ELEMENT;
    out[1..9].copy_from_slice(&oid.to_be_bytes());
    out[9] = space;
    out
}

/// `e` oid space rest.
pub fn element_key(oid: u64, space: u8, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(ELEMENT_PREFIX_LEN + rest.len());
    out.extend_from_slice(&element_prefix(oid, space));
    out.extend_from_slice(rest);
    out
}

/// Every element of object `oid`, all spaces: `e` oid.
pub fn object_prefix(oid: u64) -> [u8; 9] {
    let mut out = [0u8; 9];
    out[0] = NS_ELEMENT;
    out[1..].copy_from_slice(&oid.to_be_bytes());
    out
}

/// `g` oid: object `oid` is dead.
pub fn dead_key(oid: u64) -> [u8; 9] {
    let mut out = object_prefix(oid);
    out[0] = NS_DEAD;
    out
}

/// `G` db: physical database `db` was flushed.
pub fn dead_db_key(db: DbId) -> [u8; KEY_PREFIX_LEN] {
    db_prefix(NS_DEAD_DB, db)
}

/// The oid of a `g` tree key.
pub fn dead_oid(tree_key: &[u8]) -> Option<u64> {
    (tree_key.len() == 9 && tree_key[0] == NS_DEAD).then(|| u64::from_be_bytes(tree_key[1..9].try_into().unwrap()))
}

/// The smallest key greater than every key starting with `prefix` (None:
/// there is none, the prefix is all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A collection's metadata (the `m` entry's 16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub kind: KeyType,
    pub oid: u64,
}

pub const META_SIZE: usize = 16;

impl Meta {
    pub fn encode(&self) -> [u8; META_SIZE] {
        let mut out = [0u8; META_SIZE];
        out[0] = self.kind.code();
        out[8..].copy_from_slice(&self.oid.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Meta> {
        if bytes.len() != META_SIZE || bytes[1..8].iter().any(|&b| b != 0) {
            return None;
        }
        let kind = KeyType::from_code(bytes[0])?;
        let oid = u64::from_le_bytes(bytes[8..].try_into().ok()?);
        (oid != 0).then_some(Meta { kind, oid })
    }
}

/// A sorted set's score as 8 bytes whose order is the scores' order
/// (NaN excluded; -0.0 is spelled as 0.0).
pub fn score_key(score: f64) -> [u8; 8] {
    debug_assert!(!score.is_nan(), "a score is never NaN");
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | 1 << 63 };
    ordered.to_be_bytes()
}

/// The score `score_key` spelled.
pub fn score_from_key(bytes: [u8; 8]) -> f64 {
    let ordered = u64::from_be_bytes(bytes);
    let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
    f64::from_bits(bits)
}

/// A list position's key: seq, big-endian.
pub fn seq_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

/// The first seq of a new list: the middle, so that both ends can grow.
pub const SEQ_FIRST: u64 = 1 << 63;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn score_keys_sort_as_scores(a in any::<f64>(), b in any::<f64>()) {
            prop_assume!(!a.is_nan() && !b.is_nan());
            let (ka, kb) = (score_key(a), score_key(b));
            prop_assert_eq!(ka.cmp(&kb), a.partial_cmp(&b).unwrap());
            let back = score_from_key(ka);
            prop_assert!(back == a && (a != 0.0 || back.is_sign_positive()));
        }

        #[test]
        fn db_keys_split_back(ns in prop::sample::select(vec![NS_STRING, NS_META, NS_EXPIRE]), db in any::<u32>(),
                              key in proptest::collection::vec(any::<u8>(), 0..40)) {
            let tree_key = db_key(ns, db, &key);
            prop_assert_eq!(split_db_key(&tree_key), Some((ns, db, &key[..])));
            prop_assert!(tree_key.starts_with(&db_prefix(ns, db)));
        }

        #[test]
        fn metadata_round_trips(code in 2u8..=6, oid in 1u64..) {
            let meta = Meta { kind: KeyType::from_code(code).unwrap(), oid };
            prop_assert_eq!(Meta::decode(&meta.encode()), Some(meta));
        }
    }

    #[test]
    fn elements_of_an_object_stay_together_in_space_order() {
        let a = element_key(7, SPACE_MAIN, b"zzz");
        let b = element_key(7, SPACE_SCORE, b"");
        let c = element_key(8, SPACE_STATE, b"");
        assert!(a < b && b < c);
        assert!(a.starts_with(&object_prefix(7)) && !c.starts_with(&object_prefix(7)));
        assert_eq!(dead_oid(&dead_key(7)), Some(7));
        assert_eq!(prefix_end(&object_prefix(7)).unwrap(), object_prefix(8).to_vec());
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
    }

    #[test]
    fn bad_metadata_is_refused() {
        assert_eq!(Meta::decode(&[0u8; 16]), None);
        let mut bytes = Meta { kind: KeyType::Set, oid: 3 }.encode();
        bytes[3] = 1;
        assert_eq!(Meta::decode(&bytes), None);
        assert_eq!(Meta::decode(&bytes[..15]), None);
    }
}
