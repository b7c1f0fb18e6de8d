//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis
//! 7.0's `eval.c` and `script.c`), and the run of a script that FCALL
//! shares (`run_script`): its commands go through the server's own
//! dispatcher (`KvServer::execute`), their replies are turned into Lua
//! values and the script's value into its reply (`script::convert`).
//!
//! The interpreter, the script cache and the paused script (`Scripting`,
//! `Script`, `Run`) are in `kept/scripting.rs`.
//!
//! Invariants: a script's writes are one group of the store's log
//! (`Store::begin_group`), replayed all or none after a power failure,
//! unless it runs inside EXEC, whose group it joins (groups do not nest);
//! the script cache is bounded (`SCRIPT_CACHE_MAX`, `SCRIPT_CACHE_BYTES_MAX`,
//! the oldest script forgotten first); a read-only run never applies a
//! write command.

use std::cell::RefCell;

use std::time::{Duration, Instant};

use mlua::{Lua, MultiValue, Value};

use crate::apps::kv::kept::scripting::{Run, Script};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvConn, KvServer, LISTENER_HTTP};
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::resp::{Args, Encoder};
use crate::script::convert::{format_g, lua_to_reply, reply_to_lua, ReplyMode};
use crate::script::pause::{self, HookPlan};
use crate::script::{error_table, LuaVm, Step, SCRIPT_TIME_MAX};
use crate::store::db::StoreError;

/// How long a paused script runs per event-loop turn once it has run past
/// busy-reply-threshold (lua-time-limit).
const PAUSED_SLICE: Duration = Duration::from_millis(20);

/// What other clients get while a script is paused (Redis's words).
pub(in crate::apps::kv) const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub(in crate::apps::kv) const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can \
                          either wait the script termination or kill the server in a hard way using the SHUTDOWN \
                          NOSAVE command.";

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("eval", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), "scripting", "Runs a Lua script.", KvServer::cmd_eval),
    cmd("evalsha", -3, &["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale"], (0, 0, 0), "scripting", "Runs a cached Lua script.", KvServer::cmd_evalsha),
    cmd("eval_ro", -3, &["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly"], (0, 0, 0), "scripting", "Runs a read-only Lua script.", KvServer::cmd_eval_ro),
    cmd("evalsha_ro", -3, &["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly"], (0, 0, 0), "scripting", "Runs a cached read-only Lua script.", KvServer::cmd_evalsha_ro),
    cmd("script", -2, &["noscript"], (0, 0, 0), "scripting", "SCRIPT LOAD, EXISTS, FLUSH, KILL, HELP.", KvServer::cmd_script),
];

/// Arguments of a running script's command FUNCTION STATS repeats.
const COMMAND_SHOWN_ARGS: usize = 128;

/// What redis.call works with while a script runs.
struct CallEnv<'a> {
    server: &'a mut KvServer,
    pool: &'a Pool,
    buffers: &'a mut Buffers,
    conn: &'a mut KvConn,
    read_only: bool,
}

/// A Lua value as a command argument (numbers as Redis's `%.17g`).
fn lua_arg(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(format_g(*n, 17).into_bytes()),
        _ => None,
    }
}

