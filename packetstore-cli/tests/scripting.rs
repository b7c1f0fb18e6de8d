//! Lua scripting and Redis 7 functions as Redis 7.0 serves them: EVAL's
//! reply conversions, redis.call's and pcall's errors, the libraries
//! (cjson, cmsgpack, bit, struct), the script cache (EVALSHA, NOSCRIPT,
//! SCRIPT FLUSH), read-only scripts, FUNCTION LOAD and FCALL, and
//! durability: a library and a script's writes survive a kill -9; a long
//! script pauses past busy-reply-threshold (others get BUSY, SCRIPT KILL
//! stops it unless it wrote), and a paused script's writes are all or
//! nothing across a kill -9.
//!
//! Method: raw RESP connections (exact frames) and the redis crate,
//! against `packetstore serve`.

mod common;

use common::{Raw, Server, TempPool};

fn eval(raw: &mut Raw, script: &str, args: &[&str]) -> String {
    let mut argv: Vec<&[u8]> = vec![b"EVAL", script.as_bytes()];
    argv.extend(args.iter().map(|a| a.as_bytes()));
    raw.call(&argv).unwrap()
}

#[test]
fn eval_converts_replies_both_ways() {
    let pool = TempPool::new("scripting-convert");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    let mut c = server.client();
    assert_eq!(redis::cmd("EVAL").arg("return 'hello'").arg(0).query::<String>(&mut c).unwrap(), "hello");
    assert_eq!(eval(&mut r, "return 100.5", &["0"]), ":100");
    assert_eq!(eval(&mut r, "return true", &["0"]), ":1");
    assert_eq!(eval(&mut r, "return false", &["0"]), "$-1");
    assert_eq!(eval(&mut r, "return {ok='fine'}", &["0"]), "+fine");
    assert_eq!(eval(&mut r, "return {err='My Error'}", &["0"]), "-My Error");
    let nested: Vec<redis::Value> = redis::cmd("EVAL").arg("return {1,2,3,'ciao',{1,2}}").arg(0).query(&mut c).unwrap();
    assert_eq!(nested.len(), 5);
    let keys: Vec<String> = redis::cmd("EVAL")
        .arg("return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}")
        .arg(2)
        .arg(&["a", "b", "c", "d"])
        .query(&mut c)
        .unwrap();
    assert_eq!(keys, ["a", "b", "c", "d"]);
    // Replies to Lua: integer, bulk, status, nil.
    let _: () = redis::cmd("SET").arg("x").arg("0").query(&mut c).unwrap();
    let typed: Vec<String> = redis::cmd("EVAL")
        .arg(
            "local a = redis.call('incr', KEYS[1]); local b = redis.call('set', 'y', 'v'); \
              local n = redis.call('get', 'missing'); return {type(a), tostring(a), b['ok'], tostring(n)}",
        )
        .arg(1)
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(typed, ["number", "1", "OK", "false"]);
}

#[test]
fn call_errors_pcall_and_globals() {
    let pool = TempPool::new("scripting-errors");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"SET", b"foo", b"bar"]).unwrap(), "+OK");
    let error = eval(&mut r, "return redis.call('incr', KEYS[1])", &["1", "foo"]);
    assert!(error.starts_with("-ERR value is not an integer or out of range script: "), "{error}");
    assert!(error.ends_with(", on @user_script:1."), "{error}");
    assert_eq!(
        eval(&mut r, "return redis.pcall('incr', KEYS[1])", &["1", "foo"]),
        "-ERR value is not an integer or out of range"
    );
    let pcalled = eval(&mut r, "local ok, e = pcall(redis.call, 'incr', KEYS[1]); return e", &["1", "foo"]);
    assert_eq!(pcalled, "$43");
    assert!(eval(&mut r, "redis.call('nosuchcommand')", &["0"])
        .starts_with("-ERR Unknown Redis command called from script"));
    assert!(eval(&mut r, "redis.call('get','a','b')", &["0"])
        .starts_with("-ERR Wrong number of args calling Redis command"));
    assert!(
        eval(&mut r, "redis.call('multi')", &["0"]).starts_with("-ERR This Redis command is not allowed from script")
    );
    assert!(eval(&mut r, "return redis.call()", &["0"]).contains("at least one argument"));
    assert!(eval(&mut r, "return a", &["0"]).contains("Script attempted to access nonexistent global variable 'a'"));
    assert!(eval(&mut r, "a = 10", &["0"]).contains("Attempt to modify a readonly table"));
    assert!(eval(&mut r, "cjson.encode = nil", &["0"]).contains("Attempt to modify a readonly table"));
    assert!(eval(&mut r, "return 'x", &["0"]).starts_with("-ERR Error compiling script (new function): user_script:1:"));
    assert_eq!(eval(&mut r, "return 1", &["2", "a"]), "-ERR Number of keys can't be greater than number of args");
    assert_eq!(eval(&mut r, "return 1", &["-1"]), "-ERR Number of keys can't be negative");
}

