//! The key-value workload of `powerfail.rs` and its model: one client's
//! keys, of every collection type, in databases 0 and 1, and the replies
//! Redis 7.0 gives to the commands the client sends: strings, hashes,
//! lists, sets, sorted sets and streams (with a consumer group) and their
//! element commands, DEL, RENAME,
//! COPY, MOVE (back through MULTI with SELECT), EXPIRE, PERSIST and an
//! expiry in the past, MULTI/EXEC of several writes, and an EVAL script
//! that writes three keys. Invariant: `KvModel::apply` is the whole
//! semantics the test checks against; it changes nothing on a read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

use packetstore::store::db::{value_bytes, Store};
use packetstore::store::keyspace::{score_key, KeyType, SPACE_MAIN};
use packetstore::util::rng::SplitMix64;
use packetstore::Pool;

/// Key families of a client: `c<client>:<family><j>`, j below the count.
pub const FAMILIES: [(char, u64); 6] = [('s', 6), ('h', 2), ('l', 3), ('t', 3), ('z', 3), ('x', 2)];
const FIELDS: u64 = 3;
const MEMBERS: u64 = 6;
/// A push becomes a pop when the list (as last answered) is this long, so
/// that lists, and COPY of them, stay small.
const LIST_LEN_MAX: usize = 12;
/// The sorted sets' second space (score key, member): empty values.
const SPACE_SCORES: u8 = 2;
/// The script: three writes, one log group.
/// ARGV[3] is a busy loop's length between the first write and the
/// others: long enough, the script pauses past lua-time-limit with one
/// write done (its group open) while the event loop turns and commits.
pub const SCRIPT: &str = "redis.call('RPUSH', KEYS[1], ARGV[1]) for i = 1, tonumber(ARGV[3]) do end \
                          redis.call('SADD', KEYS[2], ARGV[2]) return redis.call('ZINCRBY', KEYS[3], 1, ARGV[2])";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

fn ok() -> Reply {
    Reply::Status(b"OK".to_vec())
}

fn bulk(bytes: &[u8]) -> Reply {
    Reply::Bulk(Some(bytes.to_vec()))
}

const WRONG_TYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";

fn nogroup(key: &[u8]) -> Vec<u8> {
    format!(
        "NOGROUP No such key '{}' or consumer group 'g' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key)
    )
    .into_bytes()
}

/// A key's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    /// Integral scores: replies print them as Redis prints such doubles.
    Zset(BTreeMap<Vec<u8>, i64>),
    Stream(StreamVal),
}

/// A stream id (ms, seq).
pub type Id = (u64, u64);

/// A stream: its entries (one field `f` each), its last id, and its one
/// consumer group `g` if created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamVal {
    pub entries: BTreeMap<Id, Vec<u8>>,
    pub last: Id,
    pub group: Option<GroupVal>,
}

/// Group `g`: its last delivered id and pending entries (id -> consumer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupVal {
    pub last: Id,
    pub pel: BTreeMap<Id, Vec<u8>>,
}

fn id_text((ms, seq): Id) -> Vec<u8> {
    format!("{ms}-{seq}").into_bytes()
}

type Key = (u8, Vec<u8>);

