//! Commands that span shards on the main port of a sharded server (issue
//! 37): a keyless command whose answer is every shard's (DBSIZE, KEYS,
//! FLUSHALL, FLUSHDB, RANDOMKEY, PUBLISH), and a multi-key command whose keys
//! several shards own (DEL, UNLINK, EXISTS, TOUCH, MGET), is split into
//! one part per shard; SCAN goes to one shard at a time, its cursor naming
//! the shard (`cursor = inner * shards + shard`). Each part is sent on the
//! link to its shard (this shard's own
//! included: it has a link to itself, so every part takes one path), and
//! the parts' replies are merged into the one reply Redis gives, keys in
//! the order the client named them.
//!
//! Owns: which commands span, how they split (`plan`), and how replies
//! merge (`merge`). Pure functions: the links (`shard_link.rs`) carry the
//! parts and gather their replies.
//!
//! Invariant: a merged reply is built only from every part's reply; one
//! error among them is the reply (the client learns that part failed).
//! The keyless commands' parts go out on the links, each atomic on its
//! shard. A command with keys of several shards (`plan_by_key`) runs its
//! parts with those shards parked (`across.rs`), atomic as a whole.

/// How the parts' replies become one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Merge {
    /// Integers, added (DBSIZE, DEL, UNLINK, EXISTS, TOUCH).
    Sum,
    /// `+OK` from every part (FLUSHALL, FLUSHDB).
    AllOk,
    /// Arrays, one after the other (KEYS).
    Concat,
    /// Arrays of one element per key of the part, put back in the order
    /// of the command's keys: `order[i]` is (part, index in it) of key i.
    Reorder(Vec<(usize, usize)>),
    /// One of the parts' non-nil replies, chosen at random (RANDOMKEY: a
    /// shard with keys is as likely as any other, whatever its size).
    AnyOf,
    /// SCAN's reply from `shard` of `shards`: its cursor made the client's.
    Scan { shard: u16, shards: u16 },
    /// The same reply from every part (a change every shard makes alike:
    /// CONFIG SET, SCRIPT LOAD, FUNCTION LOAD): the first part's.
    Same,
    /// Arrays whose elements are merged without repeats, in first-seen
    /// order (PUBSUB CHANNELS: a channel may have subscribers on several
    /// shards).
    Union,
    /// Arrays merged as `Union`, answered as the number of their distinct
    /// elements (PUBSUB NUMPAT from every shard's patterns).
    UnionCount,
    /// Arrays of name, count pairs, in the same order on every shard:
    /// counts added (PUBSUB NUMSUB).
    PairsSum,
    /// INFO texts, as one (`span_info.rs`).
    Info,
    /// Bulk strings, one after the other (CLIENT LIST: each shard's
    /// clients, a line each).
    Text,
    /// `+OK` if any part answered it, else the first part's error (CLIENT
    /// KILL addr: the client is on one shard).
    AnyOk,
    /// SLOWLOG GET: every shard's entries (ids of one sequence), newest
    /// first, at most `shown` of them.
    Slowlog { shown: usize },
    /// Integers, added, at most the limit (SLOWLOG LEN: the process's log
    /// holds slowlog-max-len entries).
    SumAtMost(usize),
    /// LATENCY HISTOGRAM: maps of command, {calls, histogram_usec}, the
    /// calls and each bucket's count added by command.
    Histograms,
    /// GET /metrics on the main port: bulk strings of every shard's
    /// Prometheus exposition, merged (`metrics_fold`) into the
    /// HTTP response itself, as a bulk string (`http_relay.rs`).
    Metrics { keep_alive: bool },
}

/// An argument of a part: the original command's argument at an index, or
/// a value of the part's own (SCAN's cursor on its shard).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Index(usize),
    Value(Vec<u8>),
}

/// One part: the shard it runs on and its arguments (the name first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub shard: u16,
    pub args: Vec<Arg>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub parts: Vec<Part>,
    pub merge: Merge,
}

/// PUBSUB's subcommand that a part of a spanning NUMPAT runs on a shard:
/// its patterns, as an array. Taken only from a link between shards.
pub(in crate::apps::kv) const NUMPAT_PART: &[u8] = b"PATTERNS-OF-SHARD";

