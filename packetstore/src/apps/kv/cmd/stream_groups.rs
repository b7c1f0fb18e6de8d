//! Stream consumer groups: their storage, XGROUP, XREADGROUP (with BLOCK
//! and NOACK) and XACK (Redis 7.0's `t_stream.c`); the pending list's
//! readers and claims (XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS and
//! CONSUMERS) are in `stream_pending.rs`.
//!
//! A group lives in its stream's object (schema 2), in four spaces:
//!
//! | space | rest | value |
//! |---|---|---|
//! | `0x02` | group name | last delivered id (ms LE, seq LE), entries read i64 LE (-1: unknown) |
//! | `0x03` | len u8, group, id (16, BE) | delivery time ms u64 LE, delivery count u64 LE, consumer name |
//! | `0x04` | len u8, group, consumer | seen time ms u64 LE |
//! | `0x05` | len u8, group, len u8, consumer, id (16, BE) | empty |
//!
//! `0x03` is the group's pending entries list (PEL), `0x05` each
//! consumer's, so that a consumer's history and pending count are range
//! reads. Names are bounded (`NAME_MAX`) so every key fits the tree.
//!
//! Invariants: a `0x03` entry and its `0x05` twin are written and deleted
//! in the same group of ops, naming the same consumer; a consumer's
//! entries exist only while its `0x04` entry does; each command is one
//! store group.

use std::ops::Bound;

use crate::apps::kv::cmd::notify;
use crate::apps::kv::cmd::scripting::help;
use crate::apps::kv::cmd::streams::{block_arg, parse_id, streams_count, Entry, State, StreamId};
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::store::db::{now_ms, value_bytes, Op, StoreError};
use crate::store::keyspace::{element_key, prefix_end, KeyType, Meta};

/// This family's commands, as COMMAND describes them.
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("xgroup", -2, &["write"], (2, 2, 1), "stream", "XGROUP CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP.", KvServer::cmd_xgroup),
    cmd("xreadgroup", -7, &["write", "blocking", "movablekeys"], (0, 0, 0), "stream", "Reads entries of streams for a consumer of a group, waiting for some.", KvServer::cmd_xreadgroup),
    cmd("xack", -4, &["write", "fast"], (1, 1, 1), "stream", "Acknowledges entries of a group's pending list.", KvServer::cmd_xack),
];

pub(in crate::apps::kv) const SPACE_GROUP: u8 = 0x02;
pub(in crate::apps::kv) const SPACE_PEL: u8 = 0x03;
pub(in crate::apps::kv) const SPACE_CONSUMER: u8 = 0x04;
pub(in crate::apps::kv) const SPACE_CONSUMER_PEL: u8 = 0x05;
/// The longest group or consumer name.
const NAME_MAX: usize = 200;
/// Entries read unknown (Redis's SCG_INVALID_ENTRIES_READ).
pub(in crate::apps::kv) const READ_UNKNOWN: i64 = -1;
const BLOCKED_COUNT_DEFAULT: usize = 1000;

/// A consumer group's state.
#[derive(Clone, Copy)]
pub(in crate::apps::kv) struct Group {
    pub(in crate::apps::kv) last_id: StreamId,
    pub(in crate::apps::kv) entries_read: i64,
}

