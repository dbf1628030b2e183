#!lua
-- sluice: sliding-window log, client-side acquire.  Contract: lua/README.md.
--
-- KEYS[1] log      sorted set of admitted requests, score = ms, member
--                  "<ms>:<k>" (unique per request, even within one ms)
-- KEYS[2] registry set of paths that have state (walked by the daemon)
-- ARGV[1] path (registry member), ARGV[2] limit (integer >= 1),
-- ARGV[3] window_ms (integer >= 1), ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {allowed 0|1, remaining, retry_after_ms, reset_ms}
--
-- A request admitted at s counts for requests at times in [s, s + window):
-- at t, entries with score <= t - window are gone.  A rejected request is not
-- added, so a client that keeps retrying is admitted as soon as the window
-- allows (unlike logs that add first and check after).
--
-- Time mark (DESIGN.md, "Time"): the newest score.  A call is served at
-- t = max(now, mark).  A rejected call writes nothing: removing what has left
-- the window at its t would take entries that a later call served before t
-- (a client with a lagging clock, at the mark) still counts.  The TTL keeps
-- the mark SKEW_MS past the window's end.

--@include lib/log.lua

if #KEYS ~= 2 then return usage('sliding_log takes 2 KEYS (log, registry)') end
local log, registry = KEYS[1], KEYS[2]
local path, limit, window, now, err = arg_window_call(ARGV)
if err then return err end

local t = log_time(log, now)
local count = log_count(log, window, t)

local allowed, retry_after = 0, 0
if count < limit then
  allowed = 1
  -- t becomes the mark: what has left the window at t has left it for
  -- every later call.
  redis.call('ZREMRANGEBYSCORE', log, '-inf', fmt_int(t - window))
  -- k = requests already logged at t; step on while the member exists, in
  -- case part of that millisecond's group was removed by someone else.
  local k = redis.call('ZCOUNT', log, fmt_int(t), fmt_int(t))
  local member = fmt_int(t) .. ':' .. fmt_int(k)
  while redis.call('ZSCORE', log, member) do
    k = k + 1
    member = fmt_int(t) .. ':' .. fmt_int(k)
  end
  redis.call('ZADD', log, fmt_int(t), member)
  count = count + 1
  -- The newest entry matters until t + window, and the mark SKEW_MS more;
  -- measured from the caller's now.
  expire_in(log, t + window + SKEW_MS - now)
  redis.call('SADD', registry, path)
else
  -- Admitted once count drops below limit, i.e. when the live entry of rank
  -- count - limit (the oldest, unless limit was lowered) leaves the window.
  retry_after = math.max(1, log_rank_leaves(log, window, t, count - limit))
end
return { allowed, math.max(0, limit - count), retry_after, log_reset_ms(log, window, t, count) }
