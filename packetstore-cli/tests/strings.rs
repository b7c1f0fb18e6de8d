//! Goal: Redis 7.0's string and bit commands answer as Redis 7.0.15 does
//! (replies, error strings, RESP2 and RESP3 shapes, overflow), keep their
//! values within the server's limits, and their writes survive a restart.
//!
//! Method: the real binary on ephemeral ports (pools on /dev/shm), driven
//! with the `redis` crate, and raw RESP for RESP3; expected replies are
//! Redis 7.0.15's (`src/t_string.c`, `src/bitops.c`, its test suite).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use redis::{FromRedisValue, Value};

mod common;
use common::{Server, TempPool};

/// Runs a command, which must succeed.
fn q<T: FromRedisValue>(c: &mut redis::Connection, args: &[&str]) -> T {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Runs a command, which must fail; its error text.
fn err(c: &mut redis::Connection, args: &[&str]) -> String {
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    match command.query::<Value>(c) {
        Err(error) => error.to_string(),
        Ok(value) => panic!("{args:?}: expected an error, got {value:?}"),
    }
}

/// Asserts that a command fails with an error containing `text`.
fn fails(c: &mut redis::Connection, args: &[&str], text: &str) {
    let error = err(c, args);
    assert!(error.contains(text), "{args:?}: {error:?} lacks {text:?}");
}

/// A reply in a compact form: integers, strings, nil, [arrays].
fn show(value: &Value) -> String {
    match value {
        Value::Nil => "nil".into(),
        Value::Int(n) => n.to_string(),
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::Okay => "OK".into(),
        Value::Array(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(" ")),
        other => format!("{other:?}"),
    }
}

fn shown(c: &mut redis::Connection, args: &[&str]) -> String {
    show(&q::<Value>(c, args))
}

#[test]
fn set_family_and_expiry_options() {
    let pool = TempPool::new("strings-set");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    // SET's options as Redis 7.0 checks them.
    fails(&mut c, &["SET", "k", "v", "EX", "0"], "invalid expire time in 'set' command");
    fails(&mut c, &["SET", "k", "v", "EX", "-5"], "invalid expire time in 'set' command");
    fails(&mut c, &["SET", "k", "v", "PX", "9223372036854775807"], "invalid expire time in 'set' command");
    fails(&mut c, &["SET", "k", "v", "EX", "9223372036854775"], "invalid expire time in 'set' command");
    fails(&mut c, &["SET", "k", "v", "EX", "ten"], "not an integer or out of range");
    fails(&mut c, &["SET", "k", "v", "EX", "10", "PX", "10"], "syntax error");
    fails(&mut c, &["SET", "k", "v", "KEEPTTL", "EX", "10"], "syntax error");
    fails(&mut c, &["SET", "k", "v", "EX"], "syntax error");
    fails(&mut c, &["SET", "h", "v", "GET"], "WRONGTYPE");
    assert_eq!(shown(&mut c, &["SET", "k", "v", "EX", "10", "EX", "20"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), 20);
    assert_eq!(shown(&mut c, &["SET", "k", "w", "KEEPTTL"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), 20);
    assert_eq!(shown(&mut c, &["SET", "k", "x", "GET"]), "w");
    assert_eq!(q::<i64>(&mut c, &["TTL", "k"]), -1);
    assert_eq!(shown(&mut c, &["SET", "k", "y", "NX", "GET"]), "x");
    assert_eq!(shown(&mut c, &["SET", "new", "y", "XX", "GET"]), "nil");
    assert_eq!(shown(&mut c, &["SET", "h", "plain"]), "OK", "SET replaces a hash");
    assert_eq!(shown(&mut c, &["SET", "k", "v", "PXAT", "1"]), "OK");
    assert_eq!(shown(&mut c, &["GET", "k"]), "nil", "an expiry in the past");
    // SETNX, SETEX, PSETEX, GETSET.
    assert_eq!(q::<i64>(&mut c, &["SETNX", "nx", "1"]), 1);
    assert_eq!(q::<i64>(&mut c, &["SETNX", "nx", "2"]), 0);
    assert_eq!(shown(&mut c, &["GET", "nx"]), "1");
    assert_eq!(shown(&mut c, &["SETEX", "ex", "100", "v"]), "OK");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), 100);
    fails(&mut c, &["SETEX", "ex", "0", "v"], "invalid expire time in 'setex' command");
    fails(&mut c, &["PSETEX", "ex", "-1", "v"], "invalid expire time in 'psetex' command");
    fails(&mut c, &["SETEX", "ex", "x", "v"], "not an integer");
    assert_eq!(shown(&mut c, &["PSETEX", "px", "100000", "v"]), "OK");
    let pttl: i64 = q(&mut c, &["PTTL", "px"]);
    assert!((99_000..=100_000).contains(&pttl), "{pttl}");
    assert_eq!(shown(&mut c, &["GETSET", "ex", "new"]), "v");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), -1, "GETSET clears the time to live");
    assert_eq!(shown(&mut c, &["GETSET", "nothere", "v"]), "nil");
    let _: i64 = q(&mut c, &["HSET", "h2", "f", "v"]);
    fails(&mut c, &["GETSET", "h2", "v"], "WRONGTYPE");
    // GETEX.
    assert_eq!(shown(&mut c, &["GETEX", "nothere2"]), "nil");
    fails(&mut c, &["GETEX", "h2"], "WRONGTYPE");
    assert_eq!(shown(&mut c, &["GETEX", "ex", "EX", "50"]), "new");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), 50);
    assert_eq!(shown(&mut c, &["GETEX", "ex", "PERSIST"]), "new");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), -1);
    assert_eq!(shown(&mut c, &["GETEX", "ex", "PX", "50000"]), "new");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), 50);
    assert_eq!(shown(&mut c, &["GETEX", "ex"]), "new");
    assert_eq!(q::<i64>(&mut c, &["TTL", "ex"]), 50, "plain GETEX leaves the time to live");
    fails(&mut c, &["GETEX", "ex", "EX", "0"], "invalid expire time in 'getex' command");
    fails(&mut c, &["GETEX", "ex", "PERSIST", "EX", "10"], "syntax error");
    fails(&mut c, &["GETEX", "ex", "KEEPTTL"], "syntax error");
    fails(&mut c, &["GETEX", "ex", "NX"], "syntax error");
    assert_eq!(shown(&mut c, &["GETEX", "ex", "EXAT", "1"]), "new");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "ex"]), 0, "EXAT in the past deletes");
    // MSETNX.
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "m1", "a", "m2", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "m3", "c", "m2", "x"]), 0);
    assert_eq!(shown(&mut c, &["MGET", "m1", "m2", "m3"]), "[a b nil]");
    assert_eq!(q::<i64>(&mut c, &["MSETNX", "h2", "x"]), 0, "a hash exists too");
    fails(&mut c, &["MSETNX", "m1", "a", "m2"], "wrong number of arguments for 'msetnx' command");
    // DECRBY's own overflow message.
    fails(&mut c, &["DECRBY", "n", "-9223372036854775808"], "decrement would overflow");
}

