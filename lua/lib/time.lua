-- lib/time.lua: "now", TTLs and waits, all in whole ms (lua/README.md, "Time", "TTLs").
--
-- Every script takes "now" from the Redis server clock, TIME (one clock for
-- every client and daemon: DESIGN.md, "Time"), unless the caller passes an
-- explicit integer ms (tests, clients that insist on their own clock).
--@include lib/args.lua

-- now from an optional argument: absent or "" = TIME, sec * 1000 + floor(usec / 1000).
local function arg_now(s)
  if s == nil or s == '' then
    local tm = redis.call('TIME')
    return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
  end
  local now = int_arg(s, 0)
  if not now then return nil, fail('now', 'an integer from 0 to 2^53-1 (ms)') end
  return now
end

-- Keep `key` for `ttl` ms; a TTL of 2^53 ms or more is none at all (PERSIST)
-- rather than one that rounds.
local function expire_in(key, ttl)
  if ttl >= MAX_INT then
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIRE', key, fmt_int(ttl))
  end
end

-- The smallest whole ms x >= 0 with ok(x), for ok false then true as x grows,
-- from the closed-form guess x (MAX_INT when the guess is nan or 2^53 or
-- more: never).  The guess divides where the arithmetic ok() checks
-- multiplies, so it could round the other way (no case found in a million
-- samples); the steps check it on ok() itself, so a client that waits
-- exactly that long is admitted and one that comes 1 ms earlier is not.
local function first_ms(x, ok)
  if x ~= x or x >= MAX_INT then return MAX_INT end
  if x < 0 then x = 0 end
  for _ = 1, 8 do
    if ok(x) then break end
    x = x + 1
  end
  for _ = 1, 8 do
    if x == 0 or not ok(x - 1) then break end
    x = x - 1
  end
  return x
end
