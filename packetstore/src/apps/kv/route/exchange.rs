//! The shards' meeting point for commands across them (`across.rs`): one
//! mailbox per shard (a coordinator's requests in order, and the shard's
//! answer), one eventfd per shard that wakes its event loop, the process's
//! one transaction lock, and the transaction ids; also the links one shard
//! hands another (`ShardLinks::send_private`) and each shard's client
//! counts.
//!
//! Owns: only memory the shards share; it knows nothing of a server, so
//! every shard's state holds it without a cycle.
//!
//! Invariants: a shard has at most one answer waiting, taken before the
//! coordinator's next request; a waiter never waits for a shard whose
//! event loop has ended (`leave`).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::store::db::TxnMarker;

/// What a coordinator asks a parked shard.
pub(in crate::apps::kv) enum Request {
    Park,
    /// A command (name first) on this shard's keys, in database `db`,
    /// answered in RESP3 if `resp3`.
    Run {
        args: Vec<Vec<u8>>,
        db: u8,
        resp3: bool,
        /// The coordinator's client, whose command it is.
        client: u64,
    },
    /// Close the part: `Some` (this shard wrote) with the marker, made
    /// durable; `None`: make durable what is pending.
    Finish(Option<TxnMarker>),
    /// Every part is durable: serve everyone again (after closing the
    /// part, if no `Finish` came: it then wrote nothing and returned
    /// nothing that was not durable).
    Release,
    /// Watch these keys (`state::watch_id`s) for another shard's
    /// connection, whose flag this is (WATCH); with `wake`, for a pop
    /// blocked on that shard, which is woken when one is written.
    Watch {
        keys: Vec<Vec<u8>>,
        flag: std::sync::Weak<AtomicBool>,
        wake: Option<u16>,
    },
}

/// What a parked shard answers.
pub(in crate::apps::kv) enum Response {
    Parked(Result<(), String>),
    /// The command's reply; whether this shard's part has written, and
    /// whether the shard has writes not yet durable (its reads may have
    /// returned them: it is then asked to `Finish` too).
    Reply {
        bytes: Vec<u8>,
        wrote: bool,
        pending: bool,
    },
    Finished(Result<(), String>),
    /// The shard's event loop has ended (the server is stopping): it
    /// answers nothing more.
    Gone,
}

/// Requests in order (a `Release` is not answered, so the next
/// coordinator's `Park` may follow it before it is taken), and the answer
/// to the last one that has one.
#[derive(Default)]
struct Slots {
    requests: std::collections::VecDeque<Request>,
    response: Option<Response>,
}

/// One shard's mailbox.
#[derive(Default)]
struct Mailbox {
    slots: Mutex<Slots>,
    changed: Condvar,
}

/// What the shards of one process share for commands across them.
pub struct Exchange {
    held: AtomicBool,
    next_txid: AtomicU64,
    /// SLOWLOG entry ids, one sequence for every shard's log (SLOWLOG GET
    /// merges the logs newest first by it).
    next_slowlog_id: AtomicU64,
    /// Bit i % 64 of word i / 64: shard i has a MONITOR client (every
    /// shard's commands are shown to it).
    monitoring: [AtomicU64; MONITOR_WORDS],
    boxes: Vec<Mailbox>,
    nudges: Vec<OwnedFd>,
    /// Shards whose event loop has ended (`leave`).
    gone: Vec<AtomicBool>,
    /// Per shard: private links another shard made (`ShardLinks`), each
    /// the far end of a socketpair, waiting for the shard to adopt them.
    handed: Vec<Mutex<Vec<OwnedFd>>>,
    /// Per shard, as of its last turn: its `Figure`s (INFO's
    /// connected_clients, blocked_clients and the tracking figures are the
    /// sums).
    figures: Vec<[AtomicUsize; FIGURES]>,
    /// The ids of every shard's clients (CLIENT TRACKING REDIRECT names a
    /// client that may be another shard's).
    /// With each one's address (MONITOR shows it where its commands run).
    clients: Mutex<std::collections::HashMap<u64, String>>,
    /// Per shard: whether a script runs there past busy-reply-threshold
    /// (`Busy`, as a byte), which makes every shard's main port answer
    /// BUSY, as one Redis would.
    busy: Vec<AtomicU8>,
    /// Per shard, as of its last turn: whether any of its clients
    /// subscribes to a channel or pattern (keyspace notifications of other
    /// shards' keys are sent only to those).
    listening: Vec<AtomicBool>,
    /// Scripts any shard compiled (EVAL, SCRIPT LOAD), by SHA-1: EVALSHA
    /// on another shard finds them (bounded by `SHARED_SCRIPTS_BYTES_MAX`).
    scripts: Mutex<SharedScripts>,
    /// In a replicated group: the node that leads shard 0's group, as
    /// shard 0 knows it (0: none known). Every other shard hands its own
    /// group's leadership to that node (`replication.rs`).
    group_leader: AtomicU64,
    /// The test switch `DEBUG PANIC-AT` (`state::PanicPoint` + 1; 0: none),
    /// armed for whichever shard runs the next such request.
    panic_at: AtomicU8,
}

