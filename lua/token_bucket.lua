-- sluice: token bucket, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] bucket   hash: tokens = tokens the bucket held at `last` ('%.17g'),
--                        last   = ms of the last admission
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] capacity (tokens, integer >= 1),
-- ARGV[3] rate (tokens added per second, > 0), ARGV[4] n (cost, default 1),
-- ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining (whole tokens), retry_after_ms (-1: n > capacity),
--        reset_ms (until the bucket is full)}
--
-- Lazy refill: at t the bucket holds min(capacity, tokens + rate * (t - last) / 1000).
-- An absent bucket is full, and so is the same as a bucket that has refilled to
-- capacity: the key expires then, and the worker's reclaim deletes such buckets.
-- Only an admission writes; a rejected request takes nothing and writes nothing.

-- tokens + rate * ms / 1000 is not exact in binary: at 10 per minute, 6000 ms
-- after an empty bucket it holds 0.9999999999999999.  EPS makes such a sum
-- count as the whole token it stands for, so that a client that waits exactly
-- retry_after_ms is admitted.
local EPS = 1e-9
local MAX_INT = 9007199254740992 -- 2^53: every integer up to it is exact

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

-- Decimal digits only (no sign, exponent, hex or blanks), min <= v < 2^53
-- (a longer number would round: 2^53 + 1 reads as 2^53).
local function int_arg(s, min)
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

-- A finite decimal number > 0 ("inf", "nan" and hex are refused).
local function rate_arg(s)
  if type(s) ~= 'string' or not s:find('^[%d%.eE%+%-]+$') then return nil end
  local v = tonumber(s)
  if not v or not (v > 0) or v >= math.huge then return nil end
  return v
end

-- A stored finite number >= 0, or nil.
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

local function fmt_int(v) return string.format('%d', v) end

if #KEYS ~= 2 then
  return redis.error_reply('ERR sluice: token_bucket takes 2 KEYS (bucket, registry)')
end
local bucket, registry = KEYS[1], KEYS[2]
local path = ARGV[1]
if type(path) ~= 'string' or path == '' then return fail('path', 'a non-empty string') end
local capacity = int_arg(ARGV[2], 1)
if not capacity then return fail('capacity', 'an integer from 1 to 2^53-1') end
local rate = rate_arg(ARGV[3])
if not rate then return fail('rate', 'a finite number > 0 (tokens per second)') end
local n = 1
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  n = int_arg(ARGV[4], 1)
  if not n then return fail('n', 'an integer from 1 to 2^53-1') end
end
local now
if ARGV[5] == nil or ARGV[5] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[5], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

-- ---- refill (identical in token_bucket_reclaim.lua, token_bucket_state.lua) ----
local m = redis.call('HMGET', bucket, 'tokens', 'last')
local tokens0, last = stored(m[1]), stored_int(m[2])
local t = now
if tokens0 and last then
  -- Stored time never moves backward: a caller behind `last` is served at `last`.
  if last > t then t = last end
  if tokens0 > capacity then tokens0 = capacity end -- capacity was lowered
else
  tokens0, last = capacity, t -- absent (or unreadable): a full bucket
end

-- Tokens dt ms after `last`, before the cap: the admission and every answer
-- derived from it (retry_after, reset_ms, the TTL) use this same arithmetic.
local function have(dt)
  return tokens0 + rate * dt / 1000
end
-- ---- end of refill ----

-- Smallest whole ms x >= 0 after `last` at which the bucket holds `want`
-- (<= capacity) tokens.  The closed form divides where have() multiplies, so
-- the steps check it on have() itself.
local function ms_until(want)
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
local allowed, retry_after = 0, 0
if n > capacity then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif tokens + EPS >= n then
  allowed = 1
  tokens = math.max(0, tokens - n)
  tokens0, last = tokens, t
  redis.call('HSET', bucket, 'tokens', string.format('%.17g', tokens), 'last', fmt_int(t))
  -- Keep the bucket until it is full again (then it is the same as absent),
  -- measured from the caller's now, + 1 ms for the expiry clock's rounding.
  local ttl = t + ms_until(capacity) - now + 1
  if ttl >= MAX_INT then
    redis.call('PERSIST', bucket) -- refills in more than 2^53 ms: never expire
  else
    redis.call('PEXPIRE', bucket, fmt_int(ttl))
  end
  redis.call('SADD', registry, path)
else
  retry_after = math.max(1, last + ms_until(n) - t)
end

local reset_ms = 0
if tokens + EPS < capacity then reset_ms = math.max(0, last + ms_until(capacity) - t) end
local remaining = math.max(0, math.min(capacity, math.floor(tokens + EPS)))
return { allowed, remaining, retry_after, reset_ms }
