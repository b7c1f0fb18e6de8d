//! The WAL server's logic (PASTE's write-ahead log, paper section 4.3.1),
//! independent of how bytes arrive (io_uring or epoll) and of when the
//! engine commits.
//!
//! Protocol (HTTP/1.1, keep-alive, pipelining):
//! - `POST /wal` (or `/log`; PUT too) with a Content-Length body: the body
//!   becomes one log record; the reply `200` carries `X-Seq: <seq>`. The
//!   engine sends it only after the turn's commit, so an acknowledged body
//!   is durable.
//! - `GET /log/<seq>`: the record's body, byte for byte (404 if absent);
//!   `GET /log`: a JSON summary; `GET /metrics`; any other path: 404
//!   (a POST's body is then not read: the connection closes).
//! - malformed: 400 (or 411, 413, 431, 501, 505) and close; log or pool
//!   full: 503 with Retry-After, nothing acknowledged, the server goes on.
//!
//! Persistence modes: `ZeroCopy` logs the body where it was received (the
//! stream's pool segments; each request holds its own buffer references
//! while its body arrives); `Copy` copies the body into pool buffers as it
//! arrives (the paper's copy baselines); `Off` persists nothing (ceiling).
//!
//! Invariant: every buffer reference a request takes is given back when the
//! request ends, whether it was logged, refused, or its connection died.

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::error::LogError;
use crate::io::app::{App, Release};
pub use crate::io::app::{IoCounters, Persist, Progress};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::limits::RECORD_EXTENTS_MAX;
use crate::log::ring::{CommitTicket, Log, RecoveryReport};
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::proto::http::{self, respond, respond_head, HeadError, Method};

/// The record kind of a WAL entry.
pub const KIND_WAL: u16 = 1;
const _: () = assert!(KIND_WAL == crate::pool::kind::WAL_RECORD_KIND);
/// The default limit on a request body.
pub const BODY_SIZE_MAX_DEFAULT: u64 = 64 * 1024 * 1024;

#[derive(Clone, Copy, Debug)]
pub struct WalConfig {
    pub persist: Persist,
    pub body_size_max: u64,
    /// Free buffers kept for receiving: below this, bodies are refused
    /// (503) rather than kept, so the receive ring can always be refilled
    /// and the server can still answer. The engine sets it to its ring size.
    pub buffers_reserve: u32,
}

/// Counters, for metrics and tests.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalStats {
    pub requests: u64,
    pub records: u64,
    pub bytes_zero_copy: u64,
    pub bytes_copied: u64,
    pub refused_full: u64,
    pub refused_malformed: u64,
    pub commits: u64,
    /// Requests whose handling panicked (answered 500).
    pub panics: u64,
}

/// A request whose body is still arriving.
struct InFlight {
    keep_alive: bool,
    remaining: u64,
    extents: Vec<Extent>,
    /// Bytes used in the last extent's buffer (copy mode packs buffers).
    copy_fill: Option<usize>,
    /// Set when the body cannot be kept (pool full): drain it, answer 503.
    refused: bool,
}

/// Per-connection state of the WAL protocol.
#[derive(Default)]
pub struct ConnState {
    request: Option<InFlight>,
}

/// The sequence numbers of every log of a pool, shared by its event loops
/// so that any of them can serve `GET /log/<seq>`. Log `i` of `n` numbers
/// its k-th record `k * n + i + 1`. Each log publishes the lsn of a record
/// once it is durable (a Release store of its count); readers on other
/// threads see only published records, which are immutable (the WAL never
/// releases), so they read them without a lock.
pub struct SeqIndex {
    logs: Vec<PublishedLog>,
}

struct PublishedLog {
    /// lsn of the log's k-th record, for k = first_k + i.
    lsns: Box<[std::sync::atomic::AtomicU64]>,
    first_k: std::sync::atomic::AtomicU64,
    published: std::sync::atomic::AtomicU64,
}

impl SeqIndex {
    /// An index for every log of `pool`, sized to what each log can hold.
    pub fn new(pool: &Pool) -> std::sync::Arc<SeqIndex> {
        let geometry = pool.geometry();
        let capacity = (geometry.log_region_size() / 64) as usize;
        let logs = (0..geometry.log_count)
            .map(|_| PublishedLog {
                // Zeroed memory is a valid array of AtomicU64 (same layout as
                // u64); calloc'd pages are only touched when published.
                lsns: zeroed_atomics(capacity),
                first_k: std::sync::atomic::AtomicU64::new(0),
                published: std::sync::atomic::AtomicU64::new(0),
            })
            .collect();
        std::sync::Arc::new(SeqIndex { logs })
    }

