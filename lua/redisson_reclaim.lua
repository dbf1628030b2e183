#!lua flags=allow-oom
-- sluice: Redisson RRateLimiter upkeep, one call for a batch of limiters
-- (the worker's job for a layout of kind "redisson").  Contract: lua/README.md.
--
-- KEYS[1] registry (a name nothing writes: the layout is found by SCAN);
--   for limiter i = 1..N: KEYS[3i-1] its hash <name>, KEYS[3i] {<name>}:value,
--   KEYS[3i+1] {<name>}:permits (lib/redisson.lua)
-- ARGV[1] now (ms, the same for the whole batch; absent or "" = Redis TIME);
--   ARGV[1+i] path_i; ARGV[N+2] optional: the skew horizon in ms (sluiced's
--   max_clock_skew_ms; absent: 10000, lib/skew.lua's default)
-- Reply {reclaimed (limiters whose value and permits were deleted), the same
--        again (their state is gone: "emptied"), N, skipped (not an OVERALL
--        limiter, or keys of another type: untouched), then, only when some
--        failed: failed, the first failed path, its error (lib/batch.lua)}
--
-- Works at t = now - SKEW_MS (lib/skew.lua): Redisson stamps permits with
-- the client's clock, so the worker removes only what every client whose
-- clock lags Redis by up to SKEW_MS would remove itself.  Then:
--   1. the permits scored 0..t - interval are removed and credited back
--      exactly as Redisson's next acquire would (lib/redisson.lua), value
--      written with KEEPTTL (Redisson re-sets the TTLs itself at its call);
--      the two steps, this one and Redisson's later one, give what
--      Redisson's one step gives;
--   2. a limiter whose value is then its whole rate, with no permit left in
--      the interval, is the same to Redisson's next acquire as one with no
--      value and no permits (a fresh trySetRate): both are deleted.  The
--      hash, the limiter's settings, stays: Redisson's acquire fails without it.
-- A value that is absent is left with its permits as they are (the acquire
-- reads no permits then); so are PER_CLIENT limiters (type 1: their keys
-- carry each client's id).  Idempotent.

--@include lib/batch.lua
--@include lib/skew.lua
--@include lib/redisson.lua

local nb, err = batch_size(3, 1, 1, 'redisson_reclaim takes KEYS registry, then hash, value and permits per '
  .. 'limiter; ARGV now, then the path of each, then optionally the skew horizon')
if err then return err end
if ARGV[nb + 2] then
  SKEW_MS = int_arg(ARGV[nb + 2], 0)
  if not SKEW_MS then return fail('skew_ms', 'an integer from 0 to 2^53-1 (ms)') end
end
local bad = {}
for i = 1, nb do
  local _
  _, bad[i] = arg_path(ARGV[1 + i], 'limiter', i)
end

return batch_run(nb, function(i, now)
  local hash, value, permits = KEYS[3 * i - 1], KEYS[3 * i], KEYS[3 * i + 1]
  local h = redis.pcall('HMGET', hash, 'rate', 'interval', 'type')
  if h.err then return nil end
  local rate, interval, kind = redisson_settings(h)
  if not rate or kind ~= '0' then return nil end
  local v = redis.pcall('GET', value)
  if type(v) == 'table' then return nil end
  local ptype = redis.call('TYPE', permits).ok
  if ptype ~= 'zset' and ptype ~= 'none' then return nil end
  if not v then return 0, 0 end
  local cur = tonumber(v)
  if not cur then error('value ' .. value .. ' is not a number') end
  local cut = now - SKEW_MS - interval
  local released = redisson_sum(redis.call('ZRANGEBYSCORE', permits, 0, cut))
  if released > 0 then
    redis.call('ZREMRANGEBYSCORE', permits, 0, cut)
    cur = redisson_credit(cur, rate, released, function()
      return redisson_sum(redis.call('ZRANGE', permits, 0, -1))
    end)
    redis.call('SET', value, cur, 'KEEPTTL')
  end
  -- Left in the interval: members scored above the cut, or below 0 (the
  -- acquire never releases those); zero-permit members at or below the cut
  -- change nothing.
  if cur == rate and redis.call('ZCOUNT', permits, 0, cut) == redis.call('ZCARD', permits) then
    redis.call('DEL', value, permits)
    return 1, 1
  end
  return 0, 0
end, bad, function(i) return ARGV[1 + i] end)
