//! What client-side caching keeps (`cmd/tracking.rs` runs CLIENT
//! TRACKING, CACHING, GETREDIR and TRACKINGINFO, and sends the
//! invalidations): each tracking client's mode (`Tracked`), the table of
//! the keys tracking clients read, and the BCAST prefixes with the keys
//! changed under them this turn (`Tracking`).
//!
//! Invariants: a key's table entry names each client once; a prefix is in
//! the prefix table exactly while a BCAST client has it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::proto::resp::Encoder;

/// One tracking client's mode.
#[derive(Default)]
pub(in crate::apps::kv) struct Tracked {
    /// The client its messages go to (0: its own connection).
    pub(in crate::apps::kv) redirect: u64,
    pub(in crate::apps::kv) bcast: bool,
    pub(in crate::apps::kv) optin: bool,
    pub(in crate::apps::kv) optout: bool,
    pub(in crate::apps::kv) noloop: bool,
    /// CLIENT CACHING yes (OPTIN) or no (OPTOUT), for its next command.
    pub(in crate::apps::kv) caching: bool,
    /// Its redirect's client is gone.
    pub(in crate::apps::kv) broken_redirect: bool,
    pub(in crate::apps::kv) prefixes: BTreeSet<Vec<u8>>,
}

/// A BCAST prefix: its clients, and the keys under it changed this turn
/// with the client that last changed each (None: the server, expiring).
#[derive(Default)]
pub(in crate::apps::kv) struct Prefix {
    clients: BTreeSet<u64>,
    keys: BTreeMap<Vec<u8>, Option<u64>>,
}

/// The server's side of client-side caching.
#[derive(Default)]
pub(in crate::apps::kv) struct Tracking {
    pub(in crate::apps::kv) clients: HashMap<u64, Tracked>,
    /// Keys read by tracking clients, and who read them.
    pub(in crate::apps::kv) table: HashMap<Vec<u8>, HashSet<u64>>,
    /// Client ids across the table (INFO tracking_total_items).
    pub(in crate::apps::kv) items: u64,
    pub(in crate::apps::kv) prefixes: BTreeMap<Vec<u8>, Prefix>,
    /// The client whose command is running, at the top level, and the
    /// invalidations for it that wait for its reply (None: a flush).
    pub(in crate::apps::kv) current: Option<u64>,
    pub(in crate::apps::kv) pending: Vec<Option<Vec<u8>>>,
    /// Ticks in a row that ended over the table's limit.
    pub(in crate::apps::kv) over_limit_ticks: usize,
    /// The keys a running script declared, remembered for its client when
    /// the script reads (Redis's rule for scripts).
    pub(in crate::apps::kv) script_keys: Option<Vec<Vec<u8>>>,
    /// The client (id, RESP3) of another shard whose command a link
    /// connection runs now (`LINK_AS`, or a private link's client).
    pub(in crate::apps::kv) remote: Option<(u64, bool)>,
}

impl Tracking {
    /// Whether a key change may concern anyone.
    pub(in crate::apps::kv) fn is_active(&self) -> bool {
        !self.table.is_empty() || !self.prefixes.is_empty()
    }

    /// CLIENT LIST's tracking flags (t, R, B) and redir field.
    pub(in crate::apps::kv) fn list_fields(&self, id: u64) -> (&'static str, i64) {
        match self.clients.get(&id) {
            None => ("", -1),
            Some(t) => {
                let flags = match (t.broken_redirect, t.bcast) {
                    (false, false) => "t",
                    (true, false) => "tR",
                    (false, true) => "tB",
                    (true, true) => "tRB",
                };
                (flags, t.redirect as i64)
            }
        }
    }

    /// Whether client `id` tracks (on a sharded server: on every shard).
    pub(in crate::apps::kv) fn tracks(&self, id: u64) -> bool {
        self.clients.contains_key(&id)
    }

    /// Its CLIENT CACHING choice for its next command.
    pub(in crate::apps::kv) fn caching(&self, id: u64) -> bool {
        self.clients.get(&id).is_some_and(|t| t.caching)
    }

