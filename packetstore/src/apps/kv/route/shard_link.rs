//! Commands relayed between shards: on the main Redis port of a sharded
//! server, a command whose keys are another shard's runs there and is
//! answered here, in order, so any client works unchanged.
//!
//! Every two shards are joined by two links, and every shard has one to
//! itself (socketpairs the server makes before the shards start, each end
//! a connection of its shard's event loop): on shard A's link to B
//! (`LISTENER_LINK_OUT + B`) go the commands of A's clients for B's keys,
//! and on B that link is a connection like any
//! client's (`LISTENER_LINK_IN`): B runs them in order and answers each once
//! it is durable, as it answers every client. A sends a `SELECT` or `HELLO`
//! ahead of a command whose client's database or protocol differs from the
//! link's, and drops their replies.
//!
//! A client's commands keep their order: while a reply from shard B is
//! outstanding, its later commands go to B on the same link (whose replies
//! come back in order), and a command for anywhere else waits, parsed
//! (`KvConn::held`), until every reply is in.
//!
//! A blocking command (BLPOP, XREAD BLOCK, ...) for another shard's keys
//! goes on its client's *private link* to that shard instead: a socketpair
//! made at run time, its far end handed over through the exchange, so one
//! blocked client never holds up the shared link. Each shard keeps an idle
//! one to every other ready; a line before each command names the client
//! (CLIENT UNBLOCK finds it) and when the command arrived (blocked clients
//! are served in arrival order across shards).
//!
//! A command that spans shards (`span.rs`) goes out in parts, one per
//! shard, this shard's own included (every shard has a link to itself);
//! their replies are gathered, merged into one, and delivered as one
//! reply. Its client's later commands wait, parsed, until it is.
//!
//! Owns: each outbound link's bytes to send, the clients waiting on it in
//! order, the spanning commands' gathered parts, the replies on their way
//! to clients, and the private links (whose each one is, the idle ones, the
//! sockets still to adopt or hand over).
//!
//! Invariants: a link's pending queue holds one entry per command sent on
//! it, in order, so the n-th reply read answers the n-th entry; a reply
//! reaches only the connection (slot and id) that sent its command.

use std::collections::{HashMap, VecDeque};

use crate::apps::kv::span::{self, Merge};
use crate::io::app::{ConnToken, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;

/// Connections of another shard's link to this one: its clients' commands.
/// (A label, not a listening socket: listeners 0 to 3 are the HTTP, Redis,
/// peer and cluster ports.)
pub const LISTENER_LINK_IN: usize = 1 << 14;
/// This shard's link to shard `i` is a connection of `LISTENER_LINK_OUT + i`.
pub const LISTENER_LINK_OUT: usize = 1 << 16;
/// This shard's private link number `n` (one client's, to one shard) is a
/// connection of `LISTENER_LINK_PRIVATE + n`.
pub const LISTENER_LINK_PRIVATE: usize = LISTENER_LINK_OUT + (1 << 15);
/// Private links a shard has open at once, at most: a client that would
/// need one more is answered with an error.
pub const PRIVATE_LINKS_MAX: usize = 4096;
/// A client's commands stop going out while its link has this much unsent.
pub const LINK_OUTBOX_MAX_BYTES: u64 = 4 << 20;

/// Whose reply the next one read on a link is.
#[derive(Clone, Copy)]
enum Pending {
    /// A SELECT or HELLO of the link's own, or a command of a client that
    /// closed since: dropped.
    Own,
    /// `silent`: its client had replies off (CLIENT REPLY OFF or SKIP):
    /// counted, not delivered.
    Client { token: ConnToken, id: u64, silent: bool },
    /// Part `part` of the spanning command `gather`.
    Part { gather: u64, part: usize },
}

/// A spanning command's parts: their replies as they come.
struct Gather {
    /// Whom the merged reply is for (`Pending::Client`).
    client: Pending,
    replies: Vec<Vec<u8>>,
    remaining: usize,
    merge: Merge,
    /// Messages for the client that came after parts' replies (a tracking
    /// client's invalidations): they follow the merged reply.
    trailer: Vec<u8>,
}

/// Where a link's next reply goes: the tables a reply may land in.
struct Answers<'a> {
    delivered: &'a mut HashMap<ConnToken, Delivered>,
    wake: &'a mut Vec<ConnToken>,
    gathers: &'a mut HashMap<u64, Gather>,
}

