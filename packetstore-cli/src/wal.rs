//! `packetstore wal`: the paper's WAL server. POST bodies become log
//! records, acknowledged with `X-Seq` once durable; `GET /log/<seq>` reads
//! one back. See `packetstore::wal` for the protocol and `engine` / `epoll`
//! for the I/O paths.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context};
use packetstore::engine::{Engine, EngineConfig};
use packetstore::epoll::{CommitPolicy, EpollServer};
use packetstore::wal::{Persist, Wal, WalConfig};
use packetstore::{Buffers, Geometry, Pool};

use crate::options::{parse_size, PersistArgs};

#[derive(clap::Args)]
pub struct Args {
    /// The pool file (created if missing).
    #[arg(long, default_value = "packetstore-data/wal.pool")]
    pub pool: PathBuf,
    /// Size of a new pool (an existing pool keeps its size).
    #[arg(long, default_value = "1GiB")]
    pub pool_size: String,
    /// Log region of a new pool.
    #[arg(long, default_value = "256MiB")]
    pub log_size: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// I/O path: uring (PASTE's engine) or epoll (the paper's Linux baseline).
    #[arg(long, default_value = "uring")]
    pub io: String,
    /// zerocopy (log bodies where they landed), copy, or off (nothing durable).
    #[arg(long, default_value = "zerocopy")]
    pub persist: String,
    /// epoll only: per-request (fence or sync per request) or per-turn.
    #[arg(long, default_value = "per-request")]
    pub commit: String,
    /// Event loops.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Largest request body accepted.
    #[arg(long, default_value = "64MiB")]
    pub body_size_max: String,
    /// Buffers in the receive ring (a power of two, at most 32768).
    #[arg(long, default_value_t = 4096)]
    pub ring_entries: u16,
    /// Poll for completions instead of sleeping in the kernel.
    #[arg(long)]
    pub busy_poll: bool,
    #[command(flatten)]
    pub persist_args: PersistArgs,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let persist = Persist::parse(&args.persist)
        .with_context(|| format!("unknown --persist '{}': use zerocopy, copy or off", args.persist))?;
    if args.threads != 1 {
        bail!("--threads {} is not supported yet: run one event loop (--threads 1)", args.threads);
    }
    let options = args.persist_args.options()?;
    raise_open_file_limit();
    if let Some(parent) = args.pool.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let pool = if args.pool.exists() {
        Pool::open(&args.pool, &options)?
    } else {
        let geometry = Geometry::for_file_size(parse_size(&args.pool_size)?, 2048, parse_size(&args.log_size)?)
            .map_err(|e| anyhow::anyhow!("pool size {}: {e}", args.pool_size))?;
        Pool::create(&args.pool, geometry, &options)?
    };
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    // Keep the receive ring refillable: twice its size stays free.
    let buffers_reserve = u32::from(args.ring_entries) * 2;
    let config = WalConfig { persist, body_size_max: parse_size(&args.body_size_max)?, buffers_reserve };
    let (mut wal, report) = Wal::recover(&pool, &mut buffers, config)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "packetstore wal {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "pool: {} ({:.1} MiB, {})", args.pool.display(), pool.len() as f64 / 1048576.0, pool.geometry())?;
    writeln!(out, "persistence domain: {}", pool.domain())?;
    writeln!(out, "recovery: {report}")?;
    let stop = AtomicBool::new(false);
    match args.io.as_str() {
        "uring" => {
            let engine_config = EngineConfig {
                listen: args.listen,
                ring_entries: args.ring_entries,
                busy_poll: args.busy_poll,
                ..EngineConfig::default()
            };
            let mut engine = Engine::new(&pool, &mut buffers, &mut wal, engine_config)?;
            writeln!(out, "listening on {} (io uring, persist {})", engine.local_addr()?, persist.name())?;
            out.flush()?;
            drop(out);
            engine.run(&stop)?;
        }
        "epoll" => {
            if persist == Persist::ZeroCopy {
                bail!("--io epoll receives into private buffers: use --persist copy or off");
            }
            let policy = match args.commit.as_str() {
                "per-request" => CommitPolicy::PerRequest,
                "per-turn" => CommitPolicy::PerTurn,
                other => bail!("unknown --commit '{other}': use per-request or per-turn"),
            };
            let mut server = EpollServer::new(&pool, &mut buffers, &mut wal, args.listen, policy)?;
            writeln!(
                out,
                "listening on {} (io epoll, persist {}, commit {})",
                server.local_addr()?,
                persist.name(),
                args.commit
            )?;
            out.flush()?;
            drop(out);
            server.run(&stop)?;
        }
        other => bail!("unknown --io '{other}': use uring or epoll"),
    }
    Ok(())
}

/// Each connection is a descriptor: lift the soft limit to the hard one.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid out-parameter; then the same struct, adjusted, as input.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
