//! Bit commands (Redis's "bitmap" group), on string values: SETBIT,
//! GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO. Bit 0 is the
//! most significant bit of the first byte; a string grows with zero bytes
//! to hold the highest bit written.
//!
//! Invariant: each write is one store group (`KvServer::apply`), durable
//! before its reply, and keeps the key's time to live (BITOP's
//! destination, set anew, loses it, as in Redis); no bit offset reaches
//! past `KvServer::string_max` bytes; reads copy only the bytes they look
//! at (`value_range`), BITOP its sources a chunk at a time.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::ops::{key_ok, parse_i64, value_range, NOT_INTEGER, SYNTAX, WRONGTYPE};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::index::node::Value;
use crate::store::db::{value_len, StoreError};
use crate::store::keyspace::string_key;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("setbit", 4, &["write", "denyoom"], (1, 1, 1), "bitmap", "Sets or clears the bit at an offset of a string.", KvServer::cmd_setbit),
    cmd("getbit", 3, &["readonly", "fast"], (1, 1, 1), "bitmap", "Returns the bit at an offset of a string.", KvServer::cmd_getbit),
    cmd("bitcount", -2, &["readonly"], (1, 1, 1), "bitmap", "Counts the set bits of a string.", KvServer::cmd_bitcount),
    cmd("bitpos", -3, &["readonly"], (1, 1, 1), "bitmap", "Finds the first set or clear bit of a string.", KvServer::cmd_bitpos),
    cmd("bitop", -4, &["write", "denyoom"], (2, -1, 1), "bitmap", "Stores the AND, OR, XOR or NOT of strings.", KvServer::cmd_bitop),
    cmd("bitfield", -2, &["write", "denyoom"], (1, 1, 1), "bitmap", "Reads and writes integers at bit offsets of a string.", KvServer::cmd_bitfield),
    cmd("bitfield_ro", -2, &["readonly", "fast"], (1, 1, 1), "bitmap", "Reads integers at bit offsets of a string.", KvServer::cmd_bitfield_ro),
];

const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";

const BITFIELD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// BITOP combines its sources this many bytes at a time.
const BITOP_CHUNK: u64 = 1 << 20;

/// A bit offset argument (Redis's `getBitOffsetFromArgument`): `#n`
/// means `n * bits` when `bits` is not 0 (BITFIELD); the byte it falls in
/// must be under `limit`.
fn bit_offset(text: &[u8], bits: u32, limit: u64) -> Option<u64> {
    let hash = bits > 0 && text.first() == Some(&b'#');
    let n = parse_i64(if hash { &text[1..] } else { text })?;
    let n = if hash { n.checked_mul(i64::from(bits))? } else { n };
    (n >= 0 && (n as u64 >> 3) < limit).then_some(n as u64)
}

/// The bytes and edge masks BITCOUNT and BITPOS look at: first and last
/// byte (inclusive; first > last: nothing), and in BIT mode the bits of
/// the first and last bytes outside the range.
type BitRange = (i64, i64, u8, u8);

/// A `BitRange` by Redis's rules: negative indexes count from the end,
/// both are clamped.
fn bit_range(len: i64, start: i64, end: i64, bit_mode: bool) -> BitRange {
    let total = if bit_mode { len << 3 } else { len };
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }.max(0).min(total - 1);
    if bit_mode && start <= end {
        let first = !((1u32 << (8 - (start & 7))) - 1) as u8;
        let last = ((1u32 << (7 - (end & 7))) - 1) as u8;
        return (start >> 3, end >> 3, first, last);
    }
    (start, end, 0, 0)
}

/// Where a BITFIELD integer that does not fit goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    Get,
    Set,
    IncrBy,
}

/// One BITFIELD operation.
#[derive(Clone, Copy)]
struct FieldOp {
    kind: FieldKind,
    offset: u64,
    bits: u32,
    signed: bool,
    value: i64,
    overflow: Overflow,
}

/// A BITFIELD type: `i1`..`i64` or `u1`..`u63`; (signed, bits).
fn field_type(text: &[u8]) -> Option<(bool, u32)> {
    let signed = match text.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return None,
    };
    let bits = parse_i64(&text[1..])?;
    (1..=if signed { 64 } else { 63 }).contains(&bits).then_some((signed, bits as u32))
}

