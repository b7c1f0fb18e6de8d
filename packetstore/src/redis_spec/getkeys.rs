//! Which arguments of a call are keys, as Redis 7.0.15's db.c finds them:
//! by the command's key specifications (getKeysUsingKeySpecs), by its
//! getkeys procedure (evalGetKeys, sortGetKeys, xreadGetKeys...) where they
//! do not say everything, and by the legacy range (getKeysFromCommand).
//!
//! Invariant: positions index the call's arguments, the command's name at
//! 0, and are always below their count; flags are CMD_KEY_* bits.

use crate::redis_spec::command_table::{
    Begin, Find, GetKeys, KeySpec, RedisCommand, ACCESS, DELETE, NOT_KEY, OW, RO, RW, UPDATE, VARIABLE_FLAGS,
};
use crate::redis_spec::numbers::parse_i64;

/// A key's position among the call's arguments, and its flags.
pub type KeyRef = (usize, u16);

/// Redis's getKeysFromCommandWithSpecs (COMMAND GETKEYS, GETKEYSANDFLAGS):
/// the key specifications when they are reliable, else the getkeys
/// procedure (none: the call is invalid, or names no key).
pub fn keys_with_specs(cmd: &RedisCommand, args: &[Vec<u8>]) -> Vec<KeyRef> {
    let has_keyspec = cmd.key_specs.iter().any(|spec| spec.flags & NOT_KEY == 0);
    let has_varflags = cmd.key_specs.iter().any(|spec| spec.flags & VARIABLE_FLAGS != 0);
    if has_keyspec && !has_varflags {
        if let Some(keys) = keys_by_specs(cmd, args) {
            return keys;
        }
    }
    cmd.getkeys.map_or_else(Vec::new, |getkeys| by_procedure(getkeys, args))
}

/// Redis's getKeysFromCommand (what cluster routing and client tracking
/// use): the getkeys procedure, else the legacy range.
pub fn key_positions(cmd: &RedisCommand, args: &[Vec<u8>]) -> Vec<usize> {
    match cmd.getkeys {
        Some(getkeys) => by_procedure(getkeys, args).into_iter().map(|(at, _)| at).collect(),
        None => legacy_range(cmd, args.len()),
    }
}

/// Redis's doesCommandHaveKeys.
pub fn has_keys(cmd: &RedisCommand) -> bool {
    cmd.getkeys.is_some() || cmd.key_specs.iter().any(|spec| spec.flags & NOT_KEY == 0)
}

/// getKeysUsingLegacyRangeSpec: none when the call is too short for it.
fn legacy_range(cmd: &RedisCommand, argc: usize) -> Vec<usize> {
    let (first, last, step) = cmd.range;
    if first == 0 {
        return Vec::new();
    }
    let argc = argc as i64;
    let last = if last < 0 { argc + last } else { last };
    if last >= argc {
        return Vec::new();
    }
    (first..=last).step_by(step.max(1) as usize).map(|at| at as usize).collect()
}