#[derive(Clone, Debug)]
pub enum Cmd {
    Set {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Get {
        key: Vec<u8>,
    },
    Del {
        key: Vec<u8>,
    },
    HSet {
        key: Vec<u8>,
        field: Vec<u8>,
        value: Vec<u8>,
    },
    HDel {
        key: Vec<u8>,
        field: Vec<u8>,
    },
    HGet {
        key: Vec<u8>,
        field: Vec<u8>,
    },
    Push {
        key: Vec<u8>,
        left: bool,
        value: Vec<u8>,
    },
    Pop {
        key: Vec<u8>,
        left: bool,
    },
    LMove {
        src: Vec<u8>,
        dst: Vec<u8>,
        from_left: bool,
        to_left: bool,
    },
    LInsert {
        key: Vec<u8>,
        before: bool,
        pivot: Vec<u8>,
        value: Vec<u8>,
    },
    LRange {
        key: Vec<u8>,
    },
    SAdd {
        key: Vec<u8>,
        member: Vec<u8>,
    },
    SRem {
        key: Vec<u8>,
        member: Vec<u8>,
    },
    SMove {
        src: Vec<u8>,
        dst: Vec<u8>,
        member: Vec<u8>,
    },
    SMembers {
        key: Vec<u8>,
    },
    ZAdd {
        key: Vec<u8>,
        score: i64,
        member: Vec<u8>,
    },
    ZIncrBy {
        key: Vec<u8>,
        by: i64,
        member: Vec<u8>,
    },
    ZRem {
        key: Vec<u8>,
        member: Vec<u8>,
    },
    ZPopMin {
        key: Vec<u8>,
    },
    ZRange {
        key: Vec<u8>,
    },
    Rename {
        src: Vec<u8>,
        dst: Vec<u8>,
    },
    Copy {
        src: Vec<u8>,
        dst: Vec<u8>,
    },
    Move {
        key: Vec<u8>,
        to: u8,
    },
    Select {
        db: u8,
    },
    Expire {
        key: Vec<u8>,
    },
    Persist {
        key: Vec<u8>,
    },
    /// PEXPIREAT key 1: the key is deleted at once.
    ExpirePast {
        key: Vec<u8>,
    },
    XAdd {
        key: Vec<u8>,
        ms: u64,
        value: Vec<u8>,
    },
    XDel {
        key: Vec<u8>,
        id: Id,
    },
    XTrim {
        key: Vec<u8>,
        max: u64,
    },
    XGroupCreate {
        key: Vec<u8>,
    },
    XReadGroup {
        key: Vec<u8>,
        consumer: Vec<u8>,
    },
    XAck {
        key: Vec<u8>,
        id: Id,
    },
    XRange {
        key: Vec<u8>,
    },
    Multi(Vec<Cmd>),
    Script {
        list: Vec<u8>,
        set: Vec<u8>,
        zset: Vec<u8>,
        value: Vec<u8>,
        member: Vec<u8>,
        spin: u64,
    },
}

impl Cmd {
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Cmd::Get { .. }
                | Cmd::HGet { .. }
                | Cmd::LRange { .. }
                | Cmd::SMembers { .. }
                | Cmd::ZRange { .. }
                | Cmd::XRange { .. }
        )
    }

    /// The command's RESP encoding (MULTI, its commands and EXEC for a
    /// transaction).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let side = |left: bool| if left { &b"LEFT"[..] } else { b"RIGHT" };
        match self {
            Cmd::Set { key, value } => encode(&[b"SET", key, value], out),
            Cmd::Get { key } => encode(&[b"GET", key], out),
            Cmd::Del { key } => encode(&[b"DEL", key], out),
            Cmd::HSet { key, field, value } => encode(&[b"HSET", key, field, value], out),
            Cmd::HDel { key, field } => encode(&[b"HDEL", key, field], out),
            Cmd::HGet { key, field } => encode(&[b"HGET", key, field], out),
            Cmd::Push { key, left, value } => encode(&[if *left { b"LPUSH" } else { b"RPUSH" }, key, value], out),
            Cmd::Pop { key, left } => encode(&[if *left { b"LPOP" } else { b"RPOP" }, key], out),
            Cmd::LMove { src, dst, from_left, to_left } => {
                encode(&[b"LMOVE", src, dst, side(*from_left), side(*to_left)], out);
            }
            Cmd::LInsert { key, before, pivot, value } => {
                let at: &[u8] = if *before { b"BEFORE" } else { b"AFTER" };
                encode(&[b"LINSERT", key, at, pivot, value], out);
            }
            Cmd::LRange { key } => encode(&[b"LRANGE", key, b"0", b"-1"], out),
            Cmd::SAdd { key, member } => encode(&[b"SADD", key, member], out),
            Cmd::SRem { key, member } => encode(&[b"SREM", key, member], out),
            Cmd::SMove { src, dst, member } => encode(&[b"SMOVE", src, dst, member], out),
            Cmd::SMembers { key } => encode(&[b"SMEMBERS", key], out),
            Cmd::ZAdd { key, score, member } => encode(&[b"ZADD", key, score.to_string().as_bytes(), member], out),
            Cmd::ZIncrBy { key, by, member } => encode(&[b"ZINCRBY", key, by.to_string().as_bytes(), member], out),
            Cmd::ZRem { key, member } => encode(&[b"ZREM", key, member], out),
            Cmd::ZPopMin { key } => encode(&[b"ZPOPMIN", key], out),
            Cmd::ZRange { key } => encode(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"], out),
            Cmd::Rename { src, dst } => encode(&[b"RENAME", src, dst], out),
            Cmd::Copy { src, dst } => encode(&[b"COPY", src, dst, b"REPLACE"], out),
            Cmd::Move { key, to } => encode(&[b"MOVE", key, to.to_string().as_bytes()], out),
            Cmd::Select { db } => encode(&[b"SELECT", db.to_string().as_bytes()], out),
            Cmd::Expire { key } => encode(&[b"EXPIRE", key, b"100000"], out),
            Cmd::Persist { key } => encode(&[b"PERSIST", key], out),
            Cmd::ExpirePast { key } => encode(&[b"PEXPIREAT", key, b"1"], out),
            Cmd::XAdd { key, ms, value } => encode(&[b"XADD", key, format!("{ms}-*").as_bytes(), b"f", value], out),
            Cmd::XDel { key, id } => encode(&[b"XDEL", key, &id_text(*id)], out),
            Cmd::XTrim { key, max } => encode(&[b"XTRIM", key, b"MAXLEN", max.to_string().as_bytes()], out),
            Cmd::XGroupCreate { key } => encode(&[b"XGROUP", b"CREATE", key, b"g", b"0", b"MKSTREAM"], out),
            Cmd::XReadGroup { key, consumer } => {
                encode(&[b"XREADGROUP", b"GROUP", b"g", consumer, b"COUNT", b"2", b"STREAMS", key, b">"], out);
            }
            Cmd::XAck { key, id } => encode(&[b"XACK", key, b"g", &id_text(*id)], out),
            Cmd::XRange { key } => encode(&[b"XRANGE", key, b"-", b"+"], out),
            Cmd::Multi(cmds) => {
                encode(&[b"MULTI"], out);
                for cmd in cmds {
                    cmd.encode(out);
                }
                encode(&[b"EXEC"], out);
            }
            Cmd::Script { list, set, zset, value, member, spin } => {
                let spin = spin.to_string();
                encode(&[b"EVAL", SCRIPT.as_bytes(), b"3", list, set, zset, value, member, spin.as_bytes()], out);
            }
        }
    }
}

pub fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// One client's keys (databases 0 and 1) and which of them expire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvModel {
    pub keys: BTreeMap<Key, Val>,
    pub expiring: BTreeSet<Key>,
}

