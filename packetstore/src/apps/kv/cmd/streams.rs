//! Stream commands: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XREAD
//! (with BLOCK), XSETID, XINFO (Redis 7.0's `t_stream.c`); consumer
//! groups are in `stream_groups.rs`.
//!
//! A stream is an object (schema 2): its state at `e` oid `0x00` (last id,
//! entries added, max deleted id, and the emulated node of its tail), its
//! entries at `e` oid `0x01` id (ms BE, seq BE) -> the entry (its place:
//! node, place in the node, ordinal; then its fields and values). XADD
//! writes its entry alone: the state is the stored one advanced by the
//! tail entry's id and place; XDEL, XTRIM and XSETID write it. Redis keeps entries in radix-tree
//! nodes of stream-node-max-entries; `~` trimming removes whole nodes only,
//! so each entry records the node it would have joined (a new node every
//! stream-node-max-entries appends), and approximate trimming removes whole
//! runs of one node number from the head, as Redis does.
//!
//! Invariants: ids only grow (the state's last id, advanced by the tail,
//! is the largest ever added, deleted or not); an emptied stream stays (as
//! in Redis); XADD (with its trim), XDEL, XTRIM and XSETID are one store
//! group each; whatever deletes entries writes the state first computed
//! with the tail still there.

use std::ops::Bound;
use std::time::{Duration, Instant};

use crate::apps::kv::cmd::notify;
use crate::apps::kv::cmd::scripting::help;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::proto::resp::Args;
use crate::store::db::{value_bytes, Op, StoreError};
use crate::store::keyspace::{element_key, KeyType, Meta, SPACE_MAIN};

/// This family's commands, as COMMAND describes them.
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("xadd", -5, &["write", "denyoom", "fast"], (1, 1, 1), "stream", "Appends an entry to a stream.", KvServer::cmd_xadd),
    cmd("xrange", -4, &["readonly"], (1, 1, 1), "stream", "Returns the entries of a stream within a range of ids.", KvServer::cmd_xrange),
    cmd("xrevrange", -4, &["readonly"], (1, 1, 1), "stream", "Returns the entries of a stream within a range of ids, in reverse.", KvServer::cmd_xrevrange),
    cmd("xlen", 2, &["readonly", "fast"], (1, 1, 1), "stream", "Returns the number of entries of a stream.", KvServer::cmd_xlen),
    cmd("xdel", -3, &["write", "fast"], (1, 1, 1), "stream", "Deletes entries of a stream.", KvServer::cmd_xdel),
    cmd("xtrim", -4, &["write"], (1, 1, 1), "stream", "Deletes the oldest entries of a stream.", KvServer::cmd_xtrim),
    cmd("xread", -4, &["readonly", "blocking", "movablekeys"], (0, 0, 0), "stream", "Returns entries of streams after given ids, waiting for some.", KvServer::cmd_xread),
    cmd("xsetid", -3, &["write", "denyoom", "fast"], (1, 1, 1), "stream", "Sets a stream's last id.", KvServer::cmd_xsetid),
    cmd("xinfo", -2, &["readonly"], (0, 0, 0), "stream", "XINFO STREAM, GROUPS, CONSUMERS, HELP.", KvServer::cmd_xinfo),
];

/// The space of a stream's state.
const SPACE_STATE: u8 = 0x00;
const STATE_LEN: usize = 16 + 8 + 16 + 8 + 4;
/// The longest run of fields and values one entry may carry.
const ENTRY_BYTES_MAX: usize = u32::MAX as usize;
/// XREAD BLOCK's count when none is given (Redis's).
const BLOCKED_COUNT_DEFAULT: usize = 1000;
pub(in crate::apps::kv) const BLOCK_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

pub(in crate::apps::kv) const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// A stream entry id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(in crate::apps::kv) struct StreamId {
    pub(in crate::apps::kv) ms: u64,
    pub(in crate::apps::kv) seq: u64,
}

impl StreamId {
    pub(in crate::apps::kv) const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub(in crate::apps::kv) fn key(self) -> [u8; 16] {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.ms.to_be_bytes());
        key[8..].copy_from_slice(&self.seq.to_be_bytes());
        key
    }

    pub(in crate::apps::kv) fn from_key(rest: &[u8]) -> Result<StreamId, StoreError> {
        if rest.len() != 16 {
            return Err(StoreError::Corrupt("a stream entry id is not 16 bytes".into()));
        }
        let half = |r: &[u8]| u64::from_be_bytes(r.try_into().expect("8 bytes"));
        Ok(StreamId { ms: half(&rest[..8]), seq: half(&rest[8..]) })
    }

    pub(in crate::apps::kv) fn text(self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }

    pub(in crate::apps::kv) fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_add(1).map(|ms| StreamId { ms, seq: 0 }),
        }
    }

    pub(in crate::apps::kv) fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => self.ms.checked_sub(1).map(|ms| StreamId { ms, seq: u64::MAX }),
        }
    }
}

