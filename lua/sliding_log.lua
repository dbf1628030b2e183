-- sluice: sliding-window log, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] log      sorted set of admitted requests, score = ms, member
--                  "<ms>:<k>" (unique per request, even within one ms)
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms}
--
-- A request admitted at s counts for requests at times in [s, s + window):
-- at t, entries with score <= t - window are gone.  A rejected request is not
-- added, so a client that keeps retrying is admitted as soon as the window
-- allows (unlike logs that add first and check after).

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

local function fmt_int(v) return string.format('%d', v) end

if #KEYS ~= 2 then
  return redis.error_reply('ERR sluice: sliding_log takes 2 KEYS (log, registry)')
end
local log, registry = KEYS[1], KEYS[2]
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

-- Stored time never moves backward: a caller behind the newest entry is served
-- at that entry's time (ceil: a foreign writer may store fractional ms).
local t = now
local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
if newest[2] then t = math.max(t, math.ceil(tonumber(newest[2]))) end

redis.call('ZREMRANGEBYSCORE', log, '-inf', fmt_int(t - window))
local count = redis.call('ZCARD', log)

local allowed, retry_after = 0, 0
if count < limit then
  allowed = 1
  -- k = requests already logged at t; step on while the member exists, in
  -- case part of that millisecond's group was removed by someone else.
  local k = redis.call('ZCOUNT', log, fmt_int(t), fmt_int(t))
  local member = fmt_int(t) .. ':' .. fmt_int(k)
  while redis.call('ZSCORE', log, member) do
    k = k + 1
    member = fmt_int(t) .. ':' .. fmt_int(k)
  end
  redis.call('ZADD', log, fmt_int(t), member)
  count = count + 1
  -- The newest entry matters until t + window, measured from the caller's now.
  local ttl = t + window - now
  if ttl >= MAX_INT then
    redis.call('PERSIST', log)
  else
    redis.call('PEXPIRE', log, fmt_int(ttl))
  end
  redis.call('SADD', registry, path)
else
  -- Admitted once count drops below limit, i.e. when the entry of rank
  -- count - limit (the oldest, unless limit was lowered) leaves the window.
  local e = redis.call('ZRANGE', log, count - limit, count - limit, 'WITHSCORES')
  retry_after = math.max(1, math.ceil(tonumber(e[2])) + window - t)
end

local reset_ms = 0
if count > 0 then
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  reset_ms = math.max(0, math.ceil(tonumber(oldest[2])) + window - t)
end
return { allowed, math.max(0, limit - count), retry_after, reset_ms }
