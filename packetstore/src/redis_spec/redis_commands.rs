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

/// Every command and subcommand of Redis 7.0.15, by (container, name).
pub static REDIS_COMMANDS: &[RedisCommand] = &[
    RedisCommand {
        name: "acl", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.0.0",
        summary: "A container for Access List Control commands ",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "append", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "2.0.0",
        summary: "Append a value to a key",
        complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "asking", container: "", arity: 1,
        flags: &["fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "cluster", since: "3.0.0",
        summary: "Sent by cluster clients after an -ASK redirect",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "auth", container: "", arity: -2,
        flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "1.0.0",
        summary: "Authenticate to the server",
        complexity: "O(N) where N is the number of passwords defined for the user",
        history: &[("6.0.0", "Added ACL style (username and password).")],
        args: &[
            Arg { name: "username", kind: "string", since: "6.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "password", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bgrewriteaof", container: "", arity: 1,
        flags: &["admin", "noscript", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Asynchronously rewrite the append-only file",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "bgsave", container: "", arity: -1,
        flags: &["admin", "noscript", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Asynchronously save the dataset to disk",
        complexity: "O(1)",
        history: &[("3.2.2", "Added the `SCHEDULE` option.")],
        args: &[
            Arg { name: "schedule", kind: "pure-token", token: "SCHEDULE", since: "3.2.2", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bitcount", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@bitmap", "@slow"],
        group: "bitmap", since: "2.6.0",
        summary: "Count set bits in a string",
        complexity: "O(N)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "index", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "start", kind: "integer", ..ARG },
                    Arg { name: "end", kind: "integer", ..ARG },
                    Arg { name: "index_unit", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                            Arg { name: "byte", kind: "pure-token", token: "BYTE", ..ARG },
                            Arg { name: "bit", kind: "pure-token", token: "BIT", ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bitfield", container: "", arity: -2,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@bitmap", "@slow"],
        group: "bitmap", since: "3.2.0",
        summary: "Perform arbitrary bitfield integer operations on strings",
        complexity: "O(1) for each subcommand specified",
        key_specs: &[
            KeySpec { notes: "This command allows both access and modification of the key", flags: RW | ACCESS | UPDATE | VARIABLE_FLAGS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        getkeys: Some(GetKeys::Bitfield),
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "operation", kind: "oneof", flags: OPTIONAL | MULTIPLE, args: &[
                    Arg { name: "encoding_offset", kind: "block", token: "GET", args: &[
                            Arg { name: "encoding", kind: "string", ..ARG },
                            Arg { name: "offset", kind: "integer", ..ARG },
                        ], ..ARG },
                    Arg { name: "write", kind: "block", args: &[
                            Arg { name: "wrap_sat_fail", kind: "oneof", token: "OVERFLOW", flags: OPTIONAL, args: &[
                                    Arg { name: "wrap", kind: "pure-token", token: "WRAP", ..ARG },
                                    Arg { name: "sat", kind: "pure-token", token: "SAT", ..ARG },
                                    Arg { name: "fail", kind: "pure-token", token: "FAIL", ..ARG },
                                ], ..ARG },
                            Arg { name: "write_operation", kind: "oneof", args: &[
                                    Arg { name: "encoding_offset_value", kind: "block", token: "SET", args: &[
                                            Arg { name: "encoding", kind: "string", ..ARG },
                                            Arg { name: "offset", kind: "integer", ..ARG },
                                            Arg { name: "value", kind: "integer", ..ARG },
                                        ], ..ARG },
                                    Arg { name: "encoding_offset_increment", kind: "block", token: "INCRBY", args: &[
                                            Arg { name: "encoding", kind: "string", ..ARG },
                                            Arg { name: "offset", kind: "integer", ..ARG },
                                            Arg { name: "increment", kind: "integer", ..ARG },
                                        ], ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bitfield_ro", container: "", arity: -2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@bitmap", "@fast"],
        group: "bitmap", since: "6.0.0",
        summary: "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
        complexity: "O(1) for each subcommand specified",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "encoding_offset", kind: "block", token: "GET", flags: OPTIONAL | MULTIPLE | MULTIPLE_TOKEN, args: &[
                    Arg { name: "encoding", kind: "string", ..ARG },
                    Arg { name: "offset", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bitop", container: "", arity: -4,
        flags: &["write", "denyoom"], range: (2, -1, 1),
        acl: &["@write", "@bitmap", "@slow"],
        group: "bitmap", since: "2.6.0",
        summary: "Perform bitwise operations between strings",
        complexity: "O(N)",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(2), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(3), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "operation", kind: "string", ..ARG },
            Arg { name: "destkey", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bitpos", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@bitmap", "@slow"],
        group: "bitmap", since: "2.8.7",
        summary: "Find first bit set or clear in a string",
        complexity: "O(N)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the `BYTE|BIT` option.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "bit", kind: "integer", ..ARG },
            Arg { name: "index", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "start", kind: "integer", ..ARG },
                    Arg { name: "end_index", kind: "block", flags: OPTIONAL, args: &[
                            Arg { name: "end", kind: "integer", ..ARG },
                            Arg { name: "index_unit", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                                    Arg { name: "byte", kind: "pure-token", token: "BYTE", ..ARG },
                                    Arg { name: "bit", kind: "pure-token", token: "BIT", ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "blmove", container: "", arity: 6,
        flags: &["write", "denyoom", "noscript", "blocking"], range: (1, 2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list", since: "6.2.0",
        summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "wherefrom", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
            Arg { name: "whereto", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "blmpop", container: "", arity: -5,
        flags: &["write", "blocking", "movablekeys"], range: (0, 0, 0),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list", since: "7.0.0",
        summary: "Pop elements from a list, or block until one is available",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Blmpop),
        args: &[
            Arg { name: "timeout", kind: "double", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "where", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "blpop", container: "", arity: -3,
        flags: &["write", "noscript", "blocking"], range: (1, -2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list", since: "2.0.0",
        summary: "Remove and get the first element in a list, or block until one is available",
        complexity: "O(N) where N is the number of provided keys.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(-2, 1, 0) },
        ],
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "brpop", container: "", arity: -3,
        flags: &["write", "noscript", "blocking"], range: (1, -2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list", since: "2.0.0",
        summary: "Remove and get the last element in a list, or block until one is available",
        complexity: "O(N) where N is the number of provided keys.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(-2, 1, 0) },
        ],
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "brpoplpush", container: "", arity: 4,
        flags: &["write", "denyoom", "noscript", "blocking"], range: (1, 2, 1),
        acl: &["@write", "@list", "@slow", "@blocking"],
        group: "list", since: "2.2.0",
        summary: "Pop an element from a list, push it to another list and return it; or block until one is available",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`BLMOVE` with the `RIGHT` and `LEFT` arguments",
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bzmpop", container: "", arity: -5,
        flags: &["write", "blocking", "movablekeys"], range: (0, 0, 0),
        acl: &["@write", "@sortedset", "@slow", "@blocking"],
        group: "sorted-set", since: "7.0.0",
        summary: "Remove and return members with scores in a sorted set or block until one is available",
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Blmpop),
        args: &[
            Arg { name: "timeout", kind: "double", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "where", kind: "oneof", args: &[
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bzpopmax", container: "", arity: -3,
        flags: &["write", "noscript", "blocking", "fast"], range: (1, -2, 1),
        acl: &["@write", "@sortedset", "@fast", "@blocking"],
        group: "sorted-set", since: "5.0.0",
        summary: "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(-2, 1, 0) },
        ],
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bzpopmin", container: "", arity: -3,
        flags: &["write", "noscript", "blocking", "fast"], range: (1, -2, 1),
        acl: &["@write", "@sortedset", "@fast", "@blocking"],
        group: "sorted-set", since: "5.0.0",
        summary: "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(-2, 1, 0) },
        ],
        history: &[("6.0.0", "`timeout` is interpreted as a double instead of an integer.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "timeout", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "client", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "connection", since: "2.4.0",
        summary: "A container for client connection commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "cluster", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "A container for cluster commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "command", container: "", arity: -1,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "2.8.13",
        summary: "Get array of Redis command details",
        complexity: "O(N) where N is the total number of Redis commands",
        tips: &["nondeterministic_output_order"],
        ..CMD
    },
    RedisCommand {
        name: "config", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "2.0.0",
        summary: "A container for server configuration commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "copy", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, 2, 1),
        acl: &["@keyspace", "@write", "@slow"],
        group: "generic", since: "6.2.0",
        summary: "Copy a key",
        complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "destination-db", kind: "integer", token: "DB", flags: OPTIONAL, ..ARG },
            Arg { name: "replace", kind: "pure-token", token: "REPLACE", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "dbsize", container: "", arity: 1,
        flags: &["readonly", "fast"], range: (0, 0, 0),
        acl: &["@keyspace", "@read", "@fast"],
        group: "server", since: "1.0.0",
        summary: "Return the number of keys in the selected database",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:agg_sum"],
        ..CMD
    },
    RedisCommand {
        name: "debug", container: "", arity: -2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "A container for debugging commands",
        complexity: "Depends on subcommand.",
        doc_flags: &["syscmd"],
        ..CMD
    },
    RedisCommand {
        name: "decr", container: "", arity: 2,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Decrement the integer value of a key by one",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "decrby", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Decrement the integer value of a key by the given number",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "decrement", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "del", container: "", arity: -2,
        flags: &["write"], range: (1, -1, 1),
        acl: &["@keyspace", "@write", "@slow"],
        group: "generic", since: "1.0.0",
        summary: "Delete a key",
        complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        key_specs: &[
            KeySpec { notes: "", flags: RM | DELETE, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "discard", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "fast", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@transaction"],
        group: "transactions", since: "2.0.0",
        summary: "Discard all commands issued after MULTI",
        complexity: "O(N), when N is the number of queued commands",
        ..CMD
    },
    RedisCommand {
        name: "dump", container: "", arity: 2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "2.6.0",
        summary: "Return a serialized version of the value stored at the specified key.",
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "echo", container: "", arity: 2,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "1.0.0",
        summary: "Echo the given string",
        complexity: "O(1)",
        args: &[
            Arg { name: "message", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "eval", container: "", arity: -3,
        flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Execute a Lua script server side",
        complexity: "Depends on the script that is executed.",
        key_specs: &[
            KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", flags: RW | ACCESS | UPDATE, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Eval),
        args: &[
            Arg { name: "script", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "eval_ro", container: "", arity: -3,
        flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Execute a read-only Lua script server side",
        complexity: "Depends on the script that is executed.",
        key_specs: &[
            KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Eval),
        args: &[
            Arg { name: "script", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "evalsha", container: "", arity: -3,
        flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Execute a Lua script server side",
        complexity: "Depends on the script that is executed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Eval),
        args: &[
            Arg { name: "sha1", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "evalsha_ro", container: "", arity: -3,
        flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Execute a read-only Lua script server side",
        complexity: "Depends on the script that is executed.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Eval),
        args: &[
            Arg { name: "sha1", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "exec", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "skip_slowlog"], range: (0, 0, 0),
        acl: &["@slow", "@transaction"],
        group: "transactions", since: "1.2.0",
        summary: "Execute all commands issued after MULTI",
        complexity: "Depends on commands in the transaction",
        ..CMD
    },
    RedisCommand {
        name: "exists", container: "", arity: -2,
        flags: &["readonly", "fast"], range: (1, -1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Determine if a key exists",
        complexity: "O(N) where N is the number of keys to check.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        history: &[("3.0.3", "Accepts multiple `key` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "expire", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Set a key's time to live in seconds",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "seconds", kind: "integer", ..ARG },
            Arg { name: "condition", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                    Arg { name: "gt", kind: "pure-token", token: "GT", ..ARG },
                    Arg { name: "lt", kind: "pure-token", token: "LT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "expireat", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "1.2.0",
        summary: "Set the expiration for a key as a UNIX timestamp",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "unix-time-seconds", kind: "unix-time", ..ARG },
            Arg { name: "condition", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                    Arg { name: "gt", kind: "pure-token", token: "GT", ..ARG },
                    Arg { name: "lt", kind: "pure-token", token: "LT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "expiretime", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "failover", container: "", arity: -1,
        flags: &["admin", "noscript", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.2.0",
        summary: "Start a coordinated failover between this server and one of its replicas.",
        complexity: "O(1)",
        args: &[
            Arg { name: "target", kind: "block", token: "TO", flags: OPTIONAL, args: &[
                    Arg { name: "host", kind: "string", ..ARG },
                    Arg { name: "port", kind: "integer", ..ARG },
                    Arg { name: "force", kind: "pure-token", token: "FORCE", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "abort", kind: "pure-token", token: "ABORT", flags: OPTIONAL, ..ARG },
            Arg { name: "milliseconds", kind: "integer", token: "TIMEOUT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "fcall", container: "", arity: -3,
        flags: &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Invoke a function",
        complexity: "Depends on the function that is executed.",
        key_specs: &[
            KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", flags: RW | ACCESS | UPDATE, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Function),
        args: &[
            Arg { name: "function", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "fcall_ro", container: "", arity: -3,
        flags: &["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Invoke a read-only function",
        complexity: "Depends on the function that is executed.",
        key_specs: &[
            KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Function),
        args: &[
            Arg { name: "function", kind: "string", ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "flushall", container: "", arity: -1,
        flags: &["write"], range: (0, 0, 0),
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Remove all keys from all databases",
        complexity: "O(N) where N is the total number of keys in all databases",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        args: &[
            Arg { name: "async", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "async", kind: "pure-token", token: "ASYNC", since: "4.0.0", ..ARG },
                    Arg { name: "sync", kind: "pure-token", token: "SYNC", since: "6.2.0", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "flushdb", container: "", arity: -1,
        flags: &["write"], range: (0, 0, 0),
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Remove all keys from the current database",
        complexity: "O(N) where N is the number of keys in the selected database",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        history: &[("4.0.0", "Added the `ASYNC` flushing mode modifier."), ("6.2.0", "Added the `SYNC` flushing mode modifier.")],
        args: &[
            Arg { name: "async", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "async", kind: "pure-token", token: "ASYNC", since: "4.0.0", ..ARG },
                    Arg { name: "sync", kind: "pure-token", token: "SYNC", since: "6.2.0", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "function", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "scripting", since: "7.0.0",
        summary: "A container for function commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "geoadd", container: "", arity: -5,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Add one or more geospatial items in the geospatial index represented using a sorted set",
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `CH`, `NX` and `XX` options.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "condition", kind: "oneof", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                ], ..ARG },
            Arg { name: "change", kind: "pure-token", token: "CH", since: "6.2.0", flags: OPTIONAL, ..ARG },
            Arg { name: "longitude_latitude_member", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "longitude", kind: "double", ..ARG },
                    Arg { name: "latitude", kind: "double", ..ARG },
                    Arg { name: "member", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "geodist", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Returns the distance between two members of a geospatial index",
        complexity: "O(log(N))",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member1", kind: "string", ..ARG },
            Arg { name: "member2", kind: "string", ..ARG },
            Arg { name: "unit", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "geohash", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Returns members of a geospatial index as standard geohash strings",
        complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "geopos", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Returns longitude and latitude of members of a geospatial index",
        complexity: "O(N) where N is the number of members requested.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "georadius", container: "", arity: -6,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Keyword("STORE", 6), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Keyword("STOREDIST", 6), find: Range(0, 1, 0) },
        ],
        getkeys: Some(GetKeys::Georadius),
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`."), ("7.0.0", "Added support for uppercase unit names.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "longitude", kind: "double", ..ARG },
            Arg { name: "latitude", kind: "double", ..ARG },
            Arg { name: "radius", kind: "double", ..ARG },
            Arg { name: "unit", kind: "oneof", args: &[
                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                ], ..ARG },
            Arg { name: "withcoord", kind: "pure-token", token: "WITHCOORD", flags: OPTIONAL, ..ARG },
            Arg { name: "withdist", kind: "pure-token", token: "WITHDIST", flags: OPTIONAL, ..ARG },
            Arg { name: "withhash", kind: "pure-token", token: "WITHHASH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", since: "6.2.0", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, token: "STORE", flags: OPTIONAL, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 2, token: "STOREDIST", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "georadius_ro", container: "", arity: -6,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "3.2.10",
        summary: "A read-only variant for GEORADIUS",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "longitude", kind: "double", ..ARG },
            Arg { name: "latitude", kind: "double", ..ARG },
            Arg { name: "radius", kind: "double", ..ARG },
            Arg { name: "unit", kind: "oneof", args: &[
                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                ], ..ARG },
            Arg { name: "withcoord", kind: "pure-token", token: "WITHCOORD", flags: OPTIONAL, ..ARG },
            Arg { name: "withdist", kind: "pure-token", token: "WITHDIST", flags: OPTIONAL, ..ARG },
            Arg { name: "withhash", kind: "pure-token", token: "WITHHASH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", since: "6.2.0", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "georadiusbymember", container: "", arity: -5,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@geo", "@slow"],
        group: "geo", since: "3.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Keyword("STORE", 5), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Keyword("STOREDIST", 5), find: Range(0, 1, 0) },
        ],
        getkeys: Some(GetKeys::Georadius),
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
            Arg { name: "radius", kind: "double", ..ARG },
            Arg { name: "unit", kind: "oneof", args: &[
                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                ], ..ARG },
            Arg { name: "withcoord", kind: "pure-token", token: "WITHCOORD", flags: OPTIONAL, ..ARG },
            Arg { name: "withdist", kind: "pure-token", token: "WITHDIST", flags: OPTIONAL, ..ARG },
            Arg { name: "withhash", kind: "pure-token", token: "WITHHASH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, token: "STORE", flags: OPTIONAL, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 2, token: "STOREDIST", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "georadiusbymember_ro", container: "", arity: -5,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "3.2.10",
        summary: "A read-only variant for GEORADIUSBYMEMBER",
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
            Arg { name: "radius", kind: "double", ..ARG },
            Arg { name: "unit", kind: "oneof", args: &[
                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                ], ..ARG },
            Arg { name: "withcoord", kind: "pure-token", token: "WITHCOORD", flags: OPTIONAL, ..ARG },
            Arg { name: "withdist", kind: "pure-token", token: "WITHDIST", flags: OPTIONAL, ..ARG },
            Arg { name: "withhash", kind: "pure-token", token: "WITHHASH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "geosearch", container: "", arity: -7,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@geo", "@slow"],
        group: "geo", since: "6.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "from", kind: "oneof", args: &[
                    Arg { name: "member", kind: "string", token: "FROMMEMBER", ..ARG },
                    Arg { name: "longitude_latitude", kind: "block", token: "FROMLONLAT", args: &[
                            Arg { name: "longitude", kind: "double", ..ARG },
                            Arg { name: "latitude", kind: "double", ..ARG },
                        ], ..ARG },
                ], ..ARG },
            Arg { name: "by", kind: "oneof", args: &[
                    Arg { name: "circle", kind: "block", args: &[
                            Arg { name: "radius", kind: "double", token: "BYRADIUS", ..ARG },
                            Arg { name: "unit", kind: "oneof", args: &[
                                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                    Arg { name: "box", kind: "block", args: &[
                            Arg { name: "width", kind: "double", token: "BYBOX", ..ARG },
                            Arg { name: "height", kind: "double", ..ARG },
                            Arg { name: "unit", kind: "oneof", args: &[
                                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "withcoord", kind: "pure-token", token: "WITHCOORD", flags: OPTIONAL, ..ARG },
            Arg { name: "withdist", kind: "pure-token", token: "WITHDIST", flags: OPTIONAL, ..ARG },
            Arg { name: "withhash", kind: "pure-token", token: "WITHHASH", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "geosearchstore", container: "", arity: -8,
        flags: &["write", "denyoom"], range: (1, 2, 1),
        acl: &["@write", "@geo", "@slow"],
        group: "geo", since: "6.2.0",
        summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "source", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "from", kind: "oneof", args: &[
                    Arg { name: "member", kind: "string", token: "FROMMEMBER", ..ARG },
                    Arg { name: "longitude_latitude", kind: "block", token: "FROMLONLAT", args: &[
                            Arg { name: "longitude", kind: "double", ..ARG },
                            Arg { name: "latitude", kind: "double", ..ARG },
                        ], ..ARG },
                ], ..ARG },
            Arg { name: "by", kind: "oneof", args: &[
                    Arg { name: "circle", kind: "block", args: &[
                            Arg { name: "radius", kind: "double", token: "BYRADIUS", ..ARG },
                            Arg { name: "unit", kind: "oneof", args: &[
                                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                    Arg { name: "box", kind: "block", args: &[
                            Arg { name: "width", kind: "double", token: "BYBOX", ..ARG },
                            Arg { name: "height", kind: "double", ..ARG },
                            Arg { name: "unit", kind: "oneof", args: &[
                                    Arg { name: "m", kind: "pure-token", token: "M", ..ARG },
                                    Arg { name: "km", kind: "pure-token", token: "KM", ..ARG },
                                    Arg { name: "ft", kind: "pure-token", token: "FT", ..ARG },
                                    Arg { name: "mi", kind: "pure-token", token: "MI", ..ARG },
                                ], ..ARG },
                        ], ..ARG },
                ], ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", ..ARG },
                    Arg { name: "any", kind: "pure-token", token: "ANY", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "storedist", kind: "pure-token", token: "STOREDIST", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "get", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Get the value of a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getbit", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@bitmap", "@fast"],
        group: "bitmap", since: "2.2.0",
        summary: "Returns the bit value at offset in the string value stored at key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "offset", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getdel", container: "", arity: 2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "6.2.0",
        summary: "Get the value of a key and delete the key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getex", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "6.2.0",
        summary: "Get the value of a key and optionally set its expiration",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "RW and UPDATE because it changes the TTL", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "expiration", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "seconds", kind: "integer", token: "EX", ..ARG },
                    Arg { name: "milliseconds", kind: "integer", token: "PX", ..ARG },
                    Arg { name: "unix-time-seconds", kind: "unix-time", token: "EXAT", ..ARG },
                    Arg { name: "unix-time-milliseconds", kind: "unix-time", token: "PXAT", ..ARG },
                    Arg { name: "persist", kind: "pure-token", token: "PERSIST", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getrange", container: "", arity: 4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@string", "@slow"],
        group: "string", since: "2.4.0",
        summary: "Get a substring of the string stored at a key",
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "end", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getset", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Set the string value of a key and return its old value",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`SET` with the `!GET` argument",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hdel", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Delete one or more hash fields",
        complexity: "O(N) where N is the number of fields to be removed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple `field` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hello", container: "", arity: -1,
        flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "6.0.0",
        summary: "Handshake with Redis",
        complexity: "O(1)",
        history: &[("6.2.0", "`protover` made optional; when called without arguments the command reports the current connection's context.")],
        args: &[
            Arg { name: "arguments", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "protover", kind: "integer", ..ARG },
                    Arg { name: "username_password", kind: "block", token: "AUTH", flags: OPTIONAL, args: &[
                            Arg { name: "username", kind: "string", ..ARG },
                            Arg { name: "password", kind: "string", ..ARG },
                        ], ..ARG },
                    Arg { name: "clientname", kind: "string", token: "SETNAME", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hexists", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Determine if a hash field exists",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hget", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Get the value of a hash field",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hgetall", container: "", arity: 2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash", since: "2.0.0",
        summary: "Get all the fields and values in a hash",
        complexity: "O(N) where N is the size of the hash.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hincrby", container: "", arity: 4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Increment the integer value of a hash field by the given number",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
            Arg { name: "increment", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hincrbyfloat", container: "", arity: 4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.6.0",
        summary: "Increment the float value of a hash field by the given amount",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
            Arg { name: "increment", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hkeys", container: "", arity: 2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash", since: "2.0.0",
        summary: "Get all the fields in a hash",
        complexity: "O(N) where N is the size of the hash.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hlen", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Get the number of fields in a hash",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hmget", container: "", arity: -3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Get the values of all the given hash fields",
        complexity: "O(N) where N is the number of fields being requested.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hmset", container: "", arity: -4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Set multiple hash fields to multiple values",
        complexity: "O(N) where N is the number of fields being set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "4.0.0",
        replaced_by: "`HSET` with multiple field-value pairs",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "field", kind: "string", ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hrandfield", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash", since: "6.2.0",
        summary: "Get one or multiple random fields from a hash",
        complexity: "O(N) where N is the number of fields returned",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "options", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", ..ARG },
                    Arg { name: "withvalues", kind: "pure-token", token: "WITHVALUES", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hscan", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash", since: "2.8.0",
        summary: "Incrementally iterate hash fields and associated values",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "cursor", kind: "integer", ..ARG },
            Arg { name: "pattern", kind: "pattern", token: "MATCH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hset", container: "", arity: -4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Set the string value of a hash field",
        complexity: "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("4.0.0", "Accepts multiple `field` and `value` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "field", kind: "string", ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hsetnx", container: "", arity: 4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hash", "@fast"],
        group: "hash", since: "2.0.0",
        summary: "Set the value of a hash field, only if the field does not exist",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hstrlen", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@fast"],
        group: "hash", since: "3.2.0",
        summary: "Get the length of the value of a hash field",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "field", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "hvals", container: "", arity: 2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@hash", "@slow"],
        group: "hash", since: "2.0.0",
        summary: "Get all the values in a hash",
        complexity: "O(N) where N is the size of the hash.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "incr", container: "", arity: 2,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Increment the integer value of a key by one",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "incrby", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Increment the integer value of a key by the given amount",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "increment", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "incrbyfloat", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "2.6.0",
        summary: "Increment the float value of a key by the given amount",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "increment", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "info", container: "", arity: -1,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Get information and statistics about the server",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        history: &[("7.0.0", "Added support for taking multiple section arguments.")],
        args: &[
            Arg { name: "section", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "keys", container: "", arity: 2,
        flags: &["readonly"], range: (0, 0, 0),
        acl: &["@keyspace", "@read", "@slow", "@dangerous"],
        group: "generic", since: "1.0.0",
        summary: "Find all keys matching the given pattern",
        complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
        tips: &["request_policy:all_shards", "nondeterministic_output_order"],
        args: &[
            Arg { name: "pattern", kind: "pattern", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lastsave", container: "", arity: 1,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@admin", "@fast", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Get the UNIX time stamp of the last successful save to disk",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "latency", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "2.8.13",
        summary: "A container for latency diagnostics commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "lcs", container: "", arity: -3,
        flags: &["readonly"], range: (1, 2, 1),
        acl: &["@read", "@string", "@slow"],
        group: "string", since: "7.0.0",
        summary: "Find longest common substring",
        complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(1, 1, 0) },
        ],
        args: &[
            Arg { name: "key1", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "key2", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "len", kind: "pure-token", token: "LEN", flags: OPTIONAL, ..ARG },
            Arg { name: "idx", kind: "pure-token", token: "IDX", flags: OPTIONAL, ..ARG },
            Arg { name: "len", kind: "integer", token: "MINMATCHLEN", flags: OPTIONAL, ..ARG },
            Arg { name: "withmatchlen", kind: "pure-token", token: "WITHMATCHLEN", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lindex", container: "", arity: 3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@list", "@slow"],
        group: "list", since: "1.0.0",
        summary: "Get an element from a list by its index",
        complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "index", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "linsert", container: "", arity: 5,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "2.2.0",
        summary: "Insert an element before or after another element in a list",
        complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "where", kind: "oneof", args: &[
                    Arg { name: "before", kind: "pure-token", token: "BEFORE", ..ARG },
                    Arg { name: "after", kind: "pure-token", token: "AFTER", ..ARG },
                ], ..ARG },
            Arg { name: "pivot", kind: "string", ..ARG },
            Arg { name: "element", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "llen", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@list", "@fast"],
        group: "list", since: "1.0.0",
        summary: "Get the length of a list",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lmove", container: "", arity: 5,
        flags: &["write", "denyoom"], range: (1, 2, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "6.2.0",
        summary: "Pop an element from a list, push it to another list and return it",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "wherefrom", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
            Arg { name: "whereto", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lmpop", container: "", arity: -4,
        flags: &["write", "movablekeys"], range: (0, 0, 0),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "7.0.0",
        summary: "Pop elements from a list",
        complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Lmpop),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "where", kind: "oneof", args: &[
                    Arg { name: "left", kind: "pure-token", token: "LEFT", ..ARG },
                    Arg { name: "right", kind: "pure-token", token: "RIGHT", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lolwut", container: "", arity: -1,
        flags: &["readonly", "fast"], range: (0, 0, 0),
        acl: &["@read", "@fast"],
        group: "server", since: "5.0.0",
        summary: "Display some computer art and the Redis version",
        args: &[
            Arg { name: "version", kind: "integer", token: "VERSION", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lpop", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "1.0.0",
        summary: "Remove and get the first elements in a list",
        complexity: "O(N) where N is the number of elements returned",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `count` argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", since: "6.2.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lpos", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@list", "@slow"],
        group: "list", since: "6.0.6",
        summary: "Return the index of matching elements on a list",
        complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", ..ARG },
            Arg { name: "rank", kind: "integer", token: "RANK", flags: OPTIONAL, ..ARG },
            Arg { name: "num-matches", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "len", kind: "integer", token: "MAXLEN", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lpush", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "1.0.0",
        summary: "Prepend one or multiple elements to a list",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple `element` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lpushx", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "2.2.0",
        summary: "Prepend an element to a list, only if the list exists",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("4.0.0", "Accepts multiple `element` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lrange", container: "", arity: 4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@list", "@slow"],
        group: "list", since: "1.0.0",
        summary: "Get a range of elements from a list",
        complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "stop", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lrem", container: "", arity: 4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "1.0.0",
        summary: "Remove elements from a list",
        complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", ..ARG },
            Arg { name: "element", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "lset", container: "", arity: 4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "1.0.0",
        summary: "Set the value of an element in a list by its index",
        complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "index", kind: "integer", ..ARG },
            Arg { name: "element", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "ltrim", container: "", arity: 4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "1.0.0",
        summary: "Trim a list to the specified range",
        complexity: "O(N) where N is the number of elements to be removed by the operation.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "stop", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "memory", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "A container for memory diagnostics commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "mget", container: "", arity: -2,
        flags: &["readonly", "fast"], range: (1, -1, 1),
        acl: &["@read", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Get the values of all the given keys",
        complexity: "O(N) where N is the number of keys to retrieve.",
        tips: &["request_policy:multi_shard"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "migrate", container: "", arity: -6,
        flags: &["write", "movablekeys"], range: (3, 3, 1),
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        group: "generic", since: "2.6.0",
        summary: "Atomically transfer a key from a Redis instance to another one.",
        complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(3), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | ACCESS | DELETE | INCOMPLETE, begin: Keyword("KEYS", -2), find: Range(-1, 1, 0) },
        ],
        getkeys: Some(GetKeys::Migrate),
        history: &[("3.0.0", "Added the `COPY` and `REPLACE` options."), ("3.0.6", "Added the `KEYS` option."), ("4.0.7", "Added the `AUTH` option."), ("6.0.0", "Added the `AUTH2` option.")],
        args: &[
            Arg { name: "host", kind: "string", ..ARG },
            Arg { name: "port", kind: "integer", ..ARG },
            Arg { name: "key_or_empty_string", kind: "oneof", args: &[
                    Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
                    Arg { name: "empty_string", kind: "pure-token", token: "\"\"", ..ARG },
                ], ..ARG },
            Arg { name: "destination-db", kind: "integer", ..ARG },
            Arg { name: "timeout", kind: "integer", ..ARG },
            Arg { name: "copy", kind: "pure-token", token: "COPY", since: "3.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "replace", kind: "pure-token", token: "REPLACE", since: "3.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "authentication", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "password", kind: "string", token: "AUTH", since: "4.0.7", flags: OPTIONAL, ..ARG },
                    Arg { name: "username_password", kind: "block", token: "AUTH2", since: "6.0.0", flags: OPTIONAL, args: &[
                            Arg { name: "username", kind: "string", ..ARG },
                            Arg { name: "password", kind: "string", ..ARG },
                        ], ..ARG },
                ], ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, token: "KEYS", since: "3.0.6", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "module", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "A container for module commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "monitor", container: "", arity: 1,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Listen for all requests received by the server in real time",
        ..CMD
    },
    RedisCommand {
        name: "move", container: "", arity: 3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Move a key to another database",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "db", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "mset", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, -1, 2),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "1.0.1",
        summary: "Set multiple keys to multiple values",
        complexity: "O(N) where N is the number of keys to set.",
        tips: &["request_policy:multi_shard", "response_policy:all_succeeded"],
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(-1, 2, 0) },
        ],
        args: &[
            Arg { name: "key_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "msetnx", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, -1, 2),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "1.0.1",
        summary: "Set multiple keys to multiple values, only if none of the keys exist",
        complexity: "O(N) where N is the number of keys to set.",
        tips: &["request_policy:multi_shard", "response_policy:agg_min"],
        key_specs: &[
            KeySpec { notes: "", flags: OW | INSERT, begin: Index(1), find: Range(-1, 2, 0) },
        ],
        args: &[
            Arg { name: "key_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "multi", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "fast", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@transaction"],
        group: "transactions", since: "1.2.0",
        summary: "Mark the start of a transaction block",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "object", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "generic", since: "2.2.3",
        summary: "A container for object introspection commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "persist", container: "", arity: 2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "2.2.0",
        summary: "Remove the expiration from a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pexpire", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "2.6.0",
        summary: "Set a key's time to live in milliseconds",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "milliseconds", kind: "integer", ..ARG },
            Arg { name: "condition", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                    Arg { name: "gt", kind: "pure-token", token: "GT", ..ARG },
                    Arg { name: "lt", kind: "pure-token", token: "LT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pexpireat", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "2.6.0",
        summary: "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added options: `NX`, `XX`, `GT` and `LT`.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "unix-time-milliseconds", kind: "unix-time", ..ARG },
            Arg { name: "condition", kind: "oneof", since: "7.0.0", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                    Arg { name: "gt", kind: "pure-token", token: "GT", ..ARG },
                    Arg { name: "lt", kind: "pure-token", token: "LT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pexpiretime", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "7.0.0",
        summary: "Get the expiration Unix timestamp for a key in milliseconds",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pfadd", container: "", arity: -2,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@hyperloglog", "@fast"],
        group: "hyperloglog", since: "2.8.9",
        summary: "Adds the specified elements to the specified HyperLogLog.",
        complexity: "O(1) to add every element.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pfcount", container: "", arity: -2,
        flags: &["readonly"], range: (1, -1, 1),
        acl: &["@read", "@hyperloglog", "@slow"],
        group: "hyperloglog", since: "2.8.9",
        summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
        complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
        key_specs: &[
            KeySpec { notes: "RW because it may change the internal representation of the key, and propagate to replicas", flags: RW | ACCESS, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pfdebug", container: "", arity: 3,
        flags: &["write", "denyoom", "admin"], range: (2, 2, 1),
        acl: &["@write", "@hyperloglog", "@admin", "@slow", "@dangerous"],
        group: "hyperloglog", since: "2.8.9",
        summary: "Internal commands for debugging HyperLogLog values",
        complexity: "N/A",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        doc_flags: &["syscmd"],
        args: &[
            Arg { name: "subcommand", kind: "string", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pfmerge", container: "", arity: -2,
        flags: &["write", "denyoom"], range: (1, -1, 1),
        acl: &["@write", "@hyperloglog", "@slow"],
        group: "hyperloglog", since: "2.8.9",
        summary: "Merge N different HyperLogLogs into a single one.",
        complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | INSERT, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "destkey", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "sourcekey", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pfselftest", container: "", arity: 1,
        flags: &["admin"], range: (0, 0, 0),
        acl: &["@hyperloglog", "@admin", "@slow", "@dangerous"],
        group: "hyperloglog", since: "2.8.9",
        summary: "An internal command for testing HyperLogLog values",
        complexity: "N/A",
        doc_flags: &["syscmd"],
        ..CMD
    },
    RedisCommand {
        name: "ping", container: "", arity: -1,
        flags: &["fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "1.0.0",
        summary: "Ping the server",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "message", kind: "string", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "psetex", container: "", arity: 4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "2.6.0",
        summary: "Set the value and expiration in milliseconds of a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "milliseconds", kind: "integer", ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "psubscribe", container: "", arity: -2,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.0.0",
        summary: "Listen for messages published to channels matching the given patterns",
        complexity: "O(N) where N is the number of patterns the client is already subscribed to.",
        args: &[
            Arg { name: "pattern", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "pattern", kind: "pattern", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "psync", container: "", arity: -3,
        flags: &["admin", "noscript", "no_async_loading", "no_multi"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.0",
        summary: "Internal command used for replication",
        args: &[
            Arg { name: "replicationid", kind: "string", ..ARG },
            Arg { name: "offset", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pttl", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "2.6.0",
        summary: "Get the time to live for a key in milliseconds",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.8.0", "Added the -2 reply.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "publish", container: "", arity: 3,
        flags: &["pubsub", "loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@pubsub", "@fast"],
        group: "pubsub", since: "2.0.0",
        summary: "Post a message to a channel",
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        args: &[
            Arg { name: "channel", kind: "string", ..ARG },
            Arg { name: "message", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pubsub", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "pubsub", since: "2.8.0",
        summary: "A container for Pub/Sub commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "punsubscribe", container: "", arity: -1,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.0.0",
        summary: "Stop listening for messages posted to channels matching the given patterns",
        complexity: "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
        args: &[
            Arg { name: "pattern", kind: "pattern", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "quit", container: "", arity: -1,
        flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "1.0.0",
        summary: "Close the connection",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "randomkey", container: "", arity: 1,
        flags: &["readonly"], range: (0, 0, 0),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "1.0.0",
        summary: "Return a random key from the keyspace",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "readonly", container: "", arity: 1,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "cluster", since: "3.0.0",
        summary: "Enables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "readwrite", container: "", arity: 1,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "cluster", since: "3.0.0",
        summary: "Disables read queries for a connection to a cluster replica node",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "rename", container: "", arity: 3,
        flags: &["write"], range: (1, 2, 1),
        acl: &["@keyspace", "@write", "@slow"],
        group: "generic", since: "1.0.0",
        summary: "Rename a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "newkey", kind: "key", key_spec_index: 1, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "renamenx", container: "", arity: 3,
        flags: &["write", "fast"], range: (1, 2, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Rename a key, only if the new key does not exist",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: OW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("3.2.0", "The command no longer returns an error when source and destination names are the same.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "newkey", kind: "key", key_spec_index: 1, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "replconf", container: "", arity: -1,
        flags: &["admin", "noscript", "loading", "stale", "allow_busy"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "3.0.0",
        summary: "An internal command for configuring the replication stream",
        complexity: "O(1)",
        doc_flags: &["syscmd"],
        ..CMD
    },
    RedisCommand {
        name: "replicaof", container: "", arity: 3,
        flags: &["admin", "noscript", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "5.0.0",
        summary: "Make the server a replica of another instance, or promote it as master.",
        complexity: "O(1)",
        args: &[
            Arg { name: "args", kind: "oneof", args: &[
                    Arg { name: "host-port", kind: "block", args: &[
                            Arg { name: "host", kind: "string", ..ARG },
                            Arg { name: "port", kind: "integer", ..ARG },
                        ], ..ARG },
                    Arg { name: "no-one", kind: "block", args: &[
                            Arg { name: "no", kind: "pure-token", token: "NO", ..ARG },
                            Arg { name: "one", kind: "pure-token", token: "ONE", ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "reset", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "6.2.0",
        summary: "Reset the connection",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "restore", container: "", arity: -4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        group: "generic", since: "2.6.0",
        summary: "Create a key using the provided serialized value, previously obtained using DUMP.",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "ttl", kind: "integer", ..ARG },
            Arg { name: "serialized-value", kind: "string", ..ARG },
            Arg { name: "replace", kind: "pure-token", token: "REPLACE", since: "3.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "absttl", kind: "pure-token", token: "ABSTTL", since: "5.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "seconds", kind: "integer", token: "IDLETIME", since: "5.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "frequency", kind: "integer", token: "FREQ", since: "5.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "restore-asking", container: "", arity: -4,
        flags: &["write", "denyoom", "asking"], range: (1, 1, 1),
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        group: "server", since: "3.0.0",
        summary: "An internal command for migrating keys in a cluster",
        complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["syscmd"],
        history: &[("3.0.0", "Added the `REPLACE` modifier."), ("5.0.0", "Added the `ABSTTL` modifier."), ("5.0.0", "Added the `IDLETIME` and `FREQ` options.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "ttl", kind: "integer", ..ARG },
            Arg { name: "serialized-value", kind: "string", ..ARG },
            Arg { name: "replace", kind: "pure-token", token: "REPLACE", since: "3.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "absttl", kind: "pure-token", token: "ABSTTL", since: "5.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "seconds", kind: "integer", token: "IDLETIME", since: "5.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "frequency", kind: "integer", token: "FREQ", since: "5.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "role", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@admin", "@fast", "@dangerous"],
        group: "server", since: "2.8.12",
        summary: "Return the role of the instance in the context of replication",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "rpop", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "1.0.0",
        summary: "Remove and get the last elements in a list",
        complexity: "O(N) where N is the number of elements returned",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `count` argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", since: "6.2.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "rpoplpush", container: "", arity: 3,
        flags: &["write", "denyoom"], range: (1, 2, 1),
        acl: &["@write", "@list", "@slow"],
        group: "list", since: "1.2.0",
        summary: "Remove the last element in a list, prepend it to another list and return it",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`LMOVE` with the `RIGHT` and `LEFT` arguments",
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "rpush", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "1.0.0",
        summary: "Append one or multiple elements to a list",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple `element` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "rpushx", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@list", "@fast"],
        group: "list", since: "2.2.0",
        summary: "Append an element to a list, only if the list exists",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("4.0.0", "Accepts multiple `element` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "element", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sadd", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Add one or more members to a set",
        complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple `member` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "save", container: "", arity: 1,
        flags: &["admin", "noscript", "no_async_loading", "no_multi"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Synchronously save the dataset to disk",
        complexity: "O(N) where N is the total number of keys in all databases",
        ..CMD
    },
    RedisCommand {
        name: "scan", container: "", arity: -2,
        flags: &["readonly"], range: (0, 0, 0),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "2.8.0",
        summary: "Incrementally iterate the keys space",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
        tips: &["nondeterministic_output", "request_policy:special"],
        history: &[("6.0.0", "Added the `TYPE` subcommand.")],
        args: &[
            Arg { name: "cursor", kind: "integer", ..ARG },
            Arg { name: "pattern", kind: "pattern", token: "MATCH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "type", kind: "string", token: "TYPE", since: "6.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "scard", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Get the number of members in a set",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "script", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "scripting", since: "2.6.0",
        summary: "A container for Lua scripts management commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "sdiff", container: "", arity: -2,
        flags: &["readonly"], range: (1, -1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Subtract multiple sets",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sdiffstore", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, -1, 1),
        acl: &["@write", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Subtract multiple sets and store the resulting set in a key",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "select", container: "", arity: 2,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@fast", "@connection"],
        group: "connection", since: "1.0.0",
        summary: "Change the selected database for the current connection",
        complexity: "O(1)",
        args: &[
            Arg { name: "index", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "set", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "1.0.0",
        summary: "Set the string value of a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "RW and ACCESS due to the optional `GET` argument", flags: RW | ACCESS | UPDATE | VARIABLE_FLAGS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        getkeys: Some(GetKeys::Set),
        history: &[("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."), ("6.0.0", "Added the `KEEPTTL` option."), ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."), ("7.0.0", "Allowed the `NX` and `GET` options to be used together.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
            Arg { name: "condition", kind: "oneof", since: "2.6.12", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                ], ..ARG },
            Arg { name: "get", kind: "pure-token", token: "GET", since: "6.2.0", flags: OPTIONAL, ..ARG },
            Arg { name: "expiration", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "seconds", kind: "integer", token: "EX", since: "2.6.12", ..ARG },
                    Arg { name: "milliseconds", kind: "integer", token: "PX", since: "2.6.12", ..ARG },
                    Arg { name: "unix-time-seconds", kind: "unix-time", token: "EXAT", since: "6.2.0", ..ARG },
                    Arg { name: "unix-time-milliseconds", kind: "unix-time", token: "PXAT", since: "6.2.0", ..ARG },
                    Arg { name: "keepttl", kind: "pure-token", token: "KEEPTTL", since: "6.0.0", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setbit", container: "", arity: 4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@bitmap", "@slow"],
        group: "bitmap", since: "2.2.0",
        summary: "Sets or clears the bit at offset in the string value stored at key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "offset", kind: "integer", ..ARG },
            Arg { name: "value", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setex", container: "", arity: 4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "2.0.0",
        summary: "Set the value and expiration of a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "seconds", kind: "integer", ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setnx", container: "", arity: 3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@string", "@fast"],
        group: "string", since: "1.0.0",
        summary: "Set the value of a key, only if the key does not exist",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: OW | INSERT, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setrange", container: "", arity: 4,
        flags: &["write", "denyoom"], range: (1, 1, 1),
        acl: &["@write", "@string", "@slow"],
        group: "string", since: "2.2.0",
        summary: "Overwrite part of a string at key starting at the specified offset",
        complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "offset", kind: "integer", ..ARG },
            Arg { name: "value", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "shutdown", container: "", arity: -1,
        flags: &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Synchronously save the dataset to disk and then shut down the server",
        complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
        history: &[("7.0.0", "Added the `NOW`, `FORCE` and `ABORT` modifiers.")],
        args: &[
            Arg { name: "nosave_save", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "nosave", kind: "pure-token", token: "NOSAVE", ..ARG },
                    Arg { name: "save", kind: "pure-token", token: "SAVE", ..ARG },
                ], ..ARG },
            Arg { name: "now", kind: "pure-token", token: "NOW", since: "7.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "force", kind: "pure-token", token: "FORCE", since: "7.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "abort", kind: "pure-token", token: "ABORT", since: "7.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sinter", container: "", arity: -2,
        flags: &["readonly"], range: (1, -1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Intersect multiple sets",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sintercard", container: "", arity: -3,
        flags: &["readonly", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "7.0.0",
        summary: "Intersect multiple sets and return the cardinality of the result",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Sintercard),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "limit", kind: "integer", token: "LIMIT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sinterstore", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, -1, 1),
        acl: &["@write", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Intersect multiple sets and store the resulting set in a key",
        complexity: "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sismember", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Determine if a given value is a member of a set",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "slaveof", container: "", arity: 3,
        flags: &["admin", "noscript", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Make the server a replica of another instance, or promote it as master.",
        complexity: "O(1)",
        doc_flags: &["deprecated"],
        deprecated_since: "5.0.0",
        replaced_by: "`REPLICAOF`",
        args: &[
            Arg { name: "args", kind: "oneof", args: &[
                    Arg { name: "host-port", kind: "block", args: &[
                            Arg { name: "host", kind: "string", ..ARG },
                            Arg { name: "port", kind: "integer", ..ARG },
                        ], ..ARG },
                    Arg { name: "no-one", kind: "block", args: &[
                            Arg { name: "no", kind: "pure-token", token: "NO", ..ARG },
                            Arg { name: "one", kind: "pure-token", token: "ONE", ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "slowlog", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "2.2.12",
        summary: "A container for slow log commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "smembers", container: "", arity: 2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Get all the members in a set",
        complexity: "O(N) where N is the set cardinality.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "smismember", container: "", arity: -3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@set", "@fast"],
        group: "set", since: "6.2.0",
        summary: "Returns the membership associated with the given elements for a set",
        complexity: "O(N) where N is the number of elements being checked for membership",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "smove", container: "", arity: 4,
        flags: &["write", "fast"], range: (1, 2, 1),
        acl: &["@write", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Move a member from one set to another",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "source", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sort", container: "", arity: -2,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@set", "@sortedset", "@list", "@slow", "@dangerous"],
        group: "generic", since: "1.0.0",
        summary: "Sort the elements in a list, set or sorted set",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort", flags: RO | ACCESS, begin: Begin::Unknown, find: Find::Unknown },
            KeySpec { notes: "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array", flags: OW | UPDATE, begin: Begin::Unknown, find: Find::Unknown },
        ],
        getkeys: Some(GetKeys::Sort),
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "pattern", kind: "pattern", key_spec_index: 1, token: "BY", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
            Arg { name: "pattern", kind: "pattern", key_spec_index: 1, token: "GET", flags: OPTIONAL | MULTIPLE | MULTIPLE_TOKEN, ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "sorting", kind: "pure-token", token: "ALPHA", flags: OPTIONAL, ..ARG },
            Arg { name: "destination", kind: "key", key_spec_index: 2, token: "STORE", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sort_ro", container: "", arity: -2,
        flags: &["readonly", "movablekeys"], range: (1, 1, 1),
        acl: &["@read", "@set", "@sortedset", "@list", "@slow", "@dangerous"],
        group: "generic", since: "7.0.0",
        summary: "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        complexity: "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort", flags: RO | ACCESS, begin: Begin::Unknown, find: Find::Unknown },
        ],
        getkeys: Some(GetKeys::SortRo),
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "pattern", kind: "pattern", key_spec_index: 1, token: "BY", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
            Arg { name: "pattern", kind: "pattern", key_spec_index: 1, token: "GET", flags: OPTIONAL | MULTIPLE | MULTIPLE_TOKEN, ..ARG },
            Arg { name: "order", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "asc", kind: "pure-token", token: "ASC", ..ARG },
                    Arg { name: "desc", kind: "pure-token", token: "DESC", ..ARG },
                ], ..ARG },
            Arg { name: "sorting", kind: "pure-token", token: "ALPHA", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "spop", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Remove and return one or multiple random members from a set",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("3.2.0", "Added the `count` argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", since: "3.2.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "spublish", container: "", arity: 3,
        flags: &["pubsub", "loading", "stale", "fast"], range: (1, 1, 1),
        acl: &["@pubsub", "@fast"],
        group: "pubsub", since: "7.0.0",
        summary: "Post a message to a shard channel",
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        key_specs: &[
            KeySpec { notes: "", flags: NOT_KEY, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "shardchannel", kind: "string", ..ARG },
            Arg { name: "message", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "srandmember", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Get one or multiple random members from a set",
        complexity: "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.6.0", "Added the optional `count` argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", since: "2.6.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "srem", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@set", "@fast"],
        group: "set", since: "1.0.0",
        summary: "Remove one or more members from a set",
        complexity: "O(N) where N is the number of members to be removed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple `member` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sscan", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "2.8.0",
        summary: "Incrementally iterate Set elements",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "cursor", kind: "integer", ..ARG },
            Arg { name: "pattern", kind: "pattern", token: "MATCH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "ssubscribe", container: "", arity: -2,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (1, -1, 1),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "7.0.0",
        summary: "Listen for messages published to the given shard channels",
        complexity: "O(N) where N is the number of shard channels to subscribe to.",
        key_specs: &[
            KeySpec { notes: "", flags: NOT_KEY, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "shardchannel", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "strlen", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@string", "@fast"],
        group: "string", since: "2.2.0",
        summary: "Get the length of the value stored in a key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "subscribe", container: "", arity: -2,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.0.0",
        summary: "Listen for messages published to the given channels",
        complexity: "O(N) where N is the number of channels to subscribe to.",
        args: &[
            Arg { name: "channel", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "substr", container: "", arity: 4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@string", "@slow"],
        group: "string", since: "1.0.0",
        summary: "Get a substring of the string stored at a key",
        complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "2.0.0",
        replaced_by: "`GETRANGE`",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "end", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sunion", container: "", arity: -2,
        flags: &["readonly"], range: (1, -1, 1),
        acl: &["@read", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Add multiple sets",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        tips: &["nondeterministic_output_order"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sunionstore", container: "", arity: -3,
        flags: &["write", "denyoom"], range: (1, -1, 1),
        acl: &["@write", "@set", "@slow"],
        group: "set", since: "1.0.0",
        summary: "Add multiple sets and store the resulting set in a key",
        complexity: "O(N) where N is the total number of elements in all given sets.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sunsubscribe", container: "", arity: -1,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (1, -1, 1),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "7.0.0",
        summary: "Stop listening for messages posted to the given shard channels",
        complexity: "O(N) where N is the number of clients already subscribed to a shard channel.",
        key_specs: &[
            KeySpec { notes: "", flags: NOT_KEY, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "shardchannel", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "swapdb", container: "", arity: 3,
        flags: &["write", "fast"], range: (0, 0, 0),
        acl: &["@keyspace", "@write", "@fast", "@dangerous"],
        group: "server", since: "4.0.0",
        summary: "Swaps two Redis databases",
        complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
        args: &[
            Arg { name: "index1", kind: "integer", ..ARG },
            Arg { name: "index2", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "sync", container: "", arity: 1,
        flags: &["admin", "noscript", "no_async_loading", "no_multi"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "1.0.0",
        summary: "Internal command used for replication",
        ..CMD
    },
    RedisCommand {
        name: "time", container: "", arity: 1,
        flags: &["loading", "stale", "fast"], range: (0, 0, 0),
        acl: &["@fast"],
        group: "server", since: "2.6.0",
        summary: "Return the current server time",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "touch", container: "", arity: -2,
        flags: &["readonly", "fast"], range: (1, -1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "3.2.1",
        summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
        complexity: "O(N) where N is the number of keys that will be touched.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "ttl", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Get the time to live for a key in seconds",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.8.0", "Added the -2 reply.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "type", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@keyspace", "@read", "@fast"],
        group: "generic", since: "1.0.0",
        summary: "Determine the type stored at key",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "unlink", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, -1, 1),
        acl: &["@keyspace", "@write", "@fast"],
        group: "generic", since: "4.0.0",
        summary: "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
        complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
        tips: &["request_policy:multi_shard", "response_policy:agg_sum"],
        key_specs: &[
            KeySpec { notes: "", flags: RM | DELETE, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "unsubscribe", container: "", arity: -1,
        flags: &["pubsub", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.0.0",
        summary: "Stop listening for messages posted to the given channels",
        complexity: "O(N) where N is the number of clients already subscribed to a channel.",
        args: &[
            Arg { name: "channel", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "unwatch", container: "", arity: 1,
        flags: &["noscript", "loading", "stale", "fast", "allow_busy"], range: (0, 0, 0),
        acl: &["@fast", "@transaction"],
        group: "transactions", since: "2.2.0",
        summary: "Forget about all watched keys",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "wait", container: "", arity: 3,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "generic", since: "3.0.0",
        summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:agg_min"],
        args: &[
            Arg { name: "numreplicas", kind: "integer", ..ARG },
            Arg { name: "timeout", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "watch", container: "", arity: -2,
        flags: &["noscript", "loading", "stale", "fast", "allow_busy"], range: (1, -1, 1),
        acl: &["@fast", "@transaction"],
        group: "transactions", since: "2.2.0",
        summary: "Watch the given keys to determine execution of the MULTI/EXEC block",
        complexity: "O(1) for every key.",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(-1, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xack", container: "", arity: -4,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        complexity: "O(1) for each message ID processed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "group", kind: "string", ..ARG },
            Arg { name: "id", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xadd", container: "", arity: -5,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "Appends a new entry to a stream",
        complexity: "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "UPDATE instead of INSERT because of the optional trimming feature", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming strategy and the `LIMIT` option."), ("7.0.0", "Added support for the `<ms>-*` explicit ID form.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "nomkstream", kind: "pure-token", token: "NOMKSTREAM", since: "6.2.0", flags: OPTIONAL, ..ARG },
            Arg { name: "trim", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "strategy", kind: "oneof", args: &[
                            Arg { name: "maxlen", kind: "pure-token", token: "MAXLEN", ..ARG },
                            Arg { name: "minid", kind: "pure-token", token: "MINID", since: "6.2.0", ..ARG },
                        ], ..ARG },
                    Arg { name: "operator", kind: "oneof", flags: OPTIONAL, args: &[
                            Arg { name: "equal", kind: "pure-token", token: "=", ..ARG },
                            Arg { name: "approximately", kind: "pure-token", token: "~", ..ARG },
                        ], ..ARG },
                    Arg { name: "threshold", kind: "string", ..ARG },
                    Arg { name: "count", kind: "integer", token: "LIMIT", since: "6.2.0", flags: OPTIONAL, ..ARG },
                ], ..ARG },
            Arg { name: "id_or_auto", kind: "oneof", args: &[
                    Arg { name: "auto_id", kind: "pure-token", token: "*", ..ARG },
                    Arg { name: "id", kind: "string", ..ARG },
                ], ..ARG },
            Arg { name: "field_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "field", kind: "string", ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xautoclaim", container: "", arity: -6,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "6.2.0",
        summary: "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        complexity: "O(1) if COUNT is small.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added an element to the reply array, containing deleted entries the command cleared from the PEL")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "group", kind: "string", ..ARG },
            Arg { name: "consumer", kind: "string", ..ARG },
            Arg { name: "min-idle-time", kind: "string", ..ARG },
            Arg { name: "start", kind: "string", ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "justid", kind: "pure-token", token: "JUSTID", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xclaim", container: "", arity: -6,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        complexity: "O(log N) with N being the number of messages in the PEL of the consumer group.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "group", kind: "string", ..ARG },
            Arg { name: "consumer", kind: "string", ..ARG },
            Arg { name: "min-idle-time", kind: "string", ..ARG },
            Arg { name: "id", kind: "string", flags: MULTIPLE, ..ARG },
            Arg { name: "ms", kind: "integer", token: "IDLE", flags: OPTIONAL, ..ARG },
            Arg { name: "unix-time-milliseconds", kind: "unix-time", token: "TIME", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "integer", token: "RETRYCOUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "force", kind: "pure-token", token: "FORCE", flags: OPTIONAL, ..ARG },
            Arg { name: "justid", kind: "pure-token", token: "JUSTID", flags: OPTIONAL, ..ARG },
            Arg { name: "id", kind: "string", token: "LASTID", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xdel", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
        complexity: "O(1) for each single item to delete in the stream, regardless of the stream size.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "id", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xgroup", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "stream", since: "5.0.0",
        summary: "A container for consumer groups commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "xinfo", container: "", arity: -2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "stream", since: "5.0.0",
        summary: "A container for stream introspection commands",
        complexity: "Depends on subcommand.",
        ..CMD
    },
    RedisCommand {
        name: "xlen", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "Return the number of entries in a stream",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xpending", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        complexity: "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `IDLE` option and exclusive range intervals.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "group", kind: "string", ..ARG },
            Arg { name: "filters", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "min-idle-time", kind: "integer", token: "IDLE", since: "6.2.0", flags: OPTIONAL, ..ARG },
                    Arg { name: "start", kind: "string", ..ARG },
                    Arg { name: "end", kind: "string", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                    Arg { name: "consumer", kind: "string", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xrange", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval",
        complexity: "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added exclusive ranges.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "string", ..ARG },
            Arg { name: "end", kind: "string", ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xread", container: "", arity: -4,
        flags: &["readonly", "blocking", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@stream", "@slow", "@blocking"],
        group: "stream", since: "5.0.0",
        summary: "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
        complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Keyword("STREAMS", 1), find: Range(-1, 1, 2) },
        ],
        getkeys: Some(GetKeys::Xread),
        args: &[
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "milliseconds", kind: "integer", token: "BLOCK", flags: OPTIONAL, ..ARG },
            Arg { name: "streams", kind: "block", token: "STREAMS", args: &[
                    Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
                    Arg { name: "id", kind: "string", flags: MULTIPLE, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xreadgroup", container: "", arity: -7,
        flags: &["write", "blocking", "movablekeys"], range: (0, 0, 0),
        acl: &["@write", "@stream", "@slow", "@blocking"],
        group: "stream", since: "5.0.0",
        summary: "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
        complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Keyword("STREAMS", 4), find: Range(-1, 1, 2) },
        ],
        getkeys: Some(GetKeys::Xread),
        args: &[
            Arg { name: "group_consumer", kind: "block", token: "GROUP", args: &[
                    Arg { name: "group", kind: "string", ..ARG },
                    Arg { name: "consumer", kind: "string", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
            Arg { name: "milliseconds", kind: "integer", token: "BLOCK", flags: OPTIONAL, ..ARG },
            Arg { name: "noack", kind: "pure-token", token: "NOACK", flags: OPTIONAL, ..ARG },
            Arg { name: "streams", kind: "block", token: "STREAMS", args: &[
                    Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
                    Arg { name: "id", kind: "string", flags: MULTIPLE, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xrevrange", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        complexity: "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added exclusive ranges.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "end", kind: "string", ..ARG },
            Arg { name: "start", kind: "string", ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xsetid", container: "", arity: -3,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@fast"],
        group: "stream", since: "5.0.0",
        summary: "An internal command for replicating stream values",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the `entries_added` and `max_deleted_entry_id` arguments.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "last-id", kind: "string", ..ARG },
            Arg { name: "entries_added", kind: "integer", token: "ENTRIESADDED", since: "7.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "max_deleted_entry_id", kind: "string", token: "MAXDELETEDID", since: "7.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "xtrim", container: "", arity: -4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Trims the stream to (approximately if '~' is passed) a certain size",
        complexity: "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `MINID` trimming strategy and the `LIMIT` option.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "trim", kind: "block", args: &[
                    Arg { name: "strategy", kind: "oneof", args: &[
                            Arg { name: "maxlen", kind: "pure-token", token: "MAXLEN", ..ARG },
                            Arg { name: "minid", kind: "pure-token", token: "MINID", since: "6.2.0", ..ARG },
                        ], ..ARG },
                    Arg { name: "operator", kind: "oneof", flags: OPTIONAL, args: &[
                            Arg { name: "equal", kind: "pure-token", token: "=", ..ARG },
                            Arg { name: "approximately", kind: "pure-token", token: "~", ..ARG },
                        ], ..ARG },
                    Arg { name: "threshold", kind: "string", ..ARG },
                    Arg { name: "count", kind: "integer", token: "LIMIT", since: "6.2.0", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zadd", container: "", arity: -4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@fast"],
        group: "sorted-set", since: "1.2.0",
        summary: "Add one or more members to a sorted set, or update its score if it already exists",
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple elements."), ("3.0.2", "Added the `XX`, `NX`, `CH` and `INCR` options."), ("6.2.0", "Added the `GT` and `LT` options.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "condition", kind: "oneof", since: "3.0.2", flags: OPTIONAL, args: &[
                    Arg { name: "nx", kind: "pure-token", token: "NX", ..ARG },
                    Arg { name: "xx", kind: "pure-token", token: "XX", ..ARG },
                ], ..ARG },
            Arg { name: "comparison", kind: "oneof", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "gt", kind: "pure-token", token: "GT", ..ARG },
                    Arg { name: "lt", kind: "pure-token", token: "LT", ..ARG },
                ], ..ARG },
            Arg { name: "change", kind: "pure-token", token: "CH", since: "3.0.2", flags: OPTIONAL, ..ARG },
            Arg { name: "increment", kind: "pure-token", token: "INCR", since: "3.0.2", flags: OPTIONAL, ..ARG },
            Arg { name: "score_member", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "score", kind: "double", ..ARG },
                    Arg { name: "member", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zcard", container: "", arity: 2,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "1.2.0",
        summary: "Get the number of members in a sorted set",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zcount", container: "", arity: 4,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "2.0.0",
        summary: "Count the members in a sorted set with scores within the given values",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "double", ..ARG },
            Arg { name: "max", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zdiff", container: "", arity: -3,
        flags: &["readonly", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Subtract multiple sorted sets",
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiff),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zdiffstore", container: "", arity: -4,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Subtract multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiffStore),
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zincrby", container: "", arity: 4,
        flags: &["write", "denyoom", "fast"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@fast"],
        group: "sorted-set", since: "1.2.0",
        summary: "Increment the score of a member in a sorted set",
        complexity: "O(log(N)) where N is the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "increment", kind: "integer", ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zinter", container: "", arity: -3,
        flags: &["readonly", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Intersect multiple sorted sets",
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiff),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "weight", kind: "integer", token: "WEIGHTS", flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "aggregate", kind: "oneof", token: "AGGREGATE", flags: OPTIONAL, args: &[
                    Arg { name: "sum", kind: "pure-token", token: "SUM", ..ARG },
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zintercard", container: "", arity: -3,
        flags: &["readonly", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "7.0.0",
        summary: "Intersect multiple sorted sets and return the cardinality of the result",
        complexity: "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiff),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "limit", kind: "integer", token: "LIMIT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zinterstore", container: "", arity: -4,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.0.0",
        summary: "Intersect multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiffStore),
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
            Arg { name: "weight", kind: "integer", token: "WEIGHTS", flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "aggregate", kind: "oneof", token: "AGGREGATE", flags: OPTIONAL, args: &[
                    Arg { name: "sum", kind: "pure-token", token: "SUM", ..ARG },
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zlexcount", container: "", arity: 4,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "2.8.9",
        summary: "Count the number of members in a sorted set between a given lexicographical range",
        complexity: "O(log(N)) with N being the number of elements in the sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "string", ..ARG },
            Arg { name: "max", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zmpop", container: "", arity: -4,
        flags: &["write", "movablekeys"], range: (0, 0, 0),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "7.0.0",
        summary: "Remove and return members with scores in a sorted set",
        complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::Zmpop),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "where", kind: "oneof", args: &[
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zmscore", container: "", arity: -3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "6.2.0",
        summary: "Get the score associated with the given members in a sorted set",
        complexity: "O(N) where N is the number of members being requested.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zpopmax", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@fast"],
        group: "sorted-set", since: "5.0.0",
        summary: "Remove and return members with the highest scores in a sorted set",
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zpopmin", container: "", arity: -2,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@fast"],
        group: "sorted-set", since: "5.0.0",
        summary: "Remove and return members with the lowest scores in a sorted set",
        complexity: "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | ACCESS | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrandmember", container: "", arity: -2,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Get one or multiple random elements from a sorted set",
        complexity: "O(N) where N is the number of elements returned",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "options", kind: "block", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", ..ARG },
                    Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrange", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "1.2.0",
        summary: "Return a range of members in a sorted set",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("6.2.0", "Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "string", ..ARG },
            Arg { name: "stop", kind: "string", ..ARG },
            Arg { name: "sortby", kind: "oneof", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "byscore", kind: "pure-token", token: "BYSCORE", ..ARG },
                    Arg { name: "bylex", kind: "pure-token", token: "BYLEX", ..ARG },
                ], ..ARG },
            Arg { name: "rev", kind: "pure-token", token: "REV", since: "6.2.0", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrangebylex", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.8.9",
        summary: "Return a range of members in a sorted set, by lexicographical range",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYLEX` argument",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "string", ..ARG },
            Arg { name: "max", kind: "string", ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrangebyscore", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "1.0.5",
        summary: "Return a range of members in a sorted set, by score",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `BYSCORE` argument",
        history: &[("2.0.0", "Added the `WITHSCORES` modifier.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "double", ..ARG },
            Arg { name: "max", kind: "double", ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", since: "2.0.0", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrangestore", container: "", arity: -5,
        flags: &["write", "denyoom"], range: (1, 2, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Store a range of members from sorted set into another key",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "dst", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "src", kind: "key", key_spec_index: 1, ..ARG },
            Arg { name: "min", kind: "string", ..ARG },
            Arg { name: "max", kind: "string", ..ARG },
            Arg { name: "sortby", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "byscore", kind: "pure-token", token: "BYSCORE", ..ARG },
                    Arg { name: "bylex", kind: "pure-token", token: "BYLEX", ..ARG },
                ], ..ARG },
            Arg { name: "rev", kind: "pure-token", token: "REV", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrank", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "2.0.0",
        summary: "Determine the index of a member in a sorted set",
        complexity: "O(log(N))",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrem", container: "", arity: -3,
        flags: &["write", "fast"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@fast"],
        group: "sorted-set", since: "1.2.0",
        summary: "Remove one or more members from a sorted set",
        complexity: "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        history: &[("2.4.0", "Accepts multiple elements.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zremrangebylex", container: "", arity: 4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.8.9",
        summary: "Remove all members in a sorted set between the given lexicographical range",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "string", ..ARG },
            Arg { name: "max", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zremrangebyrank", container: "", arity: 4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.0.0",
        summary: "Remove all members in a sorted set within the given indexes",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "stop", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zremrangebyscore", container: "", arity: 4,
        flags: &["write"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "1.2.0",
        summary: "Remove all members in a sorted set within the given scores",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "min", kind: "double", ..ARG },
            Arg { name: "max", kind: "double", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrevrange", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "1.2.0",
        summary: "Return a range of members in a sorted set, by index, with scores ordered from high to low",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` argument",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "start", kind: "integer", ..ARG },
            Arg { name: "stop", kind: "integer", ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrevrangebylex", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.8.9",
        summary: "Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYLEX` arguments",
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "max", kind: "string", ..ARG },
            Arg { name: "min", kind: "string", ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrevrangebyscore", container: "", arity: -4,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.2.0",
        summary: "Return a range of members in a sorted set, by score, with scores ordered from high to low",
        complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N)).",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        doc_flags: &["deprecated"],
        deprecated_since: "6.2.0",
        replaced_by: "`ZRANGE` with the `REV` and `BYSCORE` arguments",
        history: &[("2.1.6", "`min` and `max` can be exclusive.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "max", kind: "double", ..ARG },
            Arg { name: "min", kind: "double", ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
            Arg { name: "offset_count", kind: "block", token: "LIMIT", flags: OPTIONAL, args: &[
                    Arg { name: "offset", kind: "integer", ..ARG },
                    Arg { name: "count", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zrevrank", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "2.0.0",
        summary: "Determine the index of a member in a sorted set, with scores ordered from high to low",
        complexity: "O(log(N))",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zscan", container: "", arity: -3,
        flags: &["readonly"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.8.0",
        summary: "Incrementally iterate sorted sets elements and associated scores",
        complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "cursor", kind: "integer", ..ARG },
            Arg { name: "pattern", kind: "pattern", token: "MATCH", flags: OPTIONAL, ..ARG },
            Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zscore", container: "", arity: 3,
        flags: &["readonly", "fast"], range: (1, 1, 1),
        acl: &["@read", "@sortedset", "@fast"],
        group: "sorted-set", since: "1.2.0",
        summary: "Get the score associated with the given member in a sorted set",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "member", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zunion", container: "", arity: -3,
        flags: &["readonly", "movablekeys"], range: (0, 0, 0),
        acl: &["@read", "@sortedset", "@slow"],
        group: "sorted-set", since: "6.2.0",
        summary: "Add multiple sorted sets",
        complexity: "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(1), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiff),
        args: &[
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 0, flags: MULTIPLE, ..ARG },
            Arg { name: "weight", kind: "integer", token: "WEIGHTS", flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "aggregate", kind: "oneof", token: "AGGREGATE", flags: OPTIONAL, args: &[
                    Arg { name: "sum", kind: "pure-token", token: "SUM", ..ARG },
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
            Arg { name: "withscores", kind: "pure-token", token: "WITHSCORES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "zunionstore", container: "", arity: -4,
        flags: &["write", "denyoom", "movablekeys"], range: (1, 1, 1),
        acl: &["@write", "@sortedset", "@slow"],
        group: "sorted-set", since: "2.0.0",
        summary: "Add multiple sorted sets and store the resulting sorted set in a new key",
        complexity: "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
        key_specs: &[
            KeySpec { notes: "", flags: OW | UPDATE, begin: Index(1), find: Range(0, 1, 0) },
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Keynum(0, 1, 1) },
        ],
        getkeys: Some(GetKeys::ZunionInterDiffStore),
        args: &[
            Arg { name: "destination", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "numkeys", kind: "integer", ..ARG },
            Arg { name: "key", kind: "key", key_spec_index: 1, flags: MULTIPLE, ..ARG },
            Arg { name: "weight", kind: "integer", token: "WEIGHTS", flags: OPTIONAL | MULTIPLE, ..ARG },
            Arg { name: "aggregate", kind: "oneof", token: "AGGREGATE", flags: OPTIONAL, args: &[
                    Arg { name: "sum", kind: "pure-token", token: "SUM", ..ARG },
                    Arg { name: "min", kind: "pure-token", token: "MIN", ..ARG },
                    Arg { name: "max", kind: "pure-token", token: "MAX", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "cat", container: "acl", arity: -2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.0.0",
        summary: "List the ACL categories or the commands inside a category",
        complexity: "O(1) since the categories and commands are a fixed set.",
        args: &[
            Arg { name: "categoryname", kind: "string", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "deluser", container: "acl", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "Remove the specified ACL users and the associated rules",
        complexity: "O(1) amortized time considering the typical user.",
        args: &[
            Arg { name: "username", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "dryrun", container: "acl", arity: -4,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "7.0.0",
        summary: "Returns whether the user can execute the given command without executing the command.",
        complexity: "O(1).",
        args: &[
            Arg { name: "username", kind: "string", ..ARG },
            Arg { name: "command", kind: "string", ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "genpass", container: "acl", arity: -2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.0.0",
        summary: "Generate a pseudorandom secure password to use for ACL users",
        complexity: "O(1)",
        args: &[
            Arg { name: "bits", kind: "integer", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getuser", container: "acl", arity: 3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "Get the rules for a specific ACL user",
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has.",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and changed the format of key and channel patterns from a list to their rule representation.")],
        args: &[
            Arg { name: "username", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "acl", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "list", container: "acl", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "List the current ACL rules in ACL config file format",
        complexity: "O(N). Where N is the number of configured users.",
        ..CMD
    },
    RedisCommand {
        name: "load", container: "acl", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "Reload the ACLs from the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        ..CMD
    },
    RedisCommand {
        name: "log", container: "acl", arity: -2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "List latest events denied because of ACLs in place",
        complexity: "O(N) with N being the number of entries shown.",
        args: &[
            Arg { name: "operation", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", ..ARG },
                    Arg { name: "reset", kind: "pure-token", token: "RESET", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "save", container: "acl", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "Save the current ACL rules in the configured ACL file",
        complexity: "O(N). Where N is the number of configured users.",
        ..CMD
    },
    RedisCommand {
        name: "setuser", container: "acl", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "Modify or create the rules for a specific ACL user",
        complexity: "O(N). Where N is the number of rules provided.",
        history: &[("6.2.0", "Added Pub/Sub channel patterns."), ("7.0.0", "Added selectors and key based permissions.")],
        args: &[
            Arg { name: "username", kind: "string", ..ARG },
            Arg { name: "rule", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "users", container: "acl", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "6.0.0",
        summary: "List the username of all the configured ACL rules",
        complexity: "O(N). Where N is the number of configured users.",
        ..CMD
    },
    RedisCommand {
        name: "whoami", container: "acl", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.0.0",
        summary: "Return the name of the user associated to the current connection",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "caching", container: "client", arity: 3,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "6.0.0",
        summary: "Instruct the server about tracking or not keys in the next request",
        complexity: "O(1)",
        args: &[
            Arg { name: "mode", kind: "oneof", args: &[
                    Arg { name: "yes", kind: "pure-token", token: "YES", ..ARG },
                    Arg { name: "no", kind: "pure-token", token: "NO", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getname", container: "client", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "2.6.9",
        summary: "Get the current connection name",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "getredir", container: "client", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "6.0.0",
        summary: "Get tracking notifications redirection client ID if any",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "help", container: "client", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "id", container: "client", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "5.0.0",
        summary: "Returns the client ID for the current connection",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "info", container: "client", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "6.2.0",
        summary: "Returns information about the current client connection.",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "kill", container: "client", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "2.4.0",
        summary: "Kill the connection of a client",
        complexity: "O(N) where N is the number of client connections",
        history: &[("2.8.12", "Added new filter format."), ("2.8.12", "`ID` option."), ("3.2.0", "Added `master` type in for `TYPE` option."), ("5.0.0", "Replaced `slave` `TYPE` with `replica`. `slave` still supported for backward compatibility."), ("6.2.0", "`LADDR` option.")],
        args: &[
            Arg { name: "filter", kind: "oneof", args: &[
                    Arg { name: "ip:port", kind: "string", deprecated_since: "2.8.12", ..ARG },
                    Arg { name: "new-format", kind: "oneof", flags: MULTIPLE, args: &[
                            Arg { name: "client-id", kind: "integer", token: "ID", since: "2.8.12", flags: OPTIONAL, ..ARG },
                            Arg { name: "normal_master_slave_pubsub", kind: "oneof", token: "TYPE", since: "2.8.12", flags: OPTIONAL, args: &[
                                    Arg { name: "normal", kind: "pure-token", token: "NORMAL", ..ARG },
                                    Arg { name: "master", kind: "pure-token", token: "MASTER", since: "3.2.0", ..ARG },
                                    Arg { name: "slave", kind: "pure-token", token: "SLAVE", ..ARG },
                                    Arg { name: "replica", kind: "pure-token", token: "REPLICA", since: "5.0.0", ..ARG },
                                    Arg { name: "pubsub", kind: "pure-token", token: "PUBSUB", ..ARG },
                                ], ..ARG },
                            Arg { name: "username", kind: "string", token: "USER", flags: OPTIONAL, ..ARG },
                            Arg { name: "ip:port", kind: "string", token: "ADDR", flags: OPTIONAL, ..ARG },
                            Arg { name: "ip:port", kind: "string", token: "LADDR", since: "6.2.0", flags: OPTIONAL, ..ARG },
                            Arg { name: "yes/no", kind: "string", token: "SKIPME", flags: OPTIONAL, ..ARG },
                        ], ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "list", container: "client", arity: -2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "2.4.0",
        summary: "Get the list of client connections",
        complexity: "O(N) where N is the number of client connections",
        tips: &["nondeterministic_output"],
        history: &[("2.8.12", "Added unique client `id` field."), ("5.0.0", "Added optional `TYPE` filter."), ("6.0.0", "Added `user` field."), ("6.2.0", "Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional `ID` filter."), ("7.0.0", "Added `resp`, `multi-mem`, `rbs` and `rbp` fields."), ("7.0.3", "Added `ssub` field.")],
        args: &[
            Arg { name: "normal_master_replica_pubsub", kind: "oneof", token: "TYPE", since: "5.0.0", flags: OPTIONAL, args: &[
                    Arg { name: "normal", kind: "pure-token", token: "NORMAL", ..ARG },
                    Arg { name: "master", kind: "pure-token", token: "MASTER", ..ARG },
                    Arg { name: "replica", kind: "pure-token", token: "REPLICA", ..ARG },
                    Arg { name: "pubsub", kind: "pure-token", token: "PUBSUB", ..ARG },
                ], ..ARG },
            Arg { name: "id", kind: "block", token: "ID", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "client-id", kind: "integer", flags: MULTIPLE, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "no-evict", container: "client", arity: 3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "7.0.0",
        summary: "Set client eviction mode for the current connection",
        complexity: "O(1)",
        args: &[
            Arg { name: "enabled", kind: "oneof", args: &[
                    Arg { name: "on", kind: "pure-token", token: "ON", ..ARG },
                    Arg { name: "off", kind: "pure-token", token: "OFF", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "pause", container: "client", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "2.9.50",
        summary: "Stop processing commands from clients for some time",
        complexity: "O(1)",
        history: &[("6.2.0", "`CLIENT PAUSE WRITE` mode added along with the `mode` option.")],
        args: &[
            Arg { name: "timeout", kind: "integer", ..ARG },
            Arg { name: "mode", kind: "oneof", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "write", kind: "pure-token", token: "WRITE", ..ARG },
                    Arg { name: "all", kind: "pure-token", token: "ALL", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "reply", container: "client", arity: 3,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "3.2.0",
        summary: "Instruct the server whether to reply to commands",
        complexity: "O(1)",
        args: &[
            Arg { name: "on_off_skip", kind: "oneof", args: &[
                    Arg { name: "on", kind: "pure-token", token: "ON", ..ARG },
                    Arg { name: "off", kind: "pure-token", token: "OFF", ..ARG },
                    Arg { name: "skip", kind: "pure-token", token: "SKIP", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setname", container: "client", arity: 3,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "2.6.9",
        summary: "Set the current connection name",
        complexity: "O(1)",
        args: &[
            Arg { name: "connection-name", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "tracking", container: "client", arity: -3,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "6.0.0",
        summary: "Enable or disable server assisted client side caching support",
        complexity: "O(1). Some options may introduce additional complexity.",
        args: &[
            Arg { name: "status", kind: "oneof", args: &[
                    Arg { name: "on", kind: "pure-token", token: "ON", ..ARG },
                    Arg { name: "off", kind: "pure-token", token: "OFF", ..ARG },
                ], ..ARG },
            Arg { name: "client-id", kind: "integer", token: "REDIRECT", flags: OPTIONAL, ..ARG },
            Arg { name: "prefix", kind: "string", token: "PREFIX", flags: OPTIONAL | MULTIPLE | MULTIPLE_TOKEN, ..ARG },
            Arg { name: "bcast", kind: "pure-token", token: "BCAST", flags: OPTIONAL, ..ARG },
            Arg { name: "optin", kind: "pure-token", token: "OPTIN", flags: OPTIONAL, ..ARG },
            Arg { name: "optout", kind: "pure-token", token: "OPTOUT", flags: OPTIONAL, ..ARG },
            Arg { name: "noloop", kind: "pure-token", token: "NOLOOP", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "trackinginfo", container: "client", arity: 2,
        flags: &["noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "connection", since: "6.2.0",
        summary: "Return information about server assisted client side caching for the current connection",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "unblock", container: "client", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "5.0.0",
        summary: "Unblock a client blocked in a blocking command from a different connection",
        complexity: "O(log N) where N is the number of client connections",
        args: &[
            Arg { name: "client-id", kind: "integer", ..ARG },
            Arg { name: "timeout_error", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "timeout", kind: "pure-token", token: "TIMEOUT", ..ARG },
                    Arg { name: "error", kind: "pure-token", token: "ERROR", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "unpause", container: "client", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous", "@connection"],
        group: "connection", since: "6.2.0",
        summary: "Resume processing of clients that were paused",
        complexity: "O(N) Where N is the number of paused clients",
        ..CMD
    },
    RedisCommand {
        name: "addslots", container: "cluster", arity: -3,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: &[
            Arg { name: "slot", kind: "integer", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "addslotsrange", container: "cluster", arity: -4,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "7.0.0",
        summary: "Assign new hash slots to receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: &[
            Arg { name: "start-slot_end-slot", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "start-slot", kind: "integer", ..ARG },
                    Arg { name: "end-slot", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "bumpepoch", container: "cluster", arity: 2,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Advance the cluster config epoch",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "count-failure-reports", container: "cluster", arity: 3,
        flags: &["admin", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Return the number of failure reports active for a given node",
        complexity: "O(N) where N is the number of failure reports",
        tips: &["nondeterministic_output"],
        args: &[
            Arg { name: "node-id", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "countkeysinslot", container: "cluster", arity: 3,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Return the number of local keys in the specified hash slot",
        complexity: "O(1)",
        args: &[
            Arg { name: "slot", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "delslots", container: "cluster", arity: -3,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of hash slot arguments",
        args: &[
            Arg { name: "slot", kind: "integer", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "delslotsrange", container: "cluster", arity: -4,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "7.0.0",
        summary: "Set hash slots as unbound in receiving node",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
        args: &[
            Arg { name: "start-slot_end-slot", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "start-slot", kind: "integer", ..ARG },
                    Arg { name: "end-slot", kind: "integer", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "failover", container: "cluster", arity: -2,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Forces a replica to perform a manual failover of its master.",
        complexity: "O(1)",
        args: &[
            Arg { name: "options", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "force", kind: "pure-token", token: "FORCE", ..ARG },
                    Arg { name: "takeover", kind: "pure-token", token: "TAKEOVER", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "flushslots", container: "cluster", arity: 2,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Delete a node's own slots information",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "forget", container: "cluster", arity: 3,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Remove a node from the nodes table",
        complexity: "O(1)",
        args: &[
            Arg { name: "node-id", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getkeysinslot", container: "cluster", arity: 4,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Return local key names in the specified hash slot",
        complexity: "O(log(N)) where N is the number of requested keys",
        tips: &["nondeterministic_output"],
        args: &[
            Arg { name: "slot", kind: "integer", ..ARG },
            Arg { name: "count", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "cluster", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "info", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Provides info about Redis Cluster node state",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "keyslot", container: "cluster", arity: 3,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Returns the hash slot of the specified key",
        complexity: "O(N) where N is the number of bytes in the key",
        args: &[
            Arg { name: "key", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "links", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "7.0.0",
        summary: "Returns a list of all TCP links to and from peer nodes in cluster",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "meet", container: "cluster", arity: -4,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Force a node cluster to handshake with another node",
        complexity: "O(1)",
        history: &[("4.0.0", "Added the optional `cluster_bus_port` argument.")],
        args: &[
            Arg { name: "ip", kind: "string", ..ARG },
            Arg { name: "port", kind: "integer", ..ARG },
            Arg { name: "cluster_bus_port", kind: "integer", since: "4.0.0", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "myid", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Return the node id",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "nodes", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Get Cluster config for the node",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "replicas", container: "cluster", arity: 3,
        flags: &["admin", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "5.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        args: &[
            Arg { name: "node-id", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "replicate", container: "cluster", arity: 3,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Reconfigure a node as a replica of the specified master node",
        complexity: "O(1)",
        args: &[
            Arg { name: "node-id", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "reset", container: "cluster", arity: -2,
        flags: &["admin", "noscript", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Reset a Redis Cluster node",
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
        args: &[
            Arg { name: "hard_soft", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "hard", kind: "pure-token", token: "HARD", ..ARG },
                    Arg { name: "soft", kind: "pure-token", token: "SOFT", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "saveconfig", container: "cluster", arity: 2,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Forces the node to save cluster state on disk",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "set-config-epoch", container: "cluster", arity: 3,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Set the configuration epoch in a new node",
        complexity: "O(1)",
        args: &[
            Arg { name: "config-epoch", kind: "integer", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "setslot", container: "cluster", arity: -4,
        flags: &["admin", "stale", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "Bind a hash slot to a specific node",
        complexity: "O(1)",
        args: &[
            Arg { name: "slot", kind: "integer", ..ARG },
            Arg { name: "subcommand", kind: "oneof", args: &[
                    Arg { name: "node-id", kind: "string", token: "IMPORTING", ..ARG },
                    Arg { name: "node-id", kind: "string", token: "MIGRATING", ..ARG },
                    Arg { name: "node-id", kind: "string", token: "NODE", ..ARG },
                    Arg { name: "stable", kind: "pure-token", token: "STABLE", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "shards", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "7.0.0",
        summary: "Get array of cluster slots to node mappings",
        complexity: "O(N) where N is the total number of cluster nodes",
        tips: &["nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "slaves", container: "cluster", arity: 3,
        flags: &["admin", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "cluster", since: "3.0.0",
        summary: "List replica nodes of the specified master node",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        doc_flags: &["deprecated"],
        deprecated_since: "5.0.0",
        replaced_by: "`CLUSTER REPLICAS`",
        args: &[
            Arg { name: "node-id", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "slots", container: "cluster", arity: 2,
        flags: &["stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "cluster", since: "3.0.0",
        summary: "Get array of Cluster slot to node mappings",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"],
        doc_flags: &["deprecated"],
        deprecated_since: "7.0.0",
        replaced_by: "`CLUSTER SHARDS`",
        history: &[("4.0.0", "Added node IDs."), ("7.0.0", "Added additional networking metadata field.")],
        ..CMD
    },
    RedisCommand {
        name: "count", container: "command", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "2.8.13",
        summary: "Get total number of Redis commands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "docs", container: "command", arity: -2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "7.0.0",
        summary: "Get array of specific Redis command documentation",
        complexity: "O(N) where N is the number of commands to look up",
        tips: &["nondeterministic_output_order"],
        args: &[
            Arg { name: "command-name", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "getkeys", container: "command", arity: -4,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "2.8.13",
        summary: "Extract keys given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        ..CMD
    },
    RedisCommand {
        name: "getkeysandflags", container: "command", arity: -4,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "7.0.0",
        summary: "Extract keys and access flags given a full Redis command",
        complexity: "O(N) where N is the number of arguments to the command",
        ..CMD
    },
    RedisCommand {
        name: "help", container: "command", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "info", container: "command", arity: -2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "2.8.13",
        summary: "Get array of specific Redis command details, or all when no argument is given.",
        complexity: "O(N) where N is the number of commands to look up",
        tips: &["nondeterministic_output_order"],
        history: &[("7.0.0", "Allowed to be called with no argument to get info on all commands.")],
        args: &[
            Arg { name: "command-name", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "list", container: "command", arity: -2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@connection"],
        group: "server", since: "7.0.0",
        summary: "Get an array of Redis command names",
        complexity: "O(N) where N is the total number of Redis commands",
        tips: &["nondeterministic_output_order"],
        args: &[
            Arg { name: "filterby", kind: "oneof", token: "FILTERBY", flags: OPTIONAL, args: &[
                    Arg { name: "module-name", kind: "string", token: "MODULE", ..ARG },
                    Arg { name: "category", kind: "string", token: "ACLCAT", ..ARG },
                    Arg { name: "pattern", kind: "pattern", token: "PATTERN", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "get", container: "config", arity: -3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.0.0",
        summary: "Get the values of configuration parameters",
        complexity: "O(N) when N is the number of configuration parameters provided",
        history: &[("7.0.0", "Added the ability to pass multiple pattern parameters in one call")],
        args: &[
            Arg { name: "parameter", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "parameter", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "config", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "resetstat", container: "config", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.0.0",
        summary: "Reset the stats returned by INFO",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "rewrite", container: "config", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.0",
        summary: "Rewrite the configuration file with the in memory configuration",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "set", container: "config", arity: -4,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.0.0",
        summary: "Set configuration parameters to the given values",
        complexity: "O(N) when N is the number of configuration parameters provided",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        history: &[("7.0.0", "Added the ability to set multiple parameters in one call.")],
        args: &[
            Arg { name: "parameter_value", kind: "block", flags: MULTIPLE, args: &[
                    Arg { name: "parameter", kind: "string", ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "delete", container: "function", arity: 3,
        flags: &["write", "noscript"], range: (0, 0, 0),
        acl: &["@write", "@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Delete a function by name",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "library-name", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "dump", container: "function", arity: 2,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Dump all functions into a serialized binary payload",
        complexity: "O(N) where N is the number of functions",
        ..CMD
    },
    RedisCommand {
        name: "flush", container: "function", arity: -2,
        flags: &["write", "noscript"], range: (0, 0, 0),
        acl: &["@write", "@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Deleting all functions",
        complexity: "O(N) where N is the number of functions deleted",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "async", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "async", kind: "pure-token", token: "ASYNC", ..ARG },
                    Arg { name: "sync", kind: "pure-token", token: "SYNC", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "function", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "kill", container: "function", arity: 2,
        flags: &["noscript", "allow_busy"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Kill the function currently in execution.",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        ..CMD
    },
    RedisCommand {
        name: "list", container: "function", arity: -2,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "List information about all the functions",
        complexity: "O(N) where N is the number of functions",
        tips: &["nondeterministic_output_order"],
        args: &[
            Arg { name: "library-name-pattern", kind: "string", token: "LIBRARYNAME", flags: OPTIONAL, ..ARG },
            Arg { name: "withcode", kind: "pure-token", token: "WITHCODE", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "load", container: "function", arity: -3,
        flags: &["write", "denyoom", "noscript"], range: (0, 0, 0),
        acl: &["@write", "@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Create a function with the given arguments (name, code, description)",
        complexity: "O(1) (considering compilation time is redundant)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "replace", kind: "pure-token", token: "REPLACE", flags: OPTIONAL, ..ARG },
            Arg { name: "function-code", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "restore", container: "function", arity: -3,
        flags: &["write", "denyoom", "noscript"], range: (0, 0, 0),
        acl: &["@write", "@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Restore all the functions on the given payload",
        complexity: "O(N) where N is the number of functions on the payload",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "serialized-value", kind: "string", ..ARG },
            Arg { name: "policy", kind: "oneof", flags: OPTIONAL, args: &[
                    Arg { name: "flush", kind: "pure-token", token: "FLUSH", ..ARG },
                    Arg { name: "append", kind: "pure-token", token: "APPEND", ..ARG },
                    Arg { name: "replace", kind: "pure-token", token: "REPLACE", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "stats", container: "function", arity: 2,
        flags: &["noscript", "allow_busy"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "7.0.0",
        summary: "Return information about the function currently running (name, description, duration)",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "doctor", container: "latency", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.13",
        summary: "Return a human readable latency analysis report.",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "graph", container: "latency", arity: 3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.13",
        summary: "Return a latency graph for the event.",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
        args: &[
            Arg { name: "event", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "latency", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "2.8.13",
        summary: "Show helpful text about the different subcommands.",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "histogram", container: "latency", arity: -2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "7.0.0",
        summary: "Return the cumulative distribution of latencies of a subset of commands or all.",
        complexity: "O(N) where N is the number of commands with latency information being retrieved.",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
        args: &[
            Arg { name: "command", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "history", container: "latency", arity: 3,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.13",
        summary: "Return timestamp-latency samples for the event.",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
        args: &[
            Arg { name: "event", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "latest", container: "latency", arity: 2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.13",
        summary: "Return the latest latency samples for all events.",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "reset", container: "latency", arity: -2,
        flags: &["admin", "noscript", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.8.13",
        summary: "Reset latency data for one or more events.",
        complexity: "O(1)",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "event", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "doctor", container: "memory", arity: 2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "Outputs memory problems report",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "memory", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "malloc-stats", container: "memory", arity: 2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "Show allocator internal stats",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "purge", container: "memory", arity: 2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "Ask the allocator to release memory",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"],
        ..CMD
    },
    RedisCommand {
        name: "stats", container: "memory", arity: 2,
        flags: &[], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "4.0.0",
        summary: "Show memory usage details",
        complexity: "O(1)",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"],
        ..CMD
    },
    RedisCommand {
        name: "usage", container: "memory", arity: -3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@read", "@slow"],
        group: "server", since: "4.0.0",
        summary: "Estimate the memory usage of a key",
        complexity: "O(N) where N is the number of samples.",
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "count", kind: "integer", token: "SAMPLES", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "module", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "list", container: "module", arity: 2,
        flags: &["admin", "noscript"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "4.0.0",
        summary: "List all modules loaded by the server",
        complexity: "O(N) where N is the number of loaded modules.",
        tips: &["nondeterministic_output_order"],
        ..CMD
    },
    RedisCommand {
        name: "load", container: "module", arity: -3,
        flags: &["admin", "noscript", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "4.0.0",
        summary: "Load a module",
        complexity: "O(1)",
        args: &[
            Arg { name: "path", kind: "string", ..ARG },
            Arg { name: "arg", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "loadex", container: "module", arity: -3,
        flags: &["admin", "noscript", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "7.0.0",
        summary: "Load a module with extended parameters",
        complexity: "O(1)",
        args: &[
            Arg { name: "path", kind: "string", ..ARG },
            Arg { name: "configs", kind: "block", token: "CONFIG", flags: OPTIONAL | MULTIPLE | MULTIPLE_TOKEN, args: &[
                    Arg { name: "name", kind: "string", ..ARG },
                    Arg { name: "value", kind: "string", ..ARG },
                ], ..ARG },
            Arg { name: "args", kind: "block", token: "ARGS", flags: OPTIONAL | MULTIPLE, args: &[
                    Arg { name: "arg", kind: "string", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "unload", container: "module", arity: 3,
        flags: &["admin", "noscript", "no_async_loading"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "4.0.0",
        summary: "Unload a module",
        complexity: "O(1)",
        args: &[
            Arg { name: "name", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "encoding", container: "object", arity: 3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "2.2.3",
        summary: "Inspect the internal encoding of a Redis object",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "freq", container: "object", arity: 3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "4.0.0",
        summary: "Get the logarithmic access frequency counter of a Redis object",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "object", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@keyspace", "@slow"],
        group: "generic", since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "idletime", container: "object", arity: 3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "2.2.3",
        summary: "Get the time since a Redis object was last accessed",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "refcount", container: "object", arity: 3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@keyspace", "@read", "@slow"],
        group: "generic", since: "2.2.3",
        summary: "Get the number of references to the value of the key",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "channels", container: "pubsub", arity: -2,
        flags: &["pubsub", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.8.0",
        summary: "List active channels",
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
        args: &[
            Arg { name: "pattern", kind: "pattern", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "pubsub", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "pubsub", since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "numpat", container: "pubsub", arity: 2,
        flags: &["pubsub", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.8.0",
        summary: "Get the count of unique patterns pattern subscriptions",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "numsub", container: "pubsub", arity: -2,
        flags: &["pubsub", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "2.8.0",
        summary: "Get the count of subscribers for channels",
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
        args: &[
            Arg { name: "channel", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "shardchannels", container: "pubsub", arity: -2,
        flags: &["pubsub", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "7.0.0",
        summary: "List active shard channels",
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
        args: &[
            Arg { name: "pattern", kind: "pattern", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "shardnumsub", container: "pubsub", arity: -2,
        flags: &["pubsub", "loading", "stale"], range: (0, 0, 0),
        acl: &["@pubsub", "@slow"],
        group: "pubsub", since: "7.0.0",
        summary: "Get the count of subscribers for shard channels",
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
        args: &[
            Arg { name: "shardchannel", kind: "string", flags: OPTIONAL | MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "debug", container: "script", arity: 3,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "3.2.0",
        summary: "Set the debug mode for executed scripts.",
        complexity: "O(1)",
        args: &[
            Arg { name: "mode", kind: "oneof", args: &[
                    Arg { name: "yes", kind: "pure-token", token: "YES", ..ARG },
                    Arg { name: "sync", kind: "pure-token", token: "SYNC", ..ARG },
                    Arg { name: "no", kind: "pure-token", token: "NO", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "exists", container: "script", arity: -3,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Check existence of scripts in the script cache.",
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"],
        args: &[
            Arg { name: "sha1", kind: "string", flags: MULTIPLE, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "flush", container: "script", arity: -2,
        flags: &["noscript"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Remove all the scripts from the script cache.",
        complexity: "O(N) with N being the number of scripts in cache",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        history: &[("6.2.0", "Added the `ASYNC` and `SYNC` flushing mode modifiers.")],
        args: &[
            Arg { name: "async", kind: "oneof", since: "6.2.0", flags: OPTIONAL, args: &[
                    Arg { name: "async", kind: "pure-token", token: "ASYNC", ..ARG },
                    Arg { name: "sync", kind: "pure-token", token: "SYNC", ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "script", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "kill", container: "script", arity: 2,
        flags: &["noscript", "allow_busy"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Kill the script currently in execution.",
        complexity: "O(1)",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"],
        ..CMD
    },
    RedisCommand {
        name: "load", container: "script", arity: 3,
        flags: &["noscript", "stale"], range: (0, 0, 0),
        acl: &["@slow", "@scripting"],
        group: "scripting", since: "2.6.0",
        summary: "Load the specified Lua script into the script cache.",
        complexity: "O(N) with N being the length in bytes of the script body.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        args: &[
            Arg { name: "script", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "get", container: "slowlog", arity: -2,
        flags: &["admin", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.2.12",
        summary: "Get the slow log's entries",
        complexity: "O(N) where N is the number of entries returned",
        tips: &["request_policy:all_nodes", "nondeterministic_output"],
        history: &[("4.0.0", "Added client IP address, port and name to the reply.")],
        args: &[
            Arg { name: "count", kind: "integer", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "slowlog", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@slow"],
        group: "server", since: "6.2.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "len", container: "slowlog", arity: 2,
        flags: &["admin", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.2.12",
        summary: "Get the slow log's length",
        complexity: "O(1)",
        tips: &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"],
        ..CMD
    },
    RedisCommand {
        name: "reset", container: "slowlog", arity: 2,
        flags: &["admin", "loading", "stale"], range: (0, 0, 0),
        acl: &["@admin", "@slow", "@dangerous"],
        group: "server", since: "2.2.12",
        summary: "Clear all entries from the slow log",
        complexity: "O(N) where N is the number of entries in the slowlog",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"],
        ..CMD
    },
    RedisCommand {
        name: "create", container: "xgroup", arity: -5,
        flags: &["write", "denyoom"], range: (2, 2, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Create a consumer group.",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the `entries_read` named argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
            Arg { name: "id", kind: "oneof", args: &[
                    Arg { name: "id", kind: "string", ..ARG },
                    Arg { name: "new_id", kind: "pure-token", token: "$", ..ARG },
                ], ..ARG },
            Arg { name: "mkstream", kind: "pure-token", token: "MKSTREAM", flags: OPTIONAL, ..ARG },
            Arg { name: "entries_read", kind: "integer", token: "ENTRIESREAD", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "createconsumer", container: "xgroup", arity: 5,
        flags: &["write", "denyoom"], range: (2, 2, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "6.2.0",
        summary: "Create a consumer in a consumer group.",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | INSERT, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
            Arg { name: "consumername", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "delconsumer", container: "xgroup", arity: 5,
        flags: &["write"], range: (2, 2, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Delete a consumer from a consumer group.",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
            Arg { name: "consumername", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "destroy", container: "xgroup", arity: 4,
        flags: &["write"], range: (2, 2, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Destroy a consumer group.",
        complexity: "O(N) where N is the number of entries in the group's pending entries list (PEL).",
        key_specs: &[
            KeySpec { notes: "", flags: RW | DELETE, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "xgroup", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "setid", container: "xgroup", arity: -5,
        flags: &["write"], range: (2, 2, 1),
        acl: &["@write", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Set a consumer group to an arbitrary last delivered ID value.",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RW | UPDATE, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the optional `entries_read` argument.")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
            Arg { name: "id", kind: "oneof", args: &[
                    Arg { name: "id", kind: "string", ..ARG },
                    Arg { name: "new_id", kind: "pure-token", token: "$", ..ARG },
                ], ..ARG },
            Arg { name: "entries_read", kind: "integer", token: "ENTRIESREAD", flags: OPTIONAL, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "consumers", container: "xinfo", arity: 4,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "List the consumers in a consumer group",
        complexity: "O(1)",
        tips: &["nondeterministic_output"],
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "groupname", kind: "string", ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "groups", container: "xinfo", arity: 3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "List the consumer groups of a stream",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("7.0.0", "Added the `entries-read` and `lag` fields")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
        ],
        ..CMD
    },
    RedisCommand {
        name: "help", container: "xinfo", arity: 2,
        flags: &["loading", "stale"], range: (0, 0, 0),
        acl: &["@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Show helpful text about the different subcommands",
        complexity: "O(1)",
        ..CMD
    },
    RedisCommand {
        name: "stream", container: "xinfo", arity: -3,
        flags: &["readonly"], range: (2, 2, 1),
        acl: &["@read", "@stream", "@slow"],
        group: "stream", since: "5.0.0",
        summary: "Get information about a stream",
        complexity: "O(1)",
        key_specs: &[
            KeySpec { notes: "", flags: RO | ACCESS, begin: Index(2), find: Range(0, 1, 0) },
        ],
        history: &[("6.0.0", "Added the `FULL` modifier."), ("7.0.0", "Added the `max-deleted-entry-id`, `entries-added`, `recorded-first-entry-id`, `entries-read` and `lag` fields")],
        args: &[
            Arg { name: "key", kind: "key", key_spec_index: 0, ..ARG },
            Arg { name: "full", kind: "block", token: "FULL", flags: OPTIONAL, args: &[
                    Arg { name: "count", kind: "integer", token: "COUNT", flags: OPTIONAL, ..ARG },
                ], ..ARG },
        ],
        ..CMD
    },
];
