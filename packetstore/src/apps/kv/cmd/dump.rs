//! DUMP and RESTORE with Redis 7.0's payload: an RDB-serialized value,
//! the RDB version (2 bytes LE) and a CRC-64 (Jones, 8 bytes LE) of what
//! precedes it (Redis's `cluster.c` and `rdb.c`).
//!
//! DUMP writes the plain RDB types (string 0, list 1, set 2, hash 4,
//! sorted set 5 with binary scores), which Redis 7.0 also loads. RESTORE
//! reads those and the compact types Redis 7.0 writes for small values
//! (intset, ziplist, listpack, quicklist 1 and 2; integer and LZF string
//! encodings), so a value dumped from Redis restores here. Streams are
//! not dumped or restored for clients (a clear error); between the shards
//! of one server (a RENAME, COPY or MOVE across shards, whose parts run on
//! a stand-in connection, `across.rs`) a stream travels in a payload of
//! packetstore's own (`TYPE_PACKETSTORE_RAW`: the collection's entries as
//! the tree holds them), which a client's RESTORE refuses.
//!
//! Invariants: a payload is checked whole (version, CRC, every length
//! against the bytes left) before anything is written; RESTORE writes the
//! new value, its removal of the old one and its expiry in one group.

use crate::apps::kv::cmd::lists::SEQ_STEP;
use crate::apps::kv::cmd::zsets::score_rest;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::{now_ms, value_bytes, Op, StoreError};
use crate::store::keyspace::{
    element_key, expire_key, seq_key, KeyType, ELEMENT_PREFIX_LEN, SEQ_FIRST, SPACE_MAIN, SPACE_SCORE,
};

/// This family's commands, as COMMAND describes them.
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("dump", 2, &["readonly"], (1, 1, 1), "generic", "Returns a serialized value (Redis's DUMP payload).", KvServer::cmd_dump),
    cmd("restore", -4, &["write", "denyoom"], (1, 1, 1), "generic", "Creates a key from a DUMP payload.", KvServer::cmd_restore),
];

/// Redis 7.0's RDB version: payloads of a later one are refused.
const RDB_VERSION: u16 = 10;
const BAD_FORMAT: &str = "ERR Bad data format";
/// Elements a restored collection may have (a bound on what a payload's
/// lengths may ask for).
const ELEMENTS_MAX: u64 = 1 << 32;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_HASH_ZIPMAP: u8 = 9;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
/// Not Redis's: a collection as its entries (space, rest, value), for a
/// move between shards only.
const TYPE_PACKETSTORE_RAW: u8 = 0xF5;

/// A value as a payload holds it.
#[derive(Debug, PartialEq)]
enum Object {
    String(Vec<u8>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    Zset(Vec<(Vec<u8>, f64)>),
    /// A collection of `kind` as its element entries: (space, rest, value).
    Raw(KeyType, Vec<(u8, Vec<u8>, Vec<u8>)>),
}

// ---- CRC-64 (Jones, reflected), as Redis's crc64.c ----

const fn crc64_table() -> [u64; 256] {
    // 0xad93d23594c935a9 reflected.
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static CRC64: [u64; 256] = crc64_table();

fn crc64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |crc, &b| CRC64[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8))
}

// ---- writing ----

fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The payload of `object`: type, value, version, CRC.
fn payload(object: &Object) -> Vec<u8> {
    let mut out = Vec::new();
    match object {
        Object::String(bytes) => {
            out.push(TYPE_STRING);
            put_string(&mut out, bytes);
        }
        Object::List(items) | Object::Set(items) => {
            out.push(if matches!(object, Object::List(_)) { TYPE_LIST } else { TYPE_SET });
            put_len(&mut out, items.len() as u64);
            items.iter().for_each(|item| put_string(&mut out, item));
        }
        Object::Hash(pairs) => {
            out.push(TYPE_HASH);
            put_len(&mut out, pairs.len() as u64);
            for (field, value) in pairs {
                put_string(&mut out, field);
                put_string(&mut out, value);
            }
        }
        Object::Zset(members) => {
            out.push(TYPE_ZSET_2);
            put_len(&mut out, members.len() as u64);
            // Redis writes the highest score first (so loading appends).
            for (member, score) in members.iter().rev() {
                put_string(&mut out, member);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Object::Raw(kind, entries) => {
            out.push(TYPE_PACKETSTORE_RAW);
            out.push(kind.code());
            put_len(&mut out, entries.len() as u64);
            for (space, rest, value) in entries {
                out.push(*space);
                put_string(&mut out, rest);
                put_string(&mut out, value);
            }
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

// ---- reading ----

/// A cursor over payload bytes; every read is bounded by what is left.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

type Read<T> = Result<T, &'static str>;

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Read<&'b [u8]> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len()).ok_or(BAD_FORMAT)?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Read<u8> {
        Ok(self.take(1)?[0])
    }

    /// A length, or (special) an encoding tag 0-3.
    fn len_or_special(&mut self) -> Read<(u64, bool)> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => (u64::from(first & 0x3f), false),
            1 => ((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?), false),
            2 if first == 0x80 => (u64::from(u32::from_be_bytes(self.take(4)?.try_into().expect("4"))), false),
            2 if first == 0x81 => (u64::from_be_bytes(self.take(8)?.try_into().expect("8")), false),
            3 => (u64::from(first & 0x3f), true),
            _ => return Err(BAD_FORMAT),
        })
    }

    fn len(&mut self) -> Read<u64> {
        match self.len_or_special()? {
            (len, false) => Ok(len),
            _ => Err(BAD_FORMAT),
        }
    }

    fn count(&mut self) -> Read<usize> {
        let n = self.len()?;
        if n > ELEMENTS_MAX || n > (self.bytes.len() - self.at) as u64 {
            return Err(BAD_FORMAT);
        }
        Ok(n as usize)
    }

    /// A string: plain, an integer encoding, or LZF-compressed.
    fn string(&mut self) -> Read<Vec<u8>> {
        match self.len_or_special()? {
            (len, false) => Ok(self.take(usize::try_from(len).map_err(|_| BAD_FORMAT)?)?.to_vec()),
            (0, true) => Ok((self.byte()? as i8).to_string().into_bytes()),
            (1, true) => Ok(i16::from_le_bytes(self.take(2)?.try_into().expect("2")).to_string().into_bytes()),
            (2, true) => Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4")).to_string().into_bytes()),
            (3, true) => {
                let compressed = self.len()? as usize;
                let len = self.len()? as usize;
                lzf_decompress(self.take(compressed)?, len)
            }
            _ => Err(BAD_FORMAT),
        }
    }

    fn f64_binary(&mut self) -> Read<f64> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    /// A score of the old ZSET type: a length byte and ASCII, or 253 NaN,
    /// 254 +inf, 255 -inf.
    fn f64_text(&mut self) -> Read<f64> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            len => {
                let text = std::str::from_utf8(self.take(usize::from(len))?).map_err(|_| BAD_FORMAT)?;
                text.parse().map_err(|_| BAD_FORMAT)
            }
        }
    }
}

/// LZF (liblzf) decompression to exactly `len` bytes.
fn lzf_decompress(input: &[u8], len: usize) -> Read<Vec<u8>> {
    if len > 512 << 20 {
        return Err(BAD_FORMAT);
    }
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            out.extend_from_slice(input.get(i..i + run).ok_or(BAD_FORMAT)?);
            i += run;
        } else {
            let mut run = ctrl >> 5;
            if run == 7 {
                run += usize::from(*input.get(i).ok_or(BAD_FORMAT)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i).ok_or(BAD_FORMAT)?) + 1;
            i += 1;
            let start = out.len().checked_sub(back).ok_or(BAD_FORMAT)?;
            for k in 0..run + 2 {
                let b = out[start + k];
                out.push(b);
            }
        }
        if out.len() > len {
            return Err(BAD_FORMAT);
        }
    }
    if out.len() != len {
        return Err(BAD_FORMAT);
    }
    Ok(out)
}