    fn lookup(&self, log: u32, k: u64) -> Option<u64> {
        use std::sync::atomic::Ordering;
        let entry = self.logs.get(log as usize)?;
        let published = entry.published.load(Ordering::Acquire);
        let i = k.checked_sub(entry.first_k.load(Ordering::Acquire))?;
        (i < published).then(|| entry.lsns[i as usize].load(Ordering::Relaxed))
    }
}

fn zeroed_atomics(count: usize) -> Box<[std::sync::atomic::AtomicU64]> {
    let zeros = vec![0u64; count].into_boxed_slice();
    // SAFETY: AtomicU64 has the size, alignment and bit validity of u64.
    unsafe { Box::from_raw(Box::into_raw(zeros) as *mut [std::sync::atomic::AtomicU64]) }
}

pub struct Wal {
    config: WalConfig,
    log: Log,
    /// Which log of how many: sequence numbers are `k * logs + index + 1`.
    index: u32,
    logs: u32,
    shared: std::sync::Arc<SeqIndex>,
    /// lsn of this log's record `first_k + i` (committed or not).
    local: VecDeque<u64>,
    first_k: u64,
    next_k: u64,
    /// Local records published in the shared index (durable ones).
    published: usize,
    /// Per commit in flight, oldest first: the local records it covers.
    committing: VecDeque<usize>,
    appended_since_commit: bool,
    stats: WalStats,
    /// Counters of the I/O loop, reported by `GET /log`.
    io_counters: IoCounters,
    /// Tests only: the crash simulator the pool runs on, which
    /// `GET /debug/powerfail?seed=S&fences=F` arms (refused without it).
    power_switch: Option<std::sync::Arc<crate::pool::sim::SimDevice>>,
    /// Tests only (PACKETSTORE_ENABLE_TEST_SWITCHES=1): `GET
    /// /debug/panic` arms a panic in the next POST, after its body is
    /// staged; `panic_armed` says one is armed.
    test_switches: bool,
    panic_armed: bool,
    /// Set while the log takes a record: a panic then stops the process
    /// (the log's state may be half changed).
    appending: bool,
}

impl Wal {
    /// Tests only: lets `GET /debug/powerfail` cut the simulated power.
    pub fn set_power_switch(&mut self, device: std::sync::Arc<crate::pool::sim::SimDevice>) {
        self.power_switch = Some(device);
    }

    /// Tests only: lets `GET /debug/panic` arm a panic in the next POST.
    pub fn set_test_switches(&mut self, on: bool) {
        self.test_switches = on;
    }

    /// Records the I/O loop's counters (called by the loop once per turn).
    pub fn set_io_counters(&mut self, counters: IoCounters) {
        self.io_counters = counters;
    }

    /// Recovers the pool's log and indexes its records by sequence number.
    pub fn recover(pool: &Pool, buffers: &mut Buffers, config: WalConfig) -> Result<(Wal, RecoveryReport), LogError> {
        Self::recover_log(pool, 0, buffers, config, SeqIndex::new(pool))
    }

    /// Recovers log `index` (with its share of the buffers) and publishes
    /// its records in `shared`.
    pub fn recover_log(
        pool: &Pool,
        index: u32,
        buffers: &mut Buffers,
        config: WalConfig,
        shared: std::sync::Arc<SeqIndex>,
    ) -> Result<(Wal, RecoveryReport), LogError> {
        let logs = pool.geometry().log_count;
        let (log, report) = Log::recover_log(pool, index, buffers)?;
        let mut local = VecDeque::new();
        let mut first_k = 0;
        for lsn in log.live_lsns() {
            let seq = log.view(pool, lsn)?.tag;
            let (owner, k) =
                split_seq(seq, logs).ok_or(LogError::Corrupt { lsn, reason: format!("WAL sequence {seq}") })?;
            if local.is_empty() {
                first_k = k;
            }
            // Dense and increasing: the WAL never releases out of order.
            if owner != index || k != first_k + local.len() as u64 {
                return Err(LogError::Corrupt {
                    lsn,
                    reason: format!("WAL sequence {seq} out of order in log {index}"),
                });
            }
            local.push_back(lsn);
        }
        let next_k = first_k + local.len() as u64;
        shared.logs[index as usize].first_k.store(first_k, std::sync::atomic::Ordering::Release);
        let mut wal = Wal {
            config,
            log,
            index,
            logs,
            shared,
            local,
            first_k,
            next_k,
            published: 0,
            committing: VecDeque::new(),
            appended_since_commit: false,
            stats: WalStats::default(),
            io_counters: IoCounters::default(),
            power_switch: None,
            test_switches: false,
            panic_armed: false,
            appending: false,
        };
        // Recovery made every recovered record durable.
        wal.publish(wal.local.len());
        Ok((wal, report))
    }

