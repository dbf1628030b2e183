#!lua flags=no-writes
-- sluice: sliding-window log state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] log sorted set, KEYS[2] meta hash (a foreign layout, which records
-- nothing, passes its own key or any absent one)
-- KEYS may hold several such pairs, of paths of one shard (the admin
-- listing reads a registry page in one call): the reply is then an
-- array of the replies, one per pair, in order, a pair whose read fails
-- (a key of another type) answered by its error (lib/state_each.lua).
-- ARGV[1] limit, ARGV[2] window_ms (integers >= 1, or "" = the ones the meta
-- records: parameters given win), ARGV[3] now (ms; "" = Redis TIME)
-- Reply {count, remaining, reset_ms, ttl_ms, recorded, rule}:
--   count     entries live at t (score > t - window), all entries held when
--             no window is known
--   remaining limit - count (at least 0); -1 when no limit is known
--   reset_ms  ms until the oldest live entry leaves the window (0 if none);
--             -1 when no window is known
--   ttl_ms    PTTL of the log (-2 absent, -1 no TTL)
--   recorded  the meta's parameters, flat {"limit", v, "window_ms", v} as
--             stored (those it holds; empty when none)
--   rule      the rule the meta records ("" when none)
--
-- What sliding_log.lua would count at t (t = max(now, newest score)), without
-- pruning anything.

--@include lib/log.lua
--@include lib/state_each.lua

local function read(KEYS, ARGV)
  if #KEYS ~= 2 or #ARGV ~= 3 then
    return usage('sliding_log_state takes 2 KEYS (log, meta) and ARGV limit, window_ms, now'
      .. ' ("" = recorded, or Redis TIME for now)')
  end
  local log, meta = KEYS[1], KEYS[2]
  local m = redis.call('HMGET', meta, 'limit', 'window_ms', 'rule')
  local limit, window, now, err
  limit, err = log_param(ARGV[1], m[1], 'limit')
  if err then return err end
  window, err = log_param(ARGV[2], m[2], 'window_ms')
  if err then return err end
  now, err = arg_now(ARGV[3])
  if err then return err end

  local mark = log_newest(log)
  local t = now -- as in sliding_log.lua
  if mark and mark > now then t = mark end
  local count, reset = nil, -1
  if window then
    -- counted by ZCOUNT, not by the entries' numbers: exact whoever wrote them
    local cut = fmt_int(t - window)
    count = redis.call('ZCOUNT', log, '(' .. cut, '+inf')
    reset = 0
    if count > 0 then reset = math.max(0, log_rank_score(log, cut, 0) + window - t) end
  else
    count = redis.call('ZCARD', log)
  end
  local remaining = -1
  if limit then remaining = math.max(0, limit - count) end

  local recorded = {}
  if m[1] then recorded[#recorded + 1], recorded[#recorded + 2] = 'limit', m[1] end
  if m[2] then recorded[#recorded + 1], recorded[#recorded + 2] = 'window_ms', m[2] end
  return { count, remaining, reset, redis.call('PTTL', log), recorded, m[3] or '' }
end

return state_each(read, 3)