/// Parses `ms[-seq]`, `-` and `+` (unless `strict`); a missing seq is
/// `missing_seq`. With `star_seq`, `ms-*` parses with seq None.
pub(in crate::apps::kv) fn parse_id(
    bytes: &[u8],
    missing_seq: u64,
    strict: bool,
) -> Result<(StreamId, bool), &'static str> {
    match bytes {
        b"-" if !strict => return Ok((StreamId::default(), true)),
        b"+" if !strict => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let text = std::str::from_utf8(bytes).map_err(|_| INVALID_ID)?;
    if text.len() > 127 {
        return Err(INVALID_ID);
    }
    let number = |t: &str| -> Result<u64, &'static str> {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(INVALID_ID);
        }
        t.parse().map_err(|_| INVALID_ID)
    };
    match text.split_once('-') {
        None => Ok((StreamId { ms: number(text)?, seq: missing_seq }, true)),
        Some((ms, "*")) => Ok((StreamId { ms: number(ms)?, seq: 0 }, false)),
        Some((ms, seq)) => Ok((StreamId { ms: number(ms)?, seq: number(seq)? }, true)),
    }
}

/// A stream's state (`e` oid `0x00`).
#[derive(Clone, Copy, Default)]
pub(in crate::apps::kv) struct State {
    pub(in crate::apps::kv) last_id: StreamId,
    pub(in crate::apps::kv) entries_added: u64,
    pub(in crate::apps::kv) max_deleted: StreamId,
    /// The emulated radix-tree node of the tail, and its appends so far.
    pub(in crate::apps::kv) node: u64,
    pub(in crate::apps::kv) node_fill: u32,
}

