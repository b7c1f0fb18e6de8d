//! The replication wire format: Raft messages between peers, in frames
//! the server's own RESP parser reads (so a peer's input is bounded,
//! parsed and received into pool buffers exactly like a client's, and the
//! values of entries land zero copy).
//!
//! ```text
//! HELLO   *4 $5 HELLO  $8 group-id LE  $8 node-id LE  $n shared secret (may be empty)
//! M       *3 $1 M      $n raft-rs Message (protobuf)   $4 CRC-32C of the protobuf, LE
//! R       *3 $1 R      $n kind u16 LE, data CRC-32C u32 LE, key   $len the record's value
//! ```
//!
//! SNAPSHOT frames stream a leader's tree to a follower that is behind
//! its log (the last committed version of the tree, pinned while it is
//! read, completed by the entries after the snapshot's base):
//!
//! ```text
//! B       *2 $1 B      $n raft-rs SnapshotMetadata (protobuf)    [$6 REPAIR]
//! P       *3 $1 P      $k tree key    $len value
//! E       *3 $1 E      $1 "1" if last, else "0"    $k the chunk's upper key (inclusive)
//! Q       *2 $1 Q      $8 entry index LE (follower to leader)
//! ```
//!
//! The P frames before an E frame are every tree entry in the key range
//! that ends at its upper key and begins after the previous E's. The
//! raft-rs MsgSnapshot (an M frame) follows the last E frame, unless the
//! B frame said REPAIR: a follower whose tree was left part loaded asked
//! for it with a Q frame (the last entry its tree reflected whole), and it
//! completes its tree from its own log (raft-rs is not involved).
//!
//! A link carries one sender's messages one way. Its first frame is HELLO.
//! In an M frame, a normal entry that has records carries, as its data,
//! their number (u32 LE) instead of raft-rs's marker; that many R frames
//! follow the M frame, entry by entry, in order. An R frame's value is the
//! bytes of a put (empty for a delete); its CRC is the one the sender's log
//! record holds, and the receiver checks it against the bytes that landed.
//!
//! Owns: encoding (values sent from the pool, zero copy, above
//! `INLINE_VALUE_SEND_MAX`) and the receiving state of one inbound link.
//!
//! Invariants: every extent a received record holds carries one buffer
//! reference of the link's, given to the log or released; a frame that
//! breaks the format ends the link.

use protobuf::Message as _;
use raft::eraftpb::{EntryType, Message};
use std::net::SocketAddr;

/// Appends formatted text to a `Vec<u8>` without a temporary `String`
/// (frame heads, once per record sent).
macro_rules! write_bytes {
    ($out:expr, $($arg:tt)*) => {
        std::io::Write::write_fmt($out, format_args!($($arg)*)).expect("writing to a Vec cannot fail")
    };
}

use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;
use crate::proto::resp::Args;
use crate::store::db::{Store, StoreError, KIND_DEL, KIND_PUT};

/// Values up to this size are copied into the frame; larger ones are sent
/// from the pool buffers they are stored in.
pub const INLINE_VALUE_SEND_MAX: u64 = 256;
/// The most records one message's entries may carry.
pub const MESSAGE_RECORDS_MAX: u64 = 1 << 22;
/// The longest protobuf part of an M frame (entries carry no values).
pub const MESSAGE_BYTES_MAX: usize = 16 << 20;

/// A record of an entry, as it arrived: its bytes where they landed.
#[derive(Debug)]
pub struct Landed {
    pub kind: u16,
    pub key: Vec<u8>,
    /// One reference each, the link's.
    pub extents: Vec<Extent>,
    pub len: u64,
    /// The CRC of the bytes, checked against the sender's (`log::data_crc`).
    pub data_crc: u32,
}

/// What a frame completed.
pub enum Frame {
    Nothing,
    Message(Received),
    /// A snapshot stream begins: its base, and whether it repairs a tree
    /// left part loaded (no MsgSnapshot follows: `replica/node.rs`).
    SnapshotBegin(raft::eraftpb::SnapshotMetadata, bool),
    /// A follower whose tree is part loaded asks for a repair stream: a
    /// checkpointed tree at or past this entry (its tree's last whole one).
    RepairAsked(u64),
    /// A chunk of a snapshot: the tree's entries in the key range after
    /// the previous chunk's `upper` and up to this one's (None: the end).
    SnapshotChunk {
        upper: Option<Vec<u8>>,
        pairs: Vec<(Vec<u8>, Landed)>,
    },
}

