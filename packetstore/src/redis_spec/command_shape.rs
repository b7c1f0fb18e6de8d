//! The shape of Redis's command table: the types its entries are made of
//! (a command, its key specifications, its arguments' documentation) and
//! their flags' bits, apart from the table (`redis_commands.rs`, which is
//! made of them) and its lookups (`command_table.rs`, which search it), so
//! that neither imports the other.
//!
//! Invariant: nothing here knows the table's data.

/// Key specification flags (server.h's CMD_KEY_*), in COMMAND's order.
pub const RO: u16 = 1 << 0;
pub const RW: u16 = 1 << 1;
pub const OW: u16 = 1 << 2;
pub const RM: u16 = 1 << 3;
pub const ACCESS: u16 = 1 << 4;
pub const UPDATE: u16 = 1 << 5;
pub const INSERT: u16 = 1 << 6;
pub const DELETE: u16 = 1 << 7;
pub const NOT_KEY: u16 = 1 << 8;
pub const INCOMPLETE: u16 = 1 << 9;
pub const VARIABLE_FLAGS: u16 = 1 << 10;

/// The key flags' names, bit by bit (addReplyFlagsForKeyArgs).
pub const KEY_FLAG_NAMES: [&str; 11] =
    ["RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete", "variable_flags"];

/// Argument flags (CMD_ARG_*), in COMMAND DOCS's order.
pub const OPTIONAL: u8 = 1 << 0;
pub const MULTIPLE: u8 = 1 << 1;
pub const MULTIPLE_TOKEN: u8 = 1 << 2;

pub const ARG_FLAG_NAMES: [&str; 3] = ["optional", "multiple", "multiple_token"];

/// Where a key specification starts looking (KSPEC_BS_*).
#[derive(Clone, Copy, Debug)]
pub enum Begin {
    /// At this argument.
    Index(i64),
    /// After this keyword, searched from this argument (negative: from the
    /// end, backwards).
    Keyword(&'static str, i64),
    Unknown,
}

/// How a key specification finds its keys from where it starts (KSPEC_FK_*).
#[derive(Clone, Copy, Debug)]
pub enum Find {
    /// Last key (relative; negative: from the end), step, limit (the share
    /// of what is left, when last is -1).
    Range(i64, i64, i64),
    /// The key count's index, the first key's, the step (all relative).
    Keynum(i64, i64, i64),
    Unknown,
}

#[derive(Debug)]
pub struct KeySpec {
    /// "" when none.
    pub notes: &'static str,
    pub flags: u16,
    pub begin: Begin,
    pub find: Find,
}

/// The getkeys procedures of Redis's db.c, for the commands whose key
/// specifications do not say everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetKeys {
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
pub struct Arg {
    pub name: &'static str,
    /// string, integer, double, key, pattern, unix-time, pure-token, oneof, block.
    pub kind: &'static str,
    /// -1 when not a key.
    pub key_spec_index: i64,
    /// The strings are "" when absent.
    pub token: &'static str,
    pub summary: &'static str,
    pub since: &'static str,
    pub deprecated_since: &'static str,
    pub flags: u8,
    /// A oneof's or a block's arguments.
    pub args: &'static [Arg],
}

/// An argument's defaults, for the generated table's `..ARG`.
pub const ARG: Arg = Arg {
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
pub struct RedisCommand {
    /// Lower case; a subcommand's own name (its full name is
    /// `container|name`).
    pub name: &'static str,
    /// "" for a top-level command.
    pub container: &'static str,
    pub arity: i64,
    /// COMMAND INFO's flags, in its order, `movablekeys` included.
    pub flags: &'static [&'static str],
    /// The legacy first key, last key, step.
    pub range: (i64, i64, i64),
    /// Every ACL category, the implicit ones included, in Redis's order.
    pub acl: &'static [&'static str],
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    pub getkeys: Option<GetKeys>,
    /// COMMAND DOCS's group (sorted-set, not sorted_set).
    pub group: &'static str,
    /// The strings are "" when absent.
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub doc_flags: &'static [&'static str],
    pub deprecated_since: &'static str,
    pub replaced_by: &'static str,
    pub history: &'static [(&'static str, &'static str)],
    pub args: &'static [Arg],
}

/// A command's defaults, for the generated table's `..CMD`.
pub const CMD: RedisCommand = RedisCommand {
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
