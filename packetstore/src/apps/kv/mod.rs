//! The key-value server (`packetstore serve`): the [`App`] that speaks
//! HTTP (PASTE's pKVS: `PUT`/`GET`/`HEAD`/`DELETE /kv/<key>`) on one
//! listener and the Redis protocol on the other, over one [`Store`].
//!
//! Owns: per-connection protocol state, command semantics (Redis's, for the
//! commands listed in `COMMANDS`), and replies. A write is applied to the
//! store (logged, then indexed) while its reply is queued; the I/O loop
//! sends the reply only after the commit that makes the write durable.
//! Reads are answered from the tree's working version, never flushed; a
//! value of at least `zero_copy_min` bytes is sent straight from the pool
//! buffers it was received into (the reply holds references on them until
//! sent), smaller ones are copied into the reply.
//!
//! Invariants: every buffer reference a request holds is given back when
//! it ends (`Args::clear`, `abandon`); a write refused for lack of space
//! leaves nothing behind (`Store::apply` is all or nothing).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::io::app::{App, IoCounters, Persist, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::proto::http::{self, HeadError, Method};
use crate::proto::resp::{glob_match, Args, Encoder, Parsed, Parser, ReceiveConfig};
use crate::store::db::{
    expire_key, field_key, hash_key, now_ms, string_key, value_bytes, value_len, KeyType, Op, Store, StoreError,
    StoreTicket, FIELD_SIZE_MAX, KEY_SIZE_MAX,
};

/// Listener indexes of the server's two protocols.
pub const LISTENER_HTTP: usize = 0;
pub const LISTENER_RESP: usize = 1;

/// Cursors SCAN remembers (the oldest is forgotten first: a client using
/// it starts over, which SCAN's contract allows).
const SCAN_CURSORS_MAX: usize = 4096;
/// Expired keys removed per tick.
const EXPIRE_PER_TICK_MAX: usize = 256;

#[derive(Clone, Debug)]
pub struct KvConfig {
    pub persist: Persist,
    pub value_size_max: u64,
    /// Values at least this long are sent from the pool (zero copy).
    pub zero_copy_min: u64,
    /// The password of both ports: AUTH on the Redis port, an
    /// `Authorization` header on the HTTP port.
    pub requirepass: Option<Vec<u8>>,
    /// With a password, /metrics still answers without it.
    pub metrics_public: bool,
    /// Free buffers kept back for receiving (the ring's refills).
    pub buffers_reserve: u32,
    /// What the server reports (INFO, CONFIG GET).
    pub domain_name: String,
    /// Tests only: the crash simulator the pool runs on, which
    /// `DEBUG POWERFAIL` arms. None (every real deployment): the command
    /// is refused.
    pub power_switch: Option<std::sync::Arc<crate::pool::sim::SimDevice>>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct KvStats {
    /// Requests by protocol (`PROTOCOLS`), kind (`KINDS`) and result
    /// (`RESULTS`), for /metrics.
    pub requests: [[[u64; 3]; 3]; 2],
    pub commands: u64,
    pub http_requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub refused_full: u64,
    pub errors: u64,
    /// Commands whose handler panicked (answered with an error).
    pub panics: u64,
    /// Redis connections closed for sending an HTTP request.
    pub cross_protocol: u64,
    pub bytes_sent_zero_copy: u64,
    pub bytes_sent_copied: u64,
    /// Value bytes written: persisted where they were received (zero copy)
    /// or copied (copy mode, and values small enough to be inlined).
    pub value_bytes_in_place: u64,
    pub value_bytes_copied: u64,
}

/// One connection's protocol state.
pub struct KvConn {
    listener: usize,
    id: u64,
    name: Option<Vec<u8>>,
    authenticated: bool,
    /// MULTI was refused: every command is refused until EXEC or DISCARD,
    /// so none of a would-be transaction runs.
    in_refused_multi: bool,
    encoder: Encoder,
    parser: Parser,
    args: Args,
    http: Option<HttpBody>,
}

/// An HTTP request whose body is arriving.
struct HttpBody {
    key: Vec<u8>,
    keep_alive: bool,
    remaining: u64,
    len: u64,
    extents: Vec<Extent>,
    copy_fill: Option<usize>,
    refused: bool,
}

pub struct KvServer {
    config: KvConfig,
    store: Store,
    next_client_id: u64,
    scan_cursors: VecDeque<(u64, Vec<u8>)>,
    next_cursor: u64,
    io: IoCounters,
    stats: KvStats,
    started: std::time::Instant,
    recovery: String,
    /// Commands served at the last tick (a tick with none is idle).
    commands_at_tick: u64,
    /// Write commands per commit (group commit batch sizes), and the
    /// writes counted at the last commit.
    batch_writes: crate::util::metrics::Histogram,
    writes_at_commit: u64,
    recovery_ns: u64,
    /// Value bytes of the command being built: left where they were
    /// received, or copied (counted once it applies).
    staged_in_place: u64,
    staged_copied: u64,
    /// When a cross-protocol attempt was last logged.
    cross_protocol_logged: Option<std::time::Instant>,
}

/// Labels of `KvStats::requests`.
pub const PROTOCOLS: [&str; 2] = ["resp", "http"];
pub const KINDS: [&str; 3] = ["read", "write", "other"];
pub const RESULTS: [&str; 3] = ["ok", "error", "refused"];
const RESP: usize = 0;
const HTTP: usize = 1;
const READ: usize = 0;
const WRITE: usize = 1;
const OTHER: usize = 2;

type Cmd = fn(&mut KvServer, &mut Ctx<'_>) -> Result<(), StoreError>;

/// A command's table entry, in COMMAND's terms.
struct CommandEntry {
    /// Lower case.
    name: &'static str,
    /// The number of arguments, the name included; negative: at least.
    arity: i64,
    flags: &'static [&'static str],
    /// First key, last key (negative: from the end), step.
    keys: (i64, i64, i64),
    /// COMMAND DOCS's group: string, hash, generic, connection, server.
    group: &'static str,
    summary: &'static str,
    handler: Cmd,
}

#[allow(clippy::too_many_arguments)]
const fn cmd(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    group: &'static str,
    summary: &'static str,
    handler: Cmd,
) -> CommandEntry {
    CommandEntry { name, arity, flags, keys, group, summary, handler }
}

impl CommandEntry {
    fn find(name: &[u8]) -> Option<&'static CommandEntry> {
        COMMANDS.iter().find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether `argc` arguments (the name included) fit its arity.
    fn arity_fits(&self, argc: i64) -> bool {
        (self.arity > 0 && argc == self.arity) || (self.arity < 0 && argc >= -self.arity)
    }

    fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Redis 7's ACL categories, from the flags and the group.
    fn acl_categories(&self) -> Vec<&'static str> {
        let mut categories = Vec::new();
        let group = match self.group {
            "string" => "@string",
            "hash" => "@hash",
            "generic" => "@keyspace",
            "connection" => "@connection",
            _ => "@admin",
        };
        if self.has_flag("write") {
            categories.push("@write");
        }
        if self.has_flag("readonly") {
            categories.push("@read");
        }
        categories.push(group);
        categories.push(if self.has_flag("fast") { "@fast" } else { "@slow" });
        if self.has_flag("admin") {
            categories.push("@dangerous");
        }
        categories
    }
}

/// What a command handler works with.
struct Ctx<'a> {
    pool: &'a Pool,
    buffers: &'a mut Buffers,
    conn: &'a mut KvConn,
    out: &'a mut OutQueue,
    now: u64,
    close: bool,
    /// An error reply was written.
    failed: bool,
}

impl Ctx<'_> {
    fn enc(&self) -> Encoder {
        self.conn.encoder
    }

    fn arg(&self, i: usize) -> std::borrow::Cow<'_, [u8]> {
        self.conn.args.bytes(self.pool, i)
    }

    fn argc(&self) -> usize {
        self.conn.args.len()
    }

    fn error(&mut self, text: &str) {
        self.failed = true;
        let enc = self.enc();
        enc.error(self.out.bytes(), text);
    }

    fn ok(&mut self) {
        self.out.push(b"+OK\r\n");
    }

    fn int(&mut self, value: i64) {
        let enc = self.enc();
        enc.int(self.out.bytes(), value);
    }

    fn null(&mut self) {
        let enc = self.enc();
        enc.null(self.out.bytes());
    }

    fn bulk(&mut self, bytes: &[u8]) {
        let enc = self.enc();
        enc.bulk(self.out.bytes(), bytes);
    }

    fn array(&mut self, len: usize) {
        let enc = self.enc();
        enc.array(self.out.bytes(), len);
    }

    fn map(&mut self, len: usize) {
        let enc = self.enc();
        enc.map(self.out.bytes(), len);
    }
}

/// Checks a key's size.
fn key_ok(key: &[u8]) -> Result<(), String> {
    if key.len() > KEY_SIZE_MAX {
        return Err(format!("ERR key of {} bytes is over the limit of {KEY_SIZE_MAX}", key.len()));
    }
    Ok(())
}

fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.len() > 20 || text.starts_with('+') || (text.starts_with('0') && text.len() > 1) {
        return None;
    }
    if text.starts_with("-0") {
        return None;
    }
    text.parse().ok()
}

/// Answered to the commands of a connection whose MULTI was refused.
const MULTI_REFUSED: &str =
    "EXECABORT MULTI is not supported yet, so this connection refuses every command until EXEC or DISCARD";
