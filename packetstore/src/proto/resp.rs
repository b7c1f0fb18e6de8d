//! The Redis protocol (RESP2, and RESP3 after `HELLO 3`): an incremental
//! request parser over a connection's [`Stream`] and the reply encoders.
//!
//! Owns: the parse state of one connection's current command. Small
//! arguments (up to `SMALL_ARG_MAX` bytes: names, keys, numbers, small
//! values) are copied into the command; larger ones (values) stay where
//! they were received, as extents of pool buffers on which the command holds
//! a reference (zero copy), or are copied into pool buffers when they were
//! received into private memory.
//!
//! Limits are explicit: a command has at most `ARGS_MAX` arguments, a line
//! at most `LINE_SIZE_MAX` bytes, an argument at most the caller's value
//! limit. A bulk argument over the limit is skipped (its bytes drained) and
//! the command answered with an error: the connection stays usable. A bulk
//! length over `BULK_LEN_MAX` (and over the value limit) is not skipped but
//! malformed, as in Redis (proto-max-bulk-len): nobody sends that much by
//! mistake, and draining it would hold the error back for as long. A
//! malformed frame cannot be resynchronised: an error, then close.
//!
//! Invariant: every reference the parsed command holds (`Args::extents`)
//! is given back by `Args::clear` or `Args::release`.

use std::ops::Range;

use crate::io::app::Persist;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;

/// `Args::refused` when the pool had no room for a value (the other
/// refusal is an argument over the value limit).
pub const REFUSED_NO_ROOM: &str = "OOM the pool is full: the value was not stored";

/// Arguments up to this size are copied into the command.
pub const SMALL_ARG_MAX: usize = 64;
/// The most arguments a command may have (Redis: 1M; here, bounded for
/// memory: 64 Ki arguments of up to 64 bytes copied).
pub const ARGS_MAX: usize = 65_536;
/// The longest line (`*N`, `$N`, or an inline command).
pub const LINE_SIZE_MAX: usize = 64 * 1024;
/// Bulk lengths above this (and above the value limit) are malformed rather
/// than skipped: Redis's default proto-max-bulk-len.
pub const BULK_LEN_MAX: u64 = 512 << 20;

/// One argument: copied bytes, or a value in pool buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Small(Range<usize>),
    Value { extents: Range<usize>, len: u64 },
}

/// A parsed command's arguments.
#[derive(Default)]
pub struct Args {
    small: Vec<u8>,
    pub list: Vec<Arg>,
    /// Extents of `Value` arguments; the command holds one reference on
    /// each.
    pub extents: Vec<Extent>,
    /// Set when the command cannot run (an argument over the limit, no
    /// room to receive a value): answered with this error.
    pub refused: Option<String>,
}

impl Args {
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Argument `i`'s length.
    pub fn arg_len(&self, i: usize) -> u64 {
        match &self.list[i] {
            Arg::Small(range) => range.len() as u64,
            Arg::Value { len, .. } => *len,
        }
    }

