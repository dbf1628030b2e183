#!lua flags=no-writes
-- sluice: leaky bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket sorted set, KEYS[2] meta hash (last, carry, seq)
-- ARGV[1] capacity (entries, integer >= 1), ARGV[2] rate (entries per second),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {level, remaining, reset_ms, last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL)}
--
-- Reports what the leak of leaky_bucket.lua would leave at t, without doing it
-- (lib/leak.lua's leak_at, on values only).

--@include lib/bucket.lua
--@include lib/leak.lua

if #KEYS ~= 2 then return usage('leaky_bucket_state takes 2 KEYS (bucket, meta)') end
local bucket, meta = KEYS[1], KEYS[2]
local capacity, rate, now, err = arg_bucket_now(ARGV, 1, 'entries')
if err then return err end

local level = redis.call('ZCARD', bucket)
local stored_last, carry, t = leak_read(redis.call('HMGET', meta, 'last', 'carry'), now)
local last
level, last, carry = leak_at(level, stored_last, carry, rate, t)

return {
  level,
  math.max(0, capacity - level),
  leak_reset_ms(level, last, carry, rate, t),
  stored_last and math.floor(stored_last) or -1,
  redis.call('PTTL', bucket),
}