impl CallEnv<'_> {
    /// redis.call / redis.pcall: (true, reply) or (false, error table).
    fn command(&mut self, lua: &Lua, vm: &LuaVm, args: MultiValue) -> mlua::Result<(bool, Value)> {
        let fail = |text: &str| Ok((false, Value::Table(error_table(lua, text.as_bytes())?)));
        if args.is_empty() {
            return fail("Please specify at least one argument for this redis lib call");
        }
        let Some(argv) = args.iter().map(lua_arg).collect::<Option<Vec<_>>>() else {
            return fail("Lua redis lib command arguments must be strings or integers");
        };
        if let Err(why) = self.check(&argv, vm) {
            return fail(why);
        }
        let bytes = self.execute(&argv, vm.flags.resp3.get());
        let value = reply_to_lua(lua, &bytes)?;
        Ok((bytes.first() != Some(&b'-'), value))
    }

    /// What refuses a command in a script (Redis's `scriptCall` checks).
    fn check(&self, argv: &[Vec<u8>], vm: &LuaVm) -> Result<(), &'static str> {
        let entry = self.server.command_index.find(&argv[0]).ok_or("Unknown Redis command called from script")?;
        if !entry.arity_fits(argv.len() as i64) {
            return Err("Wrong number of args calling Redis command from script");
        }
        if entry.has_flag("noscript") {
            return Err("This Redis command is not allowed from script");
        }
        let writes = entry.has_flag("write") || entry.has_flag("may_replicate");
        if self.read_only && writes {
            return Err("Write commands are not allowed from read-only scripts.");
        }
        if entry.has_flag("write") {
            vm.flags.wrote.set(true);
        }
        Ok(())
    }

    /// Runs the command as its client would, its reply in memory.
    fn execute(&mut self, argv: &[Vec<u8>], resp3: bool) -> Vec<u8> {
        let saved_args = std::mem::replace(&mut self.conn.args, Args::from_bytes(argv));
        let saved_encoder = std::mem::replace(&mut self.conn.encoder, Encoder { resp3 });
        // Replies come back as bytes, never as pool references.
        let zero_copy_min = std::mem::replace(&mut self.server.config.zero_copy_min, u64::MAX);
        let mut out = OutQueue::new();
        self.server.execute(self.pool, self.buffers, self.conn, &mut out);
        self.server.config.zero_copy_min = zero_copy_min;
        self.conn.args.clear(self.buffers);
        self.conn.args = saved_args;
        self.conn.encoder = saved_encoder;
        std::mem::take(out.bytes())
    }
}

/// A script's keys and arguments.
pub(in crate::apps::kv) type KeysAndArgs = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Parses `numkeys key... arg...` from argument 2 of the command.
pub(in crate::apps::kv) fn keys_and_args(ctx: &Ctx<'_>) -> Result<KeysAndArgs, String> {
    let numkeys = crate::apps::kv::ops::parse_i64(&ctx.arg(2))
        .ok_or_else(|| "ERR value is not an integer or out of range".to_string())?;
    let rest = (ctx.argc() - 3) as i64;
    if numkeys > rest {
        return Err("ERR Number of keys can't be greater than number of args".into());
    }
    if numkeys < 0 {
        return Err("ERR Number of keys can't be negative".into());
    }
    let split = 3 + numkeys as usize;
    let keys = (3..split).map(|i| ctx.arg(i).into_owned()).collect();
    let args = (split..ctx.argc()).map(|i| ctx.arg(i).into_owned()).collect();
    Ok((keys, args))
}

/// A run's KEYS and ARGV: globals for EVAL, set here; arguments of the
/// function for FCALL, returned.
fn script_args(run: &Run) -> mlua::Result<MultiValue> {
    let lua = &run.vm.lua;
    let keys = lua_array(lua, &run.keys)?;
    let args = lua_array(lua, &run.args)?;
    let mut call_args = MultiValue::new();
    if run.eval {
        run.vm.globals.raw_set("KEYS", keys)?;
        run.vm.globals.raw_set("ARGV", args)?;
    } else {
        call_args.push_back(Value::Table(keys));
        call_args.push_back(Value::Table(args));
    }
    Ok(call_args)
}

fn lua_array(lua: &Lua, items: &[Vec<u8>]) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

/// The error reply of a failed run (Redis's `luaCallFunction`).
fn run_error(error: &Value, name: &str) -> String {
    let Value::Table(t) = error else {
        return format!("ERR Error running script {name}, execution failure");
    };
    let text = |field: &str| match t.raw_get::<Value>(field) {
        Ok(Value::String(s)) => Some(s.to_string_lossy()),
        Ok(Value::Integer(i)) => Some(i.to_string()),
        Ok(Value::Number(n)) => Some(format_g(n, 14)),
        _ => None,
    };
    let msg = text("err").unwrap_or_else(|| "ERR execution failure".into());
    match (text("source"), text("line")) {
        (Some(source), Some(line)) => format!("{msg} script: {name}, on {source}:{line}."),
        _ => msg,
    }
}

