//! The units a server's options are written in: sizes ("64MiB", binary
//! units), durations ("250ms", "10s") and listening addresses ("HOST:PORT",
//! resolved once). The command line's parser and the configuration file
//! both read through these, so an option means the same wherever it is
//! written.
//!
//! Invariant: a `Size` keeps the text it was written as beside its bytes,
//! so that a message about an option quotes what the user wrote.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{bail, Context};

/// Parses "4096", "64KiB", "64K", "1GiB", "2g": binary units.
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().with_context(|| format!("'{text}' is not a size (try 64MiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => bail!("unknown size unit '{other}' in '{text}' (use KiB, MiB, GiB or TiB)"),
    };
    number.checked_mul(1 << shift).with_context(|| format!("size '{text}' overflows"))
}

/// Parses "250ms", "10s", "2m" (a bare number is seconds).
pub fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().with_context(|| format!("'{text}' is not a duration (try 10s)"))?;
    let ms_per_unit: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" | "min" => 60_000,
        other => bail!("unknown duration unit '{other}' in '{text}' (use ms, s or m)"),
    };
    let ms = number.checked_mul(ms_per_unit).with_context(|| format!("duration '{text}' overflows"))?;
    Ok(Duration::from_millis(ms))
}

/// A size as written ("64MiB") and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    pub bytes: u64,
    text: String,
}

impl Size {
    /// Parses `text` as `parse_size` does, keeping it for messages.
    pub fn parse(text: &str) -> anyhow::Result<Size> {
        Ok(Size { bytes: parse_size(text)?, text: text.trim().to_string() })
    }

    /// `mib` MiB, written "{mib}MiB".
    pub fn mib(mib: u64) -> Size {
        Size { bytes: mib << 20, text: format!("{mib}MiB") }
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999TiB").is_err());
        let size = Size::parse(" 4MiB").unwrap();
        assert_eq!((size.bytes, size.to_string()), (4 << 20, "4MiB".to_string()));
        assert_eq!(Size::mib(129).to_string(), "129MiB");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("1 fortnight").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("99999999999999999m").is_err());
    }

    #[test]
    fn addresses_and_host_names() {
        assert_eq!(parse_address("127.0.0.1:8080").unwrap(), "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert_eq!(parse_address("[::1]:6380").unwrap(), "[::1]:6380".parse::<SocketAddr>().unwrap());
        assert_eq!(parse_address("localhost:8080").unwrap(), "127.0.0.1:8080".parse::<SocketAddr>().unwrap());
        assert!(parse_address("localhost").unwrap_err().contains("HOST:PORT"));
        assert!(parse_address("localhost:99999").unwrap_err().contains("HOST:PORT"));
        assert!(parse_address("no-such-host.invalid:80").unwrap_err().contains("cannot resolve"));
    }
}
