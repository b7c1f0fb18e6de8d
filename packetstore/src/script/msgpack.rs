//! The `cmsgpack` library scripts get (lua_cmsgpack's pack, unpack,
//! unpack_one, unpack_limit): MessagePack with lua_cmsgpack's choices
//! (integral numbers as the smallest integer, others as float or double,
//! tables with keys 1..n as arrays).
//!
//! Invariant: packing stops nesting at `NESTING_MAX` (deeper tables are
//! packed as nil, as lua_cmsgpack does); unpacking never reads past the
//! input and is bounded in depth by the same constant times two.

use mlua::{Lua, MultiValue, Table, Value};

/// lua_cmsgpack's `LUACMSGPACK_MAX_NESTING`.
const NESTING_MAX: usize = 16;
/// Nesting unpack accepts (from any encoder).
const UNPACK_DEPTH_MAX: usize = 256;

pub(super) fn register(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: MultiValue| {
            let mut out = Vec::new();
            for v in args.iter() {
                pack(&mut out, v, 0);
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| {
            let bytes = s.as_bytes();
            let (_, values) = unpack_limit(lua, &bytes, 0, 0)?;
            Ok(MultiValue::from_iter(values))
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, (s, offset): (mlua::String, Option<i64>)| {
            unpack_limited(lua, &s.as_bytes(), 1, offset.unwrap_or(0))
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, (s, limit, offset): (mlua::String, i64, Option<i64>)| {
            unpack_limited(lua, &s.as_bytes(), limit.max(0) as usize, offset.unwrap_or(0))
        })?,
    )?;
    globals.raw_set("cmsgpack", t)
}

fn unpack_limited(lua: &Lua, bytes: &[u8], limit: usize, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || offset as usize > bytes.len() {
        return Err(mlua::Error::runtime("Start offset out of range"));
    }
    let (next, values) = unpack_limit(lua, bytes, offset as usize, limit)?;
    let next = if next >= bytes.len() { -1 } else { next as i64 };
    let mut out = MultiValue::new();
    out.push_back(Value::Number(next as f64));
    out.extend(values);
    Ok(out)
}

/// Up to `limit` objects (0: all) from `at`; returns where it stopped.
fn unpack_limit(lua: &Lua, bytes: &[u8], mut at: usize, limit: usize) -> mlua::Result<(usize, Vec<Value>)> {
    let mut values = Vec::new();
    while at < bytes.len() && (limit == 0 || values.len() < limit) {
        values.push(decode(lua, bytes, &mut at, 0)?);
    }
    Ok((at, values))
}

fn pack_int(out: &mut Vec<u8>, n: i64) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        n if n > 0 => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        -32..=-1 => out.push(n as i8 as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as i8 as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn pack_number(out: &mut Vec<u8>, n: f64) {
    if n.fract() == 0.0 && n.is_finite() && n.abs() < 9.2e18 {
        pack_int(out, n as i64);
    } else if f64::from(n as f32) == n {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_len(out: &mut Vec<u8>, len: usize, fix: (u8, usize), codes: [u8; 3]) {
    if len < fix.1 {
        out.push(fix.0 | len as u8);
    } else if len <= 0xff && codes[0] != 0 {
        out.extend_from_slice(&[codes[0], len as u8]);
    } else if len <= 0xffff {
        out.push(codes[1]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(codes[2]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn pack(out: &mut Vec<u8>, value: &Value, level: usize) {
    match value {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => pack_int(out, *i),
        Value::Number(n) => pack_number(out, *n),
        Value::String(s) => {
            let bytes = s.as_bytes();
            pack_len(out, bytes.len(), (0xa0, 32), [0xd9, 0xda, 0xdb]);
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if level < NESTING_MAX => pack_table(out, t, level),
        _ => out.push(0xc0),
    }
}

fn array_len(t: &Table) -> Option<usize> {
    let (mut count, mut max) = (0usize, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let Ok((key, _)) = pair else { return None };
        let n = match key {
            Value::Integer(i) => i,
            Value::Number(n) if n.fract() == 0.0 => n as i64,
            _ => return None,
        };
        if n < 1 {
            return None;
        }
        count += 1;
        max = max.max(n);
    }
    (max as usize == count).then_some(count)
}

fn pack_table(out: &mut Vec<u8>, t: &Table, level: usize) {
    if let Some(len) = array_len(t) {
        pack_len(out, len, (0x90, 16), [0, 0xdc, 0xdd]);
        for i in 1..=len {
            pack(out, &t.raw_get::<Value>(i).unwrap_or(Value::Nil), level + 1);
        }
        return;
    }
    // Two passes, each pair dropped before the next: holding every pair
    // of a large table would exhaust the interpreter's reference slots.
    let count = t.pairs::<Value, Value>().filter(Result::is_ok).count();
    pack_len(out, count, (0x80, 16), [0, 0xde, 0xdf]);
    for (k, v) in t.pairs::<Value, Value>().filter_map(Result::ok) {
        pack(out, &k, level + 1);
        pack(out, &v, level + 1);
    }
}

fn take<'b>(bytes: &'b [u8], at: &mut usize, n: usize) -> mlua::Result<&'b [u8]> {
    if bytes.len() - *at < n {
        return Err(mlua::Error::runtime("Missing bytes in input."));
    }
    let out = &bytes[*at..*at + n];
    *at += n;
    Ok(out)
}

fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b))
}

fn decode(lua: &Lua, bytes: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Value> {
    if depth > UNPACK_DEPTH_MAX {
        return Err(mlua::Error::runtime("Bad data format in input."));
    }
    let code = take(bytes, at, 1)?[0];
    let num = |v: f64| Ok(Value::Number(v));
    match code {
        0x00..=0x7f => num(f64::from(code)),
        0xe0..=0xff => num(f64::from(code as i8)),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
        0xcc..=0xcf => num(be(take(bytes, at, 1 << (code - 0xcc))?) as f64),
        0xd0 => num(f64::from(take(bytes, at, 1)?[0] as i8)),
        0xd1 => num(f64::from(be(take(bytes, at, 2)?) as u16 as i16)),
        0xd2 => num(f64::from(be(take(bytes, at, 4)?) as u32 as i32)),
        0xd3 => num(be(take(bytes, at, 8)?) as i64 as f64),
        0xca => num(f64::from(f32::from_bits(be(take(bytes, at, 4)?) as u32))),
        0xcb => num(f64::from_bits(be(take(bytes, at, 8)?))),
        0xa0..=0xbf => string(lua, bytes, at, usize::from(code & 0x1f)),
        0xd9 | 0xc4 => {
            let n = be(take(bytes, at, 1)?) as usize;
            string(lua, bytes, at, n)
        }
        0xda | 0xc5 => {
            let n = be(take(bytes, at, 2)?) as usize;
            string(lua, bytes, at, n)
        }
        0xdb | 0xc6 => {
            let n = be(take(bytes, at, 4)?) as usize;
            string(lua, bytes, at, n)
        }
        0x90..=0x9f => array(lua, bytes, at, usize::from(code & 0xf), depth),
        0xdc => {
            let n = be(take(bytes, at, 2)?) as usize;
            array(lua, bytes, at, n, depth)
        }
        0xdd => {
            let n = be(take(bytes, at, 4)?) as usize;
            array(lua, bytes, at, n, depth)
        }
        0x80..=0x8f => map(lua, bytes, at, usize::from(code & 0xf), depth),
        0xde => {
            let n = be(take(bytes, at, 2)?) as usize;
            map(lua, bytes, at, n, depth)
        }
        0xdf => {
            let n = be(take(bytes, at, 4)?) as usize;
            map(lua, bytes, at, n, depth)
        }
        _ => Err(mlua::Error::runtime("Bad data format in input.")),
    }
}

fn string(lua: &Lua, bytes: &[u8], at: &mut usize, n: usize) -> mlua::Result<Value> {
    Ok(Value::String(lua.create_string(take(bytes, at, n)?)?))
}

fn array(lua: &Lua, bytes: &[u8], at: &mut usize, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for i in 1..=n {
        let v = decode(lua, bytes, at, depth + 1)?;
        t.raw_set(i, v)?;
    }
    Ok(Value::Table(t))
}

fn map(lua: &Lua, bytes: &[u8], at: &mut usize, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for _ in 0..n {
        let k = decode(lua, bytes, at, depth + 1)?;
        let v = decode(lua, bytes, at, depth + 1)?;
        if !k.is_nil() {
            t.raw_set(k, v)?;
        }
    }
    Ok(Value::Table(t))
}
