//! Pausing a running script: scripts run as Lua coroutines, and a count
//! hook (every `HOOK_INSTRUCTIONS`) yields the coroutine once its time
//! slice is over, so that the event loop can answer other clients (BUSY,
//! or SCRIPT KILL) and resume the script next turn. A script killed while
//! paused is never resumed: its coroutine is dropped, so no pcall inside
//! it can catch the kill. The hook raises an error only for a script that
//! cannot pause (inside EXEC) and overran without writing: at every
//! instruction from then on, so that pcall cannot hold it (Redis's
//! `luaMaskCountHook`).
//!
//! Lua 5.1 lets a count hook yield (`lua_yield` in the hook; `luaV_execute`
//! returns and `lua_resume` later continues at the same instruction), but
//! only when no C call lies between the coroutine's resume and the running
//! Lua code (`nCcalls == baseCcalls`): otherwise `lua_yield` raises
//! "attempt to yield across metamethod/C-call boundary". Lua 5.1 has no
//! `lua_isyieldable`, so the hook reads the two counters from the
//! `lua_State` (Lua 5.1.5's `lstate.h` layout, checked once per
//! interpreter by `layout_checked`; if the check fails, scripts never
//! pause, as before). The prelude's pcall runs its function as a
//! coroutine too, so a loop under pcall can still pause.
//!
//! Invariant: the hook yields only where `lua_yield` cannot raise; it
//! raises only `&'static str` messages, so nothing with a destructor is
//! skipped by Lua's longjmp.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};
use std::rc::Rc;
use std::time::Instant;

use mlua::{ffi, Thread};

use super::RunFlags;

/// Lua instructions between two runs of the hook.
pub const HOOK_INSTRUCTIONS: c_int = 100_000;

/// The error a killed script dies of (Redis's words).
pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// The error of a script stopped by the guard of scripts that cannot pause.
pub const OVERRAN: &str =
    "Script killed: it ran over the script time limit without writing, where it could not pause (inside MULTI)";

/// What the hook does for the step now running (set before each step).
#[derive(Default)]
pub struct HookPlan {
    /// Yield at the first hook past this instant (None: never).
    pub slice_end: Option<Instant>,
    /// Raise `OVERRAN` past this instant unless the script wrote.
    pub guard: Option<(Instant, Rc<RunFlags>)>,
    /// Other shards are parked for the script: past the guard's instant it
    /// is stopped even if it wrote (`OVERRAN_PARKED`; what it wrote stays,
    /// whole), rather than hold every shard.
    pub hard: bool,
}

/// The error of a script stopped, with other shards parked for it, at the
/// guard's instant.
pub const OVERRAN_PARKED: &str =
    "Script killed: it ran over the script time limit with other shards parked for it (its writes so far are kept)";