impl KvServer {
    /// Runs a script or function and answers its client: its writes are
    /// one group of the log (or part of the EXEC's group it runs in). A
    /// script still running after busy-reply-threshold is paused and
    /// resumed turn by turn (`resume_script`) while others get BUSY; inside
    /// EXEC it cannot pause and runs to its end.
    pub(in crate::apps::kv) fn run_script(&mut self, ctx: &mut Ctx<'_>, run: Run) -> Result<(), StoreError> {
        let own_group = !self.store.in_group();
        if own_group {
            self.store.begin_group();
        }
        self.scripting.may_restart = own_group && self.session.is_none();
        // Not on a replicated group's node: a transaction across its shards
        // is not built there (`across::ACROSS_REPLICATED`).
        self.scripting.may_grow =
            (own_group || self.session.is_some() || self.scripting.in_exec) && self.replica.is_none();
        self.scripting.restart_across = false;
        run.vm.flags.resp3.set(false);
        run.vm.flags.wrote.set(false);
        let prepared = script_args(&run).map_err(|e| run.vm.lua_error(&e)).and_then(|args| {
            let thread = run.vm.start(&run.function)?;
            Ok((args, thread))
        });
        let (args, thread) = match prepared {
            Ok(ready) => ready,
            Err(error) => {
                ctx.error(&run_error(&error, &run.name));
                return self.script_cleanup(ctx.pool, ctx.buffers, &run, own_group);
            }
        };
        let script = Script {
            run,
            thread,
            conn_id: ctx.conn.id,
            token: ctx.conn.token,
            orphaned: None,
            own_group,
            killed: false,
            started: Instant::now(),
            command: (0..ctx.argc().min(COMMAND_SHOWN_ARGS)).map(|i| ctx.arg(i).into_owned()).collect(),
        };
        self.script_steps(ctx, script, args)
    }

    /// busy-reply-threshold (lua-time-limit), in milliseconds.
    fn busy_threshold(&self) -> Duration {
        let ms = self.config_params.get("busy-reply-threshold").and_then(|v| v.parse().ok()).unwrap_or(5000);
        Duration::from_millis(ms)
    }

    /// Runs steps of `script` until it ends (answering its client) or is
    /// paused (kept in `scripting.paused`, its connection woken next turn).
    fn script_steps(&mut self, ctx: &mut Ctx<'_>, script: Script, mut args: MultiValue) -> Result<(), StoreError> {
        let threshold = self.busy_threshold();
        loop {
            // Not once it parked other shards (`parked.rs`): they would
            // serve nobody meanwhile.
            let pausable = script.own_group && script.orphaned.is_none() && self.session.is_none();
            if script.killed {
                let error = script.run.vm.killed(&script.thread);
                return self.script_done(ctx, script, Err(error));
            }
            let now = Instant::now();
            // Uninterrupted until busy-reply-threshold; then PAUSED_SLICE
            // at a time between turns.
            let due = script.started + threshold;
            let slice_end = pausable.then(|| if now < due { due } else { now + PAUSED_SLICE });
            let guard =
                (!pausable).then(|| (script.started + SCRIPT_TIME_MAX.max(threshold), script.run.vm.flags.clone()));
            pause::plan(HookPlan { slice_end, guard, hard: self.session.is_some() });
            self.tracking_script(script.conn_id, Some(&script.run.keys));
            self.scripting.running = true;
            let step = self.step_in_scope(ctx, &script, std::mem::take(&mut args));
            self.scripting.running = false;
            self.tracking_script(script.conn_id, None);
            pause::plan(HookPlan::default());
            match step {
                // Not once it parked other shards during the step.
                Step::Paused if pausable && self.session.is_none() => {
                    self.stats.script_pauses += 1;
                    self.pubsub.wake.push(script.token);
                    self.scripting.paused = Some(script);
                    return Ok(());
                }
                Step::Paused => continue,
                Step::Done(result) => return self.script_done(ctx, script, result),
            }
        }
    }

