#!lua flags=allow-oom
-- sluice: token bucket reclaim of one shard's due buckets (the worker's job
-- for sluice's own layout).  Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:registry:token_bucket, the shard's due index
-- ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (buckets per call)
-- Reply {reclaimed (buckets deleted), removed (paths that left the registry),
--        visited, skipped, next_due (ms, -1: registry empty), backlog}
--
-- Each due path's bucket <prefix>{k}:token_bucket:<path> is in the
-- registry's slot (same hash tag), so the script names it from the registry
-- key and the path.  A bucket that has refilled to capacity is the same as
-- an absent one (the acquire reads an absent bucket as full) to every client
-- at or after its `last`, its time mark.  So a bucket that was full at
-- now - SKEW_MS already (lib/skew.lua), by the capacity and rate it records
-- (the ones its client applied: DESIGN.md, "State describes itself"), is
-- deleted and its path leaves the registry: any client whose clock lags
-- Redis by up to SKEW_MS finds it full either way.  That moment is
-- lib/refill.lua's refill_due, the due time the acquire registered, so a
-- bucket is reclaimed at its first visit unless a later admission moved it
-- (then the acquire moved its due time as well).  Any other bucket is due
-- again at that moment.  A path whose bucket is gone (expired, reset) leaves
-- the registry; a hash that records no parameters (not written by
-- token_bucket.lua) is looked at again when it would expire.  Idempotent.
--
-- Hot path: one HMGET per due bucket, then DEL or nothing; the registry is
-- rescheduled once for the whole call (lib/due.lua).

--@include lib/refill.lua
--@include lib/due.lua

return due_run('token_bucket', function(path, bucket, meta, now)
  local m = redis.pcall('HMGET', bucket, 'tokens', 'last', 'capacity', 'rate')
  if m.err then return nil, nil, true end
  local capacity, rate = refill_recorded(m[3], m[4])
  if not capacity then
    -- Records no parameters: gone when its key is; else looked at when it
    -- would expire.
    return due_by_ttl(bucket, nil, now)
  end
  -- Unreadable tokens or last read as full since now, as the acquire reads
  -- them (no mark): reclaimed at once.
  local tokens0, last, _, found = refill_read(m, capacity, rate, now)
  if found then
    local due = refill_due(last, refill_ms_until(tokens0, rate, capacity))
    if due > now then return 0, due end
  end
  redis.call('DEL', bucket)
  return 1, nil
end)
