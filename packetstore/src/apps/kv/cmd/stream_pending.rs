//! A stream consumer group's pending entries, read and claimed: XPENDING
//! (summary, range, IDLE, consumer), XCLAIM, XAUTOCLAIM, XINFO GROUPS and
//! CONSUMERS, and the groups of XINFO STREAM FULL (Redis 7.0's
//! `t_stream.c`). The storage they work on is `stream_groups.rs`'s.
//!
//! Invariants: a claim moves a pending entry and its consumer-list twin
//! together (`nack_ops`); an entry deleted from the stream meanwhile has
//! its pending entry dropped by the claim that finds it, as in Redis.

use crate::apps::kv::cmd::stream_groups::{
    name_ok, named, nogroup, nogroup_for_key, Group, History, Nack, READ_UNKNOWN, SPACE_CONSUMER, SPACE_GROUP,
    SPACE_PEL,
};
use crate::apps::kv::cmd::streams::{interval, parse_id, StreamId};
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::{now_ms, value_bytes, StoreError};
use crate::store::keyspace::Meta;

/// This family's commands, as COMMAND describes them.
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("xpending", -3, &["readonly"], (1, 1, 1), "stream", "Returns a group's pending entries.", KvServer::cmd_xpending),
    cmd("xclaim", -6, &["write", "fast"], (1, 1, 1), "stream", "Changes the owner of pending entries.", KvServer::cmd_xclaim),
    cmd("xautoclaim", -6, &["write", "fast"], (1, 1, 1), "stream", "Claims pending entries idle long enough.", KvServer::cmd_xautoclaim),
];