thread_local! {
    static PLAN: RefCell<HookPlan> = RefCell::new(HookPlan::default());
    /// Whether this thread's interpreters have Lua 5.1.5's state layout.
    static LAYOUT_OK: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Sets what the hook does until the next call.
pub fn plan(plan: HookPlan) {
    PLAN.with(|p| *p.borrow_mut() = plan);
}

/// The head of Lua 5.1.5's `struct lua_State` (`lstate.h`), up to `hook`.
#[repr(C)]
struct StateHead {
    next: *mut c_void,
    tt: u8,
    marked: u8,
    status: u8,
    top: *mut c_void,
    base: *mut c_void,
    global: *mut c_void,
    ci: *mut c_void,
    savedpc: *const c_void,
    stack_last: *mut c_void,
    stack: *mut c_void,
    end_ci: *mut c_void,
    base_ci: *mut c_void,
    stacksize: c_int,
    size_ci: c_int,
    n_ccalls: u16,
    base_ccalls: u16,
    hookmask: u8,
    allowhook: u8,
    basehookcount: c_int,
    hookcount: c_int,
    hook: Option<ffi::lua_Hook>,
}

enum Action {
    Continue,
    Yield,
    Raise(&'static str),
}

fn action() -> Action {
    PLAN.with(|plan| {
        let plan = plan.borrow();
        let now = Instant::now();
        if let Some((deadline, flags)) = &plan.guard {
            if now >= *deadline && plan.hard {
                return Action::Raise(OVERRAN_PARKED);
            }
            if now >= *deadline && !flags.wrote.get() {
                return Action::Raise(OVERRAN);
            }
        }
        match plan.slice_end {
            Some(end) if now >= end => Action::Yield,
            _ => Action::Continue,
        }
    })
}

/// The count hook of script coroutines (and the coroutines they create,
/// which inherit it).
unsafe extern "C-unwind" fn count_hook(state: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    match action() {
        Action::Continue => {}
        Action::Yield if LAYOUT_OK.with(Cell::get) != Some(true) => {}
        Action::Yield if yieldable(state) => {
            // SAFETY: a count hook of a coroutine with no C call below its
            // running Lua code: Lua 5.1 yields here without raising. The
            // count goes back to its normal period for when it resumes.
            unsafe {
                ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_INSTRUCTIONS);
                ffi::lua_yield(state, 0);
            }
        }
        Action::Yield => {
            // Inside a C call (a metamethod, a library function): tried
            // again at the next instruction. At every HOOK_INSTRUCTIONS
            // only, a loop whose period divides into the count so that the
            // hook always lands inside a metamethod would never pause.
            // SAFETY: `state` is the running thread; setting its hook from
            // the hook is what Lua's own debug library does.
            unsafe { ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, 1) };
        }
        Action::Raise(text) => {
            // SAFETY: `state` is the running thread; every instruction from
            // now on raises again, so pcall cannot catch the kill for good.
            // `text` is static: the longjmp skips no destructor.
            unsafe {
                ffi::lua_sethook(state, Some(count_hook), ffi::LUA_MASKCOUNT, 1);
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
                ffi::lua_error(state);
            }
        }
    }
}

/// Whether `lua_yield` may run now: no C call since the resume.
fn yieldable(state: *mut ffi::lua_State) -> bool {
    // SAFETY: the layout was checked against this interpreter
    // (`layout_checked`); `state` is the running thread, alive.
    let head = unsafe { &*state.cast::<StateHead>() };
    head.n_ccalls == head.base_ccalls && head.status == 0
}

/// Installs the hook on a script's coroutine.
pub fn install(thread: &Thread) {
    // SAFETY: `thread.state()` is a live coroutine of this interpreter.
    unsafe { ffi::lua_sethook(thread.state(), Some(count_hook), ffi::LUA_MASKCOUNT, HOOK_INSTRUCTIONS) };
}

/// Checks, on a fresh coroutine with the hook installed, that the state
/// reads as Lua 5.1.5's layout; remembers the answer for this thread.
pub fn layout_checked(thread: &Thread) -> bool {
    if let Some(ok) = LAYOUT_OK.with(Cell::get) {
        return ok;
    }
    install(thread);
    // SAFETY: reading the head of a live state; interpreted only if every
    // field read back matches what was just set.
    let head = unsafe { &*thread.state().cast::<StateHead>() };
    let hook_matches = head.hook.map(|h| h as usize) == Some(count_hook as ffi::lua_Hook as usize);
    let ok = hook_matches
        && head.hookmask == ffi::LUA_MASKCOUNT as u8
        && head.basehookcount == HOOK_INSTRUCTIONS
        && head.status == 0
        && head.n_ccalls == head.base_ccalls
        && head.allowhook == 1;
    if !ok {
        tracing::warn!("the Lua state layout is not Lua 5.1.5's: long scripts cannot pause (no BUSY replies)");
    }
    LAYOUT_OK.with(|l| l.set(Some(ok)));
    ok
}

