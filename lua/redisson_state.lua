#!lua flags=no-writes
-- sluice: Redisson RRateLimiter state, an admin read.  Contract: lua/README.md.
--
-- KEYS[1] the limiter's hash <name>, KEYS[2] {<name>}:value, KEYS[3]
-- {<name>}:permits (lib/redisson.lua); ARGV[1] now (ms; absent or "" = Redis TIME)
-- Reply {used (rate - available), available (permits Redisson's acquire would
--        find at now), reset_ms (until the oldest permit in the interval is
--        given back, 0 when none), ttl_ms (PTTL of the hash: -2 absent, -1 no
--        TTL), recorded (flat {capacity, <rate>, rate, <rate per second>,
--        interval_ms, <interval>, type, <type>}; empty when the hash holds no
--        settings), rule ("": a Redisson limiter names none)}
-- What Redisson's acquire would compute at now, without writing: no value
-- reads as the whole rate.  Without settings, or for a PER_CLIENT limiter
-- (each client has its own value), used, available and reset_ms are -1.

--@include lib/time.lua
--@include lib/redisson.lua

if #KEYS ~= 3 or #ARGV > 1 then
  return usage('redisson_state takes 3 KEYS (hash, value, permits) and ARGV now')
end
local now, err = arg_now(ARGV[1])
if err then return err end
local hash, value, permits = KEYS[1], KEYS[2], KEYS[3]
local h = redis.call('HMGET', hash, 'rate', 'interval', 'type')
local ttl = redis.call('PTTL', hash)
local rate, interval, kind = redisson_settings(h)
if not rate then return { -1, -1, -1, ttl, {}, '' } end
local recorded = { 'capacity', h[1], 'rate', fmt_real(rate * 1000 / interval), 'interval_ms', h[2], 'type', kind }
if kind ~= '0' then return { -1, -1, -1, ttl, recorded, '' } end

local cut = now - interval
local v = redis.call('GET', value)
local cur = rate
if v then
  cur = tonumber(v) or 0
  local released = redisson_sum(redis.call('ZRANGEBYSCORE', permits, 0, cut))
  cur = redisson_credit(cur, rate, released, function()
    return redisson_sum(redis.call('ZRANGEBYSCORE', permits, '-inf', '(0'))
      + redisson_sum(redis.call('ZRANGEBYSCORE', permits, '(' .. fmt_int(cut), '+inf'))
  end)
end
local reset = 0
local first = redis.call('ZRANGEBYSCORE', permits, '(' .. fmt_int(cut), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if v and first[2] then reset = tonumber(first[2]) + interval - now end
return { rate - cur, cur, reset, ttl, recorded, '' }