impl KvServer {
    fn cmd_xpending(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let argc = ctx.argc();
        if argc != 3 && !(6..=9).contains(&argc) {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let range = if argc >= 6 {
            match parse_pending_range(ctx) {
                Ok(range) => Some(range),
                Err(why) => {
                    ctx.error(&why);
                    return Ok(());
                }
            }
        } else {
            None
        };
        let (key, name) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        let Some((meta, _)) = self.stream_group(ctx, &key, &name, Err(nogroup(&key, &name, "")))? else {
            return Ok(());
        };
        self.stats.reads += 1;
        match range {
            None => self.xpending_summary(ctx, meta.oid, &name),
            Some(range) => self.xpending_range(ctx, meta.oid, &name, range),
        }
    }

    fn xpending_summary(&mut self, ctx: &mut Ctx<'_>, oid: u64, name: &[u8]) -> Result<(), StoreError> {
        let total = self.prefixed_count(ctx, oid, SPACE_PEL, &named(name))?;
        ctx.array(4);
        ctx.int(total as i64);
        if total == 0 {
            ctx.null();
            ctx.null();
            let enc = ctx.enc();
            enc.null_array(ctx.out.bytes());
            return Ok(());
        }
        let pending = self.pending_range(ctx, oid, name, StreamId::default(), StreamId::MAX)?;
        ctx.bulk(pending.first().expect("not empty").0.text().as_bytes());
        ctx.bulk(pending.last().expect("not empty").0.text().as_bytes());
        let mut owners = Vec::new();
        for (consumer, _) in self.consumers(ctx, oid, name)? {
            let count = self.consumer_pending(ctx, oid, name, &consumer)?;
            if count > 0 {
                owners.push((consumer, count));
            }
        }
        ctx.array(owners.len());
        for (consumer, count) in owners {
            ctx.array(2);
            ctx.bulk(&consumer);
            ctx.bulk(count.to_string().as_bytes());
        }
        Ok(())
    }

    fn xpending_range(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        name: &[u8],
        range: PendingRange,
    ) -> Result<(), StoreError> {
        let now = now_ms();
        let (Some(start), Some(end)) = (range.start, range.end) else {
            ctx.array(0);
            return Ok(());
        };
        let mut pending = self.pending_range(ctx, oid, name, start, end)?;
        if let Some(consumer) = &range.consumer {
            pending.retain(|(_, nack)| &nack.consumer == consumer);
        }
        let rows: Vec<_> = pending
            .into_iter()
            .filter(|(_, nack)| range.min_idle == 0 || now.saturating_sub(nack.delivery_time) >= range.min_idle)
            .take(range.count)
            .collect();
        ctx.array(rows.len());
        for (id, nack) in rows {
            ctx.array(4);
            ctx.bulk(id.text().as_bytes());
            ctx.bulk(&nack.consumer);
            ctx.int(now.saturating_sub(nack.delivery_time) as i64);
            ctx.int(nack.delivery_count as i64);
        }
        Ok(())
    }

    // ---- XCLAIM, XAUTOCLAIM ----

    fn cmd_xclaim(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, name, consumer) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned(), ctx.arg(3).into_owned());
        let Some((meta, mut group)) = self.stream_group(ctx, &key, &name, Err(nogroup(&key, &name, "")))? else {
            return Ok(());
        };
        let claim = match parse_claim(ctx) {
            Ok(claim) => claim,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        if let Err(why) = name_ok(&consumer) {
            ctx.error(&why);
            return Ok(());
        }
        let now = now_ms();
        let mut ops = Vec::new();
        let mut claimed = Vec::new();
        let existed = self.consumer_exists(ctx, meta.oid, &name, &consumer)?;
        let built = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            if claim.last_id > group.last_id {
                group.last_id = claim.last_id;
                ops.push(server.group_op(ctx, meta.oid, &name, &group)?);
            }
            let mut seen = false;
            for &id in &claim.ids {
                let nack = server.nack_get(ctx, meta.oid, &name, id)?;
                let Some(entry) = server.stream_entry(ctx, meta.oid, id)? else {
                    if let Some(nack) = nack {
                        Self::nack_del_ops(meta.oid, &name, id, &nack.consumer, ops);
                    }
                    continue;
                };
                let nack = match nack {
                    Some(nack) => nack,
                    None if claim.force => Nack { delivery_time: now, delivery_count: 0, consumer: Vec::new() },
                    None => continue,
                };
                let fresh = nack.consumer.is_empty();
                if !fresh && claim.min_idle > 0 && now.saturating_sub(nack.delivery_time) < claim.min_idle {
                    continue;
                }
                if !seen {
                    ops.push(server.consumer_seen_op(ctx, meta.oid, &name, &consumer)?);
                    seen = true;
                }
                let delivery_count = match claim.retry_count {
                    Some(n) => n,
                    None if !claim.just_id => nack.delivery_count + 1,
                    None => nack.delivery_count,
                };
                let delivery_time = claim.delivery_time.map_or(now, |t| if t > now { now } else { t });
                let moved = Nack { delivery_time, delivery_count, consumer: consumer.clone() };
                let previous = (!fresh).then_some(nack.consumer.as_slice());
                server.nack_ops(ctx, (meta.oid, &name, id), &moved, previous, ops)?;
                claimed.push(entry);
            }
            Ok(())
        });
        built?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        self.notify_new_consumer(ctx, &key, meta.oid, (&name, &consumer), existed)?;
        ctx.array(claimed.len());
        for entry in &claimed {
            if claim.just_id {
                ctx.bulk(entry.id.text().as_bytes());
            } else {
                Self::reply_entry(ctx, entry);
            }
        }
        Ok(())
    }

    fn cmd_xautoclaim(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let args = match parse_autoclaim(ctx) {
            Ok(args) => args,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let (key, name, consumer) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned(), ctx.arg(3).into_owned());
        let Some((meta, _)) = self.stream_group(ctx, &key, &name, Err(nogroup(&key, &name, "")))? else {
            return Ok(());
        };
        if let Err(why) = name_ok(&consumer) {
            ctx.error(&why);
            return Ok(());
        }
        let now = now_ms();
        let mut ops = Vec::new();
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let mut next = StreamId::default();
        let existed = self.consumer_exists(ctx, meta.oid, &name, &consumer)?;
        let built = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            let Some(start) = args.start else { return Ok(()) };
            let pending = server.pending_range(ctx, meta.oid, &name, start, StreamId::MAX)?;
            let (mut count, mut attempts) = (args.count, args.count.saturating_mul(10));
            let mut seen = false;
            let mut rows = pending.into_iter().peekable();
            while attempts > 0 && count > 0 {
                let Some((id, nack)) = rows.next() else { break };
                attempts -= 1;
                let Some(entry) = server.stream_entry(ctx, meta.oid, id)? else {
                    Self::nack_del_ops(meta.oid, &name, id, &nack.consumer, ops);
                    deleted.push(id);
                    count -= 1;
                    continue;
                };
                if args.min_idle > 0 && now.saturating_sub(nack.delivery_time) < args.min_idle {
                    continue;
                }
                if !seen {
                    ops.push(server.consumer_seen_op(ctx, meta.oid, &name, &consumer)?);
                    seen = true;
                }
                let delivery_count = nack.delivery_count + u64::from(!args.just_id);
                let moved = Nack { delivery_time: now, delivery_count, consumer: consumer.clone() };
                server.nack_ops(ctx, (meta.oid, &name, id), &moved, Some(&nack.consumer), ops)?;
                claimed.push(entry);
                count -= 1;
            }
            next = rows.peek().map_or(StreamId::default(), |(id, _)| *id);
            Ok(())
        });
        built?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        self.notify_new_consumer(ctx, &key, meta.oid, (&name, &consumer), existed)?;
        ctx.array(3);
        ctx.bulk(next.text().as_bytes());
        ctx.array(claimed.len());
        for entry in &claimed {
            if args.just_id {
                ctx.bulk(entry.id.text().as_bytes());
            } else {
                Self::reply_entry(ctx, entry);
            }
        }
        ctx.array(deleted.len());
        for id in deleted {
            ctx.bulk(id.text().as_bytes());
        }
        Ok(())
    }

    // ---- XINFO GROUPS, CONSUMERS, and STREAM FULL's groups ----

    /// A stream's groups: name and state, by name.
    fn groups(&self, ctx: &Ctx<'_>, oid: u64) -> Result<Vec<(Vec<u8>, Group)>, StoreError> {
        let mut out = Vec::new();
        for (rest, value) in self.prefixed(ctx, oid, SPACE_GROUP, &[])? {
            out.push((rest, Group::decode(&value_bytes(ctx.pool, &value)?)?));
        }
        Ok(out)
    }

    pub(in crate::apps::kv) fn group_count(&self, ctx: &Ctx<'_>, oid: u64) -> Result<u64, StoreError> {
        self.store.element_count(ctx.pool, oid, SPACE_GROUP)
    }

    fn reply_lag(ctx: &mut Ctx<'_>, history: &History, group: &Group) {
        match history.lag(group) {
            Some(lag) => ctx.int(lag),
            None => ctx.null(),
        }
    }

    fn reply_entries_read(ctx: &mut Ctx<'_>, group: &Group) {
        if group.entries_read == READ_UNKNOWN {
            ctx.null();
        } else {
            ctx.int(group.entries_read);
        }
    }

    pub(in crate::apps::kv) fn xinfo_groups(&mut self, ctx: &mut Ctx<'_>, meta: Meta) -> Result<(), StoreError> {
        let history = self.history(ctx, meta.oid)?;
        let groups = self.groups(ctx, meta.oid)?;
        ctx.array(groups.len());
        for (name, group) in groups {
            let consumers = self.prefixed_count(ctx, meta.oid, SPACE_CONSUMER, &named(&name))?;
            let pending = self.prefixed_count(ctx, meta.oid, SPACE_PEL, &named(&name))?;
            ctx.map(6);
            ctx.bulk(b"name");
            ctx.bulk(&name);
            ctx.bulk(b"consumers");
            ctx.int(consumers as i64);
            ctx.bulk(b"pending");
            ctx.int(pending as i64);
            ctx.bulk(b"last-delivered-id");
            ctx.bulk(group.last_id.text().as_bytes());
            ctx.bulk(b"entries-read");
            Self::reply_entries_read(ctx, &group);
            ctx.bulk(b"lag");
            Self::reply_lag(ctx, &history, &group);
        }
        Ok(())
    }

    pub(in crate::apps::kv) fn xinfo_consumers(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        meta: Meta,
    ) -> Result<(), StoreError> {
        let name = ctx.arg(3).into_owned();
        if self.group_get(ctx, meta.oid, &name)?.is_none() {
            ctx.error(&nogroup_for_key(key, &name));
            return Ok(());
        }
        let now = now_ms();
        let consumers = self.consumers(ctx, meta.oid, &name)?;
        ctx.array(consumers.len());
        for (consumer, seen) in consumers {
            let pending = self.consumer_pending(ctx, meta.oid, &name, &consumer)?;
            ctx.map(3);
            ctx.bulk(b"name");
            ctx.bulk(&consumer);
            ctx.bulk(b"pending");
            ctx.int(pending as i64);
            ctx.bulk(b"idle");
            ctx.int(now.saturating_sub(seen) as i64);
        }
        Ok(())
    }

    /// XINFO STREAM FULL's groups, each PEL and consumer list cut at
    /// `count` (0: all).
    pub(in crate::apps::kv) fn xinfo_full_groups(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        count: usize,
    ) -> Result<(), StoreError> {
        let history = self.history(ctx, oid)?;
        let groups = self.groups(ctx, oid)?;
        ctx.array(groups.len());
        for (name, group) in groups {
            let mut pending = self.pending_range(ctx, oid, &name, StreamId::default(), StreamId::MAX)?;
            let total = pending.len();
            if count != 0 {
                pending.truncate(count);
            }
            ctx.map(7);
            ctx.bulk(b"name");
            ctx.bulk(&name);
            ctx.bulk(b"last-delivered-id");
            ctx.bulk(group.last_id.text().as_bytes());
            ctx.bulk(b"entries-read");
            Self::reply_entries_read(ctx, &group);
            ctx.bulk(b"lag");
            Self::reply_lag(ctx, &history, &group);
            ctx.bulk(b"pel-count");
            ctx.int(total as i64);
            ctx.bulk(b"pending");
            ctx.array(pending.len());
            for (id, nack) in &pending {
                ctx.array(4);
                ctx.bulk(id.text().as_bytes());
                ctx.bulk(&nack.consumer);
                ctx.int(nack.delivery_time as i64);
                ctx.int(nack.delivery_count as i64);
            }
            self.xinfo_full_consumers(ctx, oid, &name, count)?;
        }
        Ok(())
    }

    fn xinfo_full_consumers(
        &mut self,
        ctx: &mut Ctx<'_>,
        oid: u64,
        name: &[u8],
        count: usize,
    ) -> Result<(), StoreError> {
        ctx.bulk(b"consumers");
        let consumers = self.consumers(ctx, oid, name)?;
        ctx.array(consumers.len());
        for (consumer, seen) in consumers {
            let mut ids = self.consumer_pending_ids(ctx, oid, name, &consumer, StreamId::default())?;
            let total = ids.len();
            if count != 0 {
                ids.truncate(count);
            }
            ctx.map(4);
            ctx.bulk(b"name");
            ctx.bulk(&consumer);
            ctx.bulk(b"seen-time");
            ctx.int(seen as i64);
            ctx.bulk(b"pel-count");
            ctx.int(total as i64);
            ctx.bulk(b"pending");
            ctx.array(ids.len());
            for id in ids {
                let nack = self.nack_get(ctx, oid, name, id)?;
                ctx.array(3);
                ctx.bulk(id.text().as_bytes());
                ctx.int(nack.as_ref().map_or(0, |n| n.delivery_time) as i64);
                ctx.int(nack.as_ref().map_or(0, |n| n.delivery_count) as i64);
            }
        }
        Ok(())
    }
}