#[test]
fn libraries_round_trip() {
    let pool = TempPool::new("scripting-libs");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    let mut c = server.client();
    let json: String = redis::cmd("EVAL")
        .arg("return cjson.encode(cjson.decode('[1,2.5,\"a\",{\"k\":[true,false]}]'))")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(json, r#"[1,2.5,"a",{"k":[true,false]}]"#);
    let decoded: String = redis::cmd("EVAL")
        .arg("return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(decoded, "0 -5000 -1 0.0003 1023.2 0");
    let hex = "local e = cmsgpack.pack(ARGV[1] + 0) local h = '' for i = 1, #e do \
               h = h .. string.format('%02x', string.byte(e, i)) end return h";
    assert_eq!(eval(&mut r, hex, &["0", "0.1"]), "$18");
    let packed: String = redis::cmd("EVAL").arg(hex).arg(0).arg("-1099511627776").query(&mut c).unwrap();
    assert_eq!(packed, "d3ffffff0000000000");
    let round: Vec<String> = redis::cmd("EVAL")
        .arg("local t = cmsgpack.unpack(cmsgpack.pack({a = 'x', b = {1, 2, 3}})) return {t.a, tostring(#t.b)}")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(round, ["x", "3"]);
    assert_eq!(eval(&mut r, "return bit.bor(1,2,4,8,16,32,64,128)", &["0"]), ":255");
    assert_eq!(eval(&mut r, "return bit.tohex(65535, -4)", &["0"]), "$4");
    assert_eq!(eval(&mut r, "return bit.band(bit.lshift(1, 31), -1) == -2147483648", &["0"]), ":1");
    let structs: Vec<i64> = redis::cmd("EVAL")
        .arg(
            "local s = struct.pack('>HiB', 258, -7, 9) local a, b, c, n = struct.unpack('>HiB', s) \
              return {a, b, c, n, struct.size('>HiB')}",
        )
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(structs, [258, -7, 9, 8, 7]);
    let sha: String = redis::cmd("EVAL").arg("return redis.sha1hex('Pizza & Mandolino')").arg(0).query(&mut c).unwrap();
    assert_eq!(sha, "74822d82031af7493c20eefa13bd07ec4fada82f");
}

#[test]
fn script_cache_and_read_only_scripts() {
    let pool = TempPool::new("scripting-cache");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    let mut c = server.client();
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg("return 'loaded'").query(&mut c).unwrap();
    assert_eq!(sha, "b534286061d4b9e4026607613b95c06c06015ae8");
    let upper = sha.to_uppercase();
    assert_eq!(redis::cmd("EVALSHA").arg(&upper).arg(0).query::<String>(&mut c).unwrap(), "loaded");
    let exists: Vec<i64> = redis::cmd("SCRIPT").arg("EXISTS").arg(&sha).arg("ffff").query(&mut c).unwrap();
    assert_eq!(exists, [1, 0]);
    assert_eq!(r.call(&[b"SCRIPT", b"FLUSH"]).unwrap(), "+OK");
    assert_eq!(r.call(&[b"EVALSHA", sha.as_bytes(), b"0"]).unwrap(), "-NOSCRIPT No matching script. Please use EVAL.");
    assert_eq!(r.call(&[b"SCRIPT", b"KILL"]).unwrap(), "-NOTBUSY No scripts in execution right now.");
    assert_eq!(r.call(&[b"SET", b"foo", b"bar"]).unwrap(), "+OK");
    assert_eq!(r.call(&[b"EVAL_RO", b"return redis.call('get', KEYS[1])", b"1", b"foo"]).unwrap(), "$3");
    let refused = r.call(&[b"EVAL_RO", b"return redis.call('del', KEYS[1])", b"1", b"foo"]).unwrap();
    assert!(refused.starts_with("-ERR Write commands are not allowed from read-only scripts."), "{refused}");
    let flagged = "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')";
    let refused = eval(&mut r, flagged, &["1", "foo"]);
    assert!(refused.starts_with("-ERR Write commands are not allowed from read-only scripts."), "{refused}");
    assert_eq!(eval(&mut r, "#!lua flags=bogus\nreturn 1", &["0"]), "-ERR Unexpected flag in script shebang: bogus");
    assert_eq!(
        r.call(&[b"EVAL_RO", b"#!lua\nreturn 1", b"0"]).unwrap(),
        "-ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(r.call(&[b"GET", b"foo"]).unwrap(), "$3");
}

const LIBRARY: &str = "#!lua name=mylib\n\
    redis.register_function('setboth', function(keys, args) \
      redis.call('set', keys[1], args[1]) return redis.call('set', keys[2], args[1]) end)\n\
    redis.register_function{function_name='getit', callback=function(keys) return redis.call('get', keys[1]) end, \
      flags={'no-writes'}}";

#[test]
fn functions_load_call_and_survive_restart() {
    let pool = TempPool::new("scripting-functions");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"FUNCTION", b"LOAD", LIBRARY.as_bytes()]).unwrap(), "$5");
    assert_eq!(r.call(&[b"FUNCTION", b"LOAD", LIBRARY.as_bytes()]).unwrap(), "-ERR Library 'mylib' already exists");
    assert_eq!(r.call(&[b"FUNCTION", b"LOAD", b"REPLACE", LIBRARY.as_bytes()]).unwrap(), "$5");
    assert_eq!(r.call(&[b"FCALL", b"setboth", b"2", b"a", b"b", b"v"]).unwrap(), "+OK");
    assert_eq!(r.call(&[b"FCALL_RO", b"getit", b"1", b"a"]).unwrap(), "$1");
    assert_eq!(
        r.call(&[b"FCALL_RO", b"setboth", b"2", b"a", b"b", b"v"]).unwrap(),
        "-ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(r.call(&[b"FCALL", b"nope", b"0"]).unwrap(), "-ERR Function not found");
    // Functions are not data: FLUSHALL keeps them.
    assert_eq!(r.call(&[b"FLUSHALL"]).unwrap(), "+OK");
    assert_eq!(
        r.call(&[b"FUNCTION", b"LIST"]).unwrap(),
        "*1 [*6 [$12, $5, $6, $3, $9, *2 [*6 [$4, $7, $11, $-1, $5, *0], *6 [$4, $5, $11, $-1, $5, *1 [$9]]]]]"
    );
    // A script's writes and the library survive a kill -9.
    assert_eq!(eval(&mut r, "for i = 1, 50 do redis.call('set', 'k' .. i, i) end return 1", &["0"]), ":1");
    server.kill();
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"FCALL", b"getit", b"1", b"k50"]).unwrap(), "$2");
    assert_eq!(r.call(&[b"DBSIZE"]).unwrap(), ":50");
    assert_eq!(r.call(&[b"FUNCTION", b"DELETE", b"mylib"]).unwrap(), "+OK");
    assert_eq!(r.call(&[b"FUNCTION", b"DELETE", b"mylib"]).unwrap(), "-ERR Library not found");
    server.kill();
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"FCALL", b"getit", b"1", b"k50"]).unwrap(), "-ERR Function not found");
}