impl KvModel {
    /// Applies `cmd` on a new connection (database 0); returns the replies
    /// the server must give, in order (several for a transaction).
    pub fn apply(&mut self, cmd: &Cmd) -> Vec<Reply> {
        let mut db = 0;
        match cmd {
            Cmd::Multi(cmds) => {
                let mut replies = vec![ok()];
                replies.extend(cmds.iter().map(|_| Reply::Status(b"QUEUED".to_vec())));
                let results = cmds.iter().map(|c| self.apply_one(&mut db, c)).collect();
                replies.push(Reply::Array(results));
                replies
            }
            cmd => vec![self.apply_one(&mut db, cmd)],
        }
    }

    fn apply_one(&mut self, db: &mut u8, cmd: &Cmd) -> Reply {
        let reply = self.apply_inner(db, cmd);
        // A key that is gone takes its expiry with it.
        let keys = &self.keys;
        self.expiring.retain(|k| keys.contains_key(k));
        reply
    }

    fn apply_inner(&mut self, db: &mut u8, cmd: &Cmd) -> Reply {
        let at = |key: &Vec<u8>| (*db, key.clone());
        match cmd {
            Cmd::Set { key, value } => {
                self.expiring.remove(&at(key));
                self.keys.insert(at(key), Val::Str(value.clone()));
                ok()
            }
            Cmd::Get { key } => match self.keys.get(&at(key)) {
                Some(Val::Str(v)) => bulk(v),
                _ => Reply::Bulk(None),
            },
            Cmd::Del { key } => Reply::Int(self.keys.remove(&at(key)).is_some().into()),
            Cmd::HSet { .. } | Cmd::HDel { .. } | Cmd::HGet { .. } => self.hash(at(hash_key(cmd)), cmd),
            Cmd::Push { .. } | Cmd::Pop { .. } | Cmd::LInsert { .. } | Cmd::LRange { .. } | Cmd::LMove { .. } => {
                self.list(*db, cmd)
            }
            Cmd::SAdd { .. } | Cmd::SRem { .. } | Cmd::SMove { .. } | Cmd::SMembers { .. } => self.set(*db, cmd),
            Cmd::ZAdd { .. } | Cmd::ZIncrBy { .. } | Cmd::ZRem { .. } | Cmd::ZPopMin { .. } | Cmd::ZRange { .. } => {
                self.zset(*db, cmd)
            }
            Cmd::XAdd { .. }
            | Cmd::XDel { .. }
            | Cmd::XTrim { .. }
            | Cmd::XGroupCreate { .. }
            | Cmd::XReadGroup { .. }
            | Cmd::XAck { .. }
            | Cmd::XRange { .. } => self.stream(*db, cmd),
            Cmd::Rename { src, dst } => self.rename(at(src), at(dst)),
            Cmd::Copy { src, dst } => self.copy(at(src), at(dst)),
            Cmd::Move { key, to } => self.move_key(at(key), (*to, key.clone())),
            Cmd::Select { db: to } => {
                *db = *to;
                ok()
            }
            Cmd::Expire { key } => {
                let exists = self.keys.contains_key(&at(key));
                if exists {
                    self.expiring.insert(at(key));
                }
                Reply::Int(exists.into())
            }
            Cmd::Persist { key } => Reply::Int(self.expiring.remove(&at(key)).into()),
            Cmd::ExpirePast { key } => Reply::Int(self.keys.remove(&at(key)).is_some().into()),
            Cmd::Multi(_) => unreachable!("transactions do not nest"),
            Cmd::Script { list, set, zset, value, member, .. } => {
                self.list(*db, &Cmd::Push { key: list.clone(), left: false, value: value.clone() });
                self.set(*db, &Cmd::SAdd { key: set.clone(), member: member.clone() });
                self.zset(*db, &Cmd::ZIncrBy { key: zset.clone(), by: 1, member: member.clone() })
            }
        }
    }

    fn hash(&mut self, key: Key, cmd: &Cmd) -> Reply {
        let fields = match self.keys.get_mut(&key) {
            Some(Val::Hash(fields)) => Some(fields),
            Some(_) => return Reply::Error(WRONG_TYPE.to_vec()),
            None => None,
        };
        let reply = match (cmd, fields) {
            (Cmd::HSet { field, value, .. }, Some(fields)) => {
                Reply::Int(fields.insert(field.clone(), value.clone()).is_none().into())
            }
            (Cmd::HSet { field, value, .. }, None) => {
                self.keys.insert(key.clone(), Val::Hash(BTreeMap::from([(field.clone(), value.clone())])));
                Reply::Int(1)
            }
            (Cmd::HDel { field, .. }, Some(fields)) => Reply::Int(fields.remove(field).is_some().into()),
            (Cmd::HGet { field, .. }, Some(fields)) => Reply::Bulk(fields.get(field).cloned()),
            (Cmd::HGet { .. }, None) => Reply::Bulk(None),
            _ => Reply::Int(0),
        };
        self.drop_if_empty(&key);
        reply
    }