/// Keyless commands answered by every shard.
/// A subcommand is named `command|subcommand`, in lower case.
const EVERY_SHARD: [(&str, Merge); 28] = [
    // Every shard's figures, clients and patterns.
    ("info", Merge::Info),
    ("client|list", Merge::Text),
    ("client|kill", Merge::Sum),
    // Every shard's patterns (`NUMPAT_PART`), counted once each: a
    // pattern subscribed by clients of two shards is one pattern.
    ("pubsub|numpat", Merge::UnionCount),
    ("latency|histogram", Merge::Histograms),
    // A subscriber's connection lives on one shard.
    ("pubsub|channels", Merge::Union),
    ("pubsub|numsub", Merge::PairsSum),
    ("dbsize", Merge::Sum),
    // The client waits on one shard at most: 1 there, 0 elsewhere.
    ("client|unblock", Merge::Sum),
    // Every shard keeps a tracking client's mode (for the client's id:
    // `shard_link::LINK_AS`), and tracks its keys there.
    ("client|tracking", Merge::AllOk),
    // Every shard's configuration, scripts and functions stay alike.
    ("config|set", Merge::Same),
    ("config|resetstat", Merge::Same),
    ("script|load", Merge::Same),
    ("script|flush", Merge::Same),
    ("function|load", Merge::Same),
    ("function|delete", Merge::Same),
    ("function|flush", Merge::Same),
    ("function|restore", Merge::Same),
    ("slowlog|reset", Merge::Same),
    // Switches of the whole server, as on one Redis: active expiry off on
    // every shard; a sleep holds every shard, as it holds Redis.
    ("debug|set-active-expire", Merge::Same),
    ("debug|sleep", Merge::Same),
    ("latency|reset", Merge::Sum),
    // Each shard's subscribers get the message; the count is everyone's.
    ("publish", Merge::Sum),
    ("keys", Merge::Concat),
    ("flushall", Merge::AllOk),
    ("flushdb", Merge::AllOk),
    // Every shard maps the logical databases the same way (each shard
    // swaps its own; not one instant across shards, as FLUSHALL).
    ("swapdb", Merge::AllOk),
    ("randomkey", Merge::AnyOf),
];

/// Commands whose every argument after the name is a key, split by shard.
const SPLIT_BY_KEY: [&str; 5] = ["del", "unlink", "exists", "touch", "mget"];

/// SCAN's part for the client's `cursor` (`inner * shards + shard`): the
/// shard's own SCAN from `inner`, the other arguments as they are.
pub fn plan_scan(cursor: u64, argc: usize, shards: u16) -> Plan {
    let shard = (cursor % u64::from(shards)) as u16;
    let inner = cursor / u64::from(shards);
    let mut args = vec![Arg::Index(0), Arg::Value(inner.to_string().into_bytes())];
    args.extend((2..argc).map(Arg::Index));
    Plan { parts: vec![Part { shard, args }], merge: Merge::Scan { shard, shards } }
}

/// SLOWLOG GET and LEN's parts, one per shard, each with all the
/// arguments (`count`: GET's, when it is a number of -1 or more); with
/// `max_len` (slowlog-max-len) the process's log's length. None: a
/// count that is no such number, answered (refused) where it runs.
pub fn plan_slowlog(sub: &str, argc: usize, count: Option<i64>, max_len: usize, shards: u16) -> Option<Plan> {
    let merge = match (sub, argc) {
        ("len", 2) => Merge::SumAtMost(max_len),
        ("get", 2) => Merge::Slowlog { shown: max_len.min(10) },
        ("get", 3) => match count? {
            -1 => Merge::Slowlog { shown: max_len },
            n if n >= 0 => Merge::Slowlog { shown: max_len.min(n as usize) },
            _ => return None,
        },
        _ => return None,
    };
    let parts = (0..shards).map(|shard| Part { shard, args: (0..argc).map(Arg::Index).collect() }).collect();
    Some(Plan { parts, merge })
}

/// The parts of a call of `name` (lower case) with `argc` arguments, one
/// per shard, each with all the arguments: None unless `name` is one of
/// `EVERY_SHARD`.
pub fn plan_every_shard(name: &str, argc: usize, shards: u16) -> Option<Plan> {
    let (_, merge) = EVERY_SHARD.iter().find(|(n, _)| *n == name)?;
    let parts = (0..shards).map(|shard| Part { shard, args: (0..argc).map(Arg::Index).collect() }).collect();
    // CLIENT KILL addr (the old form) answers OK or an error, not a count.
    let merge = if name == "client|kill" && argc == 3 { Merge::AnyOk } else { merge.clone() };
    let mut plan = Plan { parts, merge };
    if name == "pubsub|numpat" && argc == 2 {
        // Each shard names its patterns; the merge counts them once.
        for part in &mut plan.parts {
            part.args = vec![Arg::Index(0), Arg::Value(NUMPAT_PART.to_vec())];
        }
    }
    Some(plan)
}

