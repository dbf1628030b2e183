#!lua flags=no-writes
-- sluice: sliding-window counter state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] counter hash ("<index>" = count, t = latest ms)
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] sub_windows (integer >= 1 that divides window_ms),
-- ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {count (sum of the live sub-windows), remaining, reset_ms (until the
--        oldest live sub-window leaves the window, 0 if none),
--        ttl_ms (PTTL of the hash: -2 absent, -1 no TTL)}
--
-- What sliding_counter.lua would sum at t = max(now, stored t), without
-- removing anything.

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

local function index_of(f) -- as in sliding_counter.lua
  local v = int_arg(f, 0)
  if v and string.format('%d', v) == f then return v end
  return nil
end

if #KEYS ~= 1 then
  return redis.error_reply('ERR sluice: sliding_counter_state takes 1 KEY (counter)')
end
local counter = KEYS[1]
local limit = int_arg(ARGV[1], 1)
if not limit then return fail('limit', 'an integer from 1 to 2^53-1') end
local window = int_arg(ARGV[2], 1)
if not window then return fail('window_ms', 'an integer from 1 to 2^53-1') end
local subs = int_arg(ARGV[3], 1)
if not subs or window % subs ~= 0 then
  return fail('sub_windows', 'an integer from 1 to 2^53-1 that divides window_ms')
end
local sub = window / subs
local now
if ARGV[4] == nil or ARGV[4] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[4], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local h = redis.call('HGETALL', counter)
local t = now -- stored time never moves backward (as in sliding_counter.lua)
for i = 1, #h, 2 do
  if h[i] == 't' then
    local st = stored_int(h[i + 1])
    if st and st > t then t = st end
  end
end
local cur = math.floor(t / sub)
if cur * sub > t then cur = cur - 1 end
if (cur + 1) * sub <= t then cur = cur + 1 end

local count, oldest = 0, nil
for i = 1, #h, 2 do
  local idx = index_of(h[i])
  if idx and idx > cur - subs and idx <= cur then
    local c = stored_int(h[i + 1]) or 0
    if c > 0 then
      count = count + c
      if not oldest or idx < oldest then oldest = idx end
    end
  end
end
local reset_ms = 0
if oldest then reset_ms = math.max(0, (oldest + subs) * sub - t) end
return { count, math.max(0, limit - count), reset_ms, redis.call('PTTL', counter) }