    fn step_in_scope(&mut self, ctx: &mut Ctx<'_>, script: &Script, args: MultiValue) -> Step {
        let vm = &script.run.vm;
        let lua = vm.lua.clone();
        let env = RefCell::new(CallEnv {
            server: self,
            pool: ctx.pool,
            buffers: &mut *ctx.buffers,
            conn: &mut *ctx.conn,
            read_only: script.run.read_only,
        });
        let result = lua.scope(|scope| {
            let command = scope.create_function(|lua, args: MultiValue| env.borrow_mut().command(lua, vm, args))?;
            vm.natives.raw_set("command", command)?;
            Ok(vm.step(&script.thread, args))
        });
        let _ = vm.natives.raw_set("command", Value::Nil);
        result.unwrap_or_else(|e| Step::Done(Err(vm.lua_error(&e))))
    }

    /// The script ended: answers its client, closes its group, and wakes
    /// the parked connections that waited for it.
    fn script_done(
        &mut self,
        ctx: &mut Ctx<'_>,
        script: Script,
        result: Result<Value, Value>,
    ) -> Result<(), StoreError> {
        let restart = std::mem::take(&mut self.scripting.restart_across);
        if restart && !script.killed && script.orphaned.is_none() && self.store.group_records() == 0 {
            // It met another shard's key with nothing written (every call
            // after it failed): its reply is dropped, and it runs again
            // with every shard parked.
            let woken = std::mem::take(&mut self.scripting.deferred_wakes);
            self.pubsub.wake.extend(woken);
            self.script_cleanup(ctx.pool, ctx.buffers, &script.run, script.own_group)?;
            return self.rerun_script_across(ctx, script.run);
        }
        let reply_from = ctx.out.bytes().len();
        match result {
            Ok(value) => {
                let mode = ReplyMode { script_resp3: script.run.vm.flags.resp3.get(), client: ctx.enc() };
                lua_to_reply(ctx.out.bytes(), &value, mode, 0);
                if matches!(&value, Value::Table(t) if matches!(t.raw_get::<Value>("err"), Ok(Value::String(_)))) {
                    ctx.failed = true;
                }
            }
            Err(error) => ctx.error(&run_error(&error, &script.run.name)),
        }
        let woken = std::mem::take(&mut self.scripting.deferred_wakes);
        self.pubsub.wake.extend(woken);
        // A session the script began as it went ends with it, closing its
        // group as the transaction's part here (`parked.rs`).
        let grew = script.own_group && self.session.is_some();
        if grew {
            self.end_parked(ctx, reply_from);
        }
        self.script_cleanup(ctx.pool, ctx.buffers, &script.run, script.own_group && !grew)
    }

    fn script_cleanup(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        run: &Run,
        own_group: bool,
    ) -> Result<(), StoreError> {
        if run.eval {
            let _ = run.vm.globals.raw_set("KEYS", Value::Nil);
            let _ = run.vm.globals.raw_set("ARGV", Value::Nil);
        }
        run.vm.collect_some();
        if own_group {
            self.store.end_group(pool, buffers)?;
        }
        Ok(())
    }

    /// The connection of a paused script is served: the script runs
    /// another step. Returns whether it has ended (the connection may go
    /// on with its next requests).
    pub(in crate::apps::kv) fn resume_script(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
    ) -> bool {
        let Some(script) = self.scripting.paused.take_if(|s| s.token == conn.token && s.orphaned.is_none()) else {
            return true;
        };
        // A script relayed on a link runs as its client (`link_as`).
        let own_id = std::mem::replace(&mut conn.id, script.conn_id);
        let db = self.store.physical_db(conn.db);
        let mut ctx =
            Ctx { pool, buffers, conn, out, now: crate::store::db::now_ms(), db, close: false, failed: false };
        if let Err(error) = self.script_steps(&mut ctx, script, MultiValue::new()) {
            ctx.error(&format!("ERR {error}"));
        }
        ctx.conn.id = own_id;
        let ended = self.scripting.paused.is_none();
        if ended {
            // The other shards stop answering BUSY before its client hears
            // that it ended (the turn's tick may have passed already).
            self.publish_shard_state();
        }
        ended
    }

