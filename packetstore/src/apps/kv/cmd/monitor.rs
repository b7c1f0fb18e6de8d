//! MONITOR, as Redis 7.0's `replicationFeedMonitors`: a monitoring
//! connection gets a status line for every command any client runs,
//! `+<seconds>.<microseconds> [<db> <addr>] "arg" "arg"...`, with `lua` for
//! the address of a command a script ran. A command is shown once it ran
//! (so EXEC's commands come before EXEC), except EVAL and FCALL and their
//! forms, shown before the commands their script runs; administrative and
//! `skip_monitor` commands, and commands refused before running, are not
//! shown. Passwords are redacted as SLOWLOG redacts them.
//!
//! Lines go to each monitor's mailbox (`pubsub.rs`): bounded, so a monitor
//! that stops reading is disconnected and never slows the server. On a
//! sharded server, a shard with a monitor says so in the exchange, and
//! every other shard sends it each line on the link (`MONITOR_LINE`).
//!
//! The list of monitors (`Monitors`) is in `kept/monitor.rs`.
//!
//! Invariant: a connection is a monitor from MONITOR until it goes (or
//! RESET); the list is empty unless someone monitors, and then costs one
//! check per command.

use crate::apps::kv::kept::slowlog::redacted;
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::store::db::StoreError;

#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("monitor", 1, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Streams every command the server runs, as it runs it.", KvServer::cmd_monitor),
];

/// A line for another shard's monitors, on the link to it:
/// `PACKETSTORE-MONITOR line`.
pub(in crate::apps::kv) const MONITOR_LINE: &[u8] = b"PACKETSTORE-MONITOR";

/// Whether the scripting commands that show themselves before their
/// script's commands (Redis feeds them from their handlers).
fn shown_first(name: &str) -> bool {
    matches!(name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
}

/// Redis's `sdscatrepr`: a quoted string, escapes for quotes, backslashes
/// and control characters, `\xHH` for other unprintable bytes.
fn quoted(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &byte in arg {
        match byte {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', byte]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(byte),
            _ => out.extend_from_slice(format!("\\x{byte:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

impl KvServer {
    fn cmd_monitor(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let id = ctx.conn.id;
        // Redis ignores MONITOR from a connection that already monitors.
        if !self.monitors.contains(id) {
            self.monitors.connections.push((id, ctx.conn.token));
            self.publish_monitoring();
            ctx.ok();
        }
        Ok(())
    }

    /// Tells the other shards whether this one has monitors (at once: the
    /// next command anywhere is shown).
    pub(in crate::apps::kv) fn publish_monitoring(&self) {
        if let Some(exchange) = self.across.as_ref() {
            exchange.set_monitoring(self.shard_index(), !self.monitors.is_empty());
        }
    }

    /// Whether any monitor, here or on another shard, sees this shard's
    /// commands; a part of a spanning command after its first is not
    /// shown (its first part is).
    pub(in crate::apps::kv) fn monitored(&self) -> bool {
        if self.uncounted {
            return false;
        }
        !self.monitors.is_empty()
            || self.across.as_ref().is_some_and(|exchange| exchange.monitored_elsewhere(self.shard_index()))
    }

    /// PACKETSTORE-MONITOR line, from another shard's link: the line goes
    /// to this shard's monitors.
    pub(in crate::apps::kv) fn monitor_line(&mut self, ctx: &mut Ctx<'_>) {
        let line = ctx.arg(1).into_owned();
        for &(monitor, token) in &self.monitors.connections {
            self.pubsub.post_push(monitor, token, &line);
        }
        ctx.ok();
    }

    /// Before the handler: EVAL and FCALL show themselves first.
    pub(in crate::apps::kv) fn monitor_before(&mut self, ctx: &Ctx<'_>, entry: &CommandEntry) {
        if shown_first(entry.name) && self.monitored() {
            self.monitor_feed(ctx);
        }
    }

    /// After the handler: every command but the administrative ones and
    /// those shown before.
    pub(in crate::apps::kv) fn monitor_after(&mut self, ctx: &Ctx<'_>, entry: &CommandEntry) {
        if !entry.has_flag("admin") && !entry.has_flag("skip_monitor") && self.monitored() {
            self.monitor_feed(ctx);
        }
    }

    /// A command one of this shard's clients (or scripts) runs on another
    /// shard parked for it (EXEC's, a script's call): shown here, in its
    /// order, not there.
    pub(in crate::apps::kv) fn monitor_elsewhere(&mut self, client: u64, db: u8, args: &[Vec<u8>]) {
        if self.monitored() {
            self.monitor_args(client, db, args.to_vec());
        }
    }

    fn monitor_feed(&mut self, ctx: &Ctx<'_>) {
        // A command run for a parked shard's coordinator is shown there.
        if crate::apps::kv::across::is_stand_in(ctx.conn) {
            return;
        }
        // A link's own SELECT and HELLO (`shard_link::send_on`) follow its
        // clients' database and protocol: the client's was shown already.
        let link_own = ctx.conn.listener == crate::apps::kv::LISTENER_LINK_IN
            && (ctx.arg(0).eq_ignore_ascii_case(b"select") || ctx.arg(0).eq_ignore_ascii_case(b"hello"));
        if link_own {
            return;
        }
        let args = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
        self.monitor_args(ctx.conn.id, ctx.conn.db, args);
    }

    fn monitor_args(&mut self, client: u64, db: u8, args: Vec<Vec<u8>>) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let from = match (self.scripting.running, self.clients.addr_of(client)) {
            (true, _) => "lua".to_string(),
            // Another shard's client, whose command was relayed here.
            (false, addr) if addr.is_empty() => self.across.as_ref().map(|e| e.addr_of(client)).unwrap_or_default(),
            (false, addr) => addr,
        };
        let mut line = format!("+{}.{:06} [{db} {from}] ", now.as_secs(), now.subsec_micros()).into_bytes();
        let args = redacted(args);
        for (i, arg) in args.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            quoted(&mut line, arg);
        }
        line.extend_from_slice(b"\r\n");
        for &(monitor, token) in &self.monitors.connections {
            self.pubsub.post_push(monitor, token, &line);
        }
        let Some(exchange) = self.across.clone() else { return };
        for shard in exchange.monitoring_elsewhere(self.shard_index()) {
            self.links.send_own(shard, &[MONITOR_LINE, &line]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_quoted_as_redis_sdscatrepr() {
        let mut out = Vec::new();
        quoted(&mut out, b"a \"b\"\\\n\r\t\x07\x08\x00\xff~");
        assert_eq!(out, b"\"a \\\"b\\\"\\\\\\n\\r\\t\\a\\b\\x00\\xff~\"".to_vec());
    }
}
