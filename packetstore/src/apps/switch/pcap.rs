//! The switch's log as a capture file: the classic pcap format with
//! nanosecond timestamps (magic `0xa1b23c4d`, link type 1 = Ethernet),
//! which tcpdump, tshark and Wireshark read; and the logged frames, in log
//! order, for `packetstore replay`.
//!
//! Invariant: frames come out in log order (the order they were received),
//! each exactly as logged (its record's data CRC is checked first: a frame
//! whose bytes do not match is an error, never a silent capture).

use std::io::{self, Write};

use crate::log::ring::Log;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;

use super::record;

/// `pcap` with nanosecond timestamps.
pub const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// The snapshot length written in the header (frames are never cut).
pub const SNAPLEN: u32 = 65_535;

/// A logged frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedFrame {
    pub lsn: u64,
    pub received_ns: u64,
    pub ingress: u16,
    pub bytes: Vec<u8>,
}

/// The frames of a switch pool's log received in `[since_ns, until_ns)`,
/// oldest first, read without writing anything (the log is inspected, not
/// recovered: a crashed switch's pool is left as it was for its restart).
pub fn logged_frames(pool: &Pool, since_ns: u64, until_ns: u64) -> io::Result<Vec<LoggedFrame>> {
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let (log, _report) =
        Log::inspect(pool, 0, &mut buffers).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    let mut frames = Vec::new();
    for lsn in log.live_lsns() {
        let view = log.view(pool, lsn).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let key = record::decode(view.kind, &view.key)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("record {lsn} is not a logged frame")))?;
        if view.tag < since_ns || view.tag >= until_ns {
            continue;
        }
        let bytes = log.read_data(pool, &view);
        if crate::util::crc::crc32c(&bytes) != view.data_crc {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame {lsn}'s bytes fail their CRC")));
        }
        frames.push(LoggedFrame { lsn, received_ns: view.tag, ingress: key.ingress, bytes });
    }
    Ok(frames)
}

/// Writes the pcap file header.
pub fn write_header(out: &mut impl Write) -> io::Result<()> {
    let mut header = Vec::with_capacity(24);
    header.extend_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&0i32.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&SNAPLEN.to_le_bytes());
    header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    out.write_all(&header)
}

/// Writes one frame's pcap record.
pub fn write_frame(out: &mut impl Write, received_ns: u64, bytes: &[u8]) -> io::Result<()> {
    let mut head = Vec::with_capacity(16);
    head.extend_from_slice(&((received_ns / 1_000_000_000) as u32).to_le_bytes());
    head.extend_from_slice(&((received_ns % 1_000_000_000) as u32).to_le_bytes());
    head.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    head.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.write_all(&head)?;
    out.write_all(bytes)
}

/// Writes `frames` as a pcap file.
pub fn write_pcap(out: &mut impl Write, frames: &[LoggedFrame]) -> io::Result<()> {
    write_header(out)?;
    for frame in frames {
        write_frame(out, frame.received_ns, &frame.bytes)?;
    }
    out.flush()
}

/// Reads a pcap file this module wrote (or any nanosecond or microsecond
/// little-endian Ethernet pcap): `(timestamp ns, frame)` each. For tests
/// and `replay --from-pcap`.
pub fn read_pcap(bytes: &[u8]) -> io::Result<Vec<(u64, Vec<u8>)>> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("not a pcap file: {what}"));
    let magic = u32::from_le_bytes(bytes.get(0..4).ok_or_else(|| bad("short"))?.try_into().expect("4"));
    let scale = match magic {
        PCAP_MAGIC_NS => 1,
        0xa1b2_c3d4 => 1_000,
        _ => return Err(bad("magic")),
    };
    let mut at = 24;
    let mut frames = Vec::new();
    while at < bytes.len() {
        let head = bytes.get(at..at + 16).ok_or_else(|| bad("a cut record header"))?;
        let word = |i: usize| u64::from(u32::from_le_bytes(head[i..i + 4].try_into().expect("4")));
        let len = word(8) as usize;
        let data = bytes.get(at + 16..at + 16 + len).ok_or_else(|| bad("a cut record"))?;
        frames.push((word(0) * 1_000_000_000 + word(4) * scale, data.to_vec()));
        at += 16 + len;
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_capture_reads_back() {
        let frames = vec![
            LoggedFrame { lsn: 0, received_ns: 1_700_000_000_123_456_789, ingress: 0, bytes: vec![1; 60] },
            LoggedFrame { lsn: 128, received_ns: 1_700_000_001_000_000_001, ingress: 1, bytes: vec![2; 1514] },
        ];
        let mut out = Vec::new();
        write_pcap(&mut out, &frames).unwrap();
        assert_eq!(out.len(), 24 + 16 + 60 + 16 + 1514);
        let back = read_pcap(&out).unwrap();
        assert_eq!(back, frames.iter().map(|f| (f.received_ns, f.bytes.clone())).collect::<Vec<_>>());
        assert!(read_pcap(&out[..out.len() - 1]).is_err(), "a cut file is refused");
    }
}
