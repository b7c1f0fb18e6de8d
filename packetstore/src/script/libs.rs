//! The libraries Redis gives scripts besides cmsgpack: `bit` (LuaBitOp),
//! `struct` (pack, unpack, size) and `cjson` (encode, decode, and its
//! configuration calls, accepted).
//!
//! Invariant: every walk is bounded: cjson nests at most `JSON_DEPTH_MAX`
//! levels each way, struct sizes at most `STRUCT_SIZE_MAX` per item.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Lua, MultiValue, Table, Value, Variadic};

use super::convert::format_g;

/// cjson's default encode and decode nesting limit.
const JSON_DEPTH_MAX: usize = 1000;
/// The largest integer size struct packs (`i16` and up are refused).
const STRUCT_INT_MAX: usize = 8;
/// The longest fixed string one struct item may name (`c<n>`).
const STRUCT_SIZE_MAX: usize = 1 << 20;

pub(super) fn register(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    register_bit(lua, globals)?;
    register_struct(lua, globals)?;
    register_cjson(lua, globals)?;
    super::msgpack::register(lua, globals)
}

// ---- bit ----

fn tobit(x: f64) -> i32 {
    let x = x.round();
    (x.rem_euclid(4_294_967_296.0) as u64 as u32) as i32
}

fn register_bit(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let fold = |op: fn(i32, i32) -> i32| {
        move |_: &Lua, args: Variadic<f64>| Ok(args.iter().map(|&x| tobit(x)).reduce(op).unwrap_or(0))
    };
    t.raw_set("tobit", lua.create_function(|_, x: f64| Ok(tobit(x)))?)?;
    t.raw_set("bnot", lua.create_function(|_, x: f64| Ok(!tobit(x)))?)?;
    t.raw_set("band", lua.create_function(fold(|a, b| a & b))?)?;
    t.raw_set("bor", lua.create_function(fold(|a, b| a | b))?)?;
    t.raw_set("bxor", lua.create_function(fold(|a, b| a ^ b))?)?;
    let shift = |op: fn(i32, u32) -> i32| move |_: &Lua, (x, n): (f64, f64)| Ok(op(tobit(x), tobit(n) as u32 & 31));
    t.raw_set("lshift", lua.create_function(shift(|x, n| ((x as u32) << n) as i32))?)?;
    t.raw_set("rshift", lua.create_function(shift(|x, n| ((x as u32) >> n) as i32))?)?;
    t.raw_set("arshift", lua.create_function(shift(|x, n| x >> n))?)?;
    t.raw_set("rol", lua.create_function(shift(|x, n| (x as u32).rotate_left(n) as i32))?)?;
    t.raw_set("ror", lua.create_function(shift(|x, n| (x as u32).rotate_right(n) as i32))?)?;
    t.raw_set("bswap", lua.create_function(|_, x: f64| Ok(tobit(x).swap_bytes()))?)?;
    t.raw_set(
        "tohex",
        lua.create_function(|_, (x, n): (f64, Option<f64>)| {
            let n = n.map_or(8, tobit);
            let (upper, digits) = (n < 0, n.unsigned_abs().min(8) as usize);
            let value = tobit(x) as u32 as u64;
            let text = if upper { format!("{value:08X}") } else { format!("{value:08x}") };
            Ok(text[8 - digits..].to_string())
        })?,
    )?;
    globals.raw_set("bit", t)
}

// ---- struct ----

struct Item {
    kind: u8,
    size: usize,
}

