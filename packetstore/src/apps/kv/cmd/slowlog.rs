//! SLOWLOG (GET, LEN, RESET, HELP) and the log it reads: commands that
//! ran at least `slowlog-log-slower-than` microseconds, newest first, at
//! most `slowlog-max-len` of them (Redis 7's `slowlog.c`).
//!
//! The log itself (`Slowlog`) and the redaction are in `kept/slowlog.rs`.
//!
//! Invariant: the log is volatile and bounded (`slowlog-max-len`
//! entries, each at most `ARGS_MAX` arguments of at most
//! `ARG_BYTES_MAX` bytes), as in Redis; recording one costs nothing when
//! the command was fast (one compare). EXEC is not logged, the commands
//! it ran are; AUTH's arguments and a password's value are redacted.

use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("slowlog", -2, &["admin", "random", "loading", "stale"], (0, 0, 0), "server", "Reads or resets the log of slow commands.", KvServer::cmd_slowlog),
];

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

impl KvServer {
    /// Logs the command `ctx` just ran, if it was slow enough.
    pub(in crate::apps::kv) fn slowlog_note(&mut self, ctx: &Ctx<'_>, name: &str, duration_us: u64) {
        if !self.slowlog.wants(duration_us) || name == "exec" {
            return;
        }
        let args = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        let addr = self.clients.addr_of(ctx.conn.id);
        let client_name = ctx.conn.name.clone().unwrap_or_default();
        let id = self.across.as_ref().map(|exchange| exchange.next_slowlog_id());
        self.slowlog.push(args, duration_us, (addr, client_name), id);
    }

    fn cmd_slowlog(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.arg(1).to_ascii_uppercase();
        match (sub.as_slice(), ctx.argc()) {
            (b"GET", 2 | 3) => self.slowlog_get(ctx),
            (b"LEN", 2) => ctx.int(self.slowlog.entries.len() as i64),
            (b"RESET", 2) => {
                self.slowlog.entries.clear();
                ctx.ok();
            }
            (b"HELP", 2) => {
                ctx.array(HELP.len());
                HELP.iter().for_each(|line| ctx.enc().simple(ctx.out.bytes(), line));
            }
            _ => ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }

    fn slowlog_get(&mut self, ctx: &mut Ctx<'_>) {
        let count = if ctx.argc() == 3 {
            match crate::apps::kv::ops::parse_i64(&ctx.arg(2)) {
                Some(n) if n >= -1 => n,
                Some(_) => {
                    ctx.error("ERR count should be greater than or equal to -1");
                    return;
                }
                None => {
                    ctx.error(crate::apps::kv::ops::NOT_INTEGER);
                    return;
                }
            }
        } else {
            10
        };
        let shown =
            if count == -1 { self.slowlog.entries.len() } else { (count as usize).min(self.slowlog.entries.len()) };
        ctx.array(shown);
        for entry in self.slowlog.entries.iter().take(shown) {
            ctx.array(6);
            ctx.int(entry.id as i64);
            ctx.int(entry.unix_s as i64);
            ctx.int(entry.duration_us as i64);
            ctx.array(entry.args.len());
            entry.args.iter().for_each(|arg| ctx.bulk(arg));
            ctx.bulk(entry.addr.as_bytes());
            ctx.bulk(&entry.name);
        }
    }
}