/// The scripts' bodies all shards may run by SHA-1.
#[derive(Default)]
struct SharedScripts {
    bodies: std::collections::HashMap<String, Vec<u8>>,
    bytes: usize,
}

/// The shared scripts' bytes, at most: past it, they are forgotten (an
/// EVALSHA then answers NOSCRIPT where its script was never run, and the
/// client sends EVAL, as Redis clients do).
const SHARED_SCRIPTS_BYTES_MAX: usize = 64 << 20;

/// A figure each shard publishes every turn (`Exchange::publish`).
#[derive(Clone, Copy)]
pub(in crate::apps::kv) enum Figure {
    Clients = 0,
    Blocked = 1,
    /// Tracking clients whose connection is the shard's.
    TrackingClients = 2,
    /// Keys in the shard's tracking table, and client ids across it.
    TrackingKeys = 3,
    TrackingItems = 4,
}

/// How many `Figure`s there are.
pub(in crate::apps::kv) const FIGURES: usize = 5;

/// What keeps a shard busy: a script past busy-reply-threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::apps::kv) enum Busy {
    Eval = 1,
    Function = 2,
}

/// Words of the monitoring shards' bits: one bit for each of the most
/// shards a data set may have (256).
const MONITOR_WORDS: usize = 4;

/// Shard `shard`'s word and bit in `Exchange::monitoring`.
fn monitor_bit(shard: u16) -> (usize, u64) {
    let word = usize::from(shard / 64);
    assert!(word < MONITOR_WORDS, "shard {shard}: at most {} shards", MONITOR_WORDS * 64);
    (word, 1u64 << (shard % 64))
}