/// The items of a struct format, and whether it is little endian at each.
fn struct_items(format: &[u8]) -> Result<Vec<(Item, bool)>, String> {
    let mut items = Vec::new();
    let mut little = cfg!(target_endian = "little");
    let mut i = 0;
    while i < format.len() {
        let c = format[i];
        i += 1;
        let digits_start = i;
        while i < format.len() && format[i].is_ascii_digit() {
            i += 1;
        }
        let count: Option<usize> = std::str::from_utf8(&format[digits_start..i]).ok().and_then(|d| d.parse().ok());
        let size = match c {
            b'<' => {
                little = true;
                continue;
            }
            b'>' => {
                little = false;
                continue;
            }
            b'=' | b'!' | b' ' => continue,
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'i' | b'I' => count.unwrap_or(4),
            b'c' => count.unwrap_or(1),
            b's' => 0,
            _ => return Err(format!("invalid format option '{}'", c as char)),
        };
        if matches!(c, b'i' | b'I') && !(1..=STRUCT_INT_MAX).contains(&size) {
            return Err(format!("integral size {size} is larger than limit of {STRUCT_INT_MAX}"));
        }
        if size > STRUCT_SIZE_MAX {
            return Err("size too large".into());
        }
        items.push((Item { kind: c, size }, little));
    }
    Ok(items)
}

fn put_int(out: &mut Vec<u8>, value: i64, size: usize, little: bool) {
    let bytes = value.to_le_bytes();
    let mut chunk: Vec<u8> = bytes[..size].to_vec();
    if !little {
        chunk.reverse();
    }
    out.extend_from_slice(&chunk);
}

fn struct_pack(lua: &Lua, format: &[u8], args: &[Value]) -> mlua::Result<mlua::String> {
    let items = struct_items(format).map_err(mlua::Error::runtime)?;
    let mut out = Vec::new();
    let mut args = args.iter();
    let mut next = |what: &str| {
        args.next().cloned().ok_or_else(|| mlua::Error::runtime(format!("bad argument to 'pack' ({what} expected)")))
    };
    for (item, little) in items {
        match item.kind {
            b'x' => out.push(0),
            b'f' | b'd' => {
                let v = lua.unpack::<f64>(next("number")?)?;
                let mut bytes =
                    if item.kind == b'f' { (v as f32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() };
                if !little {
                    bytes.reverse();
                }
                out.extend_from_slice(&bytes);
            }
            b'c' | b's' => {
                let s = lua.unpack::<mlua::String>(next("string")?)?;
                let bytes = s.as_bytes();
                if item.kind == b's' {
                    out.extend_from_slice(&bytes);
                    out.push(0);
                } else {
                    let mut fixed = bytes.to_vec();
                    fixed.resize(item.size, 0);
                    out.extend_from_slice(&fixed);
                }
            }
            _ => {
                let v = lua.unpack::<f64>(next("number")?)?;
                put_int(&mut out, v as i64, item.size, little);
            }
        }
    }
    lua.create_string(&out)
}

fn get_int(bytes: &[u8], signed: bool, little: bool) -> f64 {
    let mut b = bytes.to_vec();
    if !little {
        b.reverse();
    }
    let mut value = b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
    if signed && b.len() < 8 && b.last().is_some_and(|&x| x & 0x80 != 0) {
        value |= !0u64 << (8 * b.len());
    }
    if signed {
        value as i64 as f64
    } else {
        value as f64
    }
}

fn struct_unpack(lua: &Lua, format: &[u8], data: &[u8], start: usize) -> mlua::Result<MultiValue> {
    let items = struct_items(format).map_err(mlua::Error::runtime)?;
    let mut out = MultiValue::new();
    let mut at = start.saturating_sub(1);
    let short = || mlua::Error::runtime("bad argument #2 to 'unpack' (data string too short)");
    for (item, little) in items {
        let size = if item.kind == b's' {
            data.get(at..).and_then(|rest| rest.iter().position(|&b| b == 0)).ok_or_else(short)? + 1
        } else {
            item.size
        };
        let bytes = data.get(at..at + size).ok_or_else(short)?;
        at += size;
        let value = match item.kind {
            b'x' => continue,
            b'f' => Value::Number(f64::from(f32::from_bits(get_int(bytes, false, little) as u32))),
            b'd' => {
                let mut b = bytes.to_vec();
                if !little {
                    b.reverse();
                }
                Value::Number(f64::from_le_bytes(b.try_into().map_err(|_| short())?))
            }
            b'c' => Value::String(lua.create_string(bytes)?),
            b's' => Value::String(lua.create_string(&bytes[..bytes.len() - 1])?),
            kind => Value::Number(get_int(bytes, kind.is_ascii_lowercase(), little)),
        };
        out.push_back(value);
    }
    out.push_back(Value::Number((at + 1) as f64));
    Ok(out)
}

fn register_struct(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, (format, args): (mlua::String, Variadic<Value>)| {
            struct_pack(lua, &format.as_bytes(), &args)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, (format, data, start): (mlua::String, mlua::String, Option<usize>)| {
            struct_unpack(lua, &format.as_bytes(), &data.as_bytes(), start.unwrap_or(1))
        })?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|_, format: mlua::String| {
            let items = struct_items(&format.as_bytes()).map_err(mlua::Error::runtime)?;
            if items.iter().any(|(item, _)| item.kind == b's') {
                return Err(mlua::Error::runtime("options 's' has no fixed size"));
            }
            Ok(items.iter().map(|(item, _)| item.size).sum::<usize>())
        })?,
    )?;
    globals.raw_set("struct", t)
}