impl Answers<'_> {
    /// Queues `reply` for whom `pending` names: a client (woken), a part
    /// of a spanning command (merged and queued for its client once the
    /// last part is in), or nobody. Returns whom a message right after it
    /// on the link is for (`notice`).
    fn answer(&mut self, pending: Pending, reply: &[u8]) -> Pending {
        let Pending::Part { gather, part } = pending else {
            hand_over(self.delivered, self.wake, pending, reply);
            return pending;
        };
        let Some(entry) = self.gathers.get_mut(&gather) else { return Pending::Own };
        entry.replies[part] = reply.to_vec();
        entry.remaining -= 1;
        if entry.remaining > 0 {
            return pending;
        }
        let entry = self.gathers.remove(&gather).expect("just found");
        hand_over(self.delivered, self.wake, entry.client, &span::merge(&entry.merge, &entry.replies));
        if !entry.trailer.is_empty() {
            self.notice(entry.client, &entry.trailer);
        }
        entry.client
    }

    /// A message the other shard sent after a reply (a RESP3 push: a
    /// tracking client's invalidation) for whom `after` names: it follows
    /// the client's reply, or its spanning command's merged reply. Replies
    /// off (CLIENT REPLY OFF) do not hold it back, as in Redis.
    fn notice(&mut self, after: Pending, message: &[u8]) {
        match after {
            Pending::Client { token, id, .. } => {
                match self.delivered.get_mut(&token) {
                    Some(entry) if entry.id == id => entry.bytes.extend_from_slice(message),
                    // The slot is another connection's now: never touch
                    // the replies waiting for it.
                    Some(_) => {}
                    None => {
                        // Its reply went out already: the message follows.
                        let entry = Delivered { id, bytes: message.to_vec(), replies: 0 };
                        self.delivered.insert(token, entry);
                        self.wake.push(token);
                    }
                }
            }
            Pending::Part { gather, .. } => {
                if let Some(entry) = self.gathers.get_mut(&gather) {
                    entry.trailer.extend_from_slice(message);
                }
            }
            Pending::Own => {}
        }
    }
}

/// This shard's link to one other shard.
#[derive(Default)]
struct LinkOut {
    token: Option<ConnToken>,
    outbox: Vec<u8>,
    pending: VecDeque<Pending>,
    /// Replies read but not yet whole.
    inbox: Vec<u8>,
    /// Whom the last reply read answered (`Answers::answer`): a push read
    /// next is a message for them.
    last: Option<Pending>,
    /// Bytes queued on the link's connection and not sent, at its last turn.
    unsent: u64,
    /// The database and protocol its commands now run in on the other side
    /// (db None: not known, after a script, whose SELECT sticks).
    db: Option<u8>,
    resp3: bool,
    /// Its connection closed (the other shard is stopping, or closed it
    /// dropping replies), and no new one is up yet: what is sent to it is
    /// answered with an error here.
    lost: bool,
}

impl LinkOut {
    /// A link whose other end is a new connection (database 0, RESP2).
    fn fresh() -> LinkOut {
        LinkOut { db: Some(0), ..LinkOut::default() }
    }
}

/// Both ends of a new link between shards (or a shard and itself): a
/// nonblocking, close-on-exec Unix socketpair.
pub fn link_pair() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    let kind = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: socketpair writes two descriptors into `fds`.
    if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors nothing else owns.
    Ok(unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) })
}

/// Replies from other shards that wait for their client's next turn.
struct Delivered {
    id: u64,
    bytes: Vec<u8>,
    replies: u32,
}

