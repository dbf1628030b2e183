-- lib/log.lua: the sliding-window log (lua/README.md, "The sliding log"): a
-- sorted set of admitted requests scored in ms.  A request admitted at s
-- counts for requests at times in [s, s + window_ms).  The log's time mark
-- is its newest score: only an admission writes, at the time it was served.
--@include lib/window.lua

-- The newest score (ceil: a foreign writer may store fractional ms), or nil
-- when the log is empty or absent.
local function log_mark(log)
  local newest = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  if newest[2] then return math.ceil(tonumber(newest[2])) end
  return nil
end

-- t = max(now, the mark): stored time never moves backward.
local function log_time(log, now)
  local mark = log_mark(log)
  if mark and mark > now then return mark end
  return now
end

-- ms from t until an entry of `score` (as ZRANGE WITHSCORES answers it)
-- leaves the window.
local function log_leaves(score, window, t)
  return math.ceil(tonumber(score)) + window - t
end

-- The entries live at t are those with score > t - window (exclusive).
local function log_live_from(window, t)
  return '(' .. fmt_int(t - window)
end

-- How many entries are live at t.
local function log_count(log, window, t)
  return redis.call('ZCOUNT', log, log_live_from(window, t), '+inf')
end

-- ms from t until the live entry of rank k (0 = the oldest) leaves the
-- window; that entry must exist.
local function log_rank_leaves(log, window, t, k)
  local e = redis.call('ZRANGEBYSCORE', log, log_live_from(window, t), '+inf', 'WITHSCORES', 'LIMIT', k, 1)
  return log_leaves(e[2], window, t)
end

-- reset_ms: ms from t until the oldest live entry leaves the window (0 when
-- none of the `count` live entries is left).
local function log_reset_ms(log, window, t, count)
  if count == 0 then return 0 end
  return math.max(0, log_rank_leaves(log, window, t, 0))
end