    fn list(&mut self, db: u8, cmd: &Cmd) -> Reply {
        let key_of = |k: &Vec<u8>| (db, k.clone());
        let (key, create) = match cmd {
            Cmd::Push { key, .. } => (key_of(key), true),
            Cmd::LMove { src, .. } => (key_of(src), false),
            Cmd::Pop { key, .. } | Cmd::LInsert { key, .. } | Cmd::LRange { key } => (key_of(key), false),
            _ => unreachable!(),
        };
        if let Cmd::LMove { dst, .. } = cmd {
            if !matches!(self.keys.get(&key_of(dst)), None | Some(Val::List(_))) {
                return Reply::Error(WRONG_TYPE.to_vec());
            }
        }
        let list = match self.keys.get_mut(&key) {
            Some(Val::List(list)) => list,
            Some(_) => return Reply::Error(WRONG_TYPE.to_vec()),
            None if create => {
                self.keys.insert(key.clone(), Val::List(VecDeque::new()));
                let Some(Val::List(list)) = self.keys.get_mut(&key) else { unreachable!() };
                list
            }
            None => {
                return match cmd {
                    Cmd::LRange { .. } => Reply::Array(Vec::new()),
                    Cmd::LInsert { .. } => Reply::Int(0),
                    _ => Reply::Bulk(None),
                }
            }
        };
        let reply = match cmd {
            Cmd::Push { left, value, .. } => {
                if *left {
                    list.push_front(value.clone());
                } else {
                    list.push_back(value.clone());
                }
                Reply::Int(list.len() as i64)
            }
            Cmd::Pop { left, .. } => Reply::Bulk(if *left { list.pop_front() } else { list.pop_back() }),
            Cmd::LInsert { before, pivot, value, .. } => match list.iter().position(|v| v == pivot) {
                Some(i) => {
                    list.insert(if *before { i } else { i + 1 }, value.clone());
                    Reply::Int(list.len() as i64)
                }
                None => Reply::Int(-1),
            },
            Cmd::LRange { .. } => Reply::Array(list.iter().map(|v| bulk(v)).collect()),
            Cmd::LMove { dst, from_left, to_left, .. } => {
                let value = if *from_left { list.pop_front() } else { list.pop_back() }.expect("a list is never empty");
                self.drop_if_empty(&key);
                let dst = self.keys.entry(key_of(dst)).or_insert_with(|| Val::List(VecDeque::new()));
                let Val::List(dst) = dst else { unreachable!("checked above") };
                if *to_left {
                    dst.push_front(value.clone());
                } else {
                    dst.push_back(value.clone());
                }
                return bulk(&value);
            }
            _ => unreachable!(),
        };
        self.drop_if_empty(&key);
        reply
    }

    fn set(&mut self, db: u8, cmd: &Cmd) -> Reply {
        let key_of = |k: &Vec<u8>| (db, k.clone());
        match cmd {
            Cmd::SMove { src, dst, member } => {
                let types_ok = [src, dst].iter().all(|k| matches!(self.keys.get(&key_of(k)), None | Some(Val::Set(_))));
                if !types_ok {
                    return Reply::Error(WRONG_TYPE.to_vec());
                }
                let Some(Val::Set(members)) = self.keys.get_mut(&key_of(src)) else { return Reply::Int(0) };
                if !members.remove(member) {
                    return Reply::Int(0);
                }
                self.drop_if_empty(&key_of(src));
                let dst = self.keys.entry(key_of(dst)).or_insert_with(|| Val::Set(BTreeSet::new()));
                let Val::Set(dst) = dst else { unreachable!("checked above") };
                dst.insert(member.clone());
                return Reply::Int(1);
            }
            Cmd::SAdd { key, member } => {
                let entry = self.keys.entry(key_of(key)).or_insert_with(|| Val::Set(BTreeSet::new()));
                let Val::Set(members) = entry else { return Reply::Error(WRONG_TYPE.to_vec()) };
                return Reply::Int(members.insert(member.clone()).into());
            }
            _ => {}
        }
        let key = match cmd {
            Cmd::SRem { key, .. } | Cmd::SMembers { key } => key_of(key),
            _ => unreachable!(),
        };
        let reply = match (self.keys.get_mut(&key), cmd) {
            (Some(Val::Set(members)), Cmd::SRem { member, .. }) => Reply::Int(members.remove(member).into()),
            (Some(Val::Set(members)), _) => Reply::Array(members.iter().map(|m| bulk(m)).collect()),
            (Some(_), _) => return Reply::Error(WRONG_TYPE.to_vec()),
            (None, Cmd::SRem { .. }) => Reply::Int(0),
            (None, _) => Reply::Array(Vec::new()),
        };
        self.drop_if_empty(&key);
        reply
    }

