//! Redis 7 functions: FUNCTION LOAD, LIST, DELETE, FLUSH, DUMP, RESTORE,
//! STATS, KILL, HELP, and FCALL, FCALL_RO (Redis 7.0's `functions.c` and
//! `function_lua.c`).
//!
//! A library's code is kept durably in the store's tree under
//! `#fn<library name>` (a `#` entry: FLUSHALL leaves it, as Redis keeps
//! functions), written by the store's normal write path, and loaded back
//! into the functions' own interpreter the first time a FUNCTION or FCALL
//! command runs after a start.
//!
//! The libraries in memory and their interpreter (`Functions`) are in
//! `kept/functions.rs`.
//!
//! Invariants: the libraries in memory are exactly the `#fn` entries of
//! the tree once loaded; a library name is at most `LIBRARY_NAME_MAX` bytes
//! and its code at most `SCRIPT_BYTES_MAX` (and the value limit); a
//! function name belongs to one library.

use std::ops::Bound;

use crate::apps::kv::cmd::scripting::help;
use crate::apps::kv::kept::functions::{library_name, Library};
use crate::apps::kv::kept::scripting::{Run, SCRIPT_BYTES_MAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::proto::resp::glob_match;
use crate::script::Registered;
use crate::store::db::{value_bytes, Op, StoreError};

/// The tree key prefix of a library's code.
const LIBRARY_KEY_PREFIX: &[u8] = b"#fn";
/// FUNCTION DUMP's payload: this magic, then per library a u32 LE length
/// and the code, then a CRC32C of all before it.
const DUMP_MAGIC: &[u8] = b"PSFN1";

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("function", -2, &["noscript"], (0, 0, 0), "scripting", "FUNCTION LOAD, LIST, DELETE, FLUSH, DUMP, RESTORE, STATS, KILL, HELP.", KvServer::cmd_function),
    cmd("fcall", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), "scripting", "Runs a function.", KvServer::cmd_fcall),
    cmd("fcall_ro", -3, &["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly"], (0, 0, 0), "scripting", "Runs a read-only function.", KvServer::cmd_fcall_ro),
];

fn library_key(name: &str) -> Vec<u8> {
    [LIBRARY_KEY_PREFIX, name.as_bytes()].concat()
}

impl KvServer {
    /// Loads the tree's libraries the first time functions are used.
    fn load_functions(&mut self, ctx: &Ctx<'_>) -> Result<(), StoreError> {
        if self.scripting.functions.loaded {
            return Ok(());
        }
        self.scripting.functions.loaded = true;
        let end = library_key("\u{7f}");
        let range = (Bound::Included(LIBRARY_KEY_PREFIX), Bound::Excluded(end.as_slice()));
        let mut codes = Vec::new();
        for entry in self.store.tree().range(ctx.pool, range, false) {
            let (_, value) = entry?;
            codes.push(value_bytes(ctx.pool, &value)?.into_owned());
        }
        for code in codes {
            match self.scripting.functions.create(&code, true) {
                Ok((name, library)) => {
                    self.scripting.functions.libraries.insert(name, library);
                }
                Err(why) => tracing::error!("a stored function library failed to load: {why}"),
            }
        }
        Ok(())
    }

