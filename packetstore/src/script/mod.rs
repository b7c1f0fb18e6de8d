//! The Lua 5.1 runtime of EVAL and FUNCTION (Redis 7.0's `script_lua.c`):
//! one sandboxed interpreter (`LuaVm`) with the libraries Redis gives
//! scripts (cjson, cmsgpack, bit, struct), the `redis` table, Redis's
//! random generator, and the conversions between replies and Lua values
//! (`convert`).
//!
//! Invariants: scripts only see the protected environment the prelude
//! returns (no new globals, no undefined globals read, library tables read
//! only); `natives.command` (redis.call) exists only while a script runs
//! (a scoped function, invalid once the run ends); a run never lasts past
//! `SCRIPT_TIME_MAX` without writes.

pub mod convert;
mod libs;
mod msgpack;
pub mod pause;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Thread, Value, VmState};

/// Lua instructions between two looks at the clock.
const HOOK_INSTRUCTIONS: u32 = 100_000;
/// A script that has written nothing yet is stopped after this long: the
/// event loop serves nothing else meanwhile, so SCRIPT KILL cannot reach
/// it (once it wrote, it runs to its end, as in Redis).
pub const SCRIPT_TIME_MAX: Duration = Duration::from_secs(5);

/// How long FUNCTION LOAD's code may run (Redis's load timeout).
const LOAD_TIME_MAX: Duration = Duration::from_millis(500);
/// Memory one interpreter may use.
const LUA_MEMORY_MAX: usize = 1 << 30;
/// Redis's `REDIS_LRAND48_MAX`.
const LRAND48_MAX: u64 = i32::MAX as u64;

/// A function a library registered while FUNCTION LOAD ran its code.
pub struct Registered {
    pub name: String,
    pub callback: Function,
    pub description: Option<String>,
    pub flags: Vec<String>,
}

/// What a run shares with the natives (set per run).
#[derive(Default)]
pub struct RunFlags {
    /// The RESP version redis.setresp chose (2 or 3).
    pub resp3: Cell<bool>,
    /// The script wrote (it can no longer be stopped).
    pub wrote: Cell<bool>,
    pub started: Cell<Option<Instant>>,
    /// Functions registered by the library being loaded (None: no load).
    pub registering: RefCell<Option<Vec<Registered>>>,
}

/// How a step of a script's coroutine ended.
pub enum Step {
    /// It returned (Ok) or failed (Err: the error table).
    Done(Result<Value, Value>),
    /// The hook paused it: resume it with another step.
    Paused,
}

/// One Lua interpreter with Redis's sandbox (its handles are shared:
/// a clone is the same interpreter).
#[derive(Clone)]
pub struct LuaVm {
    pub lua: Lua,
    /// The real globals (KEYS and ARGV are set here).
    pub globals: Table,
    /// The protected environment scripts run in.
    pub env: Table,
    /// The Rust functions the prelude uses.
    pub natives: Table,
    pub flags: Rc<RunFlags>,
    /// Runs since the collector's last step (`collect_some`).
    runs: Rc<Cell<u32>>,
}

/// Redis's `LUA_GC_CYCLE_PERIOD`: every this many runs the collector takes
/// a step of this many KiB, so many short scripts leave little garbage.
const GC_CYCLE_PERIOD: u32 = 50;

impl LuaVm {
    /// A run ended: every `GC_CYCLE_PERIOD` runs, a step of the collector
    /// (Redis's `luaCallFunction`).
    pub fn collect_some(&self) {
        let runs = self.runs.get() + 1;
        if runs < GC_CYCLE_PERIOD {
            self.runs.set(runs);
            return;
        }
        self.runs.set(0);
        let _ = self.lua.gc_step_kbytes(GC_CYCLE_PERIOD as std::ffi::c_int);
    }