/// The entries of a listpack blob.
fn listpack(blob: &[u8]) -> Read<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(blob.get(..4).ok_or(BAD_FORMAT)?.try_into().expect("4")) as usize;
    if total != blob.len() || total < 7 || blob[total - 1] != 0xff {
        return Err(BAD_FORMAT);
    }
    let mut at = 6;
    let mut out = Vec::new();
    while blob[at] != 0xff {
        let b = blob[at];
        let int = |bytes: &[u8]| -> Read<Vec<u8>> { Ok(bytes.to_vec()) };
        let get = |from: usize, n: usize| blob.get(from..from + n).ok_or(BAD_FORMAT);
        let (value, size) = if b & 0x80 == 0 {
            (int((b & 0x7f).to_string().as_bytes())?, 1)
        } else if b & 0xc0 == 0x80 {
            let len = usize::from(b & 0x3f);
            (get(at + 1, len)?.to_vec(), 1 + len)
        } else if b & 0xe0 == 0xc0 {
            let raw = (u16::from(b & 0x1f) << 8) | u16::from(*blob.get(at + 1).ok_or(BAD_FORMAT)?);
            let n = ((raw << 3) as i16) >> 3;
            (n.to_string().into_bytes(), 2)
        } else if b & 0xf0 == 0xe0 {
            let len = (usize::from(b & 0x0f) << 8) | usize::from(*blob.get(at + 1).ok_or(BAD_FORMAT)?);
            (get(at + 2, len)?.to_vec(), 2 + len)
        } else {
            match b {
                0xf0 => {
                    let len = u32::from_le_bytes(get(at + 1, 4)?.try_into().expect("4")) as usize;
                    (get(at + 5, len)?.to_vec(), 5 + len)
                }
                0xf1 => (i16::from_le_bytes(get(at + 1, 2)?.try_into().expect("2")).to_string().into_bytes(), 3),
                0xf2 => {
                    let raw = get(at + 1, 3)?;
                    let n = (i32::from_le_bytes([0, raw[0], raw[1], raw[2]])) >> 8;
                    (n.to_string().into_bytes(), 4)
                }
                0xf3 => (i32::from_le_bytes(get(at + 1, 4)?.try_into().expect("4")).to_string().into_bytes(), 5),
                0xf4 => (i64::from_le_bytes(get(at + 1, 8)?.try_into().expect("8")).to_string().into_bytes(), 9),
                _ => return Err(BAD_FORMAT),
            }
        };
        let backlen = match size {
            0..=127 => 1,
            128..=16383 => 2,
            16384..=2_097_151 => 3,
            2_097_152..=268_435_455 => 4,
            _ => 5,
        };
        at += size + backlen;
        if at >= blob.len() {
            return Err(BAD_FORMAT);
        }
        out.push(value);
    }
    Ok(out)
}