#[test]
fn ranges_floats_and_lcs() {
    let pool = TempPool::new("strings-ranges");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    // SETRANGE.
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "r", "0", ""]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "r"]), 0, "setting nothing creates nothing");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "r", "5", "xy"]), 7);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "r"]), b"\0\0\0\0\0xy");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "r", "1", "ab"]), 7);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "r"]), b"\0ab\0\0xy");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "r", "100", ""]), 7);
    fails(&mut c, &["SETRANGE", "r", "-1", "x"], "offset is out of range");
    fails(&mut c, &["SETRANGE", "r", "x", "x"], "not an integer");
    fails(&mut c, &["SETRANGE", "r", "536870911", "xx"], "string exceeds maximum allowed size (proto-max-bulk-len)");
    fails(&mut c, &["SETRANGE", "h", "0", "x"], "WRONGTYPE");
    let _: () = q(&mut c, &["SET", "t", "hello", "EX", "100"]);
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "t", "0", "J"]), 5);
    assert_eq!(q::<i64>(&mut c, &["TTL", "t"]), 100, "SETRANGE keeps the time to live");
    // GETRANGE and SUBSTR.
    let _: () = q(&mut c, &["SET", "s", "Hello World"]);
    for (start, end, want) in [
        ("0", "-1", "Hello World"),
        ("0", "4", "Hello"),
        ("-5", "-1", "World"),
        ("-1", "-5", ""),
        ("5", "3", ""),
        ("-100", "2", "Hel"),
        ("8", "100", "rld"),
        ("11", "20", ""),
        ("-9223372036854775808", "9223372036854775807", "Hello World"),
    ] {
        assert_eq!(shown(&mut c, &["GETRANGE", "s", start, end]), want, "{start} {end}");
        assert_eq!(shown(&mut c, &["SUBSTR", "s", start, end]), want, "{start} {end}");
    }
    assert_eq!(shown(&mut c, &["GETRANGE", "nothere", "0", "-1"]), "");
    fails(&mut c, &["GETRANGE", "s", "a", "1"], "not an integer");
    fails(&mut c, &["GETRANGE", "h", "0", "1"], "WRONGTYPE");
    // INCRBYFLOAT.
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "1"]), "1");
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "0.25"]), "1.25");
    let _: () = q(&mut c, &["SET", "f", "10.50", "EX", "100"]);
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "0.1"]), "10.6");
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "-5"]), "5.6");
    assert_eq!(q::<i64>(&mut c, &["TTL", "f"]), 100, "INCRBYFLOAT keeps the time to live");
    let _: () = q(&mut c, &["SET", "f", "5.0e3"]);
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "2.0e2"]), "5200");
    let _: () = q(&mut c, &["SET", "f", "1"]);
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "-1.1"]), "-0.1");
    let _: () = q(&mut c, &["SET", "f", "17179869184"]);
    assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "17179869184"]), "34359738368");
    fails(&mut c, &["INCRBYFLOAT", "f", "+inf"], "increment would produce NaN or Infinity");
    fails(&mut c, &["INCRBYFLOAT", "f", "nan"], "value is not a valid float");
    fails(&mut c, &["INCRBYFLOAT", "f", "1x"], "value is not a valid float");
    let _: () = q(&mut c, &["SET", "f", " 11"]);
    fails(&mut c, &["INCRBYFLOAT", "f", "1"], "value is not a valid float");
    fails(&mut c, &["INCRBYFLOAT", "h", "1"], "WRONGTYPE");
    // LCS.
    let _: () = q(&mut c, &["MSET", "a", "ohmytext", "b", "mynewtext"]);
    assert_eq!(shown(&mut c, &["LCS", "a", "b"]), "mytext");
    assert_eq!(q::<i64>(&mut c, &["LCS", "a", "b", "LEN"]), 6);
    assert_eq!(shown(&mut c, &["LCS", "a", "b", "IDX"]), "[matches [[[4 7] [5 8]] [[2 3] [0 1]]] len 6]");
    assert_eq!(
        shown(&mut c, &["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]),
        "[matches [[[4 7] [5 8] 4]] len 6]"
    );
    assert_eq!(shown(&mut c, &["LCS", "a", "nothere"]), "");
    assert_eq!(q::<i64>(&mut c, &["LCS", "nothere", "nothere2", "LEN"]), 0);
    fails(&mut c, &["LCS", "a", "b", "LEN", "IDX"], "If you want both the length and indexes, please just use IDX.");
    fails(&mut c, &["LCS", "a", "b", "MINMATCHLEN", "x"], "not an integer");
    fails(&mut c, &["LCS", "a", "b", "FOO"], "syntax error");
    fails(&mut c, &["LCS", "a", "h"], "The specified keys must contain string values");
}

#[test]
fn bit_commands() {
    let pool = TempPool::new("strings-bits");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    // SETBIT and GETBIT.
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "7", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "7", "1"]), 1);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "b"]), b"\x01");
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "17", "1"]), 0);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "b"]), b"\x01\x00\x40");
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", "17"]), 1);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", "16"]), 0);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "b", "1000000"]), 0);
    assert_eq!(q::<i64>(&mut c, &["GETBIT", "nothere", "0"]), 0);
    fails(&mut c, &["SETBIT", "b", "-1", "1"], "bit offset is not an integer or out of range");
    fails(&mut c, &["SETBIT", "b", "4294967296", "1"], "bit offset is not an integer or out of range");
    fails(&mut c, &["SETBIT", "b", "0", "2"], "bit is not an integer or out of range");
    fails(&mut c, &["SETBIT", "b", "0", "x"], "bit is not an integer or out of range");
    fails(&mut c, &["GETBIT", "b", "x"], "bit offset is not an integer or out of range");
    fails(&mut c, &["SETBIT", "h", "0", "1"], "WRONGTYPE");
    fails(&mut c, &["GETBIT", "h", "0"], "WRONGTYPE");
    let _: () = q(&mut c, &["SET", "t", "\u{0}", "EX", "100"]);
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "t", "0", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["TTL", "t"]), 100, "SETBIT keeps the time to live");
    // BITCOUNT.
    let _: () = q(&mut c, &["SET", "s", "foobar"]);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "0", "0"]), 4);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "1", "1"]), 6);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "1", "1", "BYTE"]), 6);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "5", "30", "BIT"]), 17);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "-2", "-1"]), 7);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "-1", "-2"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "s", "0", "1000"]), 26);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "nothere"]), 0);
    fails(&mut c, &["BITCOUNT", "s", "0"], "syntax error");
    fails(&mut c, &["BITCOUNT", "s", "0", "1", "WORD"], "syntax error");
    fails(&mut c, &["BITCOUNT", "s", "a", "1"], "not an integer");
    fails(&mut c, &["BITCOUNT", "h"], "WRONGTYPE");
    // BITPOS.
    let _: Value = redis::cmd("SET").arg("p").arg(b"\xff\xf0\x00").query(&mut c).unwrap();
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "0"]), 12);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "1", "2"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "1", "0"]), 0);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "0", "7", "15", "BIT"]), 12);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "1", "7", "15", "BIT"]), 7);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "p", "1", "-1", "-1"]), -1);
    let _: Value = redis::cmd("SET").arg("ones").arg(b"\xff\xff").query(&mut c).unwrap();
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "ones", "0"]), 16, "past the end without an end given");
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "ones", "0", "0", "-1"]), -1, "not found within a given end");
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "nothere", "1"]), -1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "nothere", "0"]), 0);
    fails(&mut c, &["BITPOS", "p", "2"], "The bit argument must be 1 or 0.");
    fails(&mut c, &["BITPOS", "p", "1", "0", "1", "WORD"], "syntax error");
    fails(&mut c, &["BITPOS", "h", "1"], "WRONGTYPE");
    // BITOP.
    let _: Value = redis::cmd("MSET").arg("x").arg(b"\xf0\x0f").arg("y").arg(b"\xff").query(&mut c).unwrap();
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "x", "y"]), 2);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), b"\xf0\x00");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "or", "d", "x", "y", "nothere"]), 2);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), b"\xff\x0f");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "XOR", "d", "x", "y"]), 2);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), b"\x0f\x0f");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "NOT", "d", "x"]), 2);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "d"]), b"\x0f\xf0");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "AND", "d", "nothere", "nothere2"]), 0);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "d"]), 0, "an empty result deletes the destination");
    assert_eq!(q::<i64>(&mut c, &["BITOP", "OR", "h", "x"]), 2, "the destination's type does not matter");
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "h"]), b"\xf0\x0f");
    let _: i64 = q(&mut c, &["DEL", "h"]);
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    fails(&mut c, &["BITOP", "NOT", "d", "x", "y"], "BITOP NOT must be called with a single source key.");
    fails(&mut c, &["BITOP", "NAND", "d", "x"], "syntax error");
    fails(&mut c, &["BITOP", "AND", "d", "x", "h"], "WRONGTYPE");
}

