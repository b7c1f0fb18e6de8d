//! LATENCY as Redis 7.0 answers it, on the real binary: a command slower
//! than `latency-monitor-threshold` (DEBUG SLEEP) is a `command` event in
//! LATEST, HISTORY, GRAPH and DOCTOR until RESET clears it; nothing is
//! sampled while the threshold is 0; LATENCY HISTOGRAM counts each
//! command's calls (a container's by subcommand, `client|id`) in
//! power-of-two rows of microseconds while `latency-tracking` is yes, and
//! INFO latencystats reads their percentiles.

mod common;

use common::{Server, TempPool};
use redis::Value;

fn latency(con: &mut redis::Connection, args: &[&str]) -> Value {
    redis::cmd("LATENCY").arg(args).query(con).unwrap()
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    redis::cmd("LATENCY").arg(args).query(con).unwrap()
}

fn config_set(con: &mut redis::Connection, name: &str, value: &str) {
    redis::cmd("CONFIG").arg("SET").arg(name).arg(value).query::<()>(con).unwrap();
}

fn sleep(con: &mut redis::Connection, seconds: &str) {
    redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query::<()>(con).unwrap();
}

/// One shard, and two with the client on each (a DEBUG SLEEP runs on every
/// shard: its event is where its client asks LATENCY).
#[test]
fn a_command_above_the_threshold_is_an_event_until_reset() {
    for (shards, shard) in [("1", 0), ("2", 0), ("2", 1)] {
        a_command_above_the_threshold_on(shards, shard);
    }
}

/// A connection on shard `shard` of `shards` (a client id's parity names
/// its shard when there are two).
fn client_on(server: &Server, shards: u64, shard: u64) -> redis::Connection {
    for _ in 0..200 {
        let mut con = server.client();
        let id: u64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
        if (id - 1) % shards == shard {
            return con;
        }
    }
    panic!("no connection landed on shard {shard}");
}

fn a_command_above_the_threshold_on(shards: &str, shard: u64) {
    let pool = TempPool::new("latency-events");
    let server = Server::start(&pool.0, &["--enable-debug-command", "--shards", shards]);
    let mut con = client_on(&server, shards.parse().unwrap(), shard);
    // Off by default: nothing is sampled, and DOCTOR says so.
    sleep(&mut con, "0.06");
    assert_eq!(latency(&mut con, &["LATEST"]), Value::Array(vec![]));
    assert!(text(&mut con, &["DOCTOR"]).contains("Latency monitoring is disabled"));

    config_set(&mut con, "latency-monitor-threshold", "50");
    sleep(&mut con, "0.01");
    assert_eq!(latency(&mut con, &["LATEST"]), Value::Array(vec![]), "below the threshold");
    sleep(&mut con, "0.08");
    let latest: Vec<(String, i64, i64, i64)> = redis::cmd("LATENCY").arg("LATEST").query(&mut con).unwrap();
    assert_eq!(latest.len(), 1, "{latest:?}");
    let (event, time, last, max) = latest[0].clone();
    assert_eq!(event, "command");
    assert!((80..2000).contains(&last) && max == last, "{latest:?}");
    let history: Vec<(i64, i64)> = redis::cmd("LATENCY").arg("HISTORY").arg("command").query(&mut con).unwrap();
    assert_eq!(history, [(time, last)]);
    assert!(text(&mut con, &["GRAPH", "command"]).starts_with(&format!("command - high {last} ms, low {last} ms")));
    assert!(text(&mut con, &["DOCTOR"]).contains("1. command: 1 latency spikes"));

    // RESET of another event clears nothing; RESET clears them all.
    assert_eq!(redis::cmd("LATENCY").arg("RESET").arg("expire-cycle").query::<i64>(&mut con).unwrap(), 0);
    assert_eq!(redis::cmd("LATENCY").arg("RESET").query::<i64>(&mut con).unwrap(), 1);
    assert_eq!(latency(&mut con, &["LATEST"]), Value::Array(vec![]));
    assert_eq!(latency(&mut con, &["HISTORY", "command"]), Value::Array(vec![]));
    let error = redis::cmd("LATENCY").arg("GRAPH").arg("command").query::<String>(&mut con).unwrap_err();
    assert!(error.to_string().contains("No samples available for event 'command'"), "{error}");
    let error = redis::cmd("LATENCY").arg("HELP").arg("x").query::<Value>(&mut con).unwrap_err();
    assert!(error.to_string().contains("wrong number of arguments for 'latency|help' command"), "{error}");
}

