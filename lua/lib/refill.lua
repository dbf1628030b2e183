-- lib/refill.lua: the token bucket, refilled lazily (lua/README.md, "The
-- token bucket"): the textbook token bucket, its refill computed at each
-- call from the time since the last one instead of by a timer.  Units:
-- tokens, ms; rate in tokens added per second.
--
-- A bucket hash holds tokens (at last; %.17g, may be fractional) and last
-- (ms); sluice's own buckets also hold the parameters their latest
-- admission applied (capacity, rate, rule: DESIGN.md, "State describes
-- itself").  At t = max(now, last) it holds
--     min(capacity, tokens + rate * (t - last) / 1000).
-- An absent bucket, or one whose tokens or last cannot be read, is full, so
-- a bucket refilled to capacity is the same as an absent one -- to a caller
-- at or after its last.  last is also the bucket's time mark (lib/skew.lua):
-- a caller with an older now is served at last, so the bucket is kept (TTL,
-- reclaim) until it has been full for SKEW_MS.
--@include lib/time.lua
--@include lib/skew.lua

-- Tokens dt ms after last, before the cap: the one place of the refill's
-- arithmetic.  The admission and every answer derived from it (retry_after,
-- reset_ms, the TTL, the due time, the reclaim) use it.
local function refill_have(tokens0, rate, dt)
  return tokens0 + rate * dt / 1000
end

-- The bucket's HMGET tokens last (m[1], m[2]) at now: tokens0 (at most
-- capacity, which may have been lowered), last, t = max(now, last) (stored
-- time never moves backward), whether the bucket had state, and the tokens
-- it holds at t; an absent bucket reads as full since now.
local function refill_read(m, capacity, rate, now)
  local tokens0, last = stored(m[1]), stored_int(m[2])
  if not (tokens0 and last) then return capacity, now, now, false, capacity end
  if tokens0 > capacity then tokens0 = capacity end
  local t = now
  if last > now then t = last end
  return tokens0, last, t, true, math.min(capacity, refill_have(tokens0, rate, t - last))
end

-- The parameters a bucket records (the strings its latest admission passed,
-- m[3] capacity and m[4] rate of an HMGET): capacity and rate, or nil when
-- either is absent or not what the acquire accepts (a foreign hash, one
-- edited by hand).
local function refill_recorded(cap_s, rate_s)
  local capacity, rate = int_arg(cap_s, 1), rate_arg(rate_s)
  if not (capacity and rate) then return nil end
  return capacity, rate
end

-- Tokens at t.
local function refill_at(tokens0, last, capacity, rate, t)
  return math.min(capacity, refill_have(tokens0, rate, t - last))
end

local function refill_full(tokens, capacity)
  return tokens + EPS >= capacity
end

-- Whole tokens, as a reply counts them.
local function refill_whole(tokens, capacity)
  return math.max(0, math.min(capacity, math.floor(tokens + EPS)))
end

-- The smallest whole ms x >= 0 after last at which the bucket holds `want`
-- (<= capacity) tokens; MAX_INT when never (2^53 ms or more).  lib/time.lua's
-- search for the first such ms, written out on refill_have without the
-- closure it would take (this runs on every admission; a function a script
-- names is defined at its every call): the closed form divides where refill_have
-- multiplies, so it is checked, and stepped, on refill_have itself; a client
-- that waits exactly that long is served and one that comes 1 ms earlier is
-- not.
local function refill_ms_until(tokens0, rate, want)
  local x = math.ceil((want - tokens0 - EPS) * 1000 / rate)
  if x ~= x or x >= MAX_INT then return MAX_INT end
  if x < 0 then x = 0 end
  for _ = 1, 8 do
    if refill_have(tokens0, rate, x) + EPS >= want then break end
    x = x + 1
  end
  for _ = 1, 8 do
    if x == 0 or refill_have(tokens0, rate, x - 1) + EPS < want then break end
    x = x - 1
  end
  return x
end

-- reset_ms: ms from t until the bucket is full, 0 when it is; `tokens` is
-- what it holds at t.
local function refill_reset_ms(tokens, tokens0, last, capacity, rate, t)
  if tokens + EPS >= capacity then return 0 end
  return math.max(0, last + refill_ms_until(tokens0, rate, capacity) - t)
end

-- When the worker's reclaim first has work on a bucket (its due time, ms),
-- from its last and full_ms = refill_ms_until(tokens0, rate, capacity): once
-- it has been full for SKEW_MS, judged from last, i.e. the smallest whole ms
-- at which it was full SKEW_MS earlier already.  The acquire registers this
-- time and the reclaim deletes a bucket at exactly it
-- (token_bucket_reclaim_shard.lua); MAX_INT (never) when the bucket refills
-- in 2^53 ms or more.
local function refill_due(last, full_ms)
  return math.min(MAX_INT, last + full_ms + SKEW_MS)
end