impl Group {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        out.extend_from_slice(&self.last_id.ms.to_le_bytes());
        out.extend_from_slice(&self.last_id.seq.to_le_bytes());
        out.extend_from_slice(&self.entries_read.to_le_bytes());
        out
    }

    pub(in crate::apps::kv) fn decode(bytes: &[u8]) -> Result<Group, StoreError> {
        if bytes.len() != 24 {
            return Err(StoreError::Corrupt("a consumer group is malformed".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(Group { last_id: StreamId { ms: u64_at(0), seq: u64_at(8) }, entries_read: u64_at(16) as i64 })
    }
}

/// A pending entry.
#[derive(Clone)]
pub(in crate::apps::kv) struct Nack {
    pub(in crate::apps::kv) delivery_time: u64,
    pub(in crate::apps::kv) delivery_count: u64,
    pub(in crate::apps::kv) consumer: Vec<u8>,
}

impl Nack {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.consumer.len());
        out.extend_from_slice(&self.delivery_time.to_le_bytes());
        out.extend_from_slice(&self.delivery_count.to_le_bytes());
        out.extend_from_slice(&self.consumer);
        out
    }

    fn decode(bytes: &[u8]) -> Result<Nack, StoreError> {
        if bytes.len() < 16 {
            return Err(StoreError::Corrupt("a pending entry is malformed".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(Nack { delivery_time: u64_at(0), delivery_count: u64_at(8), consumer: bytes[16..].to_vec() })
    }
}

/// `len u8, name`.
pub(in crate::apps::kv) fn named(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + name.len());
    out.push(name.len() as u8);
    out.extend_from_slice(name);
    out
}

fn pel_rest(group: &[u8], id: StreamId) -> Vec<u8> {
    [named(group).as_slice(), &id.key()].concat()
}

fn consumer_rest(group: &[u8], consumer: &[u8]) -> Vec<u8> {
    [named(group).as_slice(), consumer].concat()
}

fn consumer_pel_rest(group: &[u8], consumer: &[u8], id: StreamId) -> Vec<u8> {
    [named(group).as_slice(), &named(consumer), &id.key()].concat()
}

pub(in crate::apps::kv) fn name_ok(name: &[u8]) -> Result<(), String> {
    if name.len() > NAME_MAX {
        return Err(format!(
            "ERR consumer group or consumer name of {} bytes is over the limit of {NAME_MAX}",
            name.len()
        ));
    }
    Ok(())
}

pub(in crate::apps::kv) fn nogroup(key: &[u8], group: &[u8], suffix: &str) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'{suffix}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

pub(in crate::apps::kv) fn nogroup_for_key(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    )
}

/// What a stream's counters say about its history (for lag and
/// entries-read, Redis's streamEstimateDistanceFromFirstEverEntry).
pub(in crate::apps::kv) struct History {
    state: State,
    length: u64,
    first_id: StreamId,
}

impl History {
    fn has_tombstones_from(&self, start: StreamId) -> bool {
        let max = self.state.max_deleted;
        if self.length == 0 || max == StreamId::default() || self.first_id > max {
            return false;
        }
        start <= max
    }

    fn distance(&self, id: StreamId) -> i64 {
        let state = &self.state;
        if state.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= state.last_id {
            return state.entries_added as i64;
        }
        match id.cmp(&state.last_id) {
            std::cmp::Ordering::Equal => return state.entries_added as i64,
            std::cmp::Ordering::Greater => return READ_UNKNOWN,
            std::cmp::Ordering::Less => {}
        }
        if state.max_deleted == StreamId::default() || state.max_deleted < self.first_id {
            match id.cmp(&self.first_id) {
                std::cmp::Ordering::Less => return (state.entries_added - self.length) as i64,
                std::cmp::Ordering::Equal => return (state.entries_added - self.length + 1) as i64,
                std::cmp::Ordering::Greater => {}
            }
        }
        READ_UNKNOWN
    }

    /// A group's lag; None where it cannot be known.
    pub(in crate::apps::kv) fn lag(&self, group: &Group) -> Option<i64> {
        if self.state.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != READ_UNKNOWN && !self.has_tombstones_from(group.last_id) {
            return Some(self.state.entries_added as i64 - group.entries_read);
        }
        match self.distance(group.last_id) {
            READ_UNKNOWN => None,
            read => Some(self.state.entries_added as i64 - read),
        }
    }

    /// A group delivered `id`: its last id and entries read advance.
    fn deliver(&self, group: &mut Group, id: StreamId) {
        if id <= group.last_id {
            return;
        }
        if group.entries_read != READ_UNKNOWN && !self.has_tombstones_from(id) {
            group.entries_read += 1;
        } else if self.state.entries_added != 0 {
            group.entries_read = self.distance(id);
        }
        group.last_id = id;
    }
}

impl KvServer {
    pub(in crate::apps::kv) fn history(&self, ctx: &Ctx<'_>, oid: u64) -> Result<History, StoreError> {
        Ok(History {
            state: self.stream_state(ctx, oid)?,
            length: self.stream_len(ctx, oid)?,
            first_id: self.first_entry_id(ctx, oid)?,
        })
    }

    pub(in crate::apps::kv) fn group_get(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        name: &[u8],
    ) -> Result<Option<Group>, StoreError> {
        match self.store.element(ctx.pool, oid, SPACE_GROUP, name)? {
            Some(value) => Ok(Some(Group::decode(&value_bytes(ctx.pool, &value)?)?)),
            None => Ok(None),
        }
    }

    pub(in crate::apps::kv) fn group_op(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        name: &[u8],
        group: &Group,
    ) -> Result<Op, StoreError> {
        self.put_bytes(ctx, element_key(oid, SPACE_GROUP, name), &group.encode())
    }

    /// The entries of `space` whose rest starts with `prefix`, in order.
    pub(in crate::apps::kv) fn prefixed(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        space: u8,
        prefix: &[u8],
    ) -> Result<Vec<(Vec<u8>, Value)>, StoreError> {
        let end = prefix_end(prefix);
        let high = match &end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let low = if prefix.is_empty() { Bound::Unbounded } else { Bound::Included(prefix) };
        self.store.elements(ctx.pool, oid, space, low, high, false).collect()
    }

    pub(in crate::apps::kv) fn prefixed_count(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        space: u8,
        prefix: &[u8],
    ) -> Result<u64, StoreError> {
        let end = prefix_end(prefix);
        let high = match &end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        self.store.element_count_in(ctx.pool, oid, space, Bound::Included(prefix), high)
    }

    pub(in crate::apps::kv) fn nack_get(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
        id: StreamId,
    ) -> Result<Option<Nack>, StoreError> {
        match self.store.element(ctx.pool, oid, SPACE_PEL, &pel_rest(group, id))? {
            Some(value) => Ok(Some(Nack::decode(&value_bytes(ctx.pool, &value)?)?)),
            None => Ok(None),
        }
    }

    /// Ops writing `nack` for `id`, moving it off `previous`'s list.
    pub(in crate::apps::kv) fn nack_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        (oid, group, id): (u64, &[u8], StreamId),
        nack: &Nack,
        previous: Option<&[u8]>,
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        ops.push(self.put_bytes(ctx, element_key(oid, SPACE_PEL, &pel_rest(group, id)), &nack.encode())?);
        if previous != Some(nack.consumer.as_slice()) {
            if let Some(previous) = previous {
                ops.push(Op::Del {
                    key: element_key(oid, SPACE_CONSUMER_PEL, &consumer_pel_rest(group, previous, id)),
                });
            }
            let twin = element_key(oid, SPACE_CONSUMER_PEL, &consumer_pel_rest(group, &nack.consumer, id));
            ops.push(self.put_bytes(ctx, twin, &[])?);
        }
        Ok(())
    }

    pub(in crate::apps::kv) fn nack_del_ops(oid: u64, group: &[u8], id: StreamId, consumer: &[u8], ops: &mut Vec<Op>) {
        ops.push(Op::Del { key: element_key(oid, SPACE_PEL, &pel_rest(group, id)) });
        ops.push(Op::Del { key: element_key(oid, SPACE_CONSUMER_PEL, &consumer_pel_rest(group, consumer, id)) });
    }

    pub(in crate::apps::kv) fn consumer_exists(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
        consumer: &[u8],
    ) -> Result<bool, StoreError> {
        Ok(self.store.element(ctx.pool, oid, SPACE_CONSUMER, &consumer_rest(group, consumer))?.is_some())
    }

    /// Creates or refreshes a consumer (its seen time is now).
    pub(in crate::apps::kv) fn consumer_seen_op(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        group: &[u8],
        consumer: &[u8],
    ) -> Result<Op, StoreError> {
        let key = element_key(oid, SPACE_CONSUMER, &consumer_rest(group, consumer));
        self.put_bytes(ctx, key, &now_ms().to_le_bytes())
    }

    /// A group's consumers: name and seen time, by name.
    pub(in crate::apps::kv) fn consumers(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
    ) -> Result<Vec<(Vec<u8>, u64)>, StoreError> {
        let prefix = named(group);
        let mut out = Vec::new();
        for (rest, value) in self.prefixed(ctx, oid, SPACE_CONSUMER, &prefix)? {
            let bytes = value_bytes(ctx.pool, &value)?;
            let seen = u64::from_le_bytes(bytes.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]));
            out.push((rest[prefix.len()..].to_vec(), seen));
        }
        Ok(out)
    }

    pub(in crate::apps::kv) fn consumer_pending(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
        consumer: &[u8],
    ) -> Result<u64, StoreError> {
        let prefix = [named(group), named(consumer)].concat();
        self.prefixed_count(ctx, oid, SPACE_CONSUMER_PEL, &prefix)
    }

    /// The group's pending entries with ids in [start, end], in order.
    pub(in crate::apps::kv) fn pending_range(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
        start: StreamId,
        end: StreamId,
    ) -> Result<Vec<(StreamId, Nack)>, StoreError> {
        let (low, high) = (pel_rest(group, start), pel_rest(group, end));
        let entries =
            self.store.elements(ctx.pool, oid, SPACE_PEL, Bound::Included(&low), Bound::Included(&high), false);
        let mut out = Vec::new();
        for entry in entries {
            let (rest, value) = entry?;
            let id = StreamId::from_key(&rest[rest.len() - 16..])?;
            out.push((id, Nack::decode(&value_bytes(ctx.pool, &value)?)?));
        }
        Ok(out)
    }

    /// A consumer's pending ids from `start` on.
    pub(in crate::apps::kv) fn consumer_pending_ids(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        group: &[u8],
        consumer: &[u8],
        start: StreamId,
    ) -> Result<Vec<StreamId>, StoreError> {
        let prefix = [named(group), named(consumer)].concat();
        let low = [prefix.as_slice(), &start.key()].concat();
        let end = prefix_end(&prefix);
        let high = match &end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        let entries = self.store.elements(ctx.pool, oid, SPACE_CONSUMER_PEL, Bound::Included(&low), high, false);
        entries.map(|e| e.and_then(|(rest, _)| StreamId::from_key(&rest[prefix.len()..]))).collect()
    }

    pub(in crate::apps::kv) fn stream_entry(
        &self,
        ctx: &Ctx<'_>,
        oid: u64,
        id: StreamId,
    ) -> Result<Option<Entry>, StoreError> {
        Ok(self.stream_range(ctx, oid, id, id, 1, false)?.pop())
    }

    /// "xgroup-createconsumer" when a command created its consumer.
    pub(in crate::apps::kv) fn notify_new_consumer(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        oid: u64,
        (group, consumer): (&[u8], &[u8]),
        existed: bool,
    ) -> Result<(), StoreError> {
        if !existed && self.consumer_exists(ctx, oid, group, consumer)? {
            self.notify(ctx, notify::STREAM, "xgroup-createconsumer", key);
        }
        Ok(())
    }

    // ---- XGROUP ----

    fn cmd_xgroup(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase();
        let argc = ctx.argc();
        let arity_ok = match sub.as_str() {
            "help" => argc == 2,
            "create" | "setid" => argc >= 5,
            "destroy" => argc == 4,
            "createconsumer" | "delconsumer" => argc == 5,
            _ => {
                ctx.error(&format!(
                    "ERR unknown subcommand '{}'. Try XGROUP HELP.",
                    String::from_utf8_lossy(&ctx.arg(1))
                ));
                return Ok(());
            }
        };
        if !arity_ok {
            ctx.error(&format!("ERR wrong number of arguments for 'xgroup|{sub}' command"));
            return Ok(());
        }
        if sub == "help" {
            help(ctx, "XGROUP", XGROUP_HELP);
            return Ok(());
        }
        let mut mkstream = false;
        let mut entries_read = READ_UNKNOWN;
        let mut i = 5;
        while i < argc {
            let opt = ctx.arg(i).to_ascii_uppercase();
            if sub == "create" && opt == b"MKSTREAM" {
                mkstream = true;
                i += 1;
            } else if (sub == "create" || sub == "setid") && opt == b"ENTRIESREAD" && i + 1 < argc {
                let Some(n) = parse_i64(&ctx.arg(i + 1)) else {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                };
                if n < 0 && n != READ_UNKNOWN {
                    ctx.error("ERR value for ENTRIESREAD must be positive or -1");
                    return Ok(());
                }
                entries_read = n;
                i += 2;
            } else {
                ctx.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
                    String::from_utf8_lossy(&ctx.arg(1))
                ));
                return Ok(());
            }
        }
        let key = ctx.arg(2).into_owned();
        let group = ctx.arg(3).into_owned();
        if let Err(why) = name_ok(&group) {
            ctx.error(&why);
            return Ok(());
        }
        let Ok(found) = self.stream_read(ctx, &key)? else { return Ok(()) };
        if found.is_none() && !mkstream {
            ctx.error(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use \
                 the MKSTREAM option to create an empty stream automatically.",
            );
            return Ok(());
        }
        let existing = match found {
            Some(meta) => self.group_get(ctx, meta.oid, &group)?,
            None => None,
        };
        if existing.is_none() && matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") {
            ctx.error(&nogroup_for_key(&key, &group));
            return Ok(());
        }
        match sub.as_str() {
            "create" => self.xgroup_create(ctx, &key, found, &group, existing.is_some(), entries_read),
            "setid" => self.xgroup_setid(ctx, &key, found.expect("checked"), &group, entries_read),
            "destroy" => self.xgroup_destroy(ctx, &key, found.expect("checked"), &group, existing.is_some()),
            "createconsumer" => self.xgroup_createconsumer(ctx, &key, found.expect("checked"), &group),
            _ => self.xgroup_delconsumer(ctx, &key, found.expect("checked"), &group),
        }
    }

    /// XGROUP CREATE's and SETID's id (argument 4): `$` is the stream's
    /// last id (0-0 for none); `strict` refuses `-` and `+`. None once an
    /// error was replied.
    fn group_id_arg(
        &self,
        ctx: &mut Ctx<'_>,
        found: Option<Meta>,
        strict: bool,
    ) -> Result<Option<StreamId>, StoreError> {
        let arg = ctx.arg(4).into_owned();
        if arg == b"$" {
            return Ok(Some(match found {
                Some(meta) => self.stream_state(ctx, meta.oid)?.last_id,
                None => StreamId::default(),
            }));
        }
        match parse_id(&arg, 0, strict) {
            Ok((id, _)) => Ok(Some(id)),
            Err(why) => {
                ctx.error(why);
                Ok(None)
            }
        }
    }

    fn xgroup_create(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        found: Option<Meta>,
        name: &[u8],
        exists: bool,
        entries_read: i64,
    ) -> Result<(), StoreError> {
        if ctx.argc() > 8 {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let Some(last_id) = self.group_id_arg(ctx, found, true)? else { return Ok(()) };
        if exists {
            ctx.error("BUSYGROUP Consumer Group name already exists");
            return Ok(());
        }
        let group = Group { last_id, entries_read };
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let meta = match found {
                Some(meta) => meta,
                None => server.new_object_ops(ctx, key, KeyType::Stream, ops)?,
            };
            ops.push(server.group_op(ctx, meta.oid, name, &group)?);
            Ok(())
        })?;
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::STREAM, "xgroup-create", key);
        ctx.ok();
        Ok(())
    }

    fn xgroup_setid(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        name: &[u8],
        entries_read: i64,
    ) -> Result<(), StoreError> {
        if ctx.argc() != 5 && ctx.argc() != 7 {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let Some(last_id) = self.group_id_arg(ctx, Some(meta), false)? else { return Ok(()) };
        let op = self.group_op(ctx, meta.oid, name, &Group { last_id, entries_read })?;
        self.apply(ctx, &[op])?;
        self.notify(ctx, notify::STREAM, "xgroup-setid", key);
        ctx.ok();
        Ok(())
    }

    fn xgroup_destroy(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        name: &[u8],
        exists: bool,
    ) -> Result<(), StoreError> {
        if !exists {
            ctx.int(0);
            return Ok(());
        }
        let prefix = named(name);
        let mut ops = vec![Op::Del { key: element_key(meta.oid, SPACE_GROUP, name) }];
        for space in [SPACE_PEL, SPACE_CONSUMER, SPACE_CONSUMER_PEL] {
            for (rest, _) in self.prefixed(ctx, meta.oid, space, &prefix)? {
                ops.push(Op::Del { key: element_key(meta.oid, space, &rest) });
            }
        }
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::STREAM, "xgroup-destroy", key);
        ctx.int(1);
        Ok(())
    }

    fn xgroup_createconsumer(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
        name: &[u8],
    ) -> Result<(), StoreError> {
        let consumer = ctx.arg(4).into_owned();
        if let Err(why) = name_ok(&consumer) {
            ctx.error(&why);
            return Ok(());
        }
        if self.consumer_exists(ctx, meta.oid, name, &consumer)? {
            ctx.int(0);
            return Ok(());
        }
        let op = self.consumer_seen_op(ctx, meta.oid, name, &consumer)?;
        self.apply(ctx, &[op])?;
        self.notify(ctx, notify::STREAM, "xgroup-createconsumer", key);
        ctx.int(1);
        Ok(())
    }

    fn xgroup_delconsumer(&mut self, ctx: &mut Ctx<'_>, key: &[u8], meta: Meta, name: &[u8]) -> Result<(), StoreError> {
        let consumer = ctx.arg(4).into_owned();
        if name_ok(&consumer).is_err() || !self.consumer_exists(ctx, meta.oid, name, &consumer)? {
            ctx.int(0);
            return Ok(());
        }
        let ids = self.consumer_pending_ids(ctx, meta.oid, name, &consumer, StreamId::default())?;
        let mut ops = vec![Op::Del { key: element_key(meta.oid, SPACE_CONSUMER, &consumer_rest(name, &consumer)) }];
        for &id in &ids {
            Self::nack_del_ops(meta.oid, name, id, &consumer, &mut ops);
        }
        self.apply(ctx, &ops)?;
        self.notify(ctx, notify::STREAM, "xgroup-delconsumer", key);
        ctx.int(ids.len() as i64);
        Ok(())
    }

    // ---- XREADGROUP ----

    fn cmd_xreadgroup(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(request) = self.parse_xreadgroup(ctx)? else { return Ok(()) };
        let count = if request.block.is_some() && request.count == 0 { BLOCKED_COUNT_DEFAULT } else { request.count };
        let mut replies: Vec<(Vec<u8>, Vec<Served>)> = Vec::new();
        let mut ops = Vec::new();
        let now = now_ms();
        let mut new_consumers = Vec::new();
        for (key, (meta, _)) in request.keys.iter().zip(&request.groups) {
            if !self.consumer_exists(ctx, meta.oid, &request.group, &request.consumer)? {
                new_consumers.push(key.clone());
            }
        }
        let built = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            for (k, key) in request.keys.iter().enumerate() {
                let (meta, group) = request.groups[k];
                let served = match request.after[k] {
                    None => server.serve_new(ctx, meta, &request, group, count, now, ops)?,
                    Some(after) => Some(server.serve_history(ctx, meta, &request, after, count, now, ops)?),
                };
                if let Some(served) = served {
                    replies.push((key.clone(), served));
                }
            }
            Ok(())
        });
        built?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        for key in new_consumers.iter().filter(|k| replies.iter().any(|(served, _)| served == *k)) {
            self.notify(ctx, notify::STREAM, "xgroup-createconsumer", key);
        }
        if !replies.is_empty() {
            Self::reply_served(ctx, &replies);
            return Ok(());
        }
        match request.block {
            None => {
                let enc = ctx.enc();
                enc.null_array(ctx.out.bytes());
            }
            Some(deadline) => self.block_or_null(ctx, &request.keys, deadline, KeyType::Stream, false),
        }
        Ok(())
    }

    fn reply_served(ctx: &mut Ctx<'_>, replies: &[(Vec<u8>, Vec<Served>)]) {
        let resp3 = ctx.enc().resp3;
        if resp3 {
            ctx.map(replies.len());
        } else {
            ctx.array(replies.len());
        }
        for (key, served) in replies {
            if !resp3 {
                ctx.array(2);
            }
            ctx.bulk(key);
            ctx.array(served.len());
            for item in served {
                match item {
                    Served::Entry(entry) => Self::reply_entry(ctx, entry),
                    Served::Gone(id) => {
                        ctx.array(2);
                        ctx.bulk(id.text().as_bytes());
                        let enc = ctx.enc();
                        enc.null_array(ctx.out.bytes());
                    }
                }
            }
        }
    }

    /// `>`: entries after the group's last id, each delivered (pending,
    /// unless NOACK). None: nothing new (the client may block).
    #[allow(clippy::too_many_arguments)]
    fn serve_new(
        &mut self,
        ctx: &mut Ctx<'_>,
        meta: Meta,
        request: &GroupRead,
        mut group: Group,
        count: usize,
        now: u64,
        ops: &mut Vec<Op>,
    ) -> Result<Option<Vec<Served>>, StoreError> {
        let history = self.history(ctx, meta.oid)?;
        let Some(start) = group.last_id.next() else { return Ok(None) };
        let entries = self.stream_range(ctx, meta.oid, start, StreamId::MAX, count, false)?;
        if entries.is_empty() {
            return Ok(None);
        }
        ops.push(self.consumer_seen_op(ctx, meta.oid, &request.group, &request.consumer)?);
        for entry in &entries {
            history.deliver(&mut group, entry.id);
            if request.noack {
                continue;
            }
            let previous = self.nack_get(ctx, meta.oid, &request.group, entry.id)?.map(|n| n.consumer);
            let nack = Nack { delivery_time: now, delivery_count: 1, consumer: request.consumer.clone() };
            self.nack_ops(ctx, (meta.oid, &request.group, entry.id), &nack, previous.as_deref(), ops)?;
        }
        ops.push(self.group_op(ctx, meta.oid, &request.group, &group)?);
        Ok(Some(entries.into_iter().map(Served::Entry).collect()))
    }

    /// An id: the consumer's own pending entries after it (redelivered).
    #[allow(clippy::too_many_arguments)]
    fn serve_history(
        &mut self,
        ctx: &mut Ctx<'_>,
        meta: Meta,
        request: &GroupRead,
        after: StreamId,
        count: usize,
        now: u64,
        ops: &mut Vec<Op>,
    ) -> Result<Vec<Served>, StoreError> {
        ops.push(self.consumer_seen_op(ctx, meta.oid, &request.group, &request.consumer)?);
        let Some(start) = after.next() else { return Ok(Vec::new()) };
        let mut ids = self.consumer_pending_ids(ctx, meta.oid, &request.group, &request.consumer, start)?;
        if count != 0 {
            ids.truncate(count);
        }
        let mut served = Vec::new();
        for id in ids {
            match self.stream_entry(ctx, meta.oid, id)? {
                Some(entry) => {
                    if let Some(mut nack) = self.nack_get(ctx, meta.oid, &request.group, id)? {
                        nack.delivery_time = now;
                        nack.delivery_count += 1;
                        let previous = Some(nack.consumer.clone());
                        self.nack_ops(ctx, (meta.oid, &request.group, id), &nack, previous.as_deref(), ops)?;
                    }
                    served.push(Served::Entry(entry));
                }
                None => served.push(Served::Gone(id)),
            }
        }
        Ok(served)
    }

    /// XREADGROUP's options before STREAMS: where the keys start (0: no
    /// STREAMS) and whether GROUP was given.
    fn parse_group_options(&self, ctx: &Ctx<'_>, request: &mut GroupRead) -> Result<(usize, bool), String> {
        let mut have_group = false;
        let mut i = 1;
        while i < ctx.argc() {
            let more = ctx.argc() - 1 - i;
            let opt = ctx.arg(i).to_ascii_uppercase();
            match opt.as_slice() {
                b"BLOCK" if more > 0 => {
                    if self.scripting.running {
                        return Err("ERR xreadgroup command is not allowed with BLOCK option from scripts".into());
                    }
                    request.block = Some(block_arg(&ctx.arg(i + 1))?);
                    i += 1;
                }
                b"COUNT" if more > 0 => {
                    request.count = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?.max(0) as usize;
                    i += 1;
                }
                b"GROUP" if more >= 2 => {
                    request.group = ctx.arg(i + 1).into_owned();
                    request.consumer = ctx.arg(i + 2).into_owned();
                    have_group = true;
                    i += 2;
                }
                b"NOACK" => request.noack = true,
                b"STREAMS" if more > 0 => return Ok((i + 1, have_group)),
                _ => return Err(SYNTAX.into()),
            }
            i += 1;
        }
        Ok((0, have_group))
    }

    /// Parses XREADGROUP; None once an error was replied.
    fn parse_xreadgroup(&self, ctx: &mut Ctx<'_>) -> Result<Option<GroupRead>, StoreError> {
        let mut request = GroupRead {
            group: Vec::new(),
            consumer: Vec::new(),
            keys: Vec::new(),
            groups: Vec::new(),
            after: Vec::new(),
            count: 0,
            block: None,
            noack: false,
        };
        let (streams_at, have_group) = match self.parse_group_options(ctx, &mut request) {
            Ok(found) => found,
            Err(why) => {
                ctx.error(&why);
                return Ok(None);
            }
        };
        let n = match streams_count(ctx.argc(), streams_at) {
            Ok(n) => n,
            Err(why) => {
                ctx.error(why);
                return Ok(None);
            }
        };
        if !have_group {
            ctx.error("ERR Missing GROUP option for XREADGROUP");
            return Ok(None);
        }
        for name in [&request.group, &request.consumer] {
            if let Err(why) = name_ok(name) {
                ctx.error(&why);
                return Ok(None);
            }
        }
        for k in 0..n {
            let key = ctx.arg(streams_at + k).into_owned();
            let found = match self.stream_read(ctx, &key)? {
                Ok(found) => found,
                Err(()) => return Ok(None),
            };
            let group = match found {
                Some(meta) => self.group_get(ctx, meta.oid, &request.group)?.map(|g| (meta, g)),
                None => None,
            };
            let Some(group) = group else {
                ctx.error(&nogroup(&key, &request.group, " in XREADGROUP with GROUP option"));
                return Ok(None);
            };
            let arg = ctx.arg(streams_at + n + k).into_owned();
            let after = match arg.as_slice() {
                b"$" => {
                    ctx.error(
                        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of \
                         this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID \
                         would just return an empty result set.",
                    );
                    return Ok(None);
                }
                b">" => None,
                _ => match parse_id(&arg, 0, true) {
                    Ok((id, _)) => Some(id),
                    Err(why) => {
                        ctx.error(why);
                        return Ok(None);
                    }
                },
            };
            request.keys.push(key);
            request.groups.push(group);
            request.after.push(after);
        }
        Ok(Some(request))
    }

    // ---- XACK, XPENDING ----

    /// The stream at `key` and its group `name`: None (replied `missing`,
    /// or WRONGTYPE) if either is absent.
    pub(in crate::apps::kv) fn stream_group(
        &self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        name: &[u8],
        missing: Result<i64, String>,
    ) -> Result<Option<(Meta, Group)>, StoreError> {
        let found = match self.collection(ctx, key, KeyType::Stream)? {
            Ok(found) => found,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(None);
            }
        };
        let group = match found {
            Some(meta) => self.group_get(ctx, meta.oid, name)?.map(|g| (meta, g)),
            None => None,
        };
        if group.is_none() {
            match missing {
                Ok(n) => ctx.int(n),
                Err(why) => ctx.error(&why),
            }
        }
        Ok(group)
    }

    fn cmd_xack(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, name) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let Some((meta, _)) = self.stream_group(ctx, &key, &name, Ok(0))? else { return Ok(()) };
        let mut ids = Vec::new();
        for i in 3..ctx.argc() {
            match parse_id(&ctx.arg(i), 0, true) {
                Ok((id, _)) => ids.push(id),
                Err(why) => {
                    ctx.error(why);
                    return Ok(());
                }
            }
        }
        ids.sort_unstable();
        ids.dedup();
        let mut ops = Vec::new();
        let mut acknowledged = 0;
        for id in ids {
            if let Some(nack) = self.nack_get(ctx, meta.oid, &name, id)? {
                Self::nack_del_ops(meta.oid, &name, id, &nack.consumer, &mut ops);
                acknowledged += 1;
            }
        }
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        ctx.int(acknowledged);
        Ok(())
    }
}