/// One command's histogram: its name, its calls, its rows of (usec,
/// commands at most that long).
type Histogram = (String, i64, Vec<(i64, i64)>);

/// LATENCY HISTOGRAM's reply.
fn histogram(con: &mut redis::Connection, names: &[&str]) -> Vec<Histogram> {
    let int = |v: &Value| -> i64 { redis::from_redis_value(v).unwrap() };
    let Value::Array(flat) = latency(con, &[&["HISTOGRAM"], names].concat()) else { panic!("not an array") };
    flat.chunks(2)
        .map(|pair| {
            let name: String = redis::from_redis_value(&pair[0]).unwrap();
            let Value::Array(fields) = &pair[1] else { panic!("{pair:?}") };
            let Value::Array(rows) = &fields[3] else { panic!("{fields:?}") };
            (name, int(&fields[1]), rows.chunks(2).map(|r| (int(&r[0]), int(&r[1]))).collect())
        })
        .collect()
}

#[test]
fn the_histogram_counts_calls_by_command_and_subcommand() {
    let pool = TempPool::new("latency-histogram");
    let server = Server::start(&pool.0, &[]);
    let mut con = server.client();
    redis::cmd("CONFIG").arg("RESETSTAT").query::<()>(&mut con).unwrap();
    for _ in 0..3 {
        redis::cmd("SET").arg("k").arg("v").query::<()>(&mut con).unwrap();
    }
    redis::cmd("CLIENT").arg("ID").query::<i64>(&mut con).unwrap();
    let set = histogram(&mut con, &["set", "no-such-command"]);
    assert_eq!(set.len(), 1, "{set:?}");
    let (name, calls, rows) = &set[0];
    assert_eq!((name.as_str(), *calls), ("set", 3));
    // Cumulative rows, growing, ending at every call; each row's bound is
    // (hdr's highest value at) a power of two of 1,024 ns.
    assert_eq!(rows.last().map(|r| r.1), Some(3));
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1), "{rows:?}");
    let bounds: Vec<i64> = (0..20).map(|k| ((1024i64 << k) * 129 / 128 - 1) / 1000).collect();
    assert!(rows.iter().all(|r| bounds.contains(&r.0)), "{rows:?} not in {bounds:?}");
    let client = histogram(&mut con, &["client"]);
    assert_eq!(client.iter().map(|h| (h.0.as_str(), h.1)).collect::<Vec<_>>(), [("client|id", 1)]);
    assert_eq!(histogram(&mut con, &["client|list"]), []);
    // All commands: CONFIG RESETSTAT's own call is counted after it.
    let all: Vec<String> = histogram(&mut con, &[]).into_iter().map(|h| h.0).collect();
    assert!(["client|id", "config|resetstat", "latency|histogram", "set"].iter().all(|n| all.contains(&n.to_string())));

    // latency-tracking no: no more counting, and INFO latencystats is empty.
    config_set(&mut con, "latency-tracking", "no");
    redis::cmd("SET").arg("k").arg("v").query::<()>(&mut con).unwrap();
    assert_eq!(histogram(&mut con, &["set"])[0].1, 3);
    let info: String = redis::cmd("INFO").arg("latencystats").query(&mut con).unwrap();
    assert!(!info.contains("latency_percentiles_usec_"), "{info}");
    config_set(&mut con, "latency-tracking", "yes");
    config_set(&mut con, "latency-tracking-info-percentiles", "0.0 50.0 100.0");
    let got: Vec<String> =
        redis::cmd("CONFIG").arg("GET").arg("latency-tracking-info-percentiles").query(&mut con).unwrap();
    assert_eq!(got[1], "0 50 100");
    let info: String = redis::cmd("INFO").arg("latencystats").query(&mut con).unwrap();
    let line =
        info.lines().find(|l| l.starts_with("latency_percentiles_usec_set:")).unwrap_or_else(|| panic!("{info}"));
    assert!(line.contains(":p0=") && line.contains(",p50=") && line.contains(",p100="), "{line}");
    // CONFIG RESETSTAT drops the histograms.
    redis::cmd("CONFIG").arg("RESETSTAT").query::<()>(&mut con).unwrap();
    assert_eq!(histogram(&mut con, &["set", "client"]), []);
}
