-- lib/fixed.lua: the fixed window counter (lua/README.md, "The fixed
-- window").  Units: requests (cost units), ms.  sluice's counter is one hash,
-- <prefix>{k}:fixed_window:<path>, that holds
--   window    = the index of the counted window, floor(t / window_ms)
--   count     = cost admitted in it
--   t         = the time the latest admission was served at: the time mark
--   limit, window_ms, rule = the parameters the latest admission applied,
--               as the client passed them (the shard job reads window_ms)
-- (the path's meta key is never used).
--@include lib/window.lua

-- The counter's fields as fixed_at, the acquire and the state read take
-- them: {window, count, t, limit, window_ms, rule} (strings, false when absent).
local function fixed_read(state)
  return redis.call('HMGET', state, 'window', 'count', 't', 'limit', 'window_ms', 'rule')
end

-- The counter m (fixed_read) at now, for windows of `window` ms (window_s:
-- the same as the client passed it, or nil): t = max(now, stored t) (stored
-- time never moves backward), the index w of the window holding t, w's
-- count, and the stored t (nil if none).  The count is 0 unless the stored
-- window is w of that same length (an older index, or an index of another
-- window_ms, starts the window afresh); a counter that records no
-- window_ms (not written by fixed_window.lua) is taken at its index.
-- Strings are compared before they are read as numbers: tonumber of a
-- stored string is the dearest step here (some 2k Redis instructions).
local function fixed_at(m, window, window_s, now)
  local t = now
  local st = stored_int(m[3])
  if st and st > t then t = st end
  local w = window_index(t, window)
  local count = 0
  if stored_int(m[1]) == w and (not m[5] or m[5] == window_s or stored_int(m[5]) == window) then
    count = stored_int(m[2]) or 0
  end
  return t, w, count, st
end

-- The TTL of window w's counter, in ms from the caller's now: until the
-- window ends, + 1 ms for the expiry clock's rounding, and SKEW_MS more for
-- the time mark t (DESIGN.md, "Time"): a client lagging Redis by up to
-- SKEW_MS is still served at t, in the window t is in, and counted there.
local function fixed_ttl(w, window, now)
  return (w + 1) * window - now + 1 + SKEW_MS
end

-- The state script's parameter s (ARGV): nil for "" (use the recorded one),
-- else an integer >= 1, or nil and the error reply naming `field`.
local function fixed_param(s, field)
  if s == '' then return nil end
  return arg_int(s, field)
end