    fn zset(&mut self, db: u8, cmd: &Cmd) -> Reply {
        let key = match cmd {
            Cmd::ZAdd { key, .. }
            | Cmd::ZIncrBy { key, .. }
            | Cmd::ZRem { key, .. }
            | Cmd::ZPopMin { key }
            | Cmd::ZRange { key } => (db, key.clone()),
            _ => unreachable!(),
        };
        let creates = matches!(cmd, Cmd::ZAdd { .. } | Cmd::ZIncrBy { .. });
        if creates && !self.keys.contains_key(&key) {
            self.keys.insert(key.clone(), Val::Zset(BTreeMap::new()));
        }
        let scores = match self.keys.get_mut(&key) {
            Some(Val::Zset(scores)) => scores,
            Some(_) => return Reply::Error(WRONG_TYPE.to_vec()),
            None if matches!(cmd, Cmd::ZRem { .. }) => return Reply::Int(0),
            None => return Reply::Array(Vec::new()),
        };
        let score_bulk = |s: i64| bulk(s.to_string().as_bytes());
        let reply = match cmd {
            Cmd::ZAdd { score, member, .. } => Reply::Int(scores.insert(member.clone(), *score).is_none().into()),
            Cmd::ZIncrBy { by, member, .. } => {
                let score = scores.entry(member.clone()).or_insert(0);
                *score += by;
                score_bulk(*score)
            }
            Cmd::ZRem { member, .. } => Reply::Int(scores.remove(member).is_some().into()),
            Cmd::ZPopMin { .. } => {
                let lowest = scores.iter().min_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0))).map(|(m, s)| (m.clone(), *s));
                match lowest {
                    Some((member, score)) => {
                        scores.remove(&member);
                        Reply::Array(vec![bulk(&member), score_bulk(score)])
                    }
                    None => Reply::Array(Vec::new()),
                }
            }
            Cmd::ZRange { .. } => {
                let mut sorted: Vec<_> = scores.iter().collect();
                sorted.sort_by(|a, b| (a.1, a.0).cmp(&(b.1, b.0)));
                Reply::Array(sorted.into_iter().flat_map(|(m, s)| [bulk(m), score_bulk(*s)]).collect())
            }
            _ => unreachable!(),
        };
        self.drop_if_empty(&key);
        reply
    }

    fn stream(&mut self, db: u8, cmd: &Cmd) -> Reply {
        let key = match cmd {
            Cmd::XAdd { key, .. }
            | Cmd::XDel { key, .. }
            | Cmd::XTrim { key, .. }
            | Cmd::XGroupCreate { key }
            | Cmd::XReadGroup { key, .. }
            | Cmd::XAck { key, .. }
            | Cmd::XRange { key } => (db, key.clone()),
            _ => unreachable!(),
        };
        if matches!(cmd, Cmd::XAdd { .. } | Cmd::XGroupCreate { .. }) && !self.keys.contains_key(&key) {
            self.keys.insert(key.clone(), Val::Stream(StreamVal::default()));
        }
        let stream = match self.keys.get_mut(&key) {
            Some(Val::Stream(stream)) => stream,
            Some(_) => return Reply::Error(WRONG_TYPE.to_vec()),
            None => {
                return match cmd {
                    Cmd::XRange { .. } => Reply::Array(Vec::new()),
                    Cmd::XReadGroup { key, .. } => Reply::Error(nogroup(key)),
                    _ => Reply::Int(0),
                }
            }
        };
        let entry = |id: Id, value: &Vec<u8>| {
            Reply::Array(vec![bulk(&id_text(id)), Reply::Array(vec![bulk(b"f"), bulk(value)])])
        };
        match cmd {
            Cmd::XAdd { ms, value, .. } => {
                let id = match ms.cmp(&stream.last.0) {
                    std::cmp::Ordering::Greater => (*ms, 0),
                    std::cmp::Ordering::Equal if stream.last.1 < u64::MAX => (*ms, stream.last.1 + 1),
                    _ => {
                        return Reply::Error(
                            b"ERR The ID specified in XADD is equal or smaller than the target stream top item"
                                .to_vec(),
                        )
                    }
                };
                stream.entries.insert(id, value.clone());
                stream.last = id;
                bulk(&id_text(id))
            }
            Cmd::XDel { id, .. } => Reply::Int(stream.entries.remove(id).is_some().into()),
            Cmd::XTrim { max, .. } => {
                let mut deleted = 0;
                while stream.entries.len() as u64 > *max {
                    stream.entries.pop_first();
                    deleted += 1;
                }
                Reply::Int(deleted)
            }
            Cmd::XGroupCreate { .. } => {
                if stream.group.is_some() {
                    return Reply::Error(b"BUSYGROUP Consumer Group name already exists".to_vec());
                }
                stream.group = Some(GroupVal::default());
                ok()
            }
            Cmd::XReadGroup { key: name, consumer } => {
                let Some(group) = stream.group.as_mut() else { return Reply::Error(nogroup(name)) };
                let new: Vec<(Id, Vec<u8>)> = stream
                    .entries
                    .range((std::ops::Bound::Excluded(group.last), std::ops::Bound::Unbounded))
                    .take(2)
                    .map(|(id, v)| (*id, v.clone()))
                    .collect();
                if new.is_empty() {
                    return Reply::Bulk(None);
                }
                for (id, _) in &new {
                    group.last = *id;
                    group.pel.insert(*id, consumer.clone());
                }
                let entries = new.iter().map(|(id, v)| entry(*id, v)).collect();
                Reply::Array(vec![Reply::Array(vec![bulk(name), Reply::Array(entries)])])
            }
            Cmd::XAck { id, .. } => {
                let acked = stream.group.as_mut().is_some_and(|g| g.pel.remove(id).is_some());
                Reply::Int(acked.into())
            }
            Cmd::XRange { .. } => Reply::Array(stream.entries.iter().map(|(id, v)| entry(*id, v)).collect()),
            _ => unreachable!(),
        }
    }

    fn rename(&mut self, src: Key, dst: Key) -> Reply {
        let Some(value) = self.keys.remove(&src) else { return Reply::Error(b"ERR no such key".to_vec()) };
        let expires = self.expiring.remove(&src);
        self.expiring.remove(&dst);
        self.keys.insert(dst.clone(), value);
        if expires {
            self.expiring.insert(dst);
        }
        ok()
    }

    fn copy(&mut self, src: Key, dst: Key) -> Reply {
        if src == dst {
            return Reply::Error(b"ERR source and destination objects are the same".to_vec());
        }
        let Some(value) = self.keys.get(&src).cloned() else { return Reply::Int(0) };
        self.expiring.remove(&dst);
        if self.expiring.contains(&src) {
            self.expiring.insert(dst.clone());
        }
        self.keys.insert(dst, value);
        Reply::Int(1)
    }

    fn move_key(&mut self, src: Key, dst: Key) -> Reply {
        if src.0 == dst.0 {
            return Reply::Error(b"ERR source and destination objects are the same".to_vec());
        }
        if !self.keys.contains_key(&src) || self.keys.contains_key(&dst) {
            return Reply::Int(0);
        }
        let value = self.keys.remove(&src).expect("present");
        if self.expiring.remove(&src) {
            self.expiring.insert(dst.clone());
        }
        self.keys.insert(dst, value);
        Reply::Int(1)
    }

    fn drop_if_empty(&mut self, key: &Key) {
        let empty = match self.keys.get(key) {
            Some(Val::Hash(m)) => m.is_empty(),
            Some(Val::List(l)) => l.is_empty(),
            Some(Val::Set(s)) => s.is_empty(),
            Some(Val::Zset(z)) => z.is_empty(),
            _ => false,
        };
        if empty {
            self.keys.remove(key);
        }
    }

    /// One line per key, for a failure's message.
    pub fn summary(&self) -> Vec<String> {
        let head = |v: &Vec<u8>| format!("{}({})", String::from_utf8_lossy(&v[..v.len().min(12)]), v.len());
        self.keys
            .iter()
            .map(|((db, key), value)| {
                let shown = match value {
                    Val::Str(v) => head(v),
                    Val::Hash(m) => format!("{:?}", m.iter().map(|(f, v)| (head(f), head(v))).collect::<Vec<_>>()),
                    Val::List(l) => format!("{:?}", l.iter().map(head).collect::<Vec<_>>()),
                    Val::Set(s) => format!("{:?}", s.iter().map(head).collect::<Vec<_>>()),
                    Val::Zset(z) => format!("{:?}", z.iter().map(|(m, s)| (head(m), s)).collect::<Vec<_>>()),
                    Val::Stream(x) => format!(
                        "{:?} last {:?} group {:?}",
                        x.entries.iter().map(|(id, v)| (id, head(v))).collect::<Vec<_>>(),
                        x.last,
                        x.group
                            .as_ref()
                            .map(|g| (g.last, g.pel.iter().map(|(id, c)| (*id, head(c))).collect::<Vec<_>>()))
                    ),
                };
                let ttl = if self.expiring.contains(&(*db, key.clone())) { " (expires)" } else { "" };
                format!("{db}:{}={shown}{ttl}", String::from_utf8_lossy(key))
            })
            .collect()
    }
}