impl State {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(STATE_LEN);
        out.extend_from_slice(&self.last_id.ms.to_le_bytes());
        out.extend_from_slice(&self.last_id.seq.to_le_bytes());
        out.extend_from_slice(&self.entries_added.to_le_bytes());
        out.extend_from_slice(&self.max_deleted.ms.to_le_bytes());
        out.extend_from_slice(&self.max_deleted.seq.to_le_bytes());
        out.extend_from_slice(&self.node.to_le_bytes());
        out.extend_from_slice(&self.node_fill.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Result<State, StoreError> {
        if bytes.len() != STATE_LEN {
            return Err(StoreError::Corrupt("a stream's state is malformed".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(State {
            last_id: StreamId { ms: u64_at(0), seq: u64_at(8) },
            entries_added: u64_at(16),
            max_deleted: StreamId { ms: u64_at(24), seq: u64_at(32) },
            node: u64_at(40),
            node_fill: u32::from_le_bytes(bytes[48..52].try_into().expect("4 bytes")),
        })
    }
}

/// Where an entry stands in its stream's history: the emulated node it
/// joined, its place in that node (from 1), and its ordinal among all
/// entries ever added (from 1). The tail entry's place gives the state's
/// counters, so XADD writes the entry alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    node: u64,
    fill: u32,
    ordinal: u64,
}

const PLACE_LEN: usize = 8 + 4 + 8;

/// An entry's value: its place (node u64 LE, fill u32 LE, ordinal u64
/// LE), its pair count u32 LE, then each field and value as len u32 LE
/// and bytes.
fn encode_entry(place: Place, pairs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PLACE_LEN + 4 + pairs.iter().map(|p| 4 + p.len()).sum::<usize>());
    out.extend_from_slice(&place.node.to_le_bytes());
    out.extend_from_slice(&place.fill.to_le_bytes());
    out.extend_from_slice(&place.ordinal.to_le_bytes());
    out.extend_from_slice(&((pairs.len() / 2) as u32).to_le_bytes());
    for item in pairs {
        out.extend_from_slice(&(item.len() as u32).to_le_bytes());
        out.extend_from_slice(item);
    }
    out
}

/// An entry's place and its fields and values, in order.
fn decode_entry(bytes: &[u8]) -> Result<(Place, Vec<Vec<u8>>), StoreError> {
    let bad = || StoreError::Corrupt("a stream entry is malformed".into());
    let u64_at = |at: usize| -> Result<u64, StoreError> {
        Ok(u64::from_le_bytes(bytes.get(at..at + 8).ok_or_else(bad)?.try_into().expect("8 bytes")))
    };
    let u32_at = |at: usize| -> Result<u32, StoreError> {
        Ok(u32::from_le_bytes(bytes.get(at..at + 4).ok_or_else(bad)?.try_into().expect("4 bytes")))
    };
    let place = Place { node: u64_at(0)?, fill: u32_at(8)?, ordinal: u64_at(12)? };
    let pairs = u32_at(PLACE_LEN)? as usize;
    let mut at = PLACE_LEN + 4;
    let mut items = Vec::with_capacity(pairs.min(1 << 16) * 2);
    for _ in 0..pairs * 2 {
        let len = u32_at(at)? as usize;
        at += 4;
        items.push(bytes.get(at..at + len).ok_or_else(bad)?.to_vec());
        at += len;
    }
    Ok((place, items))
}

/// How XADD or XTRIM trims.
#[derive(Clone, Copy)]
enum Trim {
    None,
    MaxLen(u64),
    MinId(StreamId),
}

struct TrimArgs {
    trim: Trim,
    approx: bool,
    /// Entries one trim may remove (0: no limit).
    limit: u64,
}

/// XADD's options and where its id is.
struct AddArgs {
    trim: TrimArgs,
    no_mkstream: bool,
    /// The id given (None: `*`), and whether its seq was given.
    id: Option<(StreamId, bool)>,
    id_at: usize,
}

/// One entry read back.
pub(in crate::apps::kv) struct Entry {
    pub(in crate::apps::kv) id: StreamId,
    pub(in crate::apps::kv) pairs: Vec<Vec<u8>>,
}

impl KvServer {
    fn node_max_entries(&self) -> u64 {
        self.config_params.get("stream-node-max-entries").and_then(|v| v.parse().ok()).unwrap_or(100)
    }

    /// The live stream at `key`; replies WRONGTYPE and returns Err(()) if
    /// it holds another type.
    pub(in crate::apps::kv) fn stream_read(
        &self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
    ) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let found = self.collection(ctx, key, KeyType::Stream)?;
        if found.is_err() {
            ctx.error(WRONGTYPE);
        }
        Ok(found)
    }

    /// A stream's state: the stored one (written by XDEL, XTRIM, XSETID
    /// and trims), advanced by the tail entry's id and place when it is
    /// newer (XADD writes no state).
    pub(in crate::apps::kv) fn stream_state(&self, ctx: &Ctx<'_>, oid: u64) -> Result<State, StoreError> {
        let mut state = match self.store.element(ctx.pool, oid, SPACE_STATE, &[])? {
            Some(value) => State::decode(&value_bytes(ctx.pool, &value)?)?,
            None => State::default(),
        };
        let unbounded = Bound::Unbounded;
        if let Some(entry) = self.store.elements(ctx.pool, oid, SPACE_MAIN, unbounded, unbounded, true).next() {
            let (rest, value) = entry?;
            let id = StreamId::from_key(&rest)?;
            let (place, _) = decode_entry(&value_bytes(ctx.pool, &value)?)?;
            state.last_id = state.last_id.max(id);
            if place.ordinal > state.entries_added {
                state.entries_added = place.ordinal;
                state.node = place.node;
                state.node_fill = place.fill;
            }
        }
        Ok(state)
    }

    pub(in crate::apps::kv) fn stream_len(&self, ctx: &Ctx<'_>, oid: u64) -> Result<u64, StoreError> {
        self.store.element_count(ctx.pool, oid, SPACE_MAIN)
    }

    /// Entries with ids in [start, end], at most `count` (0: all), from
    /// the end when `rev`.
    pub(in crate::apps::kv) fn stream_range(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        start: StreamId,
        end: StreamId,
        count: usize,
        rev: bool,
    ) -> Result<Vec<Entry>, StoreError> {
        if start > end {
            return Ok(Vec::new());
        }
        let (low, high) = (start.key(), end.key());
        let entries =
            self.store.elements(ctx.pool, oid, SPACE_MAIN, Bound::Included(&low), Bound::Included(&high), rev);
        let mut out = Vec::new();
        for entry in entries {
            let (rest, value) = entry?;
            let (_, pairs) = decode_entry(&value_bytes(ctx.pool, &value)?)?;
            out.push(Entry { id: StreamId::from_key(&rest)?, pairs });
            if count != 0 && out.len() >= count {
                break;
            }
        }
        Ok(out)
    }

    pub(in crate::apps::kv) fn first_entry_id(&self, ctx: &Ctx<'_>, oid: u64) -> Result<StreamId, StoreError> {
        let mut entries = self.store.elements(ctx.pool, oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false);
        match entries.next() {
            Some(entry) => StreamId::from_key(&entry?.0),
            None => Ok(StreamId::default()),
        }
    }

    pub(in crate::apps::kv) fn reply_entries(ctx: &mut Ctx<'_>, entries: &[Entry]) {
        ctx.array(entries.len());
        for entry in entries {
            Self::reply_entry(ctx, entry);
        }
    }

    pub(in crate::apps::kv) fn reply_entry(ctx: &mut Ctx<'_>, entry: &Entry) {
        ctx.array(2);
        ctx.bulk(entry.id.text().as_bytes());
        ctx.array(entry.pairs.len());
        for item in &entry.pairs {
            ctx.bulk(item);
        }
    }

    // ---- XADD and XTRIM ----

    /// Parses XADD's (`xadd`) or XTRIM's options from argument 2.
    fn parse_add_or_trim(&self, ctx: &Ctx<'_>, xadd: bool) -> Result<AddArgs, String> {
        let mut args = AddArgs {
            trim: TrimArgs { trim: Trim::None, approx: false, limit: 0 },
            no_mkstream: false,
            id: None,
            id_at: 0,
        };
        let mut limit_given = false;
        let mut i = 2;
        while i < ctx.argc() {
            let more = ctx.argc() - 1 - i;
            let opt = ctx.arg(i).to_ascii_lowercase();
            match opt.as_slice() {
                b"*" if xadd => {
                    args.id_at = i;
                    break;
                }
                b"maxlen" | b"minid" if more > 0 => {
                    if !matches!(args.trim.trim, Trim::None) {
                        return Err(
                            "ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into()
                        );
                    }
                    args.trim.approx = false;
                    let next = ctx.arg(i + 1);
                    if more >= 2 && (&*next == b"~" || &*next == b"=") {
                        args.trim.approx = &*next == b"~";
                        i += 1;
                    }
                    let threshold = ctx.arg(i + 1);
                    args.trim.trim = if opt == b"maxlen" {
                        let n = parse_i64(&threshold).ok_or(NOT_INTEGER)?;
                        if n < 0 {
                            return Err("ERR The MAXLEN argument must be >= 0.".into());
                        }
                        Trim::MaxLen(n as u64)
                    } else {
                        Trim::MinId(parse_id(&threshold, 0, true)?.0)
                    };
                    i += 1;
                }
                b"limit" if more > 0 => {
                    let n = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?;
                    if n < 0 {
                        return Err("ERR The LIMIT argument must be >= 0.".into());
                    }
                    args.trim.limit = n as u64;
                    limit_given = true;
                    i += 1;
                }
                b"nomkstream" if xadd => args.no_mkstream = true,
                _ if xadd => {
                    let (id, seq_given) = parse_id(&ctx.arg(i), 0, true)?;
                    args.id = Some((id, seq_given));
                    args.id_at = i;
                    break;
                }
                _ => return Err(SYNTAX.into()),
            }
            i += 1;
        }
        if xadd && args.id_at == 0 {
            args.id_at = i;
        }
        if args.trim.limit != 0 && matches!(args.trim.trim, Trim::None) {
            return Err("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into());
        }
        if !xadd && matches!(args.trim.trim, Trim::None) {
            return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
        }
        if limit_given && !args.trim.approx {
            return Err("ERR syntax error, LIMIT cannot be used without the special ~ option".into());
        }
        if !limit_given {
            args.trim.limit = if args.trim.approx {
                match 100 * self.node_max_entries() {
                    0 => 10_000,
                    n => n.min(1_000_000),
                }
            } else {
                0
            };
        }
        Ok(args)
    }

    fn cmd_xadd(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let args = match self.parse_add_or_trim(ctx, true) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let fields_at = args.id_at + 1;
        let pairs = ctx.argc().saturating_sub(fields_at);
        if args.id_at >= ctx.argc() || pairs < 2 || pairs % 2 == 1 {
            ctx.error("ERR wrong number of arguments for 'xadd' command");
            return Ok(());
        }
        if args.id == Some((StreamId::default(), true)) {
            ctx.error("ERR The ID specified in XADD must be greater than 0-0");
            return Ok(());
        }
        let key = ctx.arg(1).into_owned();
        let items: Vec<Vec<u8>> = (fields_at..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        if items.iter().map(Vec::len).sum::<usize>() > ENTRY_BYTES_MAX {
            ctx.error("ERR Elements are too large to be stored");
            return Ok(());
        }
        let existing = match self.stream_read(ctx, &key)? {
            Ok(found) => found,
            Err(()) => return Ok(()),
        };
        if existing.is_none() && args.no_mkstream {
            ctx.null();
            return Ok(());
        }
        let mut state = match existing {
            Some(meta) => self.stream_state(ctx, meta.oid)?,
            None => State::default(),
        };
        if state.last_id == StreamId::MAX {
            ctx.error("ERR The stream has exhausted the last possible ID, unable to add more items");
            return Ok(());
        }
        let id = match args.id {
            None => next_auto_id(state.last_id),
            Some((id, true)) => Some(id),
            Some((id, false)) if id.ms == state.last_id.ms => state.last_id.next().filter(|n| n.ms == id.ms),
            Some((id, false)) => Some(id),
        };
        let Some(id) = id.filter(|&id| id > state.last_id) else {
            ctx.error("ERR The ID specified in XADD is equal or smaller than the target stream top item");
            return Ok(());
        };
        let node_max = self.node_max_entries().max(1);
        if state.entries_added == 0 || u64::from(state.node_fill) >= node_max {
            state.node += u64::from(state.entries_added != 0);
            state.node_fill = 0;
        }
        state.node_fill += 1;
        state.last_id = id;
        state.entries_added += 1;
        let mut ops = Vec::new();
        let created = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let (meta, created) = match existing {
                Some(meta) => (meta, false),
                None => (server.new_object_ops(ctx, &key, KeyType::Stream, ops)?, true),
            };
            let place = Place { node: state.node, fill: state.node_fill, ordinal: state.entries_added };
            let entry = encode_entry(place, &items);
            ops.push(server.put_bytes(ctx, element_key(meta.oid, SPACE_MAIN, &id.key()), &entry)?);
            Ok((meta, created))
        })?;
        let (meta, created) = created;
        // The trim reads the tree with the new entry in it: applied first,
        // in the same group.
        let own_group = !self.store.in_group();
        if own_group {
            self.store.begin_group();
        }
        let result = self.xadd_apply(ctx, meta, &mut state, ops, &args.trim);
        if own_group {
            self.store.end_group(ctx.pool, ctx.buffers)?;
        }
        let trimmed = result?;
        ctx.bulk(id.text().as_bytes());
        self.notify_created(ctx, created, &key);
        self.notify(ctx, notify::STREAM, "xadd", &key);
        if trimmed > 0 {
            self.notify(ctx, notify::STREAM, "xtrim", &key);
        }
        Ok(())
    }

    /// Applies XADD's entry, then its trim and the new state.
    fn xadd_apply(
        &mut self,
        ctx: &mut Ctx<'_>,
        meta: Meta,
        state: &mut State,
        ops: Vec<Op>,
        trim: &TrimArgs,
    ) -> Result<u64, StoreError> {
        self.apply(ctx, &ops)?;
        let (mut trim_ops, trimmed) = self.trim_ops(ctx, meta.oid, trim)?;
        if trimmed > 0 {
            // The trim may take the new entry too (MAXLEN 0): the state
            // keeps what its place said.
            let state_op = self.put_bytes(ctx, element_key(meta.oid, SPACE_STATE, &[]), &state.encode())?;
            trim_ops.push(state_op);
            self.apply(ctx, &trim_ops)?;
        }
        Ok(trimmed)
    }

    /// The deletes a trim makes (Redis's streamTrim over emulated nodes):
    /// whole nodes from the head while the rule allows; then, unless
    /// approximate, entries of the first node left.
    fn trim_ops(&self, ctx: &Ctx<'_>, oid: u64, args: &TrimArgs) -> Result<(Vec<Op>, u64), StoreError> {
        let mut ops = Vec::new();
        if matches!(args.trim, Trim::None) {
            return Ok((ops, 0));
        }
        let mut length = self.stream_len(ctx, oid)?;
        let mut deleted = 0u64;
        let mut entries = self.store.elements(ctx.pool, oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false);
        let mut pending = entries.next().transpose()?;
        while let Some((rest, value)) = pending.take() {
            if let Trim::MaxLen(max) = args.trim {
                if length <= max {
                    break;
                }
            }
            // The node starting here: its entries, in order.
            let node = decode_entry(&value_bytes(ctx.pool, &value)?)?.0.node;
            let mut ids = vec![StreamId::from_key(&rest)?];
            for entry in entries.by_ref() {
                let (rest, value) = entry?;
                if decode_entry(&value_bytes(ctx.pool, &value)?)?.0.node != node {
                    pending = Some((rest, value));
                    break;
                }
                ids.push(StreamId::from_key(&rest)?);
            }
            let count = ids.len() as u64;
            if args.limit != 0 && deleted + count > args.limit {
                break;
            }
            let whole = match args.trim {
                Trim::MaxLen(max) => length - count >= max,
                Trim::MinId(min) => *ids.last().expect("a node has an entry") < min,
                Trim::None => false,
            };
            if whole {
                ops.extend(ids.iter().map(|id| Op::Del { key: element_key(oid, SPACE_MAIN, &id.key()) }));
                length -= count;
                deleted += count;
                continue;
            }
            if args.approx {
                break;
            }
            for id in ids {
                let stop = match args.trim {
                    Trim::MaxLen(max) => length <= max,
                    Trim::MinId(min) => id >= min,
                    Trim::None => true,
                };
                if stop {
                    break;
                }
                ops.push(Op::Del { key: element_key(oid, SPACE_MAIN, &id.key()) });
                length -= 1;
                deleted += 1;
            }
            break;
        }
        Ok((ops, deleted))
    }

    fn cmd_xtrim(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        let args = match self.parse_add_or_trim(ctx, false) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let state = self.stream_state(ctx, meta.oid)?;
        let (ops, _) = self.trim_ops(ctx, meta.oid, &args.trim)?;
        self.apply_deletes(ctx, (&key, meta.oid), &state, ops, "xtrim")
    }

    // ---- reads ----

    fn cmd_xrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.xrange_generic(ctx, false)
    }

