//! CLUSTER and ASKING: the Redis Cluster view of a sharded server
//! (`serve --shards N --cluster-ports P`), and where each command runs
//! (`placement`).
//!
//! Every shard is a master of its slot range (`apps/kv/route/cluster.rs`),
//! reached on its own cluster port. On a cluster port, as on a Redis
//! Cluster node, a command whose keys hash to another shard's slot is
//! answered `-MOVED slot host:port`, one whose keys hash to several slots
//! `-CROSSSLOT`, and only database 0 exists. On the main Redis port of a
//! sharded server, a command for another shard's keys is relayed there
//! (`shard_link.rs`), unless it is one that is not relayed yet. On a server
//! without cluster ports, CLUSTER says cluster support is disabled, as
//! Redis does.
//!
//! Invariant: a shard runs a command only when every key it names is its
//! own; no key of another shard is read or written here.

use std::borrow::Cow;

use crate::apps::kv::cluster::{key_slot, owner, slot_range, ClusterView, SLOTS};
use crate::apps::kv::cmd::command::{key_positions, keys_and_flags, moves_keys};
use crate::apps::kv::cmd::group::NO_CLUSTER;
use crate::apps::kv::ops::{parse_i64, NOT_INTEGER};
use crate::apps::kv::parked::{runs_script, script_shards};
pub(in crate::apps::kv) use crate::apps::kv::placement::Placement;
use crate::apps::kv::span;
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvConn, KvServer};
use crate::store::db::StoreError;

#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("cluster", -2, &["noscript", "stale"], (0, 0, 0), "cluster", "KEYSLOT, INFO, MYID, SHARDS, SLOTS, NODES, COUNTKEYSINSLOT, GETKEYSINSLOT, HELP: this server's shards as a Redis Cluster.", KvServer::cmd_cluster),
    cmd("asking", 1, &["fast"], (0, 0, 0), "cluster", "Accepted for Redis Cluster clients (slots never migrate here).", KvServer::cmd_asking),
];

/// Keys GETKEYSINSLOT and COUNTKEYSINSLOT look at per call, at most (they
/// scan the shard's keys: slots keep no index of their keys here).
const SLOT_SCAN_KEYS_MAX: usize = 1 << 20;

/// CLUSTER HELP: Redis 7.0's lines for the subcommands a shard answers.
const CLUSTER_HELP: &[&str] = &[
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
];

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// Whether a command for another shard's keys may be relayed there on the
/// shared link: not a blocking one (it would hold up the link: it goes on
/// a private one), not WATCH (its watch would be the link's), not a
/// pub/sub one (the link would become a subscriber).
fn relayable(entry: &CommandEntry) -> bool {
    !entry.has_flag("blocking") && !entry.has_flag("pubsub") && entry.name != "watch"
}

/// Whether a command for another shard's keys may be queued in MULTI (EXEC
/// runs it there, parked, where a blocking one does not block).
fn queueable(entry: &CommandEntry) -> bool {
    !entry.has_flag("pubsub") && entry.name != "watch"
}

/// The slots of a call's keys, in order.
fn key_slots<'a>(entry: &CommandEntry, argc: usize, arg: impl Fn(usize) -> Cow<'a, [u8]>) -> Vec<u16> {
    if moves_keys(entry) {
        let args: Vec<Vec<u8>> = (0..argc).map(|i| arg(i).into_owned()).collect();
        return key_positions(entry, &args).into_iter().map(|i| key_slot(&args[i])).collect();
    }
    if entry.keys.0 == 0 {
        return Vec::new();
    }
    entry.key_positions(argc).map(|i| key_slot(&arg(i))).collect()
}

