//! Which frames the switch logs: every frame, or those matching one of a
//! list of rules. A rule is a conjunction of fields, written
//! `field=value[,field=value...]`:
//!
//! | field       | matches                                               |
//! |-------------|-------------------------------------------------------|
//! | `in`        | the ingress port's name                               |
//! | `ethertype` | the EtherType (after one 802.1Q tag), e.g. `0x0806`   |
//! | `ip`        | IPv4 source or destination, `10.0.0.1` or `10.0.0.0/24`; IPv6 exact |
//! | `l4port`    | TCP or UDP source or destination port (IPv4 and IPv6) |
//!
//! Invariant: matching reads only the frame's bytes within its length; a
//! truncated header matches no field that needs it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Rules a policy holds at most, and fields a rule.
pub const RULES_MAX: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Ingress(String),
    EtherType(u16),
    Ipv4 { network: u32, mask: u32 },
    Ipv6(Ipv6Addr),
    L4Port(u16),
}

/// A conjunction of fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule(Vec<Field>);

/// Every frame, or the frames matching any rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    All,
    Rules(Vec<Rule>),
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;

impl Rule {
    /// Parses `field=value[,field=value...]`.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let fields = text.split(',').map(parse_field).collect::<Result<Vec<_>, _>>()?;
        if fields.is_empty() {
            return Err("an empty rule".into());
        }
        Ok(Rule(fields))
    }

    fn matches(&self, frame: &[u8], ingress: &str) -> bool {
        let parsed = Parsed::of(frame);
        self.0.iter().all(|field| match field {
            Field::Ingress(name) => name == ingress,
            Field::EtherType(value) => parsed.ethertype == Some(*value),
            Field::Ipv4 { network, mask } => {
                parsed.ips.iter().any(|ip| matches!(ip, IpAddr::V4(a) if u32::from(*a) & mask == *network))
            }
            Field::Ipv6(address) => parsed.ips.iter().any(|ip| matches!(ip, IpAddr::V6(a) if a == address)),
            Field::L4Port(port) => parsed.ports.contains(port),
        })
    }
}

fn parse_field(text: &str) -> Result<Field, String> {
    let (name, value) = text.split_once('=').ok_or_else(|| format!("{text:?} is not field=value"))?;
    let bad = |what: &str| format!("{name}={value}: {what}");
    match name {
        "in" if !value.is_empty() => Ok(Field::Ingress(value.to_string())),
        "ethertype" => {
            let digits = value.strip_prefix("0x").unwrap_or(value);
            u16::from_str_radix(digits, 16).map(Field::EtherType).map_err(|_| bad("not a 16-bit hex number"))
        }
        "ip" => parse_ip(value).ok_or_else(|| bad("not an IPv4 address, IPv4 prefix or IPv6 address")),
        "l4port" => value.parse().map(Field::L4Port).map_err(|_| bad("not a port number")),
        _ => Err(format!("unknown field {name:?} (in, ethertype, ip, l4port)")),
    }
}

fn parse_ip(value: &str) -> Option<Field> {
    if let Ok(address) = value.parse::<Ipv6Addr>() {
        return Some(Field::Ipv6(address));
    }
    let (address, length) = match value.split_once('/') {
        Some((address, length)) => (address, length.parse::<u32>().ok().filter(|&l| l <= 32)?),
        None => (value, 32),
    };
    let address = u32::from(address.parse::<Ipv4Addr>().ok()?);
    let mask = if length == 0 { 0 } else { u32::MAX << (32 - length) };
    Some(Field::Ipv4 { network: address & mask, mask })
}

impl Policy {
    /// The policy of `rules` (none: every frame).
    pub fn from_rules(rules: &[String]) -> Result<Policy, String> {
        if rules.is_empty() {
            return Ok(Policy::All);
        }
        if rules.len() > RULES_MAX {
            return Err(format!("{} rules exceed {RULES_MAX}", rules.len()));
        }
        Ok(Policy::Rules(rules.iter().map(|r| Rule::parse(r)).collect::<Result<_, _>>()?))
    }

    /// Whether `frame`, received on the port named `ingress`, is logged.
    pub fn logs(&self, frame: &[u8], ingress: &str) -> bool {
        match self {
            Policy::All => true,
            Policy::Rules(rules) => rules.iter().any(|rule| rule.matches(frame, ingress)),
        }
    }
}

/// What the matcher reads from a frame's headers.
#[derive(Default)]
struct Parsed {
    ethertype: Option<u16>,
    ips: Vec<IpAddr>,
    ports: Vec<u16>,
}

fn be16(frame: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?))
}

