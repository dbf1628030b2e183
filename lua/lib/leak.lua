-- lib/leak.lua: the leaky bucket as a meter (lua/README.md, "The leaky
-- bucket"; DESIGN.md, "State model"): the continuous-state leaky bucket of
-- ITU-T I.371's GCRA, counted here in whole entries.  Units: entries, ms;
-- rate in entries leaked per second.
--
-- A bucket is a sorted set of entries, oldest first, and a meta hash:
-- last = ms up to which leaks are accounted, carry = fractional leak credit
-- in [0, 1).  Between last and t = max(now, last) a non-empty bucket loses
--     k = floor(rate * (t - last) / 1000 + carry + EPS)
-- entries, oldest first, and keeps the fraction (carry = due - k, last = t).
-- Computed over the whole span since last, the loss over any busy interval
-- is floor(rate * interval) whoever applies it and however often (the
-- acquire, the drain, several daemons); applied twice at one instant, the
-- second removes nothing.  An empty bucket earns no credit.
--
-- last is also the bucket's time mark (lib/skew.lua): a call with an older
-- now is served at last.  So the meta outlives the entries by SKEW_MS: the
-- client keeps both keys until the bucket would be empty + SKEW_MS, and a
-- bucket that a call empties (or finds empty) keeps the meta as the mark
-- alone, last = t, carry = 0 (time spent empty still earns nothing), for
-- SKEW_MS from t.  The drain of sluice's own layout leaks at the horizon
-- max(last, now - SKEW_MS) and so never needs to keep a mark.
--@include lib/time.lua
--@include lib/skew.lua

-- The meta's HMGET last carry at now: last (nil when none or unreadable),
-- carry (0 unless a fraction in [0, 1)) and t = max(now, last): stored
-- time never moves backward, a caller behind last is served at last.
local function leak_read(m, now)
  local last, carry = stored(m[1]), stored(m[2]) or 0
  if carry >= 1 then carry = 0 end
  if last and last > now then return last, carry, last end
  return last, carry, now
end

-- Entries leaked dt ms after last.  The leak and every answer derived from
-- it (retry_after, reset_ms, TTLs) use this same arithmetic, so they agree
-- to the ms.
local function leaked(rate, carry, dt)
  return math.floor(rate * dt / 1000 + carry + EPS)
end

-- The smallest whole ms x >= 0 after last at which `want` entries have leaked
-- (MAX_INT: never).  lib/time.lua's first_ms, written out: the closed-form
-- guess, then steps checked on leaked() itself; no closure, as the drain
-- calls this for every bucket.
local function leak_ms_until(rate, carry, want)
  local x = math.ceil((want - carry - EPS) * 1000 / rate)
  if x ~= x or x >= MAX_INT then return MAX_INT end
  if x < 0 then x = 0 end
  for _ = 1, 8 do
    if leaked(rate, carry, x) >= want then break end
    x = x + 1
  end
  for _ = 1, 8 do
    if x == 0 or leaked(rate, carry, x - 1) < want then break end
    x = x - 1
  end
  return x
end

-- reset_ms: ms from t until the next entry leaks, 0 when the bucket is empty.
local function leak_reset_ms(level, last, carry, rate, t)
  if level == 0 then return 0 end
  return math.max(0, last + leak_ms_until(rate, carry, 1) - t)
end

-- A bucket's TTL while it holds `level` entries, accounted from last with
-- carry, counted from the caller's now: until it would be empty (+1 ms for
-- the expiry clock's rounding), + GRACE_MS so that a running sluiced drains
-- (and counts) the last entries before Redis expires the key (an expired
-- bucket reads the same as a drained one).  The callers add SKEW_MS (the
-- horizon the drain and the mark keep).
-- (Drains in more than 2^53 ms: expire_in keeps them for good.)
local GRACE_MS = 1000
local function leak_ttl(level, last, carry, rate, now)
  return last + leak_ms_until(rate, carry, level) - now + 1 + GRACE_MS
end

-- The leak at t, on values only (the admin read): the level, last and carry
-- after it, and what happened, for leak() to write:
--   'empty'   no entries: a mark stays, moved to t with carry 0 (time spent
--             empty earns no credit); no mark, nothing;
--   'start'   entries but no last (written by a limiter that keeps no
--             meta): accounting starts at t;
--   'emptied' all of them leaked: the bucket goes, the meta stays as the
--             mark (last = t, carry 0: no credit carries over);
--   'leaked'  the oldest few leaked;
--   'none'    nothing due: nothing is written, and the next call recomputes
--             from the same last.
local function leak_at(level, last, carry, rate, t)
  if level == 0 then return 0, last and t, 0, 'empty' end
  if not last then return level, t, 0, 'start' end
  local due = rate * (t - last) / 1000 + carry
  local k = math.floor(due + EPS) -- = leaked(rate, carry, t - last)
  if k >= level then return 0, t, 0, 'emptied' end
  if k > 0 then return level - k, t, math.max(0, due - k), 'leaked' end
  return level, last, carry, 'none'
end

-- The meta as the time mark of an empty bucket: last = t, carry 0, kept
-- SKEW_MS from t (counted from the caller's now, which may be older).
local function leak_mark(meta, t, now)
  redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0')
  expire_in(meta, t - now + SKEW_MS) -- a ttl <= 0 deletes it: no client is behind t
end

-- The leak at t = max(now, last), applied to the bucket and its meta (the
-- acquire, the drain); returns what leak_at returns but `what`.
local function leak(bucket, meta, level, last, carry, rate, t, now)
  local left, last2, carry2, what = leak_at(level, last, carry, rate, t)
  if what == 'empty' then
    if not last then
      redis.call('DEL', meta) -- a meta without a readable last is no mark
    elseif last ~= t or carry ~= 0 then
      leak_mark(meta, t, now)
    end
  elseif what == 'start' then
    -- The meta lives as a bucket of sluice's would (until drained, + 1 s)
    -- and SKEW_MS more, so a daemon that stops for good (or a refused
    -- client) leaves nothing behind; if the bucket fills meanwhile,
    -- accounting simply starts again.
    redis.call('HSET', meta, 'last', fmt_int(t), 'carry', '0')
    expire_in(meta, leak_ttl(level, t, 0, rate, now) + SKEW_MS)
  elseif what == 'emptied' then
    redis.call('DEL', bucket)
    leak_mark(meta, t, now)
  elseif what == 'leaked' then
    -- bounds as strings: Redis 7.0 would format Lua numbers with %.17g
    redis.call('ZREMRANGEBYRANK', bucket, '0', fmt_int(level - left - 1)) -- oldest first
    redis.call('HSET', meta, 'last', fmt_int(t), 'carry', fmt_real(carry2))
  end
  return left, last2, carry2
end