    pub fn new() -> mlua::Result<LuaVm> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        lua.set_memory_limit(LUA_MEMORY_MAX)?;
        let globals = lua.globals();
        libs::register(&lua, &globals)?;
        let flags = Rc::new(RunFlags::default());
        let natives = natives(&lua, &flags)?;
        let prelude = lua.load(include_str!("prelude.lua")).set_name("=prelude").into_function()?;
        let env: Table = prelude.call((natives.clone(), globals.clone()))?;
        let handler = lua.create_function(error_handler)?;
        natives.raw_set("handler", handler)?;
        Ok(LuaVm { lua, globals, env, natives, flags, runs: Rc::default() })
    }

    /// Compiles `code` as chunk `name` in the protected environment.
    pub fn compile(&self, code: &[u8], name: &str) -> Result<Function, String> {
        self.lua
            .load(code)
            .set_name(name)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|error| compile_message(&error))
    }

    /// Calls `f(args)` under the error handler, with the time limit: Ok
    /// the value returned, Err the error value (a table with `err`, and
    /// `source`/`line` where known).
    pub fn run(&self, f: &Function, args: mlua::MultiValue) -> Result<Value, Value> {
        let runner: Function = self.natives.raw_get("run").map_err(|e| self.error_value(&e))?;
        let handler: Function = self.natives.raw_get("handler").map_err(|e| self.error_value(&e))?;
        self.flags.started.set(Some(Instant::now()));
        self.flags.wrote.set(false);
        self.set_time_limit();
        let mut call_args = mlua::MultiValue::new();
        call_args.push_back(Value::Function(f.clone()));
        call_args.push_back(Value::Function(handler));
        call_args.extend(args);
        let result = runner.call::<mlua::MultiValue>(call_args);
        self.lua.remove_hook();
        self.flags.started.set(None);
        let mut values = result.map_err(|e| self.error_value(&e))?.into_iter();
        match (values.next(), values.next()) {
            (Some(Value::Boolean(true)), value) => Ok(value.unwrap_or(Value::Nil)),
            (_, error) => Err(error.unwrap_or(Value::Nil)),
        }
    }

    /// A script's coroutine, ready to run `f` (its first `step` passes
    /// the arguments), with the pausing hook installed.
    pub fn start(&self, f: &Function) -> Result<Thread, Value> {
        let start: Function = self.natives.raw_get("start").map_err(|e| self.error_value(&e))?;
        let thread: Thread = start.call(f.clone()).map_err(|e| self.error_value(&e))?;
        pause::layout_checked(&thread);
        pause::install(&thread);
        Ok(thread)
    }

    /// Runs the script's coroutine until it ends or the hook pauses it
    /// (`pause::plan` says when).
    pub fn step(&self, thread: &Thread, args: mlua::MultiValue) -> Step {
        let step = match self.natives.raw_get::<Function>("step") {
            Ok(step) => step,
            Err(e) => return Step::Done(Err(self.error_value(&e))),
        };
        let mut call_args = mlua::MultiValue::new();
        call_args.push_back(Value::Thread(thread.clone()));
        call_args.extend(args);
        let mut values = match step.call::<mlua::MultiValue>(call_args) {
            Ok(values) => values.into_iter(),
            Err(e) => return Step::Done(Err(self.error_value(&e))),
        };
        let outcome = match values.next() {
            Some(Value::String(s)) => s.to_string_lossy(),
            _ => String::new(),
        };
        match outcome.as_str() {
            "yield" => Step::Paused,
            "done" => Step::Done(Ok(values.next().unwrap_or(Value::Nil))),
            _ => Step::Done(Err(values.next().unwrap_or(Value::Nil))),
        }
    }

    /// The error of a script killed while paused (it is not resumed):
    /// Redis's text, where the script stood.
    pub fn killed(&self, thread: &Thread) -> Value {
        let text = Value::String(match self.lua.create_string(pause::KILLED) {
            Ok(s) => s,
            Err(e) => return self.error_value(&e),
        });
        match coroutine_failure(&self.lua, (thread.clone(), text)) {
            Ok(table) => Value::Table(table),
            Err(e) => self.error_value(&e),
        }
    }

    fn set_time_limit(&self) {
        let flags = self.flags.clone();
        let triggers = HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS);
        let _ = self.lua.set_hook(triggers, move |_, _| {
            // FUNCTION LOAD's code only registers functions: Redis gives
            // it half a second.
            let loading = flags.registering.try_borrow().is_ok_and(|list| list.is_some());
            if loading && flags.started.get().is_some_and(|at| at.elapsed() > LOAD_TIME_MAX) {
                return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
            }
            let late = flags.started.get().is_some_and(|at| at.elapsed() > SCRIPT_TIME_MAX);
            if late && !flags.wrote.get() {
                return Err(mlua::Error::runtime(format!(
                    "Script killed: it ran over {} seconds without writing (the server serves nothing else \
                     while a script runs)",
                    SCRIPT_TIME_MAX.as_secs()
                )));
            }
            Ok(VmState::Continue)
        });
    }

    /// A Rust-side error as a Lua error value (a table with `err`).
    pub fn lua_error(&self, error: &mlua::Error) -> Value {
        self.error_value(error)
    }

    /// A Rust-side error as a Lua error value.
    fn error_value(&self, error: &mlua::Error) -> Value {
        let text = format!("ERR {}", plain_message(error));
        self.lua
            .create_table()
            .and_then(|t| t.raw_set("err", text.as_str()).map(|()| Value::Table(t)))
            .unwrap_or(Value::Nil)
    }
}

