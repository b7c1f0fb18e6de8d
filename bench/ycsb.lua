-- YCSB-like mixes for wrk against packetstore's HTTP port (the paper's
-- Figure 8): keys k0..k999 drawn from a Zipf(0.99) distribution, 1 KiB
-- values, YCSB_WRITE_PCT percent PUTs (default 50), the rest GETs.
-- YCSB_WRITE_PCT=100 loads every key once, in order, then keeps writing.
local n = 1000
local theta = 0.99
local cdf = {}
local total = 0
for i = 1, n do total = total + 1 / (i ^ theta) end
local acc = 0
for i = 1, n do
  acc = acc + (1 / (i ^ theta)) / total
  cdf[i] = acc
end

local function zipf()
  local u = math.random()
  local lo, hi = 1, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return lo - 1
end

local value = string.rep("v", 1024)
local write_pct = tonumber(os.getenv("YCSB_WRITE_PCT") or "50")
local loaded = 0

request = function()
  if write_pct >= 100 then
    local key = loaded % n
    loaded = loaded + 1
    return wrk.format("PUT", "/kv/k" .. key, nil, value)
  end
  local path = "/kv/k" .. zipf()
  if math.random(100) <= write_pct then
    return wrk.format("PUT", path, nil, value)
  end
  return wrk.format("GET", path)
end
