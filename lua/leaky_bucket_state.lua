#!lua flags=no-writes
-- sluice: leaky bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket sorted set, KEYS[2] meta hash (last, carry, seq, and the
--   parameters the acquire recorded: capacity, rate, rule; a foreign layout
--   passes its own meta, which records none)
-- ARGV[1] capacity (entries, integer >= 1), ARGV[2] rate (entries per second):
--   each "" = the one the meta records; one given wins
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {level, remaining, reset_ms, last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL),
--        recorded (flat {field, value, ...} of the recorded parameters, as
--        stored; empty when none), rule (the recorded rule, "" when none)}
-- With neither capacity nor rate (given or recorded), remaining and reset_ms
-- are -1 and the level is the raw ZCARD (nothing is known to leak).
--
-- Reports what the leak of leaky_bucket.lua would leave at t, without doing it
-- (lib/leak.lua's leak_at, on values only).

--@include lib/bucket.lua
--@include lib/leak.lua

if #KEYS ~= 2 then return usage('leaky_bucket_state takes 2 KEYS (bucket, meta)') end
local bucket, meta = KEYS[1], KEYS[2]
local m = redis.call('HMGET', meta, 'last', 'carry', 'capacity', 'rate', 'rule')
local recorded = {}
if m[3] then recorded[#recorded + 1], recorded[#recorded + 2] = 'capacity', m[3] end
if m[4] then recorded[#recorded + 1], recorded[#recorded + 2] = 'rate', m[4] end
local cap_s, rate_s = ARGV[1], ARGV[2]
if cap_s == nil or cap_s == '' then cap_s = m[3] or '' end
if rate_s == nil or rate_s == '' then rate_s = m[4] or '' end
local now, err = arg_now(ARGV[3])
if err then return err end

local level = redis.call('ZCARD', bucket)
local stored_last, carry, t = leak_read(m, now)
local last_ms = stored_last and math.floor(stored_last) or -1
if cap_s == '' and rate_s == '' then
  return { level, -1, -1, last_ms, redis.call('PTTL', bucket), recorded, m[5] or '' }
end
local capacity, rate
capacity, rate, err = arg_bucket(cap_s, rate_s, 'entries')
if err then return err end
local last
level, last, carry = leak_at(level, stored_last, carry, rate, t)

return {
  level,
  math.max(0, capacity - level),
  leak_reset_ms(level, last, carry, rate, t),
  last_ms,
  redis.call('PTTL', bucket),
  recorded,
  m[5] or '',
}
