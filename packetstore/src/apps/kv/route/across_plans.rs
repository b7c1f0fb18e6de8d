//! How a command across shards runs (`across.rs` parks the shards): each
//! recipe turns one client command into Redis commands on single shards,
//! and their replies into the reply Redis gives.
//!
//! - `ByKey` (DEL, UNLINK, EXISTS, TOUCH, MGET): one part per shard with
//!   its keys, merged as `span.rs` merges (counts add up, MGET's values in
//!   the order of its keys).
//! - `Mset`, `Msetnx`: one MSET per shard with its pairs; MSETNX first asks
//!   every shard whether any key exists.
//! - `Rename` (RENAME, RENAMENX): DUMP and PEXPIRETIME of the source on its
//!   shard, RESTORE ... REPLACE ABSTTL of the destination on its own, then
//!   DEL of the source: the value, its type and its expiry move whole.
//! - `Smove`, `Lmove` (SMOVE, LMOVE, RPOPLPUSH): both keys' types checked
//!   first (nothing changes on WRONGTYPE), then the pop or removal on the
//!   source's shard and the push or add on the destination's.
//! - `FirstPop` (LMPOP, ZMPOP, and the blocking pops BLPOP, BRPOP,
//!   BZPOPMIN, BZPOPMAX, BLMPOP, BZMPOP): the keys in order, each on its
//!   shard as a one-key pop, until one pops or errs: what Redis's pop does
//!   with the first non-empty key. A parked shard never blocks (its part
//!   is a transaction's), so a blocking pop that finds nothing answers nil
//!   here and `across.rs` parks its client.
//! - `Lmove` also runs BLMOVE and BRPOPLPUSH (nil if the source is empty).
//! - `Temp` (every other command whose written keys are all on one shard,
//!   its *home*: SUNIONSTORE, ZINTERSTORE, BITOP, COPY, PFMERGE, SINTER,
//!   LCS, ...): each key of another shard is copied (DUMP, RESTORE) to a
//!   temporary key of the home shard (`{tag}` makes it hash there), the
//!   command runs there on those names, and the temporary keys are
//!   deleted in the same transaction, so no client ever sees one.
//!
//! Owns: which commands run across shards and how (`plan`, `run`). Pure:
//! the calls go through `Calls`.
//!
//! Invariant: a recipe checks everything that could refuse the command
//! before its first write, so a refusal changes nothing.

use std::collections::BTreeSet;

use crate::apps::kv::cluster::{key_slot, owner};
use crate::apps::kv::span::{self, integer, is_nil};
use crate::redis_spec::command_table::{DELETE, INSERT, OW, RM, RW, UPDATE};

/// Runs a Redis command on one shard's keys: its reply's bytes.
pub(in crate::apps::kv) trait Calls {
    fn call(&mut self, shard: u16, args: Vec<Vec<u8>>) -> Vec<u8>;

    /// Several calls whose order does not matter (they may run at once);
    /// the replies in the calls' order.
    fn call_all(&mut self, calls: Vec<(u16, Vec<Vec<u8>>)>) -> Vec<Vec<u8>> {
        calls.into_iter().map(|(shard, args)| self.call(shard, args)).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::apps::kv) enum Recipe {
    ByKey(span::Plan),
    Mset,
    Msetnx,
    Rename {
        nx: bool,
    },
    Smove,
    Lmove,
    FirstPop,
    /// A blocked pop woken to run again: as `FirstPop`, but a key of
    /// another type is passed over (Redis serves a woken client from a key
    /// of its type only; WRONGTYPE is for the pop's first run).
    FirstPopWoken,
    Temp {
        home: u16,
    },
}

/// Where EXEC runs a command queued on the main port of a sharded server
/// (`across.rs`): on one shard (its keys', or this one for a keyless
/// command), or across several with its recipe and its keys.
pub(in crate::apps::kv) enum Route {
    One(u16),
    Across(Across, Vec<(usize, u16)>),
    /// A keyless command of every shard (FLUSHALL, CONFIG SET, ...): its
    /// parts, and how their replies merge (`span.rs`).
    Span(crate::apps::kv::span::Plan),
}

/// A command across shards: its recipe and the shards it parks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::apps::kv) struct Across {
    pub(in crate::apps::kv) recipe: Recipe,
    pub(in crate::apps::kv) shards: BTreeSet<u16>,
}

