//! The shape of Redis's command table (`redis_commands.rs`, generated from
//! Redis 7.0.15's command JSON files) and its lookups: a command by name,
//! a subcommand by its container, the command a call runs.
//!
//! Invariant: what it answers is the generated table's data as Redis's
//! server.c holds it after startup; nothing here is written by hand but the
//! types and the search.

use super::redis_commands::REDIS_COMMANDS;

/// Key specification flags (server.h's CMD_KEY_*), in COMMAND's order.
pub(in crate::apps::kv) const RO: u16 = 1 << 0;
pub(in crate::apps::kv) const RW: u16 = 1 << 1;
pub(in crate::apps::kv) const OW: u16 = 1 << 2;
pub(in crate::apps::kv) const RM: u16 = 1 << 3;
pub(in crate::apps::kv) const ACCESS: u16 = 1 << 4;
pub(in crate::apps::kv) const UPDATE: u16 = 1 << 5;
pub(in crate::apps::kv) const INSERT: u16 = 1 << 6;
pub(in crate::apps::kv) const DELETE: u16 = 1 << 7;
pub(in crate::apps::kv) const NOT_KEY: u16 = 1 << 8;
pub(in crate::apps::kv) const INCOMPLETE: u16 = 1 << 9;
pub(in crate::apps::kv) const VARIABLE_FLAGS: u16 = 1 << 10;

/// The key flags' names, bit by bit (addReplyFlagsForKeyArgs).
pub(in crate::apps::kv) const KEY_FLAG_NAMES: [&str; 11] =
    ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"];

/// Argument flags (CMD_ARG_*), in COMMAND DOCS's order.
pub(in crate::apps::kv) const OPTIONAL: u8 = 1 << 0;
pub(in crate::apps::kv) const MULTIPLE: u8 = 1 << 1;
pub(in crate::apps::kv) const MULTIPLE_TOKEN: u8 = 1 << 2;

pub(in crate::apps::kv) const ARG_FLAG_NAMES: [&str; 3] = ["optional", "multiple", "multiple_token"];

/// Where a key specification starts looking (KSPEC_BS_*).
#[derive(Clone, Copy, Debug)]
pub(in crate::apps::kv) enum Begin {
    /// At this argument.
    Index(i64),
    /// After this keyword, searched from this argument (negative: from the
    /// end, backwards).
    Keyword(&'static str, i64),
    Unknown,
}

/// How a key specification finds its keys from where it starts (KSPEC_FK_*).
#[derive(Clone, Copy, Debug)]
pub(in crate::apps::kv) enum Find {
    /// Last key (relative; negative: from the end), step, limit (the share
    /// of what is left, when last is -1).
    Range(i64, i64, i64),
    /// The key count's index, the first key's, the step (all relative).
    Keynum(i64, i64, i64),
    Unknown,
}

#[derive(Debug)]
pub(in crate::apps::kv) struct KeySpec {
    /// "" when none.
    pub(in crate::apps::kv) notes: &'static str,
    pub(in crate::apps::kv) flags: u16,
    pub(in crate::apps::kv) begin: Begin,
    pub(in crate::apps::kv) find: Find,
}

/// The getkeys procedures of Redis's db.c, for the commands whose key
/// specifications do not say everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::apps::kv) enum GetKeys {
    Sintercard,
    ZunionInterDiffStore,
    ZunionInterDiff,
    Eval,
    Function,
    Lmpop,
    Blmpop,
    Zmpop,
    SortRo,
    Sort,
    Migrate,
    Georadius,
    Xread,
    Set,
    Bitfield,
}

/// One argument of a command's documentation (redisCommandArg).
#[derive(Debug)]
pub(in crate::apps::kv) struct Arg {
    pub(in crate::apps::kv) name: &'static str,
    /// string, integer, double, key, pattern, unix-time, pure-token, oneof, block.
    pub(in crate::apps::kv) kind: &'static str,
    /// -1 when not a key.
    pub(in crate::apps::kv) key_spec_index: i64,
    /// The strings are "" when absent.
    pub(in crate::apps::kv) token: &'static str,
    pub(in crate::apps::kv) summary: &'static str,
    pub(in crate::apps::kv) since: &'static str,
    pub(in crate::apps::kv) deprecated_since: &'static str,
    pub(in crate::apps::kv) flags: u8,
    /// A oneof's or a block's arguments.
    pub(in crate::apps::kv) args: &'static [Arg],
}

/// An argument's defaults, for the generated table's `..ARG`.
pub(in crate::apps::kv) const ARG: Arg = Arg {
    name: "",
    kind: "",
    key_spec_index: -1,
    token: "",
    summary: "",
    since: "",
    deprecated_since: "",
    flags: 0,
    args: &[],
};

