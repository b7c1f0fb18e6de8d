//! COMMAND INFO's and COMMAND DOCS's replies for one of Redis's commands,
//! in the shapes of Redis 7.0.15's server.c (addReplyCommandInfo,
//! addReplyCommandDocs and their helpers), sets and maps as RESP3 has them.
//!
//! Invariant: a command's subcommands are only those the server runs
//! (`command_runs::runs`), so a reply never describes a command it does not.

use super::command_runs::running_subcommands;
use crate::apps::kv::state::Ctx;
use crate::redis_spec::command_table::{Arg, Begin, Find, KeySpec, RedisCommand, ARG_FLAG_NAMES, KEY_FLAG_NAMES};

/// A set of simple strings.
fn simple_set(ctx: &mut Ctx<'_>, items: &[&str]) {
    ctx.set(items.len());
    items.iter().for_each(|item| ctx.simple(item));
}

/// The names of the bits set in `flags`, `names[i]` for bit i.
fn flag_names(flags: u16, names: &[&'static str]) -> Vec<&'static str> {
    names.iter().enumerate().filter(|(bit, _)| flags & (1 << bit) != 0).map(|(_, name)| *name).collect()
}

/// addReplyCommandInfo: name, arity, flags, first/last/step, ACL
/// categories, tips, key specifications, subcommands.
pub(super) fn write_info(ctx: &mut Ctx<'_>, cmd: &RedisCommand) {
    ctx.array(10);
    ctx.bulk(cmd.fullname().as_bytes());
    ctx.int(cmd.arity);
    simple_set(ctx, cmd.flags);
    ctx.int(cmd.range.0);
    ctx.int(cmd.range.1);
    ctx.int(cmd.range.2);
    simple_set(ctx, cmd.acl);
    ctx.set(cmd.tips.len());
    cmd.tips.iter().for_each(|tip| ctx.bulk(tip.as_bytes()));
    ctx.set(cmd.key_specs.len());
    cmd.key_specs.iter().for_each(|spec| write_key_spec(ctx, spec));
    let subs = running_subcommands(cmd);
    match subs.is_empty() && cmd.subcommands().is_empty() {
        true => ctx.set(0),
        false => ctx.array(subs.len()),
    }
    subs.iter().for_each(|sub| write_info(ctx, sub));
}

/// addReplyCommandKeySpecs's map for one specification.
fn write_key_spec(ctx: &mut Ctx<'_>, spec: &KeySpec) {
    ctx.map(3 + usize::from(!spec.notes.is_empty()));
    if !spec.notes.is_empty() {
        ctx.bulk(b"notes");
        ctx.bulk(spec.notes.as_bytes());
    }
    ctx.bulk(b"flags");
    simple_set(ctx, &flag_names(spec.flags, &KEY_FLAG_NAMES));
    ctx.bulk(b"begin_search");
    match spec.begin {
        Begin::Index(pos) => spec_map(ctx, "index", &[("index", pos)], None),
        Begin::Keyword(keyword, startfrom) => spec_map(ctx, "keyword", &[("startfrom", startfrom)], Some(keyword)),
        Begin::Unknown => spec_map(ctx, "unknown", &[], None),
    }
    ctx.bulk(b"find_keys");
    match spec.find {
        Find::Range(lastkey, step, limit) => {
            spec_map(ctx, "range", &[("lastkey", lastkey), ("keystep", step), ("limit", limit)], None)
        }
        Find::Keynum(keynumidx, firstkey, step) => {
            spec_map(ctx, "keynum", &[("keynumidx", keynumidx), ("firstkey", firstkey), ("keystep", step)], None)
        }
        Find::Unknown => spec_map(ctx, "unknown", &[], None),
    }
}

/// `{type: kind, spec: {keyword?, fields...}}`.
fn spec_map(ctx: &mut Ctx<'_>, kind: &str, fields: &[(&str, i64)], keyword: Option<&str>) {
    ctx.map(2);
    ctx.bulk(b"type");
    ctx.bulk(kind.as_bytes());
    ctx.bulk(b"spec");
    ctx.map(fields.len() + usize::from(keyword.is_some()));
    if let Some(keyword) = keyword {
        ctx.bulk(b"keyword");
        ctx.bulk(keyword.as_bytes());
    }
    for (name, value) in fields {
        ctx.bulk(name.as_bytes());
        ctx.int(*value);
    }
}

/// A bulk field of a map, written only when not empty.
fn field(ctx: &mut Ctx<'_>, name: &str, value: &str) {
    if !value.is_empty() {
        ctx.bulk(name.as_bytes());
        ctx.bulk(value.as_bytes());
    }
}

/// addReplyCommandDocs: summary, since, group, complexity, doc flags,
/// deprecation, history, arguments, subcommands (by full name).
pub(super) fn write_docs(ctx: &mut Ctx<'_>, cmd: &RedisCommand) {
    let subs = running_subcommands(cmd);
    let has_subs = !cmd.subcommands().is_empty();
    let present = [cmd.summary, cmd.since, cmd.complexity, cmd.deprecated_since, cmd.replaced_by];
    let len = 1
        + present.iter().filter(|text| !text.is_empty()).count()
        + usize::from(!cmd.doc_flags.is_empty())
        + usize::from(!cmd.history.is_empty())
        + usize::from(!cmd.args.is_empty())
        + usize::from(has_subs);
    ctx.map(len);
    field(ctx, "summary", cmd.summary);
    field(ctx, "since", cmd.since);
    field(ctx, "group", cmd.group);
    field(ctx, "complexity", cmd.complexity);
    if !cmd.doc_flags.is_empty() {
        ctx.bulk(b"doc_flags");
        simple_set(ctx, cmd.doc_flags);
    }
    field(ctx, "deprecated_since", cmd.deprecated_since);
    field(ctx, "replaced_by", cmd.replaced_by);
    if !cmd.history.is_empty() {
        ctx.bulk(b"history");
        ctx.set(cmd.history.len());
        for (since, change) in cmd.history {
            ctx.array(2);
            ctx.bulk(since.as_bytes());
            ctx.bulk(change.as_bytes());
        }
    }
    if !cmd.args.is_empty() {
        ctx.bulk(b"arguments");
        write_args(ctx, cmd.args);
    }
    if has_subs {
        ctx.bulk(b"subcommands");
        ctx.map(subs.len());
        for sub in subs {
            ctx.bulk(sub.fullname().as_bytes());
            write_docs(ctx, sub);
        }
    }
}

/// addReplyCommandArgList.
fn write_args(ctx: &mut Ctx<'_>, args: &[Arg]) {
    ctx.array(args.len());
    for arg in args {
        let texts = [arg.token, arg.summary, arg.since, arg.deprecated_since];
        let nested = matches!(arg.kind, "oneof" | "block");
        let len = 2
            + usize::from(arg.key_spec_index != -1)
            + texts.iter().filter(|text| !text.is_empty()).count()
            + usize::from(arg.flags != 0)
            + usize::from(nested);
        ctx.map(len);
        field(ctx, "name", arg.name);
        field(ctx, "type", arg.kind);
        if arg.key_spec_index != -1 {
            ctx.bulk(b"key_spec_index");
            ctx.int(arg.key_spec_index);
        }
        field(ctx, "token", arg.token);
        field(ctx, "summary", arg.summary);
        field(ctx, "since", arg.since);
        field(ctx, "deprecated_since", arg.deprecated_since);
        if arg.flags != 0 {
            ctx.bulk(b"flags");
            simple_set(ctx, &flag_names(u16::from(arg.flags), &ARG_FLAG_NAMES));
        }
        if nested {
            ctx.bulk(b"arguments");
            write_args(ctx, arg.args);
        }
    }
}