/// Key flags that say a key is written.
const WRITES: u16 = RW | OW | RM | INSERT | DELETE | UPDATE;
/// Commands never run across shards: their other keys are not in their key
/// specs (SORT's BY and GET patterns), or a script's writes are its own.
const NEVER: [&str; 8] = ["sort", "sort_ro", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"];

const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

/// How `name` (lower case) with `args` runs across `shards` shards, given
/// its keys (argument index, key flags): None if it does not (its keys are
/// on one shard, or it is not run across shards).
pub(in crate::apps::kv) fn plan(name: &str, args: &[Vec<u8>], keys: &[(usize, u16)], shards: u16) -> Option<Across> {
    let owner_of = |i: usize| owner(key_slot(&args[i]), shards);
    let involved: BTreeSet<u16> = keys.iter().map(|&(i, _)| owner_of(i)).collect();
    if involved.len() < 2 || NEVER.contains(&name) {
        return None;
    }
    let recipe = match name {
        "del" | "unlink" | "exists" | "touch" | "mget" => Recipe::ByKey(span::plan_by_key(name, args.len(), owner_of)?),
        "mset" => Recipe::Mset,
        "msetnx" => Recipe::Msetnx,
        "rename" | "renamenx" => Recipe::Rename { nx: name == "renamenx" },
        "smove" => Recipe::Smove,
        "lmove" | "rpoplpush" | "blmove" | "brpoplpush" => Recipe::Lmove,
        "lmpop" | "zmpop" | "blmpop" | "bzmpop" | "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => Recipe::FirstPop,
        _ => {
            // PFCOUNT of several keys writes none of them (only one key's
            // count is cached): it runs on the first key's shard.
            let writes = |flags: u16| flags & WRITES != 0 && name != "pfcount";
            let written: BTreeSet<u16> =
                keys.iter().filter(|&&(_, flags)| writes(flags)).map(|&(i, _)| owner_of(i)).collect();
            let home = match written.len() {
                0 => owner_of(keys[0].0),
                1 => *written.first().expect("one"),
                _ => return None,
            };
            Recipe::Temp { home }
        }
    };
    Some(Across { recipe, shards: involved })
}

/// Runs `recipe` for `args` on a server of `shards` shards; the reply.
pub(in crate::apps::kv) fn run(
    recipe: &Recipe,
    args: &[Vec<u8>],
    keys: &[(usize, u16)],
    shards: u16,
    calls: &mut dyn Calls,
) -> Vec<u8> {
    let owner_of = |key: &[u8]| owner(key_slot(key), shards);
    match recipe {
        Recipe::ByKey(plan) => {
            let parts = plan
                .parts
                .iter()
                .map(|part| {
                    let part_args = part
                        .args
                        .iter()
                        .map(|arg| match arg {
                            span::Arg::Index(i) => args[*i].clone(),
                            span::Arg::Value(value) => value.clone(),
                        })
                        .collect();
                    (part.shard, part_args)
                })
                .collect();
            span::merge(&plan.merge, &calls.call_all(parts))
        }
        Recipe::Mset | Recipe::Msetnx => mset(args, recipe == &Recipe::Msetnx, &owner_of, calls),
        Recipe::Rename { nx } => rename(args, *nx, &owner_of, calls),
        Recipe::Smove => smove(args, &owner_of, calls),
        Recipe::Lmove => lmove(args, &owner_of, calls),
        Recipe::FirstPop => first_pop(args, keys, &owner_of, false, calls),
        Recipe::FirstPopWoken => first_pop(args, keys, &owner_of, true, calls),
        Recipe::Temp { home } => temp(args, keys, *home, shards, calls),
    }
}

fn mset(args: &[Vec<u8>], nx: bool, owner_of: &dyn Fn(&[u8]) -> u16, calls: &mut dyn Calls) -> Vec<u8> {
    let name = if nx { "msetnx" } else { "mset" };
    if args.len() % 2 == 0 {
        return format!("-ERR wrong number of arguments for '{name}' command\r\n").into_bytes();
    }
    let mut parts: Vec<(u16, Vec<Vec<u8>>)> = Vec::new();
    for pair in args[1..].chunks(2) {
        let shard = owner_of(&pair[0]);
        let part = match parts.iter().position(|(s, _)| *s == shard) {
            Some(part) => part,
            None => {
                parts.push((shard, vec![b"mset".to_vec()]));
                parts.len() - 1
            }
        };
        parts[part].1.extend_from_slice(pair);
    }
    if nx {
        let checks = parts
            .iter()
            .map(|(shard, part)| {
                let mut exists = vec![b"exists".to_vec()];
                exists.extend(part[1..].chunks(2).map(|pair| pair[0].clone()));
                (*shard, exists)
            })
            .collect();
        for reply in calls.call_all(checks) {
            match integer(&reply) {
                Some(0) => {}
                Some(_) => return b":0\r\n".to_vec(),
                None => return reply,
            }
        }
    }
    if let Some(error) = calls.call_all(parts).into_iter().find(|reply| reply.first() == Some(&b'-')) {
        return error;
    }
    if nx {
        b":1\r\n".to_vec()
    } else {
        b"+OK\r\n".to_vec()
    }
}

fn rename(args: &[Vec<u8>], nx: bool, owner_of: &dyn Fn(&[u8]) -> u16, calls: &mut dyn Calls) -> Vec<u8> {
    let (src, dst) = (&args[1], &args[2]);
    let (from, to) = (owner_of(src), owner_of(dst));
    let payload = calls.call(from, vec![b"dump".to_vec(), src.clone()]);
    if is_nil(&payload) {
        return b"-ERR no such key\r\n".to_vec();
    }
    let Some(payload) = bulk(&payload) else { return payload };
    if nx {
        match integer(&calls.call(to, vec![b"exists".to_vec(), dst.clone()])) {
            Some(0) => {}
            _ => return b":0\r\n".to_vec(),
        }
    }
    let expires_at = integer(&calls.call(from, vec![b"pexpiretime".to_vec(), src.clone()])).unwrap_or(-1);
    let mut restore = vec![b"restore".to_vec(), dst.clone()];
    restore.push(expires_at.max(0).to_string().into_bytes());
    restore.extend([payload, b"replace".to_vec()]);
    if expires_at > 0 {
        restore.push(b"absttl".to_vec());
    }
    let restored = calls.call(to, restore);
    if restored.first() == Some(&b'-') {
        return restored;
    }
    calls.call(from, vec![b"del".to_vec(), src.clone()]);
    if nx {
        b":1\r\n".to_vec()
    } else {
        b"+OK\r\n".to_vec()
    }
}

/// A pop of several keys (`name [timeout] [numkeys] key... rest`): each
/// key in order popped alone on its shard (`name [timeout] [1] key rest`)
/// until one answers more than nil; only that one writes.
fn first_pop(
    args: &[Vec<u8>],
    keys: &[(usize, u16)],
    owner_of: &dyn Fn(&[u8]) -> u16,
    woken: bool,
    calls: &mut dyn Calls,
) -> Vec<u8> {
    let (Some(&(first, _)), Some(&(last, _))) = (keys.first(), keys.last()) else { return b"*-1\r\n".to_vec() };
    let counted = args[0].to_ascii_lowercase().ends_with(b"mpop");
    let mut reply = b"*-1\r\n".to_vec();
    for &(i, _) in keys {
        let mut one = args[..first].to_vec();
        if counted {
            // numkeys, just before the keys.
            one[first - 1] = b"1".to_vec();
        }
        one.push(args[i].clone());
        one.extend_from_slice(&args[last + 1..]);
        reply = calls.call(owner_of(&args[i]), one);
        if woken && reply.as_slice() == WRONGTYPE {
            reply = b"*-1\r\n".to_vec();
            continue;
        }
        if !is_nil(&reply) {
            break;
        }
    }
    reply
}

/// The type TYPE answers for `key` on its shard ("none" if absent).
fn type_of(key: &[u8], owner_of: &dyn Fn(&[u8]) -> u16, calls: &mut dyn Calls) -> Vec<u8> {
    let reply = calls.call(owner_of(key), vec![b"type".to_vec(), key.to_vec()]);
    reply.strip_prefix(b"+").and_then(|r| r.strip_suffix(b"\r\n")).unwrap_or(b"").to_vec()
}

fn smove(args: &[Vec<u8>], owner_of: &dyn Fn(&[u8]) -> u16, calls: &mut dyn Calls) -> Vec<u8> {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    // As Redis's smoveCommand: a missing source is 0, whatever the
    // destination holds; then both types.
    let src_type = type_of(src, owner_of, calls);
    if src_type == b"none" {
        return b":0\r\n".to_vec();
    }
    let dst_type = type_of(dst, owner_of, calls);
    if src_type != b"set" || !matches!(&dst_type[..], b"none" | b"set") {
        return WRONGTYPE.to_vec();
    }
    let removed = calls.call(owner_of(src), vec![b"srem".to_vec(), src.clone(), member.clone()]);
    if integer(&removed) != Some(1) {
        return removed;
    }
    calls.call(owner_of(dst), vec![b"sadd".to_vec(), dst.clone(), member.clone()]);
    b":1\r\n".to_vec()
}

fn lmove(args: &[Vec<u8>], owner_of: &dyn Fn(&[u8]) -> u16, calls: &mut dyn Calls) -> Vec<u8> {
    let (src, dst) = (&args[1], &args[2]);
    let name = args[0].to_ascii_lowercase();
    let (from, to) = if name == b"rpoplpush" || name == b"brpoplpush" {
        (b"right".to_vec(), b"left".to_vec())
    } else {
        (args[3].to_ascii_lowercase(), args[4].to_ascii_lowercase())
    };
    let side = |s: &[u8]| match s {
        b"left" => Some("l"),
        b"right" => Some("r"),
        _ => None,
    };
    let (Some(pop), Some(push)) = (side(&from), side(&to)) else { return b"-ERR syntax error\r\n".to_vec() };
    let (src_type, dst_type) = (type_of(src, owner_of, calls), type_of(dst, owner_of, calls));
    if !matches!(&src_type[..], b"none" | b"list")
        || (src_type == b"list" && !matches!(&dst_type[..], b"none" | b"list"))
    {
        return WRONGTYPE.to_vec();
    }
    let popped = calls.call(owner_of(src), vec![format!("{pop}pop").into_bytes(), src.clone()]);
    let Some(element) = bulk(&popped) else { return popped };
    calls.call(owner_of(dst), vec![format!("{push}push").into_bytes(), dst.clone(), element]);
    popped
}

/// A hash tag whose slot shard `shard` of `shards` owns.
fn tag_for(shard: u16, shards: u16) -> String {
    (0u32..)
        .map(|n| n.to_string())
        .find(|tag| owner(key_slot(tag.as_bytes()), shards) == shard)
        .expect("every shard owns slots")
}

fn temp(args: &[Vec<u8>], keys: &[(usize, u16)], home: u16, shards: u16, calls: &mut dyn Calls) -> Vec<u8> {
    let tag = tag_for(home, shards);
    // A name no client uses (random), restored without REPLACE: were it
    // taken, the command is refused rather than a key overwritten.
    let nonce = std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), home);
    let mut local = args.to_vec();
    let mut made = Vec::new();
    let mut reply = None;
    for &(i, _) in keys {
        let shard = owner(key_slot(&args[i]), shards);
        if shard == home {
            continue;
        }
        let name = format!("{{{tag}}}:packetstore-across:{nonce:016x}:{i}").into_bytes();
        let payload = calls.call(shard, vec![b"dump".to_vec(), args[i].clone()]);
        if let Some(payload) = bulk(&payload) {
            // Its expiry comes too (COPY keeps it).
            let at = integer(&calls.call(shard, vec![b"pexpiretime".to_vec(), args[i].clone()])).unwrap_or(-1);
            let mut restore = vec![b"restore".to_vec(), name.clone(), at.max(0).to_string().into_bytes(), payload];
            if at > 0 {
                restore.push(b"absttl".to_vec());
            }
            let restored = calls.call(home, restore);
            if restored.first() == Some(&b'-') {
                reply = Some(restored);
                break;
            }
            made.push(name.clone());
        }
        local[i] = name;
    }
    let reply = reply.unwrap_or_else(|| calls.call(home, local));
    // Deleted on every way out, in the same transaction: no client sees one.
    if !made.is_empty() {
        let mut del = vec![b"del".to_vec()];
        del.extend(made);
        calls.call(home, del);
    }
    reply
}

