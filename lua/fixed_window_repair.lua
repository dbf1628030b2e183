#!lua flags=allow-oom
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
-- A counter must never outlive its window (and, for sluice's, the horizon of
-- its mark).  Limiters that INCR and EXPIRE in two calls leave a counter with
-- no TTL when they die in between, and that counter then blocks its key for
-- good; this job gives it one.
--   * sluice's hash, at max(t, now - SKEW_MS) (t, its time mark: the
--     earliest time a call within the skew horizon is served at, DESIGN.md
--     "Time"): a counter whose mark is past the horizon (t <= now - SKEW_MS;
--     or that has no t) and that counts another window than that time's is
--     deleted and its path leaves the registry (no call within the horizon
--     is served in its window or before its mark: the same as absent); any
--     other without a TTL gets the acquire's, to that window's end + 1 ms +
--     SKEW_MS; one with a TTL is left alone.
--   * a string (a foreign INCR counter): without a TTL it gets window_ms
--     (its window's start is unknown, so the whole window is the conservative
--     rest); with a TTL it is left alone.
--   * an absent key leaves the registry.
-- Idempotent: a second run at the same instant changes nothing.
-- Hot path: 2 calls per live hash counter (HMGET, PTTL).

--@include lib/batch.lua
--@include lib/fixed.lua

-- Validate the whole batch before any write: a bad argument changes nothing.
local nc, windows, err = batch_windows(0, 'counter', 'fixed_window_repair takes KEYS registry, then one counter '
  .. 'per path; ARGV now, then path and window_ms per counter')
if err then return err end

return batch_run(nc, function(i, now)
  local key, path, window = KEYS[1 + i], ARGV[2 * i], windows[i]
  local m = redis.pcall('HMGET', key, 'window', 't')
  if m.err then
    -- Not a hash.  A foreign counter is a string: INCR, then EXPIRE.
    if redis.call('TYPE', key).ok ~= 'string' then return nil end
    if redis.call('PTTL', key) ~= -1 then return 0, 0 end
    redis.call('PEXPIRE', key, fmt_int(window))
    return 1, 0
  end
  local win = stored_int(m[1])
  if win == nil then
    if redis.call('EXISTS', key) == 1 then return nil end -- a hash without a window index: not ours
    return 0, unregister(path) -- expired, reset
  end
  local mark = stored_int(m[2])
  local w = window_index(horizon_time(mark, now), window)
  if win ~= w and not (mark and mark > now - SKEW_MS) then
    -- Another window's count, and every call within the horizon is served
    -- after the mark: the acquire would start afresh, the same as absent.
    redis.call('DEL', key)
    return 0, unregister(path)
  end
  local ttl = fixed_ttl(w, window, now)
  if ttl >= MAX_INT or redis.call('PTTL', key) ~= -1 then return 0, 0 end
  redis.call('PEXPIRE', key, fmt_int(ttl))
  return 1, 0
end)