    fn cmd_xrevrange(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.xrange_generic(ctx, true)
    }

    fn xrange_generic(&mut self, ctx: &mut Ctx<'_>, rev: bool) -> Result<(), StoreError> {
        let (start_at, end_at) = if rev { (3, 2) } else { (2, 3) };
        let bounds = interval(&ctx.arg(start_at), 0, true).and_then(|start| {
            let end = interval(&ctx.arg(end_at), u64::MAX, false)?;
            Ok((start, end))
        });
        let (start, end) = match bounds {
            Ok(bounds) => bounds,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let mut count: i64 = -1;
        let mut j = 4;
        while j < ctx.argc() {
            if ctx.arg(j).eq_ignore_ascii_case(b"COUNT") && j + 1 < ctx.argc() {
                let Some(n) = parse_i64(&ctx.arg(j + 1)) else {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                };
                count = n.max(0);
                j += 2;
            } else {
                ctx.error(SYNTAX);
                return Ok(());
            }
        }
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        self.stats.reads += 1;
        let Some(meta) = found else {
            ctx.array(0);
            return Ok(());
        };
        if count == 0 {
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
            return Ok(());
        }
        let (Some(start), Some(end)) = (start, end) else {
            ctx.array(0);
            return Ok(());
        };
        let entries = self.stream_range(ctx, meta.oid, start, end, count.max(0) as usize, rev)?;
        Self::reply_entries(ctx, &entries);
        Ok(())
    }

    fn cmd_xlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        self.stats.reads += 1;
        let len = match found {
            Some(meta) => self.stream_len(ctx, meta.oid)?,
            None => 0,
        };
        ctx.int(len as i64);
        Ok(())
    }

