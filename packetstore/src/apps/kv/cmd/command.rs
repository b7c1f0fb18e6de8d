//! COMMAND and its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS,
//! GETKEYSANDFLAGS, HELP), answered as Redis 7.0.15 answers them: from
//! Redis's own command table (`redis_commands.rs`) for its commands, from
//! the hand-written entry for packetstore's own (GROUP, WAITAOF); and the
//! key positions the dispatcher routes and tracks by.
//!
//! Invariant: it describes exactly the commands the dispatcher runs (the
//! same tables, `dispatch::COMMANDS`, which the server holds), and of a
//! container's subcommands exactly those its handler runs (`command_runs::runs`).

use super::command_reply::{write_docs, write_info};
use super::command_runs::{running_subcommands, runs};
use crate::apps::kv::ops::SYNTAX;
use crate::apps::kv::state::{cmd, CommandEntry, Commands, Ctx, KvServer};
use crate::proto::resp::glob_match;
use crate::redis_spec::command_table::{
    lookup, lookup_call, lookup_fullname, top_level, GetKeys, RedisCommand, KEY_FLAG_NAMES,
};
use crate::redis_spec::getkeys::{has_keys, keys_with_specs};
use crate::store::db::StoreError;

/// Redis's COMMAND HELP, its first line and HELP's added as addReplyHelp adds them.
const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Print this help.",
];

/// How COMMAND describes a command the dispatcher runs.
#[derive(Clone, Copy)]
enum Described {
    /// By Redis's table: a Redis command, or a subcommand it runs.
    Redis(&'static RedisCommand),
    /// By its own entry: packetstore's own command.
    Own(&'static CommandEntry),
}

impl Described {
    fn of(entry: &'static CommandEntry) -> Described {
        lookup(b"", entry.name.as_bytes()).map_or(Described::Own(entry), Described::Redis)
    }

    /// The command named `fullname` (`name` or `container|name`), if the
    /// server runs it.
    fn find(commands: Commands, fullname: &[u8]) -> Option<Described> {
        let top = fullname.split(|&b| b == b'|').next().unwrap_or_default();
        let entry = CommandEntry::find(commands, top)?;
        match Described::of(entry) {
            Described::Own(_) if top.len() != fullname.len() => None,
            Described::Own(entry) => Some(Described::Own(entry)),
            Described::Redis(_) => lookup_fullname(fullname).filter(|cmd| runs(cmd)).map(Described::Redis),
        }
    }

    fn fullname(self) -> String {
        match self {
            Described::Redis(cmd) => cmd.fullname(),
            Described::Own(entry) => entry.name.to_string(),
        }
    }

    fn categories(self) -> Vec<&'static str> {
        match self {
            Described::Redis(cmd) => cmd.acl.to_vec(),
            Described::Own(entry) => entry.acl_categories(),
        }
    }

    fn write_info(self, ctx: &mut Ctx<'_>) {
        match self {
            Described::Redis(cmd) => write_info(ctx, cmd),
            Described::Own(entry) => write_own_info(ctx, entry),
        }
    }

    fn write_docs(self, ctx: &mut Ctx<'_>) {
        match self {
            Described::Redis(cmd) => write_docs(ctx, cmd),
            Described::Own(entry) => {
                ctx.map(2);
                ctx.bulk(b"summary");
                ctx.bulk(entry.summary.as_bytes());
                ctx.bulk(b"group");
                ctx.bulk(entry.group.as_bytes());
            }
        }
    }
}

/// COMMAND INFO's entry for one of packetstore's own commands.
fn write_own_info(ctx: &mut Ctx<'_>, entry: &CommandEntry) {
    ctx.array(10);
    ctx.bulk(entry.name.as_bytes());
    ctx.int(entry.arity);
    ctx.set(entry.flags.len());
    entry.flags.iter().for_each(|flag| ctx.simple(flag));
    ctx.int(entry.keys.0);
    ctx.int(entry.keys.1);
    ctx.int(entry.keys.2);
    let categories = entry.acl_categories();
    ctx.set(categories.len());
    categories.iter().for_each(|category| ctx.simple(category));
    ctx.set(0); // tips
    ctx.set(0); // key specs
    ctx.set(0); // subcommands
}

/// The commands named from argument 2 on (`None`: not one the server
/// runs), or every top-level one.
fn named_commands(ctx: &Ctx<'_>, commands: Commands) -> Vec<Option<Described>> {
    if ctx.argc() == 2 {
        return commands.iter().map(|entry| Some(Described::of(entry))).collect();
    }
    (2..ctx.argc()).map(|i| Described::find(commands, &ctx.arg(i))).collect()
}

fn command_info(ctx: &mut Ctx<'_>, commands: Commands) {
    let named = named_commands(ctx, commands);
    ctx.array(named.len());
    for described in named {
        match described {
            Some(described) => described.write_info(ctx),
            None => ctx.null(),
        }
    }
}

/// COMMAND DOCS: a map of the known commands among those named (unknown
/// names are left out, as Redis does).
fn command_docs(ctx: &mut Ctx<'_>, commands: Commands) {
    let known: Vec<Described> = named_commands(ctx, commands).into_iter().flatten().collect();
    ctx.map(known.len());
    for described in known {
        ctx.bulk(described.fullname().as_bytes());
        described.write_docs(ctx);
    }
}

/// Every command and subcommand the server runs, parents first.
fn every_command(commands: Commands) -> Vec<Described> {
    let mut all = Vec::new();
    for described in commands.iter().map(Described::of) {
        all.push(described);
        if let Described::Redis(cmd) = described {
            all.extend(running_subcommands(cmd).into_iter().map(Described::Redis));
        }
    }
    all
}

/// COMMAND LIST's filter: FILTERBY MODULE, ACLCAT or PATTERN.
enum Filter {
    Module,
    AclCat(Vec<u8>),
    Pattern(Vec<u8>),
}

impl Filter {
    /// commandListCommand's parsing: `None` when there are no options,
    /// `Err` on a syntax error.
    fn parse(ctx: &Ctx<'_>) -> Result<Option<Filter>, ()> {
        let mut filter = None;
        let mut at = 2;
        while at < ctx.argc() {
            if !ctx.arg(at).eq_ignore_ascii_case(b"FILTERBY") || ctx.argc() - 1 - at != 2 {
                return Err(());
            }
            let arg = ctx.arg(at + 2).into_owned();
            filter = Some(match ctx.arg(at + 1).to_ascii_uppercase().as_slice() {
                b"MODULE" => Filter::Module,
                b"ACLCAT" => Filter::AclCat(arg),
                b"PATTERN" => Filter::Pattern(arg.to_ascii_lowercase()),
                _ => return Err(()),
            });
            at += 3;
        }
        Ok(filter)
    }