/// XPENDING's extended form.
struct PendingRange {
    min_idle: u64,
    start: Option<StreamId>,
    end: Option<StreamId>,
    count: usize,
    consumer: Option<Vec<u8>>,
}

fn parse_pending_range(ctx: &Ctx<'_>) -> Result<PendingRange, String> {
    let mut at = 3;
    let mut min_idle = 0;
    if ctx.arg(3).eq_ignore_ascii_case(b"IDLE") {
        min_idle = parse_i64(&ctx.arg(4)).ok_or(NOT_INTEGER)?.max(0) as u64;
        if ctx.argc() < 8 {
            return Err(SYNTAX.into());
        }
        at += 2;
    }
    if at + 2 >= ctx.argc() {
        return Err(SYNTAX.into());
    }
    let count = parse_i64(&ctx.arg(at + 2)).ok_or(NOT_INTEGER)?.max(0) as usize;
    let start = interval(&ctx.arg(at), 0, true)?;
    let end = interval(&ctx.arg(at + 1), u64::MAX, false)?;
    let consumer = (at + 3 < ctx.argc()).then(|| ctx.arg(at + 3).into_owned());
    if at + 4 < ctx.argc() {
        return Err(SYNTAX.into());
    }
    Ok(PendingRange { min_idle, start, end, count, consumer })
}

