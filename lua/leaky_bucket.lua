-- sluice: leaky bucket (meter), client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] bucket   sorted set of admitted entries, score = admission ms,
--                  member "<ms>:<seq>" (unique per request)
-- KEYS[2] meta     hash: last  = ms up to which leaks are accounted,
--                        carry = fractional leak credit in [0, 1),
--                        seq   = member counter
-- KEYS[3] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] capacity (entries, integer >= 1),
-- ARGV[3] rate (entries leaked per second, > 0), ARGV[4] n (cost, default 1),
-- ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > capacity), reset_ms}
--
-- The leak is a meter: a non-empty bucket loses floor(rate * busy_ms / 1000)
-- entries, oldest first, computed over the whole span since `last` and keeping
-- the fraction in `carry`, so the result does not depend on how often (or by
-- whom: this script, the drain, several daemons) it is applied.  The same leak
-- code is in leaky_bucket_drain.lua and leaky_bucket_state.lua: keep the three
-- identical.  An empty bucket earns no credit (its meta is deleted).

-- rate * ms / 1000 + carry is not exact in binary: at 10/60 per s, a leak at
-- 6007 ms then one at 12000 ms sums to 0.9999999999999998 for the second
-- entry.  EPS makes such a sum count as the whole entry it stands for.
local GRACE_MS = 1000 -- see the TTL below
local MAX_N = 100000 -- cost of one request, in entries
local EPS = 1e-9
-- 2^53: the largest range where a Lua number (a double) holds every integer.
local MAX_INT = 9007199254740992

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

-- A stored number, or nil when absent or not a finite number >= 0.
local function stored(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= math.huge then return nil end
  return v
end

local function fmt_int(v) return string.format('%d', v) end

if #KEYS ~= 3 then
  return redis.error_reply('ERR sluice: leaky_bucket takes 3 KEYS (bucket, meta, registry)')
end
local bucket, meta, registry = KEYS[1], KEYS[2], KEYS[3]
local path = ARGV[1]
if type(path) ~= 'string' or path == '' then return fail('path', 'a non-empty string') end
local capacity = int_arg(ARGV[2], 1)
if not capacity then return fail('capacity', 'an integer from 1 to 2^53-1') end
local rate = rate_arg(ARGV[3])
if not rate then return fail('rate', 'a finite number > 0 (entries per second)') end
local n = 1
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  n = int_arg(ARGV[4], 1)
  -- one sorted-set member per unit: a cap keeps one call from filling Redis
  if not n or n > MAX_N then return fail('n', 'an integer from 1 to ' .. MAX_N) end
end
local now
if ARGV[5] == nil or ARGV[5] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[5], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

-- ---- leak (identical in leaky_bucket_drain.lua, leaky_bucket_state.lua) ----
local level = redis.call('ZCARD', bucket)
local m = redis.call('HMGET', meta, 'last', 'carry')
local last, carry = stored(m[1]), stored(m[2]) or 0
if carry >= 1 then carry = 0 end
-- Stored time never moves backward: a caller behind `last` is served at `last`.
local t = now
if last and last > t then t = last end

-- Entries leaked dt ms after `last`: the leak below and every answer derived
-- from it (retry_after, reset_ms, the TTL) use this same arithmetic, so they
-- agree to the ms.
local function leaked(dt)
  return math.floor(rate * dt / 1000 + carry + EPS)
end

if level == 0 then
  redis.call('DEL', meta) -- time spent empty earns no credit
  last, carry = nil, 0
elseif not last then
  -- written by a limiter that keeps no meta: start accounting now.  The meta
  -- expires when the bucket would be drained (+1 s), as the drain's does: a
  -- refused request adds no TTL of its own, and a meta without one would
  -- outlive the bucket (the path is not registered, so nothing removes it).
  last, carry = t, 0
  redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0')
  local ttl = math.ceil(level * 1000 / rate) + 1001
  if ttl >= MAX_INT then
    redis.call('PERSIST', meta)
  else
    redis.call('PEXPIRE', meta, fmt_int(ttl))
  end
else
  local due = rate * (t - last) / 1000 + carry
  local k = math.floor(due + EPS)
  if k >= level then
    redis.call('DEL', bucket, meta) -- emptied: no credit carries over
    level, last, carry = 0, nil, 0
  elseif k > 0 then
    redis.call('ZREMRANGEBYRANK', bucket, '0', fmt_int(k - 1)) -- oldest first
    level, last, carry = level - k, t, math.max(0, due - k)
    redis.call('HSET', meta, 'last', fmt_int(t), 'carry', string.format('%.17g', carry))
  end
  -- k == 0: write nothing; the next call recomputes from the same `last`.
end
-- ---- end of leak ----

-- Smallest whole ms x >= 0 after `last` at which `want` entries have leaked.
-- The closed form is a division where the leak multiplies, so it could round
-- the other way (no case found in a million samples); the steps check it on
-- leaked() itself, so a client that waits exactly that long is admitted.
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

local allowed, retry_after = 0, 0
if n > capacity then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif level + n <= capacity then
  allowed = 1
  local seq
  if level == 0 then
    last, carry = t, 0
    redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0', 'seq', fmt_int(n))
    seq = n
  else
    seq = redis.call('HINCRBY', meta, 'seq', n)
  end
  -- Members t:(seq-n+1) .. t:seq.  NX and the retry loop keep them unique even
  -- if `seq` was lost while members stayed (meta deleted by hand, foreign
  -- writers); ZADD in slices because unpack() is limited to a few thousand values.
  local todo = n
  while todo > 0 do
    local args, added = { 'ZADD', bucket, 'NX' }, 0
    for s = seq - todo + 1, seq do
      args[#args + 1] = fmt_int(t)
      args[#args + 1] = fmt_int(t) .. ':' .. fmt_int(s)
      if #args >= 1003 or s == seq then
        added = added + redis.call(unpack(args))
        args = { 'ZADD', bucket, 'NX' }
      end
    end
    todo = todo - added
    if todo > 0 then seq = redis.call('HINCRBY', meta, 'seq', todo) end
  end
  level = level + n
  -- Keep both keys until the bucket would be empty, measured from the caller's
  -- `now` (not t, which may be later), + 1 ms for the expiry clock's rounding,
  -- + GRACE_MS so that a running sluiced drains (and counts) the last entries
  -- before Redis expires the key; an expired bucket reads the same as a drained one.
  local ttl = last + ms_until(level) - now + 1 + GRACE_MS
  if ttl >= MAX_INT then
    redis.call('PERSIST', bucket) -- drains in more than 2^53 ms: never expire
    redis.call('PERSIST', meta)
  else
    redis.call('PEXPIRE', bucket, fmt_int(ttl))
    redis.call('PEXPIRE', meta, fmt_int(ttl))
  end
  redis.call('SADD', registry, path)
else
  retry_after = math.max(1, last + ms_until(level + n - capacity) - t)
end

local reset_ms = 0
if level > 0 then reset_ms = math.max(0, last + ms_until(1) - t) end
return { allowed, math.max(0, capacity - level), retry_after, reset_ms }