    fn keeps(&self, described: Described) -> bool {
        match self {
            Filter::Module => false,
            Filter::AclCat(category) => {
                described.categories().iter().any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(category))
            }
            Filter::Pattern(pattern) => glob_match(pattern, described.fullname().as_bytes()),
        }
    }
}

/// COMMAND LIST [FILTERBY MODULE m | ACLCAT c | PATTERN p].
fn command_list(ctx: &mut Ctx<'_>, commands: Commands) {
    let Ok(filter) = Filter::parse(ctx) else {
        ctx.error(SYNTAX);
        return;
    };
    let names: Vec<String> = every_command(commands)
        .into_iter()
        .filter(|described| filter.as_ref().is_none_or(|filter| filter.keeps(*described)))
        .map(Described::fullname)
        .collect();
    ctx.array(names.len());
    names.iter().for_each(|name| ctx.bulk(name.as_bytes()));
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS (getKeysSubcommandImpl): the keys
/// of the call from argument 2 on, by Redis's key specifications.
fn command_getkeys(ctx: &mut Ctx<'_>, commands: Commands, with_flags: bool) {
    let args: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
    let Some(cmd) = CommandEntry::find(commands, &args[0]).and_then(|entry| running_call(entry, &args)) else {
        ctx.error("ERR Invalid command specified");
        return;
    };
    if !has_keys(cmd) {
        ctx.error("ERR The command has no key arguments");
        return;
    }
    let argc = args.len() as i64;
    if (cmd.arity > 0 && cmd.arity != argc) || argc < -cmd.arity {
        ctx.error("ERR Invalid number of arguments specified for command");
        return;
    }
    let keys = keys_with_specs(cmd, &args);
    if keys.is_empty() && !cmd.has_flag("no_mandatory_keys") {
        ctx.error("ERR Invalid arguments specified for command");
        return;
    }
    ctx.array(keys.len());
    for (at, flags) in keys {
        if with_flags {
            ctx.array(2);
        }
        ctx.bulk(&args[at]);
        if with_flags {
            let names: Vec<&str> =
                KEY_FLAG_NAMES.iter().enumerate().filter(|(bit, _)| flags & (1 << bit) != 0).map(|(_, n)| *n).collect();
            ctx.set(names.len());
            names.iter().for_each(|name| ctx.simple(name));
        }
    }
}

/// The Redis command (or subcommand) a call of `entry` runs, if `entry`
/// is a Redis command and the server runs that subcommand.
fn running_call(entry: &CommandEntry, args: &[Vec<u8>]) -> Option<&'static RedisCommand> {
    lookup(b"", entry.name.as_bytes())?;
    lookup_call(args).filter(|cmd| runs(cmd))
}

/// A call's keys with their key-spec flags (Redis's
/// getKeysFromCommandWithSpecs): none for packetstore's own commands.
pub(in crate::apps::kv) fn keys_and_flags(entry: &CommandEntry, args: &[Vec<u8>]) -> Vec<(usize, u16)> {
    running_call(entry, args).map_or_else(Vec::new, |cmd| crate::redis_spec::getkeys::keys_with_specs(cmd, args))
}

