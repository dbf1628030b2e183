-- sluice: fixed window counter, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] counter  hash: window = index of the counted window, floor(ms / window_ms)
--                        count  = requests admitted in that window
--                        t      = latest ms an admission was made at
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms (until the window ends)}
--
-- Window k covers [k * window_ms, (k + 1) * window_ms).  The count and its TTL
-- are written in one script (no INCR-then-EXPIRE gap that a crash could leave
-- without a TTL), and a rejected request is not counted: it writes nothing,
-- so a client that keeps retrying is admitted as soon as the next window opens.

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

-- A stored whole number >= 0, or nil when absent or anything else.
local function stored_int(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= MAX_INT or v ~= math.floor(v) then return nil end
  return v
end

local function fmt_int(v) return string.format('%d', v) end

if #KEYS ~= 2 then
  return redis.error_reply('ERR sluice: fixed_window takes 2 KEYS (counter, registry)')
end
local counter, registry = KEYS[1], KEYS[2]
local path = ARGV[1]
if type(path) ~= 'string' or path == '' then return fail('path', 'a non-empty string') end
local limit = int_arg(ARGV[2], 1)
if not limit then return fail('limit', 'an integer from 1 to 2^53-1') end
local window = int_arg(ARGV[3], 1)
if not window then return fail('window_ms', 'an integer from 1 to 2^53-1') end
local now
if ARGV[4] == nil or ARGV[4] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[4], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local m = redis.call('HMGET', counter, 'window', 'count', 't')
-- Stored time never moves backward: a caller behind the latest admission is
-- served at that admission's time.
local t = now
local stored_t = stored_int(m[3])
if stored_t and stored_t > t then t = stored_t end
local w = math.floor(t / window)
if w * window > t then w = w - 1 end -- guard the division's rounding
if (w + 1) * window <= t then w = w + 1 end
-- The count belongs to window w only if it was counted in w; any other index
-- (an older window, or one of another window_ms) is a fresh window.
local count = 0
if stored_int(m[1]) == w then count = stored_int(m[2]) or 0 end
local window_end = (w + 1) * window

local allowed, retry_after = 0, 0
if count < limit then
  allowed = 1
  count = count + 1
  redis.call('HSET', counter, 'window', fmt_int(w), 'count', fmt_int(count), 't', fmt_int(t))
  -- The count matters until the window ends, measured from the caller's now,
  -- + 1 ms for the expiry clock's rounding.
  local ttl = window_end - now + 1
  if ttl >= MAX_INT then
    redis.call('PERSIST', counter)
  else
    redis.call('PEXPIRE', counter, fmt_int(ttl))
  end
  redis.call('SADD', registry, path)
else
  retry_after = window_end - t -- the next window starts with a count of 0
end
return { allowed, math.max(0, limit - count), retry_after, window_end - t }