// ---- cjson ----

fn json_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// cjson's settings (encode_max_depth, decode_max_depth,
/// encode_invalid_numbers), kept by the interpreter across scripts as
/// Redis's are.
struct JsonConfig {
    encode_depth: Cell<usize>,
    decode_depth: Cell<usize>,
    /// 0: refuse NaN and Inf; 1: write NaN, Infinity; 2: write null.
    invalid_numbers: Cell<u8>,
}

impl Default for JsonConfig {
    fn default() -> Self {
        JsonConfig {
            encode_depth: Cell::new(JSON_DEPTH_MAX),
            decode_depth: Cell::new(JSON_DEPTH_MAX),
            invalid_numbers: Cell::new(0),
        }
    }
}

fn json_number(out: &mut Vec<u8>, n: f64, config: &JsonConfig) -> Result<(), String> {
    if !n.is_finite() {
        let text: &[u8] = match config.invalid_numbers.get() {
            0 => return Err("Cannot serialise number: must not be NaN or Inf".into()),
            1 if n.is_nan() => b"NaN",
            1 if n < 0.0 => b"-Infinity",
            1 => b"Infinity",
            _ => b"null",
        };
        out.extend_from_slice(text);
        return Ok(());
    }
    out.extend_from_slice(format_g(n, 14).as_bytes());
    Ok(())
}

fn json_encode(out: &mut Vec<u8>, value: &Value, depth: usize, config: &JsonConfig) -> Result<(), String> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => json_number(out, *i as f64, config)?,
        Value::Number(n) => json_number(out, *n, config)?,
        Value::String(s) => json_string(out, &s.as_bytes()),
        Value::Table(t) => {
            if depth >= config.encode_depth.get().min(JSON_DEPTH_MAX) {
                return Err(format!("Cannot serialise, excessive nesting ({})", depth + 1));
            }
            json_table(out, t, depth, config)?
        }
        other => return Err(format!("Cannot serialise {}: type not supported", other.type_name())),
    }
    Ok(())
}

/// The array length of a table whose keys are all positive integers.
fn json_array_len(t: &Table) -> Option<usize> {
    let (mut count, mut max) = (0usize, 0usize);
    for pair in t.pairs::<Value, Value>() {
        let (key, _) = pair.ok()?;
        let n = match key {
            Value::Integer(i) if i >= 1 => i as usize,
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
            _ => return None,
        };
        count += 1;
        max = max.max(n);
    }
    // cjson refuses excessively sparse arrays; encode them as objects.
    (max <= 10 || max <= count * 2).then_some(max)
}

