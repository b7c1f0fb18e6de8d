-- The sandbox scripts run in (Redis 7.0's script_lua.c, in Lua): the redis
-- table, pcall that unwraps error tables, read-only library tables and a
-- global table that refuses new globals and reading undefined ones.
-- Arguments: the natives table (Rust functions) and the real globals.
-- Returns the protected environment scripts run in.
local natives, G = ...
local type, error, rawget, rawset, tostring, select, setmetatable, pcall =
  type, error, rawget, rawset, tostring, select, setmetatable, pcall

local readonly = setmetatable({}, { __mode = 'k' })
local function refuse()
  error('Attempt to modify a readonly table', 2)
end
local function protect(real)
  local proxy = setmetatable({}, { __index = real, __newindex = refuse, __metatable = false })
  readonly[proxy] = true
  return proxy
end

local function raise_if_error(ok, ...)
  if not ok then
    error((...), 0)
  end
  return ...
end

local redis = {}
redis.call = natives.call
function redis.pcall(...)
  local _, reply = natives.command(...)
  return reply
end
local function lib_error(text)
  error({ err = 'ERR ' .. text }, 0)
end
local function reply_table(field, ...)
  if select('#', ...) ~= 1 or type((...)) ~= 'string' then
    lib_error('wrong number or type of arguments')
  end
  return { [field] = (...) }
end
function redis.error_reply(...)
  local t = reply_table('err', ...)
  return natives.error_table(t.err)
end
function redis.status_reply(...)
  return reply_table('ok', ...)
end
function redis.sha1hex(...)
  if select('#', ...) ~= 1 then
    lib_error('wrong number of arguments')
  end
  return natives.sha1hex((...))
end
function redis.log(...)
  local n = select('#', ...)
  if n < 2 then
    lib_error('redis.log() requires two arguments or more.')
  end
  local level = ...
  if type(level) ~= 'number' then
    lib_error('First argument must be a number (log level).')
  end
  if level < 0 or level > 3 then
    lib_error('Invalid debug level.')
  end
  local parts = {}
  for i = 2, n do
    parts[#parts + 1] = tostring((select(i, ...)))
  end
  natives.log(level, table.concat(parts, ' '))
end
function redis.setresp(...)
  if select('#', ...) ~= 1 then
    lib_error('redis.setresp() requires one argument.')
  end
  local resp = tonumber((...))
  if resp ~= 2 and resp ~= 3 then
    lib_error('RESP version must be 2 or 3.')
  end
  natives.setresp(resp)
end
function redis.set_repl(...)
  if select('#', ...) ~= 1 then
    lib_error('redis.set_repl() requires two arguments.')
  end
  local flags = tonumber((...))
  if flags == nil or flags < 0 or flags > 3 then
    lib_error('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
end
function redis.replicate_commands()
  return true
end
function redis.breakpoint()
  return false
end
function redis.debug() end
function redis.acl_check_cmd(...)
  if not natives.command_exists(...) then
    lib_error('Invalid command passed to redis.acl_check_cmd()')
  end
  return true
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = '7.0.15', 0x07000f

local function nonexistent(k, level)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", level)
end

-- What FUNCTION LOAD's code sees (Redis 7.0's function_lua.c): a redis
-- table of register_function, log and the constants, nothing else; any
-- other name, global or field, is an error.
local load_redis = {
  register_function = function(...)
    return raise_if_error(natives.register_function(...))
  end,
  log = redis.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}

-- math.random and math.randomseed on Redis's own generator.
local function random(...)
  local n, r = select('#', ...), natives.rand()
  if n == 0 then
    return r
  elseif n == 1 then
    local u = math.floor((...))
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 2) end
    return math.floor(r * u) + 1
  elseif n == 2 then
    local l, u = ...
    l, u = math.floor(l), math.floor(u)
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 2) end
    return math.floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 2)
end
math.random = random
math.randomseed = function(seed)
  natives.srand(seed)
end

-- pcall gives the message of an error table, as Redis 7 does.
local function unwrap(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == 'userdata' then
    local text = natives.raised(e)
    if text then return false, text end
  end
  if type(e) == 'table' and type(rawget(e, 'err')) == 'string' then
    return false, rawget(e, 'err')
  end
  return false, e
end
-- pcall runs its function as a coroutine: a count hook may pause a long
-- script (lua/pause.rs), which Lua 5.1 cannot do across a C pcall. A
-- pause inside is passed up (a hook's yield carries no values).
local co_create, co_resume, co_status, co_yield = coroutine.create, coroutine.resume, coroutine.status, coroutine.yield
local function pcall_finish(co, ...)
  if co_status(co) ~= 'dead' then
    return pcall_finish(co, co_resume(co, co_yield(select(2, ...))))
  end
  return ...
end
G.pcall = function(f, ...)
  local co = co_create(function(...) return f(...) end)
  return unwrap(pcall_finish(co, co_resume(co, ...)))
end
G.setmetatable = function(t, mt)
  if readonly[t] then refuse() end
  return setmetatable(t, mt)
end
G.rawset = function(t, k, v)
  if readonly[t] then refuse() end
  return rawset(t, k, v)
end
G.loadfile, G.dofile, G.module, G.require, G.newproxy, G.gcinfo, G.print = nil, nil, nil, nil, nil, nil, nil
G.collectgarbage = collectgarbage

G.redis = protect(redis)
for _, name in ipairs({ 'string', 'math', 'table', 'cjson', 'bit', 'struct', 'cmsgpack', 'coroutine' }) do
  if rawget(G, name) ~= nil then
    rawset(G, name, protect(rawget(G, name)))
  end
end

-- Binary chunks are refused (Redis 7): loadstring answers nil.
local loadstring = loadstring
G.loadstring = function(s, ...)
  if type(s) == 'string' and s:byte(1) == 27 then
    return nil, 'binary code loading is not allowed'
  end
  return loadstring(s, ...)
end

local load_api = setmetatable({}, {
  __index = function(_, k)
    local v = rawget(load_redis, k)
    if v == nil then nonexistent(k, 2) end
    return v
  end,
  __newindex = refuse,
  __metatable = false,
})
readonly[load_api] = true

-- natives.loading is set while FUNCTION LOAD runs a library's code.
local env = setmetatable({}, {
  __index = function(_, k)
    if rawget(natives, 'loading') then
      if k == 'redis' then return load_api end
      nonexistent(k, 2)
    end
    local v = rawget(G, k)
    if v == nil then nonexistent(k, 2) end
    return v
  end,
  __newindex = refuse,
  -- What getmetatable(_G) shows: a read-only table.
  __metatable = protect({}),
})
readonly[env] = true
G._G = env
-- The runner: calls f with the arguments under the error handler.
local xpcall, unpack = xpcall, unpack
natives.run = function(f, handler, ...)
  local n, args = select('#', ...), { ... }
  return xpcall(function() return f(unpack(args, 1, n)) end, handler)
end
-- Scripts run as coroutines, a step at a time: a step ends with the
-- script's value ('done'), its error as a table with where it happened
-- ('error'), or a pause ('yield').
natives.start = function(f)
  return co_create(function(...) return f(...) end)
end
local function step_end(co, ok, ...)
  if co_status(co) ~= 'dead' then
    return 'yield'
  end
  if ok then
    return 'done', (...)
  end
  return 'error', natives.failure(co, (...))
end
natives.step = function(co, ...)
  return step_end(co, co_resume(co, ...))
end
return env
