-- sluice: fixed window repair, one call for a batch of counters (the worker's
-- job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] counter_i, i = 1..N: sluice's hash
--   (window, count, t) or a foreign string counter (INCR, then EXPIRE)
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] window_ms_i (integer >= 1)
-- Reply {repaired (counters given a TTL), emptied (paths removed from the
--        registry), counters (N), skipped (keys of another type or shape: untouched)}
--
-- A counter must never outlive its window.  Limiters that INCR and EXPIRE in
-- two calls leave a counter with no TTL when they die in between, and that
-- counter then blocks its key for good; this job gives it one.
--   * sluice's hash: a counter of another window than the current one (at
--     t = max(now, its t)) is deleted and its path leaves the registry; a
--     counter of the current window without a TTL gets one, to the window's
--     end (+1 ms); one with a TTL is left alone.
--   * a string (a foreign INCR counter): without a TTL it gets window_ms
--     (its window's start is unknown, so the whole window is the conservative
--     rest); with a TTL it is left alone.
--   * an absent key leaves the registry.
-- Idempotent: a second run at the same instant changes nothing.
-- Hot path: 2 calls per live hash counter (HMGET, PTTL).

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

local function fmt_int(v) return string.format('%d', v) end

local nc = #KEYS - 1
if nc < 0 or not (#ARGV == 2 * nc + 1 or (nc == 0 and #ARGV == 0)) then
  return redis.error_reply('ERR sluice: fixed_window_repair takes KEYS registry, then one counter per path; '
    .. 'ARGV now, then path and window_ms per counter')
end
-- Validate the whole batch before any write: a bad argument changes nothing.
local windows = {}
for i = 1, nc do
  if ARGV[2 * i] == '' then return fail('path', 'a non-empty string (counter ' .. i .. ')') end
  windows[i] = int_arg(ARGV[2 * i + 1], 1)
  if not windows[i] then return fail('window_ms', 'an integer from 1 to 2^53-1 (counter ' .. i .. ')') end
end
local now
if ARGV[1] == nil or ARGV[1] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[1], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

local registry = KEYS[1]
local repaired, emptied, skipped = 0, 0, 0
for i = 1, nc do
  local key, path, window = KEYS[1 + i], ARGV[2 * i], windows[i]
  -- pcall: a key of another type must not stop the batch.
  local m = redis.pcall('HMGET', key, 'window', 't')
  if m.err then
    -- Not a hash.  A foreign counter is a string: INCR, then EXPIRE.
    if redis.call('TYPE', key).ok == 'string' then
      if redis.call('PTTL', key) == -1 then
        redis.call('PEXPIRE', key, fmt_int(window))
        repaired = repaired + 1
      end
    else
      skipped = skipped + 1
    end
  else
    local win = stored_int(m[1])
    if win == nil then
      if redis.call('EXISTS', key) == 0 then
        emptied = emptied + redis.call('SREM', registry, path) -- expired, reset
      else
        skipped = skipped + 1 -- a hash without a window index: not ours
      end
    else
      local t = now -- stored time never moves backward (as in fixed_window.lua)
      local stored_t = stored_int(m[2])
      if stored_t and stored_t > t then t = stored_t end
      local w = math.floor(t / window)
      if w * window > t then w = w - 1 end
      if (w + 1) * window <= t then w = w + 1 end
      if win ~= w then
        -- Another window's count: the acquire would start afresh, so it is
        -- the same as absent.
        redis.call('DEL', key)
        emptied = emptied + redis.call('SREM', registry, path)
      elseif redis.call('PTTL', key) == -1 then
        local ttl = (w + 1) * window - now + 1
        if ttl < MAX_INT then
          redis.call('PEXPIRE', key, fmt_int(ttl))
          repaired = repaired + 1
        end
      end
    end
  end
end
return { repaired, emptied, nc, skipped }