/// getKeysUsingKeySpecs without its partial mode: `None` when a
/// specification is unknown, incomplete or does not fit the call.
fn keys_by_specs(cmd: &RedisCommand, args: &[Vec<u8>]) -> Option<Vec<KeyRef>> {
    let mut keys = Vec::new();
    for spec in cmd.key_specs.iter().filter(|spec| spec.flags & NOT_KEY == 0) {
        let Some(first) = begin_search(spec, args) else { continue };
        let (first, last, step) = find_keys(spec, first?, args)?;
        let argc = args.len() as i64;
        if last >= argc || last < first || first >= argc {
            return None;
        }
        keys.extend((first..=last).step_by(step.max(1) as usize).map(|at| (at as usize, spec.flags)));
        if spec.flags & crate::redis_spec::command_table::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// Where a specification's keys start: `None` when its keyword is not in
/// the call (the specification is skipped), `Some(None)` when it is unknown.
fn begin_search(spec: &KeySpec, args: &[Vec<u8>]) -> Option<Option<i64>> {
    let argc = args.len() as i64;
    match spec.begin {
        Begin::Index(pos) => Some(Some(pos)),
        Begin::Unknown => Some(None),
        Begin::Keyword(keyword, startfrom) => {
            let (start, end) = if startfrom > 0 { (startfrom, argc - 1) } else { (argc + startfrom, 1) };
            let mut at = start;
            while at != end && (1..argc).contains(&at) {
                if args[at as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                    return Some(Some(at + 1));
                }
                at += if start <= end { 1 } else { -1 };
            }
            None
        }
    }
}

/// The first key, the last key and the step, from where they start.
fn find_keys(spec: &KeySpec, first: i64, args: &[Vec<u8>]) -> Option<(i64, i64, i64)> {
    let argc = args.len() as i64;
    match spec.find {
        Find::Range(lastkey, step, _) if lastkey >= 0 => Some((first, first + lastkey, step)),
        Find::Range(lastkey, step, 0) => Some((first, argc + lastkey, step)),
        Find::Range(lastkey, step, limit) => Some((first, first + ((argc - first) / limit + lastkey), step)),
        Find::Keynum(keynumidx, firstkey, step) => {
            let count = args.get(usize::try_from(first + keynumidx).ok()?).and_then(|n| parse_i64(n))?;
            if keynumidx >= argc || count < 0 {
                return None;
            }
            let first = first + firstkey;
            Some((first, first + count - 1, step))
        }
        Find::Unknown => None,
    }
}

/// The getkeys procedures of db.c.
fn by_procedure(getkeys: GetKeys, args: &[Vec<u8>]) -> Vec<KeyRef> {
    match getkeys {
        GetKeys::Sintercard | GetKeys::ZunionInterDiff | GetKeys::Lmpop | GetKeys::Zmpop => generic(0, 1, 2, args),
        GetKeys::ZunionInterDiffStore => generic(1, 2, 3, args),
        GetKeys::Eval | GetKeys::Function | GetKeys::Blmpop => generic(0, 2, 3, args),
        GetKeys::SortRo => vec![(1, RO | ACCESS)],
        GetKeys::Sort => sort(args),
        GetKeys::Migrate => migrate(args),
        GetKeys::Georadius => georadius(args),
        GetKeys::Xread => xread(args),
        GetKeys::Set => set(args),
        GetKeys::Bitfield => bitfield(args),
    }
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// C's atoi: the leading digits, 0 when none.
fn atoi(arg: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let len = digits.bytes().take_while(u8::is_ascii_digit).count();
    let value: i64 = digits[..len.min(18)].parse().unwrap_or(0);
    if text.starts_with('-') {
        -value
    } else {
        value
    }
}

/// genericGetKeys: a key count at `count_at`, the keys from `first`, and
/// a destination at `store` (0: none) listed last; none when the count is
/// not positive or exceeds the arguments.
fn generic(store: usize, count_at: usize, first: usize, args: &[Vec<u8>]) -> Vec<KeyRef> {
    let num = args.get(count_at).map_or(0, |n| atoi(n));
    if num < 1 || num > (args.len().saturating_sub(first)) as i64 {
        return Vec::new();
    }
    let keys = (first..first + num as usize).map(|at| (at, 0));
    keys.chain((store != 0).then_some((store, 0))).collect()
}

/// sortGetKeys: the sorted key, and the last STORE's destination.
fn sort(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let mut store = None;
    let mut at = 2;
    while at < args.len() {
        let arg = &args[at];
        if is(arg, "limit") {
            at += 2;
        } else if is(arg, "get") || is(arg, "by") {
            at += 1;
        } else if is(arg, "store") && at + 1 < args.len() {
            store = Some(at + 1);
        }
        at += 1;
    }
    [(1, RO | ACCESS)].into_iter().chain(store.map(|at| (at, OW | UPDATE))).collect()
}

/// migrateGetKeys: the key at 3, or those after KEYS when it is empty.
fn migrate(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let (mut first, mut num) = (3, 1);
    let mut at = 6;
    while args.len() > 6 && at < args.len() {
        let arg = &args[at];
        if is(arg, "keys") {
            (first, num) = if args[3].is_empty() { (at + 1, args.len() - at - 1) } else { (first, 0) };
            break;
        }
        at += if is(arg, "auth") {
            2
        } else if is(arg, "auth2") {
            3
        } else {
            1
        };
    }
    (first..first + num).filter(|&at| at < args.len()).map(|at| (at, RW | ACCESS | DELETE)).collect()
}

/// georadiusGetKeys: the key, and the last STORE or STOREDIST destination.
fn georadius(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let mut stored = None;
    let mut at = 5;
    while at < args.len() {
        if (is(&args[at], "store") || is(&args[at], "storedist")) && at + 1 < args.len() {
            stored = Some(at + 1);
            at += 1;
        }
        at += 1;
    }
    [(1, 0)].into_iter().chain(stored.map(|at| (at, 0))).collect()
}

/// xreadGetKeys: the first half of what follows STREAMS, after the options.
fn xread(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let mut streams = None;
    let mut at = 1;
    while at < args.len() {
        let arg = &args[at];
        if is(arg, "block") || is(arg, "count") {
            at += 1;
        } else if is(arg, "group") {
            at += 2;
        } else if is(arg, "streams") {
            streams = Some(at);
            break;
        } else if !is(arg, "noack") {
            break;
        }
        at += 1;
    }
    let Some(streams) = streams else { return Vec::new() };
    let num = args.len() - streams - 1;
    if num == 0 || num % 2 != 0 {
        return Vec::new();
    }
    (streams + 1..streams + 1 + num / 2).map(|at| (at, 0)).collect()
}

/// setGetKeys: the key, read too when GET is among the options.
fn set(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let get = args.iter().skip(3).any(|arg| is(arg, "get"));
    vec![(1, if get { RW | ACCESS | UPDATE } else { OW | UPDATE })]
}

/// bitfieldGetKeys: the key, read-only when every operation is GET.
fn bitfield(args: &[Vec<u8>]) -> Vec<KeyRef> {
    let mut readonly = true;
    let mut at = 2;
    while at < args.len() {
        let left = args.len() - at - 1;
        let arg = &args[at];
        if is(arg, "get") && left >= 2 {
            at += 2;
        } else if (is(arg, "set") || is(arg, "incrby")) && left >= 3 {
            readonly = false;
            break;
        } else if is(arg, "overflow") && left >= 1 {
            at += 1;
        } else {
            readonly = false;
            break;
        }
        at += 1;
    }
    vec![(1, if readonly { RO | ACCESS } else { RW | ACCESS | UPDATE })]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_spec::command_table::lookup_call;

    fn call(words: &str) -> Vec<Vec<u8>> {
        words.split(' ').map(|w| w.as_bytes().to_vec()).collect()
    }

    fn keys(words: &str) -> Vec<String> {
        let args = call(words);
        let cmd = lookup_call(&args).expect("a Redis command");
        keys_with_specs(cmd, &args).iter().map(|&(at, _)| String::from_utf8_lossy(&args[at]).into_owned()).collect()
    }

    #[test]
    fn key_specs_and_procedures_find_redis_s_keys() {
        assert_eq!(keys("zunionstore out 2 a b").as_slice(), ["out", "a", "b"]);
        assert_eq!(keys("eval s 2 k1 k2").as_slice(), ["k1", "k2"]);
        assert!(keys("eval s 0").is_empty());
        assert_eq!(keys("memory usage key").as_slice(), ["key"]);
        assert_eq!(keys("xread count 2 streams s1 s2 0 0").as_slice(), ["s1", "s2"]);
        assert_eq!(keys("xreadgroup group g c streams s1 0").as_slice(), ["s1"]);
        assert_eq!(keys("lmpop 2 l1 l2 left").as_slice(), ["l1", "l2"]);
        assert_eq!(keys("blmpop 0 2 l1 l2 left").as_slice(), ["l1", "l2"]);
        assert_eq!(keys("sort k by x get y store dst").as_slice(), ["k", "dst"]);
        assert!(keys("migrate h 1 k 0 5 keys a b").is_empty(), "KEYS needs an empty key");
        assert_eq!(keys("georadius g 1 2 3 km store dst").as_slice(), ["g", "dst"]);
        assert_eq!(keys("mset a 1 b 2").as_slice(), ["a", "b"]);
    }

    #[test]
    fn flags_come_from_the_specs_or_the_procedures() {
        let args = call("set k v get");
        let cmd = lookup_call(&args).unwrap();
        assert_eq!(keys_with_specs(cmd, &args), [(1, RW | ACCESS | UPDATE)]);
        let args = call("lmove a b left right");
        let cmd = lookup_call(&args).unwrap();
        assert_eq!(
            keys_with_specs(cmd, &args),
            [(1, RW | ACCESS | DELETE), (2, RW | crate::redis_spec::command_table::INSERT)]
        );
    }

    #[test]
    fn migrate_reads_keys_after_an_empty_key() {
        let args = vec![
            b"migrate".to_vec(),
            b"h".to_vec(),
            b"1".to_vec(),
            Vec::new(),
            b"0".to_vec(),
            b"5".to_vec(),
            b"keys".to_vec(),
            b"a".to_vec(),
            b"b".to_vec(),
        ];
        let cmd = lookup_call(&args).unwrap();
        assert_eq!(keys_with_specs(cmd, &args).iter().map(|k| k.0).collect::<Vec<_>>(), [7, 8]);
    }
}
