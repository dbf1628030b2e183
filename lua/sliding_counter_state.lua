#!lua flags=no-writes
-- sluice: sliding-window counter state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] counter hash ("<index>" = count, t = latest ms)
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] sub_windows (integer >= 1 that divides window_ms),
-- ARGV[4] now (ms; absent or "" = Redis TIME)
-- Reply {count (sum of the live sub-windows), remaining, reset_ms (until the
--        oldest live sub-window leaves the window, 0 if none),
--        ttl_ms (PTTL of the hash: -2 absent, -1 no TTL)}
--
-- What sliding_counter.lua would sum at t = max(now, stored t), without
-- removing anything.

--@include lib/subwindows.lua

if #KEYS ~= 1 then return usage('sliding_counter_state takes 1 KEY (counter)') end
local counter = KEYS[1]
local limit, window, subs, sub, now, err = arg_counter_now(ARGV, 1)
if err then return err end

local h, t, cur = subs_read(counter, now, sub) -- as in sliding_counter.lua
local live, count = subs_scan(h, cur, subs)
return { count, math.max(0, limit - count), subs_reset_ms(live, subs, sub, t), redis.call('PTTL', counter) }
