//! What scripting keeps (`cmd/scripting.rs` runs EVAL and SCRIPT, and
//! every script's steps): EVAL's interpreter and script cache, the
//! functions' libraries (`functions.rs`), the script paused between two
//! steps and what waits for its end (`Scripting`); a run of a script or
//! function (`Run`, `Script`); and a script's shebang flags.
//!
//! Invariant: the script cache is bounded (`SCRIPT_CACHE_MAX` scripts,
//! `SCRIPT_CACHE_BYTES_MAX` bytes of source, the oldest forgotten first),
//! and holds no script over `SCRIPT_BYTES_MAX` bytes.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use mlua::{Function, Thread};

use crate::apps::kv::kept::functions::Functions;
use crate::io::app::ConnToken;
use crate::script::{LuaVm, SCRIPT_FLAGS};

/// Scripts the cache keeps.
const SCRIPT_CACHE_MAX: usize = 10_000;
/// Source bytes the cache keeps.
const SCRIPT_CACHE_BYTES_MAX: usize = 64 << 20;
/// The longest script body accepted (EVAL, SCRIPT LOAD).
pub(in crate::apps::kv) const SCRIPT_BYTES_MAX: usize = 16 << 20;

/// A compiled EVAL script.
pub(in crate::apps::kv) struct Cached {
    pub(in crate::apps::kv) function: Function,
    pub(in crate::apps::kv) flags: ScriptFlags,
    bytes: usize,
}

/// A script's shebang flags (`#!lua flags=...`); `compat`: no shebang.
#[derive(Clone, Copy, Default)]
pub(in crate::apps::kv) struct ScriptFlags {
    pub(in crate::apps::kv) compat: bool,
    pub(in crate::apps::kv) no_writes: bool,
}

/// The scripting state: EVAL's interpreter and cache, and the functions.
#[derive(Default)]
pub(in crate::apps::kv) struct Scripting {
    vm: Option<LuaVm>,
    pub(in crate::apps::kv) cache: HashMap<String, Cached>,
    order: VecDeque<String>,
    cache_bytes: usize,
    pub(in crate::apps::kv) functions: Functions,
    /// A script that ran past busy-reply-threshold, paused between two
    /// steps: other clients get BUSY until it ends.
    pub(in crate::apps::kv) paused: Option<Script>,
    /// Parked connections woken while a script was paused: woken again
    /// once it ends (they must not see its writes half done).
    pub(in crate::apps::kv) deferred_wakes: Vec<ConnToken>,
    /// A script or function is running (commands it calls see this, as
    /// Redis's CLIENT_SCRIPT flag).
    pub(in crate::apps::kv) running: bool,
    /// The running script may run again across every shard: it has a
    /// group of its own and no session.
    pub(in crate::apps::kv) may_restart: bool,
    /// The running script may park other shards as it goes: it has a
    /// group of its own, or runs in a session (not inside EXEC).
    pub(in crate::apps::kv) may_grow: bool,
    /// EXEC runs its queued commands here, in its own group: a script
    /// among them may grow a session too, which EXEC's end closes.
    pub(in crate::apps::kv) in_exec: bool,
    /// The running script met another shard's key with nothing written:
    /// it ends, and runs again across every shard.
    pub(in crate::apps::kv) restart_across: bool,
}

impl Scripting {
    pub(in crate::apps::kv) fn vm(&mut self) -> Result<LuaVm, String> {
        if self.vm.is_none() {
            self.vm = Some(LuaVm::new().map_err(|e| format!("ERR the Lua interpreter failed to start: {e}"))?);
        }
        Ok(self.vm.clone().expect("made above"))
    }

