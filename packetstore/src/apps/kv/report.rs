//! What the server says about itself: request counters by protocol, kind
//! and result, INFO's sections, and the Prometheus exposition of
//! `GET /metrics`.
//!
//! Invariant: reporting reads the counters (`KvStats`, the store's, the
//! pool's and the event loop's) and never changes them.

use std::fmt::Write as _;

use crate::apps::kv::state::{KvServer, KINDS, PROTOCOLS, RESULTS};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::util::metrics::Exposition;

impl KvServer {
    /// Counts a request: its kind, and its result from what it did to the
    /// error and refusal counters since `before` (errors, refused_full).
    pub(super) fn count_request(&mut self, protocol: usize, kind: usize, before: (u64, u64), failed: bool) {
        let result = if self.stats.refused_full > before.1 {
            2
        } else if failed || self.stats.errors > before.0 {
            1
        } else {
            0
        };
        self.stats.requests[protocol][kind][result] += 1;
    }

    /// `GET /metrics`: the Prometheus text exposition of what INFO shows.
    pub fn metrics_text(&self, pool: &Pool, buffers: &Buffers) -> String {
        let mut e = Exposition::default();
        self.expose_server(&mut e);
        pool.stats().expose(&mut e, &self.config.domain_name);
        self.expose_bytes(&mut e);
        self.expose_pool_and_store(&mut e, pool, buffers);
        self.expose_connections(&mut e);
        e.text
    }

