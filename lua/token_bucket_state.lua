#!lua flags=no-writes
-- sluice: token bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket hash (tokens, last)
-- ARGV[1] capacity (tokens, integer >= 1), ARGV[2] rate (tokens per second),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {used (capacity - remaining), remaining (whole tokens at t), reset_ms
--        (until full, 0 when full), last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL)}
--
-- What token_bucket.lua would find at t = max(now, last), without writing
-- (lib/refill.lua).

--@include lib/bucket.lua
--@include lib/refill.lua

if #KEYS ~= 1 then return usage('token_bucket_state takes 1 KEY (bucket)') end
local bucket = KEYS[1]
local capacity, rate, now, err = arg_bucket_now(ARGV, 1, 'tokens')
if err then return err end

local tokens0, last, t, found = refill_read(redis.call('HMGET', bucket, 'tokens', 'last'), capacity, now)
local remaining = refill_whole(refill_at(tokens0, last, capacity, rate, t), capacity)
return {
  capacity - remaining,
  remaining,
  refill_reset_ms(tokens0, last, capacity, rate, t),
  found and last or -1,
  redis.call('PTTL', bucket),
}
