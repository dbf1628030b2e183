-- sluice: sliding-window log prune, one call for a batch of logs (the
-- worker's job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] log_i sorted set, i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] window_ms_i (integer >= 1);
--   ARGV[2N+2] optional score unit of the whole batch: "ms" (absent or "":
--   sluice's own logs), "s" or "us" (also "\194\181s") for logs other limiters
--   keep in seconds or microseconds; now and window_ms stay in ms
-- Reply {pruned (entries removed), emptied (paths removed from the registry),
--        logs (N), skipped (logs whose key has another type: untouched)}
--
-- Removes entries with score <= now - window, converted to the score unit
-- (out of the window, as in sliding_log.lua), so memory stays bounded and
-- counts true for logs nobody touches any more.  A log left empty or absent
-- (expired by TTL, reset) is taken out of the registry; Redis deletes an
-- emptied sorted set by itself.
-- Hot path: 2 calls per live log (ZCARD, ZREMRANGEBYSCORE).

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

local nl = #KEYS - 1
if nl < 0 or not (#ARGV == 2 * nl + 1 or #ARGV == 2 * nl + 2 or (nl == 0 and #ARGV == 0)) then
  return redis.error_reply('ERR sluice: sliding_log_prune takes KEYS registry, then one log per path; '
    .. 'ARGV now, then path and window_ms per log, then an optional score unit')
end
-- Validate the whole batch before any write: a bad argument changes nothing.
local windows = {}
for i = 1, nl do
  if ARGV[2 * i] == '' then return fail('path', 'a non-empty string (log ' .. i .. ')') end
  windows[i] = int_arg(ARGV[2 * i + 1], 1)
  if not windows[i] then return fail('window_ms', 'an integer from 1 to 2^53-1 (log ' .. i .. ')') end
end
-- Score unit of the whole batch (now and window_ms stay in ms).
local unit = ARGV[2 * nl + 2]
if unit == nil or unit == '' then unit = 'ms' end
if unit == '\194\181s' then unit = 'us' end -- "µs" in UTF-8
if unit ~= 'ms' and unit ~= 's' and unit ~= 'us' then
  return fail('unit', '"ms", "s" or "us" (the score unit)')
end
local now
if ARGV[1] == nil or ARGV[1] == '' then
  local tm = redis.call('TIME')
  now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
else
  now = int_arg(ARGV[1], 0)
  if not now then return fail('now', 'an integer from 0 to 2^53-1 (ms)') end
end

-- The cut-off now - window in the score unit, as text.  In ms it is exact;
-- in s it is a quotient of two integers, i.e. the double nearest to it, just
-- as a score written in decimal ("9.001") is, so the two compare equal, and
-- %.17g keeps that double; in us it is exact below 2^53 us (year 2255).
local function cutoff(ms)
  if unit == 's' then return string.format('%.17g', ms / 1000) end
  if unit == 'us' then return string.format('%.17g', ms * 1000) end
  return string.format('%d', ms)
end

local registry = KEYS[1]
local pruned, emptied, skipped = 0, 0, 0
for i = 1, nl do
  local log, path = KEYS[1 + i], ARGV[2 * i]
  -- pcall: a key of another type (a layout mismatch) must not stop the batch.
  local card = redis.pcall('ZCARD', log)
  if type(card) ~= 'number' then
    skipped = skipped + 1
  else
    local removed = 0
    if card > 0 then
      removed = redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff(now - windows[i]))
      pruned = pruned + removed
    end
    if removed == card then
      emptied = emptied + redis.call('SREM', registry, path)
    end
  end
end
return { pruned, emptied, nl, skipped }
