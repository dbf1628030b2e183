#!lua flags=allow-oom
-- sluice: sliding-window log prune of other limiters' logs, one call for a
-- batch of logs (the worker's job for a foreign layout; sluice's own logs
-- are pruned over their shard's due index, sliding_log_prune_shard.lua).
-- Contract: lua/README.md.
--
-- KEYS[1] registry (the limiter's set of paths, or any set when it keeps
--   none); KEYS[1+i] log_i sorted set, i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] window_ms_i (integer >= 1);
--   ARGV[2N+2] the score unit of the whole batch: "ms", "s" or "us" (also
--   "\194\181s"); now and window_ms stay in ms; ARGV[2N+3] optional: "inclusive"
--   (the default) or "exclusive", where the limiter's own clients cut
-- Reply {pruned (entries removed), emptied (paths removed from the registry),
--        logs (N), skipped (logs whose key has another type: untouched),
--        then, only when some failed: failed (logs refused alone: arguments the script does not take, or
--        a job error; lib/batch.lua), the first failed path, its error}
--
-- Logs of other limiters keep no time mark, and their own clients cut at
-- their own now: removes entries with score <= now - window, converted to
-- the score unit (< now - window when "exclusive": a client that removes
-- below the bound and keeps an entry scored exactly now - window, as seed
-- 004's removeRangeByScore(0, true, start, false) does).  So memory stays
-- bounded and counts true for logs nobody touches any more.  A log left empty or absent (expired by TTL, reset) is
-- taken out of the registry; Redis deletes an emptied sorted set by itself.
-- Hot path: 2 calls per log (ZCARD, ZREMRANGEBYSCORE).

--@include lib/batch.lua
--@include lib/window.lua

-- Check the whole batch before any write: a path whose arguments are refused
-- is left alone and fails alone (lib/batch.lua).
local nl, windows, bad, err = batch_windows(2, 'log', 'sliding_log_prune takes KEYS registry, then one log per path; '
  .. 'ARGV now, then path and window_ms per log, then the score unit and optionally the cut')
if err then return err end
-- Score unit of the whole batch (now and window_ms stay in ms); an empty
-- batch may leave it out.
local unit = ARGV[2 * nl + 2]
if nl == 0 and unit == nil then return { 0, 0, 0, 0 } end
if unit == '\194\181s' then unit = 'us' end -- "µs" in UTF-8
if unit ~= 'ms' and unit ~= 's' and unit ~= 'us' then
  return fail('unit', '"ms", "s" or "us" (the score unit)')
end
local bound = ARGV[2 * nl + 3]
if bound ~= nil and bound ~= 'inclusive' and bound ~= 'exclusive' then
  return fail('cut', '"inclusive" or "exclusive" (where the limiter\'s clients cut)')
end
local below = ''
if bound == 'exclusive' then below = '(' end

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
  if card > 0 then removed = redis.call('ZREMRANGEBYSCORE', log, '-inf', below .. cutoff(now - windows[i])) end
  if removed < card then return removed, 0 end
  return removed, unregister(path) -- empty or emptied
end, bad, function(i) return ARGV[2 * i] end)
