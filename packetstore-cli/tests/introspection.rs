//! Introspection as Redis 7.0 serves it. MONITOR: every command another client runs, once
//! it ran, as a status line with the time, database and client address
//! and each argument quoted; EXEC's commands before EXEC; EVAL before the
//! commands its script runs (those from `lua`); administrative commands
//! and refused ones not shown; passwords redacted. INFO's
//! instantaneous_ops_per_sec follows the command rate.
//!
//! Method: a raw connection reads the lines (with their text, through
//! the redis crate for the other client's commands).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{encode, Server, TempPool};

/// A MONITOR connection, reading whole lines.
struct Monitor {
    reader: BufReader<TcpStream>,
}

impl Monitor {
    fn start(server: &Server) -> Monitor {
        let mut stream = TcpStream::connect(server.resp).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.write_all(&encode(&[b"MONITOR"])).unwrap();
        let mut monitor = Monitor { reader: BufReader::new(stream) };
        assert_eq!(monitor.line(), "+OK");
        monitor
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    /// The part after the time: `[db addr] "arg" ...`.
    fn command(&mut self) -> String {
        let line = self.line();
        let (time, rest) = line.split_once(' ').unwrap_or_else(|| panic!("not a monitor line: {line}"));
        let (seconds, micros) = time.trim_start_matches('+').split_once('.').unwrap();
        assert!(seconds.parse::<u64>().unwrap() > 1_700_000_000 && micros.len() == 6, "{line}");
        rest.to_string()
    }
}

/// One shard and two (keys of both shards: a command relayed to its
/// key's shard shows its client's address there too).
#[test]
fn a_monitor_sees_each_command_once_it_ran_in_redis_order() {
    for shards in ["1", "2"] {
        a_monitor_sees_each_command_on(shards);
    }
}

fn a_monitor_sees_each_command_on(shards: &str) {
    let pool = TempPool::new("monitor");
    let server = Server::start(&pool.0, &["--shards", shards]);
    let mut monitor = Monitor::start(&server);
    let mut client = server.client();
    let _: () = redis::cmd("SET").arg("foo").arg("a \"b\"\n").query(&mut client).unwrap();
    let me = monitor.command();
    assert!(me.starts_with("[0 127.0.0.1:") && me.ends_with(r#"] "SET" "foo" "a \"b\"\n""#), "{me}");
    for key in ["{a}k", "{b}k"] {
        let _: () = redis::cmd("SET").arg(key).arg(1).query(&mut client).unwrap();
        let line = monitor.command();
        assert!(line.starts_with("[0 127.0.0.1:") && line.ends_with(&format!(r#"] "SET" "{key}" "1""#)), "{line}");
    }
    // A transaction: MULTI, its commands as EXEC runs them, then EXEC.
    let _: () = redis::pipe().atomic().cmd("INCR").arg("n").ignore().query(&mut client).unwrap();
    assert!(monitor.command().ends_with(r#" "MULTI""#));
    assert!(monitor.command().ends_with(r#" "INCR" "n""#));
    assert!(monitor.command().ends_with(r#" "EXEC""#));
    // A script: EVAL first, then what it ran, from lua.
    let _: () = redis::cmd("EVAL").arg("redis.call('set', KEYS[1], 'x')").arg(1).arg("k").query(&mut client).unwrap();
    assert!(monitor.command().contains(r#""EVAL" "redis.call('set', KEYS[1], 'x')" "1" "k""#));
    assert_eq!(monitor.command(), r#"[0 lua] "set" "k" "x""#);
    // Not shown: administrative commands and refused ones. Redacted: AUTH.
    let _: redis::Value = redis::cmd("CONFIG").arg("GET").arg("maxclients").query(&mut client).unwrap();
    let _: redis::RedisResult<()> = redis::cmd("NOSUCH").query(&mut client);
    let _: redis::RedisResult<()> = redis::cmd("AUTH").arg("secret").query(&mut client);
    let _: () = redis::cmd("SELECT").arg(3).query(&mut client).unwrap();
    let _: Option<String> = redis::cmd("GET").arg("foo").query(&mut client).unwrap();
    assert!(monitor.command().ends_with(r#" "AUTH" "(redacted)""#));
    assert!(monitor.command().ends_with(r#" "SELECT" "3""#));
    let get = monitor.command();
    assert!(get.starts_with("[3 ") && get.ends_with(r#" "GET" "foo""#), "{get}");
    // CLIENT LIST shows the monitor's flag.
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut client).unwrap();
    assert!(list.lines().any(|l| l.contains(" flags=O ")), "{list}");
}

/// INFO's instantaneous_ops_per_sec follows the command rate (Redis's
/// average over 16 periods of 100 ms), and falls back to 0 when idle.
#[test]
fn info_reports_the_instantaneous_command_rate() {
    let pool = TempPool::new("ops-rate");
    let server = Server::start(&pool.0, &[]);
    let mut client = server.client();
    let rate = |client: &mut redis::Connection| -> u64 {
        let stats: String = redis::cmd("INFO").arg("stats").query(client).unwrap();
        let line = stats.lines().find_map(|l| l.strip_prefix("instantaneous_ops_per_sec:"));
        line.expect("instantaneous_ops_per_sec").trim().parse().unwrap()
    };
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(1_800) {
        let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut client).unwrap();
    }
    let busy = rate(&mut client);
    assert!(busy > 100, "{busy} commands per second reported under load");
    std::thread::sleep(Duration::from_millis(2_000));
    let idle = rate(&mut client);
    assert!(idle < busy / 10, "{idle} per second after 2 s idle (busy: {busy})");
}
