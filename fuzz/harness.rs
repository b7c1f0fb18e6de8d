//! The fuzz harnesses: one function per target, each taking arbitrary bytes
//! and panicking only on a bug.
//!
//! Owns: what each target feeds the code under test and the oracle that
//! judges it. The same functions run under libFuzzer (`fuzz/fuzz_targets/`,
//! `cargo +nightly fuzz run <target>`) and on stable Rust in
//! `packetstore/tests/fuzz.rs`, which replays every saved crash input
//! (`fuzz/regressions/<target>/`) and a few thousand random inputs.
//!
//! Invariant: a harness has no state that survives between inputs except
//! read-only fixtures (a pool image built once), so a crash input replays.
//!
//! Targets:
//! - `http_head`: the HTTP request head parser and the key's percent
//!   decoding, against a reference decoder.
//! - `resp_parser`: the incremental RESP parser fed in fuzz-chosen pieces
//!   from pool buffers (zero copy) or private memory (copy), against a
//!   one-shot reference parser; every buffer reference it takes must be
//!   given back.
//! - `log_records`: a log ring written from fuzz-chosen record fields, with
//!   the CRCs fixed up or not, then recovered.
//! - `tree_node`: node validation and decoding (CRC fixed up or not), all
//!   kinds (leaf, internal, counted internal); a node that decodes must
//!   re-encode to the same node, and a counted node's counts must read the
//!   same through the bytes' view and survive a split.
//! - `pool_open`: a key-value pool image with fuzz-chosen bit flips,
//!   overwrites, zeroed ranges and truncation, opened and recovered; a store
//!   that opens must be readable end to end and writable.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use packetstore::apps::kv::percent_decode;
use packetstore::index::compact::CompactConfig;
use packetstore::index::node::{self, Node};
use packetstore::io::app::Persist;
use packetstore::io::stream::{Segment, Source, Stream};
use packetstore::log::record::{self, Extent, HEADER_SIZE, KIND_PAD};
use packetstore::proto::http::{parse_head, HeadError};
use packetstore::proto::resp::{Args, Parsed, Parser, ReceiveConfig};
use packetstore::store::db::{value_bytes, Op, Store, StoreConfig};
use packetstore::{Buffers, Geometry, Log, Pool, SimDevice, SimMode};

/// Reads fuzz input as a sequence of small integers; zeros once exhausted.
struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    fn u8(&mut self) -> u8 {
        let (first, rest) = self.bytes.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
        self.bytes = rest;
        first
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.bytes.len());
        let (taken, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        taken
    }
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

// ---- http_head ----

/// `%xx` with exactly two hex digits; None otherwise.
fn reference_percent_decode(text: &[u8]) -> Option<Vec<u8>> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' {
            let high = hex(*text.get(i + 1)?)?;
            let low = hex(*text.get(i + 2)?)?;
            out.push(high << 4 | low);
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    Some(out)
}

pub fn http_head(data: &[u8]) {
    let Some((&limit_choice, bytes)) = data.split_first() else { return };
    let body_size_max = [0u64, 1, 1024, 64 << 20, u64::MAX][usize::from(limit_choice) % 5];
    match parse_head(bytes, body_size_max) {
        Ok(head) => {
            assert!(head.head_len <= bytes.len(), "head_len past the input");
            assert_eq!(&bytes[head.head_len - 4..head.head_len], b"\r\n\r\n");
            let target = &bytes[head.target.clone()];
            assert_eq!(target.first(), Some(&b'/'), "a target starts with '/'");
            assert!(head.target.end <= head.head_len);
            assert!(head.content_length <= body_size_max);
            assert_eq!(percent_decode(target), reference_percent_decode(target), "percent decoding of {target:?}");
        }
        Err(HeadError::Incomplete) => {
            assert!(!bytes.windows(4).any(|w| w == b"\r\n\r\n"), "a complete head reported incomplete");
        }
        Err(HeadError::Refuse(status, why)) => {
            assert!((400..600).contains(&status), "status {status} for {why}");
        }
    }
}

// ---- resp_parser ----

const RESP_GEOMETRY: Geometry = Geometry { buffer_size: 512, buffer_count: 256, log_size: 16 * 1024, log_count: 1 };

/// One command as the reference parser sees it.
#[derive(Debug, PartialEq, Eq)]
enum Reference {
    Command { args: Vec<Vec<u8>>, refused: bool },
    Malformed,
}