#[test]
fn bitfield() {
    let pool = TempPool::new("strings-bitfield");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(shown(&mut c, &["BITFIELD", "bf", "SET", "i8", "0", "100", "GET", "i8", "0"]), "[0 100]");
    assert_eq!(shown(&mut c, &["BITFIELD", "bf", "INCRBY", "i8", "0", "100"]), "[-56]", "wraps by default");
    assert_eq!(shown(&mut c, &["BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-1000"]), "[-128]");
    assert_eq!(shown(&mut c, &["BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-1"]), "[nil]");
    assert_eq!(shown(&mut c, &["BITFIELD", "bf", "GET", "i8", "0"]), "[-128]");
    assert_eq!(
        shown(&mut c, &["BITFIELD", "u", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "5"]),
        "[1 3]"
    );
    assert_eq!(shown(&mut c, &["BITFIELD", "u", "OVERFLOW", "WRAP", "INCRBY", "u2", "100", "4"]), "[1]");
    assert_eq!(shown(&mut c, &["BITFIELD", "u", "SET", "u8", "#1", "255", "GET", "u8", "#1"]), "[0 255]");
    assert_eq!(shown(&mut c, &["BITFIELD", "u", "GET", "u4", "8", "GET", "i4", "8", "GET", "u8", "1000"]), "[15 -1 0]");
    assert_eq!(
        shown(&mut c, &["BITFIELD", "w", "SET", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1"]),
        "[0 -9223372036854775808]"
    );
    assert_eq!(
        shown(&mut c, &["BITFIELD", "w2", "SET", "u63", "0", "-1", "GET", "u63", "0"]),
        "[0 9223372036854775807]"
    );
    assert_eq!(shown(&mut c, &["BITFIELD", "nothere", "GET", "u8", "0"]), "[0]");
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "nothere"]), 0, "GET alone writes nothing");
    assert_eq!(shown(&mut c, &["BITFIELD", "e"]), "[]");
    assert_eq!(shown(&mut c, &["BITFIELD_RO", "u", "GET", "u8", "#1"]), "[255]");
    fails(&mut c, &["BITFIELD_RO", "u", "SET", "u8", "0", "1"], "BITFIELD_RO only supports the GET subcommand");
    fails(&mut c, &["BITFIELD", "u", "GET", "u64", "0"], "Invalid bitfield type. Use something like i16 u8.");
    fails(&mut c, &["BITFIELD", "u", "GET", "i65", "0"], "Invalid bitfield type");
    fails(&mut c, &["BITFIELD", "u", "GET", "I8", "0"], "Invalid bitfield type");
    fails(&mut c, &["BITFIELD", "u", "GET", "u8", "-1"], "bit offset is not an integer or out of range");
    fails(&mut c, &["BITFIELD", "u", "GET", "u8", "#-1"], "bit offset is not an integer or out of range");
    fails(&mut c, &["BITFIELD", "u", "GET", "u8", "4294967296"], "bit offset is not an integer or out of range");
    fails(&mut c, &["BITFIELD", "u", "OVERFLOW", "MAYBE"], "Invalid OVERFLOW type specified");
    fails(&mut c, &["BITFIELD", "u", "SET", "u8", "0"], "syntax error");
    fails(&mut c, &["BITFIELD", "u", "SET", "u8", "0", "x"], "not an integer");
    fails(&mut c, &["BITFIELD", "h", "GET", "u8", "0"], "WRONGTYPE");
    fails(&mut c, &["BITFIELD_RO", "h", "GET", "u8", "0"], "WRONGTYPE");
}

