//! CONFIG GET, SET, RESETSTAT, REWRITE and HELP over Redis 7.0.15's own
//! parameters (`config_table.rs`, generated from its `config.c`).
//!
//! Three kinds of parameter:
//! - those packetstore implements change it at run time (`requirepass`,
//!   `proto-max-bulk-len`) or are its truth (`appendonly yes`,
//!   `appendfsync always`: every write is durable before its reply, and
//!   setting them otherwise is refused with the reason);
//! - the encoding and tuning ones that do not apply to packetstore (the
//!   `*-max-listpack-*` sizes, `maxmemory-*`, `hz`, ...) are checked as
//!   Redis checks them, kept, and read back: they change nothing (docs/
//!   operations.md lists them);
//! - the immutable ones are read only, as in Redis.
//!
//! Invariant: a CONFIG SET of several parameters applies all or none: every
//! name and value is checked before the first one is set.

use std::collections::HashMap;

use crate::apps::kv::cmd::notify;
use crate::apps::kv::kept::latency;
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer, KvStats};
use crate::proto::resp::glob_match;
use crate::redis_spec::config_table::{find, Kind, Param, PARAMS};
use crate::store::db::StoreError;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("config", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "CONFIG GET, SET, RESETSTAT, REWRITE: Redis's parameters (docs/operations.md says which apply).", KvServer::cmd_config),
];

/// Redis's `memtoull`: a number with an optional unit; None if malformed.
fn parse_memory(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let multiplier: i64 = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<i64>().ok()?.checked_mul(multiplier)
}

impl Param {
    /// Checks a value; Err: why it is refused (Redis's words).
    fn check(&self, value: &str) -> Result<String, String> {
        match self.kind {
            Kind::Bool => match value.to_ascii_lowercase().as_str() {
                "yes" | "no" => Ok(value.to_ascii_lowercase()),
                _ => Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Text => Ok(value.to_string()),
            Kind::Enum(values) => {
                let lower = value.to_ascii_lowercase();
                values
                    .iter()
                    .find(|v| **v == lower)
                    .map(|v| v.to_string())
                    .ok_or_else(|| format!("argument(s) must be one of the following: {}", values.join(", ")))
            }
            Kind::Integer(low, high) => {
                let n: i64 = value.parse().map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
                Self::within(n, low, high)
            }
            Kind::Memory(low, high) => {
                // A percentage is kept negative, as Redis keeps it.
                let percent = value.strip_suffix('%').filter(|_| low < 0).and_then(|n| n.parse::<i64>().ok());
                if let Some(percent) = percent {
                    if percent > 100 {
                        return Err("percentage argument must be less or equal to 100".into());
                    }
                    return Self::within(-percent, low, high).map(|_| format!("{percent}%"));
                }
                let n = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
                Self::within(n, low, high)
            }
        }
    }

    fn within(n: i64, low: i64, high: i64) -> Result<String, String> {
        if n < low || n > high {
            return Err(format!("argument must be between {low} and {high} inclusive"));
        }
        Ok(n.to_string())
    }
}

/// Redis's default client output buffer limits, as CONFIG GET reads them.
pub const CLIENT_OUTPUT_BUFFER_LIMIT_DEFAULT: &str =
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// Every parameter's value: Redis's defaults, then packetstore's truth.
pub(in crate::apps::kv) fn initial_values(server: &crate::apps::kv::state::KvConfig) -> HashMap<&'static str, String> {
    let mut values: HashMap<&'static str, String> = PARAMS.iter().map(|p| (p.name, p.default.to_string())).collect();
    let durable = server.domain_name != "none";
    values.insert("appendonly", if durable { "yes" } else { "no" }.into());
    values.insert("appendfsync", if durable { "always" } else { "no" }.into());
    values.insert("databases", "16".into());
    values.insert("proto-max-bulk-len", server.value_size_max.to_string());
    values.insert("save", String::new());
    values.insert("client-output-buffer-limit", CLIENT_OUTPUT_BUFFER_LIMIT_DEFAULT.into());
    // What the server was started with, where Redis has an equivalent.
    let settings = &server.settings;
    if let Some(resp) = settings.resp {
        values.insert("port", resp.port().to_string());
        values.insert("bind", resp.ip().to_string());
    }
    values.insert("maxclients", settings.connections_max.to_string());
    values.insert("dir", settings.dir.clone());
    values.insert("protected-mode", if settings.protected_mode { "yes" } else { "no" }.into());
    values.insert("enable-debug-command", if server.debug_command { "yes" } else { "no" }.into());
    values
}

