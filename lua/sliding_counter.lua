-- sluice: sliding-window counter of N sub-windows, client-side acquire.
-- Contract: lua/README.md.
--
-- KEYS[1] counter  hash: "<index>" = requests admitted in sub-window index
--                        (floor(ms / sub_ms)), t = latest ms an admission was made at
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] sub_windows N (integer >= 1 that
-- divides window_ms), ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms}
--
-- sub_ms = window_ms / N.  At t the live sub-windows are the N indices
-- cur - N + 1 .. cur (cur = floor(t / sub_ms)): a request admitted in
-- sub-window j counts until (j + N) * sub_ms, i.e. for between
-- window_ms - sub_ms and window_ms.  Admitted if their sum < limit.  Fields of
-- other indices are expired (or were written under another sub_ms) and are
-- removed on the way, as sliding_log.lua removes old entries; a rejected
-- request adds nothing and extends no TTL.

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

-- The index a field name stands for, or nil (written as fmt_int writes it).
local function index_of(f)
  local v = int_arg(f, 0)
  if v and fmt_int(v) == f then return v end
  return nil
end

if #KEYS ~= 2 then
  return redis.error_reply('ERR sluice: sliding_counter takes 2 KEYS (counter, registry)')
end
local counter, registry = KEYS[1], KEYS[2]
local path = ARGV[1]
if type(path) ~= 'string' or path == '' then return fail('path', 'a non-empty string') end
local limit = int_arg(ARGV[2], 1)
if not limit then return fail('limit', 'an integer from 1 to 2^53-1') end
local window = int_arg(ARGV[3], 1)
if not window then return fail('window_ms', 'an integer from 1 to 2^53-1') end
local subs = int_arg(ARGV[4], 1)
if not subs or window % subs ~= 0 then
  return fail('sub_windows', 'an integer from 1 to 2^53-1 that divides window_ms')
end
local sub = window / subs
local now
if ARGV[5] == nil or ARGV[5] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[5], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local h = redis.call('HGETALL', counter)
-- Stored time never moves backward: a caller behind the latest admission is
-- served at that admission's time.
local t = now
for i = 1, #h, 2 do
  if h[i] == 't' then
    local st = stored_int(h[i + 1])
    if st and st > t then t = st end
  end
end
local cur = math.floor(t / sub)
if cur * sub > t then cur = cur - 1 end -- guard the division's rounding
if (cur + 1) * sub <= t then cur = cur + 1 end

-- Live sub-windows (count > 0) and the fields to remove.
local live, stale, sum, cur_count = {}, {}, 0, 0
for i = 1, #h, 2 do
  local idx = index_of(h[i])
  if idx then
    if idx <= cur - subs or idx > cur then
      stale[#stale + 1] = h[i]
    else
      local c = stored_int(h[i + 1]) or 0
      if c > 0 then
        live[#live + 1] = { idx, c }
        sum = sum + c
      end
      if idx == cur then cur_count = c end
    end
  end
end
-- HDEL in slices: unpack() is limited to a few thousand values.
for s = 1, #stale, 1000 do
  redis.call('HDEL', counter, unpack(stale, s, math.min(s + 999, #stale)))
end

local allowed, retry_after = 0, 0
if sum < limit then
  allowed = 1
  redis.call('HSET', counter, fmt_int(cur), fmt_int(cur_count + 1), 't', fmt_int(t))
  sum = sum + 1
  if cur_count == 0 then live[#live + 1] = { cur, 1 } end
  -- The newest sub-window (cur) leaves the window at (cur + N) * sub_ms;
  -- measured from the caller's now.
  local ttl = (cur + subs) * sub - now
  if ttl >= MAX_INT then
    redis.call('PERSIST', counter)
  else
    redis.call('PEXPIRE', counter, fmt_int(ttl))
  end
  redis.call('SADD', registry, path)
else
  -- Admitted once sum < limit: when the oldest sub-windows holding at least
  -- sum - limit + 1 requests have left the window (sub-window j leaves at
  -- (j + N) * sub_ms).
  table.sort(live, function(a, b) return a[1] < b[1] end)
  local need, acc = sum - limit + 1, 0
  for _, e in ipairs(live) do
    acc = acc + e[2]
    if acc >= need then
      retry_after = math.max(1, (e[1] + subs) * sub - t)
      break
    end
  end
end

local reset_ms = 0
if #live > 0 then
  local oldest = live[1][1]
  for _, e in ipairs(live) do
    if e[1] < oldest then oldest = e[1] end
  end
  reset_ms = math.max(0, (oldest + subs) * sub - t)
end
return { allowed, math.max(0, limit - sum), retry_after, reset_ms }
