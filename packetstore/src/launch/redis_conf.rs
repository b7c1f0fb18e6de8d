//! A `redis.conf` as `packetstore serve`'s configuration file: a Redis
//! user's file, read as Redis reads it (one directive a line, arguments
//! split as `sdssplitargs` splits them, `include` files in place, the last
//! occurrence of a directive winning), and turned into `serve`'s own
//! options, so the command line's parser fills one `ServeConfig` whichever
//! way the configuration came, and a flag on the command line still wins.
//!
//! What each directive becomes:
//! - where and how clients connect: `port` and `bind` make `--resp` (and
//!   `bind` the HTTP listener's address too), `requirepass`,
//!   `protected-mode`, `maxclients` (`--connections-max`), `dir` (the
//!   pool's directory), `enable-debug-command`;
//! - any other parameter Redis 7.0 has: `--redis-param NAME=VALUE`, set at
//!   start as CONFIG SET sets it (a bad value stops the start, as in
//!   Redis; one that cannot apply, such as `daemonize` or `appendonly no`,
//!   is ignored with a warning that names it);
//! - what packetstore cannot honour and a client would notice (`unixsocket`,
//!   `tls-port`, `rename-command`, ACL `user`s, modules, `replicaof`) stops
//!   the start, naming the line; so does any word that is no directive.
//!
//! Invariant: every directive of the file is either turned into an option
//! or named in an error or a warning; none is dropped silently.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::Path;

use anyhow::{bail, Context};

/// How deep `include`s may nest (a file including itself stops here).
const INCLUDE_DEPTH_MAX: usize = 8;

/// The Redis port when a file names none.
const RESP_PORT_DEFAULT: u16 = 6379;

/// The HTTP port: a redis.conf has no word for it (`--http` sets it).
const HTTP_PORT_DEFAULT: u16 = 8080;

/// One directive: its name (lower case), its arguments, and where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Directive {
    name: String,
    args: Vec<String>,
    place: String,
}

/// Whether `text` reads as a redis.conf rather than TOML: its first
/// directive is a word followed by a space, not `key = value`.
pub fn looks_like_redis_conf(text: &str) -> bool {
    text.lines().map(str::trim).find(|line| !line.is_empty() && !line.starts_with('#')).is_some_and(|line| {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        !first.contains('=') && words.next().is_some_and(|second| !second.starts_with('='))
    })
}

/// Reads the redis.conf at `path` (and the files it includes) into
/// `serve`'s options, as on its command line.
pub fn translate(path: &Path) -> anyhow::Result<Vec<String>> {
    let mut directives = Vec::new();
    read(path, 0, &mut directives)?;
    translate_directives(&directives)
}

