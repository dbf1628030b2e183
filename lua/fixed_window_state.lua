#!lua flags=no-writes
-- sluice: fixed window state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] counter: sluice's hash (window, count, t) or a foreign string counter
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {count (admitted in the current window), remaining, reset_ms (until the
--        count resets: the window's end; 0 when the count is 0; for a string,
--        its PTTL, -1 when it has none), ttl_ms (PTTL: -2 absent, -1 no TTL)}
--
-- What fixed_window.lua would count at t = max(now, stored t), without writing.

--@include lib/fixed.lua

if #KEYS ~= 1 then return usage('fixed_window_state takes 1 KEY (counter)') end
local counter = KEYS[1]
local limit, window, now, err = arg_window_now(ARGV, 1)
if err then return err end

local kind = redis.call('TYPE', counter).ok
local ttl = redis.call('PTTL', counter)
local count, reset_ms = 0, 0
if kind == 'string' then
  -- A foreign INCR counter: it resets when it expires (never, without a TTL).
  count = stored_int(redis.call('GET', counter)) or 0
  if count > 0 then reset_ms = ttl end
elseif kind == 'hash' then
  local m = redis.call('HMGET', counter, 'window', 'count', 't')
  local t, w
  t, w, count = fixed_at(m[1], m[2], m[3], window, now) -- as in fixed_window.lua
  if count > 0 then reset_ms = (w + 1) * window - t end
elseif kind ~= 'none' then
  return redis.error_reply('ERR sluice: fixed_window_state: the counter is a ' .. kind
    .. ', not a hash or string')
end
return { count, math.max(0, limit - count), reset_ms, ttl }
