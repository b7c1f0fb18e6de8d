//! Goal: `GET /metrics` serves the Prometheus text exposition, and its
//! counters count what clients did: requests by protocol, kind and result,
//! group-commit batches, fences, value bytes, connections; INFO shows the
//! same figures.
//!
//! Method: the real binary; a known mix of requests over both protocols;
//! the exposition parsed line by line (every line a comment or a sample,
//! histograms cumulative) and its values compared with the mix.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use redis::Commands;

mod common;
use common::{Server, TempPool, Wal};

/// One HTTP/1.1 request on its own connection: (status, head, body).
fn http(server: &Server, request: &[u8]) -> (u16, String, String) {
    http_to(server.http, request)
}

fn http_to(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), head.to_string(), body.to_string())
}

/// Samples by `name{labels}`; panics on a line that is neither a comment
/// nor a sample.
fn parse(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line:?}"));
        let name_end = series.find('{').unwrap_or(series.len());
        assert!(series[..name_end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "a metric name: {line:?}");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("a number: {line:?}"));
        assert!(samples.insert(series.to_string(), value).is_none(), "a series twice: {series}");
    }
    samples
}

/// One shard, and two: on a sharded server's main port the exposition is
/// every shard's, as one server's.
#[test]
fn metrics_count_what_clients_did() {
    for shards in ["1", "2"] {
        metrics_count_what_clients_did_on(shards);
    }
}

fn metrics_count_what_clients_did_on(shards: &str) {
    let pool = TempPool::new("metrics");
    let server = Server::start(&pool.0, &["--value-size-max", "64KiB", "--shards", shards]);
    let mut c = server.client();
    for i in 0..100 {
        let _: () = c.set(format!("k{i}"), vec![b'v'; 1000]).unwrap();
    }
    // A value small enough to travel in the command is copied.
    let _: () = c.set("tiny", "abcd").unwrap();
    let _: Vec<u8> = c.get("k1").unwrap();
    let _: Option<Vec<u8>> = c.get("missing").unwrap();
    assert!(redis::cmd("NOSUCHCOMMAND").query::<()>(&mut c).is_err());
    assert!(c.set::<_, _, ()>("big", vec![b'x'; 100 << 10]).is_err(), "over the value limit");
    assert_eq!(http(&server, b"PUT /kv/h HTTP/1.1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").0, 204);
    assert_eq!(http(&server, b"GET /kv/h HTTP/1.1\r\nConnection: close\r\n\r\n").0, 200);
    assert_eq!(http(&server, b"GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n").0, 404);

    let (status, head, body) = http(&server, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    let m = parse(&body);
    let requests = |protocol: &str, kind: &str, result: &str| {
        m[&format!("packetstore_requests_total{{protocol=\"{protocol}\",kind=\"{kind}\",result=\"{result}\"}}")]
    };
    assert_eq!(requests("resp", "write", "ok"), 101.0);
    assert_eq!(requests("resp", "write", "refused"), 1.0, "the SET over the limit");
    assert_eq!(requests("resp", "read", "ok"), 2.0);
    assert_eq!(requests("resp", "other", "error"), 1.0, "the unknown command");
    assert_eq!(requests("http", "write", "ok"), 1.0);
    assert_eq!(requests("http", "read", "ok"), 1.0);
    assert_eq!(requests("http", "other", "error"), 1.0, "the unknown path");
    // Every write was in exactly one group-commit batch.
    assert_eq!(m["packetstore_commit_batch_writes_sum"], 102.0);
    assert_eq!(m["packetstore_commit_batch_writes_bucket{le=\"+Inf\"}"], m["packetstore_commit_batch_writes_count"]);
    assert!(m["packetstore_fences_total"] >= m["packetstore_commit_batch_writes_count"], "a fence per batch at least");
    let fence_count = m["packetstore_fence_seconds_count{domain=\"cache-line\"}"];
    assert_eq!(fence_count, m["packetstore_fences_total"]);
    let buckets: Vec<f64> = m
        .iter()
        .filter(|(series, _)| series.starts_with("packetstore_fence_seconds_bucket"))
        .map(|(_, &v)| v)
        .collect();
    assert!(buckets.iter().all(|&b| b <= fence_count), "cumulative buckets never pass the count");
    let in_place = m["packetstore_value_bytes_written_total{path=\"in_place\"}"];
    let copied = m["packetstore_value_bytes_written_total{path=\"copied\"}"];
    if shards == "1" {
        assert_eq!(in_place, 100_005.0, "the 1 KB values and the PUT's body stay where they were received");
        assert_eq!(copied, 4.0, "the small value");
    } else {
        // A PUT relayed to its key's shard is read out of the receiving
        // shard's pool once; its 5 bytes land copied on the owner.
        assert!(in_place == 100_005.0 || in_place == 100_000.0, "{in_place}");
        assert_eq!(in_place + copied, 100_009.0, "every value byte written once");
    }
    assert!(m["packetstore_connections"] >= 1.0);
    assert!(m["packetstore_connections_accepted_total"] >= 5.0, "the Redis client and four HTTP requests");
    assert_eq!(m["packetstore_keys"], 102.0);
    assert!(m["packetstore_pool_free_buffers"] < m["packetstore_pool_buffers"]);
    assert!(m["packetstore_log_bytes"] > 0.0);
    assert!(m["packetstore_recovery_seconds"] > 0.0);
    // INFO has the same figures in Redis's layout.
    let info: String = redis::cmd("INFO").arg("everything").query(&mut c).unwrap();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("INFO {name}"))
            .parse()
            .unwrap()
    };
    assert_eq!(field("value_bytes_in_place"), in_place, "INFO and /metrics agree");
    assert!(field("fences") >= m["packetstore_fences_total"]);
    assert!(field("commit_batch_writes_avg") >= 1.0);
}

