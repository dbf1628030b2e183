#!lua flags=no-writes
-- sluice: leaky bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket sorted set, KEYS[2] meta hash (last, carry, seq)
-- ARGV[1] capacity (entries, integer >= 1), ARGV[2] rate (entries per second),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {level, remaining, reset_ms, last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL)}
--
-- Reports what the leak of leaky_bucket.lua would leave at t, without doing it
-- (keep the leak arithmetic identical to that script's).

local EPS = 1e-9 -- see leaky_bucket.lua: absorbs binary error in rate * ms / 1000
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

if #KEYS ~= 2 then
  return redis.error_reply('ERR sluice: leaky_bucket_state takes 2 KEYS (bucket, meta)')
end
local bucket, meta = KEYS[1], KEYS[2]
local capacity = int_arg(ARGV[1], 1)
if not capacity then return fail('capacity', 'an integer from 1 to 2^53-1') end
local rate = rate_arg(ARGV[2])
if not rate then return fail('rate', 'a finite number > 0 (entries per second)') end
local now
if ARGV[3] == nil or ARGV[3] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[3], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local level = redis.call('ZCARD', bucket)
local m = redis.call('HMGET', meta, 'last', 'carry')
local stored_last = stored(m[1])
local last, carry = stored_last, stored(m[2]) or 0
if carry >= 1 then carry = 0 end
local t = now -- stored time never moves backward
if last and last > t then t = last end

local function leaked(dt)
  return math.floor(rate * dt / 1000 + carry + EPS)
end

-- The leak at t, on local variables only.
if level > 0 then
  if not last then
    last, carry = t, 0
  else
    local due = rate * (t - last) / 1000 + carry
    local k = math.floor(due + EPS)
    if k >= level then
      level = 0
    elseif k > 0 then
      level, last, carry = level - k, t, math.max(0, due - k)
    end
  end
end

-- Smallest whole ms x >= 0 after `last` at which `want` entries have leaked
-- (as in leaky_bucket.lua).
local function ms_until(want)
  local x = math.ceil((want - carry - EPS) * 1000 / rate)
  if x ~= x or x >= MAX_INT then return MAX_INT end
  if x < 0 then x = 0 end
  for _ = 1, 8 do
    if leaked(x) >= want then break end
    x = x + 1
  end
  for _ = 1, 8 do
    if x == 0 or leaked(x - 1) < want then break end
    x = x - 1
  end
  return x
end

local reset_ms = 0
if level > 0 then reset_ms = math.max(0, last + ms_until(1) - t) end
return {
  level,
  math.max(0, capacity - level),
  reset_ms,
  stored_last and math.floor(stored_last) or -1,
  redis.call('PTTL', bucket),
}