/// What XREADGROUP serves of one stream.
enum Served {
    Entry(Entry),
    /// A pending id whose entry was deleted.
    Gone(StreamId),
}

/// XREADGROUP's parsed request.
struct GroupRead {
    group: Vec<u8>,
    consumer: Vec<u8>,
    keys: Vec<Vec<u8>>,
    groups: Vec<(Meta, Group)>,
    /// Per key: None for `>`, else the history after this id.
    after: Vec<Option<StreamId>>,
    count: usize,
    block: Option<Option<std::time::Instant>>,
    noack: bool,
}

const XGROUP_HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn history(entries_added: u64, length: u64, first: u64, last: u64, max_deleted: u64) -> History {
        History {
            state: State {
                last_id: StreamId { ms: last, seq: 0 },
                entries_added,
                max_deleted: StreamId { ms: max_deleted, seq: 0 },
                ..State::default()
            },
            length,
            first_id: StreamId { ms: first, seq: 0 },
        }
    }

    #[test]
    fn lag_follows_redis() {
        // 5 entries 1..=5, none deleted; a group at 3 with 3 read: lag 2.
        let h = history(5, 5, 1, 5, 0);
        let at3 = Group { last_id: StreamId { ms: 3, seq: 0 }, entries_read: 3 };
        assert_eq!(h.lag(&at3), Some(2));
        // Unknown counter at the first entry: estimated exactly.
        let unknown = Group { last_id: StreamId { ms: 1, seq: 0 }, entries_read: READ_UNKNOWN };
        assert_eq!(h.lag(&unknown), Some(4));
        // A tombstone ahead (entry 4 deleted) and an arbitrary id: unknown.
        let fragmented = history(5, 4, 1, 5, 4);
        let mid = Group { last_id: StreamId { ms: 2, seq: 0 }, entries_read: READ_UNKNOWN };
        assert_eq!(fragmented.lag(&mid), None);
        // Delivering advances the counter when nothing is deleted ahead.
        let mut g = Group { last_id: StreamId::default(), entries_read: 0 };
        h.deliver(&mut g, StreamId { ms: 1, seq: 0 });
        assert_eq!((g.last_id.ms, g.entries_read), (1, 1));
    }

    #[test]
    fn names_sort_apart_by_length() {
        assert!(pel_rest(b"a", StreamId::MAX) < pel_rest(b"ab", StreamId::default()));
        assert_eq!(consumer_pel_rest(b"g", b"c", StreamId::default()).len(), 2 + 2 + 16);
    }
}
