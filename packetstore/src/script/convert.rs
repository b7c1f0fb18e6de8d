//! Conversions between replies and Lua values, by Redis's table: a
//! command's reply bytes (RESP2, or RESP3 after redis.setresp(3)) into the
//! Lua value redis.call returns, and a script's return value into a reply
//! for its client (`script_lua.c`'s `redisProtocolToLuaType` and
//! `luaReplyToRedisReply`).
//!
//! Invariant: both walks are bounded in depth (`REPLY_DEPTH_MAX`); a
//! deeper reply ends with Redis's "reached lua stack limit" error.

use mlua::{Lua, Table, Value};

use crate::proto::resp::{push_int, Encoder};

/// Nesting a reply may have in either direction.
pub const REPLY_DEPTH_MAX: usize = 1000;

/// C's `%.<precision>g`.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let precision = precision.max(1);
    let sci = format!("{:.*e}", precision - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a number");
    if exp < -4 || exp >= precision as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// A reply's bytes as the Lua value redis.call returns.
pub fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<Value> {
    let mut pos = 0;
    parse(lua, bytes, &mut pos, 0)
}

fn line<'b>(bytes: &'b [u8], pos: &mut usize) -> &'b [u8] {
    let start = *pos;
    let end = bytes[start..].windows(2).position(|w| w == b"\r\n").map_or(bytes.len(), |at| start + at);
    *pos = (end + 2).min(bytes.len());
    &bytes[start..end]
}

fn number(text: &[u8]) -> i64 {
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).unwrap_or(0)
}

fn parse(lua: &Lua, bytes: &[u8], pos: &mut usize, depth: usize) -> mlua::Result<Value> {
    if *pos >= bytes.len() || depth > REPLY_DEPTH_MAX {
        return Ok(Value::Boolean(false));
    }
    let kind = bytes[*pos];
    *pos += 1;
    let head = line(bytes, pos);
    let single = |field: &str, value: Value| -> mlua::Result<Value> {
        let t = lua.create_table()?;
        t.raw_set(field, value)?;
        Ok(Value::Table(t))
    };
    match kind {
        b'+' => single("ok", Value::String(lua.create_string(head)?)),
        b'-' => Ok(Value::Table(super::error_table(lua, &[b"-", head].concat())?)),
        b':' => Ok(Value::Number(number(head) as f64)),
        b'$' | b'=' | b'!' => bulk(lua, bytes, pos, kind, number(head)),
        b'*' | b'~' | b'>' | b'%' | b'|' => aggregate(lua, bytes, pos, kind, number(head), depth),
        b'_' => Ok(Value::Nil),
        b'#' => Ok(Value::Boolean(head == b"t")),
        b',' => {
            let text = String::from_utf8_lossy(head);
            let value = match text.as_ref() {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                t => t.parse().unwrap_or(f64::NAN),
            };
            single("double", Value::Number(value))
        }
        b'(' => single("big_number", Value::String(lua.create_string(head)?)),
        _ => Ok(Value::Boolean(false)),
    }
}

fn bulk(lua: &Lua, bytes: &[u8], pos: &mut usize, kind: u8, len: i64) -> mlua::Result<Value> {
    if len < 0 {
        return Ok(Value::Boolean(false));
    }
    let end = (*pos + len as usize).min(bytes.len());
    let body = &bytes[*pos..end];
    *pos = (end + 2).min(bytes.len());
    match kind {
        b'=' => {
            let (format, text) = if body.len() >= 4 { (&body[..3], &body[4..]) } else { (&b"txt"[..], body) };
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(format)?)?;
            inner.raw_set("string", lua.create_string(text)?)?;
            let t = lua.create_table()?;
            t.raw_set("verbatim_string", inner)?;
            Ok(Value::Table(t))
        }
        b'!' => Ok(Value::Table(super::error_table(lua, &[b"-", body].concat())?)),
        _ => Ok(Value::String(lua.create_string(body)?)),
    }
}

fn aggregate(lua: &Lua, bytes: &[u8], pos: &mut usize, kind: u8, len: i64, depth: usize) -> mlua::Result<Value> {
    if len < 0 {
        return Ok(Value::Boolean(false));
    }
    let t = lua.create_table()?;
    match kind {
        b'%' | b'|' => {
            for _ in 0..len {
                let k = parse(lua, bytes, pos, depth + 1)?;
                let v = parse(lua, bytes, pos, depth + 1)?;
                if !k.is_nil() {
                    t.raw_set(k, v)?;
                }
            }
            if kind == b'|' {
                // An attribute is skipped: the reply follows it.
                return parse(lua, bytes, pos, depth);
            }
            let outer = lua.create_table()?;
            outer.raw_set("map", t)?;
            Ok(Value::Table(outer))
        }
        b'~' => {
            for _ in 0..len {
                let k = parse(lua, bytes, pos, depth + 1)?;
                if !k.is_nil() {
                    t.raw_set(k, true)?;
                }
            }
            let outer = lua.create_table()?;
            outer.raw_set("set", t)?;
            Ok(Value::Table(outer))
        }
        _ => {
            for i in 1..=len {
                let v = parse(lua, bytes, pos, depth + 1)?;
                t.raw_set(i, v)?;
            }
            Ok(Value::Table(t))
        }
    }
}