    fn cmd_xdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut ids = Vec::new();
        for i in 2..ctx.argc() {
            match parse_id(&ctx.arg(i), 0, true) {
                Ok((id, _)) => ids.push(id),
                Err(why) => {
                    ctx.error(why);
                    return Ok(());
                }
            }
        }
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.int(0);
            return Ok(());
        };
        let mut state = self.stream_state(ctx, meta.oid)?;
        ids.sort_unstable();
        ids.dedup();
        let mut ops = Vec::new();
        for id in ids {
            if self.store.element(ctx.pool, meta.oid, SPACE_MAIN, &id.key())?.is_some() {
                ops.push(Op::Del { key: element_key(meta.oid, SPACE_MAIN, &id.key()) });
                state.max_deleted = state.max_deleted.max(id);
            }
        }
        self.apply_deletes(ctx, (&key, meta.oid), &state, ops, "xdel")
    }

    /// Applies entry deletes with the state (computed before them, so the
    /// tail's counters survive), notifies `event`, answers their count.
    fn apply_deletes(
        &mut self,
        ctx: &mut Ctx<'_>,
        (key, oid): (&[u8], u64),
        state: &State,
        mut ops: Vec<Op>,
        event: &str,
    ) -> Result<(), StoreError> {
        let deleted = ops.len();
        if deleted > 0 {
            ops.push(self.put_bytes(ctx, element_key(oid, SPACE_STATE, &[]), &state.encode())?);
            self.apply(ctx, &ops)?;
            self.notify(ctx, notify::STREAM, event, key);
        }
        ctx.int(deleted as i64);
        Ok(())
    }

    fn cmd_xsetid(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let parsed = (|| -> Result<SetIdArgs, &'static str> {
            let (id, _) = parse_id(&ctx.arg(2), 0, true)?;
            let mut entries_added = None;
            let mut max_deleted = None;
            let mut i = 3;
            while i < ctx.argc() {
                let more = ctx.argc() - 1 - i;
                let opt = ctx.arg(i).to_ascii_uppercase();
                match opt.as_slice() {
                    b"ENTRIESADDED" if more > 0 => {
                        let n = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?;
                        if n < 0 {
                            return Err("ERR entries_added must be positive");
                        }
                        entries_added = Some(n as u64);
                    }
                    b"MAXDELETEDID" if more > 0 => max_deleted = Some(parse_id(&ctx.arg(i + 1), 0, true)?.0),
                    _ => return Err(SYNTAX),
                }
                i += 2;
            }
            match (entries_added, max_deleted) {
                (Some(n), Some(max)) => Ok((id, Some((n, max)))),
                (None, None) => Ok((id, None)),
                _ => Err(SYNTAX),
            }
        })();
        let (id, extra) = match parsed {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let key = ctx.arg(1).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.error("ERR no such key");
            return Ok(());
        };
        let mut state = self.stream_state(ctx, meta.oid)?;
        let len = self.stream_len(ctx, meta.oid)?;
        if let Some((added, max_deleted)) = extra {
            if id < max_deleted {
                ctx.error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
                return Ok(());
            }
            if added < len {
                ctx.error("ERR The entries_added specified in XSETID is smaller than the target stream length");
                return Ok(());
            }
            state.entries_added = added;
            state.max_deleted = max_deleted;
        }
        if len > 0 {
            let last = self.stream_range(ctx, meta.oid, StreamId::default(), StreamId::MAX, 1, true)?;
            if last.first().is_some_and(|e| id < e.id) {
                ctx.error("ERR The ID specified in XSETID is smaller than the target stream top item");
                return Ok(());
            }
        }
        state.last_id = id;
        let op = self.put_bytes(ctx, element_key(meta.oid, SPACE_STATE, &[]), &state.encode())?;
        self.apply(ctx, &[op])?;
        self.notify(ctx, notify::STREAM, "xsetid", &key);
        ctx.ok();
        Ok(())
    }

    // ---- XREAD ----

    fn cmd_xread(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_xread(ctx)? else { return Ok(()) };
        let mut served = Vec::new();
        for (key, after) in request.keys.iter().zip(&request.after) {
            let Some(meta) = self.store.meta(ctx.pool, ctx.db, key, ctx.now)? else { continue };
            let Some(start) = after.next() else { continue };
            let count =
                if request.block.is_some() && request.count == 0 { BLOCKED_COUNT_DEFAULT } else { request.count };
            let entries = self.stream_range(ctx, meta.oid, start, StreamId::MAX, count, false)?;
            if !entries.is_empty() {
                served.push((key.clone(), entries));
            }
        }
        self.stats.reads += 1;
        if !served.is_empty() {
            if ctx.enc().resp3 {
                ctx.map(served.len());
            } else {
                ctx.array(served.len());
            }
            for (key, entries) in &served {
                if !ctx.enc().resp3 {
                    ctx.array(2);
                }
                ctx.bulk(key);
                Self::reply_entries(ctx, entries);
            }
            return Ok(());
        }
        let Some(deadline) = request.block else {
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
            return Ok(());
        };
        // Parked with `$` resolved: woken, it reads what came after.
        if request.resolved {
            let mut argv: Vec<Vec<u8>> = (0..request.ids_at).map(|i| ctx.arg(i).into_owned()).collect();
            argv.extend(request.after.iter().map(|id| id.text().into_bytes()));
            ctx.conn.args.clear(ctx.buffers);
            ctx.conn.args = Args::from_bytes(&argv);
        }
        self.block_or_null(ctx, &request.keys, deadline, KeyType::Stream, false);
        Ok(())
    }

    /// Parses XREAD; None once an error was replied.
    fn parse_xread(&self, ctx: &mut Ctx<'_>) -> Result<Option<XreadRequest>, StoreError> {
        let mut request =
            XreadRequest { keys: Vec::new(), after: Vec::new(), count: 0, block: None, ids_at: 0, resolved: false };
        let mut streams_at = 0;
        let mut i = 1;
        while i < ctx.argc() {
            let more = ctx.argc() - 1 - i;
            let opt = ctx.arg(i).to_ascii_uppercase();
            match opt.as_slice() {
                b"BLOCK" if more > 0 => {
                    if self.scripting.running {
                        ctx.error("ERR xread command is not allowed with BLOCK option from scripts");
                        return Ok(None);
                    }
                    match block_arg(&ctx.arg(i + 1)) {
                        Ok(deadline) => request.block = Some(deadline),
                        Err(why) => {
                            ctx.error(why);
                            return Ok(None);
                        }
                    }
                    i += 1;
                }
                b"COUNT" if more > 0 => {
                    let Some(n) = parse_i64(&ctx.arg(i + 1)) else {
                        ctx.error(NOT_INTEGER);
                        return Ok(None);
                    };
                    request.count = n.max(0) as usize;
                    i += 1;
                }
                b"STREAMS" if more > 0 => {
                    streams_at = i + 1;
                    break;
                }
                b"GROUP" | b"NOACK" => {
                    ctx.error(&format!(
                        "ERR The {} option is only supported by XREADGROUP. You called XREAD instead.",
                        String::from_utf8_lossy(&opt)
                    ));
                    return Ok(None);
                }
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(None);
                }
            }
            i += 1;
        }
        let n = match streams_count(ctx.argc(), streams_at) {
            Ok(n) => n,
            Err(why) => {
                ctx.error(why);
                return Ok(None);
            }
        };
        request.ids_at = streams_at + n;
        for k in 0..n {
            let key = ctx.arg(streams_at + k).into_owned();
            let found = match self.stream_read(ctx, &key)? {
                Ok(found) => found,
                Err(()) => return Ok(None),
            };
            let arg = ctx.arg(request.ids_at + k).into_owned();
            let after = match arg.as_slice() {
                b"$" => {
                    request.resolved = true;
                    match found {
                        Some(meta) => self.stream_state(ctx, meta.oid)?.last_id,
                        None => StreamId::default(),
                    }
                }
                b">" => {
                    ctx.error(
                        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> \
                         <consumer> option.",
                    );
                    return Ok(None);
                }
                _ => match parse_id(&arg, 0, true) {
                    Ok((id, _)) => id,
                    Err(why) => {
                        ctx.error(why);
                        return Ok(None);
                    }
                },
            };
            request.keys.push(key);
            request.after.push(after);
        }
        Ok(Some(request))
    }

    // ---- XINFO ----

    fn cmd_xinfo(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.arg(1).to_ascii_uppercase();
        match (sub.as_slice(), ctx.argc()) {
            (b"HELP", 2) => {
                help(ctx, "XINFO", XINFO_HELP);
                Ok(())
            }
            (b"HELP", _) => {
                ctx.error("ERR wrong number of arguments for 'xinfo|help' command");
                Ok(())
            }
            (b"STREAM", n) if n >= 3 => self.xinfo_stream(ctx),
            (b"GROUPS", 3) | (b"CONSUMERS", 4) => {
                let key = ctx.arg(2).into_owned();
                let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
                let Some(meta) = found else {
                    ctx.error("ERR no such key");
                    return Ok(());
                };
                self.stats.reads += 1;
                if sub == b"GROUPS" {
                    self.xinfo_groups(ctx, meta)
                } else {
                    self.xinfo_consumers(ctx, &key, meta)
                }
            }
            _ => {
                ctx.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
                    String::from_utf8_lossy(&ctx.arg(1))
                ));
                Ok(())
            }
        }
    }

    fn xinfo_stream(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let full = match ctx.argc() {
            3 => None,
            4 if ctx.arg(3).eq_ignore_ascii_case(b"FULL") => Some(10),
            6 if ctx.arg(3).eq_ignore_ascii_case(b"FULL") && ctx.arg(4).eq_ignore_ascii_case(b"COUNT") => {
                let Some(n) = parse_i64(&ctx.arg(5)) else {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                };
                Some(if n < 0 { 10 } else { n as usize })
            }
            _ => {
                ctx.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try XINFO HELP.",
                    String::from_utf8_lossy(&ctx.arg(1))
                ));
                return Ok(());
            }
        };
        let key = ctx.arg(2).into_owned();
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.error("ERR no such key");
            return Ok(());
        };
        self.stats.reads += 1;
        let state = self.stream_state(ctx, meta.oid)?;
        let len = self.stream_len(ctx, meta.oid)?;
        let first = self.first_entry_id(ctx, meta.oid)?;
        let nodes = self.stream_nodes(ctx, meta.oid)?;
        ctx.map(if full.is_some() { 9 } else { 10 });
        let field = |ctx: &mut Ctx<'_>, name: &str| ctx.bulk(name.as_bytes());
        field(ctx, "length");
        ctx.int(len as i64);
        field(ctx, "radix-tree-keys");
        ctx.int(nodes as i64);
        field(ctx, "radix-tree-nodes");
        ctx.int((nodes + 1) as i64);
        field(ctx, "last-generated-id");
        ctx.bulk(state.last_id.text().as_bytes());
        field(ctx, "max-deleted-entry-id");
        ctx.bulk(state.max_deleted.text().as_bytes());
        field(ctx, "entries-added");
        ctx.int(state.entries_added as i64);
        field(ctx, "recorded-first-entry-id");
        ctx.bulk(first.text().as_bytes());
        match full {
            None => {
                field(ctx, "groups");
                let groups = self.group_count(ctx, meta.oid)?;
                ctx.int(groups as i64);
                for (name, rev) in [("first-entry", false), ("last-entry", true)] {
                    field(ctx, name);
                    match self.stream_range(ctx, meta.oid, StreamId::default(), StreamId::MAX, 1, rev)?.first() {
                        Some(entry) => Self::reply_entry(ctx, entry),
                        None => ctx.null(),
                    }
                }
            }
            Some(count) => {
                field(ctx, "entries");
                let entries = self.stream_range(ctx, meta.oid, StreamId::default(), StreamId::MAX, count, false)?;
                Self::reply_entries(ctx, &entries);
                field(ctx, "groups");
                self.xinfo_full_groups(ctx, meta.oid, count)?;
            }
        }
        Ok(())
    }

    /// The emulated radix-tree nodes holding live entries.
    fn stream_nodes(&self, ctx: &Ctx<'_>, oid: u64) -> Result<u64, StoreError> {
        let (mut nodes, mut last) = (0, None);
        for entry in self.store.elements(ctx.pool, oid, SPACE_MAIN, Bound::Unbounded, Bound::Unbounded, false) {
            let (_, value) = entry?;
            let node = decode_entry(&value_bytes(ctx.pool, &value)?)?.0.node;
            if last != Some(node) {
                nodes += 1;
                last = Some(node);
            }
        }
        Ok(nodes)
    }
}