/// One whole RESP reply, as sent.
fn read_raw(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let (kind, rest) = line.split_at(1);
    let n: i64 = rest.trim_end().parse().unwrap_or(0);
    match kind {
        "$" | "=" | "!" if n >= 0 => {
            let mut body = vec![0; n as usize + 2];
            reader.read_exact(&mut body).unwrap();
            line += &String::from_utf8_lossy(&body);
        }
        "*" | "~" | ">" | "%" | "|" => {
            let count = if kind == "%" || kind == "|" { 2 * n } else { n };
            for _ in 0..count {
                line += &read_raw(reader);
            }
        }
        _ => {}
    }
    line
}

/// RESP3: LCS IDX is a map.
#[test]
fn lcs_idx_is_a_map_in_resp3() {
    let pool = TempPool::new("strings-resp3");
    let server = Server::start(&pool.0, &[]);
    let mut stream = TcpStream::connect(server.resp).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut call = |args: &[&str]| {
        let mut out = format!("*{}\r\n", args.len());
        for arg in args {
            out += &format!("${}\r\n{arg}\r\n", arg.len());
        }
        stream.write_all(out.as_bytes()).unwrap();
        read_raw(&mut reader)
    };
    assert!(call(&["HELLO", "3"]).starts_with('%'));
    assert_eq!(call(&["MSET", "a", "ohmytext", "b", "mynewtext"]), "+OK\r\n");
    assert_eq!(
        call(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]),
        "%2\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(call(&["GETEX", "nothere"]), "_\r\n");
    assert_eq!(call(&["BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"]), "*1\r\n_\r\n");
}