fn hash_key(cmd: &Cmd) -> &Vec<u8> {
    match cmd {
        Cmd::HSet { key, .. } | Cmd::HDel { key, .. } | Cmd::HGet { key, .. } => key,
        _ => unreachable!(),
    }
}

// ---- the workload ----

/// A value of a random length, naming its writer and sequence number.
pub fn value(rng: &mut SplitMix64, client: usize, seq: u64) -> Vec<u8> {
    let len = match rng.below(20) {
        0..=9 => rng.below(100) as usize,
        10..=16 => 100 + rng.below(3000) as usize,
        17..=18 => 3000 + rng.below(12_000) as usize,
        // Many buffers: more extents than a leaf holds (indirect).
        _ => 40_000 + rng.below(40_000) as usize,
    };
    stamped(client, seq, len)
}

/// A collection element: mostly small, now and then several buffers.
fn element(rng: &mut SplitMix64, client: usize, seq: u64) -> Vec<u8> {
    let len = if rng.chance(1, 10) { 2000 + rng.below(6000) } else { rng.below(300) };
    stamped(client, seq, len as usize)
}

/// `len` bytes (at least 1) starting `<client:n>`, then bytes derived from
/// both: no two writes share their bytes, and a torn one shows.
pub fn stamped(client: usize, n: u64, len: usize) -> Vec<u8> {
    let mut bytes = format!("<{client}:{n}>").into_bytes();
    let mut fill = SplitMix64::new(n ^ ((client as u64) << 48));
    while bytes.len() < len {
        bytes.push(fill.next_u64() as u8);
    }
    bytes.truncate(len.max(1));
    bytes
}

fn name(rng: &mut SplitMix64, client: usize, family: char) -> Vec<u8> {
    let count = FAMILIES.iter().find(|(f, _)| *f == family).expect("a family").1;
    format!("c{client}:{family}{}", rng.below(count)).into_bytes()
}

/// A random command of client `client`, given its state as last answered
/// (`model`: used only to pick plausible pivots and to keep lists short).
/// `spin_max`: the longest busy loop a script runs (0: none).
pub fn random_cmd(rng: &mut SplitMix64, client: usize, seq: u64, model: &KvModel, spin_max: u64) -> Cmd {
    // Eight numbers per command, increasing with it: values' stamps and
    // stream ids (XADD ms-*) of the commands a transaction holds.
    let seq8 = seq.wrapping_mul(8);
    match rng.below(100) {
        0..=69 => random_single(rng, client, seq8, model),
        70..=79 => {
            let n = 2 + rng.below(3) as usize;
            Cmd::Multi((0..n).map(|i| random_write(rng, client, seq8.wrapping_add(i as u64), model)).collect())
        }
        80..=84 => Cmd::Script {
            list: name(rng, client, 'l'),
            set: name(rng, client, 't'),
            zset: name(rng, client, 'z'),
            value: element(rng, client, seq8.wrapping_add(7)),
            member: format!("m{}", rng.below(MEMBERS)).into_bytes(),
            spin: if spin_max == 0 { 0 } else { rng.below(spin_max) },
        },
        85..=89 => {
            // MOVE back from database 1 needs SELECT: in a transaction.
            let family = FAMILIES[rng.below(FAMILIES.len() as u64) as usize].0;
            let key = name(rng, client, family);
            Cmd::Multi(vec![Cmd::Select { db: 1 }, Cmd::Move { key, to: 0 }, Cmd::Select { db: 0 }])
        }
        _ => random_write(rng, client, seq8, model),
    }
}