/// The parts of a keyless command the main port answers from every shard
/// (or, SCAN, from one at a time), if it is one. Some(None): SCAN with a
/// cursor that is no number, refused where it runs, as SCAN refuses it.
fn keyless_plan<'a>(
    name: &str,
    argc: usize,
    arg: impl Fn(usize) -> Cow<'a, [u8]>,
    (shards, slowlog_max_len): (u16, usize),
) -> Option<Option<span::Plan>> {
    match name {
        "slowlog" if argc > 1 && (arg(1).eq_ignore_ascii_case(b"get") || arg(1).eq_ignore_ascii_case(b"len")) => {
            let sub = String::from_utf8_lossy(&arg(1)).to_ascii_lowercase();
            let count = (argc == 3).then(|| crate::apps::kv::ops::parse_i64(&arg(2))).flatten();
            Some(span::plan_slowlog(&sub, argc, count, slowlog_max_len, shards))
        }
        "scan" => {
            let cursor = std::str::from_utf8(&arg(1)).ok().and_then(|c| c.parse::<u64>().ok());
            Some(cursor.map(|cursor| span::plan_scan(cursor, argc, shards)))
        }
        "client" | "config" | "script" | "function" | "slowlog" | "latency" | "pubsub" | "debug" if argc > 1 => {
            let full = format!("{name}|{}", String::from_utf8_lossy(&arg(1)).to_ascii_lowercase());
            span::plan_every_shard(&full, argc, shards).map(Some)
        }
        name => span::plan_every_shard(name, argc, shards).map(Some),
    }
}

impl KvServer {
    /// The main port's own placements: WATCH (each key watched on its own
    /// shard, `watch_across`) and shard channels, which are the one
    /// server's there (a subscription kept where its client is, SPUBLISH
    /// reaching every shard's subscribers as PUBLISH does). None: the
    /// command is placed by its keys.
    fn main_port_own(&self, ctx: &Ctx<'_>, entry: &CommandEntry, shards: u16) -> Option<Placement> {
        if entry.name == "watch" && self.across.is_some() {
            return Some(Placement::Here);
        }
        ctx.conn.multi.is_none().then(|| shard_channel_placement(entry.name, ctx.argc(), shards)).flatten()
    }
}

/// Shard channels on the main port (`main_port_own`). None: not one of
/// their commands.
fn shard_channel_placement(name: &str, argc: usize, shards: u16) -> Option<Placement> {
    match name {
        "ssubscribe" | "sunsubscribe" => Some(Placement::Here),
        "spublish" if argc == 3 => {
            let parts =
                (0..shards).map(|shard| span::Part { shard, args: (0..3).map(span::Arg::Index).collect() }).collect();
            Some(Placement::Span(span::Plan { parts, merge: span::Merge::Sum }))
        }
        _ => None,
    }
}

/// SCRIPT KILL, FUNCTION KILL or FUNCTION STATS: about the busy script.
fn kills_or_asks(entry: &CommandEntry, ctx: &Ctx<'_>) -> bool {
    matches!(entry.name, "script" | "function")
        && ctx.argc() > 1
        && (ctx.arg(1).eq_ignore_ascii_case(b"kill") || ctx.arg(1).eq_ignore_ascii_case(b"stats"))
}

/// A keyless command the main port answers from every shard (or, SCAN,
/// from each in turn): its parts; inside MULTI, queued (EXEC runs its
/// parts with every shard parked). None for any other command.
fn keyless_span(ctx: &Ctx<'_>, entry: &CommandEntry, limits: (u16, usize)) -> Option<Placement> {
    let plan = keyless_plan(entry.name, ctx.argc(), |i| ctx.arg(i), limits)?;
    if ctx.conn.multi.is_some() {
        return Some(Placement::Here);
    }
    Some(plan.map_or(Placement::Here, Placement::Span))
}

