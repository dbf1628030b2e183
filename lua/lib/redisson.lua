-- lib/redisson.lua: the permits of Redisson's RRateLimiter (Redisson >= 3.35,
-- org.redisson.RedissonRateLimiter; README "Redisson's RRateLimiter"), read
-- the way its acquire script reads them.  Written from that script's
-- description, not copied:
--
--   <name>             hash: rate (permits per interval), interval (ms),
--                      type (0 OVERALL, 1 PER_CLIENT), keepAliveTime (ms)
--   {<name>}:value     string: permits available now
--   {<name>}:permits   sorted set: one member per acquire, scored by the
--                      client's clock (ms); member = struct.pack('Bc0I',
--                      #random, random, permits): a length byte, that many
--                      random bytes (16 since Redisson 3.21, 8 before), the
--                      permits as a 4-byte unsigned int (native order)
--
-- At an acquire at time t (the client's System.currentTimeMillis()) with a
-- value present, the members scored 0..t - interval have left the interval:
-- when they hold some permits (released > 0) they are removed and credited
-- back, value + released, or when that is more than the rate, the rate less
-- the permits of the members left.  With no value, the acquire starts from
-- the rate and reads nothing of the set.

-- The permits one member holds (an error, as in Redisson's own script, for
-- a member of another format).
local function redisson_permits(member)
  local _, n = struct.unpack('Bc0I', member)
  return n
end

-- The permits of `members` (a list of members).
local function redisson_sum(members)
  local s = 0
  for _, m in ipairs(members) do s = s + redisson_permits(m) end
  return s
end

-- What the acquire makes of value `cur` when `released` permits have left
-- the interval (`left()`: the permits of the members that stay): the value
-- it stores, or cur itself when nothing is released (it stores nothing).
local function redisson_credit(cur, rate, released, left)
  if released <= 0 then return cur end
  if cur + released > rate then return rate - left() end
  return cur + released
end

-- The limiter's settings from its hash (HMGET rate interval type): rate and
-- interval as numbers and type as stored, or nil when the hash is not an
-- initialized limiter's (Redisson's acquire refuses it: "RateLimiter is not
-- initialized").
local function redisson_settings(h)
  local rate, interval = tonumber(h[1]), tonumber(h[2])
  if not rate or not interval or not h[3] then return nil end
  return rate, interval, h[3]
end