/// The client a relayed command is for: who it is, and the database and
/// protocol its command runs in.
#[derive(Clone, Copy)]
pub struct Client {
    pub token: ConnToken,
    pub id: u64,
    pub db: u8,
    pub resp3: bool,
    /// `LINK_AS` flags: the command goes as `LINK_AS id flags
    /// command...` (None: as it is; a client that does not track).
    pub tag: Option<u8>,
}

/// A link of one client's own to another shard, for its commands that may
/// block there (BLPOP, XREAD BLOCK, ...): on a shared link, one would hold
/// up every other client's. Once its reply is in it waits, idle, for any
/// client (`idle_when_done`); it closes if its client left a command in
/// flight (the other shard then forgets that command).
struct Private {
    shard: u16,
    /// Whose it is now (None: idle).
    client: Option<(ConnToken, u64)>,
    link: LinkOut,
    /// Its client is gone with a command in flight: it closes at its next
    /// turn.
    closing: bool,
}

/// Idle private links kept ready per other shard (made at the first turn
/// and after one is taken): a blocking command goes out at once, on a
/// connection the other shard serves already, not after a new socket's
/// hand-over; at most `PRIVATE_IDLE_MAX` wait.
const PRIVATE_IDLE_MIN: usize = 1;
const PRIVATE_IDLE_MAX: usize = 4;
/// Idle private links are made up at most this often.
const PRIVATE_REFILL_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The command that goes before each one on a private link (the other
/// shard's link connection answers it only there): the client's id (its
/// blocked command is found by CLIENT UNBLOCK with it) and when the command
/// arrived, in `arrival_ns` (clients blocked on a key are served in that
/// order, wherever they arrived).
pub const LINK_CLIENT: &[u8] = b"PACKETSTORE-LINK-CLIENT";

/// The command a shard's link sends ahead of the arguments of a command it
/// relays for a tracking client, or of a part of a spanning command:
/// `PACKETSTORE-AS id flags command...`. The other shard runs the command
/// for that client id, with its CLIENT CACHING choice (`LINK_CACHING`);
/// a part flagged `LINK_PART` is not counted there (another part is).
pub(in crate::apps::kv) const LINK_AS: &[u8] = b"PACKETSTORE-AS";
/// `LINK_AS` flags: the client's CLIENT CACHING choice is yes (OPTIN) or
/// no (OPTOUT) for this command.
pub(in crate::apps::kv) const LINK_CACHING: u8 = 1;
/// `LINK_AS` flags: a part of a spanning command after its first.
pub(in crate::apps::kv) const LINK_PART: u8 = 2;
/// `LINK_AS` flags: the client reads where it is (READONLY, on a node of a
/// replicated group): the shard may answer from its own tree even if it
/// does not lead its group.
pub(in crate::apps::kv) const LINK_READONLY: u8 = 4;

/// Nanoseconds since the process's first call: one clock for every shard.
pub fn arrival_ns() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
}

/// The links of this shard to every shard, itself included (index: shard),
/// and its clients' private links.
#[derive(Default)]
pub struct ShardLinks {
    out: Vec<LinkOut>,
    /// By number (`LISTENER_LINK_PRIVATE + n`).
    private: HashMap<usize, Private>,
    /// A client's private link to a shard: its number.
    private_of: HashMap<(ConnToken, u16), usize>,
    /// Per shard: its idle private links' numbers.
    idle: Vec<Vec<usize>>,
    free_private: Vec<usize>,
    /// Sockets for this loop to adopt (`App::take_adoptions`).
    pub(in crate::apps::kv) adopt: Vec<(std::os::fd::RawFd, usize)>,
    /// Sockets' other ends for other shards to adopt (`hand_links`).
    pub(in crate::apps::kv) handed: Vec<(u16, std::os::fd::OwnedFd)>,
    /// When idle private links were last made up (`keep_idle_links`).
    refilled_at: Option<std::time::Instant>,
    delivered: HashMap<ConnToken, Delivered>,
    gathers: HashMap<u64, Gather>,
    next_gather: u64,
    pub(in crate::apps::kv) wake: Vec<ConnToken>,
}