/// Sizes are bounded by the server's value limit: offsets past it are
/// refused with Redis's errors, and LCS refuses tables over it.
#[test]
fn limits() {
    let pool = TempPool::new("strings-limits");
    let server = Server::start(&pool.0, &["--value-size-max", "1MiB"]);
    let mut c = server.client();
    fails(&mut c, &["SETRANGE", "k", "1048576", "x"], "string exceeds maximum allowed size (proto-max-bulk-len)");
    assert_eq!(q::<i64>(&mut c, &["SETRANGE", "k", "1048575", "x"]), 1_048_576);
    fails(&mut c, &["APPEND", "k", "y"], "string exceeds maximum allowed size (proto-max-bulk-len)");
    fails(&mut c, &["SETBIT", "b", "8388608", "1"], "bit offset is not an integer or out of range");
    assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "8388607", "1"]), 0);
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "b"]), 1_048_576);
    assert_eq!(q::<i64>(&mut c, &["BITCOUNT", "b"]), 1);
    assert_eq!(q::<i64>(&mut c, &["BITPOS", "b", "1"]), 8_388_607);
    fails(&mut c, &["BITFIELD", "f", "SET", "u8", "8388607", "1"], "bit offset is not an integer or out of range");
    let long = "x".repeat(1000);
    let _: () = q(&mut c, &["MSET", "l1", &long, "l2", &long]);
    fails(&mut c, &["LCS", "l1", "l2"], "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    let short = "y".repeat(100);
    let _: () = q(&mut c, &["SET", "l3", &short]);
    assert_eq!(q::<i64>(&mut c, &["LCS", "l1", "l3", "LEN"]), 0);
}

