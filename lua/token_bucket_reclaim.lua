-- sluice: token bucket reclaim, one call for a batch of buckets (the worker's
-- job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] bucket_i hash (tokens, last), i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[3i-1] path_i (registry member), ARGV[3i] capacity_i (tokens, integer
--   >= 1), ARGV[3i+1] rate_i (tokens per second)
-- Reply {reclaimed (buckets deleted), emptied (paths removed from the registry),
--        buckets (N), skipped (keys of another type: untouched)}
--
-- A bucket that has refilled to capacity is the same as an absent one (the
-- acquire reads an absent bucket as full), so it is deleted and its path
-- leaves the registry; so does the path of an absent bucket.  "Full" uses the
-- acquire's arithmetic at t = max(now, last): tokens + rate * (t - last) / 1000
-- + EPS >= capacity.  Idempotent.  Hot path: one HMGET per bucket not yet full.

local EPS = 1e-9 -- see token_bucket.lua
local MAX_INT = 9007199254740992 -- 2^53

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

local function int_arg(s, min) -- digits only, min <= v < 2^53
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

local function rate_arg(s)
  if type(s) ~= 'string' or not s:find('^[%d%.eE%+%-]+$') then return nil end
  local v = tonumber(s)
  if not v or not (v > 0) or v >= math.huge then return nil end
  return v
end

local function stored(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= math.huge then return nil end
  return v
end

local function stored_int(s)
  local v = stored(s)
  if not v or v >= MAX_INT or v ~= math.floor(v) then return nil end
  return v
end

local nb = #KEYS - 1
if nb < 0 or not (#ARGV == 3 * nb + 1 or (nb == 0 and #ARGV == 0)) then
  return redis.error_reply('ERR sluice: token_bucket_reclaim takes KEYS registry, then one bucket per path; '
    .. 'ARGV now, then path, capacity and rate per bucket')
end
-- Validate the whole batch before any write: a bad argument changes nothing.
local caps, rates = {}, {}
for i = 1, nb do
  if ARGV[3 * i - 1] == '' then return fail('path', 'a non-empty string (bucket ' .. i .. ')') end
  caps[i] = int_arg(ARGV[3 * i], 1)
  if not caps[i] then return fail('capacity', 'an integer from 1 to 2^53-1 (bucket ' .. i .. ')') end
  rates[i] = rate_arg(ARGV[3 * i + 1])
  if not rates[i] then return fail('rate', 'a finite number > 0 (tokens per second; bucket ' .. i .. ')') end
end
local now
if ARGV[1] == nil or ARGV[1] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[1], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local registry = KEYS[1]
local reclaimed, emptied, skipped = 0, 0, 0
for i = 1, nb do
  local bucket, path, capacity, rate = KEYS[1 + i], ARGV[3 * i - 1], caps[i], rates[i]
  -- pcall: a key of another type (a layout mismatch) must not stop the batch.
  local m = redis.pcall('HMGET', bucket, 'tokens', 'last')
  if m.err then
    skipped = skipped + 1
  else
    -- ---- refill (identical in token_bucket.lua) ----
    local tokens0, last = stored(m[1]), stored_int(m[2])
    local full = true -- absent or unreadable: the acquire reads it as full
    if tokens0 and last then
      local t = now -- stored time never moves backward
      if last > t then t = last end
      if tokens0 > capacity then tokens0 = capacity end
      full = math.min(capacity, tokens0 + rate * (t - last) / 1000) + EPS >= capacity
    end
    -- ---- end of refill ----
    if full then
      reclaimed = reclaimed + redis.call('DEL', bucket)
      emptied = emptied + redis.call('SREM', registry, path)
    end
  end
end
return { reclaimed, emptied, nb, skipped }
