//! Any node serves any client: on a follower, a client's connection is
//! relayed to the leader, byte for byte, over a link of its own to the
//! leader's peer port (which the leader serves as one of its clients), so
//! every command, its connection state (SELECT, MULTI, subscriptions) and
//! its linearizable reads are the leader's. The bytes move zero copy: the
//! pool buffers they were received into are sent on from there.
//!
//! A client whose first command is READONLY is served by the follower
//! itself instead: possibly stale reads, and no writes (Redis's replica
//! reply, READONLY). Commands a client sends as it connects (AUTH, HELLO,
//! SELECT, every CLIENT subcommand, READWRITE, RESET, PING, ECHO,
//! COMMAND: redis-cli and client libraries, whose handshakes grow, such as
//! redis-py 8's `CLIENT MAINT_NOTIFICATIONS`), questions about this node
//! (ROLE, INFO) and commands this server does not know are answered here
//! before the route is decided; the first data command decides it, and
//! what they set up (authenticated, protocol, database, name) travels
//! with the client in its RELAY frame. HTTP clients are relayed the same way (reads and writes:
//! both are the leader's), except a connection whose first request is
//! `GET /metrics`: this node's own figures.
//!
//! Owns: the relays (`Relay`): which client and which link, and the bytes
//! on their way in each direction; they, and a connection's `Route`, are
//! kept in `kept/forward.rs`.
//!
//! Invariants: a relay's id is never given to another while the relay,
//! or its dial, lives (a reply reaches only the client it answers); each
//! relayed extent carries one buffer reference of the
//! relay's until it is queued on the other connection (which then owns
//! it); when either side closes, so does the other, and the relay's
//! references are given back.

use std::collections::VecDeque;

