//! The key-value server's state and its [`App`] face: configuration,
//! counters, per-connection protocol state, and the calls the event loop
//! makes (connect, input, commit, tick, abandon).
//!
//! Invariants: every buffer reference a request holds is given back when it
//! ends (`Args::clear`, `abandon`); a reply is released to the loop only by
//! the commit that makes its write durable (the loop holds it until then).

use std::collections::VecDeque;
use std::time::Duration;

use crate::apps::kv::rest::HttpBody;
use crate::io::app::{App, IoCounters, Persist, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Args, Encoder, Parser, ReceiveConfig};
use crate::store::db::{now_ms, Store, StoreError, StoreTicket};

/// Listener indexes of the server's two protocols.
pub const LISTENER_HTTP: usize = 0;

pub const LISTENER_RESP: usize = 1;

/// Cursors SCAN remembers (the oldest is forgotten first: a client using
/// it starts over, which SCAN's contract allows).
pub(super) const SCAN_CURSORS_MAX: usize = 4096;

/// Expired keys removed per tick.
pub(super) const EXPIRE_PER_TICK_MAX: usize = 256;

#[derive(Clone, Debug)]
pub struct KvConfig {
    pub persist: Persist,
    pub value_size_max: u64,
    /// Values at least this long are sent from the pool (zero copy).
    pub zero_copy_min: u64,
    /// The password of both ports: AUTH on the Redis port, an
    /// `Authorization` header on the HTTP port.
    pub requirepass: Option<Vec<u8>>,
    /// With a password, /metrics still answers without it.
    pub metrics_public: bool,
    /// Free buffers kept back for receiving (the ring's refills).
    pub buffers_reserve: u32,
    /// What the server reports (INFO, CONFIG GET).
    pub domain_name: String,
    /// Tests only: the crash simulator the pool runs on, which
    /// `DEBUG POWERFAIL` arms. None (every real deployment): the command
    /// is refused.
    pub power_switch: Option<std::sync::Arc<crate::pool::sim::SimDevice>>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct KvStats {
    /// Requests by protocol (`PROTOCOLS`), kind (`KINDS`) and result
    /// (`RESULTS`), for /metrics.
    pub requests: [[[u64; 3]; 3]; 2],
    pub commands: u64,
    pub http_requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub refused_full: u64,
    pub errors: u64,
    /// Commands whose handler panicked (answered with an error).
    pub panics: u64,
    /// Redis connections closed for sending an HTTP request.
    pub cross_protocol: u64,
    pub bytes_sent_zero_copy: u64,
    pub bytes_sent_copied: u64,
    /// Value bytes written: persisted where they were received (zero copy)
    /// or copied (copy mode, and values small enough to be inlined).
    pub value_bytes_in_place: u64,
    pub value_bytes_copied: u64,
}

/// One connection's protocol state.
pub struct KvConn {
    pub(super) listener: usize,
    pub(super) id: u64,
    pub(super) name: Option<Vec<u8>>,
    pub(super) authenticated: bool,
    /// MULTI was refused: every command is refused until EXEC or DISCARD,
    /// so none of a would-be transaction runs.
    pub(super) in_refused_multi: bool,
    pub(super) encoder: Encoder,
    pub(super) parser: Parser,
    pub(super) args: Args,
    pub(super) http: Option<HttpBody>,
}

pub struct KvServer {
    pub(super) config: KvConfig,
    pub(super) store: Store,
    pub(super) next_client_id: u64,
    pub(super) scan_cursors: VecDeque<(u64, Vec<u8>)>,
    pub(super) next_cursor: u64,
    pub(super) io: IoCounters,
    pub(super) stats: KvStats,
    pub(super) started: std::time::Instant,
    pub(super) recovery: String,
    /// Commands served at the last tick (a tick with none is idle).
    pub(super) commands_at_tick: u64,
    /// Write commands per commit (group commit batch sizes), and the
    /// writes counted at the last commit.
    pub(super) batch_writes: crate::util::metrics::Histogram,
    pub(super) writes_at_commit: u64,
    pub(super) recovery_ns: u64,
    /// Value bytes of the command being built: left where they were
    /// received, or copied (counted once it applies).
    pub(super) staged_in_place: u64,
    pub(super) staged_copied: u64,
    /// When a cross-protocol attempt was last logged.
    pub(super) cross_protocol_logged: Option<std::time::Instant>,
}

impl KvServer {
    pub fn new(config: KvConfig, store: Store, recovery: String) -> KvServer {
        KvServer {
            config,
            store,
            next_client_id: 1,
            scan_cursors: VecDeque::new(),
            next_cursor: 1,
            io: IoCounters::default(),
            stats: KvStats::default(),
            started: std::time::Instant::now(),
            recovery,
            commands_at_tick: 0,
            batch_writes: crate::util::metrics::Histogram::default(),
            writes_at_commit: 0,
            recovery_ns: 0,
            staged_in_place: 0,
            staged_copied: 0,
            cross_protocol_logged: None,
        }
    }