    fn seq(&self, k: u64) -> u64 {
        k * u64::from(self.logs) + u64::from(self.index) + 1
    }

    /// Makes the first `count` local records visible to other loops.
    fn publish(&mut self, count: usize) {
        use std::sync::atomic::Ordering;
        let entry = &self.shared.logs[self.index as usize];
        for i in self.published..count {
            entry.lsns[i].store(self.local[i], Ordering::Relaxed);
        }
        entry.published.store(count as u64, Ordering::Release);
        self.published = count;
    }

    pub fn stats(&self) -> WalStats {
        self.stats
    }

    pub fn log(&self) -> &Log {
        &self.log
    }

    pub fn config(&self) -> WalConfig {
        self.config
    }

    /// True when replies queued since the last commit acknowledge records.
    pub fn needs_commit(&self) -> bool {
        self.appended_since_commit
    }

    /// Starts a commit whose sync the caller runs (see `Log::begin_commit`);
    /// None when nothing waits to be committed.
    pub fn begin_commit(&mut self, pool: &Pool) -> Result<Option<CommitTicket>, LogError> {
        let ticket = self.log.begin_commit(pool)?;
        self.appended_since_commit = false;
        if ticket.is_some() {
            self.committing.push_back(self.local.len());
        }
        Ok(ticket)
    }

    /// Finishes a commit begun with `begin_commit` whose sync succeeded.
    pub fn finish_commit(&mut self, ticket: CommitTicket, buffers: &mut Buffers) {
        self.log.finish_commit(ticket, buffers);
        self.stats.commits += 1;
        let covered = self.committing.pop_front().expect("a commit in flight");
        self.publish(covered);
    }

    /// The sync of the commit in flight failed: nothing is acknowledged
    /// any more.
    pub fn fail_commit(&mut self) {
        self.log.fail_commit();
    }