impl ShardLinks {
    pub fn new(shards: u16) -> ShardLinks {
        let idle = vec![Vec::new(); usize::from(shards)];
        ShardLinks { out: (0..shards).map(|_| LinkOut::fresh()).collect(), idle, ..ShardLinks::default() }
    }

    /// Keeps `PRIVATE_IDLE_MIN` idle private links to every shard but
    /// `me` (new ones: their other ends in `handed`).
    pub(in crate::apps::kv) fn keep_idle_links(&mut self, me: u16) {
        // At most every `PRIVATE_REFILL_EVERY` (a shard that refuses its
        // ends, full or stopping, is not asked again at every turn).
        let now = std::time::Instant::now();
        if self.refilled_at.is_some_and(|at| now.duration_since(at) < PRIVATE_REFILL_EVERY) {
            return;
        }
        self.refilled_at = Some(now);
        for shard in 0..self.out.len() as u16 {
            while shard != me && self.idle[usize::from(shard)].len() < PRIVATE_IDLE_MIN {
                let Ok(n) = self.new_private(shard, None) else { return };
                self.idle[usize::from(shard)].push(n);
            }
        }
    }

    /// A link's connection is up (the loop adopted its socket).
    pub(in crate::apps::kv) fn linked(&mut self, listener: usize, token: ConnToken) -> bool {
        if let Some(private) = listener.checked_sub(LISTENER_LINK_PRIVATE).and_then(|n| self.private.get_mut(&n)) {
            // What its client queued before it was up goes out now (or it
            // closes, its client gone).
            private.link.token = Some(token);
            self.wake.push(token);
            return true;
        }
        let Some(link) = listener.checked_sub(LISTENER_LINK_OUT).and_then(|shard| self.out.get_mut(shard)) else {
            return false;
        };
        link.token = Some(token);
        link.lost = false;
        true
    }

    /// Queues the blocking command `args` on `client`'s private link to
    /// `shard` (its own, an idle one, or a new one), after the line that
    /// names the client and when the command arrived (`arrived_ns`). Err:
    /// the reply, when this shard has `PRIVATE_LINKS_MAX` already. New
    /// links' other ends wait in `handed`.
    pub(in crate::apps::kv) fn send_private<B: AsRef<[u8]>>(
        &mut self,
        shard: u16,
        client: Client,
        args: &[B],
        (silent, arrived_ns): (bool, u64),
    ) -> Result<(), String> {
        let owner = (client.token, client.id);
        let known = self.private_of.get(&(client.token, shard)).copied();
        let n = match known.filter(|n| self.private[n].client == Some(owner)) {
            Some(n) => n,
            None => {
                let n = match self.idle[usize::from(shard)].pop() {
                    Some(n) => n,
                    None => self.new_private(shard, None)?,
                };
                self.private.get_mut(&n).expect("a private link").client = Some(owner);
                self.private_of.insert((client.token, shard), n);
                n
            }
        };
        let private = self.private.get_mut(&n).expect("just found or made");
        let (id, arrived) = (client.id.to_string(), arrived_ns.to_string());
        encode(&mut private.link.outbox, &[LINK_CLIENT, id.as_bytes(), arrived.as_bytes()]);
        private.link.pending.push_back(Pending::Own);
        let pending = Pending::Client { token: client.token, id: client.id, silent };
        send_on(&mut private.link, client, args, pending, false);
        if let Some(token) = private.link.token {
            self.wake.push(token);
        }
        Ok(())
    }