/// A one-shot RESP parser over the whole input, with the semantics the
/// incremental one documents (inputs shorter than `LINE_SIZE_MAX`).
fn reference_resp(data: &[u8], value_size_max: u64) -> Vec<Reference> {
    use packetstore::proto::resp::{ARGS_MAX, BULK_LEN_MAX, SMALL_ARG_MAX};
    fn line(data: &[u8], at: &mut usize) -> Option<Vec<u8>> {
        let end = data[*at..].windows(2).position(|w| w == b"\r\n")?;
        let line = data[*at..*at + end].to_vec();
        *at += end + 2;
        Some(line)
    }
    // Canonical decimal, as Redis's string2ll: what prints back the same.
    let int = |text: &[u8]| -> Option<i64> {
        let value: i64 = std::str::from_utf8(text).ok()?.parse().ok()?;
        (value.to_string().as_bytes() == text).then_some(value)
    };
    let mut out = Vec::new();
    let mut at = 0;
    'commands: while at < data.len() {
        let Some(first) = line(data, &mut at) else { break };
        if first.first() != Some(&b'*') {
            // Inline: split as Redis's sdssplitargs (the parser's own
            // splitter; this reference checks what surrounds it).
            let Some(args) = packetstore::proto::resp::split_inline(&first) else {
                out.push(Reference::Malformed);
                break;
            };
            if !args.is_empty() {
                out.push(Reference::Command { args, refused: false });
            }
            continue;
        }
        let Some(count) = int(&first[1..]).filter(|&c| c <= ARGS_MAX as i64) else {
            out.push(Reference::Malformed);
            break;
        };
        if count <= 0 {
            continue;
        }
        let mut args = Vec::new();
        let mut refused = false;
        for _ in 0..count {
            let Some(header) = line(data, &mut at) else { break 'commands };
            if header.first() != Some(&b'$') {
                out.push(Reference::Malformed);
                break 'commands;
            }
            let Some(len) = int(&header[1..]).filter(|&n| n >= 0 && n as u64 <= BULK_LEN_MAX.max(value_size_max))
            else {
                out.push(Reference::Malformed);
                break 'commands;
            };
            let len = len as u64;
            if data.len() - at < len as usize + 2 {
                if len > value_size_max || len as usize > SMALL_ARG_MAX {
                    // The incremental parser may have refused or kept part.
                }
                break 'commands;
            }
            let bytes = &data[at..at + len as usize];
            at += len as usize;
            if len > value_size_max {
                refused = true;
                args.push(Vec::new());
            } else if len as usize <= SMALL_ARG_MAX || !refused {
                args.push(bytes.to_vec());
            } else {
                args.push(Vec::new());
            }
            if &data[at..at + 2] != b"\r\n" {
                out.push(Reference::Malformed);
                break 'commands;
            }
            at += 2;
        }
        out.push(Reference::Command { args, refused });
    }
    out
}

fn resp_fixture() -> &'static Vec<u8> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let device = Arc::new(SimDevice::new(RESP_GEOMETRY.file_size(), SimMode::CacheLine));
        Pool::create_simulated(device.clone(), RESP_GEOMETRY).expect("a fresh pool");
        device.crash(0)
    })
}

