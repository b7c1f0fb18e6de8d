//! `packetstore bench log`: the log's commit rate and latency, per
//! persistence domain, record size and batch size, for retain-in-place
//! (zero copy: the data was received into the pool buffer it is logged in)
//! against copy (received into a private buffer, then copied into the pool:
//! the paper's copy baseline). Compared runs alternate (A B A B A B) in one
//! process; throughput is the median of the rounds, latency percentiles
//! pool every round's batches.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use packetstore::util::rng::SplitMix64;
use packetstore::{Buffers, Domain, Geometry, Log, PageSync, PersistOptions, Pool, PoolKind};

/// Records kept live while benchmarking; older ones are released, so the
/// log and the pool reach a steady state with reclamation included.
const LIVE_RECORDS: usize = 1024;

/// Where a benchmark's pools go, per kind of domain.
#[derive(clap::Args)]
pub struct Dirs {
    /// Where the emulated persistent-memory pools go (a tmpfs).
    #[arg(long, default_value = "/dev/shm")]
    pub shm_dir: PathBuf,
    /// Where the page-domain pools go (an ordinary disk file system).
    #[arg(long, default_value = "packetstore-data/bench")]
    pub disk_dir: PathBuf,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub dirs: Dirs,
    /// Domains: pm, pm-10us, page-fdatasync, page-msync, none.
    #[arg(long, value_delimiter = ',', default_value = "pm,pm-10us,page-fdatasync,page-msync")]
    pub domains: Vec<String>,
    /// Record payload sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,4096")]
    pub sizes: Vec<usize>,
    /// Records per commit.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    pub batches: Vec<usize>,
    /// Seconds per run.
    #[arg(long, default_value_t = 0.5)]
    pub seconds: f64,
    /// Rounds of A B per cell (at least 1; 3 gives a median of 3).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Also write the table (Markdown) to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    ZeroCopy,
    Copy,
}

pub(crate) struct Setup {
    pub name: &'static str,
    pub dir: PathBuf,
    pub options: PersistOptions,
}

/// A domain by name, and where its pools go.
pub(crate) fn setup(name: &str, dirs: &Dirs) -> anyhow::Result<Setup> {
    let pm =
        |latency| PersistOptions { domain: Some(Domain::CacheLine), fence_latency_ns: latency, ..Default::default() };
    let page = |sync| PersistOptions { domain: Some(Domain::Page), page_sync: sync, ..Default::default() };
    Ok(match name {
        "pm" => Setup { name: "pm (cache-line, tmpfs)", dir: dirs.shm_dir.clone(), options: pm(0) },
        "pm-10us" => Setup { name: "pm +10us/fence", dir: dirs.shm_dir.clone(), options: pm(10_000) },
        "page-fdatasync" => {
            Setup { name: "page (fdatasync)", dir: dirs.disk_dir.clone(), options: page(PageSync::Fdatasync) }
        }
        "page-msync" => Setup { name: "page (msync)", dir: dirs.disk_dir.clone(), options: page(PageSync::Msync) },
        "none" => Setup {
            name: "none",
            dir: dirs.shm_dir.clone(),
            options: PersistOptions { domain: Some(Domain::None), ..Default::default() },
        },
        other => bail!("unknown domain '{other}' (pm, pm-10us, page-fdatasync, page-msync, none)"),
    })
}

struct Bench {
    pool: Pool,
    buffers: Buffers,
    log: Log,
    window: VecDeque<u64>,
    source: Vec<u8>,
    private: Vec<u8>,
}

struct RunResult {
    records_per_second: f64,
    batch_latencies_ns: Vec<u64>,
    fences: u64,
}

impl Bench {
    fn open(path: &Path, options: &PersistOptions) -> anyhow::Result<Bench> {
        let _ = std::fs::remove_file(path);
        let geometry = Geometry { buffer_size: 2048, buffer_count: 65536, log_size: 16 << 20, log_count: 1 };
        let pool = Pool::create_as(path, PoolKind::Log, geometry, options)
            .with_context(|| format!("creating {}", path.display()))?;
        let mut buffers = Buffers::new(geometry.buffer_count);
        let (log, _) = Log::recover(&pool, &mut buffers)?;
        let mut source = vec![0u8; 64 * 1024];
        SplitMix64::new(3).fill(&mut source);
        Ok(Bench { pool, buffers, log, window: VecDeque::new(), source, private: vec![0; 64 * 1024] })
    }