    /// A new private link to `shard` (for `client`, or idle): its number.
    /// This end waits in `adopt`, the other in `handed`.
    fn new_private(&mut self, shard: u16, client: Option<(ConnToken, u64)>) -> Result<usize, String> {
        use std::os::fd::IntoRawFd;
        let n = match self.free_private.pop() {
            Some(n) => n,
            None if self.private.len() < PRIVATE_LINKS_MAX => self.private.len(),
            None => {
                return Err(format!(
                    "ERR {PRIVATE_LINKS_MAX} clients of this shard wait on other shards' keys already: try again later"
                ))
            }
        };
        let (near, far) = match link_pair() {
            Ok(pair) => pair,
            Err(error) => {
                self.free_private.push(n);
                return Err(format!("ERR no link to shard {shard}: {error}"));
            }
        };
        self.handed.push((shard, far));
        self.adopt.push((near.into_raw_fd(), LISTENER_LINK_PRIVATE + n));
        let private = Private { shard, client, link: LinkOut::fresh(), closing: false };
        assert!(self.private.insert(n, private).is_none(), "a free private link number");
        Ok(n)
    }

    /// Whether a client may send another command to `shard` now (its link
    /// is not backed up).
    pub(in crate::apps::kv) fn has_room(&self, shard: u16) -> bool {
        let link = &self.out[usize::from(shard)];
        (link.outbox.len() as u64).saturating_add(link.unsent) < LINK_OUTBOX_MAX_BYTES
    }

    /// Queues the command `args` (name first) on the link to `shard` for
    /// `client`, in its database and protocol; `silent`: its reply is
    /// dropped when it comes; `scripted`: a script or function, which may
    /// SELECT on the link. Its reply (or an error) will be delivered once.
    pub(in crate::apps::kv) fn send<B: AsRef<[u8]>>(
        &mut self,
        shard: u16,
        client: Client,
        args: &[B],
        (silent, scripted): (bool, bool),
    ) {
        let pending = Pending::Client { token: client.token, id: client.id, silent };
        self.send_pending(shard, client, args, pending, scripted);
    }

    /// Queues `args` (name first) on the link to `shard` for nobody: its
    /// reply is dropped (a keyspace notification's PUBLISH).
    pub(in crate::apps::kv) fn send_own<B: AsRef<[u8]>>(&mut self, shard: u16, args: &[B]) {
        let link = &mut self.out[usize::from(shard)];
        if link.lost {
            return;
        }
        encode(&mut link.outbox, args);
        link.pending.push_back(Pending::Own);
        if let Some(token) = link.token {
            self.wake.push(token);
        }
    }

    /// Sends a spanning command's parts (`parts`: each its shard and its
    /// arguments) for `client`, whose one reply, merged by `merge`, will be
    /// delivered once every part's is in; `silent` as for `send`. The
    /// part on `home` (the client's shard; else the first) is counted as
    /// the client's call, so its figures (SLOWLOG, LATENCY) are where the
    /// client asks for them.
    pub(in crate::apps::kv) fn send_span<B: AsRef<[u8]>>(
        &mut self,
        (client, home): (Client, u16),
        parts: &[(u16, Vec<B>)],
        merge: Merge,
        silent: bool,
    ) {
        assert!(!parts.is_empty(), "a span has parts");
        let gather = self.next_gather;
        self.next_gather += 1;
        let owner = Pending::Client { token: client.token, id: client.id, silent };
        let replies = vec![Vec::new(); parts.len()];
        let entry = Gather { client: owner, replies, remaining: parts.len(), merge, trailer: Vec::new() };
        self.gathers.insert(gather, entry);
        let counted_part = parts.iter().position(|(shard, _)| *shard == home).unwrap_or(0);
        for (part, (shard, args)) in parts.iter().enumerate() {
            // Every part runs for the client (CLIENT KILL's SKIPME, its
            // tracking); only one is counted as its call.
            let counted = if part == counted_part { 0 } else { LINK_PART };
            let client = Client { tag: Some(client.tag.unwrap_or(0) | counted), ..client };
            self.send_pending(*shard, client, args, Pending::Part { gather, part }, false);
        }
    }

