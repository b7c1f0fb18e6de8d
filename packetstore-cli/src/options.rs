//! Command-line options shared by the servers' subcommands (`serve`,
//! `wal`) and the offline tools: the event loop's, the persistence
//! options of a pool, how long to wait for a port; each parsed into the
//! library's settings (`packetstore::launch`), which check and use them.

use anyhow::Context;
pub use packetstore::launch::pools::{
    check_buffers, check_new_pool, io_path, open_or_create_pool, power_switch, probe_uring, refusal,
    test_switches_enabled, warn_pool_size_ignored, write_crash_image, BuffersNeeded, TMPFS_SMALL_PAGES,
};
pub use packetstore::launch::units::{parse_address, parse_duration, parse_size, Size};
use packetstore::launch::{LoopSettings, StorageSettings};
use packetstore::{Domain, PageSync, PersistOptions, SimMode};

/// The size of a new pool when `--pool-size` is not given.
pub const POOL_SIZE_DEFAULT: &str = "1GiB";

/// How the servers bind, shared by `serve` and `wal`.
#[derive(clap::Args, Clone, Debug)]
pub struct BindArgs {
    /// How long to keep trying a listening address that is in use before
    /// giving up (at most 1h; 0: do not wait). A server killed a moment ago
    /// may hold its port briefly after it has been reaped (its io_uring
    /// closes the socket afterwards), so a supervisor's immediate restart
    /// waits here instead of failing. The error then names the holder.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub bind_timeout: std::time::Duration,
}

impl BindArgs {
    /// `--bind-timeout`, checked.
    pub fn timeout(&self) -> anyhow::Result<std::time::Duration> {
        anyhow::ensure!(
            self.bind_timeout <= packetstore::launch::config::BIND_TIMEOUT_MAX,
            "--bind-timeout must be at most 1h"
        );
        Ok(self.bind_timeout)
    }
}

/// The io_uring event loop's options, shared by `wal` and `serve`.
#[derive(clap::Args, Clone, Debug)]
pub struct LoopArgs {
    /// Buffers in the receive ring (a power of two, at most 32768).
    #[arg(long, default_value_t = 4096)]
    pub ring_entries: u16,
    /// Poll for completions instead of sleeping in the kernel.
    #[arg(long)]
    pub busy_poll: bool,
    /// Page domain (io uring): fdatasyncs kept in flight at once, each
    /// covering everything appended before it (1..=16).
    #[arg(long, default_value_t = 1)]
    pub syncs_in_flight: usize,
    /// Zero copy: give each receive whole pool buffers, instead of the
    /// default incremental consumption (IOU_PBUF_RING_INC), where requests
    /// pack into shared buffers (fewer pages per request and per sync:
    /// +10-28% on ext4 here, neutral on /dev/shm).
    #[arg(long)]
    pub whole_buffers: bool,
    /// Connections served at once; beyond it new ones are closed at once
    /// and counted (INFO rejected_connections). Also bounded by the open
    /// file limit (ulimit -n).
    #[arg(long, default_value_t = 10_000)]
    pub connections_max: usize,
    /// Back-pressure: a client this far behind reading its replies is not
    /// served (and soon not read) until it catches up.
    #[arg(long, default_value = "4MiB", value_parser = Size::parse)]
    pub client_pause: Size,
    /// A paused client that reads nothing for this long is disconnected.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub client_stall_timeout: std::time::Duration,
    /// Fairness: what one client may send in one loop turn before the
    /// others are served (its receive is re-armed for the next turn);
    /// 0: unlimited (a fast sender then stretches everyone's turns).
    #[arg(long, default_value = "64KiB", value_parser = Size::parse)]
    pub client_receive_per_turn: Size,
}

