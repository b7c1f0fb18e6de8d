//! `packetstore get`: a one-sided GET (or HGET, SISMEMBER, ZSCORE) from
//! the shell. Maps a
//! running server's pool read-only and reads the value without the
//! server (docs/one-sided-reads.md), falling back to its Redis port when
//! the read cannot be proved; `--repeat` measures reads in a loop.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use packetstore::reader::{Reader, ReaderError, ReaderOptions};

#[derive(clap::Args)]
pub struct Args {
    /// The server's pool file (the server runs with --one-sided-reads).
    #[arg(long, default_value = "packetstore-data/kv.pool")]
    pub pool: PathBuf,
    /// The server's Redis port, for reads that fall back; "none": never
    /// fall back (a read that cannot be proved is an error).
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub server: String,
    /// The server's password, for fallbacks.
    #[arg(long)]
    pub password: Option<String>,
    /// The logical database (0-15).
    #[arg(long, default_value_t = 0)]
    pub db: u8,
    /// Read this field of the hash KEY (HGET) instead of the string KEY.
    #[arg(long, conflicts_with_all = ["sismember", "zscore"])]
    pub field: Option<String>,
    /// Whether this member is in the set KEY (SISMEMBER: 1 or 0).
    #[arg(long, conflicts_with = "zscore")]
    pub sismember: Option<String>,
    /// The score of this member of the sorted set KEY (ZSCORE).
    #[arg(long)]
    pub zscore: Option<String>,
    /// Answer from the last checkpoint only (stale by up to the server's
    /// checkpoint interval).
    #[arg(long)]
    pub bounded_staleness: bool,
    /// Read this many times and report the time per read.
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    /// Print the reader's counters (one-sided, from the log, retries,
    /// fallbacks) on stderr.
    #[arg(long)]
    pub stats: bool,
    pub key: String,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let options = ReaderOptions {
        server: (args.server != "none").then(|| args.server.clone()),
        password: args.password.clone(),
        bounded_staleness: args.bounded_staleness,
        ..ReaderOptions::default()
    };
    let mut reader = Reader::open(&args.pool, options).context("opening the pool for one-sided reads")?;
    let started = Instant::now();
    let mut value = None;
    for _ in 0..args.repeat.max(1) {
        value = read(&mut reader, &args)?;
    }
    let elapsed = started.elapsed();
    match value {
        Some(bytes) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)?;
            out.write_all(b"\n")?;
        }
        None => println!("(nil)"),
    }
    if args.stats || args.repeat > 1 {
        let stats = reader.stats();
        eprintln!(
            "reads {}: {:.3} us each; one-sided {}, from the log {}, retries {}, fallbacks {}",
            args.repeat.max(1),
            elapsed.as_secs_f64() * 1e6 / args.repeat.max(1) as f64,
            stats.one_sided,
            stats.from_log,
            stats.retries,
            stats.fallbacks
        );
        if let Some(miss) = reader.last_miss() {
            eprintln!("last miss: {miss:?}");
        }
    }
    Ok(())
}

fn read(reader: &mut Reader, args: &Args) -> Result<Option<Vec<u8>>, ReaderError> {
    let key = args.key.as_bytes();
    if let Some(field) = &args.field {
        return reader.hget(args.db, key, field.as_bytes());
    }
    if let Some(member) = &args.sismember {
        return Ok(Some(u8::from(reader.sismember(args.db, key, member.as_bytes())?).to_string().into_bytes()));
    }
    if let Some(member) = &args.zscore {
        return Ok(reader.zscore(args.db, key, member.as_bytes())?.map(|score| score.to_string().into_bytes()));
    }
    reader.get(args.db, key)
}