fn random_single(rng: &mut SplitMix64, client: usize, seq: u64, model: &KvModel) -> Cmd {
    match rng.below(10) {
        0..=5 => random_write(rng, client, seq, model),
        _ => {
            let (family, _) = FAMILIES[rng.below(FAMILIES.len() as u64) as usize];
            let key = name(rng, client, family);
            match family {
                's' => Cmd::Get { key },
                'h' => Cmd::HGet { key, field: format!("f{}", rng.below(FIELDS)).into_bytes() },
                'l' => Cmd::LRange { key },
                't' => Cmd::SMembers { key },
                'z' => Cmd::ZRange { key },
                _ => Cmd::XRange { key },
            }
        }
    }
}

fn random_write(rng: &mut SplitMix64, client: usize, seq: u64, model: &KvModel) -> Cmd {
    let (family, _) = FAMILIES[rng.below(FAMILIES.len() as u64) as usize];
    let key = name(rng, client, family);
    match rng.below(20) {
        0 => return Cmd::Del { key },
        1 => return Cmd::Rename { src: key, dst: name(rng, client, family) },
        2 => return Cmd::Copy { src: key, dst: name(rng, client, family) },
        3 => return Cmd::Move { key, to: 1 },
        4 => return Cmd::Expire { key },
        5 => return Cmd::Persist { key },
        6 if rng.chance(1, 3) => return Cmd::ExpirePast { key },
        _ => {}
    }
    let member = format!("m{}", rng.below(MEMBERS)).into_bytes();
    match family {
        's' => Cmd::Set { key, value: value(rng, client, seq) },
        'h' => {
            let field = format!("f{}", rng.below(FIELDS)).into_bytes();
            if rng.chance(3, 4) {
                Cmd::HSet { key, field, value: value(rng, client, seq) }
            } else {
                Cmd::HDel { key, field }
            }
        }
        'l' => random_list_write(rng, client, seq, model, key),
        't' => match rng.below(4) {
            0 | 1 => Cmd::SAdd { key, member },
            2 => Cmd::SRem { key, member },
            _ => Cmd::SMove { src: key, dst: name(rng, client, 't'), member },
        },
        'z' => match rng.below(5) {
            0 | 1 => Cmd::ZAdd { key, score: rng.below(7) as i64 - 3, member },
            2 => Cmd::ZIncrBy { key, by: rng.below(5) as i64 - 2, member },
            3 => Cmd::ZRem { key, member },
            _ => Cmd::ZPopMin { key },
        },
        _ => random_stream_write(rng, client, seq, model, key),
    }
}

fn random_stream_write(rng: &mut SplitMix64, client: usize, seq: u64, model: &KvModel, key: Vec<u8>) -> Cmd {
    let current = match model.keys.get(&(0, key.clone())) {
        Some(Val::Stream(stream)) => Some(stream),
        _ => None,
    };
    // An id of the stream as last seen (it may be gone by now).
    let some_id = |rng: &mut SplitMix64, ids: Vec<Id>| match ids.len() {
        0 => (1, 1),
        n => ids[rng.below(n as u64) as usize],
    };
    match rng.below(10) {
        0..=3 => Cmd::XAdd { key, ms: seq.max(1), value: element(rng, client, seq) },
        4 => {
            let ids = current.map(|s| s.entries.keys().copied().collect()).unwrap_or_default();
            Cmd::XDel { id: some_id(rng, ids), key }
        }
        5 => Cmd::XTrim { key, max: rng.below(6) },
        6 => Cmd::XGroupCreate { key },
        7 | 8 => Cmd::XReadGroup { key, consumer: format!("c{}", rng.below(2)).into_bytes() },
        _ => {
            let ids =
                current.and_then(|s| s.group.as_ref()).map(|g| g.pel.keys().copied().collect()).unwrap_or_default();
            Cmd::XAck { id: some_id(rng, ids), key }
        }
    }
}

fn random_list_write(rng: &mut SplitMix64, client: usize, seq: u64, model: &KvModel, key: Vec<u8>) -> Cmd {
    let current = match model.keys.get(&(0, key.clone())) {
        Some(Val::List(list)) => Some(list),
        _ => None,
    };
    let long = current.is_some_and(|l| l.len() >= LIST_LEN_MAX);
    match rng.below(8) {
        0..=2 if !long => Cmd::Push { key, left: rng.chance(1, 2), value: element(rng, client, seq) },
        3 if !long => {
            // A pivot of the list as last seen (it may be gone by now).
            let pivot = match current {
                Some(list) if !list.is_empty() => list[rng.below(list.len() as u64) as usize].clone(),
                _ => b"absent".to_vec(),
            };
            Cmd::LInsert { key, before: rng.chance(1, 2), pivot, value: element(rng, client, seq) }
        }
        4 => {
            Cmd::LMove { src: key, dst: name(rng, client, 'l'), from_left: rng.chance(1, 2), to_left: rng.chance(1, 2) }
        }
        _ => Cmd::Pop { key, left: rng.chance(1, 2) },
    }
}

// ---- the store's view, after recovery ----

