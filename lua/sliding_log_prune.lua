#!lua flags=allow-oom
-- sluice: sliding-window log prune, one call for a batch of logs (the
-- worker's job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] log_i sorted set, i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] window_ms_i (integer >= 1);
--   ARGV[2N+2] optional score unit of the whole batch, absent or "" for
--   sluice's own logs; for logs other limiters keep: "ms", "s" or "us" (also
--   "\194\181s"); now and window_ms stay in ms
-- Reply {pruned (entries removed), emptied (paths removed from the registry),
--        logs (N), skipped (logs whose key has another type: untouched)}
--
-- sluice's own logs (no unit, or ""): removes the entries that have left the
-- window at max(mark, now - SKEW_MS), the log's newest score being its mark:
-- the earliest time a call within the skew horizon is served at, so the
-- prune never removes what such a call still counts (DESIGN.md, "Time").  A
-- log nobody calls any more empties SKEW_MS after its newest entry left the
-- window, when its TTL ends too.
-- Logs of other limiters (a unit given, "ms" too) keep no mark, and their
-- own clients cut at their own now: removes entries with score <= now -
-- window, converted to the score unit.
-- So memory stays bounded and counts true for logs nobody touches any more.
-- A log left empty or absent (expired by TTL, reset) is taken out of the
-- registry; Redis deletes an emptied sorted set by itself.
-- Hot path: 3 calls per live log of sluice's (ZCARD, ZRANGE, ZREMRANGEBYSCORE),
-- 2 per foreign one.

--@include lib/batch.lua
--@include lib/log.lua

-- Validate the whole batch before any write: a bad argument changes nothing.
local nl, windows, err = batch_windows(1, 'log', 'sliding_log_prune takes KEYS registry, then one log per path; '
  .. 'ARGV now, then path and window_ms per log, then an optional score unit')
if err then return err end
-- Score unit of the whole batch (now and window_ms stay in ms); none: sluice's own.
local unit = ARGV[2 * nl + 2]
local own = unit == nil or unit == ''
if own then unit = 'ms' end
if unit == '\194\181s' then unit = 'us' end -- "µs" in UTF-8
if unit ~= 'ms' and unit ~= 's' and unit ~= 'us' then
  return fail('unit', '"ms", "s" or "us" (the score unit)')
end

-- The cut-off (at - window) in the score unit, as text.  In ms it is exact;
-- in s it is a quotient of two integers, i.e. the double nearest to it, just
-- as a score written in decimal ("9.001") is, so the two compare equal, and
-- %.17g keeps that double; in us it is exact below 2^53 us (year 2255).
local function cutoff(ms)
  if unit == 's' then return fmt_real(ms / 1000) end
  if unit == 'us' then return fmt_real(ms * 1000) end
  return fmt_int(ms)
end

return batch_run(nl, function(i, now)
  local log, path = KEYS[1 + i], ARGV[2 * i]
  local card = redis.pcall('ZCARD', log)
  if type(card) ~= 'number' then return nil end
  local removed = 0
  if card > 0 then
    local at = now
    if own then at = horizon_time(log_mark(log), now) end
    removed = redis.call('ZREMRANGEBYSCORE', log, '-inf', cutoff(at - windows[i]))
  end
  if removed < card then return removed, 0 end
  return removed, unregister(path) -- empty or emptied
end)