/// A bulk string reply's bytes.
pub(in crate::apps::kv) fn bulk(reply: &[u8]) -> Option<Vec<u8>> {
    let rest = reply.strip_prefix(b"$")?;
    let at = rest.windows(2).position(|w| w == b"\r\n")?;
    let len: usize = std::str::from_utf8(&rest[..at]).ok()?.parse().ok()?;
    let body = rest.get(at + 2..at + 2 + len)?;
    (rest.get(at + 2 + len..)? == b"\r\n").then(|| body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Shards as maps of string keys, answering the few commands recipes
    /// send; every call is recorded.
    struct Fake {
        shards: u16,
        data: BTreeMap<Vec<u8>, Vec<u8>>,
        calls: Vec<(u16, String)>,
    }

    impl Calls for Fake {
        fn call(&mut self, shard: u16, args: Vec<Vec<u8>>) -> Vec<u8> {
            // Every key a part names is its shard's.
            let step = if args[0] == b"mset" { 2 } else { 1 };
            if [&b"mset"[..], b"exists", b"dump", b"del"].contains(&&args[0][..]) {
                for key in args[1..].iter().step_by(step) {
                    assert_eq!(owner(key_slot(key), self.shards), shard, "a key goes to its own shard");
                }
            }
            self.calls.push((shard, String::from_utf8_lossy(&args[0]).into_owned()));
            match &args[0][..] {
                b"mset" => {
                    for pair in args[1..].chunks(2) {
                        self.data.insert(pair[0].clone(), pair[1].clone());
                    }
                    b"+OK\r\n".to_vec()
                }
                b"exists" => {
                    format!(":{}\r\n", args[1..].iter().filter(|k| self.data.contains_key(*k)).count()).into_bytes()
                }
                b"dump" => match self.data.get(&args[1]) {
                    Some(v) => [format!("${}\r\n", v.len()).into_bytes(), v.clone(), b"\r\n".to_vec()].concat(),
                    None => b"$-1\r\n".to_vec(),
                },
                b"pexpiretime" => b":-1\r\n".to_vec(),
                // A one-key pop of a fake list: the whole value, removed.
                b"lmpop" => {
                    assert_eq!((&args[1][..], owner(key_slot(&args[2]), self.shards)), (&b"1"[..], shard));
                    match self.data.remove(&args[2]) {
                        Some(v) => format!("*1\r\n${}\r\n{}\r\n", v.len(), String::from_utf8_lossy(&v)).into_bytes(),
                        None => b"*-1\r\n".to_vec(),
                    }
                }
                b"restore" => {
                    self.data.insert(args[1].clone(), args[3].clone());
                    b"+OK\r\n".to_vec()
                }
                b"del" => {
                    format!(":{}\r\n", args[1..].iter().filter(|k| self.data.remove(*k).is_some()).count()).into_bytes()
                }
                other => panic!("unexpected {}", String::from_utf8_lossy(other)),
            }
        }
    }

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    /// Two keys on different shards of 2 (found by search).
    fn two_keys() -> (String, String) {
        let a = "a".to_string();
        let b = (0..)
            .map(|n| format!("b{n}"))
            .find(|k| owner(key_slot(k.as_bytes()), 2) != owner(key_slot(b"a"), 2))
            .unwrap();
        (a, b)
    }

    #[test]
    fn msetnx_writes_nothing_when_any_key_exists() {
        let (a, b) = two_keys();
        let mut fake = Fake { shards: 2, data: BTreeMap::new(), calls: Vec::new() };
        fake.data.insert(b.as_bytes().to_vec(), b"old".to_vec());
        let command = args(&["msetnx", &a, "1", &b, "2"]);
        let keys = [(1, OW), (3, OW)];
        let across = plan("msetnx", &command, &keys, 2).expect("across");
        assert_eq!(across.shards.len(), 2);
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b":0\r\n");
        assert!(!fake.data.contains_key(a.as_bytes()), "nothing written");
        fake.data.clear();
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b":1\r\n");
        assert_eq!(fake.data.len(), 2);
    }

    #[test]
    fn rename_moves_the_value_and_refuses_a_missing_source() {
        let (a, b) = two_keys();
        let mut fake = Fake { shards: 2, data: BTreeMap::new(), calls: Vec::new() };
        let command = args(&["rename", &a, &b]);
        let keys = [(1, RW | DELETE), (2, OW)];
        let across = plan("rename", &command, &keys, 2).expect("across");
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b"-ERR no such key\r\n");
        fake.data.insert(a.as_bytes().to_vec(), b"v".to_vec());
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b"+OK\r\n");
        assert_eq!(fake.data.get(b.as_bytes()).map(Vec::as_slice), Some(&b"v"[..]));
        assert!(!fake.data.contains_key(a.as_bytes()));
    }

    #[test]
    fn a_store_command_runs_at_its_destination_on_temporary_copies() {
        let (a, b) = two_keys();
        let command = args(&["sunionstore", &b, &a]);
        let keys = [(1, OW), (2, RO_FLAG)];
        let across = plan("sunionstore", &command, &keys, 2).expect("across");
        let home = owner(key_slot(b.as_bytes()), 2);
        assert_eq!(across.recipe, Recipe::Temp { home });
        let tag = tag_for(home, 2);
        assert_eq!(owner(key_slot(format!("{{{tag}}}:x").as_bytes()), 2), home, "the tag hashes home");
        // Two writes on different shards: not across.
        let keys = [(1, OW), (2, OW)];
        assert_eq!(plan("sunionstore", &command, &keys, 2), None);
        assert_eq!(plan("eval", &command, &[(1, RO_FLAG), (2, RO_FLAG)], 2), None);
    }

    const RO_FLAG: u16 = crate::redis_spec::command_table::RO;

    #[test]
    fn a_pop_of_several_shards_keys_pops_the_first_that_has_one() {
        let (a, b) = two_keys();
        let mut fake = Fake { shards: 2, data: BTreeMap::new(), calls: Vec::new() };
        let command = args(&["lmpop", "2", &a, &b, "left", "count", "3"]);
        let keys = [(2, RW | DELETE), (3, RW | DELETE)];
        let across = plan("lmpop", &command, &keys, 2).expect("across");
        assert_eq!(across.recipe, Recipe::FirstPop);
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b"*-1\r\n", "both empty: nil");
        fake.data.insert(b.as_bytes().to_vec(), b"v".to_vec());
        fake.calls.clear();
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b"*1\r\n$1\r\nv\r\n");
        assert_eq!(fake.calls.len(), 2, "the first key asked first, then the second");
        fake.data.insert(a.as_bytes().to_vec(), b"w".to_vec());
        fake.data.insert(b.as_bytes().to_vec(), b"v".to_vec());
        assert_eq!(run(&across.recipe, &command, &keys, 2, &mut fake), b"*1\r\n$1\r\nw\r\n");
        assert!(fake.data.contains_key(b.as_bytes()), "only the first non-empty key pops");
        // PFCOUNT of several keys runs on the first key's shard.
        let command = args(&["pfcount", &b, &a]);
        let across = plan("pfcount", &command, &[(1, RW), (2, RW)], 2).expect("across");
        assert_eq!(across.recipe, Recipe::Temp { home: owner(key_slot(b.as_bytes()), 2) });
    }

    #[test]
    fn replies_are_read_as_redis_writes_them() {
        assert_eq!(integer(b":-12\r\n"), Some(-12));
        assert_eq!(bulk(b"$3\r\nab\n\r\n"), Some(b"ab\n".to_vec()));
        assert_eq!(bulk(b"$3\r\nab\r\n"), None);
        assert!(is_nil(b"_\r\n") && is_nil(b"$-1\r\n") && !is_nil(b"$0\r\n\r\n"));
    }
}