pub fn resp_parser(data: &[u8]) {
    use packetstore::proto::resp::LINE_SIZE_MAX;
    let mut input = Input { bytes: data };
    let flags = input.u8();
    let zero_copy = flags & 1 == 1;
    let value_size_max = [0u64, 5, 64, 65, 100, 700, 1 << 20][usize::from(flags >> 1) % 7];
    let pieces = input.u8();
    let piece_len_max = usize::from(pieces % 64) + 1;
    // As the engine does for a peer that trickles bytes.
    let coalesce = pieces & 0x80 != 0;
    let stream_bytes = input.bytes;
    if stream_bytes.len() >= LINE_SIZE_MAX {
        return;
    }
    let device = Arc::new(SimDevice::from_image(resp_fixture().clone(), SimMode::CacheLine));
    let pool = Pool::open_simulated(device).expect("the fixture opens");
    let mut buffers = Buffers::new(RESP_GEOMETRY.buffer_count);
    let free_at_start = buffers.free_count();
    let config = ReceiveConfig {
        persist: if zero_copy { Persist::ZeroCopy } else { Persist::Copy },
        value_size_max,
        buffers_reserve: 0,
    };
    let mut parser = Parser::default();
    let mut args = Args::default();
    let mut stream = Stream::new();
    // Private pieces must outlive their segments: kept here until the end.
    let mut private: Vec<Vec<u8>> = Vec::new();
    let mut release = |segment: Segment, buffers: &mut Buffers| {
        if let Source::Pool(buffer) = segment.source {
            buffers.release(buffer).expect("a segment holds a reference");
        }
    };
    let mut got = Vec::new();
    let mut fed = 0;
    let mut piece = 0usize;
    'feed: while fed < stream_bytes.len() {
        // Pieces of varying length, as receives deliver them.
        let len = (1 + (piece * 7 + fed) % piece_len_max).min(stream_bytes.len() - fed);
        piece += 1;
        let bytes = &stream_bytes[fed..fed + len];
        fed += len;
        let segment = if zero_copy {
            let Ok(buffer) = buffers.allocate() else { return };
            let at = (piece * 13) % (RESP_GEOMETRY.buffer_size as usize - len + 1);
            pool.write(pool.buffer_offset(buffer) + at as u64, bytes);
            // SAFETY: the stream holds the allocation's reference until it
            // releases the segment; nothing else writes this buffer.
            unsafe {
                Segment::new(
                    Source::Pool(buffer),
                    pool.address(pool.buffer_offset(buffer) + at as u64),
                    at as u32,
                    len as u32,
                )
            }
        } else {
            private.push(bytes.to_vec());
            let kept = private.last().expect("just pushed");
            // SAFETY: `private` keeps the bytes, unmoved (a Vec's heap
            // block does not move when the outer Vec grows), until the end.
            unsafe { Segment::new(Source::Private(piece as u32), kept.as_ptr(), 0, len as u32) }
        };
        stream.push(segment);
        if coalesce && stream.segment_count() > 3 {
            stream.coalesce(|segment| release(segment, &mut buffers));
        }
        loop {
            match parser.parse(&pool, &mut buffers, &config, &mut stream, &mut args, &mut release) {
                Parsed::Incomplete => break,
                Parsed::Malformed(_) => {
                    got.push(Reference::Malformed);
                    parser.abandon(&mut buffers, &mut args);
                    break 'feed;
                }
                Parsed::Command => {
                    let refused = args.refused.is_some();
                    let list: Vec<Vec<u8>> = (0..args.len()).map(|i| args.bytes(&pool, i).into_owned()).collect();
                    for i in 0..args.len() {
                        if let Some(extents) = args.extents(i) {
                            let total: u64 = extents.iter().map(|e| u64::from(e.len)).sum();
                            assert_eq!(total, args.arg_len(i), "a value's extents cover its length");
                            for extent in extents {
                                assert!(buffers.refs(extent.buffer) > 0, "a value's buffer is referenced");
                            }
                        }
                    }
                    got.push(Reference::Command { args: list, refused });
                    args.clear(&mut buffers);
                }
            }
        }
    }
    parser.abandon(&mut buffers, &mut args);
    stream.clear(|segment| release(segment, &mut buffers));
    buffers.check_invariants();
    assert_eq!(buffers.free_count(), free_at_start, "the parser leaked buffer references");
    let mut want = reference_resp(stream_bytes, value_size_max);
    // A refused command's own arguments are not compared byte for byte:
    // only that it was refused, and how many arguments it had.
    let strip = |r: &mut Reference| {
        if let Reference::Command { args, refused: true } = r {
            for arg in args.iter_mut() {
                arg.clear();
            }
        }
    };
    want.iter_mut().for_each(strip);
    got.iter_mut().for_each(strip);
    assert_eq!(got, want, "incremental and reference parses differ");
}

// ---- tree_node ----

