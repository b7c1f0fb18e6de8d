//! What the server says about itself: request counters by protocol, kind
//! and result, INFO's sections, and the Prometheus exposition of
//! `GET /metrics`.
//!
//! INFO's instantaneous_ops_per_sec is sampled into `OpsRate`
//! (`kept/report.rs`) by the tick.
//!
//! Invariant: reporting reads the counters (`KvStats`, the store's, the
//! pool's and the event loop's) and never changes them.

use std::fmt::Write as _;

use crate::apps::kv::state::{CommandSlot, KvServer, KINDS, PROTOCOLS, RESULTS};
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

    /// `GET /metrics`: the Prometheus text exposition of what INFO shows
    /// (a sharded server's main port merges every shard's:
    /// `metrics_fold`).
    pub fn metrics_text(&self, pool: &Pool, buffers: &Buffers) -> String {
        let mut e = Exposition::default();
        self.expose_server(&mut e);
        pool.stats().expose(&mut e, &self.config.domain_name);
        self.expose_bytes(&mut e);
        self.expose_pool_and_store(&mut e, pool, buffers);
        self.expose_connections(&mut e);
        self.expose_replica(&mut e);
        self.expose_integrity(&mut e);
        e.text
    }

    /// A replicated group's node: term, role, indexes, lag per follower.
    fn expose_replica(&self, e: &mut Exposition) {
        let Some(replica) = self.replica.as_ref() else { return };
        e.single("packetstore_raft_term", "gauge", "The node's Raft term.", replica.term() as f64);
        e.single(
            "packetstore_raft_leader",
            "gauge",
            "1 on the group's leader.",
            f64::from(u8::from(replica.is_leader())),
        );
        e.single(
            "packetstore_raft_leader_id",
            "gauge",
            "The leader's node id (0: none known).",
            replica.leader_id() as f64,
        );
        e.single(
            "packetstore_raft_commit_index",
            "gauge",
            "The last entry known committed.",
            replica.commit_index() as f64,
        );
        e.single("packetstore_raft_last_index", "gauge", "The last entry in the log.", replica.last_index() as f64);
        e.single(
            "packetstore_raft_applied_index",
            "gauge",
            "The last entry the tree reflects.",
            replica.tree_index() as f64,
        );
        e.single(
            "packetstore_raft_snapshots_sent_total",
            "counter",
            "Snapshot streams this node began as leader (a follower merely behind catches up from the log).",
            replica.snapshots_started as f64,
        );
        e.single(
            "packetstore_raft_snapshots_cancelled_total",
            "counter",
            "Snapshot streams cancelled: their follower took nothing for 10 s, or their pinned tree version held back an eighth of the pool.",
            replica.snapshots_cancelled as f64,
        );
        e.single(
            "packetstore_snapshot_pinned_buffers",
            "gauge",
            "Buffers checkpoints freed that wait for the snapshot streams reading an older tree version.",
            self.store.pinned_buffers() as f64,
        );
        e.single(
            "packetstore_peer_frames_refused_total",
            "counter",
            "Frames on peer links that broke the protocol or failed a check (their links closed).",
            self.peer_frames_refused as f64,
        );
        e.single(
            "packetstore_peer_frames_unstored_total",
            "counter",
            "Frames on peer links whose value found no room in this node's pool (their links closed; sent again).",
            self.peer_frames_unstored as f64,
        );
        e.single(
            "packetstore_snapshot_values_kept_total",
            "counter",
            "Snapshot values this node already held: kept, not stored twice.",
            self.store.stats().snapshot_values_kept as f64,
        );
        e.single(
            "packetstore_peer_links_closed_total",
            "counter",
            "Peer links closed, either way, for any reason.",
            self.peer_links_closed as f64,
        );
        e.family("packetstore_raft_follower_lag_entries", "gauge", "On the leader: entries each follower lacks.");
        for (id, matched) in replica.progress() {
            let id = id.to_string();
            e.sample(
                "packetstore_raft_follower_lag_entries",
                &[("follower", &id)],
                replica.last_index().saturating_sub(matched) as f64,
            );
        }
        e.family(
            "packetstore_raft_follower_active",
            "gauge",
            "On the leader: 1 for each follower heard from within the last election timeout.",
        );
        for (id, _) in replica.progress() {
            let active = f64::from(u8::from(replica.follower_active(id)));
            e.sample("packetstore_raft_follower_active", &[("follower", &id.to_string())], active);
        }
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
            "packetstore_script_pauses_total",
            "counter",
            "Script steps that ended paused past lua-time-limit (others answered BUSY meanwhile).",
            self.stats.script_pauses as f64,
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
        let keys = self.store.keys(pool).unwrap_or(0);
        e.single("packetstore_keys", "gauge", "Keys in the store (every database).", keys as f64);
        e.single(
            "packetstore_garbage_entries",
            "gauge",
            "Deleted collections and flushed databases the reclaimer has yet to empty.",
            self.store.garbage() as f64,
        );
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

    /// The INFO text for the sections asked (Redis 7's `INFO [section
    /// ...]`: none is `default`; `all`, `everything` and `default` are
    /// sets; names in any case), in Redis's order and layout.
    pub fn info_text(&self, pool: &Pool, buffers: &Buffers, asked: &[String]) -> String {
        let wanted = info_sections(asked);
        let mut text = String::new();
        for &section in INFO_SECTIONS {
            if !wanted.contains(section) {
                continue;
            }
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            match section {
                "server" => self.info_server(&mut text),
                "clients" => self.info_clients(&mut text),
                "memory" => self.info_memory(&mut text, pool, buffers),
                "persistence" => self.info_persistence(&mut text, pool),
                "stats" => self.info_stats(&mut text),
                "replication" => {
                    if !self.info_replication(&mut text) {
                        text.push_str(INFO_REPLICATION);
                    }
                }
                "cpu" => info_cpu(&mut text),
                "modules" => text.push_str("# Modules\r\n"),
                "commandstats" => self.info_commandstats(&mut text),
                "errorstats" => self.info_errorstats(&mut text),
                "latencystats" => self.latency.info(&mut text),
                "cluster" => {
                    let enabled = u8::from(self.config.settings.cluster.is_some());
                    text.push_str(&format!("# Cluster\r\ncluster_enabled:{enabled}\r\n"));
                }
                _ => {
                    text.push_str("# Keyspace\r\n");
                    self.info_keyspace(pool, &mut text);
                }
            }
        }
        text
    }

    fn info_server(&self, text: &mut String) {
        let _ = write!(
            text,
            "# Server\r\nredis_version:7.0.0\r\npacketstore_version:{}\r\nredis_mode:standalone\r\nos:Linux\r\narch_bits:64\r\nmultiplexing_api:io_uring\r\nprocess_id:{}\r\nrun_id:{:040x}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nexecutable:\r\nconfig_file:\r\n",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            u128::from(std::process::id()),
            self.config.settings.resp.map_or(0, |addr| addr.port()),
            self.started.elapsed().as_secs(),
            self.started.elapsed().as_secs() / 86_400
        );
    }

    fn info_clients(&self, text: &mut String) {
        let (clients, blocked) = self.client_totals();
        let _ = write!(
            text,
            "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:0\r\ntotal_connections_received:{}\r\nrejected_connections:{}\r\n",
            clients,
            self.config_params.get("maxclients").map_or("10000", String::as_str),
            blocked,
            self.tracking_totals().0,
            self.io.accepted,
            self.io.refused + self.stats.denied
        );
    }

    fn info_memory(&self, text: &mut String, pool: &Pool, buffers: &Buffers) {
        let geometry = pool.geometry();
        let used = u64::from(buffers.count() - buffers.free_count()) * u64::from(geometry.buffer_size);
        let rss = resident_bytes();
        let _ = write!(
            text,
            "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\npool_bytes:{}\r\npool_buffers:{}\r\npool_free_buffers:{}\r\nbuffer_size:{}\r\nused_memory_lua:{}\r\nnumber_of_cached_scripts:{}\r\nmaxmemory:{}\r\nmaxmemory_policy:{}\r\nlazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
            bytes_human(used),
            bytes_human(rss),
            pool.len(),
            buffers.count(),
            buffers.free_count(),
            geometry.buffer_size,
            self.scripting.lua_memory(),
            self.scripting.cached(),
            self.config_params.get("maxmemory").map_or("0", String::as_str),
            self.config_params.get("maxmemory-policy").map_or("noeviction", String::as_str),
            self.store.garbage_pending(),
            self.store.stats().lazyfreed.saturating_sub(self.lazyfreed_at_reset)
        );
    }

    fn info_persistence(&self, text: &mut String, pool: &Pool) {
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
            "fences:{fences}\r\nfence_us_avg:{:.3}\r\nlines_flushed:{}\r\ncommit_batch_writes_avg:{:.2}\r\nvalue_bytes_in_place:{}\r\nvalue_bytes_copied:{}\r\nrecovery_ms:{:.3}\r\n",
            persist.fence_ns.sum() as f64 / fences.max(1) as f64 / 1e3,
            persist.lines_flushed.load(std::sync::atomic::Ordering::Relaxed),
            self.batch_writes.sum() as f64 / self.batch_writes.count().max(1) as f64,
            self.stats.value_bytes_in_place,
            self.stats.value_bytes_copied,
            self.recovery_ns as f64 / 1e6
        );
        self.info_integrity(text);
    }

    /// INFO commandstats: Redis's `cmdstat_<name>` lines, by name.
    fn info_commandstats(&self, text: &mut String) {
        text.push_str("# Commandstats\r\n");
        let mut names: Vec<_> = (self.command_stats.iter().enumerate())
            .filter(|(_, s)| s.calls + s.rejected + s.failed > 0)
            .map(|(slot, s)| (self.command_index.entry(slot as CommandSlot).name, s))
            .collect();
        names.sort_by_key(|(name, _)| *name);
        for (name, s) in names {
            let per_call = if s.calls == 0 { 0.0 } else { s.usec as f64 / s.calls as f64 };
            let _ = write!(
                text,
                "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                s.calls, s.usec, s.rejected, s.failed
            );
        }
    }

    /// INFO errorstats: `errorstat_<prefix>:count=<n>`.
    fn info_errorstats(&self, text: &mut String) {
        text.push_str("# Errorstats\r\n");
        for (prefix, count) in &self.error_stats {
            let _ = write!(text, "errorstat_{prefix}:count={count}\r\n");
        }
    }

    /// INFO's Stats section.
    /// INFO's keyspace lines: each database that holds keys, with how
    /// many have an expiry.
    fn info_keyspace(&self, pool: &Pool, text: &mut String) {
        for logical in 0..crate::store::keyspace::DATABASES as u8 {
            let db = self.store.physical_db(logical);
            let keys = self.store.db_size(pool, db).unwrap_or(0);
            if keys > 0 {
                let expires = self.store.expiring_in(db);
                let _ = write!(text, "db{logical}:keys={keys},expires={expires},avg_ttl=0\r\n");
            }
        }
    }

    fn info_stats(&self, text: &mut String) {
        let (channels, patterns, shards) = self.pubsub.counts();
        let _ = write!(
            text,
            "# Stats\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:{}\r\ntotal_http_requests:{}\r\nwrites:{}\r\nexpired_keys:{}\r\nrefused_full:{}\r\nerrors:{}\r\nbytes_sent_zero_copy:{}\r\nbytes_sent_copied:{}\r\nring_enobufs:{}\r\nclients_paused_for_output:{}\r\nclient_output_buffer_limit_disconnections:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsub_shardchannels:{}\r\npubsub_mailbox_disconnections:{}\r\ncoalesced_streams:{}\r\nreceives_limited:{}\r\nturn_received_bytes_max:{}\r\ncommand_panics:{}\r\ncross_protocol_closed:{}\r\nscript_pauses:{}\r\n",
            self.stats.commands,
            self.ops_rate.per_second(),
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
            self.stats.cross_protocol,
            self.stats.script_pauses
        );
        let errors: u64 = self.error_stats.values().sum();
        let _ = write!(text, "total_error_replies:{errors}\r\nevicted_keys:0\r\n");
        let (_, keys, items, prefixes) = self.tracking_totals();
        let _ = write!(
            text,
            "tracking_total_keys:{keys}\r\ntracking_total_items:{items}\r\ntracking_total_prefixes:{prefixes}\r\n"
        );
    }
}

