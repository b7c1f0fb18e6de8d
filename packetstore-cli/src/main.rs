//! The `packetstore` command: a thin layer over the library. Each
//! subcommand lives in its own file; this one parses arguments and reports
//! errors (what was wrong and what to do), exiting non-zero, with each
//! cause in an error's chain printed once.

mod bench_log;
mod bench_switch;
mod bench_tree;
mod cache;
mod compact;
mod config;
mod crash_writer;
mod demo;
mod get;
mod inspect;
mod inspect_values;
mod options;
mod progress;
mod reader_check;
mod serve;
mod switch;
mod wal;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc for the process's heap (issue 36): a command's small, short
/// allocations (a key's copy, a reply's digits, a list of ops) cost 40-60
/// instructions each there against 100-150 in glibc's malloc and free,
/// about a tenth of an INCR. Persistent data never lives on the heap (it is
/// in the pool), so the allocator is only a matter of speed; Redis links
/// jemalloc for the same reason.
#[global_allocator]
static HEAP: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Parses the command line, with the servers' `--config FILE` expanded
/// first.
fn parse() -> anyhow::Result<Cli> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let Some(name) = args.get(1).and_then(|a| a.to_str()).filter(|name| ["serve", "wal"].contains(name)) else {
        return Ok(Cli::parse_from(args));
    };
    let command = Cli::command();
    let subcommand = command.find_subcommand(name).expect("the server subcommands");
    let flags: Vec<String> = subcommand.get_arguments().filter_map(|a| a.get_long().map(String::from)).collect();
    Ok(Cli::parse_from(config::expand(args, &flags)?))
}

#[derive(Parser)]
#[command(name = "packetstore", version, about = "PASTE rebuilt on io_uring: a durable network storage engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Allowed: parsed once at start; boxing the largest would only move it.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// The durable key-value server: HTTP (/kv/<key>) and the Redis
    /// protocol over one pool. With no arguments: a pool under
    /// ./packetstore-data/, HTTP on 127.0.0.1:8080, Redis on 127.0.0.1:6379.
    #[command(args_override_self = true)]
    Serve(serve::Args),
    /// Append records to a pool's log, commit them, and show what recovery
    /// finds: run it twice to see the first run's records come back.
    Demo(demo::Args),
    /// The paper's WAL server: POST bodies are logged durably where they
    /// landed and acknowledged with X-Seq; GET /log/<seq> reads them back.
    #[command(args_override_self = true)]
    Wal(wal::Args),
    /// Read a key one-sidedly from a running server's pool (the server
    /// runs with --one-sided-reads): no request to the server unless the
    /// read cannot be proved.
    Get(get::Args),
    /// The write cache of `packetstore-preload`: `recover POOL` replays its
    /// pending writes into their files.
    #[command(subcommand)]
    Cache(cache::Command),
    /// A learning bridge between interfaces over AF_XDP whose packet
    /// memory is the pool: frames are logged where they landed (or copied,
    /// --log copy) and still forwarded.
    Switch(switch::Args),
    /// Write a switch pool's logged frames as a pcap file (tcpdump,
    /// Wireshark).
    Pcap(switch::PcapArgs),
    /// Send a switch pool's logged frames again, in order, on an interface.
    Replay(switch::ReplayArgs),
    /// Show a pool's geometry, persistence domain and log, without
    /// modifying it.
    Inspect(inspect::Args),
    /// Compact a key-value pool by hand (no server may be using it):
    /// relocate the values of partly live buffers until no pass frees
    /// any, then checkpoint.
    Compact(compact::Args),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Test helper: append and commit forever, reporting each commit (for
    /// the kill -9 test).
    #[command(name = "crash-writer", hide = true)]
    CrashWriter(crash_writer::Args),
    /// Test helper: a one-sided reader process checking what it reads.
    #[command(name = "reader-check", hide = true)]
    ReaderCheck(reader_check::Args),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Log commits per second and latency, per domain, record size and
    /// batch size, zero-copy against copy, side by side.
    Log(bench_log::Args),
    /// The persistent B+ tree: inserts, gets, scans and reopening, per
    /// domain, against a DRAM BTreeMap and against rebuilding by log replay.
    Tree(bench_tree::Args),
    /// The switch benchmark's traffic generator (bench/switch.py): raw
    /// frames from one namespace to another, throughput or bursts.
    #[command(name = "switch-load")]
    SwitchLoad(bench_switch::Args),
    /// The switch's engine alone over in-memory ports: frames per second
    /// with no logging, logging by swap, and by copy.
    #[command(name = "switch-engine")]
    SwitchEngine(bench_switch::EngineArgs),
}

/// Logs go to stderr, one line per notable event; `PACKETSTORE_LOG`
/// (tracing's filter syntax: `warn`, `debug`, `packetstore=debug`) sets the
/// level, `info` by default.
fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("PACKETSTORE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

fn main() {
    init_logging();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(error) => {
            eprintln!("packetstore: error: {}", error_text(&error));
            std::process::exit(2);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Get(args) => get::run(args),
        Command::Cache(command) => cache::run(command),
        Command::Switch(args) => switch::run(args),
        Command::Pcap(args) => switch::run_pcap(args),
        Command::Replay(args) => switch::run_replay(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Compact(args) => compact::run(args),
        Command::Wal(args) => wal::run(args),
        Command::Bench(BenchCommand::Log(args)) => bench_log::run(args),
        Command::Bench(BenchCommand::Tree(args)) => bench_tree::run(args),
        Command::Bench(BenchCommand::SwitchLoad(args)) => bench_switch::run(args),
        Command::Bench(BenchCommand::SwitchEngine(args)) => bench_switch::run_engine(args),
        Command::CrashWriter(args) => crash_writer::run(args),
        Command::ReaderCheck(args) => reader_check::run(args),
    };
    if let Err(error) = result {
        eprintln!("packetstore: error: {}", error_text(&error));
        std::process::exit(1);
    }
}

/// An error and its causes, joined by ": ", leaving out a cause whose text
/// is already there: an error that shows its source in its own message
/// (`"{path}: {source}"`) and also returns it as its `source()` would
/// otherwise print the OS error twice.
fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[test]
    fn each_cause_is_printed_once() {
        let os = std::io::Error::from_raw_os_error(libc::EACCES);
        let pool = packetstore::PoolError::Io { path: "/p/kv.pool".into(), source: os };
        let error = anyhow::Error::new(pool).context("cannot open the pool");
        assert_eq!(error_text(&error), "cannot open the pool: /p/kv.pool: Permission denied (os error 13)");
        let chained = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_text(&chained), "outer: middle: inner");
    }
}
