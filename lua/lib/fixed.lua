-- lib/fixed.lua: the fixed window counter (lua/README.md, "The fixed
-- window").  Units: requests, ms.  A counter hash holds window (the index
-- of the counted window, floor(ms / window_ms)), count (requests admitted
-- in it) and t (the time the latest admission was served at: the counter's
-- time mark).
--@include lib/window.lua

-- The counter's stored window, count and t at now: t = max(now, stored t)
-- (stored time never moves backward), the index w of the window holding t,
-- and w's count: 0 unless the stored window is w (an older index, or one of
-- another window_ms, starts the window afresh).
local function fixed_at(stored_w, stored_count, stored_t, window, now)
  local t = now
  local st = stored_int(stored_t)
  if st and st > t then t = st end
  local w = window_index(t, window)
  local count = 0
  if stored_int(stored_w) == w then count = stored_int(stored_count) or 0 end
  return t, w, count
end

-- The TTL of window w's counter, in ms from the caller's now: until the
-- window ends, + 1 ms for the expiry clock's rounding, and SKEW_MS more for
-- the time mark t (DESIGN.md, "Time"): a client lagging Redis by up to
-- SKEW_MS is still served at t, in the window t is in, and counted there.
local function fixed_ttl(w, window, now)
  return (w + 1) * window - now + 1 + SKEW_MS
end
