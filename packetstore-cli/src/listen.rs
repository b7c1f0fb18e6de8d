//! The servers' listening addresses: `--http`, `--resp` and `--listen`
//! parsed (host names resolved), bound through one routine that waits a
//! bounded time (`--bind-timeout`) for an address in use, and the error
//! that names the address and what holds it; a warning for an address
//! reachable from the network without authentication.
//!
//! Invariant: `serve` and `wal` bind every listener through `bind` before
//! they create, zero-fill or even open a pool, so a server that cannot
//! listen leaves no file behind and replays nothing.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::time::Duration;

use anyhow::Context;

/// The longest `--bind-timeout` accepted.
pub const BIND_TIMEOUT_MAX: Duration = Duration::from_secs(3600);

/// How the servers bind, shared by `serve` and `wal`.
#[derive(clap::Args, Clone, Debug)]
pub struct BindArgs {
    /// How long to keep trying a listening address that is in use before
    /// giving up (at most 1h; 0: do not wait). A server killed a moment ago
    /// may hold its port briefly after it has been reaped (its io_uring
    /// closes the socket afterwards), so a supervisor's immediate restart
    /// waits here instead of failing. The error then names the holder.
    #[arg(long, default_value = "10s")]
    pub bind_timeout: String,
}

impl BindArgs {
    pub fn timeout(&self) -> anyhow::Result<Duration> {
        let timeout = crate::options::parse_duration(&self.bind_timeout).context("--bind-timeout")?;
        anyhow::ensure!(timeout <= BIND_TIMEOUT_MAX, "--bind-timeout must be at most 1h");
        Ok(timeout)
    }
}

/// A listening address: `IP:PORT`, `[IPv6]:PORT` or `HOST:PORT`. A host
/// name resolves to its first IPv4 address, else its first address (one
/// listener per flag, as clients connect to `localhost` over IPv4 first).
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if text.rsplit_once(':').is_none_or(|(_, port)| port.parse::<u16>().is_err()) {
        return Err(format!("'{text}' is not HOST:PORT (127.0.0.1:8080, localhost:8080, [::1]:8080)"));
    }
    let resolved: Vec<SocketAddr> =
        text.to_socket_addrs().map_err(|error| format!("cannot resolve '{text}': {error}"))?.collect();
    resolved
        .iter()
        .find(|addr| addr.is_ipv4())
        .or(resolved.first())
        .copied()
        .ok_or_else(|| format!("'{text}' resolves to no address"))
}

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
    match packetstore::io::net::listen_retrying(addr, reuse_port, nonblocking, Duration::ZERO, || {}) {
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
    match packetstore::io::net::listen_retrying(addr, reuse_port, nonblocking, timeout, || {}) {
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
    let holders = packetstore::io::net::holders(&packetstore::io::net::listeners_on(addr));
    let foreign = !holders.is_empty() && holders.iter().all(|h| program_name(&h.command) != "packetstore");
    foreign.then(|| holders.iter().map(|h| format!("pid {} ({})", h.pid, h.command)).collect::<Vec<_>>().join(", "))
}

/// A program's name: its command line's first word, less the path.
fn program_name(command: &str) -> &str {
    command.split_whitespace().next().and_then(|word| word.rsplit('/').next()).unwrap_or("")
}

/// Who listens on `addr`, in words.
fn holder_text(addr: SocketAddr) -> String {
    let inodes = packetstore::io::net::listeners_on(addr);
    if inodes.is_empty() {
        return "no listening socket on it was found in /proc/net/tcp (another network namespace?)".into();
    }
    let holders = packetstore::io::net::holders(&inodes);
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
    fn addresses_and_host_names() {
        assert_eq!(parse_address("127.0.0.1:8080").unwrap(), "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert_eq!(parse_address("[::1]:6380").unwrap(), "[::1]:6380".parse::<SocketAddr>().unwrap());
        assert_eq!(parse_address("localhost:8080").unwrap(), "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert!(parse_address("localhost").unwrap_err().contains("HOST:PORT"));
        assert!(parse_address("localhost:99999").unwrap_err().contains("HOST:PORT"));
        assert!(parse_address("no-such-host.invalid:80").unwrap_err().contains("cannot resolve"));
    }

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
