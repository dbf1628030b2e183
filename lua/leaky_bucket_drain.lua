#!lua flags=allow-oom
-- sluice: leaky bucket drain, one call for a batch of buckets (the worker's
-- job).  Contract: lua/README.md.
--
-- KEYS[1] registry set of paths; for bucket i = 1..N:
--   KEYS[2i] bucket sorted set, KEYS[2i+1] meta hash (last, carry, seq)
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[2i] path_i (registry member), ARGV[2i+1] rate_i (entries per second)
-- Reply {drained (entries removed), emptied (paths removed from the registry),
--        buckets (N), skipped (buckets whose keys have another type: untouched),
--        then, only when some failed: failed (buckets refused alone: arguments the script does not take, or
--        a job error; lib/batch.lua), the first failed path, its error}
--
-- Applies the leak of leaky_bucket.lua (lib/leak.lua): a
-- non-empty bucket loses floor(rate * (t - last) / 1000 + carry) entries, oldest
-- first, and keeps the fraction, so it is exact whatever the tick and running
-- it twice at one instant removes nothing the second time.  Hot path (100,000
-- buckets a sweep): one HMGET per bucket with nothing due; ZCARD and the
-- writes only where something leaks.
-- An empty or absent bucket (expired, reset, drained) leaves the registry;
-- its meta stays SKEW_MS as the bucket's time mark (last = the drain's t,
-- carry 0), so a client whose clock lags Redis is served at that time and
-- not admitted again by its own older clock.

--@include lib/batch.lua
--@include lib/leak.lua

local nb, err = batch_size(2, 2, 0, 'leaky_bucket_drain takes KEYS registry, then bucket and meta per bucket; '
  .. 'ARGV now, then path and rate per bucket')
if err then return err end
-- Check the whole batch before any write: a path whose arguments are refused
-- is left alone and fails alone (lib/batch.lua).
-- A batch usually repeats a few rate strings: each distinct one is checked once.
local rates, checked, bad = {}, {}, {}
for i = 1, nb do
  local _, err = arg_path(ARGV[2 * i], 'bucket', i)
  local rs = ARGV[2 * i + 1]
  local r = checked[rs]
  if not r and not err then
    r, err = arg_rate(rs, 'entries', 'bucket', i)
    checked[rs] = r
  end
  rates[i], bad[i] = r, err -- a refused bucket fails alone
end

return batch_run(nb, function(i, now)
  local bucket, meta, path, rate = KEYS[2 * i], KEYS[2 * i + 1], ARGV[2 * i], rates[i]
  -- Hot path: most ticks find nothing due, so the meta is read first and the
  -- bucket is only counted when there is something to leak (or no meta).
  local m = redis.pcall('HMGET', meta, 'last', 'carry')
  if m.err then return nil end
  local last, carry, t = leak_read(m, now)
  -- Nothing due with a meta: write nothing; the next call recomputes from
  -- the same `last`.  (An absent or empty bucket keeps its registry entry
  -- until something would be due or its meta expires.)
  if last and leaked(rate, carry, t - last) < 1 then return 0, 0 end
  local level = redis.pcall('ZCARD', bucket)
  if type(level) ~= 'number' then return nil end
  local left = leak(bucket, meta, level, last, carry, rate, t, now)
  if left > 0 then return level - left, 0 end
  return level, unregister(path) -- empty or emptied
end, bad, function(i) return ARGV[2 * i] end)