    fn send_pending<B: AsRef<[u8]>>(
        &mut self,
        shard: u16,
        client: Client,
        args: &[B],
        pending: Pending,
        scripted: bool,
    ) {
        let link = &mut self.out[usize::from(shard)];
        if link.lost {
            let error = format!("-ERR shard {shard} is not reachable (stopping?): the command was not run\r\n");
            let mut answers =
                Answers { delivered: &mut self.delivered, wake: &mut self.wake, gathers: &mut self.gathers };
            answers.answer(pending, error.as_bytes());
            return;
        }
        send_on(link, client, args, pending, scripted);
        if let Some(token) = link.token {
            self.wake.push(token);
        }
    }

    /// The replies other shards sent the client (`token`, `id`), if any:
    /// moved to its output. Returns how many.
    pub(in crate::apps::kv) fn deliver(&mut self, token: ConnToken, id: u64, out: &mut OutQueue) -> u32 {
        let Some((bytes, replies)) = self.take_delivered(token, id) else { return 0 };
        out.push(&bytes);
        replies
    }

    /// The replies other shards sent the client (`token`, `id`), whole,
    /// and how many they are; None if there are none.
    pub(in crate::apps::kv) fn take_delivered(&mut self, token: ConnToken, id: u64) -> Option<(Vec<u8>, u32)> {
        let delivered = self.delivered.remove(&token)?;
        // None: for a connection that closed since.
        (delivered.id == id).then_some((delivered.bytes, delivered.replies))
    }

    /// A link's connection closed: its clients' commands in flight are
    /// answered with an error (they may or may not have run there), and so
    /// is every later one. A private link is gone for good.
    pub(in crate::apps::kv) fn lost(&mut self, listener: usize, alive: impl Fn(u16) -> bool) {
        if let Some(n) = listener.checked_sub(LISTENER_LINK_PRIVATE) {
            let Some(private) = self.private.remove(&n) else { return };
            self.free_private.push(n);
            self.idle[usize::from(private.shard)].retain(|&idle| idle != n);
            if let Some((token, _)) = private.client {
                if self.private_of.get(&(token, private.shard)) == Some(&n) {
                    self.private_of.remove(&(token, private.shard));
                }
            }
            let error =
                format!("-ERR the link to shard {} closed: the command may or may not have run\r\n", private.shard);
            let mut answers =
                Answers { delivered: &mut self.delivered, wake: &mut self.wake, gathers: &mut self.gathers };
            for pending in private.link.pending {
                answers.answer(pending, error.as_bytes());
            }
            return;
        }
        let Some(shard) = listener.checked_sub(LISTENER_LINK_OUT) else { return };
        let Some(link) = self.out.get_mut(shard) else { return };
        let again = alive(shard as u16);
        if again {
            tracing::warn!("the link to shard {shard} closed: its clients' commands in flight fail; linking again");
        }
        let pending = std::mem::take(&mut link.pending);
        // A fresh link, as the other end's new connection starts.
        *link = LinkOut { lost: true, ..LinkOut::fresh() };
        let error = format!("-ERR the link to shard {shard} closed: the command may or may not have run\r\n");
        let mut answers = Answers { delivered: &mut self.delivered, wake: &mut self.wake, gathers: &mut self.gathers };
        for pending in pending {
            answers.answer(pending, error.as_bytes());
        }
        // The other shard closes a link whose replies its group will never
        // acknowledge (a leader that lost its leadership): a new one
        // replaces it (until then, and for good if that shard stopped,
        // what is sent there is answered with an error).
        if again {
            self.relink(shard as u16);
        }
    }

    /// A new link to `shard` (after one closed): this end waits in `adopt`,
    /// the other in `handed`; the link is up again once adopted (`linked`).
    fn relink(&mut self, shard: u16) {
        use std::os::fd::IntoRawFd;
        match link_pair() {
            Ok((near, far)) => {
                self.handed.push((shard, far));
                self.adopt.push((near.into_raw_fd(), LISTENER_LINK_OUT + usize::from(shard)));
            }
            Err(error) => tracing::error!("no new link to shard {shard}: {error}"),
        }
    }