/// Every new write command's value survives a kill -9 and a restart (the
/// store replays its log).
#[test]
fn writes_survive_a_restart() {
    let pool = TempPool::new("strings-restart");
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        assert_eq!(q::<i64>(&mut c, &["SETNX", "nx", "1"]), 1);
        assert_eq!(shown(&mut c, &["SETEX", "ex", "1000", "e"]), "OK");
        assert_eq!(shown(&mut c, &["GETSET", "nx", "2"]), "1");
        assert_eq!(q::<i64>(&mut c, &["MSETNX", "m1", "a", "m2", "b"]), 1);
        assert_eq!(q::<i64>(&mut c, &["SETRANGE", "r", "3", "abc"]), 6);
        assert_eq!(shown(&mut c, &["INCRBYFLOAT", "f", "2.5"]), "2.5");
        assert_eq!(q::<i64>(&mut c, &["SETBIT", "b", "9", "1"]), 0);
        assert_eq!(q::<i64>(&mut c, &["BITOP", "NOT", "n", "b"]), 2);
        assert_eq!(shown(&mut c, &["BITFIELD", "bf", "SET", "u16", "0", "4660"]), "[0]");
        let _: () = q(&mut c, &["SET", "px", "v", "EX", "1000"]);
        assert_eq!(shown(&mut c, &["GETEX", "px", "PERSIST"]), "v");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    assert_eq!(shown(&mut c, &["MGET", "nx", "ex", "m1", "m2", "f"]), "[2 e a b 2.5]");
    let ttl: i64 = q(&mut c, &["TTL", "ex"]);
    assert!((990..=1000).contains(&ttl), "{ttl}");
    assert_eq!(q::<i64>(&mut c, &["TTL", "px"]), -1);
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "r"]), b"\0\0\0abc");
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "b"]), b"\x00\x40");
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "n"]), b"\xff\xbf");
    assert_eq!(q::<Vec<u8>>(&mut c, &["GET", "bf"]), b"\x12\x34");
}