use crate::apps::kv::kept::forward::{Chunk, Relay, Route, TO_CLIENT, TO_LEADER};
use crate::apps::kv::state::{KvConn, KvServer};
use crate::io::app::{ConnToken, Dial, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;

/// Dial ids of relay links start here (peer links use node ids).
pub const RELAY_DIAL_BASE: usize = 1 << 19;
const RELAY_DIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

impl KvServer {
    /// Decides where a client's commands run, before its first one: here
    /// (a leader; or READONLY), or on the leader through a relay.
    pub(in crate::apps::kv) fn route(&mut self, conn: &mut KvConn, stream: &Stream) -> Route {
        if conn.route != Route::Undecided {
            return conn.route;
        }
        // Another shard's link runs its commands here (on a leader, or
        // a follower's READONLY clients'): never relayed as a client.
        let link = conn.listener == crate::apps::kv::LISTENER_LINK_IN;
        // (On a follower node, only READONLY clients' commands come on
        // links: the others are relayed to the leader whole.)
        conn.reads_here |= link;
        let Some(replica) = self.replica.as_ref().filter(|_| !link) else {
            conn.route = Route::Local;
            return Route::Local;
        };
        let first = if conn.listener == crate::apps::kv::LISTENER_HTTP {
            first_request(stream)
        } else {
            first_command_name(stream)
                .map(|name| first_route(&name, self.command_index.find(name.as_bytes()).is_some()))
        };
        match first {
            _ if replica.is_leader() => {}
            Some(First::Setup) => return Route::SetupHere,
            Some(First::Local) => conn.reads_here = true,
            Some(First::Other) => {
                return self.relay(conn, replica.config.members.get(&replica.leader_id()).copied());
            }
            None => return Route::Undecided,
        }
        conn.route = Route::Local;
        Route::Local
    }

    /// Relays `conn` to the leader at `addr` (None: no leader known yet).
    fn relay(&mut self, conn: &mut KvConn, addr: Option<std::net::SocketAddr>) -> Route {
        let Some(addr) = addr else {
            // No leader yet: the client waits (woken by the next tick).
            self.relays.waiting.push(conn.token);
            return Route::Undecided;
        };
        // An id in use is never given again (a reply must never reach
        // another client): a relay keeps its id until both its sides,
        // and its dial, are done. Connections are far fewer than ids.
        let id = loop {
            let id = RELAY_DIAL_BASE + self.relays.next % RELAY_DIAL_BASE;
            self.relays.next += 1;
            if !self.relays.relays.contains_key(&id) {
                break id;
            }
        };
        self.relays.relays.insert(
            id,
            Relay {
                client: conn.token,
                http: conn.listener == crate::apps::kv::LISTENER_HTTP,
                state: crate::replica::wire::ClientState {
                    authenticated: conn.authenticated,
                    resp3: conn.encoder.resp3,
                    db: conn.db,
                    name: conn.name.clone(),
                },
                link: None,
                queues: [VecDeque::new(), VecDeque::new()],
                queued: [0; 2],
                closed: false,
                orphaned: false,
            },
        );
        self.relays.dials.push(Dial { id, addr, timeout: RELAY_DIAL_TIMEOUT });
        conn.route = Route::Relayed(id);
        conn.route
    }

    /// A relayed client's input: taken (zero copy) for the link.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::apps::kv) fn relay_client(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        id: usize,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> Progress {
        let Some(relay) = self.relays.relays.get_mut(&id) else {
            return Progress { requests: 0, close: true, more: false, waits: false };
        };
        // A closed relay only delivers what the leader sent before.
        let input = !relay.closed;
        if relay.shuttle(TO_CLIENT, input, pool, buffers, stream, out, release) {
            // The leader's replies held back for room, or new requests.
            self.relays.wake.extend(relay.link);
        }
        // Requests left in the stream wait for room on the link.
        Progress { requests: 0, close: relay.closed, more: false, waits: !stream.is_empty() }
    }

    /// A relay link: the client's bytes go to the leader; the leader's
    /// replies (this link's input) go back to the client.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::apps::kv) fn relay_link(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        id: usize,
        hello_sent: &mut bool,
        stream: &mut Stream,
        out: &mut OutQueue,
        release: &mut Release<'_>,
    ) -> Progress {
        let Some(relay) = self.relays.relays.get_mut(&id) else {
            return Progress { requests: 0, close: true, more: false, waits: false };
        };
        if !*hello_sent {
            *hello_sent = true;
            let replica = self.replica.as_ref().expect("replicated");
            crate::replica::wire::relay_hello(
                out.bytes(),
                replica.config.group_id,
                replica.config.node_id,
                &replica.config.secret,
                relay.http,
                &relay.state,
            );
        }
        if relay.shuttle(TO_LEADER, true, pool, buffers, stream, out, release) {
            // The client's requests held back for room, or new replies.
            self.relays.wake.push(relay.client);
        }
        // Replies left in the stream wait for room toward the client.
        Progress { requests: 0, close: relay.closed, more: false, waits: !stream.is_empty() }
    }

    /// A relay's link connected.
    pub(in crate::apps::kv) fn relay_linked(&mut self, id: usize, token: ConnToken) -> bool {
        let Some(relay) = self.relays.relays.get_mut(&id) else { return false };
        relay.link = Some(token);
        self.relays.wake.push(token);
        true
    }

    /// Either side of a relay closed (or its dial failed): the other side
    /// closes once what it has is sent.
    pub(in crate::apps::kv) fn relay_closed(&mut self, buffers: &mut Buffers, id: usize, client_side: bool) {
        let Some(relay) = self.relays.relays.get_mut(&id) else { return };
        if relay.closed {
            // The second side: the relay ends.
            let relay = self.relays.relays.remove(&id).expect("checked");
            for chunk in relay.queues.into_iter().flatten() {
                if let Chunk::Pool(extents) = chunk {
                    buffers.release_extents(&extents).expect("a relay's references");
                }
            }
            return;
        }
        relay.closed = true;
        let other = if client_side { relay.link } else { Some(relay.client) };
        if let Some(token) = other {
            self.relays.wake.push(token);
        } else {
            // The client left while the link is still being dialed: what
            // it sent is dropped, and the relay (its id) stays until the
            // dial ends, so that no later relay given the same id could
            // receive that link.
            for chunk in relay.queues.iter_mut().flat_map(std::mem::take) {
                if let Chunk::Pool(extents) = chunk {
                    buffers.release_extents(&extents).expect("a relay's references");
                }
            }
            relay.queued = [0; 2];
            relay.orphaned = true;
        }
    }

    /// A relay's dial failed: its client closes (and its abandon ends the
    /// relay, giving back what it holds), or, if it left already, the
    /// relay ends.
    pub(in crate::apps::kv) fn relay_failed(&mut self, id: usize) {
        let Some(relay) = self.relays.relays.get_mut(&id) else { return };
        if relay.orphaned {
            self.relays.relays.remove(&id);
            return;
        }
        relay.closed = true;
        self.relays.wake.push(relay.client);
    }

    /// Clients waiting for a leader to relay to: served again.
    pub(in crate::apps::kv) fn relay_retry_waiting(&mut self) {
        let waiting = std::mem::take(&mut self.relays.waiting);
        self.relays.wake.extend(waiting);
    }

    pub(in crate::apps::kv) fn relay_dials(&mut self, dials: &mut Vec<Dial>) {
        dials.append(&mut self.relays.dials);
    }

    pub(in crate::apps::kv) fn relay_wakeups(&mut self, wake: &mut Vec<ConnToken>) {
        wake.append(&mut self.relays.wake);
    }
}