/// FUNCTION LOAD's code runs as Redis 7.0 runs it: it sees a `redis` table
/// of register_function, log and constants only (any other name is an
/// error naming it), for at most half a second; the functions it registers
/// see the whole API but not register_function. The shebang's quotes are
/// removed; FUNCTION LIST takes each option once.
#[test]
fn function_load_runs_in_its_own_environment_and_time() {
    let pool = TempPool::new("scripting-load-env");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let load = |c: &mut redis::Connection, code: &str| -> Result<String, String> {
        redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(code).query(c).map_err(|e| e.to_string())
    };
    for (body, name) in
        [("return math.random()", "math"), ("redis.call('ping')", "call"), ("getmetatable(_G)", "getmetatable")]
    {
        let error = load(&mut c, &format!("#!lua name=lib\n{body}")).unwrap_err();
        let expected = format!("Script attempted to access nonexistent global variable '{name}'");
        assert!(error.contains(&expected), "{body}: {error}");
    }
    let started = std::time::Instant::now();
    let error = load(&mut c, "#!lua name=lib\nlocal a = 1 while 1 do a = a + 1 end").unwrap_err();
    assert!(error.contains("FUNCTION LOAD timeout"), "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "the load ran {:?}", started.elapsed());
    let code = "#!lua name=\"quoted\"\nredis.register_function('inner', function() return redis.register_function('x', function() end) end)\nredis.log(redis.LOG_NOTICE, 'loading')";
    assert_eq!(load(&mut c, code).unwrap(), "quoted");
    let error = redis::cmd("FCALL").arg("inner").arg(0).query::<()>(&mut c).unwrap_err().to_string();
    assert!(error.contains("attempt to call field 'register_function' (a nil value)"), "{error}");
    let error = redis::cmd("FUNCTION").arg("LIST").arg("WITHCODE").arg("WITHCODE").query::<()>(&mut c).unwrap_err();
    assert!(error.to_string().contains("Unknown argument WITHCODE"), "{error}");
}

/// The interpreter's garbage is collected a step every 50 runs (Redis's
/// LUA_GC_CYCLE_PERIOD): 10000 short scripts leave it near its size at
/// the start, as Redis's "EVAL does not leak in the Lua stack" asks.
#[test]
fn many_short_scripts_leave_little_garbage() {
    let pool = TempPool::new("scripting-gc");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let mut pipe = redis::pipe();
    for _ in 0..10_000 {
        pipe.cmd("EVAL").arg("return redis.call('incr', KEYS[1])").arg(1).arg("x").ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let info: String = redis::cmd("INFO").arg("memory").query(&mut c).unwrap();
    let used: usize = info
        .lines()
        .find_map(|line| line.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("INFO shows used_memory_lua");
    assert!(used < 100 * 1024, "used_memory_lua {used}");
    assert_eq!(redis::cmd("GET").arg("x").query::<i64>(&mut c).unwrap(), 10_000);
}

/// A function looping under pcall over redis.call (its global lookups are
/// metamethod calls, where no pause is possible) still pauses: others get
/// BUSY and FUNCTION KILL stops it.
#[test]
fn a_long_function_pauses_and_function_kill_stops_it() {
    let pool = TempPool::new("scripting-busy-function");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg(10).query(&mut c).unwrap();
    let library = "#!lua name=test\nredis.register_function('test', function(KEYS, ARGV)\n\
                   local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end\nend)";
    let _: String = redis::cmd("FUNCTION").arg("LOAD").arg(library).query(&mut c).unwrap();
    let mut r = Raw::connect(&server);
    r.send(&[b"FCALL", b"test", b"0"]).unwrap();
    let busy = wait_busy(&mut c);
    assert!(busy.contains("You can only call FUNCTION KILL or SHUTDOWN NOSAVE"), "{busy}");
    let _: () = redis::cmd("FUNCTION").arg("KILL").query(&mut c).unwrap();
    let killed = r.read().unwrap();
    assert!(killed.starts_with("-ERR Script killed by user"), "{killed}");
    assert_eq!(redis::cmd("PING").query::<String>(&mut c).unwrap(), "PONG");
}

#[test]
fn a_script_inside_exec_joins_the_transaction() {
    let pool = TempPool::new("scripting-exec");
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"MULTI"]).unwrap(), "+OK");
    assert_eq!(r.call(&[b"EVAL", b"return redis.call('set', 'a', '1')", b"0"]).unwrap(), "+QUEUED");
    assert_eq!(r.call(&[b"SET", b"b", b"2"]).unwrap(), "+QUEUED");
    assert_eq!(r.call(&[b"EXEC"]).unwrap(), "*2 [+OK, +OK]");
    server.kill();
    let server = Server::start(&pool.0, &[]);
    let mut r = Raw::connect(&server);
    assert_eq!(r.call(&[b"MGET", b"a", b"b"]).unwrap(), "*2 [$1, $1]");
}