pub fn tree_node(data: &[u8]) {
    let Some((&flags, bytes)) = data.split_first() else { return };
    let mut bytes = bytes.to_vec();
    if flags & 1 == 1 && bytes.len() >= node::NODE_HEADER_SIZE {
        // Seal it: the fuzzer then explores what lies behind the CRC.
        let generation = u64::from(flags >> 1);
        node::seal(&mut bytes, generation);
    }
    let Ok(decoded) = Node::decode(&bytes) else { return };
    let view = node::NodeBytes(&bytes);
    for i in 0..view.count() {
        let key = view.key(i);
        assert_eq!(view.search(key), Ok(i), "a node's keys are in order and searchable");
        if view.is_leaf() {
            let _ = view.value(i);
        }
    }
    if let Node::Internal { counts: Some(counts), .. } = &decoded {
        tree_node_counts(&bytes, counts);
    }
    // Re-encoding writes every inline value checked (kind 4): one written
    // before value checksums (kind 1) gains its CRC, 4 bytes.
    let legacy_inline = match view.is_leaf() {
        true => (0..view.count())
            .filter(|&i| {
                let entry = view.entry(i);
                entry[2 + usize::from(u16::from_le_bytes([entry[0], entry[1]]))] == 1
            })
            .count(),
        false => 0,
    };
    let mut out = vec![0u8; bytes.len() + legacy_inline * node::VALUE_CRC_SIZE];
    decoded.encode(&mut out).expect("a decoded node encodes into its own size and its legacy values' CRCs");
    let generation = match &decoded {
        Node::Leaf { generation, .. } | Node::Internal { generation, .. } => *generation,
    };
    node::seal(&mut out, generation);
    assert_eq!(Node::decode(&out).expect("a re-encoded node decodes"), decoded, "decode(encode(node)) == node");
}

/// A counted node that decoded: its counts through the view, their total,
/// and a split that keeps every child with its count.
fn tree_node_counts(bytes: &[u8], counts: &[u64]) {
    let view = node::NodeBytes(bytes);
    assert!(view.is_counted());
    for (i, &count) in counts.iter().enumerate() {
        assert_eq!(view.child_count(i), count, "child {i}'s count");
    }
    let total = counts.iter().try_fold(0u64, |sum, &c| sum.checked_add(c)).expect("validation refuses overflow");
    assert_eq!(view.total(), total);
    if view.count() >= 2 {
        let (mut left, mut right) = (vec![0u8; bytes.len()], vec![0u8; bytes.len()]);
        view.split(&mut left, &mut right).expect("a valid node of two entries splits");
        let (left, right) = (node::NodeBytes(&left), node::NodeBytes(&right));
        assert_eq!(left.total() + right.total(), total, "a split keeps every child's count");
    }
}

// ---- log_records ----

const LOG_GEOMETRY: Geometry = Geometry { buffer_size: 512, buffer_count: 32, log_size: 16 * 1024, log_count: 1 };

fn log_fixture() -> &'static Vec<u8> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let device = Arc::new(SimDevice::new(LOG_GEOMETRY.file_size(), SimMode::CacheLine));
        Pool::create_simulated(device.clone(), LOG_GEOMETRY).expect("a fresh pool");
        let mut image = device.crash(0);
        // Buffer i holds bytes (i + j) mod 251: extents name real data.
        for i in 0..LOG_GEOMETRY.buffer_count {
            let at = (LOG_GEOMETRY.buffers_offset() + u64::from(i) * u64::from(LOG_GEOMETRY.buffer_size)) as usize;
            for j in 0..LOG_GEOMETRY.buffer_size as usize {
                image[at + j] = ((i as usize + j) % 251) as u8;
            }
        }
        image
    })
}