/// The store's view of one client's keys in databases 0 and 1, read from
/// its tree; asserts that each sorted set's two spaces agree.
pub fn recovered(store: &Store, pool: &Pool, client: usize) -> KvModel {
    let mut model = KvModel::default();
    let read = |value| value_bytes(pool, &value).expect("readable bytes").into_owned();
    for logical in [0u8, 1] {
        let db = store.physical_db(logical);
        for (family, count) in FAMILIES {
            for j in 0..count {
                let key = format!("c{client}:{family}{j}").into_bytes();
                let value = if let Some(value) = store.get(pool, db, &key, 0).expect("a readable key") {
                    Val::Str(read(value))
                } else if let Some(meta) = store.meta(pool, db, &key, 0).expect("a readable key") {
                    if meta.kind == KeyType::Stream {
                        let value = Val::Stream(stream_recovered(store, pool, meta.oid));
                        if store.expiry(db, &key).is_some() {
                            model.expiring.insert((logical, key.clone()));
                        }
                        model.keys.insert((logical, key), value);
                        continue;
                    }
                    let elements: Vec<(Vec<u8>, Vec<u8>)> = store
                        .elements(pool, meta.oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false)
                        .map(|e| e.map(|(rest, value)| (rest, read(value))))
                        .collect::<Result<_, _>>()
                        .expect("readable elements");
                    assert!(!elements.is_empty(), "{}: an empty collection is deleted", String::from_utf8_lossy(&key));
                    match meta.kind {
                        KeyType::Hash => Val::Hash(elements.into_iter().collect()),
                        KeyType::List => Val::List(elements.into_iter().map(|(_, v)| v).collect()),
                        KeyType::Set => Val::Set(elements.into_iter().map(|(m, _)| m).collect()),
                        KeyType::ZSet => Val::Zset(zset_scores(store, pool, meta.oid, elements)),
                        other => panic!("unexpected type {other:?}"),
                    }
                } else {
                    continue;
                };
                if store.expiry(db, &key).is_some() {
                    model.expiring.insert((logical, key.clone()));
                }
                model.keys.insert((logical, key), value);
            }
        }
    }
    model
}

/// A stream read from its object: entries (field `f`), the last id (the
/// stored state advanced by the tail), group `g` and its pending list;
/// asserts each pending entry has its consumer-list twin and consumer.
fn stream_recovered(store: &Store, pool: &Pool, oid: u64) -> StreamVal {
    let all = |space: u8| -> Vec<(Vec<u8>, Vec<u8>)> {
        store
            .elements(pool, oid, space, Bound::Unbounded, Bound::Unbounded, false)
            .map(|e| e.map(|(rest, value)| (rest, value_bytes(pool, &value).expect("bytes").into_owned())))
            .collect::<Result<_, _>>()
            .expect("readable elements")
    };
    let be = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    let le = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut stream = StreamVal::default();
    for (rest, value) in all(SPACE_MAIN) {
        let id = (be(&rest[..8]), be(&rest[8..16]));
        // Place (20 bytes), pair count, then "f" and the value, each after
        // its length.
        assert_eq!(&value[20..24], &1u32.to_le_bytes(), "one field per entry");
        let field_len = u32::from_le_bytes(value[24..28].try_into().unwrap()) as usize;
        let at = 28 + field_len;
        let len = u32::from_le_bytes(value[at..at + 4].try_into().unwrap()) as usize;
        stream.entries.insert(id, value[at + 4..at + 4 + len].to_vec());
    }
    if let Some((_, state)) = all(0x00).into_iter().next() {
        stream.last = (le(&state[..8]), le(&state[8..16]));
    }
    if let Some((&tail, _)) = stream.entries.last_key_value() {
        stream.last = stream.last.max(tail);
    }
    let twins: BTreeSet<Vec<u8>> = all(0x05).into_iter().map(|(rest, _)| rest).collect();
    let consumers: BTreeSet<Vec<u8>> = all(0x04).into_iter().map(|(rest, _)| rest).collect();
    if let Some((_, group)) = all(0x02).into_iter().find(|(rest, _)| rest == b"g") {
        let mut g = GroupVal { last: (le(&group[..8]), le(&group[8..16])), pel: BTreeMap::new() };
        for (rest, nack) in all(0x03) {
            assert_eq!(&rest[..2], b"\x01g");
            let id = (be(&rest[2..10]), be(&rest[10..18]));
            let consumer = nack[16..].to_vec();
            let twin = [&b"\x01g"[..], &[consumer.len() as u8], &consumer, &rest[2..18]].concat();
            assert!(twins.contains(&twin), "pending {id:?} has its consumer-list twin");
            assert!(consumers.contains(&[&b"\x01g"[..], &consumer].concat()), "its consumer exists");
            g.pel.insert(id, consumer);
        }
        assert_eq!(twins.len(), g.pel.len(), "no consumer-list entry without its pending entry");
        stream.group = Some(g);
    } else {
        assert!(twins.is_empty() && consumers.is_empty(), "no group, no consumers");
    }
    stream
}

fn zset_scores(store: &Store, pool: &Pool, oid: u64, members: Vec<(Vec<u8>, Vec<u8>)>) -> BTreeMap<Vec<u8>, i64> {
    let count = store.element_count(pool, oid, SPACE_SCORES).expect("a count");
    assert_eq!(count, members.len() as u64, "a sorted set's score space has one entry per member");
    let mut scores = BTreeMap::new();
    for (member, bytes) in members {
        let score = f64::from_le_bytes(bytes.try_into().expect("an 8-byte score"));
        let mut rest = score_key(score).to_vec();
        rest.extend_from_slice(&member);
        assert!(
            store.element(pool, oid, SPACE_SCORES, &rest).expect("readable").is_some(),
            "member {member:?}'s score key is missing"
        );
        assert_eq!(score.fract(), 0.0, "this workload's scores are integers");
        scores.insert(member, score as i64);
    }
    scores
}
