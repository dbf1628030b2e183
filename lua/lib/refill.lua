-- lib/refill.lua: the token bucket, refilled lazily (lua/README.md, "The
-- token bucket"): the textbook token bucket, its refill computed at each
-- call from the time since the last one instead of by a timer.  Units:
-- tokens, ms; rate in tokens added per second.
--
-- A bucket hash holds tokens (at last; %.17g, may be fractional) and last
-- (ms).  At t = max(now, last) it holds
--     min(capacity, tokens + rate * (t - last) / 1000).
-- An absent bucket, or one whose tokens or last cannot be read, is full, so
-- a bucket refilled to capacity is the same as an absent one -- to a caller
-- at or after its last.  last is also the bucket's time mark (lib/skew.lua):
-- a caller with an older now is served at last, so the bucket is kept (TTL,
-- reclaim) until it has been full for SKEW_MS.
--@include lib/time.lua
--@include lib/skew.lua

-- The bucket's HMGET tokens last at now: tokens0 (at most capacity, which
-- may have been lowered), last, t = max(now, last) (stored time never
-- moves backward) and whether the bucket had state; an absent bucket reads
-- as full since now.
local function refill_read(m, capacity, now)
  local tokens0, last = stored(m[1]), stored_int(m[2])
  if not (tokens0 and last) then return capacity, now, now, false end
  if tokens0 > capacity then tokens0 = capacity end
  if last > now then return tokens0, last, last, true end
  return tokens0, last, now, true
end

-- Tokens dt ms after last, before the cap.  The admission and every answer
-- derived from it (retry_after, reset_ms, the TTL) use this same arithmetic.
local function refill_have(tokens0, rate, dt)
  return tokens0 + rate * dt / 1000
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
-- (<= capacity) tokens.
local function refill_ms_until(tokens0, rate, want)
  return first_ms(math.ceil((want - tokens0 - EPS) * 1000 / rate),
    function(x) return refill_have(tokens0, rate, x) + EPS >= want end)
end

-- reset_ms: ms from t until the bucket is full, 0 when it is.
local function refill_reset_ms(tokens0, last, capacity, rate, t)
  if refill_full(refill_at(tokens0, last, capacity, rate, t), capacity) then return 0 end
  return math.max(0, last + refill_ms_until(tokens0, rate, capacity) - t)
end