    /// Compiles and caches `body`; returns its SHA-1.
    pub(in crate::apps::kv) fn load(&mut self, body: &[u8]) -> Result<String, String> {
        let sha = sha1_smol::Sha1::from(body).digest().to_string();
        if self.cache.contains_key(&sha) {
            return Ok(sha);
        }
        if body.len() > SCRIPT_BYTES_MAX {
            return Err(format!("ERR a script is at most {SCRIPT_BYTES_MAX} bytes"));
        }
        let (flags, shebang_len) = shebang_flags(body)?;
        let vm = self.vm()?;
        let function = vm
            .compile(&body[shebang_len..], "@user_script")
            .map_err(|why| format!("ERR Error compiling script (new function): {why}"))?;
        while self.cache.len() >= SCRIPT_CACHE_MAX || self.cache_bytes + body.len() > SCRIPT_CACHE_BYTES_MAX {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(old) = self.cache.remove(&oldest) {
                self.cache_bytes -= old.bytes;
            }
        }
        self.cache_bytes += body.len();
        self.order.push_back(sha.clone());
        self.cache.insert(sha.clone(), Cached { function, flags, bytes: body.len() });
        Ok(sha)
    }

    pub(in crate::apps::kv) fn flush(&mut self) {
        self.cache.clear();
        self.order.clear();
        self.cache_bytes = 0;
        self.vm = None;
    }

    /// Bytes EVAL's interpreter uses (INFO's used_memory_lua).
    pub(in crate::apps::kv) fn lua_memory(&self) -> usize {
        self.vm.as_ref().map_or(0, |vm| vm.lua.used_memory())
    }

    /// Scripts cached (INFO's number_of_cached_scripts).
    pub(in crate::apps::kv) fn cached(&self) -> usize {
        self.cache.len()
    }
}

/// Redis's `evalExtractShebangFlags`: the flags, and the shebang's length
/// (the code after it keeps its line feed, so line numbers hold).
pub(in crate::apps::kv) fn shebang_flags(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags { compat: true, no_writes: false }, 0));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err("ERR Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().ok_or("ERR Invalid engine in script shebang")?;
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',') {
            if !SCRIPT_FLAGS.contains(&flag) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
            flags.no_writes |= flag == "no-writes";
        }
    }
    Ok((flags, end))
}

/// One run of a script or function.
pub(in crate::apps::kv) struct Run {
    pub(in crate::apps::kv) vm: LuaVm,
    pub(in crate::apps::kv) function: Function,
    /// How errors name it: the script's SHA-1 or the function's name.
    pub(in crate::apps::kv) name: String,
    pub(in crate::apps::kv) keys: Vec<Vec<u8>>,
    pub(in crate::apps::kv) args: Vec<Vec<u8>>,
    /// EVAL (KEYS and ARGV are globals) rather than FCALL (arguments).
    pub(in crate::apps::kv) eval: bool,
    pub(in crate::apps::kv) read_only: bool,
}

/// A script or function between two steps of its coroutine.
pub(in crate::apps::kv) struct Script {
    pub(in crate::apps::kv) run: Run,
    pub(in crate::apps::kv) thread: Thread,
    /// Its client, and whether that client is gone (the script then runs
    /// to its end from the tick if it wrote, or is dropped).
    pub(in crate::apps::kv) conn_id: u64,
    pub(in crate::apps::kv) token: ConnToken,
    pub(in crate::apps::kv) orphaned: Option<u8>,
    /// It opened the store group its writes are in (not inside EXEC).
    pub(in crate::apps::kv) own_group: bool,
    pub(in crate::apps::kv) killed: bool,
    pub(in crate::apps::kv) started: Instant,
    /// The command that started it, as its client sent it (FUNCTION
    /// STATS shows it), at most `COMMAND_SHOWN_ARGS` arguments.
    pub(in crate::apps::kv) command: Vec<Vec<u8>>,
}

impl Script {
    /// Whether it ran EVAL (rather than FCALL): the BUSY text says so.
    pub(in crate::apps::kv) fn is_eval(&self) -> bool {
        self.run.eval
    }

    /// The function's name (a script's SHA-1 for EVAL).
    pub(in crate::apps::kv) fn name(&self) -> &str {
        &self.run.name
    }

    pub(in crate::apps::kv) fn command(&self) -> &[Vec<u8>] {
        &self.command
    }

    /// How long it has run, in milliseconds.
    pub(in crate::apps::kv) fn duration_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }
}