/// INFO's sections in Redis 7.0's order; `default` is all but
/// commandstats (and modules' own); `all` is every one; `everything` too
/// (there are no modules).
const INFO_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "latencystats",
    "cluster",
    "keyspace",
];

const INFO_DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// A primary with no replica (packetstore does not replicate).
const INFO_REPLICATION: &str = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:0000000000000000000000000000000000000000\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:0\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n";

/// The sections INFO's arguments ask for (Redis 7's `genInfoSectionDict`).
fn info_sections(asked: &[String]) -> std::collections::HashSet<&'static str> {
    let mut wanted = std::collections::HashSet::new();
    if asked.is_empty() {
        wanted.extend(INFO_DEFAULT);
    }
    for name in asked {
        match name.to_ascii_lowercase().as_str() {
            "all" | "everything" => wanted.extend(INFO_SECTIONS),
            "default" => wanted.extend(INFO_DEFAULT),
            other => wanted.extend(INFO_SECTIONS.iter().filter(|s| **s == other)),
        }
    }
    wanted
}

/// Clock ticks per second of /proc/self/stat's times (Linux's USER_HZ,
/// 100 on every architecture it exports to user space).
const USER_HZ: f64 = 100.0;

/// INFO cpu: the process's and its children's CPU seconds, from
/// /proc/self/stat (utime, stime, cutime, cstime).
fn info_cpu(text: &mut String) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces), from field 3.
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let seconds = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0) / USER_HZ;
    // utime is field 14: index 11 after the name; stime, cutime, cstime follow.
    let _ = write!(
        text,
        "# CPU\r\nused_cpu_sys:{:.6}\r\nused_cpu_user:{:.6}\r\nused_cpu_sys_children:{:.6}\r\nused_cpu_user_children:{:.6}\r\n",
        seconds(12),
        seconds(11),
        seconds(14),
        seconds(13)
    );
}

