//! COMMAND and its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS, HELP),
//! answered from the command tables as Redis 7 answers them.
//!
//! Invariant: it describes exactly the commands the dispatcher runs (the
//! same tables, `dispatch::COMMANDS`, which the server holds).

use crate::apps::kv::ops::SYNTAX;
use crate::apps::kv::state::{cmd, CommandEntry, Commands, Ctx, KvServer};
use crate::proto::resp::glob_match;
use crate::store::db::StoreError;

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands in this server.",
    "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
    "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about the given commands, or all of them.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about the given commands, or all of them.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "HELP",
    "    Print this help.",
];

/// COMMAND INFO's entry for one command (Redis 7's ten fields).
fn write_command_info(ctx: &mut Ctx<'_>, entry: &CommandEntry) {
    let enc = ctx.enc();
    ctx.array(10);
    ctx.bulk(entry.name.as_bytes());
    ctx.int(entry.arity);
    ctx.array(entry.flags.len());
    entry.flags.iter().for_each(|flag| enc.simple(ctx.out.bytes(), flag));
    ctx.int(entry.keys.0);
    ctx.int(entry.keys.1);
    ctx.int(entry.keys.2);
    let categories = entry.acl_categories();
    ctx.array(categories.len());
    categories.iter().for_each(|category| enc.simple(ctx.out.bytes(), category));
    ctx.array(0); // tips
    ctx.array(0); // key specs
    ctx.array(0); // subcommands
}

/// The commands named from argument 2 on, or all of them.
fn named_commands(ctx: &Ctx<'_>, commands: Commands) -> Vec<(Vec<u8>, Option<&'static CommandEntry>)> {
    if ctx.argc() == 2 {
        return commands.iter().map(|entry| (entry.name.as_bytes().to_vec(), Some(entry))).collect();
    }
    (2..ctx.argc())
        .map(|i| ctx.arg(i).into_owned())
        .map(|name| (name.clone(), CommandEntry::find(commands, &name)))
        .collect()
}

fn command_info(ctx: &mut Ctx<'_>, commands: Commands) {
    let named = named_commands(ctx, commands);
    ctx.array(named.len());
    for (_, entry) in named {
        match entry {
            Some(entry) => write_command_info(ctx, entry),
            None => ctx.null(),
        }
    }
}

/// COMMAND DOCS: a map of the known commands among those named to their
/// summary and group (unknown names are left out, as Redis does).
fn command_docs(ctx: &mut Ctx<'_>, commands: Commands) {
    let known: Vec<&CommandEntry> = named_commands(ctx, commands).into_iter().filter_map(|(_, entry)| entry).collect();
    ctx.map(known.len());
    for entry in known {
        ctx.bulk(entry.name.as_bytes());
        ctx.map(2);
        ctx.bulk(b"summary");
        ctx.bulk(entry.summary.as_bytes());
        ctx.bulk(b"group");
        ctx.bulk(entry.group.as_bytes());
    }
}

/// COMMAND LIST [FILTERBY MODULE m | ACLCAT c | PATTERN p].
fn command_list(ctx: &mut Ctx<'_>, commands: Commands) {
    let filter = if ctx.argc() == 5 {
        if !ctx.arg(2).eq_ignore_ascii_case(b"FILTERBY") {
            ctx.error(SYNTAX);
            return;
        }
        Some((ctx.arg(3).to_ascii_uppercase(), ctx.arg(4).into_owned()))
    } else {
        None
    };
    let keep = |entry: &CommandEntry| match &filter {
        None => Some(true),
        Some((by, _)) if by == b"MODULE" => Some(false),
        Some((by, category)) if by == b"ACLCAT" => Some(
            entry
                .acl_categories()
                .iter()
                .any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(category.strip_prefix(b"@").unwrap_or(category))),
        ),
        Some((by, pattern)) if by == b"PATTERN" => Some(glob_match(pattern, entry.name.as_bytes())),
        Some(_) => None,
    };
    let mut names = Vec::new();
    for entry in commands.iter() {
        match keep(entry) {
            Some(true) => names.push(entry.name),
            Some(false) => {}
            None => {
                ctx.error(SYNTAX);
                return;
            }
        }
    }
    ctx.array(names.len());
    names.iter().for_each(|name| ctx.bulk(name.as_bytes()));
}

/// COMMAND GETKEYS cmd args...: the keys, by the command's key positions.
fn command_getkeys(ctx: &mut Ctx<'_>, commands: Commands) {
    let Some(entry) = CommandEntry::find(commands, &ctx.arg(2)) else {
        ctx.error("ERR Invalid command specified");
        return;
    };
    let argc = (ctx.argc() - 2) as i64;
    if !entry.arity_fits(argc) {
        ctx.error("ERR Invalid number of arguments specified for command");
        return;
    }
    if entry.keys.0 == 0 && !moves_keys(entry) {
        ctx.error("ERR The command has no key arguments");
        return;
    }
    let args: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
    let keys: Vec<&[u8]> = key_positions(entry, &args).into_iter().map(|i| args[i].as_slice()).collect();
    if keys.is_empty() {
        ctx.error("ERR Invalid arguments specified for command");
        return;
    }
    ctx.array(keys.len());
    keys.iter().for_each(|key| ctx.bulk(key));
}

