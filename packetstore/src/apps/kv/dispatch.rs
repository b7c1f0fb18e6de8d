//! The command table and the Redis-protocol path: parsing a connection's
//! requests, finding each command (its family's table in `cmd/`),
//! checking arity, authentication and refused transactions, answering
//! unknown commands, and running the handler with panics caught.
//!
//! Adding a command family means adding a file to `cmd/` with its
//! `COMMANDS` table and one entry in `FAMILIES`, nothing else.
//!
//! Invariant: a handler that panics answers its client with an error and
//! the server goes on, unless the store was caught between its log and its
//! tree (`Store::is_consistent`), in which case the process stops and
//! recovery replays the log.

use std::fmt::Write as _;
use std::time::Duration;

use crate::apps::kv::cmd;
use crate::apps::kv::report::{OTHER, READ, RESP, WRITE};
use crate::apps::kv::server::{KvConn, KvServer};
use crate::io::app::{Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Encoder, Parsed};
use crate::store::db::{now_ms, StoreError};

pub(super) type Cmd = fn(&mut KvServer, &mut Ctx<'_>) -> Result<(), StoreError>;

/// A command's table entry, in COMMAND's terms.
pub(super) struct CommandEntry {
    /// Lower case.
    pub(super) name: &'static str,
    /// The number of arguments, the name included; negative: at least.
    pub(super) arity: i64,
    pub(super) flags: &'static [&'static str],
    /// First key, last key (negative: from the end), step.
    pub(super) keys: (i64, i64, i64),
    /// COMMAND DOCS's group: string, hash, generic, connection, server.
    pub(super) group: &'static str,
    pub(super) summary: &'static str,
    pub(super) handler: Cmd,
}

#[allow(clippy::too_many_arguments)]
pub(super) const fn cmd(
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
    pub(super) fn find(name: &[u8]) -> Option<&'static CommandEntry> {
        all_commands().find(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Whether `argc` arguments (the name included) fit its arity.
    pub(super) fn arity_fits(&self, argc: i64) -> bool {
        (self.arity > 0 && argc == self.arity) || (self.arity < 0 && argc >= -self.arity)
    }

    pub(super) fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// Redis 7's ACL categories, from the flags and the group.
    pub(super) fn acl_categories(&self) -> Vec<&'static str> {
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
pub(super) struct Ctx<'a> {
    pub(super) pool: &'a Pool,
    pub(super) buffers: &'a mut Buffers,
    pub(super) conn: &'a mut KvConn,
    pub(super) out: &'a mut OutQueue,
    pub(super) now: u64,
    pub(super) close: bool,
    /// An error reply was written.
    pub(super) failed: bool,
}

impl Ctx<'_> {
    pub(super) fn enc(&self) -> Encoder {
        self.conn.encoder
    }

    pub(super) fn arg(&self, i: usize) -> std::borrow::Cow<'_, [u8]> {
        self.conn.args.bytes(self.pool, i)
    }

    pub(super) fn argc(&self) -> usize {
        self.conn.args.len()
    }

    pub(super) fn error(&mut self, text: &str) {
        self.failed = true;
        let enc = self.enc();
        enc.error(self.out.bytes(), text);
    }

    pub(super) fn ok(&mut self) {
        self.out.push(b"+OK\r\n");
    }

    pub(super) fn int(&mut self, value: i64) {
        let enc = self.enc();
        enc.int(self.out.bytes(), value);
    }

    pub(super) fn null(&mut self) {
        let enc = self.enc();
        enc.null(self.out.bytes());
    }

    pub(super) fn bulk(&mut self, bytes: &[u8]) {
        let enc = self.enc();
        enc.bulk(self.out.bytes(), bytes);
    }

    pub(super) fn array(&mut self, len: usize) {
        let enc = self.enc();
        enc.array(self.out.bytes(), len);
    }

    pub(super) fn map(&mut self, len: usize) {
        let enc = self.enc();
        enc.map(self.out.bytes(), len);
    }
}

/// Answered to the commands of a connection whose MULTI was refused.
pub(super) const MULTI_REFUSED: &str =
    "EXECABORT MULTI is not supported yet, so this connection refuses every command until EXEC or DISCARD";

/// Cross-protocol attempts are logged at most this often.
pub(super) const CROSS_PROTOCOL_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Whether a Redis command name is an HTTP request's first word or a
/// header (Redis's `securityWarningCommand` test).
pub(super) fn is_http_line(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

/// A panic's message.
pub(super) fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text.to_string(),
        (_, Some(text)) => text.clone(),
        _ => "a panic".to_string(),
    }
}

impl KvServer {
    pub(super) fn check_password(&self, user: Option<&[u8]>, password: &[u8]) -> Result<(), &'static str> {
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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn serve_resp(
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
    pub(super) fn execute(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> bool {
        let before = (self.stats.errors, self.stats.refused_full);
        let (close, kind, failed) = self.run_command(pool, buffers, conn, out);
        self.count_request(RESP, kind, before, failed);
        close
    }

    /// `execute`'s work; also returns the command's kind and whether its
    /// reply was an error.
    pub(super) fn run_command(
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
    pub(super) fn check_command(&mut self, ctx: &mut Ctx<'_>, entry: Option<&CommandEntry>) -> Result<(), String> {
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
    pub(super) fn warn_cross_protocol(&mut self, ctx: &Ctx<'_>) {
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
}

/// The command families, each a file of `cmd/` with its table, in
/// COMMAND's order. A new family is a file and one entry here.
const FAMILIES: &[&[CommandEntry]] = &[
    cmd::server::COMMANDS,
    cmd::command::COMMANDS,
    cmd::strings::COMMANDS,
    cmd::keys::COMMANDS,
    cmd::hashes::COMMANDS,
];

/// Every command, family by family.
pub(super) fn all_commands() -> impl Iterator<Item = &'static CommandEntry> {
    FAMILIES.iter().flat_map(|family| family.iter())
}

/// The number of commands (COMMAND COUNT).
pub(super) fn command_count() -> usize {
    FAMILIES.iter().map(|family| family.len()).sum()
}
