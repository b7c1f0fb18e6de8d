//! What CLIENT keeps (`cmd/client.rs` runs the commands): a connection's
//! reply mode (`ReplyMode`), and the server's registry of Redis-protocol
//! connections (`Clients`): what CLIENT LIST shows of each one
//! (`ClientInfo`), which are killed, and which the event loop must wake to
//! close.
//!
//! Invariant: a killed connection is gone for every other client (it is no
//! message's `target`, no `live` one, not counted by `len`) from its kill
//! until it is forgotten.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Instant;

use crate::io::app::ConnToken;

/// What a connection's replies do (CLIENT REPLY).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::apps::kv) enum ReplyMode {
    #[default]
    On,
    /// No replies until CLIENT REPLY ON.
    Off,
    /// CLIENT REPLY SKIP was just run: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

/// A live connection as a message's destination: how the loop names it,
/// its protocol, and whether it subscribes (as of its last command).
pub(in crate::apps::kv) struct Target {
    pub(in crate::apps::kv) token: ConnToken,
    pub(in crate::apps::kv) resp3: bool,
    pub(in crate::apps::kv) pubsub: bool,
}

/// What CLIENT LIST shows of one connection.
pub(in crate::apps::kv) struct ClientInfo {
    token: ConnToken,
    fd: i32,
    pub(in crate::apps::kv) addr: String,
    pub(in crate::apps::kv) laddr: String,
    pub(in crate::apps::kv) name: Option<Vec<u8>>,
    created: Instant,
    pub(in crate::apps::kv) last: Instant,
    pub(in crate::apps::kv) cmd: &'static str,
    pub(in crate::apps::kv) subs: (usize, usize, usize),
    /// Commands queued in its transaction (None: not in one).
    pub(in crate::apps::kv) multi: Option<usize>,
    pub(in crate::apps::kv) resp3: bool,
    pub(in crate::apps::kv) no_evict: bool,
    pub(in crate::apps::kv) no_touch: bool,
}

/// The registry of Redis-protocol connections, by client id.
#[derive(Default)]
pub(in crate::apps::kv) struct Clients {
    pub(in crate::apps::kv) list: BTreeMap<u64, ClientInfo>,
    /// Killed by CLIENT KILL, closed at their next turn.
    killed: HashSet<u64>,
    /// Of those, the ones whose own CLIENT KILL (spanning every shard)
    /// killed them: they close once its replies are in, not before.
    after_replies: HashSet<u64>,
    /// Killed connections the event loop must serve (to close them).
    pub(in crate::apps::kv) wake: Vec<ConnToken>,
}

impl Clients {
    pub(in crate::apps::kv) fn register(&mut self, id: u64, token: ConnToken) {
        let now = Instant::now();
        let info = ClientInfo {
            token,
            fd: -1,
            addr: String::new(),
            laddr: String::new(),
            name: None,
            created: now,
            last: now,
            cmd: "NULL",
            subs: (0, 0, 0),
            multi: None,
            resp3: false,
            no_evict: false,
            no_touch: false,
        };
        self.list.insert(id, info);
    }

    /// The socket's descriptor and addresses, once accepted.
    pub(in crate::apps::kv) fn accepted(
        &mut self,
        id: u64,
        fd: i32,
        peer: Option<SocketAddr>,
        local: Option<SocketAddr>,
    ) {
        if let Some(info) = self.list.get_mut(&id) {
            info.fd = fd;
            info.addr = peer.map(|a| a.to_string()).unwrap_or_default();
            info.laddr = local.map(|a| a.to_string()).unwrap_or_default();
        }
    }

    /// Redis-protocol connections open (INFO's connected_clients).
    /// The connections not killed (INFO's connected_clients).
    pub(in crate::apps::kv) fn len(&self) -> usize {
        self.list.len() - self.killed.iter().filter(|id| self.list.contains_key(id)).count()
    }

    pub(in crate::apps::kv) fn forget(&mut self, id: u64) {
        self.list.remove(&id);
        self.killed.remove(&id);
        self.after_replies.remove(&id);
    }

