#!lua
-- sluice: sliding-window counter of N sub-windows, client-side acquire.
-- Contract: lua/README.md, "sliding_counter.lua" (DESIGN.md, "Client
-- scripts: the calling contract").
--
-- KEYS[1] counter  <prefix>{k}:sliding_counter:<path>: hash
--                    "<j>" = requests admitted in sub-window j (floor(ms / sub_ms)),
--                    t = the ms the latest admission was served at (the time mark),
--                    limit, window_ms, sub_windows = the parameters last applied,
--                    rule = the rule named ("" for explicit parameters)
-- KEYS[2] meta     <prefix>{k}:sliding_counter_meta:<path>: accepted, never
--                  touched (the counter keeps its bookkeeping in KEYS[1])
-- KEYS[3] registry <prefix>{k}:registry:sliding_counter (due index: when the
--                  oldest sub-window has left the window at the skew horizon)
-- KEYS[4] rules: the shard's rules copy (read: the rule, lib/rule.lua;
--                  max_clock_skew_ms, lib/skew.lua)
-- KEYS[5] stats: the shard's decision counters and clock lag (lib/contract.lua, contract_reply)
-- ARGV[1] path, ARGV[2] n (cost in requests, "" = 1), ARGV[3] now (ms, "" =
-- Redis TIME), ARGV[4] rule ("", a rule name or "*": lib/rule.lua; with a rule,
-- ARGV[5..] are absent or "" and the rule's apply), ARGV[5] limit (integer >= 1),
-- ARGV[6] window_ms (integer >= 1), ARGV[7] sub_windows N (integer >= 1 that
-- divides window_ms)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > limit), reset_ms, rule}
--
-- sub_ms = window_ms / N.  At t the live sub-windows are the N indices
-- cur - N + 1 .. cur (cur = floor(t / sub_ms)): a request admitted in
-- sub-window j counts until (j + N) * sub_ms, i.e. for between
-- window_ms - sub_ms and window_ms.  Admitted if their sum + n <= limit.
-- Fields of other indices are expired (or were written under another
-- sub_ms) and are removed on the way by an admission, as sliding_log.lua
-- removes old entries.
--
-- Time mark (DESIGN.md, "Time"): t, the time the latest admission was served
-- at.  A call is served at max(now, t).  A rejected call writes nothing (no
-- field removed, no TTL extended): what has left the window at its time may
-- still count for a later call served before it (a client with a lagging
-- clock, at the mark).  The TTL keeps the mark SKEW_MS past the window's end.
--
-- Hot path (an admission that changes no parameter): HGET of the rules copy,
-- HGETALL, one HSET, PEXPIRE; HDEL when a sub-window has left; the registry
-- only when the counter held no live sub-window before the call or its
-- parameters change (otherwise it is registered already, due no later).

--@include lib/contract.lua
--@include lib/subwindows.lua
--@include lib/due.lua

local FIELDS = { 'limit', 'window_ms', 'sub_windows' }
local path, base, k, err = contract_keys('sliding_counter', FIELDS)
if err then return err end
-- R: the parameters applied and the rule (lib/contract.lua); "*" keeps its
-- cache in the counter's hash.
local n, now, R
n, now, R, err = contract_args('sliding_counter', FIELDS, nil, KEYS[1], k)
if err then return err end
local limit_s, window_s, subs_s, rule = R[1], R[2], R[3], R.name
local limit, window, subs, sub
limit, window, subs, sub, err = arg_counter(limit_s, window_s, subs_s)
if err then return rule_failed(R, KEYS[4], err) end
local counter = KEYS[1]

local h = redis.call('HGETALL', counter)
if #h == 0 then
  -- No state: the path is new (or long idle), the one time its shard is checked.
  err = contract_shard(path, k)
  if err then return err end
end
local named, at = subs_fields(h)
-- Stored time never moves backward: a caller behind the latest admission is
-- served at that admission's time.
local t = now
local mark = subs_mark(named)
if mark and mark > t then t = mark end
local cur = window_index(t, sub)
local sum, cur_count, oldest, stale = subs_live(h, at, cur, subs)

local allowed, retry_after = 0, 0
if n > limit then
  retry_after = -1 -- can never be admitted; nothing is stored
elseif sum + n <= limit then
  allowed = 1
  skew_load(KEYS[4]) -- the TTL and the due time need the horizon
  local was_live = oldest
  -- the parameters applied, recorded when they change (the worker prunes by them)
  local changed = named.limit ~= limit_s or named.window_ms ~= window_s or named.sub_windows ~= subs_s
    or named.rule ~= rule
  -- due when the oldest sub-window has left the window for every client
  -- within the horizon (the shard job prunes at max(t, now - SKEW_MS)); first
  -- of the writes: a due index of another type refuses the call whole
  if not was_live or changed then
    local first = oldest
    if not first or cur < first then first = cur end
    err = due_register(KEYS[3], path, (first + subs) * sub + SKEW_MS, now, base, 'sliding_counter')
    if err then return err end
  end
  -- t becomes the mark: what has left the window at t has left it for
  -- every later call.
  if stale then hdel_all(counter, stale) end
  local set = { 'HSET', counter, fmt_int(cur), fmt_int(cur_count + n), 't', fmt_int(t) }
  if changed then
    set[7], set[8], set[9], set[10], set[11], set[12] = 'limit', limit_s, 'window_ms', window_s, 'sub_windows', subs_s
    set[13], set[14] = 'rule', rule
  end
  if R.cache then -- "*" resolved afresh: cached against the copy's version
    set[#set + 1], set[#set + 2] = 'rv', R.cache
    set[#set + 1], set[#set + 2] = 'rn', rule
  end
  redis.call(unpack(set))
  sum = sum + n
  if not oldest or cur < oldest then oldest = cur end
  -- The newest sub-window (cur) leaves the window at (cur + N) * sub_ms, and
  -- the mark is kept SKEW_MS more; measured from the caller's now.
  expire_in(counter, (cur + subs) * sub + SKEW_MS - now)
else
  -- Admitted once sum + n <= limit: when the oldest sub-windows holding at
  -- least sum + n - limit requests have left the window (sub-window j leaves
  -- at (j + N) * sub_ms).
  retry_after = math.max(1, (subs_leaving(h, at, cur, subs, sum + n - limit) + subs) * sub - t)
end

-- reset_ms: until the oldest live sub-window leaves the window, 0 when none
local reset = 0
if oldest then reset = (oldest + subs) * sub - t end
local remaining = limit - sum
if remaining < 0 then remaining = 0 end
-- a shadow rule's denial is admitted, writing nothing as a denial;
-- counted (and the clock's lag recorded) by contract_reply
return contract_reply(R, allowed, remaining, retry_after, reset)
