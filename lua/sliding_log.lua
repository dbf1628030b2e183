#!lua
-- sluice: sliding-window log, client-side acquire.  Contract: lua/README.md,
-- "sliding_log.lua" (DESIGN.md, "Client scripts: the calling contract").
--
-- KEYS[1] log      <prefix>{k}:sliding_log:<path>: sorted set of admitted
--                  entries, score = the ms they were served at, member
--                  the entry's number in the log (lib/log.lua log_member)
-- KEYS[2] meta     <prefix>{k}:sliding_log_meta:<path>: hash limit, window_ms,
--                  rule = the parameters of the latest admission as passed
--                  (rule "" for explicit parameters); the prune goes by them
-- KEYS[3] registry <prefix>{k}:registry:sliding_log (due index: when the
--                  prune first has work, the oldest entry + window + SKEW_MS)
-- KEYS[4] rules    the shard's rules copy (read: the rule, lib/rule.lua;
--                  max_clock_skew_ms, lib/skew.lua)
-- KEYS[5] stats: the shard's decision counters and clock lag (lib/contract.lua, contract_reply)
-- ARGV[1] path, ARGV[2] n (cost in entries, "" = 1), ARGV[3] now (ms, "" =
-- Redis TIME), ARGV[4] rule ("", a rule name or "*": lib/rule.lua; with a rule,
-- ARGV[5..] are absent or "" and the rule's apply), ARGV[5] limit (entries per window,
-- integer >= 1), ARGV[6] window_ms (integer >= 1)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > limit), reset_ms, rule}
--
-- An entry admitted at s counts for calls served at times in [s, s + window):
-- at t, entries with score <= t - window are gone.  A call of cost n is
-- admitted, as n entries at once, when count + n <= limit; a rejected call
-- is not added, so a client that keeps retrying is admitted as soon as the
-- window allows (unlike logs that add first and check after).
--
-- Time mark (DESIGN.md, "Time"): the newest score.  A call is served at
-- t = max(now, mark).  A rejected call writes nothing: removing what has left
-- the window at its t would take entries that a later call served before t
-- (a client with a lagging clock, at the mark) still counts.  The TTL keeps
-- the mark SKEW_MS past the window's end; the meta lives as long.
--
-- Hot path: reads the newest entry (the mark) and the oldest live one (the
-- count is the run of entry numbers between them: lib/log.lua), and with a
-- rejection of cost n > 1 (or under a lowered limit) the entry whose leaving
-- admits it; an admission also reads the meta (HMGET) and writes
-- ZREMRANGEBYSCORE, ZADD and the two PEXPIREs, the meta only when the
-- parameters change, and the due index only when the log was empty or its
-- window changes (otherwise the path is registered already, no later than
-- its new due time).

--@include lib/contract.lua
--@include lib/log.lua
--@include lib/due.lua

local MAX_N = 100000 -- cost of one request, in entries (one sorted-set member each)

local FIELDS = { 'limit', 'window_ms' }
local path, base, k, err = contract_keys('sliding_log', FIELDS)
if err then return err end
-- R: the parameters applied and the rule (lib/contract.lua); "*" keeps its
-- cache in the meta.
local n, now, R
n, now, R, err = contract_args('sliding_log', FIELDS, MAX_N, KEYS[2], k)
if err then return err end
local limit_s, window_s, rule = R[1], R[2], R.name
local limit, window
limit, window, err = arg_window(limit_s, window_s)
if err then return rule_failed(R, KEYS[4], err) end
local log, meta = KEYS[1], KEYS[2]

local mark, last = log_newest(log)
if not mark then
  -- No state: the path is new (or long idle), the one time its shard is checked.
  err = contract_shard(path, k)
  if err then return err end
  last = 0
end
local t = now
if mark and mark > now then t = mark end
local cut = fmt_int(t - window) -- entries with score <= cut have left the window at t
local count, oldest = log_live(log, cut, last)

if n > limit or count + n > limit then
  local retry_after, reset = -1, 0
  if oldest then reset = math.max(0, oldest + window - t) end
  if n <= limit then
    -- Admitted once count + n <= limit, i.e. when the live entry of rank
    -- count + n - limit - 1 (the oldest, unless n > 1 or the limit was
    -- lowered) leaves the window.
    local r = count + n - limit - 1
    if r == 0 then retry_after = reset else retry_after = log_rank_score(log, cut, r) + window - t end
    retry_after = math.max(1, retry_after)
  end
  -- a shadow rule's denial is admitted, writing nothing as a denial;
  -- counted (and the clock's lag recorded) by contract_reply
  return contract_reply(R, 0, math.max(0, limit - count), retry_after, reset)
end

skew_load(KEYS[4]) -- admitted: the TTLs and the due time need the horizon

-- t becomes the mark: what has left the window at t has left it for every
-- later call.
local m = redis.call('HMGET', meta, 'limit', 'window_ms', 'rule')
-- Due when the oldest entry has left the window at the prune's time,
-- max(mark, R - SKEW_MS) (lib/window.lua): the mark stays below oldest +
-- window, so at Redis time oldest + window + SKEW_MS.  A log that held
-- entries of this window is registered already, at that time for an entry
-- no later than `oldest` (by an earlier call, or the prune's reschedule), so
-- it is left as it is.  First of the writes: a due index of another type
-- refuses the call whole.
if not mark or m[2] ~= window_s then
  err = due_register(KEYS[3], path, (oldest or t) + window + SKEW_MS, now, base, 'sliding_log')
  if err then return err end
end
redis.call('ZREMRANGEBYSCORE', log, '-inf', cut)
local ts = ARGV[3] -- t as text: the caller's now unless served at the mark
if t ~= now or ts == '' then ts = fmt_int(t) end
log_add(log, ts, last, n)
oldest = oldest or t
-- the parameters applied, recorded when they change (the prune goes by them)
if m[1] ~= limit_s or m[2] ~= window_s or m[3] ~= rule then
  if R.cache then -- "*" resolved afresh: cached against the copy's version
    redis.call('HSET', meta, 'limit', limit_s, 'window_ms', window_s, 'rule', rule, 'rv', R.cache, 'rn', rule)
  else
    redis.call('HSET', meta, 'limit', limit_s, 'window_ms', window_s, 'rule', rule)
  end
elseif R.cache then
  redis.call('HSET', meta, 'rv', R.cache, 'rn', rule)
end
-- The newest entry matters until t + window, and the mark SKEW_MS more;
-- measured from the caller's now.
local ttl = t + window + SKEW_MS - now
if ttl < MAX_INT then
  ttl = fmt_int(ttl)
  redis.call('PEXPIRE', log, ttl)
  redis.call('PEXPIRE', meta, ttl)
else
  redis.call('PERSIST', log)
  redis.call('PERSIST', meta)
end
return contract_reply(R, 1, limit - count - n, 0, oldest + window - t)