    /// Whether `conn` is the client of the paused script.
    pub(in crate::apps::kv) fn runs_paused_script(&self, conn: &KvConn) -> bool {
        // By token: a script relayed on a link ran with its client's id
        // (`link_as`), which the link's connection no longer has.
        self.scripting.paused.as_ref().is_some_and(|s| s.token == conn.token)
    }

    /// The client of a paused script went away: the script is dropped if
    /// it wrote nothing, else finished from the tick (`finish_orphan`).
    pub(in crate::apps::kv) fn orphan_script(&mut self, conn: &KvConn) {
        if let Some(script) = self.scripting.paused.as_mut().filter(|s| s.token == conn.token) {
            script.orphaned = Some(conn.db);
        }
    }

    /// The tick's part: an orphaned script is dropped (nothing written)
    /// or run to its end on a stand-in connection, its reply discarded.
    pub(in crate::apps::kv) fn finish_orphan(&mut self, pool: &Pool, buffers: &mut Buffers) {
        let Some(mut script) = self.scripting.paused.take_if(|s| s.orphaned.is_some()) else { return };
        if !script.run.vm.flags.wrote.get() {
            script.killed = true;
        }
        let mut conn = crate::io::app::App::connect(self, LISTENER_HTTP, script.token);
        conn.db = script.orphaned.unwrap_or(0);
        conn.authenticated = true;
        let mut out = OutQueue::new();
        let db = self.store.physical_db(conn.db);
        let mut ctx = Ctx {
            pool,
            buffers,
            conn: &mut conn,
            out: &mut out,
            now: crate::store::db::now_ms(),
            db,
            close: false,
            failed: false,
        };
        if let Err(error) = self.script_steps(&mut ctx, script, MultiValue::new()) {
            tracing::error!("a script whose client left failed to finish: {error}");
        }
        out.clear(|buffer| {
            let _ = buffers.release(buffer);
        });
    }

    /// SCRIPT KILL (`is_eval`) and FUNCTION KILL: the paused script dies
    /// at its next step, unless it wrote.
    pub(in crate::apps::kv) fn kill_script(&mut self, ctx: &mut Ctx<'_>, is_eval: bool) {
        let Some(script) = self.scripting.paused.as_mut() else {
            ctx.error("NOTBUSY No scripts in execution right now.");
            return;
        };
        if script.run.vm.flags.wrote.get() {
            ctx.error(UNKILLABLE);
        } else if is_eval && !script.run.eval {
            ctx.error(BUSY_FUNCTION);
        } else if !is_eval && script.run.eval {
            ctx.error(BUSY_EVAL);
        } else {
            script.killed = true;
            self.pubsub.wake.push(script.token);
            ctx.ok();
        }
    }