/// Redis's `bytesToHuman`: bytes, then K, M, G, T, P with two decimals.
fn bytes_human(n: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut scale = 1024f64;
    for unit in UNITS {
        if (n as f64) < scale * 1024.0 || unit == "P" {
            return format!("{:.2}{unit}", n as f64 / scale);
        }
        scale *= 1024.0;
    }
    unreachable!("P ends the loop")
}

/// The process's resident memory (`VmRSS` of `/proc/self/status`), the
/// pool's mapped pages included; 0 where it cannot be read.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find_map(|line| line.strip_prefix("VmRSS:"));
    kib.and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).map_or(0, |k| k * 1024)
}

#[cfg(test)]
mod memory_tests {
    use super::*;

    #[test]
    fn sizes_read_as_redis_writes_them() {
        assert_eq!(bytes_human(0), "0B");
        assert_eq!(bytes_human(1023), "1023B");
        assert_eq!(bytes_human(1024), "1.00K");
        assert_eq!(bytes_human(1536 * 1024), "1.50M");
        assert_eq!(bytes_human(3 << 30), "3.00G");
        assert_eq!(bytes_human(1 << 62), "4096.00P");
    }

    #[test]
    fn a_running_process_is_resident() {
        assert!(resident_bytes() > 0);
    }
}