/// XSETID's id, and its ENTRIESADDED and MAXDELETEDID (both or none).
type SetIdArgs = (StreamId, Option<(u64, StreamId)>);

/// XREAD's parsed request.
struct XreadRequest {
    keys: Vec<Vec<u8>>,
    /// Entries after these ids are wanted.
    after: Vec<StreamId>,
    count: usize,
    /// BLOCK's deadline (Some(None): forever).
    block: Option<Option<Instant>>,
    /// Where the ids start among the arguments.
    ids_at: usize,
    /// A `$` was resolved to a stream's last id.
    resolved: bool,
}

/// XREAD's and XREADGROUP's BLOCK argument: its deadline (None: wait
/// forever). Err: the error reply.
pub(in crate::apps::kv) fn block_arg(bytes: &[u8]) -> Result<Option<Instant>, &'static str> {
    let ms = parse_i64(bytes).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok((ms > 0).then(|| Instant::now() + Duration::from_millis(ms as u64).min(BLOCK_MAX)))
}

/// How many streams follow STREAMS at `streams_at` (0: no STREAMS): the
/// keys, then as many ids. Err: the error reply.
pub(in crate::apps::kv) fn streams_count(argc: usize, streams_at: usize) -> Result<usize, &'static str> {
    if streams_at == 0 {
        return Err(SYNTAX);
    }
    let rest = argc - streams_at;
    if rest % 2 != 0 {
        return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.");
    }
    Ok(rest / 2)
}