/// An mlua error's message without its wrapping (callback tracebacks).
pub fn plain_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => plain_message(cause),
        mlua::Error::RuntimeError(text) | mlua::Error::SyntaxError { message: text, .. } => text.clone(),
        mlua::Error::MemoryError(text) => text.clone(),
        other => other.to_string(),
    }
}

fn compile_message(error: &mlua::Error) -> String {
    plain_message(error)
}

/// Redis's `__redis__err__handler`: the error as a table with `err`, and
/// the script's source and line where it happened.
fn error_handler(lua: &Lua, error: Value) -> mlua::Result<Table> {
    let table = error_as_table(lua, error)?;
    for level in 1..16 {
        let Some((what, source, line)) = lua.inspect_stack(level, |debug| {
            let source = debug.source();
            (source.what, source.source.map(|s| s.into_owned()), debug.current_line())
        }) else {
            break;
        };
        let source = source.unwrap_or_default();
        if !matches!(what, "Lua" | "main") || source == "=prelude" {
            continue;
        }
        table.raw_set("source", source)?;
        table.raw_set("line", line)?;
        break;
    }
    Ok(table)
}

/// The same for a script coroutine that died of `error`: where it
/// happened is read from the dead coroutine's stack.
fn coroutine_failure(lua: &Lua, (thread, error): (Thread, Value)) -> mlua::Result<Table> {
    let table = error_as_table(lua, error)?;
    if let Some((source, line)) = pause::position(&thread) {
        table.raw_set("source", source)?;
        table.raw_set("line", line)?;
    }
    Ok(table)
}

/// An error value as Redis's error table (`err`: "CODE message").
fn error_as_table(lua: &Lua, error: Value) -> mlua::Result<Table> {
    let error = match &error {
        Value::Error(e) => match raised(e) {
            Some(text) => Value::String(lua.create_string(&text)?),
            None => error.clone(),
        },
        _ => error,
    };
    Ok(match error {
        Value::Table(t) => t,
        Value::String(s) if s.as_bytes().starts_with(RAISED_MARK) => {
            let t = lua.create_table()?;
            t.raw_set("err", lua.create_string(&s.as_bytes()[RAISED_MARK.len()..])?)?;
            t
        }
        other => {
            let text = match &other {
                Value::String(s) => s.to_string_lossy(),
                Value::Error(e) => plain_message(e),
                Value::Integer(i) => i.to_string(),
                Value::Number(n) => n.to_string(),
                Value::UserData(_) => "execution failure".to_string(),
                v => format!("{v:?}"),
            };
            let t = lua.create_table()?;
            t.raw_set("err", format!("ERR {text}"))?;
            t
        }
    })
}

/// What marks the text of an error redis.call raised (internal to the
/// handler).
const RAISED_MARK: &[u8] = b"\x00raised:";

/// The error redis.call raises: a command's error reply (its `err` text).
#[derive(Debug)]
struct Raised(Vec<u8>);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for Raised {}

/// The `err` text of an error redis.call raised, marked.
fn raised(error: &mlua::Error) -> Option<Vec<u8>> {
    match error {
        mlua::Error::CallbackError { cause, .. } => raised(cause),
        mlua::Error::ExternalError(e) => e.downcast_ref::<Raised>().map(|r| [RAISED_MARK, &r.0].concat()),
        _ => None,
    }
}