/// Appends the directives of the file at `path`, `include`s in place.
fn read(path: &Path, depth: usize, out: &mut Vec<Directive>) -> anyhow::Result<()> {
    if depth > INCLUDE_DEPTH_MAX {
        bail!("{}: includes nest deeper than {INCLUDE_DEPTH_MAX} files (does a file include itself?)", path.display());
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read the config file {}", path.display()))?;
    for (index, line) in text.lines().enumerate() {
        let place = format!("{} line {}", path.display(), index + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut args = split_args(line).map_err(|why| anyhow::anyhow!("{place}: {why}"))?;
        let name = args.remove(0).to_ascii_lowercase();
        if name == "include" {
            let [file] = args.as_slice() else { bail!("{place}: include takes one file") };
            read(Path::new(file), depth + 1, out)?;
            continue;
        }
        out.push(Directive { name, args, place });
    }
    Ok(())
}

/// Splits a line into arguments as Redis's `sdssplitargs` does (the
/// inline protocol's own splitter: quotes anywhere in a word, escapes,
/// `\\xHH` bytes); an argument must be UTF-8.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let words = crate::proto::resp::split_inline(line.as_bytes()).ok_or("unbalanced quotes")?;
    if words.is_empty() {
        return Err("an empty line".into());
    }
    words.into_iter().map(|word| String::from_utf8(word).map_err(|_| "an argument that is not UTF-8".into())).collect()
}

/// The options the directives make. A later directive wins over an
/// earlier one of the same name, as in Redis, except `save` lines, which
/// add up (`save ""` clears them), and `client-output-buffer-limit`
/// lines, one a class. Values go as `--flag=VALUE`, so that a value
/// beginning with '-' stays a value.
fn translate_directives(directives: &[Directive]) -> anyhow::Result<Vec<String>> {
    let mut last: BTreeMap<&str, String> = BTreeMap::new();
    let (mut port, mut ip) = (None, None);
    let mut save: Option<Vec<String>> = None;
    let mut output_limits: Option<BTreeMap<String, String>> = None;
    let mut params = Vec::new();
    for directive in directives {
        let Directive { name, args, place } = directive;
        let one = || match args.as_slice() {
            [value] => Ok(value.clone()),
            _ => Err(anyhow::anyhow!("{place}: {name} takes one argument")),
        };
        match name.as_str() {
            "port" => port = Some(parse_port(&one()?).with_context(|| place.clone())?),
            "bind" => ip = Some(first_bind(args).with_context(|| place.clone())?),
            "requirepass" | "dir" => _ = last.insert(name, one()?),
            "protected-mode" => _ = last.insert(name, choice(&one()?, &["yes", "no"], place)?),
            "enable-debug-command" => _ = last.insert(name, choice(&one()?, &["yes", "no", "local"], place)?),
            "maxclients" => match one()?.parse::<u32>() {
                Ok(count) if count >= 1 => _ = last.insert(name, count.to_string()),
                _ => bail!("{place}: maxclients must be a number of at least 1"),
            },
            "save" if args.iter().all(String::is_empty) => save = Some(Vec::new()),
            "save" => save.get_or_insert_with(Vec::new).extend(args.iter().cloned()),
            "client-output-buffer-limit" => {
                let [class, limits @ ..] = args.as_slice() else { bail!("{place}: {name} needs a class") };
                if limits.len() != 3 {
                    bail!("{place}: {name} takes a class and three limits");
                }
                let class = match class.to_ascii_lowercase().as_str() {
                    "replica" | "slave" => "slave".to_string(),
                    known @ ("normal" | "pubsub") => known.to_string(),
                    other => bail!("{place}: {name}: unknown class '{other}' (normal, replica, pubsub)"),
                };
                output_limits.get_or_insert_with(default_output_limits).insert(class, limits.join(" "));
            }
            "tls-port" if one()? == "0" => {}
            tls if tls.starts_with("tls-") && tls != "tls-port" => {
                tracing::warn!("{place}: {name} ignored: packetstore has no TLS listener")
            }
            _ => params.push(redis_param(directive)?),
        }
    }
    if let Some(save) = save {
        params.push(format!("save={}", save.join(" ")));
    }
    if let Some(limits) = output_limits {
        // In Redis's order of the classes.
        let text: Vec<String> =
            ["normal", "slave", "pubsub"].iter().map(|class| format!("{class} {}", limits[*class])).collect();
        params.push(format!("client-output-buffer-limit={}", text.join(" ")));
    }
    let mut flags = Vec::new();
    for (name, value) in last {
        match (name, value.as_str()) {
            // An empty password is none, as in Redis.
            ("requirepass", "") | ("enable-debug-command", "no") => {}
            ("requirepass", _) => flags.push(format!("--requirepass={value}")),
            ("protected-mode", _) => flags.push(format!("--protected-mode={value}")),
            ("maxclients", _) => flags.push(format!("--connections-max={value}")),
            ("dir", _) => flags.push(format!("--pool={}/kv.pool", value.trim_end_matches('/'))),
            ("enable-debug-command", "local") => tracing::warn!(
                "redis.conf: enable-debug-command local: DEBUG stays off (packetstore has no local-only DEBUG; \
                 --enable-debug-command allows it for every client)"
            ),
            ("enable-debug-command", _) => flags.push("--enable-debug-command".to_string()),
            _ => unreachable!("a directive kept for its last value: {name}"),
        }
    }
    flags.extend(params.into_iter().map(|param| format!("--redis-param={param}")));
    if port.is_some() || ip.is_some() {
        let ip = ip.unwrap_or(IpAddr::from([127, 0, 0, 1]));
        flags.push(format!("--resp={}", SocketAddr::new(ip, port.unwrap_or(RESP_PORT_DEFAULT))));
        flags.push(format!("--http={}", SocketAddr::new(ip, HTTP_PORT_DEFAULT)));
    }
    Ok(flags)
}

/// Redis's default client output buffer limits, one a class.
fn default_output_limits() -> BTreeMap<String, String> {
    let words: Vec<&str> = crate::apps::kv::CLIENT_OUTPUT_BUFFER_LIMIT_DEFAULT.split_whitespace().collect();
    words.chunks(4).map(|class| (class[0].to_string(), class[1..].join(" "))).collect()
}

/// Any other directive: `NAME=VALUE` for `--redis-param`, or the reason
/// packetstore cannot start with it.
fn redis_param(directive: &Directive) -> anyhow::Result<String> {
    let Directive { name, args, place } = directive;
    let refusal = match name.as_str() {
        "unixsocket" | "unixsocketperm" => Some("packetstore listens on TCP only: remove it and connect by port"),
        "tls-port" => Some("TLS is not built yet: remove it, or put a TLS proxy in front"),
        "rename-command" => Some("renamed commands are not built: remove it"),
        "user" | "aclfile" => Some("ACL users are not built yet (--requirepass is the one password)"),
        "loadmodule" => Some("modules are not supported"),
        "replicaof" | "slaveof" => Some("replicating from a Redis is not built yet"),
        "sentinel" => Some("packetstore is not a Sentinel"),
        _ => None,
    };
    if let Some(why) = refusal {
        bail!("{place}: {name}: {why}");
    }
    if args.is_empty() {
        bail!("{place}: {name} needs a value");
    }
    let value = args.join(" ");
    // Checked here too, to name the line (the plan checks it again).
    crate::apps::kv::check_at_start(name, &value).map_err(|why| anyhow::anyhow!("{place}: {why}"))?;
    Ok(format!("{name}={value}"))
}

fn parse_port(text: &str) -> anyhow::Result<u16> {
    match text.parse::<u16>() {
        Ok(0) => bail!("port 0 (no TCP listener) is not supported: packetstore listens on TCP"),
        Ok(port) => Ok(port),
        Err(_) => bail!("port {text}: not a port number"),
    }
}

/// `bind`'s first address (a leading `-`, "optional", dropped; `*` is
/// every IPv4 address, `::*` every IPv6 one): packetstore listens on one
/// address per port, so the others are said in a warning.
fn first_bind(args: &[String]) -> anyhow::Result<IpAddr> {
    let first = args.first().context("bind needs an address")?;
    if args.len() > 1 {
        tracing::warn!(
            "redis.conf: bind {}: packetstore listens on one address per port: {first} only",
            args.join(" ")
        );
    }
    match first.trim_start_matches('-') {
        "*" => Ok(IpAddr::from([0, 0, 0, 0])),
        "::*" => Ok(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        address => address.parse().with_context(|| format!("bind {address}: not an IP address")),
    }
}

/// `value` in lower case if it is one of `choices`.
fn choice(value: &str, choices: &[&str], place: &str) -> anyhow::Result<String> {
    let lower = value.to_ascii_lowercase();
    if !choices.contains(&lower.as_str()) {
        bail!("{place}: argument must be one of {}", choices.join(", "));
    }
    Ok(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directives(text: &str) -> Vec<Directive> {
        text.lines()
            .filter(|line| !line.trim().is_empty() && !line.trim().starts_with('#'))
            .map(|line| {
                let mut args = split_args(line).unwrap();
                Directive { name: args.remove(0), args, place: "test".into() }
            })
            .collect()
    }

    #[test]
    fn arguments_split_as_redis_splits_them() {
        assert_eq!(split_args("save 3600 1  300 100").unwrap(), ["save", "3600", "1", "300", "100"]);
        assert_eq!(split_args(r#"requirepass "a b\"c\x41""#).unwrap(), ["requirepass", "a b\"cA"]);
        assert_eq!(split_args(r"requirepass 'it\'s'").unwrap(), ["requirepass", "it's"]);
        // A quote inside a word opens quoting, as in sdssplitargs.
        assert_eq!(split_args(r#"requirepass abc"d e""#).unwrap(), ["requirepass", "abcd e"]);
        assert_eq!(split_args(r#"requirepass "\xzz""#).unwrap(), ["requirepass", "xzz"]);
        assert_eq!(split_args(r#"requirepass "\xff""#).unwrap_err(), "an argument that is not UTF-8");
        assert_eq!(split_args(r#"x "a"b"#).unwrap_err(), "unbalanced quotes");
        assert_eq!(split_args(r#"x "open"#).unwrap_err(), "unbalanced quotes");
    }

    #[test]
    fn directives_become_serve_options() {
        let conf = "port 6390\nbind 127.0.0.1 -::1\nrequirepass old\nrequirepass -s3cret\nmaxclients 500\n\
                    dir /var/lib/redis/\nprotected-mode no\nenable-debug-command yes\nenable-debug-command no\n\
                    notify-keyspace-events KEA\nsave 3600 1\nsave \"\"\nsave 900 1\nsave 60 100\n\
                    client-output-buffer-limit replica 1mb 2mb 30\nappendonly no\n";
        let flags = translate_directives(&directives(conf)).unwrap();
        let expected = [
            "--pool=/var/lib/redis/kv.pool",
            "--connections-max=500",
            "--protected-mode=no",
            "--requirepass=-s3cret",
            "--redis-param=notify-keyspace-events=KEA",
            "--redis-param=appendonly=no",
            "--redis-param=save=900 1 60 100",
            "--redis-param=client-output-buffer-limit=normal 0 0 0 slave 1mb 2mb 30 pubsub 33554432 8388608 60",
            "--resp=127.0.0.1:6390",
            "--http=127.0.0.1:8080",
        ];
        assert_eq!(flags, expected);
        // An empty password is none, as in Redis.
        assert!(translate_directives(&directives("requirepass x\nrequirepass \"\"")).unwrap().is_empty());
    }

    #[test]
    fn what_packetstore_cannot_honour_stops_the_start() {
        for (conf, why) in [
            ("unixsocket /tmp/redis.sock", "TCP only"),
            ("tls-port 6380", "TLS is not built"),
            ("rename-command FLUSHALL \"\"", "renamed commands"),
            ("user alice on >pw ~* +@all", "ACL users"),
            ("port 0", "port 0"),
            ("bind localhost", "not an IP address"),
            ("maxmemory", "needs a value"),
            ("maxmemory lots", "argument must be a memory value"),
            ("maxclients many", "maxclients must be a number"),
            ("enable-debug-command maybe", "one of yes, no, local"),
            ("frobnicate 1", "'frobnicate' is not a Redis 7.0 configuration parameter"),
        ] {
            let error = translate_directives(&directives(conf)).unwrap_err();
            assert!(format!("{error:#}").contains(why), "{conf}: {error:#}");
        }
        for harmless in ["tls-port 0", "tls-cluster no", "enable-debug-command local"] {
            assert!(translate_directives(&directives(harmless)).unwrap().is_empty(), "{harmless}");
        }
    }

    #[test]
    fn a_redis_conf_is_told_from_toml() {
        assert!(looks_like_redis_conf("# Redis\n\nport 6379\n"));
        assert!(looks_like_redis_conf("save \"\"\n"));
        assert!(!looks_like_redis_conf("pool-size = \"1GiB\"\n"));
        assert!(!looks_like_redis_conf("busy-poll=true\n"));
        assert!(!looks_like_redis_conf("# only a comment\n"));
    }

    #[test]
    fn includes_are_read_in_place_and_bounded() {
        let dir = std::env::temp_dir().join(format!("packetstore-redis-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (main, inner) = (dir.join("redis.conf"), dir.join("inner.conf"));
        std::fs::write(&inner, "maxclients 7\n").unwrap();
        std::fs::write(&main, format!("maxclients 5\ninclude {}\n", inner.display())).unwrap();
        let flags = translate(&main).unwrap();
        assert_eq!(flags, ["--connections-max=7"]);
        std::fs::write(&inner, format!("include {}\n", main.display())).unwrap();
        assert!(format!("{:#}", translate(&main).unwrap_err()).contains("nest deeper"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