    /// Makes the turn's records durable. An error is fatal: the replies
    /// that wait for it must never be sent.
    pub fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), LogError> {
        if !self.appended_since_commit {
            return Ok(());
        }
        self.log.commit(pool, buffers)?;
        self.appended_since_commit = false;
        self.stats.commits += 1;
        self.publish(self.local.len());
        Ok(())
    }

    /// Serves up to `requests_max` requests from `stream`, appending replies
    /// to `out` until it holds `out_limit` bytes (back-pressure). `release` gives back a fully consumed segment's buffer.
    #[allow(clippy::too_many_arguments)]
    pub fn serve(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut ConnState,
        stream: &mut Stream,
        out: &mut Vec<u8>,
        out_limit: usize,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut progress = Progress::default();
        while progress.requests < requests_max && !progress.close && out.len() < out_limit {
            if conn.request.is_some() {
                if !self.take_body(pool, buffers, conn, stream, release) {
                    break; // the body is still arriving
                }
                let request = conn.request.take().expect("checked");
                progress.close |= !request.keep_alive;
                // The body's references are this request's from here: a
                // panic gives them back.
                let body = request.extents.clone();
                let panicked =
                    self.guarded(buffers, out, &body, |wal, buffers, out| wal.finish_post(pool, buffers, request, out));
                progress.close |= panicked;
                progress.requests += 1;
                continue;
            }
            if stream.is_empty() {
                break;
            }
            // Most heads sit whole in the front segment: parse them in place,
            // and gather across segments (bounded) only when they straddle.
            let front_len = stream.front().len();
            let mut parsed = http::parse_head(stream.front(), self.config.body_size_max);
            if parsed == Err(HeadError::Incomplete) && stream.len() > front_len {
                parsed = http::parse_head(stream.prefix(http::HEAD_SIZE_MAX), self.config.body_size_max);
            }
            let prefix = if front_len >= parsed.as_ref().map_or(0, |h| h.head_len) {
                stream.front()
            } else {
                stream.prefix(http::HEAD_SIZE_MAX)
            };
            let head = match parsed {
                Ok(head) => head,
                Err(HeadError::Incomplete) => break,
                Err(HeadError::Refuse(status, why)) => {
                    self.stats.refused_malformed += 1;
                    respond(out, status, &[], why.as_bytes(), false);
                    progress.close = true;
                    break;
                }
            };
            let target = prefix[head.target.clone()].to_vec();
            stream.consume(head.head_len, |segment| release(segment, buffers));
            self.stats.requests += 1;
            match head.method {
                Method::Post | Method::Put if !matches!(target.as_slice(), b"/wal" | b"/log") => {
                    respond(out, 404, &[], b"no such path: POST bodies to /wal\n", false);
                    progress.close = true;
                }
                Method::Post | Method::Put => {
                    conn.request = Some(InFlight {
                        keep_alive: head.keep_alive,
                        remaining: head.content_length,
                        extents: Vec::new(),
                        copy_fill: None,
                        refused: false,
                    });
                }
                Method::Get | Method::Head if head.content_length == 0 => {
                    let free = buffers.free_count();
                    let head_only = head.method == Method::Head;
                    let panicked = self.guarded(buffers, out, &[], |wal, _, out| {
                        wal.get(pool, free, &target, head_only, head.keep_alive, out)
                    });
                    progress.close |= !head.keep_alive || panicked;
                    progress.requests += 1;
                }
                _ => {
                    respond(out, 405, &[], b"only GET, HEAD and POST (without a body on GET)", false);
                    progress.close = true;
                }
            }
        }
        progress
    }

    /// Runs one request's `work` with its panic caught: the reply it began
    /// is dropped, the references it staged (`body`, and any it took with
    /// `Buffers::retain_staged`) are given back, a 500 is answered, and
    /// the server serves on; true if it panicked (the connection closes).
    /// Unless the log was taking a record: then the panic goes on and the
    /// process stops (recovery finds the log as the last commit left it).
    fn guarded(
        &mut self,
        buffers: &mut Buffers,
        out: &mut Vec<u8>,
        body: &[Extent],
        work: impl FnOnce(&mut Wal, &mut Buffers, &mut Vec<u8>),
    ) -> bool {
        let reply = out.len();
        let scope = buffers.begin_staging();
        buffers.adopt_staged(body);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self, buffers, out)));
        let Err(panic) = result else {
            buffers.end_staging(scope);
            return false;
        };
        if self.appending {
            std::panic::resume_unwind(panic);
        }
        out.truncate(reply);
        let released = buffers.unwind_staging(scope);
        self.stats.panics += 1;
        let what = match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
            (Some(text), _) => text.to_string(),
            (_, Some(text)) => text.clone(),
            _ => "a panic".to_string(),
        };
        tracing::error!("a request failed on a bug, answered 500 ({released} buffer references given back): {what}");
        respond(out, 500, &[], format!("internal error: the request was not run ({what})\n").as_bytes(), false);
        true
    }

    /// Moves body bytes from the stream into the request; true when the
    /// whole body is there.
    fn take_body(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut ConnState,
        stream: &mut Stream,
        release: &mut Release<'_>,
    ) -> bool {
        let request = conn.request.as_mut().expect("a request in flight");
        let take = (request.remaining.min(stream.len() as u64)) as usize;
        if take > 0 {
            let low = buffers.free_count() < self.config.buffers_reserve;
            if low && !request.refused && self.config.persist != Persist::Off {
                request.refused = true;
                buffers.release_extents(&request.extents).expect("the request's references");
                request.extents.clear();
            }
            if !request.refused && self.config.persist != Persist::Off {
                let zero_copy = self.config.persist == Persist::ZeroCopy;
                match stream.keep(pool, buffers, take, zero_copy, &mut request.extents, &mut request.copy_fill) {
                    Ok(true) => self.stats.bytes_zero_copy += take as u64,
                    Ok(false) => self.stats.bytes_copied += take as u64,
                    Err(_) => {
                        request.refused = true;
                        buffers.release_extents(&request.extents).expect("the request's references");
                        request.extents.clear();
                    }
                }
            }
            stream.consume(take, |segment| release(segment, buffers));
            request.remaining -= take as u64;
        }
        request.remaining == 0
    }

    fn finish_post(&mut self, pool: &Pool, buffers: &mut Buffers, mut request: InFlight, out: &mut Vec<u8>) {
        let keep_alive = request.keep_alive;
        if self.config.persist == Persist::Off {
            let seq = self.seq(self.next_k);
            self.next_k += 1;
            respond(out, 200, &[("X-Seq", seq)], b"ok\n", keep_alive);
            return;
        }
        if !request.refused && request.extents.len() > RECORD_EXTENTS_MAX {
            // Too fragmented to name in one record: repack by copying.
            request = repack(pool, buffers, request);
            buffers.adopt_staged(&request.extents);
        }
        if std::mem::take(&mut self.panic_armed) {
            panic!("a panic injected by a test switch (GET /debug/panic) after the body was staged");
        }
        let result = if request.refused { None } else { Some(self.append(pool, buffers, &request.extents)) };
        buffers.release_extents(&request.extents).expect("the request's references");
        match result {
            Some(Ok(seq)) => respond(out, 200, &[("X-Seq", seq)], b"ok\n", keep_alive),
            Some(Err(error)) => {
                self.stats.refused_full += 1;
                respond(out, 503, &[("Retry-After", 1)], error.to_string().as_bytes(), keep_alive)
            }
            None => {
                self.stats.refused_full += 1;
                respond(out, 503, &[("Retry-After", 1)], b"pool full: the body was not stored", keep_alive)
            }
        }
    }

    fn append(&mut self, pool: &Pool, buffers: &mut Buffers, extents: &[Extent]) -> Result<u64, LogError> {
        let seq = self.seq(self.next_k);
        self.appending = true;
        let lsn = match self.log.append(pool, buffers, KIND_WAL, seq, &[], extents) {
            Err(LogError::BatchFull { .. }) => {
                // A very large turn: commit what it has, then go on.
                self.log.commit(pool, buffers).and_then(|_| self.log.append(pool, buffers, KIND_WAL, seq, &[], extents))
            }
            other => other,
        };
        self.appending = false;
        let lsn = lsn?;
        self.local.push_back(lsn);
        self.next_k += 1;
        self.appended_since_commit = true;
        self.stats.records += 1;
        Ok(seq)
    }

    /// `GET /metrics`: this event loop's figures (its log, requests and
    /// connections; the pool's fences), in the Prometheus text format.
    fn metrics_text(&self, pool: &Pool, free_buffers: u32) -> String {
        let mut e = crate::util::metrics::Exposition::default();
        let index = self.index.to_string();
        let this = [("loop", index.as_str())];
        e.family("packetstore_info", "gauge", "The server's version, persistence domain and persist mode.");
        let domain = pool.domain().domain.name();
        let labels = [
            ("server", "wal"),
            ("version", env!("CARGO_PKG_VERSION")),
            ("domain", domain),
            ("persist", self.config.persist.name()),
        ];
        e.sample("packetstore_info", &labels, 1.0);
        let stats = self.stats;
        e.family("packetstore_requests_total", "counter", "HTTP requests by result (this event loop).");
        let ok = stats.requests.saturating_sub(stats.refused_full + stats.refused_malformed);
        for (result, value) in [("ok", ok), ("refused", stats.refused_full), ("error", stats.refused_malformed)] {
            e.sample("packetstore_requests_total", &[("loop", index.as_str()), ("result", result)], value as f64);
        }
        e.family("packetstore_records_total", "counter", "Bodies logged (this event loop).");
        e.sample("packetstore_records_total", &this, stats.records as f64);
        e.family("packetstore_commits_total", "counter", "Commits (this event loop).");
        e.sample("packetstore_commits_total", &this, stats.commits as f64);
        e.family(
            "packetstore_value_bytes_written_total",
            "counter",
            "Body bytes logged where received (in_place) or copied.",
        );
        e.sample(
            "packetstore_value_bytes_written_total",
            &[("loop", index.as_str()), ("path", "in_place")],
            stats.bytes_zero_copy as f64,
        );
        e.sample(
            "packetstore_value_bytes_written_total",
            &[("loop", index.as_str()), ("path", "copied")],
            stats.bytes_copied as f64,
        );
        pool.stats().expose(&mut e, domain);
        let usage = self.log.usage();
        e.family("packetstore_log_bytes", "gauge", "The log ring's size (this event loop's log).");
        e.sample("packetstore_log_bytes", &this, usage.ring_size as f64);
        e.family("packetstore_log_free_bytes", "gauge", "Free bytes in the log ring.");
        e.sample("packetstore_log_free_bytes", &this, usage.free_bytes as f64);
        e.family("packetstore_log_live_records", "gauge", "Records in the log.");
        e.sample("packetstore_log_live_records", &this, self.local.len() as f64);
        e.family("packetstore_pool_free_buffers", "gauge", "Free buffers of this event loop's share of the pool.");
        e.sample("packetstore_pool_free_buffers", &this, f64::from(free_buffers));
        e.single("packetstore_pool_bytes", "gauge", "The pool file's size.", pool.len() as f64);
        let io = self.io_counters;
        e.family("packetstore_connections", "gauge", "Connections open (this event loop).");
        e.sample("packetstore_connections", &this, io.connections as f64);
        e.family("packetstore_connections_accepted_total", "counter", "Connections accepted.");
        e.sample("packetstore_connections_accepted_total", &this, io.accepted as f64);
        e.family("packetstore_connections_refused_total", "counter", "Connections refused (over --connections-max).");
        e.sample("packetstore_connections_refused_total", &this, io.refused as f64);
        e.family("packetstore_ring_enobufs_total", "counter", "Receives that found the buffer ring empty.");
        e.sample("packetstore_ring_enobufs_total", &this, io.enobufs as f64);
        e.text
    }

    #[allow(clippy::too_many_arguments)]
    fn get(
        &mut self,
        pool: &Pool,
        free_buffers: u32,
        target: &[u8],
        head_only: bool,
        keep_alive: bool,
        out: &mut Vec<u8>,
    ) {
        let body_of = |out: &mut Vec<u8>, status, body: &[u8]| {
            if head_only {
                respond_head(out, status, &[], body.len(), keep_alive);
            } else {
                respond(out, status, &[], body, keep_alive);
            }
        };
        if target == b"/debug/panic" {
            if !self.test_switches {
                return body_of(out, 403, b"test switches are off: they need PACKETSTORE_ENABLE_TEST_SWITCHES=1\n");
            }
            self.panic_armed = true;
            return body_of(out, 200, b"armed: the next POST panics after its body is staged\n");
        }
        if let Some(query) = target.strip_prefix(b"/debug/powerfail") {
            let Some(device) = &self.power_switch else {
                return body_of(out, 403, b"the power switch is disabled: it needs a server started with --simulate-power-failures (tests only)\n");
            };
            // ?seed=S&fences=F: the power fails at the F-th fence or sync
            // from now, keeping what a real failure there could keep.
            let field = |name: &str| {
                let query = std::str::from_utf8(query.strip_prefix(b"?")?).ok()?;
                query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse::<u64>().ok())
            };
            let (Some(seed), Some(fences @ 1..)) = (field("seed"), field("fences")) else {
                return body_of(out, 400, b"usage: /debug/powerfail?seed=S&fences=F, unsigned integers, F >= 1\n");
            };
            device.crash_at_fence(device.fences() + fences, seed);
            return body_of(out, 200, b"armed\n");
        }
        if target == b"/metrics" && !head_only {
            let text = self.metrics_text(pool, free_buffers);
            return crate::proto::http::respond_typed(
                out,
                200,
                crate::proto::http::METRICS_CONTENT_TYPE,
                text.as_bytes(),
                keep_alive,
            );
        }
        if target == b"/log" {
            let usage = self.log.usage();
            let fences = pool.stats().fences.load(std::sync::atomic::Ordering::Relaxed);
            let fence_ns_total = pool.stats().fence_ns_total.load(std::sync::atomic::Ordering::Relaxed);
            let mut json = String::new();
            let _ = writeln!(
                json,
                "{{\"first_seq\":{},\"last_seq\":{},\"records\":{},\"bytes\":{},\"log_free_bytes\":{},\"domain\":\"{}\",\"durable\":{},\"persist\":\"{}\",\"free_buffers\":{},\"connections\":{},\"enobufs\":{},\"fences\":{},\"fence_us_mean\":{:.1}}}",
                self.seq(self.first_k),
                if self.next_k > self.first_k { self.seq(self.next_k - 1) } else { 0 },
                self.local.len(),
                usage.live_data_bytes,
                usage.free_bytes,
                pool.domain().domain.name(),
                pool.domain().durable,
                self.config.persist.name(),
                free_buffers,
                self.io_counters.connections,
                self.io_counters.enobufs,
                fences,
                fence_ns_total as f64 / 1e3 / fences.max(1) as f64,
            );
            return body_of(out, 200, json.as_bytes());
        }
        let Some(seq) = target.strip_prefix(b"/log/").and_then(|s| std::str::from_utf8(s).ok()?.parse::<u64>().ok())
        else {
            return body_of(out, 404, b"no such path: use POST /wal, GET /log, /log/<seq> or /metrics\n");
        };
        let view = match split_seq(seq, self.logs) {
            // Our own log: any record, committed or not (replies wait for
            // the commit anyway).
            Some((log, k)) if log == self.index => k
                .checked_sub(self.first_k)
                .and_then(|i| self.local.get(i as usize))
                .and_then(|&lsn| self.log.view(pool, lsn).ok()),
            // Another loop's log: its published (durable, immutable) records.
            Some((log, k)) => self
                .shared
                .lookup(log, k)
                .and_then(|lsn| crate::log::ring::read_record_at(pool, log, lsn))
                .filter(|view| view.tag == seq),
            None => None,
        };
        match view {
            Some(view) => {
                let data = crate::log::ring::read_data(pool, &view);
                body_of(out, 200, &data)
            }
            None => body_of(out, 404, b"no such record\n"),
        }
    }

    /// Gives back the references of a request cut short (its connection
    /// closed mid-body): nothing is logged.
    pub fn abandon(&mut self, buffers: &mut Buffers, conn: &mut ConnState) {
        if let Some(request) = conn.request.take() {
            buffers.release_extents(&request.extents).expect("the request's references");
        }
    }
}

