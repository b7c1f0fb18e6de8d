//! What SLOWLOG keeps (`cmd/slowlog.rs` runs the command and notes each
//! command that ran): the log of slow commands, newest first, and its two
//! settings (`Slowlog`); and Redis's redaction of secrets in a logged (or
//! monitored) command's arguments (`redacted`).
//!
//! Invariant: the log is bounded: at most `slowlog-max-len` entries, each
//! at most `ARGS_MAX` arguments of at most `ARG_BYTES_MAX` bytes, with
//! AUTH's arguments and a password's value redacted.

use std::collections::VecDeque;

/// Arguments kept of a logged command (the last slot says how many more).
const ARGS_MAX: usize = 32;
/// Bytes kept of one argument.
const ARG_BYTES_MAX: usize = 128;
/// Redis's defaults of `slowlog-log-slower-than` and `slowlog-max-len`.
const SLOWER_THAN_US_DEFAULT: i64 = 10_000;
const MAX_LEN_DEFAULT: usize = 128;

/// One logged command.
pub(in crate::apps::kv) struct Entry {
    pub(in crate::apps::kv) id: u64,
    pub(in crate::apps::kv) unix_s: u64,
    pub(in crate::apps::kv) duration_us: u64,
    pub(in crate::apps::kv) args: Vec<Vec<u8>>,
    pub(in crate::apps::kv) addr: String,
    pub(in crate::apps::kv) name: Vec<u8>,
}

/// The log and its two settings.
pub(in crate::apps::kv) struct Slowlog {
    pub(in crate::apps::kv) entries: VecDeque<Entry>,
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