/// What a parameter given at start becomes (`check_at_start`).
#[derive(Debug, PartialEq, Eq)]
pub enum AtStart {
    /// Set, as CONFIG SET would set it (the value as CONFIG GET reads it).
    Set(&'static str, String),
    /// Left alone, for this reason: what packetstore always is (every
    /// write durable before its reply), or a parameter that changes
    /// nothing here and cannot be set at run time either.
    Ignored(String),
    /// What packetstore already is (`appendonly yes`): nothing to do.
    Unchanged,
    /// A parameter Redis cannot change at run time and that changes
    /// nothing here (`daemonize`, `pidfile`, ...): left alone.
    NoEffect(&'static str),
}

/// Checks a Redis parameter given at start (`--redis-param NAME=VALUE`, a
/// redis.conf's directive) as CONFIG SET checks it: an unknown name or a
/// bad value is refused (Redis refuses to start on them too); `appendonly`
/// and `appendfsync` are packetstore's truth whatever they say, and an
/// immutable parameter is ignored, both with the reason; the parameters
/// that are packetstore's own options name the option.
pub fn check_at_start(name: &str, value: &str) -> Result<AtStart, String> {
    let param = find(name).ok_or_else(|| format!("'{name}' is not a Redis 7.0 configuration parameter"))?;
    if let Some((_, flag)) = STARTUP_ONLY.iter().find(|(startup, _)| *startup == param.name) {
        return Err(format!("{} is packetstore's {flag}: give that instead", param.name));
    }
    match param.name {
        "requirepass" => return Err("requirepass is packetstore's --requirepass: give that instead".into()),
        "protected-mode" => return Err("protected-mode is packetstore's --protected-mode: give that instead".into()),
        "enable-debug-command" => return Err("give --enable-debug-command instead".into()),
        _ => {}
    }
    if param.immutable {
        return Ok(AtStart::NoEffect(param.name));
    }
    let value = param.check(value).map_err(|why| format!("{} {value}: {why}", param.name))?;
    match param.name {
        "appendonly" | "appendfsync" if ["yes", "always"].contains(&value.as_str()) => Ok(AtStart::Unchanged),
        "appendonly" | "appendfsync" => {
            Ok(AtStart::Ignored(format!("{} {value}: every write is durable before its reply", param.name)))
        }
        _ => normalized(param, value)
            .map(|value| AtStart::Set(param.name, value))
            .map_err(|why| format!("{}: {why}", param.name)),
    }
}

/// A checked value as packetstore keeps it, or why it is refused: the
/// limits packetstore adds to Redis's, and values kept as Redis prints
/// them back.
fn normalized(param: &Param, value: String) -> Result<String, String> {
    match param.name {
        "proto-max-bulk-len" if value.parse::<u64>().is_ok_and(|n| n < 1024 * 1024) => {
            Err("argument must be at least 1mb".into())
        }
        "tls-port" if value != "0" => Err("TLS is not built yet: tls-port stays 0".into()),
        // Kept as Redis prints the numbers back (`50.0` reads `50`).
        "latency-tracking-info-percentiles" => latency::parse_percentiles(&value)
            .map(|ps| ps.iter().map(|&p| latency::percentile_text(p)).collect::<Vec<_>>().join(" ")),
        // Kept as Redis prints the classes back (`KA` reads `AK`).
        "notify-keyspace-events" => match notify::parse_flags(&value) {
            Some(flags) => Ok(notify::flags_text(flags)),
            None => Err(notify::BAD_CLASS.into()),
        },
        _ => Ok(value),
    }
}

/// Parameters that are packetstore's command line (its listeners, its
/// connection limit, its pool's place): CONFIG SET refuses them with the
/// flag to restart with, rather than keep a value that changes nothing.
const STARTUP_ONLY: [(&str, &str); 4] =
    [("port", "--resp"), ("bind", "--resp"), ("maxclients", "--connections-max"), ("dir", "--pool")];

/// Redis 7.0's hidden parameters (HIDDEN_CONFIG): CONFIG GET shows them
/// when asked by name, never for a pattern.
const HIDDEN: &[&str] = &[
    "use-exit-on-panic",
    "rdb-key-save-delay",
    "key-load-delay",
    "watchdog-period",
    "loading-process-events-interval-bytes",
];

impl KvServer {
    fn cmd_config(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match ctx.conn.args.upper(1).as_deref() {
            Some(b"GET") if ctx.argc() >= 3 => self.config_get(ctx),
            Some(b"SET") if ctx.argc() >= 4 && ctx.argc() % 2 == 0 => self.config_set(ctx),
            Some(b"RESETSTAT") if ctx.argc() == 2 => {
                self.stats = KvStats::default();
                // Batch sizes are counted from the writes at the last
                // commit: zeroed together (a bare reset underflowed).
                self.writes_at_commit = 0;
                self.command_stats.fill(Default::default());
                self.latency.reset_histograms();
                self.error_stats.clear();
                self.lazyfreed_at_reset = self.store.stats().lazyfreed;
                ctx.ok()
            }
            Some(b"REWRITE") if ctx.argc() == 2 => self.config_rewrite(ctx),
            Some(b"HELP") if ctx.argc() == 2 => {
                let lines = [
                    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                    "GET <pattern>",
                    "SET <directive> <value>",
                    "RESETSTAT",
                    "REWRITE",
                    "HELP",
                ];
                ctx.array(lines.len());
                lines.iter().for_each(|line| ctx.out.push(format!("+{line}\r\n").as_bytes()));
            }
            _ => {
                let sub = String::from_utf8_lossy(&ctx.arg(1)).into_owned();
                ctx.error(&format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try CONFIG HELP."))
            }
        }
        Ok(())
    }

    fn config_get(&mut self, ctx: &mut Ctx<'_>) {
        let patterns: Vec<Vec<u8>> = (2..ctx.argc()).map(|i| ctx.arg(i).to_ascii_lowercase()).collect();
        let mut found: Vec<(&'static str, String)> = Vec::new();
        for param in PARAMS {
            let value = self.config_value(param.name);
            // A hidden parameter answers its own name, not a pattern.
            let hidden = HIDDEN.contains(&param.name);
            let matches = |p: &Vec<u8>, name: &str| match hidden && p.iter().any(|c| b"*?[".contains(c)) {
                true => false,
                false => glob_match(p, name.as_bytes()),
            };
            for name in [param.name, param.alias] {
                if !name.is_empty() && patterns.iter().any(|p| matches(p, name)) {
                    found.push((name, value.clone()));
                }
            }
        }
        ctx.map(found.len());
        for (name, value) in found {
            ctx.bulk(name.as_bytes());
            ctx.bulk(value.as_bytes());
        }
    }

    /// CONFIG REWRITE: the redis.conf the server started with takes the
    /// current values (`config_rewrite.rs`); refused without one.
    fn config_rewrite(&mut self, ctx: &mut Ctx<'_>) {
        let Some(path) = self.config.settings.config_file.clone() else {
            ctx.error("ERR The server is running without a config file");
            return;
        };
        let skip = |param: &Param| {
            param.immutable
                || HIDDEN.contains(&param.name)
                || STARTUP_ONLY.iter().any(|(name, _)| *name == param.name)
                || param.name == "enable-debug-command"
                // A redis.conf's TLS lines stay as the user wrote them.
                || param.name.starts_with("tls-")
        };
        let base = |name: &'static str| self.config_baseline.get(name).cloned().unwrap_or_default();
        match super::config_rewrite::rewrite(&path, |name| self.config_value(name), base, skip) {
            Ok(()) => ctx.ok(),
            Err(error) => {
                tracing::warn!("CONFIG REWRITE of {}: {error}", path.display());
                ctx.error(&format!("ERR Rewriting config file: {error}"));
            }
        }
    }

    /// A parameter's value as CONFIG GET shows it.
    fn config_value(&self, name: &str) -> String {
        if name == "requirepass" {
            return self
                .config
                .requirepass
                .as_ref()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default();
        }
        self.config_params.get(name).cloned().unwrap_or_default()
    }

    fn config_set(&mut self, ctx: &mut Ctx<'_>) {
        let mut checked: Vec<(&'static Param, String)> = Vec::new();
        for i in (2..ctx.argc()).step_by(2) {
            let name = String::from_utf8_lossy(&ctx.arg(i)).into_owned();
            let value = String::from_utf8_lossy(&ctx.arg(i + 1)).into_owned();
            let Some(param) = find(&name) else {
                ctx.error(&format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'"));
                return;
            };
            if checked.iter().any(|(p, _)| p.name == param.name) {
                ctx.error(&format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                ));
                return;
            }
            let result =
                if param.immutable { Err("can't set immutable config".to_string()) } else { param.check(&value) };
            let result = result.and_then(|value| self.check_applies(param, value));
            match result {
                Ok(value) => checked.push((param, value)),
                Err(why) => {
                    ctx.error(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"));
                    return;
                }
            }
        }
        for (param, value) in checked {
            self.config_apply(param, &value);
            self.config_params.insert(param.name, value);
        }
        ctx.ok();
    }

    /// Refuses what packetstore cannot be: it makes every write durable
    /// before its reply.
    fn check_applies(&self, param: &Param, value: String) -> Result<String, String> {
        let durable = self.config.domain_name != "none";
        if let Some((_, flag)) = STARTUP_ONLY.iter().find(|(name, _)| *name == param.name) {
            // Its value now, set again, changes nothing: accepted, as Redis
            // accepts it.
            if value == self.config_value(param.name) {
                return Ok(value);
            }
            return Err(format!("packetstore sets {} at start only: restart it with {flag}", param.name));
        }
        match param.name {
            "appendonly" if durable && value != "yes" => {
                Err("packetstore makes every write durable before its reply: appendonly is always yes".into())
            }
            "appendfsync" if durable && value != "always" => {
                Err("packetstore makes every write durable before its reply: appendfsync is always 'always'".into())
            }
            _ => normalized(param, value),
        }
    }

    /// Sets the parameters given at start (`KvSettings::redis_params`,
    /// checked by `check_at_start`), as CONFIG SET sets them.
    pub(in crate::apps::kv) fn set_params_at_start(&mut self) {
        let params = std::mem::take(&mut self.config.settings.redis_params);
        for (name, value) in &params {
            let param = find(name).expect("a parameter checked at start");
            self.config_apply(param, value);
            self.config_params.insert(param.name, value.clone());
        }
        self.config.settings.redis_params = params;
    }

    /// Makes a checked value take effect where packetstore implements it.
    fn config_apply(&mut self, param: &Param, value: &str) {
        match param.name {
            "requirepass" => {
                self.config.requirepass = (!value.is_empty()).then(|| value.as_bytes().to_vec());
            }
            "notify-keyspace-events" => self.notify_flags = notify::parse_flags(value).unwrap_or(0),
            "slowlog-log-slower-than" => self.slowlog.set_slower_than(value),
            "slowlog-max-len" => self.slowlog.set_max_len(value),
            "latency-monitor-threshold" => self.latency.set_threshold(value),
            "latency-tracking" => self.latency.set_tracking(value),
            "latency-tracking-info-percentiles" => self.latency.set_percentiles(value),
            "protected-mode" => self.config.settings.protected_mode = value == "yes",
            "proto-max-bulk-len" => {
                if let Ok(limit) = value.parse::<u64>() {
                    self.config.value_size_max = limit.min(crate::proto::resp::BULK_LEN_MAX);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_values_parse_as_redis_parses_them() {
        assert_eq!(parse_memory("100"), Some(100));
        assert_eq!(parse_memory("1k"), Some(1000));
        assert_eq!(parse_memory("1KB"), Some(1024));
        assert_eq!(parse_memory("2gb"), Some(2 << 30));
        assert_eq!(parse_memory("bla"), None);
        assert_eq!(parse_memory("1xb"), None);
    }

    #[test]
    fn the_table_knows_redis_names_and_aliases() {
        assert_eq!(find("hash-max-ziplist-entries").map(|p| p.name), Some("hash-max-listpack-entries"));
        assert_eq!(find("MAXMEMORY").map(|p| p.name), Some("maxmemory"));
        assert!(find("no-such-parameter").is_none());
        assert!(find("daemonize").unwrap().immutable);
        assert_eq!(find("maxmemory").unwrap().check("bla"), Err("argument must be a memory value".into()));
        assert_eq!(find("appendfsync").unwrap().check("ALWAYS"), Ok("always".into()));
        let clients = find("maxmemory-clients").unwrap();
        assert_eq!(clients.check("10%"), Ok("10%".into()));
        assert_eq!(clients.check("101%"), Err("percentage argument must be less or equal to 100".into()));
        assert!(PARAMS.len() > 170, "{} parameters", PARAMS.len());
    }
}