/// XCLAIM's ids and options.
struct Claim {
    min_idle: u64,
    ids: Vec<StreamId>,
    delivery_time: Option<u64>,
    retry_count: Option<u64>,
    force: bool,
    just_id: bool,
    last_id: StreamId,
}

fn parse_claim(ctx: &Ctx<'_>) -> Result<Claim, String> {
    let min_idle = parse_i64(&ctx.arg(4)).ok_or("ERR Invalid min-idle-time argument for XCLAIM")?.max(0) as u64;
    let mut claim = Claim {
        min_idle,
        ids: Vec::new(),
        delivery_time: None,
        retry_count: None,
        force: false,
        just_id: false,
        last_id: StreamId::default(),
    };
    let mut j = 5;
    while j < ctx.argc() {
        match parse_id(&ctx.arg(j), 0, true) {
            Ok((id, _)) => claim.ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = now_ms() as i64;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let opt = ctx.arg(j).to_ascii_uppercase();
        let number = |j: usize, what: &str| {
            parse_i64(&ctx.arg(j)).ok_or_else(|| format!("ERR Invalid {what} option argument for XCLAIM"))
        };
        match opt.as_slice() {
            b"FORCE" => claim.force = true,
            b"JUSTID" => claim.just_id = true,
            b"IDLE" if more > 0 => {
                j += 1;
                claim.delivery_time = Some(now.saturating_sub(number(j, "IDLE")?).max(0) as u64);
            }
            b"TIME" if more > 0 => {
                j += 1;
                claim.delivery_time = Some(number(j, "TIME")?.max(0) as u64);
            }
            b"RETRYCOUNT" if more > 0 => {
                j += 1;
                claim.retry_count = Some(number(j, "RETRYCOUNT")?.max(0) as u64);
            }
            b"LASTID" if more > 0 => {
                j += 1;
                claim.last_id = parse_id(&ctx.arg(j), 0, true)?.0;
            }
            _ => return Err(format!("ERR Unrecognized XCLAIM option '{}'", String::from_utf8_lossy(&ctx.arg(j)))),
        }
        j += 1;
    }
    Ok(claim)
}

/// XAUTOCLAIM's options.
struct AutoClaim {
    min_idle: u64,
    start: Option<StreamId>,
    count: usize,
    just_id: bool,
}

fn parse_autoclaim(ctx: &Ctx<'_>) -> Result<AutoClaim, String> {
    let min_idle = parse_i64(&ctx.arg(4)).ok_or("ERR Invalid min-idle-time argument for XAUTOCLAIM")?.max(0) as u64;
    let start = interval(&ctx.arg(5), 0, true)?;
    let mut args = AutoClaim { min_idle, start, count: 100, just_id: false };
    let mut j = 6;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let opt = ctx.arg(j).to_ascii_uppercase();
        match opt.as_slice() {
            b"COUNT" if more > 0 => {
                let n = parse_i64(&ctx.arg(j + 1)).ok_or("ERR COUNT must be > 0")?;
                if !(1..=(i64::MAX / 16)).contains(&n) {
                    return Err("ERR COUNT must be > 0".into());
                }
                args.count = n as usize;
                j += 1;
            }
            b"JUSTID" => args.just_id = true,
            _ => return Err(SYNTAX.into()),
        }
        j += 1;
    }
    Ok(args)
}