/// The id `*` takes: the current time, or the last id's next when the
/// clock is behind it. None: no id is left.
fn next_auto_id(last: StreamId) -> Option<StreamId> {
    let now = crate::store::db::now_ms();
    if now > last.ms {
        Some(StreamId { ms: now, seq: 0 })
    } else {
        last.next()
    }
}

/// An XRANGE bound: `-`, `+`, an id (a missing seq is `missing_seq`), or
/// `(id` exclusive. None: the range is empty (an exclusive bound past the
/// last or before the first id).
pub(in crate::apps::kv) fn interval(
    bytes: &[u8],
    missing_seq: u64,
    start: bool,
) -> Result<Option<StreamId>, &'static str> {
    if bytes.len() > 1 && bytes[0] == b'(' {
        let (id, _) = parse_id(&bytes[1..], missing_seq, true)?;
        let moved = if start { id.next() } else { id.prev() };
        return match moved {
            Some(id) => Ok(Some(id)),
            None if start => Err("ERR invalid start ID for the interval"),
            None => Err("ERR invalid end ID for the interval"),
        };
    }
    Ok(Some(parse_id(bytes, missing_seq, false)?.0))
}

const XINFO_HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis() {
        assert_eq!(parse_id(b"5", 0, true), Ok((StreamId { ms: 5, seq: 0 }, true)));
        assert_eq!(parse_id(b"5-3", 0, true), Ok((StreamId { ms: 5, seq: 3 }, true)));
        assert_eq!(parse_id(b"5-*", 0, true), Ok((StreamId { ms: 5, seq: 0 }, false)));
        assert_eq!(parse_id(b"+", 0, false), Ok((StreamId::MAX, true)));
        assert!(parse_id(b"+", 0, true).is_err());
        assert!(parse_id(b"-1", 0, true).is_err());
        assert!(parse_id(b"1-x", 0, true).is_err());
        assert!(parse_id(b"18446744073709551616", 0, true).is_err());
    }

    #[test]
    fn exclusive_bounds_step_over_an_id() {
        assert_eq!(interval(b"(1-0", 0, true), Ok(Some(StreamId { ms: 1, seq: 1 })));
        assert_eq!(interval(b"(1-0", u64::MAX, false), Ok(Some(StreamId { ms: 0, seq: u64::MAX })));
        assert!(interval(b"(18446744073709551615-18446744073709551615", 0, true).is_err());
        assert!(interval(b"(0-0", 0, false).is_err());
    }

    #[test]
    fn entries_and_state_round_trip() {
        let pairs = vec![b"f".to_vec(), b"v".to_vec(), b"".to_vec(), b"x".repeat(300)];
        let place = Place { node: 7, fill: 3, ordinal: 1000 };
        assert_eq!(decode_entry(&encode_entry(place, &pairs)).unwrap(), (place, pairs));
        let state = State {
            last_id: StreamId { ms: 9, seq: 2 },
            entries_added: 5,
            max_deleted: StreamId { ms: 3, seq: 0 },
            node: 4,
            node_fill: 17,
        };
        let back = State::decode(&state.encode()).unwrap();
        assert_eq!(
            (back.last_id, back.entries_added, back.max_deleted, back.node, back.node_fill),
            (state.last_id, 5, state.max_deleted, 4, 17)
        );
    }
}
