#!lua flags=allow-oom
-- sluice: fixed window repair of one shard's due counters (the worker's job
-- for sluice's own layout).  Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:registry:fixed_window, the shard's due index
-- ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (counters per call)
-- Reply {repaired (counters given a TTL), removed (paths that left the
--        registry), visited, skipped, next_due (ms, -1: registry empty), backlog}
--
-- Each due path's counter <prefix>{k}:fixed_window:<path> is in the
-- registry's slot (same hash tag), so the script names it from the
-- registry key and the path.  sluice's counters always have a TTL (the
-- acquire writes count and TTL in one script), so for them the job is to
-- let the registry forget a path whose counter is gone, and to give a TTL
-- to a counter that lost one (PERSIST by hand, a foreign writer), by the
-- window_ms the counter RECORDS (the one the client applied: DESIGN.md,
-- "State describes itself"):
--   * absent: the path leaves the registry;
--   * at = max(t, now - SKEW_MS) (lib/window.lua's horizon_time: the
--     earliest time a call within the skew horizon is served at) past the
--     counted window: deleted, and the path leaves the registry: every such
--     call starts a new window, the same as absent;
--   * else: a counter without a TTL gets the acquire's, to the window's end
--     + 1 ms + SKEW_MS from now (one repaired); due again at the window's
--     end + SKEW_MS, when it will be past.
--   * a hash that records no window_ms or window (not of fixed_window.lua's
--     making): left alone, looked at again when it would expire (its PTTL;
--     a minute when it has none); visited, not repaired.
--   * a key of another type: skipped (due_run retries it in a minute).
-- Idempotent: a second run at the same instant changes nothing.  Hot path:
-- HMGET, then PTTL (or DEL) per counter, and for the call one range delete
-- of the due paths and one ZADD of the rescheduled ones (lib/due.lua).

--@include lib/fixed.lua
--@include lib/due.lua

return due_run('fixed_window', function(path, state, meta, now)
  local m = redis.pcall('HMGET', state, 'window', 't', 'window_ms')
  if m.err then return nil, nil, true end
  local win, window = stored_int(m[1]), stored_int(m[3])
  if not win or not window or window < 1 then
    return due_by_ttl(state, nil, now)
  end
  local window_end = (win + 1) * window
  if horizon_time(stored_int(m[2]), now) >= window_end then
    redis.call('DEL', state)
    return 0, nil
  end
  local due = window_end + SKEW_MS
  if redis.call('PTTL', state) ~= -1 then return 0, due end
  local ttl = fixed_ttl(win, window, now)
  if ttl >= MAX_INT then return 0, due end -- no TTL is the right one
  redis.call('PEXPIRE', state, fmt_int(ttl))
  return 1, due
end)