/// One command or subcommand, as Redis 7.0.15 describes it.
#[derive(Debug)]
pub(in crate::apps::kv) struct RedisCommand {
    /// Lower case; a subcommand's own name (its full name is
    /// `container|name`).
    pub(in crate::apps::kv) name: &'static str,
    /// "" for a top-level command.
    pub(in crate::apps::kv) container: &'static str,
    pub(in crate::apps::kv) arity: i64,
    /// COMMAND INFO's flags, in its order, `movablekeys` included.
    pub(in crate::apps::kv) flags: &'static [&'static str],
    /// The legacy first key, last key, step.
    pub(in crate::apps::kv) range: (i64, i64, i64),
    /// Every ACL category, the implicit ones included, in Redis's order.
    pub(in crate::apps::kv) acl: &'static [&'static str],
    pub(in crate::apps::kv) tips: &'static [&'static str],
    pub(in crate::apps::kv) key_specs: &'static [KeySpec],
    pub(in crate::apps::kv) getkeys: Option<GetKeys>,
    /// COMMAND DOCS's group (sorted-set, not sorted_set).
    pub(in crate::apps::kv) group: &'static str,
    /// The strings are "" when absent.
    pub(in crate::apps::kv) summary: &'static str,
    pub(in crate::apps::kv) since: &'static str,
    pub(in crate::apps::kv) complexity: &'static str,
    pub(in crate::apps::kv) doc_flags: &'static [&'static str],
    pub(in crate::apps::kv) deprecated_since: &'static str,
    pub(in crate::apps::kv) replaced_by: &'static str,
    pub(in crate::apps::kv) history: &'static [(&'static str, &'static str)],
    pub(in crate::apps::kv) args: &'static [Arg],
}

/// A command's defaults, for the generated table's `..CMD`.
pub(in crate::apps::kv) const CMD: RedisCommand = RedisCommand {
    name: "",
    container: "",
    arity: 0,
    flags: &[],
    range: (0, 0, 0),
    acl: &[],
    tips: &[],
    key_specs: &[],
    getkeys: None,
    group: "",
    summary: "",
    since: "",
    complexity: "",
    doc_flags: &[],
    deprecated_since: "",
    replaced_by: "",
    history: &[],
    args: &[],
};

/// Command names are at most this long (Redis's longest is 21 bytes).
const NAME_MAX: usize = 32;

impl RedisCommand {
    pub(in crate::apps::kv) fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// `name`, or `container|name` for a subcommand.
    pub(in crate::apps::kv) fn fullname(&self) -> String {
        match self.container {
            "" => self.name.to_string(),
            container => format!("{container}|{}", self.name),
        }
    }

    /// Its subcommands in Redis's table, by name.
    pub(in crate::apps::kv) fn subcommands(&self) -> &'static [RedisCommand] {
        if !self.container.is_empty() {
            return &[];
        }
        let start = REDIS_COMMANDS.partition_point(|c| c.container < self.name);
        let end = REDIS_COMMANDS.partition_point(|c| c.container <= self.name);
        &REDIS_COMMANDS[start..end]
    }
}

/// Redis's top-level commands (no subcommands).
pub(in crate::apps::kv) fn top_level() -> impl Iterator<Item = &'static RedisCommand> {
    REDIS_COMMANDS.iter().filter(|cmd| cmd.container.is_empty())
}

/// The command `(container, name)` ("" container: a top-level one), names
/// in any case.
pub(in crate::apps::kv) fn lookup(container: &[u8], name: &[u8]) -> Option<&'static RedisCommand> {
    if container.len() > NAME_MAX || name.len() > NAME_MAX {
        return None;
    }
    let (mut c, mut n) = ([0u8; NAME_MAX], [0u8; NAME_MAX]);
    let (c, n) = (&mut c[..container.len()], &mut n[..name.len()]);
    c.copy_from_slice(container);
    n.copy_from_slice(name);
    c.make_ascii_lowercase();
    n.make_ascii_lowercase();
    let at =
        REDIS_COMMANDS.binary_search_by(|cmd| (cmd.container.as_bytes(), cmd.name.as_bytes()).cmp(&(&*c, &*n))).ok()?;
    Some(&REDIS_COMMANDS[at])
}

/// Redis's lookupCommandBySds: `name` or `container|name`.
pub(in crate::apps::kv) fn lookup_fullname(fullname: &[u8]) -> Option<&'static RedisCommand> {
    let mut parts = fullname.split(|&b| b == b'|');
    let first = parts.next()?;
    match (parts.next(), parts.next()) {
        (None, _) => lookup(b"", first),
        (Some(sub), None) if lookup(b"", first).is_some() => lookup(first, sub),
        _ => None,
    }
}

/// Redis's lookupCommand: the command a call runs, the subcommand named by
/// its second argument when it is a container's (`args[0]` is the name).
pub(in crate::apps::kv) fn lookup_call(args: &[Vec<u8>]) -> Option<&'static RedisCommand> {
    let top = lookup(b"", args.first()?)?;
    match args.get(1) {
        Some(sub) if !top.subcommands().is_empty() => lookup(top.name.as_bytes(), sub),
        _ => Some(top),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_finds_commands_and_subcommands() {
        assert!(REDIS_COMMANDS.windows(2).all(|w| (w[0].container, w[0].name) < (w[1].container, w[1].name)));
        assert_eq!(lookup(b"", b"GET").map(|c| c.name), Some("get"));
        assert_eq!(lookup_fullname(b"config|GET").map(|c| c.fullname()), Some("config|get".to_string()));
        assert!(lookup_fullname(b"get|key").is_none());
        assert!(lookup_fullname(b"config|get|key").is_none());
        let call: Vec<Vec<u8>> = vec![b"memory".to_vec(), b"usage".to_vec(), b"k".to_vec()];
        assert_eq!(lookup_call(&call).map(|c| c.fullname()), Some("memory|usage".to_string()));
        assert_eq!(lookup(b"", b"config").map(|c| c.subcommands().len()), Some(5));
    }
}
