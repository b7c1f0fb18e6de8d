//! The servers' listeners, bound through one routine that waits a
//! bounded time (`--bind-timeout`) for an address in use, and the error
//! that names the address and what holds it; a warning for an address
//! reachable from the network without authentication.
//!
//! Invariant: `serve` and `wal` bind every listener through `bind` before
//! they create, zero-fill or even open a pool, so a server that cannot
//! listen leaves no file behind and replays nothing.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::time::Duration;

/// Binds a listener on `addr` (`what` names it in messages), waiting up to
/// `timeout` while the address is in use, with one log line when it starts
/// waiting. On failure the error names the address and, when it is in use,
/// the processes holding it.
pub fn bind(
    addr: SocketAddr,
    what: &str,
    reuse_port: bool,
    nonblocking: bool,
    timeout: Duration,
) -> anyhow::Result<OwnedFd> {
    let on_wait = || {
        tracing::warn!(
            "{addr} ({what}) is in use; trying again for up to {:.1} s (--bind-timeout): a server killed a moment ago holds its port briefly",
            timeout.as_secs_f64()
        )
    };
    // Another program on the address (a Redis on 6379) will not let go:
    // said at once. A packetstore holding it may be one stopping.
    match crate::io::net::listen_retrying(addr, reuse_port, nonblocking, Duration::ZERO, || {}) {
        Err(error) if error.raw_os_error() == Some(libc::EADDRINUSE) => {
            if let Some(others) = other_programs_on(addr) {
                anyhow::bail!(
                    "cannot listen on {addr} ({what}): the address is in use by {others}, another program; give \
                     this server another address (--resp, --http)"
                );
            }
            // Said once, here: the holder may be gone by the next try.
            on_wait();
        }
        result => {
            return result.map_err(|e| anyhow::Error::new(e).context(format!("cannot listen on {addr} ({what})")))
        }
    }
    match crate::io::net::listen_retrying(addr, reuse_port, nonblocking, timeout, || {}) {
        Ok(fd) => Ok(fd),
        Err(error) if error.raw_os_error() == Some(libc::EADDRINUSE) => Err(anyhow::anyhow!(
            "cannot listen on {addr} ({what}): the address is still in use after {:.1} s (--bind-timeout); {}",
            timeout.as_secs_f64(),
            holder_text(addr)
        )),
        Err(error) => Err(anyhow::Error::new(error).context(format!("cannot listen on {addr} ({what})"))),
    }
}

/// The processes listening on `addr`, in words, when they are all some
/// program other than packetstore (None: none found, or a packetstore).
fn other_programs_on(addr: SocketAddr) -> Option<String> {
    let holders = crate::io::net::holders(&crate::io::net::listeners_on(addr));
    let foreign = !holders.is_empty() && holders.iter().all(|h| program_name(&h.command) != "packetstore");
    foreign.then(|| holders.iter().map(|h| format!("pid {} ({})", h.pid, h.command)).collect::<Vec<_>>().join(", "))
}

/// A program's name: its command line's first word, less the path.
fn program_name(command: &str) -> &str {
    command.split_whitespace().next().and_then(|word| word.rsplit('/').next()).unwrap_or("")
}

/// Who listens on `addr`, in words.
fn holder_text(addr: SocketAddr) -> String {
    let inodes = crate::io::net::listeners_on(addr);
    if inodes.is_empty() {
        return "no listening socket on it was found in /proc/net/tcp (another network namespace?)".into();
    }
    let holders = crate::io::net::holders(&inodes);
    if holders.is_empty() {
        return "its listening socket belongs to no process (one still being closed by the kernel after its \
                process died, or one in another PID namespace)"
            .into();
    }
    let named: Vec<String> = holders.iter().map(|h| format!("pid {} ({})", h.pid, h.command)).collect();
    format!("held by {}", named.join(", "))
}

/// Whether clients beyond this machine can reach a listener on `addr`.
fn reachable_from_the_network(addr: SocketAddr) -> bool {
    let ip = match addr.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    !ip.is_loopback()
}

/// `serve`: a warning per listener that the network can reach without a
/// password (`--requirepass` guards both ports). Protected mode (on unless
/// `--protected-mode no`) refuses clients from other hosts meanwhile.
pub fn warn_serve_exposure(http: SocketAddr, resp: SocketAddr, requirepass: bool, protected_mode: bool) {
    for (what, addr) in [("HTTP", http), ("the Redis protocol", resp)] {
        if !reachable_from_the_network(addr) || requirepass {
            continue;
        }
        if protected_mode {
            tracing::warn!(
                "{what} listens on {addr}, reachable from the network, without --requirepass: protected mode \
                 refuses every client from another host (set --requirepass, or --protected-mode no on a \
                 trusted network)"
            );
        } else {
            tracing::warn!(
                "{what} listens on {addr}, reachable from the network, without --requirepass and with \
                 --protected-mode no: anyone who can connect may read and write every key"
            );
        }
    }
}

/// `serve` in a group: a loud warning (on stdout with the start-up lines,
/// and in the log) when the peer port is reachable from the network
/// without `--peer-secret`: a peer link carries every write and sends the
/// group entries, so anyone who can connect could join the group's traffic.
/// Returns the warning, if any.
pub fn warn_peer_exposure(peer: SocketAddr, secret: bool) -> Option<String> {
    if !reachable_from_the_network(peer) || secret {
        return None;
    }
    let text = format!(
        "WARNING: INSECURE GROUP: the peer port {peer} is reachable from the network without --peer-secret: \
         anyone who can connect can read every write and send this node the group's entries. Give every node \
         the same --peer-secret (docs/operations.md, Security), or keep the peer port on a network only the \
         group's nodes reach"
    );
    println!("{text}");
    tracing::warn!("{text}");
    Some(text)
}

/// `wal`: a warning when the network can reach it (it has no
/// authentication).
pub fn warn_wal_exposure(listen: SocketAddr) {
    if reachable_from_the_network(listen) {
        tracing::warn!(
            "listening on {listen}, reachable from the network; the WAL server has no authentication: anyone \
             who can connect may append to the log and read it"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_not_reachable_from_the_network() {
        for (text, reachable) in
            [("127.0.0.1:1", false), ("[::1]:1", false), ("[::ffff:127.0.0.1]:1", false), ("0.0.0.0:1", true)]
        {
            assert_eq!(reachable_from_the_network(text.parse().unwrap()), reachable, "{text}");
        }
        assert!(reachable_from_the_network("[::]:1".parse().unwrap()));
        assert!(reachable_from_the_network("192.168.1.2:1".parse().unwrap()));
    }
}