impl KvServer {
    /// Where this command runs: here, on the shard that owns its keys
    /// (relayed, on the main port), or nowhere (the refusal: MOVED and
    /// CROSSSLOT on a cluster port, a database other than 0 there, and on
    /// the main port what is not relayed yet).
    pub(in crate::apps::kv) fn placement(&self, ctx: &Ctx<'_>, entry: &CommandEntry) -> Placement {
        let Some(view) = self.config.settings.cluster.as_ref() else { return Placement::Here };
        if self.scripting.running {
            // A script's calls run here, or on shards parked for it
            // (`parked.rs`); none once it is to run again across shards
            // (what it did after that would be done twice).
            if self.scripting.restart_across {
                return Placement::Refused(crate::apps::kv::parked::RESTARTING.into());
            }
            let slots = key_slots(entry, ctx.argc(), |i| ctx.arg(i));
            if slots.iter().all(|&slot| view.owns(slot)) {
                return Placement::Here;
            }
            let owners = slots.iter().map(|&slot| owner(slot, view.shards)).collect();
            return self.script_placement(ctx, entry, owners);
        }
        let cluster_port = ctx.conn.listener == view.listener;
        if matches!(entry.name, "sort" | "sort_ro") && !cluster_port {
            if let Some(placement) = self.sort_placement(ctx, entry) {
                return placement;
            }
        }
        if !cluster_port && !view.relays(ctx.conn.listener) {
            return Placement::Here;
        }
        if cluster_port && entry.name == "select" && ctx.arg(1).as_ref() != b"0" {
            return Placement::Refused("ERR SELECT is not allowed in cluster mode".into());
        }
        if !cluster_port && crate::apps::kv::cmd::scripting::allowed_while_busy(entry, ctx) && kills_or_asks(entry, ctx)
        {
            // SCRIPT KILL, FUNCTION KILL and STATS go where the script runs,
            // on a private link: the shared one may carry the script itself
            // (relayed there), whose later commands wait for its end.
            if let Some((shard, _)) = self.scripting.paused.is_none().then(|| self.busy_elsewhere(ctx.conn)).flatten() {
                return Placement::Private(shard);
            }
        }
        if let Some(placement) = (!cluster_port).then(|| self.main_port_own(ctx, entry, view.shards)).flatten() {
            return placement;
        }
        let slots = key_slots(entry, ctx.argc(), |i| ctx.arg(i));
        let Some(&slot) = slots.first() else {
            return match cluster_port {
                true => Placement::Here,
                false => keyless_span(ctx, entry, (view.shards, self.slowlog.max_len())).unwrap_or(Placement::Here),
            };
        };
        let shard = owner(slot, view.shards);
        if cluster_port {
            if slots.iter().any(|&s| s != slot) {
                return Placement::Refused(CROSSSLOT.into());
            }
            return match shard == view.shard {
                true => Placement::Here,
                false => Placement::Refused(format!("MOVED {slot} {}", view.endpoint(shard))),
            };
        }
        if slots.iter().any(|&s| owner(s, view.shards) != shard) {
            if runs_script(entry) && self.across.is_some() && ctx.conn.multi.is_none() && !self.store.in_group() {
                let shards = script_shards(&slots, view.shards).expect("keys of several shards");
                return Placement::Parked(shards);
            }
            // In a replicated group a read of several shards' keys runs in
            // parts (each key linearizable, not one snapshot); a write
            // across shards is refused (`across::ACROSS_REPLICATED`).
            let read_in_parts = self.replica.is_some() && entry.has_flag("readonly");
            let pops = crate::apps::kv::cmd::blocking::pops_across(entry.name);
            if (relayable(entry) || pops) && self.across.is_some() && !read_in_parts {
                let args: Vec<Vec<u8>> = (0..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
                let keys = keys_and_flags(entry, &args);
                if let Some(across) = crate::apps::kv::across_plans::plan(entry.name, &args, &keys, view.shards) {
                    // In MULTI it is queued; EXEC runs it across (`exec_across`).
                    return match ctx.conn.multi {
                        Some(_) => Placement::Here,
                        None => Placement::Across(across, args, keys),
                    };
                }
            }
            // A command split by key has a key in every argument after its
            // name: slot i-1 is argument i's.
            let split = ctx.conn.multi.is_none() && slots.len() + 1 == ctx.argc();
            if let Some(plan) =
                split.then(|| span::plan_by_key(entry.name, ctx.argc(), |i| owner(slots[i - 1], view.shards))).flatten()
            {
                return Placement::Span(plan);
            }
            return Placement::Refused(
                "CROSSSLOT Keys in request are on several shards, which this command cannot span (inside MULTI, a \
                 blocking command, or writes to keys of several shards beyond MSET, MSETNX, DEL, UNLINK, RENAME, \
                 RENAMENX, SMOVE, LMOVE, RPOPLPUSH)"
                    .into(),
            );
        }
        if shard == view.shard {
            return Placement::Here;
        }
        if ctx.conn.multi.is_some() && self.across.is_some() && queueable(entry) {
            // Queued: EXEC runs it on its shard, parked (`exec_across`).
            return Placement::Here;
        }
        if ctx.conn.multi.is_none() && self.across.is_some() && queueable(entry) && entry.has_flag("blocking") {
            return Placement::Private(shard);
        }
        if ctx.conn.multi.is_some() || !relayable(entry) {
            return Placement::Refused(format!(
                "ERR '{}' with another shard's keys: WATCH and shard channels are not relayed between shards yet (use a \
                 cluster client, or keys of this connection's shard)",
                entry.name
            ));
        }
        Placement::Relay(shard)
    }

    /// Where EXEC runs the queued command `args` (a sharded server's main
    /// port; placement refused at queue time what cannot run this way).
    pub(in crate::apps::kv) fn queued_route(&self, args: &[Vec<u8>]) -> crate::apps::kv::across_plans::Route {
        use crate::apps::kv::across_plans::Route;
        let Some(view) = self.config.settings.cluster.as_ref() else { return Route::One(0) };
        let Some(entry) = self.command_index.find(&args[0]) else { return Route::One(view.shard) };
        let slots = key_slots(entry, args.len(), |i| Cow::Borrowed(&args[i][..]));
        if slots.is_empty() {
            let limits = (view.shards, self.slowlog.max_len());
            let plan = keyless_plan(entry.name, args.len(), |i| Cow::Borrowed(&args[i][..]), limits);
            return match plan.flatten() {
                Some(plan) => Route::Span(plan),
                None => Route::One(view.shard),
            };
        }
        let owners: std::collections::BTreeSet<u16> = slots.iter().map(|&s| owner(s, view.shards)).collect();
        if owners.len() < 2 {
            return Route::One(owners.first().copied().unwrap_or(view.shard));
        }
        let keys = keys_and_flags(entry, args);
        match crate::apps::kv::across_plans::plan(entry.name, args, &keys, view.shards) {
            Some(across) => Route::Across(across, keys),
            None => Route::One(view.shard),
        }
    }

    /// The shard a parsed command is certain to be relayed to, if any:
    /// None whenever `run_entry` could answer it here instead (an unknown
    /// command, a wrong arity, no password yet, a refused value, subscribed
    /// mode, a transaction, a paused script, keys of several shards, a
    /// command that is not relayed). A client with replies outstanding runs
    /// only such a command before they are in, so its replies keep their
    /// order.
    pub(in crate::apps::kv) fn relay_target(&self, pool: &crate::pool::file::Pool, conn: &KvConn) -> Option<u16> {
        let view = self.config.settings.cluster.as_ref().filter(|view| view.relays(conn.listener))?;
        let unsettled = conn.multi.is_some() || conn.subscriptions.is_some() || conn.args.refused.is_some();
        if unsettled || self.scripting.paused.is_some() || (self.config.requirepass.is_some() && !conn.authenticated) {
            return None;
        }
        let entry = self.command_index.find(&conn.args.bytes(pool, 0))?;
        if !entry.arity_fits(conn.args.len() as i64) || !relayable(entry) {
            return None;
        }
        let slots = key_slots(entry, conn.args.len(), |i| conn.args.bytes(pool, i));
        let shard = owner(*slots.first()?, view.shards);
        let one_shard = slots.iter().all(|&slot| owner(slot, view.shards) == shard);
        (one_shard && shard != view.shard).then_some(shard)
    }

    fn cmd_asking(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        match self.config.settings.cluster {
            Some(_) => ctx.ok(),
            None => ctx.error(NO_CLUSTER),
        }
        Ok(())
    }

    fn cmd_cluster(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(view) = self.config.settings.cluster.clone() else {
            ctx.error(NO_CLUSTER);
            return Ok(());
        };
        let sub = ctx.arg(1).to_ascii_uppercase();
        match (sub.as_slice(), ctx.argc()) {
            (b"KEYSLOT", 3) => ctx.int(i64::from(key_slot(&ctx.arg(2)))),
            (b"INFO", 2) => cluster_info(ctx, &view),
            (b"MYID", 2) => ctx.bulk(view.node_id(view.shard).as_bytes()),
            (b"MYSHARDID", 2) => ctx.bulk(view.node_id(view.shard).as_bytes()),
            (b"SLOTS", 2) => cluster_slots(ctx, &view),
            (b"SHARDS", 2) => cluster_shards(ctx, &view),
            (b"NODES", 2) => ctx.bulk(cluster_nodes(&view).as_bytes()),
            (b"COUNTKEYSINSLOT", 3) | (b"GETKEYSINSLOT", 4) => self.keys_in_slot(ctx, sub == b"COUNTKEYSINSLOT")?,
            (b"HELP", 2) => crate::apps::kv::cmd::scripting::help(ctx, "CLUSTER", CLUSTER_HELP),
            _ => ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }

    /// COUNTKEYSINSLOT slot, GETKEYSINSLOT slot count: a scan of this
    /// shard's keys (database 0), at most `SLOT_SCAN_KEYS_MAX` of them.
    fn keys_in_slot(&mut self, ctx: &mut Ctx<'_>, count_only: bool) -> Result<(), StoreError> {
        let (slot, limit) = match slot_and_limit(ctx, count_only) {
            Ok(parsed) => parsed,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let db = self.store.physical_db(0);
        let (keys, _) =
            self.store.scan(ctx.pool, db, None, SLOT_SCAN_KEYS_MAX, ctx.now, |key| key_slot(key) == slot)?;
        if count_only {
            ctx.int(keys.len() as i64);
        } else {
            let keys = &keys[..keys.len().min(limit)];
            ctx.array(keys.len());
            keys.iter().for_each(|key| ctx.bulk(key));
        }
        Ok(())
    }
}

/// COUNTKEYSINSLOT's and GETKEYSINSLOT's slot, and GETKEYSINSLOT's count.
fn slot_and_limit(ctx: &Ctx<'_>, count_only: bool) -> Result<(u16, usize), &'static str> {
    let slot = match parse_i64(&ctx.arg(2)) {
        Some(slot) if (0..i64::from(SLOTS)).contains(&slot) => slot as u16,
        Some(_) => return Err("ERR Invalid slot"),
        None => return Err(NOT_INTEGER),
    };
    if count_only {
        return Ok((slot, usize::MAX));
    }
    match parse_i64(&ctx.arg(3)).map(usize::try_from) {
        Some(Ok(limit)) => Ok((slot, limit)),
        _ => Err("ERR Invalid number of keys"),
    }
}

fn cluster_info(ctx: &mut Ctx<'_>, view: &ClusterView) {
    let shards = view.shards;
    let text = format!(
        "cluster_enabled:1\r\ncluster_state:ok\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{SLOTS}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{shards}\r\ncluster_size:{shards}\r\n\
         cluster_current_epoch:{shards}\r\ncluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\n\
         cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
        view.shard + 1
    );
    let enc = ctx.enc();
    enc.verbatim(ctx.out.bytes(), &text);
}

/// CLUSTER SLOTS: per shard, its range and its one node (Redis 7's four
/// fields: ip, port, id, networking metadata).
fn cluster_slots(ctx: &mut Ctx<'_>, view: &ClusterView) {
    ctx.array(usize::from(view.shards));
    for shard in 0..view.shards {
        let range = slot_range(shard, view.shards);
        ctx.array(3);
        ctx.int(i64::from(range.start));
        ctx.int(i64::from(range.end - 1));
        ctx.array(4);
        ctx.bulk(view.host.to_string().as_bytes());
        ctx.int(i64::from(view.ports[usize::from(shard)]));
        ctx.bulk(view.node_id(shard).as_bytes());
        ctx.map(0);
    }
}

/// CLUSTER SHARDS: per shard, its slots and its one node, as maps.
fn cluster_shards(ctx: &mut Ctx<'_>, view: &ClusterView) {
    ctx.array(usize::from(view.shards));
    for shard in 0..view.shards {
        let range = slot_range(shard, view.shards);
        ctx.map(2);
        ctx.bulk(b"slots");
        ctx.array(2);
        ctx.int(i64::from(range.start));
        ctx.int(i64::from(range.end - 1));
        ctx.bulk(b"nodes");
        ctx.array(1);
        ctx.map(7);
        ctx.bulk(b"id");
        ctx.bulk(view.node_id(shard).as_bytes());
        ctx.bulk(b"port");
        ctx.int(i64::from(view.ports[usize::from(shard)]));
        ctx.bulk(b"ip");
        ctx.bulk(view.host.to_string().as_bytes());
        ctx.bulk(b"endpoint");
        ctx.bulk(view.host.to_string().as_bytes());
        ctx.bulk(b"role");
        ctx.bulk(b"master");
        ctx.bulk(b"replication-offset");
        ctx.int(0);
        ctx.bulk(b"health");
        ctx.bulk(b"online");
    }
}

/// CLUSTER NODES: Redis's text, a line per shard (no cluster bus: its
/// port is 0).
fn cluster_nodes(view: &ClusterView) -> String {
    let mut text = String::new();
    for shard in 0..view.shards {
        let range = slot_range(shard, view.shards);
        let flags = if shard == view.shard { "myself,master" } else { "master" };
        text.push_str(&format!(
            "{} {}@0 {flags} - 0 0 {} connected {}-{}\n",
            view.node_id(shard),
            view.endpoint(shard),
            shard + 1,
            range.start,
            range.end - 1
        ));
    }
    text
}
