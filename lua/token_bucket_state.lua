#!lua flags=no-writes
-- sluice: token bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket hash (tokens, last)
-- ARGV[1] capacity (tokens, integer >= 1), ARGV[2] rate (tokens per second),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {used (capacity - remaining), remaining (whole tokens at t), reset_ms
--        (until full, 0 when full), last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL)}
--
-- What token_bucket.lua would find at t = max(now, last), without writing
-- (keep the refill arithmetic identical to that script's).

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

if #KEYS ~= 1 then
  return redis.error_reply('ERR sluice: token_bucket_state takes 1 KEY (bucket)')
end
local bucket = KEYS[1]
local capacity = int_arg(ARGV[1], 1)
if not capacity then return fail('capacity', 'an integer from 1 to 2^53-1') end
local rate = rate_arg(ARGV[2])
if not rate then return fail('rate', 'a finite number > 0 (tokens per second)') end
local now
if ARGV[3] == nil or ARGV[3] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[3], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

-- ---- refill (identical in token_bucket.lua) ----
local m = redis.call('HMGET', bucket, 'tokens', 'last')
local tokens0, last = stored(m[1]), stored_int(m[2])
local stored_last = tokens0 and last
local t = now
if tokens0 and last then
  if last > t then t = last end
  if tokens0 > capacity then tokens0 = capacity end
else
  tokens0, last = capacity, t
end

local function have(dt)
  return tokens0 + rate * dt / 1000
end
-- ---- end of refill ----

local function ms_until(want) -- as in token_bucket.lua
  local x = math.ceil((want - tokens0 - EPS) * 1000 / rate)
  if x ~= x or x >= MAX_INT then return MAX_INT end
  if x < 0 then x = 0 end
  for _ = 1, 8 do
    if have(x) + EPS >= want then break end
    x = x + 1
  end
  for _ = 1, 8 do
    if x == 0 or have(x - 1) + EPS < want then break end
    x = x - 1
  end
  return x
end

local tokens = math.min(capacity, have(t - last))
local reset_ms = 0
if tokens + EPS < capacity then reset_ms = math.max(0, last + ms_until(capacity) - t) end
local remaining = math.max(0, math.min(capacity, math.floor(tokens + EPS)))
return {
  capacity - remaining,
  remaining,
  reset_ms,
  stored_last and last or -1,
  redis.call('PTTL', bucket),
}