/// Cross-protocol attempts are logged at most this often.
const CROSS_PROTOCOL_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Whether a Redis command name is an HTTP request's first word or a
/// header (Redis's `securityWarningCommand` test).
fn is_http_line(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

/// A panic's message.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text.to_string(),
        (_, Some(text)) => text.clone(),
        _ => "a panic".to_string(),
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

/// The commands, as COMMAND describes them (Redis 7's arities, flags and
/// key positions).
#[rustfmt::skip]
const COMMANDS: &[CommandEntry] = &[
    cmd("ping", -1, &["fast", "stale"], (0, 0, 0), "connection", "Returns PONG, or the argument.", KvServer::cmd_ping),
    cmd("echo", 2, &["fast"], (0, 0, 0), "connection", "Returns the argument.", KvServer::cmd_echo),
    cmd("debug", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "DEBUG POWERFAIL and PANIC: test servers only.", KvServer::cmd_debug),
    cmd("quit", -1, &["fast"], (0, 0, 0), "connection", "Closes the connection.", KvServer::cmd_quit),
    cmd("auth", -2, &["noscript", "loading", "stale", "fast", "no_auth"], (0, 0, 0), "connection", "Authenticates the connection.", KvServer::cmd_auth),
    cmd("hello", -1, &["noscript", "loading", "stale", "fast", "no_auth"], (0, 0, 0), "connection", "Handshakes: protocol version, authentication, client name.", KvServer::cmd_hello),
    cmd("multi", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "transactions", "Refused: transactions are not supported yet (nothing runs until EXEC or DISCARD).", KvServer::cmd_multi),
    cmd("exec", 1, &["noscript", "loading", "stale"], (0, 0, 0), "transactions", "Ends a refused MULTI (EXECABORT: nothing was applied).", KvServer::cmd_exec),
    cmd("discard", 1, &["noscript", "loading", "stale", "fast"], (0, 0, 0), "transactions", "Ends a refused MULTI.", KvServer::cmd_discard),
    cmd("select", 2, &["loading", "stale", "fast"], (0, 0, 0), "connection", "Selects database 0 (the only one).", KvServer::cmd_select),
    cmd("client", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Names the connection, returns its name or id.", KvServer::cmd_client),
    cmd("command", -1, &["random", "loading", "stale"], (0, 0, 0), "server", "Describes the commands this server knows.", KvServer::cmd_command),
    cmd("config", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns configuration values.", KvServer::cmd_config),
    cmd("info", -1, &["random", "loading", "stale"], (0, 0, 0), "server", "Returns information and statistics about the server.", KvServer::cmd_info),
    cmd("dbsize", 1, &["readonly", "fast"], (0, 0, 0), "server", "Returns the number of keys.", KvServer::cmd_dbsize),
    cmd("set", -3, &["write", "denyoom"], (1, 1, 1), "string", "Sets a key to a string value, durably.", KvServer::cmd_set),
    cmd("get", 2, &["readonly", "fast"], (1, 1, 1), "string", "Returns the string value of a key.", KvServer::cmd_get),
    cmd("getdel", 2, &["write", "fast"], (1, 1, 1), "string", "Returns the string value of a key and deletes the key.", KvServer::cmd_getdel),
    cmd("del", -2, &["write"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("unlink", -2, &["write", "fast"], (1, -1, 1), "generic", "Deletes keys.", KvServer::cmd_del),
    cmd("exists", -2, &["readonly", "fast"], (1, -1, 1), "generic", "Counts how many of the keys exist.", KvServer::cmd_exists),
    cmd("mset", -3, &["write", "denyoom"], (1, -1, 2), "string", "Sets several keys at once, all or none.", KvServer::cmd_mset),
    cmd("mget", -2, &["readonly", "fast"], (1, -1, 1), "string", "Returns the string values of several keys.", KvServer::cmd_mget),
    cmd("incr", 2, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by one.", KvServer::cmd_incr),
    cmd("decr", 2, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements the integer value of a key by one.", KvServer::cmd_decr),
    cmd("incrby", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by a number.", KvServer::cmd_incrby),
    cmd("decrby", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements the integer value of a key by a number.", KvServer::cmd_decrby),
    cmd("append", 3, &["write", "denyoom", "fast"], (1, 1, 1), "string", "Appends a string to the value of a key.", KvServer::cmd_append),
    cmd("strlen", 2, &["readonly", "fast"], (1, 1, 1), "string", "Returns the length of a string value.", KvServer::cmd_strlen),
    cmd("hset", -4, &["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets fields of a hash.", KvServer::cmd_hset),
    cmd("hget", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the value of a hash field.", KvServer::cmd_hget),
    cmd("hdel", -3, &["write", "fast"], (1, 1, 1), "hash", "Deletes fields of a hash.", KvServer::cmd_hdel),
    cmd("hgetall", 2, &["readonly"], (1, 1, 1), "hash", "Returns every field and value of a hash.", KvServer::cmd_hgetall),
    cmd("hlen", 2, &["readonly", "fast"], (1, 1, 1), "hash", "Returns the number of fields of a hash.", KvServer::cmd_hlen),
    cmd("hexists", 3, &["readonly", "fast"], (1, 1, 1), "hash", "Whether a hash field exists.", KvServer::cmd_hexists),
    cmd("keys", 2, &["readonly"], (0, 0, 0), "generic", "Returns the keys matching a pattern.", KvServer::cmd_keys),
    cmd("scan", -2, &["readonly"], (0, 0, 0), "generic", "Iterates over the keys.", KvServer::cmd_scan),
    cmd("flushall", -1, &["write"], (0, 0, 0), "server", "Deletes every key.", KvServer::cmd_flushall),
    cmd("flushdb", -1, &["write"], (0, 0, 0), "server", "Deletes every key.", KvServer::cmd_flushall),
    cmd("type", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the type of a key.", KvServer::cmd_type),
    cmd("ttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in seconds.", KvServer::cmd_ttl),
    cmd("pttl", 2, &["readonly", "fast"], (1, 1, 1), "generic", "Returns the time to live of a key in milliseconds.", KvServer::cmd_pttl),
    cmd("expire", 3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in seconds.", KvServer::cmd_expire),
    cmd("pexpire", 3, &["write", "fast"], (1, 1, 1), "generic", "Sets a time to live in milliseconds.", KvServer::cmd_pexpire),
    cmd("persist", 2, &["write", "fast"], (1, 1, 1), "generic", "Removes the time to live of a key.", KvServer::cmd_persist),
];

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
fn named_commands(ctx: &Ctx<'_>) -> Vec<(Vec<u8>, Option<&'static CommandEntry>)> {
    if ctx.argc() == 2 {
        return COMMANDS.iter().map(|entry| (entry.name.as_bytes().to_vec(), Some(entry))).collect();
    }
    (2..ctx.argc()).map(|i| ctx.arg(i).into_owned()).map(|name| (name.clone(), CommandEntry::find(&name))).collect()
}

fn command_info(ctx: &mut Ctx<'_>) {
    let named = named_commands(ctx);
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
fn command_docs(ctx: &mut Ctx<'_>) {
    let known: Vec<&CommandEntry> = named_commands(ctx).into_iter().filter_map(|(_, entry)| entry).collect();
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
fn command_list(ctx: &mut Ctx<'_>) {
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
    for entry in COMMANDS {
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
fn command_getkeys(ctx: &mut Ctx<'_>) {
    let Some(entry) = CommandEntry::find(&ctx.arg(2)) else {
        ctx.error("ERR Invalid command specified");
        return;
    };
    let argc = (ctx.argc() - 2) as i64;
    if !entry.arity_fits(argc) {
        ctx.error("ERR Invalid number of arguments specified for command");
        return;
    }
    let (first, last, step) = entry.keys;
    if first == 0 {
        ctx.error("ERR The command has no key arguments");
        return;
    }
    let last = if last < 0 { argc + last } else { last.min(argc - 1) };
    let keys: Vec<Vec<u8>> =
        (first..=last).step_by(step.max(1) as usize).map(|i| ctx.arg(2 + i as usize).into_owned()).collect();
    ctx.array(keys.len());
    keys.iter().for_each(|key| ctx.bulk(key));
}

impl KvServer {
    pub fn new(config: KvConfig, store: Store, recovery: String) -> KvServer {
        KvServer {
            config,
            store,
            next_client_id: 1,
            scan_cursors: VecDeque::new(),
            next_cursor: 1,
            io: IoCounters::default(),
            stats: KvStats::default(),
            started: std::time::Instant::now(),
            recovery,
            commands_at_tick: 0,
            batch_writes: crate::util::metrics::Histogram::default(),
            writes_at_commit: 0,
            recovery_ns: 0,
            staged_in_place: 0,
            staged_copied: 0,
            cross_protocol_logged: None,
        }
    }

    /// How long recovery took (for /metrics).
    pub fn set_recovery_duration(&mut self, duration: Duration) {
        self.recovery_ns = duration.as_nanos() as u64;
    }

    /// Counts a request: its kind, and its result from what it did to the
    /// error and refusal counters since `before` (errors, refused_full).
    fn count_request(&mut self, protocol: usize, kind: usize, before: (u64, u64), failed: bool) {
        let result = if self.stats.refused_full > before.1 {
            2
        } else if failed || self.stats.errors > before.0 {
            1
        } else {
            0
        };
        self.stats.requests[protocol][kind][result] += 1;
    }

    /// `GET /metrics`: the Prometheus text exposition of what INFO shows.
    #[allow(clippy::too_many_lines)] // TODO(issue 16): split with the KV server
    pub fn metrics_text(&self, pool: &Pool, buffers: &Buffers) -> String {
        let mut e = crate::util::metrics::Exposition::default();
        e.family("packetstore_info", "gauge", "The server's version, persistence domain and persist mode.");
        e.sample(
            "packetstore_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("domain", &self.config.domain_name),
                ("persist", self.config.persist.name()),
            ],
            1.0,
        );
        e.single("packetstore_uptime_seconds", "gauge", "Seconds since start.", self.started.elapsed().as_secs_f64());
        e.single(
            "packetstore_recovery_seconds",
            "gauge",
            "How long recovery took at start.",
            self.recovery_ns as f64 / 1e9,
        );
        e.family("packetstore_requests_total", "counter", "Requests by protocol, kind and result.");
        for (p, protocol) in PROTOCOLS.iter().enumerate() {
            for (k, kind) in KINDS.iter().enumerate() {
                for (r, result) in RESULTS.iter().enumerate() {
                    let labels = [("protocol", *protocol), ("kind", *kind), ("result", *result)];
                    e.sample("packetstore_requests_total", &labels, self.stats.requests[p][k][r] as f64);
                }
            }
        }
        e.histogram(
            "packetstore_commit_batch_writes",
            "Write commands per commit (group commit).",
            &[],
            &self.batch_writes,
            1.0,
            0,
            14,
            1,
        );
        let store = self.store.stats();
        e.single("packetstore_commits_total", "counter", "Commits (log batches made durable).", store.commits as f64);
        e.single(
            "packetstore_command_panics_total",
            "counter",
            "Commands that hit a bug; answered with an error, the server went on.",
            self.stats.panics as f64,
        );
        e.single(
            "packetstore_cross_protocol_closed_total",
            "counter",
            "Redis connections closed for sending an HTTP request (POST or Host:).",
            self.stats.cross_protocol as f64,
        );
        e.single("packetstore_checkpoints_total", "counter", "Checkpoints of the tree.", store.checkpoints as f64);
        pool.stats().expose(&mut e, &self.config.domain_name);
        e.family(
            "packetstore_value_bytes_written_total",
            "counter",
            "Value bytes written, persisted where received (in_place) or copied.",
        );
        e.sample(
            "packetstore_value_bytes_written_total",
            &[("path", "in_place")],
            self.stats.value_bytes_in_place as f64,
        );
        e.sample("packetstore_value_bytes_written_total", &[("path", "copied")], self.stats.value_bytes_copied as f64);
        e.family(
            "packetstore_bytes_sent_total",
            "counter",
            "Reply value bytes sent from the pool (zero_copy) or copied.",
        );
        e.sample("packetstore_bytes_sent_total", &[("path", "zero_copy")], self.stats.bytes_sent_zero_copy as f64);
        e.sample("packetstore_bytes_sent_total", &[("path", "copied")], self.stats.bytes_sent_copied as f64);
        let geometry = pool.geometry();
        e.single("packetstore_pool_bytes", "gauge", "The pool file's size.", pool.len() as f64);
        e.single("packetstore_pool_buffers", "gauge", "Buffers in the pool.", buffers.count() as f64);
        e.single("packetstore_pool_free_buffers", "gauge", "Free buffers.", buffers.free_count() as f64);
        e.single("packetstore_buffer_bytes", "gauge", "The size of one buffer.", f64::from(geometry.buffer_size));
        let usage = self.store.log().usage();
        e.single("packetstore_log_bytes", "gauge", "The log ring's size.", usage.ring_size as f64);
        e.single("packetstore_log_free_bytes", "gauge", "Free bytes in the log ring.", usage.free_bytes as f64);
        e.single(
            "packetstore_log_live_records",
            "gauge",
            "Log records not yet checkpointed.",
            usage.live_records as f64,
        );
        e.single("packetstore_keys", "gauge", "Keys in the store.", self.store.keys() as f64);
        e.single("packetstore_tree_height", "gauge", "The B+ tree's height.", self.store.tree().height() as f64);
        let compaction = self.store.compaction();
        e.single(
            "packetstore_compaction_running",
            "gauge",
            "1 while a compaction pass runs.",
            f64::from(u8::from(compaction.running)),
        );
        e.single(
            "packetstore_compaction_waste_ratio",
            "gauge",
            "Dead share of the bytes in value buffers.",
            self.store.waste_ratio(),
        );
        e.single(
            "packetstore_compaction_passes_total",
            "counter",
            "Compaction passes.",
            compaction.relocation_passes as f64,
        );
        e.single(
            "packetstore_compaction_relocated_values_total",
            "counter",
            "Values moved by compaction.",
            compaction.relocated_values as f64,
        );
        e.single(
            "packetstore_compaction_relocated_bytes_total",
            "counter",
            "Bytes moved by compaction.",
            compaction.relocated_bytes as f64,
        );
        e.single("packetstore_connections", "gauge", "Connections open.", self.io.connections as f64);
        e.single("packetstore_connections_accepted_total", "counter", "Connections accepted.", self.io.accepted as f64);
        e.single(
            "packetstore_connections_refused_total",
            "counter",
            "Connections refused (over --connections-max).",
            self.io.refused as f64,
        );
        e.single(
            "packetstore_ring_enobufs_total",
            "counter",
            "Receives that found the buffer ring empty.",
            self.io.enobufs as f64,
        );
        e.single(
            "packetstore_clients_paused_total",
            "counter",
            "Clients paused for not reading their replies.",
            self.io.paused as f64,
        );
        e.single(
            "packetstore_clients_stalled_total",
            "counter",
            "Clients disconnected for not reading.",
            self.io.stalled as f64,
        );
        e.text
    }

    /// Group commit: the write commands the commit now beginning covers.
    fn observe_batch(&mut self) {
        let batch = self.stats.writes - self.writes_at_commit;
        if batch > 0 {
            self.batch_writes.observe(batch);
            self.writes_at_commit = self.stats.writes;
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A clean shutdown, once the event loop has stopped with nothing in
    /// flight: checkpoints until every log record is folded into the tree,
    /// so the next start replays nothing. Returns the records folded.
    pub fn checkpoint_all(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<usize, StoreError> {
        let records = self.store.live_records().count();
        self.store.checkpoint_all(pool, buffers)?;
        Ok(records)
    }

    pub fn stats(&self) -> KvStats {
        self.stats
    }

    fn receive_config(&self) -> ReceiveConfig {
        ReceiveConfig {
            persist: self.config.persist,
            value_size_max: self.config.value_size_max,
            buffers_reserve: self.config.buffers_reserve,
        }
    }

    // ---- the Redis protocol ----

    #[allow(clippy::too_many_arguments)]
    fn serve_resp(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut progress = Progress::default();
        let config = self.receive_config();
        while progress.requests < requests_max && !progress.close && !out.is_full() {
            if !self.store.batch_has_room() {
                progress.more = true;
                break;
            }
            match conn.parser.parse(pool, buffers, &config, stream, &mut conn.args, release) {
                Parsed::Incomplete => break,
                Parsed::Malformed(why) => {
                    conn.encoder.error(out.bytes(), &format!("ERR {why}"));
                    conn.parser.abandon(buffers, &mut conn.args);
                    self.stats.errors += 1;
                    progress.close = true;
                }
                Parsed::Command => {
                    let close = self.execute(pool, buffers, conn, out);
                    conn.args.clear(buffers);
                    progress.requests += 1;
                    progress.close |= close;
                }
            }
        }
        progress
    }

    /// Runs the parsed command; true if the connection should close.
    fn execute(&mut self, pool: &Pool, buffers: &mut Buffers, conn: &mut KvConn, out: &mut OutQueue) -> bool {
        let before = (self.stats.errors, self.stats.refused_full);
        let (close, kind, failed) = self.run_command(pool, buffers, conn, out);
        self.count_request(RESP, kind, before, failed);
        close
    }

    /// `execute`'s work; also returns the command's kind and whether its
    /// reply was an error.
    fn run_command(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> (bool, usize, bool) {
        self.stats.commands += 1;
        let entry = CommandEntry::find(&conn.args.bytes(pool, 0));
        let kind = match entry {
            Some(entry) if entry.has_flag("write") => WRITE,
            Some(entry) if entry.has_flag("readonly") => READ,
            _ => OTHER,
        };
        let mut ctx = Ctx { pool, buffers, conn, out, now: now_ms(), close: false, failed: false };
        if entry.is_none() && is_http_line(&ctx.arg(0)) {
            self.warn_cross_protocol(&ctx);
            self.stats.errors += 1;
            return (true, kind, true);
        }
        if let Err(why) = self.check_command(&mut ctx, entry) {
            ctx.error(&why);
            return (false, kind, true);
        }
        let entry = entry.expect("checked by check_command");
        if let Some(why) = ctx.conn.args.refused.clone() {
            ctx.error(&why);
            self.stats.refused_full += 1;
            return (false, kind, true);
        }
        // A bug in a handler answers this client with an error instead of
        // stopping the server, unless it struck while the store was
        // between its log and its tree: then only a restart may go on.
        let handled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (entry.handler)(self, &mut ctx)));
        match handled {
            Ok(Ok(())) => {}
            Ok(Err(error)) if error.is_full() => {
                self.stats.refused_full += 1;
                ctx.error(&format!("OOM command not allowed: {error}"));
            }
            Ok(Err(error)) => {
                self.stats.errors += 1;
                ctx.error(&format!("ERR {error}"));
            }
            Err(panic) => {
                if !self.store.is_consistent() {
                    std::panic::resume_unwind(panic);
                }
                self.stats.errors += 1;
                self.stats.panics += 1;
                let what = panic_text(&panic);
                tracing::error!("command '{}' failed on a bug, answered with an error: {what}", entry.name);
                ctx.error(&format!("ERR internal error in '{}': the command was not run ({what})", entry.name));
            }
        }
        (ctx.close, kind, ctx.failed)
    }

    /// What must hold before a command runs: it is known, the connection is
    /// authenticated, its arity is right, and no refused transaction is
    /// open. Err: the error to answer (counted).
    fn check_command(&mut self, ctx: &mut Ctx<'_>, entry: Option<&CommandEntry>) -> Result<(), String> {
        let Some(entry) = entry else {
            self.stats.errors += 1;
            let mut text =
                format!("ERR unknown command '{}', with args beginning with: ", String::from_utf8_lossy(&ctx.arg(0)));
            for i in 1..ctx.argc().min(4) {
                let _ = write!(text, "'{}' ", String::from_utf8_lossy(&ctx.arg(i)));
            }
            return Err(text);
        };
        if self.config.requirepass.is_some()
            && !ctx.conn.authenticated
            && !entry.has_flag("no_auth")
            && entry.name != "quit"
        {
            return Err("NOAUTH Authentication required.".into());
        }
        if !entry.arity_fits(ctx.argc() as i64) {
            self.stats.errors += 1;
            return Err(format!("ERR wrong number of arguments for '{}' command", entry.name));
        }
        if ctx.conn.in_refused_multi && !matches!(entry.name, "exec" | "discard" | "multi" | "quit") {
            self.stats.errors += 1;
            return Err(format!("{MULTI_REFUSED} ('{}' was not run)", entry.name));
        }
        Ok(())
    }

    /// Redis's rule against cross-protocol scripting: a Redis connection
    /// whose command is `POST` or `Host:` is a web page talking HTTP to a
    /// local server; it is closed without a reply. Logged at most once a
    /// minute.
    fn warn_cross_protocol(&mut self, ctx: &Ctx<'_>) {
        self.stats.cross_protocol += 1;
        let now = std::time::Instant::now();
        if self.cross_protocol_logged.is_some_and(|at| now.duration_since(at) < CROSS_PROTOCOL_LOG_INTERVAL) {
            return;
        }
        self.cross_protocol_logged = Some(now);
        tracing::warn!(
            "possible security attack: a client (connection {}) sent '{}' to the Redis port, an HTTP request \
             (cross-protocol scripting); connection closed ({} so far; logged at most once a minute)",
            ctx.conn.id,
            String::from_utf8_lossy(&ctx.arg(0)),
            self.stats.cross_protocol
        );
    }

    /// Applies a command's ops; gives back their references either way.
    fn apply(&mut self, ctx: &mut Ctx<'_>, ops: &[Op]) -> Result<(), StoreError> {
        let writes = ops.iter().any(|op| matches!(op, Op::Put { .. }));
        let result = if writes { self.store.check_room_for_write(ctx.buffers) } else { Ok(()) };
        let result = result.and_then(|()| self.store.apply(ctx.pool, ctx.buffers, ops));
        Store::release_ops(ctx.buffers, ops);
        if result.is_ok() {
            self.count_write();
        }
        self.staged_in_place = 0;
        self.staged_copied = 0;
        result
    }

    /// Counts an applied write command and its value bytes.
    fn count_write(&mut self) {
        self.stats.writes += 1;
        self.stats.value_bytes_in_place += std::mem::take(&mut self.staged_in_place);
        self.stats.value_bytes_copied += std::mem::take(&mut self.staged_copied);
    }

    /// Notes value bytes a command writes: received bytes it keeps where
    /// they are (`received`; copied anyway in copy mode) or bytes it copies.
    fn stage_bytes(&mut self, len: u64, received: bool) {
        if received && self.config.persist == Persist::ZeroCopy {
            self.staged_in_place += len;
        } else {
            self.staged_copied += len;
        }
    }

    /// Ends a command whose ops were being built: applies them and calls
    /// `reply`, or, when building stopped (`built` is an error reply or a
    /// failure), gives their references back.
    fn finish_ops(
        &mut self,
        ctx: &mut Ctx<'_>,
        ops: &[Op],
        built: Result<Result<(), String>, StoreError>,
        reply: impl FnOnce(&mut Ctx<'_>),
    ) -> Result<(), StoreError> {
        match built {
            Ok(Ok(())) => {
                self.apply(ctx, ops)?;
                reply(ctx);
                Ok(())
            }
            Ok(Err(why)) => {
                Store::release_ops(ctx.buffers, ops);
                ctx.error(&why);
                Ok(())
            }
            Err(error) => {
                Store::release_ops(ctx.buffers, ops);
                Err(error)
            }
        }
    }

    /// A `Put` of argument `i` (its own references on the extents).
    fn put_arg(&mut self, ctx: &mut Ctx<'_>, tree_key: Vec<u8>, i: usize) -> Result<Op, StoreError> {
        let len = ctx.conn.args.arg_len(i);
        let extents = match ctx.conn.args.extents(i) {
            Some(extents) => {
                for extent in extents {
                    ctx.buffers.retain(extent.buffer)?;
                }
                self.stage_bytes(len, true);
                extents.to_vec()
            }
            None => {
                let bytes = ctx.arg(i).into_owned();
                self.stage_bytes(len, false);
                self.store.stage(ctx.pool, ctx.buffers, &bytes)?
            }
        };
        Ok(Op::Put { key: tree_key, extents, len })
    }

    /// A `Put` of computed bytes.
    fn put_bytes(&mut self, ctx: &mut Ctx<'_>, tree_key: Vec<u8>, bytes: &[u8]) -> Result<Op, StoreError> {
        let extents = self.store.stage(ctx.pool, ctx.buffers, bytes)?;
        self.stage_bytes(bytes.len() as u64, false);
        Ok(Op::Put { key: tree_key, extents, len: bytes.len() as u64 })
    }

    /// Ops that make `key` ready for a new string value: a hash there goes,
    /// and so does its expiry unless `keep_expiry` and the key is live.
    fn clear_for_string(
        &self,
        pool: &Pool,
        now: u64,
        key: &[u8],
        keep_expiry: bool,
        ops: &mut Vec<Op>,
    ) -> Result<(), StoreError> {
        if self.store.has_hashes() && self.store.get_raw(pool, &hash_key(key))?.is_some() {
            ops.push(Op::DelHash { name: key.to_vec() });
        }
        let live = !self.store.is_expired(key, now);
        if self.store.expiry(key).is_some() && !(keep_expiry && live) {
            ops.push(Op::Del { key: expire_key(key) });
        }
        Ok(())
    }

    /// Ops that remove `key` if it has expired (so a write starts afresh).
    fn purge_if_expired(&self, ctx: &Ctx<'_>, key: &[u8], ops: &mut Vec<Op>) -> Result<(), StoreError> {
        if !self.store.is_expired(key, ctx.now) {
            return Ok(());
        }
        self.delete_ops(ctx.pool, key, ops)
    }

    /// Ops deleting `key` whatever its type, and its expiry; `raw` ignores
    /// expiry when looking (purging an expired key).
    /// Replies with a string value: from the pool when long enough.
    fn reply_value(&mut self, ctx: &mut Ctx<'_>, value: &Value) -> Result<(), StoreError> {
        let len = value_len(value);
        if len >= self.config.zero_copy_min && !matches!(value, Value::Inline(_)) {
            let extents = value_extents(ctx.pool, value)?;
            let enc = ctx.enc();
            enc.bulk_header(ctx.out.bytes(), len);
            self.push_extents(ctx, &extents);
            ctx.out.push(b"\r\n");
            self.stats.bytes_sent_zero_copy += len;
        } else if let Value::Inline(bytes) = value {
            ctx.bulk(bytes);
            self.stats.bytes_sent_copied += len;
        } else {
            // Copied from the pool straight into the reply.
            let extents = value_extents(ctx.pool, value)?;
            let enc = ctx.enc();
            enc.bulk_header(ctx.out.bytes(), len);
            ctx.pool.read_extents(&extents, ctx.out.bytes());
            ctx.out.push(b"\r\n");
            self.stats.bytes_sent_copied += len;
        }
        Ok(())
    }

    /// Queues pool bytes as reply parts, each holding a reference.
    fn push_extents(&mut self, ctx: &mut Ctx<'_>, extents: &[Extent]) {
        for extent in extents {
            ctx.buffers.retain(extent.buffer).expect("a stored value's buffer takes a reply's reference");
            let offset = ctx.pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
            // SAFETY: the reply took a reference on the buffer just above:
            // nothing reuses or writes it until it is sent.
            unsafe { ctx.out.push_pool(extent.buffer, ctx.pool.address(offset), u32::from(extent.len)) };
        }
    }

    /// The live string at `key`; Err(()) if it holds a hash.
    fn string_of(&self, ctx: &Ctx<'_>, key: &[u8]) -> Result<Result<Option<Value>, ()>, StoreError> {
        if let Some(value) = self.store.get(ctx.pool, key, ctx.now)? {
            return Ok(Ok(Some(value)));
        }
        if self.store.key_type(ctx.pool, key, ctx.now)? == Some(KeyType::Hash) {
            return Ok(Err(()));
        }
        Ok(Ok(None))
    }

    fn cmd_ping(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match ctx.argc() {
            1 => ctx.out.push(b"+PONG\r\n"),
            2 => {
                let message = ctx.arg(1).into_owned();
                ctx.bulk(&message)
            }
            _ => ctx.error("ERR wrong number of arguments for 'ping' command"),
        }
        Ok(())
    }

    fn cmd_echo(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let message = ctx.arg(1).into_owned();
        ctx.bulk(&message);
        Ok(())
    }

    /// `DEBUG POWERFAIL <seed> <fences>`, for tests: the power fails at
    /// the `fences`-th fence or sync from now, and the crash simulator
    /// keeps what a real failure there could keep (chosen by `seed`).
    /// Refused unless the server runs on the simulator
    /// (`--simulate-power-failures`, itself refused unless enabled).
    fn cmd_debug(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.arg(1).to_ascii_uppercase();
        if sub != b"POWERFAIL" && sub != b"PANIC" {
            ctx.error("ERR DEBUG supports only POWERFAIL <seed> <fences> and PANIC (tests)");
            return Ok(());
        }
        let Some(device) = self.config.power_switch.clone() else {
            let sub = String::from_utf8_lossy(&sub);
            ctx.error(&format!(
                "ERR DEBUG {sub} is disabled: it needs a server started with --simulate-power-failures (tests only)"
            ));
            return Ok(());
        };
        // A bug in a handler, on purpose: the client gets an error, the
        // server goes on.
        assert!(sub != b"PANIC", "DEBUG PANIC (a test of the command path's panic handling)");
        let usage = "ERR usage: DEBUG POWERFAIL <seed> <fences>, both unsigned integers, fences at least 1";
        if ctx.argc() != 4 {
            ctx.error(usage);
            return Ok(());
        }
        let number = |bytes: &[u8]| std::str::from_utf8(bytes).ok().and_then(|t| t.parse::<u64>().ok());
        let (Some(seed), Some(fences @ 1..)) = (number(&ctx.arg(2)), number(&ctx.arg(3))) else {
            ctx.error(usage);
            return Ok(());
        };
        device.crash_at_fence(device.fences() + fences, seed);
        ctx.ok();
        Ok(())
    }

    // ---- transactions: refused until they exist, so nothing runs half ----

    fn cmd_multi(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.conn.in_refused_multi {
            ctx.error("ERR MULTI calls can not be nested");
            return Ok(());
        }
        ctx.conn.in_refused_multi = true;
        ctx.error(
            "ERR MULTI is not supported yet: packetstore does not run transactions; \
             every command until EXEC or DISCARD is refused, so nothing of it is applied",
        );
        Ok(())
    }

    fn cmd_exec(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if std::mem::take(&mut ctx.conn.in_refused_multi) {
            ctx.error("EXECABORT Transaction discarded because of previous errors.");
        } else {
            ctx.error("ERR EXEC without MULTI");
        }
        Ok(())
    }

    fn cmd_discard(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if std::mem::take(&mut ctx.conn.in_refused_multi) {
            ctx.ok();
        } else {
            ctx.error("ERR DISCARD without MULTI");
        }
        Ok(())
    }

    fn cmd_quit(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.ok();
        ctx.close = true;
        Ok(())
    }

    fn check_password(&self, user: Option<&[u8]>, password: &[u8]) -> Result<(), &'static str> {
        let Some(expected) = &self.config.requirepass else {
            return Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        };
        // Every byte is compared, so the time taken says nothing of where
        // a guess first differs.
        let differ = password.len() != expected.len()
            || password.iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) != 0;
        if user.is_some_and(|u| u != b"default") || differ {
            return Err("WRONGPASS invalid username-password pair or user is disabled.");
        }
        Ok(())
    }

    fn cmd_auth(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let result = match ctx.argc() {
            2 => self.check_password(None, &ctx.arg(1)),
            3 => self.check_password(Some(&ctx.arg(1)), &ctx.arg(2)),
            _ => {
                ctx.error(SYNTAX);
                return Ok(());
            }
        };
        match result {
            Ok(()) => {
                ctx.conn.authenticated = true;
                ctx.ok()
            }
            Err(why) => ctx.error(why),
        }
        Ok(())
    }

    fn cmd_hello(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut i = 1;
        let mut protocol = None;
        if ctx.argc() > 1 {
            match parse_i64(&ctx.arg(1)) {
                Some(v @ (2 | 3)) => protocol = Some(v),
                Some(_) => {
                    ctx.error("NOPROTO unsupported protocol version");
                    return Ok(());
                }
                None => {
                    ctx.error("ERR Protocol version is not an integer or out of range");
                    return Ok(());
                }
            }
            i = 2;
        }
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"AUTH") if i + 2 < ctx.argc() => {
                    if let Err(why) = self.check_password(Some(&ctx.arg(i + 1)), &ctx.arg(i + 2)) {
                        ctx.error(why);
                        return Ok(());
                    }
                    ctx.conn.authenticated = true;
                    i += 3;
                }
                Some(b"SETNAME") if i + 1 < ctx.argc() => {
                    ctx.conn.name = Some(ctx.arg(i + 1).into_owned());
                    i += 2;
                }
                _ => {
                    ctx.error(&format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&ctx.arg(i))));
                    return Ok(());
                }
            }
        }
        if self.config.requirepass.is_some() && !ctx.conn.authenticated {
            ctx.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
            return Ok(());
        }
        if let Some(protocol) = protocol {
            ctx.conn.encoder.resp3 = protocol == 3;
        }
        let proto = if ctx.conn.encoder.resp3 { 3 } else { 2 };
        ctx.map(7);
        for (name, value) in [("server", "redis"), ("version", "7.0.0")] {
            ctx.bulk(name.as_bytes());
            ctx.bulk(value.as_bytes());
        }
        ctx.bulk(b"proto");
        ctx.int(proto);
        ctx.bulk(b"id");
        ctx.int(ctx.conn.id as i64);
        for (name, value) in [("mode", "standalone"), ("role", "master")] {
            ctx.bulk(name.as_bytes());
            ctx.bulk(value.as_bytes());
        }
        ctx.bulk(b"modules");
        ctx.array(0);
        Ok(())
    }

    fn cmd_select(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_i64(&ctx.arg(1)) {
            Some(0) => ctx.ok(),
            Some(_) => ctx.error("ERR DB index is out of range"),
            None => ctx.error(NOT_INTEGER),
        }
        Ok(())
    }

    fn cmd_client(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match (ctx.conn.args.upper(1).as_deref(), ctx.argc()) {
            (Some(b"SETNAME"), 3) => {
                let name = ctx.arg(2).into_owned();
                if name.iter().any(|&b| b <= b' ' || b > b'~') {
                    ctx.error("ERR Client names cannot contain spaces, newlines or special characters.");
                } else {
                    ctx.conn.name = (!name.is_empty()).then_some(name);
                    ctx.ok();
                }
            }
            (Some(b"GETNAME"), 2) => match ctx.conn.name.clone() {
                Some(name) => ctx.bulk(&name),
                None => ctx.null(),
            },
            (Some(b"ID"), 2) => ctx.int(ctx.conn.id as i64),
            (Some(b"SETINFO"), 4) => ctx.ok(),
            _ => ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }

    fn cmd_command(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() == 1 {
            ctx.array(COMMANDS.len());
            COMMANDS.iter().for_each(|entry| write_command_info(ctx, entry));
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
            b"COUNT" => ctx.int(COMMANDS.len() as i64),
            b"INFO" => command_info(ctx),
            b"DOCS" => command_docs(ctx),
            b"LIST" => command_list(ctx),
            b"GETKEYS" => command_getkeys(ctx),
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

    fn config_values(&self) -> Vec<(&'static str, String)> {
        let durable = self.config.domain_name != "none";
        vec![
            ("save", String::new()),
            ("appendonly", if durable { "yes" } else { "no" }.into()),
            ("appendfsync", if durable { "always" } else { "no" }.into()),
            ("databases", "1".into()),
            ("maxmemory", "0".into()),
            ("proto-max-bulk-len", self.config.value_size_max.to_string()),
            ("requirepass", if self.config.requirepass.is_some() { "********" } else { "" }.into()),
        ]
    }

    fn cmd_config(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match ctx.conn.args.upper(1).as_deref() {
            Some(b"GET") if ctx.argc() >= 3 => {
                let patterns: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).to_ascii_lowercase()).collect();
                let found: Vec<_> = self
                    .config_values()
                    .into_iter()
                    .filter(|(name, _)| patterns.iter().any(|p| glob_match(p, name.as_bytes())))
                    .collect();
                ctx.map(found.len());
                for (name, value) in found {
                    ctx.bulk(name.as_bytes());
                    ctx.bulk(value.as_bytes());
                }
            }
            Some(b"SET") => ctx.error("ERR CONFIG SET is not supported: restart packetstore with the option"),
            Some(b"RESETSTAT") => {
                self.stats = KvStats::default();
                // Batch sizes are counted from the writes at the last
                // commit: zeroed together (a bare reset underflowed).
                self.writes_at_commit = 0;
                ctx.ok()
            }
            _ => ctx.error("ERR unknown subcommand or wrong number of arguments for 'config'. Try CONFIG HELP."),
        }
        Ok(())
    }

    /// The INFO text, in Redis's layout.
    pub fn info_text(&self, pool: &Pool, buffers: &Buffers, section: Option<&str>) -> String {
        let mut text = String::new();
        let wants = |name: &str| section.is_none_or(|s| s == "all" || s == "everything" || s == "default" || s == name);
        let geometry = pool.geometry();
        if wants("server") {
            let _ = write!(
                text,
                "# Server\r\nredis_version:7.0.0\r\npacketstore_version:{}\r\nredis_mode:standalone\r\nos:Linux\r\narch_bits:64\r\nprocess_id:{}\r\nuptime_in_seconds:{}\r\n\r\n",
                env!("CARGO_PKG_VERSION"),
                std::process::id(),
                self.started.elapsed().as_secs()
            );
        }
        if wants("clients") {
            let _ = write!(
                text,
                "# Clients\r\nconnected_clients:{}\r\ntotal_connections_received:{}\r\nrejected_connections:{}\r\n\r\n",
                self.io.connections, self.io.accepted, self.io.refused
            );
        }
        if wants("memory") {
            let used = u64::from(buffers.count() - buffers.free_count()) * u64::from(geometry.buffer_size);
            let _ = write!(
                text,
                "# Memory\r\nused_memory:{used}\r\npool_bytes:{}\r\npool_buffers:{}\r\npool_free_buffers:{}\r\nbuffer_size:{}\r\n\r\n",
                pool.len(),
                buffers.count(),
                buffers.free_count(),
                geometry.buffer_size
            );
        }
        if wants("persistence") {
            let usage = self.store.log().usage();
            let stats = self.store.stats();
            let compaction = self.store.compaction();
            let _ = write!(
                text,
                "# Persistence\r\nloading:0\r\naof_enabled:1\r\npersistence_domain:{}\r\npersist_mode:{}\r\nlog_live_records:{}\r\nlog_free_bytes:{}\r\nlog_size:{}\r\ncommits:{}\r\ncheckpoints:{}\r\ncheckpoint_ms_max:{:.3}\r\ntree_generation:{}\r\ntree_height:{}\r\ntree_reclaiming:{}\r\nlast_recovery:{}\r\ncompaction_counted:{}\r\ncompaction_running:{}\r\ncompaction_waste_pct:{:.1}\r\ncompaction_passes:{}\r\ncompaction_relocated_values:{}\r\ncompaction_relocated_bytes:{}\r\n",
                self.config.domain_name,
                self.config.persist.name(),
                usage.live_records,
                usage.free_bytes,
                usage.ring_size,
                stats.commits,
                stats.checkpoints,
                stats.checkpoint_ns_max as f64 / 1e6,
                self.store.tree().generation(),
                self.store.tree().height(),
                u8::from(self.store.is_reclaiming()),
                self.recovery,
                u8::from(compaction.counted),
                u8::from(compaction.running),
                self.store.waste_ratio() * 100.0,
                compaction.relocation_passes,
                compaction.relocated_values,
                compaction.relocated_bytes
            );
            let persist = pool.stats();
            let fences = persist.fences.load(std::sync::atomic::Ordering::Relaxed);
            let _ = write!(
                text,
                "fences:{fences}\r\nfence_us_avg:{:.3}\r\nlines_flushed:{}\r\ncommit_batch_writes_avg:{:.2}\r\nvalue_bytes_in_place:{}\r\nvalue_bytes_copied:{}\r\nrecovery_ms:{:.3}\r\n\r\n",
                persist.fence_ns.sum() as f64 / fences.max(1) as f64 / 1e3,
                persist.lines_flushed.load(std::sync::atomic::Ordering::Relaxed),
                self.batch_writes.sum() as f64 / self.batch_writes.count().max(1) as f64,
                self.stats.value_bytes_in_place,
                self.stats.value_bytes_copied,
                self.recovery_ns as f64 / 1e6
            );
        }
        if wants("stats") {
            let _ = write!(
                text,
                "# Stats\r\ntotal_commands_processed:{}\r\ntotal_http_requests:{}\r\nwrites:{}\r\nexpired_keys:{}\r\nrefused_full:{}\r\nerrors:{}\r\nbytes_sent_zero_copy:{}\r\nbytes_sent_copied:{}\r\nring_enobufs:{}\r\nclients_paused_for_output:{}\r\nclient_output_buffer_limit_disconnections:{}\r\ncoalesced_streams:{}\r\nreceives_limited:{}\r\nturn_received_bytes_max:{}\r\ncommand_panics:{}\r\ncross_protocol_closed:{}\r\n\r\n",
                self.stats.commands,
                self.stats.http_requests,
                self.stats.writes,
                self.store.stats().expired,
                self.stats.refused_full,
                self.stats.errors,
                self.stats.bytes_sent_zero_copy,
                self.stats.bytes_sent_copied,
                self.io.enobufs,
                self.io.paused,
                self.io.stalled,
                self.io.coalesced,
                self.io.receive_limited,
                self.io.turn_received_max,
                self.stats.panics,
                self.stats.cross_protocol
            );
        }
        if wants("keyspace") {
            text.push_str("# Keyspace\r\n");
            if self.store.keys() > 0 {
                let _ = write!(text, "db0:keys={},expires={},avg_ttl=0\r\n", self.store.keys(), self.store.expiring());
            }
            text.push_str("\r\n");
        }
        text
    }

    fn cmd_info(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let section = (ctx.argc() > 1).then(|| String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase());
        let text = self.info_text(ctx.pool, ctx.buffers, section.as_deref());
        let enc = ctx.enc();
        enc.verbatim(ctx.out.bytes(), &text);
        Ok(())
    }

    fn cmd_dbsize(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.int(self.store.keys() as i64);
        Ok(())
    }

    fn cmd_set(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let (mut nx, mut xx, mut get, mut keep_ttl) = (false, false, false, false);
        let mut expire_at: Option<u64> = None;
        let mut i = 3;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            let next = (i + 1 < ctx.argc()).then(|| ctx.arg(i + 1).into_owned());
            match option.as_slice() {
                b"NX" if !xx => nx = true,
                b"XX" if !nx => xx = true,
                b"GET" => get = true,
                b"KEEPTTL" if expire_at.is_none() => keep_ttl = true,
                b"EX" | b"PX" | b"EXAT" | b"PXAT" if expire_at.is_none() && !keep_ttl && next.is_some() => {
                    let Some(n) = next.as_deref().and_then(parse_i64) else {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    };
                    let at = match option.as_slice() {
                        b"EX" => n.checked_mul(1000).and_then(|ms| ms.checked_add(ctx.now as i64)),
                        b"PX" => n.checked_add(ctx.now as i64),
                        b"EXAT" => n.checked_mul(1000),
                        _ => Some(n),
                    };
                    match at {
                        Some(at) if n > 0 && at > 0 => expire_at = Some(at as u64),
                        _ => {
                            ctx.error("ERR invalid expire time in 'set' command");
                            return Ok(());
                        }
                    }
                    i += 1;
                }
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(());
                }
            }
            i += 1;
        }
        // Plain SETs (no NX, XX or GET) look nothing up unless hashes
        // exist (one of which this key could be).
        let old = if nx || xx || get || self.store.has_hashes() { self.string_of(ctx, &key)? } else { Ok(None) };
        let exists = match &old {
            Ok(value) => value.is_some(),
            Err(()) => {
                if get {
                    ctx.error(WRONGTYPE);
                    return Ok(());
                }
                true
            }
        };
        let old_bytes = match &old {
            Ok(Some(value)) if get => Some(value_bytes(ctx.pool, value)?),
            _ => None,
        };
        if (nx && exists) || (xx && !exists) {
            match old_bytes {
                Some(bytes) => ctx.bulk(&bytes),
                None if get => ctx.null(),
                None => ctx.null(),
            }
            return Ok(());
        }
        let mut ops = Vec::new();
        self.clear_for_string(ctx.pool, ctx.now, &key, keep_ttl || expire_at.is_some(), &mut ops)?;
        let put = self.put_arg(ctx, string_key(&key), 2)?;
        ops.push(put);
        if let Some(at) = expire_at {
            let put = self.put_bytes(ctx, expire_key(&key), &at.to_le_bytes())?;
            ops.push(put);
        }
        self.apply(ctx, &ops)?;
        match (get, old_bytes) {
            (true, Some(bytes)) => ctx.bulk(&bytes),
            (true, None) => ctx.null(),
            _ => ctx.ok(),
        }
        Ok(())
    }

    fn cmd_get(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        match self.string_of(ctx, &key)? {
            Ok(Some(value)) => self.reply_value(ctx, &value)?,
            Ok(None) => ctx.null(),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_getdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.string_of(ctx, &key)? {
            Ok(Some(value)) => {
                let bytes = value_bytes(ctx.pool, &value)?;
                let mut ops = Vec::new();
                self.delete_ops(ctx.pool, &key, &mut ops)?;
                self.apply(ctx, &ops)?;
                ctx.bulk(&bytes);
            }
            Ok(None) => ctx.null(),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    fn cmd_del(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut ops = Vec::new();
        let mut deleted = 0;
        let mut seen = std::collections::HashSet::new();
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            if !seen.insert(key.clone()) {
                continue;
            }
            let live = self.store.key_type(ctx.pool, &key, ctx.now)?.is_some();
            let before = ops.len();
            self.delete_ops(ctx.pool, &key, &mut ops)?;
            if live && ops.len() > before {
                deleted += 1;
            }
        }
        self.apply(ctx, &ops)?;
        ctx.int(deleted);
        Ok(())
    }

    fn cmd_exists(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut count = 0;
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            if self.store.key_type(ctx.pool, &key, ctx.now)?.is_some() {
                count += 1;
            }
        }
        ctx.int(count);
        Ok(())
    }

    fn cmd_mset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() % 2 == 0 {
            ctx.error("ERR wrong number of arguments for 'mset' command");
            return Ok(());
        }
        let mut ops = Vec::new();
        let result = (|| {
            for i in (1..ctx.argc()).step_by(2) {
                let key = ctx.arg(i).into_owned();
                if let Err(why) = key_ok(&key) {
                    return Ok(Err(why));
                }
                self.clear_for_string(ctx.pool, ctx.now, &key, false, &mut ops)?;
                let put = self.put_arg(ctx, string_key(&key), i + 1)?;
                ops.push(put);
            }
            Ok(Ok(()))
        })();
        self.finish_ops(ctx, &ops, result, |ctx| ctx.ok())
    }

    fn cmd_mget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.array(ctx.argc() - 1);
        for i in 1..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            self.stats.reads += 1;
            match self.store.get(ctx.pool, &key, ctx.now)? {
                Some(value) => self.reply_value(ctx, &value)?,
                None => ctx.null(),
            }
        }
        Ok(())
    }

    fn incr_by(&mut self, ctx: &mut Ctx<'_>, by: i64) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let current = match self.string_of(ctx, &key)? {
            Ok(Some(value)) => {
                if value_len(&value) > 20 {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                }
                match parse_i64(&value_bytes(ctx.pool, &value)?) {
                    Some(n) => n,
                    None => {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    }
                }
            }
            Ok(None) => 0,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let Some(next) = current.checked_add(by) else {
            ctx.error("ERR increment or decrement would overflow");
            return Ok(());
        };
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let mut text = Vec::new();
        crate::proto::resp::push_int(&mut text, next);
        let put = self.put_bytes(ctx, string_key(&key), &text)?;
        ops.push(put);
        self.apply(ctx, &ops)?;
        ctx.int(next);
        Ok(())
    }

    fn cmd_incr(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.incr_by(ctx, 1)
    }

    fn cmd_decr(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.incr_by(ctx, -1)
    }

    fn cmd_incrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_i64(&ctx.arg(2)) {
            Some(by) => self.incr_by(ctx, by),
            None => {
                ctx.error(NOT_INTEGER);
                Ok(())
            }
        }
    }

    fn cmd_decrby(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match parse_i64(&ctx.arg(2)).and_then(i64::checked_neg) {
            Some(by) => self.incr_by(ctx, by),
            None => {
                ctx.error(NOT_INTEGER);
                Ok(())
            }
        }
    }

    fn cmd_append(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let old = match self.string_of(ctx, &key)? {
            Ok(old) => old,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let old_len = old.as_ref().map_or(0, value_len);
        let add_len = ctx.conn.args.arg_len(2);
        let total = old_len + add_len;
        if total > self.config.value_size_max {
            ctx.error(&format!("ERR string exceeds maximum allowed size ({} bytes)", self.config.value_size_max));
            return Ok(());
        }
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        // The new value: the old value's extents and the argument's, both
        // where they already are (zero copy), or copied when small.
        let mut extents = Vec::new();
        let result = (|| {
            match &old {
                Some(Value::Inline(bytes)) => extents.extend(self.store.stage(ctx.pool, ctx.buffers, bytes)?),
                Some(value) => {
                    for extent in value_extents(ctx.pool, value)? {
                        ctx.buffers.retain(extent.buffer)?;
                        extents.push(extent);
                    }
                }
                None => {}
            }
            match ctx.conn.args.extents(2) {
                Some(arg) => {
                    for extent in arg {
                        ctx.buffers.retain(extent.buffer)?;
                        extents.push(*extent);
                    }
                    self.stage_bytes(ctx.conn.args.arg_len(2), true);
                }
                None => {
                    let bytes = ctx.arg(2).into_owned();
                    extents.extend(self.store.stage(ctx.pool, ctx.buffers, &bytes)?);
                    self.stage_bytes(bytes.len() as u64, false);
                }
            }
            Ok::<(), StoreError>(())
        })();
        if let Err(error) = result {
            ctx.buffers.release_extents(&extents).expect("our references");
            return Err(error);
        }
        if extents.len() > crate::limits::RECORD_EXTENTS_MAX {
            // Too fragmented for one record: one copy into whole buffers.
            let mut bytes = Vec::with_capacity(total as usize);
            ctx.pool.read_extents(&extents, &mut bytes);
            ctx.buffers.release_extents(&extents).expect("our references");
            extents.clear();
            ctx.buffers.copy_in(ctx.pool, &bytes, &mut extents)?;
        }
        ops.push(Op::Put { key: string_key(&key), extents, len: total });
        self.apply(ctx, &ops)?;
        ctx.int(total as i64);
        Ok(())
    }

    fn cmd_strlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.string_of(ctx, &key)? {
            Ok(value) => ctx.int(value.as_ref().map_or(0, value_len) as i64),
            Err(()) => ctx.error(WRONGTYPE),
        }
        Ok(())
    }

    /// The hash at `key` exists as a hash (live), or is absent; Err if it
    /// is a string.
    fn hash_check(&self, ctx: &Ctx<'_>, key: &[u8]) -> Result<Result<bool, ()>, StoreError> {
        match self.store.key_type(ctx.pool, key, ctx.now)? {
            Some(KeyType::String) => Ok(Err(())),
            Some(KeyType::Hash) => Ok(Ok(true)),
            None => Ok(Ok(false)),
        }
    }

    fn cmd_hset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() % 2 != 0 {
            ctx.error("ERR wrong number of arguments for 'hset' command");
            return Ok(());
        }
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let mut ops = Vec::new();
        self.purge_if_expired(ctx, &key, &mut ops)?;
        let mut count = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        let mut added = 0;
        let mut seen = std::collections::HashSet::new();
        let result = (|| {
            for i in (2..ctx.argc()).step_by(2) {
                let field = ctx.arg(i).into_owned();
                if field.len() > FIELD_SIZE_MAX {
                    return Ok(Err(format!(
                        "ERR field of {} bytes is over the limit of {FIELD_SIZE_MAX}",
                        field.len()
                    )));
                }
                if seen.insert(field.clone()) && self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_none() {
                    added += 1;
                    count += 1;
                }
                let put = self.put_arg(ctx, field_key(&key, &field), i + 1)?;
                ops.push(put);
            }
            let header = self.put_bytes(ctx, hash_key(&key), &count.to_le_bytes())?;
            ops.push(header);
            Ok(Ok(()))
        })();
        self.finish_ops(ctx, &ops, result, |ctx| ctx.int(added))
    }

    fn cmd_hget(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        self.stats.reads += 1;
        match self.store.hash_get(ctx.pool, &key, &field, ctx.now)? {
            Some(value) => self.reply_value(ctx, &value)?,
            None => ctx.null(),
        }
        Ok(())
    }

    fn cmd_hdel(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        match self.hash_check(ctx, &key)? {
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
            Ok(false) => {
                ctx.int(0);
                return Ok(());
            }
            Ok(true) => {}
        }
        let mut count = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        let mut ops = Vec::new();
        let mut removed = 0;
        let mut seen = std::collections::HashSet::new();
        for i in 2..ctx.argc() {
            let field = ctx.arg(i).into_owned();
            if seen.insert(field.clone()) && self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_some() {
                ops.push(Op::Del { key: field_key(&key, &field) });
                removed += 1;
                count -= 1;
            }
        }
        if removed > 0 {
            if count == 0 {
                ops.push(Op::DelHash { name: key.clone() });
                if self.store.expiry(&key).is_some() {
                    ops.push(Op::Del { key: expire_key(&key) });
                }
            } else {
                let header = self.put_bytes(ctx, hash_key(&key), &count.to_le_bytes())?;
                ops.push(header);
            }
            self.apply(ctx, &ops)?;
        }
        ctx.int(removed);
        Ok(())
    }

    fn cmd_hgetall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let fields = self.store.hash_fields(ctx.pool, &key, ctx.now)?;
        ctx.map(fields.len());
        for (field, value) in fields {
            ctx.bulk(&field);
            self.reply_value(ctx, &value)?;
        }
        Ok(())
    }

    fn cmd_hlen(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let len = self.store.hash_len(ctx.pool, &key, ctx.now)?;
        ctx.int(len as i64);
        Ok(())
    }

    fn cmd_hexists(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let (key, field) = (ctx.arg(1).into_owned(), ctx.arg(2).into_owned());
        if self.hash_check(ctx, &key)?.is_err() {
            ctx.error(WRONGTYPE);
            return Ok(());
        }
        let found = self.store.hash_get(ctx.pool, &key, &field, ctx.now)?.is_some();
        ctx.int(i64::from(found));
        Ok(())
    }

    fn cmd_keys(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let pattern = ctx.arg(1).into_owned();
        let (keys, _) = self.store.scan(ctx.pool, None, usize::MAX, ctx.now, |key| glob_match(&pattern, key))?;
        ctx.array(keys.len());
        for key in keys {
            ctx.bulk(&key);
        }
        Ok(())
    }

    fn cmd_scan(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(cursor) = std::str::from_utf8(&ctx.arg(1)).ok().and_then(|c| c.parse::<u64>().ok()) else {
            ctx.error("ERR invalid cursor");
            return Ok(());
        };
        let (mut pattern, mut count, mut type_filter) = (None, 10usize, None);
        let mut i = 2;
        while i < ctx.argc() {
            let option = ctx.conn.args.upper(i).unwrap_or_default();
            if i + 1 >= ctx.argc() {
                ctx.error(SYNTAX);
                return Ok(());
            }
            match option.as_slice() {
                b"MATCH" => pattern = Some(ctx.arg(i + 1).into_owned()),
                b"COUNT" => match parse_i64(&ctx.arg(i + 1)) {
                    Some(n) if n >= 1 => count = n.min(1_000_000) as usize,
                    Some(_) => {
                        ctx.error(SYNTAX);
                        return Ok(());
                    }
                    None => {
                        ctx.error(NOT_INTEGER);
                        return Ok(());
                    }
                },
                b"TYPE" => type_filter = Some(ctx.arg(i + 1).to_ascii_lowercase()),
                _ => {
                    ctx.error(SYNTAX);
                    return Ok(());
                }
            }
            i += 2;
        }
        let after = if cursor == 0 {
            None
        } else {
            // An unknown cursor (forgotten) starts over.
            self.scan_cursors.iter().find(|(id, _)| *id == cursor).map(|(_, key)| key.clone())
        };
        let (pool, now) = (ctx.pool, ctx.now);
        let store = &self.store;
        let (keys, last) = store.scan(pool, after.as_deref(), count, now, |key| {
            pattern.as_ref().is_none_or(|p| glob_match(p, key))
                && type_filter.as_ref().is_none_or(|t| {
                    let kind = store.key_type(pool, key, now).ok().flatten();
                    matches!((t.as_slice(), kind), (b"string", Some(KeyType::String)) | (b"hash", Some(KeyType::Hash)))
                })
        })?;
        let next = match last {
            Some(key) => {
                let id = self.next_cursor;
                self.next_cursor += 1;
                if self.scan_cursors.len() >= SCAN_CURSORS_MAX {
                    self.scan_cursors.pop_front();
                }
                self.scan_cursors.push_back((id, key));
                id
            }
            None => 0,
        };
        ctx.array(2);
        ctx.bulk(next.to_string().as_bytes());
        ctx.array(keys.len());
        for key in keys {
            ctx.bulk(&key);
        }
        Ok(())
    }

    fn cmd_flushall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() > 2 || (ctx.argc() == 2 && !matches!(ctx.conn.args.upper(1).as_deref(), Some(b"SYNC" | b"ASYNC")))
        {
            ctx.error(SYNTAX);
            return Ok(());
        }
        self.apply(ctx, &[Op::Flush])?;
        self.scan_cursors.clear();
        ctx.ok();
        Ok(())
    }

    fn cmd_type(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let name = match self.store.key_type(ctx.pool, &key, ctx.now)? {
            Some(KeyType::String) => "string",
            Some(KeyType::Hash) => "hash",
            None => "none",
        };
        let enc = ctx.enc();
        enc.simple(ctx.out.bytes(), name);
        Ok(())
    }

    fn ttl_ms(&self, ctx: &Ctx<'_>) -> Result<i64, StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() {
            return Ok(-2);
        }
        Ok(self.store.expiry(&key).map_or(-1, |at| at.saturating_sub(ctx.now) as i64))
    }

    fn cmd_ttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.ttl_ms(ctx)?;
        ctx.int(if ms < 0 { ms } else { (ms + 500) / 1000 });
        Ok(())
    }

    fn cmd_pttl(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ms = self.ttl_ms(ctx)?;
        ctx.int(ms);
        Ok(())
    }

    fn expire_in(&mut self, ctx: &mut Ctx<'_>, scale: i64) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        let Some(at) =
            parse_i64(&ctx.arg(2)).and_then(|n| n.checked_mul(scale)).and_then(|ms| ms.checked_add(ctx.now as i64))
        else {
            ctx.error(NOT_INTEGER);
            return Ok(());
        };
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() {
            ctx.int(0);
            return Ok(());
        }
        let mut ops = Vec::new();
        if at <= ctx.now as i64 {
            self.delete_ops(ctx.pool, &key, &mut ops)?;
        } else {
            let put = self.put_bytes(ctx, expire_key(&key), &(at as u64).to_le_bytes())?;
            ops.push(put);
        }
        self.apply(ctx, &ops)?;
        ctx.int(1);
        Ok(())
    }

    fn cmd_expire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_in(ctx, 1000)
    }

    fn cmd_pexpire(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.expire_in(ctx, 1)
    }

    fn cmd_persist(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if self.store.key_type(ctx.pool, &key, ctx.now)?.is_none() || self.store.expiry(&key).is_none() {
            ctx.int(0);
            return Ok(());
        }
        self.apply(ctx, &[Op::Del { key: expire_key(&key) }])?;
        ctx.int(1);
        Ok(())
    }

    // ---- HTTP (pKVS) ----

    #[allow(clippy::too_many_arguments, clippy::too_many_lines)] // TODO(issue 16): split with the KV server
    fn serve_http(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut progress = Progress::default();
        while progress.requests < requests_max && !progress.close && !out.is_full() {
            if conn.http.is_some() {
                if !self.take_http_body(pool, buffers, conn, stream, release) {
                    break;
                }
                let body = conn.http.take().expect("checked");
                progress.close |= !body.keep_alive;
                self.finish_put(pool, buffers, body, out);
                progress.requests += 1;
                continue;
            }
            if stream.is_empty() {
                break;
            }
            if !self.store.batch_has_room() {
                progress.more = true;
                break;
            }
            let head = match http::parse_head(stream.prefix(http::HEAD_SIZE_MAX), self.config.value_size_max) {
                Ok(head) => head,
                Err(HeadError::Incomplete) => break,
                Err(HeadError::Refuse(status, why)) => {
                    http::respond(out.bytes(), status, &[], why.as_bytes(), false);
                    self.stats.errors += 1;
                    progress.close = true;
                    break;
                }
            };
            let target = stream.prefix(http::HEAD_SIZE_MAX)[head.target.clone()].to_vec();
            let authorized = self.http_authorized(&target, &head, stream.prefix(http::HEAD_SIZE_MAX));
            stream.consume(head.head_len, |segment| release(segment, buffers));
            self.stats.http_requests += 1;
            progress.requests += 1;
            progress.close |= !head.keep_alive;
            let before = (self.stats.errors, self.stats.refused_full);
            let kind = match head.method {
                Method::Get | Method::Head => READ,
                Method::Put | Method::Post | Method::Delete => WRITE,
            };
            if !authorized {
                // A refused body is not read: the connection closes.
                let keep_alive = head.keep_alive && head.content_length == 0;
                http::respond_unauthorized(out.bytes(), keep_alive);
                progress.close |= !keep_alive;
                self.count_request(HTTP, kind, before, true);
                continue;
            }
            if target == b"/metrics" && head.method == Method::Get && head.content_length == 0 {
                let text = self.metrics_text(pool, buffers);
                http::respond_typed(out.bytes(), 200, http::METRICS_CONTENT_TYPE, text.as_bytes(), head.keep_alive);
                self.count_request(HTTP, OTHER, before, false);
                continue;
            }
            let key = match target.strip_prefix(b"/kv/").map(percent_decode) {
                Some(Some(key)) if !key.is_empty() && key.len() <= KEY_SIZE_MAX => key,
                Some(Some(key)) if key.len() > KEY_SIZE_MAX => {
                    http::respond(out.bytes(), 414, &[], b"key too long\n", false);
                    progress.close = true;
                    self.count_request(HTTP, kind, before, true);
                    continue;
                }
                _ => {
                    if head.content_length > 0 {
                        http::respond(out.bytes(), 404, &[], b"no such path: use /kv/<key> or /metrics\n", false);
                        progress.close = true;
                    } else {
                        let why = b"no such path: use /kv/<key> or /metrics\n";
                        http::respond(out.bytes(), 404, &[], why, head.keep_alive);
                    }
                    self.count_request(HTTP, OTHER, before, true);
                    continue;
                }
            };
            let mut failed = false;
            match head.method {
                Method::Put | Method::Post => {
                    conn.http = Some(HttpBody {
                        key,
                        keep_alive: head.keep_alive,
                        remaining: head.content_length,
                        len: head.content_length,
                        extents: Vec::new(),
                        copy_fill: None,
                        refused: false,
                    });
                    progress.requests -= 1; // counted when the body is in
                                            // A close waits for the body and its reply.
                    progress.close = false;
                    continue;
                }
                Method::Get | Method::Head if head.content_length == 0 => {
                    self.stats.reads += 1;
                    let now = now_ms();
                    match self.store.get(pool, &key, now) {
                        Ok(Some(value)) => {
                            let mut ctx = Ctx { pool, buffers, conn, out, now, close: false, failed: false };
                            let body = head.method == Method::Get;
                            if let Err(error) = self.reply_http_value(&mut ctx, &value, body, head.keep_alive) {
                                http::respond(out.bytes(), 500, &[], error.to_string().as_bytes(), head.keep_alive);
                                failed = true;
                            }
                        }
                        Ok(None) => http::respond(out.bytes(), 404, &[], b"", head.keep_alive),
                        Err(error) => {
                            http::respond(out.bytes(), 500, &[], error.to_string().as_bytes(), head.keep_alive);
                            failed = true;
                        }
                    }
                }
                Method::Delete if head.content_length == 0 => {
                    let now = now_ms();
                    let mut ops = Vec::new();
                    let mut ctx = Ctx { pool, buffers, conn, out, now, close: false, failed: false };
                    let live = self.store.get(pool, &key, now).map(|v| v.is_some());
                    let result = live.and_then(|live| {
                        self.delete_ops(ctx.pool, &key, &mut ops)?;
                        self.apply(&mut ctx, &ops)?;
                        Ok(live)
                    });
                    match result {
                        Ok(true) => http::respond(out.bytes(), 204, &[], b"", head.keep_alive),
                        Ok(false) => http::respond(out.bytes(), 404, &[], b"", head.keep_alive),
                        Err(error) => {
                            http::respond(out.bytes(), 500, &[], error.to_string().as_bytes(), head.keep_alive);
                            failed = true;
                        }
                    }
                }
                _ => {
                    http::respond(out.bytes(), 405, &[], b"use GET, HEAD, PUT, POST or DELETE\n", false);
                    progress.close = true;
                    failed = true;
                }
            }
            self.count_request(HTTP, kind, before, failed);
        }
        progress
    }

    /// Whether an HTTP request may proceed: no password is set, it is for
    /// /metrics left public (`--metrics-public`), or its `Authorization`
    /// carries the password.
    fn http_authorized(&self, target: &[u8], head: &http::RequestHead, head_bytes: &[u8]) -> bool {
        if self.config.requirepass.is_none() || (target == b"/metrics" && self.config.metrics_public) {
            return true;
        }
        let password = head.authorization.clone().and_then(|range| http::authorization_password(&head_bytes[range]));
        password.is_some_and(|password| self.check_password(None, &password).is_ok())
    }

    /// A 200 with the value as its body (unless `body` is false: HEAD),
    /// from the pool or copied. On an error nothing is queued.
    fn reply_http_value(
        &mut self,
        ctx: &mut Ctx<'_>,
        value: &Value,
        body: bool,
        keep_alive: bool,
    ) -> Result<(), StoreError> {
        let len = value_len(value);
        if !body {
            http::respond_head(ctx.out.bytes(), 200, &[], len as usize, keep_alive);
        } else if len >= self.config.zero_copy_min && !matches!(value, Value::Inline(_)) {
            let extents = value_extents(ctx.pool, value)?;
            http::respond_head(ctx.out.bytes(), 200, &[], len as usize, keep_alive);
            self.push_extents(ctx, &extents);
            self.stats.bytes_sent_zero_copy += len;
        } else {
            // Copied from the pool (or the leaf) straight into the reply.
            http::respond_head(ctx.out.bytes(), 200, &[], len as usize, keep_alive);
            match value {
                Value::Inline(bytes) => ctx.out.push(bytes),
                _ => ctx.pool.read_extents(&value_extents(ctx.pool, value)?, ctx.out.bytes()),
            }
            self.stats.bytes_sent_copied += len;
        }
        Ok(())
    }

    /// Moves body bytes into the request; true when the whole body is in.
    fn take_http_body(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        release: &mut Release<'_>,
    ) -> bool {
        let body = conn.http.as_mut().expect("a body in flight");
        let take = body.remaining.min(stream.len() as u64) as usize;
        if take > 0 {
            if !body.refused && buffers.free_count() < self.config.buffers_reserve {
                body.refused = true;
                buffers.release_extents(&body.extents).expect("the request's references");
                body.extents.clear();
            }
            let zero_copy = self.config.persist == Persist::ZeroCopy;
            if !body.refused
                && stream.keep(pool, buffers, take, zero_copy, &mut body.extents, &mut body.copy_fill).is_err()
            {
                body.refused = true;
                buffers.release_extents(&body.extents).expect("the request's references");
                body.extents.clear();
            }
            stream.consume(take, |segment| release(segment, buffers));
            body.remaining -= take as u64;
        }
        body.remaining == 0
    }

    fn finish_put(&mut self, pool: &Pool, buffers: &mut Buffers, body: HttpBody, out: &mut OutQueue) {
        let before = (self.stats.errors, self.stats.refused_full);
        self.store_put(pool, buffers, body, out);
        self.count_request(HTTP, WRITE, before, false);
    }

    fn store_put(&mut self, pool: &Pool, buffers: &mut Buffers, body: HttpBody, out: &mut OutQueue) {
        if body.refused {
            http::respond(out.bytes(), 507, &[], b"the pool is full: the value was not stored\n", body.keep_alive);
            self.stats.refused_full += 1;
            return;
        }
        let now = now_ms();
        let mut ops = Vec::new();
        let result = (|| {
            self.clear_for_string(pool, now, &body.key, false, &mut ops)?;
            // The op takes over the request's references.
            ops.push(Op::Put { key: string_key(&body.key), extents: body.extents.clone(), len: body.len });
            let writes = self.store.check_room_for_write(buffers);
            writes.and_then(|()| self.store.apply(pool, buffers, &ops))
        })();
        Store::release_ops(buffers, &ops);
        if ops.is_empty() {
            buffers.release_extents(&body.extents).expect("the request's references");
        }
        match result {
            Ok(()) => {
                self.stage_bytes(body.len, true);
                self.count_write();
                http::respond(out.bytes(), 204, &[], b"", body.keep_alive)
            }
            Err(error) if error.is_full() => {
                self.stats.refused_full += 1;
                http::respond(out.bytes(), 507, &[], format!("{error}\n").as_bytes(), body.keep_alive)
            }
            Err(error) => {
                self.stats.errors += 1;
                http::respond(out.bytes(), 500, &[], format!("{error}\n").as_bytes(), body.keep_alive)
            }
        }
    }

    /// Ops deleting `key` whatever its type (expired or not), and its
    /// expiry.
    fn delete_ops(&self, pool: &Pool, key: &[u8], ops: &mut Vec<Op>) -> Result<(), StoreError> {
        if self.store.get_raw(pool, &string_key(key))?.is_some() {
            ops.push(Op::Del { key: string_key(key) });
        }
        if self.store.get_raw(pool, &hash_key(key))?.is_some() {
            ops.push(Op::DelHash { name: key.to_vec() });
        }
        if self.store.expiry(key).is_some() {
            ops.push(Op::Del { key: expire_key(key) });
        }
        Ok(())
    }
}

/// `%xx` escapes decoded; None if an escape is malformed.
pub fn percent_decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' {
            // Exactly two hex digits (from_str_radix alone would also take
            // a sign: "%+1").
            let digit = |at: usize| (*text.get(at)? as char).to_digit(16);
            out.push((digit(i + 1)? << 4 | digit(i + 2)?) as u8);
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    Some(out)
}

impl App for KvServer {
    type Conn = KvConn;
    type Ticket = StoreTicket;

    fn persist(&self) -> Persist {
        self.config.persist
    }

    fn connect(&mut self, listener: usize) -> KvConn {
        let id = self.next_client_id;
        self.next_client_id += 1;
        KvConn {
            listener,
            id,
            name: None,
            authenticated: self.config.requirepass.is_none(),
            in_refused_multi: false,
            encoder: Encoder { resp3: false },
            parser: Parser::default(),
            args: Args::default(),
            http: None,
        }
    }

    fn on_input(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        if conn.listener == LISTENER_HTTP {
            self.serve_http(pool, buffers, conn, stream, out, requests_max, release)
        } else {
            self.serve_resp(pool, buffers, conn, stream, out, requests_max, release)
        }
    }

    fn abandon(&mut self, buffers: &mut Buffers, conn: &mut KvConn) {
        conn.parser.abandon(buffers, &mut conn.args);
        if let Some(body) = conn.http.take() {
            buffers.release_extents(&body.extents).expect("the request's references");
        }
    }

    fn needs_commit(&self) -> bool {
        self.store.needs_commit()
    }

    fn writes_pending(&self) -> bool {
        self.store.writes_pending()
    }

    fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<()> {
        self.observe_batch();
        self.store.commit(pool, buffers).map_err(std::io::Error::other)
    }

    fn begin_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<Option<StoreTicket>> {
        self.observe_batch();
        self.store.begin_commit(pool, buffers).map_err(std::io::Error::other)
    }

    fn finish_commit(&mut self, pool: &Pool, buffers: &mut Buffers, ticket: StoreTicket) -> std::io::Result<()> {
        self.store.finish_commit(pool, buffers, ticket).map_err(std::io::Error::other)
    }

    fn fail_commit(&mut self) {
        self.store.fail_commit()
    }

    fn set_io_counters(&mut self, counters: IoCounters) {
        self.io = counters;
    }

    /// Reclamation walk steps, active expiry, and checkpoint scheduling.
    fn tick(&mut self, pool: &Pool, buffers: &mut Buffers) {
        if self.store.is_reclaiming() {
            if let Err(error) = self.store.reclaim_step(pool, buffers, 64) {
                tracing::error!("the tree's reclamation walk stopped: {error}");
            }
        }
        self.store.note_buffers(buffers);
        let idle = self.stats.commands == self.commands_at_tick;
        self.commands_at_tick = self.stats.commands;
        let before = self.store.compaction();
        if let Err(error) = self.store.compact_step(pool, buffers, idle) {
            tracing::error!("a compaction step failed: {error}");
        }
        let after = self.store.compaction();
        if after.running && !before.running {
            tracing::info!(waste_pct = format!("{:.1}", self.store.waste_ratio() * 100.0), "compaction started");
        } else if before.running && !after.running {
            tracing::info!(
                values = after.relocated_values - before.relocated_values,
                bytes = after.relocated_bytes - before.relocated_bytes,
                total_passes = after.relocation_passes,
                "compaction pass done"
            );
        }
        let now = now_ms();
        let expired = self.store.expired_keys(now, EXPIRE_PER_TICK_MAX);
        if expired.is_empty() || !self.store.batch_has_room() {
            return;
        }
        let mut removed = 0;
        for key in expired {
            let mut ops = Vec::new();
            if self.delete_ops(pool, &key, &mut ops).is_err() {
                continue;
            }
            if self.store.apply(pool, buffers, &ops).is_ok() {
                removed += 1;
            }
        }
        self.store.note_expired(removed);
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn percent_escapes_take_exactly_two_hex_digits() {
        assert_eq!(percent_decode(b"a%20b%2F%2f"), Some(b"a b//".to_vec()));
        assert_eq!(percent_decode(b"%00%ff"), Some(vec![0, 255]));
        // Found by fuzzing (fuzz/regressions/http_head/percent-plus-sign):
        // u8::from_str_radix accepted a sign, so "%+1" decoded to 0x01.
        for bad in [&b"%+1"[..], b"%-1", b"%1", b"%", b"%zz", b"%1g"] {
            assert_eq!(percent_decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
