//! The switch's log record (`docs/format.md`, "Switch records"): kind
//! `0x40`, one extent (the frame, where it was received or where it was
//! copied), tag = the time the frame was received (Unix ns), key = 4 bytes:
//!
//! ```text
//! 0        2        3        4
//! | ingress port (u16 LE) | how (u8) | 0 |
//! ```
//!
//! `how` is 1 for a frame logged in place (swap) and 2 for a copy.
//!
//! Invariant: a frame record names exactly one extent of at most
//! `FRAME_SIZE_MAX` bytes.

/// The record kind of a logged frame.
pub const KIND_FRAME: u16 = 0x40;
const _: () = assert!(KIND_FRAME == *crate::pool::kind::SWITCH_RECORD_KINDS.start());
pub const KEY_LEN: usize = 4;
/// The largest frame the switch logs: a standard Ethernet frame without
/// its FCS, plus one 802.1Q tag.
pub const FRAME_SIZE_MAX: u32 = 1518;
pub const HOW_SWAP: u8 = 1;
pub const HOW_COPY: u8 = 2;

/// A frame record's key fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameKey {
    pub ingress: u16,
    pub how: u8,
}

pub fn encode(key: FrameKey) -> [u8; KEY_LEN] {
    let port = key.ingress.to_le_bytes();
    [port[0], port[1], key.how, 0]
}

/// The key of a frame record; None if it is not one.
pub fn decode(kind: u16, key: &[u8]) -> Option<FrameKey> {
    if kind != KIND_FRAME || key.len() != KEY_LEN || key[3] != 0 || !matches!(key[2], HOW_SWAP | HOW_COPY) {
        return None;
    }
    Some(FrameKey { ingress: u16::from_le_bytes([key[0], key[1]]), how: key[2] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_strangers_are_refused() {
        let key = FrameKey { ingress: 513, how: HOW_COPY };
        assert_eq!(decode(KIND_FRAME, &encode(key)), Some(key));
        assert_eq!(decode(0x30, &encode(key)), None);
        assert_eq!(decode(KIND_FRAME, &[1, 0, 3, 0]), None);
        assert_eq!(decode(KIND_FRAME, &[1, 0, 1]), None);
    }
}