    fn run(&mut self, mode: Mode, size: usize, batch: usize, seconds: f64) -> anyhow::Result<RunResult> {
        let buffer_size = self.pool.geometry().buffer_size as usize;
        let fences_before = self.pool.stats().fences.load(std::sync::atomic::Ordering::Relaxed);
        let mut latencies = Vec::new();
        let mut records = 0u64;
        let mut extents = Vec::with_capacity(size.div_ceil(buffer_size));
        let started = Instant::now();
        let deadline = Duration::from_secs_f64(seconds);
        while started.elapsed() < deadline {
            let batch_start = Instant::now();
            for _ in 0..batch {
                // "The kernel receives" the request: into pool buffers (zero
                // copy), or into a private buffer that is then copied in.
                let received: &[u8] = match mode {
                    Mode::ZeroCopy => &self.source[..size],
                    Mode::Copy => {
                        self.private[..size].copy_from_slice(&self.source[..size]);
                        &self.private[..size]
                    }
                };
                extents.clear();
                self.buffers.copy_in(&self.pool, received, &mut extents)?;
                let lsn = self.log.append(&self.pool, &mut self.buffers, 1, records, b"bench-key", &extents)?;
                self.buffers.release_extents(&extents)?;
                self.window.push_back(lsn);
                if self.window.len() > LIVE_RECORDS {
                    let oldest = self.window.pop_front().expect("nonempty");
                    self.log.release(&self.pool, oldest)?;
                }
                records += 1;
            }
            self.log.commit(&self.pool, &mut self.buffers)?;
            latencies.push(batch_start.elapsed().as_nanos() as u64);
        }
        let fences = self.pool.stats().fences.load(std::sync::atomic::Ordering::Relaxed) - fences_before;
        Ok(RunResult {
            records_per_second: records as f64 / started.elapsed().as_secs_f64(),
            batch_latencies_ns: latencies,
            fences,
        })
    }
}

pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    values[values.len() / 2]
}

fn percentile_us(values: &mut [u64], p: f64) -> f64 {
    values.sort_unstable();
    let index = ((values.len() as f64 * p).ceil() as usize).clamp(1, values.len()) - 1;
    values[index] as f64 / 1e3
}

struct Cell {
    rates: Vec<f64>,
    latencies: Vec<u64>,
    fences: u64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.rounds >= 1 && args.seconds > 0.0, "--rounds must be >= 1 and --seconds > 0");
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut table = String::new();
    writeln!(table, "| domain | record B | batch | zero-copy rec/s | copy rec/s | zero-copy / copy | zc p50 us | zc p99 us | copy p50 us | copy p99 us |")?;
    writeln!(table, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")?;
    println!("{}", table.trim_end());
    let steps = args.domains.len() * args.sizes.len() * args.batches.len() * args.rounds;
    let bar = crate::progress::bar(steps as u64, "bench log");
    for name in &args.domains {
        let setup = setup(name, &args.dirs)?;
        std::fs::create_dir_all(&setup.dir).with_context(|| format!("creating {}", setup.dir.display()))?;
        let path = setup.dir.join(format!("packetstore-bench-{}.pool", std::process::id()));
        let mut bench = Bench::open(&path, &setup.options)?;
        eprintln!("# {}: {}", setup.name, bench.pool.domain());
        // Warm up: touch the pool's blocks and the log before measuring.
        bench.run(Mode::ZeroCopy, 4096, 64, args.seconds.min(0.5))?;
        for &size in &args.sizes {
            for &batch in &args.batches {
                let mut cells = [(); 2].map(|_| Cell { rates: Vec::new(), latencies: Vec::new(), fences: 0 });
                for round in 0..args.rounds {
                    crate::progress::step(
                        &bar,
                        format!("{}: {size} B, batch {batch}, round {}", setup.name, round + 1),
                    );
                    for (i, mode) in [Mode::ZeroCopy, Mode::Copy].into_iter().enumerate() {
                        let result = bench.run(mode, size, batch, args.seconds)?;
                        cells[i].rates.push(result.records_per_second);
                        cells[i].latencies.extend(result.batch_latencies_ns);
                        cells[i].fences += result.fences;
                    }
                }
                let [zc, copy] = &mut cells;
                let (zc_rate, copy_rate) = (median(&mut zc.rates), median(&mut copy.rates));
                let row = format!(
                    "| {} | {size} | {batch} | {zc_rate:.0} | {copy_rate:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    setup.name,
                    zc_rate / copy_rate,
                    percentile_us(&mut zc.latencies, 0.50),
                    percentile_us(&mut zc.latencies, 0.99),
                    percentile_us(&mut copy.latencies, 0.50),
                    percentile_us(&mut copy.latencies, 0.99),
                );
                assert!(zc.fences > 0 && copy.fences > 0, "a run committed nothing");
                println!("{row}");
                writeln!(table, "{row}")?;
            }
        }
        drop(bench);
        let _ = std::fs::remove_file(&path);
    }
    if let Some(out) = &args.out {
        let mut text = format!(
            "# Log commit microbenchmark\n\nCommand: `{command}`\n\n\
             Each cell: {} rounds of {} s per mode, alternated zero-copy / copy; rates are medians of rounds, \
             latency is per batch (first append to commit return), percentiles over all rounds. \
             {LIVE_RECORDS} records kept live (older ones released in the same batches).\n\n",
            args.rounds, args.seconds
        );
        text.push_str(&table);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}