/// PING until it answers BUSY (the script has paused).
fn wait_busy(c: &mut redis::Connection) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match redis::cmd("PING").query::<String>(c) {
            Err(error) if error.to_string().contains("BUSY") => return error.to_string(),
            _ => {}
        }
        assert!(std::time::Instant::now() < deadline, "the script never paused");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A read-only script past busy-reply-threshold pauses: others get BUSY
/// (naming SCRIPT KILL for EVAL), FUNCTION KILL refuses an EVAL, SCRIPT
/// KILL stops it even under pcall, its client gets "killed by user" and
/// the requests it pipelined after it are then served.
#[test]
fn a_long_script_answers_busy_and_script_kill_stops_it() {
    let pool = TempPool::new("scripting-busy");
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg(10).query(&mut c).unwrap();
    for script in
        ["while true do end", "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end"]
    {
        let mut r = Raw::connect(&server);
        r.send(&[b"EVAL", script.as_bytes(), b"0"]).unwrap();
        r.send(&[b"ECHO", b"after"]).unwrap();
        let busy = wait_busy(&mut c);
        assert!(busy.contains("You can only call SCRIPT KILL or SHUTDOWN NOSAVE"), "{busy}");
        let wrong = redis::cmd("FUNCTION").arg("KILL").query::<String>(&mut c).unwrap_err().to_string();
        assert!(wrong.contains("BUSY"), "FUNCTION KILL does not kill an EVAL: {wrong}");
        let _: () = redis::cmd("SCRIPT").arg("KILL").query(&mut c).unwrap();
        let killed = r.read().unwrap();
        assert!(killed.starts_with("-ERR Script killed by user with SCRIPT KILL"), "{killed}");
        assert_eq!(r.read().unwrap(), "$5", "the pipelined request ran after the script");
        assert_eq!(redis::cmd("PING").query::<String>(&mut c).unwrap(), "PONG");
    }
    let none = redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut c).unwrap_err().to_string();
    assert!(none.contains("No scripts in execution right now"), "{none}");
}

