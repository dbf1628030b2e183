#!lua flags=allow-oom
-- sluice: leaky bucket drain of one shard's due buckets (the worker's job for
-- sluice's own layout).  Contract: lua/README.md.
--
-- KEYS[1] <prefix>{k}:registry:leaky_bucket, the shard's due index
-- ARGV[1] now (ms; "" = Redis TIME), ARGV[2] limit (buckets per call)
-- Reply {drained (entries removed), removed (paths that left the registry),
--        visited, skipped, next_due (ms, -1: registry empty), backlog}
--
-- Each due path's bucket <prefix>{k}:leaky_bucket:<path> and meta
-- <prefix>{k}:leaky_bucket_meta:<path> are in the registry's slot (same
-- hash tag), so the script names them from the registry key and the path.
-- The leak is lib/leak.lua's, at the rate the meta records (the one the
-- client applied: DESIGN.md, "State describes itself"), applied at the
-- horizon time max(last, now - SKEW_MS) (lib/skew.lua), as the window jobs
-- prune: the drain never leaks what a client whose clock lags Redis by up to
-- SKEW_MS has not leaked yet on its own timeline, so such a client is not
-- admitted again into a bucket the drain emptied at Redis time (cap 5 at 5/s
-- and a client 2 s behind: 10 admitted in 305 ms, not 6, before this).  It is
-- exact whatever the tick, and a second run at one instant removes nothing.
-- A bucket that is empty, or whose keys are gone, leaves the registry; an
-- emptied bucket's meta goes with it (the drain's t is now - SKEW_MS, and
-- every client within the horizon is at t or later: no mark is needed).  A
-- bucket with entries is due again when its next entry leaks at the horizon
-- (its leak time + SKEW_MS).  A meta that records no rate (not written by
-- leaky_bucket.lua) is left alone until its keys expire.
--
-- Hot path: HMGET of the meta, then ZREMRANGEBYRANK and HSET where entries
-- leak; the level is not counted first: a ZREMRANGEBYRANK that removes
-- fewer than it was asked to has emptied the bucket, and one that removes
-- exactly as many is followed by an EXISTS (it may have taken the last
-- entry).  The registry is rescheduled once for the whole call (lib/due.lua).

--@include lib/leak.lua
--@include lib/due.lua

return due_run('leaky_bucket', function(path, bucket, meta, now)
  local m = due_ok(redis.pcall('HMGET', meta, 'last', 'carry', 'rate'))
  if not m then return nil, nil, true end
  -- the recorded rate (leaky_bucket.lua checked it): a finite number > 0, else none
  local rate = stored(m[3])
  if rate and rate <= 0 then rate = nil end
  local last, carry = leak_read(m, now)
  if not last or not rate then
    -- No mark or no rate: not a bucket of leaky_bucket.lua's making (or its
    -- meta expired first).  Gone when the bucket is; else looked at when it
    -- would expire.
    return due_by_ttl(bucket, nil, now)
  end
  local t = math.max(last, now - SKEW_MS)
  local due = rate * (t - last) / 1000 + carry
  local k = math.floor(due + EPS)
  if k < 1 then return 0, last + leak_ms_until(rate, carry, 1) + SKEW_MS end
  -- a huge recorded rate (1e300 is a valid one) leaks more than any bucket
  -- holds: the range end must stay an integer Redis reads (not -2^63)
  if not (k <= MAX_INT) then k = MAX_INT end
  local removed = due_ok(redis.pcall('ZREMRANGEBYRANK', bucket, '0', fmt_int(k - 1)))
  if not removed then return nil, nil, true end
  if removed < k or redis.call('EXISTS', bucket) == 0 then
    -- emptied (or already empty): the bucket goes and so does its meta, as t is
    -- now - SKEW_MS: every client within the horizon is served at t or later
    redis.call('DEL', meta)
    return removed, nil
  end
  carry = math.max(0, due - k)
  redis.call('HSET', meta, 'last', fmt_int(t), 'carry', fmt_real(carry))
  return removed, t + leak_ms_until(rate, carry, 1) + SKEW_MS
end)