    /// The server: version, uptime, recovery, requests, commits, checkpoints.
    fn expose_server(&self, e: &mut Exposition) {
        e.family("packetstore_info", "gauge", "The server's version, persistence domain and persist mode.");
        e.sample(
            "packetstore_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("domain", &self.config.domain_name),
                ("persist", self.config.persist.name()),
            ],
            1.0,
        );
        e.single("packetstore_uptime_seconds", "gauge", "Seconds since start.", self.started.elapsed().as_secs_f64());
        e.single(
            "packetstore_recovery_seconds",
            "gauge",
            "How long recovery took at start.",
            self.recovery_ns as f64 / 1e9,
        );
        e.family("packetstore_requests_total", "counter", "Requests by protocol, kind and result.");
        for (p, protocol) in PROTOCOLS.iter().enumerate() {
            for (k, kind) in KINDS.iter().enumerate() {
                for (r, result) in RESULTS.iter().enumerate() {
                    let labels = [("protocol", *protocol), ("kind", *kind), ("result", *result)];
                    e.sample("packetstore_requests_total", &labels, self.stats.requests[p][k][r] as f64);
                }
            }
        }
        e.histogram(
            "packetstore_commit_batch_writes",
            "Write commands per commit (group commit).",
            &[],
            &self.batch_writes,
            1.0,
            0,
            14,
            1,
        );
        let store = self.store.stats();
        e.single("packetstore_commits_total", "counter", "Commits (log batches made durable).", store.commits as f64);
        e.single(
            "packetstore_command_panics_total",
            "counter",
            "Commands that hit a bug; answered with an error, the server went on.",
            self.stats.panics as f64,
        );
        e.single(
            "packetstore_cross_protocol_closed_total",
            "counter",
            "Redis connections closed for sending an HTTP request (POST or Host:).",
            self.stats.cross_protocol as f64,
        );
        e.single("packetstore_checkpoints_total", "counter", "Checkpoints of the tree.", store.checkpoints as f64);
    }

    /// Value bytes written (in place or copied) and sent (zero copy or copied).
    fn expose_bytes(&self, e: &mut Exposition) {
        e.family(
            "packetstore_value_bytes_written_total",
            "counter",
            "Value bytes written, persisted where received (in_place) or copied.",
        );
        e.sample(
            "packetstore_value_bytes_written_total",
            &[("path", "in_place")],
            self.stats.value_bytes_in_place as f64,
        );
        e.sample("packetstore_value_bytes_written_total", &[("path", "copied")], self.stats.value_bytes_copied as f64);
        e.family(
            "packetstore_bytes_sent_total",
            "counter",
            "Reply value bytes sent from the pool (zero_copy) or copied.",
        );
        e.sample("packetstore_bytes_sent_total", &[("path", "zero_copy")], self.stats.bytes_sent_zero_copy as f64);
        e.sample("packetstore_bytes_sent_total", &[("path", "copied")], self.stats.bytes_sent_copied as f64);
    }

    /// The pool's buffers, the log, the keys, the tree and compaction.
    fn expose_pool_and_store(&self, e: &mut Exposition, pool: &Pool, buffers: &Buffers) {
        let geometry = pool.geometry();
        e.single("packetstore_pool_bytes", "gauge", "The pool file's size.", pool.len() as f64);
        e.single("packetstore_pool_buffers", "gauge", "Buffers in the pool.", buffers.count() as f64);
        e.single("packetstore_pool_free_buffers", "gauge", "Free buffers.", buffers.free_count() as f64);
        e.single("packetstore_buffer_bytes", "gauge", "The size of one buffer.", f64::from(geometry.buffer_size));
        let usage = self.store.log().usage();
        e.single("packetstore_log_bytes", "gauge", "The log ring's size.", usage.ring_size as f64);
        e.single("packetstore_log_free_bytes", "gauge", "Free bytes in the log ring.", usage.free_bytes as f64);
        e.single(
            "packetstore_log_live_records",
            "gauge",
            "Log records not yet checkpointed.",
            usage.live_records as f64,
        );
        e.single("packetstore_keys", "gauge", "Keys in the store.", self.store.keys() as f64);
        e.single("packetstore_tree_height", "gauge", "The B+ tree's height.", self.store.tree().height() as f64);
        let compaction = self.store.compaction();
        e.single(
            "packetstore_compaction_running",
            "gauge",
            "1 while a compaction pass runs.",
            f64::from(u8::from(compaction.running)),
        );
        e.single(
            "packetstore_compaction_waste_ratio",
            "gauge",
            "Dead share of the bytes in value buffers.",
            self.store.waste_ratio(),
        );
        e.single(
            "packetstore_compaction_passes_total",
            "counter",
            "Compaction passes.",
            compaction.relocation_passes as f64,
        );
        e.single(
            "packetstore_compaction_relocated_values_total",
            "counter",
            "Values moved by compaction.",
            compaction.relocated_values as f64,
        );
        e.single(
            "packetstore_compaction_relocated_bytes_total",
            "counter",
            "Bytes moved by compaction.",
            compaction.relocated_bytes as f64,
        );
    }

    /// The event loop's connections and clients held back.
    fn expose_connections(&self, e: &mut Exposition) {
        e.single("packetstore_connections", "gauge", "Connections open.", self.io.connections as f64);
        e.single("packetstore_connections_accepted_total", "counter", "Connections accepted.", self.io.accepted as f64);
        e.single(
            "packetstore_connections_refused_total",
            "counter",
            "Connections refused (over --connections-max).",
            self.io.refused as f64,
        );
        e.single(
            "packetstore_ring_enobufs_total",
            "counter",
            "Receives that found the buffer ring empty.",
            self.io.enobufs as f64,
        );
        e.single(
            "packetstore_clients_paused_total",
            "counter",
            "Clients paused for not reading their replies.",
            self.io.paused as f64,
        );
        e.single(
            "packetstore_clients_stalled_total",
            "counter",
            "Clients disconnected for not reading.",
            self.io.stalled as f64,
        );
    }

    /// Group commit: the write commands the commit now beginning covers.
    pub(super) fn observe_batch(&mut self) {
        let batch = self.stats.writes - self.writes_at_commit;
        if batch > 0 {
            self.batch_writes.observe(batch);
            self.writes_at_commit = self.stats.writes;
        }
    }

    /// The INFO text, in Redis's layout.
    pub fn info_text(&self, pool: &Pool, buffers: &Buffers, section: Option<&str>) -> String {
        let mut text = String::new();
        let wants = |name: &str| section.is_none_or(|s| s == "all" || s == "everything" || s == "default" || s == name);
        let geometry = pool.geometry();
        if wants("server") {
            let _ = write!(
                text,
                "# Server\r\nredis_version:7.0.0\r\npacketstore_version:{}\r\nredis_mode:standalone\r\nos:Linux\r\narch_bits:64\r\nprocess_id:{}\r\nuptime_in_seconds:{}\r\n\r\n",
                env!("CARGO_PKG_VERSION"),
                std::process::id(),
                self.started.elapsed().as_secs()
            );
        }
        if wants("clients") {
            let _ = write!(
                text,
                "# Clients\r\nconnected_clients:{}\r\ntotal_connections_received:{}\r\nrejected_connections:{}\r\n\r\n",
                self.io.connections, self.io.accepted, self.io.refused
            );
        }
        if wants("memory") {
            let used = u64::from(buffers.count() - buffers.free_count()) * u64::from(geometry.buffer_size);
            let _ = write!(
                text,
                "# Memory\r\nused_memory:{used}\r\npool_bytes:{}\r\npool_buffers:{}\r\npool_free_buffers:{}\r\nbuffer_size:{}\r\nused_memory_lua:{}\r\nnumber_of_cached_scripts:{}\r\n\r\n",
                pool.len(),
                buffers.count(),
                buffers.free_count(),
                geometry.buffer_size,
                self.scripting.lua_memory(),
                self.scripting.cached()
            );
        }
        if wants("persistence") {
            let usage = self.store.log().usage();
            let stats = self.store.stats();
            let compaction = self.store.compaction();
            let _ = write!(
                text,
                "# Persistence\r\nloading:0\r\naof_enabled:1\r\nrdb_changes_since_last_save:{}\r\npersistence_domain:{}\r\npersist_mode:{}\r\nlog_live_records:{}\r\nlog_free_bytes:{}\r\nlog_size:{}\r\ncommits:{}\r\ncheckpoints:{}\r\ncheckpoint_ms_max:{:.3}\r\ntree_generation:{}\r\ntree_height:{}\r\ntree_reclaiming:{}\r\nlast_recovery:{}\r\ncompaction_counted:{}\r\ncompaction_running:{}\r\ncompaction_waste_pct:{:.1}\r\ncompaction_passes:{}\r\ncompaction_relocated_values:{}\r\ncompaction_relocated_bytes:{}\r\n",
                // Redis counts changes since its last RDB save; there is no
                // RDB here (every write is durable), so: every write since start.
                self.stats.writes,
                self.config.domain_name,
                self.config.persist.name(),
                usage.live_records,
                usage.free_bytes,
                usage.ring_size,
                stats.commits,
                stats.checkpoints,
                stats.checkpoint_ns_max as f64 / 1e6,
                self.store.tree().generation(),
                self.store.tree().height(),
                u8::from(self.store.is_reclaiming()),
                self.recovery,
                u8::from(compaction.counted),
                u8::from(compaction.running),
                self.store.waste_ratio() * 100.0,
                compaction.relocation_passes,
                compaction.relocated_values,
                compaction.relocated_bytes
            );
            let persist = pool.stats();
            let fences = persist.fences.load(std::sync::atomic::Ordering::Relaxed);
            let _ = write!(
                text,
                "fences:{fences}\r\nfence_us_avg:{:.3}\r\nlines_flushed:{}\r\ncommit_batch_writes_avg:{:.2}\r\nvalue_bytes_in_place:{}\r\nvalue_bytes_copied:{}\r\nrecovery_ms:{:.3}\r\n\r\n",
                persist.fence_ns.sum() as f64 / fences.max(1) as f64 / 1e3,
                persist.lines_flushed.load(std::sync::atomic::Ordering::Relaxed),
                self.batch_writes.sum() as f64 / self.batch_writes.count().max(1) as f64,
                self.stats.value_bytes_in_place,
                self.stats.value_bytes_copied,
                self.recovery_ns as f64 / 1e6
            );
        }
        if wants("stats") {
            self.info_stats(&mut text);
        }
        if wants("keyspace") {
            text.push_str("# Keyspace\r\n");
            if self.store.keys() > 0 {
                let _ = write!(text, "db0:keys={},expires={},avg_ttl=0\r\n", self.store.keys(), self.store.expiring());
            }
            text.push_str("\r\n");
        }
        text
    }

    /// INFO's Stats section.
    fn info_stats(&self, text: &mut String) {
        let (channels, patterns, shards) = self.pubsub.counts();
        let _ = write!(
            text,
            "# Stats\r\ntotal_commands_processed:{}\r\ntotal_http_requests:{}\r\nwrites:{}\r\nexpired_keys:{}\r\nrefused_full:{}\r\nerrors:{}\r\nbytes_sent_zero_copy:{}\r\nbytes_sent_copied:{}\r\nring_enobufs:{}\r\nclients_paused_for_output:{}\r\nclient_output_buffer_limit_disconnections:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsub_shardchannels:{}\r\npubsub_mailbox_disconnections:{}\r\ncoalesced_streams:{}\r\nreceives_limited:{}\r\nturn_received_bytes_max:{}\r\ncommand_panics:{}\r\ncross_protocol_closed:{}\r\n\r\n",
            self.stats.commands,
            self.stats.http_requests,
            self.stats.writes,
            self.store.stats().expired,
            self.stats.refused_full,
            self.stats.errors,
            self.stats.bytes_sent_zero_copy,
            self.stats.bytes_sent_copied,
            self.io.enobufs,
            self.io.paused,
            self.io.stalled,
            channels,
            patterns,
            shards,
            self.pubsub.overflowed,
            self.io.coalesced,
            self.io.receive_limited,
            self.io.turn_received_max,
            self.stats.panics,
            self.stats.cross_protocol
        );
    }
}