/// A message whose records are all in.
pub struct Received {
    pub message: Message,
    /// For each entry with records, in order: its index and its records.
    pub records: Vec<(u64, Vec<Landed>)>,
}

/// Writes a HELLO frame: ids, secret, and where this node's Redis clients
/// reach it (empty if unknown).
pub fn hello(out: &mut Vec<u8>, group_id: u64, node_id: u64, secret: &[u8], client_addr: Option<SocketAddr>) {
    hello_head(out, 5, b"HELLO", group_id, node_id, secret);
    let addr = client_addr.map(|a| a.to_string()).unwrap_or_default();
    write_bytes!(out, "${}\r\n", addr.len());
    out.extend_from_slice(addr.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The client address a HELLO frame names (a node before issue 35 sent
/// none).
pub fn hello_client_addr(pool: &Pool, args: &Args) -> Option<SocketAddr> {
    if args.len() != 5 || args.upper(0).as_deref() != Some(b"HELLO") {
        return None;
    }
    std::str::from_utf8(&args.bytes(pool, 4)).ok()?.parse().ok()
}

/// The verbs a link may begin with: a peer's messages, or a relayed
/// client speaking the Redis protocol or HTTP.
pub const LINK_VERBS: [&[u8]; 3] = [b"HELLO", b"RELAY", b"RELAYHTTP"];

fn hello_head(out: &mut Vec<u8>, args: usize, verb: &[u8], group_id: u64, node_id: u64, secret: &[u8]) {
    write_bytes!(out, "*{args}\r\n${}\r\n", verb.len());
    out.extend_from_slice(verb);
    out.extend_from_slice(b"\r\n$8\r\n");
    out.extend_from_slice(&group_id.to_le_bytes());
    out.extend_from_slice(b"\r\n$8\r\n");
    out.extend_from_slice(&node_id.to_le_bytes());
    write_bytes!(out, "\r\n${}\r\n", secret.len());
    out.extend_from_slice(secret);
    out.extend_from_slice(b"\r\n");
}

/// The most bytes of a relayed client's state (`ClientState::encode`).
pub const CLIENT_STATE_MAX: usize = 6 + 512;

/// What a follower's client set up there before it was relayed (AUTH,
/// HELLO, SELECT, CLIENT SETNAME answered by the follower), carried in
/// its RELAY frame so that the leader serves it in that state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientState {
    pub authenticated: bool,
    pub resp3: bool,
    pub db: u8,
    pub name: Option<Vec<u8>>,
}

impl ClientState {
    /// flags u8 (1 authenticated, 2 resp3, 4 named), db u8, name length
    /// u32 LE, name.
    pub fn encode(&self) -> Vec<u8> {
        let flags = u8::from(self.authenticated) | u8::from(self.resp3) << 1 | u8::from(self.name.is_some()) << 2;
        let name = self.name.as_deref().unwrap_or_default();
        let mut out = vec![flags, self.db];
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<ClientState> {
        if bytes.len() < 6 || bytes.len() > CLIENT_STATE_MAX || bytes[0] & !7 != 0 {
            return None;
        }
        let len = u32::from_le_bytes(bytes[2..6].try_into().ok()?) as usize;
        if bytes.len() != 6 + len || (bytes[0] & 4 == 0 && len != 0) {
            return None;
        }
        Some(ClientState {
            authenticated: bytes[0] & 1 != 0,
            resp3: bytes[0] & 2 != 0,
            db: bytes[1],
            name: (bytes[0] & 4 != 0).then(|| bytes[6..].to_vec()),
        })
    }
}

/// Writes a RELAY (or, for an HTTP client, RELAYHTTP) frame: the link
/// carries a follower's client, whom the leader serves as its own, in
/// `state`, from the next byte on.
pub fn relay_hello(out: &mut Vec<u8>, group_id: u64, node_id: u64, secret: &[u8], http: bool, state: &ClientState) {
    let verb: &[u8] = if http { b"RELAYHTTP" } else { b"RELAY" };
    hello_head(out, 5, verb, group_id, node_id, secret);
    let state = state.encode();
    write_bytes!(out, "${}\r\n", state.len());
    out.extend_from_slice(&state);
    out.extend_from_slice(b"\r\n");
}

/// The client state a RELAY frame carries (none from a node that sent
/// four arguments: a fresh client).
pub fn relay_state(pool: &Pool, args: &Args) -> Result<ClientState, String> {
    if args.len() == 4 {
        return Ok(ClientState::default());
    }
    ClientState::decode(&args.bytes(pool, 4)).ok_or_else(|| "RELAY: a malformed client state".to_string())
}

/// A HELLO frame's group and node ids, if `args` is one with `secret`.
pub fn parse_hello(pool: &Pool, args: &Args, secret: &[u8]) -> Result<(u64, u64), String> {
    let verb = args.upper(0);
    // HELLO has 4 arguments, or 5 with the client address; RELAY 4, or 5
    // with the client's state.
    if !(args.len() == 4 || args.len() == 5) || !verb.is_some_and(|verb| LINK_VERBS.contains(&verb.as_slice())) {
        return Err("a replication link must begin with HELLO, RELAY or RELAYHTTP".into());
    }
    let word = |i: usize| -> Result<u64, String> {
        let bytes = args.bytes(pool, i);
        Ok(u64::from_le_bytes(bytes.as_ref().try_into().map_err(|_| "HELLO: ids are 8 bytes".to_string())?))
    };
    let given = args.bytes(pool, 3);
    if !constant_time_eq(given.as_ref(), secret) {
        return Err("HELLO: wrong shared secret (--peer-secret)".into());
    }
    Ok((word(1)?, word(2)?))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The records of each entry of `message` that has some, by index:
/// `records(index)` gives their lsns (the entry record excluded).
pub fn encode(
    pool: &Pool,
    buffers: &mut Buffers,
    store: &Store,
    mut message: Message,
    records: impl Fn(u64) -> Option<Vec<u64>>,
    out: &mut OutQueue,
) -> Result<(), StoreError> {
    let mut sends = Vec::new();
    for entry in message.entries.iter_mut() {
        if entry.entry_type != EntryType::EntryNormal || entry.data.is_empty() {
            continue;
        }
        let lsns = records(entry.index)
            .ok_or_else(|| StoreError::Corrupt(format!("entry {} to send is not in the log", entry.index)))?;
        entry.data = (lsns.len() as u32).to_le_bytes().to_vec().into();
        sends.push(lsns);
    }
    // Every record is read before anything is written: a message whose
    // records are gone (compacted meanwhile) is refused whole.
    let records: Vec<_> = sends.into_iter().flatten().map(|lsn| store.logged(pool, lsn)).collect::<Result<_, _>>()?;
    let bytes = message.write_to_bytes().map_err(|e| StoreError::Corrupt(format!("encoding a message: {e}")))?;
    let inline = out.bytes();
    write_bytes!(inline, "*3\r\n$1\r\nM\r\n${}\r\n", bytes.len());
    inline.extend_from_slice(&bytes);
    inline.extend_from_slice(b"\r\n$4\r\n");
    inline.extend_from_slice(&crate::util::crc::crc32c(&bytes).to_le_bytes());
    inline.extend_from_slice(b"\r\n");
    for record in records {
        let inline = out.bytes();
        write_bytes!(inline, "*3\r\n$1\r\nR\r\n${}\r\n", 6 + record.key.len());
        inline.extend_from_slice(&record.kind.to_le_bytes());
        inline.extend_from_slice(&record.data_crc.to_le_bytes());
        inline.extend_from_slice(&record.key);
        write_bytes!(inline, "\r\n${}\r\n", record.data_len);
        if record.data_len <= INLINE_VALUE_SEND_MAX {
            pool.read_extents(&record.extents, out.bytes());
        } else {
            for extent in &record.extents {
                buffers.retain(extent.buffer)?;
                let offset = pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
                // SAFETY: the queue owns the reference just taken: the
                // buffer is neither reused nor written until it is sent.
                unsafe { out.push_pool(extent.buffer, pool.address(offset), u32::from(extent.len)) };
            }
        }
        out.push(b"\r\n");
    }
    Ok(())
}

/// The receiving side of one link.
#[derive(Default)]
pub struct Inbound {
    /// The sender, once its HELLO arrived.
    pub peer: Option<u64>,
    pending: Option<Pending>,
    /// A snapshot chunk's entries so far.
    pairs: Vec<(Vec<u8>, Landed)>,
}

struct Pending {
    message: Message,
    /// (index, records expected) of each entry with records, in order.
    expected: Vec<(u64, u32)>,
    records: Vec<(u64, Vec<Landed>)>,
}

impl Inbound {
    /// Takes one frame (the arguments of one parsed command); returns a
    /// message once its records are in. The frame's value extents move to
    /// the returned records (with their references); `args` keeps the rest.
    pub fn frame(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        store: &mut Store,
        args: &mut Args,
    ) -> Result<Frame, String> {
        match args.upper(0).as_deref() {
            Some(b"M") if self.pending.is_none() => {
                self.pending = Some(decode_message(pool, args)?);
            }
            Some(b"B") if self.pending.is_none() && (args.len() == 2 || args.len() == 3) => {
                release_records(buffers, self.pairs.drain(..).map(|(_, landed)| landed));
                let repair = match args.len() {
                    2 => false,
                    _ if args.bytes(pool, 2).as_ref() == b"REPAIR" => true,
                    _ => return Err("a snapshot's B frame with an unknown flag".into()),
                };
                let bytes = args.bytes(pool, 1);
                let meta = raft::eraftpb::SnapshotMetadata::parse_from_bytes(&bytes)
                    .map_err(|e| format!("a snapshot's metadata: {e}"))?;
                return Ok(Frame::SnapshotBegin(meta, repair));
            }
            Some(b"Q") if self.pending.is_none() && args.len() == 2 && args.arg_len(1) == 8 => {
                let index = u64::from_le_bytes(args.bytes(pool, 1).as_ref().try_into().expect("8 bytes"));
                return Ok(Frame::RepairAsked(index));
            }
            Some(b"P") if self.pending.is_none() && args.len() == 4 && args.arg_len(3) == 4 => {
                if args.arg_len(1) > 1024 {
                    return Err("a snapshot key over 1 KiB".into());
                }
                let key = args.bytes(pool, 1).into_owned();
                let crc = u32::from_le_bytes(args.bytes(pool, 3).as_ref().try_into().expect("4 bytes"));
                let landed = land_checked(pool, buffers, store, args, (KIND_PUT, key.clone()), crc)?;
                self.pairs.push((key, landed));
                return Ok(Frame::Nothing);
            }
            Some(b"E") if self.pending.is_none() && args.len() == 3 => {
                let last = args.bytes(pool, 1).as_ref() == b"1";
                let upper = (!last).then(|| args.bytes(pool, 2).into_owned());
                return Ok(Frame::SnapshotChunk { upper, pairs: std::mem::take(&mut self.pairs) });
            }
            Some(b"R") if self.pending.is_some() => {
                let landed = land(pool, buffers, store, args)?;
                let pending = self.pending.as_mut().expect("checked");
                match pending.records.last_mut() {
                    Some((_, records)) => records.push(landed),
                    None => {
                        release_records(buffers, [landed]);
                        return Err("an R frame after a message's last record".into());
                    }
                }
            }
            _ => return Err("a replication frame out of order or of an unknown type".into()),
        }
        Ok(self.take_complete().map_or(Frame::Nothing, Frame::Message))
    }

    /// Moves to the next entry when the current one has all its records,
    /// and returns the message when every entry has them.
    fn take_complete(&mut self) -> Option<Received> {
        let pending = self.pending.as_mut()?;
        loop {
            let done = pending.records.len();
            if let Some(last) = pending.records.last() {
                let expected = pending.expected[done - 1].1 as usize;
                if last.1.len() < expected {
                    return None;
                }
            }
            if done == pending.expected.len() {
                break;
            }
            let (index, _) = pending.expected[done];
            pending.records.push((index, Vec::new()));
        }
        let pending = self.pending.take().expect("checked");
        Some(Received { message: pending.message, records: pending.records })
    }

    /// The link ended: gives back what a partial message holds.
    pub fn abandon(&mut self, buffers: &mut Buffers) {
        if let Some(pending) = self.pending.take() {
            release_records(buffers, pending.records.into_iter().flat_map(|(_, r)| r));
        }
        release_records(buffers, self.pairs.drain(..).map(|(_, landed)| landed));
    }
}

/// Gives back the references of records that were never logged.
pub fn release_records(buffers: &mut Buffers, records: impl IntoIterator<Item = Landed>) {
    for record in records {
        buffers.release_extents(&record.extents).expect("a landed record's references");
    }
}

fn decode_message(pool: &Pool, args: &Args) -> Result<Pending, String> {
    if args.len() != 3 || args.arg_len(1) as usize > MESSAGE_BYTES_MAX || args.arg_len(2) != 4 {
        return Err("a malformed M frame".into());
    }
    let bytes = args.bytes(pool, 1);
    let crc = u32::from_le_bytes(args.bytes(pool, 2).as_ref().try_into().expect("4 bytes"));
    if crate::util::crc::crc32c(&bytes) != crc {
        return Err("an M frame's CRC does not match its bytes".into());
    }
    let message = Message::parse_from_bytes(&bytes).map_err(|e| format!("an M frame's message: {e}"))?;
    let mut expected = Vec::new();
    let mut total = 0u64;
    for entry in &message.entries {
        if entry.entry_type != EntryType::EntryNormal || entry.data.is_empty() {
            continue;
        }
        let count: [u8; 4] = entry.data.as_ref().try_into().map_err(|_| "an entry's record count".to_string())?;
        let count = u32::from_le_bytes(count);
        total += u64::from(count);
        expected.push((entry.index, count));
    }
    if total > MESSAGE_RECORDS_MAX {
        return Err(format!("a message of {total} records (at most {MESSAGE_RECORDS_MAX})"));
    }
    let mut pending = Pending { message, expected, records: Vec::new() };
    if let Some(&(index, _)) = pending.expected.first() {
        pending.records.push((index, Vec::new()));
    }
    Ok(pending)
}

/// An R frame's record: its value stays where it landed (a small one is
/// staged into the pool); its CRC must match.
fn land(pool: &Pool, buffers: &mut Buffers, store: &mut Store, args: &mut Args) -> Result<Landed, String> {
    if args.len() != 3 || !(6..=6 + 512).contains(&args.arg_len(1)) {
        return Err("a malformed R frame".into());
    }
    let meta = args.bytes(pool, 1).into_owned();
    let kind = u16::from_le_bytes([meta[0], meta[1]]);
    let crc = u32::from_le_bytes(meta[2..6].try_into().expect("4 bytes"));
    if kind != KIND_PUT && kind != KIND_DEL {
        return Err(format!("a replicated record of kind {kind:#x}"));
    }
    land_checked(pool, buffers, store, args, (kind, meta[6..].to_vec()), crc)
}

/// Argument 2's bytes where they landed (a small one staged into the
/// pool), with a reference of the caller's on each extent, checked
/// against the sender's CRC of them (`log::data_crc`, computed in place).
fn land_checked(
    pool: &Pool,
    buffers: &mut Buffers,
    store: &mut Store,
    args: &Args,
    (kind, key): (u16, Vec<u8>),
    crc: u32,
) -> Result<Landed, String> {
    let len = args.arg_len(2);
    let extents = match args.extents(2) {
        Some(extents) => {
            let extents = extents.to_vec();
            for extent in &extents {
                buffers.retain(extent.buffer).map_err(|e| e.to_string())?;
            }
            extents
        }
        None if len == 0 => Vec::new(),
        None => {
            let bytes = args.bytes(pool, 2).into_owned();
            store.stage(pool, buffers, &bytes).map_err(|e| e.to_string())?
        }
    };
    let landed = Landed { kind, key, extents, len, data_crc: crc };
    let found = crate::log::data_crc(pool, &landed.extents);
    if found != crc {
        let why = mismatch_text(pool, &landed, found, args.extents(2).is_some());
        release_records(buffers, [landed]);
        return Err(why);
    }
    Ok(landed)
}

/// Says which record failed its CRC, where its bytes landed and how they
/// begin and end (a damaged frame is rare: the detail finds its cause).
fn mismatch_text(pool: &Pool, landed: &Landed, found: u32, in_place: bool) -> String {
    let mut bytes = Vec::new();
    pool.read_extents(&landed.extents, &mut bytes);
    let head = &bytes[..bytes.len().min(16)];
    let tail = &bytes[bytes.len().saturating_sub(16)..];
    let extents: Vec<_> = landed.extents.iter().map(|e| (e.buffer, e.offset, e.len)).collect();
    format!(
        "a record's bytes do not match its CRC (key '{}', {} bytes {}, CRC {:08x} sent, {found:08x} found, extents {extents:?}, begins {head:02x?}, ends {tail:02x?})",
        crate::index::tree::key_text(&landed.key),
        landed.len,
        if in_place { "landed in place" } else { "staged" },
        landed.data_crc,
    )
}

/// Writes a snapshot's B frame (`repair`: a stream that repairs a tree
/// left part loaded, flagged REPAIR; no MsgSnapshot follows it).
pub fn snapshot_begin(out: &mut OutQueue, meta: &raft::eraftpb::SnapshotMetadata, repair: bool) {
    let bytes = meta.write_to_bytes().expect("encoding snapshot metadata");
    let inline = out.bytes();
    let count = if repair { 3 } else { 2 };
    write_bytes!(inline, "*{count}\r\n$1\r\nB\r\n${}\r\n", bytes.len());
    inline.extend_from_slice(&bytes);
    inline.extend_from_slice(b"\r\n");
    if repair {
        inline.extend_from_slice(b"$6\r\nREPAIR\r\n");
    }
}

/// Writes a Q frame: this follower's tree is part loaded, and it asks the
/// leader for a repair stream based at or past entry `index`.
pub fn repair_ask(out: &mut OutQueue, index: u64) {
    let inline = out.bytes();
    inline.extend_from_slice(b"*2\r\n$1\r\nQ\r\n$8\r\n");
    inline.extend_from_slice(&index.to_le_bytes());
    inline.extend_from_slice(b"\r\n");
}

/// Writes a snapshot's P frame: a tree entry, its value from the pool
/// (zero copy above `INLINE_VALUE_SEND_MAX`).
pub fn snapshot_pair(
    pool: &Pool,
    buffers: &mut Buffers,
    out: &mut OutQueue,
    key: &[u8],
    value: &crate::index::node::Value,
) -> Result<(), StoreError> {
    use crate::index::node::Value;
    let inline = out.bytes();
    write_bytes!(inline, "*4\r\n$1\r\nP\r\n${}\r\n", key.len());
    inline.extend_from_slice(key);
    let crc = match value {
        Value::Inline(bytes) => {
            write_bytes!(inline, "\r\n${}\r\n", bytes.len());
            inline.extend_from_slice(bytes);
            crate::util::crc::crc32c(bytes)
        }
        other => {
            let extents = crate::index::tree::value_extents(pool, other)?;
            let len: u64 = extents.iter().map(|e| u64::from(e.len)).sum();
            write_bytes!(inline, "\r\n${len}\r\n");
            if len <= INLINE_VALUE_SEND_MAX {
                pool.read_extents(&extents, out.bytes());
            } else {
                for extent in &extents {
                    buffers.retain(extent.buffer)?;
                    let offset = pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
                    // SAFETY: the queue owns the reference just taken: the
                    // buffer is neither reused nor written until it is sent.
                    unsafe { out.push_pool(extent.buffer, pool.address(offset), u32::from(extent.len)) };
                }
            }
            // The CRC stored with the value, not one computed now: bytes
            // damaged since they were written fail the follower's check
            // instead of reaching it with a CRC that vouches for them.
            other.crc().unwrap_or_else(|| crate::log::data_crc(pool, &extents))
        }
    };
    out.push(b"\r\n$4\r\n");
    out.push(&crc.to_le_bytes());
    out.push(b"\r\n");
    Ok(())
}

/// Writes a snapshot's E frame: the chunk ends at `upper` (None: the last).
pub fn snapshot_end(out: &mut OutQueue, upper: Option<&[u8]>) {
    let upper = upper.unwrap_or_default();
    let last = if upper.is_empty() { "1" } else { "0" };
    let inline = out.bytes();
    write_bytes!(inline, "*3\r\n$1\r\nE\r\n$1\r\n{last}\r\n${}\r\n", upper.len());
    inline.extend_from_slice(upper);
    inline.extend_from_slice(b"\r\n");
}
