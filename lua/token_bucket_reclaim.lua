#!lua flags=allow-oom
-- sluice: token bucket reclaim, one call for a batch of buckets (the worker's
-- job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; KEYS[1+i] bucket_i hash (tokens, last), i = 1..N
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[3i-1] path_i (registry member), ARGV[3i] capacity_i (tokens, integer
--   >= 1), ARGV[3i+1] rate_i (tokens per second)
-- Reply {reclaimed (buckets deleted), emptied (paths removed from the registry),
--        buckets (N), skipped (keys of another type: untouched),
--        then, only when some failed: failed (buckets refused alone: arguments the script does not take, or
--        a job error; lib/batch.lua), the first failed path, its error}
--
-- A bucket that has refilled to capacity is the same as an absent one (the
-- acquire reads an absent bucket as full) to every client at or after its
-- `last`, its time mark.  So a bucket that was full at now - SKEW_MS already
-- is deleted and its path leaves the registry: any client whose clock lags
-- Redis by up to SKEW_MS (lib/skew.lua) finds it full either way.  So does the
-- path of an absent bucket.  "Full at b" uses the acquire's arithmetic, from
-- last <= b: tokens + rate * (b - last) / 1000 + EPS >= capacity.
-- Idempotent.  Hot path: one HMGET per bucket not yet full.

--@include lib/batch.lua
--@include lib/bucket.lua
--@include lib/refill.lua

local nb, err = batch_size(1, 3, 0, 'token_bucket_reclaim takes KEYS registry, then one bucket per path; '
  .. 'ARGV now, then path, capacity and rate per bucket')
if err then return err end
-- Check the whole batch before any write: a path whose arguments are refused
-- is left alone and fails alone (lib/batch.lua).
-- A bucket whose arguments are refused is left alone and fails alone.
local caps, rates, bad = {}, {}, {}
for i = 1, nb do
  local _, err = arg_path(ARGV[3 * i - 1], 'bucket', i)
  if not err then caps[i], rates[i], err = arg_bucket(ARGV[3 * i], ARGV[3 * i + 1], 'tokens', 'bucket', i) end
  bad[i] = err
end

return batch_run(nb, function(i, now)
  local bucket, path, capacity, rate = KEYS[1 + i], ARGV[3 * i - 1], caps[i], rates[i]
  local m = redis.pcall('HMGET', bucket, 'tokens', 'last')
  if m.err then return nil end
  -- Absent or unreadable reads as full, as the acquire reads it (no mark).
  local tokens0, last, _, found = refill_read(m, capacity, rate, now)
  local b = now - SKEW_MS
  if found and (last > b or not refill_full(refill_at(tokens0, last, capacity, rate, b), capacity)) then
    return 0, 0
  end
  local reclaimed = redis.call('DEL', bucket)
  return reclaimed, unregister(path)
end, bad, function(i) return ARGV[3 * i - 1] end)