/// The parts of a call of `name` (lower case) with `argc` arguments, one
/// per shard owning some of its keys, whose owners `owner_of(i)` gives for
/// argument i: None unless `name` is one of `SPLIT_BY_KEY`.
pub fn plan_by_key(name: &str, argc: usize, owner_of: impl Fn(usize) -> u16) -> Option<Plan> {
    if !SPLIT_BY_KEY.contains(&name) {
        return None;
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut order = Vec::with_capacity(argc.saturating_sub(1));
    for i in 1..argc {
        let shard = owner_of(i);
        let part = match parts.iter().position(|p| p.shard == shard) {
            Some(part) => part,
            None => {
                parts.push(Part { shard, args: vec![Arg::Index(0)] });
                parts.len() - 1
            }
        };
        order.push((part, parts[part].args.len() - 1));
        parts[part].args.push(Arg::Index(i));
    }
    let merge = if name == "mget" { Merge::Reorder(order) } else { Merge::Sum };
    Some(Plan { parts, merge })
}

/// The one reply of the parts' `replies` (in part order, each one whole
/// RESP reply), or the first error among them.
pub fn merge(merge: &Merge, replies: &[Vec<u8>]) -> Vec<u8> {
    if *merge == Merge::AnyOk {
        let ok = replies.iter().find(|r| r.as_slice() == b"+OK\r\n");
        return ok.or(replies.first()).cloned().unwrap_or_else(|| unexpected(b"no part"));
    }
    if let Some(error) = replies.iter().find(|r| matches!(r.first(), Some(b'-') | Some(b'!'))) {
        return error.clone();
    }
    match merge {
        Merge::Sum => {
            let mut total: i64 = 0;
            for reply in replies {
                let Some(n) = integer(reply) else { return unexpected(reply) };
                total = total.saturating_add(n);
            }
            format!(":{total}\r\n").into_bytes()
        }
        Merge::AllOk => match replies.iter().find(|r| r.as_slice() != b"+OK\r\n") {
            Some(other) => unexpected(other),
            None => b"+OK\r\n".to_vec(),
        },
        Merge::Concat => {
            let mut count = 0;
            let mut body = Vec::new();
            for reply in replies {
                let Some((n, elements)) = array(reply) else { return unexpected(reply) };
                count += n;
                body.extend_from_slice(elements);
            }
            let mut out = format!("*{count}\r\n").into_bytes();
            out.extend_from_slice(&body);
            out
        }
        Merge::Reorder(order) => reorder(order, replies),
        Merge::AnyOf => {
            let found: Vec<&Vec<u8>> = replies.iter().filter(|r| !is_nil(r)).collect();
            match found.len() {
                0 => replies.first().cloned().unwrap_or_else(|| b"$-1\r\n".to_vec()),
                n => found[random_below(n)].clone(),
            }
        }
        Merge::Same => replies.first().cloned().unwrap_or_else(|| unexpected(b"no part")),
        Merge::Union => union(replies),
        Merge::UnionCount => match distinct(replies) {
            Ok(kept) => format!(":{}\r\n", kept.len()).into_bytes(),
            Err(reply) => unexpected(reply),
        },
        Merge::PairsSum => pairs_sum(replies),
        Merge::Info => texts(replies, crate::apps::kv::span_info::merge_info),
        Merge::Metrics { keep_alive } => metrics_response(replies, *keep_alive),
        Merge::Text => texts(replies, |texts| texts.concat()),
        Merge::AnyOk => unreachable!("answered above"),
        Merge::Slowlog { shown } => newest_entries(replies, *shown),
        Merge::Histograms => histograms(replies).unwrap_or_else(|| unexpected(&replies.concat())),
        Merge::SumAtMost(limit) => match self::merge(&Merge::Sum, replies) {
            sum if integer(&sum).is_some_and(|n| n > *limit as i64) => format!(":{limit}\r\n").into_bytes(),
            sum => sum,
        },
        Merge::Scan { shard, shards } => match replies {
            [reply] => scan_reply(reply, *shard, *shards),
            _ => unexpected(b"several replies to one SCAN"),
        },
    }
}

pub(in crate::apps::kv) fn is_nil(reply: &[u8]) -> bool {
    reply == b"$-1\r\n" || reply == b"_\r\n" || reply == b"*-1\r\n"
}

/// A number below `n`, seeded by the clock: RANDOMKEY's choice of a
/// shard needs no stronger randomness.
fn random_below(n: usize) -> usize {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    crate::util::rng::SplitMix64::new(seed).below(n as u64) as usize
}

/// SCAN's `[cursor, keys]` from `shard`, its cursor made the client's: the
/// next shard's start when this one is done, 0 after the last.
fn scan_reply(reply: &[u8], shard: u16, shards: u16) -> Vec<u8> {
    let Some((2, body)) = array(reply) else { return unexpected(reply) };
    let Some(elements) = split_elements(body) else { return unexpected(reply) };
    let inner = elements[0]
        .strip_prefix(b"$")
        .and_then(|rest| rest.iter().position(|&b| b == b'\n').map(|eol| &rest[eol + 1..]))
        .and_then(|value| value.strip_suffix(b"\r\n"))
        .and_then(|value| std::str::from_utf8(value).ok()?.parse::<u64>().ok());
    let Some(inner) = inner else { return unexpected(reply) };
    let next = match inner {
        0 if shard + 1 < shards => u64::from(shard) + 1,
        0 => 0,
        inner => match inner.checked_mul(u64::from(shards)) {
            Some(outer) => outer + u64::from(shard),
            None => return b"-ERR a shard's SCAN cursor is too large to carry its shard\r\n".to_vec(),
        },
    };
    let next = next.to_string();
    let mut out = format!("*2\r\n${}\r\n{next}\r\n", next.len()).into_bytes();
    out.extend_from_slice(elements[1]);
    out
}

fn reorder(order: &[(usize, usize)], replies: &[Vec<u8>]) -> Vec<u8> {
    let mut elements: Vec<Vec<&[u8]>> = Vec::with_capacity(replies.len());
    for reply in replies {
        let Some((_, body)) = array(reply) else { return unexpected(reply) };
        match split_elements(body) {
            Some(parts) => elements.push(parts),
            None => return unexpected(reply),
        }
    }
    let mut out = format!("*{}\r\n", order.len()).into_bytes();
    for &(part, index) in order {
        match elements.get(part).and_then(|e| e.get(index)) {
            Some(element) => out.extend_from_slice(element),
            None => return b"-ERR a shard answered fewer values than keys it was asked for\r\n".to_vec(),
        }
    }
    out
}

/// Every part's array elements, each once, in first-seen order.
fn union(replies: &[Vec<u8>]) -> Vec<u8> {
    let kept = match distinct(replies) {
        Ok(kept) => kept,
        Err(reply) => return unexpected(reply),
    };
    let mut out = format!("*{}\r\n", kept.len()).into_bytes();
    kept.iter().for_each(|element| out.extend_from_slice(element));
    out
}

/// The arrays' elements without repeats, in first-seen order; Err: the
/// reply that is no array.
fn distinct(replies: &[Vec<u8>]) -> Result<Vec<&[u8]>, &[u8]> {
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<&[u8]> = Vec::new();
    for reply in replies {
        let Some(elements) = array(reply).and_then(|(_, body)| split_elements(body)) else { return Err(reply) };
        kept.extend(elements.into_iter().filter(|element| seen.insert(*element)));
    }
    Ok(kept)
}

/// The first part's name, count pairs with every part's counts added.
fn pairs_sum(replies: &[Vec<u8>]) -> Vec<u8> {
    let mut parts = Vec::with_capacity(replies.len());
    for reply in replies {
        match array(reply).and_then(|(_, body)| split_elements(body)) {
            Some(elements) if elements.len() % 2 == 0 => parts.push(elements),
            _ => return unexpected(reply),
        }
    }
    let Some(first) = parts.first() else { return unexpected(b"no part") };
    let mut out = format!("*{}\r\n", first.len()).into_bytes();
    for (i, pair) in first.chunks(2).enumerate() {
        let mut total: i64 = 0;
        for part in &parts {
            let same_name = part.get(2 * i) == Some(&pair[0]);
            let Some(n) = part.get(2 * i + 1).filter(|_| same_name).and_then(|n| integer(n)) else {
                return unexpected(&part.concat());
            };
            total = total.saturating_add(n);
        }
        out.extend_from_slice(pair[0]);
        out.extend_from_slice(format!(":{total}\r\n").as_bytes());
    }
    out
}

/// A map's key and value replies, in order.
type Pairs<'a> = Vec<(&'a [u8], &'a [u8])>;

/// A map (RESP3 `%`, or RESP2's flat array) as its pairs, and whether it
/// was RESP3.
fn pairs(reply: &[u8]) -> Option<(bool, Pairs<'_>)> {
    let (resp3, rest) = match reply.split_first()? {
        (b'%', rest) => (true, rest),
        (b'*', rest) => (false, rest),
        _ => return None,
    };
    let eol = rest.windows(2).position(|w| w == b"\r\n")?;
    let elements = split_elements(&rest[eol + 2..])?;
    (elements.len() % 2 == 0).then(|| (resp3, elements.chunks(2).map(|pair| (pair[0], pair[1])).collect()))
}

/// Every part's LATENCY HISTOGRAM, one: by command (first seen first),
/// calls and bucket counts added.
fn histograms(replies: &[Vec<u8>]) -> Option<Vec<u8>> {
    type Buckets = std::collections::BTreeMap<i64, i64>;
    let mut merged: Vec<(&[u8], i64, Buckets)> = Vec::new();
    let mut resp3 = false;
    for reply in replies {
        let (is_resp3, commands) = pairs(reply)?;
        resp3 |= is_resp3;
        for (name, body) in commands {
            let (_, fields) = pairs(body)?;
            let calls = fields.iter().find(|(k, _)| k.ends_with(b"calls\r\n")).and_then(|(_, v)| integer(v))?;
            let (_, rows) = pairs(fields.iter().find(|(k, _)| k.ends_with(b"histogram_usec\r\n"))?.1)?;
            let at = match merged.iter().position(|(n, _, _)| *n == name) {
                Some(at) => at,
                None => {
                    merged.push((name, 0, Buckets::new()));
                    merged.len() - 1
                }
            };
            merged[at].1 += calls;
            for (usec, count) in rows {
                *merged[at].2.entry(integer(usec)?).or_default() += integer(count)?;
            }
        }
    }
    let header = |n: usize| if resp3 { format!("%{n}\r\n") } else { format!("*{}\r\n", 2 * n) };
    let mut out = header(merged.len()).into_bytes();
    for (name, calls, buckets) in merged {
        out.extend_from_slice(name);
        out.extend_from_slice(header(2).as_bytes());
        out.extend_from_slice(format!("$5\r\ncalls\r\n:{calls}\r\n$14\r\nhistogram_usec\r\n").as_bytes());
        out.extend_from_slice(header(buckets.len()).as_bytes());
        for (usec, count) in buckets {
            out.extend_from_slice(format!(":{usec}\r\n:{count}\r\n").as_bytes());
        }
    }
    Some(out)
}

/// Every part's SLOWLOG entries (`[id, ...]` arrays), newest (highest
/// id) first, at most `shown`.
fn newest_entries(replies: &[Vec<u8>], shown: usize) -> Vec<u8> {
    let mut entries: Vec<(i64, &[u8])> = Vec::new();
    for reply in replies {
        let Some(elements) = array(reply).and_then(|(_, body)| split_elements(body)) else { return unexpected(reply) };
        for entry in elements {
            let id = array(entry).and_then(|(_, fields)| split_elements(fields)).and_then(|f| integer(f.first()?));
            match id {
                Some(id) => entries.push((id, entry)),
                None => return unexpected(entry),
            }
        }
    }
    entries.sort_by_key(|&(id, _)| std::cmp::Reverse(id));
    entries.truncate(shown);
    let mut out = format!("*{}\r\n", entries.len()).into_bytes();
    entries.iter().for_each(|(_, entry)| out.extend_from_slice(entry));
    out
}

/// How a sharded server's main port folds a family of its shards'
/// expositions into one: most are each shard's part of the whole
/// (requests, keys, buffers, connections: added); a few are alike on every
/// shard (the version, the buffer size, the uptime) or a view of the whole
/// (the tallest tree, the slowest recovery, whether any compaction runs).
fn metrics_fold(family: &str) -> crate::util::metrics::Fold {
    use crate::util::metrics::Fold;
    match family {
        "packetstore_info" | "packetstore_uptime_seconds" | "packetstore_buffer_bytes" => Fold::First,
        "packetstore_recovery_seconds"
        | "packetstore_tree_height"
        | "packetstore_compaction_running"
        | "packetstore_compaction_waste_ratio" => Fold::Max,
        _ => Fold::Sum,
    }
}

/// The parts' expositions merged, as a bulk string of the whole HTTP
/// response.
fn metrics_response(replies: &[Vec<u8>], keep_alive: bool) -> Vec<u8> {
    let parts = match bulk_texts(replies) {
        Ok((parts, _)) => parts,
        Err(unexpected) => return unexpected,
    };
    let body = crate::util::metrics::merge_expositions(&parts, metrics_fold);
    let mut response = Vec::new();
    let content_type = crate::proto::http::METRICS_CONTENT_TYPE;
    crate::proto::http::respond_typed(&mut response, 200, content_type, body.as_bytes(), keep_alive);
    let mut out = format!("${}\r\n", response.len()).into_bytes();
    out.extend_from_slice(&response);
    out.extend_from_slice(b"\r\n");
    out
}

/// Bulk strings (RESP2 `$`, or RESP3 verbatim `=` with its `txt:`), as
/// one made by `join` from their texts, in the first one's type.
fn texts(replies: &[Vec<u8>], join: impl Fn(&[&str]) -> String) -> Vec<u8> {
    let (texts, verbatim) = match bulk_texts(replies) {
        Ok(texts) => texts,
        Err(unexpected) => return unexpected,
    };
    let text = join(&texts);
    match verbatim {
        true => format!("={}\r\ntxt:{text}\r\n", text.len() + 4).into_bytes(),
        false => format!("${}\r\n{text}\r\n", text.len()).into_bytes(),
    }
}

/// The texts of bulk strings, and whether one was verbatim; Err: the
/// error reply for the first that is no bulk string of UTF-8.
fn bulk_texts(replies: &[Vec<u8>]) -> Result<(Vec<&str>, bool), Vec<u8>> {
    let mut texts = Vec::with_capacity(replies.len());
    let mut verbatim = false;
    for reply in replies {
        let Some((kind, rest)) = reply.split_first() else { return Err(unexpected(reply)) };
        let eol = rest.windows(2).position(|w| w == b"\r\n");
        let body = eol.and_then(|eol| rest.get(eol + 2..rest.len().checked_sub(2)?));
        let body = match (kind, body) {
            (b'$', Some(body)) => body,
            (b'=', Some(body)) if body.starts_with(b"txt:") => {
                verbatim = true;
                &body[4..]
            }
            _ => return Err(unexpected(reply)),
        };
        match std::str::from_utf8(body) {
            Ok(text) => texts.push(text),
            Err(_) => return Err(unexpected(reply)),
        }
    }
    Ok((texts, verbatim))
}

/// `:n\r\n` as n.
pub(in crate::apps::kv) fn integer(reply: &[u8]) -> Option<i64> {
    let line = reply.strip_prefix(b":")?.strip_suffix(b"\r\n")?;
    std::str::from_utf8(line).ok()?.parse().ok()
}

/// `*n\r\n...` as n and the bytes of its elements.
fn array(reply: &[u8]) -> Option<(usize, &[u8])> {
    let rest = reply.strip_prefix(b"*")?;
    let eol = rest.windows(2).position(|w| w == b"\r\n")?;
    let n = std::str::from_utf8(&rest[..eol]).ok()?.parse().ok()?;
    Some((n, &rest[eol + 2..]))
}

/// The whole replies `body` is made of, one after the other.
fn split_elements(mut body: &[u8]) -> Option<Vec<&[u8]>> {
    let mut elements = Vec::new();
    while !body.is_empty() {
        let len = crate::proto::resp::reply_len(body).ok()??;
        elements.push(&body[..len]);
        body = &body[len..];
    }
    Some(elements)
}

/// A part's reply of the wrong type: a bug on the other shard's side,
/// answered as an error rather than merged.
fn unexpected(reply: &[u8]) -> Vec<u8> {
    let shown = String::from_utf8_lossy(&reply[..reply.len().min(40)]).replace(['\r', '\n'], " ");
    format!("-ERR a shard answered a part of this command unexpectedly: {shown}\r\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_by_shard_and_come_back_in_their_order() {
        // Keys 1..=5 on shards 2, 0, 2, 1, 0.
        let owners = [0, 2, 0, 2, 1, 0];
        let plan = plan_by_key("mget", 6, |i| owners[i]).unwrap();
        let index = |args: &[usize]| args.iter().map(|&i| Arg::Index(i)).collect::<Vec<_>>();
        let args: Vec<(u16, Vec<Arg>)> = plan.parts.iter().map(|p| (p.shard, p.args.clone())).collect();
        assert_eq!(args, vec![(2, index(&[0, 1, 3])), (0, index(&[0, 2, 5])), (1, index(&[0, 4]))]);
        let replies = [
            b"*2\r\n$2\r\nk1\r\n$-1\r\n".to_vec(),
            b"*2\r\n$2\r\nk2\r\n$2\r\nk5\r\n".to_vec(),
            b"*1\r\n$2\r\nk4\r\n".to_vec(),
        ];
        assert_eq!(
            merge(&plan.merge, &replies),
            b"*5\r\n$2\r\nk1\r\n$2\r\nk2\r\n$-1\r\n$2\r\nk4\r\n$2\r\nk5\r\n".to_vec()
        );
    }

    #[test]
    fn channels_merge_once_and_subscriber_counts_add_up() {
        let channels = [b"*2\r\n$1\r\na\r\n$1\r\nb\r\n".to_vec(), b"*2\r\n$1\r\nb\r\n$1\r\nc\r\n".to_vec()];
        assert_eq!(merge(&Merge::Union, &channels), b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n".to_vec());
        assert_eq!(merge(&Merge::UnionCount, &channels), b":3\r\n".to_vec(), "b counted once");
        let counts = [
            b"*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n".to_vec(),
            b"*4\r\n$1\r\na\r\n:2\r\n$1\r\nb\r\n:3\r\n".to_vec(),
        ];
        assert_eq!(merge(&Merge::PairsSum, &counts), b"*4\r\n$1\r\na\r\n:3\r\n$1\r\nb\r\n:3\r\n".to_vec());
        let out_of_step = [counts[0].clone(), b"*2\r\n$1\r\nb\r\n:3\r\n".to_vec()];
        assert!(merge(&Merge::PairsSum, &out_of_step).starts_with(b"-ERR"));
    }

    #[test]
    fn counts_add_up_and_every_shard_answers_a_keyless_command() {
        let plan = plan_by_key("del", 4, |i| (i % 2) as u16).unwrap();
        assert_eq!(plan.merge, Merge::Sum);
        assert_eq!(merge(&plan.merge, &[b":2\r\n".to_vec(), b":1\r\n".to_vec()]), b":3\r\n".to_vec());
        let every = plan_every_shard("keys", 2, 3).unwrap();
        assert_eq!(every.parts.len(), 3);
        assert!(every.parts.iter().all(|p| p.args == vec![Arg::Index(0), Arg::Index(1)]));
        let keys = [b"*1\r\n$1\r\na\r\n".to_vec(), b"*0\r\n".to_vec(), b"*2\r\n$1\r\nb\r\n$1\r\nc\r\n".to_vec()];
        assert_eq!(merge(&every.merge, &keys), b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n".to_vec());
        assert_eq!(merge(&Merge::AllOk, &[b"+OK\r\n".to_vec(), b"+OK\r\n".to_vec()]), b"+OK\r\n".to_vec());
        assert!(plan_by_key("set", 3, |_| 0).is_none(), "only the listed commands split");
        assert!(plan_every_shard("set", 3, 2).is_none(), "only the listed commands span");
    }

    #[test]
    fn a_scan_cursor_names_its_shard_and_moves_on_to_the_next() {
        // Shard 1 of 3 from its inner cursor 7: the client's cursor 22.
        let plan = plan_scan(22, 4, 3);
        assert_eq!(plan.parts[0].shard, 1);
        assert_eq!(plan.parts[0].args, vec![Arg::Index(0), Arg::Value(b"7".to_vec()), Arg::Index(2), Arg::Index(3)]);
        let keys = b"*1\r\n$1\r\na\r\n";
        let reply =
            |cursor: &str| [format!("*2\r\n${}\r\n{cursor}\r\n", cursor.len()).into_bytes(), keys.to_vec()].concat();
        // More on shard 1: its cursor 9 is the client's 28; done there: shard 2
        // from the start; done on the last shard: 0.
        assert_eq!(merge(&plan.merge, &[reply("9")]), [b"*2\r\n$2\r\n28\r\n".to_vec(), keys.to_vec()].concat());
        assert_eq!(merge(&plan.merge, &[reply("0")]), [b"*2\r\n$1\r\n2\r\n".to_vec(), keys.to_vec()].concat());
        let last = Merge::Scan { shard: 2, shards: 3 };
        assert_eq!(merge(&last, &[reply("0")]), [b"*2\r\n$1\r\n0\r\n".to_vec(), keys.to_vec()].concat());
        assert_eq!(plan_scan(2, 2, 3).parts[0].args[1], Arg::Value(b"0".to_vec()), "shard 2 starts at 0");
    }

    #[test]
    fn slowlogs_merge_newest_first_and_histograms_add_up() {
        let entry = |id: i64| format!("*6\r\n:{id}\r\n:1\r\n:5\r\n*1\r\n$3\r\nGET\r\n$0\r\n\r\n$0\r\n\r\n");
        let a = format!("*2\r\n{}{}", entry(7), entry(3)).into_bytes();
        let b = format!("*2\r\n{}{}", entry(9), entry(4)).into_bytes();
        let merged = merge(&Merge::Slowlog { shown: 3 }, &[a, b]);
        assert_eq!(merged, format!("*3\r\n{}{}{}", entry(9), entry(7), entry(4)).into_bytes());
        assert_eq!(merge(&Merge::SumAtMost(3), &[b":2\r\n".to_vec(), b":2\r\n".to_vec()]), b":3\r\n".to_vec());
        let histogram = |calls: i64, bucket: i64| {
            format!("%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:{calls}\r\n$14\r\nhistogram_usec\r\n%1\r\n:{bucket}\r\n:{calls}\r\n")
                .into_bytes()
        };
        let merged = String::from_utf8(merge(&Merge::Histograms, &[histogram(2, 8), histogram(1, 16)])).unwrap();
        assert_eq!(
            merged,
            "%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:3\r\n$14\r\nhistogram_usec\r\n%2\r\n:8\r\n:2\r\n:16\r\n:1\r\n"
        );
        // CLIENT KILL addr: OK if a shard had the client.
        let kill = [b"-ERR No such client\r\n".to_vec(), b"+OK\r\n".to_vec()];
        assert_eq!(merge(&Merge::AnyOk, &kill), b"+OK\r\n".to_vec());
        assert_eq!(merge(&Merge::AnyOk, &kill[..1]), kill[0]);
        let lists = [b"$5\r\nid=1\n\r\n".to_vec(), b"$5\r\nid=2\n\r\n".to_vec()];
        assert_eq!(merge(&Merge::Text, &lists), b"$10\r\nid=1\nid=2\n\r\n".to_vec());
    }

    #[test]
    fn randomkey_answers_a_key_when_any_shard_has_one() {
        let replies = [b"$-1\r\n".to_vec(), b"$1\r\nk\r\n".to_vec(), b"_\r\n".to_vec()];
        assert_eq!(merge(&Merge::AnyOf, &replies), b"$1\r\nk\r\n".to_vec());
        assert_eq!(merge(&Merge::AnyOf, &[b"$-1\r\n".to_vec(), b"$-1\r\n".to_vec()]), b"$-1\r\n".to_vec());
    }

    #[test]
    fn an_error_or_an_unexpected_reply_is_the_answer() {
        let replies = [b":1\r\n".to_vec(), b"-ERR the link to shard 1 closed\r\n".to_vec()];
        assert_eq!(merge(&Merge::Sum, &replies), replies[1]);
        let odd = merge(&Merge::Sum, &[b"+OK\r\n".to_vec()]);
        assert!(odd.starts_with(b"-ERR a shard answered"), "{}", String::from_utf8_lossy(&odd));
        let short = merge(&Merge::Reorder(vec![(0, 0), (0, 1)]), &[b"*1\r\n$1\r\na\r\n".to_vec()]);
        assert!(short.starts_with(b"-ERR"), "{}", String::from_utf8_lossy(&short));
    }
}
