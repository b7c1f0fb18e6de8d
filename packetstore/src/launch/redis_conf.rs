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

/// Splits a line into arguments as Redis's `sdssplitargs` does: words
/// separated by blanks; "double quotes" with \n \r \t \b \a \\ \" and \xHH
/// escapes; 'single quotes' with \' only; a closing quote must end the
/// word.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        let mut word = String::new();
        match first {
            '"' => {
                chars.next();
                double_quoted(&mut chars, &mut word)?;
            }
            '\'' => {
                chars.next();
                single_quoted(&mut chars, &mut word)?;
            }
            _ => {
                while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                    word.push(c);
                }
            }
        }
        if matches!(first, '"' | '\'') && chars.peek().is_some_and(|c| !c.is_whitespace()) {
            return Err("a closing quote must be followed by a space".into());
        }
        args.push(word);
    }
    if args.is_empty() {
        return Err("an empty line".into());
    }
    Ok(args)
}

fn double_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String) -> Result<(), String> {
    loop {
        match chars.next() {
            None => return Err("unbalanced quotes".into()),
            Some('"') => return Ok(()),
            Some('\\') => {
                let escaped = chars.next().ok_or("unbalanced quotes")?;
                word.push(match escaped {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'b' => '\u{8}',
                    'a' => '\u{7}',
                    'x' => {
                        let hex: String = [chars.next(), chars.next()].into_iter().flatten().collect();
                        let byte = u8::from_str_radix(&hex, 16).map_err(|_| format!("\\x{hex} is no hex byte"))?;
                        char::from(byte)
                    }
                    other => other,
                });
            }
            Some(c) => word.push(c),
        }
    }
}

fn single_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut String) -> Result<(), String> {
    loop {
        match chars.next() {
            None => return Err("unbalanced quotes".into()),
            Some('\'') => return Ok(()),
            Some('\\') if chars.peek() == Some(&'\'') => word.push(chars.next().unwrap_or('\'')),
            Some(c) => word.push(c),
        }
    }
}

/// The options the directives make (a later directive wins over an
/// earlier one of the same name, as in Redis).
fn translate_directives(directives: &[Directive]) -> anyhow::Result<Vec<String>> {
    let mut flags = Vec::new();
    let (mut port, mut ip) = (None, None);
    for directive in directives {
        let Directive { name, args, place } = directive;
        let one = || match args.as_slice() {
            [value] => Ok(value.clone()),
            _ => Err(anyhow::anyhow!("{place}: {name} takes one argument")),
        };
        match name.as_str() {
            "port" => port = Some(parse_port(&one()?).with_context(|| place.clone())?),
            "bind" => ip = Some(first_bind(args).with_context(|| place.clone())?),
            "requirepass" => flags.extend(["--requirepass".to_string(), one()?]),
            "protected-mode" => flags.extend(["--protected-mode".to_string(), yes_no(&one()?, place)?]),
            "maxclients" => flags.extend(["--connections-max".to_string(), one()?]),
            "dir" => flags.extend(["--pool".to_string(), format!("{}/kv.pool", one()?.trim_end_matches('/'))]),
            "enable-debug-command" => {
                if !one()?.eq_ignore_ascii_case("no") {
                    flags.push("--enable-debug-command".to_string());
                }
            }
            "tls-port" | "port-tls" if one()? == "0" => {}
            _ => flags.extend(["--redis-param".to_string(), redis_param(directive)?]),
        }
    }
    if port.is_some() || ip.is_some() {
        let ip = ip.unwrap_or(IpAddr::from([127, 0, 0, 1]));
        flags.extend(["--resp".to_string(), SocketAddr::new(ip, port.unwrap_or(RESP_PORT_DEFAULT)).to_string()]);
        flags.extend(["--http".to_string(), SocketAddr::new(ip, HTTP_PORT_DEFAULT).to_string()]);
    }
    Ok(flags)
}

/// Any other directive: `NAME=VALUE` for `--redis-param`, or the reason
/// packetstore cannot start with it.
fn redis_param(directive: &Directive) -> anyhow::Result<String> {
    let Directive { name, args, place } = directive;
    let refusal = match name.as_str() {
        "unixsocket" | "unixsocketperm" => Some("packetstore listens on TCP only: remove it and connect by port"),
        "tls-port" | "tls-cert-file" | "tls-key-file" | "tls-ca-cert-file" | "tls-auth-clients" | "tls-replication"
        | "tls-cluster" => Some("TLS is not built yet: remove it, or put a TLS proxy in front"),
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

fn yes_no(value: &str, place: &str) -> anyhow::Result<String> {
    match value.to_ascii_lowercase().as_str() {
        answer @ ("yes" | "no") => Ok(answer.to_string()),
        _ => bail!("{place}: argument must be 'yes' or 'no'"),
    }
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
        assert_eq!(split_args(r#"x "a"b"#).unwrap_err(), "a closing quote must be followed by a space");
        assert_eq!(split_args(r#"x "open"#).unwrap_err(), "unbalanced quotes");
    }

    #[test]
    fn directives_become_serve_options() {
        let conf = "port 6390\nbind 127.0.0.1 -::1\nrequirepass s3cret\nmaxclients 500\ndir /var/lib/redis/\n\
                    protected-mode no\nnotify-keyspace-events KEA\nsave \"\"\nsave 900 1\nappendonly no\n";
        let flags = translate_directives(&directives(conf)).unwrap();
        let expected = [
            "--requirepass",
            "s3cret",
            "--connections-max",
            "500",
            "--pool",
            "/var/lib/redis/kv.pool",
            "--protected-mode",
            "no",
            "--redis-param",
            "notify-keyspace-events=KEA",
            "--redis-param",
            "save=",
            "--redis-param",
            "save=900 1",
            "--redis-param",
            "appendonly=no",
            "--resp",
            "127.0.0.1:6390",
            "--http",
            "127.0.0.1:8080",
        ];
        assert_eq!(flags, expected);
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
            ("frobnicate 1", "'frobnicate' is not a Redis 7.0 configuration parameter"),
        ] {
            let error = translate_directives(&directives(conf)).unwrap_err();
            assert!(format!("{error:#}").contains(why), "{conf}: {error:#}");
        }
        assert!(translate_directives(&directives("tls-port 0")).unwrap().is_empty());
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
        assert_eq!(flags, ["--connections-max", "5", "--connections-max", "7"]);
        std::fs::write(&inner, format!("include {}\n", main.display())).unwrap();
        assert!(format!("{:#}", translate(&main).unwrap_err()).contains("nest deeper"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