/// The positions of a call's key arguments (`args[0]` is the command's
/// name), as Redis's getKeysFromCommand finds them (cluster routing and
/// client tracking use it): the command's getkeys procedure or legacy
/// range; for packetstore's own commands, their entry's range.
pub(in crate::apps::kv) fn key_positions(entry: &CommandEntry, args: &[Vec<u8>]) -> Vec<usize> {
    if lookup(b"", entry.name.as_bytes()).is_none() {
        return match entry.keys.0 {
            0 => Vec::new(),
            _ => entry.key_positions(args.len()).collect(),
        };
    }
    running_call(entry, args).map_or_else(Vec::new, |cmd| crate::redis_spec::getkeys::key_positions(cmd, args))
}

/// Whether its key positions need its arguments (`key_positions`), not
/// only their count: Redis marks it `movablekeys`, or it is a container
/// with keyed subcommands.
/// Asked of every command on a sharded server's main port: the names are
/// found once (a binary search of Redis's table per command was 16% of a
/// relayed GET's CPU, issue 37).
pub(in crate::apps::kv) fn moves_keys(entry: &CommandEntry) -> bool {
    type Names = crate::util::idhash::NameHashMap<&'static [u8], ()>;
    static MOVING: std::sync::OnceLock<Names> = std::sync::OnceLock::new();
    let moving = MOVING.get_or_init(|| {
        // SET's and BITFIELD's procedures only tell the key's flags (GET,
        // read-only): their key is where the legacy range says.
        let flags_only = |cmd: &RedisCommand| matches!(cmd.getkeys, Some(GetKeys::Set | GetKeys::Bitfield));
        let moves = |cmd: &&RedisCommand| {
            (cmd.has_flag("movablekeys") && !flags_only(cmd))
                || cmd.getkeys.is_some_and(|_| !flags_only(cmd))
                || cmd.subcommands().iter().any(|sub| sub.range.0 != 0 || sub.getkeys.is_some())
        };
        top_level().filter(moves).map(|cmd| (cmd.name.as_bytes(), ())).collect()
    });
    moving.contains_key(entry.name.as_bytes())
}

/// This family's commands, as the dispatcher runs them (COMMAND describes
/// them from Redis's table).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("command", -1, &["random", "loading", "stale"], (0, 0, 0), "server", "Describes the commands this server knows.", KvServer::cmd_command),
];

impl KvServer {
    fn cmd_command(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() == 1 {
            ctx.array(self.commands.count());
            self.commands.iter().for_each(|entry| Described::of(entry).write_info(ctx));
            return Ok(());
        }
        let Some(sub) = lookup(b"command", &ctx.arg(1)) else {
            ctx.error(&format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(&ctx.arg(1)).chars().take(128).collect::<String>()
            ));
            return Ok(());
        };
        let argc = ctx.argc() as i64;
        if (sub.arity > 0 && argc != sub.arity) || argc < -sub.arity {
            ctx.error(&format!("ERR wrong number of arguments for 'command|{}' command", sub.name));
            return Ok(());
        }
        match sub.name {
            "count" => ctx.int(self.commands.count() as i64),
            "info" => command_info(ctx, self.commands),
            "docs" => command_docs(ctx, self.commands),
            "list" => command_list(ctx, self.commands),
            "getkeys" => command_getkeys(ctx, self.commands, false),
            "getkeysandflags" => command_getkeys(ctx, self.commands, true),
            _ => {
                ctx.array(COMMAND_HELP.len());
                COMMAND_HELP.iter().for_each(|line| ctx.simple(line));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::kv::dispatch::COMMANDS as ALL;

    /// The dispatcher's own key ranges (`CommandEntry::key_positions`,
    /// which it touches, tracks and wakes by) are Redis's legacy ranges.
    #[test]
    fn entries_key_ranges_are_redis_s() {
        let differ: Vec<String> = ALL
            .iter()
            .filter_map(|entry| lookup(b"", entry.name.as_bytes()).map(|cmd| (entry, cmd)))
            .filter(|(entry, cmd)| !moves_keys(entry) && entry.keys != cmd.range)
            .map(|(entry, cmd)| format!("{} {:?} != {:?}", entry.name, entry.keys, cmd.range))
            .collect();
        assert!(differ.is_empty(), "{differ:#?}");
    }

    /// The commands whose keys need their arguments: Redis's movablekeys
    /// and the containers with keyed subcommands, nothing else.
    #[test]
    fn commands_that_move_keys_are_found_by_name() {
        let moving: Vec<&str> = ALL.iter().filter(|entry| moves_keys(entry)).map(|entry| entry.name).collect();
        for name in ["eval", "fcall", "zunionstore", "sort", "xread", "lmpop", "object", "memory", "migrate"] {
            assert!(moving.contains(&name) || CommandEntry::find(ALL, name.as_bytes()).is_none(), "{name}");
        }
        for name in ["get", "set", "bitfield", "mset", "del", "hset", "lpush", "ping", "info"] {
            assert!(!moving.contains(&name), "{name}");
        }
    }
}