impl Exchange {
    /// The exchange of `shards` shards, each with its eventfd.
    pub fn new(shards: u16) -> std::io::Result<Exchange> {
        let nudges = (0..shards)
            .map(|_| {
                // SAFETY: eventfd takes no pointers; the descriptor it
                // returns is ours alone (wrapped at once).
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // SAFETY: a fresh descriptor nothing else owns.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            })
            .collect::<std::io::Result<Vec<OwnedFd>>>()?;
        Ok(Exchange {
            held: AtomicBool::new(false),
            next_txid: AtomicU64::new(1),
            next_slowlog_id: AtomicU64::new(0),
            monitoring: Default::default(),
            boxes: (0..shards).map(|_| Mailbox::default()).collect(),
            nudges,
            gone: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            handed: (0..shards).map(|_| Mutex::default()).collect(),
            figures: (0..shards).map(|_| std::array::from_fn(|_| AtomicUsize::new(0))).collect(),
            clients: Mutex::default(),
            busy: (0..shards).map(|_| AtomicU8::new(0)).collect(),
            listening: (0..shards).map(|_| AtomicBool::new(false)).collect(),
            scripts: Mutex::default(),
            group_leader: AtomicU64::new(0),
            panic_at: AtomicU8::new(0),
        })
    }

    /// Shard 0's replica: the leader of its group, as of this turn.
    /// Arms the test switch `DEBUG PANIC-AT` for every shard (`point`: a
    /// `PanicPoint` + 1).
    pub(in crate::apps::kv) fn arm_panic(&self, point: u8) {
        self.panic_at.store(point, Ordering::Relaxed);
    }

    /// Whether `point` was armed; disarms it (one shard panics, once).
    pub(in crate::apps::kv) fn take_panic(&self, point: u8) -> bool {
        self.panic_at.load(Ordering::Relaxed) == point
            && self.panic_at.compare_exchange(point, 0, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    pub(in crate::apps::kv) fn set_group_leader(&self, node: u64) {
        self.group_leader.store(node, Ordering::Relaxed);
    }

    /// The node that leads shard 0's group (0: none known).
    pub(in crate::apps::kv) fn group_leader(&self) -> u64 {
        self.group_leader.load(Ordering::Relaxed)
    }

    /// A script a shard compiled, for the others' EVALSHA.
    pub(in crate::apps::kv) fn share_script(&self, sha: &str, body: &[u8]) {
        let mut scripts = self.scripts.lock().expect("scripts lock");
        if scripts.bodies.contains_key(sha) {
            return;
        }
        if scripts.bytes + body.len() > SHARED_SCRIPTS_BYTES_MAX {
            *scripts = SharedScripts::default();
        }
        scripts.bytes += body.len();
        scripts.bodies.insert(sha.to_owned(), body.to_vec());
    }

    /// The body of the script `sha`, if a shard compiled it.
    pub(in crate::apps::kv) fn shared_script(&self, sha: &str) -> Option<Vec<u8>> {
        self.scripts.lock().expect("scripts lock").bodies.get(sha).cloned()
    }

    /// SCRIPT FLUSH: no shard's script is shared any more.
    pub(in crate::apps::kv) fn forget_scripts(&self) {
        *self.scripts.lock().expect("scripts lock") = SharedScripts::default();
    }

    /// Whether shard `shard`'s clients subscribe to anything.
    pub(in crate::apps::kv) fn set_listening(&self, shard: u16, listening: bool) {
        self.listening[usize::from(shard)].store(listening, Ordering::Relaxed);
    }

    /// The shards other than `shard` whose clients subscribe to anything.
    pub(in crate::apps::kv) fn listening_elsewhere(&self, shard: u16) -> impl Iterator<Item = u16> + '_ {
        let others = self.listening.iter().enumerate().filter(move |(other, _)| *other != usize::from(shard));
        others.filter(|(_, listening)| listening.load(Ordering::Relaxed)).map(|(other, _)| other as u16)
    }

    /// Shard `shard` is busy with a script, or no longer (None).
    pub(in crate::apps::kv) fn set_busy(&self, shard: u16, busy: Option<Busy>) {
        self.busy[usize::from(shard)].store(busy.map_or(0, |b| b as u8), Ordering::Relaxed);
    }

    /// A shard other than `shard` that is busy with a script, and with what.
    pub(in crate::apps::kv) fn busy_elsewhere(&self, shard: u16) -> Option<(u16, Busy)> {
        self.busy.iter().enumerate().find_map(|(other, busy)| {
            let busy = match busy.load(Ordering::Relaxed) {
                1 => Busy::Eval,
                2 => Busy::Function,
                _ => return None,
            };
            (other != usize::from(shard)).then_some((other as u16, busy))
        })
    }

    /// Hands shard `shard` a link to adopt and nudges it; Err(fd) if its
    /// event loop has ended.
    pub(in crate::apps::kv) fn hand_over(&self, shard: u16, fd: OwnedFd) -> Result<(), OwnedFd> {
        let mut handed = self.handed[usize::from(shard)].lock().expect("handed lock");
        // Checked under the lock `leave` takes too: nothing is handed to a
        // shard after it took its last.
        if self.gone[usize::from(shard)].load(Ordering::SeqCst) {
            return Err(fd);
        }
        handed.push(fd);
        drop(handed);
        self.nudge(shard);
        Ok(())
    }

    /// Whether `shard`'s event loop has ended (`leave`).
    pub(in crate::apps::kv) fn is_gone(&self, shard: u16) -> bool {
        self.gone[usize::from(shard)].load(Ordering::SeqCst)
    }

    /// The links handed to `shard` since it last asked.
    pub(in crate::apps::kv) fn take_handed(&self, shard: u16) -> Vec<OwnedFd> {
        std::mem::take(&mut *self.handed[usize::from(shard)].lock().expect("handed lock"))
    }

    /// Shard `shard`'s figures, now (`Figure` order).
    pub(in crate::apps::kv) fn publish(&self, shard: u16, figures: [usize; FIGURES]) {
        for (slot, value) in self.figures[usize::from(shard)].iter().zip(figures) {
            slot.store(value, Ordering::Relaxed);
        }
    }

    /// Every shard's figures added, as last published.
    pub(in crate::apps::kv) fn totals(&self) -> [usize; FIGURES] {
        let mut totals = [0; FIGURES];
        for shard in &self.figures {
            for (total, slot) in totals.iter_mut().zip(shard) {
                *total += slot.load(Ordering::Relaxed);
            }
        }
        totals
    }

    /// One figure of shard `shard`, as last published.
    pub(in crate::apps::kv) fn figure(&self, shard: u16, figure: Figure) -> usize {
        self.figures[usize::from(shard)][figure as usize].load(Ordering::Relaxed)
    }

    /// The shards' count.
    pub(in crate::apps::kv) fn shards(&self) -> u16 {
        self.figures.len() as u16
    }

    /// The next SLOWLOG entry's id, of every shard's.
    pub(in crate::apps::kv) fn next_slowlog_id(&self) -> u64 {
        self.next_slowlog_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether shard `shard` has a MONITOR client.
    pub(in crate::apps::kv) fn set_monitoring(&self, shard: u16, monitoring: bool) {
        let (word, bit) = monitor_bit(shard);
        match monitoring {
            true => self.monitoring[word].fetch_or(bit, Ordering::Relaxed),
            false => self.monitoring[word].fetch_and(!bit, Ordering::Relaxed),
        };
    }

    /// The monitoring shards but `shard`, word by word.
    fn monitor_words_but(&self, shard: u16) -> [u64; MONITOR_WORDS] {
        let (own_word, own_bit) = monitor_bit(shard);
        std::array::from_fn(|word| {
            let mask = self.monitoring[word].load(Ordering::Relaxed);
            if word == own_word {
                mask & !own_bit
            } else {
                mask
            }
        })
    }

    /// Whether a shard other than `shard` has a MONITOR client (a few
    /// loads: asked for every command).
    pub(in crate::apps::kv) fn monitored_elsewhere(&self, shard: u16) -> bool {
        self.monitor_words_but(shard).iter().any(|&mask| mask != 0)
    }

    /// The shards other than `shard` with a MONITOR client.
    pub(in crate::apps::kv) fn monitoring_elsewhere(&self, shard: u16) -> impl Iterator<Item = u16> {
        let words = self.monitor_words_but(shard);
        (0..(MONITOR_WORDS * 64) as u16).filter(move |&i| words[usize::from(i / 64)] & (1 << (i % 64)) != 0)
    }

    /// A client connected to some shard (`left` when it goes).
    pub(in crate::apps::kv) fn joined(&self, id: u64) {
        self.clients.lock().expect("clients lock").insert(id, String::new());
    }

    /// Client `id`'s address, once its connection was accepted.
    pub(in crate::apps::kv) fn set_addr(&self, id: u64, addr: String) {
        if let Some(known) = self.clients.lock().expect("clients lock").get_mut(&id) {
            *known = addr;
        }
    }

    /// Client `id`'s address (empty if unknown).
    pub(in crate::apps::kv) fn addr_of(&self, id: u64) -> String {
        self.clients.lock().expect("clients lock").get(&id).cloned().unwrap_or_default()
    }

    pub(in crate::apps::kv) fn left(&self, id: u64) {
        self.clients.lock().expect("clients lock").remove(&id);
    }

    /// Whether client `id` is connected to any shard.
    pub(in crate::apps::kv) fn is_connected(&self, id: u64) -> bool {
        self.clients.lock().expect("clients lock").contains_key(&id)
    }

    /// The eventfd shard `shard`'s event loop polls (`EngineConfig::nudge_fd`).
    pub fn nudge_fd(&self, shard: u16) -> RawFd {
        self.nudges[usize::from(shard)].as_raw_fd()
    }

    /// Transactions get ids above `horizon` (every shard's, after recovery).
    pub fn start_after(&self, horizon: u64) {
        self.next_txid.fetch_max(horizon + 1, Ordering::SeqCst);
    }

    /// The next transaction's id.
    pub(in crate::apps::kv) fn take_txid(&self) -> u64 {
        self.next_txid.fetch_add(1, Ordering::SeqCst)
    }

    /// Shard `shard`'s event loop has ended: a coordinator waiting for it
    /// to park is told so instead of waiting forever.
    pub fn leave(&self, shard: u16) {
        let handed = {
            let mut handed = self.handed[usize::from(shard)].lock().expect("handed lock");
            self.gone[usize::from(shard)].store(true, Ordering::SeqCst);
            std::mem::take(&mut *handed)
        };
        // Closed: the shards that made them see their links end.
        drop(handed);
        self.publish(shard, [0; FIGURES]);
        self.set_busy(shard, None);
        let mailbox = &self.boxes[usize::from(shard)];
        let _slots = mailbox.slots.lock().expect("mailbox lock");
        mailbox.changed.notify_all();
    }

    pub(in crate::apps::kv) fn try_lock(&self) -> bool {
        self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    pub(in crate::apps::kv) fn unlock(&self) {
        let was = self.held.swap(false, Ordering::Release);
        assert!(was, "the transaction lock was held");
    }

    pub(in crate::apps::kv) fn post(&self, shard: u16, request: Request) {
        let mailbox = &self.boxes[usize::from(shard)];
        let mut slots = mailbox.slots.lock().expect("mailbox lock");
        assert!(slots.response.is_none(), "a response is taken before the next request");
        slots.requests.push_back(request);
        mailbox.changed.notify_all();
    }

    pub(in crate::apps::kv) fn nudge(&self, shard: u16) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write from our buffer to our eventfd.
        let written = unsafe { libc::write(self.nudge_fd(shard), one.as_ptr().cast(), one.len()) };
        // EAGAIN: the counter is full, so the shard is nudged already.
        debug_assert!(written == 8 || std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock);
    }

    /// A `Park` waiting first for `shard`, taken.
    pub(in crate::apps::kv) fn take_park(&self, shard: u16) -> bool {
        let mut slots = self.boxes[usize::from(shard)].slots.lock().expect("mailbox lock");
        match slots.requests.front() {
            Some(Request::Park) => {
                slots.requests.pop_front();
                true
            }
            _ => false,
        }
    }

    pub(in crate::apps::kv) fn wait_request(&self, shard: u16) -> Request {
        let mailbox = &self.boxes[usize::from(shard)];
        let mut slots = spin_until(mailbox, |slots| !slots.requests.is_empty());
        loop {
            if let Some(request) = slots.requests.pop_front() {
                return request;
            }
            slots = mailbox.changed.wait(slots).expect("mailbox lock");
        }
    }

    pub(in crate::apps::kv) fn respond(&self, shard: u16, response: Response) {
        let mailbox = &self.boxes[usize::from(shard)];
        let mut slots = mailbox.slots.lock().expect("mailbox lock");
        slots.response = Some(response);
        mailbox.changed.notify_all();
    }

    pub(in crate::apps::kv) fn wait_response(&self, shard: u16) -> Response {
        let mailbox = &self.boxes[usize::from(shard)];
        let mut slots = spin_until(mailbox, |slots| slots.response.is_some());
        loop {
            if let Some(response) = slots.response.take() {
                return response;
            }
            if self.gone[usize::from(shard)].load(Ordering::SeqCst) {
                return Response::Gone;
            }
            slots = mailbox.changed.wait(slots).expect("mailbox lock");
        }
    }

    /// Has parked `shard` watch `keys` (`state::watch_id`s) for a
    /// connection of another shard: its `flag` is set when one is written
    /// there (WATCH), and with `wake`, that shard is woken too (a blocked
    /// pop).
    pub(in crate::apps::kv) fn watch_on(
        &self,
        shard: u16,
        keys: Vec<Vec<u8>>,
        (flag, wake): (std::sync::Weak<AtomicBool>, Option<u16>),
    ) {
        self.post(shard, Request::Watch { keys, flag, wake });
        match self.wait_response(shard) {
            Response::Reply { .. } => {}
            _ => unreachable!("a shard answers Watch with Reply"),
        }
    }
}

/// Polls a mailbox this many times before sleeping on it: a shard parked
/// for a command, or its coordinator, is answered within microseconds
/// when the other side runs on another core, and a futex wake costs more.
const SPINS_BEFORE_SLEEP: u32 = 2_000;

/// The mailbox's lock, once `ready` holds or after `SPINS_BEFORE_SLEEP`
/// polls (the caller then sleeps on the condition variable).
fn spin_until(mailbox: &Mailbox, ready: impl Fn(&Slots) -> bool) -> std::sync::MutexGuard<'_, Slots> {
    for _ in 0..SPINS_BEFORE_SLEEP {
        if let Ok(slots) = mailbox.slots.try_lock() {
            if ready(&slots) {
                return slots;
            }
        }
        std::hint::spin_loop();
    }
    mailbox.slots.lock().expect("mailbox lock")
}
