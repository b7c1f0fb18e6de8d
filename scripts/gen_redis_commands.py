#!/usr/bin/env python3
"""Generates packetstore/src/redis_spec/redis_commands.rs, Redis 7.0.15's
command table, from Redis's own command JSON files (src/commands/*.json,
BSD-licensed), the way Redis's utils/generate-command-code.py builds
src/commands.c, plus what server.c derives at startup (populateCommandTable):
the legacy (first, last, step) range, the `movablekeys` flag and the implicit
ACL categories, so the Rust side only reads them.

Usage (Python 3, standard library only):

    scripts/gen_redis_commands.py [--json-dir DIR] [--git-repo REPO] [--tag TAG] [--out FILE]

By default it reads the files with `git show TAG:src/commands/NAME.json` from
REPO (default /work/.mirror/redis+redis/repo, TAG 7.0.15); with --json-dir it
reads DIR/*.json instead. It writes --out (default the file above, relative to
this repository's root). The generated file is committed: rerun this script
after changing it, or to move to another Redis version, and commit both.
"""

import argparse
import glob
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "packetstore", "src", "redis_spec", "redis_commands.rs")

# server.c's replyFlagNames order; the hidden flags (may_replicate, sentinel,
# only_sentinel, protected, touches_arbitrary_keys) are left out as Redis does.
REPLY_FLAGS = ["WRITE", "READONLY", "DENYOOM", "MODULE", "ADMIN", "PUBSUB", "NOSCRIPT", "BLOCKING", "LOADING",
               "STALE", "SKIP_MONITOR", "SKIP_SLOWLOG", "ASKING", "FAST", "NO_AUTH", "NO_MANDATORY_KEYS",
               "NO_ASYNC_LOADING", "NO_MULTI", "MOVABLE_KEYS", "ALLOW_BUSY"]
REPLY_FLAG_NAMES = {"MOVABLE_KEYS": "movablekeys"}
KNOWN_FLAGS = set(REPLY_FLAGS) | {"MAY_REPLICATE", "SENTINEL", "ONLY_SENTINEL", "PROTECTED", "TOUCHES_ARBITRARY_KEYS"}

# acl.c's ACLCommandCategories order.
ACL_CATEGORIES = ["KEYSPACE", "READ", "WRITE", "SET", "SORTEDSET", "LIST", "HASH", "STRING", "BITMAP", "HYPERLOGLOG",
                  "GEO", "STREAM", "PUBSUB", "ADMIN", "FAST", "SLOW", "BLOCKING", "DANGEROUS", "CONNECTION",
                  "TRANSACTION", "SCRIPTING"]