/// How a script's value becomes its client's reply: the script's RESP
/// version (redis.setresp) and the client's.
#[derive(Clone, Copy)]
pub struct ReplyMode {
    pub script_resp3: bool,
    pub client: Encoder,
}

/// A script's return value as a reply (`luaReplyToRedisReply`).
pub fn lua_to_reply(out: &mut Vec<u8>, value: &Value, mode: ReplyMode, depth: usize) {
    let enc = mode.client;
    match value {
        Value::String(s) => enc.bulk(out, &s.as_bytes()),
        Value::Boolean(b) if !mode.script_resp3 => {
            if *b {
                enc.int(out, 1)
            } else {
                enc.null(out)
            }
        }
        Value::Boolean(b) => boolean(out, enc, *b),
        Value::Integer(i) => enc.int(out, *i),
        Value::Number(n) => enc.int(out, truncate(*n)),
        Value::Table(t) => table_to_reply(out, t, mode, depth),
        _ => enc.null(out),
    }
}

/// C's `(long long)` of a double (saturating instead of undefined).
fn truncate(n: f64) -> i64 {
    if n.is_nan() {
        i64::MIN
    } else {
        n as i64
    }
}

fn boolean(out: &mut Vec<u8>, enc: Encoder, b: bool) {
    if enc.resp3 {
        out.extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
    } else {
        enc.int(out, i64::from(b));
    }
}

fn double(out: &mut Vec<u8>, enc: Encoder, d: f64) {
    let text = format_g(d, 17);
    if enc.resp3 {
        out.push(b',');
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(b"\r\n");
    } else {
        enc.bulk(out, text.as_bytes());
    }
}

fn one_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace(['\r', '\n'], " ")
}

fn table_to_reply(out: &mut Vec<u8>, t: &Table, mode: ReplyMode, depth: usize) {
    let enc = mode.client;
    if depth >= REPLY_DEPTH_MAX {
        enc.error(out, "ERR reached lua stack limit");
        return;
    }
    if let Ok(Value::String(err)) = t.raw_get::<Value>("err") {
        let text = String::from_utf8_lossy(&err.as_bytes()).into_owned();
        enc.error(out, &text);
        return;
    }
    if let Ok(Value::String(ok)) = t.raw_get::<Value>("ok") {
        enc.simple(out, &one_line(&ok.as_bytes()));
        return;
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return double(out, enc, d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return double(out, enc, d as f64);
    }
    if let Ok(Value::String(big)) = t.raw_get::<Value>("big_number") {
        let text = one_line(&big.as_bytes());
        if enc.resp3 {
            out.push(b'(');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\r\n");
        } else {
            enc.bulk(out, text.as_bytes());
        }
        return;
    }
    if let Ok(Value::Table(verbatim)) = t.raw_get::<Value>("verbatim_string") {
        if let (Ok(Value::String(_)), Ok(Value::String(s))) =
            (verbatim.raw_get::<Value>("format"), verbatim.raw_get::<Value>("string"))
        {
            enc.verbatim(out, &String::from_utf8_lossy(&s.as_bytes()));
            return;
        }
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        enc.map(out, pairs.len());
        for (k, v) in &pairs {
            lua_to_reply(out, k, mode, depth + 1);
            lua_to_reply(out, v, mode, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> = set.pairs::<Value, Value>().filter_map(|p| p.ok().map(|(k, _)| k)).collect();
        set_header(out, enc, keys.len());
        for k in &keys {
            lua_to_reply(out, k, mode, depth + 1);
        }
        return;
    }
    array_to_reply(out, t, mode, depth);
}

fn set_header(out: &mut Vec<u8>, enc: Encoder, len: usize) {
    out.push(if enc.resp3 { b'~' } else { b'*' });
    push_int(out, len as i64);
    out.extend_from_slice(b"\r\n");
}

fn array_to_reply(out: &mut Vec<u8>, t: &Table, mode: ReplyMode, depth: usize) {
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    mode.client.array(out, items.len());
    for item in &items {
        lua_to_reply(out, item, mode, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn format_g_matches_c() {
        assert_eq!(format_g(100.5, 17), "100.5");
        assert_eq!(format_g(0.1, 17), "0.10000000000000001");
        assert_eq!(format_g(1e20, 14), "1e+20");
        assert_eq!(format_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(format_g(0.0003, 14), "0.0003");
        assert_eq!(format_g(-5000.0, 14), "-5000");
        assert_eq!(format_g(1e-5, 14), "1e-05");
        assert_eq!(format_g(3.0, 17), "3");
    }
}