pub fn log_records(data: &[u8]) {
    let mut input = Input { bytes: data };
    let mut image = log_fixture().clone();
    let geometry = LOG_GEOMETRY;
    let log_at = geometry.log_region_offset(0) as usize;
    let ring_size = geometry.log_region_size() as usize - 64;
    let buffer_at = |i: u32| (geometry.buffers_offset() + u64::from(i) * u64::from(geometry.buffer_size)) as usize;
    let mut lsn = 0u64;
    let mut commit_lsn = 0u64;
    let mut record = Vec::new();
    while !input.is_empty() && lsn < 4 * ring_size as u64 {
        let flags = input.u8();
        let kind = if flags & 1 == 1 { KIND_PAD } else { 1 + u16::from(input.u8() % 4) };
        let key_len = usize::from(input.u8() % 48);
        let extent_count = if kind == KIND_PAD { 0 } else { usize::from(input.u8() % 6) };
        let mut extents = Vec::new();
        let mut data_crc = 0u32;
        let mut data_len = 0u64;
        for _ in 0..extent_count {
            let buffer = u32::from(input.u8()) % (geometry.buffer_count + 2);
            let offset = input.u16() % (geometry.buffer_size as u16 + 8);
            let len = input.u16() % (geometry.buffer_size as u16 + 8);
            let extent = Extent { buffer, offset, len };
            if extent.check(geometry.buffer_count, geometry.buffer_size).is_ok() {
                let at = buffer_at(buffer) + usize::from(offset);
                data_crc = crc32c::crc32c_append(data_crc, &image[at..at + usize::from(len)]);
            }
            data_len += u64::from(len);
            extents.push(extent);
        }
        let key = input.take(key_len).to_vec();
        if flags & 2 == 2 {
            commit_lsn = lsn;
        }
        if flags & 4 == 4 {
            data_len = u64::from(input.u16());
        }
        if flags & 8 == 8 {
            data_crc = input.u32();
        }
        let tag = u64::from(input.u16());
        record::encode(&mut record, kind, lsn, commit_lsn.min(lsn), tag, &key, &extents, data_len, data_crc);
        if kind == KIND_PAD {
            // Padding fills the rest of the lap.
            let rest = ring_size - (lsn as usize % ring_size);
            record.resize(rest.max(HEADER_SIZE), 0);
            let record_len = record.len() as u32;
            put_u32(&mut record, record::OFF_RECORD_LEN, record_len);
            let crc = record::header_crc(&record[..HEADER_SIZE]);
            put_u32(&mut record, record::OFF_HEADER_CRC, crc);
        }
        if flags & 16 == 16 {
            // Corrupt one byte of the record, then (maybe) fix the CRC.
            let at = usize::from(input.u16()) % record.len();
            record[at] ^= input.u8() | 1;
            if flags & 32 == 32 {
                let covered = if kind == KIND_PAD { HEADER_SIZE } else { record.len() };
                let crc = record::header_crc(&record[..covered]);
                put_u32(&mut record, record::OFF_HEADER_CRC, crc);
            }
        }
        if flags & 64 == 64 {
            put_u64(&mut record, record::OFF_RELEASE_MARK, record::RELEASE_MAGIC);
        }
        let position = lsn as usize % ring_size;
        let room = ring_size - position;
        let written = record.len().min(room);
        image[log_at + 64 + position..log_at + 64 + position + written].copy_from_slice(&record[..written]);
        lsn += record.len().div_ceil(64) as u64 * 64;
    }
    // The anchor: head and committed lsns, chosen from the input.
    let head = u64::from(input.u8()) * 64 % (lsn + 64);
    let committed = if input.u8() & 1 == 1 { lsn } else { u64::from(input.u16()) * 64 };
    image[log_at + 8..log_at + 16].copy_from_slice(&head.to_le_bytes());
    image[log_at + 16..log_at + 24].copy_from_slice(&committed.to_le_bytes());
    let device = Arc::new(SimDevice::from_image(image, SimMode::CacheLine));
    let pool = Pool::open_simulated(device).expect("the pool header is intact");
    let mut buffers = Buffers::new(geometry.buffer_count);
    let Ok((log, _report)) = Log::recover(&pool, &mut buffers) else { return };
    for lsn in log.live_lsns().collect::<Vec<_>>() {
        let view = log.view(&pool, lsn).expect("a live record has a view");
        for extent in &view.extents {
            extent.check(geometry.buffer_count, geometry.buffer_size).expect("recovery checked every extent");
            assert!(buffers.refs(extent.buffer) > 0, "a live record's buffer is referenced");
        }
        let bytes = log.read_data(&pool, &view);
        assert_eq!(bytes.len() as u64, view.data_len, "a record's data is its extents");
    }
    buffers.check_invariants();
}

// ---- pool_open ----

const KV_GEOMETRY: Geometry = Geometry { buffer_size: 2048, buffer_count: 192, log_size: 16 * 1024, log_count: 1 };

fn kv_config() -> StoreConfig {
    StoreConfig {
        value_size_max: 1 << 20,
        replay_records_max: 8,
        checkpoint_interval: Duration::from_secs(3600),
        buffers_reserve: 0,
        compaction: CompactConfig { waste_min: 0.0, fill_max: 1.01, entries_per_step: 5, bytes_per_step: 16 * 1024 },
        replicated: false,
    }
}

