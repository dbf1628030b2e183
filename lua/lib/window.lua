-- lib/window.lua: limits over windows of time, and their arguments (the
-- sliding log, the fixed window, the sliding-window counter).  Units:
-- requests, ms.  Each arg_* returns the values, or nil and the error reply
-- last.
--@include lib/time.lua
--@include lib/skew.lua

-- limit (requests, an integer >= 1) and window_ms (an integer >= 1).
local function arg_window(limit_s, window_s, noun, i)
  local limit, err = arg_int(limit_s, 'limit', noun, i)
  if not limit then return nil, nil, err end
  return limit, arg_int(window_s, 'window_ms', noun, i)
end

-- Index k of the window of `size` ms that holds t, where window k covers
-- [k * size, (k + 1) * size): floor(t / size), guarded against the
-- division's rounding.
local function window_index(t, size)
  local k = math.floor(t / size)
  if k * size > t then k = k - 1 end
  if (k + 1) * size <= t then k = k + 1 end
  return k
end

-- The time a window's worker job (prune, repair) acts at: the earliest time
-- a call within the skew horizon can be served at, max(mark, now - SKEW_MS).
-- A client lagging Redis by up to SKEW_MS calls with now >= now - SKEW_MS and
-- is served at max(its now, mark) (DESIGN.md, "Time"), so what has left the
-- window at this time has left it for every such call: the job never acts
-- ahead of the path's own timeline, yet still empties a path nobody calls any
-- more, SKEW_MS after its mark left the window (when its TTL ends too).  A
-- state without a mark (none of sluice's scripts wrote it) is taken at now.
local function horizon_time(mark, now)
  if not mark then return now end
  return math.max(mark, now - SKEW_MS)
end