    /// Argument `i`'s bytes: borrowed if small, else copied out of the pool.
    pub fn bytes<'a>(&'a self, pool: &Pool, i: usize) -> std::borrow::Cow<'a, [u8]> {
        match &self.list[i] {
            Arg::Small(range) => std::borrow::Cow::Borrowed(&self.small[range.clone()]),
            Arg::Value { extents, len } => {
                let mut out = Vec::with_capacity(*len as usize);
                pool.read_extents(&self.extents[extents.clone()], &mut out);
                std::borrow::Cow::Owned(out)
            }
        }
    }

    /// Argument `i`'s pool extents (None for a small argument).
    pub fn extents(&self, i: usize) -> Option<&[Extent]> {
        match &self.list[i] {
            Arg::Small(_) => None,
            Arg::Value { extents, .. } => Some(&self.extents[extents.clone()]),
        }
    }

    /// Argument `i` in upper case, if it is small (command names, options).
    pub fn upper(&self, i: usize) -> Option<Vec<u8>> {
        match &self.list[i] {
            Arg::Small(range) => Some(self.small[range.clone()].to_ascii_uppercase()),
            Arg::Value { .. } => None,
        }
    }

    /// Arguments made of bytes in memory (a script's command): every one
    /// small (copied), none holding a pool reference.
    pub fn from_bytes<B: AsRef<[u8]>>(args: &[B]) -> Args {
        let mut out = Args::default();
        for arg in args {
            let start = out.small.len();
            out.small.extend_from_slice(arg.as_ref());
            out.list.push(Arg::Small(start..out.small.len()));
        }
        out
    }

    /// Drops the first `n` arguments, each a small one (a prefix a shard's
    /// link puts before a command it relays).
    pub fn drop_front(&mut self, n: usize) {
        assert!(self.list[..n].iter().all(|arg| matches!(arg, Arg::Small(_))), "a link's prefix is small");
        self.list.drain(..n);
    }

    /// Drops the arguments, giving back the references they hold.
    pub fn clear(&mut self, buffers: &mut Buffers) {
        buffers.release_extents(&self.extents).expect("the command's references");
        self.extents.clear();
        self.small.clear();
        self.list.clear();
        self.refused = None;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum State {
    /// Expecting a command: `*N` or an inline command.
    #[default]
    Start,
    /// Expecting `$len` of one of `left` more arguments.
    Header { left: usize },
    /// Reading a bulk argument's bytes.
    Bulk { left: usize, len: u64, taken: u64, skip: bool, first_extent: usize },
    /// Expecting the CRLF after a bulk argument.
    BulkEnd { left: usize },
}

/// What parsing produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command is in `Args`.
    Command,
    /// More bytes are needed.
    Incomplete,
    /// The stream is malformed: answer this error, then close.
    Malformed(String),
}

/// The parse state of one connection.
#[derive(Default)]
pub struct Parser {
    state: State,
    /// Copy mode: bytes used in the value's last copy buffer (None: no
    /// copy buffer yet for this value).
    copy_fill: Option<usize>,
}

/// How to receive large arguments.
#[derive(Clone, Copy, Debug)]
pub struct ReceiveConfig {
    pub persist: Persist,
    pub value_size_max: u64,
    /// Below this many free buffers, values are refused (not kept).
    pub buffers_reserve: u32,
}

