#!lua
-- sluice: fixed window counter, client-side acquire.  Contract: lua/README.md,
-- "Calling a client script" (DESIGN.md, "Client scripts: the calling contract").
--
-- KEYS[1] state    <prefix>{k}:fixed_window:<path>: hash
--                    window = index of the counted window, floor(t / window_ms)
--                    count  = cost admitted in that window
--                    t      = the ms the latest admission was served at (the time mark)
--                    limit, window_ms = the parameters last applied, rule =
--                    the rule named ("" for explicit parameters)
-- KEYS[2] meta     <prefix>{k}:fixed_window_meta:<path>: accepted, never read
--                  or written (the counter keeps its fields in KEYS[1])
-- KEYS[3] registry <prefix>{k}:registry:fixed_window (due index: when the
--                  repair would first have work, the window's end + SKEW_MS)
-- KEYS[4] rules: the shard's rules copy (read: the rule, lib/rule.lua;
--                  max_clock_skew_ms, lib/skew.lua)
-- KEYS[5] stats: the shard's decision counters and clock lag (lib/contract.lua, contract_reply)
-- ARGV[1] path, ARGV[2] n (cost, "" = 1), ARGV[3] now (ms, "" = Redis TIME),
-- ARGV[4] rule ("", a rule name or "*": lib/rule.lua; with a rule,
-- ARGV[5..] are absent or "" and the rule's apply), ARGV[5] limit (integer >= 1), ARGV[6] window_ms
-- (integer >= 1)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > limit), reset_ms
--        (until the window ends), rule}
--
-- Window k covers [k * window_ms, (k + 1) * window_ms); a request of cost n
-- is admitted iff count + n <= limit.  A call is served at t = max(now, mark)
-- and counted in t's window (lib/fixed.lua).  The count and its TTL are
-- written in one script (no INCR-then-EXPIRE gap that a crash could leave
-- without a TTL), and a rejected request is not counted: it writes nothing,
-- so a client that keeps retrying is admitted as soon as the next window opens.
--
-- The registry: the shard job (fixed_window_repair_shard.lua) has nothing
-- to do for a counter before every call within the skew horizon is served
-- past its window, the window's end + SKEW_MS (then it deletes the counter,
-- the same as absent, and the path leaves the registry); a counter is due
-- earlier only if it lost its TTL, which this script never leaves it without.
-- So the path is registered when an admission opens a window (ZADD LT keeps
-- the earlier due; the job reschedules by the window it finds), not on every
-- call: a busy path's calls within one window cost HMGET, HSET and PEXPIRE
-- (and the HGET of the rules copy).

--@include lib/contract.lua
--@include lib/fixed.lua
--@include lib/due.lua

local FIELDS = { 'limit', 'window_ms' }
local path, base, k, err = contract_keys('fixed_window', FIELDS)
if err then return err end
-- R: the parameters applied and the rule (lib/contract.lua); "*" keeps its
-- cache in the counter's hash.
local n, now, R
n, now, R, err = contract_args('fixed_window', FIELDS, nil, KEYS[1], k)
if err then return err end
local limit_s, window_s, rule = R[1], R[2], R.name
local limit, window
limit, window, err = arg_window(limit_s, window_s)
if err then return rule_failed(R, KEYS[4], err) end
local state = KEYS[1]

local m = fixed_read(state)
if not m[3] then
  -- No time mark: the path is new (or its counter expired), the one time its shard is checked.
  err = contract_shard(path, k)
  if err then return err end
end
local t, w, count, mark = fixed_at(m, window, window_s, now)
local window_end = (w + 1) * window

local allowed, retry_after = 0, 0
if n > limit then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif count + n <= limit then
  allowed = 1
  skew_load(KEYS[4]) -- the TTL and the due time need the horizon
  local opens = count == 0
  count = count + n
  -- what changed: the count; the window when this admission opens it; the
  -- mark when t is past it; the parameters applied (the shard job repairs by
  -- them) when they differ from those recorded
  local set = { 'HSET', state, 'count', fmt_int(count) }
  if opens then set[5], set[6] = 'window', fmt_int(w) end
  if t ~= mark then set[#set + 1], set[#set + 2] = 't', fmt_int(t) end
  if m[4] ~= limit_s or m[5] ~= window_s or m[6] ~= rule then
    set[#set + 1], set[#set + 2] = 'limit', limit_s
    set[#set + 1], set[#set + 2] = 'window_ms', window_s
    set[#set + 1], set[#set + 2] = 'rule', rule
  end
  if R.cache then -- "*" resolved afresh: cached against the copy's version
    set[#set + 1], set[#set + 2] = 'rv', R.cache
    set[#set + 1], set[#set + 2] = 'rn', rule
  end
  -- registered when the window opens; first of the writes: a due index of
  -- another type refuses the call whole
  if opens then
    err = due_register(KEYS[3], path, window_end + SKEW_MS, now, base, 'fixed_window')
    if err then return err end
  end
  redis.call(unpack(set))
  expire_in(state, fixed_ttl(w, window, now)) -- the count matters until the window ends, + the horizon
else
  retry_after = window_end - t -- the next window starts with a count of 0
end
-- a shadow rule's denial is admitted, writing nothing as a denial;
-- counted (and the clock's lag recorded) by contract_reply
return contract_reply(R, allowed, math.max(0, limit - count), retry_after, window_end - t)