    /// A link connection runs a command for client (id, RESP3) `remote`,
    /// or (None) no longer. Returns the one before.
    pub(in crate::apps::kv) fn run_for(&mut self, remote: Option<(u64, bool)>) -> Option<(u64, bool)> {
        std::mem::replace(&mut self.remote, remote)
    }

    /// A link's command for client `id` comes with its CLIENT CACHING
    /// choice (made on its own shard).
    pub(in crate::apps::kv) fn set_caching(&mut self, id: u64, caching: bool) {
        if let Some(tracked) = self.clients.get_mut(&id) {
            tracked.caching = caching;
        }
    }

    /// The connection is gone (or RESET): it stops tracking. Returns
    /// whether it tracked.
    pub(in crate::apps::kv) fn disable(&mut self, id: u64) -> bool {
        let Some(tracked) = self.clients.remove(&id) else { return false };
        for prefix in tracked.prefixes {
            let Some(state) = self.prefixes.get_mut(&prefix) else { continue };
            state.clients.remove(&id);
            if state.clients.is_empty() {
                self.prefixes.remove(&prefix);
            }
        }
        true
    }

    pub(in crate::apps::kv) fn enable(&mut self, id: u64, mode: Tracked, prefixes: Vec<Vec<u8>>) {
        let tracked = self.clients.entry(id).or_default();
        let caching = tracked.caching;
        let kept = std::mem::take(&mut tracked.prefixes);
        *tracked = Tracked { caching, prefixes: kept, ..mode };
        if !tracked.bcast {
            return;
        }
        let added = if prefixes.is_empty() { vec![Vec::new()] } else { prefixes };
        for prefix in added {
            if tracked.prefixes.insert(prefix.clone()) {
                self.prefixes.entry(prefix).or_default().clients.insert(id);
            }
        }
    }

    /// Redis's `checkPrefixCollisionsOrReply`: no new prefix may be a
    /// prefix of, or have as prefix, one the client has or another new one.
    pub(in crate::apps::kv) fn prefix_collision(&self, id: u64, prefixes: &[Vec<u8>]) -> Option<String> {
        let overlaps = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let existing = self.clients.get(&id).map(|t| &t.prefixes);
        for (i, prefix) in prefixes.iter().enumerate() {
            if let Some(old) = existing.into_iter().flatten().find(|old| overlaps(old, prefix)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not \
                     overlap.",
                    text(prefix),
                    text(old)
                ));
            }
            if let Some(other) = prefixes[i + 1..].iter().find(|other| overlaps(prefix, other)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must \
                     not overlap.",
                    text(prefix),
                    text(other)
                ));
            }
        }
        None
    }

    /// Records `key` for the BCAST prefixes it falls under.
    pub(in crate::apps::kv) fn note_for_broadcast(&mut self, key: &[u8], by: Option<u64>) {
        for (prefix, state) in self.prefixes.iter_mut() {
            if key.starts_with(prefix) {
                state.keys.insert(key.to_vec(), by);
            }
        }
    }

    /// The messages of this turn's BCAST keys, by client; the keys go.
    pub(in crate::apps::kv) fn take_broadcasts(&mut self) -> Vec<(u64, Vec<u8>)> {
        let mut messages = Vec::new();
        for state in self.prefixes.values_mut() {
            if state.keys.is_empty() {
                continue;
            }
            let keys = std::mem::take(&mut state.keys);
            for &client in &state.clients {
                let noloop = self.clients.get(&client).is_some_and(|t| t.noloop);
                let sent: Vec<&Vec<u8>> =
                    keys.iter().filter(|(_, by)| !noloop || **by != Some(client)).map(|(key, _)| key).collect();
                if !sent.is_empty() {
                    messages.push((client, encode_keys(&sent)));
                }
            }
        }
        messages
    }
}

/// A RESP array of bulk strings (the same in RESP2 and RESP3).
fn encode_keys(keys: &[&Vec<u8>]) -> Vec<u8> {
    let enc = Encoder { resp3: false };
    let mut out = Vec::with_capacity(16 + keys.iter().map(|k| k.len() + 16).sum::<usize>());
    enc.array(&mut out, keys.len());
    keys.iter().for_each(|key| enc.bulk(&mut out, key));
    out
}