/// A key-value pool with a tree of a few levels, live log records, an
/// indirect value and hashes: built once, deterministically.
fn kv_fixture() -> &'static Vec<u8> {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(|| {
        use packetstore::store::keyspace::{element_key, string_key, SPACE_MAIN};
        let device = Arc::new(SimDevice::new(KV_GEOMETRY.file_size(), SimMode::CacheLine));
        let pool = Pool::create_simulated(device.clone(), KV_GEOMETRY).expect("a fresh pool");
        let mut buffers = Buffers::new(KV_GEOMETRY.buffer_count);
        let (mut store, _) = Store::open(&pool, &mut buffers, kv_config()).expect("a fresh store");
        for i in 0..120u32 {
            let len = match i % 5 {
                0 => 3000,
                1 => 70,
                _ => (i as usize * 37) % 600,
            };
            let value: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j) as u8).collect();
            let mut extents = Vec::new();
            buffers.copy_in(&pool, &value, &mut extents).expect("room");
            let key = if i % 7 == 0 {
                element_key(u64::from(i % 3) + 1, SPACE_MAIN, format!("f{i}").as_bytes())
            } else {
                string_key(0, format!("key:{:04}", i % 90).as_bytes())
            };
            let ops = [Op::Put { key, extents, len: len as u64 }];
            store.apply(&pool, &mut buffers, &ops).expect("apply");
            Store::release_ops(&mut buffers, &ops);
            if i % 3 == 0 {
                store.commit(&pool, &mut buffers).expect("commit");
            }
        }
        store.commit(&pool, &mut buffers).expect("commit");
        device.crash(1)
    })
}

pub fn pool_open(data: &[u8]) {
    let mut input = Input { bytes: data };
    let mut image = kv_fixture().clone();
    let len = image.len();
    let geometry = KV_GEOMETRY;
    let mut edits = 0;
    while !input.is_empty() && edits < 64 {
        edits += 1;
        let op = input.u8();
        // Where: the header page, the log, the buffers, or anywhere.
        let (start, span) = match op >> 6 {
            0 => (0, 4096),
            1 => (geometry.log_region_offset(0) as usize, geometry.log_size as usize),
            2 => (geometry.buffers_offset() as usize, len - geometry.buffers_offset() as usize),
            _ => (0, len),
        };
        // Modulo the current length: an earlier edit may have truncated.
        let at = (start + input.u32() as usize % span) % image.len();
        match op % 4 {
            0 => image[at] ^= 1 << (input.u8() % 8),
            1 => {
                let n = usize::from(input.u8() % 16);
                let bytes = input.take(n);
                let end = (at + bytes.len()).min(image.len());
                image[at..end].copy_from_slice(&bytes[..end - at]);
            }
            2 => {
                let n = usize::from(input.u16()).min(image.len() - at);
                image[at..at + n].fill(0);
            }
            _ => image.truncate(at.max(1)),
        }
    }
    let device = Arc::new(SimDevice::from_image(image, SimMode::CacheLine));
    let Ok(pool) = Pool::open_simulated(device) else { return };
    let mut buffers = Buffers::new(pool.geometry().buffer_count);
    let Ok((mut store, _report)) = Store::open(&pool, &mut buffers, kv_config()) else { return };
    if store.finish_reclaim(&pool, &mut buffers).is_err() {
        return;
    }
    // Everything that opened reads end to end (values may be damaged:
    // only the log and the tree carry checksums; a value's bytes do not).
    let Ok(entries) = store.tree().entries(&pool) else { return };
    for (_key, value) in &entries {
        let _ = value_bytes(&pool, value);
    }
    buffers.check_invariants();
    // And takes writes, if the damage left it consistent.
    let mut extents = Vec::new();
    if buffers.copy_in(&pool, b"after the damage", &mut extents).is_ok() {
        let ops = [Op::Put { key: packetstore::store::keyspace::string_key(0, b"fuzz"), extents, len: 16 }];
        if store.apply(&pool, &mut buffers, &ops).is_ok() {
            let _ = store.commit(&pool, &mut buffers);
        }
        Store::release_ops(&mut buffers, &ops);
    }
}

/// Every valid node of the key-value fixture, prefixed with the flags byte
/// `tree_node` reads (0: keep the CRC as it is): seeds for that target.
pub fn tree_node_seeds() -> Vec<Vec<u8>> {
    let image = kv_fixture();
    let geometry = KV_GEOMETRY;
    (0..geometry.buffer_count)
        .filter_map(|i| {
            let at = (geometry.buffers_offset() + u64::from(i) * u64::from(geometry.buffer_size)) as usize;
            let bytes = &image[at..at + geometry.buffer_size as usize];
            node::validate(bytes).ok()?;
            let mut seed = vec![0u8];
            seed.extend_from_slice(bytes);
            Some(seed)
        })
        .collect()
}
