#!lua flags=no-writes
-- sluice: sliding-window log state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] log sorted set
-- ARGV[1] limit (integer >= 1), ARGV[2] window_ms (integer >= 1),
-- ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {count (entries with score > t - window), remaining, reset_ms
--        (until the oldest live entry leaves the window, 0 if none),
--        ttl_ms (PTTL of the log: -2 absent, -1 no TTL)}
--
-- What sliding_log.lua would count at t (t = max(now, newest score)), without
-- pruning anything.

--@include lib/log.lua

if #KEYS ~= 1 then return usage('sliding_log_state takes 1 KEY (log)') end
local log = KEYS[1]
local limit, window, now, err = arg_window_now(ARGV, 1)
if err then return err end

local t = log_time(log, now) -- as in sliding_log.lua
local count = log_count(log, window, t)
return { count, math.max(0, limit - count), log_reset_ms(log, window, t, count), redis.call('PTTL', log) }