/// The innermost position in a script's own code on `thread`'s stack
/// (a dead coroutine keeps its stack): its chunk name and line.
pub fn position(thread: &Thread) -> Option<(String, i64)> {
    let state = thread.state();
    for level in 0..32 {
        // SAFETY: lua_Debug is plain data filled by lua_getstack and
        // lua_getinfo on a live thread; the strings it points to are
        // copied before the next call.
        unsafe {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(state, level, &mut ar) == 0 {
                return None;
            }
            if ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut ar) == 0 {
                continue;
            }
            let what = CStr::from_ptr(ar.what).to_string_lossy();
            let source = CStr::from_ptr(ar.source).to_string_lossy().into_owned();
            if matches!(what.as_ref(), "Lua" | "main") && source != "=prelude" {
                // Paused before a function's first instruction, the line
                // reads -1: its first line is the best answer.
                let line = if ar.currentline > 0 { ar.currentline } else { ar.linedefined.max(1) };
                return Some((source, i64::from(line)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::{LuaVm, Step};
    use std::time::Duration;

    fn paused_then_killed(code: &str) {
        let vm = LuaVm::new().unwrap();
        let f = vm.compile(code.as_bytes(), "@user_script").unwrap();
        let thread = vm.start(&f).unwrap();
        assert!(LAYOUT_OK.with(Cell::get) == Some(true), "Lua 5.1.5's layout");
        for _ in 0..3 {
            // The guard turns a loop that never pauses into a failure, not
            // a hang.
            let guard = Some((Instant::now() + Duration::from_secs(2), vm.flags.clone()));
            plan(HookPlan { slice_end: Some(Instant::now() + Duration::from_millis(5)), guard, hard: false });
            assert!(matches!(vm.step(&thread, mlua::MultiValue::new()), Step::Paused), "{code}: paused");
        }
        plan(HookPlan::default());
        let mlua::Value::Table(error) = vm.killed(&thread) else { panic!("{code}: an error table") };
        let err: String = error.raw_get("err").unwrap();
        assert!(err.contains(KILLED), "{err}");
        let line: i64 = error.raw_get("line").unwrap();
        assert!(line >= 1, "where it was killed");
        let source: String = error.raw_get("source").unwrap();
        assert_eq!(source, "@user_script", "the script's own frame, not the prelude's pcall");
    }

    #[test]
    fn a_busy_loop_pauses_and_is_killed_where_it_stood() {
        paused_then_killed("while true do end");
    }

    #[test]
    fn a_loop_under_pcall_pauses_too() {
        paused_then_killed("local f = function() local x = 0 while 1 do x = x + 1 end end while 1 do pcall(f) end");
    }

    /// Loops that read a global (through the environment's `__index`
    /// metamethod, where no yield is possible) with every period from 1
    /// to 24 extra instructions: each pauses, whatever part of its period
    /// the count lands in.
    #[test]
    fn a_loop_mostly_inside_a_metamethod_pauses_whatever_its_period() {
        for pad in 0..24 {
            let code = format!("while 1 do local x = string {} end", "local y = 1 ".repeat(pad));
            paused_then_killed(&code);
        }
    }

    #[test]
    fn a_script_that_ends_returns_its_value() {
        let vm = LuaVm::new().unwrap();
        let f = vm.compile(b"local n = 0 for i = 1, 3000000 do n = n + 1 end return n", "@user_script").unwrap();
        let thread = vm.start(&f).unwrap();
        let mut steps = 0;
        loop {
            plan(HookPlan { slice_end: Some(Instant::now()), ..HookPlan::default() });
            steps += 1;
            match vm.step(&thread, mlua::MultiValue::new()) {
                Step::Paused => continue,
                Step::Done(Ok(value)) => {
                    assert_eq!(value.as_integer(), Some(3_000_000));
                    break;
                }
                Step::Done(Err(e)) => panic!("{e:?}"),
            }
        }
        assert!(steps > 10, "paused at hooks: {steps} steps");
        plan(HookPlan::default());
    }
}