/// The entries of a ziplist blob.
fn ziplist(blob: &[u8]) -> Read<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(blob.get(..4).ok_or(BAD_FORMAT)?.try_into().expect("4")) as usize;
    if total != blob.len() || total < 11 || blob[total - 1] != 0xff {
        return Err(BAD_FORMAT);
    }
    let get = |from: usize, n: usize| blob.get(from..from + n).ok_or(BAD_FORMAT);
    let mut at = 10;
    let mut out = Vec::new();
    while blob[at] != 0xff {
        at += if blob[at] < 254 { 1 } else { 5 };
        let b = *blob.get(at).ok_or(BAD_FORMAT)?;
        let (value, size) = match b >> 6 {
            0 => {
                let len = usize::from(b & 0x3f);
                (get(at + 1, len)?.to_vec(), 1 + len)
            }
            1 => {
                let len = (usize::from(b & 0x3f) << 8) | usize::from(get(at + 1, 1)?[0]);
                (get(at + 2, len)?.to_vec(), 2 + len)
            }
            2 => {
                let len = u32::from_be_bytes(get(at + 1, 4)?.try_into().expect("4")) as usize;
                (get(at + 5, len)?.to_vec(), 5 + len)
            }
            _ => match b {
                0xc0 => (i16::from_le_bytes(get(at + 1, 2)?.try_into().expect("2")).to_string().into_bytes(), 3),
                0xd0 => (i32::from_le_bytes(get(at + 1, 4)?.try_into().expect("4")).to_string().into_bytes(), 5),
                0xe0 => (i64::from_le_bytes(get(at + 1, 8)?.try_into().expect("8")).to_string().into_bytes(), 9),
                0xf0 => {
                    let raw = get(at + 1, 3)?;
                    ((i32::from_le_bytes([0, raw[0], raw[1], raw[2]]) >> 8).to_string().into_bytes(), 4)
                }
                0xfe => ((get(at + 1, 1)?[0] as i8).to_string().into_bytes(), 2),
                0xf1..=0xfd => ((b - 0xf1).to_string().into_bytes(), 1),
                _ => return Err(BAD_FORMAT),
            },
        };
        at += size;
        if at >= blob.len() {
            return Err(BAD_FORMAT);
        }
        out.push(value);
    }
    Ok(out)
}

fn intset(blob: &[u8]) -> Read<Vec<Vec<u8>>> {
    let width = u32::from_le_bytes(blob.get(..4).ok_or(BAD_FORMAT)?.try_into().expect("4")) as usize;
    let count = u32::from_le_bytes(blob.get(4..8).ok_or(BAD_FORMAT)?.try_into().expect("4")) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + width * count {
        return Err(BAD_FORMAT);
    }
    Ok(blob[8..]
        .chunks(width)
        .map(|c| {
            let n = match width {
                2 => i64::from(i16::from_le_bytes(c.try_into().expect("2"))),
                4 => i64::from(i32::from_le_bytes(c.try_into().expect("4"))),
                _ => i64::from_le_bytes(c.try_into().expect("8")),
            };
            n.to_string().into_bytes()
        })
        .collect())
}

fn pairs(items: Vec<Vec<u8>>) -> Read<Vec<(Vec<u8>, Vec<u8>)>> {
    if items.len() % 2 != 0 {
        return Err(BAD_FORMAT);
    }
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

fn scored(items: Vec<Vec<u8>>) -> Read<Vec<(Vec<u8>, f64)>> {
    pairs(items)?
        .into_iter()
        .map(|(member, score)| {
            let text = std::str::from_utf8(&score).map_err(|_| BAD_FORMAT)?;
            Ok((member, text.parse::<f64>().map_err(|_| BAD_FORMAT)?))
        })
        .collect()
}

/// Checks a payload's version and CRC and reads its value.
fn parse_payload(bytes: &[u8]) -> Result<Object, &'static str> {
    const WRONG: &str = "ERR DUMP payload version or checksum are wrong";
    if bytes.len() < 10 {
        return Err(WRONG);
    }
    let (body, footer) = bytes.split_at(bytes.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().expect("8"));
    if version > RDB_VERSION || crc64(&bytes[..bytes.len() - 8]) != crc {
        return Err(WRONG);
    }
    let mut r = Reader { bytes: body, at: 0 };
    let object = read_object(&mut r)?;
    if r.at != body.len() {
        return Err(BAD_FORMAT);
    }
    Ok(object)
}