/// Where a command whose keys move (`movablekeys`) finds them.
#[derive(Clone, Copy)]
enum Movable {
    /// A count of keys at this position, the keys after it.
    Count(usize),
    /// A destination key at 1, then a count of keys at 2.
    StoreAndCount,
    /// The first half of what follows STREAMS.
    Streams,
    /// Its key specification's, and SORT's STORE destination.
    Sort,
    /// The source at 1, and the STORE or STOREDIST destination among the
    /// options from this position (GEORADIUS, GEORADIUSBYMEMBER).
    GeoStore(usize),
}

fn movable(name: &str) -> Option<Movable> {
    Some(match name {
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => Movable::Count(1),
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop" | "bzmpop" => Movable::Count(2),
        "zunionstore" | "zinterstore" | "zdiffstore" => Movable::StoreAndCount,
        "xread" | "xreadgroup" => Movable::Streams,
        "sort" | "sort_ro" => Movable::Sort,
        "georadius" => Movable::GeoStore(6),
        "georadiusbymember" => Movable::GeoStore(5),
        _ => return None,
    })
}

/// The positions of a call's key arguments (`args[0]` is the command's
/// name): its key specification's, or for a command whose keys move, those
/// its arguments name. Arguments too short for their count name the keys
/// that are there.
pub(in crate::apps::kv) fn key_positions(entry: &CommandEntry, args: &[Vec<u8>]) -> Vec<usize> {
    let numkeys = |at: usize| -> std::ops::Range<usize> {
        let count = args.get(at).and_then(|n| crate::apps::kv::ops::parse_i64(n)).unwrap_or(0).max(0) as usize;
        at + 1..args.len().min((at + 1).saturating_add(count))
    };
    match movable(entry.name) {
        Some(Movable::Count(at)) => numkeys(at).collect(),
        Some(Movable::StoreAndCount) => [1].into_iter().chain(numkeys(2)).collect(),
        Some(Movable::Streams) => {
            let streams = args.iter().position(|a| a.eq_ignore_ascii_case(b"STREAMS")).map_or(args.len(), |i| i + 1);
            (streams..streams + (args.len() - streams) / 2).collect()
        }
        Some(Movable::Sort) => {
            let store = if entry.name == "sort" { crate::apps::kv::cmd::sort::store_position(args) } else { None };
            entry.key_positions(args.len()).chain(store).collect()
        }
        Some(Movable::GeoStore(from)) => {
            let store = (from..args.len().saturating_sub(1))
                .rev()
                .find(|&i| args[i].eq_ignore_ascii_case(b"STORE") || args[i].eq_ignore_ascii_case(b"STOREDIST"));
            [1].into_iter().chain(store.map(|i| i + 1)).collect()
        }
        None if entry.keys.0 == 0 => Vec::new(),
        None => entry.key_positions(args.len()).collect(),
    }
}

/// Whether its key positions need its arguments (`key_positions`), not
/// only their count.
pub(in crate::apps::kv) fn moves_keys(entry: &CommandEntry) -> bool {
    movable(entry.name).is_some()
}

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("command", -1, &["random", "loading", "stale"], (0, 0, 0), "server", "Describes the commands this server knows.", KvServer::cmd_command),
];

impl KvServer {
    fn cmd_command(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() == 1 {
            ctx.array(self.commands.count());
            self.commands.iter().for_each(|entry| write_command_info(ctx, entry));
            return Ok(());
        }
        let sub = ctx.arg(1).to_ascii_uppercase();
        let argc = ctx.argc();
        let arity_ok = match sub.as_slice() {
            b"COUNT" | b"HELP" => argc == 2,
            b"GETKEYS" => argc >= 3,
            b"LIST" => argc == 2 || argc == 5,
            _ => true,
        };
        if !arity_ok {
            let name = String::from_utf8_lossy(&sub).to_ascii_lowercase();
            ctx.error(&format!("ERR wrong number of arguments for 'command|{name}' command"));
            return Ok(());
        }
        match sub.as_slice() {
            b"COUNT" => ctx.int(self.commands.count() as i64),
            b"INFO" => command_info(ctx, self.commands),
            b"DOCS" => command_docs(ctx, self.commands),
            b"LIST" => command_list(ctx, self.commands),
            b"GETKEYS" => command_getkeys(ctx, self.commands),
            b"HELP" => {
                ctx.array(COMMAND_HELP.len());
                COMMAND_HELP.iter().for_each(|line| ctx.enc().simple(ctx.out.bytes(), line));
            }
            _ => ctx.error(&format!(
                "ERR unknown subcommand '{}'. Try COMMAND HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }
}