fn json_table(out: &mut Vec<u8>, t: &Table, depth: usize, config: &JsonConfig) -> Result<(), String> {
    if let Some(len) = json_array_len(t).filter(|&len| len > 0 || t.raw_len() == 0) {
        if len == 0 {
            out.extend_from_slice(b"{}");
            return Ok(());
        }
        out.push(b'[');
        for i in 1..=len {
            if i > 1 {
                out.push(b',');
            }
            json_encode(out, &t.raw_get::<Value>(i).unwrap_or(Value::Nil), depth + 1, config)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (n, pair) in t.pairs::<Value, Value>().enumerate() {
        let (key, value) = pair.map_err(|e| e.to_string())?;
        if n > 0 {
            out.push(b',');
        }
        match key {
            Value::String(s) => json_string(out, &s.as_bytes()),
            Value::Integer(i) => json_string(out, i.to_string().as_bytes()),
            Value::Number(x) => json_string(out, format_g(x, 14).as_bytes()),
            _ => return Err("Cannot serialise table: table key must be a number or string".into()),
        }
        out.push(b':');
        json_encode(out, &value, depth + 1, config)?;
    }
    out.push(b'}');
    Ok(())
}

fn json_to_lua(lua: &Lua, value: &serde_json::Value, depth: usize, limit: usize) -> mlua::Result<Value> {
    let nests = matches!(value, serde_json::Value::Array(_) | serde_json::Value::Object(_));
    if nests && depth >= limit.min(JSON_DEPTH_MAX) {
        return Err(mlua::Error::runtime(format!("Found too many nested data structures ({})", depth + 1)));
    }
    Ok(match value {
        serde_json::Value::Null => Value::LightUserData(mlua::LightUserData(std::ptr::null_mut())),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, json_to_lua(lua, item, depth + 1, limit)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table()?;
            for (k, v) in map {
                t.raw_set(k.as_str(), json_to_lua(lua, v, depth + 1, limit)?)?;
            }
            Value::Table(t)
        }
    })
}

fn register_cjson(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    let config = Rc::new(JsonConfig::default());
    let c = config.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, value: Value| {
            let mut out = Vec::new();
            json_encode(&mut out, &value, 0, &c).map_err(mlua::Error::runtime)?;
            lua.create_string(&out)
        })?,
    )?;
    let c = config.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, text: mlua::String| {
            let parsed: serde_json::Value =
                serde_json::from_slice(&text.as_bytes()).map_err(|e| mlua::Error::runtime(e.to_string()))?;
            json_to_lua(lua, &parsed, 0, c.decode_depth.get())
        })?,
    )?;
    for (option, cell) in [("encode_max_depth", 0), ("decode_max_depth", 1)] {
        let c = config.clone();
        t.raw_set(
            option,
            lua.create_function(move |_, depth: Option<i64>| {
                let setting = if cell == 0 { &c.encode_depth } else { &c.decode_depth };
                if let Some(depth) = depth {
                    if !(1..=JSON_DEPTH_MAX as i64).contains(&depth) {
                        return Err(mlua::Error::runtime(format!(
                            "bad argument #1 to '{option}' (expected integer between 1 and {JSON_DEPTH_MAX})"
                        )));
                    }
                    setting.set(depth as usize);
                }
                Ok(setting.get())
            })?,
        )?;
    }
    let c = config.clone();
    t.raw_set(
        "encode_invalid_numbers",
        lua.create_function(move |_, setting: Value| {
            let mode = match &setting {
                Value::Nil => c.invalid_numbers.get(),
                Value::Boolean(false) => 0,
                Value::Boolean(true) => 1,
                Value::String(s) if &*s.as_bytes() == b"on" => 1,
                Value::String(s) if &*s.as_bytes() == b"off" => 0,
                Value::String(s) if &*s.as_bytes() == b"null" => 2,
                _ => return Err(mlua::Error::runtime("bad argument #1 to 'encode_invalid_numbers' (invalid option)")),
            };
            c.invalid_numbers.set(mode);
            Ok(mode != 0)
        })?,
    )?;
    for option in ["decode_invalid_numbers", "encode_keep_buffer", "encode_number_precision", "encode_sparse_array"] {
        t.raw_set(option, lua.create_function(|_, args: MultiValue| Ok(args))?)?;
    }
    t.raw_set("null", Value::LightUserData(mlua::LightUserData(std::ptr::null_mut())))?;
    globals.raw_set("cjson", t)
}
