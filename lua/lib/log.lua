-- lib/log.lua: the sliding-window log (lua/README.md, "The sliding log"): a
-- sorted set of admitted requests scored in ms.  A request admitted at s
-- counts for requests at times in [s, s + window_ms).

-- t = max(now, the newest score): stored time never moves backward (ceil: a
-- foreign writer may store fractional ms).
local function log_time(log, now)
  local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if newest[2] then return math.max(now, math.ceil(tonumber(newest[2]))) end
  return now
end

-- ms from t until an entry of `score` (as ZRANGE WITHSCORES answers it)
-- leaves the window.
local function log_leaves(score, window, t)
  return math.ceil(tonumber(score)) + window - t
end