#[test]
fn the_wal_server_has_metrics_too() {
    let pool = TempPool::new("metrics-wal");
    let wal = Wal::start(&pool.0, &[]);
    for body in ["one", "two", "three"] {
        let request =
            format!("POST /log HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        assert_eq!(http_to(wal.addr, request.as_bytes()).0, 200);
    }
    let (status, head, body) = http_to(wal.addr, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_eq!(status, 200);
    assert!(head.contains("Content-Type: text/plain; version=0.0.4"), "{head}");
    let m = parse(&body);
    assert_eq!(m["packetstore_records_total{loop=\"0\"}"], 3.0);
    assert_eq!(m["packetstore_log_live_records{loop=\"0\"}"], 3.0);
    assert!(m["packetstore_fences_total"] >= 3.0, "each request a batch of its own, at least one fence each");
    assert_eq!(m["packetstore_value_bytes_written_total{loop=\"0\",path=\"in_place\"}"], 11.0);
}

/// `wal --config FILE` reads its options from the file (here a connection
/// limit of 2), and a flag on the command line wins over the file.
#[test]
fn the_wal_server_reads_a_config_file() {
    let pool = TempPool::new("wal-config");
    let config = pool.0.with_extension("toml");
    std::fs::write(&config, "connections-max = 2\nlog-size = \"1GiB\"\n").unwrap();
    let wal = Wal::start(&pool.0, &["--config", config.to_str().unwrap()]);
    let _ = std::fs::remove_file(&config);
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(wal.addr).unwrap()).collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(held);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (_, _, body) = http_to(wal.addr, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    let m = parse(&body);
    assert!(m["packetstore_connections_refused_total{loop=\"0\"}"] >= 2.0, "the file's limit applies");
    // Wal::start's --log-size 4MiB (after the file's 1GiB) wins.
    assert!(m["packetstore_log_bytes{loop=\"0\"}"] < (8 << 20) as f64, "the command line wins");
}