KEY_FLAGS = ["RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "NOT_KEY", "INCOMPLETE", "VARIABLE_FLAGS"]
ARG_TYPES = ["string", "integer", "double", "key", "pattern", "unix-time", "pure-token", "oneof", "block"]
DOC_FLAGS = ["DEPRECATED", "SYSCMD"]

# db.c's getkeys procs, by the name the JSON gives them: GetKeys's variants.
GETKEYS = {
    "sintercardGetKeys": "Sintercard", "zunionInterDiffStoreGetKeys": "ZunionInterDiffStore",
    "zunionInterDiffGetKeys": "ZunionInterDiff", "evalGetKeys": "Eval", "functionGetKeys": "Function",
    "lmpopGetKeys": "Lmpop", "blmpopGetKeys": "Blmpop", "zmpopGetKeys": "Zmpop",
    "sortROGetKeys": "SortRo", "sortGetKeys": "Sort", "migrateGetKeys": "Migrate",
    "georadiusGetKeys": "Georadius", "xreadGetKeys": "Xread", "setGetKeys": "Set", "bitfieldGetKeys": "Bitfield",
}

HEADER = """\
//! Redis 7.0.15's command table (GENERATED: do not edit), from Redis's
//! command JSON files by `scripts/gen_redis_commands.py`: every command and
//! subcommand with its arity, flags, legacy key range, ACL categories, tips,
//! key specifications, getkeys procedure and its documentation (COMMAND
//! DOCS). To regenerate: `python3 scripts/gen_redis_commands.py` (it reads
//! the files from a Redis checkout, see its header) and commit the result.
//!
//! Invariant: sorted by (container, name), top-level commands (container
//! "") first, names lower case, so `command_table::lookup` can search it.
//!
//! The data comes from Redis (src/commands/*.json), under this licence:
//!
//! Copyright (c) 2006-2020, Salvatore Sanfilippo <antirez at gmail dot com>
//! All rights reserved.
//!
//! Redistribution and use in source and binary forms, with or without
//! modification, are permitted provided that the following conditions are met:
//!
//!   * Redistributions of source code must retain the above copyright notice,
//!     this list of conditions and the following disclaimer.
//!   * Redistributions in binary form must reproduce the above copyright
//!     notice, this list of conditions and the following disclaimer in the
//!     documentation and/or other materials provided with the distribution.
//!   * Neither the name of Redis nor the names of its contributors may be used
//!     to endorse or promote products derived from this software without
//!     specific prior written permission.
//!
//! THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
//! AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
//! IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
//! ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE
//! LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
//! CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
//! SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
//! INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
//! CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
//! ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
//! POSSIBILITY OF SUCH DAMAGE.

#[allow(unused_imports)]
use super::command_shape::{Arg, Begin, Begin::Index, Begin::Keyword, Find, Find::Keynum, Find::Range, GetKeys, KeySpec,
    RedisCommand, ARG, CMD};
#[allow(unused_imports)]
use super::command_shape::{ACCESS, DELETE, INCOMPLETE, INSERT, MULTIPLE, MULTIPLE_TOKEN, NOT_KEY, OPTIONAL, OW, RM,
    RO, RW, UPDATE, VARIABLE_FLAGS};

"""


def rust_str(text):
    """A Rust string literal of `text`."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"%s"' % out


def str_list(items):
    return "&[%s]" % ", ".join(rust_str(item) for item in items)


def load_json(args):
    """Every command description: (name, description) pairs."""
    if args.json_dir:
        texts = [open(path).read() for path in sorted(glob.glob(os.path.join(args.json_dir, "*.json")))]
    else:
        names = subprocess.check_output(["git", "-C", args.git_repo, "ls-tree", "--name-only", args.tag,
                                         "src/commands/"], text=True).split()
        texts = [subprocess.check_output(["git", "-C", args.git_repo, "show", "%s:%s" % (args.tag, name)], text=True)
                 for name in names if name.endswith(".json")]
    return [(name, desc) for text in texts for name, desc in json.loads(text).items()]


def legacy_range(specs):
    """server.c's populateCommandLegacyRangeSpec: ((first, last, step), movable)."""
    def plain(spec):
        return "index" in spec["begin_search"] and "range" in spec["find_keys"]
    if not specs:
        return (0, 0, 0), False
    if len(specs) == 1 and plain(specs[0]):
        rng = specs[0]["find_keys"]["range"]
        pos = specs[0]["begin_search"]["index"]["pos"]
        last = rng["lastkey"] + pos if rng["lastkey"] >= 0 else rng["lastkey"]
        return (pos, last, rng["step"]), "INCOMPLETE" in specs[0]["flags"]
    first, last, prev_last, movable = None, 0, 0, False
    for spec in specs:
        if not plain(spec):
            movable = True
            continue
        pos, rng = spec["begin_search"]["index"]["pos"], spec["find_keys"]["range"]
        if rng["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        movable = movable or "INCOMPLETE" in spec["flags"]
        first = pos if first is None else min(first, pos)
        abs_last = rng["lastkey"] + pos if rng["lastkey"] >= 0 else rng["lastkey"]
        last = max(last % 2**32, abs_last % 2**32)  # Redis compares them unsigned
        last = last - 2**32 if last >= 2**31 else last
        prev_last = last
    if first is None:
        return (0, 0, 0), True
    return (first, last, 1), movable


def acl_categories(desc, flags):
    """server.c's setImplicitACLCategories, in ACLCommandCategories order."""
    cats = set(desc.get("acl_categories", []))
    if "WRITE" in flags:
        cats.add("WRITE")
    if "READONLY" in flags and "SCRIPTING" not in cats:
        cats.add("READ")
    if "ADMIN" in flags:
        cats |= {"ADMIN", "DANGEROUS"}
    for flag in ("PUBSUB", "FAST", "BLOCKING"):
        if flag in flags:
            cats.add(flag)
    if "FAST" not in cats:
        cats.add("SLOW")
    assert cats <= set(ACL_CATEGORIES), cats
    return ["@" + cat.lower() for cat in ACL_CATEGORIES if cat in cats]


def bits(flags, known):
    assert set(flags) <= set(known), flags
    return " | ".join(flag for flag in known if flag in flags) or "0"


def key_spec(spec):
    begin = spec["begin_search"]
    if "index" in begin:
        begin_code = "Index(%d)" % begin["index"]["pos"]
    elif "keyword" in begin:
        begin_code = "Keyword(%s, %d)" % (rust_str(begin["keyword"]["keyword"]), begin["keyword"]["startfrom"])
    else:
        begin_code = "Begin::Unknown"
    find = spec["find_keys"]
    if "range" in find:
        find_code = "Range(%d, %d, %d)" % (find["range"]["lastkey"], find["range"]["step"], find["range"]["limit"])
    elif "keynum" in find:
        k = find["keynum"]
        find_code = "Keynum(%d, %d, %d)" % (k["keynumidx"], k["firstkey"], k["step"])
    else:
        find_code = "Find::Unknown"
    return "KeySpec { notes: %s, flags: %s, begin: %s, find: %s }" % (
        rust_str(spec.get("notes", "")), bits(spec["flags"], KEY_FLAGS), begin_code, find_code)


def argument(desc, indent):
    assert desc["type"] in ARG_TYPES, desc["type"]
    fields = ["name: %s" % rust_str(desc["name"].lower()), "kind: %s" % rust_str(desc["type"])]
    if "key_spec_index" in desc:
        fields.append("key_spec_index: %d" % desc["key_spec_index"])
    for field in ("token", "summary", "since", "deprecated_since"):
        if desc.get(field):
            value = desc[field].upper() if field == "token" else desc[field]
            fields.append("%s: %s" % (field, rust_str(value)))
    flags = [flag for flag, key in (("OPTIONAL", "optional"), ("MULTIPLE", "multiple"),
                                    ("MULTIPLE_TOKEN", "multiple_token")) if desc.get(key)]
    if flags:
        fields.append("flags: %s" % " | ".join(flags))
    if desc["type"] in ("oneof", "block"):
        fields.append("args: %s" % arguments(desc["arguments"], indent + 4))
    return "Arg { %s, ..ARG }" % ", ".join(fields)


def arguments(descs, indent):
    if not descs:
        return "&[]"
    pad = " " * (indent + 4)
    inner = "".join("%s%s,\n" % (pad, argument(desc, indent + 4)) for desc in descs)
    return "&[\n%s%s]" % (inner, " " * indent)


def command(name, desc, group):
    flags = desc.get("command_flags", [])
    assert set(flags) <= KNOWN_FLAGS, flags
    (first, last, step), movable = legacy_range(desc.get("key_specs", []))
    reply_flags = [REPLY_FLAG_NAMES.get(flag, flag.lower()) for flag in REPLY_FLAGS
                   if flag in flags or (flag == "MOVABLE_KEYS" and movable)]
    lines = [
        "name: %s, container: %s, arity: %d" % (rust_str(name.lower()), rust_str(desc.get("container", "").lower()),
                                               desc["arity"]),
        "flags: %s, range: (%d, %d, %d)" % (str_list(reply_flags), first, last, step),
        "acl: %s" % str_list(acl_categories(desc, flags)),
        "group: %s, since: %s" % (rust_str(group.replace("_", "-")), rust_str(desc.get("since", ""))),
        "summary: %s" % rust_str(desc.get("summary", "")),
    ]
    if desc.get("complexity"):
        lines.append("complexity: %s" % rust_str(desc["complexity"]))
    if desc.get("command_tips"):
        lines.append("tips: %s" % str_list(tip.lower() for tip in desc["command_tips"]))
    if desc.get("key_specs"):
        lines.append("key_specs: &[\n%s        ]" % "".join(
            "            %s,\n" % key_spec(spec) for spec in desc["key_specs"]))
    if desc.get("get_keys_function"):
        lines.append("getkeys: Some(GetKeys::%s)" % GETKEYS[desc["get_keys_function"]])
    if desc.get("doc_flags"):
        assert set(desc["doc_flags"]) <= set(DOC_FLAGS)
        lines.append("doc_flags: %s" % str_list(f.lower() for f in DOC_FLAGS if f in desc["doc_flags"]))
    for field in ("deprecated_since", "replaced_by"):
        if desc.get(field):
            lines.append("%s: %s" % (field, rust_str(desc[field])))
    if desc.get("history"):
        lines.append("history: &[%s]" % ", ".join("(%s, %s)" % (rust_str(a), rust_str(b)) for a, b in desc["history"]))
    if desc.get("arguments"):
        lines.append("args: %s" % arguments(desc["arguments"], 8))
    return "    RedisCommand {\n%s        ..CMD\n    },\n" % "".join("        %s,\n" % line for line in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json-dir")
    parser.add_argument("--git-repo", default="/work/.mirror/redis+redis/repo")
    parser.add_argument("--tag", default="7.0.15")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    commands = load_json(args)
    # populateCommandStructure: a sentinel-only command is not a server's.
    commands = [(name, desc) for name, desc in commands if "ONLY_SENTINEL" not in desc.get("command_flags", [])]
    groups = {name.lower(): desc["group"] for name, desc in commands if not desc.get("container")}
    rows = []
    for name, desc in commands:
        container = desc.get("container", "").lower()
        if container and container not in groups:
            continue
        rows.append(((container, name.lower()), command(name, desc, groups[container] if container else desc["group"])))
    rows.sort()
    with open(args.out, "w") as out:
        out.write(HEADER)
        out.write("/// Every command and subcommand of Redis 7.0.15, by (container, name).\n")
        out.write("pub static REDIS_COMMANDS: &[RedisCommand] = &[\n")
        out.write("".join(code for _, code in rows))
        out.write("];\n")
    print("wrote %d commands to %s" % (len(rows), os.path.normpath(args.out)))


if __name__ == "__main__":
    main()
