#!lua flags=no-writes
-- sluice: fixed window state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] counter: sluice's hash (window, count, t) or a foreign string counter
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {count (admitted in the current window), remaining, reset_ms (until the
--        count resets: the window's end; 0 when the count is 0; for a string,
--        its PTTL, -1 when it has none), ttl_ms (PTTL: -2 absent, -1 no TTL)}
--
-- What fixed_window.lua would count at t = max(now, stored t), without writing.

local MAX_INT = 9007199254740992 -- 2^53: every integer up to it is exact

local function fail(field, what)
  return redis.error_reply('ERR sluice: ' .. field .. ' must be ' .. what)
end

local function int_arg(s, min) -- digits only, min <= v < 2^53
  if type(s) ~= 'string' or not s:find('^%d+$') then return nil end
  local v = tonumber(s)
  if v < min or v >= MAX_INT then return nil end
  return v
end

local function stored_int(s)
  local v = tonumber(s)
  if not v or v ~= v or v < 0 or v >= MAX_INT or v ~= math.floor(v) then return nil end
  return v
end

if #KEYS ~= 1 then
  return redis.error_reply('ERR sluice: fixed_window_state takes 1 KEY (counter)')
end
local counter = KEYS[1]
local limit = int_arg(ARGV[1], 1)
if not limit then return fail('limit', 'an integer from 1 to 2^53-1') end
local window = int_arg(ARGV[2], 1)
if not window then return fail('window_ms', 'an integer from 1 to 2^53-1') end
local now
if ARGV[3] == nil or ARGV[3] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[3], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local kind = redis.call('TYPE', counter).ok
local ttl = redis.call('PTTL', counter)
local count, reset_ms = 0, 0
if kind == 'string' then
  -- A foreign INCR counter: it resets when it expires (never, without a TTL).
  count = stored_int(redis.call('GET', counter)) or 0
  if count > 0 then reset_ms = ttl end
elseif kind == 'hash' then
  local m = redis.call('HMGET', counter, 'window', 'count', 't')
  local t = now -- stored time never moves backward (as in fixed_window.lua)
  local stored_t = stored_int(m[3])
  if stored_t and stored_t > t then t = stored_t end
  local w = math.floor(t / window)
  if w * window > t then w = w - 1 end
  if (w + 1) * window <= t then w = w + 1 end
  if stored_int(m[1]) == w then count = stored_int(m[2]) or 0 end
  if count > 0 then reset_ms = (w + 1) * window - t end
elseif kind ~= 'none' then
  return redis.error_reply('ERR sluice: fixed_window_state: the counter is a ' .. kind
    .. ', not a hash or string')
end
return { count, math.max(0, limit - count), reset_ms, ttl }