impl Parser {
    /// Parses from `stream` into `args` until a command is complete.
    /// `release` gives back consumed segments.
    // Allowed: one state machine over the RESP grammar, the protocol fast
    // path; split, its states would pass the parse position between calls.
    #[allow(clippy::too_many_lines)]
    pub fn parse(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        config: &ReceiveConfig,
        stream: &mut Stream,
        args: &mut Args,
        release: &mut crate::io::app::Release<'_>,
    ) -> Parsed {
        loop {
            match self.state {
                State::Start => {
                    if stream.is_empty() {
                        return Parsed::Incomplete;
                    }
                    // The usual command: whole in the front segment, every
                    // argument small. Parsed in one pass and consumed at
                    // once; anything else takes the general path below.
                    let small_max = SMALL_ARG_MAX.min(usize::try_from(config.value_size_max).unwrap_or(usize::MAX));
                    if let Some(taken) = parse_small_command(stream.front(), small_max, args) {
                        stream.consume(taken, |segment| release(segment, buffers));
                        return Parsed::Command;
                    }
                    let head = take_line(stream, release, buffers, |line| match line.first() {
                        Some(b'*') => Head::Count(parse_int(&line[1..])),
                        _ => Head::Inline(split_inline(line)),
                    });
                    let Some(head) = head else {
                        if stream.len() >= LINE_SIZE_MAX {
                            return Parsed::Malformed("Protocol error: too big inline request".into());
                        }
                        return Parsed::Incomplete;
                    };
                    match head {
                        Head::Count(None) => {
                            return Parsed::Malformed("Protocol error: invalid multibulk length".into());
                        }
                        Head::Count(Some(count)) if count > ARGS_MAX as i64 => {
                            return Parsed::Malformed("Protocol error: invalid multibulk length".into());
                        }
                        Head::Count(Some(count)) if count <= 0 => continue, // an empty command: nothing to do
                        Head::Count(Some(count)) => self.state = State::Header { left: count as usize },
                        // An inline command: words split as Redis's
                        // sdssplitargs splits them (quotes, escapes).
                        Head::Inline(None) => {
                            return Parsed::Malformed("Protocol error: unbalanced quotes in request".into());
                        }
                        Head::Inline(Some(words)) => {
                            for word in words {
                                let start = args.small.len();
                                args.small.extend_from_slice(&word);
                                args.list.push(Arg::Small(start..args.small.len()));
                            }
                            if args.list.is_empty() {
                                continue;
                            }
                            return Parsed::Command;
                        }
                    }
                }
                State::Header { left } => {
                    let header = take_line(stream, release, buffers, |line| match line.first() {
                        Some(b'$') => Ok(parse_int(&line[1..])),
                        first => Err(first.copied()),
                    });
                    let Some(header) = header else {
                        if stream.len() >= LINE_SIZE_MAX {
                            return Parsed::Malformed("Protocol error: too big bulk header".into());
                        }
                        return Parsed::Incomplete;
                    };
                    let len = match header {
                        Ok(len) => len,
                        Err(first) => {
                            let got = first.map_or(String::from(" "), |b| (b as char).to_string());
                            return Parsed::Malformed(format!("Protocol error: expected '$', got '{got}'"));
                        }
                    };
                    let bulk_len_max = BULK_LEN_MAX.max(config.value_size_max);
                    let Some(len) = len.filter(|&n| n >= 0 && n as u64 <= bulk_len_max) else {
                        return Parsed::Malformed("Protocol error: invalid bulk length".into());
                    };
                    let len = len as u64;
                    let skip = len > config.value_size_max;
                    if skip && args.refused.is_none() {
                        args.refused = Some(format!(
                            "ERR argument of {len} bytes is over the limit of {} bytes",
                            config.value_size_max
                        ));
                    }
                    self.copy_fill = None;
                    self.state = State::Bulk { left, len, taken: 0, skip, first_extent: args.extents.len() };
                }
                State::Bulk { left, len, taken, skip, first_extent } => {
                    if len as usize <= SMALL_ARG_MAX && !skip {
                        // Small: wait until it is all there, then copy it.
                        if (stream.len() as u64) < len {
                            return Parsed::Incomplete;
                        }
                        let start = args.small.len();
                        // The usual case, the argument and its CRLF in the
                        // front segment: copied and checked there, in one
                        // step (issue 36: the parse was 1,800 instructions
                        // a command, a fifth of a SET's).
                        let front = stream.front();
                        let whole = len as usize + 2;
                        if front.len() >= whole && &front[whole - 2..whole] == b"\r\n" {
                            args.small.extend_from_slice(&front[..whole - 2]);
                            stream.consume(whole, |segment| release(segment, buffers));
                            args.list.push(Arg::Small(start..args.small.len()));
                            if self.argument_done(left) {
                                return Parsed::Command;
                            }
                            continue;
                        }
                        stream.for_each_slice(len as usize, |bytes| args.small.extend_from_slice(bytes));
                        stream.consume(len as usize, |segment| release(segment, buffers));
                        args.list.push(Arg::Small(start..args.small.len()));
                        self.state = State::BulkEnd { left };
                        continue;
                    }
                    let take = (len - taken).min(stream.len() as u64) as usize;
                    if take == 0 && len > taken {
                        return Parsed::Incomplete;
                    }
                    let refuse_now = !skip
                        && args.refused.is_none()
                        && config.persist != Persist::Off
                        && buffers.free_count() < config.buffers_reserve;
                    if refuse_now {
                        args.refused = Some(REFUSED_NO_ROOM.into());
                    }
                    let keep = !skip && args.refused.is_none();
                    if keep && take > 0 && !self.keep(pool, buffers, config, stream, take, args) {
                        args.refused = Some(REFUSED_NO_ROOM.into());
                    }
                    stream.consume(take, |segment| release(segment, buffers));
                    let taken = taken + take as u64;
                    if taken < len {
                        self.state = State::Bulk { left, len, taken, skip, first_extent };
                        return Parsed::Incomplete;
                    }
                    if args.refused.is_some() {
                        // Keep the argument count right; its bytes are gone.
                        args.list.push(Arg::Small(0..0));
                    } else {
                        args.list.push(Arg::Value { extents: first_extent..args.extents.len(), len });
                    }
                    self.state = State::BulkEnd { left };
                }
                State::BulkEnd { left } => {
                    if stream.len() < 2 {
                        return Parsed::Incomplete;
                    }
                    let mut crlf = [0u8; 2];
                    let mut at = 0;
                    stream.for_each_slice(2, |bytes| {
                        crlf[at..at + bytes.len()].copy_from_slice(bytes);
                        at += bytes.len();
                    });
                    if &crlf != b"\r\n" {
                        return Parsed::Malformed("Protocol error: bulk argument without CRLF".into());
                    }
                    stream.consume(2, |segment| release(segment, buffers));
                    if self.argument_done(left) {
                        return Parsed::Command;
                    }
                }
            }
        }
    }