/// redis.call: natives.command's reply, or its error raised.
fn call(lua: &Lua, args: mlua::MultiValue) -> mlua::Result<Value> {
    let natives: Table = lua.named_registry_value("natives")?;
    let command: Function = natives.raw_get("command")?;
    let (ok, value): (bool, Value) = command.call(args)?;
    if ok {
        return Ok(value);
    }
    let text = match &value {
        Value::Table(t) => t.raw_get::<mlua::String>("err")?.as_bytes().to_vec(),
        _ => b"ERR execution failure".to_vec(),
    };
    Err(mlua::Error::external(Raised(text)))
}

/// Redis's `luaPushErrorBuff`: "-CODE msg" or "msg" (code ERR) as an
/// error table `{err = "CODE msg"}`.
pub fn error_table(lua: &Lua, text: &[u8]) -> mlua::Result<Table> {
    let (code, msg): (&[u8], &[u8]) = match text.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", text),
    };
    let mut msg = msg;
    while let [rest @ .., b'\r' | b'\n'] = msg {
        msg = rest;
    }
    while let [b'\r' | b'\n', rest @ ..] = msg {
        msg = rest;
    }
    let mut err = code.to_vec();
    err.push(b' ');
    err.extend_from_slice(msg);
    let table = lua.create_table()?;
    table.raw_set("err", lua.create_string(&err)?)?;
    Ok(table)
}

/// The Rust functions the prelude uses (redis.call's is set per run).
fn natives(lua: &Lua, flags: &Rc<RunFlags>) -> mlua::Result<Table> {
    let natives = lua.create_table()?;
    lua.set_named_registry_value("natives", &natives)?;
    natives.raw_set("call", lua.create_function(call)?)?;
    natives.raw_set("failure", lua.create_function(coroutine_failure)?)?;
    natives.raw_set(
        "raised",
        lua.create_function(|lua, e: Value| match e {
            Value::Error(e) => match raised(&e) {
                Some(text) => Ok(Value::String(lua.create_string(&text[RAISED_MARK.len()..])?)),
                None => Ok(Value::Nil),
            },
            _ => Ok(Value::Nil),
        })?,
    )?;
    natives.raw_set(
        "sha1hex",
        lua.create_function(|lua, s: mlua::String| {
            lua.create_string(sha1_smol::Sha1::from(&*s.as_bytes()).digest().to_string())
        })?,
    )?;
    natives.raw_set(
        "error_table",
        lua.create_function(|lua, s: mlua::String| error_table(lua, &prefixed(&s.as_bytes())))?,
    )?;
    natives.raw_set(
        "log",
        lua.create_function(|_, (level, text): (i64, String)| {
            match level {
                3 => tracing::warn!("script: {text}"),
                2 => tracing::info!("script: {text}"),
                _ => tracing::debug!("script: {text}"),
            }
            Ok(())
        })?,
    )?;
    let resp = flags.clone();
    natives.raw_set(
        "setresp",
        lua.create_function(move |_, v: i64| {
            resp.resp3.set(v == 3);
            Ok(())
        })?,
    )?;
    let rng = Rc::new(Cell::new(seed_state(now_seed())));
    let state = rng.clone();
    natives.raw_set("rand", lua.create_function(move |_, ()| Ok(next_random(&state)))?)?;
    natives.raw_set(
        "srand",
        lua.create_function(move |_, seed: f64| {
            rng.set(seed_state(seed as i32 as i64 as u64));
            Ok(())
        })?,
    )?;
    let registering = flags.clone();
    natives.raw_set(
        "register_function",
        lua.create_function(move |lua, args: mlua::MultiValue| register_function(lua, &registering, args))?,
    )?;
    Ok(natives)
}

/// An error_reply's text with its leading '-'.
fn prefixed(text: &[u8]) -> Vec<u8> {
    if text.first() == Some(&b'-') {
        text.to_vec()
    } else {
        [b"-".as_slice(), text].concat()
    }
}

fn now_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Redis's `redisSrand48`.
fn seed_state(seed: u64) -> u64 {
    ((seed & 0xffff_ffff) << 16 | 0x330e) & 0xffff_ffff_ffff
}

