#!lua
-- sluice: fixed window counter, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] counter  hash: window = index of the counted window, floor(ms / window_ms)
--                        count  = requests admitted in that window
--                        t      = latest ms an admission was made at
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms (until the window ends)}
--
-- Window k covers [k * window_ms, (k + 1) * window_ms).  The count and its TTL
-- are written in one script (no INCR-then-EXPIRE gap that a crash could leave
-- without a TTL), and a rejected request is not counted: it writes nothing,
-- so a client that keeps retrying is admitted as soon as the next window opens.

--@include lib/fixed.lua

if #KEYS ~= 2 then return usage('fixed_window takes 2 KEYS (counter, registry)') end
local counter, registry = KEYS[1], KEYS[2]
local path, limit, window, now, err = arg_window_call(ARGV)
if err then return err end

-- Stored time never moves backward: a caller behind the latest admission is
-- served at that admission's time.
local m = redis.call('HMGET', counter, 'window', 'count', 't')
local t, w, count = fixed_at(m[1], m[2], m[3], window, now)
local window_end = (w + 1) * window

local allowed, retry_after = 0, 0
if count < limit then
  allowed = 1
  count = count + 1
  redis.call('HSET', counter, 'window', fmt_int(w), 'count', fmt_int(count), 't', fmt_int(t))
  expire_in(counter, fixed_ttl(w, window, now)) -- the count matters until the window ends
  redis.call('SADD', registry, path)
else
  retry_after = window_end - t -- the next window starts with a count of 0
end
return { allowed, math.max(0, limit - count), retry_after, window_end - t }