/// SETRANGE, SETBIT and BITFIELD on large values (rewritten without
/// copying their unchanged bytes) give the bytes a whole rewrite would,
/// before and after a restart.
#[test]
fn edits_of_large_values() {
    let pool = TempPool::new("strings-large");
    let mut model: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        let _: () = redis::cmd("SET").arg("big").arg(&model).query(&mut c).unwrap();
        let _: () = redis::cmd("SET").arg("ttl").arg(&model).arg("EX").arg(1000).query(&mut c).unwrap();
        // Within, across buffer boundaries, at the end, past the end.
        for (offset, len) in
            [(0usize, 10usize), (2040, 20), (100_000, 5000), (299_990, 10), (299_995, 20), (310_000, 3)]
        {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 + offset) as u8).collect();
            let total: usize = redis::cmd("SETRANGE").arg("big").arg(offset).arg(&bytes).query(&mut c).unwrap();
            if model.len() < offset + len {
                model.resize(offset + len, 0);
            }
            model[offset..offset + len].copy_from_slice(&bytes);
            assert_eq!(total, model.len());
        }
        for bit in [0usize, 7, 16_385, 2_480_003, 2_600_000] {
            let old: i64 = redis::cmd("SETBIT").arg("big").arg(bit).arg(1).query(&mut c).unwrap();
            if model.len() <= bit / 8 {
                model.resize(bit / 8 + 1, 0);
            }
            assert_eq!(old, i64::from((model[bit / 8] >> (7 - bit % 8)) & 1), "bit {bit}");
            model[bit / 8] |= 1 << (7 - bit % 8);
        }
        let replies: Vec<Option<i64>> = redis::cmd("BITFIELD")
            .arg(&["big", "SET", "u16", "#1000", "4660", "GET", "u8", "0", "SET", "i8", "2700000", "-1"])
            .query(&mut c)
            .unwrap();
        let old = u16::from_be_bytes([model[2000], model[2001]]);
        assert_eq!(replies, vec![Some(i64::from(old)), Some(i64::from(model[0])), Some(0)]);
        model[2000..2002].copy_from_slice(&4660u16.to_be_bytes());
        model.resize(2_700_000 / 8 + 1, 0);
        model[2_700_000 / 8] = 0xFF;
        let back: Vec<u8> = c.get_big("big");
        assert!(back == model, "the edited value");
        let _: i64 = redis::cmd("SETRANGE").arg("ttl").arg(150_000).arg("x").query(&mut c).unwrap();
        let _: i64 = redis::cmd("SETBIT").arg("ttl").arg(1_000_000).arg(1).query(&mut c).unwrap();
        assert_eq!(q::<i64>(&mut c, &["TTL", "ttl"]), 1000);
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let back: Vec<u8> = c.get_big("big");
    assert!(back == model, "the edited value after a restart");
}

trait GetBig {
    fn get_big(&mut self, key: &str) -> Vec<u8>;
}

impl GetBig for redis::Connection {
    fn get_big(&mut self, key: &str) -> Vec<u8> {
        redis::cmd("GET").arg(key).query(self).unwrap()
    }
}

/// Thousands of small edits of one value (each version shares the
/// previous one's buffers until it is too fragmented, or a buffer has too
/// many references, and then is copied whole): no error, the right bytes.
#[test]
fn many_small_edits_of_one_value() {
    let pool = TempPool::new("strings-edits");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let mut pipe = redis::pipe();
    for i in 0..5000u32 {
        pipe.cmd("APPEND").arg("a").arg(&[(i % 251) as u8][..]).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let back: Vec<u8> = c.get_big("a");
    assert!(back == (0..5000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>(), "5000 appends");
    let big = vec![0u8; 3000];
    for i in 0..20 {
        let _: i64 = redis::cmd("APPEND").arg("b").arg(&big).query(&mut c).unwrap();
        let _: i64 = redis::cmd("APPEND").arg("b").arg(&[i as u8][..]).query(&mut c).unwrap();
    }
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "b"]), 20 * 3001);
    let mut model = vec![0u8; 65536];
    let mut pipe = redis::pipe();
    for i in 0..5000u64 {
        let bit = i.wrapping_mul(2_654_435_761) % (65536 * 8);
        let on = (i % 3 != 0) as u8;
        pipe.cmd("SETBIT").arg("s").arg(bit).arg(on).ignore();
        let (byte, shift) = ((bit / 8) as usize, 7 - bit % 8);
        model[byte] = (model[byte] & !(1 << shift)) | (on << shift);
    }
    let _: () = redis::cmd("SETRANGE").arg("s").arg(65535).arg(&[0u8][..]).query(&mut c).unwrap();
    let _: () = pipe.query(&mut c).unwrap();
    let back: Vec<u8> = c.get_big("s");
    assert!(back == model, "5000 SETBITs");
    let ones: i64 = q(&mut c, &["BITCOUNT", "s"]);
    assert_eq!(ones, model.iter().map(|b| i64::from(b.count_ones())).sum::<i64>());
}