/// What a connection's first command says about its route.
enum First {
    /// A connection-setup command (AUTH, HELLO, SELECT, every CLIENT
    /// subcommand, PING, ECHO, COMMAND, READWRITE, RESET), a question
    /// about this node (ROLE, INFO), or a command this server does not
    /// know (answered with Redis's error): answered here; the next command
    /// decides. What it set up goes with the client if relayed.
    Setup,
    /// READONLY: served here from now on.
    Local,
    /// A data command (or one whose state is the leader's: MULTI, WATCH,
    /// SUBSCRIBE, scripts): the connection is relayed from it on.
    Other,
}

/// Commands answered by the node a client connected to, before its route
/// is decided: what client libraries send as they connect (redis-py 8's
/// RESP3 handshake sends `CLIENT MAINT_NOTIFICATIONS`, others `CLIENT
/// SETINFO`, `CLIENT TRACKING`...), and questions about this node.
const SETUP_COMMANDS: [&str; 12] =
    ["AUTH", "HELLO", "SELECT", "CLIENT", "PING", "ECHO", "COMMAND", "ROLE", "INFO", "READWRITE", "RESET", "QUIT"];

/// The first command's name, RESP or inline, upper case; None until it
/// has arrived whole.
fn first_command_name(stream: &Stream) -> Option<String> {
    const WINDOW_BYTES: usize = 128;
    let name = command_name_in(stream, WINDOW_BYTES);
    // A name that does not fit the window is no command of this server's
    // (answered here, with Redis's error).
    name.or((stream.len() >= WINDOW_BYTES).then(String::new))
}

fn command_name_in(stream: &Stream, window_bytes: usize) -> Option<String> {
    let mut head = Vec::new();
    stream.for_each_slice(stream.len().min(window_bytes), |s| head.extend_from_slice(s));
    let text = String::from_utf8_lossy(&head).to_ascii_uppercase();
    match text.strip_prefix('*') {
        // *N\r\n$len\r\nNAME\r\n: the name is whole once its CRLF came.
        Some(rest) => {
            let mut parts = rest.split("\r\n");
            let (_count, _len) = (parts.next()?, parts.next()?);
            let name = parts.next()?;
            parts.next()?;
            Some(name.to_string())
        }
        None => {
            let line = text.split_once('\n').map(|(line, _)| line)?;
            line.split_whitespace().next().map(str::to_string).or(Some(String::new()))
        }
    }
}

/// Where a first command takes its connection; `known` says whether this
/// server has a command of that name.
fn first_route(name: &str, known: bool) -> First {
    match name {
        "READONLY" => First::Local,
        _ if !known || SETUP_COMMANDS.contains(&name) => First::Setup,
        _ => First::Other,
    }
}

/// What an HTTP connection's first request says about its route: `GET
/// /metrics` is this node's own; anything else is the leader's.
fn first_request(stream: &Stream) -> Option<First> {
    const METRICS: &[u8] = b"GET /metrics ";
    let mut head = Vec::new();
    stream.for_each_slice(stream.len().min(METRICS.len()), |s| head.extend_from_slice(s));
    if head.len() < METRICS.len() && METRICS.starts_with(&head) {
        return None;
    }
    Some(if head == METRICS { First::Local } else { First::Other })
}
