#!lua
-- sluice: token bucket, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] bucket   hash: tokens = tokens the bucket held at `last` ('%.17g'),
--                        last   = ms of the last admission
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] capacity (tokens, integer >= 1),
-- ARGV[3] rate (tokens added per second, > 0), ARGV[4] n (cost, default 1),
-- ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining (whole tokens), retry_after_ms (-1: n > capacity),
--        reset_ms (until the bucket is full)}
--
-- Lazy refill (lib/refill.lua, shared with token_bucket_reclaim.lua and
-- token_bucket_state.lua): at t the bucket holds
-- min(capacity, tokens + rate * (t - last) / 1000).
-- An absent bucket is full, and so is the same as a bucket that has refilled to
-- capacity, but for `last`, the bucket's time mark: a caller whose now is
-- older is served at it.  So the key expires SKEW_MS after the bucket is full
-- (lib/skew.lua), and the worker's reclaim deletes only buckets full for that
-- long.  Only an admission writes; a rejected request takes nothing and writes
-- nothing.

--@include lib/bucket.lua
--@include lib/refill.lua

if #KEYS ~= 2 then return usage('token_bucket takes 2 KEYS (bucket, registry)') end
local bucket, registry = KEYS[1], KEYS[2]
local path, capacity, rate, n, now, err = arg_bucket_call(ARGV, 'tokens')
if err then return err end

local tokens0, last, t = refill_read(redis.call('HMGET', bucket, 'tokens', 'last'), capacity, now)
local tokens = refill_at(tokens0, last, capacity, rate, t)

-- ms after `last` until the bucket holds `want` tokens (retry_after, reset_ms, TTL).
local function ms_until(want) return refill_ms_until(tokens0, rate, want) end

local allowed, retry_after = 0, 0
if n > capacity then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif tokens + EPS >= n then -- EPS: see lib/num.lua
  allowed = 1
  tokens = math.max(0, tokens - n)
  tokens0, last = tokens, t
  redis.call('HSET', bucket, 'tokens', fmt_real(tokens), 'last', fmt_int(t))
  -- Keep the bucket until it is full again (then it is the same as absent),
  -- measured from the caller's now, + 1 ms for the expiry clock's rounding,
  -- and SKEW_MS more for its mark (refills in more than 2^53 ms: never expire).
  expire_in(bucket, t + ms_until(capacity) - now + 1 + SKEW_MS)
  redis.call('SADD', registry, path)
else
  retry_after = math.max(1, last + ms_until(n) - t)
end

return { allowed, refill_whole(tokens, capacity), retry_after, refill_reset_ms(tokens0, last, capacity, rate, t) }