/// A paused script that wrote cannot be killed (UNKILLABLE); its writes
/// are one group: a kill -9 while it is paused leaves none of them, and a
/// run to its end leaves all of them.
#[test]
fn a_paused_script_that_wrote_is_all_or_nothing() {
    let pool = TempPool::new("scripting-busy-writes");
    let script = "redis.call('SET', KEYS[1], 'a') local n = 0 for i = 1, tonumber(ARGV[1]) do n = n + 1 end \
                  redis.call('SET', KEYS[2], 'b') return n";
    {
        let server = Server::start(&pool.0, &[]);
        let mut c = server.client();
        let _: () = redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg(10).query(&mut c).unwrap();
        let addr = server.resp;
        let _runner = std::thread::spawn(move || {
            let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
            let mut r = client.get_connection().unwrap();
            let _ = redis::cmd("EVAL").arg(script).arg(2).arg("x").arg("y").arg(4_000_000_000u64).query::<i64>(&mut r);
        });
        wait_busy(&mut c);
        let refused = redis::cmd("SCRIPT").arg("KILL").query::<String>(&mut c).unwrap_err().to_string();
        assert!(refused.contains("UNKILLABLE"), "{refused}");
        let get = redis::cmd("GET").arg("x").query::<Option<String>>(&mut c).unwrap_err().to_string();
        assert!(get.contains("BUSY"), "no read sees the script half done: {get}");
        server.kill();
    }
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let found: (Option<String>, Option<String>) = redis::pipe().get("x").get("y").query(&mut c).unwrap();
    assert_eq!(found, (None, None), "a paused script's first write is not kept without its end");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("lua-time-limit").arg(10).query(&mut c).unwrap();
    let n: i64 = redis::cmd("EVAL").arg(script).arg(2).arg("x").arg("y").arg(20_000_000).query(&mut c).unwrap();
    assert_eq!(n, 20_000_000);
    server.kill();
    let server = Server::start(&pool.0, &[]);
    let mut c = server.client();
    let found: (Option<String>, Option<String>) = redis::pipe().get("x").get("y").query(&mut c).unwrap();
    assert_eq!(found, (Some("a".into()), Some("b".into())));
}