impl LoopArgs {
    /// The library's event-loop settings.
    pub fn settings(&self) -> LoopSettings {
        LoopSettings {
            ring_entries: self.ring_entries,
            busy_poll: self.busy_poll,
            syncs_in_flight: self.syncs_in_flight,
            whole_buffers: self.whole_buffers,
            connections_max: self.connections_max,
            client_pause: self.client_pause.clone(),
            client_stall_timeout: self.client_stall_timeout,
            client_receive_per_turn: self.client_receive_per_turn.clone(),
        }
    }

    /// The event loop's configuration (`incremental`: the persist mode and
    /// loop allow incremental buffer consumption), checked.
    pub fn engine_config(&self, incremental: bool) -> anyhow::Result<packetstore::io::engine::EngineConfig> {
        self.settings().engine_config(incremental)
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct PersistArgs {
    /// Persistence domain: auto, cache-line, byte, page or none (benchmarks
    /// only). auto: MAP_SYNC -> cache-line, tmpfs -> cache-line (emulated),
    /// otherwise page.
    #[arg(long, default_value = "auto")]
    pub domain: String,
    /// How the page domain syncs a batch: fdatasync or msync.
    #[arg(long, default_value = "fdatasync")]
    pub page_sync: String,
    /// Emulated latency added to every fence of the cache-line and byte
    /// domains, in nanoseconds (the paper's slow-PM case is 10000).
    #[arg(long, default_value_t = 0, alias = "fence-delay-ns")]
    pub fence_latency_ns: u64,
    /// Map the whole pool at start (no page faults while serving).
    #[arg(long)]
    pub prefault: bool,
    /// When creating a pool on a disk file system: reserve its blocks
    /// without writing zeros over them. Creation is then instant, but until
    /// every block has been written once, the page domain's syncs also
    /// commit the file system's journal (about half the SET throughput on
    /// ext4). By default, creation writes the pool once (about 1 s per GiB).
    #[arg(long)]
    pub reserve_only: bool,
    /// When creating a pool: leave the file sparse instead of reserving its
    /// space. A huge pool then costs only what it holds, but a full file
    /// system can kill the server (SIGBUS) when it writes into a hole.
    #[arg(long)]
    pub sparse: bool,
    /// When creating a pool: make its directory (and their parents) if
    /// missing. Without it a missing directory is an error, except the
    /// default one (packetstore-data/ under the current directory).
    #[arg(long)]
    pub create_dirs: bool,
    /// Test switch: run the pool in memory on the crash simulator
    /// (cache-line or page), where a debug request cuts the power (RESP
    /// `DEBUG POWERFAIL`, HTTP `GET /debug/powerfail`) and the crash image
    /// is written back to the file. Nothing is durable until then. Refused
    /// unless PACKETSTORE_ENABLE_TEST_SWITCHES=1.
    #[arg(long, hide = true)]
    pub simulate_power_failures: Option<String>,
}

impl PersistArgs {
    /// The library's storage settings: how pools are opened and created.
    pub fn storage(&self) -> anyhow::Result<StorageSettings> {
        let simulate = match self.simulate_power_failures.as_deref() {
            None => None,
            Some("cache-line") => Some(SimMode::CacheLine),
            Some("page") => Some(SimMode::Page),
            Some(other) => anyhow::bail!("unknown simulator mode '{other}': use cache-line or page"),
        };
        Ok(StorageSettings { options: self.options()?, create_dirs: self.create_dirs, simulate })
    }

    pub fn options(&self) -> anyhow::Result<PersistOptions> {
        let domain = match self.domain.as_str() {
            "auto" => None,
            other => Some(
                Domain::parse(other)
                    .with_context(|| format!("unknown domain '{other}': use auto, cache-line, byte, page or none"))?,
            ),
        };
        let page_sync = PageSync::parse(&self.page_sync)
            .with_context(|| format!("unknown page sync '{}': use fdatasync or msync", self.page_sync))?;
        Ok(PersistOptions {
            domain,
            page_sync,
            fence_latency_ns: self.fence_latency_ns,
            prefault: self.prefault,
            zero_fill: !self.reserve_only,
            sparse: self.sparse,
        })
    }
}