fn read_object(r: &mut Reader<'_>) -> Read<Object> {
    let kind = r.byte()?;
    Ok(match kind {
        TYPE_STRING => Object::String(r.string()?),
        TYPE_PACKETSTORE_RAW => {
            let kind = KeyType::from_code(r.byte()?).filter(|&k| k != KeyType::String).ok_or(BAD_FORMAT)?;
            let n = r.count()?;
            let entries = (0..n).map(|_| Ok((r.byte()?, r.string()?, r.string()?))).collect::<Read<Vec<_>>>()?;
            Object::Raw(kind, entries)
        }
        TYPE_LIST | TYPE_SET => {
            let n = r.count()?;
            let items = (0..n).map(|_| r.string()).collect::<Read<Vec<_>>>()?;
            if kind == TYPE_LIST {
                Object::List(items)
            } else {
                Object::Set(items)
            }
        }
        TYPE_HASH => {
            let n = r.count()?;
            Object::Hash((0..n).map(|_| Ok((r.string()?, r.string()?))).collect::<Read<Vec<_>>>()?)
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            let mut members = (0..n)
                .map(|_| {
                    let member = r.string()?;
                    let score = if kind == TYPE_ZSET { r.f64_text()? } else { r.f64_binary()? };
                    if score.is_nan() {
                        return Err(BAD_FORMAT);
                    }
                    Ok((member, score))
                })
                .collect::<Read<Vec<_>>>()?;
            members.reverse();
            Object::Zset(members)
        }
        TYPE_SET_INTSET => Object::Set(intset(&r.string()?)?),
        TYPE_LIST_ZIPLIST => Object::List(ziplist(&r.string()?)?),
        TYPE_HASH_ZIPLIST => Object::Hash(pairs(ziplist(&r.string()?)?)?),
        TYPE_ZSET_ZIPLIST => Object::Zset(scored(ziplist(&r.string()?)?)?),
        TYPE_HASH_LISTPACK => Object::Hash(pairs(listpack(&r.string()?)?)?),
        TYPE_ZSET_LISTPACK => Object::Zset(scored(listpack(&r.string()?)?)?),
        TYPE_LIST_QUICKLIST => {
            let nodes = r.count()?;
            let mut items = Vec::new();
            for _ in 0..nodes {
                items.extend(ziplist(&r.string()?)?);
            }
            Object::List(items)
        }
        TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            let mut items = Vec::new();
            for _ in 0..nodes {
                match r.len()? {
                    1 => items.push(r.string()?),
                    2 => items.extend(listpack(&r.string()?)?),
                    _ => return Err(BAD_FORMAT),
                }
            }
            Object::List(items)
        }
        TYPE_HASH_ZIPMAP => return Err(BAD_FORMAT),
        _ => return Err(BAD_FORMAT),
    })
}

/// RESTORE's options.
struct RestoreArgs {
    ttl_ms: i64,
    replace: bool,
    absolute: bool,
}

fn parse_restore(ctx: &Ctx<'_>) -> Result<RestoreArgs, &'static str> {
    let ttl_ms = parse_i64(&ctx.arg(2)).ok_or(NOT_INTEGER)?;
    let mut args = RestoreArgs { ttl_ms, replace: false, absolute: false };
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        match ctx.arg(j).to_ascii_uppercase().as_slice() {
            b"REPLACE" => args.replace = true,
            b"ABSTTL" => args.absolute = true,
            b"IDLETIME" if more > 0 && !freq => {
                let n = parse_i64(&ctx.arg(j + 1)).ok_or(NOT_INTEGER)?;
                if n < 0 {
                    return Err("ERR Invalid IDLETIME value, must be >= 0");
                }
                idle = true;
                j += 1;
            }
            b"FREQ" if more > 0 && !idle => {
                let n = parse_i64(&ctx.arg(j + 1)).ok_or(NOT_INTEGER)?;
                if !(0..=255).contains(&n) {
                    return Err("ERR Invalid FREQ value, must be >= 0 and <= 255");
                }
                freq = true;
                j += 1;
            }
            _ => return Err(SYNTAX),
        }
        j += 1;
    }
    if args.ttl_ms < 0 {
        return Err("ERR Invalid TTL value, must be >= 0");
    }
    Ok(args)
}

