//! SLOWLOG (GET, LEN, RESET, HELP) and the log it reads: commands that
//! ran at least `slowlog-log-slower-than` microseconds, newest first, at
//! most `slowlog-max-len` of them (Redis 7's `slowlog.c`).
//!
//! Invariant: the log is volatile and bounded (`slowlog-max-len`
//! entries, each at most `ARGS_MAX` arguments of at most
//! `ARG_BYTES_MAX` bytes), as in Redis; recording one costs nothing when
//! the command was fast (one compare). EXEC is not logged, the commands
//! it ran are; AUTH's arguments and a password's value are redacted.

use std::collections::VecDeque;

use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

/// Arguments kept of a logged command (the last slot says how many more).
const ARGS_MAX: usize = 32;
/// Bytes kept of one argument.
const ARG_BYTES_MAX: usize = 128;
/// Redis's defaults of `slowlog-log-slower-than` and `slowlog-max-len`.
const SLOWER_THAN_US_DEFAULT: i64 = 10_000;
const MAX_LEN_DEFAULT: usize = 128;

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

struct Entry {
    id: u64,
    unix_s: u64,
    duration_us: u64,
    args: Vec<Vec<u8>>,
    addr: String,
    name: Vec<u8>,
}

/// The log and its two settings.
pub(in crate::apps::kv) struct Slowlog {
    entries: VecDeque<Entry>,
    next_id: u64,
    /// `slowlog-log-slower-than` (negative: off).
    slower_than_us: i64,
    /// `slowlog-max-len`.
    max_len: usize,
}

impl Default for Slowlog {
    fn default() -> Self {
        Slowlog {
            entries: VecDeque::new(),
            next_id: 0,
            slower_than_us: SLOWER_THAN_US_DEFAULT,
            max_len: MAX_LEN_DEFAULT,
        }
    }
}

impl Slowlog {
    /// Whether a command that took `duration_us` is logged.
    pub(in crate::apps::kv) fn wants(&self, duration_us: u64) -> bool {
        self.slower_than_us >= 0 && duration_us >= self.slower_than_us as u64
    }

    /// `slowlog-log-slower-than` (negative: off).
    pub(in crate::apps::kv) fn slower_than_us(&self) -> i64 {
        self.slower_than_us
    }

    pub(in crate::apps::kv) fn set_slower_than(&mut self, value: &str) {
        self.slower_than_us = value.parse().unwrap_or(SLOWER_THAN_US_DEFAULT);
    }

    pub(in crate::apps::kv) fn set_max_len(&mut self, value: &str) {
        self.max_len = value.parse().unwrap_or(MAX_LEN_DEFAULT);
    }

    /// `slowlog-max-len`.
    pub(in crate::apps::kv) fn max_len(&self) -> usize {
        self.max_len
    }

    /// Logs a command: its name and arguments (trimmed), who sent it; its
    /// id is `id` (a sharded server's, of every shard's log) or the log's
    /// next.
    pub(in crate::apps::kv) fn push(
        &mut self,
        args: Vec<Vec<u8>>,
        duration_us: u64,
        (addr, name): (String, Vec<u8>),
        id: Option<u64>,
    ) {
        let unix_s = crate::store::db::now_ms() / 1000;
        let id = id.unwrap_or(self.next_id);
        let entry = Entry { id, unix_s, duration_us, args: trimmed(redacted(args)), addr, name };
        self.next_id = id + 1;
        self.entries.push_front(entry);
        self.entries.truncate(self.max_len);
    }
}

/// Redis's redactions: AUTH's arguments, HELLO's AUTH pair, the value of
/// CONFIG SET of a password.
pub(in crate::apps::kv) fn redacted(mut args: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let name = args.first().map(|a| a.to_ascii_lowercase()).unwrap_or_default();
    let hide = |arg: &mut Vec<u8>| *arg = b"(redacted)".to_vec();
    match name.as_slice() {
        b"auth" => args.iter_mut().skip(1).for_each(hide),
        b"hello" => {
            if let Some(at) = args.iter().position(|a| a.eq_ignore_ascii_case(b"AUTH")) {
                args.iter_mut().skip(at + 1).take(2).for_each(hide);
            }
        }
        b"config" if args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"SET")) => {
            for i in (2..args.len()).step_by(2) {
                let secret = [b"requirepass".as_slice(), b"masterauth"].iter().any(|p| args[i].eq_ignore_ascii_case(p));
                if secret {
                    if let Some(value) = args.get_mut(i + 1) {
                        hide(value);
                    }
                }
            }
        }
        _ => {}
    }
    args
}

/// At most `ARGS_MAX` arguments of at most `ARG_BYTES_MAX` bytes each,
/// with Redis's notes on what was cut.
fn trimmed(args: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let total = args.len();
    let kept = if total > ARGS_MAX { ARGS_MAX - 1 } else { total };
    let mut out: Vec<Vec<u8>> = args
        .into_iter()
        .take(kept)
        .map(|mut arg| {
            if arg.len() > ARG_BYTES_MAX {
                let more = arg.len() - ARG_BYTES_MAX;
                arg.truncate(ARG_BYTES_MAX);
                arg.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
            }
            arg
        })
        .collect();
    if total > kept {
        out.push(format!("... ({} more arguments)", total - kept).into_bytes());
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_commands_and_arguments_are_cut_as_redis_cuts_them() {
        let args: Vec<Vec<u8>> = (0..33).map(|n| n.to_string().into_bytes()).collect();
        let out = trimmed(args);
        assert_eq!(out.len(), 32);
        assert_eq!(out[31], b"... (2 more arguments)");
        let out = trimmed(vec![b"sadd".to_vec(), vec![b'A'; 129]]);
        assert_eq!(out[1].len(), 128 + "... (1 more bytes)".len());
        assert!(out[1].ends_with(b"A... (1 more bytes)"));
    }

    #[test]
    fn secrets_are_redacted() {
        let args = |words: &[&str]| words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(redacted(args(&["AUTH", "user", "pw"])), args(&["AUTH", "(redacted)", "(redacted)"]));
        assert_eq!(
            redacted(args(&["config", "set", "requirepass", "pw", "maxclients", "9"])),
            args(&["config", "set", "requirepass", "(redacted)", "maxclients", "9"])
        );
        assert_eq!(
            redacted(args(&["hello", "3", "auth", "u", "p", "setname", "n"])),
            args(&["hello", "3", "auth", "(redacted)", "(redacted)", "setname", "n"])
        );
    }

    #[test]
    fn the_log_keeps_the_newest_up_to_its_length() {
        let mut log = Slowlog::default();
        log.set_max_len("3");
        for n in 0..5u64 {
            log.push(vec![n.to_string().into_bytes()], n, (String::new(), Vec::new()), None);
        }
        let ids: Vec<u64> = log.entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 3, 2]);
        log.set_slower_than("-1");
        assert!(!log.wants(u64::MAX));
        log.set_slower_than("0");
        assert!(log.wants(0));
    }
}