/// Redis's `redisLrand48` scaled as `redis_math_random` does.
fn next_random(state: &Cell<u64>) -> f64 {
    let next = (state.get().wrapping_mul(0x5_deec_e66d).wrapping_add(0xb)) & 0xffff_ffff_ffff;
    state.set(next);
    let value = next >> 17;
    (value % LRAND48_MAX) as f64 / LRAND48_MAX as f64
}

/// `redis.register_function(name, f)` or `redis.register_function{...}`:
/// (true) or (false, error table).
fn register_function(lua: &Lua, flags: &RunFlags, args: mlua::MultiValue) -> mlua::Result<(bool, Value)> {
    let fail =
        |text: &str| -> mlua::Result<(bool, Value)> { Ok((false, Value::Table(error_table(lua, text.as_bytes())?))) };
    let mut registering = flags.registering.borrow_mut();
    let Some(list) = registering.as_mut() else {
        return fail("redis.register_function can only be called on FUNCTION LOAD command");
    };
    let args: Vec<Value> = args.into_iter().collect();
    let parsed = match args.as_slice() {
        [Value::Table(named)] => named_registration(named),
        [_] => Err("calling redis.register_function with a single argument is only applicable to Lua table \
                    (representing named arguments)."
            .to_string()),
        [name, callback] => positional_registration(name, callback),
        _ => Err("wrong number of arguments to redis.register_function".to_string()),
    };
    let registered = match parsed {
        Ok(registered) => registered,
        Err(why) => return fail(&why),
    };
    if !valid_name(&registered.name) {
        // Redis 7.0 says "Library" here too.
        return fail(
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        );
    }
    if list.iter().any(|r| r.name == registered.name) {
        return fail("Function already exists in the library");
    }
    list.push(registered);
    Ok((true, Value::Nil))
}

fn positional_registration(name: &Value, callback: &Value) -> Result<Registered, String> {
    let Value::String(name) = name else {
        return Err("first argument to redis.register_function must be a string".into());
    };
    let Value::Function(callback) = callback else {
        return Err("second argument to redis.register_function must be a function".into());
    };
    Ok(Registered { name: name.to_string_lossy(), callback: callback.clone(), description: None, flags: Vec::new() })
}

fn named_registration(named: &Table) -> Result<Registered, String> {
    let (mut name, mut callback, mut description, mut flags) = (None, None, None, Vec::new());
    for pair in named.pairs::<Value, Value>() {
        let (key, value) = pair.map_err(|e| plain_message(&e))?;
        let Value::String(key) = key else {
            return Err("named argument key given to redis.register_function is not a string".into());
        };
        match (key.to_string_lossy().to_ascii_lowercase().as_str(), value) {
            ("function_name", Value::String(s)) => name = Some(s.to_string_lossy()),
            ("function_name", _) => {
                return Err("function_name argument given to redis.register_function must be a string".into())
            }
            ("description", Value::String(s)) => description = Some(s.to_string_lossy()),
            ("description", _) => {
                return Err("description argument given to redis.register_function must be a string".into())
            }
            ("callback", Value::Function(f)) => callback = Some(f),
            ("callback", _) => {
                return Err("callback argument given to redis.register_function must be a function".into())
            }
            ("flags", Value::Table(t)) => flags = read_flags(&t)?,
            ("flags", _) => {
                return Err(
                    "flags argument to redis.register_function must be a table representing function flags".into()
                )
            }
            _ => return Err("unknown argument given to redis.register_function".into()),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    Ok(Registered { name, callback, description, flags })
}

/// Function flags Redis 7.0 knows.
pub const SCRIPT_FLAGS: &[&str] = &["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

fn read_flags(table: &Table) -> Result<Vec<String>, String> {
    let mut flags = Vec::new();
    for value in table.sequence_values::<Value>() {
        match value {
            Ok(Value::String(s)) if SCRIPT_FLAGS.contains(&s.to_string_lossy().as_str()) => {
                flags.push(s.to_string_lossy())
            }
            _ => return Err("unknown flag given".into()),
        }
    }
    Ok(flags)
}

/// Redis's rule for library and function names.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