impl Parsed {
    fn of(frame: &[u8]) -> Parsed {
        let mut parsed = Parsed::default();
        let Some(mut ethertype) = be16(frame, 12) else { return parsed };
        let mut at = 14;
        if ethertype == ETHERTYPE_VLAN {
            let Some(inner) = be16(frame, 16) else { return parsed };
            ethertype = inner;
            at = 18;
        }
        parsed.ethertype = Some(ethertype);
        let l4 = match ethertype {
            ETHERTYPE_IPV4 => parsed.ipv4(frame, at),
            ETHERTYPE_IPV6 => parsed.ipv6(frame, at),
            _ => None,
        };
        if let Some((protocol, at)) = l4 {
            if protocol == PROTO_TCP || protocol == PROTO_UDP {
                parsed.ports.extend(be16(frame, at));
                parsed.ports.extend(be16(frame, at + 2));
            }
        }
        parsed
    }

    /// Reads the addresses; returns the protocol and where its header starts.
    fn ipv4(&mut self, frame: &[u8], at: usize) -> Option<(u8, usize)> {
        let header = frame.get(at..at + 20)?;
        let source: [u8; 4] = header[12..16].try_into().ok()?;
        let destination: [u8; 4] = header[16..20].try_into().ok()?;
        self.ips.push(IpAddr::V4(source.into()));
        self.ips.push(IpAddr::V4(destination.into()));
        let fragment_offset = u16::from_be_bytes([header[6], header[7]]) & 0x1fff;
        let header_len = usize::from(header[0] & 0x0f) * 4;
        (fragment_offset == 0 && header_len >= 20).then_some((header[9], at + header_len))
    }

    fn ipv6(&mut self, frame: &[u8], at: usize) -> Option<(u8, usize)> {
        let header = frame.get(at..at + 40)?;
        let source: [u8; 16] = header[8..24].try_into().ok()?;
        let destination: [u8; 16] = header[24..40].try_into().ok()?;
        self.ips.push(IpAddr::V6(source.into()));
        self.ips.push(IpAddr::V6(destination.into()));
        Some((header[6], at + 40))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(source: [u8; 4], destination: [u8; 4], port: u16) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[9] = PROTO_UDP;
        ip[12..16].copy_from_slice(&source);
        ip[16..20].copy_from_slice(&destination);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&4000u16.to_be_bytes());
        f.extend_from_slice(&port.to_be_bytes());
        f.extend_from_slice(&[0; 4]);
        f
    }

    fn policy(rules: &[&str]) -> Policy {
        Policy::from_rules(&rules.iter().map(|r| r.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn no_rules_log_everything() {
        assert!(policy(&[]).logs(&[0u8; 3], "p1"));
    }

    #[test]
    fn fields_match_and_combine() {
        let frame = udp4([10, 0, 0, 1], [10, 0, 0, 2], 53);
        assert!(policy(&["ethertype=0x0800"]).logs(&frame, "p1"));
        assert!(!policy(&["ethertype=0x0806"]).logs(&frame, "p1"));
        assert!(policy(&["ip=10.0.0.2"]).logs(&frame, "p1"));
        assert!(policy(&["ip=10.0.0.0/24"]).logs(&frame, "p1"));
        assert!(!policy(&["ip=10.0.1.0/24"]).logs(&frame, "p1"));
        assert!(policy(&["l4port=53"]).logs(&frame, "p1"));
        assert!(policy(&["l4port=4000,in=p1"]).logs(&frame, "p1"));
        assert!(!policy(&["l4port=4000,in=p2"]).logs(&frame, "p1"), "a rule is a conjunction");
        assert!(policy(&["in=p2", "ip=10.0.0.1"]).logs(&frame, "p1"), "rules are alternatives");
    }

    #[test]
    fn a_truncated_header_matches_nothing_that_needs_it() {
        let frame = udp4([10, 0, 0, 1], [10, 0, 0, 2], 53);
        assert!(!policy(&["l4port=53"]).logs(&frame[..37], "p1"), "the destination port is cut");
        assert!(policy(&["l4port=4000"]).logs(&frame[..37], "p1"), "the source port is whole");
        assert!(!policy(&["ip=10.0.0.2"]).logs(&frame[..20], "p1"));
        assert!(policy(&["ethertype=0x0800"]).logs(&frame[..14], "p1"));
    }

    #[test]
    fn bad_rules_say_why() {
        for (rule, words) in [
            ("port=1", "unknown field"),
            ("ethertype=zz", "hex"),
            ("ip=10.0.0.0/33", "IPv4"),
            ("l4port=70000", "port number"),
            ("in", "field=value"),
        ] {
            let error = Policy::from_rules(&[rule.to_string()]).unwrap_err();
            assert!(error.contains(words), "{rule}: {error}");
        }
    }
}