    fn cmd_function(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.load_functions(ctx)?;
        let sub = String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase();
        match (sub.as_str(), ctx.argc()) {
            ("load", n) if n >= 3 => self.function_load(ctx),
            ("delete", 3) => self.function_delete(ctx),
            ("flush", 2 | 3) => self.function_flush(ctx),
            ("list", _) => {
                self.function_list(ctx);
                Ok(())
            }
            ("dump", 2) => {
                self.function_dump(ctx);
                Ok(())
            }
            ("restore", 3 | 4) => self.function_restore(ctx),
            ("stats", 2) => {
                self.function_stats(ctx);
                Ok(())
            }
            ("kill", 2) => {
                self.kill_script(ctx, false);
                Ok(())
            }
            ("help", 2) => {
                help(ctx, "FUNCTION", FUNCTION_HELP);
                Ok(())
            }
            _ => {
                ctx.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                    String::from_utf8_lossy(&ctx.arg(1))
                ));
                Ok(())
            }
        }
    }

    fn function_load(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut replace = false;
        for i in 2..ctx.argc() - 1 {
            if ctx.arg(i).eq_ignore_ascii_case(b"replace") {
                replace = true;
            } else {
                ctx.error(&format!("ERR Unknown option given: {}", String::from_utf8_lossy(&ctx.arg(i))));
                return Ok(());
            }
        }
        let code = ctx.arg(ctx.argc() - 1).into_owned();
        if code.len() > SCRIPT_BYTES_MAX || code.len() as u64 > self.config.value_size_max {
            ctx.error("ERR the library's code is over the value size limit");
            return Ok(());
        }
        let (name, library) = match self.scripting.functions.create(&code, replace) {
            Ok(created) => created,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let op = self.put_bytes(ctx, library_key(&name), &code)?;
        self.apply(ctx, &[op])?;
        self.scripting.functions.libraries.insert(name.clone(), library);
        ctx.bulk(name.as_bytes());
        Ok(())
    }

    fn function_delete(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let name = String::from_utf8_lossy(&ctx.arg(2)).into_owned();
        if !self.scripting.functions.libraries.contains_key(&name) {
            ctx.error("ERR Library not found");
            return Ok(());
        }
        self.apply(ctx, &[Op::Del { key: library_key(&name) }])?;
        self.scripting.functions.libraries.remove(&name);
        ctx.ok();
        Ok(())
    }

    fn function_flush(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        if ctx.argc() == 3 && !matches!(ctx.arg(2).to_ascii_lowercase().as_slice(), b"sync" | b"async") {
            ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            return Ok(());
        }
        self.delete_all_libraries(ctx)?;
        ctx.ok();
        Ok(())
    }

    fn delete_all_libraries(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let ops: Vec<Op> =
            self.scripting.functions.libraries.keys().map(|name| Op::Del { key: library_key(name) }).collect();
        if !ops.is_empty() {
            self.apply(ctx, &ops)?;
        }
        self.scripting.functions.libraries.clear();
        self.scripting.functions.vm = None;
        Ok(())
    }

    fn function_list(&mut self, ctx: &mut Ctx<'_>) {
        let (mut with_code, mut pattern) = (false, None);
        let mut i = 2;
        while i < ctx.argc() {
            let arg = ctx.arg(i).to_ascii_lowercase();
            // Each option once (Redis: a repeated one is unknown).
            if arg == b"withcode" && !with_code {
                with_code = true;
            } else if arg == b"libraryname" && pattern.is_none() {
                if i + 1 >= ctx.argc() {
                    ctx.error("ERR library name argument was not given");
                    return;
                }
                i += 1;
                pattern = Some(ctx.arg(i).into_owned());
            } else {
                ctx.error(&format!("ERR Unknown argument {}", String::from_utf8_lossy(&ctx.arg(i))));
                return;
            }
            i += 1;
        }
        let libraries: Vec<(&String, &Library)> = self
            .scripting
            .functions
            .libraries
            .iter()
            .filter(|(name, _)| pattern.as_ref().is_none_or(|p| glob_match(p, name.as_bytes())))
            .collect();
        ctx.array(libraries.len());
        for (name, library) in libraries {
            ctx.map(if with_code { 4 } else { 3 });
            ctx.bulk(b"library_name");
            ctx.bulk(name.as_bytes());
            ctx.bulk(b"engine");
            ctx.bulk(b"LUA");
            ctx.bulk(b"functions");
            ctx.array(library.functions.len());
            for f in &library.functions {
                list_function(ctx, f);
            }
            if with_code {
                ctx.bulk(b"library_code");
                ctx.bulk(&library.code);
            }
        }
    }

    fn function_dump(&mut self, ctx: &mut Ctx<'_>) {
        let mut payload = DUMP_MAGIC.to_vec();
        for library in self.scripting.functions.libraries.values() {
            payload.extend_from_slice(&(library.code.len() as u32).to_le_bytes());
            payload.extend_from_slice(&library.code);
        }
        let crc = crate::util::crc::crc32c(&payload);
        payload.extend_from_slice(&crc.to_le_bytes());
        ctx.bulk(&payload);
    }

    fn function_restore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let policy = if ctx.argc() == 4 { ctx.arg(3).to_ascii_lowercase() } else { b"append".to_vec() };
        if !matches!(policy.as_slice(), b"flush" | b"append" | b"replace") {
            ctx.error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
            return Ok(());
        }
        let Some(codes) = parse_dump(&ctx.arg(2)) else {
            ctx.error("ERR DUMP payload version or checksum are wrong");
            return Ok(());
        };
        if policy == b"flush" {
            self.delete_all_libraries(ctx)?;
        }
        let replace = policy == b"replace";
        for code in &codes {
            if let Ok(name) = library_name(code) {
                if self.scripting.functions.libraries.contains_key(&name) && !replace {
                    ctx.error(&format!("ERR Library {name} already exists"));
                    return Ok(());
                }
            }
        }
        for code in codes {
            let (name, library) = match self.scripting.functions.create(&code, replace) {
                Ok(created) => created,
                Err(why) => {
                    ctx.error(&why);
                    return Ok(());
                }
            };
            let op = self.put_bytes(ctx, library_key(&name), &code)?;
            self.apply(ctx, &[op])?;
            self.scripting.functions.libraries.insert(name, library);
        }
        ctx.ok();
        Ok(())
    }

    fn function_stats(&mut self, ctx: &mut Ctx<'_>) {
        if self.scripting.paused.as_ref().is_some_and(|script| script.is_eval()) {
            ctx.error(crate::apps::kv::cmd::scripting::BUSY_EVAL);
            return;
        }
        let functions: usize = self.scripting.functions.libraries.values().map(|l| l.functions.len()).sum();
        ctx.map(2);
        ctx.bulk(b"running_script");
        match self.scripting.paused.as_ref().filter(|script| !script.is_eval()) {
            Some(script) => {
                ctx.map(3);
                ctx.bulk(b"name");
                ctx.bulk(script.name().as_bytes());
                ctx.bulk(b"command");
                ctx.array(script.command().len());
                script.command().iter().for_each(|arg| ctx.bulk(arg));
                ctx.bulk(b"duration_ms");
                ctx.int(script.duration_ms() as i64);
            }
            None => ctx.null(),
        }
        ctx.bulk(b"engines");
        ctx.map(1);
        ctx.bulk(b"LUA");
        ctx.map(2);
        ctx.bulk(b"libraries_count");
        ctx.int(self.scripting.functions.libraries.len() as i64);
        ctx.bulk(b"functions_count");
        ctx.int(functions as i64);
    }

    fn fcall(&mut self, ctx: &mut Ctx<'_>, read_only: bool) -> Result<(), StoreError> {
        self.load_functions(ctx)?;
        let name = String::from_utf8_lossy(&ctx.arg(1)).into_owned();
        let Some(f) = self.scripting.functions.find(&name) else {
            ctx.error("ERR Function not found");
            return Ok(());
        };
        let (function, no_writes) = (f.callback.clone(), f.flags.iter().any(|flag| flag == "no-writes"));
        if crate::apps::kv::ops::parse_i64(&ctx.arg(2)).is_none() {
            ctx.error("ERR Bad number of keys provided");
            return Ok(());
        }
        let (keys, args) = match crate::apps::kv::cmd::scripting::keys_and_args(ctx) {
            Ok(split) => split,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        if read_only && !no_writes {
            ctx.error("ERR Can not execute a script with write flag using *_ro command.");
            return Ok(());
        }
        let vm = match self.scripting.functions.vm() {
            Ok(vm) => vm,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let read_only = read_only || no_writes;
        self.run_script(ctx, Run { vm, function, name, keys, args, eval: false, read_only })
    }

    fn cmd_fcall(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.fcall(ctx, false)
    }

    fn cmd_fcall_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.fcall(ctx, true)
    }
}

