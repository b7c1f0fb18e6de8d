-- wrk script: POST a body of BODY_SIZE bytes (env, default 1024) to /wal.
-- With PIPELINE=N (env), each write carries N requests.
local size = tonumber(os.getenv("BODY_SIZE") or "1024")
local depth = tonumber(os.getenv("PIPELINE") or "1")
local body = string.rep("x", size)
local one = wrk.format("POST", "/wal", { ["Content-Length"] = tostring(size) }, body)
local batch = string.rep(one, depth)

function request()
  return batch
end