    /// How long recovery took (for /metrics).
    pub fn set_recovery_duration(&mut self, duration: Duration) {
        self.recovery_ns = duration.as_nanos() as u64;
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A clean shutdown, once the event loop has stopped with nothing in
    /// flight: checkpoints until every log record is folded into the tree,
    /// so the next start replays nothing. Returns the records folded.
    pub fn checkpoint_all(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<usize, StoreError> {
        let records = self.store.live_records().count();
        self.store.checkpoint_all(pool, buffers)?;
        Ok(records)
    }

    pub fn stats(&self) -> KvStats {
        self.stats
    }

    pub(super) fn receive_config(&self) -> ReceiveConfig {
        ReceiveConfig {
            persist: self.config.persist,
            value_size_max: self.config.value_size_max,
            buffers_reserve: self.config.buffers_reserve,
        }
    }

    // ---- the Redis protocol ----
}

impl App for KvServer {
    type Conn = KvConn;
    type Ticket = StoreTicket;

    fn persist(&self) -> Persist {
        self.config.persist
    }

    fn connect(&mut self, listener: usize) -> KvConn {
        let id = self.next_client_id;
        self.next_client_id += 1;
        KvConn {
            listener,
            id,
            name: None,
            authenticated: self.config.requirepass.is_none(),
            in_refused_multi: false,
            encoder: Encoder { resp3: false },
            parser: Parser::default(),
            args: Args::default(),
            http: None,
        }
    }

    fn on_input(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        if conn.listener == LISTENER_HTTP {
            self.serve_http(pool, buffers, conn, stream, out, requests_max, release)
        } else {
            self.serve_resp(pool, buffers, conn, stream, out, requests_max, release)
        }
    }

    fn abandon(&mut self, buffers: &mut Buffers, conn: &mut KvConn) {
        conn.parser.abandon(buffers, &mut conn.args);
        if let Some(body) = conn.http.take() {
            buffers.release_extents(&body.extents).expect("the request's references");
        }
    }

    fn needs_commit(&self) -> bool {
        self.store.needs_commit()
    }

    fn writes_pending(&self) -> bool {
        self.store.writes_pending()
    }

    fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<()> {
        self.observe_batch();
        self.store.commit(pool, buffers).map_err(std::io::Error::other)
    }

    fn begin_commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> std::io::Result<Option<StoreTicket>> {
        self.observe_batch();
        self.store.begin_commit(pool, buffers).map_err(std::io::Error::other)
    }

    fn finish_commit(&mut self, pool: &Pool, buffers: &mut Buffers, ticket: StoreTicket) -> std::io::Result<()> {
        self.store.finish_commit(pool, buffers, ticket).map_err(std::io::Error::other)
    }

    fn fail_commit(&mut self) {
        self.store.fail_commit()
    }

    fn set_io_counters(&mut self, counters: IoCounters) {
        self.io = counters;
    }

    /// Reclamation walk steps, active expiry, and checkpoint scheduling.
    fn tick(&mut self, pool: &Pool, buffers: &mut Buffers) {
        if self.store.is_reclaiming() {
            if let Err(error) = self.store.reclaim_step(pool, buffers, 64) {
                tracing::error!("the tree's reclamation walk stopped: {error}");
            }
        }
        self.store.note_buffers(buffers);
        let idle = self.stats.commands == self.commands_at_tick;
        self.commands_at_tick = self.stats.commands;
        let before = self.store.compaction();
        if let Err(error) = self.store.compact_step(pool, buffers, idle) {
            tracing::error!("a compaction step failed: {error}");
        }
        let after = self.store.compaction();
        if after.running && !before.running {
            tracing::info!(waste_pct = format!("{:.1}", self.store.waste_ratio() * 100.0), "compaction started");
        } else if before.running && !after.running {
            tracing::info!(
                values = after.relocated_values - before.relocated_values,
                bytes = after.relocated_bytes - before.relocated_bytes,
                total_passes = after.relocation_passes,
                "compaction pass done"
            );
        }
        let now = now_ms();
        let expired = self.store.expired_keys(now, EXPIRE_PER_TICK_MAX);
        if expired.is_empty() || !self.store.batch_has_room() {
            return;
        }
        let mut removed = 0;
        for key in expired {
            let mut ops = Vec::new();
            if self.delete_ops(pool, &key, &mut ops).is_err() {
                continue;
            }
            if self.store.apply(pool, buffers, &ops).is_ok() {
                removed += 1;
            }
        }
        self.store.note_expired(removed);
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(100))
    }
}
