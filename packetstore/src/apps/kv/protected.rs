//! Redis's protected mode (Redis 7.0's `clientAcceptHandler` and
//! `islocalClient`, networking.c): while it is on (`--protected-mode yes`,
//! the default; CONFIG SET protected-mode) and no password is set, a
//! client whose address is not the loopback's (127.0.0.1, ::1) gets
//! Redis's `-DENIED` error as soon as it connects and is disconnected.
//! The HTTP port is guarded the same way (403, the same explanation).
//! Peer links (the group's own port, authenticated by its secret) are not
//! clients and are not refused.
//!
//! Invariant: a refused connection runs no request: it is marked when
//! accepted, and its first turn answers the refusal and closes it.

use std::net::{IpAddr, SocketAddr};

use crate::apps::kv::state::{KvConn, KvServer, LISTENER_HTTP, LISTENER_RESP};
use crate::io::app::Progress;
use crate::io::outq::OutQueue;
use crate::proto::http;

/// Redis 7.0.15's reply, word for word (networking.c).
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no \
password is set for the default user. In this mode connections are only accepted from the loopback interface. \
If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just \
disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by \
connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly \
accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you \
can just disable the protected mode by editing the Redis configuration file, and setting the protected mode \
option to 'no', and then restarting the server. 3) If you started the server manually just for testing, \
restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for the server to start accepting connections from \
the outside.\r\n";

/// Redis's `islocalClient`: the peer is 127.0.0.1 or ::1 (an IPv4
/// client of a dual-stack listener, ::ffff:127.0.0.1, too).
pub(super) fn is_local(peer: SocketAddr) -> bool {
    let ip = match peer.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    ip == IpAddr::from([127, 0, 0, 1]) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

impl KvServer {
    /// Whether a connection just accepted from `peer` is refused by
    /// protected mode; if so, it is marked and woken to be told.
    pub(super) fn protected_mode_refuses(&mut self, conn: &mut KvConn, peer: Option<SocketAddr>) -> bool {
        let cluster_port = self.config.settings.cluster.as_ref().is_some_and(|view| view.listener == conn.listener);
        let client =
            (conn.listener == LISTENER_RESP || conn.listener == LISTENER_HTTP || cluster_port) && conn.peer.is_none();
        let open = self.config.settings.protected_mode && self.config.requirepass.is_none();
        // A peer address the kernel did not give is not known to be local.
        if !client || !open || peer.is_some_and(is_local) {
            return false;
        }
        conn.denied = true;
        self.stats.denied += 1;
        self.clients.wake.push(conn.token);
        true
    }

    /// A refused connection's only turn: the refusal, then the close.
    pub(super) fn deny(&mut self, conn: &KvConn, out: &mut OutQueue) -> Progress {
        if conn.listener == LISTENER_HTTP {
            let text = DENIED.trim_start_matches("-DENIED ").trim_end();
            http::respond(out.bytes(), 403, &[], format!("{text}\n").as_bytes(), false);
        } else {
            out.push(DENIED.as_bytes());
        }
        Progress { requests: 0, close: true, more: false, waits: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_loopback_addresses_redis_names_are_local() {
        for local in ["127.0.0.1:5", "[::1]:5", "[::ffff:127.0.0.1]:5"] {
            assert!(is_local(local.parse().unwrap()), "{local}");
        }
        for remote in ["10.0.0.1:5", "127.0.0.2:5", "[fe80::1]:5", "0.0.0.0:5"] {
            assert!(!is_local(remote.parse().unwrap()), "{remote}");
        }
        assert!(DENIED.starts_with("-DENIED Redis is running in protected mode") && DENIED.ends_with(".\r\n"));
        assert!(!DENIED[..DENIED.len() - 2].contains(['\r', '\n']), "one line");
    }
}
