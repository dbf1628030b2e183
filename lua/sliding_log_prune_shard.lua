#!lua flags=allow-oom
-- sluice: sliding-window log prune of one shard's due logs (the worker's job
-- for sluice's own layout).  Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:registry:sliding_log, the shard's due index
-- ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (logs per call)
-- Reply {pruned (entries removed), removed (paths that left the registry),
--        visited, skipped, next_due (ms, -1: registry empty), backlog}
--
-- Each due path's log <prefix>{k}:sliding_log:<path> and meta
-- <prefix>{k}:sliding_log_meta:<path> are in the registry's slot (same hash
-- tag), so the script names them from the registry key and the path.
-- The prune removes the entries that have left the window, by the window_ms
-- the meta records (the one the client applied: DESIGN.md, "State describes
-- itself"), at the horizon time max(mark, now - SKEW_MS) (lib/window.lua
-- horizon_time): the earliest time a call within the skew horizon is served
-- at, so it never removes what such a call still counts.  Every entry of the
-- log is later than mark - window_ms (lib/log.lua), so the entries that have
-- left the window there are those with score <= now - SKEW_MS - window_ms,
-- and the job reads no mark.  A log with entries is due again when its oldest
-- leaves so (score + window_ms + SKEW_MS).  A log that is empty or gone
-- leaves the registry and its meta is deleted: the meta keeps no time mark
-- (the log's newest entry is the mark, and once the prune has emptied the
-- log every client within the horizon is served past its window anyway).
-- A path whose meta records no window (not written by sliding_log.lua, or its
-- meta deleted) is looked at again when its log expires, and leaves the
-- registry when both keys are gone; it counts as visited, not pruned.
--
-- Hot path: HGET of the meta, ZREMRANGEBYSCORE, ZRANGE of the oldest entry;
-- the registry is rescheduled once for the whole call (lib/due.lua).

--@include lib/log.lua
--@include lib/due.lua

return due_run('sliding_log', function(path, log, meta, now)
  local w = due_ok(redis.pcall('HGET', meta, 'window_ms'))
  if w == nil then return nil, nil, true end
  local window = stored_int(w)
  if not window or window < 1 then
    -- Records no window: gone when both keys are; else looked at when the log
    -- (or, with the log gone, the meta) would expire.
    return due_by_ttl(log, meta, now)
  end
  local removed = due_ok(redis.pcall('ZREMRANGEBYSCORE', log, '-inf', fmt_int(now - SKEW_MS - window)))
  if not removed then return nil, nil, true end
  local oldest = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  if not oldest[2] then
    -- empty or emptied (Redis drops an emptied sorted set): the path is done
    redis.call('DEL', meta)
    return removed, nil
  end
  return removed, math.ceil(tonumber(oldest[2])) + window + SKEW_MS
end)
