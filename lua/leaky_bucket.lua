#!lua
-- sluice: leaky bucket (meter), client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] bucket   sorted set of admitted entries, score = admission ms,
--                  member "<ms>:<seq>" (unique per request)
-- KEYS[2] meta     hash: last  = ms up to which leaks are accounted,
--                        carry = fractional leak credit in [0, 1),
--                        seq   = member counter
-- KEYS[3] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] capacity (entries, integer >= 1),
-- ARGV[3] rate (entries leaked per second, > 0), ARGV[4] n (cost, default 1),
-- ARGV[5] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > capacity), reset_ms}
--
-- The leak is a meter: a non-empty bucket loses floor(rate * busy_ms / 1000)
-- entries, oldest first, computed over the whole span since `last` and keeping
-- the fraction in `carry`, so the result does not depend on how often (or by
-- whom: this script, the drain, several daemons) it is applied: lib/leak.lua,
-- shared with leaky_bucket_drain.lua and leaky_bucket_state.lua.  An empty
-- bucket earns no credit.  The meta's `last` is the bucket's time mark: a
-- caller whose now is older is served at it, and it outlives the entries by
-- SKEW_MS (lib/skew.lua), so a client whose clock lags Redis is held to the
-- time the drain applied.

--@include lib/bucket.lua
--@include lib/leak.lua

local MAX_N = 100000 -- cost of one request, in entries

if #KEYS ~= 3 then return usage('leaky_bucket takes 3 KEYS (bucket, meta, registry)') end
local bucket, meta, registry = KEYS[1], KEYS[2], KEYS[3]
-- n is capped: one sorted-set member per unit, so one call cannot fill Redis.
local path, capacity, rate, n, now, err = arg_bucket_call(ARGV, 'entries', MAX_N)
if err then return err end

local level = redis.call('ZCARD', bucket)
local last, carry, t = leak_read(redis.call('HMGET', meta, 'last', 'carry'), now)
level, last, carry = leak(bucket, meta, level, last, carry, rate, t, now)

local allowed, retry_after = 0, 0
if n > capacity then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif level + n <= capacity then
  allowed = 1
  local seq
  if level == 0 then
    last, carry = t, 0
    redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0', 'seq', fmt_int(n))
    seq = n
  else
    seq = redis.call('HINCRBY', meta, 'seq', n)
  end
  -- Members t:(seq-n+1) .. t:seq.  NX and the retry loop keep them unique even
  -- if `seq` was lost while members stayed (meta deleted by hand, foreign
  -- writers); ZADD in slices because unpack() is limited to a few thousand values.
  local todo = n
  while todo > 0 do
    local args, added = { 'ZADD', bucket, 'NX' }, 0
    for s = seq - todo + 1, seq do
      args[#args + 1] = fmt_int(t)
      args[#args + 1] = fmt_int(t) .. ':' .. fmt_int(s)
      if #args >= 1003 or s == seq then
        added = added + redis.call(unpack(args))
        args = { 'ZADD', bucket, 'NX' }
      end
    end
    todo = todo - added
    if todo > 0 then seq = redis.call('HINCRBY', meta, 'seq', todo) end
  end
  level = level + n
  -- Keep the bucket until it would be empty, measured from the caller's `now`
  -- (not t, which may be later), and its meta, the time mark, SKEW_MS longer.
  local ttl = leak_ttl(level, last, carry, rate, now)
  expire_in(bucket, ttl)
  expire_in(meta, ttl + SKEW_MS)
  redis.call('SADD', registry, path)
else
  retry_after = math.max(1, last + leak_ms_until(rate, carry, level + n - capacity) - t)
end

return { allowed, math.max(0, capacity - level), retry_after, leak_reset_ms(level, last, carry, rate, t) }