impl KvServer {
    fn cmd_dump(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        let Some(kind) = self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)? else {
            ctx.null();
            return Ok(());
        };
        let object = match kind {
            KeyType::String => {
                let value = self.store.get(ctx.pool, ctx.db, &key, ctx.now)?.expect("a live string");
                Object::String(value_bytes(ctx.pool, &value)?.into_owned())
            }
            KeyType::Stream if crate::apps::kv::across::is_stand_in(ctx.conn) => self.dump_raw(ctx, &key, kind)?,
            KeyType::Stream => {
                ctx.error("ERR DUMP of a stream is not supported by packetstore");
                return Ok(());
            }
            _ => self.dump_collection(ctx, &key, kind)?,
        };
        ctx.bulk(&payload(&object));
        Ok(())
    }

    /// A collection as its entries in every space, for another shard.
    fn dump_raw(&self, ctx: &Ctx<'_>, key: &[u8], kind: KeyType) -> Result<Object, StoreError> {
        let meta = self.store.meta(ctx.pool, ctx.db, key, ctx.now)?.expect("a live collection");
        let mut entries = Vec::new();
        for (tree_key, value) in self.store.object_entries(ctx.pool, meta.oid)? {
            // A tree key is the object's prefix, the space, then the rest.
            let (space, rest) = (tree_key[ELEMENT_PREFIX_LEN - 1], tree_key[ELEMENT_PREFIX_LEN..].to_vec());
            entries.push((space, rest, value_bytes(ctx.pool, &value)?.into_owned()));
        }
        Ok(Object::Raw(kind, entries))
    }

    fn dump_collection(&self, ctx: &Ctx<'_>, key: &[u8], kind: KeyType) -> Result<Object, StoreError> {
        let meta = self.store.meta(ctx.pool, ctx.db, key, ctx.now)?.expect("a live collection");
        let unbounded = std::ops::Bound::Unbounded;
        let mut entries = Vec::new();
        for entry in self.store.elements(ctx.pool, meta.oid, SPACE_MAIN, unbounded, unbounded, false) {
            let (rest, value) = entry?;
            entries.push((rest, value_bytes(ctx.pool, &value)?.into_owned()));
        }
        Ok(match kind {
            KeyType::List => Object::List(entries.into_iter().map(|(_, v)| v).collect()),
            KeyType::Set => Object::Set(entries.into_iter().map(|(m, _)| m).collect()),
            KeyType::Hash => Object::Hash(entries),
            _ => {
                let mut members = Vec::with_capacity(entries.len());
                for (member, score) in entries {
                    let bytes: [u8; 8] = score
                        .as_slice()
                        .try_into()
                        .map_err(|_| StoreError::Corrupt("a sorted set score is not 8 bytes".into()))?;
                    members.push((member, f64::from_le_bytes(bytes)));
                }
                members.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
                Object::Zset(members)
            }
        })
    }

    fn cmd_restore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let args = match parse_restore(ctx) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let exists = self.store.key_type(ctx.pool, ctx.db, &key, ctx.now)?.is_some();
        if exists && !args.replace {
            ctx.error("BUSYKEY Target key name already exists.");
            return Ok(());
        }
        let object = match parse_payload(&ctx.arg(3)) {
            // Packetstore's own payload only from another shard's part.
            Ok(Object::Raw(..)) if !crate::apps::kv::across::is_stand_in(ctx.conn) => {
                ctx.error(BAD_FORMAT);
                return Ok(());
            }
            Ok(object) => object,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let expire_at = match (args.ttl_ms, args.absolute) {
            (0, _) => None,
            (ms, true) => Some(ms as u64),
            (ms, false) => Some(now_ms().saturating_add(ms as u64)),
        };
        let expired = expire_at.is_some_and(|at| at <= now_ms());
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &key, ops)?;
            if expired {
                return Ok(());
            }
            server.restore_ops(ctx, &key, &object, ops)?;
            if let Some(at) = expire_at {
                ops.push(server.put_bytes(ctx, expire_key(ctx.db, &key), &at.to_le_bytes())?);
            }
            Ok(())
        })?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        if !expired {
            self.notify(ctx, crate::apps::kv::cmd::notify::GENERIC, "restore", &key);
        }
        ctx.ok();
        Ok(())
    }

    /// Ops writing `object` at `key` (known free).
    fn restore_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        object: &Object,
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        let kind = match object {
            Object::String(bytes) => {
                ops.push(self.put_bytes(ctx, crate::store::keyspace::string_key(ctx.db, key), bytes)?);
                return Ok(());
            }
            Object::List(_) => KeyType::List,
            Object::Set(_) => KeyType::Set,
            Object::Hash(_) => KeyType::Hash,
            Object::Zset(_) => KeyType::ZSet,
            Object::Raw(kind, _) => *kind,
        };
        let meta = self.new_object_ops(ctx, key, kind, ops)?;
        let oid = meta.oid;
        match object {
            Object::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    let seq = SEQ_FIRST + i as u64 * SEQ_STEP;
                    ops.push(self.put_bytes(ctx, element_key(oid, SPACE_MAIN, &seq_key(seq)), item)?);
                }
            }
            Object::Set(members) => {
                for member in members {
                    ops.push(self.put_bytes(ctx, element_key(oid, SPACE_MAIN, member), &[])?);
                }
            }
            Object::Hash(pairs) => {
                for (field, value) in pairs {
                    ops.push(self.put_bytes(ctx, element_key(oid, SPACE_MAIN, field), value)?);
                }
            }
            Object::Zset(members) => {
                for (member, score) in members {
                    let score = if *score == 0.0 { 0.0 } else { *score };
                    ops.push(self.put_bytes(ctx, element_key(oid, SPACE_MAIN, member), &score.to_le_bytes())?);
                    ops.push(self.put_bytes(ctx, element_key(oid, SPACE_SCORE, &score_rest(score, member)), &[])?);
                }
            }
            Object::Raw(_, entries) => {
                for (space, rest, value) in entries {
                    ops.push(self.put_bytes(ctx, element_key(oid, *space, rest), value)?);
                }
            }
            Object::String(_) => unreachable!("handled above"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_redis_s() {
        // Redis's crc64.c test vector.
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn payloads_round_trip_and_refuse_damage() {
        let objects = [
            Object::String(b"hello".to_vec()),
            Object::List(vec![b"a".to_vec(), vec![b'x'; 70_000], b"".to_vec()]),
            Object::Set(vec![b"m".to_vec()]),
            Object::Hash(vec![(b"f".to_vec(), b"v".to_vec())]),
            Object::Zset(vec![(b"a".to_vec(), -1.5), (b"b".to_vec(), f64::INFINITY)]),
            Object::Raw(KeyType::Stream, vec![(0, b"state".to_vec(), b"s".to_vec()), (3, vec![0; 16], vec![])]),
        ];
        for object in objects {
            let mut bytes = payload(&object);
            assert_eq!(parse_payload(&bytes), Ok(object));
            bytes[1] ^= 1;
            assert!(parse_payload(&bytes).is_err(), "a flipped byte fails the CRC");
        }
        // A raw payload names a collection, never a string.
        assert_eq!(parse_payload(&payload(&Object::Raw(KeyType::String, Vec::new()))), Err(BAD_FORMAT));
    }

    #[test]
    fn redis_7_payloads_restore() {
        // Built as Redis 7.0 writes them: `SET k 12345` (an int16 string
        // encoding), a small hash's listpack, an LZF-compressed string.
        let mut rebuilt = vec![TYPE_STRING, 0xc1, 0x39, 0x30];
        rebuilt.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(&rebuilt);
        rebuilt.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(parse_payload(&rebuilt), Ok(Object::String(b"12345".to_vec())));
        // A listpack of "f", "v", 7 built by hand.
        let mut lp = vec![0, 0, 0, 0, 3, 0];
        lp.extend_from_slice(&[0x81, b'f', 2, 0x81, b'v', 2, 0x07, 1, 0xff]);
        let total = lp.len() as u32;
        lp[..4].copy_from_slice(&total.to_le_bytes());
        assert_eq!(listpack(&lp), Ok(vec![b"f".to_vec(), b"v".to_vec(), b"7".to_vec()]));
        assert_eq!(lzf_decompress(&[2, b'a', b'b', b'c', 0x20, 0x02], 6), Ok(b"abcabc".to_vec()));
    }
}
