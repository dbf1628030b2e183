#!lua flags=no-writes
-- sluice: sliding-window log state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] log sorted set
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {count (entries with score > t - window), remaining, reset_ms
--        (until the oldest live entry leaves the window, 0 if none),
--        ttl_ms (PTTL of the log: -2 absent, -1 no TTL)}
--
-- What sliding_log.lua would count at t (t = max(now, newest score)), without
-- pruning anything.

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

if #KEYS ~= 1 then
  return redis.error_reply('ERR sluice: sliding_log_state takes 1 KEY (log)')
end
local log = KEYS[1]
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

local t = now -- stored time never moves backward (as in sliding_log.lua)
local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
if newest[2] then t = math.max(t, math.ceil(tonumber(newest[2]))) end

-- Live entries: score > t - window (exclusive bound).
local live_from = '(' .. string.format('%d', t - window)
local count = redis.call('ZCOUNT', log, live_from, '+inf')
local reset_ms = 0
if count > 0 then
  local oldest = redis.call('ZRANGEBYSCORE', log, live_from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  reset_ms = math.max(0, math.ceil(tonumber(oldest[2])) + window - t)
end
return { count, math.max(0, limit - count), reset_ms, redis.call('PTTL', log) }