    /// An argument and its CRLF are in: on to the next argument's header,
    /// or, after the last (`left` 1), to the next command. True: the
    /// command is complete.
    fn argument_done(&mut self, left: usize) -> bool {
        if left == 1 {
            self.state = State::Start;
            return true;
        }
        self.state = State::Header { left: left - 1 };
        false
    }

    /// Keeps `take` leading bytes of `stream` as value extents: zero copy
    /// (a reference on each received buffer) or copied into pool buffers.
    /// False when the pool is full (then nothing of the value is kept).
    fn keep(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        config: &ReceiveConfig,
        stream: &Stream,
        take: usize,
        args: &mut Args,
    ) -> bool {
        let State::Bulk { first_extent, .. } = self.state else { unreachable!("keeping outside a bulk") };
        let zero_copy = config.persist == Persist::ZeroCopy;
        let ok = stream.keep(pool, buffers, take, zero_copy, &mut args.extents, &mut self.copy_fill).is_ok();
        if !ok {
            buffers.release_extents(&args.extents[first_extent..]).expect("the command's references");
            args.extents.truncate(first_extent);
        }
        ok
    }

    /// The connection is gone mid-command.
    pub fn abandon(&mut self, buffers: &mut Buffers, args: &mut Args) {
        args.clear(buffers);
        self.state = State::Start;
    }
}

/// Parses one whole command from `bytes` when it is the usual one: `*N`
/// then N bulk arguments of at most `small_max` bytes each, all in
/// `bytes`, every length canonical as `parse_int` reads it. Returns the
/// bytes it took, with the arguments in `args`; None (and `args` as it
/// was): not such a command, or not all there: the general path decides.
fn parse_small_command(bytes: &[u8], small_max: usize, args: &mut Args) -> Option<usize> {
    let (count, mut at) = small_number(bytes, 0, b'*')?;
    if count == 0 || count > ARGS_MAX {
        return None;
    }
    let (small_before, list_before) = (args.small.len(), args.list.len());
    for _ in 0..count {
        let parsed = small_number(bytes, at, b'$')
            .filter(|&(len, _)| len <= small_max)
            .and_then(|(len, from)| Some((from, bytes.get(from..from + len + 2)?)))
            .filter(|(_, bulk)| bulk.ends_with(b"\r\n"));
        let Some((from, bulk)) = parsed else {
            args.small.truncate(small_before);
            args.list.truncate(list_before);
            return None;
        };
        let start = args.small.len();
        args.small.extend_from_slice(&bulk[..bulk.len() - 2]);
        args.list.push(Arg::Small(start..args.small.len()));
        at = from + bulk.len();
    }
    Some(at)
}

/// `mark` then a canonical non-negative decimal (no sign, no leading
/// zero, at most 9 digits) then CRLF, at `bytes[at..]`: the number and
/// where what follows begins.
fn small_number(bytes: &[u8], at: usize, mark: u8) -> Option<(usize, usize)> {
    const DIGITS_MAX: usize = 9;
    if *bytes.get(at)? != mark {
        return None;
    }
    let digits = &bytes[at + 1..];
    let end = digits.iter().take(DIGITS_MAX + 1).position(|&b| !b.is_ascii_digit())?;
    if end == 0 || (end > 1 && digits[0] == b'0') || digits.get(end..end + 2)? != b"\r\n" {
        return None;
    }
    let value = digits[..end].iter().fold(0usize, |value, &b| value * 10 + usize::from(b - b'0'));
    Some((value, at + 1 + end + 2))
}

/// What a command's first line says.
enum Head {
    /// `*N`: N arguments follow (None: not a valid count).
    Count(Option<i64>),
    /// An inline command's words (None: unbalanced quotes).
    Inline(Option<Vec<Vec<u8>>>),
}