fn list_function(ctx: &mut Ctx<'_>, f: &Registered) {
    ctx.map(3);
    ctx.bulk(b"name");
    ctx.bulk(f.name.as_bytes());
    ctx.bulk(b"description");
    match &f.description {
        Some(d) => ctx.bulk(d.as_bytes()),
        None => ctx.null(),
    }
    ctx.bulk(b"flags");
    let enc = ctx.enc();
    let out = ctx.out.bytes();
    out.push(if enc.resp3 { b'~' } else { b'*' });
    crate::proto::resp::push_int(out, f.flags.len() as i64);
    out.extend_from_slice(b"\r\n");
    for flag in &f.flags {
        ctx.bulk(flag.as_bytes());
    }
}

/// FUNCTION DUMP's payload back into library codes (None: not ours, or
/// damaged).
fn parse_dump(payload: &[u8]) -> Option<Vec<Vec<u8>>> {
    let body_len = payload.len().checked_sub(4)?;
    let (body, crc) = payload.split_at(body_len);
    if !body.starts_with(DUMP_MAGIC) || crate::util::crc::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let mut at = DUMP_MAGIC.len();
    let mut codes = Vec::new();
    while at < body.len() {
        let len = u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?) as usize;
        at += 4;
        codes.push(body.get(at..at + len)?.to_vec());
        at += len;
    }
    Some(codes)
}

const FUNCTION_HELP: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this case there is no possibility to create",
    "      a function that already exists in another library).",
    "KILL",
    "    Kill the function currently in execution.",
    "STATS",
    "    Return information about the function currently running:",
    "    * running_script: Information about the running script.",
    "      If there's no script running, the function will return null",
    "    * engines: Information about all the engines",
];