    fn eval_generic(&mut self, ctx: &mut Ctx<'_>, by_sha: bool, read_only: bool) -> Result<(), StoreError> {
        let (keys, args) = match keys_and_args(ctx) {
            Ok(split) => split,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let sha = if by_sha {
            let sha = String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase();
            self.load_shared_script(&sha);
            sha
        } else {
            match self.load_script(&ctx.arg(1)) {
                Ok(sha) => sha,
                Err(why) => {
                    ctx.error(&why);
                    return Ok(());
                }
            }
        };
        let Some(cached) = self.scripting.cache.get(&sha) else {
            ctx.error("NOSCRIPT No matching script. Please use EVAL.");
            return Ok(());
        };
        let (function, flags) = (cached.function.clone(), cached.flags);
        if read_only && !flags.compat && !flags.no_writes {
            ctx.error("ERR Can not execute a script with write flag using *_ro command.");
            return Ok(());
        }
        let vm = match self.scripting.vm() {
            Ok(vm) => vm,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let read_only = read_only || (!flags.compat && flags.no_writes);
        self.run_script(ctx, Run { vm, function, name: sha, keys, args, eval: true, read_only })
    }

    /// Compiles and caches `body` (`Scripting::load`), shared with the
    /// other shards of a sharded server for their EVALSHA.
    fn load_script(&mut self, body: &[u8]) -> Result<String, String> {
        let sha = self.scripting.load(body)?;
        if let Some(exchange) = self.across.as_ref() {
            exchange.share_script(&sha, body);
        }
        Ok(sha)
    }

    /// The script `sha`, if another shard compiled it and this one has
    /// not: compiled here too.
    fn load_shared_script(&mut self, sha: &str) {
        if self.scripting.cache.contains_key(sha) {
            return;
        }
        if let Some(body) = self.across.as_ref().and_then(|exchange| exchange.shared_script(sha)) {
            let _ = self.scripting.load(&body);
        }
    }

    fn cmd_eval(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.eval_generic(ctx, false, false)
    }

    fn cmd_evalsha(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.eval_generic(ctx, true, false)
    }

    fn cmd_eval_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.eval_generic(ctx, false, true)
    }

    fn cmd_evalsha_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.eval_generic(ctx, true, true)
    }

    fn cmd_script(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = String::from_utf8_lossy(&ctx.arg(1)).to_ascii_lowercase();
        match (sub.as_str(), ctx.argc()) {
            ("load", 3) => match self.load_script(&ctx.arg(2)) {
                Ok(sha) => ctx.bulk(sha.as_bytes()),
                Err(why) => ctx.error(&why),
            },
            ("exists", n) if n >= 3 => {
                ctx.array(n - 2);
                for i in 2..n {
                    let sha = String::from_utf8_lossy(&ctx.arg(i)).to_ascii_lowercase();
                    self.load_shared_script(&sha);
                    let found = self.scripting.cache.contains_key(&sha);
                    ctx.int(i64::from(found));
                }
            }
            ("flush", 2 | 3) => {
                if ctx.argc() == 3 && !matches!(ctx.arg(2).to_ascii_lowercase().as_slice(), b"sync" | b"async") {
                    ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
                    return Ok(());
                }
                self.scripting.flush();
                if let Some(exchange) = self.across.as_ref() {
                    exchange.forget_scripts();
                }
                ctx.ok();
            }
            ("kill", 2) => self.kill_script(ctx, true),
            ("help", 2) => help(ctx, "SCRIPT", SCRIPT_HELP),
            _ => ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try SCRIPT HELP.",
                String::from_utf8_lossy(&ctx.arg(1))
            )),
        }
        Ok(())
    }
}

const SCRIPT_HELP: &[&str] = &[
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
];

/// What a client may run while a script is paused (Redis's allow-busy
/// commands): the transaction and connection commands, SCRIPT KILL,
/// FUNCTION KILL and STATS, SHUTDOWN.
pub(in crate::apps::kv) fn allowed_while_busy(entry: &CommandEntry, ctx: &Ctx<'_>) -> bool {
    if entry.has_flag("allow_busy") || matches!(entry.name, "auth" | "hello" | "quit" | "shutdown") {
        return true;
    }
    let sub = if ctx.argc() > 1 { ctx.arg(1).to_ascii_lowercase() } else { Vec::new() };
    match entry.name {
        "script" => sub == b"kill",
        "function" => sub == b"kill" || sub == b"stats",
        _ => false,
    }
}

/// A HELP reply: Redis's `addReplyHelp` layout.
pub(in crate::apps::kv) fn help(ctx: &mut Ctx<'_>, command: &str, lines: &[&str]) {
    ctx.array(lines.len() + 3);
    let enc = ctx.enc();
    enc.simple(ctx.out.bytes(), &format!("{command} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"));
    for line in lines {
        enc.simple(ctx.out.bytes(), line);
    }
    enc.simple(ctx.out.bytes(), "HELP");
    enc.simple(ctx.out.bytes(), "    Print this help.");
}