/// Takes one CRLF-terminated line off the stream and answers what `read`
/// makes of it (the line without its CRLF, borrowed: no copy, no
/// allocation per line). Most lines sit whole in the front segment and are
/// found there; a line that straddles segments is gathered (bounded by
/// `LINE_SIZE_MAX`). None: no whole line yet.
fn take_line<R>(
    stream: &mut Stream,
    release: &mut crate::io::app::Release<'_>,
    buffers: &mut Buffers,
    read: impl FnOnce(&[u8]) -> R,
) -> Option<R> {
    let front = stream.front();
    let (answer, taken) = match find_crlf(front) {
        Some(end) => (read(&front[..end]), end + 2),
        None if front.len() == stream.len() => return None,
        None => {
            let window = stream.prefix(LINE_SIZE_MAX);
            let end = find_crlf(window)?;
            (read(&window[..end]), end + 2)
        }
    };
    stream.consume(taken, |segment| release(segment, buffers));
    Some(answer)
}

fn find_crlf(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = bytes[from..].iter().position(|&b| b == b'\r') {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b'\n') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// A length as Redis reads it (`string2ll`): canonical decimal only, so no
/// sign but a leading '-', no leading zeros, no "-0", within i64.
fn parse_int(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(b - b'0');
        value = value.checked_mul(10)?;
        value = if negative { value.checked_sub(digit)? } else { value.checked_add(digit)? };
    }
    Some(value)
}

// ---- replies ----

/// Reply encoding for one connection (RESP2 or RESP3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Encoder {
    pub resp3: bool,
}

impl Encoder {
    pub fn simple(&self, out: &mut Vec<u8>, text: &str) {
        out.push(b'+');
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"\r\n");
    }

    pub fn ok(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"+OK\r\n");
    }

    /// An error: `text` starts with its code (ERR, WRONGTYPE, ...).
    pub fn error(&self, out: &mut Vec<u8>, text: &str) {
        out.push(b'-');
        // An error is one line.
        out.extend(text.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        out.extend_from_slice(b"\r\n");
    }

    pub fn int(&self, out: &mut Vec<u8>, value: i64) {
        out.push(b':');
        push_int(out, value);
        out.extend_from_slice(b"\r\n");
    }

    pub fn null(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    /// A null array (EXEC of a transaction a watched key failed).
    pub fn null_array(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if self.resp3 { b"_\r\n" } else { b"*-1\r\n" });
    }

    pub fn bulk(&self, out: &mut Vec<u8>, bytes: &[u8]) {
        self.bulk_header(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
    }

    pub fn bulk_header(&self, out: &mut Vec<u8>, len: u64) {
        out.push(b'$');
        push_int(out, len as i64);
        out.extend_from_slice(b"\r\n");
    }

    pub fn array(&self, out: &mut Vec<u8>, len: usize) {
        out.push(b'*');
        push_int(out, len as i64);
        out.extend_from_slice(b"\r\n");
    }

    /// A set of `len` elements (RESP2: an array).
    pub fn set(&self, out: &mut Vec<u8>, len: usize) {
        out.push(if self.resp3 { b'~' } else { b'*' });
        push_int(out, len as i64);
        out.extend_from_slice(b"\r\n");
    }

    /// A map of `len` pairs (RESP2: a flat array of 2 * len).
    pub fn map(&self, out: &mut Vec<u8>, len: usize) {
        if self.resp3 {
            out.push(b'%');
            push_int(out, len as i64);
            out.extend_from_slice(b"\r\n");
        } else {
            self.array(out, 2 * len);
        }
    }

    /// A double (a sorted set's score): RESP3 `,`, RESP2 a bulk string,
    /// both as Redis 7.0 prints it (`format_double`).
    pub fn double(&self, out: &mut Vec<u8>, value: f64) {
        let text = format_double(value);
        if self.resp3 {
            out.push(b',');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(out, text.as_bytes());
        }
    }

    /// A verbatim text (INFO): RESP3 `=`, RESP2 a bulk string.
    pub fn verbatim(&self, out: &mut Vec<u8>, text: &str) {
        if self.resp3 {
            out.push(b'=');
            push_int(out, text.len() as i64 + 4);
            out.extend_from_slice(b"\r\ntxt:");
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        } else {
            self.bulk(out, text.as_bytes());
        }
    }
}

/// A double as Redis 7.0 prints it: C's `%.17g` (17 significant digits,
/// trailing zeros dropped, an exponent below 1e-4 or from 1e17 on), and
/// `inf` / `-inf`.
pub fn format_double(value: f64) -> String {
    fn trim(text: &str) -> &str {
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.')
        } else {
            text
        }
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{value:.16e}");
    let (mantissa, exponent) = scientific.split_once('e').expect("Rust's e format has an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    if !(-4..17).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.abs())
    } else {
        let decimals = (16 - exponent).max(0) as usize;
        trim(&format!("{value:.decimals$}")).to_string()
    }
}

pub fn push_int(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    crate::proto::http::push_decimal(out, value.unsigned_abs());
}

/// Redis's glob-style pattern match (`*`, `?`, `[...]` with `^` and
/// ranges, `\` escapes), on bytes.
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let (mut star_p, mut star_t) = (None, 0usize);
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star_p = Some(p);
                    star_t = t;
                    p += 1;
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, text[t]) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if pattern[p + 1] == text[t] {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if c == text[t] {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
            }
        }
        // Mismatch: backtrack to the last star, if any.
        match star_p {
            Some(sp) => {
                p = sp + 1;
                star_t += 1;
                t = star_t;
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Matches `c` against the class starting at `pattern[p] == '['`: whether
/// it matched and the index after the class; None if the class is not
/// closed.
fn class_match(pattern: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    let mut i = p + 1;
    let negate = pattern.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let b = *pattern.get(i)?;
        if b == b']' && !first {
            break;
        }
        first = false;
        if b == b'\\' {
            let e = *pattern.get(i + 1)?;
            matched |= e == c;
            i += 2;
        } else if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some_and(|&e| e != b']') {
            let (lo, hi) = (b.min(pattern[i + 2]), b.max(pattern[i + 2]));
            matched |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            matched |= b == c;
            i += 1;
        }
    }
    Some((matched != negate, i + 1))
}

/// The length of the first complete reply in `buf` (RESP2 or RESP3, any
/// nesting): Ok(None) while it is incomplete, Err for bytes that are no
/// reply. Counts values left instead of recursing, so nesting depth costs
/// no stack.
pub fn reply_len(buf: &[u8]) -> Result<Option<usize>, &'static str> {
    let mut at = 0;
    let mut values_left: u64 = 1;
    while values_left > 0 {
        let Some(eol) = buf[at..].windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let line = &buf[at..at + eol];
        at += eol + 2;
        values_left -= 1;
        let Some((&kind, rest)) = line.split_first() else { return Err("an empty reply line") };
        let number = || std::str::from_utf8(rest).ok().and_then(|n| n.parse::<i64>().ok()).ok_or("a malformed length");
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            b'$' | b'!' | b'=' => {
                let len = number()?;
                if len >= 0 {
                    let end = at + len as usize + 2;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    if &buf[end - 2..end] != b"\r\n" {
                        return Err("a bulk string without its CRLF");
                    }
                    at = end;
                }
            }
            b'*' | b'~' | b'>' => values_left += number()?.max(0) as u64,
            b'%' => values_left += 2 * number()?.max(0) as u64,
            // An attribute map comes before the value it describes.
            b'|' => values_left += 2 * number()?.max(0) as u64 + 1,
            _ => return Err("an unknown reply type"),
        }
    }
    Ok(Some(at))
}