    /// Whether CLIENT KILL closed it (no lookup while nobody is killed).
    /// The peer address CLIENT LIST shows for connection `id` (empty if
    /// unknown: a relayed or internal client).
    pub(in crate::apps::kv) fn addr_of(&self, id: u64) -> String {
        self.list.get(&id).map(|info| info.addr.clone()).unwrap_or_default()
    }

    pub(in crate::apps::kv) fn is_killed(&self, id: u64) -> bool {
        !self.killed.is_empty() && self.killed.contains(&id)
    }

    /// Whether a killed client waits for the replies other shards owe it
    /// (its own CLIENT KILL's) before it closes. Any other killed client
    /// closes at once, a command in flight on another shard or not (a
    /// client blocked there must not take what it waits for).
    pub(in crate::apps::kv) fn closes_after_replies(&self, id: u64) -> bool {
        self.after_replies.contains(&id)
    }

    /// Where a message for a live connection goes, and how it is framed.
    pub(in crate::apps::kv) fn target(&self, id: u64) -> Option<Target> {
        let info = self.list.get(&id).filter(|_| !self.killed.contains(&id))?;
        Some(Target { token: info.token, resp3: info.resp3, pubsub: info.is_pubsub() })
    }

    /// The connections not killed (a killed one is gone for CLIENT, as
    /// in Redis, even before the event loop has closed it).
    pub(in crate::apps::kv) fn live(&self) -> impl Iterator<Item = (&u64, &ClientInfo)> {
        self.list.iter().filter(|(id, _)| !self.killed.contains(id))
    }

    /// The client QUIT: gone for every other client from now on (a
    /// tracking redirect to it is broken), as Redis frees it before its
    /// next event, though its connection closes once its reply is out.
    pub(in crate::apps::kv) fn quitting(&mut self, id: u64) {
        if self.list.contains_key(&id) {
            self.killed.insert(id);
        }
    }

    /// Kills `id` (`own`: by its own command); whether it was here.
    pub(in crate::apps::kv) fn kill(&mut self, id: u64, own: bool) -> bool {
        let Some(info) = self.list.get(&id) else { return false };
        self.killed.insert(id);
        if own {
            self.after_replies.insert(id);
        }
        self.wake.push(info.token);
        true
    }
}

impl ClientInfo {
    pub(in crate::apps::kv) fn is_pubsub(&self) -> bool {
        self.subs != (0, 0, 0)
    }

    /// `extra`: whether it monitors, and its tracking flags.
    fn flags(&self, (monitor, tracking): (bool, &str)) -> String {
        let mut flags = String::new();
        if monitor {
            flags.push('O');
        }
        if self.is_pubsub() {
            flags.push('P');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        flags.push_str(tracking);
        if self.no_evict {
            flags.push('e');
        }
        if self.no_touch {
            flags.push('T');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        flags
    }

    /// Redis 7.0's line (`getClientInfoString`); `cmd` is the command
    /// shown (the one running, for the connection asking).
    /// `qbuf`: the bytes of its query buffer (the asking connection's
    /// current command; 0 for the others, whose commands are done).
    /// `extra`: whether it monitors, its tracking flags and redirect
    /// (`Tracking::list_fields`).
    pub(in crate::apps::kv) fn line(
        &self,
        id: u64,
        cmd: &str,
        qbuf: usize,
        now: Instant,
        extra: (bool, &str, i64),
    ) -> String {
        let name = self.name.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
        let (sub, psub, ssub) = self.subs;
        let multi = self.multi.map_or(-1, |n| n as i64);
        let mut line = String::new();
        let _ = writeln!(
            line,
            "id={id} addr={} laddr={} fd={} name={name} age={} idle={} flags={} db=0 sub={sub} psub={psub} ssub={ssub} \
             multi={multi} qbuf={qbuf} qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 \
             events=r cmd={cmd} \
             user=default redir={} resp={}",
            self.addr,
            self.laddr,
            self.fd,
            now.duration_since(self.created).as_secs(),
            now.duration_since(self.last).as_secs(),
            self.flags((extra.0, extra.1)),
            extra.2,
            if self.resp3 { 3 } else { 2 },
        );
        line
    }
}