    /// A client closed (`awaiting`: replies it still waited for): nothing
    /// more is delivered to it (the replies on their way are dropped as
    /// they come).
    pub(in crate::apps::kv) fn forget(&mut self, (token, id): (ConnToken, u64), awaiting: u32) {
        if self.delivered.get(&token).is_some_and(|d| d.id == id) {
            self.delivered.remove(&token);
        }
        self.close_private((token, id));
        let own =
            |pending: &Pending| matches!(*pending, Pending::Client { token: t, id: i, .. } if t == token && i == id);
        // A message still coming after its last reply goes nowhere.
        for link in self.out.iter_mut() {
            if link.last.as_ref().is_some_and(own) {
                link.last = Some(Pending::Own);
            }
        }
        if awaiting == 0 {
            return;
        }
        for pending in self.out.iter_mut().flat_map(|link| link.pending.iter_mut()) {
            if own(pending) {
                *pending = Pending::Own;
            }
        }
        // Its spanning commands' parts still come; their merge goes nowhere.
        for gather in self.gathers.values_mut() {
            if own(&gather.client) {
                gather.client = Pending::Own;
            }
        }
    }
}

impl ShardLinks {
    /// The client (`token`, `id`) is gone: its private links wait for
    /// another, idle, or close if it left a command in flight (the shards
    /// at their other end see them end, and forget what they had it wait
    /// for).
    fn close_private(&mut self, (token, id): (ConnToken, u64)) {
        for shard in 0..self.out.len() as u16 {
            let Some(&n) = self.private_of.get(&(token, shard)) else { continue };
            let private = self.private.get_mut(&n).expect("a private link's number");
            if private.client != Some((token, id)) {
                continue;
            }
            self.private_of.remove(&(token, shard));
            private.client = None;
            let idle = &mut self.idle[usize::from(shard)];
            if private.link.pending.is_empty() && idle.len() < PRIVATE_IDLE_MAX {
                idle.push(n);
                continue;
            }
            private.closing = true;
            private.link.pending.iter_mut().for_each(|pending| *pending = Pending::Own);
            if let Some(link) = private.link.token {
                self.wake.push(link);
            }
        }
    }
}

/// Queues the command `args` of `client` on `link`, after a SELECT or
/// HELLO of the link's own when its database or protocol differs.
fn send_on<B: AsRef<[u8]>>(link: &mut LinkOut, client: Client, args: &[B], pending: Pending, scripted: bool) {
    if link.db != Some(client.db) {
        encode(&mut link.outbox, &[b"SELECT".as_slice(), client.db.to_string().as_bytes()]);
        link.pending.push_back(Pending::Own);
        link.db = Some(client.db);
    }
    if link.resp3 != client.resp3 {
        encode(&mut link.outbox, &[b"HELLO".as_slice(), if client.resp3 { b"3" } else { b"2" }]);
        link.pending.push_back(Pending::Own);
        link.resp3 = client.resp3;
    }
    match client.tag {
        None => encode(&mut link.outbox, args),
        Some(flags) => {
            let (id, flags) = (client.id.to_string(), flags.to_string());
            let prefix = [LINK_AS, id.as_bytes(), flags.as_bytes()];
            encode_prefixed(&mut link.outbox, &prefix, args);
        }
    }
    link.pending.push_back(pending);
    if scripted {
        link.db = None;
    }
}

/// Queues `reply` for the client `pending` names (none: the link's own)
/// and wakes it.
fn hand_over(delivered: &mut HashMap<ConnToken, Delivered>, wake: &mut Vec<ConnToken>, pending: Pending, reply: &[u8]) {
    let Pending::Client { token, id, silent } = pending else { return };
    let entry = delivered.entry(token).or_insert_with(|| Delivered { id, bytes: Vec::new(), replies: 0 });
    if entry.id != id {
        // The slot's connection closed and another took it.
        *entry = Delivered { id, bytes: Vec::new(), replies: 0 };
    }
    if !silent {
        entry.bytes.extend_from_slice(reply);
    }
    entry.replies += 1;
    wake.push(token);
}

/// A command as a RESP array of bulk strings.
fn encode<B: AsRef<[u8]>>(out: &mut Vec<u8>, parts: &[B]) {
    encode_prefixed::<&[u8], B>(out, &[], parts);
}