/// Splits an inline command as Redis's `sdssplitargs`: words separated by
/// white space; "double quotes" with the escapes \n \r \t \b \a \\ \"
/// and \xHH; 'single quotes' with \' only. None: a quote left open, or a
/// closing quote followed by something other than white space.
pub fn split_inline(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let space = |b: u8| matches!(b, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c);
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && space(line[i]) {
            i += 1;
        }
        if i == line.len() {
            return Some(words);
        }
        let mut word = Vec::new();
        let (mut double, mut single) = (false, false);
        loop {
            if double {
                let c = *line.get(i)?;
                let next = line.get(i + 1).copied();
                if c == b'\\' && next == Some(b'x') {
                    if let (Some(h), Some(l)) =
                        (line.get(i + 2).and_then(|&b| hex(b)), line.get(i + 3).and_then(|&b| hex(b)))
                    {
                        word.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && next.is_some() {
                    word.push(match next? {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    i += 2;
                } else if c == b'"' {
                    if next.is_some_and(|b| !space(b)) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                    i += 1;
                }
            } else if single {
                let c = *line.get(i)?;
                let next = line.get(i + 1).copied();
                if c == b'\\' && next == Some(b'\'') {
                    word.push(b'\'');
                    i += 2;
                } else if c == b'\'' {
                    if next.is_some_and(|b| !space(b)) {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    word.push(c);
                    i += 1;
                }
            } else {
                match line.get(i) {
                    None => break,
                    Some(&c) if space(c) || c == 0 => {
                        i += 1;
                        break;
                    }
                    Some(b'"') => double = true,
                    Some(b'\'') => single = true,
                    Some(&c) => word.push(c),
                }
                i += 1;
            }
        }
        words.push(word);
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn inline_commands_split_as_redis_s_sdssplitargs() {
        let words = |line: &[u8]| {
            split_inline(line).map(|w| w.into_iter().map(|b| String::from_utf8(b).unwrap()).collect::<Vec<_>>())
        };
        assert_eq!(words(b"set  \"a b\" c"), Some(vec!["set".into(), "a b".into(), "c".into()]));
        assert_eq!(words(b"echo \"\\x41\\n\" 'it\\'s'"), Some(vec!["echo".into(), "A\n".into(), "it's".into()]));
        assert_eq!(words(b"set \"\"\"test-key\"\"\" v"), None, "a quote closed and reopened at once");
        assert_eq!(words(b"get \"open"), None);
        assert_eq!(words(b"a\0b"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(words(b"   "), Some(vec![]));
    }

    use super::*;

    #[test]
    fn glob_patterns() {
        for (pattern, text, expected) in [
            (&b"*"[..], &b"anything"[..], true),
            (b"user:*", b"user:42", true),
            (b"user:*", b"users", false),
            (b"h?llo", b"hello", true),
            (b"h?llo", b"hllo", false),
            (b"h[ae]llo", b"hallo", true),
            (b"h[ae]llo", b"hillo", false),
            (b"h[^e]llo", b"hallo", true),
            (b"h[^e]llo", b"hello", false),
            (b"h[a-b]llo", b"hbllo", true),
            (b"a\\*b", b"a*b", true),
            (b"a\\*b", b"axb", false),
            (b"*a*b*", b"xxaxxbxx", true),
            (b"", b"", true),
            (b"", b"x", false),
            (b"key:[", b"key:[", true),
        ] {
            assert_eq!(glob_match(pattern, text), expected, "{:?} ~ {:?}", String::from_utf8_lossy(pattern), text);
        }
    }

    #[test]
    fn lengths_are_canonical_decimal_as_in_redis() {
        for (text, want) in [
            (&b"0"[..], Some(0)),
            (b"12", Some(12)),
            (b"-1", Some(-1)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None),
            (b"+1", None),
            (b"01", None),
            (b"-0", None),
            (b"", None),
            (b"-", None),
            (b"1 ", None),
        ] {
            assert_eq!(parse_int(text), want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn doubles_print_as_redis_7_0() {
        for (value, text) in [
            (1.1, "1.1000000000000001"),
            (1.0, "1"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
        ] {
            assert_eq!(format_double(value), text, "{value:e}");
        }
    }

    #[test]
    fn integers_encode() {
        let mut out = Vec::new();
        Encoder { resp3: false }.int(&mut out, -1234);
        Encoder { resp3: false }.int(&mut out, i64::MIN);
        assert_eq!(out, b":-1234\r\n:-9223372036854775808\r\n");
    }
}

#[cfg(test)]
mod reply_tests {
    use super::reply_len;

    #[test]
    fn reply_len_finds_whole_replies() {
        let cases: &[&[u8]] = &[
            b"+OK\r\n",
            b"-ERR no\r\n",
            b":42\r\n",
            b"$3\r\nabc\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"*-1\r\n",
            b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
            b"%1\r\n+k\r\n$2\r\n\r\n\r\n",
            b"|1\r\n+a\r\n:1\r\n+value\r\n",
            b"_\r\n",
            b"=7\r\ntxt:abc\r\n",
        ];
        for reply in cases {
            let mut joined = reply.to_vec();
            joined.extend_from_slice(b"+NEXT\r\n");
            assert_eq!(reply_len(&joined), Ok(Some(reply.len())), "{}", String::from_utf8_lossy(reply));
            for cut in 0..reply.len() {
                assert_eq!(reply_len(&reply[..cut]), Ok(None), "{} cut at {cut}", String::from_utf8_lossy(reply));
            }
        }
        assert!(reply_len(b"?what\r\n").is_err());
        assert!(reply_len(b"$3\r\nabcd\r\n").is_err());
    }
}
