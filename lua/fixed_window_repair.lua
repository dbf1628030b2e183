#!lua flags=allow-oom
-- sluice: fixed window repair, one call for a batch of foreign counters (the
-- worker's job for a foreign layout; sluice's own counters are repaired by
-- fixed_window_repair_shard.lua).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths (or any key: a SCAN layout keeps none);
--   KEYS[1+i] counter_i, i = 1..N: a foreign string counter (INCR, then EXPIRE)
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] window_ms_i (integer >= 1,
--   the window of the rule that matches the path)
-- Reply {repaired (counters given a TTL), emptied (paths removed from the
--        registry), counters (N), skipped (keys of another type: untouched),
--        then, only when some failed: failed (counters refused alone: arguments the script does not take, or
--        a job error; lib/batch.lua), the first failed path, its error}
--
-- Limiters that INCR and EXPIRE in two calls (seed 001; seed 004's
-- fixedWindowRateLimiter:<path>) leave a counter with no TTL when they die
-- in between, and, as they send EXPIRE only for a count of 1, that counter
-- then blocks its key for good; this job gives it one:
--   * a string without a TTL gets window_ms (its window's start is unknown,
--     so the whole window is the conservative rest); with a TTL it is left
--     alone.  Such a counter keeps no time mark, and its clients count at
--     their own now: the job acts at now.
--   * an absent key leaves the registry.
--   * any other type is skipped.
-- Idempotent: a second run at the same instant changes nothing.
-- Hot path: 2 calls per live counter (TYPE, PTTL).

--@include lib/batch.lua

-- Check the whole batch before any write: a path whose arguments are refused
-- is left alone and fails alone (lib/batch.lua).
local nc, windows, bad, err = batch_windows(0, 'counter', 'fixed_window_repair takes KEYS registry, then one counter '
  .. 'per path; ARGV now, then path and window_ms per counter')
if err then return err end

return batch_run(nc, function(i, now)
  local key = KEYS[1 + i]
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then return 0, unregister(ARGV[2 * i]) end -- expired, reset
  if kind ~= 'string' then return nil end
  if redis.call('PTTL', key) ~= -1 then return 0, 0 end
  redis.call('PEXPIRE', key, fmt_int(windows[i]))
  return 1, 0
end, bad, function(i) return ARGV[2 * i] end)