fn get_unsigned(bytes: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for _ in 0..bits {
        let byte = bytes[(offset >> 3) as usize];
        value = (value << 1) | u64::from((byte >> (7 - (offset & 7))) & 1);
        offset += 1;
    }
    value
}

fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let value = get_unsigned(bytes, offset, bits);
    if bits < 64 && value & (1 << (bits - 1)) != 0 {
        (value | (u64::MAX << bits)) as i64
    } else {
        value as i64
    }
}

fn set_unsigned(bytes: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bit = ((value >> (bits - 1 - j)) & 1) as u8;
        let shift = 7 - (offset & 7);
        let byte = &mut bytes[(offset >> 3) as usize];
        *byte = (*byte & !(1 << shift)) | (bit << shift);
        offset += 1;
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: None if `value + incr` fits
/// in `bits`, else the result under `overflow` (ignored for FAIL).
fn unsigned_overflow(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = (value as i64).wrapping_neg();
    let wrapped = value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat { max } else { wrapped })
    } else if incr < 0 && incr < min_incr {
        Some(if overflow == Overflow::Sat { 0 } else { wrapped })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, as `unsigned_overflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            c = if c & (1 << (bits - 1)) != 0 { c | mask } else { c & !mask };
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr) {
        Some(if overflow == Overflow::Sat { max } else { wrap() })
    } else if value < min || (bits != 64 && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr) {
        Some(if overflow == Overflow::Sat { min } else { wrap() })
    } else {
        None
    }
}

/// Runs a BITFIELD write operation on `bytes` (long enough): its reply
/// (None: FAIL refused it) and whether it changed the value.
fn field_write(bytes: &mut [u8], op: &FieldOp) -> (Option<i64>, bool) {
    if op.signed {
        let old = get_signed(bytes, op.offset, op.bits);
        let (new, overflowed, reply) = if op.kind == FieldKind::IncrBy {
            let limit = signed_overflow(old, op.value, op.bits, op.overflow);
            let new = limit.unwrap_or(old.wrapping_add(op.value));
            (new, limit.is_some(), new)
        } else {
            let limit = signed_overflow(op.value, 0, op.bits, op.overflow);
            (limit.unwrap_or(op.value), limit.is_some(), old)
        };
        if overflowed && op.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(bytes, op.offset, op.bits, new as u64);
        (Some(reply), old != new)
    } else {
        let old = get_unsigned(bytes, op.offset, op.bits);
        let (new, overflowed, reply) = if op.kind == FieldKind::IncrBy {
            let limit = unsigned_overflow(old, op.value, op.bits, op.overflow);
            let new = limit.unwrap_or(old.wrapping_add(op.value as u64));
            (new, limit.is_some(), new)
        } else {
            let limit = unsigned_overflow(op.value as u64, 0, op.bits, op.overflow);
            (limit.unwrap_or(op.value as u64), limit.is_some(), old)
        };
        if overflowed && op.overflow == Overflow::Fail {
            return (None, false);
        }
        set_unsigned(bytes, op.offset, op.bits, new);
        (Some(reply as i64), old != new)
    }
}

/// A BITFIELD GET on a value whose bytes from `first` on are `window`
/// (up to 9 of them; past the end reads as zeros).
fn field_get(window: &[u8], first: u64, op: &FieldOp) -> i64 {
    let mut buf = [0u8; 9];
    buf[..window.len()].copy_from_slice(window);
    let offset = op.offset - first * 8;
    if op.signed {
        get_signed(&buf, offset, op.bits)
    } else {
        get_unsigned(&buf, offset, op.bits) as i64
    }
}

impl KvServer {
    fn cmd_setbit(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let Some(offset) = bit_offset(&ctx.arg(2), 0, self.string_max()) else {
            ctx.error(BIT_OFFSET);
            return Ok(());
        };
        let on = match parse_i64(&ctx.arg(3)) {
            Some(on @ (0 | 1)) => on as u8,
            _ => {
                ctx.error("ERR bit is not an integer or out of range");
                return Ok(());
            }
        };
        let value = match self.string_of(ctx, &key)? {
            Ok(value) => value,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let byte = offset >> 3;
        let grown = value.as_ref().map_or(0, value_len) <= byte;
        let current = match &value {
            Some(value) if !grown => value_range(ctx.pool, value, byte, 1)?[0],
            _ => 0,
        };
        let shift = 7 - (offset & 7);
        let old = (current >> shift) & 1;
        if grown || old != on {
            let new = (current & !(1 << shift)) | (on << shift);
            self.put_spliced(ctx, &key, value.as_ref(), byte, &[new])?;
        }
        self.notify_created(ctx, value.is_none(), &key);
        self.notify(ctx, notify::STRING, "setbit", &key);
        ctx.int(i64::from(old));
        Ok(())
    }

    fn cmd_getbit(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(offset) = bit_offset(&ctx.arg(2), 0, self.string_max()) else {
            ctx.error(BIT_OFFSET);
            return Ok(());
        };
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        let value = match self.string_of(ctx, &key)? {
            Ok(Some(value)) => value,
            Ok(None) => {
                ctx.int(0);
                return Ok(());
            }
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let byte = offset >> 3;
        let bit = if byte < value_len(&value) {
            (value_range(ctx.pool, &value, byte, 1)?[0] >> (7 - (offset & 7))) & 1
        } else {
            0
        };
        ctx.int(i64::from(bit));
        Ok(())
    }

    /// The string at argument 1 for a bit read: Ok(None) after answering
    /// `missing` (absent key) or WRONGTYPE.
    fn bit_source(&mut self, ctx: &mut Ctx<'_>, missing: i64) -> Result<Option<Value>, StoreError> {
        let key = ctx.arg(1).into_owned();
        self.stats.reads += 1;
        match self.string_of(ctx, &key)? {
            Ok(Some(value)) => Ok(Some(value)),
            Ok(None) => {
                ctx.int(missing);
                Ok(None)
            }
            Err(()) => {
                ctx.error(WRONGTYPE);
                Ok(None)
            }
        }
    }

    fn cmd_bitcount(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Some(value) = self.bit_source(ctx, 0)? else {
            return Ok(());
        };
        let len = value_len(&value) as i64;
        let (first, last, first_mask, last_mask) = match ctx.argc() {
            2 => (0, len - 1, 0, 0),
            4 | 5 => {
                let (Some(start), Some(end)) = (parse_i64(&ctx.arg(2)), parse_i64(&ctx.arg(3))) else {
                    ctx.error(NOT_INTEGER);
                    return Ok(());
                };
                if start < 0 && end < 0 && start > end {
                    ctx.int(0);
                    return Ok(());
                }
                let Some(bit_mode) = range_unit(ctx, 4) else {
                    ctx.error(SYNTAX);
                    return Ok(());
                };
                bit_range(len, start, end, bit_mode)
            }
            _ => {
                ctx.error(SYNTAX);
                return Ok(());
            }
        };
        if first > last {
            ctx.int(0);
            return Ok(());
        }
        let bytes = value_range(ctx.pool, &value, first as u64, (last - first + 1) as u64)?;
        let mut count: u64 = bytes.iter().map(|b| u64::from(b.count_ones())).sum();
        count -= u64::from((bytes[0] & first_mask).count_ones());
        count -= u64::from((bytes[bytes.len() - 1] & last_mask).count_ones());
        ctx.int(count as i64);
        Ok(())
    }

    fn cmd_bitpos(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let bit = match parse_i64(&ctx.arg(2)) {
            Some(bit @ (0 | 1)) => bit as u8,
            Some(_) => {
                ctx.error("ERR The bit argument must be 1 or 0.");
                return Ok(());
            }
            None => {
                ctx.error(NOT_INTEGER);
                return Ok(());
            }
        };
        let Some(value) = self.bit_source(ctx, if bit == 1 { -1 } else { 0 })? else {
            return Ok(());
        };
        let len = value_len(&value) as i64;
        let (range, end_given) = match bitpos_range(ctx, len) {
            Ok(found) => found,
            Err(why) => {
                ctx.error(why);
                return Ok(());
            }
        };
        let (first, last, first_mask, last_mask) = range;
        if first > last {
            ctx.int(-1);
            return Ok(());
        }
        let mut bytes = value_range(ctx.pool, &value, first as u64, (last - first + 1) as u64)?;
        // Bits outside the range read as the opposite of the one sought.
        let n = bytes.len();
        for (at, mask) in [(0, first_mask), (n - 1, last_mask)] {
            bytes[at] = if bit == 1 { bytes[at] & !mask } else { bytes[at] | mask };
        }
        let skip = if bit == 1 { 0 } else { 0xFF };
        let found = bytes.iter().position(|&b| b != skip).map(|i| {
            let b = if bit == 1 { bytes[i] } else { !bytes[i] };
            (first + i as i64) * 8 + i64::from(b.leading_zeros() as u8)
        });
        ctx.int(match found {
            Some(pos) => pos,
            // A clear bit sought without an end is found past the string.
            None if bit == 0 && !end_given => (last + 1) * 8,
            None => -1,
        });
        Ok(())
    }

    fn cmd_bitop(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let op = ctx.conn.args.upper(1).unwrap_or_default();
        if !matches!(op.as_slice(), b"AND" | b"OR" | b"XOR" | b"NOT") {
            ctx.error(SYNTAX);
            return Ok(());
        }
        if op == b"NOT" && ctx.argc() != 4 {
            ctx.error("ERR BITOP NOT must be called with a single source key.");
            return Ok(());
        }
        let dest = ctx.arg(2).into_owned();
        if let Err(why) = key_ok(&dest) {
            ctx.error(&why);
            return Ok(());
        }
        let mut sources = Vec::new();
        for i in 3..ctx.argc() {
            let key = ctx.arg(i).into_owned();
            match self.string_of(ctx, &key)? {
                Ok(value) => sources.push(value),
                Err(()) => {
                    ctx.error(WRONGTYPE);
                    return Ok(());
                }
            }
        }
        let max_len = sources.iter().map(|s| s.as_ref().map_or(0, value_len)).max().unwrap_or(0);
        let mut result = Vec::with_capacity(max_len as usize);
        while (result.len() as u64) < max_len {
            let at = result.len() as u64;
            let chunk = (max_len - at).min(BITOP_CHUNK);
            self.bitop_chunk(ctx, op[0], &sources, at, chunk, &mut result)?;
        }
        let mut ops = Vec::new();
        self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            if max_len == 0 {
                server.delete_ops(ctx.pool, ctx.buffers, ctx.db, &dest, ops)?;
            } else {
                server.clear_for_string(ctx.pool, ctx.buffers, ctx.db, ctx.now, &dest, false, ops)?;
                ops.push(server.put_bytes(ctx, string_key(ctx.db, &dest), &result)?);
            }
            Ok(())
        })?;
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
            let event = if max_len == 0 { ("del", notify::GENERIC) } else { ("set", notify::STRING) };
            self.notify(ctx, event.1, event.0, &dest);
        }
        ctx.int(max_len as i64);
        Ok(())
    }

    /// Appends `len` bytes of BITOP's result from byte `at` to `out`:
    /// `op` ('A'ND, 'O'R, 'X'OR, 'N'OT) of the sources' bytes there (a
    /// short or absent source reads as zeros).
    fn bitop_chunk(
        &self,
        ctx: &Ctx<'_>,
        op: u8,
        sources: &[Option<Value>],
        at: u64,
        len: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), StoreError> {
        let mut acc: Vec<u8> = Vec::new();
        for (i, source) in sources.iter().enumerate() {
            let mut bytes = match source {
                Some(value) if value_len(value) > at => {
                    value_range(ctx.pool, value, at, len.min(value_len(value) - at))?
                }
                _ => Vec::new(),
            };
            bytes.resize(len as usize, 0);
            if i == 0 {
                acc = bytes;
                continue;
            }
            for (a, b) in acc.iter_mut().zip(&bytes) {
                match op {
                    b'A' => *a &= b,
                    b'O' => *a |= b,
                    _ => *a ^= b,
                }
            }
        }
        if op == b'N' {
            acc.iter_mut().for_each(|a| *a = !*a);
        }
        out.extend_from_slice(&acc);
        Ok(())
    }

    fn cmd_bitfield(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.bitfield(ctx, false)
    }

    fn cmd_bitfield_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.bitfield(ctx, true)
    }

    /// BITFIELD and BITFIELD_RO (`read_only`: GET alone).
    fn bitfield(&mut self, ctx: &mut Ctx<'_>, read_only: bool) -> Result<(), StoreError> {
        let ops = match parse_bitfield(ctx, self.string_max()) {
            Ok(ops) => ops,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let writes = ops.iter().any(|op| op.kind != FieldKind::Get);
        if writes && read_only {
            ctx.error("ERR BITFIELD_RO only supports the GET subcommand");
            return Ok(());
        }
        let key = ctx.arg(1).into_owned();
        if writes {
            if let Err(why) = key_ok(&key) {
                ctx.error(&why);
                return Ok(());
            }
        }
        let value = match self.string_of(ctx, &key)? {
            Ok(value) => value,
            Err(()) => {
                ctx.error(WRONGTYPE);
                return Ok(());
            }
        };
        let replies = if writes {
            self.bitfield_write(ctx, &key, value.as_ref(), &ops)?
        } else {
            self.stats.reads += 1;
            let mut replies = Vec::with_capacity(ops.len());
            for op in &ops {
                let (len, first) = (value.as_ref().map_or(0, value_len), op.offset >> 3);
                let window = match &value {
                    Some(value) if first < len => value_range(ctx.pool, value, first, (len - first).min(9))?,
                    _ => Vec::new(),
                };
                replies.push(Some(field_get(&window, first, op)));
            }
            replies
        };
        ctx.array(replies.len());
        for reply in replies {
            match reply {
                Some(n) => ctx.int(n),
                None => ctx.null(),
            }
        }
        Ok(())
    }

    /// Runs BITFIELD's operations, at least one a write, on the bytes
    /// they touch (the string grown to hold the highest bit written) and
    /// stores them if the string was created, grown or changed. Returns
    /// the replies.
    fn bitfield_write(
        &mut self,
        ctx: &mut Ctx<'_>,
        key: &[u8],
        value: Option<&Value>,
        ops: &[FieldOp],
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let len = value.map_or(0, value_len);
        let writes = ops.iter().filter(|op| op.kind != FieldKind::Get);
        let needed = writes.map(|op| ((op.offset + u64::from(op.bits) - 1) >> 3) + 1).max().expect("a write");
        let gets = ops.iter().filter(|op| op.kind == FieldKind::Get).map(|op| ((op.offset >> 3) + 9).min(len));
        // The window of bytes the operations touch: [low, high).
        let low = ops.iter().map(|op| op.offset >> 3).min().expect("an operation");
        let high = gets.max().unwrap_or(0).max(needed);
        let mut window = match value {
            Some(value) if low < len => value_range(ctx.pool, value, low, high.min(len) - low)?,
            _ => Vec::new(),
        };
        window.resize((high - low) as usize, 0);
        let mut changed = value.is_none() || len < needed;
        let mut replies = Vec::with_capacity(ops.len());
        for op in ops {
            let op = FieldOp { offset: op.offset - low * 8, ..*op };
            if op.kind == FieldKind::Get {
                let first = op.offset >> 3;
                let rest = window.get(first as usize..).unwrap_or_default();
                replies.push(Some(field_get(&rest[..rest.len().min(9)], first, &op)));
                continue;
            }
            let (reply, change) = field_write(&mut window, &op);
            changed |= change;
            replies.push(reply);
        }
        if changed {
            self.put_spliced(ctx, key, value, low, &window)?;
            self.notify_created(ctx, value.is_none(), key);
            self.notify(ctx, notify::STRING, "setbit", key);
        }
        Ok(replies)
    }
}

/// BITCOUNT's and BITPOS's optional unit at argument `i`: Some(true) for
/// BIT, Some(false) for BYTE or none given, None for anything else.
fn range_unit(ctx: &Ctx<'_>, i: usize) -> Option<bool> {
    if i >= ctx.argc() {
        return Some(false);
    }
    match ctx.conn.args.upper(i).unwrap_or_default().as_slice() {
        b"BIT" => Some(true),
        b"BYTE" => Some(false),
        _ => None,
    }
}

/// BITPOS's range (`bit_range`) in a string of `len` bytes, and whether
/// an end was given; Err: the error reply.
fn bitpos_range(ctx: &Ctx<'_>, len: i64) -> Result<(BitRange, bool), &'static str> {
    match ctx.argc() {
        3 => Ok(((0, len - 1, 0, 0), false)),
        4..=6 => {
            let start = parse_i64(&ctx.arg(3)).ok_or(NOT_INTEGER)?;
            let bit_mode = if ctx.argc() == 6 { range_unit(ctx, 5).ok_or(SYNTAX)? } else { false };
            let end_given = ctx.argc() >= 5;
            let end = if end_given { parse_i64(&ctx.arg(4)).ok_or(NOT_INTEGER)? } else { len - 1 };
            Ok((bit_range(len, start, end, bit_mode), end_given))
        }
        _ => Err(SYNTAX),
    }
}

/// BITFIELD's operations, checked as Redis does; Err: the error reply.
fn parse_bitfield(ctx: &Ctx<'_>, limit: u64) -> Result<Vec<FieldOp>, String> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < ctx.argc() {
        let remaining = ctx.argc() - j - 1;
        let kind = match ctx.conn.args.upper(j).unwrap_or_default().as_slice() {
            b"GET" if remaining >= 2 => FieldKind::Get,
            b"SET" if remaining >= 3 => FieldKind::Set,
            b"INCRBY" if remaining >= 3 => FieldKind::IncrBy,
            b"OVERFLOW" if remaining >= 1 => {
                overflow = match ctx.conn.args.upper(j + 1).unwrap_or_default().as_slice() {
                    b"WRAP" => Overflow::Wrap,
                    b"SAT" => Overflow::Sat,
                    b"FAIL" => Overflow::Fail,
                    _ => return Err("ERR Invalid OVERFLOW type specified".into()),
                };
                j += 2;
                continue;
            }
            _ => return Err(SYNTAX.into()),
        };
        let (signed, bits) = field_type(&ctx.arg(j + 1)).ok_or(BITFIELD_TYPE)?;
        let offset = bit_offset(&ctx.arg(j + 2), bits, limit).ok_or(BIT_OFFSET)?;
        let mut value = 0;
        if kind != FieldKind::Get {
            // The highest byte written stays within the limit too.
            if (offset + u64::from(bits) - 1) >> 3 >= limit {
                return Err(BIT_OFFSET.into());
            }
            value = parse_i64(&ctx.arg(j + 3)).ok_or(NOT_INTEGER)?;
        }
        ops.push(FieldOp { kind, offset, bits, signed, value, overflow });
        j += if kind == FieldKind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitfield_overflow_as_redis() {
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Wrap), Some(0));
        assert_eq!(unsigned_overflow(255, 1, 8, Overflow::Sat), Some(255));
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Sat), Some(0));
        assert_eq!(unsigned_overflow(0, -1, 8, Overflow::Wrap), Some(255));
        assert_eq!(unsigned_overflow(10, -10, 8, Overflow::Wrap), None);
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Wrap), Some(-128));
        assert_eq!(signed_overflow(127, 1, 8, Overflow::Sat), Some(127));
        assert_eq!(signed_overflow(-128, -1, 8, Overflow::Sat), Some(-128));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Overflow::Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(5, -10, 8, Overflow::Wrap), None);
    }

    #[test]
    fn bitfields_are_big_endian_bits() {
        let mut bytes = [0u8; 3];
        set_unsigned(&mut bytes, 5, 8, 0xFF);
        assert_eq!(bytes, [0b0000_0111, 0b1111_1000, 0]);
        assert_eq!(get_unsigned(&bytes, 5, 8), 0xFF);
        assert_eq!(get_signed(&bytes, 5, 8), -1);
    }

    #[test]
    fn bit_ranges_as_redis() {
        assert_eq!(bit_range(3, 0, -1, false), (0, 2, 0, 0));
        assert_eq!(bit_range(3, 5, 20, true), (0, 2, 0b1111_1000, 0b0000_0111));
        assert_eq!(bit_range(3, 5, 30, true), (0, 2, 0b1111_1000, 0));
        assert_eq!(bit_range(3, -100, 100, false), (0, 2, 0, 0));
        assert_eq!(bit_offset(b"#2", 8, 100), Some(16));
        assert_eq!(bit_offset(b"#2", 0, 100), None);
        assert_eq!(bit_offset(b"800", 0, 100), None);
        assert_eq!(field_type(b"u64"), None);
        assert_eq!(field_type(b"i64"), Some((true, 64)));
    }
}