impl App for Wal {
    type Conn = ConnState;
    type Ticket = CommitTicket;

    fn persist(&self) -> Persist {
        self.config.persist
    }

    fn connect(&mut self, _listener: usize, _token: crate::io::app::ConnToken) -> ConnState {
        ConnState::default()
    }

    fn on_input(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut ConnState,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        // Back-pressure: stop once the peer is `room` bytes behind.
        let out_limit = usize::try_from(out.room()).unwrap_or(usize::MAX).saturating_add(out.bytes().len());
        self.serve(pool, buffers, conn, stream, out.bytes(), out_limit, requests_max, release)
    }

    fn abandon(&mut self, buffers: &mut Buffers, conn: &mut ConnState) {
        Wal::abandon(self, buffers, conn)
    }

    fn needs_commit(&self) -> bool {
        Wal::needs_commit(self)
    }

    fn writes_pending(&self) -> bool {
        self.appended_since_commit || !self.committing.is_empty()
    }

    fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<()> {
        Wal::commit(self, pool, buffers).map_err(std::io::Error::other)
    }

    fn begin_commit(&mut self, pool: &Pool, _buffers: &mut Buffers) -> std::io::Result<Option<CommitTicket>> {
        Wal::begin_commit(self, pool).map_err(std::io::Error::other)
    }

    fn finish_commit(&mut self, _pool: &Pool, buffers: &mut Buffers, ticket: CommitTicket) -> std::io::Result<()> {
        Wal::finish_commit(self, ticket, buffers);
        Ok(())
    }

    fn fail_commit(&mut self) {
        Wal::fail_commit(self)
    }

    fn set_io_counters(&mut self, counters: IoCounters) {
        Wal::set_io_counters(self, counters)
    }
}

/// The log and per-log number of a sequence number (1-based).
fn split_seq(seq: u64, logs: u32) -> Option<(u32, u64)> {
    let zero_based = seq.checked_sub(1)?;
    Some(((zero_based % u64::from(logs)) as u32, zero_based / u64::from(logs)))
}

/// Copies a fragmented body into packed buffers (or refuses it).
fn repack(pool: &Pool, buffers: &mut Buffers, request: InFlight) -> InFlight {
    let mut data = Vec::new();
    pool.read_extents(&request.extents, &mut data);
    buffers.release_extents(&request.extents).expect("the request's references");
    let mut extents = Vec::new();
    let refused = buffers.copy_in(pool, &data, &mut extents).is_err();
    InFlight { extents, refused, ..request }
}
