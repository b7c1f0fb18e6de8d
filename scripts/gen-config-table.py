#!/usr/bin/env python3
"""Generates packetstore/src/redis_spec/config_table.rs: Redis 7.0.15's
configuration parameters (name, alias, type, bounds or values, default,
whether CONFIG SET may change them), from its src/config.c.

Usage: (git -C REDIS show 7.0.15:src/server.h; git -C REDIS show 7.0.15:src/config.c) \
       | python3 scripts/gen-config-table.py > packetstore/src/redis_spec/config_table.rs
"""
import re
import sys

src = sys.stdin.read()
enums = {}
for m in re.finditer(r"configEnum (\w+)\[\] = \{(.*?)\};", src, re.S):
    enums[m.group(1)] = re.findall(r'\{"([^"]+)",', m.group(2))

table = src[src.index("standardConfig static_configs[] = {"):]
table = table[: table.index("\n};")]


def calls(text):
    i = 0
    while True:
        m = re.search(r"create(\w+)Config\(", text[i:])
        if not m:
            return
        start = i + m.end()
        depth, j, in_str = 1, start, False
        while depth:
            c = text[j]
            if in_str:
                if c == "\\":
                    j += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            j += 1
        yield m.group(1), text[start : j - 1]
        i = j


def split_args(text):
    out, depth, cur, in_str = [], 0, "", False
    for k, c in enumerate(text):
        if in_str:
            cur += c
            if c == '"' and text[k - 1] != "\\":
                in_str = False
            continue
        if c == '"':
            in_str = True
        if c in "({":
            depth += 1
        if c in ")}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    out.append(cur.strip())
    return out


DEFINES = {
    "CONFIG_DEFAULT_HZ": "10", "CONFIG_DEFAULT_MAX_CLIENTS": "10000", "LONG_MAX": str(2**63 - 1),
    "LLONG_MAX": str(2**63 - 1), "INT_MAX": str(2**31 - 1), "UINT_MAX": str(2**32 - 1), "ULONG_MAX": str(2**64 - 1),
    "ULLONG_MAX": str(2**64 - 1), "LONG_MIN": str(-(2**63)), "LLONG_MIN": str(-(2**63)), "INT_MIN": str(-(2**31)),
    "SIZE_MAX": str(2**64 - 1), "SSIZE_MAX": str(2**63 - 1), "CONFIG_RUN_ID_SIZE": "40",
}


def number(text):
    text = text.strip()
    for name in sorted(DEFINES, key=len, reverse=True):
        text = re.sub(r"\b%s\b" % name, DEFINES[name], text)
    m = re.search(r"#define %s\s+([^\n/]+)" % re.escape(text), src) if re.fullmatch(r"[A-Z_0-9]+", text) else None
    if m:
        return number(m.group(1))
    text = text.replace("LL", "").replace("UL", "").replace("U", "") if re.fullmatch(r"[-0-9*() xa-fLU<>+]+", text) else text
    try:
        return int(eval(text, {}, {}))
    except Exception:
        return None


rows = []
for kind, args in calls(table):
    a = split_args(args)
    name = a[0].strip('"')
    alias = a[1].strip('"') if a[1] != "NULL" else ""
    flags = a[2]
    immutable = "IMMUTABLE_CONFIG" in flags
    if kind == "Bool":
        rows.append((name, alias, immutable, "Bool", "yes" if a[4] == "1" else "no", None))
    elif kind in ("String", "SDS"):
        default = a[5]
        define = re.search(r'#define %s\s+"([^"]*)"' % re.escape(default), src) if re.fullmatch(r"[A-Z_]+", default) else None
        default = define.group(1) if define else ("" if default in ("NULL", '""') else default.strip('"'))
        rows.append((name, alias, immutable, "Text", default, None))
    elif kind == "Enum":
        values = enums.get(a[3], [])
        d = a[5]
        m = re.search(r"#define %s\s+(\w+)" % re.escape(d), src)
        default = None
        for block in re.finditer(r"configEnum %s\[\] = \{(.*?)\};" % a[3], src, re.S):
            for n, v in re.findall(r'\{"([^"]+)",\s*([^}]+)\}', block.group(1)):
                if v.strip() == d or (m and v.strip() == m.group(1)):
                    default = n
        rows.append((name, alias, immutable, "Enum", default or values[0], values))
    elif kind == "Special":
        rows.append((name, alias, immutable, "Text", "", None))
    else:
        lower, upper, default = number(a[3]), number(a[4]), number(a[6])
        unit = "Memory" if "MEMORY_CONFIG" in args else "Integer"
        rows.append((name, alias, immutable, unit, str(default if default is not None else 0), (lower, upper)))

ROW_TYPES = """/// A parameter's type, as Redis checks its values.
pub enum Kind {
    Bool,
    Text,
    Enum(&'static [&'static str]),
    /// An integer within bounds.
    Integer(i64, i64),
    /// Bytes, with Redis's units (1k = 1000, 1kb = 1024, ... gb), or, where
    /// the lower bound is negative, a percentage (`10%`, kept as -10).
    Memory(i64, i64),
}

/// One of Redis's parameters.
pub struct Param {
    pub name: &'static str,
    /// Its other name (Redis 6's), or empty.
    pub alias: &'static str,
    pub immutable: bool,
    pub kind: Kind,
    pub default: &'static str,
}

/// The parameter named `name` (or aliased so), in any case.
pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name) || (!p.alias.is_empty() && p.alias.eq_ignore_ascii_case(name)))
}
"""

print("// Generated by scripts/gen-config-table.py from Redis 7.0.15's src/config.c: do not edit.")
print("//! Redis 7.0.15's configuration parameters, as CONFIG GET and SET know them.")
print()
print(ROW_TYPES, end="")
print()
print("#[rustfmt::skip]")
print("pub const PARAMS: &[Param] = &[")
for name, alias, immutable, kind, default, extra in sorted(rows):
    if kind in ("Bool", "Text"):
        k = "Kind::%s" % kind
    elif kind == "Enum":
        k = "Kind::Enum(&[%s])" % ", ".join('"%s"' % v for v in extra)
    else:
        lo, hi = extra
        lo = lo if lo is not None else -(2**63)
        hi = hi if hi is not None else 2**63 - 1
        hi = min(hi, 2**63 - 1)
        k = "Kind::%s(%d, %d)" % (kind, lo, hi)
    d = default.replace("\\", "\\\\").replace('"', '\\"')
    print('    Param { name: "%s", alias: "%s", immutable: %s, kind: %s, default: "%s" },' % (
        name, alias, "true" if immutable else "false", k, d))
print("];")