/// `prefix` then `parts`, as one RESP array of bulk strings.
fn encode_prefixed<A: AsRef<[u8]>, B: AsRef<[u8]>>(out: &mut Vec<u8>, prefix: &[A], parts: &[B]) {
    // Numbers written by hand: `format!` showed in a relayed GET's profile.
    use crate::proto::http::push_decimal;
    out.push(b'*');
    push_decimal(out, (prefix.len() + parts.len()) as u64);
    out.extend_from_slice(b"\r\n");
    let all = prefix.iter().map(AsRef::as_ref).chain(parts.iter().map(AsRef::as_ref));
    for part in all {
        out.push(b'$');
        push_decimal(out, part.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
}

impl ShardLinks {
    /// A turn of the link that is connection `listener`: what waits to be
    /// sent goes out, and every whole reply read goes to the client it
    /// answers. A reply that is no RESP, or answers no command sent (a bug
    /// on the other side), closes the link.
    pub(in crate::apps::kv) fn serve_link(
        &mut self,
        listener: usize,
        buffers: &mut Buffers,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> Progress {
        let ShardLinks { out: links, private, delivered, wake, gathers, .. } = self;
        let mut answers = Answers { delivered, wake, gathers };
        let (shard, link) = match listener.checked_sub(LISTENER_LINK_PRIVATE) {
            Some(n) => {
                let Some(private) = private.get_mut(&n).filter(|private| !private.closing) else {
                    stream.consume(stream.len(), |segment| release(segment, buffers));
                    return Progress { close: true, ..Progress::default() };
                };
                (usize::from(private.shard), &mut private.link)
            }
            None => (listener - LISTENER_LINK_OUT, &mut links[listener - LISTENER_LINK_OUT]),
        };
        if !link.outbox.is_empty() {
            out.push(&link.outbox);
            link.outbox.clear();
        }
        link.unsent = out.unsent_len();
        let n = stream.len();
        stream.for_each_slice(n, |s| link.inbox.extend_from_slice(s));
        stream.consume(n, |segment| release(segment, buffers));
        let mut at = 0;
        let mut progress = Progress::default();
        while at < link.inbox.len() {
            let len = match crate::proto::resp::reply_len(&link.inbox[at..]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(why) => {
                    tracing::error!("shard link to {shard}: a reply that is not RESP ({why}): closing it");
                    progress.close = true;
                    return progress;
                }
            };
            if link.inbox[at] == b'>' {
                // Not a reply: a message for the client just answered.
                if let Some(after) = link.last {
                    answers.notice(after, &link.inbox[at..at + len]);
                }
                at += len;
                continue;
            }
            let Some(pending) = link.pending.pop_front() else {
                tracing::error!("shard link to {shard}: a reply to no command sent: closing it");
                progress.close = true;
                return progress;
            };
            link.last = Some(answers.answer(pending, &link.inbox[at..at + len]));
            at += len;
            progress.requests += 1;
        }
        link.inbox.drain(..at);
        if let Some(n) = listener.checked_sub(LISTENER_LINK_PRIVATE) {
            self.idle_when_done(n);
        }
        progress
    }

    /// A private link with nothing in flight goes back to the idle ones
    /// (its client takes one again for its next blocking command), so
    /// links are held by clients waiting, not by every client that once
    /// waited. Past `PRIVATE_IDLE_MAX` idle it stays its client's.
    fn idle_when_done(&mut self, n: usize) {
        let Some(private) = self.private.get_mut(&n) else { return };
        let idle = &mut self.idle[usize::from(private.shard)];
        if !private.link.pending.is_empty() || idle.len() >= PRIVATE_IDLE_MAX {
            return;
        }
        let Some((token, _)) = private.client.take() else { return };
        if self.private_of.get(&(token, private.shard)) == Some(&n) {
            self.private_of.remove(&(token, private.shard));
        }
        idle.push(n);
    }
}
